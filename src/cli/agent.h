// cli/agent.h — where the read commands (query, jobs, diagnose, report, tsdb export) get their
// data: a running agent (--url, or the GPUWARDEN_URL environment variable) or a data directory
// (--data-dir, or the configuration's storage.path), and what they say when neither is there.
//
//   std::string url = AgentUrl(flag_url, data_dir_given);   // "" = read the data directory
//   if (url.empty() && !DataDirPresent(config.storage.path, "query")) return 1;   // said why
//   auto reply = GetFromAgent(url + "/api/v1/query?query=up", 30);
//   if (!reply.ok()) Fail(reply.error().message);   // "GET http://…: connection refused (…)"
//
// A read command never creates a data directory.
#ifndef GPUWARDEN_CLI_AGENT_H_
#define GPUWARDEN_CLI_AGENT_H_

#include <string>

#include "base/error.h"
#include "http/client.h"

namespace gw::cli {

// The environment variable that names the agent when no --url is given.
inline constexpr const char* kUrlEnvironmentVariable = "GPUWARDEN_URL";

// --url when given; else, unless a data directory or configuration file was named on the command
// line (`local_given`), $GPUWARDEN_URL; else "" (read the data directory).
std::string AgentUrl(const std::string& flag_url, bool local_given);

// True when `path` is a directory. Otherwise prints (stderr) where the command looked and how to
// point it at an agent or a data directory, and returns false: `command` reads, never creates.
bool DataDirPresent(const std::string& path, const std::string& command);

// http::GetUrl, with a failure said in words: the full URL and why no reply came ("connection
// refused: nothing listens on localhost:9999", "cannot resolve host 'nohost'", "timed out after
// 10 s", "TLS handshake failed").
Expected<http::ClientReply> GetFromAgent(const std::string& url, double timeout_s);

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_AGENT_H_
