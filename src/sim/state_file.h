// sim/state_file.h — the simulator's side channel: each simulated GPU's state in a small
// memory-mapped file, for programs that stand in for GPU work (gw-inference-sim) and must react
// to their GPU's simulated clocks and memory without calling NVML themselves.
//
// With GPUWARDEN_SIM_STATE_DIR=DIR in the environment of the process that initializes
// libnvml-sim.so, the library writes DIR/gpu<INDEX>.state for every GPU at nvmlInit (written
// under a temporary name, then renamed into place) and rewrites the record whenever a device has
// completed new physics steps inside an NVML call on it: one seqlock-guarded store of 22 words,
// nothing when the device did not move. The record therefore follows the simulation as the
// collector reads it (every collection cycle), in either clock mode. A GPU that fell off the bus
// is published once more with `lost` = 1 and the virtual time the call saw. At the last
// nvmlShutdown `alive` becomes 0.
//
// Record (version 1, native byte order, 8-byte words read and written atomically; words 22 and
// 23 were added later and read 0 from an older writer):
//   word  0      magic "GWSIMST1"
//   word  1      sequence: odd while the writer is updating (a reader retries)
//   word  2      GPU index
//   word  3      virtual_ms: virtual time of the last completed 100 ms step
//   word  4, 5   sm_clock_mhz, max_sm_clock_mhz
//   word  6      clock_event_reasons (NVML bits: 0x20 SW thermal, 0x40 HW thermal, ...)
//   word  7..9   memory used, total, reserved (bytes)
//   word 10, 11  utilization_pct, temperature_c
//   word 12, 13  lost (1 once the GPU fell off the bus), alive (0 after nvmlShutdown)
//   word 14..21  uuid, NUL-terminated (written once, before magic)
//   word 22      xid: the latest critical XID the GPU raised at or before virtual_ms (0 = none)
//   word 23      nvlink_down: NVLinks the model has that are down (uncabled or an nvlink_down
//                fault)
//
// Thread-safety: a StateWriter belongs to the simulator (its mutex serialises calls); any
// number of StateReaders in any processes may read concurrently.
#ifndef GPUWARDEN_SIM_STATE_FILE_H_
#define GPUWARDEN_SIM_STATE_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace gw::sim {

inline constexpr const char* kStateDirEnv = "GPUWARDEN_SIM_STATE_DIR";

struct GpuState {
  std::uint64_t index = 0;
  std::uint64_t virtual_ms = 0;
  std::uint64_t sm_clock_mhz = 0, max_sm_clock_mhz = 0;
  std::uint64_t clock_event_reasons = 0;
  std::uint64_t memory_used_bytes = 0, memory_total_bytes = 0, memory_reserved_bytes = 0;
  std::uint64_t utilization_pct = 0, temperature_c = 0;
  std::uint64_t xid = 0, nvlink_down = 0;
  bool lost = false, alive = false;
  std::string uuid;

  // SM clock over its maximum (1 = full speed); 1 when unknown.
  double clock_ratio() const;
  // Memory a new allocation could still get (total - reserved - used), bytes.
  std::uint64_t free_memory_bytes() const;
};

// The path of GPU `index`'s record under `dir`.
std::string StatePath(const std::string& dir, unsigned index);

// Writes the records of a fleet's GPUs.
class StateWriter {
 public:
  // Creates DIR/gpu<i>.state for i < uuids.size(); GPUs whose file cannot be created are skipped
  // (error() says which).
  StateWriter(const std::string& dir, const std::vector<std::string>& uuids);
  ~StateWriter();  // marks every record not alive, unmaps
  StateWriter(const StateWriter&) = delete;
  StateWriter& operator=(const StateWriter&) = delete;

  const std::string& error() const { return error_; }
  // Publishes `state` for GPU state.index (uuid ignored).
  void Publish(const GpuState& state);
  // Marks GPU `index` lost at `virtual_ms`, keeping the rest of its last record.
  void PublishLost(unsigned index, std::uint64_t virtual_ms);

 private:
  std::vector<std::uint64_t*> records_;
  std::string error_;
};

class StateReader;
// Opens the record of `gpu` — a global index ("3") or a GPU UUID or a unique prefix of one — under
// `dir` into `reader`; false (reader closed) when there is none.
bool OpenGpuState(const std::string& dir, const std::string& gpu, StateReader* reader);

// Reads one GPU's record.
class StateReader {
 public:
  StateReader() = default;
  ~StateReader();
  StateReader(const StateReader&) = delete;
  StateReader& operator=(const StateReader&) = delete;

  // Maps `path`; false (and nothing mapped) if it is missing or not a state record.
  bool Open(const std::string& path);
  bool is_open() const { return record_ != nullptr; }
  void Close();
  // A consistent copy of the record; false if none could be taken.
  bool Read(GpuState* out) const;

 private:
  const std::uint64_t* record_ = nullptr;
};

}  // namespace gw::sim

#endif  // GPUWARDEN_SIM_STATE_FILE_H_
