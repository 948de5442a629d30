// Shared harness of the backend differential tests: compiles a program
// through storage lowering, makes random length patterns (random lengths,
// zero-length sequences, B = 1, one very long sequence), runs each function
// through one or more kernels with the CPU backend's signature and compares
// every output value with a float64 reference (the interpreter computing
// every float operation in f64, sharing only the front end with the
// backends) and, when there are several kernels, with each other.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <sstream>

#include "frontend/imports.h"
#include "frontend/parser.h"
#include "ir/interpreter.h"
#include "ir/lower.h"
#include "ir/pipeline.h"
#include "typecheck/checker.h"
#include "tests/unit/backend/half_bits.h"
#include "tests/unit/program_files.h"

namespace dccc::backend::testing {

struct Program {
  std::unique_ptr<LoadedFiles> loaded;  // imported files (outlive the program)
  std::unique_ptr<SourceFile> file;
  std::unique_ptr<DiagnosticEngine> diags;
  std::unique_ptr<ast::Program> ast;
  std::unique_ptr<CheckedProgram> checked;
  std::optional<ir::Module> module;
};

/// The front end, lowering and storage lowering; with `cpu_passes` also the
/// passes the driver runs for the CPU target only (mark_parallel,
/// reorder_loops, mark_written_first, transpose_operands, tile_contractions, fuse_parallel_loops), as the LLVM backend's tests need; with
/// `cuda_passes` the CUDA target's fusion (as tools/dccc.cpp runs them).
/// Parses and checks `text` into `p`, with its imports (looked up in
/// `root_dir`, then the standard library, as the driver does); false after
/// errors (in `p.diags`).
inline bool front_end(Program& p, const std::string& name, const std::string& text, const std::string& root_dir = ".") {
  p.file = std::make_unique<SourceFile>(name, text);
  p.diags = std::make_unique<DiagnosticEngine>(p.file.get());
  p.loaded = std::make_unique<LoadedFiles>();
  ImportOptions options;
  options.root_dir = root_dir;
  p.ast = parse_with_imports(*p.file, *p.diags, options, *p.loaded);
  if (!p.ast) return false;
  p.checked = check(*p.ast, *p.diags);
  return !p.diags->has_errors();
}

/// Lowers `p`'s checked program and runs the pipeline (ir/pipeline.h) with
/// `o`, verifying the IR after every pass; no module after errors (in
/// `p.diags`).
inline void run_passes(Program& p, ir::PipelineOptions o) {
  p.module = ir::lower(*p.checked, *p.diags);
  if (!p.module || p.diags->has_errors()) {
    p.module.reset();
    return;
  }
  o.verify_each = true;
  auto result = ir::run_pipeline(*p.module, o, *p.diags);
  EXPECT_EQ(result.internal_error, "");
  if (!result.ok()) p.module.reset();
}

/// `o` with its pass list (ir::passes_for) less the passes named in `drop`.
inline ir::PipelineOptions without_passes(ir::PipelineOptions o, const std::set<std::string>& drop) {
  std::vector<std::string> names;
  for (const auto& pass : ir::passes_for(o))
    if (!drop.count(pass.name)) names.push_back(pass.name);
  o.passes = names;
  return o;
}

inline Program compile(const std::string& name, const std::string& text, bool cpu_passes = false,
                       bool cuda_passes = false, const std::string& root_dir = ".") {
  Program p;
  if (!front_end(p, name, text, root_dir)) return p;
  ir::PipelineOptions o;
  o.default_pad = 0;
  o.simplify = false;
  if (cuda_passes) {
    o.target = ir::Target::Cuda;  // the driver's CUDA list (no simplify)
  } else if (!cpu_passes) {
    o.passes = std::vector<std::string>{"expand-prints", "storage-lowering"};
  }
  run_passes(p, o);
  return p;
}

/// Typed host storage for one buffer.
struct HostBuffer {
  Scalar type;
  std::vector<unsigned char> bytes;
  size_t size() const { return bytes.size() / elem(type); }
  static size_t elem(Scalar t) {
    switch (t) {
      case Scalar::F64:
      case Scalar::I64: return 8;
      case Scalar::F32:
      case Scalar::I32: return 4;
      case Scalar::F16:
      case Scalar::BF16: return 2;
      case Scalar::Bool: return 1;
    }
    return 8;
  }
  void set(size_t k, double v) {
    unsigned char* p = bytes.data() + k * elem(type);
    switch (type) {
      case Scalar::F64: std::memcpy(p, &v, 8); break;
      case Scalar::F32: {
        float f = static_cast<float>(v);
        std::memcpy(p, &f, 4);
        break;
      }
      case Scalar::I32: {
        int32_t i = static_cast<int32_t>(v);
        std::memcpy(p, &i, 4);
        break;
      }
      case Scalar::I64: {
        int64_t i = static_cast<int64_t>(v);
        std::memcpy(p, &i, 8);
        break;
      }
      case Scalar::Bool: *p = v != 0; break;
      case Scalar::BF16: {
        uint16_t h = to_bf16(static_cast<float>(v));
        std::memcpy(p, &h, 2);
        break;
      }
      case Scalar::F16: {
        uint16_t h = to_f16(static_cast<float>(v));
        std::memcpy(p, &h, 2);
        break;
      }
    }
  }
  double get(size_t k) const {
    const unsigned char* p = bytes.data() + k * elem(type);
    switch (type) {
      case Scalar::F64: { double d; std::memcpy(&d, p, 8); return d; }
      case Scalar::F32: { float f; std::memcpy(&f, p, 4); return f; }
      case Scalar::I32: { int32_t i; std::memcpy(&i, p, 4); return i; }
      case Scalar::I64: { int64_t i; std::memcpy(&i, p, 8); return static_cast<double>(i); }
      case Scalar::Bool: return *p;
      case Scalar::BF16: { uint16_t h; std::memcpy(&h, p, 2); return from_bf16(h); }
      case Scalar::F16: { uint16_t h; std::memcpy(&h, p, 2); return from_f16(h); }
    }
    return 0;
  }
};

/// Host storage for `f`'s inputs and outputs, in Func::buffers order:
/// inputs filled from `inputs`, outputs zeroed with the sizes the reference
/// run `ref` gave them. `ptrs` receives their addresses and a trailing NULL
/// (no aux arrays: the kernel computes its prelude), the kernel's `buffers`.
inline std::vector<HostBuffer> host_buffers(const ir::Func& f,
                                            const std::map<const ir::BufferNode*, std::vector<double>>& inputs,
                                            ir::Interpreter& ref, std::vector<void*>& ptrs) {
  std::vector<HostBuffer> host;
  host.reserve(f.buffers.size());
  for (const auto& b : f.buffers) {
    if (b->kind != ir::BufferKind::Input && b->kind != ir::BufferKind::Output) continue;
    HostBuffer h{b->type, {}};
    std::vector<double> data = b->kind == ir::BufferKind::Input ? inputs.at(b.get()) : ref.packed(b.get());
    if (b->dims.empty() && b->kind == ir::BufferKind::Output) data = {0};
    h.bytes.assign(std::max<size_t>(1, data.size()) * HostBuffer::elem(b->type), 0);
    if (b->kind == ir::BufferKind::Input)
      for (size_t k = 0; k < data.size(); ++k) h.set(k, data[k]);
    host.push_back(std::move(h));
  }
  ptrs.clear();
  for (auto& h : host) ptrs.push_back(h.bytes.data());
  ptrs.push_back(nullptr);
  return host;
}

/// Allowed error against the float64 reference: 1e-5 for f32 and f64;
/// 16-bit results are rounded after every operation (the reference is not),
/// so a few units of their last place: bf16 has 8 significant bits (2^-8 =
/// 3.9e-3), f16 has 11 (2^-11 = 4.9e-4).
inline double relative_tolerance(Scalar t) {
  switch (t) {
    case Scalar::BF16: return 4 * 3.9e-3;
    case Scalar::F16: return 4 * 4.9e-4;
    default: return is_float(t) ? 1e-5 : 0.0;
  }
}

/// One example program, compiled through storage lowering (`program.module`
/// is empty when it uses something the code generators do not handle yet).
struct Example {
  std::string file;  // e.g. "mha.toy"
  std::string stem;  // e.g. "mha"
  Program program;
};

/// Every `*.toy` in `dir`, in file-name order (so that runs are repeatable);
/// half of them under ASan (test_files::toy_files).
inline std::vector<Example> compile_examples(const std::string& dir, bool cuda_passes = false) {
  std::vector<Example> out;
  for (const auto& path : test_files::toy_files({dir})) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    out.push_back(Example{path.filename().string(), path.stem().string(),
                          compile(path.filename().string(), text.str(), false, cuda_passes, dir)});
  }
  return out;
}

/// A kernel with the CPU backend's signature (codegen.h), by name.
using Kernel = std::function<int32_t(const int64_t* sizes, void* const* buffers)>;
struct Engine {
  std::string name;
  Kernel kernel;
};

/// Runs `f` on four length patterns through every engine; each output must
/// match the float64 reference within relative_tolerance (1e-5 for f32), and the
/// engines must match each other within the same tolerance. Adds the number
/// of values compared to `compared`.
/// `fixed` gives some sizes their value in every pattern (a function whose
/// `where` the default sizes break: examples/transformer_block.toy's
/// E == 2 * K and lengths <= P).
inline void run_differential(const ir::Func& f, const std::vector<Engine>& engines, const std::string& name,
                             int& compared, const std::map<std::string, int64_t>& fixed = {}) {
  for (int pattern = 0; pattern < 4; ++pattern) {
    SCOPED_TRACE(name + ": " + f.name + " pattern " + std::to_string(pattern));
    std::mt19937 rng(99 + pattern);
    std::map<std::string, int64_t> sizes;
    for (size_t i = 0; i < f.sizes.size(); ++i) sizes[f.sizes[i].name] = (pattern == 2 && i == 0) ? 1 : 4;
    for (const auto& [n, v] : fixed)
      if (sizes.count(n)) sizes[n] = v;
    auto gen = [&](const ir::BufferNode* b, int64_t k) -> double {
      if (is_int(b->type)) {
        switch (pattern) {
          case 0: return std::uniform_int_distribution<int>(1, 9)(rng);
          case 1: return k % 2 ? 0 : std::uniform_int_distribution<int>(1, 9)(rng);
          case 2: return std::uniform_int_distribution<int>(0, 12)(rng);
          default: return k == 1 ? 70 : std::uniform_int_distribution<int>(0, 3)(rng);
        }
      }
      if (b->type == Scalar::Bool) return std::uniform_int_distribution<int>(0, 1)(rng);
      // Values the kernel sees exactly: rounded to the buffer's type.
      double v = std::uniform_real_distribution<double>(-1.0, 1.0)(rng);
      if (b->type == Scalar::BF16) return from_bf16(to_bf16(static_cast<float>(v)));
      if (b->type == Scalar::F16) return from_f16(to_f16(static_cast<float>(v)));
      return b->type == Scalar::F32 ? static_cast<float>(v) : v;
    };
    auto inputs = ir::Interpreter::make_inputs(f, sizes, gen);
    std::ostringstream sink;
    ir::Interpreter ref(sink);
    ref.set_float64_reference(true);
    try {
      ref.run(f, sizes, inputs);
    } catch (const ir::InterpError&) {
      continue;  // lengths that break the function's `where` contract
    }
    std::vector<int64_t> size_values;
    for (const auto& s : f.sizes) size_values.push_back(sizes.at(s.name));
    size_values.push_back(0);
    // Each engine on its own copy of the buffers: inputs from the packed
    // data, outputs sized by the reference.
    std::vector<std::vector<HostBuffer>> results;
    for (const auto& engine : engines) {
      std::vector<void*> ptrs;
      std::vector<HostBuffer> host = host_buffers(f, inputs, ref, ptrs);
      ASSERT_EQ(engine.kernel(size_values.data(), ptrs.data()), 0) << engine.name;
      results.push_back(std::move(host));
    }
    size_t slot = 0;
    for (const auto& b : f.buffers) {
      if (b->kind != ir::BufferKind::Input && b->kind != ir::BufferKind::Output) continue;
      size_t this_slot = slot++;
      if (b->kind != ir::BufferKind::Output) continue;
      std::vector<double> want = b->dims.empty() ? std::vector<double>{0} : ref.packed(b.get());
      if (b->dims.empty()) {
        std::ostringstream s2;
        ir::Interpreter r2(s2);
        r2.set_float64_reference(true);
        r2.run(f, sizes, inputs);
        want = r2.packed(b.get());
      }
      for (size_t e = 0; e < engines.size(); ++e) {
        const HostBuffer& h = results[e][this_slot];
        for (size_t k = 0; k < want.size(); ++k) {
          double got = h.get(k);
          if (std::isnan(want[k])) {
            EXPECT_TRUE(std::isnan(got)) << engines[e].name << " " << b->name << "[" << k << "]";
            continue;
          }
          if (std::isinf(want[k])) {  // max over an empty sequence: -inf
            EXPECT_EQ(got, want[k]) << engines[e].name << " " << b->name << "[" << k << "]";
            continue;
          }
          double tol = relative_tolerance(b->type) * std::max(1.0, std::fabs(want[k]));
          EXPECT_LE(std::fabs(got - want[k]), tol)
              << engines[e].name << " " << b->name << "[" << k << "] = " << got << ", reference " << want[k];
          if (e > 0) {
            double other = results[0][this_slot].get(k);
            EXPECT_LE(std::fabs(got - other), tol) << engines[e].name << " vs " << engines[0].name << " " << b->name
                                                    << "[" << k << "] = " << got << " vs " << other;
          }
          ++compared;
        }
      }
    }
  }
}

}  // namespace dccc::backend::testing
