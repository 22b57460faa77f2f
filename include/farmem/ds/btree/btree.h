// BTree: an ordered key-value index in far memory, read and written with one-sided operations
// only (a B-link B+tree in Sherman's design, as SMART-BT runs it, without Sherman's known bugs).
// Memory nodes' CPUs do nothing on its data path (over TCP the node performs the one-sided
// operations it is sent, client/served_ops.h, and runs a scan's page walk as one call,
// ds/btree/served.h). Layout: ds/btree/layout.h, docs/formats/btree.md.
//
// Keys are byte strings of 1..256 bytes compared lexicographically (an integer key is its
// big-endian bytes); values are 0..256 KiB: up to inline_value_bytes in the leaf, larger ones in
// out-of-place KV blocks (ds/common/kv_block.h) the leaf points to. Pages (default 1 KiB) are
// allocated round-robin over every memory node.
//
// Operations are coroutines (plain code runs one with runtime::sync_wait):
//   get    - a warm lookup reads one page (the index cache gives the leaf)
//   insert - kAlreadyExists if the key is present
//   update - kNotFound if the key is absent
//   put    - insert or update
//   erase  - kNotFound if the key is absent
//   scan   - the pairs with from <= key < to (or the first `count` from `from`), in key order
//
// Readers take no lock: a page image is validated by its checksum and retried when torn.
// Writers lock a page (its lock word holds the writer's session id: a lease, ds/common/
// lease_lock.h) after queueing locally behind the handle's other coroutines (LocalLocks, HOCL),
// read it, and write the new image together with the unlock in one Batch (ordered by fences),
// preceded by a redo copy of the image so that a writer killed mid-write is repaired by the next
// client that takes its lock over. A full page splits B-link style: new right pages first,
// then the page itself (new high fence, sibling pointer), then the separator goes into the
// parent (a new root is published by CAS on the meta's root word). A leaf emptied by erase is
// unlinked: its left neighbour takes its range, its parent drops it, it is marked dead and freed
// after the grace period. A lock held by a live session that does not let go makes waiters fail
// with kTimedOut after lock_wait_ms; one held by an ended session is taken over.
//
// Memory: everything belongs to the tree's object on each node (ds/common/far_object.h);
// create() that fails part-way leaves nothing; destroy() returns all of it; a temporary tree
// (BTreeOptions::temporary) is destroyed with its creator's sessions.
//
// A BTree object is a per-thread handle: open one per thread with that thread's ThreadClient.
// Keys and values passed to an operation must stay alive until it completes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "farmem/client/thread_client.h"
#include "farmem/ds/btree/index_cache.h"
#include "farmem/ds/btree/layout.h"
#include "farmem/ds/btree/local_locks.h"
#include "farmem/ds/btree/served.h"
#include "farmem/ds/common/far_object.h"
#include "farmem/ds/common/object_heap.h"
#include "farmem/ds/common/procedure_support.h"
#include "farmem/ds/common/reclaimer.h"
#include "farmem/runtime/backoff.h"

namespace farmem::ds::btree {

struct BTreeOptions {
  uint32_t page_bytes = kDefaultPageBytes;                 // create only: power of two
  uint32_t inline_value_bytes = kDefaultInlineValueBytes;  // create only
  bool temporary = false;                                  // create only (see HashTableOptions)
  uint64_t cache_bytes = 16ull << 20;                      // index cache budget, 0 = none
  uint32_t max_handovers = 8;                              // HOCL: consecutive local hand-overs
  // A retired page or block is reused only after this. 0 = auto: 2 x op_timeout_ms + 1 s.
  uint64_t retire_grace_ms = 0;
  size_t max_retired = size_t{1} << 22;
  uint32_t max_attempts = 100000;  // retries of one step (torn reads, moved pages)
  // Longest wait for a page lock held by a live session (then kTimedOut). 0 = auto:
  // max(10 s, 4 x op_timeout_ms).
  uint64_t lock_wait_ms = 0;
  // How long a waiter (or a reader of a torn page) waits before asking the node whether the
  // lock holder's session is still open (and taking the lock over if not).
  uint64_t lease_check_ms = 20;
  bool unlink_empty_leaves = true;
  // On nodes whose one-sided operations are served anyway (TCP), a scan's page reads run on the
  // node, one call per node it crosses (ds/btree/served.h); false: one-sided on every transport.
  bool served_procedures = true;
};

struct BTreeStats {
  uint64_t gets = 0, inserts = 0, updates = 0, puts = 0, erases = 0, scans = 0;
  uint64_t scan_records = 0;
  uint64_t page_reads = 0;      // page images fetched, all operations
  uint64_t get_page_reads = 0;  // page images fetched by get
  uint64_t block_reads = 0;     // out-of-place values fetched
  uint64_t cache_hits = 0, cache_misses = 0, cache_invalidations = 0;
  uint64_t sibling_hops = 0;  // moved right (B-link) because a page split under us
  uint64_t restarts = 0;      // went back to the root (stale pointer, dead page)
  uint64_t torn_reads = 0;    // checksum mismatches, retried
  uint64_t local_waits = 0, handovers = 0;
  uint64_t lock_retries = 0;  // failed remote lock CAS attempts
  uint64_t takeovers = 0;     // locks taken from ended sessions
  uint64_t repairs = 0;       // pages restored from a dead writer's redo copy
  uint64_t splits = 0, root_growths = 0;
  uint64_t unlinked = 0;  // empty leaves unlinked (and retired)
  uint64_t retired = 0, reclaimed = 0;
  uint64_t served_calls = 0;      // served scan calls (each one round trip)
  uint64_t served_pages = 0;      // pages the nodes read for them
  uint64_t served_fallbacks = 0;  // scans that went on one-sided (a torn page, a remote block)
};

class BTree {
 public:
  // Creates an empty tree (one leaf root) and publishes it under the root "btree/<name>".
  static runtime::Task<Result<std::unique_ptr<BTree>>> create(client::ThreadClient* client,
                                                              std::string name,
                                                              BTreeOptions options = {});
  // Opens a tree another process created (kNotFound if none; kInvalidArgument if the root does
  // not name a B+tree).
  static runtime::Task<Result<std::unique_ptr<BTree>>> open(client::ThreadClient* client,
                                                            std::string name,
                                                            BTreeOptions options = {});
  // Frees all of the named tree's far memory and its root. Precondition: no handle uses it.
  static runtime::Task<Status> destroy(client::ThreadClient* client, std::string name);
  ~BTree();

  runtime::Task<Result<bool>> get(std::string_view key, std::string* value);
  runtime::Task<Status> insert(std::string_view key, std::string_view value);
  runtime::Task<Status> update(std::string_view key, std::string_view value);
  runtime::Task<Status> put(std::string_view key, std::string_view value);
  runtime::Task<Status> erase(std::string_view key);
  // The pairs with from <= key < to, in order (to empty: no upper bound), at most `limit`
  // (0: no limit). Every key present during the whole scan is returned exactly once; no key
  // absent during the whole scan is returned.
  runtime::Task<Status> scan(std::string_view from, std::string_view to, size_t limit,
                             std::vector<std::pair<std::string, std::string>>* out);
  // Destroys this handle's tree; the handle is unusable afterwards.
  runtime::Task<Status> destroy();
  // Returns every retired page and block whose grace period has passed to the allocator.
  runtime::Task<void> reclaim(bool wait_for_all);

  const BTreeStats& stats() const;
  uint32_t page_bytes() const { return page_bytes_; }
  // Height of the tree as of this handle's last look at the root (1 = a single leaf).
  uint32_t height() const { return root_level_ + 1; }
  const IndexCache& cache() const { return cache_; }
  client::ThreadClient& client() { return *client_; }
  // Diagnostic walk of the whole tree (every level, every page, by sibling pointers): checks
  // fences, order and child links. Ok, or kInternal naming the first broken invariant; *pages
  // receives the live page count per level (leaves first).
  runtime::Task<Status> check(std::vector<uint64_t>* pages);

  // Test hooks: the next write-back stops after writing the redo copy and half of the page (as
  // if its client died there), leaving the lock held: kCancelled.
  void set_die_mid_write_for_test(bool on) { die_mid_write_ = on; }

 private:
  // A page-sized buffer from the handle's pool, returned when it goes out of scope.
  class BufRef {
   public:
    explicit BufRef(BTree* t) : t_(t) {
      if (t->free_bufs_.empty()) {
        p_.reset(new char[t->page_bytes_]);
      } else {
        p_ = std::move(t->free_bufs_.back());
        t->free_bufs_.pop_back();
      }
    }
    BufRef(const BufRef&) = delete;
    BufRef& operator=(const BufRef&) = delete;
    ~BufRef() { t_->free_bufs_.push_back(std::move(p_)); }
    char* get() { return p_.get(); }

   private:
    BTree* t_;
    std::unique_ptr<char[]> p_;
  };
  enum class Via { kRoot, kHint };
  enum class Mode { kInsert, kUpdate, kPut };

  BTree(client::ThreadClient* client, BTreeOptions options, FarObject object, uint32_t page_bytes,
        uint32_t inline_bytes, uint64_t tree_id);
  Status check_key(std::string_view key) const;

  // The state one operation's read steps share: the round trips it waited on (page and block
  // reads; get reports them in BTreeStats::get_page_reads, the other operations do not).
  struct OpContext {
    uint32_t round_trips = 0;
  };

  // ---- reading (btree.cc); each page or block read counts in op.round_trips
  runtime::Task<Status> read_page(OpContext& op, GlobalAddress a, char* buf);
  // Reads a whole page image at `a` into buf and parses it; retries torn images with backoff and
  // repairs a page whose writer died (taking its lock over). *foreign: not a live page of this
  // tree any more (a stale pointer): the caller goes back to the root.
  // locked: the caller holds the page's lock (a torn image is then an error, not a wait).
  runtime::Task<Status> fetch(OpContext& op, GlobalAddress a, char* buf, PageView* v, bool* foreign,
                              bool locked = false);
  runtime::Task<Status> refresh_root(OpContext& op);
  // Finds the page at `level` covering key: from the index cache (level 0) or the root, moving
  // right past splits. *addr and *v (in buf) are the page. kNotFound if the tree is lower than
  // `level` (the caller grows it).
  runtime::Task<Status> locate(OpContext& op, std::string_view key, uint32_t level, char* buf,
                               GlobalAddress* addr, PageView* v);
  runtime::Task<Status> read_value(OpContext& op, const PageView& v, uint32_t i,
                                   std::string* value);
  // The pairs with next <= key < to (limit counts all of *out), appended to *out by reading
  // pages one-sided.
  runtime::Task<Status> scan_one_sided(OpContext& op, std::string next, std::string_view to,
                                       size_t limit,
                                       std::vector<std::pair<std::string, std::string>>* out);

  // ---- the served scan (served.cc)
  bool served_node(uint16_t node) const;
  // Scans from *next by served calls while the pages lie on served nodes. *done: the scan is
  // complete; else every key below *next is in *out and the caller goes on one-sided.
  runtime::Task<Status> served_scan(OpContext& op, std::string* next, std::string_view to,
                                    size_t limit,
                                    std::vector<std::pair<std::string, std::string>>* out,
                                    bool* done);
  // One call at `start`; appends its records, moves *next on and learns its level-1 page.
  runtime::Task<Result<ServedScanResult>> call_scan(
      OpContext& op, GlobalAddress start, bool want_index, std::string* next, std::string_view to,
      size_t limit, std::vector<std::pair<std::string, std::string>>* out);
  Result<ServedScanResult> read_scan_result(uint16_t node, std::string_view body, std::string* next,
                                            std::vector<std::pair<std::string, std::string>>* out);

  // ---- locks and write-back (page_lock.cc)
  runtime::Task<Status> lock_page(GlobalAddress page);
  // Unlock without writing (hand over to a local waiter when there is one).
  runtime::Task<Status> unlock_page(GlobalAddress page);
  // Finds and locks the page at `level` covering key, with its current image in buf.
  runtime::Task<Status> lock_covering(std::string_view key, uint32_t level, char* buf,
                                      GlobalAddress* addr, PageView* v);
  // Writes a complete image (page_bytes) to a locked page: redo copy, body, then unlock (or
  // hand over) in one ordered batch.
  runtime::Task<Status> write_back(GlobalAddress page, const char* image, bool unlock);
  // write_back's steps on a durable node: the redo stable before the page changes, the page
  // logged after (page_lock.cc); `release` writes the lock word free at the end.
  runtime::Task<Status> write_back_durable(GlobalAddress page, GlobalAddress slot,
                                           const char* image, size_t n, bool release);
  // Steps 3-4 of a write-back (and a repair): the image's n bytes from kWriteBackFrom into the
  // page, then `redo` cleared; logged (not waiting for the sync) when the node is durable.
  runtime::Task<Status> write_page_clear_redo(GlobalAddress page, const char* image, size_t n);
  // After taking a lock over from an ended session: restores the page from its redo copy.
  runtime::Task<Status> repair(GlobalAddress page);

  // ---- leaf writes (write.cc)
  runtime::Task<Result<GlobalAddress>> new_page();
  runtime::Task<Status> write_leaf(std::string_view key, std::string_view value, Mode mode);
  runtime::Task<Result<GlobalAddress>> write_block(GlobalAddress near, std::string_view key,
                                                   std::string_view value, uint64_t* bytes);

  // ---- splits (split.cc)
  // Writes a locked page's draft, splitting it when it does not fit, unlocks, and inserts the
  // separators of new pages into the parent level.
  runtime::Task<Status> store(GlobalAddress page, const PageDraft& d);
  runtime::Task<Status> insert_separator(uint32_t level, std::string sep, GlobalAddress child,
                                         GlobalAddress left);
  // true: published a new root; false: another client grew the tree first.
  runtime::Task<Result<bool>> grow_root(GlobalAddress old_root, uint32_t level,
                                        const std::string& sep, GlobalAddress child);

  // ---- unlinking empty leaves (unlink.cc)
  runtime::Task<Status> unlink_leaf(GlobalAddress page, std::string low);
  // The leaf whose sibling is `page` (low fence `low`), by descending towards the keys just
  // below `low`.
  runtime::Task<Status> left_neighbour(std::string_view low, GlobalAddress page, char* buf,
                                       GlobalAddress* left);
  uint64_t lock_wait_ns() const;

  client::ThreadClient* client_;
  BTreeOptions options_;
  FarObject object_;
  ObjectHeap heap_;
  Reclaimer reclaimer_;
  uint32_t page_bytes_;
  uint32_t inline_bytes_;
  uint64_t tree_id_;
  GlobalAddress meta_;
  GlobalAddress root_;       // as last read from the meta
  uint32_t root_level_ = 0;  // level of root_ when it was read
  IndexCache cache_;
  LocalLocks locks_;
  std::vector<uint16_t> nodes_;  // sorted node ids, pages go round-robin
  uint32_t next_node_ = 0;
  std::vector<std::unique_ptr<char[]>> free_bufs_;
  std::vector<std::vector<GlobalAddress>> free_logs_;  // per node: redo slots, reused
  bool die_mid_write_ = false;
  ProcedureSupport procedures_;  // nodes that answered they have none
  uint32_t record_hint_ = 64;    // reply bytes a served scan makes room for per record
  mutable BTreeStats stats_;
};

}  // namespace farmem::ds::btree
