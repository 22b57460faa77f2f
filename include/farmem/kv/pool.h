// Pool: an open pool of the key-value store (kv/store.h), the handle every key-value operation
// runs on. Obtained from Store::create_pool / open_pool on the Store's thread; used on that
// thread only; destroyed before its Store and when none of its operations is running. It uses
// its Store's client, coalescer, location cache and counters through the Store's PoolContext
// (src/kv/client/pool_context.h).
//
// Operations (coroutines, run from plain code with runtime::sync_wait; Status/Result, never throw):
//   put(key, value, flags, &existed)  insert or replace. kPutCreateOnly: kAlreadyExists if the
//       key exists. kPutDontOverwrite: an existing value is kept, OK with *existed = true.
//   get(key, &value) -> true (found) / false (absent)
//   erase(key)        kNotFound if absent
// Keys are 1 B..wire::kMaxKeyBytes (65504 B: a request carries at most 64 KiB with its
// headers), values 0 B..wire::kMaxValueBytes (kInvalidArgument beyond). Small
// operations travel in coalesced kOps messages (kv/coalescer.h). Values too large for a message
// go through locate / one-sided transfer / release by themselves (a put whose key and value
// exceed 64 KiB; a get the node answers with kReplyNeedsLocate).
// Gets in one-two-sided mode (Store::one_sided(node())) first read the record their location
// cache names with one one-sided read, validated as kv.md "Records" says, and fall back to the
// RPC on a miss; every get and put reply refreshes the cache.
//
// Direct transfers (MCAS): get_direct / put_direct move the value between far memory and the
// caller's buffer with one-sided operations (locate, transfer, release) and no copy in between;
// read_range / write_range do the same for bytes [offset, offset + length) of a stored value
// (write_range writes in place under a write lock; it cannot grow a value: kOutOfRange).
// lock(key, kRead|kWrite) returns where the value is for direct access; unlock releases it.
// While a key is locked by another session, puts, gets and locks of it get kBusy.
//
// find(expression, start) needs configure("AddIndex::VolatileTree"): the first key at
// position >= start matching "exact:K", "prefix:P", "regex:R" or "next:" (the key at
// position start), with its position; kNotFound past the last. Iterate with start =
// match.position + 1. attribute() reads kValueLength / kCrc32 / kWriteEpoch of a key, or kCount
// / kUsedBytes / kCapacity of the pool; info() the pool's KvPoolInfo.
// invoke_ado / invoke_put_ado call the pool's Active Data Object (flags wire::kAdo*).
//
// Deadlines: every remote step has the client's op_timeout_ms; a multi-step operation (locate,
// transfer, release; find's continuations) at most a few of them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "farmem/common/result.h"
#include "farmem/kv/coalescer.h"
#include "farmem/kv/location_cache.h"
#include "farmem/kv/types.h"
#include "farmem/kv/wire.h"
#include "farmem/runtime/task.h"

namespace farmem::kv {

struct PoolContext;

class Pool {
 public:
  // Made by Store::create_pool / open_pool from the node's reply (`context` is the Store's;
  // `id` is the pool's local id, the location cache's seed).
  Pool(PoolContext* context, std::string name, uint16_t node, const wire::KvPoolReply& reply,
       uint32_t id);
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  // ---- key-value operations ----
  runtime::Task<Status> put(std::string_view key, std::string_view value, uint8_t flags = 0,
                            bool* existed = nullptr);
  runtime::Task<Result<bool>> get(std::string_view key, std::string* value);
  runtime::Task<Status> erase(std::string_view key);

  // ---- direct transfers, ranges, locks ----
  // The value's length; kOutOfRange (nothing copied) if it exceeds `capacity`.
  runtime::Task<Result<uint64_t>> get_direct(std::string_view key, void* buffer, uint64_t capacity);
  runtime::Task<Status> put_direct(std::string_view key, const void* value, uint64_t bytes,
                                   uint8_t flags = 0, bool* existed = nullptr);
  // Bytes read (fewer than `length` at the end of the value; 0 for length 0); kOutOfRange if
  // offset is past the end.
  runtime::Task<Result<uint64_t>> read_range(std::string_view key, uint64_t offset, void* buffer,
                                             uint64_t length);
  runtime::Task<Status> write_range(std::string_view key, uint64_t offset, const void* data,
                                    uint64_t length);
  runtime::Task<Result<KeyLock>> lock(std::string_view key, LockMode mode);
  runtime::Task<Status> unlock(const KeyLock& lock);

  // ---- index, attributes, configuration, ADO ----
  runtime::Task<Result<FindMatch>> find(std::string_view expression, uint64_t start = 0);
  runtime::Task<Result<uint64_t>> attribute(wire::Attribute attribute, std::string_view key = {});
  runtime::Task<Result<wire::KvPoolInfo>> info();
  runtime::Task<Result<uint64_t>> count();
  runtime::Task<Status> configure(std::string_view command);
  runtime::Task<Result<AdoResult>> invoke_ado(std::string_view key, std::string_view request,
                                              uint32_t flags = 0, uint64_t value_size = 0);
  runtime::Task<Result<AdoResult>> invoke_put_ado(std::string_view key, std::string_view value,
                                                  std::string_view request, uint32_t flags = 0);

  // Closes the handle, as Store::close_pool(*this) does.
  runtime::Task<Status> close();

  // ---- what it is ----
  const std::string& name() const { return name_; }
  uint64_t handle() const { return handle_; }
  uint16_t node() const { return node_; }
  uint32_t shard() const { return wire::pool_worker(handle_); }
  uint64_t capacity_bytes() const { return capacity_bytes_; }
  bool created() const { return created_; }      // create_pool made it (it did not exist)
  bool is_open() const { return open_; }         // until close_pool or delete_pool
  bool one_sided() const { return one_sided_; }  // gets try one-sided reads first

 private:
  Status check_key(std::string_view key) const;
  Status check_open() const;
  // One-sided read of the record at `loc`, validated for `key`: true and *value set if valid.
  runtime::Task<bool> read_record(const RecordLocation& loc, std::string_view key,
                                  std::string* value);
  // Locate / transfer / release of a whole value into *value (a get the node would not carry).
  runtime::Task<Result<bool>> get_located(std::string_view key, std::string* value);
  runtime::Task<Result<wire::KvLocateReply>> locate(std::string_view key, wire::LocateMode mode,
                                                    uint8_t flags, uint64_t offset,
                                                    uint64_t length);
  runtime::Task<Status> release(uint64_t token, uint32_t flags);
  // A request of this pool (kv.md opcodes other than kOps) to its node.
  runtime::Task<Status> call(wire::KvOpcode opcode, std::string request,
                             std::vector<uint8_t>* reply, uint32_t reply_capacity);
  runtime::Task<Result<AdoResult>> invoke(wire::KvOpcode opcode, std::string_view key,
                                          std::string_view value, std::string_view request,
                                          uint32_t flags, uint64_t value_size);
  void remember(uint64_t hash, const wire::KvOpReply& reply);

  PoolContext* context_;
  std::string name_;
  uint64_t handle_;
  uint16_t node_;
  uint32_t id_;  // local id: the location cache's seed
  uint64_t capacity_bytes_;
  bool created_;
  bool open_ = true;
  bool one_sided_;
  Lane lane_;
};

}  // namespace farmem::kv
