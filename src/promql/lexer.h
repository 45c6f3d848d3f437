// promql/lexer.h — splits PromQL text into tokens (internal to promql/).
//
// The lexer is context-free: identifiers are returned as kIdentifier and the parser decides
// whether one is a keyword, a function, an aggregation or a label name where it meets it.
#ifndef GPUWARDEN_PROMQL_LEXER_H_
#define GPUWARDEN_PROMQL_LEXER_H_

#include <string>
#include <string_view>
#include <vector>

namespace gw::promql {

enum class Tok {
  kEof,
  kError,       // text: the message
  kIdentifier,  // metric or label name, keyword; may contain ':'
  kNumber,      // text: as written (also inf / nan)
  kDuration,    // text: as written, e.g. "1h30m"
  kString,      // text: unquoted value
  kLeftParen,
  kRightParen,
  kLeftBrace,
  kRightBrace,
  kLeftBracket,
  kRightBracket,
  kComma,
  kColon,
  kAt,
  kAssign,  // "="
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMod,
  kPow,
  kEqlc,
  kNeq,
  kLte,
  kLss,
  kGte,
  kGtr,
  kEqlRegex,
  kNeqRegex,
};

struct Token {
  Tok type = Tok::kEof;
  std::string text;
  int pos = 0;  // byte offset in the query
  int end = 0;
  bool in_braces = false;
  std::string raw;  // kString: the literal as written, quotes included  // inside {...}, where
                    // keywords are plain label names
};

// Tokenizes the whole query; the last token is kEof or kError. Errors are those of Prometheus'
// lexer, at the same positions: unbalanced brackets, unknown characters, bad escapes.
std::vector<Token> Lex(std::string_view query);

// A number token's value as Go's strconv.ParseInt(s, 0, 64) then ParseFloat read it (0x1F, 010
// octal, 1e3, Inf, NaN); false if malformed.
bool ParseNumberLiteral(const std::string& text, double* out);

// Go's regexp wording for a matcher regex that does not compile ("error parsing regexp: missing
// closing ): `^(?:()$`"), or "" if it compiles. Prometheus compiles matchers as ^(?:re)$.
std::string RegexError(const std::string& re);

// How Prometheus describes a token in "unexpected ..." errors.
std::string DescribeToken(const Token& t);

}  // namespace gw::promql

#endif  // GPUWARDEN_PROMQL_LEXER_H_
