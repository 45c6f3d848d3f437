// DB::NewQuerier: the tsdb::Querier over a DB (head + SQLite), merged per series by DB::ReadSeries.
#include <algorithm>
#include <chrono>
#include <set>

#include "tsdb/db.h"

namespace gw::tsdb {
namespace {

class DBQuerier : public Querier {
 public:
  explicit DBQuerier(DB* db) : db_(db) {}

  Status Select(const std::vector<Matcher>& matchers, int64_t mint_ms, int64_t maxt_ms,
                std::vector<SeriesData>* out) override {
    const auto start = std::chrono::steady_clock::now();
    out->clear();
    for (SeriesRef ref : db_->head().Select(matchers)) {
      SeriesData sd;
      Status st = db_->ReadSeriesWithRollups(ref, mint_ms, maxt_ms, &sd.samples);
      if (!st.ok()) return st;
      if (sd.samples.empty()) continue;
      sd.labels = db_->head().LabelsOf(ref);
      out->push_back(std::move(sd));
    }
    std::sort(out->begin(), out->end(),
              [](const SeriesData& a, const SeriesData& b) { return a.labels < b.labels; });
    db_->RecordSelect(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return Status::Ok();
  }

  Status SelectRuns(const std::vector<Matcher>& matchers, int64_t mint_ms, int64_t maxt_ms,
                    std::vector<SeriesRuns>* out) override {
    const auto start = std::chrono::steady_clock::now();
    out->clear();
    for (SeriesRef ref : db_->head().Select(matchers)) {
      SeriesRuns sr;
      Status st = db_->ReadSeriesRunsWithRollups(ref, mint_ms, maxt_ms, &sr);
      if (!st.ok()) return st;
      if (sr.runs.empty()) continue;
      sr.labels = db_->head().LabelsOf(ref);
      out->push_back(std::move(sr));
    }
    std::sort(out->begin(), out->end(),
              [](const SeriesRuns& a, const SeriesRuns& b) { return a.labels < b.labels; });
    db_->RecordSelect(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return Status::Ok();
  }

  Status SelectRollups(const std::vector<Matcher>& matchers, int64_t mint_ms, int64_t maxt_ms,
                       std::vector<SeriesRollups>* out, bool* supported) override {
    out->clear();
    *supported = true;
    for (SeriesRef ref : db_->head().Select(matchers)) {
      SeriesRollups sr;
      Status st = db_->ReadCompleteRollups(ref, mint_ms, maxt_ms, &sr.rollups);
      if (!st.ok()) return st;
      if (sr.rollups.empty()) continue;
      sr.labels = db_->head().LabelsOf(ref);
      out->push_back(std::move(sr));
    }
    std::sort(out->begin(), out->end(),
              [](const SeriesRollups& a, const SeriesRollups& b) { return a.labels < b.labels; });
    return Status::Ok();
  }

  Status LabelNames(const std::vector<std::vector<Matcher>>& matcher_sets, int64_t mint_ms,
                    int64_t maxt_ms, std::vector<std::string>* out) override {
    std::set<std::string> names;
    Status st = ForEachSeries(matcher_sets, mint_ms, maxt_ms, [&](const Labels& labels) {
      for (const Label& l : labels) names.insert(l.name);
    });
    out->assign(names.begin(), names.end());
    return st;
  }

  Status LabelValues(const std::string& name, const std::vector<std::vector<Matcher>>& matcher_sets,
                     int64_t mint_ms, int64_t maxt_ms, std::vector<std::string>* out) override {
    std::set<std::string> values;
    Status st = ForEachSeries(matcher_sets, mint_ms, maxt_ms, [&](const Labels& labels) {
      std::string_view v = LabelValue(labels, name);
      if (!v.empty()) values.emplace(v);
    });
    out->assign(values.begin(), values.end());
    return st;
  }

 private:
  // Calls `fn` with the labels of every series matching any set (all series when there is no
  // set) that has at least one sample in the range.
  template <class Fn>
  Status ForEachSeries(const std::vector<std::vector<Matcher>>& matcher_sets, int64_t mint_ms,
                       int64_t maxt_ms, Fn fn) {
    std::set<SeriesRef> refs;
    if (matcher_sets.empty()) {
      for (SeriesRef r : db_->head().Select({})) refs.insert(r);
    } else {
      for (const auto& set : matcher_sets)
        for (SeriesRef r : db_->head().Select(set)) refs.insert(r);
    }
    std::vector<Sample> samples;
    for (SeriesRef ref : refs) {
      Status st = db_->ReadSeries(ref, mint_ms, maxt_ms, &samples);
      if (!st.ok()) return st;
      if (!samples.empty()) fn(db_->head().LabelsOf(ref));
    }
    return Status::Ok();
  }

  DB* db_;
};

}  // namespace

std::unique_ptr<Querier> DB::NewQuerier() {
  return std::make_unique<DBQuerier>(this);
}

}  // namespace gw::tsdb
