#include "farmem/agent/client.h"

#include <cstring>

#include "farmem/runtime/when_all.h"

namespace farmem::agent {
namespace {

template <typename T>
std::vector<uint8_t> bytes_of(const T& v) {
  std::vector<uint8_t> out(sizeof(T));
  std::memcpy(out.data(), &v, sizeof(T));
  return out;
}

}  // namespace

Result<std::unique_ptr<AgentClient>> AgentClient::create(client::Cluster& agent) {
  if (agent.nodes().size() != 1) {
    return InvalidArgument("agent client: the cluster must list exactly the agent");
  }
  auto tc = agent.thread_client();
  FARMEM_TRY(tc);
  return std::unique_ptr<AgentClient>(new AgentClient(*tc, agent.nodes()[0].node_id));
}

runtime::Task<Status> AgentClient::call(wire::Op op, std::vector<uint8_t> request, void* reply,
                                        uint32_t capacity, uint32_t* reply_bytes) {
  const uint64_t deadline =
      client::ThreadClient::deadline_in_ms(tc_->cluster().config().options.op_timeout_ms);
  uint64_t wait_ns = 20'000;
  for (;;) {
    ++traffic_.messages;
    traffic_.bytes_out += request.size();
    uint32_t got = 0;
    Status s = co_await tc_->rpc(node_, static_cast<uint16_t>(op), request.data(), request.size(),
                                 reply, capacity, &got);
    if (s.code() != StatusCode::kResourceExhausted || now_ns() + wait_ns > deadline) {
      traffic_.bytes_in += got;
      if (reply_bytes != nullptr) *reply_bytes = got;
      co_return s;
    }
    co_await tc_->scheduler().sleep_for_ns(wait_ns);
    wait_ns = std::min<uint64_t>(wait_ns * 2, 2'000'000);
  }
}

runtime::Task<Status> AgentClient::read(GlobalAddress addr, void* dst, uint32_t bytes,
                                        uint32_t flags) {
  if (bytes == 0 || bytes > wire::kMaxReadBytes) {
    co_return InvalidArgument("agent read: size out of range");
  }
  wire::ReadRequest q{addr.pack(), bytes, flags};
  uint32_t got = 0;
  Status s = co_await call(wire::Op::kRead, bytes_of(q), dst, bytes, &got);
  if (s.ok() && got != bytes) s = ProtocolError("agent read: short reply");
  co_return s;
}

runtime::Task<Status> AgentClient::write(GlobalAddress addr, const void* src, uint64_t bytes) {
  std::vector<runtime::Task<Status>> parts;
  const auto* p = static_cast<const uint8_t*>(src);
  for (uint64_t off = 0; off < bytes; off += wire::kMaxWriteBytes) {
    const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(wire::kMaxWriteBytes, bytes - off));
    wire::WriteRequest q{(addr + off).pack(), n, 0};
    std::vector<uint8_t> msg(sizeof(q) + n);
    std::memcpy(msg.data(), &q, sizeof(q));
    std::memcpy(msg.data() + sizeof(q), p + off, n);
    parts.push_back(call(wire::Op::kWrite, std::move(msg), nullptr, 0, nullptr));
  }
  std::vector<Status> results = co_await runtime::when_all(std::move(parts));
  for (const Status& s : results) {
    FARMEM_CO_TRY(s);
  }
  co_return OkStatus();
}

runtime::Task<Status> AgentClient::flush() {
  co_return co_await call(wire::Op::kFlush, {}, nullptr, 0, nullptr);
}

runtime::Task<Status> AgentClient::pin_static(GlobalAddress addr, uint64_t bytes) {
  wire::PinRequest q{addr.pack(), bytes};
  co_return co_await call(wire::Op::kPinStatic, bytes_of(q), nullptr, 0, nullptr);
}

runtime::Task<Status> AgentClient::invalidate(GlobalAddress addr, uint64_t bytes) {
  wire::PinRequest q{addr.pack(), bytes};
  co_return co_await call(wire::Op::kInvalidate, bytes_of(q), nullptr, 0, nullptr);
}

runtime::Task<Result<wire::StatsResponse>> AgentClient::stats() {
  wire::StatsResponse r{};
  uint32_t got = 0;
  Status s = co_await call(wire::Op::kStats, {}, &r, sizeof(r), &got);
  FARMEM_CO_TRY(s);
  if (got != sizeof(r)) co_return ProtocolError("agent stats: wrong reply size");
  co_return r;
}

runtime::Task<std::vector<Status>> AgentClient::read_many(std::vector<GlobalAddress> addrs,
                                                          std::vector<void*> dsts, uint32_t bytes) {
  std::vector<runtime::Task<Status>> parts;
  for (size_t i = 0; i < addrs.size() && i < dsts.size(); ++i) {
    parts.push_back(read(addrs[i], dsts[i], bytes));
  }
  co_return co_await runtime::when_all(std::move(parts));
}

}  // namespace farmem::agent
