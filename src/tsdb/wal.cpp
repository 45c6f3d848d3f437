#include "tsdb/wal.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <vector>

#include "tsdb/coding.h"

namespace gw::tsdb {
namespace {

namespace fs = std::filesystem;

// Record framing: [fixed32 length of type+payload] [fixed32 CRC-32 of type+payload] [u8 type]
// [payload]. All little-endian.
constexpr uint8_t kSeriesRecord = 1;   // uvarint ref, uvarint n, n × (string name, string value)
constexpr uint8_t kSamplesRecord = 2;  // uvarint n, n × (uvarint ref, varint t - previous t,
                                       //                 fixed64 value bits); previous t starts 0
constexpr size_t kFrameHeader = 8;
constexpr uint32_t kMaxRecordBytes = 256U << 20;

class SystemFiles : public WalFiles {};

// Appends one framed record to `out`: length and CRC-32 of (type, pieces...), then those bytes.
// The pieces are copied once, straight into `out`; the header is patched in place afterwards.
void Frame(std::string* out, uint8_t type, std::initializer_list<std::string_view> pieces) {
  const size_t header = out->size();
  out->append(8, '\0');
  const size_t body = out->size();
  out->push_back(static_cast<char>(type));
  for (std::string_view piece : pieces) out->append(piece);
  const std::string_view bytes(out->data() + body, out->size() - body);
  std::string fixed;
  PutFixed32(&fixed, static_cast<uint32_t>(bytes.size()));
  PutFixed32(&fixed, Crc32(bytes));
  out->replace(header, 8, fixed);
}

std::string SegmentName(uint64_t n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%08llu", static_cast<unsigned long long>(n));
  return buf;
}

std::vector<uint64_t> ListSegments(const std::string& dir) {
  std::vector<uint64_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.size() > 12 ||
        !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    out.push_back(std::stoull(name));
  }
  std::sort(out.begin(), out.end());
  return out;
}

Status WriteAll(WalFiles* files, int fd, std::string_view data, const std::string& what) {
  while (!data.empty()) {
    const ssize_t n = files->Write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error{what + ": write: " + std::strerror(errno)};
    }
    if (n == 0) return Error{what + ": write: wrote nothing"};
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

void SyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)::fsync(fd);
    ::close(fd);
  }
}

// The decoders check a payload completely; with a null callback they only check it, so a
// record is known to be whole before anything is called back.
bool DecodeSeries(std::string_view p, const Wal::SeriesFn* fn) {
  uint64_t ref, n;
  if (!GetUvarint(&p, &ref) || !GetUvarint(&p, &n) || n > p.size()) return false;
  Labels labels(n);
  for (Label& l : labels)
    if (!GetString(&p, &l.name) || !GetString(&p, &l.value)) return false;
  if (!p.empty()) return false;
  if (fn != nullptr) (*fn)(ref, labels);
  return true;
}

bool DecodeSamples(std::string_view p, const Wal::SampleFn* fn, uint64_t* count) {
  uint64_t n;
  if (!GetUvarint(&p, &n) || n > p.size()) return false;
  int64_t t = 0;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t ref, bits;
    int64_t dt;
    if (!GetUvarint(&p, &ref) || !GetVarint(&p, &dt) || !GetFixed64(&p, &bits)) return false;
    t = static_cast<int64_t>(static_cast<uint64_t>(t) + static_cast<uint64_t>(dt));
    if (fn != nullptr) (*fn)(ref, t, std::bit_cast<double>(bits));
  }
  if (count != nullptr) *count += n;
  return p.empty();
}

enum class Check { kWhole, kShortHeader, kBadLength, kShortBody, kBadCrc, kBadPayload };

// Whether a whole record starts at `at` (header, length, CRC, payload); its size if so. No
// callbacks. `crc_budget`: bytes this may still checksum (the scan for the next record after
// damage is bounded by it); a record over budget is not looked at.
Check CheckRecord(std::string_view at, size_t* size, uint64_t* crc_budget = nullptr) {
  std::string_view frame = at;
  uint32_t len, crc;
  if (!GetFixed32(&frame, &len) || !GetFixed32(&frame, &crc)) return Check::kShortHeader;
  if (len == 0 || len > kMaxRecordBytes) return Check::kBadLength;
  if (len > frame.size()) return Check::kShortBody;
  const std::string_view body = frame.substr(0, len);
  const auto type = static_cast<uint8_t>(body[0]);
  if (type != kSeriesRecord && type != kSamplesRecord) return Check::kBadPayload;
  if (crc_budget != nullptr) {
    if (*crc_budget < len) return Check::kBadCrc;
    *crc_budget -= len;
  }
  if (Crc32(body) != crc) return Check::kBadCrc;
  const std::string_view payload = body.substr(1);
  const bool ok = type == kSeriesRecord ? DecodeSeries(payload, nullptr)
                                        : DecodeSamples(payload, nullptr, nullptr);
  if (!ok) return Check::kBadPayload;
  *size = kFrameHeader + len;
  return Check::kWhole;
}

std::string Describe(Check c, std::string_view at) {
  switch (c) {
    case Check::kShortHeader:
      return "truncated record header";
    case Check::kShortBody: {
      std::string_view h = at;
      uint32_t len = 0;
      (void)GetFixed32(&h, &len);
      return "truncated record (" + std::to_string(len) + " bytes announced)";
    }
    case Check::kBadLength:
      return "bad record length";
    case Check::kBadCrc:
      return "CRC mismatch";
    case Check::kBadPayload:
      return "malformed record";
    case Check::kWhole:
      break;
  }
  return "";
}

// The offset of the next whole record at or after `from`; npos if none (or the scan ran out of
// budget: damage in a segment costs at most a few passes over it, whatever its bytes are).
size_t NextWholeRecord(std::string_view data, size_t from, uint64_t* crc_budget) {
  size_t size;
  for (size_t pos = from; pos + kFrameHeader < data.size(); ++pos) {
    if (*crc_budget == 0) break;
    if (CheckRecord(data.substr(pos), &size, crc_budget) == Check::kWhole) return pos;
  }
  return std::string_view::npos;
}

struct SegmentReplay {
  size_t whole_end = 0;  // end of the last whole record
  bool damaged_tail = false;
};

// Replays one segment through the callbacks, skipping damaged stretches (see wal.h). `log_tail`:
// whether a damaged tail is logged and counted (a reader beside a live writer sees the write in
// progress as one).
SegmentReplay ReplaySegment(std::string_view data, const std::string& path,
                            const Wal::SeriesFn& on_series, const Wal::SampleFn& on_sample,
                            WalReplayStats* stats, Logger* logger, bool log_tail) {
  SegmentReplay out;
  uint64_t crc_budget = 4 * static_cast<uint64_t>(data.size()) + (16ULL << 20);
  size_t off = 0;
  while (off < data.size()) {
    const std::string_view at = data.substr(off);
    size_t size = 0;
    const Check c = CheckRecord(at, &size);
    if (c == Check::kWhole) {
      const std::string_view body = at.substr(kFrameHeader + 1, size - kFrameHeader - 1);
      if (static_cast<uint8_t>(at[kFrameHeader]) == kSeriesRecord)
        (void)DecodeSeries(body, &on_series);
      else
        (void)DecodeSamples(body, &on_sample, &stats->samples);
      ++stats->records;
      off += size;
      out.whole_end = off;
      continue;
    }
    const size_t next = NextWholeRecord(data, off + 1, &crc_budget);
    const std::string problem = Describe(c, at);
    if (next == std::string_view::npos) {
      out.damaged_tail = true;
      if (log_tail) {
        ++stats->corruptions;
        stats->skipped_bytes += data.size() - off;
        if (logger)
          logger->Warn("wal: " + path + ": " + problem + " at offset " + std::to_string(off) +
                       "; replayed what precedes it, dropping " +
                       std::to_string(data.size() - off) + " bytes (no whole record after it)");
      }
      break;
    }
    ++stats->corruptions;
    stats->skipped_bytes += next - off;
    if (logger)
      logger->Warn("wal: " + path + ": " + problem + " at offset " + std::to_string(off) +
                   "; skipped " + std::to_string(next - off) +
                   " bytes to the next whole record at offset " + std::to_string(next) +
                   " and replayed on from there");
    off = next;
  }
  return out;
}

bool ReadWholeFile(const std::string& path, std::string* data, int* err) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *err = errno;
    return false;
  }
  data->clear();
  char buf[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *err = errno;
      ::close(fd);
      return false;
    }
    if (n == 0) break;
    data->append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return true;
}

}  // namespace

int WalFiles::OpenAppend(const std::string& path) {
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}
ssize_t WalFiles::Write(int fd, const void* data, size_t size) {
  return ::write(fd, data, size);
}
int WalFiles::Truncate(int fd, off_t size) {
  return ::ftruncate(fd, size);
}
int WalFiles::Sync(int fd) {
  return ::fdatasync(fd);
}
WalFiles* WalFiles::System() {
  static SystemFiles files;
  return &files;
}

Wal::Wal(WalOptions options, Logger* logger)
    : options_(std::move(options)),
      logger_(logger),
      files_(options_.files != nullptr ? options_.files : WalFiles::System()) {}

Wal::~Wal() {
  if (fd_ >= 0) ::close(fd_);
}

Expected<std::unique_ptr<Wal>> Wal::Open(const WalOptions& options, Logger* logger,
                                         const SeriesFn& on_series, const SampleFn& on_sample,
                                         WalReplayStats* stats) {
  std::error_code ec;
  fs::create_directories(options.dir, ec);
  if (ec) return Error{"wal: cannot create " + options.dir + ": " + ec.message()};
  std::unique_ptr<Wal> wal(new Wal(options, logger));
  std::string data;
  for (uint64_t seg : ListSegments(options.dir)) {
    const std::string path = options.dir + "/" + SegmentName(seg);
    int err = 0;
    if (!ReadWholeFile(path, &data, &err))
      return Error{"wal: cannot read " + path + ": " + std::strerror(err)};
    ++stats->segments;
    const SegmentReplay r =
        ReplaySegment(data, path, on_series, on_sample, stats, logger, /*log_tail=*/true);
    // A damaged tail is cut off, so that it is reported once. Damage with whole records after
    // it stays until a checkpoint deletes the segment (reported again at each open till then).
    if (r.damaged_tail && ::truncate(path.c_str(), static_cast<off_t>(r.whole_end)) != 0)
      return Error{"wal: cannot truncate " + path + ": " + std::strerror(errno)};
    wal->segment_ = seg;
  }
  Status st = wal->StartSegment();
  if (!st.ok()) return Error{st.message()};
  return wal;
}

Status Wal::Replay(const std::string& dir, Logger* logger, const SeriesFn& on_series,
                   const SampleFn& on_sample, WalReplayStats* stats, bool* vanished) {
  *vanished = false;
  const std::vector<uint64_t> segments = ListSegments(dir);
  std::string data;
  for (size_t i = 0; i < segments.size(); ++i) {
    const std::string path = dir + "/" + SegmentName(segments[i]);
    int err = 0;
    if (!ReadWholeFile(path, &data, &err)) {
      if (err == ENOENT) {  // removed by the writer's checkpoint: its records are in SQLite
        *vanished = true;
        continue;
      }
      return Error{"wal: cannot read " + path + ": " + std::strerror(err)};
    }
    ++stats->segments;
    (void)ReplaySegment(data, path, on_series, on_sample, stats, logger,
                        /*log_tail=*/i + 1 < segments.size());
  }
  return Status::Ok();
}

Status Wal::StartSegment() {
  // The new segment is opened before the old one is let go: when no file can be created, the
  // log goes on in the current segment.
  const uint64_t next = segment_ + 1;
  const std::string path = options_.dir + "/" + SegmentName(next);
  const int fd = files_->OpenAppend(path);
  if (fd < 0) return Error{"wal: cannot create " + path + ": " + std::strerror(errno)};
  SyncDir(options_.dir);
  if (fd_ >= 0) {
    if (options_.sync != WalSync::kNever) (void)files_->Sync(fd_);
    ::close(fd_);
  }
  fd_ = fd;
  segment_ = next;
  segment_size_ = 0;
  broken_ = false;
  ++generation_;
  last_sync_ = std::chrono::steady_clock::now();
  return Status::Ok();
}

void Wal::AddSeries(SeriesRef ref, const Labels& labels) {
  // Framed at once, ahead of the samples record being built (framed at Commit): a series record
  // always precedes the samples that use it.
  std::string p;
  PutUvarint(&p, ref);
  PutUvarint(&p, labels.size());
  for (const Label& l : labels) PutString(&p, l.name), PutString(&p, l.value);
  Frame(&pending_, kSeriesRecord, {p});
}

void Wal::AddSample(SeriesRef ref, int64_t t_ms, double v) {
  // Built in a local buffer and appended once: this runs for every sample.
  char buf[28];
  size_t n = 0;
  auto put_uvarint = [&](uint64_t x) {
    while (x >= 0x80) buf[n++] = static_cast<char>(x | 0x80), x >>= 7;
    buf[n++] = static_cast<char>(x);
  };
  put_uvarint(ref);
  put_uvarint(ZigZag(
      static_cast<int64_t>(static_cast<uint64_t>(t_ms) - static_cast<uint64_t>(samples_prev_t_))));
  const uint64_t bits = std::bit_cast<uint64_t>(v);
  for (int i = 0; i < 8; ++i) buf[n++] = static_cast<char>(bits >> (8 * i));
  samples_.append(buf, n);
  samples_prev_t_ = t_ms;
  if (++samples_count_ >= 100000) FlushSamplesRecord();  // bound the record size
}

void Wal::FlushSamplesRecord() {
  if (samples_count_ == 0) return;
  std::string count;
  PutUvarint(&count, samples_count_);
  Frame(&pending_, kSamplesRecord, {count, samples_});
  samples_.clear();
  samples_count_ = 0;
  samples_prev_t_ = 0;
}

void Wal::DropPendingSamples() {
  // pending_ holds records framed here, so its framing is trusted.
  std::string kept;
  std::string_view rest = pending_;
  while (rest.size() >= kFrameHeader + 1) {
    std::string_view h = rest;
    uint32_t len = 0, crc = 0;
    (void)GetFixed32(&h, &len);
    (void)GetFixed32(&h, &crc);
    const std::string_view record = rest.substr(0, kFrameHeader + len);
    if (static_cast<uint8_t>(record[kFrameHeader]) == kSeriesRecord) {
      kept.append(record);
    } else {
      std::string_view payload = record.substr(kFrameHeader + 1);
      uint64_t n = 0;
      if (GetUvarint(&payload, &n)) dropped_samples_ += n;
    }
    rest.remove_prefix(record.size());
  }
  pending_.swap(kept);
}

Status Wal::Commit() {
  FlushSamplesRecord();
  if (!pending_.empty()) {
    if (broken_) {
      Status st = StartSegment();
      if (!st.ok()) {
        if (pending_.size() > options_.max_pending_bytes) DropPendingSamples();
        return st;
      }
    }
    Status st = WriteAll(files_, fd_, pending_, "wal segment " + SegmentName(segment_));
    if (!st.ok()) {
      // Put the segment back as it was, so that later records follow a whole one; if that
      // fails too, later records go to a new segment (replay skips the torn end of this one).
      if (files_->Truncate(fd_, static_cast<off_t>(segment_size_)) != 0) broken_ = true;
      if (pending_.size() > options_.max_pending_bytes) DropPendingSamples();
      return st;
    }
    segment_size_ += pending_.size();
    pending_.clear();
  }
  const auto now = std::chrono::steady_clock::now();
  const bool sync = options_.sync == WalSync::kAlways ||
                    (options_.sync == WalSync::kInterval &&
                     now - last_sync_ >= std::chrono::duration<double>(options_.sync_interval_s));
  if (sync) {
    if (files_->Sync(fd_) != 0) return Error{std::string("wal: fsync: ") + std::strerror(errno)};
    last_sync_ = now;
  }
  // Past the size limit a new segment starts; if none can be created now, this one goes on and
  // the next Commit tries again.
  if (segment_size_ >= options_.segment_bytes) (void)StartSegment();
  return Status::Ok();
}

Status Wal::Checkpoint() {
  // Everything appended so far is persisted elsewhere: nothing buffered is needed any more.
  pending_.clear();
  samples_.clear();
  samples_count_ = 0;
  samples_prev_t_ = 0;
  if (Status st = StartSegment(); !st.ok()) {
    // No new file (a full disk): empty the current segment instead; its records are persisted.
    if (files_->Truncate(fd_, 0) != 0)
      return Error{st.message() +
                   "; and cannot empty the current segment: " + std::strerror(errno)};
    segment_size_ = 0;
    broken_ = false;
    ++generation_;
  }
  std::error_code ec;
  for (uint64_t seg : ListSegments(options_.dir))
    if (seg < segment_) fs::remove(options_.dir + "/" + SegmentName(seg), ec);
  SyncDir(options_.dir);
  return Status::Ok();
}

uint64_t Wal::size_bytes() const {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(options_.dir, ec)) {
    const auto size = e.file_size(ec);
    if (!ec) total += size;
  }
  return total;
}

}  // namespace gw::tsdb
