"""The judge as a TRL environment (``GRPOTrainer(environment_factory=...)``): submissions through the tool, the
rollout's reward, and a real GRPOTrainer step that builds the tool schema, resets the environment with dataset
rows and reads its reward."""

from __future__ import annotations

import datasets
import pytest

from hack_corpus import load_corpus
from kernel_reward.result import EvalResult, Status
from kernel_reward.trl_environment import KernelEnv, KernelEnvironmentFactory, KernelToolEnvironment

CORPUS = {entry.name: entry for entry in load_corpus()}
HONEST = CORPUS["honest_add_relu"]
WRONG = CORPUS["fault_wrong_result"]


def row(entry=HONEST) -> dict:
    return {
        "prompt": [{"role": "user", "content": "Write ModelNew for this task with Triton kernels."}],
        "reward_model": {"style": "rule", "ground_truth": entry.reference},
        "extra_info": {"entry_point": "Model", "uuid": entry.task},
    }


@pytest.fixture(scope="module")
def factory():
    made = KernelEnvironmentFactory(device="cpu", evaluator_kwargs={"workers": 2}, max_submissions=3)
    yield made
    made.close()


def test_the_tool_evaluates_submissions_and_the_rollout_earns_the_last_ones_reward(factory):
    environment = factory()
    environment.reset(**row())
    wrong = environment.evaluate_kernel(WRONG.source)
    right = environment.evaluate_kernel(HONEST.source)
    assert [r.status for r in environment.results] == [Status.INCORRECT, Status.CORRECT]
    assert "incorrect" in wrong and "correct" in right
    assert environment.get_reward() == environment.results[-1].reward > environment.results[0].reward
    environment.evaluate_kernel(WRONG.source)
    assert environment.get_reward() == environment.results[0].reward  # "last"
    limit = environment.evaluate_kernel(HONEST.source)
    assert "limit" in limit and len(environment.results) == 3  # the fourth was not evaluated
    environment.reset(**row())
    assert environment.results == []
    assert environment.get_reward() == factory.no_submission_reward()  # nothing submitted: a format error's


def test_best_reward_unscored_results_and_bad_rows():
    factory = KernelEnvironmentFactory(device="cpu", reward="best")
    environment = KernelToolEnvironment(factory)
    environment.reset(**row())
    environment.results = [
        EvalResult(status=Status.CORRECT, reward=1.0),
        EvalResult(status=Status.INCORRECT, reward=-0.3),
    ]
    assert environment.get_reward() == 1.0
    environment.results = [EvalResult(status=Status.CRASHED, reward=0.0, scored=False)]
    assert environment.get_reward() is None  # TRL leaves it out of the loss
    with pytest.raises(ValueError, match="ground_truth"):
        environment.reset(prompt="x", reward_model={"style": "rule"})
    with pytest.raises(RuntimeError, match="before reset"):
        KernelToolEnvironment(factory).evaluate_kernel("x")
    with pytest.raises(ValueError, match="reward must be"):
        KernelEnvironmentFactory(reward="mean")
    with pytest.raises(ValueError, match="reward_scheme"):
        KernelEnvironmentFactory(reward_scheme="nope")


def test_grpo_trainer_trains_steps_with_the_kernel_environment(tmp_path, factory):
    from trl import GRPOConfig, GRPOTrainer
    from trl.chat_template_utils import qwen2_5_chat_template

    from trl_ext.tiny_model import build_model, build_tokenizer

    tokenizer = build_tokenizer()
    tokenizer.chat_template = qwen2_5_chat_template  # a template TRL can parse tool calls from
    model = build_model(tokenizer)
    args = GRPOConfig(
        output_dir=str(tmp_path),
        max_steps=3,
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=8,
        report_to=[],
        logging_steps=1,
        save_strategy="no",
        use_cpu=True,
    )
    trainer = GRPOTrainer(
        model=model,
        args=args,
        train_dataset=datasets.Dataset.from_list([row(), row()]),
        processing_class=tokenizer,
        environment_factory=factory,
    )
    assert any(getattr(tool, "__name__", "") == "evaluate_kernel" for tool in trainer.tools)
    trainer.train()
    assert trainer.state.global_step == 3
    logged = {key: value for entry in trainer.state.log_history for key, value in entry.items()}
    # A random model calls no tool: every rollout earns the no-submission reward, read through get_reward.
    assert logged["rewards/KernelToolEnvironment/mean"] == pytest.approx(factory.no_submission_reward())
    pool = [env for envs in trainer._environment_pool.values() for env in envs]
    assert sum(env._reference == HONEST.reference for env in pool) >= 2  # reset with each rollout's row


def test_the_openenv_style_loop_steps_until_a_correct_kernel(factory):
    env = KernelEnv(factory)
    first = env.reset(row())
    assert first.text.startswith("Write ModelNew") and first.reward is None and not first.done
    wrong = env.step(WRONG.source)
    assert wrong.result.status == Status.INCORRECT and not wrong.done and wrong.reward is not None
    right = env.step(HONEST.source)
    assert right.result.status == Status.CORRECT and right.done and right.reward > wrong.reward
    assert env.state == {
        "submissions": 2,
        "statuses": ["incorrect", "correct"],
        "done": True,
        "reward": right.reward,
    }
    with pytest.raises(RuntimeError, match="after the episode ended"):
        env.step(HONEST.source)
    assert not env.reset(row()).done and env.state["submissions"] == 0
