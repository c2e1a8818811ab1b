"""Run PyTorch reference programs on CPU in child processes and report why one would make a bad task.

A task is unusable when the evaluator could not judge candidates against it (it crashes or hangs), when a
candidate could pass without computing anything (its output does not depend on the input, or is so close to
zero / to a constant that a fill kernel passes the evaluator's tolerance), or when the reference disagrees with
itself (a forward pass with randomness or hidden state, e.g. dropout in training mode). background §5 lists such
tasks in KernelBench itself.

How a check runs, module by module:

- ``run``: ``check_references`` hands the programs to ``kernel_reward``'s execution service with the reference
  worker (``kernel_reward.judge.reference_run``): each runs alone in a fresh sandboxed child forked from a warm zygote
  (torch imported once), under the service's wall clock, with the same namespaces, rlimits and output capture as
  an evaluation. The child builds ``Model`` under a fixed seed, draws inputs under two seeds, runs forward three
  times (inputs A, inputs A again, inputs B) and returns summary statistics of every output tensor, and whether
  the reward can compare the output at all;
- ``outcome`` and ``verdicts``: the builder's side, turning what came back into a ``ReferenceCheck`` of
  ``DropReason``s with the pure function ``verdicts.classify_outputs`` and its thresholds (the tolerances are
  the reward's own, ``EvalOptions``);
- ``cli``: ``python -m dataset_builder.reference_checks [FILE ...] [--tasks small|full]``.

Importing these modules is light (``kernel_reward`` and torch are imported when a check runs).
"""
