// fuse_row_sums: a row sum summed in the contraction that divides by it.
// Which sums are fused is decided here by reading each program; a fused
// program must compute the same bits as the unfused one (interpreter runs on
// random length patterns, zero-length sequences, B = 1, one long sequence).
#include "ir/fuse_row_sums.h"

#include <gtest/gtest.h>

#include "ir/fuse_elementwise.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "tests/unit/ir/test_support.h"

namespace dccc::ir {
namespace {

using testing::lower_source;
using testing::Lowered;

std::string mha() { return testing::mha_source(); }
using testing::replaced;

/// The CUDA pipeline's fusions on `fn` of `text`: what fuse_row_sums fused.
std::vector<std::string> fused_in(const std::string& text, std::string* ir = nullptr, const std::string& fn = "mha") {
  auto passes = [](Func& f) {
    fuse_elementwise(f);
    return fuse_row_sums(f);
  };
  return testing::fused_by(text, passes, "fuse-row-sums", fn, ir);
}

TEST(FuseRowSums, AttentionRowSumIsSummedInTheOutputContraction) {
  std::string ir;
  EXPECT_EQ(fused_in(mha(), &ir), std::vector<std::string>{"row_sum"});
  // No tensor row_sum any more: a scalar, set and summed in the output's
  // reduction next to its own accumulator, divides the output.
  EXPECT_EQ(ir.find("local row_sum"), std::string::npos) << ir;
  EXPECT_NE(ir.find("scalar row_sum: f32"), std::string::npos) << ir;
  EXPECT_NE(ir.find("row_sum[] = (row_sum[] + exp(("), std::string::npos) << ir;
  EXPECT_NE(ir.find("/ row_sum[])"), std::string::npos) << ir;
}

TEST(FuseRowSums, NotFusedWhenTheSumHasAnotherReader) {
  // A second statement reads row_sum (an unread tensor would be dropped by
  // fuse_elementwise, so the reader updates the result).
  EXPECT_EQ(fused_in(replaced(mha(), "    return out;",
                              "    out.data[b][i, h, d] = out.data[b][i, h, d] + row_sum[b][i, h] * 0.0;\n    return out;")),
            std::vector<std::string>{});
}

TEST(FuseRowSums, NotFusedWhenTheSummandIsNotAFactor) {
  EXPECT_EQ(fused_in(replaced(mha(), "row_sum[b][i, h] = reduce(+, p[b][i, h, j]);",
                              "row_sum[b][i, h] = reduce(+, p[b][i, h, j] * 2.0);")),
            std::vector<std::string>{});
}

TEST(FuseRowSums, NotFusedWhenWhatTheSummandReadsChangesInBetween) {
  // p is written again between the sum and the output (so it is not
  // computed in its readers either): the output's p is not the summed one.
  EXPECT_EQ(fused_in(replaced(mha(), "    // The output lives in a coupling",
                              "    p[b][i, h, j] = p[b][i, h, j] * 0.5;\n    // The output lives in a coupling")),
            std::vector<std::string>{});
  // Writing row_max in between changes nothing for the sum: p, which reads
  // it, is then stored (not computed in its readers), and p is unchanged.
  EXPECT_EQ(fused_in(replaced(mha(), "    // The output lives in a coupling",
                              "    row_max[b][i, h] = row_max[b][i, h] + 1.0;\n    // The output lives in a coupling")),
            std::vector<std::string>{"row_sum"});
}

TEST(FuseRowSums, ExamplesAndRunProgramsComputeTheSameBits) {
  int ran = 0, skipped = 0, fused = 0;
  testing::compare_programs_transformed(
      {DCCC_EXAMPLES_DIR, DCCC_LANG_RUN_DIR},
      [&](Func& f, DiagnosticEngine&) {
        fuse_elementwise(f);
        fused += static_cast<int>(fuse_row_sums(f).size());
        return verify(f, "fuse-row-sums").empty();
      },
      ran, skipped);
  EXPECT_GT(ran, 40);
  EXPECT_GE(fused, 1);  // mha at least
}

}  // namespace
}  // namespace dccc::ir
