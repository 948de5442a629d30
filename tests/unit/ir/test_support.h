// Helpers shared by the IR unit tests: hand-built buffers, and the random
// length patterns (random lengths, zero-length sequences, B = 1, one long
// sequence) under which lowered programs are run.
#pragma once

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "frontend/parser.h"
#include "ir/interpreter.h"
#include "ir/ir.h"
#include "ir/lower.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "typecheck/checker.h"
#include "tests/unit/program_files.h"
#include "tests/unit/test_paths.h"

namespace dccc::ir::testing {

/// A buffer with `dims` dimensions, each of extent N.
inline Buffer buffer(const std::string& name, BufferKind kind, int dims) {
  auto b = std::make_shared<BufferNode>();
  b->name = name;
  b->kind = kind;
  for (int d = 0; d < dims; ++d) b->dims.push_back({make_var(name + ".d" + std::to_string(d)), build::size("N")});
  return b;
}

enum class Pattern { Random, WithZeros, Single, OneLong };

/// The length patterns the example-wide comparisons run. Under ASan (gcc's
/// __SANITIZE_ADDRESS__) the interpreter is several times slower and these
/// tests check memory safety of the passes, not more numerics: one pattern
/// (one long sequence, every tile remainder, beside sequences of 0 to 2)
/// keeps CI short, and its long sequence is 21 instead of 37 (tiles of 4
/// and 16 still end in a remainder; the attention examples' interpreted
/// work, quadratic in it, a third).
#ifdef __SANITIZE_ADDRESS__
constexpr int kLongSequence = 21;
#else
constexpr int kLongSequence = 37;
#endif
inline std::vector<Pattern> patterns() {
  if (test_files::kSanitized) return {Pattern::OneLong};
  return {Pattern::Random, Pattern::WithZeros, Pattern::Single, Pattern::OneLong};
}

/// The least number of program runs a comparison over every pattern must
/// make, `all_patterns` in the default build: scaled by the share of the four
/// patterns that run (one under ASan), so the bound stays meaningful there.
inline int min_runs(int all_patterns) {
  return static_cast<int>((all_patterns * patterns().size() + 3) / 4);
}

/// Lengths per pattern; data uniform in [-1, 1].
inline std::function<double(const BufferNode*, int64_t)> generator(Pattern p, std::mt19937& rng) {
  return [p, &rng](const BufferNode* b, int64_t k) -> double {
    if (is_int(b->type)) {
      switch (p) {
        case Pattern::Random: return std::uniform_int_distribution<int>(1, 6)(rng);
        case Pattern::WithZeros: return k % 2 == 0 ? 0 : std::uniform_int_distribution<int>(1, 5)(rng);
        case Pattern::Single: return std::uniform_int_distribution<int>(0, 7)(rng);
        case Pattern::OneLong: return k == 1 ? kLongSequence : std::uniform_int_distribution<int>(0, 2)(rng);
      }
    }
    if (b->type == Scalar::Bool) return std::uniform_int_distribution<int>(0, 1)(rng);
    return std::uniform_real_distribution<double>(-1.0, 1.0)(rng);
  };
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// A program through the front end and lowering (no IR passes).
struct Lowered {
  std::unique_ptr<SourceFile> file;
  std::unique_ptr<DiagnosticEngine> diags;
  std::unique_ptr<ast::Program> program;
  std::unique_ptr<CheckedProgram> checked;
  std::optional<Module> module;
};

/// `text` with the first `from` replaced by `to` (a test failure when
/// `from` is missing, so an edit that no longer applies is seen).
inline std::string replaced(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

/// examples/mha.toy.
inline std::string mha_source() { return read_file(test_paths::examples_dir() + "/mha.toy"); }

inline Lowered lower_source(const std::string& name, const std::string& text) {
  Lowered l;
  l.file = std::make_unique<SourceFile>(name, text);
  l.diags = std::make_unique<DiagnosticEngine>(l.file.get());
  l.program = parse(*l.file, *l.diags);
  if (!l.program) return l;
  l.checked = check(*l.program, *l.diags);
  if (l.diags->has_errors()) return l;
  l.module = lower(*l.checked, *l.diags);
  return l;
}

/// Lowers `text` and applies `passes` to its function `fn`, which the
/// verifier must then accept (as after pass `pass`); returns what `passes`
/// returns (the names a fusion fused) and, when `ir` is not null, the
/// function's printed IR.
inline std::vector<std::string> fused_by(const std::string& text,
                                         const std::function<std::vector<std::string>(Func&)>& passes,
                                         const char* pass, const std::string& fn, std::string* ir = nullptr) {
  Lowered l = lower_source("t.toy", text);
  EXPECT_TRUE(l.module);
  if (!l.module) return {};
  for (auto& f : l.module->funcs)
    if (f.name == fn) {
      auto names = passes(f);
      EXPECT_EQ(verify(f, pass), std::vector<std::string>{});
      if (ir) *ir = print(f);
      return names;
    }
  ADD_FAILURE() << "no function " << fn;
  return {};
}

/// Lowers `text` twice, applies `transform` to every function of the second
/// copy, and runs both in the interpreter on the four length patterns: the
/// printed output and every result (matched by name) must be identical bit
/// for bit. Counts runs, and runs skipped because the lengths break a
/// function's `where` contract.
inline void compare_transformed(const std::string& name, const std::string& text,
                                const std::function<bool(Func&, DiagnosticEngine&)>& transform, int& ran,
                                int& skipped) {
  Lowered plain = lower_source(name, text);
  ASSERT_TRUE(plain.module) << name << " does not lower";
  Lowered other = lower_source(name, text);
  ASSERT_TRUE(other.module);
  for (size_t fi = 0; fi < plain.module->funcs.size(); ++fi) {
    Func& pf = plain.module->funcs[fi];
    Func& ff = other.module->funcs[fi];
    ASSERT_TRUE(transform(ff, *other.diags)) << name << ": " << pf.name;
    for (Pattern pattern : patterns()) {
      std::mt19937 rng(1234 + static_cast<int>(pattern));
      std::map<std::string, int64_t> sizes;
      for (const auto& s : pf.sizes) sizes[s.name] = pattern == Pattern::Single && s.name == pf.sizes[0].name ? 1 : 3;
      std::mt19937 rng2 = rng;
      auto inputs = Interpreter::make_inputs(pf, sizes, generator(pattern, rng));
      auto inputs2 = Interpreter::make_inputs(ff, sizes, generator(pattern, rng2));
      std::ostringstream out1, out2;
      Interpreter a(out1), b(out2);
      try {
        a.run(pf, sizes, inputs);
      } catch (const InterpError& e) {
        // The lengths break the function's `where` contract (e.g. an empty
        // sequence where `seqlen[b] > 0` is promised): the oracle's bounds
        // checks reject them, and there is nothing to compare.
        ++skipped;
        continue;
      }
      ++ran;
      b.run(ff, sizes, inputs2);
      EXPECT_EQ(out1.str(), out2.str());
      for (const auto& pb : pf.buffers) {
        if (pb->kind != BufferKind::Output) continue;
        const BufferNode* fb = nullptr;
        for (const auto& c : ff.buffers)
          if (c->kind == BufferKind::Output && c->name == pb->name) fb = c.get();
        ASSERT_NE(fb, nullptr) << name << ": " << pf.name << " lost result " << pb->name;
        auto x = a.packed(pb.get());
        auto y = b.packed(fb);
        ASSERT_EQ(x.size(), y.size()) << name << ": " << pf.name << " " << pb->name;
        // NaN is a legitimate result (softmax over an empty sequence) and must match NaN.
        for (size_t k = 0; k < x.size(); ++k)
          ASSERT_TRUE(x[k] == y[k] || (std::isnan(x[k]) && std::isnan(y[k])))
              << x[k] << " vs " << y[k] << " " << name << ": " << pf.name << " " << pb->name << "[" << k << "]";
      }
    }
  }
}

/// compare_transformed on every .toy program in `dirs` (test_files::toy_files:
/// in name order, half of them under ASan) that lowers; the others are meant
/// to fail or use what lowering does not handle yet. Returns how many
/// programs it compared.
inline int compare_programs_transformed(const std::vector<std::string>& dirs,
                                        const std::function<bool(Func&, DiagnosticEngine&)>& transform, int& ran,
                                        int& skipped) {
  int programs = 0;
  for (const auto& path : test_files::toy_files(dirs)) {
    std::string text = read_file(path);
    if (!lower_source(path.string(), text).module) continue;
    SCOPED_TRACE(path.string());
    compare_transformed(path.string(), text, transform, ran, skipped);
    ++programs;
  }
  return programs;
}

}  // namespace dccc::ir::testing
