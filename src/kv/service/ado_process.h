// AdoProcess: the memory node's side of one ADO process (farmem-ado) of one pool.
//
// spawn() starts farmem-ado with posix_spawn: the ADO channel (a SOCK_SEQPACKET socket pair,
// kv/ado/channel.h) on its fd 3, every other fd closed, the node's door address, cluster key
// and pid in its environment (never on the command line), and sends the launch message (pool
// name, plugin paths, parameters). From then on the owner (the pool's worker thread) calls
// on_readable() when the channel's fd is readable and poll() on every loop round; neither
// blocks: the fd is non-blocking, outgoing messages wait in a bounded queue, and every
// exchange has a deadline:
//   - the launch must be answered within launch_timeout_ms;
//   - a work (an invocation or a signal) must be answered within timeout_ms of being sent,
//     the plugin's store callbacks included (each is answered at once by the owner's
//     AdoCallbacks).
// Failure of any kind — the process exits or is killed (kill -9, a crash, abort()), stops
// answering (a hang, SIGSTOP), fails to launch (a plugin that does not load or refuses), or
// sends a malformed message — kills it (SIGKILL), reaps it and ends the work in flight with a
// clear error naming the pool and its plugins: kUnavailable (crash, exit, launch failure,
// protocol error) or kTimedOut (deadline). The work is ended only once the process is reaped,
// so that its owner releases the work's locks when nothing can write the values any more. The
// process is dead() at once and the owner starts a fresh one for the next invocation.
// Processes are always reaped (waitpid), never leaked; destroying an AdoProcess kills and
// reaps it at once (node shutdown).
//
// Thread safety: one thread (the pool's worker) owns an AdoProcess.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../ado/channel.h"
#include "farmem/common/result.h"

namespace farmem::kv::service {

// How a node runs its ADO processes (per node; from its kv configuration).
struct AdoProcessOptions {
  std::string program;                 // the farmem-ado executable
  std::string plugin_dir;              // where plugins are loaded from (by file name)
  std::string node_address;            // host:port of the node's door, for the ADO's connection
  std::string cluster_key;             // given to the ADO in its environment
  std::string tls;                     // FARMEM_ADO_TLS for the ADO's connection ("" = its default)
  uint32_t timeout_ms = 5000;          // a work's deadline (from being sent to its answer)
  uint32_t launch_timeout_ms = 20000;  // spawn to launch answer (connecting to the node)
  uint32_t stop_grace_ms = 1000;       // shutdown to exit, then SIGKILL
  uint32_t max_outbound = 1024;        // messages waiting to be sent to one ADO
};

// Answers the plugins' store callbacks (the pool does). Runs on the owner's thread, at once.
class AdoCallbacks {
 public:
  virtual ~AdoCallbacks() = default;
  // The reply's payload (channel.h, CallbackOp), or the error to give the plugin.
  virtual Result<std::string> on_callback(const ado::Callback& callback) = 0;
};

class AdoProcess {
 public:
  enum class State : uint8_t { kLaunching, kReady, kBusy, kStopping, kDead };
  // A work's end: the ADO's answer, or why there is none.
  using DoneFn = std::function<void(Result<ado::Done>)>;

  // Starts the process and sends the launch. plugin names are file names in plugin_dir.
  static Result<std::unique_ptr<AdoProcess>> spawn(const AdoProcessOptions& settings,
                                                   const ado::Launch& launch,
                                                   AdoCallbacks* callbacks, uint64_t now_ns);
  ~AdoProcess();  // kills and reaps the process if it still runs
  AdoProcess(const AdoProcess&) = delete;
  AdoProcess& operator=(const AdoProcess&) = delete;

  State state() const { return state_; }
  bool ready() const { return state_ == State::kReady; }
  bool dead() const { return state_ == State::kDead; }
  // Reaped: nothing of the process remains.
  bool reaped() const { return pid_ < 0; }
  pid_t pid() const { return pid_; }
  int fd() const { return fd_; }
  // Why the process died (or failed to launch); OK while it lives.
  const Status& failure() const { return failure_; }
  // "pool 'p' (plugins a.so, b.so)", for messages.
  const std::string& describe() const { return describe_; }

  // Called once when the launch is answered (OK: ready; otherwise dead with failure()).
  void on_launched(std::function<void(const Status&)> fn) { launched_ = std::move(fn); }
  // Sends a work. Precondition: ready(). `done` is called exactly once, from on_readable(),
  // poll() or the destructor, never from inside start_work.
  void start_work(const ado::Work& work, uint64_t now_ns, DoneFn done);
  // An op event (best effort: dropped, and counted, when the outbound queue is full).
  void send_event(uint32_t event, std::string_view key);
  // Asks the process to stop: after the work in flight (if any) is answered, a shutdown
  // message, then SIGKILL after stop_grace_ms. A launch in progress is killed.
  void stop(uint64_t now_ns);
  // Kills the process now and waits (up to a bound) until it is reaped, then ends what waits
  // with `why`: for when the pool's memory is about to go (pool delete).
  void kill_now(const Status& why);

  void on_readable(uint64_t now_ns);
  void poll(uint64_t now_ns);
  // The nearest deadline (0: none), for a worker that sleeps.
  uint64_t next_deadline() const;
  uint64_t dropped_events() const { return dropped_events_; }

 private:
  AdoProcess(const AdoProcessOptions& settings, AdoCallbacks* callbacks)
      : settings_(settings), callbacks_(callbacks) {}
  Status start(const ado::Launch& launch, uint64_t now_ns);
  void enqueue(std::string message);
  void flush();
  void handle(std::string_view bytes, uint64_t now_ns);
  // Kills the process; what waits ends with `why` once it is reaped (finish_failure).
  void fail(const Status& why);
  void finish_failure();
  void begin_stop(uint64_t now_ns);
  void finish_work(Result<ado::Done> r);
  void try_reap(bool block);
  std::string exit_text(int status) const;

  AdoProcessOptions settings_;
  AdoCallbacks* callbacks_;
  std::string describe_;
  pid_t pid_ = -1;
  int fd_ = -1;
  State state_ = State::kLaunching;
  Status failure_;
  uint64_t deadline_ns_ = 0;  // launch, work, or stop deadline (0 = none)
  uint64_t eof_ns_ = 0;       // when the channel closed (the exit status is awaited)
  bool channel_closed_ = false;
  bool killed_ = false;
  bool stop_after_work_ = false;
  bool failure_pending_ = false;  // callbacks to end with failure_ once reaped
  State failed_in_ = State::kLaunching;
  uint64_t work_id_ = 0;
  DoneFn done_;
  std::function<void(const Status&)> launched_;
  std::deque<std::string> outbound_;
  std::string buffer_;
  uint64_t dropped_events_ = 0;
  int exit_status_ = -1;  // waitpid status once reaped (-1: unknown)
};

}  // namespace farmem::kv::service
