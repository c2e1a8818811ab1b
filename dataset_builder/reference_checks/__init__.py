"""Run PyTorch reference programs on CPU in child processes and report why one would make a bad task.

A task is unusable when the evaluator could not judge candidates against it (it crashes or hangs), when a
candidate could pass without computing anything (its output does not depend on the input, or is so close to
zero / to a constant that a fill kernel passes the evaluator's tolerance), or when the reference disagrees with
itself (a forward pass with randomness or hidden state, e.g. dropout in training mode). background §5 lists such
tasks in KernelBench itself.

How a check runs, module by module:

- ``run``: ``check_reference`` starts a fresh interpreter per program (~2 s of torch import);
  ``check_references`` by default asks a warm fork server (``fork_server``: torch imported once) to fork the
  child instead (~0.1 s), falling back to fresh interpreters if the server fails;
- ``isolation``: the parent writes the program to a fresh temporary folder and starts the child in its own
  process group, stdin ``/dev/null``, stdout+stderr to a file of which only the tail is kept; the parent owns
  the wall clock and a check always ends with a kill of the child's whole group;
- ``child``: the program the child runs (standard library only at import time, torch inside): it caps the size
  of files it may write before any reference code runs, builds ``Model`` after seeding 42 (as the evaluator
  does), draws inputs under two seeds, runs forward three times (inputs A, inputs A again, inputs B) on cloned
  inputs, and writes summary statistics of every output tensor as JSON;
- ``outcome`` and ``verdicts``: the parent turns what the child left behind into a ``ReferenceCheck``, with the
  pure function ``verdicts.classify_outputs`` and its thresholds;
- ``cli``: ``python -m dataset_builder.reference_checks [FILE ...] [--tasks small|full]``.

Importing any of these modules imports only the standard library (torch is imported in the child). Two rules come
from ``kernel_reward`` itself, imported where they are used so that the two cannot drift: which outputs the reward
can compare (the child) and its tolerances (``verdicts.tolerance_for``).
"""
