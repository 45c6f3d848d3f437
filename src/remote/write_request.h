// remote/write_request.h — Prometheus remote write 1.0's WriteRequest: the message, its protobuf
// encoding written by hand (no generated code, no libprotobuf), and a strict decoder (tests,
// fuzzing, and a receiver one day). docs/remote-write.md describes the wire format.
//
//   std::vector<remote::TimeSeries> batch = ...;     // labels sorted by name, __name__ included
//   std::string body;
//   remote::EncodeWriteRequest(batch, {}, &body);    // appends; reuse `body` across batches
//
// Encoding allocates nothing beyond `out`'s growth. Decoding rejects truncated or malformed input
// with the byte offset; unknown fields are skipped, as protobuf readers do.
#ifndef GPUWARDEN_REMOTE_WRITE_REQUEST_H_
#define GPUWARDEN_REMOTE_WRITE_REQUEST_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/error.h"

namespace gw::remote {

struct Label {
  std::string name;
  std::string value;
  bool operator==(const Label&) const = default;
};

struct Sample {
  double value = 0;
  std::int64_t timestamp_ms = 0;
};

struct TimeSeries {
  std::vector<Label> labels;    // sorted by name; receivers reject duplicates and empty values
  std::vector<Sample> samples;  // in timestamp order
};

// MetricMetadata.type: the values of Prometheus' MetricType enum.
enum class MetricType : int {
  kUnknown = 0,
  kCounter = 1,
  kGauge = 2,
  kHistogram = 3,
  kGaugeHistogram = 4,
  kSummary = 5,
  kInfo = 6,
  kStateSet = 7,
};

struct MetricMetadata {
  MetricType type = MetricType::kUnknown;
  std::string family;  // metric_family_name
  std::string help;
  std::string unit;
};

// Appends the WriteRequest {timeseries, metadata} to `out`.
void EncodeWriteRequest(const std::vector<TimeSeries>& series,
                        const std::vector<MetricMetadata>& metadata, std::string* out);

struct WriteRequest {
  std::vector<TimeSeries> series;
  std::vector<MetricMetadata> metadata;
};
Expected<WriteRequest> DecodeWriteRequest(std::string_view bytes);

}  // namespace gw::remote

#endif  // GPUWARDEN_REMOTE_WRITE_REQUEST_H_
