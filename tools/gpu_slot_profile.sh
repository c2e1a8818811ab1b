#!/usr/bin/env bash
# The timing slot's phase profile and the throughput it allows, in one device call: the shipped tasks timed
# against themselves through the judge (slot steps by task size) with one honest kernel's repeatability, then the
# pool throughput benchmark and its RL-shaped variant (slot and pair steps per evaluation), and optionally the
# throughput of an older checkout in the same call.
#   bash tools/gpu_slot_profile.sh OUT [STEPS] [BEFORE_TAR]
#   STEPS: fidelity,throughput,rl,rl_repeats,before (default fidelity,throughput); before needs BEFORE_TAR
#   (`git archive -o .device_carry/before.tar REV`, carry .device_carry). rl: GRPO-shaped steps of 4 tasks x 8
#   candidates (no request repeats); rl_repeats: 4 tasks x 16, so half of a step's requests repeat another word for
#   word and are judged once, as the trainer's reward does. GPU_TIMING=exclusive|shared sets
#   PoolConfig.exclusive_gpu_timing for this checkout's runs (default: the pool's).
# Per-step limits (s): FIDELITY_S (default 240), THROUGHPUT_S, RL_S, RL_REPEATS_S, BEFORE_S (default 240 each).
# More than 7 result files are packed into OUT/slot_profile.tar.gz beside slot_profile_summary.txt.
set -u
OUT=${1:?usage: gpu_slot_profile.sh OUT [STEPS] [BEFORE_TAR]}
STEPS=${2:-fidelity,throughput}
BEFORE_TAR=${3:-}
export PYTHONUNBUFFERED=1
unset TRITON_INTERPRET
TIMING=(); [ -n "${GPU_TIMING:-}" ] && TIMING=(--gpu-timing "$GPU_TIMING")
summary="$OUT/slot_profile_summary.txt"; : >"$summary"
source "$(dirname "$0")/device_step.sh"
run() { local name=$1; device_step "$name" "$@"; }
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee -a "$summary"
run fidelity "${FIDELITY_S:-240}" python3 benchmarks/bench_reward.py --device cuda \
  --sections fidelity_judge,repeatability --tasks all --json-out "$OUT/fidelity_judge.json"
run throughput "${THROUGHPUT_S:-240}" python3 benchmarks/bench_reward.py --throughput --device cuda \
  --baseline-count 2 "${TIMING[@]}" --json-out "$OUT/throughput.json"
run rl "${RL_S:-240}" python3 benchmarks/bench_reward.py --throughput --device cuda --rl-group 8 \
  --rl-prompts 4 --rl-steps 4 "${TIMING[@]}" --json-out "$OUT/throughput_rl.json"
run rl_repeats "${RL_REPEATS_S:-240}" python3 benchmarks/bench_reward.py --throughput --device cuda --rl-group 16 \
  --rl-prompts 4 --rl-steps 4 "${TIMING[@]}" --json-out "$OUT/throughput_rl_repeats.json"
if [ -n "$BEFORE_TAR" ]; then
  rm -rf /tmp/before && mkdir -p /tmp/before && tar -xf "$BEFORE_TAR" -C /tmp/before
  run before "${BEFORE_S:-240}" bash -c "cd /tmp/before && python3 benchmarks/bench_reward.py --throughput \
    --device cuda --baseline-count 2 --json-out '$OUT/throughput_before.json'"
fi
for name in fidelity throughput rl rl_repeats before; do
  [ -f "$OUT/$name.log" ] || continue; echo "--- $name"
  grep -vE "^\s*$|^INFO|  [0-9]+%|^(pair|slot|warmup)[._]" "$OUT/$name.log" | tail -n 30; done
cat "$summary"
bash tools/pack_device_out.sh "$OUT" slot_profile_summary.txt slot_profile.tar.gz
