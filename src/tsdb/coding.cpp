#include "tsdb/coding.h"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cstring>

namespace gw::tsdb {

void BitWriter::Write(uint64_t v, int n) {
  while (n > 0) {
    const int used = static_cast<int>(bits_ & 7);
    if (used == 0) out_->push_back('\0');
    const int room = 8 - used;
    const int take = n < room ? n : room;
    const uint64_t chunk = (v >> (n - take)) & ((1ULL << take) - 1);
    out_->back() = static_cast<char>(static_cast<uint8_t>(out_->back()) |
                                     static_cast<uint8_t>(chunk << (room - take)));
    bits_ += static_cast<size_t>(take);
    n -= take;
  }
}

void BitWriter::WriteVar(uint64_t v) {
  const int len = BitLength(v);
  Write(static_cast<uint64_t>(len), 7);
  Write(v, len);
}

void BitWriter::WriteGamma(uint64_t v) {
  const int len = BitLength(v);
  Write(0, len - 1);
  Write(v, len);
}

uint64_t BitReader::ReadSlow(int n) {
  uint64_t v = 0;
  while (n > 0) {
    const size_t byte = pos_ >> 3;
    if (byte >= in_.size()) {
      overrun_ = true;
      return 0;
    }
    const int used = static_cast<int>(pos_ & 7);
    const int room = 8 - used;
    const int take = n < room ? n : room;
    const uint64_t bits = (static_cast<uint8_t>(in_[byte]) >> (room - take)) & ((1U << take) - 1);
    v = (v << take) | bits;
    pos_ += static_cast<size_t>(take);
    n -= take;
  }
  return v;
}

uint64_t BitReader::ReadVar() {
  const int len = static_cast<int>(Read(7));
  if (len > 64) {
    overrun_ = true;
    return 0;
  }
  return Read(len);
}

uint64_t BitReader::ReadGamma() {
  int zeros = 0;
  while (!ReadBit()) {
    if (overrun_ || ++zeros > 63) {
      overrun_ = true;
      return 1;
    }
  }
  return (1ULL << zeros) | Read(zeros);
}

void PutUvarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void PutFixed32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

void PutString(std::string* out, std::string_view s) {
  PutUvarint(out, s.size());
  out->append(s);
}

bool GetUvarint(std::string_view* in, uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift <= 63 && !in->empty(); shift += 7) {
    const auto byte = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *v = result;
      return true;
    }
  }
  return false;
}

bool GetVarint(std::string_view* in, int64_t* v) {
  uint64_t u;
  if (!GetUvarint(in, &u)) return false;
  *v = UnZigZag(u);
  return true;
}

bool GetFixed32(std::string_view* in, uint32_t* v) {
  if (in->size() < 4) return false;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) r |= static_cast<uint32_t>(static_cast<uint8_t>((*in)[i])) << (8 * i);
  in->remove_prefix(4);
  *v = r;
  return true;
}

bool GetFixed64(std::string_view* in, uint64_t* v) {
  if (in->size() < 8) return false;
  uint64_t r = 0;
  for (int i = 0; i < 8; ++i) r |= static_cast<uint64_t>(static_cast<uint8_t>((*in)[i])) << (8 * i);
  in->remove_prefix(8);
  *v = r;
  return true;
}

bool GetString(std::string_view* in, std::string* s) {
  uint64_t len;
  if (!GetUvarint(in, &len) || len > in->size()) return false;
  s->assign(in->data(), len);
  in->remove_prefix(len);
  return true;
}

uint32_t Crc32(std::string_view data, uint32_t crc) {
  // zlib's implementation is several times faster than a byte-wise table; same polynomial.
  uLong c = crc;
  while (!data.empty()) {
    const auto n = static_cast<uInt>(std::min<size_t>(data.size(), 1U << 30));
    c = ::crc32(c, reinterpret_cast<const Bytef*>(data.data()), n);
    data.remove_prefix(n);
  }
  return static_cast<uint32_t>(c);
}

}  // namespace gw::tsdb
