"""Corpus task: a Linear layer (parameters exercise state transfer; matmul exercises precision)."""

import torch
import torch.nn as nn

M = 16
K = 32
N = 16


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return self.linear(x)


def get_inputs():
    return [torch.randn(M, K)]


def get_init_inputs():
    return [K, N]
