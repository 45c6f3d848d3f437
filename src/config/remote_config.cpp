#include "config/remote_config.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <set>

#include "config/config.h"
#include "config/messages.h"
#include "tsdb/storage.h"

namespace gw::config {

namespace {

Status Count(const std::string& file, const YAML::Node& node, const std::string& key, long long max,
             long long* out) {
  std::string text;
  if (Status s = ScalarText(file, node, key, &text); !s.ok()) return s;
  if (!ParseInteger(text, 1, max, out))
    return Error{At(file, node) + key + ": expected a whole number from 1 to " +
                 std::to_string(max) + ", got '" + Printable(text) + "'"};
  return Status::Ok();
}

Status Flag(const std::string& file, const YAML::Node& node, const std::string& key, bool* out) {
  std::string text;
  if (Status s = ScalarText(file, node, key, &text); !s.ok()) return s;
  if (text != "true" && text != "false")
    return Error{At(file, node) + key + ": expected true or false, got '" + Printable(text) + "'"};
  *out = text == "true";
  return Status::Ok();
}

Status Unknown(const std::string& file, const YAML::Node& key_node, const std::string& key,
               const std::string& name, const char* known) {
  return Error{At(file, key_node) + key + ": unknown key '" + Printable(name) + "' (" + known +
               ")"};
}

Status Mapping(const std::string& file, const YAML::Node& node, const std::string& key,
               const char* what) {
  if (!node.IsMap()) return Error{At(file, node) + key + ": expected a mapping with " + what};
  return Status::Ok();
}

Status BasicAuth(const std::string& file, const YAML::Node& node, const std::string& key,
                 RemoteWriteConfig* e) {
  if (Status s = Mapping(file, node, key, "username and password or password_file"); !s.ok())
    return s;
  for (const auto& a : node) {
    const std::string n = a.first.as<std::string>();
    Status s;
    if (n == "username") {
      s = ScalarText(file, a.second, key + ".username", &e->basic_auth_username);
    } else if (n == "password") {
      s = ScalarText(file, a.second, key + ".password", &e->basic_auth_password);
    } else if (n == "password_file") {
      s = ScalarText(file, a.second, key + ".password_file", &e->basic_auth_password_file);
    } else {
      return Unknown(file, a.first, key, n, "username, password, password_file");
    }
    if (!s.ok()) return s;
  }
  if (e->basic_auth_username.empty()) return Error{At(file, node) + key + ": username is required"};
  if (!e->basic_auth_password.empty() && !e->basic_auth_password_file.empty())
    return Error{At(file, node) + key + ": use password or password_file, not both"};
  return Status::Ok();
}

Status Authorization(const std::string& file, const YAML::Node& node, const std::string& key,
                     RemoteWriteConfig* e) {
  if (Status s = Mapping(file, node, key, "type and credentials or credentials_file"); !s.ok())
    return s;
  for (const auto& a : node) {
    const std::string n = a.first.as<std::string>();
    Status s;
    if (n == "type") {
      s = ScalarText(file, a.second, key + ".type", &e->authorization_type);
      if (s.ok() && (e->authorization_type.empty() ||
                     e->authorization_type.find_first_of(" \t\r\n") != std::string::npos))
        s = Error{At(file, a.second) + key + ".type: expected one word such as Bearer, got '" +
                  Printable(e->authorization_type) + "'"};
      // Prometheus refuses Basic here: basic_auth says it.
      if (s.ok() && (e->authorization_type == "Basic" || e->authorization_type == "basic"))
        s = Error{At(file, a.second) + key + ".type: use basic_auth for Basic, got '" +
                  Printable(e->authorization_type) + "'"};
    } else if (n == "credentials") {
      s = ScalarText(file, a.second, key + ".credentials", &e->authorization_credentials);
    } else if (n == "credentials_file") {
      s = ScalarText(file, a.second, key + ".credentials_file", &e->authorization_credentials_file);
    } else {
      return Unknown(file, a.first, key, n, "type, credentials, credentials_file");
    }
    if (!s.ok()) return s;
  }
  if (!e->authorization_credentials.empty() && !e->authorization_credentials_file.empty())
    return Error{At(file, node) + key + ": use credentials or credentials_file, not both"};
  return Status::Ok();
}

Status Tls(const std::string& file, const YAML::Node& node, const std::string& key,
           RemoteWriteConfig* e) {
  if (Status s = Mapping(file, node, key, "ca_file or insecure_skip_verify"); !s.ok()) return s;
  for (const auto& a : node) {
    const std::string n = a.first.as<std::string>();
    Status s;
    if (n == "ca_file") {
      s = ScalarText(file, a.second, key + ".ca_file", &e->tls_ca_file);
    } else if (n == "insecure_skip_verify") {
      s = Flag(file, a.second, key + ".insecure_skip_verify", &e->tls_insecure_skip_verify);
    } else {
      return Unknown(file, a.first, key, n, "ca_file, insecure_skip_verify");
    }
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Status Queue(const std::string& file, const YAML::Node& node, const std::string& key,
             RemoteWriteConfig* e) {
  if (Status s = Mapping(file, node, key, "capacity, max_samples_per_send, ..."); !s.ok()) return s;
  for (const auto& a : node) {
    const std::string n = a.first.as<std::string>();
    const std::string sub = key + "." + n;
    Status s;
    if (n == "capacity") {
      s = Count(file, a.second, sub, 10'000'000, &e->capacity);
    } else if (n == "max_samples_per_send") {
      s = Count(file, a.second, sub, 1'000'000, &e->max_samples_per_send);
    } else if (n == "batch_send_deadline") {
      s = PositiveSeconds(file, a.second, sub, &e->batch_send_deadline_s);
    } else if (n == "min_backoff") {
      s = PositiveSeconds(file, a.second, sub, &e->min_backoff_s);
    } else if (n == "max_backoff") {
      s = PositiveSeconds(file, a.second, sub, &e->max_backoff_s);
    } else if (n == "min_shards" || n == "max_shards") {
      // Prometheus' resharding: one sender per endpoint here keeps the order; accepted when 1.
      long long shards = 0;
      s = Count(file, a.second, sub, 1, &shards);
    } else {
      return Unknown(file, a.first, key, n,
                     "capacity, max_samples_per_send, batch_send_deadline, min_backoff, "
                     "max_backoff, min_shards, max_shards");
    }
    if (!s.ok()) return s;
  }
  if (e->min_backoff_s > e->max_backoff_s)
    return Error{At(file, node) + key + ": min_backoff (" + FormatDuration(e->min_backoff_s) +
                 ") must not be longer than max_backoff (" + FormatDuration(e->max_backoff_s) +
                 ")"};
  if (e->capacity < e->max_samples_per_send)
    return Error{At(file, node) + key + ": capacity (" + std::to_string(e->capacity) +
                 ") must be at least max_samples_per_send (" +
                 std::to_string(e->max_samples_per_send) + ")"};
  return Status::Ok();
}

Status Relabel(const std::string& file, const YAML::Node& node, const std::string& key,
               WriteRelabelRule* r) {
  if (Status s = Mapping(file, node, key, "source_labels, regex and action"); !s.ok()) return s;
  bool has_action = false;
  for (const auto& a : node) {
    const std::string n = a.first.as<std::string>();
    const std::string sub = key + "." + n;
    Status s;
    if (n == "action") {
      std::string action;
      s = ScalarText(file, a.second, sub, &action);
      if (s.ok() && action != "keep" && action != "drop")
        s = Error{At(file, a.second) + sub +
                  ": only keep and drop are supported in write_relabel_configs (docs/"
                  "remote-write.md), got '" +
                  Printable(action) + "'"};
      r->keep = action == "keep";
      has_action = true;
    } else if (n == "source_labels") {
      r->source_labels.clear();
      if (!a.second.IsSequence())
        return Error{At(file, a.second) + sub +
                     ": expected a list of label names such as "
                     "[__name__]"};
      for (const auto& item : a.second) {
        std::string label;
        if (Status t = ScalarText(file, item, sub, &label); !t.ok()) return t;
        if (!tsdb::IsValidLabelName(label))
          return Error{At(file, item) + sub + ": expected a label name, got '" + Printable(label) +
                       "'"};
        r->source_labels.push_back(label);
      }
    } else if (n == "separator") {
      s = ScalarText(file, a.second, sub, &r->separator);
    } else if (n == "regex") {
      s = ScalarText(file, a.second, sub, &r->regex);
      if (s.ok()) {
        auto m = tsdb::Matcher::Make(tsdb::MatchType::kRegexMatch, "x", r->regex);
        if (!m.ok())
          s = Error{At(file, a.second) + sub + ": " + Printable(m.error().message) + ", got '" +
                    Printable(r->regex) + "'"};
      }
    } else {
      return Unknown(file, a.first, key, n, "source_labels, separator, regex, action");
    }
    if (!s.ok()) return s;
  }
  if (!has_action) return Error{At(file, node) + key + ": action is required (keep or drop)"};
  if (r->source_labels.empty())
    return Error{At(file, node) + key + ": source_labels is required (e.g. [__name__])"};
  return Status::Ok();
}

Status Downsample(const std::string& file, const YAML::Node& node, const std::string& key,
                  RemoteWriteConfig* e) {
  if (Status s = Mapping(file, node, key, "interval and aggregate"); !s.ok()) return s;
  for (const auto& a : node) {
    const std::string n = a.first.as<std::string>();
    const std::string sub = key + "." + n;
    Status s;
    if (n == "interval") {
      s = PositiveSeconds(file, a.second, sub, &e->downsample_interval_s);
      const double ms = e->downsample_interval_s * 1000;
      if (s.ok() && (ms < 1000 || ms != static_cast<double>(static_cast<long long>(ms))))
        s = Error{At(file, a.second) + sub +
                  ": expected a whole number of milliseconds, at least 1s, got '" +
                  Printable(a.second.Scalar()) + "'"};
    } else if (n == "aggregate") {
      e->downsample_aggregate.clear();
      std::vector<YAML::Node> items;
      if (a.second.IsScalar()) {
        items.push_back(a.second);
      } else if (a.second.IsSequence()) {
        for (const auto& item : a.second) items.push_back(item);
      } else {
        return Error{At(file, a.second) + sub + ": expected a list such as [max, avg]"};
      }
      for (const auto& item : items) {
        std::string agg;
        if (Status t = ScalarText(file, item, sub, &agg); !t.ok()) return t;
        bool known = false;
        for (const std::string& k : DownsampleAggregates()) known = known || k == agg;
        if (!known)
          return Error{At(file, item) + sub +
                       ": expected min, max, avg, sum, count or last, got '" + Printable(agg) +
                       "'"};
        for (const std::string& seen : e->downsample_aggregate)
          if (seen == agg)
            return Error{At(file, item) + sub + ": '" + Printable(agg) + "' is listed twice"};
        e->downsample_aggregate.push_back(agg);
      }
    } else {
      return Unknown(file, a.first, key, n, "interval, aggregate");
    }
    if (!s.ok()) return s;
  }
  if (e->downsample_interval_s <= 0)
    return Error{At(file, node) + key + ": interval is required (e.g. 15s)"};
  if (e->downsample_aggregate.empty())
    return Error{At(file, node) + key + ": aggregate is required (e.g. [max, avg])"};
  return Status::Ok();
}

bool IsSafeName(const std::string& name) {
  if (name.empty() || name.size() > 64 || name == "." || name == "..") return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '-' || c == '.'))
      return false;
  return true;
}

Status Endpoint(const std::string& file, const YAML::Node& node, const std::string& key,
                RemoteWriteConfig* e) {
  if (!node.IsMap()) return Error{At(file, node) + key + ": expected a mapping with a url"};
  std::string bearer_token, bearer_token_file;
  bool has_authorization = false;
  for (const auto& field : node) {
    const std::string name = field.first.as<std::string>();
    const YAML::Node& v = field.second;
    const std::string sub = key + "." + name;
    Status s;
    if (name == "url") {
      s = ScalarText(file, v, sub, &e->url);
    } else if (name == "name") {
      s = ScalarText(file, v, sub, &e->name);
      if (s.ok() && !IsSafeName(e->name))
        s = Error{At(file, v) + sub +
                  ": expected up to 64 letters, digits, '_', '-' or '.', got '" +
                  Printable(e->name) + "'"};
    } else if (name == "headers") {
      if (!v.IsMap())
        return Error{At(file, v) + sub + ": expected a mapping of header names to values"};
      for (const auto& h : v) {
        const std::string header = h.first.as<std::string>();
        std::string value;
        if (Status t = ScalarText(file, h.second, sub + "." + header, &value); !t.ok()) return t;
        if (header.empty() || header.find_first_of(" :\t\r\n") != std::string::npos ||
            value.find_first_of("\r\n") != std::string::npos)
          return Error{At(file, h.first) + sub + ": not a valid header: '" + Printable(header) +
                       "'"};
        e->headers[header] = value;
      }
    } else if (name == "basic_auth") {
      s = BasicAuth(file, v, sub, e);
    } else if (name == "authorization") {
      s = Authorization(file, v, sub, e);
      has_authorization = true;
    } else if (name == "bearer_token") {
      s = ScalarText(file, v, sub, &bearer_token);
    } else if (name == "bearer_token_file") {
      s = ScalarText(file, v, sub, &bearer_token_file);
    } else if (name == "tls_config") {
      s = Tls(file, v, sub, e);
    } else if (name == "remote_timeout") {
      s = PositiveSeconds(file, v, sub, &e->remote_timeout_s);
    } else if (name == "queue_config") {
      s = Queue(file, v, sub, e);
    } else if (name == "write_relabel_configs") {
      if (!v.IsSequence()) return Error{At(file, v) + sub + ": expected a list of keep/drop rules"};
      size_t i = 0;
      for (const auto& item : v) {
        WriteRelabelRule r;
        if (Status t = Relabel(file, item, sub + "[" + std::to_string(i++) + "]", &r); !t.ok())
          return t;
        e->write_relabel_configs.push_back(std::move(r));
      }
    } else if (name == "downsample") {
      s = Downsample(file, v, sub, e);
    } else {
      return Unknown(file, field.first, key, name,
                     "url, name, headers, basic_auth, authorization, bearer_token, "
                     "bearer_token_file, tls_config, remote_timeout, queue_config, "
                     "write_relabel_configs, downsample");
    }
    if (!s.ok()) return s;
  }
  if (e->url.rfind("http://", 0) != 0 && e->url.rfind("https://", 0) != 0)
    return Error{At(file, node) + key + ": url must start with http:// or https://, got '" +
                 Printable(e->url) + "'"};
  if (!bearer_token.empty() && !bearer_token_file.empty())
    return Error{At(file, node) + key + ": use bearer_token or bearer_token_file, not both"};
  const bool bearer = !bearer_token.empty() || !bearer_token_file.empty();
  if (bearer && has_authorization)
    return Error{At(file, node) + key + ": use authorization or bearer_token(_file), not both"};
  if (bearer) {
    e->authorization_credentials = bearer_token;
    e->authorization_credentials_file = bearer_token_file;
  }
  const bool authz =
      bearer || !e->authorization_credentials.empty() || !e->authorization_credentials_file.empty();
  if (authz && !e->basic_auth_username.empty())
    return Error{At(file, node) + key + ": use basic_auth or authorization, not both"};
  return Status::Ok();
}

}  // namespace

const std::vector<std::string>& DownsampleAggregates() {
  static const std::vector<std::string> names = {"min", "max", "avg", "sum", "count", "last"};
  return names;
}

std::string RemoteWriteName(const RemoteWriteConfig& endpoint) {
  if (!endpoint.name.empty()) return endpoint.name;
  // FNV-1a of the url, 6 hex digits: stable across restarts, so the progress file is found.
  uint32_t h = 2166136261u;
  for (unsigned char c : endpoint.url) h = (h ^ c) * 16777619u;
  char out[8];
  std::snprintf(out, sizeof out, "%06x", h & 0xffffffu);
  return out;
}

Status ParseRemoteWrite(const std::string& file, const YAML::Node& node,
                        std::vector<RemoteWriteConfig>* out) {
  out->clear();
  if (node.IsNull()) return Status::Ok();
  if (!node.IsSequence())
    return Error{At(file, node) + "remote_write: expected a list of endpoints"};
  std::set<std::string> names;
  size_t i = 0;
  for (const auto& item : node) {
    const std::string key = "remote_write[" + std::to_string(i++) + "]";
    RemoteWriteConfig e;
    if (Status s = Endpoint(file, item, key, &e); !s.ok()) return s;
    if (!names.insert(RemoteWriteName(e)).second)
      return Error{At(file, item) + key + ": another endpoint is already named '" +
                   Printable(RemoteWriteName(e)) + "'" +
                   (e.name.empty() ? " (the same url: give each a name)" : "")};
    out->push_back(std::move(e));
  }
  return Status::Ok();
}

}  // namespace gw::config
