// The journal's background work: group commit (the syncer) and checkpoints.
#include <fmt/format.h>
#include <unistd.h>

#include <bit>
#include <cstring>

#include "farmem/common/atomic_max.h"
#include "farmem/common/clock.h"
#include "farmem/common/log.h"
#include "farmem/storage/journal.h"
#include "journal_format.h"

namespace farmem::storage {

using journal_format::CheckpointSlot;
using journal_format::MetaHeader;

namespace {

// Clients write the region while a checkpoint copies it (over shared memory, from their own
// processes): the copy is a snapshot that may tear a write in flight, by design; the log records
// after the switch repair every persisted range (docs/formats/storage.md, "Journal"). Word loads
// through volatile, so that no memcpy is called, and not instrumented for ThreadSanitizer, for
// which a test's writer thread would otherwise be a race.
__attribute__((no_sanitize("thread"))) void copy_racy(char* dst, const uint8_t* src, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t w = *reinterpret_cast<const volatile uint64_t*>(src + i);
    std::memcpy(dst + i, &w, sizeof(w));
  }
  for (; i < n; ++i)
    dst[i] = static_cast<char>(*reinterpret_cast<const volatile uint8_t*>(src + i));
}

}  // namespace

void Journal::notify_locked() {
  const uint64_t one = 1;
  for (int fd : listeners_) (void)!::write(fd, &one, sizeof(one));
}

void Journal::advance_stable(uint64_t lsn) {
  raise_to(stable_lsn_, lsn);
  std::lock_guard<std::mutex> lock(mu_);
  notify_locked();
}

void Journal::fail(const Status& status) {
  log::error("journal: {}; the node acknowledges no more writes", status.to_string());
  std::lock_guard<std::mutex> lock(mu_);
  if (failed_.ok()) failed_ = status;
  notify_locked();  // the listeners wake and see health()
}

void Journal::sync_loop() {
  for (;;) {
    Log* log = nullptr;
    uint64_t target = 0;
    uint64_t bytes = 0;
    {
      std::unique_lock<std::mutex> lock(mu_);
      sync_cv_.wait(lock, [&] {
        return stopping_ || !failed_.ok() || appended_lsn_.load() > stable_lsn_.load();
      });
      if (stopping_ || !failed_.ok()) return;
      log = live_;
      target = appended_lsn_.load();
      bytes = log->bytes();
    }
    // A switch to the other log syncs this one first, so every record up to target is either
    // in `log` or already stable.
    if (Status s = log->sync(); !s.ok()) return fail(s);
    syncs_.fetch_add(1);
    synced_bytes_.store(bytes);
    advance_stable(target);
  }
}

void Journal::checkpoint_loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      checkpoint_cv_.wait(lock, [&] {
        return stopping_ || (failed_.ok() && live_->bytes() >= options_.checkpoint_log_bytes);
      });
      if (stopping_) return;
    }
    if (Status s = checkpoint(); !s.ok()) return fail(s);
  }
}

Status Journal::checkpoint() {
  const uint64_t start = now_ns();
  Files& f = *files_;
  const int next = 1 - f.live;
  // The other log is free: the last complete checkpoint holds everything it held. Emptied here,
  // outside every lock; rotate() only gives it the live log's numbering.
  FARMEM_TRY(f.logs[next]->reset());
  std::vector<uint64_t> dirty;
  uint64_t start_lsn = 0;
  Status rotated;
  const std::string snapshot = owner_.snapshot([&] { rotate(&dirty, &start_lsn, &rotated); });
  FARMEM_TRY(rotated);
  // A failure from here on leaves records only in the old log, which the next checkpoint would
  // reset: the caller fails the journal instead of retrying.
  FARMEM_TRY(write_checkpoint(generation_.load() + 1, dirty, start_lsn, snapshot));
  checkpoints_.fetch_add(1);
  last_checkpoint_us_.store((now_ns() - start) / 1000);
  return OkStatus();
}

// Under the owner's lock: nothing appends while the live log changes.
void Journal::rotate(std::vector<uint64_t>* dirty, uint64_t* start_lsn, Status* status) {
  std::lock_guard<std::mutex> lock(mu_);
  Files& f = *files_;
  *status = live_->sync();  // every record of the old log is stable before the switch
  if (!status->ok()) return;
  raise_to(stable_lsn_, live_->next_lsn() - 1);
  notify_locked();
  const int next = 1 - f.live;
  f.logs[next]->continue_from(live_->next_lsn());
  *start_lsn = live_->next_lsn();
  f.live = next;
  live_ = f.logs[next].get();
  dirty->assign(dirty_.size(), 0);
  dirty->swap(dirty_);
}

Status Journal::write_checkpoint(uint64_t generation, const std::vector<uint64_t>& dirty,
                                 uint64_t start_lsn, std::string_view snapshot) {
  Files& f = *files_;
  const bool power = options_.durability == Durability::kPower;
  std::string copy(kChunkBytes, '\0');
  for (uint64_t w = 0; w < dirty.size(); ++w) {
    for (uint64_t bits = dirty[w]; bits != 0; bits &= bits - 1) {
      const uint64_t chunk = w * 64 + std::countr_zero(bits);
      const uint64_t offset = chunk * kChunkBytes;
      const uint64_t n = std::min<uint64_t>(kChunkBytes, region_.size() - offset);
      copy_racy(copy.data(), &region_[offset], n);
      FARMEM_TRY(f.image->write_at(offset, std::string_view(copy.data(), n)));
    }
    image_chunks_[w] |= dirty[w];
  }
  if (power) {
    FARMEM_TRY(f.image->sync());
    // A copied chunk may hold bytes of a change in flight (an ADO's, a one-sided write) whose
    // repair was logged while the chunks were copied (an undo entry, an ordered persist): that
    // record is stable before the slot makes the image the state to recover from.
    Log* live = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      live = live_;
    }
    if (live != nullptr) FARMEM_TRY(live->sync());
  }
  const MetaHeader h{kChunkBytes, image_chunks_.size()};
  std::string meta(sizeof(h) + image_chunks_.size() * 8, '\0');
  std::memcpy(meta.data(), &h, sizeof(h));
  std::memcpy(meta.data() + sizeof(h), image_chunks_.data(), image_chunks_.size() * 8);
  meta.append(snapshot);
  File& meta_file = *f.meta[generation % 2];
  FARMEM_TRY(meta_file.truncate(0));
  FARMEM_TRY(meta_file.write_at(0, meta));
  if (power) FARMEM_TRY(meta_file.sync());
  CheckpointSlot slot{journal_format::kCheckpointMagic,
                      kFormatVersion,
                      generation,
                      start_lsn,
                      region_.size(),
                      meta.size(),
                      journal_format::hash(meta),
                      0};
  slot.checksum = journal_format::slot_checksum(slot);
  FARMEM_TRY(
      f.checkpoint->write_at((generation % 2) * journal_format::kSlotBytes,
                             std::string_view(reinterpret_cast<const char*>(&slot), sizeof(slot))));
  if (power) FARMEM_TRY(f.checkpoint->sync());
  generation_.store(generation);
  return OkStatus();
}

}  // namespace farmem::storage
