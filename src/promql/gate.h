// promql/gate.h — how many queries evaluate at once, and how many may wait for a turn.
//
// Usage (the engine does this when EngineOptions::gate is set):
//   auto gate = std::make_shared<promql::QueryGate>(promql::GateOptions{.max_concurrency = 2});
//   promql::QueryGate::Ticket t = gate->Enter(deadline);
//   if (t.outcome() != promql::QueryGate::Outcome::kAdmitted) return the error for it;
//   ... evaluate, checking gate->canceled() ...   // the slot is released when `t` goes away
//
// As Prometheus' --query.max-concurrency: a query beyond the limit waits for a slot, and that
// wait counts against its timeout ("query timed out in query queue"). Unlike Prometheus, the
// number of waiting queries is bounded as well (max_queued): each waiting query holds the thread
// it runs on. A query that finds the queue full is refused at once (kQueueFull). `serve` runs the
// query API on max_concurrency + max_queued workers of its own, so that never happens there:
// further queries wait in the HTTP server's queue without a thread.
//
// Shutdown() refuses new queries, wakes the waiting ones (kCanceled) and raises canceled(), which
// evaluations in progress poll, so no query outlives the agent's shutdown by more than one
// evaluation step.
//
// Threading: every method is thread-safe.
#ifndef GPUWARDEN_PROMQL_GATE_H_
#define GPUWARDEN_PROMQL_GATE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace gw::promql {

struct GateOptions {
  int max_concurrency = 2;  // queries evaluating at once (>= 1)
  int max_queued = 4;       // queries waiting for a slot (>= 0)
};

class QueryGate {
 public:
  enum class Outcome { kAdmitted, kQueueFull, kTimeout, kCanceled };

  // Holds a slot while it lives (when admitted). Movable, not copyable; must not outlive its gate.
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& other) noexcept;
    Ticket& operator=(Ticket&& other) noexcept;
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    ~Ticket();
    Outcome outcome() const { return outcome_; }
    bool admitted() const { return outcome_ == Outcome::kAdmitted; }

   private:
    friend class QueryGate;
    Ticket(QueryGate* gate, Outcome outcome) : gate_(gate), outcome_(outcome) {}
    QueryGate* gate_ = nullptr;  // set only while holding a slot
    Outcome outcome_ = Outcome::kCanceled;
  };

  explicit QueryGate(GateOptions options = {});
  QueryGate(const QueryGate&) = delete;
  QueryGate& operator=(const QueryGate&) = delete;

  // Takes a slot, waiting until `deadline` for one if all are taken and the queue has room.
  Ticket Enter(std::chrono::steady_clock::time_point deadline);

  // Refuses new queries and cancels waiting and running ones (see above). Idempotent.
  void Shutdown();
  bool canceled() const { return shutdown_.load(std::memory_order_relaxed); }

  const GateOptions& options() const { return options_; }

  // For self-metrics: queries evaluating and waiting now; refused because the queue was full,
  // and timed out while waiting, since start.
  struct Figures {
    int running = 0, queued = 0;
    uint64_t admitted_total = 0, queue_full_total = 0, queue_timeouts_total = 0;
  };
  Figures figures() const;

 private:
  void Leave();

  const GateOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  Figures figures_;
  std::atomic<bool> shutdown_{false};
};

}  // namespace gw::promql

#endif  // GPUWARDEN_PROMQL_GATE_H_
