"""The launch ledger's lines as the judge reads them (``ipc.ledger.parse``): kernels between flush markers,
CUPTI's drops, and anything else counted as malformed, never trusted."""

from __future__ import annotations

from kernel_reward.ipc.ledger import KernelRecord, parse


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
