#include "config/governance_config.h"
#include "config/messages.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>

namespace gw::config {

namespace {

using governance::MemoryFilter;
using governance::ReclaimAction;
using governance::ReclaimPolicy;

struct PlaceOf {
  const std::string& file;
  std::string operator()(const YAML::Node& n) const { return config::Where(file, n); }
};

Status Text(const PlaceOf& at, const YAML::Node& n, const std::string& key, std::string* out) {
  if (!n.IsScalar()) return Error{at(n) + ": " + key + ": expected a single value"};
  *out = n.Scalar();
  return Status::Ok();
}

Status Number(const PlaceOf& at, const YAML::Node& n, const std::string& key, double min,
              double* out) {
  std::string text;
  if (Status s = Text(at, n, key, &text); !s.ok()) return s;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(v >= min) || v > 1e15)
    return Error{at(n) + ": " + key + ": expected a number >= " +
                 std::to_string(static_cast<long long>(min)) + ", got '" + Printable(text) + "'"};
  *out = v;
  return Status::Ok();
}

Status Seconds(const PlaceOf& at, const YAML::Node& n, const std::string& key, bool allow_zero,
               double* out) {
  std::string text;
  if (Status s = Text(at, n, key, &text); !s.ok()) return s;
  double v = 0;
  if (!ParseDurationSeconds(text, &v) || (!allow_zero && v <= 0))
    return Error{at(n) + ": " + key + ": expected a duration such as 30m or 1h, got '" +
                 Printable(text) + "'"};
  *out = v;
  return Status::Ok();
}

Status Strings(const PlaceOf& at, const YAML::Node& n, const std::string& key,
               std::vector<std::string>* out) {
  out->clear();
  if (n.IsNull()) return Status::Ok();
  if (n.IsScalar()) {
    out->push_back(n.Scalar());
    return Status::Ok();
  }
  if (!n.IsSequence()) return Error{at(n) + ": " + key + ": expected a list of strings"};
  for (const auto& item : n) {
    if (!item.IsScalar()) return Error{at(item) + ": " + key + ": expected a string"};
    out->push_back(item.Scalar());
  }
  return Status::Ok();
}

// An argv: a list, or one string split on spaces (no shell, no quoting).
Status Argv(const PlaceOf& at, const YAML::Node& n, const std::string& key,
            std::vector<std::string>* out) {
  if (Status s = Strings(at, n, key, out); !s.ok()) return s;
  if (n.IsScalar()) {
    std::vector<std::string> words;
    std::string word;
    for (char c : n.Scalar() + " ") {
      if (c == ' ' || c == '\t') {
        if (!word.empty()) words.push_back(word);
        word.clear();
      } else {
        word += c;
      }
    }
    *out = words;
  }
  if (out->empty() || (*out)[0].empty()) return Error{at(n) + ": " + key + ": expected a command"};
  return Status::Ok();
}

Status Exempt(const PlaceOf& at, const YAML::Node& n, const std::string& key,
              governance::Exemptions* out) {
  if (!n.IsMap())
    return Error{at(n) + ": " + key +
                 ": expected a mapping with users, accounts, qos, names, comment_tag"};
  for (const auto& item : n) {
    const std::string name = item.first.as<std::string>();
    const std::string k = key + "." + name;
    Status s = Status::Ok();
    if (name == "users") {
      s = Strings(at, item.second, k, &out->users);
    } else if (name == "accounts") {
      s = Strings(at, item.second, k, &out->accounts);
    } else if (name == "qos") {
      s = Strings(at, item.second, k, &out->qos);
    } else if (name == "names") {
      s = Strings(at, item.second, k, &out->names);
    } else if (name == "comment_tag") {
      s = Text(at, item.second, k, &out->comment_tag);
    } else {
      return Error{at(item.first) + ": " + key + ": unknown key '" + Printable(name) +
                   "' (users, accounts, qos, names, comment_tag)"};
    }
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Status Policy(const PlaceOf& at, const YAML::Node& n, const std::string& key, ReclaimPolicy* p) {
  if (!n.IsMap()) return Error{at(n) + ": " + key + ": expected a mapping (partition, team, ...)"};
  for (const auto& item : n) {
    const std::string name = item.first.as<std::string>();
    const std::string k = key + "." + name;
    const YAML::Node& v = item.second;
    Status s = Status::Ok();
    std::string text;
    if (name == "partition") {
      s = Text(at, v, k, &p->partition);
    } else if (name == "team") {
      s = Text(at, v, k, &p->team);
    } else if (name == "idle_for") {
      s = Seconds(at, v, k, false, &p->idle_for_s);
    } else if (name == "grace") {
      s = Seconds(at, v, k, true, &p->grace_s);
    } else if (name == "memory") {
      if (s = Text(at, v, k, &text); s.ok()) {
        if (text == "any") {
          p->memory = MemoryFilter::kAny;
        } else if (text == "held") {
          p->memory = MemoryFilter::kHeld;
        } else if (text == "free") {
          p->memory = MemoryFilter::kFree;
        } else {
          return Error{at(v) + ": " + k + ": expected any, held or free, got '" + Printable(text) +
                       "'"};
        }
      }
    } else if (name == "action") {
      if (s = Text(at, v, k, &text); s.ok()) {
        if (text == "dry-run") {
          p->action = ReclaimAction::kDryRun;
        } else if (text == "requeue") {
          p->action = ReclaimAction::kRequeue;
        } else if (text == "cancel") {
          p->action = ReclaimAction::kCancel;
        } else if (text == "command") {
          p->action = ReclaimAction::kCommand;
        } else {
          return Error{at(v) + ": " + k + ": expected dry-run, requeue, cancel or command, got '" +
                       Printable(text) + "'"};
        }
      }
    } else if (name == "command") {
      s = Argv(at, v, k, &p->command);
    } else if (name == "notify_command") {
      s = Argv(at, v, k, &p->notify_command);
    } else if (name == "exempt") {
      s = Exempt(at, v, k, &p->exempt);
    } else {
      return Error{at(item.first) + ": " + key + ": unknown key '" + Printable(name) +
                   "' (partition, team, idle_for, grace, memory, action, command, "
                   "notify_command, exempt)"};
    }
    if (!s.ok()) return s;
  }
  if (p->action == ReclaimAction::kCommand && p->command.empty())
    return Error{at(n) + ": " + key + ": action command needs a command (an argv list)"};
  if (p->action != ReclaimAction::kCommand && !p->command.empty())
    return Error{at(n) + ": " + key + ": command is only used with action: command"};
  return Status::Ok();
}

Status Quotas(const PlaceOf& at, const YAML::Node& n, const std::string& key,
              std::map<std::string, governance::TeamQuota>* out) {
  out->clear();
  if (n.IsNull()) return Status::Ok();
  if (!n.IsMap()) return Error{at(n) + ": " + key + ": expected team: {gpus: N} mappings"};
  for (const auto& team : n) {
    const std::string name = team.first.as<std::string>();
    const std::string k = key + "." + name;
    if (!team.second.IsMap())
      return Error{at(team.second) + ": " + k +
                   ": expected a mapping with gpus, gpu_hours, period"};
    governance::TeamQuota q;
    for (const auto& item : team.second) {
      const std::string field = item.first.as<std::string>();
      Status s = Status::Ok();
      if (field == "gpus") {
        s = Number(at, item.second, k + ".gpus", 0, &q.gpus);
      } else if (field == "gpu_hours") {
        s = Number(at, item.second, k + ".gpu_hours", 0, &q.gpu_hours);
      } else if (field == "period") {
        s = Seconds(at, item.second, k + ".period", false, &q.period_s);
      } else {
        return Error{at(item.first) + ": " + k + ": unknown key '" + Printable(field) +
                     "' (gpus, gpu_hours, period)"};
      }
      if (!s.ok()) return s;
    }
    if (q.gpus <= 0 && q.gpu_hours <= 0)
      return Error{at(team.second) + ": " + k + ": a quota needs gpus or gpu_hours above 0"};
    (*out)[name] = q;
  }
  return Status::Ok();
}

Status Ratio(const PlaceOf& at, const YAML::Node& n, const std::string& key, double* out) {
  return Number(at, n, key, 0, out);
}

}  // namespace

const std::vector<std::string>& GovernanceKeys() {
  static const std::vector<std::string> keys = {
      "governance.reclaim",
      "governance.decisions_log",
      "governance.requeue_command",
      "governance.cancel_command",
      "governance.command_timeout",
      "governance.capacity_command",
      "governance.pools.capacity",
      "governance.pools.windows",
      "governance.pools.scale_out_ratio",
      "governance.pools.scale_out_for",
      "governance.pools.shrink_free_ratio",
      "governance.pools.shrink_for",
      "governance.quotas",
      "governance.under_use_ratio",
      "governance.under_use_for",
      "governance.memory_held_ratio",
      "governance.prices.gpu_hour",
      "governance.prices.energy_kwh",
      "governance.prices.currency",
  };
  return keys;
}

Status ParseGovernanceKey(const std::string& file, const std::string& key, const YAML::Node& n,
                          GovernanceConfig* out) {
  const PlaceOf at{file};
  governance::Settings& s = out->settings;
  if (key == "governance.reclaim") {
    s.reclaim.clear();
    if (n.IsNull()) return Status::Ok();
    if (!n.IsSequence()) return Error{at(n) + ": " + key + ": expected a list of policies"};
    for (size_t i = 0; i < n.size(); ++i) {
      ReclaimPolicy p;
      if (Status st = Policy(at, n[i], key + "[" + std::to_string(i) + "]", &p); !st.ok())
        return st;
      s.reclaim.push_back(std::move(p));
    }
    return Status::Ok();
  }
  if (key == "governance.decisions_log") return Text(at, n, key, &out->decisions_log);
  if (key == "governance.requeue_command") return Argv(at, n, key, &out->requeue_command);
  if (key == "governance.cancel_command") return Argv(at, n, key, &out->cancel_command);
  if (key == "governance.capacity_command") return Argv(at, n, key, &out->capacity_command);
  if (key == "governance.command_timeout")
    return Seconds(at, n, key, false, &out->command_timeout_s);
  if (key == "governance.pools.capacity") {
    s.pool.capacity_gpus.clear();
    if (n.IsNull()) return Status::Ok();
    if (!n.IsMap()) return Error{at(n) + ": " + key + ": expected partition: GPUs mappings"};
    for (const auto& item : n) {
      const std::string name = item.first.as<std::string>();
      if (Status st = Number(at, item.second, key + "." + name, 0, &s.pool.capacity_gpus[name]);
          !st.ok())
        return st;
    }
    return Status::Ok();
  }
  if (key == "governance.pools.windows") {
    std::vector<std::string> texts;
    if (Status st = Strings(at, n, key, &texts); !st.ok()) return st;
    s.pool.windows_s.clear();
    for (const std::string& t : texts) {
      double v = 0;
      if (!ParseDurationSeconds(t, &v) || v <= 0)
        return Error{at(n) + ": " + key + ": expected durations such as 1h, got '" + Printable(t) +
                     "'"};
      s.pool.windows_s.push_back(v);
    }
    if (s.pool.windows_s.empty()) return Error{at(n) + ": " + key + ": expected a window"};
    return Status::Ok();
  }
  if (key == "governance.pools.scale_out_ratio") return Ratio(at, n, key, &s.pool.scale_out_ratio);
  if (key == "governance.pools.scale_out_for")
    return Seconds(at, n, key, true, &s.pool.scale_out_for_s);
  if (key == "governance.pools.shrink_free_ratio")
    return Ratio(at, n, key, &s.pool.shrink_free_ratio);
  if (key == "governance.pools.shrink_for") return Seconds(at, n, key, true, &s.pool.shrink_for_s);
  if (key == "governance.quotas") return Quotas(at, n, key, &s.quotas.teams);
  if (key == "governance.under_use_ratio") return Ratio(at, n, key, &s.quotas.under_use_ratio);
  if (key == "governance.under_use_for")
    return Seconds(at, n, key, true, &s.quotas.under_use_for_s);
  if (key == "governance.memory_held_ratio") {
    double v = 0;
    if (Status st = Number(at, n, key, 0, &v); !st.ok()) return st;
    if (v > 1)
      return Error{at(n) + ": " + key + ": expected a share of the GPU's memory 0-1, got '" +
                   Printable(n.Scalar()) + "'"};
    s.memory_held_ratio = v;
    return Status::Ok();
  }
  if (key == "governance.prices.gpu_hour") {
    s.prices.gpu_hour_by_model.clear();
    if (n.IsNull()) return Status::Ok();
    if (n.IsScalar()) return Number(at, n, key, 0, &s.prices.default_gpu_hour);
    if (!n.IsMap()) return Error{at(n) + ": " + key + ": expected model: price mappings"};
    for (const auto& item : n) {
      const std::string model = item.first.as<std::string>();
      double price = 0;
      if (Status st = Number(at, item.second, key + "." + model, 0, &price); !st.ok()) return st;
      if (model == "default")
        s.prices.default_gpu_hour = price;
      else
        s.prices.gpu_hour_by_model[model] = price;
    }
    return Status::Ok();
  }
  if (key == "governance.prices.energy_kwh") return Number(at, n, key, 0, &s.prices.energy_per_kwh);
  if (key == "governance.prices.currency") return Text(at, n, key, &s.prices.currency);
  return Error{at(n) + ": unknown key '" + key + "' (see docs/configuration.md)"};
}

}  // namespace gw::config
