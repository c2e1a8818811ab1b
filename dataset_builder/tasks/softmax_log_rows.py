"""Log-softmax over the vocabulary dimension of language-model logits."""

import torch
import torch.nn as nn

TOKENS = 4096
VOCAB = 32000

SMALL = {"TOKENS": 16, "VOCAB": 256}
CATEGORY = "softmax"
LEVEL = "1"
OPS = ["torch.log_softmax"]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(logits, dim=-1)


def get_inputs():
    return [torch.randn(TOKENS, VOCAB) * 3.0]


def get_init_inputs():
    return []
