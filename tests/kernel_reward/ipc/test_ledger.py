"""The launch ledger's lines as the judge reads them (``ipc.ledger.parse``): kernels between flush markers,
CUPTI's drops, and anything else counted as malformed, never trusted."""

from __future__ import annotations

import os

import pytest

from kernel_reward.ipc.ledger import KernelRecord, LedgerMissing, LedgerReader, parse


def test_kernels_are_grouped_by_the_flush_that_ended_them():
    text = (
        "K\tadd_relu_kernel\t100\t150\t7\t13\n"
        "K\tvoid at::native::vectorized_elementwise_kernel<4>(int)\t160\t400\t8\t13\n"
        "M\t1\n"
        "D\t2\n"
        "K\tadd_relu_kernel\t500\t520\t9\t13\n"
        "M\t2\n"
    )
    first, second = parse(text)
    assert first.marker == 1 and [k.name for k in first.kernels] == [
        "add_relu_kernel",
        "void at::native::vectorized_elementwise_kernel<4>(int)",
    ]
    assert (
        first.kernels[0] == KernelRecord("add_relu_kernel", 100, 150, 7, 13)
        and first.kernels[0].duration_ns == 50
    )
    assert second.marker == 2 and second.dropped == 2 and len(second.kernels) == 1 and second.malformed == 0


def test_a_chunk_without_its_marker_stays_open():
    (chunk,) = parse("K\tk\t1\t2\t3\t4\n")
    assert chunk.marker is None and len(chunk.kernels) == 1
    assert parse("") == [] and parse("M\t5\n")[0].marker == 5


def test_lines_that_are_not_the_ledgers_are_counted_and_dropped():
    bad = [
        "K\tk\t1\t2\t3",  # a field short
        "K\tk\t-1\t2\t3\t4",  # negative
        "K\tk\t9\t2\t3\t4",  # ends before it starts
        "K\tk\t1\t2\t3\t4\textra",
        "K\tk\t1\t\u00b2\t3\t4",  # a digit int() refuses
        "K\tk\t1\t" + "9" * 30 + "\t3\t4",  # more than 64 bits
        "K\t" + "x" * 1000 + "\t1\t2\t3\t4",  # a longer name than the C side writes
        "M\tone",
        "D\t1.5",
        "coverage 1.0",
    ]
    (chunk,) = parse("\n".join(bad) + "\n")
    assert chunk.kernels == [] and chunk.malformed == len(bad) and chunk.marker is None


# ---------------------------------------------------------------------------------------------- the judge's reader
def _reader():
    read, write = os.pipe()
    reader = LedgerReader(read)
    reader.start()
    return reader, write


def test_a_take_returns_the_records_up_to_its_marker_and_keeps_the_rest():
    reader, write = _reader()
    try:
        os.write(write, b"K\ta\t10\t20\t1\t7\nK\tb\t20\t50\t2\t7\nM\t99\nK\tc\t60\t61\t3\t7\nM\t5\n")
        first = reader.take(99, timeout_s=5)
        assert [k.name for k in first.kernels] == ["a", "b"] and first.malformed == 0 and first.marker == 99
        second = reader.take(5, timeout_s=5)
        assert [k.name for k in second.kernels] == ["c"]
    finally:
        os.close(write)
        reader.close()


def test_a_marker_that_is_not_the_one_awaited_is_counted_and_its_records_still_count():
    reader, write = _reader()
    try:  # a candidate that writes a marker of its own does not cut the judge's chunk short
        os.write(write, b"K\ta\t10\t20\t1\t7\nM\t3\nK\tb\t30\t40\t2\t7\nM\t7\n")
        chunk = reader.take(7, timeout_s=5)
        assert [k.name for k in chunk.kernels] == ["a", "b"] and chunk.malformed == 1
    finally:
        os.close(write)
        reader.close()


def test_a_marker_inside_another_line_does_not_end_the_chunk():
    reader, write = _reader()
    try:
        os.write(write, b"K\tM\t7\n")  # "M\t7\n" appears, but not at a line's start
        with pytest.raises(LedgerMissing, match="within"):
            reader.take(7, timeout_s=0.3)
        os.write(write, b"M\t7\n")
        chunk = reader.take(7, timeout_s=5)
        assert chunk.kernels == [] and chunk.malformed == 1
    finally:
        os.close(write)
        reader.close()


def test_a_marker_that_never_comes_is_an_error_naming_why():
    reader, write = _reader()
    os.write(write, b"K\ta\t10\t20\t1\t7\n")
    with pytest.raises(LedgerMissing, match="within 0.2 s"):
        reader.take(1, timeout_s=0.2)
    os.close(write)  # the runner died: the pipe ends
    with pytest.raises(LedgerMissing, match="pipe was closed"):
        reader.take(1, timeout_s=5)
    reader.close()


def test_the_reader_drains_more_than_a_pipe_holds_while_nobody_takes(monkeypatch):
    from kernel_reward.ipc import ledger

    monkeypatch.setattr(ledger, "MAX_LEDGER_BYTES", 200_000)
    reader, write = _reader()
    try:  # a writer that blocked on a full pipe would hang here: 1 MB through a 64 KiB pipe
        line = b"K\tkernel\t1\t2\t3\t4\n"
        for _ in range(1_000_000 // len(line)):
            os.write(write, line)
        os.write(write, b"M\t1\n")
        chunk = reader.take(1, timeout_s=10)
        assert chunk.overflow_bytes > 0 and chunk.malformed >= 1  # what did not fit is counted, never taken
        assert 0 < len(chunk.kernels) <= 200_000 // len(line)
    finally:
        os.close(write)
        reader.close()


def test_a_closed_reader_takes_nothing_from_the_next_pipe():
    reader, write = _reader()
    reader.close()  # its writer still open: the thread must let go of the descriptor, not read a reused one
    os.close(write)
    read2, write2 = os.pipe()
    try:
        os.write(write2, b"hello")
        assert os.read(read2, 5) == b"hello"
    finally:
        os.close(read2)
        os.close(write2)


def test_a_reader_starts_no_thread_until_asked():
    # a judge still has to enter its namespaces after it gets the reader: unshare(CLONE_NEWNS) needs one thread
    import threading

    read, write = os.pipe()
    before = threading.active_count()
    reader = LedgerReader(read)
    assert threading.active_count() == before
    os.write(write, b"K\ta\t1\t2\t3\t4\nM\t9\n")
    assert [k.name for k in reader.take(9, timeout_s=5).kernels] == ["a"]  # the first take starts it
    os.close(write)
    reader.close()
