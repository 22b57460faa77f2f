#!/usr/bin/env bash
# farmem's key-value store (kv) and one-sided hash table beside Redis and memcached, same
# workload shape, one run, on shared memory and over TCP.
#
#   bench/compare_kv.sh                                  # 1M records, 8 B keys/values, 10 s per run
#   RECORDS=100000 DURATION=2 OPS=300000 bench/compare_kv.sh   # quick check
#   TRANSPORTS=tcp STRUCTURES=kv bench/compare_kv.sh     # only the kv store over TCP
#
# Environment: RECORDS (1000000), KEY_BYTES (8), VALUE_BYTES (8), DURATION (10 s per farmem and
# memcached run), REPEAT (3: every farmem run and redis-benchmark is repeated, alternating, and
# the median is reported), THREADS (1), SHM_COROUTINES (64) and TCP_COROUTINES (256) per thread
# for both structures, KV_MODE (auto), COALESCE (on), KV_BATCH (64), KV_IN_FLIGHT (8) and
# KV_CACHE_LOG2 (22) for the kv store, NODE_IDLE_SPIN_US (0: the local node sleeps when idle;
# "" = the node's default 200 us of yield-spinning, which starves on a busy 2-core machine),
# TRANSPORTS ("shm tcp"), STRUCTURES ("kv hash"), FARMEM (build/farmem), DISTRIBUTION (zipfian)
# and ZIPF (0.99) for farmem, OPS (requests per redis-benchmark test, default DURATION x 1M),
# OUT (build/bench-compare-kv.json: farmem runs are appended there).
#
# Workloads: C = 100% reads, A = 50% reads / 50% updates.
#  farmem:    build/farmem bench ycsb --structure kv|hash, THREADS x COROUTINES requests in
#             flight, with a local memory node (a separate farmem-server process) started by
#             farmem for each run; "shm" leaves UCX_TLS unset (shared memory), "tcp" sets
#             UCX_TLS=tcp for both processes.
#  Redis:     redis-benchmark, 16 clients, pipeline 16, uniform random keys over RECORDS
#             preloaded keys. redis-benchmark cannot mix commands, so GET and SET run
#             separately and the A figure is the harmonic mix 2/(1/GET + 1/SET).
#  memcached: memaslap (memcaslap in Debian 12's libmemcached-tools), 16 connections, one
#             request in flight each. memtier-benchmark would speak both protocols but is not
#             packaged in Debian 12 (bookworm), so it is not used.
# Redis and memcached listen on 127.0.0.1 only, on free random ports, without persistence, and
# are stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh

RECORDS=${RECORDS:-1000000}
KEY_BYTES=${KEY_BYTES:-8}
VALUE_BYTES=${VALUE_BYTES:-8}
DURATION=${DURATION:-10}
THREADS=${THREADS:-1}
COROUTINES=${COROUTINES:-16}
FARMEM=${FARMEM:-build/farmem}
SHM_COROUTINES=${SHM_COROUTINES:-64}
TCP_COROUTINES=${TCP_COROUTINES:-256}
KV_MODE=${KV_MODE:-auto}
COALESCE=${COALESCE:-on}
KV_BATCH=${KV_BATCH:-64}
KV_IN_FLIGHT=${KV_IN_FLIGHT:-8}
KV_CACHE_LOG2=${KV_CACHE_LOG2:-22}
NODE_IDLE_SPIN_US=${NODE_IDLE_SPIN_US-0}
REPEAT=${REPEAT:-3}
TRANSPORTS=${TRANSPORTS:-"shm tcp"}
STRUCTURES=${STRUCTURES:-"kv hash"}
DISTRIBUTION=${DISTRIBUTION:-zipfian}
ZIPF=${ZIPF:-0.99}
OUT=${OUT:-build/bench-compare-kv.json}
OPS=${OPS:-$(python3 -c 'import sys; print(max(1000, int(float(sys.argv[1]) * 1000000)))' "$DURATION")}
CLIENTS=16     # Redis clients, memcached connections
PIPELINE=16    # Redis pipeline depth

# --------------------------------------------------------------------------- packages
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null; then SUDO=sudo; fi
fi
memaslap_bin() { command -v memaslap || command -v memcaslap || true; }
need=()
command -v redis-server >/dev/null || need+=(redis-server)
{ command -v redis-benchmark >/dev/null && command -v redis-cli >/dev/null; } || need+=(redis-tools)
command -v memcached >/dev/null || need+=(memcached)
[ -n "$(memaslap_bin)" ] || need+=(libmemcached-tools)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ] && [ -z "$SUDO" ]; then
    echo "missing packages: ${need[*]}; run as root or install sudo" >&2; exit 2
  fi
  echo "== installing ${need[*]}"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" \
    >/dev/null || {
    echo "apt-get install ${need[*]} failed" >&2; exit 2; }
fi
MEMASLAP=$(memaslap_bin)
[ -n "$MEMASLAP" ] || { echo "memaslap not found after installing libmemcached-tools" >&2; exit 2; }
REDIS_SERVER=$(command -v redis-server)
MEMCACHED=$(command -v memcached)

# --------------------------------------------------------------------------- helpers
tmp=$(mktemp -d)
redis_pid=""
mc_pid=""
cleanup() {
  stop "$redis_pid"; redis_pid=""
  stop "$mc_pid"; mc_pid=""
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mc_stat() {  # port name -> value of one "stats" field
  python3 - "$1" "$2" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(b"stats\r\n")
buf = b""
while not buf.endswith(b"END\r\n"):
    chunk = s.recv(65536)
    if not chunk:
        break
    buf += chunk
for line in buf.decode().splitlines():
    f = line.split()
    if len(f) == 3 and f[1] == sys.argv[2]:
        print(f[2])
PY
}
seconds_int=$(python3 -c 'import math, sys; print(max(1, math.ceil(float(sys.argv[1]))))' "$DURATION")

dist=$DISTRIBUTION; [ "$dist" = zipfian ] && dist="zipfian $ZIPF"
echo "records=$RECORDS key=${KEY_BYTES}B value=${VALUE_BYTES}B duration=${DURATION}s;" \
     "farmem: threads=$THREADS coroutines shm=$SHM_COROUTINES tcp=$TCP_COROUTINES (kv: mode" \
     "$KV_MODE, coalesce $COALESCE, batch $KV_BATCH) $dist on $TRANSPORTS; redis: $OPS" \
     "requests per test; medians of $REPEAT"

# --------------------------------------------------------------------------- Redis
run_redis() {
  local port
  port=$(free_port)
  "$REDIS_SERVER" --save '' --appendonly no --port "$port" --bind 127.0.0.1 --daemonize no \
    --dir "$tmp" --logfile "$tmp/redis-server.log" &
  redis_pid=$!
  if ! wait_port "$port" "$redis_pid"; then
    echo "redis-server did not start (log: $(tail -n 3 "$tmp/redis-server.log" 2>/dev/null))" > "$tmp/redis.err"
    return 1
  fi
  echo "== redis $("$REDIS_SERVER" --version | awk '{sub("v=", "", $3); print $3}') on 127.0.0.1:$port: preloading $RECORDS keys"
  # Exactly the keys redis-benchmark -r RECORDS draws from: "key:" + 12 digits in [0, RECORDS).
  python3 - "$RECORDS" "$VALUE_BYTES" <<'PY' | redis-cli -h 127.0.0.1 -p "$port" --pipe > "$tmp/redis-load.log" 2>&1
import sys
n, v = int(sys.argv[1]), b"x" * int(sys.argv[2])
tail = b"\r\n$%d\r\n%s\r\n" % (len(v), v)
out, batch = sys.stdout.buffer, []
for i in range(n):
    batch.append(b"*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d" % i + tail)
    if len(batch) == 8192:
        out.write(b"".join(batch)); batch = []
out.write(b"".join(batch))
PY
  local n
  n=$(redis-cli -h 127.0.0.1 -p "$port" dbsize)
  if [ "$n" != "$RECORDS" ]; then
    echo "preload left $n keys instead of $RECORDS ($(tail -n 1 "$tmp/redis-load.log"))" > "$tmp/redis.err"
    return 1
  fi
  local i
  for i in $(seq "$REPEAT"); do
    echo "== [$i/$REPEAT] redis-benchmark -c $CLIENTS -P $PIPELINE -n $OPS -r $RECORDS -d $VALUE_BYTES -t get,set"
    if ! timeout --foreground $(( 600 + OPS / 10000 )) redis-benchmark -h 127.0.0.1 -p "$port" -c "$CLIENTS" -P "$PIPELINE" \
          -n "$OPS" -r "$RECORDS" -d "$VALUE_BYTES" -t get,set --csv > "$tmp/redis_$i.csv" 2> "$tmp/redis-bench.log"; then
      echo "redis-benchmark failed: $(tail -n 2 "$tmp/redis-bench.log")" > "$tmp/redis.err"
      return 1
    fi
  done
  redis-cli -h 127.0.0.1 -p "$port" dbsize > "$tmp/redis.dbsize"
}
run_redis || true
stop "$redis_pid"; redis_pid=""

# --------------------------------------------------------------------------- memcached
# memaslap keeps a window of keys per connection (granularity 1024); CLIENTS x window keys
# approximate RECORDS. Its keys are at least 16 bytes. For a read-only mix it first sets every
# key of every window (the preload), then times only the reads. For a read/write mix it has no
# preload: reads go to keys this run has set, and sets write fresh keys (memaslap's "overwrite"
# option collapses the key space to a few keys, so it is not used).
mc_keys=$(( KEY_BYTES < 16 ? 16 : (KEY_BYTES > 250 ? 250 : KEY_BYTES) ))
mc_value=$(( VALUE_BYTES < 1 ? 1 : VALUE_BYTES ))
mc_win=$(python3 -c 'import sys; print(max(1, round(int(sys.argv[1]) / int(sys.argv[2]) / 1024)))' "$RECORDS" "$CLIENTS")
run_memcached() {
  local port user=()
  port=$(free_port)
  [ "$(id -u)" = 0 ] && user=(-u nobody)   # memcached refuses to run as root without -u
  "$MEMCACHED" -l 127.0.0.1 -p "$port" -U 0 -m 1024 -t 1 -c 1024 "${user[@]}" > "$tmp/memcached.log" 2>&1 &
  mc_pid=$!
  if ! wait_port "$port" "$mc_pid"; then
    echo "memcached did not start: $(tail -n 3 "$tmp/memcached.log")" > "$tmp/mc.err"
    return 1
  fi
  echo "== memcached $("$MEMCACHED" -V | awk '{print $2}') on 127.0.0.1:$port;" \
       "$(basename "$MEMASLAP") -T 1 -c $CLIENTS -w ${mc_win}k ($(( CLIENTS * mc_win * 1024 )) keys of ${mc_keys}B) -t ${seconds_int}s"
  local wl get_p set_p
  for wl in c a; do
    if [ "$wl" = c ]; then get_p=1; set_p=0; else get_p=0.5; set_p=0.5; fi
    printf 'key\n%d %d 1\nvalue\n%d %d 1\ncmd\n0 %s\n1 %s\n' \
      "$mc_keys" "$mc_keys" "$mc_value" "$mc_value" "$set_p" "$get_p" > "$tmp/memaslap-$wl.cfg"
    if ! timeout --foreground $(( seconds_int + 600 )) "$MEMASLAP" -s "127.0.0.1:$port" -F "$tmp/memaslap-$wl.cfg" \
          -T 1 -c "$CLIENTS" -w "${mc_win}k" -t "${seconds_int}s" -S "${seconds_int}s" \
          > "$tmp/mc_$wl.txt" 2>&1; then
      echo "memaslap ($wl) failed: $(tail -n 2 "$tmp/mc_$wl.txt")" > "$tmp/mc_$wl.err"
      rm -f "$tmp/mc_$wl.txt"
    fi
    if [ "$wl" = c ]; then mc_stat "$port" curr_items > "$tmp/mc.items" || true; fi
  done
}
run_memcached || true
stop "$mc_pid"; mc_pid=""

# --------------------------------------------------------------------------- farmem
farmem_reason=""
if [ ! -x "$FARMEM" ]; then
  farmem_reason="$FARMEM not found or not executable (build it first)"
else
  help=$("$FARMEM" bench ycsb --help 2>&1 || true)
  for opt in --structure --workload --records --key-bytes --value-bytes --distribution --zipf \
             --threads --coroutines --duration --out; do
    case "$help" in
      *"$opt"*) ;;
      *) farmem_reason="'$FARMEM bench ycsb --help' does not list $opt: this build has no YCSB benchmark yet"
         break ;;
    esac
  done
fi
if [ -n "$farmem_reason" ]; then
  echo "$farmem_reason" > "$tmp/fm.err"
else
  mkdir -p "$(dirname "$OUT")"
  spin=()
  [ -n "$NODE_IDLE_SPIN_US" ] && spin=(--local-idle-spin-us "$NODE_IDLE_SPIN_US")
  for r in $(seq "$REPEAT"); do
  for tr in $TRANSPORTS; do
    if [ "$tr" = tcp ]; then tls=(env UCX_TLS=tcp); co=$TCP_COROUTINES; else tls=(env -u UCX_TLS); co=$SHM_COROUTINES; fi
    for st in $STRUCTURES; do
      extra=("${spin[@]}")
      if [ "$st" = kv ]; then
        extra+=(--kv-mode "$KV_MODE" --coalesce "$COALESCE" --kv-batch "$KV_BATCH"
                --kv-in-flight "$KV_IN_FLIGHT" --kv-cache-log2 "$KV_CACHE_LOG2")
      fi
      for wl in c a; do
        tag="${st}_${tr}_${wl}_${r}"
        echo "== [$r/$REPEAT $tr] $FARMEM bench ycsb --structure $st --workload $wl --threads $THREADS --coroutines $co ${extra[*]}"
        if timeout --foreground "$(( seconds_int + 900 ))" "${tls[@]}" "$FARMEM" bench ycsb \
             --structure "$st" --workload "$wl" --records "$RECORDS" --key-bytes "$KEY_BYTES" \
             --value-bytes "$VALUE_BYTES" --distribution "$DISTRIBUTION" --zipf "$ZIPF" \
             --threads "$THREADS" --coroutines "$co" "${extra[@]}" --duration "$DURATION" \
             --out "$tmp/fm_$tag.json" > "$tmp/fm_$tag.log" 2>&1 \
           && [ -s "$tmp/fm_$tag.json" ]; then
          cat "$tmp/fm_$tag.json" >> "$OUT"
          grep '^ycsb:' "$tmp/fm_$tag.log" || true
        else
          echo "farmem bench ycsb --structure $st --workload $wl ($tr) failed: $(tail -n 2 "$tmp/fm_$tag.log" | tr '\n' ' ')" > "$tmp/fm_$tag.err"
          rm -f "$tmp/fm_$tag.json"
        fi
      done
    done
  done
  done
fi

# --------------------------------------------------------------------------- report
echo
TMPDIR_RESULTS=$tmp TRANSPORTS="$TRANSPORTS" STRUCTURES="$STRUCTURES" REPEAT=$REPEAT SHM_COROUTINES=$SHM_COROUTINES TCP_COROUTINES=$TCP_COROUTINES CLIENTS=$CLIENTS PIPELINE=$PIPELINE MC_WIN=$mc_win MC_KEYS=$mc_keys \
RECORDS=$RECORDS KEY_BYTES=$KEY_BYTES VALUE_BYTES=$VALUE_BYTES THREADS=$THREADS COROUTINES=$COROUTINES \
DISTRIBUTION=$DISTRIBUTION ZIPF=$ZIPF OUT=$OUT python3 - <<'PY'
import csv, json, math, os, re

d = os.environ["TMPDIR_RESULTS"]
E = os.environ
nan = float("nan")


def path(name):
    return os.path.join(d, name)


def read(name):
    try:
        with open(path(name)) as f:
            return f.read().strip()
    except OSError:
        return None


def num(x):
    return x is not None and x == x


rows = []      # (system, workload, ops, p50, p99, in_flight, note)
errors = []

# ---- farmem: fm[(structure, transport)][workload]
fm = {}
transports = E["TRANSPORTS"].split()
structures = E["STRUCTURES"].split()
fm_note = "%sB keys, %s%s" % (E["KEY_BYTES"], E["DISTRIBUTION"],
                              " " + E["ZIPF"] if E["DISTRIBUTION"] == "zipfian" else "")
def median_record(records):
    records = sorted(records, key=lambda r: r.get("ops_per_s") or 0)
    return records[(len(records) - 1) // 2]


def spread(records):
    ops = sorted(r.get("ops_per_s") or 0 for r in records)
    return "median of %d (%s..%s)" % (len(ops), "{:,.0f}".format(ops[0]), "{:,.0f}".format(ops[-1]))


for st in structures:
    for tr in transports:
        name = "farmem %s %s" % (st, tr)
        co = E["TCP_COROUTINES"] if tr == "tcp" else E["SHM_COROUTINES"]
        flight = "%sx%s" % (E["THREADS"], co)
        for wl in "ca":
            runs = []
            for rep in range(1, int(E["REPEAT"]) + 1):
                tag = "%s_%s_%s_%d" % (st, tr, wl, rep)
                txt = read("fm_%s.json" % tag)
                if txt:
                    runs.append(json.loads([l for l in txt.splitlines() if l.strip()][-1]))
                else:
                    errors.append("%s %s run %d: %s" % (name, wl.upper(), rep, read("fm_%s.err" % tag) or read("fm.err") or "no result"))
            if not runs:
                rows.append((name, wl.upper(), None, None, None, flight, "not measured (see below)"))
                continue
            r = median_record(runs)
            fm.setdefault((st, tr), {})[wl] = r
            note = fm_note + ", " + spread(runs)
            if st == "kv":
                note += ", %s, one-sided hits %.0f%%, %.1f keys/msg" % (
                    r.get("kv_mode"), r.get("one_sided_hit_percent", 0), r.get("keys_per_message", 0))
            rows.append((name, wl.upper(), r.get("ops_per_s"), r.get("p50_us"), r.get("p99_us"), flight, note))
            if wl == "a":
                for op in ("read", "update"):
                    o = (r.get("ops") or {}).get(op)
                    if o and o.get("count"):
                        rows.append(("", "  " + op, o.get("ops_per_s"), o.get("p50_us"), o.get("p99_us"), "", ""))

# ---- Redis
redis = {}
redis_runs = {}
for rep in range(1, int(E["REPEAT"]) + 1):
    txt = read("redis_%d.csv" % rep)
    if not txt:
        continue
    for rec in csv.DictReader(txt.splitlines()):
        def ms(col):
            v = rec.get(col)
            return float(v) * 1000.0 if v not in (None, "") else None
        redis_runs.setdefault(rec["test"].upper(), []).append(
            dict(ops=float(rec["rps"]), p50=ms("p50_latency_ms"), p99=ms("p99_latency_ms")))
for test, runs in redis_runs.items():
    runs.sort(key=lambda x: x["ops"])
    redis[test] = runs[(len(runs) - 1) // 2]
    redis[test]["spread"] = "median of %d (%s..%s)" % (len(runs), "{:,.0f}".format(runs[0]["ops"]),
                                                       "{:,.0f}".format(runs[-1]["ops"]))
if not redis:
    errors.append("redis: %s" % (read("redis.err") or "no result"))
r_flight = "%sx%s pipelined" % (E["CLIENTS"], E["PIPELINE"])
r_note = "16B keys, uniform"
g, s = redis.get("GET"), redis.get("SET")
redis_c = g["ops"] if g else None
redis_a = 2.0 / (1.0 / g["ops"] + 1.0 / s["ops"]) if g and s else None
rows.append(("redis", "C", redis_c, g and g["p50"], g and g["p99"], r_flight,
             r_note + ", GET" + (", " + g["spread"] if g else "")))
rows.append(("redis", "A", redis_a, None, None, r_flight, "2/(1/GET+1/SET) of separate runs"))
if s:
    rows.append(("", "  SET", s["ops"], s["p50"], s["p99"], "", "overwrites preloaded keys"))

# ---- memcached (memaslap)
def memaslap(txt):
    txt = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", txt)
    res, hist, sec = {}, {}, None
    for line in txt.splitlines():
        m = re.match(r"^(Get|Set|Total) Statistics\s*(\((\d+) events\))?\s*$", line.strip())
        if m:
            sec = m.group(1).lower()
            continue
        f = line.split()
        if sec and f and f[0] == "Global" and len(f) >= 9:
            res.setdefault(sec, {}).update(ops=float(f[3]), avg=float(f[8]))
            continue
        m = re.match(r"^\s*(\d+):((\s+\d+)+)\s*$", line)
        if sec and m:   # Log2 Dist row: bucket b counts latencies in (2^(b-1), 2^b] us
            b = int(m.group(1))
            for i, c in enumerate(m.group(2).split()):
                hist.setdefault(sec, {})[b + i] = int(c)
            continue
        m = re.match(r"^(cmd_get|cmd_set|get_misses):\s+(\d+)", line.strip())
        if m:
            res.setdefault("final", {})[m.group(1)] = int(m.group(2))
        m = re.match(r"^Run time:\s+([\d.]+)s", line.strip())
        if m:
            res.setdefault("final", {})["run_s"] = float(m.group(1))
    for sec, h in hist.items():
        total = sum(h.values())
        for q, name in ((0.5, "p50"), (0.99, "p99")):
            acc = 0
            for b in sorted(h):
                if h[b] and acc + h[b] >= q * total:
                    frac = (q * total - acc) / h[b]
                    res.setdefault(sec, {})[name] = 2.0 ** (b - 1 + frac)   # geometric interpolation
                    break
                acc += h[b]
    return res

mc = {}
for wl in "ca":
    txt = read("mc_%s.txt" % wl)
    if txt:
        mc[wl] = memaslap(txt)
    else:
        errors.append("memcached %s: %s" % (wl.upper(), read("mc_%s.err" % wl) or read("mc.err") or "no result"))
mc_note = "%sB keys, uniform" % E["MC_KEYS"]


def mc_ops(wl):
    r = mc.get(wl)
    if not r:
        return None
    sec = "get" if wl == "c" else "total"
    if "ops" in r.get(sec, {}):
        return r[sec]["ops"]
    f = r.get("final", {})
    if f.get("run_s"):
        return (f.get("cmd_get", 0) + (f.get("cmd_set", 0) if wl == "a" else 0)) / f["run_s"]
    return None

for wl in "ca":
    r = mc.get(wl, {})
    sec = r.get("get" if wl == "c" else "total", {})
    misses = r.get("final", {}).get("get_misses")
    note = mc_note + ("" if not misses else ", %d get misses" % misses)
    if wl == "a":
        note += ", sets write fresh keys"
    rows.append(("memcached", wl.upper(), mc_ops(wl), sec.get("p50"), sec.get("p99"), E["CLIENTS"], note))
    if wl == "a":
        for op in ("get", "set"):
            o = r.get(op)
            if o:
                rows.append(("", "  " + op, o.get("ops"), o.get("p50"), o.get("p99"), "", ""))


def fmt_ops(v):
    return "{:,.0f}".format(v) if num(v) else "n/a"


def fmt_us(v, approx=False):
    if not num(v):
        return "-"
    s = ("%.2f" % v) if v < 10 else ("%.1f" % v) if v < 100 else ("%.0f" % v)
    return ("~" + s) if approx else s


print("%-17s %-9s %14s %10s %10s  %-16s %s" % ("system", "workload", "ops/s", "p50_us", "p99_us", "in flight", "notes"))
last = ""
for sysname, wl, ops, p50, p99, flight, note in rows:
    approx = (sysname or last) == "memcached"
    last = sysname or last
    print("%-17s %-9s %14s %10s %10s  %-16s %s" % (sysname, wl, fmt_ops(ops), fmt_us(p50, approx),
                                                  fmt_us(p99, approx), flight, note))

print()
mc_c, mc_a = mc_ops("c"), mc_ops("a")


def ratio(a, b):
    return a / b if num(a) and num(b) and b > 0 else None


def fmt_r(x):
    return "%.2fx" % x if x is not None else "n/a"


def ops(st, tr, wl):
    return fm.get((st, tr), {}).get(wl, {}).get("ops_per_s")


print("ratios (same run)              C (read only)      A (50/50 read/update)")
for tr in transports:
    for st in structures:
        print("farmem %-4s %-3s / redis      %-18s %s" % (st, tr, fmt_r(ratio(ops(st, tr, "c"), redis_c)),
                                                   fmt_r(ratio(ops(st, tr, "a"), redis_a))))
        print("farmem %-4s %-3s / memcached  %-18s %s" % (st, tr, fmt_r(ratio(ops(st, tr, "c"), mc_c)),
                                                   fmt_r(ratio(ops(st, tr, "a"), mc_a))))
    if "kv" in structures and "hash" in structures:
        print("farmem kv   %-3s / hash %-3s   %-18s %s" % (tr, tr, fmt_r(ratio(ops("kv", tr, "c"), ops("hash", tr, "c"))),
                                                   fmt_r(ratio(ops("kv", tr, "a"), ops("hash", tr, "a")))))
print()
print("goals: over TCP, kv C >= 2x Redis GET and kv A >= 1.5x Redis GET/SET mix;")
print("                  on shared memory, kv C >= 0.8x the hash table's C")
for label, x, goal in (("kv tcp C / redis GET", ratio(ops("kv", "tcp", "c"), redis_c), 2.0),
                       ("kv tcp A / redis mix", ratio(ops("kv", "tcp", "a"), redis_a), 1.5),
                       ("kv shm C / hash shm C", ratio(ops("kv", "shm", "c"), ops("hash", "shm", "c")), 0.8)):
    verdict = "not measured" if x is None else ("met" if x >= goal else "not met")
    print("  %-22s = %-8s (goal >= %.1fx): %s" % (label, fmt_r(x), goal, verdict))

print()
print("notes:")
for (st, tr), byw in sorted(fm.items()):
    t = byw.get("c", byw.get("a", {})).get("transport")
    if t:
        print("  farmem %s %s transport: %s" % (st, tr, t))
print("  Redis and memcached use TCP loopback")
dbsize = read("redis.dbsize")
if dbsize:
    print("  redis: %s keys preloaded with redis-cli --pipe; uniform random keys via redis-benchmark -r; "
          "latency per request includes the %s-deep pipeline" % (dbsize, E["PIPELINE"]))
items = read("mc.items")
win = int(E["MC_WIN"]) * 1024
print("  memcached: memaslap window %d keys x %s connections = %d keys, preloaded by its warm-up%s; "
      "p50/p99 interpolated from its power-of-two latency histogram"
      % (win, E["CLIENTS"], win * int(E["CLIENTS"]), " (server holds %s items)" % items if items else ""))
print("  in flight: farmem threads x coroutines; redis clients x pipeline; memcached connections x 1")
if fm:
    print("  farmem runs appended to %s" % E["OUT"])
for e in errors:
    print("  NOT MEASURED: " + e)
PY
