// FuncEmitter: the function itself -- its signature, buffers and prelude, locals allocated
// before first use, error exits and the cleanup that frees them (backend/llvm/func_emitter.h).
#include "backend/llvm/func_emitter.h"

#include <set>

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>

namespace dccc::backend::llvmgen {

void FuncEmitter::run() {
  auto* i32 = llvm::Type::getInt32Ty(ctx_);
  auto* ptr = llvm::PointerType::getUnqual(ctx_);
  auto* type = llvm::FunctionType::get(i32, {ptr, ptr}, false);
  fn_ = llvm::Function::Create(type, llvm::Function::ExternalLinkage, f_.name + "__kernel", mod_);
  fn_->getArg(0)->setName("sizes");
  fn_->getArg(1)->setName("buffers");
  if (dbg_) {
    // -g: everything before the first statement is the declaration's line.
    int line = f_.at.valid() ? f_.at.line : 1;
    sp_ = dbg_->subprogram(fn_, line);
    b_.SetCurrentDebugLocation(llvm::DILocation::get(ctx_, line, f_.at.valid() ? f_.at.col : 0, sp_));
  }
  auto* entry = llvm::BasicBlock::Create(ctx_, "entry", fn_);
  cleanup_ = llvm::BasicBlock::Create(ctx_, "cleanup", fn_);
  b_.SetInsertPoint(entry);
  status_ = b_.CreateAlloca(i32, nullptr, "status");
  b_.CreateStore(b_.getInt32(0), status_);

  for (size_t i = 0; i < f_.sizes.size(); ++i) {
    llvm::Value* p = b_.CreateConstInBoundsGEP1_64(b_.getInt64Ty(), fn_->getArg(0), i);
    sizes_[f_.sizes[i].name] = b_.CreateLoad(b_.getInt64Ty(), p, f_.sizes[i].name);
  }
  size_t slot = 0;
  for (const auto& buf : f_.buffers) {
    if (buf->kind == BufferKind::Input || buf->kind == BufferKind::Output) {
      if (buf->dims.empty() && buf->kind == BufferKind::Output) {
        // A scalar result: written through its pointer.
      }
      llvm::Value* p = b_.CreateConstInBoundsGEP1_64(ptr, fn_->getArg(1), slot++);
      base_[buf.get()] = b_.CreateLoad(ptr, p, buf->name);
    } else if (buf->dims.empty()) {
      scalar_[buf.get()] = b_.CreateAlloca(mem_type(buf->type), nullptr, buf->name);
    } else {
      // Locals and aux arrays: a slot holding the pointer, allocated before first use.
      auto* s = b_.CreateAlloca(ptr, nullptr, buf->name + ".slot");
      b_.CreateStore(llvm::ConstantPointerNull::get(ptr), s);
      slot_[buf.get()] = s;
    }
  }
  // Aux arrays for the prelude, then the prelude, then the body, allocating
  // locals just before the first top-level statement that touches them.
  // A caller that has the aux arrays already (the C wrapper, from the
  // prelude cache) passes them after the inputs and outputs; NULL there,
  // or a NULL `buffers`, makes the kernel compute them.
  std::vector<const BufferNode*> aux;
  for (const auto& buf : ir::prelude_aux(f_)) aux.push_back(buf.get());
  llvm::AllocaInst* borrowed = b_.CreateAlloca(b_.getInt1Ty(), nullptr, "aux.borrowed");
  b_.CreateStore(b_.getFalse(), borrowed);
  if (f_.prelude && !aux.empty()) {
    auto* check = llvm::BasicBlock::Create(ctx_, "aux.check", fn_);
    auto* given = llvm::BasicBlock::Create(ctx_, "aux.given", fn_);
    auto* compute = llvm::BasicBlock::Create(ctx_, "prelude", fn_);
    auto* done = llvm::BasicBlock::Create(ctx_, "prelude.done", fn_);
    b_.CreateCondBr(b_.CreateIsNull(fn_->getArg(1)), compute, check);
    b_.SetInsertPoint(check);
    llvm::Value* first = b_.CreateLoad(ptr, b_.CreateConstInBoundsGEP1_64(ptr, fn_->getArg(1), slot));
    b_.CreateCondBr(b_.CreateIsNull(first), compute, given);
    b_.SetInsertPoint(given);
    for (size_t k = 0; k < aux.size(); ++k)
      b_.CreateStore(b_.CreateLoad(ptr, b_.CreateConstInBoundsGEP1_64(ptr, fn_->getArg(1), slot + k)), slot_.at(aux[k]));
    b_.CreateStore(b_.getTrue(), borrowed);
    b_.CreateBr(done);
    b_.SetInsertPoint(compute);
    emit_with_allocations(f_.prelude);
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
    for (const BufferNode* a : aux) allocated_.insert(a);
  } else if (f_.prelude) {
    emit_with_allocations(f_.prelude);
  }
  emit_with_allocations(f_.body);
  b_.CreateBr(cleanup_);

  b_.SetInsertPoint(cleanup_);
  auto free_fn = mod_.getOrInsertFunction("dcc_free", llvm::FunctionType::get(b_.getVoidTy(), {ptr}, false));
  llvm::Value* keep = b_.CreateLoad(b_.getInt1Ty(), borrowed);
  // Borrowed arrays are the prelude's (the caller's cache holds them); an
  // aux array the body fills (offsets of lengths the function computes) is
  // the kernel's own and freed here either way.
  const std::set<const BufferNode*> prelude_aux(aux.begin(), aux.end());
  for (const auto& [buf, s] : in_order(slot_)) {
    llvm::Value* p = b_.CreateLoad(ptr, s);
    if (prelude_aux.count(buf)) p = b_.CreateSelect(keep, llvm::ConstantPointerNull::get(ptr), p);
    b_.CreateCall(free_fn, {p});
  }
  b_.CreateRet(b_.CreateLoad(i32, status_));
}

void FuncEmitter::emit_with_allocations(const ir::Stmt& s) {
  std::vector<ir::Stmt> items = s->kind == StmtKind::Seq ? s->body : std::vector<ir::Stmt>{s};
  for (const auto& item : items) {
    std::vector<const BufferNode*> used;
    collect_buffers(item, used);
    for (const BufferNode* buf : used) allocate(buf);
    emit(item);
  }
}

void FuncEmitter::collect_buffers(const ir::Stmt& s, std::vector<const BufferNode*>& out) {
  std::function<void(const ir::Expr&)> ex = [&](const ir::Expr& e) {
    if (!e) return;
    if (e->kind == ExprKind::Load) add_buffer(e->buffer.get(), out, ex);
    for (const auto& a : e->args) ex(a);
  };
  std::function<void(const ir::Stmt&)> st = [&](const ir::Stmt& x) {
    if (!x) return;
    ex(x->extent);
    ex(x->value);
    for (const auto& a : x->args) ex(a);
    if (x->buffer) add_buffer(x->buffer.get(), out, ex);
    for (const auto& c : x->body) st(c);
  };
  st(s);
}

void FuncEmitter::add_buffer(const BufferNode* b, std::vector<const BufferNode*>& out,
                             const std::function<void(const ir::Expr&)>& ex) {
  if (!slot_.count(b) || allocated_.count(b)) return;
  if (std::find(out.begin(), out.end(), b) != out.end()) return;
  if (b->total) ex(b->total);  // a total may read aux arrays: allocate those first
  out.push_back(b);
}

/// Allocates a local or aux buffer, zero-filled unless its first
/// statement stores every element (BufferNode::zero_fill): checks the
/// total for negative values and the byte size for overflow.
void FuncEmitter::allocate(const BufferNode* buf) {
  if (allocated_.count(buf)) return;
  allocated_.insert(buf);
  auto* ptr = llvm::PointerType::getUnqual(ctx_);
  llvm::Value* total = emit(buf->total);
  fail_if(b_.CreateICmpSLT(total, b_.getInt64(0)), kInvalidArgument,
          "the extents of `" + buf->name + "` give a negative size");
  uint64_t elem = mod_.getDataLayout().getTypeAllocSize(mem_type(buf->type));
  auto* mul = llvm::Intrinsic::getDeclaration(&mod_, llvm::Intrinsic::umul_with_overflow, {b_.getInt64Ty()});
  llvm::Value* r = b_.CreateCall(mul, {total, b_.getInt64(elem)});
  fail_if(b_.CreateExtractValue(r, 1), kOverflow, "the size of `" + buf->name + "` overflows");
  llvm::Value* bytes = b_.CreateExtractValue(r, 0);
  // At least one byte, so that an empty buffer is still a valid pointer.
  bytes = b_.CreateSelect(b_.CreateICmpEQ(bytes, b_.getInt64(0)), b_.getInt64(1), bytes);
  auto alloc = mod_.getOrInsertFunction("dcc_alloc", llvm::FunctionType::get(ptr, {b_.getInt64Ty()}, false));
  llvm::Value* p = b_.CreateCall(alloc, {bytes});
  fail_if(b_.CreateIsNull(p), kOutOfMemory, "cannot allocate `" + buf->name + "`");
  if (buf->zero_fill) {
    b_.CreateMemSet(p, b_.getInt8(0), bytes, llvm::MaybeAlign(64));
  } else {
    auto fill = mod_.getOrInsertFunction("dcc_fill_uninit",
                                         llvm::FunctionType::get(b_.getVoidTy(), {ptr, b_.getInt64Ty()}, false));
    b_.CreateCall(fill, {p, bytes});
  }
  b_.CreateStore(p, slot_.at(buf));
}

/// Branch to cleanup with `status` and `message` when `cond` holds.
void FuncEmitter::fail_if(llvm::Value* cond, int status, const std::string& message) {
  auto* fail = llvm::BasicBlock::Create(ctx_, "fail", fn_);
  auto* ok = llvm::BasicBlock::Create(ctx_, "ok", fn_);
  b_.CreateCondBr(cond, fail, ok, llvm::MDBuilder(ctx_).createBranchWeights(1, 1 << 20));
  b_.SetInsertPoint(fail);
  if (message_) {
    // Inside a parallel body: the message is handed to the calling thread
    // (see emit_parallel); dcc_set_error here would set the worker's.
    b_.CreateStore(b_.CreateGlobalStringPtr(message), message_);
  } else {
    b_.CreateCall(set_error_fn(), {b_.getInt32(status), b_.CreateGlobalStringPtr(message)});
  }
  b_.CreateStore(b_.getInt32(status), status_);
  b_.CreateBr(cleanup_);
  b_.SetInsertPoint(ok);
}

/// Assert `s` (ir::build::assert_length): unless the length is >= 0, fail
/// with DCC_ERR_NEGATIVE_LENGTH and a message naming the array, the index
/// and the value (formatted by snprintf; inside a parallel body, where the
/// message must be a constant, without the index and value).
void FuncEmitter::fail_negative_length(const ir::StmtNode& s) {
  std::string name = s.text;
  llvm::Value* bad = b_.CreateNot(emit(s.value));
  if (message_) {
    fail_if(bad, kNegativeLength, f_.name + ": `" + name + "` has an element < 0, a length the function computes; lengths must be >= 0");
    return;
  }
  auto* fail = llvm::BasicBlock::Create(ctx_, "fail", fn_);
  auto* ok = llvm::BasicBlock::Create(ctx_, "ok", fn_);
  b_.CreateCondBr(bad, fail, ok, llvm::MDBuilder(ctx_).createBranchWeights(1, 1 << 20));
  b_.SetInsertPoint(fail);
  std::string format;  // printf's: `%` in the names doubled
  for (char c : f_.name + ": `" + name + "`") format += c == '%' ? "%%" : std::string(1, c);
  format += "[%lld] is %lld, a length the function computes; lengths must be >= 0";
  auto* ptr = llvm::PointerType::getUnqual(ctx_);
  auto* text = b_.CreateAlloca(llvm::ArrayType::get(b_.getInt8Ty(), 256), nullptr, "msg");
  auto snprintf = mod_.getOrInsertFunction(
      "snprintf", llvm::FunctionType::get(b_.getInt32Ty(), {ptr, b_.getInt64Ty(), ptr}, true));
  llvm::Value* index = b_.CreateSExtOrTrunc(emit(s.args[0]), b_.getInt64Ty());
  llvm::Value* value = b_.CreateSExtOrTrunc(emit(s.args[1]), b_.getInt64Ty());
  b_.CreateCall(snprintf, {text, b_.getInt64(256), b_.CreateGlobalStringPtr(format), index, value});
  b_.CreateCall(set_error_fn(), {b_.getInt32(kNegativeLength), text});
  b_.CreateStore(b_.getInt32(kNegativeLength), status_);
  b_.CreateBr(cleanup_);
  b_.SetInsertPoint(ok);
}

llvm::FunctionCallee FuncEmitter::set_error_fn() {
  auto* ptr = llvm::PointerType::getUnqual(ctx_);
  return mod_.getOrInsertFunction("dcc_set_error",
                                  llvm::FunctionType::get(b_.getInt32Ty(), {b_.getInt32Ty(), ptr}, false));
}

}  // namespace dccc::backend::llvmgen
