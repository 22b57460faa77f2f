// OpAwaitable: one one-sided operation (read, write, CAS, FAA) of a ThreadClient.
//
// Created by ThreadClient::read/write/cas/faa (thread_client.h, which states what the
// operations guarantee); co_await it once, right away: `Status s = co_await c.read(a, buf, n);`.
// await_ready takes a throttle credit (or suspends in the throttle's queue until one is free),
// paces the client (ThreadClient::pace) and posts on the node's path:
//   * direct access (shared memory mapped here): a write is done at once; a read prefetches its
//     first cache lines and a CAS/FAA prefetches its line for writing, then the operation yields
//     once if other coroutines are ready (so that their cache misses overlap) and is performed
//     in await_resume;
//   * served (TCP): added to the thread's ServedLane for the node, which sends the operations
//     of a round in one kMemOps message;
//   * otherwise UCX (get, put + flush, atomics), completing through a fabric::Completion.
// await_resume returns the status, releases the credit and counts the operation.
// Thread safety: the owning ThreadClient's thread only.
#pragma once

#include <coroutine>
#include <cstddef>
#include <cstdint>

#include "farmem/client/global_address.h"
#include "farmem/client/served_ops.h"
#include "farmem/common/status.h"
#include "farmem/fabric/completion.h"
#include "farmem/fabric/endpoint.h"
#include "farmem/runtime/throttle.h"

namespace farmem::client {

class ThreadClient;

enum class OpKind : uint8_t { kRead, kWrite, kCas, kFaa };

class [[nodiscard]] OpAwaitable {
 public:
  OpAwaitable(ThreadClient* c, OpKind kind, GlobalAddress addr, void* buf, size_t bytes,
              uint64_t expected, uint64_t desired, uint64_t* result, uint64_t deadline_ns);
  OpAwaitable(const OpAwaitable&) = delete;
  OpAwaitable& operator=(const OpAwaitable&) = delete;

  bool await_ready();
  void await_suspend(std::coroutine_handle<> h);
  Status await_resume();

 private:
  static void on_complete(fabric::Completion* c);
  static void on_credit(runtime::Throttle::Waiter* w);
  void post();
  bool post_direct(fabric::Endpoint* ep, GlobalAddress addr);
  void post_served(uint16_t node);
  void finish_deferred();

  ThreadClient* client_;
  OpKind kind_;
  bool posted_ = false;
  bool credit_ = false;
  uint8_t* deferred_ = nullptr;  // direct read or atomic posted, performed in await_resume
  GlobalAddress addr_;
  void* buf_;
  size_t bytes_;
  uint64_t expected_;
  uint64_t* result_;
  uint64_t deadline_ns_;  // 0: the client's op_timeout_ms
  fabric::Completion completion_;
  runtime::Throttle::Waiter waiter_;
  std::coroutine_handle<> handle_;
};

}  // namespace farmem::client
