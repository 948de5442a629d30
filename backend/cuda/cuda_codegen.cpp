// The CUDA backend's entry points (backend/cuda/cuda_codegen.h): emit_cuda,
// is_parallel_loop, and the function FuncEmitter::run writes. The rest of
// FuncEmitter is in the files backend/cuda/cuda_emitter.h lists.
#include "backend/cuda/cuda_codegen.h"

#include <fmt/format.h>

#include <filesystem>
#include <set>

#include "backend/abi/c_emit.h"
#include "backend/cuda/cuda_emitter.h"
#include "backend/cuda/cuda_prologue.h"
#include "backend/gpu/plan_attention.h"
#include "backend/gpu/plan_contraction.h"
#include "backend/gpu/print_cuda.h"
#include "ir/printer.h"

namespace dccc::backend {

using ir::BinOp;
using ir::BufferKind;
using ir::BufferNode;
using ir::ExprKind;
using ir::StmtKind;

bool is_parallel_loop(const ir::Stmt& loop) {
  if (!loop || loop->kind != StmtKind::For) return false;
  bool ok = true;
  std::set<const BufferNode*> scalars;
  ir::each_stmt(loop->body[0], [&](const ir::StmtNode& s) {
    if (s.kind == StmtKind::Print) ok = false;
    if (s.kind != StmtKind::Store) return;
    const BufferNode* b = s.buffer.get();
    if (b->dims.empty()) {
      if (b->kind != BufferKind::Scalar) ok = false;  // a scalar result or input
      scalars.insert(b);
    } else {
      // Lowering binds each left-side index to its own dimension, so a store
      // whose offset mentions the loop variable writes a different element in
      // every iteration; one that does not would race.
      bool mentioned = false;
      for (const auto& a : s.args) mentioned = mentioned || ir::mentions(a, loop->var);
      if (!mentioned) ok = false;
    }
  });
  // Every scalar it writes must be private to an iteration.
  for (const BufferNode* b : scalars) ok = ok && ir::written_before_read(loop->body[0], b);
  return ok;
}

std::string emit_cuda(const ir::Module& m, const CudaOptions& options) {
  std::string out = kCudaPrologue;
  out += kCheckedIntHelpers;
  out += "\n";
  std::string funcs;
  bool mma = false;
  for (const auto& f : m.funcs) {
    if (f.name == "main") continue;
    if (!f.storage_lowered) cudagen::unsupported(f.at, "a function that is not storage-lowered (`" + f.name + "`)");
    cudagen::FuncEmitter fe(f, funcs, options);
    fe.run();
    mma |= fe.wrote_mma();
  }
  if (mma) out += std::string(gpu::kMmaPrologue) + "\n";
  return out + funcs;
}

namespace {
/// The kernel IR's vloop pieces as --emit=vloop names them.
struct FuncVloopText : gpu::VloopText {
  const ir::Func& f;
  ir::FuncText t;
  explicit FuncVloopText(const ir::Func& fn) : f(fn), t(fn) {}
  std::string expr(const ir::Expr& e) override { return t.expr(e); }
  std::string var(const ir::Var& v) override { return t.var(v); }
  std::string stmt(const ir::Stmt& s, int depth) override { return t.stmt(s, depth); }
  std::string buffer(const BufferNode* b) override {
    for (const auto& x : f.buffers)
      if (x.get() == b) return t.buffer(x);
    return b ? b->name : "?";
  }
};
}  // namespace

std::string emit_kernel_ir(const ir::Module& m, const CudaOptions& options) {
  std::string out;
  for (const auto& f : m.funcs) {
    if (f.name == "main") continue;
    if (!f.storage_lowered) cudagen::unsupported(f.at, "a function that is not storage-lowered (`" + f.name + "`)");
    out += fmt::format("// ---- {} ----\n", f.name);
    std::string scratch;
    cudagen::FuncEmitter fe(f, scratch, options);
    FuncVloopText text(f);
    std::vector<ir::Stmt> items = f.body->kind == StmtKind::Seq ? f.body->body : std::vector<ir::Stmt>{f.body};
    for (size_t k = 0; k < items.size(); ++k) {
      std::string name = fmt::format("{}__k{}", f.name, k), why, why_attn;
      if (auto attn = fe.plan_attention(items[k], name, &why_attn))
        out += gpu::print_attention_kernel(*attn, text);
      else if (auto kernel = fe.plan_mma(items[k], name, &why))
        out += gpu::print_kernel(*kernel, text);
      else
      {
        out += fmt::format("kernel {}: backend/cuda's kernels (not a tensor-core contraction: {})\n", name, why);
        // A nest with a key loop that the fused attention planner declined: why.
        if (gpu::attention_candidate(why_attn))
          out += fmt::format("  not fused attention: {}\n", why_attn);
      }
    }
    out += "\n";
  }
  return out;
}

std::string explain_kernels(const ir::Module& m, const CudaOptions& options) {
  std::string out;
  for (const auto& f : m.funcs) {
    if (f.name == "main" || !f.storage_lowered) continue;
    std::string scratch;
    cudagen::FuncEmitter fe(f, scratch, options);
    std::vector<ir::Stmt> items = f.body->kind == StmtKind::Seq ? f.body->body : std::vector<ir::Stmt>{f.body};
    for (size_t k = 0; k < items.size(); ++k) {
      std::string name = fmt::format("{}__k{}", f.name, k), why, why_attn;
      if (auto a = fe.plan_attention(items[k], name, &why_attn)) {
        std::string wg;
        for (int dp : a->wgmma_dims) wg += fmt::format("{}{}", wg.empty() ? "" : ", ", dp);
        if (!wg.empty())
          wg = a->elem == gpu::Elem::F32
                   ? " (compiled for sm_90a, head dims " + wg +
                         ": wgmma.mma_async m64nNk8 on tf32, S from Q's and K's tf32 parts in shared memory, P V from P's "
                         "fragments and V transposed, K's small parts and V's transposed parts made once a tile by the block)"
                   : " (compiled for sm_90a, head dims " + wg + ": wgmma.mma_async m64nNk16, K and V 128-byte swizzled)";
        out += fmt::format("kernel {}: fused attention (one kernel for the whole softmax chain): K and V through shared-memory stages (cp.async), mma.sync {}{}; {}; schedule: "
                           "{}{}, {}; {}\n",
                           name, gpu::mma_name(a->shape), wg, gpu::attention_instances(*a),
                           a->grid == gpu::AttnGrid::Tiles ? "one block per (batch entry, query tile)"
                                                           : "(batch entry, query tile) entries on ",
                           a->grid == gpu::AttnGrid::Tiles ? "" : gpu::attn_grid_name(a->grid),
                           gpu::attn_order_name(a->order),
                           a->skip_conjuncts.empty() ? std::string("no key tile skipped")
                                                     : fmt::format("key tiles skipped by {} mask conjunct(s)", a->skip_conjuncts.size()));
      } else if (auto c = fe.plan_mma(items[k], name, &why)) {
        std::string wg = "assumed occupancy: not modelled";
        if (const auto& w = c->sm90a)
          wg = fmt::format("sm_90a form: block tile {} x {}, {} warpgroups of wgmma m64n{}k{}{} from shared memory{}, K-steps "
                           "of {} in {} stages ({} bytes of dynamic shared memory){}; assumed occupancy: {} block(s) an SM "
                           "on sm_90a, else not modelled",
                           w->tiles.tile_m, w->tiles.tile_n, w->warps.warps_m * w->warps.warps_n / 4, w->warps.warp_n,
                           gpu::mma_k(w->mma.shape),
                           w->mma.shape == gpu::MmaShape::WGMMA_TF32
                               ? fmt::format(" tf32 ({})", gpu::fp32_math_name(w->mma.fp32))
                               : std::string(),
                           w->specialized ? fmt::format(" and a producer warpgroup of copies ({} threads)", w->specialized->producers)
                                          : std::string(),
                           w->block_k, w->shared.empty() ? 0 : w->shared[0].stages, w->dynamic_smem,
                           w->specialized && w->specialized->persistent ? ", a persistent grid" : "", w->min_blocks);
        out += fmt::format("kernel {}: tensor-core contraction: block tile {} x {} ({} warps), K-steps of {} in {} "
                           "stages, mma.sync {}; schedule: one block per tile-list entry in batch order; {}\n",
                           name, c->tiles.tile_m, c->tiles.tile_n, c->warps.warps_m * c->warps.warps_n, c->block_k,
                           c->shared.empty() ? 0 : c->shared[0].stages, gpu::mma_name(c->mma.shape), wg);
      } else {
        out += fmt::format("kernel {}: backend/cuda's kernels (not a tensor-core contraction: {}){}\n", name, why,
                           gpu::attention_candidate(why_attn) ? "; not fused attention: " + why_attn : std::string());
      }
    }
  }
  return out;
}

}  // namespace dccc::backend

namespace dccc::backend::cudagen {

/// `what` on the CUDA target, at `at` (the statement or declaration).
[[noreturn]] void unsupported(SourceRange at, const std::string& what) {
  throw CudaUnsupported(at, what + " on the CUDA target");
}

bool FuncEmitter::schedule_maps(const ir::Stmt& item, std::string* why) const {
  for (const auto& m : f_.gpu_mappings)
    if (item->kind == StmtKind::For && !m.blocks.empty() && m.blocks[0] == item->var) {
      if (why) *why = "a schedule maps it with gpu_blocks / gpu_threads";
      return true;
    }
  return false;
}

std::optional<gpu::Kernel> FuncEmitter::plan_mma(const ir::Stmt& item, const std::string& name, std::string* why) {
  if (schedule_maps(item, why)) return std::nullopt;
  gpu::PlanOptions o;
  o.fp32 = options_.fp32;
  o.wgmma_stages = options_.gemm_stages;
  o.parallel = [&](const ir::Stmt& s) { return is_parallel_loop(s); };
  return gpu::plan_contraction(f_, item, name, o, why);
}

void FuncEmitter::emit_mma_kernel(Launch& l, const gpu::Kernel& k) {
  PieceText<gpu::DeviceText> text(*this);
  private_.clear();
  private_.insert(k.epilogue.acc);
  for (const auto* b : k.epilogue.locals) private_.insert(b);
  hoisted_.clear();
  outer_prefix_.clear();
  l.parallel = true;
  l.mma = std::make_shared<gpu::Kernel>(k);
  out_ += gpu::print_cuda(k, text);
  wrote_mma_ = true;
}

void FuncEmitter::run() {
  for (size_t k = 0; k < f_.buffers.size(); ++k) slot_[f_.buffers[k].get()] = static_cast<int>(k);
  for (size_t k = 0; k < f_.sizes.size(); ++k) size_index_[f_.sizes[k].name] = static_cast<int>(k);
  // Host code reads the length arrays and offset arrays through `hp`.
  for (size_t k = 0; k < f_.buffers.size(); ++k) {
    const BufferNode* b = f_.buffers[k].get();
    if (b->kind == BufferKind::Input && !b->dims.empty()) host_.buffers[b] = fmt::format("((const {}*)hp[{}])", c_type(b->type), k);
    if (b->kind == BufferKind::Aux) host_.buffers[b] = fmt::format("((int64_t*)hp[{}])", k);
  }
  check_host_computable();
  out_ += fmt::format("// ---- {} ----\nstruct {}__args {{\n  int64_t s[{}];\n  void* p[{}];\n  int* err;\n}};\n\n",
                      f_.name, f_.name, std::max<size_t>(1, f_.sizes.size()), std::max<size_t>(1, f_.buffers.size()));
  std::vector<ir::Stmt> items = ir::items_of(f_.body);
  std::vector<Launch> launches(items.size());
  // The planner asks for each statement's kernel in order (those it does
  // not run on the host), to know what its launch reads on the host.
  auto make_kernel = [&](size_t k) -> LaunchReads {
    if (SourceRange at = ir::statement_location(items[k]); !options_.line_file.empty() && at.valid()) {
      // The statement's file: the root's, or an imported one's.
      std::string path = at.file ? std::filesystem::absolute(at.file->name()).lexically_normal().string() : options_.line_file;
      std::string literal;  // a C string literal's contents
      for (char c : path) literal += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
      out_ += fmt::format("#line {} \"{}\"\n", at.line, literal);
    }
    // An inlined call's `where` (asserts) runs as a kernel of checks alone
    // (the CUDA pass list keeps them in their own statement), which the
    // launcher waits for; an assert next to computation would let that
    // computation run past a violated constraint.
    bool asserts = false, other = false;
    ir::each_stmt(items[k], [&](const ir::StmtNode& x) {
      if (x.kind == StmtKind::Assert) asserts = true;
      else if (x.kind != StmtKind::For && x.kind != StmtKind::Seq) other = true;
    });
    if (asserts && other)
      unsupported(ir::statement_location(items[k]).valid() ? ir::statement_location(items[k]) : f_.at,
                  "the `where` of an inlined call checked in a kernel that also computes");
    launches[k] = emit_kernel(items[k], static_cast<int>(k));
    launches[k].checks = asserts;
    return launch_reads(launches[k]);
  };
  plan_ = plan_host_steps(f_, make_kernel, [&](const BufferNode* b) { return in_memory_.count(b) > 0; });
  for (size_t k = 0; k < items.size(); ++k) launches[k].on_host = plan_.steps[k].on_host;
  for (const auto& m : f_.gpu_mappings) {
    bool used = false;
    for (const auto& l : launches) used |= l.mapping == &m;
    if (!used)
      throw CudaUnsupported(m.at, fmt::format("a GPU mapping of loop `{}`, whose statement the CUDA target no longer "
                                              "runs as its own kernel (kernel fusion computes it elsewhere: an element-wise "
                                              "local in its readers)",
                                              m.blocks.empty() ? "?" : m.blocks[0]->name));
  }
  emit_launcher(launches);
  emit_host_entry();
}

}  // namespace dccc::backend::cudagen
