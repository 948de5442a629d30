// Unit tests of the Z3-backed prover, with queries built through the sym::
// API the checker uses: index bounds from facts, ragged lengths from
// `where`-style quantified facts, triangular ranges, the solver timeout, and
// the caching that keeps checking fast.
#include "typecheck/prover.h"

#include <gtest/gtest.h>

#include "typecheck/sym.h"

namespace dccc {
namespace {

IndexVarPtr index_var(const std::string& name) { return std::make_shared<IndexVar>(IndexVar{name, {}}); }

Fact plain(SymPtr body) { return Fact{{}, std::move(body)}; }

/// Facts for an index ranging over [0, extent).
void in_range(std::vector<Fact>& facts, const IndexVarPtr& v, const SymPtr& extent) {
  facts.push_back(plain(sym::le(sym::constant(0), sym::var(v))));
  facts.push_back(plain(sym::lt(sym::var(v), extent)));
}

/// `all(a[b] == c[b])` over b < B, as a `where { all(...) }` becomes.
Fact all_equal(const std::string& a, const std::string& c, const SymPtr& range) {
  IndexVarPtr q = index_var("b");
  SymPtr bq = sym::var(q);
  return Fact{{{q, range}}, sym::eq(sym::read(a, {bq}), sym::read(c, {bq}))};
}

TEST(Sym, PrintsLikeSource) {
  IndexVarPtr b = index_var("b");
  SymPtr kv = sym::read("kv.seqlen", {sym::var(b)});
  EXPECT_EQ(sym::str(kv), "kv.seqlen[b]");
  EXPECT_EQ(sym::str(sym::add(kv, sym::constant(1))), "kv.seqlen[b] + 1");
  EXPECT_EQ(sym::str(sym::size("D")), "D");
  EXPECT_TRUE(sym::is_ragged(kv));
  EXPECT_FALSE(sym::is_ragged(sym::add(sym::size("N"), sym::constant(1))));
}

TEST(Sym, FoldsConstantsAndKeepsVariablesByIdentity) {
  EXPECT_EQ(sym::str(sym::add(sym::constant(2), sym::constant(3))), "5");
  SymPtr n = sym::size("N");
  EXPECT_TRUE(sym::same(sym::add(n, sym::constant(0)), n));
  IndexVarPtr i1 = index_var("i"), i2 = index_var("i");
  EXPECT_TRUE(sym::same(sym::var(i1), sym::var(i1)));
  EXPECT_FALSE(sym::same(sym::var(i1), sym::var(i2))) << "two variables named i are different variables";
}

TEST(Sym, SubstitutionRenamesSiblingFieldsToTheValuePath) {
  // A coupling's `seqlen[b]` read through the value q becomes `q.seqlen[b]`.
  IndexVarPtr b = index_var("b");
  SymPtr extent = sym::read("seqlen", {sym::var(b)});
  sym::Subst s;
  s.arrays["seqlen"] = "q.seqlen";
  EXPECT_EQ(sym::str(sym::substitute(extent, s)), "q.seqlen[b]");
  sym::Subst sizes;
  sizes.sizes["N"] = sym::constant(4);
  EXPECT_EQ(sym::str(sym::substitute(sym::add(sym::size("N"), sym::constant(1)), sizes)), "5");
}

TEST(Prover, ProvesAnIndexBelowItsExtentFromFacts) {
  Prover p;
  IndexVarPtr i = index_var("i");
  SymPtr n = sym::size("N");
  std::vector<Fact> facts;
  in_range(facts, i, n);
  // The exact fact is settled without the solver.
  EXPECT_EQ(p.prove(facts, sym::lt(sym::var(i), n)), ProofResult::Proved);
  // Arithmetic over it needs Z3.
  EXPECT_EQ(p.prove(facts, sym::le(sym::add(sym::var(i), sym::constant(1)), n)), ProofResult::Proved);
  EXPECT_EQ(p.prove(facts, sym::lt(sym::var(i), sym::add(n, sym::constant(1)))), ProofResult::Proved);
  EXPECT_GT(p.solver_calls(), 0);
}

TEST(Prover, RefutesAnIndexThatMayLeaveItsExtent) {
  Prover p;
  IndexVarPtr i = index_var("i");
  SymPtr n = sym::size("N");
  std::vector<Fact> facts;
  in_range(facts, i, n);
  // i + 1 < N fails at i = N - 1.
  EXPECT_EQ(p.prove(facts, sym::lt(sym::add(sym::var(i), sym::constant(1)), n)), ProofResult::Refuted);
  // A literal index needs a lower bound on N that nothing gives.
  EXPECT_EQ(p.prove(facts, sym::lt(sym::constant(5), n)), ProofResult::Refuted);
}

TEST(Prover, RaggedLengthsAreUnrelatedWithoutFacts) {
  Prover p;
  IndexVarPtr b = index_var("b");
  SymPtr bb = sym::var(b);
  std::vector<Fact> facts;
  in_range(facts, b, sym::size("B"));
  SymPtr q = sym::read("q.seqlen", {bb});
  SymPtr kv = sym::read("kv.seqlen", {bb});
  EXPECT_EQ(p.prove(facts, sym::le(q, kv)), ProofResult::Refuted);
  // The same array read twice is the same length.
  EXPECT_EQ(p.prove(facts, sym::le(q, sym::read("q.seqlen", {bb}))), ProofResult::Proved);
}

TEST(Prover, WhereAllFactRelatesRaggedLengths) {
  // fn f(q, kv) where { all(q.seqlen[b] == kv.seqlen[b]) }
  Prover p;
  SymPtr big_b = sym::size("B");
  IndexVarPtr b = index_var("b");
  SymPtr bb = sym::var(b);
  std::vector<Fact> facts{all_equal("q.seqlen", "kv.seqlen", big_b)};
  in_range(facts, b, big_b);
  SymPtr q = sym::read("q.seqlen", {bb});
  SymPtr kv = sym::read("kv.seqlen", {bb});
  EXPECT_EQ(p.prove(facts, sym::le(q, kv)), ProofResult::Proved);
  EXPECT_EQ(p.prove(facts, sym::eq(kv, q)), ProofResult::Proved);

  // An index ranging over q.seqlen[b] may then index kv.data[b].
  IndexVarPtr i = index_var("i");
  in_range(facts, i, q);
  EXPECT_EQ(p.prove(facts, sym::lt(sym::var(i), kv)), ProofResult::Proved);
}

TEST(Prover, WhereAllFactDoesNotHoldOutsideItsRange) {
  // The quantifier covers b < B only; an index b2 < B + 1 is not covered.
  Prover p;
  SymPtr big_b = sym::size("B");
  IndexVarPtr b2 = index_var("b2");
  std::vector<Fact> facts{all_equal("q.seqlen", "kv.seqlen", big_b)};
  in_range(facts, b2, sym::add(big_b, sym::constant(1)));
  SymPtr q = sym::read("q.seqlen", {sym::var(b2)});
  SymPtr kv = sym::read("kv.seqlen", {sym::var(b2)});
  EXPECT_EQ(p.prove(facts, sym::eq(q, kv)), ProofResult::Refuted);
}

TEST(Prover, WithoutTheFactAnIndexOverOneLengthMayLeaveTheOther) {
  Prover p;
  IndexVarPtr b = index_var("b");
  IndexVarPtr i = index_var("i");
  std::vector<Fact> facts;
  in_range(facts, b, sym::size("B"));
  SymPtr q = sym::read("q.seqlen", {sym::var(b)});
  in_range(facts, i, q);
  EXPECT_EQ(p.prove(facts, sym::lt(sym::var(i), sym::read("kv.seqlen", {sym::var(b)}))), ProofResult::Refuted);
}

TEST(Prover, TriangularRangeIsContainedInTheDenseOne) {
  // Row i of `[i: N][i + 1]f32` has i + 1 entries; its column k is below N.
  Prover p;
  SymPtr n = sym::size("N");
  IndexVarPtr i = index_var("i");
  IndexVarPtr k = index_var("k");
  std::vector<Fact> facts;
  in_range(facts, i, n);
  in_range(facts, k, sym::add(sym::var(i), sym::constant(1)));
  EXPECT_EQ(p.prove(facts, sym::lt(sym::var(k), n)), ProofResult::Proved);
  EXPECT_EQ(p.prove(facts, sym::le(sym::add(sym::var(i), sym::constant(1)), n)), ProofResult::Proved);
  // The diagonal L[i][i] is in its row; L[i][i + 1] is not.
  EXPECT_EQ(p.prove(facts, sym::lt(sym::var(i), sym::add(sym::var(i), sym::constant(1)))), ProofResult::Proved);
  EXPECT_EQ(p.prove(facts, sym::lt(sym::add(sym::var(i), sym::constant(1)), sym::add(sym::var(i), sym::constant(1)))),
            ProofResult::Refuted);
}

TEST(Prover, SizesAndLengthsAreNonNegative) {
  Prover p;
  IndexVarPtr b = index_var("b");
  std::vector<Fact> facts;
  in_range(facts, b, sym::size("B"));
  EXPECT_EQ(p.prove(facts, sym::le(sym::constant(0), sym::size("N"))), ProofResult::Proved);
  // By default every array read is a length, so it is non-negative.
  SymPtr len = sym::read("seqlen", {sym::var(b)});
  EXPECT_EQ(p.prove(facts, sym::le(sym::constant(0), len)), ProofResult::Proved);
}

TEST(Prover, OnlyLengthArraysAreAssumedNonNegative) {
  Prover p;
  p.set_length_predicate([](const std::string& array) { return array == "x.seqlen"; });
  IndexVarPtr b = index_var("b");
  std::vector<Fact> facts;
  in_range(facts, b, sym::size("B"));
  SymPtr len = sym::read("x.seqlen", {sym::var(b)});
  SymPtr value = sym::read("x.offsets", {sym::var(b)});
  EXPECT_EQ(p.prove(facts, sym::le(sym::constant(0), len)), ProofResult::Proved);
  EXPECT_EQ(p.prove(facts, sym::le(sym::constant(0), value)), ProofResult::Refuted)
      << "an integer array that is not a length may hold negative values";
}

TEST(Prover, PlainWhereFactOnSizes) {
  // where { N >= 1 } makes x[0] valid on [N]f32.
  Prover p;
  SymPtr n = sym::size("N");
  EXPECT_EQ(p.prove({}, sym::lt(sym::constant(0), n)), ProofResult::Refuted);
  EXPECT_EQ(p.prove({plain(sym::le(sym::constant(1), n))}, sym::lt(sym::constant(0), n)), ProofResult::Proved);
}

TEST(Prover, AnswersAreCached) {
  Prover p;
  IndexVarPtr i = index_var("i");
  SymPtr n = sym::size("N");
  std::vector<Fact> facts;
  in_range(facts, i, n);
  SymPtr goal = sym::le(sym::add(sym::var(i), sym::constant(1)), n);
  EXPECT_EQ(p.prove(facts, goal), ProofResult::Proved);
  int calls = p.solver_calls();
  EXPECT_EQ(p.prove(facts, goal), ProofResult::Proved);
  EXPECT_EQ(p.solver_calls(), calls) << "the second identical query must come from the cache";
}

TEST(Prover, SyntacticGoalsDoNotReachTheSolver) {
  Prover p;
  SymPtr n = sym::size("N");
  IndexVarPtr i = index_var("i");
  EXPECT_EQ(p.prove({}, sym::truth()), ProofResult::Proved);
  EXPECT_EQ(p.prove({}, sym::eq(n, sym::size("N"))), ProofResult::Proved);
  EXPECT_EQ(p.prove({}, sym::le(sym::constant(0), sym::var(i))), ProofResult::Proved);
  EXPECT_EQ(p.solver_calls(), 0);
}

TEST(Prover, TimeoutGivesUnknownNotAProof) {
  // x^3 + y^3 == z^3 has no solution in positive integers (Fermat, n = 3),
  // but proving it is far beyond a tiny resource budget for nonlinear
  // arithmetic. The prover must answer Unknown, never Proved.
  Prover p(/*budget=*/1000);
  IndexVarPtr x = index_var("x"), y = index_var("y"), z = index_var("z");
  auto cube = [](const IndexVarPtr& v) {
    SymPtr s = sym::var(v);
    return sym::op(SymKind::Mul, {sym::op(SymKind::Mul, {s, s}), s});
  };
  std::vector<Fact> facts;
  for (const auto& v : {x, y, z}) facts.push_back(plain(sym::le(sym::constant(1), sym::var(v))));
  SymPtr goal = sym::op(SymKind::Ne, {sym::add(cube(x), cube(y)), cube(z)});
  ProofResult r = p.prove(facts, goal);
  EXPECT_NE(r, ProofResult::Proved);
  EXPECT_EQ(r, ProofResult::Unknown);
}

TEST(Prover, UnrelatedFactsDoNotStopANonlinearProof) {
  // GQA's K/V head index: h / (H / KH) < KH for h < H, KH >= 1 and
  // H % KH == 0, beside the bounds of the other indices of the statement
  // (i < q.seqlen[b], j < kv.seqlen[b], d < D, b < B). With those bounds in
  // the query Z3's nonlinear search ran from 0.1 s to over a minute,
  // depending only on the names of the variables; the prover leaves out
  // facts that share no symbol with the goal.
  Prover p;
  IndexVarPtr h = index_var("h"), i = index_var("i"), j = index_var("j"), d = index_var("d"),
              b = index_var("b");
  SymPtr H = sym::size("H"), KH = sym::size("KH");
  std::vector<Fact> facts;
  facts.push_back(plain(sym::le(sym::constant(1), KH)));
  facts.push_back(plain(sym::eq(sym::op(SymKind::Mod, {H, KH}), sym::constant(0))));
  in_range(facts, i, sym::read("q.seqlen", {sym::var(b)}));
  in_range(facts, d, sym::size("D"));
  in_range(facts, h, H);
  in_range(facts, j, sym::read("kv.seqlen", {sym::var(b)}));
  in_range(facts, b, sym::size("B"));
  SymPtr head = sym::op(SymKind::Div, {sym::var(h), sym::op(SymKind::Div, {H, KH})});
  EXPECT_EQ(p.prove(facts, sym::lt(head, KH)), ProofResult::Proved);
  // Without the divisibility fact it does not hold (H = 3, KH = 2, h = 2).
  facts.erase(facts.begin() + 1);
  EXPECT_EQ(p.prove(facts, sym::lt(head, KH)), ProofResult::Refuted);
}

TEST(Prover, LeftOutFactsThatContradictEachOtherStillProveEverything) {
  // Inside a loop over an empty range (i < 0) every goal holds vacuously,
  // also one about other variables: leaving the unrelated facts out must
  // not turn that into a refutation.
  Prover p;
  IndexVarPtr i = index_var("i");
  std::vector<Fact> facts;
  in_range(facts, i, sym::constant(0));
  SymPtr n = sym::size("N");
  EXPECT_EQ(p.prove(facts, sym::lt(sym::constant(5), n)), ProofResult::Proved);
  EXPECT_EQ(p.prove({}, sym::lt(sym::constant(5), n)), ProofResult::Refuted);
}

}  // namespace
}  // namespace dccc
