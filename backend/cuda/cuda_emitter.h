// The CUDA code generator's per-function state (internal to backend/cuda).
//
// FuncEmitter writes one storage-lowered ir::Func as CUDA C++: its kernels
// and its host code (backend/cuda/cuda_codegen.h states what the generated
// source defines). Its members are defined in one file per responsibility,
// the decisions apart from the printing (issue 16 turns the first into a
// planner and the rest into a printer of its kernel IR):
//   cuda_codegen.cpp    the function: one kernel per top-level statement,
//                       then the launcher and the host entry
//   kernel_plans.cpp    decisions: which kernel shape a statement takes
//                       (register tiles, shared-memory contraction, a warp
//                       per row, hfused ranges) and the facts they rest on
//   kernels.cpp         kernels of the default mapping, of gpu_blocks /
//                       gpu_threads, of hfused ranges, of a warp per row
//   tiled_kernels.cpp   contraction kernels: register tiles, block tiles
//   device_code.cpp     expressions and statements as device code
//   host_code.cpp       f__cuda (prelude, uploads, launches) and f__cuda_host
//   host_steps.cpp      decisions: what the launcher does around each
//                       statement (host copies of what kernels compute,
//                       statements run on the host, late allocations)
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backend/abi/c_emit.h"
#include "backend/cuda/cuda_codegen.h"
#include "backend/cuda/host_steps.h"
#include "backend/gpu/kernel_ir.h"
#include "ir/ir.h"

namespace dccc::backend {

namespace cudagen {

using ir::BinOp;
using ir::BufferKind;
using ir::BufferNode;
using ir::ExprKind;
using ir::StmtKind;
using ir::UnOp;

/// `what` on the CUDA target, at `at` (the statement or declaration).
[[noreturn]] void unsupported(SourceRange at, const std::string& what);

// device_code.cpp
/// Type of a value in registers: 16-bit floats compute in f32 and are
/// rounded to their type after every operation, as on the CPU target.
const char* value_type(Scalar t);
const char* unsigned_type(Scalar t);
std::string round_to(Scalar t, const std::string& v);
double round_bf16_host(double v);
std::string float_literal(double v, Scalar t);

// host_code.cpp
/// A launcher's statements (8 spaces in) that set `sms` and `occ`, the
/// device's SMs and the blocks of `kernel` (`threads`, `smem` bytes) an SM
/// holds, failing the call when they cannot be read; then a persistent
/// grid is min(entries, kPersistentBlocks).
std::string persistent_grid_sizing(const std::string& kernel, int threads, const std::string& smem);
inline constexpr const char* kPersistentBlocks = "std::min<int64_t>(ntiles, (int64_t)std::max(occ, 1) * std::max(sms, 1))";

/// The shape of the shared-memory contraction kernels: outputs per thread
/// along X and along Y (4 or 8; a block of 16 x 16 threads then covers 64
/// or 128 of each), reduction values staged per step, and the minimum
/// resident blocks asked of ptxas. DCCC_CUDA_GEMM="TX,TY,STEP,MIN" overrides
/// it (for measuring alternatives; bench/README.md). Measured on an H100,
/// mha f32 at B = 128, race / squad / mnli ms (bench/RESULTS.md): 8,4,16,2
/// 2.66 / 1.13 / 0.26; 8,4,8,2 2.71 / 1.03 / 0.24; 4,4,16,3 2.82 / 1.14 /
/// 0.23; 8,8,8,1 3.69 / 1.55 / 0.34. 8,4,8,2: 128-row tiles for long
/// sequences (race), about even with 64-row ones on short ones (mnli).
struct GemmShape {
  int tile_x = 8, tile_y = 4, step = 8, min_blocks = 2;
};
/// The shape in use (kernel_plans.cpp).
const GemmShape& gemm_shape();

/// Emits one function: its kernels and host code.
class FuncEmitter {
 public:
  FuncEmitter(const ir::Func& f, std::string& out, const CudaOptions& options = {})
      : f_(f), out_(out), options_(options), names_(f) {
    host_.names = &names_;
    host_.at = f.at;
    host_.length_check = [this](const std::string& cond, const std::string& index, const std::string& value,
                                const std::string& name, const std::string& pad) {
      return length_check(cond, index, value, name, pad);
    };
  }

  /// A computed length's check on the host (an on_host statement of the
  /// launcher; host_code.cpp), failing as a fetched length array's check.
  std::string length_check(const std::string& cond, const std::string& index, const std::string& value,
                           const std::string& name, const std::string& pad) const;

  /// Writes the function's kernels, launcher and host entry (cuda_codegen.cpp).
  void run();
  /// True once run() has written a tensor-core kernel (it needs gpu::kMmaPrologue).
  bool wrote_mma() const { return wrote_mma_; }

  /// The tensor-core kernel of top-level statement `item`, named `name`, or
  /// nullopt with `why` (cuda_codegen.cpp; gpu/plan_contraction.h).
  std::optional<gpu::Kernel> plan_mma(const ir::Stmt& item, const std::string& name, std::string* why = nullptr);
  /// The fused attention kernel of `item`, or nullopt with `why`
  /// (attention_kernels.cpp; gpu/plan_attention.h).
  std::optional<gpu::AttentionKernel> plan_attention(const ir::Stmt& item, const std::string& name,
                                                     std::string* why = nullptr);

 private:
  struct Launch {
    std::string kernel;
    /// The statement runs on the host (HostStep::on_host): no kernel.
    bool on_host = false;
    bool parallel = false;
    ir::Stmt outer;                  // the loop on blockIdx.y (or on x when `inner` is empty)
    std::vector<ir::Stmt> inner;     // loops flattened over threads
    int tile_x = -1, tile_y = -1;    // indices into `inner` of the register-tiled loops
    bool block_tiles = false;        // a block per kBlockX x kBlockY tile (emit_gemm_kernel)
    bool warp_rows = false;          // a warp per iteration (emit_warp_rows_kernel)
    /// gpu_blocks / gpu_threads (emit_mapped_kernel): the grid's loops, the
    /// conditions (host-computable) right inside the first, threads per block.
    const ir::GpuMapping* mapping = nullptr;
    std::vector<ir::Stmt> blocks;
    std::vector<ir::Expr> grid_guards;
    int block_dim = 0;
    /// An `hfuse`d loop (emit_ranges_kernel): per range of its iterations,
    /// the condition (none for the last) and the loops flattened over threads.
    std::vector<std::pair<ir::Expr, std::vector<ir::Stmt>>> ranges;
    /// A tensor-core kernel printed from the kernel IR (gpu/print_cuda.h):
    /// a block per entry of a tile list the launcher builds on the host.
    std::shared_ptr<const gpu::Kernel> mma;
    /// The statement only checks an inlined call's `where` (asserts in
    /// loops): the launcher waits for it and reads the error flag before
    /// the next kernel, which may rely on the constraint.
    bool checks = false;
    /// A fused attention kernel (gpu/print_attention.h): a block per
    /// (batch entry, query tile), the list built longest-first on the host.
    std::shared_ptr<const gpu::AttentionKernel> attn;
  };

  /// Register tiling (unroll-and-jam) of a contraction: each thread computes
  /// kTile x kTile outputs over two parallel loops X and Y, so that a load
  /// that does not depend on Y is made once for all y, and vice versa. The
  /// innermost parallel body must be `pre; R; post` where R is a perfect
  /// nest of reduction loops whose extents do not mention X or Y, whose
  /// innermost statements only update private scalars, and in which some
  /// load ignores X and some other load ignores Y (otherwise nothing is
  /// reused and tiling only adds registers).
  static constexpr int kTile = 4;
  /// A parallel body `pre; nest; post`: one loop, the statements around it loop-free.
  struct LoopSplit {
    std::vector<ir::Stmt> pre, post;
    ir::Stmt nest;
  };

  struct TilePlan : LoopSplit {      // nest: R
    int x = -1, y = -1;
  };

  /// Shared-memory tiling of a contraction (a GEMM inside a loop nest): when
  /// the register-tiling plan's reduction nest is one loop r whose body is
  /// `acc = acc + [cast](P * Q)`, P ignoring Y and Q ignoring X, a block of
  /// kGemmThreads threads computes a kBlockX x kBlockY tile of (X, Y). Each
  /// step stages P over (x, r) and Q over (y, r) for kStep values of r in
  /// shared memory, threads taking adjacent elements along the operand's
  /// unit-stride index (coalesced), and every thread accumulates kTileX x
  /// kTileY outputs from there (8 x 8: 64 FMAs for four 16-byte
  /// shared-memory reads). Elements outside the iteration space are staged
  /// as zeros: 0 * 0 adds exactly +0 to a sum, so the results are those of
  /// the plain loop.
  // A block has 16 x 16 threads; each computes kTileX x kTileY outputs, so
  // a block tile is kBlockX x kBlockY (64 or 128 each).
  static constexpr int kSide = 16, kGemmThreads = kSide * kSide;
  const int kStep = gemm_shape().step, kTileX = gemm_shape().tile_x, kTileY = gemm_shape().tile_y;
  const int kBlockX = kSide * kTileX, kBlockY = kSide * kTileY, kGemmMinBlocks = gemm_shape().min_blocks;
  struct GemmPlan {
    ir::Expr p, q;                        // the factors: p ignores Y, q ignores X
    ir::Stmt update;                      // acc = acc + [cast](p * q)
    bool p_r_fast = true, q_r_fast = true;  // unit stride along r (else along x or y)
  };

  /// A row reduction with a warp per row: the innermost parallel body is
  /// `acc = identity; for r { acc = acc OP e }; post` with OP one of +, max,
  /// min on floats. Lane l folds r = l, l + 32, ...; the lanes' partial
  /// results are combined by shuffles and lane 0 runs `post`. Adjacent lanes
  /// read adjacent r (coalesced when r is the unit-stride index). Sums are
  /// reassociated (a different rounding from the serial loop, well within
  /// the tests' tolerance); max and min are exact.
  struct WarpPlan : LoopSplit {  // nest: the reduction loop
    ir::Stmt update;        // acc = OP(acc, e)
    ir::Expr operand;       // e
  };

  // ---- Decisions (kernel_plans.cpp) ----
  static std::optional<LoopSplit> split_at_loop(const ir::Stmt& body);
  std::optional<TilePlan> plan_tiling(const Launch& l, const ir::Stmt& body);
  static bool unit_stride(const ir::Expr& e, const ir::Var& v);
  std::optional<GemmPlan> plan_gemm(const Launch& l, const TilePlan& t);
  std::optional<WarpPlan> plan_warp_rows(const ir::Stmt& body);
  static ir::Stmt only_loop(const ir::Stmt& body);
  bool plan_ranges(const ir::Stmt& item, Launch& l);
  static ir::Expr coefficient(const ir::Expr& e, const ir::Var& v);
  static void flat_offsets(const ir::Expr& e, std::vector<ir::Expr>& out);
  static void flat_offsets(const ir::Stmt& st, std::vector<ir::Expr>& out);

  // ---- Kernels (kernels.cpp) ----
  void hoist_outer_loads(const ir::Stmt& item);
  Launch emit_kernel(const ir::Stmt& item, int index);
  void emit_mapped_kernel(const ir::Stmt& item, Launch& l);
  void emit_ranges_kernel(const ir::Stmt& item, Launch& l);
  void emit_warp_rows_kernel(const Launch& l, const WarpPlan& w);
  void emit_mma_kernel(Launch& l, const gpu::Kernel& k);  // cuda_codegen.cpp
  void emit_attention_kernel(Launch& l, const gpu::AttentionKernel& k);  // attention_kernels.cpp
  /// True (with `why`) when a schedule maps `item` with gpu_blocks /
  /// gpu_threads, which the GPU planners then leave alone.
  bool schedule_maps(const ir::Stmt& item, std::string* why) const;

  /// Vloop pieces in device code as the other kernels print them, for a GPU
  /// planner's printer (Base: gpu::DeviceText or gpu::AttnDeviceText).
  template <class Base>
  struct PieceText : Base {
    FuncEmitter& e;
    explicit PieceText(FuncEmitter& fe) : e(fe) {}
    std::string var(const ir::Var& v) override { return e.var(v); }
    std::string expr(const ir::Expr& x) override { return e.expr(x); }
    std::string stmts(const std::vector<ir::Stmt>& ss, int depth) override {
      std::string out;
      for (const auto& s : ss) e.stmt(s, depth, out);
      return out;
    }
    std::string buffer(const BufferNode* b) override { return e.buf_ptr(b); }
    std::string scalar(const BufferNode* b) override { return e.scalar_ref(b); }
    std::string declare(const BufferNode* b) override {
      return fmt::format("{} {} = 0;", cudagen::value_type(b->type), e.scalar_ref(b));
    }
    std::string args_type() override { return e.f_.name + "__args"; }
    std::string expr_unrounded(const ir::Expr& x) override { return e.expr_unrounded(x); }
  };

  // ---- Contraction kernels (tiled_kernels.cpp) ----
  void emit_tiled_kernel(const Launch& l, const TilePlan& plan);
  std::string tile_lanes(const std::string& vx, const std::string& xf, const std::string& vy, const std::string& yf,
                         int depth, bool guard, const std::function<void(std::string&, int)>& inner,
                         int lanes = kTile, int lanes_y = 0);
  void emit_pre(const TilePlan& plan, const std::function<std::string(int, bool, const std::function<void(std::string&, int)>&)>& lanes,
                std::string& body);
  std::vector<std::pair<const ir::ExprNode*, std::string>> hoist_affine(const std::vector<ir::Expr>& offsets, const ir::Var& u,
                                                                      const std::string& u0, const ir::Var& w,
                                                                      const std::string& w0, const std::string& name,
                                                                      std::string& decl);
  void emit_gemm_kernel(const Launch& l, const TilePlan& plan, const GemmPlan& g);

  // ---- Device code (device_code.cpp) ----
  std::string var(const ir::Var& v);
  std::string buf_ptr(const BufferNode* b);
  std::string scalar_ref(const BufferNode* b);
  std::string load_value(const BufferNode* b, const std::string& lvalue);
  std::string store_value(Scalar t, const std::string& v);
  std::string cast(const std::string& v, Scalar from, Scalar to);
  std::string expr(const ir::Expr& e);
  /// A 16-bit value `e` as the f32 it is rounded from (a cast from f32, or a
  /// 16-bit operation computed in f32): what a pack of two such values
  /// (cvt.rn.bf16x2 / f16x2) rounds to the same bits. Else expr(e).
  std::string expr_unrounded(const ir::Expr& e);
  void note_div16(const ir::ExprNode& cast);
  std::string unary(const ir::Expr& e);
  std::string binary(const ir::Expr& e);
  void stmt(const ir::Stmt& s, int depth, std::string& out);
  static std::string indent_text(const std::string& text, int delta);
  static std::string indent(const std::string& text, int extra);
  void declare_private(std::string& body, int depth);
  std::vector<const BufferNode*> private_in_order() const;

  // ---- Host code (host_code.cpp) ----
  void check_host_computable();
  LaunchReads launch_reads(const Launch& l) const;
  std::string fetch(const BufferNode* b);
  std::string allocate_local(const BufferNode* b);
  std::string size_decls() const;
  void emit_launcher(const std::vector<Launch>& launches);
  std::string assert_errors(const std::string& pad) const;
  std::string mma_launch(const Launch& l);
  std::string attention_launch(const Launch& l);  // attention_kernels.cpp
  std::string tile_list(const std::string& kernel, const std::string& build, int width);
  void emit_host_entry();
  std::vector<ir::Buffer> aux_sized_later() const;
  std::vector<ir::Stmt> prelude_items() const;
  bool fills(const ir::Stmt& item, const ir::Buffer& b) const;

  const ir::Func& f_;
  std::string& out_;
  const CudaOptions options_;
  bool wrote_mma_ = false;
  const CNames names_;  // C names of the buffers and sizes (c_emit.h)
  std::map<const BufferNode*, int> slot_;
  std::map<std::string, int> size_index_;
  CEmitter host_;  // host code: totals, the prelude, launch sizes
  std::map<const ir::VarNode*, std::string> vars_;
  std::set<const BufferNode*> private_;
  /// Scalars some kernel reads or writes in device memory (not private).
  std::set<const BufferNode*> in_memory_;
  /// Local tensors that every kernel touching them keeps in registers (the
  /// fused attention kernel's output accumulator): not allocated.
  std::set<const BufferNode*> in_registers_;
  /// True when some kernel divides integers or checks a `where` and may
  /// set the error flag.
  bool uses_err_ = false;
  /// The texts of the `where` constraints kernels check: the flag value
  /// kFirstAssert + k says constraint k was violated (1 and 2 are integer
  /// division's).
  static constexpr int kFirstAssert = 3;
  std::vector<std::string> asserts_;
  bool tiled_ = false;  // private scalars are kTile x kTile register arrays
  std::map<const ir::ExprNode*, std::string> override_;  // expressions already in registers
  std::map<const ir::ExprNode*, std::string> divisor_;   // divisions rounded to 16 bits by NAME: NAME_k, NAME_r precomputed
  // f32 divisions by NAME (gpu::AttentionKernel::Invariant::divisor32):
  // NAME_q (its reciprocal) and NAME_f precomputed; where fdiv_flag_ names
  // a bool in scope, printed as dcc_fdiv_pre(a, NAME, NAME_q, flag).
  std::map<const ir::ExprNode*, std::string> divisor32_;
  std::string fdiv_flag_;
  const ir::ExprNode* div16_ = nullptr;                   // the f32 division a cast being printed rounds to 16 bits
  std::set<const ir::ExprNode*> finite_sub_;              // float subtractions with an operand known finite: plain a - b
  std::map<std::string, std::string> hoisted_;           // loads made once per outer iteration
  std::string outer_prefix_;                              // their declarations
  std::set<const BufferNode*> host_len_;
  /// What the launcher does around each statement (host_steps.h).
  HostPlan plan_;
  /// Input arrays the host code reads (lengths): a tile list's cache key.
  std::set<const BufferNode*> key_arrays_;
};

}  // namespace cudagen
}  // namespace dccc::backend
