#!/usr/bin/env bash
# Runs the runtime and client unit tests many times in a row while busy loops keep every CPU
# busy, and fails if any repetition fails. A unit test that depends on real time or on thread
# scheduling shows up here long before it flakes in CI.
#
#   scripts/stress-unit.sh                      # 50 repetitions under 4 busy loops
#   REPEAT=2000 LOAD=4 scripts/stress-unit.sh
#   FILTER='SchedulerTest.*' scripts/stress-unit.sh
#   make stress STRESS_REPEAT=200
#
# Environment:
#   REPEAT      --gtest_repeat (default 50)
#   LOAD        number of busy loops (`yes > /dev/null`) to run meanwhile (default 4; 0 = none)
#   FILTER      --gtest_filter (default: every suite defined in the runtime and client unit test
#               files listed below, read from the sources so new suites are included)
#   UNIT_TESTS  the test binary (default build/tests/farmem_unit_tests; `make build` first)
#   LOG         where the full output goes (default build/stress-unit.log)
#   FARMEM_TEST_SEED is passed through (tests/support/test_seed.h).
#
# The busy loops and the test binary are this script's own children; their PIDs are recorded
# and killed on exit, whatever the exit path (including SIGINT and SIGTERM). Exit status: 0 if every repetition passed, 1 if any failed, 2 on a
# usage or setup error.
set -euo pipefail
cd "$(dirname "$0")/.."

REPEAT=${REPEAT:-50}
LOAD=${LOAD:-4}
UNIT_TESTS=${UNIT_TESTS:-build/tests/farmem_unit_tests}
LOG=${LOG:-build/stress-unit.log}

# The unit tests of the runtime (and its time source) and of the client library.
SUITE_FILES=(
  tests/unit/common/virtual_clock_test.cc
  tests/unit/runtime/task_test.cc
  tests/unit/runtime/scheduler_test.cc
  tests/unit/runtime/when_all_test.cc
  tests/unit/runtime/frame_pool_test.cc
  tests/unit/runtime/backoff_test.cc
  tests/unit/runtime/throttle_test.cc
  tests/unit/client/chunk_allocator_test.cc
  tests/unit/client/cluster_config_test.cc
  tests/unit/client/global_address_test.cc
)

die() {
  echo "stress-unit: $*" >&2
  exit 2
}

[[ "$REPEAT" =~ ^[1-9][0-9]*$ ]] || die "REPEAT must be a positive integer, not '$REPEAT'"
[[ "$LOAD" =~ ^[0-9]+$ ]] || die "LOAD must be a non-negative integer, not '$LOAD'"
[ -x "$UNIT_TESTS" ] || die "$UNIT_TESTS not found; build first (make build)"

if [ -z "${FILTER:-}" ]; then
  suites=$(sed -nE 's/^TEST(_F|_P)?\(([A-Za-z0-9_]+),.*/\2/p' "${SUITE_FILES[@]}" | sort -u)
  [ -n "$suites" ] || die "no test suites found in ${SUITE_FILES[*]}"
  FILTER=$(printf '%s.*:' $suites)
  FILTER=${FILTER%:}
fi

busy_pids=()
test_pid=""
stop_children() {
  for pid in ${test_pid:+"$test_pid"} "${busy_pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in ${test_pid:+"$test_pid"} "${busy_pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  busy_pids=()
  test_pid=""
}
trap stop_children EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for ((i = 0; i < LOAD; ++i)); do
  yes >/dev/null &
  busy_pids+=($!)
done

mkdir -p "$(dirname "$LOG")"
echo "stress-unit: $UNIT_TESTS --gtest_repeat=$REPEAT with $LOAD busy loops" \
  "(pids ${busy_pids[*]:-none}) on $(nproc) CPUs"
echo "stress-unit: filter $FILTER"
start=$(date +%s.%N)
# In the background so that a signal to this script is handled at once (bash runs traps only
# between foreground commands).
"$UNIT_TESTS" --gtest_filter="$FILTER" --gtest_repeat="$REPEAT" --gtest_brief=1 >"$LOG" 2>&1 &
test_pid=$!
set +e
wait "$test_pid"
rc=$?
set -e
test_pid=""
end=$(date +%s.%N)
stop_children

wall=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
tests_per_run=$(grep -m1 -oE '^\[==========\] [0-9]+ tests? from' "$LOG" | grep -oE '[0-9]+' || true)
runs=$(grep -cE '^\[==========\] [0-9]+ tests? from .* ran\.' "$LOG" || true)
# A repetition failed if a test failed between its start and its "[==========] ... ran." line.
failed_runs=$(awk '/^\[  FAILED  \] .*\([0-9]+ ms\)$/ { failed = 1 }
                   /^\[==========\] [0-9]+ tests? from .* ran\./ { if (failed) n++; failed = 0 }
                   END { print n + 0 }' "$LOG")
echo "stress-unit: $runs of $REPEAT repetitions ran (${tests_per_run:-?} tests each)," \
  "$failed_runs failed, exit status $rc, ${wall} s wall"
if [ "$failed_runs" -gt 0 ] || [ "$rc" -ne 0 ] || [ "$runs" -ne "$REPEAT" ]; then
  echo "stress-unit: failing tests (count of failed repetitions):"
  grep -E '^\[  FAILED  \] [A-Za-z0-9_/]+\.[A-Za-z0-9_/]+ .*\([0-9]+ ms\)$' "$LOG" |
    awk '{print $4}' | sort | uniq -c | sort -rn || true
  grep -E '^\[   SEED   \] .* failed with seed=' "$LOG" | sort -u || true
  echo "stress-unit: FAILED; full output in $LOG"
  exit 1
fi
echo "stress-unit: PASSED; full output in $LOG"
