"""Which attention backend training may use: cuDNN's fused attention is turned off where its backward is broken.

cuDNN's scaled-dot-product-attention backward (torch's default backend on H100 / H200 since torch 2.11) returns NaN
in the query gradient when a mask tensor is passed, the key length is 64 modulo 128 and a query row's logsumexp is
below -ln(FLT_MAX) (pytorch/pytorch#196678; huggingface/trl#7181 traces it to a Qwen2.5 attention head whose
logits are all strongly negative). The forward is right, so the loss stays finite while every weight before that
layer gets a NaN gradient: a padded batch of such a length costs a whole optimizer step. Instead of trusting a
version list, the scripts run the failing case once on the training GPU and turn cuDNN's attention off only where
it fails there; the other backends (flash, memory-efficient, math) compute the same attention.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import torch

logger = logging.getLogger(__name__)

CudnnAttentionMode = Literal["auto", "keep"]


@dataclass
class AttentionBackendArguments:
    """The script option shared by ``scripts/sft.py`` and ``scripts/train.py``."""

    cudnn_attention: CudnnAttentionMode = field(
        default="auto",
        metadata={
            "help": "'auto': on a GPU, run the known failing case of cuDNN's attention backward "
            "(pytorch/pytorch#196678: a mask, key length 64 mod 128, very negative logits) once and turn cuDNN's "
            "attention off if it returns NaN; 'keep': leave torch's backend choice as it is."
        },
    )


def failing_case_query_gradient(device: torch.device | str, only_cudnn: bool) -> torch.Tensor:
    """The query gradient of the known failing case, through cuDNN's attention alone or torch's own choice.

    Every scaled logit is about -120, so every row's logsumexp lies below -88.7; the key length 192 is 64 modulo
    128; the mask is all True (a mask tensor alone selects the failing kernel). With ``only_cudnn`` it raises when
    cuDNN's attention cannot run these inputs at all.
    """
    from torch.nn.attention import SDPBackend, sdpa_kernel

    length, head_dim = 192, 64
    generator = torch.Generator(device=device).manual_seed(0)
    shape = (1, 1, length, head_dim)
    query = torch.randn(shape, device=device, dtype=torch.bfloat16, generator=generator) * 0.1
    key = torch.randn(shape, device=device, dtype=torch.bfloat16, generator=generator) * 0.1
    value = torch.randn(shape, device=device, dtype=torch.bfloat16, generator=generator)
    query[..., 0] = 1.0
    key[..., 0] = -120 * math.sqrt(head_dim)
    query.requires_grad_(True)
    mask = torch.ones(1, 1, length, length, dtype=torch.bool, device=device)
    backend = sdpa_kernel(SDPBackend.CUDNN_ATTENTION) if only_cudnn else contextlib.nullcontext()
    with backend:
        out = torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=mask)
    out.backward(torch.ones_like(out))
    return query.grad


def cudnn_attention_backward_fails(device: torch.device | str = "cuda") -> bool:
    """Run the failing case through cuDNN's attention alone; True when any query gradient is not finite."""
    return not bool(torch.isfinite(failing_case_query_gradient(device, only_cudnn=True)).all())


@dataclass(frozen=True)
class CudnnAttentionDecision:
    enabled: bool
    reason: str


def choose_cudnn_attention(
    mode: CudnnAttentionMode,
    cuda_available: bool,
    probe: Callable[[], bool],
) -> CudnnAttentionDecision:
    """Whether training keeps cuDNN's attention (pure: the probe is passed in; ``apply`` acts on the decision)."""
    if mode == "keep":
        return CudnnAttentionDecision(True, "kept as asked (--cudnn_attention keep)")
    if mode != "auto":
        raise ValueError(f"cudnn_attention must be 'auto' or 'keep', got {mode!r}")
    if not cuda_available:
        return CudnnAttentionDecision(True, "no GPU: cuDNN's attention is not used")
    try:
        fails = probe()
    except RuntimeError as exc:  # this GPU or build has no cuDNN attention: torch will not choose it either
        return CudnnAttentionDecision(True, f"cuDNN's attention cannot run here ({str(exc).splitlines()[0]})")
    if fails:
        return CudnnAttentionDecision(
            False, "turned off: its backward returned NaN on the known failing case (pytorch/pytorch#196678)"
        )
    return CudnnAttentionDecision(True, "kept: its backward is finite on the known failing case")


def apply_cudnn_attention_choice(mode: CudnnAttentionMode) -> CudnnAttentionDecision:
    """Decide for this process's GPU, set torch's global switch accordingly and log the decision."""

    # Each rank of a multi-GPU launch probes its own GPU: a probe on cuda:0 from every rank would put a CUDA context
    # of every process on the first card (modulo the visible count: a launcher may show each rank one GPU).
    def probe() -> bool:
        rank = int(os.environ.get("LOCAL_RANK", "0"))
        return cudnn_attention_backward_fails(torch.device("cuda", rank % torch.cuda.device_count()))

    decision = choose_cudnn_attention(mode, torch.cuda.is_available(), probe)
    if not decision.enabled:
        torch.backends.cuda.enable_cudnn_sdp(False)
    logger.info("cuDNN attention: %s", decision.reason)
    return decision
