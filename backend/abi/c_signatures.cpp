// The C declarations of a library's functions and argument structs
// (backend/abi/c_signatures.h).
#include "backend/abi/c_signatures.h"

#include <fmt/format.h>

#include <functional>

#include "backend/abi/c_emit.h"

namespace dccc::backend::cabi {

using ir::BufferKind;
using ir::BufferNode;
using ir::ExprKind;
using ir::Param;

std::string struct_name(const ir::Func& f, const Param& p) {
  if (p.kind == Param::Coupling && p.type_name != "coupling") return p.type_name;
  return f.name + "_" + p.name + "_t";
}

std::string dims_text(const BufferNode& b, bool strip) {
  // [b: B, d1: q.seqlen[b], ...] as the IR prints extents, for comments.
  std::string out = "[";
  for (size_t i = 0; i < b.dims.size(); ++i) {
    std::function<std::string(const ir::Expr&)> ex = [&](const ir::Expr& e) -> std::string {
      switch (e->kind) {
        case ExprKind::IntImm: return std::to_string(e->int_value);
        case ExprKind::SizeRef: return e->name;
        case ExprKind::VarRef: return e->var->name;
        case ExprKind::Cast: return ex(e->args[0]);
        case ExprKind::Load: {
          // A coupling field reads its sibling: `seqlen[b]`, not `q.seqlen[b]`.
          std::string n = e->buffer->name;
          std::string r = (strip ? n.substr(n.rfind('.') + 1) : n) + "[";
          for (size_t k = 0; k < e->args.size(); ++k) r += (k ? ", " : "") + ex(e->args[k]);
          return r + "]";
        }
        case ExprKind::Binary: return "(" + ex(e->args[0]) + " " + ir::op_text(e->binop) + " " + ex(e->args[1]) + ")";
        default: return "?";
      }
    };
    out += (i ? ", " : "") + ex(b.dims[i].extent);
  }
  return out + "]" + scalar_name(b.type);
}

/// Emits the struct for an argument or result type, once per name.
void emit_struct(const ir::Func& f, const Param& p, std::set<std::string>& done, std::string& out) {
  if (p.kind == Param::Scalar) return;
  std::string name = struct_name(f, p);
  if (!done.insert(name).second) return;
  if (p.kind == Param::List) {
    const BufferNode& data = *p.fields[0].second;
    std::string row = "len[b]";
    for (size_t k = 2; k < data.dims.size(); ++k) {
      row += " * " + (data.dims[k].extent->kind == ExprKind::SizeRef ? data.dims[k].extent->name
                                                                     : std::to_string(data.dims[k].extent->int_value));
    }
    out += fmt::format("/* list {} of {}: count tensors, tensor b holding {} {} elements, row-major */\n", p.name, f.name,
                       row, c_type(data.type));
    out += fmt::format("typedef struct {} {{\n", name);
    out += fmt::format("  const {}* const* data;  /* data[b]: tensor b; may be NULL when it has no elements */\n", c_type(data.type));
    out += "  const int32_t* len;  /* count elements: the first extent of each tensor */\n";
    for (const auto& [size, e] : p.sizes) out += fmt::format("  int64_t {};\n", ident(size));
    out += fmt::format("}} {};\n\n", name);
    return;
  }
  out += p.kind == Param::Coupling ? fmt::format("/* coupling {} */\n", p.type_name)
                                   : fmt::format("/* tensor {} of {}: {} */\n", p.name, f.name, dims_text(*p.fields[0].second));
  out += fmt::format("typedef struct {} {{\n", name);
  for (const auto& [field, buf] : p.fields) {
    out += fmt::format("  {}* {};  /* {} */\n", c_type(buf->type), ident(field), dims_text(*buf, p.kind == Param::Coupling));
    out += fmt::format("  int64_t {}_len;  /* elements in {} */\n", ident(field), ident(field));
  }
  for (const auto& [size, e] : p.sizes) out += fmt::format("  int64_t {};\n", ident(size));
  out += fmt::format("}} {};\n\n", name);
}

/// A parameter's C name: in the header its name (assign_c_names made it a
/// valid one), in the wrapper's definitions CNames::arg.
std::string param_name(const Param& p, bool def) { return def ? CNames::arg(p.name) : ident(p.name); }

std::string signature(const ir::Func& f, const std::string& name, bool def) {
  std::string out = "dcc_status " + name + "(";
  bool first = true;
  for (const auto& p : f.params) {
    out += first ? "" : ", ";
    first = false;
    if (p.kind == Param::Scalar) out += fmt::format("{} {}", c_type(p.fields[0].second->type), param_name(p, def));
    else out += fmt::format("const {}* {}", struct_name(f, p), param_name(p, def));
  }
  for (const auto& r : f.results) {
    out += first ? "" : ", ";
    first = false;
    if (r.kind == Param::Scalar) out += fmt::format("{}* result", c_type(r.fields[0].second->type));
    else out += fmt::format("{}* result", struct_name(f, r));
  }
  if (first) out += "void";
  return out + ")";
}

/// The parameters of `f` as C, with or without the result pointer.
std::string param_list(const ir::Func& f, bool with_result, bool def) {
  std::string out;
  for (const auto& p : f.params) {
    out += out.empty() ? "" : ", ";
    if (p.kind == Param::Scalar) out += fmt::format("{} {}", c_type(p.fields[0].second->type), param_name(p, def));
    else out += fmt::format("const {}* {}", struct_name(f, p), param_name(p, def));
  }
  if (with_result)
    for (const auto& r : f.results) {
      out += out.empty() ? "" : ", ";
      if (r.kind == Param::Scalar) out += fmt::format("{}* result", c_type(r.fields[0].second->type));
      else out += fmt::format("{}* result", struct_name(f, r));
    }
  return out;
}

/// `dcc_status f_prelude(args..., dcc_prelude** prelude)`.
std::string prelude_signature(const ir::Func& f, bool def) {
  std::string params = param_list(f, false, def);
  return "dcc_status " + f.name + "_prelude(" + params + (params.empty() ? "" : ", ") + "dcc_prelude** prelude)";
}

/// `dcc_status f_with_prelude(const dcc_prelude* prelude, args..., result)`.
std::string with_prelude_signature(const ir::Func& f, bool def) {
  std::string params = param_list(f, true, def);
  return "dcc_status " + f.name + "_with_prelude(const dcc_prelude* prelude" + (params.empty() ? "" : ", ") + params + ")";
}

std::string on_stream_signature(const ir::Func& f, const std::string& stream_param, bool def) {
  std::string params = param_list(f, true, def);
  return "dcc_status " + f.name + "_on_stream(const dcc_prelude* prelude, " + params + (params.empty() ? "" : ", ") +
         stream_param + ")";
}

}  // namespace dccc::backend::cabi
