"""Shared helper of the source tests."""

from dataset_builder.sources.planning import plan_chunks
from dataset_builder.sources.reading import read_chunk


def read_all(fmt, source, **kwargs):
    """Every converted row of a source, chunk after chunk."""
    return [row for chunk in plan_chunks(fmt, source, **kwargs) for row in read_chunk(chunk)]
