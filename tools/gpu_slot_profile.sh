#!/usr/bin/env bash
# The timing slot's phase profile in one device call: the shipped tasks timed against themselves through the
# judge (slot steps by task size), then the pool throughput benchmark (slot and pair steps per evaluation).
#   bash tools/gpu_slot_profile.sh OUT [STEPS]   (STEPS: fidelity,throughput,rl; default fidelity,throughput)
# Per-step limits (s): FIDELITY_S (default 240), THROUGHPUT_S (default 240), RL_S (default 240).
set -u
OUT=${1:?usage: gpu_slot_profile.sh OUT [STEPS]}
STEPS=${2:-fidelity,throughput}
export PYTHONUNBUFFERED=1
unset TRITON_INTERPRET
summary="$OUT/slot_profile_summary.txt"; : >"$summary"
run() { local name=$1 limit=$2; shift 2; local t0=$SECONDS
  case ",$STEPS," in *",$name,"*) ;; *) return;; esac
  timeout -k 10 "$limit" "$@" >"$OUT/$name.log" 2>&1; echo "== $name: rc=$?, $((SECONDS - t0)) s" | tee -a "$summary"; }
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee -a "$summary"
run fidelity "${FIDELITY_S:-240}" python3 benchmarks/bench_reward.py --device cuda --sections fidelity_judge \
  --tasks all --json-out "$OUT/fidelity_judge.json"
run throughput "${THROUGHPUT_S:-240}" python3 benchmarks/bench_reward.py --throughput --device cuda \
  --baseline-count 2 --json-out "$OUT/throughput.json"
run rl "${RL_S:-240}" python3 benchmarks/bench_reward.py --throughput --device cuda --rl-group 8 \
  --rl-prompts 4 --rl-steps 4 --json-out "$OUT/throughput_rl.json"
for name in fidelity throughput rl; do
  [ -f "$OUT/$name.log" ] || continue; echo "--- $name"; grep -vE "^\s*$|^INFO|  [0-9]+%" "$OUT/$name.log" | tail -n 45; done
cat "$summary"
