"""Check a built dataset directory: card metadata, Parquet schema against FEATURES, and every row.

`validate_dataset(DIR)` returns a `ValidationReport` listing each finding with the file / row it concerns;
`python -m dataset_builder validate DIR` prints it and exits non-zero when there is any.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from .checks import DropReason, scan_reference
from .features import ARROW_SCHEMA, FEATURES

logger = logging.getLogger(__name__)


class Finding(StrEnum):
    """What validation finds wrong beyond the reasons a build drops rows for (``DropReason``, also reported): the
    first group concerns files, the rest single rows."""

    NO_DATA = "no_data"
    CARD = "card"
    SCHEMA = "schema"
    UNREADABLE = "unreadable"
    DUPLICATE_UUID = "duplicate_uuid"
    BAD_PROMPT = "bad_prompt"
    EMPTY_FIELD = "empty_field"


@dataclass(frozen=True)
class Problem:
    where: str
    finding: Finding | DropReason
    detail: str = ""


@dataclass
class ValidationReport:
    path: str
    rows: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def add(self, where: str, finding: Finding | DropReason, detail: str = "") -> None:
        self.problems.append(Problem(where, finding, detail))

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}

    def to_text(self, max_problems: int = 50) -> str:
        lines = [f"{self.path}: {self.rows} rows, {len(self.problems)} problem(s)"]
        for problem in self.problems[:max_problems]:
            lines.append(
                f"  {problem.where}: {problem.finding.value}{f' - {problem.detail}' if problem.detail else ''}"
            )
        if len(self.problems) > max_problems:
            lines.append(f"  ... and {len(self.problems) - max_problems} more")
        return "\n".join(lines)


def type_differences(name: str, expected: pa.DataType, found: pa.DataType) -> list[str]:
    """Human-readable differences between two Arrow types, naming the nested column path."""
    if expected.equals(found):
        return []
    if pa.types.is_struct(expected) and pa.types.is_struct(found):
        found_fields = {found.field(i).name: found.field(i).type for i in range(found.num_fields)}
        diffs = []
        for i in range(expected.num_fields):
            child = expected.field(i)
            if child.name not in found_fields:
                diffs.append(f"column {name}.{child.name} is missing")
            else:
                diffs += type_differences(f"{name}.{child.name}", child.type, found_fields.pop(child.name))
        diffs += [f"column {name}.{extra} is not in the schema" for extra in found_fields]
        return diffs or [f"column {name}: field order differs ({found} instead of {expected})"]
    if pa.types.is_list(expected) and (pa.types.is_list(found) or pa.types.is_large_list(found)):
        return type_differences(f"{name}[]", expected.value_type, found.value_type)
    return [f"column {name}: expected {expected}, found {found}"]


def _check_card(root: Path, report: ValidationReport) -> int | None:
    """Check README.md metadata; return the row count it declares (None when it declares none)."""
    from datasets.info import DatasetInfosDict
    from huggingface_hub import DatasetCard

    card_path = root / "README.md"
    if not card_path.exists():
        report.add("README.md", Finding.CARD, "missing dataset card")
        return None
    try:
        card = DatasetCard.load(card_path)
        infos = DatasetInfosDict.from_dataset_card_data(card.data)
    except Exception as exc:  # YAML / metadata errors come in several types
        report.add("README.md", Finding.CARD, f"unreadable metadata: {exc}")
        return None
    info = infos.get("default")
    if info is None or info.features is None:
        report.add("README.md", Finding.CARD, "no dataset_info.features in the YAML header")
        return None
    if info.features != FEATURES:
        report.add("README.md", Finding.CARD, "dataset_info.features differ from dataset_builder.FEATURES")
    if not card.data.to_dict().get("configs"):
        report.add("README.md", Finding.CARD, "no configs entry in the YAML header")
    if info.splits and "train" in info.splits:
        return info.splits["train"].num_examples
    return None


def _rows(file: Path, report: ValidationReport, rel: str) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        parquet = pq.ParquetFile(file)
    except Exception as exc:  # broken file
        report.add(rel, Finding.UNREADABLE, str(exc))
        return
    report.rows += (
        parquet.metadata.num_rows
    )  # counted even when the schema is wrong (the card check compares)
    schema = parquet.schema_arrow
    diffs = []
    for expected in ARROW_SCHEMA:
        if expected.name not in schema.names:
            diffs.append(f"column {expected.name} is missing")
        else:
            diffs += type_differences(expected.name, expected.type, schema.field(expected.name).type)
    diffs += [
        f"column {name} is not in the schema" for name in schema.names if name not in ARROW_SCHEMA.names
    ]
    for diff in diffs:
        report.add(rel, Finding.SCHEMA, diff)
    if diffs:
        return  # rows of a file with the wrong schema cannot be read as FEATURES rows
    offset = 0
    for batch in parquet.iter_batches(batch_size=1000, columns=["prompt", "reward_model", "extra_info"]):
        for record in batch.to_pylist():
            yield offset, record
            offset += 1


def validate_dataset(
    path: str | Path, *, check_references: bool = False, num_proc: int = 1, reference_timeout_s: float = 60.0
) -> ValidationReport:
    """All problems of the dataset directory at `path` (card, schema, rows)."""
    root = Path(path)
    report = ValidationReport(str(root))
    if not root.is_dir():
        report.add(str(root), Finding.NO_DATA, "not a directory")
        return report
    declared_rows = _check_card(root, report)
    files = sorted((root / "data").glob("*.parquet"))
    if not files:
        report.add("data/", Finding.NO_DATA, "no Parquet files under data/")
        return report
    seen_digest: dict[str, str] = {}
    seen_uuid: dict[str, str] = {}
    to_run: list[tuple[str, str, str]] = []
    for file in files:
        rel = str(file.relative_to(root))
        for offset, record in _rows(file, report, rel):
            extra, reference = record["extra_info"], record["reward_model"]["ground_truth"]
            uuid = extra["uuid"]
            where = f"{rel} row {offset} (uuid {uuid})"
            if not reference or not uuid:
                report.add(
                    where,
                    Finding.EMPTY_FIELD,
                    "reward_model.ground_truth" if not reference else "extra_info.uuid",
                )
                continue
            prompt = record["prompt"] or []
            if len(prompt) != 1 or prompt[0]["role"] != "user" or not (prompt[0]["content"] or "").strip():
                report.add(
                    where,
                    Finding.BAD_PROMPT,
                    f"expected one non-empty user message, found {len(prompt)} message(s)",
                )
            problems, digest = scan_reference(reference, extra["entry_point"] or "Model")
            for problem in problems:
                report.add(where, problem)
            if digest in seen_digest:
                report.add(where, DropReason.DUPLICATE, f"same normalised reference as {seen_digest[digest]}")
            seen_digest.setdefault(digest, where)
            if uuid in seen_uuid:
                report.add(where, Finding.DUPLICATE_UUID, f"uuid already used by {seen_uuid[uuid]}")
            seen_uuid.setdefault(uuid, where)
            if check_references and not problems:
                to_run.append((where, reference, extra["entry_point"] or "Model"))
    if declared_rows is not None and declared_rows != report.rows:
        report.add(
            "README.md", Finding.CARD, f"card declares {declared_rows} rows, data/ holds {report.rows}"
        )
    if to_run:
        from .runtime import run_reference_checks

        results = run_reference_checks(
            [ref for _, ref, _ in to_run],
            [entry for _, _, entry in to_run],
            num_proc=num_proc,
            timeout_s=reference_timeout_s,
        )
        for (where, _, _), (reasons, detail) in zip(to_run, results, strict=True):
            for reason in reasons:
                report.add(where, reason, detail)
    return report
