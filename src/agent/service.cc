// The agent service: host requests in, answers out (agent.h). Handlers validate a request in
// full, queue it to the forwarding thread and keep its Responder; poll() answers from the
// worker's outbox.
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstring>
#include <unordered_map>

#include "core.h"
#include "farmem/agent/agent.h"
#include "farmem/client/cluster.h"

namespace farmem::agent {
namespace {

template <typename T>
Status parse(const memnode::Request& r, T* out, bool exact) {
  if (r.payload.size() < sizeof(T) || (exact && r.payload.size() != sizeof(T))) {
    return ProtocolError("agent: request has the wrong size");
  }
  std::memcpy(out, r.payload.data(), sizeof(T));
  return OkStatus();
}

class AgentWorker : public memnode::ServiceWorker {
 public:
  AgentWorker(const memnode::WorkerContext& c, std::shared_ptr<AgentCore> core)
      : context_(c), core_(std::move(core)), outbox_(core_->outbox(c.worker_index)) {
    if (c.host != nullptr) (void)c.watch_fd(outbox_.event_fd);
  }
  ~AgentWorker() override {
    if (context_.host != nullptr) context_.unwatch_fd(outbox_.event_fd);
  }

  void handle(memnode::Request& r, memnode::Responder responder) override {
    core_->host().messages_in++;
    core_->host().bytes_in += r.payload.size();
    Job job;
    Status s = parse_job(r, &job);
    if (!s.ok()) return answer(std::move(responder), s, nullptr, 0);
    if (job.op == wire::Op::kStats) {
      const wire::StatsResponse st = core_->stats();
      return answer(std::move(responder), OkStatus(), &st, sizeof(st));
    }
    job.worker = context_.worker_index;
    job.token = next_token_++;
    pending_.emplace(job.token, std::move(responder));
    incoming_.push_back(std::move(job));  // submitted together at the end of the loop round
  }

  // Requests taken but not yet submitted make the worker come back at once.
  uint64_t wake_at_ns() const override { return incoming_.empty() ? 0 : 1; }

  void poll(uint64_t now_ns) override {
    if (!incoming_.empty()) submit_incoming();
    uint64_t n;
    if (read(outbox_.event_fd, &n, sizeof(n)) != sizeof(n)) return;
    std::deque<Done> done;
    {
      std::lock_guard lock(outbox_.mu);
      done.swap(outbox_.done);
    }
    for (Done& d : done) {
      auto it = pending_.find(d.token);
      if (it == pending_.end()) continue;
      memnode::Responder responder = std::move(it->second);
      pending_.erase(it);
      if (d.hit) {
        answer(std::move(responder), d.status, d.hit->entry->data.data() + d.hit->offset, d.bytes);
      } else {
        answer(std::move(responder), d.status, d.data.data(), d.data.size());
      }
    }
  }

 private:
  void submit_incoming() {
    core_->submit_all(&incoming_, &status_);
    for (size_t i = 0; i < incoming_.size(); ++i) {
      if (status_[i].ok() && !incoming_[i].acked) continue;  // answered from the outbox
      auto it = pending_.find(incoming_[i].token);
      memnode::Responder responder = std::move(it->second);
      pending_.erase(it);
      answer(std::move(responder), status_[i], nullptr, 0);
    }
    incoming_.clear();
  }

  void answer(memnode::Responder responder, const Status& s, const void* data, size_t bytes) {
    core_->host().messages_out++;
    if (s.ok()) {
      core_->host().bytes_out += bytes;
      responder.ok(data, bytes);
    } else {
      responder.fail(s);
    }
  }

  Status parse_job(const memnode::Request& r, Job* job) {
    job->op = static_cast<wire::Op>(r.header.opcode);
    switch (job->op) {
      case wire::Op::kRead: {
        wire::ReadRequest q;
        FARMEM_TRY(parse(r, &q, true));
        if ((q.flags & ~wire::kReadFlagsKnown) != 0) {
          return ProtocolError("agent: reserved flags set");
        }
        if (q.bytes == 0 || q.bytes > wire::kMaxReadBytes) {
          return InvalidArgument("agent: read size out of range");
        }
        job->addr = GlobalAddress::unpack(q.address);
        job->bytes = q.bytes;
        job->use_dynamic = (q.flags & wire::kReadNoDynamic) == 0;
        return OkStatus();
      }
      case wire::Op::kWrite: {
        wire::WriteRequest q;
        FARMEM_TRY(parse(r, &q, false));
        if (q.flags != 0) return ProtocolError("agent: reserved flags set");
        if (q.bytes == 0 || q.bytes > wire::kMaxWriteBytes ||
            r.payload.size() != sizeof(q) + q.bytes) {
          return InvalidArgument("agent: write size out of range or not matching its data");
        }
        job->addr = GlobalAddress::unpack(q.address);
        job->bytes = q.bytes;
        job->data.assign(r.payload.begin() + sizeof(q), r.payload.end());
        return OkStatus();
      }
      case wire::Op::kPinStatic:
      case wire::Op::kInvalidate: {
        wire::PinRequest q;
        FARMEM_TRY(parse(r, &q, true));
        job->addr = GlobalAddress::unpack(q.address);
        job->bytes = q.bytes;
        return OkStatus();
      }
      case wire::Op::kFlush:
      case wire::Op::kStats:
        if (!r.payload.empty()) return ProtocolError("agent: request takes no payload");
        return OkStatus();
    }
    return InvalidArgument("agent: unknown opcode");
  }

  memnode::WorkerContext context_;
  std::shared_ptr<AgentCore> core_;
  Outbox& outbox_;
  std::unordered_map<uint64_t, memnode::Responder> pending_;
  std::vector<Job> incoming_;  // taken this loop round, not yet submitted
  std::vector<Status> status_;
  uint64_t next_token_ = 1;
};

class AgentService : public memnode::Service {
 public:
  explicit AgentService(std::shared_ptr<AgentCore> core) : core_(std::move(core)) {}
  std::string_view name() const override { return "agent"; }
  uint16_t first_opcode() const override { return wire::kFirstOpcode; }
  uint16_t last_opcode() const override { return wire::kLastOpcode; }
  std::unique_ptr<memnode::ServiceWorker> start_worker(const memnode::WorkerContext& c) override {
    return std::make_unique<AgentWorker>(c, core_);
  }

 private:
  std::shared_ptr<AgentCore> core_;
};

}  // namespace

Result<std::unique_ptr<Agent>> Agent::create(const AgentOptions& options,
                                             const client::ClusterConfig& memnodes) {
  FARMEM_TRY(options.validate());
  auto cluster = client::Cluster::connect(memnodes);
  FARMEM_TRY(cluster);
  std::unique_ptr<Agent> agent(new Agent());
  agent->core_ = std::make_shared<AgentCore>(options, std::move(*cluster));
  FARMEM_TRY(agent->core_->start());
  return agent;
}

Agent::~Agent() {
  if (core_) core_->stop();
}

std::shared_ptr<memnode::Service> Agent::service() { return std::make_shared<AgentService>(core_); }

wire::StatsResponse Agent::stats() const { return core_->stats(); }

}  // namespace farmem::agent
