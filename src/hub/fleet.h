// hub/fleet.h — diagnosis and reports over the central store: diagnose/ and report/ run
// unchanged over a RemoteQuerier, and each finding is given the node it is about (docs/hub.md).
//
//   auto f = hub::DiagnoseFleet(store, options, "instance");
//   std::string body = hub::FleetFindingsJson(*f, "node-07", {});   // /api/gw/v1/findings?node=
//   auto html = hub::FleetReport(store, report_options, /*json=*/false, "instance");
//
// A finding's node: the node of its GPU (by UUID: gpu_up's node label), else of its job
// (gpu_allocation_info), else none (a team's or a partition's finding concerns the fleet).
#ifndef GPUWARDEN_HUB_FLEET_H_
#define GPUWARDEN_HUB_FLEET_H_

#include <map>
#include <string>
#include <vector>

#include "diagnose/diagnose.h"
#include "hub/store.h"
#include "report/report.h"

namespace gw::hub {

struct FleetFindings {
  diagnose::Diagnosis diagnosis;
  std::map<std::string, std::string> node_of_finding;  // finding id -> node
  std::vector<std::string> nodes;                      // nodes with data in the window
  double took_s = 0;
};

Expected<FleetFindings> DiagnoseFleet(Store* store, const diagnose::Options& options,
                                      const std::string& node_label);

// ToJson of the findings of `node` (all when empty) that pass `filter`, each with "node".
std::string FleetFindingsJson(const FleetFindings& findings, const std::string& node,
                              const diagnose::FindingFilter& filter);
// ToText of the same, each finding's title prefixed with its node.
std::string FleetFindingsText(const FleetFindings& findings);

// report::Build over the store; the JSON gains "nodes": [{"node", "gpus"}] (the GPUs each node
// reported in the period), the HTML a line naming them.
Expected<std::string> FleetReport(Store* store, const report::Options& options, bool json,
                                  const std::string& node_label);

// The nodes with gpu_up samples in the last `window_s` before `time_s`, with their GPU counts.
Expected<std::map<std::string, double>> FleetNodes(Store* store, double time_s, double window_s,
                                                   const std::string& node_label);

}  // namespace gw::hub

#endif  // GPUWARDEN_HUB_FLEET_H_
