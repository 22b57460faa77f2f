# Helpers the comparison scripts source (bench/lib.sh, from the repository root): stopping a
# process they started, a free loopback port, waiting for a server to accept.

# Stops a process this script started, by its pid (nothing for an empty pid).
stop() {  # pid
  [ -n "$1" ] || return 0
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

# A TCP port free on 127.0.0.1 now.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# 0 once something accepts on 127.0.0.1:port (10 s at most), 1 if the process `pid` died first.
wait_port() {  # port pid
  local i
  for i in $(seq 100); do
    kill -0 "$2" 2>/dev/null || return 1
    python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1)' "$1" \
      2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
