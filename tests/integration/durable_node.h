// DurableNode: a farmem-server on a data directory of its own, for tests that kill it and
// restart it on the same directory (and port), with a client connected to its current life.
#pragma once

#include <signal.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "farmem/client/cluster.h"
#include "farmem/client/thread_client.h"
#include "harness.h"

namespace farmem::testing {

class DurableNode {
 public:
  DurableNode(std::string tls, uint64_t capacity_bytes)
      : tls_(std::move(tls)), capacity_(capacity_bytes) {
    char tmpl[] = "/tmp/farmem-durable-XXXXXX";
    if (mkdtemp(tmpl) != nullptr) dir_ = tmpl;
  }
  ~DurableNode() {
    cluster_.reset();
    server_.reset();
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  // Starts (or restarts) the node and connects a client; false (with *why) when either fails.
  // A small checkpoint_log makes checkpoints happen during a test's writes.
  bool start(std::string* why, const std::string& durability = "power",
             const std::string& checkpoint_log = "") {
    cluster_.reset();
    ServerOptions o;
    o.tls = tls_;
    o.capacity_bytes = capacity_;
    o.port = port_;
    o.extra_args = {"--data-dir", dir_ + "/data", "--durability", durability};
    if (!checkpoint_log.empty()) {
      o.extra_args.insert(o.extra_args.end(), {"--checkpoint-log", checkpoint_log});
    }
    o.extra_args.insert(o.extra_args.end(), extra_args.begin(), extra_args.end());
    server_ = ServerProcess::start(o);
    if (server_ == nullptr) {
      *why = "the node did not start";
      return false;
    }
    port_ = server_->port();
    auto c = client::Cluster::connect(config_for({server_.get()}, tls_, 5000));
    if (!c.ok()) {
      *why = c.status().to_string();
      return false;
    }
    cluster_ = std::move(*c);
    client_ = *cluster_->thread_client();
    return true;
  }
  // More farmem-server arguments for every start (e.g. {"--workers", "2"}).
  std::vector<std::string> extra_args;

  // kill -9, from any thread (the node's pid stays valid until kill() reaps it).
  void kill_now() const { ::kill(server_->pid(), SIGKILL); }
  // A thread that kill -9s the node once `count` reaches `n` (or after a 120 s hang guard), for
  // a kill at a chosen moment of a running workload; join it before kill().
  std::thread kill_when(const std::atomic<uint64_t>& count, uint64_t n) const {
    return std::thread([this, &count, n] {
      const auto guard = std::chrono::steady_clock::now() + std::chrono::seconds(120);
      while (count.load() < n && std::chrono::steady_clock::now() < guard) {
        std::this_thread::yield();
      }
      kill_now();
    });
  }
  // Drops the client, kill -9s the node and reaps it.
  void kill() {
    cluster_.reset();
    client_ = nullptr;
    kill_now();
    server_->stop();
  }
  // Drops the client and stops the node cleanly (SIGTERM); its exit code.
  int stop() {
    cluster_.reset();
    client_ = nullptr;
    return server_->stop();
  }
  client::ThreadClient& client() { return *client_; }
  const std::string& tls() const { return tls_; }
  uint64_t capacity_bytes() const { return capacity_; }
  ServerProcess& server() { return *server_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string tls_;
  uint64_t capacity_;
  std::string dir_;
  uint16_t port_ = 0;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<client::Cluster> cluster_;
  client::ThreadClient* client_ = nullptr;
};

}  // namespace farmem::testing
