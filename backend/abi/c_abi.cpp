#include "backend/abi/c_abi.h"

#include "backend/abi/c_emit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <regex>
#include <set>

namespace dccc::backend {
namespace {

using ir::BinOp;
using ir::Buffer;
using ir::BufferKind;
using ir::BufferNode;
using ir::ExprKind;
using ir::Param;
using ir::StmtKind;

std::string struct_name(const ir::Func& f, const Param& p) {
  if (p.kind == Param::Coupling && p.type_name != "coupling") return p.type_name;
  return f.name + "_" + p.name + "_t";
}

std::string dims_text(const BufferNode& b, bool strip = false) {
  // [b: B, d1: q.seqlen[b], ...] as the IR prints extents, for comments.
  std::string out = "[";
  for (size_t i = 0; i < b.dims.size(); ++i) {
    std::function<std::string(const ir::Expr&)> ex = [&](const ir::Expr& e) -> std::string {
      switch (e->kind) {
        case ExprKind::IntImm: return std::to_string(e->int_value);
        case ExprKind::SizeRef: return e->name;
        case ExprKind::VarRef: return e->var->name;
        case ExprKind::Cast: return ex(e->args[0]);
        case ExprKind::Load: {
          // A coupling field reads its sibling: `seqlen[b]`, not `q.seqlen[b]`.
          std::string n = e->buffer->name;
          std::string r = (strip ? n.substr(n.rfind('.') + 1) : n) + "[";
          for (size_t k = 0; k < e->args.size(); ++k) r += (k ? ", " : "") + ex(e->args[k]);
          return r + "]";
        }
        case ExprKind::Binary: return "(" + ex(e->args[0]) + " " + ir::op_text(e->binop) + " " + ex(e->args[1]) + ")";
        default: return "?";
      }
    };
    out += (i ? ", " : "") + ex(b.dims[i].extent);
  }
  return out + "]" + scalar_name(b.type);
}

/// Emits the struct for an argument or result type, once per name.
void emit_struct(const ir::Func& f, const Param& p, std::set<std::string>& done, std::string& out) {
  if (p.kind == Param::Scalar) return;
  std::string name = struct_name(f, p);
  if (!done.insert(name).second) return;
  if (p.kind == Param::List) {
    const BufferNode& data = *p.fields[0].second;
    std::string row = "len[b]";
    for (size_t k = 2; k < data.dims.size(); ++k) {
      row += " * " + (data.dims[k].extent->kind == ExprKind::SizeRef ? data.dims[k].extent->name
                                                                     : std::to_string(data.dims[k].extent->int_value));
    }
    out += fmt::format("/* list {} of {}: count tensors, tensor b holding {} {} elements, row-major */\n", p.name, f.name,
                       row, c_type(data.type));
    out += fmt::format("typedef struct {} {{\n", name);
    out += fmt::format("  const {}* const* data;  /* data[b]: tensor b; may be NULL when it has no elements */\n", c_type(data.type));
    out += "  const int32_t* len;  /* count elements: the first extent of each tensor */\n";
    for (const auto& [size, e] : p.sizes) out += fmt::format("  int64_t {};\n", ident(size));
    out += fmt::format("}} {};\n\n", name);
    return;
  }
  out += p.kind == Param::Coupling ? fmt::format("/* coupling {} */\n", p.type_name)
                                   : fmt::format("/* tensor {} of {}: {} */\n", p.name, f.name, dims_text(*p.fields[0].second));
  out += fmt::format("typedef struct {} {{\n", name);
  for (const auto& [field, buf] : p.fields) {
    out += fmt::format("  {}* {};  /* {} */\n", c_type(buf->type), ident(field), dims_text(*buf, p.kind == Param::Coupling));
    out += fmt::format("  int64_t {}_len;  /* elements in {} */\n", ident(field), ident(field));
  }
  for (const auto& [size, e] : p.sizes) out += fmt::format("  int64_t {};\n", ident(size));
  out += fmt::format("}} {};\n\n", name);
}

/// A parameter's C name: in the header its name (assign_c_names made it a
/// valid one), in the wrapper's definitions CNames::arg.
std::string param_name(const Param& p, bool def) { return def ? CNames::arg(p.name) : ident(p.name); }

std::string signature(const ir::Func& f, const std::string& name, bool def = false) {
  std::string out = "dcc_status " + name + "(";
  bool first = true;
  for (const auto& p : f.params) {
    out += first ? "" : ", ";
    first = false;
    if (p.kind == Param::Scalar) out += fmt::format("{} {}", c_type(p.fields[0].second->type), param_name(p, def));
    else out += fmt::format("const {}* {}", struct_name(f, p), param_name(p, def));
  }
  for (const auto& r : f.results) {
    out += first ? "" : ", ";
    first = false;
    if (r.kind == Param::Scalar) out += fmt::format("{}* result", c_type(r.fields[0].second->type));
    else out += fmt::format("{}* result", struct_name(f, r));
  }
  if (first) out += "void";
  return out + ")";
}

/// The parameters of `f` as C, with or without the result pointer.
std::string param_list(const ir::Func& f, bool with_result, bool def) {
  std::string out;
  for (const auto& p : f.params) {
    out += out.empty() ? "" : ", ";
    if (p.kind == Param::Scalar) out += fmt::format("{} {}", c_type(p.fields[0].second->type), param_name(p, def));
    else out += fmt::format("const {}* {}", struct_name(f, p), param_name(p, def));
  }
  if (with_result)
    for (const auto& r : f.results) {
      out += out.empty() ? "" : ", ";
      if (r.kind == Param::Scalar) out += fmt::format("{}* result", c_type(r.fields[0].second->type));
      else out += fmt::format("{}* result", struct_name(f, r));
    }
  return out;
}

/// `dcc_status f_prelude(args..., dcc_prelude** prelude)`.
std::string prelude_signature(const ir::Func& f, bool def = false) {
  std::string params = param_list(f, false, def);
  return "dcc_status " + f.name + "_prelude(" + params + (params.empty() ? "" : ", ") + "dcc_prelude** prelude)";
}

/// `dcc_status f_with_prelude(const dcc_prelude* prelude, args..., result)`.
std::string with_prelude_signature(const ir::Func& f, bool def = false) {
  std::string params = param_list(f, true, def);
  return "dcc_status " + f.name + "_with_prelude(const dcc_prelude* prelude" + (params.empty() ? "" : ", ") + params + ")";
}

/// The input buffers loaded anywhere in `e` or in `s`.
void loaded_inputs(const ir::Expr& e, std::set<const BufferNode*>& out) {
  ir::each_expr(e, [&](const ir::ExprNode& x) {
    if (x.kind == ExprKind::Load && x.buffer->kind == BufferKind::Input) out.insert(x.buffer.get());
  });
}
void loaded_inputs(const ir::Stmt& s, std::set<const BufferNode*>& out) {
  ir::each_stmt(s, [&](const ir::StmtNode& x) {
    ir::own_exprs(x, [&](const ir::ExprNode& e) {
      if (e.kind == ExprKind::Load && e.buffer->kind == BufferKind::Input) out.insert(e.buffer.get());
    });
  });
}

/// Buffers whose values are read by totals, the prelude or checks: lengths.
std::set<const BufferNode*> length_buffers(const ir::Func& f) {
  std::set<const BufferNode*> out;
  for (const auto& b : f.buffers) loaded_inputs(b->total, out);
  loaded_inputs(f.prelude, out);
  return out;
}

/// FNV-1a, 64 bits: the prelude cache's `kind` of a generated prelude.
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

/// Most sizes, inputs and arrays of a unit the GPU prelude kernel takes.
constexpr size_t kGpuPreludeMax = 8;

/// The CUDA target's device copies of prelude units: declarations shared by
/// the C wrapper and the CUDA code (emit_cuda_prelude) that defines them.
const char* const kCudaPreludeDecls =
    "/* The device copy of a prelude unit (defined with the CUDA code, see\n"
    " * emit_cuda_prelude): dcc__cuda_prelude fills a cache entry with a device\n"
    " * pointer -- the host arrays uploaded, or, with DCCC_CUDA_PRELUDE=gpu and\n"
    " * `gpu` set, the unit computed by a GPU kernel from the device lengths --\n"
    " * and dcc__cuda_prelude_release frees it with the entry. */\n"
    "struct dcc__cuda_prelude_ctx {\n  const void* host;\n  size_t bytes;\n  const struct dcc__prelude_ctx* pc;\n"
    "  const void* const* dev_l;\n"
    "  int (*gpu)(const struct dcc__prelude_ctx* pc, const void* const* dev_l, void* dev_out);\n};\n"
    "#define DCC__DEVICE_KIND UINT64_C(0x6465766963650001)\n"
    "int64_t dcc__cuda_device(void);\n"
    "dcc_status dcc__cuda_prelude(void* ctx, void* out, size_t out_bytes);\n"
    "void dcc__cuda_prelude_release(void* buffer, size_t bytes);\n";

/// One piece of the prelude that the cache keeps as one entry: the prelude
/// statements that fill some aux arrays (statements touching a common aux
/// array are one unit, so a unit never reads another's arrays), with what
/// they read. `definition` is the unit as C with canonical names -- sizes
/// S0.., inputs L0.. (by first use), aux arrays P0.., loop variables v0.. --
/// and the element types and the aux sizes: units of any function (of any
/// library) with equal definitions compute equal bytes from equal sizes and
/// input contents, so `kind`, its hash, lets them share one entry.
struct PreludeUnit {
  std::vector<ir::Stmt> stmts;
  std::vector<Buffer> aux;           // filled here, in Func::buffers order
  std::vector<Buffer> inputs;        // read here (or by the aux sizes), by first use
  std::vector<std::string> sizes;    // read here (or by the aux sizes), by first use
  std::string definition;            // canonical C: declarations and body
  uint64_t kind = 0;
};

/// The prelude's units, or an empty vector when the prelude cannot be cached
/// (it touches buffers other than aux arrays and inputs, reads an aux array
/// no unit fills, or has no aux array).
std::vector<PreludeUnit> prelude_units(const ir::Func& f) {
  std::vector<PreludeUnit> units;
  if (!f.prelude) return units;
  std::vector<ir::Stmt> items = f.prelude->kind == StmtKind::Seq ? f.prelude->body : std::vector<ir::Stmt>{f.prelude};
  // Union of items that touch a common aux array.
  std::vector<size_t> parent(items.size());
  for (size_t k = 0; k < items.size(); ++k) parent[k] = k;
  std::function<size_t(size_t)> root = [&](size_t k) { return parent[k] == k ? k : parent[k] = root(parent[k]); };
  std::map<const BufferNode*, size_t> owner;
  bool ok = true;
  for (size_t k = 0; k < items.size(); ++k) {
    // An aux array that sizes an array this item fills (`fuse`'s F_fo0 of
    // F_oif0@(E)) is complete before the item runs: it is read like an input,
    // so its unit comes first and is found before this one is sized.
    std::set<const BufferNode*> sizing;
    ir::each_stmt(items[k], [&](const ir::StmtNode& st) {
      if (st.kind == StmtKind::Store && st.buffer && st.buffer->kind == BufferKind::Aux)
        ir::each_expr(st.buffer->total, [&](const ir::ExprNode& e) {
          if (e.kind == ExprKind::Load && e.buffer->kind == BufferKind::Aux && e.buffer != st.buffer)
            sizing.insert(e.buffer.get());
        });
    });
    auto touch = [&](const BufferNode* b) {
      if (b->kind == BufferKind::Input || sizing.count(b)) return;
      if (b->kind != BufferKind::Aux) {
        ok = false;
        return;
      }
      auto [it, fresh] = owner.emplace(b, k);
      if (!fresh) parent[root(k)] = root(it->second);
    };
    ir::each_stmt(items[k], [&](const ir::StmtNode& st) {
      if (st.kind == StmtKind::Store && st.buffer) touch(st.buffer.get());
      ir::own_exprs(st, [&](const ir::ExprNode& e) {
        if (e.kind == ExprKind::Load) touch(e.buffer.get());
      });
    });
  }
  if (!ok || items.empty()) return {};
  std::vector<Buffer> filled = ir::prelude_aux(f);
  std::map<size_t, size_t> unit_of;  // root item -> unit
  for (size_t k = 0; k < items.size(); ++k) {
    auto [it, fresh] = unit_of.emplace(root(k), units.size());
    if (fresh) units.emplace_back();
    units[it->second].stmts.push_back(items[k]);
  }
  for (const auto& [b, k] : owner) {
    Buffer buf;
    for (const auto& x : f.buffers)
      if (x.get() == b) buf = x;
    if (!buf || std::find(filled.begin(), filled.end(), buf) == filled.end()) return {};  // read, never filled
  }
  for (const auto& b : f.buffers)
    if (owner.count(b.get())) units[unit_of.at(root(owner.at(b.get())))].aux.push_back(b);
  // An aux array read as an input must come from an earlier unit.
  for (size_t k = 0; k < units.size(); ++k)
    for (const auto& st : units[k].stmts) {
        bool bad = false;
        ir::each_stmt(st, [&](const ir::StmtNode& y) {
          ir::own_exprs(y, [&](const ir::ExprNode& e) {
            if (e.kind != ExprKind::Load || e.buffer->kind != BufferKind::Aux) return;
            auto it = owner.find(e.buffer.get());
            if (it == owner.end() || unit_of.at(root(it->second)) > k) bad = true;
          });
        });
        for (const auto& b : units[k].aux)
          ir::each_expr(b->total, [&](const ir::ExprNode& e) {
            if (e.kind != ExprKind::Load || e.buffer->kind != BufferKind::Aux) return;
            auto it = owner.find(e.buffer.get());
            if (it == owner.end() || unit_of.at(root(it->second)) >= k) bad = true;
          });
        if (bad) return {};
      }
  const CNames names(f);
  for (auto& u : units) {
    CEmitter ce;
    ce.names = &names;
    ce.at = f.at;
    auto note = [&](const ir::ExprNode& e) {
      if (e.kind == ExprKind::SizeRef && std::find(u.sizes.begin(), u.sizes.end(), e.name) == u.sizes.end())
        u.sizes.push_back(e.name);
      bool other_aux = e.kind == ExprKind::Load && e.buffer->kind == BufferKind::Aux &&
                       std::find(u.aux.begin(), u.aux.end(), e.buffer) == u.aux.end();
      if (e.kind == ExprKind::Load && (e.buffer->kind == BufferKind::Input || other_aux) &&
          std::find(u.inputs.begin(), u.inputs.end(), e.buffer) == u.inputs.end())
        u.inputs.push_back(e.buffer);
    };
    for (const auto& st : u.stmts)
      ir::each_stmt(st, [&](const ir::StmtNode& x) {
        // A loop variable reused by another loop (`remap`'s y) keeps its name.
        if (x.kind == StmtKind::For && !ce.vars.count(x.var.get())) ce.vars[x.var.get()] = "v" + std::to_string(ce.vars.size());
        ir::own_exprs(x, [&](const ir::ExprNode& e) { note(e); });
      });
    for (const auto& b : u.aux) ir::each_expr(b->total, [&](const ir::ExprNode& e) { note(e); });
    std::string decl, body;
    for (size_t k = 0; k < u.sizes.size(); ++k) decl += fmt::format("  const int64_t S{0} = pc->s[{0}];\n  (void)S{0};\n", k);
    for (size_t k = 0; k < u.inputs.size(); ++k) {
      const Buffer& b = u.inputs[k];
      decl += fmt::format("  const {0}* const L{1} = (const {0}*)pc->l[{1}];\n", c_type(b->type), k);
      ce.buffers[b.get()] = b->dims.empty() ? fmt::format("(*L{})", k) : fmt::format("L{}", k);
    }
    for (size_t k = 0; k < u.aux.size(); ++k) {
      decl += k == 0 ? "  int64_t* const P0 = (int64_t*)out;\n"
                     : fmt::format("  int64_t* const P{} = P{} + pc->n[{}];\n", k, k - 1, k - 1);
      ce.buffers[u.aux[k].get()] = "P" + std::to_string(k);
    }
    for (const auto& st : u.stmts) ce.stmt(st, 1, body);
    std::string totals = "  /* sizes:";
    for (const auto& b : u.aux) totals += " " + ce.expr(b->total);
    totals += " */\n";
    std::string text = decl + totals + body;
    // Sizes by position, not by name: `s_H` is S0 here if H is read first.
    for (size_t k = 0; k < u.sizes.size(); ++k)
      text = std::regex_replace(text, std::regex("\\bs_" + names.size(u.sizes[k]) + "\\b"), "S" + std::to_string(k));
    u.definition = text;
    u.kind = fnv1a(text);
  }
  return units;
}

/// Whether the GPU may compute the unit's device copy: every input an array
/// (on the device), few enough of everything for the kernel's argument.
bool gpu_prelude(const PreludeUnit& u) {
  for (const auto& b : u.inputs)
    if (b->dims.empty() || b->kind != BufferKind::Input) return false;  // an earlier unit's array is on the host
  return u.inputs.size() <= kGpuPreludeMax && u.sizes.size() <= kGpuPreludeMax && u.aux.size() <= kGpuPreludeMax;
}

bool reads_aux(const ir::Expr& e) {
  if (!e) return false;
  if (e->kind == ExprKind::Load && e->buffer->kind == BufferKind::Aux) return true;
  for (const auto& a : e->args)
    if (reads_aux(a)) return true;
  return false;
}

std::string fail_return(const std::string& status, const std::string& fmt_text) {
  return fmt::format("dcc__fail({}, {});", status, fmt_text);
}

std::string fail(const std::string& status, const std::string& fmt_text, const std::string& args = "") {
  return fmt::format("st = dcc__fail({}, {}{});", status, fmt_text, args.empty() ? "" : ", " + args);
}

/// A C string literal of the printf format `s` (its `%` directives kept).
std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

/// Text that a printf format shows as is (`%` doubled).
std::string literal(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '%' ? std::string("%%") : std::string(1, c);
  return out;
}

/// The wrapper's locals of list argument `p` (`l_xs__packed`, `__rows`,
/// `__row`): a family of their own, apart from the parameters' `a_`.
std::string list_local(const Param& p) { return "l_" + ident(p.name); }

/// `text` with the list locals written as `ARG__x` renamed to `LOCAL__x`.
std::string to_list_locals(std::string text, const std::string& arg, const std::string& local) {
  for (size_t at = 0; (at = text.find(arg + "__", at)) != std::string::npos; at += local.size() + 2)
    text.replace(at, arg.size() + 2, local + "__");
  return text;
}

void emit_prepare(const ir::Func& f, Target target, std::string& out, std::string& prelude_callbacks,
                  std::set<uint64_t>& emitted_units) {
  const bool cuda = target == Target::Cuda;
  for (const auto& p : f.params)
    if (cuda && p.kind == Param::List)
      throw BackendUnsupported(p.at, "a `list` parameter on the CUDA target (`" + p.name + "` of `" + f.name + "`)");
  const CNames names(f);
  CEmitter c;
  c.names = &names;
  c.at = f.at;
  std::string fn = f.name;
  out += "static dcc_status " + fn + "__prepare(";
  {
    std::string sig = signature(f, "", true);
    size_t open = sig.find('(');
    std::string params = sig.substr(open + 1, sig.size() - open - 2);
    out += (params == "void" ? std::string() : params + ", ") + "dcc_prelude* held, int run) {\n";
  }
  out += "  dcc_status st = DCC_OK;\n  int ovf = 0;\n  (void)ovf;\n";
  const size_t pins_at = out.size();  // the cache entries' pins, declared once counted
  // Storage names.
  std::map<const BufferNode*, std::pair<std::string, std::string>> where;  // buffer -> (param, field)
  for (const auto& p : f.params) {
    if (p.kind == Param::Scalar) {
      c.buffers[p.fields[0].second.get()] = CNames::arg(p.name);
      continue;
    }
    out += fmt::format("  if (!{}) return {}\n", CNames::arg(p.name),
                       fail("DCC_ERR_NULL_POINTER", quote(fn + ": argument `" + p.name + "` is NULL")));
    if (p.kind == Param::List) {
      // The elements are packed into one buffer before the kernel runs.
      const Buffer& data = p.fields[0].second;
      c.buffers[data.get()] = list_local(p) + "__packed";
      c.buffers[p.fields[1].second.get()] = CNames::arg(p.name) + "->len";
      out += fmt::format("  {}* {}__packed = NULL;\n  int64_t {}__rows = 0, {}__row = 1;\n", c_type(data->type),
                         list_local(p), list_local(p), list_local(p));
      continue;
    }
    for (const auto& [field, buf] : p.fields) {
      c.buffers[buf.get()] = CNames::arg(p.name) + "->" + ident(field);
      where[buf.get()] = {p.name, field};
    }
  }
  if (!f.results.empty()) {
    const Param& r = f.results[0];
    out += fmt::format("  if (!result && run != 2) return {}\n", fail("DCC_ERR_NULL_POINTER", quote(fn + ": `result` is NULL")));
    for (const auto& [field, buf] : r.fields)
      if (buf->kind == BufferKind::Output) c.buffers[buf.get()] = r.kind == Param::Scalar ? "(*result)" : "result->" + ident(field);
  }
  for (const auto& b : f.buffers) {
    if (b->kind == BufferKind::Aux) {
      c.buffers[b.get()] = "b_" + names.buf(b.get());
      out += fmt::format("  int64_t* b_{} = NULL;\n", names.buf(b.get()));
      if (cuda) out += fmt::format("  int64_t* d_{} = NULL;\n", names.buf(b.get()));
    } else if (b->kind == BufferKind::Scalar) {
      c.buffers[b.get()] = "b_" + names.buf(b.get());
      out += fmt::format("  int64_t b_{} = 0;\n", names.buf(b.get()));
    }
  }
  // Host copies of integer input arrays (CUDA target), declared before the
  // first `goto done` so that the cleanup frees only what was set.
  std::vector<std::string> staged;
  for (const auto& b : f.buffers)
    if (cuda && b->kind == BufferKind::Input && !b->dims.empty() && is_int(b->type)) {
      staged.push_back("h_" + names.buf(b.get()));
      out += fmt::format("  void* h_{} = NULL;\n", names.buf(b.get()));
    }
  // Sizes: every argument carrying a size must agree.
  for (const auto& s : f.sizes) out += fmt::format("  int64_t s_{} = 0;\n  int have_{} = 0;\n", names.size(s.name), names.size(s.name));
  for (const auto& p : f.params) {
    for (const auto& [size, expect] : p.sizes) {
      std::string got = CNames::arg(p.name) + "->" + ident(size);
      out += fmt::format("  if ({} < 0) {{ {} goto done; }}\n", got,
                         fail("DCC_ERR_INVALID_ARGUMENT", quote(fn + ": " + p.name + "." + size + " is %lld; sizes must be >= 0"),
                              "(long long)" + got));
      if (expect->kind == ExprKind::SizeRef) {
        std::string s = names.size(expect->name);
        out += fmt::format("  if (have_{} && {} != s_{}) {{ {} goto done; }}\n", s, got, s,
                           fail("DCC_ERR_SIZE_MISMATCH",
                                quote(fn + ": size `" + expect->name + "` is %lld in `" + p.name + "` but %lld in an earlier argument"),
                                "(long long)" + got + ", (long long)s_" + s));
        out += fmt::format("  s_{} = {};\n  have_{} = 1;\n", s, got, s);
      } else if (expect->kind == ExprKind::IntImm) {
        out += fmt::format("  if ({} != INT64_C({})) {{ {} goto done; }}\n", got, expect->int_value,
                           fail("DCC_ERR_SIZE_MISMATCH",
                                quote(fn + ": " + p.name + "." + size + " is %lld but the program fixes it to " +
                                      std::to_string(expect->int_value)),
                                "(long long)" + got));
      }
    }
  }
  for (const auto& s : f.sizes)
    out += fmt::format("  if (!have_{}) {{ {} goto done; }}\n", names.size(s.name),
                       fail("DCC_ERR_INVALID_ARGUMENT", quote(fn + ": no argument carries size `" + s.name + "`")));

  // List arguments: pointers, lengths, the packed element count.
  for (const auto& p : f.params) {
    if (p.kind != Param::List) continue;
    const Buffer& data = p.fields[0].second;
    std::string a = CNames::arg(p.name), count = c.expr(p.sizes[0].second);
    const size_t from = out.size();
    out += fmt::format("  if ({} > 0 && (!{}->len || !{}->data)) {{ {} goto done; }}\n", count, a, a,
                       fail("DCC_ERR_NULL_POINTER", quote(fn + ": " + p.name + ".len or " + p.name + ".data is NULL")));
    out += "  ovf = 0;\n";
    for (size_t k = 2; k < data->dims.size(); ++k)
      out += fmt::format("  {0}__row = dcc__mul({0}__row, {1}, &ovf);\n", a, c.expr(data->dims[k].extent));
    out += fmt::format("  for (int64_t k = 0; k < {}; ++k) {{\n", count);
    out += fmt::format("    if ({}->len[k] < 0) {{ {} goto done; }}\n", a,
                       fail("DCC_ERR_NEGATIVE_LENGTH", quote(fn + ": " + p.name + ".len[%lld] is %lld; lengths must be >= 0"),
                            "(long long)k, (long long)" + a + "->len[k]"));
    out += fmt::format("    {0}__rows = dcc__add({0}__rows, {0}->len[k], &ovf);\n", a);
    out += fmt::format("    if (!{0}->data[k] && {0}->len[k] > 0 && {0}__row > 0) {{ {1} goto done; }}\n  }}\n", a,
                       fail("DCC_ERR_NULL_POINTER", quote(fn + ": " + p.name + ".data[%lld] is NULL"), "(long long)k"));
    out += fmt::format("  (void)dcc__mul({0}__rows, {0}__row, &ovf);\n", a);
    out += fmt::format("  if (ovf || (uint64_t)({0}__rows * {0}__row) > SIZE_MAX / sizeof *{0}__packed) {{ {1} goto done; }}\n", a,
                       fail("DCC_ERR_OVERFLOW", quote(fn + ": the element count of " + p.name + " overflows")));
    out.replace(from, std::string::npos, to_list_locals(out.substr(from), a, list_local(p)));
  }

  // Inputs: element counts, then lengths must be non-negative. Buffers whose
  // totals need the prelude are checked after it.
  auto lengths = length_buffers(f);
  // The pointers the kernel gets (device pointers on the CUDA target), before
  // `c.buffers` is pointed at host copies.
  const std::map<const BufferNode*, std::string> kernel_ptrs = c.buffers;
  auto check_input = [&](const Buffer& b) {
    auto [param, field] = where.at(b.get());
    std::string ptr = c.buffers.at(b.get());
    std::string len = CNames::arg(param) + "->" + ident(field) + "_len";
    std::string total = "t_" + names.buf(b.get());
    // FN_prelude (run == 2) reads the sizes and the length arrays only.
    out += fmt::format("  {}{{\n    ovf = 0;\n    const int64_t {} = {};\n", lengths.count(b.get()) ? "" : "if (run != 2) ", total,
                       c.expr(b->total));
    out += fmt::format("    if (ovf) {{ {} goto done; }}\n",
                       fail("DCC_ERR_OVERFLOW", quote(fn + ": the element count of " + param + "." + field + " overflows")));
    out += fmt::format("    if ({} != {}) {{ {} goto done; }}\n", len, total,
                       fail("DCC_ERR_SIZE_MISMATCH",
                            quote(fn + ": " + param + "." + field + "_len is %lld but its sizes and lengths give %lld elements"),
                            "(long long)" + len + ", (long long)" + total));
    out += fmt::format("    if (!{} && {} > 0) {{ {} goto done; }}\n", ptr, total,
                       fail("DCC_ERR_NULL_POINTER", quote(fn + ": " + param + "." + field + " is NULL")));
    if (cuda && is_int(b->type)) {
      // Integer arrays (lengths) live on the device: checks and the
      // prelude read a host copy.
      std::string h = "h_" + names.buf(b.get());
      out += fmt::format("    {} = dcc__cuda_stage({}, (size_t){} * sizeof({}));\n", h, ptr, total, c_type(b->type));
      out += fmt::format("    if (!{}) {{ st = dcc_last_status(); goto done; }}\n", h);
      ptr = fmt::format("(({}*){})", c_type(b->type), h);
      c.buffers[b.get()] = ptr;
    }
    if (lengths.count(b.get()))
      out += fmt::format("    for (int64_t k = 0; k < {}; ++k)\n      if ({}[k] < 0) {{ {} goto done; }}\n", total, ptr,
                         fail("DCC_ERR_NEGATIVE_LENGTH",
                              quote(fn + ": " + param + "." + field + "[%lld] is %lld; lengths must be >= 0"),
                              "(long long)k, (long long)" + ptr + "[k]"));
    out += "  }\n";
  };
  std::vector<Buffer> later;
  for (const auto& b : ir::input_buffers(f)) {
    if (b->dims.empty() || !where.count(b.get())) continue;  // scalars; lists, checked above
    if (reads_aux(b->total)) later.push_back(b);
    else check_input(b);
  }
  // The prelude (offset arrays), with overflow checks. When everything it
  // reads is validated by now, it comes from the process-wide prelude cache,
  // keyed by the sizes and the contents of the length arrays it reads, and
  // is computed (by FN__prelude, below) only for a pattern not seen before.
  std::vector<Buffer> all_aux, aux = ir::prelude_aux(f);  // aux: those the prelude fills
  for (const auto& b : f.buffers)
    if (b->kind == BufferKind::Aux) all_aux.push_back(b);
  // Each unit of the prelude (the arrays computed from one set of lengths)
  // is one entry: in the process-wide cache, or in the prelude a host holds
  // (`held`: filled when run == 2, by FN_prelude; looked up otherwise, by
  // FN_with_prelude), keyed by its sizes and the contents of its inputs.
  // Units alike in any function share the entry. On the CUDA target the
  // entry's device copy is a second entry of its own (kind ^ kDeviceKind,
  // the key followed by the device number), made once per pattern.
  std::vector<PreludeUnit> units = prelude_units(f);
  bool cached = f.prelude && !aux.empty() && !units.empty();
  for (const auto& u : units)
    for (const auto& b : u.inputs)
      if (reads_aux(b->total) || (!c.buffers.count(b.get()) && !b->dims.empty())) cached = false;
  // An aux array sized by another (`fuse`'s maps: F_fo0 holds F_oif0@(E)
  // elements) is sized once that one is filled: in its prelude unit, or
  // before the prelude statement that fills it.
  auto size_aux = [&](const Buffer& b, const std::string& indent, bool declare) {
    out += fmt::format("{0}ovf = 0;\n{0}{1}n_{2} = {3};\n", indent, declare ? "const int64_t " : "", names.buf(b.get()),
                       c.expr(b->total));
    out += fmt::format("{0}if (ovf || n_{1} < 0 || (uint64_t)n_{1} > SIZE_MAX / 8 / {2}) {{ {3} goto done; }}\n", indent,
                       names.buf(b.get()), all_aux.size() + 1, fail("DCC_ERR_OVERFLOW", quote(fn + ": offset array size overflows")));
  };
  for (const auto& b : all_aux) {
    if (reads_aux(b->total)) out += fmt::format("  int64_t n_{} = 0;\n", names.buf(b.get()));
    else size_aux(b, "  ", true);
  }
  // Entries from the cache stay pinned until `done` (another thread's call
  // cannot evict them while the kernel reads them): unit u's pin is u, or on
  // CUDA 2u, and 2u + 1 for its device copy.
  const size_t npins = cached ? units.size() * (cuda ? 2 : 1) : 0;
  if (npins > 0) out.insert(pins_at, fmt::format("  dcc_prelude_pin* dcc__pins[{}] = {{NULL}};\n", npins));
  size_t upin = 0;
  if (cached) {
    for (const auto& u : units) {
      std::string name = fmt::format("dcc__prelude_{:016x}", u.kind);
      if (emitted_units.insert(u.kind).second) {
        prelude_callbacks += fmt::format("/* prelude unit {:#x} */\nstatic dcc_status {}(void* ctx, void* out, size_t out_bytes) {{\n"
                                         "  const struct dcc__prelude_ctx* pc = (const struct dcc__prelude_ctx*)ctx;\n"
                                         "  int ovf = 0;\n  (void)out_bytes;\n",
                                         u.kind, name);
        prelude_callbacks += u.definition;
        prelude_callbacks += "  if (ovf) return dcc__fail(DCC_ERR_OVERFLOW, \"%s: the lengths make an offset overflow\", pc->fn);\n"
                             "  return DCC_OK;\n}\n\n";
        if (cuda && gpu_prelude(u))
          prelude_callbacks += fmt::format("int {}__gpu(const struct dcc__prelude_ctx* pc, const void* const* dev_l, void* dev_out);\n\n", name);
      }
      out += fmt::format("  {{  /* prelude unit {:#x}:", u.kind);
      for (const auto& b : u.aux) out += " " + b->name;
      out += " */\n    ovf = 0;\n";
      out += fmt::format("    int64_t key_bytes = INT64_C(8) * {};\n", u.sizes.size() + 1 + (cuda ? 1 : 0));
      for (const auto& b : u.inputs) {
        std::string n = b->dims.empty() ? "INT64_C(1)" : c.expr(b->total);
        out += fmt::format("    key_bytes = dcc__add(key_bytes, dcc__add(INT64_C(8), dcc__mul({}, (int64_t)sizeof({}), &ovf), &ovf), &ovf);\n",
                           n, c_type(b->type));
      }
      for (const auto& b : u.aux)
        if (reads_aux(b->total)) size_aux(b, "    ", false);
      out += "    int64_t elems = 0;\n";
      for (const auto& b : u.aux) out += fmt::format("    elems = dcc__add(elems, n_{}, &ovf);\n", names.buf(b.get()));
      out += fmt::format("    if (ovf || (uint64_t)key_bytes > SIZE_MAX || (uint64_t)elems > SIZE_MAX / 8) {{ {} goto done; }}\n",
                         fail("DCC_ERR_OVERFLOW", quote(fn + ": the prelude's key or size overflows")));
      out += "    unsigned char key_stack[1024];\n"
             "    unsigned char* key = (size_t)key_bytes <= sizeof key_stack ? key_stack : (unsigned char*)dcc_alloc((size_t)key_bytes);\n"
             "    if (!key) { st = DCC_ERR_OUT_OF_MEMORY; goto done; }\n"
             "    size_t at = 0;\n    int64_t w;\n";
      out += "    w = " + std::to_string(u.sizes.size()) + ";\n    memcpy(key + at, &w, 8);\n    at += 8;\n";
      for (const auto& sz : u.sizes) out += fmt::format("    memcpy(key + at, &s_{}, 8);\n    at += 8;\n", names.size(sz));
      std::string ls = "    const void* const pu_l[] = {";
      for (const auto& b : u.inputs) {
        std::string ptr = c.buffers.at(b.get());
        if (b->dims.empty()) {
          out += fmt::format("    w = 1;\n    memcpy(key + at, &w, 8);\n    at += 8;\n    memcpy(key + at, &{0}, sizeof {0});\n    at += sizeof {0};\n", ptr);
          ls += "&" + ptr + ", ";
        } else {
          out += fmt::format("    w = {};\n    memcpy(key + at, &w, 8);\n    at += 8;\n", c.expr(b->total));
          out += fmt::format("    if (w > 0) memcpy(key + at, {0}, (size_t)w * sizeof *{0});\n    at += (size_t)w * sizeof *{0};\n", ptr);
          ls += "(const void*)" + ptr + ", ";
        }
      }
      out += ls + "NULL};\n    const int64_t pu_s[] = {";
      for (const auto& sz : u.sizes) out += "s_" + names.size(sz) + ", ";
      out += "0};\n    const int64_t pu_n[] = {";
      for (const auto& b : u.aux) out += "n_" + names.buf(b.get()) + ", ";
      out += "0};\n";
      out += fmt::format("    struct dcc__prelude_ctx pc = {{{}, pu_s, pu_l, pu_n}};\n", quote(fn));
      out += "    (void)pc;\n    const void* pre = NULL;\n";
      std::string kind = fmt::format("UINT64_C({})", u.kind);
      out += fmt::format("    if (run == 2) st = dcc_prelude_hold(held, {0}, key, at, (size_t)elems * 8, {1}, NULL, &pc, &pre);\n"
                         "    else if (held) st = dcc_prelude_find(held, {0}, key, at, (size_t)elems * 8, &pre);\n"
                         "    else st = dcc_prelude_acquire(dcc_default_prelude_cache(), {0}, key, at, (size_t)elems * 8, {1}, NULL, &pc, &pre, &dcc__pins[{2}]);\n",
                         kind, name, upin * (cuda ? 2 : 1));
      if (cuda) {
        // The device copy, keyed by the same bytes and the device number.
        out += "    const void* dpre = NULL;\n";
        out += "    if (st == DCC_OK) {\n      w = dcc__cuda_device();\n      memcpy(key + at, &w, 8);\n      at += 8;\n";
        // Device pointers of the inputs, for computing the copy on the GPU
        // (DCCC_CUDA_PRELUDE=gpu) instead of uploading the host arrays.
        bool gpu = gpu_prelude(u);
        std::string dl = "      const void* const pu_dl[] = {";
        for (const auto& b : u.inputs) {
          if (b->dims.empty() || !kernel_ptrs.count(b.get())) gpu = false;
          else dl += "(const void*)" + kernel_ptrs.at(b.get()) + ", ";
        }
        out += dl + "NULL};\n";
        out += fmt::format("      struct dcc__cuda_prelude_ctx uc = {{pre, (size_t)elems * 8, &pc, pu_dl, {}}};\n",
                           gpu ? name + "__gpu" : "NULL");
        out += fmt::format("      if (run == 2) st = dcc_prelude_hold(held, {0} ^ DCC__DEVICE_KIND, key, at, sizeof(void*), dcc__cuda_prelude, dcc__cuda_prelude_release, &uc, &dpre);\n"
                           "      else if (held) st = dcc_prelude_find(held, {0} ^ DCC__DEVICE_KIND, key, at, sizeof(void*), &dpre);\n"
                           "      else st = dcc_prelude_acquire(dcc_default_prelude_cache(), {0} ^ DCC__DEVICE_KIND, key, at, sizeof(void*), dcc__cuda_prelude, dcc__cuda_prelude_release, &uc, &dpre, &dcc__pins[{1}]);\n"
                           "    }}\n",
                           kind, upin * 2 + 1);
      }
      out += "    if (key != key_stack) dcc_free(key);\n";
      out += fmt::format("    if (st != DCC_OK) {{\n"
                         "      if (held && run != 2 && st == DCC_ERR_SIZE_MISMATCH) {}\n"
                         "      else if (held && run != 2 && st == DCC_ERR_INVALID_ARGUMENT) {}\n"
                         "      goto done;\n    }}\n",
                         fail("DCC_ERR_SIZE_MISMATCH", quote(fn + "_with_prelude: the prelude was made for other sizes or lengths than these arguments'")),
                         fail("DCC_ERR_INVALID_ARGUMENT", quote(fn + "_with_prelude: the prelude holds no arrays for `" + fn + "` (add them with " + fn + "_prelude)")));
      std::string prev = "(int64_t*)pre";
      for (const auto& b : u.aux) {
        out += fmt::format("    b_{} = {};\n", names.buf(b.get()), prev);
        prev = fmt::format("b_{0} + n_{0}", names.buf(b.get()));
      }
      if (cuda) {
        prev = "*(int64_t* const*)dpre";
        for (const auto& b : u.aux) {
          out += fmt::format("    d_{} = {};\n", names.buf(b.get()), prev);
          prev = fmt::format("d_{} + n_{}", names.buf(b.get()), names.buf(b.get()));
        }
      }
      out += "  }\n";
      ++upin;
    }
  }
  // A length array shaped by other lengths (`ntok: [d: D][nsent[d]]i32`,
  // nested raggedness) is checked -- element count, pointer, no negative
  // length -- after the prelude statements that fill the offsets its count
  // reads and before the first one that reads it (such a prelude is not
  // cached: it is computed per call, FN_prelude included).
  bool nested_lengths = false;
  if (!cached && f.prelude)
    for (const auto& b : later) nested_lengths |= ir::touches(f.prelude, b.get());
  // FN_prelude stops here: the held prelude has every unit now.
  if (!nested_lengths) out += "  if (run == 2) goto done;\n";
  // The other aux arrays (all of them without the cache) are the wrapper's own.
  std::vector<Buffer> owned;
  for (const auto& b : all_aux)
    if (!cached || std::find(aux.begin(), aux.end(), b) == aux.end()) owned.push_back(b);
  auto alloc_aux = [&](const Buffer& b) {
    out += fmt::format("  b_{0} = (int64_t*)dcc_alloc((size_t)(n_{0} > 0 ? n_{0} : 1) * 8);\n", names.buf(b.get()));
    out += fmt::format("  if (!b_{}) {{ st = DCC_ERR_OUT_OF_MEMORY; goto done; }}\n", names.buf(b.get()));
  };
  std::vector<Buffer> sized_later;
  for (const auto& b : owned) {
    if (reads_aux(b->total)) sized_later.push_back(b);
    else alloc_aux(b);
  }
  if (!cached) {
    if (f.prelude && (!sized_later.empty() || nested_lengths)) {
      // Statement by statement: an array sized by another is allocated
      // before the first statement that fills it, after those before.
      std::vector<ir::Stmt> items = f.prelude->kind == StmtKind::Seq ? f.prelude->body : std::vector<ir::Stmt>{f.prelude};
      out += "  ovf = 0;\n";
      std::set<const BufferNode*> filled;
      for (const auto& item : items) {
        for (auto it = later.begin(); it != later.end();) {
          if (!ir::touches(item, it->get())) {
            ++it;
            continue;
          }
          ir::each_expr((*it)->total, [&](const ir::ExprNode& e) {
            if (e.kind == ExprKind::Load && e.buffer->kind == BufferKind::Aux && !filled.count(e.buffer.get()))
              throw std::runtime_error("`" + fn + "`: the prelude reads `" + (*it)->name +
                                       "` before it fills the offsets that give its element count");
          });
          out += fmt::format("  if (ovf) {{ {} goto done; }}\n",
                             fail("DCC_ERR_OVERFLOW", quote(fn + ": the lengths make an offset overflow")));
          check_input(*it);
          it = later.erase(it);
        }
        ir::each_stmt(item, [&](const ir::StmtNode& x) {
          if (x.kind == StmtKind::Store) filled.insert(x.buffer.get());
        });
        for (auto it = sized_later.begin(); it != sized_later.end();) {
          bool fills = false;
          ir::each_stmt(item, [&](const ir::StmtNode& x) { fills |= x.kind == StmtKind::Store && x.buffer == *it; });
          if (!fills) {
            ++it;
            continue;
          }
          out += fmt::format("  if (ovf) {{ {} goto done; }}\n",
                             fail("DCC_ERR_OVERFLOW", quote(fn + ": the lengths make an offset overflow")));
          size_aux(*it, "  ", false);
          alloc_aux(*it);
          it = sized_later.erase(it);
        }
        c.stmt(item, 1, out);
      }
      if (!sized_later.empty())
        throw BackendUnsupported(sized_later[0]->at.valid() ? sized_later[0]->at : f.at,
                                 "in `" + fn + "`: an offset array (`" + sized_later[0]->name +
                                 "`) sized by another but not filled in the prelude");
      out += fmt::format("  if (ovf) {{ {} goto done; }}\n",
                         fail("DCC_ERR_OVERFLOW", quote(fn + ": the lengths make an offset overflow")));
    } else if (f.prelude) {
      out += "  ovf = 0;\n";
      c.stmt(f.prelude, 1, out);
      out += fmt::format("  if (ovf) {{ {} goto done; }}\n",
                         fail("DCC_ERR_OVERFLOW", quote(fn + ": the lengths make an offset overflow")));
    }
  }
  for (const auto& b : later) check_input(b);
  if (nested_lengths) out += "  if (run == 2) goto done;\n";
  // `where` constraints.
  for (const auto& chk : f.checks) {
    out += "  ovf = 0;\n";
    c.stmt(chk.pre, 1, out);
    std::string close;
    for (const auto& [v, e] : chk.vars) {
      std::string vn = c.var(v);
      out += fmt::format("  for (int64_t {} = 0; {} < {}; ++{}) ", vn, vn, c.expr(e), vn);
    }
    out += fmt::format("  if (!({})) {{ {} goto done; }}\n", c.expr(chk.cond),
                       fail("DCC_ERR_INVALID_ARGUMENT", quote(fn + ": the arguments break `where { " + literal(chk.text) + " }`")));
    out += fmt::format("  if (ovf) {{ {} goto done; }}\n",
                       fail("DCC_ERR_OVERFLOW", quote(fn + ": overflow while checking `where { " + literal(chk.text) + " }`")));
  }
  // The result: sizes, fresh fields' element counts, bound fields' pointers.
  // They must follow from the arguments (and the prelude): a size or a
  // length the body computes cannot size the host's buffers beforehand.
  if (!f.results.empty() && f.results[0].kind != Param::Scalar) {
    std::function<bool(const ir::Expr&)> before = [&](const ir::Expr& e) {
      if (!e) return true;
      if (e->kind == ExprKind::Load) {
        const BufferNode* b = e->buffer.get();
        bool ok = b->kind == BufferKind::Input ||
                  (b->kind == BufferKind::Aux && std::find(aux.begin(), aux.end(), e->buffer) != aux.end());
        if (!ok) return false;
      }
      for (const auto& a : e->args)
        if (!before(a)) return false;
      return true;
    };
    const Param& r = f.results[0];
    for (const auto& [size, e] : r.sizes)
      if (!before(e))
        throw BackendUnsupported(r.at, "in `" + fn + "`: a result size that the function's body computes (`" + size +
                                           "`; the C ABI gives sizes before the call, so define it from the arguments' "
                                           "sizes and lengths)");
    for (const auto& [field, buf] : r.fields)
      if (buf->kind == BufferKind::Output && !before(buf->total))
        throw BackendUnsupported(buf->at.valid() ? buf->at : r.at,
                                 "in `" + fn + "`: a result field whose length depends on values the function's body "
                                 "computes (`" + field + "`; the C ABI gives lengths before the call, so define them "
                                 "from the arguments)");
  }
  if (!f.results.empty()) {
    const Param& r = f.results[0];
    if (r.kind != Param::Scalar) {
      for (const auto& [field, buf] : r.fields) {
        if (buf->kind != BufferKind::Output) continue;
        std::string total = "r_" + ident(field);
        out += fmt::format("  ovf = 0;\n  const int64_t {} = {};\n", total, c.expr(buf->total));
        out += fmt::format("  if (ovf) {{ {} goto done; }}\n",
                           fail("DCC_ERR_OVERFLOW", quote(fn + ": the element count of result." + field + " overflows")));
        out += fmt::format("  if (run && result->{}_len < {}) {{ {} goto done; }}\n", ident(field), total,
                           fail("DCC_ERR_SIZE_MISMATCH",
                                quote(fn + ": result." + field + "_len is %lld but the result needs %lld elements"),
                                "(long long)result->" + ident(field) + "_len, (long long)" + total));
        out += fmt::format("  if (run && !result->{} && {} > 0) {{ {} goto done; }}\n", ident(field), total,
                           fail("DCC_ERR_NULL_POINTER", quote(fn + ": result." + field + " is NULL")));
      }
      // Nothing is written before this point.
      for (const auto& [field, buf] : r.fields) {
        if (buf->kind == BufferKind::Output) {
          out += fmt::format("  result->{}_len = r_{};\n", ident(field), ident(field));
        } else {
          auto [param, pfield] = where.at(buf.get());
          out += fmt::format("  result->{} = {}->{};\n  result->{}_len = {}->{}_len;\n", ident(field), CNames::arg(param),
                             ident(pfield), ident(field), CNames::arg(param), ident(pfield));
        }
      }
      for (const auto& [size, e] : r.sizes) out += fmt::format("  result->{} = {};\n", ident(size), c.expr(e));
    }
  }
  out += "  if (!run) goto done;\n";
  // List arguments: pack the elements (libdccrt's dcc_pack).
  for (const auto& p : f.params) {
    if (p.kind != Param::List) continue;
    std::string a = CNames::arg(p.name);
    out += to_list_locals(fmt::format("  if ({0}__rows > 0 && {0}__row > 0) {{\n"
                       "    {0}__packed = dcc_alloc((size_t)({0}__rows * {0}__row) * sizeof *{0}__packed);\n"
                       "    if (!{0}__packed) {{ st = DCC_ERR_OUT_OF_MEMORY; goto done; }}\n"
                       "    st = dcc_pack((const void* const*){0}->data, {0}->len, {1}, {0}__row, sizeof *{0}__packed, "
                       "{0}__packed, {0}__rows);\n"
                       "    if (st != DCC_OK) goto done;\n  }}\n",
                       a, c.expr(p.sizes[0].second)), a, list_local(p));
  }
  // The kernel: sizes and the input/output buffers in Func::buffers order.
  out += "  {\n    const int64_t sizes[] = {";
  for (const auto& s : f.sizes) out += "s_" + names.size(s.name) + ", ";
  out += "0};\n    void* const buffers[] = {";
  std::string host_views;
  for (const auto& b : f.buffers) {
    if (b->kind != BufferKind::Input && b->kind != BufferKind::Output) continue;
    std::string e = kernel_ptrs.count(b.get()) ? kernel_ptrs.at(b.get()) : "NULL";
    host_views += (cuda && b->kind == BufferKind::Input && !b->dims.empty() && is_int(b->type)) ? "h_" + names.buf(b.get()) + ", "
                                                                                                  : std::string("NULL, ");
    if (b->dims.empty() && b->kind == BufferKind::Input) e = "(void*)&" + e;
    else if (b->dims.empty() && b->kind == BufferKind::Output) e = "(void*)result";
    else e = "(void*)" + e;
    out += e + ", ";
  }
  // The aux arrays computed (or taken from the cache) above: the kernel
  // does not compute the prelude again.
  if (!cuda)
    for (const auto& b : aux) out += "(void*)b_" + names.buf(b.get()) + ", ";
  out += "NULL};\n";
  if (cuda) {
    out += "    void* const host[] = {" + host_views + "NULL};\n";
    // Every aux array from the cache (or the held prelude): the launch code
    // neither computes nor uploads them.
    if (cached && aux.size() == all_aux.size()) {
      std::string ad = "    void* const aux_dev[] = {", ah = "    void* const aux_host[] = {";
      for (const auto& b : all_aux) {
        ad += "(void*)d_" + names.buf(b.get()) + ", ";
        ah += "(void*)b_" + names.buf(b.get()) + ", ";
      }
      out += ad + "NULL};\n" + ah + "NULL};\n";
      out += fmt::format("    if ({}__cuda(sizes, buffers, host, aux_dev, aux_host) != 0) st = dcc_last_status();\n  }}\n", fn);
    } else {
      out += fmt::format("    if ({}__cuda(sizes, buffers, host, NULL, NULL) != 0) st = dcc_last_status();\n  }}\n", fn);
    }
  } else {
    out += fmt::format("    if ({}__kernel(sizes, buffers) != 0) st = dcc_last_status();\n  }}\n", fn);
  }
  out += "done:\n";
  for (const auto& h : staged) out += fmt::format("  dcc_free({});\n", h);
  for (const auto& b : owned) out += fmt::format("  dcc_free(b_{});\n", names.buf(b.get()));
  if (npins > 0) out += fmt::format("  for (int i = 0; i < {}; ++i) dcc_prelude_unpin(dcc__pins[i]);\n", npins);
  for (const auto& p : f.params)
    if (p.kind == Param::List) out += fmt::format("  dcc_free({}__packed);\n", list_local(p));
  out += "  return st;\n}\n\n";
}

}  // namespace

std::string emit_header(const ir::Module& m, const std::string& source_name, const std::string& guard) {
  std::string out = fmt::format(
      "/* Generated by dccc from {}. Do not edit.\n"
      " *\n"
      " * Every function validates its arguments before writing anything and\n"
      " * returns DCC_OK or a dcc_status; dcc_last_error() has the reason.\n"
      " * Ragged fields are packed: sequence after sequence, row-major, no\n"
      " * padding; a field's element count is given in its `_len` member.\n"
      " * NAME_meta() checks the same and fills the result's sizes, element\n"
      " * counts and bound fields without running, so outputs can be allocated.\n"
      " * f16 and bf16 elements are passed as uint16_t bit patterns.\n"
      " *\n"
      " * The prelude (offset arrays computed from the length arrays) comes from\n"
      " * libdccrt's process-wide cache. A host that runs many calls on one batch\n"
      " * can hold it instead: NAME_prelude(args..., &p) computes NAME's arrays\n"
      " * into a dcc_prelude handle (p NULL: a new one; else added to p, arrays\n"
      " * already in p -- from any function -- being shared), reading only the\n"
      " * sizes and length arrays of the arguments; NAME_with_prelude(p, args...,\n"
      " * result) is NAME using them, checking that p holds arrays for exactly\n"
      " * these sizes and length contents (compared in full: other lengths are\n"
      " * DCC_ERR_SIZE_MISMATCH, a handle without NAME's arrays\n"
      " * DCC_ERR_INVALID_ARGUMENT, NULL DCC_ERR_NULL_POINTER). Free p with\n"
      " * dcc_prelude_destroy(p) before unloading this library. */\n"
      "#ifndef {}\n#define {}\n\n#include <stdint.h>\n\n#include \"dccrt.h\"\n\n"
      "#ifdef __cplusplus\nextern \"C\" {{\n#endif\n\n",
      source_name, guard, guard);
  std::set<std::string> done;
  for (const auto& f : m.funcs) {
    if (f.name == "main") continue;
    for (const auto& p : f.params) emit_struct(f, p, done, out);
    for (const auto& r : f.results) emit_struct(f, r, done, out);
  }
  for (const auto& f : m.funcs) {
    if (f.name == "main") continue;
    out += fmt::format("/* {} */\n{} DCCRT_NOEXCEPT;\n{} DCCRT_NOEXCEPT;\n", f.name, signature(f, f.name),
                       signature(f, f.name + "_meta"));
    out += fmt::format("/* {0}'s prelude held by the host: {0}_prelude makes *prelude (when NULL)\n"
                       " * or adds to it; {0}_with_prelude is {0} taking its arrays from it. */\n"
                       "{1} DCCRT_NOEXCEPT;\n{2} DCCRT_NOEXCEPT;\n\n",
                       f.name, prelude_signature(f), with_prelude_signature(f));
  }
  out += "/* This library's functions, structs and fields as a JSON document\n"
         " * (docs/abi.md, \"Metadata\"); the same text `dccc --emit=metadata` prints. */\n"
         "const char* dccc_module_info(void) DCCRT_NOEXCEPT;\n\n";
  out += "#ifdef __cplusplus\n}  /* extern \"C\" */\n#endif\n\n#endif\n";
  return out;
}

std::string emit_wrapper(const ir::Module& m, const std::string& header_name, Target target) {
  std::string out = fmt::format(
      "/* Generated by dccc: argument checks around the kernels. */\n"
      "#include <stddef.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <string.h>\n\n#include \"{}\"\n\n"
      "#include <stdarg.h>\n"
      "static dcc_status dcc__fail(dcc_status st, const char* fmt, ...) __attribute__((format(printf, 2, 3)));\n"
      "static dcc_status dcc__fail(dcc_status st, const char* fmt, ...) {{\n"
      "  char msg[512];\n  va_list ap;\n  va_start(ap, fmt);\n  vsnprintf(msg, sizeof msg, fmt, ap);\n  va_end(ap);\n"
      "  return dcc_set_error(st, msg);\n}}\n",
      header_name);
  out += kCheckedIntHelpers;
  out += "\n";
  out += "/* What a prelude unit's computation reads (dcc__prelude_KIND). */\n"
         "struct dcc__prelude_ctx {\n  const char* fn;\n  const int64_t* s;\n  const void* const* l;\n  const int64_t* n;\n};\n\n";
  if (target == Target::Cuda)
    out += "/* Copies `bytes` of device memory into dcc_alloc'ed host memory; NULL\n"
           " * with the error set on failure. Defined with the CUDA kernels. */\n"
           "void* dcc__cuda_stage(const void* device, size_t bytes);\n\n";
  if (target == Target::Cuda) out += kCudaPreludeDecls;
  std::set<uint64_t> emitted_units;
  for (const auto& f : m.funcs) {
    if (f.name == "main") continue;
    if (target == Target::Cuda)
      out += fmt::format("int32_t {}__cuda(const int64_t* sizes, void* const* dev, void* const* host, void* const* aux_dev, "
                         "void* const* aux_host);\n\n", f.name);
    else
      out += fmt::format("int32_t {}__kernel(const int64_t* sizes, void* const* buffers);\n\n", f.name);
    std::string prepare, callbacks;
    emit_prepare(f, target, prepare, callbacks, emitted_units);
    out += callbacks + prepare;
    auto call_args = [&](bool with_result) {
      std::string a;
      for (const auto& p : f.params) a += CNames::arg(p.name) + ", ";
      if (!f.results.empty()) a += with_result ? "result, " : "NULL, ";
      return a;
    };
    out += fmt::format("{} DCCRT_NOEXCEPT {{\n  dcc_clear_error();\n  return {}__prepare({}NULL, 1);\n}}\n\n",
                       signature(f, f.name, true), f.name, call_args(true));
    out += fmt::format("{} DCCRT_NOEXCEPT {{\n  dcc_clear_error();\n  return {}__prepare({}NULL, 0);\n}}\n\n",
                       signature(f, f.name + "_meta", true), f.name, call_args(true));
    // The held prelude: made (or added to) by FN_prelude, used by
    // FN_with_prelude, which looks its arrays up instead of the cache.
    out += fmt::format("{} DCCRT_NOEXCEPT {{\n  dcc_clear_error();\n"
                       "  if (!prelude) return {}\n"
                       "  dcc_prelude* p = *prelude ? *prelude : dcc_prelude_create();\n"
                       "  if (!p) return dcc_last_status();\n"
                       "  dcc_status st = {}__prepare({}p, 2);\n"
                       "  if (st != DCC_OK) {{\n    if (p != *prelude) dcc_prelude_destroy(p);\n    return st;\n  }}\n"
                       "  *prelude = p;\n  return DCC_OK;\n}}\n\n",
                       prelude_signature(f, true), fail_return("DCC_ERR_NULL_POINTER", quote(f.name + "_prelude: `prelude` is NULL")),
                       f.name, call_args(false));
    out += fmt::format("{} DCCRT_NOEXCEPT {{\n  dcc_clear_error();\n"
                       "  if (!prelude) return {}\n"
                       "  return {}__prepare({}(dcc_prelude*)prelude, 1);\n}}\n\n",
                       with_prelude_signature(f, true), fail_return("DCC_ERR_NULL_POINTER", quote(f.name + "_with_prelude: `prelude` is NULL")),
                       f.name, call_args(true));
  }
  return out;
}

std::string emit_cuda_prelude(const ir::Module& m) {
  std::string out = R"CU(
// ---- Prelude units on the device (backend/abi/c_abi.cpp) ----
// The C wrapper keeps each prelude unit's host arrays in libdccrt's prelude
// cache (or a held prelude) and, beside them, an entry holding a device copy,
// made once per length pattern by dcc__cuda_prelude: the host arrays
// uploaded (the default), or with DCCC_CUDA_PRELUDE=gpu computed by a
// one-thread kernel from the device length arrays. Freed with the entry.
extern "C" {
struct dcc__prelude_ctx {
  const char* fn;
  const int64_t* s;
  const void* const* l;
  const int64_t* n;
};
struct dcc__cuda_prelude_ctx {
  const void* host;
  size_t bytes;
  const struct dcc__prelude_ctx* pc;
  const void* const* dev_l;
  int (*gpu)(const struct dcc__prelude_ctx* pc, const void* const* dev_l, void* dev_out);
};
}

namespace dcc_gpu_prelude {
__device__ inline int64_t dcc__add(int64_t a, int64_t b, int* ovf) {
  const int64_t r = (int64_t)((uint64_t)a + (uint64_t)b);
  if ((a >= 0) == (b >= 0) && (r >= 0) != (a >= 0)) *ovf = 1;
  return r;
}
__device__ inline int64_t dcc__sub(int64_t a, int64_t b, int* ovf) {
  const int64_t r = (int64_t)((uint64_t)a - (uint64_t)b);
  if ((a >= 0) != (b >= 0) && (r >= 0) != (a >= 0)) *ovf = 1;
  return r;
}
__device__ inline int64_t dcc__mul(int64_t a, int64_t b, int* ovf) {
  const int64_t lo = (int64_t)((uint64_t)a * (uint64_t)b);
  const int64_t hi = __mul64hi(a, b);
  if (hi != (lo >> 63)) *ovf = 1;
  return lo;
}
__device__ inline int64_t dcc__div(int64_t a, int64_t b, int* ovf) {
  if (b == 0 || (a == INT64_MIN && b == -1)) { *ovf = 1; return 0; }
  return a / b;
}
__device__ inline int64_t dcc__mod(int64_t a, int64_t b, int* ovf) {
  if (b == 0 || (a == INT64_MIN && b == -1)) { *ovf = 1; return 0; }
  return a % b;
}
__device__ inline int64_t dcc__min(int64_t a, int64_t b) { return a < b ? a : b; }
__device__ inline int64_t dcc__max(int64_t a, int64_t b) { return a > b ? a : b; }
struct Ctx {
  int64_t s[8];
  const void* l[8];
  int64_t n[8];
};
}  // namespace dcc_gpu_prelude

extern "C" __attribute__((visibility("hidden"))) int64_t dcc__cuda_device(void) {
  int d = 0;
  if (cudaGetDevice(&d) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return d;
}

// Set by an exit handler registered when the first device copy is made,
// so after CUDA's own (exit handlers run last-registered first).
static bool dcc__cuda_exiting = false;
static void dcc__cuda_mark_exit() { dcc__cuda_exiting = true; }

extern "C" __attribute__((visibility("hidden"))) void dcc__cuda_prelude_release(void* buffer, size_t bytes) {
  void* d = nullptr;
  std::memcpy(&d, buffer, sizeof d);
  (void)bytes;
  // At process exit the CUDA runtime may be gone already (it reports
  // cudaErrorCudartUnloading); the driver frees everything then anyway.
  int dev = 0;
  if (dcc__cuda_exiting || cudaGetDevice(&dev) != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  cudaFree(d);
}

extern "C" __attribute__((visibility("hidden"))) dcc_status dcc__cuda_prelude(void* ctx, void* out, size_t out_bytes) {
  const auto* uc = static_cast<const dcc__cuda_prelude_ctx*>(ctx);
  static const bool on_gpu = [] {
    const char* e = std::getenv("DCCC_CUDA_PRELUDE");
    return e && std::strcmp(e, "gpu") == 0;
  }();
  (void)out_bytes;
  static const bool exit_hook = (std::atexit(dcc__cuda_mark_exit), true);
  (void)exit_hook;
  void* d = nullptr;
  cudaError_t e = cudaMalloc(&d, uc->bytes ? uc->bytes : 1);
  if (e != cudaSuccess) return (dcc_status)dcc_cuda_fail(e, "allocating the prelude's device copy");
  if (on_gpu && uc->gpu) {
    const int st = uc->gpu(uc->pc, uc->dev_l, d);
    if (st != 0) {
      cudaFree(d);
      return (dcc_status)st;
    }
  } else if (uc->bytes && (e = cudaMemcpy(d, uc->host, uc->bytes, cudaMemcpyHostToDevice)) != cudaSuccess) {
    cudaFree(d);
    return (dcc_status)dcc_cuda_fail(e, "uploading the prelude");
  }
  std::memcpy(out, &d, sizeof d);
  return DCC_OK;
}

// A library unloaded before the cache it used (another copy of libdccrt's)
// takes its device copies with it: their release code is its own.
__attribute__((destructor)) static void dcc__cuda_prelude_unload() {
  if (dcc__cuda_exiting) return;
  dcc_prelude_cache_drop(dcc_default_prelude_cache(), dcc__cuda_prelude_release);
}
)CU";
  std::set<uint64_t> done;
  for (const auto& f : m.funcs) {
    if (f.name == "main") continue;
    for (const auto& u : prelude_units(f)) {
      if (!gpu_prelude(u) || !done.insert(u.kind).second) continue;
      std::string name = fmt::format("dcc__prelude_{:016x}", u.kind);
      out += fmt::format("\nnamespace dcc_gpu_prelude {{\n__global__ void {}_kernel(Ctx c, void* out, int* status) {{\n"
                         "  const Ctx* pc = &c;\n  int ovf = 0;\n", name);
      out += u.definition;
      out += "  *status = ovf;\n}\n}  // namespace dcc_gpu_prelude\n\n";
      out += fmt::format(
          "extern \"C\" __attribute__((visibility(\"hidden\"))) int {0}__gpu(const dcc__prelude_ctx* pc, const void* const* dev_l, void* dev_out) {{\n"
          "  dcc_gpu_prelude::Ctx c;\n  std::memset(&c, 0, sizeof c);\n"
          "  for (int k = 0; k < {1}; ++k) c.s[k] = pc->s[k];\n"
          "  for (int k = 0; k < {2}; ++k) c.l[k] = dev_l[k];\n"
          "  for (int k = 0; k < {3}; ++k) c.n[k] = pc->n[k];\n"
          "  int* status = nullptr;\n  cudaError_t e = cudaMalloc(&status, sizeof(int));\n"
          "  if (e != cudaSuccess) return dcc_cuda_fail(e, \"allocating the prelude kernel's status\");\n"
          "  dcc_gpu_prelude::{0}_kernel<<<1, 1>>>(c, dev_out, status);\n"
          "  int ovf = 0;\n"
          "  if ((e = cudaGetLastError()) == cudaSuccess) e = cudaMemcpy(&ovf, status, sizeof ovf, cudaMemcpyDeviceToHost);\n"
          "  cudaFree(status);\n"
          "  if (e != cudaSuccess) return dcc_cuda_fail(e, \"computing the prelude on the GPU\");\n"
          "  if (ovf) return dcc_set_error(DCC_ERR_OVERFLOW, \"the lengths make an offset overflow (GPU prelude)\");\n"
          "  return 0;\n}}\n",
          name, u.sizes.size(), u.inputs.size(), u.aux.size());
    }
  }
  return out;
}

namespace {

/// The C member names of one struct: each name valid (api_name) and apart
/// from every other member, `_len` members of fields included.
void member_names(Param& p) {
  std::set<std::string> taken;
  for (auto& [field, buf] : p.fields) {
    std::string n = api_name(field);
    while (taken.count(n) || taken.count(n + "_len")) n += '_';
    taken.insert(n);
    taken.insert(n + "_len");
    field = n;
  }
  if (p.kind == Param::List) taken.insert({"data", "len"});
  for (auto& [size, e] : p.sizes) size = api_name(size, taken), taken.insert(size);
}

}  // namespace

void assign_c_names(ir::Module& m, Target target) {
  struct Owner {
    std::string what;
    SourceRange at;
  };
  std::map<std::string, Owner> globals;
  std::set<std::string> types;  // the coupling types' C names
  for (auto& f : m.funcs)
    for (auto* ps : {&f.params, &f.results})
      for (auto& p : *ps)
        if (p.kind == Param::Coupling && p.type_name != "coupling") types.insert(p.type_name = api_name(p.type_name));
  auto claim = [&](const std::string& name, const std::string& what, SourceRange at) {
    auto [it, fresh] = globals.emplace(name, Owner{what, at});
    if (!fresh && it->second.what != what)
      throw BackendUnsupported(at, fmt::format("the C name `{}` for both {} and {} (rename one)", name, it->second.what, what));
  };
  for (auto& f : m.funcs) {
    if (f.name == "main") continue;
    const std::string source = f.name;
    f.name = api_name(f.name);
    const std::string fn = "`" + source + "`";
    claim(f.name, "the function " + fn, f.at);
    claim(f.name + "_meta", "the size query of " + fn, f.at);
    claim(f.name + "_prelude", "the prelude function of " + fn, f.at);
    claim(f.name + "_with_prelude", "the held-prelude function of " + fn, f.at);
    claim(f.name + "__prepare", "the argument checks of " + fn, f.at);
    claim(f.name + (target == Target::Cuda ? "__cuda" : "__kernel"), "the kernel of " + fn, f.at);
    if (target == Target::Cuda) claim(f.name + "__args", "the kernel arguments of " + fn, f.at);
    // Not the other parameters of the C functions, nor a type a later
    // parameter's declaration names.
    std::set<std::string> params = types;
    params.insert({"result", "prelude"});
    for (auto& p : f.params) {
      p.name = api_name(p.name, params);
      params.insert(p.name);
    }
    for (auto* ps : {&f.params, &f.results})
      for (auto& p : *ps) {
        if (p.kind == Param::Scalar) continue;
        if (p.kind == Param::Coupling && p.type_name != "coupling") {
          claim(p.type_name, "the coupling type `" + p.type_name + "`", p.at);
        } else {
          claim(struct_name(f, p), "the struct of " + fn + "'s `" + p.name + "`", p.at);
        }
        member_names(p);
      }
  }
  // CUDA kernels: `f__k0`, `f__k1`, ... (backend/cuda).
  if (target == Target::Cuda)
    for (const auto& f : m.funcs)
      for (const auto& [name, owner] : globals)
        if (name.rfind(f.name + "__k", 0) == 0 && name.size() > f.name.size() + 3 &&
            std::all_of(name.begin() + static_cast<long>(f.name.size()) + 3, name.end(),
                        [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
          throw BackendUnsupported(owner.at, fmt::format("the C name `{}` for both {} and a kernel of `{}` (rename one)",
                                                         name, owner.what, f.name));
}

}  // namespace dccc::backend
