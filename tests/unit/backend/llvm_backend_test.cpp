// Differential tests of the LLVM backend: every function of every example
// is JIT-compiled and run on random length patterns (random lengths,
// zero-length sequences, B = 1, one very long sequence); its f32 results
// must match a float64 reference within 1e-5 relative error. The harness
// (differential.h) is shared with the CUDA backend's test. Loops are marked
// parallel as in the driver, and further tests run kernels on several
// threads (dcc_set_num_threads) against one thread and the reference, and
// check that an error raised inside a parallel loop body comes back as the
// kernel's status with its message.
#include <dccrt.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "backend/llvm/jit.h"
#include "backend/llvm/llvm_text.h"
#include "tests/unit/backend/differential.h"
#include "tests/unit/test_paths.h"

namespace dccc::backend {
namespace {

using testing::Engine;
using testing::HostBuffer;
using testing::Program;

Program compile(const std::string& name, const std::string& text) { return testing::compile(name, text, true); }

TEST(LlvmBackend, ExamplesMatchFloat64Reference) {
  int compared = 0;
  for (auto& [name, stem, p] : testing::compile_examples(test_paths::examples_dir())) {
    if (!p.module) continue;  // uses something the code generator does not handle yet
    std::string error;
    auto jit = JitProgram::compile(*p.module, error);
    ASSERT_TRUE(jit) << name << ": " << error;
    for (const auto& f : p.module->funcs) {
      if (f.name == "main") continue;
      auto kernel = jit->kernel(f.name);
      ASSERT_NE(kernel, nullptr) << f.name;
      testing::run_differential(f, {Engine{"llvm", kernel}}, name, compared);
    }
  }
  EXPECT_GT(compared, test_files::at_least(10000));
}

// Calls between .toy functions are inlined: a ragged softmax built from
// three functions (a call as an argument, a construction returned
// directly), then used by a fourth with a dense argument.
TEST(LlvmBackend, InlinedCallsMatchFloat64Reference) {
  const std::string text = R"(
type Seqs = coupling {
    data: [b: B][seqlen[b], H]f32,
    seqlen: [B]i32
}

fn row_max(x: Seqs) [B, H]f32 {
    let m: [B, H]f32;
    m[b, h] = reduce(max, x.data[b][i, h]);
    return m;
}

fn exp_shift(x: Seqs, m: [B, H]f32) Seqs {
    let d: [b: B][x.seqlen[b], H]f32;
    d[b][i, h] = exp(x.data[b][i, h] - m[b, h]);
    return Seqs { data: d, seqlen: x.seqlen };
}

fn softmax(x: Seqs) Seqs {
    let e = exp_shift(x, row_max(x));
    let t: [B, H]f32;
    t[b, h] = reduce(+, e.data[b][i, h]);
    let y = Seqs { data: [b: B][e.seqlen[b], H]f32, seqlen: e.seqlen };
    y.data[b][i, h] = e.data[b][i, h] / t[b, h];
    return y;
}

fn weighted(q: Seqs, w: [H]f32) Seqs {
    let s = softmax(q);
    let o: [b: B][s.seqlen[b], H]f32;
    o[b][i, h] = s.data[b][i, h] * w[h] + 1.0;
    return Seqs { data: o, seqlen: s.seqlen };
}
)";
  Program p = compile("calls.toy", text);
  ASSERT_TRUE(p.module.has_value()) << "the program with calls must lower";
  std::string error;
  auto jit = JitProgram::compile(*p.module, error);
  ASSERT_TRUE(jit) << error;
  int compared = 0;
  for (const auto& f : p.module->funcs) {
    auto kernel = jit->kernel(f.name);
    ASSERT_NE(kernel, nullptr) << f.name;
    testing::run_differential(f, {Engine{"llvm", kernel}}, "calls.toy", compared);
  }
  EXPECT_GT(compared, 200);
}

/// Runs `kernel` (function `f`) on `inputs`; outputs are sized by `ref`,
/// which has run on the same inputs. Host buffers in f.buffers order
/// (inputs and outputs only). Returns the kernel's status.
int32_t run_kernel(JitProgram::Kernel kernel, const ir::Func& f, const std::map<std::string, int64_t>& sizes,
                   const std::map<const ir::BufferNode*, std::vector<double>>& inputs, ir::Interpreter& ref,
                   std::vector<HostBuffer>& host) {
  std::vector<void*> ptrs;
  host = testing::host_buffers(f, inputs, ref, ptrs);
  std::vector<int64_t> size_values;
  for (const auto& sz : f.sizes) size_values.push_back(sizes.at(sz.name));
  size_values.push_back(0);
  return kernel(size_values.data(), ptrs.data());
}

std::string read_example(const std::string& file) {
  std::ifstream in(std::filesystem::path(test_paths::examples_dir()) / file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

const ir::Func& func_named(const ir::Module& m, const std::string& name) {
  for (const auto& f : m.funcs)
    if (f.name == name) return f;
  throw std::runtime_error("no function " + name);
}

int count_parallel(const ir::Stmt& s) {
  if (!s) return 0;
  int n = s->kind == ir::StmtKind::For && s->loop == ir::LoopKind::Parallel;
  for (const auto& c : s->body) n += count_parallel(c);
  return n;
}

// The five assignments of mha.toy (scores, row_max, p, row_sum, out.data)
// each get their outer `b` loop marked, and nothing else: the reduction
// loops (d, j) and the inner left-side loops (i, h, j, d) stay serial. The
// five loops are then fused into one (ir/fuse_parallel_loops.h).
TEST(LlvmBackend, MhaOuterLoopsAreParallel) {
  Program p = compile("mha.toy", read_example("mha.toy"));
  ASSERT_TRUE(p.module);
  const ir::Func& f = func_named(*p.module, "mha");
  EXPECT_EQ(count_parallel(f.body), 1);
  for (const auto& item : f.body->body)
    if (item->kind == ir::StmtKind::For) {
      EXPECT_EQ(item->loop, ir::LoopKind::Parallel);
      EXPECT_EQ(item->var->name, "b");
      EXPECT_EQ(count_parallel(item->body[0]), 0);
    }
}

// mha on random ragged lengths (zero-length sequences included, B = 1,
// B = 32) on 4 threads: bit-identical to the same kernel on one thread
// (every iteration computes the same way whichever thread runs it), and
// within 1e-5 of the float64 reference.
TEST(LlvmBackend, MhaOnSeveralThreadsMatchesOneThread) {
  Program p = compile("mha.toy", read_example("mha.toy"));
  ASSERT_TRUE(p.module);
  std::string error;
  auto jit = JitProgram::compile(*p.module, error);
  ASSERT_TRUE(jit) << error;
  const ir::Func& f = func_named(*p.module, "mha");
  auto kernel = jit->kernel("mha");
  ASSERT_NE(kernel, nullptr);
  int checked = 0;
  for (int64_t batch : {1, 2, 7, 32}) {
    SCOPED_TRACE("B = " + std::to_string(batch));
    std::mt19937 rng(static_cast<unsigned>(batch));
    std::map<std::string, int64_t> sizes{{"B", batch}, {"H", 3}, {"D", 8}};
    auto gen = [&](const ir::BufferNode* b, int64_t k) -> double {
      if (is_int(b->type)) {
        if (batch == 1) return 19;
        return k % 4 == 1 ? 0 : std::uniform_int_distribution<int>(0, 40)(rng);
      }
      return static_cast<float>(std::uniform_real_distribution<double>(-1.0, 1.0)(rng));
    };
    auto inputs = ir::Interpreter::make_inputs(f, sizes, gen);
    std::ostringstream sink;
    ir::Interpreter ref(sink);
    ref.set_float64_reference(true);
    ref.run(f, sizes, inputs);
    std::vector<HostBuffer> one, many;
    dcc_set_num_threads(1);
    ASSERT_EQ(run_kernel(kernel, f, sizes, inputs, ref, one), 0) << dcc_last_error();
    dcc_set_num_threads(4);
    ASSERT_EQ(dcc_get_num_threads(), 4);
    ASSERT_EQ(run_kernel(kernel, f, sizes, inputs, ref, many), 0) << dcc_last_error();
    size_t slot = 0;
    for (const auto& b : f.buffers) {
      if (b->kind != ir::BufferKind::Input && b->kind != ir::BufferKind::Output) continue;
      const size_t k = slot++;
      if (b->kind != ir::BufferKind::Output || b->type != Scalar::F32) continue;
      EXPECT_EQ(one[k].bytes, many[k].bytes) << b->name;
      std::vector<double> want = ref.packed(b.get());
      ASSERT_EQ(many[k].size(), std::max<size_t>(1, want.size()));
      for (size_t e = 0; e < want.size(); ++e, ++checked)
        if (std::isnan(want[e]))  // a query row whose keys are empty: 0 / 0
          ASSERT_TRUE(std::isnan(many[k].get(e))) << b->name << "[" << e << "]";
        else
          ASSERT_LE(std::fabs(many[k].get(e) - want[e]), 1e-5 * std::max(1.0, std::fabs(want[e]))) << b->name << "[" << e << "]";
    }
  }
  dcc_set_num_threads(0);
  EXPECT_GT(checked, 10000);
}

// A float `reduce(max)` or `reduce(min)` whose loop walks memory
// contiguously runs in vector lanes (codegen.h): the results must equal the
// interpreter's (std::fmax / std::fmin, left to right) bit for bit, NaN
// operands ignored, on rows of every length from 0 to 40 (below, at and past
// multiples of the 16 lanes), with NaNs, infinities and an all-NaN row; f32
// and f64, the row read directly or after a transposition into a local.
// Their optimized LLVM IR has the vector reduction; an integer max
// (vectorized by LLVM itself) does not take this path. A max down a column
// (col_max) is interchanged with the outer loop instead, and must match too.
TEST(LlvmBackend, FloatMaxMinReductionsInLanesMatchInterpreter) {
  const std::string text = R"(
type Rows = coupling {
    data: [b: B][H, len[b]]f32,
    len: [B]i32
}
type Rows64 = coupling {
    data: [b: B][H, len[b]]f64,
    len: [B]i32
}
type Cols = coupling {
    data: [b: B][len[b], H]f32,
    len: [B]i32
}
type IRows = coupling {
    data: [b: B][len[b]]i32,
    len: [B]i32
}
fn row_max(x: Rows) [B, H]f32 {
    let m: [B, H]f32;
    m[b, h] = reduce(max, x.data[b][h, i]);
    return m;
}
fn row_min(x: Rows) [B, H]f32 {
    let m: [B, H]f32;
    m[b, h] = reduce(min, x.data[b][h, i]);
    return m;
}
fn row_max64(x: Rows64) [B, H]f64 {
    let m: [B, H]f64;
    m[b, h] = reduce(max, x.data[b][h, i]);
    return m;
}
fn col_max(x: Cols) [B, H]f32 {
    let m: [B, H]f32;
    m[b, h] = reduce(max, x.data[b][i, h]);
    return m;
}
fn col_min(x: Cols) [B, H]f32 {
    let t: [b: B][H, x.len[b]]f32;
    t[b][h, i] = x.data[b][i, h];
    let m: [B, H]f32;
    m[b, h] = reduce(min, t[b][h, i]);
    return m;
}
fn imax(x: IRows) [B]i32 {
    let m: [B]i32;
    m[b] = reduce(max, x.data[b][i]);
    return m;
}
)";
  Program p = compile("minmax.toy", text);
  ASSERT_TRUE(p.module);
  std::string error;
  auto jit = JitProgram::compile(*p.module, error);
  ASSERT_TRUE(jit) << error;
  const int64_t batch = 41;
  int compared = 0;
  for (const char* name : {"row_max", "row_min", "row_max64", "col_max", "col_min", "imax"}) {
    SCOPED_TRACE(name);
    const ir::Func& f = func_named(*p.module, name);
    auto kernel = jit->kernel(name);
    ASSERT_NE(kernel, nullptr);
    std::mt19937 rng(7);
    std::map<std::string, int64_t> sizes{{"B", batch}, {"H", 2}};
    auto gen = [&](const ir::BufferNode* b, int64_t k) -> double {
      if (b->name == "x.len") return static_cast<double>(k);  // len[b] = b: 0 .. 40
      if (is_int(b->type)) return std::uniform_int_distribution<int>(-1000, 1000)(rng);
      double v = std::uniform_real_distribution<double>(-100.0, 100.0)(rng);
      switch (std::uniform_int_distribution<int>(0, 19)(rng)) {
        case 0: return NAN;
        case 1: return k % 2 ? INFINITY : -INFINITY;
        default: return static_cast<float>(v);
      }
    };
    auto inputs = ir::Interpreter::make_inputs(f, sizes, gen);
    // Sequence 17 all NaN (length 17: one pass of the lanes and one step
    // after); sequence b has b * H elements, after sum_{c < b} c * H.
    for (auto& [b, values] : inputs) {
      if (b->name != "x.data" || is_int(b->type)) continue;
      const int64_t H = 2, start = 17 * 16 / 2 * H;
      ASSERT_GE(values.size(), static_cast<size_t>(start + 17 * H));
      for (int64_t e = start; e < start + 17 * H; ++e) values[e] = NAN;
    }
    std::ostringstream sink;
    ir::Interpreter ref(sink);
    ref.run(f, sizes, inputs);
    std::vector<HostBuffer> host;
    ASSERT_EQ(run_kernel(kernel, f, sizes, inputs, ref, host), 0) << dcc_last_error();
    const ir::BufferNode* out = nullptr;
    for (const auto& b : f.buffers)
      if (b->kind == ir::BufferKind::Output) out = b.get();
    std::vector<double> want = ref.packed(out);
    ASSERT_EQ(want.size(), static_cast<size_t>(std::string(name) == "imax" ? batch : batch * 2));
    for (size_t e = 0; e < want.size(); ++e, ++compared) {
      ASSERT_FALSE(std::isnan(want[e])) << e;  // NaNs are ignored; the start value is -inf (max) or inf (min)
      EXPECT_EQ(host.back().get(e), want[e]) << e;
    }
    if (std::string(name) != "imax") {  // the all-NaN sequence gives the start value
      for (size_t e : {size_t{17 * 2}, size_t{17 * 2 + 1}}) EXPECT_TRUE(std::isinf(want[e])) << e;
    }
  }
  EXPECT_EQ(compared, 5 * batch * 2 + batch);
  std::string ir = llvm_ir_text(*p.module, error).value_or("");
  ASSERT_FALSE(ir.empty()) << error;
  auto body = [&](const std::string& fn) {  // the definitions of fn's parallel bodies
    std::string out;
    for (size_t at = ir.find("define internal void @" + fn + "__par"); at != std::string::npos;
         at = ir.find("define internal void @" + fn + "__par", at + 1))
      out += ir.substr(at, ir.find("\n}\n", at) - at);
    EXPECT_FALSE(out.empty()) << fn;
    return out;
  };
  EXPECT_NE(body("row_max").find("llvm.vector.reduce.fmax"), std::string::npos);
  EXPECT_NE(body("row_min").find("llvm.vector.reduce.fmin"), std::string::npos);
  EXPECT_NE(body("row_max64").find("llvm.vector.reduce.fmax"), std::string::npos);
  EXPECT_NE(body("col_min").find("llvm.vector.reduce.fmin"), std::string::npos);
  EXPECT_EQ(body("imax").find("llvm.vector.reduce.fmax"), std::string::npos);
  EXPECT_EQ(body("imax").find("maxnum"), std::string::npos);
}

/// Runs `kernel` (compiled from `f`) and the float64 reference on inputs
/// from `gen` and checks that the output has `want_size` elements, each
/// within 1e-5 relative error (at least 1e-5 absolute); adds them to `compared`.
void expect_matches_float64(JitProgram::Kernel kernel, const ir::Func& f, const std::map<std::string, int64_t>& sizes,
                            const std::function<double(const ir::BufferNode*, int64_t)>& gen, size_t want_size,
                            int& compared) {
  auto inputs = ir::Interpreter::make_inputs(f, sizes, gen);
  std::ostringstream sink;
  ir::Interpreter ref(sink);
  ref.set_float64_reference(true);
  ref.run(f, sizes, inputs);
  std::vector<HostBuffer> host;
  ASSERT_EQ(run_kernel(kernel, f, sizes, inputs, ref, host), 0) << dcc_last_error();
  const ir::BufferNode* out = nullptr;
  for (const auto& b : f.buffers)
    if (b->kind == ir::BufferKind::Output) out = b.get();
  std::vector<double> want = ref.packed(out);
  ASSERT_EQ(want.size(), want_size);
  for (size_t e = 0; e < want.size(); ++e, ++compared)
    ASSERT_NEAR(host.back().get(e), want[e], 1e-5 * std::max(1.0, std::fabs(want[e]))) << "[" << e << "]";
}

// c = a b^T (ir/transpose_operands.h copies b transposed, its rows padded
// to 16, in blocks of 16 rows; the backend transposes 16 x 16 (8 x 8 for
// f64) tiles of it in registers, then copies the last K % 16 values of a
// block one by one; the lanes along j then run to the next multiple of 16
// inside the padding): every N from 0 to 40 (M = 5), so the lanes end at
// every offset of a vector, with K = 3 (no whole tile), 16 (tiles only) and
// 37 (tiles and a rest), in f32 and f64, must match the float64 reference,
// and the results past N must not leak into c.
TEST(LlvmBackend, TransposedOperandLanesMatchFloat64Reference) {
  const std::string text = R"(
fn abt(a: [M, K]f32, b: [N, K]f32) [M, N]f32 {
    let c: [M, N]f32;
    c[i, j] = reduce(+, a[i, r] * b[j, r]);
    return c;
}
fn abt64(a: [M, K]f64, b: [N, K]f64) [M, N]f64 {
    let c: [M, N]f64;
    c[i, j] = reduce(+, a[i, r] * b[j, r]);
    return c;
}
)";
  Program p = compile("abt.toy", text);
  ASSERT_TRUE(p.module);
  std::string error;
  auto jit = JitProgram::compile(*p.module, error);
  ASSERT_TRUE(jit) << error;
  std::mt19937 rng(3);
  int compared = 0;
  for (const char* name : {"abt", "abt64"}) {
    SCOPED_TRACE(name);
    const ir::Func& f = func_named(*p.module, name);
    bool padded = false;
    for (const auto& b : f.buffers) padded |= b->name == "b.T" && !b->pad.empty() && b->pad.back() == 16;
    EXPECT_TRUE(padded) << "b is read from a transposed copy with padded rows";
    auto kernel = jit->kernel(name);
    ASSERT_NE(kernel, nullptr);
    for (int64_t k : {3, 16, 37})
      for (int64_t n = 0; n <= 40; ++n) {
        SCOPED_TRACE("K " + std::to_string(k) + " N " + std::to_string(n));
        auto gen = [&](const ir::BufferNode*, int64_t) { return std::uniform_real_distribution<double>(-1, 1)(rng); };
        ASSERT_NO_FATAL_FAILURE(expect_matches_float64(kernel, f, {{"M", 5}, {"K", k}, {"N", n}}, gen,
                                                       static_cast<size_t>(5 * n), compared));
      }
  }
  EXPECT_EQ(compared, 2 * 3 * 5 * 40 * 41 / 2);
  // The copies went through register tiles: 16- and 8-wide shuffles.
  std::string ir = llvm_ir_text(*p.module, error).value_or("");
  ASSERT_FALSE(ir.empty()) << error;
  EXPECT_NE(ir.find("shufflevector <16 x float>"), std::string::npos);
  EXPECT_NE(ir.find("shufflevector <8 x double>"), std::string::npos);
}

// Contractions whose output loop runs along contiguous operand rows go
// through the backend's lane blocks (vector accumulators in registers,
// blocks of 32 or 64 lanes, then whole vectors, then a masked one): every N
// from 0 to 70 and one above the old 1024-lane limit, M = 5 (a tile of 4 rows and a row
// alone), f32 and f64, a max reduction, a sum with a lane-invariant factor
// and a result divided by a row value, against the float64 reference. A lane
// stored past N would land in the next row (already written by then, as
// blocks go over the rows of a tile in turn), which the comparison catches.
TEST(LlvmBackend, LaneBlocksMatchFloat64Reference) {
  const std::string text = R"(
fn ab(a: [M, K]f32, b: [K, N]f32) [M, N]f32 {
    let c: [M, N]f32;
    c[i, j] = reduce(+, a[i, r] * b[r, j]);
    return c;
}
fn ab64(a: [M, K]f64, b: [K, N]f64) [M, N]f64 {
    let c: [M, N]f64;
    c[i, j] = reduce(+, a[i, r] * b[r, j]);
    return c;
}
fn abmax(a: [M, K]f32, b: [K, N]f32) [M, N]f32 {
    let c: [M, N]f32;
    c[i, j] = reduce(max, a[i, r] - abs(b[r, j]));
    return c;
}
fn scaled(a: [M, K]f32, b: [K, N]f32, s: [M]f32) [M, N]f32 {
    let c: [M, N]f32;
    c[i, j] = reduce(+, (a[i, r] * 2.0) * (b[r, j] - 0.5)) / s[i];
    return c;
}
)";
  Program p = compile("lanes.toy", text);
  ASSERT_TRUE(p.module);
  std::string error;
  auto jit = JitProgram::compile(*p.module, error);
  ASSERT_TRUE(jit) << error;
  std::mt19937 rng(5);
  int compared = 0;
  for (const char* name : {"ab", "ab64", "abmax", "scaled"}) {
    SCOPED_TRACE(name);
    const ir::Func& f = func_named(*p.module, name);
    auto kernel = jit->kernel(name);
    ASSERT_NE(kernel, nullptr);
    std::vector<int64_t> widths;
    for (int64_t n = 0; n <= 70; ++n) widths.push_back(n);
    widths.push_back(1100);
    for (int64_t n : widths) {
      SCOPED_TRACE("N " + std::to_string(n));
      auto gen = [&](const ir::BufferNode* b, int64_t) {
        if (b->name == "s") return std::uniform_real_distribution<double>(0.5, 2)(rng);
        return std::uniform_real_distribution<double>(-1, 1)(rng);
      };
      ASSERT_NO_FATAL_FAILURE(
          expect_matches_float64(kernel, f, {{"M", 5}, {"K", 7}, {"N", n}}, gen, static_cast<size_t>(5 * n), compared));
    }
  }
  EXPECT_EQ(compared, 4 * 5 * (70 * 71 / 2 + 1100));
  // The lane blocks are what ran: vector fused multiply-adds and masked tails.
  std::string ir = llvm_ir_text(*p.module, error).value_or("");
  ASSERT_FALSE(ir.empty()) << error;
  EXPECT_NE(ir.find("llvm.fmuladd.v16f32"), std::string::npos);
  EXPECT_NE(ir.find("llvm.fmuladd.v8f64"), std::string::npos);
  EXPECT_NE(ir.find("llvm.masked.store.v16f32"), std::string::npos);
  EXPECT_NE(ir.find("llvm.masked.load.v16f32"), std::string::npos);
}

// An integer division by zero in a parallel loop body, on a worker thread
// or the caller, comes back as the kernel's status (DCC_ERR_INVALID_ARGUMENT)
// with its message on the calling thread; without the zero the results are
// the quotients, computed here independently.
TEST(LlvmBackend, ErrorInParallelBodyIsReturned) {
  const char* text = R"(
type Ragged = coupling {
    data: [b: B][len[b]]i32,
    len: [B]i32
}
fn dense_div(x: [N]i32, y: [N]i32) [N]i32 {
    let z: [N]i32;
    z[i] = x[i] / y[i];
    return z;
}
fn ragged_div(x: Ragged) Ragged {
    let out = Ragged { data: [b: B][x.len[b]]i32, len: x.len };
    out.data[b][i] = 1000 / x.data[b][i];
    return out;
}
)";
  Program p = compile("div.toy", text);
  ASSERT_TRUE(p.module) << "the test program does not compile";
  std::string error;
  auto jit = JitProgram::compile(*p.module, error);
  ASSERT_TRUE(jit) << error;
  for (const char* name : {"dense_div", "ragged_div"}) {
    SCOPED_TRACE(name);
    const ir::Func& f = func_named(*p.module, name);
    ASSERT_EQ(count_parallel(f.body), 1);
    auto kernel = jit->kernel(name);
    ASSERT_NE(kernel, nullptr);
    const bool dense = std::string(name) == "dense_div";
    std::map<std::string, int64_t> sizes = dense ? std::map<std::string, int64_t>{{"N", 5000}}
                                                 : std::map<std::string, int64_t>{{"B", 64}};
    auto gen = [&](const ir::BufferNode* b, int64_t k) -> double {
      if (!dense && b->dims.size() == 1) return k % 5 == 0 ? 0 : 10 + k % 7;  // lengths
      return 1 + k % 9;
    };
    auto inputs = ir::Interpreter::make_inputs(f, sizes, gen);
    std::ostringstream sink;
    ir::Interpreter ref(sink);
    ref.run(f, sizes, inputs);
    // dense_div: inputs x, y (both 1 + k % 9); ragged_div: lengths, data.
    std::vector<const ir::BufferNode*> in;
    for (const auto& b : f.buffers)
      if (b->kind == ir::BufferKind::Input) in.push_back(b.get());
    ASSERT_EQ(in.size(), 2u);
    const ir::BufferNode* divisor = dense ? in[1] : (in[0]->dims.size() > 1 ? in[0] : in[1]);
    for (int threads : {1, 4}) {
      dcc_set_num_threads(threads);
      std::vector<HostBuffer> host;
      dcc_clear_error();
      ASSERT_EQ(run_kernel(kernel, f, sizes, inputs, ref, host), 0) << dcc_last_error();
      // The quotient, by hand: x / y = 1 (dense), 1000 / data[k] (ragged).
      const HostBuffer& out = host.back();
      const std::vector<double>& den = inputs.at(divisor);
      ASSERT_GT(den.size(), 100u);
      for (size_t k = 0; k < den.size(); ++k) {
        double want = dense ? 1 : static_cast<double>(1000 / static_cast<int>(den[k]));
        ASSERT_EQ(out.get(k), want) << k;
      }
      for (size_t zero_at : {size_t{0}, inputs.at(divisor).size() * 3 / 4, inputs.at(divisor).size() - 1}) {
        auto bad = inputs;
        bad.at(divisor)[zero_at] = 0;
        dcc_clear_error();
        EXPECT_EQ(run_kernel(kernel, f, sizes, bad, ref, host), DCC_ERR_INVALID_ARGUMENT) << "threads " << threads;
        EXPECT_EQ(dcc_last_status(), DCC_ERR_INVALID_ARGUMENT);
        EXPECT_NE(std::string(dcc_last_error()).find("integer division by zero"), std::string::npos)
            << dcc_last_error();
      }
    }
  }
  dcc_set_num_threads(0);
}

}  // namespace
}  // namespace dccc::backend
