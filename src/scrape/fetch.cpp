#include "scrape/fetch.h"

#include <httplib.h>

#include <chrono>
#include <cstdio>

#include "base/secret_file.h"

namespace gw::scrape {

namespace {

void SetTimeout(httplib::Client* client, double seconds) {
  const auto whole = static_cast<time_t>(seconds);
  const auto micros = static_cast<time_t>((seconds - static_cast<double>(whole)) * 1e6);
  client->set_connection_timeout(whole, micros);
  client->set_read_timeout(whole, micros);
  client->set_write_timeout(whole, micros);
}

}  // namespace

struct Fetcher::Impl {
  std::unique_ptr<httplib::Client> client;
  std::string path;
  httplib::Headers headers;
  double timeout_s = 10;
};

Fetcher::Fetcher(const TargetConfig& target) : impl_(std::make_unique<Impl>()) {
  const std::string& url = target.url;
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) {
    setup_error_ = "'" + url + "' is not an http(s) URL";
    return;
  }
  const size_t path_start = url.find('/', scheme_end + 3);
  impl_->path = path_start == std::string::npos ? "/" : url.substr(path_start);
  impl_->client = std::make_unique<httplib::Client>(url.substr(0, path_start));
  if (!impl_->client->is_valid()) {
    setup_error_ = "'" + url + "' is not an http(s) URL";
    impl_->client.reset();
    return;
  }
  impl_->timeout_s = target.effective_timeout_s();
  SetTimeout(impl_->client.get(), impl_->timeout_s);
  impl_->client->set_keep_alive(true);
  if (!target.basic_auth_username.empty()) {
    std::string password;
    if (!target.basic_auth_password_file.empty()) {
      auto secret = ReadSecretFile(target.basic_auth_password_file);
      if (secret.ok())
        password = std::move(*secret);
      else
        setup_error_ = "basic_auth.password_file " + secret.error().message;
    }
    impl_->client->set_basic_auth(target.basic_auth_username, password);
  }
  if (!target.bearer_token_file.empty()) {
    auto token = ReadSecretFile(target.bearer_token_file);
    if (!token.ok()) setup_error_ = "bearer_token_file " + token.error().message;
    impl_->client->set_bearer_token_auth(token.ok() ? *token : std::string());
  }
  char timeout_text[32];
  std::snprintf(timeout_text, sizeof timeout_text, "%g", impl_->timeout_s);
  impl_->headers = {
      {"Accept",
       "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.4,*/*;q=0.1"},
      {"User-Agent", "gpuwarden-scrape"},
      {"X-Prometheus-Scrape-Timeout-Seconds", timeout_text}};
}

Fetcher::~Fetcher() = default;

Status Fetcher::Get(std::string* body) {
  body->clear();
  if (!setup_error_.empty()) return Error{setup_error_};
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(impl_->timeout_s));
  bool too_large = false, too_slow = false;
  auto result =
      impl_->client->Get(impl_->path.c_str(), impl_->headers, [&](const char* data, size_t length) {
        if (body->size() + length > kMaxBodyBytes) {
          too_large = true;
          return false;
        }
        if (std::chrono::steady_clock::now() > deadline) {
          too_slow = true;
          return false;
        }
        body->append(data, length);
        return true;
      });
  if (too_large)
    return Error{"the page is larger than " + std::to_string(kMaxBodyBytes >> 20) + " MiB"};
  if (too_slow || (!result && result.error() == httplib::Error::Read))
    return Error{"timed out after " + FormatDuration(impl_->timeout_s)};
  if (!result) {
    if (result.error() == httplib::Error::Connection)
      return Error{"cannot connect (connection refused or timed out)"};
    return Error{httplib::to_string(result.error())};
  }
  if (result->status != 200) {
    body->clear();
    return Error{"HTTP " + std::to_string(result->status)};
  }
  return Status::Ok();
}

}  // namespace gw::scrape
