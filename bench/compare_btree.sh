#!/usr/bin/env bash
# farmem's one-sided B+tree beside farmem's hash table (point operations, YCSB C and A) and
# beside Redis sorted sets (YCSB E: range scans), all in one run, alternating and repeated.
#
#   bench/compare_btree.sh                                   # 1M records, 10 s per run, 3 rounds
#   RECORDS=100000 DURATION=2 ROUNDS=1 bench/compare_btree.sh   # quick check
#   TRANSPORTS="shm tcp" bench/compare_btree.sh              # YCSB-E over TCP too
#
# Environment: RECORDS (1000000), KEY_BYTES (8), VALUE_BYTES (8), DURATION (10 s per run),
# ROUNDS (3: each round runs tree and hash on C and A, in alternating order, then E on the tree
# and on Redis), THREADS (1), COROUTINES (16), DISTRIBUTION (zipfian), ZIPF (0.99),
# MAX_SCAN (100: scan lengths uniform in 1..MAX_SCAN), TRANSPORTS ("shm"; "tcp" adds YCSB-E with
# UCX_TLS=tcp for node and client at TCP_COROUTINES = 256 in flight, Redis's 16 x 16, once with the
# served scan and once --no-served), FARMEM (build/farmem),
# OUT (build/bench-compare-btree.json: every farmem run is appended there).
#
#  farmem:  FARMEM bench ycsb --structure btree|hash --workload c|a|e, THREADS x COROUTINES in
#           flight, a local memory node started by farmem for each run (shared memory).
#  Redis:   a sorted set of RECORDS members "key:%012d" (score 0), loaded with redis-cli --pipe;
#           redis-benchmark -c 16 -P 16 -r RECORDS runs
#             EVAL "return redis.call('ZRANGEBYLEX', KEYS[1], '[' .. ARGV[1], '+', 'LIMIT', 0,
#                   math.random(1, MAX_SCAN))" 1 ykeys key:__rand_int__
#           i.e. ZRANGEBYLEX from a uniform random member with a length uniform in 1..MAX_SCAN
#           (redis-benchmark cannot vary an argument's range, so a one-line script draws it).
#           Records/s for Redis = scans/s x the mean length returned, measured by running the
#           same script 2000 times through redis-cli.
# Reported: each run's figures, the load average before it (the machine may be shared), the
# tree/hash ratio per round and its median, and E side by side. Redis listens on 127.0.0.1 on
# a free port without persistence and is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

RECORDS=${RECORDS:-1000000}
KEY_BYTES=${KEY_BYTES:-8}
VALUE_BYTES=${VALUE_BYTES:-8}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-1}
COROUTINES=${COROUTINES:-16}
DISTRIBUTION=${DISTRIBUTION:-zipfian}
ZIPF=${ZIPF:-0.99}
MAX_SCAN=${MAX_SCAN:-100}
TRANSPORTS=${TRANSPORTS:-shm}
TCP_COROUTINES=${TCP_COROUTINES:-256}
FARMEM=${FARMEM:-build/farmem}
OUT=${OUT:-build/bench-compare-btree.json}
CLIENTS=16
PIPELINE=16
REDIS_OPS=${REDIS_OPS:-$(python3 -c 'import sys; print(max(1000, int(float(sys.argv[1]) * 100000)))' "$DURATION")}

[ -x "$FARMEM" ] || { echo "$FARMEM not found or not executable (build it first)" >&2; exit 2; }
"$FARMEM" bench ycsb --help 2>&1 | grep -q -- --max-scan-length ||
  { echo "$FARMEM bench ycsb has no --structure btree / --max-scan-length" >&2; exit 2; }

SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO=sudo; fi
need=()
command -v redis-server >/dev/null || need+=(redis-server)
{ command -v redis-benchmark >/dev/null && command -v redis-cli >/dev/null; } || need+=(redis-tools)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ] && [ -z "$SUDO" ]; then
    echo "missing packages: ${need[*]}; run as root or install sudo" >&2; exit 2
  fi
  echo "== installing ${need[*]}"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${need[@]}" >/dev/null || { echo "apt-get install ${need[*]} failed" >&2; exit 2; }
fi

tmp=$(mktemp -d)
redis_pid=""
cleanup() {
  if [ -n "$redis_pid" ]; then kill "$redis_pid" 2>/dev/null || true; wait "$redis_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$(dirname "$OUT")"
load() { cut -d' ' -f1 /proc/loadavg; }

# ---------------------------------------------------------------------------- Redis
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
redis-server --save '' --appendonly no --port "$port" --bind 127.0.0.1 --daemonize no \
  --dir "$tmp" --logfile "$tmp/redis.log" &
redis_pid=$!
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
echo "== redis $(redis-server --version | awk '{sub("v=", "", $3); print $3}') on 127.0.0.1:$port: loading $RECORDS members into a sorted set"
python3 - "$RECORDS" <<'PY' | redis-cli -p "$port" --pipe > "$tmp/redis-load.log" 2>&1
import sys
n = int(sys.argv[1])
out, batch = sys.stdout.buffer, []
for i in range(n):
    batch.append(b"*4\r\n$4\r\nZADD\r\n$5\r\nykeys\r\n$1\r\n0\r\n$16\r\nkey:%012d\r\n" % i)
    if len(batch) == 8192:
        out.write(b"".join(batch)); batch = []
out.write(b"".join(batch))
PY
members=$(redis-cli -p "$port" zcard ykeys)
[ "$members" = "$RECORDS" ] || { echo "redis: loaded $members members, not $RECORDS" >&2; exit 1; }
SCRIPT="return redis.call('ZRANGEBYLEX', KEYS[1], '[' .. ARGV[1], '+', 'LIMIT', 0, math.random(1, $MAX_SCAN))"
# Mean records per scan, from 2000 scans through the same script.
redis_mean=$(python3 - "$port" "$RECORDS" "$SCRIPT" <<'PY'
import random, socket, sys
port, n, script = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].encode()
s = socket.create_connection(("127.0.0.1", port))
f = s.makefile("rb")
def cmd(*args):
    s.sendall(b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args))
def reply():
    line = f.readline()
    if line[:1] == b"*":
        count = int(line[1:])
        for _ in range(count):
            f.readline(); f.readline()
        return count
    raise SystemExit("unexpected reply %r" % line)
total = 0
for _ in range(2000):
    cmd(b"EVAL", script, b"1", b"ykeys", b"key:%012d" % random.randrange(n))
    total += reply()
print("%.2f" % (total / 2000))
PY
)

redis_e() {  # round
  local l
  l=$(load)
  timeout --foreground $(( 600 + REDIS_OPS / 10000 )) redis-benchmark -p "$port" -c "$CLIENTS" \
    -P "$PIPELINE" -n "$REDIS_OPS" -r "$RECORDS" --csv \
    EVAL "$SCRIPT" 1 ykeys "key:__rand_int__" > "$tmp/redis_e_$1.csv" 2> "$tmp/redis_e_$1.err" || true
  echo "$l" > "$tmp/redis_e_$1.load"
}

# ---------------------------------------------------------------------------- farmem
farmem() {  # structure workload round [transport: shm, tcp, tcp-one-sided]
  local l tag="$1_$2_$3" tr=${4:-shm} co=$COROUTINES
  local tls=(env -u UCX_TLS) extra=()
  if [ "$tr" != shm ]; then tag="$1_$2_${tr}_$3"; tls=(env UCX_TLS=tcp); co=$TCP_COROUTINES; fi
  if [ "$tr" = tcp-one-sided ]; then extra=(--no-served); fi
  l=$(load)
  echo "== round $3: $FARMEM bench ycsb --structure $1 --workload $2 ($tr, $THREADS x $co; load average $l)"
  if timeout --foreground $(( DURATION * 2 + 900 )) "${tls[@]}" "$FARMEM" bench ycsb --structure "$1" \
       --workload "$2" --records "$RECORDS" --key-bytes "$KEY_BYTES" --value-bytes "$VALUE_BYTES" \
       --distribution "$DISTRIBUTION" --zipf "$ZIPF" --threads "$THREADS" \
       --coroutines "$co" --max-scan-length "$MAX_SCAN" --duration "$DURATION" "${extra[@]}" \
       --out "$tmp/fm_$tag.json" > "$tmp/fm_$tag.log" 2>&1 \
     && [ -s "$tmp/fm_$tag.json" ]; then
    cat "$tmp/fm_$tag.json" >> "$OUT"
    echo "$l" > "$tmp/fm_$tag.load"
  else
    echo "   failed: $(tail -n 2 "$tmp/fm_$tag.log" | tr '\n' ' ')"
  fi
}

for r in $(seq "$ROUNDS"); do
  for wl in c a; do
    if [ $(( r % 2 )) = 1 ]; then farmem btree "$wl" "$r"; farmem hash "$wl" "$r"
    else farmem hash "$wl" "$r"; farmem btree "$wl" "$r"; fi
  done
  farmem btree e "$r"
  for tr in $TRANSPORTS; do
    if [ "$tr" = tcp ]; then farmem btree e "$r" tcp; farmem btree e "$r" tcp-one-sided; fi
  done
  echo "== round $r: redis-benchmark -c $CLIENTS -P $PIPELINE -n $REDIS_OPS -r $RECORDS EVAL ZRANGEBYLEX (load average $(load))"
  redis_e "$r"
done

# ---------------------------------------------------------------------------- report
echo
RESULTS=$tmp ROUNDS=$ROUNDS REDIS_MEAN=$redis_mean MAX_SCAN=$MAX_SCAN RECORDS=$RECORDS \
THREADS=$THREADS COROUTINES=$COROUTINES TCP_COROUTINES=$TCP_COROUTINES CLIENTS=$CLIENTS PIPELINE=$PIPELINE OUT=$OUT python3 - <<'PY'
import csv, json, os, statistics

d, E = os.environ["RESULTS"], os.environ
rounds = int(E["ROUNDS"])


def read(name):
    try:
        with open(os.path.join(d, name)) as f:
            return f.read().strip()
    except OSError:
        return None


def fm(structure, wl, r, tr="shm"):
    tag = "%s_%s_%d" % (structure, wl, r) if tr == "shm" else "%s_%s_%s_%d" % (structure, wl, tr, r)
    txt = read("fm_%s.json" % tag)
    if not txt:
        return None
    rec = json.loads(txt.splitlines()[-1])
    rec["_load"] = read("fm_%s.load" % tag)
    return rec


def redis(r):
    txt = read("redis_e_%d.csv" % r)
    if not txt:
        return None
    for rec in csv.DictReader(txt.splitlines()):
        return {"ops": float(rec["rps"]), "p50": float(rec.get("p50_latency_ms") or "nan") * 1e3,
                "_load": read("redis_e_%d.load" % r)}
    return None


print("point operations: tree vs hash, same shape, alternating order (%s threads x %s coroutines)"
      % (E["THREADS"], E["COROUTINES"]))
print("%-6s %-8s %14s %14s %8s  %s" % ("round", "workload", "btree ops/s", "hash ops/s", "ratio",
                                         "btree page reads/get, cache hits; load avg (tree/hash)"))
ratios = {"c": [], "a": []}
for r in range(1, rounds + 1):
    for wl in "ca":
        t, h = fm("btree", wl, r), fm("hash", wl, r)
        ratio = t["ops_per_s"] / h["ops_per_s"] if t and h else None
        if ratio:
            ratios[wl].append(ratio)
        print("%-6d %-8s %14s %14s %8s  %s" % (
            r, wl.upper(), "{:,.0f}".format(t["ops_per_s"]) if t else "n/a",
            "{:,.0f}".format(h["ops_per_s"]) if h else "n/a",
            "%.2fx" % ratio if ratio else "n/a",
            ("%.3f, %.1f%%; %s/%s" % (t.get("page_reads_per_get", 0), t.get("index_cache_hit_percent", 0),
                                      t["_load"], h["_load"] if h else "?")) if t else ""))
for wl in "ca":
    if ratios[wl]:
        print("  %s: tree/hash median %.2fx over %d rounds (min %.2fx, max %.2fx); goal >= 0.5x: %s" % (
            wl.upper(), statistics.median(ratios[wl]), len(ratios[wl]), min(ratios[wl]),
            max(ratios[wl]), "met" if statistics.median(ratios[wl]) >= 0.5 else "not met"))
print()
print("YCSB-E: scans of 1..%s records (uniform) from a random key, %s keys" % (E["MAX_SCAN"], E["RECORDS"]))
print("%-6s %-28s %12s %14s %10s  %s" % ("round", "system", "scans/s", "records/s", "p50_us", "load avg"))
mean = float(E["REDIS_MEAN"] or "nan")
tcp_ratios = []
for r in range(1, rounds + 1):
    x = redis(r)
    for tr, label in (("shm", "farmem btree shm (95% scans)"), ("tcp", "farmem btree tcp, served"),
                      ("tcp-one-sided", "farmem btree tcp, one-sided")):
        t = fm("btree", "e", r, tr)
        if not t:
            continue
        scans = t.get("scans_per_s", 0)
        vs = " %.2fx redis" % (scans / x["ops"]) if x and x["ops"] else ""
        if tr == "tcp" and vs:
            tcp_ratios.append(scans / x["ops"])
        print("%-6d %-28s %12s %14s %10.1f  %s%s" % (
            r, label, "{:,.0f}".format(scans),
            "{:,.0f}".format(t.get("scan_records_per_s", 0)), t["ops"].get("scan", {}).get("p50_us", 0),
            t["_load"], vs))
    if x:
        print("%-6d %-28s %12s %14s %10.1f  %s" % (
            r, "redis ZRANGEBYLEX (100%)", "{:,.0f}".format(x["ops"]), "{:,.0f}".format(x["ops"] * mean),
            x["p50"], x["_load"]))
if tcp_ratios:
    m = statistics.median(tcp_ratios)
    print("  E over TCP, served: median %.2fx Redis scans/s over %d rounds (%s x %s in flight vs"
          " %s x %s); goal >= 2x: %s" % (m, len(tcp_ratios), E["THREADS"], E["TCP_COROUTINES"],
                                         E["CLIENTS"], E["PIPELINE"], "met" if m >= 2 else "not met"))
print()
print("notes: farmem runs with a local memory node in its own process, on shared memory (%s x %s in"
      " flight; over TCP %s per thread)" % (E["THREADS"], E["COROUTINES"], E["TCP_COROUTINES"]))
print("       Redis over"
      " TCP loopback, %s clients x pipeline %s, one server thread; Redis records/s = scans/s x %.2f"
      " (mean records per scan measured through the same script). farmem runs appended to %s."
      % (E["CLIENTS"], E["PIPELINE"], mean, E["OUT"]))
PY
