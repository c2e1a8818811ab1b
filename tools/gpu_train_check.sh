#!/usr/bin/env bash
# GPU TRLOO run with a real small instruct model, over two back-to-back device calls.
#
# A device call carries at most 64 MiB, and carried paths do not survive to the next call, but the machine's
# /tmp does while it stays warm (30 s after a call). So the 98 MB SmolLM2-135M-Instruct GGUF
# (tools/split_file.py FILE --parts 2 --to DIR) crosses in two pieces, each in its own ignored folder:
#
#   call 1 (carry .gguf_a):        bash tools/gpu_train_check.sh stage .gguf_a/part1
#   call 2 (carry .whl .gguf_b):   bash tools/gpu_train_check.sh train "$OUT" .gguf_b/part2 [extra args...]
#
# "train" installs the carried wheels (datasets, trl, gguf, ...), joins the pieces (SHA-256 checked) and runs
# tools/gpu_trloo_run.py: 10 steps of 256-token turns fit in about 5 minutes on an H200 (measured: ~43 s a step
# at 384 tokens, 95 % of it generation).
set -euo pipefail
KEEP=/tmp/gguf_keep
SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53  # SmolLM2-135M-Instruct.Q4_1.gguf
mode=${1:?usage: gpu_train_check.sh stage PART1 | train OUT PART2 [args...]}
case $mode in
  stage)
    mkdir -p "$KEEP" && cp "${2:?PART1}" "$KEEP/part1" && ls -l "$KEEP" ;;
  train)
    out=${2:?OUT}; part2=${3:?PART2}; shift 3
    [[ -f $KEEP/part1 ]] || { echo "no $KEEP/part1: run 'stage' in the call just before (machine went cold?)"; exit 3; }
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
    mkdir -p "$out/train"
    rc=0
    timeout 560 python3 tools/gpu_trloo_run.py --out "$out/train" --device cuda --gguf-parts "$KEEP/part1" "$part2" \
      --gguf-sha256 "$SHA256" --preset full --steps 10 --scripted-steps 1 --max-completion-length 256 --batch 8 \
      --generations 4 --turns 2 --temperature 0.7 --time-budget-s 480 "$@" >"$out/train_log.txt" 2>&1 || rc=$?
    echo "train rc=$rc"
    grep -v -E "it/s\]|s/it\]|[Ww]arn" "$out/train_log.txt" | tail -30
    exit $rc ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
