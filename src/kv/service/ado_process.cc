#include "ado_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace farmem::kv::service {
namespace {

constexpr uint64_t kNsPerMs = 1'000'000;
// After the channel closes, how long to wait for the exit status before killing.
constexpr uint64_t kExitWaitNs = 500 * kNsPerMs;
// At node shutdown, how long to wait for a killed process to be reaped.
constexpr int kReapWaitMs = 2000;

bool valid_plugin_name(const std::string& n) {
  return !n.empty() && n.size() <= ado::kMaxNameBytes && n.find('/') == std::string::npos &&
         n != "." && n != "..";
}

// The environment of the ADO process: the node's, minus anything ADO- or key-related, plus
// what the ADO needs.
std::vector<std::string> child_environment(const AdoProcessOptions& s) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view v(*e);
    if (v.starts_with("FARMEM_ADO_") || v.starts_with("FARMEM_CLUSTER_KEY=")) continue;
    env.emplace_back(v);
  }
  env.push_back("FARMEM_ADO_NODE=" + s.node_address);
  env.push_back("FARMEM_ADO_PARENT_PID=" + std::to_string(getpid()));
  if (!s.cluster_key.empty()) env.push_back("FARMEM_CLUSTER_KEY=" + s.cluster_key);
  if (!s.tls.empty()) env.push_back("FARMEM_ADO_TLS=" + s.tls);
  return env;
}

}  // namespace

Result<std::unique_ptr<AdoProcess>> AdoProcess::spawn(const AdoProcessOptions& settings,
                                                      const ado::Launch& launch,
                                                      AdoCallbacks* callbacks, uint64_t now_ns) {
  std::unique_ptr<AdoProcess> p(new AdoProcess(settings, callbacks));
  Status s = p->start(launch, now_ns);
  FARMEM_TRY(s);
  return p;
}

Status AdoProcess::start(const ado::Launch& launch, uint64_t now_ns) {
  describe_ =
      fmt::format("pool '{}' (plugins {})", launch.pool_name, fmt::join(launch.plugin_paths, ", "));
  if (launch.plugin_paths.empty() || launch.plugin_paths.size() > ado::kMaxPlugins) {
    return InvalidArgument(fmt::format("ADO of {}: 1..{} plugins", describe_, ado::kMaxPlugins));
  }
  ado::Launch full = launch;
  for (auto& name : full.plugin_paths) {
    if (!valid_plugin_name(name)) {
      return InvalidArgument(
          fmt::format("ADO plugin name '{}' of {} is not a file name", name, describe_));
    }
    name = fmt::format("{}/{}", settings_.plugin_dir, name);
    if (name.size() > ado::kMaxNameBytes) {
      return InvalidArgument(fmt::format("ADO plugin path {} of {} exceeds {} bytes", name,
                                         describe_, ado::kMaxNameBytes));
    }
  }
  full.timeout_ms = settings_.timeout_ms;
  std::string message = ado::encode_launch(full);
  if (message.size() > ado::kMaxMessageBytes) {
    return InvalidArgument(fmt::format("ADO launch of {} exceeds {} bytes (plugins, parameters)",
                                       describe_, ado::kMaxMessageBytes));
  }
  auto pair = ado::make_channel();
  FARMEM_TRY(pair);
  fd_ = pair->first;
  int child = pair->second;
  if (child == ado::kChannelFd) {  // dup2 onto itself would keep close-on-exec
    int moved = fcntl(child, F_DUPFD_CLOEXEC, 10);
    close(child);
    child = moved;
    if (child < 0) return Internal(fmt::format("fcntl: {}", std::strerror(errno)));
  }
  std::vector<std::string> env = child_environment(settings_);
  std::vector<char*> envp;
  envp.reserve(env.size() + 1);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string program = settings_.program;
  char* argv[] = {program.data(), nullptr};

  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, child, ado::kChannelFd);
  posix_spawn_file_actions_addclosefrom_np(&fa, ado::kChannelFd + 1);
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, program.c_str(), &fa, &attr, argv, envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(child);
  if (rc != 0) {
    return Unavailable(fmt::format("cannot start the ADO process of {}: {}: {}", describe_, program,
                                   std::strerror(rc)));
  }
  pid_ = pid;
  state_ = State::kLaunching;
  deadline_ns_ = now_ns + settings_.launch_timeout_ms * kNsPerMs;
  enqueue(std::move(message));
  return OkStatus();
}

AdoProcess::~AdoProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    for (int i = 0; i < kReapWaitMs && pid_ > 0; ++i) {
      try_reap(false);
      if (pid_ > 0) usleep(1000);
    }
  }
  if (fd_ >= 0) close(fd_);
  // The owner ends what waits before destroying a live process (node shutdown); a work's
  // Responder dropped here would answer kInternal.
}

void AdoProcess::enqueue(std::string message) {
  outbound_.push_back(std::move(message));
  flush();
}

void AdoProcess::flush() {
  while (!outbound_.empty() && fd_ >= 0 && !channel_closed_ && state_ != State::kDead) {
    Status s = ado::send_message(fd_, outbound_.front());
    if (s.code() == StatusCode::kResourceExhausted) return;  // full: poll() tries again
    if (!s.ok()) {
      channel_closed_ = true;
      if (eof_ns_ == 0) eof_ns_ = 1;  // the exit status is awaited from the next poll
      return;
    }
    outbound_.pop_front();
  }
}

void AdoProcess::send_event(uint32_t event, std::string_view key) {
  if (state_ == State::kDead || state_ == State::kStopping) return;
  if (outbound_.size() >= settings_.max_outbound) {
    ++dropped_events_;
    return;
  }
  enqueue(ado::encode_event(event, key));
}

void AdoProcess::start_work(const ado::Work& work, uint64_t now_ns, DoneFn done) {
  std::string message = ado::encode_work(work);
  state_ = State::kBusy;
  work_id_ = work.work_id;
  done_ = std::move(done);
  deadline_ns_ = now_ns + settings_.timeout_ms * kNsPerMs;
  enqueue(std::move(message));
}

void AdoProcess::stop(uint64_t now_ns) {
  if (state_ == State::kDead || state_ == State::kStopping) return;
  if (state_ == State::kLaunching) {
    fail(Unavailable(fmt::format("the ADO of {} was stopped while launching", describe_)));
    return;
  }
  if (state_ == State::kBusy) {  // the work finishes (or fails) first
    stop_after_work_ = true;
    return;
  }
  begin_stop(now_ns);
}

void AdoProcess::begin_stop(uint64_t now_ns) {
  state_ = State::kStopping;
  deadline_ns_ = now_ns + settings_.stop_grace_ms * kNsPerMs;
  enqueue(ado::encode_shutdown());
}

void AdoProcess::kill_now(const Status& why) {
  if (state_ != State::kDead) fail(why);
  for (int i = 0; i < kReapWaitMs && pid_ > 0; ++i) {
    try_reap(false);
    if (pid_ > 0) usleep(1000);
  }
  if (pid_ < 0) finish_failure();
}

void AdoProcess::on_readable(uint64_t now_ns) {
  for (int i = 0; i < 64 && !channel_closed_ && state_ != State::kDead; ++i) {
    Result<std::string_view> got = ado::receive_message(fd_, &buffer_);
    if (!got.ok() && got.status().code() == StatusCode::kPeerFailed) {
      channel_closed_ = true;
      eof_ns_ = now_ns;
      break;
    }
    if (!got.ok()) {
      fail(Unavailable(
          fmt::format("the ADO of {} failed: {}", describe_, got.status().to_string())));
      return;
    }
    if (got->empty()) break;
    handle(*got, now_ns);
  }
  poll(now_ns);
}

void AdoProcess::handle(std::string_view bytes, uint64_t now_ns) {
  auto bad = [&](const Status& s) {
    fail(Unavailable(fmt::format("the ADO of {} sent a malformed message and was killed: {}",
                                 describe_, s.to_string())));
  };
  Result<ado::Message> m = ado::parse_message(bytes);
  if (!m.ok()) return bad(m.status());
  switch (m->type()) {
    case ado::MsgType::kLaunchReply: {
      if (state_ != State::kLaunching) return bad(ProtocolError("a second launch reply"));
      Status s = ado::decode_status(*m, nullptr);
      if (s.code() == StatusCode::kProtocolError) return bad(s);
      if (!s.ok()) {
        fail(
            Unavailable(fmt::format("the ADO of {} failed to launch: {}", describe_, s.message())));
        return;
      }
      state_ = State::kReady;
      deadline_ns_ = 0;
      if (launched_) std::exchange(launched_, nullptr)(OkStatus());
      return;
    }
    case ado::MsgType::kCallback: {
      Result<ado::Callback> c = ado::decode_callback(*m);
      if (!c.ok()) return bad(c.status());
      bool during_work = state_ == State::kBusy && c->work_id == work_id_;
      bool during_launch = state_ == State::kLaunching && c->work_id == 0;
      if (!during_work && !during_launch) {
        if (state_ == State::kStopping) return;  // its answer no longer matters
        return bad(ProtocolError(fmt::format("callback for work {} outside it", c->work_id)));
      }
      Result<std::string> r = callbacks_->on_callback(*c);
      enqueue(r.ok() ? ado::encode_callback_reply(c->work_id, OkStatus(), *r)
                     : ado::encode_callback_reply(c->work_id, r.status()));
      return;
    }
    case ado::MsgType::kWorkDone: {
      if (state_ == State::kStopping) return;
      Result<ado::Done> d = ado::decode_done(*m);
      if (!d.ok()) return bad(d.status());
      if (state_ != State::kBusy || d->work_id != work_id_) {
        return bad(ProtocolError(fmt::format("an answer to work {} nobody waits for", d->work_id)));
      }
      state_ = State::kReady;
      deadline_ns_ = 0;
      finish_work(std::move(*d));
      if (stop_after_work_ && state_ == State::kReady) begin_stop(now_ns);
      return;
    }
    default:
      return bad(ProtocolError(fmt::format("message type {} from the ADO", m->header.type)));
  }
}

void AdoProcess::finish_work(Result<ado::Done> r) {
  DoneFn fn = std::move(done_);
  done_ = nullptr;
  work_id_ = 0;
  if (fn) fn(std::move(r));
}

void AdoProcess::fail(const Status& why) {
  if (state_ == State::kDead) return;
  failed_in_ = state_;
  state_ = State::kDead;
  failure_ = why;
  failure_pending_ = true;
  deadline_ns_ = 0;
  outbound_.clear();
  if (pid_ > 0 && !killed_) {
    kill(pid_, SIGKILL);
    killed_ = true;
  }
  // A launch touched no value under a lock: it is answered now. A work's locks are released
  // only once nothing can write any more (reaped).
  if (failed_in_ == State::kLaunching && launched_) std::exchange(launched_, nullptr)(why);
  try_reap(false);
  if (pid_ < 0) finish_failure();
}

void AdoProcess::finish_failure() {
  if (!failure_pending_) return;
  failure_pending_ = false;
  if (failed_in_ == State::kBusy) finish_work(failure_);
}

void AdoProcess::poll(uint64_t now_ns) {
  flush();
  if (pid_ > 0) try_reap(false);
  if (state_ == State::kDead) {
    if (pid_ < 0) finish_failure();
    return;
  }
  if (state_ == State::kStopping) {
    if (pid_ < 0) {
      state_ = State::kDead;  // a clean stop: failure() stays OK
    } else if (now_ns >= deadline_ns_ && !killed_) {
      kill(pid_, SIGKILL);
      killed_ = true;
    }
    return;
  }
  if (pid_ < 0 || channel_closed_) {
    if (pid_ < 0) {
      const char* when = state_ == State::kLaunching ? "while launching"
                         : state_ == State::kBusy    ? "during an invocation"
                                                     : "while idle";
      fail(Unavailable(fmt::format("the ADO of {} died {}: {}; the next invoke starts a fresh one",
                                   describe_, when, exit_text(exit_status_))));
      return;
    }
    if (now_ns >= eof_ns_ + kExitWaitNs) {
      fail(Unavailable(fmt::format("the ADO of {} closed its channel; killed", describe_)));
      return;
    }
  }
  if (deadline_ns_ != 0 && now_ns >= deadline_ns_) {
    if (state_ == State::kLaunching) {
      fail(TimedOut(fmt::format("the ADO of {} did not launch within {} ms; killed", describe_,
                                settings_.launch_timeout_ms)));
    } else {
      fail(TimedOut(fmt::format(
          "the ADO of {} did not answer within {} ms (a hang, or stopped); killed, the next "
          "invoke starts a fresh one",
          describe_, settings_.timeout_ms)));
    }
  }
}

uint64_t AdoProcess::next_deadline() const {
  if (state_ == State::kDead) return failure_pending_ ? 1 : 0;  // reap soon
  if (channel_closed_) return eof_ns_ + kExitWaitNs;
  return deadline_ns_;
}

void AdoProcess::try_reap(bool block) {
  if (pid_ <= 0) return;
  int status = 0;
  pid_t r = waitpid(pid_, &status, block ? 0 : WNOHANG);
  if (r == pid_ || (r < 0 && errno == ECHILD)) {
    exit_status_ = r == pid_ ? status : -1;
    pid_ = -1;
  }
}

std::string AdoProcess::exit_text(int status) const {
  if (status < 0) return "exit status unknown";
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return fmt::format("killed by signal {} ({})", sig, strsignal(sig));
  }
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return fmt::format("wait status {}", status);
}

}  // namespace farmem::kv::service
