// Internal to rules/: template runtime helpers shared by the executor and the functions.
#ifndef GPUWARDEN_RULES_TEMPLATE_FUNCS_H_
#define GPUWARDEN_RULES_TEMPLATE_FUNCS_H_

#include <string>
#include <vector>

#include "rules/template_internal.h"

namespace gw::rules::tmpl {

std::string TypeName(const Value& v);
std::string Sprint(const Value& v);  // fmt.Sprint of one value
bool Truth(const Value& v);
Value MakeString(std::string s);
Value MakeFloat(double f);
Value MakeBool(bool b);
Value MakeInt(int64_t i);
Value MakeLabelsMap(const tsdb::Labels& ls);
// Go's url.QueryEscape.
std::string QueryEscape(std::string_view s);
std::string Humanize(double v);
std::string Humanize1024(double v);
std::string HumanizeDuration(double v);
std::string HumanizeTimestamp(double v);
// Go's fmt.Sprintf (the template function printf); go_format.cpp.
std::string GoSprintf(const std::string& format, const std::vector<Value>& args);
// Prometheus' functions (not Go's builtins); errors are the text after "at <...>: ".
Expected<Value> CallFunction(const std::string& name, const std::vector<Value>& args,
                             const TemplateContext& ctx);

}  // namespace gw::rules::tmpl

#endif  // GPUWARDEN_RULES_TEMPLATE_FUNCS_H_
