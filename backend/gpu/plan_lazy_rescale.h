// Deferred rescaling of the fused attention kernel's running results
// (docs/cuda.md, "Deferred rescaling").
//
// In the derived key loop the element values read a running maximum's copy
// R (`p = exp(s - R)`), and each tile whose maximum moves rescales the sums
// and the output's registers by c = exp(R_old - R_new): on short sequences,
// where the maximum moves on most of a block's few tiles, that multiply of
// the output (64 registers a lane at head dim 128) is a large part of the
// tile's instructions. When everything R reaches is homogeneous of degree one
// in exp(-R) -- the element values read R only as exp(x - R) with x free of
// R, and the values built from them reach only the `+` folds and P V, by
// products with values free of them, float casts (not to 16 bits: below),
// divisions by such values and selects with 0, and exactly those folds and
// P V are rescaled by c, a
// factor exp(X(R_new) - X(R_old)) with X(R) = K - R -- any reference r <= A
// (the running maximum) gives the same sums relative to r: rescaling them
// from r to A is exact. So R may lag A: it follows A only when A grows past
// R + slack (slack = 8 ln 2: no element value above 256, the output's and
// sums' f32 registers at most 256 times larger), and after the key loop one
// pass of the row statements as for a tile without keys, with the eager
// copy R = A, brings every running result to what the program computes.
// Not where an element value built from R is rounded to 16 bits (`f32(bf16(p))`,
// FlashAttention-2's P, or a bf16 element tensor): rounding is homogeneous
// only in its relative error, and with R below the maximum the row's largest
// value is e^(A - R) instead of an exact 1, so its rounding shows -- measured
// on an H200 (session 27) max |error| against float64 on race, head dim 64,
// 3.3e-3 -> 5.8e-3 with FA2's precision.
#pragma once

#include "backend/gpu/kernel_ir.h"
#include "ir/ir.h"

namespace dccc::gpu {

/// The slack of a deferred reference: 8 ln 2 (element values up to 256).
constexpr double kLazySlack = 5.545177444479562;

/// Marks in `k` (planned by plan_attention, after its telescoping check) each
/// copy `R = A` of a max fold's accumulator that may lag (see above):
/// AttentionKernel::lazy gets it, and its step becomes `if (R < A - slack)
/// R = A`. `f` owns the buffers. Declining changes nothing.
void plan_lazy_rescale(AttentionKernel& k, const ir::Func& f);

}  // namespace dccc::gpu
