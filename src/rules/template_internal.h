// Internal to rules/: the template syntax tree and runtime values (see template.h).
#ifndef GPUWARDEN_RULES_TEMPLATE_INTERNAL_H_
#define GPUWARDEN_RULES_TEMPLATE_INTERNAL_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "rules/template.h"

namespace gw::rules::tmpl {

struct Pipe;

// One operand of a command.
struct Arg {
  enum Kind { kField, kVariable, kDot, kIdent, kString, kNumber, kBool, kNil, kPipe } kind = kDot;
  size_t pos = 0;
  std::string text;                // original text (for error contexts)
  std::string name;                // variable or function name; string literal value
  std::vector<std::string> chain;  // .A.B after the operand
  bool is_int = false;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::shared_ptr<Pipe> pipe;
};

struct Command {
  size_t pos = 0;
  std::vector<Arg> args;
};

struct Pipe {
  size_t pos = 0;
  std::vector<std::string> decl;  // variables declared (or assigned when `assign`)
  bool assign = false;
  std::vector<Command> cmds;
};

struct Node;
using List = std::vector<Node>;

struct Node {
  enum Kind { kText, kAction, kIf, kRange, kWith } kind = kText;
  size_t pos = 0;
  std::string text;
  std::shared_ptr<Pipe> pipe;
  std::shared_ptr<List> list, else_list;
};

// Runtime values: the Go types templates meet in Prometheus.
struct Value;
using ValueMap = std::map<std::string, Value>;
struct Value {
  enum Kind { kNil, kBool, kInt, kFloat, kString, kMap, kSamples, kSample, kData } kind = kNil;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;
  bool string_map = false;  // map[string]string (a missing key reads "") vs map[string]any
  std::shared_ptr<const ValueMap> map;
  std::shared_ptr<const std::vector<QuerySample>> samples;
  std::shared_ptr<const QuerySample> sample;
  std::shared_ptr<const TemplateData> data;
  bool html = false;  // html/template.HTML from safeHtml (prints as is)
};

struct Parsed {
  std::string name;
  std::string text;
  List root;
};

// Parses; the error reads "template: NAME:LINE: msg".
Expected<std::shared_ptr<Parsed>> Parse(const std::string& name, std::string_view text);

std::string CommandString(const Command& c);
std::string PipeString(const Pipe& p);

}  // namespace gw::rules::tmpl

#endif  // GPUWARDEN_RULES_TEMPLATE_INTERNAL_H_
