// The vloop IR text parser (ir/ir_parser.h) against the printer.
//
// - Round trip: print(parse(print(M))) == print(M) for every example and
//   every tests/lang/run program, before and after storage lowering.
// - Structure: the parsed module passes the verifier and, run by the
//   interpreter, computes what the original computes, bit for bit, on
//   random length patterns (zero-length sequences, B = 1, one long
//   sequence); the parsed objects are shared exactly where the original's
//   are (one Var for a loop variable and the dimension it indexes).
// - Hand-built IR with what the examples lack (negative literals next to
//   negated ones, NaN and infinities, escapes, parallel and vectorized
//   loops, padding, names that collide with words of the text form).
// - Malformed text: a diagnostic at the right line and column, never a
//   crash, also for every truncation and many random corruptions of a
//   printed module.
#include "ir/ir_parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "frontend/parser.h"
#include "ir/pipeline.h"
#include "ir/interpreter.h"
#include "tests/unit/ir/test_support.h"
#include "ir/lower.h"
#include "ir/printer.h"
#include "ir/storage_lowering.h"
#include "ir/verifier.h"
#include "typecheck/checker.h"
#include "tests/unit/program_files.h"
#include "tests/unit/test_paths.h"

namespace dccc::ir {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// `-DNAME=VALUE` arguments of a `// RUN:` line.
std::map<std::string, int64_t> defines_of(const std::string& text) {
  std::map<std::string, int64_t> out;
  size_t run = text.find("// RUN:");
  if (run == std::string::npos) return out;
  std::istringstream line(text.substr(run + 7, text.find('\n', run) - run - 7));
  for (std::string w; line >> w;) {
    size_t eq = w.find('=');
    if (w.rfind("-D", 0) == 0 && eq != std::string::npos) out[w.substr(2, eq - 2)] = std::stoll(w.substr(eq + 1));
  }
  return out;
}

/// The module dccc --emit=vloop prints: lowered, prints expanded, and
/// storage-lowered when `storage`. Nullopt when the program does not lower.
std::optional<Module> compile(const fs::path& path, bool storage) {
  std::string text = read_file(path);
  SourceFile file(path.string(), text);
  DiagnosticEngine diags(&file);
  auto program = parse(file, diags);
  if (!program) return std::nullopt;
  CheckOptions options;
  options.defines = defines_of(text);
  auto checked = check(*program, diags, options);
  if (diags.has_errors()) return std::nullopt;
  auto module = lower(*checked, diags);
  if (!module) return std::nullopt;
  PipelineOptions o;
  o.passes = storage ? std::vector<std::string>{"expand-prints", "storage-lowering"}
                     : std::vector<std::string>{"expand-prints"};
  o.verify_each = true;
  if (!run_pipeline(*module, o, diags).ok()) return std::nullopt;
  return module;
}

struct Parsed {
  std::optional<Module> module;
  std::string diagnostics;
};

Parsed parse_text(const std::string& text, const std::string& name = "t.vloop") {
  SourceFile file(name, text);
  DiagnosticEngine diags(&file);
  Parsed p;
  p.module = parse_vloop(file, diags);
  std::ostringstream out;
  diags.print(out);
  p.diagnostics = out.str();
  if (diags.has_errors()) {
    EXPECT_FALSE(p.module) << "errors reported but a module returned";
  }
  return p;
}

std::vector<fs::path> programs() { return test_files::toy_files({test_paths::examples_dir(), test_paths::lang_run_dir()}); }

TEST(IrParser, RoundTripsEveryExampleAndRunProgram) {
  int modules = 0;
  for (const auto& path : programs()) {
    for (bool storage : {false, true}) {
      SCOPED_TRACE(path.string() + (storage ? " (storage-lowered)" : " (--no-storage-lowering)"));
      auto m = compile(path, storage);
      if (!m) continue;
      std::string text = print(*m);
      Parsed p = parse_text(text);
      ASSERT_TRUE(p.module) << p.diagnostics << "\n" << text;
      EXPECT_EQ(p.diagnostics, "");
      EXPECT_EQ(print(*p.module), text);
      ASSERT_EQ(p.module->funcs.size(), m->funcs.size());
      for (size_t i = 0; i < m->funcs.size(); ++i) {
        const Func& f = p.module->funcs[i];
        EXPECT_EQ(verify(f, "parsing"), std::vector<std::string>{}) << f.name;
        EXPECT_EQ(f.storage_lowered, m->funcs[i].storage_lowered) << f.name;
        ASSERT_EQ(f.buffers.size(), m->funcs[i].buffers.size()) << f.name;
        // Objects keep their own names (`b`, not the printed `b.1`), so the
        // backends name things alike for the program and its IR text.
        for (size_t k = 0; k < f.buffers.size(); ++k) {
          const BufferNode& x = *f.buffers[k];
          const BufferNode& y = *m->funcs[i].buffers[k];
          EXPECT_EQ(x.name, y.name);
          EXPECT_EQ(x.kind, y.kind) << x.name;
          EXPECT_EQ(x.type, y.type) << x.name;
          ASSERT_EQ(x.dims.size(), y.dims.size()) << x.name;
          for (size_t d = 0; d < x.dims.size(); ++d) EXPECT_EQ(x.dims[d].var->name, y.dims[d].var->name) << x.name;
          EXPECT_EQ(x.pad, y.pad) << x.name;
        }
      }
      ++modules;
    }
  }
  // 9 examples and 36 run programs, each both ways; a few use constructs
  // lowering does not handle yet.
  EXPECT_GE(modules, test_files::at_least(70));
}

using testing::generator;
using testing::Pattern;

bool same(double x, double y) { return x == y || (std::isnan(x) && std::isnan(y)); }

/// Runs function `fi` of both modules on the same inputs; false when the
/// inputs break the function's `where` contract (nothing to compare).
bool run_both(const Func& a, const Func& b, Pattern pattern, int& zero_lengths) {
  std::mt19937 rng(99 + static_cast<int>(pattern)), rng2 = rng;
  std::map<std::string, int64_t> sizes;
  for (const auto& s : a.sizes) sizes[s.name] = pattern == Pattern::Single && s.name == a.sizes[0].name ? 1 : 3;
  auto in_a = Interpreter::make_inputs(a, sizes, generator(pattern, rng));
  auto in_b = Interpreter::make_inputs(b, sizes, generator(pattern, rng2));
  for (size_t i = 0; i < a.buffers.size(); ++i)
    if (a.buffers[i]->kind == BufferKind::Input) {
      EXPECT_EQ(in_a.at(a.buffers[i].get()), in_b.at(b.buffers[i].get())) << a.buffers[i]->name;
      if (is_int(a.buffers[i]->type))
        for (double v : in_a.at(a.buffers[i].get())) zero_lengths += v == 0;
    }
  std::ostringstream out_a, out_b;
  Interpreter ia(out_a), ib(out_b);
  std::string err_a, err_b;
  try {
    ia.run(a, sizes, in_a);
  } catch (const InterpError& e) {
    err_a = e.what();
  }
  try {
    ib.run(b, sizes, in_b);
  } catch (const InterpError& e) {
    err_b = e.what();
  }
  EXPECT_EQ(err_a, err_b);
  if (!err_a.empty()) return false;
  EXPECT_EQ(out_a.str(), out_b.str());
  for (size_t i = 0; i < a.buffers.size(); ++i) {
    if (a.buffers[i]->kind != BufferKind::Output) continue;
    auto x = ia.packed(a.buffers[i].get());
    auto y = ib.packed(b.buffers[i].get());
    EXPECT_EQ(x.size(), y.size()) << a.buffers[i]->name;
    for (size_t k = 0; k < x.size() && k < y.size(); ++k)
      if (!same(x[k], y[k])) {
        ADD_FAILURE() << a.name << " " << a.buffers[i]->name << "[" << k << "]: " << x[k] << " vs " << y[k];
        break;
      }
  }
  return true;
}

TEST(IrParser, ParsedModulesComputeWhatTheOriginalsCompute) {
  int compared = 0, skipped = 0, zero_lengths = 0, mains = 0;
  for (const auto& path : programs()) {
    for (bool storage : {false, true}) {
      SCOPED_TRACE(path.string() + (storage ? " (storage-lowered)" : " (--no-storage-lowering)"));
      auto m = compile(path, storage);
      if (!m) continue;
      Parsed p = parse_text(print(*m));
      ASSERT_TRUE(p.module) << p.diagnostics;
      for (size_t fi = 0; fi < m->funcs.size(); ++fi) {
        const Func& a = m->funcs[fi];
        const Func& b = p.module->funcs[fi];
        if (a.name == "main") ++mains;
        for (Pattern pattern : testing::patterns()) {
          if (run_both(a, b, pattern, zero_lengths)) ++compared;
          else ++skipped;
          if (a.sizes.empty() && input_buffers(a).empty()) break;  // `main`: no inputs to vary
        }
      }
    }
  }
  EXPECT_GE(mains, test_files::at_least(60));
  EXPECT_GE(compared, test_files::at_least(150)) << skipped << " skipped";
  // Skipped: runs that stop with a run-time error, the same in both (a
  // `where` violated, division by zero; tests/lang/run's runtime_*.toy,
  // runtime_negative_computed_length.toy's `main` in both modes).
  EXPECT_LE(skipped, 32) << compared << " compared";
  EXPECT_GT(zero_lengths, test_files::at_least(20));  // zero-length sequences were exercised
}

TEST(IrParser, OneObjectPerName) {
  auto m = compile(fs::path(test_paths::examples_dir()) / "mha.toy", true);
  ASSERT_TRUE(m);
  Parsed p = parse_text(print(*m));
  ASSERT_TRUE(p.module) << p.diagnostics;
  const Func& f = p.module->funcs[0];
  auto buffer = [&](const std::string& n) -> Buffer {
    for (const auto& b : f.buffers)
      if (b->name == n) return b;
    ADD_FAILURE() << "no buffer " << n;
    return nullptr;
  };
  // The same as in the original: q.data's and out.data's first dimension are one variable `b`.
  const Func& o = m->funcs[0];
  auto orig = [&](const std::string& n) -> Buffer {
    for (const auto& b : o.buffers)
      if (b->name == n) return b;
    return nullptr;
  };
  ASSERT_TRUE(orig("q.data") && orig("out.data"));
  ASSERT_EQ(orig("q.data")->dims[0].var, orig("out.data")->dims[0].var);
  EXPECT_EQ(buffer("q.data")->dims[0].var, buffer("out.data")->dims[0].var);
  EXPECT_NE(buffer("q.data")->dims[0].var, buffer("kv.k")->dims[0].var);  // `b` and `b.1`
  // Parameters point at the declared buffers; an aliased result field is the input itself.
  EXPECT_EQ(f.params[0].fields[0].second, buffer(f.params[0].fields[0].second->name));
  EXPECT_EQ(f.params[0].kind, Param::Coupling);
  EXPECT_EQ(f.params[0].type_name, o.params[0].type_name);
  ASSERT_EQ(f.results.size(), 1u);
  for (const auto& [field, b] : f.results[0].fields)
    if (field == "seqlen") {
      EXPECT_EQ(b, buffer("q.seqlen"));
    }
  EXPECT_EQ(f.results[0].sizes.size(), o.results[0].sizes.size());
  // A loop's variable is the object its body reads.
  const Stmt& loop = f.body->body[0];
  ASSERT_EQ(loop->kind, StmtKind::For);
  Stmt inner = loop->body[0];
  if (inner->kind == StmtKind::Seq) inner = inner->body[0];
  ASSERT_EQ(inner->kind, StmtKind::For);
  EXPECT_TRUE(mentions(inner->extent, loop->var));
}

TEST(IrParser, OneStatementBodyStandsAlone) {
  // As lowering builds them: a loop or branch whose body is one statement
  // holds that statement, so passes that look for perfect nests
  // (reorder-loops: `for a { for c { .. } }`) see parsed IR as they see
  // lowered IR; a body of more statements is a Seq.
  Parsed p = parse_text(R"(func main() {
  sizes N;
  local a: f32 [d0: N, d1: N];
  for i in 0 .. N {
    for j in 0 .. N {
      if (j < i) {
        a[i, j] = 1.0f32;
      }
      a[j, i] = 2.0f32;
    }
  }
}
)");
  ASSERT_TRUE(p.module) << p.diagnostics;
  const Stmt& i = p.module->funcs[0].body->body.at(0);
  ASSERT_EQ(i->kind, StmtKind::For);
  const Stmt& j = i->body.at(0);
  ASSERT_EQ(j->kind, StmtKind::For);
  const Stmt& seq = j->body.at(0);
  ASSERT_EQ(seq->kind, StmtKind::Seq);
  ASSERT_EQ(seq->body.size(), 2u);
  const Stmt& branch = seq->body[0];
  ASSERT_EQ(branch->kind, StmtKind::IfThenElse);
  EXPECT_EQ(branch->body.at(0)->kind, StmtKind::Store);
}

/// Hand-built IR with what no example prints.
Func corner_cases() {
  Func f;
  f.name = "corners";
  f.sizes = {{"N"}};
  auto x = std::make_shared<BufferNode>();
  x->name = "x";
  x->type = Scalar::F32;
  x->kind = BufferKind::Input;
  Var i = make_var("max");  // a function's name: fine for a variable, never followed by `(`
  Var n = make_var("N");    // the name of a size
  x->dims = {{i, build::size("N")}};
  x->pad = {1};
  auto y = std::make_shared<BufferNode>();
  y->name = "for";  // a keyword: fine for a buffer, always followed by `[` or `@`
  y->type = Scalar::I32;
  y->kind = BufferKind::Output;
  y->dims = {{make_var("d0"), build::size("N")}};
  y->pad = {1};
  auto flag = std::make_shared<BufferNode>();
  flag->name = "inf";  // reads as a literal bare, but a buffer never stands bare
  flag->type = Scalar::Bool;
  flag->kind = BufferKind::Scalar;
  // Storage padding: only local tensors have it (the C ABI stays packed).
  auto t = std::make_shared<BufferNode>();
  t->name = "t";
  t->type = Scalar::F32;
  t->kind = BufferKind::Local;
  t->dims = {{make_var("k"), build::size("N")}};
  t->pad = {4};
  f.buffers = {x, y, flag, t};
  Param px;
  px.name = "x";
  px.kind = Param::Tensor;
  px.fields = {{"data", x}};
  px.sizes = {{"N", build::size("N")}};
  f.params = {px};
  Param r;
  r.name = "result";
  r.fields = {{"data", y}};
  f.results = {r};
  auto neg = [](Expr a) { return build::unary(UnOp::Neg, std::move(a)); };
  std::vector<Stmt> body;
  body.push_back(build::for_loop(
      i, build::size("N"),
      build::seq({build::store(y, {build::var(i)},
                               build::binary(BinOp::Add, build::int_imm(-5, Scalar::I32),
                                             neg(build::int_imm(5, Scalar::I32)))),
                  build::for_loop(n, build::int_imm(2),
                                  build::print("a \"quoted\"\\ line\n\ttab", {build::var(n), build::var(i)}),
                                  LoopKind::Vectorized)}),
      LoopKind::Parallel));
  body.push_back(build::store(flag, {}, build::load(flag, {})));
  body.push_back(build::assert_that(build::binary(BinOp::LT, build::int_imm(0), build::size("N")), "0 < N \"\\"));
  body.push_back(build::print("", {build::float_imm(std::nan(""), Scalar::F32),
                                   build::float_imm(-INFINITY, Scalar::F64), neg(build::float_imm(INFINITY, Scalar::F32)),
                                   neg(build::float_imm(-1.5, Scalar::F32)), neg(build::float_imm(2.5, Scalar::BF16)),
                                   build::int_imm(INT64_MIN), build::float_imm(1e-300, Scalar::F64),
                                   build::float_imm(0.1f, Scalar::F32)}));
  f.body = build::seq(body);
  EntryCheck c;
  c.text = "x `quoted` \\ here";
  c.cond = build::bool_imm(true);
  f.checks = {c};
  return f;
}

TEST(IrParser, RoundTripsWhatTheExamplesLack) {
  Module m;
  m.funcs.push_back(corner_cases());
  ASSERT_EQ(verify(m.funcs[0], "test"), std::vector<std::string>{});
  std::string text = print(m);
  // A variable named like a size gets a suffix; words of the text form need none.
  EXPECT_NE(text.find("parallel max in 0 .. N {"), std::string::npos) << text;
  EXPECT_NE(text.find("vectorized N.1 in 0 .. 2 {"), std::string::npos) << text;
  EXPECT_NE(text.find("for[max] = (-5i32 + -(5i32));"), std::string::npos) << text;
  EXPECT_NE(text.find("  inf[] = inf[];\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  assert (0 < N) \"0 < N \\\"\\\\\";\n"), std::string::npos) << text;
  Parsed p = parse_text(text);
  ASSERT_TRUE(p.module) << p.diagnostics << text;
  EXPECT_EQ(print(*p.module), text);
  const Func& f = p.module->funcs[0];
  EXPECT_EQ(f.buffers[0]->pad, std::vector<int64_t>{1});
  EXPECT_EQ(f.buffers[3]->pad, std::vector<int64_t>{4});
  EXPECT_EQ(f.checks[0].text, "x `quoted` \\ here");
  const Stmt& loop = f.body->body[0];
  EXPECT_EQ(loop->loop, LoopKind::Parallel);
  // -5i32 is a literal, -(5i32) a negation: checked on the nodes, not the text.
  const Expr& sum = loop->body[0]->body[0]->value;
  ASSERT_EQ(sum->kind, ExprKind::Binary);
  EXPECT_EQ(sum->args[0]->kind, ExprKind::IntImm);
  EXPECT_EQ(sum->args[0]->int_value, -5);
  EXPECT_EQ(sum->args[0]->type, Scalar::I32);
  ASSERT_EQ(sum->args[1]->kind, ExprKind::Unary);
  EXPECT_EQ(sum->args[1]->args[0]->int_value, 5);
  const Stmt& inner = loop->body[0]->body[1];
  EXPECT_EQ(inner->loop, LoopKind::Vectorized);
  ASSERT_EQ(inner->body[0]->kind, StmtKind::Print);  // one statement: no Seq around it
  EXPECT_EQ(inner->body[0]->text, "a \"quoted\"\\ line\n\ttab");
  EXPECT_EQ(f.body->body[1]->buffer, f.buffers[2]);
  EXPECT_EQ(f.body->body[1]->value->buffer, f.buffers[2]);
  ASSERT_EQ(f.body->body[2]->kind, StmtKind::Assert);
  EXPECT_EQ(f.body->body[2]->text, "0 < N \"\\");
  EXPECT_EQ(f.body->body[2]->value->binop, BinOp::LT);
  const auto& values = f.body->body[3]->args;
  ASSERT_EQ(values.size(), 8u);
  EXPECT_TRUE(std::isnan(values[0]->float_value));
  EXPECT_EQ(values[1]->float_value, -INFINITY);
  EXPECT_EQ(values[1]->type, Scalar::F64);
  EXPECT_EQ(values[2]->kind, ExprKind::Unary);
  EXPECT_EQ(values[2]->args[0]->float_value, INFINITY);
  EXPECT_EQ(values[3]->args[0]->float_value, -1.5);
  EXPECT_EQ(values[4]->args[0]->type, Scalar::BF16);
  EXPECT_EQ(values[5]->int_value, INT64_MIN);
  EXPECT_EQ(values[6]->float_value, 1e-300);
  EXPECT_EQ(values[7]->float_value, static_cast<double>(0.1f));
  EXPECT_EQ(verify(f, "parsing"), std::vector<std::string>{});
}

TEST(IrParser, PrintsParametersInFull) {
  // Written by hand from docs/vloop.md, not copied from the printer.
  Module m;
  m.funcs.push_back(corner_cases());
  std::string text = print(m);
  EXPECT_NE(text.find("func corners(x: tensor = {data: x} sizes(N = N)) -> (result: tensor = {data: for}) {\n"
                      "  sizes N;\n"
                      "  input x: f32 [max: N];\n"
                      "  output for: i32 [d0: N];\n"
                      "  scalar inf: bool;\n"
                      "  local t: f32 [k: N pad 4];\n"
                      "  check `x \\`quoted\\` \\\\ here` {\n"
                      "    require true;\n"
                      "  }\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("println \"a \\\"quoted\\\"\\\\ line\\n\\ttab\" (N.1, max);"), std::string::npos) << text;
  EXPECT_NE(text.find("println \"\" (f32(nan), f64(-inf), -f32(inf), --1.5f32, -(2.5bf16), -9223372036854775808, "
                      "1e-300f64, 0.10000000149011612f32);"),
            std::string::npos)
      << text;
}

struct Bad {
  const char* what;
  std::string text;
  const char* expected;  // "file:LINE:COL: error: ... [Kind]" prefix and kind
  const char* message;
};

const std::string kGood =
    "func f(x: tensor = {data: x} sizes(N = N)) -> (result: tensor = {data: y}) {\n"
    "  sizes N;\n"
    "  input x: f32 [i: N];\n"
    "  output y: f32 [i: N];\n"
    "  for i in 0 .. N {\n"
    "    y[i] = (x[i] * 2.0f32);\n"
    "  }\n"
    "}\n";

TEST(IrParser, AcceptsTheBaseOfTheMalformedInputs) {
  Parsed p = parse_text(kGood);
  ASSERT_TRUE(p.module) << p.diagnostics;
  EXPECT_EQ(print(*p.module), kGood + "\n");  // print(Module) ends each function with a blank line
}

std::string with(const std::string& from, const std::string& to) {
  std::string s = kGood;
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST(IrParser, MalformedInputGetsADiagnostic) {
  std::vector<Bad> cases = {
      {"unknown buffer", with("x[i] * 2.0f32", "z[i] * 2.0f32"), "t.vloop:6:13: error:", "unknown buffer `z` [IRInvalid]"},
      {"unbound loop variable", with("y[i] =", "y[j] ="), "t.vloop:6:7: error:", "unknown name `j`"},
      {"variable outside its loop", with("  }\n}", "  }\n  y[0] = f32(i);\n}"), "t.vloop:8:14: error:",
       "variable `i` is used outside the loop that binds it [IRInvalid]"},
      {"bad token", with("(x[i] * 2.0f32)", "(x[i] # 2.0f32)"), "t.vloop:6:18: error:",
       "unexpected character `#` [IRSyntax]"},
      {"truncated file", kGood.substr(0, kGood.find("  }\n}")), "t.vloop:7:1: error:",
       "expected `}`, found the end of the file [IRSyntax]"},
      {"duplicate buffer", with("output y: f32", "input x: f32"), "t.vloop:4:9: error:",
       "buffer `x` is declared twice [IRInvalid]"},
      {"index count", with("x[i] *", "x[i, i] *"), "t.vloop:6:13: error:", "`x` has 1 dimension(s) but 2 index(es)"},
      {"flat offset before storage lowering", with("x[i] *", "x@(i) *"), "t.vloop:6:13: error:",
       "not storage-lowered"},
      {"operand types", with("2.0f32", "2"), "t.vloop:6:18: error:",
       "operands of `*` have different types: `f32` and `i64` [IRInvalid]"},
      {"float extent", with("0 .. N {", "0 .. 1.5f32 {"), "t.vloop:5:17: error:", "must be an integer"},
      {"missing operator", with("(x[i] * 2.0f32)", "(x[i] 2.0f32)"), "t.vloop:6:18: error:",
       "expected an operator"},
      {"unknown function", with("2.0f32", "foo(2.0f32)"), "t.vloop:6:20: error:", "unknown function `foo` [IRSyntax]"},
      {"unterminated check text", with("  for i", "  check `x {\n  for i"), "t.vloop:5:9: error:", "unterminated check"},
      {"unterminated string", with("y[i] = (x[i] * 2.0f32);", "print \"abc;"), "t.vloop:6:11: error:",
       "unterminated string"},
      {"bad escape", with("y[i] = (x[i] * 2.0f32);", "print \"a\\qb\";"), "t.vloop:6:13: error:",
       "unknown escape sequence"},
      {"huge literal", with("2.0f32", "f32(99999999999999999999)"), "t.vloop:6:24: error:",
       "literal `99999999999999999999` is out of range for a 64-bit integer [LiteralOutOfRange]"},
      {"float without suffix", with("2.0f32", "2.0"), "t.vloop:6:20: error:", "needs a type suffix"},
      {"loop rebinding its variable", with("    y[i]", "    for i in 0 .. 2 {\n    }\n    y[i]"),
       "t.vloop:6:9: error:", "variable `i` is bound again inside the loop that binds it"},
      {"variable named like a size", with("for i in", "for N in"), "t.vloop:5:7: error:",
       "`N` is a size of the function, not a variable"},
      {"not a function", "fn f() {}\n", "t.vloop:1:1: error:", "expected `func`, found `fn` [IRSyntax]"},
      {"invalid UTF-8", "func f() {\n  \xff\n}\n", "t.vloop:2:3: error:", "[InvalidEncoding]"},
      {"deep nesting", "func f() {\n  print \"\" (" + std::string(300, '-') + "1);\n}\n", "t.vloop:2:",
       "[NestingTooDeep]"},
      {"duplicate function", kGood + kGood, "t.vloop:9:6: error:", "function `f` is defined twice [IRInvalid]"},
      {"bool condition", with("    y[i]", "    if 1 {\n    }\n    y[i]"), "t.vloop:6:8: error:",
       "an `if` condition must be a `bool`"},
  };
  for (const Bad& c : cases) {
    SCOPED_TRACE(c.what);
    Parsed p = parse_text(c.text);
    EXPECT_FALSE(p.module) << c.text;
    EXPECT_EQ(p.diagnostics.rfind(c.expected, 0), 0u) << p.diagnostics;
    EXPECT_NE(p.diagnostics.find(c.message), std::string::npos) << p.diagnostics;
  }
}

TEST(IrParser, EmptyFileIsAWarning) {
  Parsed p = parse_text("// nothing\n");
  ASSERT_TRUE(p.module);
  EXPECT_TRUE(p.module->funcs.empty());
  EXPECT_NE(p.diagnostics.find("warning: file declares nothing [EmptyProgram]"), std::string::npos);
}

/// Every answer to broken text is a module that verifies or a diagnostic
/// with a location; never a crash (ASan runs this too).
void expect_sane(const std::string& text) {
  Parsed p = parse_text(text);
  if (p.module) {
    for (const auto& f : p.module->funcs) EXPECT_EQ(verify(f, "parsing"), std::vector<std::string>{});
    (void)print(*p.module);
  } else {
    EXPECT_EQ(p.diagnostics.rfind("t.vloop:", 0), 0u) << p.diagnostics;
    EXPECT_NE(p.diagnostics.find(": error: "), std::string::npos) << p.diagnostics;
  }
}

TEST(IrParser, EveryTruncationGetsADiagnostic) {
  auto m = compile(fs::path(test_paths::examples_dir()) / "mha.toy", true);
  ASSERT_TRUE(m);
  std::string text = print(*m);
  int rejected = 0;
  for (size_t cut = 0; cut < text.size(); cut += 3) {
    std::string part = text.substr(0, cut);
    Parsed p = parse_text(part);
    if (!p.module) ++rejected;
    expect_sane(part);
  }
  EXPECT_GT(rejected, static_cast<int>(text.size() / 3) - 10);
}

TEST(IrParser, RandomCorruptionsGetADiagnosticOrVerify) {
  auto m = compile(fs::path(test_paths::examples_dir()) / "flash_attention.toy", true);
  ASSERT_TRUE(m);
  std::string text = print(*m);
  std::mt19937 rng(7);
  const std::string alphabet = "()[]{},;:=@+-*/%<!.`\"\\0123456789 \nabxyiBNf";
  for (int round = 0; round < 600; ++round) {
    std::string t = text;
    int edits = 1 + round % 3;
    for (int e = 0; e < edits; ++e) {
      size_t at = std::uniform_int_distribution<size_t>(0, t.size() - 1)(rng);
      char c = alphabet[std::uniform_int_distribution<size_t>(0, alphabet.size() - 1)(rng)];
      switch (round % 3) {
        case 0: t[at] = c; break;
        case 1: t.insert(at, 1, c); break;
        default: t.erase(at, 1 + at % 5); break;
      }
    }
    expect_sane(t);
  }
}

}  // namespace
}  // namespace dccc::ir
