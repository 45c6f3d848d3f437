// config/remote_config.h — the `remote_write` section of the configuration file: the endpoints the
// agent streams its history to (Prometheus remote write; docs/remote-write.md). Prometheus' own
// shape, so a block copied from a prometheus.yml loads here; the subset of write relabelling we
// support and our `downsample` extension are described in docs/remote-write.md.
//
//   remote_write:
//     - url: http://vm:8428/api/v1/write
//       name: central                       # remote_name label of the self-metrics; unique
//       headers: {X-Scope-OrgID: site-a}
//       basic_auth: {username: gw, password_file: /etc/gpuwarden/rw-password}
//       authorization: {type: Bearer, credentials_file: /etc/gpuwarden/rw-token}
//       tls_config: {ca_file: /etc/gpuwarden/ca.pem, insecure_skip_verify: false}
//       remote_timeout: 30s
//       queue_config: {capacity: 10000, max_samples_per_send: 2000, batch_send_deadline: 5s,
//                      min_backoff: 30ms, max_backoff: 5s}
//       write_relabel_configs:
//         - {source_labels: [__name__], regex: 'gpu_process_.*', action: drop}
//       downsample: {interval: 15s, aggregate: [max, avg]}
//
// Errors read "FILE:LINE: remote_write[i].key: what is wrong, got 'TEXT'".
#ifndef GPUWARDEN_CONFIG_REMOTE_CONFIG_H_
#define GPUWARDEN_CONFIG_REMOTE_CONFIG_H_

#include <map>
#include <string>
#include <vector>

#include "base/error.h"

namespace YAML {
class Node;
}

namespace gw::config {

// One write_relabel_configs entry: keep or drop a series by a fully anchored RE2 regex over the
// values of source_labels joined by separator (Prometheus' semantics for these two actions).
struct WriteRelabelRule {
  bool keep = true;  // action: keep (true) or drop (false)
  std::vector<std::string> source_labels;
  std::string separator = ";";
  std::string regex = "(.*)";
};

struct RemoteWriteConfig {
  std::string url;
  std::string name;  // "" = a short hash of the url, as Prometheus names unnamed queues
  std::map<std::string, std::string> headers;
  std::string basic_auth_username, basic_auth_password, basic_auth_password_file;
  // authorization (bearer_token / bearer_token_file are the older spelling of type Bearer)
  std::string authorization_type = "Bearer", authorization_credentials,
              authorization_credentials_file;
  std::string tls_ca_file;
  bool tls_insecure_skip_verify = false;
  double remote_timeout_s = 30;
  // queue_config
  long long capacity = 10000;             // samples read from the store ahead of sending
  long long max_samples_per_send = 2000;  // samples in one request
  double batch_send_deadline_s = 5;       // the longest a sample waits for a fuller request
  double min_backoff_s = 0.03, max_backoff_s = 5;
  std::vector<WriteRelabelRule> write_relabel_configs;
  // downsample (our extension): 0 = send every sample as stored.
  double downsample_interval_s = 0;
  std::vector<std::string> downsample_aggregate;  // of min, max, avg, sum, count, last
};

// The aggregates `downsample.aggregate` accepts, in the order they are documented.
const std::vector<std::string>& DownsampleAggregates();

// Parses the list under remote_write from `file` (for error positions) into `out`.
Status ParseRemoteWrite(const std::string& file, const YAML::Node& node,
                        std::vector<RemoteWriteConfig>* out);

// The name an endpoint's self-metrics and progress file use: its `name`, or a hash of its url.
std::string RemoteWriteName(const RemoteWriteConfig& endpoint);

}  // namespace gw::config

#endif  // GPUWARDEN_CONFIG_REMOTE_CONFIG_H_
