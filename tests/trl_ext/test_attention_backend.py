"""cuDNN's attention is turned off only where its backward fails the known case (pytorch/pytorch#196678)."""

from __future__ import annotations

import pytest
import torch

from trl_ext import attention_backend
from trl_ext.attention_backend import apply_cudnn_attention_choice, choose_cudnn_attention


def _never_called() -> bool:
    raise AssertionError("the probe ran")


def test_keep_never_probes():
    decision = choose_cudnn_attention("keep", cuda_available=True, probe=_never_called)
    assert decision.enabled and "keep" in decision.reason


def test_no_gpu_never_probes():
    decision = choose_cudnn_attention("auto", cuda_available=False, probe=_never_called)
    assert decision.enabled and "no GPU" in decision.reason


def test_a_failing_probe_turns_cudnn_off_and_names_the_bug():
    decision = choose_cudnn_attention("auto", cuda_available=True, probe=lambda: True)
    assert not decision.enabled and "196678" in decision.reason


def test_a_clean_probe_keeps_cudnn():
    decision = choose_cudnn_attention("auto", cuda_available=True, probe=lambda: False)
    assert decision.enabled and "finite" in decision.reason


def test_a_gpu_without_cudnn_attention_keeps_torchs_choice():
    def unavailable() -> bool:
        raise RuntimeError("No available kernel. Aborting execution.\nmore")

    decision = choose_cudnn_attention("auto", cuda_available=True, probe=unavailable)
    assert decision.enabled and "No available kernel" in decision.reason and "more" not in decision.reason


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="'auto' or 'keep'"):
        choose_cudnn_attention("off", cuda_available=True, probe=lambda: True)  # type: ignore[arg-type]


def test_apply_sets_torchs_switch_on_a_failing_probe(monkeypatch):
    monkeypatch.setattr(attention_backend.torch.cuda, "is_available", lambda: True)
    probed = []
    monkeypatch.setenv("LOCAL_RANK", "3")
    monkeypatch.setattr(attention_backend.torch.cuda, "device_count", lambda: 8)
    monkeypatch.setattr(
        attention_backend, "cudnn_attention_backward_fails", lambda device: probed.append(device) or True
    )
    was = torch.backends.cuda.cudnn_sdp_enabled()
    try:
        torch.backends.cuda.enable_cudnn_sdp(True)
        assert not apply_cudnn_attention_choice("auto").enabled
        assert not torch.backends.cuda.cudnn_sdp_enabled()
        assert probed == [torch.device("cuda", 3)]  # each rank probes its own GPU
        monkeypatch.setattr(attention_backend.torch.cuda, "device_count", lambda: 1)
        apply_cudnn_attention_choice("auto")
        assert probed[-1] == torch.device("cuda", 0)  # a launcher that shows each rank one GPU
    finally:
        torch.backends.cuda.enable_cudnn_sdp(was)


def test_the_probe_needs_cudnn_attention():
    """On the CPU torch has no cuDNN attention: the probe raises, which ``choose`` reads as 'torch won't use it'."""
    with pytest.raises(RuntimeError):
        attention_backend.cudnn_attention_backward_fails("cpu")


def test_the_scripts_take_the_option():
    from scripts.sft import SFTScriptArguments
    from scripts.train import TrainScriptArguments

    assert SFTScriptArguments().cudnn_attention == "auto"
    assert TrainScriptArguments(cudnn_attention="keep").cudnn_attention == "keep"


@pytest.mark.gpu
def test_after_auto_the_failing_case_has_finite_gradients():
    """On a GPU with the bug, the probe fails and SDPA (torch's own backend choice) is finite after the switch."""
    was = torch.backends.cuda.cudnn_sdp_enabled()
    try:
        decision = apply_cudnn_attention_choice("auto")
        print("cuDNN attention:", decision.reason)
        gradient = attention_backend.failing_case_query_gradient("cuda", only_cudnn=False)
        assert torch.isfinite(gradient).all(), decision.reason
    finally:
        torch.backends.cuda.enable_cudnn_sdp(was)
