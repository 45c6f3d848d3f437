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

Status WriteAll(int fd, std::string_view data, const std::string& what) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error{what + ": write: " + std::strerror(errno)};
    }
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

bool DecodeSeries(std::string_view p, const Wal::SeriesFn& fn) {
  uint64_t ref, n;
  if (!GetUvarint(&p, &ref) || !GetUvarint(&p, &n) || n > p.size()) return false;
  Labels labels(n);
  for (Label& l : labels)
    if (!GetString(&p, &l.name) || !GetString(&p, &l.value)) return false;
  if (!p.empty()) return false;
  fn(ref, labels);
  return true;
}

bool DecodeSamples(std::string_view p, const Wal::SampleFn& fn, uint64_t* count) {
  uint64_t n;
  if (!GetUvarint(&p, &n) || n > p.size()) return false;
  int64_t t = 0;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t ref, bits;
    int64_t dt;
    if (!GetUvarint(&p, &ref) || !GetVarint(&p, &dt) || !GetFixed64(&p, &bits)) return false;
    t = static_cast<int64_t>(static_cast<uint64_t>(t) + static_cast<uint64_t>(dt));
    fn(ref, t, std::bit_cast<double>(bits));
  }
  *count += n;
  return p.empty();
}

// Replays one segment; returns the offset after the last good record and whether it ended
// cleanly. Records are validated (CRC) before any callback runs.
size_t ReplaySegment(std::string_view data, const Wal::SeriesFn& on_series,
                     const Wal::SampleFn& on_sample, WalReplayStats* stats, std::string* problem) {
  size_t good = 0;
  std::string_view rest = data;
  while (!rest.empty()) {
    std::string_view frame = rest;
    uint32_t len, crc;
    if (!GetFixed32(&frame, &len) || !GetFixed32(&frame, &crc)) {
      *problem = "truncated record header";
      return good;
    }
    if (len == 0 || len > kMaxRecordBytes || len > frame.size()) {
      *problem = "truncated record (" + std::to_string(len) + " bytes announced)";
      return good;
    }
    const std::string_view body = frame.substr(0, len);
    if (Crc32(body) != crc) {
      *problem = "CRC mismatch";
      return good;
    }
    const auto type = static_cast<uint8_t>(body[0]);
    const std::string_view payload = body.substr(1);
    bool ok = false;
    if (type == kSeriesRecord) ok = DecodeSeries(payload, on_series);
    if (type == kSamplesRecord) ok = DecodeSamples(payload, on_sample, &stats->samples);
    if (!ok) {
      *problem = "malformed record of type " + std::to_string(type);
      return good;
    }
    ++stats->records;
    good += kFrameHeader + len;
    rest = data.substr(good);
  }
  return good;
}

}  // namespace

Wal::Wal(WalOptions options, Logger* logger) : options_(std::move(options)), logger_(logger) {}

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
  for (uint64_t seg : ListSegments(options.dir)) {
    const std::string path = options.dir + "/" + SegmentName(seg);
    std::ifstream in(path, std::ios::binary);
    if (!in) return Error{"wal: cannot read " + path};
    std::ostringstream buf;
    buf << in.rdbuf();
    const std::string data = buf.str();
    std::string problem;
    const size_t good = ReplaySegment(data, on_series, on_sample, stats, &problem);
    if (good < data.size()) {
      ++stats->corruptions;
      if (logger)
        logger->Warn("wal: " + path + ": " + problem + " at offset " + std::to_string(good) +
                     "; replayed what precedes it, dropping " + std::to_string(data.size() - good) +
                     " bytes");
      if (::truncate(path.c_str(), static_cast<off_t>(good)) != 0)
        return Error{"wal: cannot truncate " + path + ": " + std::strerror(errno)};
    }
    wal->segment_ = seg;
  }
  Status st = wal->StartSegment();
  if (!st.ok()) return Error{st.message()};
  return wal;
}

Status Wal::StartSegment() {
  if (fd_ >= 0) {
    if (options_.sync != WalSync::kNever) (void)::fsync(fd_);
    ::close(fd_);
    fd_ = -1;
  }
  ++segment_;
  const std::string path = options_.dir + "/" + SegmentName(segment_);
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) return Error{"wal: cannot create " + path + ": " + std::strerror(errno)};
  SyncDir(options_.dir);
  segment_size_ = 0;
  last_sync_ = std::chrono::steady_clock::now();
  return Status::Ok();
}

void Wal::AddSeries(SeriesRef ref, const Labels& labels) {
  FlushSamplesRecord();  // keep records in call order
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

Status Wal::Commit() {
  FlushSamplesRecord();
  if (!pending_.empty()) {
    Status st = WriteAll(fd_, pending_, "wal segment " + SegmentName(segment_));
    if (!st.ok()) return st;
    segment_size_ += pending_.size();
    pending_.clear();
  }
  const auto now = std::chrono::steady_clock::now();
  const bool sync = options_.sync == WalSync::kAlways ||
                    (options_.sync == WalSync::kInterval &&
                     now - last_sync_ >= std::chrono::duration<double>(options_.sync_interval_s));
  if (sync) {
    if (::fdatasync(fd_) != 0) return Error{std::string("wal: fsync: ") + std::strerror(errno)};
    last_sync_ = now;
  }
  if (segment_size_ >= options_.segment_bytes) return StartSegment();
  return Status::Ok();
}

Status Wal::Checkpoint() {
  Status st = Commit();
  if (!st.ok()) return st;
  st = StartSegment();
  if (!st.ok()) return st;
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
