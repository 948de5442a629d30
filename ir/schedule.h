// Schedules: how a function's loops run, kept apart from what they compute
// (CoRa §4.1). A schedule is plain data, written in the source as
//
//   schedule f {
//       pad_loop(y.i, 4);       // vloop i of the assignment to y: run to a multiple of 4
//       pad_storage(y.i, 4);    // y's dimension indexed by i: store a multiple of 4
//       split(y.h, 2);          // loop h becomes h_o (outer) and h_i (inner, 2 iterations)
//       reorder(y.h_o, y.i);    // these loops, outermost first
//       tile(y.i, y.h, 4, 2);   // split(y.i, 4), split(y.h, 2), reorder(y.i_o, y.h_o, y.i_i, y.h_i)
//       fuse(y.b, y.i);         // loops b and i (directly inside b) become one loop b_i over all (b, i)
//       split_op(y.i, 4);       // two nests: i over [0, floor(E/4)*4), then b_rest, i_rest over the rest
//       hfuse(y.b, y.b_rest);   // outermost loops of top-level nests become one loop b_b_rest
//       fuse_dims(y.b, y.i);    // after fuse: y's rows (b, i) are indexed by b_i directly (ir/fuse_dims.h)
//       remap(y.b, longest_first);  // parallel loop b runs its iterations by descending work (ir/remap_loop.h)
//       remap(y.b, x.seqlen[b]);    // ... by descending key
//       inline(t);              // local tensor t is computed in its readers (ir/fuse_elementwise.h)
//       gpu_blocks(y.b);        // CUDA: loop b on the grid, a block per iteration
//       gpu_threads(y.i, y.h);  // CUDA: loops i, h flattened over the threads of a block
//   }
//
// or given on the command line (`--schedule='schedule f { ... }'`), and
// applied by ir/apply_schedule.h. A loop is named `TENSOR.INDEX`: the index
// variable INDEX (left side or `reduce`) of the assignment whose left side
// is TENSOR (`y`, `x.data`). docs/schedules.md is the user's description.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "frontend/ast.h"
#include "support/diagnostics.h"

namespace dccc::ir {

/// `TENSOR.INDEX` as written; `at` covers it.
struct LoopRef {
  std::string tensor;
  std::string index;
  SourceRange at;
};

enum class DirectiveKind {
  PadLoop,
  PadStorage,
  Split,
  Reorder,
  Tile,
  Fuse,
  SplitOp,
  HFuse,
  Remap,
  Inline,
  FuseDims,
  GpuBlocks,
  GpuThreads,
  Materialize
};
const char* directive_name(DirectiveKind k);

/// An expression argument of a directive as written (`remap`'s key): an
/// integer literal, a name (a loop index or a size), a tensor element
/// `x.seqlen[b]`, `+ - *` or a negation. Resolved against the function's
/// buffers by the directive that takes it.
struct Term {
  enum Kind { Int, Name, Load, Binary, Neg } kind = Int;
  std::string text;  // Name, Load: the (dotted) name; Binary: the operator
  int64_t value = 0;  // Int
  std::vector<Term> args;  // Load: indices; Binary: two operands; Neg: one
  SourceRange at;
};
std::string term_text(const Term& t);

/// One directive. PadLoop, PadStorage, Split: one loop and `factors[0]`;
/// Reorder: two or more loops, outermost first; Tile: two loops (outer,
/// inner) and two factors; Fuse, FuseDims: two loops (outer, inner), no
/// factor; SplitOp: one loop and the factor its split point is a multiple
/// of; HFuse: two or more loops (outermost loops of top-level nests), no
/// factor; Remap: one loop and `key` (none: `longest_first`); Inline: one
/// LoopRef whose `tensor` is the tensor named and whose `index` is empty;
/// GpuBlocks (one or two loops), GpuThreads (one to three loops): loops of
/// one assignment, outermost first, no factor.
struct Directive {
  DirectiveKind kind;
  std::vector<LoopRef> loops;
  std::vector<int64_t> factors;
  SourceRange at;
  std::vector<Term> key = {};  // Remap: the key, or empty for `longest_first`
};

/// The directives for one function, in the order they apply.
struct Schedule {
  std::string func;
  SourceRange at;  // the function's name in `schedule f`
  std::vector<Directive> directives;
};

/// The `schedule` blocks of `program`, read from `file`. Ranges are tagged
/// with `file`, so that a later pass reporting through another engine (that
/// of the program, for command-line text) still shows the right line. Malformed
/// directives (unknown name, wrong arguments, a factor that is not a
/// positive integer) are [Schedule] errors and left out.
std::vector<Schedule> schedules_from_ast(const ast::Program& program, const SourceFile* file,
                                         DiagnosticEngine& diags);

/// The directive as the source writes it, e.g. `pad_loop(y.i, 4)`.
std::string directive_text(const Directive& d);

}  // namespace dccc::ir
