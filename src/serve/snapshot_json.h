// serve/snapshot_json.h — every GPU's state now as JSON for programs: GET /api/snapshot and
// `gpuwarden snapshot --json` (schema in docs/metrics.md, "snapshot --json").
#ifndef GPUWARDEN_SERVE_SNAPSHOT_JSON_H_
#define GPUWARDEN_SERVE_SNAPSHOT_JSON_H_

#include <string>

#include "collect/snapshot.h"

namespace gw::serve {

std::string SnapshotJson(const collect::Snapshot& snapshot);

}  // namespace gw::serve

#endif  // GPUWARDEN_SERVE_SNAPSHOT_JSON_H_
