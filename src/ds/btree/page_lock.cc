// BTree page locks (HOCL: a local queue in front of the remote lease word) and the write-back
// that stores a locked page with a redo copy and releases it; repair of a page whose writer died
// mid-write (btree.h, docs/formats/btree.md).
#include <fmt/format.h>

#include "farmem/common/check.h"
#include "farmem/common/clock.h"
#include "farmem/ds/btree/btree.h"
#include "farmem/ds/common/durable.h"
#include "farmem/ds/common/lease_lock.h"

namespace farmem::ds::btree {

using client::Batch;
using runtime::Task;

// ------------------------------------------------------------------------------------------
// Locks

Task<Status> BTree::lock_page(GlobalAddress page) {
  const bool handed = co_await locks_.enter(page.pack());
  if (handed) co_return OkStatus();
  const uint64_t me = client_->session_id(page.node());
  runtime::Backoff backoff(client_->backoff_policy(), client_->scheduler());
  const uint64_t since = now_ns();
  uint64_t checked = since;
  const uint64_t lease_ns = options_.lease_check_ms * 1'000'000;
  for (;;) {
    uint64_t found = 0;
    Status st = co_await client_->cas(page, 0, me, &found);
    if (!st.ok()) {
      locks_.leave(page.pack(), false);
      co_return st;
    }
    if (found == 0) {
      FARMEM_ASSERT(me != 0, "a page's lock word holds its holder's session id, never 0");
      backoff.succeeded();
      co_return OkStatus();
    }
    ++stats_.lock_retries;
    const uint64_t now = now_ns();
    if (now - checked >= lease_ns) {
      checked = now;
      LeaseLock lease(client_, page, 0);
      auto attempt = co_await lease.try_acquire();
      if (!attempt.ok()) {
        locks_.leave(page.pack(), false);
        co_return attempt.status();
      }
      if (attempt->acquired) {
        if (!attempt->taken_over) co_return OkStatus();
        ++stats_.takeovers;
        Status rs = co_await repair(page);
        if (!rs.ok()) {
          Status us = co_await unlock_page(page);
          (void)us;
          co_return rs;
        }
        co_return OkStatus();
      }
      found = attempt->holder;
    }
    if (now - since > lock_wait_ns()) {
      locks_.leave(page.pack(), false);
      co_return TimedOut(fmt::format(
          "B+tree page {}:{:#x} has been locked by live session {} for {} ms (stopped or very "
          "slow); the page is intact",
          page.node(), page.offset(), found, (now - since) / 1'000'000));
    }
    co_await backoff.retry();
  }
}

Task<Status> BTree::unlock_page(GlobalAddress page) {
  const bool hand = locks_.will_hand_over(page.pack());
  Status st;
  if (!hand) {
    uint64_t zero = 0;
    st = co_await client_->write(page, &zero, 8);
  }
  locks_.leave(page.pack(), hand);
  co_return st;
}

Task<Status> BTree::lock_covering(std::string_view key, uint32_t level, char* buf,
                                  GlobalAddress* addr, PageView* v) {
  OpContext op;
  GlobalAddress a;
  bool located = false;
  for (uint32_t attempt = 0; attempt < options_.max_attempts; ++attempt) {
    if (!located) {
      Status st = co_await locate(op, key, level, buf, &a, v);
      FARMEM_CO_TRY(st);
    }
    located = false;
    Status st = co_await lock_page(a);
    FARMEM_CO_TRY(st);
    bool foreign = false;
    st = co_await fetch(op, a, buf, v, &foreign, /*locked=*/true);
    if (!st.ok()) {
      Status us = co_await unlock_page(a);
      (void)us;
      co_return st;
    }
    if (!foreign && !v->below(key) && !v->beyond(key) && v->level() == level) {
      *addr = a;
      co_return OkStatus();
    }
    Status us = co_await unlock_page(a);
    FARMEM_CO_TRY(us);
    if (!foreign && v->beyond(key) && v->level() == level && v->sibling() != 0) {
      ++stats_.sibling_hops;  // split since we located it: the right neighbour covers key
      a = GlobalAddress::unpack(v->sibling());
      located = true;
      continue;
    }
    ++stats_.restarts;
    if (level == 0) cache_.invalidate(key);
  }
  co_return RetriesExhausted("B+tree lock (the page kept moving)", options_.max_attempts);
}

// ------------------------------------------------------------------------------------------
// Write-back with a redo copy, and repair

Task<Status> BTree::write_back(GlobalAddress page, const char* image, bool unlock) {
  const uint16_t node = page.node();
  GlobalAddress slot;
  if (!free_logs_[node].empty()) {
    slot = free_logs_[node].back();
    free_logs_[node].pop_back();
  } else {
    auto s = co_await heap_.allocate(node, page_bytes_);
    if (!s.ok()) {
      if (unlock) {
        Status us = co_await unlock_page(page);
        (void)us;
      }
      co_return s.status();
    }
    slot = *s;
  }
  PageHeader h;
  std::memcpy(&h, image, sizeof(h));
  FARMEM_ASSERT(h.magic == kPageMagic && h.tree_id == tree_id_ &&
                    sizeof(PageHeader) + uint32_t{h.used} <= page_bytes_,
                "a page image this client writes is one of its tree's and fits the page");
  const size_t n = write_back_bytes(h.used);
  const bool hand = unlock && locks_.will_hand_over(page.pack());
  const uint64_t slot_word = slot.pack();
  const uint64_t zero = 0;
  Status st;
  if (node_durable(client_, node)) {
    st = co_await write_back_durable(page, slot, image, n, unlock && !hand);
    if (die_mid_write_) co_return st;  // the test hook's writer is dead: it cleans nothing up
  } else {
    Batch b(*client_);
    (void)b.write(slot, image + kWriteBackFrom, n);
    (void)b.fence();
    (void)b.write(page + kRedoWordAt, &slot_word, 8);
    (void)b.fence();
    if (die_mid_write_) {
      (void)b.write(page + kWriteBackFrom, image + kWriteBackFrom, n / 2);
      st = co_await b.wait();
      co_return Cancelled("test hook: the writer died in the middle of a page write");
    }
    (void)b.write(page + kWriteBackFrom, image + kWriteBackFrom, n);
    (void)b.fence();
    (void)b.write(page + kRedoWordAt, &zero, 8);
    if (unlock && !hand) {
      (void)b.fence();
      (void)b.write(page + kLockWordAt, &zero, 8);
    }
    st = co_await b.wait();
  }
  free_logs_[node].push_back(slot);
  if (unlock) locks_.leave(page.pack(), hand);
  co_return st;
}

// On a durable node the redo copy and the word naming it are stable before the page changes, so
// whatever a reader sees of the new page survives a crash (recovery replays the redo); the page
// and the cleared word are then logged without waiting for the sync (the next waiting persist
// to the node, the redo of its next write among them, covers them, the log keeping its order).
// The lock word is not persisted (a lock of the node's earlier life belongs to an ended session).
Task<Status> BTree::write_back_durable(GlobalAddress page, GlobalAddress slot, const char* image,
                                       size_t n, bool release) {
  const uint64_t slot_word = slot.pack();
  const uint64_t zero = 0;
  {
    Batch b(*client_);
    (void)b.write(slot, image + kWriteBackFrom, n);
    (void)b.fence();
    (void)b.write(page + kRedoWordAt, &slot_word, 8);
    FARMEM_CO_TRY(co_await b.wait());
  }
  // (Named lists: g++ 12 cannot keep a braced list alive across co_await.)
  const std::vector<PersistRange> redo{{slot, n}, {page + kRedoWordAt, 8}};
  FARMEM_CO_TRY(co_await persist_all(client_, redo));
  if (die_mid_write_) {
    (void)co_await client_->write(page + kWriteBackFrom, image + kWriteBackFrom, n / 2);
    co_return Cancelled("test hook: the writer died in the middle of a page write");
  }
  FARMEM_CO_TRY(co_await write_page_clear_redo(page, image, n));
  if (release) FARMEM_CO_TRY(co_await client_->write(page + kLockWordAt, &zero, 8));
  co_return OkStatus();
}

Task<Status> BTree::write_page_clear_redo(GlobalAddress page, const char* image, size_t n) {
  const uint64_t zero = 0;
  {
    Batch b(*client_);
    (void)b.write(page + kWriteBackFrom, image + kWriteBackFrom, n);
    (void)b.fence();
    (void)b.write(page + kRedoWordAt, &zero, 8);
    FARMEM_CO_TRY(co_await b.wait());
  }
  const std::vector<PersistRange> written{{page + kWriteBackFrom, n}, {page + kRedoWordAt, 8}};
  co_return co_await persist_all(client_, written, /*ordered=*/true);
}

Task<Status> BTree::repair(GlobalAddress page) {
  uint64_t redo = 0;
  Status st = co_await client_->read(page + kRedoWordAt, &redo, 8);
  if (!st.ok() || redo == 0) co_return st;
  BufRef buf(this);
  std::memset(buf.get(), 0, kWriteBackFrom);
  st = co_await client_->read(GlobalAddress::unpack(redo), buf.get() + kWriteBackFrom,
                              page_bytes_ - kWriteBackFrom);
  FARMEM_CO_TRY(st);
  PageView v;
  if (v.parse(buf.get(), page_bytes_, tree_id_) != PageView::Check::kWhole) {
    co_return Internal(
        fmt::format("B+tree page {}:{:#x}: its dead writer's redo copy is not a "
                    "whole page",
                    page.node(), page.offset()));
  }
  st = co_await write_page_clear_redo(page, buf.get(), write_back_bytes(v.header().used));
  if (st.ok()) ++stats_.repairs;
  co_return st;
}

}  // namespace farmem::ds::btree
