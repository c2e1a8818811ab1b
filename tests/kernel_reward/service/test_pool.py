"""kernel_reward.service.pool.ServiceConfig: the one service configuration handed from the Evaluator to its backend."""

import pytest

from kernel_reward import Evaluator, ServiceConfig
from kernel_reward.sandbox import SandboxPolicy


def test_a_device_pool_is_the_service_config_plus_the_device():
    service = ServiceConfig(workers=3, max_attempts=2, pool_options={"warm_spares": 2})
    pool = service.for_device("cuda:1")
    assert (pool.device, pool.workers, pool.max_attempts, pool.warm_spares) == ("cuda:1", 3, 2, 2)
    assert service.for_device("cpu", workers=5).workers == 5  # a Ray actor's own count wins


def test_the_config_crosses_to_a_ray_actor_as_plain_data():
    service = ServiceConfig(
        workers=2, policy=SandboxPolicy(isolate_network=False), pool_options={"warm_spares": 3}
    )
    data = service.to_dict()
    assert isinstance(data["policy"], dict)
    assert ServiceConfig.from_dict(data) == service


def test_bad_service_configs_are_named():
    with pytest.raises(ValueError, match="workers must be >= 1"):
        ServiceConfig(workers=0)
    with pytest.raises(ValueError, match="max_attempts must be >= 1"):
        ServiceConfig(max_attempts=0)
    with pytest.raises(ValueError, match=r"cannot set \['device', 'workers'\]"):
        ServiceConfig(pool_options={"workers": 2, "device": "cpu"})


def test_the_evaluator_takes_a_service_config_or_its_fields_not_both():
    with pytest.raises(ValueError, match="not both"):
        Evaluator(device="cpu", service=ServiceConfig(), workers=2)
