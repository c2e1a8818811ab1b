"""Check reference programs: ``check_references`` (many, ``num_workers`` at a time) and ``check_reference`` (one).

Each program runs alone in a fresh sandboxed child of ``kernel_reward``'s warm pool (``kernel_reward.judge.reference_run``:
the same sandbox, wall clock and process watch as an evaluation, no candidate); what came back becomes a
``ReferenceCheck`` (``outcome``). Results in input order.
"""

from __future__ import annotations

from collections.abc import Iterable

from .outcome import verdict
from .verdicts import ReferenceCheck

REFERENCE_WORKER = "kernel_reward.judge.reference_run"


def check_reference(source: str, *, timeout_s: float = 60.0, entry_point: str = "Model") -> ReferenceCheck:
    """Run one reference program on CPU and report its problems (see ``check_references``)."""
    return check_references(
        [source], num_workers=1, timeout_s=timeout_s, entry_point=entry_point, progress=False
    )[0]


def check_references(
    sources: Iterable[str],
    *,
    num_workers: int = 2,
    timeout_s: float = 60.0,
    entry_point: str = "Model",
    progress: bool = True,
) -> list[ReferenceCheck]:
    """Check many programs on CPU, ``num_workers`` at a time; results in input order.

    Args:
        sources: complete programs (``entry_point`` class, ``get_inputs``, ``get_init_inputs``).
        timeout_s: wall-clock budget per program (a warm child: torch is already imported).
        entry_point: name of the ``nn.Module`` class to build.
    """
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s}")
    if not entry_point.isidentifier():
        raise ValueError(f"entry_point must be a Python identifier, got {entry_point!r}")
    if num_workers < 1:
        raise ValueError(f"num_workers must be >= 1, got {num_workers}")
    programs = list(sources)
    if not programs:
        return []
    from kernel_reward import Evaluator, ServiceConfig

    service = ServiceConfig(workers=num_workers, worker_module=REFERENCE_WORKER)
    with Evaluator(device="cpu", timeout=timeout_s, progress=progress, service=service) as evaluator:
        results = evaluator.evaluate_many([(source, "", entry_point) for source in programs])
    return [verdict(result, timeout_s) for result in results]
