// Unit tests of frontend/generics.h: instance names, constraints, and what
// instantiate_generics() leaves in the program (the generics moved out,
// instances in source order, alias uses renamed, schedules copied).
#include "frontend/generics.h"

#include <gtest/gtest.h>

#include "frontend/parser.h"

namespace dccc {
namespace {

ast::TypeParam param(std::vector<std::string> constraint) {
  ast::TypeParam p;
  p.name.name = "T";
  for (auto& c : constraint) p.constraint.push_back({c, {}});
  return p;
}

TEST(Generics, InstanceNames) {
  EXPECT_EQ(instance_name("softmax", {"f32"}), "softmax__f32");
  EXPECT_EQ(instance_name("nn.Rows", {"bf16"}), "nn.Rows__bf16");
  EXPECT_EQ(instance_name("mix", {"f32", "i64"}), "mix__f32_i64");
}

TEST(Generics, ConstraintTypes) {
  using V = std::vector<std::string>;
  EXPECT_EQ(constraint_types(param({"float"})), (V{"f16", "bf16", "f32", "f64"}));
  EXPECT_EQ(constraint_types(param({"int"})), (V{"i32", "i64"}));
  EXPECT_EQ(constraint_types(param({})).size(), 7u);  // `<T>` is `any`
  EXPECT_EQ(constraint_types(param({"bf16", "f32"})), (V{"bf16", "f32"}));  // written order
  EXPECT_EQ(constraint_types(param({"int", "f32"})), (V{"i32", "i64", "f32"}));
  EXPECT_TRUE(constraint_types(param({"real"})).empty());
  EXPECT_TRUE(constraint_types(param({"f32", "float"})).empty());  // f32 twice
  EXPECT_EQ(constraint_text(param({"f16", "bf16"})), "f16 | bf16");
  EXPECT_EQ(constraint_text(param({})), "any");
}

TEST(Generics, InstancesReplaceTheGenericInSourceOrder) {
  SourceFile f("g.toy",
               "type V<T: f32 | f64> = coupling { data: [N]T }\n"
               "fn first(x: V<f64>) [N]f64 { return x.data; }\n"
               "fn s<T: f32 | bf16>(x: [N]T) [N]T { let y: [N]T; y[i] = T(2.0) * x[i]; return y; }\n"
               "schedule s { split(y.i, 4); }\n"
               "fn last(v: f32) f32 { return v; }\n");
  DiagnosticEngine diags(&f);
  auto p = parse(f, diags);
  ASSERT_TRUE(p);
  ASSERT_TRUE(instantiate_generics(*p, diags));
  EXPECT_FALSE(diags.has_errors());
  ASSERT_EQ(p->generic_fns.size(), 1u);
  ASSERT_EQ(p->generic_types.size(), 1u);
  // Only the alias instance used (V<f64>), not one per allowed type.
  ASSERT_EQ(p->types.size(), 1u);
  EXPECT_EQ(p->types[0].name.name, "V__f64");
  ASSERT_TRUE(p->types[0].instance_of);
  EXPECT_EQ(p->types[0].instance_of->generic, "V");
  EXPECT_EQ(p->types[0].type->fields[0].type->name.name, "f64");
  std::vector<std::string> fns;
  for (auto [kind, i] : p->order)
    if (kind == 2) fns.push_back(p->fns[i].name.name);
  EXPECT_EQ(fns, (std::vector<std::string>{"first", "s__f32", "s__bf16", "last"}));
  EXPECT_EQ(p->fns[0].params[0].type->name.name, "V__f64");  // the use renamed
  // The cast `T(2.0)` became `bf16(2.0)` in the bf16 instance.
  const ast::Expr& rhs = *p->fns[2].body[1]->value;
  EXPECT_EQ(rhs.operands[0]->name, "bf16");
  ASSERT_EQ(p->schedules.size(), 2u);
  EXPECT_EQ(p->schedules[0].func.name, "s__f32");
  EXPECT_EQ(p->schedules[1].func.name, "s__bf16");
}

TEST(Generics, BadUsesAreLocatedErrors) {
  SourceFile f("g.toy",
               "type V<T: float> = coupling { data: [N]T }\n"
               "fn a(x: V) [N]f32 { return x.data; }\n"
               "fn b(x: V<i32>) [N]i32 { return x.data; }\n");
  DiagnosticEngine diags(&f);
  auto p = parse(f, diags);
  ASSERT_TRUE(p);
  EXPECT_FALSE(instantiate_generics(*p, diags));
  ASSERT_EQ(diags.diagnostics().size(), 2u);
  EXPECT_EQ(diags.diagnostics()[0].kind, DiagKind::GenericArguments);
  EXPECT_EQ(diags.diagnostics()[0].range.line, 2);
  EXPECT_EQ(diags.diagnostics()[1].kind, DiagKind::GenericConstraint);
  EXPECT_EQ(diags.diagnostics()[1].range.line, 3);
}

}  // namespace
}  // namespace dccc
