#!/usr/bin/env bash
# Before / after evidence in one device call: a timing attack and its honest twin through an older checkout's
# judge and this one's, then the throughput benchmark of both (same machine, same run).
#   bash tools/gpu_before_after.sh OUT BEFORE_TAR [STEPS]   (STEPS: entries,throughput,rl; default entries,throughput)
#   BEFORE_TAR: `git archive -o .device_carry/before.tar <rev>` (carry .device_carry); unpacked to /tmp/before.
# Per-step limits (s): ENTRIES_S (default 150), THROUGHPUT_S (default 210 each), RL_S (default 210 each; 4 steps
# of 4 tasks x 8 candidates). A short summary prints last.
set -u
OUT=${1:?usage: gpu_before_after.sh OUT BEFORE_TAR}
BEFORE_TAR=${2:?usage: gpu_before_after.sh OUT BEFORE_TAR}
export PYTHONUNBUFFERED=1
unset TRITON_INTERPRET
STEPS=${3:-entries,throughput}
summary="$OUT/before_after_summary.txt"; : >"$summary"
rm -rf /tmp/before && mkdir -p /tmp/before && tar -xf "$BEFORE_TAR" -C /tmp/before || exit 1
source "$(dirname "$0")/device_step.sh"
run() { local name=$1; device_step "${name%_*}" "$@"; }  # entries_after and entries_before are both step "entries"
ATTACK=timing_torch_when_gated_gpu
TWIN="honest_twin|$ATTACK|if not torch.cuda.current_stream().query():|if False:"
run entries_after "${ENTRIES_S:-150}" python3 tools/evaluate_entries.py --device cuda --entries "$ATTACK" \
  --twin "$TWIN" --json-out "$OUT/entries_after.json"
run entries_before "${ENTRIES_S:-150}" python3 tools/evaluate_entries.py --device cuda --entries "$ATTACK" \
  --twin "$TWIN" --repo /tmp/before --json-out "$OUT/entries_before.json"
run throughput_after "${THROUGHPUT_S:-210}" python3 benchmarks/bench_reward.py --throughput --device cuda \
  --baseline-count 2 --json-out "$OUT/throughput_after.json"
run throughput_before "${THROUGHPUT_S:-210}" bash -c "cd /tmp/before && python3 benchmarks/bench_reward.py \
  --throughput --device cuda --baseline-count 2 --json-out '$OUT/throughput_before.json'"
run rl_after "${RL_S:-210}" python3 benchmarks/bench_reward.py --throughput --device cuda --rl-group 8 \
  --rl-prompts 4 --rl-steps 4 --json-out "$OUT/rl_after.json"
run rl_before "${RL_S:-210}" bash -c "cd /tmp/before && python3 benchmarks/bench_reward.py --throughput \
  --device cuda --rl-group 8 --rl-prompts 4 --rl-steps 4 --json-out '$OUT/rl_before.json'"
for name in entries_after entries_before throughput_after throughput_before rl_after rl_before; do
  [ -f "$OUT/$name.log" ] || continue; echo "--- $name"; grep -vE "^\s*$|^INFO|  [0-9]+%" "$OUT/$name.log" | tail -n 25; done
cat "$summary"
