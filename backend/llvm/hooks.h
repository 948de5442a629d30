// Functions generated code calls besides libdccrt: printing for `fn main()`.
// Output formats match the reference interpreter (fmt's shortest round-trip
// form; f16/bf16/f32 print as f32).
#pragma once

#include <cstdint>

extern "C" {
void dccc_print_text(const char* text);
void dccc_print_f32(float v);
void dccc_print_f64(double v);
void dccc_print_i64(int64_t v);
void dccc_print_bool(int8_t v);
}
