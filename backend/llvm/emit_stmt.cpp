// FuncEmitter: statements, plain loops and float reduction steps; a loop of a
// shape reduction_nests.cpp or vector_idioms.cpp knows goes there
// (backend/llvm/func_emitter.h).
#include "backend/llvm/func_emitter.h"

#include <llvm/IR/Intrinsics.h>

namespace dccc::backend::llvmgen {

void FuncEmitter::emit(const ir::Stmt& s) {
  if (!s) return;
  if (dbg_ && s->kind != StmtKind::Seq) {
    // -g: the statement's `.toy` line (a loop: its first statement's).
    if (SourceRange at = ir::statement_location(s); at.valid())
      b_.SetCurrentDebugLocation(llvm::DILocation::get(ctx_, at.line, at.col, dbg_->scope(sp_, at.file)));
  }
  switch (s->kind) {
    case StmtKind::Seq:
      for (const auto& c : s->body) emit(c);
      return;
    case StmtKind::For: {
      // A Parallel loop inside an outlined body (none today) runs serially.
      if (s->loop == ir::LoopKind::Parallel && !message_) {
        emit_parallel(*s);
        return;
      }
      if (auto plan = ir::match_flat_reduction(*s)) {
        if (ir::interchange_pays(*s, *plan)) {
          if (lane_blocks_pay(*s, *plan)) emit_lane_blocks(*s, *plan);
          else emit_interchanged(*s, *plan);
        }
        else emit_loop(*s, b_.getInt64(0), emit(s->extent));
        return;
      }
      if (ir::Stmt step = minmax_reduction(*s)) {
        emit_minmax_lanes(*s, step);
        return;
      }
      if (const ir::StmtNode* st = transpose_tile_store(*s)) {
        emit_transpose_tiles(*s, *st);
        return;
      }
      llvm::Value* n = emit(s->extent);
      emit_loop(*s, b_.getInt64(0), n);
      return;
    }
    case StmtKind::Store: {
      llvm::Value* v = reduction_step(*s);
      // Offsets (aux arrays) are summed with overflow checks: lengths the
      // function computes may be large enough to wrap them.
      checked_ = s->buffer->kind == BufferKind::Aux;
      if (!v) v = emit(s->value);
      checked_ = false;
      v = cast(v, s->value->type, s->buffer->type);
      llvm::Value* addr = address(s->buffer.get(), s->args, s->flat);
      tag(b_.CreateStore(to_mem(v, s->buffer->type), addr), s->buffer.get());
      return;
    }
    case StmtKind::IfThenElse: {
      llvm::Value* c = emit(s->value);
      auto* then_bb = llvm::BasicBlock::Create(ctx_, "then", fn_);
      auto* else_bb = llvm::BasicBlock::Create(ctx_, "else", fn_);
      auto* done = llvm::BasicBlock::Create(ctx_, "endif", fn_);
      b_.CreateCondBr(c, then_bb, else_bb);
      b_.SetInsertPoint(then_bb);
      emit(s->body[0]);
      b_.CreateBr(done);
      b_.SetInsertPoint(else_bb);
      if (s->body.size() > 1) emit(s->body[1]);
      b_.CreateBr(done);
      b_.SetInsertPoint(done);
      return;
    }
    case StmtKind::Assert:
      if (s->length_check) fail_negative_length(*s);
      else fail_if(b_.CreateNot(emit(s->value)), kInvalidArgument, "`where` constraint violated: " + s->text);
      return;
    case StmtKind::Print: {
      if (s->buffer) throw EmitError{"print of a whole buffer was not expanded"};
      auto* ptr = llvm::PointerType::getUnqual(ctx_);
      if (!s->text.empty()) {
        auto f = mod_.getOrInsertFunction("dccc_print_text", llvm::FunctionType::get(b_.getVoidTy(), {ptr}, false));
        b_.CreateCall(f, {b_.CreateGlobalStringPtr(s->text)});
      }
      for (size_t k = 0; k < s->args.size(); ++k) {
        if (k) {
          auto f = mod_.getOrInsertFunction("dccc_print_text", llvm::FunctionType::get(b_.getVoidTy(), {ptr}, false));
          b_.CreateCall(f, {b_.CreateGlobalStringPtr(" ")});
        }
        Scalar t = s->args[k]->type;
        llvm::Value* v = emit(s->args[k]);
        const char* name = "dccc_print_i64";
        llvm::Type* ty = b_.getInt64Ty();
        if (t == Scalar::F64) name = "dccc_print_f64", ty = b_.getDoubleTy();
        else if (is_float(t)) name = "dccc_print_f32", ty = b_.getFloatTy(), v = cast(v, t, Scalar::F32);
        else if (t == Scalar::Bool) name = "dccc_print_bool", ty = b_.getInt8Ty(), v = b_.CreateZExt(v, ty);
        else v = b_.CreateSExt(v, ty);
        auto f = mod_.getOrInsertFunction(name, llvm::FunctionType::get(b_.getVoidTy(), {ty}, false));
        b_.CreateCall(f, {v});
      }
      if (s->newline) {
        auto f = mod_.getOrInsertFunction("dccc_print_text", llvm::FunctionType::get(b_.getVoidTy(), {ptr}, false));
        b_.CreateCall(f, {b_.CreateGlobalStringPtr("\n")});
      }
      return;
    }
  }
}

/// The step `acc = acc op x` of a float `reduce` (an accumulator is a
/// Scalar buffer; ir/lower.cpp): emitted with the `reassoc` flag, which
/// lets the loop vectorizer split the sum into vector lanes, and `acc +
/// p * q` as a fused multiply-add. So compiled
/// float reductions may round differently from the interpreter's
/// left-to-right order (docs/language.md). Null when `s` is not such a step.
llvm::Value* FuncEmitter::reduction_step(const ir::StmtNode& s) {
  const ir::Expr& v = s.value;
  if (!scalar_.count(s.buffer.get()) || v->kind != ExprKind::Binary || !is_float(v->type) || s.buffer->type != v->type)
    return nullptr;
  if (v->binop != BinOp::Add && v->binop != BinOp::Mul && v->binop != BinOp::Max && v->binop != BinOp::Min)
    return nullptr;
  const ir::Expr& acc = v->args[0];
  if (acc->kind != ExprKind::Load || acc->buffer != s.buffer || !acc->args.empty()) return nullptr;
  if (v->type == Scalar::BF16 || v->type == Scalar::F16) return nullptr;  // accumulators are f32/f64
  llvm::Value* a = emit(acc);
  const ir::Expr& xe = v->args[1];
  if (v->binop == BinOp::Add && xe->kind == ExprKind::Binary && xe->binop == BinOp::Mul && xe->type == v->type) {
    // acc + p * q: one fused multiply-add (llvm.fmuladd, rounded once where
    // the CPU has an FMA), still a reassociable reduction step.
    llvm::Value* p = emit(xe->args[0]);
    llvm::Value* q = emit(xe->args[1]);
    llvm::IRBuilder<>::FastMathFlagGuard guard(b_);
    llvm::FastMathFlags fmf;
    fmf.setAllowReassoc();
    fmf.setAllowContract();
    b_.setFastMathFlags(fmf);
    return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {a->getType()}, {p, q, a});
  }
  llvm::Value* x = emit(xe);
  llvm::IRBuilder<>::FastMathFlagGuard guard(b_);
  llvm::FastMathFlags fmf;
  fmf.setAllowReassoc();
  b_.setFastMathFlags(fmf);
  return float_op(v->binop, a, x);
}

/// `for var in [begin, end) { body }` at the insert point.
void FuncEmitter::emit_loop(const ir::StmtNode& s, llvm::Value* begin, llvm::Value* n) {
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* head = llvm::BasicBlock::Create(ctx_, s.var->name + ".loop", fn_);
  auto* body = llvm::BasicBlock::Create(ctx_, s.var->name + ".body", fn_);
  auto* exit = llvm::BasicBlock::Create(ctx_, s.var->name + ".exit", fn_);
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2, s.var->name);
  i->addIncoming(begin, pre);
  b_.CreateCondBr(b_.CreateICmpSLT(i, n), body, exit);
  b_.SetInsertPoint(body);
  vars_[s.var.get()] = i;
  emit(s.body[0]);
  vars_.erase(s.var.get());
  llvm::Value* next = b_.CreateAdd(i, b_.getInt64(1), "", true, true);
  i->addIncoming(next, b_.GetInsertBlock());
  b_.CreateBr(head);
  b_.SetInsertPoint(exit);
}

/// `for var in [0, n) { fn(var) }`.
void FuncEmitter::counted_loop(const std::string& name, llvm::Value* n, const std::function<void(llvm::Value*)>& fn) {
  strided_loop(name, b_.getInt64(0), n, 1, fn);
}

/// `for (var = begin; var < end; var += step) { fn(var) }`.
void FuncEmitter::strided_loop(const std::string& name, llvm::Value* begin, llvm::Value* end, int64_t step,
                               const std::function<void(llvm::Value*)>& fn) {
  llvm::Value* n = end;
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* head = llvm::BasicBlock::Create(ctx_, name + ".loop", fn_);
  auto* body = llvm::BasicBlock::Create(ctx_, name + ".body", fn_);
  auto* exit = llvm::BasicBlock::Create(ctx_, name + ".exit", fn_);
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2, name);
  i->addIncoming(begin, pre);
  b_.CreateCondBr(b_.CreateICmpSLT(i, n), body, exit);
  b_.SetInsertPoint(body);
  fn(i);
  llvm::Value* next = b_.CreateAdd(i, b_.getInt64(step), "", true, true);
  i->addIncoming(next, b_.GetInsertBlock());
  b_.CreateBr(head);
  b_.SetInsertPoint(exit);
}

}  // namespace dccc::backend::llvmgen
