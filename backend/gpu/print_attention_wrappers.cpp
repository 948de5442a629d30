// The fused attention kernel's __global__ wrappers
// (backend/gpu/print_attention_wrappers.h).
#include "backend/gpu/print_attention_wrappers.h"

#include <fmt/format.h>

namespace dccc::gpu {

std::string print_attention_wrappers(const AttentionKernel& k) {
  std::string o;
  // A template argument that the wgmma build (sm_90a) takes differently
  // from the mma.sync build where `wg` and the two differ.
  auto per_build = [](bool wg, int wgmma, int sync) {
    return wg && wgmma != sync ? fmt::format("(DCC_WGMMA != 0 ? {} : {})", wgmma, sync) : std::to_string(sync);
  };
  // One __global__ wrapper per instantiation: threads, blocks an SM, the
  // dynamic shared memory and the body's template arguments.
  auto wrapper = [&](const std::string& suffix, const std::string& body, int dp, const std::string& bn, int mt, int warps,
                     int blocks, int wg_blocks, int smem, bool wg, const std::string& ns, bool qs) {
    // The wgmma build's register cap where it differs (attention_wgmma_min_blocks).
    const std::string bl = per_build(wg, wg_blocks, blocks);
    o += fmt::format("__global__ void __launch_bounds__({}, {}) {}__{}({}__launch launch) {{\n", warps * 32, bl, k.name,
                     suffix, k.name);
    o += fmt::format("#ifdef DCC_EMU\n  static __align__(1024) char smem[{}];\n  dcc_emu_shared(smem);\n#else\n"
                     "  extern __shared__ __align__(16) char smem[];\n#endif\n",
                     smem);
    const std::string call = fmt::format("{}__body{}<{}, {}, {}, {}, {}, {}{}>(launch, smem, ", k.name, body, dp, bn, mt, warps,
                                         wg ? "DCC_WGMMA != 0" : "false", ns,
                                         !attention_any_q_smem(k) ? "" : qs ? ", DCC_WGMMA != 0" : ", false");
    switch (k.grid) {
      case AttnGrid::Tiles: o += "  " + call + "blockIdx.x);\n}\n\n"; break;
      case AttnGrid::Static:
        o += "  for (int64_t t = blockIdx.x; t < launch.ntiles; t += gridDim.x) {\n"
             "    if (t != blockIdx.x) __syncthreads();  // the previous entry's last reads of shared memory\n"
             "    " + call + "t);\n  }\n}\n\n";
        break;
      case AttnGrid::Atomic:
        o += "  __shared__ int64_t next;\n  for (int64_t t = blockIdx.x; t < launch.ntiles; t = next) {\n"
             "    " + call + "t);\n"
             "    __syncthreads();  // shared memory and `next` free again\n"
             "    if (threadIdx.x == 0) next = (int64_t)gridDim.x + atomicAdd(launch.counter, 1u);\n"
             "    __syncthreads();\n  }\n}\n\n";
        break;
    }
  };
  auto by_head_dim = [&](const std::string& suffix, const std::string& body, int dp) {
    // The wgmma form's key tile where it differs (AttentionKernel::wg_key_tiles).
    const int bn = attention_tile_n(k, dp), wbn = attention_wg_tile_n(k, dp);
    const bool wg = body.empty() && attention_wgmma(k, dp);
    wrapper(suffix, body, dp, per_build(wg, wbn, bn),
            attention_m_tiles(k, dp), attention_warps(k, dp),
            attention_min_blocks(k, dp), attention_wgmma_min_blocks(k, dp),
            body.empty() ? attention_smem_bytes(k, dp) : attention_wide_smem_bytes(k),
            body.empty() && attention_wgmma(k, dp),
            per_build(wg, attention_wg_stages(k, dp), attention_stages(k, dp)),
            body.empty() && attention_q_smem(k, dp));
  };
  for (int dp : k.head_dims) {
    by_head_dim(fmt::format("d{}", dp), "", dp);
    // The long-key instantiation (AttentionKernel::long_key_tiles): its key
    // tile in the wgmma form, the other's in the mma.sync form.
    if (const int bn = attention_long_tile_n(k, dp))
      wrapper(fmt::format("d{}L", dp), "", dp, fmt::format("(DCC_WGMMA != 0 ? {} : {})", bn, attention_tile_n(k, dp)),
              attention_m_tiles(k, dp), attention_warps(k, dp), attention_min_blocks(k, dp),
              attention_wgmma_min_blocks(k, dp, true), attention_smem_bytes(k, dp, true),
              true,
              per_build(true, attention_wg_stages(k, dp, true), attention_stages(k, dp, true)),
              attention_q_smem(k, dp, true));
  }
  // The split instantiation (AttentionKernel::split): warps share 16 rows.
  if (k.split)
    wrapper("dx", "_split", k.split, std::to_string(k.split_key_tile), 1, k.split_warps, 1, 1, attention_split_smem_bytes(k), false,
            std::to_string(k.stages), false);
  // The streaming one (AttentionKernel::wide): head dim `wide`'s tiles;
  // blockIdx.y picks the output columns.
  if (k.wide) by_head_dim("dw", "_wide", k.wide);
  return o;
}

}  // namespace dccc::gpu
