// The dccc driver's command line (tools/driver_options.h).
#include "tools/driver_options.h"


#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <iostream>
#include <string>

#include "support/diagnostic_format.h"
#include "tools/link_library.h"

namespace dccc::tools {
namespace {

const char* kUsage = R"(usage: dccc [options] FILE.toy
       dccc FILE.toy -o PROG.so
       dccc run [options] FILE.toy
       dccc repl [options]
       dccc [--check | --emit=vloop | --emit=cuda | run] [options] FILE.vloop

Checks a DCC program (.toy) whose ragged tensors are `coupling` types.
`dccc run` JIT-compiles the program for this CPU (LLVM ORC) and calls its
`fn main()`; what `print` shows is documented in docs/language.md.
`dccc repl` evaluates declarations and expressions typed one at a time
(`dccc repl --help`; docs/repl.md).

A FILE.vloop holds vloop IR as --emit=vloop prints it (docs/vloop.md), for
example a reproducer edited by hand: dccc parses it instead of a program,
runs the IR passes it has not been through (storage lowering, unless it has
a `prelude` or --no-storage-lowering is given) and goes on as for a .toy
file. IR text has not been through the checker's proofs, so `dccc run`
executes it with the reference interpreter, which checks every access.

options:
  --check            check the program; exit 0 when it is valid (the default)
  --emit=ast         print the syntax tree
  --emit=typed       print each statement with its index variables, their
                     ranges and which are reduced
  --emit=vloop       print the vloop IR after storage lowering (flat offsets,
                     aux arrays and the prelude that fills them; loops run on
                     the thread pool print as `parallel`; for --target, which
                     changes it: the CPU's has its loops reordered)
  --emit=cuda        print the CUDA C++ that --target=cuda compiles
  --emit=llvm        print the LLVM IR after the optimization pipeline, for
                     --cpu when given (what -o compiles), else for this CPU
                     (what `run` compiles)
  --emit=docs        print a Markdown reference of the file's public
                     declarations and `///` doc comments (docs/stdlib.md);
                     --docs-name=NAME heads it NAME instead of FILE
  --emit=metadata    print the JSON description of the library that -o
                     writes for --target (functions, structs, fields, sizes;
                     docs/abi.md#metadata), also compiled into the library
                     as dccc_module_info()
  --interpret        dccc run: execute with the reference interpreter of the
                     storage-lowered vloop IR instead of the JIT
  --jit              dccc run FILE.vloop: JIT-compile the IR instead of
                     interpreting it (accesses are then not checked)
  --no-storage-lowering
                     stop before storage lowering (--emit=vloop shows the
                     multi-index IR; run uses the layout-free interpreter)
  -o PROG.so         compile into a shared library for the target, and write
                     PROG.h (the C ABI) and dccrt.h (the runtime's) beside it;
                     the C compiler used to link is $CC, default `cc`, with
                     extra flags from $DCCC_CFLAGS; $DCCC_RUNTIME_LIB and
                     $DCCC_RUNTIME_HEADER replace the libdccrt.a and dccrt.h
                     it links (--print-runtime shows which are used)
  --emit=kernel      print the GPU kernel IR of --target=cuda: per statement,
                     the tensor-core kernel the planner made (tiles, warps,
                     shared buffers, copies, MMAs, epilogue; docs/cuda.md)
                     or why the statement keeps the other CUDA kernels
  --fp32-math=3xtf32|tf32|ieee
                     f32 contractions on the CUDA target: three TF32
                     tensor-core products per step, about f32 accuracy (the
                     default); one TF32 product (10-bit mantissas, faster);
                     or plain f32 FMAs without tensor cores
  --fast-math        --target=cuda: an f32 `exp` is one hardware ex2.approx
                     of x log2 e, as FlashAttention computes it (relative
                     error below 2^-21 + |x| 2^-23, results under 2^-126
                     flushed to 0) instead of the accurate expf; 16-bit
                     results and the CPU target are unchanged (docs/cuda.md)
  --attention-tiles=M,W,N,B
                     tuning experiments on the fused attention kernel of
                     --target=cuda: every head dim takes M m16 tiles of
                     query rows a warp (1 or 2; f32 always 1), W warps a
                     block, N keys a tile, registers capped for B blocks an
                     SM (W x B at most 16; --explain shows the choices)
  --attention-stages=S
                     likewise: S shared-memory stages of K and V (2-4; the
                     key loop's copies run S - 1 key tiles ahead), fewer
                     where one block's shared memory would not hold them;
                     1: f32's wgmma form only (the next tile copied once S
                     has read the stage; one more block an SM), 2 elsewhere
  --gemm-stages=S     the tensor-core contractions of --target=cuda: give a
                     16-bit one an sm_90a (wgmma, warp-specialized) form
                     with S shared-memory stages of 48 KB (2-4; default 3);
                     0 leaves it out (sm_90a then runs the mma.sync form)
  --attention-split=C,W,N
                     likewise for head dims from 257 to C x W (a score
                     summed over heads): W warps share 16 query rows, C
                     columns each, N keys a tile
  --attention-grid=tiles|static|atomic
                     likewise: one block per tile-list entry (the
                     default), or a persistent grid (SMs x resident
                     blocks) striding over the entries or taking the next
                     from an atomic counter
  --attention-order=auto|keys|sequences|tiles
                     likewise: the order in which blocks take the
                     (batch entry, query tile) entries: by key count; by
                     key count with an entry's query tiles together, most
                     key tiles run first; or by key tiles run over all
                     entries (auto, the default: tiles for f32, sequences
                     for 16-bit inputs)
  --attention-q=auto|registers|smem
                     likewise: where the wgmma form (sm_90a, head dims 64
                     and 128) reads Q: from shared memory where that buys
                     its build a block an SM, registers capped for it (auto,
                     the default: head dims 64 and 128 but 128's long-key
                     tiles), or registers, or shared memory everywhere
  --attention-unmasked=on|off
                     likewise: whether key tiles inside a mask (causal's
                     below the diagonal) run a copy of the body without
                     its compare and select (on, the default)
  --attention-staged-stores=on|off
                     likewise: whether 16-bit outputs leave through shared
                     memory as 16-byte stores of whole row chunks (on,
                     the default) or as each lane's 4-byte pairs
  --attention-f32-wgmma=on|off|all
                     likewise: whether f32 attention (3xTF32 or TF32)
                     runs S and P V on tf32 wgmma where the CUDA code is
                     built for sm_90a: head dims 64 and 128 (on, the
                     default; `all` is the same: head dim 128 joined it),
                     or on mma.sync everywhere (off)
  --target=cpu|cuda  what -o compiles for (default: cpu, LLVM);
                     cuda: CUDA kernels built by nvcc ($DCCC_NVCC, else
                     /usr/local/cuda/bin/nvcc, else nvcc on PATH; through
                     $DCCC_COMPILER_LAUNCHER when set, e.g. ccache) for
                     --cuda-arch; the structs then hold device pointers
  --cpu=CPU          the CPU -o (and --emit=llvm) compiles for: native (this
                     machine's CPU and features), x86-64-v2, x86-64-v3,
                     x86-64-v4 or any LLVM CPU name (skylake-avx512, znver4);
                     default for -o: x86-64-v2 (generic off x86-64), so a
                     library runs on any machine of its architecture;
                     --emit=llvm's default is native, as `dccc run` compiles
  --cuda-arch=LIST   the GPU architectures of --target=cuda, comma-separated
                     (sm_80,sm_90a, the default); the PTX of the last is
                     embedded too, for newer GPUs
  -O0 -O1 -O2 -O3    LLVM's optimization pipeline for -o and --emit=llvm
                     (default -O3); -O is also nvcc's for --target=cuda
  -g                 -o: DWARF line tables in the .toy file's lines (gdb,
                     perf annotate and llvm-dwarfdump show .toy statements)
  -lineinfo          -o --target=cuda: `#line`s of the .toy file before each
                     kernel, and nvcc -lineinfo (Nsight shows .toy lines)
  -MD                -o: also write a Make-style dependency file (what
                     Ninja's and CMake's depfile support read): PROG.so and
                     PROG.h depend on FILE.toy; -MF FILE names it (default
                     PROG.d)
  -MF FILE           the dependency file of -MD
  --color=WHEN       colour diagnostics: auto (the default: on a terminal,
                     unless $NO_COLOR is set), always or never
  --diagnostics-format=text|json|sarif
                     json: one object per diagnostic and line on stderr;
                     sarif: one SARIF 2.1.0 log on stderr at exit
                     (docs/errors.md#machine-readable-diagnostics)
  --runtime=static|shared
                     -o: copy the runtime (libdccrt.a) into the library (the
                     default: it needs nothing from dccc's prefix), or link
                     libdccrt.so from the prefix, found through an absolute
                     RUNPATH (one runtime, so one prelude cache and thread
                     pool, for every library a process loads)
  --print-runtime    print the runtime library and header -o uses (beside
                     the executable when installed) and exit
  --verify-each      run the IR verifier after every pass (always on in debug
                     builds); a violation is an internal error
  --list-passes      print the IR passes in order for --target, one line each
  --print-after=PASS print the vloop IR to stderr after PASS (may repeat)
  --print-after-all  print the vloop IR to stderr after every pass
  --passes=A,B,...   run exactly these IR passes, in this order, instead of
                     the target's list (for pass tests and bisecting)
  --summary          print what the checker inferred, one block per function
  --schedule=TEXT    schedule blocks as in the source (`schedule f { pad_loop(y.i, 4); }`,
                     docs/schedules.md), applied after the file's own; may repeat
  --explain          print, per assignment, the schedule choices made and why
                     (a directive, or the default)
  --no-default-schedule
                     no default padding (CPU target; docs/schedules.md#defaults)
  --default-pad=K    the CPU target's default padding factor (default 4; 0 or 1: none)
  --online-reductions
                     derive the one-pass (flash-attention) form of dependent
                     reductions: no O(s^2) scores in memory (docs/vloop.md;
                     on by default on the CPU, and on the CUDA target where
                     the fused attention kernel takes the result (f32 too,
                     unless --fp32-math=ieee); this forces it everywhere
  --materialize, --no-online-reductions
                     do not derive the one-pass form: the chain runs as
                     written, its [s, s] scores stored
  --online-block=N   keys a step of the fused loop (default: 128 on the CPU,
                     with query rows in tiles of 4; 1 on CUDA; 1: one key a step)
  --no-simplify      skip the Z3-backed index simplification, bound-check
                     elimination and load hoisting after storage lowering
                     (ir/simplify_indices.h)
  --explain-simplify print, per function, what that pass changed and why
  -DNAME=VALUE       fix size parameter NAME to an integer, like `const`
  -I DIR, -IDIR      look for imported files in DIR (after the importing
                     file's folder, before the standard library)
  --max-errors=N     stop listing errors after N (default 100)
  --help             show this help
  --version          show the version

exit status: 0 valid, 1 the program has errors, 2 bad usage, 3 run-time error
(dccc run), 70 internal error
)";


/// `--NAME=on|off` (a's prefix `flag`, through `=`) into `value`: false
/// where `a` is another option, else true, with `error` set (a usage
/// error's status) where the value is neither.
bool on_off(const std::string& a, const std::string& flag, bool& value, int& error) {
  if (a.rfind(flag, 0) != 0) return false;
  const std::string v = a.substr(flag.size());
  if (v == "on" || v == "off") value = v == "on";
  else error = usage_error("bad " + flag.substr(0, flag.size() - 1) + " `" + v + "`; expected on or off");
  return true;
}

}  // namespace

int usage_error(const std::string& msg) {
  std::cerr << "dccc: error: " << msg << "\n" << "run `dccc --help` for usage\n";
  return kExitUsage;
}

int parse_args(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return -1;
    } else if (a == "--version") {
      std::cout << "dccc " << DCCC_VERSION << "\n";
      return -1;
    } else if (a.rfind("--attention-tiles=", 0) == 0) {
      std::string v = a.substr(18);
      int t[4];
      char tail = 0;
      if (std::sscanf(v.c_str(), "%d,%d,%d,%d%c", &t[0], &t[1], &t[2], &t[3], &tail) != 4 || t[0] < 1 || t[0] > 2 ||
          t[1] < 1 || t[1] > 8 || t[2] < 16 || t[2] > 128 || t[2] % 16 != 0 || t[3] < 1 || t[3] > 4 ||
          t[1] * t[3] > dccc::gpu::kAttentionMaxWarpsPerSm)
        return usage_error("bad --attention-tiles `" + v +
                           "`; expected M,W,N,B: m16 tiles a warp (1 or 2), warps a block (1-8), keys a tile "
                           "(16-128, a multiple of 16), blocks an SM (1-4), W x B at most 16 (registers for 128 "
                           "a thread)");
      o.cuda.attention.m_tiles = t[0];
      o.cuda.attention.warps = t[1];
      o.cuda.attention.key_tile = t[2];
      o.cuda.attention.min_blocks = t[3];
    } else if (a.rfind("--attention-stages=", 0) == 0) {
      std::string v = a.substr(19);
      int n = 0;
      char tail = 0;
      if (std::sscanf(v.c_str(), "%d%c", &n, &tail) != 1 || n < 1 || n > 4)
        return usage_error("bad --attention-stages `" + v + "`; expected 1, 2, 3 or 4 (K's and V's shared-memory stages)");
      o.cuda.attention.stages = n;
    } else if (a.rfind("--gemm-stages=", 0) == 0) {
      std::string v = a.substr(14);
      int n = 0;
      char tail = 0;
      if (std::sscanf(v.c_str(), "%d%c", &n, &tail) != 1 || (n != 0 && (n < 2 || n > 4)))
        return usage_error("bad --gemm-stages `" + v + "`; expected 2-4 (the wgmma form's shared-memory stages) or 0 (none)");
      o.cuda.gemm_stages = n;
    } else if (a.rfind("--attention-split=", 0) == 0) {
      std::string v = a.substr(18);
      int t[3];
      char tail = 0;
      if (std::sscanf(v.c_str(), "%d,%d,%d%c", &t[0], &t[1], &t[2], &tail) != 3 || (t[0] != 32 && t[0] != 64 && t[0] != 128) ||
          t[1] < 2 || t[1] > 8 || t[2] < 16 || t[2] > 64 || t[2] % 16 != 0)
        return usage_error("bad --attention-split `" + v +
                           "`; expected C,W,N: columns a warp (32, 64 or 128), warps (2-8), keys a tile (16-64, a "
                           "multiple of 16)");
      o.cuda.attention.split_cols = t[0];
      o.cuda.attention.split_warps = t[1];
      o.cuda.attention.split_keys = t[2];
    } else if (a.rfind("--attention-grid=", 0) == 0) {
      std::string v = a.substr(17);
      if (v == "tiles") o.cuda.attention.grid = dccc::gpu::AttnGrid::Tiles;
      else if (v == "static") o.cuda.attention.grid = dccc::gpu::AttnGrid::Static;
      else if (v == "atomic") o.cuda.attention.grid = dccc::gpu::AttnGrid::Atomic;
      else return usage_error("bad --attention-grid `" + v + "`; expected tiles, static or atomic");
    } else if (a.rfind("--attention-order=", 0) == 0) {
      std::string v = a.substr(18);
      if (v == "auto") o.cuda.attention.order = dccc::gpu::AttnOrder::Auto;
      else if (v == "keys") o.cuda.attention.order = dccc::gpu::AttnOrder::Keys;
      else if (v == "sequences") o.cuda.attention.order = dccc::gpu::AttnOrder::Sequences;
      else if (v == "tiles") o.cuda.attention.order = dccc::gpu::AttnOrder::Tiles;
      else return usage_error("bad --attention-order `" + v + "`; expected auto, keys, sequences or tiles");
    } else if (a.rfind("--attention-q=", 0) == 0) {
      std::string v = a.substr(14);
      if (v == "auto") o.cuda.attention.q = dccc::gpu::AttnQ::Auto;
      else if (v == "registers") o.cuda.attention.q = dccc::gpu::AttnQ::Registers;
      else if (v == "smem") o.cuda.attention.q = dccc::gpu::AttnQ::Smem;
      else return usage_error("bad --attention-q `" + v + "`; expected auto, registers or smem");
    } else if (int err = 0; on_off(a, "--attention-unmasked=", o.cuda.attention.unmasked, err) ||
                            on_off(a, "--attention-staged-stores=", o.cuda.attention.staged_stores, err)) {
      if (err) return err;
    } else if (a.rfind("--attention-f32-wgmma=", 0) == 0) {
      std::string v = a.substr(22);
      if (v != "on" && v != "off" && v != "all") return usage_error("bad --attention-f32-wgmma `" + v + "`; expected on, off or all");
      o.cuda.attention.f32_wgmma = v != "off";
    } else if (a == "--check") {
      o.emit.clear();
    } else if (a.rfind("--docs-name=", 0) == 0) {
      o.docs_name = a.substr(12);
    } else if (a.rfind("--emit=", 0) == 0) {
      o.emit = a.substr(7);
      if (o.emit != "ast" && o.emit != "typed" && o.emit != "vloop" && o.emit != "cuda" && o.emit != "kernel" &&
          o.emit != "llvm" && o.emit != "metadata" && o.emit != "docs")
        return usage_error("unknown --emit stage `" + o.emit +
                           "`; expected ast, typed, vloop, kernel, cuda, llvm, metadata or docs");
    } else if (a == "--fast-math") {
      o.cuda.fast_math = true;
    } else if (a.rfind("--fp32-math=", 0) == 0) {
      std::string m = a.substr(12);
      if (m == "3xtf32") o.cuda.fp32 = dccc::gpu::Fp32Math::Split3xTf32;
      else if (m == "tf32") o.cuda.fp32 = dccc::gpu::Fp32Math::Tf32;
      else if (m == "ieee") o.cuda.fp32 = dccc::gpu::Fp32Math::Ieee;
      else return usage_error("unknown --fp32-math `" + m + "`; expected 3xtf32, tf32 or ieee");
    } else if (a.rfind("--target=", 0) == 0) {
      auto t = dccc::ir::parse_target(a.substr(9));
      if (!t) return usage_error("unknown --target `" + a.substr(9) + "`; expected cpu or cuda");
      o.target = *t;
    } else if (a == "--list-passes") {
      o.list_passes = true;
    } else if (a == "--print-after-all") {
      o.print_after_all = true;
    } else if (a.rfind("--print-after=", 0) == 0) {
      o.print_after.push_back(a.substr(14));
    } else if (a.rfind("--passes=", 0) == 0) {
      std::vector<std::string> names;
      std::stringstream list(a.substr(9));
      for (std::string n; std::getline(list, n, ',');)
        if (!n.empty()) names.push_back(n);
      o.passes = names;
    } else if (a.rfind("--cpu=", 0) == 0) {
      o.cpu = a.substr(6);
      if (!dccc::backend::valid_cpu(o.cpu))
        return usage_error("unknown --cpu `" + o.cpu + "`; expected native, x86-64-v2, x86-64-v3, x86-64-v4 or an LLVM "
                           "CPU name of this architecture (`llc -mcpu=help` lists them)");
    } else if (a.rfind("--cuda-arch=", 0) == 0) {
      o.cuda_archs.clear();
      std::stringstream list(a.substr(12));
      for (std::string n; std::getline(list, n, ',');) {
        if (!dccc::tools::valid_cuda_arch(n))
          return usage_error("bad --cuda-arch `" + n + "`; expected a list such as sm_80,sm_90 (sm_80 or newer: the "
                             "tensor-core kernels use cp.async and bf16 mma.sync)");
        o.cuda_archs.push_back(n);
      }
      if (o.cuda_archs.empty()) return usage_error("--cuda-arch needs at least one architecture, such as sm_90");
    } else if (a.size() == 3 && a.rfind("-O", 0) == 0 && a[2] >= '0' && a[2] <= '3') {
      o.opt_level = a[2] - '0';
    } else if (a == "-g") {
      o.debug = true;
    } else if (a == "-lineinfo") {
      o.lineinfo = true;
    } else if (a == "-MD") {
      o.depfile = true;
    } else if (a == "-MF") {
      if (i + 1 >= argc) return usage_error("-MF needs a file name");
      o.depfile_path = argv[++i];
    } else if (a.rfind("--color=", 0) == 0) {
      std::string when = a.substr(8);
      if (when != "auto" && when != "always" && when != "never")
        return usage_error("--color takes auto, always or never");
      auto style = dccc::diagnostic_style();
      style.color = when == "always" || (when == "auto" && dccc::color_auto(2));
      dccc::set_diagnostic_style(style);
    } else if (a.rfind("--diagnostics-format=", 0) == 0) {
      std::string f = a.substr(21);
      auto style = dccc::diagnostic_style();
      if (f == "text") style.format = dccc::DiagnosticFormat::Text;
      else if (f == "json") style.format = dccc::DiagnosticFormat::Json;
      else if (f == "sarif") style.format = dccc::DiagnosticFormat::Sarif;
      else return usage_error("--diagnostics-format takes text, json or sarif");
      dccc::set_diagnostic_style(style);
    } else if (a == "--runtime=static" || a == "--runtime=shared") {
      o.shared_runtime = a == "--runtime=shared";
    } else if (a.rfind("--runtime=", 0) == 0) {
      return usage_error("--runtime takes static or shared");
    } else if (a == "--print-runtime") {
      o.print_runtime = true;
    } else if (a == "--verify-each") {
      o.verify_each = true;
    } else if (a == "--interpret") {
      o.interpret = true;
    } else if (a == "--jit") {
      o.jit = true;
    } else if (a == "--no-storage-lowering") {
      o.storage = false;
      o.interpret = true;
    } else if (a == "-o") {
      if (i + 1 >= argc) return usage_error("-o needs a file name");
      o.output = argv[++i];
    } else if (a == "--summary") {
      o.summary = true;
    } else if (a.rfind("--schedule=", 0) == 0) {
      o.schedules.push_back(a.substr(11));
    } else if (a == "--explain") {
      o.explain = true;
    } else if (a == "--no-simplify") {
      o.simplify = false;
    } else if (a == "--online-reductions") {
      o.online_reductions = true;
    } else if (a == "--materialize" || a == "--no-online-reductions") {
      o.materialize = true;
    } else if (a.rfind("--online-block=", 0) == 0) {
      try {
        o.online_block = std::stoll(a.substr(15));
      } catch (...) {
        o.online_block = -1;
      }
      if (o.online_block < 1 || o.online_block > 1024)
        return usage_error("--online-block needs a number of keys from 1 to 1024");
    } else if (a == "--explain-simplify") {
      o.explain_simplify = true;
    } else if (a == "--no-default-schedule" || a == "--default-pad=0") {
      o.default_pad = 0;
      o.default_pad_given = true;
    } else if (a.rfind("--default-pad=", 0) == 0) {
      try {
        size_t used = 0;
        std::string v = a.substr(14);
        long long k = std::stoll(v, &used);
        if (used != v.size() || k < 0 || k > 1024) throw std::invalid_argument("range");
        o.default_pad = k;
        o.default_pad_given = true;
      } catch (...) {
        return usage_error("--default-pad takes an integer from 0 to 1024");
      }
    } else if (a.rfind("--max-errors=", 0) == 0) {
      try {
        o.max_errors = std::stoi(a.substr(13));
      } catch (...) {
        return usage_error("--max-errors takes a number");
      }
    } else if (a == "-I") {
      if (i + 1 >= argc) return usage_error("-I takes a directory");
      o.imports.include_dirs.push_back(argv[++i]);
    } else if (a.rfind("-I", 0) == 0) {
      o.imports.include_dirs.push_back(a.substr(2));
    } else if (a.rfind("-D", 0) == 0) {
      std::string def = a.substr(2);
      size_t eq = def.find('=');
      if (eq == std::string::npos || eq == 0) return usage_error("-D takes NAME=VALUE");
      try {
        size_t used = 0;
        long long v = std::stoll(def.substr(eq + 1), &used);
        if (used != def.size() - eq - 1) throw std::invalid_argument("trailing");
        o.check.defines[def.substr(0, eq)] = v;
      } catch (...) {
        return usage_error("-D" + def + ": VALUE must be an integer");
      }
    } else if (a == "run" && i == 1) {
      o.run = true;
    } else if (!a.empty() && a[0] == '-') {
      return usage_error("unknown option `" + a + "`");
    } else if (o.file.empty()) {
      o.file = a;
    } else {
      return usage_error("more than one input file");
    }
  }
  {
    dccc::ir::PipelineOptions check_names;
    check_names.passes = o.passes;
    check_names.print_after = o.print_after;
    if (auto bad = dccc::ir::unknown_pass_name(check_names))
      return usage_error("unknown pass `" + *bad + "`; `dccc --list-passes` lists them");
  }
  if (o.list_passes || o.print_runtime) return kExitOk;
  if (o.file.empty()) return usage_error("no input file");
  if ((o.depfile || !o.depfile_path.empty()) && o.output.empty()) return usage_error("-MD and -MF need -o");
  if (!o.depfile_path.empty()) o.depfile = true;
  o.from_vloop = std::filesystem::path(o.file).extension() == ".vloop";
  if (o.jit && (!o.run || !o.from_vloop)) return usage_error("--jit applies to `dccc run FILE.vloop`");
  if (o.jit && o.interpret) return usage_error("--jit contradicts --interpret and --no-storage-lowering");
  if (o.from_vloop) {
    if (o.emit == "ast" || o.emit == "typed" || o.summary)
      return usage_error("--emit=ast, --emit=typed and --summary need a .toy program, not IR text");
    if (!o.output.empty()) return usage_error("-o needs a .toy program: IR text has not been checked");
    if (!o.check.defines.empty()) return usage_error("-D applies to .toy programs, not IR text");
    if (!o.imports.include_dirs.empty()) return usage_error("-I applies to .toy programs, not IR text");
    if (!o.schedules.empty() || o.explain)
      return usage_error("--schedule and --explain need a .toy program: IR text names no assignments");
    if (!o.jit) o.interpret = true;
  }
  return kExitOk;
}

}  // namespace dccc::tools
