"""Corpus task (GPU only): an fp32 2048 x 2048 x 2048 matmul, long enough that a copy of its output is a few
percent of the device time (what strict mode's coverage floor is about)."""

import torch
import torch.nn as nn

N = 2048


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a @ b


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs():
    return []
