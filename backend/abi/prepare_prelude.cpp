// FN__prepare's prelude (backend/abi/prepare.h): its units from the prelude
// cache or a held prelude, or computed in the wrapper, and the input checks
// that must wait for the offsets it fills.
#include "backend/abi/prepare_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace dccc::backend::cabi {

void Prepare::prelude_plan() {
  // The prelude (offset arrays), with overflow checks. When everything it
  // reads is validated by now, it comes from the process-wide prelude cache,
  // keyed by the sizes and the contents of the length arrays it reads, and
  // is computed (by FN__prelude, below) only for a pattern not seen before.
  aux = ir::prelude_aux(f);  // those the prelude fills
  for (const auto& b : f.buffers)
    if (b->kind == BufferKind::Aux) all_aux.push_back(b);
  // Each unit of the prelude (the arrays computed from one set of lengths)
  // is one entry: in the process-wide cache, or in the prelude a host holds
  // (`held`: filled when run == 2, by FN_prelude; looked up otherwise, by
  // FN_with_prelude), keyed by its sizes and the contents of its inputs.
  // Units alike in any function share the entry. On a device target the
  // entry's device copy is a second entry of its own (kind ^ DCC__DEVICE_KIND,
  // the key followed by the device number), made once per pattern.
  units = prelude_units(f);
  cached = f.prelude && !aux.empty() && !units.empty();
  for (const auto& u : units)
    for (const auto& b : u.inputs)
      if (reads_aux(b->total) || (!c.buffers.count(b.get()) && !b->dims.empty())) cached = false;
  for (const auto& b : all_aux) {
    if (reads_aux(b->total)) out += fmt::format("  int64_t n_{} = 0;\n", names.buf(b.get()));
    else size_aux(b, "  ", true);
  }
  // Entries from the cache stay pinned until `done` (another thread's call
  // cannot evict them while the kernel reads them): unit u's pin is u, or on
  // a device target 2u, and 2u + 1 for its device copy.
  npins = cached ? units.size() * (device ? 2 : 1) : 0;
  // Then f_on_stream's device copies of the host length arrays.
  length_pin0 = npins;
  if (device) npins += host_arrays.size();
  if (npins > 0) out.insert(pins_at, fmt::format("  dcc_prelude_pin* dcc__pins[{}] = {{NULL}};\n", npins));
}

// An aux array sized by another (`fuse`'s maps: F_fo0 holds F_oif0@(E)
// elements) is sized once that one is filled: in its prelude unit, or
// before the prelude statement that fills it.
void Prepare::size_aux(const Buffer& b, const std::string& indent, bool declare) {
  out += fmt::format("{0}ovf = 0;\n{0}{1}n_{2} = {3};\n", indent, declare ? "const int64_t " : "", names.buf(b.get()),
                     c.expr(b->total));
  out += fmt::format("{0}if (ovf || n_{1} < 0 || (uint64_t)n_{1} > SIZE_MAX / 8 / {2}) {{ {3} goto done; }}\n", indent,
                     names.buf(b.get()), all_aux.size() + 1, fail("DCC_ERR_OVERFLOW", quote(fn + ": offset array size overflows")));
}

/// Unit `u` (pin `upin`) looked up, held or computed through the cache.
void Prepare::cached_unit(const PreludeUnit& u, size_t upin) {
  std::string name = fmt::format("dcc__prelude_{:016x}", u.kind);
  if (emitted_units.insert(u.kind).second) {
    prelude_callbacks += fmt::format("/* prelude unit {:#x} */\nstatic dcc_status {}(void* ctx, void* out, size_t out_bytes) {{\n"
                                     "  const struct dcc__prelude_ctx* pc = (const struct dcc__prelude_ctx*)ctx;\n"
                                     "  int ovf = 0;\n  (void)out_bytes;\n",
                                     u.kind, name);
    prelude_callbacks += u.definition;
    prelude_callbacks += "  if (ovf) return dcc__fail(DCC_ERR_OVERFLOW, \"%s: the lengths make an offset overflow\", pc->fn);\n"
                         "  return DCC_OK;\n}\n\n";
    if (on_device(u))
      prelude_callbacks += fmt::format("int {}{}(const struct dcc__prelude_ctx* pc, const void* const* dev_l, void* dev_out);\n\n",
                                       name, device->unit_kernel);
  }
  out += fmt::format("  {{  /* prelude unit {:#x}:", u.kind);
  for (const auto& b : u.aux) out += " " + b->name;
  out += " */\n    ovf = 0;\n";
  out += fmt::format("    int64_t key_bytes = INT64_C(8) * {};\n", u.sizes.size() + 1 + (device ? 1 : 0));
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
                     kind, name, upin * (device ? 2 : 1));
  if (device) {
    // The device copy, keyed by the same bytes and the device number.
    out += "    const void* dpre = NULL;\n";
    out += fmt::format("    if (st == DCC_OK) {{\n      w = {}();\n      memcpy(key + at, &w, 8);\n      at += 8;\n", device->device);
    // Device pointers of the inputs, for computing the copy on the device
    // (CUDA: DCCC_CUDA_PRELUDE=gpu) instead of uploading the host arrays.
    bool gpu = on_device(u);
    std::string dl = "      const void* const pu_dl[] = {";
    for (const auto& b : u.inputs) {
      if (b->dims.empty() || !kernel_ptrs.count(b.get())) gpu = false;
      else dl += "(const void*)" + kernel_ptrs.at(b.get()) + ", ";
    }
    out += dl + "NULL};\n";
    // f_on_stream (run == 3) has the lengths on the host only: uploaded.
    out += fmt::format("      struct {} uc = {{pre, (size_t)elems * 8, &pc, pu_dl, {}}};\n", device->copy_ctx,
                       gpu ? "run == 3 ? NULL : " + name + device->unit_kernel : "NULL");
    out += fmt::format("      if (run == 2) st = dcc_prelude_hold(held, {0} ^ DCC__DEVICE_KIND, key, at, sizeof(void*), {2}, {3}, &uc, &dpre);\n"
                       "      else if (held) st = dcc_prelude_find(held, {0} ^ DCC__DEVICE_KIND, key, at, sizeof(void*), &dpre);\n"
                       "      else st = dcc_prelude_acquire(dcc_default_prelude_cache(), {0} ^ DCC__DEVICE_KIND, key, at, sizeof(void*), {2}, {3}, &uc, &dpre, &dcc__pins[{1}]);\n"
                       "    }}\n",
                       kind, upin * 2 + 1, device->copy, device->release);
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
  if (device) {
    prev = "*(int64_t* const*)dpre";
    for (const auto& b : u.aux) {
      out += fmt::format("    d_{} = {};\n", names.buf(b.get()), prev);
      prev = fmt::format("d_{} + n_{}", names.buf(b.get()), names.buf(b.get()));
    }
  }
  out += "  }\n";
}

bool Prepare::on_device(const PreludeUnit& u) const {
  return device && device->unit_on_device && device->unit_on_device(u);
}

void Prepare::alloc_aux(const Buffer& b) {
  out += fmt::format("  b_{0} = (int64_t*)dcc_alloc((size_t)(n_{0} > 0 ? n_{0} : 1) * 8);\n", names.buf(b.get()));
  out += fmt::format("  if (!b_{}) {{ st = DCC_ERR_OUT_OF_MEMORY; goto done; }}\n", names.buf(b.get()));
}

void Prepare::computed_prelude() {
  // A length array shaped by other lengths (`ntok: [d: D][nsent[d]]i32`,
  // nested raggedness) is checked -- element count, pointer, no negative
  // length -- after the prelude statements that fill the offsets its count
  // reads and before the first one that reads it (such a prelude is not
  // cached: it is computed per call, FN_prelude included).
  if (!cached && f.prelude)
    for (const auto& b : later) nested_lengths |= ir::touches(f.prelude, b.get());
  // FN_prelude stops here: the held prelude has every unit now.
  if (!nested_lengths) out += "  if (run == 2) goto done;\n";
  // The other aux arrays (all of them without the cache) are the wrapper's own.
  for (const auto& b : all_aux)
    if (!cached || std::find(aux.begin(), aux.end(), b) == aux.end()) owned.push_back(b);
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
}

}  // namespace dccc::backend::cabi
