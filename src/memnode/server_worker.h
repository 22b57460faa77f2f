// ServerWorker: one progress thread of a memory node and the sessions it serves.
//
// It owns a UCX worker (single-threaded), the sessions the door handed to it (each a UCX
// endpoint to the client's worker plus the door's TCP connection, which carries heartbeats
// and whose end ends the session), a bounded request queue, and one ServiceWorker per
// registered service.
//
// The loop: progress UCX (the AM callback only validates, copies and queues); end sessions
// whose endpoint failed; dispatch queued requests to their service outside any UCX callback;
// from time to time (and whenever idle) poll the session sockets, new sessions from the door
// and the stop event; after an idle spin without events (memnode/idle_spin.h: up to
// idle_spin_us, adaptive), arm the worker and sleep in epoll.
// A session ends on EOF, reset or junk on its socket, on a failed endpoint, or at shutdown; its
// queued requests are dropped and NodeState::end_session releases what it owned.
//
// Workers talk to each other through mailboxes (a locked queue plus an eventfd that wakes a
// sleeping worker): requests a service forwards to the worker owning a shard (bounded),
// replies on their way back to the session's worker, and session ends (service.h).
//
// Thread safety: adopt(), post_mail() and pending_admissions() from any thread; everything
// else on the worker's own thread (set_peers before run()).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "farmem/fabric/context.h"
#include "farmem/fabric/endpoint.h"
#include "farmem/fabric/worker.h"
#include "farmem/memnode/service.h"

namespace farmem::memnode {

// A client that passed the door, waiting to become a session on a worker.
struct Admission {
  int fd = -1;                 // the door connection (non-blocking), owned from here on
  std::string client_address;  // the client's UCX worker address
  std::string peer;            // "host:port" of the client, for logs
  uint64_t client_tag = 0;
  uint64_t session_id = 0;  // assigned by the door
};

class ServerWorker final : public ReplySink, public WorkerHost {
 public:
  ServerWorker(NodeState& node, const ServiceRegistry& services, uint32_t index, int stop_fd);
  ~ServerWorker();
  ServerWorker(const ServerWorker&) = delete;
  ServerWorker& operator=(const ServerWorker&) = delete;

  Status init(fabric::Context& context);
  // All workers of the node, indexed by worker index (for forwarding). Before run().
  void set_peers(std::vector<ServerWorker*> peers) { peers_ = std::move(peers); }
  // Any thread: queue a new session for this worker.
  void adopt(Admission admission);
  // Serves until the node stops, then answers what is queued, says goodbye and ends every
  // session.
  void run();
  uint32_t index() const { return index_; }
  size_t pending_admissions();  // any thread

  // ReplySink (used by Responder): sends a reply to `session` if it is still open (else drops
  // it), through the session's worker `home_worker` if that is another one.
  void send_reply(uint64_t session, uint32_t home_worker, const wire::RpcHeader& request,
                  StatusCode code, const void* payload, size_t bytes) override;
  // WorkerHost (WorkerContext's implementation).
  void forward(uint32_t service, uint32_t target_worker, Request&& request,
               Responder&& responder) override;
  Status watch_fd(int fd) override;
  void unwatch_fd(int fd) override;

  // Cross-worker mail.
  struct Mail {
    enum class Kind : uint8_t { kRequest, kReply, kSessionEnd };
    Kind kind = Kind::kRequest;
    uint32_t service = 0;               // kRequest: the service's registry index
    Request request;                    // kRequest; kReply: header and session only
    StatusCode code = StatusCode::kOk;  // kReply
    std::string reply;                  // kReply: payload or error message
  };
  // Any thread. A bounded post (forwarded requests) fails when the mailbox is full.
  bool post_mail(Mail mail, bool bounded);

 private:
  struct Session {
    uint64_t id = 0;
    int fd = -1;
    std::unique_ptr<fabric::Endpoint> ep;
    std::string peer;
    size_t queued = 0;   // requests of this session in the queue
    uint8_t rx[8] = {};  // partial heartbeat frame
    size_t rx_bytes = 0;
  };
  struct Incoming {
    Request request;
    Status error;  // set when the request was rejected before dispatch
  };

  static ucs_status_t on_request(void* arg, const void* header, size_t header_length, void* data,
                                 size_t length, const ucp_am_recv_param_t* param);
  unsigned process_queue();
  void dispatch(Incoming& in);
  // Handles ready sockets, new sessions; returns how many (UCX's and stop's fds are not work).
  // *woke (optional): whether anything at all was ready.
  unsigned poll_events(int timeout_ms, bool* woke = nullptr);
  void take_admissions();
  void open_session(Admission& a);
  void on_socket(uint64_t session_id);
  void end_session(uint64_t session_id, const char* why);
  void end_failed_sessions();
  void poll_services();
  unsigned process_mail();
  void run_mail(Mail& mail);
  void send_local_reply(uint64_t session, const wire::RpcHeader& request, StatusCode code,
                        const void* payload, size_t bytes);
  int sleep_timeout_ms() const;
  void shut_down();

  NodeState& node_;
  const ServiceRegistry& services_;
  uint32_t index_;
  int stop_fd_;
  std::unique_ptr<fabric::Worker> worker_;
  std::string address_;  // this worker's UCX address, sent in welcomes
  std::vector<std::unique_ptr<ServiceWorker>> service_workers_;
  std::unordered_map<uint64_t, std::unique_ptr<Session>> sessions_;
  std::unordered_map<ucp_ep_h, uint64_t> by_ep_;
  std::unordered_map<const fabric::Endpoint*, uint64_t> by_endpoint_;
  std::deque<Incoming> queue_;
  size_t queued_bytes_ = 0;
  int epoll_fd_ = -1;
  int handoff_fd_ = -1;  // eventfd: admissions are waiting
  std::mutex handoff_mu_;
  std::vector<Admission> handoff_;  // (handoff_mu_)
  std::vector<ServerWorker*> peers_;
  int mail_fd_ = -1;  // eventfd: mail is waiting and this worker may be asleep
  std::mutex mail_mu_;
  std::deque<Mail> mail_;              // (mail_mu_)
  size_t mail_requests_ = 0;           // (mail_mu_) forwarded requests in mail_
  size_t mail_bytes_ = 0;              // (mail_mu_) their payload bytes
  std::atomic<size_t> mail_count_{0};  // mail_.size(), read without the lock
  std::atomic<bool> asleep_{false};    // about to sleep in epoll: posters write mail_fd_
};

}  // namespace farmem::memnode
