// A fake /proc tree for the task layer's tests: <root>/<pid>/{stat,status,cgroup,environ}, as the
// attributor reads them (jobs/attribution.h), with `start` as the start time (stat field 22) and
// `uid` as the owner (status' Uid line).
//
//   FakeProcess(root.path(), 100, 5000, "0::/user.slice\n", {"GPUWARDEN_JOB=eval"});
#ifndef GPUWARDEN_TESTS_SUPPORT_FAKE_PROC_H_
#define GPUWARDEN_TESTS_SUPPORT_FAKE_PROC_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "support/process.h"

namespace gw::testing {

inline void FakeProcess(const std::string& root, unsigned pid, std::uint64_t start,
                        const std::string& cgroup, const std::vector<std::string>& env,
                        unsigned uid = 0) {
  const std::string dir = root + "/" + std::to_string(pid);
  std::filesystem::create_directories(dir);
  WriteFile(dir + "/stat", std::to_string(pid) +
                               " (python3) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 " +
                               std::to_string(start) + " 1000 10 0\n");
  const std::string id = std::to_string(uid);
  WriteFile(dir + "/status", "Name:\tpython3\nUid:\t" + id + "\t" + id + "\t0\t0\n");
  WriteFile(dir + "/cgroup", cgroup);
  std::string text;
  for (const std::string& e : env) text += e + '\0';
  WriteFile(dir + "/environ", text);
}

}  // namespace gw::testing

#endif  // GPUWARDEN_TESTS_SUPPORT_FAKE_PROC_H_
