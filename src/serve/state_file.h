// serve/state_file.h — the files in which serve's services keep their running figures across a
// restart (governance/usage.json, governance/services.json): read at start, set aside when
// unreadable, replaced atomically and durably while running.
//
//   std::optional<std::string> text = ReadStateFile(path);     // nullopt: no file (first start)
//   if (text && !Restore(*text).ok()) SetAsideStateFile(path, "governance", why, "...", log);
//   WriteStateFile(path, Checkpoint(), "governance", &failed, log);   // once a minute, at stop
//
// Threading: no state of their own; callers serialise writes to one path.
#ifndef GPUWARDEN_SERVE_STATE_FILE_H_
#define GPUWARDEN_SERVE_STATE_FILE_H_

#include <optional>
#include <string>
#include <string_view>

#include "base/log.h"

namespace gw::serve {

// The whole file; nullopt when it cannot be opened (absent: the first start).
std::optional<std::string> ReadStateFile(const std::string& path);

// An unreadable state file: renamed to PATH.corrupt (kept for a person to look at) and said in
// the log as "WHO: cannot read PATH: WHY; CONSEQUENCE (the file is kept as PATH.corrupt)".
void SetAsideStateFile(const std::string& path, const std::string& who, const std::string& why,
                       const std::string& consequence, Logger* log);

// base/file.h WriteFileDurably, creating the folder; a failure is logged once until a write
// succeeds again (*failed carries that state between calls).
void WriteStateFile(const std::string& path, std::string_view text, const std::string& who,
                    bool* failed, Logger* log);

}  // namespace gw::serve

#endif  // GPUWARDEN_SERVE_STATE_FILE_H_
