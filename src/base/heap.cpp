#include "base/heap.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__GLIBC__)
#include <gnu/libc-version.h>
#include <malloc.h>
#endif

namespace gw {

namespace {

std::atomic<uint64_t> g_trims{0};
std::atomic<size_t> g_reserve{0};  // KeepHeapReserve: what a trim leaves at the main heap's top

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

HeapFigures ReadHeap() {
  HeapFigures h;
#if defined(__GLIBC__)
  const struct mallinfo2 m = mallinfo2();
  h.in_use_bytes = m.uordblks + m.hblkhd;
  h.free_bytes = m.fordblks;
  h.mapped_bytes = m.hblkhd;
#endif
  return h;
}

size_t ResidentBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long size = 0, resident = 0;
  const int n = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  if (n != 2) return 0;
  return static_cast<size_t>(resident) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

namespace {

// Set in the image ExecWithHugePageHeap started, and by the environment.
bool g_huge_page_heap = false;

// The marker the new image finds, and where the original GLIBC_TUNABLES waits meanwhile.
constexpr char kReexecMarker[] = "GPUWARDEN_HUGE_PAGE_HEAP";
constexpr char kSavedTunables[] = "GPUWARDEN_SAVED_GLIBC_TUNABLES";

bool AddressSanitized() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#else
  return false;
#endif
}

std::string ReadSmallFile(const char* path) {
  std::string text;
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return text;
  char buf[256];
  const size_t n = std::fread(buf, 1, sizeof buf, f);
  std::fclose(f);
  text.assign(buf, n);
  return text;
}

// Puts GLIBC_TUNABLES back as ExecWithHugePageHeap found it (saved under kSavedTunables when it
// was set) and drops the markers.
void PutTunablesBack() {
  if (const char* saved = std::getenv(kSavedTunables); saved != nullptr) {
    setenv("GLIBC_TUNABLES", saved, 1);
    unsetenv(kSavedTunables);
  } else {
    unsetenv("GLIBC_TUNABLES");
  }
  unsetenv(kReexecMarker);
}

}  // namespace

std::string HugePageTunables(const char* tunables, std::string_view thp_enabled,
                             std::string_view glibc_version) {
  if (tunables != nullptr && std::strstr(tunables, "glibc.malloc.hugetlb") != nullptr) return "";
  // The kernel's mode is the bracketed word: "always [madvise] never".
  const size_t open = thp_enabled.find('[');
  const size_t close = thp_enabled.find(']', open == std::string_view::npos ? 0 : open);
  if (open == std::string_view::npos || close == std::string_view::npos) return "";
  const std::string_view mode = thp_enabled.substr(open + 1, close - open - 1);
  if (mode != "always" && mode != "madvise") return "";
  // glibc.malloc.hugetlb is known from glibc 2.35 on.
  int major = 0, minor = 0;
  if (std::sscanf(std::string(glibc_version).c_str(), "%d.%d", &major, &minor) != 2) return "";
  if (major < 2 || (major == 2 && minor < 35)) return "";
  std::string out = tunables != nullptr && *tunables != '\0' ? std::string(tunables) + ":" : "";
  return out + "glibc.malloc.hugetlb=1";
}

void ExecWithHugePageHeap(char** argv) {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (const char* marker = std::getenv(kReexecMarker); marker != nullptr) {
    // The new image: malloc read the tunables at start; put the environment back.
    g_huge_page_heap = tunables != nullptr && std::strstr(tunables, "glibc.malloc.hugetlb=1");
    PutTunablesBack();
    return;
  }
  g_huge_page_heap = tunables != nullptr && std::strstr(tunables, "glibc.malloc.hugetlb=1");
#if defined(__GLIBC__)
  if (AddressSanitized() || argv == nullptr || argv[0] == nullptr) return;
  const std::string wanted =
      HugePageTunables(tunables, ReadSmallFile("/sys/kernel/mm/transparent_hugepage/enabled"),
                       gnu_get_libc_version());
  if (wanted.empty()) return;
  if (tunables != nullptr) setenv(kSavedTunables, tunables, 1);
  setenv(kReexecMarker, "1", 1);
  setenv("GLIBC_TUNABLES", wanted.c_str(), 1);
  execv("/proc/self/exe", argv);
  // Still here: exec failed (no /proc, say). Carry on as we were.
  PutTunablesBack();
#else
  (void)argv;
#endif
}

bool HugePageHeap() {
  return g_huge_page_heap;
}

void PadHeapsForHugePages() {
#if defined(__GLIBC__)
  if (!g_huge_page_heap || std::getenv("MALLOC_TOP_PAD_") != nullptr) return;
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr && std::strstr(tunables, "top_pad") != nullptr) return;
  // glibc's largest heap (HEAP_MAX_SIZE, 2 × the 32 MiB maximum mmap threshold on 64-bit): a new
  // heap is created at this size, all of it advised for huge pages.
  mallopt(M_TOP_PAD, 64 << 20);
#endif
}

void LimitMallocArenas(int arenas) {
#if defined(__GLIBC__)
  if (std::getenv("MALLOC_ARENA_MAX") != nullptr) return;
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr && std::strstr(tunables, "arena_max") != nullptr) return;
  mallopt(M_ARENA_MAX, arenas);
#else
  (void)arenas;
#endif
}

void KeepFreedHeap(size_t trim_threshold, size_t mmap_threshold) {
#if defined(__GLIBC__)
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  const auto tuned = [tunables](const char* name) {
    return tunables != nullptr && std::strstr(tunables, name) != nullptr;
  };
  if (std::getenv("MALLOC_TRIM_THRESHOLD_") == nullptr && !tuned("trim_threshold")) {
    mallopt(M_TRIM_THRESHOLD, static_cast<int>(std::min<size_t>(trim_threshold, INT_MAX)));
  }
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") == nullptr && !tuned("mmap_threshold")) {
    mallopt(M_MMAP_THRESHOLD, static_cast<int>(std::min<size_t>(mmap_threshold, INT_MAX)));
  }
#else
  (void)trim_threshold;
  (void)mmap_threshold;
#endif
}

void KeepHeapReserve(size_t bytes) {
  g_reserve.store(bytes, std::memory_order_relaxed);
  // In pieces well under the mmap threshold, so that they come from this thread's heap; freed
  // (newest first), they merge into its top, which the trims now leave at `bytes`.
  constexpr size_t kPiece = size_t{64} << 10;
  std::vector<char*> pieces;
  pieces.reserve(bytes / kPiece);
  for (size_t done = 0; done + kPiece <= bytes; done += kPiece) {
    auto* p = static_cast<char*>(std::malloc(kPiece));
    if (p == nullptr) break;
    // volatile: the stores must reach memory (a plain store to memory about to be freed may be
    // dropped by the optimizer).
    for (size_t i = 0; i < kPiece; i += 4096) static_cast<volatile char*>(p)[i] = 0;
    pieces.push_back(p);
  }
  for (size_t i = pieces.size(); i-- > 0;) std::free(pieces[i]);
}

size_t HeapReserveBytes() {
  return g_reserve.load(std::memory_order_relaxed);
}

void TrimHeap() {
#if defined(__GLIBC__)
  malloc_trim(g_reserve.load(std::memory_order_relaxed));
#endif
  g_trims.fetch_add(1, std::memory_order_relaxed);
}

uint64_t TrimsTotal() {
  return g_trims.load(std::memory_order_relaxed);
}

namespace {

// Resident bytes not accounted for by the heap in use.
size_t Slack() {
  const size_t rss = ResidentBytes();
  const size_t in_use = ReadHeap().in_use_bytes;
  return rss > in_use ? rss - in_use : 0;
}

}  // namespace

bool HeapTrimmer::MaybeTrim(size_t threshold_bytes) {
  const size_t threshold = threshold_bytes > 0 ? threshold_bytes : threshold_;
  const int64_t now = SteadyMs();
  int64_t last = last_ms_.load(std::memory_order_relaxed);
  if (last != 0 && now - last < min_interval_ms_) return false;
  int64_t checked = last_check_ms_.load(std::memory_order_relaxed);
  if (threshold_bytes == 0 && checked != 0 && now - checked < 100) return false;
  last_check_ms_.store(now, std::memory_order_relaxed);
  const size_t floor = floor_.load(std::memory_order_relaxed);
  if (floor != ~size_t{0} && Slack() < floor + threshold) return false;
  // One caller trims; the others see the new time and skip.
  if (!last_ms_.compare_exchange_strong(last, now, std::memory_order_relaxed)) return false;
  TrimHeap();
  floor_.store(Slack(), std::memory_order_relaxed);
  return true;
}

HeapTrimmer& ProcessHeapTrimmer() {
  static HeapTrimmer trimmer;
  return trimmer;
}

struct PeriodicHeapTrim::State {
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::thread thread;
};

PeriodicHeapTrim::PeriodicHeapTrim(int64_t period_ms) : state_(std::make_unique<State>()) {
  state_->thread = std::thread([s = state_.get(), period_ms] {
    // The first trim sets the trimmer's floor (what a trim cannot give back), so that the first
    // query's check compares with it instead of trimming unconditionally.
    ProcessHeapTrimmer().MaybeTrim(1u << 20);
    std::unique_lock lock(s->mu);
    while (!s->cv.wait_for(lock, std::chrono::milliseconds(period_ms), [s] { return s->stop; })) {
      lock.unlock();
      ProcessHeapTrimmer().MaybeTrim(1u << 20);
      lock.lock();
    }
  });
}

PeriodicHeapTrim::~PeriodicHeapTrim() {
  {
    std::lock_guard lock(state_->mu);
    state_->stop = true;
  }
  state_->cv.notify_all();
  state_->thread.join();
}

}  // namespace gw
