// The GPU kernel IR: plain data that says everything the CUDA printer
// (backend/gpu/print_cuda.h) needs and nothing it must decide (issue 16;
// docs/cuda.md, "The kernel IR").
//
// A planner (backend/gpu/plan_*.cpp, one per kind of loop nest) reads one
// top-level statement of a storage-lowered vloop function and fills a
// Kernel; the printer turns it into CUDA C++, and `dccc --emit=kernel`
// prints it as text (print_kernel, below). Today one kind exists: a tiled
// tensor-core contraction (plan_contraction.h), so the structure is that of
// its kernel -- a grid over a ragged tile list, a block of warps each owning
// a warp tile of MMA fragments, operands staged through shared memory in
// K-steps, and an epilogue of the vloop's own statements per output element.
//
// Vloop expressions (extents, base offsets, strides, the epilogue) stay
// vloop IR (ir::Expr / ir::Stmt over the statement's own loop variables):
// the printer prints them with the CUDA backend's expression printer, with
// those variables bound as this IR says.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace dccc::gpu {

/// Element types of operands in memory.
enum class Elem { F32, BF16, F16 };
const char* elem_name(Elem e);
int elem_bytes(Elem e);

/// How f32 operands reach the tensor cores (`--fp32-math`):
///   Split3xTf32  each x is split into big = tf32(x) and small = tf32(x - big);
///                acc += a_small*b_big + a_big*b_small + a_big*b_big (three
///                MMAs; about f32 accuracy) -- the default
///   Tf32         one MMA on tf32(a), tf32(b) (10-bit mantissas)
///   Ieee         no tensor cores: the contraction keeps the FMA kernel of
///                backend/cuda (the planner declines it)
enum class Fp32Math { Split3xTf32, Tf32, Ieee };
const char* fp32_math_name(Fp32Math m);

/// The division whose quotient `e` rounds to 16 bits, or null: `e` itself
/// when it is a bf16 / f16 division, the f32 division under `e` when `e`
/// casts one to bf16 / f16 (`bf16(o / row_sum)`, FlashAttention-2's
/// precision in mha_bf16_f32_scores.toy). Either may be computed as a
/// multiply by the divisor's scaled reciprocal (dcc_fdiv16_pre; docs/cuda.md,
/// "16-bit results"): within 2^-22 of the exact quotient, which the 16-bit
/// rounding hides but at a rounding midpoint.
const ir::ExprNode* rounded16_division(const ir::ExprNode& e);

/// A store that a thread may write two adjacent columns of as one word: one
/// flat store of a bf16, f16 or f32 tensor element, of its value's type, at
/// an index affine in the column `col` with coefficient 1. `row_index` is
/// that index at column 0 (where it is even, with the tensor aligned, the
/// pair is one `bits`-wide store: 32 for 16-bit elements, 64 for f32).
struct StorePair {
  ir::Expr row_index;
  int bits = 32;
};
std::optional<StorePair> store_pair(const ir::Stmt& s, const ir::Var& col);

/// One warp-wide `mma.sync` shape, operand type included, or a warpgroup's
/// `wgmma` (sm_90a); the accumulator is always f32 (four registers per lane
/// for an m16n8 tile).
enum class MmaShape {
  M16N8K16_BF16,  // mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
  M16N8K16_F16,   // mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
  M16N8K8_TF32,   // mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
  /// wgmma.mma_async.sync.aligned.m64nNk16.f32.bf16.bf16 (f16: .f16.f16)
  /// with both operands in shared memory by descriptor: the warpgroup of
  /// warps 4g .. 4g + 3 multiplies rows 64g .. 64g + 63 of the block tile by
  /// all N = warp_n of its columns; a lane's D registers are, in order, the
  /// m16n8 tiles' of its warp's 16 rows (so the warp tiling is warps_m x 1
  /// warps of 16 x N and the epilogue reads them as mma.sync's).
  WGMMA_BF16,
  WGMMA_F16,
  /// wgmma.mma_async.sync.aligned.m64nNk8.f32.tf32.tf32, both operands
  /// K-major in shared memory by descriptor (tf32 has no MN-major form):
  /// f32 operands rounded to tf32 (and split, for 3xTF32) by the producers
  /// as they store them (CopyMode::SplitTf32); D as WGMMA_BF16's.
  WGMMA_TF32,
};
bool is_wgmma(MmaShape s);
const char* mma_name(MmaShape s);
int mma_k(MmaShape s);

/// One loop of the statement that the grid enumerates: a tile-list entry
/// holds a value of each (outermost first).
struct BatchLoop {
  ir::Var var;
  ir::Expr extent;  // mentions only the batch loops outside it
};

/// The grid: one thread block per entry (batch indices..., m-tile, n-tile)
/// of a tile list that the host builds from the lengths before the launch
/// (rows and cols evaluated per batch entry; empty tiles are never listed,
/// so zero-length rows or columns cost nothing).
struct TileList {
  std::vector<BatchLoop> batch;
  ir::Expr rows, cols;  // M and N of one batch entry (mention only batch vars)
  int tile_m = 64, tile_n = 64;
};

/// A value computed once per block from its tile-list entry (an extent, a
/// base offset, a stride): a vloop expression over the batch variables.
struct TileScalar {
  std::string name;
  ir::Expr value;
  /// Fused attention: the int32 offset in the tile-list entry where the host
  /// stored the value (int64, low half first; AttentionKernel::entry_width);
  /// -1: the block computes it.
  int entry = -1;
};

/// Shared-memory layout of a staged operand tile of `rows` x `k` elements:
/// RowK stores [row][k] (k contiguous), KRow stores [k][row]; each line is
/// padded by `pad` elements (bank conflicts of the fragment reads).
enum class SmemLayout { RowK, KRow };

struct SharedBuffer {
  std::string name;
  Elem elem = Elem::F32;
  int stages = 2, rows = 64, k = 16, pad = 0;
  SmemLayout layout = SmemLayout::RowK;
  int line() const { return (layout == SmemLayout::RowK ? k : rows) + pad; }  // elements per padded line
  int stage_elems() const { return parts * (layout == SmemLayout::RowK ? rows : k) * line(); }
  /// XOR swizzle instead of padding (`swizzle_mask` 0: none): the 16-byte
  /// chunk c of line l is stored at chunk c ^ ((l >> swizzle_shift) &
  /// swizzle_mask) of that line, so that eight consecutive lines' chunk c
  /// -- one 8 x 8 matrix of an ldmatrix -- fall in eight different groups
  /// of four banks (docs/cuda.md, "Shared-memory layout").
  int swizzle_shift = 0, swizzle_mask = 0;
  /// wgmma's 128-byte swizzled layout (0: none): each line is cut into
  /// atoms of `atom` elements (128 bytes) and atom a of every line is stored
  /// before atom a + 1 of any: element `in` of line l at (in / atom) x lines
  /// x atom + l x atom + in % atom, its 16-byte chunk swizzled by l & 7
  /// (the swizzle fields above are then unused). A stage then starts at a 1024-byte
  /// boundary and so does each atom block (lines a multiple of 8), which is
  /// what a descriptor with base offset 0 describes (docs/cuda.md, "wgmma").
  int atom = 0;
  int lines() const { return layout == SmemLayout::RowK ? rows : k; }
  /// Copies of the tile a stage holds, one after the other: 2 for 3xTF32
  /// on wgmma (the big parts tf32(x), then the small ones tf32(x - big);
  /// CopyMode::SplitTf32), else 1. stage_elems() counts them all.
  int parts = 1;
  int part_elems() const { return (layout == SmemLayout::RowK ? rows : k) * line(); }
};

/// An MMA operand in global memory: element (row, k) of one batch entry is
/// at `buffer[base + row * row_stride + k * k_stride]` (TileScalars), for
/// row < `rows` and k < the kernel's `k_extent`. A's rows are the output's
/// rows (M), B's its columns (N).
struct Operand {
  std::string name;  // "A" or "B"
  const ir::BufferNode* buffer = nullptr;
  Elem elem = Elem::F32;
  std::string base, row_stride, k_stride, rows;  // TileScalar names
  std::string shared;                             // its SharedBuffer
  /// 16-bit operands: fragments read by `ldmatrix.sync.aligned.m8n8.x4`
  /// (four 8 x 8 matrices a warp), `.trans` when the shared lines run along
  /// the other index than the fragment's pairs (A staged [k][row], B staged
  /// [k][row]); otherwise by plain loads.
  bool ldmatrix = false, ldmatrix_trans = false;
  /// When set, an element is not the loaded value but this f32 expression
  /// of it (vloop IR; the load at `buffer[base + row * row_stride + k *
  /// k_stride]` is its only part that depends on k), with `row_var` and
  /// `k_var` bound to the element's row and k: attention's weights
  /// exp(scores - row_max). Copied through registers (CopyMode::Registers).
  ir::Expr value;
  ir::Var row_var, k_var;
};

/// How one K-step of an operand goes from global to shared memory. Each
/// thread copies elements e = threadIdx.x + threads * u of the tile, taken
/// in the shared buffer's line order (adjacent threads, adjacent elements
/// along the contiguous dimension); an element outside [0, rows) x [0, K)
/// is stored as zero (0 * 0 adds +0 to a sum, so ragged edges need no
/// other guard).
enum class CopyMode {
  CpAsync4,   // `cp.async.ca.shared.global` of 4 bytes, zero-filled by src-size 0 (sm_80+)
  Registers,  // a load into a register, then a store to shared memory
  /// f32 to a K-major wgmma tile (WGMMA_TF32): 4 elements a load (16 bytes
  /// where the operand is aligned as for `vector`, else one by one with
  /// bounds), each rounded to tf32 -- and with 2 parts its remainder too
  /// (SharedBuffer::parts) -- and stored as 16-byte chunks of the tile's
  /// lines. `transpose`: the operand is contiguous along its rows (B[k][n]),
  /// so a thread loads 4 k x 4 rows and transposes them in registers.
  /// A producer's loads of a step are issued before it waits for the stage
  /// to be empty (registers, not shared memory), its stores after.
  SplitTf32,
};

/// With `vector` > 1, a block whose operand is aligned for it copies
/// `vector` adjacent elements (16 bytes) along the contiguous dimension with
/// one `cp.async.cg ... 16` (zero-filled as a whole): when that dimension's
/// stride is 1, the other stride, the base offset and the extent of the
/// contiguous dimension are multiples of `vector`, and the buffer's address
/// is 16-byte aligned -- checked at run time per block, since ragged rows
/// may be of any length. Otherwise it copies element by element by `mode`.
struct Copy {
  std::string operand;
  CopyMode mode = CopyMode::Registers;
  int vector = 1;
  /// How far the element-by-element loop is unrolled (0: fully). A K-step
  /// of 64 has 32 elements a thread of each operand; unrolled fully with
  /// their 64-bit addresses, nvcc spills (2.4 KB a thread for the wgmma form).
  int element_unroll = 0;
  /// The 16-byte copies' global addresses once a block instead of once a
  /// K-step (computed a step, their 64-bit products, bounds and selects had
  /// been 60% of session 23's wgmma form's executed instructions: ncu, H200,
  /// bench/RESULTS.md session 23), where the copying threads cover whole
  /// lines of the tile (their count a multiple of the 16-byte chunks a
  /// line): a thread's copy u is its first one `step` lines on (step =
  /// threads / chunks a line), at the same place in the line, so one
  /// pointer a thread (moved on by step lines a copy, and a step by kt x
  /// block_k x the k stride) and one row bound serve all its copies; a step
  /// with block_k of k left checks only the rows. (A pointer and a flag a
  /// copy made ptxas spill 672 bytes in the warp-specialized form.)
  bool linear_addresses = false;
  /// SplitTf32: the operand's unit-stride index is its row (above).
  bool transpose = false;
};

/// The main loop over K-steps, as operations in program order:
/// `prologue` runs once (kt = 0), `body` once per K-step `kt`; K-step s
/// lives in stage s % stages, so later steps are filled while step kt is
/// computed.
enum class OpKind {
  CopyNext,   // the Copy of `operand` for K-step kt + `ahead` into its stage (none past the last step)
  Commit,     // cp.async.commit_group
  WaitPrior,  // cp.async.wait_group `count` (at most `count` groups still in flight)
  Barrier,    // __syncthreads
  MmaStep,    // the warp's MMAs over the K-step's block_k values from the current stage
};

struct Op {
  OpKind kind;
  std::string operand;  // CopyNext
  int count = 0;        // WaitPrior: groups left in flight; CopyNext: steps ahead of kt
};

/// The warps of a block and their fragments: warp w owns the warp tile at
/// rows (w / warps_n) * warp_m, columns (w % warps_n) * warp_n of the block
/// tile, as frags_m x frags_n MMA tiles of 16 x 8.
struct WarpTiling {
  int warps_m = 2, warps_n = 2, warp_m = 32, warp_n = 32;
  int frags_m() const { return warp_m / 16; }
  int frags_n() const { return warp_n / 8; }
};

struct Mma {
  MmaShape shape = MmaShape::M16N8K16_BF16;
  Fp32Math fp32 = Fp32Math::Split3xTf32;  // for M16N8K8_TF32 only
  /// Each K-step's MMAs accumulate into a fragment that starts at zero,
  /// which is then added to the running sum with f32 adds (round to
  /// nearest). The tensor core truncates every sum it forms (round toward
  /// zero, no guard bits: docs/cuda.md), so one accumulator over all of K
  /// collects errors of one sign that grow linearly in K; per-step partial
  /// sums keep them to one step's worth, rounded away by the f32 adds.
  bool step_partials = false;
};

/// Per output element the warp holds (row < rows, col < cols): the
/// accumulator's value is stored to `acc` (a private scalar of the vloop
/// statement) and the statement's own statements after its reduction run
/// with `row_var` and `col_var` bound (a scale, a mask, a cast, the store,
/// a division by a row value).
struct Epilogue {
  const ir::BufferNode* acc = nullptr;
  ir::Var row_var, col_var;
  std::vector<ir::Stmt> stmts;
  /// Other scalars the statements write before they read them (a fused
  /// statement's value, `scores_value`): registers of each element.
  std::vector<const ir::BufferNode*> locals;
  /// Set when the statements are one store that store_pair admits (and no
  /// locals): its row index at column 0 is computed once a row; where it is
  /// even (and the tensor aligned) a thread's two adjacent columns (e and
  /// e + 1 of an m16n8 tile) are stored as one word, both rounded by one
  /// conversion. Else element by element.
  std::optional<StorePair> pair;
  /// A warp-specialized form's 16-bit paired store, staged (0: stores from
  /// registers): each consumer warpgroup writes its 64 rows' packed pairs
  /// into shared memory at `staged_at` (from the buffers' base; rows of
  /// `staged_row_bytes`, padded by 16 so that a warp's pairs fall in 32
  /// banks), then stores them 16 bytes at a time along the row where the
  /// row's index at column 0 is a multiple of 8 and the tensor 16-byte
  /// aligned (else element by element): coalesced stores, an eighth as
  /// many. Named barriers (1 + the warpgroup) around the writes.
  int staged_row_bytes = 0, staged_at = 0;
};

/// Warp specialization of the sm_90a (wgmma) form (docs/cuda.md, "wgmma
/// GEMM"): the block's first `consumers` threads (warpgroups of wgmmas)
/// compute, the last `producers` (one or two warpgroups) copy. Stage s of the
/// shared buffers has two mbarriers: `full`, completed by the producers'
/// arrivals once their copies into it landed (cp.async.mbarrier.arrive.noinc,
/// or after the copies through registers a plain arrive), and `empty`,
/// completed by one arrival a consumer warp once its MMAs read the stage
/// (no MMA group left in flight). No block-wide barrier in the K-loop.
/// `persistent`: a grid of min(entries, SMs x blocks an SM) blocks that
/// take tile-list entries b, b + G, b + 2G, ..., the producers copying the
/// next entry's first K-steps while the consumers store this one's tile.
struct Specialized {
  int consumers = 256, producers = 128;
  bool persistent = true;
  /// Registers a thread after `setmaxnreg` (0: the launch's share): the
  /// producers give theirs up (.dec), the consumers take them (.inc), as the
  /// block's total allows (64K registers on sm_90).
  int producer_regs = 0, consumer_regs = 0;
};

/// A tiled MMA contraction kernel.
struct Kernel {
  std::string name;        // the CUDA function's name
  TileList tiles;
  std::vector<TileScalar> scalars;  // in dependency order
  int threads = 128;
  WarpTiling warps;
  int block_k = 16;
  std::string k_extent;    // TileScalar: the reduction's length
  std::vector<SharedBuffer> shared;
  Operand a, b;
  std::vector<Copy> copies;
  std::vector<Op> prologue, body;  // empty in a warp-specialized form (its loops are the printer's)
  Mma mma;
  /// Shared memory in one dynamic allocation of this many bytes (the
  /// buffers one after another from a 1024-byte boundary, hence 1,024 more
  /// than they need); 0: static arrays.
  int dynamic_smem = 0;
  /// Blocks an SM the registers are capped for (`__launch_bounds__`'s
  /// second argument; 0: none).
  int min_blocks = 0;
  /// The form compiled for sm_90a (wgmma), or null: same scalars and
  /// epilogue, its own tile width, threads, shared buffers, K-steps, copies
  /// and MMAs. One __global__ function holds both: its sm_90a compilation
  /// (DCC_WGMMA) runs this form, every other compilation the mma.sync one;
  /// the launcher asks the loaded module which one it has (the tile list's
  /// width, the block's threads and the grid follow).
  std::shared_ptr<const Kernel> sm90a;
  /// Set on a warp-specialized form (the sm_90a one): who copies, who
  /// computes, and how the grid takes the tile list.
  std::optional<Specialized> specialized;
  /// The threads that copy the operands and the index of one among them.
  int copy_threads() const { return specialized ? specialized->producers : threads; }
  Epilogue epilogue;
  /// Why the planner chose what it did, one line each (printed by
  /// --emit=kernel, shown by --explain).
  std::vector<std::string> notes;
};

/// Names the vloop expressions of a Kernel in text (ir::FuncText).
struct VloopText {
  virtual ~VloopText() = default;
  virtual std::string expr(const ir::Expr& e) = 0;
  virtual std::string var(const ir::Var& v) = 0;
  virtual std::string stmt(const ir::Stmt& s, int depth) = 0;
  virtual std::string buffer(const ir::BufferNode* b) = 0;
};

/// The text of `k` for `dccc --emit=kernel` (docs/cuda.md, "Reading
/// --emit=kernel"): stable, one fact per line.
std::string print_kernel(const Kernel& k, VloopText& text);

// ---- The fused attention kernel (issue 17; backend/gpu/plan_attention.h) ----

/// What a statement of the key loop's body is to the fused kernel, which
/// runs that body a tile of keys at a time (docs/cuda.md, "Fused attention"):
enum class AttnStepKind {
  Element,  // a scalar store per (row, key): computed for every element of the tile in registers
  Row,      // statements per query row (copies of running results, the rescale): once a tile
  Fold,     // `acc = acc OP x` (max / min) or `acc = acc [* c] + x` (+): x folded over the tile's keys, then OP'd in once
  Pv,       // the loop over the output columns: `T[.., d] = T[.., d] [* c] + p * V[j, .., d]`: one MMA of P and V
};

struct AttnStep {
  AttnStepKind kind = AttnStepKind::Element;
  ir::Stmt stmt;        // Element / Row / Fold: the statement (Row: may be an `if`)
  ir::Expr term;        // Fold: x, the per-element part of the value
  ir::BinOp op = ir::BinOp::Add;  // Fold: Add, Max or Min
  ir::Expr scale;       // Fold `a = a * c + x`: c (null: none)
};

/// How the fused attention kernel's blocks take the tile list's entries:
/// Tiles: one block an entry (blockIdx.x; the hardware starts blocks in
/// list order as earlier ones finish). Persistent grids of min(entries,
/// SMs x resident blocks) blocks that loop over the list: Static, block b
/// takes entries b, b + G, b + 2G, ...; Atomic, each block takes its first
/// entry by blockIdx.x and then the next one a device counter hands out
/// (atomicAdd; the launcher zeroes it on the stream before the launch).
enum class AttnGrid { Tiles, Static, Atomic };
const char* attn_grid_name(AttnGrid g);

/// The order of the tile list's entries (AttentionKernel::order; blocks
/// start in it). Keys: by key count, longest first, then (batch entry,
/// query tile). Sequences: the same, but a batch entry's query tiles that
/// run more key tiles (a causal mask's last ones) first; its tiles stay
/// together, so they read the entry's K and V while those are in the L2
/// cache. Tiles: by key tiles run over all entries (longest processing time
/// first: the last blocks to start are the shortest), then key count. Auto
/// (tuning only): the planner's rule.
enum class AttnOrder { Auto, Keys, Sequences, Tiles };
const char* attn_order_name(AttnOrder o);

/// Where the wgmma form's S = Q K^T takes Q (its A) from
/// (AttentionKernel::q_smem): Auto is the planner's rule, the others force
/// one place for every wgmma instantiation (`dccc --attention-q`).
enum class AttnQ { Auto, Registers, Smem };

/// The long-key instantiations' default threshold: a launch's entries'
/// mean key count (AttentionKernel::long_keys).
constexpr int64_t kAttentionLongKeys = 192;

/// Tile choices forced for every instantiation (`dccc --attention-tiles`,
/// for tuning experiments); 0 keeps the planner's choice.
struct AttentionTuning {
  int m_tiles = 0;     // m16 tiles of query rows a warp
  int warps = 0;       // warps a block
  int key_tile = 0;    // keys a tile (a multiple of 16)
  int min_blocks = 0;  // blocks an SM the registers are capped for
  int stages = 0;      // shared-memory stages of K and V (1-4, 1 in f32's wgmma form only; `dccc --attention-stages`)
  /// The split instantiation (AttentionKernel::split): columns a warp,
  /// warps, keys a tile (`dccc --attention-split`); 0 keeps the planner's.
  int split_cols = 0, split_warps = 0, split_keys = 0;
  /// How blocks find their tiles (AttentionKernel::grid, `dccc --attention-grid`).
  AttnGrid grid = AttnGrid::Tiles;
  /// The tile list's order (AttentionKernel::order, `dccc --attention-order`).
  AttnOrder order = AttnOrder::Auto;
  /// Where the wgmma form's S reads Q (AttentionKernel::q_smem, `dccc
  /// --attention-q`): the planner's choice, registers, or shared memory.
  AttnQ q = AttnQ::Auto;
  /// The mask-free copy of the tile body (AttentionKernel::unmasked,
  /// `dccc --attention-unmasked`).
  bool unmasked = true;
  /// f32 attention on tf32 wgmma where built for sm_90a (AttentionKernel::
  /// wgmma_dims; `dccc --attention-f32-wgmma`): head dims 64 and 128.
  bool f32_wgmma = true;
  /// 16-bit paired output stores through shared memory (AttentionKernel::
  /// PairStore::staged, `dccc --attention-staged-stores`).
  bool staged_stores = true;
};

/// A fused attention kernel: per (batch entry, query tile of `tile_m` rows)
/// a block of warps (16 x m_tiles rows each) streams the keys in tiles of
/// `tile_n` through shared memory (`stages` buffers, cp.async), computes
/// S = Q K^T with mma.sync, runs the key loop's element-wise body, folds and
/// row statements on the accumulator fragments in registers, and adds P V
/// with mma.sync to an output accumulator held in registers, written once
/// by the statements after the key loop.
struct AttentionKernel {
  std::string name;
  std::vector<BatchLoop> batch;   // the grid's loops (sequence, head), outermost first
  ir::Var row_var, key_var;       // i (query rows) and j (keys)
  ir::Expr rows, keys;            // M and N of a batch entry (batch variables only)
  Elem elem = Elem::BF16;         // Q, K, V in memory
  MmaShape shape = MmaShape::M16N8K16_BF16;
  /// f32 operands (shape M16N8K8_TF32): 3xTF32 or one TF32 product.
  Fp32Math fp32 = Fp32Math::Split3xTf32;
  /// Scalars per block (TileScalar): for Q (by row i and d), K and V (by key
  /// j and d): base, row stride, d stride; QD (the score reduction's length)
  /// and VD (the output columns').
  std::vector<TileScalar> scalars;
  const ir::BufferNode* q = nullptr;
  const ir::BufferNode* k = nullptr;
  const ir::BufferNode* v = nullptr;
  const ir::BufferNode* score_acc = nullptr;  // the contraction's scalar (S element)
  /// Head dims the printer instantiates; a launch takes the smallest >= max(QD, VD).
  std::vector<int> head_dims{32, 64, 128, 256};
  /// Per instantiation (as head_dims): the key tile, and the blocks per SM
  /// it is compiled for (__launch_bounds__'s second argument: registers
  /// capped at 64K / (blocks x threads)). Head dim 128 takes keys 32 at a
  /// time to fit 3 blocks (168 registers, 35 KB of shared memory each).
  std::vector<int> key_tiles{64, 64, 32, 32};
  /// Per instantiation: the wgmma form's key tile where it differs from
  /// key_tiles' (0: the same; f32's head dim 128: 32 keys on wgmma, 16 on
  /// mma.sync).
  std::vector<int> wg_key_tiles{0, 0, 0, 0};
  std::vector<int> min_blocks{3, 3, 3, 1};
  /// Per instantiation: a second key tile (0: none) for launches whose
  /// tile-list entries average at least `long_keys` keys (per
  /// instantiation too), on a GPU of
  /// compute capability 9 (its shared memory holds the same blocks an SM):
  /// one more instantiation `d{dp}L`, the same query tile, blocks an SM and
  /// tile list, the key tile where the wgmma form runs (the mma.sync form
  /// keeps key_tiles'). The launch picks it from the cached tile list's
  /// mean (DccTiles::kmean).
  std::vector<int> long_key_tiles{0, 0, 0, 0};
  std::vector<int64_t> long_keys{kAttentionLongKeys, kAttentionLongKeys, kAttentionLongKeys, kAttentionLongKeys};
  /// Per instantiation: K's and V's shared-memory stages (cp.async): the
  /// key loop copies key tile kt + stages - 1 while it computes tile kt, so
  /// a block's copies run stages - 1 tiles ahead. `long_key_stages` for the
  /// long-key instantiation (0: key_stages'). The split and streaming
  /// instantiations keep `stages`.
  std::vector<int> key_stages{2, 2, 2, 2};
  std::vector<int> long_key_stages{0, 0, 0, 0};
  /// Per instantiation: f32's wgmma form's stages where they differ from
  /// key_stages' (0: the same): 1 copies the next tile once S has read the
  /// stage, so that its block's shared memory leaves room for one more
  /// block an SM (head dim 64: 73 instead of 89 KB, 3 blocks; head dim 128
  /// at 16 keys: 105 instead of 120 KB, 2 blocks).
  std::vector<int> wg_key_stages{0, 0, 0, 0};
  /// The same for the long-key instantiation's wgmma form (its mma.sync
  /// build keeps key_stages').
  std::vector<int> long_wg_key_stages{0, 0, 0, 0};
  /// Per instantiation: the blocks an SM the wgmma form's registers are
  /// capped for where more than min_blocks (0: min_blocks'; f32's head dim
  /// 64 at 16 keys a tile: 4); attention_wgmma_min_blocks takes fewer where
  /// its shared memory does not fit them.
  std::vector<int> wg_min_blocks{0, 0, 0, 0};
  /// Per instantiation: the m16 tiles of query rows a warp owns (16 rows
  /// each; each K and V fragment read from shared memory feeds that many
  /// MMAs) and the warps of a block; their product x 16 is the query tile
  /// (the host builds the tile list for the instantiation a launch takes).
  std::vector<int> m_tiles{1, 1, 1, 1};
  std::vector<int> warps{4, 4, 4, 4};
  /// Launches whose largest head dim exceeds head_dims.back() and is at
  /// most split x split_warps (a score summed over several dimensions,
  /// flash_attention.toy's (h, d) at H x D = 512) take the split
  /// instantiation: a block of split_warps warps owns 16 query rows, warp w
  /// multiplies columns w split .. (w + 1) split - 1 of Q and K (its Q
  /// fragments loaded once) and adds P V to the same columns of the output;
  /// the warps' partial scores are added through shared memory, so each
  /// warp holds the whole S and runs the key loop's body on it. K's and V's
  /// tiles are split x split_warps wide, split_key_tile keys a tile. 0: none.
  int split = 64, split_warps = 8, split_key_tile = 32;
  /// Larger launches take a streaming instantiation with the tiles of
  /// head dim `wide`: the score's contraction in chunks of `wide` columns
  /// (Q fragments loaded per chunk, K's chunks through the shared-memory
  /// stages) and the output columns split over blockIdx.y in chunks of
  /// `wide`, each block recomputing the scores of its rows (a row
  /// statement after the key loop writes no tensor: the planner's rule).
  int wide = 64;
  int tile_n = 64, stages = 2, pad = 8;
  /// Head dims whose instantiation, where the CUDA code is compiled for
  /// sm_90a (a wgmma target: nvcc defines __CUDA_ARCH_FEAT_SM90_ALL), runs
  /// S = Q K^T and O += P V as warpgroup MMAs (wgmma.mma_async m64nNk16, A
  /// from registers: Q's and P's fragments as for mma.sync; B from shared
  /// memory through a matrix descriptor: K K-major, V MN-major, both tiles
  /// stored [key][d] in 128-byte swizzled lines, 64 columns a part). Needs
  /// warpgroups of 16-row warps (warps a multiple of 4, one m16 tile each;
  /// warpgroup g owns rows 64 g .. 64 g + 63), 16-bit
  /// operands, head dim 64 or 128 and a key tile a multiple of 16; other
  /// targets compile the same instantiation with mma.sync (docs/cuda.md).
  std::vector<int> wgmma_dims;
  /// How blocks take the tile list's entries (AttnGrid).
  AttnGrid grid = AttnGrid::Tiles;
  /// The tile list's order (AttnOrder; never Auto).
  AttnOrder order = AttnOrder::Sequences;
  /// Per instantiation (as head_dims): the wgmma form's S = Q K^T takes Q
  /// from shared memory (A by descriptor, K-major, stored as K's tiles are)
  /// instead of registers: the block copies its Q tile with the first K and
  /// V tile (cp.async), its threads keep no Q fragments (32 registers a lane
  /// at head dim 128), and the wgmma build caps its registers for one block
  /// an SM more than min_blocks where that block's shared memory fits
  /// (attention_wgmma_min_blocks). `long_q_smem` for the long-key
  /// instantiation. The planner's rule (AttnQ::Auto): where it buys that
  /// block -- head dims 64 and 128 of the short-key tiles (4 blocks of 4
  /// warps an SM); not the long-key tile of head dim 128, whose 64 KB of K
  /// and V stages leave no room, and where Q read from shared memory by
  /// every key tile's S costs without the block (0.85-0.93x on race and
  /// squad, H200, bench/RESULTS.md session 27). The mma.sync form keeps Q
  /// in registers.
  std::vector<bool> q_smem{false, false, false, false};
  std::vector<bool> long_q_smem{false, false, false, false};
  /// Before the key loop: row statements (running results' starts).
  std::vector<ir::Stmt> pre;
  /// The key loop's body after the score contraction, in program order.
  std::vector<AttnStep> steps;
  /// Pv: the accumulator tensor T, its column loop variable d, p (per element),
  /// c (per row; null when T is not rescaled) and the offset of T[.., d].
  const ir::BufferNode* out_acc = nullptr;
  ir::Var pv_var;
  ir::Expr pv_p, pv_scale, pv_offset;
  /// The program rounds P to the tensor core's 16-bit type (`f32(bf16(p))`)
  /// and pv_p is the f32 value before that rounding: packing P's fragments
  /// (cvt.rn.bf16x2 / f16x2) rounds it to the same bits, once.
  bool pv_rounded_by_pack = false;
  /// Deferred rescaling (backend/gpu/plan_lazy_rescale.h): a running
  /// maximum's copy `ref` (R) that the element values read only as
  /// exp(x - R), in values reaching the sums and P V linearly, follows the
  /// fold's accumulator `acc` (A) only when A grows past R + `slack`: step
  /// `step` holds `if (R < A - slack) R = A` instead of the program's
  /// `eager` copy `R = A`, so the rescale factors stay 1 (no multiply of the
  /// output's registers) on most tiles. After the key loop a lane with a row
  /// where R != A runs the key loop's row statements once more as for a tile
  /// without keys, with `eager` (the folds' terms their identity, P 0),
  /// which brings every running result to what the program computes.
  struct LazyReference {
    size_t step = 0;
    const ir::BufferNode* ref = nullptr;
    const ir::BufferNode* acc = nullptr;
    ir::Stmt eager;
    double slack = 0;
  };
  std::vector<LazyReference> lazy;
  /// After the key loop: loops over the output columns (per accumulator
  /// element, T's loads read registers) and row statements.
  std::vector<ir::Stmt> post;
  /// Scalars of the body: per element (arrays over the tile's fragments)
  /// and per row (two rows per lane).
  std::vector<const ir::BufferNode*> element_scalars, row_scalars;
  /// Conjuncts of the mask conditions (index comparisons affine in i and
  /// j): a key tile in which one of them holds at no corner of the (query
  /// tile x key tile) box is skipped. Empty: no tile is skipped.
  std::vector<ir::Expr> skip_conjuncts;
  /// The mask condition when each of its conjuncts is a skip conjunct (null
  /// otherwise, or with --attention-unmasked=off): a full key tile in
  /// whose box every conjunct holds at every corner runs a copy of the
  /// tile body with the condition printed `true` (no compare and select an
  /// element: causal's tiles below the diagonal).
  ir::Expr unmasked;
  /// Whether the per-element work (element steps, fold terms, P) must skip
  /// query rows past the sequence's end: true when it reads memory or may
  /// set the error flag (integer division). Otherwise those rows compute
  /// values nobody stores, and only a key tile that runs past the keys' end
  /// checks its elements (the printer emits the key-tile body twice: full
  /// tiles without checks, the last partial one with them).
  bool guard_rows = true;
  /// Likewise for keys past the end in the last, partial key tile: true when
  /// the per-element work reads a tensor at an index of the key or divides
  /// integers. Otherwise that tile runs the element statements unchecked too
  /// and only masks what reaches a fold (its identity) or P (0).
  bool guard_keys = true;
  /// Row and key counts are 32-bit values (an i32 length, widened): the
  /// printer computes a row or key index in 32 bits (unsigned: below
  /// 2^31 + 64) and widens it, so comparisons of them stay 32-bit.
  bool index32 = false;
  /// Parts of the per-element work that depend on no row, key or body value
  /// (the scale `sqrt(D)`, its rounding to 16 bits, constants): computed once
  /// a block as `name`; `uses` are the expression nodes they replace.
  struct Invariant {
    std::string name;
    ir::Expr value;
    std::vector<const ir::ExprNode*> uses;
    bool divisor = false;  // a division rounded to 16 bits divides by it: its scaled reciprocal is computed once too
    /// An f32 division (its quotient kept at f32) divides by it: its
    /// correctly rounded reciprocal and whether it lies in [2^-20, 2^20]
    /// are computed once too, and each quotient is corrected from the
    /// reciprocal (dcc_fdiv_pre: the IEEE quotient without a branch an
    /// element; docs/cuda.md, "f32 division by a block value").
    bool divisor32 = false;
    int entry = -1;        // as TileScalar::entry (post_invariants)
  };
  std::vector<Invariant> invariants;
  /// Parts of the stores after the key loop that depend on no row or column:
  /// integer expressions of batch variables, sizes and loads of integer
  /// tensors the statement does not write (a packed tensor's offsets at the
  /// batch entry). Computed once a block before the row loop (by a block
  /// with a row and a column to store: the stores' guards), where each store
  /// would re-read them (no compiler moves a load across a store that may
  /// alias it).
  std::vector<Invariant> post_invariants;
  /// Divisions rounded to 16 bits (rounded16_division) after the key loop by
  /// a row value (the row sum): the divisor node and the row scalar; its
  /// scaled reciprocal is computed once a row.
  std::vector<std::pair<const ir::ExprNode*, const ir::BufferNode*>> post_divisors;
  /// f32 divisions after the key loop (their quotients kept at f32) by a
  /// row value: its reciprocal is computed once a row and each quotient
  /// corrected from it (dcc_fdiv_pre, as Invariant::divisor32).
  std::vector<std::pair<const ir::ExprNode*, const ir::BufferNode*>> post_divisors32;
  /// Column loops after the key loop (by index into `post`) whose body is
  /// one store of a 16-bit or f32 element at an index affine in the column
  /// with coefficient 1: `row_index` is that index at column 0 (no column in
  /// it), computed once a row; where it is even (and the tensor aligned), a
  /// lane's two adjacent columns are stored as one 32-bit (64-bit) word (a
  /// run-time check a row).
  struct PairStore {
    size_t post = 0;
    ir::Expr row_index;
    int bits = 32;  // the paired store's width
    /// The one-tile-a-block body's 16-bit pairs go through shared memory (a
    /// warp's 16 rows, after a block barrier: the K, V and Q tiles' space)
    /// and leave as 16-byte stores of whole row chunks where the row's index
    /// at column 0 is a multiple of 8 and the tensor 16-byte aligned
    /// (attention_staged_store_bytes; `dccc --attention-staged-stores`).
    bool staged = false;
  };
  std::vector<PairStore> pair_stores;
  /// int32s a tile-list entry: the batch indices, the query tile, then the
  /// per-block values the host computes (TileScalar::entry, Invariant::entry:
  /// those that read only the lengths the tile list is keyed by and the
  /// prelude's offset arrays, so a block reads them with its entry instead of
  /// a second dependent round trip). 0: batch indices and the query tile.
  int entry_width = 0;
  std::vector<std::string> notes;
};

/// The text of `k` for `dccc --emit=kernel` (and --explain): one fact a line.
std::string print_attention_kernel(const AttentionKernel& k, VloopText& text);

/// Key-tile size, m16 tiles a warp, warps a block and dynamic shared memory
/// of the instantiation for head dim `dp`.
int attention_tile_n(const AttentionKernel& k, int dp);
int attention_wg_tile_n(const AttentionKernel& k, int dp);  // the wgmma form's key tile (AttentionKernel::wg_key_tiles)
int attention_m_tiles(const AttentionKernel& k, int dp);
int attention_warps(const AttentionKernel& k, int dp);
int attention_min_blocks(const AttentionKernel& k, int dp);  // blocks an SM its registers are capped for
/// Whether `blocks` blocks of the instantiation for head dim `dp` hold their
/// shared memory in an H100's 228 KB (1 KB reserved a block).
bool attention_smem_fits(const AttentionKernel& k, int dp, int blocks, bool long_keys = false);
/// The most warps an SM a fused attention instantiation's register cap is
/// set for: 64K registers / (32 x 16) = 128 a thread, what the wgmma form's
/// m64n128 accumulators and fragments need (ptxas refuses fewer).
constexpr int kAttentionMaxWarpsPerSm = 16;
/// Whether `blocks` blocks of the instantiation fit an SM: their shared
/// memory (attention_smem_fits) and at most kAttentionMaxWarpsPerSm warps.
bool attention_block_fits(const AttentionKernel& k, int dp, int blocks, bool long_keys = false);
/// The blocks an SM the sm_90a (wgmma) build of the instantiation caps its
/// registers for: one more than attention_min_blocks with Q in shared
/// memory (AttentionKernel::q_smem) where their shared memory fits.
int attention_wgmma_min_blocks(const AttentionKernel& k, int dp, bool long_keys = false);
/// Whether the wgmma build of the instantiation (its long-key one with
/// `long_keys`) takes Q from shared memory (AttentionKernel::q_smem).
bool attention_q_smem(const AttentionKernel& k, int dp, bool long_keys = false);
/// Whether some wgmma instantiation of `k` takes Q from shared memory.
bool attention_any_q_smem(const AttentionKernel& k);
int attention_split_smem_bytes(const AttentionKernel& k);  // the split instantiation's (AttentionKernel::split)
/// The streaming instantiation's (AttentionKernel::wide): its padded K and V
/// stages at head dim `wide` (its body has no wgmma form).
int attention_wide_smem_bytes(const AttentionKernel& k);
int attention_tile_m(const AttentionKernel& k, int dp);  // query rows a block: 16 x m tiles x warps
int attention_long_tile_n(const AttentionKernel& k, int dp);  // AttentionKernel::long_key_tiles (0: none)
/// The entries' mean key count from which a launch takes the long-key
/// instantiation of head dim `dp` (AttentionKernel::long_keys).
int64_t attention_long_keys(const AttentionKernel& k, int dp);
/// K's and V's shared-memory stages of the instantiation for head dim `dp`
/// (its long-key one with `long_keys`; AttentionKernel::key_stages).
int attention_stages(const AttentionKernel& k, int dp, bool long_keys = false);
/// The stages of f32's wgmma form of that instantiation (wg_key_stages,
/// else attention_stages).
int attention_wg_stages(const AttentionKernel& k, int dp, bool long_keys = false);
/// Dynamic shared memory of the instantiation for head dim `dp` (`long_keys`:
/// its long-key one, AttentionKernel::long_key_tiles).
int attention_smem_bytes(const AttentionKernel& k, int dp, bool long_keys = false);
/// The mma.sync form's (K's and V's padded stages): what a launch of a
/// build without wgmma needs where f32's wgmma form needs more.
int attention_sync_smem_bytes(const AttentionKernel& k, int dp, bool long_keys = false);
/// Whether head dim `dp`'s f32 instantiation (its long-key one with
/// `long_keys`) runs on tf32 wgmma on sm_90a.
bool attention_f32_wgmma(const AttentionKernel& k, int dp, bool long_keys = false);
/// Whether head dim `dp`'s instantiation takes wgmma on sm_90a (AttentionKernel::wgmma_dims).
bool attention_wgmma(const AttentionKernel& k, int dp);
/// Shared memory the staged paired stores (AttentionKernel::PairStore::staged)
/// take at head dim `dp`: each warp's 16 rows of dp + 8 16-bit values and
/// their 16 output indices.
int attention_staged_store_bytes(const AttentionKernel& k, int dp);
/// int32s a tile-list entry of `k` (AttentionKernel::entry_width).
int attention_entry_width(const AttentionKernel& k);
/// "head dim 32: keys 64 a tile, 3 block(s) an SM; ..." -- the choices per
/// instantiation, for notes and --explain.
std::string attention_instances(const AttentionKernel& k);

}  // namespace dccc::gpu
