// The protobuf wire format, as much of it as WriteRequest uses (docs/remote-write.md):
// a field is a key varint (field number << 3 | wire type) then its value: varint (type 0),
// 64-bit little-endian (type 1), or a varint length and that many bytes (type 2).
#include "remote/write_request.h"

#include <bit>
#include <cstring>

namespace gw::remote {
namespace {

enum WireType : std::uint32_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };

void PutVarint(std::uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

std::size_t VarintSize(std::uint64_t v) {
  std::size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

void PutKey(std::uint32_t field, WireType type, std::string* out) {
  PutVarint((static_cast<std::uint64_t>(field) << 3) | type, out);
}

void PutBytes(std::uint32_t field, std::string_view bytes, std::string* out) {
  PutKey(field, kBytes, out);
  PutVarint(bytes.size(), out);
  out->append(bytes);
}

std::size_t BytesFieldSize(std::uint32_t field, std::size_t length) {
  return VarintSize(static_cast<std::uint64_t>(field) << 3) + VarintSize(length) + length;
}

// Label {1: name, 2: value}
std::size_t LabelSize(const Label& l) {
  return BytesFieldSize(1, l.name.size()) + BytesFieldSize(2, l.value.size());
}

// Sample {1: double value (fixed64), 2: int64 timestamp (varint, two's complement)}
std::size_t SampleSize(const Sample& s) {
  return 1 + 8 + 1 + VarintSize(static_cast<std::uint64_t>(s.timestamp_ms));
}

std::size_t SeriesSize(const TimeSeries& ts) {
  std::size_t n = 0;
  for (const Label& l : ts.labels) n += BytesFieldSize(1, LabelSize(l));
  for (const Sample& s : ts.samples) n += BytesFieldSize(2, SampleSize(s));
  return n;
}

std::size_t MetadataSize(const MetricMetadata& m) {
  std::size_t n = 0;
  if (m.type != MetricType::kUnknown) n += 1 + VarintSize(static_cast<std::uint64_t>(m.type));
  if (!m.family.empty()) n += BytesFieldSize(2, m.family.size());
  if (!m.help.empty()) n += BytesFieldSize(4, m.help.size());
  if (!m.unit.empty()) n += BytesFieldSize(5, m.unit.size());
  return n;
}

class Reader {
 public:
  explicit Reader(std::string_view bytes, std::size_t base = 0) : bytes_(bytes), base_(base) {}
  bool done() const { return pos_ >= bytes_.size(); }
  std::size_t offset() const { return base_ + pos_; }

  bool Varint(std::uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= bytes_.size()) return false;
      const auto byte = static_cast<std::uint8_t>(bytes_[pos_++]);
      *v |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;  // more than 10 bytes
  }
  bool Fixed64(std::uint64_t* v) {
    if (bytes_.size() - pos_ < 8) return false;
    std::uint64_t le = 0;
    std::memcpy(&le, bytes_.data() + pos_, 8);
    pos_ += 8;
    *v = le;  // the wire is little-endian, as is every machine this builds on (static_assert)
    return true;
  }
  bool Bytes(std::string_view* v, std::size_t* at) {
    std::uint64_t n = 0;
    if (!Varint(&n) || n > bytes_.size() - pos_) return false;
    *at = base_ + pos_;
    *v = bytes_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  // Skips a field of an unknown number.
  bool Skip(std::uint32_t type) {
    std::uint64_t v = 0;
    std::string_view b;
    std::size_t at = 0;
    switch (type) {
      case kVarint:
        return Varint(&v);
      case kFixed64:
        return Fixed64(&v);
      case kBytes:
        return Bytes(&b, &at);
      case kFixed32:
        if (bytes_.size() - pos_ < 4) return false;
        pos_ += 4;
        return true;
      default:
        return false;  // groups (3, 4) are not used by this message
    }
  }

 private:
  std::string_view bytes_;
  std::size_t base_;
  std::size_t pos_ = 0;
};

static_assert(std::endian::native == std::endian::little,
              "the protobuf writer assumes little-endian");

Error Malformed(std::size_t at, const char* what) {
  return Error{"malformed WriteRequest at byte " + std::to_string(at) + ": " + what};
}

// Calls `field(number, type, reader, at)` for each field (`at`: the offset of its key); the
// callback reads the value or returns the error.
template <typename F>
Status ForEachField(Reader& r, F&& field) {
  while (!r.done()) {
    const std::size_t at = r.offset();
    std::uint64_t key = 0;
    if (!r.Varint(&key)) return Malformed(at, "truncated field key");
    const auto number = static_cast<std::uint32_t>(key >> 3);
    const auto type = static_cast<std::uint32_t>(key & 7);
    if (number == 0) return Malformed(at, "field number 0");
    Status s = field(number, type, r, at);
    if (!s.ok()) return s;
  }
  return Status{};
}

Status ReadString(Reader& r, std::uint32_t type, std::string* to, std::size_t at) {
  if (type != kBytes) return Malformed(at, "a string field with the wrong wire type");
  std::string_view v;
  std::size_t where = 0;
  if (!r.Bytes(&v, &where)) return Malformed(at, "truncated string");
  to->assign(v);
  return Status{};
}

Status DecodeLabel(std::string_view bytes, std::size_t base, Label* l) {
  Reader r(bytes, base);
  return ForEachField(r,
                      [&](std::uint32_t n, std::uint32_t t, Reader& rr, std::size_t at) -> Status {
                        if (n == 1) return ReadString(rr, t, &l->name, at);
                        if (n == 2) return ReadString(rr, t, &l->value, at);
                        return rr.Skip(t) ? Status{} : Malformed(at, "truncated unknown field");
                      });
}

Status DecodeSample(std::string_view bytes, std::size_t base, Sample* s) {
  Reader r(bytes, base);
  return ForEachField(r,
                      [&](std::uint32_t n, std::uint32_t t, Reader& rr, std::size_t at) -> Status {
                        if (n == 1) {
                          std::uint64_t bits = 0;
                          if (t != kFixed64 || !rr.Fixed64(&bits))
                            return Malformed(at, "bad sample value");
                          s->value = std::bit_cast<double>(bits);
                          return Status{};
                        }
                        if (n == 2) {
                          std::uint64_t v = 0;
                          if (t != kVarint || !rr.Varint(&v))
                            return Malformed(at, "bad sample timestamp");
                          s->timestamp_ms = static_cast<std::int64_t>(v);
                          return Status{};
                        }
                        return rr.Skip(t) ? Status{} : Malformed(at, "truncated unknown field");
                      });
}

Status DecodeSeries(std::string_view bytes, std::size_t base, TimeSeries* ts) {
  Reader r(bytes, base);
  return ForEachField(r,
                      [&](std::uint32_t n, std::uint32_t t, Reader& rr, std::size_t at) -> Status {
                        if ((n == 1 || n == 2) && t == kBytes) {
                          std::string_view v;
                          std::size_t where = 0;
                          if (!rr.Bytes(&v, &where))
                            return Malformed(at, "truncated label or sample");
                          if (n == 1) return DecodeLabel(v, where, &ts->labels.emplace_back());
                          return DecodeSample(v, where, &ts->samples.emplace_back());
                        }
                        if (n == 1 || n == 2)
                          return Malformed(at, "a label or sample with the wrong wire type");
                        return rr.Skip(t) ? Status{} : Malformed(at, "truncated unknown field");
                      });
}

Status DecodeMetadata(std::string_view bytes, std::size_t base, MetricMetadata* m) {
  Reader r(bytes, base);
  return ForEachField(r,
                      [&](std::uint32_t n, std::uint32_t t, Reader& rr, std::size_t at) -> Status {
                        if (n == 1) {
                          std::uint64_t v = 0;
                          if (t != kVarint || !rr.Varint(&v))
                            return Malformed(at, "bad metadata type");
                          m->type = v <= 7 ? static_cast<MetricType>(v) : MetricType::kUnknown;
                          return Status{};
                        }
                        if (n == 2) return ReadString(rr, t, &m->family, at);
                        if (n == 4) return ReadString(rr, t, &m->help, at);
                        if (n == 5) return ReadString(rr, t, &m->unit, at);
                        return rr.Skip(t) ? Status{} : Malformed(at, "truncated unknown field");
                      });
}

}  // namespace

void EncodeWriteRequest(const std::vector<TimeSeries>& series,
                        const std::vector<MetricMetadata>& metadata, std::string* out) {
  std::size_t total = 0;
  for (const TimeSeries& ts : series) total += BytesFieldSize(1, SeriesSize(ts));
  for (const MetricMetadata& m : metadata) total += BytesFieldSize(3, MetadataSize(m));
  out->reserve(out->size() + total);
  for (const TimeSeries& ts : series) {
    PutKey(1, kBytes, out);
    PutVarint(SeriesSize(ts), out);
    for (const Label& l : ts.labels) {
      PutKey(1, kBytes, out);
      PutVarint(LabelSize(l), out);
      PutBytes(1, l.name, out);
      PutBytes(2, l.value, out);
    }
    for (const Sample& s : ts.samples) {
      PutKey(2, kBytes, out);
      PutVarint(SampleSize(s), out);
      PutKey(1, kFixed64, out);
      const auto bits = std::bit_cast<std::uint64_t>(s.value);
      char le[8];
      std::memcpy(le, &bits, 8);
      out->append(le, 8);
      PutKey(2, kVarint, out);
      PutVarint(static_cast<std::uint64_t>(s.timestamp_ms), out);
    }
  }
  for (const MetricMetadata& m : metadata) {
    PutKey(3, kBytes, out);
    PutVarint(MetadataSize(m), out);
    if (m.type != MetricType::kUnknown) {
      PutKey(1, kVarint, out);
      PutVarint(static_cast<std::uint64_t>(m.type), out);
    }
    if (!m.family.empty()) PutBytes(2, m.family, out);
    if (!m.help.empty()) PutBytes(4, m.help, out);
    if (!m.unit.empty()) PutBytes(5, m.unit, out);
  }
}

Expected<WriteRequest> DecodeWriteRequest(std::string_view bytes) {
  WriteRequest req;
  Reader r(bytes);
  Status s =
      ForEachField(r, [&](std::uint32_t n, std::uint32_t t, Reader& rr, std::size_t at) -> Status {
        if ((n == 1 || n == 3) && t == kBytes) {
          std::string_view v;
          std::size_t where = 0;
          if (!rr.Bytes(&v, &where)) return Malformed(at, "truncated time series or metadata");
          if (n == 1) return DecodeSeries(v, where, &req.series.emplace_back());
          return DecodeMetadata(v, where, &req.metadata.emplace_back());
        }
        if (n == 1 || n == 3)
          return Malformed(at, "a time series or metadata with the wrong wire type");
        return rr.Skip(t) ? Status{} : Malformed(at, "truncated unknown field");
      });
  if (!s.ok()) return Error{s.message()};
  return req;
}

}  // namespace gw::remote
