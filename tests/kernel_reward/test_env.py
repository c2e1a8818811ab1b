"""The real kernel environment (kernel_reward.env over the Evaluator, CPU Triton interpreter) and one TRLOOTrainer
step against it."""

import pytest
import torch

datasets = pytest.importorskip("datasets")
pytest.importorskip("trl")

from dataset_builder.prompt import first_turn_messages  # noqa: E402
from dataset_builder.tasks import load_tasks  # noqa: E402
from kernel_reward.env import KernelEnvironment  # noqa: E402

# The same silu completions the evaluation tests use: honest, wrong values, prose with no code block.
from tests.support.eval_programs import HONEST, WRONG  # noqa: E402
from tests.support.eval_programs import UNFORMATTED as PROSE  # noqa: E402
from trl_ext import MultiTurnKernelConfig, TRLOOTrainer  # noqa: E402
from trl_ext.generation import GenerationOutput  # noqa: E402
from trl_ext.tiny_model import save_tiny_model  # noqa: E402


def silu_rows(copies=1):
    (task,) = load_tasks("small", names=["activation_silu"])
    row = {
        "data_source": "drkernel_sample",
        "prompt": first_turn_messages(task.source),
        "ability": "kernel_optimization",
        "reward_model": {"style": "rule", "ground_truth": task.source},
        "extra_info": {"uuid": task.name, "entry_point": "Model"},
    }
    return [row] * copies


@pytest.fixture(scope="module")
def kernel_env():
    with KernelEnvironment(device="cpu", timeout=120) as env:
        yield env


def test_kernel_environment_verdicts_and_feedback(kernel_env):
    rows = silu_rows(3)
    states = kernel_env.reset(rows)
    steps = kernel_env.step(states, [HONEST, WRONG, PROSE])
    assert [s.status for s in steps] == ["correct", "incorrect", "format_error"]
    assert [s.correct for s in steps] == [True, False, False]
    assert steps[0].reward > 0 and steps[1].reward == 0 and steps[2].reward == 0
    assert steps[2].formatted is False and steps[0].compiled and steps[0].speedup is None  # no timing on CPU
    for s in steps:
        assert "Server feedback (status/metrics/errors):" in s.feedback and "ModelNew" in s.feedback
        assert s.details["eval_result"]["status"] == s.status
    with pytest.raises(ValueError, match="ground_truth"):
        kernel_env.reset([{"prompt": [], "reward_model": {}}])


def test_kernel_environment_rejects_bad_reward_options():
    with pytest.raises(ValueError, match="reward_scheme"):
        KernelEnvironment(device="cpu", reward_scheme="nope")


class ScriptedBackend:
    """Sample i answers TEXTS[i % 2] at every turn (real token ids from the tiny tokenizer)."""

    TEXTS = (HONEST, PROSE)

    def __init__(self, tok):
        self.tok = tok

    def generate(self, prompts):
        out = []
        for i, _ in enumerate(prompts):
            ids = self.tok.encode(self.TEXTS[i % 2], add_special_tokens=False) + [self.tok.eos_token_id]
            out.append(GenerationOutput(ids, [-1.0] * len(ids)))
        return out


def test_one_trainer_step_against_real_kernel_reward(kernel_env, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tiny = save_tiny_model(tmp_path / "tiny")
    model, tok = AutoModelForCausalLM.from_pretrained(tiny), AutoTokenizer.from_pretrained(tiny)

    class ScriptedTrainer(TRLOOTrainer):
        def _generation_backend(self):
            return ScriptedBackend(self._tokenizer)

    args = MultiTurnKernelConfig(
        output_dir=str(tmp_path / "out"),
        use_cpu=True,
        bf16=False,
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=8,
        max_steps=1,
        learning_rate=1e-2,
        report_to="none",
        save_strategy="no",
        logging_steps=1,
        max_turns=2,
    )
    trainer = ScriptedTrainer(
        model=model,
        environment=kernel_env,
        args=args,
        train_dataset=datasets.Dataset.from_list(silu_rows(2)),
        processing_class=tok,
    )
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    log = next(h for h in trainer.state.log_history if "turn_1/correct" in h)
    assert log["turn_1/correct"] == 0.5 and log["turn_2/correct"] == 0.5  # one honest, one prose sample
    assert log["turn_1/formatted"] == 0.5
    assert "turn_1/fast_1" not in log  # no timing on CPU: Fast@p unknown, not reported as 0
    statuses = {t.turns[0].result.status for t in trainer._trajectories}
    assert statuses == {"correct", "format_error"}
    # TRLOO on a group of two with rewards r and 0 at both turns: non-zero advantages, parameters move.
    assert log["advantages/abs_mean"] > 0
    assert any(not torch.equal(p.detach(), before[n]) for n, p in trainer.model.named_parameters())


def test_trainer_logs_fast_p_by_the_interval_lower_bound():
    """The trainer's per-turn stats carry Fast@p both by the median speedup and by its interval's lower end."""
    from trl_ext.env import StepResult
    from trl_ext.masks import TURN_STATS, turn_stats
    from trl_ext.rollout import Trajectory, TurnRecord

    noisy = StepResult(reward=1.0, feedback="", correct=True, hacked=False, speedup=1.05, speedup_low=0.97)
    clear = StepResult(reward=1.0, feedback="", correct=True, hacked=False, speedup=1.4, speedup_low=1.25)
    trajectory = Trajectory(
        task={}, prompt_ids=[], turns=[TurnRecord([], "", noisy, False), TurnRecord([], "", clear, False)]
    )
    stats = turn_stats(trajectory, 2)
    column = {name: i for i, name in enumerate(TURN_STATS)}
    assert stats[0, column["fast_1"]] == 1.0 and stats[0, column["fast_1_lower"]] == 0.0
    assert stats[1, column["fast_1.2"]] == 1.0 and stats[1, column["fast_1.2_lower"]] == 1.0
