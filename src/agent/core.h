// AgentCore: the agent's shared state and threads (agent.h describes the design).
// Internal to src/agent.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "farmem/agent/cache.h"
#include "farmem/agent/options.h"
#include "farmem/agent/wire.h"
#include "farmem/client/cluster.h"
#include "farmem/client/global_address.h"
#include "farmem/common/result.h"

namespace farmem::agent {

// One host request handed to the forwarding thread.
struct Job {
  wire::Op op = wire::Op::kRead;
  GlobalAddress addr;
  uint64_t bytes = 0;
  std::vector<uint8_t> data;  // kWrite
  bool acked = false;         // kWrite: answered already (asynchronous write-back)
  bool use_dynamic = true;    // kRead: may use the dynamic cache (wire::kReadNoDynamic clear)
  uint32_t worker = 0;        // the server worker holding the Responder
  uint64_t token = 0;
};

// The answer to one Job, delivered to its worker's outbox.
struct Done {
  uint64_t token = 0;
  Status status;
  std::vector<uint8_t> data;    // read data (a miss)
  std::optional<CacheHit> hit;  // or cached bytes
  uint32_t bytes = 0;
};

// One one-sided operation on a memory node.
struct NodeOp {
  GlobalAddress addr;
  uint8_t* buf = nullptr;
  uint32_t bytes = 0;
  Status status;
};

struct Outbox {
  std::mutex mu;
  std::deque<Done> done;  // (mu)
  int event_fd = -1;
};

struct HostCounters {
  std::atomic<uint64_t> messages_in{0}, bytes_in{0}, messages_out{0}, bytes_out{0};
};

class AgentCore {
 public:
  AgentCore(const AgentOptions& options, std::unique_ptr<client::Cluster> cluster);
  ~AgentCore();
  // Starts the threads; returns once each has connected to the memory nodes (or failed).
  Status start();
  void stop();

  // Queues a job (any worker thread). kResourceExhausted when the queue is full. A write is
  // marked acked (and must be answered by the caller at once) when async write-back is on and
  // the pending bytes allow it.
  Status submit(Job* job);
  // submit() for each job, under one lock with one wake-up, so that the requests a worker took
  // in one loop round reach the forwarding thread together (one forwarding round). (*status)[i]
  // is job i's outcome; jobs[i].acked as for submit().
  void submit_all(std::vector<Job>* jobs, std::vector<Status>* status);
  Outbox& outbox(uint32_t worker) { return *outboxes_[worker]; }
  wire::StatsResponse stats() const;
  const AgentOptions& options() const { return options_; }
  HostCounters& host() { return host_; }

 private:
  void forward_loop();
  void stage_loop();
  // One forwarding round over the jobs taken from the queue, in steps.
  struct RoundWork;
  void round(std::vector<Job>& jobs);
  void plan_round(std::vector<Job>& jobs, RoundWork* w);
  void write_round(std::vector<Job>& jobs, RoundWork* w);
  void read_round(RoundWork* w);
  void answer_round(std::vector<Job>& jobs, RoundWork* w);
  void queue_stages(const std::vector<GlobalAddress>& stage);
  // Posts ops to the memory nodes (grouped per node into Batches when `aggregate`) and waits.
  void run_node_ops(std::vector<NodeOp>* ops, bool write, bool aggregate);
  Status load_static(GlobalAddress addr, uint64_t bytes);
  Status read_entry(GlobalAddress base, std::vector<uint8_t>* data);
  void deliver(uint32_t worker, Done done);
  Status submit_locked(Job* job);  // requires mu_
  void answer_flushes();
  void update_bandwidths(uint64_t now_ns);

  const AgentOptions options_;
  std::unique_ptr<client::Cluster> cluster_;
  AgentCache cache_;
  HostCounters host_;
  std::vector<std::unique_ptr<Outbox>> outboxes_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;                  // (mu_) jobs for the forwarding thread
  std::deque<GlobalAddress> stage_queue_;  // (mu_) entries to stage
  std::condition_variable stage_cv_;
  bool stopping_ = false;  // (mu_)
  std::atomic<uint64_t> pending_write_bytes_{0};
  std::atomic<uint64_t> stage_done_{0};  // stage jobs finished (staging workers)
  uint64_t stage_queued_ = 0;            // stage jobs queued so far (forwarding thread)

  std::vector<std::thread> threads_;
  std::mutex start_mu_;
  std::condition_variable start_cv_;
  uint32_t started_ = 0;  // (start_mu_)
  Status start_status_;   // (start_mu_)

  // Forwarding thread only.
  client::ThreadClient* tc_ = nullptr;
  // Flushes waiting for the stage jobs queued before them (the count they wait for).
  std::vector<std::pair<Job, uint64_t>> flushes_;
  Status write_error_;  // first write-back error since the last flush

  // Counters (atomics: read by stats()).
  std::atomic<uint64_t> node_reads_{0}, node_read_bytes_{0}, node_writes_{0}, node_write_bytes_{0},
      node_batches_{0}, rounds_{0}, host_reads_{0}, aggregated_{0};
  std::atomic<uint64_t> host_bw_{0}, node_bw_{0};
  uint64_t bw_window_start_ns_ = 0, bw_window_host_bytes_ = 0;
};

}  // namespace farmem::agent
