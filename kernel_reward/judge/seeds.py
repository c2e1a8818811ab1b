"""Hidden seeds: every input set the judge draws gets its own 63-bit seed, unpredictable from any other.

A ``SeedStream`` turns a 256-bit key (fresh from ``secrets`` per stream, or derived from ``EvalOptions.seed_base``
for reproducible runs) and an index into a seed through a keyed hash. Seeing one input set, and even recovering
its seed, tells a candidate nothing about the next set's seed.
"""

from __future__ import annotations

import hashlib
import secrets

SEED_BITS = 63


class SeedStream:
    """Seeds ``seed(0)``, ``seed(1)``, ...: independent-looking 63-bit values under a key the runner never sees."""

    def __init__(self, base: int | None = None) -> None:
        if base is None:
            self._key = secrets.token_bytes(32)
        else:
            self._key = hashlib.sha256(f"kernel_reward seed base {base}".encode()).digest()

    def seed(self, index: int) -> int:
        digest = hashlib.blake2b(str(index).encode(), key=self._key, digest_size=8).digest()
        return int.from_bytes(digest, "little") >> (64 - SEED_BITS)


def fresh_seed() -> int:
    """One secret 63-bit seed (a build seed, say)."""
    return secrets.randbits(SEED_BITS)


def ablation_point(decoy_seed: int, num_trials: int) -> int:
    """Pure: before which correctness trial the ablated call runs (``num_trials``: after the last), from the hidden
    seed of its own inputs, so neither its place among the calls nor its inputs can be told from earlier calls."""
    return decoy_seed % (num_trials + 1)
