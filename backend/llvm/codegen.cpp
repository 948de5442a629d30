#include "backend/llvm/codegen.h"

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
#include <set>

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
    for (const auto& [buf, s] : slot_) {
      llvm::Value* p = b_.CreateLoad(ptr, s);
      if (buf->kind == BufferKind::Aux) p = b_.CreateSelect(keep, llvm::ConstantPointerNull::get(ptr), p);
      b_.CreateCall(free_fn, {p});
    }
    b_.CreateRet(b_.CreateLoad(i32, status_));
  }

 private:
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

  /// Allocates a local or aux buffer (zero-filled): checks the total for
  /// negative values and the byte size for overflow.
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
    b_.CreateMemSet(p, b_.getInt8(0), bytes, llvm::MaybeAlign(64));
    b_.CreateStore(p, slot_.at(buf));
  }

  /// Branch to cleanup with `status` and `message` when `cond` holds.
  void fail_if(llvm::Value* cond, int status, const std::string& message) {
    auto* fail = llvm::BasicBlock::Create(ctx_, "fail", fn_);
    auto* ok = llvm::BasicBlock::Create(ctx_, "ok", fn_);
    b_.CreateCondBr(cond, fail, ok, llvm::MDBuilder(ctx_).createBranchWeights(1, 1 << 20));
    b_.SetInsertPoint(fail);
    auto* ptr = llvm::PointerType::getUnqual(ctx_);
    auto set = mod_.getOrInsertFunction("dcc_set_error",
                                        llvm::FunctionType::get(b_.getInt32Ty(), {b_.getInt32Ty(), ptr}, false));
    b_.CreateCall(set, {b_.getInt32(status), b_.CreateGlobalStringPtr(message)});
    b_.CreateStore(b_.getInt32(status), status_);
    b_.CreateBr(cleanup_);
    b_.SetInsertPoint(ok);
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
        return to_value(b_.CreateLoad(mem_type(e->buffer->type), addr), e->buffer->type);
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

  llvm::Value* binary(const ir::Expr& e) {
    Scalar t = e->args[0]->type;
    if (e->binop == BinOp::And || e->binop == BinOp::Or) {
      llvm::Value* a = emit(e->args[0]);
      llvm::Value* c = emit(e->args[1]);
      return e->binop == BinOp::And ? b_.CreateAnd(a, c) : b_.CreateOr(a, c);
    }
    llvm::Value* a = emit(e->args[0]);
    llvm::Value* c = emit(e->args[1]);
    if (is_float(t)) {
      auto bin_intr = [&](llvm::Intrinsic::ID id) { return b_.CreateBinaryIntrinsic(id, a, c); };
      switch (e->binop) {
        case BinOp::Add: return b_.CreateFAdd(a, c);
        case BinOp::Sub: return b_.CreateFSub(a, c);
        case BinOp::Mul: return b_.CreateFMul(a, c);
        case BinOp::Div: return b_.CreateFDiv(a, c);
        case BinOp::Mod: return b_.CreateFRem(a, c);
        case BinOp::Min: return bin_intr(llvm::Intrinsic::minnum);
        case BinOp::Max: return bin_intr(llvm::Intrinsic::maxnum);
        case BinOp::Pow: return bin_intr(llvm::Intrinsic::pow);
        case BinOp::EQ: return b_.CreateFCmpOEQ(a, c);
        case BinOp::NE: return b_.CreateFCmpUNE(a, c);
        case BinOp::LT: return b_.CreateFCmpOLT(a, c);
        case BinOp::LE: return b_.CreateFCmpOLE(a, c);
        default: break;
      }
      throw EmitError{"unknown float operator"};
    }
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
        llvm::Value* n = emit(s->extent);
        llvm::BasicBlock* pre = b_.GetInsertBlock();
        auto* head = llvm::BasicBlock::Create(ctx_, s->var->name + ".loop", fn_);
        auto* body = llvm::BasicBlock::Create(ctx_, s->var->name + ".body", fn_);
        auto* exit = llvm::BasicBlock::Create(ctx_, s->var->name + ".exit", fn_);
        b_.CreateBr(head);
        b_.SetInsertPoint(head);
        llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2, s->var->name);
        i->addIncoming(b_.getInt64(0), pre);
        b_.CreateCondBr(b_.CreateICmpSLT(i, n), body, exit);
        b_.SetInsertPoint(body);
        vars_[s->var.get()] = i;
        emit(s->body[0]);
        vars_.erase(s->var.get());
        llvm::Value* next = b_.CreateAdd(i, b_.getInt64(1), "", true, true);
        i->addIncoming(next, b_.GetInsertBlock());
        b_.CreateBr(head);
        b_.SetInsertPoint(exit);
        return;
      }
      case StmtKind::Store: {
        llvm::Value* v = emit(s->value);
        v = cast(v, s->value->type, s->buffer->type);
        llvm::Value* addr = address(s->buffer.get(), s->args, s->flat);
        b_.CreateStore(to_mem(v, s->buffer->type), addr);
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

void optimize(llvm::Module& m, llvm::TargetMachine* tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2).run(m, mam);
}

}  // namespace dccc::backend
