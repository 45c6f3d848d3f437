#include <gtest/gtest.h>

#include "config/config.h"
#include "support/process.h"

namespace gw::cli {
namespace {

Status Load(const std::string& text, config::Config* config) {
  gw::testing::TempDir dir;
  const std::string path = dir / "gpuwarden.yaml";
  gw::testing::WriteFile(path, text);
  Status s = config::LoadConfigFile(path, config);
  if (!s.ok()) {
    // The message starts with the file's path; tests compare what follows it.
    EXPECT_EQ(s.message().rfind(path + ":", 0), 0u) << s.message();
    return Error{s.message().substr(path.size())};
  }
  return s;
}

TEST(ScrapeConfigTest, ReadsTargetsWithDefaults) {
  config::Config c;
  ASSERT_TRUE(Load("scrape:\n"
                   "  targets:\n"
                   "    - name: llm\n"
                   "      url: http://127.0.0.1:8000/metrics\n"
                   "      gpus: [0, 3]\n"
                   "    - name: chat\n"
                   "      url: https://chat:9000/metrics\n"
                   "      interval: 30s\n"
                   "      timeout: 20s\n"
                   "      basic_auth: {username: u, password_file: /etc/pw}\n",
                   &c)
                  .ok());
  ASSERT_EQ(c.scrape.targets.size(), 2u);
  const auto& llm = c.scrape.targets[0];
  EXPECT_EQ(llm.name, "llm");
  EXPECT_EQ(llm.url, "http://127.0.0.1:8000/metrics");
  EXPECT_EQ(llm.interval_s, 15);
  EXPECT_EQ(llm.effective_timeout_s(), 10);
  EXPECT_EQ(llm.gpus, (std::vector<unsigned>{0, 3}));
  const auto& chat = c.scrape.targets[1];
  EXPECT_EQ(chat.interval_s, 30);
  EXPECT_EQ(chat.effective_timeout_s(), 20);
  EXPECT_EQ(chat.basic_auth_username, "u");
  EXPECT_EQ(chat.basic_auth_password_file, "/etc/pw");
}

TEST(ScrapeConfigTest, ReadsOutputsAsASelector) {
  config::Config c;
  ASSERT_TRUE(Load("scrape:\n  targets:\n"
                   "    - name: llm\n      url: http://127.0.0.1:8000/metrics\n      gpus: [0]\n"
                   "      outputs: 'inference_requests_total{code=~\"2..\"}'\n"
                   "      output_unit: request\n"
                   "    - name: chat\n      url: http://127.0.0.1:8001/metrics\n",
                   &c)
                  .ok());
  ASSERT_EQ(c.scrape.targets.size(), 2u);
  const auto& llm = c.scrape.targets[0];
  EXPECT_EQ(llm.outputs, "inference_requests_total{code=~\"2..\"}");
  EXPECT_EQ(llm.output_unit, "request");
  ASSERT_EQ(llm.output_matchers.size(), 2u);
  int matched = 0;
  for (const tsdb::Matcher& m : llm.output_matchers) {
    if (m.name() == "__name__") matched += m.Matches("inference_requests_total");
    if (m.name() == "code") matched += m.Matches("200") && !m.Matches("500");
  }
  EXPECT_EQ(matched, 2);
  EXPECT_TRUE(c.scrape.targets[1].outputs.empty());
  EXPECT_EQ(c.scrape.targets[1].output_unit, "output");
}

TEST(ScrapeConfigTest, RefusesMistakesWithTheLine) {
  struct Case {
    std::string yaml, error;
  };
  const std::string head = "scrape:\n  targets:\n";
  for (const Case& c : std::vector<Case>{
           {"scrape:\n  targets: llm\n", ":2: scrape.targets: expected a list of targets"},
           {head + "    - url: http://a/metrics\n", ":3: scrape.targets[0]: name is required"},
           {head + "    - name: a\n      url: ftp://a\n",
            ":3: scrape.targets[0]: url must start with http:// or https://, got 'ftp://a'"},
           {head + "    - name: a\n      url: http://a/m\n      interval: soon\n",
            ":5: scrape.targets[0].interval: expected a positive duration such as 15s, got "
            "'soon'"},
           {head + "    - name: a\n      url: http://a/m\n      gpus: [0, x]\n",
            ":5: scrape.targets[0].gpus: expected a GPU index (0, 1, ...), got 'x'"},
           {head + "    - name: a\n      url: http://a/m\n      interval: 5s\n      timeout: 6s\n",
            ":3: scrape.targets[0]: timeout (6s) must not be longer than interval (5s)"},
           {head + "    - name: a\n      url: http://a/m\n    - name: a\n      url: http://b/m\n",
            ":5: scrape.targets[1]: another target is already named 'a'"},
           {head + "    - name: a\n      url: http://a/m\n      honor_labels: true\n",
            ":5: scrape.targets[0]: unknown key 'honor_labels' (name, url, interval, timeout, "
            "gpus, "
            "basic_auth, bearer_token_file, outputs, output_unit, job_id)"},
           {head + "    - name: a\n      url: http://a/m\n      outputs: 'requests_total{code=~'\n",
            ":5: scrape.targets[0].outputs: 1:22: parse error: unexpected end of input inside "
            "braces (a counter selector such as 'inference_requests_total{code=~\"2..\"}')"},
           {head +
                "    - name: a\n      url: http://a/m\n      outputs: rate(requests_total[5m])\n",
            ":5: scrape.targets[0].outputs: expected a vector selector, got "
            "'rate(requests_total[5m])' (a counter selector such as "
            "'inference_requests_total{code=~\"2..\"}')"},
           {head +
                "    - name: a\n      url: http://a/m\n      outputs: requests_total offset 5m\n",
            ":5: scrape.targets[0].outputs: offset and @ are not allowed here, got "
            "'requests_total offset 5m'"},
           {head + "    - name: a\n      url: http://a/m\n      output_unit: ''\n",
            ":5: scrape.targets[0].output_unit: expected a unit such as request or token"},
       }) {
    config::Config config;
    Status s = Load(c.yaml, &config);
    ASSERT_FALSE(s.ok()) << c.yaml;
    EXPECT_EQ(s.message(), c.error) << c.yaml;
  }
}

}  // namespace
}  // namespace gw::cli
