"""Corpus task (GPU only): relu(x + y) on 4M elements, large enough to time and profile."""

import torch
import torch.nn as nn

N = 4194304


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return torch.relu(x + y)


def get_inputs():
    return [torch.randn(N), torch.randn(N)]


def get_init_inputs():
    return []
