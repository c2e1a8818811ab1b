"""Sampling completions with ``transformers``' ``generate``: the rollout's default ``GenerationBackend``.

Two costs of the obvious way are avoided:

* Memory of the log-probs. ``output_scores=True`` keeps the processed logits of every step: (steps, batch, vocab)
  floats, ~60 GB at batch 64 x 512 tokens with a 152k vocabulary. ``SampledLogProbs`` instead reads each step's
  processed distribution as generation goes and keeps one float per sampled token.
* Memory of the cache. All prompts in one ``generate`` call (64 trajectories at turn 3: ~170 GiB of KV cache for
  an 8B model) or a fixed small batch (slow: on an H200 a decode step costs about the same for batch 8 and 64).
  Prompts go in micro-batches sized by ``kv_cache_budget_bytes``: as many sequences as their KV cache and one
  step's logits fit.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch


@dataclass
class GenerationOutput:
    """One sampled completion: token ids (ending with eos unless truncated) and their rollout log-probs."""

    token_ids: list[int]
    logprobs: list[float] | None  # log-prob of each sampled token after temperature (None: backend has none)


class GenerationBackend(Protocol):
    """Samples one completion per prompt (prompts are token id lists). Must accept an empty list."""

    def generate(self, prompts: list[list[int]]) -> list[GenerationOutput]: ...


# ------------------------------------------------------------------------------------------------ log-probs
UNSUPPORTED_SAMPLING = (
    "typical_p",
    "epsilon_cutoff",
    "eta_cutoff",
    "top_h",
    "watermarking_config",
    "renormalize_logits",
)


def sampling_warpers(generation_config: Any) -> list[Any]:
    """The warpers ``generate`` applies after every other logits processor when sampling (temperature, top-k,
    top-p, min-p, in its order). A ``LogitsProcessor`` passed to ``generate`` runs BEFORE them, so the recorder
    applies the same ones itself to see the distribution tokens are actually drawn from. Sampling options it does
    not reproduce are refused by name rather than recorded wrongly."""
    from transformers import MinPLogitsWarper, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

    used = [name for name in UNSUPPORTED_SAMPLING if _is_set(name, getattr(generation_config, name, None))]
    if used:
        raise ValueError(f"SampledLogProbs cannot reproduce the sampling option(s) {used}: unset them")
    if not generation_config.do_sample:
        return []
    warpers: list[Any] = []
    if generation_config.temperature is not None and generation_config.temperature != 1.0:
        warpers.append(TemperatureLogitsWarper(generation_config.temperature))
    if generation_config.top_k is not None and generation_config.top_k != 0:
        warpers.append(TopKLogitsWarper(top_k=generation_config.top_k, min_tokens_to_keep=1))
    if generation_config.top_p is not None and generation_config.top_p < 1.0:
        warpers.append(TopPLogitsWarper(top_p=generation_config.top_p, min_tokens_to_keep=1))
    if generation_config.min_p is not None:
        warpers.append(MinPLogitsWarper(min_p=generation_config.min_p, min_tokens_to_keep=1))
    return warpers


def _is_set(name: str, value: Any) -> bool:
    if value is None or value is False:
        return False
    if name in ("typical_p",):
        return value < 1.0
    if name in ("epsilon_cutoff", "eta_cutoff"):
        return 0.0 < value < 1.0
    return True


class SampledLogProbs:
    """A logits processor that records the log-prob of every sampled token under the sampling distribution, one
    float per token (``steps``: a list of (batch,) tensors). It passes scores through unchanged. Step t's token is
    only known at step t+1 (it is then the last input id), so the processor keeps one step's log-softmax, (batch,
    vocab), and ``finish`` reads the last step's token from the returned sequences."""

    def __init__(self, warpers: list[Any]) -> None:
        self.warpers = warpers
        self.steps: list[torch.Tensor] = []
        self._pending: torch.Tensor | None = None

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        self._take(input_ids[:, -1])
        processed = scores.clone()
        for warp in self.warpers:
            processed = warp(input_ids, processed)
        self._pending = torch.log_softmax(processed.float(), dim=-1)
        return scores

    def _take(self, sampled: torch.Tensor) -> None:
        if self._pending is not None:
            self.steps.append(self._pending.gather(-1, sampled[:, None].to(self._pending.device))[:, 0].cpu())
            self._pending = None

    def finish(self, sequences: torch.Tensor) -> torch.Tensor:
        """(batch, steps) log-probs, given the full sequences ``generate`` returned."""
        self._take(sequences[:, -1])
        if not self.steps:
            return torch.zeros((sequences.size(0), 0))
        return torch.stack(self.steps, dim=1)


# ------------------------------------------------------------------------------------------------ micro-batches
def kv_cache_bytes_per_token(model_config: Any, dtype_bytes: int) -> int:
    """Pure: KV-cache bytes one token of one sequence takes (keys and values, every layer)."""
    text = model_config.get_text_config() if hasattr(model_config, "get_text_config") else model_config
    heads = text.num_attention_heads
    kv_heads = getattr(text, "num_key_value_heads", None) or heads
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // heads
    return 2 * text.num_hidden_layers * kv_heads * head_dim * dtype_bytes


def micro_batch_size(
    budget_bytes: float, kv_bytes_per_token: int, tokens_per_sequence: int, vocab_size: int
) -> int:
    """Pure: sequences per ``generate`` call so that their KV cache at full length plus one step's logits in fp32
    (three copies: the model's, the processed, the recorder's log-softmax) fit ``budget_bytes``; at least one."""
    per_sequence = kv_bytes_per_token * tokens_per_sequence + 3 * 4 * vocab_size
    return max(1, int(budget_bytes // max(per_sequence, 1)))


# ------------------------------------------------------------------------------------------------ LoRA
@contextlib.contextmanager
def merged_lora(model: Any) -> Any:
    """Yield ``model`` with its LoRA adapters merged into the base weights, unmerged on the way out: unmerged
    all-linear LoRA doubles the per-step cost of decoding (two extra matmuls per linear layer, measured on an
    H200). Merge and unmerge round in the weights' dtype (``benchmarks/bench_rollout.py`` measures the drift);
    a model without adapters is yielded as it is. Refused for base weights below fp32: on the tiny Qwen2, 20
    round trips in bf16 moved a base weight by 0.01 (fp32: 7e-9), and a training run merges once per rollout."""
    if not (hasattr(model, "merge_adapter") and getattr(model, "peft_config", None)):
        yield model
        return
    low = sorted(
        {str(p.dtype) for n, p in model.named_parameters() if "lora_" not in n and p.dtype != torch.float32}
    )
    if low:
        raise ValueError(
            f"merge_lora needs fp32 base weights (found {low}): each merge/unmerge round trip rounds "
            "them, and the drift accumulates over a run (generation_merge_lora=False, or fp32 weights)"
        )
    model.merge_adapter()
    try:
        yield model
    finally:
        model.unmerge_adapter()


# ------------------------------------------------------------------------------------------------ the backend
class TransformersBackend:
    """``model.generate`` sampling with processed log-probs (after temperature / top-k / top-p / min-p).

    Args:
        model_context: callable returning a context manager that yields the model to generate with (lets the
            trainer unwrap DDP / DeepSpeed models; pass ``lambda: contextlib.nullcontext(model)`` otherwise).
        generation_config: a ``transformers.GenerationConfig`` (max_new_tokens, temperature, top_p, top_k...).
        pad_token_id, eos_token_ids: used for padding and for cutting completions after the first eos.
        device: where the input ids go.
        batch_size: prompts per ``generate`` call; None: sized by ``kv_cache_budget_bytes`` (all at once when that
            is None too).
        kv_cache_budget_bytes: memory for one call's KV cache and logits (see ``micro_batch_size``).
        merge_lora: generate with LoRA adapters merged (``merged_lora``).
        autocast_dtype: generate under ``torch.autocast`` to this dtype (None: as the model computes).
        weights_dtype: generate with a copy of the model whose weights are cast to this dtype, made afresh at each
            ``generate`` (a rollout engine serving rounded weights, as a bf16 vLLM engine beside an fp32 trainer;
            None: the model itself).
    """

    def __init__(
        self,
        model_context: Callable[[], contextlib.AbstractContextManager],
        generation_config: Any,
        pad_token_id: int,
        eos_token_ids: Sequence[int],
        device: torch.device | str = "cpu",
        batch_size: int | None = None,
        kv_cache_budget_bytes: float | None = None,
        merge_lora: bool = False,
        autocast_dtype: torch.dtype | None = None,
        weights_dtype: torch.dtype | None = None,
    ):
        self.model_context = model_context
        self.generation_config = copy.deepcopy(generation_config)
        self.generation_config.output_scores = False  # SampledLogProbs keeps one float per token instead
        self.generation_config.return_dict_in_generate = True
        self.warpers = sampling_warpers(self.generation_config)
        self.pad_token_id = pad_token_id
        self.eos_token_ids = list(eos_token_ids)
        self.device = torch.device(device)
        self.batch_size = batch_size
        self.kv_cache_budget_bytes = kv_cache_budget_bytes
        self.merge_lora = merge_lora
        self.autocast_dtype = autocast_dtype
        self.weights_dtype = weights_dtype
        self.last_micro_batch = 0  # prompts per generate call in the last ``generate`` (for logs and tests)

    def generate(self, prompts: list[list[int]]) -> list[GenerationOutput]:
        # An empty call still runs one tiny generation, so every rank makes the same number of collective calls
        # (DeepSpeed ZeRO-3 gathers parameters inside generate).
        dummy = not prompts
        batch = prompts if prompts else [[self.eos_token_ids[0]]]
        outputs: list[GenerationOutput] = []
        with self.model_context() as unwrapped, torch.no_grad(), self._weights(unwrapped) as model:
            step = self._micro_batch(model, batch)
            self.last_micro_batch = step
            for start in range(0, len(batch), step):
                outputs.extend(self._generate_batch(model, batch[start : start + step]))
        return [] if dummy else outputs

    @contextlib.contextmanager
    def _weights(self, model: Any) -> Iterator[Any]:
        with merged_lora(model) if self.merge_lora else contextlib.nullcontext(model) as merged:
            yield merged if self.weights_dtype is None else rounded_copy(merged, self.weights_dtype)

    def _micro_batch(self, model: Any, batch: list[list[int]]) -> int:
        if self.batch_size is not None:
            return self.batch_size
        if self.kv_cache_budget_bytes is None:
            return len(batch)
        dtype_bytes = next(model.parameters()).element_size()
        tokens = max(len(p) for p in batch) + int(self.generation_config.max_new_tokens or 0)
        vocab = model.config.get_text_config().vocab_size
        return micro_batch_size(
            self.kv_cache_budget_bytes, kv_cache_bytes_per_token(model.config, dtype_bytes), tokens, vocab
        )

    def _generate_batch(self, model: Any, prompts: list[list[int]]) -> list[GenerationOutput]:
        from transformers import LogitsProcessorList

        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), self.pad_token_id, dtype=torch.long)
        attention = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, prompt in enumerate(prompts):  # left padding
            ids[row, width - len(prompt) :] = torch.tensor(prompt)
            attention[row, width - len(prompt) :] = 1
        recorder = SampledLogProbs(self.warpers)
        numerics = (
            torch.autocast(self.device.type, dtype=self.autocast_dtype)
            if self.autocast_dtype is not None
            else contextlib.nullcontext()
        )
        with numerics:
            out = model.generate(
                input_ids=ids.to(self.device),
                attention_mask=attention.to(self.device),
                generation_config=self.generation_config,
                logits_processor=LogitsProcessorList([recorder]),
            )
        new_tokens = out.sequences[:, width:].cpu()  # (B, S)
        logps = recorder.finish(out.sequences)  # (B, S)
        results = []
        for row in range(len(prompts)):
            tokens = new_tokens[row].tolist()
            end = len(tokens)
            for pos, tok in enumerate(tokens):
                if tok in self.eos_token_ids:
                    end = pos + 1
                    break
            results.append(GenerationOutput(tokens[:end], logps[row, :end].tolist()))
        return results


def rounded_copy(model: Any, dtype: torch.dtype) -> Any:
    """A model of ``model``'s architecture holding its weights cast to ``dtype``, on its device; the trainer's
    weights keep their precision. Built from the config, not deep-copied: a deep copy keeps the functions that wrap
    the original's ``forward`` (accelerate's output casting), and would generate with the original weights."""
    from transformers import AutoModelForCausalLM

    if hasattr(model, "peft_config"):
        raise ValueError(
            "generation_weights needs a model without LoRA adapters (generation_merge_lora merges them but keeps them)"
        )
    weights = {name: tensor.to(dtype) for name, tensor in model.state_dict().items()}
    rounded = AutoModelForCausalLM.from_config(model.config, dtype=dtype)
    rounded.load_state_dict(weights)
    return rounded.to(next(model.parameters()).device).eval()


def with_stop_tokens(generation_kwargs: Mapping[str, Any] | None, stop_ids: Sequence[int]) -> dict[str, Any]:
    """Pure: vLLM sampling kwargs that also stop at ``stop_ids`` (the chat template's end-of-turn token and the
    eos ids), keeping any stop tokens already asked for. vLLM stops only at the model's own eos otherwise, which
    for a base model is not the chat template's end of turn: turns would run on to max_tokens."""
    merged = dict(generation_kwargs or {})
    asked = list(merged.get("stop_token_ids") or [])
    merged["stop_token_ids"] = asked + [i for i in dict.fromkeys(stop_ids) if i not in asked]
    return merged


class TRLVLLMBackend:
    """Generation through TRL's vLLM integration (server or colocate mode), one completion per context, stopping
    at ``stop_ids`` (``with_stop_tokens``).

    Untested here (no vLLM on CPU); TRL syncs the weights before the rollout hook runs.
    """

    def __init__(self, trainer: Any, stop_ids: Sequence[int] = ()):
        self.trainer = trainer
        vllm = trainer.vllm_generation
        vllm.generation_kwargs = with_stop_tokens(vllm.generation_kwargs, stop_ids)

    def generate(self, prompts: list[list[int]]) -> list[GenerationOutput]:
        _, completion_ids, logprobs, _ = self.trainer.vllm_generation.generate(
            prompts=prompts, images=None, num_generations=1
        )
        out = []
        for ids, lps in zip(completion_ids, logprobs, strict=True):
            out.append(GenerationOutput(list(ids), [float("nan") if lp[0] is None else lp[0] for lp in lps]))
        return out
