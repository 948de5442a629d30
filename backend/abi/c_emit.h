// Integer parts of the IR as C: what generated host code computes before
// any kernel runs -- totals, the prelude's offset arrays, `where` checks and
// (CUDA) launch sizes -- with overflow-checked arithmetic that sets a local
// `int ovf`. Used by the C wrapper (backend/abi/prepare.cpp) and the CUDA
// launch code (backend/cuda), which compile it as C and as C++.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include "ir/ir.h"

namespace dccc::backend {

/// The C element type of a buffer of type `t` (16-bit floats as uint16_t
/// bit patterns, bool as uint8_t).
const char* c_type(Scalar t);

/// `s` with every character that is not a letter or digit replaced by `_`.
std::string ident(const std::string& s);

/// A program the back end cannot compile (or whose names cannot be C
/// names): an [Unsupported] error at `at`, the declaration or statement
/// that needs it.
struct BackendUnsupported : std::runtime_error {
  BackendUnsupported(SourceRange where, const std::string& what) : std::runtime_error(what), at(where) {}
  SourceRange at;
};

/// Whether a program's name cannot be a C name as it is: a C or C++
/// keyword (the header is C and C++, the CUDA code C++), or a name that the
/// headers a generated file includes declare or define (`int32_t`, `NULL`,
/// `size_t`, `dcc_status`, `DCC_OK`, everything starting with `dcc_`,
/// `DCC_`, `__`, or `_` and a capital).
bool c_reserved(const std::string& name);

/// The C name of a name the host sees (a function, a coupling type, a
/// field, a size, a parameter): the name itself, with `_` appended while it
/// is reserved (c_reserved) or in `taken` (docs/abi.md, "Names").
std::string api_name(const std::string& name, const std::set<std::string>& taken = {});

/// The C names inside one generated function (C wrapper, CUDA launcher and
/// kernels), none of which a program's names can collide with: each is a
/// family prefix and a stem, and no fixed name the generated code uses
/// (`st`, `ovf`, `k`, `result`, `prelude`, ...) starts with a family prefix.
/// Families: `a_` parameters, `s_` / `have_` sizes, and per buffer `b_`
/// (its storage), `t_`, `h_`, `d_`, `n_`, `r_`; loop variables are `v_`
/// (CEmitter). Stems are unique per function: buffers with the same IR name
/// (two inlined calls of one function both have `proj.acc0`) or the same
/// `ident` (`x.data`, `x_data`) get `_2`, `_3`, ... .
class CNames {
 public:
  CNames() = default;
  explicit CNames(const ir::Func& f);
  /// The stem of buffer `b` (ident(b->name) unless taken).
  std::string buf(const ir::BufferNode* b) const;
  /// The stem of size `name` (a size parameter, or a list's `xs.count`).
  std::string size(const std::string& name) const;
  /// A parameter inside generated definitions: `a_` and its name.
  static std::string arg(const std::string& param) { return "a_" + ident(param); }

 private:
  std::map<const ir::BufferNode*, std::string> bufs_;
  std::map<std::string, std::string> sizes_;
};

/// Definitions of the helpers the emitted code calls (dcc__add, dcc__sub,
/// dcc__mul, dcc__div, dcc__mod, dcc__min, dcc__max), valid C and C++.
extern const char* const kCheckedIntHelpers;

/// Translates integer IR to C. Sizes are `s_NAME`, variables get fresh
/// names (`vars`, `v_NAME_N`), and each buffer reads from the C expression `buffers`
/// gives it; anything else throws BackendUnsupported.
class CEmitter {
 public:
  std::map<const ir::BufferNode*, std::string> buffers;  // C expression of each buffer's storage
  std::map<const ir::VarNode*, std::string> vars;
  /// The function's names: sizes are `s_` and their stem (ident(name) when null).
  const CNames* names = nullptr;
  /// Where an [Unsupported] error points when nothing closer is known (the function).
  SourceRange at;
  /// The C statements that fail the call when a computed length's check
  /// (an Assert with length_check) fails, given its condition, index and
  /// value as C expressions and the indentation; unset: such a check is
  /// [Unsupported] (the C wrapper's code has none).
  std::function<std::string(const std::string& cond, const std::string& index, const std::string& value,
                            const std::string& name, const std::string& pad)>
      length_check;

  std::string expr(const ir::Expr& e);
  /// Seq, For and Store statements (and computed lengths' checks, with
  /// length_check), indented by `depth` levels.
  void stmt(const ir::Stmt& s, int depth, std::string& out);
  std::string var(const ir::Var& v);
  std::string buffer(const ir::BufferNode* b);
};

}  // namespace dccc::backend
