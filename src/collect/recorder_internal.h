// collect/recorder_internal.h — label helpers shared by recorder.cpp and recorder_datacenter.cpp
// (internal to collect/).
#ifndef GPUWARDEN_COLLECT_RECORDER_INTERNAL_H_
#define GPUWARDEN_COLLECT_RECORDER_INTERNAL_H_

#include <string_view>

#include "collect/snapshot.h"
#include "tsdb/storage.h"

namespace gw::collect {

// Appends a slot's fixed extra labels (`reason="sw_power_cap"`, `type="a",scope="b"`) to `out`.
void AddSlotLabels(std::string_view text, tsdb::Labels* out);
// {__name__=name, gpu=index, uuid=…}, unsorted.
tsdb::Labels GpuLabels(std::string_view name, const GpuIdentity& id);

}  // namespace gw::collect

#endif  // GPUWARDEN_COLLECT_RECORDER_INTERNAL_H_
