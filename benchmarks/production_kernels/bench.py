"""Independent timing of one (reference, candidate) pair with ``triton.testing.do_bench`` (CUDA only).

A second opinion beside kernel_reward's own timing, sharing none of its code: both programs are imported from
their files in this process, built from the same seed (the candidate gets the reference's parameters where names,
shapes and dtypes match, as the judge does), run once on the same inputs to check the outputs agree, then timed
under ``torch.no_grad()`` with ``do_bench(..., return_mode="median")`` (L2 flushed before each call by do_bench),
reference and candidate alternating for ``repeats`` rounds. The speedup is the median of the reference's round
medians over the median of the candidate's (background §7: two do_bench medians agree within ~1 % p95).
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kernel_reward.common.loading import import_from_file, unique_module_name


@dataclass
class BenchResult:
    """do_bench medians in milliseconds (one per round and side) and the output agreement they were taken on."""

    reference_ms: float
    candidate_ms: float
    speedup: float  # reference_ms / candidate_ms
    reference_rounds_ms: list[float]
    candidate_rounds_ms: list[float]
    max_abs_error: float
    outputs_match: bool  # torch.allclose per output at atol/rtol
    inputs_unchanged: bool  # the candidate left its inputs as it found them

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def do_bench_pair(
    reference_path: Path,
    candidate_path: Path,
    *,
    device: str = "cuda",
    repeats: int = 3,
    warmup_ms: int = 25,
    rep_ms: int = 100,
    atol: float = 1e-4,
    rtol: float = 1e-4,
    seed: int = 42,
) -> BenchResult:
    """Time ``Model`` of ``reference_path`` against ``ModelNew`` of ``candidate_path`` on ``device``.

    Raises:
        ValueError: ``device`` is not a CUDA device or ``repeats`` < 1.
        RuntimeError: CUDA is not available.
    """
    import torch
    from triton.testing import do_bench

    if not device.startswith("cuda"):
        raise ValueError(f"do_bench timing needs a CUDA device, got {device!r}")
    if not torch.cuda.is_available():
        raise RuntimeError("do_bench timing needs CUDA, and torch sees no CUDA device")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    if torch.device(device).index is not None:
        torch.cuda.set_device(torch.device(device))  # do_bench times on the current device
    reference_module = import_from_file(Path(reference_path), unique_module_name("bench_ref"))
    candidate_module = import_from_file(Path(candidate_path), unique_module_name("bench_cand"))
    init_inputs = reference_module.get_init_inputs()
    torch.manual_seed(seed)
    reference = reference_module.Model(*init_inputs).to(device)
    torch.manual_seed(seed)
    candidate = candidate_module.ModelNew(*init_inputs).to(device)
    _copy_matching_state(reference, candidate)
    torch.manual_seed(seed + 1)
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in reference_module.get_inputs()]
    before = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
    with torch.no_grad():
        expected = _flatten(reference(*inputs))
        produced = _flatten(candidate(*inputs))
        inputs_unchanged = all(
            not isinstance(a, torch.Tensor) or torch.equal(a, b) for a, b in zip(inputs, before, strict=True)
        )
        if len(expected) != len(produced):
            raise ValueError(f"reference returns {len(expected)} tensors, candidate {len(produced)}")
        errors = [
            (e.float() - p.float()).abs().max().item() if e.numel() else 0.0
            for e, p in zip(expected, produced, strict=True)
        ]
        match = all(
            e.shape == p.shape and torch.allclose(e.float(), p.float(), atol=atol, rtol=rtol)
            for e, p in zip(expected, produced, strict=True)
        )
        reference_rounds, candidate_rounds = [], []
        for _ in range(repeats):
            reference_rounds.append(
                float(
                    do_bench(lambda: reference(*inputs), warmup=warmup_ms, rep=rep_ms, return_mode="median")
                )
            )
            candidate_rounds.append(
                float(
                    do_bench(lambda: candidate(*inputs), warmup=warmup_ms, rep=rep_ms, return_mode="median")
                )
            )
    reference_ms = statistics.median(reference_rounds)
    candidate_ms = statistics.median(candidate_rounds)
    return BenchResult(
        reference_ms,
        candidate_ms,
        reference_ms / candidate_ms,
        reference_rounds,
        candidate_rounds,
        max(errors, default=0.0),
        match,
        inputs_unchanged,
    )


def _copy_matching_state(source: Any, target: Any) -> None:
    import torch

    own = target.state_dict()
    with torch.no_grad():
        for name, value in source.state_dict().items():
            if name in own and own[name].shape == value.shape and own[name].dtype == value.dtype:
                own[name].copy_(value)


def _flatten(output: Any) -> list[Any]:
    import torch

    if isinstance(output, torch.Tensor):
        return [output]
    if isinstance(output, tuple | list):
        return [t for item in output for t in _flatten(item)]
    raise TypeError(f"outputs must be tensors or tuples/lists of tensors, got {type(output).__name__}")
