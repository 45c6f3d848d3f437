// `gpuwarden serve --web.config.file`: TLS and bcrypt basic auth end to end, with the real
// Prometheus 2.42 scraping through both, as an operator would configure it.
#include <crypt.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/agent_process.h"

namespace gw::testing {
namespace {

std::string Bcrypt(const std::string& password) {
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  if (!crypt_gensalt_rn("$2b$", 10, nullptr, 0, setting, sizeof setting)) return "";
  crypt_data data{};
  const char* hash = crypt_rn(password.c_str(), setting, &data, sizeof data);
  return hash ? hash : "";
}

// A self-signed certificate for 127.0.0.1 in `dir` (server.crt, server.key).
bool MakeCertificate(const TempDir& dir) {
  std::string out;
  return RunCommand({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj",
                     "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1", "-days", "1",
                     "-keyout", dir / "server.key", "-out", dir / "server.crt"},
                    &out) == 0;
}

HttpReply HttpsGet(int port, const std::string& path, const std::string& ca_file,
                   const std::string& user = "", const std::string& password = "") {
  httplib::SSLClient client("127.0.0.1", port);
  client.set_ca_cert_path(ca_file.c_str());
  client.enable_server_certificate_verification(true);
  client.set_connection_timeout(5);
  if (!user.empty()) client.set_basic_auth(user.c_str(), password.c_str());
  auto res = client.Get(path.c_str());
  HttpReply r;
  if (!res) return r;
  r.status = res->status;
  r.body = res->body;
  return r;
}

TEST(ServeWebConfig, TlsAndBasicAuthProtectEveryEndpointAndPrometheusScrapesThrough) {
  TempDir dir;
  ASSERT_TRUE(MakeCertificate(dir));
  std::string hash = Bcrypt("s3cret");
  ASSERT_FALSE(hash.empty());
  WriteFile(dir / "web.yml",
            "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
            "basic_auth_users:\n  prometheus: " +
                hash + "\n");
  AgentProcess agent({"--simulate", "demo", "--web.config.file", dir / "web.yml"});
  ASSERT_NE(agent.port(), 0);

  EXPECT_EQ(agent.Get("/metrics").status, 0) << "plain HTTP must not be served on a TLS port";
  EXPECT_EQ(HttpsGet(agent.port(), "/metrics", dir / "server.crt").status, 401);
  EXPECT_EQ(HttpsGet(agent.port(), "/healthz", dir / "server.crt").status, 401);
  EXPECT_EQ(HttpsGet(agent.port(), "/metrics", dir / "server.crt", "prometheus", "wrong").status,
            401);
  EXPECT_EQ(HttpsGet(agent.port(), "/metrics", dir / "server.crt", "nobody", "s3cret").status, 401);
  HttpReply ok = HttpsGet(agent.port(), "/metrics", dir / "server.crt", "prometheus", "s3cret");
  ASSERT_EQ(ok.status, 200);
  EXPECT_NE(ok.body.find("gpu_up{"), std::string::npos);

  int prom_port = FreePort();
  WriteFile(dir / "prometheus.yml",
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n"
            "  - job_name: gpuwarden\n    scheme: https\n    tls_config:\n      ca_file: " +
                (dir / "server.crt") +
                "\n    basic_auth:\n      username: prometheus\n      password: s3cret\n"
                "    static_configs:\n      - targets: ['127.0.0.1:" +
                std::to_string(agent.port()) + "']\n");
  Process prom({"prometheus", "--config.file=" + (dir / "prometheus.yml"),
                "--storage.tsdb.path=" + (dir / "data"),
                "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)},
               dir / "prometheus.log");
  auto query = [&](const std::string& q) {
    HttpReply r = HttpGet(prom_port, "/api/v1/query?query=" + UrlEncode(q));
    if (r.status != 200) return nlohmann::json::array();
    return nlohmann::json::parse(r.body)["data"]["result"];
  };
  ASSERT_TRUE(WaitFor(
      [&] {
        auto r = query("up{job=\"gpuwarden\"}");
        return r.size() == 1 && r[0]["value"][1] == "1";
      },
      60))
      << prom.Output();
  ASSERT_TRUE(WaitFor([&] { return query("gpu_up").size() == 8; }, 30));
}

TEST(ServeWebConfig, BadWebConfigStopsServeWithFileAndLine) {
  TempDir dir;
  WriteFile(dir / "web.yml", "tls_server_config:\n  cert_file: x.crt\n");
  std::string out;
  int code = RunCommand({GpuwardenBinary(), "serve", "--simulate", "demo", "--listen",
                         "127.0.0.1:0", "--web.config.file", dir / "web.yml"},
                        &out, 30);
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find(dir / "web.yml"), std::string::npos) << out;
}

}  // namespace
}  // namespace gw::testing
