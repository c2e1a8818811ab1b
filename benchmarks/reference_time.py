"""How long does a problem's own reference take, outside the evaluator?

For each problem file (a KernelBench-style ``Model`` / ``get_inputs`` / ``get_init_inputs`` module): the seconds to
build the model, to draw one batch of inputs on the device, and the median of a few forwards, with TF32 off (the
judge's default policy) and on. It tells a slow reference from a slow evaluator: an evaluation runs the reference
some 30-60 times (trials, launch passes, timing batches), so a reference of a few seconds a call cannot finish under
a two-minute limit, whatever the judge does.

    python benchmarks/reference_time.py .kernelbench/level1/57_conv_transposed_2D__square_input__square_kernel.py
    python benchmarks/reference_time.py --repeats 5 --json-out ref.json problem_a.py problem_b.py
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

sys.path.insert(
    0, str(Path(__file__).resolve().parents[1])
)  # run as a plain script from a checkout (no install)
from kernel_reward.common.loading import check_reference, import_from_file, unique_module_name  # noqa: E402


@dataclass(frozen=True)
class ReferenceTiming:
    problem: str
    build_s: float
    inputs_s: float
    forward_s_tf32_off: float  # median over the repeats, after one warm-up call
    forward_s_tf32_on: float
    input_gib: float
    output_gib: float


def load_problem(path: Path) -> ModuleType:
    """The problem file imported as the judge imports a reference (a real module: Triton reads kernels' source)."""
    module = import_from_file(path, unique_module_name("problem"))
    try:
        check_reference(module, "Model")
    except AttributeError as exc:
        raise ValueError(f"{path}: {exc}") from None
    return module


def _gib(values: object) -> float:
    tensors = values if isinstance(values, (list, tuple)) else [values]
    return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor)) / 2**30


def _timed(device: torch.device, call: Callable[[], Any]) -> tuple[Any, float]:
    """``call()``'s result and its seconds, the device's queue drained on both sides."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    result = call()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return result, time.perf_counter() - start


def _median_forward(
    model: torch.nn.Module, inputs: list, device: torch.device, repeats: int, tf32: bool
) -> float:
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = tf32
    try:
        with torch.no_grad():
            _timed(device, lambda: model(*inputs))  # warm-up: cuDNN's algorithm choice, Triton compiles
            return statistics.median(_timed(device, lambda: model(*inputs))[1] for _ in range(repeats))
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def time_reference(path: Path, device: torch.device, repeats: int) -> ReferenceTiming:
    module = load_problem(path)
    model, build_s = _timed(device, lambda: module.Model(*module.get_init_inputs()).to(device))
    with torch.device(device):  # drawn where the judge draws them (kernel_reward.common.tensors.make_inputs)
        raw_inputs, inputs_s = _timed(device, lambda: list(module.get_inputs()))
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in raw_inputs]
    with torch.no_grad():
        output = model(*inputs)
    output_gib = _gib(output)
    del output
    return ReferenceTiming(
        problem=path.name,
        build_s=build_s,
        inputs_s=inputs_s,
        forward_s_tf32_off=_median_forward(model, inputs, device, repeats, tf32=False),
        forward_s_tf32_on=_median_forward(model, inputs, device, repeats, tf32=True),
        input_gib=_gib(inputs),
        output_gib=output_gib,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("problems", nargs="+", type=Path, help="problem files to time")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--repeats", type=int, default=3, help="timed forwards per TF32 setting (default 3)")
    parser.add_argument("--json-out", type=Path, help="write the rows as JSON")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    device = torch.device(args.device)
    rows = []
    print(
        f"{'problem':58s} {'build s':>8s} {'inputs s':>8s} {'fwd s fp32':>10s} {'fwd s tf32':>10s} "
        f"{'in GiB':>7s} {'out GiB':>7s}"
    )
    for path in args.problems:
        if not path.is_file():
            parser.error(f"{path}: no such problem file")
        try:
            row = time_reference(path, device, args.repeats)
        except ValueError as exc:  # not a problem file: named, nothing written
            parser.error(str(exc))
        rows.append(row)
        print(
            f"{row.problem[:58]:58s} {row.build_s:8.3f} {row.inputs_s:8.3f} {row.forward_s_tf32_off:10.4f} "
            f"{row.forward_s_tf32_on:10.4f} {row.input_gib:7.2f} {row.output_gib:7.2f}"
        )
        if device.type == "cuda":
            torch.cuda.empty_cache()
    if args.json_out:
        args.json_out.write_text(
            json.dumps({"device": str(device), "rows": [asdict(r) for r in rows]}, indent=2)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
