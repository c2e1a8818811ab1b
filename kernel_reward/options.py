"""Evaluation options: every knob of the single-candidate pipeline, as one JSON-able dataclass.

``EvalOptions`` travels with each ``EvalRequest`` from the caller to the (sandboxed) worker process, so it must
survive ``to_dict`` / ``from_dict`` unchanged. ``__post_init__`` rejects bad values with a message that names the
field and says what to set instead (the habit of TRL's configs).

The defaults that change verdicts, and why (docs/reward.md#evaluation-options): hidden seeds (``seed_base=None``:
a fresh secret base per evaluation), TF32 off (``allow_tf32=False``: an fp32 reference in full fp32), the eager
baseline (``baseline="eager"``, as KernelBench times it) and one resized-input run (``shape_check``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

RewardSchemeName = Literal["drkernel", "paper", "ladder", "correctness"]
ShapeCheckPolicy = Literal["report", "fail", "off"]
Baseline = Literal["eager", "compile"]
CoverageMethod = Literal["profiler", "events"]
SpeedupEstimate = Literal["median", "lower"]
COVERAGE_METHODS: tuple[str, ...] = get_args(CoverageMethod)
SPEEDUP_ESTIMATES: tuple[str, ...] = get_args(SpeedupEstimate)

# The tuples are read off the Literals, so each set of names is written once.
REWARD_SCHEMES: tuple[str, ...] = get_args(RewardSchemeName)
SHAPE_CHECK_POLICIES: tuple[str, ...] = get_args(ShapeCheckPolicy)
BASELINES: tuple[str, ...] = get_args(Baseline)


@dataclass
class EvalOptions:
    """Knobs of one evaluation. Defaults follow background §2/3/7 (docs/reward.md#evaluation-options)."""

    # --- correctness -------------------------------------------------------------------------------------
    num_trials: int = field(
        default=5, metadata={"help": "correctness trials, each with fresh hidden-seed inputs (>= 1)"}
    )
    seed_base: int | None = field(
        default=None,
        metadata={"help": "base of the hidden trial seeds; None = a fresh secret per evaluation"},
    )
    atol_fp32: float = field(
        default=1e-4, metadata={"help": "absolute tolerance for float32 (and float64) outputs"}
    )
    rtol_fp32: float = field(
        default=1e-4, metadata={"help": "relative tolerance for float32 (and float64) outputs"}
    )
    atol_half: float = field(
        default=1e-2, metadata={"help": "absolute tolerance for float16 / bfloat16 outputs"}
    )
    rtol_half: float = field(
        default=1e-2, metadata={"help": "relative tolerance for float16 / bfloat16 outputs"}
    )
    allow_tf32: bool = field(
        default=False,
        metadata={"help": "keep torch's TF32 matmul/conv defaults (False: reference in full fp32)"},
    )
    shape_check: ShapeCheckPolicy = field(
        default="report",
        metadata={"help": "resized-input run: 'report' it, let it 'fail' the candidate, or 'off'"},
    )
    shape_scale: float = field(
        default=1.5,
        metadata={"help": "factor applied to the task's UPPER_CASE size constants for the resized run"},
    )
    decoy_check: bool = field(
        default=True,
        metadata={
            "help": "ablate the candidate's kernels in one checked K-call message and in ablated_timed_pairs "
            "batches at secret places among each measurement's timed ones: an output that stays correct without "
            "them is a decoy"
        },
    )
    ablated_timed_pairs: int = field(
        default=3,
        metadata={
            "help": "timed pairs per measurement with every candidate call ablated (decoy_check; their times are "
            "left out): a timed path taken in more than half the pairs, as moving the median needs, escapes m "
            "of them with probability below 2^-m"
        },
    )

    # --- timing (GPU only) ----------------------------------------------------------------------------------
    timing_budget_ms: float = field(
        default=150.0,
        metadata={
            "help": "wall-clock budget of the timed batch pairs (one reference and one candidate batch each, "
            "with their staging, L2 flushes, hand-over and verification), within 10-200 pairs; the "
            "reference's own baseline before the candidate is loaded gets 0.3 of it on top"
        },
    )
    warmup_calls: int = field(default=5, metadata={"help": "untimed calls of each side before timing"})
    min_timed_calls: int = field(default=20, metadata={"help": "timed calls per side, at least"})
    max_timed_calls: int = field(default=500, metadata={"help": "timed calls per side, at most"})
    l2_flush_mb: int = field(
        default=256, metadata={"help": "size of the buffer zeroed before each timed call (MB)"}
    )
    host_clock_timing: bool = field(
        default=False,
        metadata={
            "help": "without a GPU, time the candidate anyway, on the judge's host clock (the timed phase's checks "
            "run as on a GPU; interpreter times say nothing of a GPU's, and the reward still reads correctness "
            "only): for tests of the timed phase on CPU machines"
        },
    )
    implausible_speedup: float = field(
        default=30.0, metadata={"help": "speedups above this are re-measured once and flagged"}
    )
    baseline: Baseline = field(
        default="eager",
        metadata={
            "help": "reference the speedup is measured against: 'eager' PyTorch or its 'compile'd form "
            "(torch.compile; correctness always uses the eager reference)"
        },
    )
    profile: bool = field(
        default=True, metadata={"help": "run the profiler pass that computes coverage (PR)"}
    )
    profile_calls: int = field(default=10, metadata={"help": "candidate calls under the profiler"})
    min_coverage: float | None = field(
        default=None,
        metadata={
            "help": "strict mode: a correct candidate whose coverage (PR) is below this floor is hacked "
            "(low_coverage): a Triton copy or '+ 0 * scratch' kernel wrapped around a torch answer. None: "
            "coverage only weighs in the reward. Coverage is the runner's own measurement unless the pool runs "
            "the launch ledger (docs/security.md): the floor stops lazy wrappers, not a runner that forges it"
        },
    )
    coverage_method: CoverageMethod = field(
        # "events" by default: on an H200 the two agree (benchmarks/results/coverage_h200.json), and CUPTI's
        # start-up in every fresh sandboxed process (5-6 s) is the largest cost of a correct candidate's evaluation.
        default="events",
        metadata={
            "help": "how coverage (PR) is measured: 'events' (CUDA events around the candidate's Triton "
            "launches inside gap-free forwards; no CUPTI; other kernels in one row; falls back to the "
            "profiler when a forward cannot be measured gap-free) or 'profiler' (torch.profiler / CUPTI: "
            "every device kernel named; seconds of CUPTI start-up per worker process)"
        },
    )
    coverage_exclusive: bool = field(
        # Off by default: in an H200 pool (8 workers, 64 mixed pairs) the events pass takes 0.78 s per correct
        # candidate inside the slot (0.09 s alone), 39 % of the slot's time, and the slot is what bounds a GPU's
        # throughput. Outside it, the intervals may hold other evaluations' kernels.
        default=False,
        metadata={
            "help": "run the 'events' coverage pass inside the GPU's exclusive timing slot, so no other "
            "evaluation's kernels fall in its intervals (more exact coverage, lower pool throughput)"
        },
    )

    # --- reward and feedback ----------------------------------------------------------------------------------
    reward_scheme: RewardSchemeName = field(
        default="drkernel",
        metadata={"help": "drkernel | paper | ladder | correctness (CPU falls back to correctness)"},
    )
    reward_params: dict[str, float] = field(
        default_factory=dict,
        metadata={"help": "overrides of the scheme's parameters (see kernel_reward.reward.SCHEME_PARAMS)"},
    )
    speedup_estimate: SpeedupEstimate = field(
        default="median",
        metadata={
            "help": "the speedup the reward's speed term reads: 'median' (the ratio of medians, also what "
            "result.speedup reports) or 'lower' (the lower end of its 95 percent interval: a noisy measurement pays "
            "what it surely earned; identical programs then differ by less)"
        },
    )
    hacked_penalty: float = field(
        default=0.0,
        metadata={
            "help": "reward of a hacked candidate (0 or negative); a scheme whose honest failures pay less "
            "(ladder) pays a hack its worst failure instead"
        },
    )
    feedback_max_chars: int = field(
        default=4000, metadata={"help": "the feedback text is cut to this length"}
    )

    # --- wall clock (enforced by the execution service's parent process) -------------------------------------
    timeout_s: float = field(
        default=180.0, metadata={"help": "per-candidate wall-clock limit, enforced by the parent process"}
    )

    def __post_init__(self) -> None:
        def need(condition: bool, message: str) -> None:
            if not condition:
                raise ValueError(f"EvalOptions: {message}")

        need(
            isinstance(self.num_trials, int) and self.num_trials >= 1,
            f"num_trials must be an int >= 1, got {self.num_trials!r}",
        )
        need(
            self.seed_base is None or isinstance(self.seed_base, int),
            f"seed_base must be None or an int, got {self.seed_base!r}",
        )
        for name in ("atol_fp32", "rtol_fp32", "atol_half", "rtol_half"):
            value = getattr(self, name)
            need(
                isinstance(value, int | float) and math.isfinite(value) and value >= 0,
                f"{name} must be a finite number >= 0, got {value!r}",
            )
        need(
            self.shape_check in SHAPE_CHECK_POLICIES,
            f"shape_check must be one of {SHAPE_CHECK_POLICIES}, got {self.shape_check!r}",
        )
        need(
            0 < self.shape_scale < 4 and self.shape_scale != 1,
            f"shape_scale must be in (0, 4) and not 1, got {self.shape_scale!r}",
        )
        need(self.timing_budget_ms > 0, f"timing_budget_ms must be > 0, got {self.timing_budget_ms!r}")
        need(self.warmup_calls >= 0, f"warmup_calls must be >= 0, got {self.warmup_calls!r}")
        need(
            isinstance(self.ablated_timed_pairs, int) and self.ablated_timed_pairs >= 0,
            f"ablated_timed_pairs must be an int >= 0, got {self.ablated_timed_pairs!r}",
        )
        need(
            1 <= self.min_timed_calls <= self.max_timed_calls,
            f"need 1 <= min_timed_calls <= max_timed_calls, got {self.min_timed_calls} and {self.max_timed_calls}",
        )
        need(self.l2_flush_mb >= 0, f"l2_flush_mb must be >= 0, got {self.l2_flush_mb!r}")
        need(
            self.implausible_speedup > 1, f"implausible_speedup must be > 1, got {self.implausible_speedup!r}"
        )
        need(self.baseline in BASELINES, f"baseline must be one of {BASELINES}, got {self.baseline!r}")
        need(
            self.speedup_estimate in SPEEDUP_ESTIMATES,
            f"speedup_estimate must be one of {SPEEDUP_ESTIMATES}, got {self.speedup_estimate!r}",
        )
        need(
            self.coverage_method in COVERAGE_METHODS,
            f"coverage_method must be one of {COVERAGE_METHODS}, got {self.coverage_method!r}",
        )
        need(self.profile_calls >= 1, f"profile_calls must be >= 1, got {self.profile_calls!r}")
        need(
            self.min_coverage is None or 0 <= self.min_coverage <= 1,
            f"min_coverage must be None or in [0, 1], got {self.min_coverage!r}",
        )
        need(
            self.reward_scheme in REWARD_SCHEMES,
            f"reward_scheme must be one of {REWARD_SCHEMES}, got {self.reward_scheme!r}",
        )
        need(
            self.hacked_penalty <= 0,
            f"hacked_penalty must be <= 0 (a hack must never pay), got {self.hacked_penalty!r}",
        )
        need(
            self.feedback_max_chars >= 200,
            f"feedback_max_chars must be >= 200, got {self.feedback_max_chars!r}",
        )
        need(self.timeout_s > 0, f"timeout_s must be > 0, got {self.timeout_s!r}")
        # Imported here: reward.py is pure and imports nothing from this module, so there is no cycle at runtime.
        from kernel_reward.reward import validate_reward_params

        validate_reward_params(self.reward_scheme, self.reward_params)

    def tolerance(self, dtype_name: str) -> tuple[float, float]:
        """(atol, rtol) for an output dtype given by name, e.g. "torch.float16" or "float16"."""
        short = dtype_name.removeprefix("torch.")
        if short in ("float16", "bfloat16", "half"):
            return self.atol_half, self.rtol_half
        return self.atol_fp32, self.rtol_fp32

    @property
    def coverage_in_timing_slot(self) -> bool:
        """Whether the coverage pass runs inside the GPU's exclusive timing slot: only the events method when
        ``coverage_exclusive`` asks for it (its intervals are device time like the timing's, and other processes'
        kernels would land in them); the profiler's per-kernel durations are not, and its start-up (seconds) must
        never hold the slot."""
        return self.profile and self.coverage_method == "events" and self.coverage_exclusive

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalOptions:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(
                f"EvalOptions.from_dict: unknown option(s) {sorted(unknown)}; known: {sorted(known)}"
            )
        return cls(**data)


def with_timeout(options: dict[str, Any], timeout: float | None) -> dict[str, Any]:
    """``options`` (``EvalOptions`` fields) with the public ``timeout`` keyword stored as the ``timeout_s`` field.

    Entry points (``evaluate``, ``Evaluator``, ``KernelEnvironment``, ``make_request``) take ``timeout=`` in
    seconds, as Python APIs do; the option is named ``timeout_s``. This is the one place the two names meet.

    Raises:
        ValueError: ``timeout`` and ``options["timeout_s"]`` are both given and differ.
    """
    if timeout is None:
        return options
    if options.get("timeout_s") not in (None, float(timeout)):
        raise ValueError(f"timeout={timeout!r} and timeout_s={options['timeout_s']!r} disagree; give one")
    return {**options, "timeout_s": float(timeout)}
