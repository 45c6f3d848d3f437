// A hand-built snapshot of datacenter GPUs, shared by the snapshot JSON tests (tests/serve) and the
// `gpuwarden top` tests: GPU 0 is an H100 split into MIG instances (3g.40gb with profiling values
// and two processes, 2g.20gb and 1g.10gb without them) and about to leave MIG mode at the next
// reset; GPU 1 is an HGX H100 with 18 NVLink links, link 3 down and CRC errors on link 5, busy
// but hollow (99 % utilization, 4 % SM active); GPU 2 is an A100 without GPM (no profiling value
// at all: absent, not 0).
#ifndef GPUWARDEN_TESTS_TOP_DATACENTER_SNAPSHOT_H_
#define GPUWARDEN_TESTS_TOP_DATACENTER_SNAPSHOT_H_

#include <memory>
#include <string>

#include "top/test_frames.h"

namespace gw::top {

inline void SetGpm(collect::MigInstanceSnapshot& m, collect::Gpm g, double v) {
  m.gpm[static_cast<size_t>(g)] = v;
}

inline collect::MigInstanceSnapshot TestMig(unsigned gi, const std::string& profile, double slices,
                                            double total_gib, double used_gib) {
  collect::MigInstanceSnapshot m;
  m.gpu_instance_id = gi;
  m.compute_instance_id = 0;
  m.uuid = "MIG-" + std::to_string(gi) + "0000000-1111-5222-8333-444444444444";
  m.profile = profile;
  m.slice_ratio = slices / 7;
  m.memory_total_bytes = total_gib * (1 << 30);
  m.memory_used_bytes = used_gib * (1 << 30);
  m.memory_free_bytes = (total_gib - used_gib) * (1 << 30);
  return m;
}

inline std::shared_ptr<collect::Snapshot> DatacenterSnapshot() {
  using collect::Gpm;
  using collect::Slot;
  auto s = std::make_shared<collect::Snapshot>();
  s->generation = 7;
  s->taken_unix_seconds = 1700000600;
  s->stats.nvml_up = true;
  s->stats.driver_version = "570.86.15";

  collect::GpuSnapshot mig = TestGpu(0, 0.6, 55);
  auto set = [](collect::GpuSnapshot& g, Slot slot, double v) {
    g.values[static_cast<size_t>(slot)] = v;
  };
  mig.gpm_supported = true;
  set(mig, Slot::kSmActive, 0.41);
  set(mig, Slot::kSmOccupancy, 0.22);
  set(mig, Slot::kTensorAny, 0.30);
  set(mig, Slot::kDramActive, 0.35);
  set(mig, Slot::kMigEnabledCurrent, 1);
  set(mig, Slot::kMigEnabledPending, 0);
  set(mig, Slot::kMigInstances, 3);
  collect::MigInstanceSnapshot big = TestMig(1, "3g.40gb", 3, 39.5, 20.0);
  SetGpm(big, Gpm::kSmActive, 0.83);
  SetGpm(big, Gpm::kSmOccupancy, 0.40);
  SetGpm(big, Gpm::kTensorAny, 0.61);
  SetGpm(big, Gpm::kFp16, 0.12);
  big.processes = {{5101, 12.0 * (1 << 30), collect::kAbsent, 1},
                   {5102, 8.0 * (1 << 30), collect::kAbsent, 1}};
  mig.mig.push_back(big);
  mig.mig.push_back(TestMig(5, "2g.20gb", 2, 19.5, 0.0));
  collect::MigInstanceSnapshot small = TestMig(13, "1g.10gb", 1, 9.75, 4.5);
  small.memory_used_bytes = collect::kAbsent;  // a failed read: left out, not 0
  small.memory_free_bytes = collect::kAbsent;
  mig.mig.push_back(small);
  mig.processes = {{5101, 12.0 * (1 << 30), collect::kAbsent, 1},
                   {5102, 8.0 * (1 << 30), collect::kAbsent, 1}};
  s->gpus.push_back(mig);

  collect::GpuSnapshot hgx = TestGpu(1, 0.99, 62);
  hgx.gpm_supported = true;
  set(hgx, Slot::kSmActive, 0.04);
  set(hgx, Slot::kSmOccupancy, 0.02);
  set(hgx, Slot::kTensorAny, 0.0);  // measured zero: kept, it is not absent
  set(hgx, Slot::kDramActive, 0.03);
  set(hgx, Slot::kMigEnabledCurrent, 0);
  set(hgx, Slot::kMigEnabledPending, 0);
  set(hgx, Slot::kNvlinkLinks, 18);
  set(hgx, Slot::kNvlinkLinksDown, 1);
  set(hgx, Slot::kNvlinkTxRate, 120e9);
  set(hgx, Slot::kNvlinkRxRate, 118e9);
  set(hgx, Slot::kNvlinkReplayErrors, 2);
  set(hgx, Slot::kNvlinkRecoveryErrors, 1);
  set(hgx, Slot::kNvlinkCrcFlitErrors, 4096);
  set(hgx, Slot::kNvlinkCrcDataErrors, 0);
  for (unsigned l = 0; l < 18; ++l) {
    collect::NvLinkSnapshot link;
    link.link = l;
    link.up = l == 3 ? 0 : 1;
    link.replay_errors = l == 5 ? 2 : 0;
    link.recovery_errors = l == 3 ? 1 : 0;
    link.crc_errors = l == 5 ? 4096 : 0;
    link.tx_bytes_per_second = l == 3 ? 0 : 120e9 / 17;
    link.rx_bytes_per_second = l == 3 ? 0 : 118e9 / 17;
    hgx.nvlinks.push_back(link);
  }
  hgx.xid_counts = {{74, 3}};
  s->gpus.push_back(hgx);

  collect::GpuSnapshot old = TestGpu(2, 0.7, 50);
  old.identity.name = "NVIDIA A100-SXM4-80GB";
  old.gpm_supported = false;
  s->gpus.push_back(old);
  return s;
}

}  // namespace gw::top

#endif  // GPUWARDEN_TESTS_TOP_DATACENTER_SNAPSHOT_H_
