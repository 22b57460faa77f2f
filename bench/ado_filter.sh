#!/usr/bin/env bash
# Near-data compute: `farmem bench ado-filter` (client-side filtering of every record vs. one
# invocation of the filter ADO plugin) on a memory node started here with ADO plugins, once with
# the client over shared memory and once with UCX_TLS=tcp for the client. The node keeps its
# default transports (an ADO maps the node's region through shared memory).
#
#   bench/ado_filter.sh                          # 100K records of 64 B, "sum 0 where 1 ge 500"
#   RECORDS=10000 bench/ado_filter.sh            # quick check
#
# Environment: RECORDS (100000), VALUE_BYTES (64), QUERY, REPEAT (3), COROUTINES (64),
# BUILD (build), OUT (build/bench-ado-filter.json: both runs are appended there).
set -euo pipefail
cd "$(dirname "$0")/.."

RECORDS=${RECORDS:-100000}
VALUE_BYTES=${VALUE_BYTES:-64}
QUERY=${QUERY:-sum 0 where 1 ge 500}
REPEAT=${REPEAT:-3}
COROUTINES=${COROUTINES:-64}
BUILD=$(cd "${BUILD:-build}" && pwd)
OUT=${OUT:-$BUILD/bench-ado-filter.json}

dir=$(mktemp -d)
node_pid=
cleanup() {
  if [ -n "$node_pid" ]; then kill "$node_pid" 2>/dev/null || true; wait "$node_pid" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT
cat > "$dir/node.toml" <<TOML
[memnode]
capacity = "2GiB"
port = 0
[kv]
ado_plugin_dir = "$BUILD/plugins"
ado_binary = "$BUILD/farmem-ado"
ado_timeout_ms = 30000
TOML
env -u UCX_TLS "$BUILD/farmem-server" --config "$dir/node.toml" --port-file "$dir/port" \
  > "$dir/node.log" 2>&1 &
node_pid=$!
for _ in $(seq 1 400); do [ -s "$dir/port" ] && break; sleep 0.05; done
[ -s "$dir/port" ] || { echo "ado_filter.sh: the memory node did not start:"; cat "$dir/node.log"; exit 1; }
servers=127.0.0.1:$(cat "$dir/port")
echo "memory node $servers (default transports), load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for client in shm tcp; do
  echo "== client over $client"
  tls=()
  [ "$client" = tcp ] && tls=(env UCX_TLS=tcp)
  "${tls[@]}" "$BUILD/farmem" bench ado-filter --servers "$servers" --records "$RECORDS" \
    --value-bytes "$VALUE_BYTES" --query "$QUERY" --repeat "$REPEAT" \
    --coroutines "$COROUTINES" --out "$OUT"
done
