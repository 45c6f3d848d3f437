// gpuwarden's configuration file (--config), read from disk as `serve` reads it, then the
// cross-field checks. A refusal names the file.
#include "config/config.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static gw::fuzz::ScratchDir dir;
  static const std::string path = dir / "gpuwarden.yaml";
  gw::fuzz::WriteWhole(path, gw::fuzz::AsText(data, size));
  gw::config::Config config;
  gw::Status s = gw::config::LoadConfigFile(path, &config);
  if (!s.ok()) {
    if (s.message().rfind(path, 0) != 0)
      gw::fuzz::Fail("config error without the file: " + s.message());
    return 0;
  }
  (void)gw::config::Validate(config);
  return 0;
}
