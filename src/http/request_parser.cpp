#include "http/request_parser.h"

#include <cstring>

namespace gw::http {
namespace {

bool IsTchar(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return c != 0 && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    if (!IsTchar(c)) return false;
  }
  return true;
}

// A field value byte: visible ASCII, obs-text, space or tab.
bool IsFieldValueByte(unsigned char c) {
  return c == '\t' || c == ' ' || (c > 0x20 && c != 0x7f);
}

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

HeadParse HeadError(int status, std::string why) {
  HeadParse out;
  out.status = HeadParse::Status::kError;
  out.error_status = status;
  out.error = std::move(why);
  return out;
}

// Splits off the next line (without its LF and an optional CR before it). False if no LF.
bool NextLine(std::string_view* rest, std::string_view* line) {
  size_t lf = rest->find('\n');
  if (lf == std::string_view::npos) return false;
  std::string_view l = rest->substr(0, lf);
  if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
  *line = l;
  rest->remove_prefix(lf + 1);
  return true;
}

// Parses a non-empty decimal number without sign or spaces; false on overflow past 2^62.
bool ParseDecimal(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 18) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

const std::string* RequestHead::Field(std::string_view lower_name) const {
  for (const auto& [name, value] : fields) {
    if (name == lower_name) return &value;
  }
  return nullptr;
}

HeadParse ParseRequestHead(std::string_view data, const HeadLimits& limits) {
  // Empty lines before the request line are skipped (robustness for clients that send an extra
  // CRLF after a body).
  size_t start = 0;
  while (start < data.size() && (data[start] == '\n' || data[start] == '\r')) {
    if (data[start] == '\r' && (start + 1 >= data.size() || data[start + 1] != '\n')) {
      if (start + 1 >= data.size()) return {};  // a CR whose LF has not come yet
      return HeadError(400, "bare CR in request");
    }
    start += data[start] == '\r' ? 2 : 1;
    if (start > limits.max_head_bytes) return HeadError(400, "too many empty lines");
  }
  std::string_view text = data.substr(start);

  // Find the blank line that ends the head: "\n\n" or "\n\r\n".
  size_t end = std::string_view::npos;
  for (size_t lf = text.find('\n'); lf != std::string_view::npos; lf = text.find('\n', lf + 1)) {
    if (lf + 1 < text.size() && text[lf + 1] == '\n') {
      end = lf + 2;
      break;
    }
    if (lf + 2 < text.size() && text[lf + 1] == '\r' && text[lf + 2] == '\n') {
      end = lf + 3;
      break;
    }
  }
  if (end == std::string_view::npos) {
    if (text.size() <= limits.max_head_bytes) return {};
    if (text.find('\n') == std::string_view::npos) return HeadError(414, "request URI too long");
    return HeadError(431, "request header fields too large");
  }
  if (end > limits.max_head_bytes) {
    size_t first_lf = text.find('\n');
    if (first_lf > limits.max_head_bytes) return HeadError(414, "request URI too long");
    return HeadError(431, "request header fields too large");
  }

  std::string_view rest = text.substr(0, end);
  for (char c : rest) {
    if (c == '\0') return HeadError(400, "NUL byte in request head");
  }
  HeadParse out;
  std::string_view line;
  NextLine(&rest, &line);
  if (line.find('\r') != std::string_view::npos) return HeadError(400, "bare CR in request line");

  // method SP request-target SP HTTP-version
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return HeadError(400, "malformed request line");
  }
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (!IsToken(method)) return HeadError(400, "malformed method");
  if (target.empty()) return HeadError(400, "empty request target");
  for (unsigned char c : target) {
    if (c <= 0x20 || c == 0x7f) return HeadError(400, "malformed request target");
  }
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || version[6] != '.' ||
      version[5] < '0' || version[5] > '9' || version[7] < '0' || version[7] > '9') {
    return HeadError(400, "malformed HTTP version");
  }
  if (version[5] != '1') return HeadError(505, "HTTP version not supported");
  out.head.method = std::string(method);
  out.head.target = std::string(target);
  out.head.minor_version = version[7] - '0';

  while (NextLine(&rest, &line)) {
    if (line.empty()) break;  // the blank line
    if (line.find('\r') != std::string_view::npos) return HeadError(400, "bare CR in header");
    if (line[0] == ' ' || line[0] == '\t') {
      return HeadError(400, "obsolete line folding is not accepted");
    }
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return HeadError(400, "malformed header line");
    std::string_view name = line.substr(0, colon);
    if (!IsToken(name)) return HeadError(400, "malformed header name");
    std::string_view value = TrimOws(line.substr(colon + 1));
    for (unsigned char c : value) {
      if (!IsFieldValueByte(c)) return HeadError(400, "malformed header value");
    }
    if (out.head.fields.size() >= limits.max_header_fields) {
      return HeadError(431, "too many header fields");
    }
    out.head.fields.emplace_back(Lower(name), std::string(value));
  }
  out.status = HeadParse::Status::kComplete;
  out.consumed = start + end;
  return out;
}

BodyFraming BodyFramingOf(const RequestHead& head) {
  BodyFraming out;
  auto fail = [&](int status, std::string why) {
    out.kind = BodyFraming::Kind::kError;
    out.error_status = status;
    out.error = std::move(why);
    return out;
  };
  bool have_length = false, have_te = false;
  uint64_t length = 0;
  std::string codings;
  for (const auto& [name, value] : head.fields) {
    if (name == "content-length") {
      // "5, 5" (a list of one repeated value) is tolerated, as RFC 9110 §8.6 allows.
      std::string_view list = value;
      while (true) {
        size_t comma = list.find(',');
        uint64_t v = 0;
        if (!ParseDecimal(TrimOws(list.substr(0, comma)), &v)) {
          return fail(400, "malformed Content-Length");
        }
        if (have_length && v != length) return fail(400, "conflicting Content-Length values");
        have_length = true;
        length = v;
        if (comma == std::string_view::npos) break;
        list.remove_prefix(comma + 1);
      }
    } else if (name == "transfer-encoding") {
      have_te = true;
      if (!codings.empty()) codings += ",";
      codings += value;
    }
  }
  if (have_te) {
    if (have_length) return fail(400, "both Content-Length and Transfer-Encoding");
    if (head.minor_version == 0) return fail(400, "Transfer-Encoding in an HTTP/1.0 request");
    // Only "chunked" alone: any other coding (gzip, identity lists) is not implemented.
    if (!EqualsIgnoreCase(TrimOws(codings), "chunked")) {
      return fail(501, "unsupported Transfer-Encoding");
    }
    out.kind = BodyFraming::Kind::kChunked;
    return out;
  }
  if (have_length && length > 0) {
    out.kind = BodyFraming::Kind::kLength;
    out.length = length;
  }
  return out;
}

ChunkedDecoder::Result ChunkedDecoder::Fail(std::string why) {
  state_ = State::kError;
  error_ = std::move(why);
  return Result::kError;
}

ChunkedDecoder::Result ChunkedDecoder::Feed(std::string_view in, size_t* consumed, std::string* out,
                                            size_t max_out) {
  size_t pos = 0;
  size_t appended = 0;
  auto done = [&](Result r) {
    *consumed = pos;
    return r;
  };
  while (true) {
    switch (state_) {
      case State::kDone:
        return done(Result::kDone);
      case State::kError:
        return done(Result::kError);
      case State::kSize:
      case State::kTrailer: {
        size_t lf = in.find('\n', pos);
        std::string_view piece = in.substr(pos, lf == std::string_view::npos ? in.npos : lf - pos);
        size_t limit = state_ == State::kSize ? limits_.max_line_bytes : limits_.max_trailer_bytes;
        const size_t before = line_.size() + (state_ == State::kTrailer ? trailer_bytes_ : 0);
        if (before + piece.size() > limit) {
          return done(Fail(state_ == State::kSize ? "chunk size line too long"
                                                  : "chunked trailer too large"));
        }
        line_.append(piece);
        if (lf == std::string_view::npos) {
          pos = in.size();
          return done(Result::kNeedMore);
        }
        pos = lf + 1;
        std::string_view line = line_;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.find('\r') != std::string_view::npos) return done(Fail("bare CR in chunked body"));
        if (state_ == State::kTrailer) {
          trailer_bytes_ += line_.size() + 1;
          if (line.empty()) {
            line_.clear();
            state_ = State::kDone;
            return done(Result::kDone);
          }
          // A trailer field: checked for shape, then ignored.
          size_t colon = line.find(':');
          if (colon == std::string_view::npos || !IsToken(line.substr(0, colon))) {
            return done(Fail("malformed chunked trailer"));
          }
          line_.clear();  // `line` points into it: cleared only once read
          continue;
        }
        // chunk-size [; extensions]
        std::string_view size_text = line.substr(0, line.find(';'));
        size_text = TrimOws(size_text);
        if (size_text.empty() || size_text.size() > 15) return done(Fail("malformed chunk size"));
        uint64_t size = 0;
        for (char c : size_text) {
          int d = HexDigit(c);
          if (d < 0) return done(Fail("malformed chunk size"));
          size = size * 16 + static_cast<uint64_t>(d);
        }
        line_.clear();
        if (size == 0) {
          state_ = State::kTrailer;
        } else {
          chunk_left_ = size;
          state_ = State::kData;
        }
        continue;
      }
      case State::kData: {
        if (appended > max_out) return done(Result::kNeedMore);
        size_t available = in.size() - pos;
        if (available == 0) return done(Result::kNeedMore);
        size_t take = static_cast<size_t>(std::min<uint64_t>(chunk_left_, available));
        if (out) out->append(in.data() + pos, take);
        appended += take;
        payload_ += take;
        pos += take;
        chunk_left_ -= take;
        if (chunk_left_ == 0) {
          state_ = State::kDataCrlf;
          crlf_seen_ = 0;
        }
        continue;
      }
      case State::kDataCrlf: {
        if (pos >= in.size()) return done(Result::kNeedMore);
        char c = in[pos];
        if (crlf_seen_ == 0 && c == '\r') {
          crlf_seen_ = 1;
          ++pos;
          continue;
        }
        if (c != '\n') return done(Fail("missing CRLF after chunk data"));
        ++pos;
        state_ = State::kSize;
        continue;
      }
    }
  }
}

bool DecodePath(std::string_view in, std::string* out) {
  out->clear();
  out->reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;
    int hi = HexDigit(in[i + 1]), lo = HexDigit(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 206:
      return "Partial Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 303:
      return "See Other";
    case 304:
      return "Not Modified";
    case 307:
      return "Temporary Redirect";
    case 308:
      return "Permanent Redirect";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 406:
      return "Not Acceptable";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 411:
      return "Length Required";
    case 413:
      return "Payload Too Large";
    case 414:
      return "URI Too Long";
    case 415:
      return "Unsupported Media Type";
    case 416:
      return "Range Not Satisfiable";
    case 417:
      return "Expectation Failed";
    case 422:
      return "Unprocessable Entity";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "";
  }
}

}  // namespace gw::http
