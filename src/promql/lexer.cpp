// Tokenizer for PromQL, following the token rules of Prometheus 2.42's promql/parser/lex.go.
#include "promql/lexer.h"

#include <cctype>
#include <cstdint>

namespace gw::promql {
namespace {

bool IsAlpha(char c) { return c == '_' || std::isalpha(static_cast<unsigned char>(c)); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlnum(char c) { return IsAlpha(c) || IsDigit(c); }
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

int HexValue(char c) {
  if (IsDigit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Lexer {
 public:
  explicit Lexer(std::string_view q) : q_(q) {}

  std::vector<Token> Run() {
    std::vector<Token> out;
    for (;;) {
      Token t = Next();
      bool done = t.type == Tok::kEof || t.type == Tok::kError;
      out.push_back(std::move(t));
      if (done) return out;
    }
  }

 private:
  char Peek(size_t ahead = 0) const { return pos_ + ahead < q_.size() ? q_[pos_ + ahead] : '\0'; }

  Token Make(Tok type, size_t start, std::string text) {
    return Token{type, std::move(text), static_cast<int>(start), static_cast<int>(pos_)};
  }
  Token Error(size_t start, std::string message) {
    return Token{Tok::kError, std::move(message), static_cast<int>(start), static_cast<int>(pos_)};
  }

  Token Next() {
    for (;;) {
      while (pos_ < q_.size() && IsSpace(q_[pos_])) ++pos_;
      if (Peek() != '#') break;
      while (pos_ < q_.size() && q_[pos_] != '\n') ++pos_;
    }
    size_t start = pos_;
    if (pos_ >= q_.size()) return Make(Tok::kEof, start, "");
    char c = q_[pos_];
    if (IsDigit(c) || (c == '.' && IsDigit(Peek(1)))) return NumberOrDuration();
    if (IsAlpha(c)) {
      while (pos_ < q_.size() && (IsAlnum(q_[pos_]) || q_[pos_] == ':')) ++pos_;
      std::string word(q_.substr(start, pos_ - start));
      std::string lower;
      for (char ch : word) lower.push_back(static_cast<char>(std::tolower(ch)));
      if (lower == "inf" || lower == "nan") return Make(Tok::kNumber, start, word);
      return Make(Tok::kIdentifier, start, word);
    }
    if (c == ':' && IsAlpha(Peek(1)) && !in_brackets_) {
      // Recording-rule style names may begin with a colon.
      ++pos_;
      while (pos_ < q_.size() && (IsAlnum(q_[pos_]) || q_[pos_] == ':')) ++pos_;
      return Make(Tok::kIdentifier, start, std::string(q_.substr(start, pos_ - start)));
    }
    if (c == '"' || c == '\'' || c == '`') return QuotedString(c);
    ++pos_;
    auto two = [&](char next, Tok yes, Tok no, const char* yes_text, const char* no_text) {
      if (Peek() == next) {
        ++pos_;
        return Make(yes, start, yes_text);
      }
      return Make(no, start, no_text);
    };
    switch (c) {
      case '(': return Make(Tok::kLeftParen, start, "(");
      case ')': return Make(Tok::kRightParen, start, ")");
      case '{': return Make(Tok::kLeftBrace, start, "{");
      case '}': return Make(Tok::kRightBrace, start, "}");
      case '[': in_brackets_ = true; return Make(Tok::kLeftBracket, start, "[");
      case ']': in_brackets_ = false; return Make(Tok::kRightBracket, start, "]");
      case ',': return Make(Tok::kComma, start, ",");
      case ':': return Make(Tok::kColon, start, ":");
      case '@': return Make(Tok::kAt, start, "@");
      case '+': return Make(Tok::kAdd, start, "+");
      case '-': return Make(Tok::kSub, start, "-");
      case '*': return Make(Tok::kMul, start, "*");
      case '/': return Make(Tok::kDiv, start, "/");
      case '%': return Make(Tok::kMod, start, "%");
      case '^': return Make(Tok::kPow, start, "^");
      case '<': return two('=', Tok::kLte, Tok::kLss, "<=", "<");
      case '>': return two('=', Tok::kGte, Tok::kGtr, ">=", ">");
      case '=':
        if (Peek() == '=') {
          ++pos_;
          return Make(Tok::kEqlc, start, "==");
        }
        return two('~', Tok::kEqlRegex, Tok::kAssign, "=~", "=");
      case '!':
        if (Peek() == '=') {
          ++pos_;
          return Make(Tok::kNeq, start, "!=");
        }
        if (Peek() == '~') {
          ++pos_;
          return Make(Tok::kNeqRegex, start, "!~");
        }
        return Error(start, "unexpected character after '!': " + std::string(1, Peek()));
      default:
        return Error(start, std::string("unexpected character: '") + c + "'");
    }
  }

  Token NumberOrDuration() {
    size_t start = pos_;
    const char* digits = "0123456789";
    auto accept_run = [&](const char* set) {
      while (pos_ < q_.size() && std::string_view(set).find(q_[pos_]) != std::string_view::npos)
        ++pos_;
    };
    if (Peek() == '0' && (Peek(1) == 'x' || Peek(1) == 'X')) {
      pos_ += 2;
      digits = "0123456789abcdefABCDEF";
    }
    accept_run(digits);
    if (Peek() == '.') {
      ++pos_;
      accept_run(digits);
    }
    if (Peek() == 'e' || Peek() == 'E') {
      ++pos_;
      if (Peek() == '+' || Peek() == '-') ++pos_;
      accept_run("0123456789");
    }
    if (!IsAlnum(Peek())) {
      return Make(Tok::kNumber, start, std::string(q_.substr(start, pos_ - start)));
    }
    // A duration: digits and units, e.g. 1h30m; validated by the parser.
    pos_ = start;
    while (pos_ < q_.size() && IsAlnum(q_[pos_])) ++pos_;
    return Make(Tok::kDuration, start, std::string(q_.substr(start, pos_ - start)));
  }

  Token QuotedString(char quote) {
    size_t start = pos_++;
    std::string value;
    while (true) {
      if (pos_ >= q_.size() || (quote != '`' && q_[pos_] == '\n'))
        return Error(start, quote == '`' ? "unterminated raw string" : "unterminated quoted string");
      char c = q_[pos_++];
      if (c == quote) break;
      if (c != '\\' || quote == '`') {
        value.push_back(c);
        continue;
      }
      if (pos_ >= q_.size()) return Error(start, "unterminated quoted string");
      char e = q_[pos_++];
      switch (e) {
        case 'a': value.push_back('\a'); break;
        case 'b': value.push_back('\b'); break;
        case 'f': value.push_back('\f'); break;
        case 'n': value.push_back('\n'); break;
        case 'r': value.push_back('\r'); break;
        case 't': value.push_back('\t'); break;
        case 'v': value.push_back('\v'); break;
        case '\\': value.push_back('\\'); break;
        case '\'':
        case '"':
          if (e != quote) return Error(start, "unknown escape sequence");
          value.push_back(e);
          break;
        case 'x':
        case 'u':
        case 'U': {
          int n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (int i = 0; i < n; ++i) {
            int h = HexValue(Peek());
            if (h < 0) return Error(start, "illegal character in escape sequence");
            cp = cp * 16 + static_cast<uint32_t>(h);
            ++pos_;
          }
          if (e == 'x') {
            value.push_back(static_cast<char>(cp));
          } else {
            if (cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000))
              return Error(start, "escape sequence is invalid Unicode code point");
            AppendUtf8(cp, &value);
          }
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            uint32_t v = static_cast<uint32_t>(e - '0');
            for (int i = 0; i < 2; ++i) {
              if (Peek() < '0' || Peek() > '7')
                return Error(start, "illegal character in escape sequence");
              v = v * 8 + static_cast<uint32_t>(q_[pos_++] - '0');
            }
            if (v > 255) return Error(start, "octal escape value > 255");
            value.push_back(static_cast<char>(v));
            break;
          }
          return Error(start, "unknown escape sequence");
      }
    }
    return Make(Tok::kString, start, value);
  }

  std::string_view q_;
  size_t pos_ = 0;
  bool in_brackets_ = false;
};

}  // namespace

std::vector<Token> Lex(std::string_view query) { return Lexer(query).Run(); }

std::string DescribeToken(const Token& t) {
  switch (t.type) {
    case Tok::kEof: return "end of input";
    case Tok::kIdentifier: return "identifier \"" + t.text + "\"";
    case Tok::kNumber: return "number \"" + t.text + "\"";
    case Tok::kDuration: return "duration \"" + t.text + "\"";
    case Tok::kString: return "string";
    default: return "\"" + t.text + "\"";
  }
}

}  // namespace gw::promql
