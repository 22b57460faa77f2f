#!/usr/bin/env bash
# Graph analytics on far memory beside all-local DRAM and OS paging (issue 12 item 4): one
# generated Kronecker graph; per algorithm: local (all in DRAM), far (paged regions, direct,
# local budget BUDGET), and mmap inside a memory cgroup of the same budget (page cache dropped
# first) with the kernel's default readahead and with MADV_RANDOM. Prints seconds (median of
# TRIALS), the ratio to local and the paging counters; appends every run's JSON record to OUT.
#
#   bench/compare_graph.sh                              # Kronecker scale 21, degree 16
#   SCALE=16 ALGORITHMS="bfs pr" bench/compare_graph.sh # quick check
#
# Environment: SCALE (21), DEGREE (16), SEED (1), THREADS (2), TRIALS (3), BUDGET (25%: of the
# footprint, graph + the algorithm's vertex arrays; or bytes), PAGE_BYTES (64KiB), FAR_ADVICE
# (sequential: the far backend reads ahead in the graph's sections; or random),
# ALGORITHMS ("bfs pr cc radii bc"), BACKENDS ("local far mmap-default mmap-random"),
# GRAPH (WORK/kron-SCALE-DEGREE-SEED.fmg; generated when missing), WORK (/tmp/farmem-graph),
# FARMEM (build/farmem), OUT (build/bench-compare-graph.json), RUN_TIMEOUT (1800 s per run).
# The agent rows (far through farmem-agent, static and dynamic caching) are added when the agent
# exists. The mmap rows need root (memory cgroup, /proc/sys/vm/drop_caches).
# Every process this script starts is stopped on exit, by its PID.
set -euo pipefail
cd "$(dirname "$0")/.."

SCALE=${SCALE:-21}
DEGREE=${DEGREE:-16}
SEED=${SEED:-1}
THREADS=${THREADS:-2}
TRIALS=${TRIALS:-3}
BUDGET=${BUDGET:-25%}
PAGE_BYTES=${PAGE_BYTES:-64KiB}
FAR_ADVICE=${FAR_ADVICE:-sequential}
ALGORITHMS=${ALGORITHMS:-"bfs pr cc radii bc"}
BACKENDS=${BACKENDS:-"local far mmap-default mmap-random"}
WORK=${WORK:-/tmp/farmem-graph}
GRAPH=${GRAPH:-$WORK/kron-$SCALE-$DEGREE-$SEED.fmg}
FARMEM=${FARMEM:-build/farmem}
OUT=${OUT:-build/bench-compare-graph.json}
RUN_TIMEOUT=${RUN_TIMEOUT:-1800}

mkdir -p "$WORK" "$(dirname "$OUT")"
CHILD=""
cleanup() {
  if [[ -n "$CHILD" ]] && kill -0 "$CHILD" 2>/dev/null; then
    kill -TERM "$CHILD" 2>/dev/null || true
    wait "$CHILD" 2>/dev/null || true
  fi
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

# Runs one command in the background (so that cleanup can stop it by PID) and waits for it.
run() {
  timeout --signal=TERM "$RUN_TIMEOUT" "$@" &
  CHILD=$!
  local rc=0
  wait "$CHILD" || rc=$?
  CHILD=""
  return $rc
}

if [[ ! -f "$GRAPH" ]]; then
  echo "== generating Kronecker scale $SCALE degree $DEGREE seed $SEED -> $GRAPH"
  run "$FARMEM" graph generate --kron "$SCALE" --degree "$DEGREE" --seed "$SEED" \
      --threads "$THREADS" --out "$GRAPH"
fi

RESULTS="$WORK/compare-$$.json"
: > "$RESULTS"
for algorithm in $ALGORITHMS; do
  for backend in $BACKENDS; do
    args=(graph run "$algorithm" --graph "$GRAPH" --threads "$THREADS" --trials "$TRIALS"
          --seed "$SEED" --out "$RESULTS")
    case "$backend" in
      local) args+=(--backend local) ;;
      far) args+=(--backend far --local-memory "$BUDGET" --page-bytes "$PAGE_BYTES"
                  --far-advice "$FAR_ADVICE") ;;
      mmap-default) args+=(--backend mmap --local-memory "$BUDGET" --advice default
                           --mmap-dir "$WORK") ;;
      mmap-random) args+=(--backend mmap --local-memory "$BUDGET" --advice random
                          --mmap-dir "$WORK") ;;
      *) echo "unknown backend $backend" >&2; exit 2 ;;
    esac
    echo "== $algorithm $backend"
    if ! run "$FARMEM" "${args[@]}"; then
      echo "   ($algorithm $backend failed or timed out after ${RUN_TIMEOUT}s)"
    fi
  done
done
cat "$RESULTS" >> "$OUT"

echo
echo "Kronecker scale $SCALE degree $DEGREE, $THREADS threads, budget $BUDGET, median of $TRIALS"
python3 - "$RESULTS" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
local = {r["algorithm"]: r["median_seconds"] for r in rows if r["backend"] == "local"}
print(f'{"algorithm":9} {"backend":13} {"seconds":>9} {"x local":>8} {"budget MiB":>10} '
      f'{"footprint MiB":>13} {"faults":>9} {"fetched MiB":>11} {"written MiB":>11}')
for r in rows:
    name = r["backend"] + (("/" + r["advice"]) if r["backend"] == "mmap" else "")
    base = local.get(r["algorithm"])
    ratio = f'{r["median_seconds"] / base:8.2f}' if base else "       -"
    print(f'{r["algorithm"]:9} {name:13} {r["median_seconds"]:9.3f} {ratio} '
          f'{r["local_memory_bytes"] / 2**20:10.1f} {r["footprint_bytes"] / 2**20:13.1f} '
          f'{r["faults"]:9d} {r["bytes_fetched"] / 2**20:11.1f} '
          f'{r["bytes_written_back"] / 2**20:11.1f}')
for a in local:
    far = [r for r in rows if r["algorithm"] == a and r["backend"] == "far"]
    mm = [r["median_seconds"] for r in rows if r["algorithm"] == a and r["backend"] == "mmap"]
    if far and mm:
        print(f'{a}: far is {min(mm) / far[0]["median_seconds"]:.2f}x faster than the better mmap, '
              f'{far[0]["median_seconds"] / local[a]:.2f}x local')
PY
echo "(records appended to $OUT)"
