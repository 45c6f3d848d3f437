#include "remote/queue.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "base/file.h"

namespace gw::remote {

namespace {

double MonotonicSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

constexpr char kProgressHeader[] = "gpuwarden remote-write progress 1";

}  // namespace

bool KeepSeries(const std::vector<RelabelRule>& rules, const tsdb::Labels& labels) {
  std::string joined;
  for (const RelabelRule& r : rules) {
    joined.clear();
    for (size_t i = 0; i < r.source_labels.size(); ++i) {
      if (i > 0) joined += r.separator;
      joined += tsdb::LabelValue(labels, r.source_labels[i]);
    }
    if (r.regex.Matches(joined) != r.keep) return false;
  }
  return true;
}

bool ParseAggregate(const std::string& name, Aggregate* out) {
  static const std::pair<const char*, Aggregate> kNames[] = {
      {"min", Aggregate::kMin}, {"max", Aggregate::kMax},     {"avg", Aggregate::kAvg},
      {"sum", Aggregate::kSum}, {"count", Aggregate::kCount}, {"last", Aggregate::kLast}};
  for (const auto& [n, a] : kNames)
    if (name == n) {
      *out = a;
      return true;
    }
  return false;
}

const char* AggregateName(Aggregate a) {
  switch (a) {
    case Aggregate::kMin:
      return "min";
    case Aggregate::kMax:
      return "max";
    case Aggregate::kAvg:
      return "avg";
    case Aggregate::kSum:
      return "sum";
    case Aggregate::kCount:
      return "count";
    case Aggregate::kLast:
      return "last";
  }
  return "?";
}

namespace {

// The words Prometheus ("out of order sample") and Mimir/Cortex ("out-of-order") use for a
// sample older than the newest its series holds.
bool RefusedAsOutOfOrder(const std::string& error) {
  std::string lower(error);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find("out of order") != std::string::npos ||
         lower.find("out-of-order") != std::string::npos;
}

}  // namespace

Queue::Queue(QueueOptions options, tsdb::DB* db, SendFn send, Logger* log)
    : options_(std::move(options)),
      db_(db),
      send_(std::move(send)),
      log_(log),
      backoff_(options_.min_backoff_s, options_.max_backoff_s) {
  if (options_.max_samples_per_send == 0) options_.max_samples_per_send = 1;
  LoadProgress();
}

Queue::~Queue() {
  Stop();
}

void Queue::Start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable() || stop_) return;
  thread_ = std::thread([this] { Run(); });
}

void Queue::Notify(int64_t t_ms) {
  std::lock_guard lock(mu_);
  if (t_ms <= now_ms_) return;
  now_ms_ = t_ms;
  figures_.now_ms = t_ms;
}

void Queue::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Queue::Figures Queue::figures() const {
  std::lock_guard lock(mu_);
  return figures_;
}

bool Queue::WaitStop(double seconds) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return stop_; });
  return stop_;
}

void Queue::Run() {
  while (true) {
    {
      std::lock_guard lock(mu_);
      if (stop_) break;
    }
    if (!Pass()) break;
    // Behind (catching up after an outage or a restart): the next slice at once.
    if (behind_) continue;
    if (WaitStop(options_.batch_send_deadline_s)) break;
  }
  SaveProgress();
}

// ---- Progress on disk ----

void Queue::LoadProgress() {
  std::ifstream in(options_.progress_file);
  if (!in) return;  // a new endpoint: starts at the first Notify (start_lookback_ms before it)
  std::string line;
  if (!std::getline(in, line) || line != kProgressHeader) {
    log_->Warn("remote_write " + options_.name + ": " + options_.progress_file +
               " is not a progress file; starting as a new endpoint");
    return;
  }
  int64_t start = INT64_MIN, cursor = INT64_MIN;
  std::vector<std::pair<uint64_t, int64_t>> entries;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    fields >> key;
    if (key == "start_ms") {
      fields >> start;
    } else if (key == "cursor_ms") {
      fields >> cursor;
    } else if (key == "s") {
      uint64_t ref = 0;
      int64_t last = 0;
      if (fields >> ref >> last) entries.emplace_back(ref, last);
    }
  }
  if (start == INT64_MIN || cursor == INT64_MIN) {
    log_->Warn("remote_write " + options_.name + ": " + options_.progress_file +
               " is incomplete; starting as a new endpoint");
    return;
  }
  start_ms_ = start;
  cursor_ms_ = cursor;
  for (const auto& [ref, last] : entries) {
    if (ref == 0 || ref > (1ULL << 32)) continue;
    if (series_.size() <= ref) series_.resize(ref + 1);
    series_[ref].last_sent = last;
  }
}

void Queue::SaveProgress() {
  if (start_ms_ == INT64_MIN) return;
  std::string text = kProgressHeader;
  text += "\nstart_ms " + std::to_string(start_ms_) + "\ncursor_ms " + std::to_string(cursor_ms_) +
          "\n";
  char line[64];
  for (size_t ref = 1; ref < series_.size(); ++ref) {
    const int64_t last = series_[ref].last_sent;
    if (last == INT64_MIN || last <= start_ms_) continue;
    std::snprintf(line, sizeof line, "s %zu %lld\n", ref, static_cast<long long>(last));
    text += line;
  }
  progress_moved_ = false;
  saved_cursor_ms_ = cursor_ms_;
  if (Status s = WriteFileDurably(options_.progress_file, text); !s.ok()) {
    std::lock_guard lock(mu_);
    if (figures_.progress_write_failures++ == 0)
      log_->Error("remote_write " + options_.name + ": cannot save progress: " + s.message() +
                  " (a restart would resend from the last saved point)");
  }
}

// ---- One pass ----

void Queue::RefreshSeries() {
  const size_t n = db_->head().num_series();
  if (series_.size() < n + 1) series_.resize(n + 1);
  uint64_t dropped = 0;
  for (size_t ref = 1; ref <= n; ++ref) {
    SeriesState& s = series_[ref];
    if (!s.known) {
      tsdb::Labels labels = db_->head().LabelsOf(ref);
      if (labels.empty()) continue;  // not registered yet
      s.known = true;
      s.keep = KeepSeries(options_.relabel, labels);
      if (s.last_sent == INT64_MIN) s.last_sent = start_ms_;
      if (s.keep) {
        // External labels where the series has none of that name, then sorted by name.
        for (const tsdb::Label& e : options_.external_labels)
          if (tsdb::LabelValue(labels, e.name).empty()) labels.push_back(e);
        std::sort(labels.begin(), labels.end());
        for (auto& l : labels) s.labels.push_back({std::move(l.name), std::move(l.value)});
      }
    }
    if (!s.keep) ++dropped;
  }
  std::lock_guard lock(mu_);
  figures_.series_dropped = dropped;
}

bool Queue::Pass() {
  int64_t now;
  {
    std::lock_guard lock(mu_);
    now = now_ms_;
  }
  behind_ = false;
  if (now == 0) return true;  // nothing recorded yet
  if (start_ms_ == INT64_MIN) {
    start_ms_ = now - options_.start_lookback_ms;
    cursor_ms_ = start_ms_;
  }
  RefreshSeries();
  const int64_t through = cursor_ms_ >= now - options_.catch_up_slice_ms
                              ? now
                              : cursor_ms_ + options_.catch_up_slice_ms;
  const int64_t step = options_.downsample_ms;
  for (size_t ref = 1; ref < series_.size(); ++ref) {
    SeriesState& s = series_[ref];
    if (!s.known) continue;
    if (!s.keep) {
      CountDropped(ref, through);
      continue;
    }
    // Downsampled: whole windows (t - step, t] with t <= through.
    const int64_t upto = step > 0 ? (through >= 0 ? through / step * step : -1) : through;
    if (s.last_sent >= upto) continue;
    if (Status st = db_->ReadSeries(ref, s.last_sent + 1, upto, &read_); !st.ok()) {
      log_->Warn("remote_write " + options_.name + ": reading series " + std::to_string(ref) +
                 ": " + st.message());
      continue;
    }
    bool ok;
    if (step > 0) {
      ok = AddDownsampled(ref, read_, upto);
    } else {
      if (read_.empty()) continue;
      std::vector<Sample> samples;
      samples.reserve(read_.size());
      for (const tsdb::Sample& x : read_) samples.push_back({x.v, x.t_ms});
      ok = AddSamples(ref, s.labels, samples, read_.back().t_ms);
    }
    if (!ok) return false;
  }
  cursor_ms_ = std::max(cursor_ms_, through);
  const bool sending = !batch_.empty();
  if (!Flush()) return false;
  // Flush saved the progress when it sent; otherwise only moved series or a cursor a minute
  // ahead of the saved one are worth a write (the cursor only paces catching up).
  if (!sending && (progress_moved_ || saved_cursor_ms_ <= cursor_ms_ - 60'000)) SaveProgress();
  behind_ = through < now;
  std::lock_guard lock(mu_);
  figures_.caught_up = !behind_;
  return true;
}

void Queue::CountDropped(tsdb::SeriesRef ref, int64_t through) {
  SeriesState& s = series_[ref];
  if (s.last_sent >= through) return;
  if (Status st = db_->ReadSeries(ref, s.last_sent + 1, through, &read_); !st.ok() || read_.empty())
    return;
  s.last_sent = read_.back().t_ms;
  progress_moved_ = true;
  std::lock_guard lock(mu_);
  figures_.samples_dropped += read_.size();
}

bool Queue::AddSamples(tsdb::SeriesRef ref, const std::vector<Label>& labels,
                       const std::vector<Sample>& samples, int64_t new_last) {
  size_t i = 0;
  while (i < samples.size()) {
    const size_t room = options_.max_samples_per_send - batch_samples_;
    const size_t take = std::min(room, samples.size() - i);
    TimeSeries ts;
    ts.labels = labels;
    ts.samples.assign(samples.begin() + static_cast<std::ptrdiff_t>(i),
                      samples.begin() + static_cast<std::ptrdiff_t>(i + take));
    i += take;
    batch_progress_.push_back(
        {ref, i == samples.size() ? new_last : ts.samples.back().timestamp_ms});
    batch_.push_back(std::move(ts));
    batch_samples_ += take;
    {
      std::lock_guard lock(mu_);
      figures_.pending = batch_samples_;
    }
    if (batch_samples_ >= options_.max_samples_per_send && !Flush()) return false;
  }
  if (samples.empty()) batch_progress_.push_back({ref, new_last});
  return true;
}

bool Queue::AddDownsampled(tsdb::SeriesRef ref, const std::vector<tsdb::Sample>& samples,
                           int64_t through) {
  const int64_t step = options_.downsample_ms;
  // Per aggregate, one output sample per window that had a numeric (non-NaN) sample.
  std::vector<std::vector<Sample>> out(options_.aggregates.size());
  size_t i = 0;
  while (i < samples.size()) {
    // The window (end - step, end] holding samples[i].
    const int64_t t = samples[i].t_ms;
    const int64_t end = t >= 0 ? (t + step - 1) / step * step : -((-t) / step * step);
    double mn = INFINITY, mx = -INFINITY, sum = 0, last = 0;
    uint64_t count = 0;
    for (; i < samples.size() && samples[i].t_ms <= end; ++i) {
      const double v = samples[i].v;
      if (std::isnan(v)) continue;  // stale markers and NaNs are no measurement
      mn = std::min(mn, v);
      mx = std::max(mx, v);
      sum += v;
      last = v;
      ++count;
    }
    if (count == 0) continue;
    for (size_t a = 0; a < options_.aggregates.size(); ++a) {
      double v = 0;
      switch (options_.aggregates[a]) {
        case Aggregate::kMin:
          v = mn;
          break;
        case Aggregate::kMax:
          v = mx;
          break;
        case Aggregate::kAvg:
          v = sum / static_cast<double>(count);
          break;
        case Aggregate::kSum:
          v = sum;
          break;
        case Aggregate::kCount:
          v = static_cast<double>(count);
          break;
        case Aggregate::kLast:
          v = last;
          break;
      }
      out[a].push_back({v, end});
    }
  }
  const SeriesState& s = series_[ref];
  for (size_t a = 0; a < options_.aggregates.size(); ++a) {
    std::vector<Label> labels = s.labels;
    labels.push_back({"aggregate", AggregateName(options_.aggregates[a])});
    std::sort(labels.begin(), labels.end(),
              [](const Label& x, const Label& y) { return x.name < y.name; });
    // Only the last aggregate's entry moves the series' progress: a request boundary between
    // two aggregates of one window resends the earlier ones after a restart, never loses any.
    const bool last_agg = a + 1 == options_.aggregates.size();
    if (out[a].empty()) {
      if (last_agg) batch_progress_.push_back({ref, through});
      continue;
    }
    if (!AddSamples(last_agg ? ref : 0, labels, out[a], last_agg ? through : 0)) return false;
  }
  return true;
}

void Queue::ApplyProgress() {
  for (const Pending& p : batch_progress_) {
    if (p.ref == 0 || p.last <= series_[p.ref].last_sent) continue;
    series_[p.ref].last_sent = p.last;
    progress_moved_ = true;
  }
  batch_progress_.clear();
}

bool Queue::Flush() {
  if (batch_.empty()) {
    ApplyProgress();
    return true;
  }
  // Set once an attempt of this request went out whole and its answer was lost.
  bool maybe_stored = false;
  while (true) {
    SendResult r = send_(batch_);
    int64_t newest = 0;
    for (const TimeSeries& ts : batch_)
      if (!ts.samples.empty()) newest = std::max(newest, ts.samples.back().timestamp_ms);
    const double now = MonotonicSeconds();
    const bool already_stored =
        r.outcome == SendResult::kDrop && maybe_stored && RefusedAsOutOfOrder(r.error);
    {
      std::lock_guard lock(mu_);
      figures_.last_status = r.status;
      if (r.outcome == SendResult::kSent) {
        figures_.samples_sent += batch_samples_;
        figures_.bytes_sent += r.bytes;
        figures_.highest_sent_ms = std::max(figures_.highest_sent_ms, newest);
      } else {
        ++figures_.requests_failed;
        if (already_stored) {
          figures_.samples_already_stored += batch_samples_;
          figures_.highest_sent_ms = std::max(figures_.highest_sent_ms, newest);
        } else if (r.outcome == SendResult::kDrop) {
          figures_.samples_failed += batch_samples_;
        } else {
          figures_.samples_retried += batch_samples_;
        }
      }
    }
    if (r.outcome == SendResult::kRetry && r.answer_lost) maybe_stored = true;
    if (already_stored) {
      log_->Info("remote_write " + options_.name + ": the receiver refused a resent request of " +
                 std::to_string(batch_samples_) + " samples as out of order (" + r.error +
                 "): the attempt whose answer was lost stored them; moving on");
      backoff_.Reset();
      break;
    }
    if (r.outcome == SendResult::kRetry) {
      const double delay = backoff_.NextDelayS();
      if (now - last_retry_log_ >= 60) {
        last_retry_log_ = now;
        log_->Warn("remote_write " + options_.name + ": " + r.error + "; retrying " +
                   std::to_string(batch_samples_) + " samples (backoff up to " +
                   FormatDuration(options_.max_backoff_s) + ", nothing is dropped)");
      }
      if (WaitStop(delay)) return false;
      continue;
    }
    if (r.outcome == SendResult::kDrop && now - last_drop_log_ >= 60) {
      last_drop_log_ = now;
      log_->Error("remote_write " + options_.name + ": the receiver refused " +
                  std::to_string(batch_samples_) + " samples for good (" + r.error +
                  "); they are counted in prometheus_remote_storage_samples_failed_total and not "
                  "resent");
    }
    if (backoff_.failures() > 0 && r.outcome == SendResult::kSent)
      log_->Info("remote_write " + options_.name + ": sending again");
    backoff_.Reset();
    break;
  }
  ApplyProgress();
  batch_.clear();
  batch_samples_ = 0;
  {
    std::lock_guard lock(mu_);
    figures_.pending = 0;
  }
  SaveProgress();
  return true;
}

}  // namespace gw::remote
