// The CUDA backend's source made a plain C++ shared library that runs on
// the CPU through cuda_emu.h (cuda_emu_test.cpp, mma_emu_test.cpp).
#pragma once

#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "tests/unit/backend/cuda_scheduled.h"
#include "tests/unit/test_paths.h"

namespace dccc::backend::testing {

/// The emitted source made plain C++: cuda_emu.h for the CUDA headers,
/// dcc_emu_launch(K, grid, block, args) for K<<<grid, block>>>(args).
inline std::string emulated(const std::string& cu) {
  std::string s = std::regex_replace(cu, std::regex("#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n"),
                                     "#include \"tests/unit/backend/cuda_emu.h\"\n");
  std::string out;
  size_t at = 0;
  for (size_t open; (open = s.find("<<<", at)) != std::string::npos;) {
    size_t name = open;
    while (name > 0 && (std::isalnum(static_cast<unsigned char>(s[name - 1])) || s[name - 1] == '_')) --name;
    size_t close = s.find(">>>(", open);
    size_t end = s.find(')', close);
    std::string config = s.substr(open + 3, close - open - 3);
    // grid, block[, dynamic shared memory bytes: the emulated kernels use static arrays]
    int depth = 0;
    std::vector<size_t> commas;
    for (size_t k = 0; k < config.size(); ++k) {
      if (config[k] == '(') ++depth;
      if (config[k] == ')') --depth;
      if (config[k] == ',' && depth == 0) commas.push_back(k);
    }
    size_t comma = commas.empty() ? std::string::npos : commas[0];
    if (commas.size() > 1) config = config.substr(0, commas[1]);
    // A kernel with no barrier and no shuffle runs its threads one after
    // another in one host thread (much faster than a thread each).
    std::string kernel = s.substr(name, open - name);
    size_t def = s.find(" " + kernel + "(" + kernel.substr(0, kernel.find("__")) + "__args a) {");
    size_t def_end = s.find("\n}\n", def);
    std::string body = def == std::string::npos ? "__syncthreads" : s.substr(def, def_end - def);
    bool serial = body.find("__syncthreads") == std::string::npos && body.find("__shfl") == std::string::npos &&
                  body.find("__syncwarp") == std::string::npos;
    out += s.substr(at, name - at);
    out += "dcc_emu_launch(" + kernel + ", dim3(" + config.substr(0, comma) + "), dim3(" + config.substr(comma + 1) +
           "), " + s.substr(close + 4, end - close - 4) + (serial ? ", true)" : ", false)");
    at = end + 1;
  }
  return out + s.substr(at);
}

/// Links `dir`/dccc_src to the checkout and `dir`/dccc_rt to the runtime's
/// headers, for compiles with relative paths only (emulated_compile).
inline void link_checkout(const std::filesystem::path& dir) {
  for (const auto& [name, target] : {std::pair<std::string, std::string>{"dccc_src", test_paths::source_dir()},
                                     std::pair<std::string, std::string>{"dccc_rt", test_paths::runtime_include()}}) {
    std::error_code ec;
    if (!std::filesystem::is_symlink(dir / name, ec)) std::filesystem::create_directory_symlink(target, dir / name, ec);
  }
}

/// build_emulated's `opt` where compiling dominates (tests building many
/// programs that run briefly: unit/attention_emu and unit/cuda_emu, about a
/// fifth faster than -O1).
inline constexpr const char* kEmuCompileBound = "-O0";

/// The command that compiles `dir`/`file`, an emulated program (C++ over
/// cuda_emu.h), into `dir`/`object` at `opt`. Through ccache where the tests
/// use it (test_paths::ccache()), compiled in `dir` with relative paths only
/// (links to the checkout and the runtime's headers), so the same program is
/// a cache hit in any checkout and scratch folder (tests/CMakeLists.txt),
/// without the precompiled headers, whose bytes differ between builds; else
/// with them (dcc_emu_pch.h) where built for `opt`.
inline std::string emulated_compile(const std::filesystem::path& dir, const std::string& file, const std::string& object,
                                    const std::string& opt) {
  const std::string cxx = test_paths::cxx(), flags = " " + opt + " -std=c++20 -fPIC -w -pthread";
  if (const std::string ccache = test_paths::ccache(); !ccache.empty()) {
    link_checkout(dir);
    return "cd " + dir.string() + " && CCACHE_NOHASHDIR=1 " + ccache + " " + cxx + flags + " -Idccc_src -Idccc_rt -c " + file +
           " -o " + object + " 2>&1";
  }
  std::string pch;
  if (const std::string pch_dir = test_paths::emu_pch_dir(); !pch_dir.empty() && (opt == "-O0" || opt == "-O1")) {
    const std::string header = pch_dir + "/" + opt.substr(1) + "/dcc_emu_pch.h";
    if (std::filesystem::exists(header)) pch = " -include " + header;
  }
  return cxx + flags + pch + " -I" + test_paths::source_dir() + " -I" + test_paths::runtime_include() + " -c " +
         (dir / file).string() + " -o " + (dir / object).string() + " 2>&1";
}

/// `opt`: the host compiler's optimization level. -O1 (the default) where
/// the emulated kernels run long (the GEMMs at K = 4,096: 52 s at -O1, 92 s
/// at -O0 for unit/mma_emu); kEmuCompileBound where compiling dominates.
inline void* build_emulated(const std::string& source, const std::filesystem::path& dir, const std::string& stem, std::string& log,
                            const char* opt = "-O1") {
  const std::filesystem::path so = dir / (stem + ".so");
  std::ofstream(dir / (stem + ".cpp")) << source;
  const std::string cmd = emulated_compile(dir, stem + ".cpp", stem + ".o", opt) + " && " + test_paths::cxx() +
                          " -shared -pthread -o " + so.string() + " " + (dir / (stem + ".o")).string() + " " +
                          test_paths::runtime_lib() + " -lpthread 2>&1";
  return build_and_open(cmd, so, log);
}

}  // namespace dccc::backend::testing
