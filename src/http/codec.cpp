#include "http/codec.h"

#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace gw::http {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool UnescapeForm(std::string_view in, std::string* out) {
  out->clear();
  out->reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '+') {
      out->push_back(' ');
    } else if (c == '%') {
      if (i + 2 >= in.size()) return false;
      int hi = HexValue(in[i + 1]);
      int lo = HexValue(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      out->push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      out->push_back(c);
    }
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The q value of one Accept-Encoding element ("gzip;q=0.5"); 1 when absent, 0 when unparsable.
double QValue(std::string_view params) {
  while (!params.empty()) {
    size_t semi = params.find(';');
    std::string_view param = Trim(params.substr(0, semi));
    params = semi == std::string_view::npos ? std::string_view() : params.substr(semi + 1);
    if (param.size() >= 2 && (param[0] == 'q' || param[0] == 'Q') && param[1] == '=') {
      std::string number(param.substr(2));
      char* end = nullptr;
      double q = std::strtod(number.c_str(), &end);
      if (end == number.c_str() || *end != '\0' || !(q >= 0)) return 0;
      return q;
    }
  }
  return 1;
}

}  // namespace

std::string ToLowerAscii(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

void ParseFormInto(std::string_view text, std::multimap<std::string, std::string>* out) {
  while (!text.empty()) {
    size_t amp = text.find('&');
    std::string_view pair = text.substr(0, amp);
    text = amp == std::string_view::npos ? std::string_view() : text.substr(amp + 1);
    size_t eq = pair.find('=');
    std::string key, value;
    if (!UnescapeForm(pair.substr(0, eq), &key) || key.empty()) continue;
    if (eq != std::string_view::npos && !UnescapeForm(pair.substr(eq + 1), &value)) continue;
    out->emplace(std::move(key), std::move(value));
  }
}

bool AcceptsGzip(std::string_view accept_encoding) {
  double gzip_q = -1, star_q = -1;
  while (!accept_encoding.empty()) {
    size_t comma = accept_encoding.find(',');
    std::string_view element = accept_encoding.substr(0, comma);
    accept_encoding =
        comma == std::string_view::npos ? std::string_view() : accept_encoding.substr(comma + 1);
    size_t semi = element.find(';');
    std::string coding = ToLowerAscii(Trim(element.substr(0, semi)));
    double q = semi == std::string_view::npos ? 1 : QValue(element.substr(semi + 1));
    if (coding == "gzip" || coding == "x-gzip") {
      gzip_q = q;
    } else if (coding == "*") {
      star_q = q;
    }
  }
  if (gzip_q >= 0) return gzip_q > 0;
  return star_q > 0;
}

bool GzipCompress(std::string_view in, std::string* out) {
  if (in.size() > std::numeric_limits<uInt>::max() / 2) return false;
  z_stream zs;
  std::memset(&zs, 0, sizeof(zs));
  // 15 window bits + 16 selects the gzip wrapper instead of zlib's.
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    return false;
  }
  out->resize(deflateBound(&zs, static_cast<uLong>(in.size())));
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out->data());
  zs.avail_out = static_cast<uInt>(out->size());
  int rc = deflate(&zs, Z_FINISH);
  size_t written = zs.total_out;
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) return false;
  out->resize(written);
  return true;
}

struct BodyInflater::State {
  z_stream zs;
  bool initialized = false;
};

BodyInflater::BodyInflater() : state_(new State) {
  std::memset(&state_->zs, 0, sizeof(state_->zs));
  // 15 window bits + 32: zlib or gzip wrapper, detected from the header.
  state_->initialized = inflateInit2(&state_->zs, 15 + 32) == Z_OK;
}

BodyInflater::~BodyInflater() {
  if (state_->initialized) inflateEnd(&state_->zs);
  delete state_;
}

BodyInflater::Result BodyInflater::Feed(std::string_view in, std::string* out, size_t max_out) {
  if (!state_->initialized || failed_) return Result::kError;
  if (finished_) {
    if (in.empty()) return Result::kOk;
    failed_ = true;
    return Result::kError;  // bytes after the end of the stream
  }
  z_stream& zs = state_->zs;
  char chunk[16384];
  bool more = true;
  while (more) {
    const size_t piece = std::min<size_t>(in.size(), std::numeric_limits<uInt>::max());
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    zs.avail_in = static_cast<uInt>(piece);
    zs.next_out = reinterpret_cast<Bytef*>(chunk);
    zs.avail_out = sizeof(chunk);
    int rc = inflate(&zs, Z_NO_FLUSH);
    const size_t used = piece - zs.avail_in;
    in.remove_prefix(used);
    const size_t produced = sizeof(chunk) - zs.avail_out;
    if (rc != Z_OK && rc != Z_STREAM_END && !(rc == Z_BUF_ERROR && used == 0 && produced == 0)) {
      failed_ = true;
      return Result::kError;
    }
    if (out->size() + produced > max_out) {
      failed_ = true;
      return Result::kTooLarge;
    }
    out->append(chunk, produced);
    if (rc == Z_STREAM_END) {
      finished_ = true;
      if (!in.empty()) {
        failed_ = true;
        return Result::kError;
      }
      return Result::kOk;
    }
    if (used == 0 && produced == 0) break;  // zlib wants more input than there is
    // A full output piece may leave more output pending inside zlib, even with no input left.
    more = !in.empty() || produced == sizeof(chunk);
  }
  return Result::kOk;
}

bool IsInflatableEncoding(std::string_view content_encoding) {
  std::string coding = ToLowerAscii(Trim(content_encoding));
  return coding == "gzip" || coding == "x-gzip" || coding == "deflate";
}

bool DecodeBase64(std::string_view in, std::string* out) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  out->clear();
  if (in.size() % 4 != 0) return false;
  for (size_t i = 0; i < in.size(); i += 4) {
    bool last = i + 4 == in.size();
    int v[4];
    int pad = 0;
    for (int j = 0; j < 4; ++j) {
      char c = in[i + j];
      if (c == '=' && last && j >= 2) {
        v[j] = 0;
        ++pad;
      } else if (pad > 0 || (v[j] = value(c)) < 0) {
        return false;
      }
    }
    unsigned triple =
        (unsigned(v[0]) << 18) | (unsigned(v[1]) << 12) | (unsigned(v[2]) << 6) | unsigned(v[3]);
    // Strict decoding: the bits that padding discards must be zero.
    if ((pad == 1 && (triple & 0xFF) != 0) || (pad == 2 && (triple & 0xFFFF) != 0)) return false;
    out->push_back(static_cast<char>(triple >> 16));
    if (pad < 2) out->push_back(static_cast<char>((triple >> 8) & 0xFF));
    if (pad < 1) out->push_back(static_cast<char>(triple & 0xFF));
  }
  return true;
}

}  // namespace gw::http
