// Test support: a real Prometheus 2.42 (the Debian package) on loopback, with its own data
// directory, stopped with the object: scraping one agent every second, or with the configuration
// a test gives (WithConfig).
#ifndef GPUWARDEN_TESTS_SUPPORT_PROMETHEUS_SERVER_H_
#define GPUWARDEN_TESTS_SUPPORT_PROMETHEUS_SERVER_H_

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "support/http_client.h"
#include "support/process.h"

namespace gw::testing {

class PrometheusServer {
 public:
  explicit PrometheusServer(int target_port)
      : PrometheusServer(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
            "scrape_configs:\n  - job_name: gpuwarden\n    static_configs:\n"
            "      - targets: ['127.0.0.1:" +
                std::to_string(target_port) + "']\n",
            0) {}
  static std::unique_ptr<PrometheusServer> WithConfig(const std::string& prometheus_yml) {
    return std::unique_ptr<PrometheusServer>(new PrometheusServer(prometheus_yml, 0));
  }
  bool ready() const { return ready_; }
  int port() const { return port_; }
  std::string Log() const { return process_->Output(); }

  // The result vector of an instant query at "now" (QueryAt: of any Prometheus API on `port`).
  nlohmann::json Query(const std::string& promql) const { return QueryAt(port_, promql); }
  static nlohmann::json QueryAt(int port, const std::string& promql) {
    HttpReply r = HttpGet(port, "/api/v1/query?query=" + UrlEncode(promql));
    if (r.status != 200) return nlohmann::json::array();
    return nlohmann::json::parse(r.body)["data"]["result"];
  }

 private:
  PrometheusServer(const std::string& prometheus_yml, int /*tag*/) : port_(FreePort()) {
    WriteFile(dir_ / "prometheus.yml", prometheus_yml);
    process_ = std::make_unique<Process>(
        std::vector<std::string>{"prometheus", "--config.file=" + (dir_ / "prometheus.yml"),
                                 "--storage.tsdb.path=" + (dir_ / "data"),
                                 "--web.listen-address=127.0.0.1:" + std::to_string(port_)},
        dir_ / "prometheus.log");
    ready_ = WaitFor([&] { return HttpGet(port_, "/-/ready").status == 200; }, 60);
  }

  TempDir dir_;
  int port_;
  std::unique_ptr<Process> process_;
  bool ready_ = false;
};

}  // namespace gw::testing

#endif  // GPUWARDEN_TESTS_SUPPORT_PROMETHEUS_SERVER_H_
