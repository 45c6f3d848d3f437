// The evaluator reads selectors through Querier::SelectRuns. The store hands a series out as
// several runs (one per block, then the head); these tests cut every series into many short
// runs and check that every kind of selector answers exactly as over one vector.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

#include "promql/engine.h"

namespace gw::promql {
namespace {

// MemoryQuerier whose SelectRuns cuts each series into runs of 1 to `max_run` samples, each in
// its own allocation.
class SplitRunsQuerier : public tsdb::MemoryQuerier {
 public:
  explicit SplitRunsQuerier(size_t max_run) : max_run_(max_run) {}

  Status SelectRuns(const std::vector<tsdb::Matcher>& matchers, int64_t mint_ms, int64_t maxt_ms,
                    std::vector<tsdb::SeriesRuns>* out) override {
    std::vector<tsdb::SeriesData> data;
    if (Status st = Select(matchers, mint_ms, maxt_ms, &data); !st.ok()) return st;
    out->clear();
    std::mt19937 rng(7);
    for (tsdb::SeriesData& d : data) {
      tsdb::SeriesRuns sr;
      sr.labels = d.labels;
      for (size_t i = 0; i < d.samples.size();) {
        const size_t n = std::min(d.samples.size() - i, 1 + rng() % max_run_);
        auto run = std::make_shared<const std::vector<tsdb::Sample>>(
            d.samples.begin() + static_cast<std::ptrdiff_t>(i),
            d.samples.begin() + static_cast<std::ptrdiff_t>(i + n));
        sr.runs.emplace_back(run->data(), run->size());
        sr.owners.push_back(std::move(run));
        i += n;
      }
      out->push_back(std::move(sr));
    }
    return Status::Ok();
  }

 private:
  size_t max_run_;
};

// The same data in a plain MemoryQuerier (one run per series) and in split ones.
void Fill(tsdb::MemoryQuerier* q) {
  std::mt19937 rng(3);
  for (int gpu = 0; gpu < 3; ++gpu) {
    tsdb::Labels l = {{"__name__", "x"}, {"gpu", std::to_string(gpu)}};
    int64_t t = 0;
    double counter = 0;
    for (int i = 0; i < 400; ++i) {
      t += 1000 + static_cast<int64_t>(rng() % 20000);  // irregular, with gaps past 5 m
      if (rng() % 50 == 0) t += 400'000;
      counter += static_cast<double>(rng() % 100);
      if (rng() % 90 == 0) counter = 0;  // a reset
      const double v = rng() % 70 == 0 ? tsdb::StaleNaN() : counter;
      ASSERT_TRUE(q->Append(l, t, v).ok());
    }
  }
}

std::string Dump(const QueryResult& r) {
  if (!r.ok()) return "error: " + r.error().message;
  std::string out;
  const Value& v = r.value();
  out += std::to_string(static_cast<int>(v.type)) + " " + std::to_string(v.scalar) + "\n";
  for (const Series& s : v.series) {
    for (const tsdb::Label& l : s.labels) out += l.name + "=" + l.value + ",";
    out += ":";
    for (const Point& p : s.points)
      out += " " + std::to_string(p.t_ms) + "/" + std::to_string(std::bit_cast<uint64_t>(p.v));
    out += "\n";
  }
  return out;
}

TEST(Runs, EverySelectorAnswersAsOverOneVector) {
  tsdb::MemoryQuerier whole;
  Fill(&whole);
  const char* exprs[] = {
      "x",
      "x offset 3m",
      "x @ 1000",
      "timestamp(x)",
      "rate(x[5m])",
      "increase(x[90s])",
      "irate(x[1m])",
      "max_over_time(x[2m])",
      "last_over_time(x[20s])",
      "count_over_time(x[10m])",
      "absent_over_time(x[15s])",
      "quantile_over_time(0.9, x[7m])",
      "sum by (gpu) (rate(x[3m] offset 1m))",
      "max_over_time(rate(x[1m])[5m:30s])",
      "x / on(gpu) x",
      "max(x)",
  };
  Engine engine;
  for (size_t max_run : {1, 2, 5, 40}) {
    SplitRunsQuerier split(max_run);
    Fill(&split);
    for (const char* e : exprs) {
      for (int64_t t = 0; t <= 4'000'000; t += 333'333)
        ASSERT_EQ(Dump(engine.Instant(whole, e, t)), Dump(engine.Instant(split, e, t)))
            << e << " at " << t << ", runs of at most " << max_run;
      ASSERT_EQ(Dump(engine.Range(whole, e, 0, 4'000'000, 17'000)),
                Dump(engine.Range(split, e, 0, 4'000'000, 17'000)))
          << e << ", runs of at most " << max_run;
    }
  }
}

}  // namespace
}  // namespace gw::promql
