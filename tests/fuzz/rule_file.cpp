// Prometheus rule files as `rules check`, `serve` and reloads read them: YAML, PromQL in `expr`,
// templates in labels and annotations. Every refusal must say where.
#include "rules/rule_file.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = gw::rules::ParseRuleText(gw::fuzz::AsText(data, size), "fuzz.yml");
  if (!file.ok() && file.error().message.rfind("fuzz.yml", 0) != 0) {
    gw::fuzz::Fail("rule file error without the file name: " + file.error().message);
  }
  return 0;
}
