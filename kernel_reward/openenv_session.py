"""The kernel judge as an OpenEnv resource session: what TRL's ``AsyncGRPOTrainer`` drives through its OpenEnv harness.

``trl.experimental.async_grpo.openenv_harness.HarnessRolloutWorker(harness_session_factory=..., harness_adapter=
MCPHarnessAdapter())`` calls the factory in its rollout process, then per rollout ``factory.create(prompt)`` with
the dataset row's ``prompt``; the adapter offers the session's tools to the model, runs its tool calls, and the
trainer takes ``session.verify(...).env_reward`` as the rollout's reward (None: unscored, left out of the group).
Here the one tool is ``evaluate_kernel(code)``, answered with the judge's feedback, exactly as
``KernelToolEnvironment`` answers it for ``GRPOTrainer(environment_factory=...)``; the episode ends once a
submission is correct or the submission limit is used. Needs the ``openenv`` extra (``pip install
'drkernel-rl[openenv]'``).

The rollout process hides the GPUs (TRL starts it with ``CUDA_VISIBLE_DEVICES=""``): on a GPU machine give the
factory ``backend="ray"`` so the judging runs in the reward actors of ``scripts/serve_rewards.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from openenv.core.env_server.mcp_types import Tool
from openenv.core.harness import ResourceSession, ResourceSessionFactory, ToolResult, VerifyResult

from kernel_reward.result import Status
from kernel_reward.trl import unscored
from kernel_reward.trl_environment import KernelEnv, KernelEnvironmentFactory, KernelToolEnvironment

TOOL_NAME = "evaluate_kernel"


def prompt_key(prompt: Any) -> str:
    """A prompt (chat messages, or one text) as the key the factory finds its row by."""
    if isinstance(prompt, str):
        return json.dumps([["user", prompt]])
    if isinstance(prompt, list) and all(isinstance(m, Mapping) for m in prompt):
        return json.dumps([[m.get("role"), m.get("content")] for m in prompt])
    raise TypeError(f"a task's prompt must be chat messages or a string, got {type(prompt).__name__}")


def evaluate_kernel_tool() -> Tool:
    """The tool's manifest entry, with the description the model reads (``KernelToolEnvironment``'s docstring)."""
    summary, _, args = (KernelToolEnvironment.evaluate_kernel.__doc__ or "").partition("Args:")
    code_help = " ".join(args.split("code:", 1)[-1].split())
    return Tool(
        name=TOOL_NAME,
        description=" ".join(summary.split()),
        input_schema={
            "type": "object",
            "properties": {"code": {"type": "string", "description": code_help}},
            "required": ["code"],
        },
    )


class KernelSession(ResourceSession):
    """One rollout of one task (see the module docstring). Built by ``KernelSessionFactory.create``."""

    def __init__(self, environments: KernelEnvironmentFactory, row: Mapping[str, Any]) -> None:
        self._row = row
        self._env = KernelEnv(environments)
        self._env.reset(row)

    def initial_messages(self) -> list[dict[str, Any]]:
        return [dict(message) for message in self._row["prompt"]]

    def list_tools(self) -> list[Tool]:
        return [evaluate_kernel_tool()]

    def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        # KeyError and ValueError are the errors OpenEnv's MCP bridge maps to "unknown method" / "invalid params"
        if name != TOOL_NAME:
            raise KeyError(f"Unknown tool: {name} (this session offers {TOOL_NAME})")
        code = arguments.get("code")
        if not isinstance(code, str) or set(arguments) != {"code"}:
            raise ValueError(f"{TOOL_NAME} takes one argument, code (a string); got {sorted(arguments)}")
        if self._env.state["done"]:
            return ToolResult(data="The episode is over: this submission was not evaluated.", done=True)
        observation = self._env.step(code)
        result = observation.result
        return ToolResult(
            data=observation.text,
            done=observation.done,
            metadata={
                "status": result.status.value,
                "scored": not unscored(result),
                "submission_reward": observation.reward,
                "speedup": result.speedup,
            },
        )

    def verify(self, transcript: list[dict[str, Any]], final_state: Any | None = None) -> VerifyResult:
        """The episode's reward (``KernelToolEnvironment.get_reward``: last or best submission, a format error's
        when nothing was submitted, None when unscored) and what the judge said of each submission."""
        state = self._env.state
        return VerifyResult(
            env_reward=self._env.get_reward(),
            done=state["done"],
            metrics={
                "submissions": state["submissions"],
                "correct": Status.CORRECT.value in state["statuses"],
            },
            artifacts={"statuses": state["statuses"]},
        )

    def close(self) -> None:
        """Nothing to release: the judge belongs to the factory (``KernelSessionFactory.close`` stops it)."""


class KernelSessionFactory(ResourceSessionFactory[KernelSession]):
    """Sessions for the tasks of ``rows`` (dataset rows: ``prompt`` and ``reward_model["ground_truth"]``), found
    by their prompt; every session shares one judge. Keyword arguments are ``KernelEnvironmentFactory``'s (device,
    backend, reward "last" / "best", max_submissions, ``EvalOptions`` fields). Picklable as a
    ``functools.partial(KernelSessionFactory, rows=..., ...)``, which is how TRL's worker takes it."""

    def __init__(self, rows: Iterable[Mapping[str, Any]], **environment_options: Any) -> None:
        self._rows: dict[str, Mapping[str, Any]] = {}
        for index, row in enumerate(rows):
            reference = (row.get("reward_model") or {}).get("ground_truth")
            if not isinstance(reference, str) or not reference.strip():
                raise ValueError(f"KernelSessionFactory: row {index} has no reward_model['ground_truth']")
            key = prompt_key(row.get("prompt"))
            if key in self._rows and self._rows[key]["reward_model"]["ground_truth"] != reference:
                raise ValueError(
                    f"KernelSessionFactory: row {index} repeats an earlier prompt with another task"
                )
            self._rows[key] = row
        if not self._rows:
            raise ValueError("KernelSessionFactory: no rows")
        self.environments = KernelEnvironmentFactory(**environment_options)

    def create(self, task: Any, seed: int | None = None, episode_id: str | None = None) -> KernelSession:
        """A session for ``task``: a dataset row, or the prompt of one of the factory's rows."""
        if isinstance(task, Mapping):
            row = task
        else:
            row = self._rows.get(prompt_key(task))
            if row is None:
                raise KeyError("KernelSessionFactory: no row of this factory has that prompt")
        return KernelSession(self.environments, row)

    def close(self) -> None:
        self.environments.close()
