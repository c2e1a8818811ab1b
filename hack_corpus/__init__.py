"""The hack corpus: hostile and honest candidates, each with the verdict it must get.

Each entry in ``entries/`` is a candidate program whose first line records its task and expected verdict::

    # corpus: task=add_relu expect=hacked reason=forged_message targets=kernel_reward.ipc.wire.send_message

``task`` names a reference in ``tasks/``; ``expect`` is a status (``a|b`` accepts either, where which check fires
first depends on the GPU's scheduling); ``expect_cpu`` overrides it under the CPU interpreter; ``reason`` is a hack
reason the result must carry (``a|b``: either, likewise); ``gpu`` marks an entry that only a GPU can run; ``shape_check`` / ``shape_passed``
set and check the resized-input check; ``min_coverage`` runs it in strict mode (``EvalOptions.min_coverage``); ``host_clock`` times it on the CPU too, on the judge's host clock
(``EvalOptions.host_clock_timing``: the timed phase's checks run without a GPU); ``targets`` lists the harness attributes (``module.attr`` or
``module.Class.attr``) the entry patches by name, so a test can prove the attack still finds them after code moves;
``installer`` names the entry's function that applies the patch (default ``install``); ``open`` names a known gap
(docs/security.md, "Known gaps") that the entry still wins through: its test is an expected failure, strict, so the
day a defence catches it the test says so and the marker goes; ``closed_by=ledger`` says the gap is closed where
the launch ledger runs (``PoolConfig.launch_ledger``), so with it the entry must get its verdict.

Tests, benchmarks and tools share this folder; the library never reads it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

CORPUS_DIR = Path(__file__).resolve().parent
ENTRIES_DIR = CORPUS_DIR / "entries"
TASKS_DIR = CORPUS_DIR / "tasks"
_HEADER = re.compile(r"^# corpus: (?P<fields>.*)$")
ATTACK_PREFIXES = ("forge", "tamper", "peek", "timing", "sandbox")


@dataclass(frozen=True)
class CorpusEntry:
    """One corpus candidate and the verdict it must get (from its first line: ``# corpus: key=value ...``)."""

    name: str
    path: Path
    task: str
    expect: str
    expect_cpu: str | None = None
    reason: str | None = None
    gpu_only: bool = False
    options: dict = field(default_factory=dict)
    shape_passed: bool | None = None
    targets: tuple[str, ...] = ()
    installer: str = "install"
    open_gap: str | None = None
    closed_by_ledger: bool = False  # the open gap is closed where the launch ledger runs

    def is_open(self, ledger: bool) -> bool:
        """Whether the entry still wins through its gap (with the launch ledger on or off)."""
        return self.open_gap is not None and not (ledger and self.closed_by_ledger)

    def expected_status(self, device: str) -> str:
        """The verdict it must get on ``device``."""
        return self.expect_cpu if device == "cpu" and self.expect_cpu else self.expect

    @property
    def reasons(self) -> tuple[str, ...]:
        """The hack reasons of which the result must carry one (none: any or none)."""
        return tuple(self.reason.split("|")) if self.reason else ()

    @property
    def is_attack(self) -> bool:
        return self.name.split("_")[0] in ATTACK_PREFIXES

    @property
    def source(self) -> str:
        return self.path.read_text()

    @property
    def reference(self) -> str:
        return (TASKS_DIR / f"{self.task}.py").read_text()


def parse_header(path: Path) -> dict[str, str | bool]:
    match = _HEADER.match(path.read_text().splitlines()[0])
    if match is None:
        raise ValueError(f"{path.name}: first line must be '# corpus: task=... expect=...'")
    fields: dict[str, str | bool] = {}
    for token in match.group("fields").split():
        key, _, value = token.partition("=")
        fields[key] = value if value else True
    for required in ("task", "expect"):
        if required not in fields:
            raise ValueError(f"{path.name}: the corpus header has no {required}=")
    return fields


def load_corpus() -> list[CorpusEntry]:
    entries = []
    for path in sorted(ENTRIES_DIR.glob("*.py")):
        fields = parse_header(path)
        options = {"shape_check": fields["shape_check"]} if "shape_check" in fields else {}
        if fields.get("host_clock"):
            options["host_clock_timing"] = True
        if "min_coverage" in fields:
            options["min_coverage"] = float(fields["min_coverage"])
        shape_passed = None if "shape_passed" not in fields else fields["shape_passed"] == "true"
        targets = tuple(t for t in str(fields.get("targets", "")).split(",") if t)
        if fields.get("closed_by", "ledger") != "ledger" or ("closed_by" in fields and "open" not in fields):
            raise ValueError(f"{path.name}: closed_by=ledger is the one value, and only beside open=")
        entries.append(
            CorpusEntry(
                name=path.stem,
                path=path,
                task=str(fields["task"]),
                expect=str(fields["expect"]),
                expect_cpu=fields.get("expect_cpu"),
                reason=fields.get("reason"),
                gpu_only=bool(fields.get("gpu")),
                options=options,
                shape_passed=shape_passed,
                targets=targets,
                installer=str(fields.get("installer", "install")),
                open_gap=str(fields["open"]) if "open" in fields else None,
                closed_by_ledger=fields.get("closed_by") == "ledger",
            )
        )
    return entries


def as_completion(source: str) -> str:
    """Wrap a corpus file the way a model answers: some prose, then the code in a fenced block."""
    return f"Here is my optimized implementation.\n\n```python\n{source}```\n"
