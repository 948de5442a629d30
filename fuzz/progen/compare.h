// Comparing what two engines printed: the same tokens (brackets, commas,
// words), numbers equal within a tolerance for the element type.
#pragma once

#include <string>

namespace dccc::progen {

struct Tolerance {
  double rel = 0;
  double abs = 0;
};

/// The tolerance for programs of element type `elem` (f16 bf16 f32 f64 i32 i64).
Tolerance tolerance_for(const std::string& elem);

/// Whether `a` and `b` print the same values; whitespace is ignored (a
/// ragged tensor's line breaks), and `nan` equals `-nan`. On a difference,
/// `why` says where.
bool same_output(const std::string& a, const std::string& b, Tolerance tol, std::string* why);

}  // namespace dccc::progen
