// fuse_row_max: a row maximum folded in by the statement that writes the
// rows. Which maxima are fused is decided here by reading each program; a
// fused program must compute the same bits as the unfused one (interpreter
// runs on random length patterns, zero-length sequences, B = 1, one long
// sequence).
#include "ir/fuse_row_max.h"

#include <gtest/gtest.h>

#include "ir/fuse_elementwise.h"
#include "ir/fuse_row_sums.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "tests/unit/ir/test_support.h"

namespace dccc::ir {
namespace {

using testing::lower_source;
using testing::Lowered;

std::string mha() { return testing::mha_source(); }
using testing::replaced;

/// The CUDA pipeline's fusions on `fn` of `text`: what fuse_row_max fused.
std::vector<std::string> fused_in(const std::string& text, std::string* ir = nullptr, const std::string& fn = "mha") {
  auto passes = [](Func& f) {
    fuse_elementwise(f);
    fuse_row_sums(f);
    return fuse_row_max(f);
  };
  return testing::fused_by(text, passes, "fuse-row-max", fn, ir);
}

TEST(FuseRowMax, AttentionRowMaxIsFoldedInByTheScores) {
  std::string ir;
  EXPECT_EQ(fused_in(mha(), &ir), std::vector<std::string>{"row_max"});
  // The scores statement keeps each value in a scalar, stores it and folds
  // it into its row's maximum, which a statement before it starts at -inf;
  // no reduce(max) is left.
  EXPECT_NE(ir.find("scalar scores_value: f32"), std::string::npos) << ir;
  EXPECT_NE(ir.find("row_max[b.5, i, h] = f32(-inf);"), std::string::npos) << ir;
  size_t start = ir.find("= f32(-inf);");
  size_t value = ir.find("scores_value[] = (acc0[] / sqrt(f32(D)));");
  size_t store = ir.find("] = scores_value[];");
  size_t fold = ir.find("] = max(row_max[");
  ASSERT_NE(fold, std::string::npos) << ir;
  EXPECT_LT(start, value);
  EXPECT_LT(value, store);
  EXPECT_LT(store, fold);
  EXPECT_NE(ir.find("scores_value[])"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("acc1"), std::string::npos) << ir;  // the max's accumulator is gone
}

TEST(FuseRowMax, NotFusedWhenTheMaximumHasAnotherWriter) {
  EXPECT_EQ(fused_in(replaced(mha(), "    let p: [b: B]",
                              "    row_max[b][i, h] = row_max[b][i, h] + 1.0;\n    let p: [b: B]")),
            std::vector<std::string>{});
}

TEST(FuseRowMax, NotFusedWhenTheRowsAreWrittenTwice) {
  EXPECT_EQ(fused_in(replaced(mha(), "    // Numerically stable softmax",
                              "    scores[b][i, h, j] = scores[b][i, h, j] * 0.5;\n    // Numerically stable softmax")),
            std::vector<std::string>{});
}

TEST(FuseRowMax, NotFusedWhenTheOperandIsNotAnElement) {
  EXPECT_EQ(fused_in(replaced(mha(), "reduce(max, scores[b][i, h, j])", "reduce(max, scores[b][i, h, j] * 2.0)")),
            std::vector<std::string>{});
}

constexpr const char* kColumns = R"(
fn cols(x: [n: N, m: M]f32) [m: M]f32 {
    let s: [n: N, m: M]f32;
    s[i, j] = reduce(+, x[i, k] * x[i, k]) + x[i, j];
    let rmax: [n: N]f32;
    rmax[i] = reduce(max, s[i, j]);
    let cmax: [m: M]f32;
    cmax[j] = reduce(max, s[i, j]);
    let out: [m: M]f32;
    out[j] = reduce(+, cmax[j] + rmax[i]);
    return out;
}
)";

TEST(FuseRowMax, OnlyTheLastDimensionIsARow) {
  // rmax runs over s's last dimension; cmax over its first: not a row, so
  // its own max loop stays.
  std::string ir;
  EXPECT_EQ(fused_in(kColumns, &ir, "cols"), std::vector<std::string>{"rmax"});
  EXPECT_NE(ir.find("] = max(acc"), std::string::npos) << ir;
}

TEST(FuseRowMax, NotFusedWhenTheMaximumIsReadBefore) {
  // rmax is read before its statement (zero-filled there): starting it
  // before s's statement would change what that read sees.
  std::string text = replaced(kColumns, "+ x[i, j];", "+ x[i, j] + rmax[i];");
  text = replaced(text, "    let rmax: [n: N]f32;\n", "");
  text = replaced(text, "    let s: [n: N, m: M]f32;", "    let rmax: [n: N]f32;\n    let s: [n: N, m: M]f32;");
  EXPECT_EQ(fused_in(text, nullptr, "cols"), std::vector<std::string>{});
}

TEST(FuseRowMax, ExamplesAndRunProgramsComputeTheSameBits) {
  int ran = 0, skipped = 0, fused = 0;
  testing::compare_programs_transformed(
      {DCCC_EXAMPLES_DIR, DCCC_LANG_RUN_DIR},
      [&](Func& f, DiagnosticEngine&) {
        fuse_elementwise(f);
        fuse_row_sums(f);
        fused += static_cast<int>(fuse_row_max(f).size());
        return verify(f, "fuse-row-max").empty();
      },
      ran, skipped);
  EXPECT_GT(ran, 40);
  EXPECT_GE(fused, 2);  // mha and flash_attention at least
}

}  // namespace
}  // namespace dccc::ir
