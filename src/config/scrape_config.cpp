#include "config/scrape_config.h"
#include "config/messages.h"

#include <charconv>
#include <cstdio>
#include <set>

#include "promql/parser.h"

namespace gw::config {

namespace {

Status Gpus(const std::string& file, const YAML::Node& node, const std::string& key,
            std::vector<unsigned>* out) {
  out->clear();
  if (!node.IsSequence())
    return Error{At(file, node) + key + ": expected a list of GPU indices such as [0, 1]"};
  for (const auto& item : node) {
    unsigned index = 0;
    const std::string text = item.IsScalar() ? item.Scalar() : "";
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), index);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size())
      return Error{At(file, item) + key + ": expected a GPU index (0, 1, ...), got '" +
                   Printable(text) + "'"};
    out->push_back(index);
  }
  return Status::Ok();
}

Status Outputs(const std::string& file, const YAML::Node& node, const std::string& key,
               scrape::TargetConfig* t);  // below

Status Target(const std::string& file, const YAML::Node& node, const std::string& key,
              scrape::TargetConfig* t) {
  if (!node.IsMap()) return Error{At(file, node) + key + ": expected a mapping with name and url"};
  bool has_timeout = false;
  for (const auto& field : node) {
    const std::string name = field.first.as<std::string>();
    const YAML::Node& v = field.second;
    const std::string sub = key + "." + name;
    Status s;
    if (name == "name") {
      s = ScalarText(file, v, sub, &t->name);
    } else if (name == "url") {
      s = ScalarText(file, v, sub, &t->url);
    } else if (name == "interval") {
      s = PositiveSeconds(file, v, sub, &t->interval_s);
    } else if (name == "timeout") {
      s = PositiveSeconds(file, v, sub, &t->timeout_s);
      has_timeout = true;
    } else if (name == "gpus") {
      s = Gpus(file, v, sub, &t->gpus);
    } else if (name == "outputs") {
      s = Outputs(file, v, sub, t);
    } else if (name == "output_unit") {
      s = ScalarText(file, v, sub, &t->output_unit);
      if (s.ok() && t->output_unit.empty())
        s = Error{At(file, v) + sub + ": expected a unit such as request or token"};
    } else if (name == "job_id") {
      s = ScalarText(file, v, sub, &t->job_id);
      if (s.ok() && t->job_id.empty())
        s = Error{At(file, v) + sub + ": expected the job's id as `gpuwarden jobs` lists it"};
    } else if (name == "bearer_token_file") {
      s = ScalarText(file, v, sub, &t->bearer_token_file);
    } else if (name == "basic_auth") {
      if (!v.IsMap()) return Error{At(file, v) + sub + ": expected username and password_file"};
      for (const auto& a : v) {
        const std::string an = a.first.as<std::string>();
        if (an == "username") {
          s = ScalarText(file, a.second, sub + ".username", &t->basic_auth_username);
        } else if (an == "password_file") {
          s = ScalarText(file, a.second, sub + ".password_file", &t->basic_auth_password_file);
        } else {
          return Error{At(file, a.first) + sub + ": unknown key '" + Printable(an) +
                       "' (username, password_file)"};
        }
        if (!s.ok()) return s;
      }
    } else {
      return Error{At(file, field.first) + key + ": unknown key '" + Printable(name) +
                   "' (name, url, interval, timeout, gpus, basic_auth, bearer_token_file, outputs, "
                   "output_unit, job_id)"};
    }
    if (!s.ok()) return s;
  }
  if (t->name.empty()) return Error{At(file, node) + key + ": name is required"};
  if (t->url.rfind("http://", 0) != 0 && t->url.rfind("https://", 0) != 0)
    return Error{At(file, node) + key + ": url must start with http:// or https://, got '" +
                 Printable(t->url) + "'"};
  if (has_timeout && t->timeout_s > t->interval_s)
    return Error{At(file, node) + key + ": timeout (" + FormatDuration(t->timeout_s) +
                 ") must not be longer than interval (" + FormatDuration(t->interval_s) + ")"};
  if (!t->job_id.empty() && t->outputs.empty())
    return Error{At(file, node) + key +
                 ": job_id needs outputs, the job's progress counter (e.g. "
                 "outputs: training_samples_total)"};
  if (!t->bearer_token_file.empty() && !t->basic_auth_username.empty())
    return Error{At(file, node) + key + ": use basic_auth or bearer_token_file, not both"};
  return Status::Ok();
}

// `outputs`: one vector selector (no offset, no @), which must name the series it sums: a
// selector every series would match is refused as Prometheus refuses it.
Status Outputs(const std::string& file, const YAML::Node& node, const std::string& key,
               scrape::TargetConfig* t) {
  if (Status s = ScalarText(file, node, key, &t->outputs); !s.ok()) return s;
  auto parsed = promql::Parse(t->outputs);
  const std::string example =
      " (a counter selector such as 'inference_requests_total{code=~\"2..\"}')";
  if (!parsed.ok())
    return Error{At(file, node) + key + ": " + Printable(parsed.error().message) + example};
  if ((*parsed)->kind != promql::ExprKind::kVectorSelector)
    return Error{At(file, node) + key + ": expected a vector selector, got '" +
                 Printable(t->outputs) + "'" + example};
  const auto& selector = static_cast<const promql::VectorSelector&>(**parsed);
  if (selector.mods.offset_ms != 0 || selector.mods.at != promql::AtKind::kNone)
    return Error{At(file, node) + key + ": offset and @ are not allowed here, got '" +
                 Printable(t->outputs) + "'"};
  t->output_matchers = selector.matchers;
  return Status::Ok();
}

}  // namespace

Status ParseScrapeTargets(const std::string& file, const YAML::Node& node,
                          std::vector<scrape::TargetConfig>* out) {
  out->clear();
  if (node.IsNull()) return Status::Ok();
  if (!node.IsSequence())
    return Error{At(file, node) + "scrape.targets: expected a list of targets"};
  std::set<std::string> names;
  size_t i = 0;
  for (const auto& item : node) {
    const std::string key = "scrape.targets[" + std::to_string(i++) + "]";
    scrape::TargetConfig t;
    if (Status s = Target(file, item, key, &t); !s.ok()) return s;
    if (!names.insert(t.name).second)
      return Error{At(file, item) + key + ": another target is already named '" +
                   Printable(t.name) + "'"};
    out->push_back(std::move(t));
  }
  return Status::Ok();
}

}  // namespace gw::config
