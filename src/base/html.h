// base/html.h — escaping text for HTML (element content and quoted attribute values).
//
// HtmlEscape replaces & < > " ' with their character references (&amp; &lt; &gt; &#34; &#39;) and
// a NUL byte with U+FFFD, so the result is safe both between tags and inside a single- or
// double-quoted attribute. That is exactly Go's text/template HTMLEscapeString, so the alerting
// templates' `html` function (rules/) uses it too. Pure; any thread.
#ifndef GPUWARDEN_BASE_HTML_H_
#define GPUWARDEN_BASE_HTML_H_

#include <string>
#include <string_view>

namespace gw {

std::string HtmlEscape(std::string_view text);

}  // namespace gw

#endif  // GPUWARDEN_BASE_HTML_H_
