#!/usr/bin/env bash
# What a memory node's region costs one-sided operations when it is memory UCX allocates (how
# every node exports it) or a MAP_SHARED file mapping registered with UCX (the file-backed
# alternative for durability, farmem-server --region-file, measurement only), over shared memory
# and over TCP, same run: 8-byte reads, writes and CAS at 1 and 64 in flight from one thread
# (farmem bench ops). docs/ARCHITECTURE.md "Durability and the fast path" gives the trade.
#
#   bench/compare_region_backing.sh                   # 3 s per point
#   DURATION=10 FARMEM_DIR=build-lto bench/compare_region_backing.sh
#
# Environment: FARMEM_DIR (build: farmem and farmem-server), DURATION (3 s), TRANSPORTS
# ("sm,tcp tcp": UCX_TLS of both processes), OPS ("read write cas"), DEPTHS ("1 64"), CAPACITY
# (256MiB), OUT (build/bench-region-backing.json: the JSON lines of every point). The region
# file lives in a temp dir, removed at the end; the nodes are stopped by pid on every exit.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
FARMEM_DIR=${FARMEM_DIR:-build}
DURATION=${DURATION:-3}
TRANSPORTS=${TRANSPORTS:-"sm,tcp tcp"}
OPS=${OPS:-"read write cas"}
DEPTHS=${DEPTHS:-"1 64"}
CAPACITY=${CAPACITY:-256MiB}
OUT=${OUT:-build/bench-region-backing.json}
tmp=$(mktemp -d)
node=""
trap 'stop "$node"; rm -rf "$tmp"' EXIT
mkdir -p "$(dirname "$OUT")"
: > "$OUT"
printf '%-8s %-5s %-6s %6s %12s %10s\n' transport region op depth Mops/s p50
for tls in $TRANSPORTS; do
  for backing in ucx file; do
    extra=()
    [ "$backing" = file ] && extra=(--region-file "$tmp/region.map")
    port=$(free_port)
    UCX_TLS=$tls "$FARMEM_DIR/farmem-server" --capacity "$CAPACITY" --port "$port" "${extra[@]}" \
      > "$tmp/node.log" 2>&1 &
    node=$!
    wait_port "$port" "$node" || { cat "$tmp/node.log" >&2; exit 1; }
    for op in $OPS; do
      for depth in $DEPTHS; do
        line=$(UCX_TLS=$tls "$FARMEM_DIR/farmem" bench ops --servers "127.0.0.1:$port" --op "$op" \
          --depth "$depth" --block-bytes 8 --threads 1 --duration "$DURATION" \
          --out "$tmp/point.json" 2>&1 | grep '^ops:' | tail -n 1)
        python3 - "$tmp/point.json" "$tls" "$backing" >> "$OUT" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
row = rows[-1] if rows else {}
row.update({"ucx_tls": sys.argv[2], "region": sys.argv[3]})
print(json.dumps(row))
PY
        rm -f "$tmp/point.json"
        mops=$(sed -n 's/.*Mops\/s=\([0-9.]*\).*/\1/p' <<< "$line")
        p50=$(sed -n 's/.*p50=\([0-9.]*us\).*/\1/p' <<< "$line")
        printf '%-8s %-5s %-6s %6s %12s %10s\n' "$tls" "$backing" "$op" "$depth" "$mops" "$p50"
      done
    done
    stop "$node"
    node=""
    rm -f "$tmp/region.map"
  done
done
echo "every point: $OUT"
