// serve/governance_commands.cpp — the worker that runs reclaim commands and capacity polls.
#include "serve/governance_commands.h"

#include <chrono>
#include <utility>

#include "jobs/slurm.h"

namespace gw::serve {

CommandWorker::CommandWorker(double command_timeout_s, double poll_interval_s,
                             std::function<void()> poll, Done on_done)
    : timeout_s_(command_timeout_s),
      poll_interval_s_(poll_interval_s),
      poll_(std::move(poll)),
      on_done_(std::move(on_done)) {}

CommandWorker::~CommandWorker() {
  Stop();
}

void CommandWorker::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void CommandWorker::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CommandWorker::Enqueue(std::vector<governance::ReclaimCommand> commands) {
  if (commands.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (governance::ReclaimCommand& c : commands) queue_.push_back(std::move(c));
  }
  wake_.notify_all();
}

void CommandWorker::Loop() {
  const bool poll = static_cast<bool>(poll_);
  auto next_poll = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (!queue_.empty()) {
      governance::ReclaimCommand command = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      auto ran = jobs::RunCommandCapture(command.argv, command.env, timeout_s_, 1 << 20);
      on_done_(command, ran.ok() ? "" : ran.error().message);
      lock.lock();
      continue;
    }
    if (poll && std::chrono::steady_clock::now() >= next_poll) {
      lock.unlock();
      poll_();
      lock.lock();
      next_poll = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(poll_interval_s_));
      continue;
    }
    if (poll)
      wake_.wait_until(lock, next_poll);
    else
      wake_.wait(lock);
  }
}

}  // namespace gw::serve
