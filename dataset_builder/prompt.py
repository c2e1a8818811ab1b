"""The first-turn prompt: one versioned template, rendered around a PyTorch reference program.

The wording is this project's own; its structure follows background §1 (task, freedom to fuse or change the
algorithm, a worked `a + b` example with its Triton kernel, the given architecture, output instructions).
The template lives in `templates/first_turn_<version>.txt` and holds the marker `{{REFERENCE_CODE}}`
exactly once; `--prompt-template PATH` swaps in another file with the same marker. A plain marker and
`str.replace` (not `str.format`) keep braces in the example code literal.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

TEMPLATE_VERSION = "v1"
REFERENCE_MARKER = "{{REFERENCE_CODE}}"
_TEMPLATE_DIR = Path(__file__).parent / "templates"


class PromptTemplateError(ValueError):
    """A prompt template file is missing, unreadable or does not hold the reference marker exactly once."""


@dataclass(frozen=True)
class PromptTemplate:
    """A first-turn template and where it came from (recorded in the dataset card)."""

    text: str
    version: str  # "v1" for a shipped template, "custom-<sha256 prefix>" for a file given by the user
    origin: str  # file path the text was read from

    def render(self, reference_code: str) -> str:
        """Return the prompt for `reference_code` (inserted verbatim, trailing newlines trimmed)."""
        return self.text.replace(REFERENCE_MARKER, reference_code.rstrip("\n"))


def _checked(text: str, origin: str) -> str:
    count = text.count(REFERENCE_MARKER)
    if count != 1:
        raise PromptTemplateError(
            f"prompt template {origin} must contain {REFERENCE_MARKER} exactly once (found {count} times)"
        )
    return text


@lru_cache(maxsize=8)
def load_template(path: str | None = None) -> PromptTemplate:
    """The shipped template (path=None) or the template file at `path`."""
    if path is None:
        origin = _TEMPLATE_DIR / f"first_turn_{TEMPLATE_VERSION}.txt"
        return PromptTemplate(
            _checked(origin.read_text(encoding="utf-8"), str(origin)), TEMPLATE_VERSION, str(origin)
        )
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise PromptTemplateError(f"cannot read prompt template {file}: {exc.strerror}") from exc
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    return PromptTemplate(_checked(text, str(file)), f"custom-{digest}", str(file))


def render_first_turn(reference_code: str, template_path: str | None = None) -> str:
    """The first user message for `reference_code`, with the shipped (or the given) template."""
    return load_template(template_path).render(reference_code)


def first_turn_messages(reference_code: str, template_path: str | None = None) -> list[dict[str, str]]:
    """The chat prompt of a task: exactly one user message, no system prompt (background §1)."""
    return [{"role": "user", "content": render_first_turn(reference_code, template_path)}]
