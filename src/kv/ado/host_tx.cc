// AdoHost's transactions (host.h): tx_add keeps the old bytes of what a plugin is about to change
// in the pool's undo block, tx_abort puts them back (docs/formats/ado.md "The undo log").
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "host.h"

namespace farmem::kv::ado {

namespace {

bool inside(const ValueRange& outer, uint64_t offset, uint64_t bytes) {
  return offset >= outer.offset && offset - outer.offset <= outer.bytes &&
         bytes <= outer.bytes - (offset - outer.offset);
}

bool overlap(const ValueRange& a, const ValueRange& b) {
  return a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
}

}  // namespace

static_assert(FARMEM_ADO_UNDO_BYTES == kUndoBlockBytes - kUndoFirstEntry);

void AdoHost::note_writable(std::string_view key, ValueRange range) {
  for (auto& [k, r] : current_.writable) {
    if (k == key) {
      r = range;
      return;
    }
  }
  current_.writable.emplace_back(std::string(key), range);
}

void AdoHost::forget_writable(std::string_view key) {
  std::erase_if(current_.writable, [key](const auto& kr) { return kr.first == key; });
}

bool AdoHost::in_transaction(std::string_view key) const {
  for (const auto& [k, r] : current_.writable) {
    if (k != key) continue;
    for (const ValueRange& a : current_.added) {
      if (overlap(a, r)) return true;
    }
  }
  return false;
}

int32_t AdoHost::op_tx_add(farmem_ado_store* s, uint64_t work_id, const void* data,
                           uint64_t bytes) {
  AdoHost* h = self(s);
  Current& c = h->current_;
  if (work_id == 0 || work_id != c.work_id) {
    return h->fail_callback(InvalidArgument("tx_add outside the do_work call of that work id"));
  }
  if (bytes == 0) return FARMEM_ADO_OK;
  const auto* p = static_cast<const uint8_t*>(data);
  const uint64_t offset = static_cast<uint64_t>(p - h->options_.region);
  const bool mapped = p >= h->options_.region && h->range_ok(offset, bytes);
  if (!mapped || std::none_of(c.writable.begin(), c.writable.end(),
                              [&](const auto& kr) { return inside(kr.second, offset, bytes); })) {
    return h->fail_callback(
        InvalidArgument("tx_add of bytes outside every value this call holds write-locked"));
  }
  for (const ValueRange& a : c.added) {
    if (inside(a, offset, bytes)) return FARMEM_ADO_OK;
  }
  if (bytes > UINT32_MAX) return h->fail_callback(ResourceExhausted("tx_add of 4 GiB or more"));
  auto entry = h->undo_.append(offset, p, static_cast<uint32_t>(bytes));
  if (!entry.ok()) return h->fail_callback(entry.status());
  if (h->durable_node_) {
    // The node logs the entry before the plugin changes what it restores.
    std::string payload;
    Status st =
        h->call({work_id, CallbackOp::kLogUndo, {}, h->undo_offset_ + entry->first, entry->second},
                &payload);
    if (!st.ok()) return h->fail_callback(st);
  }
  c.added.push_back({offset, bytes});
  return FARMEM_ADO_OK;
}

int32_t AdoHost::op_tx_abort(farmem_ado_store* s, uint64_t work_id) {
  AdoHost* h = self(s);
  Current& c = h->current_;
  if (work_id == 0 || work_id != c.work_id) {
    return h->fail_callback(InvalidArgument("tx_abort outside the do_work call of that work id"));
  }
  if (!h->undo_.attached()) return FARMEM_ADO_OK;  // nothing was added
  // The undo log's entries of this call, newest first: the oldest copy of a byte is written last.
  const std::vector<UndoEntry> entries =
      read_undo(h->undo_.block(), h->undo_.block_bytes(), work_id, h->options_.region_bytes);
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    std::memcpy(h->options_.region + it->offset, it->old, it->bytes);
  }
  c.added.clear();
  return FARMEM_ADO_OK;
}

}  // namespace farmem::kv::ado
