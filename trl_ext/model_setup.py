"""Preparing a policy model for training: dropout that MRS cannot live with, precision that rounds updates away."""

from __future__ import annotations

import warnings

import torch


def disable_attention_dropout(model: torch.nn.Module) -> None:
    """Zero the functional attention dropout that transformers' attention modules keep as a float attribute."""
    for module in model.modules():
        if isinstance(getattr(module, "attention_dropout", None), float):
            module.attention_dropout = 0.0


def warn_low_precision_trainables(model: torch.nn.Module, deepspeed: bool) -> None:
    """Warn when trainable weights are bf16 / fp16 and no optimizer keeps fp32 master copies (DeepSpeed does).

    A bf16 weight has an 8-bit mantissa: an AdamW step of lr ~1e-6 on a weight of magnitude ~1e-2 is ~1e-4 of its
    value, below half a bf16 ulp, and rounds away.
    """
    if deepspeed:
        return
    low = [
        p.numel()
        for p in model.parameters()
        if p.requires_grad and p.dtype in (torch.bfloat16, torch.float16)
    ]
    total = sum(p.numel() for p in model.parameters() if p.requires_grad)
    if low:
        warnings.warn(
            f"{sum(low) / max(total, 1):.0%} of the trainable parameters are bf16/fp16 and the optimizer updates them "
            "in place: small updates (lr ~1e-6) round away. Load the model in float32 and set bf16=True "
            "(autocast with fp32 master weights), or use DeepSpeed",
            stacklevel=3,
        )
