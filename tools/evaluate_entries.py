"""Evaluate hack-corpus entries with a given checkout of the judge, one fresh worker process each.

For an attack's before / after evidence in one device call: the entries come from this tree, the judge from
``--repo`` (this tree by default, or an older checkout unpacked beside it). A "twin" is an entry's source with
one line replaced, e.g. the attack without its trick, timed in the same run.

    python tools/evaluate_entries.py --device cuda --entries timing_torch_when_gated_gpu \\
        [--twin "NAME|ENTRY|OLD|NEW"] [--repo /tmp/before] [--json-out FILE]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))


def evaluate(repo: Path, reference: str, source: str, device: str, timeout_s: float) -> dict:
    """One evaluation by ``repo``'s one-shot worker (``python -m kernel_reward.judge.pipeline``); its result as
    a dict, or {"status": "no_result", "error": ...} when the worker wrote none."""
    from hack_corpus import as_completion
    from kernel_reward.options import EvalOptions
    from kernel_reward.request import EvalRequest

    options = EvalOptions(seed_base=1234, timing_budget_ms=100.0)
    request = EvalRequest(reference, as_completion(source), device=device, options=options)
    with tempfile.TemporaryDirectory() as tmp:
        request_path, out_path = Path(tmp) / "request.json", Path(tmp) / "result.json"
        request_path.write_text(request.to_json())
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "kernel_reward.judge.pipeline",
                "--request",
                str(request_path),
                "--out",
                str(out_path),
                "--work-dir",
                str(Path(tmp) / "work"),
            ],
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        if not out_path.exists():
            return {"status": "no_result", "error": proc.stderr[-2000:]}
        return json.loads(out_path.read_text())


def main(argv: list[str] | None = None) -> int:
    from hack_corpus import load_corpus

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", help="cuda, or cpu (the Triton interpreter)")
    parser.add_argument("--entries", required=True, help="comma-separated corpus entry names")
    parser.add_argument(
        "--twin",
        action="append",
        default=[],
        metavar="NAME|ENTRY|OLD|NEW",
        help="also evaluate ENTRY's source with the text OLD replaced by NEW, reported as NAME",
    )
    parser.add_argument("--repo", type=Path, default=REPO_ROOT, help="the checkout whose judge evaluates")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per evaluation")
    parser.add_argument("--json-out", type=Path, help="write the rows here as JSON")
    args = parser.parse_args(argv)

    corpus = {entry.name: entry for entry in load_corpus()}
    jobs = []
    for name in args.entries.split(","):
        if name not in corpus:
            parser.error(f"no corpus entry {name!r}")
        jobs.append((name, corpus[name].reference, corpus[name].source))
    for twin in args.twin:
        name, entry, old, new = twin.split("|", 3)
        if entry not in corpus or old not in corpus[entry].source:
            parser.error(f"--twin {twin!r}: no entry {entry!r}, or its source lacks {old!r}")
        jobs.append((name, corpus[entry].reference, corpus[entry].source.replace(old, new)))
    rows = []
    print(f"{'candidate':34} {'status':12} {'speedup':>8}  ci               reasons (judge: {args.repo})")
    for name, reference, source in jobs:
        result = evaluate(args.repo, reference, source, args.device, args.timeout)
        speedup, ci = result.get("speedup"), result.get("speedup_ci")
        rows.append(
            {
                "candidate": name,
                "repo": str(args.repo),
                **{
                    k: result.get(k)
                    for k in ("status", "speedup", "speedup_ci", "hack_reasons", "reward", "flags", "error")
                },
            }
        )
        ci_text = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "-"
        print(
            f"{name:34} {result.get('status', '?'):12} {speedup if speedup is None else round(speedup, 3)!s:>8}"
            f"  {ci_text:16} {result.get('hack_reasons') or ''}"
        )
    if args.json_out:
        args.json_out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
