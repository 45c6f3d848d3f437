// squeue --json -> SlurmJob, and the GRES/TRES string formats.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>

#include "jobs/slurm.h"

namespace gw::jobs {
namespace {

using nlohmann::json;

struct StateName {
  std::string_view text;
  JobState state;
};
constexpr StateName kStates[] = {
    {"PENDING", JobState::kPending},           {"RUNNING", JobState::kRunning},
    {"SUSPENDED", JobState::kSuspended},       {"COMPLETING", JobState::kCompleting},
    {"COMPLETED", JobState::kCompleted},       {"FAILED", JobState::kFailed},
    {"CANCELLED", JobState::kCancelled},       {"TIMEOUT", JobState::kTimeout},
    {"NODE_FAIL", JobState::kNodeFail},        {"PREEMPTED", JobState::kPreempted},
    {"OUT_OF_MEMORY", JobState::kOutOfMemory}, {"BOOT_FAIL", JobState::kBootFail},
    {"DEADLINE", JobState::kDeadline},
};

// A JSON number as an integer in [lo, hi] (floats and out-of-range values are clamped, not UB).
std::int64_t Clamped(const json& n, std::int64_t lo, std::int64_t hi) {
  if (n.is_number_integer() && !n.is_number_unsigned())
    return std::clamp(n.get<std::int64_t>(), lo, hi);
  if (n.is_number_unsigned())
    return n.get<std::uint64_t>() > static_cast<std::uint64_t>(hi)
               ? hi
               : static_cast<std::int64_t>(n.get<std::uint64_t>());
  const double d = n.get<double>();
  if (!(d == d)) return 0;  // NaN
  return d <= static_cast<double>(lo)   ? lo
         : d >= static_cast<double>(hi) ? hi
                                        : static_cast<std::int64_t>(d);
}

constexpr std::int64_t kMaxTime = std::int64_t{1} << 40;

// 22.05 writes plain numbers; 23.02+ write {"set": true, "infinite": false, "number": N}.
std::int64_t Int(const json& job, const char* key) {
  auto it = job.find(key);
  if (it == job.end() || it->is_null()) return 0;
  if (it->is_number()) return Clamped(*it, -kMaxTime, kMaxTime);
  if (it->is_object()) {
    auto set = it->find("set");
    auto infinite = it->find("infinite");
    if ((set != it->end() && set->is_boolean() && !set->get<bool>()) ||
        (infinite != it->end() && infinite->is_boolean() && infinite->get<bool>()))
      return 0;
    auto n = it->find("number");
    if (n != it->end() && n->is_number()) return Clamped(*n, -kMaxTime, kMaxTime);
  }
  return 0;
}

std::string Str(const json& job, const char* key) {
  auto it = job.find(key);
  if (it == job.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_integer()) return std::to_string(it->get<std::int64_t>());
  return "";
}

std::optional<int> ExitCode(const json& job) {
  auto it = job.find("exit_code");
  if (it == job.end() || it->is_null()) return std::nullopt;
  constexpr std::int64_t kMax = INT32_MAX;
  // 22.05 and older: the raw wait status (exit 3 is 768, SIGTERM is 15) -> the exit status, and
  // a signal as the shell says it: 128 + its number.
  if (it->is_number()) {
    const std::int64_t raw = Clamped(*it, -kMax, kMax);
    if (raw < 0) return static_cast<int>(raw);
    if ((raw & 0x7f) == 0) return static_cast<int>((raw >> 8) & 0xff);
    return 128 + static_cast<int>(raw & 0x7f);
  }
  if (it->is_object()) {
    auto rc = it->find("return_code");
    if (rc != it->end()) {
      if (rc->is_number()) return static_cast<int>(Clamped(*rc, -kMax, kMax));
      auto n = rc->is_object() ? rc->find("number") : rc->end();
      if (rc->is_object() && n != rc->end() && n->is_number())
        return static_cast<int>(Clamped(*n, -kMax, kMax));
    }
  }
  return std::nullopt;
}

bool ParseUnsigned(std::string_view text, unsigned* out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

}  // namespace

std::string_view JobStateName(JobState state) {
  for (const StateName& s : kStates)
    if (s.state == state) return s.text;
  return "OTHER";
}

JobState ParseJobState(std::string_view text) {
  for (const StateName& s : kStates)
    if (s.text == text) return s.state;
  return JobState::kOther;
}

bool IsFinished(JobState state) {
  switch (state) {
    case JobState::kPending:
    case JobState::kRunning:
    case JobState::kSuspended:
    case JobState::kCompleting:
    case JobState::kOther:
      return false;
    default:
      return true;
  }
}

bool SlurmJob::started() const {
  // A pending job's start_time is 0 or the scheduler's estimate (backfill), never a start.
  if (start_time <= 0 || state == JobState::kPending) return false;
  // Cancelled while pending: start = end = the cancel time.
  if (state == JobState::kCancelled && start_time == end_time) return false;
  // Rejected at submission: FAILED with start = submit = end.
  if (state == JobState::kFailed && start_time == submit_time && start_time == end_time)
    return false;
  return true;
}

unsigned SlurmJob::RequestedGpus() const {
  if (gpus.total > 0) return gpus.total;
  if (gpus.per_job > 0) return gpus.per_job;
  return gpus.per_node;
}

std::optional<std::int64_t> SlurmJob::QueueWaitS() const {
  if (!started() || eligible_time <= 0) return std::nullopt;
  return start_time - eligible_time;
}

std::vector<unsigned> ParseGresIndices(std::string_view gres) {
  std::vector<unsigned> out;
  const std::size_t idx = gres.find("IDX:");
  if (idx == std::string_view::npos) return out;
  std::string_view list = gres.substr(idx + 4);
  list = list.substr(0, std::min(list.find(')'), list.size()));
  while (!list.empty()) {
    const std::size_t comma = std::min(list.find(','), list.size());
    const std::string_view item = list.substr(0, comma);
    const std::size_t dash = item.find('-');
    unsigned lo = 0, hi = 0;
    if (dash == std::string_view::npos) {
      if (ParseUnsigned(item, &lo)) out.push_back(lo);
    } else if (ParseUnsigned(item.substr(0, dash), &lo) &&
               ParseUnsigned(item.substr(dash + 1), &hi) && lo <= hi && hi - lo < 4096) {
      for (unsigned i = lo; i <= hi; ++i) out.push_back(i);
    }
    list.remove_prefix(std::min(comma + 1, list.size()));
  }
  return out;
}

unsigned ParseTresGpuCount(std::string_view tres) {
  unsigned total = 0;
  while (!tres.empty()) {
    const std::size_t comma = std::min(tres.find(','), tres.size());
    std::string_view item = tres.substr(0, comma);
    tres.remove_prefix(std::min(comma + 1, tres.size()));
    // "gres:gpu:2", "gres/gpu:2", "gres/gpu=2", "gres:gpu:a100:2", "gpu:2" — but not "gres/gpumem".
    for (std::string_view prefix : {"gres:", "gres/"})
      if (item.substr(0, prefix.size()) == prefix) item.remove_prefix(prefix.size());
    if (item.substr(0, 3) != "gpu") continue;
    item.remove_prefix(3);
    if (item.empty()) {
      total += 1;  // "gres:gpu" means one
      continue;
    }
    if (item[0] != ':' && item[0] != '=') continue;
    const std::size_t last = item.find_last_of(":=");
    unsigned n = 0;
    if (ParseUnsigned(item.substr(last + 1), &n)) {
      total += n;
    } else if (last == 0) {
      total += 1;  // "gres:gpu:a100" means one
    }
  }
  return total;
}

Expected<std::vector<SlurmJob>> ParseSqueueJson(std::string_view text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return Error{"squeue --json: malformed JSON"};
  if (auto errors = doc.find("errors");
      errors != doc.end() && errors->is_array() && !errors->empty()) {
    const json& first = errors->front();
    auto message = first.is_object() ? first.find("error") : first.end();
    const std::string what = first.is_object() && message != first.end() && message->is_string()
                                 ? message->get<std::string>()
                                 : first.dump();
    return Error{"squeue --json reported an error: " + what};
  }
  auto list = doc.find("jobs");
  if (list == doc.end() || !list->is_array()) return Error{"squeue --json: no 'jobs' array"};
  std::vector<SlurmJob> jobs;
  jobs.reserve(list->size());
  for (const json& j : *list) {
    if (!j.is_object()) continue;
    SlurmJob job;
    job.id = Str(j, "job_id");
    if (job.id.empty()) continue;
    job.name = Str(j, "name");
    auto state = j.find("job_state");
    if (state != j.end() && state->is_array() && !state->empty() && state->front().is_string())
      job.state_text = state->front().get<std::string>();
    else
      job.state_text = Str(j, "job_state");
    job.state = ParseJobState(job.state_text);
    job.state_reason = Str(j, "state_reason");
    job.user = Str(j, "user_name");
    job.account = Str(j, "account");
    job.partition = Str(j, "partition");
    job.nodes = Str(j, "nodes");
    job.submit_time = Int(j, "submit_time");
    job.eligible_time = Int(j, "eligible_time");
    job.accrue_time = Int(j, "accrue_time");
    job.start_time = Int(j, "start_time");
    job.end_time = Int(j, "end_time");
    job.exit_code = ExitCode(j);
    if (auto gres = j.find("gres_detail"); gres != j.end() && gres->is_array()) {
      for (const json& g : *gres) {
        if (!g.is_string()) continue;
        for (unsigned i : ParseGresIndices(g.get<std::string>())) job.gpu_indices.push_back(i);
      }
    }
    job.gpus.per_node = ParseTresGpuCount(Str(j, "tres_per_node"));
    job.gpus.per_job = ParseTresGpuCount(Str(j, "tres_per_job"));
    job.tres_alloc = Str(j, "tres_alloc_str");
    job.gpus.total = ParseTresGpuCount(job.tres_alloc);
    if (job.gpus.total == 0) job.gpus.total = ParseTresGpuCount(Str(j, "tres_req_str"));
    job.qos = Str(j, "qos");
    job.comment = Str(j, "comment");
    job.priority = Int(j, "priority");
    jobs.push_back(std::move(job));
  }
  return jobs;
}

}  // namespace gw::jobs
