"""``TRLOOTrainer``: TRL's GRPOTrainer with multi-turn rollouts and turn-level advantages.

The one change from ``trl.GRPOTrainer``: completions are multi-turn trajectories against an environment
(``trl_ext.rollout``), and each token's advantage comes from its own turn's return (TRLOO or turn-level GRPO,
``trl_ext.advantages``), with MRS / PRS / recipe filters applied as loss masks (``tool_mask``; the attention
mask is untouched and the DAPO token normaliser is recomputed). Loss, clipping, optimisation, PEFT, vLLM
weight sync, checkpointing and logging are GRPOTrainer's.

Hooks overridden, each calling the base implementation: TRL's ``rollout_func`` (``MultiTurnRollout``),
``_generate_and_score_completions`` (per-token advantages and loss masks), ``_compute_loss`` (only when MRS is
decided in the loss, see ``_mrs_in_loss_supported``) and ``training_step`` (metrics);
docs/training.md#how-trlootrainer-hooks-into-grpotrainer says what each does. The pure parts live in
``advantages``, ``mrs``, ``masks`` (tensor assembly), ``model_setup`` and ``generation``.
Why one module (~470 lines): the hooks share GRPOTrainer's state (docs/decisions.md).
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
import warnings
from collections.abc import Mapping
from typing import Any

import torch
from trl import GRPOTrainer
from trl.models.utils import unwrap_model_for_generation

from trl_ext.advantages import (
    grpo_turn_advantages,
    keep_failed_turns_after_success,
    per_token,
    permute_within_groups,
    trloo_advantages,
    untied_groups,
)
from trl_ext.config import MultiTurnKernelConfig
from trl_ext.env import Environment
from trl_ext.generation import TransformersBackend, TRLVLLMBackend
from trl_ext.masks import TURN_STATS, loss_keep, trained_turns, turn_stats, turn_tensors
from trl_ext.model_setup import disable_attention_dropout, warn_low_precision_trainables
from trl_ext.mrs import abs_log_ratio_sum, mrs_loss_mask, prs_keep_probability, prs_sample
from trl_ext.rollout import MultiTurnRollout, Trajectory, render_prompt_ids

logger = logging.getLogger(__name__)

# Loss types whose normaliser reads only the micro-batch, and those dividing by the generation batch's tokens.
_MICRO_BATCH_NORMALISED = frozenset({"grpo", "bnpo", "dr_grpo", "luspo", "sapo"})
_GENERATION_BATCH_NORMALISED = frozenset({"dapo", "cispo", "vespo"})

# Counts summed per accumulation window (in-loss MRS) or generation batch, then over processes, for the MRS metrics.
_MRS_TALLY = ("abs_log_ratio_sum", "abs_log_ratio_count", "rejected", "judged", "loss_tokens", "model_tokens")


class TrajectoryReturn:
    """GRPOTrainer bookkeeping reward: a trajectory's summed turn rewards (the trainer overrides advantages)."""

    __name__ = "trajectory_return"

    def __call__(self, completions, turn_rewards=None, **kwargs) -> list[float]:
        if turn_rewards is None:
            raise ValueError(
                "trajectory_return needs the rollout's turn_rewards; use it with TRLOOTrainer only"
            )
        return [float(sum(rewards)) for rewards in turn_rewards]


class TRLOOTrainer(GRPOTrainer):
    """Multi-turn TRLOO / MRS / PRS trainer (see the module docstring for the one change from GRPOTrainer).

    Args:
        model: model id, path or ``PreTrainedModel`` (as for GRPOTrainer).
        environment: a ``trl_ext.env.Environment`` (e.g. the reward package's ``KernelEnvironment``).
        args: ``MultiTurnKernelConfig``.
        train_dataset / eval_dataset: conversational rows (``prompt`` = list of {role, content}); every column is
            handed to ``environment.reset``.
        processing_class, callbacks, optimizers, peft_config: as for GRPOTrainer.
    """

    _tag_names = ["trl", "grpo", "trloo", "drkernel"]

    def __init__(
        self,
        model,
        environment: Environment,
        args: MultiTurnKernelConfig,
        train_dataset=None,
        eval_dataset=None,
        processing_class=None,
        callbacks=None,
        optimizers=(None, None),
        peft_config=None,
    ):
        if not isinstance(args, MultiTurnKernelConfig):
            raise TypeError(f"args must be a MultiTurnKernelConfig, got {type(args).__name__}")
        if not (hasattr(environment, "reset") and hasattr(environment, "step")):
            raise TypeError(
                f"environment {type(environment).__name__} must have reset(tasks) and step(states, texts)"
            )
        lora_dropout = getattr(peft_config, "lora_dropout", 0.0) or 0.0
        if args.use_mrs and lora_dropout > 0:
            raise ValueError(
                f"use_mrs needs identical trainer and rollout probabilities, but the peft_config's lora_dropout="
                f"{lora_dropout} makes them differ; set lora_dropout=0"
            )
        with (
            warnings.catch_warnings()
        ):  # the rollout hook is the supported extension point; its notice is noise
            warnings.filterwarnings("ignore", message=".*'rollout_func'.*experimental")
            super().__init__(
                model=model,
                reward_funcs=[TrajectoryReturn()],
                args=args,
                train_dataset=train_dataset,
                eval_dataset=eval_dataset,
                processing_class=processing_class,
                callbacks=callbacks,
                optimizers=optimizers,
                peft_config=peft_config,
                rollout_func=self._multi_turn_rollout,
            )
        if args.disable_dropout:
            disable_attention_dropout(self.model)  # the base zeroed nn.Dropout modules (LoRA's included)
        warn_low_precision_trainables(self.model, self.is_deepspeed_enabled)
        self.environment = environment
        self._rollout_tasks: list[Mapping[str, Any]] | None = None
        self._trajectories: list[Trajectory] = []
        self._rollout_stats = None
        self._rollout_wall_s = 0.0  # rollout + scoring time inside the current training step
        self._optimization_s = 0.0
        self._mrs_tally: dict[str, torch.Tensor] = {}  # mode -> summed MRS counts not yet logged
        self._mrs_streak = 0  # logged training steps in a row whose MRS rejected share raised the alarm
        self._loss_forward = None  # (input ids, forward outputs) handed from _compute_loss to the base loss
        # PRS draws differ per rank (each rank holds different samples) but are reproducible.
        self._prs_generator = torch.Generator().manual_seed(args.seed * 1009 + self.accelerator.process_index)
        self._control_generator = torch.Generator().manual_seed(args.seed * 7919 + 17)

    # ----------------------------------------------------------------------------------------- generation
    def _model_for_generation(self):
        stack = contextlib.ExitStack()
        model = stack.enter_context(
            unwrap_model_for_generation(
                self.model_wrapped,
                self.accelerator,
                gather_deepspeed3_params=self.args.ds3_gather_for_generation,
                generation_kwargs=self.generation_kwargs,
                gradient_checkpointing_kwargs=self.args.gradient_checkpointing_kwargs,
            )
        )
        stack.enter_context(self._dist.summon_full_params(self.model_wrapped, recurse=False))
        return _Yielding(stack, model)

    def _generation_backend(self):
        if self.use_vllm:
            return TRLVLLMBackend(self, [self._tokenizer.eos_token_id, *self.eos_token_ids])
        return TransformersBackend(
            model_context=self._model_for_generation,
            generation_config=self.generation_config,
            pad_token_id=self._tokenizer.pad_token_id,
            eos_token_ids=self.eos_token_ids,
            device=self.accelerator.device,
            kv_cache_budget_bytes=None
            if self.args.generation_kv_cache_gib is None
            else self.args.generation_kv_cache_gib * 2**30,
            merge_lora=self.args.generation_merge_lora,
            autocast_dtype=None if self.args.generation_autocast == "none" else torch.bfloat16,
            weights_dtype=None if self.args.generation_weights == "trainer" else torch.bfloat16,
        )

    def _count_active_globally(self, local: int) -> int:
        counts = self.accelerator.gather(torch.tensor([local], device=self.accelerator.device))
        return int(counts.sum().item())

    def _multi_turn_rollout(self, prompts: list, trainer: GRPOTrainer) -> dict[str, list]:
        """TRL rollout hook: run every local sample for up to max_turns turns."""
        tasks = self._rollout_tasks
        if tasks is None or len(tasks) != len(prompts):
            raise RuntimeError("rollout called without the matching dataset rows (internal ordering error)")
        if not all(isinstance(p, list) for p in prompts):
            raise ValueError("TRLOOTrainer needs conversational prompts (a list of {role, content} per row)")
        rollout = MultiTurnRollout(
            backend=self._generation_backend(),
            environment=self.environment,
            tokenizer=self._tokenizer,
            max_turns=self.args.max_turns,
            end_of_turn_id=self._tokenizer.eos_token_id,
            feedback_max_chars=self.args.feedback_max_chars,
            max_context_tokens=self.args.max_context_tokens,
            count_active_globally=self._count_active_globally if self.accelerator.num_processes > 1 else None,
            chat_template_kwargs=self.chat_template_kwargs,
        )
        prompt_ids = [render_prompt_ids(self._tokenizer, p, self.chat_template_kwargs) for p in prompts]
        self._trajectories = rollout.run(tasks, prompt_ids)
        self._rollout_stats = rollout.stats
        return {
            "prompt_ids": [t.prompt_ids for t in self._trajectories],
            "completion_ids": [t.completion_ids for t in self._trajectories],
            "logprobs": [t.logprobs for t in self._trajectories],
            "env_mask": [t.env_mask for t in self._trajectories],
            "turn_rewards": [t.rewards for t in self._trajectories],
        }

    # ----------------------------------------------------------------------------------------- scoring
    def _generate_and_score_completions(self, inputs):
        started = time.perf_counter()
        self._rollout_tasks = inputs
        output = super()._generate_and_score_completions(inputs)
        mode = "train" if self.model.training else "eval"
        device = self.accelerator.device
        args = self.args
        trajs = self._trajectories
        num_local, width, max_turns = len(trajs), output["completion_ids"].size(1), args.max_turns

        turn_ids, rewards = turn_tensors(trajs, width, max_turns)  # (B, L), -1 = feedback / padding; (B, T)
        stats = torch.stack([turn_stats(t, max_turns) for t in trajs])  # (B, T, K)

        # Groups are contiguous in the gathered order (TRL's RepeatSampler), whichever rank holds each sample.
        all_rewards = self.accelerator.gather(rewards.to(device)).cpu()  # (B_total, T)
        num_generations = self.num_generations if mode == "train" else self.num_generations_eval
        group_ids = torch.arange(all_rewards.size(0)) // num_generations  # (B_total,)
        advantage_rewards = all_rewards
        if args.reward_control == "permute_within_group":
            # the same generator state on every rank: each rank draws the same permutation of the gathered batch
            advantage_rewards = permute_within_groups(all_rewards, group_ids, self._control_generator)
            present = ~torch.isnan(all_rewards)  # the gathered batch: the same on every rank
            moved = present & (advantage_rewards != all_rewards)
            self._metrics[mode]["control/moved_reward_frac"].append(
                float(moved.sum()) / max(int(present.sum()), 1)
            )
        if args.advantage_estimator == "trloo":
            all_adv = trloo_advantages(
                advantage_rewards, group_ids, args.gamma, singleton=args.singleton_advantage
            )
        else:
            all_adv = grpo_turn_advantages(
                advantage_rewards, group_ids, args.gamma, scale_by_std=args.grpo_turn_scale_std
            )
        local = slice(
            self.accelerator.process_index * num_local, (self.accelerator.process_index + 1) * num_local
        )
        turn_adv = all_adv[local]  # (B, T)
        output["advantages"] = per_token(turn_adv, turn_ids).to(device=device, dtype=torch.float32)  # (B, L)

        # Loss masks: which turns / rows / tokens train. Rejected samples still counted in the baselines above.
        keep_turns = ~torch.isnan(rewards)  # (B, T)
        keep_rows = torch.ones(num_local, dtype=torch.bool)  # (B,)
        keep_tokens = torch.ones(num_local, width, dtype=torch.bool)  # (B, L)
        model_tokens = (output["completion_mask"] * output["tool_mask"]).cpu()  # (B, L)
        metrics = self._metrics[mode]
        if args.mask_truncated_turns:
            truncated = stats[..., TURN_STATS.index("truncated")] == 1  # (B, T)
            metrics["filters/truncated_frac"].append(self._global_frac(keep_turns & truncated, keep_turns))
            keep_turns &= ~truncated
        if args.mask_failed_turns_after_success:
            kept = keep_failed_turns_after_success(rewards)
            metrics["filters/failed_after_success_frac"].append(
                self._global_frac(keep_turns & ~kept, keep_turns)
            )
            keep_turns &= kept
        if args.drop_tied_groups:
            untied = untied_groups(all_rewards, group_ids)[local]
            metrics["filters/tied_group_frac"].append(self._global_frac(~untied, torch.ones_like(untied)))
            keep_rows &= untied
        if args.use_prs:
            correct, coverage = (
                stats[..., TURN_STATS.index("correct")] == 1,
                stats[..., TURN_STATS.index("coverage")],
            )
            prob = prs_keep_probability(coverage, correct, args.prs_threshold, args.prs_softness)  # (B, T)
            drawn = prs_sample(prob, self._prs_generator)
            metrics["prs/rejected_frac_of_correct"].append(self._global_frac(correct & ~drawn, correct))
            metrics["prs/unknown_coverage_frac_of_correct"].append(
                self._global_frac(correct & torch.isnan(coverage), correct)
            )
            keep_turns &= drawn | ~correct
        # MRS compares the trainer's log-probs of the sampled tokens with the rollout engine's. When GRPO already
        # computed trainer log-probs (old_per_token_logps) they are used here. Otherwise the loss's own forward
        # pass provides them (``_compute_loss``): same parameters, same tokens, so the same values, and no extra
        # forward pass. The loss normaliser of token-sum losses spans the whole generation batch, so when that
        # batch is split into several micro-batches MRS is decided here at the cost of one no-grad forward.
        rollout_logps = output.get("sampling_per_token_logps")
        if args.use_mrs and rollout_logps is None:
            raise RuntimeError("use_mrs needs rollout log-probs, but the generation backend returned none")
        mrs_in_loss = False
        if rollout_logps is not None:
            have_train_logps = output.get("old_per_token_logps") is not None
            mrs_in_loss = not have_train_logps and (not args.use_mrs or self._mrs_in_loss_supported(mode))
            if mrs_in_loss:
                output["mrs_mask"] = model_tokens.to(
                    device
                )  # (B, L) all model tokens, before the other filters
                output["mrs_turn_ids"] = turn_ids.to(device)  # (B, L)
            elif args.use_mrs or have_train_logps:
                train_logps = self._train_logps(output).cpu()  # (B, L)
                kept = self._judge_mrs(mode, train_logps, rollout_logps.cpu(), model_tokens, turn_ids)
                if kept is not None:
                    keep_tokens &= kept
                self._flush_mrs_metrics(mode)
        keep = loss_keep(keep_turns, keep_rows, keep_tokens, turn_ids)  # (B, L)
        output["tool_mask"] = output["tool_mask"] * keep.to(device=device, dtype=output["tool_mask"].dtype)
        # The DAPO / CISPO normaliser counts loss tokens (or turns) across the generation batch: recount after masking.
        loss_mask = output["completion_mask"] * output["tool_mask"]
        output["num_items_in_batch"] = self._loss_normaliser(loss_mask, turn_ids.to(device))
        if not (mrs_in_loss and args.use_mrs):  # otherwise logged from the loss, once MRS is known
            metrics["filters/loss_token_frac"].append(
                self._global_frac(loss_mask.cpu().bool(), model_tokens.bool())
            )
        self._log_turn_metrics(mode, stats, turn_adv, ~torch.isnan(rewards))
        self._rollout_wall_s += time.perf_counter() - started
        return output

    def _loss_normaliser(self, loss_mask: torch.Tensor, turn_ids: torch.Tensor) -> torch.Tensor:
        """Divisor of the token-sum losses over the generation batch, summed over processes.

        ``loss_aggregation='token_mean'``: the number of loss tokens (TRL's dapo). ``'turn_sum_mean'``: the number of
        (trajectory, turn) pairs with at least one loss token, so the loss is the mean over trained turns of each
        turn's token-loss sum (the reference's per-turn rows with seq-mean-token-sum). ``'turn_sum_norm'``: that
        count times ``loss_scale_tokens`` (default ``max_completion_length``), a constant per turn that gives the
        gradient a token mean's size.

        Args:
            loss_mask: (B, L) 0/1 tokens that carry loss.
            turn_ids: (B, L) 0-based turn of each token, -1 on feedback / padding.
        """
        if self.args.loss_aggregation == "token_mean":
            local = loss_mask.sum()
        else:
            local = trained_turns(loss_mask, turn_ids, self.args.max_turns)
        if self.args.loss_aggregation == "turn_sum_norm":
            local = local * (self.args.loss_scale_tokens or self.args.max_completion_length)
        return self.accelerator.gather(local.to(self.accelerator.device)).sum()

    def _train_logps(self, output: dict) -> torch.Tensor:
        """Trainer log-probs of the sampled tokens at rollout time (computed once if GRPO did not already)."""
        if output.get("old_per_token_logps") is not None:
            return output["old_per_token_logps"]
        ids = torch.cat([output["prompt_ids"], output["completion_ids"]], dim=1)
        attention = torch.cat([output["prompt_mask"], output["completion_mask"]], dim=1)
        batch_size = (
            self.args.per_device_train_batch_size
            if self.model.training
            else self.args.per_device_eval_batch_size
        )
        with torch.no_grad():
            logps, _, _ = self._get_per_token_logps_and_entropies(
                self.model, ids, attention, output["completion_ids"].size(1), batch_size=batch_size
            )
        return logps

    # ----------------------------------------------------------------------------------------- MRS
    def _mrs_in_loss_supported(self, mode: str) -> bool:
        """Whether MRS can be decided inside the loss without changing the loss's normalisation.

        Losses normalised per micro-batch (grpo, bnpo, dr_grpo, luspo, sapo) read only the micro-batch's mask,
        so masking there is exact. Token-sum losses (dapo, cispo, vespo) divide by the loss tokens of the whole
        generation batch over all processes, counted before the loss runs; that count is only known in the loss
        when the generation batch is a single micro-batch (eval, or steps_per_generation == 1). Unknown loss
        types take the generation-time path.
        """
        if self.loss_type in _MICRO_BATCH_NORMALISED:
            return True
        if self.loss_type in _GENERATION_BATCH_NORMALISED:
            return mode == "eval" or self.args.steps_per_generation == 1
        return False

    def _judge_mrs(
        self,
        mode: str,
        train_logps: torch.Tensor,
        rollout_logps: torch.Tensor,
        model_tokens: torch.Tensor,
        turn_ids: torch.Tensor,
    ) -> torch.Tensor | None:
        """Tally the mismatch metric and, with ``use_mrs``, return the (B, L) MRS token keep mask (else None)."""
        args = self.args
        abs_sum, abs_count = abs_log_ratio_sum(train_logps, rollout_logps, model_tokens)
        self._tally_mrs(mode, abs_log_ratio_sum=abs_sum, abs_log_ratio_count=abs_count)
        if not args.use_mrs:
            return None
        decision = mrs_loss_mask(
            train_logps,
            rollout_logps,
            model_tokens,
            args.mrs_level,
            turn_ids,
            args.max_turns,
            args.mrs_lower,
            args.mrs_upper,
            args.mrs_veto,
        )
        self._tally_mrs(mode, rejected=decision.rejected, judged=decision.judged)
        return decision.keep

    def _tally_mrs(self, mode: str, **counts: torch.Tensor) -> None:
        """Add 0-dim counts (names from ``_MRS_TALLY``) to this mode's running MRS tally (no host sync)."""
        tally = self._mrs_tally.get(mode)
        if tally is None:
            tally = self._mrs_tally[mode] = torch.zeros(len(_MRS_TALLY), device=self.accelerator.device)
        for name, value in counts.items():
            tally[_MRS_TALLY.index(name)] += value.detach().float().to(tally.device)

    def _compute_loss(self, model, inputs):
        """GRPOTrainer's loss; with in-loss MRS, the MRS loss mask comes from the loss's own forward pass.

        The forward pass is run here once, MRS masks ``tool_mask`` (and recounts the token-sum normaliser), and
        the base loss then reuses that forward's outputs (``_get_per_token_logps_and_entropies``). Rejected
        tokens are outside the base's ``mask``: they add nothing to the loss, its gradient or its normaliser,
        exactly as when the mask was applied at generation time.
        """
        if "mrs_mask" not in inputs:
            return super()._compute_loss(model, inputs)
        mode = "train" if self.model.training else "eval"
        # The same call the base makes (text only: TRLOOTrainer rollouts carry no images).
        input_ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1)
        attention_mask = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], dim=1)
        forward = self._get_per_token_logps_and_entropies(
            model,
            input_ids,
            attention_mask,
            inputs["completion_ids"].size(1),
            compute_entropy=True,
            compute_aux_loss=self.aux_loss_enabled,
        )
        train_logps = forward[0].detach()  # (B, L): the parameters have not moved since the rollout
        kept = self._judge_mrs(
            mode, train_logps, inputs["sampling_per_token_logps"], inputs["mrs_mask"], inputs["mrs_turn_ids"]
        )
        if kept is not None:
            tool_mask = inputs["tool_mask"] * kept.to(inputs["tool_mask"].dtype)
            loss_mask = inputs["completion_mask"] * tool_mask  # (B, L)
            inputs = {**inputs, "tool_mask": tool_mask}
            if self.loss_type in _GENERATION_BATCH_NORMALISED:
                # This micro-batch is the whole generation batch (_mrs_in_loss_supported): recount its loss
                # tokens over all processes, as the base does at generation time.
                inputs["num_items_in_batch"] = self._loss_normaliser(loss_mask, inputs["mrs_turn_ids"])
            self._tally_mrs(mode, loss_tokens=loss_mask.sum(), model_tokens=inputs["mrs_mask"].sum())
        self._loss_forward = (input_ids, forward)
        try:
            loss = super()._compute_loss(model, inputs)
        finally:
            self._loss_forward = None
        if mode == "eval":  # no accumulation window in evaluation
            self._flush_mrs_metrics(mode)
        return loss

    def _get_per_token_logps_and_entropies(self, model, input_ids, *args, **kwargs):
        """The base forward, except that the loss's call returns the pass ``_compute_loss`` already ran."""
        cached, self._loss_forward = self._loss_forward, None
        if cached is None:
            return super()._get_per_token_logps_and_entropies(model, input_ids, *args, **kwargs)
        cached_ids, forward = cached
        if not torch.equal(cached_ids, input_ids):
            raise RuntimeError(
                "internal error: the loss asked for a forward pass over other tokens than MRS used"
            )
        return forward

    def _flush_mrs_metrics(self, mode: str) -> None:
        """Log the tallied MRS metrics, summed over processes (every process flushes at the same points)."""
        tally = self._mrs_tally.pop(mode, None)
        if tally is None:
            return
        total = dict(zip(_MRS_TALLY, self.accelerator.reduce(tally, reduction="sum").tolist(), strict=True))
        metrics = self._metrics[mode]

        def ratio(hits: str, among: str) -> float:
            return total[hits] / total[among] if total[among] > 0 else 0.0

        metrics["mrs/mean_abs_log_ratio"].append(ratio("abs_log_ratio_sum", "abs_log_ratio_count"))
        if self.args.use_mrs:
            metrics["mrs/rejected_frac"].append(ratio("rejected", "judged"))
        if total["model_tokens"] > 0:  # tallied only when MRS masks the loss inside the loss
            metrics["filters/loss_token_frac"].append(ratio("loss_tokens", "model_tokens"))

    # ----------------------------------------------------------------------------------------- metrics
    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        """Add what the logged step needs to be read right: ``clip_coefficient`` (the factor gradient clipping
        applied: max_grad_norm / grad_norm, at most 1) and the MRS alarm (``mrs/high_rejection_streak``)."""
        grad_norm = logs.get("grad_norm")
        if grad_norm is not None and self.args.max_grad_norm and math.isfinite(grad_norm):
            logs["clip_coefficient"] = min(1.0, self.args.max_grad_norm / max(float(grad_norm), 1e-12))
        rejected = self._metrics["train"].get("mrs/rejected_frac") if self.args.use_mrs else None
        if rejected and "loss" in logs:  # a training step's log (evaluation logs carry eval_loss)
            mean_rejected = sum(rejected) / len(rejected)
            high = mean_rejected > self.args.mrs_alarm_rejected_frac
            self._mrs_streak = self._mrs_streak + 1 if high else 0
            logs["mrs/high_rejection_streak"] = float(self._mrs_streak)
            if self._mrs_streak == self.args.mrs_alarm_steps:
                logger.warning(
                    "MRS rejected %.0f %% of the batch (over %.0f %%) for %d logged steps in a row: the trainer's "
                    "and the rollout engine's probabilities disagree (sampling settings, a stale engine)%s",
                    100 * mean_rejected,
                    100 * self.args.mrs_alarm_rejected_frac,
                    self._mrs_streak,
                    "; stopping (mrs_stop_on_alarm)" if self.args.mrs_stop_on_alarm else "",
                )
                if self.args.mrs_stop_on_alarm:
                    self.control.should_training_stop = True
        super().log(logs, start_time)

    def _global_frac(self, hits: torch.Tensor, among: torch.Tensor) -> float:
        totals = torch.tensor([float(hits.sum()), float(among.sum())], device=self.accelerator.device)
        totals = self.accelerator.reduce(totals, reduction="sum")
        return float(totals[0] / totals[1]) if totals[1] > 0 else 0.0

    def _global_mean(self, value: float) -> float:
        return float(self.accelerator.gather(torch.tensor([value], device=self.accelerator.device)).mean())

    def _log_turn_metrics(
        self, mode: str, stats: torch.Tensor, turn_adv: torch.Tensor, present: torch.Tensor
    ) -> None:
        metrics = self._metrics[mode]
        all_stats = self.accelerator.gather(stats.to(self.accelerator.device)).cpu()  # (B_total, T, K)
        reached = ~torch.isnan(all_stats[..., 0])  # (B_total, T)
        for t in range(all_stats.size(1)):
            rows = all_stats[reached[:, t], t]  # (n_t, K)
            if rows.numel() == 0:
                continue
            metrics[f"turn_{t + 1}/reached_frac"].append(float(reached[:, t].float().mean()))
            for j, name in enumerate(TURN_STATS):
                column = rows[:, j]
                known = ~torch.isnan(column)
                if name.startswith("fast") and not known.all():
                    continue  # some correct samples lack timing: Fast@p is unknown, not 0
                if known.any():
                    metrics[f"turn_{t + 1}/{name}"].append(float(column[known].mean()))
        adv = turn_adv[present]
        metrics["advantages/abs_mean"].append(
            self._global_mean(float(adv.abs().mean()) if adv.numel() else 0.0)
        )
        if self._rollout_stats is not None:
            metrics["time/generation_s"].append(self._global_mean(self._rollout_stats.generation_s))
            metrics["time/environment_s"].append(self._global_mean(self._rollout_stats.environment_s))
            metrics["rollout/feedback_truncated"].append(
                self._global_mean(float(self._rollout_stats.feedback_truncated))
            )

    def training_step(self, model, inputs, num_items_in_batch):
        started = time.perf_counter()
        self._rollout_wall_s = 0.0
        output = super().training_step(model, inputs, num_items_in_batch)
        self._optimization_s += time.perf_counter() - started - self._rollout_wall_s
        if self._step % self.current_gradient_accumulation_steps == 0:  # super() already advanced _step
            self._metrics["train"]["time/optimization_s"].append(self._optimization_s)
            self._optimization_s = 0.0
            self._flush_mrs_metrics("train")  # in-loss MRS counts of this accumulation window
        return output


class _Yielding(contextlib.AbstractContextManager):
    """Context manager that yields ``value`` and closes ``stack`` on exit."""

    def __init__(self, stack: contextlib.ExitStack, value: Any):
        self.stack, self.value = stack, value

    def __enter__(self):
        return self.value

    def __exit__(self, *exc):
        return self.stack.__exit__(*exc)
