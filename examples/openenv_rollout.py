"""One OpenEnv harness rollout of the add_relu task against the real judge, with a scripted "model" that submits
wrong.py, then honest.py. This is the loop TRL's AsyncGRPOTrainer runs per rollout through its OpenEnv harness;
there a vLLM server writes the submissions (docs/training.md shows the wiring).

    .venv/bin/python examples/openenv_rollout.py --device cpu
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from openenv.core.harness import HarnessRunLimits, MCPHarnessAdapter, ModelStepResult
from openenv.core.llm_client import LLMResponse, ToolCall

HERE = Path(__file__).resolve().parent / "add_relu"
sys.path.insert(0, str(HERE.parents[1]))  # run from a checkout without an install
from kernel_reward.openenv_session import KernelSessionFactory  # noqa: E402


def scripted_model(answers: list[str]):
    """A ModelStep that submits each answer through the tool in turn, then stops calling tools."""
    replies = iter(answers)

    def step(messages, tools, sampling) -> ModelStepResult:
        code = next(replies, None)
        if code is None:
            return ModelStepResult(response=LLMResponse(content="Done."))
        call = ToolCall(id=f"call_{len(messages)}", name=tools[0].name, args={"code": code})
        return ModelStepResult(response=LLMResponse(content="", tool_calls=[call]))

    return step


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default=None, help="cpu (Triton interpreter, no timing) or cuda[:N]")
    args = parser.parse_args()
    row = {
        "prompt": [{"role": "user", "content": "Write ModelNew, a Triton version of this task."}],
        "reward_model": {"style": "rule", "ground_truth": (HERE / "reference.py").read_text()},
    }
    factory = KernelSessionFactory([row], device=args.device, max_submissions=4)
    try:
        session = factory.create(row["prompt"])
        answers = [(HERE / name).read_text() for name in ("wrong.py", "honest.py")]
        rollout = MCPHarnessAdapter().run_white_box(
            scripted_model(answers), session, HarnessRunLimits(max_turns=4)
        )
        for number, entry in enumerate(rollout.tool_trace, 1):
            meta = entry.result.metadata
            print(f"submission {number}: {meta['status']}, reward {meta['submission_reward']}")
        verdict = session.verify(rollout.messages)
        print(f"rollout reward (verify().env_reward): {verdict.env_reward}  done: {verdict.done}")
        session.close()
    finally:
        factory.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
