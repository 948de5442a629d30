// FuncEmitter: a `parallel` loop outlined into a body function run by the
// runtime's thread pool (backend/llvm/func_emitter.h).
#include "backend/llvm/func_emitter.h"

#include <llvm/IR/MDBuilder.h>

#include <tuple>

namespace dccc::backend::llvmgen {

/// A loop marked Parallel (ir/mark_parallel.h): its body is outlined into
///   internal void NAME__parK(ptr ctx, i64 begin, i64 end)
/// and run by dcc_parallel_for. `ctx` points to a struct on the caller's
/// stack: { i32 status, ptr message, captured values... }, the captures
/// being the sizes, buffer base pointers, scalars and loop variables the
/// body may read. Scalars get a private copy per chunk (the marking pass
/// guarantees each iteration writes a scalar before reading it). The
/// first chunk to fail stores its status and message there with a
/// compare-and-swap; the caller then records the error on its own thread
/// (dcc_last_error is thread-local) and returns the status.
void FuncEmitter::emit_parallel(const ir::StmtNode& s) {
  auto* ptr = llvm::PointerType::getUnqual(ctx_);
  auto* i64 = b_.getInt64Ty();
  llvm::Value* n = emit(s.extent);
  n = b_.CreateSelect(b_.CreateICmpSLT(n, b_.getInt64(0)), b_.getInt64(0), n);

  // What the body may read, in a fixed order: sizes by name, buffers in
  // declaration order, loop variables by name (the maps are keyed by
  // pointers, whose order changes from run to run).
  std::vector<llvm::Value*> values;
  std::vector<std::function<void(llvm::Value*)>> rebind;  // run in the body function
  for (auto& [name, v] : sizes_) {
    values.push_back(v);
    rebind.push_back([this, key = name](llvm::Value* x) { sizes_[key] = x; });
  }
  for (auto& [buf, v] : in_order(base_)) {
    values.push_back(v);
    rebind.push_back([this, key = buf](llvm::Value* x) { base_[key] = x; });
  }
  for (auto& [buf, slot] : in_order(slot_)) {
    values.push_back(b_.CreateLoad(ptr, slot));
    rebind.push_back([this, ptr, key = buf](llvm::Value* x) {
      auto* a = b_.CreateAlloca(ptr, nullptr, key->name + ".slot");
      b_.CreateStore(x, a);
      slot_[key] = a;
    });
  }
  for (auto& [buf, slot] : in_order(scalar_)) {
    values.push_back(b_.CreateLoad(slot->getAllocatedType(), slot));
    rebind.push_back([this, key = buf, type = slot->getAllocatedType()](llvm::Value* x) {
      auto* a = b_.CreateAlloca(type, nullptr, key->name);
      b_.CreateStore(x, a);
      scalar_[key] = a;
    });
  }
  std::vector<std::pair<const ir::VarNode*, llvm::Value*>> bound(vars_.begin(), vars_.end());
  std::stable_sort(bound.begin(), bound.end(), [](const auto& x, const auto& y) { return x.first->name < y.first->name; });
  for (auto& [var, v] : bound) {
    values.push_back(v);
    rebind.push_back([this, key = var](llvm::Value* x) { vars_[key] = x; });
  }
  std::vector<llvm::Type*> fields{b_.getInt32Ty(), ptr};
  for (llvm::Value* v : values) fields.push_back(v->getType());
  auto* ctx_type = llvm::StructType::get(ctx_, fields);

  llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
  llvm::AllocaInst* ctx = entry.CreateAlloca(ctx_type, nullptr, "par.ctx");
  b_.CreateStore(b_.getInt32(0), b_.CreateStructGEP(ctx_type, ctx, 0));
  b_.CreateStore(llvm::ConstantPointerNull::get(ptr), b_.CreateStructGEP(ctx_type, ctx, 1));
  for (size_t k = 0; k < values.size(); ++k) b_.CreateStore(values[k], b_.CreateStructGEP(ctx_type, ctx, k + 2));

  // The body function.
  auto* body_type = llvm::FunctionType::get(b_.getVoidTy(), {ptr, i64, i64}, false);
  auto* body_fn = llvm::Function::Create(body_type, llvm::Function::InternalLinkage,
                                         f_.name + "__par" + std::to_string(parallel_count_++), mod_);
  body_fn->addFnAttr(llvm::Attribute::NoUnwind);
  {
    // Swap in the body function's state; restored when this scope ends.
    auto saved_ip = b_.saveIP();
    auto saved = std::make_tuple(fn_, cleanup_, status_, message_, sizes_, base_, slot_, scalar_, vars_, sp_,
                                 b_.getCurrentDebugLocation());
    fn_ = body_fn;
    if (dbg_) {
      SourceRange at = ir::statement_location(s.body.empty() ? nullptr : s.body[0]);
      int line = at.valid() ? at.line : b_.getCurrentDebugLocation().getLine();
      sp_ = dbg_->subprogram(body_fn, line);
      b_.SetCurrentDebugLocation(
          llvm::DILocation::get(ctx_, line, at.valid() ? at.col : 0, at.valid() ? dbg_->scope(sp_, at.file) : sp_));
    }
    llvm::Value* pctx = body_fn->getArg(0);
    llvm::Value* begin = body_fn->getArg(1);
    llvm::Value* end = body_fn->getArg(2);
    auto* entry_bb = llvm::BasicBlock::Create(ctx_, "entry", body_fn);
    cleanup_ = llvm::BasicBlock::Create(ctx_, "cleanup", body_fn);
    b_.SetInsertPoint(entry_bb);
    status_ = b_.CreateAlloca(b_.getInt32Ty(), nullptr, "status");
    b_.CreateStore(b_.getInt32(0), status_);
    message_ = b_.CreateAlloca(ptr, nullptr, "message");
    b_.CreateStore(llvm::ConstantPointerNull::get(ptr), message_);
    for (size_t k = 0; k < values.size(); ++k)
      rebind[k](b_.CreateLoad(fields[k + 2], b_.CreateStructGEP(ctx_type, pctx, k + 2)));
    // Another chunk failed already: skip this one.
    auto* shared_status = b_.CreateStructGEP(ctx_type, pctx, 0);
    auto* failed = b_.CreateLoad(b_.getInt32Ty(), shared_status);
    llvm::cast<llvm::LoadInst>(failed)->setAtomic(llvm::AtomicOrdering::Monotonic);
    auto* start = llvm::BasicBlock::Create(ctx_, "start", body_fn);
    b_.CreateCondBr(b_.CreateICmpNE(failed, b_.getInt32(0)), cleanup_, start);
    b_.SetInsertPoint(start);
    emit_loop(s, begin, end);
    b_.CreateBr(cleanup_);

    b_.SetInsertPoint(cleanup_);
    llvm::Value* st = b_.CreateLoad(b_.getInt32Ty(), status_);
    auto* publish = llvm::BasicBlock::Create(ctx_, "publish", body_fn);
    auto* store_message = llvm::BasicBlock::Create(ctx_, "store.message", body_fn);
    auto* done = llvm::BasicBlock::Create(ctx_, "done", body_fn);
    b_.CreateCondBr(b_.CreateICmpNE(st, b_.getInt32(0)), publish, done);
    b_.SetInsertPoint(publish);
    auto* cas = b_.CreateAtomicCmpXchg(shared_status, b_.getInt32(0), st, llvm::MaybeAlign(4),
                                       llvm::AtomicOrdering::SequentiallyConsistent,
                                       llvm::AtomicOrdering::SequentiallyConsistent);
    b_.CreateCondBr(b_.CreateExtractValue(cas, 1), store_message, done);
    b_.SetInsertPoint(store_message);
    // Read by the caller after dcc_parallel_for returns, which orders it.
    b_.CreateStore(b_.CreateLoad(ptr, message_), b_.CreateStructGEP(ctx_type, pctx, 1));
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
    b_.CreateRetVoid();

    llvm::DebugLoc loc;
    std::tie(fn_, cleanup_, status_, message_, sizes_, base_, slot_, scalar_, vars_, sp_, loc) = saved;
    b_.restoreIP(saved_ip);
    b_.SetCurrentDebugLocation(loc);
  }

  // The call, and the error hand-over.
  bool has_inner_loop = false;
  std::function<void(const ir::Stmt&)> find = [&](const ir::Stmt& x) {
    if (!x) return;
    has_inner_loop |= x->kind == StmtKind::For;
    for (const auto& c : x->body) find(c);
  };
  find(s.body[0]);
  auto par_for = mod_.getOrInsertFunction(
      "dcc_parallel_for", llvm::FunctionType::get(b_.getInt32Ty(), {i64, i64, ptr, ptr}, false));
  // Iterations holding loops get claimed one at a time (ragged ones differ
  // much in cost); flat loops let the runtime pick a grain.
  llvm::Value* rt = b_.CreateCall(par_for, {n, b_.getInt64(has_inner_loop ? 1 : 0), body_fn, ctx});
  auto* rt_fail = llvm::BasicBlock::Create(ctx_, "par.rt.fail", fn_);
  auto* rt_ok = llvm::BasicBlock::Create(ctx_, "par.rt.ok", fn_);
  b_.CreateCondBr(b_.CreateICmpNE(rt, b_.getInt32(0)), rt_fail, rt_ok);
  b_.SetInsertPoint(rt_fail);
  b_.CreateStore(rt, status_);  // the runtime has recorded its message on this thread
  b_.CreateBr(cleanup_);
  b_.SetInsertPoint(rt_ok);
  llvm::Value* st = b_.CreateLoad(b_.getInt32Ty(), b_.CreateStructGEP(ctx_type, ctx, 0));
  auto* body_fail = llvm::BasicBlock::Create(ctx_, "par.fail", fn_);
  auto* ok = llvm::BasicBlock::Create(ctx_, "par.ok", fn_);
  b_.CreateCondBr(b_.CreateICmpNE(st, b_.getInt32(0)), body_fail, ok,
                  llvm::MDBuilder(ctx_).createBranchWeights(1, 1 << 20));
  b_.SetInsertPoint(body_fail);
  b_.CreateCall(set_error_fn(), {st, b_.CreateLoad(ptr, b_.CreateStructGEP(ctx_type, ctx, 1))});
  b_.CreateStore(st, status_);
  b_.CreateBr(cleanup_);
  b_.SetInsertPoint(ok);
}

}  // namespace dccc::backend::llvmgen
