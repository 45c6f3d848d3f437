// tsdb/coding.h — bit streams, varints and CRC32 shared by the chunk codec, the WAL and the DB.
//
// Internal to tsdb/. Byte order on disk is little-endian everywhere; bit streams are written
// most-significant bit first inside each byte.
#ifndef GPUWARDEN_TSDB_CODING_H_
#define GPUWARDEN_TSDB_CODING_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace gw::tsdb {

inline uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t UnZigZag(uint64_t u) {
  return static_cast<int64_t>(u >> 1) ^ -static_cast<int64_t>(u & 1);
}

// Number of significant bits in `v` (0 for 0, 64 for values with the top bit set).
inline int BitLength(uint64_t v) {
  return v == 0 ? 0 : 64 - __builtin_clzll(v);
}

// Appends bits to a byte string, MSB first. The last byte is zero-padded.
class BitWriter {
 public:
  explicit BitWriter(std::string* out) : out_(out) {}
  // Writes the low `n` bits of `v` (0 <= n <= 64).
  void Write(uint64_t v, int n);
  void WriteBit(bool b) { Write(b ? 1 : 0, 1); }
  // 7-bit length L followed by the L significant bits of `v`.
  void WriteVar(uint64_t v);
  // Elias gamma code of v >= 1: (bits-1) zeros, then v in `bits` bits.
  void WriteGamma(uint64_t v);
  size_t bit_count() const { return bits_; }

 private:
  std::string* out_;
  size_t bits_ = 0;
};

// Reads what BitWriter wrote. Reading past the end sets `overrun()` and yields zeros, so a
// corrupt chunk decodes to garbage-but-bounded work and is then reported, never a crash.
class BitReader {
 public:
  explicit BitReader(std::string_view in) : in_(in) {}
  // Inline: the decoders call it once or twice per sample.
  uint64_t Read(int n) {
    // Fast path: the bits lie inside one 8-byte window that is wholly in the input (n <= 56 and
    // at most 7 bits of the first byte already used): one load instead of a loop over bytes.
    const size_t first = pos_ >> 3;
    if (n > 0 && n <= 56 && first + 8 <= in_.size()) {
      uint64_t word;
      std::memcpy(&word, in_.data() + first, sizeof word);
      if constexpr (std::endian::native == std::endian::little) word = __builtin_bswap64(word);
      const int used = static_cast<int>(pos_ & 7);
      pos_ += static_cast<size_t>(n);
      return (word << used) >> (64 - n);
    }
    return ReadSlow(n);
  }
  bool ReadBit() { return Read(1) != 0; }
  uint64_t ReadVar();
  uint64_t ReadGamma();
  bool overrun() const { return overrun_; }

 private:
  uint64_t ReadSlow(int n);  // byte by byte: the input's last 7 bytes, n > 56, n == 0

  std::string_view in_;
  size_t pos_ = 0;  // in bits
  bool overrun_ = false;
};

// LEB128 unsigned varints in bytes.
void PutUvarint(std::string* out, uint64_t v);
inline void PutVarint(std::string* out, int64_t v) {
  PutUvarint(out, ZigZag(v));
}
void PutFixed32(std::string* out, uint32_t v);
void PutString(std::string* out, std::string_view s);  // uvarint length + bytes

// Readers consume from the front of `in`; false when the input is short or malformed.
bool GetUvarint(std::string_view* in, uint64_t* v);
bool GetVarint(std::string_view* in, int64_t* v);
bool GetFixed32(std::string_view* in, uint32_t* v);
bool GetFixed64(std::string_view* in, uint64_t* v);
bool GetString(std::string_view* in, std::string* s);

// CRC-32 (IEEE 802.3, the polynomial of zlib and Ethernet).
uint32_t Crc32(std::string_view data, uint32_t crc = 0);

}  // namespace gw::tsdb

#endif  // GPUWARDEN_TSDB_CODING_H_
