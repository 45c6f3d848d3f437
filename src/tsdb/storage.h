// tsdb/storage.h — the interfaces between the store and everything that reads or writes it.
//
// PromQL (promql/), rules, diagnosis and reports read history only through `Querier`; the
// collector's recorder, scrape, rules and the serve services write it only through `Appender`.
// The store (tsdb/) implements both (DBAppender in db.h), and tests implement them in memory.
// Nothing here knows PromQL.
//
// Conventions (Prometheus'): timestamps are int64 milliseconds since the Unix epoch; a series is
// identified by its label set, sorted by label name, with the metric name under "__name__"; a
// *stale marker* is the NaN with bit pattern 0x7ff0000000000002, written when a series disappears
// (a GPU lost, a process gone) so queries stop returning it at once instead of after 5 minutes.
#ifndef GPUWARDEN_TSDB_STORAGE_H_
#define GPUWARDEN_TSDB_STORAGE_H_

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace gw::tsdb {

inline constexpr uint64_t kStaleNaNBits = 0x7ff0000000000002ULL;

inline double StaleNaN() {
  double d;
  std::memcpy(&d, &kStaleNaNBits, sizeof d);
  return d;
}
inline bool IsStaleNaN(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits == kStaleNaNBits;
}

struct Label {
  std::string name, value;
  bool operator==(const Label&) const = default;
  auto operator<=>(const Label&) const = default;
};

// Sorted by name, names unique. "__name__" holds the metric name.
using Labels = std::vector<Label>;

// Prometheus' name rules: a label name is [a-zA-Z_][a-zA-Z0-9_]*, a metric name
// [a-zA-Z_:][a-zA-Z0-9_:]*. Names starting with "__" are reserved but valid here.
bool IsValidLabelName(std::string_view name);
bool IsValidMetricName(std::string_view name);

// The value of `name` in `labels`, "" if absent (Prometheus treats absent and empty alike).
std::string_view LabelValue(const Labels& labels, std::string_view name);

struct Sample {
  int64_t t_ms = 0;
  double v = 0;
};

enum class MatchType { kEqual, kNotEqual, kRegexMatch, kRegexNoMatch };

// A label matcher as in `{gpu=~"0|1"}`. Regexes are RE2 (Go's syntax), fully anchored.
class Matcher {
 public:
  // Fails with Prometheus' wording when the regex does not compile.
  static Expected<Matcher> Make(MatchType type, std::string name, std::string value);
  bool Matches(std::string_view value) const;
  MatchType type() const { return type_; }
  const std::string& name() const { return name_; }
  const std::string& value() const { return value_; }

 private:
  MatchType type_ = MatchType::kEqual;
  std::string name_, value_;
  std::shared_ptr<const void> regex_;  // RE2, type-erased so this header needs no re2 include
};

struct SeriesData {
  Labels labels;
  std::vector<Sample> samples;  // time-ordered; may contain stale markers
};

// One series' samples as read-only runs of memory shared with the store (its decoded blocks), so
// that large reads copy nothing. Runs are non-empty and time-ordered, each run's first sample
// strictly after the previous run's last; together they are exactly what Select's `samples`
// would hold. `owners` keep the runs' memory alive: the runs stay valid while this object (or a
// copy of `owners`) lives, whatever the store does meanwhile.
struct SeriesRuns {
  Labels labels;
  std::vector<std::span<const Sample>> runs;
  std::vector<std::shared_ptr<const std::vector<Sample>>> owners;

  size_t size() const {
    size_t n = 0;
    for (const auto& r : runs) n += r.size();
    return n;
  }
  // Takes `samples` (time-ordered, unique in time) as the only run.
  void Own(std::vector<Sample> samples);
};

struct Rollup;  // rollup.h (which includes this header); include it to use SeriesRollups
struct SeriesRollups {
  Labels labels;
  std::vector<Rollup> rollups;
  // Windows [t, t + 5 min) with t + 5 min <= this are complete for the series (see
  // Querier::SelectRollups): it has a rollup in each one it had samples in and none elsewhere.
  int64_t complete_before_ms = INT64_MAX;
};

// Read access to stored samples. Implementations say whether they are thread-safe.
class Querier {
 public:
  virtual ~Querier() = default;

  // Every series matching all `matchers` (at least one matcher must not match the empty string,
  // as in Prometheus), with its samples in [mint_ms, maxt_ms], in label order. Series with no
  // sample in the range are left out.
  virtual Status Select(const std::vector<Matcher>& matchers, int64_t mint_ms, int64_t maxt_ms,
                        std::vector<SeriesData>* out) = 0;

  // Select without the copy: the same series in the same order, with the same samples as runs
  // (see SeriesRuns). The default calls Select and moves each series' samples into one run;
  // stores that keep decoded samples in memory hand out views of them instead.
  virtual Status SelectRuns(const std::vector<Matcher>& matchers, int64_t mint_ms, int64_t maxt_ms,
                            std::vector<SeriesRuns>* out);

  // The 5-minute rollups (rollup.h) of the series matching `matchers` for the windows that lie
  // wholly inside [mint_ms, maxt_ms + 1) — window start >= mint_ms, window end <= maxt_ms + 1 —
  // in the same series order as Select, each series' rollups ascending. A rollup appears for each
  // window that is *complete* for its series — every sample the store has of the series there
  // is summarised in it, so a complete window without a rollup had no sample — and the windows
  // before SeriesRollups::complete_before_ms are complete. The others (the head's, or ones the
  // store cannot summarise) have no rollup, and a reader takes raw samples (Select) for them.
  // Every matching series that may have samples in those windows is listed, with no rollups if
  // none is complete; a series left out has none there. `*supported` is false when the querier
  // keeps no rollups at all (the default); then `out` is empty and the reader uses raw samples
  // throughout. Rollups whose raw samples aged out are returned too (exact as summaries of what
  // was there).
  virtual Status SelectRollups(const std::vector<Matcher>& matchers, int64_t mint_ms,
                               int64_t maxt_ms, std::vector<SeriesRollups>* out, bool* supported);

  // Label names / values of series with samples in [mint_ms, maxt_ms] matching any of the
  // matcher sets (all series when `matcher_sets` is empty), sorted, unique.
  virtual Status LabelNames(const std::vector<std::vector<Matcher>>& matcher_sets, int64_t mint_ms,
                            int64_t maxt_ms, std::vector<std::string>* out) = 0;
  virtual Status LabelValues(const std::string& name,
                             const std::vector<std::vector<Matcher>>& matcher_sets, int64_t mint_ms,
                             int64_t maxt_ms, std::vector<std::string>* out) = 0;
};

// Write access to the store. Samples are appended to a series by reference (GetRef once per
// series, then Append per sample, so steady-state writers do not hash labels) and made durable
// by Commit, once per batch (a collection cycle, a rule's result). A series that disappears gets
// a stale marker: Append(ref, t, StaleNaN()). Implementations are used from one thread at a time
// (the store's writer thread).
class Appender {
 public:
  virtual ~Appender() = default;
  using Ref = uint64_t;
  // A stable reference for the series `labels` (creating it if new).
  virtual Expected<Ref> GetRef(const Labels& labels) = 0;
  virtual Status Append(Ref ref, int64_t t_ms, double v) = 0;
  // Makes everything appended since the last Commit durable.
  virtual Status Commit() = 0;

  // GetRef + Append, for writers that do not keep references (rule results).
  Status AppendSample(const Labels& labels, int64_t t_ms, double v) {
    auto ref = GetRef(labels);
    if (!ref.ok()) return Error{ref.error().message};
    return Append(*ref, t_ms, v);
  }
};

// A Querier over series held in memory: for tests and for small evaluations. Not thread-safe
// while being filled; safe for concurrent reads afterwards.
class MemoryQuerier : public Querier {
 public:
  // Adds one sample; keeps each series time-ordered (a sample older than the last is an error).
  Status Append(const Labels& labels, int64_t t_ms, double v);
  Status Select(const std::vector<Matcher>& matchers, int64_t mint_ms, int64_t maxt_ms,
                std::vector<SeriesData>* out) override;
  Status LabelNames(const std::vector<std::vector<Matcher>>& matcher_sets, int64_t mint_ms,
                    int64_t maxt_ms, std::vector<std::string>* out) override;
  Status LabelValues(const std::string& name, const std::vector<std::vector<Matcher>>& matcher_sets,
                     int64_t mint_ms, int64_t maxt_ms, std::vector<std::string>* out) override;
  // Off by default (supported = false). With EnableRollups(true), the rollups are computed from
  // the samples (AddToRollups), every window counting as complete: tests compare evaluation over
  // rollups with evaluation over raw samples this way.
  void EnableRollups(bool on) { rollups_ = on; }
  Status SelectRollups(const std::vector<Matcher>& matchers, int64_t mint_ms, int64_t maxt_ms,
                       std::vector<SeriesRollups>* out, bool* supported) override;

 private:
  bool rollups_ = false;
  std::vector<SeriesData> series_;  // sorted by labels
};

// An Appender into a MemoryQuerier (tests, `promtool test rules`): a reference indexes the label
// sets seen so far; Commit does nothing. `querier` must outlive it.
class MemoryAppender : public Appender {
 public:
  explicit MemoryAppender(MemoryQuerier* querier) : querier_(querier) {}
  Expected<Ref> GetRef(const Labels& labels) override {
    for (size_t i = 0; i < labels_.size(); ++i)
      if (labels_[i] == labels) return Ref(i);
    labels_.push_back(labels);
    return Ref(labels_.size() - 1);
  }
  Status Append(Ref ref, int64_t t_ms, double v) override {
    return querier_->Append(labels_[ref], t_ms, v);
  }
  Status Commit() override { return Status::Ok(); }
  const Labels& labels(Ref ref) const { return labels_[ref]; }

 private:
  MemoryQuerier* querier_;
  std::vector<Labels> labels_;  // by ref
};

}  // namespace gw::tsdb

#endif  // GPUWARDEN_TSDB_STORAGE_H_
