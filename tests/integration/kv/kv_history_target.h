// A kv pool as history.h's apply_op sees a key-value structure. The kv store has no
// update-if-present (callers map dice 7 to an insert); an insert is a put with kPutCreateOnly or,
// every other time, kPutDontOverwrite, whose kept value counts as kAlreadyExists. Shared by the
// kv client's and the durable kv pool's linearizability tests.
#pragma once

#include <string>
#include <string_view>

#include "farmem/kv/pool.h"
#include "farmem/runtime/task.h"

namespace farmem::testing {

class KvHistoryTarget {
 public:
  explicit KvHistoryTarget(kv::Pool* p) : p_(p) {}
  runtime::Task<Result<bool>> get(std::string_view key, std::string* value) {
    return p_->get(key, value);
  }
  runtime::Task<Status> put(std::string_view key, std::string_view value) {
    return p_->put(key, value);
  }
  runtime::Task<Status> erase(std::string_view key) { return p_->erase(key); }
  runtime::Task<Status> insert(std::string_view key, std::string_view value) {
    if (++inserts_ % 2 == 0) {
      Status s = co_await p_->put(key, value, kv::wire::kPutCreateOnly);
      co_return s;
    }
    bool existed = false;
    Status s = co_await p_->put(key, value, kv::wire::kPutDontOverwrite, &existed);
    if (s.ok() && existed) co_return AlreadyExists("kept the existing value");
    co_return s;
  }
  runtime::Task<Status> update(std::string_view, std::string_view) {
    co_return Internal("the kv store has no update-if-present");
  }

 private:
  kv::Pool* p_;
  uint64_t inserts_ = 0;
};

}  // namespace farmem::testing
