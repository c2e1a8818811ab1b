"""Index of the maximum along the class dimension (int64 output)."""

import torch
import torch.nn as nn

BATCH = 4096
CLASSES = 32000

SMALL = {"BATCH": 32, "CLASSES": 128}
CATEGORY = "reduction"
LEVEL = "1"
OPS = ["torch.argmax"]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        return torch.argmax(logits, dim=1)


def get_inputs():
    return [torch.randn(BATCH, CLASSES)]


def get_init_inputs():
    return []
