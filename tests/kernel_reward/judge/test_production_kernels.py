"""Zero false positives on production Triton kernels.

liger-kernel 0.8.5's ten Triton kernels, inlined from the INSTALLED wheel at test time (``benchmarks.
production_kernels``; the dev extra pins the wheel), are honest and correct against their PyTorch references, so
kernel_reward must score every one ``correct``: none ``hacked``, none rejected by the static screen. Under the CPU
interpreter all ten run since the interpreter shims (float kernel arguments as fp32 scalars, libdevice math): a
kernel that stops running there fails its test with the gap named (``report.interpreter_gap``), never silently.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest

from benchmarks.production_kernels import liger
from benchmarks.production_kernels.inline import InlineError, inline_module, package_version
from kernel_reward.screen.static_checks import check_candidate
from tests.kernel_reward.conftest import REPO_ROOT

NAMES = [kernel.name for kernel in liger.KERNELS]
needs_liger = pytest.mark.skipif(
    importlib.util.find_spec("liger_kernel") is None,
    reason="liger-kernel is not installed (bash scripts/bootstrap.sh dev)",
)


def test_pinned_wheel_is_installed():
    assert importlib.util.find_spec("liger_kernel") is not None, "pip install liger-kernel==0.8.5 (dev extra)"
    assert package_version("liger_kernel") == liger.PINNED_VERSION


@needs_liger
@pytest.mark.parametrize("name", NAMES)
def test_candidate_is_self_contained_and_passes_the_static_screen(name):
    source = liger.BY_NAME[name].candidate_code()
    liger.assert_self_contained(source, "liger_kernel")  # no import of liger, by any spelling
    assert "@triton.jit" in source and "class ModelNew(nn.Module)" in source
    assert check_candidate(source).findings == []


def test_self_containment_check_names_every_spelling():
    for source in (
        "import liger_kernel.ops\n",
        "from liger_kernel.ops.utils import x\n",
        "from .utils import x\n",
        "import importlib\nm = importlib.import_module('liger_kernel.utils')\n",
    ):
        with pytest.raises(ValueError, match="line"):
            liger.assert_self_contained(source, "liger_kernel")


@needs_liger
def test_candidates_run_without_liger_importable(tmp_path):
    """Import every candidate with liger_kernel made unimportable and run it on the reference's small inputs under
    the interpreter: an independent check (no kernel_reward) that the files are self-contained and right."""
    for kernel in liger.KERNELS:
        (tmp_path / f"{kernel.name}_reference.py").write_text(kernel.reference_code("small"))
        (tmp_path / f"{kernel.name}_candidate.py").write_text(kernel.candidate_code())
    script = textwrap.dedent(f"""
        import json, sys
        sys.modules["liger_kernel"] = None  # any import of it now raises ImportError
        from kernel_reward.runner.interpreter_shims import install_interpreter_shims
        install_interpreter_shims()
        import torch
        from kernel_reward.common.loading import import_from_file
        errors = {{}}
        for name in {NAMES!r}:
            ref = import_from_file(__import__("pathlib").Path(r"{tmp_path}") / f"{{name}}_reference.py", name + "_ref")
            cand = import_from_file(__import__("pathlib").Path(r"{tmp_path}") / f"{{name}}_candidate.py", name + "_cand")
            torch.manual_seed(0)
            model = ref.Model(*ref.get_init_inputs())
            new = cand.ModelNew(*ref.get_init_inputs())
            new.load_state_dict(model.state_dict())
            inputs = ref.get_inputs()
            with torch.no_grad():
                want, got = model(*inputs), new(*inputs)
            want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
            errors[name] = max((w - g).abs().max().item() for w, g in zip(want, got))
        print(json.dumps(errors))
    """)
    env = dict(os.environ, TRITON_INTERPRET="1")
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    errors = json.loads(proc.stdout.strip().splitlines()[-1])
    assert sorted(errors) == sorted(NAMES)
    assert all(error < 1e-4 for error in errors.values()), errors


@pytest.fixture(scope="module")
def cpu_report(tmp_path_factory):
    """One CLI run over all ten kernels on the CPU interpreter (what `--device cpu` prints and writes)."""
    out = tmp_path_factory.mktemp("production_cpu") / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.production_kernels", "--device", "cpu", "--out", str(out)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text()), proc.stdout


@needs_liger
@pytest.mark.parametrize("name", NAMES)
def test_interpreter_scores_every_kernel_correct(name, cpu_report):
    report, _ = cpu_report
    row = next(row for row in report["kernels"] if row["kernel"] == name)
    assert row["verdict"] == "correct", (
        f"{name}: {row['verdict']} (interpreter gap: {row['interpreter_gap']}; hack reasons {row['hack_reasons']}; "
        f"static {row['static_findings']}); error: {(row['error'] or '')[-1500:]}"
    )
    assert row["hack_reasons"] == [] and row["static_findings"] == []
    assert row["result"]["mode"] == "interpreter" and row["result"]["launched_kernels"]


@needs_liger
def test_cli_table_and_report(cpu_report):
    report, stdout = cpu_report
    assert report["liger_kernel"] == liger.PINNED_VERSION and report["size"] == "small"
    assert report["false_positives"] == [] and report["interpreter_unsupported"] == []
    assert [row["kernel"] for row in report["kernels"]] == NAMES
    assert stdout.splitlines()[0].split()[:3] == ["kernel", "status", "speedup"]
    assert "10 correct, 0 interpreter_unsupported, 0 false positives" in stdout


USES_NEXTAFTER = """
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def step(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, libdevice.nextafter(tl.load(x_ptr + offs), 1.0))
"""


def test_interpreter_gaps_are_named_not_bare_runtime_errors():
    from kernel_reward.common.interpreter_gaps import interpreter_gap
    from kernel_reward.judge.pipeline import mark_interpreter_gap
    from kernel_reward.result import EvalResult, Status

    shim_error = (
        "Traceback ...\nNotImplementedError: triton.language.extra.libdevice.nextafter has no implementation "
        "under the Triton interpreter (an interpreter gap, not a fault of the kernel: it runs on the GPU)"
    )
    assert "libdevice function" in interpreter_gap(shim_error) and "libdevice.nextafter" in interpreter_gap(
        shim_error
    )
    assert "inline-asm" in interpreter_gap(
        "NotImplementedError: inline_asm not supported in interpreter mode"
    )
    assert interpreter_gap("IndexError: list index out of range") is None

    def marked(mode, status, error, code=USES_NEXTAFTER):
        result = EvalResult(status=status, error=error, mode=mode)
        mark_interpreter_gap(result, code)
        return result

    gap = marked("interpreter", Status.RUNTIME_ERROR, shim_error)
    assert gap.status == Status.INTERPRETER_UNSUPPORTED and gap.scored
    assert "libdevice.nextafter (line 10)" in gap.error
    assert EvalResult.from_dict(gap.to_dict()).status == Status.INTERPRETER_UNSUPPORTED
    assert (
        marked("gpu", Status.RUNTIME_ERROR, shim_error).status == Status.RUNTIME_ERROR
    )  # only the interpreter's
    assert (
        marked("interpreter", Status.INCORRECT, shim_error).status == Status.INCORRECT
    )  # a wrong answer is no gap
    plain = marked("interpreter", Status.RUNTIME_ERROR, "IndexError: list index out of range")
    assert plain.status == Status.RUNTIME_ERROR and plain.scored
    # The text alone decides nothing: a source without the construct keeps its failure (forge_interpreter_gap).
    forged = marked("interpreter", Status.RUNTIME_ERROR, shim_error, code="import torch\nx = 1\n")
    assert forged.status == Status.RUNTIME_ERROR
    # Text of another kind than the source's construct: no label either.
    driver_text = "RuntimeError: 0 active drivers ([]). There should only be one."
    assert marked("interpreter", Status.RUNTIME_ERROR, driver_text).status == Status.RUNTIME_ERROR


def test_the_judge_reads_interpreter_gaps_from_the_source():
    from kernel_reward.common.interpreter_gaps import DRIVER, EXTERN, FAST_MATH, LIBDEVICE, gaps_in_source

    code = """
import triton
import triton.language as tl
import triton.language.extra.cuda.libdevice as ld
from triton.language.extra.libdevice import fast_sinf, tanh, j0


@triton.jit
def k(x_ptr):
    x = tl.load(x_ptr)
    y = ld.fast_expf(x) + ld.erfcinv(x) + ld.tanh(x)
    z = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1)
    tl.store(x_ptr, y + z)


props = triton.runtime.driver.active.utils.get_device_properties(0)
"""
    found = {(gap.kind, gap.name, gap.line) for gap in gaps_in_source(code)}
    assert found == {
        (FAST_MATH, "libdevice.fast_sinf", 5),
        (LIBDEVICE, "libdevice.j0", 5),
        (FAST_MATH, "libdevice.fast_expf", 11),
        (LIBDEVICE, "libdevice.erfcinv", 11),
        (EXTERN, "tl.inline_asm_elementwise", 12),
        (DRIVER, "triton.runtime.driver.active", 16),
    }
    assert gaps_in_source("def broken(:\n") == []


def test_a_correct_cpu_answer_with_fast_math_is_flagged():
    from kernel_reward.judge.pipeline import mark_interpreter_gap
    from kernel_reward.result import EvalResult, Status

    code = "from triton.language.extra import libdevice\ny = libdevice.fast_sinf\n"
    result = EvalResult(status=Status.CORRECT, mode="interpreter")
    mark_interpreter_gap(result, code)
    assert result.status == Status.CORRECT and "interpreter_exact_fast_math" in result.flags
    assert result.correctness["interpreter_exact_math"] == ["libdevice.fast_sinf (line 2)"]
    on_gpu = EvalResult(status=Status.CORRECT, mode="gpu")
    mark_interpreter_gap(on_gpu, code)
    assert on_gpu.flags == []


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--kernels", "rms_norm,nope"], "unknown ['nope']"),
        (["--device", "tpu"], "expected cpu, cuda or cuda:N"),
        (["--workers", "0"], "--workers must be >= 1"),
    ],
)
def test_cli_rejects_bad_arguments(argv, message, capsys):
    from benchmarks.production_kernels.__main__ import main

    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_cli_help():
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.production_kernels", "--help"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "do_bench" in proc.stdout and "--device" in proc.stdout


# ------------------------------------------------------------------------------------------------- the inliner
def _package(tmp_path, monkeypatch, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = tmp_path / "fakepkg" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path))


def test_inliner_follows_re_exports_and_aliases_and_keeps_only_what_is_reached(tmp_path, monkeypatch):
    _package(
        tmp_path,
        monkeypatch,
        {
            "__init__.py": "",
            "base.py": "import math\n\ndef scale(x):\n    return x * math.pi\n\nUNUSED = 1\n",
            "mid.py": "from fakepkg.base import scale\n",
            "ops.py": (
                "from fakepkg.mid import scale as s\n\ndef unused():\n    pass\n\n"
                "def op(x):\n    return s(x) + 1\n"
            ),
        },
    )
    source = inline_module("fakepkg.ops", ["op"])
    assert "fakepkg" not in source.replace("# ---- from fakepkg", "")
    assert "UNUSED" not in source and "def unused" not in source
    namespace: dict = {}
    exec(compile(source, "<inlined>", "exec"), namespace)  # plain Python: no Triton involved here
    assert namespace["op"](1.0) == pytest.approx(3.141592653589793 + 1)


@pytest.mark.parametrize(
    "files, root, message",
    [
        (
            {"ops.py": "import fakepkg.base\n\ndef op():\n    return fakepkg.base.helper()\n"},
            "op",
            "cannot be inlined",
        ),
        ({"ops.py": "from fakepkg.base import *\n\ndef op():\n    pass\n"}, "op", "star import"),
        (
            {"ops.py": "def op():\n    from fakepkg.base import helper\n    return helper()\n"},
            "op",
            "nested import",
        ),
        ({"ops.py": "def op():\n    pass\n"}, "missing", "does not define 'missing'"),
        (
            {
                "ops.py": "from fakepkg.base import helper\n\nhelper2 = 1\n\ndef op():\n    return helper() + helper2\n",
                "base.py": "helper2 = 2\n\ndef helper():\n    return helper2\n",
            },
            "op",
            "bound differently",
        ),
    ],
)
def test_inliner_refuses_what_it_cannot_inline_faithfully(tmp_path, monkeypatch, files, root, message):
    _package(tmp_path, monkeypatch, {"__init__.py": "", "base.py": "def helper():\n    return 1\n", **files})
    with pytest.raises(InlineError, match=message):
        inline_module("fakepkg.ops", [root])


def test_inliner_needs_the_package_installed():
    with pytest.raises(InlineError, match="not installed"):
        inline_module("no_such_package_here.ops", ["op"])


# ------------------------------------------------------------------------------------------------------ GPU
@pytest.fixture(scope="module")
def gpu_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("production_gpu") / "report.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.production_kernels",
            "--device",
            "cuda",
            "--do-bench-repeats",
            "1",
            "--out",
            str(out),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text())


@pytest.mark.gpu
@needs_liger
@pytest.mark.parametrize("name", NAMES)
def test_gpu_scores_every_kernel_correct_beside_do_bench(name, gpu_report):
    """Full (realistic) sizes on the GPU: correct, timed, and the independent do_bench run agrees on outputs."""
    row = next(row for row in gpu_report["kernels"] if row["kernel"] == name)
    assert row["verdict"] == "correct", (
        row["verdict"],
        row["hack_reasons"],
        row["flags"],
        (row["error"] or "")[-1500:],
    )
    assert row["result"]["mode"] == "gpu" and row["speedup"] is not None and row["speedup"] > 0
    assert row["do_bench_error"] is None, row["do_bench_error"]
    assert (
        row["do_bench"]["outputs_match"]
        and row["do_bench"]["inputs_unchanged"]
        and row["do_bench"]["speedup"] > 0
    )


def test_inliner_ignores_what_the_roots_never_reach(tmp_path, monkeypatch):
    """A statement it could not inline is only an error when a root needs it."""
    _package(
        tmp_path,
        monkeypatch,
        {
            "__init__.py": "",
            "base.py": "def helper():\n    return 1\n",
            "ops.py": (
                "import fakepkg.base\n\ndef other():\n    from fakepkg.base import helper\n    return helper()\n\n"
                "def op():\n    return 2\n"
            ),
        },
    )
    namespace: dict = {}
    exec(compile(inline_module("fakepkg.ops", ["op"]), "<inlined>", "exec"), namespace)
    assert namespace["op"]() == 2 and "other" not in namespace


def test_inliner_refuses_a_def_shadowing_a_helpers_import(tmp_path, monkeypatch):
    """In one file the op module's own `log` would replace the math.log the helper calls: refused."""
    _package(
        tmp_path,
        monkeypatch,
        {
            "__init__.py": "",
            "base.py": "from math import log\n\ndef helper(x):\n    return log(x)\n",
            "ops.py": "from fakepkg.base import helper\n\ndef log(x):\n    return -1\n\ndef op(x):\n    return helper(x) + log(x)\n",
        },
    )
    with pytest.raises(InlineError, match="'log' is bound differently"):
        inline_module("fakepkg.ops", ["op"])
