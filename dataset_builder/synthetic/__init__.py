"""Synthetic kernel tasks with known answers, for cold-start SFT data (issue 13, section 1).

Each generated task is a reference program in exactly the shipped-task format (module docstring, UPPER_CASE
size constants, ``class Model(nn.Module)``, ``get_inputs()``, ``get_init_inputs()``), at sizes where one
Triton-interpreter evaluation takes about a second, together with

- ``solution``: an honest ``ModelNew`` whose Triton kernel does all of the work (masked, size-generic: the
  reward's resized-input check scales the size constants);
- ``flawed``: a plausible first answer with one realistic bug (a padded lane left unmasked, a divisor that
  counts the padding, a forgotten op or parameter), so multi-turn data can show a real correction;
- ``flaw``: one sentence saying what that bug is, for the corrected turn.

Nothing here is trusted: ``dataset_builder.sft_data`` keeps a task only after ``kernel_reward`` judged the
solution ``correct`` and the flawed answer not.

Families and their variants (the variant is the split key, see ``split_tasks``):

- ``elementwise``: a chain of 2-3 pointwise ops with parameters; variant ``unary`` (one input) or ``binary``
  (one op also reads a second input ``y``).
- ``reduction``: sum / mean / amax over the last dim, with an optional pre-op (abs, square) and scale;
  variant = the reduction.
- ``norm``: ``layer_norm`` (with or without affine) or ``rms_norm`` (with or without weight) over the last dim.
- ``softmax``: ``softmax`` (with a temperature) or ``log_softmax`` over the last dim.

Row sizes are never powers of two, so the block is always padded and masking bugs always show.
Everything is a pure function of ``(family, seed)``.

Modules: ``task`` (the record and its families), ``programs`` (the two program templates), ``row_kernels``
(pieces the row families share), one module per family (``elementwise``, ``reduction``, ``norm``,
``softmax``), ``generate`` (draw tasks) and ``split`` (hold variants out). The names below are the package's
public API.
"""

from .generate import generate_task, generate_tasks
from .split import DEFAULT_HELD_OUT, Split, split_keys, split_tasks
from .task import FAMILIES, VARIANTS, Family, SyntheticTask

__all__ = [
    "DEFAULT_HELD_OUT",
    "FAMILIES",
    "VARIANTS",
    "Family",
    "Split",
    "SyntheticTask",
    "generate_task",
    "generate_tasks",
    "split_keys",
    "split_tasks",
]
