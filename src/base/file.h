// base/file.h — small files written so that a crash never leaves a torn one.
//
//   Status s = WriteFileDurably(dir + "/state.json", text);
//
// WriteFileDurably writes PATH.tmp, fsyncs it, renames it over PATH and fsyncs the directory:
// after a crash (kill -9, power loss) PATH holds either the old or the new contents, whole. On an
// error the message names the file and the system call; PATH is unchanged.
#ifndef GPUWARDEN_BASE_FILE_H_
#define GPUWARDEN_BASE_FILE_H_

#include <string>
#include <string_view>

#include "base/error.h"

namespace gw {

Status WriteFileDurably(const std::string& path, std::string_view text);

}  // namespace gw

#endif  // GPUWARDEN_BASE_FILE_H_
