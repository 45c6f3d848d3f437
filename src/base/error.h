// Errors as values for everything that is not an NVML call (NVML calls use nvml::Result).
//
// `Expected<T>` holds either a T or an `Error` with a message meant for a person: it names the
// file, line or endpoint at fault and what is wrong ("gpuwarden.yaml:12: interval: expected a
// duration such as 1s or 500ms, got 'fast'"). Nothing in gpuwarden throws across module APIs.
#ifndef GPUWARDEN_BASE_ERROR_H_
#define GPUWARDEN_BASE_ERROR_H_

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace gw {

struct Error {
  std::string message;
};

template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Expected(Error error) : v_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const {
    assert(!ok());
    return std::get<1>(v_);
  }

 private:
  std::variant<T, Error> v_;
};

// For operations that return nothing but can fail.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error.message)), failed_(true) {}  // NOLINT
  static Status Ok() { return Status(); }
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const std::string& message() const { return error_; }

 private:
  std::string error_;
  bool failed_ = false;
};

// Parses "1.5s", "500ms", "2m", "1h30m", "10" (seconds) into seconds; false if malformed or
// negative. The unit set is Prometheus': ms s m h d w y.
bool ParseDurationSeconds(const std::string& text, double* seconds);

// Formats seconds back as the shortest exact duration ("1s", "250ms", "1m30s").
std::string FormatDuration(double seconds);

}  // namespace gw

#endif  // GPUWARDEN_BASE_ERROR_H_
