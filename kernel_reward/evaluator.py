"""``Evaluator``: the embedded execution service (a context manager owning warm, sandboxed worker pools).

    with Evaluator() as ev:                          # every visible GPU, or the CPU interpreter without one
        results = ev.evaluate_many([(reference, completion), ...])   # input order, progress bar when long

Backends: ``"local"`` (one ``pool.DevicePool`` per device, all pulling from one queue) and ``"ray"``
(``ray_backend.RayBackend``: worker actors on a Ray cluster, each running the same local pool inside).
Submissions beyond ``max_in_flight`` block (back-pressure); ``aevaluate`` / ``aevaluate_many`` are the asyncio
forms; cancelling an awaiting task kills the candidate's process. Leaving the context (also on Ctrl-C) kills
every worker process. Candidates that the checks running none of their code reject (no code block, syntax
error, a static hack: ``judge.pipeline.screen_request``) are answered here without taking a worker; their
isolation record says ``"level": "not_run"``.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import dataclasses
import functools
import importlib
import logging
import queue
import threading
import weakref
from collections.abc import Iterable, Sequence
from copy import deepcopy
from typing import Any, Literal, Protocol

from kernel_reward.options import EvalOptions, with_timeout
from kernel_reward.request import EvalRequest, identical_groups
from kernel_reward.result import EvalResult, Status
from kernel_reward.runtime import mode_of
from kernel_reward.sandbox import SandboxPolicy
from kernel_reward.service.config import ServiceConfig
from kernel_reward.service.pool import DevicePool, Job

log = logging.getLogger(__name__)

Pair = tuple[str, str] | tuple[str, str, str] | EvalRequest
_LIVE: weakref.WeakSet[Evaluator] = weakref.WeakSet()


class Backend(Protocol):
    def submit(self, job: Job) -> None: ...

    def close(self) -> None: ...

    @property
    def capacity(self) -> int: ...


def resolve_devices(device: str | Sequence[str] | None) -> list[str]:
    """``None`` / "cuda" -> every visible GPU ("cpu" when there is none); "cpu"; "cuda:N"; or a list of those."""
    if device is not None and not isinstance(device, str):
        devices = [d for item in device for d in resolve_devices(item)]
        if not devices:
            raise ValueError("Evaluator: empty device list")
        return devices
    if device == "cpu":
        return ["cpu"]
    if device is not None and device.startswith("cuda:"):
        if not device[5:].isdigit():
            raise ValueError(f"Evaluator: bad device {device!r}; use 'cpu', 'cuda' or 'cuda:N'")
        return [device]
    if device not in (None, "cuda"):
        raise ValueError(f"Evaluator: bad device {device!r}; use None, 'cpu', 'cuda' or 'cuda:N'")
    import torch

    count = torch.cuda.device_count()
    if count == 0:
        if device == "cuda":
            raise ValueError("Evaluator: device='cuda' but no CUDA GPU is visible")
        return ["cpu"]
    return [f"cuda:{i}" for i in range(count)]


class LocalBackend:
    """One warm pool per device; slot threads of all pools take jobs from one queue."""

    def __init__(self, devices: list[str], service: ServiceConfig) -> None:
        self.queue: queue.Queue = queue.Queue()
        self.pools: list[DevicePool] = []
        try:
            for device in devices:
                self.pools.append(DevicePool(service.for_device(device), self.queue))
        except BaseException:
            self.close()
            raise

    @property
    def capacity(self) -> int:
        return sum(pool.config.workers for pool in self.pools)

    def submit(self, job: Job) -> None:
        self.queue.put(job)

    def close(self) -> None:
        # Jobs still queued will never run: cancel them, so nobody waits forever.
        while True:
            try:
                job = self.queue.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                job.future.cancel()
        for pool in self.pools:
            pool.stopping.set()
        for pool in self.pools:
            pool.close()


class Evaluator:
    """Evaluate candidates against references in sandboxed, pre-warmed worker processes."""

    def __init__(
        self,
        *,
        device: str | Sequence[str] | None = None,
        timeout: float | None = None,
        backend: Literal["local", "ray"] = "local",
        workers: int | None = None,
        max_in_flight: int | None = None,
        progress: bool | None = None,
        policy: SandboxPolicy | None = None,
        worker_module: str = "kernel_reward.judge.pipeline",
        max_attempts: int = 3,
        pool_options: dict[str, Any] | None = None,
        ray_address: str | None = None,
        num_actors: int | None = None,
        service: ServiceConfig | None = None,
        **options: Any,
    ) -> None:
        self.options = EvalOptions(**with_timeout(options, timeout))  # validates every option once, up front
        self.progress = progress
        if service is None:
            service = ServiceConfig(
                workers=workers,
                policy=policy or SandboxPolicy(),
                worker_module=worker_module,
                max_attempts=max_attempts,
                pool_options=dict(pool_options or {}),
            )
        elif (workers, policy, worker_module, max_attempts, pool_options) != (
            None,
            None,
            "kernel_reward.judge.pipeline",
            3,
            None,
        ):
            raise ValueError(
                "Evaluator: give service=ServiceConfig(...) or its fields (workers, policy, "
                "worker_module, max_attempts, pool_options), not both"
            )
        self.service = service
        devices = (
            resolve_devices(device) if backend == "local" else [device] if isinstance(device, str) else []
        )
        if backend == "local":
            self.backend: Backend = LocalBackend(devices, service)
        elif backend == "ray":
            from kernel_reward.service.ray_backend import RayBackend

            self.backend = RayBackend(
                device=device, address=ray_address, num_actors=num_actors, service=service
            )
        else:
            raise ValueError(f"Evaluator: backend must be 'local' or 'ray', got {backend!r}")
        limit = max_in_flight or 4 * self.backend.capacity
        if limit < 1:
            raise ValueError(f"Evaluator: max_in_flight must be >= 1, got {limit}")
        self._slots = threading.BoundedSemaphore(limit)
        # A worker module may offer ``screen_request``: checks that run no candidate code, applied here so that a
        # candidate they reject (format / compile error, static hack) never takes a warm sandboxed process. Only
        # where the result's mode (GPU or interpreter: the reward scheme depends on it) is known without asking
        # a worker: not for a Ray cluster of unnamed devices or a mix of CPU and GPUs.
        kinds = {mode_of(d) for d in devices}
        screen = getattr(importlib.import_module(service.worker_module), "screen_request", None)
        self._screen = screen if len(kinds) == 1 else None
        self._screen_mode = kinds.pop() if len(kinds) == 1 else None
        self._closed = False
        _LIVE.add(self)

    # ------------------------------------------------------------------ requests
    def make_request(
        self, reference: str, candidate: str, *, entry_point: str = "Model", **options: Any
    ) -> EvalRequest:
        timeout = options.pop("timeout", None)
        merged = {**self.options.to_dict(), **with_timeout(options, timeout)}
        return EvalRequest(
            reference_code=reference,
            candidate=candidate,
            entry_point=entry_point,
            options=EvalOptions.from_dict(merged),
        )

    def _as_request(self, item: Pair) -> EvalRequest:
        if isinstance(item, EvalRequest):
            return item
        if isinstance(item, tuple | list) and len(item) in (2, 3):
            return self.make_request(item[0], item[1], **({"entry_point": item[2]} if len(item) == 3 else {}))
        raise TypeError(
            f"Evaluator: expected (reference, candidate[, entry_point]) or EvalRequest, got {type(item).__name__}"
        )

    # ------------------------------------------------------------------ sync API
    def submit_request(self, request: EvalRequest) -> Job:
        """Queue one request (blocks while ``max_in_flight`` requests are pending) and return its job."""
        if self._closed:
            raise RuntimeError("Evaluator is closed")
        if self._screen is not None and request.screened_code is None:
            rejected, code = self._screen(request, mode=self._screen_mode)
            if rejected is not None:
                job = Job(request=request)
                job.future.set_running_or_notify_cancel()
                job.future.set_result(rejected)
                return job
            request = dataclasses.replace(request, screened_code=code)
        job = Job(request=request)
        self._slots.acquire()
        job.future.add_done_callback(lambda _: self._slots.release())
        self.backend.submit(job)
        return job

    def submit(self, reference: str, candidate: str, **kwargs: Any) -> concurrent.futures.Future:
        return self.submit_request(self.make_request(reference, candidate, **kwargs)).future

    def evaluate(self, reference: str, candidate: str, **kwargs: Any) -> EvalResult:
        return _outcome(self.submit(reference, candidate, **kwargs))

    def evaluate_many(
        self, pairs: Iterable[Pair], *, progress: bool | None = None, share_identical: bool = False
    ) -> list[EvalResult]:
        """Evaluate every pair; results come back in input order, one per pair, whatever happened.

        ``share_identical``: requests identical in every field (``EvalRequest.identity``) are evaluated once, and
        each later one gets a copy of that result, flagged ``shared_result`` (an RL group often holds one
        completion several times; each copy would otherwise cost an evaluation and draw timing noise of its own).
        Off by default: a caller may want independent evaluations of one program (repeatability)."""
        requests = [self._as_request(item) for item in pairs]
        first = identical_groups(requests) if share_identical else list(range(len(requests)))
        unique = [index for index, origin in enumerate(first) if origin == index]
        evaluated = dict(
            zip(unique, self._evaluate_requests([requests[i] for i in unique], progress), strict=True)
        )
        return [
            evaluated[index] if origin == index else shared_copy(evaluated[origin], origin)
            for index, origin in enumerate(first)
        ]

    def _evaluate_requests(self, requests: list[EvalRequest], progress: bool | None) -> list[EvalResult]:
        show = self.progress if progress is None else progress
        bar = None
        if show or (show is None and len(requests) >= 32):
            from tqdm.auto import tqdm

            bar = tqdm(
                total=len(requests), desc="evaluating", unit="cand", disable=None if show is None else False
            )
        futures = []
        try:
            for request in requests:
                job = self.submit_request(request)
                if bar is not None:
                    job.future.add_done_callback(lambda _: bar.update(1))
                futures.append(job.future)
            return [_outcome(future) for future in futures]
        except BaseException:
            for future in futures:
                future.cancel()
            raise
        finally:
            if bar is not None:
                bar.close()

    # ------------------------------------------------------------------ async API
    async def aevaluate(self, reference: str, candidate: str, **kwargs: Any) -> EvalResult:
        return await self.aevaluate_request(self.make_request(reference, candidate, **kwargs))

    async def aevaluate_request(self, request: EvalRequest) -> EvalResult:
        loop = asyncio.get_running_loop()
        job = await loop.run_in_executor(None, functools.partial(self.submit_request, request))
        try:
            await asyncio.wait([asyncio.wrap_future(job.future)])
        except asyncio.CancelledError:
            job.cancel.set()  # kills the child if the candidate is already running
            job.future.cancel()
            raise
        return _outcome(job.future)

    async def aevaluate_many(self, pairs: Iterable[Pair]) -> list[EvalResult]:
        return list(await asyncio.gather(*(self.aevaluate_request(self._as_request(p)) for p in pairs)))

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.backend.close()

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _outcome(future: concurrent.futures.Future) -> EvalResult:
    if future.cancelled():
        return EvalResult.failure(
            Status.CRASHED, "cancelled before it ran", flags=["cancelled"], attempts=0, scored=False
        )
    return future.result()


@atexit.register
def _close_all() -> None:
    for evaluator in list(_LIVE):
        try:
            evaluator.close()
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            log.exception("closing an Evaluator at exit failed")


SHARED_RESULT = "shared_result"  # the flag of a result copied from an identical request's (``evaluate_many``)


def shared_copy(result: EvalResult, origin: int) -> EvalResult:
    """A copy of ``result`` for a request identical to the batch's request ``origin`` (``evaluate_many``)."""
    copy = deepcopy(result)
    copy.flags.append(f"{SHARED_RESULT}: the evaluation of identical request {origin} of this batch")
    return copy


def is_shared(result: EvalResult) -> bool:
    """Whether ``result`` is a copy of another request's evaluation rather than an evaluation of its own."""
    return any(flag.startswith(SHARED_RESULT) for flag in result.flags)
