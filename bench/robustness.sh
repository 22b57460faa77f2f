#!/usr/bin/env bash
# Robustness scenarios, with real processes, printing what happened (not a test:
# the failure matrix in tests/integration asserts outcomes; this prints the figures).
#
#   bench/robustness.sh [kills|crash|deadnode|junk|memory|all]   (default all)
#
# Environment: BIN (default build), ROUNDS (kills: 10), CRASH_RUNS (crash: 10 per transport
# and signal), OP_TIMEOUT_MS (5000, the client default). Every process is started here and
# signalled by its PID; nothing else is touched.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-build}
ROUNDS=${ROUNDS:-10}
CRASH_RUNS=${CRASH_RUNS:-10}
WORK=$(mktemp -d /tmp/farmem-robust-XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

# start_node NAME [extra args...]: sets NODE_PID and NODE_PORT
start_node() {
  local name=$1; shift
  rm -f "$WORK/$name.port"
  "$BIN/farmem-server" --port "${PORT:-0}" --port-file "$WORK/$name.port" "$@" \
    > "$WORK/$name.log" 2>&1 &
  NODE_PID=$!
  PIDS+=("$NODE_PID")
  for _ in $(seq 200); do [ -s "$WORK/$name.port" ] && break; sleep 0.05; done
  NODE_PORT=$(cat "$WORK/$name.port")
}

alive() { kill -0 "$1" 2>/dev/null; }

fresh_client_ok() {
  "$BIN/farmem" bench ops --op read --duration 0.3 --servers "127.0.0.1:$1" > "$WORK/fresh.log" 2>&1
}

used_bytes() {  # used bytes and allocations of node at port $1
  "$BIN/farmem" status --servers "127.0.0.1:$1" | awk 'NR==2 {print $4, $6}'
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# ---- 1. six TCP clients killed mid-run, node stopped 8 s and resumed, ROUNDS times ----------
kills() {
  echo "== kills: TCP, $ROUNDS rounds of 6 clients killed mid-run + node SIGSTOP 8 s / SIGCONT"
  export UCX_TLS=tcp
  start_node kills --capacity 2GiB
  local ok=0
  for round in $(seq "$ROUNDS"); do
    local clients=()
    for i in 1 2 3; do
      "$BIN/farmem" bench ops --op read --duration 30 --servers "127.0.0.1:$NODE_PORT" \
        > /dev/null 2>&1 & clients+=($!); PIDS+=($!)
      "$BIN/farmem" bench ops --op write --duration 30 --servers "127.0.0.1:$NODE_PORT" \
        > /dev/null 2>&1 & clients+=($!); PIDS+=($!)
    done
    sleep 1.5
    for c in "${clients[@]}"; do kill -KILL "$c" 2>/dev/null; done
    # a reading client stays through the stop
    "$BIN/farmem" bench ops --op read --duration 20 --servers "127.0.0.1:$NODE_PORT" \
      > "$WORK/reader.log" 2>&1 & local reader=$!; PIDS+=($!)
    sleep 1
    kill -STOP "$NODE_PID"; sleep 8; kill -CONT "$NODE_PID"
    kill -KILL "$reader" 2>/dev/null; wait "$reader" 2>/dev/null
    if alive "$NODE_PID" && fresh_client_ok "$NODE_PORT"; then
      ok=$((ok + 1)); echo "  round $round: node alive, fresh client served"
    else
      echo "  round $round: FAILED (node alive: $(alive "$NODE_PID" && echo yes || echo no))"
      tail -5 "$WORK/kills.log"
    fi
  done
  echo "  => $ok / $ROUNDS rounds clean; node log errors: $(grep -ci 'fatal\|error' "$WORK/kills.log")"
  grep -i 'fatal\|error' "$WORK/kills.log" | sed -E 's/^\[[^]]*\] *//' | sort | uniq -c | head -5
  kill -TERM "$NODE_PID"; wait "$NODE_PID"; echo "  node exit status on SIGTERM: $?"
  unset UCX_TLS
}

# ---- 2. node killed or stopped during a YCSB-A load -------------------------
crash() {
  for tls in tcp shm; do
    for sig in KILL STOP; do
      local clean=0 total=0 worst=0
      for run in $(seq "$CRASH_RUNS"); do
        if [ "$tls" = tcp ]; then export UCX_TLS=tcp; else unset UCX_TLS; fi
        start_node crash --capacity 2GiB
        "$BIN/farmem" bench ycsb --structure hash --workload a --records 300000 --duration 30 \
          --coroutines 16 --servers "127.0.0.1:$NODE_PORT" > "$WORK/crash.log" 2>&1 &
        local client=$!; PIDS+=($client)
        sleep "${CRASH_DELAY:-1.5}"
        kill -"$sig" "$NODE_PID"
        local t0; t0=$(date +%s%N)
        wait "$client"; local rc=$?
        local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
        total=$((total + 1)); [ "$ms" -gt "$worst" ] && worst=$ms
        if [ "$rc" = 1 ] && grep -q 'PeerFailed\|TimedOut' "$WORK/crash.log"; then
          clean=$((clean + 1))
        else
          echo "  $tls $sig run $run: rc=$rc after ${ms} ms: $(tail -1 "$WORK/crash.log")"
        fi
        kill -CONT "$NODE_PID" 2>/dev/null; kill -KILL "$NODE_PID" 2>/dev/null
        wait "$NODE_PID" 2>/dev/null
      done
      echo "== crash: $tls, node SIG$sig during the load: $clean / $total exited 1 with" \
           "PeerFailed/TimedOut; slowest exit ${worst} ms after the signal"
    done
  done
  unset UCX_TLS
}

# ---- 3. shm, --direct off, node killed: the client exits non-zero within deadline + 2 s ------
deadnode() {
  local worst=0 n=5 clean=0
  for run in $(seq $n); do
    start_node dead --capacity 1GiB
    "$BIN/farmem" bench ops --op write --direct off --duration 60 \
      --servers "127.0.0.1:$NODE_PORT" > "$WORK/dead.log" 2>&1 &
    local client=$!; PIDS+=($client)
    sleep 1
    kill -KILL "$NODE_PID"
    local t0; t0=$(date +%s%N)
    wait "$client"; local rc=$?
    local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    [ "$ms" -gt "$worst" ] && worst=$ms
    [ "$rc" != 0 ] && clean=$((clean + 1))
  done
  echo "== deadnode: shm, --direct off, node killed: $clean / $n clients exited non-zero;" \
       "slowest after ${worst} ms (deadline ${OP_TIMEOUT_MS:-5000} ms + 2 s allowed)"
}

# ---- 4. 2000 connections of 4 KiB random junk ---------------------------------------------
junk() {
  start_node junk --capacity 256MiB
  fresh_client_ok "$NODE_PORT"
  local fds_before; fds_before=$(ls "/proc/$NODE_PID/fd" | wc -l)
  python3 - "$NODE_PORT" <<'PYEOF'
import os, random, socket, sys
port = int(sys.argv[1])
rng = random.Random(20261123)
for batch in range(20):
    socks = []
    for i in range(100):
        s = socket.create_connection(("127.0.0.1", port))
        try:
            s.sendall(bytes(rng.getrandbits(8) for _ in range(4096)))
        except OSError:
            pass
        socks.append(s)
    for s in socks:
        s.close()
print("  sent 2000 connections x 4 KiB of random bytes (seed 20261123)")
PYEOF
  sleep 1
  local fds_after; fds_after=$(ls "/proc/$NODE_PID/fd" | wc -l)
  local t0; t0=$(cpu_ticks "$NODE_PID"); sleep 5; local t1; t1=$(cpu_ticks "$NODE_PID")
  local hz; hz=$(getconf CLK_TCK)
  local cpu; cpu=$(awk -v d=$((t1 - t0)) -v hz="$hz" 'BEGIN {printf "%.1f", 100 * d / hz / 5}')
  local fresh="no"; fresh_client_ok "$NODE_PORT" && fresh="yes"
  echo "== junk: fds $fds_before -> $fds_after; node CPU over the next 5 s: ${cpu}% of a core;" \
       "fresh client served: $fresh; refused so far: $("$BIN/farmem" status --servers \
       "127.0.0.1:$NODE_PORT" | awk 'NR==2 {print $12}')"
  kill -TERM "$NODE_PID"; wait "$NODE_PID"
}

# ---- 5. restart at once after kill -9; memory back after killed clients and destroy loops ---
memory() {
  start_node mem --capacity 2GiB
  local port=$NODE_PORT
  echo "== memory: starting figure (used bytes, allocations): $(used_bytes "$port")"
  for i in $(seq 20); do
    "$BIN/farmem" bench ycsb --workload a --records 20000 --duration 10 \
      --servers "127.0.0.1:$port" > /dev/null 2>&1 & local c=$!; PIDS+=($c)
    sleep 0.$((3 + i % 6))
    kill -KILL "$c"; wait "$c" 2>/dev/null
  done
  sleep 0.5
  echo "  after 20 clients killed mid-run: $(used_bytes "$port")"
  for i in $(seq 5); do
    "$BIN/farmem" bench ycsb --workload a --records 20000 --duration 0.5 \
      --servers "127.0.0.1:$port" 2>/dev/null | grep "memory nodes" | sed 's/^/  /'
  done
  echo "  after 5 create/fill/destroy runs: $(used_bytes "$port")"
  kill -KILL "$NODE_PID"; wait "$NODE_PID" 2>/dev/null
  local t0; t0=$(date +%s%N)
  PORT=$port start_node mem2 --capacity 2GiB
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  if [ "$NODE_PORT" = "$port" ] && alive "$NODE_PID"; then
    echo "  killed with -9 and restarted on port $port in ${ms} ms: $(used_bytes "$port")"
  else
    echo "  restart on port $port FAILED: $(tail -2 "$WORK/mem2.log")"
  fi
  kill -TERM "$NODE_PID"; wait "$NODE_PID"
}

case "${1:-all}" in
  kills) kills ;;
  crash) crash ;;
  deadnode) deadnode ;;
  junk) junk ;;
  memory) memory ;;
  all) junk; memory; deadnode; crash; kills ;;
  *) echo "usage: $0 [kills|crash|deadnode|junk|memory|all]"; exit 2 ;;
esac
