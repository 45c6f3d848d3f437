// remote/client.h — one remote-write POST to one endpoint (Prometheus remote write 1.0,
// docs/remote-write.md): the WriteRequest snappy-compressed, the protocol's headers, auth and
// TLS as the endpoint says, and the answer classified the way the protocol asks senders to act.
//
//   auto client = remote::Client::Create({.url = "http://vm:8428/api/v1/write"});
//   if (!client.ok()) ...                           // not an http(s) URL
//   remote::SendResult r = (*client)->Send(batch);  // r.outcome: kSent, kRetry, kDrop
//
// kRetry: no answer (connection refused, timeout, TLS), 5xx, or 429 — the data may be sent again
// later (after a backoff, remote::Backoff). kDrop: any other 4xx — the receiver refuses this
// data (bad labels, out of order, too old) and will refuse it again; count it, never resend.
// Thread-safety: a Client is used by one thread (its endpoint's sender).
#ifndef GPUWARDEN_REMOTE_CLIENT_H_
#define GPUWARDEN_REMOTE_CLIENT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "remote/write_request.h"

namespace gw::remote {

struct Endpoint {
  std::string url;                             // http(s)://host[:port]/path
  std::map<std::string, std::string> headers;  // extra headers (a tenant id, ...)
  std::string basic_auth_user, basic_auth_password;
  std::string bearer_token;
  std::string ca_file;  // TLS: verify the server against this CA instead of the system's
  bool insecure_skip_verify = false;
  double timeout_s = 30;
};

struct SendResult {
  enum Outcome { kSent, kRetry, kDrop } outcome = kSent;
  int status = 0;         // HTTP status; 0 when no answer came
  std::string error;      // one line: what went wrong, with the receiver's own words
  std::size_t bytes = 0;  // compressed body size
  // kRetry only: the request went out whole and no answer came, so the receiver may have
  // stored it (remote::Queue then treats a later "out of order" refusal of the same request as
  // already stored, docs/remote-write.md).
  bool answer_lost = false;
};

class Client {
 public:
  static Expected<std::unique_ptr<Client>> Create(Endpoint endpoint);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Encodes, compresses and POSTs one WriteRequest. Reuses its buffers between calls.
  SendResult Send(const std::vector<TimeSeries>& series,
                  const std::vector<MetricMetadata>& metadata = {});

  const Endpoint& endpoint() const { return endpoint_; }

 private:
  struct Impl;
  Client(Endpoint endpoint, std::unique_ptr<Impl> impl);
  Endpoint endpoint_;
  std::unique_ptr<Impl> impl_;
};

// Exponential backoff between retries: min_s, doubled per consecutive failure, capped at max_s;
// reset by a success. The protocol's defaults (Prometheus: 30 ms to 5 s) are these defaults.
class Backoff {
 public:
  Backoff(double min_s = 0.03, double max_s = 5) : min_s_(min_s), max_s_(max_s) {}
  double NextDelayS() {
    double d = min_s_;
    for (unsigned i = 0; i < failures_ && d < max_s_; ++i) d *= 2;
    ++failures_;
    return d < max_s_ ? d : max_s_;
  }
  void Reset() { failures_ = 0; }
  unsigned failures() const { return failures_; }

 private:
  double min_s_, max_s_;
  unsigned failures_ = 0;
};

}  // namespace gw::remote

#endif  // GPUWARDEN_REMOTE_CLIENT_H_
