// The machine-readable description of a generated library (docs/abi.md,
// "Metadata"): a versioned JSON document that `dccc -o` compiles into the
// library as `const char* dccc_module_info(void)` and that
// `dccc --emit=metadata` prints. Hosts that bind the library at run time
// (python/dccc, docs/python.md) build the C structs and check their
// arguments' shapes from it instead of parsing the header.
#pragma once

#include <string>

#include "ir/ir.h"
#include "ir/pipeline.h"

namespace dccc::backend {

/// The format version of emit_metadata's document; raised when a field
/// changes meaning or goes away (new fields do not raise it).
inline constexpr int kMetadataVersion = 1;

/// What the document says about where the library came from.
struct MetadataContext {
  std::string source;          // the .toy file's name
  std::string compiler;        // "dccc 0.1.0"
  ir::Target target = ir::Target::Cpu;
  std::string arch;            // the CPU the kernels were compiled for, or the CUDA architectures
};

/// The JSON description of the library's functions (every function of `m`
/// but `main`), after assign_c_names: every name in it is the C name the
/// header uses.
std::string emit_metadata(const ir::Module& m, const MetadataContext& ctx);

/// C source defining `const char* dccc_module_info(void)`, returning `json`.
std::string emit_metadata_symbol(const std::string& json);

}  // namespace dccc::backend
