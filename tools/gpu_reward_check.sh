#!/usr/bin/env bash
# The reward's GPU evidence in one go: benchmarks first (an otherwise idle GPU), then the
# gpu-marked tests in parallel. Every step has its own time limit and writes under OUT, so one hang costs
# only its step. Prints a short summary last.
#
#   bash tools/gpu_reward_check.sh OUT [STEPS]
# STEPS: comma list of fidelity, coverage (events vs profiler on the honest corpus), throughput (8 workers, default spares, with the fresh-process baseline),
# spares1 / spares2 / spares3 (pool only, N warm spares per slot), events (coverage_method=events: no CUPTI),
# steady_profiler / steady_events (3 passes over the pairs in one batch), covtest (events vs profiler test),
# workers12 / throughput16 (12 / 16 workers), tests.
# Everything but summary.txt ends in OUT/details.tar.gz (the device tool returns a limited number of files).
set -u
OUT=${1:?usage: gpu_reward_check.sh OUT [STEPS]}
STEPS=${2:-fidelity,throughput,tests}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
unset TRITON_INTERPRET
summary="$OUT/summary.txt"
: >"$summary"

source "$(dirname "$0")/device_step.sh"
step() { local name=$1; device_step "$name" "$@"; }

nvidia-smi --query-gpu=name,driver_version,memory.used,utilization.gpu --format=csv >"$OUT/nvidia-smi.csv" 2>&1
step fidelity 240 python3 benchmarks/bench_reward.py --device cuda --tasks all \
  --json-out "$OUT/bench_reward.json"
step coverage 240 python3 benchmarks/bench_reward.py --device cuda --sections coverage --json-out "$OUT/coverage.json"
step throughput 240 python3 benchmarks/bench_reward.py --throughput --device cuda --baseline-count 8 \
  --json-out "$OUT/throughput.json"
for n in 1 2 3; do
  step spares$n 150 python3 benchmarks/bench_reward.py --throughput --device cuda --warm-spares $n --baseline-count 0 \
    --json-out "$OUT/spares$n.json"
done
step events 150 python3 benchmarks/bench_reward.py --throughput --device cuda --coverage-method events \
  --baseline-count 0 --json-out "$OUT/events.json"
for method in profiler events; do  # steady state: three passes over the pair set in one batch
  step steady_$method 240 python3 benchmarks/bench_reward.py --throughput --device cuda --coverage-method $method \
    --rounds 3 --baseline-count 0 --json-out "$OUT/steady_$method.json"
done
step covtest 240 python3 -m pytest -m gpu tests/kernel_reward/test_corpus.py -q -p no:cacheprovider -k event \
  --timeout 200
step workers12 150 python3 benchmarks/bench_reward.py --throughput --device cuda --workers 12 --baseline-count 0 \
  --json-out "$OUT/workers12.json"
step throughput16 150 python3 benchmarks/bench_reward.py --throughput --device cuda --workers 16 --baseline-count 0 \
  --json-out "$OUT/throughput16.json"
step tests 300 python3 -m pytest -m gpu tests/kernel_reward -q -n 6 -p no:cacheprovider --timeout 240 \
  --junitxml="$OUT/gpu_tests.xml"

for name in fidelity coverage throughput spares1 spares2 spares3 events steady_profiler steady_events covtest workers12 throughput16; do
  [[ -f "$OUT/$name.log" ]] && { echo "--- $name (tail)"; tail -n 25 "$OUT/$name.log"; }
done
[[ -f "$OUT/tests.log" ]] && { echo "--- tests (failures + tail)"; grep -E "^(FAILED|ERROR)" "$OUT/tests.log" | head -30; tail -n 3 "$OUT/tests.log"; }
cat "$summary"
(cd "$OUT" && tar czf details.tar.gz --exclude=summary.txt --exclude=details.tar.gz ./* && find . -type f \
  ! -name summary.txt ! -name details.tar.gz -delete)
