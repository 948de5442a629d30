// The fused attention kernel's __global__ wrappers: one per instantiation
// of the body print_attention prints (each head dim's, the long-key one,
// the split and the streaming ones), with its threads, the blocks an SM its
// registers are capped for, its dynamic shared memory, the body's template
// arguments and the grid's loop over tile-list entries (AttnGrid).
#pragma once

#include <string>

#include "backend/gpu/kernel_ir.h"

namespace dccc::gpu {

/// `__global__ void NAME__SUFFIX(NAME__launch)` for every instantiation of
/// k's body (suffixes dDP, dDPL, dx, dw), each calling NAME__body* with the
/// planner's tiles (attention_tile_n, attention_warps, ...).
std::string print_attention_wrappers(const AttentionKernel& k);

}  // namespace dccc::gpu
