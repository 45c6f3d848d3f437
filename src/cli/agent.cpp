#include "cli/agent.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace gw::cli {

namespace {

struct HostPort {
  std::string host, port;
};

// "http://host:port/path" -> host and port (the scheme's default when none is given).
HostPort HostPortOf(const std::string& url) {
  HostPort hp;
  const size_t scheme_end = url.find("://");
  const std::string scheme = scheme_end == std::string::npos ? "" : url.substr(0, scheme_end);
  std::string authority = url.substr(scheme_end == std::string::npos ? 0 : scheme_end + 3);
  authority = authority.substr(0, authority.find_first_of("/?#"));
  if (const size_t at = authority.rfind('@'); at != std::string::npos)
    authority = authority.substr(at + 1);
  if (!authority.empty() && authority[0] == '[') {  // [::1]:9966
    const size_t close = authority.find(']');
    hp.host = authority.substr(1, close == std::string::npos ? std::string::npos : close - 1);
    if (close != std::string::npos && close + 1 < authority.size() && authority[close + 1] == ':')
      hp.port = authority.substr(close + 2);
  } else if (const size_t colon = authority.rfind(':'); colon != std::string::npos) {
    hp.host = authority.substr(0, colon);
    hp.port = authority.substr(colon + 1);
  } else {
    hp.host = authority;
  }
  if (hp.port.empty()) hp.port = scheme == "https" ? "443" : "80";
  return hp;
}

// Why no TCP connection to host:port can be made now, in words; "" when one can.
std::string ConnectProblem(const HostPort& hp, int timeout_ms) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(hp.host.c_str(), hp.port.c_str(), &hints, &found); rc != 0)
    return "cannot resolve host '" + hp.host + "' (DNS: " + gai_strerror(rc) + ")";
  std::string problem;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    int err = 0;
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        pollfd p{fd, POLLOUT, 0};
        if (poll(&p, 1, timeout_ms) <= 0) {
          err = ETIMEDOUT;
        } else {
          socklen_t len = sizeof err;
          getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        }
      }
    }
    close(fd);
    if (err == 0) {
      freeaddrinfo(found);
      return "";
    }
    const std::string where = hp.host + ":" + hp.port;
    if (err == ECONNREFUSED) {
      problem = "connection refused: nothing listens on " + where +
                " (is `gpuwarden serve` running there, on that port?)";
    } else if (err == ETIMEDOUT) {
      problem = "connection timed out: no answer from " + where + " within " +
                std::to_string(timeout_ms / 1000) + " s (host down, or a firewall drops it)";
    } else if (problem.empty()) {
      problem = std::string(std::strerror(err)) + " (" + where + ")";
    }
  }
  freeaddrinfo(found);
  return problem.empty() ? "cannot connect to " + hp.host + ":" + hp.port : problem;
}

}  // namespace

std::string AgentUrl(const std::string& flag_url, bool local_given) {
  if (!flag_url.empty() || local_given) return flag_url;
  const char* env = std::getenv(kUrlEnvironmentVariable);
  return env == nullptr ? "" : std::string(env);
}

bool DataDirPresent(const std::string& path, const std::string& command) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return true;
  const std::string absolute = std::filesystem::absolute(path, ec).lexically_normal().string();
  std::fprintf(
      stderr,
      "gpuwarden: %s: no data directory at %s%s, and no agent named.\n"
      "  Ask a running agent: --url http://HOST:9966 (or set %s=http://HOST:9966),\n"
      "  or read an agent's data directory: --data-dir DIR (its storage.path).\n",
      command.c_str(), absolute.c_str(),
      std::filesystem::path(path).is_relative() ? " (relative to the working directory)" : "",
      kUrlEnvironmentVariable);
  return false;
}

Expected<http::ClientReply> GetFromAgent(const std::string& url, double timeout_s) {
  auto reply = http::GetUrl(url, timeout_s);
  if (reply.ok()) return reply;
  const std::string& message = reply.error().message;
  // http::GetUrl says "GET <base>: <httplib's error name>"; anything else (a malformed URL) is
  // already a sentence.
  if (message.rfind("GET ", 0) != 0) return Error{message};
  const std::string code = message.substr(message.rfind(": ") + 2);
  std::string why;
  if (code == "Connection") {
    why = ConnectProblem(HostPortOf(url), 5000);
    if (why.empty()) why = "the connection failed (it connects now: try again)";
  } else if (code == "ConnectionTimeout") {
    why = "connection timed out: no answer within 10 s (host down, or a firewall drops it)";
  } else if (code == "Read") {
    why = "no reply: the connection closed or nothing came within " +
          std::to_string(static_cast<int>(timeout_s)) + " s";
  } else if (code == "Write") {
    why = "the request could not be sent (the connection closed)";
  } else if (code == "SSLConnection") {
    why = "TLS handshake failed (does the agent serve https? try http://)";
  } else if (code == "SSLServerVerification") {
    why = "the server's TLS certificate is not trusted by this system";
  } else if (code == "SSLLoadingCerts") {
    why = "cannot load this system's CA certificates";
  } else {
    why = code;
  }
  return Error{"GET " + url + ": " + why};
}

}  // namespace gw::cli
