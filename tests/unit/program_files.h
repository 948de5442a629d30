// The .toy programs that unit tests sweep (the examples, tests/lang/run),
// listed in one place: sorted by path, so that runs repeat, and in a build
// with AddressSanitizer (the asan preset) every other one of that order.
// The default preset checks every program's results; under the sanitizers
// a sweep looks for memory errors in the passes it runs, each of which half
// the programs still reach, at half the CI time.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace dccc::test_files {

/// True in a build with AddressSanitizer (GCC and Clang define
/// __SANITIZE_ADDRESS__ under -fsanitize=address).
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

/// Every *.toy file directly in `dirs`, sorted by path; under
/// AddressSanitizer the first, third, fifth ... of that list.
inline std::vector<std::filesystem::path> toy_files(const std::vector<std::string>& dirs) {
  std::vector<std::filesystem::path> all;
  for (const auto& dir : dirs)
    for (const auto& entry : std::filesystem::directory_iterator(dir))
      if (entry.path().extension() == ".toy") all.push_back(entry.path());
  std::sort(all.begin(), all.end());
  if (!kSanitized) return all;
  std::vector<std::filesystem::path> half;
  for (size_t i = 0; i < all.size(); i += 2) half.push_back(all[i]);
  return half;
}

/// `n` in the default preset, about half of it under AddressSanitizer: the
/// least count a sweep over toy_files must reach.
inline constexpr int at_least(int n) { return kSanitized ? n / 2 : n; }

}  // namespace dccc::test_files
