// gw-default-config: writes the packaged /etc/gpuwarden/gpuwarden.yaml — every setting the agent
// reads, at its default, commented out, so the file documents the defaults of the build it ships
// with and changes nothing until a line is uncommented (docs/packaging.md).
//
//   gw-default-config OUTPUT
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "config/config.h"
#include "config/config_yaml.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: gw-default-config OUTPUT\n");
    return 2;
  }
  std::ostringstream text;
  text << "# gpuwarden configuration (docs/configuration.md; installed docs under\n"
          "# /usr/share/doc/gpuwarden/). Every line below is a default, commented out: uncomment\n"
          "# and change what this node needs, then `systemctl restart gpuwarden` (rule files:\n"
          "# `systemctl reload gpuwarden`). docs/configuration.md describes every section.\n"
          "#\n"
          "# Kept across upgrades: dpkg asks before replacing a file you changed.\n";
  std::istringstream yaml(gw::config::EffectiveYaml(gw::config::Config{}));
  for (std::string line; std::getline(yaml, line);)
    text << (line.empty() ? "#" : "# " + line) << '\n';
  std::ofstream out(argv[1], std::ios::binary | std::ios::trunc);
  out << text.str();
  out.close();
  if (!out) {
    std::fprintf(stderr, "gw-default-config: cannot write %s\n", argv[1]);
    return 1;
  }
  return 0;
}
