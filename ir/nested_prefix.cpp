#include "ir/nested_prefix.h"

namespace dccc::ir {
namespace {

Expr i64(const Expr& e) { return e->type == Scalar::I64 ? e : build::cast(Scalar::I64, e); }
Expr add(Expr a, Expr b) { return build::binary(BinOp::Add, i64(a), i64(b)); }

Buffer aux(const std::string& name, Expr total) {
  auto a = std::make_shared<BufferNode>();
  a->name = name;
  a->type = Scalar::I64;
  a->kind = BufferKind::Aux;
  a->dims = {{make_var("x"), total}};
  a->pad = {1};
  a->total = total;
  return a;
}

}  // namespace

NestedPrefix nested_prefix(const std::string& starts_name, const std::string& prefix_name, const Var& outer,
                           const Expr& outer_extent, const Var& inner, const Expr& extent, const Expr& slice) {
  NestedPrefix p;
  p.starts = aux(starts_name, add(outer_extent, build::int_imm(1)));
  p.prefix = aux(prefix_name, build::load(p.starts, {i64(outer_extent)}));
  Expr o = build::var(outer), y = build::var(inner);
  // S[0] = 0; for o: S[o + 1] = S[o] + extent(o) + 1
  p.fill_starts = build::seq(
      {build::flat_store(p.starts, build::int_imm(0), build::int_imm(0)),
       build::for_loop(outer, outer_extent,
                       build::flat_store(p.starts, add(o, build::int_imm(1)),
                                         add(add(build::flat_load(p.starts, o), extent), build::int_imm(1))))});
  // for o: A[S[o]] = 0; for y < extent(o): A[S[o] + y + 1] = A[S[o] + y] + slice(o, y)
  Expr start = build::flat_load(p.starts, o);
  p.fill_prefix = build::for_loop(
      outer, outer_extent,
      build::seq({build::flat_store(p.prefix, start, build::int_imm(0)),
                  build::for_loop(inner, extent,
                                  build::flat_store(p.prefix, add(add(start, y), build::int_imm(1)),
                                                    add(build::flat_load(p.prefix, add(start, y)), slice)))}));
  return p;
}

Expr nested_prefix_at(const NestedPrefix& p, const Expr& outer_index, const Expr& index) {
  return build::load(p.prefix, {add(build::load(p.starts, {i64(outer_index)}), index)});
}

}  // namespace dccc::ir
