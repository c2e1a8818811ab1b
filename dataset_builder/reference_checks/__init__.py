"""Run PyTorch reference programs on CPU in child processes and report why one would make a bad task.

A task is unusable when the evaluator cannot judge candidates against it (it crashes or hangs), when a
candidate could pass without computing anything (its output does not depend on the input, or is so close to
zero / to a constant that a fill kernel passes the evaluator's tolerance), or when the reference disagrees
with itself (a forward pass with randomness or hidden state, e.g. dropout in training mode). background §5
lists such tasks in KernelBench itself.

Modules: ``run`` (``check_references``: each program runs in a sandboxed child of ``kernel_reward``'s
execution service), ``outcome`` and ``verdicts`` (what came back -> a ``ReferenceCheck`` of ``DropReason``s,
by the reward's own tolerances) and ``cli`` (``python -m dataset_builder.reference_checks [FILE ...]``).
Importing them is light (``kernel_reward`` and torch are imported when a check runs). docs/dataset.md says how
a check runs.
"""
