// Findings as JSON (the API) and as text (the terminal).
#include <cctype>
#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>

#include "diagnose/checks.h"
#include "diagnose/diagnose.h"

namespace gw::diagnose {

namespace {

using nlohmann::json;

double Seconds(int64_t ms) {
  return double(ms) / 1000;
}

json Number(double v) {
  return std::isfinite(v) ? json(v) : json(nullptr);
}

json SubjectJson(const Subject& s) {
  json j = json::object();
  auto add = [&j](const char* name, const std::string& v) {
    if (!v.empty()) j[name] = v;
  };
  add("gpu", s.gpu);
  add("uuid", s.uuid);
  add("job", s.job);
  add("team", s.team);
  add("partition", s.partition);
  add("target", s.target);
  return j;
}

json FindingJson(const Finding& f) {
  json evidence = json::array();
  for (const Evidence& e : f.evidence)
    evidence.push_back({{"what", e.what},
                        {"value", Number(e.value)},
                        {"unit", e.unit},
                        {"start", Seconds(e.start_ms)},
                        {"end", Seconds(e.end_ms)},
                        {"query", e.query}});
  return {{"id", f.id},
          {"kind", f.kind},
          {"cause", f.cause},
          {"layer", LayerName(f.layer)},
          {"severity", SeverityName(f.severity)},
          {"subject", SubjectJson(f.subject)},
          {"related_gpus", f.related_gpus},
          {"title", f.title},
          {"evidence", evidence},
          {"action", f.action},
          {"since", Seconds(f.since_ms)},
          {"last", Seconds(f.last_ms)},
          {"held_seconds", f.held_s},
          {"active", f.active}};
}

int64_t Ms(const json& j, const char* key) {
  const json& v = j.value(key, json(nullptr));
  return v.is_number() ? static_cast<int64_t>(std::llround(v.get<double>() * 1000)) : 0;
}

template <class E>
bool ParseEnum(const std::string& name, E last, std::string_view (*to_name)(E), E* out) {
  for (int i = 0; i <= static_cast<int>(last); ++i) {
    if (to_name(static_cast<E>(i)) == name) {
      *out = static_cast<E>(i);
      return true;
    }
  }
  return false;
}

std::string Clock(int64_t ms) {
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char b[40];
  std::strftime(b, sizeof b, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return b;
}

// Appends `text` wrapped at `width` columns, every line after the first indented by `indent`.
void Wrap(std::string* out, const std::string& text, size_t indent, size_t width) {
  size_t col = indent;
  size_t i = 0;
  bool first = true;
  while (i < text.size()) {
    size_t end = text.find(' ', i);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(i, end - i);
    if (!first && col + 1 + word.size() > width) {
      *out += "\n" + std::string(indent, ' ');
      col = indent;
    } else if (!first) {
      *out += ' ';
      ++col;
    }
    *out += word;
    col += word.size();
    first = false;
    i = end + 1;
  }
  *out += "\n";
}

std::string SubjectText(const Finding& f) {
  std::string s;
  if (!f.subject.gpu.empty()) s += "GPU " + f.subject.gpu;
  if (!f.subject.uuid.empty()) s += " (" + f.subject.uuid + ")";
  if (!f.subject.partition.empty()) s += "partition " + f.subject.partition;
  if (!f.subject.target.empty()) s += "target " + f.subject.target;
  if (!f.subject.job.empty()) s += (s.empty() ? "" : ", ") + std::string("job ") + f.subject.job;
  if (!f.subject.team.empty()) s += (s.empty() ? "" : ", ") + std::string("team ") + f.subject.team;
  if (!f.related_gpus.empty()) {
    s += ", served by GPU ";
    for (size_t i = 0; i < f.related_gpus.size(); ++i) s += (i ? "," : "") + f.related_gpus[i];
  }
  return s;
}

}  // namespace

std::string ToJson(const Diagnosis& d) {
  json findings = json::array();
  for (const Finding& f : d.findings) findings.push_back(FindingJson(f));
  json data = {{"time", Seconds(d.time_ms)},
               {"window_seconds", d.window_s},
               {"data_start", d.data_end_ms > 0 ? json(Seconds(d.data_start_ms)) : json(nullptr)},
               {"data_end", d.data_end_ms > 0 ? json(Seconds(d.data_end_ms)) : json(nullptr)},
               {"step_seconds", d.step_s},
               {"gpus", d.gpus},
               {"findings", findings},
               {"errors", d.errors}};
  json allocations = json::array();
  for (const Allocation& a : d.allocations)
    allocations.push_back({{"gpu", a.gpu}, {"uuid", a.uuid}, {"job", a.job}, {"team", a.team}});
  data["allocations"] = allocations;
  return json{{"status", "success"}, {"data", data}}.dump();
}

Expected<Diagnosis> FromJson(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error{"findings: not a JSON object"};
  if (j.value("status", "") != "success")
    return Error{"findings: " + j.value("error", std::string("the agent answered with an error"))};
  const json& data = j["data"];
  if (!data.is_object() || !data.contains("findings") || !data["findings"].is_array())
    return Error{"findings: the reply has no data.findings list"};
  Diagnosis d;
  try {
    d.time_ms = Ms(data, "time");
    d.window_s = data.value("window_seconds", 0.0);
    d.step_s = data.value("step_seconds", 0.0);
    d.data_start_ms = Ms(data, "data_start");
    d.data_end_ms = Ms(data, "data_end");
    for (const json& g : data.value("gpus", json::array())) d.gpus.push_back(g.get<std::string>());
    for (const json& e : data.value("errors", json::array()))
      d.errors.push_back(e.get<std::string>());
    for (const json& a : data.value("allocations", json::array()))
      d.allocations.push_back(Allocation{a.value("gpu", ""), a.value("uuid", ""),
                                         a.value("job", ""), a.value("team", "")});
    for (const json& fj : data["findings"]) {
      Finding f;
      f.id = fj.value("id", "");
      f.kind = fj.value("kind", "");
      f.cause = fj.value("cause", "");
      if (!ParseEnum(fj.value("layer", ""), Layer::kBusiness, LayerName, &f.layer))
        return Error{"findings: unknown layer in " + f.id};
      if (!ParseEnum(fj.value("severity", ""), Severity::kInfo, SeverityName, &f.severity))
        return Error{"findings: unknown severity in " + f.id};
      const json& s = fj.value("subject", json::object());
      f.subject = Subject{s.value("gpu", ""),  s.value("uuid", ""),      s.value("job", ""),
                          s.value("team", ""), s.value("partition", ""), s.value("target", "")};
      for (const json& g : fj.value("related_gpus", json::array()))
        f.related_gpus.push_back(g.get<std::string>());
      f.title = fj.value("title", "");
      f.action = fj.value("action", "");
      for (const json& e : fj.value("evidence", json::array())) {
        const json& v = e.value("value", json(nullptr));
        f.evidence.push_back(
            Evidence{e.value("what", ""), v.is_number() ? v.get<double>() : std::nan(""),
                     e.value("unit", ""), Ms(e, "start"), Ms(e, "end"), e.value("query", "")});
      }
      f.since_ms = Ms(fj, "since");
      f.last_ms = Ms(fj, "last");
      f.held_s = fj.value("held_seconds", 0.0);
      f.active = fj.value("active", false);
      d.findings.push_back(std::move(f));
    }
  } catch (const json::exception& e) {
    return Error{std::string("findings: unexpected field type: ") + e.what()};
  }
  return d;
}

std::string ToText(const Diagnosis& d) {
  std::string out = "Findings over " + CoverageText(d.window_s, d.data_start_ms, d.data_end_ms) +
                    " up to " + Clock(d.time_ms) + ": ";
  if (d.findings.empty()) {
    out += "none.\n";
  } else {
    int counts[3] = {0, 0, 0};
    for (const Finding& f : d.findings) ++counts[static_cast<int>(f.severity)];
    out += std::to_string(d.findings.size()) + " (" + std::to_string(counts[0]) + " critical, " +
           std::to_string(counts[1]) + " warning, " + std::to_string(counts[2]) + " info)\n";
  }
  for (int layer = 0; layer <= static_cast<int>(Layer::kBusiness); ++layer) {
    bool header = false;
    for (const Finding& f : d.findings) {
      if (static_cast<int>(f.layer) != layer) continue;
      if (!header) {
        std::string name(LayerName(f.layer));
        for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        out += "\n" + name + " LAYER\n";
        header = true;
      }
      std::string sev(SeverityName(f.severity));
      for (char& c : sev) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      out += "\n  " + sev + std::string(10 - sev.size(), ' ');
      Wrap(&out, f.title, 12, 110);
      std::string line = f.kind + (f.cause.empty() ? "" : " — " + f.cause) + " — " + SubjectText(f);
      out += std::string(12, ' ');
      Wrap(&out, line, 12, 110);
      out += std::string(12, ' ') + "since " + Clock(f.since_ms) +
             (f.active ? ", still now" : ", until " + Clock(f.last_ms)) + " (held " +
             FormatValue(f.held_s, "seconds") + ")\n";
      out += std::string(12, ' ') + "evidence:\n";
      for (const Evidence& e : f.evidence) {
        out += std::string(14, ' ') + "- ";
        Wrap(&out, e.what + ": " + FormatValue(e.value, e.unit), 16, 110);
        out += std::string(16, ' ') + e.query + "\n";
      }
      out += std::string(12, ' ') + "action: ";
      Wrap(&out, f.action, 20, 110);
    }
  }
  if (!d.errors.empty()) {
    out += "\nChecks that could not run:\n";
    for (const std::string& e : d.errors) out += "  " + e + "\n";
  }
  return out;
}

}  // namespace gw::diagnose
