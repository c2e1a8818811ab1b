"""Build a dataset directory (zstd Parquet shards + card) from one source, dropping unusable rows.

Three steps:
1. `scan_source`: convert every chunk in worker processes, run the static checks and hash each normalised
   reference; in the parent, drop duplicates (first occurrence wins) and, opt-in, run the runtime reference
   checks of `dataset_builder.reference_checks` on the survivors. Result: which rows of each chunk to keep,
   and a `BuildReport` naming every dropped row and its reasons.
2. `KernelDatasetBuilder` (a `datasets.ArrowBasedBuilder`): converts the chunks again in parallel
   (`num_proc`) and yields the kept rows as Arrow tables cast to FEATURES.
3. `build_dataset`: runs both, writes `data/train-XXXXX-of-YYYYY.parquet` (zstd) sized by `shard_size`, and
   the dataset card.
"""

from __future__ import annotations

import logging
import math
import multiprocessing
import shutil
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm.auto import tqdm

from .build_report import BuildReport, DroppedRow
from .checks import DropReason, scan_reference
from .features import FEATURES
from .prompt import load_template
from .runtime import run_reference_checks
from .sources.formats import Chunk, SourceFormat
from .sources.planning import plan_chunks
from .sources.reading import read_table

logger = logging.getLogger(__name__)

# Uncompressed Arrow bytes per Parquet shard: 72k upstream-sized rows (~0.7 GB of text) give 3 shards.
DEFAULT_SHARD_SIZE = 256 * 2**20
ROW_GROUP_ROWS = 1000  # rows per Parquet row group: small enough for smooth streaming


class BuildError(RuntimeError):
    """The build could not run (bad options, unwritable output); not raised for dropped rows."""


# ---------------------------------------------------------------------------------------------------------
# Step 1: scan
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Scanned:
    where: str
    uuid: str
    digest: str
    problems: tuple[DropReason, ...]
    reference: str | None  # kept only when runtime checks will need it
    entry_point: str


def _scan_chunk(chunk: Chunk, template_path: str | None, keep_reference: bool) -> list[_Scanned]:
    converted = read_table(chunk, template_path)
    references = converted.column("reward_model", "ground_truth")
    uuids = converted.column("extra_info", "uuid")
    entry_points = converted.column("extra_info", "entry_point")
    scanned = []
    for where, reference, uuid, entry_point in zip(
        converted.wheres, references, uuids, entry_points, strict=True
    ):
        problems, digest = scan_reference(reference, entry_point or "Model")
        scanned.append(
            _Scanned(
                where,
                uuid,
                digest,
                tuple(problems),
                reference if keep_reference else None,
                entry_point or "Model",
            )
        )
    return scanned


def _pool(num_proc: int) -> ProcessPoolExecutor:
    methods = multiprocessing.get_all_start_methods()
    # fork: workers inherit the imported modules (spawn would re-import datasets/pyarrow in each worker).
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    return ProcessPoolExecutor(max_workers=num_proc, mp_context=context)


def scan_source(
    chunks: list[Chunk],
    *,
    template_path: str | None,
    num_proc: int,
    check_references: bool,
    reference_timeout_s: float,
    report: BuildReport,
) -> list[list[int]]:
    """Fill `report` and return, per chunk, the offsets of the rows to keep."""
    per_chunk: list[list[_Scanned]]
    progress = tqdm(total=len(chunks), desc="scanning", unit="chunk", disable=len(chunks) < 4)
    if num_proc > 1 and len(chunks) > 1:
        with _pool(num_proc) as pool:
            futures = [pool.submit(_scan_chunk, c, template_path, check_references) for c in chunks]
            per_chunk = []
            for future in futures:
                per_chunk.append(future.result())
                progress.update()
    else:
        per_chunk = []
        for chunk in chunks:
            per_chunk.append(_scan_chunk(chunk, template_path, check_references))
            progress.update()
    progress.close()

    keep: list[list[int]] = [[] for _ in chunks]
    first_seen: dict[str, str] = {}
    survivors: list[tuple[int, int, _Scanned]] = []
    for chunk_index, rows in enumerate(per_chunk):
        for offset, row in enumerate(rows):
            report.rows_read += 1
            problems, detail = list(row.problems), ""
            if row.digest in first_seen:
                problems.append(DropReason.DUPLICATE)
                detail = f"same normalised reference as {first_seen[row.digest]}"
            else:
                first_seen[row.digest] = row.where
            if problems:
                report.dropped.append(DroppedRow(row.where, row.uuid, tuple(problems), detail))
            else:
                survivors.append((chunk_index, offset, row))

    if check_references and survivors:
        logger.info("running reference checks on %d rows (%d workers)", len(survivors), num_proc)
        results = run_reference_checks(
            [row.reference for _, _, row in survivors],
            [row.entry_point for _, _, row in survivors],
            num_proc=num_proc,
            timeout_s=reference_timeout_s,
        )
        checked = []
        for (chunk_index, offset, row), (problems, detail) in zip(survivors, results, strict=True):
            if problems:
                report.dropped.append(DroppedRow(row.where, row.uuid, problems, detail))
            else:
                checked.append((chunk_index, offset, row))
        survivors = checked
    for chunk_index, offset, _ in survivors:
        keep[chunk_index].append(offset)
    report.rows_kept = len(survivors)
    return keep


# ---------------------------------------------------------------------------------------------------------
# Step 2: the datasets builder
# ---------------------------------------------------------------------------------------------------------


@dataclass
class KernelDatasetConfig(datasets.BuilderConfig):
    """Which source to read and how; `keep` (set by `build_dataset`) holds the rows chosen by `scan_source`."""

    source: str | None = None
    source_format: str = SourceFormat.SAMPLE.value
    preset: str = "small"
    prompt_template: str | None = None
    chunks: list[Chunk] | None = None
    keep: list[list[int]] | None = None


class KernelDatasetBuilder(datasets.ArrowBasedBuilder):
    """Yields the kept rows of each chunk as FEATURES-typed Arrow tables; everything else is `datasets`'."""

    BUILDER_CONFIG_CLASS = KernelDatasetConfig

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(features=FEATURES)

    def _split_generators(self, dl_manager):
        config = self.config
        if config.chunks is None or config.keep is None:
            raise BuildError("KernelDatasetBuilder needs chunks and keep (use dataset_builder.build_dataset)")
        return [
            datasets.SplitGenerator(
                name=datasets.Split.TRAIN,
                gen_kwargs={
                    "chunks": config.chunks,
                    "keep": config.keep,
                    "template_path": config.prompt_template,
                },
            )
        ]

    def _generate_tables(self, chunks: list[Chunk], keep: list[list[int]], template_path: str | None):
        for chunk, offsets in zip(chunks, keep, strict=True):
            if not offsets:
                continue
            table = read_table(chunk, template_path).table
            if len(offsets) < table.num_rows:
                table = table.take(pa.array(offsets, pa.int64()))
            yield f"{chunk.path}:{chunk.start}", table


# ---------------------------------------------------------------------------------------------------------
# Step 3: write the directory
# ---------------------------------------------------------------------------------------------------------


def _write_shards(dataset: datasets.Dataset, data_dir: Path, shard_size: int) -> list[str]:
    table = dataset.data.table
    wanted = max(1, math.ceil(table.nbytes / shard_size))
    rows_per_shard = math.ceil(dataset.num_rows / wanted)
    num_shards = math.ceil(
        dataset.num_rows / rows_per_shard
    )  # never an empty shard (datasets cannot read one)
    names = []
    for index in range(num_shards):
        name = f"train-{index:05d}-of-{num_shards:05d}.parquet"
        shard = table.slice(index * rows_per_shard, rows_per_shard)
        pq.write_table(shard, data_dir / name, compression="zstd", row_group_size=ROW_GROUP_ROWS)
        names.append(f"data/{name}")
    return names


def _check_out_dir(out_dir: Path, overwrite: bool) -> None:
    """Refuse, before any work, an output directory the build may not replace."""
    if out_dir.exists() and any(out_dir.iterdir()):
        if not overwrite:
            raise BuildError(f"{out_dir} exists and is not empty (pass --overwrite to replace its contents)")
        if not (out_dir / "README.md").exists() and not (out_dir / "data").exists():
            raise BuildError(f"{out_dir} does not look like a dataset directory; refusing to overwrite it")


def _clear_out_dir(out_dir: Path) -> None:
    """Remove the previous card and shards (only once the new rows are known to exist)."""
    shutil.rmtree(out_dir / "data", ignore_errors=True)
    (out_dir / "README.md").unlink(missing_ok=True)
    (out_dir / "data").mkdir(parents=True, exist_ok=True)


def build_dataset(
    source: str | None,
    source_format: SourceFormat | str,
    out_dir: str | Path,
    *,
    preset: str = "small",
    prompt_template: str | None = None,
    check_references: bool = False,
    reference_timeout_s: float = 60.0,
    num_proc: int = 1,
    shard_size: int = DEFAULT_SHARD_SIZE,
    chunk_rows: int = 64,
    license: str | None = None,
    overwrite: bool = False,
) -> BuildReport:
    """Build `out_dir` (card + zstd Parquet shards) from `source`; return the report."""
    from .card import write_card

    started = time.perf_counter()
    source_format = SourceFormat(source_format)
    template = load_template(prompt_template)  # fail early on a bad template file
    out = Path(out_dir)
    _check_out_dir(out, overwrite)
    report = BuildReport(
        source=str(source) if source else "dataset_builder.tasks",
        format=source_format.value,
        preset=preset if source_format is SourceFormat.SAMPLE else None,
        prompt_template=template.version,
        reference_checks=check_references,
    )
    chunks = plan_chunks(source_format, source, preset=preset, chunk_rows=chunk_rows)
    phase_started = time.perf_counter()
    keep = scan_source(
        chunks,
        template_path=prompt_template,
        num_proc=num_proc,
        check_references=check_references,
        reference_timeout_s=reference_timeout_s,
        report=report,
    )
    if report.rows_kept == 0:
        raise BuildError(f"no rows left to write from {report.source}:\n{report.to_text()}")
    _clear_out_dir(out)
    report.phase_seconds["scan"] = round(time.perf_counter() - phase_started, 2)
    with tempfile.TemporaryDirectory(prefix="drkernel-build-") as cache_dir:
        phase_started = time.perf_counter()
        builder = KernelDatasetBuilder(
            cache_dir=cache_dir,
            dataset_name="drkernel_rl",
            source=report.source,
            source_format=source_format.value,
            preset=preset,
            prompt_template=prompt_template,
            chunks=chunks,
            keep=keep,
        )
        builder.download_and_prepare(
            download_mode=datasets.DownloadMode.FORCE_REDOWNLOAD,
            num_proc=num_proc if num_proc > 1 and len(chunks) > 1 else None,
        )
        dataset = builder.as_dataset(split="train")
        report.phase_seconds["generate"] = round(time.perf_counter() - phase_started, 2)
        phase_started = time.perf_counter()
        report.shards = _write_shards(dataset, out / "data", shard_size)
        report.phase_seconds["write"] = round(time.perf_counter() - phase_started, 2)
        report.num_bytes = dataset.data.table.nbytes
        del dataset
    report.seconds = time.perf_counter() - started
    write_card(out, report, license=license)
    return report
