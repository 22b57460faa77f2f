// CallBuffers: the argument bytes and the 8-byte aligned reply slot of one served procedure call
// (client::Batch::call, docs/formats/memops.md "Calls"), inline in the caller's frame when small
// (most calls), else on the heap. Both must outlive the batch that carries the call.
// Thread safety: a value owned by one coroutine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "farmem/fabric/wire.h"

namespace farmem::ds {

class CallBuffers {
 public:
  // args: argument bytes; slot: reply slot bytes (rounded up to a multiple of 8).
  CallBuffers(size_t args, size_t slot) : args_bytes(args), slot_bytes(wire::pad8(slot)) {
    if (args_bytes > sizeof(args_inline_)) args_heap_.resize(args_bytes);
    if (slot_bytes > sizeof(slot_inline_)) slot_heap_.resize(slot_bytes / 8);
  }
  CallBuffers(const CallBuffers&) = delete;
  CallBuffers& operator=(const CallBuffers&) = delete;
  char* args() { return args_heap_.empty() ? args_inline_ : args_heap_.data(); }
  uint64_t* slot() { return slot_heap_.empty() ? slot_inline_ : slot_heap_.data(); }
  const size_t args_bytes;
  const size_t slot_bytes;

 private:
  char args_inline_[128];
  uint64_t slot_inline_[16];
  std::string args_heap_;
  std::vector<uint64_t> slot_heap_;
};

}  // namespace farmem::ds
