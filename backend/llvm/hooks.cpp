#include "backend/llvm/hooks.h"

#include <fmt/format.h>

#include <cstdio>

extern "C" {
void dccc_print_text(const char* text) { std::fputs(text, stdout); }
void dccc_print_f32(float v) { fmt::print("{}", v); }
void dccc_print_f64(double v) { fmt::print("{}", v); }
void dccc_print_i64(int64_t v) { fmt::print("{}", v); }
void dccc_print_bool(int8_t v) { std::fputs(v ? "true" : "false", stdout); }
}
