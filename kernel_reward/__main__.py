"""Command line of kernel_reward.

    python -m kernel_reward eval --reference REF.py --candidate CAND.py [--device cpu|cuda] [--json] [--timeout S]
    python -m kernel_reward serve [--address ADDR] [--num-actors N] [--device cpu|cuda] [--workers W]
    python -m kernel_reward stop  [--address ADDR]

``eval`` exits 0 whenever an evaluation happened, whatever its verdict (the verdict is in the output), 2 on bad
arguments, 1 when no evaluation of the candidate could run (the evaluator failed to start, the reference is broken,
or the result is unscored: printed all the same). ``serve`` starts named, detached reward worker actors on a Ray cluster
(``ray start --head`` on the first node, ``ray start --address HEAD:6379`` on the others) that any
``Evaluator(backend="ray", ray_address=...)`` then uses; ``stop`` removes them.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import NoReturn

log = logging.getLogger("kernel_reward")


def _bad_input(message: str) -> NoReturn:
    """One line naming what is wrong, exit 2 (argparse's own errors also print the whole usage)."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        _bad_input(f"cannot read {what} file {path}: {exc.strerror}")


def cmd_eval(args: argparse.Namespace) -> int:
    from kernel_reward.evaluator import Evaluator
    from kernel_reward.result import EvalResult

    reference = _read(args.reference, "--reference")
    candidate = _read(args.candidate, "--candidate")
    if args.timeout is not None and args.timeout <= 0:
        _bad_input(f"--timeout must be > 0, got {args.timeout}")
    try:
        with Evaluator(device=args.device, timeout=args.timeout, workers=1, progress=False) as evaluator:
            result: EvalResult = evaluator.evaluate(reference, candidate, entry_point=args.entry_point)
    except (ValueError, RuntimeError, OSError) as exc:
        print(f"error: no evaluation could run: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(result.to_json(indent=2))
    else:
        speed = f"{result.speedup:.3f}x" if result.speedup is not None else "n/a (no timing on this device)"
        print(f"status:   {result.status.value}")
        unscored = "" if result.scored else " (unscored: the evaluator, not the candidate, ended it)"
        print(f"reward:   {result.reward:.4f}{unscored}")
        print(f"speedup:  {speed}")
        print(
            f"device:   {result.device} ({result.mode}); isolation: {result.isolation.get('level', 'unknown')}"
        )
        if result.hack_reasons:
            print(f"hacks:    {', '.join(result.hack_reasons)}")
        if result.error:
            print(f"error:    {result.error.strip()[:2000]}")
    if "reference_error" in result.flags or not result.scored:
        reason = (
            "the reference is broken (a task problem)" if "reference_error" in result.flags else "unscored"
        )
        first_line = (result.error or "").strip().splitlines()[:1]
        print(
            f"error: no evaluation of the candidate could run ({reason}): {''.join(first_line)}",
            file=sys.stderr,
        )
        return 1
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from kernel_reward.service.config import ServiceConfig
    from kernel_reward.service.ray_backend import NAMESPACE, _ray, find_served_workers, start_workers

    ray = _ray()
    ray.init(address=args.address, namespace=NAMESPACE, include_dashboard=False)
    existing = find_served_workers(ray)
    resources = ray.cluster_resources()
    gpus = int(resources.get("GPU", 0))
    device = args.device or ("cuda" if gpus else "cpu")
    count = args.num_actors or (gpus if device == "cuda" else max(1, int(resources.get("CPU", 1)) // 2))
    workers = args.workers or (1 if device == "cpu" else 4)
    actors = start_workers(
        ray,
        num_actors=count,
        device=device,
        workers=workers,
        service=ServiceConfig(),
        detached=True,
        name_offset=len(existing),
    )
    infos = ray.get([actor.info.remote() for actor in actors])
    for info in infos:
        log.info(
            "reward worker on %s: device %s, %d warm workers", info["host"], info["device"], info["workers"]
        )
    print(f"started {len(actors)} reward worker actor(s) ({len(existing)} were already running)")
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    from kernel_reward.service.ray_backend import NAMESPACE, _ray, find_served_workers

    ray = _ray()
    ray.init(address=args.address, namespace=NAMESPACE, include_dashboard=False)
    actors = find_served_workers(ray)
    for actor in actors:
        try:
            ray.get(actor.shutdown.remote(), timeout=30)
        except Exception:  # noqa: BLE001 - already gone
            pass
        ray.kill(actor)
    print(f"stopped {len(actors)} reward worker actor(s)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m kernel_reward",
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n", 1)[1],
    )
    sub = parser.add_subparsers(dest="command", required=True)
    ev = sub.add_parser("eval", help="evaluate one candidate file against one reference file")
    ev.add_argument(
        "--reference", type=Path, required=True, help="PyTorch reference program (class Model, get_inputs...)"
    )
    ev.add_argument("--candidate", type=Path, required=True, help="candidate: plain code or a raw completion")
    ev.add_argument(
        "--device", choices=["cpu", "cuda"], default=None, help="default: cuda when available, else cpu"
    )
    ev.add_argument(
        "--entry-point", default="Model", help="class name of the reference module (default: Model)"
    )
    ev.add_argument(
        "--timeout", type=float, default=None, help="wall-clock limit in seconds for the candidate"
    )
    ev.add_argument("--json", action="store_true", help="print the whole EvalResult as JSON")
    for name, text in (
        ("serve", "start detached reward worker actors on a Ray cluster"),
        ("stop", "stop the reward worker actors started by serve"),
    ):
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument(
            "--address",
            default="auto",
            help="Ray cluster address (default: auto = the local `ray start` node)",
        )
        if name == "serve":
            cmd.add_argument(
                "--num-actors", type=int, default=None, help="default: one per GPU (CPU: half the cores)"
            )
            cmd.add_argument(
                "--device",
                choices=["cpu", "cuda"],
                default=None,
                help="default: cuda when the cluster has GPUs",
            )
            cmd.add_argument("--workers", type=int, default=None, help="concurrent candidates per actor")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.command == "eval":
        return cmd_eval(args)
    if args.command == "serve":
        return cmd_serve(args)
    return cmd_stop(args)


if __name__ == "__main__":
    sys.exit(main())
