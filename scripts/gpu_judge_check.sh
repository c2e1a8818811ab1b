#!/usr/bin/env bash
# The trusted judge's GPU evidence in one device call: timing fidelity of the judge's clock beside the in-process
# event method (a subset of shipped tasks), repeatability, honest evaluations, throughput against the fresh-process
# baseline, and the hack corpus on CUDA. Each step has its own limit; a short summary prints last.
#   bash scripts/gpu_judge_check.sh OUT [TASKS]
set -u
OUT=${1:?usage: gpu_judge_check.sh OUT [TASKS]}
TASKS=${2:-activation_silu,elementwise_addcmul,fused_add_rms_norm,fused_linear_relu,loss_mse_rows,matmul_square,matmul_matvec,norm_layer_norm,pool_max2d,reduction_sum_dim,scan_cumsum,softmax_rows,conv2d_3x3,attention_sdpa,elementwise_bias_add_fp16,reduction_argmax}
export PYTHONUNBUFFERED=1
unset TRITON_INTERPRET
summary="$OUT/summary.txt"; : >"$summary"
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS
  timeout -k 10 "$limit" "$@" >"$OUT/$name.log" 2>&1; echo "== $name: rc=$?, $((SECONDS - t0)) s" | tee -a "$summary"; }
step bench 300 python3 scripts/bench_reward.py --device cuda --tasks "$TASKS" --repeats 10 --json-out "$OUT/bench_reward.json"
step throughput 240 python3 scripts/bench_reward.py --throughput --device cuda --baseline-count 8 --json-out "$OUT/throughput.json"
step corpus 240 python3 -m pytest -m gpu tests/kernel_reward/test_kr_corpus.py -q -n 6 -p no:cacheprovider --timeout 200
for name in bench throughput; do echo "--- $name"; grep -vE "^\s*$" "$OUT/$name.log" | grep -vE "^(INFO|fidelity|  [0-9]+%)" | tail -n 60; done
echo "--- corpus"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/corpus.log" | tail -20
cat "$summary"
