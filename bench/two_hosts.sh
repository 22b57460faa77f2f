#!/usr/bin/env bash
# farmem across two hosts as users have them: the memory node in a network namespace of its own,
# the client in the host's, joined by a veth pair shaped with tc, UCX forced to TCP. For each link
# profile and workload it reports the op rate, the bytes the link carried per operation, and the
# link's own limits beside them: bandwidth / bytes per op, and operations in flight / RTT. The
# smaller limit is the physical ceiling; "of limit" says how close the run came to it.
#
#   bench/two_hosts.sh                                     # 10gbit/50us and 25gbit/20us links
#   LINKS="10gbit:50us" WORKLOADS="hash:c kv:a" bench/two_hosts.sh
#
# Environment: LINKS ("10gbit:50us 25gbit:20us": RATE:RTT per profile; "none" = the bare veth),
# WORKLOADS ("hash:c hash:a kv:c kv:a btree:e txn:tatp txn:smallbank txn:tpcc": STRUCTURE:WORKLOAD
# for bench ycsb, E being 95% scans; txn:W for bench txn at 256, 128 and 16 transactions in
# flight, an operation being a committed transaction), RECORDS (200000), KEY_BYTES (8),
# VALUE_BYTES (8), DURATION (5 s), COROUTINES (256, one client thread), NODE_IDLE_SPIN_US (0),
# FARMEM (build/farmem), SERVER (build/farmem-server), OUT (build/bench-two-hosts.json: one JSON
# record per run, the bench's own fields plus the link's).
#
# Shaping: with the kernel's netem qdisc, each end of the pair delays by RTT/2 and limits the rate
# (tc netem delay ... rate ...). Kernels without netem (some VMs and containers) get a token
# bucket (tbf) for the rate only, and the report says so: the RTT used for the in-flight limit is
# then the one measured over the pair (a UDP echo, median of 200). Needs root and iproute2; the
# namespace, the pair and the processes this script started are removed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh

LINKS=${LINKS:-"10gbit:50us 25gbit:20us"}
WORKLOADS=${WORKLOADS:-"hash:c hash:a kv:c kv:a btree:e txn:tatp txn:smallbank txn:tpcc"}
RECORDS=${RECORDS:-200000}
KEY_BYTES=${KEY_BYTES:-8}
VALUE_BYTES=${VALUE_BYTES:-8}
DURATION=${DURATION:-5}
COROUTINES=${COROUTINES:-256}
NODE_IDLE_SPIN_US=${NODE_IDLE_SPIN_US:-0}
FARMEM=${FARMEM:-build/farmem}
SERVER=${SERVER:-build/farmem-server}
OUT=${OUT:-build/bench-two-hosts.json}

die() { echo "two_hosts: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces, tc)"
command -v ip >/dev/null && command -v tc >/dev/null || die "needs iproute2 (ip, tc)"
[ -x "$FARMEM" ] && [ -x "$SERVER" ] || die "$FARMEM or $SERVER missing (build first)"

ns="fmbench$$"
host_if="fmbh$$"
node_if="fmbn$$"
sub=$(( $$ % 200 + 20 ))
host_ip="10.214.$sub.1"
node_ip="10.214.$sub.2"
tmp=$(mktemp -d)
server_pid=""
echo_pid=""
cleanup() {
  stop "$server_pid"
  stop "$echo_pid"
  ip link del "$host_if" 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

ip netns add "$ns"
ip link add "$host_if" type veth peer name "$node_if"
ip link set "$node_if" netns "$ns"
ip addr add "$host_ip/30" dev "$host_if"
ip link set "$host_if" up
ip netns exec "$ns" ip addr add "$node_ip/30" dev "$node_if"
ip netns exec "$ns" ip link set "$node_if" up
ip netns exec "$ns" ip link set lo up

netem=1
if ! tc qdisc replace dev "$host_if" root netem delay 1us 2>/dev/null; then netem=0; fi
tc qdisc del dev "$host_if" root 2>/dev/null || true

# Shapes both ends: "none", or RATE:RTT.
shape() {  # profile
  local rate=${1%%:*} rtt=${1#*:} half
  tc qdisc del dev "$host_if" root 2>/dev/null || true
  ip netns exec "$ns" tc qdisc del dev "$node_if" root 2>/dev/null || true
  [ "$1" = none ] && return 0
  half="$(python3 -c 'import sys; v=sys.argv[1]; n=float(v[:-2]); print(f"{n/2:g}{v[-2:]}")' "$rtt")"
  if [ "$netem" = 1 ]; then
    tc qdisc replace dev "$host_if" root netem delay "$half" rate "$rate" limit 100000
    ip netns exec "$ns" tc qdisc replace dev "$node_if" root netem delay "$half" rate "$rate" limit 100000
  else
    tc qdisc replace dev "$host_if" root tbf rate "$rate" burst 1mb latency 10ms
    ip netns exec "$ns" tc qdisc replace dev "$node_if" root tbf rate "$rate" burst 1mb latency 10ms
  fi
}

# A UDP echo in the namespace, and the median round trip to it in microseconds.
cat > "$tmp/echo.py" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
while True:
    data, addr = s.recvfrom(64)
    s.sendto(data, addr)
EOF
echo_port=47123
ip netns exec "$ns" python3 "$tmp/echo.py" "$node_ip" "$echo_port" &
echo_pid=$!
measure_rtt_us() {
  python3 - "$node_ip" "$echo_port" <<'EOF'
import socket, statistics, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(1.0)
for _ in range(50):  # until the echo answers (it may still be starting)
    try:
        s.sendto(b"x", (sys.argv[1], int(sys.argv[2])))
        s.recvfrom(64)
        break
    except OSError:
        time.sleep(0.1)
samples = []
for i in range(220):
    t0 = time.perf_counter()
    try:
        s.sendto(b"x", (sys.argv[1], int(sys.argv[2])))
        s.recvfrom(64)
    except OSError:
        continue
    if i >= 20:
        samples.append((time.perf_counter() - t0) * 1e6)
print(f"{statistics.median(samples):.1f}" if samples else "nan")
EOF
}

link_bytes() {  # both directions of the host's end
  echo $(( $(cat "/sys/class/net/$host_if/statistics/tx_bytes") +
           $(cat "/sys/class/net/$host_if/statistics/rx_bytes") ))
}

start_server() {
  stop "$server_pid"
  rm -f "$tmp/port"
  ip netns exec "$ns" env UCX_TLS=tcp "$SERVER" --listen "$node_ip" --port 0 --capacity 4GiB \
    --net-devices "$node_if" --idle-spin-us "$NODE_IDLE_SPIN_US" --port-file "$tmp/port" \
    > "$tmp/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 100); do
    [ -s "$tmp/port" ] && return 0
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  cat "$tmp/server.log" >&2
  die "the memory node did not start"
}

# The bench command of one workload: STRUCTURE:WORKLOAD for bench ycsb, txn:W for bench txn
# (TATP and SmallBank at scale 1, TPC-C on 2 warehouses), against the node in the namespace.
bench_cmd() {  # structure workload
  local servers="$node_ip:$(cat "$tmp/port")"
  if [ "$1" = txn ]; then
    local scale=1; [ "$2" = tpcc ] && scale=2
    echo bench txn --servers "$servers" --workload "$2" --scale "$scale" --threads 1 \
      --coroutines "$(txn_coroutines "$2")" --duration "$DURATION"
  else
    echo bench ycsb --servers "$servers" --structure "$1" --workload "$2" --records "$RECORDS" \
      --key-bytes "$KEY_BYTES" --value-bytes "$VALUE_BYTES" --threads 1 \
      --coroutines "$COROUTINES" --duration "$DURATION"
  fi
}
txn_coroutines() { case "$1" in tatp) echo 256 ;; smallbank) echo 128 ;; *) echo 16 ;; esac; }

# Runs one workload; prints "ops_per_s bytes_per_op" and appends the JSON record to OUT.
run_one() {  # structure workload profile rtt_us
  local st=$1 wl=$2 json="$tmp/run.json" log="$tmp/run.log" b0="" b1="" line inflight
  start_server
  rm -f "$json"
  inflight=$COROUTINES; [ "$st" = txn ] && inflight=$(txn_coroutines "$wl")
  # The counters are read when the load ends ("[load]" line; txn: "loaded ... rows") and when the
  # result is printed.
  # shellcheck disable=SC2046
  while IFS= read -r line; do
    echo "$line" >> "$log"
    case "$line" in
      *"[load]"*|"txn $wl: loaded "*) b0=$(link_bytes) ;;
      ycsb:*|"txn $wl: commits/s="*) b1=$(link_bytes) ;;
    esac
  done < <(env UCX_TLS=tcp UCX_NET_DEVICES="$host_if" stdbuf -oL -eL "$FARMEM" \
             $(bench_cmd "$st" "$wl") --out "$json" 2>&1)
  # run_one runs in a subshell (the caller reads its output): its server is stopped here, as the
  # main shell's cleanup never sees its PID.
  stop "$server_pid"
  server_pid=""
  [ -s "$json" ] && [ -n "$b0" ] && [ -n "$b1" ] || { cat "$log" >&2; die "$st $wl failed"; }
  python3 - "$json" "$b0" "$b1" "$3" "$4" "$netem" "$inflight" "$OUT" "$DURATION" <<'EOF'
import json, sys
path, b0, b1, profile, rtt_us, netem, inflight, out, duration = sys.argv[1:]
r = json.loads(open(path).read().strip().splitlines()[-1])
if "ops_per_s" not in r:  # bench txn: operations are committed transactions
    r["ops_per_s"] = r["commits_per_s"]
ops = r["ops_per_s"] * r.get("duration_s", float(duration))
bpo = (int(b1) - int(b0)) / ops if ops else float("nan")
rate_bps = None
if profile != "none":
    v = profile.split(":")[0].lower()
    mult = {"k": 1e3, "m": 1e6, "g": 1e9}[v.rstrip("bit")[-1]]
    rate_bps = float(v.rstrip("bit")[:-1]) * mult
rtt = float(rtt_us)
bw_limit = rate_bps / 8 / bpo if rate_bps and bpo > 0 else None
# A transaction waits for several round trips in a row (bench txn reports how many).
rtt_per_op = r.get("round_trips_per_commit") or 1
lat_limit = int(inflight) / (rtt * 1e-6 * rtt_per_op) if rtt == rtt and rtt > 0 else None
limits = [x for x in (bw_limit, lat_limit) if x]
r.update({"link": profile, "netem": netem == "1", "rtt_us": rtt, "link_bytes_per_op": bpo,
          "bandwidth_limit_ops_per_s": bw_limit, "in_flight_limit_ops_per_s": lat_limit,
          "of_limit": r["ops_per_s"] / min(limits) if limits else None})
with open(out, "a") as f:
    f.write(json.dumps(r) + "\n")
fmt = lambda x: f"{x:,.0f}" if x else "-"
print(f'{r["ops_per_s"]:.0f} {bpo:.1f} {fmt(bw_limit)} {fmt(lat_limit)} '
      f'{(r["of_limit"] or 0) * 100:.1f}%')
EOF
}

mkdir -p "$(dirname "$OUT")"
[ "$netem" = 1 ] || echo "two_hosts: this kernel has no netem qdisc: links are rate-limited (tbf) only; the RTT is the pair's own, measured"
printf '%-14s %-8s %-8s %14s %10s %16s %16s %9s\n' link rtt_us run ops/s bytes/op bw_limit_ops/s inflight/rtt of_limit
for profile in $LINKS; do
  shape "$profile"
  rtt=$(measure_rtt_us)
  for w in $WORKLOADS; do
    if [ "${w%%:*}" = txn ]; then
      echo "== $profile: $w (1 x $(txn_coroutines "${w#*:}") transactions in flight, ${DURATION} s)" >&2
    else
      echo "== $profile: $w (${RECORDS} records, 1 x $COROUTINES coroutines, ${DURATION} s)" >&2
    fi
    read -r ops bpo bw lat of < <(run_one "${w%%:*}" "${w#*:}" "$profile" "$rtt")
    printf '%-14s %-8s %-8s %14s %10s %16s %16s %9s\n' "$profile" "$rtt" "$w" \
      "$(printf "%'.0f" "$ops")" "$bpo" "$bw" "$lat" "$of"
  done
done
echo "records appended to $OUT; in flight = coroutines of the one client thread; bytes/op = both directions on the veth, measured over the run (after the load); txn: an op is a committed transaction"
