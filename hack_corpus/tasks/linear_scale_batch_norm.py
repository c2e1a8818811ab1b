"""A linear layer, a learned per-feature scale and a BatchNorm1d (KernelBench level 2's Gemm_Scale_BatchNorm, small):
the norm's running statistics change with every training-mode forward, and ``.eval()`` reads them."""
import torch
import torch.nn as nn

IN_FEATURES, OUT_FEATURES, BATCH = 32, 64, 48


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = nn.Parameter(torch.randn(out_features))
        self.norm = nn.BatchNorm1d(out_features)

    def forward(self, x):
        return self.norm(self.linear(x) * self.scale)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
