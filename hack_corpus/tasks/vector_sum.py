"""Corpus task: the sum of a vector (one output element; tiny, for the Triton interpreter)."""

import torch
import torch.nn as nn

N = 256


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.sum(dim=0, keepdim=True)


def get_inputs():
    return [torch.randn(N)]


def get_init_inputs():
    return []
