// Spelling suggestions for fix-it hints: the one known name a misspelled
// name most likely meant (`seqlenn` -> `seqlen`).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dccc {

/// Levenshtein distance (insertions, deletions, substitutions).
size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate closest to `name` when the fix is certain enough to
/// suggest: at most 2 edits away and at most a third of the name's length,
/// and no other candidate as close. nullopt otherwise (or when `name` is
/// itself a candidate).
std::optional<std::string> closest_name(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace dccc
