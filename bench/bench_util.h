// Helpers shared by the prelude benchmarks (bench/bench_prelude.cpp and
// bench/cuda/bench_prelude_cuda.cu): wall-clock timing, medians, and one
// line of a ../shared/bench/seqlens file ("B: len len ...").
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace bench {

using Clock = std::chrono::steady_clock;

inline double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// The lengths on the line for batch size B; empty when there is none.
inline std::vector<int32_t> read_lengths(const std::string& file, int B) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    int b = 0;
    char colon = 0;
    if (!(ls >> b >> colon) || colon != ':' || b != B) continue;
    std::vector<int32_t> out;
    int32_t x;
    while (ls >> x) out.push_back(x);
    return out;
  }
  return {};
}

}  // namespace bench
