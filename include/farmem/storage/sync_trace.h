// SyncTrace: a file recording, in order, every sync a test disk made stable, so that a test can
// rebuild a data directory as a power loss at any sync boundary of a recorded run would leave it
// (docs/formats/storage.md "Sync trace" has the bytes).
//
// The writer appends one entry per File::sync() after the real sync returned: the file's name,
// the steady clock (CLOCK_MONOTONIC, comparable across processes of one machine), the shortest
// size the file had since its last sync, the ranges written out and the final size. The node
// acts on a sync (answers a write) only after the entry is in the trace, so every write a client
// saw acknowledged at time t is stable in the state after the last entry stamped before t.
// An entry goes to the kernel with one write(): a kill -9 of the writer leaves whole entries.
//
// Thread safety: SyncTraceWriter::append from any thread (one mutex); the rest on one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "farmem/common/result.h"

namespace farmem::storage {

struct SyncTraceEntry {
  struct Range {
    uint64_t offset = 0;
    std::string bytes;
  };
  uint64_t steady_ns = 0;     // when the sync returned
  std::string file;           // the file's name inside the data directory
  uint64_t cut_bytes = 0;     // cut to this size first (when below the file's size)
  uint64_t size_bytes = 0;    // the file's size after the sync
  std::vector<Range> ranges;  // written in order after the cut
};

// Appends entries to a trace file (created or emptied by open).
class SyncTraceWriter {
 public:
  static Result<std::unique_ptr<SyncTraceWriter>> open(const std::string& path);
  ~SyncTraceWriter();
  SyncTraceWriter(const SyncTraceWriter&) = delete;
  SyncTraceWriter& operator=(const SyncTraceWriter&) = delete;

  // One entry, stamped now. `ranges` point into the caller's image of the file.
  struct RangeView {
    uint64_t offset;
    std::string_view bytes;
  };
  Status append(std::string_view file, uint64_t cut_bytes, uint64_t size_bytes,
                const std::vector<RangeView>& ranges);

 private:
  SyncTraceWriter(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::mutex mu_;
  std::string path_;
  int fd_;
};

// Every whole entry of a trace, in order; a torn last entry (the writer was killed) is left out.
// A bad magic or size before the end is kInternal naming the offset.
Result<std::vector<SyncTraceEntry>> read_sync_trace(const std::string& path);

// Applies one entry to the directory `dir` (the file is created when missing), as the sync did.
Status apply_sync_trace_entry(const std::string& dir, const SyncTraceEntry& entry);

}  // namespace farmem::storage
