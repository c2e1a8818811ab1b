"""Corpus task: the running sum of a vector (tiny, for the Triton interpreter)."""

import torch
import torch.nn as nn

N = 256


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.cumsum(x, dim=0)


def get_inputs():
    return [torch.randn(N)]


def get_init_inputs():
    return []
