#!/usr/bin/env bash
# Pool throughput by workers and warm spares per GPU in one device call: the 64-pair mix of
# `benchmarks/bench_reward.py --throughput` once per setting, then the RL-shaped run and the one-kernel
# repeatability at the last setting, and a table (evaluations a minute, x fresh processes, slot busy share,
# honest kernels' median speedup, noise-dominated results).
#   bash tools/gpu_throughput_sweep.sh OUT ["8x1 12x1 12x2 16x2"] [rl,repeat]
# Each setting is WORKERSxSPARES; per-run limit SWEEP_S (default 150 s). The fresh-process baseline is sampled
# with --baseline-count 2 in every run. More than 7 result files are packed into OUT/sweep.tar.gz beside summary.txt.
set -u
OUT=${1:?usage: gpu_throughput_sweep.sh OUT [SETTINGS] [EXTRA]}
SETTINGS=${2:-8x1 12x1 12x2 16x2}
EXTRA=${3:-}
export PYTHONUNBUFFERED=1
unset TRITON_INTERPRET
summary="$OUT/summary.txt"; : >"$summary"
last=""
for setting in $SETTINGS; do
  workers=${setting%x*}; spares=${setting#*x}; t0=$SECONDS
  timeout -k 10 "${SWEEP_S:-150}" python3 benchmarks/bench_reward.py --throughput --device cuda --workers "$workers" \
    --warm-spares "$spares" --baseline-count 2 --json-out "$OUT/throughput_${setting}.json" >"$OUT/throughput_${setting}.log" 2>&1
  echo "== $setting: rc=$?, $((SECONDS - t0)) s" | tee -a "$summary"; last=$setting
done
case ",$EXTRA," in *,rl,*)
  workers=${last%x*}; spares=${last#*x}; t0=$SECONDS
  timeout -k 10 "${SWEEP_S:-150}" python3 benchmarks/bench_reward.py --throughput --device cuda --workers "$workers" \
    --warm-spares "$spares" --rl-group 8 --baseline-count 2 --json-out "$OUT/rl_${last}.json" >"$OUT/rl_${last}.log" 2>&1
  echo "== rl $last: rc=$?, $((SECONDS - t0)) s" | tee -a "$summary";; esac
case ",$EXTRA," in *,repeat,*)
  t0=$SECONDS
  timeout -k 10 "${SWEEP_S:-150}" python3 benchmarks/bench_reward.py --device cuda --sections repeatability \
    --json-out "$OUT/repeatability.json" >"$OUT/repeatability.log" 2>&1
  echo "== repeatability: rc=$?, $((SECONDS - t0)) s" | tee -a "$summary";; esac
python3 tools/throughput_table.py "$OUT"/throughput_*.json "$OUT"/rl_*.json | tee -a "$summary"
grep -h "CV\|cv" "$OUT/repeatability.log" 2>/dev/null | tail -n 3 | tee -a "$summary"
bash tools/pack_device_out.sh "$OUT" summary.txt sweep.tar.gz
