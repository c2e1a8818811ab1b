"""What the judge keeps in memory during the correctness phases (issue 15: a 6 GiB task must fit beside its
inputs and outputs): trials compared by fingerprint, references run on the judge's inputs when they leave them
alone, outputs cloned only where they share storage."""

import pytest
import torch

from kernel_reward import correctness, tensors


def test_fingerprints_tell_equal_outputs_from_different_ones(monkeypatch):
    a = torch.randn(1000, 37)
    assert tensors.fingerprint([a]) == tensors.fingerprint([a.clone()])
    assert tensors.fingerprint([a.t()]) == tensors.fingerprint([a.t().contiguous()])  # values, not layout
    nudged = a.clone()
    nudged[5, 3] = torch.nextafter(nudged[5, 3], torch.tensor(float("inf")))  # one bit of one element
    assert tensors.fingerprint([a]) != tensors.fingerprint([nudged])
    assert tensors.fingerprint([a]) != tensors.fingerprint([a.view(37, 1000)])  # the shape is part of it
    assert tensors.fingerprint([a]) != tensors.fingerprint([a.double()])

    monkeypatch.setattr(tensors, "FINGERPRINT_CHUNK", 1000)  # order across a chunk boundary still counts
    b = torch.randn(10_007)
    swapped = b.clone()
    swapped[[999, 1000]] = swapped[[1000, 999]]
    assert tensors.fingerprint([b]) == tensors.fingerprint([b.clone()])
    assert tensors.fingerprint([b]) != tensors.fingerprint([swapped])
    odd = torch.arange(7, dtype=torch.uint8)  # bytes beyond the last whole 32-bit word
    assert tensors.fingerprint([odd]) != tensors.fingerprint([odd.flip(0)])


def test_the_constant_output_check_reads_fingerprints():
    varies = [tensors.fingerprint([torch.randn(8)]) for _ in range(3)]
    constant = [tensors.fingerprint([torch.ones(8)])] * 3
    with pytest.raises(correctness._Stop, match="same for every input"):
        correctness._check_not_constant(varies, constant)
    correctness._check_not_constant(varies, varies)  # an honest candidate
    correctness._check_not_constant(constant, constant)  # the reference itself is constant: nothing to say


class _Recording(torch.nn.Module):
    def __init__(self, body):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(4))
        self.body = body
        self.seen = []

    def forward(self, x):
        self.seen.append(x)
        return self.body(self, x)


def _task(model, keeps_inputs):
    return correctness.JudgeTask(None, model, None, [], {}, keeps_inputs)


def test_a_reference_that_leaves_its_inputs_alone_runs_on_them_and_its_outputs_are_not_copied():
    model = _Recording(lambda self, x: torch.relu(x))
    x = torch.randn(4)
    (out,) = correctness.run_reference(_task(model, True), [x], torch.device("cpu"))
    assert model.seen[0] is x  # no clone of the inputs
    kept_ptr = out.untyped_storage().data_ptr()
    assert kept_ptr not in tensors.storage_ptrs([x]) and torch.equal(out, torch.relu(x))


@pytest.mark.parametrize("body", [lambda self, x: x, lambda self, x: self.scale, lambda self, x: x[1:]])
def test_an_output_sharing_storage_with_an_input_or_the_model_is_copied(body):
    model = _Recording(body)
    x = torch.randn(4)
    (out,) = correctness.run_reference(_task(model, True), [x], torch.device("cpu"))
    assert not tensors.storage_ptrs([out]) & tensors.storage_ptrs([x, model.scale])
    x.add_(1)  # the judge's inputs change later (the candidate gets them too): the kept answer must not
    model.scale.data.add_(1)
    assert not torch.equal(out, body(model, x).detach())


def test_a_reference_that_writes_into_its_inputs_gets_a_copy():
    model = _Recording(lambda self, x: x.mul_(2))
    x = torch.ones(4)
    (out,) = correctness.run_reference(_task(model, False), [x], torch.device("cpu"))
    assert model.seen[0] is not x and torch.equal(x, torch.ones(4)) and torch.equal(out, torch.full((4,), 2.0))


def test_outputs_are_compared_in_chunks_with_the_same_verdicts(monkeypatch):
    """Chunked comparison (its temporaries bounded) gives the figures of the whole-tensor one: outliers, NaN and
    inf in different chunks, the largest error in the last chunk."""
    reference = torch.randn(10_000, dtype=torch.float16)
    close = reference.clone()
    close[[10, 5_000]] += 0.0005
    wrong = close.clone()
    wrong[[20, 7_000, 9_999]] += torch.tensor([0.5, 0.25, 4.0], dtype=torch.float16)
    nan_both = reference.clone()
    nan_both[3_000] = float("nan")
    reference_nan = reference.clone()
    reference_nan[3_000] = float("nan")
    wrong_inf = wrong.clone()
    wrong_inf[8_000] = float("inf")

    def verdicts():
        tolerance = lambda dtype: (1e-2, 1e-2)  # noqa: E731
        return [tensors.compare_outputs([cand], [ref], tolerance, share) for cand, ref in
                ((close, reference), (wrong, reference), (nan_both, reference_nan), (wrong_inf, reference))
                for share in (0.0, 0.001)]

    whole = verdicts()
    monkeypatch.setattr(tensors, "COMPARE_CHUNK", 999)
    chunked = verdicts()
    assert [(v.ok, v.max_abs_error, v.reason) for v in chunked] == [(v.ok, v.max_abs_error, v.reason) for v in whole]
    assert [v.ok for v in whole] == [True, True, False, False, True, True, False, False]
    assert whole[2].max_abs_error == pytest.approx(4.0, abs=0.01)  # fp16 rounding of the nudged value


def test_coverage_calls_cycle_over_one_clone_per_input_set():
    from kernel_reward.profiling import cycled_clones

    pool = [[torch.ones(3), 2], [torch.zeros(3), 5]]
    sets = cycled_clones(pool, 5)
    assert len(sets) == 5 and sets[0] is sets[2] is sets[4] and sets[1] is sets[3]
    assert sets[0][0] is not pool[0][0] and torch.equal(sets[0][0], pool[0][0]) and sets[1][1] == 5
    assert len({id(t) for args in sets for t in args if isinstance(t, torch.Tensor)}) == 2  # two clones, not five
