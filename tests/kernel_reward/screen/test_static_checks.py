"""Static checks: each hack shape gets its named reason; honest code gets none (no false positives)."""

import pytest

from kernel_reward.screen.static_checks import StaticReason, check_candidate

HONEST = """
import math
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim) / math.sqrt(dim))

    def forward(self, x):
        y = x.clone()
        kernel[(triton.cdiv(y.numel(), 128),)](y, y.numel(), BLOCK=128)
        return y
"""


def reasons(source: str) -> set[str]:
    return set(check_candidate(source).reasons)


def test_honest_code_has_no_findings():
    assert check_candidate(HONEST).findings == []


@pytest.mark.parametrize(
    "handler",
    [
        "return False",
        "return None",
        "pass",
        "raise",
        "flag = None",
        "warnings.warn('no libdevice')",
    ],
)
def test_environment_probes_are_not_fallbacks(handler):
    """A try whose handler only answers a question about the environment (a version compare, a device lookup, as
    production Triton libraries write them) cannot hide a failing kernel."""
    probe = f"import importlib, warnings\ndef probe(name):\n    try:\n        return importlib.import_module(name)\n    except ImportError:\n        {handler}\n"
    assert "try_except" not in reasons(HONEST + probe) and "forbidden_import" not in reasons(HONEST + probe)


@pytest.mark.parametrize(
    "handler", ["return torch.relu(x + y)", "return x + y", "out = x.relu()", "return F.gelu(x)"]
)
def test_handlers_that_compute_are_fallbacks(handler):
    source = f"def f(x, y):\n    try:\n        return add(x, y)\n    except Exception:\n        {handler}\n"
    assert "try_except" in reasons(HONEST + source)


def test_autotuned_kernel_counts_as_triton():
    source = HONEST.replace("@triton.jit", "@triton.autotune(configs=[], key=['n'])\n@triton.jit")
    assert "no_triton_kernel" not in reasons(source)


@pytest.mark.parametrize(
    ("snippet", "reason"),
    [
        ("class ModelNew(Model):\n    pass\n", StaticReason.INHERITS_REFERENCE),
        ("def f(x):\n    return Model()(x)\n", StaticReason.USES_REFERENCE),
        (
            "def f(x):\n    try:\n        return x\n    except Exception:\n        return x\n",
            StaticReason.TRY_EXCEPT,
        ),
        ("import threading\n", StaticReason.FORBIDDEN_IMPORT),
        ("from multiprocessing import Pool\n", StaticReason.FORBIDDEN_IMPORT),
        ("import subprocess as sp\n", StaticReason.FORBIDDEN_IMPORT),
        ("import ctypes\n", StaticReason.FORBIDDEN_IMPORT),
        ("import socket\n", StaticReason.FORBIDDEN_IMPORT),
        ("import gc\n", StaticReason.FORBIDDEN_IMPORT),
        ("import os\nos.system('ls')\n", StaticReason.FORBIDDEN_CALL),
        ("from os import _exit\n", StaticReason.FORBIDDEN_IMPORT),
        ("import sys\nsys.exit(0)\n", StaticReason.FORBIDDEN_CALL),
        ("data = open('/etc/passwd').read()\n", StaticReason.FORBIDDEN_CALL),
        ("exec('x = 1')\n", StaticReason.FORBIDDEN_CALL),
        ("m = __import__('os')\n", StaticReason.FORBIDDEN_CALL),
        ("w = torch.load('weights.pt')\n", StaticReason.FORBIDDEN_CALL),
        ("import time\ntime.perf_counter = lambda: 0.0\n", StaticReason.MONKEY_PATCH),
        ("torch.cuda.synchronize = lambda: None\n", StaticReason.MONKEY_PATCH),
        ("import torch as t\nt.backends.cuda.matmul.allow_tf32 = True\n", StaticReason.MONKEY_PATCH),
        ("setattr(torch, 'allclose', lambda *a, **k: True)\n", StaticReason.MONKEY_PATCH),
        ("import os\nos.environ['TRITON_INTERPRET'] = '0'\n", StaticReason.MONKEY_PATCH),
        ("s = torch.cuda.Stream()\n", StaticReason.CUDA_STREAM),
        ("with torch.cuda.stream(s):\n    pass\n", StaticReason.CUDA_STREAM),
        ("from torch.cuda import Stream\n", StaticReason.CUDA_STREAM),
        ("g = torch.cuda.CUDAGraph()\n", StaticReason.CUDA_STREAM),
        ("def f():\n    return f.__globals__\n", StaticReason.INTROSPECTION),
    ],
)
def test_hack_shapes_are_named(snippet, reason):
    source = HONEST + "\n" + snippet
    assert reason.value in reasons(source), check_candidate(source).findings


def test_missing_model_new_and_syntax_error_are_compile_findings():
    missing = check_candidate(HONEST.replace("class ModelNew", "class ModelFast"))
    assert [f.reason for f in missing.compile_findings] == [StaticReason.MISSING_MODEL_NEW]
    broken = check_candidate("def f(:\n")
    assert [f.reason for f in broken.compile_findings] == [StaticReason.SYNTAX_ERROR]
    assert broken.findings[0].line == 1


def test_no_triton_kernel():
    assert "no_triton_kernel" in reasons("import torch.nn as nn\nclass ModelNew(nn.Module):\n    pass\n")


def test_custom_entry_point_name():
    source = HONEST.replace("class ModelNew(nn.Module)", "class ModelNew(Reference)")
    assert "inherits_reference" in set(check_candidate(source, entry_point="Reference").reasons)
    assert "inherits_reference" not in set(check_candidate(source, entry_point="Model").reasons)


def test_main_guard_self_test_is_not_checked():
    harness = (
        "\n\nif __name__ == '__main__':\n"
        "    import time\n"
        "    ref = Model(4)\n"
        "    try:\n"
        "        print(time.perf_counter())\n"
        "    except Exception:\n"
        "        value = time.perf_counter() * 2\n"
    )
    assert check_candidate(HONEST + harness).findings == []
    # ...but only that guard: the same code at module level is checked.
    assert {"uses_reference", "try_except"} <= set(
        check_candidate(HONEST + harness.replace("if __name__ == '__main__':", "if True:")).reasons
    )


def test_import_fallback_try_is_allowed():
    fallback = (
        "\ntry:\n    from triton.language.extra import libdevice\n"
        "except ImportError:\n    from triton.language.extra.cuda import libdevice\n"
    )
    assert check_candidate(HONEST + fallback).findings == []


# Environment probes written the way production Triton libraries write them (liger-kernel 0.8.5's helpers have
# these three shapes): the handler answers with a value that cannot be a torch result. Each was a `try_except`
# false positive on liger's inlined kernels.
PROBES_WITH_CONSTANT_ANSWERS = {
    "parameter_with_constant_default": (
        "import functools\n"
        "@functools.cache\n"
        "def core_count(default: int = 20) -> int:\n"
        "    try:\n"
        "        return int(triton.runtime.driver.active.utils.get_device_properties(0)['cores'])\n"
        "    except Exception:\n"
        "        return default\n"
        "CORES = core_count()\n"
    ),
    "empty_tuple": (
        "try:\n"
        "    from torch.distributed.tensor import DTensor as _DTensor\n"
        "except Exception:\n"
        "    _DTensor = ()\n"
    ),
    "local_from_constant_function": (
        "def device_kind():\n"
        "    if torch.cuda.is_available():\n"
        "        return 'cuda'\n"
        "    return 'cpu'\n"
        "def arch(index=0):\n"
        "    kind = device_kind()\n"
        "    try:\n"
        "        if kind == 'cuda':\n"
        "            return 'sm_%d%d' % torch.cuda.get_device_capability(index)\n"
        "    except Exception:\n"
        "        return kind\n"
        "    return kind\n"
    ),
}


@pytest.mark.parametrize("name", sorted(PROBES_WITH_CONSTANT_ANSWERS))
def test_probes_answering_with_constant_values_are_not_fallbacks(name):
    source = HONEST + PROBES_WITH_CONSTANT_ANSWERS[name]
    assert check_candidate(source).findings == []


# The same handler shapes where the value can be a torch result: still fallbacks.
FALLBACKS_THROUGH_NAMES = {
    "answer_computed_before_try": (
        "def f(x, y):\n    ref = torch.relu(x + y)\n    try:\n        return add(x, y)\n"
        "    except Exception:\n        return ref\n"
    ),
    "answer_from_helper": (
        "def ref_fn(x, y):\n    return torch.relu(x + y)\n"
        "def f(x, y):\n    r = ref_fn(x, y)\n    try:\n        return add(x, y)\n    except Exception:\n        return r\n"
    ),
    "constant_then_rebound": (
        "def f(x, y):\n    r = None\n    r = torch.relu(x + y)\n    try:\n        return add(x, y)\n"
        "    except Exception:\n        return r\n"
    ),
    "augmented_rebinding": (
        "def f(x, y):\n    r = 0\n    r += torch.relu(x + y)\n    try:\n        return add(x, y)\n"
        "    except Exception:\n        return r\n"
    ),
    "parameter_passed_the_answer": (
        "def f(x, y, fallback=None):\n    try:\n        return add(x, y)\n    except Exception:\n        return fallback\n"
        "def g(x, y):\n    return f(x, y, torch.relu(x + y))\n"
    ),
    "parameter_passed_by_keyword": (
        "def f(x, y, fallback=None):\n    try:\n        return add(x, y)\n    except Exception:\n        return fallback\n"
        "def g(x, y):\n    return f(x, y, fallback=torch.relu(x + y))\n"
    ),
    "function_escapes": (
        "def f(x, y, fallback=None):\n    try:\n        return add(x, y)\n    except Exception:\n        return fallback\n"
        "alias = f\ndef g(x, y):\n    return alias(x, y, torch.relu(x + y))\n"
    ),
    "decorator_injects_argument": (
        "def inject(fn):\n    return lambda x, y: fn(x, y, torch.relu(x + y))\n"
        "@inject\ndef f(x, y, fallback=None):\n    try:\n        return add(x, y)\n    except Exception:\n"
        "        return fallback\n"
    ),
    "tuple_holding_a_result": (
        "def f(x, y):\n    try:\n        return add(x, y)\n    except Exception:\n        return (torch.relu(x + y),)\n"
    ),
    "module_level_name": (
        "REF = torch.zeros(4)\n"
        "def f(x, y):\n    try:\n        return add(x, y)\n    except Exception:\n        return REF\n"
    ),
}


@pytest.mark.parametrize("name", sorted(FALLBACKS_THROUGH_NAMES))
def test_handlers_answering_with_computed_values_are_fallbacks(name):
    assert "try_except" in reasons(HONEST + FALLBACKS_THROUGH_NAMES[name])


def test_triton_function_names_are_the_jit_decorated_definitions():
    """The judge's own list of kernels that can be the candidate's: every function decorated with triton.jit
    (an alias, a call with options, under autotune, nested), and nothing else (a plain helper, a jit made by a
    call rather than a decorator, a name only mentioned in a string)."""
    from kernel_reward.screen.static_checks import triton_function_names

    source = """
import triton as tr
import triton.language as tl
from triton import jit


@tr.autotune(configs=[tr.Config({"BLOCK": 64})], key=["n"])
@tr.jit
def tuned(x_ptr, n, BLOCK: tl.constexpr):
    pass


@tr.jit(debug=True)
def with_options(x_ptr):
    pass


@jit
def imported(x_ptr):
    pass


def helper(x):
    @tr.jit
    def nested(x_ptr):
        pass

    return nested


made_by_call = tr.jit(helper)
NAME = "vectorized_elementwise_kernel"


class ModelNew:
    pass
"""
    assert triton_function_names(source) == {"tuned", "with_options", "imported", "nested"}
    assert triton_function_names("def broken(:") == frozenset()
