#include "installer.h"

#include <utility>

namespace farmem::paged {

Installer::Installer(uint32_t threads, void* ctx, RunFn run, DoneFn done)
    : ctx_(ctx), run_(run), done_(done) {
  for (uint32_t i = 0; i < threads; ++i) threads_.emplace_back([this] { loop(); });
}

Installer::~Installer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void Installer::submit(Job job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void Installer::loop() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    run_(ctx_, job);
    done_(ctx_, job.resume);
  }
}

}  // namespace farmem::paged
