// The LLVM code generator's per-function state (internal to backend/llvm).
//
// FuncEmitter turns one storage-lowered ir::Func into the LLVM function
// `int32_t NAME__kernel(const int64_t* sizes, void* const* buffers)`
// (backend/llvm/codegen.h states the contract). Its members are defined in
// one file per responsibility:
//   emit_function.cpp  the function: signature, buffers, prelude, local
//                      allocation, error exits and cleanup
//   emit_parallel.cpp  a `parallel` loop outlined and run on the thread pool
//   emit_stmt.cpp      statements and plain loops, float reduction steps
//   emit_expr.cpp      expressions, types, casts, bf16, addresses, alias tags
//   reduction_nests.cpp  reduction nests (ir/flat_reduction.h): interchanged,
//                      or in lane blocks held in vector registers
//   vector_idioms.cpp  transposing copies in register tiles, max/min
//                      reductions in vector lanes
// Emission errors (malformed IR) are thrown as EmitError and reported by
// emit_llvm.
#pragma once

#include <llvm/IR/DebugInfoMetadata.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backend/llvm/debug_info.h"
#include "ir/flat_reduction.h"
#include "ir/ir.h"

namespace dccc::backend::llvmgen {

using backend::DebugInfo;

using ir::BinOp;
using ir::BufferKind;
using ir::BufferNode;
using ir::ExprKind;
using ir::StmtKind;
using ir::UnOp;

// dcc_status values (runtime/include/dccrt.h).
constexpr int kInvalidArgument = 2;
constexpr int kNegativeLength = 3;
constexpr int kOverflow = 4;
constexpr int kOutOfMemory = 6;

struct EmitError {
  std::string what;
};

class FuncEmitter {
 public:
  /// `dbg` non-null (`dccc -g`): line tables in `.toy` lines (debug_info.h).
  FuncEmitter(llvm::Module& mod, const ir::Func& f, DebugInfo* dbg = nullptr)
      : ctx_(mod.getContext()), mod_(mod), b_(ctx_), f_(f), dbg_(dbg) {}

  /// Emits the function into the module (emit_function.cpp).
  void run();

 private:
  /// The entries of a map keyed by buffers, in the buffers' declaration
  /// order: the maps order them by address, which changes from run to run,
  /// and the generated code must not.
  template <typename V>
  std::vector<std::pair<const BufferNode*, V>> in_order(const std::map<const BufferNode*, V>& map) const {
    std::map<const BufferNode*, size_t> index;
    for (size_t k = 0; k < f_.buffers.size(); ++k) index[f_.buffers[k].get()] = k;
    std::vector<std::pair<const BufferNode*, V>> out(map.begin(), map.end());
    std::stable_sort(out.begin(), out.end(), [&](const auto& x, const auto& y) {
      auto a = index.find(x.first), b = index.find(y.first);
      size_t ka = a == index.end() ? index.size() : a->second, kb = b == index.end() ? index.size() : b->second;
      return ka < kb;
    });
    return out;
  }

  // ---- The function (emit_function.cpp) ----
  void emit_with_allocations(const ir::Stmt& s);
  void collect_buffers(const ir::Stmt& s, std::vector<const BufferNode*>& out);
  void add_buffer(const BufferNode* b, std::vector<const BufferNode*>& out,
                  const std::function<void(const ir::Expr&)>& ex);
  void allocate(const BufferNode* buf);
  void fail_if(llvm::Value* cond, int status, const std::string& message);
  void fail_negative_length(const ir::StmtNode& s);
  llvm::FunctionCallee set_error_fn();

  // ---- Parallel loops (emit_parallel.cpp) ----
  void emit_parallel(const ir::StmtNode& s);

  // ---- Statements and loops (emit_stmt.cpp) ----
  void emit(const ir::Stmt& s);
  llvm::Value* reduction_step(const ir::StmtNode& s);
  void emit_loop(const ir::StmtNode& s, llvm::Value* begin, llvm::Value* n);
  void counted_loop(const std::string& name, llvm::Value* n, const std::function<void(llvm::Value*)>& fn);
  void strided_loop(const std::string& name, llvm::Value* begin, llvm::Value* end, int64_t step,
                    const std::function<void(llvm::Value*)>& fn);

  // ---- Expressions (emit_expr.cpp) ----
  llvm::Value* emit(const ir::Expr& e);
  llvm::Type* value_type(Scalar t);
  llvm::Type* mem_type(Scalar t);
  llvm::Value* f32_to_bf16_bits(llvm::Value* f);
  llvm::Value* bf16_bits_to_f32(llvm::Value* h);
  llvm::Value* round_bf16(llvm::Value* f) { return bf16_bits_to_f32(f32_to_bf16_bits(f)); }
  llvm::Value* fix(llvm::Value* v, Scalar t) { return t == Scalar::BF16 ? round_bf16(v) : v; }
  static double host_bf16(double v);
  void tag(llvm::Instruction* access, const BufferNode* buf);
  llvm::Value* base_pointer(const BufferNode* buf);
  llvm::Value* address(const BufferNode* buf, const std::vector<ir::Expr>& args, bool flat);
  llvm::Value* to_value(llvm::Value* v, Scalar t);
  llvm::Value* to_mem(llvm::Value* v, Scalar t);
  llvm::Value* cast(llvm::Value* v, Scalar from, Scalar to);
  llvm::Value* math_call(const char* name, llvm::Value* x, Scalar t);
  llvm::Value* unary(const ir::Expr& e);
  llvm::Value* float_op(BinOp op, llvm::Value* a, llvm::Value* c);
  llvm::Value* binary(const ir::Expr& e);

  // ---- Reduction nests (reduction_nests.cpp) ----
  /// The lanes of a lane block being emitted (emit_lane_blocks).
  struct LaneBlock {
    const ir::Var* lane;
    std::vector<const BufferNode*> accs;
    std::map<const BufferNode*, llvm::AllocaInst*> slots;  // this vector's accumulators
    llvm::FixedVectorType* vtype;
    llvm::Value* mask;  // null: every lane is in range
  };
  static bool loads_buffer(const ir::Expr& e, const BufferNode* b);
  bool lanes_may_pad(const ir::StmtNode& s, const ir::FlatReduction& plan);
  void emit_interchanged(const ir::StmtNode& s, const ir::FlatReduction& plan);
  static bool loads_any(const ir::Expr& e, const std::vector<const BufferNode*>& bufs);
  static bool lane_dependent(const ir::Expr& e, const ir::Var& lane, const std::vector<const BufferNode*>& accs);
  bool vectorizable(const ir::Expr& e, Scalar t, const ir::Var& lane, const std::vector<const BufferNode*>& accs);
  bool lane_blocks_pay(const ir::StmtNode& s, const ir::FlatReduction& plan);
  llvm::Value* vector_emit(const ir::Expr& e, const LaneBlock& lb);
  llvm::Value* vector_step(const ir::Expr& v, llvm::Value* acc, const LaneBlock& lb);
  void emit_lane_blocks(const ir::StmtNode& s, const ir::FlatReduction& plan);

  // ---- Vector idioms (vector_idioms.cpp) ----
  const ir::StmtNode* transpose_tile_store(const ir::StmtNode& s);
  void emit_transpose_tiles(const ir::StmtNode& s, const ir::StmtNode& st);
  ir::Stmt minmax_reduction(const ir::StmtNode& s);
  void emit_minmax_lanes(const ir::StmtNode& s, const ir::Stmt& step);

  llvm::LLVMContext& ctx_;
  llvm::Module& mod_;
  llvm::IRBuilder<> b_;
  const ir::Func& f_;
  DebugInfo* dbg_ = nullptr;          // -g: line tables (null: none)
  llvm::DISubprogram* sp_ = nullptr;  // -g: the subprogram of fn_
  llvm::Function* fn_ = nullptr;
  llvm::BasicBlock* cleanup_ = nullptr;
  llvm::AllocaInst* status_ = nullptr;
  llvm::AllocaInst* message_ = nullptr;  // inside a parallel body only: the failure's message
  bool checked_ = false;  // emitting a store to an aux array: i64 +, -, * fail on overflow
  int parallel_count_ = 0;
  llvm::MDNode* tbaa_root_ = nullptr;
  std::map<std::string, llvm::Value*> sizes_;
  std::map<const BufferNode*, llvm::Value*> base_;
  std::map<const BufferNode*, llvm::AllocaInst*> slot_;
  std::map<const BufferNode*, llvm::AllocaInst*> scalar_;
  std::set<const BufferNode*> allocated_;
  std::map<const ir::VarNode*, llvm::Value*> vars_;
};

}  // namespace dccc::backend::llvmgen
