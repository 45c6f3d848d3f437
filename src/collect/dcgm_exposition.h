// collect/dcgm_exposition.h — the device families under dcgm-exporter's names and labels.
//
// `exposition.names: dcgm-exporter` (or `both`) makes /metrics write the snapshot's device
// readings the way NVIDIA's dcgm-exporter (release 4.5.3-4.8.2) writes them, so that its Grafana
// dashboard and the alerts built on it keep working when gpuwarden replaces it
// (docs/dcgm-exporter.md has every field, its unit and source, and what is left out and why):
//
//   DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-…",pci_bus_id="00000000:07:00.0",device="nvidia0",
//       modelName="NVIDIA H100 80GB HBM3",Hostname="node1",DCGM_FI_DRIVER_VERSION="550.54.15"} 47
//
// - names: DCGM field names (DCGM_FI_DEV_*, DCGM_FI_PROF_*); types as dcgm-exporter's counter CSV
//   says; units as DCGM's: MHz, °C, W, mJ, MiB, percent 0–100 for DEV utilizations, ratios 0–1
//   for PROF activities, bytes per second for PROF PCIe/NVLink, nanoseconds for violations.
// - labels: gpu, UUID, pci_bus_id, device ("nvidia<index>"), modelName, Hostname, the driver
//   version as DCGM_FI_DRIVER_VERSION; on a MIG-enabled GPU every series is written per MIG
//   device instead, with GPU_I_PROFILE and GPU_I_ID (dcgm-exporter's default "flex" device
//   selection: device-wide readings repeat on each instance, memory and profiling are the
//   instance's own); container, namespace and pod when the pod hook names them.
// - counters are typed `unknown` in OpenMetrics (their names lack `_total`, which OpenMetrics
//   requires of a counter's samples); text 0.0.4, what dcgm-exporter serves, keeps `counter`.
// - absent readings are left out, as everywhere in gpuwarden; DCGM_FI_DEV_XID_ERRORS is 0 while
//   a GPU has had no XID (DCGM's value for "none").
//
// Threading: a DcgmExposition is used by one thread at a time (collect::MetricsPage renders under
// its mutex). It keeps label text and the XID history between renders in buffers it reuses, so a
// render allocates nothing once the fleet's shape is stable.
#ifndef GPUWARDEN_COLLECT_DCGM_EXPOSITION_H_
#define GPUWARDEN_COLLECT_DCGM_EXPOSITION_H_

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collect/catalogue.h"
#include "collect/snapshot.h"
#include "expo/expo.h"

namespace gw::collect {

// `exposition.names`: which names the device families get on /metrics. The store, the rules and
// the console always use gpuwarden's names.
enum class ExpositionNames { kGpuwarden, kDcgmExporter, kBoth };
// "gpuwarden", "dcgm-exporter", "both"; false for anything else. Inline: the configuration
// (and its fuzz target) reads the setting without linking the writer.
inline bool ParseExpositionNames(std::string_view text, ExpositionNames* out) {
  if (text == "gpuwarden")
    *out = ExpositionNames::kGpuwarden;
  else if (text == "dcgm-exporter")
    *out = ExpositionNames::kDcgmExporter;
  else if (text == "both")
    *out = ExpositionNames::kBoth;
  else
    return false;
  return true;
}

inline std::string_view ExpositionNamesText(ExpositionNames names) {
  switch (names) {
    case ExpositionNames::kGpuwarden:
      return "gpuwarden";
    case ExpositionNames::kDcgmExporter:
      return "dcgm-exporter";
    case ExpositionNames::kBoth:
      return "both";
  }
  return "gpuwarden";
}

// One dcgm-exporter field gpuwarden writes.
enum class DcgmSource : uint8_t {
  kSlot,  // slot (+ plus) × scale; per MIG device: the GPU's value
  kGpm,   // per GPU: slot × scale; per MIG device: the instance's GPM signal `gpm` × gpm_scale
  kMigMemory,  // per GPU: slot × scale; per MIG device: its memory (mig_memory) × scale
  kLastXid,    // the XID code seen last (0 if none)
};
enum class MigMemory : uint8_t { kNone, kUsed, kFree };

struct DcgmField {
  std::string_view name;  // DCGM_FI_…
  MetricType type;        // as dcgm-exporter's CSV types it
  std::string_view unit;  // DCGM's unit: "MHz", "C", "W", "mJ", "MiB", "%", "ratio", "B/s", "B",
                          // "ns", "" (a count or a code)
  std::string_view help;  // dcgm-exporter's help text
  DcgmSource source;
  Slot slot;                 // the gpuwarden reading (Slot::kCount for kLastXid)
  double scale;              // gpuwarden unit → DCGM unit
  Slot plus = Slot::kCount;  // a second slot added before scaling (NVLink tx + rx, …)
  Gpm gpm = Gpm::kCount;     // kGpm: the MIG device's signal
  double gpm_scale = 1;      // GpmValues unit → DCGM unit (ratios stay, bytes/s stay)
  MigMemory mig_memory = MigMemory::kNone;
  bool integer = false;  // DCGM reports a whole number: the value is rounded
};
// Every field, in the order written (dcgm-exporter's CSV order, then the extra PROF fields).
std::span<const DcgmField> DcgmFields();

// What dcgm-exporter's Kubernetes mapping adds to a GPU's series. Views valid during the call.
struct DcgmPodLabels {
  std::string_view pod, pod_namespace, container;
};

struct DcgmOptions {
  std::string hostname;  // the Hostname label; "" leaves it out
  // Hook for the Kubernetes attribution: fills `out` and returns true when the GPU or MIG device
  // with `uuid` belongs to a pod. Called once per GPU (or MIG device) per render, on the render
  // thread; must not block. Unset: no pod labels. `serve` sets it with jobs.scheduler:
  // kubernetes (serve::JobsService::PodOfDevice; docs/dcgm-exporter.md).
  std::function<bool(std::string_view uuid, DcgmPodLabels* out)> pod_of;
};

// This machine's name as dcgm-exporter's Hostname label has it (gethostname); "" if unknown.
std::string DcgmHostname();

class DcgmExposition {
 public:
  explicit DcgmExposition(DcgmOptions options) : options_(std::move(options)) {}

  // Writes every DcgmFields() family that has a value in `snapshot`.
  void Write(const Snapshot& snapshot, expo::Writer* writer);

 private:
  struct GpuState {
    std::string uuid;                                 // whose XID history this is
    std::vector<std::pair<unsigned, uint64_t>> xids;  // counts at the last render
    unsigned last_xid = 0;
    std::string labels;                        // the GPU's label text (a GPU without MIG devices)
    std::vector<std::string> instance_labels;  // one per MIG device
  };
  void Prepare(const Snapshot& snapshot);
  void AppendLabels(const Snapshot& snapshot, const GpuSnapshot& gpu,
                    const MigInstanceSnapshot* instance, std::string* out) const;

  DcgmOptions options_;
  std::vector<GpuState> gpus_;
  std::string scratch_;
};

}  // namespace gw::collect

#endif  // GPUWARDEN_COLLECT_DCGM_EXPOSITION_H_
