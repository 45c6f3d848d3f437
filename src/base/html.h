// base/html.h — escaping text for HTML (element content and quoted attribute values).
//
// HtmlEscape replaces & < > " ' with their character references, so the result is safe both
// between tags and inside a single- or double-quoted attribute. Pure; any thread.
// (The alerting templates' `html` function is rules/template_funcs.h: it follows Go's rules.)
#ifndef GPUWARDEN_BASE_HTML_H_
#define GPUWARDEN_BASE_HTML_H_

#include <string>
#include <string_view>

namespace gw {

std::string HtmlEscape(std::string_view text);

}  // namespace gw

#endif  // GPUWARDEN_BASE_HTML_H_
