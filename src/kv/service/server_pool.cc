#include "server_pool.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "farmem/common/check.h"
#include "record.h"

namespace farmem::kv::service {

namespace w = farmem::kv::wire;

uint64_t Versions::next() {
  if (next_ == end_) {
    next_ = shared_.fetch_add(kBlock, std::memory_order_relaxed);
    end_ = next_ + kBlock;
  }
  return next_++;
}

ServerPool::ServerPool(std::string name, uint64_t handle, uint64_t object_id,
                       uint64_t capacity_bytes, RegionView region,
                       std::unique_ptr<MemorySource> source, Versions& versions, uint64_t grace_ns,
                       std::shared_ptr<PoolSummary> summary)
    : name_(std::move(name)),
      handle_(handle),
      object_id_(object_id),
      region_(region),
      source_(std::move(source)),
      versions_(versions),
      allocator_(*source_, capacity_bytes, grace_ns),
      index_(region, allocator_),
      summary_(std::move(summary)) {
  summary_->capacity_bytes.store(capacity_bytes);
}

Status ServerPool::init(uint64_t expected_count, uint64_t now_ns) {
  if (dirty_ != nullptr) {
    FARMEM_ASSIGN_OR_RETURN(const MemorySource::Block b, source_->take(kPoolHeaderBlockBytes));
    header_ = b.offset;
  }
  Status s = index_.init(expected_count, now_ns);
  if (s.ok() && dirty_ != nullptr) s = write_header();
  refresh_summary();
  return s;
}

void ServerPool::refresh_summary() {
  summary_->count.store(index_.size(), std::memory_order_relaxed);
  summary_->used_bytes.store(allocator_.used_bytes(), std::memory_order_relaxed);
  summary_->open_handles.store(open_handles_, std::memory_order_relaxed);
}

// ---------------------------------------------------------------------------------------------
// Keys

std::optional<KeyInfo> ServerPool::info_of(const IndexBucket& b) const {
  const uint8_t* h = region_.ptr(b.record, sizeof(w::KvRecordHeader));
  if (h == nullptr || b.record == 0) return std::nullopt;
  w::KvRecordHeader hdr;
  std::memcpy(&hdr, h, sizeof(hdr));
  KeyInfo k;
  k.record = b.record;
  k.version = hdr.version;
  k.key_bytes = hdr.key_bytes;
  k.value_bytes = hdr.value_bytes;
  k.value = b.record + sizeof(hdr) + hdr.key_bytes;
  k.write_epoch_ns = b.epoch_ns;
  if (region_.ptr(b.record, k.record_bytes()) == nullptr) return std::nullopt;
  return k;
}

Result<KeyInfo> ServerPool::lookup(std::string_view key) const {
  const uint64_t i = index_.find(HopscotchIndex::hash_key(key), key);
  if (i == HopscotchIndex::kNotFound) return NotFound("no such key");
  auto info = info_of(index_.bucket(i));
  if (!info.has_value()) return Internal("the key's record lies outside the region");
  return *info;
}

Status ServerPool::check_readable(std::string_view key, uint64_t owner) const {
  if (locks_.empty()) return OkStatus();
  auto it = locks_.find(std::string(key));
  if (it == locks_.end() || it->second.writer == 0) return OkStatus();
  auto writer = grants_.find(it->second.writer);
  FARMEM_ASSERT(writer != grants_.end(), "a key's writer token names a grant");
  const LockGrant& g = writer->second;
  if (g.mode == w::LocateMode::kWrite && g.owner != owner) {
    return Busy("the key is locked for writing by another session");
  }
  return OkStatus();
}

ServerPool::Killed ServerPool::kill(uint64_t record) {
  const uint8_t* h = region_.ptr(record, sizeof(w::KvRecordHeader));
  if (h == nullptr) return {};
  w::KvRecordHeader hdr;
  std::memcpy(&hdr, h, sizeof(hdr));
  const uint64_t bytes = record_alloc_bytes(hdr.key_bytes, hdr.value_bytes);
  if (region_.ptr(record, bytes) == nullptr) return {};
  store_state_marked(record, w::record_state(hdr.version, w::kRecordDead));
  return {record, bytes};
}

void ServerPool::retire(Killed k, uint64_t now_ns) {
  if (k.bytes != 0) allocator_.retire(k.record, k.bytes, now_ns);
}

Status ServerPool::publish(std::string_view key, uint64_t hash, uint64_t bucket, uint64_t rec,
                           uint64_t version, uint64_t now_ns) {
  if (bucket == HopscotchIndex::kNotFound) {
    auto at = index_.insert(hash, rec, now_ns, now_ns);
    FARMEM_TRY(at);
    if (secondary_) secondary_->insert(key);
  } else {
    IndexBucket& b = index_.bucket(bucket);
    const Killed old = kill(b.record);  // rule 1: the old record is dead before the index moves on
    b.record = rec;
    b.epoch_ns = now_ns;
    index_.mark_bucket(bucket);
    retire(old, now_ns);  // after the index names the new record: its memory may go at once
  }
  store_state_marked(rec, w::record_state(version, w::kRecordLive));
  write_epoch_ns_ = now_ns;
  refresh_summary();
  return OkStatus();
}

Status ServerPool::put(std::string_view key, const void* value, uint32_t value_bytes, uint8_t flags,
                       uint64_t now_ns, KeyInfo* out, bool* existed) {
  *existed = false;
  if (!locks_.empty() && locks_.count(std::string(key)) != 0) {
    return Busy("the key is locked by a session");
  }
  const uint64_t hash = HopscotchIndex::hash_key(key);
  const uint64_t i = index_.find(hash, key);
  if (i != HopscotchIndex::kNotFound) {
    if (flags & w::kPutCreateOnly) return AlreadyExists("the key exists");
    if (flags & w::kPutDontOverwrite) {
      *existed = true;
      auto info = info_of(index_.bucket(i));
      if (!info.has_value()) return Internal("the key's record lies outside the region");
      *out = *info;
      return OkStatus();
    }
  }
  const uint64_t bytes = record_alloc_bytes(key.size(), value_bytes);
  auto rec = allocate_record(bytes, now_ns);
  FARMEM_TRY(rec);
  const uint64_t version = versions_.next();
  write_record_marked(*rec, version, key, value, value_bytes);
  Status s = publish(key, hash, i, *rec, version, now_ns);
  if (!s.ok()) {
    allocator_.free_now(*rec, bytes);
    return s;
  }
  out->record = *rec;
  out->version = version;
  out->key_bytes = static_cast<uint32_t>(key.size());
  out->value_bytes = value_bytes;
  out->value = *rec + sizeof(w::KvRecordHeader) + key.size();
  out->write_epoch_ns = now_ns;
  return OkStatus();
}

Status ServerPool::erase(std::string_view key, uint64_t now_ns) {
  if (!locks_.empty() && locks_.count(std::string(key)) != 0) {
    return Busy("the key is locked by a session");
  }
  const uint64_t i = index_.find(HopscotchIndex::hash_key(key), key);
  if (i == HopscotchIndex::kNotFound) return NotFound("no such key");
  const Killed old = kill(index_.bucket(i).record);
  index_.erase(i);
  retire(old, now_ns);
  if (secondary_) secondary_->erase(key);
  write_epoch_ns_ = now_ns;
  refresh_summary();
  return OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Key locks

Result<LockGrant> ServerPool::lock(uint64_t owner, std::string_view key, w::LocateMode mode,
                                   uint64_t offset, uint64_t length, uint8_t flags,
                                   uint64_t now_ns) {
  std::string k(key);
  auto lit = locks_.find(k);
  const bool exclusive = mode != w::LocateMode::kRead;
  if (lit != locks_.end() && (exclusive || lit->second.writer != 0)) {
    return Busy("the key is locked by a session");
  }
  LockGrant g;
  g.owner = owner;
  g.mode = mode;
  g.key = k;
  if (mode == w::LocateMode::kPutNew) {
    if ((flags & w::kLocateCreateOnly) && lookup(key).ok()) return AlreadyExists("the key exists");
    if (length > w::kMaxValueBytes) return InvalidArgument("value too large");
    const uint64_t bytes = record_alloc_bytes(key.size(), length);
    auto rec = allocate_record(bytes, now_ns);
    FARMEM_TRY(rec);
    g.version = versions_.next();
    write_record(region_.at(*rec), g.version, key, nullptr, static_cast<uint32_t>(length));
    g.record = *rec;
    g.value_bytes = static_cast<uint32_t>(length);
    g.address = *rec + sizeof(w::KvRecordHeader) + key.size();
    g.length = length;
  } else {
    auto info = lookup(key);
    FARMEM_TRY(info);
    if (offset > info->value_bytes || length > info->value_bytes - offset) {
      return OutOfRange(fmt::format("range [{}, +{}) is outside the {}-byte value", offset, length,
                                    info->value_bytes));
    }
    g.record = info->record;
    g.version = info->version;
    g.value_bytes = info->value_bytes;
    g.address = info->value + offset;
    g.length = length == 0 ? info->value_bytes - offset : length;
    if (mode == w::LocateMode::kWrite) {
      store_state_marked(info->record, w::record_state(info->version, w::kRecordLocked));
    }
  }
  g.token = next_token_++;
  KeyLock& kl = locks_[k];
  FARMEM_ASSERT(kl.writer == 0 && (!exclusive || kl.readers == 0),
                "a key has one writer and no readers, or only readers");
  if (exclusive) {
    kl.writer = g.token;
  } else {
    ++kl.readers;
  }
  grants_.emplace(g.token, g);
  return g;
}

void ServerPool::drop_grant(const LockGrant& g) {
  auto lit = locks_.find(g.key);
  FARMEM_ASSERT(lit != locks_.end(), "a grant's key is locked");
  if (g.mode == w::LocateMode::kRead) {
    FARMEM_ASSERT(lit->second.readers > 0, "a read grant counts as a reader");
    --lit->second.readers;
  } else {
    FARMEM_ASSERT(lit->second.writer == g.token, "a write grant is its key's writer");
    lit->second.writer = 0;
  }
  if (lit->second.readers == 0 && lit->second.writer == 0) locks_.erase(lit);
  grants_.erase(g.token);
}

Status ServerPool::release(uint64_t owner, uint64_t token, uint32_t flags, uint64_t now_ns) {
  auto it = grants_.find(token);
  if (it == grants_.end() || it->second.owner != owner) {
    return NotFound("no such lock token held by this session on this pool");
  }
  const LockGrant g = it->second;
  drop_grant(g);
  Status s;
  switch (g.mode) {
    case w::LocateMode::kRead:
      break;
    case w::LocateMode::kWrite: {
      // Rule 2: a new version and checksum, then live.
      const uint64_t version = versions_.next();
      seal(region_.at(g.record), version, static_cast<uint32_t>(g.key.size()), g.value_bytes);
      store_state(region_.at(g.record), w::record_state(version, w::kRecordLive));
      mark(g.record, record_bytes(g.key.size(), g.value_bytes));
      const uint64_t i = index_.find(HopscotchIndex::hash_key(g.key), g.key);
      if (i != HopscotchIndex::kNotFound) {
        index_.bucket(i).epoch_ns = now_ns;
        index_.mark_bucket(i);
      }
      write_epoch_ns_ = now_ns;
      break;
    }
    case w::LocateMode::kPutNew: {
      const uint64_t bytes = record_alloc_bytes(g.key.size(), g.value_bytes);
      if (flags & w::kReleaseAbort) {
        allocator_.free_now(g.record, bytes);
        break;
      }
      seal(region_.at(g.record), g.version, static_cast<uint32_t>(g.key.size()), g.value_bytes);
      mark(g.record, record_bytes(g.key.size(), g.value_bytes));
      const uint64_t hash = HopscotchIndex::hash_key(g.key);
      s = publish(g.key, hash, index_.find(hash, g.key), g.record, g.version, now_ns);
      if (!s.ok()) allocator_.free_now(g.record, bytes);
      break;
    }
  }
  return s;
}

void ServerPool::release_all(uint64_t owner, uint64_t now_ns) {
  std::vector<uint64_t> tokens;
  for (const auto& [token, g] : grants_) {
    if (g.owner == owner) tokens.push_back(token);
  }
  for (uint64_t t : tokens) {
    const bool put_new = grants_.at(t).mode == w::LocateMode::kPutNew;
    (void)release(owner, t, put_new ? w::kReleaseAbort : 0, now_ns);
  }
}

const LockGrant* ServerPool::grant(uint64_t owner, uint64_t token) const {
  auto it = grants_.find(token);
  return it == grants_.end() || it->second.owner != owner ? nullptr : &it->second;
}

Result<LockGrant> ServerPool::resize(uint64_t owner, uint64_t token, uint64_t new_size,
                                     uint64_t now_ns) {
  auto it = grants_.find(token);
  if (it == grants_.end() || it->second.owner != owner ||
      it->second.mode != w::LocateMode::kWrite) {
    return NotFound("no write lock with this token held by this owner");
  }
  if (new_size > w::kMaxValueBytes) return InvalidArgument("value too large");
  LockGrant& g = it->second;
  const uint64_t hash = HopscotchIndex::hash_key(g.key);
  const uint64_t bucket = index_.find(hash, g.key);
  if (bucket == HopscotchIndex::kNotFound) return Internal("a write-locked key left the index");
  const uint64_t bytes = record_alloc_bytes(g.key.size(), new_size);
  auto rec = allocate_record(bytes, now_ns);
  FARMEM_TRY(rec);
  const uint64_t version = versions_.next();
  uint8_t* r = region_.at(*rec);
  write_record(r, version, g.key, nullptr, static_cast<uint32_t>(new_size));
  const uint64_t old_value = g.record + sizeof(w::KvRecordHeader) + g.key.size();
  std::memcpy(r + sizeof(w::KvRecordHeader) + g.key.size(), region_.at(old_value),
              std::min<uint64_t>(new_size, g.value_bytes));
  store_state(r, w::record_state(version, w::kRecordLocked));
  mark(*rec, record_bytes(g.key.size(), new_size));
  IndexBucket& b = index_.bucket(bucket);
  const Killed old = kill(b.record);
  b.record = *rec;
  b.epoch_ns = now_ns;
  index_.mark_bucket(bucket);
  retire(old, now_ns);
  g.record = *rec;
  g.version = version;
  g.value_bytes = static_cast<uint32_t>(new_size);
  g.address = *rec + sizeof(w::KvRecordHeader) + g.key.size();
  g.length = new_size;
  write_epoch_ns_ = now_ns;
  refresh_summary();
  return g;
}

// ---------------------------------------------------------------------------------------------
// Memory, indexes, handles

Result<uint64_t> ServerPool::allocate_record(uint64_t bytes, uint64_t now_ns) {
  auto r = allocator_.allocate(bytes, now_ns);
  if (r.ok()) {
    FARMEM_ASSERT(region_.ptr(*r, bytes) != nullptr, "pool memory lies inside the region");
  }
  return r;
}

Result<uint64_t> ServerPool::allocate(uint64_t bytes, uint64_t now_ns) {
  auto r = allocate_record(bytes, now_ns);
  refresh_summary();
  return r;
}

void ServerPool::free(uint64_t offset, uint64_t bytes, uint64_t now_ns) {
  allocator_.retire(offset, bytes, now_ns);
  refresh_summary();
}

void ServerPool::add_index() {
  auto s = std::make_unique<SecondaryIndex>();
  index_.for_each([&](const IndexBucket& b) {
    std::string_view k = index_.key_of(b.record);
    if (!k.empty()) s->insert(k);
  });
  secondary_ = std::move(s);
  rewrite_header();
}

void ServerPool::remove_index() {
  secondary_.reset();
  rewrite_header();
}

void ServerPool::open(uint64_t session, bool writable) {
  Opens& o = opens_[session];
  ++o.handles;
  if (writable) ++o.writable;
  ++open_handles_;
  refresh_summary();
}

bool ServerPool::close(uint64_t session) {
  auto it = opens_.find(session);
  if (it == opens_.end()) return false;
  Opens& o = it->second;
  FARMEM_ASSERT(o.handles > 0 && o.writable <= o.handles && open_handles_ >= o.handles,
                "a session's open handles are counted");
  // The most recent handles go first; a read-only close cannot tell which, so writable ones
  // are kept as long as possible only when the session has read-only ones to give back.
  if (o.writable == o.handles) --o.writable;
  --o.handles;
  --open_handles_;
  if (o.handles == 0) opens_.erase(it);
  refresh_summary();
  return true;
}

void ServerPool::close_all(uint64_t session) {
  auto it = opens_.find(session);
  if (it == opens_.end()) return;
  FARMEM_ASSERT(open_handles_ >= it->second.handles, "a session's open handles are counted");
  open_handles_ -= it->second.handles;
  opens_.erase(it);
  refresh_summary();
}

bool ServerPool::writable(uint64_t session) const {
  auto it = opens_.find(session);
  return it != opens_.end() && it->second.writable > 0;
}

bool ServerPool::open_by_others(uint64_t session) const {
  return opens_.size() > (opens_.count(session) ? 1u : 0u);
}

}  // namespace farmem::kv::service
