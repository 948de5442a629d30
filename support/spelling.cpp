#include "support/spelling.h"

#include <algorithm>

namespace dccc {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::optional<std::string> closest_name(std::string_view name, const std::vector<std::string>& candidates) {
  const size_t limit = std::min<size_t>(2, std::max<size_t>(1, name.size() / 3));
  std::optional<std::string> best;
  size_t best_distance = limit + 1;
  bool tie = false;
  for (const auto& c : candidates) {
    if (c == name) return std::nullopt;
    size_t d = edit_distance(name, c);
    if (d < best_distance) {
      best = c;
      best_distance = d;
      tie = false;
    } else if (d == best_distance && best && *best != c) {
      tie = true;
    }
  }
  if (tie || best_distance > limit) return std::nullopt;
  return best;
}

}  // namespace dccc
