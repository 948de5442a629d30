// Valid, distinct C names for what the host sees (assign_c_names,
// backend/abi/c_abi.h).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "backend/abi/c_abi.h"
#include "backend/abi/c_emit.h"
#include "backend/abi/c_signatures.h"

namespace dccc::backend {

using cabi::struct_name;
using ir::Param;

namespace {

/// The C member names of one struct: each name valid (api_name) and apart
/// from every other member, `_len` members of fields included.
void member_names(Param& p) {
  std::set<std::string> taken;
  for (auto& [field, buf] : p.fields) {
    std::string n = api_name(field);
    while (taken.count(n) || taken.count(n + "_len")) n += '_';
    taken.insert(n);
    taken.insert(n + "_len");
    field = n;
  }
  if (p.kind == Param::List) taken.insert({"data", "len"});
  for (auto& [size, e] : p.sizes) size = api_name(size, taken), taken.insert(size);
}

}  // namespace

void assign_c_names(ir::Module& m, const DeviceAbi* device) {
  struct Owner {
    std::string what;
    SourceRange at;
  };
  std::map<std::string, Owner> globals;
  std::set<std::string> types;  // the coupling types' C names
  for (auto& f : m.funcs)
    for (auto* ps : {&f.params, &f.results})
      for (auto& p : *ps)
        if (p.kind == Param::Coupling && p.type_name != "coupling") types.insert(p.type_name = api_name(p.type_name));
  auto claim = [&](const std::string& name, const std::string& what, SourceRange at) {
    auto [it, fresh] = globals.emplace(name, Owner{what, at});
    if (!fresh && it->second.what != what)
      throw BackendUnsupported(at, fmt::format("the C name `{}` for both {} and {} (rename one)", name, it->second.what, what));
  };
  for (auto& f : m.funcs) {
    if (f.name == "main") continue;
    const std::string source = f.name;
    f.name = api_name(f.name);
    const std::string fn = "`" + source + "`";
    claim(f.name, "the function " + fn, f.at);
    claim(f.name + "_meta", "the size query of " + fn, f.at);
    claim(f.name + "_prelude", "the prelude function of " + fn, f.at);
    claim(f.name + "_with_prelude", "the held-prelude function of " + fn, f.at);
    if (device) claim(f.name + "_on_stream", "the stream function of " + fn, f.at);
    claim(f.name + "__prepare", "the argument checks of " + fn, f.at);
    claim(f.name + (device ? device->launcher : "__kernel"), "the kernel of " + fn, f.at);
    if (device)
      for (const auto& [suffix, what] : device->function_names) claim(f.name + suffix, what + fn, f.at);
    // Not the other parameters of the C functions, nor a type a later
    // parameter's declaration names.
    std::set<std::string> params = types;
    params.insert({"result", "prelude"});
    for (auto& p : f.params) {
      p.name = api_name(p.name, params);
      params.insert(p.name);
    }
    for (auto* ps : {&f.params, &f.results})
      for (auto& p : *ps) {
        if (p.kind == Param::Scalar) continue;
        if (p.kind == Param::Coupling && p.type_name != "coupling") {
          claim(p.type_name, "the coupling type `" + p.type_name + "`", p.at);
        } else {
          claim(struct_name(f, p), "the struct of " + fn + "'s `" + p.name + "`", p.at);
        }
        member_names(p);
      }
  }
  // The device target's kernels: `f__k0`, `f__k1`, ... (DeviceAbi::kernels).
  if (device)
    for (const auto& f : m.funcs) {
      const std::string prefix = f.name + device->kernels;
      for (const auto& [name, owner] : globals)
        if (name.rfind(prefix, 0) == 0 && name.size() > prefix.size() &&
            std::all_of(name.begin() + static_cast<long>(prefix.size()), name.end(),
                        [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
          throw BackendUnsupported(owner.at, fmt::format("the C name `{}` for both {} and a kernel of `{}` (rename one)",
                                                         name, owner.what, f.name));
    }
}

}  // namespace dccc::backend
