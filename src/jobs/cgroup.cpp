#include "jobs/cgroup.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace gw::jobs {
namespace {

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool AllHex(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isxdigit(static_cast<unsigned char>(c));
  });
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::vector<std::string_view> Components(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    const std::size_t slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    if (!part.empty()) parts.push_back(part);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return parts;
}

// A pod UID is 36 characters: 8-4-4-4-12 hex with '-' (cgroupfs) or '_' (systemd slices).
bool TakePodUid(std::string_view text, std::string* uid) {
  if (text.size() < 36) return false;
  std::string out(text.substr(0, 36));
  for (std::size_t i = 0; i < out.size(); ++i) {
    const bool dash_position = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash_position) {
      if (out[i] != '-' && out[i] != '_') return false;
      out[i] = '-';
    } else if (!std::isxdigit(static_cast<unsigned char>(out[i]))) {
      return false;
    }
  }
  *uid = out;
  return true;
}

struct ContainerPattern {
  std::string_view prefix;
  std::string_view runtime;
};

// systemd scope names: "<prefix><hex>.scope".
constexpr ContainerPattern kScopePatterns[] = {
    {"docker-", "docker"}, {"cri-containerd-", "containerd"}, {"crio-", "cri-o"},
    {"libpod-", "podman"}, {"containerd-", "containerd"},
};
// cgroupfs parents: "/<parent>/<hex>".
constexpr ContainerPattern kParentPatterns[] = {
    {"docker", "docker"},        {"containerd", "containerd"}, {"crio", "cri-o"},
    {"libpod_parent", "podman"}, {"machine.slice", "podman"},
};

void ParsePath(std::string_view path, CgroupIdentity* id) {
  const std::vector<std::string_view> parts = Components(path);
  bool under_kubepods = false;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string_view part = parts[i];
    if (id->slurm_job_id.empty() && StartsWith(part, "job_") && AllDigits(part.substr(4))) {
      // Slurm: the parent is slurmstepd.scope (v2) or uid_<n>/slurm (v1).
      const std::string_view parent = i > 0 ? parts[i - 1] : "";
      if (EndsWith(parent, "slurmstepd.scope") || StartsWith(parent, "uid_") || parent == "slurm") {
        id->slurm_job_id = std::string(part.substr(4));
        if (i + 1 < parts.size() && StartsWith(parts[i + 1], "step_"))
          id->slurm_step = std::string(parts[i + 1].substr(5));
      }
    }
    if (StartsWith(part, "kubepods")) under_kubepods = true;
    if (under_kubepods && id->pod_uid.empty()) {
      const std::size_t pod = part.rfind("pod");  // "kubepods-...-pod<uid>"
      if (pod != std::string_view::npos && pod + 3 < part.size()) {
        const std::string_view rest = part.substr(pod + 3);
        if (!TakePodUid(rest, &id->pod_uid)) id->pod_uid.clear();
      }
    }
    if (id->container_id.empty()) {
      std::string_view stem = part;
      const bool scope = EndsWith(stem, ".scope");
      if (scope) stem.remove_suffix(6);
      for (const ContainerPattern& p : kScopePatterns) {
        if (scope && StartsWith(stem, p.prefix) && AllHex(stem.substr(p.prefix.size())) &&
            stem.size() - p.prefix.size() >= 12) {
          id->container_id = std::string(stem.substr(p.prefix.size()));
          id->container_runtime = std::string(p.runtime);
          break;
        }
      }
      if (id->container_id.empty() && !scope && part.size() == 64 && AllHex(part) && i > 0) {
        id->container_id = std::string(part);
        for (const ContainerPattern& p : kParentPatterns)
          if (parts[i - 1] == p.prefix) id->container_runtime = std::string(p.runtime);
      }
    }
  }
}

}  // namespace

CgroupIdentity ParseCgroup(std::string_view text) {
  CgroupIdentity id;
  while (!text.empty()) {
    const std::size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    // "hierarchy-id:controllers:path"; the path may itself contain ':' (never in our patterns).
    const std::size_t first = line.find(':');
    const std::size_t second =
        first == std::string_view::npos ? std::string_view::npos : line.find(':', first + 1);
    if (second != std::string_view::npos) ParsePath(line.substr(second + 1), &id);
    if (newline == std::string_view::npos) break;
    text.remove_prefix(newline + 1);
  }
  return id;
}

}  // namespace gw::jobs
