// FuncEmitter: two loop idioms emitted as vector code -- transposing copies
// in register tiles, max/min reductions in vector lanes
// (backend/llvm/func_emitter.h).
#include "backend/llvm/func_emitter.h"

#include <llvm/IR/Intrinsics.h>

namespace dccc::backend::llvmgen {

// ---- Transposing copies in register tiles --------------------------------
//
// `for d { for r in 0 .. W { T[f(d) + r] = B[g(r) + d] } }`: the store runs
// along r, the load along d (the blocked copy of ir/transpose_operands.h,
// B's rows g(r) anything, even clamped). Element by element it is a
// strided access per step (LLVM emits scalar copies or gathers); instead,
// W values of d at a time: W vector loads (one per r, along d), a W x W
// transpose in registers (log2 W rounds of two-source shuffles), W vector
// stores (one per d, along r); the last d % W values of d go as before.
// T and B are distinct buffers, so only the order of the copies changes
// (for each element of T, the last d still writes it last).

/// The store of such a nest (element width W = 64 bytes / element size),
/// or null.
const ir::StmtNode* FuncEmitter::transpose_tile_store(const ir::StmtNode& s) {
  if (s.loop != ir::LoopKind::Serial) return nullptr;
  ir::Stmt inner = ir::unwrap(s.body[0]);
  if (!inner || inner->kind != StmtKind::For || inner->loop != ir::LoopKind::Serial) return nullptr;
  ir::Stmt st = ir::unwrap(inner->body[0]);
  if (!st || st->kind != StmtKind::Store || !st->flat || st->args.size() != 1) return nullptr;
  const ir::Expr& v = st->value;
  if (v->kind != ExprKind::Load || !v->flat || v->args.size() != 1 || v->buffer == st->buffer) return nullptr;
  if (v->buffer->type != st->buffer->type || v->type != st->buffer->type) return nullptr;
  uint64_t size = mod_.getDataLayout().getTypeAllocSize(mem_type(st->buffer->type));
  if (size != 4 && size != 8) return nullptr;
  const int64_t w = 64 / static_cast<int64_t>(size);
  if (inner->extent->kind != ExprKind::IntImm || inner->extent->int_value != w) return nullptr;
  if (ir::mentions(s.extent, inner->var)) return nullptr;
  const ir::Var& d = s.var;
  const ir::Var& r = inner->var;
  // Stride 1 in r for the store and in d for the load: f(d) + r and g(r) + d
  // (f and g free of r and d respectively, otherwise anything).
  if (ir::stride(st->args[0], r) != ir::Stride::One || ir::stride(v->args[0], d) != ir::Stride::One) return nullptr;
  // Not a transpose when both run along the same variable (a plain copy).
  if (ir::stride(v->args[0], r) == ir::Stride::One || ir::stride(st->args[0], d) == ir::Stride::One) return nullptr;
  if (loads_buffer(v->args[0], st->buffer.get()) || loads_buffer(st->args[0], st->buffer.get())) return nullptr;
  return st.get();
}

void FuncEmitter::emit_transpose_tiles(const ir::StmtNode& s, const ir::StmtNode& st) {
  const ir::StmtNode& inner = *ir::unwrap(s.body[0]);
  const ir::Var& d = s.var;
  const ir::Var& r = inner.var;
  llvm::Type* et = mem_type(st.buffer->type);
  const int64_t w = inner.extent->int_value;
  auto* vtype = llvm::FixedVectorType::get(et, static_cast<unsigned>(w));
  llvm::Align align(mod_.getDataLayout().getTypeAllocSize(et));
  llvm::Value* n = emit(s.extent);
  llvm::Value* full = b_.CreateSub(n, b_.CreateSRem(n, b_.getInt64(w)));
  strided_loop(d->name + ".tile", b_.getInt64(0), full, w, [&](llvm::Value* d0) {
    std::vector<llvm::Value*> rows;
    vars_[d.get()] = d0;
    for (int64_t k = 0; k < w; ++k) {
      vars_[r.get()] = b_.getInt64(k);
      auto* load = b_.CreateAlignedLoad(vtype, address(st.value->buffer.get(), st.value->args, true), align);
      tag(load, st.value->buffer.get());
      rows.push_back(load);
    }
    // Round s swaps bit s of the row index with bit s of the column index.
    for (int64_t sh = w / 2; sh >= 1; sh /= 2)
      for (int64_t i = 0; i < w; ++i) {
        if (i & sh) continue;
        std::vector<int> lo, hi;
        for (int64_t c = 0; c < w; ++c) {
          bool low = (c & sh) == 0;
          lo.push_back(static_cast<int>(low ? c : w + c - sh));
          hi.push_back(static_cast<int>(low ? c + sh : w + c));
        }
        llvm::Value* a = rows[static_cast<size_t>(i)];
        llvm::Value* b = rows[static_cast<size_t>(i + sh)];
        rows[static_cast<size_t>(i)] = b_.CreateShuffleVector(a, b, lo);
        rows[static_cast<size_t>(i + sh)] = b_.CreateShuffleVector(a, b, hi);
      }
    vars_[r.get()] = b_.getInt64(0);
    for (int64_t k = 0; k < w; ++k) {
      vars_[d.get()] = k == 0 ? d0 : b_.CreateAdd(d0, b_.getInt64(k), "", true, true);
      tag(b_.CreateAlignedStore(rows[static_cast<size_t>(k)], address(st.buffer.get(), st.args, true), align),
          st.buffer.get());
    }
    vars_.erase(r.get());
    vars_.erase(d.get());
  });
  emit_loop(s, full, n);
}

// ---- Lane accumulators for max and min ---------------------------------
//
// `for j { acc = max(acc, x(j)) }` (or min) over floats: LLVM's loop
// vectorizer splits a maxnum/minnum reduction into lanes only under
// no-NaNs flags, so the row max of a softmax stayed one scalar chain. But
// float max and min (maxnum/minnum: a NaN operand is ignored) give the
// same result in any order (docs/language.md), so the loop takes kLanes
// steps at a time into kLanes accumulators, each starting at acc's value
// (max(a, a) = a) and taking j = u mod kLanes; they are combined into acc
// at the end and the last n % kLanes steps run as before. The SLP
// vectorizer turns the kLanes independent chains into vector operations.
constexpr int64_t kLanes = 16;

/// The step of `s` when `s` is such a loop; null otherwise.
ir::Stmt FuncEmitter::minmax_reduction(const ir::StmtNode& s) {
  if (s.loop != ir::LoopKind::Serial) return nullptr;
  const ir::Stmt* body = &s.body[0];
  while (*body && (*body)->kind == StmtKind::Seq && (*body)->body.size() == 1) body = &(*body)->body[0];
  const ir::Stmt& step = *body;
  if (!step || step->kind != StmtKind::Store || step->flat || !step->args.empty() || !scalar_.count(step->buffer.get()))
    return nullptr;
  const ir::Expr& v = step->value;
  if (v->kind != ExprKind::Binary || (v->binop != BinOp::Max && v->binop != BinOp::Min)) return nullptr;
  if (step->buffer->type != v->type || (v->type != Scalar::F32 && v->type != Scalar::F64)) return nullptr;
  const ir::Expr& acc = v->args[0];
  if (acc->kind != ExprKind::Load || acc->buffer != step->buffer || !acc->args.empty()) return nullptr;
  if (loads_buffer(v->args[1], step->buffer.get()) || loads_buffer(s.extent, step->buffer.get())) return nullptr;
  return step;
}

void FuncEmitter::emit_minmax_lanes(const ir::StmtNode& s, const ir::Stmt& step) {
  llvm::Value* n = emit(s.extent);
  const BufferNode* acc = step->buffer.get();
  llvm::AllocaInst* slot = scalar_.at(acc);
  llvm::Type* type = slot->getAllocatedType();
  auto* vtype = llvm::FixedVectorType::get(type, kLanes);
  llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
  llvm::AllocaInst* lanes = entry.CreateAlloca(vtype, nullptr, acc->name + ".lanes");
  b_.CreateStore(b_.CreateVectorSplat(kLanes, b_.CreateLoad(type, slot)), lanes);
  bool max = step->value->binop == BinOp::Max;
  auto id = max ? llvm::Intrinsic::maxnum : llvm::Intrinsic::minnum;
  const ir::Var& jv = s.var;
  llvm::Value* blocked = b_.CreateSub(n, b_.CreateSRem(n, b_.getInt64(kLanes)));
  strided_loop(jv->name + ".lanes", b_.getInt64(0), blocked, kLanes, [&](llvm::Value* j) {
    llvm::Value* xs = llvm::PoisonValue::get(vtype);
    for (int64_t u = 0; u < kLanes; ++u) {
      vars_[jv.get()] = u == 0 ? j : b_.CreateAdd(j, b_.getInt64(u), "", true, true);
      xs = b_.CreateInsertElement(xs, emit(step->value->args[1]), b_.getInt64(u));
    }
    b_.CreateStore(b_.CreateBinaryIntrinsic(id, b_.CreateLoad(vtype, lanes), xs), lanes);
  });
  vars_.erase(jv.get());
  // llvm.vector.reduce.fmax/fmin without no-NaNs flags: maxnum/minnum semantics.
  llvm::Value* v = b_.CreateLoad(vtype, lanes);
  b_.CreateStore(max ? b_.CreateFPMaxReduce(v) : b_.CreateFPMinReduce(v), slot);
  emit_loop(s, blocked, n);
}

}  // namespace dccc::backend::llvmgen
