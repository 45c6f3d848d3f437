// base/build_info.h — what this binary was built from: version, git revision, branch, the commit's
// date, who built it and with which compiler.
//
// The values come from one generated file (build/gen/build_info.cpp, written by
// cmake/build_info.cmake at build time), so only that file is recompiled when the checkout moves
// to another commit. The date is the commit's date, not the build's: the same sources give the
// same object, and ccache stays effective. Outside a git checkout revision, branch and date read
// "unknown".
//
// Used by `gpuwarden --version`, /api/v1/status/buildinfo (in Prometheus' field names) and the
// agent's log line at start.
#ifndef GPUWARDEN_BASE_BUILD_INFO_H_
#define GPUWARDEN_BASE_BUILD_INFO_H_

#include <string_view>

namespace gw {

struct BuildInfo {
  std::string_view version;  // the project's version ("0.1.0")
  // the full commit hash, "<hash>-dirty" when tracked files had uncommitted changes at build
  // time, "unknown" outside a checkout
  std::string_view revision;
  std::string_view branch;      // "main", "HEAD" when detached, "unknown" outside a checkout
  std::string_view build_user;  // "user@host" of the build
  std::string_view build_date;  // the commit's date, as Prometheus writes it: 20260604-00:58:54
  std::string_view compiler;    // "GNU 12.2.0" (Prometheus' goVersion slot)
};

const BuildInfo& GetBuildInfo();

}  // namespace gw

#endif  // GPUWARDEN_BASE_BUILD_INFO_H_
