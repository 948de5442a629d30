// Differential tests of storage-access lowering (CoRa Algorithm 1).
//
// Every function of every example is lowered, run by the layout-free
// interpreter (buffers as maps from index tuple to value) and again after
// storage lowering (flat offsets computed from the prelude's A_d arrays),
// on random length patterns including zero-length sequences, B = 1 and
// one very long sequence. The outputs must be identical bit for bit: both
// runs do the same arithmetic in the same order, so any difference is an
// offset computed wrongly.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "ir/interpreter.h"
#include "ir/storage_lowering.h"
#include "tests/unit/ir/test_support.h"

namespace dccc::ir {
namespace {

using testing::lower_source;
using testing::Lowered;

int ran_ = 0, skipped_ = 0;

TEST(StorageLowering, ExamplesAgreeWithLayoutFreeInterpreter) {
  int compared = testing::compare_programs_transformed(
      {DCCC_EXAMPLES_DIR}, [](Func& f, DiagnosticEngine& d) { return lower_storage(f, d); }, ran_, skipped_);
  EXPECT_GE(compared, 6);
  // Only patterns that violate a `where` (empty sequences in where_layout.toy) may be skipped.
  EXPECT_GE(ran_, 40) << ran_ << " runs, " << skipped_ << " skipped";
  EXPECT_LE(skipped_, 12) << ran_ << " runs, " << skipped_ << " skipped";
}

TEST(StorageLowering, OffsetsOfAPackedCouplingAreCuSeqlensTimesRow) {
  // [b: B][seqlen[b], H, D] packed: element (b, i, h, d) must live at
  // (cu_seqlens[b] + i) * H * D + h * D + d — the FlashAttention layout.
  // The kernel writes a value encoding (b, i, h, d); the expected buffer is
  // built here by that formula, independently of the compiler.
  Lowered l = lower_source("t.toy", R"(
type S = coupling { data: [b: B][seqlen[b], H, D]f32, seqlen: [B]i32 }
fn tag(x: S) [b: B][x.seqlen[b], H, D]f32 {
  let y: [b: B][x.seqlen[b], H, D]f32;
  y[b][i, h, d] = f32(b * 1000 + i * 100 + h * 10 + d) + x.data[b][i, h, d] * 0.0;
  return y;
})");
  ASSERT_TRUE(l.module);
  Func& f = l.module->funcs[0];
  ASSERT_TRUE(lower_storage(f, *l.diags));
  const int64_t B = 3, H = 2, D = 4;
  std::map<std::string, int64_t> sizes{{"B", B}, {"H", H}, {"D", D}};
  std::vector<int64_t> lens{2, 0, 3};
  auto inputs = Interpreter::make_inputs(f, sizes, [&](const BufferNode* b, int64_t k) {
    return is_int(b->type) ? static_cast<double>(lens[k]) : 0.0;
  });
  std::ostringstream out;
  Interpreter in(out);
  in.run(f, sizes, inputs);
  const BufferNode* y = nullptr;
  for (const auto& b : f.buffers)
    if (b->kind == BufferKind::Output) y = b.get();
  ASSERT_NE(y, nullptr);
  std::vector<double> expected(5 * H * D, -1);
  int64_t cu = 0;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < lens[b]; ++i)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < D; ++d) expected[(cu + i) * H * D + h * D + d] = b * 1000 + i * 100 + h * 10 + d;
    cu += lens[b];
  }
  EXPECT_EQ(in.packed(y), expected);
}

}  // namespace
}  // namespace dccc::ir
