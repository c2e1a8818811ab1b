"""The judge as an OpenEnv resource session, driven the way TRL's ``AsyncGRPOTrainer`` OpenEnv harness drives it:
OpenEnv's ``MCPHarnessAdapter`` runs the rollout, each turn is a chat-template rendering with TRL's tool schema and
TRL's own response parsing (its ``_sample_turn`` without vLLM: the model's tokens are scripted), and the reward is
``session.verify(...).env_reward``. The real CPU judge evaluates every submission."""

from __future__ import annotations

import functools
import json
import pickle

import pytest

pytest.importorskip("openenv", reason="needs the openenv extra")

from openenv.core.harness import HarnessRunLimits, MCPHarnessAdapter, ModelStepResult  # noqa: E402
from trl.chat_template_utils import add_response_schema, parse_response, qwen2_5_chat_template  # noqa: E402
from trl.experimental.async_grpo.openenv_harness import _msg_to_llm_response, _tools_to_schema  # noqa: E402

from hack_corpus import load_corpus  # noqa: E402
from kernel_reward.openenv_session import KernelSessionFactory, prompt_key  # noqa: E402
from kernel_reward.result import Status  # noqa: E402
from trl_ext.tiny_model import build_tokenizer  # noqa: E402

CORPUS = {entry.name: entry for entry in load_corpus()}
HONEST = CORPUS["honest_add_relu"]
WRONG = CORPUS["fault_wrong_result"]
PROMPT = [{"role": "user", "content": "Write ModelNew for this task with Triton kernels."}]
ROW = {
    "prompt": PROMPT,
    "reward_model": {"style": "rule", "ground_truth": HONEST.reference},
    "extra_info": {"entry_point": "Model"},
}


@pytest.fixture(scope="module")
def factory():
    made = KernelSessionFactory(
        [ROW], device="cpu", evaluator_kwargs={"workers": 2}, max_submissions=3, reward="last"
    )
    yield made
    made.close()


@pytest.fixture(scope="module")
def tokenizer():
    made = build_tokenizer()
    made.chat_template = qwen2_5_chat_template
    return add_response_schema(made)


def scripted_model(tokenizer, replies: list[str]):
    """An OpenEnv ``ModelStep`` that renders the conversation as TRL's harness does and "samples" the next scripted
    reply: its tokens go through TRL's ``parse_response`` and ``_msg_to_llm_response``, so a tool call reaches the
    session only if TRL can read it back from the model's text."""
    turns = iter(replies)
    prompts: list[list[int]] = []

    def step(messages, tools, sampling) -> ModelStepResult:
        schema = _tools_to_schema(tools)
        prompt_ids = tokenizer.apply_chat_template(
            messages, tools=schema, add_generation_prompt=True, tokenize=True, return_dict=False
        )
        prompts.append(prompt_ids)
        reply_ids = tokenizer(next(turns) + "<|im_end|>", add_special_tokens=False)["input_ids"]
        message = parse_response(tokenizer, reply_ids, prefix=prompt_ids, tools=schema)
        return ModelStepResult(
            response=_msg_to_llm_response(message), prompt_ids=prompt_ids, completion_ids=reply_ids
        )

    step.prompts = prompts
    return step


def tool_call(code: str) -> str:
    return (
        "<tool_call>\n"
        + json.dumps({"name": "evaluate_kernel", "arguments": {"code": code}})
        + "\n</tool_call>"
    )


def test_a_harness_rollout_submits_through_the_tool_until_correct(factory, tokenizer):
    model = scripted_model(tokenizer, [tool_call(WRONG.source), tool_call(HONEST.source), "done"])
    session = factory.create(PROMPT, seed=0, episode_id="rollout-1")  # TRL passes the row's prompt
    rollout = MCPHarnessAdapter().run_white_box(model, session, HarnessRunLimits(max_turns=4))
    verdict = session.verify(rollout.messages)
    session.close()

    statuses = [entry.result.metadata["status"] for entry in rollout.tool_trace]
    assert statuses == [Status.INCORRECT.value, Status.CORRECT.value]
    assert rollout.done and len(model.prompts) == 2  # a correct kernel ends the episode
    assert "evaluate_kernel" in tokenizer.decode(model.prompts[0])  # the model was shown the tool
    tool_messages = [m for m in rollout.messages if m["role"] == "tool"]
    assert "incorrect" in tool_messages[0]["content"] and "correct" in tool_messages[1]["content"]
    correct_reward = rollout.tool_trace[1].result.metadata["submission_reward"]
    assert verdict.env_reward == correct_reward > rollout.tool_trace[0].result.metadata["submission_reward"]
    assert verdict.done and verdict.metrics == {"submissions": 2, "correct": True}


def test_a_rollout_without_a_submission_earns_a_format_errors_reward(factory, tokenizer):
    model = scripted_model(tokenizer, ["I would rather not write a kernel."])
    session = factory.create(dict(ROW))  # a whole row works too
    rollout = MCPHarnessAdapter().run_white_box(model, session, HarnessRunLimits(max_turns=2))
    assert rollout.tool_trace == []
    assert session.verify(rollout.messages).env_reward == factory.environments.no_submission_reward()


def test_bad_tasks_tools_and_arguments_are_refused(factory):
    with pytest.raises(KeyError, match="no row of this factory"):
        factory.create([{"role": "user", "content": "another task"}])
    with pytest.raises(TypeError, match="chat messages or a string"):
        prompt_key(42)
    session = factory.create(PROMPT)
    with pytest.raises(KeyError, match="Unknown tool"):
        session.call_tool("step", {"code": "x"})
    with pytest.raises(ValueError, match="one argument, code"):
        session.call_tool("evaluate_kernel", {"code": 3})
    with pytest.raises(ValueError, match="one argument, code"):
        session.call_tool("evaluate_kernel", {"code": "x", "extra": 1})
    assert session.verify([]).metrics["submissions"] == 0  # refused calls were not submissions
    with pytest.raises(ValueError, match="no reward_model"):
        KernelSessionFactory([{"prompt": PROMPT, "reward_model": {}}])
    with pytest.raises(ValueError, match="another task"):
        KernelSessionFactory([ROW, {**ROW, "reward_model": {"ground_truth": WRONG.source}}])
    with pytest.raises(ValueError, match="no rows"):
        KernelSessionFactory([])


def test_the_factory_travels_to_trls_rollout_process_as_a_partial():
    made = pickle.loads(pickle.dumps(functools.partial(KernelSessionFactory, rows=[ROW], device="cpu")))()
    try:
        assert made.create(PROMPT).list_tools()[0].name == "evaluate_kernel"
    finally:
        made.close()
