#!/usr/bin/env bash
# farmem's distributed transactions (farmem::txn) beside PostgreSQL driven by BenchBase, same
# workloads, one run: TATP, SmallBank and TPC-C, 2 terminals, SERIALIZABLE,
# PostgreSQL's default durability (fsync on, synchronous_commit on, full_page_writes on).
#
#   BENCHBASE_DIR=/path/to/benchbase-postgres bench/compare_txn.sh   # 60 s per measured run
#   QUICK=1 BENCHBASE_DIR=... bench/compare_txn.sh                   # quick check (small data)
#   WORKLOADS=tatp TRANSPORTS="shm tcp" BENCHBASE_DIR=... bench/compare_txn.sh
#
# BenchBase (github.com/cmu-db/benchbase) is not built here: build it separately from its own
# repository (`./mvnw clean package -P postgres`, Java 23 or newer), unpack
# target/benchbase-postgres.tgz and point BENCHBASE_DIR at the directory holding benchbase.jar.
#
# Environment: BENCHBASE_DIR (required), JAVA (a java >= 23; default: JAVA_HOME, then the newest
# /usr/lib/jvm/*/bin/java that is >= 23, then java on PATH), WORKLOADS ("tatp smallbank tpcc"),
# DURATION (60 s measured per run), WARMUP (10 s per run, not measured), TERMINALS (2: BenchBase
# terminals), RETRIES (64 attempts per transaction, both systems), THREADS (2) and COROUTINES
# (8 per thread) for farmem, DURABLE_THREADS (1) and DURABLE_COROUTINES ("tatp=256
# smallbank=128 tpcc=8", or one number for all) for its durable rows (a durable commit waits for its node's group-commit fdatasync, so throughput is what is
# in flight over that latency: more transactions in flight, and one client thread, which leaves
# the second core to the memory node's worker and syncer), TRANSPORTS ("shm"; add "tcp" for UCX_TLS=tcp), TCP_THREADS (1) and
# TCP_COROUTINES ("tatp=256 smallbank=128 tpcc=16") for the volatile TCP rows (each operation is a
# round trip the node serves: more transactions in flight fill it), MODES ("volatile
# durable": farmem's rows; durable = `--durable`, its local node at --durability power with a
# data directory under $TMPDIR or /tmp, commits synced before they are acknowledged, as
# PostgreSQL's with fsync and synchronous_commit on), TATP_SF (1),
# SMALLBANK_SF (1), TPCC_SF (2 warehouses, an integer: BenchBase gives each terminal a
# warehouse of its own), SEED (1: BenchBase's randomSeed and farmem's --seed), QUICK (0; 1 =
# DURATION 5, WARMUP 2, TATP_SF and SMALLBANK_SF 0.01 unless set), FARMEM (build/farmem), PG_BIN
# (default: the newest /usr/lib/postgresql/*/bin), PG_OS_USER (postgres: the cluster's owner
# when run as root), PG_SETTINGS ("": extra postgresql.conf lines, ';'-separated, e.g.
# "max_pred_locks_per_transaction = 1024"; shown in the output), OUT (build/bench-compare-txn.json, rewritten by each run), KEEP_TMP (0; 1
# keeps the temp dir with PostgreSQL's and BenchBase's logs), LOAD_TIMEOUT (3600 s per load).
#
# Data sizes: the *_SF values are BenchBase scale factors; farmem's --scale is chosen so that
# both hold the same rows, from BenchBase's loaders:
#   TATP      BenchBase: 100,000 x sf subscribers (TATPConstants.DEFAULT_NUM_SUBSCRIBERS);
#             farmem: 100,000 x scale subscribers              -> --scale = sf
#   SmallBank BenchBase: 1,000,000 x sf accounts (SmallBankConstants.NUM_ACCOUNTS);
#             farmem: 100,000 x scale accounts                 -> --scale = 10 x sf
#   TPC-C     BenchBase: sf warehouses (TPCCBenchmark, TPCCLoader); farmem: --scale warehouses
#                                                              -> --scale = sf
# Mixes: BenchBase's standard weights, the same as farmem's. TATP 35/10/35/2/14/2/2
# (GetSubscriberData, GetNewDestination, GetAccessData, UpdateSubscriberData, UpdateLocation,
# InsertCallForwarding, DeleteCallForwarding), SmallBank 15/15/15/25/15/15 (Amalgamate, Balance,
# DepositChecking, SendPayment, TransactSavings, WriteCheck), TPC-C 45/43/4/4/4 (NewOrder,
# Payment, OrderStatus, Delivery, StockLevel), no keying or think times, rate unlimited.
# One difference: BenchBase's SmallBank draws accounts uniformly; farmem's sends 90% of its
# transactions to 4% hot accounts (more conflicts for farmem, not fewer).
# TPC-C on PostgreSQL: its planner scans the tiny warehouse and district tables sequentially,
# which under SERIALIZABLE takes relation-level predicate locks, so the two terminals' Payments
# and NewOrders conflict although their warehouses differ: ~87% of attempts fail serialization
# with the defaults. PG_SETTINGS="enable_seqscan = off" removes that (0.02%, ~2.9x the
# committed/s); the defaults stay the default, the setting is printed with the results.
#
# PostgreSQL: the server binaries (Debian package postgresql; installed with apt-get when none
# is found) run a private cluster: initdb into a temp dir owned by PG_OS_USER, trust auth,
# listening on 127.0.0.1 only on a free port (its Unix socket in the temp dir), configuration
# defaults otherwise. If apt-get creates and starts Debian's default cluster, it is stopped
# again. For each workload: a database of its own; BenchBase --create --load; a warm-up run of
# WARMUP s (discarded); a measured run of DURATION s. BenchBase's counts of completed, aborted
# (by the transaction itself, e.g. insufficient funds), rejected (serialization failures; a
# request makes up to RETRIES attempts, 64, like farmem's --max-attempts, where BenchBase's
# default is 3, which would drop many TPC-C requests) and unexpected transactions cover the
# whole of a run, warm-up included, so the measured run has no BenchBase warm-up of its own and
# its counts are close to the measured window's; they still include the second BenchBase runs
# before it starts measuring and the last transactions after, so its "Goodput" (all completed
# transactions / measured seconds) overstates. "committed/s" here is its "Throughput (requests/
# second)" (requests measured in the window, whatever their outcome) x the committed fraction of
# requests, completed / (completed + aborted + unexpected); requests that ran out of attempts
# (at most rejected / RETRIES, printed when not 0) are left out of that fraction, which can
# only raise PostgreSQL's figure. Goodput and
# throughput are in OUT as well.
#
# farmem: build/farmem bench txn --workload W --threads THREADS --coroutines COROUTINES
# --max-attempts RETRIES --warmup WARMUP --duration DURATION --scale S, with the local memory node farmem starts for
# each run (shared memory; "tcp" sets UCX_TLS=tcp). commits_per_s counts committed transactions
# (not the ones the workload rolls back itself), abort_rate is aborted attempts / attempts. The
# workload's invariant is checked after each run and shown. A farmem without --workload tpcc
# gets "farmem tpcc: not available in this build".
#
# Output: progress lines while loading and running, then one table per workload and transport
# with both systems, the ratio farmem/PostgreSQL beside the issue's target (TATP and SmallBank
# >= 50x, TPC-C >= 10x), and every figure in OUT. Everything this script starts (PostgreSQL,
# by pg_ctl stop on its data dir; BenchBase and farmem, by PID) is stopped on every exit.
set -euo pipefail
cd "$(dirname "$0")/.."

QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
  DURATION=${DURATION:-5}
  WARMUP=${WARMUP:-2}
  TATP_SF=${TATP_SF:-0.01}
  SMALLBANK_SF=${SMALLBANK_SF:-0.01}
fi
DURATION=${DURATION:-60}
WARMUP=${WARMUP:-10}
TATP_SF=${TATP_SF:-1}
SMALLBANK_SF=${SMALLBANK_SF:-1}
TPCC_SF=${TPCC_SF:-2}
WORKLOADS=${WORKLOADS:-"tatp smallbank tpcc"}
TERMINALS=${TERMINALS:-2}
RETRIES=${RETRIES:-64}
THREADS=${THREADS:-2}
COROUTINES=${COROUTINES:-8}
DURABLE_THREADS=${DURABLE_THREADS:-1}
# Per workload: a number, or workload=number pairs (the best of 8..512 on the 2-core machine).
DURABLE_COROUTINES=${DURABLE_COROUTINES:-"tatp=256 smallbank=128 tpcc=8"}
# Volatile runs over TCP: every operation is a message the node serves, so it takes more
# transactions in flight to fill a round trip (same form; the best of 8..512 here).
TCP_THREADS=${TCP_THREADS:-1}
TCP_COROUTINES=${TCP_COROUTINES:-"tatp=256 smallbank=128 tpcc=16"}
# The entry for workload $2 in list $1 (a number, or workload=number pairs), default $3.
per_workload() {
  local p
  for p in $1; do
    case "$p" in
      "$2"=*) echo "${p#*=}"; return ;;
      *=*) ;;
      *) echo "$p"; return ;;
    esac
  done
  echo "$3"
}
durable_coroutines() { per_workload "$DURABLE_COROUTINES" "$1" 128; }
TRANSPORTS=${TRANSPORTS:-shm}
MODES=${MODES:-"volatile durable"}
FM_RUNS=""  # one farmem row per transport and mode: shm, shm-durable, ...
for tr in $TRANSPORTS; do
  for m in $MODES; do
    case "$m" in
      volatile) FM_RUNS="$FM_RUNS $tr" ;;
      durable) FM_RUNS="$FM_RUNS $tr-durable" ;;
      *) echo "MODES: unknown mode '$m' (volatile, durable)" >&2; exit 2 ;;
    esac
  done
done
SEED=${SEED:-1}
FARMEM=${FARMEM:-build/farmem}
PG_OS_USER=${PG_OS_USER:-postgres}
PG_SETTINGS=${PG_SETTINGS:-}
OUT=${OUT:-build/bench-compare-txn.json}
KEEP_TMP=${KEEP_TMP:-0}
LOAD_TIMEOUT=${LOAD_TIMEOUT:-3600}
PROGRESS_S=10

for wl in $WORKLOADS; do
  case "$wl" in
    tatp|smallbank|tpcc) ;;
    *) echo "WORKLOADS: unknown workload '$wl' (tatp, smallbank, tpcc)" >&2; exit 2 ;;
  esac
done
for v in DURATION WARMUP TERMINALS THREADS COROUTINES DURABLE_THREADS TCP_THREADS TPCC_SF RETRIES; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || { echo "$v must be a whole number (got '${!v}')" >&2; exit 2; }
done
[ "$DURATION" -ge 1 ] || { echo "DURATION must be at least 1 s" >&2; exit 2; }
[ "$TPCC_SF" -ge 1 ] || { echo "TPCC_SF (warehouses) must be at least 1" >&2; exit 2; }
[ "$RETRIES" -ge 1 ] || { echo "RETRIES must be at least 1" >&2; exit 2; }
for v in TATP_SF SMALLBANK_SF; do
  python3 -c 'import sys; assert float(sys.argv[1]) > 0' "${!v}" 2>/dev/null ||
    { echo "$v must be a positive number (got '${!v}')" >&2; exit 2; }
done

# --------------------------------------------------------------------------- BenchBase, Java
if [ -z "${BENCHBASE_DIR:-}" ]; then
  echo "BENCHBASE_DIR is not set. BenchBase must be built separately from its own repository" >&2
  echo "(github.com/cmu-db/benchbase: ./mvnw clean package -P postgres, Java 23+), unpacked" >&2
  echo "(target/benchbase-postgres.tgz), and BENCHBASE_DIR set to the directory with benchbase.jar." >&2
  exit 2
fi
if [ ! -f "$BENCHBASE_DIR/benchbase.jar" ] || [ ! -f "$BENCHBASE_DIR/config/plugin.xml" ]; then
  echo "BENCHBASE_DIR=$BENCHBASE_DIR holds no unpacked benchbase-postgres distribution" >&2
  echo "(benchbase.jar and config/plugin.xml). BenchBase must be built separately from its own" >&2
  echo "repository (github.com/cmu-db/benchbase: ./mvnw clean package -P postgres) and unpacked." >&2
  exit 2
fi
BENCHBASE_DIR=$(cd "$BENCHBASE_DIR" && pwd)

java_major() {  # java binary -> its major version (0 when it does not run)
  "$1" -version 2>&1 | awk -F'"' '/version/ { split($2, v, "."); print v[1] + 0; found = 1; exit }
                                  END { if (!found) print 0 }'
}
pick_java() {
  local j
  if [ -n "${JAVA:-}" ]; then echo "$JAVA"; return; fi
  if [ -n "${JAVA_HOME:-}" ] && [ "$(java_major "$JAVA_HOME/bin/java")" -ge 23 ]; then
    echo "$JAVA_HOME/bin/java"; return
  fi
  for j in $(ls -d /usr/lib/jvm/*/bin/java 2>/dev/null | sort -rV); do
    if [ "$(java_major "$j")" -ge 23 ]; then echo "$j"; return; fi
  done
  command -v java || true
}
JAVA=$(pick_java)
if [ -z "$JAVA" ] || [ "$(java_major "$JAVA")" -lt 23 ]; then
  echo "BenchBase needs Java 23 or newer; found: ${JAVA:-none}${JAVA:+ ($(java_major "$JAVA"))}." >&2
  echo "Set JAVA=/path/to/bin/java or JAVA_HOME." >&2
  exit 2
fi

# --------------------------------------------------------------------------- PostgreSQL
SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO=sudo; fi
find_pg_bin() {
  local d
  if [ -n "${PG_BIN:-}" ]; then echo "$PG_BIN"; return; fi
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -rV); do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && [ -x "$d/postgres" ] && [ -x "$d/psql" ]; then
      echo "$d"; return
    fi
  done
}
PG_BIN=$(find_pg_bin)
if [ -z "$PG_BIN" ]; then
  if [ "$(id -u)" != 0 ] && [ -z "$SUDO" ]; then
    echo "PostgreSQL's server binaries are missing; run as root (or with sudo) to install them" >&2
    exit 2
  fi
  before=$(pg_lsclusters -h 2>/dev/null | awk '$4 == "online" { print $1 "/" $2 }' || true)
  echo "== installing postgresql (apt-get)"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    postgresql > /dev/null || { echo "apt-get install postgresql failed" >&2; exit 2; }
  # The package may have created and started Debian's default cluster: this script does not use
  # it, so a cluster that was not online before is stopped again.
  for c in $(pg_lsclusters -h 2>/dev/null | awk '$4 == "online" { print $1 "/" $2 }' || true); do
    case " $before " in
      *" $c "*) ;;
      *) echo "== stopping cluster $c, started by the package install"
         $SUDO pg_ctlcluster "${c%/*}" "${c#*/}" stop || true ;;
    esac
  done
  PG_BIN=$(find_pg_bin)
  [ -n "$PG_BIN" ] || { echo "no PostgreSQL server binaries after installing postgresql" >&2; exit 2; }
fi

as_pg() {  # command... run as the cluster's owner
  if [ "$(id -u)" = 0 ]; then runuser -u "$PG_OS_USER" -- "$@"; else "$@"; fi
}
if [ "$(id -u)" = 0 ] && ! id "$PG_OS_USER" >/dev/null 2>&1; then
  echo "running as root, PostgreSQL needs a non-root owner: user PG_OS_USER=$PG_OS_USER does not exist" >&2
  exit 2
fi

# --------------------------------------------------------------------------- farmem
fm_reason=""
if [ ! -x "$FARMEM" ]; then
  fm_reason="$FARMEM not found or not executable (build it first: make build)"
else
  fm_help=$("$FARMEM" bench txn --help 2>&1 || true)
  case "$fm_help" in
    *--workload*) ;;
    *) fm_reason="'$FARMEM bench txn --help' has no --workload: this build has no txn benchmark" ;;
  esac
fi
fm_has() {  # workload -> 0 when this farmem accepts it
  [ -z "$fm_reason" ] || return 1
  # --help with an unknown --workload fails its check ("tpcc not in {smallbank,tatp}").
  "$FARMEM" bench txn --workload "$1" --help > /dev/null 2>&1
}
fm_scale() {  # workload -> farmem --scale for the same data as BenchBase's scale factor
  case "$1" in
    tatp) echo "$TATP_SF" ;;
    smallbank) python3 -c 'import sys; print("%g" % (10 * float(sys.argv[1])))' "$SMALLBANK_SF" ;;
    tpcc) echo "$TPCC_SF" ;;
  esac
}
bb_sf() {
  case "$1" in tatp) echo "$TATP_SF" ;; smallbank) echo "$SMALLBANK_SF" ;; tpcc) echo "$TPCC_SF" ;; esac
}

# --------------------------------------------------------------------------- cleanup
tmp=$(mktemp -d "${TMPDIR:-/tmp}/farmem-compare-txn.XXXXXX")
chmod 711 "$tmp"  # the cluster's owner reaches its data dir inside
pgdir=$tmp/pg
pgdata=$pgdir/data
child=""
ticker=""
pg_port=""
stop_pid() {
  if [ -n "$1" ] && kill -0 "$1" 2>/dev/null; then
    kill -TERM "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
  fi
}
pg_stop() {
  [ -f "$pgdata/postmaster.pid" ] || return 0
  as_pg "$PG_BIN/pg_ctl" -D "$pgdata" -m fast -w -t 60 stop > /dev/null 2>&1 ||
    as_pg "$PG_BIN/pg_ctl" -D "$pgdata" -m immediate -w -t 60 stop > /dev/null 2>&1 || true
}
cleanup() {
  stop_pid "$ticker"; ticker=""
  stop_pid "$child"; child=""
  pg_stop
  if [ "$KEEP_TMP" = 1 ]; then echo "== kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Runs a command in the background (so that cleanup can stop it by PID) and waits for it.
run() {  # seconds log command...
  local secs=$1 log=$2
  shift 2
  timeout --signal=TERM "$secs" "$@" > "$log" 2>&1 &
  child=$!
  local rc=0
  wait "$child" || rc=$?
  child=""
  return $rc
}
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}
psql_q() {  # database sql -> unaligned result
  "$PG_BIN/psql" -X -q -A -t -h 127.0.0.1 -p "$pg_port" -U benchbase -d "$1" -c "$2"
}
# Progress while BenchBase runs: every PROGRESS_S seconds the database's size (load) or the
# commits and rollbacks PostgreSQL counted since the last line (run).
progress() {  # label database load|run
  local t0 c0 r0 c r now last
  t0=$(date +%s); last=$t0
  c0=$(psql_q "$2" "SELECT xact_commit FROM pg_stat_database WHERE datname = '$2'" 2>/dev/null || echo 0)
  r0=$(psql_q "$2" "SELECT xact_rollback FROM pg_stat_database WHERE datname = '$2'" 2>/dev/null || echo 0)
  while sleep "$PROGRESS_S"; do
    now=$(date +%s)
    if [ "$3" = load ]; then
      echo "   [$1 $((now - t0))s] database $(psql_q "$2" "SELECT pg_size_pretty(pg_database_size('$2'))" 2>/dev/null || echo ?)"
    else
      c=$(psql_q "$2" "SELECT xact_commit FROM pg_stat_database WHERE datname = '$2'" 2>/dev/null || echo "$c0")
      r=$(psql_q "$2" "SELECT xact_rollback FROM pg_stat_database WHERE datname = '$2'" 2>/dev/null || echo "$r0")
      echo "   [$1 $((now - t0))s] postgres: $(( (c - c0) / (now - last) )) commits/s, $(( (r - r0) / (now - last) )) rollbacks/s"
      c0=$c; r0=$r; last=$now
    fi
  done
}
start_progress() { progress "$@" & ticker=$!; }
# farmem prints a progress line a second on stderr once loaded: every PROGRESS_S seconds the
# latest one is shown, or how long it has been loading.
fm_progress() {  # log label
  local t0 line
  t0=$(date +%s)
  while sleep "$PROGRESS_S"; do
    line=$(grep -E '^ *\[ *[0-9.]+s\]|: loading: ' "$1" 2>/dev/null | tail -n 1 || true)
    if [ -n "$line" ]; then
      echo "   [$2] ${line#"${line%%[! ]*}"}"
    else
      echo "   [$2 $(( $(date +%s) - t0 ))s] loading"
    fi
  done
}
start_fm_progress() { fm_progress "$@" & ticker=$!; }
stop_progress() { stop_pid "$ticker"; ticker=""; }

mkdir -p "$(dirname "$OUT")" "$tmp/res"
echo "workloads: $WORKLOADS; measured ${DURATION}s after ${WARMUP}s warm-up per run;" \
     "postgres: $TERMINALS terminals, SERIALIZABLE; farmem: $THREADS threads x $COROUTINES coroutines" \
     "(durable: $DURABLE_THREADS x $DURABLE_COROUTINES; tcp: $TCP_THREADS x $TCP_COROUTINES) on $TRANSPORTS"
echo "scale: tatp sf $TATP_SF, smallbank sf $SMALLBANK_SF, tpcc $TPCC_SF warehouse(s); load average: $(cut -d' ' -f1-3 /proc/loadavg)"

# --------------------------------------------------------------------------- PostgreSQL runs
pg_reason=""
pg_start() {
  mkdir -p "$pgdir"
  [ "$(id -u)" = 0 ] && chown "$PG_OS_USER" "$pgdir"
  chmod 700 "$pgdir"
  if ! as_pg "$PG_BIN/initdb" -D "$pgdata" -U benchbase --auth=trust -E UTF8 --locale=C \
         > "$tmp/res/initdb.log" 2>&1; then
    pg_reason="initdb failed: $(tail -n 2 "$tmp/res/initdb.log" | tr '\n' ' ')"; return 1
  fi
  pg_port=$(free_port)
  # Only where and how it listens differs from the defaults (durability stays as shipped).
  cat >> "$pgdata/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $pg_port
unix_socket_directories = '$pgdir'
EOF
  if [ -n "$PG_SETTINGS" ]; then
    tr ';' '\n' <<< "$PG_SETTINGS" >> "$pgdata/postgresql.conf"
    echo "== postgres: extra settings (PG_SETTINGS): $PG_SETTINGS"
  fi
  if ! as_pg "$PG_BIN/pg_ctl" -D "$pgdata" -l "$pgdir/server.log" -w -t 120 start \
         > "$tmp/res/pg_ctl.log" 2>&1; then
    pg_reason="pg_ctl start failed: $(tail -n 3 "$pgdir/server.log" 2>/dev/null | tr '\n' ' ')"; return 1
  fi
  psql_q postgres "SELECT json_build_object('version', current_setting('server_version'),
      'fsync', current_setting('fsync'), 'synchronous_commit', current_setting('synchronous_commit'),
      'full_page_writes', current_setting('full_page_writes'),
      'wal_sync_method', current_setting('wal_sync_method'),
      'shared_buffers', current_setting('shared_buffers'),
      'default_transaction_isolation', current_setting('default_transaction_isolation'),
      'max_pred_locks_per_transaction', current_setting('max_pred_locks_per_transaction'),
      'listen_addresses', current_setting('listen_addresses'), 'port', $pg_port,
      'data_directory_fs', '$(df -T "$pgdir" | awk 'NR == 2 { print $2 }')')" > "$tmp/res/pg_settings.json"
  echo "== postgres $(psql_q postgres 'SHOW server_version') on 127.0.0.1:$pg_port (data $pgdata," \
       "$(df -T "$pgdir" | awk 'NR == 2 { print $2 }'); fsync $(psql_q postgres 'SHOW fsync')," \
       "synchronous_commit $(psql_q postgres 'SHOW synchronous_commit'))"
}

bb_types() {  # workload -> "weights|type,type,..." (BenchBase's standard mix)
  case "$1" in
    tatp) echo "2,35,10,35,2,14,2|DeleteCallForwarding,GetAccessData,GetNewDestination,GetSubscriberData,InsertCallForwarding,UpdateLocation,UpdateSubscriberData" ;;
    smallbank) echo "15,15,15,25,15,15|Amalgamate,Balance,DepositChecking,SendPayment,TransactSavings,WriteCheck" ;;
    tpcc) echo "45,43,4,4,4|NewOrder,Payment,OrderStatus,Delivery,StockLevel" ;;
  esac
}
bb_config() {  # workload seconds file
  local spec weights types t
  spec=$(bb_types "$1"); weights=${spec%%|*}; types=${spec#*|}
  {
    cat <<EOF
<?xml version="1.0"?>
<parameters>
    <type>POSTGRES</type>
    <driver>org.postgresql.Driver</driver>
    <url>jdbc:postgresql://127.0.0.1:$pg_port/$1?sslmode=disable&amp;ApplicationName=$1&amp;reWriteBatchedInserts=true</url>
    <username>benchbase</username>
    <password>unused</password>
    <reconnectOnConnectionFailure>true</reconnectOnConnectionFailure>
    <isolation>TRANSACTION_SERIALIZABLE</isolation>
    <batchsize>128</batchsize>
    <retries>$RETRIES</retries>
    <randomSeed>$SEED</randomSeed>
    <scalefactor>$(bb_sf "$1")</scalefactor>
    <terminals>$TERMINALS</terminals>
    <works>
        <work>
            <time>$2</time>
            <rate>unlimited</rate>
            <weights>$weights</weights>
        </work>
    </works>
    <transactiontypes>
EOF
    for t in ${types//,/ }; do
      echo "        <transactiontype><name>$t</name></transactiontype>"
    done
    echo "    </transactiontypes>"
    echo "</parameters>"
  } > "$3"
}
benchbase() {  # seconds log args...: runs BenchBase from its directory (it reads config/ there)
  local secs=$1 log=$2
  shift 2
  run "$secs" "$log" env -C "$BENCHBASE_DIR" "$JAVA" -jar benchbase.jar "$@"
}
bb_fail() {  # workload what log
  echo "BenchBase $2 failed: $(grep -E 'ERROR|Exception' "$3" | head -n 2 | cut -c1-300 | tr '\n' ' ')" > "$tmp/res/pg_$1.err"
  echo "   $(cat "$tmp/res/pg_$1.err")"
}
pg_workload() {  # workload
  local wl=$1 t0 dir=$tmp/bb-$1
  mkdir -p "$dir"
  if ! psql_q postgres "CREATE DATABASE $wl" > /dev/null 2>"$tmp/res/pg_$wl.err"; then
    echo "   CREATE DATABASE $wl failed"; return 1
  fi
  bb_config "$wl" "$WARMUP" "$dir/warmup.xml"
  bb_config "$wl" "$DURATION" "$dir/run.xml"
  echo "== postgres $wl: BenchBase create + load, scale factor $(bb_sf "$wl")"
  t0=$(date +%s)
  start_progress "load $wl" "$wl" load
  if ! benchbase "$LOAD_TIMEOUT" "$dir/load.log" -b "$wl" -c "$dir/run.xml" --create=true \
         --load=true --execute=false; then
    stop_progress; bb_fail "$wl" load "$dir/load.log"; return 1
  fi
  stop_progress
  echo "$(( $(date +%s) - t0 ))" > "$tmp/res/pg_${wl}_load_s"
  psql_q "$wl" "VACUUM ANALYZE" > /dev/null 2>&1 || true
  echo "   loaded in $(cat "$tmp/res/pg_${wl}_load_s") s, database $(psql_q "$wl" "SELECT pg_size_pretty(pg_database_size('$wl'))")"
  if [ "$WARMUP" -gt 0 ]; then
    echo "== postgres $wl: warm-up ${WARMUP}s ($TERMINALS terminals, not measured)"
    start_progress "warm-up $wl" "$wl" run
    if ! benchbase $(( WARMUP + 600 )) "$dir/warmup.log" -b "$wl" -c "$dir/warmup.xml" \
           --execute=true -d "$dir/warmup"; then
      stop_progress; bb_fail "$wl" warm-up "$dir/warmup.log"; return 1
    fi
    stop_progress
  fi
  echo "== postgres $wl: measured ${DURATION}s ($TERMINALS terminals, SERIALIZABLE)"
  start_progress "run $wl" "$wl" run
  if ! benchbase $(( DURATION + 600 )) "$dir/run.log" -b "$wl" -c "$dir/run.xml" --execute=true \
         -d "$dir/results" -jh "$tmp/res/pg_${wl}_histograms.json"; then
    stop_progress; bb_fail "$wl" run "$dir/run.log"; return 1
  fi
  stop_progress
  local summary
  summary=$(ls "$dir"/results/*.summary.json 2>/dev/null | head -n 1)
  if [ -z "$summary" ]; then
    echo "BenchBase wrote no summary (log: $dir/run.log)" > "$tmp/res/pg_$wl.err"; return 1
  fi
  cp "$summary" "$tmp/res/pg_${wl}_summary.json"
  python3 - "$tmp/res/pg_${wl}_summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print("   postgres: goodput %.1f committed/s, throughput %.1f requests/s, %d measured requests"
      % (s["Goodput (requests/second)"], s["Throughput (requests/second)"], s["Measured Requests"]))
PY
  rm -f "$tmp/res/pg_$wl.err"
}

if pg_start; then
  for wl in $WORKLOADS; do
    pg_workload "$wl" || true
  done
else
  echo "== postgres not measured: $pg_reason"
  echo "$pg_reason" > "$tmp/res/pg.err"
fi
pg_stop

# --------------------------------------------------------------------------- farmem runs
secs_total=$(( DURATION + WARMUP ))
read -r first_run _ <<< "$FM_RUNS"
for wl in $WORKLOADS; do
  for fm_run in $FM_RUNS; do
    tr=${fm_run%-durable}
    durable=()
    threads=$THREADS coroutines=$COROUTINES
    if [ "$fm_run" = tcp ]; then
      threads=$TCP_THREADS coroutines=$(per_workload "$TCP_COROUTINES" "$wl" 128)
    fi
    if [ "$fm_run" != "$tr" ]; then
      durable=(--durable)
      threads=$DURABLE_THREADS coroutines=$(durable_coroutines "$wl")
    fi
    tag="${wl}_${fm_run}"
    if [ -n "$fm_reason" ]; then echo "$fm_reason" > "$tmp/res/fm_$tag.err"; continue; fi
    if ! fm_has "$wl"; then
      echo "farmem $wl: not available in this build" > "$tmp/res/fm_$tag.err"
      [ "$fm_run" != "$first_run" ] || echo "== $(cat "$tmp/res/fm_$tag.err")"
      continue
    fi
    if [ "$tr" = tcp ]; then tls=(env UCX_TLS=tcp); else tls=(env -u UCX_TLS); fi
    args=(bench txn --workload "$wl" --threads "$threads" --coroutines "$coroutines"
          --scale "$(fm_scale "$wl")" --max-attempts "$RETRIES" --warmup "$WARMUP" --duration "$DURATION" --seed "$SEED"
          --out "$tmp/res/fm_$tag.json" "${durable[@]}")
    echo "== farmem $wl ($fm_run): $FARMEM ${args[*]:0:14} ${durable[*]}"
    start_fm_progress "$tmp/res/fm_$tag.log" "farmem $wl $fm_run"
    rc=0
    run $(( secs_total + LOAD_TIMEOUT )) "$tmp/res/fm_$tag.log" "${tls[@]}" "$FARMEM" "${args[@]}" || rc=$?
    stop_progress
    if [ "$rc" = 0 ] && [ -s "$tmp/res/fm_$tag.json" ]; then
      grep -E '^txn [a-z]+: (loaded|commits/s)|^  [A-Za-z]+ +commits/s|invariant|record counts|consistency' \
        "$tmp/res/fm_$tag.log" | sed 's/^/   /' || true
    else
      echo "farmem bench txn --workload $wl ($fm_run) failed (rc $rc): $(grep -v '^ *\[' "$tmp/res/fm_$tag.log" | tail -n 2 | tr '\n' ' ')" > "$tmp/res/fm_$tag.err"
      echo "   $(cat "$tmp/res/fm_$tag.err")"
    fi
  done
done

# --------------------------------------------------------------------------- report
echo
RES=$tmp/res RETRIES=$RETRIES PG_SETTINGS="$PG_SETTINGS" WORKLOADS="$WORKLOADS" TRANSPORTS="$FM_RUNS" OUT="$OUT" DURATION=$DURATION \
WARMUP=$WARMUP TERMINALS=$TERMINALS THREADS=$THREADS COROUTINES=$COROUTINES SEED=$SEED \
DURABLE_THREADS=$DURABLE_THREADS DURABLE_COROUTINES="$DURABLE_COROUTINES" \
TCP_THREADS=$TCP_THREADS TCP_COROUTINES="$TCP_COROUTINES" \
TATP_SF=$TATP_SF SMALLBANK_SF=$SMALLBANK_SF TPCC_SF=$TPCC_SF \
FM_SCALES="tatp=$(fm_scale tatp) smallbank=$(fm_scale smallbank) tpcc=$(fm_scale tpcc)" \
BENCHBASE_DIR="$BENCHBASE_DIR" JAVA_VERSION="$("$JAVA" -version 2>&1 | head -n 1)" \
FARMEM="$FARMEM" python3 - <<'PY'
import json, os, time

E = os.environ
res = E["RES"]
workloads = E["WORKLOADS"].split()
transports = E["TRANSPORTS"].split()
targets = {"tatp": 50.0, "smallbank": 50.0, "tpcc": 10.0}
names = {"tatp": "TATP", "smallbank": "SmallBank", "tpcc": "TPC-C"}
fm_scales = dict(kv.split("=") for kv in E["FM_SCALES"].split())
bb_sf = {"tatp": E["TATP_SF"], "smallbank": E["SMALLBANK_SF"], "tpcc": E["TPCC_SF"]}


def read(name):
    try:
        with open(os.path.join(res, name)) as f:
            return f.read().strip()
    except OSError:
        return None


def hist(h, key):
    """BenchBase histogram JSON -> {transaction type: count}."""
    v = (h or {}).get(key) or {}
    v = v.get("HISTOGRAM", v.get("histogram", v))
    out = {}
    for k, n in (v.items() if isinstance(v, dict) else []):
        out[k.split("/")[-1]] = int(n)
    return out


pg_settings = json.loads(read("pg_settings.json") or "null")
if pg_settings is not None:
    pg_settings["extra_settings"] = E["PG_SETTINGS"]
doc = {
    "unix_time": int(time.time()),
    "config": {"duration_s": int(E["DURATION"]), "warmup_s": int(E["WARMUP"]),
               "terminals": int(E["TERMINALS"]), "isolation": "SERIALIZABLE",
               "attempts_per_transaction": int(E["RETRIES"]),
               "threads": int(E["THREADS"]), "coroutines": int(E["COROUTINES"]),
               "durable_threads": int(E["DURABLE_THREADS"]),
               "durable_coroutines": E["DURABLE_COROUTINES"],
               "tcp_threads": int(E["TCP_THREADS"]), "tcp_coroutines": E["TCP_COROUTINES"],
               "transports": transports, "seed": int(E["SEED"]),
               "benchbase_scalefactor": bb_sf, "farmem_scale": fm_scales,
               "benchbase_dir": E["BENCHBASE_DIR"], "java": E["JAVA_VERSION"],
               "farmem": E["FARMEM"], "load_average": open("/proc/loadavg").read().split()[:3]},
    "postgres_settings": pg_settings,
    "workloads": {},
}
errors = []
notes = []
rows = []
for wl in workloads:
    entry = {"target_ratio": targets[wl]}
    pg = None
    s = read("pg_%s_summary.json" % wl)
    if s:
        s = json.loads(s)
        h = json.loads(read("pg_%s_histograms.json" % wl) or "null")
        completed, aborted = hist(h, "completed"), hist(h, "aborted")
        rejected, unexpected = hist(h, "rejected"), hist(h, "unexpected")
        c, a, r, u = (sum(x.values()) for x in (completed, aborted, rejected, unexpected))
        attempts = c + a + r + u
        thr = s["Throughput (requests/second)"]
        finished = c + a + u  # requests by outcome (a request out of retries is in none)
        pg = {"committed_per_s": thr * c / finished if finished else 0.0,
              "requests_per_s": thr,
              "benchbase_goodput_per_s": s["Goodput (requests/second)"],
              "measured_requests": s["Measured Requests"],
              "completed": c, "user_aborted": a, "serialization_retries": r, "unexpected": u,
              "out_of_retries_at_most": r // int(E["RETRIES"]),
              "retry_rate": r / attempts if attempts else 0.0,
              "latency_us": s.get("Latency Distribution"),
              "per_type": {t: {"completed": completed.get(t, 0), "aborted": aborted.get(t, 0),
                               "rejected": rejected.get(t, 0), "unexpected": unexpected.get(t, 0)}
                           for t in sorted(set(completed) | set(rejected) | set(aborted))},
              "load_s": int(read("pg_%s_load_s" % wl) or 0),
              "dbms_version": s.get("DBMS Version")}
    else:
        errors.append("postgres %s: %s" % (wl, read("pg_%s.err" % wl) or read("pg.err") or "no result"))
    entry["postgres"] = pg
    entry["farmem"] = {}
    for tr in transports:
        tag = "%s_%s" % (wl, tr)
        txt = read("fm_%s.json" % tag)
        fm = None
        if txt:
            fm = json.loads([l for l in txt.splitlines() if l.strip()][-1])
        else:
            errors.append("farmem %s %s: %s" % (wl, tr, read("fm_%s.err" % tag) or "no result"))
        ratio = None
        if fm and pg and pg["committed_per_s"] > 0:
            ratio = fm["commits_per_s"] / pg["committed_per_s"]
        entry["farmem"][tr] = {"result": fm, "ratio": ratio,
                               "target_met": None if ratio is None else ratio >= targets[wl]}
    doc["workloads"][wl] = entry
    rows.append((wl, entry))

with open(E["OUT"], "w") as f:
    json.dump(doc, f, indent=2)
    f.write("\n")


def n(v, fmt="{:,.0f}"):
    return fmt.format(v) if v is not None else "n/a"


print("%-10s %-20s %13s %13s %11s %9s %9s  %s" % ("workload", "system", "committed/s", "requests/s",
                                                 "abort_rate", "p50_us", "p99_us", "notes"))
for wl, e in rows:
    pg = e["postgres"]
    if pg:
        lat = pg["latency_us"] or {}
        if pg["out_of_retries_at_most"]:
            notes.append("postgres %s: up to %d requests ran out of attempts (left out of committed/s's "
                         "denominator)" % (wl, pg["out_of_retries_at_most"]))
        print("%-10s %-20s %13s %13s %11s %9s %9s  %s" % (
            names[wl], "postgres", n(pg["committed_per_s"], "{:,.1f}"), n(pg["requests_per_s"], "{:,.1f}"),
            "%.4f" % pg["retry_rate"], n(lat.get("Median Latency (microseconds)")),
            n(lat.get("99th Percentile Latency (microseconds)")),
            "sf %s; %d completed, %d user-aborted, %d serialization retries, %d unexpected" % (
                bb_sf[wl], pg["completed"], pg["user_aborted"], pg["serialization_retries"], pg["unexpected"])))
    else:
        print("%-10s %-20s %13s" % (names[wl], "postgres", "not measured"))
    for tr in transports:
        fm = e["farmem"][tr]["result"]
        label = "farmem %s" % tr
        if fm:
            print("%-10s %-20s %13s %13s %11s %9s %9s  %s" % (
                "", label, n(fm["commits_per_s"]), n(fm.get("attempted_per_s")),
                "%.4f" % fm["abort_rate"], n(fm.get("p50_us"), "{:,.1f}"), n(fm.get("p99_us"), "{:,.1f}"),
                "scale %s, %s x %s; %s" % (fm.get("scale"), fm.get("threads"), fm.get("coroutines"),
                                           fm.get("invariant", ""))))
        else:
            print("%-10s %-20s %13s" % ("", label, "not measured"))
print()
print("ratio farmem / postgres (committed transactions per second, same run)")
for wl, e in rows:
    for tr in transports:
        r = e["farmem"][tr]["ratio"]
        t = e["target_ratio"]
        verdict = "not measured" if r is None else ("met" if r >= t else "NOT met")
        print("  %-10s %-4s %10s   target >= %gx: %s" % (names[wl], tr, "%.1fx" % r if r is not None else "n/a",
                                                     t, verdict))
print()
print("notes:")
print("  postgres requests/s = BenchBase throughput (measured requests whatever their outcome);")
print("  committed/s = requests/s x completed / (completed + user-aborted + unexpected); abort_rate =")
print("  serialization failures (BenchBase 'rejected') / attempts; both systems make up to %s attempts"
      % E["RETRIES"])
print("  farmem requests/s = attempted/s, abort_rate = aborted attempts / attempts")
if pg_settings:
    print("  postgres %s: fsync %s, synchronous_commit %s, full_page_writes %s, shared_buffers %s, data on %s"
          % (pg_settings["version"], pg_settings["fsync"], pg_settings["synchronous_commit"],
             pg_settings["full_page_writes"], pg_settings["shared_buffers"], pg_settings["data_directory_fs"]))
    print("  postgres max_pred_locks_per_transaction %s; extra settings: %s"
          % (pg_settings["max_pred_locks_per_transaction"], pg_settings["extra_settings"] or "none"))
print("  results in %s" % E["OUT"])
for note in notes:
    print("  " + note)
for err in errors:
    print("  NOT MEASURED: " + err)
PY
