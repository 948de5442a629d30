// Helpers shared by the IR unit tests: hand-built buffers, and the random
// length patterns (random lengths, zero-length sequences, B = 1, one long
// sequence) under which lowered programs are run.
#pragma once

#include <functional>
#include <random>
#include <string>

#include "ir/ir.h"

namespace dccc::ir::testing {

/// A buffer with `dims` dimensions, each of extent N.
inline Buffer buffer(const std::string& name, BufferKind kind, int dims) {
  auto b = std::make_shared<BufferNode>();
  b->name = name;
  b->kind = kind;
  for (int d = 0; d < dims; ++d) b->dims.push_back({make_var(name + ".d" + std::to_string(d)), build::size("N")});
  return b;
}

enum class Pattern { Random, WithZeros, Single, OneLong };

/// Lengths per pattern; data uniform in [-1, 1].
inline std::function<double(const BufferNode*, int64_t)> generator(Pattern p, std::mt19937& rng) {
  return [p, &rng](const BufferNode* b, int64_t k) -> double {
    if (is_int(b->type)) {
      switch (p) {
        case Pattern::Random: return std::uniform_int_distribution<int>(1, 6)(rng);
        case Pattern::WithZeros: return k % 2 == 0 ? 0 : std::uniform_int_distribution<int>(1, 5)(rng);
        case Pattern::Single: return std::uniform_int_distribution<int>(0, 7)(rng);
        case Pattern::OneLong: return k == 1 ? 37 : std::uniform_int_distribution<int>(0, 2)(rng);
      }
    }
    if (b->type == Scalar::Bool) return std::uniform_int_distribution<int>(0, 1)(rng);
    return std::uniform_real_distribution<double>(-1.0, 1.0)(rng);
  };
}

}  // namespace dccc::ir::testing
