"""The execution service: warm per-device pools, zygotes that fork sandboxed children, the GPU timing lock
and the Ray backend. Knows evaluations only as requests and results."""
