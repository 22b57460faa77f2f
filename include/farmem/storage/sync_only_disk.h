// sync_only_disk(): a Disk over the real file system for power-loss tests of whole nodes. A
// file's writes and truncations stay in the process (an image of the file in memory) until
// sync() writes them out and syncs them, so a kill -9 of the process loses exactly what a power
// loss could: everything not yet synced. Reads see every write. Errors of the real file system
// (a full disk) come from sync(), not from the write.
//
// For tests only (farmem-server --simulate-power-loss): each open file's whole contents live in
// memory. Thread safety: any method of a file from any thread (one mutex per file; a sync holds
// it while it writes out); sync_only_disk() from any thread.
#pragma once

#include <string>

#include "farmem/storage/file.h"

namespace farmem::storage {

Disk& sync_only_disk();

// From now on every sync() of a sync_only_disk() file is recorded in the trace file at `path`
// (storage/sync_trace.h), for tests that rebuild the directory at each sync boundary
// (farmem-server --sync-trace). Once per process, before the first file is opened.
Status start_sync_trace(const std::string& path);

}  // namespace farmem::storage
