// Test support: deterministic mutation of valid inputs, the poor man's fuzzer that runs in every
// CI build (and under ASan+UBSan). Each parser's test feeds it a valid file and checks that every
// mutant is either accepted or refused with a located error — never a crash, hang or exception.
#ifndef GPUWARDEN_TESTS_SUPPORT_MUTATE_H_
#define GPUWARDEN_TESTS_SUPPORT_MUTATE_H_

#include <random>
#include <string>
#include <vector>

namespace gw::testing {

class Mutator {
 public:
  explicit Mutator(uint32_t seed) : rng_(seed) {}

  // One to four random edits of `text`: byte flips, deletions, duplicated or swapped lines, and
  // insertions of characters YAML cares about.
  std::string Mutate(const std::string& text) {
    std::string out = text;
    int edits = 1 + static_cast<int>(rng_() % 4);
    for (int e = 0; e < edits && !out.empty(); ++e) {
      size_t at = rng_() % out.size();
      switch (rng_() % 6) {
        case 0:
          out[at] = static_cast<char>(rng_() % 256);
          break;
        case 1:
          out.erase(at, 1 + rng_() % 8);
          break;
        case 2: {
          static const char* kSpecial[] = {":",  "-", " ",  "\n", "[",  "]", "{",  "}",     "'",
                                           "\"", "#", "&a", "*a", "!!", "0", "-1", "1e309", "\t"};
          out.insert(at, kSpecial[rng_() % (sizeof kSpecial / sizeof *kSpecial)]);
          break;
        }
        case 3: {  // duplicate a line
          size_t start = out.rfind('\n', at);
          start = start == std::string::npos ? 0 : start + 1;
          size_t end = out.find('\n', at);
          if (end == std::string::npos) end = out.size();
          out.insert(start, out.substr(start, end - start) + "\n");
          break;
        }
        case 4:
          out.resize(at);  // truncate
          break;
        default: {  // swap two characters
          size_t other = rng_() % out.size();
          std::swap(out[at], out[other]);
        }
      }
    }
    return out;
  }

 private:
  std::mt19937 rng_;
};

}  // namespace gw::testing

#endif  // GPUWARDEN_TESTS_SUPPORT_MUTATE_H_
