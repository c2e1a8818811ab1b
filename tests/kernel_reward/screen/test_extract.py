"""Code extraction: ```answer wins, else the last fenced block, else plain code, else None (format error)."""

from kernel_reward.screen.extract import extract_code, fenced_blocks


def test_last_fenced_block_wins_without_answer_block():
    text = "first\n```python\na = 1\n```\nthen\n```python\nb = 2\n```\n"
    assert extract_code(text) == "b = 2\n"


def test_answer_block_beats_later_blocks():
    text = "```answer\nx = 'answer'\n```\n```python\ny = 'later'\n```\n"
    assert extract_code(text) == "x = 'answer'\n"


def test_tildes_and_untagged_fences():
    assert fenced_blocks("~~~\nz = 3\n~~~\n") == [("", "z = 3\n")]


def test_no_code_is_none():
    assert extract_code("I cannot help with that, sorry.") is None
    assert extract_code("") is None


def test_plain_code_without_fence_is_accepted():
    code = "import torch\n\nclass ModelNew:\n    pass\n"
    assert extract_code(code) == code


def test_unterminated_fence_is_not_a_block():
    assert extract_code("```python\nclass ModelNew: pass\n") is None


def test_plain_code_with_a_syntax_error_is_code_not_prose():
    """A .py file handed in as the candidate, broken on line 4: the static checks name the line (compile_error);
    it is not a completion without code (format_error)."""
    from kernel_reward.screen.screen import screen_candidate

    broken = "import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x)\n        return x\n"
    assert extract_code(broken) == broken
    screening = screen_candidate(broken, "Model")
    assert screening.status.value == "compile_error" and "line 4" in screening.error, screening
    prose = "I would write class ModelNew with a kernel, but here is my reasoning: it cannot be done (yet)."
    assert extract_code(prose) is None
