"""The host gate's watchdog (stream_gate.Watchdog): one thread, armed per gate, that opens a gate the judge's own
thread could not (code that synchronises while its work is being queued behind the gate)."""

from __future__ import annotations

import threading
import time

from kernel_reward.ipc.stream_gate import Watchdog


def _recording() -> tuple[list[int], threading.Event, Watchdog]:
    fired: list[int] = []
    done = threading.Event()

    def fire(number: int) -> bool:
        fired.append(number)
        done.set()
        return True

    return fired, done, Watchdog(fire)


def test_fires_after_the_delay_when_nobody_opens_the_gate():
    fired, done, watchdog = _recording()
    start = time.monotonic()
    watchdog.arm(1, 0.05)
    assert done.wait(5)
    assert fired == [1] and watchdog.fired == 1
    assert time.monotonic() - start >= 0.05


def test_disarmed_gate_never_fires_and_a_later_arm_still_does():
    fired, done, watchdog = _recording()
    for number in range(1, 200):  # many batches, one thread
        watchdog.arm(number, 0.2)
        watchdog.disarm(number)
    time.sleep(0.3)
    assert fired == [] and watchdog.fired == 0
    watchdog.arm(200, 0.01)
    assert done.wait(5)
    assert fired == [200]


def test_disarming_an_older_number_leaves_the_newer_gate_armed():
    fired, done, watchdog = _recording()
    watchdog.arm(5, 0.02)
    watchdog.disarm(4)
    assert done.wait(5)
    assert fired == [5]


def test_a_fire_that_opened_nothing_is_not_counted():
    watchdog = Watchdog(lambda number: False)
    watchdog.arm(1, 0.0)
    deadline = time.monotonic() + 2
    while watchdog._armed is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert watchdog._armed is None and watchdog.fired == 0
