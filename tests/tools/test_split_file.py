"""tools/split_file.py: byte-range split and checked join (how a GGUF model travels to the GPU machine)."""

import hashlib
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "split_file.py"
_spec = importlib.util.spec_from_file_location("split_file", SCRIPT)
split_file_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(split_file_mod)


@pytest.mark.parametrize("total,parts", [(10, 1), (10, 3), (7, 7), (1_000_003, 2)])
def test_part_sizes_cover_the_file_and_differ_by_at_most_one(total, parts):
    sizes = split_file_mod.part_sizes(total, parts)
    assert len(sizes) == parts
    assert sum(sizes) == total
    assert max(sizes) - min(sizes) <= 1
    assert sizes == sorted(sizes, reverse=True)


@pytest.mark.parametrize("total,parts", [(10, 0), (3, 4)])
def test_part_sizes_rejects_impossible_cuts(total, parts):
    with pytest.raises(ValueError):
        split_file_mod.part_sizes(total, parts)


@pytest.mark.parametrize("parts", [1, 2, 5])
def test_split_then_join_round_trips(tmp_path, parts):
    data = bytes(range(256)) * 4099 + b"tail"  # not a multiple of any part count or of the copy chunk
    src = tmp_path / "model.gguf"
    src.write_bytes(data)
    pieces = split_file_mod.split_file(src, parts, tmp_path / "parts")
    assert [p.name for p in pieces] == [f"part{i}" for i in range(1, parts + 1)]
    assert b"".join(p.read_bytes() for p in pieces) == data
    joined = split_file_mod.join_files(pieces, tmp_path / "joined.gguf", hashlib.sha256(data).hexdigest())
    assert joined.read_bytes() == data


def test_join_detects_wrong_order_and_removes_output(tmp_path):
    data = b"".join(i.to_bytes(4, "little") for i in range(50_000))
    src = tmp_path / "model.gguf"
    src.write_bytes(data)
    first, second = split_file_mod.split_file(src, 2, tmp_path / "parts")
    dest = tmp_path / "joined.gguf"
    with pytest.raises(ValueError, match="out of order"):
        split_file_mod.join_files([second, first], dest, hashlib.sha256(data).hexdigest())
    assert not dest.exists()


def test_join_names_missing_parts(tmp_path):
    present = tmp_path / "part1"
    present.write_bytes(b"abc")
    with pytest.raises(FileNotFoundError, match="part2"):
        split_file_mod.join_files([present, tmp_path / "part2"], tmp_path / "out")


def test_cli_splits_and_prints_digest(tmp_path):
    data = b"x" * 1001
    src = tmp_path / "f.bin"
    src.write_bytes(data)
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(src), "--parts", "2", "--to", str(tmp_path / "p")],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert hashlib.sha256(data).hexdigest() in proc.stdout
    assert (tmp_path / "p" / "part1").stat().st_size == 501
    assert (tmp_path / "p" / "part2").stat().st_size == 500


@pytest.mark.parametrize("drop", [(0, 5), (7, 30), (90, 10), (33, 1)])
@pytest.mark.parametrize("parts", [1, 3])
def test_a_dropped_range_travels_as_nothing_and_comes_back_as_zeros(tmp_path, drop, parts):
    data = bytes(range(1, 101))  # no zero byte, so a misplaced zero range cannot match by luck
    src = tmp_path / "model.gguf"
    src.write_bytes(data)
    pieces = split_file_mod.split_file(src, parts, tmp_path / "parts", drop=drop)
    assert sum(p.stat().st_size for p in pieces) == len(data) - drop[1]
    expected = data[: drop[0]] + bytes(drop[1]) + data[drop[0] + drop[1] :]
    assert split_file_mod._zeroed_sha256(src, drop) == hashlib.sha256(expected).hexdigest()
    joined = split_file_mod.join_files(
        pieces, tmp_path / "joined", hashlib.sha256(expected).hexdigest(), zero_range=drop
    )
    assert joined.read_bytes() == expected


def test_a_dropped_range_outside_the_file_is_refused(tmp_path):
    src = tmp_path / "f"
    src.write_bytes(b"x" * 10)
    with pytest.raises(ValueError, match="not inside"):
        split_file_mod.split_file(src, 2, tmp_path / "parts", drop=(8, 5))
    with pytest.raises(ValueError, match="OFFSET:LENGTH"):
        split_file_mod.parse_range("8-5")
