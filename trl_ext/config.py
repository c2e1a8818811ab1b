"""``MultiTurnKernelConfig``: GRPOConfig plus the multi-turn TRLOO / MRS / PR / PRS settings (background §3-4).

Every field carries help text (shown by ``scripts/train.py --help``); ``__post_init__`` rejects combinations
that would silently break the method and says what to set instead.

Why one module (about 410 lines): TRL's trainer and ``HfArgumentParser`` take one config class, and most of its
lines are the fields' help text; the checks that read several fields at once belong beside them.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Literal

from trl import GRPOConfig


@dataclass
class MultiTurnKernelConfig(GRPOConfig):
    """Configuration of ``TRLOOTrainer`` (all ``trl.GRPOConfig`` fields apply as well)."""

    # --- rollout --------------------------------------------------------------------------------------------
    max_turns: int = field(
        default=3, metadata={"help": "Turns per trajectory (the paper uses 3). Every turn is trained."}
    )
    feedback_max_chars: int = field(
        default=8000,
        metadata={"help": "Environment feedback longer than this many characters is cut (a marker says so)."},
    )
    max_context_tokens: int | None = field(
        default=None,
        metadata={
            "help": "Stop a trajectory early when prompt + turns + feedback would exceed this many tokens "
            "(None: no limit beyond max_turns * max_completion_length)."
        },
    )
    # --- advantages -----------------------------------------------------------------------------------------
    gamma: float = field(
        default=1.0, metadata={"help": "Discount between turns for the turn returns (paper: 1.0)."}
    )
    advantage_estimator: Literal["trloo", "grpo_turn"] = field(
        default="trloo",
        metadata={
            "help": "'trloo': turn-level leave-one-out baseline (unbiased, the paper's method). 'grpo_turn': "
            "turn-level group mean including the sample itself (ablation; shrinks the gradient by 1 - 1/N)."
        },
    )
    singleton_advantage: Literal["return", "zero"] = field(
        default="return",
        metadata={
            "help": "Advantage of a sample that is alone in its group at a turn: 'return' gives A = G (the "
            "paper's public code), 'zero' gives A = 0."
        },
    )
    reward_control: Literal["none", "permute_within_group"] = field(
        default="none",
        metadata={
            "help": "'permute_within_group': the control arm of a learning experiment. Advantages are computed "
            "from each turn's rewards shuffled among the samples of its group that reached it, so the update "
            "has the same size and spread as training's but carries no information about which completion "
            "earned which reward. Logged rewards and every other filter read the true rewards."
        },
    )
    grpo_turn_scale_std: bool = field(
        default=False,
        metadata={
            "help": "With advantage_estimator='grpo_turn', also divide by the group's std (classic GRPO)."
        },
    )
    stop_on_correct: bool = field(
        default=False,
        metadata={
            "help": "End a trajectory at its first correct turn (the kernel environment says done). Off, every "
            "trajectory runs all max_turns turns, every turn has the whole group behind it, and TRLOO equals "
            "turn-level GRPO scaled by N/(N-1); on, turns are ragged and TRLOO's leave-one-out baseline differs."
        },
    )
    mask_truncated_turns: bool = field(
        default=False,
        metadata={
            "help": "Leave out of the loss every turn that hit max_completion_length without its end-of-turn "
            "token (its answer was cut, not chosen). Counted either way as turn_k/truncated; such turns still "
            "count in the baselines."
        },
    )
    mask_failed_turns_after_success: bool = field(
        default=False,
        metadata={
            "help": "Leave out of the loss any turn with reward <= 0 that follows a turn of the same trajectory "
            "with reward > 0 (used by the paper's recipe). Such turns still count in the baselines."
        },
    )
    drop_tied_groups: bool = field(
        default=False,
        metadata={
            "help": "Zero-variance group filter: leave out of the loss every sample of a prompt group whose "
            "last-turn rewards all tie (used by the paper's recipe)."
        },
    )
    # --- generation ---------------------------------------------------------------------------------------------
    generation_kv_cache_gib: float | None = field(
        default=16.0,
        metadata={
            "help": "Memory for one generate call's KV cache and logits (GiB): the transformers backend generates a "
            "step's trajectories in micro-batches of as many sequences as fit it at full length (prompt + "
            "max_completion_length). None: all in one call (at turn 3, 64 trajectories of an 8B model need ~170 GiB)."
        },
    )
    generation_autocast: Literal["none", "bfloat16"] = field(
        default="none",
        metadata={
            "help": "Generate under torch.autocast to this dtype while the loss is computed as the trainer computes "
            "(the transformers backend only): a rollout engine whose numerics differ from the trainer's, as a bf16 "
            "vLLM engine beside fp32 training, on one machine. The sampled log-probs MRS compares come from it."
        },
    )
    generation_weights: Literal["trainer", "bfloat16"] = field(
        default="trainer",
        metadata={
            "help": "Generate with the trainer's weights, or with a copy cast to bfloat16 at each rollout (the "
            "transformers backend only): a rollout engine serving rounded weights, as a bf16 vLLM engine beside "
            "an fp32 trainer, on one machine. Its mismatch is larger than generation_autocast's; the sampled "
            "log-probs MRS compares come from the copy."
        },
    )
    generation_merge_lora: bool = field(
        default=False,
        metadata={
            "help": "Generate with the LoRA adapters merged into the base weights (merged before each rollout, "
            "unmerged after; the transformers backend only, not with DeepSpeed ZeRO-3). Unmerged all-linear LoRA "
            "doubles the cost of a decode step. Needs fp32 base weights: each merge/unmerge round trip rounds them "
            "(bf16: a base weight moved by 0.01 after 20 round trips; benchmarks/bench_rollout.py measures it)."
        },
    )
    # --- dropout and loss aggregation -----------------------------------------------------------------------
    disable_dropout: bool | None = field(
        default=None,
        metadata={
            "help": "Set every dropout of the model to 0 (nn.Dropout modules, LoRA dropout and attention dropout). "
            "None: True with use_mrs, else False. use_mrs with disable_dropout=False is an error: dropout makes the "
            "trainer's log-probs differ from the rollout's, so MRS rejects nearly every trajectory."
        },
    )
    loss_aggregation: Literal["token_mean", "turn_sum_mean", "turn_sum_norm"] = field(
        default="token_mean",
        metadata={
            "help": "How the token losses of a generation batch are summed into the loss (loss_type 'dapo' only). "
            "'token_mean' (TRL's dapo): sum over all loss tokens divided by their number. 'turn_sum_mean' (the "
            "Dr. Kernel reference, which trains each turn as its own row with verl's seq-mean-token-sum): sum over "
            "all loss tokens divided by the number of trained turns. 'turn_sum_norm' (verl's "
            "seq-mean-token-sum-norm): that sum divided by trained turns x loss_scale_tokens, a constant per turn, "
            "so the gradient has a token mean's size and max_grad_norm clips outliers instead of every step. All "
            "three weight every token of a batch equally; they differ by a scale per batch (Adam's update barely "
            "depends on a constant one; gradient clipping does)."
        },
    )
    loss_scale_tokens: int | None = field(
        default=None,
        metadata={
            "help": "The per-turn token count that loss_aggregation='turn_sum_norm' divides by. None: "
            "max_completion_length (a turn's token budget)."
        },
    )
    # --- MRS ------------------------------------------------------------------------------------------------
    use_mrs: bool = field(
        default=False,
        metadata={
            "help": "Mismatch rejection sampling: drop from the loss trajectories (or turns / tokens, see "
            "mrs_level) whose trainer / rollout probability ratio leaves [mrs_lower, mrs_upper] or has a token "
            "below mrs_veto. Needs matched sampling: top_p=1, top_k=0, no min_p / repetition penalty."
        },
    )
    mrs_alarm_rejected_frac: float = field(
        default=0.5,
        metadata={
            "help": "MRS alarm: a logged step whose mrs/rejected_frac exceeds this counts towards "
            "mrs/high_rejection_streak; after mrs_alarm_steps such steps in a row a warning says the batch is "
            "mostly thrown away (mismatched sampling settings, a stale rollout engine)."
        },
    )
    mrs_alarm_steps: int = field(
        default=3, metadata={"help": "Logged steps in a row that raise the MRS alarm."}
    )
    mrs_stop_on_alarm: bool = field(
        default=False,
        metadata={"help": "End training (after saving, as at a normal end) when the MRS alarm rises."},
    )
    mrs_level: Literal["trajectory", "turn", "token"] = field(
        default="trajectory",
        metadata={"help": "Where MRS applies its test: whole trajectory (paper), each turn, or each token."},
    )
    mrs_lower: float = field(default=0.999, metadata={"help": "MRS lower bound of the geometric-mean ratio."})
    mrs_upper: float = field(default=1.001, metadata={"help": "MRS upper bound of the geometric-mean ratio."})
    mrs_veto: float = field(
        default=1e-4, metadata={"help": "MRS veto: reject if any token ratio is below this."}
    )
    # --- reward / PRS ---------------------------------------------------------------------------------------
    reward_scheme: Literal["drkernel", "paper", "ladder", "correctness"] = field(
        default="drkernel",
        metadata={
            "help": "Kernel reward computed by the environment (the reward package's schemes): 'drkernel' the released "
            "recipe 0.5*C + 0.5*C*min(speedup,3) + 0.5*C*PR; 'paper' C + C*min(speedup,3) + C*PR; 'ladder' the "
            "discrete ladder; 'correctness' C only (CPU interpreter runs always fall back to it)."
        },
    )
    pr_weight: float | None = field(
        default=None,
        metadata={
            "help": "Weight of the profiling reward PR (coverage) in 'drkernel' / 'paper' (None: the scheme's "
            "default; 0 disables PR). The GPU recipes set 0: coverage is measured in the candidate's process, so a "
            "forged value would be paid. PRS and reward_min_coverage still read it: a forged value only escapes them "
            "(a turn kept, a Triton-wrapped torch answer not marked hacked)."
        },
    )
    reward_device: str | None = field(
        default=None,
        metadata={"help": "Device for kernel evaluation ('cuda', 'cpu' = Triton interpreter; None = auto)."},
    )
    reward_timeout: float | None = field(
        default=None,
        metadata={"help": "Per-candidate evaluation timeout in seconds (None: evaluator default)."},
    )
    reward_workers: int | None = field(
        default=None,
        metadata={
            "help": "Concurrent evaluations on the reward device (None: from the GPU's free memory and the host's "
            "cores when the pool starts)."
        },
    )
    reward_memory_fraction: float | None = field(
        default=None,
        metadata={
            "help": "Share of the reward GPU's memory the reward pool spreads over its workers, in (0, 1] (None: 0.9 "
            "of what is free when the pool starts). Set it when other processes on that GPU grow after the pool "
            "starts: two trainers side by side on one card, each with its own pool, read the same free memory."
        },
    )
    reward_launch_ledger: bool | None = field(
        default=None,
        metadata={
            "help": "The launch ledger in every reward runner (GPU: CUPTI's kernel records decide coverage and "
            "which timed calls ran the candidate's own kernels, instead of the runner's report; "
            "kernel_reward's PoolConfig.launch_ledger, docs/security.md). Unset: on for a GPU reward pool, off "
            "on a CPU; false turns it off."
        },
    )
    reward_share_identical: bool = field(
        default=True,
        metadata={
            "help": "A step's identical completions of one task are judged once and all get that result "
            "(flagged shared_result): fewer evaluations, and no timing noise between copies of one program. "
            "False judges every copy on its own."
        },
    )
    reward_speedup_estimate: Literal["median", "lower"] = field(
        default="lower",
        metadata={
            "help": "The speedup the reward's speed term reads: 'lower' (training default) the lower end of its 95 "
            "percent interval, so a noisy measurement pays what it surely earned and identical programs are paid "
            "alike; 'median' the ratio of medians (what results report)."
        },
    )
    reward_shape_check: Literal["report", "fail", "off"] = field(
        default="fail",
        metadata={
            "help": "The kernel reward's resized-input run: 'fail' (training default) makes a candidate that is "
            "wrong, or answered without its own Triton kernel, at other sizes incorrect; 'report' only records it; "
            "'off' skips it. Under 'report' a kernel hard-wired to the task's shape with a torch fallback elsewhere "
            "is paid as correct."
        },
    )
    reward_min_coverage: float | None = field(
        default=None,
        metadata={
            "help": "Strict mode of the kernel reward: a correct candidate whose Triton coverage (PR) is below this "
            "floor is hacked (low_coverage), e.g. a Triton copy wrapped around a torch answer. The GPU recipes set "
            "0.3: no false positive among 84 correct honest candidates measured on an H200 (lowest: liger's RoPE "
            "at 0.38; docs/training/EVIDENCE.md). None: coverage only weighs in the reward (PR / PRS)."
        },
    )
    use_prs: bool = field(
        default=False,
        metadata={
            "help": "Profiling-based rejection sampling: keep each CORRECT turn with probability "
            "clip((PR - prs_threshold) / prs_softness, 0, 1); incorrect turns are always kept."
        },
    )
    prs_threshold: float = field(default=0.3, metadata={"help": "PRS coverage threshold."})
    prs_softness: float = field(default=0.1, metadata={"help": "PRS ramp width above the threshold."})

    def __post_init__(self):
        if self.disable_dropout is None:
            self.disable_dropout = self.use_mrs
        super().__post_init__()
        if self.gradient_accumulation_steps % self.steps_per_generation != 0:
            raise ValueError(
                f"steps_per_generation={self.steps_per_generation} with gradient_accumulation_steps="
                f"{self.gradient_accumulation_steps} splits a generation batch over several optimizer steps: the "
                "later ones train on rollouts of older weights (the reference takes one optimizer step per rollout "
                f"batch). Set gradient_accumulation_steps={self.steps_per_generation} (or a multiple of "
                "steps_per_generation, which generation_batch_size sets when given instead); use num_iterations for "
                "deliberate extra passes"
            )
        if self.use_mrs and not self.disable_dropout:
            raise ValueError(
                "use_mrs with disable_dropout=False: dropout makes the trainer's log-probs differ from the rollout's, "
                "so MRS rejects nearly every trajectory and the gradient is 0. Leave disable_dropout unset (or True)"
            )
        if self.loss_aggregation not in ("token_mean", "turn_sum_mean", "turn_sum_norm"):
            raise ValueError(
                "loss_aggregation must be 'token_mean', 'turn_sum_mean' or 'turn_sum_norm', got "
                f"{self.loss_aggregation!r}"
            )
        if self.loss_aggregation != "token_mean" and self.loss_type != "dapo":
            raise ValueError(
                f"loss_aggregation={self.loss_aggregation!r} replaces the token count of loss_type='dapo' by a "
                f"turn count; it does not apply to loss_type={self.loss_type!r}. Set loss_type='dapo'"
            )
        if self.loss_scale_tokens is not None and not (
            isinstance(self.loss_scale_tokens, int) and self.loss_scale_tokens >= 1
        ):
            raise ValueError(
                f"loss_scale_tokens must be a positive integer or None, got {self.loss_scale_tokens!r}"
            )
        if self.loss_scale_tokens is not None and self.loss_aggregation != "turn_sum_norm":
            raise ValueError("loss_scale_tokens applies to loss_aggregation='turn_sum_norm' only")
        if self.reward_control not in ("none", "permute_within_group"):
            raise ValueError(
                f"reward_control must be 'none' or 'permute_within_group', got {self.reward_control!r}"
            )
        if self.max_turns < 1:
            raise ValueError(f"max_turns must be >= 1, got {self.max_turns}")
        if self.reward_workers is not None and self.reward_workers < 1:
            raise ValueError(f"reward_workers must be >= 1 (or None), got {self.reward_workers}")
        if self.reward_memory_fraction is not None and not 0 < self.reward_memory_fraction <= 1:
            raise ValueError(
                f"reward_memory_fraction must be in (0, 1] (or None), got {self.reward_memory_fraction}"
            )
        if self.generation_kv_cache_gib is not None and not self.generation_kv_cache_gib > 0:
            raise ValueError(
                f"generation_kv_cache_gib must be > 0 (or None: one call), got {self.generation_kv_cache_gib}"
            )
        if self.generation_autocast not in ("none", "bfloat16"):
            raise ValueError(
                f"generation_autocast must be 'none' or 'bfloat16', got {self.generation_autocast!r}"
            )
        if self.generation_weights not in ("trainer", "bfloat16"):
            raise ValueError(
                f"generation_weights must be 'trainer' or 'bfloat16', got {self.generation_weights!r}"
            )
        if self.generation_weights != "trainer" and self.use_vllm:
            raise ValueError(
                "generation_weights applies to the transformers backend; vLLM serves its own copy"
            )
        if self.generation_autocast != "none" and self.use_vllm:
            raise ValueError(
                "generation_autocast applies to the transformers backend; vLLM keeps its own numerics"
            )
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {self.gamma}")
        if self.feedback_max_chars < 1:
            raise ValueError(f"feedback_max_chars must be >= 1, got {self.feedback_max_chars}")
        if self.advantage_estimator not in ("trloo", "grpo_turn"):
            raise ValueError(
                f"advantage_estimator must be 'trloo' or 'grpo_turn', got {self.advantage_estimator!r}"
            )
        if self.grpo_turn_scale_std and self.advantage_estimator != "grpo_turn":
            raise ValueError("grpo_turn_scale_std only applies to advantage_estimator='grpo_turn'; unset it")
        if not 0.0 <= self.mrs_alarm_rejected_frac <= 1.0 or self.mrs_alarm_steps < 1:
            raise ValueError(
                f"mrs_alarm_rejected_frac must be in [0, 1] and mrs_alarm_steps >= 1, got "
                f"{self.mrs_alarm_rejected_frac}, {self.mrs_alarm_steps}"
            )
        if not 0.0 < self.mrs_lower <= 1.0 <= self.mrs_upper:
            raise ValueError(
                f"MRS bounds must satisfy 0 < mrs_lower <= 1 <= mrs_upper, got {self.mrs_lower}, {self.mrs_upper}"
            )
        if not 0.0 < self.mrs_veto < 1.0:
            raise ValueError(f"mrs_veto must be in (0, 1), got {self.mrs_veto}")
        if self.use_mrs:
            mismatched = []
            if self.top_p != 1.0:
                mismatched.append(f"top_p={self.top_p} (set top_p=1.0)")
            if self.top_k not in (0, None):
                mismatched.append(f"top_k={self.top_k} (set top_k=0)")
            if self.min_p not in (None, 0.0):
                mismatched.append(f"min_p={self.min_p} (set min_p=None)")
            if self.repetition_penalty != 1.0:
                mismatched.append(f"repetition_penalty={self.repetition_penalty} (set 1.0)")
            if mismatched:
                raise ValueError(
                    "use_mrs compares trainer and rollout probabilities, which only agree when sampling is not "
                    "truncated or reshaped: " + "; ".join(mismatched)
                )
            if self.use_vllm and self.vllm_importance_sampling_correction:
                warnings.warn(
                    "use_mrs with vllm_importance_sampling_correction=True also reweights kept tokens by TRL's "
                    "importance ratios; the paper's MRS applies no weights. Set "
                    "vllm_importance_sampling_correction=False to reproduce it.",
                    stacklevel=2,
                )
        if not 0.0 <= self.prs_threshold <= 1.0:
            raise ValueError(f"prs_threshold must be in [0, 1], got {self.prs_threshold}")
        if self.prs_softness <= 0.0:
            raise ValueError(f"prs_softness must be > 0, got {self.prs_softness}")
        if self.pr_weight is not None and self.pr_weight < 0.0:
            raise ValueError(f"pr_weight must be >= 0, got {self.pr_weight}")
        if self.reward_min_coverage is not None and not 0.0 <= self.reward_min_coverage <= 1.0:
            raise ValueError(
                f"reward_min_coverage must be in [0, 1] (or None), got {self.reward_min_coverage}"
            )
        if self.pr_weight is not None and self.reward_scheme not in ("drkernel", "paper"):
            raise ValueError(
                f"pr_weight applies to reward_scheme 'drkernel' or 'paper', not {self.reward_scheme!r}"
            )

    def reward_params(self) -> dict[str, float]:
        """Overrides of the kernel reward scheme's parameters implied by this config."""
        return {} if self.pr_weight is None else {"w_coverage": float(self.pr_weight)}
