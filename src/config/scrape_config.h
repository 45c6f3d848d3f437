// config/scrape_config.h — the `scrape.targets` configuration key (application targets whose
// metrics serve scrapes into the store; scrape/scraper.h).
//
//   scrape:
//     targets:
//       - name: llm-inference            # the target="..." label; unique
//         url: http://127.0.0.1:8000/metrics
//         interval: 15s                  # default 15s
//         timeout: 5s                    # default min(10s, interval); at most interval
//         gpus: [0, 1]                   # GPU indices serving it (gpu_service_info)
//         basic_auth: {username: u, password_file: /etc/gpuwarden/pw}
//         bearer_token_file: /etc/gpuwarden/token
//         outputs: 'inference_requests_total{code=~"2.."}'   # what one output is (cost per output)
//         output_unit: request           # default "output"
//
// Errors read "FILE:LINE: scrape.targets[i].key: what is wrong".
#ifndef GPUWARDEN_CONFIG_SCRAPE_CONFIG_H_
#define GPUWARDEN_CONFIG_SCRAPE_CONFIG_H_

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "scrape/target.h"

namespace gw::config {

// Parses the list under scrape.targets from `file` (for error positions) into `out`.
Status ParseScrapeTargets(const std::string& file, const YAML::Node& node,
                          std::vector<scrape::TargetConfig>* out);

}  // namespace gw::config

#endif  // GPUWARDEN_CONFIG_SCRAPE_CONFIG_H_
