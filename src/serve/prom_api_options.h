// serve/prom_api_options.h — what the running agent hands the Prometheus API's metadata, targets,
// targets/metadata and status endpoints (http/prom_api.h): the /metrics page's HELP/TYPE/UNIT, the
// scrape targets with their health, the serve flags' effective values, the effective configuration
// and the store's series index.
#ifndef GPUWARDEN_SERVE_PROM_API_OPTIONS_H_
#define GPUWARDEN_SERVE_PROM_API_OPTIONS_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "http/prom_api.h"
#include "scrape/scraper.h"
#include "tsdb/db.h"

namespace gw::serve {

// The flags of `gpuwarden serve` (names without dashes) with the effective value of each: the flag
// if given, else the file's or the default (Prometheus' /api/v1/status/flags lists every flag).
std::vector<std::pair<std::string, std::string>> ServeFlags(const config::Config& config);

// The labels of a scrape target's series and of its entries in /api/v1/targets and
// /api/v1/targets/metadata.
tsdb::Labels TargetLabels(const scrape::TargetConfig& t);

// Each configured target of `scraper` (in `targets`' order) as /api/v1/targets lists it.
std::vector<http::TargetInfo> ScrapeTargets(const std::vector<scrape::TargetConfig>& targets,
                                            const scrape::Scraper& scraper);

// Fills `api`'s status parts. `page(format)` renders the /metrics page (text 0.0.4 or
// OpenMetrics); `scraper` and `db` may be null; all must outlive the server.
void SetStatusOptions(const config::Config& config, const scrape::Scraper* scraper,
                      std::function<std::string(bool openmetrics)> page, const tsdb::DB* db,
                      http::PromApiOptions* api);

}  // namespace gw::serve

#endif  // GPUWARDEN_SERVE_PROM_API_OPTIONS_H_
