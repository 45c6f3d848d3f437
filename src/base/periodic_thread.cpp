#include "base/periodic_thread.h"

#include <chrono>
#include <utility>

namespace gw {

void PeriodicThread::Start(double interval_s, std::function<void()> body) {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this, interval_s, run = std::move(body)] {
    std::unique_lock<std::mutex> wait_lock(mu_);
    while (!stopping_) {
      wait_lock.unlock();
      run();
      wait_lock.lock();
      wake_.wait_for(wait_lock, std::chrono::duration<double>(interval_s),
                     [this] { return stopping_; });
    }
  });
}

void PeriodicThread::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace gw
