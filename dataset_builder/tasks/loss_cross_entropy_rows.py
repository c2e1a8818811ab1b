"""Per-token cross-entropy between logits and integer class targets (no reduction)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 4096
CLASSES = 32000

SMALL = {"TOKENS": 16, "CLASSES": 128}
CATEGORY = "loss"
LEVEL = "1"
OPS = ["torch.nn.functional.cross_entropy"]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, targets, reduction="none")


def get_inputs():
    return [torch.randn(TOKENS, CLASSES) * 3.0, torch.randint(0, CLASSES, (TOKENS,))]


def get_init_inputs():
    return []
