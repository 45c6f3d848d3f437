#include "serve/prom_api_options.h"

#include <unistd.h>

#include <chrono>

#include "base/error.h"
#include "config/config_yaml.h"
#include "promql/parser.h"

namespace gw::serve {

namespace {

std::string Bool(bool b) {
  return b ? "true" : "false";
}

std::string Number(double v) {
  std::string text = std::to_string(v);
  while (!text.empty() && text.back() == '0') text.pop_back();
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> ServeFlags(const config::Config& c) {
  return {
      {"listen", c.listen},
      {"web.config.file", c.web_config_file},
      {"web.enable-lifecycle", Bool(c.web_enable_lifecycle)},
      {"data-dir", c.storage.path},
      {"nvml-lib", c.nvml_library},
      {"simulate", c.simulate.scenario},
      {"sim-clock", c.simulate.clock},
      {"sim-speed", Number(c.simulate.speed)},
      {"sim-start", Number(c.simulate.start_unix)},
      {"interval", FormatDuration(c.collect.fast_interval_s)},
      {"slow-interval", FormatDuration(c.collect.slow_interval_s)},
      {"memory-peak-interval", FormatDuration(c.collect.memory_peak_interval_s)},
      {"call-timeout", FormatDuration(c.collect.call_timeout_s)},
      {"per-process-metrics", Bool(c.collect.per_process_metrics)},
      {"log-level", c.log_level},
      {"query.timeout", FormatDuration(c.query.timeout_s)},
      {"query.max-samples", std::to_string(c.query.max_samples)},
      {"query.max-concurrency", std::to_string(c.query.max_concurrency)},
      {"query.max-queued", std::to_string(c.query.max_queued)},
  };
}

// The labels the agent adds to a scrape target's series: what /api/v1/targets and
// /api/v1/targets/metadata name the target by.
tsdb::Labels TargetLabels(const scrape::TargetConfig& t) {
  return {{"target", t.name}};
}

std::vector<http::TargetInfo> ScrapeTargets(const std::vector<scrape::TargetConfig>& targets,
                                            const scrape::Scraper& scraper) {
  const std::vector<scrape::TargetHealth> health = scraper.Health();
  std::vector<http::TargetInfo> out;
  for (size_t i = 0; i < targets.size() && i < health.size(); ++i) {
    const scrape::TargetConfig& t = targets[i];
    const scrape::TargetHealth& h = health[i];
    http::TargetInfo info;
    info.pool = t.name;
    info.url = t.url;
    info.labels = TargetLabels(t);
    info.health = !h.scraped ? "unknown" : h.up ? "up" : "down";
    info.last_error = h.last_error;
    info.last_scrape_ms = h.last_scrape_ms;
    info.last_scrape_duration_s = h.duration_s;
    info.interval_s = t.interval_s;
    info.timeout_s = t.effective_timeout_s();
    out.push_back(std::move(info));
  }
  return out;
}

void SetStatusOptions(const config::Config& config, const scrape::Scraper* scraper,
                      std::function<std::string(bool openmetrics)> page, const tsdb::DB* db,
                      http::PromApiOptions* api) {
  if (scraper != nullptr) {
    api->targets = [targets = config.scrape.targets, scraper] {
      return ScrapeTargets(targets, *scraper);
    };
    // Each target's metrics as its last page described them (read as Prometheus reads a page).
    api->target_metadata = [targets = config.scrape.targets, scraper] {
      std::vector<http::TargetMetadata> out;
      const std::vector<std::string> pages = scraper->Descriptors();
      for (size_t i = 0; i < targets.size() && i < pages.size(); ++i) {
        const tsdb::Labels labels = TargetLabels(targets[i]);
        for (http::MetricMetadata& m : http::MetadataFromExposition(pages[i], pages[i]))
          out.push_back(http::TargetMetadata{labels, std::move(m)});
      }
      return out;
    };
  }
  // This agent's own families, then what each scrape target's last page said of its own (read as
  // Prometheus reads a scraped page: names and units as that page writes them).
  api->metadata = [page = std::move(page), scraper] {
    std::vector<http::MetricMetadata> out;
    if (page) out = http::MetadataFromExposition(page(false), page(true));
    if (scraper != nullptr)
      for (const std::string& descriptors : scraper->Descriptors()) {
        std::vector<http::MetricMetadata> more =
            http::MetadataFromExposition(descriptors, descriptors);
        out.insert(out.end(), std::make_move_iterator(more.begin()),
                   std::make_move_iterator(more.end()));
      }
    return out;
  };
  if (db != nullptr) api->head = &db->head();
  const int64_t start_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  char cwd[4096] = {};
  if (getcwd(cwd, sizeof cwd - 1) == nullptr) cwd[0] = '\0';
  // Prometheus counts the WAL corruptions found when the store opened; read once, here, so that
  // no request touches the data directory.
  const uint64_t corruptions = db != nullptr ? db->stats().wal_corruptions : 0;
  api->runtime = [start_ms, cwd = std::string(cwd), retention = config.storage.retention_s,
                  corruptions] {
    http::RuntimeInfo info;
    info.start_time_ms = start_ms;
    info.cwd = cwd;
    info.last_config_time_ms = start_ms;  // the configuration is read once, at start
    info.storage_retention = promql::FormatPromDuration(static_cast<int64_t>(retention * 1000));
    info.corruption_count = corruptions;
    return info;
  };
  api->flags = ServeFlags(config);
  api->config_yaml = config::EffectiveYaml(config);
}

}  // namespace gw::serve
