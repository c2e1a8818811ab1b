"""A linear layer, dropout and a row softmax (KernelBench level 2's Matmul_Dropout_Softmax, small): in training mode,
the reference's default, the output depends on the random number generator."""
import torch
import torch.nn as nn

IN_FEATURES, OUT_FEATURES, BATCH = 32, 64, 16


class Model(nn.Module):
    def __init__(self, in_features, out_features, dropout_p):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, x):
        return torch.softmax(self.dropout(self.linear(x)), dim=1)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES, 0.2]
