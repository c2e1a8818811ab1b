"""Shared pieces of the row families (reduction, norm, softmax): row sizes, the one-program-per-row kernel
skeleton and its launch."""

from __future__ import annotations

import random
from collections.abc import Sequence

ROW_SIZES = (48, 80, 96, 160, 192, 320)  # never a power of two: the block is padded, masks matter

_ROW_HOST = """        n_cols = x.shape[-1]
        x2 = x.reshape(-1, n_cols).contiguous()
        rows = x2.shape[0]
"""


def row_sizes(rng: random.Random) -> dict[str, int]:
    dim = rng.choice(ROW_SIZES)
    if rng.random() < 0.5:
        return {"BATCH": rng.choice((8, 12, 16, 24)), "DIM": dim}
    return {"BATCH": rng.choice((2, 3, 4)), "SEQ": rng.choice((4, 6, 8)), "DIM": dim}


def row_kernel(signature: str, body: Sequence[str]) -> str:
    """A one-program-per-row kernel over a contiguous (rows, n_cols) view, block padded to a power of two."""
    return "\n".join(
        [
            f"def row_kernel(x_ptr, out_ptr, {signature}n_cols, BLOCK: tl.constexpr):",
            "    row = tl.program_id(0)",
            "    cols = tl.arange(0, BLOCK)",
            "    mask = cols < n_cols",
            *("    " + line for line in body),
        ]
    )


def row_launch(extra_args: str, out_shape: str, out_alloc: str) -> str:
    return _ROW_HOST + "\n".join(
        [
            f"        out = {out_alloc}",
            f"        row_kernel[(rows,)](x2, out, {extra_args}n_cols, BLOCK=triton.next_power_of_2(n_cols))",
            f"        return out.reshape({out_shape})",
        ]
    )


LOAD_ROW = "x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other={other}).to(tl.float32)"
STORE_ROW = "tl.store(out_ptr + row * n_cols + cols, y, mask=mask)"
