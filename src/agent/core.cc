#include "core.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <numeric>

#include "farmem/client/thread_client.h"
#include "farmem/common/clock.h"
#include "farmem/common/log.h"
#include "farmem/runtime/task.h"

namespace farmem::agent {
namespace {

constexpr size_t kMaxRoundJobs = 1024;
constexpr size_t kMaxStageQueue = 256;
constexpr uint32_t kPieceBytes = 64 * 1024;  // entries are read in pieces of this size
constexpr uint64_t kBandwidthWindowNs = 100'000'000;

struct Group {
  std::unique_ptr<client::Batch> batch;
  std::vector<size_t> ops;
};

// Posts every op (one Batch per node per kMaxOps when aggregating, else one Batch per op waited
// for in turn) and stores each op's outcome.
runtime::Task<void> node_ops_task(client::ThreadClient* tc, std::vector<NodeOp>* ops, bool write,
                                  bool aggregate, uint64_t deadline_ns, uint64_t* batches) {
  std::vector<size_t> order(ops->size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [ops](size_t a, size_t b) {
    return (*ops)[a].addr.node() < (*ops)[b].addr.node();
  });
  std::vector<Group> groups;
  for (size_t i : order) {
    NodeOp& op = (*ops)[i];
    if (!aggregate || groups.empty() ||
        (*ops)[groups.back().ops.front()].addr.node() != op.addr.node() ||
        groups.back().ops.size() >= client::Batch::kMaxOps) {
      if (!aggregate && !groups.empty()) {  // one request at a time
        Status s = co_await groups.back().batch->wait();
        for (size_t j : groups.back().ops) {
          if ((*ops)[j].status.ok()) (*ops)[j].status = s;
        }
        groups.pop_back();
      }
      groups.push_back(Group{std::make_unique<client::Batch>(*tc, deadline_ns), {}});
      ++*batches;
    }
    groups.back().ops.push_back(i);
    Status s = write ? groups.back().batch->write(op.addr, op.buf, op.bytes)
                     : groups.back().batch->read(op.addr, op.buf, op.bytes);
    if (!s.ok()) op.status = s;
  }
  for (Group& g : groups) {
    Status s = co_await g.batch->wait();
    for (size_t j : g.ops) {
      if ((*ops)[j].status.ok()) (*ops)[j].status = s;
    }
  }
}

}  // namespace

AgentCore::AgentCore(const AgentOptions& options, std::unique_ptr<client::Cluster> cluster)
    : options_(options), cluster_(std::move(cluster)), cache_(options) {
  for (uint32_t i = 0; i < farmem::wire::kMaxServerWorkers; ++i) {
    outboxes_.push_back(std::make_unique<Outbox>());
    outboxes_.back()->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  }
}

AgentCore::~AgentCore() {
  stop();
  for (auto& o : outboxes_) {
    if (o->event_fd >= 0) close(o->event_fd);
  }
}

Status AgentCore::start() {
  for (auto& o : outboxes_) {
    if (o->event_fd < 0) return Internal("agent: eventfd failed");
  }
  const uint32_t n = 1 + options_.prefetch_workers;
  threads_.emplace_back([this] { forward_loop(); });
  for (uint32_t i = 0; i < options_.prefetch_workers; ++i) {
    threads_.emplace_back([this] { stage_loop(); });
  }
  std::unique_lock lock(start_mu_);
  start_cv_.wait(lock, [&] { return started_ == n; });
  return start_status_;
}

void AgentCore::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  stage_cv_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

Status AgentCore::submit(Job* job) {
  Status s;
  {
    std::lock_guard lock(mu_);
    s = submit_locked(job);
  }
  if (s.ok()) cv_.notify_one();
  return s;
}

void AgentCore::submit_all(std::vector<Job>* jobs, std::vector<Status>* status) {
  status->clear();
  {
    std::lock_guard lock(mu_);
    for (Job& j : *jobs) status->push_back(submit_locked(&j));
  }
  cv_.notify_one();
}

Status AgentCore::submit_locked(Job* job) {
  if (stopping_) return Unavailable("agent: stopping");
  if (queue_.size() >= options_.max_queued) {
    return ResourceExhausted("agent: request queue full, retry");
  }
  if (job->op == wire::Op::kWrite && options_.async_writeback &&
      pending_write_bytes_.load() + job->bytes <= options_.max_pending_write_bytes) {
    job->acked = true;
  }
  if (job->op == wire::Op::kWrite) pending_write_bytes_ += job->bytes;
  const bool acked = job->acked;
  const uint64_t token = job->token;
  queue_.push_back(std::move(*job));
  job->acked = acked;  // (the moved-from job still tells the caller)
  job->token = token;
  return OkStatus();
}

void AgentCore::deliver(uint32_t worker, Done done) {
  Outbox& o = *outboxes_[worker];
  {
    std::lock_guard lock(o.mu);
    o.done.push_back(std::move(done));
  }
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(o.event_fd, &one, sizeof(one));
}

void AgentCore::forward_loop() {
  auto tc = cluster_->thread_client();
  {
    std::lock_guard lock(start_mu_);
    if (!tc.ok() && start_status_.ok()) start_status_ = tc.status();
    ++started_;
  }
  start_cv_.notify_all();
  if (!tc.ok()) return;
  tc_ = *tc;
  std::vector<Job> jobs;
  for (;;) {
    jobs.clear();
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(1),
                   [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) break;
      while (!queue_.empty() && jobs.size() < kMaxRoundJobs) {
        jobs.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    if (!jobs.empty()) round(jobs);
    answer_flushes();
    tc_->check_liveness(now_ns());
    tc_->worker().progress();  // (a scheduler round could sleep up to 1 ms when idle)
    update_bandwidths(now_ns());
  }
  cluster_->release_thread_client();
}

// One forwarding round's work: its jobs' node operations and answers, and the entries its
// cache misses want staged.
struct AgentCore::RoundWork {
  std::vector<NodeOp> writes, reads;
  std::vector<size_t> write_jobs, read_jobs;  // the job of each write / read
  std::vector<Done> done;                     // parallel to the jobs
  std::vector<GlobalAddress> stage;
};

void AgentCore::round(std::vector<Job>& jobs) {
  ++rounds_;
  RoundWork w;
  w.done.resize(jobs.size());
  plan_round(jobs, &w);
  // Writes first: a read later in the round (or any later round) finds them at the node.
  if (!w.writes.empty()) write_round(jobs, &w);
  if (!w.reads.empty()) read_round(&w);
  answer_round(jobs, &w);
  // Staging starts after this round's writes are at their nodes; a later write marks the
  // placeholder stale.
  queue_stages(w.stage);
}

// Applies the round's writes to the cache and looks its reads up: what misses becomes a node
// read into the answer's buffer.
void AgentCore::plan_round(std::vector<Job>& jobs, RoundWork* w) {
  for (size_t i = 0; i < jobs.size(); ++i) {
    Job& j = jobs[i];
    Done& d = w->done[i];
    d.token = j.token;
    if (j.op == wire::Op::kWrite) {
      cache_.apply_write(j.addr, j.data.data(), static_cast<uint32_t>(j.bytes));
      w->writes.push_back(NodeOp{j.addr, j.data.data(), static_cast<uint32_t>(j.bytes), {}});
      w->write_jobs.push_back(i);
    } else if (j.op == wire::Op::kRead) {
      ++host_reads_;
      d.bytes = static_cast<uint32_t>(j.bytes);
      d.hit = cache_.lookup(j.addr, static_cast<uint32_t>(j.bytes), &w->stage, j.use_dynamic);
      if (!d.hit) {
        d.data.resize(j.bytes);
        w->reads.push_back(NodeOp{j.addr, d.data.data(), static_cast<uint32_t>(j.bytes), {}});
        w->read_jobs.push_back(i);
      }
    }
  }
}

// Sends the round's writes; an acked write that failed is logged and kept for the next flush.
void AgentCore::write_round(std::vector<Job>& jobs, RoundWork* w) {
  run_node_ops(&w->writes, true, options_.aggregation);
  for (size_t k = 0; k < w->writes.size(); ++k) {
    Job& j = jobs[w->write_jobs[k]];
    const Status& status = w->writes[k].status;
    pending_write_bytes_ -= j.bytes;
    w->done[w->write_jobs[k]].status = status;
    if (!status.ok() && j.acked) {
      log::error("farmem-agent: write-back of {} bytes at node {} offset {} failed: {}", j.bytes,
                 j.addr.node(), j.addr.offset(), status.to_string());
      if (write_error_.ok()) write_error_ = status;
    }
  }
}

// Reads the round's misses from the nodes, counting the reads aggregation saved and the node
// link's bandwidth.
void AgentCore::read_round(RoundWork* w) {
  const uint64_t t0 = now_ns();
  const uint64_t before = node_batches_.load();
  run_node_ops(&w->reads, false, options_.aggregation);
  const uint64_t t = std::max<uint64_t>(1, now_ns() - t0);
  uint64_t bytes = 0;
  for (size_t k = 0; k < w->reads.size(); ++k) {
    Done& d = w->done[w->read_jobs[k]];
    d.status = w->reads[k].status;
    if (!w->reads[k].status.ok()) d.data.clear();
    bytes += w->reads[k].bytes;
  }
  if (node_batches_.load() - before < w->reads.size()) {
    aggregated_ += w->reads.size() - (node_batches_.load() - before);
  }
  const double bw = static_cast<double>(bytes) * 1e9 / static_cast<double>(t);
  const uint64_t old = node_bw_.load();
  node_bw_ = old == 0 ? static_cast<uint64_t>(bw) : static_cast<uint64_t>(0.8 * old + 0.2 * bw);
}

// Runs the round's other jobs (pin, invalidate) and answers every job, except flushes (they
// wait for staging: answer_flushes) and writes acked when queued.
void AgentCore::answer_round(std::vector<Job>& jobs, RoundWork* w) {
  for (size_t i = 0; i < jobs.size(); ++i) {
    Job& j = jobs[i];
    if (j.op == wire::Op::kPinStatic) {
      w->done[i].status = load_static(j.addr, j.bytes);
    } else if (j.op == wire::Op::kInvalidate) {
      cache_.invalidate(j.addr, j.bytes);
    } else if (j.op == wire::Op::kFlush) {
      flushes_.emplace_back(std::move(j), stage_queued_);
      continue;
    } else if (j.op == wire::Op::kWrite && j.acked) {
      continue;  // answered when queued
    }
    deliver(j.worker, std::move(w->done[i]));
  }
}

// Hands the entries to stage to the staging workers; a full queue drops the placeholder.
void AgentCore::queue_stages(const std::vector<GlobalAddress>& stage) {
  for (GlobalAddress base : stage) {
    bool queued = false;
    {
      std::lock_guard lock(mu_);
      if (stage_queue_.size() < kMaxStageQueue) {
        stage_queue_.push_back(base);
        ++stage_queued_;
        queued = true;
      }
    }
    if (queued) {
      stage_cv_.notify_one();
    } else {
      cache_.finish_stage(base, {}, false);
    }
  }
}

void AgentCore::answer_flushes() {
  // A flush answers once the stage jobs queued before it are done (with one staging worker,
  // exactly those; with several, as many), so later staging never holds it up. Its status is
  // the first write-back error since the previous answered flush.
  if (flushes_.empty()) return;
  const uint64_t done = stage_done_.load();
  std::vector<std::pair<Job, uint64_t>> waiting;
  bool answered = false;
  for (auto& [job, wait_for] : flushes_) {
    if (done < wait_for) {
      waiting.emplace_back(std::move(job), wait_for);
      continue;
    }
    Done d;
    d.token = job.token;
    d.status = write_error_;
    deliver(job.worker, std::move(d));
    answered = true;
  }
  if (answered) write_error_ = OkStatus();
  flushes_ = std::move(waiting);
}

void AgentCore::run_node_ops(std::vector<NodeOp>* ops, bool write, bool aggregate) {
  uint64_t batches = 0;
  const uint64_t deadline = client::ThreadClient::deadline_in_ms(options_.op_timeout_ms);
  tc_->run(node_ops_task(tc_, ops, write, aggregate, deadline, &batches));
  node_batches_ += batches;
  uint64_t bytes = 0;
  for (const NodeOp& op : *ops) bytes += op.bytes;
  if (write) {
    node_writes_ += ops->size();
    node_write_bytes_ += bytes;
  } else {
    node_reads_ += ops->size();
    node_read_bytes_ += bytes;
  }
}

Status AgentCore::read_entry(GlobalAddress base, std::vector<uint8_t>* data) {
  data->assign(options_.entry_bytes, 0);
  std::vector<NodeOp> ops;
  for (uint64_t off = 0; off < options_.entry_bytes; off += kPieceBytes) {
    const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(kPieceBytes, data->size() - off));
    ops.push_back(NodeOp{base + off, data->data() + off, n, {}});
  }
  auto tc = cluster_->thread_client();
  FARMEM_TRY(tc);
  uint64_t batches = 0;
  const uint64_t deadline = client::ThreadClient::deadline_in_ms(options_.op_timeout_ms);
  (*tc)->run(node_ops_task(*tc, &ops, false, true, deadline, &batches));
  node_batches_ += batches;
  node_reads_ += ops.size();
  node_read_bytes_ += options_.entry_bytes;
  for (const NodeOp& op : ops) {
    FARMEM_TRY(op.status);
  }
  return OkStatus();
}

Status AgentCore::load_static(GlobalAddress addr, uint64_t bytes) {
  if (!options_.static_cache) return PermissionDenied("agent: static caching is off");
  if (bytes == 0 || bytes > options_.static_bytes) {
    return InvalidArgument("agent: pinned range empty or larger than the static budget");
  }
  // The entries covering [addr, addr + bytes).
  const uint64_t e = options_.entry_bytes;
  const uint64_t first = addr.offset() / e * e;
  const uint64_t end = (addr.offset() + bytes + e - 1) / e * e;
  for (uint64_t off = first; off < end; off += e) {
    std::vector<uint8_t> data;
    FARMEM_TRY(read_entry(GlobalAddress(addr.node(), off), &data));
    FARMEM_TRY(cache_.put_static(GlobalAddress(addr.node(), off), std::move(data)));
  }
  return OkStatus();
}

void AgentCore::stage_loop() {
  auto tc = cluster_->thread_client();
  {
    std::lock_guard lock(start_mu_);
    if (!tc.ok() && start_status_.ok()) start_status_ = tc.status();
    ++started_;
  }
  start_cv_.notify_all();
  if (!tc.ok()) return;
  for (;;) {
    GlobalAddress base;
    {
      std::unique_lock lock(mu_);
      stage_cv_.wait_for(lock, std::chrono::milliseconds(50),
                         [&] { return stopping_ || !stage_queue_.empty(); });
      if (stopping_) break;
      if (stage_queue_.empty()) {
        lock.unlock();
        (*tc)->check_liveness(now_ns());
        continue;
      }
      base = stage_queue_.front();
      stage_queue_.pop_front();
    }
    std::vector<uint8_t> data;
    Status s = read_entry(base, &data);
    if (!s.ok())
      log::warn("farmem-agent: staging node {} offset {}: {}", base.node(), base.offset(),
                s.to_string());
    cache_.finish_stage(base, std::move(data), s.ok());
    ++stage_done_;
  }
  cluster_->release_thread_client();
}

void AgentCore::update_bandwidths(uint64_t now) {
  if (bw_window_start_ns_ == 0) bw_window_start_ns_ = now;
  if (now - bw_window_start_ns_ < kBandwidthWindowNs) return;
  const uint64_t total = host_.bytes_in.load() + host_.bytes_out.load();
  const uint64_t bytes = total - bw_window_host_bytes_;
  if (bytes > 0) {
    const double bw =
        static_cast<double>(bytes) * 1e9 / static_cast<double>(now - bw_window_start_ns_);
    const uint64_t old = host_bw_.load();
    host_bw_ = old == 0 ? static_cast<uint64_t>(bw) : static_cast<uint64_t>(0.8 * old + 0.2 * bw);
  }
  bw_window_host_bytes_ = total;
  bw_window_start_ns_ = now;
  cache_.set_bandwidths(static_cast<double>(host_bw_.load()), static_cast<double>(node_bw_.load()));
}

wire::StatsResponse AgentCore::stats() const {
  wire::StatsResponse r{};
  r.host_messages_in = host_.messages_in;
  r.host_bytes_in = host_.bytes_in;
  r.host_messages_out = host_.messages_out;
  r.host_bytes_out = host_.bytes_out;
  r.node_reads = node_reads_;
  r.node_read_bytes = node_read_bytes_;
  r.node_writes = node_writes_;
  r.node_write_bytes = node_write_bytes_;
  r.node_batches = node_batches_;
  r.rounds = rounds_;
  r.host_reads = host_reads_;
  r.aggregated_reads = aggregated_;
  const CacheCounters c = cache_.counters();
  r.static_hits = c.static_hits;
  r.dynamic_hits = c.dynamic_hits;
  r.dynamic_misses = c.dynamic_misses;
  r.staged_entries = c.staged_entries;
  r.staged_bytes = c.staged_bytes;
  r.evictions = c.evictions;
  r.cache_bytes = c.cache_bytes;
  r.static_bytes = c.static_bytes;
  r.dynamic_enabled = options_.dynamic_cache && c.dynamic_enabled ? 1 : 0;
  r.dynamic_switches = c.switches;
  r.writes_pending = pending_write_bytes_;
  r.host_bw_bytes_per_s = host_bw_;
  r.node_bw_bytes_per_s = node_bw_;
  return r;
}

}  // namespace farmem::agent
