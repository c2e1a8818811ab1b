"""The ablated batch among the timed ones (``batch_clock.time_interleaved(..., ablated=...)``): one pair at a
secret place whose candidate calls all run with their own launches skipped, sent as every other timed pair, its
time left out, its calls judged by the decoy rule (``correctness.check_ablated``). The runner is stood in for by
stubs that answer every call from the arena; nothing runs under the interpreter."""

from __future__ import annotations

import types

import pytest
import torch

from kernel_reward.ipc import exchange
from kernel_reward.judge.compare import PiecewiseComparison
from kernel_reward.judge.correctness import check_ablated
from kernel_reward.judge.remote import output_spec, slot_bytes
from kernel_reward.judge.stop import JudgeStop
from kernel_reward.options import EvalOptions
from kernel_reward.result import Status
from kernel_reward.timing.batch_clock import BatchClock, Interleaved, time_interleaved

BATCHES = 3  # timed pairs per measurement; one more is the ablated one
DRAWS = 60  # measurements: every one of BATCHES + 1 places is seen with probability 1 - 4 * (3/4)^60


def draw(seed: int) -> list:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(40, 8, generator=generator), torch.randn(40, 8, generator=generator)]


def reference(x, y):
    return torch.relu(x + y)


def honest(x, y, ablated):
    return None if ablated else reference(x, y)  # ablated: its kernel never wrote the output


def torch_when_timed(x, y, ablated):
    """A trivial kernel (skipped when ablated) and torch's answer: every timed call right whatever is skipped."""
    return reference(x, y)


def fails_without_kernels(x, y, ablated):
    if ablated:
        raise RuntimeError("reads what its kernel should have written")
    return reference(x, y)


class Runner:
    """Keeps every run message and answers each call by writing ``answer``'s output into its output place."""

    def __init__(self, arena: exchange.Arena, answer) -> None:
        self.arena, self.answer = arena, answer
        self.messages: list[dict] = []

    def ask(self, message: dict, expect: tuple) -> dict:
        self.messages.append(message)
        reports = []
        for call in message["calls"]:
            args = exchange.decode_args(call["args"], self.arena.tensor)
            (out,) = [exchange.view(self.arena.tensor, exchange.TensorRef.from_json(r)) for r in call["out"]]
            try:
                value = self.answer(*args, call["ablate"])
            except RuntimeError as exc:
                reports.append({"ok": False, "kind": "raised", "error": str(exc)})
                break
            if value is not None:
                out.copy_(value)
            reports.append({"ok": True, "own": [] if call["ablate"] else ["kernel"]})
        return {"type": "ran", "calls": reports}


def ablated_compare(outputs):
    return PiecewiseComparison(outputs, EvalOptions().tolerance, 0.0, measure_error=False)


def timed_compare(outputs):
    return PiecewiseComparison(outputs, EvalOptions().tolerance, 1e-5, measure_error=False)


@pytest.fixture(params=[4, 1], ids=["4-call", "1-call"])
def clock(request):
    calls = request.param
    spec = output_spec(reference(*draw(0)))
    arena = exchange.Arena(2 * calls * slot_bytes(draw(0), spec), torch.device("cpu"))
    clock = BatchClock(reference, arena, spec, torch.device("cpu"), 0, draw, reference_keeps_inputs=True)
    clock.prepare(calls)
    yield clock
    arena.close()


def measure(clock: BatchClock, answer, ablated=ablated_compare) -> tuple[Interleaved, list[dict]]:
    runner = Runner(clock.arena, answer)
    candidate = types.SimpleNamespace(model_id=0, own_kernels_required=True)
    times = time_interleaved(clock, candidate, runner, BATCHES, timed_compare, ablated=ablated)
    return times, runner.messages


def ablated_places(messages: list[dict]) -> list[int]:
    return [index for index, m in enumerate(messages) if any(call["ablate"] for call in m["calls"])]


def test_an_honest_candidate_passes_and_the_ablated_pair_is_left_out_of_its_times(clock):
    (reference_ms, candidate_ms, _), messages = measure(clock, honest)
    assert len(messages) == BATCHES + 1 and len(reference_ms) == len(candidate_ms) == BATCHES
    (place,) = ablated_places(messages)
    assert all(call["ablate"] for call in messages[place]["calls"])  # every call of it, none of the others
    # Without the ablated pair: the same number of timed pairs as before it existed
    (reference_ms, candidate_ms, _), messages = measure(clock, honest, ablated=None)
    assert len(messages) == len(reference_ms) == BATCHES and ablated_places(messages) == []


def test_a_torch_answer_behind_a_trivial_kernel_while_timed_is_a_decoy(clock):
    with pytest.raises(JudgeStop) as caught:
        measure(clock, torch_when_timed)
    assert caught.value.status == Status.HACKED and caught.value.hack_reasons == ["decoy_kernel"]
    # The same candidate passes the timed pairs without one (what the judge saw before)
    measure(clock, torch_when_timed, ablated=None)


def test_a_call_that_fails_without_its_kernels_shows_they_matter(clock):
    (reference_ms, _, _), messages = measure(clock, fails_without_kernels)
    assert len(reference_ms) == BATCHES and len(ablated_places(messages)) == 1


def test_the_ablated_pair_takes_a_place_drawn_afresh_and_the_shape_of_a_timed_one(clock):
    places, shapes, layouts = [], set(), {True: set(), False: set()}
    for _ in range(DRAWS):
        _, messages = measure(clock, honest)
        places += ablated_places(messages)
        for message in messages:
            ablate = message["calls"][0]["ablate"]
            # the message's fields and each call's, with their types: the same whether ablated or not
            shapes.add(
                (
                    tuple(sorted(message)),
                    message["dry"],
                    len(message["calls"]),
                    tuple(
                        tuple(sorted((k, type(v).__name__) for k, v in call.items()))
                        for call in message["calls"]
                    ),
                )
            )
            # where its calls lie: each call's gap from first input to output place, and the grid's alignment
            layouts[ablate] |= {
                call["out"][0]["o"] - call["args"][0]["tensor"]["o"] for call in message["calls"]
            }
            assert all(call["args"][0]["tensor"]["o"] % exchange.ALIGN == 0 for call in message["calls"])
    assert set(places) == set(range(BATCHES + 1))
    assert len(shapes) == 1, shapes
    assert layouts[True] == layouts[False] and len(layouts[False]) == clock.calls


def test_the_decoy_rule_judges_only_calls_that_ran_with_their_inputs_intact():
    asked = []

    def right(call: int):
        return lambda: asked.append(call) or True

    check_ablated([(False, right(0)), (False, right(1))])  # failed, not reached, or inputs changed
    assert asked == []
    with pytest.raises(JudgeStop, match=r"call 1 of a 3-call batch") as caught:
        check_ablated([(False, right(0)), (True, right(1)), (True, right(2))])
    assert caught.value.hack_reasons == ["decoy_kernel"] and asked == [1]
    with pytest.raises(JudgeStop, match=r"kernels are decoys$"):
        check_ablated([(True, lambda: True)])  # a one-call message names no call
    check_ablated([(True, lambda: False)] * 3)


def test_an_honest_kernel_timed_on_the_host_clock_stays_correct(evaluate_subprocess):
    """The whole evaluation with the timed phase on the CPU's host clock (``host_clock_timing``): the honest kernel
    passes the ablated pair and gets its speedup from the timed pairs alone."""
    from hack_corpus import as_completion, load_corpus

    entry = next(e for e in load_corpus() if e.name == "honest_add_relu")
    result = evaluate_subprocess(
        entry.reference, as_completion(entry.source), device="cpu", host_clock_timing=True
    )
    assert result.status.value == "correct", result.error
    assert result.timing_available and result.speedup is not None and result.speedup > 0
    assert "timing_host_clock_interpreter" in result.flags and result.reward == 1.0  # correctness terms only
    assert result.timing_method["method"] == "judge_host_clock"


def test_several_ablated_pairs_take_distinct_secret_places(clock):
    """A candidate must cheat in more than half the timed pairs to move the median; m ablated pairs catch that
    with probability above 1 - 2^-m, each at its own place."""
    runner = Runner(clock.arena, honest)
    candidate = types.SimpleNamespace(model_id=0, own_kernels_required=True)
    places = set()
    for _ in range(20):
        runner.messages.clear()
        reference_ms, _, _ = time_interleaved(
            clock, candidate, runner, BATCHES, timed_compare, ablated=ablated_compare, ablated_pairs=3
        )
        drawn = ablated_places(runner.messages)
        assert len(runner.messages) == BATCHES + 3 and len(drawn) == 3 and len(reference_ms) == BATCHES
        places |= set(drawn)
    assert places == set(range(BATCHES + 3))
    with pytest.raises(JudgeStop):  # any one of them catches a timed path that needs no kernel
        time_interleaved(
            clock,
            candidate,
            Runner(clock.arena, torch_when_timed),
            BATCHES,
            timed_compare,
            ablated=ablated_compare,
            ablated_pairs=3,
        )


def test_the_number_of_ablated_pairs_is_an_option():
    assert EvalOptions().ablated_timed_pairs == 3
    with pytest.raises(ValueError, match="ablated_timed_pairs must be an int >= 0"):
        EvalOptions(ablated_timed_pairs=-1)


def test_the_ablated_pairs_time_what_the_candidate_does_without_its_kernels(clock):
    """Each ablated pair whose calls all ran gives one candidate batch time (the judge-clock cross-check of
    coverage, ``batch_stats.own_share``); one whose calls failed without the kernels gives none."""
    times, _ = measure(clock, honest)
    assert len(times.ablated_ms) == 1 and times.ablated_ms[0] > 0
    times, _ = measure(clock, fails_without_kernels)
    assert times.ablated_ms == []
    times, _ = measure(clock, honest, ablated=None)
    assert times.ablated_ms == []


def test_own_share_on_the_judges_clock():
    from kernel_reward.timing.batch_stats import own_share

    assert own_share([1.0, 1.1, 0.9], [0.0, 0.01]) == pytest.approx(0.995)  # all its time is its kernels
    assert own_share([1.0, 1.0], [0.9]) == pytest.approx(0.1)  # a copy kernel around torch's work
    assert own_share([1.0], [1.5]) == 0.0  # slower without its kernels: clipped, never negative
    assert own_share([1.0], []) is None and own_share([], [0.5]) is None and own_share([0.0], [0.1]) is None
