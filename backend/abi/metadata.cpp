#include "backend/abi/metadata.h"

#include <fmt/format.h>

#include <functional>
#include <map>
#include <set>

#include "backend/abi/c_emit.h"

namespace dccc::backend {
namespace {

using ir::BufferNode;
using ir::ExprKind;
using ir::Param;

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += static_cast<char>(c);
    else if (c == '\n') out += "\\n";
    else if (c < 0x20) out += fmt::format("\\u{:04x}", c);
    else out += static_cast<char>(c);
  }
  return out + "\"";
}

std::string json_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t k = 0; k < items.size(); ++k) out += (k ? ", " : "") + items[k];
  return out + "]";
}

const char* kind_name(Param::Kind k) {
  switch (k) {
    case Param::Coupling: return "coupling";
    case Param::Tensor: return "tensor";
    case Param::Scalar: return "scalar";
    case Param::List: return "list";
  }
  return "?";
}

std::string struct_name(const ir::Func& f, const Param& p) {
  if (p.kind == Param::Scalar) return "";
  if (p.kind == Param::Coupling && p.type_name != "coupling") return p.type_name;
  return f.name + "_" + p.name + "_t";
}

/// Where each input buffer of `f` lives: parameter and field.
using Owners = std::map<const BufferNode*, std::pair<std::string, std::string>>;

/// An extent as text: sizes and constants as they are, a length array read
/// by its field name when it belongs to `param` (`seqlen[b]`), else with its
/// parameter (`q.seqlen[b]`), loop variables by the dimension's name.
std::string extent_text(const ir::Expr& e, const std::string& param, const Owners& owners) {
  switch (e->kind) {
    case ExprKind::IntImm: return std::to_string(e->int_value);
    case ExprKind::SizeRef: return e->name;
    case ExprKind::VarRef: return e->var->name;
    case ExprKind::Cast: return extent_text(e->args[0], param, owners);
    case ExprKind::Load: {
      std::string name = e->buffer->name;
      if (auto it = owners.find(e->buffer.get()); it != owners.end())
        name = it->second.first == param ? it->second.second : it->second.first + "." + it->second.second;
      std::string r = name + "[";
      for (size_t k = 0; k < e->args.size(); ++k) r += (k ? ", " : "") + extent_text(e->args[k], param, owners);
      return r + "]";
    }
    case ExprKind::Binary:
      return "(" + extent_text(e->args[0], param, owners) + " " + ir::op_text(e->binop) + " " +
             extent_text(e->args[1], param, owners) + ")";
    default: return "?";
  }
}

/// The buffers an extent reads.
void extent_loads(const ir::Expr& e, std::set<const BufferNode*>& out) {
  if (!e) return;
  if (e->kind == ExprKind::Load) out.insert(e->buffer.get());
  for (const auto& a : e->args) extent_loads(a, out);
}

/// The shape of the array that holds a field in the packed layout: the
/// dimensions up to the last one whose extent is not a size or a constant
/// become one leading dimension, `"*"` (its element count follows from the
/// lengths); the dimensions after it are sizes (their names) or constants.
std::vector<std::string> packed_shape(const BufferNode& b) {
  size_t ragged = 0;  // dims [0, ragged) are flattened
  for (size_t k = 0; k < b.dims.size(); ++k) {
    auto kind = b.dims[k].extent->kind;
    if (kind != ExprKind::SizeRef && kind != ExprKind::IntImm) ragged = k + 1;
  }
  std::vector<std::string> shape;
  if (ragged) shape.push_back("\"*\"");
  for (size_t k = ragged; k < b.dims.size(); ++k) {
    const auto& e = b.dims[k].extent;
    shape.push_back(e->kind == ExprKind::SizeRef ? json_string(e->name) : std::to_string(e->int_value));
  }
  return shape;
}

std::string param_json(const ir::Func& f, const Param& p, bool result, const Owners& owners) {
  std::string out = fmt::format("{{\"name\": {}, \"kind\": \"{}\"", json_string(p.name), kind_name(p.kind));
  if (p.kind == Param::Coupling && p.type_name != "coupling") out += ", \"type\": " + json_string(p.type_name);
  if (p.kind != Param::Scalar) out += ", \"struct\": " + json_string(struct_name(f, p));
  if (p.kind == Param::Scalar) return out + fmt::format(", \"dtype\": \"{}\"}}", scalar_name(p.fields[0].second->type));
  if (p.kind == Param::List) {
    const BufferNode& data = *p.fields[0].second;
    std::vector<std::string> shape{"\"?\""};
    for (size_t k = 2; k < data.dims.size(); ++k) {
      const auto& e = data.dims[k].extent;
      shape.push_back(e->kind == ExprKind::SizeRef ? json_string(e->name) : std::to_string(e->int_value));
    }
    out += fmt::format(", \"dtype\": \"{}\", \"element_shape\": {}", scalar_name(data.type), json_list(shape));
  } else {
    // The length arrays: the fields that other fields' extents read.
    std::map<const BufferNode*, std::string> field_of;
    for (const auto& [name, buf] : p.fields) field_of[buf.get()] = name;
    std::set<const BufferNode*> length_fields;
    for (const auto& [name, buf] : p.fields)
      for (const auto& d : buf->dims) extent_loads(d.extent, length_fields);
    std::vector<std::string> fields;
    for (const auto& [name, buf] : p.fields) {
      std::set<const BufferNode*> reads;
      for (const auto& d : buf->dims) extent_loads(d.extent, reads);
      std::vector<std::string> lengths;
      for (const auto& [other, obuf] : p.fields)
        if (reads.count(obuf.get())) lengths.push_back(json_string(other));
      // A result's extents read the arguments' length arrays (`q.seqlen`).
      for (const auto* r : reads)
        if (!field_of.count(r))
          if (auto it = owners.find(r); it != owners.end())
            lengths.push_back(json_string(it->second.first + "." + it->second.second));
      std::vector<std::string> dims;
      for (const auto& d : buf->dims) dims.push_back(json_string(extent_text(d.extent, p.name, owners)));
      std::string field = fmt::format(
          "{{\"name\": {}, \"dtype\": \"{}\", \"dims\": {}, \"shape\": {}, \"lengths\": {}, \"is_length\": {}",
          json_string(name), scalar_name(buf->type), json_list(dims), json_list(packed_shape(*buf)), json_list(lengths),
          length_fields.count(buf.get()) ? "true" : "false");
      if (result) {
        auto it = owners.find(buf.get());
        if (it != owners.end())
          field += fmt::format(", \"bound\": {{\"param\": {}, \"field\": {}}}", json_string(it->second.first),
                               json_string(it->second.second));
        else
          field += ", \"bound\": null";
      }
      fields.push_back(field + "}");
    }
    out += ", \"fields\": " + json_list(fields);
  }
  std::vector<std::string> sizes;
  for (const auto& [member, e] : p.sizes) {
    if (e->kind == ExprKind::SizeRef)
      sizes.push_back(fmt::format("{{\"member\": {}, \"size\": {}}}", json_string(member), json_string(e->name)));
    else
      sizes.push_back(fmt::format("{{\"member\": {}, \"value\": {}}}", json_string(member), e->int_value));
  }
  return out + ", \"sizes\": " + json_list(sizes) + "}";
}

/// `fn f(q: PackedQueries, n: [N]f32, s: f32) PackedQueries`, with C names.
std::string signature(const ir::Func& f) {
  auto type_text = [](const Param& p) -> std::string {
    if (p.kind == Param::Coupling) return p.type_name;
    const BufferNode& b = *p.fields[0].second;
    if (p.kind == Param::Scalar) return scalar_name(b.type);
    std::string dims;
    size_t first = p.kind == Param::List ? 2 : 0;
    for (size_t k = first; k < b.dims.size(); ++k) {
      const auto& e = b.dims[k].extent;
      dims += (dims.empty() ? "" : ", ") + (e->kind == ExprKind::SizeRef ? e->name : std::to_string(e->int_value));
    }
    if (p.kind == Param::List) return "list[[?" + (dims.empty() ? "" : ", " + dims) + "]" + scalar_name(b.type) + "]";
    return "[" + dims + "]" + scalar_name(b.type);
  };
  std::string out = "fn " + f.name + "(";
  for (size_t k = 0; k < f.params.size(); ++k) out += (k ? ", " : "") + f.params[k].name + ": " + type_text(f.params[k]);
  out += ")";
  for (const auto& r : f.results) out += " " + type_text(r);
  return out;
}

}  // namespace

std::string emit_metadata(const ir::Module& m, const MetadataContext& ctx) {
  std::vector<std::string> funcs;
  for (const auto& f : m.funcs) {
    if (f.name == "main") continue;
    Owners owners;
    for (const auto& p : f.params)
      for (const auto& [field, buf] : p.fields) owners[buf.get()] = {p.name, field};
    std::vector<std::string> sizes, params, results;
    for (const auto& s : f.sizes) sizes.push_back(json_string(s.name));
    for (const auto& p : f.params) params.push_back(param_json(f, p, false, owners));
    for (const auto& r : f.results) results.push_back(param_json(f, r, true, owners));
    funcs.push_back(fmt::format(
        "{{\"name\": {}, \"signature\": {}, \"sizes\": {}, \"params\": {}, \"result\": {}}}", json_string(f.name),
        json_string(signature(f)), json_list(sizes), json_list(params), results.empty() ? "null" : results[0]));
  }
  std::string out = fmt::format(
      "{{\"format\": \"dccc-module-info\", \"version\": {}, \"compiler\": {}, \"source\": {}, \"target\": \"{}\", "
      "\"arch\": {},\n \"functions\": [\n",
      kMetadataVersion, json_string(ctx.compiler), json_string(ctx.source),
      ctx.target == ir::Target::Cuda ? "cuda" : "cpu", json_string(ctx.arch));
  for (size_t k = 0; k < funcs.size(); ++k) out += "  " + funcs[k] + (k + 1 < funcs.size() ? ",\n" : "\n");
  return out + "]}\n";
}

std::string emit_metadata_symbol(const std::string& json) {
  // As a C string literal, in pieces (C11 only guarantees 4095 characters
  // per literal; adjacent literals are joined).
  std::string out = "\n/* The library's description (docs/abi.md, \"Metadata\"). */\nstatic const char dcc__module_info[] =\n";
  std::string piece;
  auto flush = [&] {
    out += "  \"" + piece + "\"\n";
    piece.clear();
  };
  for (unsigned char c : json) {
    if (c == '"' || c == '\\') piece += '\\', piece += static_cast<char>(c);
    else if (c == '\n') piece += "\\n", flush();
    else if (c == '?') piece += "\\?";  // never a trigraph (`-std=c11` has them)
    else piece += static_cast<char>(c);
    if (piece.size() > 200) flush();
  }
  if (!piece.empty()) flush();
  return out + ";\nconst char* dccc_module_info(void) DCCRT_NOEXCEPT { return dcc__module_info; }\n";
}

}  // namespace dccc::backend
