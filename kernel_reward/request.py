"""One evaluation request: the reference program, the candidate (raw completion or code) and the options.

This is what the execution service hands to a worker process (as JSON) and what the one-shot worker CLI reads
from ``--request``. It carries no behaviour beyond validation and (de)serialisation.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_reward.options import EvalOptions

DEVICES = ("cpu", "cuda")
# The share of a GPU's memory the execution service gives out: split among its workers, or whole to an evaluation
# run alone (``EvalRequest.alone``); the rest is headroom for CUDA contexts and the allocator's fragmentation.
USABLE_DEVICE_MEMORY = 0.9


@dataclass
class EvalRequest:
    """Evaluate ``candidate`` against ``reference_code`` (a PyTorch program with ``entry_point``)."""

    reference_code: str
    candidate: str  # a raw completion (code is extracted) or plain code
    entry_point: str = "Model"
    device: str | None = None  # None: CUDA when available, else the CPU interpreter; or "cpu" / "cuda[:N]"
    options: EvalOptions = field(default_factory=EvalOptions)
    # Set by the execution service for the one retry of an evaluation that ran out of device memory under its
    # worker's share: nothing else runs on the device meanwhile and it gets USABLE_DEVICE_MEMORY (service.pool).
    alone: bool = False
    # The code the execution service's screen extracted and passed (``judge.pipeline.screen_request``): the worker
    # judges it without screening again. None: the worker screens ``candidate`` itself.
    screened_code: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.reference_code, str) or not self.reference_code.strip():
            raise ValueError("EvalRequest: reference_code must be a non-empty string")
        if not isinstance(self.candidate, str):
            raise ValueError(f"EvalRequest: candidate must be a string, got {type(self.candidate).__name__}")
        if not self.entry_point.isidentifier():
            raise ValueError(
                f"EvalRequest: entry_point must be a Python identifier, got {self.entry_point!r}"
            )
        if self.device is not None and self.device.split(":")[0] not in DEVICES:
            raise ValueError(
                f"EvalRequest: device must be None, 'cpu', 'cuda' or 'cuda:N', got {self.device!r}"
            )
        if self.screened_code is not None and not isinstance(self.screened_code, str):
            raise ValueError(
                f"EvalRequest: screened_code must be a string or None, got {type(self.screened_code).__name__}"
            )
        if isinstance(self.options, dict):  # tolerate a plain dict from callers building requests by hand
            self.options = EvalOptions.from_dict(self.options)
        if not isinstance(self.options, EvalOptions):
            raise ValueError(f"EvalRequest: options must be EvalOptions, got {type(self.options).__name__}")

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["options"] = self.options.to_dict()
        return data

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    def identity(self) -> str:
        """Every field, in one string: two requests with the same identity ask for the same evaluation."""
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalRequest:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"EvalRequest.from_dict: unknown keys {sorted(unknown)}")
        values = dict(data)
        values["options"] = EvalOptions.from_dict(values.get("options") or {})
        return cls(**values)

    @classmethod
    def from_json_file(cls, path: str | Path) -> EvalRequest:
        return cls.from_dict(json.loads(Path(path).read_text()))


def identical_groups(requests: Sequence[EvalRequest]) -> list[int]:
    """Pure: for each request, the index of the first request of ``requests`` identical to it (its own index when
    none before it is)."""
    first: dict[str, int] = {}
    return [first.setdefault(request.identity(), index) for index, request in enumerate(requests)]
