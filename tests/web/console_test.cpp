#include "web/console.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "web/assets.h"

namespace gw::web {
namespace {

using nlohmann::json;

// The console on a real server on 127.0.0.1:0, over an in-memory store.
class ConsoleTest : public ::testing::Test {
 protected:
  void Start(bool with_history) {
    http::ServerOptions options;
    options.listen_address = "127.0.0.1:0";
    options.worker_threads = 2;
    auto server = http::Server::Create(options, nullptr);
    ASSERT_TRUE(server.ok()) << server.error().message;
    server_ = std::move(*server);
    ConsoleOptions console;
    console.version = "1.2.3<test>";
    console.rule_interval_s = 30;
    if (with_history) {
      console.queriers = [] {
        auto q = std::make_unique<tsdb::MemoryQuerier>();
        for (int t = 0; t < 60; ++t)
          (void)q->Append({{"__name__", "gpu_power_watts"}, {"gpu", "0"}}, 1700000000000 + t * 1000,
                          100 + t);
        return q;
      };
    }
    console.now_ms = [] { return int64_t{1700000060000}; };
    RegisterConsole(server_.get(), std::move(console));
    ASSERT_TRUE(server_->Start().ok());
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  }
  httplib::Result Get(const std::string& path, httplib::Headers headers = {}) {
    return client_->Get(path, headers);
  }
  std::unique_ptr<http::Server> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(ConsoleTest, IndexLinksTheVersionedAssetsAndEscapesTheVersion) {
  Start(true);
  auto res = Get("/");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(res->get_header_value("Cache-Control"), "no-cache");
  EXPECT_NE(res->get_header_value("Content-Security-Policy").find("script-src 'self'"),
            std::string::npos);
  const std::string version = AssetCatalog(EmbeddedAssets()).version();
  EXPECT_NE(res->body.find("/ui/" + version + "/app.js"), std::string::npos);
  EXPECT_NE(res->body.find("1.2.3&lt;test&gt;"), std::string::npos);
  EXPECT_EQ(res->body.find("{{"), std::string::npos) << "a placeholder was left in the page";
}

TEST_F(ConsoleTest, VersionedAssetsAreImmutableOthersRevalidate) {
  Start(true);
  const std::string version = AssetCatalog(EmbeddedAssets()).version();
  auto res = Get("/ui/" + version + "/app.js");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(res->get_header_value("Cache-Control"), "public, max-age=31536000, immutable");
  const std::string etag = res->get_header_value("ETag");
  EXPECT_EQ(etag.size(), 18u);

  auto old = Get("/ui/v-000000000000/app.js");
  ASSERT_TRUE(old);
  EXPECT_EQ(old->status, 200);
  EXPECT_EQ(old->get_header_value("Cache-Control"), "no-cache");
  EXPECT_EQ(old->body, res->body);

  auto plain = Get("/ui/style.css");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->status, 200);
  EXPECT_EQ(plain->get_header_value("Content-Type"), "text/css; charset=utf-8");
  EXPECT_EQ(plain->get_header_value("Cache-Control"), "no-cache");
}

TEST_F(ConsoleTest, AMatchingETagAnswers304WithoutABody) {
  Start(false);
  auto first = Get("/ui/chart.js");
  ASSERT_TRUE(first);
  auto again = Get("/ui/chart.js", {{"If-None-Match", first->get_header_value("ETag")}});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 304);
  EXPECT_TRUE(again->body.empty());
  auto changed = Get("/ui/chart.js", {{"If-None-Match", "\"0000000000000000\""}});
  ASSERT_TRUE(changed);
  EXPECT_EQ(changed->status, 200);
  auto index = Get("/", {{"If-None-Match", Get("/")->get_header_value("ETag")}});
  ASSERT_TRUE(index);
  EXPECT_EQ(index->status, 304);
}

TEST_F(ConsoleTest, UnknownAssetsAre404) {
  Start(false);
  for (const char* path :
       {"/ui/nope.js", "/ui/", "/ui/v-abc", "/ui/../console.cpp", "/ui/index.html"}) {
    auto res = Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 404) << path;
  }
}

TEST_F(ConsoleTest, LargeAssetsAreGzippedForClientsThatAcceptIt) {
  Start(false);
  client_->set_decompress(false);
  auto res = Get("/ui/style.css", {{"Accept-Encoding", "gzip"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->get_header_value("Content-Encoding"), "gzip");
}

TEST_F(ConsoleTest, ConsoleInfoSaysWhetherThereIsHistory) {
  Start(false);
  auto res = Get("/api/gw/v1/console");
  ASSERT_TRUE(res);
  json j = json::parse(res->body);
  EXPECT_EQ(j["data"]["version"], "1.2.3<test>");
  EXPECT_EQ(j["data"]["history"], false);
  EXPECT_EQ(j["data"]["rule_interval_s"], 30);  // the charts' episode gap follows it
  EXPECT_EQ(Get("/api/gw/v1/chart?metric=gpu_power_watts")->status, 404);  // no store, no charts
}

TEST_F(ConsoleTest, ChartApiReadsTheStoreAndRefusesBadParameters) {
  Start(true);
  auto res = Get("/api/gw/v1/chart?metric=gpu_power_watts&gpu=0&points=6");  // last hour up to now
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  json j = json::parse(res->body);
  ASSERT_EQ(j["data"]["series"].size(), 1u);
  EXPECT_EQ(j["data"]["series"][0]["max"][5], 159);  // the last 10 minutes hold t = 0..59 s
  EXPECT_TRUE(j["data"]["series"][0]["max"][0].is_null());
  auto bad = Get("/api/gw/v1/chart?metric=gpu_power_watts&points=lots");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(json::parse(bad->body)["errorType"], "bad_data");
}

// Every module the pages import, and every file index.html links, is in the binary: a missing or
// misnamed file would otherwise show up only as a blank page in a browser.
TEST(AssetCatalogTest, EveryImportAndLinkResolves) {
  AssetCatalog catalog(EmbeddedAssets());
  ASSERT_NE(catalog.Find("index.html"), nullptr);
  ASSERT_NE(catalog.Find("app.js"), nullptr);
  const std::regex import_re(R"(from '(\.{1,2}/[^']+)')");
  const std::regex link_re(R"(\{\{base\}\}/([^"]+)\")");
  int checked = 0;
  for (const EmbeddedAsset& a : EmbeddedAssets()) {
    const std::string body(a.body);
    const std::string name(a.name);
    const std::string dir =
        name.find('/') == std::string::npos ? "" : name.substr(0, name.rfind('/') + 1);
    for (std::sregex_iterator it(body.begin(), body.end(), import_re), end; it != end; ++it) {
      std::string target = (*it)[1];
      std::string base = dir;
      while (target.rfind("../", 0) == 0) {
        target = target.substr(3);
        base = base.empty() ? "" : base.substr(0, base.rfind('/', base.size() - 2) + 1);
      }
      if (target.rfind("./", 0) == 0) target = target.substr(2);
      EXPECT_NE(catalog.Find(base + target), nullptr) << name << " imports " << (*it)[1];
      ++checked;
    }
    for (std::sregex_iterator it(body.begin(), body.end(), link_re), end; it != end; ++it) {
      EXPECT_NE(catalog.Find((*it)[1].str()), nullptr) << name << " links " << (*it)[1];
      ++checked;
    }
  }
  EXPECT_GT(checked, 10);
}

TEST(AssetCatalogTest, TheVersionChangesWithAnyFile) {
  const EmbeddedAsset a[] = {{"a.js", "1"}, {"b.css", "x"}};
  const EmbeddedAsset b[] = {{"a.js", "2"}, {"b.css", "x"}};
  EXPECT_NE(AssetCatalog(a).version(), AssetCatalog(b).version());
  EXPECT_EQ(AssetCatalog(a).version(), AssetCatalog(a).version());
  EXPECT_EQ(AssetCatalog(a).Find("b.css")->content_type, "text/css; charset=utf-8");
  EXPECT_EQ(ContentTypeFor("x.bin"), "application/octet-stream");
  EXPECT_NE(ETagOf("1"), ETagOf("2"));
}

}  // namespace
}  // namespace gw::web
