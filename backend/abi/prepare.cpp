// The C wrapper's FN__prepare, which checks the arguments before anything is
// written and calls the kernel (backend/abi/prepare.h): arguments, sizes,
// list arguments, input element counts and lengths, `where` constraints, the
// result's sizes, then the call. The prelude's part is prepare_prelude.cpp.
#include "backend/abi/prepare_writer.h"

#include <fmt/format.h>

#include <functional>

#include "backend/abi/c_signatures.h"

namespace dccc::backend::cabi {

/// Why f_on_stream cannot run `f` without waiting.
static std::string fn_on_stream_refusal(const ir::Func& f) {
  return f.name + "_on_stream: `" + f.name + "`'s prelude is computed per call (nested lengths) and uploaded with a "
         "wait; call " + f.name + " instead";
}

std::string emit_prepare(const ir::Func& f, const DeviceAbi* device, std::string& out, std::string& prelude_callbacks,
                         std::set<uint64_t>& emitted_units) {
  Prepare p(f, device, out, prelude_callbacks, emitted_units);
  p.arguments();
  p.sizes();
  p.list_arguments();
  p.inputs();
  p.prelude_plan();
  if (p.cached)
    for (size_t k = 0; k < p.units.size(); ++k) p.cached_unit(p.units[k], k);
  p.computed_prelude();
  p.where_checks();
  p.result();
  p.call();
  // f_on_stream needs every prelude array from the cache or a held prelude.
  if (device && f.prelude && !(p.cached && p.aux.size() == p.all_aux.size()))
    return fn_on_stream_refusal(f);
  return {};
}

Prepare::Prepare(const ir::Func& func, const DeviceAbi* target, std::string& text, std::string& callbacks,
                 std::set<uint64_t>& emitted)
    : f(func), device(target), out(text), prelude_callbacks(callbacks), emitted_units(emitted),
      names(func), fn(func.name) {
  c.names = &names;
  c.at = f.at;
}

/// The signature, NULL checks, and the C names of every buffer.
void Prepare::arguments() {
  for (const auto& p : f.params)
    if (device && p.kind == Param::List)
      throw BackendUnsupported(p.at, "a `list` parameter on the " + device->name + " target (`" + p.name + "` of `" + f.name + "`)");
  out += "static dcc_status " + fn + "__prepare(";
  {
    std::string sig = signature(f, "", true);
    size_t open = sig.find('(');
    std::string params = sig.substr(open + 1, sig.size() - open - 2);
    out += (params == "void" ? std::string() : params + ", ") + "dcc_prelude* held, int run, void* stream) {\n";
  }
  out += "  dcc_status st = DCC_OK;\n  int ovf = 0;\n  (void)ovf;\n  (void)stream;\n";
  pins_at = out.size();  // the cache entries' pins, declared once counted
  // Storage names.
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
      if (device) out += fmt::format("  int64_t* d_{} = NULL;\n", names.buf(b.get()));
    } else if (b->kind == BufferKind::Scalar) {
      c.buffers[b.get()] = "b_" + names.buf(b.get());
      out += fmt::format("  int64_t b_{} = 0;\n", names.buf(b.get()));
    }
  }
  // Host copies of integer input arrays (a device target), declared before the
  // first `goto done` so that the cleanup frees only what was set. With
  // run == 3 (f_on_stream) the host arrays are the caller's own, and
  // dl_NAME their device copies from the cache.
  host_arrays = on_stream_host_arrays(f);
  for (const auto& b : f.buffers)
    if (device && b->kind == BufferKind::Input && !b->dims.empty() && is_int(b->type)) {
      staged.push_back("h_" + names.buf(b.get()));
      out += fmt::format("  void* h_{} = NULL;\n", names.buf(b.get()));
      if (host_arrays.count(b.get())) out += fmt::format("  const void* dl_{} = NULL;\n", names.buf(b.get()));
    }
}

void Prepare::sizes() {
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

}

void Prepare::list_arguments() {
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
}

void Prepare::inputs() {
  // Inputs: element counts, then lengths must be non-negative. Buffers whose
  // totals need the prelude are checked after it.
  lengths = length_buffers(f);
  // The pointers the kernel gets (device pointers on a device target), before
  // `c.buffers` is pointed at host copies.
  kernel_ptrs = c.buffers;
  for (const auto& b : ir::input_buffers(f)) {
    if (b->dims.empty() || !where.count(b.get())) continue;  // scalars; lists, checked above
    if (reads_aux(b->total)) later.push_back(b);
    else check_input(b);
  }
}

void Prepare::check_input(const Buffer& b) {
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
  if (device && is_int(b->type)) {
    // Integer arrays (lengths) live on the device: checks and the
    // prelude read a host copy.
    std::string h = "h_" + names.buf(b.get());
    // f_on_stream (run == 3): the length arrays are host arrays; other
    // integer arrays are not read on the host.
    out += host_arrays.count(b.get())
               ? fmt::format("    if (run == 3 && {} > 0 && {}({})) {{ {} goto done; }}\n", total, device->is_device, ptr,
                             fail("DCC_ERR_INVALID_ARGUMENT",
                                  quote(fn + "_on_stream: " + param + "." + field +
                                        " is device memory; the length arrays are host arrays here"))) +
                     fmt::format("    if (run == 3) {} = (void*){};\n    else {{\n", h, ptr)
                                      : std::string("    if (run != 3) {\n");
    out += fmt::format("      {} = {}({}, (size_t){} * sizeof({}));\n", h, device->stage, ptr, total, c_type(b->type));
    out += fmt::format("      if (!{}) {{ st = dcc_last_status(); goto done; }}\n    }}\n", h);
    ptr = fmt::format("(({}*){})", c_type(b->type), h);
    c.buffers[b.get()] = ptr;
  }
  if (lengths.count(b.get()))
    out += fmt::format("    for (int64_t k = 0; k < {}; ++k)\n      if ({}[k] < 0) {{ {} goto done; }}\n", total, ptr,
                       fail("DCC_ERR_NEGATIVE_LENGTH",
                            quote(fn + ": " + param + "." + field + "[%lld] is %lld; lengths must be >= 0"),
                            "(long long)k, (long long)" + ptr + "[k]"));
  out += "  }\n";
}

void Prepare::where_checks() {
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
}

void Prepare::result() {
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
}

/// Packs list arguments and calls the kernel; `done:` frees what the wrapper owns.
void Prepare::call() {
  out += "  if (!run) goto done;\n";
  if (device) on_stream_lengths();
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
    if (device && host_arrays.count(b.get())) e = fmt::format("(run == 3 ? dl_{} : (const void*){})", names.buf(b.get()), e);
    host_views += (device && b->kind == BufferKind::Input && !b->dims.empty() && is_int(b->type)) ? "h_" + names.buf(b.get()) + ", "
                                                                                                  : std::string("NULL, ");
    if (b->dims.empty() && b->kind == BufferKind::Input) e = "(void*)&" + e;
    else if (b->dims.empty() && b->kind == BufferKind::Output) e = "(void*)result";
    else e = "(void*)" + e;
    out += e + ", ";
  }
  // The aux arrays computed (or taken from the cache) above: the kernel
  // does not compute the prelude again.
  if (!device)
    for (const auto& b : aux) out += "(void*)b_" + names.buf(b.get()) + ", ";
  out += "NULL};\n";
  if (device) {
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
      out += fmt::format("    if ({}{}(sizes, buffers, host, aux_dev, aux_host, held, stream, run == 3) != 0) st = dcc_last_status();\n  }}\n",
                         fn, device->launcher);
    } else {
      out += fmt::format("    if ({}{}(sizes, buffers, host, NULL, NULL, held, stream, run == 3) != 0) st = dcc_last_status();\n  }}\n",
                         fn, device->launcher);
    }
  } else {
    out += fmt::format("    if ({}__kernel(sizes, buffers) != 0) st = dcc_last_status();\n  }}\n", fn);
  }
  out += "done:\n";
  for (const auto& h : staged) out += fmt::format("  if (run != 3) dcc_free({});\n", h);
  for (const auto& b : owned) out += fmt::format("  dcc_free(b_{});\n", names.buf(b.get()));
  if (npins > 0) out += fmt::format("  for (int i = 0; i < {}; ++i) dcc_prelude_unpin(dcc__pins[i]);\n", npins);
  for (const auto& p : f.params)
    if (p.kind == Param::List) out += fmt::format("  dcc_free({}__packed);\n", list_local(p));
  out += "  return st;\n}\n\n";
}

/// f_on_stream (run == 3): each host length array's device copy, an entry of
/// the cache (or the held prelude) keyed by its contents and the device, so
/// a call with a known pattern uploads nothing; the kernels read these
/// copies, never the structs' pointers, so what they see is what was
/// checked.
void Prepare::on_stream_lengths() {
  if (host_arrays.empty()) return;
  out += "  if (run == 3) {\n";
  size_t pin = length_pin0;
  for (const auto& b : f.buffers) {
    if (!host_arrays.count(b.get())) continue;
    const std::string n = names.buf(b.get());
    out += fmt::format("    {{\n      ovf = 0;\n      const int64_t cnt = {};\n      const size_t bytes = (size_t)cnt * sizeof({});\n",
                       c.expr(b->total), c_type(b->type));
    out += "      unsigned char* key = (unsigned char*)dcc_alloc(bytes + 16);\n"
           "      if (!key) { st = DCC_ERR_OUT_OF_MEMORY; goto done; }\n"
           "      int64_t w = cnt;\n      memcpy(key, &w, 8);\n";
    out += fmt::format("      if (bytes) memcpy(key + 8, h_{}, bytes);\n", n);
    out += fmt::format("      w = {}();\n      memcpy(key + 8 + bytes, &w, 8);\n", device->device);
    out += fmt::format("      struct {} uc = {{h_{}, bytes, NULL, NULL, NULL}};\n      const void* e = NULL;\n", device->copy_ctx, n);
    // The kind: "lengths" and the element type, apart from every unit's.
    const std::string kind = fmt::format("UINT64_C({:#x})", 0x6c656e6774687300ull + static_cast<unsigned>(b->type));
    out += fmt::format("      if (held) st = dcc_prelude_hold(held, {0}, key, bytes + 16, sizeof(void*), {2}, {3}, &uc, &e);\n"
                       "      else st = dcc_prelude_acquire(dcc_default_prelude_cache(), {0}, key, bytes + 16, sizeof(void*), {2}, {3}, &uc, &e, &dcc__pins[{1}]);\n",
                       kind, pin++, device->copy, device->release);
    out += "      dcc_free(key);\n      if (st != DCC_OK) goto done;\n";
    out += fmt::format("      dl_{} = *(void* const*)e;\n    }}\n", n);
  }
  out += "  }\n";
}

/// The integer input arrays f_on_stream takes as host arrays: those the
/// host-side code reads (totals, the prelude, `where` checks, loop extents
/// that size the launches).
std::set<const BufferNode*> on_stream_host_arrays(const ir::Func& f) {
  std::set<const BufferNode*> read = length_buffers(f), out;
  auto add = [&](const ir::ExprNode& e) {
    if (e.kind == ExprKind::Load && e.buffer->kind == BufferKind::Input) read.insert(e.buffer.get());
  };
  for (const auto& chk : f.checks) {
    ir::each_expr(chk.cond, add);
    for (const auto& [v, e] : chk.vars) ir::each_expr(e, add);
    if (chk.pre) ir::each_stmt(chk.pre, [&](const ir::StmtNode& x) { ir::own_exprs(x, add); });
  }
  ir::each_stmt(f.body, [&](const ir::StmtNode& x) {
    if (x.kind == StmtKind::For) ir::each_expr(x.extent, add);
  });
  for (const auto& b : f.buffers)
    if (read.count(b.get()) && b->kind == BufferKind::Input && !b->dims.empty() && is_int(b->type)) out.insert(b.get());
  return out;
}

}  // namespace dccc::backend::cabi
