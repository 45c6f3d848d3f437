// Query limits: the gate (concurrency, bounded queue, queue timeout, shutdown), and the engine's
// use of it — Prometheus' errors for a queue timeout, a cancellation and too many samples held
// by a subquery while it is being evaluated.
#include <gtest/gtest.h>

#include <optional>

#include <chrono>
#include <future>
#include <thread>

#include "promql/engine.h"
#include "promql/gate.h"

namespace gw::promql {
namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point In(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

TEST(QueryGate, AdmitsUpToTheLimitQueuesThenRefuses) {
  QueryGate gate(GateOptions{.max_concurrency = 1, .max_queued = 1});
  QueryGate::Ticket first = gate.Enter(In(60));
  ASSERT_TRUE(first.admitted());
  auto second = std::async(std::launch::async, [&] { return gate.Enter(In(60)); });
  ASSERT_TRUE([&] {
    for (int i = 0; i < 2000 && gate.figures().queued == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return gate.figures().queued == 1;
  }());
  // The queue (1) is full: refused at once.
  EXPECT_EQ(gate.Enter(In(60)).outcome(), QueryGate::Outcome::kQueueFull);
  // Releasing the slot admits the waiting one.
  first = QueryGate::Ticket();
  QueryGate::Ticket t = second.get();
  EXPECT_TRUE(t.admitted());
  QueryGate::Figures f = gate.figures();
  EXPECT_EQ(f.running, 1);
  EXPECT_EQ(f.queued, 0);
  EXPECT_EQ(f.admitted_total, 2u);
  EXPECT_EQ(f.queue_full_total, 1u);
}

TEST(QueryGate, WaitEndsAtTheDeadline) {
  QueryGate gate(GateOptions{.max_concurrency = 1, .max_queued = 4});
  QueryGate::Ticket held = gate.Enter(In(60));
  ASSERT_TRUE(held.admitted());
  EXPECT_EQ(gate.Enter(In(0.05)).outcome(), QueryGate::Outcome::kTimeout);
  EXPECT_EQ(gate.figures().queue_timeouts_total, 1u);
  EXPECT_EQ(gate.figures().queued, 0);
}

TEST(QueryGate, ShutdownCancelsWaitersAndRefusesNewQueries) {
  QueryGate gate(GateOptions{.max_concurrency = 1, .max_queued = 4});
  QueryGate::Ticket held = gate.Enter(In(60));
  auto waiting = std::async(std::launch::async, [&] { return gate.Enter(In(60)).outcome(); });
  for (int i = 0; i < 2000 && gate.figures().queued == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  gate.Shutdown();
  EXPECT_EQ(waiting.get(), QueryGate::Outcome::kCanceled);
  EXPECT_TRUE(gate.canceled());
  EXPECT_EQ(gate.Enter(In(60)).outcome(), QueryGate::Outcome::kCanceled);
}

class EngineLimitsTest : public ::testing::Test {
 protected:
  tsdb::MemoryQuerier q_;
};

// A query arriving between a Leave() and the wake-up of the waiter it freed a slot for is not
// refused as "queue full": that waiter is on its way out of the queue. (In serve, a query worker
// that had just answered took its next query in exactly that window and got 503.)
TEST(QueryGateTest, AWokenWaiterDoesNotCountAgainstTheQueue) {
  QueryGate gate(GateOptions{.max_concurrency = 1, .max_queued = 1});
  for (int round = 0; round < 200; ++round) {
    std::optional<QueryGate::Ticket> holder(gate.Enter(In(5)));
    ASSERT_EQ(holder->outcome(), QueryGate::Outcome::kAdmitted);
    std::thread waiter(
        [&] { EXPECT_EQ(gate.Enter(In(5)).outcome(), QueryGate::Outcome::kAdmitted); });
    while (gate.figures().queued != 1) std::this_thread::yield();
    holder.reset();  // frees the slot for the waiter...
    // ...and a new query comes before the waiter has run: it may wait, never be refused.
    QueryGate::Outcome late = gate.Enter(In(0.001)).outcome();
    EXPECT_NE(late, QueryGate::Outcome::kQueueFull) << "round " << round;
    waiter.join();
  }
  EXPECT_EQ(gate.figures().queue_full_total, 0u);
}

TEST_F(EngineLimitsTest, QueueTimeoutAndQueueFullAreReported) {
  EngineOptions o;
  // Each gate outlives the ticket held on it (a ticket's destructor leaves its gate).
  auto first_gate = std::make_shared<QueryGate>(GateOptions{.max_concurrency = 1, .max_queued = 1});
  o.gate = first_gate;
  o.timeout_s = 0.05;
  QueryGate::Ticket held = o.gate->Enter(In(60));
  Engine engine(o);
  QueryResult r = engine.Instant(q_, "1", 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, QueryError::Kind::kTimeout);
  EXPECT_EQ(r.error().message, "query timed out in query queue");

  o.gate = std::make_shared<QueryGate>(GateOptions{.max_concurrency = 1, .max_queued = 0});
  QueryGate::Ticket held2 = o.gate->Enter(In(60));
  r = Engine(o).Range(q_, "1", 0, 1000, 1000);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, QueryError::Kind::kUnavailable);
  EXPECT_NE(r.error().message.find("query queue is full"), std::string::npos);
  // A parse error is answered without a slot.
  r = Engine(o).Instant(q_, "sum(", 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, QueryError::Kind::kBadData);
}

TEST_F(EngineLimitsTest, LongSubqueryStopsAtTheTimeout) {
  EngineOptions o;
  o.timeout_s = 0.2;
  // Billions of steps; it must stop inside the subquery's loop.
  QueryResult r = Engine(o).Instant(q_, "count_over_time(absent(nothing)[30d:1ms])", 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, QueryError::Kind::kTimeout);
  EXPECT_EQ(r.error().message, "query timed out in expression evaluation");
}

TEST_F(EngineLimitsTest, ShutdownCancelsAnEvaluation) {
  EngineOptions o;
  o.timeout_s = 600;
  o.gate = std::make_shared<QueryGate>();
  auto result = std::async(std::launch::async, [&] {
    return Engine(o).Instant(q_, "count_over_time(absent(nothing)[30d:1ms])", 0);
  });
  for (int i = 0; i < 2000 && o.gate->figures().running == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  o.gate->Shutdown();
  QueryResult r = result.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, QueryError::Kind::kCanceled);
  EXPECT_EQ(r.error().message, "query was canceled in expression evaluation");
  EXPECT_EQ(o.gate->figures().running, 0);
}

TEST_F(EngineLimitsTest, SubqueryPointsCountWhileTheyAccumulate) {
  EngineOptions o;
  o.max_samples = 1000;
  o.timeout_s = 600;
  // 3,600 points would be gathered: refused long before the subquery ends.
  QueryResult r = Engine(o).Instant(q_, "count_over_time(vector(1)[1h:1s])", 3600000);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, QueryError::Kind::kExecution);
  EXPECT_EQ(r.error().message,
            "query processing would load too many samples into memory in query execution");
  r = Engine(o).Instant(q_, "count_over_time(vector(1)[5m:1s])", 3600000);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().series.at(0).points.at(0).v, 301);  // both ends, as in 2.42
}

}  // namespace
}  // namespace gw::promql
