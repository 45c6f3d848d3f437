#include "governance/pool.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

namespace gw::governance {

std::map<std::string, double> ParsePartitionCapacity(std::string_view text) {
  std::map<std::string, double> out;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(begin, end - begin);
    begin = end + 1;
    if (line.find("PartitionName=") == std::string_view::npos) {
      // sinfo -h -o "%R %D %G": partition, node count, generic resources per node
      // ("gpu:4", "gpu:a100:4(S:0-1),shard:8", "(null)"); one line per node configuration.
      const size_t a = line.find(' '), b = a == std::string_view::npos ? a : line.find(' ', a + 1);
      if (b == std::string_view::npos) continue;
      const std::string part(line.substr(0, a));
      const double nodes = std::atof(std::string(line.substr(a + 1, b - a - 1)).c_str());
      double per_node = 0;
      std::string_view gres = line.substr(b + 1);
      size_t pos = 0;
      while (pos <= gres.size()) {
        size_t comma = gres.find(',', pos);
        if (comma == std::string_view::npos) comma = gres.size();
        std::string_view item = gres.substr(pos, comma - pos);
        pos = comma + 1;
        if (const size_t paren = item.find('('); paren != std::string_view::npos)
          item = item.substr(0, paren);
        if (item.rfind("gpu", 0) != 0) continue;
        const size_t colon = item.rfind(':');
        if (colon != std::string_view::npos)
          per_node += std::atof(std::string(item.substr(colon + 1)).c_str());
      }
      if (!part.empty()) out[part] += nodes * per_node;
      continue;
    }
    std::string name;
    double gpus = 0;
    // Fields are KEY=VALUE separated by spaces; TRES holds commas but no spaces.
    size_t pos = 0;
    while (pos < line.size()) {
      size_t stop = line.find(' ', pos);
      if (stop == std::string_view::npos) stop = line.size();
      const std::string_view field = line.substr(pos, stop - pos);
      pos = stop + 1;
      if (field.rfind("PartitionName=", 0) == 0) name = std::string(field.substr(14));
      if (field.rfind("TRES=", 0) == 0) gpus = jobs::ParseTresGpuCount(field.substr(5));
    }
    if (!name.empty()) out[name] = gpus;
  }
  return out;
}

void PoolTracker::SetCapacity(std::map<std::string, double> gpus_by_partition) {
  scheduler_capacity_ = std::move(gpus_by_partition);
}

namespace {

std::string FirstPartition(const std::string& list) {
  return list.substr(0, list.find(','));
}

double Allocated(const jobs::SlurmJob& j) {
  if (j.gpus.total > 0) return j.gpus.total;
  if (!j.gpu_indices.empty()) return double(j.gpu_indices.size());
  return double(std::max(j.gpus.per_job, j.gpus.per_node));
}

double Requested(const jobs::SlurmJob& j) {
  return j.RequestedGpus();
}

// Nearest-rank quantile of sorted values.
double Quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(q * double(sorted.size())));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

}  // namespace

void PoolTracker::Observe(const std::map<std::string, jobs::SlurmJob>& jobs, double now_s,
                          std::uint64_t jobs_version) {
  // The job table: aggregates per partition and newly started jobs' waits, only when it changed.
  if (jobs_version == 0 || jobs_version != jobs_version_) {
    jobs_version_ = jobs_version;
    demand_.clear();
    for (auto& [id, seen] : seen_started_) seen.listed = false;
    for (const auto& [id, j] : jobs) {
      const std::string partition = FirstPartition(j.partition);
      if (j.state == jobs::JobState::kPending) {
        const double want = Requested(j);
        if (want > 0) {
          Demand& d = demand_[partition];
          d.pending += want;
          d.pending_jobs += 1;
        }
      } else if (j.state == jobs::JobState::kRunning || j.state == jobs::JobState::kSuspended ||
                 j.state == jobs::JobState::kCompleting) {
        const double held = Allocated(j);
        if (held > 0) demand_[partition].allocated += held;
      }
      // Queue waits: each job once, when first seen started.
      auto seen = seen_started_.find(id);
      if (seen != seen_started_.end()) {
        seen->second.listed = true;
      } else if (j.started() && j.eligible_time > 0 && j.start_time >= j.eligible_time) {
        seen_started_[id] = Counted{double(j.start_time), true};
        auto& q = waits_[partition];
        Wait w{double(j.start_time), double(j.start_time - j.eligible_time)};
        auto at = std::upper_bound(q.begin(), q.end(), w.start_s,
                                   [](double t, const Wait& x) { return t < x.start_s; });
        q.insert(at, w);
        ++waits_generation_[partition];
        demand_[partition];
      }
    }
    // Forget jobs squeue no longer lists (they cannot start again under the same id unrequeued).
    for (auto it = seen_started_.begin(); it != seen_started_.end();)
      it = it->second.listed ? std::next(it) : seen_started_.erase(it);
  }

  double longest = 0;
  for (double w : settings_.windows_s) longest = std::max(longest, w);
  for (auto& [p, q] : waits_) {
    const std::size_t before = q.size();
    while (!q.empty() && q.front().start_s < now_s - longest) q.pop_front();
    while (q.size() > 100000) q.pop_front();
    if (q.size() != before) ++waits_generation_[p];
  }

  // The partitions: configured or learnt capacity, demand, or queue waits in a window. Figures
  // are updated in place (no allocation per cycle once the partitions are known).
  auto keep = [&](const std::string& p) {
    return scheduler_capacity_.count(p) || settings_.capacity_gpus.count(p) || demand_.count(p) ||
           (waits_.count(p) && !waits_.at(p).empty());
  };
  for (auto it = pools_.begin(); it != pools_.end();)
    it = keep(it->first) ? std::next(it) : pools_.erase(it);
  auto add = [&](const std::string& p) {
    if (pools_.count(p)) return;
    PartitionPool& x = pools_[p];
    x.partition = p;
  };
  for (const auto& [p, gpus] : scheduler_capacity_) add(p);
  for (const auto& [p, gpus] : settings_.capacity_gpus) add(p);
  for (const auto& [p, d] : demand_) add(p);
  for (const auto& [p, q] : waits_)
    if (!q.empty()) add(p);

  for (auto& [p, x] : pools_) {
    x.capacity = 0;
    if (auto c = scheduler_capacity_.find(p); c != scheduler_capacity_.end())
      x.capacity = c->second;
    if (auto c = settings_.capacity_gpus.find(p); c != settings_.capacity_gpus.end())
      x.capacity = c->second;
    const auto d = demand_.find(p);
    x.allocated = d != demand_.end() ? d->second.allocated : 0;
    x.pending = d != demand_.end() ? d->second.pending : 0;
    x.pending_jobs = d != demand_.end() ? d->second.pending_jobs : 0;
    x.free = x.capacity > 0 ? std::max(0.0, x.capacity - x.allocated) : 0;
    x.congestion = x.capacity > 0 ? (x.allocated + x.pending) / x.capacity : 0;
    x.congested_for_s = x.idle_for_s = x.scale_out_gpus = x.shrink_gpus = 0;
    // Scale out: demand above the threshold and something waiting, sustained.
    Sustained& c = congested_[p];
    const double shortfall = std::max(1.0, std::ceil(x.allocated + x.pending - x.capacity));
    if (x.capacity > 0 && x.pending > 0 && x.congestion > settings_.scale_out_ratio) {
      if (c.since_s < 0) c = {now_s, shortfall};
      c.least = std::min(c.least, shortfall);
      x.congested_for_s = now_s - c.since_s;
      if (x.congested_for_s >= settings_.scale_out_for_s) x.scale_out_gpus = c.least;
    } else {
      c = {};
    }
    // Shrink: a large free share and nothing waiting, sustained.
    Sustained& i = idle_[p];
    if (x.capacity > 0 && x.pending == 0 && x.free / x.capacity >= settings_.shrink_free_ratio) {
      if (i.since_s < 0) i = {now_s, x.free};
      i.least = std::min(i.least, x.free);
      x.idle_for_s = now_s - i.since_s;
      if (x.idle_for_s >= settings_.shrink_for_s) x.shrink_gpus = std::floor(i.least);
    } else {
      i = {};
    }
    // Queue waits per window: recomputed only when the partition's waits changed or the oldest
    // wait in a window has aged out of it (or the clock went back).
    const std::deque<Wait>* q = nullptr;
    if (auto w = waits_.find(p); w != waits_.end()) q = &w->second;
    const std::uint64_t generation = waits_generation_[p];
    std::vector<WindowCache>& caches = window_caches_[p];
    caches.resize(settings_.windows_s.size());
    x.waits.resize(settings_.windows_s.size());
    for (std::size_t k = 0; k < settings_.windows_s.size(); ++k) {
      const double window = settings_.windows_s[k];
      WindowCache& cache = caches[k];
      const bool valid = cache.computed && cache.generation == generation && now_s >= cache.at_s &&
                         cache.oldest_s >= now_s - window;
      if (!valid) {
        values_.clear();
        double oldest = std::numeric_limits<double>::infinity();
        if (q != nullptr) {
          for (auto it = q->rbegin(); it != q->rend() && it->start_s >= now_s - window; ++it) {
            values_.push_back(it->wait_s);
            oldest = it->start_s;
          }
        }
        std::sort(values_.begin(), values_.end());
        cache.result = {window, values_.size(), Quantile(values_, 0.5), Quantile(values_, 0.95)};
        cache.generation = generation;
        cache.oldest_s = oldest;
        cache.computed = true;
      }
      cache.at_s = now_s;
      x.waits[k] = cache.result;
    }
  }
  for (auto it = congested_.begin(); it != congested_.end();)
    it = pools_.count(it->first) ? std::next(it) : congested_.erase(it);
  for (auto it = idle_.begin(); it != idle_.end();)
    it = pools_.count(it->first) ? std::next(it) : idle_.erase(it);
  for (auto it = window_caches_.begin(); it != window_caches_.end();)
    it = pools_.count(it->first) ? std::next(it) : window_caches_.erase(it);
}

namespace {
constexpr const char* kPoolFormat = "gpuwarden-pool-checkpoint";
}  // namespace

std::string PoolTracker::Checkpoint() const {
  nlohmann::json waits = nlohmann::json::object();
  for (const auto& [partition, q] : waits_) {
    nlohmann::json list = nlohmann::json::array();
    for (const Wait& w : q) list.push_back({w.start_s, w.wait_s});
    waits[partition] = std::move(list);
  }
  nlohmann::json counted = nlohmann::json::object();
  for (const auto& [id, seen] : seen_started_) counted[id] = seen.start_s;
  nlohmann::json doc = {{"format", kPoolFormat},
                        {"version", 1},
                        {"waits", std::move(waits)},
                        {"counted", std::move(counted)}};
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Status PoolTracker::Restore(std::string_view text) {
  const nlohmann::json doc = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return Error{"not JSON"};
  if (doc.value("format", "") != kPoolFormat)
    return Error{std::string("format: expected ") + kPoolFormat};
  if (doc.value("version", 0) != 1) return Error{"version: expected 1"};
  auto finite = [](const nlohmann::json& v) {
    return v.is_number() && std::isfinite(v.get<double>());
  };
  std::map<std::string, std::deque<Wait>> waits;
  std::map<std::string, Counted> counted;
  const auto w = doc.find("waits");
  if (w == doc.end() || !w->is_object()) return Error{"waits: expected an object"};
  for (const auto& [partition, list] : w->items()) {
    if (!list.is_array()) return Error{"waits." + partition + ": expected an array"};
    auto& q = waits[partition];
    for (const nlohmann::json& pair : list) {
      if (!pair.is_array() || pair.size() != 2 || !finite(pair[0]) || !finite(pair[1]))
        return Error{"waits." + partition + ": expected [start, wait] pairs of numbers"};
      q.push_back(Wait{pair[0].get<double>(), pair[1].get<double>()});
    }
    std::stable_sort(q.begin(), q.end(),
                     [](const Wait& a, const Wait& b) { return a.start_s < b.start_s; });
  }
  const auto c = doc.find("counted");
  if (c == doc.end() || !c->is_object()) return Error{"counted: expected an object"};
  for (const auto& [id, start] : c->items()) {
    if (!finite(start)) return Error{"counted." + id + ": expected a number"};
    counted[id] = Counted{start.get<double>(), true};
  }
  waits_ = std::move(waits);
  seen_started_ = std::move(counted);
  for (const auto& [partition, q] : waits_) ++waits_generation_[partition];
  jobs_version_ = 0;  // the next table is read in full
  return Status::Ok();
}

}  // namespace gw::governance
