// Slurm host lists (jobs/slurm_hostlist.h) as squeue prints them, against host names: the input is
// "LIST\nHOST" (no newline: the whole input is the list, the host "gpu01"). Any input must return
// without reading outside the strings; a list always names each of its plain items.
#include "jobs/slurm_hostlist.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = gw::fuzz::AsText(data, size);
  const size_t newline = text.find('\n');
  const std::string_view list = text.substr(0, newline);
  const std::string_view host =
      newline == std::string_view::npos ? std::string_view("gpu01") : text.substr(newline + 1);
  (void)gw::jobs::HostListContains(list, host);
  // A list without brackets names each of its comma-separated items.
  if (list.find_first_of("[]") == std::string_view::npos) {
    size_t begin = 0;
    while (begin <= list.size()) {
      size_t end = list.find(',', begin);
      if (end == std::string_view::npos) end = list.size();
      const std::string_view item = list.substr(begin, end - begin);
      if (!item.empty() && !gw::jobs::HostListContains(list, item))
        gw::fuzz::Fail("a plain item is not named by its list: " + std::string(item));
      begin = end + 1;
    }
  }
  return 0;
}
