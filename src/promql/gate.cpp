#include "promql/gate.h"

#include <algorithm>
#include <utility>

namespace gw::promql {

QueryGate::Ticket::Ticket(Ticket&& other) noexcept
    : gate_(std::exchange(other.gate_, nullptr)), outcome_(other.outcome_) {}

QueryGate::Ticket& QueryGate::Ticket::operator=(Ticket&& other) noexcept {
  if (this != &other) {
    if (gate_ != nullptr) gate_->Leave();
    gate_ = std::exchange(other.gate_, nullptr);
    outcome_ = other.outcome_;
  }
  return *this;
}

QueryGate::Ticket::~Ticket() {
  if (gate_ != nullptr) gate_->Leave();
}

QueryGate::QueryGate(GateOptions options) : options_(options) {}

QueryGate::Ticket QueryGate::Enter(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mu_);
  const int limit = std::max(1, options_.max_concurrency);
  if (canceled()) return Ticket(nullptr, Outcome::kCanceled);
  if (figures_.running < limit && figures_.queued == 0) {
    ++figures_.running;
    ++figures_.admitted_total;
    return Ticket(this, Outcome::kAdmitted);
  }
  // A slot freed by Leave() belongs to a waiter that has been woken but not yet run: such
  // waiters are leaving the queue, so they do not count against max_queued. (Counting them
  // refused a query that arrived between a Leave() and its waiter's wake-up.)
  const int free_slots = std::max(0, limit - figures_.running);
  if (figures_.queued - std::min(free_slots, figures_.queued) >= options_.max_queued) {
    ++figures_.queue_full_total;
    return Ticket(nullptr, Outcome::kQueueFull);
  }
  ++figures_.queued;
  // Waiters are not served strictly in order; a freed slot goes to whichever wakes first.
  const bool got =
      cv_.wait_until(lock, deadline, [&] { return canceled() || figures_.running < limit; });
  --figures_.queued;
  if (canceled()) return Ticket(nullptr, Outcome::kCanceled);
  if (!got) {
    ++figures_.queue_timeouts_total;
    return Ticket(nullptr, Outcome::kTimeout);
  }
  ++figures_.running;
  ++figures_.admitted_total;
  return Ticket(this, Outcome::kAdmitted);
}

void QueryGate::Leave() {
  {
    std::lock_guard lock(mu_);
    --figures_.running;
  }
  cv_.notify_one();
}

void QueryGate::Shutdown() {
  {
    std::lock_guard lock(mu_);
    shutdown_.store(true, std::memory_order_relaxed);
  }
  cv_.notify_all();
}

QueryGate::Figures QueryGate::figures() const {
  std::lock_guard lock(mu_);
  return figures_;
}

}  // namespace gw::promql
