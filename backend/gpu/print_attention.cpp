// The CUDA printer of the fused attention kernel (backend/gpu/print_attention.h);
// its --emit=kernel text is kernel_ir.cpp's (print_attention_kernel).
#include "backend/gpu/print_attention.h"

#include "backend/gpu/print_attention_16.h"
#include "backend/gpu/print_attention_f32.h"
#include "backend/gpu/print_attention_wrappers.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <set>

namespace dccc::gpu {

namespace {

// The row slot (index of the lane's row arrays, 2 a m16 tile) of element e
// of m16 tile mt in the element loops.
constexpr const char* kRowSlot = "2 * mt + (e >> 1)";

struct Printer {
  const AttentionKernel& k;
  AttnDeviceText& d;
  std::string out;
  bool full_ = false;  // printing the key-tile body for a tile with every key inside
  bool wide_ = false;  // printing the streaming body (AttentionKernel::wide)
  bool split_ = false;  // printing the split body (AttentionKernel::split): warps share rows, split columns
  bool wg_ = false;  // printing the wgmma form's key loop (tile_loop(true))
  bool unmasked_ = false;  // printing the mask-free copy of the tile body (AttentionKernel::unmasked)
  /// Whether some wgmma instantiation takes Q from shared memory
  /// (AttentionKernel::q_smem): the bodies then take it as template
  /// parameter QS.
  bool any_q() const { return attention_any_q_smem(k); }
  /// Offset of the warp's columns of K, V and the output in the split body.
  std::string warp_cols() const { return split_ ? " + warp * DP" : ""; }
  /// The shared-memory stage V's tile is in: K's and V's together, or V's
  /// own in the streaming body (K's stages alternate by chunk).
  const char* vstage() const { return wide_ ? "vstage" : "stage"; }

  std::string scalar_name(const std::string& tile_scalar) const { return "t_" + tile_scalar; }

  // Row and element registers (arrays over the lane's two rows and the
  // tile's fragments) read into, and written back from, a scope's scalars.
  std::string load_rows(const std::string& rr, const std::string& pad) {
    std::string o;
    for (const auto* b : k.row_scalars) o += fmt::format("{}{} {} = w_{}[{}];\n", pad, d.value_type(b), d.scalar(b), d.scalar(b), rr);
    return o;
  }
  std::string store_rows(const std::string& rr, const std::string& pad) {
    std::string o;
    for (const auto* b : k.row_scalars) o += fmt::format("{}w_{}[{}] = {};\n", pad, d.scalar(b), rr, d.scalar(b));
    return o;
  }
  std::string load_elems(const std::string& pad) {
    std::string o = fmt::format("{}float {} = s[mt][nt][e];\n", pad, d.scalar(k.score_acc));
    for (const auto* b : k.element_scalars) o += fmt::format("{}{} {} = x_{}[mt][nt][e];\n", pad, d.value_type(b), d.scalar(b), d.scalar(b));
    return o;
  }
  std::string row_of(const std::string& rr) { return fmt::format("m0 + wm0 + gid + 8 * ({})", rr); }

  /// A loop over the lane's S elements (m16 tile mt, n8 tile nt, register
  /// e: row slot rr = 2 mt + (e >> 1)) with i and j bound; `body` runs for
  /// elements inside (M, N) with the scopes' scalars declared.
  /// Rows are checked when the kernel IR says so (guard_rows); keys in the
  /// partial tile (not full_) when guard_keys says so, and otherwise only
  /// where a value reaches a fold or P (`masked`: `kn`, the tile's keys
  /// inside, bounds the key's place in the tile).
  std::string element_loop(const std::string& body, const std::string& outside = "", bool masked = false) {
    std::string o = "#pragma unroll\n    for (int mt = 0; mt < MT; ++mt)\n#pragma unroll\n    for (int nt = 0; nt < NT; ++nt)\n"
                    "#pragma unroll\n      for (int e = 0; e < 4; ++e) {\n";
    if (k.index32) {
      o += fmt::format("        const int64_t {} = (int64_t)((uint32_t)m0 + (uint32_t)(wm0 + gid + 8 * ({})));\n",
                       d.var(k.row_var), kRowSlot);
      o += fmt::format("        const int64_t {} = (int64_t)((uint32_t)n0 + (uint32_t)(8 * nt + 2 * tig + (e & 1)));\n", d.var(k.key_var));
    } else {
      o += fmt::format("        const int64_t {} = {};\n", d.var(k.row_var), row_of(kRowSlot));
      o += fmt::format("        const int64_t {} = n0 + 8 * nt + 2 * tig + (e & 1);\n", d.var(k.key_var));
    }
    std::vector<std::string> checks;
    if (k.guard_rows) checks.push_back(d.var(k.row_var) + " < t_M");
    if (!full_ && k.guard_keys) checks.push_back(d.var(k.key_var) + " < t_N");
    else if (!full_ && masked) checks.push_back("8 * nt + 2 * tig + (e & 1) < kn");
    std::string cond;
    for (const auto& c : checks) cond += (cond.empty() ? "" : " && ") + c;
    o += cond.empty() ? "        {\n" : fmt::format("        if ({}) {{\n", cond);
    o += load_elems("          ") + load_rows(kRowSlot, "          ") + body;
    o += "        }";
    o += outside.empty() || cond.empty() ? "\n" : " else {\n" + outside + "        }\n";
    return o + "      }\n";
  }
  std::string save_elem(const ir::BufferNode* b) {
    return fmt::format("          x_{}[mt][nt][e] = {};\n", d.scalar(b), d.scalar(b));
  }
  std::string row_loop(const std::string& body, const std::string& pad = "    ") {
    std::string o = fmt::format("#pragma unroll\n{}for (int rr = 0; rr < 2 * MT; ++rr) {{\n", pad);
    o += fmt::format("{}  const int64_t {} = {};\n", pad, d.var(k.row_var), row_of("rr"));
    o += fmt::format("{}  if ({} < t_M) {{\n", pad, d.var(k.row_var));
    o += load_rows("rr", pad + "    ") + body + store_rows("rr", pad + "    ");
    return o + pad + "  }\n" + pad + "}\n";
  }

  /// The int64 the host stored at int32 offset `at` of the entry.
  static std::string entry64(int at) {
    return fmt::format("(int64_t)(((uint64_t)(uint32_t)entry[{}] << 32) | (uint32_t)entry[{}])", at + 1, at);
  }

  /// Binds the uses of the element work's block invariants (default) or
  /// of the stores' (AttentionKernel::post_invariants) to their names.
  void bind_invariants(bool post = false) {
    for (const auto& inv : post ? k.post_invariants : k.invariants)
      for (const auto* u : inv.uses) {
        d.bind(u, inv.name);
        if (inv.divisor) d.bind_divisor(u, inv.name);
        if (inv.divisor32) d.bind_divisor32(u, inv.name);
      }
    if (unmasked_) bind_unmasked();
  }
  /// In the mask-free copy: each select on the mask condition
  /// (AttentionKernel::unmasked) in the element values, folds and P takes
  /// its first operand.
  void bind_unmasked() {
    auto visit = [&](const ir::ExprNode& x) {
      if (x.kind == ir::ExprKind::Select && ir::same_expr(x.args[0], k.unmasked)) d.bind(x.args[0].get(), "true");
    };
    for (const auto& s : k.steps) {
      if (s.kind == AttnStepKind::Element) ir::each_expr(s.stmt->value, visit);
      if (s.kind == AttnStepKind::Fold) ir::each_expr(s.term, visit);
    }
    if (k.pv_p) ir::each_expr(k.pv_p, visit);
  }

  /// An element step: its statement for each of the lane's elements.
  void element_step(const AttnStep& s) {
    auto text = [&] { return d.stmts({s.stmt}, 5) + save_elem(s.stmt->buffer.get()); };
    const std::string body = text();
    // A float subtraction with a row value as an operand (x - m, the
    // running max) follows the masked-value rule -inf - -inf = -inf: a
    // compare an element. A lane whose rows' values are all finite
    // needs none (with a finite operand the IEEE difference is the
    // rule's), so the step is printed again for such lanes.
    std::vector<const ir::ExprNode*> subs;
    std::set<const ir::BufferNode*> rows;
    auto visit = [&](const ir::ExprNode& e) {
      if (e.kind == ir::ExprKind::Binary && e.binop == ir::BinOp::Sub &&
          (e.type == Scalar::F32 || e.type == Scalar::BF16 || e.type == Scalar::F16))
        for (const auto& a : e.args)
          if (a->kind == ir::ExprKind::Load && a->args.empty() &&
              std::find(k.row_scalars.begin(), k.row_scalars.end(), a->buffer.get()) != k.row_scalars.end()) {
            subs.push_back(&e);
            rows.insert(a->buffer.get());
          }
    };
    ir::own_exprs(*s.stmt, visit);  // every sub-expression of the statement's own
    if (subs.empty()) {
      out += element_loop(body);
      return;
    }
    std::string fin;
    for (const auto* b : rows) fin += fmt::format(" && fabsf((float)w_{}[rr]) < INFINITY", d.scalar(b));
    for (const auto* e : subs) d.bind_finite_sub(e);
    const std::string plain = text();
    d.unbind_all();
    bind_invariants();
    out += "    bool fin = true;  // the lane's row values in the step's subtractions are finite\n";
    out += "#pragma unroll\n    for (int rr = 0; rr < 2 * MT; ++rr) fin = fin" + fin + ";\n";
    out += "    if (fin) {\n" + element_loop(plain) + "    } else {\n" + element_loop(body) + "    }\n";
  }

  /// The range flags (NAME_f, joined by &&) of the block divisors of the f32
  /// divisions in element step `s` (Invariant::divisor32), or "" where it
  /// has none, or reads its own element value (it is printed twice, the
  /// second time over the first's results: element_step).
  std::string fdiv32_flags(const AttnStep& s) {
    std::set<std::string> names;
    bool self = false;
    ir::each_expr(s.stmt->value, [&](const ir::ExprNode& e) {
      if (e.kind == ir::ExprKind::Load && e.buffer == s.stmt->buffer) self = true;
      if (e.kind != ir::ExprKind::Binary || e.binop != ir::BinOp::Div || e.type != Scalar::F32) return;
      for (const auto& inv : k.invariants)
        if (inv.divisor32 && std::find(inv.uses.begin(), inv.uses.end(), e.args[1].get()) != inv.uses.end())
          names.insert(inv.name);
    });
    std::string o;
    if (!self)
      for (const auto& n : names) o += (o.empty() ? "" : " && ") + n + "_f";
    return o;
  }

  /// `print` with the f32 divisions by bound divisors corrected from their
  /// reciprocals (dcc_fdiv_pre) under the flag dq, set to `flags` first;
  /// where dq comes out false (an operand out of the range where that is
  /// exact), `print` again with a / b. IEEE's division is a dozen
  /// instructions and a branch an element, which keeps the compiler from
  /// overlapping the elements.
  void fdiv_corrected(const std::string& flags, const std::string& pad, const std::function<void()>& print) {
    out += pad + "bool dq = " + flags + ";  // the divisions corrected from reciprocals (dcc_fdiv_pre)\n";
    d.fdiv_flag("dq");
    print();
    d.fdiv_flag("");
    out += pad + "if (!dq) {  // an operand out of that range: IEEE division\n";
    print();
    out += pad + "}\n";
  }

  void step(const AttnStep& s) {
    bind_invariants();
    switch (s.kind) {
      case AttnStepKind::Element: {
        // f32 divisions by block values (Invariant::divisor32).
        const std::string flags = fdiv32_flags(s);
        if (flags.empty()) {
          element_step(s);
          return;
        }
        out += "    {\n";
        fdiv_corrected(flags, "    ", [&] { element_step(s); });
        out += "    }\n";
        return;
      }
      case AttnStepKind::Row: out += row_loop(d.stmts({s.stmt}, 3)); return;
      case AttnStepKind::Fold: {
        const char* id = s.op == ir::BinOp::Max ? "-INFINITY" : s.op == ir::BinOp::Min ? "INFINITY" : "0.0f";
        auto combine = [&](const std::string& a, const std::string& b) {
          return s.op == ir::BinOp::Max ? fmt::format("fmaxf({}, {})", a, b)
                 : s.op == ir::BinOp::Min ? fmt::format("fminf({}, {})", a, b) : fmt::format("{} + {}", a, b);
        };
        out += fmt::format("    {{  // fold `{}` over the tile's keys\n    float red[2 * MT];\n"
                           "#pragma unroll\n    for (int rr = 0; rr < 2 * MT; ++rr) red[rr] = {};\n",
                           s.stmt->buffer->name, id);
        out += element_loop(fmt::format("          red[{}] = {};\n", kRowSlot,
                                        combine(fmt::format("red[{}]", kRowSlot), "(float)(" + d.expr(s.term) + ")")),
                            "", true);
        out += "#pragma unroll\n    for (int rr = 0; rr < 2 * MT; ++rr) {\n";
        out += fmt::format("      red[rr] = {};\n", combine("red[rr]", "__shfl_xor_sync(0xffffffffu, red[rr], 1)"));
        out += fmt::format("      red[rr] = {};\n    }}\n", combine("red[rr]", "__shfl_xor_sync(0xffffffffu, red[rr], 2)"));
        d.bind(s.term.get(), "red[rr]");
        out += row_loop(d.stmts({s.stmt}, 3));
        d.unbind_all();
        bind_invariants();
        out += "    }\n";
        return;
      }
      case AttnStepKind::Pv: {
        out += "    {  // O = O * c + P V\n";
        if (k.pv_scale) out += o_rescale();
        out += "    float p[MT][NT][4];\n";
        out += element_loop(fmt::format("          p[mt][nt][e] = {};\n", d.expr(k.pv_p)), "          p[mt][nt][e] = 0.0f;\n", true);
        if (k.elem == Elem::F32) {
          out += wg_ ? attn_f32::pv_wg(split()) : attn_f32::pv_sync(split(), vstage(), warp_cols());
          return;
        }
        out += fmt::format("    const uint16_t* vs = Vs + {} * STAGE{};\n", vstage(), warp_cols());
        out += (wg_ ? attn16::pv_wg(k.elem) : attn16::pv_sync(k.elem)) + "    }\n";
        return;
      }
    }
  }
  /// O = O * c (the output's registers by the rescale factor of each row).
  std::string o_rescale() {
    std::string o = "    float c[2 * MT];\n#pragma unroll\n    for (int rr = 0; rr < 2 * MT; ++rr) c[rr] = 1.0f;\n";
    o += row_loop(fmt::format("      c[rr] = {};\n", d.expr(k.pv_scale)));
    // A lane whose rows keep their max (every c 1, most tiles after
    // the first few) skips the multiplies by 1.
    o += "    bool rescale = false;\n#pragma unroll\n    for (int rr = 0; rr < 2 * MT; ++rr) rescale = rescale || c[rr] != 1.0f;\n";
    o += "    if (rescale) {\n#pragma unroll\n    for (int mt = 0; mt < MT; ++mt)\n#pragma unroll\n    for (int dt = 0; dt < DT; ++dt)\n"
         "      for (int e = 0; e < 4; ++e) o[mt][dt][e] *= c[" + std::string(kRowSlot) + "];\n    }\n";
    return o;
  }
  /// Deferred rescaling's catch-up after the key loop (AttentionKernel::lazy):
  /// a lane with a row whose deferred reference differs from its running
  /// maximum runs the key loop's row statements once as for a tile without
  /// keys -- each reference's eager copy, the `+` folds with 0, the output's
  /// rescale -- which brings the running results to the program's.
  void catch_up() {
    if (k.lazy.empty()) return;
    bind_invariants();
    std::string stale;
    for (const auto& lz : k.lazy)
      stale += fmt::format(" || w_{}[rr] != w_{}[rr]", d.scalar(lz.ref), d.scalar(lz.acc));
    out += "  {  // deferred rescaling: the running results relative to the running maximum\n"
           "  bool stale = false;\n#pragma unroll\n  for (int rr = 0; rr < 2 * MT; ++rr) stale = stale" + stale + ";\n"
           "  if (stale) {\n";
    for (size_t x = 0; x < k.steps.size(); ++x) {
      const AttnStep& s = k.steps[x];
      ir::Stmt st = s.stmt;
      for (const auto& lz : k.lazy)
        if (lz.step == x) st = lz.eager;
      if (s.kind == AttnStepKind::Row) {
        out += row_loop(d.stmts({st}, 3));
      } else if (s.kind == AttnStepKind::Fold && s.op == ir::BinOp::Add) {
        d.bind(s.term.get(), "0.0f");
        out += row_loop(d.stmts({st}, 3));
        d.unbind_all();
        bind_invariants();
      } else if (s.kind == AttnStepKind::Pv && k.pv_scale) {
        out += "    {\n" + o_rescale() + "    }\n";
      }
    }
    out += "  }\n  }\n";
    d.unbind_all();
  }
  /// `dst`[0..3] = the A fragment of P's k-step kc (m16 tile `mt`): the C
  /// fragments of n-tiles 2 kc and 2 kc + 1 packed to 16 bits.
  // f32 operands (backend/gpu/print_attention_f32.h): 3xTF32 or one TF32 product.
  bool split() const { return k.fp32 == Fp32Math::Split3xTf32; }
  /// The lane's Q fragments for the score's columns q0 + 0 .. DP - 1 (q0
  /// empty: 0): once a block, or once a chunk in the streaming body.
  std::string q_load(const std::string& q0, const std::string& pad) {
    return k.elem == Elem::F32 ? attn_f32::q_frags(q0, pad) : attn16::q_frags(q0, pad);
  }
  /// The streaming body's copy of one tile's columns col0 .. col0 + DP - 1
  /// of K or V (columns at or past `ncols`, keys at or past N: zeros): 16
  /// bytes a cp.async when aligned, else element by element.
  void copy_part(const char* st) {
    out += fmt::format("  auto copy_part = [&]({0}* dst, const {0}* P, int64_t base, int64_t rs, int64_t ds, int64_t col0, int64_t ncols, int64_t kt) {{\n", st);
    out += "    const int64_t j0 = kt * BN;\n    constexpr int CPL = DP / VE, THREADS = WARPS * 32;  // 16-byte chunks a line\n";
    out += "    if (vec) {\n#pragma unroll\n      for (int it = 0; it < (BN * CPL + THREADS - 1) / THREADS; ++it) {\n"
           "        const int u = (int)threadIdx.x + it * THREADS;\n        if (u >= BN * CPL) break;\n";
    out += "        const int r = u / CPL, c = (u % CPL) * VE;\n        const int64_t key = j0 + r;\n";
    out += "        const bool ok = key < t_N && col0 + c < ncols;\n";
    out += "        dcc_cp_async16(&dst[r * LINE + c], &P[ok ? base + key * rs + col0 + c : 0], ok);\n      }\n    } else {\n";
    out += "      for (int u = threadIdx.x; u < BN * DP; u += THREADS) {\n";
    out += "        const int r = u / DP, c = u % DP;\n        const int64_t key = j0 + r;\n";
    out += fmt::format("        dst[r * LINE + c] = key < t_N && col0 + c < ncols ? P[base + key * rs + (col0 + c) * ds] : ({})0;\n", st);
    out += "      }\n    }\n  };\n";
  }

  /// The split body's score: each warp's S holds the sum over its DP
  /// columns; the warps' parts go through shared memory (after V's stages)
  /// and each warp adds all of them, in warp order, so every warp holds the
  /// same S (and computes the same row values and P).
  void split_sum() {
    out += "    {  // S: the warps' partial sums, added\n";
    out += "    float* red = reinterpret_cast<float*>(smem) + (2 * NS * BN * LINE * sizeof(*Ks)) / sizeof(float);\n";
    out += "#pragma unroll\n    for (int mt = 0; mt < MT; ++mt)\n#pragma unroll\n    for (int nt = 0; nt < NT; ++nt)\n"
           "      for (int e = 0; e < 4; ++e)\n"
           "        red[((warp * MT + mt) * 16 + gid + 8 * (e >> 1)) * BN + 8 * nt + 2 * tig + (e & 1)] = s[mt][nt][e];\n";
    out += "    __syncthreads();\n";
    out += "#pragma unroll\n    for (int mt = 0; mt < MT; ++mt)\n#pragma unroll\n    for (int nt = 0; nt < NT; ++nt)\n"
           "      for (int e = 0; e < 4; ++e) {\n        float t = 0.0f;\n"
           "#pragma unroll\n        for (int w = 0; w < WARPS; ++w) t += red[((w * MT + mt) * 16 + gid + 8 * (e >> 1)) * BN + 8 * nt + 2 * tig + (e & 1)];\n"
           "        s[mt][nt][e] = t;\n      }\n    }\n";
  }

  /// The (query tile x key tile kt) box's corners, inside the entry:
  /// i_lo .. i_hi, j_lo .. j_hi (in `needed` and `inside`).
  static std::string tile_box() {
    return "    const int64_t i_lo = m0, i_hi = (m0 + TM < t_M ? m0 + TM : t_M) - 1;\n"
           "    const int64_t j_lo = kt * BN, j_hi = (j_lo + BN < t_N ? j_lo + BN : t_N) - 1;\n";
  }
  /// `test` (a format string, {} the conjunct's value) at each corner of
  /// the box, with i and j bound to it.
  std::string at_corners(const ir::Expr& c, const char* test) {
    std::string o;
    for (const char* ci : {"i_lo", "i_hi"})
      for (const char* cj : {"j_lo", "j_hi"})
        o += fmt::format("    {{ const int64_t {} = {}, {} = {}; {} }}\n", d.var(k.row_var), ci, d.var(k.key_var), cj,
                         fmt::format(fmt::runtime(test), d.expr(c)));
    return o;
  }

  /// After the key loop: the stores' block invariants (by a block with a
  /// row and a column to store), then loops over the output columns read
  /// O's registers. Staged paired stores (AttentionKernel::PairStore::staged)
  /// in the one-tile-a-block body: each warp's rows through its part of the
  /// block's shared memory, after one block barrier, then out 16 bytes a
  /// store.
  void stores() {
    // The staged pairs are 16-bit (the planner's check): lines of DP + 8.
    auto staged_here = [&](const AttentionKernel::PairStore* p) { return p && p->staged && !wide_ && !split_; };
    if (std::any_of(k.pair_stores.begin(), k.pair_stores.end(), [&](const auto& p) { return staged_here(&p); }))
      out += "  __syncthreads();  // every warp done with the K, V and Q tiles: the staged stores reuse their space\n"
             "  constexpr int SOL = DP + 8, SOV = 8;  // a staged line's elements (16 bytes of padding); elements a 16-byte chunk\n"
             "  uint16_t* so = reinterpret_cast<uint16_t*>(smem + warp * (16 * SOL * 2 + 128));  // the warp's 16 rows\n"
             "  int64_t* so_ob = reinterpret_cast<int64_t*>(so + 16 * SOL);  // a row's output index at column 0; -1: not staged\n";
    for (const auto& inv : k.post_invariants)
      out += inv.entry >= 0 ? fmt::format("  const int64_t {} = {};  // once a block, from the entry\n", inv.name, entry64(inv.entry))
                            : fmt::format("  const auto {} = m0 < t_M && t_VD > 0 ? {} : 0;  // once a block\n", inv.name,
                                          d.expr(inv.value));
    for (const auto& s : k.post) {
      bind_invariants(true);
      if (s->kind != ir::StmtKind::For) {
        out += row_loop(d.stmts({s}, 3), "  ");
        continue;
      }
      ir::each_stmt(s, [&](const ir::StmtNode& y) {
        ir::own_exprs(y, [&](const ir::ExprNode& e) {
          if (e.kind == ir::ExprKind::Load && e.buffer.get() == k.out_acc) d.bind(&e, "o[rr >> 1][dt][e]");
        });
      });
      const AttentionKernel::PairStore* pair = nullptr;
      for (const auto& p : k.pair_stores)
        if (k.post[p.post] == s) pair = &p;
      const bool staged = staged_here(pair);
      // Staged (one m16 tile a warp): the lane's rows are the warp's gid
      // and gid + 8; the previous staged statement's rows are out first.
      if (staged) out += "  __syncwarp();\n";
      // Row by row (one check, the row's index arithmetic and divisors
      // shared by its columns), then the lane's columns of that row.
      out += "#pragma unroll\n  for (int rr = 0; rr < 2 * MT; ++rr) {\n";
      out += fmt::format("    const int64_t {} = {};\n", d.var(k.row_var), row_of("rr"));
      out += fmt::format("    if ({} < t_M) {{\n", d.var(k.row_var));
      out += load_rows("rr", "      ");
      // The lane's columns: without a check when all of its tile's lie
      // inside (a branch an element keeps the compiler from overlapping the
      // elements' rounding chains), the row's divisors are not 0 and need no
      // scaling (one multiply a division: NAME_nz) and, for a paired store
      // (AttentionKernel::pair_stores), the row's index at column 0 is even:
      // two columns a 32-bit store. Else each column checked.
      const char* c0 = wide_ ? "c0 + " : split_ ? "warp * DP + " : "";
      std::string fast = fmt::format("{}DP <= t_VD", c0), nz_decls;
      int n = 0;
      for (const auto& [node, b] : k.post_divisors) {
        std::string dv = fmt::format("dv{}", n++);
        out += fmt::format("      const float {0}_k = dcc_div16_k({1}), {0}_r = __frcp_rn({1} * {0}_k);\n"
                           "      constexpr bool {0}_nz = false;  // a row sum may be 0\n", dv, d.scalar(b));
        fast += fmt::format(" && {} != 0.0f && {}_k == 1.0f", d.scalar(b), dv);
        nz_decls += fmt::format("      constexpr bool {}_nz = true;\n", dv);
        d.bind_divisor(node, dv);
      }
      // f32 quotients by a row value: corrected from its reciprocal
      // (dcc_fdiv_pre), the columns again with a / b where a value is out
      // of that range.
      std::string flags32;
      for (const auto& [node, b] : k.post_divisors32) {
        std::string dv = fmt::format("dv{}", n++);
        out += fmt::format("      const float {0}_q = __frcp_rn({1});\n"
                           "      const bool {0}_f = fabsf({1}) >= 0x1p-20f && fabsf({1}) <= 0x1p20f;\n", dv, d.scalar(b));
        flags32 += (flags32.empty() ? "" : " && ") + dv + "_f";
        d.bind_divisor32(node, dv);
      }
      const std::string col = fmt::format("const int64_t {} = {}8 * dt + 2 * tig + c;\n", d.var(s->var), c0);
      const ir::Stmt store = pair ? ir::items_of(s->body[0])[0] : nullptr;  // the one store (planner's check)
      const std::string ptr = pair ? d.buffer(store->buffer.get()) : "";
      if (pair) {
        out += fmt::format("      const int64_t ob = {};  // the row's output index at column 0\n", d.expr(pair->row_index));
        fast += staged ? fmt::format(" && ob % SOV == 0 && (uintptr_t){} % 16 == 0", ptr)
                       : fmt::format(" && (ob & 1) == 0 && (uintptr_t){} % {} == 0", ptr, pair->bits / 8);
      }
      // f32 pairs (no 16-bit divisors, whose fast path divides by a
      // multiply): the lane's values of the row once, then two store paths
      // that only store them -- the quotients (and their IEEE fallback)
      // printed once, not once a path: a third of the kernel's code was the
      // stores' copies of the divisions, and ncu's instruction-fetch stalls
      // of f32 on short batches sat in those rarely run copies (session 33).
      const bool once = pair && pair->bits == 64 && !staged && k.post_divisors.empty();
      if (once) {
        out += "      float ov[DT][2];\n";
        auto values = [&]() {
          out += "#pragma unroll\n      for (int dt = 0; dt < DT; ++dt)\n#pragma unroll\n        for (int c = 0; c < 2; ++c) {\n";
          out += "          const int e = 2 * (rr & 1) + c;\n          " + col;
          out += fmt::format("          ov[dt][c] = {};\n        }}\n", d.expr(store->value));
        };
        if (flags32.empty()) values();
        else fdiv_corrected(flags32, "      ", values);
        d.bind(store->value.get(), "ov[dt][c]");  // both paths below store them
      }
      out += "      if (" + fast + ") {\n" + nz_decls;
      auto fast_columns = [&]() {
        if (pair) {
          // A 16-bit pair: both values in f32 as they are before their rounding
          // to the stored type, rounded and packed by one cvt (the same bits).
          out += "#pragma unroll\n      for (int dt = 0; dt < DT; ++dt) {\n        float pr[2];\n";
          out += "#pragma unroll\n        for (int c = 0; c < 2; ++c) {\n          const int e = 2 * (rr & 1) + c;\n";
          out += "          " + col;
          const bool own = store->value->type == store->buffer->type;  // rounded to the stored type by its own node
          out += fmt::format("          pr[c] = {};\n        }}\n", own ? d.expr_unrounded(store->value) : d.expr(store->value));
          out += "        " +
                 (staged ? pair_store("so", "(gid + 8 * rr) * SOL + 8 * dt + 2 * tig", pair->bits, store->buffer->type)
                         : pair_store(ptr, fmt::format("ob + {}8 * dt + 2 * tig", c0), pair->bits, store->buffer->type)) +
                 "\n      }\n";
          if (staged) out += "      if (tig == 0) so_ob[gid + 8 * rr] = ob;\n";
        } else {
          out += "#pragma unroll\n      for (int dt = 0; dt < DT; ++dt)\n#pragma unroll\n        for (int c = 0; c < 2; ++c) {\n";
          out += "          const int e = 2 * (rr & 1) + c;\n          " + col + "          {\n";
          out += d.stmts(ir::items_of(s->body[0]), 6) + "          }\n        }\n";
        }
      };
      if (once) {
        out += "#pragma unroll\n      for (int dt = 0; dt < DT; ++dt) {\n        const float* pr = ov[dt];\n";
        out += "        " + pair_store(ptr, fmt::format("ob + {}8 * dt + 2 * tig", c0), pair->bits, store->buffer->type) + "\n      }\n";
      } else if (flags32.empty()) {
        fast_columns();
      } else {
        fdiv_corrected(flags32, "      ", fast_columns);
      }
      out += "      } else {\n";
      if (staged) out += "      if (tig == 0) so_ob[gid + 8 * rr] = -1;  // stored by its lanes\n";
      out += "#pragma unroll\n      for (int dt = 0; dt < DT; ++dt)\n#pragma unroll\n        for (int c = 0; c < 2; ++c) {\n";
      out += std::string("          const int e = 2 * (rr & 1) + c;\n          ") + (once ? "(void)e;\n          " : "") + col;
      out += fmt::format("          if ({} < t_VD) {{\n", d.var(s->var));
      out += d.stmts(ir::items_of(s->body[0]), 6) + "          }\n        }\n";
      out += staged ? "      }\n    } else if (tig == 0) {\n      so_ob[gid + 8 * rr] = -1;  // past the last row\n    }\n  }\n"
                    : "      }\n    }\n  }\n";
      if (staged) {
        // The warp's staged rows: 16 x DP / SOV chunks of 16 bytes, each
        // row's consecutive chunks on consecutive lanes.
        out += "  __syncwarp();\n  {  // the warp's staged rows out, 16 bytes a store\n";
        out += "  constexpr int CH = DP / SOV;  // chunks a row\n  static_assert(MT == 1 && (16 * CH) % 32 == 0, \"staged: one m16 tile a warp\");\n";
        out += "#pragma unroll\n  for (int it = 0; it < 16 * CH / 32; ++it) {\n    const int u = lane + 32 * it, r = u / CH, ch = u % CH;\n";
        out += "    const int64_t ob = so_ob[r];\n";
        out += fmt::format("    if (ob >= 0) *reinterpret_cast<uint4*>(&{}[ob + SOV * ch]) = *reinterpret_cast<const uint4*>(&so[r * SOL + SOV * ch]);\n", ptr);
        out += "  }\n  }\n";
      }
      d.unbind_all();
    }
  }

  std::string body() {
    const bool f32 = k.elem == Elem::F32;
    const char* st = f32 ? "float" : "uint16_t";
    const int w = static_cast<int>(k.batch.size()) + 1;
    std::string args = d.args_type();
    // DP: head dim, BN: keys a tile, MT: m16 tiles of query rows a warp,
    // WARPS: warps a block (WARPS x 16 MT = the query tile), NS: K's and
    // V's shared-memory stages (AttentionKernel::key_stages).
    // WG: S and P V on wgmma (AttentionKernel::wgmma_dims; the wrapper
    // passes DCC_WGMMA, true when compiled for sm_90a). QS (where some
    // instantiation has it): the wgmma form's S reads Q's tile from shared
    // memory (AttentionKernel::q_smem).
    out += fmt::format("template <int DP, int BN, int MT, int WARPS, bool WG, int NS{}>\n__device__ __forceinline__ void {}__body{}(const {}__launch& launch, char* smem, int64_t tile) {{\n",
                       any_q() ? ", bool QS" : "", k.name, wide_ ? "_wide" : split_ ? "_split" : "", k.name);
    out += split_ ? "  constexpr int TM = 16 * MT;  // query rows a block (the warps share them)\n"
                  : "  constexpr int TM = WARPS * 16 * MT;  // query rows a block\n";
    if (f32) out += "  static_assert(MT == 1, \"f32: one m16 tile a warp\");\n";
    out += fmt::format("  const {}& a = launch.a;\n", args);
    out += fmt::format("  const int32_t* entry = launch.tiles + tile * {};\n", attention_entry_width(k));
    for (size_t x = 0; x < k.batch.size(); ++x) out += fmt::format("  const int64_t {} = entry[{}];\n", d.var(k.batch[x].var), x);
    out += fmt::format("  const int64_t m0 = (int64_t)entry[{}] * TM;\n", w - 1);
    // Values the host stored in the entry (TileScalar::entry): read with
    // it, in the same round trip.
    for (const auto& s : k.scalars)
      out += s.entry >= 0 ? fmt::format("  const int64_t {} = {};  // from the entry\n", scalar_name(s.name), entry64(s.entry))
                          : fmt::format("  const int64_t {} = {};\n", scalar_name(s.name), d.expr(s.value));
    for (const auto& inv : k.invariants) {
      out += fmt::format("  const auto {} = {};  // once a block\n", inv.name, d.expr(inv.value));
      if (inv.divisor)
        out += fmt::format("  const float {0}_k = dcc_div16_k({0}), {0}_r = __frcp_rn({0} * {0}_k);  // dividing by {0}\n"
                           "  constexpr bool {0}_nz = false;  // the key loop's copy for {0} != 0, {0}_k == 1 says true\n", inv.name);
      if (inv.divisor32)
        out += fmt::format("  const float {0}_q = __frcp_rn({0});  // f32 quotients by {0} corrected from it (dcc_fdiv_pre)\n"
                           "  const bool {0}_f = fabsf({0}) >= 0x1p-20f && fabsf({0}) <= 0x1p20f;  // where that is exact\n", inv.name);
    }
    if (wide_) {
      out += "  // Streaming: this block's output columns c0 .. c0 + DP - 1; the score's in chunks of DP.\n";
      out += "  const int64_t c0 = (int64_t)blockIdx.y * DP;\n  if (c0 > 0 && c0 >= t_VD) return;\n";
    }
    if (split_) out += "  // Split: the block's warps share its 16 x MT rows; warp w holds columns w DP .. w DP + DP - 1\n"
                       "  // of the score's sum and of the output, K's and V's lines are WARPS DP wide.\n";
    out += fmt::format("  constexpr int LW = {}DP;  // K's and V's line: elements copied\n", split_ ? "WARPS * " : "");
    out += fmt::format("  constexpr int LINE = LW + {}, NT = BN / 8, DT = DP / 8, KQ = DP / {}, VE = {};  // VE: elements a 16-byte copy\n",
                       k.pad, f32 ? 8 : 16, f32 ? 4 : 8);
    if (f32 && !wide_ && !split_)
      out += "  static_assert(!WG || (MT == 1 && WARPS % 4 == 0 && DP % 32 == 0 && (BN % 32 == 0 || BN == 16)), \"f32 wgmma: warpgroups of 16-row warps\");\n";
    else if (f32 || wide_ || split_) out += "  static_assert(!WG, \"wgmma: the 16-bit one-warpgroup body only\");\n";
    else out += "  static_assert(!WG || (MT == 1 && WARPS % 4 == 0 && DP % 64 == 0 && BN % 16 == 0), \"wgmma: warpgroups of 16-row warps\");\n";
    // A stage of K or V: lines of LINE elements, or with wgmma 128-byte
    // swizzled lines of 64 columns (the 16-byte chunk index XOR the line's
    // index mod 8), columns 64 .. 127 in a second part after the first's BN
    // lines (docs/cuda.md, "wgmma").
    out += "  constexpr int STAGE = WG ? BN * DP : BN * LINE;  // elements a K or V stage\n";
    out += "  auto swz_at = [](int lines, int r, int c) -> int {  // line r, column c of a swizzled tile of `lines` lines\n";
    out += f32 ? "    return (c >> 5) * (lines * 32) + r * 32 + ((((c & 31) >> 2) ^ (r & 7)) << 2) + (c & 3);\n  };\n  (void)swz_at;\n"
               : "    return (c >> 6) * (lines * 64) + r * 64 + ((((c & 63) >> 3) ^ (r & 7)) << 3) + (c & 7);\n  };\n  (void)swz_at;\n";
    // f32's V transposed ([d][key] lines): 128-byte swizzled lines of 32
    // keys, or at 16 keys a tile 64-byte lines (16-byte chunk bits XOR line
    // bits 1-2: the 64-byte swizzle, period 8 lines), so that 16 keys take
    // half the space.
    if (f32)
      out += "  constexpr int VW = BN >= 32 ? 32 : 16;  // V transposed: keys a line\n"
             "  auto vt_at = [&](int r, int c) -> int {  // line (column of V) r, key slot c of V transposed\n"
             "    if constexpr (VW == 32) return swz_at(DP, r, c);\n"
             "    else return r * 16 + (((c >> 2) ^ ((r >> 1) & 3)) << 2) + (c & 3);\n  };\n  (void)vt_at;\n";
    out += "  auto kv_at = [&](int r, int c) -> int {  // line r, column c of a stage\n"
           "    if constexpr (WG) return swz_at(BN, r, c);\n"
           "    else return r * LINE + c;\n  };\n  (void)kv_at;\n";
    // Q's tile first where the wgmma form reads it from shared memory
    // (AttentionKernel::q_smem: QS), in K's layout with TM lines.
    if (!any_q()) out += "  constexpr bool QS = false;  // Q's tile in shared memory\n";
    else if (wide_ || split_) out += "  static_assert(!QS, \"Q's tile in shared memory: the one-warpgroup-row body only\");\n";
    else out += "  static_assert(WG || !QS, \"Q's tile in shared memory: the wgmma form only\");\n";
    out += fmt::format("  {0}* Qs = reinterpret_cast<{0}*>(smem + (WG ? (1024 - (dcc_smem_u32(smem) & 1023)) & 1023 : 0));\n", st);
    if (f32 && !wide_ && !split_) {
      // f32 on wgmma (AttentionKernel::wgmma_dims): Q's tf32 parts (big,
      // then small for 3xTF32), K's and V's raw stages, then one tile's K
      // small part and V's transposed big and small parts.
      out += fmt::format("  constexpr int QP = {};  // tf32 parts of an operand (3xTF32: big and small)\n", split() ? 2 : 1);
      out += "  float* Ks = Qs + (WG ? QP * TM * DP : 0);\n  float* Vs = Ks + NS * STAGE;\n"
             "  float* Kl = Vs + NS * STAGE;  // K's small parts (wgmma)\n  float* Vb = Kl + (QP - 1) * STAGE;  // V transposed: big parts\n"
             "  float* Vl = Vb + STAGE;  // and small\n"
             "  const uint32_t kl_u32 = dcc_smem_u32(Kl), vb_u32 = dcc_smem_u32(Vb), vl_u32 = dcc_smem_u32(Vl);\n"
             "  (void)kl_u32, (void)vb_u32, (void)vl_u32;\n";
    } else {
      out += fmt::format("  {0}* Ks = Qs + (QS ? TM * DP : 0);\n  {0}* Vs = Ks + NS * STAGE;\n", st);
    }
    // The stages' shared addresses for wgmma's descriptors, once a block.
    out += "  const uint32_t qs_u32 = dcc_smem_u32(Qs), ks_u32 = dcc_smem_u32(Ks), vs_u32 = dcc_smem_u32(Vs);\n"
           "  (void)qs_u32, (void)ks_u32, (void)vs_u32;\n";
    out += fmt::format("  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gid = lane >> 2, tig = lane & 3, wm0 = {};\n",
                       split_ ? "0" : "warp * 16 * MT");
    out += fmt::format("  const {0}* Qp = (const {0}*){1};\n", st, d.buffer(k.q));
    out += fmt::format("  const {0}* Kp = (const {0}*){1};\n", st, d.buffer(k.k));
    out += fmt::format("  const {0}* Vp = (const {0}*){1};\n", st, d.buffer(k.v));
    out += f32 ? "  float qf[KQ][4];\n" : "  uint32_t qf[KQ][MT][4];\n";
    // Q's fragments, O and the row values' starts: with the streaming body
    // here; otherwise after the first K and V tile's copy is issued (below),
    // so that the block waits for Q and that tile at once.
    std::string q_rows = wide_ ? "" : split_ ? q_load("warp * DP", "  ") : "  if constexpr (!QS) {\n" + q_load("", "  ") + "  }\n";
    if (f32 && !wide_ && !split_) q_rows = "  if constexpr (WG) {\n" + attn_f32::q_tile(split()) + "  } else {\n" + q_load("", "  ") + "  }\n";
    q_rows += "  float o[MT][DT][4];\n#pragma unroll\n  for (int mt = 0; mt < MT; ++mt)\n#pragma unroll\n  for (int dt = 0; dt < DT; ++dt)\n"
              "    for (int e = 0; e < 4; ++e) o[mt][dt][e] = 0.0f;\n";
    for (const auto* b : k.row_scalars) q_rows += fmt::format("  {} w_{}[2 * MT] = {{}};\n", d.value_type(b), d.scalar(b));
    if (!k.pre.empty()) q_rows += row_loop(d.stmts(k.pre, 3), "  ");
    if (wide_) out += q_rows;
    // Which key tiles to run: a skip conjunct that holds at no corner of the box skips it.
    out += "  const int64_t nkt = (t_N + BN - 1) / BN;\n";
    out += "  auto needed = [&](int64_t kt) -> bool {\n";
    if (!k.skip_conjuncts.empty()) {
      out += tile_box() + "    bool any;\n";
      for (const auto& c : k.skip_conjuncts)
        out += "    any = false;\n" + at_corners(c, "any = any || ({});") + "    if (!any) return false;\n";
    } else {
      out += "    (void)kt;\n";
    }
    out += "    return true;\n  };\n";
    out += "  auto next_needed = [&](int64_t kt) { while (kt < nkt && !needed(kt)) ++kt; return kt; };\n";
    // A key tile inside the mask (AttentionKernel::unmasked): every conjunct
    // holds at every corner of its box, so (affine) throughout it.
    if (k.unmasked) {
      out += "  auto inside = [&](int64_t kt) -> bool {\n" + tile_box();
      for (const auto& c : k.skip_conjuncts) out += at_corners(c, "if (!({})) return false;");
      out += "    return true;\n  };\n";
    }
    // K and V tiles: 16 bytes a cp.async when aligned, else element by element; zeros outside.
    out += "  const bool vec = t_K_ds == 1 && t_V_ds == 1 && t_K_rs % VE == 0 && t_V_rs % VE == 0 && t_K_base % VE == 0 && "
           "t_V_base % VE == 0 && t_QD % VE == 0 && t_VD % VE == 0 && (uintptr_t)Kp % 16 == 0 && (uintptr_t)Vp % 16 == 0;\n";
    if (wide_) {
      copy_part(st);
      out += "  int64_t kt = next_needed(0);\n  int stage = 0, vstage = 0;\n";
      out += "  if (kt < nkt) {\n    copy_part(Ks, Kp, t_K_base, t_K_rs, t_K_ds, 0, t_QD, kt);\n"
             "    copy_part(Vs, Vp, t_V_base, t_V_rs, t_V_ds, c0, t_VD, kt);\n  }\n  dcc_cp_async_commit();\n";
      out += "  const int64_t nq = t_QD > DP ? (t_QD + DP - 1) / DP : 1;  // the score's chunks\n";
    } else {
    out += fmt::format("  auto copy_kv = [&](int64_t kt, int st) {{\n    {0}* ks = Ks + st * STAGE;\n    {0}* vs = Vs + st * STAGE;\n", st);
    out += "    const int64_t j0 = kt * BN;\n    constexpr int CPL = LW / VE, THREADS = WARPS * 32;  // 16-byte chunks a line\n";
    // When the block's threads cover whole lines, a thread copies one
    // column chunk c of lines r0, r0 + RS, ...: one address a tile, then a
    // pointer step per line; 16 bytes a cp.async where aligned (vec), else
    // its elements one by one from the same pointer. One path for both:
    // with a second one the values only it reads stayed live across the key
    // loop (head dim 128's bf16 kernel spilled 24 bytes at its 128
    // registers, reloaded from the L2 cache before every tile's copy; the
    // aligned path alone is 1.01-1.09x faster, H200, session 37).
    out += "    if constexpr (THREADS % CPL == 0) {\n";
    out += "      constexpr int RS = THREADS / CPL;\n";
    out += "      const int r0 = (int)threadIdx.x / CPL, c = ((int)threadIdx.x % CPL) * VE;\n";
    out += "      const int64_t left = t_N - j0 - r0;  // keys from the thread's first line on\n";
    out += "      const bool ck = c < t_QD, cv = c < t_VD;\n";
    out += "      const int64_t ksp = RS * t_K_rs, vsp = RS * t_V_rs;\n";
    out += fmt::format("      const {0}* kp = Kp + (t_K_base + (j0 + r0) * t_K_rs + c * t_K_ds);\n"
                       "      const {0}* vp = Vp + (t_V_base + (j0 + r0) * t_V_rs + c * t_V_ds);\n", st);
    // The thread's lines, `body` copying line r's chunk from kp and vp.
    auto over_lines = [](const char* unroll, const std::string& body) {
      return fmt::format("#pragma {}\n        for (int it = 0; it < (BN + RS - 1) / RS; ++it) {{\n"
                         "          const int r = r0 + it * RS;\n          if (BN % RS != 0 && r >= BN) break;\n{}"
                         "          kp += ksp;\n          vp += vsp;\n        }}\n",
                         unroll, body);
    };
    out += "      if (vec) {\n" +
           over_lines("unroll", "          const bool okk = it * RS < left && ck, okv = it * RS < left && cv;\n"
                                "          dcc_cp_async16(&ks[kv_at(r, c)], okk ? kp : Kp, okk);\n"
                                "          dcc_cp_async16(&vs[kv_at(r, c)], okv ? vp : Vp, okv);\n");
    // Not unrolled: the unrolled element copies cost the long-key
    // instantiations' register allocation (spills) though they never run
    // on aligned inputs.
    out += "      } else {\n" +
           over_lines("unroll 1", fmt::format("          const bool in = it * RS < left;\n#pragma unroll 1\n"
                                              "          for (int e = 0; e < VE; ++e) {{\n"
                                              "            ks[kv_at(r, c + e)] = in && c + e < t_QD ? kp[e * t_K_ds] : ({0})0;\n"
                                              "            vs[kv_at(r, c + e)] = in && c + e < t_VD ? vp[e * t_V_ds] : ({0})0;\n"
                                              "          }}\n",
                                              st)) +
           "      }\n      return;\n    }\n";
    out += "    if (vec) {\n";
    // Otherwise a fixed number of 16-byte chunks a thread (unrolled).
    out += "#pragma unroll\n      for (int it = 0; it < (BN * CPL + THREADS - 1) / THREADS; ++it) {\n"
           "        const int u = (int)threadIdx.x + it * THREADS;\n        if (u >= BN * CPL) break;\n";
    out += "        const int r = u / CPL, c = (u % CPL) * VE;\n        const int64_t key = j0 + r;\n";
    out += "        const bool okk = key < t_N && c < t_QD, okv = key < t_N && c < t_VD;\n";
    out += "        dcc_cp_async16(&ks[kv_at(r, c)], &Kp[okk ? t_K_base + key * t_K_rs + c : 0], okk);\n";
    out += "        dcc_cp_async16(&vs[kv_at(r, c)], &Vp[okv ? t_V_base + key * t_V_rs + c : 0], okv);\n      }\n    } else {\n";
    out += "      for (int u = threadIdx.x; u < BN * LW; u += THREADS) {\n";
    out += "        const int r = u / LW, c = u % LW;\n        const int64_t key = j0 + r;\n";
    out += fmt::format("        ks[kv_at(r, c)] = key < t_N && c < t_QD ? Kp[t_K_base + key * t_K_rs + c * t_K_ds] : ({})0;\n", st);
    out += fmt::format("        vs[kv_at(r, c)] = key < t_N && c < t_VD ? Vp[t_V_base + key * t_V_rs + c * t_V_ds] : ({})0;\n", st);
    out += "      }\n    }\n  };\n";
    // The first NS - 1 needed tiles' copies, in flight while Q is read: one
    // commit group a stage, empty past the last tile, so that the key loop's
    // wait for all but the NS - 2 latest groups finds tile kt in.
    if (any_q() && !split_ && !wide_) {
      // Q's tile (QS): rows m0 .. m0 + TM - 1, zeros past M and QD, in the
      // first commit group with the first K and V tile.
      out += "  if constexpr (QS) {\n    constexpr int CPL = DP / VE, THREADS = WARPS * 32;\n"
             "    const bool qvec = t_Q_ds == 1 && t_Q_rs % VE == 0 && t_Q_base % VE == 0 && t_QD % VE == 0 && (uintptr_t)Qp % 16 == 0;\n";
      // As K's and V's copies (copy_kv): where the block's threads cover
      // whole lines, a thread copies column c of rows r0, r0 + RS, ..., one
      // address, then a pointer step a row, unrolled (the loop over chunks
      // with its divisions and 64-bit index a chunk was 8% of ncu's stall
      // samples of head dim 128's kernel on wiki128, session 31).
      out += "    bool done = false;\n    if constexpr (THREADS % CPL == 0) {\n      if (qvec) {\n"
             "        constexpr int RS = THREADS / CPL;\n"
             "        const int r0 = (int)threadIdx.x / CPL, c = ((int)threadIdx.x % CPL) * VE;\n"
             "        const int64_t left = t_M - m0 - r0;  // rows from the thread's first on\n"
             "        const bool cq = c < t_QD;\n        const int64_t qsp = RS * t_Q_rs;\n";
      out += fmt::format("        const {}* qp = Qp + (t_Q_base + (m0 + r0) * t_Q_rs + c);\n", st);
      out += "#pragma unroll\n        for (int it = 0; it < (TM + RS - 1) / RS; ++it) {\n"
             "          const int r = r0 + it * RS;\n          if (TM % RS != 0 && r >= TM) break;\n"
             "          const bool ok = it * RS < left && cq;\n"
             "          dcc_cp_async16(&Qs[swz_at(TM, r, c)], ok ? qp : Qp, ok);\n          qp += qsp;\n        }\n"
             "        done = true;\n      }\n    }\n";
      out += "    for (int u = threadIdx.x; !done && u < TM * CPL; u += THREADS) {\n"
             "      const int r = u / CPL, c = (u % CPL) * VE;\n      const int64_t row = m0 + r;\n";
      out += fmt::format("      {}* q = &Qs[swz_at(TM, r, c)];\n", st);
      out += "      if (qvec) {\n        const bool ok = row < t_M && c < t_QD;\n"
             "        dcc_cp_async16(q, &Qp[ok ? t_Q_base + row * t_Q_rs + c : 0], ok);\n      } else {\n"
             "#pragma unroll\n        for (int e = 0; e < VE; ++e)\n";
      out += fmt::format("          q[e] = row < t_M && c + e < t_QD ? Qp[t_Q_base + row * t_Q_rs + (c + e) * t_Q_ds] : ({})0;\n", st);
      out += "      }\n    }\n  }\n";
    }
    // One stage (AttentionKernel::wg_key_stages) in f32's wgmma form only:
    // the first tile copied here, each next one once every warp's S has
    // read K's big parts from the stage (V's raw copy is read by then).
    out += f32 ? "  static_assert(NS >= 2 || WG, \"two stages at least (one in the wgmma form)\");\n"
               : "  static_assert(NS >= 2, \"two stages at least\");\n";
    out += "  const int64_t kt0 = next_needed(0);\n  int64_t kc = kt0;  // the next tile to copy\n";
    out += std::string("#pragma unroll\n  for (int s = 0; s < ") + (f32 ? "(NS > 1 ? NS - 1 : 1)" : "NS - 1") + "; ++s) {\n"
           "    if (kc < nkt) {\n      copy_kv(kc, s);\n      kc = next_needed(kc + 1);\n    }\n"
           "    dcc_cp_async_commit();\n  }\n";
    out += q_rows;
    }
    // The key loop; twice when the body divides by block invariants: once
    // for blocks where none of them is 0 and none needs a scaling k (NAME_nz
    // true: the quotient is one multiply by the reciprocal, with no 0 / 0
    // check: three instructions an element fewer), once for the rest.
    const std::string s_zero = "    float s[MT][NT][4];\n#pragma unroll\n    for (int mt = 0; mt < MT; ++mt)\n#pragma unroll\n"
                               "    for (int nt = 0; nt < NT; ++nt)\n      for (int e = 0; e < 4; ++e) s[mt][nt][e] = 0.0f;\n";
    // The body of one key tile: every key of the tile inside, or the last
    // tile's. Element values live for one tile (declared there: nothing
    // carries them across tiles); the partial tile's skipped elements stay 0.
    auto tile_body = [&]() {
      auto elements = [&](bool zero) {
        for (const auto* b : k.element_scalars)
          out += fmt::format("    {} x_{}[MT][NT][4]{};\n", d.value_type(b), d.scalar(b), zero ? " = {}" : "");
      };
      full_ = true;
      if (k.unmasked) {
        // The tiles inside the mask: a copy with no compare and select.
        out += "    if (n0 + BN <= t_N && inside(kt)) {\n";
        unmasked_ = true;
        elements(false);
        for (const auto& s : k.steps) step(s);
        unmasked_ = false;
        d.unbind_all();
        out += "    } else ";
      } else {
        out += "    ";
      }
      out += "if (n0 + BN <= t_N) {\n";
      elements(false);
      for (const auto& s : k.steps) step(s);
      out += "    } else {\n      const int kn = (int)(t_N - n0);  // keys of the tile inside\n      (void)kn;\n";
      full_ = false;
      elements(true);
      for (const auto& s : k.steps) step(s);
      out += "    }\n";
    };
    // The key loop over tiles kt (the next one copied while kt is
    // computed); `wg`: the wgmma form (AttentionKernel::wgmma_dims).
    auto tile_loop = [&](bool wg) {
      out += "  int64_t kt = kt0;\n  int stage = 0, fill = NS - 1;  // tile kt's stage; the one the next copy fills\n";
      out += std::string("  while (kt < nkt) {\n    const int64_t nxt = next_needed(kt + 1);\n    dcc_cp_async_wait<") +
             (f32 ? "(NS > 1 ? NS - 2 : 0)" : "NS - 2") + ">();\n";
      // wgmma reads shared memory through the async proxy: the copies'
      // writes (generic proxy) are made visible to it before the barrier.
      if (wg) out += "    dcc_fence_proxy_async();\n";
      out += "    __syncthreads();  // tile kt is in; every warp is done with stage `fill` (the previous tile's)\n";
      const std::string copy = "    if (kc < nkt) {\n      copy_kv(kc, fill);\n      kc = next_needed(kc + 1);\n    }\n"
                               "    dcc_cp_async_commit();\n";
      if (!(wg && f32)) out += copy;
      out += "    const int64_t n0 = kt * BN;\n";
      if (wg && f32) {
        // f32: the tile's tf32 parts made by the block, then the next
        // tile's copy, then S (the copy issued before the conversion, the
        // membar of the proxy fence after it waited for it: long-scoreboard
        // stalls there in ncu's samples, session 30).
        // One stage: the next tile's copy once every warp's S has read
        // the stage (a barrier only where there is a next tile).
        out += attn_f32::convert(split()) + "    if constexpr (NS > 1) {\n" + copy + "    }\n" + attn_f32::wg_scores(split()) +
               "    if constexpr (NS == 1) {\n      if (kc < nkt) {\n"
               "        __syncthreads();  // every warp's S has read K's parts in the stage\n"
               "        copy_kv(kc, 0);\n        kc = next_needed(kc + 1);\n      }\n      dcc_cp_async_commit();\n    }\n";
        wg_ = true;
        tile_body();
        wg_ = false;
      } else if (wg) {
        // Every warp of the warpgroup issues the MMAs.
        out += attn16::wg_scores(k.elem, any_q());
        wg_ = true;
        tile_body();
        wg_ = false;
      } else {
        // S = Q K^T. A warp whose rows all lie past the end (short
        // sequences in a long query tile) only copies and meets the barriers.
        out += "    if (m0 + wm0 < t_M) {\n";
        out += s_zero;
        out += fmt::format("    const {}* ks = Ks + stage * STAGE{};\n", st, warp_cols());
        if (f32) out += attn_f32::s_sync(split());
        else out += attn16::s_sync(k.elem);
        if (split_) split_sum();
        tile_body();
        out += "    }  // the warp's rows\n";
      }
      out += "    stage = stage + 1 == NS ? 0 : stage + 1;\n    fill = fill + 1 == NS ? 0 : fill + 1;\n    kt = nxt;\n  }\n";
    };
    auto key_loop = [&]() {
      if (wide_) {
        out += "  while (kt < nkt) {\n    const int64_t nxt = next_needed(kt + 1);\n";
        // The score chunk by chunk: K's chunk qc + 1 (or the next tile's
        // first, with that tile's V in V's other stage) is copied while
        // chunk qc is multiplied.
        out += s_zero;
        out += "    for (int64_t qc = 0; qc < nq; ++qc) {\n";
        out += "    dcc_cp_async_wait<0>();\n    __syncthreads();  // chunk qc is in; every warp is done with the other stage\n";
        out += "    if (qc + 1 < nq) {\n      copy_part(Ks + (stage ^ 1) * (BN * LINE), Kp, t_K_base, t_K_rs, t_K_ds, (qc + 1) * DP, t_QD, kt);\n"
               "    } else if (nxt < nkt) {\n      copy_part(Ks + (stage ^ 1) * (BN * LINE), Kp, t_K_base, t_K_rs, t_K_ds, 0, t_QD, nxt);\n"
               "      copy_part(Vs + (vstage ^ 1) * (BN * LINE), Vp, t_V_base, t_V_rs, t_V_ds, c0, t_VD, nxt);\n    }\n";
        out += "    dcc_cp_async_commit();\n    if (m0 + wm0 < t_M) {\n";
        out += q_load("qc * DP", "    ");
        out += fmt::format("    const {}* ks = Ks + stage * (BN * LINE);\n", st);
        if (f32) out += attn_f32::s_sync(split());
        else out += attn16::s_sync(k.elem);
        out += "    }\n    stage ^= 1;\n    }\n    const int64_t n0 = kt * BN;\n    if (m0 + wm0 < t_M) {\n";
        tile_body();
        out += "    }  // the warp's rows\n    vstage ^= 1;\n    kt = nxt;\n  }\n";
      } else if (!split_) {
        out += "  if constexpr (WG) {\n";
        tile_loop(true);
        out += "  } else {\n";
        tile_loop(false);
        out += "  }\n";
      } else {
        tile_loop(false);
      }
    };
    std::vector<std::string> nz;
    for (const auto& inv : k.invariants)
      if (inv.divisor) nz.push_back(inv.name);
    if (nz.empty()) {
      key_loop();
    } else {
      std::string cond, yes, no;
      for (const auto& n : nz) {
        cond += (cond.empty() ? "" : " && ") + n + " != 0.0f && " + n + "_k == 1.0f";
        yes += fmt::format("    constexpr bool {}_nz = true;\n", n);
        no += fmt::format("    constexpr bool {}_nz = false;\n", n);
      }
      out += "  if (" + cond + ") {\n" + yes;
      key_loop();
      out += "  } else {\n" + no;
      key_loop();
      out += "  }\n";
    }
    catch_up();
    stores();
    out += "}\n\n";
    return out;
  }
};

}  // namespace

std::string print_attention(const AttentionKernel& k, AttnDeviceText& d) {
  Printer p{k, d, ""};
  std::string o = fmt::format("// {}: fused attention (dccc --emit=kernel shows its kernel IR)\n", k.name);
  o += fmt::format("struct {}__launch {{\n  {} a;\n  const int32_t* tiles;\n  int64_t ntiles;\n  unsigned* counter;  // AttnGrid::Atomic: zeroed before the launch\n}};\n\n",
                   k.name, d.args_type());
  // The wgmma shapes the instantiations use (AttentionKernel::wgmma_dims):
  // S's m64 x keys-a-tile (K K-major), O's m64 x head dim (V transposed).
  // S's A (Q): registers, or shared memory (AttentionKernel::q_smem).
  auto qa = [&](int dp, bool long_keys) { return attention_q_smem(k, dp, long_keys) ? WgmmaA::SharedK : WgmmaA::Registers; };
  if (k.elem == Elem::F32) {  // S: both from shared memory; P V: P's fragments, V transposed (K-major)
    for (int dp : k.head_dims)
      for (bool long_keys : {false, true}) {
        if (!attention_f32_wgmma(k, dp, long_keys)) continue;
        o += wgmma_function(k.elem, long_keys ? attention_long_tile_n(k, dp) : attention_wg_tile_n(k, dp), WgmmaA::SharedK, false);
        o += wgmma_function(k.elem, dp, WgmmaA::Registers, false);
      }
  }
  for (int dp : k.wgmma_dims) {
    if (k.elem == Elem::F32) continue;
    o += wgmma_function(k.elem, attention_tile_n(k, dp), qa(dp, false), false);
    if (attention_long_tile_n(k, dp)) o += wgmma_function(k.elem, attention_long_tile_n(k, dp), qa(dp, true), false);
    o += wgmma_function(k.elem, dp, WgmmaA::Registers, true);
  }
  o += p.body();
  for (bool split : {true, false}) {
    if (split ? !k.split : !k.wide) continue;
    Printer w{k, d, ""};
    (split ? w.split_ : w.wide_) = true;
    o += w.body();
  }
  return o + print_attention_wrappers(k);
}

}  // namespace dccc::gpu
