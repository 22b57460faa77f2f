#!/usr/bin/env bash
# farmem bench ops beside ucx_perftest: same transport, same depth, same size, same run.
#
#   bench/compare_perftest.sh                 # UCX's default transports (shared memory here)
#   UCX_TLS=tcp bench/compare_perftest.sh     # TCP
#   OPS="read cas" DEPTH=16 SIZE=8 DURATION=5 bench/compare_perftest.sh
#
# Mapping: read -> ucp_get, write -> ucp_put_bw, cas -> ucp_cswap, faa -> ucp_fadd.
# ucx_perftest rereads one buffer, so farmem runs with --span-bytes equal to a 4 KiB buffer
# (cache-resident) to compare the same thing; SPAN=67108864 shows the random-access case.
# Latency: farmem read at depth 1 against ucp_get -O 1 (shared memory) or against the
# active-message round trip (ucp_am_lat reports half a round trip; we double it), because
# Debian's UCX 1.13 ucp_get over TCP has a server-side bug (openucx/ucx PR #11418) that makes
# a lone get look like ~1 ms.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${FARMEM:-build/farmem}
ops=${OPS:-"read write cas faa"}
depth=${DEPTH:-16}
size=${SIZE:-8}
duration=${DURATION:-5}
span=${SPAN:-$(( size > 4096 ? size : 4096 ))}
tls=${UCX_TLS:-default}
out=${OUT:-build/bench-compare.json}
command -v ucx_perftest >/dev/null || { echo "ucx_perftest not found (apt-get install ucx-utils)"; exit 2; }
[ -x "$bin" ] || { echo "$bin not built (make build)"; exit 2; }

tcp=0
case "${UCX_TLS:-}" in *tcp*) case "${UCX_TLS}" in *sm*|*posix*|*sysv*) ;; *) tcp=1 ;; esac ;; esac
iters=$(( tcp ? 200000 : 5000000 ))

perftest() {  # test depth size iters -> prints "mops p50_us"
  local test=$1 d=$2 s=$3 n=$4 port=$(( 20000 + RANDOM % 20000 ))
  ucx_perftest -p "$port" >/dev/null 2>&1 &
  local srv=$!
  sleep 0.5
  local line
  line=$(timeout 120 ucx_perftest 127.0.0.1 -p "$port" -t "$test" -s "$s" -O "$d" -n "$n" 2>/dev/null \
         | awk '/^Final:/ {print}') || true
  kill "$srv" 2>/dev/null || true
  wait "$srv" 2>/dev/null || true
  # Final: iters p50 avg overall bw_avg bw_overall rate_avg rate_overall
  echo "$line" | awk '{ if (NF >= 9) printf "%.4f %.3f\n", $9 / 1e6, $3; else print "nan nan" }'
}

farmem() {  # op depth size span -> prints "mops p50_us"
  local tmp
  tmp=$(mktemp --suffix .json)
  "$bin" bench ops --op "$1" --depth "$2" --block-bytes "$3" --span-bytes "$4" \
    --duration "$duration" --out "$tmp" >/dev/null 2>&1 || { echo "nan nan"; rm -f "$tmp"; return; }
  cat "$tmp" >> "$out"
  python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).readline()); print("%.4f %.3f" % (r["mops"], r["p50_us"]))' "$tmp"
  rm -f "$tmp"
}

ratio() { python3 -c 'import sys; a,b=map(float,sys.argv[1:]); print("%.2f" % (a/b) if b==b and b>0 and a==a else "n/a")' "$1" "$2"; }

declare -A ptest=([read]=ucp_get [write]=ucp_put_bw [cas]=ucp_cswap [faa]=ucp_fadd)
echo "transport=${tls} depth=${depth} size=${size}B span=${span}B duration=${duration}s"
printf "%-6s %14s %16s %8s\n" op farmem_Mops perftest_Mops ratio
for op in $ops; do
  read -r fm fp50 < <(farmem "$op" "$depth" "$size" "$span")
  read -r pm pp50 < <(perftest "${ptest[$op]}" "$depth" "$size" "$iters")
  printf "%-6s %14s %16s %8s\n" "$op" "$fm" "$pm" "$(ratio "$fm" "$pm")"
done

echo
echo "latency, one operation in flight (p50, microseconds):"
read -r _ flat < <(farmem read 1 "$size" "$span")
if [ "$tcp" = 1 ]; then
  read -r _ half < <(perftest ucp_am_lat 1 "$size" 20000)
  ref=$(python3 -c "import sys; print('%.3f' % (2*float(sys.argv[1])))" "$half")
  printf "farmem read p50 %s us; UCX active-message round trip (2 x ucp_am_lat) %s us; ratio %s\n" \
    "$flat" "$ref" "$(ratio "$flat" "$ref")"
else
  read -r _ ref < <(perftest ucp_get 1 "$size" 1000000)
  printf "farmem read p50 %s us; ucp_get -O 1 p50 %s us; ratio %s\n" "$flat" "$ref" "$(ratio "$flat" "$ref")"
fi
echo "(farmem runs appended to $out)"
