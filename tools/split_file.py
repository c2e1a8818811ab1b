"""Split a large file into N byte-range pieces and join them back, checking size and SHA-256.

The GPU machine takes at most 64 MiB of working tree per call, so a ~98 MB model file travels as two pieces over
two calls and is reassembled there (``tools/gpu_trloo_run.py --gguf-parts``).

A byte range the far side can rebuild need not travel: ``--zero-gguf-tensor NAME`` leaves one tensor's data out
of the pieces, and the join writes zeros in its place (the SHA-256 printed is the file with those zeros). That is
how Qwen2.5-Coder-0.5B crosses without its 138 MiB output matrix, a quantized copy of the token embeddings that
the loader re-ties (``tools/gguf_to_hf.py --tie-output``).

    python tools/split_file.py FILE --parts 2 --to DIR    # writes DIR/part1 .. DIR/partN, prints the SHA-256
    python tools/split_file.py qwen.gguf --parts 6 --to DIR --zero-gguf-tensor output.weight
    python tools/split_file.py --join DIR/part1 .. DIR/part6 --out model.gguf --sha256 HEX --zero-range OFF:LEN
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
from collections.abc import Sequence
from pathlib import Path

CHUNK_BYTES = 1 << 20  # copy buffer


def part_sizes(total: int, parts: int) -> list[int]:
    """Sizes of ``parts`` consecutive pieces covering ``total`` bytes; the first ones take the remainder."""
    if parts < 1:
        raise ValueError(f"parts must be >= 1, got {parts}")
    if total < parts:
        raise ValueError(f"cannot cut {total} bytes into {parts} non-empty pieces")
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


ByteRange = tuple[int, int]  # (offset, length)


def parse_range(text: str) -> ByteRange:
    """``"OFFSET:LENGTH"`` (decimal) -> ``(offset, length)``."""
    offset, sep, length = text.partition(":")
    if not sep or not offset.isdigit() or not length.isdigit() or int(length) == 0:
        raise ValueError(f"expected OFFSET:LENGTH with decimal numbers and LENGTH > 0, got {text!r}")
    return int(offset), int(length)


def gguf_tensor_range(path: Path, name: str) -> ByteRange:
    """The byte range of tensor ``name``'s data in a GGUF file (needs the ``gguf`` package)."""
    import gguf

    for tensor in gguf.GGUFReader(str(path)).tensors:
        if tensor.name == name:
            return int(tensor.data_offset), int(tensor.n_bytes)
    raise ValueError(f"{path} has no tensor named {name!r}")


def _copy(src, dst, count: int, what: Path) -> None:
    while count:
        chunk = src.read(min(CHUNK_BYTES, count))
        if not chunk:
            raise OSError(f"{what} shrank while being copied")
        dst.write(chunk)
        count -= len(chunk)


def split_file(path: Path, parts: int, to_dir: Path, *, drop: ByteRange | None = None) -> list[Path]:
    """Write ``to_dir/part1 .. partN`` whose concatenation is ``path`` (less the ``drop`` range, if given);
    returns their paths in order."""
    path, to_dir = Path(path), Path(to_dir)
    if not path.is_file():
        raise FileNotFoundError(f"no such file to split: {path}")
    size = path.stat().st_size
    if drop is not None and (drop[0] < 0 or drop[1] <= 0 or drop[0] + drop[1] > size):
        raise ValueError(f"range {drop} to leave out is not inside {path} ({size} bytes)")
    kept = size - (drop[1] if drop else 0)
    to_dir.mkdir(parents=True, exist_ok=True)
    out = []
    with open(path, "rb") as src:
        position = 0  # in the kept bytes
        for index, piece_size in enumerate(part_sizes(kept, parts), start=1):
            piece = to_dir / f"part{index}"
            with open(piece, "wb") as dst:
                left = piece_size
                while left:
                    if drop and position == drop[0]:
                        src.seek(drop[1], 1)  # skip the dropped bytes (the join writes zeros there)
                    stop = drop[0] if drop and position < drop[0] else kept
                    count = min(left, stop - position)
                    _copy(src, dst, count, path)
                    position += count
                    left -= count
            out.append(piece)
    return out


def join_files(
    parts: Sequence[Path],
    dest: Path,
    expected_sha256: str | None = None,
    *,
    zero_range: ByteRange | None = None,
) -> Path:
    """Concatenate ``parts`` in the given order into ``dest``, inserting ``zero_range[1]`` zero bytes at offset
    ``zero_range[0]`` when given (the range ``split_file(drop=...)`` left out); with ``expected_sha256``, check
    the result.

    Raises ValueError naming the expected and actual digest on a mismatch (and removes ``dest``), so a missing or
    reordered piece never reaches the model loader.
    """
    if not parts:
        raise ValueError("join_files needs at least one part")
    missing = [str(p) for p in parts if not Path(p).is_file()]
    if missing:
        raise FileNotFoundError(f"missing part file(s): {', '.join(missing)}")
    dest = Path(dest)
    with open(dest, "wb") as dst:
        for piece in parts:
            with open(piece, "rb") as src:
                shutil.copyfileobj(src, dst, CHUNK_BYTES)
    if zero_range is not None:
        _insert_zeros(dest, *zero_range)
    if expected_sha256 is not None:
        actual = sha256_of(dest)
        if actual != expected_sha256.lower():
            dest.unlink()
            raise ValueError(
                f"joined file {dest} has SHA-256 {actual}, expected {expected_sha256}: "
                "a part is missing, truncated or out of order"
            )
    return dest


def _insert_zeros(path: Path, offset: int, length: int) -> None:
    """Rewrite ``path`` with ``length`` zero bytes inserted at ``offset`` (through a sibling file, renamed)."""
    if offset > path.stat().st_size:
        raise ValueError(f"cannot insert zeros at {offset}: {path} has {path.stat().st_size} bytes")
    tmp = path.with_name(path.name + ".partial")
    with open(path, "rb") as src, open(tmp, "wb") as dst:
        _copy(src, dst, offset, path)
        dst.truncate(offset + length)  # a hole: reads as zeros, costs no writes
        dst.seek(offset + length)
        shutil.copyfileobj(src, dst, CHUNK_BYTES)
    tmp.replace(path)


def _zeroed_sha256(path: Path, zero: ByteRange) -> str:
    """SHA-256 of ``path`` with ``zero``'s bytes read as zeros (what the join rebuilds)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        position = 0
        while chunk := handle.read(CHUNK_BYTES):
            start, stop = max(zero[0] - position, 0), min(zero[0] + zero[1] - position, len(chunk))
            if start < stop:
                chunk = chunk[:start] + bytes(stop - start) + chunk[stop:]
            digest.update(chunk)
            position += len(chunk)
    return digest.hexdigest()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("file", type=Path, nargs="?", help="file to split")
    parser.add_argument("--parts", type=int, help="number of pieces")
    parser.add_argument("--to", type=Path, help="folder for part1 .. partN")
    parser.add_argument(
        "--zero-gguf-tensor",
        metavar="NAME",
        help="leave this GGUF tensor's data out of the pieces (the join writes zeros there)",
    )
    parser.add_argument("--join", type=Path, nargs="+", metavar="PART", help="join these pieces instead")
    parser.add_argument("--out", type=Path, help="--join: the file to write")
    parser.add_argument("--sha256", help="--join: expected SHA-256 of the joined file")
    parser.add_argument(
        "--zero-range",
        type=parse_range,
        metavar="OFFSET:LENGTH",
        help="--join: insert LENGTH zero bytes at OFFSET (the range the split left out)",
    )
    args = parser.parse_args(argv)
    if args.join:
        if args.out is None:
            parser.error("--join needs --out")
        joined = join_files(args.join, args.out, args.sha256, zero_range=args.zero_range)
        print(f"joined {len(args.join)} pieces into {joined} ({joined.stat().st_size} bytes)")
        return
    if args.file is None or args.parts is None or args.to is None:
        parser.error("splitting needs FILE, --parts and --to")
    drop = gguf_tensor_range(args.file, args.zero_gguf_tensor) if args.zero_gguf_tensor else None
    pieces = split_file(args.file, args.parts, args.to, drop=drop)
    for piece in pieces:
        print(f"{piece}  {piece.stat().st_size} bytes")
    digest = _zeroed_sha256(args.file, drop) if drop else sha256_of(args.file)
    note = f", zero range {drop[0]}:{drop[1]} ({args.zero_gguf_tensor})" if drop else ""
    print(f"sha256 {digest}  ({args.file.name}, {args.file.stat().st_size} bytes{note})")


if __name__ == "__main__":
    main()
