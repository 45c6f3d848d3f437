// cli/snapshot_view.h — `gpuwarden snapshot`: every GPU's state now, as a table.
#ifndef GPUWARDEN_CLI_SNAPSHOT_VIEW_H_
#define GPUWARDEN_CLI_SNAPSHOT_VIEW_H_

#include <string>

#include "collect/snapshot.h"

namespace gw::cli {

// A table for people: one line per GPU (SM active where the GPU has profiling counters, "-"
// elsewhere), under it its MIG mode and instances and its NVLink links, then the health problems
// of each GPU that has any.
std::string SnapshotTable(const collect::Snapshot& snapshot);

// The same as JSON for programs: serve::SnapshotJson (serve/snapshot_json.h).

// Table helpers shared by the CLI's views: UTC time "YYYY-MM-DD HH:MM:SSZ", and `s` padded
// with spaces to `width`.
std::string UtcTimestamp(double unix_seconds);
std::string PadRight(std::string s, size_t width);

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_SNAPSHOT_VIEW_H_
