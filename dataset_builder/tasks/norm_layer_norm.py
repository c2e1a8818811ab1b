"""Layer normalization over the hidden dimension with learned scale and shift."""

import torch
import torch.nn as nn

BATCH = 16
SEQ = 1024
HIDDEN = 4096

SMALL = {"BATCH": 2, "SEQ": 16, "HIDDEN": 128}
CATEGORY = "norm"
LEVEL = "1"
OPS = ["torch.nn.LayerNorm"]


class Model(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=1e-5)
        # Non-trivial affine parameters so a kernel cannot ignore them.
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.5 * torch.randn(hidden))
            self.norm.bias.copy_(0.1 * torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN) * 2.0 + 0.5]


def get_init_inputs():
    return [HIDDEN]
