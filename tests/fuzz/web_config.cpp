// The Prometheus web configuration (--web.config.file): TLS, headers, basic-auth users.
#include "http/web_config.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto config = gw::http::ParseWebConfig(gw::fuzz::AsText(data, size), "/etc/gw/web.yml");
  if (!config.ok() && config.error().message.rfind("/etc/gw/web.yml", 0) != 0) {
    gw::fuzz::Fail("web config error without the file: " + config.error().message);
  }
  return 0;
}
