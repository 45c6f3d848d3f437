#include "http/prom_api.h"

#include <cstdio>
#include <limits>

#include "base/heap.h"
#include "http/prom_api_internal.h"
#include "http/prom_format.h"
#include "promql/parser.h"

namespace gw::http {

namespace api_internal {

void AppendJsonString(std::string* out, std::string_view s) {
  *out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      case '<':
        *out += "\\u003c";
        break;
      case '>':
        *out += "\\u003e";
        break;
      case '&':
        *out += "\\u0026";
        break;
      default:
        if (c < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
          *out += buffer;
        } else {
          *out += static_cast<char>(c);
        }
    }
  }
  *out += '"';
}

void AppendLabels(std::string* out, const tsdb::Labels& labels) {
  *out += '{';
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i) *out += ',';
    AppendJsonString(out, labels[i].name);
    *out += ':';
    AppendJsonString(out, labels[i].value);
  }
  *out += '}';
}

namespace {

int HttpStatus(const std::string& error_type) {
  if (error_type == "bad_data") return 400;
  if (error_type == "execution") return 422;
  if (error_type == "timeout" || error_type == "canceled" || error_type == "unavailable")
    return 503;
  if (error_type == "not_found") return 404;
  return 500;
}

}  // namespace

void Fail(Response& res, const std::string& error_type, const std::string& message) {
  WriteApiError(res, HttpStatus(error_type), error_type, message);
}

void Succeed(Response& res, std::string data_json) {
  res.status = 200;
  res.content_type = "application/json";
  static constexpr std::string_view kHead = "{\"status\":\"success\",\"data\":";
  res.body.clear();
  res.body.reserve(kHead.size() + data_json.size() + 1);
  res.body += kHead;
  res.body += data_json;
  res.body += '}';
}

bool TimeParam(const Request& req, Response& res, const char* name, int64_t fallback,
               int64_t* out) {
  std::string text = req.param(name);
  if (text.empty()) {
    *out = fallback;
    return true;
  }
  if (ParsePromTime(text, out)) return true;
  Fail(res, "bad_data",
       std::string("invalid parameter \"") + name + "\": cannot parse \"" + text +
           "\" to a valid timestamp");
  return false;
}

// A match[] value must be a plain series selector (`up{job="x"}`), as in Prometheus.
Expected<std::vector<tsdb::Matcher>> ParseSeriesSelector(const std::string& text) {
  auto expr = promql::Parse(text);
  if (!expr.ok()) return Error{expr.error().message};
  if ((*expr)->kind != promql::ExprKind::kVectorSelector)
    return Error{"1:1: parse error: expected a series selector, got " + text};
  return static_cast<promql::VectorSelector&>(**expr).matchers;
}

}  // namespace api_internal

namespace {

using namespace api_internal;

void AppendPoint(std::string* out, int64_t t_ms, double v) {
  *out += '[';
  AppendPromTimestamp(out, t_ms);
  *out += ",\"";
  AppendPromValue(out, v);
  *out += "\"]";
}

const char* ErrorType(promql::QueryError::Kind kind) {
  switch (kind) {
    case promql::QueryError::Kind::kBadData:
      return "bad_data";
    case promql::QueryError::Kind::kExecution:
      return "execution";
    case promql::QueryError::Kind::kTimeout:
      return "timeout";
    case promql::QueryError::Kind::kCanceled:
      return "canceled";
    case promql::QueryError::Kind::kUnavailable:
      return "unavailable";
    case promql::QueryError::Kind::kInternal:
      return "internal";
  }
  return "internal";
}

// The reply to a query: its result, or its error in the API's shape.
void Answer(Response& res, const promql::QueryResult& result) {
  if (!result.ok()) {
    const auto& e = result.error();
    Fail(res, ErrorType(e.kind),
         e.kind == promql::QueryError::Kind::kBadData ? "invalid parameter \"query\": " + e.message
                                                      : e.message);
    return;
  }
  Succeed(res, QueryResultJson(result.value()));
}

// After a query's answer went to its connection (the evaluation's memory freed): gives the
// allocator's free memory back to the kernel when it holds much (base/heap.h). Without it, each
// HTTP thread's malloc arena keeps the high-water mark of the largest query it ran. Not before
// the answer: a trim (mallinfo2's walk of the free lists, madvise of the free pages) cost the
// first query after a start 0.4-1.6 ms (docs/benchmarks.md, "session 18").
void TrimAfterQuery() {
  ProcessHeapTrimmer().MaybeTrim();
}

bool TimeoutParam(const Request& req, Response& res, promql::EngineOptions* engine) {
  std::string text = req.param("timeout");
  if (text.empty()) return true;
  int64_t ms = 0;
  if (!ParsePromDuration(text, &ms)) {
    Fail(res, "bad_data",
         "invalid parameter \"timeout\": cannot parse \"" + text + "\" to a valid duration");
    return false;
  }
  engine->timeout_s = std::min(engine->timeout_s, static_cast<double>(ms) / 1000.0);
  return true;
}

// match[] parameters parsed into matcher sets; false (reply written) on a bad selector.
bool MatchParams(const Request& req, Response& res, std::vector<std::vector<tsdb::Matcher>>* out) {
  for (const std::string& m : req.params_all("match[]")) {
    auto matchers = ParseSeriesSelector(m);
    if (!matchers.ok()) {
      Fail(res, "bad_data", "invalid parameter \"match[]\": " + matchers.error().message);
      return false;
    }
    out->push_back(std::move(*matchers));
  }
  return true;
}

void AppendStringList(std::string* out, const std::vector<std::string>& values) {
  *out += '[';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) *out += ',';
    AppendJsonString(out, values[i]);
  }
  *out += ']';
}

}  // namespace

std::string QueryResultJson(const promql::Value& value) {
  std::string out;
  size_t points = 0;
  for (const promql::Series& s : value.series) points += s.points.size() + 4;
  out.reserve(64 + points * 32);  // ~32 bytes per point: few reallocations of a large body
  out += "{\"resultType\":";
  switch (value.type) {
    case promql::ValueType::kScalar:
      out += "\"scalar\",\"result\":";
      AppendPoint(&out, value.t_ms, value.scalar);
      break;
    case promql::ValueType::kString:
      out += "\"string\",\"result\":[";
      AppendPromTimestamp(&out, value.t_ms);
      out += ',';
      AppendJsonString(&out, value.string);
      out += ']';
      break;
    case promql::ValueType::kVector:
      out += "\"vector\",\"result\":[";
      for (size_t i = 0; i < value.series.size(); ++i) {
        const promql::Series& s = value.series[i];
        if (i) out += ',';
        out += "{\"metric\":";
        AppendLabels(&out, s.labels);
        out += ",\"value\":";
        const promql::Point p = s.points.empty() ? promql::Point{value.t_ms, 0} : s.points[0];
        AppendPoint(&out, p.t_ms, p.v);
        out += '}';
      }
      out += ']';
      break;
    case promql::ValueType::kMatrix:
      out += "\"matrix\",\"result\":[";
      for (size_t i = 0; i < value.series.size(); ++i) {
        const promql::Series& s = value.series[i];
        if (i) out += ',';
        out += "{\"metric\":";
        AppendLabels(&out, s.labels);
        out += ",\"values\":[";
        for (size_t p = 0; p < s.points.size(); ++p) {
          if (p) out += ',';
          AppendPoint(&out, s.points[p].t_ms, s.points[p].v);
        }
        out += "]}";
      }
      out += ']';
      break;
  }
  out += '}';
  return out;
}

void RegisterPromApi(Server* server, QuerierFactory queriers, PromApiOptions options) {
  auto shared = std::make_shared<std::pair<QuerierFactory, PromApiOptions>>(std::move(queriers),
                                                                            std::move(options));

  Handler query = [shared](const Request& req, Response& res) {
    promql::EngineOptions engine_options = shared->second.engine;
    int64_t t = 0;
    if (!TimeParam(req, res, "time", shared->second.clock->NowMs(), &t) ||
        !TimeoutParam(req, res, &engine_options))
      return;
    {
      promql::Engine engine(engine_options);
      auto querier = shared->first();
      promql::QueryResult result = engine.Instant(*querier, req.param("query"), t);
      Answer(res, result);
    }
    res.after_send = TrimAfterQuery;
  };

  Handler query_range = [shared](const Request& req, Response& res) {
    promql::EngineOptions engine_options = shared->second.engine;
    int64_t start = 0, end = 0, step = 0;
    if (!TimeParam(req, res, "start", kMinTimeMs, &start)) return;
    if (req.param("start").empty()) {
      Fail(res, "bad_data", "invalid parameter \"start\": cannot parse \"\" to a valid timestamp");
      return;
    }
    if (!TimeParam(req, res, "end", kMaxTimeMs, &end)) return;
    if (req.param("end").empty()) {
      Fail(res, "bad_data", "invalid parameter \"end\": cannot parse \"\" to a valid timestamp");
      return;
    }
    if (end < start) {
      Fail(res, "bad_data",
           "invalid parameter \"end\": end timestamp must not be before start time");
      return;
    }
    std::string step_text = req.param("step");
    if (!ParsePromDuration(step_text, &step)) {
      Fail(res, "bad_data",
           "invalid parameter \"step\": cannot parse \"" + step_text + "\" to a valid duration");
      return;
    }
    if (step <= 0) {
      Fail(res, "bad_data",
           "invalid parameter \"step\": zero or negative query resolution step widths are not "
           "accepted. Try a positive integer");
      return;
    }
    if ((end - start) / step > 11000) {
      Fail(res, "bad_data",
           "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query "
           "resolution (?step=XX)");
      return;
    }
    if (!TimeoutParam(req, res, &engine_options)) return;
    {
      promql::Engine engine(engine_options);
      auto querier = shared->first();
      promql::QueryResult result = engine.Range(*querier, req.param("query"), start, end, step);
      Answer(res, result);
    }
    res.after_send = TrimAfterQuery;
  };

  Handler series = [shared](const Request& req, Response& res) {
    std::vector<std::vector<tsdb::Matcher>> sets;
    if (!MatchParams(req, res, &sets)) return;
    if (sets.empty()) {
      Fail(res, "bad_data", "no match[] parameter provided");
      return;
    }
    int64_t start = 0, end = 0;
    if (!TimeParam(req, res, "start", kMinTimeMs, &start) ||
        !TimeParam(req, res, "end", kMaxTimeMs, &end))
      return;
    auto querier = shared->first();
    std::vector<tsdb::Labels> found;
    for (const auto& set : sets) {
      std::vector<tsdb::SeriesData> data;
      if (Status s = querier->Select(set, start, end, &data); !s.ok()) {
        Fail(res, "execution", s.message());
        return;
      }
      for (auto& d : data) found.push_back(std::move(d.labels));
    }
    std::sort(found.begin(), found.end());
    found.erase(std::unique(found.begin(), found.end()), found.end());
    std::string out = "[";
    for (size_t i = 0; i < found.size(); ++i) {
      if (i) out += ',';
      AppendLabels(&out, found[i]);
    }
    out += ']';
    Succeed(res, std::move(out));
  };

  Handler labels = [shared](const Request& req, Response& res) {
    std::vector<std::vector<tsdb::Matcher>> sets;
    int64_t start = 0, end = 0;
    if (!MatchParams(req, res, &sets) || !TimeParam(req, res, "start", kMinTimeMs, &start) ||
        !TimeParam(req, res, "end", kMaxTimeMs, &end))
      return;
    std::vector<std::string> names;
    if (Status s = shared->first()->LabelNames(sets, start, end, &names); !s.ok()) {
      Fail(res, "execution", s.message());
      return;
    }
    std::string out;
    AppendStringList(&out, names);
    Succeed(res, std::move(out));
  };

  Handler label_values = [shared](const Request& req, Response& res) {
    const std::string prefix = "/api/v1/label/";
    std::string rest = req.path.substr(prefix.size());
    const std::string suffix = "/values";
    if (rest.size() <= suffix.size() || rest.substr(rest.size() - suffix.size()) != suffix) {
      Fail(res, "not_found", "not found");
      return;
    }
    std::string name = rest.substr(0, rest.size() - suffix.size());
    if (!tsdb::IsValidLabelName(name)) {
      Fail(res, "bad_data", "invalid label name: \"" + name + "\"");
      return;
    }
    std::vector<std::vector<tsdb::Matcher>> sets;
    int64_t start = 0, end = 0;
    if (!MatchParams(req, res, &sets) || !TimeParam(req, res, "start", kMinTimeMs, &start) ||
        !TimeParam(req, res, "end", kMaxTimeMs, &end))
      return;
    std::vector<std::string> values;
    if (Status s = shared->first()->LabelValues(name, sets, start, end, &values); !s.ok()) {
      Fail(res, "execution", s.message());
      return;
    }
    std::string out;
    AppendStringList(&out, values);
    Succeed(res, std::move(out));
  };

  for (auto [path, handler] : {std::pair<const char*, Handler*>{"/api/v1/query", &query},
                               {"/api/v1/query_range", &query_range},
                               {"/api/v1/series", &series},
                               {"/api/v1/labels", &labels}}) {
    server->Get(path, *handler);
    server->Post(path, *handler);
  }
  server->GetPrefix("/api/v1/label/", label_values);
  api_internal::RegisterStatusApi(server, shared->second);
}

void WriteApiError(Response& res, int status, std::string_view error_type,
                   std::string_view message) {
  res.status = status;
  res.content_type = "application/json";
  res.body = "{\"status\":\"error\",\"errorType\":";
  AppendJsonString(&res.body, error_type);
  res.body += ",\"error\":";
  AppendJsonString(&res.body, message);
  res.body += '}';
}

}  // namespace gw::http
