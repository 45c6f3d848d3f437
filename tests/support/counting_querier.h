// A Querier around another that counts the raw reads it hands out (SelectRuns: calls and
// samples), so a test can tell that a reader took rollups instead of raw samples. Select,
// SelectRollups and the label lookups are passed through uncounted.
#ifndef GPUWARDEN_TESTS_SUPPORT_COUNTING_QUERIER_H_
#define GPUWARDEN_TESTS_SUPPORT_COUNTING_QUERIER_H_

#include <string>
#include <vector>

#include "tsdb/storage.h"

namespace gw::testing {

class CountingQuerier : public tsdb::Querier {
 public:
  explicit CountingQuerier(tsdb::Querier* q) : q_(q) {}
  Status Select(const std::vector<tsdb::Matcher>& m, int64_t mint, int64_t maxt,
                std::vector<tsdb::SeriesData>* out) override {
    return q_->Select(m, mint, maxt, out);
  }
  Status SelectRuns(const std::vector<tsdb::Matcher>& m, int64_t mint, int64_t maxt,
                    std::vector<tsdb::SeriesRuns>* out) override {
    ++raw_selects;
    Status s = q_->SelectRuns(m, mint, maxt, out);
    for (const auto& x : *out) raw_samples += x.size();
    return s;
  }
  Status SelectRollups(const std::vector<tsdb::Matcher>& m, int64_t mint, int64_t maxt,
                       std::vector<tsdb::SeriesRollups>* out, bool* supported) override {
    return q_->SelectRollups(m, mint, maxt, out, supported);
  }
  Status LabelNames(const std::vector<std::vector<tsdb::Matcher>>& m, int64_t mint, int64_t maxt,
                    std::vector<std::string>* out) override {
    return q_->LabelNames(m, mint, maxt, out);
  }
  Status LabelValues(const std::string& name, const std::vector<std::vector<tsdb::Matcher>>& m,
                     int64_t mint, int64_t maxt, std::vector<std::string>* out) override {
    return q_->LabelValues(name, m, mint, maxt, out);
  }
  size_t raw_selects = 0, raw_samples = 0;

 private:
  tsdb::Querier* q_;
};

}  // namespace gw::testing

#endif  // GPUWARDEN_TESTS_SUPPORT_COUNTING_QUERIER_H_
