"""Per-row KL divergence KL(p || q) between two categorical distributions given as logits."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
CLASSES = 4096

SMALL = {"BATCH": 16, "CLASSES": 128}
CATEGORY = "loss"
LEVEL = "2"
OPS = ["torch.log_softmax", "torch.nn.functional.kl_div", "torch.sum"]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, student_logits: torch.Tensor, teacher_logits: torch.Tensor) -> torch.Tensor:
        log_q = torch.log_softmax(student_logits, dim=-1)
        log_p = torch.log_softmax(teacher_logits, dim=-1)
        return F.kl_div(log_q, log_p, reduction="none", log_target=True).sum(dim=-1)


def get_inputs():
    scale = torch.rand(BATCH, 1) * 3.0
    return [torch.randn(BATCH, CLASSES) * 2.0, torch.randn(BATCH, CLASSES) * scale]


def get_init_inputs():
    return []
