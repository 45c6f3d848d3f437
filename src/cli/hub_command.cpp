#include "cli/hub_command.h"

#include <csignal>
#include <cstdio>

#include "base/build_info.h"
#include "hub/hub.h"

namespace gw::cli {

namespace {

bool Seconds(const std::string& flag, const std::string& text, double min_s, double* out) {
  if (!ParseDurationSeconds(text, out) || *out < min_s) {
    std::fprintf(stderr, "gpuwarden: %s: expected a duration of at least %s, got '%s'\n",
                 flag.c_str(), FormatDuration(min_s).c_str(), text.c_str());
    return false;
  }
  return true;
}

}  // namespace

int RunHub(const config::Config& config, const HubArgs& args, Logger* logger) {
  hub::HubOptions o;
  o.store_url = args.store;
  o.agents_file = args.agents;
  o.listen_address = args.listen;
  o.node_label = args.node_label;
  o.web_config_file = args.web_config_file;
  o.thresholds = config.diagnose.thresholds;
  o.version = std::string(GetBuildInfo().version);
  o.rules_files = args.rules;
  o.alertmanagers = args.alertmanagers;
  if (!Seconds("--findings-window", args.findings_window, 60, &o.findings_window_s) ||
      !Seconds("--findings-interval", args.findings_interval, 1, &o.findings_interval_s) ||
      !Seconds("--cache-ttl", args.cache_ttl, 0, &o.cache_ttl_s) ||
      !Seconds("--store-timeout", args.store_timeout, 0.1, &o.store_timeout_s) ||
      !Seconds("--rules-interval", args.rules_interval, 1, &o.rules_interval_s))
    return 2;
  // SIGINT/SIGTERM are taken by sigwait below: blocked before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  auto hub = hub::Hub::Create(std::move(o), logger);
  if (!hub.ok()) {
    std::fprintf(stderr, "gpuwarden: %s\n", hub.error().message.c_str());
    return 2;
  }
  if (Status st = (*hub)->Start(); !st.ok()) {
    std::fprintf(stderr, "gpuwarden: %s\n", st.message().c_str());
    return 1;
  }
  // Printed whatever the log level: scripts and tests read the port from it.
  std::fprintf(stderr, "gpuwarden hub: the console over %s at %s (port %d)\n", args.store.c_str(),
               args.listen.c_str(), (*hub)->port());
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  logger->Info("hub: stopping");
  (*hub)->Stop();
  return 0;
}

}  // namespace gw::cli
