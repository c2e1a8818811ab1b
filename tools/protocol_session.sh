#!/usr/bin/env bash
# One GPU session of the pre-registered learning experiment (docs/training/protocol/PROTOCOL.md). A session's
# work outlasts one device call (10 minutes), so "start" runs its plan in the background (setsid, from a copy of
# the working tree under $KEEP) and each later call waits on it while the machine stays warm:
#
#   calls 1-7 (carry .gguf/partN alone):   bash tools/protocol_session.sh stage N .gguf/partN
#   call 8 (carry .whl runs/protocol_data): bash tools/protocol_session.sh start "sft pool pilot" && \
#                                           bash tools/protocol_session.sh wait "$OUT" 560
#   once "pool" has chosen (first session only; "wait" returns $OUT/rl_pool.json), here: commit it as
#                                           docs/training/protocol/rl_pool.json, then
#   next call:                              bash tools/protocol_session.sh go && bash tools/protocol_session.sh wait "$OUT" 560
#   further calls:                          bash tools/protocol_session.sh wait "$OUT" 560
#
# Plan steps, run in order: "sft" (join the model, SFT, evaluate it on the test set), "pool" (sample the pool
# candidates, keep the tasks solved 10-50 % of the time, write rl_pool.json, then wait for "go": the pool is
# committed before any RL step), "pilot" (a 2-step run of each arm side by side, seed 99: wall time and peak GPU
# memory), "run:ARM:SEED" (8 TRLOO steps, ARM trloo or control, with the probe; then the test-set evaluation).
# Without "pool" in the plan, "run" trains on the committed docs/training/protocol/rl_pool.json.
# "wait" packs each finished step's folder into $OUT/STEP.tar.gz (a running one's logs so far into
# STEP.partial.tar.gz, so a lease that ends mid-step still returns them) and prints the plan's progress.
# A CPU dry run with the tiny model: MODEL_DIR (skips the GGUF), SFT_ARGS / EVAL_ARGS as in gpu_learning_run.sh,
# RL_EXTRA (appended to each run's options), POOL_FILE, POOL_SAMPLES, EVAL_TASKS, EVAL_SAMPLES.
set -euo pipefail
KEEP=${KEEP:-/tmp/learn}
SESSION=$KEEP/session
TREE=$KEEP/tree
TEST=docs/training/protocol/test_set
POOL_FILE=${POOL_FILE:-docs/training/protocol/rl_pool.json}
export KEEP DATA=${DATA:-runs/protocol_data/sft_data} EVAL_TASKS=${EVAL_TASKS:-48} EVAL_SAMPLES=${EVAL_SAMPLES:-8}
export EVAL_DATASET=$TEST/test PARTS=${PARTS:-7}  # pieces of 47 MiB beside an 11 MB working tree
# One judge for all six runs whatever the current defaults (PROTOCOL.md Deviations): the launch ledger off in every
# evaluation and reward pool, and every copy of a completion judged on its own (reward_share_identical).
export EVAL_ARGS="--launch-ledger off ${EVAL_ARGS:-}"
PINNED_RL_ARGS="--reward_launch_ledger false --reward_share_identical false"
# One attention backend for all six runs' training too: torch's choice, as in the first runs (PROTOCOL.md
# Deviations: cuDNN's attention backward and the SFT's step 7).
export SFT_ARGS="--cudnn_attention keep ${SFT_ARGS:-}"
PINNED_RL_ARGS="$PINNED_RL_ARGS --cudnn_attention keep"
mode=${1:?usage: protocol_session.sh stage N PIECE | start PLAN | go | wait OUT SECONDS | plan PLAN}

probe_args="--probe_dataset $TEST/probe --probe_tasks 16 --eval_strategy steps --eval_steps 2 \
--num_generations_eval 4 --per_device_eval_batch_size 16"

step_sft() {
  bash tools/gpu_learning_run.sh sft "$1"
}

step_pool() {
  POOL_SAMPLES=${POOL_SAMPLES:-4} bash tools/gpu_learning_run.sh pool "$1" || return 1
  cp "$KEEP/rl_pool.json" "$1/rl_pool.json" || return 1
  echo "pool written to $1/rl_pool.json; waiting for 'go'"
  until [[ -f $SESSION/go ]]; do sleep 2; done
}

committed_pool() {  # the committed pool's rows, once per session
  [[ -d $KEEP/rl_pool ]] && return
  python3 tools/select_rl_pool.py --dataset "$DATA/rl_pool" --uuids "$POOL_FILE" --out "$KEEP/rl_pool"
}

step_pilot() {
  committed_pool || return 1
  local out=$1 pids=()
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 500 >"$out/gpu_memory_mib.txt" &
  local smi=$!
  local t0=$SECONDS
  for arm in trloo control; do
    extra=""; [[ $arm == control ]] && extra="--reward_control permute_within_group"
    RL_NAME=pilot_$arm RL_ARGS="--max_steps 2 --seed 99 $extra $PINNED_RL_ARGS ${RL_EXTRA:-}" \
      bash tools/gpu_learning_run.sh rl "$out" 100000 >"$out/pilot_$arm.out" 2>&1 &
    pids+=($!)
  done
  local failed=0
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  kill "$smi" || true
  echo "pilot: both arms in $((SECONDS - t0)) s, peak GPU memory $(sort -n "$out/gpu_memory_mib.txt" | tail -1) MiB, failed=$failed"
  return $failed
}

step_run() {  # OUT ARM SEED
  local out=$1 arm=$2 seed=$3 extra=""
  [[ $arm == trloo || $arm == control ]] || { echo "unknown arm $arm"; return 2; }
  [[ $arm == control ]] && extra="--reward_control permute_within_group"
  committed_pool || return 1
  RL_NAME=rl_${arm}_$seed RL_POOL=$KEEP/rl_pool RL_ARGS="--max_steps 8 --seed $seed $extra $probe_args $PINNED_RL_ARGS ${RL_EXTRA:-}" \
    bash tools/gpu_learning_run.sh rl "$out" 100000 || return 1
  bash tools/gpu_learning_run.sh eval "$out" "rl_${arm}_$seed"
}

run_plan() {  # in the background, from the copied tree
  local step name t0 rc
  for step in $1; do
    name=${step//:/_}
    mkdir -p "$SESSION/$name"
    echo "$(date -u +%T) start $step" >>"$SESSION/progress.txt"
    t0=$SECONDS
    IFS=: read -r kind a b <<<"$step"
    rc=0
    "step_$kind" "$SESSION/$name" $a $b >"$SESSION/$name/step.log" 2>&1 || rc=$?
    if ((rc == 0)); then
      echo "$(date -u +%T) done $step in $((SECONDS - t0)) s" >>"$SESSION/progress.txt"
      touch "$SESSION/$name/.finished"
    else
      echo "$(date -u +%T) FAILED $step after $((SECONDS - t0)) s (rc $rc)" >>"$SESSION/progress.txt"
      touch "$SESSION/$name/.finished" "$SESSION/.stopped"
      return 1
    fi
  done
  touch "$SESSION/.stopped"
}

case $mode in
  stage) exec bash tools/gpu_learning_run.sh stage "${2:?N}" "${3:?PIECE}" ;;
  start)
    plan=${2:?PLAN}
    for step in $plan; do
      [[ $step =~ ^(sft|pool|pilot|run:(trloo|control):[0-9]+)$ ]] || { echo "unknown step $step"; exit 2; }
    done
    [[ $plan == *pool* || -f $POOL_FILE ]] || { echo "no $POOL_FILE: the first session's plan needs 'pool'"; exit 2; }
    rm -rf "$SESSION" "$TREE"; mkdir -p "$SESSION" "$TREE"
    cp -a . "$TREE"
    cd "$TREE"
    setsid nohup bash tools/protocol_session.sh plan "$plan" >"$SESSION/plan.log" 2>&1 </dev/null &
    echo "started '$plan' in the background (pid $!)" ;;
  plan)
    if compgen -G ".whl/*.whl" >/dev/null; then  # the steps' own Python (the committed pool) needs datasets too
      python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    fi
    export PYTHONPATH=/tmp/site:$PWD
    run_plan "${2:?PLAN}" ;;
  go) touch "$SESSION/go"; echo "go given" ;;
  wait)
    out=${2:?OUT}; limit=${3:-560}; t0=$SECONDS
    waiting_for_go() { [[ -f $SESSION/pool/rl_pool.json && ! -f $SESSION/go ]]; }
    until [[ -f $SESSION/.stopped ]] || waiting_for_go || ((SECONDS - t0 >= limit)); do sleep 5; done
    cat "$SESSION/progress.txt"
    if waiting_for_go; then cp "$SESSION/pool/rl_pool.json" "$out/"; echo "the pool waits for 'go'"; fi
    for dir in "$SESSION"/*/; do
      name=$(basename "$dir")
      if [[ -f $dir/.finished ]]; then tar -czf "$out/$name.tar.gz" -C "$SESSION" "$name"
      else tar -czf "$out/$name.partial.tar.gz" -C "$SESSION" "$name"; fi  # its logs so far, if the lease ends
    done
    if [[ -f $SESSION/.stopped ]]; then echo "plan stopped"; tail -5 "$SESSION/plan.log"
    else echo "plan still running: $(tail -c 300 "$SESSION"/*/step.log | tr '\r' '\n' | tail -3)"; fi ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
