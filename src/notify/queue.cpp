// The per-target queue (latest state per fingerprint) and its atomically replaced file.
#include "notify/queue.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/file.h"

namespace gw::notify {

using Json = nlohmann::json;

int64_t AlertQueue::Put(Alert alert) {
  uint64_t fp = Fingerprint(alert.labels);
  uint64_t seq = next_seq_++;
  auto it = entries_.find(fp);
  if (it != entries_.end()) {
    order_.erase(it->second.seq);
    it->second = Entry{std::move(alert), seq};
    order_.emplace(seq, fp);
    return 0;
  }
  entries_.emplace(fp, Entry{std::move(alert), seq});
  order_.emplace(seq, fp);
  int64_t dropped = 0;
  while (static_cast<int64_t>(entries_.size()) > max_entries_) {
    auto oldest = order_.begin();
    entries_.erase(oldest->second);
    order_.erase(oldest);
    ++dropped;
  }
  return dropped;
}

AlertQueue::Batch AlertQueue::Peek(size_t max) const {
  Batch batch;
  for (auto it = order_.begin(); it != order_.end() && batch.alerts.size() < max; ++it) {
    batch.alerts.push_back(entries_.at(it->second).alert);
    batch.keys.emplace_back(it->second, it->first);
  }
  return batch;
}

size_t AlertQueue::Remove(const Batch& batch) {
  size_t removed = 0;
  for (const auto& [fp, seq] : batch.keys) {
    auto it = entries_.find(fp);
    if (it == entries_.end() || it->second.seq != seq) continue;  // replaced meanwhile: keep
    order_.erase(seq);
    entries_.erase(it);
    ++removed;
  }
  return removed;
}

std::vector<Alert> AlertQueue::Snapshot() const {
  std::vector<Alert> out;
  out.reserve(entries_.size());
  for (const auto& [seq, fp] : order_) out.push_back(entries_.at(fp).alert);
  return out;
}

const char* KindName(Target::Kind kind) {
  return kind == Target::kWebhook ? "webhook" : "alertmanager";
}

std::string QueueFilePath(const std::string& dir, const Target& target) {
  // The name hashes the URL so that each target keeps its file across restarts and reorderings.
  uint64_t h = Fingerprint({{"url", target.url}});
  return dir + "/" + KindName(target.kind) + "-" + FingerprintHex(h) + ".json";
}

namespace {

Json PairsToJson(const LabelPairs& pairs) {
  Json obj = Json::object();
  for (const auto& [k, v] : pairs) obj[k] = v;
  return obj;
}

bool JsonToPairs(const Json& obj, LabelPairs* out) {
  if (!obj.is_object()) return false;
  for (const auto& [k, v] : obj.items()) {
    if (!v.is_string()) return false;
    out->emplace_back(k, v.get<std::string>());
  }
  return true;
}

uint32_t Crc32(const std::string& text) {
  uLong crc = crc32(0L, Z_NULL, 0);
  return static_cast<uint32_t>(
      crc32(crc, reinterpret_cast<const Bytef*>(text.data()), static_cast<uInt>(text.size())));
}

std::string DumpCompact(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string Errno(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

}  // namespace

Status WriteQueueFile(const std::string& path, const QueueFile& file) {
  Json alerts = Json::array();
  for (const Alert& a : file.alerts) {
    alerts.push_back({{"labels", PairsToJson(a.labels)},
                      {"annotations", PairsToJson(a.annotations)},
                      {"startsAt", a.starts_at_ms},
                      {"endsAt", a.ends_at_ms},
                      {"generatorURL", a.generator_url}});
  }
  // The checksum covers the alerts as dumped here; a reader re-dumps the parsed array, which
  // gives the same bytes because the dump is canonical (sorted keys, no spaces, replaced UTF-8).
  std::string alerts_text = DumpCompact(alerts);
  Json doc = {{"format", "gpuwarden-notify-queue"},
              {"version", 1},
              {"kind", file.kind},
              {"target", file.target_url},
              {"alerts", std::move(alerts)},
              {"crc32", Crc32(alerts_text)}};
  std::string text = DumpCompact(doc);
  text += '\n';

  return WriteFileDurably(path, text);
}

Expected<QueueFile> ReadQueueFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{Errno("open", path)};
  std::stringstream ss;
  ss << in.rdbuf();
  Json doc = Json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Error{path + ": not valid JSON"};
  auto shape_error = [&](const std::string& what) { return Error{path + ": " + what}; };
  if (!doc.is_object() || doc.value("format", "") != "gpuwarden-notify-queue") {
    return shape_error("not a gpuwarden notification queue file");
  }
  if (!doc.contains("version") || doc["version"] != 1) return shape_error("unknown version");
  if (!doc.contains("alerts") || !doc["alerts"].is_array()) return shape_error("no alerts array");
  if (!doc.contains("crc32") || !doc["crc32"].is_number_unsigned()) {
    return shape_error("no checksum");
  }
  if (doc["crc32"].get<uint32_t>() != Crc32(DumpCompact(doc["alerts"]))) {
    return shape_error("checksum mismatch");
  }
  QueueFile file;
  file.kind = doc.value("kind", "");
  file.target_url = doc.value("target", "");
  for (const Json& a : doc["alerts"]) {
    Alert alert;
    if (!a.is_object() || !a.contains("labels") || !JsonToPairs(a["labels"], &alert.labels) ||
        !JsonToPairs(a.value("annotations", Json::object()), &alert.annotations)) {
      return shape_error("malformed alert");
    }
    Json starts = a.value("startsAt", Json(0));
    Json ends = a.value("endsAt", Json(0));
    Json url = a.value("generatorURL", Json(""));
    if (!starts.is_number_integer() || !ends.is_number_integer() || !url.is_string()) {
      return shape_error("malformed alert");
    }
    alert.starts_at_ms = starts.get<int64_t>();
    alert.ends_at_ms = ends.get<int64_t>();
    alert.generator_url = url.get<std::string>();
    file.alerts.push_back(std::move(alert));
  }
  return file;
}

}  // namespace gw::notify
