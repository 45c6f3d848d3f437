// The Prometheus 2.42 API endpoints besides the queries (http/prom_api.h): metadata, exemplars,
// targets, format_query and the status pages. What each answers, and where it differs from a
// Prometheus server, is in docs/prometheus-notes.md ("HTTP API").
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <map>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "base/build_info.h"
#include "base/utc_time.h"
#include "http/prom_api.h"
#include "http/prom_api_internal.h"
#include "http/prom_format.h"
#include "promql/parser.h"

namespace gw::http {

namespace {

using namespace api_internal;

// Go's RFC3339Nano of a time in milliseconds; the zero time.Time for 0 (never).
std::string Rfc3339(int64_t ms) {
  if (ms == 0) return "0001-01-01T00:00:00Z";
  const UtcTime u = ToUtc(ms);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &u.tm);
  return buf + GoFraction(u.millis) + "Z";
}

// A float as encoding/json writes a duration in seconds: shortest round-trip, fixed notation.
void AppendSeconds(std::string* out, double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
  out->append(buf, r.ptr);
}

std::string DurationText(double seconds) {
  const auto ms = static_cast<int64_t>(seconds * 1000 + 0.5);
  return ms <= 0 ? "0s" : promql::FormatPromDuration(ms);
}

// scheme, host[:port] and path of an http(s) URL ("" for parts it lacks).
struct UrlParts {
  std::string scheme, address, path;
};
UrlParts SplitUrl(const std::string& url) {
  UrlParts p;
  std::string rest = url;
  if (auto s = rest.find("://"); s != std::string::npos) {
    p.scheme = rest.substr(0, s);
    rest = rest.substr(s + 3);
  }
  const size_t slash = rest.find('/');
  p.address = rest.substr(0, slash);
  p.path = slash == std::string::npos ? "/" : rest.substr(slash);
  if (auto q = p.path.find('?'); q != std::string::npos) p.path.resize(q);
  return p;
}

// Prometheus' globalUrl: the scrape URL with a loopback host replaced by this machine's name, so
// the link works from elsewhere.
std::string GlobalUrl(const std::string& url) {
  UrlParts p = SplitUrl(url);
  std::string host = p.address, port;
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    if (close == std::string::npos) return url;
    port = host.substr(close + 1);
    host = host.substr(1, close - 1);
  } else if (auto colon = host.rfind(':'); colon != std::string::npos) {
    port = host.substr(colon);
    host.resize(colon);
  }
  const bool loopback = host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
  if (!loopback) return url;
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return url;
  const size_t at = url.find(p.address);
  return url.substr(0, at) + name + port + url.substr(at + p.address.size());
}

void AppendTarget(std::string* out, const TargetInfo& t) {
  tsdb::Labels discovered = t.discovered_labels;
  if (discovered.empty()) {
    const UrlParts p = SplitUrl(t.url);
    discovered = {{"__address__", p.address},
                  {"__metrics_path__", p.path},
                  {"__scheme__", p.scheme},
                  {"__scrape_interval__", DurationText(t.interval_s)},
                  {"__scrape_timeout__", DurationText(t.timeout_s)}};
    for (const tsdb::Label& l : t.labels) discovered.push_back(l);
    std::sort(discovered.begin(), discovered.end());
  }
  *out += "{\"discoveredLabels\":";
  AppendLabels(out, discovered);
  *out += ",\"labels\":";
  AppendLabels(out, t.labels);
  *out += ",\"scrapePool\":";
  AppendJsonString(out, t.pool);
  *out += ",\"scrapeUrl\":";
  AppendJsonString(out, t.url);
  *out += ",\"globalUrl\":";
  AppendJsonString(out, GlobalUrl(t.url));
  *out += ",\"lastError\":";
  AppendJsonString(out, t.last_error);
  *out += ",\"lastScrape\":";
  AppendJsonString(out, Rfc3339(t.last_scrape_ms));
  *out += ",\"lastScrapeDuration\":";
  AppendSeconds(out, t.last_scrape_duration_s);
  *out += ",\"health\":";
  AppendJsonString(out, t.health);
  *out += ",\"scrapeInterval\":";
  AppendJsonString(out, DurationText(t.interval_s));
  *out += ",\"scrapeTimeout\":";
  AppendJsonString(out, DurationText(t.timeout_s));
  *out += '}';
}

// A decimal integer parameter as Go's strconv.Atoi reads it.
bool ParseInt(const std::string& text, long long* out) {
  if (text.empty()) return false;
  const char* begin = text.data();
  if (*begin == '+') ++begin;
  auto r = std::from_chars(begin, text.data() + text.size(), *out);
  return r.ec == std::errc() && r.ptr == text.data() + text.size();
}

// "type":…,"help":…,"unit":… of one metric's metadata (no braces).
void AppendMetadataFields(std::string* out, const MetricMetadata& m) {
  *out += "\"type\":";
  AppendJsonString(out, m.type);
  *out += ",\"help\":";
  AppendJsonString(out, m.help);
  *out += ",\"unit\":";
  AppendJsonString(out, m.unit);
}

void AppendTop(std::string* out, const TsdbStatus::Top& top) {
  *out += '[';
  for (size_t i = 0; i < top.size(); ++i) {
    if (i) *out += ',';
    *out += "{\"name\":";
    AppendJsonString(out, top[i].first);
    *out += ",\"value\":";
    *out += std::to_string(top[i].second);
    *out += '}';
  }
  *out += ']';
}

// The `n` largest counts of `counts`, count descending then name ascending.
template <typename Map>
TsdbStatus::Top TopOf(const Map& counts, size_t n) {
  TsdbStatus::Top all(counts.begin(), counts.end());
  auto larger = [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  };
  const size_t keep = std::min(n, all.size());
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(keep), all.end(),
                    larger);
  all.resize(keep);
  return all;
}

// Threads of this process (Prometheus' goroutineCount slot): /proc/self/stat's 20th field.
long ThreadCount() {
  std::ifstream stat("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos) return 0;
  // After ") ": state is field 3, num_threads field 20.
  size_t pos = paren + 2;
  for (int field = 3; field < 20 && pos != std::string::npos; ++field) {
    pos = text.find(' ', pos);
    if (pos != std::string::npos) ++pos;
  }
  return pos == std::string::npos ? 0 : std::atol(text.c_str() + pos);
}

// HELP text of the exposition formats: `\\` and `\n` escaped (`\"` too in OpenMetrics).
std::string UnescapeHelp(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      const char next = s[i + 1];
      if (next == 'n' || next == '\\' || next == '"') {
        out += next == 'n' ? '\n' : next;
        ++i;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

// Calls fn(keyword, name, rest) for each `# KEYWORD name rest` line of an exposition page.
template <typename Fn>
void ForEachDescriptor(std::string_view page, Fn fn) {
  while (!page.empty()) {
    const size_t nl = page.find('\n');
    std::string_view line = page.substr(0, nl);
    page = nl == std::string_view::npos ? std::string_view{} : page.substr(nl + 1);
    if (line.size() < 2 || line.substr(0, 2) != "# ") continue;
    line.remove_prefix(2);
    const size_t sp1 = line.find(' ');
    if (sp1 == std::string_view::npos) continue;
    const std::string_view keyword = line.substr(0, sp1);
    line.remove_prefix(sp1 + 1);
    const size_t sp2 = line.find(' ');
    const std::string_view name = line.substr(0, sp2);
    const std::string_view rest =
        sp2 == std::string_view::npos ? std::string_view{} : line.substr(sp2 + 1);
    fn(keyword, name, rest);
  }
}

void RegisterStatusRoutes(Server* server, std::shared_ptr<const PromApiOptions> options) {
  Handler metadata = [options](const Request& req, Response& res) {
    long long limit = -1, per_metric = -1;
    if (const std::string text = req.param("limit"); !text.empty() && !ParseInt(text, &limit)) {
      Fail(res, "bad_data", "limit must be a number");
      return;
    }
    // 2.42 does not know limit_per_metric (later versions do): a valid one is honoured, anything
    // else is ignored as 2.42 ignores it.
    if (!ParseInt(req.param("limit_per_metric"), &per_metric) || per_metric <= 0) per_metric = -1;
    const std::string metric = req.param("metric");
    std::vector<MetricMetadata> all;
    if (options->metadata) all = options->metadata();
    // One entry per distinct metadata of a metric, as Prometheus merges its targets'.
    auto key = [](const MetricMetadata& m) { return std::tie(m.metric, m.type, m.help, m.unit); };
    std::sort(all.begin(), all.end(),
              [&](const MetricMetadata& a, const MetricMetadata& b) { return key(a) < key(b); });
    all.erase(std::unique(all.begin(), all.end(),
                          [&](const MetricMetadata& a, const MetricMetadata& b) {
                            return key(a) == key(b);
                          }),
              all.end());
    std::string out = "{";
    long long metrics = 0;
    for (size_t i = 0; i < all.size();) {
      size_t j = i;
      while (j < all.size() && all[j].metric == all[i].metric) ++j;
      if (!metric.empty() && all[i].metric != metric) {
        i = j;
        continue;
      }
      if (limit >= 0 && metrics >= limit) break;
      if (metrics++) out += ',';
      AppendJsonString(&out, all[i].metric);
      out += ":[";
      for (size_t k = i; k < j; ++k) {
        if (per_metric >= 0 && static_cast<long long>(k - i) >= per_metric) break;
        if (k > i) out += ',';
        out += '{';
        AppendMetadataFields(&out, all[k]);
        out += '}';
      }
      out += ']';
      i = j;
    }
    out += '}';
    Succeed(res, std::move(out));
  };

  // No exemplars are stored; the parameters are still checked as 2.42 checks them.
  Handler exemplars = [](const Request& req, Response& res) {
    auto expr = promql::Parse(req.param("query"));
    if (!expr.ok()) {
      Fail(res, "bad_data", expr.error().message);
      return;
    }
    int64_t start = 0, end = 0;
    for (auto [name, fallback, out] :
         {std::tuple{"start", kMinTimeMs, &start}, std::tuple{"end", kMaxTimeMs, &end}}) {
      const std::string text = req.param(name);
      if (!text.empty() && !ParsePromTime(text, out)) {
        Fail(res, "bad_data",
             std::string("invalid parameter \"") + name + "\": Invalid time value for '" + name +
                 "': cannot parse \"" + text + "\" to a valid timestamp");
        return;
      }
      if (text.empty()) *out = fallback;
    }
    if (end < start) {
      Fail(res, "bad_data", "end timestamp must not be before start timestamp");
      return;
    }
    Succeed(res, "[]");
  };

  Handler targets = [options](const Request& req, Response& res) {
    const std::string state = req.param("state");
    const bool any = state.empty() || state == "any";
    const bool active = any || state == "active";
    std::vector<TargetInfo> list;
    if (active && options->targets) list = options->targets();
    std::sort(list.begin(), list.end(), [](const TargetInfo& a, const TargetInfo& b) {
      return a.pool != b.pool ? a.pool < b.pool : a.url < b.url;
    });
    std::string out = "{\"activeTargets\":[";
    for (size_t i = 0; i < list.size(); ++i) {
      if (i) out += ',';
      AppendTarget(&out, list[i]);
    }
    out += "],\"droppedTargets\":[]}";  // the agent drops no target (no relabelling)
    Succeed(res, std::move(out));
  };

  // Prometheus 2.42 walks the targets in order and stops before the next target once `limit`
  // entries are listed (so a target's list is never cut); `metric` leaves the name out.
  Handler target_metadata = [options](const Request& req, Response& res) {
    long long limit = -1;
    if (const std::string text = req.param("limit"); !text.empty() && !ParseInt(text, &limit)) {
      Fail(res, "bad_data", "limit must be a number");
      return;
    }
    const std::string match = req.param("match_target");
    std::vector<tsdb::Matcher> matchers;
    if (!match.empty()) {
      auto parsed = ParseSeriesSelector(match);
      if (!parsed.ok()) {
        Fail(res, "bad_data", "invalid parameter \"match_target\": " + parsed.error().message);
        return;
      }
      matchers = std::move(*parsed);
    }
    const std::string metric = req.param("metric");
    std::vector<TargetMetadata> all;
    if (options->target_metadata) all = options->target_metadata();
    std::string out = "[";
    long long listed = 0;
    for (size_t i = 0; i < all.size();) {
      size_t j = i;
      while (j < all.size() && all[j].target == all[i].target) ++j;
      if (limit >= 0 && listed >= limit) break;
      const tsdb::Labels& target = all[i].target;
      const bool selected = std::all_of(matchers.begin(), matchers.end(), [&](const auto& m) {
        return m.Matches(tsdb::LabelValue(target, m.name()));
      });
      for (size_t k = i; selected && k < j; ++k) {
        const MetricMetadata& m = all[k].metadata;
        if (!metric.empty() && m.metric != metric) continue;
        if (listed++) out += ',';
        out += "{\"target\":";
        AppendLabels(&out, target);
        if (metric.empty()) {
          out += ",\"metric\":";
          AppendJsonString(&out, m.metric);
        }
        out += ',';
        AppendMetadataFields(&out, m);
        out += '}';
      }
      i = j;
    }
    out += ']';
    Succeed(res, std::move(out));
  };

  Handler format_query = [](const Request& req, Response& res) {
    auto expr = promql::Parse(req.param("query"));
    if (!expr.ok()) {
      Fail(res, "bad_data", "invalid parameter \"query\": " + expr.error().message);
      return;
    }
    std::string out;
    AppendJsonString(&out, promql::Format(**expr));
    Succeed(res, std::move(out));
  };

  Handler tsdb_status = [options](const Request&, Response& res) {
    TsdbStatus status;
    if (options->head) {
      status = ComputeTsdbStatus(*options->head);
    } else {
      status.min_time_ms = INT64_MAX;
      status.max_time_ms = INT64_MIN;
    }
    Succeed(res, TsdbStatusJson(status));
  };

  Handler runtime = [options](const Request&, Response& res) {
    RuntimeInfo info;
    if (options->runtime) info = options->runtime();
    std::string out = "{\"startTime\":";
    AppendJsonString(&out, Rfc3339(info.start_time_ms));
    out += ",\"CWD\":";
    AppendJsonString(&out, info.cwd);
    out += ",\"reloadConfigSuccess\":";
    out += info.reload_config_success ? "true" : "false";
    out += ",\"lastConfigTime\":";
    AppendJsonString(&out, Rfc3339(info.last_config_time_ms / 1000 * 1000));
    out += ",\"corruptionCount\":" + std::to_string(info.corruption_count);
    out += ",\"goroutineCount\":" + std::to_string(ThreadCount());
    out += ",\"GOMAXPROCS\":" + std::to_string(std::thread::hardware_concurrency());
    out += ",\"GOGC\":\"\",\"GODEBUG\":\"\",\"storageRetention\":";
    AppendJsonString(&out, info.storage_retention);
    out += '}';
    Succeed(res, std::move(out));
  };

  Handler flags = [options](const Request&, Response& res) {
    std::map<std::string, std::string> sorted(options->flags.begin(), options->flags.end());
    std::string out = "{";
    for (const auto& [name, value] : sorted) {
      if (out.size() > 1) out += ',';
      AppendJsonString(&out, name);
      out += ':';
      AppendJsonString(&out, value);
    }
    out += '}';
    Succeed(res, std::move(out));
  };

  Handler config = [options](const Request&, Response& res) {
    std::string out = "{\"yaml\":";
    AppendJsonString(&out, options->config_yaml);
    out += '}';
    Succeed(res, std::move(out));
  };

  Handler buildinfo = [options](const Request&, Response& res) {
    const BuildInfo& b = GetBuildInfo();
    std::string out = "{\"version\":";
    AppendJsonString(&out, options->version.empty() ? std::string(b.version) : options->version);
    for (auto [name, value] :
         {std::pair{"revision", b.revision}, std::pair{"branch", b.branch},
          std::pair{"buildUser", b.build_user}, std::pair{"buildDate", b.build_date},
          std::pair{"goVersion", b.compiler}}) {
      out += ",\"";
      out += name;
      out += "\":";
      AppendJsonString(&out, value);
    }
    out += '}';
    Succeed(res, std::move(out));
  };

  // The WAL is replayed before the server starts, so a replay is never in progress.
  Handler walreplay = [](const Request&, Response& res) {
    Succeed(res, "{\"min\":0,\"max\":0,\"current\":0}");
  };

  server->Get("/api/v1/metadata", metadata);
  server->Get("/api/v1/query_exemplars", exemplars);
  server->Post("/api/v1/query_exemplars", exemplars);
  server->Get("/api/v1/targets", targets);
  server->Get("/api/v1/targets/metadata", target_metadata);
  server->Get("/api/v1/format_query", format_query);
  server->Post("/api/v1/format_query", format_query);
  server->Get("/api/v1/status/tsdb", tsdb_status);
  server->Get("/api/v1/status/runtimeinfo", runtime);
  server->Get("/api/v1/status/flags", flags);
  server->Get("/api/v1/status/config", config);
  server->Get("/api/v1/status/buildinfo", buildinfo);
  server->Get("/api/v1/status/walreplay", walreplay);
}

}  // namespace

namespace api_internal {

void RegisterStatusApi(Server* server, const PromApiOptions& options) {
  RegisterStatusRoutes(server, std::make_shared<const PromApiOptions>(options));
}

}  // namespace api_internal

std::vector<MetricMetadata> MetadataFromExposition(std::string_view text,
                                                   std::string_view openmetrics) {
  std::unordered_map<std::string, std::string> units;  // OpenMetrics family -> unit
  ForEachDescriptor(openmetrics,
                    [&](std::string_view keyword, std::string_view name, std::string_view rest) {
                      if (keyword == "UNIT" && !rest.empty())
                        units[std::string(name)] = std::string(rest);
                    });
  std::map<std::string, MetricMetadata> by_name;
  ForEachDescriptor(text,
                    [&](std::string_view keyword, std::string_view name, std::string_view rest) {
                      if (keyword != "HELP" && keyword != "TYPE") return;
                      MetricMetadata& m = by_name[std::string(name)];
                      m.metric = name;
                      if (keyword == "HELP") {
                        m.help = UnescapeHelp(rest);
                      } else {
                        m.type = rest == "untyped" ? "unknown" : std::string(rest);
                      }
                    });
  std::vector<MetricMetadata> out;
  out.reserve(by_name.size());
  for (auto& [name, m] : by_name) {
    if (m.type.empty()) m.type = "unknown";
    // The OpenMetrics family of a text name: itself, or without `_total` / `_info`.
    for (std::string_view suffix : {"", "_total", "_info"}) {
      if (name.size() <= suffix.size() ||
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
        continue;
      auto it = units.find(name.substr(0, name.size() - suffix.size()));
      if (it != units.end()) {
        m.unit = it->second;
        break;
      }
    }
    out.push_back(std::move(m));
  }
  return out;
}

TsdbStatus ComputeTsdbStatus(const tsdb::Head& head, size_t top) {
  TsdbStatus status;
  const tsdb::Head::MemoryStats memory = head.memory_stats();
  status.chunk_count = memory.chunks;
  status.min_time_ms = memory.min_t_ms;
  status.max_time_ms = memory.max_t_ms;
  // Series per (name, value) pair, from every series' labels; nothing else is read.
  std::map<std::string, std::map<std::string, uint64_t>> postings;
  const std::vector<tsdb::SeriesRef> refs = head.Select({});
  status.num_series = refs.size();
  for (tsdb::SeriesRef ref : refs)
    for (const tsdb::Label& l : head.LabelsOf(ref)) ++postings[l.name][l.value];
  std::unordered_map<std::string, uint64_t> by_metric, values_by_name, bytes_by_name, by_pair;
  for (const auto& [name, values] : postings) {
    status.num_label_pairs += values.size();
    values_by_name[name] = values.size();
    uint64_t bytes = 0;
    for (const auto& [value, series] : values) {
      if (name == "__name__") by_metric[value] = series;
      by_pair[name + "=" + value] = series;
      bytes += value.size() * series;
    }
    bytes_by_name[name] = bytes;
  }
  status.series_count_by_metric_name = TopOf(by_metric, top);
  status.label_value_count_by_label_name = TopOf(values_by_name, top);
  status.memory_in_bytes_by_label_name = TopOf(bytes_by_name, top);
  status.series_count_by_label_value_pair = TopOf(by_pair, top);
  return status;
}

std::string TsdbStatusJson(const TsdbStatus& s) {
  std::string out = "{\"headStats\":{\"numSeries\":" + std::to_string(s.num_series) +
                    ",\"numLabelPairs\":" + std::to_string(s.num_label_pairs) +
                    ",\"chunkCount\":" + std::to_string(s.chunk_count) +
                    ",\"minTime\":" + std::to_string(s.min_time_ms) +
                    ",\"maxTime\":" + std::to_string(s.max_time_ms) + "}";
  out += ",\"seriesCountByMetricName\":";
  AppendTop(&out, s.series_count_by_metric_name);
  out += ",\"labelValueCountByLabelName\":";
  AppendTop(&out, s.label_value_count_by_label_name);
  out += ",\"memoryInBytesByLabelName\":";
  AppendTop(&out, s.memory_in_bytes_by_label_name);
  out += ",\"seriesCountByLabelValuePair\":";
  AppendTop(&out, s.series_count_by_label_value_pair);
  out += '}';
  return out;
}

}  // namespace gw::http
