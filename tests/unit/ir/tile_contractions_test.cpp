// tile_contractions: every example runs bit for bit as before the pass in
// the interpreter (each output's accumulator sees the same operations in the
// same order), on ragged lengths that are and are not multiples of the tile
// (zero-length sequences, B = 1, one long sequence); and contractions
// written as IR text, of every size from 0 to 9, agree with a float64 sum computed
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
#include "ir/ir_parser.h"
#include "ir/lower.h"
#include "ir/mark_parallel.h"
#include "ir/reorder_loops.h"
#include "ir/verifier.h"
#include "tests/unit/ir/test_support.h"
#include "typecheck/checker.h"
#include "tests/unit/program_files.h"
#include "tests/unit/test_paths.h"

namespace dccc::ir {
namespace {

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
  for (const auto& path : test_files::toy_files({test_paths::examples_dir()})) {
    std::string text = read_file(path);
    Lowered plain = lower_source(path.string(), text);
    if (!plain.module) continue;
    Lowered tiles = lower_source(path.string(), text);
    SCOPED_TRACE(path.string());
    for (size_t fi = 0; fi < plain.module->funcs.size(); ++fi) {
      Func& pf = plain.module->funcs[fi];
      Func& tf = tiles.module->funcs[fi];
      tiled += tile_contractions(tf);
      EXPECT_EQ(verify(tf, "tile-contractions"), std::vector<std::string>{});
      // Sizes 3 and 5 (H, D); lengths 0 .. 6 and 37: tiles of 4 with every remainder.
      for (int64_t size : {3, 5})
        for (Pattern pattern : testing::patterns()) {
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
  EXPECT_GE(ran, testing::min_runs(60));
}

/// out[i, j] = 2 * (0.5 + sum over r of x[i, r] * y[.., ..]), extents M (i),
/// N (j), K (r), as IR text: `y_jr`: y indexed [j, r] (q k^T: a 4 x 4 tile)
/// or [r, j] (p v: y contiguous along j, a 4 x 1 tile). The tiled text is
/// tests/passes/tile-contractions; here it is run against float64 sums.
struct Contraction {
  std::unique_ptr<SourceFile> file;
  std::unique_ptr<DiagnosticEngine> diags;
  std::optional<Module> module;
  Func* f = nullptr;
  Buffer x, y, out;
  explicit Contraction(bool y_jr) {
    std::string text = std::string(R"(func f() {
  sizes M, N, K;
  input x: f32 [d0: M, d1: K];
)") + (y_jr ? "  input y: f32 [d0.1: N, d1.1: K];\n" : "  input y: f32 [d0.1: K, d1.1: N];\n") +
                       R"(  output out: f32 [d0.2: M, d1.2: N];
  scalar acc: f32;
  for i in 0 .. M {
    for j in 0 .. N {
      acc[] = 0.5f32;
      for r in 0 .. K {
        acc[] = (acc[] + (x[i, r] * )" + (y_jr ? "y[j, r]" : "y[r, j]") + R"());
      }
      out[i, j] = (acc[] * 2.0f32);
    }
  }
}
)";
    file = std::make_unique<SourceFile>("contraction.vloop", text);
    diags = std::make_unique<DiagnosticEngine>(file.get());
    module = parse_vloop(*file, *diags);
    EXPECT_TRUE(module) << text;
    if (!module) return;
    f = &module->funcs.at(0);
    for (const auto& b : f->buffers) {
      if (b->name == "x") x = b;
      if (b->name == "y") y = b;
      if (b->name == "out") out = b;
    }
  }
};

void check_against_float64(bool y_jr) {
  Contraction c(y_jr);
  ASSERT_TRUE(c.f);
  ASSERT_EQ(tile_contractions(*c.f), 1);
  EXPECT_EQ(verify(*c.f, "tile-contractions"), std::vector<std::string>{});
  std::mt19937 rng(5);
  for (int64_t m = 0; m <= 9; ++m)
    for (int64_t n = 0; n <= 9; ++n) {
      int64_t k = 1 + (m + n) % 7;
      std::map<std::string, int64_t> sizes{{"M", m}, {"N", n}, {"K", k}};
      auto inputs = Interpreter::make_inputs(*c.f, sizes, generator(Pattern::Random, rng));
      std::ostringstream out;
      Interpreter in(out);
      in.run(*c.f, sizes, inputs);
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
