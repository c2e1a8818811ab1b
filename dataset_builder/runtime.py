"""Bridge to the opt-in runtime checks of `dataset_builder.reference_checks` (`--check-references`).

Runs the checks for many references, grouped by entry point (the checker takes one per call); their verdicts
are `DropReason`s already, so builds and validation report them like the static reasons.
"""

from __future__ import annotations

from collections import defaultdict

from .checks import DropReason


def run_reference_checks(
    references: list[str], entry_points: list[str], *, num_proc: int, timeout_s: float
) -> list[tuple[tuple[DropReason, ...], str]]:
    """(reasons, first line of the details) for each reference, in input order; () reasons when usable."""
    from .reference_checks.run import check_references  # imports torch in the children only when asked for

    if len(references) != len(entry_points):
        raise ValueError(f"{len(references)} references but {len(entry_points)} entry points")
    by_entry_point: dict[str, list[int]] = defaultdict(list)
    for index, entry_point in enumerate(entry_points):
        by_entry_point[entry_point or "Model"].append(index)
    results: list[tuple[tuple[DropReason, ...], str]] = [((), "")] * len(references)
    for entry_point, indices in by_entry_point.items():
        checks = check_references(
            [references[i] for i in indices],
            num_workers=num_proc,
            timeout_s=timeout_s,
            entry_point=entry_point,
        )
        for index, check in zip(indices, checks, strict=True):
            # details can end with a child's output tail: reports keep the first line
            detail = check.details.splitlines()[0][:300] if check.details and not check.ok else ""
            results[index] = (tuple(check.problems), detail)
    return results
