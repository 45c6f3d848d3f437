#include "tsdb/head.h"

#include <algorithm>

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

void Head::CutLocked(MemSeries* s) {
  if (s->open.empty()) return;
  EncodedChunk c;
  c.mint_ms = s->open.front().t_ms;
  c.maxt_ms = s->open.back().t_ms;
  c.num_samples = static_cast<uint32_t>(s->open.size());
  c.data = EncodeChunk(s->open);
  s->chunks.push_back(std::move(c));
  s->open.clear();
}

Status Head::Append(SeriesRef ref, int64_t t_ms, double v) {
  MemSeries* s = Find(ref);
  if (s == nullptr) return Error{"tsdb: unknown series id " + std::to_string(ref)};
  std::lock_guard lock(s->mu);
  if (t_ms <= s->last_t_ms) {
    out_of_order_.fetch_add(1, std::memory_order_relaxed);
    return Error{"tsdb: out of order sample"};
  }
  if (!s->open.empty() && (s->open.size() >= options_.samples_per_chunk ||
                           t_ms - s->open.front().t_ms >= options_.chunk_range_ms))
    CutLocked(s);
  if (s->open.capacity() == 0) s->open.reserve(options_.samples_per_chunk);
  s->open.push_back({t_ms, v});
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

int64_t Head::SettledBefore(SeriesRef ref) const {
  MemSeries* s;
  {
    std::shared_lock lock(mu_);
    s = Find(ref);
  }
  if (s == nullptr) return INT64_MIN;
  std::lock_guard lock(s->mu);
  if (!s->chunks.empty()) return s->chunks.front().mint_ms;
  if (!s->open.empty()) return s->open.front().t_ms;
  if (s->last_t_ms == INT64_MIN || s->last_t_ms == INT64_MAX) return s->last_t_ms;
  return s->last_t_ms + 1;
}

Status Head::ReadSamples(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms,
                         std::vector<Sample>* out) const {
  MemSeries* s;
  {
    std::shared_lock lock(mu_);
    s = Find(ref);
  }
  if (s == nullptr) return Status::Ok();
  std::lock_guard lock(s->mu);
  std::vector<Sample> decoded;
  for (const EncodedChunk& c : s->chunks) {
    if (c.maxt_ms < mint_ms || c.mint_ms > maxt_ms) continue;
    decoded.clear();
    Status st = DecodeChunk(c.data, &decoded);
    if (!st.ok()) return st;
    for (const Sample& smp : decoded)
      if (smp.t_ms >= mint_ms && smp.t_ms <= maxt_ms) out->push_back(smp);
  }
  for (const Sample& smp : s->open)
    if (smp.t_ms >= mint_ms && smp.t_ms <= maxt_ms) out->push_back(smp);
  return Status::Ok();
}

}  // namespace gw::tsdb
