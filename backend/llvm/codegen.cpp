#include "backend/llvm/codegen.h"

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace dccc::backend {
namespace {

using ir::BinOp;
using ir::BufferKind;
using ir::BufferNode;
using ir::ExprKind;
using ir::StmtKind;
using ir::UnOp;

// dcc_status values (runtime/include/dccrt.h).
constexpr int kInvalidArgument = 2;
constexpr int kOverflow = 4;
constexpr int kOutOfMemory = 6;

struct EmitError {
  std::string what;
};

class FuncEmitter {
 public:
  FuncEmitter(llvm::Module& mod, const ir::Func& f) : ctx_(mod.getContext()), mod_(mod), b_(ctx_), f_(f) {}

  void run() {
    auto* i32 = llvm::Type::getInt32Ty(ctx_);
    auto* ptr = llvm::PointerType::getUnqual(ctx_);
    auto* type = llvm::FunctionType::get(i32, {ptr, ptr}, false);
    fn_ = llvm::Function::Create(type, llvm::Function::ExternalLinkage, f_.name + "__kernel", mod_);
    fn_->getArg(0)->setName("sizes");
    fn_->getArg(1)->setName("buffers");
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
    for (const auto& [buf, s] : in_order(slot_)) {
      llvm::Value* p = b_.CreateLoad(ptr, s);
      if (buf->kind == BufferKind::Aux) p = b_.CreateSelect(keep, llvm::ConstantPointerNull::get(ptr), p);
      b_.CreateCall(free_fn, {p});
    }
    b_.CreateRet(b_.CreateLoad(i32, status_));
  }

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

  llvm::Type* value_type(Scalar t) {
    switch (t) {
      case Scalar::F16: return b_.getHalfTy();
      case Scalar::BF16: return b_.getFloatTy();  // computed in f32, rounded to bf16 after each step
      case Scalar::F32: return b_.getFloatTy();
      case Scalar::F64: return b_.getDoubleTy();
      case Scalar::I32: return b_.getInt32Ty();
      case Scalar::I64: return b_.getInt64Ty();
      case Scalar::Bool: return b_.getInt1Ty();
    }
    return b_.getInt64Ty();
  }
  llvm::Type* mem_type(Scalar t) {
    if (t == Scalar::BF16) return b_.getInt16Ty();
    return t == Scalar::Bool ? b_.getInt8Ty() : value_type(t);
  }

  // bf16 is emulated with integer operations (no compiler-rt helpers at run
  // time): values live in f32 registers holding bf16-representable numbers.
  llvm::Value* f32_to_bf16_bits(llvm::Value* f) {
    llvm::Value* bits = b_.CreateBitCast(f, b_.getInt32Ty());
    llvm::Value* lsb = b_.CreateAnd(b_.CreateLShr(bits, 16), 1);
    llvm::Value* rounded = b_.CreateAdd(bits, b_.CreateAdd(lsb, b_.getInt32(0x7FFF)));
    llvm::Value* quiet = b_.CreateOr(bits, b_.getInt32(0x00400000));  // keep NaN a NaN
    llvm::Value* pick = b_.CreateSelect(b_.CreateFCmpUNO(f, f), quiet, rounded);
    return b_.CreateTrunc(b_.CreateLShr(pick, 16), b_.getInt16Ty());
  }
  llvm::Value* bf16_bits_to_f32(llvm::Value* h) {
    return b_.CreateBitCast(b_.CreateShl(b_.CreateZExt(h, b_.getInt32Ty()), 16), b_.getFloatTy());
  }
  llvm::Value* round_bf16(llvm::Value* f) { return bf16_bits_to_f32(f32_to_bf16_bits(f)); }
  llvm::Value* fix(llvm::Value* v, Scalar t) { return t == Scalar::BF16 ? round_bf16(v) : v; }
  static double host_bf16(double v) {
    float f = static_cast<float>(v);
    if (std::isnan(f)) return f;
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    bits += 0x7FFF + ((bits >> 16) & 1);
    bits &= 0xFFFF0000u;
    std::memcpy(&f, &bits, 4);
    return f;
  }

  void emit_with_allocations(const ir::Stmt& s) {
    std::vector<ir::Stmt> items = s->kind == StmtKind::Seq ? s->body : std::vector<ir::Stmt>{s};
    for (const auto& item : items) {
      std::vector<const BufferNode*> used;
      collect_buffers(item, used);
      for (const BufferNode* buf : used) allocate(buf);
      emit(item);
    }
  }

  void collect_buffers(const ir::Stmt& s, std::vector<const BufferNode*>& out) {
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
  void add_buffer(const BufferNode* b, std::vector<const BufferNode*>& out,
                  const std::function<void(const ir::Expr&)>& ex) {
    if (!slot_.count(b) || allocated_.count(b)) return;
    if (std::find(out.begin(), out.end(), b) != out.end()) return;
    if (b->total) ex(b->total);  // a total may read aux arrays: allocate those first
    out.push_back(b);
  }

  /// Allocates a local or aux buffer, zero-filled unless its first
  /// statement stores every element (BufferNode::zero_fill): checks the
  /// total for negative values and the byte size for overflow.
  void allocate(const BufferNode* buf) {
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
  void fail_if(llvm::Value* cond, int status, const std::string& message) {
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

  llvm::FunctionCallee set_error_fn() {
    auto* ptr = llvm::PointerType::getUnqual(ctx_);
    return mod_.getOrInsertFunction("dcc_set_error",
                                    llvm::FunctionType::get(b_.getInt32Ty(), {b_.getInt32Ty(), ptr}, false));
  }

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
  void emit_parallel(const ir::StmtNode& s) {
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
      auto saved = std::make_tuple(fn_, cleanup_, status_, message_, sizes_, base_, slot_, scalar_, vars_);
      fn_ = body_fn;
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

      std::tie(fn_, cleanup_, status_, message_, sizes_, base_, slot_, scalar_, vars_) = saved;
      b_.restoreIP(saved_ip);
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

  /// The step `acc = acc op x` of a float `reduce` (an accumulator is a
  /// Scalar buffer; ir/lower.cpp): emitted with the `reassoc` flag, which
  /// lets the loop vectorizer split the sum into vector lanes, and `acc +
  /// p * q` as a fused multiply-add. So compiled
  /// float reductions may round differently from the interpreter's
  /// left-to-right order (docs/language.md). Null when `s` is not such a step.
  llvm::Value* reduction_step(const ir::StmtNode& s) {
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
  static constexpr int64_t kInterchangeMax = 1024;

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
  static constexpr int64_t kLanePad = 16;
  static_assert(kInterchangeMax % kLanePad == 0);


  struct InterchangePlan {
    std::vector<ir::Stmt> inits;
    ir::Stmt red;                  // the j loop
    std::vector<ir::Stmt> steps;   // acc_u = acc_u op x_u
    std::vector<ir::Stmt> fins;
  };

  enum class Stride { Zero, One, Other };

  static Stride stride(const ir::Expr& e, const ir::Var& v) {
    if (!ir::mentions(e, v)) return Stride::Zero;
    switch (e->kind) {
      case ExprKind::VarRef: return Stride::One;
      case ExprKind::Cast: return is_int(e->type) && is_int(e->args[0]->type) ? stride(e->args[0], v) : Stride::Other;
      case ExprKind::Binary: {
        Stride a = stride(e->args[0], v), c = stride(e->args[1], v);
        if (e->binop == BinOp::Add) return a == Stride::Zero ? c : c == Stride::Zero ? a : Stride::Other;
        if (e->binop == BinOp::Sub) return c == Stride::Zero ? a : Stride::Other;
        if (e->binop == BinOp::Mul) {
          auto one = [](const ir::Expr& x) { return x->kind == ExprKind::IntImm && x->int_value == 1; };
          if (a == Stride::Zero) return one(e->args[0]) ? c : Stride::Other;
          if (c == Stride::Zero) return one(e->args[1]) ? a : Stride::Other;
        }
        return Stride::Other;
      }
      default: return Stride::Other;
    }
  }

  static bool loads_buffer(const ir::Expr& e, const BufferNode* b) {
    if (!e) return false;
    if (e->kind == ExprKind::Load && e->buffer.get() == b) return true;
    for (const auto& a : e->args)
      if (loads_buffer(a, b)) return true;
    return false;
  }

  std::optional<InterchangePlan> reduction_plan(const ir::StmtNode& s) {
    const ir::Stmt& body = s.body[0];
    if (!body || body->kind != StmtKind::Seq || body->body.size() < 3 || body->body.size() % 2 == 0)
      return std::nullopt;
    size_t k = (body->body.size() - 1) / 2;
    InterchangePlan plan;
    plan.inits.assign(body->body.begin(), body->body.begin() + k);
    plan.red = body->body[k];
    plan.fins.assign(body->body.begin() + k + 1, body->body.end());
    if (plan.red->kind != StmtKind::For || plan.red->loop != ir::LoopKind::Serial || ir::mentions(plan.red->extent, s.var))
      return std::nullopt;
    ir::Stmt steps = plan.red->body[0];
    if (!steps) return std::nullopt;
    if (steps->kind == StmtKind::Seq) plan.steps = steps->body;
    else plan.steps = {steps};
    if (plan.steps.size() != k) return std::nullopt;
    std::vector<const BufferNode*> accs;
    for (size_t u = 0; u < k; ++u) {
      const ir::Stmt& init = plan.inits[u];
      if (init->kind != StmtKind::Store || !scalar_.count(init->buffer.get())) return std::nullopt;
      if (std::find(accs.begin(), accs.end(), init->buffer.get()) != accs.end()) return std::nullopt;
      accs.push_back(init->buffer.get());
    }
    auto loads_acc = [&](const ir::Expr& e) {
      for (const BufferNode* a : accs)
        if (loads_buffer(e, a)) return true;
      return false;
    };
    if (loads_acc(plan.red->extent)) return std::nullopt;
    for (size_t u = 0; u < k; ++u) {
      const BufferNode* acc = accs[u];
      const ir::Stmt& init = plan.inits[u];
      const ir::Stmt& step = plan.steps[u];
      const ir::Stmt& fin = plan.fins[u];
      if (loads_acc(init->value)) return std::nullopt;
      if (!step || step->kind != StmtKind::Store || step->buffer.get() != acc) return std::nullopt;
      const ir::Expr& v = step->value;
      if (v->kind != ExprKind::Binary || v->args[0]->kind != ExprKind::Load || v->args[0]->buffer.get() != acc ||
          loads_acc(v->args[1]))
        return std::nullopt;
      if (fin->kind != StmtKind::Store) return std::nullopt;
      const BufferNode* t = fin->buffer.get();
      if (t->dims.empty() || !loads_buffer(fin->value, acc)) return std::nullopt;
      for (const BufferNode* a : accs)
        if (a != acc && loads_buffer(fin->value, a)) return std::nullopt;
      for (const auto& a : fin->args)
        if (loads_acc(a)) return std::nullopt;
      // No output of the nest is read inside it.
      for (size_t w = 0; w < k; ++w) {
        if (loads_buffer(plan.fins[w]->value, t) || loads_buffer(plan.steps[w]->value->args[1], t) ||
            loads_buffer(plan.inits[w]->value, t))
          return std::nullopt;
        for (const auto& a : plan.fins[w]->args)
          if (loads_buffer(a, t)) return std::nullopt;
      }
    }
    return plan;
  }

  /// Calls fn(stride in the outer variable, stride in the reduction
  /// variable) for every load in the reduction step's operand.
  void each_load_stride(const ir::StmtNode& s, const InterchangePlan& plan,
                        const std::function<void(Stride, Stride)>& fn) {
    std::function<void(const ir::Expr&)> look = [&](const ir::Expr& e) {
      if (e->kind == ExprKind::Load && !e->args.empty()) fn(stride(e->args[0], s.var), stride(e->args[0], plan.red->var));
      for (const auto& a : e->args) look(a);
    };
    for (const auto& step : plan.steps) look(step->value->args[1]);
  }

  /// Interchange: a load contiguous in d and strided in j; none the other way.
  bool interchange_pays(const ir::StmtNode& s, const InterchangePlan& plan) {
    bool gain = false, loss = false;
    each_load_stride(s, plan, [&](Stride in_outer, Stride in_red) {
      gain |= in_outer == Stride::One && in_red == Stride::Other;
      loss |= in_red == Stride::One && in_outer == Stride::Other;
    });
    return gain && !loss;
  }

  /// Unroll-and-jam: some load does not depend on the outer variable but
  /// runs along the reduction (q[i, h, d] in q k^T), so kJam outer
  /// iterations share it.
  bool jam_pays(const ir::StmtNode& s, const InterchangePlan& plan) {
    bool shared = false;
    each_load_stride(s, plan, [&](Stride in_outer, Stride in_red) {
      shared |= in_outer == Stride::Zero && in_red != Stride::Zero;
    });
    return shared;
  }

  /// `for var in [0, n) { fn(var) }`.
  void counted_loop(const std::string& name, llvm::Value* n, const std::function<void(llvm::Value*)>& fn) {
    strided_loop(name, b_.getInt64(0), n, 1, fn);
  }

  /// `for (var = begin; var < end; var += step) { fn(var) }`.
  void strided_loop(const std::string& name, llvm::Value* begin, llvm::Value* end, int64_t step,
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

  /// Whether the init and pass loops of `plan` may run past the lanes' extent.
  bool lanes_may_pad(const ir::StmtNode& s, const InterchangePlan& plan) {
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

  void emit_interchanged(const ir::StmtNode& s, const InterchangePlan& plan) {
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
  // then the last n % (W * R) lanes a vector at a time with masked loads and
  // stores. Where the interchanged loop loads and stores each accumulator
  // from a stack array once per kJam terms, this one touches memory only for
  // the operands (q k^T: a vector of kᵀ and a broadcast of q per row and
  // term). Each lane still sees its terms in j order; `acc + a * b` steps
  // are fused multiply-adds, as in reduction_step.
  static constexpr int64_t kMaxLaneAccs = 8;

  /// Whether `e` moves with the lane variable or reads an accumulator.
  static bool loads_any(const ir::Expr& e, const std::vector<const BufferNode*>& bufs) {
    for (const BufferNode* b : bufs)
      if (loads_buffer(e, b)) return true;
    return false;
  }
  static bool lane_dependent(const ir::Expr& e, const ir::Var& lane, const std::vector<const BufferNode*>& accs) {
    return ir::mentions(e, lane) || loads_any(e, accs);
  }

  /// Whether vector_emit can emit `e` as a vector of `t`.
  bool vectorizable(const ir::Expr& e, Scalar t, const ir::Var& lane, const std::vector<const BufferNode*>& accs) {
    if (!lane_dependent(e, lane, accs)) return is_float(e->type) || e->type == t;
    if (e->type != t) return false;
    switch (e->kind) {
      case ExprKind::Load:
        if (e->args.empty()) return std::find(accs.begin(), accs.end(), e->buffer.get()) != accs.end();
        return e->flat && e->buffer->type == t && stride(e->args[0], lane) == Stride::One &&
               !loads_any(e->args[0], accs);
      case ExprKind::Unary:
        return (e->unop == UnOp::Neg || e->unop == UnOp::Abs || e->unop == UnOp::Sqrt) &&
               vectorizable(e->args[0], t, lane, accs);
      case ExprKind::Binary:
        switch (e->binop) {
          case BinOp::Add: case BinOp::Sub: case BinOp::Mul: case BinOp::Div: case BinOp::Max: case BinOp::Min:
            return vectorizable(e->args[0], t, lane, accs) && vectorizable(e->args[1], t, lane, accs);
          default: return false;
        }
      default: return false;
    }
  }

  bool lane_blocks_pay(const ir::StmtNode& s, const InterchangePlan& plan) {
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
      if (stride(fin->args[0], s.var) != Stride::One || ir::mentions(fin->args[0], plan.red->var)) return false;
      if (!vectorizable(fin->value, t, s.var, accs)) return false;
    }
    return true;
  }

  struct LaneBlock {
    const ir::Var* lane;
    std::vector<const BufferNode*> accs;
    std::map<const BufferNode*, llvm::AllocaInst*> slots;  // this vector's accumulators
    llvm::FixedVectorType* vtype;
    llvm::Value* mask;  // null: every lane is in range
  };

  llvm::Value* vector_emit(const ir::Expr& e, const LaneBlock& lb) {
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
  llvm::Value* vector_step(const ir::Expr& v, llvm::Value* acc, const LaneBlock& lb) {
    const ir::Expr& x = v->args[1];
    if (v->binop == BinOp::Add && x->kind == ExprKind::Binary && x->binop == BinOp::Mul && x->type == v->type)
      return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {lb.vtype},
                                {vector_emit(x->args[0], lb), vector_emit(x->args[1], lb), acc});
    return float_op(v->binop, acc, vector_emit(x, lb));
  }

  void emit_lane_blocks(const ir::StmtNode& s, const InterchangePlan& plan) {
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
    std::vector<llvm::Constant*> iota;
    for (int64_t l = 0; l < w; ++l) iota.push_back(b_.getInt64(static_cast<uint64_t>(l)));
    llvm::Value* lanes = llvm::ConstantVector::get(iota);
    strided_loop(dv->name + ".tail", full, n, w, [&](llvm::Value* d0) {
      lb.mask = b_.CreateICmpSLT(b_.CreateAdd(b_.CreateVectorSplat(static_cast<unsigned>(w), d0), lanes),
                                 b_.CreateVectorSplat(static_cast<unsigned>(w), n));
      block(d0, 1);
      lb.mask = nullptr;
    });
  }

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
  const ir::StmtNode* transpose_tile_store(const ir::StmtNode& s) {
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
    if (stride(st->args[0], r) != Stride::One || stride(v->args[0], d) != Stride::One) return nullptr;
    // Not a transpose when both run along the same variable (a plain copy).
    if (stride(v->args[0], r) == Stride::One || stride(st->args[0], d) == Stride::One) return nullptr;
    if (loads_buffer(v->args[0], st->buffer.get()) || loads_buffer(st->args[0], st->buffer.get())) return nullptr;
    return st.get();
  }

  void emit_transpose_tiles(const ir::StmtNode& s, const ir::StmtNode& st) {
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

  // ---- Unroll-and-jam ----------------------------------------------------
  //
  // For the same shape when interchanging does not pay
  // (`for j { acc = 0; for d { acc += q[i, h, d] * k[j, h, d] }; s[.., j] = acc }`),
  // kJam consecutive j run together, each with its own accumulator:
  //   for j in steps of kJam { acc_u = init; for d { acc_u = acc_u op x(j + u, d) };
  //                            t[.., j + u] = f(acc_u) }, then the last j one by one.
  // The d loop then loads q once for kJam dot products and vectorizes with
  // kJam reductions. Each accumulator sees the same operations as before.
  static constexpr int64_t kJam = 4;

  void emit_jammed(const ir::StmtNode& s, const InterchangePlan& plan) {
    llvm::Value* n = emit(s.extent);
    const ir::Stmt& init = plan.inits[0];
    const ir::Stmt& step = plan.steps[0];
    const ir::Stmt& fin = plan.fins[0];
    const BufferNode* acc = init->buffer.get();
    llvm::AllocaInst* acc_slot = scalar_.at(acc);
    llvm::Type* acc_type = acc_slot->getAllocatedType();
    llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
    std::vector<llvm::AllocaInst*> accs;
    for (int64_t u = 0; u < kJam; ++u) accs.push_back(entry.CreateAlloca(acc_type, nullptr, acc->name + ".jam"));
    const ir::Var& jv = s.var;
    // Blocks while j + kJam <= n; n - n % kJam iterations.
    llvm::Value* blocked = b_.CreateSub(n, b_.CreateSRem(n, b_.getInt64(kJam)));
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* head = llvm::BasicBlock::Create(ctx_, jv->name + ".jam.loop", fn_);
    auto* body = llvm::BasicBlock::Create(ctx_, jv->name + ".jam.body", fn_);
    auto* exit = llvm::BasicBlock::Create(ctx_, jv->name + ".jam.exit", fn_);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::PHINode* j = b_.CreatePHI(b_.getInt64Ty(), 2, jv->name + ".jam");
    j->addIncoming(b_.getInt64(0), pre);
    b_.CreateCondBr(b_.CreateICmpSLT(j, blocked), body, exit);
    b_.SetInsertPoint(body);
    auto each = [&](const std::function<void()>& fn) {
      for (int64_t u = 0; u < kJam; ++u) {
        vars_[jv.get()] = b_.CreateAdd(j, b_.getInt64(u), "", true, true);
        scalar_[acc] = accs[u];
        fn();
      }
    };
    each([&] { emit(init); });
    llvm::Value* m = emit(plan.red->extent);  // does not depend on j
    const ir::Var& dv = plan.red->var;
    counted_loop(dv->name + ".jam", m, [&](llvm::Value* d) {
      vars_[dv.get()] = d;
      each([&] { emit(step); });
      vars_.erase(dv.get());
    });
    each([&] { emit(fin); });
    scalar_[acc] = acc_slot;
    vars_.erase(jv.get());
    llvm::Value* next = b_.CreateAdd(j, b_.getInt64(kJam), "", true, true);
    j->addIncoming(next, b_.GetInsertBlock());
    b_.CreateBr(head);
    b_.SetInsertPoint(exit);
    emit_loop(s, blocked, n);
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
  static constexpr int64_t kLanes = 16;

  /// The step of `s` when `s` is such a loop; null otherwise.
  ir::Stmt minmax_reduction(const ir::StmtNode& s) {
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

  void emit_minmax_lanes(const ir::StmtNode& s, const ir::Stmt& step) {
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

  /// `for var in [begin, end) { body }` at the insert point.
  void emit_loop(const ir::StmtNode& s, llvm::Value* begin, llvm::Value* n) {
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

  /// Type-based alias information for an element access of `buf`: every
  /// buffer is only ever accessed with its element type, so a float store
  /// (scores) does not clobber the i64 offset arrays or the i32 lengths that
  /// index it, and LICM can hoist those loads out of inner loops.
  void tag(llvm::Instruction* access, const BufferNode* buf) {
    if (buf->dims.empty()) return;  // scalars: allocas (promoted) or result pointers
    llvm::MDBuilder md(ctx_);
    if (!tbaa_root_) tbaa_root_ = md.createTBAARoot("dccc element types");
    const char* name = "";
    switch (buf->type) {
      case Scalar::F16: name = "f16"; break;
      case Scalar::BF16: name = "bf16"; break;
      case Scalar::F32: name = "f32"; break;
      case Scalar::F64: name = "f64"; break;
      case Scalar::I32: name = "i32"; break;
      case Scalar::I64: name = "i64"; break;
      case Scalar::Bool: name = "bool"; break;
    }
    llvm::MDNode* type = md.createTBAAScalarTypeNode(name, tbaa_root_);
    access->setMetadata(llvm::LLVMContext::MD_tbaa, md.createTBAAStructTagNode(type, type, 0));
  }

  llvm::Value* base_pointer(const BufferNode* buf) {
    if (auto it = base_.find(buf); it != base_.end()) return it->second;
    auto it = slot_.find(buf);
    if (it == slot_.end()) throw EmitError{"buffer `" + buf->name + "` has no storage"};
    return b_.CreateLoad(llvm::PointerType::getUnqual(ctx_), it->second);
  }

  llvm::Value* address(const BufferNode* buf, const std::vector<ir::Expr>& args, bool flat) {
    if (buf->dims.empty()) {
      if (auto it = scalar_.find(buf); it != scalar_.end()) return it->second;
      return base_pointer(buf);  // scalar input or output
    }
    if (!flat && buf->dims.size() != 1) throw EmitError{"access to `" + buf->name + "` was not storage-lowered"};
    return b_.CreateInBoundsGEP(mem_type(buf->type), base_pointer(buf), {emit(args[0])});
  }

  llvm::Value* to_value(llvm::Value* v, Scalar t) {
    if (t == Scalar::BF16) return bf16_bits_to_f32(v);
    return t == Scalar::Bool ? b_.CreateICmpNE(v, b_.getInt8(0)) : v;
  }
  llvm::Value* to_mem(llvm::Value* v, Scalar t) {
    if (t == Scalar::BF16) return f32_to_bf16_bits(v);
    return t == Scalar::Bool ? b_.CreateZExt(v, b_.getInt8Ty()) : v;
  }

  llvm::Value* cast(llvm::Value* v, Scalar from, Scalar to) {
    if (from == to) return v;
    // bf16 values are f32 in registers: cast as f32, then round to bf16.
    if (from == Scalar::BF16) from = Scalar::F32;
    if (to == Scalar::BF16) return from == Scalar::F32 ? round_bf16(v) : round_bf16(cast(v, from, Scalar::F32));
    if (from == to) return v;
    llvm::Type* dt = value_type(to);
    if (to == Scalar::Bool)
      return is_float(from) ? b_.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0))
                            : b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
    if (is_float(to)) {
      if (from == Scalar::Bool) return b_.CreateUIToFP(v, dt);
      if (!is_float(from)) return b_.CreateSIToFP(v, dt);
      return dt->getPrimitiveSizeInBits() > v->getType()->getPrimitiveSizeInBits() ? b_.CreateFPExt(v, dt)
                                                                                  : b_.CreateFPTrunc(v, dt);
    }
    if (from == Scalar::Bool) return b_.CreateZExt(v, dt);
    if (is_float(from)) {
      // Saturating: NaN gives 0 and out-of-range values clamp, never poison.
      auto* sat = llvm::Intrinsic::getDeclaration(&mod_, llvm::Intrinsic::fptosi_sat, {dt, v->getType()});
      return b_.CreateCall(sat, {v});
    }
    return b_.CreateSExtOrTrunc(v, dt);
  }

  llvm::Value* math_call(const char* name, llvm::Value* x, Scalar t) {
    // libm takes f32 or f64; 16-bit floats compute in f32.
    llvm::Value* v = x;
    Scalar ct = t == Scalar::F64 ? Scalar::F64 : Scalar::F32;
    if (t == Scalar::F16) v = b_.CreateFPExt(x, b_.getFloatTy());
    std::string fname = std::string(name) + (ct == Scalar::F32 ? "f" : "");
    llvm::Type* ty = value_type(ct);
    auto callee = mod_.getOrInsertFunction(fname, llvm::FunctionType::get(ty, {ty}, false));
    llvm::Value* r = b_.CreateCall(callee, {v});
    if (t == Scalar::BF16) return round_bf16(r);
    return ct == t ? r : b_.CreateFPTrunc(r, value_type(t));
  }

  llvm::Value* emit(const ir::Expr& e) {
    switch (e->kind) {
      case ExprKind::IntImm: return llvm::ConstantInt::get(value_type(e->type), e->int_value, true);
      case ExprKind::FloatImm:
        return llvm::ConstantFP::get(value_type(e->type), e->type == Scalar::BF16 ? host_bf16(e->float_value) : e->float_value);
      case ExprKind::VarRef: {
        auto it = vars_.find(e->var.get());
        if (it == vars_.end()) throw EmitError{"variable `" + e->var->name + "` used outside its loop"};
        return it->second;
      }
      case ExprKind::SizeRef: {
        auto it = sizes_.find(e->name);
        if (it == sizes_.end()) throw EmitError{"unknown size `" + e->name + "`"};
        return it->second;
      }
      case ExprKind::Load: {
        llvm::Value* addr = address(e->buffer.get(), e->args, e->flat);
        auto* load = b_.CreateLoad(mem_type(e->buffer->type), addr);
        tag(load, e->buffer.get());
        return to_value(load, e->buffer->type);
      }
      case ExprKind::Cast: return cast(emit(e->args[0]), e->args[0]->type, e->type);
      case ExprKind::Select: {
        llvm::Value* c = emit(e->args[0]);
        return b_.CreateSelect(c, emit(e->args[1]), emit(e->args[2]));
      }
      case ExprKind::Unary: return fix(unary(e), e->type);
      case ExprKind::Binary: return fix(binary(e), e->type);
    }
    throw EmitError{"unknown expression"};
  }

  llvm::Value* unary(const ir::Expr& e) {
    Scalar t = e->args[0]->type;
    llvm::Value* x = emit(e->args[0]);
    auto intrinsic = [&](llvm::Intrinsic::ID id) {
      return b_.CreateCall(llvm::Intrinsic::getDeclaration(&mod_, id, {x->getType()}), {x});
    };
    switch (e->unop) {
      case UnOp::Neg: return is_float(t) ? b_.CreateFNeg(x) : b_.CreateSub(llvm::ConstantInt::get(x->getType(), 0), x);
      case UnOp::Not: return b_.CreateNot(x);
      case UnOp::Abs:
        if (is_float(t)) return intrinsic(llvm::Intrinsic::fabs);
        return b_.CreateSelect(b_.CreateICmpSLT(x, llvm::ConstantInt::get(x->getType(), 0)),
                               b_.CreateSub(llvm::ConstantInt::get(x->getType(), 0), x), x);
      case UnOp::Exp: return intrinsic(llvm::Intrinsic::exp);
      case UnOp::Log: return intrinsic(llvm::Intrinsic::log);
      case UnOp::Sqrt: return intrinsic(llvm::Intrinsic::sqrt);
      case UnOp::Rsqrt: {
        // In f64 then rounded once, so the result is the nearest value of the type.
        if (t == Scalar::F64) return b_.CreateFDiv(llvm::ConstantFP::get(x->getType(), 1.0), intrinsic(llvm::Intrinsic::sqrt));
        llvm::Value* d = b_.CreateFPExt(x, b_.getDoubleTy());
        llvm::Value* r = b_.CreateFDiv(
            llvm::ConstantFP::get(b_.getDoubleTy(), 1.0),
            b_.CreateCall(llvm::Intrinsic::getDeclaration(&mod_, llvm::Intrinsic::sqrt, {b_.getDoubleTy()}), {d}));
        return b_.CreateFPTrunc(r, x->getType());
      }
      case UnOp::Tanh: return math_call("tanh", x, t);
      case UnOp::Erf: return math_call("erf", x, t);
    }
    throw EmitError{"unknown unary operator"};
  }

  /// A float operator on scalars or vectors (expressions, reduction steps,
  /// lane blocks): min and max are minnum/maxnum (a NaN operand is
  /// ignored), as in the interpreter.
  llvm::Value* float_op(BinOp op, llvm::Value* a, llvm::Value* c) {
    switch (op) {
      case BinOp::Add: return b_.CreateFAdd(a, c);
      // The masked-value rules (ir/masked_arith.h): -inf - -inf = -inf, 0 / 0 = 0.
      case BinOp::Sub: {
        auto* ninf = llvm::ConstantFP::getInfinity(a->getType(), true);
        auto* both = b_.CreateAnd(b_.CreateFCmpOEQ(a, ninf), b_.CreateFCmpOEQ(c, ninf));
        return b_.CreateSelect(both, a, b_.CreateFSub(a, c));
      }
      case BinOp::Mul: return b_.CreateFMul(a, c);
      case BinOp::Div: {
        auto* zero = llvm::ConstantFP::getZero(a->getType());
        auto* both = b_.CreateAnd(b_.CreateFCmpOEQ(a, zero), b_.CreateFCmpOEQ(c, zero));
        return b_.CreateSelect(both, zero, b_.CreateFDiv(a, c));
      }
      case BinOp::Mod: return b_.CreateFRem(a, c);
      case BinOp::Min: return b_.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, a, c);
      case BinOp::Max: return b_.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, a, c);
      case BinOp::Pow: return b_.CreateBinaryIntrinsic(llvm::Intrinsic::pow, a, c);
      case BinOp::EQ: return b_.CreateFCmpOEQ(a, c);
      case BinOp::NE: return b_.CreateFCmpUNE(a, c);
      case BinOp::LT: return b_.CreateFCmpOLT(a, c);
      case BinOp::LE: return b_.CreateFCmpOLE(a, c);
      default: break;
    }
    throw EmitError{"unknown float operator"};
  }

  llvm::Value* binary(const ir::Expr& e) {
    Scalar t = e->args[0]->type;
    if (e->binop == BinOp::And || e->binop == BinOp::Or) {
      llvm::Value* a = emit(e->args[0]);
      llvm::Value* c = emit(e->args[1]);
      return e->binop == BinOp::And ? b_.CreateAnd(a, c) : b_.CreateOr(a, c);
    }
    llvm::Value* a = emit(e->args[0]);
    llvm::Value* c = emit(e->args[1]);
    if (is_float(t)) return float_op(e->binop, a, c);
    switch (e->binop) {
      case BinOp::Add: return b_.CreateAdd(a, c);
      case BinOp::Sub: return b_.CreateSub(a, c);
      case BinOp::Mul: return b_.CreateMul(a, c);
      case BinOp::Div:
      case BinOp::Mod: {
        // Division by zero and INT_MIN / -1 are errors, never UB.
        llvm::Value* zero = llvm::ConstantInt::get(c->getType(), 0);
        fail_if(b_.CreateICmpEQ(c, zero), kInvalidArgument, "integer division by zero");
        llvm::Value* minus1 = llvm::ConstantInt::get(c->getType(), -1, true);
        llvm::Value* min = llvm::ConstantInt::get(
            a->getType(), llvm::APInt::getSignedMinValue(a->getType()->getIntegerBitWidth()));
        fail_if(b_.CreateAnd(b_.CreateICmpEQ(a, min), b_.CreateICmpEQ(c, minus1)), kOverflow,
                "integer division overflow");
        return e->binop == BinOp::Div ? b_.CreateSDiv(a, c) : b_.CreateSRem(a, c);
      }
      case BinOp::Min: return b_.CreateSelect(b_.CreateICmpSLT(a, c), a, c);
      case BinOp::Max: return b_.CreateSelect(b_.CreateICmpSGT(a, c), a, c);
      case BinOp::Pow: {
        llvm::Value* r = b_.CreateBinaryIntrinsic(llvm::Intrinsic::pow, b_.CreateSIToFP(a, b_.getDoubleTy()),
                                                  b_.CreateSIToFP(c, b_.getDoubleTy()));
        return cast(r, Scalar::F64, t);
      }
      case BinOp::EQ: return b_.CreateICmpEQ(a, c);
      case BinOp::NE: return b_.CreateICmpNE(a, c);
      case BinOp::LT: return b_.CreateICmpSLT(a, c);
      case BinOp::LE: return b_.CreateICmpSLE(a, c);
      default: break;
    }
    throw EmitError{"unknown integer operator"};
  }

  void emit(const ir::Stmt& s) {
    if (!s) return;
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
        if (auto plan = reduction_plan(*s)) {
          if (interchange_pays(*s, *plan)) {
            if (lane_blocks_pay(*s, *plan)) emit_lane_blocks(*s, *plan);
            else emit_interchanged(*s, *plan);
          }
          else if (plan->inits.size() == 1 && jam_pays(*s, *plan)) emit_jammed(*s, *plan);
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
        if (!v) v = emit(s->value);
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
        fail_if(b_.CreateNot(emit(s->value)), kInvalidArgument, "`where` constraint violated: " + s->text);
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

  llvm::LLVMContext& ctx_;
  llvm::Module& mod_;
  llvm::IRBuilder<> b_;
  const ir::Func& f_;
  llvm::Function* fn_ = nullptr;
  llvm::BasicBlock* cleanup_ = nullptr;
  llvm::AllocaInst* status_ = nullptr;
  llvm::AllocaInst* message_ = nullptr;  // inside a parallel body only: the failure's message
  int parallel_count_ = 0;
  llvm::MDNode* tbaa_root_ = nullptr;
  std::map<std::string, llvm::Value*> sizes_;
  std::map<const BufferNode*, llvm::Value*> base_;
  std::map<const BufferNode*, llvm::AllocaInst*> slot_;
  std::map<const BufferNode*, llvm::AllocaInst*> scalar_;
  std::set<const BufferNode*> allocated_;
  std::map<const ir::VarNode*, llvm::Value*> vars_;
};

}  // namespace

std::unique_ptr<llvm::Module> emit_llvm(const ir::Module& m, llvm::LLVMContext& ctx, std::string& error) {
  auto mod = std::make_unique<llvm::Module>("dccc", ctx);
  mod->setTargetTriple(llvm::sys::getProcessTriple());
  try {
    for (const auto& f : m.funcs) {
      if (!f.storage_lowered) throw EmitError{"function `" + f.name + "` is not storage-lowered"};
      FuncEmitter(*mod, f).run();
    }
  } catch (const EmitError& e) {
    error = e.what;
    return nullptr;
  }
  std::string verify;
  llvm::raw_string_ostream os(verify);
  if (llvm::verifyModule(*mod, &os)) {
    error = "generated LLVM IR is invalid: " + os.str();
    return nullptr;
  }
  return mod;
}

namespace {
/// glibc libmvec's AVX-512 entry points for the math functions codegen emits.
llvm::ArrayRef<llvm::VecDesc> avx512_libmvec() {
  static const llvm::VecDesc fns[] = {
      {"expf", "_ZGVeN16v_expf", llvm::ElementCount::getFixed(16), false, "_ZGV_LLVM_N16v"},
      {"llvm.exp.f32", "_ZGVeN16v_expf", llvm::ElementCount::getFixed(16), false, "_ZGV_LLVM_N16v"},
      {"exp", "_ZGVeN8v_exp", llvm::ElementCount::getFixed(8), false, "_ZGV_LLVM_N8v"},
      {"llvm.exp.f64", "_ZGVeN8v_exp", llvm::ElementCount::getFixed(8), false, "_ZGV_LLVM_N8v"},
      {"logf", "_ZGVeN16v_logf", llvm::ElementCount::getFixed(16), false, "_ZGV_LLVM_N16v"},
      {"llvm.log.f32", "_ZGVeN16v_logf", llvm::ElementCount::getFixed(16), false, "_ZGV_LLVM_N16v"},
      {"log", "_ZGVeN8v_log", llvm::ElementCount::getFixed(8), false, "_ZGV_LLVM_N8v"},
      {"llvm.log.f64", "_ZGVeN8v_log", llvm::ElementCount::getFixed(8), false, "_ZGV_LLVM_N8v"},
      {"tanhf", "_ZGVeN16v_tanhf", llvm::ElementCount::getFixed(16), false, "_ZGV_LLVM_N16v"},
      {"tanh", "_ZGVeN8v_tanh", llvm::ElementCount::getFixed(8), false, "_ZGV_LLVM_N8v"},
      {"erff", "_ZGVeN16v_erff", llvm::ElementCount::getFixed(16), false, "_ZGV_LLVM_N16v"},
      {"erf", "_ZGVeN8v_erf", llvm::ElementCount::getFixed(8), false, "_ZGV_LLVM_N8v"},
  };
  return fns;
}
}  // namespace

void optimize(llvm::Module& m, llvm::TargetMachine* tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  // glibc's vector math library (libmvec) gives the loop vectorizer vector
  // exp, log, sin, ... (the .so links -lmvec; the JIT loads libmvec.so.1).
  llvm::Triple triple(m.getTargetTriple());
  llvm::TargetLibraryInfoImpl tlii(triple);
  if (uses_libmvec(triple)) {
    tlii.addVectorizableFunctionsFromVecLib(llvm::TargetLibraryInfoImpl::LIBMVEC_X86, triple);
    // LLVM's libmvec table stops at 256-bit vectors; glibc also has the
    // AVX-512 variants (`e` ISA), one call per 16 floats or 8 doubles.
    if (tm && tm->getTargetFeatureString().contains("+avx512f")) tlii.addVectorizableFunctions(avx512_libmvec());
  }
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  llvm::PassBuilder pb(tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(m, mam);
}

bool uses_libmvec(const llvm::Triple& triple) {
  return triple.getArch() == llvm::Triple::x86_64 && triple.isOSLinux() && triple.isGNUEnvironment();
}

std::string host_features() {
  std::string out;
  for (const auto& f : llvm::sys::getHostCPUFeatures()) {
    if (!out.empty()) out += ',';
    out += (f.second ? "+" : "-") + f.first().str();
  }
  return out;
}

}  // namespace dccc::backend
