#!/usr/bin/env bash
# farmem's kv store on a durable memory node beside Redis with its append-only file, and the
# disk's own limit (fio), same machine, same file system, one run.
#
#   bench/compare_durable_kv.sh                          # 100k records, 16 B values, 10 s per run
#   RECORDS=20000 DURATION=3 REPEAT=1 bench/compare_durable_kv.sh   # quick check
#
# Environment: RECORDS (100000), KEY_BYTES (8), VALUE_BYTES (16), DURATION (10 s per farmem
# run), REPEAT (3: farmem runs and redis-benchmark are repeated, medians reported), THREADS (1),
# COROUTINES (256 = Redis's 16 clients x pipeline 16 in flight), FARMEM (build/farmem),
# DISTRIBUTION (uniform, as redis-benchmark -r), DURABILITY (power), OPS (requests per
# redis-benchmark test, default DURATION x 200k), OUT (build/bench-compare-durable-kv.json).
#
# Rows:
#  fio:        fdatasync after every 4 KiB write (syncs/s the disk gives one writer) and
#              sequential 1 MiB writes with one sync at the end (bandwidth), in the data
#              directory's file system ($TMPDIR or /tmp, where the local node keeps its data).
#  farmem:     build/farmem bench ycsb --structure kv --workload w (100% update: SET-only) and
#              a (50/50), with --local-durability $DURABILITY (the local node syncs before it
#              answers, group commit) and, labelled, without (volatile).
#  Redis:      redis-server --appendonly yes --appendfsync always | everysec, no RDB snapshots,
#              redis-benchmark -c 16 -P 16 -t set,get over RECORDS preloaded keys; A is the
#              harmonic mix 2/(1/GET + 1/SET) of separate runs.
# Ratios are farmem durable against Redis always and everysec, same value size and in-flight
# count. Redis listens on 127.0.0.1 only, on a free port, and is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh

RECORDS=${RECORDS:-100000}
KEY_BYTES=${KEY_BYTES:-8}
VALUE_BYTES=${VALUE_BYTES:-16}
DURATION=${DURATION:-10}
REPEAT=${REPEAT:-3}
THREADS=${THREADS:-1}
COROUTINES=${COROUTINES:-256}
FARMEM=${FARMEM:-build/farmem}
DISTRIBUTION=${DISTRIBUTION:-uniform}
DURABILITY=${DURABILITY:-power}
OUT=${OUT:-build/bench-compare-durable-kv.json}
OPS=${OPS:-$(python3 -c 'import sys; print(max(1000, int(float(sys.argv[1]) * 200000)))' "$DURATION")}
CLIENTS=16
PIPELINE=16

need=()
command -v redis-server >/dev/null || need+=(redis-server)
{ command -v redis-benchmark >/dev/null && command -v redis-cli >/dev/null; } || need+=(redis-tools)
command -v fio >/dev/null || need+=(fio)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO=sudo
  echo "== installing ${need[*]}"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${need[@]}" >/dev/null || { echo "apt-get install ${need[*]} failed" >&2; exit 2; }
fi
[ -x "$FARMEM" ] || { echo "$FARMEM not found (build it first: make build)" >&2; exit 2; }

tmp=$(mktemp -d)
redis_pid=""
cleanup() {
  stop "$redis_pid"; redis_pid=""
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM


echo "records=$RECORDS key=${KEY_BYTES}B value=${VALUE_BYTES}B duration=${DURATION}s" \
     "farmem ${THREADS}x${COROUTINES} $DISTRIBUTION durability=$DURABILITY;" \
     "redis ${CLIENTS}x${PIPELINE} pipelined, $OPS requests per test; medians of $REPEAT;" \
     "file system of $tmp: $(df -T "$tmp" | awk 'NR==2 {print $2}')"

# --------------------------------------------------------------------------- fio
echo "== fio: fdatasync after each 4 KiB write, then sequential 1 MiB writes"
fio --name=sync --directory="$tmp" --rw=write --bs=4k --size=64m --fdatasync=1 --runtime=5 \
  --time_based --output-format=json > "$tmp/fio_sync.json" 2> "$tmp/fio.err" || true
fio --name=seq --directory="$tmp" --rw=write --bs=1m --size=512m --end_fsync=1 \
  --output-format=json > "$tmp/fio_seq.json" 2>> "$tmp/fio.err" || true
rm -f "$tmp"/sync.* "$tmp"/seq.*

# --------------------------------------------------------------------------- Redis
run_redis() {  # appendfsync mode
  local mode=$1 port i
  port=$(free_port)
  mkdir -p "$tmp/redis-$mode"
  redis-server --save '' --appendonly yes --appendfsync "$mode" --port "$port" --bind 127.0.0.1 \
    --daemonize no --dir "$tmp/redis-$mode" --logfile "$tmp/redis-$mode.log" &
  redis_pid=$!
  wait_port "$port" "$redis_pid" || { echo "redis-server ($mode) did not start" > "$tmp/redis_$mode.err"; return 1; }
  python3 - "$RECORDS" "$VALUE_BYTES" <<'PY' | redis-cli -h 127.0.0.1 -p "$port" --pipe > /dev/null 2>&1
import sys
n, v = int(sys.argv[1]), b"x" * int(sys.argv[2])
tail = b"\r\n$%d\r\n%s\r\n" % (len(v), v)
out = sys.stdout.buffer
for i in range(0, n, 8192):
    out.write(b"".join(b"*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d" % j + tail for j in range(i, min(n, i + 8192))))
PY
  for i in $(seq "$REPEAT"); do
    echo "== [$i/$REPEAT] redis appendfsync $mode: redis-benchmark -c $CLIENTS -P $PIPELINE -n $OPS -r $RECORDS -d $VALUE_BYTES -t set,get"
    timeout --foreground $(( 600 + OPS / 5000 )) redis-benchmark -h 127.0.0.1 -p "$port" -c "$CLIENTS" \
      -P "$PIPELINE" -n "$OPS" -r "$RECORDS" -d "$VALUE_BYTES" -t set,get --csv \
      > "$tmp/redis_${mode}_$i.csv" 2>/dev/null || { echo "redis-benchmark ($mode) failed" > "$tmp/redis_$mode.err"; break; }
  done
  stop "$redis_pid"; redis_pid=""
}

# --------------------------------------------------------------------------- farmem
run_farmem() {  # tag workload durability-flags...
  local tag=$1 wl=$2
  shift 2
  echo "== [$tag] $FARMEM bench ycsb --structure kv --workload $wl $*"
  if timeout --foreground $(( ${DURATION%.*} + 900 )) "$FARMEM" bench ycsb --structure kv --workload "$wl" \
       --records "$RECORDS" --key-bytes "$KEY_BYTES" --value-bytes "$VALUE_BYTES" \
       --distribution "$DISTRIBUTION" --threads "$THREADS" --coroutines "$COROUTINES" \
       --local-idle-spin-us 0 --duration "$DURATION" "$@" --out "$tmp/fm_$tag.json" \
       > "$tmp/fm_$tag.log" 2>&1 && [ -s "$tmp/fm_$tag.json" ]; then
    grep -E '^ycsb:|journal:' "$tmp/fm_$tag.log" || true
    mkdir -p "$(dirname "$OUT")"
    cat "$tmp/fm_$tag.json" >> "$OUT"
  else
    echo "failed: $(tail -n 2 "$tmp/fm_$tag.log" | tr '\n' ' ')" > "$tmp/fm_$tag.err"
    rm -f "$tmp/fm_$tag.json"
  fi
}

for i in $(seq "$REPEAT"); do
  for wl in w a; do
    run_farmem "durable_${wl}_$i" "$wl" --local-durability "$DURABILITY"
    run_farmem "volatile_${wl}_$i" "$wl"
  done
done
run_redis always || true
run_redis everysec || true

# --------------------------------------------------------------------------- report
echo
D=$tmp REPEAT=$REPEAT DURABILITY=$DURABILITY OUT=$OUT python3 - <<'PY'
import csv, glob, json, os

d, E = os.environ["D"], os.environ
reps = int(E["REPEAT"])


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def median(xs):
    xs = sorted(x for x in xs if x is not None)
    return xs[(len(xs) - 1) // 2] if xs else None


def fmt(x):
    return "{:,.0f}".format(x) if x is not None else "not measured"


def ratio(a, b):
    return "%.2fx" % (a / b) if a and b else "n/a"


fm = {}
for mode in ("durable", "volatile"):
    for wl in "wa":
        runs = [load(os.path.join(d, "fm_%s_%s_%d.json" % (mode, wl, i))) for i in range(1, reps + 1)]
        runs = [r for r in runs if r]
        fm[(mode, wl)] = dict(ops=median([r.get("ops_per_s") for r in runs]),
                              syncs=median([r.get("syncs_per_s") for r in runs]),
                              p50=median([r.get("p50_us") for r in runs]), n=len(runs))

redis = {}
for mode in ("always", "everysec"):
    per = {}
    for i in range(1, reps + 1):
        try:
            with open(os.path.join(d, "redis_%s_%d.csv" % (mode, i))) as f:
                for rec in csv.DictReader(f):
                    per.setdefault(rec["test"].upper(), []).append(float(rec["rps"]))
        except OSError:
            pass
    s, g = median(per.get("SET", [])), median(per.get("GET", []))
    redis[mode] = dict(set=s, get=g, mix=2.0 / (1.0 / s + 1.0 / g) if s and g else None)

sync = load(os.path.join(d, "fio_sync.json"))
seq = load(os.path.join(d, "fio_seq.json"))
fio_syncs = sync["jobs"][0]["write"]["iops"] if sync else None
fio_bw = seq["jobs"][0]["write"]["bw_bytes"] / 1e6 if seq else None

dw, da = fm[("durable", "w")], fm[("durable", "a")]
print("| system | SET-only (ops/s) | 50/50 GET/SET (ops/s) | syncs/s | ops per sync |")
print("|---|---|---|---|---|")
for mode in ("durable", "volatile"):
    w, a = fm[(mode, "w")], fm[(mode, "a")]
    label = "farmem kv, %s node" % (E["DURABILITY"] if mode == "durable" else "volatile")
    per_sync = "%.1f" % (w["ops"] / w["syncs"]) if w["ops"] and w["syncs"] else "-"
    print("| %s | %s | %s | %s | %s |" % (label, fmt(w["ops"]), fmt(a["ops"]),
                                          fmt(w["syncs"]) if w["syncs"] else "-", per_sync))
for mode in ("always", "everysec"):
    r = redis[mode]
    print("| Redis AOF appendfsync %s | %s | %s | - | - |" % (mode, fmt(r["set"]), fmt(r["mix"])))
print("| fio: fdatasync per 4 KiB write | %s syncs/s | sequential write %s MB/s | | |" %
      (fmt(fio_syncs), "%.0f" % fio_bw if fio_bw else "not measured"))
print()
print("durable SET-only vs Redis always: %s (target >= 2x); vs everysec: %s (target >= 1.5x)" %
      (ratio(dw["ops"], redis["always"]["set"]), ratio(dw["ops"], redis["everysec"]["set"])))
print("durable 50/50 vs Redis everysec 50/50: %s (target >= 1x)" %
      ratio(da["ops"], redis["everysec"]["mix"]))
print("durable vs volatile farmem: SET-only %s, 50/50 %s" %
      (ratio(dw["ops"], fm[("volatile", "w")]["ops"]), ratio(da["ops"], fm[("volatile", "a")]["ops"])))
summary = dict(bench="compare_durable_kv", farmem={"%s_%s" % k: v for k, v in fm.items()},
               redis=redis, fio=dict(fdatasync_per_s=fio_syncs, seq_write_mb_per_s=fio_bw))
with open(E["OUT"], "a") as f:
    f.write(json.dumps(summary) + "\n")
for err in sorted(glob.glob(os.path.join(d, "*.err"))):
    with open(err) as f:
        text = f.read().strip()
    if text:
        print("%s: %s" % (os.path.basename(err)[:-4], text))
PY
