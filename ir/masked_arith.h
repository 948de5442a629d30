// The two float rules of DCC's masked values (docs/language.md, "Masked
// values"), where IEEE arithmetic would give NaN:
//
//   -inf - -inf = -inf   a masked value (-inf) shifted by a masked maximum
//                        stays masked, so exp of it is 0;
//   0 / 0 = 0            a zero weight over a zero row sum is 0.
//
// With them a fully masked softmax row (every score -inf) gives 0, both as
// written (row_max = -inf, exp(s - row_max) = 0, row_sum = 0, 0 / 0 = 0) and
// in the online form ir/online_reductions.h derives. Every other operand
// pair gives IEEE's result. The reference interpreter uses these functions;
// the LLVM backend (float_op) and the CUDA backend (dcc_fsub, dcc_fdiv)
// emit the same selects.
#pragma once

#include <cmath>

namespace dccc::ir {

inline double masked_sub(double x, double y) {
  if (x == -INFINITY && y == -INFINITY) return -INFINITY;
  return x - y;
}

inline double masked_div(double x, double y) {
  if (x == 0 && y == 0) return 0;
  return x / y;
}

}  // namespace dccc::ir
