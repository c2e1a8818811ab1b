"""Shared test support: fake evaluators and workers, candidate programs, dataset rows, a local Hub server."""
