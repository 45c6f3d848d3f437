// scrape/fetch.h — one HTTP(S) GET of a target's metrics page, connection kept between scrapes.
//
//   Fetcher f(target);                       // reads the password/token files now
//   std::string body;                        // reused across calls: no allocation once grown
//   Status s = f.Get(&body);                 // body holds the page; s says why not
//
// A reply other than 200, a connection or read error, a total time beyond the target's timeout
// or a body over kMaxBodyBytes fail with one line naming the cause ("connection refused",
// "HTTP 500", "timed out after 2s"). Not thread-safe: one caller at a time (the scrape loop).
#ifndef GPUWARDEN_SCRAPE_FETCH_H_
#define GPUWARDEN_SCRAPE_FETCH_H_

#include <cstddef>
#include <memory>
#include <string>

#include "base/error.h"
#include "scrape/target.h"

namespace gw::scrape {

class Fetcher {
 public:
  static constexpr size_t kMaxBodyBytes = 64u << 20;

  explicit Fetcher(const TargetConfig& target);
  ~Fetcher();
  Fetcher(const Fetcher&) = delete;
  Fetcher& operator=(const Fetcher&) = delete;

  // A problem found at construction (unreadable password file, malformed URL); "" if none. Get
  // fails with it until fixed by a new Fetcher.
  const std::string& setup_error() const { return setup_error_; }

  // Fetches the page into `body` (cleared first).
  Status Get(std::string* body);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string setup_error_;
};

}  // namespace gw::scrape

#endif  // GPUWARDEN_SCRAPE_FETCH_H_
