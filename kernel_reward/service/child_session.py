"""One attempt of one request on one pool child: the parent's side of the conversation, and its clock.

``ChildSession(config, zygote, child, job, stopping).run()`` waits for the child to be warm, hands it the request,
and turns whatever follows into an ``Outcome``: a result (the candidate's, whatever happened once the child
accepted the request) or an infrastructure error (before that: the pool retries on a fresh child).

What the parent observes itself (the wall clock ran out, the memory watchdog fired, the job was cancelled, the
child's channel closed) arrives as typed ``ParentEvent`` values, never as message dicts: nothing a child sends can
be mistaken for one of them.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import select
import signal
import threading
import time
from dataclasses import dataclass
from typing import Any

from kernel_reward import sandbox
from kernel_reward.ipc import wire
from kernel_reward.result import EvalResult, Status
from kernel_reward.service.timing_priors import PriorStore

GROUP_SCAN_INTERVAL_S = 0.5  # the /proc scan for a candidate's helper processes; its main process every 0.1 s


@dataclass
class Outcome:
    result: EvalResult | None = None
    infra_error: str | None = None


# ------------------------------------------------------------------------------------------------ parent events
@dataclass(frozen=True)
class WallClockExpired:
    pass


@dataclass(frozen=True)
class MemoryExceeded:
    rss: int  # resident sets of the child and its helpers, plus tmpfs_bytes
    tmpfs_bytes: int


@dataclass(frozen=True)
class Cancelled:
    pass


@dataclass(frozen=True)
class ChildGone:
    pass


ParentEvent = WallClockExpired | MemoryExceeded | Cancelled | ChildGone


def cancelled_result() -> EvalResult:
    return EvalResult.failure(
        Status.CRASHED,
        "cancelled: the evaluation was stopped before it finished",
        flags=["cancelled"],
        scored=False,
    )


# ------------------------------------------------------------------------------------------------ the clock
class WallClock:
    """A candidate's wall clock that stops while it queues for the GPU's timing slot (other candidates' timing is
    not its time), for at most ``max_pause_s`` in all (the pause is asked for by a message a child could forge).
    Times are ``time.monotonic()`` values passed in, so the arithmetic is testable."""

    def __init__(self, start: float, limit_s: float, max_pause_s: float) -> None:
        self.deadline = start + limit_s
        self.max_pause_s = max_pause_s
        self.paused_since: float | None = None
        self.remaining = limit_s
        self.waited = 0.0

    def pause(self, now: float) -> None:
        if self.paused_since is not None:
            return
        self.paused_since = now
        self.remaining = self.deadline - now
        self.deadline = now + max(0.0, self.max_pause_s - self.waited) + self.remaining

    def resume(self, now: float) -> None:
        if self.paused_since is None:
            return
        self.waited += now - self.paused_since
        self.deadline = now + self.remaining
        self.paused_since = None


# ------------------------------------------------------------------------------------------------ the session
class ChildSession:
    """The parent's side of one attempt (module docstring). ``zygote`` kills children; ``stopping`` is the pool's
    shutdown flag."""

    def __init__(
        self,
        config: Any,
        zygote: Any,
        child: Any,
        job: Any,
        stopping: threading.Event,
        priors: PriorStore | None = None,
    ) -> None:
        self.config = config
        self.priors = priors  # the pool's timing priors, asked for and offered by the judge (timing_priors)
        self.zygote = zygote
        self.child = child
        self.job = job
        self.stopping = stopping
        self.limits = config.policy.limits

    def run(self) -> Outcome:
        waiting = self._await_ready()
        return waiting if waiting is not None else self._evaluate()

    # -------------------------------------------------------------- 1. warm-up: failures are ours
    def _await_ready(self) -> Outcome | None:
        child = self.child
        output = sandbox.OutputTail(self.limits.output_bytes)
        deadline = time.monotonic() + self.config.warmup_timeout_s
        while not child.ready:
            event = self._next(output, deadline)
            if isinstance(event, (ChildGone, WallClockExpired, MemoryExceeded)):
                return Outcome(infra_error=self._death_note("during warm-up", output))
            if isinstance(event, Cancelled):
                return Outcome(result=cancelled_result())
            if event.get("type") == "ready":
                child.ready = True
                child.isolation = event.get("isolation") or {}
                child.warmup_seconds = {str(k): float(v) for k, v in (event.get("warmup") or {}).items()}
            elif event.get("type") == "error":
                return Outcome(infra_error=f"warm-up failed: {str(event.get('error'))[-2000:]}")
        return None

    # -------------------------------------------------------------- 2. the request: from "accepted" on, the candidate's
    def _evaluate(self) -> Outcome:
        child, job, limits = self.child, self.job, self.limits
        wall_clock = job.request.options.timeout_s + self.config.wall_clock_grace_s
        try:
            wire.send_message(child.channel, {"type": "request", "request": job.request.to_dict()})
        except (OSError, wire.WireError) as exc:
            return Outcome(infra_error=f"could not send the request to the worker: {exc}")
        output = sandbox.OutputTail(limits.output_bytes)
        start = time.monotonic()
        clock = WallClock(start, wall_clock, self.config.max_slot_wait_s)
        accepted = False
        # The child reports its final record (rlimits set after the request) with the result; the parent adds the
        # layers it enforces itself.
        isolation = {
            **child.isolation,
            "wall_clock_s": wall_clock,
            "memory_watchdog_bytes": limits.memory_bytes,
        }
        while True:
            try:
                event = self._next(output, clock.deadline, watch_memory=accepted)
            except wire.WireError as exc:
                return self._failure(
                    Status.CRASHED, f"worker sent a malformed message: {exc}", output, isolation
                )
            if isinstance(event, ChildGone):
                if not accepted:
                    return Outcome(infra_error=self._death_note("before accepting the request", output))
                return self._failure(
                    Status.CRASHED,
                    self._death_note("while evaluating the candidate", output),
                    output,
                    isolation,
                )
            if isinstance(event, WallClockExpired):
                return self._failure(
                    Status.TIMEOUT,
                    f"exceeded the wall-clock limit of {wall_clock:.1f} s "
                    f"(timeout_s={job.request.options.timeout_s} + {self.config.wall_clock_grace_s} s grace); "
                    "its whole process group was killed",
                    output,
                    isolation,
                )
            if isinstance(event, MemoryExceeded):
                return self._failure(
                    Status.RUNTIME_ERROR,
                    f"host memory limit exceeded: {event.rss} bytes (the resident sets of it and its helper "
                    f"processes, and {event.tmpfs_bytes} bytes of files in its private tmpfs) > "
                    f"{limits.memory_bytes} bytes; the process group was killed",
                    output,
                    isolation,
                )
            if isinstance(event, Cancelled):
                return Outcome(result=cancelled_result())
            kind = event.get("type")
            if kind == "slot_wait" and accepted:
                clock.pause(time.monotonic())
            elif kind == "slot_acquired":
                if clock.paused_since is not None:
                    clock.resume(time.monotonic())
                    isolation["slot_wait_s"] = round(clock.waited, 4)
            elif kind == "prior_ask" and accepted:
                prior = self.priors.get(event.get("key")) if self.priors is not None else None
                self._answer({"type": "prior", "prior": prior})
            elif kind == "prior_offer" and accepted:
                if self.priors is not None:
                    self.priors.put(event.get("key"), event.get("prior"))
                self._answer({"type": "prior_ok"})
            elif kind == "accepted":
                accepted = True
                isolation.update(event.get("isolation") or {})
                isolation.update(wall_clock_s=wall_clock, memory_watchdog_bytes=limits.memory_bytes)
            elif kind == "result":
                return self._result(event, output, isolation, start)
            elif kind == "error":
                if not accepted:
                    return Outcome(
                        infra_error=f"worker failed before accepting the request: {str(event.get('error'))[-2000:]}"
                    )
                return self._failure(
                    Status.CRASHED, f"worker failed: {event.get('error')}", output, isolation
                )

    def _answer(self, message: dict[str, Any]) -> None:
        """Reply to the child; a child that is gone is seen as such by the next read of its channel."""
        with contextlib.suppress(OSError):
            wire.send_message(self.child.channel, message)

    def _result(
        self, message: dict[str, Any], output: sandbox.OutputTail, isolation: dict[str, Any], start: float
    ) -> Outcome:
        try:
            result = EvalResult.from_dict(message["result"])
        except (KeyError, TypeError, ValueError) as exc:
            return self._failure(
                Status.CRASHED, f"worker returned an invalid result: {exc}", output, isolation
            )
        result.isolation = {**(result.isolation or {}), **isolation}
        if output.total:
            result.stdout_tail = output.text()
        result.phase_seconds.setdefault("service_total", round(time.monotonic() - start, 4))
        # Off the critical path (the child warmed before the request came), reported for capacity planning.
        for stage, seconds in self.child.warmup_seconds.items():
            result.phase_seconds[f"warmup_{stage}"] = seconds
        return Outcome(result=result)

    # -------------------------------------------------------------- events
    def _next(
        self, output: sandbox.OutputTail, deadline: float, *, watch_memory: bool = False
    ) -> dict[str, Any] | ParentEvent:
        """The child's next message, or what the parent observed first; drains the child's output meanwhile."""
        child, limits = self.child, self.limits
        output_open = True
        while True:
            message = child.reader.pop()
            if message is not None:
                return message
            if child.reader.eof:
                if output_open:  # collect the last words (e.g. a segfault trace) before reporting the death
                    sandbox.read_nonblocking(child.output_fd, output)
                return ChildGone()
            now = time.monotonic()
            if now >= deadline:
                return WallClockExpired()
            if self.job.cancel.is_set() or self.stopping.is_set():
                return Cancelled()
            if watch_memory and limits.memory_bytes is not None:
                rss = self._resident_bytes(now)
                if rss is not None and rss > limits.memory_bytes:
                    return MemoryExceeded(rss, child.tmpfs_bytes)
            watch = [child.channel] + ([child.output_fd] if output_open else [])
            readable, _, _ = select.select(watch, [], [], min(0.1, max(0.0, deadline - now)))
            if child.output_fd in readable:
                output_open = sandbox.read_nonblocking(child.output_fd, output)
            if child.channel in readable:
                child.reader.feed()

    def _resident_bytes(self, now: float) -> int | None:
        """The child's memory: its resident set, every 0.5 s its whole group's with helpers, plus the files in
        their private tmpfs mounts (as of the last group scan)."""
        child = self.child
        rss = sandbox.rss_bytes(child.pid)
        if now >= child.next_group_scan:
            # Forked helpers (the group, and every process of the child's private uid) count too.
            child.next_group_scan = now + GROUP_SCAN_INTERVAL_S
            # The judge leads the group; its runner (the candidate) is in it or, if it left, under its own uid.
            runner_uid = (child.isolation.get("runner") or {}).get("uid")
            helper_uid = runner_uid if runner_uid is not None else child.isolation.get("uid")
            group = sandbox.group_memory(child.pid, helper_uid)
            if group.resident_bytes is not None:
                rss = max(rss or 0, group.resident_bytes)
            child.tmpfs_bytes = group.tmpfs_bytes
        return None if rss is None else rss + child.tmpfs_bytes

    def _death_note(self, when: str, output: sandbox.OutputTail) -> str:
        child = self.child
        self.zygote.kill(child)
        try:
            code = child.exited.result(timeout=3)
        except concurrent.futures.TimeoutError:
            code = None
        if code is None:
            how = "exited (exit status unknown)"
        elif code < 0:
            try:
                how = f"was killed by signal {signal.Signals(-code).name}"
            except ValueError:
                how = f"was killed by signal {-code}"
        else:
            how = f"exited with code {code}"
        tail = output.text().strip()[-1500:]
        return f"worker process {how} {when}" + (f"; last output:\n{tail}" if tail else "")

    @staticmethod
    def _failure(
        status: Status, error: str, output: sandbox.OutputTail, isolation: dict[str, Any]
    ) -> Outcome:
        return Outcome(
            result=EvalResult.failure(
                status,
                error,
                stdout_tail=output.text(),
                isolation=isolation,
                feedback=f"status: {status.value}\nerror: {error[:2000]}",
            )
        )
