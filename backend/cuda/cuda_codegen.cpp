#include "backend/cuda/cuda_codegen.h"

#include "backend/abi/c_emit.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

namespace dccc::backend {
namespace {

using ir::BinOp;
using ir::BufferKind;
using ir::BufferNode;
using ir::ExprKind;
using ir::StmtKind;
using ir::UnOp;

[[noreturn]] void unsupported(const std::string& what) {
  throw std::runtime_error("the CUDA target does not support " + what + " yet");
}

/// Type of a value in registers: 16-bit floats compute in f32 and are
/// rounded to their type after every operation, as on the CPU target.
const char* value_type(Scalar t) {
  switch (t) {
    case Scalar::F16:
    case Scalar::BF16:
    case Scalar::F32: return "float";
    case Scalar::F64: return "double";
    case Scalar::I32: return "int32_t";
    case Scalar::I64: return "int64_t";
    case Scalar::Bool: return "bool";
  }
  return "void";
}

const char* unsigned_type(Scalar t) { return t == Scalar::I32 ? "uint32_t" : "uint64_t"; }

std::string round_to(Scalar t, const std::string& v) {
  if (t == Scalar::BF16) return "dcc_rbf16(" + v + ")";
  if (t == Scalar::F16) return "dcc_rf16(" + v + ")";
  return v;
}

double round_bf16_host(double v) {
  float f = static_cast<float>(v);
  if (std::isnan(f)) return f;
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7FFF + ((bits >> 16) & 1);
  bits &= 0xFFFF0000u;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::string float_literal(double v, Scalar t) {
  if (t == Scalar::F64) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    return fmt::format("__longlong_as_double(0x{:016x}LL)", bits);
  }
  if (t == Scalar::BF16) v = round_bf16_host(v);
  float f = static_cast<float>(v);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  std::string lit = fmt::format("__int_as_float(0x{:08x})", bits);
  return t == Scalar::F16 ? "dcc_rf16(" + lit + ")" : lit;
}

}  // namespace

bool is_parallel_loop(const ir::Stmt& loop) {
  if (!loop || loop->kind != StmtKind::For) return false;
  bool ok = true;
  std::set<const BufferNode*> scalars;
  ir::each_stmt(loop->body[0], [&](const ir::StmtNode& s) {
    if (s.kind == StmtKind::Print) ok = false;
    if (s.kind != StmtKind::Store) return;
    const BufferNode* b = s.buffer.get();
    if (b->dims.empty()) {
      if (b->kind != BufferKind::Scalar) ok = false;  // a scalar result or input
      scalars.insert(b);
    } else {
      // Lowering binds each left-side index to its own dimension, so a store
      // whose offset mentions the loop variable writes a different element in
      // every iteration; one that does not would race.
      bool mentioned = false;
      for (const auto& a : s.args) mentioned = mentioned || ir::mentions(a, loop->var);
      if (!mentioned) ok = false;
    }
  });
  // Every scalar it writes must be private to an iteration.
  for (const BufferNode* b : scalars) ok = ok && ir::written_before_read(loop->body[0], b);
  return ok;
}

namespace {

/// Emits one function: its kernels and host code.
class FuncEmitter {
 public:
  FuncEmitter(const ir::Func& f, std::string& out) : f_(f), out_(out) {}

  void run() {
    for (size_t k = 0; k < f_.buffers.size(); ++k) slot_[f_.buffers[k].get()] = static_cast<int>(k);
    for (size_t k = 0; k < f_.sizes.size(); ++k) size_index_[f_.sizes[k].name] = static_cast<int>(k);
    // Host code reads the length arrays and offset arrays through `hp`.
    for (size_t k = 0; k < f_.buffers.size(); ++k) {
      const BufferNode* b = f_.buffers[k].get();
      if (b->kind == BufferKind::Input && !b->dims.empty()) host_.buffers[b] = fmt::format("((const {}*)hp[{}])", c_type(b->type), k);
      if (b->kind == BufferKind::Aux) host_.buffers[b] = fmt::format("((int64_t*)hp[{}])", k);
    }
    check_host_computable();
    out_ += fmt::format("// ---- {} ----\nstruct {}__args {{\n  int64_t s[{}];\n  void* p[{}];\n  int* err;\n}};\n\n",
                        f_.name, f_.name, std::max<size_t>(1, f_.sizes.size()), std::max<size_t>(1, f_.buffers.size()));
    std::vector<ir::Stmt> items = f_.body->kind == StmtKind::Seq ? f_.body->body : std::vector<ir::Stmt>{f_.body};
    std::vector<Launch> launches;
    for (size_t k = 0; k < items.size(); ++k) launches.push_back(emit_kernel(items[k], static_cast<int>(k)));
    emit_launcher(launches);
    emit_host_entry();
  }

 private:
  struct Launch {
    std::string kernel;
    bool parallel = false;
    ir::Stmt outer;                  // the loop on blockIdx.y (or on x when `inner` is empty)
    std::vector<ir::Stmt> inner;     // loops flattened over threads
    int tile_x = -1, tile_y = -1;    // indices into `inner` of the register-tiled loops
  };

  /// Register tiling (unroll-and-jam) of a contraction: each thread computes
  /// kTile x kTile outputs over two parallel loops X and Y, so that a load
  /// that does not depend on Y is made once for all y, and vice versa. The
  /// innermost parallel body must be `pre; R; post` where R is a perfect
  /// nest of reduction loops whose extents do not mention X or Y, whose
  /// innermost statements only update private scalars, and in which some
  /// load ignores X and some other load ignores Y (otherwise nothing is
  /// reused and tiling only adds registers).
  static constexpr int kTile = 4;
  struct TilePlan {
    std::vector<ir::Stmt> pre, post;
    ir::Stmt nest;                   // R
    int x = -1, y = -1;
  };
  std::optional<TilePlan> plan_tiling(const Launch& l, const ir::Stmt& body) {
    if (l.inner.size() < 2) return std::nullopt;
    std::vector<ir::Stmt> items = body->kind == StmtKind::Seq ? body->body : std::vector<ir::Stmt>{body};
    TilePlan plan;
    for (const auto& it : items) {
      bool has_loop = false;
      ir::each_stmt(it, [&](const ir::StmtNode& x) { has_loop = has_loop || x.kind == StmtKind::For; });
      if (it->kind == StmtKind::For) {
        if (plan.nest) return std::nullopt;
        plan.nest = it;
      } else if (has_loop) {
        return std::nullopt;
      } else {
        (plan.nest ? plan.post : plan.pre).push_back(it);
      }
    }
    if (!plan.nest) return std::nullopt;
    std::vector<ir::Stmt> levels;
    ir::Stmt cur = plan.nest;
    while (cur && cur->kind == StmtKind::For) {
      levels.push_back(cur);
      ir::Stmt next = only_loop(cur->body[0]);
      if (!next) break;
      cur = next;
    }
    ir::Stmt innermost = levels.back()->body[0];
    bool only_private = true;
    std::vector<const ir::ExprNode*> loads;
    ir::each_stmt(innermost, [&](const ir::StmtNode& x) {
      if (x.kind == StmtKind::For || x.kind == StmtKind::Print) only_private = false;
      if (x.kind == StmtKind::Store && !private_.count(x.buffer.get())) only_private = false;
      ir::own_exprs(x, [&](const ir::ExprNode& e) {
        if (e.kind == ExprKind::Load && !e.buffer->dims.empty()) loads.push_back(&e);
      });
    });
    auto load_mentions = [](const ir::ExprNode* ld, const ir::Var& v) {
      for (const auto& a : ld->args)
        if (ir::mentions(a, v)) return true;
      return false;
    };
    if (!only_private) return std::nullopt;
    // Prefer Y = the innermost parallel loop (adjacent threads, adjacent y).
    for (int y = static_cast<int>(l.inner.size()) - 1; y >= 0; --y)
      for (int x = 0; x < static_cast<int>(l.inner.size()); ++x) {
        if (x == y) continue;
        const ir::Var& vx = l.inner[x]->var;
        const ir::Var& vy = l.inner[y]->var;
        bool extents_ok = true;
        for (const auto& lv : levels)
          if (ir::mentions(lv->extent, vx) || ir::mentions(lv->extent, vy)) extents_ok = false;
        if (ir::mentions(l.inner[y]->extent, vx) || ir::mentions(l.inner[x]->extent, vy)) extents_ok = false;
        if (!extents_ok) continue;
        bool reuse_x = false, reuse_y = false;
        for (const auto& ld : loads) {
          bool mx = load_mentions(ld, vx), my = load_mentions(ld, vy);
          if (mx && !my) reuse_y = true;  // made once per x, used for every y
          if (my && !mx) reuse_x = true;
        }
        if (reuse_x && reuse_y) {
          plan.x = x;
          plan.y = y;
          return plan;
        }
      }
    return std::nullopt;
  }

  // ---- device code ----

  std::string var(const ir::Var& v) {
    auto it = vars_.find(v.get());
    if (it != vars_.end()) return it->second;
    return vars_[v.get()] = fmt::format("v{}_{}", vars_.size(), ident(v->name));
  }
  std::string buf_ptr(const BufferNode* b) {
    return fmt::format("(({}*)a.p[{}])", c_type(b->type), slot_.at(b));
  }
  std::string scalar_ref(const BufferNode* b) {
    if (private_.count(b)) return "r_" + ident(b->name) + (tiled_ ? "[dx][dy]" : "");
    return buf_ptr(b) + "[0]";
  }
  std::string load_value(const BufferNode* b, const std::string& lvalue) {
    if (b->type == Scalar::BF16) return "dcc_bf16_load(" + lvalue + ")";
    if (b->type == Scalar::F16) return "dcc_f16_load(" + lvalue + ")";
    if (b->type == Scalar::Bool) return "(" + lvalue + " != 0)";
    return lvalue;
  }
  std::string store_value(Scalar t, const std::string& v) {
    if (t == Scalar::BF16) return "dcc_bf16_bits(" + v + ")";
    if (t == Scalar::F16) return "dcc_f16_bits(" + v + ")";
    if (t == Scalar::Bool) return "(uint8_t)(" + v + ")";
    return v;
  }

  std::string cast(const std::string& v, Scalar from, Scalar to) {
    if (from == to) return v;
    if (to == Scalar::Bool) return fmt::format("({} != 0)", v);
    if (is_float(to)) {
      if (to == Scalar::F64) return fmt::format("((double)({}))", v);
      return round_to(to, fmt::format("((float)({}))", v));
    }
    if (is_float(from)) {
      // Saturating (cvt.rzi): NaN gives 0, out-of-range values clamp.
      bool dbl = from == Scalar::F64;
      if (to == Scalar::I32) return fmt::format("{}({})", dbl ? "__double2int_rz" : "__float2int_rz", v);
      return fmt::format("((int64_t){}({}))", dbl ? "__double2ll_rz" : "__float2ll_rz", v);
    }
    return fmt::format("(({})({}))", value_type(to), v);
  }

  std::string expr(const ir::Expr& e) {
    switch (e->kind) {
      case ExprKind::IntImm:
        if (e->type == Scalar::Bool) return e->int_value ? "true" : "false";
        if (e->type == Scalar::I32) return fmt::format("((int32_t){})", e->int_value);
        if (e->int_value == INT64_MIN) return "INT64_MIN";
        return fmt::format("((int64_t){}LL)", e->int_value);
      case ExprKind::FloatImm: return float_literal(e->float_value, e->type);
      case ExprKind::VarRef: return var(e->var);
      case ExprKind::SizeRef: {
        auto it = size_index_.find(e->name);
        if (it == size_index_.end()) throw std::runtime_error("unknown size `" + e->name + "`");
        return fmt::format("a.s[{}]", it->second);
      }
      case ExprKind::Load: {
        const BufferNode* b = e->buffer.get();
        if (b->dims.empty()) return private_.count(b) ? scalar_ref(b) : load_value(b, scalar_ref(b));
        if (!e->flat) unsupported("an access that was not storage-lowered");
        return load_value(b, fmt::format("{}[{}]", buf_ptr(b), expr(e->args[0])));
      }
      case ExprKind::Cast: return cast(expr(e->args[0]), e->args[0]->type, e->type);
      case ExprKind::Select:
        return fmt::format("(({}) ? ({}) : ({}))", expr(e->args[0]), expr(e->args[1]), expr(e->args[2]));
      case ExprKind::Unary: return round_to(e->type, unary(e));
      case ExprKind::Binary: return round_to(e->type, binary(e));
    }
    unsupported("this expression");
  }

  std::string unary(const ir::Expr& e) {
    Scalar t = e->args[0]->type;
    std::string x = expr(e->args[0]);
    bool dbl = t == Scalar::F64;
    auto fn = [&](const char* f32, const char* f64) { return fmt::format("{}({})", dbl ? f64 : f32, x); };
    switch (e->unop) {
      case UnOp::Neg:
        if (is_float(t)) return "(-(" + x + "))";
        return fmt::format("(({})(({})0 - ({})({})))", value_type(t), unsigned_type(t), unsigned_type(t), x);
      case UnOp::Not: return "(!(" + x + "))";
      case UnOp::Abs:
        if (is_float(t)) return fn("fabsf", "fabs");
        return fmt::format("dcc_iabs({})", x);
      case UnOp::Exp: return fn("expf", "exp");
      case UnOp::Log: return fn("logf", "log");
      case UnOp::Sqrt: return fn("sqrtf", "sqrt");
      case UnOp::Rsqrt:
        // In f64, then rounded once, like the CPU target.
        if (dbl) return "(1.0 / sqrt(" + x + "))";
        return "((float)(1.0 / sqrt((double)(" + x + "))))";
      case UnOp::Tanh: return fn("tanhf", "tanh");
      case UnOp::Erf: return fn("erff", "erf");
    }
    unsupported("this unary operator");
  }

  std::string binary(const ir::Expr& e) {
    Scalar t = e->args[0]->type;
    std::string a = expr(e->args[0]), c = expr(e->args[1]);
    bool dbl = t == Scalar::F64;
    switch (e->binop) {
      case BinOp::And: return fmt::format("(({}) && ({}))", a, c);
      case BinOp::Or: return fmt::format("(({}) || ({}))", a, c);
      case BinOp::EQ: return fmt::format("(({}) == ({}))", a, c);
      case BinOp::NE: return fmt::format("(({}) != ({}))", a, c);
      case BinOp::LT: return fmt::format("(({}) < ({}))", a, c);
      case BinOp::LE: return fmt::format("(({}) <= ({}))", a, c);
      default: break;
    }
    if (is_float(t)) {
      switch (e->binop) {
        case BinOp::Add: return fmt::format("(({}) + ({}))", a, c);
        case BinOp::Sub: return fmt::format("(({}) - ({}))", a, c);
        case BinOp::Mul: return fmt::format("(({}) * ({}))", a, c);
        case BinOp::Div: return fmt::format("(({}) / ({}))", a, c);
        case BinOp::Mod: return fmt::format("{}({}, {})", dbl ? "fmod" : "fmodf", a, c);
        case BinOp::Min: return fmt::format("{}({}, {})", dbl ? "fmin" : "fminf", a, c);
        case BinOp::Max: return fmt::format("{}({}, {})", dbl ? "fmax" : "fmaxf", a, c);
        case BinOp::Pow: return fmt::format("{}({}, {})", dbl ? "pow" : "powf", a, c);
        default: break;
      }
      unsupported("this float operator");
    }
    const char* vt = value_type(t);
    const char* ut = unsigned_type(t);
    switch (e->binop) {
      // Wrapping, like the CPU target: computed unsigned.
      case BinOp::Add: return fmt::format("(({})(({})({}) + ({})({})))", vt, ut, a, ut, c);
      case BinOp::Sub: return fmt::format("(({})(({})({}) - ({})({})))", vt, ut, a, ut, c);
      case BinOp::Mul: return fmt::format("(({})(({})({}) * ({})({})))", vt, ut, a, ut, c);
      case BinOp::Div: return fmt::format("(({})dcc_idiv({}, {}, a.err))", vt, a, c);
      case BinOp::Mod: return fmt::format("(({})dcc_imod({}, {}, a.err))", vt, a, c);
      case BinOp::Min: return fmt::format("dcc_imin(({}), ({}))", a, c);
      case BinOp::Max: return fmt::format("dcc_imax(({}), ({}))", a, c);
      case BinOp::Pow: return cast(fmt::format("pow((double)({}), (double)({}))", a, c), Scalar::F64, t);
      default: break;
    }
    unsupported("this integer operator");
  }

  void stmt(const ir::Stmt& s, int depth, std::string& out) {
    if (!s) return;
    std::string pad(depth * 2, ' ');
    switch (s->kind) {
      case StmtKind::Seq:
        for (const auto& c : s->body) stmt(c, depth, out);
        return;
      case StmtKind::For: {
        std::string v = var(s->var);
        out += fmt::format("{}for (int64_t {} = 0, {}_n = {}; {} < {}_n; ++{}) {{\n", pad, v, v, expr(s->extent), v, v, v);
        stmt(s->body[0], depth + 1, out);
        out += pad + "}\n";
        return;
      }
      case StmtKind::Store: {
        const BufferNode* b = s->buffer.get();
        std::string v = expr(s->value);
        if (s->value->type != b->type) v = cast(v, s->value->type, b->type);
        if (b->dims.empty()) {
          if (private_.count(b)) out += fmt::format("{}{} = {};\n", pad, scalar_ref(b), v);
          else out += fmt::format("{}{} = {};\n", pad, scalar_ref(b), store_value(b->type, v));
        } else {
          if (!s->flat) unsupported("a store that was not storage-lowered");
          out += fmt::format("{}{}[{}] = {};\n", pad, buf_ptr(b), expr(s->args[0]), store_value(b->type, v));
        }
        return;
      }
      case StmtKind::IfThenElse:
        out += fmt::format("{}if ({}) {{\n", pad, expr(s->value));
        stmt(s->body[0], depth + 1, out);
        if (s->body.size() > 1 && s->body[1]) {
          out += pad + "} else {\n";
          stmt(s->body[1], depth + 1, out);
        }
        out += pad + "}\n";
        return;
      case StmtKind::Print: unsupported("`print` in a kernel");
      case StmtKind::Assert: unsupported("the `where` of an inlined call checked in a kernel");
    }
  }

  static ir::Stmt only_loop(const ir::Stmt& body) {
    ir::Stmt s = body;
    while (s && s->kind == StmtKind::Seq && s->body.size() == 1) s = s->body[0];
    return s && s->kind == StmtKind::For ? s : nullptr;
  }

  Launch emit_kernel(const ir::Stmt& item, int index) {
    Launch l;
    l.kernel = fmt::format("{}__k{}", f_.name, index);
    private_.clear();
    if (item->kind == StmtKind::For && is_parallel_loop(item)) {
      l.parallel = true;
      l.outer = item;
      ir::Stmt cur = item;
      while (l.inner.size() < 3) {
        ir::Stmt next = only_loop(cur->body[0]);
        if (!next || !is_parallel_loop(next)) break;
        // Its extent may depend on the outer loop only, so the launch can size it.
        bool ok = true;
        for (const auto& in : l.inner)
          if (ir::mentions(next->extent, in->var)) ok = false;
        if (!ok) break;
        l.inner.push_back(next);
        cur = next;
      }
      // Scalars written inside the parallel body are private to a thread.
      ir::each_stmt(cur->body[0], [&](const ir::StmtNode& s) {
        if (s.kind == StmtKind::Store && s.buffer->dims.empty()) private_.insert(s.buffer.get());
      });
      if (l.inner.empty()) {
        // One parallel loop: threads over it.
        std::string v = var(item->var);
        std::string body;
        declare_private(body, 2);
        stmt(item->body[0], 2, body);
        out_ += fmt::format(
            "__global__ void __launch_bounds__(256) {}({}__args a) {{\n"
            "  const int64_t {}_n = {};\n"
            "  for (int64_t {} = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; {} < {}_n;"
            " {} += (int64_t)gridDim.x * blockDim.x) {{\n{}  }}\n}}\n\n",
            l.kernel, f_.name, v, expr(item->extent), v, v, v, v, body);
      } else if (auto plan = plan_tiling(l, cur->body[0])) {
        l.tile_x = plan->x;
        l.tile_y = plan->y;
        emit_tiled_kernel(l, *plan);
      } else {
        std::string v0 = var(item->var);
        std::string body = "    int64_t t_rest = t;\n";
        for (size_t k = l.inner.size(); k-- > 0;) {
          std::string v = var(l.inner[k]->var);
          body += fmt::format("    const int64_t {} = t_rest % {}_n;\n", v, v);
          if (k) body += fmt::format("    t_rest /= {}_n;\n", v);
        }
        declare_private(body, 2);
        stmt(l.inner.back()->body[0], 2, body);
        std::string extents, total = "(int64_t)1";
        for (const auto& in : l.inner) {
          std::string v = var(in->var);
          extents += fmt::format("    const int64_t {}_n = {};\n", v, expr(in->extent));
          total = fmt::format("{} * {}_n", total, v);
        }
        out_ += fmt::format(
            "__global__ void __launch_bounds__(256) {}({}__args a) {{\n"
            "  const int64_t {}_n = {};\n"
            "  for (int64_t {} = blockIdx.y; {} < {}_n; {} += gridDim.y) {{\n{}"
            "    const int64_t t_n = {};\n"
            "    for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < t_n;"
            " t += (int64_t)gridDim.x * blockDim.x) {{\n{}    }}\n  }}\n}}\n\n",
            l.kernel, f_.name, v0, expr(item->extent), v0, v0, v0, v0, extents, total, indent(body, 2));
      }
    } else {
      std::string body;
      stmt(item, 1, body);
      out_ += fmt::format("__global__ void {}({}__args a) {{\n  if (blockIdx.x != 0 || threadIdx.x != 0) return;\n{}}}\n\n",
                          l.kernel, f_.name, body);
    }
    private_.clear();
    return l;
  }

  void emit_tiled_kernel(const Launch& l, const TilePlan& plan) {
    const ir::Stmt& item = l.outer;
    std::string v0 = var(item->var);
    std::string vx = var(l.inner[plan.x]->var), vy = var(l.inner[plan.y]->var);
    std::string extents, total = "(int64_t)1";
    for (size_t k = 0; k < l.inner.size(); ++k) {
      std::string v = var(l.inner[k]->var);
      extents += fmt::format("    const int64_t {}_n = {};\n", v, expr(l.inner[k]->extent));
    }
    // Thread space: the other inner loops, then ceil(nX / T) x ceil(nY / T)
    // tiles; thread (tx, ty) takes x = tx + dx * SX, y = ty + dy * SY.
    extents += fmt::format("    const int64_t sx = ({}_n + {} - 1) / {};\n    const int64_t sy = ({}_n + {} - 1) / {};\n", vx,
                           kTile, kTile, vy, kTile, kTile);
    for (size_t k = 0; k < l.inner.size(); ++k)
      if (static_cast<int>(k) != plan.x && static_cast<int>(k) != plan.y) total += " * " + var(l.inner[k]->var) + "_n";
    total += " * sx * sy";
    std::string body = "    int64_t t_rest = t;\n";
    body += "    const int64_t ty = t_rest % sy;\n    t_rest /= sy;\n    const int64_t tx = t_rest % sx;\n    t_rest /= sx;\n";
    for (size_t k = l.inner.size(); k-- > 0;) {
      if (static_cast<int>(k) == plan.x || static_cast<int>(k) == plan.y) continue;
      std::string v = var(l.inner[k]->var);
      body += fmt::format("    const int64_t {} = t_rest % {}_n;\n    t_rest /= {}_n;\n", v, v, v);
    }
    for (const BufferNode* b : private_)
      body += fmt::format("    {} r_{}[{}][{}];\n", value_type(b->type), ident(b->name), kTile, kTile);
    tiled_ = true;
    // x and y of lane (dx, dy), clamped into range so that loads stay in
    // bounds; stores happen only where both are in range.
    auto lanes = [&](int depth, bool guard, const std::function<void(std::string&, int)>& inner) {
      std::string pad(depth * 2, ' ');
      std::string o;
      o += fmt::format("{}#pragma unroll\n{}for (int dx = 0; dx < {}; ++dx) {{\n", pad, pad, kTile);
      o += fmt::format("{}  const bool ok_x = tx + dx * sx < {}_n;\n", pad, vx);
      o += fmt::format("{}  const int64_t {} = ok_x ? tx + dx * sx : {}_n - 1;\n", pad, vx, vx);
      o += fmt::format("{}  #pragma unroll\n{}  for (int dy = 0; dy < {}; ++dy) {{\n", pad, pad, kTile);
      o += fmt::format("{}    const bool ok_y = ty + dy * sy < {}_n;\n", pad, vy);
      o += fmt::format("{}    const int64_t {} = ok_y ? ty + dy * sy : {}_n - 1;\n", pad, vy, vy);
      o += fmt::format("{}    (void)ok_x;\n{}    (void)ok_y;\n", pad, pad);
      if (guard) {
        o += pad + "    if (ok_x && ok_y) {\n";
        inner(o, depth + 3);
        o += pad + "    }\n";
      } else {
        inner(o, depth + 2);
      }
      o += pad + "  }\n" + pad + "}\n";
      return o;
    };
    // Statements before the nest: private initialisations run in every lane
    // (so no register is read uninitialised); anything else only in range.
    for (const auto& st : plan.pre) {
      bool private_only = true;
      ir::each_stmt(st, [&](const ir::StmtNode& x) {
        if (x.kind == StmtKind::Store && !private_.count(x.buffer.get())) private_only = false;
      });
      body += lanes(2, !private_only, [&](std::string& o, int d) { stmt(st, d, o); });
    }
    // The reduction nest once, with the lanes inside its innermost body.
    std::vector<ir::Stmt> levels;
    ir::Stmt cur = plan.nest;
    while (cur && cur->kind == StmtKind::For) {
      levels.push_back(cur);
      ir::Stmt next = only_loop(cur->body[0]);
      if (!next) break;
      cur = next;
    }
    int depth = 2;
    for (const auto& lv : levels) {
      std::string v = var(lv->var);
      std::string pad(depth * 2, ' ');
      body += fmt::format("{}for (int64_t {} = 0, {}_n = {}; {} < {}_n; ++{}) {{\n", pad, v, v, expr(lv->extent), v, v, v);
      ++depth;
    }
    body += lanes(depth, false, [&](std::string& o, int d) { stmt(levels.back()->body[0], d, o); });
    for (size_t k = levels.size(); k-- > 0;) {
      --depth;
      body += std::string(depth * 2, ' ') + "}\n";
    }
    for (const auto& st : plan.post) body += lanes(2, true, [&](std::string& o, int d) { stmt(st, d, o); });
    tiled_ = false;
    out_ += fmt::format(
        "__global__ void __launch_bounds__(256) {}({}__args a) {{\n"
        "  const int64_t {}_n = {};\n"
        "  for (int64_t {} = blockIdx.y; {} < {}_n; {} += gridDim.y) {{\n{}"
        "    const int64_t t_n = {};\n"
        "    for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < t_n;"
        " t += (int64_t)gridDim.x * blockDim.x) {{\n{}    }}\n  }}\n}}\n\n",
        l.kernel, f_.name, v0, expr(item->extent), v0, v0, v0, v0, extents, total, indent(body, 2));
  }

  static std::string indent(const std::string& text, int extra) {
    std::string pad(extra * 2, ' '), out;
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      out += pad + text.substr(start, end - start) + "\n";
      start = end + 1;
    }
    return out;
  }

  void declare_private(std::string& body, int depth) {
    std::string pad(depth * 2, ' ');
    for (const BufferNode* b : private_) body += fmt::format("{}{} r_{} = 0;\n", pad, value_type(b->type), ident(b->name));
  }

  // ---- host code ----

  /// Every extent and total must be computable on the host: from sizes,
  /// input length arrays and aux arrays (not from arrays the body computes).
  void check_host_computable() {
    auto host_ok = [&](const ir::ExprNode& x) {
      if (x.kind == ExprKind::Load && x.buffer->kind != BufferKind::Input && x.buffer->kind != BufferKind::Aux)
        unsupported("extents computed by the program itself (`" + x.buffer->name + "`)");
    };
    for (const auto& b : f_.buffers) ir::each_expr(b->total, host_ok);
    ir::each_stmt(f_.prelude, [&](const ir::StmtNode& s) { ir::own_exprs(s, host_ok); });
    ir::each_stmt(f_.body, [&](const ir::StmtNode& s) {
      if (s.kind == StmtKind::For) ir::each_expr(s.extent, host_ok);
    });
    // The wrapper passes host copies of every integer input array.
    for (const auto& b : f_.buffers)
      if (b->kind == BufferKind::Input && !b->dims.empty() && is_int(b->type)) host_len_.insert(b.get());
  }

  /// The sizes by name (`s_B`), as host code refers to them.
  std::string size_decls() const {
    std::string o;
    for (size_t k = 0; k < f_.sizes.size(); ++k)
      o += fmt::format("  const int64_t s_{0} = sizes[{1}];\n  (void)s_{0};\n", ident(f_.sizes[k].name), k);
    return o;
  }

  void emit_launcher(const std::vector<Launch>& launches) {
    const std::string& fn = f_.name;
    std::string o;
    // aux_dev/aux_host: the aux arrays (Func::buffers order) on the device
    // and on the host, from the prelude cache or a held prelude (C ABI); NULL:
    // computed here on the host and uploaded, per call.
    o += fmt::format("extern \"C\" int32_t {}__cuda(const int64_t* sizes, void* const* dev, void* const* host, "
                     "void* const* aux_dev, void* const* aux_host) {{\n", fn);
    o += fmt::format("  const int nb = {};\n", f_.buffers.size());
    o += "  std::vector<void*> hp(nb > 0 ? nb : 1, nullptr);   // host views: length arrays, aux arrays\n";
    o += "  std::vector<void*> owned;                           // device memory freed at the end\n";
    o += "  std::vector<void*> host_owned;\n";
    o += fmt::format("  {}__args a;\n  std::memset(&a, 0, sizeof a);\n", fn);
    o += fmt::format("  for (int k = 0; k < {}; ++k) a.s[k] = sizes[k];\n", f_.sizes.size());
    o += size_decls();
    o += "  int ovf = 0;\n  (void)ovf;\n  int32_t st = 0;\n  int err_host = 0;\n  (void)err_host;\n";
    // Stream-ordered allocations from the device's pool, which keeps freed
    // memory for the next call (dcc_cuda_init raises its release threshold).
    o += "  if (dcc_cuda_init() != 0) return DCC_ERR_CUDA;\n";
    o += "  auto dalloc = [&](size_t bytes, void** p) -> bool {\n"
         "    if (bytes == 0) bytes = 1;\n"
         "    cudaError_t e = cudaMallocAsync(p, bytes, 0);\n"
         "    if (e != cudaSuccess) { *p = nullptr; dcc_cuda_fail(e, \"allocating device memory\"); return false; }\n"
         "    owned.push_back(*p);\n"
         "    if ((e = cudaMemsetAsync(*p, 0, bytes, 0)) != cudaSuccess) { dcc_cuda_fail(e, \"cudaMemsetAsync\"); return false; }\n"
         "    return true;\n  };\n";
    o += "  DccProfile prof;\n";
    o += "  if (!dalloc(sizeof(int), (void**)&a.err)) { st = DCC_ERR_CUDA; goto done; }\n";
    // Inputs and outputs: device pointers; scalars go through device slots.
    size_t dev_slot = 0;
    for (const auto& b : f_.buffers) {
      int k = slot_.at(b.get());
      if (b->kind == BufferKind::Input || b->kind == BufferKind::Output) {
        if (b->dims.empty()) {
          o += fmt::format("  if (!dalloc(8, &a.p[{}])) {{ st = DCC_ERR_CUDA; goto done; }}\n", k);
          if (b->kind == BufferKind::Input)
            o += fmt::format("  if (cudaMemcpy(a.p[{}], dev[{}], sizeof({}), cudaMemcpyHostToDevice) != cudaSuccess) {{ st = dcc_cuda_fail(cudaGetLastError(), \"cudaMemcpy\"); goto done; }}\n",
                             k, dev_slot, c_type(b->type));
        } else {
          o += fmt::format("  a.p[{}] = dev[{}];\n", k, dev_slot);
          if (host_len_.count(b.get())) o += fmt::format("  hp[{}] = host[{}];\n", k, dev_slot);
        }
        ++dev_slot;
      }
    }
    // The prelude on the host, then uploaded (unless given).
    o += "  if (aux_host) {\n";
    for (int i = 0; const auto& b : f_.buffers)
      if (b->kind == BufferKind::Aux) {
        o += fmt::format("    hp[{0}] = aux_host[{1}];\n    a.p[{0}] = aux_dev[{1}];\n", slot_.at(b.get()), i);
        ++i;
      }
    o += "  } else {\n";
    for (const auto& b : f_.buffers) {
      if (b->kind != BufferKind::Aux) continue;
      int k = slot_.at(b.get());
      o += fmt::format("  {{\n    ovf = 0;\n    const int64_t n = {};\n", host_.expr(b->total));
      o += fmt::format("    if (ovf || n < 0) {{ st = dcc_set_error(DCC_ERR_OVERFLOW, \"{}: offset array size overflows\"); goto done; }}\n", fn);
      o += fmt::format("    hp[{}] = std::calloc((size_t)n + 1, 8);\n    host_owned.push_back(hp[{}]);\n", k, k);
      o += fmt::format("    if (!hp[{}]) {{ st = dcc_set_error(DCC_ERR_OUT_OF_MEMORY, \"{}: cannot allocate an offset array\"); goto done; }}\n  }}\n", k, fn);
    }
    if (f_.prelude) {
      o += "  ovf = 0;\n  {\n";
      host_.stmt(f_.prelude, 2, o);
      o += fmt::format("  }}\n  if (ovf) {{ st = dcc_set_error(DCC_ERR_OVERFLOW, \"{}: the lengths make an offset overflow\"); goto done; }}\n", fn);
    }
    for (const auto& b : f_.buffers)
      if (b->kind == BufferKind::Aux) {
        int k = slot_.at(b.get());
        o += fmt::format("  {{\n    const int64_t n = {};\n", host_.expr(b->total));
        o += fmt::format("    if (!dalloc((size_t)n * 8, &a.p[{}])) {{ st = DCC_ERR_CUDA; goto done; }}\n", k);
        o += fmt::format("    if (n > 0 && cudaMemcpy(a.p[{}], hp[{}], (size_t)n * 8, cudaMemcpyHostToDevice) != cudaSuccess) {{ st = dcc_cuda_fail(cudaGetLastError(), \"cudaMemcpy\"); goto done; }}\n  }}\n",
                         k, k);
      }
    o += "  }\n";
    for (const auto& b : f_.buffers) {
      int k = slot_.at(b.get());
      if (b->kind == BufferKind::Local || b->kind == BufferKind::Scalar) {
        o += fmt::format("  {{\n    ovf = 0;\n    const int64_t n = {};\n", b->dims.empty() ? "(int64_t)1" : host_.expr(b->total));
        o += fmt::format("    if (ovf || n < 0 || (uint64_t)n > (uint64_t)INT64_MAX / 8) {{ st = dcc_set_error(DCC_ERR_OVERFLOW, \"{}: the size of `{}` overflows\"); goto done; }}\n",
                         fn, b->name);
        o += fmt::format("    if (!dalloc((size_t)n * sizeof({}), &a.p[{}])) {{ st = DCC_ERR_CUDA; goto done; }}\n  }}\n",
                         c_type(b->type), k);
      }
    }
    // The kernels, in statement order on the default stream.
    for (const auto& l : launches) {
      o += "  {\n    ovf = 0;\n    prof.start();\n";
      if (!l.parallel) {
        o += fmt::format("    {}<<<1, 1>>>(a);\n", l.kernel);
      } else if (l.inner.empty()) {
        o += fmt::format("    const int64_t n = {};\n", host_.expr(l.outer->extent));
        o += fmt::format("    if (n > 0) {}<<<(unsigned)std::min<int64_t>((n + 255) / 256, 65535), 256>>>(a);\n", l.kernel);
      } else {
        std::string v0 = host_.var(l.outer->var);
        o += fmt::format("    const int64_t n0 = {};\n    int64_t most = 0;\n", host_.expr(l.outer->extent));
        o += fmt::format("    for (int64_t {} = 0; {} < n0; ++{}) {{\n      int64_t m = 1;\n", v0, v0, v0);
        for (size_t k = 0; k < l.inner.size(); ++k) {
          std::string n = host_.expr(l.inner[k]->extent);
          if (static_cast<int>(k) == l.tile_x || static_cast<int>(k) == l.tile_y)
            n = fmt::format("(({} + {}) / {})", n, kTile - 1, kTile);
          o += fmt::format("      m = dcc__mul(m, {}, &ovf);\n", n);
        }
        o += "      most = std::max(most, m);\n    }\n";
        o += fmt::format("    if (ovf) {{ st = dcc_set_error(DCC_ERR_OVERFLOW, \"{}: an iteration space overflows\"); goto done; }}\n", fn);
        o += "    if (n0 > 0 && most > 0) {\n";
        o += "      dim3 grid((unsigned)std::min<int64_t>((most + 255) / 256, 4096), (unsigned)std::min<int64_t>(n0, 65535));\n";
        o += fmt::format("      {}<<<grid, 256>>>(a);\n    }}\n", l.kernel);
      }
      o += fmt::format("    prof.stop(\"{}\");\n", l.kernel);
      o += "    cudaError_t e = cudaGetLastError();\n";
      o += fmt::format("    if (e != cudaSuccess) {{ st = dcc_cuda_fail(e, \"launching {}\"); goto done; }}\n  }}\n", l.kernel);
    }
    o += "  {\n    cudaError_t e = cudaDeviceSynchronize();\n";
    o += "    if (e != cudaSuccess) { st = dcc_cuda_fail(e, \"running the kernels\"); goto done; }\n";
    o += "    if ((e = cudaMemcpy(&err_host, a.err, sizeof(int), cudaMemcpyDeviceToHost)) != cudaSuccess) { st = dcc_cuda_fail(e, \"cudaMemcpy\"); goto done; }\n";
    o += "    if (err_host == 1) { st = dcc_set_error(DCC_ERR_INVALID_ARGUMENT, \"integer division by zero\"); goto done; }\n";
    o += "    if (err_host == 2) { st = dcc_set_error(DCC_ERR_OVERFLOW, \"integer division overflow\"); goto done; }\n  }\n";
    // Scalar results come back to the host.
    dev_slot = 0;
    for (const auto& b : f_.buffers) {
      if (b->kind != BufferKind::Input && b->kind != BufferKind::Output) continue;
      if (b->kind == BufferKind::Output && b->dims.empty())
        o += fmt::format("  if (cudaMemcpy(dev[{}], a.p[{}], sizeof({}), cudaMemcpyDeviceToHost) != cudaSuccess) {{ st = dcc_cuda_fail(cudaGetLastError(), \"cudaMemcpy\"); goto done; }}\n",
                         dev_slot, slot_.at(b.get()), c_type(b->type));
      ++dev_slot;
    }
    o += "done:\n  for (void* p : owned) cudaFreeAsync(p, 0);\n  for (void* p : host_owned) std::free(p);\n  return st;\n}\n\n";
    out_ += o;
  }

  /// f__cuda_host: host buffers in, host buffers out (tests).
  void emit_host_entry() {
    const std::string& fn = f_.name;
    std::string o;
    o += fmt::format("extern \"C\" int32_t {}__cuda_host(const int64_t* sizes, void* const* hb) {{\n", fn);
    o += size_decls();
    o += fmt::format("  const int nb = {};\n", f_.buffers.size());
    o += "  std::vector<void*> hp(nb > 0 ? nb : 1, nullptr), host_owned, owned;\n";
    o += "  std::vector<void*> dev, host;\n  int ovf = 0;\n  (void)ovf;\n  int32_t st = 0;\n";
    // Host views of the length arrays for the totals.
    size_t slot = 0;
    for (const auto& b : f_.buffers) {
      if (b->kind != BufferKind::Input && b->kind != BufferKind::Output) continue;
      if (b->kind == BufferKind::Input && !b->dims.empty()) o += fmt::format("  hp[{}] = hb[{}];\n", slot_.at(b.get()), slot);
      ++slot;
    }
    for (const auto& b : f_.buffers) {
      if (b->kind != BufferKind::Aux) continue;
      int k = slot_.at(b.get());
      o += fmt::format("  {{\n    const int64_t n = {};\n    hp[{}] = std::calloc((size_t)n + 1, 8);\n    host_owned.push_back(hp[{}]);\n  }}\n",
                       host_.expr(b->total), k, k);
    }
    if (f_.prelude) {
      o += "  {\n";
      host_.stmt(f_.prelude, 2, o);
      o += "  }\n";
    }
    slot = 0;
    std::string copy_back;
    for (const auto& b : f_.buffers) {
      if (b->kind != BufferKind::Input && b->kind != BufferKind::Output) continue;
      if (b->dims.empty()) {
        o += fmt::format("  dev.push_back(hb[{}]);\n  host.push_back(nullptr);\n", slot);
      } else {
        o += fmt::format("  {{\n    const size_t bytes = (size_t){} * sizeof({});\n    void* p = nullptr;\n", host_.expr(b->total), c_type(b->type));
        o += "    if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) { st = dcc_cuda_fail(cudaGetLastError(), \"cudaMalloc\"); goto done; }\n";
        o += "    owned.push_back(p);\n";
        if (b->kind == BufferKind::Input)
          o += fmt::format("    if (bytes) cudaMemcpy(p, hb[{}], bytes, cudaMemcpyHostToDevice);\n", slot);
        o += fmt::format("    dev.push_back(p);\n    host.push_back(hb[{}]);\n  }}\n", slot);
        if (b->kind == BufferKind::Output)
          copy_back += fmt::format("  {{\n    const size_t bytes = (size_t){} * sizeof({});\n    if (bytes) cudaMemcpy(hb[{}], dev[{}], bytes, cudaMemcpyDeviceToHost);\n  }}\n",
                                   host_.expr(b->total), c_type(b->type), slot, slot);
      }
      ++slot;
    }
    o += fmt::format("  st = {}__cuda(sizes, dev.data(), host.data(), nullptr, nullptr);\n  if (st) goto done;\n", fn);
    o += copy_back;
    o += "done:\n  for (void* p : owned) cudaFree(p);\n  for (void* p : host_owned) std::free(p);\n  return st;\n}\n\n";
    out_ += o;
  }

  const ir::Func& f_;
  std::string& out_;
  std::map<const BufferNode*, int> slot_;
  std::map<std::string, int> size_index_;
  CEmitter host_;  // host code: totals, the prelude, launch sizes
  std::map<const ir::VarNode*, std::string> vars_;
  std::set<const BufferNode*> private_;
  bool tiled_ = false;  // private scalars are kTile x kTile register arrays
  std::set<const BufferNode*> host_len_;
};

const char* kPrologue = R"CU(// Generated by dccc (CUDA target). Do not edit.
#include <cuda_runtime.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

#include "dccrt.h"

static int32_t dcc_cuda_fail(cudaError_t e, const char* what) {
  char msg[256];
  std::snprintf(msg, sizeof msg, "CUDA error in %s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
  cudaGetLastError();  // clear a non-sticky error
  return dcc_set_error(DCC_ERR_CUDA, msg);
}

extern "C" int dcc_cuda_device_count(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

// Used by the C wrapper: a host copy of a device array (the lengths).
extern "C" __attribute__((visibility("hidden"))) void* dcc__cuda_stage(const void* device, size_t bytes) {
  void* h = dcc_alloc(bytes ? bytes : 1);
  if (!h) return nullptr;
  if (bytes) {
    cudaError_t e = cudaMemcpy(h, device, bytes, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
      dcc_free(h);
      dcc_cuda_fail(e, "copying a length array to the host (is it a device pointer?)");
      return nullptr;
    }
  }
  return h;
}

// Once per process: the default memory pool keeps what is freed (so a
// second call with the same lengths allocates nothing new).
static int dcc_cuda_init() {
  static int status = [] {
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    cudaMemPool_t pool;
    if (e == cudaSuccess) e = cudaDeviceGetDefaultMemPool(&pool, dev);
    uint64_t keep = UINT64_MAX;
    if (e == cudaSuccess) e = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    if (e != cudaSuccess) return (int)dcc_cuda_fail(e, "setting up the device memory pool");
    return 0;
  }();
  if (status != 0) dcc_set_error(DCC_ERR_CUDA, "the CUDA device could not be set up (see the first error)");
  return status;
}

// DCCC_CUDA_PROFILE=1 prints each kernel's time (CUDA events) to stderr.
struct DccProfile {
  bool on = [] { const char* e = std::getenv("DCCC_CUDA_PROFILE"); return e && *e && *e != '0'; }();
  cudaEvent_t a = nullptr, b = nullptr;
  void start() {
    if (!on) return;
    if (!a) { cudaEventCreate(&a); cudaEventCreate(&b); }
    cudaEventRecord(a, 0);
  }
  void stop(const char* name) {
    if (!on) return;
    cudaEventRecord(b, 0);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    std::fprintf(stderr, "dccc-profile: %s %.3f ms\n", name, ms);
  }
  ~DccProfile() { if (a) { cudaEventDestroy(a); cudaEventDestroy(b); } }
};


// bf16 is rounded to nearest even exactly as on the CPU target; NaN stays NaN.
__device__ __forceinline__ float dcc_bf16_load(uint16_t h) { return __uint_as_float(((uint32_t)h) << 16); }
__device__ __forceinline__ uint16_t dcc_bf16_bits(float f) {
  uint32_t bits = __float_as_uint(f);
  if (f != f) return (uint16_t)((bits | 0x00400000u) >> 16);
  return (uint16_t)((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}
__device__ __forceinline__ float dcc_rbf16(float f) { return dcc_bf16_load(dcc_bf16_bits(f)); }
__device__ __forceinline__ float dcc_f16_load(uint16_t h) { return __half2float(__ushort_as_half(h)); }
__device__ __forceinline__ uint16_t dcc_f16_bits(float f) { return __half_as_ushort(__float2half_rn(f)); }
__device__ __forceinline__ float dcc_rf16(float f) { return __half2float(__float2half_rn(f)); }

// Integer division by zero and INT_MIN / -1 set an error flag (1, 2) read
// by the launcher, never undefined behaviour.
template <typename T>
__device__ __forceinline__ T dcc_idiv(T a, T b, int* err) {
  if (b == 0) { atomicCAS(err, 0, 1); return 0; }
  if (b == (T)-1 && a == (T)((T)1 << (sizeof(T) * 8 - 1))) { atomicCAS(err, 0, 2); return 0; }
  return a / b;
}
template <typename T>
__device__ __forceinline__ T dcc_imod(T a, T b, int* err) {
  if (b == 0) { atomicCAS(err, 0, 1); return 0; }
  if (b == (T)-1 && a == (T)((T)1 << (sizeof(T) * 8 - 1))) { atomicCAS(err, 0, 2); return 0; }
  return a % b;
}
template <typename T> __device__ __forceinline__ T dcc_imin(T a, T b) { return a < b ? a : b; }
template <typename T> __device__ __forceinline__ T dcc_imax(T a, T b) { return a > b ? a : b; }
template <typename T> __device__ __forceinline__ T dcc_iabs(T a) { return a < 0 ? (T)(0 - (typename std::make_unsigned<T>::type)a) : a; }

)CU";

}  // namespace

std::string emit_cuda(const ir::Module& m) {
  std::string out = kPrologue;
  out += kCheckedIntHelpers;
  out += "\n";
  for (const auto& f : m.funcs) {
    if (f.name == "main") continue;
    if (!f.storage_lowered) throw std::runtime_error("function `" + f.name + "` is not storage-lowered");
    FuncEmitter(f, out).run();
  }
  return out;
}

}  // namespace dccc::backend
