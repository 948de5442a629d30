// The state of one FN__prepare being written (backend/abi/prepare.h), shared
// by its phases: prepare.cpp writes the argument checks and the call,
// prepare_prelude.cpp the prelude. Internal to backend/abi.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backend/abi/c_emit.h"
#include "backend/abi/prelude_units.h"
#include "backend/abi/prepare.h"
#include "backend/abi/wrapper_text.h"

namespace dccc::backend::cabi {

using ir::BinOp;
using ir::Buffer;
using ir::BufferKind;
using ir::BufferNode;
using ir::ExprKind;
using ir::Param;
using ir::StmtKind;

/// The phases run in the order emit_prepare calls them; each appends to `out`.
struct Prepare {
  Prepare(const ir::Func& f, const DeviceAbi* device, std::string& out, std::string& prelude_callbacks,
          std::set<uint64_t>& emitted_units);

  // prepare.cpp
  void arguments();
  void sizes();
  void list_arguments();
  void inputs();
  void check_input(const Buffer& b);
  void where_checks();
  void result();
  void call();
  void on_stream_lengths();
  // prepare_prelude.cpp
  void prelude_plan();
  void size_aux(const Buffer& b, const std::string& indent, bool declare);
  void cached_unit(const PreludeUnit& u, size_t upin);
  void alloc_aux(const Buffer& b);
  /// Whether the device target computes unit u's device copy itself (DeviceAbi::unit_on_device).
  bool on_device(const PreludeUnit& u) const;
  void computed_prelude();

  const ir::Func& f;
  const DeviceAbi* const device;  // nullptr: the CPU target
  std::string& out;
  std::string& prelude_callbacks;
  std::set<uint64_t>& emitted_units;
  const CNames names;
  CEmitter c;
  const std::string fn;
  size_t pins_at = 0;  // where the cache entries' pins are declared, once counted
  std::map<const BufferNode*, std::pair<std::string, std::string>> where;  // buffer -> (param, field)
  std::vector<std::string> staged;  // device target: host copies of integer input arrays
  std::set<const BufferNode*> lengths;  // length_buffers(f)
  /// The pointers the kernel gets (device pointers on a device target),
  /// before `c.buffers` is pointed at host copies.
  std::map<const BufferNode*, std::string> kernel_ptrs;
  std::vector<Buffer> later;  // inputs checked after the prelude (their totals read aux arrays)
  std::vector<Buffer> all_aux, aux;  // aux: those the prelude fills
  std::vector<PreludeUnit> units;
  bool cached = false;  // the prelude's units come from the cache or the held prelude
  size_t npins = 0;
  std::set<const BufferNode*> host_arrays;  // on_stream_host_arrays(f)
  size_t length_pin0 = 0;  // the pins of f_on_stream's length copies start here
  bool nested_lengths = false;  // length arrays shaped by other lengths (checked inside the prelude)
  std::vector<Buffer> owned;  // aux arrays the wrapper allocates and frees
};

}  // namespace dccc::backend::cabi
