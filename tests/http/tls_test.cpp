// TLS from the web config: certificates are made with the openssl CLI at test time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include "http/server.h"
#include "test_util.h"

namespace gw::http {
namespace {

using ::testing::HasSubstr;

class TlsTest : public ::testing::Test {
 protected:
  // One set of keys for the whole suite: a self-signed server certificate for 127.0.0.1, a CA
  // with a client certificate it signed, and a self-signed "rogue" client certificate.
  static void SetUpTestSuite() {
    dir_ = new testutil::TempDir();
    const std::string cd = "cd '" + dir_->path() + "' && ";
    const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1";
    ready_ = testutil::Run(cd +
                           "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost"
                           " -addext subjectAltName=IP:127.0.0.1 -keyout server.key"
                           " -out server.crt") &&
             testutil::Run(cd + "openssl req -x509" + ec +
                           " -subj /CN=gw-test-ca -keyout ca.key -out ca.crt") &&
             testutil::Run(cd + "openssl req" + ec +
                           " -subj /CN=client -keyout client.key -out client.csr") &&
             testutil::Run(cd +
                           "openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key"
                           " -CAcreateserial -days 1 -out client.crt") &&
             testutil::Run(cd + "openssl req -x509" + ec +
                           " -subj /CN=rogue -keyout rogue.key -out rogue.crt");
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(ready_) << "openssl could not make test certificates"; }

  static std::string File(const std::string& name) { return dir_->File(name); }

  // Starts an HTTPS server whose web config is `tls_lines` under tls_server_config (relative
  // file names resolve against the temp dir, where web.yml is written), plus `extra`.
  void Start(const std::string& tls_lines, const std::string& extra = "") {
    std::string path = dir_->Write(
        "web.yml", "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n" +
                       tls_lines + extra);
    auto server =
        Server::Create({.listen_address = "127.0.0.1:0", .web_config_file = path}, nullptr);
    ASSERT_TRUE(server.ok()) << server.error().message;
    server_ = std::move(*server);
    EXPECT_TRUE(server_->tls());
    server_->Get("/hello", [](const Request&, Response& res) { res.body = "secure hi"; });
    ASSERT_TRUE(server_->Start().ok());
  }

  // A client that trusts the server's self-signed certificate, optionally presenting its own.
  std::unique_ptr<httplib::SSLClient> Client(const std::string& cert = "",
                                             const std::string& key = "") {
    auto cli = cert.empty() ? std::make_unique<httplib::SSLClient>("127.0.0.1", server_->port())
                            : std::make_unique<httplib::SSLClient>("127.0.0.1", server_->port(),
                                                                   File(cert), File(key));
    cli->set_ca_cert_path(File("server.crt"));
    cli->enable_server_certificate_verification(true);
    cli->set_connection_timeout(5);
    cli->set_read_timeout(5);
    return cli;
  }

  static bool Fetches(httplib::SSLClient& cli) {
    auto res = cli.Get("/hello");
    return res && res->status == 200 && res->body == "secure hi";
  }

  static testutil::TempDir* dir_;
  static bool ready_;
  std::unique_ptr<Server> server_;
};

testutil::TempDir* TlsTest::dir_ = nullptr;
bool TlsTest::ready_ = false;

TEST_F(TlsTest, ServesHttpsAndRefusesPlainHttp) {
  Start("");
  auto cli = Client();
  EXPECT_TRUE(Fetches(*cli));

  httplib::Client plain("127.0.0.1", server_->port());
  plain.set_connection_timeout(5);
  plain.set_read_timeout(5);
  auto res = plain.Get("/hello");
  EXPECT_FALSE(res && res->status == 200);
}

TEST_F(TlsTest, ClientMustTrustTheServer) {
  Start("");
  httplib::SSLClient cli("127.0.0.1", server_->port());
  cli.set_ca_cert_path(File("ca.crt"));  // not the server's issuer
  cli.enable_server_certificate_verification(true);
  cli.set_connection_timeout(5);
  EXPECT_FALSE(Fetches(cli));
}

TEST_F(TlsTest, RequireAndVerifyClientCert) {
  Start("  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n");
  EXPECT_FALSE(Fetches(*Client()));                           // no certificate
  EXPECT_FALSE(Fetches(*Client("rogue.crt", "rogue.key")));   // not signed by the CA
  EXPECT_TRUE(Fetches(*Client("client.crt", "client.key")));  // signed by the CA
}

TEST_F(TlsTest, RequireAnyClientCertDoesNotVerify) {
  Start("  client_auth_type: RequireAnyClientCert\n");
  EXPECT_FALSE(Fetches(*Client()));
  EXPECT_TRUE(Fetches(*Client("rogue.crt", "rogue.key")));
}

TEST_F(TlsTest, VerifyClientCertIfGiven) {
  Start("  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: ca.crt\n");
  EXPECT_TRUE(Fetches(*Client()));
  EXPECT_TRUE(Fetches(*Client("client.crt", "client.key")));
  EXPECT_FALSE(Fetches(*Client("rogue.crt", "rogue.key")));
}

TEST_F(TlsTest, MinVersionIsEnforced) {
  Start("  min_version: TLS13\n");
  auto old_client = Client();
  SSL_CTX_set_max_proto_version(old_client->ssl_context(), TLS1_2_VERSION);
  EXPECT_FALSE(Fetches(*old_client));
  EXPECT_TRUE(Fetches(*Client()));
}

TEST_F(TlsTest, CipherSuitesRestrictTls12) {
  Start("  max_version: TLS12\n  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384]\n");
  auto other = Client();
  SSL_CTX_set_cipher_list(other->ssl_context(), "ECDHE-RSA-AES128-GCM-SHA256");
  EXPECT_FALSE(Fetches(*other));
  auto same = Client();
  SSL_CTX_set_cipher_list(same->ssl_context(), "ECDHE-RSA-AES256-GCM-SHA384");
  EXPECT_TRUE(Fetches(*same));
}

TEST_F(TlsTest, TlsWithBasicAuth) {
  Start("", "basic_auth_users:\n  alice: " + testutil::BcryptHash("pw") + "\n");
  auto cli = Client();
  auto res = cli->Get("/hello");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  cli->set_basic_auth("alice", "pw");
  EXPECT_TRUE(Fetches(*cli));
}

TEST_F(TlsTest, BadKeyMaterialFailsAtCreate) {
  auto create = [&](const std::string& yaml) {
    std::string path = dir_->Write("bad.yml", yaml);
    auto server =
        Server::Create({.listen_address = "127.0.0.1:0", .web_config_file = path}, nullptr);
    return server.ok() ? std::string("created") : server.error().message;
  };
  EXPECT_THAT(create("tls_server_config:\n  cert_file: absent.crt\n  key_file: server.key\n"),
              HasSubstr("cert_file " + File("absent.crt") + ": cannot read: No such file"));
  EXPECT_THAT(create("tls_server_config:\n  cert_file: server.crt\n  key_file: client.key\n"),
              HasSubstr("key_file " + File("client.key") + " does not match cert_file"));
  EXPECT_THAT(create("tls_server_config:\n  cert_file: bad.yml\n  key_file: server.key\n"),
              HasSubstr("not a PEM certificate"));
  EXPECT_THAT(create("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                     "  client_auth_type: RequireAndVerifyClientCert\n"
                     "  client_ca_file: absent-ca.crt\n"),
              HasSubstr("client_ca_file " + File("absent-ca.crt") + ": cannot read"));
}

}  // namespace
}  // namespace gw::http
