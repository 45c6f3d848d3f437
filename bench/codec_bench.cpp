// codec_bench: the sample codec alone (tsdb/chunk.h and the block container of tsdb/block.h) on
// OpenMetrics files — per family, the bytes per sample of a chunk, of a chunk with Gorilla XOR
// values only, and of a block (what the store writes: chunk or byte planes, zstd'd), plus the
// encode and decode rates of blocks (process CPU time, not wall time). Blocks hold up to
// `--block-hours` (default 6) of a series.
//   codec_bench FILE... [--block-hours H] [--families]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tsdb/block.h"
#include "tsdb/chunk.h"

namespace {

using gw::tsdb::Sample;

struct Totals {
  size_t samples = 0, chunk = 0, xor_chunk = 0, block = 0;
  double encode_s = 0, decode_s = 0, chunk_decode_s = 0;
  void Add(const Totals& o) {
    samples += o.samples, chunk += o.chunk, xor_chunk += o.xor_chunk, block += o.block;
    encode_s += o.encode_s, decode_s += o.decode_s, chunk_decode_s += o.chunk_decode_s;
  }
};

// CPU time of this process: steadier than wall time on a shared machine (one thread here).
double CpuNow() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void Print(const std::string& name, const Totals& t) {
  const double n = static_cast<double>(t.samples);
  std::printf(
      "%-36s %9zu  chunk %6.3f  xor %6.3f  block %6.3f B/sample  block enc %5.1f dec %5.1f"
      "  chunk dec %5.1f M/s\n",
      name.c_str(), t.samples, static_cast<double>(t.chunk) / n,
      static_cast<double>(t.xor_chunk) / n, static_cast<double>(t.block) / n, n / t.encode_s / 1e6,
      n / t.decode_s / 1e6, n / t.chunk_decode_s / 1e6);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files;
  double block_hours = 6;
  bool per_family = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--block-hours") && i + 1 < argc)
      block_hours = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--families"))
      per_family = true;
    else
      files.push_back(argv[i]);
  }
  if (files.empty() || !(block_hours > 0)) {
    std::fprintf(stderr, "usage: codec_bench FILE... [--block-hours H] [--families]\n");
    return 2;
  }
  const auto block_ms = static_cast<int64_t>(block_hours * 3600e3);
  for (const std::string& file : files) {
    std::ifstream in(file);
    if (!in) {
      std::fprintf(stderr, "cannot read %s\n", file.c_str());
      return 1;
    }
    // series text -> samples; family -> its series
    std::map<std::string, std::vector<Sample>> series;
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      const size_t ts_at = line.rfind(' ');
      const size_t v_at = line.rfind(' ', ts_at - 1);
      if (ts_at == std::string::npos || v_at == std::string::npos) continue;
      const double v = std::strtod(line.c_str() + v_at + 1, nullptr);
      const auto t_ms =
          static_cast<int64_t>(std::llround(std::strtod(line.c_str() + ts_at + 1, nullptr) * 1000));
      series[line.substr(0, v_at)].push_back({t_ms, v});
    }
    std::map<std::string, Totals> families;
    Totals all;
    std::vector<Sample> decoded;
    for (const auto& [key, samples] : series) {
      Totals t;
      for (size_t i = 0; i < samples.size();) {
        const int64_t window = samples[i].t_ms / block_ms;
        size_t j = i;
        while (j < samples.size() && samples[j].t_ms / block_ms == window) ++j;
        const std::span<const Sample> part(samples.data() + i, j - i);
        for (size_t c = 0; c < part.size(); c += gw::tsdb::kMaxChunkSamples) {
          const auto sub = part.subspan(c, std::min(gw::tsdb::kMaxChunkSamples, part.size() - c));
          const std::string chunk = gw::tsdb::EncodeChunk(sub);
          t.chunk += chunk.size();
          decoded.clear();
          const double c0 = CpuNow();
          if (!gw::tsdb::DecodeChunk(chunk, &decoded).ok()) {
            std::fprintf(stderr, "%s: chunk does not decode\n", key.c_str());
            return 1;
          }
          t.chunk_decode_s += CpuNow() - c0;
          t.xor_chunk += gw::tsdb::EncodeXorChunk(sub).size();
        }
        double t0 = CpuNow();
        const std::string block = gw::tsdb::EncodeBlock(part);
        t.encode_s += CpuNow() - t0;
        t.block += block.size();
        decoded.clear();
        t0 = CpuNow();
        if (!gw::tsdb::DecodeBlock(block, &decoded).ok() || decoded.size() != part.size()) {
          std::fprintf(stderr, "%s: block does not decode\n", key.c_str());
          return 1;
        }
        t.decode_s += CpuNow() - t0;
        if (std::memcmp(decoded.data(), part.data(), part.size() * sizeof(Sample)) != 0) {
          std::fprintf(stderr, "%s: block does not round-trip\n", key.c_str());
          return 1;
        }
        t.samples += part.size();
        i = j;
      }
      families[key.substr(0, key.find('{'))].Add(t);
      all.Add(t);
    }
    if (per_family)
      for (const auto& [name, t] : families) Print("  " + name, t);
    Print(file.substr(file.rfind('/') + 1), all);
  }
  return 0;
}
