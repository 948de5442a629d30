// bench_repl: how long `dccc repl` takes to evaluate a small expression
// once the session is warm.
//
// Runs a session in process (tools/repl.h): declares a vector and a ragged
// coupling, evaluates `reduce(+, x[i] * x[i])` once (the first evaluation
// pays for LLVM's and Z3's one-time set-up), then evaluates it again
// --repeat times and prints the first time and the median, minimum and
// maximum of the rest. Every evaluation runs the whole pipeline: parse and
// check the synthetic program, lower it, JIT-compile it and run it. The aim
// is under 50 ms after the first. A benchmark, not a test: it exits 0
// whatever the times, 1 only when an evaluation prints something other than
// `14 : f32` (a bug).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "support/large_stack.h"
#include "tools/repl.h"

namespace {

constexpr double kAimMs = 50.0;

int bench(int repeat) {
  std::ostringstream out, err;
  dccc::repl::Session session({}, out, err);
  const char* setup[] = {
      "type Seqs = coupling { data: [b: B][seqlen[b]]f32, seqlen: [B]i32 }",
      "let x: [3]f32 = [1.0, 2.0, 3.0];",
      "let s = Seqs { data: [[1.0, 2.0, 3.0], [], [4.0]], seqlen: [3, 0, 1] };",
  };
  for (const char* in : setup)
    if (!session.eval(in)) {
      std::fprintf(stderr, "bench_repl: `%s` failed:\n%s", in, err.str().c_str());
      return 1;
    }
  const std::string expr = "reduce(+, x[i] * x[i])";
  auto timed = [&]() -> double {
    out.str("");
    auto t0 = std::chrono::steady_clock::now();
    bool ok = session.eval(expr);
    auto t1 = std::chrono::steady_clock::now();
    if (!ok || out.str() != "14 : f32\n") {
      std::fprintf(stderr, "bench_repl: `%s` printed `%s`, expected `14 : f32`\n%s", expr.c_str(),
                   out.str().c_str(), err.str().c_str());
      std::exit(1);
    }
    return std::chrono::duration<double, std::milli>(t1 - t0).count();
  };
  double first = timed();
  std::vector<double> ms;
  for (int i = 0; i < repeat; ++i) ms.push_back(timed());
  std::sort(ms.begin(), ms.end());
  double median = ms[ms.size() / 2];
  std::printf("bench_repl: `%s` after 3 declarations (a vector, a coupling type, a ragged value)\n", expr.c_str());
  std::printf("  first evaluation: %.1f ms\n", first);
  std::printf("  next %d: median %.1f ms, min %.1f ms, max %.1f ms\n", repeat, median, ms.front(), ms.back());
  std::printf("  aim: under %.0f ms after the first: %s\n", kAimMs, median < kAimMs ? "met" : "NOT met");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 20;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: bench_repl [--repeat N]\n");
      return 2;
    }
  }
  return dccc::run_on_large_stack([&] { return bench(repeat); });
}
