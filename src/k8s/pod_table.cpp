// The pod table (k8s/pod_table.h): pod-resources answers -> jobs and lifecycle events, and the
// pod list (kubectl get pods -o json) parser. docs/kubernetes.md ("Pods as jobs") says why each
// rule is what it is.
#include "k8s/pod_table.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <set>
#include <utility>

#include "base/glob.h"

namespace gw::k8s {

namespace {

using json = nlohmann::json;

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's civil-days algorithm).
std::int64_t DaysFromCivil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

bool Digits(std::string_view text, std::size_t pos, std::size_t n, int* out) {
  if (pos + n > text.size()) return false;
  int v = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    v = v * 10 + (text[i] - '0');
  }
  *out = v;
  return true;
}

// RFC 3339 ("2026-12-02T03:04:05Z", "2026-12-02T03:04:05.123456+02:00") -> epoch seconds
// (fractions dropped); 0 if malformed.
std::int64_t ParseRfc3339(std::string_view text) {
  int year, month, day, hour, minute, second;
  if (!Digits(text, 0, 4, &year) || text.size() < 19 || text[4] != '-' ||
      !Digits(text, 5, 2, &month) || text[7] != '-' || !Digits(text, 8, 2, &day) ||
      (text[10] != 'T' && text[10] != 't' && text[10] != ' ') || !Digits(text, 11, 2, &hour) ||
      text[13] != ':' || !Digits(text, 14, 2, &minute) || text[16] != ':' ||
      !Digits(text, 17, 2, &second))
    return 0;
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60)
    return 0;
  std::size_t pos = 19;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    const std::size_t digits_start = pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') ++pos;
    if (pos == digits_start) return 0;
  }
  std::int64_t offset_s = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    int oh, om;
    if (!Digits(text, pos + 1, 2, &oh) || pos + 3 >= text.size() || text[pos + 3] != ':' ||
        !Digits(text, pos + 4, 2, &om) || oh > 23 || om > 59)
      return 0;
    offset_s = (oh * 3600 + om * 60) * (text[pos] == '-' ? -1 : 1);
    pos += 6;
  } else {
    return 0;  // RFC 3339 requires the offset
  }
  if (pos != text.size()) return 0;
  const std::int64_t days =
      DaysFromCivil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  return days * 86400 + hour * 3600 + minute * 60 + second - offset_s;
}

std::string Str(const json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

const json* Obj(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it != object.end() && it->is_object() ? &*it : nullptr;
}

std::map<std::string, std::string> StringMap(const json* object) {
  std::map<std::string, std::string> out;
  if (!object) return out;
  for (auto it = object->begin(); it != object->end(); ++it)
    if (it.value().is_string()) out[it.key()] = it.value().get<std::string>();
  return out;
}

PodInfo ParsePod(const json& item) {
  PodInfo info;
  static const json kEmpty = json::object();
  const json* meta = Obj(item, "metadata");
  const json& m = meta ? *meta : kEmpty;
  info.ns = Str(m, "namespace");
  info.name = Str(m, "name");
  info.uid = Str(m, "uid");
  info.labels = StringMap(Obj(m, "labels"));
  info.annotations = StringMap(Obj(m, "annotations"));
  info.creation_time = ParseRfc3339(Str(m, "creationTimestamp"));
  info.deleting = !Str(m, "deletionTimestamp").empty();
  if (const json* spec = Obj(item, "spec")) info.node_name = Str(*spec, "nodeName");
  const json* status = Obj(item, "status");
  if (!status) return info;
  info.phase = Str(*status, "phase");
  info.reason = Str(*status, "reason");
  info.start_time = ParseRfc3339(Str(*status, "startTime"));
  auto statuses = status->find("containerStatuses");
  if (statuses == status->end() || !statuses->is_array()) return info;
  bool all_terminated = !statuses->empty();
  std::string first_reason, failed_reason;
  std::optional<int> failed_code;
  for (const json& c : *statuses) {
    const json* state = Obj(c, "state");
    const json* terminated = state ? Obj(*state, "terminated") : nullptr;
    if (!terminated) {
      all_terminated = false;
      continue;
    }
    const std::string reason = Str(*terminated, "reason");
    if (first_reason.empty()) first_reason = reason;
    auto code = terminated->find("exitCode");
    if (code != terminated->end() && code->is_number_integer()) {
      const auto value = code->get<std::int64_t>();
      if (value != 0 && !failed_code) {
        failed_code = static_cast<int>(std::clamp<std::int64_t>(value, -255, 255));
        failed_reason = reason;
      }
    }
  }
  if (failed_code) {
    info.exit_code = failed_code;
  } else if (all_terminated) {
    info.exit_code = 0;
  }
  if (info.reason.empty()) info.reason = failed_code ? failed_reason : first_reason;
  return info;
}

std::string Key(std::string_view ns, std::string_view name) {
  std::string key;
  key.reserve(ns.size() + name.size() + 1);
  key.append(ns).append("/").append(name);
  return key;
}

// One pod of the answer, GPU devices only, duplicates merged.
struct Current {
  const PodResources* pod = nullptr;
  std::vector<jobs::SlurmJob::Device> devices;
};

bool SameDevices(std::vector<jobs::SlurmJob::Device> a, std::vector<jobs::SlurmJob::Device> b) {
  auto less = [](const jobs::SlurmJob::Device& x, const jobs::SlurmJob::Device& y) {
    return std::tie(x.id, x.resource, x.container) < std::tie(y.id, y.resource, y.container);
  };
  std::sort(a.begin(), a.end(), less);
  std::sort(b.begin(), b.end(), less);
  return a == b;
}

// The final state of a pod that left the answer, from what the pod list last said about it.
void FinalState(const PodInfo* info, jobs::SlurmJob* job) {
  if (!info) {
    job->state = jobs::JobState::kOther;
    job->state_text = "ENDED";
    return;
  }
  using jobs::JobState;
  JobState state = JobState::kOther;
  if (info->reason == "Evicted" || info->reason == "Preempting")
    state = JobState::kPreempted;
  else if (info->reason == "OOMKilled")
    state = JobState::kOutOfMemory;
  else if (info->phase == "Succeeded")
    state = JobState::kCompleted;
  else if (info->phase == "Failed")
    state = JobState::kFailed;
  else if (info->deleting)
    state = JobState::kCancelled;
  job->state = state;
  job->state_text = state == JobState::kOther ? "ENDED" : std::string(jobs::JobStateName(state));
  job->state_reason = info->reason;
  job->exit_code = info->exit_code;
}

// The user a pod names: options.user_label's value, else options.user_annotation's, else "".
std::string UserOf(const PodInfo& info, const PodTableOptions& options) {
  if (!options.user_label.empty()) {
    auto l = info.labels.find(options.user_label);
    if (l != info.labels.end() && !l->second.empty()) return l->second;
  }
  if (!options.user_annotation.empty()) {
    auto a = info.annotations.find(options.user_annotation);
    if (a != info.annotations.end()) return a->second;
  }
  return "";
}

bool Terminal(const PodInfo* info) {
  return info && (info->phase == "Succeeded" || info->phase == "Failed");
}

}  // namespace

Expected<std::vector<PodInfo>> ParsePodListJson(std::string_view text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return Error{"pod list: malformed JSON"};
  std::vector<PodInfo> out;
  auto items = doc.find("items");
  if (items == doc.end()) {
    if (Str(doc, "kind") != "Pod")
      return Error{"pod list: neither a PodList (no \"items\") nor a Pod (kind " +
                   (Str(doc, "kind").empty() ? std::string("missing") : Str(doc, "kind")) + ")"};
    PodInfo info = ParsePod(doc);
    if (!info.ns.empty() && !info.name.empty()) out.push_back(std::move(info));
    return out;
  }
  if (items->is_null()) return out;  // an empty list may be written as null
  if (!items->is_array()) return Error{"pod list: \"items\" is not a list"};
  out.reserve(items->size());
  for (const json& item : *items) {
    if (!item.is_object()) continue;
    PodInfo info = ParsePod(item);
    if (info.ns.empty() || info.name.empty()) continue;
    out.push_back(std::move(info));
  }
  return out;
}

bool ResourceMatches(const std::vector<std::string>& patterns, std::string_view resource) {
  for (const std::string& p : patterns) {
    if (p.find('*') == std::string::npos ? p == resource : GlobMatch(p, resource)) return true;
  }
  return false;
}

PodTable::PodTable(PodTableOptions options) : options_(std::move(options)) {}

std::vector<jobs::JobEvent> PodTable::Apply(const std::vector<PodResources>& pods,
                                            const std::vector<PodInfo>* infos, double now_s,
                                            std::vector<std::string>* warnings) {
  std::set<std::string> warned_kinds;
  auto warn = [&](const char* kind, std::string line) {
    if (warnings && warned_kinds.insert(kind).second) warnings->push_back(std::move(line));
  };
  const auto now = static_cast<std::int64_t>(now_s);

  // The pod list of this poll, if any; it replaces the last one once the ended pods used it.
  std::map<std::string, PodInfo> new_infos;
  if (infos) {
    std::size_t kept = 0;
    for (const PodInfo& info : *infos) {
      if (info.ns.empty() || info.name.empty()) {
        warn("list-empty", "pod list: an item without a namespace or name was skipped");
        continue;
      }
      if (kept >= options_.max_pods) {
        warn("list-many", "pod list: more than " + std::to_string(options_.max_pods) +
                              " pods; the rest are ignored (max_pods)");
        break;
      }
      auto [it, inserted] = new_infos.try_emplace(Key(info.ns, info.name), info);
      if (!inserted) {
        warn("list-dup", "pod list: pod " + it->first + " is listed more than once; the last wins");
        it->second = info;
      } else {
        ++kept;
      }
    }
  }
  auto info_of = [&](const std::string& key) -> const PodInfo* {
    if (infos) {
      auto it = new_infos.find(key);
      if (it != new_infos.end()) return &it->second;
    }
    auto it = infos_.find(key);
    return it != infos_.end() ? &it->second : nullptr;
  };

  // The answer: GPU devices per pod, oddities dropped or merged.
  std::map<std::string, Current> current;
  std::size_t pods_seen = 0, devices_kept = 0;
  for (const PodResources& pod : pods) {
    if (pod.ns.empty() || pod.name.empty()) {
      warn("empty-name", "pod-resources answer: a pod without a namespace or name was skipped");
      continue;
    }
    std::string key = Key(pod.ns, pod.name);
    auto found = current.find(key);
    if (found == current.end()) {
      if (pods_seen >= options_.max_pods) {
        warn("many-pods", "pod-resources answer: more than " + std::to_string(options_.max_pods) +
                              " pods; the rest are ignored (max_pods)");
        continue;
      }
      ++pods_seen;
      found = current.emplace(key, Current{&pod, {}}).first;
    } else {
      warn("duplicate", "pod-resources answer: pod " + key +
                            " is listed more than once; its entries are merged");
    }
    Current& cur = found->second;
    for (const ContainerResources& container : pod.containers) {
      for (const DeviceGroup& group : container.devices) {
        if (!ResourceMatches(options_.resources, group.resource_name)) continue;
        for (const std::string& id : group.device_ids) {
          if (id.empty()) {
            warn("empty-id", "pod-resources answer: pod " + key + " has a device of " +
                                 group.resource_name + " with an empty id; skipped");
            continue;
          }
          if (devices_kept >= options_.max_devices) {
            warn("many-devices", "pod-resources answer: more than " +
                                     std::to_string(options_.max_devices) +
                                     " GPU devices; the rest are ignored (max_devices)");
            continue;
          }
          jobs::SlurmJob::Device device{id, group.resource_name, container.name};
          if (std::find(cur.devices.begin(), cur.devices.end(), device) != cur.devices.end())
            continue;  // the same device twice (merged duplicates): once is enough
          cur.devices.push_back(std::move(device));
          ++devices_kept;
        }
      }
    }
  }

  std::vector<jobs::JobEvent> events;
  auto finish = [&](jobs::SlurmJob job, std::int64_t time) {
    FinalState(info_of(job.id), &job);
    job.end_time = time;
    jobs::JobEvent e{jobs::JobEventKind::kFinished, job.id, time, job.state, std::move(job)};
    events.push_back(std::move(e));
  };

  // Jobs that left: gone from the answer, without GPUs now, or terminal in the pod list.
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    auto cur = current.find(it->first);
    if (cur != current.end() && !cur->second.devices.empty() && !Terminal(info_of(it->first))) {
      ++it;
      continue;
    }
    finish(std::move(it->second), now);
    it = jobs_.erase(it);
  }

  for (auto& [key, cur] : current) {
    if (cur.devices.empty()) continue;  // not a job: holds no GPU
    const PodInfo* info = info_of(key);
    if (Terminal(info)) continue;  // the kubelet still lists a pod that has ended
    auto existing = jobs_.find(key);
    std::int64_t start = 0;
    if (existing != jobs_.end()) {
      const bool new_uid = info && !info->uid.empty() && !existing->second.pod_uid.empty() &&
                           info->uid != existing->second.pod_uid;
      if (!new_uid && SameDevices(existing->second.devices, cur.devices)) {
        // Same pod instance: refresh what the pod list adds.
        jobs::SlurmJob& job = existing->second;
        if (info) {
          const std::string user = UserOf(*info, options_);
          const bool refreshed =
              (!info->uid.empty() && job.pod_uid != info->uid) ||
              (info->creation_time > 0 && job.submit_time != info->creation_time) ||
              (!user.empty() && job.user != user);
          if (!info->uid.empty()) job.pod_uid = info->uid;
          if (info->creation_time > 0) job.submit_time = info->creation_time;
          if (!user.empty()) job.user = user;
          if (refreshed) ++changes_;
        }
        continue;
      }
      // A new instance of the pod (devices are fixed for a pod's life; or a new UID): the old
      // one ended no later than the new one started.
      start = new_uid && info->start_time > 0 && info->start_time <= now ? info->start_time : now;
      start = std::max(start, existing->second.start_time);
      jobs::SlurmJob old = std::move(existing->second);
      jobs_.erase(existing);
      old.state = jobs::JobState::kOther;
      old.state_text = "ENDED";
      old.state_reason = new_uid ? "pod replaced" : "devices changed";
      old.end_time = start;
      events.push_back(
          jobs::JobEvent{jobs::JobEventKind::kFinished, old.id, start, old.state, old});
    } else {
      start = info && info->start_time > 0 ? info->start_time : now;
    }
    jobs::SlurmJob job;
    job.id = key;
    job.source = "kubernetes";
    job.name = job.pod_name = cur.pod->name;
    job.account = job.pod_namespace = cur.pod->ns;
    job.nodes = options_.node_name;
    job.state = jobs::JobState::kRunning;
    job.state_text = "RUNNING";
    job.start_time = start;
    job.devices = std::move(cur.devices);
    if (info) {
      job.pod_uid = info->uid;
      job.submit_time = info->creation_time;
      job.user = UserOf(*info, options_);
    }
    events.push_back(
        jobs::JobEvent{jobs::JobEventKind::kStarted, job.id, job.start_time, job.state, job});
    jobs_.emplace(key, std::move(job));
  }
  // Oldest first; a pod's kFinished stays before its new instance's kStarted at the same time.
  std::stable_sort(
      events.begin(), events.end(),
      [](const jobs::JobEvent& a, const jobs::JobEvent& b) { return a.time < b.time; });

  if (!events.empty()) ++changes_;
  if (infos) infos_ = std::move(new_infos);
  health_.NoteSuccess(now_s);
  return events;
}

void PodTable::Failed(const std::string& error, double now_s) {
  health_.NoteFailure(error, now_s);
}

}  // namespace gw::k8s
