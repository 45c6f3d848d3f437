// Wire formats: Alertmanager API v2 postable alerts and Alertmanager's webhook body.
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>

#include "base/utc_time.h"
#include "notify/notify.h"

namespace gw::notify {
namespace {

using Json = nlohmann::json;

Json PairsToObject(const LabelPairs& pairs) {
  Json obj = Json::object();
  for (const auto& [name, value] : pairs) obj[name] = value;
  return obj;
}

// Invalid UTF-8 in a label value must not abort encoding: replace it with U+FFFD.
std::string Dump(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

bool IsResolved(const Alert& alert, int64_t now_ms) {
  return alert.ends_at_ms != 0 && alert.ends_at_ms <= now_ms;
}

// Label pairs present with the same value in every alert (empty for no alerts).
LabelPairs CommonPairs(const std::vector<Alert>& alerts, LabelPairs Alert::*field) {
  if (alerts.empty()) return {};
  std::map<std::string, std::string> common((alerts[0].*field).begin(), (alerts[0].*field).end());
  for (size_t i = 1; i < alerts.size() && !common.empty(); ++i) {
    std::map<std::string, std::string> here((alerts[i].*field).begin(), (alerts[i].*field).end());
    for (auto it = common.begin(); it != common.end();) {
      auto found = here.find(it->first);
      if (found == here.end() || found->second != it->second) {
        it = common.erase(it);
      } else {
        ++it;
      }
    }
  }
  return LabelPairs(common.begin(), common.end());
}

}  // namespace

std::string FormatRfc3339Ms(int64_t ms) {
  const UtcTime u = ToUtc(ms);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", u.tm.tm_year + 1900,
                u.tm.tm_mon + 1, u.tm.tm_mday, u.tm.tm_hour, u.tm.tm_min, u.tm.tm_sec, u.millis);
  return buf;
}

uint64_t Fingerprint(const LabelPairs& labels) {
  // prometheus/common model.LabelSet.Fingerprint: FNV-1a 64, names sorted, 0xff after each
  // name and each value.
  constexpr uint64_t kOffset = 14695981039346656037ULL;
  constexpr uint64_t kPrime = 1099511628211ULL;
  std::vector<const std::pair<std::string, std::string>*> sorted;
  for (const auto& p : labels) sorted.push_back(&p);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->first < b->first; });
  uint64_t h = kOffset;
  auto add = [&h](std::string_view s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= kPrime;
    }
    h ^= 0xff;
    h *= kPrime;
  };
  for (const auto* p : sorted) {
    add(p->first);
    add(p->second);
  }
  return h;
}

std::string FingerprintHex(uint64_t fp) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(fp));
  return buf;
}

std::string EncodeAlertmanagerV2(const std::vector<Alert>& alerts) {
  // openapi.yaml postableAlert: labels (required), annotations, startsAt, endsAt (date-time),
  // generatorURL (uri). Zero times and an empty URL are left out rather than sent as "".
  Json array = Json::array();
  for (const Alert& a : alerts) {
    Json obj = {{"labels", PairsToObject(a.labels)}, {"annotations", PairsToObject(a.annotations)}};
    if (a.starts_at_ms != 0) obj["startsAt"] = FormatRfc3339Ms(a.starts_at_ms);
    if (a.ends_at_ms != 0) obj["endsAt"] = FormatRfc3339Ms(a.ends_at_ms);
    if (!a.generator_url.empty()) obj["generatorURL"] = a.generator_url;
    array.push_back(std::move(obj));
  }
  return Dump(array);
}

std::string EncodeWebhook(const std::vector<Alert>& alerts, const std::string& external_url,
                          int64_t now_ms) {
  // Alertmanager's webhook_config body (notify/webhook, template.Data), version "4". We do no
  // grouping, so groupLabels is empty and groupKey names the sender. A firing alert's endsAt is
  // Go's zero time, as Alertmanager writes it.
  bool any_firing = false;
  Json list = Json::array();
  for (const Alert& a : alerts) {
    bool resolved = IsResolved(a, now_ms);
    any_firing |= !resolved;
    list.push_back({{"status", resolved ? "resolved" : "firing"},
                    {"labels", PairsToObject(a.labels)},
                    {"annotations", PairsToObject(a.annotations)},
                    {"startsAt", FormatRfc3339Ms(a.starts_at_ms)},
                    {"endsAt", resolved ? FormatRfc3339Ms(a.ends_at_ms) : "0001-01-01T00:00:00Z"},
                    {"generatorURL", a.generator_url},
                    {"fingerprint", FingerprintHex(Fingerprint(a.labels))}});
  }
  Json body = {{"version", "4"},
               {"groupKey", "{}:{}"},
               {"truncatedAlerts", 0},
               {"status", any_firing ? "firing" : "resolved"},
               {"receiver", "gpuwarden"},
               {"groupLabels", Json::object()},
               {"commonLabels", PairsToObject(CommonPairs(alerts, &Alert::labels))},
               {"commonAnnotations", PairsToObject(CommonPairs(alerts, &Alert::annotations))},
               {"externalURL", external_url},
               {"alerts", std::move(list)}};
  return Dump(body);
}

double BackoffSeconds(int64_t failures, double initial_s, double max_s) {
  if (failures <= 0) return 0;
  double d = initial_s;
  for (int64_t i = 1; i < failures && d < max_s; ++i) d *= 2;
  return std::min(d, max_s);
}

}  // namespace gw::notify
