// tile_contractions: every example runs bit for bit as before the pass in
// the interpreter (each output's accumulator sees the same operations in the
// same order), on ragged lengths that are and are not multiples of the tile
// (zero-length sequences, B = 1, one long sequence); and hand-built
// contractions of every size from 0 to 9 agree with a float64 sum computed
// here. What the pass makes of a nest, and the nests it must leave alone,
// are IR text tests: tests/passes/tile-contractions.
#include "ir/tile_contractions.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "frontend/parser.h"
#include "ir/interpreter.h"
#include "ir/lower.h"
#include "ir/mark_parallel.h"
#include "ir/reorder_loops.h"
#include "ir/verifier.h"
#include "tests/unit/ir/test_support.h"
#include "typecheck/checker.h"

namespace dccc::ir {
namespace {

using testing::buffer;
using testing::generator;
using testing::Pattern;

using testing::Lowered;
using testing::read_file;

/// Lowered, with the CPU passes that run before tiling.
Lowered lower_source(const std::string& name, const std::string& text) {
  Lowered l = testing::lower_source(name, text);
  if (l.module)
    for (auto& f : l.module->funcs) {
      mark_parallel(f);
      reorder_loops(f);
    }
  return l;
}

bool same(double x, double y) { return x == y || (std::isnan(x) && std::isnan(y)); }

TEST(TileContractions, ExamplesRunBitForBitAsBefore) {
  int tiled = 0, ran = 0;
  for (const auto& entry : std::filesystem::directory_iterator(DCCC_EXAMPLES_DIR)) {
    if (entry.path().extension() != ".toy") continue;
    std::string text = read_file(entry.path());
    Lowered plain = lower_source(entry.path().string(), text);
    if (!plain.module) continue;
    Lowered tiles = lower_source(entry.path().string(), text);
    SCOPED_TRACE(entry.path().string());
    for (size_t fi = 0; fi < plain.module->funcs.size(); ++fi) {
      Func& pf = plain.module->funcs[fi];
      Func& tf = tiles.module->funcs[fi];
      tiled += tile_contractions(tf);
      EXPECT_EQ(verify(tf, "tile-contractions"), std::vector<std::string>{});
      // Sizes 3 and 5 (H, D); lengths 0 .. 6 and 37: tiles of 4 with every remainder.
      for (int64_t size : {3, 5})
        for (Pattern pattern : {Pattern::Random, Pattern::WithZeros, Pattern::Single, Pattern::OneLong}) {
          std::map<std::string, int64_t> sizes;
          for (const auto& s : pf.sizes) sizes[s.name] = pattern == Pattern::Single && s.name == pf.sizes[0].name ? 1 : size;
          std::mt19937 rng(77 + static_cast<int>(pattern)), rng2 = rng;
          auto in1 = Interpreter::make_inputs(pf, sizes, generator(pattern, rng));
          auto in2 = Interpreter::make_inputs(tf, sizes, generator(pattern, rng2));
          std::ostringstream out1, out2;
          Interpreter a(out1), b(out2);
          try {
            a.run(pf, sizes, in1);
          } catch (const InterpError&) {
            continue;  // lengths that break a `where` contract
          }
          b.run(tf, sizes, in2);
          ++ran;
          EXPECT_EQ(out1.str(), out2.str());
          for (size_t bi = 0; bi < pf.buffers.size(); ++bi) {
            if (pf.buffers[bi]->kind != BufferKind::Output) continue;
            auto x = a.packed(pf.buffers[bi].get());
            auto y = b.packed(tf.buffers[bi].get());
            ASSERT_EQ(x.size(), y.size());
            for (size_t k = 0; k < x.size(); ++k)
              ASSERT_TRUE(same(x[k], y[k])) << pf.name << " " << pf.buffers[bi]->name << "[" << k << "]: " << x[k]
                                            << " before, " << y[k] << " after";
          }
        }
    }
  }
  // mha.toy and flash_attention.toy alone have two contractions each.
  EXPECT_GE(tiled, 4);
  EXPECT_GE(ran, 60);
}

/// out[i, j] = reduce(+, x[i, r] * y[.., ..]) over r, built by hand with
/// extents M (i), N (j), K (r).
struct Contraction {
  Func f;
  Buffer x = buffer("x", BufferKind::Input, 2);
  Buffer y = buffer("y", BufferKind::Input, 2);
  Buffer out = buffer("out", BufferKind::Output, 2);
  Buffer acc = buffer("acc", BufferKind::Scalar, 0);
  Var i = make_var("i"), j = make_var("j"), r = make_var("r");
  /// `y_jr`: y indexed [j, r] (q k^T: a 4 x 4 tile) or [r, j] (p v: y
  /// contiguous along j, a 4 x 1 tile).
  explicit Contraction(bool y_jr = true) {
    f.name = "f";
    f.sizes = {{"M"}, {"N"}, {"K"}};
    x->dims = {{x->dims[0].var, build::size("M")}, {x->dims[1].var, build::size("K")}};
    if (y_jr) y->dims = {{y->dims[0].var, build::size("N")}, {y->dims[1].var, build::size("K")}};
    else y->dims = {{y->dims[0].var, build::size("K")}, {y->dims[1].var, build::size("N")}};
    out->dims = {{out->dims[0].var, build::size("M")}, {out->dims[1].var, build::size("N")}};
    f.buffers = {x, y, out, acc};
    Expr vi = build::var(i), vj = build::var(j), vr = build::var(r);
    Expr term = build::binary(BinOp::Mul, build::load(x, {vi, vr}), build::load(y, y_jr ? std::vector<Expr>{vj, vr} : std::vector<Expr>{vr, vj}));
    Stmt red = build::for_loop(r, build::size("K"), build::store(acc, {}, build::binary(BinOp::Add, build::load(acc, {}), term)));
    Stmt body = build::seq({build::store(acc, {}, build::float_imm(0.5, Scalar::F32)), red,
                            build::store(out, {vi, vj}, build::binary(BinOp::Mul, build::load(acc, {}), build::float_imm(2, Scalar::F32)))});
    f.body = build::for_loop(i, build::size("M"), build::for_loop(j, build::size("N"), body));
  }
};

void check_against_float64(bool y_jr) {
  Contraction c(y_jr);
  ASSERT_EQ(tile_contractions(c.f), 1);
  EXPECT_EQ(verify(c.f, "tile-contractions"), std::vector<std::string>{});
  std::mt19937 rng(5);
  for (int64_t m = 0; m <= 9; ++m)
    for (int64_t n = 0; n <= 9; ++n) {
      int64_t k = 1 + (m + n) % 7;
      std::map<std::string, int64_t> sizes{{"M", m}, {"N", n}, {"K", k}};
      auto inputs = Interpreter::make_inputs(c.f, sizes, generator(Pattern::Random, rng));
      std::ostringstream out;
      Interpreter in(out);
      in.run(c.f, sizes, inputs);
      std::vector<double> got = in.packed(c.out.get());
      ASSERT_EQ(got.size(), static_cast<size_t>(m * n));
      const std::vector<double>& x = inputs.at(c.x.get());
      const std::vector<double>& y = inputs.at(c.y.get());
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double want = 0.5;
          for (int64_t r = 0; r < k; ++r) want += x[i * k + r] * (y_jr ? y[j * k + r] : y[r * n + j]);
          want *= 2;
          EXPECT_NEAR(got[i * n + j], want, 1e-5 * (1 + std::abs(want))) << "M " << m << " N " << n << " at (" << i << ", " << j << ")";
        }
    }
}

TEST(TileContractions, FourByFourTileMatchesFloat64ForEverySizeUpTo9) { check_against_float64(true); }

TEST(TileContractions, RowTileMatchesFloat64ForEverySizeUpTo9) { check_against_float64(false); }

}  // namespace
}  // namespace dccc::ir
