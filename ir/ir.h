// The vloop IR: loop nests over ragged tensors (CoRa §3, §5, appendix B).
//
// A Func is a list of buffers and a statement tree. Loops are cloops when
// their extent is loop-invariant and vloops when the extent mentions an
// outer loop variable (`for i in 0 .. q.seqlen[b]`). Length functions are
// loads from integer buffers (uninterpreted functions to the prover).
// Variables and buffers are objects compared by identity, never by name.
// Node kinds are listed once, in DCCC_IR_EXPR_KINDS / DCCC_IR_STMT_KINDS;
// nodes are immutable and shared.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "typecheck/types.h"

namespace dccc::ir {

/// A loop or dimension variable.
struct VarNode {
  std::string name;
};
using Var = std::shared_ptr<const VarNode>;
Var make_var(std::string name);

struct ExprNode;
using Expr = std::shared_ptr<const ExprNode>;
struct StmtNode;
using Stmt = std::shared_ptr<const StmtNode>;
struct BufferNode;
using Buffer = std::shared_ptr<BufferNode>;

#define DCCC_IR_EXPR_KINDS(X) \
  X(IntImm)                   \
  X(FloatImm)                 \
  X(VarRef)                   \
  X(SizeRef)                  \
  X(Binary)                   \
  X(Unary)                    \
  X(Select)                   \
  X(Cast)                     \
  X(Load)

#define DCCC_IR_STMT_KINDS(X) \
  X(For)                      \
  X(Store)                    \
  X(Seq)                      \
  X(IfThenElse)               \
  X(Print)                    \
  X(Assert)

enum class ExprKind {
#define X(k) k,
  DCCC_IR_EXPR_KINDS(X)
#undef X
};
enum class StmtKind {
#define X(k) k,
  DCCC_IR_STMT_KINDS(X)
#undef X
};
const char* kind_name(ExprKind k);
const char* kind_name(StmtKind k);

#define DCCC_IR_BINOPS(X) \
  X(Add, "+") X(Sub, "-") X(Mul, "*") X(Div, "/") X(Mod, "%") X(Min, "min") X(Max, "max") X(Pow, "pow") \
  X(EQ, "==") X(NE, "!=") X(LT, "<") X(LE, "<=") X(And, "&&") X(Or, "||")
#define DCCC_IR_UNOPS(X) \
  X(Neg, "-") X(Not, "!") X(Exp, "exp") X(Log, "log") X(Sqrt, "sqrt") X(Rsqrt, "rsqrt") X(Tanh, "tanh") \
  X(Erf, "erf") X(Abs, "abs")

enum class BinOp {
#define X(k, s) k,
  DCCC_IR_BINOPS(X)
#undef X
};
enum class UnOp {
#define X(k, s) k,
  DCCC_IR_UNOPS(X)
#undef X
};
const char* op_text(BinOp op);
const char* op_text(UnOp op);
bool is_comparison(BinOp op);

/// Index arithmetic is i64; `type` is the value's scalar type.
struct ExprNode {
  ExprKind kind;
  Scalar type = Scalar::I64;
  int64_t int_value = 0;      // IntImm (bool: 0/1)
  double float_value = 0;     // FloatImm
  Var var;                    // VarRef
  std::string name;           // SizeRef
  BinOp binop = BinOp::Add;   // Binary
  UnOp unop = UnOp::Neg;      // Unary
  Buffer buffer;              // Load
  std::vector<Expr> args;     // operands; Load: indices
  bool flat = false;          // Load: args[0] is a storage offset (after storage lowering)
};

enum class LoopKind { Serial, Parallel, Vectorized };
const char* loop_kind_name(LoopKind k);

struct StmtNode {
  StmtKind kind;
  Var var;                     // For
  Expr extent;                 // For: iterates var over [0, extent)
  LoopKind loop = LoopKind::Serial;
  Buffer buffer;               // Store
  std::vector<Expr> args;      // Store: indices; Print: values
  Expr value;                  // Store: value; IfThenElse, Assert: condition
  std::vector<Stmt> body;      // For, IfThenElse: body[0] then, body[1] else (optional); Seq: items
  std::string text;            // Print: text printed before the values; Assert: the
                               // constraint as written, for the run-time error
                               // (length_check: the length array's name)
  /// Assert: a computed length's check (build::assert_length), not a
  /// `where`: args are {element index, element value} for the message.
  bool length_check = false;
  bool newline = true;         // Print: end with a newline
  bool flat = false;           // Store: args[0] is a storage offset (after storage lowering)
  /// The source statement, for the back ends' [Unsupported] diagnostics
  /// (set by lowering on prints and inlined `where` checks; empty: none).
  SourceRange at;
};

/// One dimension of a buffer: its extent may mention the variables of outer
/// dimensions (`dim_vars`) and load from integer buffers.
struct BufferDim {
  Var var;       // the dimension's own variable (used by inner extents)
  Expr extent;
};

enum class BufferKind { Input, Output, Local, Scalar, Aux };
const char* buffer_kind_name(BufferKind k);

/// A tensor or a scalar accumulator (no dims). Identity is the object.
struct BufferNode {
  std::string name;
  Scalar type = Scalar::F32;
  std::vector<BufferDim> dims;
  BufferKind kind = BufferKind::Local;
  /// Storage padding per dimension (1: none); set by schedules.
  std::vector<int64_t> pad;
  /// Number of stored elements, in terms of sizes, length buffers and aux
  /// buffers; set by storage lowering (null before).
  Expr total;
  /// Fresh storage reads as zeros; false when storage lowering, or
  /// ir/mark_written_first.h before the CPU passes that reshape nests, found
  /// that the tensor's first statement stores every element before anything
  /// reads it (ir/written_first.h), so the backends skip the fill.
  bool zero_fill = true;
  /// The declaration the buffer stands for (a parameter, a `let`, a
  /// construction, a `reduce`), where storage lowering and the back ends
  /// report what they cannot compile (empty: none, e.g. IR text).
  SourceRange at;
};

/// A size parameter of a function (`B`, `H`), read from its arguments.
struct SizeParam {
  std::string name;
};

/// How a host sees one parameter or the result: a coupling is a struct with
/// one pointer and one element count per field plus its size parameters; a
/// tensor is a struct with `data`, `data_len` and its sizes; a scalar is a
/// value (a pointer for the result). A list (parameters only) has fields
/// `data`, the elements packed into one ragged buffer [b: count][len[b], ...]
/// (the host passes one pointer per element; the C wrapper packs them), and
/// `len`, the elements' first extents; its sizes start with `count`.
struct Param {
  std::string name;
  std::string type_name;  // the coupling's name, or empty for tensors and scalars
  enum Kind { Coupling, Tensor, Scalar, List } kind = Tensor;
  /// Fields in declaration order: C name and buffer. A result field whose
  /// buffer is an input aliases that input (e.g. `seqlen: q.seqlen`).
  std::vector<std::pair<std::string, Buffer>> fields;
  /// Size fields carried by the argument, with the value each must have in
  /// terms of the function's sizes (a SizeRef, or a constant from `const`).
  std::vector<std::pair<std::string, Expr>> sizes;
  /// The parameter's name (the `return` for a result), for diagnostics.
  SourceRange at;
};

/// A `where` constraint checked on entry: for every value of `vars` (each
/// in [0, extent)), `cond` must hold.
struct EntryCheck {
  Stmt pre;  // computes what `cond` needs (sums of length arrays); may be null
  std::vector<std::pair<Var, Expr>> vars;
  Expr cond;
  std::string text;  // the constraint as written, for the error message
};

/// One assignment of the source as a `schedule` names it: `tensor` is the
/// left side's base as written (`y`, `x.data`), `lhs` the loop variables of
/// the left-side indices in dimension order, `loops` every index (left side
/// and `reduce`) by its source name. Set by lowering for a function's own
/// assignments (an inlined callee's are not nameable); variables are
/// compared by identity, so the record survives passes that rebuild loops.
struct NamedNest {
  std::string tensor;
  SourceRange at;
  Buffer target;
  std::vector<Var> lhs;
  std::vector<std::pair<std::string, Var>> loops;
};

/// A vloop fusion `fuse(T.o, T.i)` whose packed rows a schedule's
/// `fuse_dims` indexes by the fused iteration (ir/fuse_dims.h): the original
/// loops, the inner loop's extent (in terms of `outer`) and the maps.
struct FusedLoops {
  Var outer, inner;
  Expr inner_extent;
  Buffer oif, fo, fi;
};

/// The GPU mapping of one top-level statement asked for by `gpu_blocks` /
/// `gpu_threads` (docs/schedules.md): `blocks`, its outermost loop and
/// optionally the loop directly inside (guards between allowed), run on the
/// grid, one block per iteration; `threads` (empty: the CUDA emitter's own
/// choice), the loops directly inside them, are flattened over the threads
/// of a block. Only the CUDA target reads it; not printed (IR text read back
/// has no mapping). `at`: the directive, for the CUDA emitter's diagnostics.
struct GpuMapping {
  std::vector<Var> blocks, threads;
  SourceRange at;
};

/// A lowered function: buffers in declaration order and one body.
/// A call of a `.toy` function that lowering inlined (for --explain): the
/// callee (`nn.rmsnorm__f32`), the inlined function whose body made the
/// call (empty: the function itself), the call, and the local tensors the
/// callee's body made (buffer names, `nn.rmsnorm__f32.ms`); calls inside it
/// are entries of their own.
struct InlinedCall {
  std::string callee;
  std::string caller;
  SourceRange at;
  std::vector<std::string> tensors;
};

struct Func {
  std::string name;
  SourceRange at;  // the function's name in its declaration (empty for IR text)
  std::vector<SizeParam> sizes;
  std::vector<Buffer> buffers;  // inputs, outputs, locals, accumulators
  std::vector<Param> params;
  std::vector<Param> results;   // zero or one
  std::vector<EntryCheck> checks;
  /// Computes the aux buffers (CoRa's A_d offset arrays) from the length
  /// buffers; runs before `body`, once per length pattern. Null before
  /// storage lowering.
  Stmt prelude;
  Stmt body;
  bool storage_lowered = false;
  /// The assignments a schedule can name (empty for IR read from text).
  std::vector<NamedNest> nests;
  /// Tensor-dimension fusions asked for by `fuse_dims`, applied by storage
  /// lowering (multi-index IR keeps the (b, i) accesses; not printed: the
  /// lowered accesses show them).
  std::vector<FusedLoops> dim_fusions;
  /// GPU grid and block mappings (`gpu_blocks`, `gpu_threads`; CUDA target only).
  std::vector<GpuMapping> gpu_mappings;
  /// The calls lowering inlined, in program order (empty for IR text).
  std::vector<InlinedCall> inlined;
};

/// The lowered program.
struct Module {
  std::vector<Func> funcs;
};

namespace build {
Expr int_imm(int64_t v, Scalar t = Scalar::I64);
Expr float_imm(double v, Scalar t);
Expr bool_imm(bool v);
Expr var(const Var& v);
Expr size(const std::string& name);
Expr binary(BinOp op, Expr a, Expr b);
Expr unary(UnOp op, Expr a);
Expr select(Expr c, Expr a, Expr b);
Expr cast(Scalar t, Expr a);
Expr load(const Buffer& b, std::vector<Expr> idx);
Stmt for_loop(const Var& v, Expr extent, Stmt body, LoopKind k = LoopKind::Serial);
Stmt store(const Buffer& b, std::vector<Expr> idx, Expr value);
Stmt seq(std::vector<Stmt> items);
Stmt if_then_else(Expr c, Stmt then_s, Stmt else_s = nullptr);
Stmt print(std::string label, std::vector<Expr> values);
/// Stops the program with the run-time error "`where` constraint violated:
/// TEXT" unless `cond` holds (a callee's `where`, checked at an inlined call).
Stmt assert_that(Expr cond, std::string text);
/// Stops the function with DCC_ERR_NEGATIVE_LENGTH, "FN: `NAME`[i] is v, a
/// length the function computes; lengths must be >= 0", unless element
/// `index` of length array `b` (flat, after storage lowering) is >= 0.
/// Storage lowering checks each length the function computes before its
/// offsets are summed (a negative one would make a tensor's rows overlap
/// or leave its storage).
Stmt assert_length(const Buffer& b, Expr index);
Expr flat_load(const Buffer& b, Expr offset);
/// `e` rounded up to a multiple of `k` (k >= 1): ((e + k - 1) / k) * k; `e`
/// itself when k == 1 or e is a constant multiple of k.
Expr round_up(Expr e, int64_t k);
/// The identity of reduction `op` (+, *, max, min) in type `t`: 0, 1, and for
/// max / min the type's least / greatest value (-inf / inf for floats; i32's
/// bounds for i32, i64's for the other integers). A `reduce` starts there.
Expr identity(BinOp op, Scalar t);
Stmt flat_store(const Buffer& b, Expr offset, Expr value);
/// `s` with `at` set on it and on the statements inside it that have no
/// location yet (a print or an inlined `where` check and the loops around
/// it), for the back ends' diagnostics.
Stmt located(const Stmt& s, SourceRange at);
}  // namespace build

/// The source location of `s` for line tables (`dccc -g`, `-lineinfo`): its
/// own `at`, else for a store the declaration of the buffer it writes, else
/// (loops, sequences, conditionals) the first such location inside it,
/// pre-order. Invalid when nothing in `s` has one (IR text).
SourceRange statement_location(const Stmt& s);

/// The input buffers of `f` in dependency order (length buffers before the
/// buffers they shape).
std::vector<Buffer> input_buffers(const Func& f);

/// The aux buffers the prelude fills (stores to), in Func::buffers order;
/// other aux buffers are filled by the body (offsets of local lengths).
std::vector<Buffer> prelude_aux(const Func& f);

/// Whether every load in `es` reads an input that sizes a tensor dimension
/// (a length array of the arguments, checked non-negative by the C wrapper):
/// arrays computed from such values alone (and sizes, constants) can be the
/// prelude's, computed once per length pattern (`fuse`'s maps, `remap`'s).
bool reads_only_lengths(const Func& f, const std::vector<Expr>& es);

/// True when `e` mentions `v`.
bool mentions(const Expr& e, const Var& v);

/// True when `e` is affine in `v` under wrapping 64-bit arithmetic: built
/// from +, - and * (one side free of v) over v itself, with v in no load
/// and no cast. Then e(v) = e(0) + v * (e(1) - e(0)) exactly.
bool affine_in(const Expr& e, const Var& v);

/// Visits `e` and every sub-expression.
void each_expr(const Expr& e, const std::function<void(const ExprNode&)>& fn);
/// Visits `s` and every statement inside it.
void each_stmt(const Stmt& s, const std::function<void(const StmtNode&)>& fn);
/// Visits the expressions `s` holds itself (extent, value, args), not its children's.
void own_exprs(const StmtNode& s, const std::function<void(const ExprNode&)>& fn);
/// True when `e` loads from `b`.
bool loads_from(const Expr& e, const BufferNode* b);
/// True when `s` loads from or stores to `b` (or prints it whole).
bool touches(const Stmt& s, const BufferNode* b);
/// True when no execution of `s` reads a value of scalar `b` stored before
/// `s` began (or `s` never touches it): in a sequence, each use in turn
/// either surely stores `b` before reading it (a store that does not read
/// it; a sequence or both branches of an if that do), which covers the uses
/// after it, or reads no earlier value itself (a loop whose body stores `b`
/// first, as each of a block's per-row reduction loops does). A scalar
/// written before read in a loop body is private to each iteration (a
/// `reduce` accumulator); one a loop that may run no iteration leaves for
/// a later use is not.
bool written_before_read(const Stmt& s, const BufferNode* b);
/// True when `s` touches `b` outside the subtree rooted at `inner`.
bool touches_outside(const Stmt& s, const StmtNode* inner, const BufferNode* b);

/// True when `a` and `b` are the same expression: same kinds, operators,
/// constants, variables and buffers (by identity), and operands.
bool same_expr(const Expr& a, const Expr& b);

/// The items of a sequence, or `body` alone (none for null).
std::vector<Stmt> items_of(const Stmt& body);
/// `s` without the one-item sequences around it.
Stmt unwrap(Stmt s);
/// True when `e` divides integers (`/` or `%`), which can fail at run time.
bool may_fail(const Expr& e);

/// The loop over `v` in `s` (null: none).
const StmtNode* find_for(const Stmt& s, const VarNode* v);

/// `s` with the statement node `inner` (somewhere in its tree) replaced by
/// `with`; the nodes on the path to it are copied, the rest shared.
Stmt replace_stmt(const Stmt& s, const StmtNode* inner, const Stmt& with);

/// `e` rebuilt with each sub-expression for which `fn` returns an
/// expression replaced by it (not visited further); the rest is visited
/// operand by operand, and nodes that do not change are shared.
Expr replace_exprs(const Expr& e, const std::function<Expr(const Expr&)>& fn);

/// Replace variables by expressions.
Expr substitute(const Expr& e, const std::map<const VarNode*, Expr>& m);
/// `s` with the variables of `m` replaced by their expressions everywhere in it.
Stmt substitute(const Stmt& s, const std::map<const VarNode*, Expr>& m);
/// Store `s` with the variables of `vars` replaced and scalar `from`, stored
/// or loaded, replaced by `to`: one copy of a reduction's statement for one
/// accumulator of an unrolled nest (ir/tile_contractions, ir/jam_reductions).
Stmt rename_store(const Stmt& s, const std::map<const VarNode*, Expr>& vars, const BufferNode* from, const Buffer& to);

/// Rebuild a statement tree, rewriting every expression with `fe` and every
/// Store/Load through `fs` (which may return the statement unchanged).
Stmt rewrite(const Stmt& s, const std::function<Expr(const Expr&)>& fe);

}  // namespace dccc::ir
