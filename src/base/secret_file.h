// base/secret_file.h — reads a credential kept in a file (basic_auth.password_file,
// bearer_token_file), the way Prometheus reads its own:
//
//   Expected<std::string> token = ReadSecretFile(target.bearer_token_file);
//   if (!token.ok()) ...  // "/etc/gw/token: cannot read: No such file or directory"
//
// The whole file is read and whitespace at both ends (space, tab, CR, LF, VT, FF) is dropped, so
// a file written by `echo` or an editor that adds a final newline works; whitespace inside the
// secret is kept. docs/configuration.md ("Secrets in files") says why this rule.
#ifndef GPUWARDEN_BASE_SECRET_FILE_H_
#define GPUWARDEN_BASE_SECRET_FILE_H_

#include <string>
#include <string_view>

#include "base/error.h"

namespace gw {

// The file's contents, trimmed as above; an Error naming the file and the reason if it cannot
// be read.
Expected<std::string> ReadSecretFile(const std::string& path);

// The trimming rule alone: `text` without leading and trailing ASCII whitespace.
std::string_view TrimSecret(std::string_view text);

}  // namespace gw

#endif  // GPUWARDEN_BASE_SECRET_FILE_H_
