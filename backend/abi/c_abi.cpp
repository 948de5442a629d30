#include "backend/abi/c_abi.h"

#include "backend/abi/c_emit.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
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

std::string signature(const ir::Func& f, const std::string& name) {
  std::string out = "dcc_status " + name + "(";
  bool first = true;
  for (const auto& p : f.params) {
    out += first ? "" : ", ";
    first = false;
    if (p.kind == Param::Scalar) out += fmt::format("{} {}", c_type(p.fields[0].second->type), ident(p.name));
    else out += fmt::format("const {}* {}", struct_name(f, p), ident(p.name));
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

/// Input buffers the prelude reads (length arrays, scalar arguments), in
/// Func::buffers order: with the sizes, what the prelude's result depends on.
std::vector<Buffer> prelude_inputs(const ir::Func& f) {
  std::set<const BufferNode*> read;
  loaded_inputs(f.prelude, read);
  for (const auto& b : f.buffers)
    if (b->kind == BufferKind::Aux) loaded_inputs(b->total, read);
  std::vector<Buffer> out;
  for (const auto& b : f.buffers)
    if (read.count(b.get())) out.push_back(b);
  return out;
}

/// FNV-1a, 64 bits: the prelude cache's `kind` of a generated prelude.
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

bool reads_aux(const ir::Expr& e) {
  if (!e) return false;
  if (e->kind == ExprKind::Load && e->buffer->kind == BufferKind::Aux) return true;
  for (const auto& a : e->args)
    if (reads_aux(a)) return true;
  return false;
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

void emit_prepare(const ir::Func& f, Target target, std::string& out, std::string& prelude_callbacks) {
  const bool cuda = target == Target::Cuda;
  for (const auto& p : f.params)
    if (cuda && p.kind == Param::List)
      throw std::runtime_error("the CUDA target does not support `list` parameters (`" + p.name + "` of `" + f.name +
                               "`) yet");
  CEmitter c;
  std::string fn = f.name;
  out += "static dcc_status " + fn + "__prepare(";
  {
    std::string sig = signature(f, "");
    size_t open = sig.find('(');
    std::string params = sig.substr(open + 1, sig.size() - open - 2);
    out += (params == "void" ? std::string() : params + ", ") + "int run) {\n";
  }
  out += "  dcc_status st = DCC_OK;\n  int ovf = 0;\n  (void)ovf;\n";
  // Storage names.
  std::map<const BufferNode*, std::pair<std::string, std::string>> where;  // buffer -> (param, field)
  for (const auto& p : f.params) {
    if (p.kind == Param::Scalar) {
      c.buffers[p.fields[0].second.get()] = ident(p.name);
      continue;
    }
    out += fmt::format("  if (!{}) return {}\n", ident(p.name),
                       fail("DCC_ERR_NULL_POINTER", quote(fn + ": argument `" + p.name + "` is NULL")));
    if (p.kind == Param::List) {
      // The elements are packed into one buffer before the kernel runs.
      const Buffer& data = p.fields[0].second;
      c.buffers[data.get()] = ident(p.name) + "__packed";
      c.buffers[p.fields[1].second.get()] = ident(p.name) + "->len";
      out += fmt::format("  {}* {}__packed = NULL;\n  int64_t {}__rows = 0, {}__row = 1;\n", c_type(data->type),
                         ident(p.name), ident(p.name), ident(p.name));
      continue;
    }
    for (const auto& [field, buf] : p.fields) {
      c.buffers[buf.get()] = ident(p.name) + "->" + ident(field);
      where[buf.get()] = {p.name, field};
    }
  }
  if (!f.results.empty()) {
    const Param& r = f.results[0];
    out += fmt::format("  if (!result) return {}\n", fail("DCC_ERR_NULL_POINTER", quote(fn + ": `result` is NULL")));
    for (const auto& [field, buf] : r.fields)
      if (buf->kind == BufferKind::Output) c.buffers[buf.get()] = r.kind == Param::Scalar ? "(*result)" : "result->" + ident(field);
  }
  for (const auto& b : f.buffers) {
    if (b->kind == BufferKind::Aux) {
      c.buffers[b.get()] = ident(b->name);
      out += fmt::format("  int64_t* {} = NULL;\n", ident(b->name));
    } else if (b->kind == BufferKind::Scalar) {
      c.buffers[b.get()] = ident(b->name);
      out += fmt::format("  int64_t {} = 0;\n", ident(b->name));
    }
  }
  // Host copies of integer input arrays (CUDA target), declared before the
  // first `goto done` so that the cleanup frees only what was set.
  std::vector<std::string> staged;
  for (const auto& b : f.buffers)
    if (cuda && b->kind == BufferKind::Input && !b->dims.empty() && is_int(b->type)) {
      staged.push_back("h_" + ident(b->name));
      out += fmt::format("  void* h_{} = NULL;\n", ident(b->name));
    }
  // Sizes: every argument carrying a size must agree.
  for (const auto& s : f.sizes) out += fmt::format("  int64_t s_{} = 0;\n  int have_{} = 0;\n", ident(s.name), ident(s.name));
  for (const auto& p : f.params) {
    for (const auto& [size, expect] : p.sizes) {
      std::string got = ident(p.name) + "->" + ident(size);
      out += fmt::format("  if ({} < 0) {{ {} goto done; }}\n", got,
                         fail("DCC_ERR_INVALID_ARGUMENT", quote(fn + ": " + p.name + "." + size + " is %lld; sizes must be >= 0"),
                              "(long long)" + got));
      if (expect->kind == ExprKind::SizeRef) {
        std::string s = ident(expect->name);
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
    out += fmt::format("  if (!have_{}) {{ {} goto done; }}\n", ident(s.name),
                       fail("DCC_ERR_INVALID_ARGUMENT", quote(fn + ": no argument carries size `" + s.name + "`")));

  // List arguments: pointers, lengths, the packed element count.
  for (const auto& p : f.params) {
    if (p.kind != Param::List) continue;
    const Buffer& data = p.fields[0].second;
    std::string a = ident(p.name), count = c.expr(p.sizes[0].second);
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
    std::string len = ident(param) + "->" + ident(field) + "_len";
    std::string total = "t_" + ident(b->name);
    out += fmt::format("  {{\n    ovf = 0;\n    const int64_t {} = {};\n", total, c.expr(b->total));
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
      std::string h = "h_" + ident(b->name);
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
  std::vector<Buffer> keyed = prelude_inputs(f);
  bool cached = !cuda && f.prelude && !aux.empty();  // CUDA: lengths are staged per call
  for (const auto& b : keyed)
    if (reads_aux(b->total) || (!c.buffers.count(b.get()) && !b->dims.empty())) cached = false;
  for (const auto& b : all_aux) {
    out += fmt::format("  ovf = 0;\n  const int64_t n_{} = {};\n", ident(b->name), c.expr(b->total));
    out += fmt::format("  if (ovf || n_{0} < 0 || (uint64_t)n_{0} > SIZE_MAX / 8 / {1}) {{ {2} goto done; }}\n",
                       ident(b->name), all_aux.size() + 1, fail("DCC_ERR_OVERFLOW", quote(fn + ": offset array size overflows")));
  }
  if (cached) {
    // The computation, as a callback of dcc_prelude_get.
    std::string cb;
    cb += fmt::format("struct {}__prelude_ctx {{\n", fn);
    for (const auto& s : f.sizes) cb += fmt::format("  int64_t s_{};\n", ident(s.name));
    for (const auto& p : f.params) {
      if (p.kind == Param::Scalar) cb += fmt::format("  {} {};\n", c_type(p.fields[0].second->type), ident(p.name));
      else cb += fmt::format("  const {}* {};\n", struct_name(f, p), ident(p.name));
    }
    for (const auto& b : aux) cb += fmt::format("  int64_t n_{};\n", ident(b->name));
    cb += "};\n\n";
    cb += fmt::format("static dcc_status {0}__prelude(void* ctx, void* out, size_t out_bytes) {{\n"
                      "  const struct {0}__prelude_ctx* pc = (const struct {0}__prelude_ctx*)ctx;\n"
                      "  int ovf = 0;\n  (void)out_bytes;\n", fn);
    for (const auto& s : f.sizes) cb += fmt::format("  const int64_t s_{0} = pc->s_{0};\n  (void)s_{0};\n", ident(s.name));
    for (const auto& p : f.params) {
      if (p.kind == Param::Scalar) cb += fmt::format("  const {0} {1} = pc->{1};\n  (void){1};\n", c_type(p.fields[0].second->type), ident(p.name));
      else cb += fmt::format("  const {0}* {1} = pc->{1};\n  (void){1};\n", struct_name(f, p), ident(p.name));
    }
    std::string prev = "(int64_t*)out";
    for (const auto& b : aux) {
      cb += fmt::format("  int64_t* const {} = {};\n", ident(b->name), prev);
      prev = fmt::format("{} + pc->n_{}", ident(b->name), ident(b->name));
    }
    CEmitter pe;
    pe.buffers = c.buffers;
    pe.stmt(f.prelude, 1, cb);
    cb += fmt::format("  if (ovf) return {};\n  return DCC_OK;\n}}\n\n",
                      fmt::format("dcc__fail(DCC_ERR_OVERFLOW, {})", quote(fn + ": the lengths make an offset overflow")));
    // The key: the sizes, then each array's element count and contents.
    std::string key_layout = "sizes";
    for (const auto& s : f.sizes) key_layout += " " + s.name;
    for (const auto& b : keyed) key_layout += fmt::format(" {}:{}:{}", b->name, scalar_name(b->type), b->dims.size());
    uint64_t kind = fnv1a(cb + key_layout);
    prelude_callbacks += cb;

    out += "  {\n    ovf = 0;\n    int64_t key_bytes = INT64_C(8) * " + std::to_string(f.sizes.size() + 1) + ";\n";
    for (const auto& b : keyed) {
      std::string n = b->dims.empty() ? "INT64_C(1)" : c.expr(b->total);
      out += fmt::format("    key_bytes = dcc__add(key_bytes, dcc__add(INT64_C(8), dcc__mul({}, (int64_t)sizeof({}), &ovf), &ovf), &ovf);\n",
                         n, b->dims.empty() ? c.buffers.at(b.get()) : "*" + c.buffers.at(b.get()));
    }
    out += "    int64_t aux_elems = 0;\n";
    for (const auto& b : aux) out += fmt::format("    aux_elems = dcc__add(aux_elems, n_{}, &ovf);\n", ident(b->name));
    out += fmt::format("    if (ovf || (uint64_t)key_bytes > SIZE_MAX || (uint64_t)aux_elems > SIZE_MAX / 8) {{ {} goto done; }}\n",
                       fail("DCC_ERR_OVERFLOW", quote(fn + ": the prelude's key or size overflows")));
    out += "    unsigned char* key = (unsigned char*)dcc_alloc((size_t)key_bytes);\n"
           "    if (!key) { st = DCC_ERR_OUT_OF_MEMORY; goto done; }\n"
           "    size_t at = 0;\n"
           "    int64_t w;\n";
    out += "    w = " + std::to_string(f.sizes.size()) + ";\n    memcpy(key + at, &w, 8);\n    at += 8;\n";
    for (const auto& s : f.sizes) out += fmt::format("    memcpy(key + at, &s_{}, 8);\n    at += 8;\n", ident(s.name));
    for (const auto& b : keyed) {
      std::string ptr = c.buffers.at(b.get());
      if (b->dims.empty()) {
        out += fmt::format("    w = 1;\n    memcpy(key + at, &w, 8);\n    at += 8;\n    memcpy(key + at, &{0}, sizeof {0});\n    at += sizeof {0};\n", ptr);
      } else {
        out += fmt::format("    w = {};\n    memcpy(key + at, &w, 8);\n    at += 8;\n", c.expr(b->total));
        out += fmt::format("    if (w > 0) memcpy(key + at, {0}, (size_t)w * sizeof *{0});\n    at += (size_t)w * sizeof *{0};\n", ptr);
      }
    }
    out += fmt::format("    struct {}__prelude_ctx pc = {{", fn);
    for (const auto& s : f.sizes) out += "s_" + ident(s.name) + ", ";
    for (const auto& p : f.params) out += ident(p.name) + ", ";
    for (const auto& b : aux) out += "n_" + ident(b->name) + ", ";
    out += "};\n    const void* pre = NULL;\n";
    out += fmt::format("    st = dcc_prelude_get(dcc_default_prelude_cache(), UINT64_C({}), key, at, (size_t)aux_elems * 8, "
                       "{}__prelude, &pc, &pre);\n", kind, fn);
    out += "    dcc_free(key);\n    if (st != DCC_OK) goto done;\n";
    std::string prev2 = "(int64_t*)pre";
    for (const auto& b : aux) {
      out += fmt::format("    {} = {};\n", ident(b->name), prev2);
      prev2 = fmt::format("{} + n_{}", ident(b->name), ident(b->name));
    }
    out += "  }\n";
  }
  // The other aux arrays (all of them without the cache) are the wrapper's own.
  std::vector<Buffer> owned;
  for (const auto& b : all_aux)
    if (!cached || std::find(aux.begin(), aux.end(), b) == aux.end()) owned.push_back(b);
  for (const auto& b : owned) {
    out += fmt::format("  {0} = (int64_t*)dcc_alloc((size_t)(n_{0} > 0 ? n_{0} : 1) * 8);\n", ident(b->name));
    out += fmt::format("  if (!{}) {{ st = DCC_ERR_OUT_OF_MEMORY; goto done; }}\n", ident(b->name));
  }
  if (!cached) {
    if (f.prelude) {
      out += "  ovf = 0;\n";
      c.stmt(f.prelude, 1, out);
      out += fmt::format("  if (ovf) {{ {} goto done; }}\n",
                         fail("DCC_ERR_OVERFLOW", quote(fn + ": the lengths make an offset overflow")));
    }
  }
  for (const auto& b : later) check_input(b);
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
        throw std::runtime_error("`" + fn + "`: the result's size `" + size +
                                 "` is computed by the function's body, so the C ABI cannot give it before the call; "
                                 "define it from the arguments' sizes and lengths");
    for (const auto& [field, buf] : r.fields)
      if (buf->kind == BufferKind::Output && !before(buf->total))
        throw std::runtime_error("`" + fn + "`: the length of result field `" + field +
                                 "` depends on values the function's body computes, so the C ABI cannot give it "
                                 "before the call; define the lengths from the arguments");
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
          out += fmt::format("  result->{} = {}->{};\n  result->{}_len = {}->{}_len;\n", ident(field), ident(param),
                             ident(pfield), ident(field), ident(param), ident(pfield));
        }
      }
      for (const auto& [size, e] : r.sizes) out += fmt::format("  result->{} = {};\n", ident(size), c.expr(e));
    }
  }
  out += "  if (!run) goto done;\n";
  // List arguments: pack the elements (libdccrt's dcc_pack).
  for (const auto& p : f.params) {
    if (p.kind != Param::List) continue;
    std::string a = ident(p.name);
    out += fmt::format("  if ({0}__rows > 0 && {0}__row > 0) {{\n"
                       "    {0}__packed = dcc_alloc((size_t)({0}__rows * {0}__row) * sizeof *{0}__packed);\n"
                       "    if (!{0}__packed) {{ st = DCC_ERR_OUT_OF_MEMORY; goto done; }}\n"
                       "    st = dcc_pack((const void* const*){0}->data, {0}->len, {1}, {0}__row, sizeof *{0}__packed, "
                       "{0}__packed, {0}__rows);\n"
                       "    if (st != DCC_OK) goto done;\n  }}\n",
                       a, c.expr(p.sizes[0].second));
  }
  // The kernel: sizes and the input/output buffers in Func::buffers order.
  out += "  {\n    const int64_t sizes[] = {";
  for (const auto& s : f.sizes) out += "s_" + ident(s.name) + ", ";
  out += "0};\n    void* const buffers[] = {";
  std::string host_views;
  for (const auto& b : f.buffers) {
    if (b->kind != BufferKind::Input && b->kind != BufferKind::Output) continue;
    std::string e = kernel_ptrs.count(b.get()) ? kernel_ptrs.at(b.get()) : "NULL";
    host_views += (cuda && b->kind == BufferKind::Input && !b->dims.empty() && is_int(b->type)) ? "h_" + ident(b->name) + ", "
                                                                                                  : std::string("NULL, ");
    if (b->dims.empty() && b->kind == BufferKind::Input) e = "(void*)&" + e;
    else if (b->dims.empty() && b->kind == BufferKind::Output) e = "(void*)result";
    else e = "(void*)" + e;
    out += e + ", ";
  }
  // The aux arrays computed (or taken from the cache) above: the kernel
  // does not compute the prelude again.
  if (!cuda)
    for (const auto& b : aux) out += "(void*)" + ident(b->name) + ", ";
  out += "NULL};\n";
  if (cuda) {
    out += "    void* const host[] = {" + host_views + "NULL};\n";
    out += fmt::format("    if ({}__cuda(sizes, buffers, host) != 0) st = dcc_last_status();\n  }}\n", fn);
  } else {
    out += fmt::format("    if ({}__kernel(sizes, buffers) != 0) st = dcc_last_status();\n  }}\n", fn);
  }
  out += "done:\n";
  for (const auto& h : staged) out += fmt::format("  dcc_free({});\n", h);
  for (const auto& b : owned) out += fmt::format("  dcc_free({});\n", ident(b->name));
  for (const auto& p : f.params)
    if (p.kind == Param::List) out += fmt::format("  dcc_free({}__packed);\n", ident(p.name));
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
      " * f16 and bf16 elements are passed as uint16_t bit patterns. */\n"
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
    out += fmt::format("/* {} */\n{} DCCRT_NOEXCEPT;\n{} DCCRT_NOEXCEPT;\n\n", f.name, signature(f, f.name),
                       signature(f, f.name + "_meta"));
  }
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
  if (target == Target::Cuda)
    out += "/* Copies `bytes` of device memory into dcc_alloc'ed host memory; NULL\n"
           " * with the error set on failure. Defined with the CUDA kernels. */\n"
           "void* dcc__cuda_stage(const void* device, size_t bytes);\n\n";
  for (const auto& f : m.funcs) {
    if (f.name == "main") continue;
    if (target == Target::Cuda)
      out += fmt::format("int32_t {}__cuda(const int64_t* sizes, void* const* dev, void* const* host);\n\n", f.name);
    else
      out += fmt::format("int32_t {}__kernel(const int64_t* sizes, void* const* buffers);\n\n", f.name);
    std::string prepare, callbacks;
    emit_prepare(f, target, prepare, callbacks);
    out += callbacks + prepare;
    auto call_args = [&]() {
      std::string a;
      for (const auto& p : f.params) a += ident(p.name) + ", ";
      if (!f.results.empty()) a += "result, ";
      return a;
    };
    out += fmt::format("{} DCCRT_NOEXCEPT {{\n  dcc_clear_error();\n  return {}__prepare({}1);\n}}\n\n",
                       signature(f, f.name), f.name, call_args());
    out += fmt::format("{} DCCRT_NOEXCEPT {{\n  dcc_clear_error();\n  return {}__prepare({}0);\n}}\n\n",
                       signature(f, f.name + "_meta"), f.name, call_args());
  }
  return out;
}

}  // namespace dccc::backend
