"""kernel_reward.timing.gpu_state: the GPU's clock, temperature and power around a timing, never raising."""

import torch

from kernel_reward.result import EvalResult
from kernel_reward.timing import gpu_state


def test_a_sample_converts_units_and_names_what_nvml_could_not_read(monkeypatch):
    monkeypatch.setattr(torch.cuda, "clock_rate", lambda device: 1980)
    monkeypatch.setattr(torch.cuda, "temperature", lambda device: 41)
    monkeypatch.setattr(torch.cuda, "power_draw", lambda device: 312_500)  # milliwatts
    before = gpu_state.sample(torch.device("cuda:0"))
    assert (before.sm_clock_mhz, before.temperature_c, before.power_w, before.error) == (
        1980,
        41,
        312.5,
        None,
    )

    def no_nvml(device):
        raise ModuleNotFoundError("pynvml does not seem to be installed")

    monkeypatch.setattr(torch.cuda, "power_draw", no_nvml)
    after = gpu_state.sample(torch.device("cuda:0"))
    assert (
        after.power_w is None and after.sm_clock_mhz == 1980 and "power_w: ModuleNotFoundError" in after.error
    )

    record = gpu_state.around(before, after)
    assert record["start"]["sm_clock_mhz"] == 1980 and record["end"]["power_w"] is None
    result = EvalResult(gpu_state=record)
    assert EvalResult.from_dict(result.to_dict()).gpu_state == record
    assert (
        EvalResult.from_dict({k: v for k, v in result.to_dict().items() if k != "gpu_state"}).gpu_state
        is None
    )
