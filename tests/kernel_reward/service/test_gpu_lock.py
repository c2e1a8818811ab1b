"""gpu_lock.GpuLock: timing holds the GPU alone, GPU phases share it, and a judge waiting to time is not starved
by a stream of new GPU phases. Each "process" is its own pair of open descriptors (flock locks belong to open
file descriptions, so threads with their own descriptors contend exactly as processes do)."""

from __future__ import annotations

import os
import threading
import time

import pytest

from kernel_reward.service.gpu_lock import (
    EXCLUSIVE_DRAIN,
    EXCLUSIVE_HELD,
    EXCLUSIVE_WAIT,
    LOCK_SPANS,
    SHARED_HELD,
    SHARED_LONGEST,
    SHARED_WAIT,
    STEP_LONGEST,
    GpuLock,
)
from kernel_reward.service.zygote_client import timing_lock_file


@pytest.fixture
def new_lock(tmp_path):
    path = timing_lock_file(tmp_path / "locks", "cuda:0")
    opened: list[int] = []

    def make() -> GpuLock:
        fds = [os.open(path, os.O_RDONLY), os.open(str(path) + ".turnstile", os.O_RDONLY)]
        opened.extend(fds)
        return GpuLock(*fds)

    yield make
    for fd in opened:
        os.close(fd)


def _in_thread(body) -> threading.Thread:
    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread


def test_gpu_phases_run_side_by_side(new_lock):
    first, second = new_lock(), new_lock()
    left = threading.Event()
    with first.shared():
        entered = threading.Event()

        def second_phase():
            with second.shared():
                entered.set()
                left.wait(5)

        thread = _in_thread(second_phase)
        assert entered.wait(5), "a second GPU phase had to wait for the first"
        left.set()
    thread.join(5)


def test_timing_waits_for_gpu_phases_under_way_and_blocks_new_ones(new_lock):
    reader, timer, late_reader = new_lock(), new_lock(), new_lock()
    order: list[str] = []
    timer_in, late_in = threading.Event(), threading.Event()
    with reader.shared():

        def time_it():
            with timer.exclusive():
                order.append("timing")
                timer_in.set()
                time.sleep(0.2)
                order.append("timing done")

        timing_thread = _in_thread(time_it)
        time.sleep(0.2)
        assert not timer_in.is_set(), "timing started while another judge was in a GPU phase"

        def late_phase():
            with late_reader.shared():
                order.append("late phase")
                late_in.set()

        late_thread = _in_thread(late_phase)
        time.sleep(0.2)
        assert not late_in.is_set(), "a new GPU phase slipped in ahead of the waiting timer"
    timing_thread.join(5)
    late_thread.join(5)  # both out of their locks before the fixture closes the descriptors
    assert timer_in.is_set() and late_in.is_set()
    assert order == ["timing", "timing done", "late phase"]


def test_timing_slots_exclude_each_other_and_report_waits(new_lock):
    events: list[str] = []
    first = new_lock()
    second = new_lock()
    second.on_wait, second.on_acquired = (lambda: events.append("wait")), (lambda: events.append("acquired"))
    with first.exclusive():
        done = threading.Event()

        def time_it():
            with second():
                events.append("in")
            done.set()

        thread = _in_thread(time_it)
        time.sleep(0.2)
        assert events == ["wait"]
    thread.join(5)
    assert done.is_set()
    assert events == ["wait", "acquired", "in"]


def test_each_holder_counts_its_waits_and_holds(new_lock):
    """A timer that arrives while a GPU phase runs spends the rest of that phase draining it; a GPU phase that
    arrives while the timer holds the GPU waits for it: each lock's ``seconds`` says so, and the holds."""
    reader, timer, late_reader = new_lock(), new_lock(), new_lock()
    timer_in = threading.Event()

    def time_it():
        with timer.exclusive():
            timer_in.set()
            time.sleep(0.3)

    with reader.shared():
        timing_thread = _in_thread(time_it)
        time.sleep(0.3)
    assert timer_in.wait(5)
    with late_reader.shared():
        pass
    timing_thread.join(5)
    assert timer.seconds[EXCLUSIVE_WAIT] < 0.1  # no other timer: the turnstile was free
    assert 0.2 < timer.seconds[EXCLUSIVE_DRAIN] < 1.0  # the reader's remaining 0.3 s
    assert 0.25 < timer.seconds[EXCLUSIVE_HELD] < 1.0
    assert reader.seconds[SHARED_WAIT] < 0.1 and reader.seconds[SHARED_HELD] > 0.25
    with reader.shared("build"):
        pass
    assert (
        reader.seconds[SHARED_LONGEST] > 0.25 and reader.seconds[SHARED_HELD] > reader.seconds[SHARED_LONGEST]
    )
    # each step's longest hold under its own name: the first hold was unnamed, the short one was the build's
    assert reader.seconds[STEP_LONGEST + "other"] == reader.seconds[SHARED_LONGEST]
    assert reader.seconds[STEP_LONGEST + "build"] < 0.1
    assert late_reader.seconds[SHARED_WAIT] > 0.15  # behind the timer's hold
    spans = set(timer.seconds) | set(reader.seconds)
    assert {span for span in spans if not span.startswith(STEP_LONGEST)} <= set(LOCK_SPANS)


def test_with_gpu_phases_not_shared_timing_excludes_only_timing(tmp_path):
    path = timing_lock_file(tmp_path / "locks", "cuda:0")
    fds = [os.open(p, os.O_RDONLY) for p in (path, str(path) + ".turnstile", path, str(path) + ".turnstile")]
    try:
        reader, timer = GpuLock(*fds[:2], share_gpu_phases=False), GpuLock(*fds[2:], share_gpu_phases=False)
        with reader.shared():
            entered = threading.Event()

            def time_it():
                with timer.exclusive():
                    entered.set()

            thread = _in_thread(time_it)
            assert entered.wait(5), "timing waited for a GPU phase that takes no lock"
            thread.join(5)
    finally:
        for fd in fds:
            os.close(fd)


def test_timing_lock_files_are_shared_across_users(tmp_path):
    """Sticky world-writable folder, world-readable lock and turnstile files (flock works on a read-only
    descriptor)."""
    import fcntl
    import stat

    path = timing_lock_file(tmp_path / "locks", "cuda:3")
    assert path.name == "cuda3.lock" and path.exists()
    assert stat.S_IMODE((tmp_path / "locks").stat().st_mode) == 0o1777
    for file in (path, path.with_name(path.name + ".turnstile")):
        assert stat.S_IMODE(file.stat().st_mode) & 0o044 == 0o044
        fd = os.open(file, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
    assert timing_lock_file(tmp_path / "locks", "cuda:3") == path  # idempotent
