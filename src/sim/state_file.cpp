#include "sim/state_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace gw::sim {

namespace {

constexpr std::uint64_t kMagic = 0x3154534D49535747ULL;  // "GWSIMST1" read as little-endian
constexpr std::size_t kUuidWord = 14, kUuidEnd = 22, kUuidBytes = 8 * (kUuidEnd - kUuidWord);
constexpr std::size_t kFileBytes = 4096;
enum Word : std::size_t {
  kMagicWord = 0,
  kSequence = 1,
  kIndex = 2,
  kVirtualMs = 3,
  kSmClock = 4,
  kMaxSmClock = 5,
  kReasons = 6,
  kUsed = 7,
  kTotal = 8,
  kReserved = 9,
  kUtil = 10,
  kTemperature = 11,
  kLost = 12,
  kAlive = 13,
  kXid = 22,
  kNvLinkDown = 23,
};

void Store(std::uint64_t* w, std::uint64_t v) {
  __atomic_store_n(w, v, __ATOMIC_RELAXED);
}
std::uint64_t Load(const std::uint64_t* w) {
  return __atomic_load_n(w, __ATOMIC_RELAXED);
}

}  // namespace

double GpuState::clock_ratio() const {
  if (max_sm_clock_mhz == 0 || sm_clock_mhz == 0) return 1;
  return static_cast<double>(sm_clock_mhz) / static_cast<double>(max_sm_clock_mhz);
}

std::uint64_t GpuState::free_memory_bytes() const {
  const std::uint64_t taken = memory_used_bytes + memory_reserved_bytes;
  return taken >= memory_total_bytes ? 0 : memory_total_bytes - taken;
}

std::string StatePath(const std::string& dir, unsigned index) {
  return dir + "/gpu" + std::to_string(index) + ".state";
}

bool OpenGpuState(const std::string& dir, const std::string& gpu, StateReader* reader) {
  reader->Close();
  if (dir.empty() || gpu.empty()) return false;
  if (gpu.find_first_not_of("0123456789") == std::string::npos)
    return gpu.size() < 10 && reader->Open(StatePath(dir, static_cast<unsigned>(std::stoul(gpu))));
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return false;
  bool found = false;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() < 6 || name.compare(name.size() - 6, 6, ".state") != 0) continue;
    GpuState s;
    if (reader->Open(dir + "/" + name) && reader->Read(&s) && s.uuid.rfind(gpu, 0) == 0) {
      found = true;
      break;
    }
  }
  closedir(d);
  if (!found) reader->Close();
  return found;
}

StateWriter::StateWriter(const std::string& dir, const std::vector<std::string>& uuids) {
  ::mkdir(dir.c_str(), 0755);
  for (unsigned i = 0; i < uuids.size(); ++i) {
    const std::string path = StatePath(dir, i);
    const std::string tmp = path + ".tmp";
    std::uint64_t* record = nullptr;
    const int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0 && ::ftruncate(fd, kFileBytes) == 0) {
      void* p = ::mmap(nullptr, kFileBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (p != MAP_FAILED) record = static_cast<std::uint64_t*>(p);
    }
    if (fd >= 0) ::close(fd);
    if (record != nullptr) {
      char uuid[kUuidBytes] = {};
      std::memcpy(uuid, uuids[i].data(), std::min(uuids[i].size(), kUuidBytes - 1));
      std::memcpy(record + kUuidWord, uuid, kUuidBytes);
      Store(record + kIndex, i);
      Store(record + kAlive, 1);
      __atomic_store_n(record + kMagicWord, kMagic, __ATOMIC_RELEASE);
      if (::rename(tmp.c_str(), path.c_str()) != 0) {
        ::munmap(record, kFileBytes);
        record = nullptr;
      }
    }
    if (record == nullptr && error_.empty()) error_ = "cannot create " + path;
    records_.push_back(record);
  }
}

StateWriter::~StateWriter() {
  for (std::uint64_t* r : records_) {
    if (r == nullptr) continue;
    __atomic_store_n(r + kAlive, 0, __ATOMIC_RELEASE);
    ::munmap(r, kFileBytes);
  }
}

void StateWriter::Publish(const GpuState& s) {
  if (s.index >= records_.size() || records_[s.index] == nullptr) return;
  std::uint64_t* r = records_[s.index];
  const std::uint64_t seq = Load(r + kSequence);
  Store(r + kSequence, seq + 1);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  Store(r + kVirtualMs, s.virtual_ms);
  Store(r + kSmClock, s.sm_clock_mhz);
  Store(r + kMaxSmClock, s.max_sm_clock_mhz);
  Store(r + kReasons, s.clock_event_reasons);
  Store(r + kUsed, s.memory_used_bytes);
  Store(r + kTotal, s.memory_total_bytes);
  Store(r + kReserved, s.memory_reserved_bytes);
  Store(r + kUtil, s.utilization_pct);
  Store(r + kTemperature, s.temperature_c);
  Store(r + kLost, s.lost ? 1 : 0);
  Store(r + kXid, s.xid);
  Store(r + kNvLinkDown, s.nvlink_down);
  __atomic_store_n(r + kSequence, seq + 2, __ATOMIC_RELEASE);
}

void StateWriter::PublishLost(unsigned index, std::uint64_t virtual_ms) {
  if (index >= records_.size() || records_[index] == nullptr) return;
  std::uint64_t* r = records_[index];
  if (Load(r + kLost) != 0) return;
  const std::uint64_t seq = Load(r + kSequence);
  Store(r + kSequence, seq + 1);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  Store(r + kVirtualMs, std::max(virtual_ms, Load(r + kVirtualMs)));
  Store(r + kLost, 1);
  Store(r + kXid, 79);
  __atomic_store_n(r + kSequence, seq + 2, __ATOMIC_RELEASE);
}

StateReader::~StateReader() {
  Close();
}

void StateReader::Close() {
  if (record_ != nullptr) ::munmap(const_cast<std::uint64_t*>(record_), kFileBytes);
  record_ = nullptr;
}

bool StateReader::Open(const std::string& path) {
  Close();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  void* p = MAP_FAILED;
  if (::fstat(fd, &st) == 0 && static_cast<std::size_t>(st.st_size) >= kFileBytes)
    p = ::mmap(nullptr, kFileBytes, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return false;
  const auto* r = static_cast<const std::uint64_t*>(p);
  if (__atomic_load_n(r + kMagicWord, __ATOMIC_ACQUIRE) != kMagic) {
    ::munmap(p, kFileBytes);
    return false;
  }
  record_ = r;
  return true;
}

bool StateReader::Read(GpuState* out) const {
  if (record_ == nullptr) return false;
  const std::uint64_t* r = record_;
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const std::uint64_t before = __atomic_load_n(r + kSequence, __ATOMIC_ACQUIRE);
    if (before & 1) continue;
    GpuState s;
    s.index = Load(r + kIndex);
    s.virtual_ms = Load(r + kVirtualMs);
    s.sm_clock_mhz = Load(r + kSmClock);
    s.max_sm_clock_mhz = Load(r + kMaxSmClock);
    s.clock_event_reasons = Load(r + kReasons);
    s.memory_used_bytes = Load(r + kUsed);
    s.memory_total_bytes = Load(r + kTotal);
    s.memory_reserved_bytes = Load(r + kReserved);
    s.utilization_pct = Load(r + kUtil);
    s.temperature_c = Load(r + kTemperature);
    s.lost = Load(r + kLost) != 0;
    s.xid = Load(r + kXid);
    s.nvlink_down = Load(r + kNvLinkDown);
    s.alive = __atomic_load_n(r + kAlive, __ATOMIC_ACQUIRE) != 0;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(r + kSequence, __ATOMIC_RELAXED) != before) continue;
    char uuid[kUuidBytes];
    std::memcpy(uuid, r + kUuidWord, kUuidBytes);
    uuid[kUuidBytes - 1] = '\0';
    s.uuid = uuid;
    *out = std::move(s);
    return true;
  }
  return false;
}

}  // namespace gw::sim
