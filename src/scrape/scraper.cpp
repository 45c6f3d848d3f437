// One piece: the scraping side (Run/ScrapeDue/ScrapeOne), the store's writer side (Drain) and the
// lifecycle of job-bound targets and job target slots (FollowJob/Retire/Claim/Release) share the
// Target and Batch structures and one locking protocol (scrape/scraper.h, "Threading"); apart,
// each file would hold half of every hand-over.
#include "scrape/scraper.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <string_view>
#include <unordered_map>

#include "scrape/fetch.h"
#include "tsdb/openmetrics.h"

namespace gw::scrape {

namespace {

constexpr uint64_t kNoRef = ~uint64_t{0};

struct TextHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// honor_labels: false — the scraped `target` label (and an `exported_target` already there, and
// so on) moves one "exported_" further out, then the target's own label is added.
void AddTargetLabel(tsdb::Labels* labels, const std::string& target) {
  std::string name = "target";
  std::vector<std::string> clashes;
  for (;;) {
    auto it = std::find_if(labels->begin(), labels->end(),
                           [&](const tsdb::Label& l) { return l.name == name; });
    if (it == labels->end()) break;
    clashes.push_back(name);
    name = "exported_" + name;
  }
  // Rename from the outermost in, so no two labels share a name at any point.
  for (auto c = clashes.rbegin(); c != clashes.rend(); ++c)
    for (tsdb::Label& l : *labels)
      if (l.name == *c) l.name = "exported_" + *c;
  labels->push_back({"target", target});
  std::sort(labels->begin(), labels->end());
}

bool CountsOutputs(const TargetConfig& config, const tsdb::Labels& labels) {
  if (config.outputs.empty()) return false;
  for (const tsdb::Matcher& m : config.output_matchers)
    if (!m.Matches(tsdb::LabelValue(labels, m.name()))) return false;
  return true;
}

}  // namespace

struct Scraper::Target {
  explicit Target(TargetConfig c) : config(std::move(c)), fetcher(config) {
    health.name = config.name;
    health.url = config.url;
    active = config.job_id.empty();
    health.waiting_for_job = !active;
  }
  TargetConfig config;
  Fetcher fetcher;
  // A job-bound target's job runs here (SetJobRunning; any thread).
  std::atomic<bool> job_running{false};
  // Scraping side (the scrape thread or the caller of ScrapeDue).
  bool active = true;  // scraped (a job-bound target: while its job runs)
  bool started = false;
  int64_t next_due_ms = 0;
  std::string body;
  std::unordered_map<std::string, uint32_t, TextHash, std::equal_to<>> ids;  // series text -> id
  std::vector<uint32_t> seen_in;  // by id: the scrape generation that last had it
  uint32_t generation = 0;
  std::vector<uint32_t> present, present_next;  // ids of the last successful scrape
  // Outputs (config.outputs): by id whether the series counts outputs, and its last value (NaN:
  // not seen yet); the running sum, from the first successful scrape.
  std::vector<uint8_t> is_output;
  std::vector<double> output_last;
  bool outputs_started = false;
  double outputs_total = 0;
  // The # HELP, # TYPE and # UNIT lines of the last successful page (scraping side; `next` is
  // reused, so an unchanged page allocates nothing), and their copy for readers (under mu_).
  std::string descriptors, descriptors_next;
  // Under mu_.
  TargetHealth health;
  std::string descriptors_shared;
};

namespace {

// Appends the descriptor lines (# HELP, # TYPE, # UNIT) of an exposition page to `out`.
void CollectDescriptors(std::string_view page, std::string* out) {
  out->clear();
  while (!page.empty()) {
    const size_t nl = page.find('\n');
    const std::string_view line = page.substr(0, nl);
    page = nl == std::string_view::npos ? std::string_view{} : page.substr(nl + 1);
    if (line.starts_with("# HELP ") || line.starts_with("# TYPE ") || line.starts_with("# UNIT ")) {
      out->append(line);
      *out += '\n';
    }
  }
}

}  // namespace

struct Scraper::Batch {
  size_t target = 0;
  int64_t t_ms = 0;
  bool retired = false;    // a job-bound target whose job stopped: everything of it goes stale
  bool free_slot = false;  // retired: a job target slot, free once drained
  bool up = false;
  double duration_s = 0;
  uint64_t samples = 0;
  std::vector<std::pair<uint32_t, double>> values;
  std::vector<std::pair<uint32_t, tsdb::Labels>> new_series;
  std::vector<uint32_t> stale;
};

struct Scraper::Written {
  std::vector<uint64_t> refs;  // by series id
  uint64_t up = kNoRef, duration = kNoRef, samples = kNoRef;
  struct ServiceInfo {
    std::string uuid;
    uint64_t ref = kNoRef;
  };
  std::vector<ServiceInfo> service_info;  // parallel to config.gpus
};

Scraper::Scraper(std::vector<TargetConfig> targets, Logger* log, ScraperOptions options)
    : log_(log), options_(options) {
  for (TargetConfig& t : targets) {
    targets_.push_back(std::make_unique<Target>(std::move(t)));
    auto w = std::make_unique<Written>();
    w->service_info.resize(targets_.back()->config.gpus.size());
    written_.push_back(std::move(w));
    if (!targets_.back()->fetcher.setup_error().empty() && log_)
      log_->Error("scrape target '" + targets_.back()->config.name +
                  "': " + targets_.back()->fetcher.setup_error());
  }
  configured_ = targets_.size();
  // Job target slots: placeholders until claimed (never scraped, never shown).
  for (size_t i = 0; i < options_.job_target_slots; ++i) {
    targets_.push_back(std::make_unique<Target>(TargetConfig{}));  // no URL: no client
    targets_.back()->active = false;
    targets_.back()->health.waiting_for_job = true;
    written_.push_back(std::make_unique<Written>());
  }
  slots_.resize(options_.job_target_slots);
}

Scraper::~Scraper() {
  Stop();
}

void Scraper::Start() {
  if (targets_.empty() || thread_.joinable()) return;
  thread_ = std::thread([this] { Run(); });
}

void Scraper::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Scraper::Run() {
  auto now_ms = [this] { return options_.clock->NowMs(); };
  for (;;) {
    int64_t now = now_ms();
    int64_t next = INT64_MAX;
    for (size_t i = 0; i < targets_.size(); ++i) {
      if (!FollowJob(i, now)) continue;
      Target& t = *targets_[i];  // after FollowJob: a claimed slot's target is new
      if (!t.started || now >= t.next_due_ms) {
        ScrapeOne(i, now);
        const auto interval_ms = static_cast<int64_t>(t.config.interval_s * 1000);
        t.next_due_ms = t.started ? t.next_due_ms + interval_ms : now + interval_ms;
        now = now_ms();
        if (t.next_due_ms <= now) t.next_due_ms = now + interval_ms;  // fell behind: skip ahead
        t.started = true;
      }
      next = std::min(next, t.next_due_ms);
    }
    std::unique_lock<std::mutex> lock(mu_);
    // At most an hour: every target may be waiting for its job (next = INT64_MAX).
    const int64_t wait_ms = std::clamp<int64_t>(next - now_ms(), 1, 3'600'000);
    cv_.wait_for(lock, std::chrono::milliseconds(wait_ms), [&] { return stopping_ || wake_; });
    wake_ = false;
    if (stopping_) return;
  }
}

void Scraper::ScrapeDue(int64_t t_ms) {
  for (size_t i = 0; i < targets_.size(); ++i) {
    if (!FollowJob(i, t_ms)) continue;
    Target& t = *targets_[i];  // after FollowJob: a claimed slot's target is new
    if (t.started && t_ms < t.next_due_ms) continue;
    ScrapeOne(i, t_ms);
    const auto interval_ms = static_cast<int64_t>(t.config.interval_s * 1000);
    t.next_due_ms = t.started ? t.next_due_ms + interval_ms : t_ms + interval_ms;
    if (t.next_due_ms <= t_ms) t.next_due_ms = t_ms + interval_ms;
    t.started = true;
  }
}

// Outputs, reset-aware per series as Prometheus' increase(): a value below the series' last one
// is a restart of the counter, which counts from 0; a series first seen after the first successful
// scrape counts from 0 (the service created it meanwhile); the first scrape is the baseline — but
// for a job's target (job_id), whose counter started with the job, it counts from 0 too.
void Scraper::CountOutputs(Target* t, const Batch& batch) {
  for (const auto& [id, v] : batch.values) {
    if (!t->is_output[id] || !std::isfinite(v) || v < 0) continue;  // not a counter's value
    double& last = t->output_last[id];
    if (std::isnan(last)) {
      // A job's own counter started with the job: its first value is progress, not a baseline.
      if (t->outputs_started || !t->config.job_id.empty()) t->outputs_total += v;
    } else {
      t->outputs_total += v >= last ? v - last : v;
    }
    last = v;
  }
  t->outputs_started = true;
}

void Scraper::SetJobRunning(size_t target, bool running) {
  if (target >= configured_ || targets_[target]->config.job_id.empty()) return;
  if (targets_[target]->job_running.exchange(running) == running) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    wake_ = true;
  }
  cv_.notify_all();
}

size_t Scraper::ClaimJobTarget(TargetConfig config) {
  size_t index = kNoSlot;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < slots_.size() && index == kNoSlot; ++i) {
      if (slots_[i].state != SlotState::kFree) continue;
      slots_[i].state = SlotState::kClaimed;
      slots_[i].pending = std::move(config);
      index = configured_ + i;
    }
    wake_ = wake_ || index != kNoSlot;
  }
  if (index != kNoSlot) cv_.notify_all();
  return index;
}

void Scraper::ReleaseJobTarget(size_t index) {
  if (index < configured_ || index >= targets_.size()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Slot& slot = slots_[index - configured_];
    if (slot.state == SlotState::kClaimed) {
      slot.state = SlotState::kFree;  // never scraped: nothing to mark stale
      slot.pending = TargetConfig{};
    } else if (slot.state == SlotState::kActive) {
      slot.state = SlotState::kReleasing;
    }
    wake_ = true;
  }
  cv_.notify_all();
}

bool Scraper::FollowJob(size_t index, int64_t t_ms) {
  if (index >= configured_) {  // a job target slot
    std::unique_lock<std::mutex> lock(mu_);
    Slot& slot = slots_[index - configured_];
    if (slot.state == SlotState::kClaimed) {
      auto fresh = std::make_unique<Target>(std::move(slot.pending));
      slot.pending = TargetConfig{};
      fresh->active = true;  // started is false: scraped at once
      fresh->health.waiting_for_job = false;
      targets_[index] = std::move(fresh);
      slot.state = SlotState::kActive;
      return true;
    }
    if (slot.state != SlotState::kReleasing) return slot.state == SlotState::kActive;
    slot.state = SlotState::kDraining;
    lock.unlock();
    Retire(index, t_ms, true);
    return false;
  }
  Target& t = *targets_[index];
  if (t.config.job_id.empty()) return true;
  const bool running = t.job_running.load();
  if (running == t.active) return running;
  t.active = running;
  if (running) {
    t.started = false;  // scraped at once
    std::lock_guard<std::mutex> lock(mu_);
    t.health.waiting_for_job = false;
    return true;
  }
  Retire(index, t_ms, false);
  return false;
}

void Scraper::Retire(size_t index, int64_t t_ms, bool free_slot) {
  // The job stopped: the target's series (those of the last successful scrape, and the agent's
  // own gpuwarden_scrape_* of it) get stale markers, and it leaves /metrics.
  Target& t = *targets_[index];
  t.active = false;
  std::unique_ptr<Batch> batch = TakeSpare();
  batch->target = index;
  batch->t_ms = t_ms;
  batch->retired = true;
  batch->free_slot = free_slot;
  batch->values.clear();
  batch->new_series.clear();
  batch->stale.assign(t.present.begin(), t.present.end());
  batch->samples = 0;
  t.present.clear();
  {
    std::lock_guard<std::mutex> lock(mu_);
    t.health.waiting_for_job = true;
    t.health.scraped = false;
    t.health.up = false;
    t.health.last_error.clear();
    // Queued even when the queue is full: at most one per target and job end, and without it the
    // target's last values would linger for the staleness period.
    if (storeless_) {
      spare_.push_back(std::move(batch));
      if (free_slot) slots_[index - configured_].state = SlotState::kFree;
    } else {
      queue_.push_back(std::move(batch));
    }
  }
  if (log_)
    log_->Info("scrape target '" + t.config.name + "': job " + t.config.job_id +
               " no longer runs here; not scraped " + (free_slot ? "any more" : "until it does"));
}

bool Scraper::Outputs(size_t target, double* total) const {
  int64_t t_ms = 0;
  return Outputs(target, total, &t_ms);
}

bool Scraper::Outputs(size_t target, double* total, int64_t* t_ms) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (target >= targets_.size() || !targets_[target]->health.outputs_known) return false;
  *total = targets_[target]->health.outputs_total;
  *t_ms = targets_[target]->health.outputs_ms;
  return true;
}

const TargetConfig& Scraper::target_config(size_t target) const {
  return targets_[target]->config;
}

std::unique_ptr<Scraper::Batch> Scraper::TakeSpare() {
  std::lock_guard<std::mutex> lock(mu_);
  if (spare_.empty()) return std::make_unique<Batch>();
  auto b = std::move(spare_.back());
  spare_.pop_back();
  return b;
}

void Scraper::ScrapeOne(size_t index, int64_t t_ms) {
  Target& t = *targets_[index];
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.size() >= kMaxQueued) return;  // the writer is behind: skip this scrape
  }
  std::unique_ptr<Batch> batch = TakeSpare();
  batch->target = index;
  batch->t_ms = t_ms;
  batch->retired = false;
  batch->free_slot = false;
  batch->values.clear();
  batch->new_series.clear();
  batch->stale.clear();
  const auto start = std::chrono::steady_clock::now();
  Status status = t.fetcher.Get(&t.body);
  const uint32_t generation = ++t.generation;
  if (status.ok()) {
    tsdb::TextOptions options;
    options.default_t_ms = t_ms;
    status = tsdb::ParseText(
        t.body, t.config.url, options, [&](std::string_view series, int64_t, double v) -> Status {
          auto it = t.ids.find(series);
          uint32_t id;
          if (it == t.ids.end()) {
            tsdb::Labels labels;
            if (Status s = tsdb::ParseSeries(series, &labels); !s.ok()) return s;
            for (const tsdb::Label& l : labels)
              if (l.name == "__name__" ? !tsdb::IsValidMetricName(l.value)
                                       : !tsdb::IsValidLabelName(l.name))
                return Status(Error{"invalid name in " + std::string(series.substr(0, 80))});
            AddTargetLabel(&labels, t.config.name);
            id = static_cast<uint32_t>(t.seen_in.size());
            t.seen_in.push_back(0);
            t.is_output.push_back(CountsOutputs(t.config, labels));
            t.output_last.push_back(std::numeric_limits<double>::quiet_NaN());
            t.ids.emplace(std::string(series), id);
            batch->new_series.emplace_back(id, std::move(labels));
          } else {
            id = it->second;
          }
          if (t.seen_in[id] == generation) return Status::Ok();  // repeated in one page
          t.seen_in[id] = generation;
          batch->values.emplace_back(id, v);
          return Status::Ok();
        });
  }
  batch->duration_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  batch->up = status.ok();
  t.present_next.clear();
  if (status.ok()) {
    for (const auto& [id, v] : batch->values) t.present_next.push_back(id);
    for (uint32_t id : t.present)
      if (t.seen_in[id] != generation) batch->stale.push_back(id);
  } else {
    batch->values.clear();  // nothing of a failed page is kept (new series stay registered)
    batch->stale.assign(t.present.begin(), t.present.end());
  }
  std::swap(t.present, t.present_next);
  batch->samples = batch->values.size();
  if (status.ok() && !t.config.outputs.empty()) CountOutputs(&t, *batch);
  bool descriptors_changed = false;
  if (status.ok()) {
    CollectDescriptors(t.body, &t.descriptors_next);
    descriptors_changed = t.descriptors_next != t.descriptors;
    if (descriptors_changed) std::swap(t.descriptors, t.descriptors_next);
  }

  bool changed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    TargetHealth& h = t.health;
    changed = !h.scraped || h.up != batch->up;
    h.scraped = true;
    h.up = batch->up;
    h.duration_s = batch->duration_s;
    h.last_scrape_ms = t_ms;
    if (descriptors_changed) t.descriptors_shared = t.descriptors;
    ++h.scrapes;
    if (batch->up) {
      h.samples = batch->samples;
      h.last_error.clear();
      h.outputs_known = t.outputs_started;
      h.outputs_total = t.outputs_total;
      h.outputs_ms = t_ms;
    } else {
      ++h.errors;
      h.last_error = status.message();
    }
    if (storeless_) {
      spare_.push_back(std::move(batch));
    } else {
      queue_.push_back(std::move(batch));
    }
  }
  if (changed && log_) {
    if (status.ok()) {
      log_->Info("scrape target '" + t.config.name + "' (" + t.config.url +
                 ") is up: " + std::to_string(t.present.size()) + " series");
    } else {
      log_->Warn("scrape target '" + t.config.name + "' (" + t.config.url + ") is down: " +
                 status.message() + "; retrying every " + FormatDuration(t.config.interval_s));
    }
  }
}

size_t Scraper::Drain(tsdb::Appender* appender, const collect::Snapshot& snapshot) {
  std::deque<std::unique_ptr<Batch>> batches;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.empty()) return 0;
    batches.swap(queue_);
    // By GPU index; rebuilt only when the fleet changed (no allocation in steady state).
    bool same = true;
    for (const collect::GpuSnapshot& g : snapshot.gpus)
      same =
          same && g.identity.index < uuids_.size() && uuids_[g.identity.index] == g.identity.uuid;
    if (!same) {
      uuids_.clear();
      for (const collect::GpuSnapshot& g : snapshot.gpus) {
        if (g.identity.index >= uuids_.size()) uuids_.resize(g.identity.index + 1);
        uuids_[g.identity.index] = g.identity.uuid;
      }
    }
  }
  size_t appended = 0;
  std::vector<size_t> freed;  // slots whose last batch this was
  auto append = [&](uint64_t ref, int64_t t, double v) {
    if (ref != kNoRef && appender->Append(ref, t, v).ok()) ++appended;
  };
  auto self_ref = [&](uint64_t* ref, const char* name, const std::string& target) {
    if (*ref != kNoRef) return;
    auto got = appender->GetRef(tsdb::Labels{{"__name__", name}, {"target", target}});
    if (got.ok()) *ref = *got;
  };
  for (std::unique_ptr<Batch>& batch : batches) {
    const Target& target = *targets_[batch->target];
    Written& w = *written_[batch->target];
    const int64_t t = batch->t_ms;
    for (auto& [id, labels] : batch->new_series) {
      if (w.refs.size() <= id) w.refs.resize(id + 1, kNoRef);
      auto ref = appender->GetRef(labels);
      w.refs[id] = ref.ok() ? *ref : kNoRef;
    }
    for (const auto& [id, v] : batch->values) append(w.refs[id], t, v);
    for (uint32_t id : batch->stale) append(w.refs[id], t, tsdb::StaleNaN());
    if (batch->retired) {
      for (uint64_t ref : {w.up, w.duration, w.samples}) append(ref, t, tsdb::StaleNaN());
      for (const Written::ServiceInfo& info : w.service_info) append(info.ref, t, tsdb::StaleNaN());
      if (batch->free_slot) {
        w = Written{};  // the slot's next target starts afresh (no gpus: no service info)
        freed.push_back(batch->target);
      }
      continue;
    }
    const std::string& name = target.config.name;
    self_ref(&w.up, "gpuwarden_scrape_up", name);
    self_ref(&w.duration, "gpuwarden_scrape_duration_seconds", name);
    self_ref(&w.samples, "gpuwarden_scrape_samples", name);
    append(w.up, t, batch->up ? 1 : 0);
    append(w.duration, t, batch->duration_s);
    append(w.samples, t, static_cast<double>(batch->samples));
    for (size_t g = 0; g < target.config.gpus.size(); ++g) {
      const unsigned gpu = target.config.gpus[g];
      const std::string* uuid = nullptr;
      for (const collect::GpuSnapshot& s : snapshot.gpus)
        if (s.identity.index == gpu) uuid = &s.identity.uuid;
      if (uuid == nullptr || uuid->empty()) continue;  // no such GPU (now): nothing to link
      Written::ServiceInfo& info = w.service_info[g];
      if (info.ref == kNoRef || info.uuid != *uuid) {
        auto ref = appender->GetRef(tsdb::Labels{{"__name__", "gpu_service_info"},
                                                 {"gpu", std::to_string(gpu)},
                                                 {"target", name},
                                                 {"uuid", *uuid}});
        if (!ref.ok()) continue;
        info.ref = *ref;
        info.uuid = *uuid;
      }
      append(info.ref, t, 1);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (std::unique_ptr<Batch>& batch : batches) spare_.push_back(std::move(batch));
  for (size_t index : freed) slots_[index - configured_].state = SlotState::kFree;
  return appended;
}

std::vector<std::string> Scraper::Descriptors() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& t : targets_) out.push_back(t->descriptors_shared);
  return out;
}

std::vector<TargetHealth> Scraper::Health() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TargetHealth> out;
  for (const auto& t : targets_) out.push_back(t->health);
  return out;
}

void Scraper::RenderMetrics(expo::Format format, std::string* out) const {
  expo::Writer writer(format, out);
  WriteFamilies(&writer);
}

void Scraper::WriteFamilies(expo::Writer* w) const {
  using expo::Type;
  std::lock_guard<std::mutex> lock(mu_);
  // Configured targets, and the job targets found at run time while they are scraped.
  const bool any = configured_ > 0 || std::any_of(slots_.begin(), slots_.end(), [](const Slot& s) {
                     return s.state == SlotState::kActive;
                   });
  if (!any) return;
  w->Family("gpuwarden_scrape_up", Type::kGauge,
            "1 if the last scrape of the application target succeeded, 0 if not.");
  for (const auto& t : targets_)
    if (t->health.scraped) w->Sample().Label("target", t->config.name).Value(t->health.up);
  w->Family("gpuwarden_scrape_duration_seconds", Type::kGauge,
            "How long the last scrape of the target took.", "seconds");
  for (const auto& t : targets_)
    if (t->health.scraped) w->Sample().Label("target", t->config.name).Value(t->health.duration_s);
  w->Family("gpuwarden_scrape_samples", Type::kGauge,
            "Samples in the target's last successful scrape.");
  for (const auto& t : targets_)
    if (t->health.scraped)
      w->Sample().Label("target", t->config.name).Value(static_cast<double>(t->health.samples));
  w->Family("gpuwarden_scrape_errors_total", Type::kCounter,
            "Failed scrapes of the target (no reply, HTTP error, unparsable page).");
  for (size_t i = 0; i < targets_.size(); ++i) {
    const Target& t = *targets_[i];
    if (i < configured_ || !t.health.waiting_for_job)
      w->Sample().Label("target", t.config.name).Value(static_cast<double>(t.health.errors));
  }
  w->Family("gpu_service_info", Type::kGauge,
            "1 for each application target and each GPU serving it (scrape.targets[].gpus).");
  char index[16];
  for (const auto& t : targets_) {
    if (t->health.waiting_for_job) continue;
    for (unsigned gpu : t->config.gpus) {
      if (gpu >= uuids_.size() || uuids_[gpu].empty()) continue;
      auto [end, ec] = std::to_chars(index, index + sizeof index, gpu);
      w->Sample()
          .Label("target", t->config.name)
          .Label("gpu", std::string_view(index, end - index))
          .Label("uuid", uuids_[gpu])
          .Value(1);
    }
  }
}

}  // namespace gw::scrape
