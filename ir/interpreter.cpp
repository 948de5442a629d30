#include "ir/interpreter.h"

#include "ir/masked_arith.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <set>
#include <sstream>

namespace dccc::ir {
namespace {

float to_bf16(double v) {
  float f = static_cast<float>(v);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (std::isnan(f)) return f;
  bits += 0x7FFF + ((bits >> 16) & 1);  // round to nearest even
  bits &= 0xFFFF0000u;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace

bool Interpreter::fused_step(const StmtNode& s) {
  const Expr& v = s.value;
  const BufferNode* acc = s.buffer.get();
  if (!acc->dims.empty() || acc->kind == BufferKind::Input || acc->kind == BufferKind::Output) return false;
  if ((v->type != Scalar::F32 && v->type != Scalar::F64) || acc->type != v->type) return false;
  if (v->kind != ExprKind::Binary || v->binop != BinOp::Add) return false;
  const Expr& a = v->args[0];
  const Expr& x = v->args[1];
  return a->kind == ExprKind::Load && a->buffer.get() == acc && a->args.empty() && x->kind == ExprKind::Binary &&
         x->binop == BinOp::Mul && x->type == v->type;
}

Interpreter::Value Interpreter::fma_step(const StmtNode& s) {
  const Expr& v = s.value;
  double acc = eval(v->args[0]).f;
  double p = eval(v->args[1]->args[0]).f, q = eval(v->args[1]->args[1]).f;
  Value out;
  if (exact_ || v->type == Scalar::F64) out.f = std::fma(p, q, acc);
  else out.f = static_cast<double>(std::fmaf(static_cast<float>(p), static_cast<float>(q), static_cast<float>(acc)));
  return out;
}

Interpreter::Value Interpreter::round_to(Scalar t, double v) const {
  Value out;
  if (exact_ && is_float(t)) {
    out.f = v;
    return out;
  }
  switch (t) {
    case Scalar::F64: out.f = v; break;
    case Scalar::F32: out.f = static_cast<float>(v); break;
    case Scalar::F16: out.f = static_cast<double>(static_cast<_Float16>(v)); break;
    case Scalar::BF16: out.f = to_bf16(v); break;
    default: out.i = static_cast<int64_t>(v);
  }
  return out;
}

double Interpreter::as_double(const Value& v, Scalar t) const { return is_float(t) ? v.f : static_cast<double>(v.i); }
int64_t Interpreter::as_int(const Value& v, Scalar t) const {
  if (!is_float(t)) return v.i;
  // Saturating, like the backends: NaN gives 0, out-of-range values clamp.
  if (std::isnan(v.f)) return 0;
  if (v.f >= 9223372036854775807.0) return INT64_MAX;
  if (v.f <= -9223372036854775808.0) return INT64_MIN;
  return static_cast<int64_t>(v.f);
}

namespace {
int64_t saturate_to(Scalar to, Scalar from, double f, int64_t i) {
  if (to != Scalar::I32) return i;
  if (is_float(from)) {
    if (std::isnan(f)) return 0;
    if (f >= 2147483647.0) return INT32_MAX;
    if (f <= -2147483648.0) return INT32_MIN;
    return static_cast<int32_t>(f);
  }
  return static_cast<int32_t>(i);  // integer narrowing wraps, as in C
}
}  // namespace

std::vector<std::vector<int64_t>> Interpreter::index_space(const BufferNode* b) {
  std::vector<Tuple> out;
  Tuple idx(b->dims.size());
  std::function<void(size_t)> walk = [&](size_t d) {
    if (d == b->dims.size()) {
      out.push_back(idx);
      return;
    }
    Value ev = eval(b->dims[d].extent);
    int64_t n = ev.i;
    if (n < 0) throw InterpError(fmt::format("extent {} of `{}` is negative ({})", d, b->name, n));
    for (int64_t k = 0; k < n; ++k) {
      idx[d] = k;
      env_[b->dims[d].var.get()] = k;
      walk(d + 1);
    }
    env_.erase(b->dims[d].var.get());
  };
  walk(0);
  return out;
}

void Interpreter::check_in_bounds(const BufferNode* b, const Tuple& idx) {
  if (idx.size() != b->dims.size())
    throw InterpError(fmt::format("`{}` accessed with {} indices, has {} dimensions", b->name, idx.size(), b->dims.size()));
  // Bind the dimension variables to the indices so inner extents can be evaluated.
  std::map<const VarNode*, int64_t> saved = env_;
  for (size_t d = 0; d < idx.size(); ++d) {
    int64_t n = eval(b->dims[d].extent).i;
    // Storage padding (a schedule's) extends the dimension: padded loop
    // iterations compute into it.
    if (d < b->pad.size() && b->pad[d] > 1) n = (n + b->pad[d] - 1) / b->pad[d] * b->pad[d];
    if (idx[d] < 0 || idx[d] >= n) {
      env_ = saved;
      throw InterpError(fmt::format("out-of-bounds access: `{}` index {} is {} but the extent is {}", b->name, d, idx[d], n));
    }
    env_[b->dims[d].var.get()] = idx[d];
  }
  env_ = saved;
}

void Interpreter::run(const Func& f, const std::map<std::string, int64_t>& sizes,
                      const std::map<const BufferNode*, std::vector<double>>& inputs) {
  sizes_ = sizes;
  fn_ = f.name;
  flat_ = f.storage_lowered;
  for (const auto& s : f.sizes)
    if (!sizes_.count(s.name)) throw InterpError("no value given for size `" + s.name + "`");
  if (flat_) {
    // Packed data is the storage itself; the prelude needs the length
    // buffers, and the totals need the prelude.
    for (const Buffer& b : input_buffers(f)) {
        auto it = inputs.find(b.get());
        if (it == inputs.end()) throw InterpError("no data given for input `" + b->name + "`");
        auto& m = mem_[b.get()];
        for (size_t k = 0; k < it->second.size(); ++k)
          m[b->dims.empty() ? Tuple{} : Tuple{static_cast<int64_t>(k)}] = round_to(b->type, it->second[k]);
      }
    exec(f.prelude);
    for (const Buffer& b : input_buffers(f)) {
        if (b->dims.empty()) continue;
        int64_t total = eval(b->total).i;
        if (total != static_cast<int64_t>(inputs.at(b.get()).size()))
          throw InterpError(fmt::format("input `{}` has {} elements but its extents give {}", b->name,
                                        inputs.at(b.get()).size(), total));
      }
    run_checks(f);
    exec(f.body);
    return;
  }
  // Inputs in dependency order: a length buffer before the buffers it shapes.
  {
    for (const Buffer& b : input_buffers(f)) {
      auto it = inputs.find(b.get());
      if (it == inputs.end()) throw InterpError("no data given for input `" + b->name + "`");
      auto& m = mem_[b.get()];
      if (b->dims.empty()) {
        if (it->second.size() != 1) throw InterpError("scalar input `" + b->name + "` needs one value");
        m[{}] = round_to(b->type, it->second[0]);
        continue;
      }
      auto space = index_space(b.get());
      if (space.size() != it->second.size())
        throw InterpError(fmt::format("input `{}` has {} elements but its extents give {}", b->name, it->second.size(),
                                      space.size()));
      for (size_t k = 0; k < space.size(); ++k) m[space[k]] = round_to(b->type, it->second[k]);
    }
  }
  run_checks(f);
  // A length array the function computes is checked before the first
  // statement that touches a tensor it shapes raggedly, as storage lowering
  // checks it before summing its offsets (ir/storage_lowering.h).
  std::set<const BufferNode*> checked;
  for (const Stmt& item : items_of(f.body)) {
    std::set<const BufferNode*> touched;
    each_stmt(item, [&](const StmtNode& x) {
      if (x.buffer) touched.insert(x.buffer.get());
      own_exprs(x, [&](const ExprNode& e) {
        if (e.kind == ExprKind::Load) touched.insert(e.buffer.get());
      });
    });
    for (const BufferNode* b : touched) check_lengths(b, checked);
    exec(item);
  }
}

void Interpreter::check_lengths(const BufferNode* b, std::set<const BufferNode*>& checked) {
  // The dimensions inside the first that sizes others: the slices its
  // prefix array sums (ir/storage_lowering.cpp).
  size_t first = b->dims.size();
  for (size_t k = 0; k < b->dims.size() && first == b->dims.size(); ++k)
    for (size_t j = k + 1; j < b->dims.size(); ++j)
      each_expr(b->dims[j].extent, [&](const ExprNode& x) {
        if (x.kind == ExprKind::VarRef && x.var == b->dims[k].var) first = k;
      });
  for (size_t j = first + 1; j < b->dims.size(); ++j) {
    std::vector<const BufferNode*> lengths;
    each_expr(b->dims[j].extent, [&](const ExprNode& x) {
      if (x.kind == ExprKind::Load) lengths.push_back(x.buffer.get());
    });
    for (const BufferNode* l : lengths) {
      if (l->kind != BufferKind::Local || !is_int(l->type) || l->dims.empty() || !checked.insert(l).second) continue;
      check_lengths(l, checked);  // a ragged length array's own lengths first
      auto space = index_space(l);
      const auto& m = mem_[l];
      for (size_t k = 0; k < space.size(); ++k) {
        auto it = m.find(space[k]);
        int64_t v = it == m.end() ? 0 : it->second.i;
        if (v < 0) throw InterpError(negative_length(l->name, static_cast<int64_t>(k), v));
      }
    }
  }
}

std::string Interpreter::negative_length(const std::string& name, int64_t index, int64_t value) const {
  return fmt::format("{}: `{}`[{}] is {}, a length the function computes; lengths must be >= 0", fn_, name, index,
                     value);
}

void Interpreter::run_checks(const Func& f) {
  for (const auto& c : f.checks) {
    exec(c.pre);
    std::function<void(size_t)> loop = [&](size_t d) {
      if (d == c.vars.size()) {
        if (!eval(c.cond).i) throw InterpError("`where` constraint violated: " + c.text);
        return;
      }
      int64_t n = eval(c.vars[d].second).i;
      for (int64_t k = 0; k < n; ++k) {
        env_[c.vars[d].first.get()] = k;
        loop(d + 1);
      }
      env_.erase(c.vars[d].first.get());
    };
    loop(0);
  }
}

int64_t Interpreter::flat_offset(const Expr& offset, const BufferNode* b) {
  int64_t off = eval(offset).i;
  int64_t total = eval(b->total).i;
  if (off < 0 || off >= total)
    throw InterpError(fmt::format("out-of-bounds access: `{}` offset {} outside its {} stored elements", b->name, off, total));
  return off;
}

std::map<const BufferNode*, std::vector<double>> Interpreter::make_inputs(
    const Func& f, const std::map<std::string, int64_t>& sizes,
    const std::function<double(const BufferNode*, int64_t)>& gen) {
  std::ostringstream sink;
  Interpreter in(sink);
  in.sizes_ = sizes;
  std::map<const BufferNode*, std::vector<double>> out;
  {
    for (const Buffer& b : input_buffers(f)) {
      std::vector<double> data;
      if (b->dims.empty()) {
        data.push_back(gen(b.get(), 0));
        in.mem_[b.get()][{}] = in.round_to(b->type, data[0]);
      } else {
        auto space = in.index_space(b.get());
        for (size_t k = 0; k < space.size(); ++k) {
          data.push_back(gen(b.get(), static_cast<int64_t>(k)));
          in.mem_[b.get()][space[k]] = in.round_to(b->type, data.back());
        }
      }
      out[b.get()] = std::move(data);
    }
  }
  return out;
}

std::vector<double> Interpreter::packed(const BufferNode* b) {
  std::vector<double> out;
  auto& m = mem_[b];
  auto space = index_space(b);
  for (size_t k = 0; k < space.size(); ++k) {
    const Tuple& idx = space[k];
    auto it = flat_ && !b->dims.empty() ? m.find(Tuple{static_cast<int64_t>(k)}) : m.find(idx);
    Value v = it == m.end() ? Value{} : it->second;
    out.push_back(as_double(v, b->type));
  }
  return out;
}

Interpreter::Value Interpreter::eval(const Expr& e) {
  switch (e->kind) {
    case ExprKind::IntImm: return Value{0, e->int_value};
    case ExprKind::FloatImm: return round_to(e->type, e->float_value);
    case ExprKind::VarRef: {
      auto it = env_.find(e->var.get());
      if (it == env_.end()) throw InterpError("variable `" + e->var->name + "` used outside its loop");
      return Value{0, it->second};
    }
    case ExprKind::SizeRef: {
      auto it = sizes_.find(e->name);
      if (it == sizes_.end()) throw InterpError("unknown size `" + e->name + "`");
      return Value{0, it->second};
    }
    case ExprKind::Load: {
      if (e->flat) {
        auto& m = mem_[e->buffer.get()];
        auto it = m.find(Tuple{flat_offset(e->args[0], e->buffer.get())});
        return it == m.end() ? Value{} : it->second;
      }
      Tuple idx;
      for (const auto& a : e->args) idx.push_back(eval(a).i);
      check_in_bounds(e->buffer.get(), idx);
      auto& m = mem_[e->buffer.get()];
      if (flat_ && idx.size() > 1) {
        // After storage lowering only extents load with indices (a nested
        // length array, `ntok[d][s]` in `[d: D][s: nsent[d]][ntok[d][s]]`);
        // the element lives at its position in packed order.
        auto space = index_space(e->buffer.get());
        auto at = std::find(space.begin(), space.end(), idx);
        idx = Tuple{static_cast<int64_t>(at - space.begin())};
      }
      auto it = m.find(idx);
      return it == m.end() ? Value{} : it->second;  // fresh storage reads as zero
    }
    case ExprKind::Cast: {
      Scalar from = e->args[0]->type;
      Value v = eval(e->args[0]);
      if (e->type == Scalar::Bool) return Value{0, as_double(v, from) != 0 ? 1 : 0};
      if (is_float(e->type)) return round_to(e->type, as_double(v, from));
      return Value{0, saturate_to(e->type, from, v.f, as_int(v, from))};
    }
    case ExprKind::Select: {
      Value c = eval(e->args[0]);
      return c.i ? eval(e->args[1]) : eval(e->args[2]);
    }
    case ExprKind::Unary: {
      Scalar t = e->args[0]->type;
      Value a = eval(e->args[0]);
      if (e->unop == UnOp::Not) return Value{0, a.i ? 0 : 1};
      if (!is_float(t)) {
        if (e->unop == UnOp::Neg || e->unop == UnOp::Abs) {
          // Two's complement in the operation's type, as the backends do:
          // -INT_MIN and abs(INT_MIN) are INT_MIN.
          bool negate = e->unop == UnOp::Neg || a.i < 0;
          int64_t r = negate ? static_cast<int64_t>(uint64_t{0} - static_cast<uint64_t>(a.i)) : a.i;
          if (e->type == Scalar::I32) r = static_cast<int32_t>(r);
          return Value{0, r};
        }
        throw InterpError("math on integers");
      }
      double x = a.f, r = 0;
      switch (e->unop) {
        case UnOp::Neg: r = -x; break;
        case UnOp::Exp: r = std::exp(x); break;
        case UnOp::Log: r = std::log(x); break;
        case UnOp::Sqrt: r = std::sqrt(x); break;
        case UnOp::Rsqrt: r = 1.0 / std::sqrt(x); break;
        case UnOp::Tanh: r = std::tanh(x); break;
        case UnOp::Erf: r = std::erf(x); break;
        case UnOp::Abs: r = std::fabs(x); break;
        default: break;
      }
      return round_to(e->type, r);
    }
    case ExprKind::Binary: {
      Scalar t = e->args[0]->type;
      if (e->binop == BinOp::And) return Value{0, eval(e->args[0]).i && eval(e->args[1]).i ? 1 : 0};
      if (e->binop == BinOp::Or) return Value{0, eval(e->args[0]).i || eval(e->args[1]).i ? 1 : 0};
      Value a = eval(e->args[0]), b = eval(e->args[1]);
      if (is_comparison(e->binop)) {
        double x = as_double(a, t), y = as_double(b, e->args[1]->type);
        bool r = false;
        if (!is_float(t)) {
          int64_t p = a.i, q = b.i;
          r = e->binop == BinOp::EQ ? p == q : e->binop == BinOp::NE ? p != q : e->binop == BinOp::LT ? p < q : p <= q;
        } else {
          r = e->binop == BinOp::EQ ? x == y : e->binop == BinOp::NE ? x != y : e->binop == BinOp::LT ? x < y : x <= y;
        }
        return Value{0, r ? 1 : 0};
      }
      if (!is_float(t)) {
        int64_t x = a.i, y = b.i, r = 0;
        bool ovf = false;
        if (checked_ && e->type == Scalar::I64) {
          if (e->binop == BinOp::Add) ovf = __builtin_add_overflow(x, y, &r);
          if (e->binop == BinOp::Sub) ovf = __builtin_sub_overflow(x, y, &r);
          if (e->binop == BinOp::Mul) ovf = __builtin_mul_overflow(x, y, &r);
        }
        if (ovf) throw InterpError(fn_ + ": the lengths make an offset overflow");
        switch (e->binop) {
          case BinOp::Add: r = static_cast<int64_t>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y)); break;
          case BinOp::Sub: r = static_cast<int64_t>(static_cast<uint64_t>(x) - static_cast<uint64_t>(y)); break;
          case BinOp::Mul: r = static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y)); break;
          case BinOp::Div:
          case BinOp::Mod:
            if (y == 0) throw InterpError("integer division by zero");
            // The quotient of the type's minimum by -1 does not fit the type.
            if (y == -1 && x == (e->type == Scalar::I32 ? int64_t{INT32_MIN} : INT64_MIN))
              throw InterpError("integer division overflow");
            r = e->binop == BinOp::Div ? x / y : x % y;
            break;
          case BinOp::Min: r = std::min(x, y); break;
          case BinOp::Max: r = std::max(x, y); break;
          case BinOp::Pow: r = static_cast<int64_t>(std::pow(static_cast<double>(x), static_cast<double>(y))); break;
          default: break;
        }
        if (e->type == Scalar::I32) r = static_cast<int32_t>(r);
        return Value{0, r};
      }
      double x = a.f, y = b.f, r = 0;
      switch (e->binop) {
        case BinOp::Add: r = x + y; break;
        // The masked-value rules (docs/language.md, "Masked values"):
        // -inf - -inf is -inf and 0 / 0 is 0, where IEEE gives NaN.
        case BinOp::Sub: r = masked_sub(x, y); break;
        case BinOp::Mul: r = x * y; break;
        case BinOp::Div: r = masked_div(x, y); break;
        case BinOp::Mod: r = std::fmod(x, y); break;
        case BinOp::Min: r = std::fmin(x, y); break;
        case BinOp::Max: r = std::fmax(x, y); break;
        case BinOp::Pow: r = std::pow(x, y); break;
        default: break;
      }
      return round_to(e->type, r);
    }
  }
  return {};
}

void Interpreter::exec(const Stmt& s) {
  if (!s) return;
  switch (s->kind) {
    case StmtKind::Seq:
      for (const auto& c : s->body) exec(c);
      return;
    case StmtKind::For: {
      int64_t n = eval(s->extent).i;
      for (int64_t k = 0; k < n; ++k) {
        env_[s->var.get()] = k;
        exec(s->body[0]);
      }
      env_.erase(s->var.get());
      return;
    }
    case StmtKind::Store: {
      Tuple idx;
      if (s->flat) {
        idx = {flat_offset(s->args[0], s->buffer.get())};
      } else {
        for (const auto& a : s->args) idx.push_back(eval(a).i);
        check_in_bounds(s->buffer.get(), idx);
      }
      // Offsets (aux arrays) are summed with overflow checks, as the
      // backends sum them.
      checked_ = s->buffer->kind == BufferKind::Aux;
      Value v = fused_step(*s) ? fma_step(*s) : eval(s->value);
      checked_ = false;
      Scalar from = s->value->type, to = s->buffer->type;
      if (from != to)
        v = is_float(to) ? round_to(to, as_double(v, from)) : Value{0, saturate_to(to, from, v.f, as_int(v, from))};
      mem_[s->buffer.get()][idx] = v;
      return;
    }
    case StmtKind::IfThenElse:
      if (eval(s->value).i) exec(s->body[0]);
      else if (s->body.size() > 1) exec(s->body[1]);
      return;
    case StmtKind::Assert:
      if (eval(s->value).i) return;
      if (s->length_check) throw InterpError(negative_length(s->text, eval(s->args[0]).i, eval(s->args[1]).i));
      throw InterpError("`where` constraint violated: " + s->text);
    case StmtKind::Print:
      if (s->buffer) {
        print_buffer(s->buffer.get());
      } else {
        std::string line = s->text;
        for (size_t i = 0; i < s->args.size(); ++i) line += (i ? " " : "") + format(eval(s->args[i]), s->args[i]->type);
        out_ << line << (s->newline ? "\n" : "");
      }
      return;
  }
}

std::string Interpreter::format(const Value& v, Scalar t) const {
  if (is_float(t) && std::isnan(v.f)) return "nan";  // the sign of a NaN is not meaningful
  switch (t) {
    case Scalar::Bool: return v.i ? "true" : "false";
    case Scalar::I32:
    case Scalar::I64: return std::to_string(v.i);
    case Scalar::F64: return fmt::format("{}", v.f);
    default: return fmt::format("{}", static_cast<float>(v.f));
  }
}

void Interpreter::print_buffer(const BufferNode* b) {
  auto& m = mem_[b];
  if (b->dims.empty()) {
    out_ << format(m[{}], b->type) << "\n";
    return;
  }
  // A tensor is ragged when an extent mentions an outer dimension's variable.
  bool ragged = false;
  for (size_t d = 1; d < b->dims.size(); ++d)
    for (size_t o = 0; o < d; ++o) ragged |= mentions(b->dims[d].extent, b->dims[o].var);
  Tuple idx(b->dims.size());
  int64_t position = 0;  // packed order: the k-th element lives at offset k
  std::function<std::string(size_t)> nest = [&](size_t d) -> std::string {
    if (d == b->dims.size()) {
      auto it = flat_ ? m.find(Tuple{position++}) : m.find(idx);
      return format(it == m.end() ? Value{} : it->second, b->type);
    }
    int64_t n = eval(b->dims[d].extent).i;
    std::string out = "[";
    for (int64_t k = 0; k < n; ++k) {
      idx[d] = k;
      env_[b->dims[d].var.get()] = k;
      out += (k ? ", " : "") + nest(d + 1);
    }
    env_.erase(b->dims[d].var.get());
    return out + "]";
  };
  if (!ragged) {
    out_ << nest(0) << "\n";
    return;
  }
  // Ragged: one line per outer index (one sequence per line).
  int64_t n = eval(b->dims[0].extent).i;
  out_ << "[\n";
  for (int64_t k = 0; k < n; ++k) {
    idx[0] = k;
    env_[b->dims[0].var.get()] = k;
    out_ << "  " << nest(1) << (k + 1 < n ? "," : "") << "\n";
  }
  env_.erase(b->dims[0].var.get());
  out_ << "]\n";
}

}  // namespace dccc::ir
