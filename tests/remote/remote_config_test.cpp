// config/remote_config.h: `remote_write:` in Prometheus' shape, read into RemoteWriteConfig, and
// every mistake refused with the file, the line and what is wrong.
#include <gtest/gtest.h>

#include "config/config.h"
#include "support/process.h"

namespace gw::config {
namespace {

// Loads `text`; on an error returns what follows the file's path (":LINE: ...").
Status Load(const std::string& text, Config* config) {
  gw::testing::TempDir dir;
  const std::string path = dir / "gpuwarden.yaml";
  gw::testing::WriteFile(path, text);
  Status s = LoadConfigFile(path, config);
  if (!s.ok()) {
    EXPECT_EQ(s.message().rfind(path + ":", 0), 0u) << s.message();
    return Error{s.message().substr(path.size())};
  }
  return s;
}

std::string ErrorOf(const std::string& text) {
  Config c;
  Status s = Load(text, &c);
  EXPECT_FALSE(s.ok()) << text;
  return s.ok() ? "" : s.message();
}

TEST(RemoteWriteConfig, AbsentMeansNoEndpoint) {
  Config c;
  ASSERT_TRUE(Load("listen: ':9966'\n", &c).ok());
  EXPECT_TRUE(c.remote_write.empty());
}

TEST(RemoteWriteConfig, ReadsPrometheusShapeAndDefaults) {
  Config c;
  Status s = Load(
      "remote_write:\n"
      "  - url: http://vm:8428/api/v1/write\n"
      "  - url: https://mimir/api/v1/push\n"
      "    name: central\n"
      "    headers: {X-Scope-OrgID: site-a}\n"
      "    basic_auth: {username: gw, password_file: /etc/pw}\n"
      "    tls_config: {ca_file: /etc/ca.pem, insecure_skip_verify: true}\n"
      "    remote_timeout: 10s\n"
      "    queue_config: {capacity: 5000, max_samples_per_send: 1000, batch_send_deadline: 2s,\n"
      "                   min_backoff: 100ms, max_backoff: 10s, max_shards: 1}\n"
      "    write_relabel_configs:\n"
      "      - source_labels: [__name__]\n"
      "        regex: 'gpu_process_.*'\n"
      "        action: drop\n"
      "      - {source_labels: [__name__, gpu], separator: '@', regex: 'gpu_.*@[0-3]', "
      "action: keep}\n"
      "    downsample: {interval: 15s, aggregate: [max, avg]}\n"
      "  - url: http://prom:9090/api/v1/write\n"
      "    name: prom\n"
      "    bearer_token_file: /etc/token\n",
      &c);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(c.remote_write.size(), 3u);
  const RemoteWriteConfig& vm = c.remote_write[0];
  EXPECT_EQ(vm.url, "http://vm:8428/api/v1/write");
  EXPECT_EQ(RemoteWriteName(vm).size(), 6u);  // a hash of the url
  EXPECT_EQ(vm.remote_timeout_s, 30);
  EXPECT_EQ(vm.max_samples_per_send, 2000);
  EXPECT_EQ(vm.batch_send_deadline_s, 5);
  EXPECT_EQ(vm.downsample_interval_s, 0);
  const RemoteWriteConfig& m = c.remote_write[1];
  EXPECT_EQ(RemoteWriteName(m), "central");
  EXPECT_EQ(m.headers.at("X-Scope-OrgID"), "site-a");
  EXPECT_EQ(m.basic_auth_username, "gw");
  EXPECT_EQ(m.basic_auth_password_file, "/etc/pw");
  EXPECT_EQ(m.tls_ca_file, "/etc/ca.pem");
  EXPECT_TRUE(m.tls_insecure_skip_verify);
  EXPECT_EQ(m.remote_timeout_s, 10);
  EXPECT_EQ(m.capacity, 5000);
  EXPECT_EQ(m.max_samples_per_send, 1000);
  EXPECT_EQ(m.batch_send_deadline_s, 2);
  EXPECT_DOUBLE_EQ(m.min_backoff_s, 0.1);
  EXPECT_EQ(m.max_backoff_s, 10);
  ASSERT_EQ(m.write_relabel_configs.size(), 2u);
  EXPECT_FALSE(m.write_relabel_configs[0].keep);
  EXPECT_EQ(m.write_relabel_configs[0].regex, "gpu_process_.*");
  EXPECT_TRUE(m.write_relabel_configs[1].keep);
  EXPECT_EQ(m.write_relabel_configs[1].separator, "@");
  EXPECT_EQ(m.write_relabel_configs[1].source_labels,
            (std::vector<std::string>{"__name__", "gpu"}));
  EXPECT_EQ(m.downsample_interval_s, 15);
  EXPECT_EQ(m.downsample_aggregate, (std::vector<std::string>{"max", "avg"}));
  const RemoteWriteConfig& p = c.remote_write[2];
  EXPECT_EQ(p.authorization_type, "Bearer");
  EXPECT_EQ(p.authorization_credentials_file, "/etc/token");
}

TEST(RemoteWriteConfig, ErrorsNameFileLineKeyAndText) {
  EXPECT_EQ(ErrorOf("remote_write: http://vm\n"), ":1: remote_write: expected a list of endpoints");
  EXPECT_EQ(ErrorOf("remote_write:\n  - name: x\n"),
            ":2: remote_write[0]: url must start with http:// or https://, got ''");
  EXPECT_EQ(ErrorOf("remote_write:\n  - url: http://a\n    urls: x\n"),
            ":3: remote_write[0]: unknown key 'urls' (url, name, headers, basic_auth, "
            "authorization, bearer_token, bearer_token_file, tls_config, remote_timeout, "
            "queue_config, write_relabel_configs, downsample)");
  EXPECT_EQ(ErrorOf("remote_write:\n  - url: http://a\n    remote_timeout: soon\n"),
            ":3: remote_write[0].remote_timeout: expected a positive duration such as 15s, got "
            "'soon'");
  EXPECT_EQ(ErrorOf("remote_write:\n  - url: http://a\n    queue_config:\n"
                    "      max_samples_per_send: 0\n"),
            ":4: remote_write[0].queue_config.max_samples_per_send: expected a whole number from 1 "
            "to 1000000, got '0'");
  EXPECT_EQ(ErrorOf("remote_write:\n  - url: http://a\n    queue_config:\n"
                    "      min_backoff: 10s\n      max_backoff: 1s\n"),
            ":4: remote_write[0].queue_config: min_backoff (10s) must not be longer than "
            "max_backoff (1s)");
  EXPECT_EQ(ErrorOf("remote_write:\n  - url: http://a\n    queue_config: {max_shards: 4}\n"),
            ":3: remote_write[0].queue_config.max_shards: expected a whole number from 1 to 1, got "
            "'4'");
  EXPECT_EQ(ErrorOf("remote_write:\n  - url: http://a\n    write_relabel_configs:\n"
                    "      - {source_labels: [__name__], regex: 'a', action: replace}\n"),
            ":4: remote_write[0].write_relabel_configs[0].action: only keep and drop are supported "
            "in write_relabel_configs (docs/remote-write.md), got 'replace'");
  EXPECT_EQ(ErrorOf("remote_write:\n  - url: http://a\n    write_relabel_configs:\n"
                    "      - {source_labels: [__name__], regex: 'a(', action: drop}\n")
                .substr(0, 52),
            ":4: remote_write[0].write_relabel_configs[0].regex: ");
  EXPECT_EQ(ErrorOf("remote_write:\n  - url: http://a\n    write_relabel_configs:\n"
                    "      - {regex: 'a', action: drop}\n"),
            ":4: remote_write[0].write_relabel_configs[0]: source_labels is required (e.g. "
            "[__name__])");
  EXPECT_EQ(ErrorOf("remote_write:\n  - url: http://a\n    downsample: {interval: 15s, "
                    "aggregate: [max, p99]}\n"),
            ":3: remote_write[0].downsample.aggregate: expected min, max, avg, sum, count or last, "
            "got 'p99'");
  EXPECT_EQ(ErrorOf("remote_write:\n  - url: http://a\n    downsample: {aggregate: [max]}\n"),
            ":3: remote_write[0].downsample: interval is required (e.g. 15s)");
  EXPECT_EQ(ErrorOf("remote_write:\n  - url: http://a\n    downsample: {interval: 1500us, "
                    "aggregate: [max]}\n")
                .substr(0, 46),
            ":3: remote_write[0].downsample.interval: expec");
  EXPECT_EQ(ErrorOf("remote_write:\n  - url: http://a\n    basic_auth: {username: u, password: "
                    "p, password_file: /f}\n"),
            ":3: remote_write[0].basic_auth: use password or password_file, not both");
  EXPECT_EQ(ErrorOf("remote_write:\n  - url: http://a\n    basic_auth: {username: u}\n"
                    "    bearer_token_file: /t\n"),
            ":2: remote_write[0]: use basic_auth or authorization, not both");
  EXPECT_EQ(ErrorOf("remote_write:\n  - url: http://a\n    authorization: {type: Basic}\n"),
            ":3: remote_write[0].authorization.type: use basic_auth for Basic, got 'Basic'");
  EXPECT_EQ(ErrorOf("remote_write:\n  - url: http://a\n    name: ../etc\n"),
            ":3: remote_write[0].name: expected up to 64 letters, digits, '_', '-' or '.', got "
            "'../etc'");
  EXPECT_EQ(ErrorOf("remote_write:\n  - url: http://a\n  - url: http://a\n"),
            ":3: remote_write[1]: another endpoint is already named '" +
                RemoteWriteName({.url = "http://a"}) + "' (the same url: give each a name)");
}

}  // namespace
}  // namespace gw::config
