"""Ray backend of the ``Evaluator``: reward worker actors on every node of a Ray cluster.

Each ``RewardWorker`` actor owns one local warm pool (``pool.DevicePool``) for its device, so every candidate still
runs in its own sandboxed child process; the actor only replaces the in-process queue. On GPUs an actor takes
``num_gpus=1`` (Ray sets CUDA_VISIBLE_DEVICES for it); on a CPU-only cluster actors take ``num_cpus=1`` and run the
Triton interpreter. Actors come from one of two places:

* long-lived, named, detached actors started by ``python -m kernel_reward serve`` (or
  ``scripts/serve_rewards.py``) in the ``kernel_reward`` namespace: an ``Evaluator(backend="ray",
  ray_address=...)`` finds and uses them;
* otherwise the backend starts its own actors and kills them when the Evaluator closes.

A request whose actor (or node) dies is sent again to another live actor, at most ``max_attempts`` times in all;
the retries are counted in ``EvalResult.attempts``, never returned as extra results.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from kernel_reward.request import EvalRequest
from kernel_reward.result import EvalResult, Status
from kernel_reward.service.config import ServiceConfig, default_workers
from kernel_reward.service.pool import DevicePool, Job

log = logging.getLogger(__name__)

NAMESPACE = "kernel_reward"
ACTOR_PREFIX = "kernel_reward_worker_"


def _ray():
    try:
        import ray
    except ImportError as exc:  # optional extra
        raise ImportError(
            "backend='ray' needs the optional Ray extra: pip install 'drkernel-rl[ray]'"
        ) from exc
    return ray


class RewardWorkerImpl:
    """The body of a reward worker actor (wrapped with ``ray.remote`` lazily, so importing needs no Ray)."""

    def __init__(self, device: str, workers: int, service: dict[str, Any]) -> None:
        import queue

        if device == "cuda":
            device = "cuda:0"  # Ray gives the actor one GPU through CUDA_VISIBLE_DEVICES
        self.device = device
        self.queue: queue.Queue = queue.Queue()
        self.pool = DevicePool(ServiceConfig.from_dict(service).for_device(device, workers), self.queue)

    def evaluate(self, request: dict[str, Any]) -> dict[str, Any]:
        job = Job(request=EvalRequest.from_dict(request))
        self.queue.put(job)
        return job.future.result().to_dict()

    def info(self) -> dict[str, Any]:
        import os
        import socket

        return {
            "device": self.device,
            "workers": self.pool.config.workers,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "pool_id": self.pool.pool_id,
        }

    def shutdown(self) -> None:
        self.pool.close()


def remote_worker_class(ray: Any, *, gpu: bool, workers: int) -> Any:
    resources = {"num_gpus": 1} if gpu else {"num_cpus": 1}
    # Threaded actor: each concurrent call waits on its own candidate while the pool's slots do the work.
    return ray.remote(max_concurrency=max(4, 4 * workers), max_restarts=2, **resources)(RewardWorkerImpl)


def start_workers(
    ray: Any,
    *,
    num_actors: int,
    device: str,
    workers: int,
    service: ServiceConfig,
    detached: bool = False,
    name_offset: int = 0,
) -> list[Any]:
    gpu = device != "cpu"
    cls = remote_worker_class(ray, gpu=gpu, workers=workers)
    actors = []
    for i in range(num_actors):
        options: dict[str, Any] = {}
        if detached:
            options = {
                "name": f"{ACTOR_PREFIX}{name_offset + i}",
                "lifetime": "detached",
                "namespace": NAMESPACE,
            }
        actors.append(cls.options(**options).remote("cuda" if gpu else "cpu", workers, service.to_dict()))
    ray.get([actor.info.remote() for actor in actors])  # fail now, clearly, if an actor cannot start
    return actors


def find_served_workers(ray: Any) -> list[Any]:
    names = [
        a["name"]
        for a in ray.util.list_named_actors(all_namespaces=True)
        if a.get("namespace") == NAMESPACE and a["name"].startswith(ACTOR_PREFIX)
    ]
    return [ray.get_actor(name, namespace=NAMESPACE) for name in sorted(names)]


class RayBackend:
    """Dispatches jobs to reward worker actors and retries them elsewhere when an actor dies."""

    def __init__(
        self,
        *,
        device: Any = None,
        address: str | None = None,
        num_actors: int | None = None,
        service: ServiceConfig,
    ) -> None:
        ray = self.ray = _ray()
        self.initialized_here = not ray.is_initialized()
        if self.initialized_here:
            ray.init(address=address, namespace=NAMESPACE, include_dashboard=False, log_to_driver=False)
        self.max_attempts = service.max_attempts
        self.owned: list[Any] = []
        self.actors = find_served_workers(ray)
        if self.actors:
            self.workers_per_actor = service.workers or 2
            log.info("using %d served reward workers", len(self.actors))
        else:
            resources = ray.cluster_resources()
            gpus = int(resources.get("GPU", 0))
            cpu_only = device == "cpu" or gpus == 0
            count = num_actors or (max(1, int(resources.get("CPU", 1)) // 2) if cpu_only else gpus)
            self.workers_per_actor = service.workers or (1 if cpu_only else default_workers("cuda:0"))
            self.owned = start_workers(
                ray,
                num_actors=count,
                device="cpu" if cpu_only else "cuda",
                workers=self.workers_per_actor,
                service=service,
            )
            self.actors = list(self.owned)
        self.in_flight: dict[Any, tuple[Job, Any]] = {}  # ObjectRef -> (job, actor)
        self.load = {id(a): 0 for a in self.actors}
        self.dead: set[int] = set()
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._collect, name="ray-collector", daemon=True)
        self.thread.start()

    @property
    def capacity(self) -> int:
        return max(1, len(self.actors) * self.workers_per_actor)

    def submit(self, job: Job) -> None:
        if not job.future.set_running_or_notify_cancel():
            return
        job.attempts = 0
        self._dispatch(job)

    def _dispatch(self, job: Job) -> None:
        job.attempts += 1
        with self.lock:
            live = [a for a in self.actors if id(a) not in self.dead]
            if not live:
                job.future.set_result(
                    EvalResult.failure(
                        Status.CRASHED,
                        "infrastructure failure: no live Ray reward worker is left",
                        attempts=job.attempts,
                        scored=False,
                    )
                )
                return
            actor = min(live, key=lambda a: self.load[id(a)])
            self.load[id(actor)] += 1
            ref = actor.evaluate.remote(job.request.to_dict())
            self.in_flight[ref] = (job, actor)

    def _collect(self) -> None:
        ray = self.ray
        while not self.stopping.is_set():
            with self.lock:
                refs = list(self.in_flight)
            if not refs:
                time.sleep(0.02)
                continue
            ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0.1, fetch_local=True)
            for ref in ready:
                with self.lock:
                    job, actor = self.in_flight.pop(ref)
                    self.load[id(actor)] -= 1
                try:
                    result = EvalResult.from_dict(ray.get(ref))
                except (
                    ray.exceptions.RayActorError,
                    ray.exceptions.WorkerCrashedError,
                    ray.exceptions.NodeDiedError,
                ) as exc:
                    self._actor_failed(job, actor, exc)
                    continue
                except Exception as exc:  # noqa: BLE001 - any other task failure: one result, never lost
                    result = EvalResult.failure(Status.CRASHED, f"Ray task failed: {exc!r}")
                result.attempts += job.attempts - 1
                job.future.set_result(result)
            with self.lock:
                cancelled = [ref for ref, (job, _) in self.in_flight.items() if job.cancel.is_set()]
            for ref in cancelled:
                ray.cancel(ref, force=False)

    def _actor_failed(self, job: Job, actor: Any, exc: Exception) -> None:
        log.warning(
            "Ray reward worker failed (attempt %d/%d): %s",
            job.attempts,
            self.max_attempts,
            str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
        )
        if not self._alive(actor):
            with self.lock:
                self.dead.add(id(actor))
        if job.attempts >= self.max_attempts:
            job.future.set_result(
                EvalResult.failure(
                    Status.CRASHED,
                    f"infrastructure failure: Ray reward workers failed {job.attempts} time(s); last: "
                    f"{type(exc).__name__}",
                    attempts=job.attempts,
                    scored=False,
                )
            )
        else:
            self._dispatch(job)

    def _alive(self, actor: Any) -> bool:
        try:
            self.ray.get(actor.info.remote(), timeout=10)
            return True
        except Exception:  # noqa: BLE001 - dead, restarting past its budget, or unreachable
            return False

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=5)
        with self.lock:
            pending, self.in_flight = list(self.in_flight.values()), {}
        for job, _ in pending:
            if not job.future.done():
                job.future.set_result(
                    EvalResult.failure(
                        Status.CRASHED,
                        "cancelled: the Evaluator was closed",
                        flags=["cancelled"],
                        attempts=job.attempts,
                        scored=False,
                    )
                )
        for actor in self.owned:
            try:
                self.ray.get(actor.shutdown.remote(), timeout=30)
            except Exception:  # noqa: BLE001 - already dead
                pass
            self.ray.kill(actor)
        if self.initialized_here:
            self.ray.shutdown()
