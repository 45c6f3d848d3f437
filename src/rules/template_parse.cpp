// Go text/template lexing and parsing (the subset in template.h), with Go's error wording.
//
// Why one file of ~750 lines: the lexer and the parser are private to each other (the token
// type, the lexer's trim-marker and delimiter rules, and the parser's error positions, which
// must match Go's line:column, are shared and used nowhere else); the result (template_internal.h)
// is all that leaves it. Execution is template.cpp, the functions template_funcs.cpp.
#include <cctype>
#include <cstdlib>
#include <set>
#include <utility>

#include "rules/template_internal.h"

namespace gw::rules::tmpl {
namespace {

enum class Tok {
  kText,
  kLeft,
  kRight,
  kSpace,
  kIdent,
  kField,
  kVar,
  kDot,
  kString,
  kNumber,
  kBool,
  kNil,
  kLParen,
  kRParen,
  kPipe,
  kDeclare,
  kAssign,
  kComma,
  kIf,
  kElse,
  kEnd,
  kRange,
  kWith,
  kEOF,
  kError
};

struct Token {
  Tok type = Tok::kEOF;
  size_t pos = 0;
  std::string text;
};

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}
bool IsAlnum(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}

// Splits the whole text into tokens the way Go's lexer does (trim markers applied).
class Lexer {
 public:
  explicit Lexer(std::string_view text) : t_(text) {}

  std::vector<Token> Run() {
    while (pos_ <= t_.size()) {
      size_t open = t_.find("{{", pos_);
      if (open == std::string_view::npos) {
        Emit(Tok::kText, pos_, std::string(t_.substr(pos_)));
        break;
      }
      std::string text(t_.substr(pos_, open - pos_));
      bool trim_left = open + 3 <= t_.size() && t_[open + 2] == '-' && open + 3 < t_.size() &&
                       IsSpace(t_[open + 3]);
      if (trim_left) {
        while (!text.empty() && IsSpace(text.back())) text.pop_back();
      }
      if (!text.empty()) Emit(Tok::kText, pos_, text);
      pos_ = open + 2 + (trim_left ? 2 : 0);
      // Comment.
      size_t p = pos_;
      while (p < t_.size() && IsSpace(t_[p]) && trim_left) ++p;
      if (t_.substr(pos_).starts_with("/*")) {
        size_t end = t_.find("*/", pos_ + 2);
        if (end == std::string_view::npos) return Fail(pos_, "unclosed comment");
        pos_ = end + 2;
        bool trim_right = t_.substr(pos_).starts_with(" -}}");
        if (trim_right) pos_ += 1;
        if (!t_.substr(pos_).starts_with("}}") && !t_.substr(pos_).starts_with("-}}"))
          return Fail(pos_, "comment ends before closing delimiter");
        pos_ += trim_right ? 3 : 2;
        if (trim_right) SkipSpace();
        continue;
      }
      Emit(Tok::kLeft, open, "{{");
      if (!LexAction()) return std::move(out_);
    }
    Emit(Tok::kEOF, t_.size(), "");
    return std::move(out_);
  }

 private:
  void Emit(Tok type, size_t pos, std::string text) {
    out_.push_back({type, pos, std::move(text)});
  }
  std::vector<Token> Fail(size_t pos, std::string msg) {
    Emit(Tok::kError, pos, std::move(msg));
    return out_;
  }
  void SkipSpace() {
    while (pos_ < t_.size() && IsSpace(t_[pos_])) ++pos_;
  }

  bool LexAction() {
    int parens = 0;
    while (true) {
      if (pos_ >= t_.size()) {
        Fail(pos_, "unclosed action");
        return false;
      }
      char c = t_[pos_];
      size_t start = pos_;
      if (IsSpace(c)) {
        if (t_.substr(pos_ + 1).starts_with("-}}")) {
          pos_ += 4;
          Emit(Tok::kRight, start, "}}");
          SkipSpace();
          return true;
        }
        while (pos_ < t_.size() && IsSpace(t_[pos_])) ++pos_;
        Emit(Tok::kSpace, start, " ");
        continue;
      }
      if (t_.substr(pos_).starts_with("}}")) {
        if (parens > 0) {
          Fail(pos_, "unclosed left paren");
          return false;
        }
        pos_ += 2;
        Emit(Tok::kRight, start, "}}");
        return true;
      }
      if (c == '"' || c == '`') {
        if (!LexString(c)) return false;
        continue;
      }
      if (c == '(') {
        ++parens, ++pos_;
        Emit(Tok::kLParen, start, "(");
        continue;
      }
      if (c == ')') {
        if (--parens < 0) {
          Fail(pos_, "unexpected right paren");
          return false;
        }
        ++pos_;
        Emit(Tok::kRParen, start, ")");
        continue;
      }
      if (c == '|') {
        ++pos_;
        Emit(Tok::kPipe, start, "|");
        continue;
      }
      if (c == ',') {
        ++pos_;
        Emit(Tok::kComma, start, ",");
        continue;
      }
      if (c == ':') {
        if (pos_ + 1 < t_.size() && t_[pos_ + 1] == '=') {
          pos_ += 2;
          Emit(Tok::kDeclare, start, ":=");
          continue;
        }
        Fail(pos_, "expected :=");
        return false;
      }
      if (c == '=') {
        ++pos_;
        Emit(Tok::kAssign, start, "=");
        continue;
      }
      if (c == '$') {
        ++pos_;
        while (pos_ < t_.size() && IsAlnum(t_[pos_])) ++pos_;
        Emit(Tok::kVar, start, std::string(t_.substr(start, pos_ - start)));
        continue;
      }
      if (c == '.') {
        if (pos_ + 1 < t_.size() && std::isdigit(static_cast<unsigned char>(t_[pos_ + 1]))) {
          LexNumber();
          continue;
        }
        ++pos_;
        if (pos_ < t_.size() && IsAlnum(t_[pos_])) {
          while (pos_ < t_.size() && IsAlnum(t_[pos_])) ++pos_;
          Emit(Tok::kField, start, std::string(t_.substr(start, pos_ - start)));
        } else {
          Emit(Tok::kDot, start, ".");
        }
        continue;
      }
      if (std::isdigit(static_cast<unsigned char>(c)) || c == '+' || c == '-') {
        LexNumber();
        continue;
      }
      if (IsAlnum(c)) {
        while (pos_ < t_.size() && IsAlnum(t_[pos_])) ++pos_;
        std::string word(t_.substr(start, pos_ - start));
        static const std::map<std::string, Tok> kKeywords = {
            {"if", Tok::kIf},       {"else", Tok::kElse}, {"end", Tok::kEnd},
            {"range", Tok::kRange}, {"with", Tok::kWith}, {"nil", Tok::kNil},
            {"true", Tok::kBool},   {"false", Tok::kBool}};
        auto k = kKeywords.find(word);
        Emit(k == kKeywords.end() ? Tok::kIdent : k->second, start, word);
        continue;
      }
      Fail(pos_, std::string("unrecognized character in action: U+00") +
                     "0123456789ABCDEF"[(c >> 4) & 15] + "0123456789ABCDEF"[c & 15]);
      return false;
    }
  }

  bool LexString(char quote) {
    size_t start = pos_++;
    while (pos_ < t_.size() && t_[pos_] != quote) {
      if (quote == '"' && t_[pos_] == '\\') ++pos_;
      if (quote == '"' && pos_ < t_.size() && t_[pos_] == '\n') break;
      ++pos_;
    }
    if (pos_ >= t_.size() || t_[pos_] != quote) {
      Fail(start, quote == '"' ? "unterminated quoted string" : "unterminated raw quoted string");
      return false;
    }
    ++pos_;
    Emit(Tok::kString, start, std::string(t_.substr(start, pos_ - start)));
    return true;
  }

  void LexNumber() {
    size_t start = pos_;
    if (t_[pos_] == '+' || t_[pos_] == '-') ++pos_;
    while (pos_ < t_.size() &&
           (IsAlnum(t_[pos_]) || t_[pos_] == '.' ||
            ((t_[pos_] == '+' || t_[pos_] == '-') &&
             (t_[pos_ - 1] == 'e' || t_[pos_ - 1] == 'E' || t_[pos_ - 1] == 'p'))))
      ++pos_;
    Emit(Tok::kNumber, start, std::string(t_.substr(start, pos_ - start)));
  }

  std::string_view t_;
  size_t pos_ = 0;
  std::vector<Token> out_;
};

std::string Unquote(const std::string& s) {
  if (s[0] == '`') return s.substr(1, s.size() - 2);
  std::string out;
  for (size_t i = 1; i + 1 < s.size(); ++i) {
    if (s[i] != '\\') {
      out += s[i];
      continue;
    }
    char c = s[++i];
    switch (c) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'v':
        out += '\v';
        break;
      case 'x':
        out += static_cast<char>(std::strtol(s.substr(i + 1, 2).c_str(), nullptr, 16));
        i += 2;
        break;
      default:
        out += c;
    }
  }
  return out;
}

class Parser {
 public:
  Parser(const std::string& name, std::string_view text, std::vector<Token> toks)
      : name_(name), text_(text), toks_(std::move(toks)) {}

  Expected<List> Run() {
    vars_.push_back({"$"});
    List list;
    Tok end = ParseList(&list);
    if (!err_.empty()) return Error{err_};
    if (end != Tok::kEOF) return Fail(Last().pos, "unexpected {{" + EndName(end) + "}}");
    return list;
  }

 private:
  static std::string EndName(Tok t) { return t == Tok::kElse ? "else" : "end"; }
  const Token& Peek() { return toks_[std::min(i_, toks_.size() - 1)]; }
  const Token& Last() { return toks_[i_ == 0 ? 0 : i_ - 1]; }
  const Token& Next() { return toks_[std::min(i_++, toks_.size() - 1)]; }
  const Token& NextNonSpace() {
    while (Peek().type == Tok::kSpace) ++i_;
    return Next();
  }
  const Token& PeekNonSpace() {
    while (Peek().type == Tok::kSpace) ++i_;
    return Peek();
  }
  int LineOf(size_t pos) {
    int line = 1;
    for (size_t k = 0; k < pos && k < text_.size(); ++k) line += text_[k] == '\n';
    return line;
  }
  Error Fail(size_t pos, const std::string& msg) {
    if (err_.empty()) err_ = "template: " + name_ + ":" + std::to_string(LineOf(pos)) + ": " + msg;
    return Error{err_};
  }

  // Parses nodes until {{end}}, {{else}} or EOF; returns which ended it (the {{ and keyword
  // consumed).
  Tok ParseList(List* list) {
    while (err_.empty()) {
      const Token& t = Next();
      if (t.type == Tok::kEOF) return Tok::kEOF;
      if (t.type == Tok::kError) {
        Fail(t.pos, t.text);
        return Tok::kError;
      }
      if (t.type == Tok::kText) {
        list->push_back(Node{Node::kText, t.pos, t.text, nullptr, nullptr, nullptr});
        continue;
      }
      // t is {{
      const Token& k = PeekNonSpace();
      if (k.type == Tok::kEnd || k.type == Tok::kElse) {
        ++i_;
        return k.type;
      }
      if (k.type == Tok::kIf || k.type == Tok::kRange || k.type == Tok::kWith) {
        ++i_;
        ParseControl(k.type, k.pos, list);
        continue;
      }
      auto pipe = ParsePipe("command", Tok::kRight);
      if (!pipe) return Tok::kError;
      list->push_back(Node{Node::kAction, t.pos, "", pipe, nullptr, nullptr});
    }
    return Tok::kError;
  }

  // Counts one level of nesting (a control structure, an {{else if}} or a parenthesized
  // pipeline) and fails past kMaxTemplateDepth: parsing and execution both recurse per level.
  bool Enter(size_t pos) {
    if (++depth_ <= kMaxTemplateDepth) return true;
    Fail(pos, "max expression depth exceeded (more than " + std::to_string(kMaxTemplateDepth) +
                  " nested actions and parentheses)");
    return false;
  }

  void ParseControl(Tok kind, size_t pos, List* list) {
    if (!Enter(pos)) return;
    ParseControlBody(kind, pos, list);
    --depth_;
  }

  void ParseControlBody(Tok kind, size_t pos, List* list) {
    const char* ctx = kind == Tok::kIf ? "if" : kind == Tok::kRange ? "range" : "with";
    size_t mark = vars_.size();
    auto pipe = ParsePipe(ctx, Tok::kRight);
    if (!pipe) return;
    Node n{kind == Tok::kIf      ? Node::kIf
           : kind == Tok::kRange ? Node::kRange
                                 : Node::kWith,
           pos,
           "",
           pipe,
           std::make_shared<List>(),
           nullptr};
    Tok end = ParseList(n.list.get());
    if (end == Tok::kEOF) {
      Fail(text_.size(), "unexpected EOF");
      return;
    }
    if (end == Tok::kError) return;
    if (end == Tok::kElse) {
      n.else_list = std::make_shared<List>();
      const Token& k = PeekNonSpace();
      if (k.type == Tok::kIf && kind == Tok::kIf) {
        // {{else if ...}}: an if inside the else branch that shares our {{end}}.
        ++i_;
        vars_.resize(mark);
        ParseControl(Tok::kIf, k.pos, n.else_list.get());
        vars_.resize(mark);
        list->push_back(std::move(n));
        return;
      }
      if (NextNonSpace().type != Tok::kRight) {
        Fail(Last().pos, "unexpected " + Last().text + " in else");
        return;
      }
      vars_.resize(mark);
      Tok e2 = ParseList(n.else_list.get());
      if (e2 == Tok::kEOF) {
        Fail(text_.size(), "unexpected EOF");
        return;
      }
      if (e2 == Tok::kError) return;
      if (e2 == Tok::kElse) {
        Fail(Last().pos, "expected end; found {{else}}");
        return;
      }
    }
    if (NextNonSpace().type != Tok::kRight) {
      Fail(Last().pos, "unexpected " + Last().text + " in end");
      return;
    }
    vars_.resize(mark);
    list->push_back(std::move(n));
  }

  std::shared_ptr<Pipe> ParsePipe(const std::string& ctx, Tok end) {
    auto pipe = std::make_shared<Pipe>();
    pipe->pos = PeekNonSpace().pos;
    // Declarations: $x := / $x = / $i, $x :=
    size_t save = i_;
    if (PeekNonSpace().type == Tok::kVar) {
      std::vector<std::string> names{Next().text};
      while (true) {
        const Token& t = PeekNonSpace();
        if (t.type == Tok::kComma && ctx == "range" && names.size() == 1) {
          ++i_;
          if (PeekNonSpace().type != Tok::kVar) break;
          names.push_back(Next().text);
          continue;
        }
        if (t.type == Tok::kDeclare || t.type == Tok::kAssign) {
          ++i_;
          pipe->decl = names;
          pipe->assign = t.type == Tok::kAssign;
          if (!pipe->assign)
            for (auto& nm : names) vars_.push_back(nm);
          else
            for (auto& nm : names)
              if (!HasVar(nm)) {
                Fail(t.pos, "undefined variable \"" + nm + "\"");
                return nullptr;
              }
        } else {
          i_ = save;
        }
        break;
      }
    }
    while (true) {
      const Token& t = PeekNonSpace();
      if (t.type == end) {
        ++i_;
        if (pipe->cmds.empty()) {
          Fail(t.pos, "missing value for " + ctx);
          return nullptr;
        }
        return pipe;
      }
      if (t.type == Tok::kError) {
        Fail(t.pos, t.text);
        return nullptr;
      }
      if (t.type == Tok::kEOF) {
        Fail(t.pos, "unclosed action");
        return nullptr;
      }
      Command cmd;
      cmd.pos = t.pos;
      if (!ParseCommand(&cmd)) return nullptr;
      pipe->cmds.push_back(std::move(cmd));
      if (PeekNonSpace().type == Tok::kPipe) {
        ++i_;
        if (PeekNonSpace().type == Tok::kPipe) {
          Fail(Peek().pos, "missing command");
          return nullptr;
        }
      }
    }
  }

  bool HasVar(const std::string& nm) {
    for (auto& v : vars_)
      if (v == nm) return true;
    return false;
  }

  bool ParseCommand(Command* cmd) {
    while (true) {
      const Token& t = PeekNonSpace();
      if (t.type == Tok::kRight || t.type == Tok::kRParen || t.type == Tok::kPipe) break;
      Arg a;
      if (!ParseOperand(&a)) return false;
      cmd->args.push_back(std::move(a));
      const Token& nx = Peek();
      if (nx.type == Tok::kError) {
        Fail(nx.pos, nx.text);
        return false;
      }
      if (nx.type == Tok::kEOF) {
        Fail(nx.pos, "unclosed action");
        return false;
      }
      if (nx.type != Tok::kSpace && nx.type != Tok::kRight && nx.type != Tok::kRParen &&
          nx.type != Tok::kPipe) {
        Fail(nx.pos, "unexpected " + Describe(nx) + " in operand");
        return false;
      }
    }
    if (cmd->args.empty()) {
      Fail(Peek().pos, "empty command");
      return false;
    }
    return true;
  }

  static std::string Describe(const Token& t) {
    if (t.type == Tok::kEOF) return "EOF";
    return "<" + t.text + ">";
  }

  bool ParseOperand(Arg* a) {
    const Token& t = Next();
    a->pos = t.pos;
    a->text = t.text;
    switch (t.type) {
      case Tok::kField: {
        a->kind = Arg::kField;
        a->chain.push_back(t.text.substr(1));
        break;
      }
      case Tok::kVar:
        if (!HasVar(t.text)) {
          Fail(t.pos, "undefined variable \"" + t.text + "\"");
          return false;
        }
        a->kind = Arg::kVariable;
        a->name = t.text;
        break;
      case Tok::kDot:
        a->kind = Arg::kDot;
        break;
      case Tok::kIdent:
        if (!KnownFunction(t.text)) {
          Fail(t.pos, "function \"" + t.text + "\" not defined");
          return false;
        }
        a->kind = Arg::kIdent;
        a->name = t.text;
        break;
      case Tok::kString:
        a->kind = Arg::kString;
        a->name = Unquote(t.text);
        break;
      case Tok::kNumber: {
        a->kind = Arg::kNumber;
        const std::string& s = t.text;
        char* end = nullptr;
        bool hex = s.find("0x") != std::string::npos || s.find("0X") != std::string::npos;
        if (hex || s.find_first_of(".eE") == std::string::npos) {
          long long v = std::strtoll(s.c_str(), &end, 0);
          if (*end != 0) {
            Fail(t.pos, "bad number syntax: \"" + s + "\"");
            return false;
          }
          a->is_int = true;
          a->i = v;
          a->f = static_cast<double>(v);
        } else {
          a->f = std::strtod(s.c_str(), &end);
          if (*end != 0) {
            Fail(t.pos, "bad number syntax: \"" + s + "\"");
            return false;
          }
        }
        break;
      }
      case Tok::kBool:
        a->kind = Arg::kBool;
        a->b = t.text == "true";
        break;
      case Tok::kNil:
        a->kind = Arg::kNil;
        break;
      case Tok::kLParen: {
        a->kind = Arg::kPipe;
        if (!Enter(t.pos)) return false;
        a->pipe = ParsePipe("parenthesized pipeline", Tok::kRParen);
        --depth_;
        if (!a->pipe) return false;
        break;
      }
      case Tok::kError:
        Fail(t.pos, t.text);
        return false;
      case Tok::kEOF:
      case Tok::kRight:
        Fail(t.pos, "unclosed action");
        return false;
      default:
        Fail(t.pos, "unexpected " + Describe(t) + " in command");
        return false;
    }
    while (Peek().type == Tok::kField) {
      if (a->kind == Arg::kIdent || a->kind == Arg::kString || a->kind == Arg::kNumber ||
          a->kind == Arg::kBool || a->kind == Arg::kNil) {
        Fail(Peek().pos, "unexpected " + Peek().text + " in operand");
        return false;
      }
      a->chain.push_back(Next().text.substr(1));
    }
    if (a->kind == Arg::kDot && !a->chain.empty()) a->kind = Arg::kField;
    return true;
  }

  static bool KnownFunction(const std::string& n) {
    static const std::set<std::string> kFuncs = {"and",
                                                 "or",
                                                 "not",
                                                 "len",
                                                 "index",
                                                 "print",
                                                 "printf",
                                                 "println",
                                                 "eq",
                                                 "ne",
                                                 "lt",
                                                 "le",
                                                 "gt",
                                                 "ge",
                                                 "html",
                                                 "urlquery",
                                                 "js",
                                                 "query",
                                                 "first",
                                                 "value",
                                                 "label",
                                                 "strvalue",
                                                 "sortByLabel",
                                                 "humanize",
                                                 "humanize1024",
                                                 "humanizeDuration",
                                                 "humanizePercentage",
                                                 "humanizeTimestamp",
                                                 "toUpper",
                                                 "toLower",
                                                 "title",
                                                 "reReplaceAll",
                                                 "match",
                                                 "stripPort",
                                                 "parseDuration",
                                                 "safeHtml",
                                                 "args",
                                                 "graphLink",
                                                 "tableLink",
                                                 "externalURL",
                                                 "pathPrefix",
                                                 "slice",
                                                 "call"};
    return kFuncs.count(n) > 0;
  }

  std::string name_;
  std::string_view text_;
  std::vector<Token> toks_;
  size_t i_ = 0;
  std::string err_;
  std::vector<std::string> vars_;
  int depth_ = 0;  // see Enter()
};

std::string ArgString(const Arg& a) {
  std::string s;
  switch (a.kind) {
    case Arg::kPipe:
      s = "(" + PipeString(*a.pipe) + ")";
      break;
    case Arg::kField:
      s = "";
      break;
    case Arg::kDot:
      s = ".";
      break;
    default:
      s = a.text;
  }
  if (a.kind == Arg::kField || (a.kind != Arg::kDot && !a.chain.empty()))
    for (auto& c : a.chain) s += "." + c;
  return s;
}

}  // namespace

std::string CommandString(const Command& c) {
  std::string s;
  for (size_t k = 0; k < c.args.size(); ++k) {
    if (k) s += " ";
    s += ArgString(c.args[k]);
  }
  return s;
}

std::string PipeString(const Pipe& p) {
  std::string s;
  if (!p.decl.empty()) {
    for (size_t k = 0; k < p.decl.size(); ++k) s += (k ? ", " : "") + p.decl[k];
    s += p.assign ? " = " : " := ";
  }
  for (size_t k = 0; k < p.cmds.size(); ++k) s += (k ? " | " : "") + CommandString(p.cmds[k]);
  return s;
}

Expected<std::shared_ptr<Parsed>> Parse(const std::string& name, std::string_view text) {
  Lexer lexer(text);
  Parser parser(name, text, lexer.Run());
  auto list = parser.Run();
  if (!list.ok()) return list.error();
  auto p = std::make_shared<Parsed>();
  p->name = name;
  p->text = std::string(text);
  p->root = std::move(*list);
  return p;
}

}  // namespace gw::rules::tmpl
