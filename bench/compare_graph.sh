#!/usr/bin/env bash
# Graph analytics on far memory beside all-local DRAM and OS paging: one
# generated Kronecker graph; per algorithm: local (all in DRAM), far (paged regions, direct,
# local budget BUDGET), far through farmem-agent with no caching (agent-off), with the vertex
# arrays pinned in the agent's static cache (agent-static) and with the agent's dynamic cache on
# for the graph's sections (agent-dynamic), and mmap inside a memory cgroup of the same budget
# (page cache dropped first) with the kernel's default readahead and with MADV_RANDOM. Then two
# host processes sharing one agent: BFS in the background plus SHARED_ALGORITHM on the same
# preloaded graph. Prints seconds (median of TRIALS), the ratio to local, the paging counters and
# the traffic per path (host->memnode direct, host->agent, agent->memnode); for PageRank the
# percentage by which static vertex caching lowers memory-node traffic; the dynamic cache's hit
# rate per algorithm. Appends every run's JSON record to OUT.
#
#   bench/compare_graph.sh                              # Kronecker scale 21, degree 16
#   SCALE=16 ALGORITHMS="bfs pr" bench/compare_graph.sh # quick check
#   ORDER=degree bench/compare_graph.sh                 # the same graph, hubs first
#   GRAPH_KIND=gapbs-kron ALGORITHMS="bfs pr cc bc" BACKENDS="local gapbs far" \
#     bench/compare_graph.sh                            # GAPBS's own graph, a GAPBS row
#
# GRAPH_KIND (farmem: `farmem graph generate`; gapbs-kron | gapbs-uniform: GAPBS's converter
# writes `-g SCALE` / `-u SCALE` as .sg, which farmem converts to .fmg). The gapbs backend runs
# GAPBS's bfs, pr, cc and bc (no radii) on that .sg with OMP_NUM_THREADS=THREADS, BFS and BC from
# the local row's source, PR for PR_ITERATIONS with PR_TOLERANCE (20 and 0: the same iterations
# on both sides; farmem's PR rows take the same flags and --convention PR_CONVENTION, gapbs);
# GAPBS_DIR (WORK/gapbs: cloned from GAPBS_URL and built with make when its binaries are missing).
#
# Environment: SCALE (21), DEGREE (16), SEED (1), ORDER (input: vertex ids as generated; degree:
# relabelled by descending degree, `farmem graph generate --order degree`), THREADS (2), TRIALS (3), BUDGET (25%: of the
# footprint, graph + the algorithm's vertex arrays; or bytes), PAGE_BYTES (64KiB), FAR_ADVICE
# (sequential: the far backend reads ahead in the graph's sections; or random), FAR_PIN (on:
# random-access vertex arrays, then sequential state such as PageRank's rank arrays, pinned in
# the far rows; random: random-access ones only; off), GRAPH_PAGES (huge: the far row keeps the
# graph's region on 2 MiB huge pages, `--graph-page-bytes 2MiB --far-huge-pages on`, with the pool
# raised to HUGE_POOL_PAGES (256) for the run and restored after, needs root; small: PAGE_BYTES;
# the agent rows always use PAGE_BYTES: 2 MiB pages through the agent made PageRank 2.4x slower),
# ALGORITHMS ("bfs pr cc radii bc"), BACKENDS ("local far agent-off agent-static agent-dynamic
# mmap-default mmap-random"), SHARED (1: the two-process row), SHARED_ALGORITHM (pr),
# SHARED_CACHE (dynamic), AGENT_CACHE_BYTES (256MiB: the agent's dynamic cache budget),
# AGENT_FRESH (1: a fresh agent before each agent-dynamic row and the shared row, so a dynamic
# hit rate is the algorithm's own and not entries staged by an earlier row; 0: one agent for all),
# GRAPH (WORK/kron-SCALE-DEGREE-SEED[-degree].fmg; generated when missing), WORK (/tmp/farmem-graph),
# FARMEM (build/farmem), OUT (build/bench-compare-graph.json), RUN_TIMEOUT (1800 s per run).
# The agent rows start one farmem-server (preloading the graph from WORK) and one farmem-agent in
# front of it (FARMEM_SERVER, FARMEM_AGENT: build/farmem-server, build/farmem-agent), both
# sleeping when idle; the "far" row keeps farmem's embedded memory node. The agent's counters
# are agent-wide (in the shared row they include both processes).
# The mmap rows need root (memory cgroup, /proc/sys/vm/drop_caches).
# Every process this script starts is stopped on exit, by its PID.
set -euo pipefail
cd "$(dirname "$0")/.."

SCALE=${SCALE:-21}
DEGREE=${DEGREE:-16}
SEED=${SEED:-1}
ORDER=${ORDER:-input}
THREADS=${THREADS:-2}
TRIALS=${TRIALS:-3}
BUDGET=${BUDGET:-25%}
PAGE_BYTES=${PAGE_BYTES:-64KiB}
FAR_ADVICE=${FAR_ADVICE:-sequential}
FAR_PIN=${FAR_PIN:-on}
GRAPH_PAGES=${GRAPH_PAGES:-huge}
HUGE_POOL_PAGES=${HUGE_POOL_PAGES:-256}
ALGORITHMS=${ALGORITHMS:-"bfs pr cc radii bc"}
BACKENDS=${BACKENDS:-"local far agent-off agent-static agent-dynamic mmap-default mmap-random"}
SHARED=${SHARED:-1}
SHARED_ALGORITHM=${SHARED_ALGORITHM:-pr}
SHARED_CACHE=${SHARED_CACHE:-dynamic}
AGENT_CACHE_BYTES=${AGENT_CACHE_BYTES:-256MiB}
AGENT_FRESH=${AGENT_FRESH:-1}
FARMEM_SERVER=${FARMEM_SERVER:-build/farmem-server}
FARMEM_AGENT=${FARMEM_AGENT:-build/farmem-agent}
WORK=${WORK:-/tmp/farmem-graph}
ORDER_SUFFIX=""
[[ "$ORDER" == input ]] || ORDER_SUFFIX="-$ORDER"
case "$GRAPH_KIND" in
  farmem) GRAPH=${GRAPH:-$WORK/kron-$SCALE-$DEGREE-$SEED$ORDER_SUFFIX.fmg} ;;
  gapbs-kron|gapbs-uniform)
    SG=$WORK/$GRAPH_KIND-$SCALE.sg
    GRAPH=${GRAPH:-$WORK/$GRAPH_KIND-$SCALE$ORDER_SUFFIX.fmg} ;;
  *) echo "GRAPH_KIND is farmem, gapbs-kron or gapbs-uniform" >&2; exit 2 ;;
esac
FARMEM=${FARMEM:-build/farmem}
OUT=${OUT:-build/bench-compare-graph.json}
RUN_TIMEOUT=${RUN_TIMEOUT:-1800}
GRAPH_KIND=${GRAPH_KIND:-farmem}
PR_ITERATIONS=${PR_ITERATIONS:-20}
PR_TOLERANCE=${PR_TOLERANCE:-0}
PR_CONVENTION=${PR_CONVENTION:-gapbs}
GAPBS_URL=${GAPBS_URL:-https://github.com/sbeamer/gapbs}

mkdir -p "$WORK" "$(dirname "$OUT")"
WORK=$(cd "$WORK" && pwd)  # the memory node's --preload-dir must be absolute
GAPBS_DIR=${GAPBS_DIR:-$WORK/gapbs}
CHILD=""
NODE_PID=""
AGENT_PID=""
BG_PID=""
stop_pid() {
  if [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null; then
    kill -TERM "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
  fi
}
HUGE_POOL_BEFORE=""
cleanup() {
  stop_pid "$CHILD"
  stop_pid "$BG_PID"
  stop_pid "$AGENT_PID"
  stop_pid "$NODE_PID"
  if [[ -n "$HUGE_POOL_BEFORE" ]]; then echo "$HUGE_POOL_BEFORE" > /proc/sys/vm/nr_hugepages; fi
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

GRAPH_PAGE_ARGS=(--far-huge-pages off)
if [[ "$GRAPH_PAGES" == huge ]]; then
  pool=$(cat /proc/sys/vm/nr_hugepages)
  if (( pool < HUGE_POOL_PAGES )); then
    if echo "$HUGE_POOL_PAGES" > /proc/sys/vm/nr_hugepages 2>/dev/null; then
      HUGE_POOL_BEFORE=$pool
    else
      echo "cannot raise vm.nr_hugepages to $HUGE_POOL_PAGES (needs root): GRAPH_PAGES=small" >&2
      GRAPH_PAGES=small
    fi
  fi
  [[ "$GRAPH_PAGES" == huge ]] && GRAPH_PAGE_ARGS=(--graph-page-bytes 2MiB --far-huge-pages on)
  echo "== huge page pool: $(cat /proc/sys/vm/nr_hugepages) pages"
fi

# Runs one command in the background (so that cleanup can stop it by PID) and waits for it.
run() {
  timeout --signal=TERM "$RUN_TIMEOUT" "$@" &
  CHILD=$!
  local rc=0
  wait "$CHILD" || rc=$?
  CHILD=""
  return $rc
}

# GAPBS's binaries in GAPBS_DIR (cloned and built once when missing).
ensure_gapbs() {
  [[ -x "$GAPBS_DIR/bfs" && -x "$GAPBS_DIR/converter" ]] && return 0
  [[ -d "$GAPBS_DIR/.git" ]] || git clone -q --depth 1 "$GAPBS_URL" "$GAPBS_DIR"
  echo "== building GAPBS in $GAPBS_DIR"
  make -C "$GAPBS_DIR" -j"$THREADS" bfs pr cc bc converter > "$WORK/gapbs-build.log" 2>&1
}
if [[ ! -f "$GRAPH" && "$GRAPH_KIND" == farmem ]]; then
  echo "== generating Kronecker scale $SCALE degree $DEGREE seed $SEED order $ORDER -> $GRAPH"
  run "$FARMEM" graph generate --kron "$SCALE" --degree "$DEGREE" --seed "$SEED" \
      --order "$ORDER" --threads "$THREADS" --out "$GRAPH"
elif [[ ! -f "$GRAPH" ]]; then
  ensure_gapbs
  if [[ ! -f "$SG" ]]; then
    flag=-g; [[ "$GRAPH_KIND" == gapbs-uniform ]] && flag=-u
    echo "== GAPBS converter $flag$SCALE -> $SG"
    run "$GAPBS_DIR/converter" "$flag$SCALE" -b "$SG" > "$WORK/gapbs-converter.log"
  fi
  echo "== converting $SG -> $GRAPH"
  run "$FARMEM" graph convert --input "$SG" --order "$ORDER" --threads "$THREADS" --out "$GRAPH"
fi
[[ " $BACKENDS " == *" gapbs "* ]] && ensure_gapbs

# The source farmem's local row used (its JSON record), else farmem's default source.
row_source() {  # ALGORITHM
  python3 - "$RESULTS" "$1" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line) if line.strip() else None
    if r and r["algorithm"] == sys.argv[2] and r.get("sources"):
        print(r["sources"][0]); break
PY
}
# GAPBS's kernel for ALGORITHM on the .sg: its "Trial Time" lines become one JSON record.
run_gapbs() {  # ALGORITHM
  local a=$1 args=() src log="$WORK/gapbs-$1-$$.log"
  [[ -n "${SG:-}" ]] || { echo "   (gapbs needs GRAPH_KIND=gapbs-kron or gapbs-uniform)"; return 0; }
  case "$a" in
    bfs|bc) src=$(row_source "$a")
            [[ -n "$src" ]] || { echo "   (gapbs $a: run the local row first for its source)"; return 0; }
            args=(-r "$src"); [[ "$a" == bc ]] && args+=(-i 1) ;;
    pr) args=(-i "$PR_ITERATIONS" -t "$PR_TOLERANCE") ;;
    cc) ;;
    *) echo "   (GAPBS has no $a)"; return 0 ;;
  esac
  OMP_NUM_THREADS=$THREADS run "$GAPBS_DIR/$a" -f "$SG" -n "$TRIALS" "${args[@]}" > "$log"
  python3 - "$log" "$a" "$THREADS" "$SG" >> "$RESULTS" <<'PY'
import json, statistics, sys
times = [float(l.split()[-1]) for l in open(sys.argv[1]) if l.startswith("Trial Time:")]
print(json.dumps({"bench": "graph", "algorithm": sys.argv[2], "backend": "gapbs", "advice": "",
                  "agent": "none", "cache": "off", "graph": sys.argv[4],
                  "threads": int(sys.argv[3]), "trial_seconds": times,
                  "median_seconds": statistics.median(times), "local_memory_bytes": 0,
                  "faults": 0, "bytes_fetched": 0, "bytes_written_back": 0, "traffic": {}}))
PY
}

# Waits (up to 30 s) for a port file and prints the port.
wait_port() {
  local i
  for i in $(seq 300); do
    if [[ -s "$1" ]]; then cat "$1"; return 0; fi
    sleep 0.1
  done
  echo "no port in $1" >&2
  return 1
}
NODE=""
AGENT=""
start_node() {
  local port_file="$WORK/node-$$.port" bytes
  rm -f "$port_file"
  bytes=$(stat -c %s "$GRAPH")
  "$FARMEM_SERVER" --port 0 --port-file "$port_file" --preload-dir "$WORK" --idle-spin-us 0 \
      --capacity $((2 * bytes + (1 << 30))) > "$WORK/node-$$.log" 2>&1 &
  NODE_PID=$!
  NODE="127.0.0.1:$(wait_port "$port_file")"
  echo "== memory node $NODE (pid $NODE_PID, preload dir $WORK)"
}
start_agent() {
  local port_file="$WORK/agent-$$.port"
  stop_pid "$AGENT_PID"
  rm -f "$port_file"
  "$FARMEM_AGENT" --servers "$NODE" --port-file "$port_file" --idle-spin-us 0 \
      --cache-bytes "$AGENT_CACHE_BYTES" >> "$WORK/agent-$$.log" 2>&1 &
  AGENT_PID=$!
  AGENT="127.0.0.1:$(wait_port "$port_file")"
  echo "== farmem-agent $AGENT (pid $AGENT_PID) in front of $NODE"
}
agent_args() {  # CACHE
  echo --backend far --servers "$NODE" --agent "$AGENT" --cache "$1" \
       --local-memory "$BUDGET" --page-bytes "$PAGE_BYTES" --far-advice "$FAR_ADVICE" \
       --far-pin "$FAR_PIN"
}
if [[ " $BACKENDS " == *" agent-"* || "$SHARED" == 1 ]]; then
  start_node
  start_agent
fi

RESULTS="$WORK/compare-$$.json"
SHARED_RESULTS="$WORK/compare-shared-$$.json"
: > "$RESULTS"
: > "$SHARED_RESULTS"
for algorithm in $ALGORITHMS; do
  for backend in $BACKENDS; do
    args=(graph run "$algorithm" --graph "$GRAPH" --threads "$THREADS" --trials "$TRIALS"
          --seed "$SEED" --out "$RESULTS")
    [[ "$algorithm" == pr ]] && args+=(--iterations "$PR_ITERATIONS" --tolerance "$PR_TOLERANCE"
                                       --convention "$PR_CONVENTION")
    if [[ "$backend" == gapbs ]]; then
      echo "== $algorithm gapbs"
      run_gapbs "$algorithm" || echo "   ($algorithm gapbs failed or timed out)"
      continue
    fi
    case "$backend" in
      agent-off|agent-static) read -ra extra <<< "$(agent_args "${backend#agent-}")"
                              args+=("${extra[@]}") ;;
      agent-dynamic) [[ "$AGENT_FRESH" == 1 ]] && start_agent
                     read -ra extra <<< "$(agent_args dynamic)"
                     args+=("${extra[@]}") ;;
      local) args+=(--backend local) ;;
      far) args+=(--backend far --local-memory "$BUDGET" --page-bytes "$PAGE_BYTES"
                  --far-advice "$FAR_ADVICE" --far-pin "$FAR_PIN" "${GRAPH_PAGE_ARGS[@]}") ;;
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

# Two host processes sharing one agent: BFS in the background plus SHARED_ALGORITHM, on the same
# preloaded graph (one shared remote copy; with dynamic caching, shared agent entries).
if [[ "$SHARED" == 1 ]]; then
  [[ "$AGENT_FRESH" == 1 ]] && start_agent
  read -ra extra <<< "$(agent_args "$SHARED_CACHE")"
  echo "== shared agent: bfs in the background + $SHARED_ALGORITHM (cache $SHARED_CACHE)"
  timeout --signal=TERM "$RUN_TIMEOUT" "$FARMEM" graph run bfs --graph "$GRAPH" \
      --threads "$THREADS" --trials "$TRIALS" --seed "$SEED" --out "$SHARED_RESULTS" \
      "${extra[@]}" &
  BG_PID=$!
  if ! run "$FARMEM" graph run "$SHARED_ALGORITHM" --graph "$GRAPH" --threads "$THREADS" \
      --trials "$TRIALS" --seed "$SEED" --out "$SHARED_RESULTS" "${extra[@]}"; then
    echo "   ($SHARED_ALGORITHM beside bfs failed or timed out)"
  fi
  rc=0
  wait "$BG_PID" || rc=$?
  BG_PID=""
  [[ $rc -ne 0 ]] && echo "   (background bfs failed: status $rc)"
fi
cat "$RESULTS" "$SHARED_RESULTS" >> "$OUT"

echo
echo "$GRAPH_KIND scale $SCALE (ids: $ORDER; $(basename "$GRAPH")), $THREADS threads, budget $BUDGET, median of $TRIALS, far graph pages $GRAPH_PAGES"
python3 - "$RESULTS" "$SHARED_RESULTS" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
shared = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
def name(r):
    if r["backend"] == "mmap":
        return "mmap/" + r["advice"]
    if r["backend"] == "far" and r.get("agent", "none") != "none":
        return "agent/" + r["cache"]
    return r["backend"]
def mib(r, path):
    t = r.get("traffic", {}).get(path)
    return f'{t["bytes"] / 2**20:9.1f}' if t else "        -"
local = {r["algorithm"]: r["median_seconds"] for r in rows if r["backend"] == "local"}
def table(rows):
    print(f'{"algorithm":9} {"backend":13} {"seconds":>9} {"x local":>8} {"budget MiB":>10} '
          f'{"faults":>9} {"fetched MiB":>11} {"graphs/trial":>12} {"written MiB":>11} '
          f'{"h->mn MiB":>9} {"h->ag MiB":>9} {"ag->mn MiB":>10} {"agent hit":>9}')
    for r in rows:
        base = local.get(r["algorithm"])
        ratio = f'{r["median_seconds"] / base:8.2f}' if base else "       -"
        hit = r.get("agent_cache_hit_rate")
        hit = f'{100 * hit:8.1f}%' if hit is not None else "        -"
        # Bytes fetched per trial against the graph's size: where the paging goes.
        trials = len(r.get("trial_seconds") or [1])
        graphs = (f'{r["bytes_fetched"] / trials / r["graph_bytes"]:12.2f}'
                  if r.get("graph_bytes") else "           -")
        print(f'{r["algorithm"]:9} {name(r):13} {r["median_seconds"]:9.3f} {ratio} '
              f'{r["local_memory_bytes"] / 2**20:10.1f} {r["faults"]:9d} '
              f'{r["bytes_fetched"] / 2**20:11.1f} {graphs} {r["bytes_written_back"] / 2**20:11.1f} '
              f'{mib(r, "host->memnode")} {mib(r, "host->agent")} {mib(r, "agent->memnode"):>10} '
              f'{hit}')
table(rows)
def find(a, n):
    got = [r for r in rows if r["algorithm"] == a and name(r) == n]
    return got[0] if got else None
for a in local:
    gap = find(a, "gapbs")
    if gap:
        print(f'{a}: farmem local is {local[a] / gap["median_seconds"]:.2f}x GAPBS\'s time')
    far = find(a, "far")
    mm = [r["median_seconds"] for r in rows if r["algorithm"] == a and r["backend"] == "mmap"]
    if far and mm:
        print(f'{a}: far is {min(mm) / far["median_seconds"]:.2f}x faster than the better mmap, '
              f'{far["median_seconds"] / local[a]:.2f}x local')
for a in sorted({r["algorithm"] for r in rows}):
    off, st, dyn = find(a, "agent/off"), find(a, "agent/static"), find(a, "agent/dynamic")
    if a == "pr" and off and st and off["traffic"].get("agent->memnode", {}).get("bytes"):
        o = off["traffic"]["agent->memnode"]["bytes"]
        s = st["traffic"]["agent->memnode"]["bytes"]
        print(f'pr: static vertex caching lowers memory-node traffic by {100 * (1 - s / o):.1f}% '
              f'({o / 2**20:.1f} -> {s / 2**20:.1f} MiB agent->memnode)')
    if dyn and dyn.get("agent_stats"):
        d = dyn["agent_stats"]
        rate = d.get("dynamic_hit_rate")
        rate = f'{100 * rate:.1f}%' if rate is not None else "-"
        print(f'{a}: dynamic cache hit rate {rate} ({d["dynamic_hits"]} hits, '
              f'{d["dynamic_misses"]} misses, {d["staged_bytes"] / 2**20:.1f} MiB staged, '
              f'{d["dynamic_switches"]} adaptive switches, enabled at the end: '
              f'{d["dynamic_enabled_now"]})')
if shared:
    print("two host processes sharing one agent (agent counters are agent-wide):")
    table(shared)
PY
echo "(records appended to $OUT)"
