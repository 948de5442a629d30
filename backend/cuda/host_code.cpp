// FuncEmitter: the host side of a function -- f__cuda (the prelude and
// sizes on the host, uploads, launches, error handling) and f__cuda_host
// for the tests (backend/cuda/cuda_emitter.h).
#include "backend/cuda/cuda_abi.h"
#include "backend/cuda/cuda_emitter.h"
#include "backend/gpu/print_cuda.h"

#include <fmt/format.h>

namespace dccc::backend::cudagen {

/// The input length arrays the host code reads (a tile list's cache key)
/// and the integer input arrays the wrapper passes host copies of. Which
/// values the host needs that kernels compute, and when, is the host
/// plan's (host_steps.h).
void FuncEmitter::check_host_computable() {
  auto host_read = [&](const ir::ExprNode& x) {
    if (x.kind == ExprKind::Load && x.buffer->kind == BufferKind::Input && !x.buffer->dims.empty())
      key_arrays_.insert(x.buffer.get());
  };
  for (const auto& b : f_.buffers) ir::each_expr(b->total, host_read);
  ir::each_stmt(f_.prelude, [&](const ir::StmtNode& s) { ir::own_exprs(s, host_read); });
  ir::each_stmt(f_.body, [&](const ir::StmtNode& s) {
    if (s.kind == StmtKind::For) ir::each_expr(s.extent, host_read);
  });
  // The wrapper passes host copies of every integer input array.
  for (const auto& b : f_.buffers)
    if (b->kind == BufferKind::Input && !b->dims.empty() && is_int(b->type)) host_len_.insert(b.get());
}

/// What launch `l` evaluates on the host (the launch code below).
LaunchReads FuncEmitter::launch_reads(const Launch& l) const {
  LaunchReads r;
  if (l.attn) {
    r.tile_list = true;
    for (const auto& x : l.attn->batch) r.exprs.push_back(x.extent);
    r.exprs.push_back(l.attn->rows);
    r.exprs.push_back(l.attn->keys);
    for (const auto& s : l.attn->scalars) r.exprs.push_back(s.value);
  } else if (l.mma) {
    r.tile_list = true;
    for (const auto& x : l.mma->tiles.batch) r.exprs.push_back(x.extent);
    r.exprs.push_back(l.mma->tiles.rows);
    r.exprs.push_back(l.mma->tiles.cols);
  } else if (!l.parallel) {
  } else if (!l.ranges.empty()) {
    r.exprs.push_back(l.outer->extent);
    for (const auto& [cond, inner] : l.ranges) {
      if (cond) r.exprs.push_back(cond);
      for (const auto& in : inner) r.exprs.push_back(in->extent);
    }
  } else if (l.mapping) {
    for (size_t k = 0; k < l.blocks.size() && k < 2; ++k) r.exprs.push_back(l.blocks[k]->extent);
    for (const auto& g : l.grid_guards) r.exprs.push_back(g);
  } else {
    r.exprs.push_back(l.outer->extent);
    for (const auto& in : l.inner) r.exprs.push_back(in->extent);
  }
  return r;
}

/// Copies device buffer `b` (computed by the kernels before) to a host
/// copy in its `hp` slot, waiting on the stream, and checks it when it
/// shapes a buffer (HostPlan::lengths) as the wrapper checks the lengths
/// it is given. From here on, host code reads it there.
std::string FuncEmitter::fetch(const BufferNode* b) {
  const int k = slot_.at(b);
  const std::string t = c_type(b->type), fn = f_.name;
  std::string o = fmt::format("  {{\n    ovf = 0;\n    const int64_t n = {};\n", b->dims.empty() ? "(int64_t)1" : host_.expr(b->total));
  o += fmt::format("    if (ovf || n < 0 || (uint64_t)n > (uint64_t)INT64_MAX / 8) {{ st = dcc_set_error(DCC_ERR_OVERFLOW, \"{}: the size of `{}` overflows\"); goto done; }}\n", fn, b->name);
  o += fmt::format("    hp[{0}] = std::malloc((size_t)n * sizeof({1}) + 1);\n    host_owned.push_back(hp[{0}]);\n", k, t);
  o += fmt::format("    if (!hp[{}]) {{ st = dcc_set_error(DCC_ERR_OUT_OF_MEMORY, \"{}: cannot allocate a host copy of `{}`\"); goto done; }}\n", k, fn, b->name);
  // The wait: the kernels before have written it.
  o += fmt::format("    cudaError_t e = cudaMemcpyAsync(hp[{0}], a.p[{0}], (size_t)n * sizeof({1}), cudaMemcpyDeviceToHost, strm);\n", k, t);
  o += "    if (e == cudaSuccess) e = cudaStreamSynchronize(strm);\n";
  o += fmt::format("    if (e != cudaSuccess) {{ st = dcc_cuda_fail(e, \"copying `{}` to the host\"); goto done; }}\n", b->name);
  if (plan_.lengths.count(b)) {
    o += fmt::format("    for (int64_t i = 0; i < n; ++i)\n      if (((const {0}*)hp[{1}])[i] < 0) {{\n", t, k);
    o += "        char msg[256];\n";
    o += fmt::format("        std::snprintf(msg, sizeof msg, \"{}: `{}`[%lld] is %lld, a length the function computes; lengths must be >= 0\", "
                     "(long long)i, (long long)((const {}*)hp[{}])[i]);\n", fn, b->name, t, k);
    o += "        st = dcc_set_error(DCC_ERR_NEGATIVE_LENGTH, msg);\n        goto done;\n      }\n";
  }
  o += "  }\n";
  host_.buffers[b] = b->dims.empty() ? fmt::format("(*(const {}*)hp[{}])", t, k) : fmt::format("((const {}*)hp[{}])", t, k);
  return o;
}

std::string FuncEmitter::length_check(const std::string& cond, const std::string& index, const std::string& value,
                                      const std::string& name, const std::string& pad) const {
  std::string text;  // a printf format in a C string literal
  for (char c : f_.name + ": `" + name + "`")
    text += c == '%' ? std::string("%%") : c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
  std::string o = fmt::format("{}if (!({})) {{\n{}  char msg[256];\n", pad, cond, pad);
  o += fmt::format("{}  std::snprintf(msg, sizeof msg, \"{}[%lld] is %lld, a length the function computes; lengths must be >= 0\", "
                   "(long long)({}), (long long)({}));\n", pad, text, index, value);
  o += fmt::format("{}  st = dcc_set_error(DCC_ERR_NEGATIVE_LENGTH, msg);\n{}  goto done;\n{}}}\n", pad, pad, pad);
  return o;
}

/// Allocates local or scalar `b` on the device: its size from the host
/// values at this point, checked as the CPU target checks it.
std::string FuncEmitter::allocate_local(const BufferNode* b) {
  const int k = slot_.at(b);
  std::string o = fmt::format("  {{\n    ovf = 0;\n    const int64_t n = {};\n", b->dims.empty() ? "(int64_t)1" : host_.expr(b->total));
  o += fmt::format("    if (ovf || (uint64_t)n > (uint64_t)INT64_MAX / 8) {{ st = dcc_set_error(DCC_ERR_OVERFLOW, \"{}: the size of `{}` overflows\"); goto done; }}\n",
                   f_.name, b->name);
  o += fmt::format("    if (n < 0) {{ st = dcc_set_error(DCC_ERR_INVALID_ARGUMENT, \"{}: the extents of `{}` give a negative size\"); goto done; }}\n",
                   f_.name, b->name);
  o += fmt::format("    if (!dalloc((size_t)n * sizeof({}), &a.p[{}]{})) {{ st = DCC_ERR_CUDA; goto done; }}\n  }}\n",
                   c_type(b->type), k, b->zero_fill ? "" : ", false");
  return o;
}

/// The sizes by name (`s_B`), as host code refers to them.
std::string FuncEmitter::size_decls() const {
  std::string o;
  for (size_t k = 0; k < f_.sizes.size(); ++k)
    o += fmt::format("  const int64_t s_{0} = sizes[{1}];\n  (void)s_{0};\n", names_.size(f_.sizes[k].name), k);
  return o;
}

/// The launch of a tensor-core kernel (gpu/print_cuda.h): the tile list
/// -- an entry (batch indices..., m-tile, n-tile) per non-empty tile of
/// every batch entry, from the host copies of the lengths -- from the
/// prelude cache (tile_list), then one block per entry.
std::string FuncEmitter::mma_launch(const Launch& l) {
  const gpu::Kernel& k = *l.mma;
  const int gw = gpu::tile_entry_ints(k);
  std::string o;
  std::string pad = "      ";
  for (const auto& b : k.tiles.batch) {
    std::string v = host_.var(b.var);
    o += fmt::format("{0}for (int64_t {1} = 0, {1}_n = {2}; {1} < {1}_n; ++{1}) {{\n", pad, v, host_.expr(b.extent));
    pad += "  ";
  }
  // The tile width of the form the device runs (wg: the sm_90a one).
  const gpu::Kernel* w = k.sm90a.get();
  if (w && w->tiles.tile_m != k.tiles.tile_m) throw std::logic_error("kernel IR: the sm_90a form's tile rows differ");
  const std::string tn = w && w->tiles.tile_n != k.tiles.tile_n
                             ? fmt::format("(wg ? {} : {})", w->tiles.tile_n, k.tiles.tile_n)
                             : std::to_string(k.tiles.tile_n);
  o += fmt::format("{}const int64_t tm = ({} + {}) / {}, tn = ({} + {} - 1) / {};\n", pad, host_.expr(k.tiles.rows),
                   k.tiles.tile_m - 1, k.tiles.tile_m, host_.expr(k.tiles.cols), tn, tn);
  o += fmt::format("{}if (tm > INT32_MAX || tn > INT32_MAX) ovf = 1;\n", pad);
  o += fmt::format("{}for (int64_t mt = 0; mt < tm && !ovf; ++mt)\n{}  for (int64_t nt = 0; nt < tn; ++nt) {{\n", pad, pad);
  for (const auto& b : k.tiles.batch) o += fmt::format("{}    tl.push_back((int32_t){});\n", pad, host_.var(b.var));
  o += fmt::format("{0}    tl.push_back((int32_t)mt);\n{0}    tl.push_back((int32_t)nt);\n{0}  }}\n", pad);
  for (size_t i = 0; i < k.tiles.batch.size(); ++i) {
    pad.resize(pad.size() - 2);
    o += pad + "}\n";
  }
  std::string out;
  if (w) {
    // Whether the device runs the module's sm_90a compilation, whose wgmma
    // form has its own tile width, threads, shared memory and grid
    // (gpu::Kernel::sm90a; read from the module once a device).
    out += "    const int wg = dcc__wgmma_form();\n";
    out += "    if (wg < 0) { st = dcc_set_error(DCC_ERR_CUDA, \"cannot read which compilation of the kernels the device runs\"); goto done; }\n";
  }
  out += tile_list(k.name, o, gw);
  out += "    const int64_t ntiles = tv->ntiles;\n";
  out += "    if (ntiles > 0) {\n";
  out += fmt::format("      {}__launch lp;\n      lp.a = a;\n", k.name);
  out += "      lp.tiles = (const int32_t*)tv->dev;\n      lp.ntiles = ntiles;\n";
  std::string smem = "0", threads = std::to_string(k.threads), grid = "(unsigned)ntiles";
  if (w && w->dynamic_smem) {
    out += fmt::format("      const int dsm = wg ? {} : 0;\n", w->dynamic_smem);
    out += fmt::format("      if (dsm > 0 && cudaFuncSetAttribute({}, cudaFuncAttributeMaxDynamicSharedMemorySize, dsm) != cudaSuccess) "
                       "{{ st = dcc_cuda_fail(cudaGetLastError(), \"cudaFuncSetAttribute\"); goto done; }}\n",
                       k.name);
    smem = "dsm";
  }
  if (w && w->threads != k.threads) threads = fmt::format("wg ? {} : {}", w->threads, k.threads);
  if (w && w->specialized && w->specialized->persistent) {
    // A persistent grid: min(entries, SMs x the blocks an SM holds).
    out += "      int64_t blocks = ntiles;\n      if (wg) {\n" + persistent_grid_sizing(k.name, w->threads, smem);
    out += fmt::format("        blocks = {};\n      }}\n", kPersistentBlocks);
    grid = "(unsigned)blocks";
  }
  out += fmt::format("      {}<<<{}, {}, {}, strm>>>(lp);\n    }}\n", k.name, grid, threads, smem);
  return out;
}

std::string persistent_grid_sizing(const std::string& kernel, int threads, const std::string& smem) {
  return fmt::format("        int dev = 0, sms = 0, occ = 0;\n"
                     "        cudaError_t ge = cudaGetDevice(&dev);\n"
                     "        if (ge == cudaSuccess) ge = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);\n"
                     "        if (ge == cudaSuccess) ge = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, {}, {}, {});\n"
                     "        if (ge != cudaSuccess) {{ st = dcc_cuda_fail(ge, \"sizing the persistent grid\"); goto done; }}\n",
                     kernel, threads, smem);
}

/// FNV-1a, 64 bits: the cache kind of a launch's tile list.
static uint64_t fnv1a(const std::string& s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

/// The tile list of kernel `kernel` from the prelude cache or the held
/// prelude (dcc__tile_list, backend/cuda/cuda_prologue.cpp): `build` are
/// statements that fill `std::vector<int32_t> tl` (entries of `width` ints)
/// and may set `ovf` and `dmax`, run only on a miss. The entry's kind is a
/// hash of the function, the kernel and that code; its key the function's
/// sizes and the contents of the length arrays the host code reads
/// (key_arrays_), which determine everything the code computes. Declares
/// `tv`, the entry, pinned until the launcher returns.
std::string FuncEmitter::tile_list(const std::string& kernel, const std::string& build, int width) {
  std::string code = "      int ovf = 0;\n      (void)ovf;\n      int64_t dmax = 0, kmean = 0;\n      (void)dmax, (void)kmean;\n"
                     "      std::vector<int32_t> tl;\n";
  code += build;
  code += fmt::format("      if (ovf) return dcc_set_error(DCC_ERR_OVERFLOW, \"{}: an iteration space overflows\");\n", f_.name);
  code += fmt::format("      t->dmax = dmax;\n      t->kmean = kmean;\n      return dcc__tiles_upload(tl, {}, t);\n", width);
  std::string o = "    const DccTiles* tv = nullptr;\n    {\n";
  o += "      DccTileBuild build = [&](DccTiles* t) -> int32_t {\n" + indent(code, 2) + "      };\n";
  std::string ks = "      const int64_t ks[] = {", ka = "      const void* const ka[] = {", kb = "      const int64_t kb[] = {";
  for (const auto& sz : f_.sizes) ks += fmt::format("s_{}, ", names_.size(sz.name));
  int na = 0;
  for (const auto& b : f_.buffers)
    if (key_arrays_.count(b.get())) {
      ka += fmt::format("hp[{}], ", slot_.at(b.get()));
      kb += fmt::format("(int64_t)({}) * (int64_t)sizeof({}), ", host_.expr(b->total), c_type(b->type));
      ++na;
    }
  o += ks + "0};\n" + ka + "nullptr};\n" + kb + "0};\n";
  o += "      dcc_prelude_pin* pin = nullptr;\n";
  o += fmt::format("      const int32_t r = dcc__tile_list(held, UINT64_C({}), ks, {}, ka, kb, {}, build, &tv, &pin);\n",
                   fnv1a(f_.name + "\n" + kernel + "\n" + code), f_.sizes.size(), na);
  o += "      pins.push_back(pin);\n      if (r != 0) { st = r; goto done; }\n    }\n";
  return o;
}

/// The launcher's statements that turn the error flag `err_host` of a
/// violated `where` (asserts_) into its error, as the CPU target reports it.
std::string FuncEmitter::assert_errors(const std::string& pad) const {
  std::string o;
  for (size_t k = 0; k < asserts_.size(); ++k) {
    std::string text;  // a C string literal's contents
    for (char c : "`where` constraint violated: " + asserts_[k]) text += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
    o += fmt::format("{}if (err_host == {}) {{ st = dcc_set_error(DCC_ERR_INVALID_ARGUMENT, \"{}\"); goto done; }}\n", pad,
                     kFirstAssert + static_cast<int>(k), text);
  }
  return o;
}

void FuncEmitter::emit_launcher(const std::vector<Launch>& launches) {
  const std::string& fn = f_.name;
  std::string o;
  // aux_dev/aux_host: the aux arrays (Func::buffers order) on the device
  // and on the host, from the prelude cache or a held prelude (C ABI); NULL:
  // computed here on the host and uploaded, per call.
  // held: the held prelude (f_with_prelude, f_on_stream) that keeps the tile
  // lists, else the cache; stream: where every kernel runs; flags & 1
  // (f_on_stream): return without waiting (docs/abi.md, "The CUDA target").
  // The parameters are the ones the C wrapper declares (cuda_abi.h).
  o += fmt::format("extern \"C\" int32_t {}{}({}) {{\n", fn, kCudaLauncher, kCudaLauncherParams);
  o += "  cudaStream_t strm = (cudaStream_t)stream;\n  const bool async = (flags & 1) != 0;\n  (void)held;\n";
  o += fmt::format("  const int nb = {};\n", f_.buffers.size());
  o += "  std::vector<void*> hp(nb > 0 ? nb : 1, nullptr);   // host views: length arrays, aux arrays\n";
  o += "  std::vector<void*> owned;                           // device memory freed at the end\n";
  o += "  std::vector<void*> host_owned;\n";
  o += "  std::vector<dcc_prelude_pin*> pins;                 // tile lists from the cache, unpinned at the end\n";
  o += fmt::format("  {}__args a;\n  std::memset(&a, 0, sizeof a);\n", fn);
  o += fmt::format("  for (int k = 0; k < {}; ++k) a.s[k] = sizes[k];\n", f_.sizes.size());
  o += size_decls();
  o += "  int ovf = 0;\n  (void)ovf;\n  int32_t st = 0;\n  int err_host = 0;\n  (void)err_host;\n";
  // What f_on_stream cannot do without waiting is refused before anything runs.
  bool checks = false;
  for (const auto& l : launches) checks |= l.checks;
  if (checks)
    o += fmt::format("  if (async) return dcc_set_error(DCC_ERR_INVALID_ARGUMENT, \"{}_on_stream: `{}` checks the `where` of an "
                     "inlined call on the device and waits for it; call {} instead\");\n", fn, fn, fn);
  if (plan_.waits())
    o += fmt::format("  if (async) return dcc_set_error(DCC_ERR_INVALID_ARGUMENT, \"{}_on_stream: `{}` computes extents on the "
                     "device that the host reads (a wait); call {} instead\");\n", fn, fn, fn);
  // Aux arrays the body fills are computed here on every call: the
  // wrapper's (the cache's) are not used.
  if (!plan_.body_aux.empty()) o += "  aux_dev = nullptr;\n  aux_host = nullptr;\n";
  bool any_aux = false;
  for (const auto& b : f_.buffers) any_aux |= b->kind == BufferKind::Aux;
  if (any_aux)
    o += fmt::format("  if (async && !aux_host) return dcc_set_error(DCC_ERR_INVALID_ARGUMENT, \"{}_on_stream: `{}`'s "
                     "prelude is computed per call (nested lengths) and uploaded with a wait; call {} instead\");\n", fn, fn, fn);
  // Stream-ordered allocations from the device's pool, which keeps freed
  // memory for the next call (dcc_cuda_init raises its release threshold).
  o += "  if (dcc_cuda_init() != 0) return DCC_ERR_CUDA;\n";
  // zero = false: a local whose first statement stores every element
  // (BufferNode::zero_fill); filled with 0xFF only under DCC_POISON_UNINIT.
  o += "  auto dalloc = [&](size_t bytes, void** p, bool zero = true) -> bool {\n"
       "    if (bytes == 0) bytes = 1;\n"
       "    cudaError_t e = cudaMallocAsync(p, bytes, strm);\n"
       "    if (e != cudaSuccess) { *p = nullptr; dcc_cuda_fail(e, \"allocating device memory\"); return false; }\n"
       "    owned.push_back(*p);\n"
       "    if ((zero || dcc_cuda_poison()) && (e = cudaMemsetAsync(*p, zero ? 0 : 0xFF, bytes, strm)) != cudaSuccess) {\n"
       "      dcc_cuda_fail(e, \"cudaMemsetAsync\");\n      return false;\n    }\n"
       "    return true;\n  };\n";
  o += "  DccProfile prof;\n  prof.on = prof.on && !async;\n";
  // The error flag, where a kernel divides integers (dcc_idiv, dcc_imod).
  if (uses_err_) o += "  if (!dalloc(sizeof(int), (void**)&a.err)) { st = DCC_ERR_CUDA; goto done; }\n";
  // Inputs and outputs: device pointers; scalars go through device slots.
  size_t dev_slot = 0;
  for (const auto& b : f_.buffers) {
    int k = slot_.at(b.get());
    if (b->kind == BufferKind::Input || b->kind == BufferKind::Output) {
      if (b->dims.empty()) {
        o += fmt::format("  if (!dalloc(8, &a.p[{}])) {{ st = DCC_ERR_CUDA; goto done; }}\n", k);
        if (b->kind == BufferKind::Input) {
          // f_on_stream: the value travels in a kernel's argument (a graph
          // replays it without reading the caller's memory).
          o += fmt::format("  if (async) {{\n    dcc__set_args sa;\n    sa.p = a.p[{0}];\n    sa.v = 0;\n    sa.n = (int)sizeof({2});\n"
                           "    std::memcpy(&sa.v, dev[{1}], sizeof({2}));\n    dcc__set_bytes<<<1, 1, 0, strm>>>(sa);\n  }} else ", k, dev_slot, c_type(b->type));
          o += fmt::format("if (cudaMemcpy(a.p[{}], dev[{}], sizeof({}), cudaMemcpyHostToDevice) != cudaSuccess) {{ st = dcc_cuda_fail(cudaGetLastError(), \"cudaMemcpy\"); goto done; }}\n",
                           k, dev_slot, c_type(b->type));
        }
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
  auto host_aux = [&](const ir::Buffer& b) {
    int k = slot_.at(b.get());
    o += fmt::format("  {{\n    ovf = 0;\n    const int64_t n = {};\n", host_.expr(b->total));
    o += fmt::format("    if (ovf || n < 0) {{ st = dcc_set_error(DCC_ERR_OVERFLOW, \"{}: offset array size overflows\"); goto done; }}\n", fn);
    o += fmt::format("    hp[{}] = std::calloc((size_t)n + 1, 8);\n    host_owned.push_back(hp[{}]);\n", k, k);
    o += fmt::format("    if (!hp[{}]) {{ st = dcc_set_error(DCC_ERR_OUT_OF_MEMORY, \"{}: cannot allocate an offset array\"); goto done; }}\n  }}\n", k, fn);
  };
  std::vector<ir::Buffer> later = aux_sized_later();
  for (const auto& b : f_.buffers)
    if (b->kind == BufferKind::Aux && std::find(later.begin(), later.end(), b) == later.end()) host_aux(b);
  if (f_.prelude && !later.empty()) {
    // An aux array sized by another (`fuse`'s maps) is allocated after the
    // statements before the one that fills it.
    o += "  ovf = 0;\n";
    for (const auto& item : prelude_items()) {
      for (const auto& b : later)
        if (fills(item, b)) {
          o += fmt::format("  if (ovf) {{ st = dcc_set_error(DCC_ERR_OVERFLOW, \"{}: the lengths make an offset overflow\"); goto done; }}\n", fn);
          host_aux(b);
        }
      o += "  {\n";
      host_.stmt(item, 2, o);
      o += "  }\n";
    }
    o += fmt::format("  if (ovf) {{ st = dcc_set_error(DCC_ERR_OVERFLOW, \"{}: the lengths make an offset overflow\"); goto done; }}\n", fn);
  } else if (f_.prelude) {
    o += "  ovf = 0;\n  {\n";
    host_.stmt(f_.prelude, 2, o);
    o += fmt::format("  }}\n  if (ovf) {{ st = dcc_set_error(DCC_ERR_OVERFLOW, \"{}: the lengths make an offset overflow\"); goto done; }}\n", fn);
  }
  // (Those the body fills are uploaded once it has: upload_aux.)
  auto upload_aux = [&](const BufferNode* b, const std::string& pad) {
    int k = slot_.at(b);
    o += fmt::format("{}{{\n{}  const int64_t n = {};\n", pad, pad, host_.expr(b->total));
    o += fmt::format("{}  if (!dalloc((size_t)n * 8, &a.p[{}])) {{ st = DCC_ERR_CUDA; goto done; }}\n", pad, k);
    o += fmt::format("{}  if (n > 0 && cudaMemcpy(a.p[{}], hp[{}], (size_t)n * 8, cudaMemcpyHostToDevice) != cudaSuccess) {{ st = dcc_cuda_fail(cudaGetLastError(), \"cudaMemcpy\"); goto done; }}\n{}}}\n",
                     pad, k, k, pad);
  };
  for (const auto& b : f_.buffers)
    if (b->kind == BufferKind::Aux && !plan_.body_aux.count(b.get())) upload_aux(b.get(), "  ");
  o += "  }\n";
  for (const auto& b : f_.buffers) {
    int k = slot_.at(b.get());
    // A scalar that every kernel keeps in registers needs no memory.
    if (b->kind == BufferKind::Scalar && b->dims.empty() && !in_memory_.count(b.get())) continue;
    if (b->kind == BufferKind::Local && in_registers_.count(b.get())) continue;
    if (plan_.deferred.count(b.get())) continue;  // allocated at its statement (below)
    if (b->kind == BufferKind::Local || b->kind == BufferKind::Scalar) {
      o += fmt::format("  {{\n    ovf = 0;\n    const int64_t n = {};\n", b->dims.empty() ? "(int64_t)1" : host_.expr(b->total));
      o += fmt::format("    if (ovf || n < 0 || (uint64_t)n > (uint64_t)INT64_MAX / 8) {{ st = dcc_set_error(DCC_ERR_OVERFLOW, \"{}: the size of `{}` overflows\"); goto done; }}\n",
                       fn, b->name);
      o += fmt::format("    if (!dalloc((size_t)n * sizeof({}), &a.p[{}]{})) {{ st = DCC_ERR_CUDA; goto done; }}\n  }}\n",
                       c_type(b->type), k, b->zero_fill ? "" : ", false");
    }
  }
  const std::vector<ir::Stmt> items = ir::items_of(f_.body);
  // The kernels, in statement order on the default stream; around each,
  // what the host plan says (host_steps.h).
  for (size_t step = 0; step < launches.size(); ++step) {
    const Launch& l = launches[step];
    const HostStep& hs = plan_.steps.at(step);
    for (const BufferNode* b : hs.fetch) o += fetch(b);
    for (const BufferNode* b : hs.allocate)
      if (!(b->kind == BufferKind::Scalar && !in_memory_.count(b)) && !in_registers_.count(b)) o += allocate_local(b);
    if (l.on_host) {
      // Offsets of lengths the kernels computed: the prelude's code, on the
      // host, then uploaded.
      o += "  ovf = 0;\n  {\n";
      host_.stmt(items.at(step), 2, o);
      o += fmt::format("  }}\n  if (ovf) {{ st = dcc_set_error(DCC_ERR_OVERFLOW, \"{}: the lengths make an offset overflow\"); goto done; }}\n", fn);
      for (const BufferNode* b : hs.upload) upload_aux(b, "  ");
      continue;
    }
    o += "  {\n    ovf = 0;\n    prof.start();\n";
    if (l.attn) {
      o += attention_launch(l);
    } else if (l.mma) {
      o += mma_launch(l);
    } else if (!l.parallel) {
      o += fmt::format("    {}<<<1, 1, 0, strm>>>(a);\n", l.kernel);
    } else if (!l.ranges.empty()) {
      // The fused loop on y; threads over the largest range's loops.
      std::string v0 = host_.var(l.outer->var);
      o += fmt::format("    const int64_t n0 = {};\n    int64_t most = 0;\n", host_.expr(l.outer->extent));
      o += fmt::format("    for (int64_t {0} = 0; {0} < n0; ++{0}) {{\n      int64_t m = 1;\n", v0);
      for (size_t k = 0; k < l.ranges.size(); ++k) {
        const auto& [cond, inner] = l.ranges[k];
        o += cond ? fmt::format("      {}if ({}) {{\n", k ? "} else " : "", host_.expr(cond)) : "      } else {\n";
        for (const auto& in : inner) o += fmt::format("        m = dcc__mul(m, {}, &ovf);\n", host_.expr(in->extent));
      }
      o += "      }\n      most = std::max(most, m);\n    }\n";
      o += fmt::format("    if (ovf) {{ st = dcc_set_error(DCC_ERR_OVERFLOW, \"{}: an iteration space overflows\"); goto done; }}\n", fn);
      o += "    if (n0 > 0 && most > 0) {\n";
      o += "      dim3 grid((unsigned)std::min<int64_t>((most + 255) / 256, 4096), (unsigned)std::min<int64_t>(n0, 65535));\n";
      o += fmt::format("      {}<<<grid, 256, 0, strm>>>(a);\n    }}\n", l.kernel);
    } else if (l.mapping) {
      // A block per iteration of the grid's loops (gpu_blocks).
      o += fmt::format("    const int64_t n0 = {};\n    int64_t most = 1;\n", host_.expr(l.blocks[0]->extent));
      if (l.blocks.size() > 1) {
        std::string v0 = host_.var(l.blocks[0]->var);
        o += fmt::format("    most = 0;\n    for (int64_t {0} = 0; {0} < n0; ++{0}) {{\n", v0);
        for (const auto& g : l.grid_guards) o += fmt::format("      if (!({})) continue;\n", host_.expr(g));
        o += fmt::format("      most = std::max<int64_t>(most, {});\n    }}\n", host_.expr(l.blocks[1]->extent));
      }
      o += fmt::format("    if (ovf) {{ st = dcc_set_error(DCC_ERR_OVERFLOW, \"{}: an iteration space overflows\"); goto done; }}\n", fn);
      o += "    if (n0 > 0 && most > 0) {\n";
      if (l.blocks.size() > 1)
        o += "      dim3 grid((unsigned)std::min<int64_t>(most, 1 << 20), (unsigned)std::min<int64_t>(n0, 65535));\n";
      else
        o += "      dim3 grid((unsigned)std::min<int64_t>(n0, 1 << 20));\n";
      o += fmt::format("      {}<<<grid, {}, 0, strm>>>(a);\n    }}\n", l.kernel, l.block_dim);
    } else if (l.inner.empty()) {
      o += fmt::format("    const int64_t n = {};\n", host_.expr(l.outer->extent));
      o += fmt::format("    if (n > 0) {}<<<(unsigned)std::min<int64_t>((n + 255) / 256, 65535), 256, 0, strm>>>(a);\n", l.kernel);
    } else {
      std::string v0 = host_.var(l.outer->var);
      o += fmt::format("    const int64_t n0 = {};\n    int64_t most = 0;\n", host_.expr(l.outer->extent));
      o += fmt::format("    for (int64_t {} = 0; {} < n0; ++{}) {{\n      int64_t m = 1;\n", v0, v0, v0);
      for (size_t k = 0; k < l.inner.size(); ++k) {
        std::string n = host_.expr(l.inner[k]->extent);
        int tile = !l.block_tiles ? kTile : static_cast<int>(k) == l.tile_x ? kBlockX : kBlockY;
        if (static_cast<int>(k) == l.tile_x || static_cast<int>(k) == l.tile_y)
          n = fmt::format("(({} + {}) / {})", n, tile - 1, tile);
        o += fmt::format("      m = dcc__mul(m, {}, &ovf);\n", n);
      }
      o += "      most = std::max(most, m);\n    }\n";
      o += fmt::format("    if (ovf) {{ st = dcc_set_error(DCC_ERR_OVERFLOW, \"{}: an iteration space overflows\"); goto done; }}\n", fn);
      o += "    if (n0 > 0 && most > 0) {\n";
      // Threads over the flattened space, or (block_tiles) a block per tile.
      o += fmt::format("      dim3 grid((unsigned)std::min<int64_t>({}, {}), (unsigned)std::min<int64_t>(n0, 65535));\n",
                       l.block_tiles ? "most" : l.warp_rows ? "(most + 7) / 8" : "(most + 255) / 256",
                       l.block_tiles ? 65535 : 4096);
      o += fmt::format("      {}<<<grid, {}, 0, strm>>>(a);\n    }}\n", l.kernel, l.block_tiles ? kGemmThreads : 256);
    }
    o += fmt::format("    prof.stop(\"{}\");\n", l.kernel);
    o += "    cudaError_t e = cudaGetLastError();\n";
    o += fmt::format("    if (e != cudaSuccess) {{ st = dcc_cuda_fail(e, \"launching {}\"); goto done; }}\n", l.kernel);
    // A kernel of `where` checks: no later kernel runs past a violation.
    if (l.checks) {
      o += "    if ((e = cudaMemcpy(&err_host, a.err, sizeof(int), cudaMemcpyDeviceToHost)) != cudaSuccess) { st = dcc_cuda_fail(e, \"cudaMemcpy\"); goto done; }\n";
      o += assert_errors("    ");
    }
    o += "  }\n";
  }
  // f_on_stream returns now; the kernels' errors show in later CUDA calls.
  o += "  if (!async) {\n    cudaError_t e = cudaDeviceSynchronize();\n";
  o += "    if (e != cudaSuccess) { st = dcc_cuda_fail(e, \"running the kernels\"); goto done; }\n";
  if (uses_err_) {
    o += "    if ((e = cudaMemcpy(&err_host, a.err, sizeof(int), cudaMemcpyDeviceToHost)) != cudaSuccess) { st = dcc_cuda_fail(e, \"cudaMemcpy\"); goto done; }\n";
    o += "    if (err_host == 1) { st = dcc_set_error(DCC_ERR_INVALID_ARGUMENT, \"integer division by zero\"); goto done; }\n";
    o += "    if (err_host == 2) { st = dcc_set_error(DCC_ERR_OVERFLOW, \"integer division overflow\"); goto done; }\n";
    o += assert_errors("    ");
  }
  o += "  }\n";
  // Scalar results come back to the host.
  dev_slot = 0;
  for (const auto& b : f_.buffers) {
    if (b->kind != BufferKind::Input && b->kind != BufferKind::Output) continue;
    // f_on_stream: the result pointer is device memory, written on the stream.
    if (b->kind == BufferKind::Output && b->dims.empty())
      o += fmt::format("  if ((async ? cudaMemcpyAsync(dev[{0}], a.p[{1}], sizeof({2}), cudaMemcpyDeviceToDevice, strm)\n"
                       "         : cudaMemcpy(dev[{0}], a.p[{1}], sizeof({2}), cudaMemcpyDeviceToHost)) != cudaSuccess) {{ st = dcc_cuda_fail(cudaGetLastError(), \"cudaMemcpy\"); goto done; }}\n",
                       dev_slot, slot_.at(b.get()), c_type(b->type));
    ++dev_slot;
  }
  o += "done:\n  for (void* p : owned) cudaFreeAsync(p, strm);\n  for (void* p : host_owned) std::free(p);\n"
       "  for (dcc_prelude_pin* p : pins) dcc_prelude_unpin(p);\n  return st;\n}\n\n";
  out_ += o;
}

/// f__cuda_host: host buffers in, host buffers out (tests).
void FuncEmitter::emit_host_entry() {
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
  auto host_aux = [&](const ir::Buffer& b) {
    int k = slot_.at(b.get());
    o += fmt::format("  {{\n    const int64_t n = {};\n    hp[{}] = std::calloc((size_t)n + 1, 8);\n    host_owned.push_back(hp[{}]);\n  }}\n",
                     host_.expr(b->total), k, k);
  };
  std::vector<ir::Buffer> later = aux_sized_later();
  for (const auto& b : f_.buffers)
    if (b->kind == BufferKind::Aux && std::find(later.begin(), later.end(), b) == later.end()) host_aux(b);
  if (f_.prelude && !later.empty()) {
    for (const auto& item : prelude_items()) {
      for (const auto& b : later)
        if (fills(item, b)) host_aux(b);
      o += "  {\n";
      host_.stmt(item, 2, o);
      o += "  }\n";
    }
  } else if (f_.prelude) {
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
  o += fmt::format("  st = {}{}(sizes, dev.data(), host.data(), nullptr, nullptr, nullptr, nullptr, 0);\n  if (st) goto done;\n", fn, kCudaLauncher);
  o += copy_back;
  o += "done:\n  for (void* p : owned) cudaFree(p);\n  for (void* p : host_owned) std::free(p);\n  return st;\n}\n\n";
  out_ += o;
}

/// Aux arrays whose size reads another aux array (`fuse`'s maps): they
/// are allocated just before the prelude statement that fills them.
std::vector<ir::Buffer> FuncEmitter::aux_sized_later() const {
  std::vector<ir::Buffer> out;
  for (const auto& b : f_.buffers) {
    if (b->kind != BufferKind::Aux) continue;
    bool reads = false;
    ir::each_expr(b->total, [&](const ir::ExprNode& e) {
      reads |= e.kind == ExprKind::Load && e.buffer->kind == BufferKind::Aux;
    });
    if (reads) out.push_back(b);
  }
  return out;
}

std::vector<ir::Stmt> FuncEmitter::prelude_items() const {
  return f_.prelude->kind == StmtKind::Seq ? f_.prelude->body : std::vector<ir::Stmt>{f_.prelude};
}

/// Whether `item` is the first prelude statement storing `b`.
bool FuncEmitter::fills(const ir::Stmt& item, const ir::Buffer& b) const {
  bool first = false;
  for (const auto& x : prelude_items()) {
    bool st = false;
    ir::each_stmt(x, [&](const ir::StmtNode& y) { st |= y.kind == StmtKind::Store && y.buffer == b; });
    if (st) return x == item;
  }
  return first;
}

}  // namespace dccc::backend::cudagen
