// The main loop of a process that is a memory node (farmem-server, farmem-agent): installs
// SIGTERM/SIGINT handlers that stop the server cleanly, ignores SIGPIPE, calls `ready` with the
// bound port (the process prints its banner there), writes the port file if one was asked for
// and runs the server until it stops.
// Preconditions: called once per process, from the thread that created `server`; `server`
// outlives the call. Returns the server's run() status, or the port file's error (the server is
// then not run).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "farmem/common/status.h"
#include "farmem/memnode/server.h"

namespace farmem::memnode {

// Writes `port` and a newline to `path` atomically (a temporary file renamed over it), so a
// reader never sees a partial file.
Status write_port_file(const std::string& path, uint16_t port);

Status serve_until_signalled(Server* server, const std::string& port_file,
                             const std::function<void(uint16_t port)>& ready);

}  // namespace farmem::memnode
