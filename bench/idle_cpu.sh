#!/usr/bin/env bash
# CPU used by a memory node while idle, and while a client is connected but idle.
# Prints CPU seconds over a window (default 10 s); an idle node should use ~0.
#   bench/idle_cpu.sh            UCX_TLS=tcp bench/idle_cpu.sh
set -euo pipefail
cd "$(dirname "$0")/.."
window=${WINDOW:-10}
port=$(( 20000 + RANDOM % 20000 ))
build/farmem-server --listen 127.0.0.1 --port "$port" --capacity 64MiB >/dev/null &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
sleep 1
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
t0=$(ticks); sleep "$window"; t1=$(ticks)
echo "idle node:              $(python3 -c "print('%.3f' % (($t1-$t0)/$hz))") CPU s in ${window}s"
# A connected client that does nothing: farmem status keeps nothing open, so hold a
# connection with a long benchmark at depth 1 paused by SIGSTOP.
build/farmem bench ops --servers "127.0.0.1:$port" --duration 1000 --depth 1 >/dev/null 2>&1 &
cli=$!
sleep 2
kill -STOP "$cli"
sleep 1
t0=$(ticks); sleep "$window"; t1=$(ticks)
echo "node with idle client:  $(python3 -c "print('%.3f' % (($t1-$t0)/$hz))") CPU s in ${window}s"
kill -CONT "$cli"; kill "$cli" 2>/dev/null || true; wait "$cli" 2>/dev/null || true
