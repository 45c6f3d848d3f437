#include "hub/fleet.h"

#include <chrono>
#include <nlohmann/json.hpp>
#include <set>

#include "base/html.h"
#include "diagnose/checks.h"
#include "hub/remote_querier.h"
#include "promql/engine.h"

namespace gw::hub {

using nlohmann::json;

namespace {

std::string Label(const std::map<std::string, std::string>& labels, const std::string& name) {
  auto it = labels.find(name);
  return it == labels.end() ? "" : it->second;
}

// uuid -> node over the window, from gpu_up.
Expected<std::map<std::string, std::string>> NodeOfUuid(Store* store, double time_s,
                                                        double window_s,
                                                        const std::string& node_label) {
  auto v = store->Vector("group by (uuid, " + node_label + ") (last_over_time(gpu_up[" +
                             diagnose::PromDuration(window_s) + "]))",
                         time_s);
  if (!v.ok()) return v.error();
  std::map<std::string, std::string> out;
  for (const auto& s : *v) out[Label(s.labels, "uuid")] = Label(s.labels, node_label);
  return out;
}

}  // namespace

Expected<std::map<std::string, double>> FleetNodes(Store* store, double time_s, double window_s,
                                                   const std::string& node_label) {
  auto v = store->Vector("count by (" + node_label + ") (last_over_time(gpu_up[" +
                             diagnose::PromDuration(window_s) + "]))",
                         time_s);
  if (!v.ok()) return v.error();
  std::map<std::string, double> out;
  for (const auto& s : *v) out[Label(s.labels, node_label)] = s.value;
  return out;
}

Expected<FleetFindings> DiagnoseFleet(Store* store, const diagnose::Options& options,
                                      const std::string& node_label) {
  const auto began = std::chrono::steady_clock::now();
  RemoteQuerier querier(store);
  promql::Engine engine;
  auto d = diagnose::Diagnose(querier, engine, options);
  if (!d.ok()) return d.error();
  FleetFindings out;
  const double t_s = double(options.time_ms) / 1000;
  auto by_uuid = NodeOfUuid(store, t_s, options.window_s, node_label);
  if (!by_uuid.ok()) return by_uuid.error();
  auto jobs =
      store->Vector("group by (job_id, " + node_label + ") (last_over_time(gpu_allocation_info[" +
                        diagnose::PromDuration(options.window_s) + "]))",
                    t_s);
  std::map<std::string, std::string> by_job;
  if (jobs.ok())
    for (const auto& s : *jobs) by_job[Label(s.labels, "job_id")] = Label(s.labels, node_label);
  std::set<std::string> nodes;
  for (const auto& [uuid, node] : *by_uuid) nodes.insert(node);
  out.nodes.assign(nodes.begin(), nodes.end());
  for (const diagnose::Finding& f : d->findings) {
    std::string node;
    if (auto it = by_uuid->find(f.subject.uuid); !f.subject.uuid.empty() && it != by_uuid->end())
      node = it->second;
    else if (auto j = by_job.find(f.subject.job); !f.subject.job.empty() && j != by_job.end())
      node = j->second;
    if (!node.empty()) out.node_of_finding[f.id] = node;
  }
  out.diagnosis = std::move(*d);
  out.took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  return out;
}

std::string FleetFindingsJson(const FleetFindings& findings, const std::string& node,
                              const diagnose::FindingFilter& filter) {
  diagnose::Diagnosis scoped = findings.diagnosis;
  if (!node.empty()) {
    std::erase_if(scoped.findings, [&](const diagnose::Finding& f) {
      auto it = findings.node_of_finding.find(f.id);
      return it == findings.node_of_finding.end() || it->second != node;
    });
  }
  json doc = json::parse(diagnose::ToJson(diagnose::Filter(scoped, filter)), nullptr, false);
  if (doc.is_discarded()) return diagnose::ToJson(scoped);
  auto& list = doc["data"]["findings"];
  for (auto& f : list) {
    auto it = findings.node_of_finding.find(f.value("id", ""));
    f["node"] = it == findings.node_of_finding.end() ? json(nullptr) : json(it->second);
  }
  doc["data"]["nodes"] = findings.nodes;
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string FleetFindingsText(const FleetFindings& findings) {
  diagnose::Diagnosis named = findings.diagnosis;
  for (diagnose::Finding& f : named.findings) {
    auto it = findings.node_of_finding.find(f.id);
    f.title = (it == findings.node_of_finding.end() ? "fleet" : it->second) + ": " + f.title;
  }
  return "Nodes with data: " + std::to_string(findings.nodes.size()) + "\n" +
         diagnose::ToText(named);
}

Expected<std::string> FleetReport(Store* store, const report::Options& options, bool as_json,
                                  const std::string& node_label) {
  RemoteQuerier querier(store);
  promql::Engine engine;
  auto r = report::Build(querier, engine, options);
  if (!r.ok()) return r.error();
  const double t_s = double(options.time_ms) / 1000;
  auto nodes = FleetNodes(store, t_s, options.period_s, node_label);
  if (!nodes.ok()) return nodes.error();
  if (!as_json) {
    std::string html = report::ToHtml(*r);
    std::string line = "<p class=\"sub\">Nodes (" + std::to_string(nodes->size()) + "): ";
    bool first = true;
    for (const auto& [node, gpus] : *nodes) {
      line += (first ? "" : ", ") + HtmlEscape(node);
      first = false;
    }
    line += "</p>";
    if (size_t at = html.find("</h1>"); at != std::string::npos) html.insert(at + 5, line);
    return html;
  }
  json doc = json::parse(report::ToJson(*r), nullptr, false);
  if (doc.is_discarded()) return report::ToJson(*r);
  json list = json::array();
  for (const auto& [node, gpus] : *nodes) list.push_back({{"node", node}, {"gpus", gpus}});
  doc["nodes"] = std::move(list);
  auto by_uuid = NodeOfUuid(store, t_s, options.period_s, node_label);
  if (by_uuid.ok() && doc.contains("gpus") && doc["gpus"].is_array())
    for (auto& g : doc["gpus"])
      if (g.is_object())
        if (auto it = by_uuid->find(g.value("uuid", "")); it != by_uuid->end())
          g["node"] = it->second;
  return doc.dump(2) + "\n";
}

}  // namespace gw::hub
