// web/json_text.h — the few JSON writers the console's endpoints need to write large bodies
// straight into a string (no document tree per value). Internal to src/web; pure, thread-safe.
// Errors in the Prometheus API's shape are written by http::WriteApiError (http/prom_api.h).
#ifndef GPUWARDEN_WEB_JSON_TEXT_H_
#define GPUWARDEN_WEB_JSON_TEXT_H_

#include <string>
#include <string_view>

namespace gw::web {

// Appends `text` as a JSON string: quotes, backslash and control characters escaped; other
// bytes (UTF-8) as they are.
void AppendJsonString(std::string* out, std::string_view text);

// Appends a finite number in at most 6 significant digits ("0.35", "1.23457e+11"), enough for
// a chart; a non-finite one as null.
void AppendJsonNumber(std::string* out, double v);

}  // namespace gw::web

#endif  // GPUWARDEN_WEB_JSON_TEXT_H_
