"""The fresh test set of a learning experiment: tasks of the computations SFT and RL trained on (the training
variants), none of whose honest answers equals a training or RL-pool answer, with each task's line distance to
the nearest of them; and the probe, its first tasks taken across computations in turn.

The SFT tasks and the pool candidates are regenerated from their seeds exactly as ``scripts/pipeline.py --stages
sft_data`` draws them (``--sft-tasks``, ``--seed``; the pool from seed + 1); ``--pool`` names the pool actually
used (its uuids select the pool answers). Every kept task's honest answer is judged ``correct`` first.

    python tools/protocol_test_set.py --sft-tasks 216 --seed 0 --pool runs/learn_data/sft_data/rl_pool \\
        --count 48 --test-seed 2 --probe 16 --out docs/training/protocol/test_set
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without an install

from dataset_builder.synthetic.generate import generate_tasks  # noqa: E402
from dataset_builder.synthetic.novelty import nearest_answer  # noqa: E402
from dataset_builder.synthetic.pool import rl_pool_candidates  # noqa: E402
from dataset_builder.synthetic.split import DEFAULT_HELD_OUT, split_tasks  # noqa: E402
from dataset_builder.synthetic.task import FAMILIES, SyntheticTask  # noqa: E402


def pool_tasks(
    pool_folder: Path, sft: list[SyntheticTask], held: set[str], pool_draws: int, seed: int, answers: str
) -> list[SyntheticTask]:
    """The pool's tasks: its rows' uuids among the candidates the pipeline drew for it
    (``dataset_builder.synthetic.pool``), so a pool filtered afterwards is found too."""
    import datasets

    rows = datasets.load_dataset(str(pool_folder))["train"]
    uuids = {row["extra_info"]["uuid"] for row in rows}
    drawn = {task.uuid: task for task in rl_pool_candidates(sft, held, pool_draws, seed, answers)}
    missing = sorted(uuids - set(drawn))
    if missing:
        raise SystemExit(
            f"error: pool tasks not among the candidates drawn from seed {seed + 1}: {missing[:5]}"
        )
    return [drawn[uuid] for uuid in sorted(uuids)]


def candidates(trained: set[str], seen: set[str], answers: set[str], test_seed: int, wanted: int) -> list:
    """Fresh tasks of the trained computations, none a seen task or a seen answer, in draw order."""
    fresh = []
    for task in generate_tasks(20 * wanted, seed=test_seed, families=FAMILIES):
        if task.key in trained and task.uuid not in seen and task.solution not in answers:
            fresh.append(task)
    return fresh


def across_computations(tasks: list[SyntheticTask], count: int) -> list[SyntheticTask]:
    """``count`` tasks taken from each computation (``family/variant``) in turn, in draw order within one."""
    by_key: dict[str, list[SyntheticTask]] = defaultdict(list)
    for task in tasks:
        by_key[task.key].append(task)
    chosen: list[SyntheticTask] = []
    while len(chosen) < count and any(by_key.values()):
        for key in sorted(by_key):
            if by_key[key] and len(chosen) < count:
                chosen.append(by_key[key].pop(0))
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sft-tasks", type=int, required=True, help="pipeline --sft-tasks of the SFT data")
    parser.add_argument("--seed", type=int, default=0, help="pipeline --seed of the SFT data (default 0)")
    parser.add_argument("--pool", type=Path, default=None, help="the RL pool dataset folder (its uuids)")
    parser.add_argument(
        "--rl-pool-tasks",
        type=int,
        default=64,
        help="pipeline --rl-pool-tasks the pool was drawn with (default 64)",
    )
    parser.add_argument(
        "--rl-pool-answers",
        choices=["seen", "any"],
        default="any",
        help="pipeline --rl-pool-answers the pool was drawn with (default any, the protocol's)",
    )
    parser.add_argument("--count", type=int, default=48, help="test tasks (default 48)")
    parser.add_argument("--test-seed", type=int, default=2, help="seed of the test draws (default 2)")
    parser.add_argument(
        "--probe", type=int, default=16, help="probe tasks, the test set's first (default 16)"
    )
    parser.add_argument("--device", default="cpu", help="device judging the honest answers (default cpu)")
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    args = parser.parse_args(argv)
    if not 0 < args.probe <= args.count:
        parser.error(f"--probe must be between 1 and --count ({args.count}), got {args.probe}")

    sft = generate_tasks(args.sft_tasks, seed=args.seed)
    split = split_tasks(sft, DEFAULT_HELD_OUT)
    trained = {task.key for task in split.train}
    held = {task.uuid for task in split.held_out}
    pool = (
        pool_tasks(args.pool, sft, held, args.rl_pool_tasks, args.seed, args.rl_pool_answers)
        if args.pool
        else []
    )
    known = {**{t.uuid: t.solution for t in split.train}, **{t.uuid: t.solution for t in pool}}
    seen = {t.uuid for t in sft} | {t.uuid for t in pool}
    fresh = across_computations(
        candidates(trained, seen, set(known.values()), args.test_seed, args.count), 2 * args.count
    )

    from dataset_builder.sft_data import completion
    from dataset_builder.synthetic.rows import write_task_dataset
    from kernel_reward import Evaluator

    with Evaluator(device=args.device, timeout=180) as evaluator:
        results = evaluator.evaluate_many(
            [(t.reference, completion(t.plan, t.solution)) for t in fresh], progress=True
        )
    solvable = [t for t, r in zip(fresh, results, strict=True) if r.status.value == "correct"]
    test = across_computations(solvable, args.count)
    if len(test) < args.count:
        raise SystemExit(f"error: only {len(test)} solvable fresh tasks of {len(fresh)} drawn; ask for fewer")

    train_answers = {t.uuid: t.solution for t in split.train}
    pool_answers = {t.uuid: t.solution for t in pool}
    novelty = []
    for task in test:
        near_train = nearest_answer(task.solution, train_answers)
        near_pool = nearest_answer(task.solution, pool_answers) if pool_answers else None
        novelty.append(
            {
                "uuid": task.uuid,
                "computation": task.key,
                "ops": list(task.ops),
                "nearest_training_answer": near_train.name,
                "lines_from_training": near_train.distance,
                "nearest_pool_answer": near_pool.name if near_pool else None,
                "lines_from_pool": near_pool.distance if near_pool else None,
                "probe": len(novelty) < args.probe,
            }
        )
    args.out.mkdir(parents=True, exist_ok=True)
    write_task_dataset(test, args.out / "test")
    write_task_dataset(test[: args.probe], args.out / "probe")
    (args.out / "novelty.json").write_text(json.dumps(novelty, indent=2) + "\n", encoding="utf-8")

    per_key: dict[str, list[int]] = defaultdict(list)
    for row in novelty:
        per_key[row["computation"]].append(row["lines_from_training"])
    print("computation | tasks | probe | lines from the nearest training answer (min / median / max)")
    probe_keys = Counter(row["computation"] for row in novelty if row["probe"])
    for key, distances in sorted(per_key.items()):
        ordered = sorted(distances)
        print(
            f"{key} | {len(ordered)} | {probe_keys[key]} | "
            f"{ordered[0]} / {ordered[len(ordered) // 2]} / {ordered[-1]}"
        )
    print(f"wrote {args.out / 'test'}, {args.out / 'probe'} and {args.out / 'novelty.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
