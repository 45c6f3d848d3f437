// One piece: the table of every key's setter (Setters()) with the helpers they share, so that a
// key is found, parsed and documented in one place; the sections with structure of their own are
// in governance_config.cpp, diagnose_config.cpp and scrape_config.cpp.
#include "config/config.h"
#include "config/messages.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "base/yaml_error.h"
#include "base/yaml_keys.h"
#include "base/yaml_load.h"
#include "config/remote_config.h"
#include "config/scrape_config.h"
#include "jobs/teams.h"

namespace gw::config {

bool ParseInteger(const std::string& text, long long min, long long max, long long* out) {
  if (text.empty() || text.size() > 19) return false;
  long long v = 0;
  for (char ch : text) {
    if (ch < '0' || ch > '9') return false;
    v = v * 10 + (ch - '0');
  }
  if (v < min || v > max) return false;
  *out = v;
  return true;
}

namespace {

struct Context {
  std::string file;
  std::string Where(const YAML::Node& node) const { return config::Where(file, node); }
};

using Setter = std::function<Status(const Context&, const YAML::Node&, Config*)>;

Status Scalar(const Context& ctx, const YAML::Node& node, const std::string& key,
              std::string* out) {
  if (!node.IsScalar()) return Error{ctx.Where(node) + ": " + key + ": expected a single value"};
  *out = node.Scalar();
  return Status::Ok();
}

Setter String(std::string Config::*field) {
  return [field](const Context& ctx, const YAML::Node& node, Config* c) {
    return Scalar(ctx, node, "value", &(c->*field));
  };
}

Setter Duration(const std::string& key, std::function<double&(Config*)> field, bool allow_zero) {
  return [key, field, allow_zero](const Context& ctx, const YAML::Node& node, Config* c) {
    std::string text;
    if (Status s = Scalar(ctx, node, key, &text); !s.ok()) return s;
    double seconds = 0;
    if (!ParseDurationSeconds(text, &seconds) || (!allow_zero && seconds <= 0))
      return Status(Error{ctx.Where(node) + ": " + key +
                          ": expected a duration such as 1s, 500ms or 2m, got '" + Printable(text) +
                          "'"});
    field(c) = seconds;
    return Status::Ok();
  };
}

// storage.block_range: 0 (automatic) or whole 5-minute rollup windows from 1 h to 7 d.
Status ValidateBlockRange(double seconds) {
  if (seconds == 0 || (seconds >= 3600 && seconds <= 7 * 86400 && std::fmod(seconds, 300) == 0))
    return Status::Ok();
  return Status(Error{"storage.block_range (" + FormatDuration(seconds) +
                      ") must be 0 (automatic) or a whole number of 5-minute windows from 1h to "
                      "7d"});
}

Setter Bool(const std::string& key, std::function<bool&(Config*)> field) {
  return [key, field](const Context& ctx, const YAML::Node& node, Config* c) {
    std::string text;
    if (Status s = Scalar(ctx, node, key, &text); !s.ok()) return s;
    if (text == "true") {
      field(c) = true;
    } else if (text == "false") {
      field(c) = false;
    } else {
      return Status(Error{ctx.Where(node) + ": " + key + ": expected true or false, got '" +
                          Printable(text) + "'"});
    }
    return Status::Ok();
  };
}

// A whole number in [min, max].
Setter Integer(const std::string& key, long long min, long long max,
               std::function<void(Config*, long long)> set) {
  return [key, min, max, set](const Context& ctx, const YAML::Node& node, Config* c) {
    std::string text;
    if (Status s = Scalar(ctx, node, key, &text); !s.ok()) return s;
    long long v = 0;
    if (!ParseInteger(text, min, max, &v))
      return Status(Error{ctx.Where(node) + ": " + key + ": expected a whole number from " +
                          std::to_string(min) + " to " + std::to_string(max) + ", got '" +
                          Printable(text) + "'"});
    set(c, v);
    return Status::Ok();
  };
}

// A sequence of strings (or one string).
Status StringList(const Context& ctx, const YAML::Node& node, const std::string& key,
                  std::vector<std::string>* out) {
  out->clear();
  if (node.IsScalar()) {
    out->push_back(node.Scalar());
    return Status::Ok();
  }
  if (!node.IsSequence())
    return Error{ctx.Where(node) + ": " + key + ": expected a list of strings"};
  for (const auto& item : node) {
    if (!item.IsScalar()) return Error{ctx.Where(item) + ": " + key + ": expected a string"};
    out->push_back(item.Scalar());
  }
  return Status::Ok();
}

// A mapping of names to string values (teams.accounts: account -> team).
Status StringMap(const Context& ctx, const YAML::Node& node, const std::string& key,
                 std::map<std::string, std::string>* out) {
  out->clear();
  if (node.IsNull()) return Status::Ok();
  if (!node.IsMap())
    return Error{ctx.Where(node) + ": " + key + ": expected a mapping of names to teams"};
  for (const auto& item : node) {
    std::string name = item.first.as<std::string>(), value;
    if (Status s = Scalar(ctx, item.second, key + "." + name, &value); !s.ok()) return s;
    (*out)[name] = value;
  }
  return Status::Ok();
}

// "squeue --json" -> {"squeue", "--json"}; runs of spaces and tabs separate words.
std::vector<std::string> SplitWords(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  for (char ch : text) {
    if (ch == ' ' || ch == '\t') {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
    } else {
      word += ch;
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

bool ValidLabelName(const std::string& name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return name.rfind("__", 0) != 0;
}

// A list of receivers: each a URL string, or a mapping with url and options.
Status Receivers(const Context& ctx, const YAML::Node& node, const std::string& key,
                 std::vector<ReceiverConfig>* out) {
  out->clear();
  if (!node.IsSequence())
    return Error{ctx.Where(node) + ": " + key + ": expected a list of receivers"};
  for (const auto& item : node) {
    ReceiverConfig r;
    if (item.IsScalar()) {
      r.url = item.Scalar();
    } else if (item.IsMap()) {
      for (const auto& field : item) {
        const std::string name = field.first.as<std::string>();
        const YAML::Node& v = field.second;
        std::string text;
        if (name == "basic_auth") {
          if (!v.IsMap())
            return Error{ctx.Where(v) + ": " + key +
                         ".basic_auth: expected username and password_file"};
          for (const auto& a : v) {
            const std::string an = a.first.as<std::string>();
            if (an == "username") {
              if (Status s =
                      Scalar(ctx, a.second, key + ".basic_auth.username", &r.basic_auth_username);
                  !s.ok())
                return s;
            } else if (an == "password_file") {
              if (Status s = Scalar(ctx, a.second, key + ".basic_auth.password_file",
                                    &r.basic_auth_password_file);
                  !s.ok())
                return s;
            } else {
              return Error{ctx.Where(a.first) + ": " + key + ".basic_auth: unknown key '" +
                           Printable(an) + "' (username, password_file)"};
            }
          }
          continue;
        }
        if (Status s = Scalar(ctx, v, key + "." + name, &text); !s.ok()) return s;
        if (name == "url") {
          r.url = text;
        } else if (name == "timeout") {
          if (!ParseDurationSeconds(text, &r.timeout_s) || !(r.timeout_s > 0))
            return Error{ctx.Where(v) + ": " + key +
                         ".timeout: expected a duration such as 10s, got '" + Printable(text) +
                         "'"};
        } else if (name == "bearer_token_file") {
          r.bearer_token_file = text;
        } else if (name == "tls_ca_file") {
          r.tls_ca_file = text;
        } else if (name == "tls_insecure_skip_verify") {
          if (text != "true" && text != "false")
            return Error{ctx.Where(v) + ": " + key +
                         ".tls_insecure_skip_verify: expected true or false"};
          r.tls_insecure_skip_verify = text == "true";
        } else {
          return Error{ctx.Where(field.first) + ": " + key + ": unknown key '" + Printable(name) +
                       "' (url, timeout, basic_auth, bearer_token_file, tls_ca_file, "
                       "tls_insecure_skip_verify)"};
        }
      }
    } else {
      return Error{ctx.Where(item) + ": " + key + ": expected a URL or a mapping with url"};
    }
    if (r.url.rfind("http://", 0) != 0 && r.url.rfind("https://", 0) != 0)
      return Error{ctx.Where(item) + ": " + key +
                   ": url must start with http:// or https://, got '" + Printable(r.url) + "'"};
    out->push_back(std::move(r));
  }
  return Status::Ok();
}

// A `governance.*` key, parsed by cli/governance_config.cpp.
Setter Governance(const std::string& key) {
  return [key](const Context& ctx, const YAML::Node& node, Config* c) {
    return ParseGovernanceKey(ctx.file, key, node, &c->governance);
  };
}

// A `diagnose.*` key, parsed by cli/diagnose_config.cpp.
Setter Diagnose(const std::string& key) {
  return [key](const Context& ctx, const YAML::Node& node, Config* c) {
    return ParseDiagnoseKey(ctx.file, key, node, &c->diagnose);
  };
}

const std::map<std::string, Setter>& Setters() {
  static const std::map<std::string, Setter> setters = {
      {"listen", String(&Config::listen)},
      {"web_config_file", String(&Config::web_config_file)},
      {"log_level", String(&Config::log_level)},
      {"nvml.library", String(&Config::nvml_library)},
      {"nvml.call_timeout",
       Duration(
           "nvml.call_timeout", [](Config* c) -> double& { return c->collect.call_timeout_s; },
           false)},
      {"simulate.scenario",
       [](const Context& ctx, const YAML::Node& n, Config* c) {
         return Scalar(ctx, n, "simulate.scenario", &c->simulate.scenario);
       }},
      {"simulate.clock",
       [](const Context& ctx, const YAML::Node& n, Config* c) {
         return Scalar(ctx, n, "simulate.clock", &c->simulate.clock);
       }},
      {"simulate.speed",
       [](const Context& ctx, const YAML::Node& n, Config* c) {
         std::string text;
         if (Status s = Scalar(ctx, n, "simulate.speed", &text); !s.ok()) return s;
         char* end = nullptr;
         double v = std::strtod(text.c_str(), &end);
         if (end == text.c_str() || *end != '\0' || !(v > 0))
           return Status(Error{ctx.Where(n) +
                               ": simulate.speed: expected a positive number, got '" +
                               Printable(text) + "'"});
         c->simulate.speed = v;
         return Status::Ok();
       }},
      {"simulate.start",
       [](const Context& ctx, const YAML::Node& n, Config* c) {
         std::string text;
         if (Status s = Scalar(ctx, n, "simulate.start", &text); !s.ok()) return s;
         char* end = nullptr;
         double v = std::strtod(text.c_str(), &end);
         if (end == text.c_str() || *end != '\0' || !(v >= 0))
           return Status(Error{ctx.Where(n) +
                               ": simulate.start: expected Unix seconds (0 = now), got '" +
                               Printable(text) + "'"});
         c->simulate.start_unix = v;
         return Status::Ok();
       }},
      {"storage.path", [](const Context& ctx, const YAML::Node& n,
                          Config* c) { return Scalar(ctx, n, "storage.path", &c->storage.path); }},
      {"storage.retention",
       Duration(
           "storage.retention", [](Config* c) -> double& { return c->storage.retention_s; },
           false)},
      {"storage.rollup_retention",
       Duration(
           "storage.rollup_retention",
           [](Config* c) -> double& { return c->storage.rollup_retention_s; }, false)},
      {"storage.block_range",
       [](const Context& ctx, const YAML::Node& n, Config* c) {
         const Setter duration = Duration(
             "storage.block_range", [](Config* cfg) -> double& { return cfg->storage.block_range_s; },
             true);
         if (Status s = duration(ctx, n, c); !s.ok()) return s;
         if (Status s = ValidateBlockRange(c->storage.block_range_s); !s.ok())
           return Status(Error{ctx.Where(n) + ": " + s.message()});
         return Status::Ok();
       }},
      {"storage.flush_interval",
       Duration(
           "storage.flush_interval",
           [](Config* c) -> double& { return c->storage.flush_interval_s; }, false)},
      {"collect.interval",
       Duration(
           "collect.interval", [](Config* c) -> double& { return c->collect.fast_interval_s; },
           false)},
      {"collect.slow_interval",
       Duration(
           "collect.slow_interval", [](Config* c) -> double& { return c->collect.slow_interval_s; },
           false)},
      {"collect.memory_peak_interval",
       Duration(
           "collect.memory_peak_interval",
           [](Config* c) -> double& { return c->collect.memory_peak_interval_s; }, true)},
      {"collect.peak_window",
       Duration(
           "collect.peak_window", [](Config* c) -> double& { return c->collect.peak_window_s; },
           true)},
      {"query.timeout",
       Duration(
           "query.timeout", [](Config* c) -> double& { return c->query.timeout_s; }, false)},
      {"query.max_samples", Integer("query.max_samples", 1, kMaxQuerySamples,
                                    [](Config* c, long long v) { c->query.max_samples = v; })},
      {"query.max_concurrency",
       Integer("query.max_concurrency", 1, kMaxQueryConcurrency,
               [](Config* c, long long v) { c->query.max_concurrency = static_cast<int>(v); })},
      {"query.max_queued",
       Integer("query.max_queued", 0, kMaxQueryQueued,
               [](Config* c, long long v) { c->query.max_queued = static_cast<int>(v); })},
      {"rules.builtin", Bool("rules.builtin", [](Config* c) -> bool& { return c->rules.builtin; })},
      {"rules.files", [](const Context& ctx, const YAML::Node& n,
                         Config* c) { return StringList(ctx, n, "rules.files", &c->rules.files); }},
      {"rules.evaluation_interval",
       Duration(
           "rules.evaluation_interval",
           [](Config* c) -> double& { return c->rules.evaluation_interval_s; }, false)},
      {"rules.external_url",
       [](const Context& ctx, const YAML::Node& n, Config* c) {
         return Scalar(ctx, n, "rules.external_url", &c->rules.external_url);
       }},
      {"rules.external_labels",
       [](const Context& ctx, const YAML::Node& n, Config* c) {
         if (!n.IsMap())
           return Status(
               Error{ctx.Where(n) +
                     ": rules.external_labels: expected a mapping of label names to values"});
         c->rules.external_labels.clear();
         for (const auto& item : n) {
           std::string name = item.first.as<std::string>(), value;
           if (!ValidLabelName(name))
             return Status(Error{ctx.Where(item.first) +
                                 ": rules.external_labels: invalid label name '" + Printable(name) +
                                 "'"});
           if (Status s = Scalar(ctx, item.second, "rules.external_labels." + name, &value);
               !s.ok())
             return s;
           c->rules.external_labels.emplace_back(name, value);
         }
         return Status::Ok();
       }},
      {"alerting.alertmanagers",
       [](const Context& ctx, const YAML::Node& n, Config* c) {
         return Receivers(ctx, n, "alerting.alertmanagers", &c->alerting.alertmanagers);
       }},
      {"alerting.webhooks",
       [](const Context& ctx, const YAML::Node& n, Config* c) {
         return Receivers(ctx, n, "alerting.webhooks", &c->alerting.webhooks);
       }},
      {"alerting.resend_delay",
       Duration(
           "alerting.resend_delay", [](Config* c) -> double& { return c->alerting.resend_delay_s; },
           false)},
      {"alerting.queue_dir",
       [](const Context& ctx, const YAML::Node& n, Config* c) {
         return Scalar(ctx, n, "alerting.queue_dir", &c->alerting.queue_dir);
       }},
      {"jobs.scheduler",
       [](const Context& ctx, const YAML::Node& n, Config* c) {
         std::string text;
         if (Status s = Scalar(ctx, n, "jobs.scheduler", &text); !s.ok()) return s;
         if (text != "none" && text != "slurm" && text != "kubernetes")
           return Status(Error{ctx.Where(n) +
                               ": jobs.scheduler: expected none, slurm or kubernetes, got '" +
                               Printable(text) + "'"});
         c->jobs.scheduler = text;
         return Status::Ok();
       }},
      {"jobs.squeue_command",
       [](const Context& ctx, const YAML::Node& n, Config* c) {
         // A list is the argv; one string is split on spaces (no shell, no quoting).
         std::vector<std::string> words;
         if (Status s = StringList(ctx, n, "jobs.squeue_command", &words); !s.ok()) return s;
         if (n.IsScalar()) words = SplitWords(n.Scalar());
         if (words.empty() || words[0].empty())
           return Status(Error{ctx.Where(n) + ": jobs.squeue_command: expected a command"});
         c->jobs.squeue_command = words;
         return Status::Ok();
       }},
      {"jobs.poll_interval",
       Duration(
           "jobs.poll_interval", [](Config* c) -> double& { return c->jobs.poll_interval_s; },
           false)},
      {"jobs.records_dir",
       [](const Context& ctx, const YAML::Node& n, Config* c) {
         return Scalar(ctx, n, "jobs.records_dir", &c->jobs.records_dir);
       }},
      {"jobs.idle_threshold",
       [](const Context& ctx, const YAML::Node& n, Config* c) {
         std::string text;
         if (Status s = Scalar(ctx, n, "jobs.idle_threshold", &text); !s.ok()) return s;
         char* end = nullptr;
         double v = std::strtod(text.c_str(), &end);
         if (end == text.c_str() || *end != '\0' || !(v >= 0 && v <= 1))
           return Status(Error{ctx.Where(n) +
                               ": jobs.idle_threshold: expected a utilization ratio 0-1, got '" +
                               Printable(text) + "'"});
         c->jobs.idle_threshold = v;
         return Status::Ok();
       }},
      {"jobs.idle_window",
       Duration(
           "jobs.idle_window", [](Config* c) -> double& { return c->jobs.idle_window_s; }, false)},
      {"jobs.outcome_window",
       Duration(
           "jobs.outcome_window", [](Config* c) -> double& { return c->jobs.outcome_window_s; },
           false)},
      {"jobs.node_name",
       [](const Context& ctx, const YAML::Node& n, Config* c) {
         return Scalar(ctx, n, "jobs.node_name", &c->jobs.node_name);
       }},
      {"jobs.kubernetes.socket",
       [](const Context& ctx, const YAML::Node& n, Config* c) {
         if (Status s = Scalar(ctx, n, "jobs.kubernetes.socket", &c->jobs.kubernetes.socket);
             !s.ok())
           return s;
         if (c->jobs.kubernetes.socket.empty())
           return Status(Error{ctx.Where(n) + ": jobs.kubernetes.socket: expected a socket path"});
         return Status::Ok();
       }},
      {"jobs.kubernetes.poll_interval",
       Duration(
           "jobs.kubernetes.poll_interval",
           [](Config* c) -> double& { return c->jobs.kubernetes.poll_interval_s; }, false)},
      {"jobs.kubernetes.timeout",
       Duration(
           "jobs.kubernetes.timeout", [](Config* c) -> double& { return c->jobs.kubernetes.timeout_s; },
           false)},
      {"jobs.kubernetes.resources",
       [](const Context& ctx, const YAML::Node& n, Config* c) {
         std::vector<std::string> names;
         if (Status s = StringList(ctx, n, "jobs.kubernetes.resources", &names); !s.ok()) return s;
         for (const std::string& name : names) {
           const auto star = name.find('*');
           if (name.empty() || (star != std::string::npos && star + 1 != name.size()))
             return Status(Error{ctx.Where(n) +
                                 ": jobs.kubernetes.resources: expected resource names (a '*' "
                                 "only at the end), got '" +
                                 Printable(name) + "'"});
         }
         c->jobs.kubernetes.resources = names;
         return Status::Ok();
       }},
      {"jobs.kubernetes.pod_list_command",
       [](const Context& ctx, const YAML::Node& n, Config* c) {
         // A list is the argv; one string is split on spaces (no shell, no quoting); [] = none.
         std::vector<std::string> words;
         if (n.IsNull()) {
           c->jobs.kubernetes.pod_list_command.clear();
           return Status::Ok();
         }
         if (Status s = StringList(ctx, n, "jobs.kubernetes.pod_list_command", &words); !s.ok())
           return s;
         if (n.IsScalar()) words = SplitWords(n.Scalar());
         if (!words.empty() && words[0].empty())
           return Status(Error{ctx.Where(n) + ": jobs.kubernetes.pod_list_command: expected a "
                                              "command, or [] for none"});
         c->jobs.kubernetes.pod_list_command = words;
         return Status::Ok();
       }},
      {"jobs.kubernetes.user_label",
       [](const Context& ctx, const YAML::Node& n, Config* c) {
         return Scalar(ctx, n, "jobs.kubernetes.user_label", &c->jobs.kubernetes.user_label);
       }},
      {"jobs.kubernetes.user_annotation",
       [](const Context& ctx, const YAML::Node& n, Config* c) {
         return Scalar(ctx, n, "jobs.kubernetes.user_annotation",
                       &c->jobs.kubernetes.user_annotation);
       }},
      {"teams.namespaces",
       [](const Context& ctx, const YAML::Node& n, Config* c) {
         c->teams.namespaces.clear();
         if (n.IsNull()) return Status::Ok();
         if (!n.IsMap())
           return Status(Error{ctx.Where(n) +
                               ": teams.namespaces: expected a mapping of namespaces (or "
                               "\"/regex/\") to teams"});
         for (const auto& item : n) {
           std::string name, team;
           if (Status s = Scalar(ctx, item.first, "teams.namespaces", &name); !s.ok()) return s;
           if (Status s = Scalar(ctx, item.second, "teams.namespaces." + name, &team); !s.ok())
             return s;
           if (std::string error = jobs::NamespaceRuleError(name); !error.empty())
             return Status(Error{ctx.Where(item.first) + ": teams.namespaces: " + Printable(error)});
           c->teams.namespaces.emplace_back(name, team);
         }
         return Status::Ok();
       }},
      {"teams.accounts",
       [](const Context& ctx, const YAML::Node& n,
          Config* c) { return StringMap(ctx, n, "teams.accounts", &c->teams.accounts); }},
      {"teams.users", [](const Context& ctx, const YAML::Node& n,
                         Config* c) { return StringMap(ctx, n, "teams.users", &c->teams.users); }},
      {"collect.per_process_metrics",
       Bool("collect.per_process_metrics",
            [](Config* c) -> bool& { return c->collect.per_process_metrics; })},
      {"collect.gpm", Bool("collect.gpm", [](Config* c) -> bool& { return c->collect.gpm; })},
      {"collect.nvlink_link_metrics",
       Bool("collect.nvlink_link_metrics",
            [](Config* c) -> bool& { return c->collect.nvlink_link_metrics; })},
      {"exposition.names",
       [](const Context& ctx, const YAML::Node& n, Config* c) {
         std::string text;
         if (Status s = Scalar(ctx, n, "exposition.names", &text); !s.ok()) return s;
         if (!collect::ParseExpositionNames(text, &c->exposition.names))
           return Status(Error{ctx.Where(n) +
                               ": exposition.names: expected gpuwarden, dcgm-exporter or both, "
                               "got '" +
                               Printable(text) + "'"});
         return Status::Ok();
       }},
      {"scrape.targets",
       [](const Context& ctx, const YAML::Node& n,
          Config* c) { return ParseScrapeTargets(ctx.file, n, &c->scrape.targets); }},
      {"remote_write",
       [](const Context& ctx, const YAML::Node& n,
          Config* c) { return ParseRemoteWrite(ctx.file, n, &c->remote_write); }},
      {"governance.reclaim", Governance("governance.reclaim")},
      {"governance.decisions_log", Governance("governance.decisions_log")},
      {"governance.requeue_command", Governance("governance.requeue_command")},
      {"governance.cancel_command", Governance("governance.cancel_command")},
      {"governance.command_timeout", Governance("governance.command_timeout")},
      {"governance.capacity_command", Governance("governance.capacity_command")},
      {"governance.pools.capacity", Governance("governance.pools.capacity")},
      {"governance.pools.windows", Governance("governance.pools.windows")},
      {"governance.pools.scale_out_ratio", Governance("governance.pools.scale_out_ratio")},
      {"governance.pools.scale_out_for", Governance("governance.pools.scale_out_for")},
      {"governance.pools.shrink_free_ratio", Governance("governance.pools.shrink_free_ratio")},
      {"governance.pools.shrink_for", Governance("governance.pools.shrink_for")},
      {"governance.quotas", Governance("governance.quotas")},
      {"governance.under_use_ratio", Governance("governance.under_use_ratio")},
      {"governance.under_use_for", Governance("governance.under_use_for")},
      {"governance.memory_held_ratio", Governance("governance.memory_held_ratio")},
      {"governance.prices.gpu_hour", Governance("governance.prices.gpu_hour")},
      {"governance.prices.energy_kwh", Governance("governance.prices.energy_kwh")},
      {"governance.prices.currency", Governance("governance.prices.currency")},
      {"diagnose.window", Diagnose("diagnose.window")},
      {"diagnose.interval", Diagnose("diagnose.interval")},
      {"diagnose.thresholds.busy_utilization", Diagnose("diagnose.thresholds.busy_utilization")},
      {"diagnose.thresholds.throttled_share", Diagnose("diagnose.thresholds.throttled_share")},
      {"diagnose.thresholds.power_cap_lowered", Diagnose("diagnose.thresholds.power_cap_lowered")},
      {"diagnose.thresholds.memory_bound_mem_util",
       Diagnose("diagnose.thresholds.memory_bound_mem_util")},
      {"diagnose.thresholds.memory_bound_factor",
       Diagnose("diagnose.thresholds.memory_bound_factor")},
      {"diagnose.thresholds.memory_pressure", Diagnose("diagnose.thresholds.memory_pressure")},
      {"diagnose.thresholds.memory_spike", Diagnose("diagnose.thresholds.memory_spike")},
      {"diagnose.thresholds.idle_utilization", Diagnose("diagnose.thresholds.idle_utilization")},
      {"diagnose.thresholds.starved_utilization",
       Diagnose("diagnose.thresholds.starved_utilization")},
      {"diagnose.thresholds.thermal_margin_c", Diagnose("diagnose.thresholds.thermal_margin_c")},
      {"diagnose.thresholds.ecc_review_count", Diagnose("diagnose.thresholds.ecc_review_count")},
      {"diagnose.thresholds.ecc_horizon", Diagnose("diagnose.thresholds.ecc_horizon")},
      {"diagnose.thresholds.queue_wait_p90", Diagnose("diagnose.thresholds.queue_wait_p90")},
      {"diagnose.thresholds.congestion_ratio", Diagnose("diagnose.thresholds.congestion_ratio")},
      {"diagnose.thresholds.quota_over", Diagnose("diagnose.thresholds.quota_over")},
      {"diagnose.thresholds.quota_under", Diagnose("diagnose.thresholds.quota_under")},
      {"diagnose.thresholds.latency_factor", Diagnose("diagnose.thresholds.latency_factor")},
      {"diagnose.thresholds.hollow_utilization", Diagnose("diagnose.thresholds.hollow_utilization")},
      {"diagnose.thresholds.hollow_sm_active", Diagnose("diagnose.thresholds.hollow_sm_active")},
      {"diagnose.thresholds.hollow_occupancy", Diagnose("diagnose.thresholds.hollow_occupancy")},
      {"diagnose.thresholds.tensor_idle_sm_active", Diagnose("diagnose.thresholds.tensor_idle_sm_active")},
      {"diagnose.thresholds.tensor_idle_ratio", Diagnose("diagnose.thresholds.tensor_idle_ratio")},
      {"diagnose.thresholds.nvlink_error_rate", Diagnose("diagnose.thresholds.nvlink_error_rate")},
  };
  return setters;
}

Status Walk(const Context& ctx, const YAML::Node& node, const std::string& prefix, Config* c) {
  if (!node.IsMap())
    return Error{ctx.Where(node) + ": " +
                 (prefix.empty() ? "the file" : prefix.substr(0, prefix.size() - 1)) +
                 ": expected a mapping of keys to values"};
  const auto& setters = Setters();
  for (const auto& item : node) {
    std::string key = prefix + item.first.as<std::string>();
    auto it = setters.find(key);
    if (it != setters.end()) {
      if (Status s = it->second(ctx, item.second, c); !s.ok()) return s;
      continue;
    }
    bool is_section = false;
    for (const auto& [name, setter] : setters)
      if (name.rfind(key + ".", 0) == 0) is_section = true;
    if (!is_section)
      return Error{ctx.Where(item.first) + ": unknown key '" + Printable(key) +
                   "' (see docs/configuration.md)"};
    if (Status s = Walk(ctx, item.second, key + ".", c); !s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace

const std::vector<std::string>& ConfigKeys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (const auto& [name, setter] : Setters()) k.push_back(name);
    return k;
  }();
  return keys;
}

Status LoadConfigFile(const std::string& path, Config* config) {
  std::ifstream in(path);
  if (!in) return Error{path + ": cannot read the configuration file"};
  std::stringstream text;
  text << in.rdbuf();
  auto loaded = LoadYamlStrict(text.str(), path);
  if (!loaded.ok()) return Error{Printable(loaded.error().message)};
  const YAML::Node& root = *loaded;
  if (root.IsNull()) return Status::Ok();  // an empty file keeps the defaults
  Context ctx{path};
  try {
    return Walk(ctx, root, "", config);
  } catch (const YAML::Exception& e) {
    return Error{path + ":" + std::to_string(e.mark.line + 1) + ": " +
                 Printable(YamlErrorMessage(e))};
  }
}

Status Validate(const Config& c) {
  const auto& o = c.collect;
  if (!(o.fast_interval_s > 0)) return Error{"collect.interval must be positive"};
  if (o.slow_interval_s < o.fast_interval_s)
    return Error{"collect.slow_interval (" + FormatDuration(o.slow_interval_s) +
                 ") must not be shorter than collect.interval (" +
                 FormatDuration(o.fast_interval_s) + ")"};
  if (o.memory_peak_interval_s < 0) return Error{"collect.memory_peak_interval must be >= 0"};
  if (o.peak_window_s < 0) return Error{"collect.peak_window must be >= 0"};
  if (o.peak_window_s > 3600)
    return Error{"collect.peak_window (" + FormatDuration(o.peak_window_s) +
                 ") must be at most 1h: longer than any scrape interval"};
  if (!(o.call_timeout_s > 0)) return Error{"nvml.call_timeout must be positive"};
  if (c.storage.path.empty()) return Error{"storage.path must not be empty"};
  if (Status s = ValidateBlockRange(c.storage.block_range_s); !s.ok()) return s;
  if (c.storage.rollup_retention_s < c.storage.retention_s)
    return Error{"storage.rollup_retention must not be shorter than storage.retention"};
  if (c.simulate.clock != "realtime" && c.simulate.clock != "stepped")
    return Error{"simulate.clock must be realtime or stepped, not '" + c.simulate.clock + "'"};
  if (c.jobs.scheduler != "none" && c.jobs.scheduler != "slurm" && c.jobs.scheduler != "kubernetes")
    return Error{"jobs.scheduler must be none, slurm or kubernetes, not '" + c.jobs.scheduler +
                 "'"};
  if (c.jobs.kubernetes.poll_interval_s < 0)
    return Error{"jobs.kubernetes.poll_interval must be positive"};
  if (!(c.jobs.kubernetes.timeout_s > 0)) return Error{"jobs.kubernetes.timeout must be positive"};
  if (!(c.jobs.poll_interval_s > 0)) return Error{"jobs.poll_interval must be positive"};
  if (!(c.jobs.idle_window_s > 0)) return Error{"jobs.idle_window must be positive"};
  if (!(c.jobs.outcome_window_s > 0)) return Error{"jobs.outcome_window must be positive"};
  if (c.log_level != "debug" && c.log_level != "info" && c.log_level != "warn" &&
      c.log_level != "error")
    return Error{"log_level must be debug, info, warn or error, not '" + c.log_level + "'"};
  if (Status s = ValidateDiagnose(c.diagnose); !s.ok()) return s;
  if (!(c.query.timeout_s > 0)) return Error{"query.timeout must be positive"};
  if (c.query.max_samples < 1 || c.query.max_samples > kMaxQuerySamples)
    return Error{"query.max_samples must be from 1 to " + std::to_string(kMaxQuerySamples)};
  if (c.query.max_concurrency < 1 || c.query.max_concurrency > kMaxQueryConcurrency)
    return Error{"query.max_concurrency must be from 1 to " + std::to_string(kMaxQueryConcurrency)};
  if (c.query.max_queued < 0 || c.query.max_queued > kMaxQueryQueued)
    return Error{"query.max_queued must be from 0 to " + std::to_string(kMaxQueryQueued)};
  return Status::Ok();
}

}  // namespace gw::config
