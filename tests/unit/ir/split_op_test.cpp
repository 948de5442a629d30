// The refusals of ir/split_op.h and ir/hfuse.h that no `.toy` program
// reaches (the language gives each assignment its own target and
// accumulator, and keeps prints out of assignments), on IR written as text:
// each one leaves the function unchanged and says why.
#include <gtest/gtest.h>

#include "ir/hfuse.h"
#include "ir/ir_parser.h"
#include "ir/printer.h"
#include "ir/split_op.h"

namespace dccc::ir {
namespace {

const char* kIr = R"(func main() {
  local lens: i32 [k: 3];
  local data: i64 [b: 3, i: i64(lens[b])];
  local other: i64 [b: 3, i: i64(lens[b])];
  scalar sum: i64;
  lens[0] = 2i32;
  lens[1] = 0i32;
  lens[2] = 5i32;
  for b0 in 0 .. 3 {
    for i0 in 0 .. i64(lens[b0]) {
      println "at " (i0);
    }
  }
  for b1 in 0 .. 3 {
    for i1 in 0 .. i64(lens[b1]) {
      data[b1, i1] = (data[b1, 0] + i1);
    }
  }
  sum[] = 0;
  for b2 in 0 .. 3 {
    for i2 in 0 .. i64(lens[b2]) {
      sum[] = (sum[] + i2);
    }
  }
  for b3 in 0 .. 3 {
    for i3 in 0 .. i64(lens[b3]) {
      other[b3, 0] = i3;
    }
  }
}
)";

struct Parsed {
  std::unique_ptr<SourceFile> file;
  std::unique_ptr<DiagnosticEngine> diags;
  std::optional<Module> module;
};

Parsed parsed() {
  Parsed p;
  p.file = std::make_unique<SourceFile>("split_op_test.vloop", kIr);
  p.diags = std::make_unique<DiagnosticEngine>(p.file.get());
  p.module = parse_vloop(*p.file, *p.diags);
  return p;
}

/// The variable of the loop named `name` + `n`.
Var loop(const Func& f, const std::string& name, int n) {
  Var found;
  each_stmt(f.body, [&](const StmtNode& x) {
    if (x.kind == StmtKind::For && x.var->name == name + std::to_string(n)) found = x.var;
  });
  return found;
}

std::string split_refusal(int nest) {
  Parsed p = parsed();
  EXPECT_TRUE(p.module);
  Func& f = p.module->funcs[0];
  std::string before = print(*p.module), why;
  auto out = split_op(f, loop(f, "i", nest), 4, [](const VarNode* v) { return v->name + "_rest"; }, why);
  EXPECT_FALSE(out);
  EXPECT_EQ(print(*p.module), before);
  return why;
}

TEST(SplitOpRefusals, UnreachableFromTheLanguage) {
  EXPECT_EQ(split_refusal(0), "the statement prints or checks a condition, whose order would change");
  EXPECT_EQ(split_refusal(1), "`data` is read in the statement that writes it");
  EXPECT_EQ(split_refusal(2), "`sum` accumulates across iterations of `i2`");
  EXPECT_EQ(split_refusal(3), "`other` is not stored at an element of its own in each iteration of `i3`");
}

TEST(HFuseRefusals, UnreachableFromTheLanguage) {
  auto refusal = [](int a, int b) {
    Parsed p = parsed();
    EXPECT_TRUE(p.module);
    Func& f = p.module->funcs[0];
    std::string before = print(*p.module);
    HFuseRefusal why;
    Var fv = hfuse(f, {loop(f, "b", a), loop(f, "b", b)}, {"A.b", "B.b"}, "b_b",
                   [](size_t, size_t) { return false; }, why);
    EXPECT_FALSE(fv);
    EXPECT_EQ(print(*p.module), before);
    return why.message;
  };
  EXPECT_EQ(refusal(0, 1), "the nest of `A.b` prints or checks a condition, whose order would change");
  EXPECT_EQ(refusal(2, 3), "`sum` accumulates across iterations of `A.b`");
}

// hfuse where it is legal: both nests in one loop over 3 + 3 iterations
// (serial, as the nests were),
// the statement between them moved before it.
TEST(SplitOp, SplitsAndFusesIndependentNests) {
  Parsed p = parsed();
  ASSERT_TRUE(p.module);
  Func& f = p.module->funcs[0];
  // `data` and `other` are independent (each reads only itself and lens).
  HFuseRefusal hwhy;
  Var fv = hfuse(f, {loop(f, "b", 1), loop(f, "b", 3)}, {"data.b", "other.b"}, "b_b",
                 [](size_t, size_t) { return false; }, hwhy);
  ASSERT_TRUE(fv) << hwhy.message;
  std::string text = print(*p.module);
  EXPECT_NE(text.find("for b_b in 0 .. 6 {"), std::string::npos) << text;
  EXPECT_NE(text.find("if (b_b < 3) {"), std::string::npos) << text;
  EXPECT_NE(text.find("other[(b_b - 3), 0] = i3"), std::string::npos) << text;
  // The statement between them (sum's) moved before the fused loop.
  EXPECT_LT(text.find("sum[] = 0;"), text.find("for b_b in")) << text;
}

}  // namespace
}  // namespace dccc::ir
