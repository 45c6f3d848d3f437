#include "tsdb/head.h"

#include <algorithm>
#include <cstring>

#include "tsdb/chunk.h"

namespace gw::tsdb {

Head::Head(HeadOptions options) : options_(options) {
  if (options_.samples_per_chunk == 0) options_.samples_per_chunk = 1;
  if (options_.samples_per_chunk > kMaxChunkSamples) options_.samples_per_chunk = kMaxChunkSamples;
  series_.emplace_back();  // ref 0 is "no series"
}

Head::MemSeries* Head::Find(SeriesRef ref) const {
  // The writer calls this without the lock: only the writer changes series_.
  return ref < series_.size() ? series_[ref].get() : nullptr;
}

Status Head::AddSeries(SeriesRef ref, const Labels& labels, int64_t last_t_ms) {
  if (ref == 0) return Error{"tsdb: series id 0 is reserved"};
  // Ids are dense; a far-off id can only come from a damaged file and would waste memory.
  if (ref > series_.size() + (1U << 24)) return Error{"tsdb: implausible series id"};
  if (!LabelsAreValid(labels)) return Error{"tsdb: invalid label set"};
  std::unique_lock lock(mu_);
  if (Find(ref) != nullptr) return Error{"tsdb: series id " + std::to_string(ref) + " in use"};
  if (index_.Find(labels) != 0) return Error{"tsdb: duplicate series"};
  if (series_.size() <= ref) series_.resize(ref + 1);
  series_[ref] = std::make_unique<MemSeries>();
  series_[ref]->last_t_ms = last_t_ms;
  series_[ref]->persisted_maxt_ms = last_t_ms;
  index_.Add(ref, labels);
  return Status::Ok();
}

Expected<SeriesRef> Head::GetOrCreate(const Labels& labels, bool* created) {
  *created = false;
  if (SeriesRef ref = index_.Find(labels)) return ref;  // writer: reading without the lock is safe
  const SeriesRef ref = series_.size();
  Status st = AddSeries(ref, labels);
  if (!st.ok()) return Error{st.message()};
  *created = true;
  return ref;
}

namespace {

template <class T>
void Put(std::string* out, T v) {
  char bytes[sizeof v];
  std::memcpy(bytes, &v, sizeof v);
  out->append(bytes, sizeof v);
}

template <class T>
T Get(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

void Head::SealTailLocked(MemSeries* s) {
  if (s->tail.empty()) return;
  const std::string data = EncodeChunk(s->tail);
  Put<int64_t>(&s->segments, s->tail.back().t_ms);
  Put<uint32_t>(&s->segments, static_cast<uint32_t>(s->tail.size()));
  Put<uint32_t>(&s->segments, static_cast<uint32_t>(data.size()));
  s->segments += data;
  s->tail.clear();
}

Status Head::ReadOpenLocked(const MemSeries& s, int64_t mint_ms, int64_t maxt_ms,
                            std::vector<Sample>* out) {
  auto outside = [&](const Sample& smp) { return smp.t_ms < mint_ms || smp.t_ms > maxt_ms; };
  // Segments follow each other in time: a segment's samples lie in [lo, its maxt], lo being
  // the open chunk's oldest timestamp for the first and the previous maxt + 1 after that.
  int64_t lo = s.open_mint_ms;
  for (size_t pos = 0; pos < s.segments.size() && lo <= maxt_ms;) {
    const char* h = s.segments.data() + pos;
    const auto seg_maxt = Get<int64_t>(h);
    const auto size = Get<uint32_t>(h + 12);
    const std::string_view data(h + kSegmentHeader, size);
    pos += kSegmentHeader + size;
    const bool skip = seg_maxt < mint_ms;
    const bool whole = lo >= mint_ms && seg_maxt <= maxt_ms;
    // A later segment exists only if a newer sample was appended, so this does not overflow.
    if (pos < s.segments.size()) lo = seg_maxt + 1;
    if (skip) continue;
    const size_t first = out->size();
    Status st = DecodeChunk(data, out);
    if (!st.ok()) return st;
    if (!whole)
      out->erase(std::remove_if(out->begin() + static_cast<ptrdiff_t>(first), out->end(), outside),
                 out->end());
  }
  for (const Sample& smp : s.tail)
    if (!outside(smp)) out->push_back(smp);
  return Status::Ok();
}

size_t Head::OpenSamplesInRange(const MemSeries& s, int64_t mint_ms, int64_t maxt_ms) {
  if (s.open_samples == 0 || s.last_t_ms < mint_ms || s.open_mint_ms > maxt_ms) return 0;
  return s.open_samples;
}

void Head::CutLocked(MemSeries* s) {
  if (s->open_samples == 0) return;
  // The writer's scratch (CutAndCollect may run on another thread than Append, hence per
  // thread); it keeps its capacity, so cuts do not allocate for it in a steady state.
  thread_local std::vector<Sample> scratch;
  scratch.clear();
  scratch.reserve(s->open_samples);
  Status st = ReadOpenLocked(*s, INT64_MIN, INT64_MAX, &scratch);
  // The head encoded the segments itself: one that does not decode is a bug, not bad data; its
  // samples are lost either way, the rest is kept.
  if (!st.ok()) scratch.clear();
  if (!scratch.empty()) {
    EncodedChunk c;
    c.mint_ms = scratch.front().t_ms;
    c.maxt_ms = scratch.back().t_ms;
    c.num_samples = static_cast<uint32_t>(scratch.size());
    c.data = EncodeChunk(scratch);
    s->chunks.push_back(std::move(c));
  }
  s->segments.clear();
  s->tail.clear();
  s->open_samples = 0;
}

Status Head::Append(SeriesRef ref, int64_t t_ms, double v) {
  MemSeries* s = Find(ref);
  if (s == nullptr) return Error{"tsdb: unknown series id " + std::to_string(ref)};
  std::lock_guard lock(s->mu);
  if (t_ms <= s->last_t_ms) {
    out_of_order_.fetch_add(1, std::memory_order_relaxed);
    return Error{"tsdb: out of order sample"};
  }
  if (s->open_samples > 0 && (s->open_samples >= options_.samples_per_chunk ||
                              t_ms - s->open_mint_ms >= options_.chunk_range_ms))
    CutLocked(s);
  if (s->tail.size() >= kSegmentSamples) SealTailLocked(s);
  if (s->tail.capacity() == 0) s->tail.reserve(kSegmentSamples);
  if (s->open_samples == 0) s->open_mint_ms = t_ms;
  s->tail.push_back({t_ms, v});
  ++s->open_samples;
  s->last_t_ms = t_ms;
  // Only the writer changes the counter: a plain store avoids a locked read-modify-write.
  samples_appended_.store(samples_appended_.load(std::memory_order_relaxed) + 1,
                          std::memory_order_relaxed);
  return Status::Ok();
}

std::vector<std::pair<SeriesRef, std::vector<EncodedChunk>>> Head::CutAndCollect(bool cut_open) {
  std::vector<std::pair<SeriesRef, std::vector<EncodedChunk>>> out;
  for (SeriesRef ref = 1; ref < series_.size(); ++ref) {
    MemSeries* s = series_[ref].get();
    if (s == nullptr) continue;
    std::lock_guard lock(s->mu);
    if (cut_open) CutLocked(s);
    if (!s->chunks.empty()) out.emplace_back(ref, s->chunks);
  }
  return out;
}

void Head::DropPersisted(SeriesRef ref, size_t count) {
  MemSeries* s = Find(ref);
  if (s == nullptr) return;
  std::lock_guard lock(s->mu);
  count = std::min(count, s->chunks.size());
  if (count > 0)
    s->persisted_maxt_ms = std::max(s->persisted_maxt_ms, s->chunks[count - 1].maxt_ms);
  s->chunks.erase(s->chunks.begin(), s->chunks.begin() + static_cast<ptrdiff_t>(count));
}

std::vector<SeriesRef> Head::Select(const std::vector<Matcher>& matchers) const {
  std::shared_lock lock(mu_);
  return index_.Select(matchers);
}

Labels Head::LabelsOf(SeriesRef ref) const {
  std::shared_lock lock(mu_);
  const Labels* l = index_.LabelsOf(ref);
  return l ? *l : Labels{};
}

size_t Head::num_series() const {
  std::shared_lock lock(mu_);
  return index_.size();
}

Head::MemoryStats Head::memory_stats() const {
  MemoryStats out;
  std::shared_lock lock(mu_);
  for (const std::unique_ptr<MemSeries>& s : series_) {
    if (s == nullptr) continue;
    std::lock_guard<std::mutex> series_lock(s->mu);
    out.chunks += s->chunks.size() + (s->open_samples == 0 ? 0 : 1);
    if (!s->chunks.empty()) {
      out.min_t_ms = std::min(out.min_t_ms, s->chunks.front().mint_ms);
      out.max_t_ms = std::max(out.max_t_ms, s->chunks.back().maxt_ms);
    }
    if (s->open_samples > 0) {
      out.min_t_ms = std::min(out.min_t_ms, s->open_mint_ms);
      out.max_t_ms = std::max(out.max_t_ms, s->last_t_ms);
    }
  }
  return out;
}

int64_t Head::SettledBefore(SeriesRef ref) const {
  MemSeries* s;
  {
    std::shared_lock lock(mu_);
    s = Find(ref);
  }
  if (s == nullptr) return INT64_MIN;
  std::lock_guard lock(s->mu);
  if (!s->chunks.empty()) return s->chunks.front().mint_ms;
  if (s->open_samples > 0) return s->open_mint_ms;
  return INT64_MAX;
}

Status Head::ReadSamples(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms, std::vector<Sample>* out,
                         int64_t* persisted_maxt_ms) const {
  if (persisted_maxt_ms != nullptr) *persisted_maxt_ms = INT64_MIN;
  MemSeries* s;
  {
    std::shared_lock lock(mu_);
    s = Find(ref);
  }
  if (s == nullptr) return Status::Ok();
  std::lock_guard lock(s->mu);
  if (persisted_maxt_ms != nullptr) *persisted_maxt_ms = s->persisted_maxt_ms;
  auto overlaps = [&](const EncodedChunk& c) {
    return c.maxt_ms >= mint_ms && c.mint_ms <= maxt_ms;
  };
  // One allocation at most: every sample of the overlapping chunks is an upper bound.
  size_t n = OpenSamplesInRange(*s, mint_ms, maxt_ms);
  for (const EncodedChunk& c : s->chunks)
    if (overlaps(c)) n += c.num_samples;
  out->reserve(out->size() + n);
  auto outside = [&](const Sample& smp) { return smp.t_ms < mint_ms || smp.t_ms > maxt_ms; };
  for (const EncodedChunk& c : s->chunks) {
    if (!overlaps(c)) continue;
    // Decoded straight into `out`; the chunk's samples outside the range are cut off again.
    const size_t first = out->size();
    Status st = DecodeChunk(c.data, out);
    if (!st.ok()) return st;
    if (c.mint_ms < mint_ms || c.maxt_ms > maxt_ms)
      out->erase(std::remove_if(out->begin() + static_cast<ptrdiff_t>(first), out->end(), outside),
                 out->end());
  }
  if (OpenSamplesInRange(*s, mint_ms, maxt_ms) == 0) return Status::Ok();
  return ReadOpenLocked(*s, mint_ms, maxt_ms, out);
}

}  // namespace gw::tsdb
