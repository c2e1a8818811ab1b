"""Plain-PyTorch reference programs (KernelBench format) for the production kernels of ``liger``.

One program per kernel: module-level UPPER_CASE size constants at realistic LLM sizes (the GPU run), a
``Model`` whose ``forward`` is the textbook PyTorch computation (what Hugging Face Transformers runs when liger is
not installed), ``get_inputs()`` (float32 CPU tensors; the harness moves them to the device) and
``get_init_inputs()``. ``SMALL`` holds the sizes the CPU interpreter runs (``kernel_reward.screen.sizes.resize_source``).
Parameters are drawn around their usual initial values so a wrong weight or bias shows in the output.
"""

from __future__ import annotations

HEADER = """import torch
import torch.nn as nn
import torch.nn.functional as F

"""

_ROWS = """
BATCH = 4
SEQ = 2048
HIDDEN = 4096


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN)]


def get_init_inputs():
    return [HIDDEN]
"""
ROWS_SMALL = {"BATCH": 2, "SEQ": 3, "HIDDEN": 100}

RMS_NORM = (
    '''"""RMSNorm as Llama computes it (HF LlamaRMSNorm, float32): x / sqrt(mean(x^2) + eps) * weight."""

class Model(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return x * torch.rsqrt(variance + 1e-6) * self.weight
'''
    + _ROWS
)

LAYER_NORM = (
    '''"""LayerNorm over the hidden dimension with an affine weight and bias."""

class Model(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))
        self.bias = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        return F.layer_norm(x, (x.shape[-1],), self.weight, self.bias, 1e-5)
'''
    + _ROWS
)

DYT = (
    '''"""Dynamic Tanh (DyT, a normalisation-free LayerNorm replacement): gamma * tanh(alpha * x) + beta."""

class Model(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.alpha = nn.Parameter(torch.ones(1) * 0.5)
        self.gamma = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))
        self.beta = nn.Parameter(0.1 * torch.randn(hidden))

    def forward(self, x):
        return self.gamma * torch.tanh(self.alpha * x) + self.beta
'''
    + _ROWS
)

_GATED = """
TOKENS = 4096
INTERMEDIATE = 14336


def get_inputs():
    return [torch.randn(TOKENS, INTERMEDIATE), torch.randn(TOKENS, INTERMEDIATE)]


def get_init_inputs():
    return []
"""
GATED_SMALL = {"TOKENS": 6, "INTERMEDIATE": 200}

SWIGLU = (
    '''"""SwiGLU activation of a gated MLP (Llama): silu(gate) * up."""

class Model(nn.Module):
    def forward(self, gate, up):
        return F.silu(gate) * up
'''
    + _GATED
)

GEGLU = (
    '''"""GeGLU activation of a gated MLP (Gemma): gelu_tanh(gate) * up."""

class Model(nn.Module):
    def forward(self, gate, up):
        return F.gelu(gate, approximate="tanh") * up
'''
    + _GATED
)

SOFTMAX = '''"""Softmax over the last dimension."""

ROWS = 4096
COLS = 8192


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
'''
SOFTMAX_SMALL = {"ROWS": 6, "COLS": 300}

_VOCAB = """
TOKENS = 4096
VOCAB = 32000
"""
VOCAB_SMALL = {"TOKENS": 5, "VOCAB": 700}

CROSS_ENTROPY = (
    '''"""Mean token cross entropy of LM logits against next-token targets."""
'''
    + _VOCAB
    + """

class Model(nn.Module):
    def forward(self, logits, target):
        return F.cross_entropy(logits, target)


def get_inputs():
    return [torch.randn(TOKENS, VOCAB), torch.randint(0, VOCAB, (TOKENS,))]


def get_init_inputs():
    return []
"""
)

KL_DIV = (
    '''"""KL divergence of a student's log-probabilities from a teacher's probabilities (reduction batchmean)."""
'''
    + _VOCAB
    + """

class Model(nn.Module):
    def forward(self, log_probs, target_probs):
        return F.kl_div(log_probs, target_probs, reduction="batchmean")


def get_inputs():
    return [torch.log_softmax(torch.randn(TOKENS, VOCAB), dim=-1), torch.softmax(torch.randn(TOKENS, VOCAB), dim=-1)]


def get_init_inputs():
    return []
"""
)

GROUP_NORM = '''"""GroupNorm of a (batch, channels, height, width) feature map with an affine weight and bias."""

BATCH = 16
NUM_GROUPS = 32
CHANNELS_PER_GROUP = 16
HEIGHT = 64
WIDTH = 64


class Model(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.groups = groups
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(channels))
        self.bias = nn.Parameter(0.1 * torch.randn(channels))

    def forward(self, x):
        return F.group_norm(x, self.groups, self.weight, self.bias, 1e-6)


def get_inputs():
    return [torch.randn(BATCH, NUM_GROUPS * CHANNELS_PER_GROUP, HEIGHT, WIDTH)]


def get_init_inputs():
    return [NUM_GROUPS * CHANNELS_PER_GROUP, NUM_GROUPS]
'''
GROUP_NORM_SMALL = {"BATCH": 2, "NUM_GROUPS": 4, "CHANNELS_PER_GROUP": 3, "HEIGHT": 5, "WIDTH": 7}

ROPE = '''"""Rotary position embedding of queries and keys as Llama applies it (HF apply_rotary_pos_emb).

cos / sin are the Llama rotary tables for positions 0..SEQ-1: cat(freqs, freqs), so both halves of a row are equal.
"""

BATCH = 4
SEQ = 2048
NUM_Q_HEADS = 32
NUM_KV_HEADS = 8
HEAD_DIM = 128


def rotate_half(x):
    first, second = x.chunk(2, dim=-1)
    return torch.cat((-second, first), dim=-1)


class Model(nn.Module):
    def forward(self, q, k, cos, sin):
        cos = cos.unsqueeze(1)
        sin = sin.unsqueeze(1)
        return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def get_inputs():
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, HEAD_DIM, 2).float() / HEAD_DIM))
    freqs = torch.outer(torch.arange(SEQ).float(), inv_freq)
    table = torch.cat((freqs, freqs), dim=-1)[None]  # (1, SEQ, HEAD_DIM)
    return [torch.randn(BATCH, NUM_Q_HEADS, SEQ, HEAD_DIM), torch.randn(BATCH, NUM_KV_HEADS, SEQ, HEAD_DIM),
            table.cos(), table.sin()]


def get_init_inputs():
    return []
'''
ROPE_SMALL = {"BATCH": 2, "SEQ": 5, "NUM_Q_HEADS": 4, "NUM_KV_HEADS": 2, "HEAD_DIM": 16}
