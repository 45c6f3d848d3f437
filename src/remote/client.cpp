#include "remote/client.h"

#include <snappy.h>

#include <utility>

#include "http/client.h"

namespace gw::remote {

struct Client::Impl {
  std::unique_ptr<http::PostClient> http;
  std::string encoded, compressed;  // reused between sends
};

Expected<std::unique_ptr<Client>> Client::Create(Endpoint endpoint) {
  http::PostClientOptions o;
  for (const auto& [k, v] : endpoint.headers) o.headers.emplace_back(k, v);
  // The protocol's headers (docs/remote-write.md), after the endpoint's own so they win.
  o.headers.emplace_back("Content-Encoding", "snappy");
  o.headers.emplace_back("X-Prometheus-Remote-Write-Version", "0.1.0");
  o.headers.emplace_back("User-Agent", "gpuwarden");
  o.basic_auth_user = endpoint.basic_auth_user;
  o.basic_auth_password = endpoint.basic_auth_password;
  o.bearer_token = endpoint.bearer_token;
  o.ca_file = endpoint.ca_file;
  o.insecure_skip_verify = endpoint.insecure_skip_verify;
  o.timeout_s = endpoint.timeout_s;
  auto http = http::PostClient::Create(endpoint.url, std::move(o));
  if (!http.ok()) return http.error();
  auto impl = std::make_unique<Impl>();
  impl->http = std::move(*http);
  return std::unique_ptr<Client>(new Client(std::move(endpoint), std::move(impl)));
}

Client::Client(Endpoint endpoint, std::unique_ptr<Impl> impl)
    : endpoint_(std::move(endpoint)), impl_(std::move(impl)) {}
Client::~Client() = default;

SendResult Client::Send(const std::vector<TimeSeries>& series,
                        const std::vector<MetricMetadata>& metadata) {
  impl_->encoded.clear();
  EncodeWriteRequest(series, metadata, &impl_->encoded);
  impl_->compressed.clear();
  snappy::Compress(impl_->encoded.data(), impl_->encoded.size(), &impl_->compressed);
  SendResult r;
  r.bytes = impl_->compressed.size();
  auto reply = impl_->http->Post(impl_->compressed, "application/x-protobuf");
  if (!reply.ok()) {
    r.outcome = SendResult::kRetry;
    r.error = reply.error().message;
    r.answer_lost = impl_->http->answer_lost();
    return r;
  }
  r.status = reply->status;
  if (r.status >= 200 && r.status < 300) return r;
  std::string text = reply->body.substr(0, 300);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  r.error = "HTTP " + std::to_string(r.status) + (text.empty() ? "" : ": " + text);
  // 5xx and 429 may succeed later; any other answer refuses this data for good.
  r.outcome = r.status >= 500 || r.status == 429 ? SendResult::kRetry : SendResult::kDrop;
  return r;
}

}  // namespace gw::remote
