#include "top/poller.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>

namespace gw::top {

Poller::Poller(Source* source, double interval_s)
    : source_(source), interval_s_(interval_s), builder_(source->Describe()) {
  if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) wake_[0] = wake_[1] = -1;
}

Poller::~Poller() {
  Stop();
  for (int fd : wake_)
    if (fd >= 0) close(fd);
}

std::shared_ptr<const Frame> Poller::PollNow() {
  auto reading = source_->Read();
  std::shared_ptr<const Frame> frame =
      reading.ok() ? builder_.Build(*reading) : builder_.Failed(reading.error().message);
  Publish(frame);
  return frame;
}

void Poller::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void Poller::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<const Frame> Poller::Latest() const {
  std::lock_guard<std::mutex> lock(mu_);
  return latest_;
}

void Poller::DrainWake() {
  char buffer[64];
  while (wake_[0] >= 0 && read(wake_[0], buffer, sizeof buffer) > 0) {
  }
}

void Poller::Publish(std::shared_ptr<const Frame> frame) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    latest_ = std::move(frame);
  }
  if (wake_[1] >= 0) {
    char one = 1;
    (void)!write(wake_[1], &one, 1);  // a full pipe already says "new frame"
  }
}

void Poller::Loop() {
  const auto interval = std::chrono::duration<double>(interval_s_);
  for (;;) {
    auto next = std::chrono::steady_clock::now() + interval;
    PollNow();
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_until(lock, next, [this] { return stop_; })) return;
  }
}

}  // namespace gw::top
