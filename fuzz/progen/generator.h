// The random-program generator of dccc_progen: well-typed DCC programs
// (couplings with one and two levels of raggedness, triangular ranges,
// `where` constraints, element-wise and reduce statements, select, casts,
// lets and aliases, calls between functions) together with a C host that
// calls the `-o` library on the same inputs and prints what `main` prints.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dccc::progen {

/// What a generated program may contain. The `open_*` switches are
/// constructs with a known open defect (issue 21); `avoid_open()` turns
/// them off so a CI batch tests only what is supposed to work.
struct Features {
  bool half = true;            // f16 / bf16 element types
  bool open_nested = true;     // triangular-in-ragged and two-level couplings
  bool open_alias_write = true;  // writes through `let a = t;`
  bool open_c_names = true;    // parameters named after C keywords and wrapper names
  bool open_multi_call = true;   // one function inlining the same callee twice
  bool open_i32_result = true;   // an i32 scalar result (-o declares it int64_t*: open/i32_scalar_result.toy)
  bool open_i32_elem = true;     // i32 element type (the simplifier folds i32 constants to i64: open/simplify_*)
  void avoid_open() {
    open_nested = open_alias_write = open_c_names = open_multi_call = open_i32_result = open_i32_elem = false;
  }
  /// Turns one feature off by name (as in `open_used`, or "half"); false if unknown.
  bool avoid(const std::string& name) {
    bool* f = name == "nested" ? &open_nested : name == "alias_write" ? &open_alias_write
              : name == "c_names" ? &open_c_names : name == "multi_call" ? &open_multi_call
              : name == "i32_result" ? &open_i32_result : name == "i32_elem" ? &open_i32_elem
              : name == "half" ? &half : nullptr;
    if (f) *f = false;
    return f != nullptr;
  }
};

/// A place in the program text that a mutation may rewrite.
struct Site {
  size_t offset = 0;
  size_t length = 0;
  std::string replacement;
  std::string what;  // e.g. "off-by-one range", "swap indices"
};

struct Program {
  std::string toy;     // the .toy program
  std::string host_c;  // the C host for `prog.h` / `prog.so`
  std::string elem;    // element type name: f16 bf16 f32 f64 i32 i64
  std::vector<std::string> open_used;  // the open_* features this program uses
  std::vector<Site> sites;             // mutation candidates
};

/// The program of one seed; the same seed and features give the same text.
Program generate(uint64_t seed, const Features& features);

/// A mutation of `p` chosen by `seed`: one of its recorded sites, or a
/// token-level change (an index or name swapped, a number changed, a token
/// dropped). `what` says which.
std::string mutate(const Program& p, uint64_t seed, std::string* what);

}  // namespace dccc::progen
