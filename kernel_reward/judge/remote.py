"""The judge's proxy of the candidate: ``RemoteCandidate.call`` runs one forward in the runner process.

For every call the judge writes the inputs into the arena, poisons the output slots (NaN, or a sentinel for
integers: an unwritten slot is a wrong answer), asks the runner to run (on a GPU behind the judge's gate, as a timed
batch is: ``ipc.handover``) and checks that the inputs in the arena are still what it wrote. The outputs stay in their slots (``SlotOutputs``): each check reads them once, a chunk at a
time into the judge's own memory, and compares and fingerprints what it read, so what is compared is what is
fingerprinted (the constant-output check) and what every reference of that check is compared with. The runner's
reply only adds what the judge cannot see from outside (which Triton kernels launched, an exception's text); it
can make the candidate's verdict worse (a raised error, a self-reported hack), never better than what the outputs
show. Why the outputs are read in place rather than copied: docs/decisions.md and docs/memory.md. Why one module
(about 410 lines): every message about the candidate goes out from here, so checked and timed ones are one code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from kernel_reward.common.tensors import only_tensors, synchronize
from kernel_reward.ipc import exchange, placement
from kernel_reward.ipc.handover import Handover, ask_run
from kernel_reward.ipc.runner_channel import RunnerClient, RunnerFault
from kernel_reward.judge.compare import (
    Comparison,
    PiecewiseComparison,
    QueuedComparison,
    metadata_mismatch,
    resolve_all,
    same_values,
)
from kernel_reward.judge.stop import JudgeStop
from kernel_reward.result import Status
from kernel_reward.timing import output_seal

READ_CHUNK_BYTES = 64 << 20  # outputs are read into the judge's memory this much at a time


@dataclass(frozen=True)
class OutputSpec:
    """What the reference returns: its container ("tensor", "tuple:N", "list:N") and each tensor's shape/dtype."""

    structure: str
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[torch.dtype, ...]

    @property
    def nbytes(self) -> int:
        return sum(_nbytes(shape, dtype) for shape, dtype in zip(self.shapes, self.dtypes, strict=True))


def output_spec(raw: Any) -> OutputSpec:
    """The spec of a reference output; ValueError when it is not a tensor or a tuple/list of tensors."""
    from kernel_reward.common.tensors import CallError, structured_outputs

    try:
        structure, tensors = structured_outputs(raw)
    except CallError as exc:
        raise ValueError(f"the reference's {exc}") from exc
    return OutputSpec(structure, tuple(tuple(t.shape) for t in tensors), tuple(t.dtype for t in tensors))


def slot_bytes(args: list[Any], spec: OutputSpec) -> int:
    """Arena bytes one call needs: its inputs and outputs, each aligned."""
    return args_nbytes(args) + spec.nbytes + exchange.ALIGN * (len(spec.shapes) + 1)


def args_nbytes(args: list[Any], align: int = exchange.ALIGN) -> int:
    """Bytes of the tensors among ``args``, each padded by ``align`` (0: the tensors' own bytes)."""
    return sum(_nbytes(tuple(a.shape), a.dtype) + align for a in args if isinstance(a, torch.Tensor))


def _nbytes(shape: tuple[int, ...], dtype: torch.dtype) -> int:
    count = 1
    for size in shape:
        count *= size
    return count * torch.empty((), dtype=dtype).element_size()


@dataclass(frozen=True)
class OutputRead:
    """One read of a call's outputs: the comparison with each reference given, and a fingerprint of what was read
    (per output; equal for bitwise-equal outputs of the same ``RemoteCandidate``, different otherwise but with
    negligible chance: the key is drawn in the judge)."""

    comparisons: list[Comparison]
    fingerprint: tuple[int, ...]


class SlotOutputs:
    """A call's outputs where the runner wrote them: views of the arena's output slots, readable until the same
    ``RemoteCandidate`` runs its next call (which poisons and refills the slots)."""

    def __init__(self, owner: RemoteCandidate, call: int, refs: list[exchange.TensorRef]) -> None:
        self._owner = owner
        self._call = call
        self._refs = refs
        self.views = [exchange.view(owner.arena.tensor, ref) for ref in refs]

    def read(self, references: list[list[torch.Tensor]], tolerance: Any) -> OutputRead:
        """Read every output once, ``READ_CHUNK_BYTES`` at a time into a private snapshot; compare each chunk with
        the same span of every reference list (``compare.compare_outputs``' rules) and fingerprint it. One
        synchronisation; the judge's extra memory is the snapshot and the comparison's per-chunk temporaries."""
        if self._owner.calls != self._call:
            raise RuntimeError(
                f"outputs of call {self._call} read after call {self._owner.calls} reused their slots"
            )
        queued: list[QueuedComparison | None] = []  # decided by metadata alone (a shape mismatch...)
        pieces: list[PiecewiseComparison | None] = []
        for reference in references:
            mismatch = metadata_mismatch(self.views, reference)
            piece = (
                None
                if mismatch
                else PiecewiseComparison([(r.numel(), r.dtype) for r in reference], tolerance, 0.0, True)
            )
            queued.append(
                QueuedComparison(Comparison(False, None, mismatch), [], 0.0, True) if mismatch else None
            )
            pieces.append(piece)
        flat = [[r.detach().reshape(-1) for r in reference] for reference in references]
        largest = max((v.numel() * v.element_size() for v in self.views), default=0)
        words = -(-min(READ_CHUNK_BYTES, max(largest, 1)) // output_seal.WORD) * output_seal.WORD
        snapshot = torch.empty(words, dtype=torch.uint8, device=self._owner.arena.device)
        sums = []
        for index, (view, ref) in enumerate(zip(self.views, self._refs, strict=True)):
            size = view.numel() * view.element_size()  # contiguous: the arena placed it with dense strides

            def take(
                _tag: Any,
                chunk: torch.Tensor,
                offset: int,
                index: int = index,
                dtype: torch.dtype = view.dtype,
            ) -> None:
                values = chunk.view(dtype)
                first = offset // values.element_size()
                for piece, reference in zip(pieces, flat, strict=True):
                    if piece is not None:
                        piece.add(index, values, reference[index][first : first + values.numel()])

            # The slot rounded up to whole words (slots are aligned, so the extra bytes are its padding, counted
            # as zeros: the runner may write padding, and that must not change the fingerprint).
            region = self._owner.arena.tensor[
                ref.offset : ref.offset + -(-size // output_seal.WORD) * output_seal.WORD
            ]
            sums.append(
                output_seal.read_back(region, snapshot, self._owner.key, [(0, size, index)], take, valid=size)
            )
        comparisons = resolve_all(
            [q if q is not None else piece.queued() for q, piece in zip(queued, pieces, strict=True)]
        )
        fingerprint = tuple(torch.stack(sums).tolist()) if sums else ()
        return OutputRead(comparisons, fingerprint)

    def compare(self, reference: list[torch.Tensor], tolerance: Any) -> Comparison:
        """One read, compared with one reference."""
        return self.read([reference], tolerance).comparisons[0]


@dataclass
class CallOutcome:
    """One remote forward as the judge saw it: its outputs (in the arena's slots) and the runner's claims."""

    outputs: SlotOutputs
    ok: bool
    kind: str | None = None  # how it failed: "raised" | "exit" | "format" | "structure"
    error: str | None = None
    inputs_mutated: bool = False
    launched: list[str] = field(default_factory=list)  # every Triton kernel launched (runner-reported)
    own_launches: list[str] = field(default_factory=list)  # the candidate's own among them (runner-reported)


def poison(tensors: list[torch.Tensor]) -> None:
    with torch.no_grad():
        for tensor in tensors:
            floating = tensor.is_floating_point() or tensor.is_complex()
            tensor.fill_(float("nan") if floating else True if tensor.dtype == torch.bool else -7777)


class RemoteCandidate:
    """Calls ``ModelNew`` (model ``model_id`` of the runner) on inputs the judge places in the arena.

    ``calls_per_batch``: K of the timed batches (``placement.CALLS_WITHOUT_CLOCK`` where nothing is timed). Every
    message, checked or timed, is laid out in one grid of K call slots at a base drawn afresh (``placement``).
    ``own_kernels_required``: every timed call must launch one of the candidate's own kernels, as every checked
    call must (off only to time plain torch programs with the judge's clock, as the fidelity benchmark does)."""

    def __init__(
        self,
        client: RunnerClient,
        arena: exchange.Arena,
        spec: OutputSpec,
        model_id: int = 0,
        *,
        calls_per_batch: int = 1,
        own_kernels_required: bool = True,
    ) -> None:
        self.client = client
        self.arena = arena
        self.spec = spec
        self.model_id = model_id
        self.calls_per_batch = calls_per_batch
        self.own_kernels_required = own_kernels_required
        self.grid: placement.Grid | None = None  # laid out from the first inputs placed (``grid_for``)
        # The previous call's places: (its grid, base, encoded arguments, output places)
        self._last_inputs: tuple[placement.Grid, int, list[Any], list[exchange.TensorRef]] | None = None
        self.calls = 0  # messages so far: a call's SlotOutputs are readable until the next one
        self.handover = Handover.of(
            arena
        )  # on a GPU every message waits behind the judge's gate, as timed ones do
        self.key = output_seal.SealKey.draw()  # the outputs' fingerprints (never sent to the runner)

    def grid_for(self, inputs: list[Any]) -> placement.Grid:
        """The grid of K slots for calls shaped like ``inputs``: the one laid out before when they fit it, else a new
        one (of one slot when K slots do not fit the arena)."""
        if self.grid is None or not self.grid.holds(inputs):
            try:
                self.grid = placement.lay_out(inputs, self.spec, self.calls_per_batch, self.arena.nbytes)
            except MemoryError:
                self.grid = placement.lay_out(inputs, self.spec, 1, self.arena.nbytes)
        return self.grid

    def place(self, inputs: list[Any]) -> tuple[list[Any], list[exchange.TensorRef]]:
        """Copy ``inputs`` into a slot drawn at random of the grid, at a base drawn afresh; the slot's output places
        (they never overlap its inputs: the grid holds the outputs after every slot's inputs). Every output place
        of the grid is poisoned, as before a timed batch."""
        grid = self.grid_for(inputs)
        base = placement.draw_base(self.arena.nbytes, grid.size)
        encoded, outs = self._fill(grid, placement.draw_slot(grid.calls), base, inputs)
        self._poison(grid, base)
        self._last_inputs = grid, base, encoded, outs
        return encoded, outs

    def _fill(
        self, grid: placement.Grid, slot: int, base: int, inputs: list[Any]
    ) -> tuple[list[Any], list[exchange.TensorRef]]:
        refs = iter(placement.shifted_ref(ref, base) for ref in placement.input_refs(grid.args[slot]))

        def put(tensor: torch.Tensor) -> exchange.TensorRef:
            ref = next(refs)
            with torch.no_grad():
                exchange.view(self.arena.tensor, ref).copy_(tensor)
            return ref

        encoded = exchange.encode_args(inputs, put)
        return encoded, [placement.shifted_ref(ref, base) for ref in grid.outs[slot]]

    def _poison(self, grid: placement.Grid, base: int) -> None:
        poison(
            [
                exchange.view(self.arena.tensor, placement.shifted_ref(ref, base))
                for outs in grid.outs
                for ref in outs
            ]
        )

    def reset_buffers(self) -> None:
        """The candidate model's buffers back to their values right after its build (``Runner._on_reset_buffers``)."""
        self.client.ask({"type": "reset_buffers", "model": self.model_id}, ("buffers_reset",))

    def call(
        self,
        inputs: list[Any],
        *,
        mode: str = "no_grad",
        ablate: bool = False,
        reuse_buffers: bool = False,
        monitor: bool = True,
        training: bool = True,
    ) -> CallOutcome:
        """One forward on (copies of) ``inputs``. ``reuse_buffers``: put them in the SAME arena places as the
        previous call (the buffer-reuse check needs the candidate to see one storage twice)."""
        if reuse_buffers and self._last_inputs is not None:
            grid, base, encoded, out_refs = self._last_inputs
            views = exchange.tensor_views(encoded, self.arena.tensor)
            with torch.no_grad():
                for view, value in zip(views, only_tensors(inputs), strict=True):
                    view.copy_(value)
            self._poison(grid, base)
        else:
            encoded, out_refs = self.place(inputs)
        entry = placement.call_entry(
            encoded, out_refs, self.spec.structure, mode=mode, ablate=ablate, monitor=monitor, train=training
        )
        return self._run([entry], [(encoded, out_refs, inputs)])[0]

    def call_batch(self, input_sets: list[list[Any]], *, ablate: bool = False) -> list[CallOutcome]:
        """One message of K calls (K = the grid's, ``len(input_sets)``), laid out as a timed batch: every slot of
        the grid at a base drawn afresh, the calls in an order drawn afresh, every output place poisoned. Returns
        the outcomes in ``input_sets``' order; a call the runner never reached (after one that failed) is
        ``ok=False`` with kind ``not_run``."""
        grid = self.grid_for(input_sets[0])
        if len(input_sets) != grid.calls:
            raise ValueError(f"a batch of {len(input_sets)} calls for a grid of {grid.calls}")
        base = placement.draw_base(self.arena.nbytes, grid.size)
        order = placement.draw_order(grid.calls)  # message position -> slot, and the input set it takes
        placed = [(*self._fill(grid, slot, base, input_sets[slot]), input_sets[slot]) for slot in order]
        self._poison(grid, base)
        self._last_inputs = None  # no single call's places to reuse
        entries = [
            placement.call_entry(args, outs, self.spec.structure, ablate=ablate) for args, outs, _ in placed
        ]
        by_position = self._run(entries, placed)
        return [by_position[order.index(slot)] for slot in range(grid.calls)]

    def _run(self, entries: list[dict[str, Any]], placed: list[tuple[Any, ...]]) -> list[CallOutcome]:
        """Send one run message; what each call left, in message order (``placed``: each call's encoded arguments,
        output places and the judge's copy of its inputs)."""
        self.calls += 1
        synchronize(self.arena.device)
        reply = ask_run(self.client, placement.run_message(self.model_id, entries), self.handover)
        reports = _reports(reply, len(entries))
        synchronize(self.arena.device)
        outcomes = []
        for index, (encoded, out_refs, inputs) in enumerate(placed):
            report = reports[index] if index < len(reports) else {"ok": False, "kind": "not_run"}
            outcome = CallOutcome(
                outputs=SlotOutputs(self, self.calls, out_refs),
                ok=bool(report.get("ok")),
                kind=_text(report.get("kind")),
                error=_text(report.get("error")),
                launched=_names(report.get("launched")),
                own_launches=_names(report.get("own")),
            )
            placed_views = exchange.tensor_views(encoded, self.arena.tensor)
            outcome.inputs_mutated = not same_values(placed_views, only_tensors(inputs))
            outcomes.append(outcome)
        return outcomes


def _reports(reply: dict[str, Any], calls: int) -> list[dict[str, Any]]:
    """The per-call reports of a reply to a ``calls``-call run: one each, fewer only after a call that failed."""
    reports = reply.get("calls")
    if (
        not isinstance(reports, list)
        or not 1 <= len(reports) <= calls
        or not all(isinstance(report, dict) for report in reports)
        or (len(reports) < calls and reports[-1].get("ok"))
    ):
        raise RunnerFault("protocol", f"the reply to a {calls}-call run must report each call it ran")
    return reports


def _text(value: Any) -> str | None:
    return None if value is None else str(value)[:4000]


def _names(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    return [str(name)[:200] for name in value[:1000]]


def load_candidate(client: RunnerClient, code: str, allow_tf32: bool) -> None:
    """Import the candidate in the runner (a fresh module each time). Outside the GPU's shared phases: the import
    is host work for honest code, so a judge waiting to time does not wait for it. Device work a candidate starts
    at import could as well start from any later step (launches are asynchronous): the shared side orders honest
    judges' device phases, it does not fence a candidate's process."""
    reply = client.ask({"type": "load", "code": code, "allow_tf32": allow_tf32}, ("loaded", "load_failed"))
    if reply["type"] == "load_failed":
        if reply.get("kind") == "exit":
            raise JudgeStop(Status.HACKED, str(reply.get("error"))[:3000], ["early_exit"])
        raise JudgeStop(Status.COMPILE_ERROR, str(reply.get("error"))[:3000])


def share_arena(client: RunnerClient, arena: exchange.Arena) -> None:
    description, fds = arena.share()
    client.ask({"type": "arena", **description}, ("arena_ok",), fds=fds)


def build_remote(
    client: RunnerClient,
    arena: exchange.Arena,
    model_id: int,
    seed: int,
    init_inputs: list[Any],
    state: dict[str, torch.Tensor],
) -> dict[str, Any]:
    arena.layout.reset()
    place = arena.put
    init = exchange.encode_args(init_inputs, place)
    refs = {name: place(value.detach()).to_json() for name, value in state.items()}
    synchronize(arena.device)
    reply = client.ask(
        {"type": "build", "model": model_id, "seed": seed, "init": init, "state": refs},
        ("built", "build_failed"),
    )
    if reply["type"] == "build_failed":
        if reply.get("kind") == "exit":
            raise JudgeStop(Status.HACKED, str(reply.get("error"))[:3000], ["early_exit"])
        raise JudgeStop(Status.COMPILE_ERROR, str(reply.get("error"))[:3000])
    transfer = reply.get("state_transfer")
    return transfer if isinstance(transfer, dict) else {}


def place_input_sets(arena: exchange.Arena, draws: list[Any]) -> list[Any]:
    """Encode, from the start of the arena, as many of the input sets ``draws`` make as it holds, in order: at least
    the first (the arena is sized for one call's inputs and outputs). Asking for two input sets regardless fails
    the coverage pass of five of liger-kernel's ten kernels at full size on an H200."""
    arena.layout.reset()
    placed: list[Any] = []
    for draw in draws:
        try:
            placed.append(exchange.encode_args(draw(), arena.put))
        except MemoryError:
            if not placed:
                raise
            break
    return placed
