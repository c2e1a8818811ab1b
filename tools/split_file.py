"""Split a large file into N byte-range pieces and join them back, checking size and SHA-256.

The GPU machine takes at most 64 MiB of working tree per call, so a ~98 MB model file travels as two pieces over
two calls and is reassembled there (``tools/gpu_trloo_run.py --gguf-parts``).

    python tools/split_file.py FILE --parts 2 --to DIR    # writes DIR/part1 .. DIR/partN, prints the SHA-256
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


def split_file(path: Path, parts: int, to_dir: Path) -> list[Path]:
    """Write ``to_dir/part1 .. partN`` whose concatenation is ``path``; returns their paths in order."""
    path, to_dir = Path(path), Path(to_dir)
    if not path.is_file():
        raise FileNotFoundError(f"no such file to split: {path}")
    to_dir.mkdir(parents=True, exist_ok=True)
    out = []
    with open(path, "rb") as src:
        for index, size in enumerate(part_sizes(path.stat().st_size, parts), start=1):
            piece = to_dir / f"part{index}"
            with open(piece, "wb") as dst:
                left = size
                while left:
                    chunk = src.read(min(CHUNK_BYTES, left))
                    if not chunk:
                        raise OSError(f"{path} shrank while being split")
                    dst.write(chunk)
                    left -= len(chunk)
            out.append(piece)
    return out


def join_files(parts: Sequence[Path], dest: Path, expected_sha256: str | None = None) -> Path:
    """Concatenate ``parts`` in the given order into ``dest``; with ``expected_sha256``, check the result.

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
    if expected_sha256 is not None:
        actual = sha256_of(dest)
        if actual != expected_sha256.lower():
            dest.unlink()
            raise ValueError(
                f"joined file {dest} has SHA-256 {actual}, expected {expected_sha256}: "
                "a part is missing, truncated or out of order"
            )
    return dest


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", type=Path, help="file to split")
    parser.add_argument("--parts", type=int, required=True, help="number of pieces")
    parser.add_argument("--to", type=Path, required=True, help="folder for part1 .. partN")
    args = parser.parse_args(argv)
    pieces = split_file(args.file, args.parts, args.to)
    for piece in pieces:
        print(f"{piece}  {piece.stat().st_size} bytes")
    print(f"sha256 {sha256_of(args.file)}  ({args.file.name}, {args.file.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
