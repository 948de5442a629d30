// Unit tests of index inference: small programs are parsed and checked
// through the library API (dccc::parse, dccc::check), then the index
// variables the checker recorded for each assignment are inspected: their
// names, ranges (as sym::str text, e.g. "kv.seqlen[b]"), and which are
// reduced by which operator.
#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>

#include "frontend/parser.h"
#include "typecheck/checker.h"

namespace dccc {
namespace {

/// A checked program with everything it points into kept alive.
struct Checked {
  std::unique_ptr<SourceFile> file;
  std::unique_ptr<DiagnosticEngine> diags;
  std::unique_ptr<ast::Program> ast;
  std::unique_ptr<CheckedProgram> program;

  std::string rendered() const {
    std::ostringstream out;
    diags->print(out);
    return out.str();
  }
};

Checked check_text(const std::string& text) {
  Checked c;
  c.file = std::make_unique<SourceFile>("test.toy", text);
  c.diags = std::make_unique<DiagnosticEngine>(c.file.get());
  c.ast = parse(*c.file, *c.diags);
  if (c.ast) c.program = check(*c.ast, *c.diags);
  return c;
}

const CheckedFunction* function(const CheckedProgram& p, const std::string& name) {
  for (const auto& f : p.functions)
    if (f.decl && f.decl->name.name == name) return &f;
  return nullptr;
}

/// The statement info of the statement that starts on `line`.
const StmtInfo* stmt_at(const CheckedFunction& f, int line) {
  for (const auto& s : f.stmts)
    if (s.stmt && s.stmt->range.line == line) return &s;
  return nullptr;
}

const IndexInfo* index_named(const StmtInfo& s, const std::string& name) {
  for (const auto& ix : s.indices)
    if (ix.var && ix.var->name == name) return &ix;
  return nullptr;
}

/// Checks the program, expecting no errors, and returns the info of the
/// statement on `line` of function `fn`.
#define CHECKED_STMT(var, checked, text, fn, line)                               \
  Checked checked = check_text(text);                                            \
  ASSERT_TRUE(checked.program) << checked.rendered();                            \
  ASSERT_FALSE(checked.diags->has_errors()) << checked.rendered();               \
  const CheckedFunction* var##_fn = function(*checked.program, fn);              \
  ASSERT_NE(var##_fn, nullptr) << "no checked function " << fn;                  \
  const StmtInfo* var = stmt_at(*var##_fn, line);                                \
  ASSERT_NE(var, nullptr) << "no statement info for line " << line;

/// Expects index `name` with the given range and reduction.
void expect_index(const StmtInfo& s, const std::string& name, const std::string& extent, bool reduced,
                  const std::string& op = "") {
  const IndexInfo* ix = index_named(s, name);
  ASSERT_NE(ix, nullptr) << "no index named " << name;
  EXPECT_EQ(sym::str(ix->extent), extent) << "range of " << name;
  EXPECT_EQ(ix->reduced, reduced) << "whether " << name << " is reduced";
  if (reduced) {
    EXPECT_EQ(ix->reduce_op, op) << "reduce operator of " << name;
    EXPECT_NE(ix->reduce_expr, nullptr) << name << " has no binding reduce";
  }
}

/// Names of the indices in recorded order.
std::string index_names(const StmtInfo& s) {
  std::string out;
  for (const auto& ix : s.indices) out += (out.empty() ? "" : " ") + ix.var->name;
  return out;
}

const char* kMatVec = R"(fn matvec(A: [N, M]f32, x: [M]f32) [N]f32 {
    let y: [N]f32;
    y[i] = reduce(+, A[i, j] * x[j]);
    return y;
}
)";

TEST(IndexInference, DenseMatVec) {
  CHECKED_STMT(s, c, kMatVec, "matvec", 3);
  EXPECT_EQ(index_names(*s), "i j") << "left-side indices come first, then reductions";
  expect_index(*s, "i", "N", false);
  expect_index(*s, "j", "M", true, "+");
}

TEST(IndexInference, SignatureSizesInOrderOfFirstUse) {
  Checked c = check_text(kMatVec);
  ASSERT_TRUE(c.program) << c.rendered();
  ASSERT_FALSE(c.diags->has_errors()) << c.rendered();
  const CheckedFunction* f = function(*c.program, "matvec");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->size_params, (std::vector<std::string>{"N", "M"}));
  EXPECT_EQ(f->params.size(), 2u);
}

const char* kAttention = R"(type PackedQueries = coupling {
    data: [b: B][seqlen[b], H, D]f32,
    seqlen: [B]i32
}
type PackedKV = coupling {
    data: [b: B][seqlen[b], H, D]f32,
    seqlen: [B]i32
}
fn attention(q: PackedQueries, kv: PackedKV) PackedQueries {
    let scores: [b: B][q.seqlen[b], kv.seqlen[b]]f32;
    scores[b][i, j] = reduce(+, q.data[b][i, h, d] * kv.data[b][j, h, d]) / sqrt(D);
    let m: [b: B][q.seqlen[b]]f32;
    m[b][i] = reduce(max, scores[b][i, j]);
    let out = PackedQueries {
        data: [b: B][q.seqlen[b], H, D]f32,
        seqlen: q.seqlen
    };
    out.data[b][i, h, d] = reduce(+, scores[b][i, j] * kv.data[b][j, h, d]) - m[b][i];
    return out;
}
)";

TEST(IndexInference, RaggedScoresOfFlashAttention) {
  CHECKED_STMT(s, c, kAttention, "attention", 11);
  EXPECT_EQ(s->indices.size(), 5u) << index_names(*s);
  expect_index(*s, "b", "B", false);
  expect_index(*s, "i", "q.seqlen[b]", false);
  expect_index(*s, "j", "kv.seqlen[b]", false);
  expect_index(*s, "h", "H", true, "+");
  expect_index(*s, "d", "D", true, "+");
}

TEST(IndexInference, MaxReductionOverTheKeyAxis) {
  CHECKED_STMT(s, c, kAttention, "attention", 13);
  EXPECT_EQ(index_names(*s), "b i j");
  expect_index(*s, "i", "q.seqlen[b]", false);
  expect_index(*s, "j", "kv.seqlen[b]", true, "max");
}

TEST(IndexInference, ConstructedValueReadsTheBoundLengths) {
  // out was built with seqlen: q.seqlen, so its rows range over q.seqlen[b].
  CHECKED_STMT(s, c, kAttention, "attention", 18);
  expect_index(*s, "b", "B", false);
  expect_index(*s, "i", "q.seqlen[b]", false);
  expect_index(*s, "h", "H", false);
  expect_index(*s, "d", "D", false);
  expect_index(*s, "j", "kv.seqlen[b]", true, "+");
}

TEST(IndexInference, SignatureSizesAreSharedAcrossCouplings) {
  Checked c = check_text(kAttention);
  ASSERT_TRUE(c.program) << c.rendered();
  ASSERT_FALSE(c.diags->has_errors()) << c.rendered();
  const CheckedFunction* f = function(*c.program, "attention");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->size_params, (std::vector<std::string>{"B", "H", "D"}));
}

const char* kTriangular = R"(fn tril_matvec(L: [i: N][i + 1]f32, x: [N]f32) [N]f32 {
    let y: [N]f32;
    y[i] = reduce(+, L[i][k] * x[k]);
    return y;
}
)";

TEST(IndexInference, TriangularReductionTakesTheRaggedRange) {
  // k indexes L[i] (range i + 1) and x (range N); the dense use contains the
  // ragged one, so k sums over k < i + 1.
  CHECKED_STMT(s, c, kTriangular, "tril_matvec", 3);
  expect_index(*s, "i", "N", false);
  expect_index(*s, "k", "i + 1", true, "+");
}

const char* kNested = R"(fn nested(A: [N, M, K]f32, w: [M]f32) [N]f32 {
    let y: [N]f32;
    y[i] = reduce(max, reduce(+, A[i, j, k]) * w[j]);
    return y;
}
)";

TEST(IndexInference, InnermostReduceContainingAllUsesBinds) {
  // k appears only inside the inner reduce, so `+` binds it; j also appears
  // outside it (w[j]), so the outer `max` binds j.
  CHECKED_STMT(s, c, kNested, "nested", 3);
  expect_index(*s, "i", "N", false);
  expect_index(*s, "j", "M", true, "max");
  expect_index(*s, "k", "K", true, "+");
  const IndexInfo* j = index_named(*s, "j");
  const IndexInfo* k = index_named(*s, "k");
  ASSERT_TRUE(j && k);
  EXPECT_NE(j->reduce_expr, k->reduce_expr) << "j and k are bound by different reduces";
}

const char* kWhere = R"(type Seqs = coupling {
    data: [b: B][seqlen[b], H]f32,
    seqlen: [B]i32
}
fn add(a: Seqs, c: Seqs) Seqs where { all(a.seqlen[b] == c.seqlen[b]) } {
    let y = Seqs { data: [b: B][a.seqlen[b], H]f32, seqlen: a.seqlen };
    y.data[b][i, h] = a.data[b][i, h] + c.data[b][i, h];
    return y;
}
)";

TEST(IndexInference, WhereFactLetsOneRaggedRangeIndexAnother) {
  CHECKED_STMT(s, c, kWhere, "add", 7);
  expect_index(*s, "i", "a.seqlen[b]", false);
  expect_index(*s, "h", "H", false);
  EXPECT_FALSE(s_fn->facts.empty()) << "the where constraint is recorded as a fact";
}

TEST(IndexInference, UnboundIndexIsReported) {
  Checked c = check_text(R"(fn f(A: [N, M]f32) [N]f32 {
    let y: [N]f32;
    y[i] = A[i, j];
    return y;
}
)");
  ASSERT_TRUE(c.diags->has_errors());
  bool found = false;
  for (const auto& d : c.diags->diagnostics()) {
    if (d.kind == DiagKind::UnboundIndex) {
      found = true;
      EXPECT_EQ(d.range.line, 3);
      EXPECT_NE(d.message.find("`j`"), std::string::npos) << d.message;
    }
  }
  EXPECT_TRUE(found) << c.rendered();
}

TEST(IndexInference, DisagreeingRaggedUsesAreARangeMismatch) {
  Checked c = check_text(R"(type Seqs = coupling {
    data: [b: B][seqlen[b]]f32,
    seqlen: [B]i32
}
fn dot(q: Seqs, kv: Seqs) [B]f32 {
    let y: [B]f32;
    y[b] = reduce(+, q.data[b][j] * kv.data[b][j]);
    return y;
}
)");
  ASSERT_TRUE(c.diags->has_errors());
  bool found = false;
  for (const auto& d : c.diags->diagnostics()) {
    if (d.kind != DiagKind::RangeMismatch) continue;
    found = true;
    EXPECT_EQ(d.range.line, 7);
    EXPECT_FALSE(d.notes.empty()) << "a note must point at the other use";
  }
  EXPECT_TRUE(found) << c.rendered();
}

}  // namespace
}  // namespace dccc
