"""Production Triton kernels (liger-kernel 0.8.5) as kernel_reward tasks: zero false positives, measured.

``liger.KERNELS``: ten (PyTorch reference, inlined ModelNew) pairs built from the installed wheel at run time
(``inline``: the wheel's module plus the helpers it imports, read from its files; ``references``: this project's
plain-PyTorch programs). ``python -m benchmarks.production_kernels --help``: evaluate them with kernel_reward on the
CPU interpreter or a GPU (with an independent ``triton.testing.do_bench`` speedup on CUDA), table + JSON.
"""
