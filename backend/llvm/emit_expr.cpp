// FuncEmitter: expressions -- types, casts, bf16 emulation, math calls,
// addresses and type-based alias tags (backend/llvm/func_emitter.h).
#include "backend/llvm/func_emitter.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>

#include <cmath>
#include <cstring>

namespace dccc::backend::llvmgen {

llvm::Type* FuncEmitter::value_type(Scalar t) {
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

llvm::Type* FuncEmitter::mem_type(Scalar t) {
  if (t == Scalar::BF16) return b_.getInt16Ty();
  return t == Scalar::Bool ? b_.getInt8Ty() : value_type(t);
}

// bf16 is emulated with integer operations (no compiler-rt helpers at run
// time): values live in f32 registers holding bf16-representable numbers.
llvm::Value* FuncEmitter::f32_to_bf16_bits(llvm::Value* f) {
  llvm::Value* bits = b_.CreateBitCast(f, b_.getInt32Ty());
  llvm::Value* lsb = b_.CreateAnd(b_.CreateLShr(bits, 16), 1);
  llvm::Value* rounded = b_.CreateAdd(bits, b_.CreateAdd(lsb, b_.getInt32(0x7FFF)));
  llvm::Value* quiet = b_.CreateOr(bits, b_.getInt32(0x00400000));  // keep NaN a NaN
  llvm::Value* pick = b_.CreateSelect(b_.CreateFCmpUNO(f, f), quiet, rounded);
  return b_.CreateTrunc(b_.CreateLShr(pick, 16), b_.getInt16Ty());
}

llvm::Value* FuncEmitter::bf16_bits_to_f32(llvm::Value* h) {
  return b_.CreateBitCast(b_.CreateShl(b_.CreateZExt(h, b_.getInt32Ty()), 16), b_.getFloatTy());
}

double FuncEmitter::host_bf16(double v) {
  float f = static_cast<float>(v);
  if (std::isnan(f)) return f;
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7FFF + ((bits >> 16) & 1);
  bits &= 0xFFFF0000u;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// Type-based alias information for an element access of `buf`: every
/// buffer is only ever accessed with its element type, so a float store
/// (scores) does not clobber the i64 offset arrays or the i32 lengths that
/// index it, and LICM can hoist those loads out of inner loops.
void FuncEmitter::tag(llvm::Instruction* access, const BufferNode* buf) {
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

llvm::Value* FuncEmitter::base_pointer(const BufferNode* buf) {
  if (auto it = base_.find(buf); it != base_.end()) return it->second;
  auto it = slot_.find(buf);
  if (it == slot_.end()) throw EmitError{"buffer `" + buf->name + "` has no storage"};
  return b_.CreateLoad(llvm::PointerType::getUnqual(ctx_), it->second);
}

llvm::Value* FuncEmitter::address(const BufferNode* buf, const std::vector<ir::Expr>& args, bool flat) {
  if (buf->dims.empty()) {
    if (auto it = scalar_.find(buf); it != scalar_.end()) return it->second;
    return base_pointer(buf);  // scalar input or output
  }
  if (!flat && buf->dims.size() != 1) throw EmitError{"access to `" + buf->name + "` was not storage-lowered"};
  return b_.CreateInBoundsGEP(mem_type(buf->type), base_pointer(buf), {emit(args[0])});
}

llvm::Value* FuncEmitter::to_value(llvm::Value* v, Scalar t) {
  if (t == Scalar::BF16) return bf16_bits_to_f32(v);
  return t == Scalar::Bool ? b_.CreateICmpNE(v, b_.getInt8(0)) : v;
}

llvm::Value* FuncEmitter::to_mem(llvm::Value* v, Scalar t) {
  if (t == Scalar::BF16) return f32_to_bf16_bits(v);
  return t == Scalar::Bool ? b_.CreateZExt(v, b_.getInt8Ty()) : v;
}

llvm::Value* FuncEmitter::cast(llvm::Value* v, Scalar from, Scalar to) {
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

llvm::Value* FuncEmitter::math_call(const char* name, llvm::Value* x, Scalar t) {
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

llvm::Value* FuncEmitter::emit(const ir::Expr& e) {
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

llvm::Value* FuncEmitter::unary(const ir::Expr& e) {
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
llvm::Value* FuncEmitter::float_op(BinOp op, llvm::Value* a, llvm::Value* c) {
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

llvm::Value* FuncEmitter::binary(const ir::Expr& e) {
  Scalar t = e->args[0]->type;
  if (e->binop == BinOp::And || e->binop == BinOp::Or) {
    llvm::Value* a = emit(e->args[0]);
    llvm::Value* c = emit(e->args[1]);
    return e->binop == BinOp::And ? b_.CreateAnd(a, c) : b_.CreateOr(a, c);
  }
  llvm::Value* a = emit(e->args[0]);
  llvm::Value* c = emit(e->args[1]);
  if (is_float(t)) return float_op(e->binop, a, c);
  if (checked_ && e->type == Scalar::I64 && (e->binop == BinOp::Add || e->binop == BinOp::Sub || e->binop == BinOp::Mul)) {
    auto id = e->binop == BinOp::Add   ? llvm::Intrinsic::sadd_with_overflow
              : e->binop == BinOp::Sub ? llvm::Intrinsic::ssub_with_overflow
                                       : llvm::Intrinsic::smul_with_overflow;
    llvm::Value* r = b_.CreateBinaryIntrinsic(id, a, c);
    fail_if(b_.CreateExtractValue(r, 1), kOverflow, f_.name + ": the lengths make an offset overflow");
    return b_.CreateExtractValue(r, 0);
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

}  // namespace dccc::backend::llvmgen
