// A synthetic snapshot with every slot, XID, process and self-metric filled in, so a rendering
// of it contains every family gpuwarden can export.
#ifndef GPUWARDEN_TESTS_COLLECT_FULL_SNAPSHOT_H_
#define GPUWARDEN_TESTS_COLLECT_FULL_SNAPSHOT_H_

#include "collect/exposition.h"
#include "collect/snapshot.h"
#include "nvml/abi.h"

namespace gw::collect {

inline Snapshot FullSnapshot(unsigned gpus = 2) {
  Snapshot s;
  s.generation = 7;
  s.taken_unix_seconds = 1764441600;
  s.stats.nvml_up = true;
  s.stats.driver_version = "550.127.08";
  s.stats.nvml_version = "12.550.127.08";
  s.stats.cuda_driver_version = "12.4";
  s.stats.fast_cycles = 10;
  s.stats.slow_cycles = 1;
  s.stats.last_fast_cycle_seconds = 0.0004;
  s.stats.last_slow_cycle_seconds = 0.002;
  s.stats.last_success_unix_seconds = 1764441600;
  for (size_t c = 0; c < kCallCount; ++c) {
    s.stats.calls[c].calls = 5;
    s.stats.calls[c].seconds_total = 0.001;
    s.stats.calls[c].max_seconds = 0.0005;
  }
  s.stats.calls[0].errors = 1;
  s.stats.calls[0].errors_by_code = {{NVML_ERROR_UNKNOWN, 1}};
  for (unsigned i = 0; i < gpus; ++i) {
    GpuSnapshot g;
    g.identity.index = i;
    g.identity.uuid = "GPU-0000000" + std::to_string(i) + "-aaaa-bbbb-cccc-dddddddddddd";
    g.identity.name = "NVIDIA H100 80GB HBM3";
    g.identity.serial = "165000000000" + std::to_string(i);
    g.identity.pci_bus_id = "00000000:1" + std::to_string(i) + ":00.0";
    g.identity.label_text = "gpu=\"" + std::to_string(i) + "\",uuid=\"" + g.identity.uuid + "\"";
    for (size_t k = 0; k < kSlotCount; ++k) g.values[k] = static_cast<double>(k) + 0.5;
    g.values[static_cast<size_t>(Slot::kUp)] = 1;
    for (size_t k = 0; k < kPeakWindowCount; ++k)
      g.peak_window[k] = g.value(kPeakWindows[k].first) + 1;  // the window's max: above the cycle's
    g.xid_counts = {{48, 2}, {79, 1}};
    g.processes = {{1234, 1.5e9, 0.4}, {5678, 2.5e9, 0.1}};
    g.hung[static_cast<size_t>(Call::kPower)] = true;
    g.gpm_supported = true;
    for (unsigned m = 0; m < 2; ++m) {  // two MIG instances: 3g.40gb (GI 1) and 1g.10gb (GI 5)
      MigInstanceSnapshot mig;
      mig.gpu_instance_id = m == 0 ? 1 : 5;
      mig.compute_instance_id = 0;
      mig.uuid =
          "MIG-" + std::to_string(i) + std::to_string(m) + "000000-1111-2222-3333-444444444444";
      mig.profile = m == 0 ? "3g.40gb" : "1g.10gb";
      mig.slice_ratio = m == 0 ? 3.0 / 7 : 1.0 / 7;
      mig.memory_total_bytes = m == 0 ? 40e9 : 10e9;
      mig.memory_used_bytes = 1e9;
      mig.memory_free_bytes = mig.memory_total_bytes - 1e9;
      for (size_t k = 0; k < kGpmCount; ++k) mig.gpm[k] = 0.25;
      mig.processes = {{4321, 1e9, kAbsent, mig.gpu_instance_id}};
      mig.label_text = g.identity.label_text + ",mig_instance=\"" +
                       std::to_string(mig.gpu_instance_id) + "\",mig_profile=\"" + mig.profile +
                       "\"";
      g.mig.push_back(mig);
    }
    for (unsigned l = 0; l < 2; ++l) {
      NvLinkSnapshot link;
      link.link = l;
      link.up = l == 0 ? 1 : 0;
      link.replay_errors = 1;
      link.recovery_errors = 2;
      link.crc_errors = 3;
      link.tx_bytes_per_second = 1e9;
      link.rx_bytes_per_second = 2e9;
      g.nvlinks.push_back(link);
    }
    s.gpus.push_back(g);
  }
  return s;
}

}  // namespace gw::collect

#endif  // GPUWARDEN_TESTS_COLLECT_FULL_SNAPSHOT_H_
