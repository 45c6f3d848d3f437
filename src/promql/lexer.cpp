// Tokenizer for PromQL, following the token rules of Prometheus 2.42's promql/parser/lex.go.
#include "promql/lexer.h"

#include <cctype>
#include <cstdint>
#include <cstdio>

namespace gw::promql {
namespace {

bool IsAlpha(char c) {
  return c == '_' || std::isalpha(static_cast<unsigned char>(c));
}
bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}
bool IsAlnum(char c) {
  return IsAlpha(c) || IsDigit(c);
}
bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

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
  char Peek(int ahead = 0) const {
    size_t i = pos_ + static_cast<size_t>(ahead);
    return i < q_.size() ? q_[i] : '\0';
  }

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
    if (expect_duration_) {
      expect_duration_ = false;
      return NumberOrDuration(/*duration_only=*/true);
    }
    if (pos_ >= q_.size()) {
      if (brace_open_) return Error(start, "unexpected end of input inside braces");
      if (paren_depth_ != 0) return Error(start, "unclosed left parenthesis");
      if (bracket_open_) return Error(start, "unclosed left bracket");
      return Make(Tok::kEof, start, "");
    }
    if (brace_open_) return InsideBraces();
    char c = q_[pos_];
    if (IsDigit(c) || (c == '.' && IsDigit(Peek(1)))) return NumberOrDuration(false);
    if (IsAlpha(c) && bracket_open_) {
      // Prometheus' lexer reads any letter inside [...] as the subquery colon.
      ++pos_;
      if (got_colon_) return Error(start, "unexpected colon " + QuoteRune(c));
      got_colon_ = true;
      return Make(Tok::kColon, start, ":");
    }
    if (IsAlpha(c)) {
      while (pos_ < q_.size() && (IsAlnum(q_[pos_]) || q_[pos_] == ':')) ++pos_;
      std::string word(q_.substr(start, pos_ - start));
      std::string lower;
      for (char ch : word) lower.push_back(static_cast<char>(std::tolower(ch)));
      if (lower == "inf" || lower == "nan") return Make(Tok::kNumber, start, word);
      return Make(Tok::kIdentifier, start, word);
    }
    if (c == ':' && !bracket_open_) {
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
      case '(':
        ++paren_depth_;
        return Make(Tok::kLeftParen, start, "(");
      case ')':
        if (--paren_depth_ < 0) return Error(pos_, "unexpected right parenthesis ')'");
        return Make(Tok::kRightParen, start, ")");
      case '{':
        brace_open_ = true;
        return Make(Tok::kLeftBrace, start, "{");
      case '[':
        if (bracket_open_) return Error(start, "unexpected left bracket '['");
        bracket_open_ = true;
        got_colon_ = false;
        expect_duration_ = true;
        return Make(Tok::kLeftBracket, start, "[");
      case ']':
        if (!bracket_open_) return Error(start, "unexpected right bracket ']'");
        bracket_open_ = false;
        return Make(Tok::kRightBracket, start, "]");
      case ',':
        return Make(Tok::kComma, start, ",");
      case ':':
        if (got_colon_) return Error(start, "unexpected colon ':'");
        got_colon_ = true;
        return Make(Tok::kColon, start, ":");
      case '@':
        return Make(Tok::kAt, start, "@");
      case '+':
        return Make(Tok::kAdd, start, "+");
      case '-':
        return Make(Tok::kSub, start, "-");
      case '*':
        return Make(Tok::kMul, start, "*");
      case '/':
        return Make(Tok::kDiv, start, "/");
      case '%':
        return Make(Tok::kMod, start, "%");
      case '^':
        return Make(Tok::kPow, start, "^");
      case '<':
        return two('=', Tok::kLte, Tok::kLss, "<=", "<");
      case '>':
        return two('=', Tok::kGte, Tok::kGtr, ">=", ">");
      case '=':
        if (Peek() == '~') return Error(start, "unexpected character after '=': '~'");
        return two('=', Tok::kEqlc, Tok::kAssign, "==", "=");
      case '!':
        if (Peek() == '=') {
          ++pos_;
          return Make(Tok::kNeq, start, "!=");
        }
        ++pos_;
        return Error(start, "unexpected character after '!': " + QuoteRune(Peek(-1)));
      default:
        return Error(start, "unexpected character: " + QuoteRune(c));
    }
  }

  // Go's %#U: U+0071 'q'.
  static std::string GoRune(char c) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "U+%04X '%c'", static_cast<unsigned char>(c), c);
    return buf;
  }

  static std::string QuoteRune(char c) {
    if (c == '\0') return "U+FFFFFFFFFFFFFFFF";  // Go's eof rune
    if (c == '\'') return "'\\''";
    return std::string("'") + c + "'";
  }

  // Inside {...}: label names (keywords included), strings, matcher operators.
  Token InsideBraces() {
    size_t start = pos_;
    char c = q_[pos_];
    if (IsAlpha(c)) {
      while (pos_ < q_.size() && IsAlnum(q_[pos_])) ++pos_;
      Token t = Make(Tok::kIdentifier, start, std::string(q_.substr(start, pos_ - start)));
      t.in_braces = true;
      return t;
    }
    if (c == '"' || c == '\'' || c == '`') return QuotedString(c);
    ++pos_;
    switch (c) {
      case ',':
        return Make(Tok::kComma, start, ",");
      case '=':
        if (Peek() == '~') {
          ++pos_;
          return Make(Tok::kEqlRegex, start, "=~");
        }
        return Make(Tok::kAssign, start, "=");
      case '!':
        if (Peek() == '~' || Peek() == '=') {
          bool regex = q_[pos_++] == '~';
          return Make(regex ? Tok::kNeqRegex : Tok::kNeq, start, regex ? "!~" : "!=");
        }
        ++pos_;
        return Error(start, "unexpected character after '!' inside braces: " + QuoteRune(Peek(-1)));
      case '{':
        return Error(start, "unexpected left brace '{'");
      case '}':
        brace_open_ = false;
        return Make(Tok::kRightBrace, start, "}");
      default:
        return Error(start, "unexpected character inside braces: " + QuoteRune(c));
    }
  }

  // Prometheus' scanNumber + acceptRemainingDuration: a number, or digits followed by units
  // ("1h30m"). Right after '[' only a duration may follow.
  Token NumberOrDuration(bool duration_only) {
    size_t start = pos_;
    auto accept = [&](std::string_view set) {
      if (pos_ < q_.size() && set.find(q_[pos_]) != std::string_view::npos) {
        ++pos_;
        return true;
      }
      return false;
    };
    auto accept_run = [&](std::string_view set) {
      while (accept(set)) {
      }
    };
    std::string_view digits = "0123456789";
    if (accept("0") && accept("xX")) digits = "0123456789abcdefABCDEF";
    accept_run(digits);
    if (accept(".")) accept_run(digits);
    if (accept("eE")) {
      accept("+-");
      accept_run("0123456789");
    }
    if (!IsAlnum(Peek())) {
      if (duration_only) return Error(start, "missing unit character in duration");
      return Make(Tok::kNumber, start, std::string(q_.substr(start, pos_ - start)));
    }
    bool ok = accept("smhdwy");
    if (ok) {
      accept("s");
      while (ok && accept("0123456789")) {
        accept_run("0123456789");
        ok = accept("smhdw");
        if (ok) accept("s");
      }
    }
    if (ok && !IsAlnum(Peek())) {
      return Make(Tok::kDuration, start, std::string(q_.substr(start, pos_ - start)));
    }
    if (ok) ++pos_;  // Prometheus consumed the offending character
    std::string text(q_.substr(start, pos_ - start));
    return Error(start, duration_only ? "bad duration syntax: \"" + text + "\""
                                      : "bad number or duration syntax: \"" + text + "\"");
  }

  Token QuotedString(char quote) {
    size_t start = pos_++;
    std::string value;
    while (true) {
      if (pos_ >= q_.size() || (quote != '`' && q_[pos_] == '\n'))
        return Error(start,
                     quote == '`' ? "unterminated raw string" : "unterminated quoted string");
      char c = q_[pos_++];
      if (c == quote) break;
      if (c != '\\' || quote == '`') {
        value.push_back(c);
        continue;
      }
      if (pos_ >= q_.size()) return Error(start, "unterminated quoted string");
      char e = q_[pos_++];
      switch (e) {
        case 'a':
          value.push_back('\a');
          break;
        case 'b':
          value.push_back('\b');
          break;
        case 'f':
          value.push_back('\f');
          break;
        case 'n':
          value.push_back('\n');
          break;
        case 'r':
          value.push_back('\r');
          break;
        case 't':
          value.push_back('\t');
          break;
        case 'v':
          value.push_back('\v');
          break;
        case '\\':
          value.push_back('\\');
          break;
        case '\'':
        case '"':
          if (e != quote) return Error(start, "unknown escape sequence " + GoRune(e));
          value.push_back(e);
          break;
        case 'x':
        case 'u':
        case 'U': {
          int n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (int i = 0; i < n; ++i) {
            int h = HexValue(Peek());
            if (h < 0) {
              if (pos_ >= q_.size()) return Error(start, "escape sequence not terminated");
              return Error(start, "illegal character " + GoRune(Peek()) + " in escape sequence");
            }
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
                return Error(start, "illegal character " + GoRune(Peek()) + " in escape sequence");
              v = v * 8 + static_cast<uint32_t>(q_[pos_++] - '0');
            }
            if (v > 255) return Error(start, "octal escape value > 255");
            value.push_back(static_cast<char>(v));
            break;
          }
          return Error(start, "unknown escape sequence " + GoRune(e));
      }
    }
    Token t = Make(Tok::kString, start, value);
    t.raw = std::string(q_.substr(start, pos_ - start));
    return t;
  }

  std::string_view q_;
  size_t pos_ = 0;
  int paren_depth_ = 0;
  bool brace_open_ = false, bracket_open_ = false, got_colon_ = false, expect_duration_ = false;
};

}  // namespace

std::vector<Token> Lex(std::string_view query) {
  return Lexer(query).Run();
}

std::string DescribeToken(const Token& t) {
  auto quote = [](const std::string& v) {
    std::string out = "\"";
    for (char c : v) {
      if (c == '"' || c == '\\') out.push_back('\\');
      out.push_back(c);
    }
    return out + "\"";
  };
  switch (t.type) {
    case Tok::kEof:
      return "end of input";
    case Tok::kNumber:
      return "number " + quote(t.text);
    case Tok::kDuration:
      return "duration " + quote(t.text);
    case Tok::kString:
      // Go's %.10q: at most 10 characters of the literal, then "...".
      if (t.raw.size() > 10) return "string " + quote(t.raw.substr(0, 10)) + "...";
      return "string " + quote(t.raw);
    case Tok::kIdentifier: {
      if (!t.in_braces) {
        std::string lower;
        for (char c : t.text) lower.push_back(static_cast<char>(std::tolower(c)));
        static const char* kOperators[] = {"and", "or", "unless", "atan2"};
        static const char* kAggregators[] = {"sum",  "avg",     "count",        "min",
                                             "max",  "group",   "stddev",       "stdvar",
                                             "topk", "bottomk", "count_values", "quantile"};
        static const char* kKeywords[] = {"offset",   "by",         "without",     "on",
                                          "ignoring", "group_left", "group_right", "bool"};
        for (const char* k : kOperators)
          if (lower == k) return "<op:" + t.text + ">";
        for (const char* k : kAggregators)
          if (lower == k) return "<aggr:" + t.text + ">";
        for (const char* k : kKeywords)
          if (lower == k) return "<" + t.text + ">";
        if (lower == "start" || lower == "end") return quote(t.text);
      }
      bool metric = t.text.find(':') != std::string::npos;
      return std::string(metric ? "metric identifier " : "identifier ") + quote(t.text);
    }
    case Tok::kAdd:
    case Tok::kSub:
    case Tok::kMul:
    case Tok::kDiv:
    case Tok::kMod:
    case Tok::kPow:
    case Tok::kEqlc:
    case Tok::kNeq:
    case Tok::kLte:
    case Tok::kLss:
    case Tok::kGte:
    case Tok::kGtr:
    case Tok::kEqlRegex:
    case Tok::kNeqRegex:
      return "<op:" + t.text + ">";
    default:
      return quote(t.text);
  }
}

}  // namespace gw::promql
