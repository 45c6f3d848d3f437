// base/heap.h — what the C library's allocator holds, and giving its free memory back.
//
// glibc's malloc keeps freed memory for reuse: in the arena of the thread that freed it (one
// arena per thread that allocated, up to 8 × cores), and above the mmap threshold, which grows
// each time a large block is freed. After a large query a worker's arena can hold hundreds of
// megabytes that nothing uses; only malloc_trim gives the free pages of every arena back to the
// kernel. docs/operations.md ("Memory") has the measurements.
//
//   LimitMallocArenas(2);                 // first thing in main
//   KeepFreedHeap(64 << 20, 4 << 20);     // then: queries reuse freed pages instead of faulting
//   KeepHeapReserve(8 << 20);             // once started: trims leave 8 MiB warm
//   ProcessHeapTrimmer().MaybeTrim();     // after a query
//   HeapFigures h = ReadHeap();           // mallinfo2: walks every arena under its lock
#ifndef GPUWARDEN_BASE_HEAP_H_
#define GPUWARDEN_BASE_HEAP_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace gw {

struct HeapFigures {
  size_t in_use_bytes = 0;  // allocated and not freed (arenas and direct mmaps)
  size_t free_bytes = 0;    // freed but still held by the allocator (what a trim can return)
  size_t mapped_bytes = 0;  // of in_use_bytes, in blocks mmapped on their own
};

// The allocator's figures now (zeros where the C library is not glibc).
HeapFigures ReadHeap();

// The process' resident memory (/proc/self/statm), 0 if unreadable.
size_t ResidentBytes();

// Gives every arena's free pages back to the kernel (malloc_trim), except KeepHeapReserve's
// reserve at the top of the main heap; counts in TrimsTotal().
void TrimHeap();
uint64_t TrimsTotal();

// A warm reserve: faults in `bytes` at the top of the calling thread's heap (call it from main,
// whose heap is the main arena, the one TrimHeap can shrink) and has every later trim leave that
// much there (malloc_trim's pad). A trim otherwise gives back everything free, and the first
// query after it decodes blocks into fresh memory, one page fault per 4 KiB page: on a VM
// several µs each, half of a cold instant query over 100 series (docs/benchmarks.md, "A warm
// heap reserve"). The cost is `bytes` of resident memory while idle. Needs a trim threshold
// above `bytes` (KeepFreedHeap), or free() hands the top back at once.
void KeepHeapReserve(size_t bytes);
size_t HeapReserveBytes();

// Transparent huge pages for the heap: glibc's malloc asks the kernel for them only when the
// process starts with GLIBC_TUNABLES=glibc.malloc.hugetlb=1, and then only for its main arena
// (grown in 2 MiB steps, madvise(MADV_HUGEPAGE)) and for blocks it mmaps. A query that decodes
// blocks fills fresh memory, one page fault per 4 KiB page otherwise (docs/operations.md,
// "Memory"; docs/benchmarks.md, "Cold reads: huge pages, block parts, rollups in place").
//
// ExecWithHugePageHeap runs the program again, once, with that setting added to GLIBC_TUNABLES,
// and in the new image puts the environment back as it was (children do not inherit it). Call it
// first thing in main, before any thread starts; it returns when nothing was done or the new image
// is running. It does nothing when the environment already says glibc.malloc.hugetlb (the
// operator's choice: =0 keeps 4 KiB pages), when the kernel's THP mode is "never" or unknown,
// with glibc older than 2.35, under AddressSanitizer (its own allocator), or when exec fails.
// Then call PadHeapsForHugePages, or threads other than main get no huge pages.
void ExecWithHugePageHeap(char** argv);

// Whether this process' malloc was started with glibc.malloc.hugetlb=1 (by ExecWithHugePageHeap
// or by the environment).
bool HugePageHeap();

// With huge pages: every malloc heap a thread arena creates starts at its full 64 MiB of address
// space (M_TOP_PAD), of which glibc advises the kernel about the part a new heap starts with and
// nothing it grows by later, so without this a query thread's decoded blocks land in 4 KiB pages.
// Address space only: the pages are faulted in as they are first written. Unless the
// environment sets the pad (MALLOC_TOP_PAD_, or top_pad in GLIBC_TUNABLES); a no-op without
// HugePageHeap(). Call before any thread starts.
void PadHeapsForHugePages();

// What ExecWithHugePageHeap decides, apart from the system: `tunables` is GLIBC_TUNABLES (nullptr:
// unset), `thp_enabled` the text of /sys/kernel/mm/transparent_hugepage/enabled ("" unreadable),
// `glibc_version` gnu_get_libc_version() ("" not glibc). Empty: leave the process as it is;
// otherwise the GLIBC_TUNABLES value to run again with.
std::string HugePageTunables(const char* tunables, std::string_view thp_enabled,
                             std::string_view glibc_version);

// Caps glibc's malloc arenas at `arenas` (mallopt M_ARENA_MAX) unless the environment already
// sets a cap (MALLOC_ARENA_MAX, or glibc.malloc.arena_max in GLIBC_TUNABLES). Call before any
// thread starts. Fewer arenas: less memory kept per thread that once allocated much.
void LimitMallocArenas(int arenas);

// Lets malloc keep up to `trim_threshold` bytes free at the top of a heap (M_TRIM_THRESHOLD) and
// serve blocks under `mmap_threshold` from the heap (a fixed M_MMAP_THRESHOLD), unless the
// environment sets either (MALLOC_TRIM_THRESHOLD_ / MALLOC_MMAP_THRESHOLD_, or trim_threshold /
// mmap_threshold in GLIBC_TUNABLES). Without it glibc hands a query's freed top-of-heap back to the
// kernel and the next query faults the same pages in again: half of a warm 7-day query was those
// faults (docs/benchmarks.md, "The allocator keeps a query's pages"). What it keeps is bounded by
// the HeapTrimmer the query API runs after each query. Call before any thread starts.
void KeepFreedHeap(size_t trim_threshold, size_t mmap_threshold);

// Trims when the memory resident beyond the heap in use (RSS − in use) has grown by more than
// `threshold_bytes` since the last trim, at most once per `min_interval_ms`: cheap enough to call
// after every query (it looks at /proc/self/statm and mallinfo2 at most every 100 ms).
class HeapTrimmer {
 public:
  explicit HeapTrimmer(size_t threshold_bytes = 16u << 20, int64_t min_interval_ms = 1000)
      : threshold_(threshold_bytes), min_interval_ms_(min_interval_ms) {}
  // True when it trimmed. `threshold_bytes` overrides the constructor's (0: use it).
  bool MaybeTrim(size_t threshold_bytes = 0);

 private:
  size_t threshold_;
  int64_t min_interval_ms_;
  std::atomic<int64_t> last_ms_{0};        // the last trim
  std::atomic<int64_t> last_check_ms_{0};  // the last look at the figures (at most every 100 ms)
  // RSS − heap in use right after the last trim: what a trim cannot give back (code, stacks,
  // partly used pages). SIZE_MAX until the first trim.
  std::atomic<size_t> floor_{~size_t{0}};
};

// The process' trimmer: 32 MiB free, at most once a second. Query handlers call MaybeTrim() after
// each query; PeriodicHeapTrim calls it while the agent is idle.
HeapTrimmer& ProcessHeapTrimmer();

// A thread that calls ProcessHeapTrimmer().MaybeTrim(1 MiB) at once (the first trim, which sets
// the trimmer's floor, is then not a query's) and every `period_ms`, so memory freed by the last
// queries of a burst is given back even when no request follows. Stops when destroyed.
class PeriodicHeapTrim {
 public:
  explicit PeriodicHeapTrim(int64_t period_ms = 5000);
  ~PeriodicHeapTrim();
  PeriodicHeapTrim(const PeriodicHeapTrim&) = delete;
  PeriodicHeapTrim& operator=(const PeriodicHeapTrim&) = delete;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace gw

#endif  // GPUWARDEN_BASE_HEAP_H_
