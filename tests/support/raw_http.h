// Test support: HTTP/1.1 over plain sockets on 127.0.0.1, byte for byte as written, with
// deadlines — for what a library client will not send (slow heads, gzip bombs, pipelining) and
// for the load tests. No gtest here: bench programs use it too.
#ifndef GPUWARDEN_TESTS_SUPPORT_RAW_HTTP_H_
#define GPUWARDEN_TESTS_SUPPORT_RAW_HTTP_H_

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <string_view>

namespace gw::testing {

using RawClock = std::chrono::steady_clock;

inline RawClock::time_point RawAfter(double seconds) {
  return RawClock::now() +
         std::chrono::duration_cast<RawClock::duration>(std::chrono::duration<double>(seconds));
}

// A connected socket to 127.0.0.1:port, or -1.
inline int RawConnect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  int yes = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
  return fd;
}

// Waits until `fd` is readable (or writable) or the deadline passes.
inline bool RawWait(int fd, short events, RawClock::time_point deadline) {
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - RawClock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, events, 0};
    int rc = poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (rc > 0) return true;
    if (rc < 0 && errno != EINTR) return false;
  }
}

// Sends all of `data` before the deadline.
inline bool RawSend(int fd, std::string_view data, RawClock::time_point deadline) {
  while (!data.empty()) {
    if (!RawWait(fd, POLLOUT, deadline)) return false;
    ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

struct RawResponse {
  int status = 0;    // 0: no (complete) response
  std::string head;  // status line and header fields
  std::string body;
  bool closed = false;  // the server closed the connection after it
  std::string Header(std::string_view lower_name) const {
    size_t pos = 0;
    while ((pos = head.find("\r\n", pos)) != std::string::npos) {
      pos += 2;
      size_t colon = head.find(':', pos);
      size_t eol = head.find("\r\n", pos);
      if (colon == std::string::npos || colon > eol) continue;
      std::string name = head.substr(pos, colon - pos);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (name == lower_name) {
        size_t v = colon + 1;
        while (v < eol && head[v] == ' ') ++v;
        return head.substr(v, eol - v);
      }
    }
    return "";
  }
};

// Reads one response (Content-Length framed, as gpuwarden sends them; without one, until the
// connection closes). `buffer` keeps bytes read past it (pipelined responses). 1xx interim
// responses are skipped.
inline RawResponse RawRead(int fd, RawClock::time_point deadline, std::string* buffer,
                           bool head_request = false) {
  RawResponse r;
  char chunk[65536];
  auto fill = [&]() {
    if (!RawWait(fd, POLLIN, deadline)) return false;
    ssize_t n = recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) {
      r.closed = true;
      return false;
    }
    buffer->append(chunk, static_cast<size_t>(n));
    return true;
  };
  while (true) {
    size_t end = buffer->find("\r\n\r\n");
    while (end == std::string::npos) {
      if (!fill()) return r;
      end = buffer->find("\r\n\r\n");
    }
    std::string head = buffer->substr(0, end);
    buffer->erase(0, end + 4);
    if (head.rfind("HTTP/1.1 1", 0) == 0) continue;  // 100 Continue
    r.head = head;
    break;
  }
  int status = std::atoi(r.head.c_str() + 9);
  std::string length = r.Header("content-length");
  if (head_request) {
    r.status = status;
    return r;
  }
  if (!length.empty()) {
    size_t want = std::strtoull(length.c_str(), nullptr, 10);
    while (buffer->size() < want) {
      if (!fill()) return r;
    }
    r.body = buffer->substr(0, want);
    buffer->erase(0, want);
  } else {
    while (fill()) {
    }
    if (!r.closed) return r;
    r.body = std::move(*buffer);
    buffer->clear();
  }
  r.status = status;
  if (r.Header("connection") == "close") {
    // Confirm: the server closes right after.
    char c;
    if (RawWait(fd, POLLIN, deadline)) r.closed = recv(fd, &c, 1, MSG_PEEK) <= 0;
  }
  return r;
}

// One request on a fresh connection: sends `request`, reads the response, closes.
inline RawResponse RawExchange(int port, std::string_view request, double timeout_s = 10) {
  const auto deadline = RawAfter(timeout_s);
  int fd = RawConnect(port);
  if (fd < 0) return {};
  RawResponse r;
  if (RawSend(fd, request, deadline)) {
    std::string buffer;
    r = RawRead(fd, deadline, &buffer, request.rfind("HEAD ", 0) == 0);
  }
  close(fd);
  return r;
}

inline std::string RawGet(std::string_view path, std::string_view extra_headers = "") {
  return "GET " + std::string(path) + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
         std::string(extra_headers) + "\r\n";
}

}  // namespace gw::testing

#endif  // GPUWARDEN_TESTS_SUPPORT_RAW_HTTP_H_
