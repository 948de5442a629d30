// The IR verifier accepts what the passes produce and rejects broken IR.
#include "ir/verifier.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "frontend/parser.h"
#include "ir/expand_prints.h"
#include "ir/lower.h"
#include "ir/storage_lowering.h"
#include "typecheck/checker.h"
#include "tests/unit/program_files.h"
#include "tests/unit/test_paths.h"

namespace dccc::ir {
namespace {

Buffer tensor(const std::string& name, std::vector<Expr> extents) {
  auto b = std::make_shared<BufferNode>();
  b->name = name;
  for (size_t i = 0; i < extents.size(); ++i) b->dims.push_back({make_var("d" + std::to_string(i)), extents[i]});
  return b;
}

bool mentions_problem(const std::vector<std::string>& problems, const std::string& text) {
  for (const auto& p : problems)
    if (p.find(text) != std::string::npos) return true;
  return false;
}

TEST(Verifier, AcceptsEveryPassOnEveryExample) {
  int verified = 0;
  for (const auto& path : test_files::toy_files({test_paths::examples_dir()})) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    SourceFile file(path.string(), text.str());
    DiagnosticEngine diags(&file);
    auto program = parse(file, diags);
    ASSERT_TRUE(program);
    auto checked = check(*program, diags);
    auto module = lower(*checked, diags);
    if (!module) continue;
    for (auto& f : module->funcs) {
      EXPECT_EQ(verify(f, "lowering"), std::vector<std::string>{}) << f.name;
      expand_prints(f);
      EXPECT_EQ(verify(f, "expand-prints"), std::vector<std::string>{}) << f.name;
      ASSERT_TRUE(lower_storage(f, diags));
      EXPECT_EQ(verify(f, "storage-lowering"), std::vector<std::string>{}) << f.name;
      ++verified;
    }
  }
  EXPECT_GE(verified, test_files::at_least(10));
}

TEST(Verifier, RejectsAVariableOutsideItsLoop) {
  Func f;
  f.name = "f";
  Buffer x = tensor("x", {build::int_imm(4)});
  f.buffers = {x};
  Var i = make_var("i");
  f.body = build::store(x, {build::var(i)}, build::float_imm(1.0, Scalar::F32));
  EXPECT_TRUE(mentions_problem(verify(f, "test"), "variable `i` is used outside the loop"));
  f.body = build::for_loop(i, build::int_imm(4), f.body);
  EXPECT_EQ(verify(f, "test"), std::vector<std::string>{});
}

TEST(Verifier, RejectsWrongIndexCountsAndForeignBuffers) {
  Func f;
  f.name = "f";
  Buffer x = tensor("x", {build::int_imm(2), build::int_imm(3)});
  Buffer stranger = tensor("stranger", {build::int_imm(2)});
  f.buffers = {x};
  Var i = make_var("i");
  f.body = build::for_loop(i, build::int_imm(2),
                           build::seq({build::store(x, {build::var(i)}, build::float_imm(0, Scalar::F32)),
                                       build::store(stranger, {build::var(i)}, build::float_imm(0, Scalar::F32))}));
  auto problems = verify(f, "test");
  EXPECT_TRUE(mentions_problem(problems, "a store to `x` with 1 index(es); it needs 2"));
  EXPECT_TRUE(mentions_problem(problems, "not one of the function's buffers"));
}

TEST(Verifier, RejectsMixedOperandTypesAndFlatAccessBeforeStorageLowering) {
  Func f;
  f.name = "f";
  Buffer x = tensor("x", {build::int_imm(2), build::int_imm(3)});
  f.buffers = {x};
  f.body = build::flat_store(x, build::int_imm(0),
                             build::binary(BinOp::Add, build::float_imm(1, Scalar::F32), build::float_imm(1, Scalar::F64)));
  auto problems = verify(f, "test");
  EXPECT_TRUE(mentions_problem(problems, "flat offset before storage lowering"));
  EXPECT_TRUE(mentions_problem(problems, "`+` on `f32` and `f64` operands"));
}

}  // namespace
}  // namespace dccc::ir
