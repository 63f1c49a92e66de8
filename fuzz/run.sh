#!/usr/bin/env bash
# fuzz/run.sh BUILD SECONDS [HARNESS...]: runs each libFuzzer harness
# BUILD/fuzz/fuzz_NAME for SECONDS over its corpus fuzz/corpus/NAME (seeded
# by fuzz/make_corpus.py when missing; new inputs that find new code are
# added to it), with fuzz/NAME.dict when there is one. Prints one line per
# harness with its execution count. With FUZZ_RUNS=N in the environment a
# harness also stops after N executions (whichever comes first). A finding
# (crash, sanitizer report, leak, timeout, out-of-memory) leaves its input in fuzz/findings/ and fails
# the run; fuzz/findings/NAME.log has the report. Reproduce one with
# BUILD/fuzz/fuzz_NAME fuzz/findings/NAME-crash-... (see docs/security.md).
set -u
build=$1 secs=$2
shift 2
cd "$(dirname "$0")/.."
if [ ! -d fuzz/corpus ]; then python3 fuzz/make_corpus.py >/dev/null || exit 1; fi
names=("$@")
if [ ${#names[@]} = 0 ]; then
  for f in fuzz/fuzz_*.c; do n=${f#fuzz/fuzz_}; names+=("${n%.c}"); done
fi
mkdir -p fuzz/findings
export TG_FUZZ_TESTDATA=${TG_FUZZ_TESTDATA:-$PWD/../shared/testdata}
export TG_CACHE_DIR=${TG_CACHE_DIR:-$PWD/$build/kernel-cache}
fail=0
for n in "${names[@]}"; do
  bin=$build/fuzz/fuzz_$n
  [ -x "$bin" ] || { echo "fuzz $n: no $bin (make fuzz-build)"; fail=1; continue; }
  mkdir -p "fuzz/corpus/$n"
  dict=()
  [ -f "fuzz/$n.dict" ] && dict=("-dict=fuzz/$n.dict")
  [ -n "${FUZZ_RUNS:-}" ] && dict+=("-runs=$FUZZ_RUNS")
  log=fuzz/findings/$n.log
  # each input must finish within 10 s and 2 GiB
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
  LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/lsan.supp} \
    "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="fuzz/findings/$n-" "${dict[@]}" "fuzz/corpus/$n" >"$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log")
  echo "fuzz $n: ${execs:-?} executions in ${took:-$secs} s (${cov:-cov: ?}), exit $rc"
  if [ $rc != 0 ]; then fail=1; grep -A30 -m1 -E '^==[0-9]+==|runtime error|deadly signal|Timeout|out-of-memory' "$log" | head -40; fi
done
exit $fail
