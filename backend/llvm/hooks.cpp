#include "backend/llvm/hooks.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>

extern "C" {
void dccc_print_text(const char* text) { std::fputs(text, stdout); }
// The sign of a NaN is not meaningful; print it as `nan` as the interpreter does.
void dccc_print_f32(float v) {
  if (std::isnan(v)) std::fputs("nan", stdout);
  else fmt::print("{}", v);
}
void dccc_print_f64(double v) {
  if (std::isnan(v)) std::fputs("nan", stdout);
  else fmt::print("{}", v);
}
void dccc_print_i64(int64_t v) { fmt::print("{}", v); }
void dccc_print_bool(int8_t v) { std::fputs(v ? "true" : "false", stdout); }
}
