"""A keyed fingerprint of the candidate's outputs, taken inside the judge's timing window instead of a copy of them.

The runner can write the arena at any time, so what the judge compares must be fixed inside the window: a runner
that signals ``done`` early and writes the right answer afterwards is compared on what was there when the clock
stopped. One read pass inside the window computes

    fingerprint = sum over the region's 32-bit words w_i of (w_i XOR k1) * (k2 + 2 (i + 2^40))   (mod 2^64)

under a key (k1, k2 odd) drawn for that batch in the judge's own process, which the runner never sees. After the
window the outputs are read again a chunk at a time into a private snapshot; each chunk is compared with the
reference and fingerprinted, and the two fingerprints must agree. On a GPU one Triton kernel per region (partial
sums per block, then one sum); elsewhere the same arithmetic in torch, a chunk at a time. ``fingerprint_reference``
is that torch arithmetic on any device: the gpu test holds the kernel to it. Why a seal and what it guarantees:
docs/timing.md#the-output-seal.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Hashable
from dataclasses import dataclass

import torch

WORD = 4  # bytes: the fingerprint reads 32-bit words (arena regions start and end on exchange.ALIGN)
TORCH_CHUNK_WORDS = 1 << 22  # words per torch pass (16 MiB read; its int64 temporaries are 32 MiB each)
BLOCK = 4096  # words per Triton program
# Every integer the kernel gets is at least 2^40, so Triton types each as int64 whatever the region's size or place,
# and none is specialised (do_not_specialize): ONE compiled variant, loaded by ``warm_up``. A new variant compiled
# and loaded inside a queued batch synchronises the host with a stream that waits for the runner's ``done`` (not yet
# asked), and the batch hangs.
POSITION_BASE = 1 << 40


@dataclass(frozen=True)
class SealKey:
    """One batch's key: ``k1`` and ``k2`` in [2^40, 2^62) (see POSITION_BASE), ``k2`` odd (so every position's
    multiplier is odd)."""

    k1: int
    k2: int

    @staticmethod
    def draw() -> SealKey:
        return SealKey(secrets.randbits(62) | POSITION_BASE, secrets.randbits(62) | POSITION_BASE | 1)


def fingerprint(region: torch.Tensor, key: SealKey, first_word: int = 0) -> torch.Tensor:
    """Queued: the fingerprint (a 0-d int64 tensor on the region's device) of a uint8 ``region`` whose first word
    is word ``first_word`` of the sealed whole (so chunks' fingerprints add up to the whole's)."""
    words = _words(region)
    if words.is_cuda:
        return _fingerprint_triton(words, key, first_word)
    return fingerprint_reference(words, key, first_word)


def read_back(
    region: torch.Tensor,
    snapshot: torch.Tensor,
    key: SealKey,
    spans: list[tuple[int, int, Hashable]],
    take: Callable[[Hashable, torch.Tensor, int], None],
    valid: int | None = None,
) -> torch.Tensor:
    """Queued: read the uint8 ``region`` into the private ``snapshot`` a chunk at a time and return the fingerprint
    of what was read. For each span ``(first, stop, tag)`` of the region (byte offsets) a chunk overlaps,
    ``take(tag, bytes, offset)`` gets the overlapping bytes OF THE SNAPSHOT and their offset within the span, and
    must queue its use of them at once (the next chunk overwrites the snapshot on the same stream). So whatever the
    runner writes meanwhile, what ``take`` sees is what was fingerprinted. ``valid``: bytes from there on are
    counted as zeros (a region rounded up to whole words: its last bytes are not the output's)."""
    total = torch.zeros((), dtype=torch.int64, device=region.device)
    step = snapshot.numel() // WORD * WORD
    if step == 0:
        raise ValueError("the snapshot must hold at least one word")
    for start in range(0, region.numel(), step):
        chunk = snapshot[: min(step, region.numel() - start)]
        chunk.copy_(region[start : start + chunk.numel()])
        if valid is not None and valid < start + chunk.numel():
            chunk[max(valid - start, 0) :].zero_()
        total += fingerprint(chunk, key, start // WORD)
        for first, stop, tag in spans:
            low, high = max(first, start), min(stop, start + chunk.numel())
            if low < high:
                take(tag, chunk[low - start : high - start], low - first)
    return total


def fingerprint_reference(words: torch.Tensor, key: SealKey, first_word: int = 0) -> torch.Tensor:
    """The fingerprint of int32 ``words`` in torch, a chunk at a time (int64 arithmetic wraps mod 2^64)."""
    total = torch.zeros((), dtype=torch.int64, device=words.device)
    for start in range(0, words.numel(), TORCH_CHUNK_WORDS):
        chunk = words[start : start + TORCH_CHUNK_WORDS].to(torch.int64) & 0xFFFFFFFF
        first = POSITION_BASE + first_word + start
        positions = torch.arange(first, first + chunk.numel(), dtype=torch.int64, device=words.device)
        total += ((chunk ^ key.k1) * (positions * 2 + key.k2)).sum()
    return total


def _words(region: torch.Tensor) -> torch.Tensor:
    if region.dtype != torch.uint8 or region.dim() != 1 or not region.is_contiguous():
        raise ValueError(
            f"a seal reads a flat contiguous uint8 region, got {region.dtype} {tuple(region.shape)}"
        )
    if region.numel() % WORD or region.data_ptr() % WORD:
        raise ValueError(f"a sealed region must start and end on {WORD}-byte words ({region.numel()} bytes)")
    return region.view(torch.int32)


def _fingerprint_triton(words: torch.Tensor, key: SealKey, first_word: int) -> torch.Tensor:
    blocks = max(1, -(-words.numel() // BLOCK))
    partial = torch.empty(blocks, dtype=torch.int64, device=words.device)
    base = POSITION_BASE + first_word
    _kernel()[(blocks,)](words, base, base + words.numel(), key.k1, key.k2, partial, BLOCK=BLOCK)
    return partial.sum()


_KERNEL = None


def _kernel():
    """The Triton kernel, defined on first use (the judge imports this module on CPU-only machines too)."""
    global _KERNEL
    if _KERNEL is None:
        import triton
        import triton.language as tl

        @triton.jit(do_not_specialize=["base", "end", "k1", "k2"])
        def seal_kernel(words_ptr, base, end, k1, k2, partial_ptr, BLOCK: tl.constexpr):
            block = tl.program_id(0)
            offsets = block.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
            positions = offsets + base
            inside = positions < end
            words = (
                tl.load(words_ptr + offsets, mask=inside, other=0).to(tl.uint32).to(tl.int64)
            )  # zero-extended
            terms = (words ^ k1) * (positions * 2 + k2)
            tl.store(partial_ptr + block, tl.sum(tl.where(inside, terms, 0), axis=0))

        _KERNEL = seal_kernel
    return _KERNEL


def warm_up(device: torch.device) -> None:
    """Compile (or load from Triton's cache) the kernel outside any timed window: a first launch that compiles
    while a batch is queued behind the closed gate would hold it past the watchdog."""
    if device.type == "cuda":
        fingerprint(torch.zeros(BLOCK * WORD, dtype=torch.uint8, device=device), SealKey.draw())
