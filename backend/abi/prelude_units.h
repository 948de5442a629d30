// The prelude of a function split into the units that libdccrt's prelude
// cache keeps as entries, each with a canonical C definition whose hash is
// the entry's kind: units alike in any function of any library share one
// entry. Used by the wrapper's FN__prepare (backend/abi/prepare.h) and by a
// device target's code for the units' device copies (on CUDA
// emit_cuda_prelude, backend/cuda/cuda_abi.h, which computes units on the
// GPU).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace dccc::backend::cabi {

/// One piece of the prelude that the cache keeps as one entry: the prelude
/// statements that fill some aux arrays (statements touching a common aux
/// array are one unit, so a unit never reads another's arrays), with what
/// they read. `definition` is the unit as C with canonical names -- sizes
/// S0.., inputs L0.. (by first use), aux arrays P0.., loop variables v0.. --
/// and the element types and the aux sizes: units of any function (of any
/// library) with equal definitions compute equal bytes from equal sizes and
/// input contents, so `kind`, its hash, lets them share one entry.
struct PreludeUnit {
  std::vector<ir::Stmt> stmts;
  std::vector<ir::Buffer> aux;       // filled here, in Func::buffers order
  std::vector<ir::Buffer> inputs;    // read here (or by the aux sizes), by first use
  std::vector<std::string> sizes;    // read here (or by the aux sizes), by first use
  std::string definition;            // canonical C: declarations and body
  uint64_t kind = 0;
};

/// The prelude's units, or an empty vector when the prelude cannot be cached
/// (it touches buffers other than aux arrays and inputs, reads an aux array
/// no unit fills, or has no aux array).
std::vector<PreludeUnit> prelude_units(const ir::Func& f);

}  // namespace dccc::backend::cabi
