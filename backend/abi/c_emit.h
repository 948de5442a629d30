// Integer parts of the IR as C: what generated host code computes before
// any kernel runs -- totals, the prelude's offset arrays, `where` checks and
// (CUDA) launch sizes -- with overflow-checked arithmetic that sets a local
// `int ovf`. Used by the C wrapper (c_abi.cpp) and the CUDA launch code
// (backend/cuda), which compile it as C and as C++.
#pragma once

#include <map>
#include <string>

#include "ir/ir.h"

namespace dccc::backend {

/// The C element type of a buffer of type `t` (16-bit floats as uint16_t
/// bit patterns, bool as uint8_t).
const char* c_type(Scalar t);

/// `s` with every character that is not a letter or digit replaced by `_`.
std::string ident(const std::string& s);

/// Definitions of the helpers the emitted code calls (dcc__add, dcc__sub,
/// dcc__mul, dcc__div, dcc__mod, dcc__min, dcc__max), valid C and C++.
extern const char* const kCheckedIntHelpers;

/// Translates integer IR to C. Sizes are `s_NAME`, variables get fresh
/// names (`vars`), and each buffer reads from the C expression `buffers`
/// gives it; anything else throws std::runtime_error.
class CEmitter {
 public:
  std::map<const ir::BufferNode*, std::string> buffers;  // C expression of each buffer's storage
  std::map<const ir::VarNode*, std::string> vars;

  std::string expr(const ir::Expr& e);
  /// Seq, For and Store statements, indented by `depth` levels.
  void stmt(const ir::Stmt& s, int depth, std::string& out);
  std::string var(const ir::Var& v);
  std::string buffer(const ir::BufferNode* b);
};

}  // namespace dccc::backend
