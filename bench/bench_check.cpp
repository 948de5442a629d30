// bench_check: how long the front end takes on a generated ~1,000-line
// program.
//
// Generates (in memory) a valid .toy program of repeated kernel variants --
// multi-head attention over packed sequences with its softmax steps, causal
// self-attention under a `where` (which needs Z3), ragged softmax and
// layernorm, grouped GEMM, lower-triangular products -- each with its own
// coupling type aliases, then parses and checks it several times and prints
// the median and minimum milliseconds of each stage. A benchmark, not a
// test: it exits 0 whatever the times (1 only when the generated program
// does not check, which is a bug). The aim for checking is under 200 ms.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "frontend/parser.h"
#include "typecheck/checker.h"
#include "support/large_stack.h"

namespace {

constexpr double kAimCheckMs = 200.0;

struct Options {
  int lines = 1000;
  int repeat = 7;
  std::string emit;
};

/// Replace every `$` in `text` by the variant suffix.
std::string instantiate(const char* text, int k) {
  std::string out;
  std::string suffix = std::to_string(k);
  for (const char* p = text; *p; ++p) {
    if (*p == '$') {
      out += suffix;
    } else {
      out += *p;
    }
  }
  return out;
}

// The kernel variants. `$` becomes the variant number, so every type and
// function name is fresh.
const char* const kVariants[] = {
    // Multi-head attention: scores keep the head axis and reduce over d only.
    R"(// Variant $: multi-head attention over packed sequences.
type Queries$ = coupling {
    data: [b: B][seqlen[b], H, D]f32,
    seqlen: [B]i32
}

type KeysValues$ = coupling {
    k: [b: B][seqlen[b], H, D]f32,
    v: [b: B][seqlen[b], H, D]f32,
    seqlen: [B]i32
}

fn mha$(q: Queries$, kv: KeysValues$) Queries$ {
    let scores: [b: B][q.seqlen[b], H, kv.seqlen[b]]f32;
    scores[b][i, h, j] = reduce(+, q.data[b][i, h, d] * kv.k[b][j, h, d]) / sqrt(D);
    let row_max: [b: B][q.seqlen[b], H]f32;
    row_max[b][i, h] = reduce(max, scores[b][i, h, j]);
    let p: [b: B][q.seqlen[b], H, kv.seqlen[b]]f32;
    p[b][i, h, j] = exp(scores[b][i, h, j] - row_max[b][i, h]);
    let row_sum: [b: B][q.seqlen[b], H]f32;
    row_sum[b][i, h] = reduce(+, p[b][i, h, j]);
    let out = Queries$ {
        data: [b: B][q.seqlen[b], H, D]f32,
        seqlen: q.seqlen
    };
    out.data[b][i, h, d] = reduce(+, p[b][i, h, j] * kv.v[b][j, h, d]) / row_sum[b][i, h];
    return out;
}

)",
    // Causal self-attention: q and kv have equal lengths by a `where`, so an
    // index over q.seqlen[b] may read kv (a Z3 proof), plus a residual.
    R"(// Variant $: causal self-attention with a residual connection.
type Seqs$ = coupling {
    data: [b: B][seqlen[b], H, D]f32,
    seqlen: [B]i32
}

fn causal$(q: Seqs$, kv: Seqs$) Seqs$ where { all(q.seqlen[b] == kv.seqlen[b]) } {
    let s: [b: B][q.seqlen[b], H, kv.seqlen[b]]f32;
    s[b][i, h, j] = select(j <= i, reduce(+, q.data[b][i, h, d] * kv.data[b][j, h, d]) / sqrt(D), -1e9);
    let m: [b: B][q.seqlen[b], H]f32;
    m[b][i, h] = reduce(max, s[b][i, h, j]);
    let e: [b: B][q.seqlen[b], H, kv.seqlen[b]]f32;
    e[b][i, h, j] = exp(s[b][i, h, j] - m[b][i, h]);
    let z: [b: B][q.seqlen[b], H]f32;
    z[b][i, h] = reduce(+, e[b][i, h, j]);
    let y = Seqs$ {
        data: [b: B][q.seqlen[b], H, D]f32,
        seqlen: q.seqlen
    };
    y.data[b][i, h, d] = reduce(+, e[b][i, h, j] * kv.data[b][j, h, d]) / z[b][i, h] + kv.data[b][i, h, d];
    return y;
}

)",
    // Ragged softmax over each sequence's own positions.
    R"(// Variant $: ragged softmax.
type Scores$ = coupling {
    data: [b: B][seqlen[b], H]f32,
    seqlen: [B]i32
}

fn softmax$(x: Scores$) Scores$ {
    let m: [B, H]f32;
    m[b, h] = reduce(max, x.data[b][i, h]);
    let e = Scores$ {
        data: [b: B][x.seqlen[b], H]f32,
        seqlen: x.seqlen
    };
    e.data[b][i, h] = exp(x.data[b][i, h] - m[b, h]);
    let total: [B, H]f32;
    total[b, h] = reduce(+, e.data[b][i, h]);
    let y = Scores$ {
        data: [b: B][x.seqlen[b], H]f32,
        seqlen: x.seqlen
    };
    y.data[b][i, h] = e.data[b][i, h] / total[b, h];
    return y;
}

)",
    // Ragged layernorm over the feature axis.
    R"(// Variant $: ragged layernorm.
type Tokens$ = coupling {
    data: [b: B][seqlen[b], H]f32,
    seqlen: [B]i32
}

fn layernorm$(x: Tokens$, gamma: [H]f32, beta: [H]f32) Tokens$ {
    let mean: [b: B][x.seqlen[b]]f32;
    mean[b][i] = reduce(+, x.data[b][i, h]) / H;
    let var: [b: B][x.seqlen[b]]f32;
    var[b][i] = reduce(+, (x.data[b][i, h] - mean[b][i]) * (x.data[b][i, h] - mean[b][i])) / H;
    let y = Tokens$ {
        data: [b: B][x.seqlen[b], H]f32,
        seqlen: x.seqlen
    };
    y.data[b][i, h] = (x.data[b][i, h] - mean[b][i]) * rsqrt(var[b][i] + 1e-5) * gamma[h] + beta[h];
    return y;
}

)",
    // Grouped GEMM with per-group shapes, and a lower-triangular product.
    R"(// Variant $: grouped GEMM and a lower-triangular matrix product.
type GemmIn$ = coupling {
    a: [g: G][m[g], k[g]]f32,
    b: [g: G][k[g], n[g]]f32,
    m: [G]i32,
    k: [G]i32,
    n: [G]i32
}

type GemmOut$ = coupling {
    c: [g: G][m[g], n[g]]f32,
    m: [G]i32,
    n: [G]i32
}

fn gemm$(x: GemmIn$) GemmOut$ {
    let out = GemmOut$ {
        c: [g: G][x.m[g], x.n[g]]f32,
        m: x.m,
        n: x.n
    };
    out.c[g][i, j] = reduce(+, x.a[g][i, p] * x.b[g][p, j]);
    return out;
}

fn tril$(L: [i: N][i + 1]f32, X: [N, M]f32) [N, M]f32 {
    let Y: [N, M]f32;
    Y[i, j] = reduce(+, L[i][k] * X[k, j]);
    return Y;
}

)",
};

std::string generate(int target_lines, int* functions) {
  std::string out =
      "// Generated by bench_check: repeated kernel variants, each with its own\n"
      "// coupling types, for timing the front end.\n\n";
  int k = 0;
  *functions = 0;
  auto lines = [&] { return static_cast<int>(std::count(out.begin(), out.end(), '\n')); };
  while (lines() < target_lines) {
    const char* v = kVariants[k % std::size(kVariants)];
    out += instantiate(v, k);
    std::string text = v;
    for (size_t pos = 0; (pos = text.find("\nfn ", pos)) != std::string::npos; ++pos) ++*functions;
    ++k;
  }
  return out;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

struct Stats {
  double first = 0, median = 0, min = 0;
};

Stats stats(const std::vector<double>& runs) {
  Stats s;
  if (runs.empty()) return s;
  s.first = runs.front();
  std::vector<double> sorted = runs;
  std::sort(sorted.begin(), sorted.end());
  s.min = sorted.front();
  size_t n = sorted.size();
  s.median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  return s;
}

int bench(const Options& o) {
  int functions = 0;
  std::string text = generate(o.lines, &functions);
  int lines = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  if (!o.emit.empty()) {
    std::ofstream f(o.emit, std::ios::binary);
    f << text;
    if (!f) {
      std::cerr << "bench_check: cannot write `" << o.emit << "`\n";
      return 1;
    }
    std::cout << "bench_check: wrote the generated program to " << o.emit << "\n";
  }

  std::vector<double> parse_ms, check_ms;
  int solver_calls = 0;
  for (int r = 0; r < o.repeat; ++r) {
    dccc::SourceFile file("bench.toy", text);
    dccc::DiagnosticEngine diags(&file);
    auto t0 = std::chrono::steady_clock::now();
    auto program = dccc::parse(file, diags);
    parse_ms.push_back(ms_since(t0));
    std::unique_ptr<dccc::CheckedProgram> checked;
    if (program) {
      auto t1 = std::chrono::steady_clock::now();
      checked = dccc::check(*program, diags);
      check_ms.push_back(ms_since(t1));
    }
    if (!program || !checked || diags.has_errors()) {
      diags.print(std::cerr);
      std::cerr << "bench_check: the generated program does not check (a bug in the generator "
                   "or the checker); run with --emit FILE and `dccc --check FILE`\n";
      return 1;
    }
    solver_calls = checked->solver_calls;
  }

  Stats p = stats(parse_ms), c = stats(check_ms);
  std::printf("generated program: %d lines, %d functions\n", lines, functions);
  std::printf("runs: %d (the first includes one-time warm-up: ANTLR tables, Z3 context)\n",
              o.repeat);
  std::printf("parse:  median %8.2f ms   min %8.2f ms   first %8.2f ms\n", p.median, p.min,
              p.first);
  std::printf("check:  median %8.2f ms   min %8.2f ms   first %8.2f ms   (%d solver calls)\n",
              c.median, c.min, c.first, solver_calls);
  std::printf("total:  median %8.2f ms\n", p.median + c.median);
  std::printf("aim: check under %.0f ms for ~1,000 lines: %s (median %.2f ms)\n", kAimCheckMs,
              c.median < kAimCheckMs ? "met" : "NOT met", c.median);
  return 0;
}

const char* kUsage = R"(usage: bench_check [--lines N] [--repeat N] [--emit FILE]

Generates a valid ~N-line .toy program (default 1000), parses and checks it
--repeat times (default 7) and prints the median and minimum milliseconds of
each stage. --emit FILE also writes the program, for `dccc --check FILE`.
)";

int bench_guarded(const Options& o) {
  try {
    return bench(o);
  } catch (const std::exception& e) {
    std::cerr << "bench_check: internal error: " << e.what() << "\n";
  }
  return 1;
}

bool parse_int(const char* s, int* out) {
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  if (!*s || *end || v <= 0 || v > 10000000) return false;
  *out = static_cast<int>(v);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool has_value = i + 1 < argc;
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (a == "--lines" && has_value && parse_int(argv[i + 1], &o.lines)) {
      ++i;
    } else if (a == "--repeat" && has_value && parse_int(argv[i + 1], &o.repeat)) {
      ++i;
    } else if (a == "--emit" && has_value) {
      o.emit = argv[++i];
    } else {
      std::cerr << "bench_check: bad argument `" << a << "`\n" << kUsage;
      return 2;
    }
  }
  // Same stack as the dccc driver, so the front end runs as it does there.
  return dccc::run_on_large_stack([&] { return bench_guarded(o); });
}
