// `gpuwarden serve` as a user runs it: a separate process on loopback, the simulator loaded by
// dlopen, scraped over HTTP in stepped virtual time, linted by the real promtool.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "support/agent_process.h"

namespace gw::testing {
namespace {

TEST(Serve, PowerCapScenarioValuesAgreeWithTheScenario) {
  AgentProcess agent({"--simulate", "power-cap", "--sim-clock", "stepped", "--interval", "1s",
                      "--slow-interval", "5s"});
  ASSERT_NE(agent.port(), 0);
  EXPECT_EQ(agent.Get("/healthz").status, 200);
  EXPECT_EQ(agent.Get("/readyz").status, 200);
  agent.Advance(120);
  HttpReply page = agent.Get("/metrics");
  ASSERT_EQ(page.status, 200);
  EXPECT_EQ(page.content_type, "text/plain; version=0.0.4; charset=utf-8");
  auto samples = ParseExposition(page.body);
  EXPECT_EQ(Value(samples, "gpu_up", {{"gpu", "0"}}), 1);
  EXPECT_EQ(Value(samples, "gpu_clock_event_active", {{"gpu", "0"}, {"reason", "sw_power_cap"}}),
            1);
  double limit = Value(samples, "gpu_power_limit_watts", {{"gpu", "0"}});
  double power = Value(samples, "gpu_power_watts", {{"gpu", "0"}});
  EXPECT_LE(power, limit * 1.02);
  EXPECT_LT(limit, Value(samples, "gpu_power_default_limit_watts", {{"gpu", "0"}}));
  EXPECT_LT(Value(samples, "gpu_sm_clock_hertz", {{"gpu", "0"}}),
            Value(samples, "gpu_sm_clock_max_hertz", {{"gpu", "0"}}));
  EXPECT_GT(
      Value(samples, "gpu_clock_event_seconds_total", {{"gpu", "0"}, {"reason", "sw_power_cap"}}),
      0);
  EXPECT_EQ(Value(samples, "gpuwarden_nvml_up"), 1);
  EXPECT_EQ(Value(samples, "gpuwarden_collect_cycles_total", {{"schedule", "fast"}}), 121);
}

// Notification targets and a scrape target (none reachable), so that notify's and scrape's
// families are on the page with the device's and gpuwarden's own; a webhook URL with a quote
// in it, for the label escaping.
std::vector<std::string> AgentWithEveryFamily(const TempDir& dir) {
  WriteFile(dir / "gpuwarden.yaml",
            "alerting:\n  alertmanagers: [http://127.0.0.1:1]\n"
            "  webhooks: [\"http://127.0.0.1:1/hook?a=\\\"b\\\"\"]\n"
            "scrape:\n  targets:\n    - name: llm\n      url: http://127.0.0.1:1/metrics\n"
            "      gpus: [0]\n");
  return {"--simulate",
          "demo",
          "--sim-clock",
          "stepped",
          "--per-process-metrics",
          "--config",
          dir / "gpuwarden.yaml",
          "--data-dir",
          dir / "data"};
}

TEST(Serve, MetricsPassPromtoolLint) {
  TempDir dir;
  AgentProcess agent(AgentWithEveryFamily(dir));
  ASSERT_NE(agent.port(), 0);
  agent.Advance(30);
  HttpReply page = agent.Get("/metrics");
  ASSERT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("gpuwarden_notifications_sent_total{"), std::string::npos);
  EXPECT_NE(page.body.find("gpuwarden_scrape_errors_total{"), std::string::npos);
  WriteFile(dir / "metrics.txt", page.body);
  std::string out;
  int code = RunCommand({"promtool", "check", "metrics"}, &out, 60, dir / "metrics.txt");
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out, "") << out;
}

// The same page in OpenMetrics, read by Prometheus' own OpenMetrics parser (`promtool check
// metrics` reads text 0.0.4 only): `promtool tsdb create-blocks-from openmetrics` refuses a page
// without `# EOF`, a bad escape, or a `# UNIT` that is not the family name's suffix. That tool
// wants a timestamp on every sample, so one is added to each sample line here.
TEST(Serve, OpenMetricsPageParsesWithPrometheusParser) {
  TempDir dir;
  AgentProcess agent(AgentWithEveryFamily(dir));
  ASSERT_NE(agent.port(), 0);
  agent.Advance(30);
  HttpReply page = agent.Get("/metrics", "application/openmetrics-text;version=1.0.0");
  ASSERT_EQ(page.status, 200);
  ASSERT_GE(page.body.size(), 6u);
  EXPECT_EQ(page.body.substr(page.body.size() - 6), "# EOF\n");
  EXPECT_EQ(page.body.find("# EOF"), page.body.size() - 6) << "# EOF more than once";
  EXPECT_NE(page.body.find("# UNIT gpu_energy_joules joules\n"), std::string::npos);
  std::string stamped;
  size_t begin = 0;
  while (begin < page.body.size()) {
    size_t end = page.body.find('\n', begin);
    if (end == std::string::npos) end = page.body.size();
    stamped.append(page.body, begin, end - begin);
    if (page.body[begin] != '#') stamped += " 1700000000";
    stamped += '\n';
    begin = end + 1;
  }
  WriteFile(dir / "metrics.om", stamped);
  std::string out;
  int code = RunCommand(
      {"promtool", "tsdb", "create-blocks-from", "openmetrics", dir / "metrics.om", dir / "blocks"},
      &out, 120);
  EXPECT_EQ(code, 0) << out << "\n" << page.body;
}

TEST(Serve, OpenMetricsWhenAsked) {
  AgentProcess agent({"--simulate", "demo", "--sim-clock", "stepped"});
  ASSERT_NE(agent.port(), 0);
  HttpReply page = agent.Get("/metrics", "application/openmetrics-text;version=1.0.0");
  ASSERT_EQ(page.status, 200);
  EXPECT_EQ(page.content_type, "application/openmetrics-text; version=1.0.0; charset=utf-8");
  ASSERT_GE(page.body.size(), 6u);
  EXPECT_EQ(page.body.substr(page.body.size() - 6), "# EOF\n");
  EXPECT_NE(page.body.find("# TYPE gpu_energy_joules counter"), std::string::npos);
}

TEST(Serve, LostGpuIsReportedAndTheRestCollected) {
  AgentProcess agent({"--simulate", "fall-off-bus", "--sim-clock", "stepped"});
  ASSERT_NE(agent.port(), 0);
  agent.Advance(60);
  auto samples = ParseExposition(agent.Get("/metrics").body);
  EXPECT_EQ(Value(samples, "gpu_up", {{"gpu", "1"}}), 0);
  EXPECT_EQ(Value(samples, "gpu_up", {{"gpu", "0"}}), 1);
  EXPECT_EQ(Value(samples, "gpu_xid_errors_total", {{"gpu", "1"}, {"xid", "79"}}), 1);
  EXPECT_TRUE(std::isnan(Value(samples, "gpu_temperature_celsius", {{"gpu", "1"}})));
  EXPECT_FALSE(std::isnan(Value(samples, "gpu_temperature_celsius", {{"gpu", "0"}})));
  EXPECT_EQ(Value(samples, "gpu_info", {{"gpu", "1"}}), 1);  // identity stays
  EXPECT_NE(agent.Log().find("XID 79"), std::string::npos);
}

TEST(Serve, WithoutNvmlKeepsServingSelfMetricsAndSaysWhy) {
  AgentProcess agent({"--nvml-lib", "/nonexistent/libnvidia-ml.so.1"});
  ASSERT_NE(agent.port(), 0);
  auto samples = ParseExposition(agent.Get("/metrics").body);
  EXPECT_EQ(Value(samples, "gpuwarden_nvml_up"), 0);
  EXPECT_EQ(Value(samples, "gpuwarden_gpus"), 0);
  HttpReply ready = agent.Get("/readyz");
  EXPECT_EQ(ready.status, 503);
  EXPECT_NE(ready.body.find("cannot load NVML library"), std::string::npos);
  EXPECT_NE(agent.Log().find("serving self-metrics only"), std::string::npos) << agent.Log();
  EXPECT_TRUE(agent.process().Running());
}

TEST(Serve, HungCallIsQuarantinedAndScrapesKeepWorking) {
  AgentProcess agent({"--simulate", "hang", "--sim-clock", "stepped", "--call-timeout", "500ms"});
  ASSERT_NE(agent.port(), 0);
  agent.Advance(90);
  auto samples = ParseExposition(agent.Get("/metrics").body);
  EXPECT_GE(Value(samples, "gpuwarden_nvml_watchdog_trips_total"), 1);
  EXPECT_EQ(Value(samples, "gpuwarden_nvml_call_hung", {{"call", "nvmlDeviceGetPowerUsage"}}), 1);
  agent.Advance(2);
  EXPECT_EQ(agent.Get("/metrics").status, 200);
}

TEST(Serve, BadConfigNamesFileAndLine) {
  TempDir dir;
  WriteFile(dir / "gpuwarden.yaml", "listen: \":9999\"\ncollect:\n  interval: fast\n");
  std::string out;
  int code = RunCommand({GpuwardenBinary(), "serve", "--config", dir / "gpuwarden.yaml"}, &out);
  EXPECT_EQ(code, 2);
  EXPECT_NE(out.find(dir / "gpuwarden.yaml:3: collect.interval"), std::string::npos) << out;
}

// A port another process holds: serve says which address and why, and exits 1 cleanly (the
// collector, recorder, rules and task layer it had started are stopped in order, no crash).
TEST(Serve, AListenPortInUseIsAClearErrorAndACleanExit) {
  TempDir dir;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string listen_at = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  std::string out;
  const int code = RunCommand({GpuwardenBinary(), "serve", "--simulate", "demo", "--listen",
                               listen_at, "--data-dir", dir / "data"},
                              &out);
  close(fd);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("listen " + listen_at + ": "), std::string::npos) << out;
  EXPECT_NE(out.find("in use"), std::string::npos) << out;
}

TEST(Serve, BadScenarioIsAClearError) {
  TempDir dir;
  WriteFile(dir / "broken.yaml", "gpus:\n  - model: NVIDIA Imaginary 9000\n");
  AgentProcess agent({"--simulate", dir / "broken.yaml"});
  ASSERT_NE(agent.port(), 0);
  EXPECT_NE(agent.Log().find("broken.yaml:2"), std::string::npos) << agent.Log();
  EXPECT_EQ(agent.Get("/readyz").status, 503);
}

TEST(Serve, HelpShowsDefaults) {
  std::string out;
  EXPECT_EQ(RunCommand({GpuwardenBinary(), "serve", "--help"}, &out), 0);
  EXPECT_NE(out.find(":9966"), std::string::npos) << out;
  EXPECT_NE(out.find("default 1s"), std::string::npos) << out;
  EXPECT_NE(out.find("default 10s"), std::string::npos) << out;
}

}  // namespace
}  // namespace gw::testing
