// 16-bit float conversions for the tests' inputs and references, written
// here independently of the backends' (round to nearest even; NaN stays
// NaN, f16 overflow and infinities as IEEE says).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace dccc::backend::testing {

inline uint16_t to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x40);  // quiet, never rounded to inf
  return static_cast<uint16_t>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
}
inline double from_bf16(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
/// Round to nearest even by scaling to an integer significand (no compiler
/// half type): subnormals in units of 2^-24, overflow to infinity.
inline uint16_t to_f16(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  if (std::isnan(f)) return 0x7E00;
  if (f == 0) return sign;
  if (std::isinf(f)) return static_cast<uint16_t>(sign | 0x7C00);
  int e;
  double m = std::frexp(static_cast<double>(std::fabs(f)), &e);  // |f| = m * 2^e, m in [0.5, 1)
  if (e - 1 < -14) {  // subnormal (or rounds up to the smallest normal: q = 1024 gives exp 1)
    double q = std::nearbyint(std::fabs(f) * 16777216.0);
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(q));
  }
  double q = std::nearbyint(m * 2048.0);  // 11 significant bits
  if (q == 2048.0) q = 1024.0, ++e;
  int exp = e - 1 + 15;
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7C00);
  return static_cast<uint16_t>(sign | (exp << 10) | (static_cast<uint16_t>(q) & 0x3FF));
}
inline double from_f16(uint16_t h) {
  int exp = (h >> 10) & 0x1F, frac = h & 0x3FF;
  double v = exp == 0 ? std::ldexp(frac, -24) : std::ldexp(1024 + frac, exp - 25);
  if (exp == 31) v = frac ? NAN : INFINITY;
  return (h & 0x8000) ? -v : v;
}

}  // namespace dccc::backend::testing
