"""The task: relu(x + y) on two vectors. A reference program defines Model, get_inputs and get_init_inputs."""

import torch
import torch.nn as nn

N = 4096


class Model(nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y)


def get_inputs():
    return [torch.randn(N), torch.randn(N)]


def get_init_inputs():
    return []
