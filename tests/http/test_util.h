// Helpers shared by the http tests: a temporary directory, files, bcrypt hashes, shell commands.
#ifndef GPUWARDEN_TESTS_HTTP_TEST_UTIL_H_
#define GPUWARDEN_TESTS_HTTP_TEST_UTIL_H_

#include <crypt.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

namespace gw::http::testutil {

// A peer that vanishes mid-response must not kill the test binary (see server.h on SIGPIPE).
[[maybe_unused]] inline const bool kSigpipeIgnored = [] {
  return signal(SIGPIPE, SIG_IGN) != SIG_ERR;
}();

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gw-http-test-XXXXXX").string();
    path_ = mkdtemp(tmpl.data()) ? tmpl : std::string();
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

  // Writes `text` to `name` in the directory and returns the full path.
  std::string Write(const std::string& name, const std::string& text) const {
    std::ofstream(File(name), std::ios::binary) << text;
    return File(name);
  }

 private:
  std::string path_;
};

// A bcrypt hash of `password`; cost 4 (the minimum) keeps tests fast.
inline std::string BcryptHash(const std::string& password, int cost = 4,
                              const char* prefix = "$2b$") {
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  if (!crypt_gensalt_rn(prefix, static_cast<unsigned long>(cost), nullptr, 0, setting,
                        sizeof(setting))) {
    ADD_FAILURE() << "crypt_gensalt_rn failed";
    return "";
  }
  crypt_data data{};
  const char* hash = crypt_rn(password.c_str(), setting, &data, sizeof(data));
  if (!hash || hash[0] == '*') {
    ADD_FAILURE() << "crypt_rn failed";
    return "";
  }
  return hash;
}

// Runs a shell command quietly; true if it exited 0.
inline bool Run(const std::string& command) {
  return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
}

// Inflates a gzip body (for checking what the server compressed).
inline std::string Gunzip(const std::string& in) {
  z_stream zs;
  std::memset(&zs, 0, sizeof(zs));
  if (inflateInit2(&zs, 15 + 16) != Z_OK) return "<inflateInit2 failed>";
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  std::string out;
  char chunk[16384];
  int rc = Z_OK;
  while (rc == Z_OK) {
    zs.next_out = reinterpret_cast<Bytef*>(chunk);
    zs.avail_out = sizeof(chunk);
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(chunk, sizeof(chunk) - zs.avail_out);
  }
  inflateEnd(&zs);
  return rc == Z_STREAM_END ? out : "<inflate failed>";
}

}  // namespace gw::http::testutil

#endif  // GPUWARDEN_TESTS_HTTP_TEST_UTIL_H_
