// HashTable's served path: a get, update or insert as one call of the node's procedure, on nodes
// whose one-sided operations are served anyway (hash_table.h, ds/hash/served.h,
// docs/formats/hash_table/served.md). Whatever the node answers with a fall-back outcome the
// one-sided path handles.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "farmem/client/call_result.h"
#include "farmem/ds/common/call_buffers.h"
#include "farmem/ds/common/durable.h"
#include "farmem/ds/hash/hash_table.h"
#include "geometry.h"
#include "op_context.h"

namespace farmem::ds::hash {

using client::Batch;
using runtime::Task;

namespace {

constexpr uint32_t kMaxServedValueBytes =
    wire::kMaxCallReplyBytes - sizeof(wire::CallReplyHeader) - sizeof(ServedLookupResult);

}  // namespace

bool HashTable::served_path(const OpContext& op) const {
  const uint16_t node = op.shard.node;
  return options_.served_procedures && client_->served(node) && !node_durable(client_, node) &&
         !procedures_.missing(node) &&
         op.key.size() + sizeof(ServedLookupArgs) <= wire::kMaxMemOpBytes;
}

Task<Result<ServedLookupResult>> HashTable::call_procedure(OpContext& op, uint16_t procedure,
                                                           NewBlock* block, std::string* value) {
  if (directory_due(op.shard)) FARMEM_CO_TRY(co_await check_directory(op));
  Buckets b;
  bucket_addrs(op.shard, op.kh, &b);
  ServedLookupArgs a{{b.addr[0].offset(), b.addr[2].offset()},
                     op.kh.h1,
                     0,
                     static_cast<uint32_t>(op.key.size()),
                     0};
  if (block != nullptr)
    a.new_word = block_slot_word(op.kh, block->addr, block->bytes.size(), false);
  // Arguments and reply slot live in the frame when small (most calls), else on the heap.
  CallBuffers bufs(sizeof(a) + op.key.size(), sizeof(wire::CallReplyHeader) +
                                                  sizeof(ServedLookupResult) +
                                                  (block != nullptr ? 0 : served_value_hint_));
  std::memcpy(bufs.args(), &a, sizeof(a));
  std::memcpy(bufs.args() + sizeof(a), op.key.data(), op.key.size());
  Batch batch(*client_);
  if (block != nullptr && !block->written) {
    FARMEM_CO_TRY(batch.write(block->addr, block->bytes.data(), block->bytes.size()));
    block->written = true;
  }
  FARMEM_CO_TRY(batch.call(op.shard.node, procedure, bufs.args(), bufs.args_bytes, bufs.slot(),
                           bufs.slot_bytes));
  Status st = co_await batch.wait();
  ++op.round_trips;
  if (!st.ok() && block != nullptr) block->published = true;  // the call may have run
  FARMEM_CO_TRY(st);
  co_return read_result(op.shard.node, bufs.slot(), bufs.slot_bytes, value);
}

Result<ServedLookupResult> HashTable::read_result(uint16_t node, const void* slot,
                                                  size_t slot_bytes, std::string* value) {
  auto body = client::call_result(slot, slot_bytes);
  if (body.status().code() == StatusCode::kNotFound) {  // a node without the procedures
    procedures_.mark_missing(node);
    return ServedLookupResult{static_cast<uint32_t>(ServedOutcome::kRefused), 0, 0, 0, 0};
  }
  FARMEM_TRY(body);
  ServedLookupResult r;
  if (body->size() < sizeof(r)) return ProtocolError("short hash procedure result");
  std::memcpy(&r, body->data(), sizeof(r));
  if (r.outcome > kLastServedOutcome) return ProtocolError("unknown hash procedure outcome");
  const bool found = r.outcome == static_cast<uint32_t>(ServedOutcome::kFound);
  if (found && body->size() != sizeof(r) + r.value_bytes) {
    return ProtocolError("hash get result and value length disagree");
  }
  if (found && value != nullptr) value->assign(body->substr(sizeof(r)));
  return r;
}

Task<Result<HashTable::ServedStep>> HashTable::served_get(OpContext& op, std::string* value) {
  auto r = co_await call_procedure(op, kProcHashGet, nullptr, value);
  FARMEM_CO_TRY(r);
  const auto outcome = static_cast<ServedOutcome>(r->outcome);
  if (outcome == ServedOutcome::kFound) {
    ++stats_.served_gets;
    remember(op.kh, GlobalAddress(op.shard.node, r->slot), r->word);
    co_return ServedStep::kDone;
  }
  if (outcome == ServedOutcome::kAbsent) {
    ++stats_.served_gets;
    co_return ServedStep::kAbsent;
  }
  if (outcome == ServedOutcome::kTooLarge) {
    served_value_hint_ = std::clamp(r->value_bytes, served_value_hint_, kMaxServedValueBytes);
  }
  ++stats_.served_fallbacks;
  co_return ServedStep::kOneSided;
}

Task<Result<HashTable::ServedStep>> HashTable::served_replace(OpContext& op, NewBlock& block,
                                                              Status* retired) {
  auto r = co_await call_procedure(op, kProcHashUpdate, &block, nullptr);
  FARMEM_CO_TRY(r);
  const auto outcome = static_cast<ServedOutcome>(r->outcome);
  if (outcome == ServedOutcome::kReplaced) {
    ++stats_.served_updates;
    block.published = true;
    const GlobalAddress slot(op.shard.node, r->slot);
    remember(op.kh, slot, block_slot_word(op.kh, block.addr, block.bytes.size(), false));
    *retired = co_await reclaimer_.retire(GlobalAddress(op.shard.node, slot_offset(r->word)),
                                          r->block_bytes);
    co_return ServedStep::kDone;
  }
  if (outcome == ServedOutcome::kAbsent) co_return ServedStep::kAbsent;
  ++stats_.served_fallbacks;
  co_return ServedStep::kOneSided;
}

Task<Result<HashTable::ServedStep>> HashTable::served_insert(OpContext& op) {
  NewBlock& block = *op.block;
  auto r = co_await call_procedure(op, kProcHashInsert, &block, nullptr);
  // Any call may have claimed a slot naming the block (even if it then withdrew): from here
  // on the block is retired, never freed, if it ends up unused.
  block.published = true;
  FARMEM_CO_TRY(r);
  const auto outcome = static_cast<ServedOutcome>(r->outcome);
  if (outcome == ServedOutcome::kInserted) {
    ++stats_.served_inserts;
    remember(op.kh, GlobalAddress(op.shard.node, r->slot),
             block_slot_word(op.kh, block.addr, block.bytes.size(), false));
    co_return ServedStep::kDone;
  }
  if (outcome == ServedOutcome::kExists) co_return ServedStep::kAbsent;  // (the key is there)
  ++stats_.served_fallbacks;
  co_return ServedStep::kOneSided;
}

}  // namespace farmem::ds::hash
