// hub/remote_querier.h — tsdb::Querier over a store's Prometheus HTTP API: PromQL over HTTP
// through the same Querier interface, so diagnose/ and report/ (promql::Engine over a Querier)
// run unchanged over the central store (docs/hub.md).
//
//   hub::RemoteQuerier querier(store);                  // the whole fleet
//   hub::RemoteQuerier node(store, {instance="node-07"}); // every Select scoped to one node
//   promql::Engine engine;
//   auto d = diagnose::Diagnose(querier, engine, options);
//
// Select sends one instant query of the range selector `{matchers}[range]` at maxt — both
// Prometheus and VictoriaMetrics answer it with the raw samples — and keeps the samples in
// [mint, maxt]. LabelNames and LabelValues use /api/v1/labels and /api/v1/label/<name>/values.
// Rollups are not offered (the engine reads raw samples). Answers go through Store's short
// cache. Thread-safe (Store is).
//
// Also here: ScopeQuery, which adds a label matcher to every selector of a PromQL text — how the
// hub's /api/v1/query?node=… answers for one node.
#ifndef GPUWARDEN_HUB_REMOTE_QUERIER_H_
#define GPUWARDEN_HUB_REMOTE_QUERIER_H_

#include <string>
#include <vector>

#include "hub/store.h"
#include "tsdb/storage.h"

namespace gw::hub {

class RemoteQuerier : public tsdb::Querier {
 public:
  // `scope`: matchers added to every Select (e.g. the node's). `store` must outlive this.
  explicit RemoteQuerier(Store* store, std::vector<tsdb::Matcher> scope = {})
      : store_(store), scope_(std::move(scope)) {}

  Status Select(const std::vector<tsdb::Matcher>& matchers, int64_t mint_ms, int64_t maxt_ms,
                std::vector<tsdb::SeriesData>* out) override;
  Status LabelNames(const std::vector<std::vector<tsdb::Matcher>>& matcher_sets, int64_t mint_ms,
                    int64_t maxt_ms, std::vector<std::string>* out) override;
  Status LabelValues(const std::string& name,
                     const std::vector<std::vector<tsdb::Matcher>>& matcher_sets, int64_t mint_ms,
                     int64_t maxt_ms, std::vector<std::string>* out) override;

 private:
  Status Labels(const std::string& path, const std::vector<std::vector<tsdb::Matcher>>& sets,
                int64_t mint_ms, int64_t maxt_ms, std::vector<std::string>* out);
  Store* store_;
  std::vector<tsdb::Matcher> scope_;
};

// `{a="1",b=~"x|y"}`: matchers as a PromQL series selector (values quoted as PromQL does).
std::string SelectorText(const std::vector<tsdb::Matcher>& matchers);

// `query` with `label="value"` added to every vector and range selector (replacing a matcher on
// that label the query had); Prometheus' parse error when `query` is not PromQL.
Expected<std::string> ScopeQuery(const std::string& query, const std::string& label,
                                 const std::string& value);

}  // namespace gw::hub

#endif  // GPUWARDEN_HUB_REMOTE_QUERIER_H_
