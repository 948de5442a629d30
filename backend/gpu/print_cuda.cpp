// The CUDA printer of the kernel IR (backend/gpu/print_cuda.h).
#include "backend/gpu/print_cuda.h"

#include <fmt/format.h>

#include <stdexcept>
#include <utility>

namespace dccc::gpu {

int tile_entry_ints(const Kernel& k) { return static_cast<int>(k.tiles.batch.size()) + 2; }

namespace {

const char* storage_type(Elem e) { return e == Elem::F32 ? "float" : "uint16_t"; }

/// Index of element `in` of line `line` in one stage of shared buffer `s`
/// (its 16-byte chunk swizzled where `s` says so).
std::string smem_at(const SharedBuffer& s, const std::string& line, const std::string& in) {
  if (s.atom) {
    // wgmma's atoms (SharedBuffer::atom): atom-major, 16-byte chunks XOR the line's low 3 bits.
    const int per = 16 / elem_bytes(s.elem);
    return fmt::format("(({2}) / {3}) * {4} + ({0}) * {3} + ((((({2}) % {3}) / {1}) ^ (({0}) & 7)) * {1}) + (({2}) % {1})", line,
                       per, in, s.atom, s.lines() * s.atom);
  }
  if (!s.swizzle_mask) return fmt::format("({}) * {} + ({})", line, s.line(), in);
  const int per = 16 / elem_bytes(s.elem);
  return fmt::format("({0}) * {1} + (((({2}) / {3}) ^ ((({0}) >> {4}) & {5})) * {3}) + (({2}) % {3})", line, s.line(), in,
                     per, s.swizzle_shift, s.swizzle_mask);
}

/// Index of element (row, k) in one stage of shared buffer `s`.
std::string smem_index(const SharedBuffer& s, const std::string& row, const std::string& k) {
  return s.layout == SmemLayout::RowK ? smem_at(s, row, k) : smem_at(s, k, row);
}

const SharedBuffer& shared_of(const Kernel& k, const Operand& o) {
  for (const auto& s : k.shared)
    if (s.name == o.shared) return s;
  throw std::logic_error("kernel IR: operand " + o.name + " has no shared buffer " + o.shared);
}

const Operand& operand(const Kernel& k, const std::string& name) {
  if (k.a.name == name) return k.a;
  if (k.b.name == name) return k.b;
  throw std::logic_error("kernel IR: no operand " + name);
}

/// `X_vec`: whether a block's copies of operand `o` may move `vector`
/// elements (16 bytes) at a time -- its contiguous index (the row with
/// `rows_contiguous`, else k) has stride 1, and the other stride, the base
/// offset, the contiguous extent and the address line up -- checked at run
/// time per block, since ragged rows may be of any length.
std::string vector_flag(const Kernel& k, const Operand& o, bool rows_contiguous, int vector, const std::string& ptr) {
  const std::string& unit = rows_contiguous ? o.row_stride : o.k_stride;
  const std::string& other = rows_contiguous ? o.k_stride : o.row_stride;
  const std::string& extent = rows_contiguous ? o.rows : k.k_extent;
  return fmt::format("  const bool {0}_vec = {1} == 1 && {2} % {3} == 0 && {4} % {3} == 0 && {5} % {3} == 0 && "
                     "(uintptr_t)&{6}[{4}] % 16 == 0;\n",
                     o.name, unit, other, vector, o.base, extent, ptr);
}

/// The copy of one K-step `kt` of `c`'s operand into stage `stage` (kt %
/// stages, kept by the K-loop as a 32-bit counter: the 64-bit modulo in
/// each copy and MMA step had cost about 12 instructions each; 3xTF32's
/// kernel 1.06-1.08x faster without), as a lambda.
std::string copy_lambda(const Kernel& k, const Copy& c, DeviceText& d) {
  const Operand& o = operand(k, c.operand);
  const SharedBuffer& s = shared_of(k, o);
  const int elems = s.rows * s.k;
  const bool rowk = s.layout == SmemLayout::RowK;
  const int inner = rowk ? s.k : s.rows;
  const std::string origin = &o == &k.a ? "m0" : "n0";
  std::string ptr = d.buffer(o.buffer);
  // The copying threads: all, or a warp-specialized form's producers (`ct`).
  const int threads = k.copy_threads();
  const std::string thread = k.specialized ? "ct" : "threadIdx.x";
  // The header of a loop over this thread's copies of `v` elements each:
  // copy u's place in the tile (`in` along the contiguous dimension, `out`
  // across it) and its row r and k c.
  auto loop_head = [&](int v, const std::string& pad) {
    const int per = elems / v / threads;
    if (per < 1 || per * v * threads != elems || inner % v != 0)
      throw std::logic_error("kernel IR: a staged tile does not divide among the threads");
    const std::string unroll = v == 1 && c.element_unroll ? fmt::format(" {}", c.element_unroll) : "";
    std::string out = fmt::format("{}#pragma unroll{}\n{}for (int u = 0; u < {}; ++u) {{\n", pad, unroll, pad, per);
    out += fmt::format("{}  const int e = {} + {} * u, in = (e % {}) * {}, out = e / {};\n", pad, thread, threads,
                       inner / v, v, inner / v);
    out += fmt::format("{}  const int r = {}, c = {};\n", pad, rowk ? "out" : "in", rowk ? "in" : "out");
    return out;
  };
  const bool linear = c.linear_addresses && c.vector > 1 && !o.value;
  const int chunks = inner / std::max(c.vector, 1), step = chunks ? threads / chunks : 0;  // lines a copy moves on (linear)
  if (linear && (inner % c.vector || step * chunks != threads))
    throw std::logic_error("kernel IR: linear copy addresses need the copying threads to cover whole lines");
  const int per_vec = elems / c.vector / threads;
  auto loop = [&](int v, const std::string& pad, bool kfull = false) {
    if (linear && v > 1) {
      // Copy u: the thread's first, u * step lines on (one pointer, moved on).
      std::string out = fmt::format("{}const {}* p = {}_src + kstep;\n", pad, storage_type(s.elem), o.name);
      out += fmt::format("{}#pragma unroll\n{}for (int u = 0; u < {}; ++u) {{\n", pad, pad, per_vec);
      out += fmt::format("{}  const int out = {}_out0 + {} * u, in = {}_in0;\n", pad, o.name, step, o.name);
      std::string ok = rowk ? fmt::format("{} * u < {}_left", step, o.name) : o.name + "_row";
      if (!kfull) ok += rowk ? fmt::format(" && {}_in0 < kr", o.name) : " && out < kr";
      out += fmt::format("{}  const bool ok = {};\n", pad, ok);
      out += fmt::format("{}  dcc_cp_async16(&st[{}], ok ? p : &{}[0], ok);\n", pad, smem_at(s, "out", "in"), ptr);
      out += fmt::format("{}  p += {}_ustep;\n", pad, o.name);
      return out + pad + "}\n";
    }
    std::string out = loop_head(v, pad);
    out += fmt::format("{}  const int64_t gr = {} + r, gk = kt * {} + c;\n", pad, origin, k.block_k);
    out += fmt::format("{}  const bool ok = gr < {} && gk < {};\n", pad, o.rows, k.k_extent);
    if (!o.value)
      out += fmt::format("{}  const int64_t off = ok ? {} + gr * {} + gk * {} : 0;\n", pad, o.base, o.row_stride, o.k_stride);
    out += fmt::format("{}  const int si = {};\n", pad, smem_at(s, "out", "in"));
    if (o.value) {
      // A computed element: the vloop expression with its row and k bound.
      out += fmt::format("{}  {} v = 0;\n{}  if (ok) {{\n", pad, storage_type(s.elem), pad);
      out += fmt::format("{}    const int64_t {} = gr, {} = gk;\n", pad, d.var(o.row_var), d.var(o.k_var));
      out += fmt::format("{}    v = {};\n{}  }}\n{}  st[si] = v;\n", pad, d.expr(o.value), pad, pad);
    } else if (v > 1)
      out += fmt::format("{}  dcc_cp_async16(&st[si], &{}[off], ok);\n", pad, ptr);
    else if (c.mode == CopyMode::CpAsync4)
      out += fmt::format("{}  dcc_cp_async4(&st[si], &{}[off], ok);\n", pad, ptr);
    else
      out += fmt::format("{}  st[si] = ok ? {}[off] : ({})0;\n", pad, ptr, storage_type(s.elem));
    return out + pad + "}\n";
  };
  std::string out;
  if (o.value && (c.vector > 1 || s.elem != Elem::F32))
    throw std::logic_error("kernel IR: a computed operand is f32 and copied element by element");
  if (c.vector > 1) out += vector_flag(k, o, !rowk, c.vector, ptr);
  if (linear) {
    // The thread's first copy (line out0, place in0 in it) at kt = 0, the
    // lines' bound or its row's flag, and the step between its copies.
    out += fmt::format("  const int {0}_in0 = ({1} % {2}) * {3}, {0}_out0 = {1} / {2};\n", o.name, thread, chunks, c.vector);
    const std::string r0 = o.name + (rowk ? "_out0" : "_in0"), c0 = o.name + (rowk ? "_in0" : "_out0");
    std::string inside;
    if (rowk) {
      out += fmt::format("  const int64_t {}_left = {} - {} - {};  // copy u's row is inside while {} u is below\n", o.name, o.rows,
                         origin, r0, step);
      inside = o.name + "_left > 0";
    } else {
      out += fmt::format("  const bool {}_row = {} + {} < {};\n", o.name, origin, r0, o.rows);
      inside = o.name + "_row";
    }
    out += fmt::format("  const {}* {}_src = {}_vec && {} ? &{}[{} + ({} + {}) * {} + (int64_t){} * {}] : &{}[0];\n", storage_type(s.elem),
                       o.name, o.name, inside, ptr, o.base, origin, r0, o.row_stride, c0, o.k_stride, ptr);
    out += fmt::format("  const int64_t {}_ustep = {} * {};\n", o.name, step, rowk ? o.row_stride : o.k_stride);
  }
  out += fmt::format("  auto copy_{} = [&](int64_t kt, int stage) {{\n", o.name);
  out += "    if (kt >= nk) return;\n";
  out += fmt::format("    {}* st = {} + stage * {};\n", storage_type(s.elem), s.name, s.stage_elems());
  if (c.vector > 1) {
    out += fmt::format("    if ({}_vec) {{\n", o.name);
    if (linear) {
      // (kr in 64 bits: clamped to 32, the 3-stage wgmma form spilled.) A
      // step with a whole block_k of k left checks only the rows (1.01-1.08x
      // on an H200, bench/RESULTS.md session 23); the last, partial one also k.
      out += fmt::format("      const int64_t kr = {} - kt * {}, kstep = kt * {} * {};  // the k left from the step's start\n",
                         k.k_extent, k.block_k, k.block_k, o.k_stride);
      out += fmt::format("      if (kr >= {}) {{\n", k.block_k) + loop(c.vector, "        ", true) + "      } else {\n" +
             loop(c.vector, "        ") + "      }\n";
    } else {
      out += loop(c.vector, "      ");
    }
    out += "    } else {\n" + loop(1, "      ") + "    }\n";
  } else {
    out += loop(1, "    ");
  }
  out += "  };\n";
  return out;
}

/// The copy of a K-step of an f32 operand to a K-major tf32 tile
/// (CopyMode::SplitTf32) as two lambdas of the producers: `load_X(kt, v)`
/// reads the step into `v` (float4s: 4 elements along k of one row, or with
/// `transpose` 4 along the rows of one k, 4 k a block), `store_X(v,
/// stage)` rounds (and splits) them and stores 16-byte chunks of the
/// tile's lines (transposed blocks: line r gets the r-th element of each of
/// its block's 4 float4s). Elements outside [0, rows) x [0, K) are zero.
/// Thread ct's copy u is chunk (or block) e = ct + producers u; chunks
/// along k are the fastest index, so 8 adjacent threads read one row's 128
/// bytes (or 4 read 64 bytes of each of 4 k), and the 8 chunks of a line
/// that a quarter-warp stores fall in 8 bank groups (the 128-byte swizzle).
std::string split_copy_lambdas(const Kernel& k, const Copy& c, DeviceText& d, int* regs) {
  const Operand& o = operand(k, c.operand);
  const SharedBuffer& s = shared_of(k, o);
  if (s.elem != Elem::F32 || s.layout != SmemLayout::RowK || !s.atom || s.k != 32 || c.vector != 4 || o.value)
    throw std::logic_error("kernel IR: a tf32 split copy is of an f32 load to a K-major line of 32");
  const int threads = k.copy_threads(), qk = s.k / 4;  // quads along k
  const int units = s.rows * s.k / (c.transpose ? 16 : 4), per = units / threads;
  if (per < 1 || per * threads != units || s.rows % 4) throw std::logic_error("kernel IR: a staged tile does not divide among the threads");
  *regs = c.transpose ? 4 * per : per;
  const std::string origin = &o == &k.a ? "m0" : "n0", ptr = d.buffer(o.buffer), n = o.name;
  std::string out = vector_flag(k, o, c.transpose, c.vector, ptr);
  // One float4 of 4 elements starting at (gr, gk), along k or (transpose) along the rows.
  const std::string row_j = c.transpose ? "gr + j" : "gr", k_j = c.transpose ? "gk" : "gk + j";
  auto load4 = [&](const std::string& dst, const std::string& pad) {
    std::string l = fmt::format("{}if ({}_vec) {{\n", pad, n);
    l += fmt::format("{}  {} = gr < {} && gk < {} ? *reinterpret_cast<const float4*>(&{}[{} + gr * {} + gk * {}]) : "
                     "make_float4(0.f, 0.f, 0.f, 0.f);\n",
                     pad, dst, o.rows, k.k_extent, ptr, o.base, o.row_stride, o.k_stride);
    l += fmt::format("{0}}} else {{\n{0}  float t[4];\n#pragma unroll\n{0}  for (int j = 0; j < 4; ++j)\n", pad);
    l += fmt::format("{}    t[j] = {} < {} && {} < {} ? {}[{} + ({}) * {} + ({}) * {}] : 0.f;\n", pad, row_j, o.rows, k_j,
                     k.k_extent, ptr, o.base, row_j, o.row_stride, k_j, o.k_stride);
    l += fmt::format("{0}  {1} = make_float4(t[0], t[1], t[2], t[3]);\n{0}}}\n", pad, dst);
    return l;
  };
  out += fmt::format("  auto load_{} = [&](int64_t kt, float4* v) {{\n", n);
  out += fmt::format("#pragma unroll\n    for (int u = 0; u < {}; ++u) {{\n", per);
  out += fmt::format("      const int e = ct + {} * u, kq = e % {}, rq = e / {};\n", threads, qk, qk);
  if (c.transpose) {
    out += fmt::format("      const int64_t gr = {} + 4 * rq;\n#pragma unroll\n      for (int r = 0; r < 4; ++r) {{\n", origin);
    out += fmt::format("        const int64_t gk = kt * {} + 4 * kq + r;\n", k.block_k);
    out += load4("v[4 * u + r]", "        ") + "      }\n";
  } else {
    out += fmt::format("      const int64_t gr = {} + rq, gk = kt * {} + 4 * kq;\n", origin, k.block_k);
    out += load4("v[u]", "      ");
  }
  out += "    }\n  };\n";
  out += fmt::format("  auto store_{} = [&](const float4* v, int stage) {{\n", n);
  out += fmt::format("    float* st = {} + stage * {};\n", s.name, s.stage_elems());
  out += fmt::format("#pragma unroll\n    for (int u = 0; u < {}; ++u) {{\n", per);
  out += fmt::format("      const int e = ct + {} * u, kq = e % {}, rq = e / {};\n", threads, qk, qk);
  auto st4 = [&](const std::string& line, const std::string& val, const std::string& pad) {
    const std::string at = smem_at(s, line, "4 * kq");
    if (s.parts == 2) return fmt::format("{}dcc_st_split_tf32x4(&st[{}], &st[{} + ({})], {});\n", pad, at, s.part_elems(), at, val);
    return fmt::format("{}dcc_st_tf32x4(&st[{}], {});\n", pad, at, val);
  };
  if (c.transpose) {
    // Line 4 rq + j holds element j of each of the block's 4 k.
    const char* comp[4] = {"x", "y", "z", "w"};
    for (int j = 0; j < 4; ++j)
      out += st4(fmt::format("4 * rq + {}", j),
                 fmt::format("make_float4(v[4 * u].{0}, v[4 * u + 1].{0}, v[4 * u + 2].{0}, v[4 * u + 3].{0})", comp[j]), "      ");
  } else {
    out += st4("rq", "v[u]", "      ");
  }
  out += "    }\n  };\n";
  return out;
}

/// One K-step of m16n8k16 MMAs with fragments read by ldmatrix.x4 (the
/// kk loop over the step in k16 slices).
/// Matrix q = lane / 8 of an x4, row lane % 8 (docs/cuda.md, "ldmatrix"):
///   A [row][k]:         rows +8 (q & 1), k +8 (q >> 1)  -> a0..a3
///   A [k][row], .trans: k +8 (q >> 1), rows +8 (q & 1)  -> a0..a3
///   B [row][k]:         cols +8 (q >> 1), k +8 (q & 1)  -> b0, b1 of tile 2j, b0, b1 of 2j + 1
///   B [k][row], .trans: k +8 (q & 1), cols +8 (q >> 1)  -> the same
std::string ldmatrix_step(const Kernel& k, const SharedBuffer& sa, const SharedBuffer& sb, const char* target) {
  const int fm = k.warps.frags_m(), fn = k.warps.frags_n();
  if (fn % 2 || k.block_k % 16 || k.a.ldmatrix_trans != (sa.layout == SmemLayout::KRow) ||
      k.b.ldmatrix_trans != (sb.layout == SmemLayout::KRow))
    throw std::logic_error("kernel IR: ldmatrix fragments need an even number of n tiles, k16 steps and .trans for [k][row]");
  const bool ta = sa.layout == SmemLayout::KRow, tb = sb.layout == SmemLayout::KRow;
  const char* fn_name = k.mma.shape == MmaShape::M16N8K16_BF16 ? "dcc_mma_tiles_bf16" : "dcc_mma_tiles_f16";
  std::string o;
  o += fmt::format("    uint32_t af[{}][4], bf[{}][2];\n", fm, fn);
  o += "    auto frags = [&](int kk) {\n      const int q = lane >> 3, r8 = lane & 7;\n";
  o += fmt::format("#pragma unroll\n      for (int i = 0; i < {}; ++i) {{\n", fm);
  o += ta ? "        const int line = kk + r8 + 8 * (q >> 1), in = wm0 + 16 * i + 8 * (q & 1);\n"
          : "        const int line = wm0 + 16 * i + r8 + 8 * (q & 1), in = kk + 8 * (q >> 1);\n";
  o += fmt::format("        dcc_ldmatrix_x4{}(af[i], &as[{}]);\n      }}\n", ta ? "_trans" : "", smem_at(sa, "line", "in"));
  o += fmt::format("#pragma unroll\n      for (int j = 0; j < {}; ++j) {{\n", fn / 2);
  o += tb ? "        const int line = kk + r8 + 8 * (q & 1), in = wn0 + 16 * j + 8 * (q >> 1);\n"
          : "        const int line = wn0 + 16 * j + r8 + 8 * (q >> 1), in = kk + 8 * (q & 1);\n";
  o += "        uint32_t r[4];\n";
  o += fmt::format("        dcc_ldmatrix_x4{}(r, &bs[{}]);\n", tb ? "_trans" : "", smem_at(sb, "line", "in"));
  o += "        bf[2 * j][0] = r[0];\n        bf[2 * j][1] = r[1];\n";
  o += "        bf[2 * j + 1][0] = r[2];\n        bf[2 * j + 1][1] = r[3];\n      }\n    };\n";
  o += fmt::format("#pragma unroll\n    for (int kk = 0; kk < {}; kk += 16) {{\n", k.block_k);
  o += "      frags(kk);\n";
  o += fmt::format("      {}<{}, {}>({}, af, bf);\n", fn_name, fm, fn, target);
  o += "    }\n";
  return o;
}

/// A wgmma operand's descriptor fields in shared buffer `s`: the byte
/// offset of row `r0`, the leading and stride byte offsets, the bytes one
/// wgmma's k (`mk`: 16, or 8 for tf32) moves on, and whether it is MN-major
/// (PTX ISA, "Matrix Descriptor Format"; docs/cuda.md, "wgmma GEMM").
struct DescPlan {
  int row_bytes, lbo, sbo, kstep_bytes;
  bool mn_major;
};
DescPlan desc_plan(const SharedBuffer& s, int r0, int mk = 16) {
  const int line_bytes = s.atom * elem_bytes(s.elem);  // 128
  if (s.layout == SmemLayout::RowK) {
    if (s.k != s.atom) throw std::logic_error("kernel IR: a K-major wgmma operand's K-step is one 128-byte atom");
    return {r0 * line_bytes, 16, 8 * line_bytes, mk * elem_bytes(s.elem), false};
  }
  if (r0 % s.atom) throw std::logic_error("kernel IR: an MN-major wgmma operand's rows start at an atom");
  return {(r0 / s.atom) * s.lines() * line_bytes, s.lines() * line_bytes, 8 * line_bytes, mk * line_bytes, true};
}

/// One K-step of the warpgroup's wgmmas from stage kst (kt % stages), issued and
/// committed as one group (waited for by the caller).
std::string wgmma_step(const Kernel& k) {
  const SharedBuffer& sa = shared_of(k, k.a);
  const SharedBuffer& sb = shared_of(k, k.b);
  const int wg_rows = 4 * k.warps.warp_m;  // a warpgroup's rows: 64
  if (k.warps.warps_n != 1 || k.warps.warp_m != 16 || k.warps.warp_n != k.tiles.tile_n || k.block_k % 16)
    throw std::logic_error("kernel IR: a wgmma kernel's warps are 16-row slices of warpgroups over all columns");
  const int mk = mma_k(k.mma.shape);
  const DescPlan pa = desc_plan(sa, wg_rows, mk), pb = desc_plan(sb, 0, mk);
  const int nacc = k.warps.frags_n() * 4;
  const char* t = k.mma.shape == MmaShape::WGMMA_F16 ? "f16" : "bf16";
  const bool tf32 = k.mma.shape == MmaShape::WGMMA_TF32;
  if (tf32 && (pa.mn_major || pb.mn_major || sa.parts != sb.parts || k.mma.step_partials != (sa.parts == 2)))
    throw std::logic_error("kernel IR: tf32 wgmma operands are K-major, split in two parts exactly for 3xTF32's partial sums");
  std::string o = "    {\n";
  o += fmt::format("      const uint32_t sa = {}_u32 + (uint32_t)(kst * {}) + (uint32_t)(warp >> 2) * {};\n", sa.name,
                   sa.stage_elems() * elem_bytes(sa.elem), pa.row_bytes);
  o += fmt::format("      const uint32_t sb = {}_u32 + (uint32_t)(kst * {});\n", sb.name, sb.stage_elems() * elem_bytes(sb.elem));
  o += fmt::format("      const uint64_t ad = dcc_wgmma_desc(sa, {}, {}), bd = dcc_wgmma_desc(sb, {}, {});\n", pa.lbo, pa.sbo, pb.lbo,
                   pb.sbo);
  const char* target = k.mma.step_partials ? "part" : "acc";
  o += fmt::format("      dcc_wgmma_keep<{}>(&{}[0][0][0]);\n      dcc_wgmma_fence();\n", nacc, target);
  o += fmt::format("#pragma unroll\n      for (int kk = 0; kk < {}; ++kk) {{\n", k.block_k / mk);
  if (!tf32) {
    o += fmt::format("        dcc_wgmma_ss_{}<{}, {}, {}>(&acc[0][0][0], dcc_wgmma_desc_at(ad, kk * {}), dcc_wgmma_desc_at(bd, kk * {}));\n",
                     t, k.warps.warp_n, pa.mn_major ? 1 : 0, pb.mn_major ? 1 : 0, pa.kstep_bytes, pb.kstep_bytes);
  } else {
    // tf32: A and B `ax` / `bx` bytes on from their big parts. 3xTF32:
    // a_small b_big + a_big b_small + a_big b_big (the small parts a part
    // further on), into the step's partial sums, which the first wgmma of
    // the step starts from zero (scale-d 0); TF32: a_big b_big into acc.
    auto call = [&](int ax, int bx, const std::string& scale) {
      const std::string at = k.mma.step_partials ? fmt::format(" + {}", ax) : "",
                        bt = k.mma.step_partials ? fmt::format(" + {}", bx) : "";
      return fmt::format("        dcc_wgmma_ss_tf32<{}>(&{}[0][0][0], dcc_wgmma_desc_at(ad, kk * {}{}), dcc_wgmma_desc_at(bd, kk * {}{}), {});\n",
                         k.warps.warp_n, target, pa.kstep_bytes, at, pb.kstep_bytes, bt, scale);
    };
    if (k.mma.step_partials)
      o += call(sa.part_elems() * 4, 0, "kk > 0") + call(0, sb.part_elems() * 4, "1") + call(0, 0, "1");
    else
      o += call(0, 0, "1");
  }
  o += "      }\n      dcc_wgmma_commit();\n    }\n";
  return o;
}

/// One K-step of MMAs from stage `cur` (kk over the step by the MMA's k).
std::string mma_step(const Kernel& k) {
  if (is_wgmma(k.mma.shape)) return wgmma_step(k);
  const SharedBuffer& sa = shared_of(k, k.a);
  const SharedBuffer& sb = shared_of(k, k.b);
  const int fm = k.warps.frags_m(), fn = k.warps.frags_n(), mk = mma_k(k.mma.shape);
  std::string o;
  o += fmt::format("    const {}* as = {} + kst * {};\n", storage_type(sa.elem), sa.name, sa.stage_elems());
  o += fmt::format("    const {}* bs = {} + kst * {};\n", storage_type(sb.elem), sb.name, sb.stage_elems());
  // The MMAs' accumulator: acc itself, or this step's partial sums.
  const char* target = k.mma.step_partials ? "part" : "acc";
  if (k.mma.step_partials)
    o += fmt::format("    float part[{}][{}][4] = {{}};  // this K-step's sums, added to acc below\n", fm, fn);
  auto A = [&](const std::string& r, const std::string& c) { return "as[" + smem_index(sa, r, c) + "]"; };
  auto B = [&](const std::string& n, const std::string& c) { return "bs[" + smem_index(sb, n, c) + "]"; };
  const bool ldm = k.mma.shape != MmaShape::M16N8K8_TF32 && k.a.ldmatrix && k.b.ldmatrix;
  if (ldm)
    o += ldmatrix_step(k, sa, sb, target);
  else
    o += fmt::format("#pragma unroll\n    for (int kk = 0; kk < {}; kk += {}) {{\n", k.block_k, mk);
  if (ldm) {
  } else if (k.mma.shape != MmaShape::M16N8K8_TF32) {
    // m16n8k16, 16-bit: A reg j holds (row gid + 8 (j & 1), k 2 tig + 8 (j >> 1) + {0, 1});
    // B reg j holds (k 2 tig + 8 j + {0, 1}, col gid); lower half = lower k.
    const char* fn_name = k.mma.shape == MmaShape::M16N8K16_BF16 ? "dcc_mma_tiles_bf16" : "dcc_mma_tiles_f16";
    o += fmt::format("      uint32_t af[{}][4], bf[{}][2];\n", fm, fn);
    o += fmt::format("#pragma unroll\n      for (int i = 0; i < {}; ++i)\n#pragma unroll\n        for (int j = 0; j < 4; ++j) {{\n", fm);
    o += "          const int r = wm0 + 16 * i + gid + 8 * (j & 1), c = kk + 2 * tig + 8 * (j >> 1);\n";
    // Along k in a [row][k] tile the pair is adjacent and 4-byte aligned (c and the line are even).
    if (sa.layout == SmemLayout::RowK)
      o += fmt::format("          af[i][j] = dcc_ld32(&{});\n        }}\n", A("r", "c"));
    else
      o += fmt::format("          af[i][j] = dcc_pack16({}, {});\n        }}\n", A("r", "c"), A("r", "c + 1"));
    o += fmt::format("#pragma unroll\n      for (int i = 0; i < {}; ++i)\n#pragma unroll\n        for (int j = 0; j < 2; ++j) {{\n", fn);
    o += "          const int n = wn0 + 8 * i + gid, c = kk + 2 * tig + 8 * j;\n";
    if (sb.layout == SmemLayout::RowK)
      o += fmt::format("          bf[i][j] = dcc_ld32(&{});\n        }}\n", B("n", "c"));
    else
      o += fmt::format("          bf[i][j] = dcc_pack16({}, {});\n        }}\n", B("n", "c"), B("n", "c + 1"));
    o += fmt::format("      {}<{}, {}>({}, af, bf);\n", fn_name, fm, fn, target);
  } else {
    // m16n8k8, tf32: A reg j holds (row gid + 8 (j & 1), k tig + 4 (j >> 1));
    // B reg j holds (k tig + 4 j, col gid).
    const bool split = k.mma.fp32 == Fp32Math::Split3xTf32;
    o += fmt::format("      uint32_t ab[{0}][4], bb[{1}][2];\n", fm, fn);
    if (split) o += fmt::format("      uint32_t as2[{0}][4], bs2[{1}][2];\n", fm, fn);
    auto conv = [&](const std::string& big, const std::string& small, const std::string& v) {
      std::string s = fmt::format("          {{\n            const float x = {};\n            {} = dcc_tf32(x);\n", v, big);
      if (split) s += fmt::format("            {} = dcc_tf32(x - __uint_as_float({}));\n", small, big);
      return s + "          }\n";
    };
    o += fmt::format("#pragma unroll\n      for (int i = 0; i < {}; ++i)\n#pragma unroll\n        for (int j = 0; j < 4; ++j) {{\n", fm);
    o += "          const int r = wm0 + 16 * i + gid + 8 * (j & 1), c = kk + tig + 4 * (j >> 1);\n";
    o += conv("ab[i][j]", "as2[i][j]", A("r", "c")) + "        }\n";
    o += fmt::format("#pragma unroll\n      for (int i = 0; i < {}; ++i)\n#pragma unroll\n        for (int j = 0; j < 2; ++j) {{\n", fn);
    o += "          const int n = wn0 + 8 * i + gid, c = kk + tig + 4 * j;\n";
    o += conv("bb[i][j]", "bs2[i][j]", B("n", "c")) + "        }\n";
    if (split) {
      // The small cross terms first, then the big product (3xTF32).
      o += fmt::format("      dcc_mma_tiles_tf32<{}, {}>({}, as2, bb);\n", fm, fn, target);
      o += fmt::format("      dcc_mma_tiles_tf32<{}, {}>({}, ab, bs2);\n", fm, fn, target);
    }
    o += fmt::format("      dcc_mma_tiles_tf32<{}, {}>({}, ab, bb);\n", fm, fn, target);
  }
  if (!ldm) o += "    }\n";
  if (k.mma.step_partials)
    o += fmt::format("#pragma unroll\n    for (int i = 0; i < {}; ++i)\n#pragma unroll\n      for (int j = 0; j < {}; ++j)\n"
                     "#pragma unroll\n        for (int e = 0; e < 4; ++e) acc[i][j][e] += part[i][j][e];\n",
                     fm, fn);
  return o;
}

/// The stages of the kernel's pipeline (every shared buffer has as many).
int stages_of(const Kernel& k) {
  for (const auto& s : k.shared)
    if (s.stages != k.shared[0].stages) throw std::logic_error("kernel IR: shared buffers with different stage counts");
  return k.shared.empty() ? 1 : k.shared[0].stages;
}

std::string op_code(const Kernel& k, const Op& op, bool prologue) {
  switch (op.kind) {
    case OpKind::CopyNext: {
      // Step kt + count's stage: kst + count, wrapped (count < stages).
      const int stages = stages_of(k);
      if (op.count >= stages) throw std::logic_error("kernel IR: a copy runs a whole pipeline ahead");
      if (prologue) return fmt::format("    copy_{}({}, {});\n", op.operand, op.count, op.count);
      if (op.count == 0) return fmt::format("    copy_{}(kt, kst);\n", op.operand);
      return fmt::format("    copy_{0}(kt + {1}, kst + {1} < {2} ? kst + {1} : kst + {1} - {2});\n", op.operand, op.count, stages);
    }
    case OpKind::Commit: return "    dcc_cp_async_commit();\n";
    case OpKind::WaitPrior: return fmt::format("    dcc_cp_async_wait<{}>();\n", op.count);
    case OpKind::Barrier: return "    __syncthreads();\n";
    case OpKind::MmaStep: return mma_step(k);
  }
  return "";
}

/// The epilogue with paired stores (Epilogue::pair): a row at a time, its
/// index at column 0 (`ob`) once; where it is even and the tensor aligned,
/// each m16n8 tile's two adjacent columns of the thread (elements 2h and
/// 2h + 1) are computed in f32 and stored as one word, rounded by one
/// conversion; else, or at the tile's right edge, each column checked.
std::string paired_epilogue(const Kernel& k, DeviceText& d) {
  const int fm = k.warps.frags_m(), fn = k.warps.frags_n();
  const Epilogue& ep = k.epilogue;
  const ir::Stmt& st = ep.stmts[0];
  const std::string ptr = d.buffer(st->buffer.get()), row = d.var(ep.row_var), col = d.var(ep.col_var);
  const bool wide = ep.pair->bits == 64;
  std::string o;
  o += fmt::format("#pragma unroll\n  for (int i = 0; i < {}; ++i)\n#pragma unroll\n    for (int h = 0; h < 2; ++h) {{\n", fm);
  o += fmt::format("      const int64_t {} = m0 + wm0 + 16 * i + gid + 8 * h;\n", row);
  o += fmt::format("      if ({} >= {}) continue;\n", row, k.a.rows);
  o += fmt::format("      const int64_t ob = {};  // the row's index at column 0\n", d.expr(ep.pair->row_index));
  o += fmt::format("      const bool paired = (ob & 1) == 0 && (uintptr_t){} % {} == 0;\n", ptr, ep.pair->bits / 8);
  o += fmt::format("#pragma unroll\n      for (int j = 0; j < {}; ++j) {{\n", fn);
  o += "        const int64_t c0 = n0 + wn0 + 8 * j + 2 * tig;\n";
  o += fmt::format("        if (paired && c0 + 1 < {}) {{\n          float pr[2];\n", k.b.rows);
  o += "#pragma unroll\n          for (int c = 0; c < 2; ++c) {\n";
  o += fmt::format("            const int64_t {} = c0 + c;\n            (void){};\n", col, col);
  o += fmt::format("            {} = acc[i][j][2 * h + c];\n", d.scalar(ep.acc));
  o += fmt::format("            pr[c] = {};\n          }}\n", wide ? d.expr(st->value) : d.expr_unrounded(st->value));
  o += "          " + pair_store(ptr, "ob + c0", ep.pair->bits, st->buffer->type) + "\n";
  o += "        } else {\n#pragma unroll\n          for (int c = 0; c < 2; ++c) {\n";
  o += fmt::format("            const int64_t {} = c0 + c;\n", col);
  o += fmt::format("            if ({} >= {}) continue;\n", col, k.b.rows);
  o += fmt::format("            {} = acc[i][j][2 * h + c];\n", d.scalar(ep.acc));
  o += d.stmts(ep.stmts, 6);
  o += "          }\n        }\n      }\n    }\n";
  return o;
}

/// Shared memory: one dynamic allocation (Kernel::dynamic_smem), the
/// buffers from its first 1024-byte boundary (`sbase`), or static arrays.
/// `used`: the bytes the buffers take from `sbase`.
std::string smem_setup(const Kernel& k, int* used) {
  std::string o;
  int at = 0;
  if (k.dynamic_smem) {
    o += fmt::format("#ifdef DCC_EMU\n  static __align__(1024) char smem[{}];\n  dcc_emu_shared(smem);\n#else\n"
                     "  extern __shared__ __align__(16) char smem[];\n#endif\n",
                     k.dynamic_smem);
    o += "  char* sbase = smem + ((1024 - (dcc_smem_u32(smem) & 1023)) & 1023);\n";
    for (const auto& s : k.shared) {
      o += fmt::format("  {0}* {1} = reinterpret_cast<{0}*>(sbase + {2});\n", storage_type(s.elem), s.name, at);
      o += fmt::format("  const uint32_t {0}_u32 = dcc_smem_u32({0});\n  (void){0}_u32;\n", s.name);
      at += s.stages * s.stage_elems() * elem_bytes(s.elem);
    }
    if (at + 1024 > k.dynamic_smem) throw std::logic_error("kernel IR: the shared buffers exceed the dynamic allocation");
  } else {
    for (const auto& s : k.shared)
      o += fmt::format("  __shared__ __align__(16) {} {}[{}];\n", storage_type(s.elem), s.name, s.stages * s.stage_elems());
  }
  if (used) *used = at;
  return o;
}

/// The warp's place in the block tile and its accumulators, declared.
std::string warp_tile(const Kernel& k) {
  std::string o = "  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gid = lane >> 2, tig = lane & 3;\n";
  o += "  (void)lane, (void)gid, (void)tig;\n";
  o += fmt::format("  const int wm0 = (warp / {}) * {}, wn0 = (warp % {}) * {};\n  (void)wn0;\n", k.warps.warps_n, k.warps.warp_m,
                   k.warps.warps_n, k.warps.warp_n);
  o += fmt::format("  float acc[{}][{}][4];\n", k.warps.frags_m(), k.warps.frags_n());
  return o;
}

std::string zero_acc(const Kernel& k, const std::string& pad) {
  return fmt::format("{0}#pragma unroll\n{0}for (int i = 0; i < {1}; ++i)\n{0}#pragma unroll\n{0}  for (int j = 0; j < {2}; ++j)\n"
                     "{0}    for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;\n",
                     pad, k.warps.frags_m(), k.warps.frags_n());
}

/// The epilogue: element e of tile (i, j) is at row gid + 8 (e >> 1),
/// column 2 tig + (e & 1).
std::string epilogue_code(const Kernel& k, DeviceText& d) {
  const int fm = k.warps.frags_m(), fn = k.warps.frags_n();
  std::string o = "  " + d.declare(k.epilogue.acc) + "\n";
  if (k.epilogue.pair) return o + paired_epilogue(k, d);
  for (const auto* b : k.epilogue.locals) o += "  " + d.declare(b) + "\n";
  o += fmt::format("#pragma unroll\n  for (int i = 0; i < {}; ++i)\n#pragma unroll\n    for (int j = 0; j < {}; ++j)\n", fm, fn);
  o += "      for (int e = 0; e < 4; ++e) {\n";
  o += fmt::format("        const int64_t {} = m0 + wm0 + 16 * i + gid + 8 * (e >> 1);\n", d.var(k.epilogue.row_var));
  o += fmt::format("        const int64_t {} = n0 + wn0 + 8 * j + 2 * tig + (e & 1);\n", d.var(k.epilogue.col_var));
  o += fmt::format("        if ({} >= {} || {} >= {}) continue;\n", d.var(k.epilogue.row_var), k.a.rows, d.var(k.epilogue.col_var),
                   k.b.rows);
  o += fmt::format("        {} = acc[i][j][e];\n", d.scalar(k.epilogue.acc));
  o += d.stmts(k.epilogue.stmts, 4);
  o += "      }\n";
  return o;
}

/// The values of tile-list entry `index`: its batch indices, the tile's
/// first row and column (m0, n0) and the kernel's scalars.
std::string tile_header(const Kernel& k, DeviceText& d, const std::string& index) {
  const int w = tile_entry_ints(k);
  std::string o = fmt::format("  const int32_t* entry = launch.tiles + (int64_t)({}) * {};\n", index, w);
  for (size_t i = 0; i < k.tiles.batch.size(); ++i)
    o += fmt::format("  const int64_t {} = entry[{}];\n", d.var(k.tiles.batch[i].var), i);
  o += fmt::format("  const int64_t m0 = (int64_t)entry[{}] * {}, n0 = (int64_t)entry[{}] * {};\n", w - 2, k.tiles.tile_m, w - 1,
                   k.tiles.tile_n);
  for (const auto& s : k.scalars) o += fmt::format("  const int64_t {} = {};\n", s.name, d.expr(s.value));
  return o;
}

/// `text` with every line indented by `by` more spaces (preprocessor
/// lines as they are).
std::string indented(const std::string& text, int by) {
  std::string o, pad(static_cast<size_t>(by), ' ');
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    o += (line.empty() || line[0] == '#' ? line : pad + line) + "\n";
    at = end + 1;
  }
  return o;
}

/// The body of one form of the kernel after the tile-list entry's values:
/// shared memory, fragments, the K-loop and the epilogue.
std::string form_body(const Kernel& k, DeviceText& d) {
  std::string o = smem_setup(k, nullptr) + warp_tile(k) + zero_acc(k, "  ");
  o += fmt::format("  const int64_t nk = ({} + {}) / {};\n", k.k_extent, k.block_k - 1, k.block_k);
  for (const auto& c : k.copies) o += copy_lambda(k, c, d);
  o += "  {\n";
  for (const auto& op : k.prologue) o += op_code(k, op, true);
  o += "  }\n  int kst = 0;  // kt's stage\n  for (int64_t kt = 0; kt < nk; ++kt) {\n";
  for (const auto& op : k.body) o += op_code(k, op, false);
  o += fmt::format("    kst = kst + 1 == {} ? 0 : kst + 1;\n  }}\n", stages_of(k));
  return o + epilogue_code(k, d);
}

/// The staged epilogue (Epilogue::staged_row_bytes) of a consumer
/// warpgroup: its rows' values computed and packed as the paired store
/// packs them, written to its part of the staging memory, then each row
/// stored 16 bytes at a time where the row's index at column 0 is a
/// multiple of 8 and the tensor 16-byte aligned, else element by element
/// (the same bits either way).
std::string staged_epilogue(const Kernel& k, DeviceText& d) {
  const Epilogue& ep = k.epilogue;
  if (!ep.pair || ep.pair->bits != 32 || k.warps.warp_m != 16 || k.warps.frags_m() != 1 || k.warps.warp_n != k.tiles.tile_n)
    throw std::logic_error("kernel IR: a staged epilogue is a 16-bit paired store of warps of 16 rows over all columns");
  const ir::Stmt& st = ep.stmts[0];
  const std::string ptr = d.buffer(st->buffer.get()), row = d.var(ep.row_var), col = d.var(ep.col_var);
  const int rb = ep.staged_row_bytes, fn = k.warps.frags_n(), chunks = k.tiles.tile_n / 8;
  std::string o = "  " + d.declare(ep.acc) + "\n";
  o += fmt::format("  {{\n    const int wgi = warp >> 2;\n    char* stg = sbase + {} + wgi * {};  // this warpgroup's 64 rows\n",
                   ep.staged_at, 64 * rb);
  o += "    dcc_bar_sync(1 + wgi, 128);  // the previous entry's rows stored\n";
  o += "#pragma unroll\n    for (int h = 0; h < 2; ++h) {\n";
  o += fmt::format("      const int64_t {} = m0 + wm0 + gid + 8 * h;\n      (void){};\n", row, row);
  o += fmt::format("#pragma unroll\n      for (int j = 0; j < {}; ++j) {{\n        float pr[2];\n", fn);
  o += "#pragma unroll\n        for (int c = 0; c < 2; ++c) {\n";
  o += fmt::format("          const int64_t {} = n0 + wn0 + 8 * j + 2 * tig + c;\n          (void){};\n", col, col);
  o += fmt::format("          {} = acc[0][j][2 * h + c];\n          pr[c] = {};\n        }}\n", d.scalar(ep.acc),
                   d.expr_unrounded(st->value));
  o += fmt::format("        *reinterpret_cast<uint32_t*>(stg + ((warp & 3) * 16 + gid + 8 * h) * {} + (wn0 + 8 * j + 2 * tig) * 2) = {}(pr[0], pr[1]);\n",
                   rb, pack16_function(st->buffer->type == Scalar::BF16));
  o += "      }\n    }\n    dcc_bar_sync(1 + wgi, 128);\n";
  o += fmt::format("    const bool al = (uintptr_t){} % 16 == 0;\n", ptr);
  o += fmt::format("#pragma unroll 4\n    for (int q = 0; q < {}; ++q) {{\n", 64 * chunks / 128);
  o += fmt::format("      const int ch = (threadIdx.x & 127) + 128 * q, r = ch / {}, c8 = (ch % {}) * 8;\n", chunks, chunks);
  o += fmt::format("      const int64_t {} = m0 + wgi * 64 + r;\n      if ({} >= {}) continue;\n", row, row, k.a.rows);
  o += fmt::format("      const int64_t ob = {};  // the row's index at column 0\n", d.expr(ep.pair->row_index));
  o += "      const int64_t gc = n0 + c8;\n";
  o += fmt::format("      const char* sp = stg + r * {} + c8 * 2;\n", rb);
  o += fmt::format("      if (al && ob % 8 == 0 && gc + 8 <= {}) {{\n", k.b.rows);
  o += fmt::format("        *reinterpret_cast<uint4*>(&{}[ob + gc]) = *reinterpret_cast<const uint4*>(sp);\n", ptr);
  o += "      } else {\n#pragma unroll\n        for (int e = 0; e < 8; ++e)\n";
  o += fmt::format("          if (gc + e < {}) {}[ob + gc + e] = reinterpret_cast<const uint16_t*>(sp)[e];\n", k.b.rows, ptr);
  o += "      }\n    }\n  }\n";
  return o;
}

/// A warp-specialized form (Kernel::specialized): the mbarriers, then the
/// producer warpgroup's loop over the block's entries and their K-steps
/// (wait until the stage is empty, copy, arrive on its full barrier) and
/// the consumers' (wait until full, MMAs, release the stage; the epilogue).
/// Stage kst of round r (kph = r % 2): full's phase r completes when the
/// copies landed, empty's phase r when the consumers read it.
std::string specialized_body(const Kernel& k, DeviceText& d) {
  const Specialized& sp = *k.specialized;
  const int stages = stages_of(k);
  if (!is_wgmma(k.mma.shape) || sp.consumers % 128 || sp.producers % 32 || k.threads != sp.consumers + sp.producers ||
      k.warps.warps_m * k.warps.warps_n * 32 != sp.consumers)
    throw std::logic_error("kernel IR: a warp-specialized form is wgmma consumer warpgroups and producer warps");
  int used = 0;
  std::string o = smem_setup(k, &used);
  if (used + 1024 + 16 * stages > k.dynamic_smem) throw std::logic_error("kernel IR: no room for the stages' mbarriers");
  o += fmt::format("  const uint32_t dcc_full = dcc_smem_u32(sbase + {}), dcc_empty = dcc_full + {};  // stage s's at + 8 s\n", used,
                   8 * stages);
  o += fmt::format("  if (threadIdx.x == 0)\n    for (int s = 0; s < {}; ++s) {{\n      dcc_mbar_init(dcc_full + 8 * s, {});\n"
                   "      dcc_mbar_init(dcc_empty + 8 * s, {});\n    }}\n  __syncthreads();\n",
                   stages, sp.producers, sp.consumers / 32);
  const std::string loop = "  for (int64_t dcc_t = blockIdx.x; dcc_t < launch.ntiles; dcc_t += gridDim.x) {\n";
  const std::string nk = fmt::format("  const int64_t nk = ({} + {}) / {};\n", k.k_extent, k.block_k - 1, k.block_k);
  const std::string advance = fmt::format("    if (++kst == {}) {{\n      kst = 0;\n      kph ^= 1;\n    }}\n", stages);
  // The producers.
  if ((sp.producer_regs || sp.consumer_regs) &&
      (sp.producer_regs % 8 || sp.consumer_regs % 8 || sp.producer_regs < 24 || sp.consumer_regs > 256 ||
       sp.producer_regs * sp.producers + sp.consumer_regs * sp.consumers > 65536))
    throw std::logic_error("kernel IR: setmaxnreg counts are multiples of 8 in 24 .. 256 within 64K registers a block");
  auto setmaxnreg = [](int regs, const char* dir) {
    return fmt::format("asm volatile(\"setmaxnreg.{}.sync.aligned.u32 {};\\n\" ::: \"memory\");\n", dir, regs);
  };
  std::string p = fmt::format("const int ct = threadIdx.x - {};  // the copying thread\n", sp.consumers);
  if (sp.producer_regs) p += "#ifndef DCC_EMU\n" + setmaxnreg(sp.producer_regs, "dec") + "#endif\n";
  p += "int kst = 0;\nuint32_t kph = 0;\nint64_t fills = 0;\n" + loop.substr(2);
  std::string t = tile_header(k, d, "dcc_t") + nk;
  const bool split = !k.copies.empty() && k.copies[0].mode == CopyMode::SplitTf32;
  bool all_vec = true;
  std::vector<int> regs;
  for (const auto& c : k.copies) {
    if ((c.mode == CopyMode::SplitTf32) != split) throw std::logic_error("kernel IR: tf32 split copies are all or none");
    regs.push_back(0);
    t += split ? split_copy_lambdas(k, c, d, &regs.back()) : copy_lambda(k, c, d);
    all_vec = all_vec && c.vector > 1;
  }
  if (split) {
    // Loads into registers first (they touch no shared memory), then wait
    // for the stage, round and store, and make the stores visible to
    // wgmma's reads (async proxy) before the arrival.
    t += "  for (int64_t kt = 0; kt < nk; ++kt) {\n";
    for (size_t i = 0; i < k.copies.size(); ++i)
      t += fmt::format("    float4 {0}_v[{1}];\n    load_{0}(kt, {0}_v);\n", k.copies[i].operand, regs[i]);
    t += fmt::format("    if (fills++ >= {}) dcc_mbar_wait(dcc_empty + 8 * kst, kph ^ 1);  // read in the round before\n", stages);
    for (const auto& c : k.copies) t += fmt::format("    store_{0}({0}_v, kst);\n", c.operand);
    t += "    dcc_fence_proxy_async();\n    dcc_mbar_arrive(dcc_full + 8 * kst);\n" + advance + "  }\n";
  } else {
    t += "  for (int64_t kt = 0; kt < nk; ++kt) {\n";
    t += fmt::format("    if (fills++ >= {}) dcc_mbar_wait(dcc_empty + 8 * kst, kph ^ 1);  // read in the round before\n", stages);
    std::string vec;
    for (const auto& c : k.copies) {
      t += fmt::format("    copy_{}(kt, kst);\n", c.operand);
      vec += (vec.empty() ? "" : " && ") + c.operand + "_vec";
    }
    // cp.async copies arrive as they land; copies through registers are
    // stores of this thread, ordered before a plain arrival.
    const std::string plain = "      dcc_cp_async_wait_all();\n      dcc_mbar_arrive(dcc_full + 8 * kst);\n";
    if (all_vec)
      t += fmt::format("    if ({})\n      dcc_mbar_arrive_cp_async(dcc_full + 8 * kst);\n    else {{\n{}    }}\n", vec, plain);
    else
      t += "    {\n" + plain + "    }\n";
    t += advance + "  }\n";
  }
  p += t + "}\ndcc_cp_async_wait_all();\nreturn;\n";
  o += fmt::format("  if (threadIdx.x >= {}) {{\n", sp.consumers) + indented(p, 4) + "  }\n";
  // The consumers.
  if (sp.consumer_regs) o += "#ifndef DCC_EMU\n  " + setmaxnreg(sp.consumer_regs, "inc") + "#endif\n";
  o += warp_tile(k) + "  int kst = 0;\n  uint32_t kph = 0;\n";
  const int nacc = k.warps.frags_n() * 4 * k.warps.frags_m();
  if (k.mma.step_partials)
    o += fmt::format("  float part[{}][{}][4] = {{}};  // a K-step's sums (Mma::step_partials)\n", k.warps.frags_m(), k.warps.frags_n());
  o += loop;
  std::string c = tile_header(k, d, "dcc_t") + nk + zero_acc(k, "  ");
  c += "  for (int64_t kt = 0; kt < nk; ++kt) {\n    dcc_mbar_wait(dcc_full + 8 * kst, kph);\n";
  c += "    dcc_fence_proxy_async();  // the copies (generic proxy) before wgmma's reads (async proxy)\n";
  c += mma_step(k);
  c += fmt::format("    dcc_wgmma_wait<0>();\n    dcc_wgmma_keep<{}>(&{}[0][0][0]);\n", nacc, k.mma.step_partials ? "part" : "acc");
  c += "    if (lane == 0) dcc_mbar_arrive(dcc_empty + 8 * kst);\n";
  if (k.mma.step_partials)
    c += fmt::format("#pragma unroll\n    for (int x = 0; x < {}; ++x) (&acc[0][0][0])[x] += (&part[0][0][0])[x];\n", nacc);
  c += advance + "  }\n";
  c += k.epilogue.staged_row_bytes ? staged_epilogue(k, d) : epilogue_code(k, d);
  o += indented(c, 2) + "  }\n";
  return o;
}

}  // namespace

const char* pack16_function(bool bf16) { return bf16 ? "dcc_pack_bf16x2" : "dcc_pack_f16x2"; }

std::string pair_store(const std::string& ptr, const std::string& at, int bits, Scalar t) {
  if (bits == 64) return fmt::format("*reinterpret_cast<float2*>(&{}[{}]) = make_float2(pr[0], pr[1]);", ptr, at);
  return fmt::format("*reinterpret_cast<uint32_t*>(&{}[{}]) = {}(pr[0], pr[1]);", ptr, at, pack16_function(t == Scalar::BF16));
}

namespace {
/// A wgmma asm statement's `regs` f32 accumulators: their operand list
/// `%0, %1, ..` and their output constraints `"+f"(d[0]), ..`.
std::pair<std::string, std::string> accumulator_operands(int regs) {
  std::string dl, outs;
  for (int r = 0; r < regs; ++r) {
    dl += fmt::format("{}%{}", r ? ", " : "", r);
    outs += fmt::format("{}\"+f\"(d[{}])", r ? ", " : "", r);
  }
  return {dl, outs};
}
/// dcc_wgmma_ss_tf32<n>(d, adesc, bdesc, scale_d): m64n<n>k8 on tf32, both
/// operands K-major by descriptor (tf32 has no transposed form and no
/// immediate transpose operands), d = (scale_d ? d : 0) + a b.
std::string wgmma_tf32_function(int n) {
  const int regs = n / 2;
  const std::string guard = fmt::format("DCC_WGMMA_SS_tf32_N{}", n);
  std::string o = fmt::format("#ifndef {0}\n#define {0}\n", guard);
  o += fmt::format("// d (m64n{0}, f32) = (scale_d ? d : 0) + a (m64k8, tf32, shared memory by descriptor, K-major)\n"
                   "// b (k8n{0}, the same); issued by the warpgroup, completed by dcc_wgmma_wait.\n",
                   n);
  o += fmt::format("template <>\n__device__ __forceinline__ void dcc_wgmma_ss_tf32<{}>(float* d, uint64_t adesc, uint64_t bdesc, "
                   "int scale_d) {{\n",
                   n);
  o += fmt::format("#if defined(DCC_EMU)\n  dcc_emu_wgmma_ss(dcc_emu_mma_kind::tf32, d, adesc, bdesc, {}, false, false, scale_d != 0);\n", n);
  o += "#elif defined(__CUDA_ARCH_FEAT_SM90_ALL)\n";
  const auto [dl, outs] = accumulator_operands(regs);
  o += fmt::format("  asm volatile(\"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{0}, 0;\\n\"\n"
                   "               \"wgmma.mma_async.sync.aligned.m64n{1}k8.f32.tf32.tf32 {{{2}}}, %{3}, %{4}, p, 1, 1;\\n}}\\n\"\n"
                   "               : {5}\n               : \"r\"(scale_d), \"l\"(adesc), \"l\"(bdesc));\n",
                   regs, n, dl, regs + 1, regs + 2, outs);
  o += "#else\n  (void)d; (void)adesc; (void)bdesc; (void)scale_d;\n#endif\n}\n#endif\n";
  return o;
}
/// dcc_wgmma_tf32<n>(d, a, desc): d += a b, m64n<n>k8 on tf32, A's four
/// fragment registers a thread (mma.sync m16n8k8's tf32 layout; the fused
/// f32 attention's Q and P), B K-major by descriptor.
std::string wgmma_tf32_rs_function(int n) {
  const int regs = n / 2;
  const std::string guard = fmt::format("DCC_WGMMA_tf32_N{}", n);
  std::string o = fmt::format("#ifndef {0}\n#define {0}\n", guard);
  o += fmt::format("// d (m64n{0}, f32) += a (m64k8, tf32 fragments in registers) b (k8n{0}, shared memory by descriptor,\n"
                   "// K-major); issued by the warpgroup, completed by dcc_wgmma_wait.\n",
                   n);
  o += fmt::format("template <>\n__device__ __forceinline__ void dcc_wgmma_tf32<{}>(float* d, const uint32_t* a, uint64_t desc) {{\n", n);
  o += fmt::format("#if defined(DCC_EMU)\n  dcc_emu_wgmma(dcc_emu_mma_kind::tf32, d, a, desc, {}, false);\n", n);
  o += "#elif defined(__CUDA_ARCH_FEAT_SM90_ALL)\n";
  const auto [dl, outs] = accumulator_operands(regs);
  o += fmt::format("  asm volatile(\"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{0}, 0;\\n\"\n"
                   "               \"wgmma.mma_async.sync.aligned.m64n{1}k8.f32.tf32.tf32 {{{2}}}, {{%{3}, %{4}, %{5}, %{6}}}, %{7}, p, 1, 1;\\n}}\\n\"\n"
                   "               : {8}\n               : \"r\"(1), \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(desc));\n",
                   regs, n, dl, regs + 1, regs + 2, regs + 3, regs + 4, regs + 5, outs);
  o += "#else\n  (void)d; (void)a; (void)desc;\n#endif\n}\n#endif\n";
  return o;
}
}  // namespace

std::string wgmma_function(Elem e, int n, WgmmaA a, bool trans_b) {
  if (e == Elem::F32) {
    if (a == WgmmaA::SharedMN || trans_b) throw std::logic_error("kernel IR: a tf32 wgmma reads its operands K-major");
    return a == WgmmaA::Registers ? wgmma_tf32_rs_function(n) : wgmma_tf32_function(n);
  }
  const char* t = elem_name(e);
  const bool ss = a != WgmmaA::Registers;
  const int ta = a == WgmmaA::SharedMN ? 1 : 0, tb = trans_b ? 1 : 0;
  const int regs = n / 2;  // f32 accumulators a thread: m64nN over 128 threads
  // The name, template arguments and parameters of the specialisation.
  const std::string fn = ss ? fmt::format("dcc_wgmma_ss_{}<{}, {}, {}>", t, n, ta, tb) : fmt::format("dcc_wgmma_{}<{}, {}>", t, n, tb);
  const std::string guard = ss ? fmt::format("DCC_WGMMA_SS_{}_N{}_{}{}", t, n, ta, tb) : fmt::format("DCC_WGMMA_{}_N{}_T{}", t, n, tb);
  std::string o = fmt::format("#ifndef {0}\n#define {0}\n", guard);
  o += fmt::format("// d (m64n{1}, f32) += a (m64k16, {0} {2}) b (k16n{1}, shared memory by descriptor, {3});\n"
                   "// issued by the warpgroup, completed by dcc_wgmma_wait.\n",
                   t, n, ss ? (ta ? "in shared memory by descriptor, MN-major" : "in shared memory by descriptor, K-major")
                              : "fragments in registers",
                   tb ? "MN-major" : "K-major");
  o += fmt::format("template <>\n__device__ __forceinline__ void {}(float* d, {}, uint64_t {}) {{\n", fn,
                   ss ? "uint64_t adesc" : "const uint32_t* a", ss ? "bdesc" : "desc");
  if (ss)
    o += fmt::format("#if defined(DCC_EMU)\n  dcc_emu_wgmma_ss(dcc_emu_mma_kind::{}, d, adesc, bdesc, {}, {}, {});\n", t, n,
                     ta ? "true" : "false", tb ? "true" : "false");
  else
    o += fmt::format("#if defined(DCC_EMU)\n  dcc_emu_wgmma(dcc_emu_mma_kind::{}, d, a, desc, {}, {});\n", t, n, tb ? "true" : "false");
  o += "#elif defined(__CUDA_ARCH_FEAT_SM90_ALL)\n";
  const auto [dl, outs] = accumulator_operands(regs);
  // Operands after the accumulators: the scale-d predicate's source, then A, then B.
  const std::string a_op = ss ? fmt::format("%{}", regs + 1) : fmt::format("{{%{}, %{}, %{}, %{}}}", regs + 1, regs + 2, regs + 3, regs + 4);
  const std::string b_op = fmt::format("%{}", ss ? regs + 2 : regs + 5);
  const std::string imm = ss ? fmt::format("{}, {}", ta, tb) : std::to_string(tb);
  const std::string ins = ss ? "\"r\"(1), \"l\"(adesc), \"l\"(bdesc)"
                             : "\"r\"(1), \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(desc)";
  o += fmt::format("  asm volatile(\"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{0}, 0;\\n\"\n"
                   "               \"wgmma.mma_async.sync.aligned.m64n{1}k16.f32.{2}.{2} {{{3}}}, {4}, {5}, p, 1, 1, {6};\\n}}\\n\"\n"
                   "               : {7}\n               : {8});\n",
                   regs, n, t, dl, a_op, b_op, imm, outs, ins);
  o += ss ? "#else\n  (void)d; (void)adesc; (void)bdesc;\n#endif\n}\n#endif\n" : "#else\n  (void)d; (void)a; (void)desc;\n#endif\n}\n#endif\n";
  return o;
}

std::string print_cuda(const Kernel& k, DeviceText& d) {
  std::string o = fmt::format("// {}: tensor-core contraction (dccc --emit=kernel shows its kernel IR)\n", k.name);
  if (k.sm90a) {
    const Kernel& g = *k.sm90a;
    o += wgmma_function(g.a.elem, g.warps.warp_n, desc_plan(shared_of(g, g.a), 0).mn_major ? WgmmaA::SharedMN : WgmmaA::SharedK,
                        desc_plan(shared_of(g, g.b), 0).mn_major);
  }
  o += fmt::format("struct {}__launch {{\n  {} a;\n  const int32_t* tiles;\n  int64_t ntiles;  // entries\n}};\n\n", k.name,
                   d.args_type());
  auto bounds = [](const Kernel& f) {
    return f.min_blocks ? fmt::format("{}, {}", f.threads, f.min_blocks) : std::to_string(f.threads);
  };
  const bool two = k.sm90a && (k.sm90a->min_blocks != k.min_blocks || k.sm90a->threads != k.threads);
  if (two)
    o += fmt::format("#if DCC_WGMMA\n__global__ void __launch_bounds__({}) {}({}__launch launch) {{\n#else\n", bounds(*k.sm90a),
                     k.name, k.name);
  o += fmt::format("__global__ void __launch_bounds__({}) {}({}__launch launch) {{\n", bounds(k), k.name, k.name);
  if (two) o += "#endif\n";
  o += fmt::format("  const {}& a = launch.a;\n", d.args_type());
  if (k.sm90a) {
    // The sm_90a compilation holds the wgmma form, every other the mma.sync one.
    const Kernel& w = *k.sm90a;
    o += "#if DCC_WGMMA\n";
    if (!w.specialized) throw std::logic_error("kernel IR: the sm_90a form is warp-specialized");
    o += specialized_body(w, d);
    o += "#else\n" + tile_header(k, d, "blockIdx.x") + form_body(k, d) + "#endif\n";
  } else {
    o += tile_header(k, d, "blockIdx.x") + form_body(k, d);
  }
  o += "}\n\n";
  return o;
}

}  // namespace dccc::gpu
