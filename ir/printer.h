// Text form of the vloop IR (`--emit=vloop`).
//
// Variables print by name; distinct variables that share a name get a
// numeric suffix (`i.1`) so that the text names every object uniquely.
// Loops whose extent mentions an outer loop variable are marked `// vloop`.
#pragma once

#include <memory>
#include <string>

#include "ir/ir.h"

namespace dccc::ir {

std::string print(const Module& m);
std::string print(const Func& f);

/// Expressions and statements of one function in the text form print(f)
/// gives them, with the same names (`i.1`): for printers of other IRs that
/// quote the function's (the kernel IR's, `--emit=kernel`).
class FuncText {
 public:
  explicit FuncText(const Func& f);
  ~FuncText();
  std::string expr(const Expr& e);
  std::string var(const Var& v);
  std::string buffer(const Buffer& b);
  /// `s` indented by `depth` levels, one line per statement.
  std::string stmt(const Stmt& s, int depth);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dccc::ir
