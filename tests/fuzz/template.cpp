// The Go text/template subset of rule labels and annotations: parse (as `rules check` does) and
// expand for one alert, with a `query` function answering from a fixed result.
#include "rules/template.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = gw::fuzz::AsText(data, size);
  (void)gw::rules::CheckTemplate("__alert_Fuzz", text);

  gw::rules::TemplateData alert;
  alert.labels = {{"__name__", "gpu_temperature_celsius"}, {"gpu", "0"}, {"instance", "n1:9966"}};
  alert.external_labels = {{"cluster", "c1"}};
  alert.external_url = "http://gw.example:9966";
  alert.value = 83.5;
  gw::rules::TemplateContext context;
  context.external_url = alert.external_url;
  context.query = [](const std::string& expr) -> gw::Expected<std::vector<gw::rules::QuerySample>> {
    if (expr.empty()) return gw::Error{"empty query"};
    return std::vector<gw::rules::QuerySample>{
        {{{"gpu", "1"}, {"instance", "n2:9966"}}, 91.25},
        {{{"gpu", "0"}, {"instance", "n1:9966"}}, -0.5},
    };
  };
  (void)gw::rules::ExpandAlertTemplate("__alert_Fuzz", text, alert, context);
  return 0;
}
