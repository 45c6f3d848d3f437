// Test support: a real Alertmanager 0.25 (/usr/bin/prometheus-alertmanager) on 127.0.0.1, with
// no cluster gossip, its own storage directory, stopped by PID. Restartable on the same port
// and storage to simulate an Alertmanager outage.
//
//   gw::testing::Alertmanager am;             // picks a free port and a temp storage dir
//   ASSERT_TRUE(am.Start()) << am.Output();
//   auto alerts = am.Alerts();               // GET /api/v2/alerts, parsed
//   am.Stop(); ...; ASSERT_TRUE(am.Start());  // same port, same storage
#ifndef GPUWARDEN_TESTS_SUPPORT_ALERTMANAGER_H_
#define GPUWARDEN_TESTS_SUPPORT_ALERTMANAGER_H_

#pragma GCC system_header
#include <httplib.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "support/process.h"

namespace gw::testing {

inline constexpr const char* kAlertmanagerBinary = "/usr/bin/prometheus-alertmanager";

// A configuration that routes everything to a receiver with no integrations.
inline std::string NullAlertmanagerConfig() {
  return "route:\n  receiver: 'null'\nreceivers:\n  - name: 'null'\n";
}

// Routes everything to a webhook at `url` with resolved notifications and short timers, so a
// test sees what Alertmanager itself would send to a webhook.
inline std::string WebhookAlertmanagerConfig(const std::string& url) {
  return "route:\n"
         "  receiver: hook\n"
         "  group_by: ['alertname']\n"
         "  group_wait: 100ms\n"
         "  group_interval: 1s\n"
         "  repeat_interval: 1h\n"
         "receivers:\n"
         "  - name: hook\n"
         "    webhook_configs:\n"
         "      - url: '" +
         url +
         "'\n"
         "        send_resolved: true\n";
}

class Alertmanager {
 public:
  explicit Alertmanager(std::string config = NullAlertmanagerConfig())
      : config_(std::move(config)), port_(FreePort()) {}
  ~Alertmanager() { Stop(); }

  static bool Available() { return ::access(kAlertmanagerBinary, X_OK) == 0; }

  // Starts it and waits for /-/ready (up to `timeout_s`); false if it did not come up.
  bool Start(double timeout_s = 30) {
    WriteFile(dir_ / "alertmanager.yml", config_);
    std::filesystem::create_directories(dir_ / "data");
    process_ = std::make_unique<Process>(
        std::vector<std::string>{kAlertmanagerBinary,
                                 "--config.file=" + (dir_ / "alertmanager.yml"),
                                 "--storage.path=" + (dir_ / "data"),
                                 "--web.listen-address=127.0.0.1:" + std::to_string(port_),
                                 "--cluster.listen-address=", "--log.level=debug"},
        dir_ / ("alertmanager-" + std::to_string(starts_++) + ".log"));
    if (!process_->started()) return false;
    return WaitFor([&] { return process_->Running() && Ready(); }, timeout_s);
  }
  // SIGTERM and wait: Alertmanager writes its notification log and silences to storage.
  void Stop() {
    if (process_) process_->Stop();
  }

  bool Ready() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_connection_timeout(1);
    auto r = c.Get("/-/ready");
    return r && r->status == 200;
  }

  // GET /api/v2/alerts (active, silenced, inhibited and unprocessed: Alertmanager's defaults).
  // A JSON null when it did not answer 200.
  nlohmann::json Alerts() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_connection_timeout(5);
    c.set_read_timeout(10);
    auto r = c.Get("/api/v2/alerts");
    if (!r || r->status != 200) return nullptr;
    return nlohmann::json::parse(r->body, nullptr, false);
  }

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // The log of the latest start.
  std::string Output() const { return process_ ? process_->Output() : ""; }

 private:
  std::string config_;
  int port_;
  TempDir dir_;
  int starts_ = 0;
  std::unique_ptr<Process> process_;
};

}  // namespace gw::testing

#endif  // GPUWARDEN_TESTS_SUPPORT_ALERTMANAGER_H_
