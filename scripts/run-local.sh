#!/usr/bin/env bash
# The main job on a local default cluster: `farmem bench ops` starts a memory node on this
# machine for each run and stops it after. Prints one line per operation type.
# Environment: DURATION (seconds, default 5), THREADS (1), DEPTH (16), UCX_TLS (UCX default).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/farmem
duration=${DURATION:-5}
threads=${THREADS:-1}
depth=${DEPTH:-16}
out=${OUT:-build/bench-ops.json}
echo "farmem: op-rate benchmark on a local memory node (${duration}s per run)"
for op in read write cas faa; do
  "$bin" bench ops --op "$op" --threads "$threads" --depth "$depth" --block-bytes 8 \
    --duration "$duration" --out "$out"
done
"$bin" bench ops --op read --threads "$threads" --depth 1 --block-bytes 8 \
  --duration "$duration" --out "$out"
"$bin" bench ops --op read --threads "$threads" --depth 4 --block-bytes 65536 \
  --duration "$duration" --out "$out"
echo "results appended to $out"
