# corpus: task=add_relu expect=compile_error
"""Fault: a syntax error."""

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, y)
        return x + y
