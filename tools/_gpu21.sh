set -u
nvidia-smi --query-gpu=name --format=csv,noheader
mkdir -p $OUT/ledger
LEDGER_S=70 bash tools/gpu_judge_check.sh $OUT/ledger "" ledger > $OUT/ledger_check.log 2>&1
grep -vE "^\s*$" $OUT/ledger/ledger.log | tail -16
for mode in 0 1; do
  KR_TEST_LAUNCH_LEDGER=$mode timeout -k 5 50 python3 -m pytest -m gpu tests/kernel_reward/test_corpus.py -k tamper_launch_report -q -p no:cacheprovider -rxXfE > $OUT/new_entry_ledger$mode.log 2>&1; echo "new entry, ledger=$mode: rc=$?"; grep -E "passed|failed|xfail|XPASS|assert" $OUT/new_entry_ledger$mode.log | cut -c1-300 | tail -4
done
SUBSET="honest or tamper_coverage_claim or timing_torch_when_gated or timing_trivial_kernel or timing_decoy"
KR_TEST_LAUNCH_LEDGER=1 timeout -k 5 130 python3 -m pytest -m gpu tests/kernel_reward/test_corpus.py -k "$SUBSET" -q -n 6 -p no:cacheprovider --timeout 120 -rfExX > $OUT/corpus_ledger.log 2>&1; echo "corpus subset with ledger rc=$?"
grep -E "^(FAILED|ERROR|XPASS|XFAIL)|passed|failed" $OUT/corpus_ledger.log | cut -c1-300 | head -20
for mode in on off; do
  extra="--baseline-count 0"; [ $mode = on ] && extra="--launch-ledger --baseline-count 0"
  timeout -k 5 80 python3 benchmarks/bench_reward.py --throughput --device cuda $extra --json-out $OUT/throughput_ledger_$mode.json > $OUT/throughput_ledger_$mode.log 2>&1; echo "throughput ledger $mode rc=$?"
  grep -E "^pairs|statuses|options|^profile |^timing |^total " $OUT/throughput_ledger_$mode.log
done
