"""trl_ext.masks: the pure tensor assembly of the trainer, on hand-made values."""

import torch

from trl_ext.masks import loss_keep, trained_turns


def test_loss_keep_combines_turn_row_and_token_filters():
    turn_ids = torch.tensor([[0, 0, -1, 1, 1], [0, -1, 1, 1, -1]])  # -1: feedback / padding
    keep_turns = torch.tensor([[True, False], [True, True]])  # row 0's second turn filtered out
    keep_rows = torch.tensor([True, True])
    keep_tokens = torch.ones(2, 5, dtype=torch.bool)
    keep_tokens[1, 3] = False  # one token rejected (token-level MRS)
    keep = loss_keep(keep_turns, keep_rows, keep_tokens, turn_ids)
    assert keep.tolist() == [[True, True, False, False, False], [True, False, True, False, False]]
    assert not loss_keep(keep_turns, torch.tensor([False, True]), keep_tokens, turn_ids)[0].any()


def test_trained_turns_counts_row_turn_pairs_with_a_loss_token():
    turn_ids = torch.tensor([[0, 0, -1, 1, 1], [0, -1, 1, 1, -1]])
    loss_mask = torch.tensor([[1, 1, 0, 0, 0], [0, 0, 1, 0, 0]])
    assert int(trained_turns(loss_mask, turn_ids, max_turns=3)) == 2  # (row 0, turn 0) and (row 1, turn 1)


def test_a_trajectory_with_an_unscored_turn_trains_nowhere():
    """A turn the service could not score (its reward says nothing about the answer) makes the trajectory's returns
    unknown: every turn of it leaves the baselines and the loss, instead of training as a failure."""
    from trl_ext.env import StepResult
    from trl_ext.masks import turn_tensors
    from trl_ext.rollout import Trajectory, TurnRecord

    def trajectory(*scored: bool) -> Trajectory:
        turns = [
            TurnRecord(
                [1], "x", StepResult(reward=0.5 if ok else 0.0, feedback="", scored=ok), truncated=False
            )
            for ok in scored
        ]
        return Trajectory(
            task={},
            prompt_ids=[0],
            completion_ids=[1] * len(turns),
            turn_ids=list(range(len(turns))),
            turns=turns,
        )

    _, rewards = turn_tensors([trajectory(True, True), trajectory(True, False), trajectory(False)], 2, 2)
    assert rewards[0].tolist() == [0.5, 0.5]
    assert torch.isnan(rewards[1]).all() and torch.isnan(rewards[2]).all()
