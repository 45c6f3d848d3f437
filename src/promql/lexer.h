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

// How Prometheus describes a token in "unexpected ..." errors.
std::string DescribeToken(const Token& t);

}  // namespace gw::promql

#endif  // GPUWARDEN_PROMQL_LEXER_H_
