// A fixture for engine tests: an in-memory store, an Engine, and instant-query helpers.
#ifndef GPUWARDEN_TESTS_PROMQL_ENGINE_FIXTURE_H_
#define GPUWARDEN_TESTS_PROMQL_ENGINE_FIXTURE_H_

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "promql/engine.h"

namespace gw::promql::test_support {

inline tsdb::Labels L(std::initializer_list<tsdb::Label> l) {
  return tsdb::Labels(l);
}

class EngineFixture : public ::testing::Test {
 protected:
  void Add(const tsdb::Labels& l, int64_t t_s, double v) {
    ASSERT_TRUE(q_.Append(l, t_s * 1000, v).ok());
  }
  QueryResult Run(const std::string& expr, int64_t t_s) {
    return engine_.Instant(q_, expr, t_s * 1000);
  }
  // The single value of an instant query (scalar or one-element vector), NaN if the vector is
  // empty.
  double One(const std::string& expr, int64_t t_s = 0) {
    QueryResult r = Run(expr, t_s);
    EXPECT_TRUE(r.ok()) << expr << ": " << (r.ok() ? "" : r.error().message);
    if (!r.ok()) return -12345;
    if (r.value().type == ValueType::kScalar) return r.value().scalar;
    EXPECT_LE(r.value().series.size(), 1u) << expr;
    return r.value().series.empty() ? std::nan("") : r.value().series[0].points[0].v;
  }
  size_t Count(const std::string& expr, int64_t t_s = 0) {
    QueryResult r = Run(expr, t_s);
    EXPECT_TRUE(r.ok()) << expr << ": " << (r.ok() ? "" : r.error().message);
    return r.ok() ? r.value().series.size() : 0;
  }
  // "ok", or the message of the execution error the query failed with.
  std::string ErrorOf(const std::string& expr, int64_t t_s) {
    QueryResult r = Run(expr, t_s);
    if (r.ok()) return "ok";
    EXPECT_EQ(r.error().kind, QueryError::Kind::kExecution) << expr;
    return r.error().message;
  }

  tsdb::MemoryQuerier q_;
  Engine engine_;
};

}  // namespace gw::promql::test_support

#endif  // GPUWARDEN_TESTS_PROMQL_ENGINE_FIXTURE_H_
