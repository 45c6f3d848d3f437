// serve/governance_checkpoint.cpp — usage.json: the governance figures kept across restarts.
#include "serve/governance_checkpoint.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "serve/state_file.h"

namespace gw::serve {

std::string UsageCheckpointPath(const config::Config& config) {
  return config.storage.path + "/governance/usage.json";
}

GovernanceCheckpoint::GovernanceCheckpoint(std::string path, bool with_pools, Logger* log)
    : path_(std::move(path)), with_pools_(with_pools), log_(log) {}

void GovernanceCheckpoint::Load(GovernanceState* state) {
  const std::optional<std::string> text = ReadStateFile(path_);
  if (!text) return;  // the first start
  const nlohmann::json doc = nlohmann::json::parse(*text, nullptr, false);
  Status s;
  if (doc.is_discarded() || !doc.is_object() ||
      doc.value("format", "") != "gpuwarden-governance-state" || !doc.contains("usage")) {
    s = Error{"not a gpuwarden governance state file"};
  } else {
    s = state->usage.Restore(doc["usage"].dump());
  }
  if (!s.ok()) {
    SetAsideStateFile(path_, "governance", s.message(),
                      "cost, quota and reclaim figures start from zero", log_);
    return;
  }
  for (const nlohmann::json& a : doc.value("reclaim_actions", nlohmann::json::array()))
    if (a.is_object() && a.value("n", nlohmann::json()).is_number())
      state->actions[{a.value("reason", ""), a.value("action", "")}] = a["n"].get<double>();
  for (const nlohmann::json& f : doc.value("reclaim_failures", nlohmann::json::array()))
    if (f.is_object() && f.value("n", nlohmann::json()).is_number())
      state->failures[f.value("action", "")] = f["n"].get<double>();
  if (auto pools = doc.find("pools"); pools != doc.end()) {
    if (Status p = state->pools.Restore(pools->dump()); !p.ok())
      log_->Error("governance: " + path_ + ": pools: " + p.message() +
                  "; the queue-wait windows start empty");
  }
  log_->Info("governance: continuing the cost, quota, reclaim and queue-wait figures of " + path_);
}

void GovernanceCheckpoint::Write(std::mutex* state_mu, GovernanceState* state) {
  std::lock_guard<std::mutex> writing(write_mu_);
  std::string text;
  {
    std::lock_guard<std::mutex> lock(*state_mu);
    if (state->last_now_s <= 0) return;  // nothing observed: keep what is there
    nlohmann::json actions = nlohmann::json::array(), failures = nlohmann::json::array();
    for (const auto& [key, n] : state->actions)
      actions.push_back({{"reason", key.first}, {"action", key.second}, {"n", n}});
    for (const auto& [action, n] : state->failures)
      failures.push_back({{"action", action}, {"n", n}});
    nlohmann::json doc = {{"format", "gpuwarden-governance-state"},
                          {"version", 1},
                          {"usage", nlohmann::json::parse(state->usage.Checkpoint())},
                          {"reclaim_actions", std::move(actions)},
                          {"reclaim_failures", std::move(failures)}};
    if (with_pools_) doc["pools"] = nlohmann::json::parse(state->pools.Checkpoint());
    text = doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    state->checkpoint_s = state->last_now_s;
  }
  WriteStateFile(path_, text, "governance", &failed_, log_);
}

bool GovernanceCheckpoint::Due(const GovernanceState& state, double now_s) {
  return state.checkpoint_s <= 0 || now_s - state.checkpoint_s >= 60 ||
         now_s < state.checkpoint_s;  // a clock stepped back
}

}  // namespace gw::serve
