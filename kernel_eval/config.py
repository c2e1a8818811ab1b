"""Configuration of one evaluation run (a dataclass with help text; the CLI is generated from it)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal

Baseline = Literal["eager", "compile"]


@dataclass
class EvalConfig:
    """What to evaluate, on which tasks, how, and where the results go."""

    dataset: str = field(
        metadata={"help": "dataset folder (built by dataset_builder) or a load_dataset name"}
    )
    out: str = field(
        metadata={"help": "output folder (summary.json, report.md, plots/, samples.jsonl, cache)"}
    )
    completions: str | None = field(
        default=None, metadata={"help": "saved-completions JSONL to evaluate (no model)"}
    )
    model: str | None = field(
        default=None, metadata={"help": "model folder or Hub id to generate with (transformers)"}
    )
    adapter: str | None = field(
        default=None, metadata={"help": "optional LoRA adapter folder applied to --model"}
    )
    endpoint: str | None = field(
        default=None,
        metadata={
            "help": "OpenAI-compatible server (e.g. vLLM) base URL to generate with; --model names the "
            "served model and its tokenizer"
        },
    )
    split: str | None = field(
        default=None, metadata={"help": "dataset split (default: train, or the only split)"}
    )
    levels: list[str] | None = field(default=None, metadata={"help": "keep only tasks of these levels"})
    ids: list[str] | None = field(
        default=None, metadata={"help": "keep only tasks with these ids (extra_info.uuid)"}
    )
    limit: int | None = field(
        default=None, metadata={"help": "keep only the first N tasks (after other filters)"}
    )
    device: str | None = field(
        default=None, metadata={"help": "evaluator device: cpu (Triton interpreter) or cuda"}
    )
    timeout: float | None = field(
        default=None, metadata={"help": "per-candidate evaluation timeout in seconds"}
    )
    workers: int | None = field(
        default=None, metadata={"help": "evaluator worker processes (default: evaluator's)"}
    )
    baseline: Baseline = field(
        default="eager",
        metadata={"help": "speedup baseline: eager PyTorch reference or its torch.compile'd form"},
    )
    launch_ledger: Literal["auto", "on", "off"] = field(
        default="auto",
        metadata={
            "help": "the launch ledger in every reward runner (CUPTI's kernel records decide coverage and own "
            "launches; docs/security.md): auto is on for a GPU, off on a CPU"
        },
    )
    num_samples: int = field(default=1, metadata={"help": "samples per task (model runs)"})
    num_turns: int = field(
        default=3, metadata={"help": "turns per sample, with feedback in between (model runs)"}
    )
    max_new_tokens: int = field(default=2048, metadata={"help": "tokens generated per turn"})
    temperature: float = field(default=1.0, metadata={"help": "sampling temperature (0: greedy)"})
    top_p: float = field(default=1.0, metadata={"help": "nucleus sampling"})
    seed: int = field(default=0, metadata={"help": "sampling seed"})
    generation_batch_size: int | None = field(default=None, metadata={"help": "prompts per generate call"})
    rollout_batch: int = field(
        default=16,
        metadata={
            "help": "episodes run together through the rollout (each turn's evaluations run in parallel); "
            "also the unit of the resume cache for model runs"
        },
    )
    tts_rounds: int = field(
        default=0,
        metadata={"help": "sequential test-time scaling rounds after the multi-turn phase (model runs)"},
    )
    tts_window: int = field(default=4, metadata={"help": "best turns (by reward) kept in context for TTS"})
    batch_size: int = field(
        default=16, metadata={"help": "candidates per evaluator call (saved completions)"}
    )

    def __post_init__(self) -> None:
        sources = [name for name in ("completions", "model", "endpoint") if getattr(self, name)]
        if self.endpoint and not self.model:
            raise ValueError(
                "--endpoint needs --model: the served model's name, also used to load its tokenizer"
            )
        if self.endpoint:
            sources.remove("model")
        if len(sources) != 1:
            raise ValueError(
                f"give exactly one of --completions, --model, --endpoint (got {sources or 'none'})"
            )
        if self.completions:
            model_only = [name for name in MODEL_ONLY if getattr(self, name) != _DEFAULTS[name]]
            if model_only:
                flags = ", ".join("--" + n.replace("_", "-") for n in model_only)
                raise ValueError(
                    f"{flags}: only for model runs (--model / --endpoint); saved completions already "
                    "fix the samples, turns and texts"
                )
        if self.adapter and self.endpoint:
            raise ValueError(
                "--adapter applies to a local --model; serve the adapter from the endpoint instead"
            )
        if self.device is not None and self.device.split(":")[0] not in ("cpu", "cuda"):
            raise ValueError(f"--device must be cpu or cuda[:N], got {self.device!r}")
        if self.baseline not in ("eager", "compile"):
            raise ValueError(f"--baseline must be eager or compile, got {self.baseline!r}")
        for name in (
            "num_samples",
            "num_turns",
            "max_new_tokens",
            "tts_window",
            "batch_size",
            "rollout_batch",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(self, name)}")
        if self.tts_rounds < 0:
            raise ValueError(f"--tts-rounds must be >= 0, got {self.tts_rounds}")
        if self.temperature < 0 or not 0 < self.top_p <= 1:
            raise ValueError(
                f"need temperature >= 0 and 0 < top_p <= 1, got {self.temperature}, {self.top_p}"
            )

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


# Options that only mean something when a model generates (rejected with --completions when changed).
MODEL_ONLY = (
    "adapter",
    "num_samples",
    "num_turns",
    "max_new_tokens",
    "temperature",
    "top_p",
    "seed",
    "generation_batch_size",
    "rollout_batch",
    "tts_rounds",
    "tts_window",
)
_DEFAULTS = {f.name: f.default for f in fields(EvalConfig) if f.name in MODEL_ONLY}
