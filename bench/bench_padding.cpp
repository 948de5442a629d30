// bench_padding: the extra work and storage the default schedule (the CPU
// default padding, ir/apply_schedule.h) adds over no padding, for
// examples/mha.toy on the length batches of ../shared/bench/seqlens.
//
//   build/bench/bench_padding [--seqlens DIR (default /work/shared/bench/seqlens)] [--program FILE.toy] [--pad K]
//                             [--heads H] [--dim D] [--verbose]
//
// The program is compiled twice as the driver does for the CPU (lower,
// expand prints, mark parallel, reorder loops, apply schedule): with the
// default padding (factor K, default ir::kCpuDefaultPad) and with none. For
// each batch (each line `B: len_0 ... len_{B-1}` of each file; queries and
// keys get the same lengths, self-attention) it evaluates both loop nests on
// the lengths: work = executions of stores (each `reduce` step and each
// element written is one), counted per assignment by walking the loop nest
// with its extents and guards evaluated, a loop whose body does not depend
// on its variable counted once and multiplied. Storage = elements of every
// local tensor as laid out with its padding. It prints per batch the work
// and storage with and without padding and the relative increase, and the
// statement with the largest relative increase; `all` is the increase in
// the elements of all tensors (inputs, result and locals: peak memory). It
// exits 0 whatever the figures; 1 on a program or file it cannot read.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "frontend/parser.h"
#include "ir/pipeline.h"
#include "ir/lower.h"
#include "typecheck/checker.h"

namespace {

using namespace dccc;

struct Compiled {
  std::unique_ptr<SourceFile> file;
  std::unique_ptr<DiagnosticEngine> diags;
  std::unique_ptr<ast::Program> ast;
  std::unique_ptr<CheckedProgram> checked;
  std::optional<ir::Module> module;
};

bool compile(const std::string& path, int64_t pad, Compiled& c) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream text;
  text << in.rdbuf();
  c.file = std::make_unique<SourceFile>(path, text.str());
  c.diags = std::make_unique<DiagnosticEngine>(c.file.get());
  c.ast = parse(*c.file, *c.diags);
  if (!c.ast) return false;
  c.checked = check(*c.ast, *c.diags);
  if (c.diags->has_errors()) return false;
  c.module = ir::lower(*c.checked, *c.diags);
  if (!c.module) return false;
  // The CPU target's pipeline up to and including the schedule (its default
  // padding is what this benchmark measures).
  ir::PipelineOptions o;
  o.default_pad = pad;
  std::vector<std::string> upto;
  for (const auto& pass : ir::passes_for(o)) {
    upto.push_back(pass.name);
    if (pass.name == "apply-schedule") break;
  }
  o.passes = upto;
  return ir::run_pipeline(*c.module, o, *c.diags).ok();
}

/// Integer evaluation of extents and guards: loop variables from `env`,
/// sizes by name, loads of the length arrays (any 1-d i32 input) from `lens`.
struct Eval {
  std::map<std::string, int64_t> sizes;
  const std::vector<int64_t>* lens = nullptr;
  std::map<const ir::VarNode*, int64_t> env;

  int64_t operator()(const ir::Expr& e) {
    using ir::ExprKind;
    switch (e->kind) {
      case ExprKind::IntImm: return e->int_value;
      case ExprKind::VarRef: return env.at(e->var.get());
      case ExprKind::SizeRef: return sizes.at(e->name);
      case ExprKind::Cast: return (*this)(e->args[0]);
      case ExprKind::Load: {
        int64_t b = (*this)(e->args[0]);
        if (e->args.size() != 1 || b < 0 || b >= static_cast<int64_t>(lens->size()))
          throw std::runtime_error("unexpected load of `" + e->buffer->name + "`");
        return (*lens)[b];
      }
      case ExprKind::Select: return (*this)(e->args[0]) ? (*this)(e->args[1]) : (*this)(e->args[2]);
      case ExprKind::Binary: {
        int64_t a = (*this)(e->args[0]), b = (*this)(e->args[1]);
        switch (e->binop) {
          case ir::BinOp::Add: return a + b;
          case ir::BinOp::Sub: return a - b;
          case ir::BinOp::Mul: return a * b;
          case ir::BinOp::Div: return b ? a / b : 0;
          case ir::BinOp::Mod: return b ? a % b : 0;
          case ir::BinOp::Min: return std::min(a, b);
          case ir::BinOp::Max: return std::max(a, b);
          case ir::BinOp::EQ: return a == b;
          case ir::BinOp::NE: return a != b;
          case ir::BinOp::LT: return a < b;
          case ir::BinOp::LE: return a <= b;
          case ir::BinOp::And: return a && b;
          case ir::BinOp::Or: return a || b;
          default: break;
        }
        break;
      }
      default: break;
    }
    throw std::runtime_error(std::string("cannot evaluate a ") + ir::kind_name(e->kind));
  }
};

/// Whether anything under `s` (an extent or a guard) depends on `v`.
bool depends(const ir::Stmt& s, const ir::Var& v) {
  bool found = false;
  ir::each_stmt(s, [&](const ir::StmtNode& x) {
    if (x.kind == ir::StmtKind::For) found |= ir::mentions(x.extent, v);
    if (x.kind == ir::StmtKind::IfThenElse) found |= ir::mentions(x.value, v);
  });
  return found;
}

/// Executions of stores under `s`.
double work(const ir::Stmt& s, Eval& ev) {
  if (!s) return 0;
  switch (s->kind) {
    case ir::StmtKind::Store: return 1;
    case ir::StmtKind::Seq: {
      double t = 0;
      for (const auto& c : s->body) t += work(c, ev);
      return t;
    }
    case ir::StmtKind::IfThenElse:
      return ev(s->value) ? work(s->body[0], ev) : (s->body.size() > 1 ? work(s->body[1], ev) : 0);
    case ir::StmtKind::For: {
      int64_t n = ev(s->extent);
      if (n <= 0) return 0;
      if (!depends(s->body[0], s->var)) {
        ev.env[s->var.get()] = 0;
        return static_cast<double>(n) * work(s->body[0], ev);
      }
      double t = 0;
      for (int64_t i = 0; i < n; ++i) {
        ev.env[s->var.get()] = i;
        t += work(s->body[0], ev);
      }
      return t;
    }
    default: return 0;
  }
}

/// Elements of `b` as laid out (dimension d onwards), with its padding.
double elements(const ir::BufferNode& b, size_t d, Eval& ev) {
  if (d == b.dims.size()) return 1;
  int64_t n = ev(b.dims[d].extent);
  if (d < b.pad.size() && b.pad[d] > 1) n = (n + b.pad[d] - 1) / b.pad[d] * b.pad[d];
  bool inner_depends = false;
  for (size_t j = d + 1; j < b.dims.size(); ++j) inner_depends |= ir::mentions(b.dims[j].extent, b.dims[d].var);
  if (!inner_depends) {
    ev.env[b.dims[d].var.get()] = 0;
    return static_cast<double>(n) * elements(b, d + 1, ev);
  }
  double t = 0;
  for (int64_t i = 0; i < n; ++i) {
    ev.env[b.dims[d].var.get()] = i;
    t += elements(b, d + 1, ev);
  }
  return t;
}

struct Figures {
  std::vector<std::pair<std::string, double>> per_stmt;  // per top-level statement
  double work = 0, storage = 0, all = 0;  // all: inputs, result and locals
};

Figures measure(const ir::Func& f, Eval& ev) {
  Figures r;
  std::vector<ir::Stmt> top;
  if (f.body->kind == ir::StmtKind::Seq) top = f.body->body;
  else top = {f.body};
  for (const auto& s : top) {
    std::string name;
    ir::each_stmt(s, [&](const ir::StmtNode& x) {
      if (x.kind == ir::StmtKind::Store && !x.buffer->dims.empty() && name.empty()) name = x.buffer->name;
    });
    double w = work(s, ev);
    r.per_stmt.emplace_back(name, w);
    r.work += w;
  }
  for (const auto& b : f.buffers) {
    if (b->dims.empty() || b->kind == ir::BufferKind::Aux || b->kind == ir::BufferKind::Scalar) continue;
    double e = elements(*b, 0, ev);
    if (b->kind == ir::BufferKind::Local) r.storage += e;
    r.all += e;
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string seqlens = "/work/shared/bench/seqlens", program = "examples/mha.toy";
  int64_t pad = dccc::ir::kCpuDefaultPad, heads = 8, dim = 64;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_padding: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--seqlens") seqlens = next();
    else if (a == "--program") program = next();
    else if (a == "--pad") pad = std::atoll(next().c_str());
    else if (a == "--heads") heads = std::atoll(next().c_str());
    else if (a == "--dim") dim = std::atoll(next().c_str());
    else if (a == "--verbose") verbose = true;
    else {
      std::fprintf(stderr,
                   "usage: bench_padding [--seqlens DIR] [--program FILE.toy] [--pad K] [--heads H] [--dim D] "
                   "[--verbose]\n");
      return 2;
    }
  }
  Compiled plain, padded;
  if (!compile(program, 0, plain) || !compile(program, pad, padded)) {
    std::fprintf(stderr, "bench_padding: cannot compile %s\n", program.c_str());
    if (plain.diags) plain.diags->print(std::cerr);
    return 1;
  }
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(seqlens, ec))
    if (e.path().extension() == ".txt") files.push_back(e.path());
  if (ec || files.empty()) {
    std::fprintf(stderr, "bench_padding: no length files in %s\n", seqlens.c_str());
    return 1;
  }
  std::sort(files.begin(), files.end());
  std::printf("program %s, default padding factor %lld, H = %lld, D = %lld; work = store executions "
              "(reduce steps + elements written), storage = elements of local tensors\n",
              program.c_str(), static_cast<long long>(pad), static_cast<long long>(heads),
              static_cast<long long>(dim));
  std::printf("%-9s %5s %6s %14s %14s %8s %14s %14s %8s %8s  %s\n", "dataset", "B", "mean", "work(none)",
              "work(default)", "extra", "local(none)", "local(dflt)", "extra", "all", "largest per-statement increase");
  double worst = 0;
  std::string worst_at;
  for (const auto& path : files) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream ls(line);
      std::string bs;
      ls >> bs;
      if (bs.empty() || bs.back() != ':') continue;
      long long bcount = std::atoll(bs.c_str());
      std::vector<int64_t> lens;
      for (long long v; ls >> v;) lens.push_back(v);
      if (static_cast<long long>(lens.size()) != bcount) {
        std::fprintf(stderr, "bench_padding: %s: line `%s...` has %zu lengths\n", path.c_str(), bs.c_str(),
                     lens.size());
        return 1;
      }
      double mean = 0;
      for (auto l : lens) mean += static_cast<double>(l) / static_cast<double>(lens.size());
      const auto& fp = plain.module->funcs[0];
      const auto& fd = padded.module->funcs[0];
      Eval ev;
      ev.sizes = {{"B", bcount}, {"H", heads}, {"D", dim}};
      ev.lens = &lens;
      Figures a = measure(fp, ev), d = measure(fd, ev);
      double extra = (d.work - a.work) / a.work * 100, extra_mem = (d.storage - a.storage) / a.storage * 100;
      double extra_all = (d.all - a.all) / a.all * 100;
      std::string largest;
      double largest_pct = 0;
      for (size_t k = 0; k < a.per_stmt.size() && k < d.per_stmt.size(); ++k) {
        double pct = a.per_stmt[k].second > 0 ? (d.per_stmt[k].second - a.per_stmt[k].second) / a.per_stmt[k].second * 100 : 0;
        if (verbose)
          std::printf("    %-10s %-12s %14.0f %14.0f %+7.3f%%\n", path.stem().c_str(), a.per_stmt[k].first.c_str(),
                      a.per_stmt[k].second, d.per_stmt[k].second, pct);
        if (pct > largest_pct) {
          largest_pct = pct;
          largest = a.per_stmt[k].first;
        }
      }
      std::printf("%-9s %5lld %6.1f %14.0f %14.0f %7.3f%% %14.0f %14.0f %7.3f%% %7.3f%%  %s\n", path.stem().c_str(),
                  bcount, mean, a.work, d.work, extra, a.storage, d.storage, extra_mem, extra_all,
                  largest.empty() ? "-" : (largest + " +" + std::to_string(largest_pct).substr(0, 5) + "%").c_str());
      if (extra > worst) {
        worst = extra;
        worst_at = path.stem().string() + " B=" + std::to_string(bcount);
      }
    }
  }
  std::printf("largest extra work: %.3f%% (%s); aim: at most 3%%: %s\n", worst, worst_at.empty() ? "-" : worst_at.c_str(),
              worst <= 3.0 ? "met" : "NOT met");
  return 0;
}
