// FuncEmitter: reduction nests (ir/flat_reduction.h) emitted for the CPU's
// vector units -- interchanged, or in lane blocks held in vector registers
// (backend/llvm/func_emitter.h). Unroll-and-jam is ir/jam_reductions.h.
#include "backend/llvm/func_emitter.h"

#include <llvm/IR/Intrinsics.h>

namespace dccc::backend::llvmgen {

// ---- Reduction interchange ------------------------------------------
//
// `for d { acc = init; for j { acc = acc op x(j, d) }; t[.., d] = f(acc) }`
// reads x with the reduction index j innermost. When x reads some buffer
// with unit stride in d but a larger stride in j (`p[i, h, j] * v[j, h, d]`:
// v's rows are H * D apart) and nothing the other way round, the loops are
// swapped, with one accumulator per d in a stack array:
//   for d { tmp[d] = init }; for j { for d { tmp[d] = tmp[d] op x(j, d) } };
//   for d { t[.., d] = f(tmp[d]) }
// so the inner loop walks memory contiguously and vectorizes; each pass
// over the lanes takes kJam steps of j, so tmp is loaded and stored once
// per kJam terms. Each tmp[d] sees the terms in the same j order as acc
// did. Taken at run time when the d extent is at most kInterchangeMax
// (the stack array's size); the original loop otherwise.
//
// The body may also hold several accumulators (a tile of rows from
// ir/tile_contractions.h: `acc_u = init_u` for every u, one j loop with
// `acc_u = acc_u op x_u` for every u, then `t[..] = f_u(acc_u)` for every
// u): each gets its own stack array, and the inner loop over d updates all
// of them, so a load shared by the x_u (v[j, h, d]) is read once for all.
constexpr int64_t kInterchangeMax = 1024;

// The lane loops of an interchanged nest run over a run-time length
// (mha's key positions) that is rarely a multiple of the vector width,
// and LLVM finishes them with up to 7 scalar iterations, each as costly
// as a vector one. When every load the lane variable moves reads a local
// tensor whose rows are storage-padded to a multiple of kLanePad (`pad 16`
// on its last dimension: the transposed copies of ir/transpose_operands.h)
// at offset `base + lane` exactly, the init and pass loops run to the
// length rounded up to kLanePad instead: the extra lanes read the row's
// own padding (in bounds; written by no one), their values land in the
// stack arrays past the length, and the fin loop, which stores the
// results, still stops at the length. kInterchangeMax is a multiple of
// kLanePad, so the padded lanes fit the arrays.
constexpr int64_t kLanePad = 16;
static_assert(kInterchangeMax % kLanePad == 0);

// Steps of j per pass over the lanes of an interchanged nest.
constexpr int64_t kJam = 4;

bool FuncEmitter::loads_buffer(const ir::Expr& e, const BufferNode* b) {
  if (!e) return false;
  if (e->kind == ExprKind::Load && e->buffer.get() == b) return true;
  for (const auto& a : e->args)
    if (loads_buffer(a, b)) return true;
  return false;
}

/// Whether the init and pass loops of `plan` may run past the lanes' extent.
bool FuncEmitter::lanes_may_pad(const ir::StmtNode& s, const ir::FlatReduction& plan) {
  const ir::Var& v = s.var;
  auto bare = [&](const ir::Expr& e) { return e->kind == ExprKind::VarRef && e->var == v; };
  bool ok = true;
  std::function<void(const ir::Expr&)> look = [&](const ir::Expr& e) {
    if (!e) return;
    if (e->kind == ExprKind::Load && !e->args.empty() && ir::mentions(e->args[0], v)) {
      const BufferNode* b = e->buffer.get();
      const ir::Expr& off = e->args[0];
      bool row = e->flat && b->kind == BufferKind::Local && !b->pad.empty() && b->pad.back() % kLanePad == 0 &&
                 off->kind == ExprKind::Binary && off->binop == BinOp::Add &&
                 ((bare(off->args[1]) && !ir::mentions(off->args[0], v)) ||
                  (bare(off->args[0]) && !ir::mentions(off->args[1], v)));
      if (!row) ok = false;
    }
    for (const auto& a : e->args) look(a);
  };
  for (const auto& init : plan.inits) look(init->value);
  for (const auto& step : plan.steps) look(step->value);
  look(plan.red->extent);
  return ok;
}

void FuncEmitter::emit_interchanged(const ir::StmtNode& s, const ir::FlatReduction& plan) {
  llvm::Value* n = emit(s.extent);
  size_t k = plan.inits.size();
  std::vector<llvm::AllocaInst*> slots, tmps;
  llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
  for (const auto& init : plan.inits) {
    const BufferNode* acc = init->buffer.get();
    slots.push_back(scalar_.at(acc));
    llvm::AllocaInst* tmp = entry.CreateAlloca(llvm::ArrayType::get(slots.back()->getAllocatedType(), kInterchangeMax),
                                               nullptr, acc->name + ".lanes");
    tmp->setAlignment(llvm::Align(64));
    tmps.push_back(tmp);
  }

  auto* swapped = llvm::BasicBlock::Create(ctx_, s.var->name + ".swapped", fn_);
  auto* original = llvm::BasicBlock::Create(ctx_, s.var->name + ".original", fn_);
  auto* done = llvm::BasicBlock::Create(ctx_, s.var->name + ".done", fn_);
  b_.CreateCondBr(b_.CreateICmpSLE(n, b_.getInt64(kInterchangeMax)), swapped, original);

  b_.SetInsertPoint(original);
  emit_loop(s, b_.getInt64(0), n);
  b_.CreateBr(done);

  b_.SetInsertPoint(swapped);
  auto lane = [&](size_t u, llvm::Value* d) {
    return b_.CreateInBoundsGEP(slots[u]->getAllocatedType(), tmps[u], {d});
  };
  auto load_lanes = [&](llvm::Value* d) {
    for (size_t u = 0; u < k; ++u) b_.CreateStore(b_.CreateLoad(slots[u]->getAllocatedType(), lane(u, d)), slots[u]);
  };
  auto store_lanes = [&](llvm::Value* d) {
    for (size_t u = 0; u < k; ++u) b_.CreateStore(b_.CreateLoad(slots[u]->getAllocatedType(), slots[u]), lane(u, d));
  };
  const ir::Var& dv = s.var;
  llvm::Value* lanes_n = n;
  if (lanes_may_pad(s, plan))
    lanes_n = b_.CreateAnd(b_.CreateAdd(n, b_.getInt64(kLanePad - 1)), b_.getInt64(-kLanePad));
  counted_loop(dv->name + ".init", lanes_n, [&](llvm::Value* d) {
    vars_[dv.get()] = d;
    for (const auto& init : plan.inits) emit(init);
    store_lanes(d);
    vars_.erase(dv.get());
  });
  llvm::Value* m = emit(plan.red->extent);
  const ir::Var& jv = plan.red->var;
  // kJam steps of j per pass over the lanes (in j order), then the rest.
  auto pass = [&](llvm::Value* j, int64_t steps) {
    counted_loop(dv->name + ".lane", lanes_n, [&](llvm::Value* d) {
      vars_[dv.get()] = d;
      load_lanes(d);
      for (int64_t w = 0; w < steps; ++w) {
        vars_[jv.get()] = w == 0 ? j : b_.CreateAdd(j, b_.getInt64(w), "", true, true);
        for (const auto& step : plan.steps) emit(step);
      }
      store_lanes(d);
      vars_.erase(dv.get());
    });
    vars_.erase(jv.get());
  };
  llvm::Value* blocked = b_.CreateSub(m, b_.CreateSRem(m, b_.getInt64(kJam)));
  strided_loop(jv->name + ".jam", b_.getInt64(0), blocked, kJam, [&](llvm::Value* j) { pass(j, kJam); });
  strided_loop(jv->name, blocked, m, 1, [&](llvm::Value* j) { pass(j, 1); });
  counted_loop(dv->name + ".fin", n, [&](llvm::Value* d) {
    vars_[dv.get()] = d;
    load_lanes(d);
    for (const auto& fin : plan.fins) emit(fin);
    vars_.erase(dv.get());
  });
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

// ---- Lane blocks: the interchanged nest in vector registers -------------
//
// The same shape as the interchange (`for d { acc_u = init_u; for j {
// acc_u = acc_u op x_u(j, d) }; t_u[.., d] = f_u(acc_u) }`, d the lanes),
// emitted directly as vector code when every expression that moves with d
// is float arithmetic on loads contiguous in d: the lanes are taken in
// blocks of kLaneVecs vectors of W = 64 bytes / element size, each block
// holding its k * kLaneVecs accumulators in registers through the whole j
// loop:
//   for d0 in steps of W * R { acc_u_r = init_u (vector); for j {
//     acc_u_r = acc_u_r op x_u(j, d0 + r * W + lane) }; t_u[.., d0 + r * W + lane] = f_u(acc_u_r) }
// then the whole vectors left one at a time, and the last n % W lanes with
// masked loads and stores. Where the interchanged loop loads and stores each accumulator
// from a stack array once per kJam terms, this one touches memory only for
// the operands (q k^T: a vector of kᵀ and a broadcast of q per row and
// term). Each lane still sees its terms in j order; `acc + a * b` steps
// are fused multiply-adds, as in reduction_step.
constexpr int64_t kMaxLaneAccs = 8;

/// Whether `e` moves with the lane variable or reads an accumulator.
bool FuncEmitter::loads_any(const ir::Expr& e, const std::vector<const BufferNode*>& bufs) {
  for (const BufferNode* b : bufs)
    if (loads_buffer(e, b)) return true;
  return false;
}

bool FuncEmitter::lane_dependent(const ir::Expr& e, const ir::Var& lane, const std::vector<const BufferNode*>& accs) {
  return ir::mentions(e, lane) || loads_any(e, accs);
}

/// Whether vector_emit can emit `e` as a vector of `t`.
bool FuncEmitter::vectorizable(const ir::Expr& e, Scalar t, const ir::Var& lane, const std::vector<const BufferNode*>& accs) {
  if (!lane_dependent(e, lane, accs)) return is_float(e->type) || e->type == t;
  if (e->type != t) return false;
  switch (e->kind) {
    case ExprKind::Load:
      if (e->args.empty()) return std::find(accs.begin(), accs.end(), e->buffer.get()) != accs.end();
      return e->flat && e->buffer->type == t && ir::stride(e->args[0], lane) == ir::Stride::One &&
             !loads_any(e->args[0], accs);
    case ExprKind::Unary:
      return (e->unop == UnOp::Neg || e->unop == UnOp::Abs || e->unop == UnOp::Sqrt) &&
             vectorizable(e->args[0], t, lane, accs);
    case ExprKind::Select:
      // One condition for every lane (the online-reductions pass's store of
      // a first block that may be the only one), both sides vectors.
      return !lane_dependent(e->args[0], lane, accs) && vectorizable(e->args[1], t, lane, accs) &&
             vectorizable(e->args[2], t, lane, accs);
    case ExprKind::Binary:
      switch (e->binop) {
        case BinOp::Add: case BinOp::Sub: case BinOp::Mul: case BinOp::Div: case BinOp::Max: case BinOp::Min:
          return vectorizable(e->args[0], t, lane, accs) && vectorizable(e->args[1], t, lane, accs);
        default: return false;
      }
    default: return false;
  }
}

bool FuncEmitter::lane_blocks_pay(const ir::StmtNode& s, const ir::FlatReduction& plan) {
  Scalar t = plan.inits[0]->buffer->type;
  if (t != Scalar::F32 && t != Scalar::F64) return false;
  std::vector<const BufferNode*> accs;
  for (const auto& init : plan.inits) accs.push_back(init->buffer.get());
  for (size_t u = 0; u < plan.inits.size(); ++u) {
    if (accs[u]->type != t || plan.inits[u]->value->type != t) return false;
    if (!vectorizable(plan.inits[u]->value, t, s.var, accs)) return false;
    const ir::Expr& v = plan.steps[u]->value;
    if (v->type != t || (v->binop != BinOp::Add && v->binop != BinOp::Mul && v->binop != BinOp::Max &&
                         v->binop != BinOp::Min))
      return false;
    if (!vectorizable(v->args[1], t, s.var, accs)) return false;
    const ir::Stmt& fin = plan.fins[u];
    if (!fin->flat || fin->buffer->type != t || fin->value->type != t || fin->args.size() != 1) return false;
    if (ir::stride(fin->args[0], s.var) != ir::Stride::One || ir::mentions(fin->args[0], plan.red->var)) return false;
    if (!vectorizable(fin->value, t, s.var, accs)) return false;
  }
  return true;
}

llvm::Value* FuncEmitter::vector_emit(const ir::Expr& e, const LaneBlock& lb) {
  unsigned w = static_cast<unsigned>(lb.vtype->getNumElements());
  if (!lane_dependent(e, *lb.lane, lb.accs)) {
    llvm::Value* v = emit(e);
    return b_.CreateVectorSplat(w, cast(v, e->type, lb.vtype->getElementType()->isDoubleTy() ? Scalar::F64 : Scalar::F32));
  }
  switch (e->kind) {
    case ExprKind::Load: {
      if (e->args.empty()) return b_.CreateLoad(lb.vtype, lb.slots.at(e->buffer.get()));
      llvm::Value* addr = address(e->buffer.get(), e->args, e->flat);
      llvm::Align align(mod_.getDataLayout().getTypeAllocSize(lb.vtype->getElementType()));
      llvm::Instruction* load =
          lb.mask ? static_cast<llvm::Instruction*>(b_.CreateMaskedLoad(lb.vtype, addr, align, lb.mask,
                                                                         llvm::Constant::getNullValue(lb.vtype)))
                  : b_.CreateAlignedLoad(lb.vtype, addr, align);
      tag(load, e->buffer.get());
      return load;
    }
    case ExprKind::Select: {
      llvm::Value* c = emit(e->args[0]);
      return b_.CreateSelect(c, vector_emit(e->args[1], lb), vector_emit(e->args[2], lb));
    }
    case ExprKind::Unary: {
      llvm::Value* x = vector_emit(e->args[0], lb);
      if (e->unop == UnOp::Neg) return b_.CreateFNeg(x);
      auto id = e->unop == UnOp::Abs ? llvm::Intrinsic::fabs : llvm::Intrinsic::sqrt;
      return b_.CreateCall(llvm::Intrinsic::getDeclaration(&mod_, id, {lb.vtype}), {x});
    }
    case ExprKind::Binary: {
      llvm::Value* a = vector_emit(e->args[0], lb);
      llvm::Value* c = vector_emit(e->args[1], lb);
      return float_op(e->binop, a, c);
    }
    default: throw EmitError{"lane block: expression not vectorizable"};
  }
}

/// `acc op x` for vectors; `acc + a * b` as llvm.fmuladd.
llvm::Value* FuncEmitter::vector_step(const ir::Expr& v, llvm::Value* acc, const LaneBlock& lb) {
  const ir::Expr& x = v->args[1];
  if (v->binop == BinOp::Add && x->kind == ExprKind::Binary && x->binop == BinOp::Mul && x->type == v->type)
    return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {lb.vtype},
                              {vector_emit(x->args[0], lb), vector_emit(x->args[1], lb), acc});
  return float_op(v->binop, acc, vector_emit(x, lb));
}

void FuncEmitter::emit_lane_blocks(const ir::StmtNode& s, const ir::FlatReduction& plan) {
  Scalar t = plan.inits[0]->buffer->type;
  llvm::Type* et = value_type(t);
  const int64_t w = t == Scalar::F64 ? 8 : 16;
  const size_t k = plan.inits.size();
  const int64_t vecs = std::max<int64_t>(1, std::min<int64_t>(4, kMaxLaneAccs / static_cast<int64_t>(k)));
  auto* vtype = llvm::FixedVectorType::get(et, static_cast<unsigned>(w));
  LaneBlock lb{&s.var, {}, {}, vtype, nullptr};
  for (const auto& init : plan.inits) lb.accs.push_back(init->buffer.get());
  llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
  // slots[r][u]: the accumulators of vector r of a block.
  std::vector<std::vector<llvm::AllocaInst*>> slots(static_cast<size_t>(vecs));
  for (auto& row : slots)
    for (const BufferNode* a : lb.accs) row.push_back(entry.CreateAlloca(vtype, nullptr, a->name + ".vec"));
  llvm::Value* n = emit(s.extent);
  llvm::Value* m = emit(plan.red->extent);
  const ir::Var& dv = s.var;
  const ir::Var& jv = plan.red->var;
  // One block of `count` vectors starting at lane d0.
  auto block = [&](llvm::Value* d0, int64_t count) {
    auto each = [&](const std::function<void(size_t)>& fn) {
      for (int64_t r = 0; r < count; ++r) {
        vars_[dv.get()] = r == 0 ? d0 : b_.CreateAdd(d0, b_.getInt64(r * w), "", true, true);
        for (size_t u = 0; u < k; ++u) lb.slots[lb.accs[u]] = slots[static_cast<size_t>(r)][u];
        for (size_t u = 0; u < k; ++u) fn(u);
      }
    };
    each([&](size_t u) { b_.CreateStore(vector_emit(plan.inits[u]->value, lb), lb.slots[lb.accs[u]]); });
    counted_loop(jv->name + ".vec", m, [&](llvm::Value* j) {
      vars_[jv.get()] = j;
      each([&](size_t u) {
        llvm::AllocaInst* slot = lb.slots[lb.accs[u]];
        b_.CreateStore(vector_step(plan.steps[u]->value, b_.CreateLoad(vtype, slot), lb), slot);
      });
      vars_.erase(jv.get());
    });
    each([&](size_t u) {
      const ir::Stmt& fin = plan.fins[u];
      llvm::Value* v = vector_emit(fin->value, lb);
      llvm::Value* addr = address(fin->buffer.get(), fin->args, fin->flat);
      llvm::Align align(mod_.getDataLayout().getTypeAllocSize(et));
      tag(lb.mask ? static_cast<llvm::Instruction*>(b_.CreateMaskedStore(v, addr, align, lb.mask))
                  : b_.CreateAlignedStore(v, addr, align),
          fin->buffer.get());
    });
    vars_.erase(dv.get());
  };
  const int64_t span = w * vecs;
  llvm::Value* full = b_.CreateSub(n, b_.CreateSRem(n, b_.getInt64(span)));
  strided_loop(dv->name + ".blk", b_.getInt64(0), full, span, [&](llvm::Value* d0) { block(d0, vecs); });
  // The whole vectors left, one at a time without a mask (on targets
  // without masked loads a masked one is a branch per lane), then the last
  // n % W lanes masked.
  llvm::Value* whole = b_.CreateSub(n, b_.CreateSRem(n, b_.getInt64(w)));
  if (vecs > 1) strided_loop(dv->name + ".one", full, whole, w, [&](llvm::Value* d0) { block(d0, 1); });
  else whole = full;
  std::vector<llvm::Constant*> iota;
  for (int64_t l = 0; l < w; ++l) iota.push_back(b_.getInt64(static_cast<uint64_t>(l)));
  llvm::Value* lanes = llvm::ConstantVector::get(iota);
  strided_loop(dv->name + ".tail", whole, n, w, [&](llvm::Value* d0) {
    lb.mask = b_.CreateICmpSLT(b_.CreateAdd(b_.CreateVectorSplat(static_cast<unsigned>(w), d0), lanes),
                               b_.CreateVectorSplat(static_cast<unsigned>(w), n));
    block(d0, 1);
    lb.mask = nullptr;
  });
}

}  // namespace dccc::backend::llvmgen
