// FuncEmitter: the fused attention kernel (gpu/plan_attention.h,
// gpu/print_attention.h) -- planning it for a statement, printing it with
// this backend's device code, and its launch: the tile list (batch entry,
// query tile), longest key sequence first, from the prelude cache (built
// from the host copies of the lengths on a miss), and the instantiation
// for the head dim.
#include <fmt/format.h>

#include <functional>

#include "backend/cuda/cuda_emitter.h"
#include "backend/gpu/plan_attention.h"
#include "backend/gpu/print_attention.h"

namespace dccc::backend::cudagen {

std::optional<gpu::AttentionKernel> FuncEmitter::plan_attention(const ir::Stmt& item, const std::string& name,
                                                                std::string* why) {
  if (schedule_maps(item, why)) return std::nullopt;
  gpu::AttentionOptions o;
  o.fp32 = options_.fp32;
  o.tuning = options_.attention;
  o.parallel = [&](const ir::Stmt& s) { return is_parallel_loop(s); };
  return gpu::plan_attention(f_, item, name, o, why);
}

void FuncEmitter::emit_attention_kernel(Launch& l, const gpu::AttentionKernel& k) {
  struct Text : PieceText<gpu::AttnDeviceText> {
    using PieceText::PieceText;
    void bind(const ir::ExprNode* x, const std::string& text) override { e.override_[x] = text; }
    void bind_divisor(const ir::ExprNode* x, const std::string& name) override { e.divisor_[x] = name; }
    void bind_divisor32(const ir::ExprNode* x, const std::string& name) override { e.divisor32_[x] = name; }
    void fdiv_flag(const std::string& flag) override { e.fdiv_flag_ = flag; }
    void bind_finite_sub(const ir::ExprNode* x) override { e.finite_sub_.insert(x); }
    void unbind_all() override {
      e.override_.clear();
      e.divisor_.clear();
      e.divisor32_.clear();
      e.finite_sub_.clear();
    }
    std::string value_type(const BufferNode* b) override { return cudagen::value_type(b->type); }
  } text(*this);
  private_.clear();
  private_.insert(k.score_acc);
  for (const auto* b : k.row_scalars) private_.insert(b);
  for (const auto* b : k.element_scalars) private_.insert(b);
  hoisted_.clear();
  outer_prefix_.clear();
  override_.clear();
  l.parallel = true;
  l.attn = std::make_shared<gpu::AttentionKernel>(k);
  out_ += gpu::print_attention(k, text);
  override_.clear();
  wrote_mma_ = true;
}

std::string FuncEmitter::attention_launch(const Launch& l) {
  const gpu::AttentionKernel& k = *l.attn;
  auto scalar = [&](const std::string& n) {
    for (const auto& s : k.scalars)
      if (s.name == n) return host_.expr(s.value);
    throw std::logic_error("attention kernel without " + n);
  };
  // Entries (key tiles the block runs, key count, batch entry's number,
  // then the entry: batch indices..., query tile, ...) in the planner's
  // order (gpu::AttnOrder): built on a miss of the prelude cache only
  // (tile_list). First the largest head dim, which picks the instantiation
  // and so the query and key tiles; then the entries.
  std::string b = "      std::vector<std::tuple<int64_t, int64_t, int64_t, std::vector<int32_t>>> ents;\n      int64_t gid = 0;\n";
  // The loops over the batch entries around `inner(pad)`, pad its indent.
  auto batch_loops = [&](const std::function<std::string(const std::string&)>& inner) {
    std::string pad = "      ", o;
    for (const auto& x : k.batch) {
      std::string v = host_.var(x.var);
      o += fmt::format("{0}for (int64_t {1} = 0, {1}_n = {2}; {1} < {1}_n; ++{1}) {{\n", pad, v, host_.expr(x.extent));
      pad += "  ";
    }
    o += inner(pad);
    for (size_t x = 0; x < k.batch.size(); ++x) {
      pad.resize(pad.size() - 2);
      o += pad + "}\n";
    }
    return o;
  };
  b += batch_loops([&](const std::string& pad) {
    return fmt::format("{}dmax = std::max(dmax, std::max<int64_t>({}, {}));\n", pad, scalar("QD"), scalar("VD"));
  });
  // A per-instantiation tile size by the largest head dim: `tile(dp)` for
  // each head dim, `split` for the split instantiation, the streaming one's.
  auto by_dim = [&](const char* name, int (*tile)(const gpu::AttentionKernel&, int), int split) {
    std::string o = fmt::format("      const int64_t {} = ", name);
    for (int dp : k.head_dims) o += fmt::format("dmax <= {} ? {} : ", dp, tile(k, dp));
    if (k.split) o += fmt::format("dmax <= {} ? {} : ", k.split * k.split_warps, split);
    return o + fmt::format("{};\n", tile(k, k.wide ? k.wide : k.head_dims.back()));
  };
  b += by_dim("rows_a_tile", gpu::attention_tile_m, 16);
  b += by_dim("keys_a_tile", gpu::attention_tile_n, k.split_key_tile);
  b += batch_loops([&](const std::string& pad) {
    std::string o = fmt::format("{}const int64_t tm = ({} + rows_a_tile - 1) / rows_a_tile, nk = {};\n", pad,
                                host_.expr(k.rows), host_.expr(k.keys));
    o += fmt::format("{}if (tm > INT32_MAX) ovf = 1;\n", pad);
    o += fmt::format("{}for (int64_t mt = 0; mt < tm && !ovf; ++mt) {{\n{}  std::vector<int32_t> e;\n", pad, pad);
    for (const auto& x : k.batch) o += fmt::format("{}  e.push_back((int32_t){});\n", pad, host_.var(x.var));
    o += fmt::format("{}  e.push_back((int32_t)mt);\n", pad);
    // The per-block values the kernel reads from its entry
    // (gpu::TileScalar::entry), int64 as two int32s, low half first.
    int at = static_cast<int>(k.batch.size()) + 1;
    auto push = [&](int entry, const ir::Expr& value) {
      if (entry < 0 || entry < at) return;  // computed by the block, or stored already (an equal value)
      if (entry != at) throw std::logic_error("attention tile-list entry out of order");
      o += fmt::format("{0}  {{\n{0}    const uint64_t u = (uint64_t)(int64_t)({1});\n"
                       "{0}    e.push_back((int32_t)(uint32_t)u);\n{0}    e.push_back((int32_t)(uint32_t)(u >> 32));\n{0}  }}\n",
                       pad, host_.expr(value));
      at += 2;
    };
    for (const auto& s : k.scalars) push(s.entry, s.value);
    for (const auto& inv : k.post_invariants) push(inv.entry, inv.value);
    if (at != gpu::attention_entry_width(k)) throw std::logic_error("attention tile-list entry width");
    // The key tiles the block runs: those where no skip conjunct holds at
    // no corner of the (query tile x key tile) box, as the kernel decides
    // (print_attention's `needed`). Only an order: an overflow in a
    // conjunct (its own `ovf`) changes no result.
    const std::string nkt = "(nk + keys_a_tile - 1) / keys_a_tile";
    if (k.order == gpu::AttnOrder::Keys) {
      o += fmt::format("{}  const int64_t live = 0;  // not an order's key\n", pad);
    } else if (k.skip_conjuncts.empty()) {
      o += fmt::format("{}  const int64_t live = {};\n", pad, nkt);
    } else {
      std::string tests;
      for (const auto& c : k.skip_conjuncts) {
        tests += fmt::format("{}      {{\n{}        bool any = false;\n", pad, pad);
        for (const char* ci : {"i_lo", "i_hi"})
          for (const char* cj : {"j_lo", "j_hi"})
            tests += fmt::format("{}        {{ const int64_t {} = {}, {} = {}; any = any || ({}); }}\n", pad, host_.var(k.row_var),
                                 ci, host_.var(k.key_var), cj, host_.expr(c));
        tests += fmt::format("{}        needed = needed && any;\n{}      }}\n", pad, pad);
      }
      o += fmt::format("{0}  int64_t live = 0;\n{0}  {{\n{3}"
                       "{0}    const int64_t i_lo = mt * rows_a_tile, i_hi = std::min<int64_t>(i_lo + rows_a_tile, {1}) - 1;\n"
                       "{0}    for (int64_t kt = 0, nkt = {2}; kt < nkt; ++kt) {{\n"
                       "{0}      const int64_t j_lo = kt * keys_a_tile, j_hi = std::min<int64_t>(j_lo + keys_a_tile, nk) - 1;\n"
                       "{0}      bool needed = true;\n",
                       pad, host_.expr(k.rows), nkt,
                       tests.find("&ovf") != std::string::npos ? pad + "    int ovf = 0;  // the order's own\n" : "");
      o += tests + fmt::format("{0}      live += needed;\n{0}    }}\n{0}  }}\n", pad);
    }
    return o + fmt::format("{0}  ents.emplace_back(live, nk, gid, std::move(e));\n{0}}}\n{0}++gid;\n", pad);
  });
  // The order's comparison (the sort is stable: ties keep (batch entry,
  // query tile) order).
  const char* before = nullptr;
  switch (k.order) {
    case gpu::AttnOrder::Auto:
      throw std::logic_error("attention kernel without an order");
    case gpu::AttnOrder::Keys:
      before = "std::get<1>(x) > std::get<1>(y)";
      break;
    case gpu::AttnOrder::Sequences:
      before = "std::get<1>(x) != std::get<1>(y) ? std::get<1>(x) > std::get<1>(y)\n"
               "               : std::get<2>(x) != std::get<2>(y) ? std::get<2>(x) < std::get<2>(y) : std::get<0>(x) > std::get<0>(y)";
      break;
    case gpu::AttnOrder::Tiles:
      before = "std::get<0>(x) != std::get<0>(y) ? std::get<0>(x) > std::get<0>(y) : std::get<1>(x) > std::get<1>(y)";
      break;
  }
  b += fmt::format("      std::stable_sort(ents.begin(), ents.end(), [](const auto& x, const auto& y) {{\n        return {};\n      }});\n",
                   before);
  b += "      for (const auto& en : ents) tl.insert(tl.end(), std::get<3>(en).begin(), std::get<3>(en).end());\n";
  // The entries' mean key count: the long-key instantiation's test
  // (AttentionKernel::long_key_tiles).
  b += "      for (const auto& en : ents) kmean += std::get<1>(en);\n      if (!ents.empty()) kmean /= (int64_t)ents.size();\n";
  std::string o = tile_list(k.name, b, gpu::attention_entry_width(k));
  o += "    const int64_t ntiles = tv->ntiles, dmax = tv->dmax;\n";
  o += "    if (ntiles > 0) {\n";
  o += fmt::format("      {}__launch lp;\n      lp.a = a;\n", k.name);
  o += "      lp.tiles = (const int32_t*)tv->dev;\n      lp.ntiles = ntiles;\n      lp.counter = nullptr;\n";
  // One branch per instantiation: under `cond`, its shared memory set and
  // its kernel launched on `grid` blocks of `threads` (a persistent grid:
  // `blocks` = min(entries, SMs x the blocks an SM holds), gpu::AttnGrid).
  std::string chain = "      ";
  auto branch = [&](const std::string& cond, const std::string& suffix, const std::string& grid, int threads, const std::string& smem) {
    const std::string kernel = fmt::format("{}__{}", k.name, suffix);
    o += fmt::format("{}if ({}) {{\n", chain, cond);
    o += fmt::format("        if (cudaFuncSetAttribute({}, cudaFuncAttributeMaxDynamicSharedMemorySize, {}) != cudaSuccess) {{ st = dcc_cuda_fail(cudaGetLastError(), \"cudaFuncSetAttribute\"); goto done; }}\n",
                     kernel, smem);
    if (k.grid == gpu::AttnGrid::Tiles) {
      o += fmt::format("        {}<<<{}, {}, {}, strm>>>(lp);\n", kernel, fmt::format(fmt::runtime(grid), "(unsigned)ntiles"), threads, smem);
    } else {
      o += persistent_grid_sizing(kernel, threads, smem);
      o += fmt::format("        const int64_t blocks = {};\n", kPersistentBlocks);
      if (k.grid == gpu::AttnGrid::Atomic)
        o += "        if (!dalloc(sizeof(unsigned), (void**)&lp.counter)) { st = DCC_ERR_CUDA; goto done; }\n";
      o += fmt::format("        {}<<<{}, {}, {}, strm>>>(lp);\n", kernel, fmt::format(fmt::runtime(grid), "(unsigned)blocks"), threads, smem);
    }
    chain = "      } else ";
  };
  for (int dp : k.head_dims) {
    // f32's wgmma build needs more shared memory than its mma.sync build
    // (which a GPU without wgmma runs): the launch asks for its own form's.
    auto smem = [&](bool long_keys) {
      return gpu::attention_f32_wgmma(k, dp, long_keys)
                 ? fmt::format("(dcc__wgmma_form() == 1 ? {} : {})", gpu::attention_smem_bytes(k, dp, long_keys),
                               gpu::attention_sync_smem_bytes(k, dp, long_keys))
                 : std::to_string(gpu::attention_smem_bytes(k, dp, long_keys));
    };
    if (gpu::attention_long_tile_n(k, dp) > 0)
      branch(fmt::format("dmax <= {} && tv->kmean >= {} && dcc__cc_major() == 9", dp, gpu::attention_long_keys(k, dp)), fmt::format("d{}L", dp),
             "{}", gpu::attention_warps(k, dp) * 32, smem(true));
    branch(fmt::format("dmax <= {}", dp), fmt::format("d{}", dp), "{}", gpu::attention_warps(k, dp) * 32, smem(false));
  }
  // Up to split x split_warps: warps sharing 16 rows (gpu::AttentionKernel::split).
  if (k.split)
    branch(fmt::format("dmax <= {}", k.split * k.split_warps), "dx", "{}", k.split_warps * 32,
           std::to_string(gpu::attention_split_smem_bytes(k)));
  // Larger head dims: the streaming instantiation, blockIdx.y over the
  // output columns in chunks of k.wide (gpu::AttentionKernel::wide).
  if (k.wide)
    branch(fmt::format("(dmax + {0} - 1) / {0} <= 65535", k.wide), "dw",
           fmt::format("dim3({{}}, (unsigned)((dmax + {0} - 1) / {0}))", k.wide),
           gpu::attention_warps(k, k.wide) * 32, std::to_string(gpu::attention_wide_smem_bytes(k)));
  o += fmt::format("      }} else {{\n        st = dcc_set_error(DCC_ERR_INVALID_ARGUMENT, \"{}: the fused attention kernel takes head dims up to {}\");\n        goto done;\n      }}\n    }}\n",
                   f_.name, k.wide ? int64_t{65535} * k.wide : int64_t{k.head_dims.back()});
  return o;
}

}  // namespace dccc::backend::cudagen
