#include "support/diagnostic_format.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "support/diagnostics.h"

namespace dccc {
namespace {

DiagnosticStyle g_style;

struct Recorded {
  std::string json_result;  // a SARIF `result` object
};
std::vector<Recorded>& sarif_results() {
  static std::vector<Recorded> results;
  return results;
}

std::string_view severity_text(Severity s) {
  switch (s) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    case Severity::Note: return "note";
  }
  return "error";
}

std::string file_of(const SourceRange& r, const SourceFile* file) {
  const SourceFile* f = r.file ? r.file : file;
  return f ? f->name() : std::string("<input>");
}

/// `"file":..,"line":..,"column":..,"range":{...}` for a location.
std::string location_fields(const SourceRange& r, const SourceFile* file) {
  std::string out = "\"file\":" + json_quote(file_of(r, file));
  if (!r.valid()) return out + ",\"line\":null,\"column\":null,\"range\":null";
  int end_line = r.end_line > 0 ? r.end_line : r.line;
  int end_col = r.end_line > 0 ? r.end_col : r.col + 1;
  return out + fmt::format(",\"line\":{},\"column\":{},\"range\":{{\"start\":{{\"line\":{},\"column\":{}}},"
                           "\"end\":{{\"line\":{},\"column\":{}}}}}",
                           r.line, r.col, r.line, r.col, end_line, end_col);
}

/// A SARIF `physicalLocation` object.
std::string sarif_location(const SourceRange& r, const SourceFile* file, std::string_view message) {
  std::string out = "{\"physicalLocation\":{\"artifactLocation\":{\"uri\":" + json_quote(file_of(r, file)) + "}";
  if (r.valid()) {
    int end_line = r.end_line > 0 ? r.end_line : r.line;
    int end_col = r.end_line > 0 ? r.end_col : r.col + 1;
    out += fmt::format(",\"region\":{{\"startLine\":{},\"startColumn\":{},\"endLine\":{},\"endColumn\":{}}}", r.line,
                       r.col, end_line, end_col);
  }
  out += "}";
  if (!message.empty()) out += ",\"message\":{\"text\":" + json_quote(message) + "}";
  return out + "}";
}

}  // namespace

void set_diagnostic_style(const DiagnosticStyle& style) { g_style = style; }
const DiagnosticStyle& diagnostic_style() { return g_style; }

bool color_auto(int fd) {
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color && *no_color) return false;
  const char* term = std::getenv("TERM");
  if (term && std::strcmp(term, "dumb") == 0) return false;
  return isatty(fd) == 1;
}

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20) out += fmt::format("\\u{:04x}", c);
    else if (c < 0x80) out += static_cast<char>(c);
    else {
      // Copy a well-formed UTF-8 sequence; anything else becomes U+FFFD.
      int n = c >= 0xF0 && c < 0xF5 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
      bool ok = n > 0 && i + n <= s.size();
      for (int k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
      if (ok) {
        out.append(s.substr(i, n));
        i += n - 1;
      } else {
        out += "\\ufffd";
      }
    }
  }
  return out + "\"";
}

std::string diagnostic_json(const Diagnostic& d, const SourceFile* file) {
  std::string out = "{" + location_fields(d.range, file);
  out += ",\"severity\":" + json_quote(severity_text(d.severity));
  out += ",\"kind\":" + json_quote(diag_kind_name(d.kind));
  out += ",\"message\":" + json_quote(d.message);
  out += ",\"notes\":[";
  for (size_t k = 0; k < d.notes.size(); ++k) {
    if (k) out += ",";
    out += "{" + location_fields(d.notes[k].range, file) + ",\"message\":" + json_quote(d.notes[k].message) + "}";
  }
  out += "],\"fixits\":[";
  for (size_t k = 0; k < d.fixits.size(); ++k) {
    if (k) out += ",";
    out += "{" + location_fields(d.fixits[k].range, file) + ",\"replacement\":" + json_quote(d.fixits[k].replacement) +
           "}";
  }
  return out + "]}";
}

void sarif_record(const Diagnostic& d, const SourceFile* file) {
  std::string r = "{\"ruleId\":" + json_quote(diag_kind_name(d.kind));
  r += ",\"level\":" + json_quote(d.severity == Severity::Error ? "error" : d.severity == Severity::Warning ? "warning" : "note");
  r += ",\"message\":{\"text\":" + json_quote(d.message) + "}";
  r += ",\"locations\":[" + sarif_location(d.range, file, "") + "]";
  if (!d.notes.empty()) {
    r += ",\"relatedLocations\":[";
    for (size_t k = 0; k < d.notes.size(); ++k) {
      if (k) r += ",";
      r += sarif_location(d.notes[k].range, file, d.notes[k].message);
    }
    r += "]";
  }
  if (!d.fixits.empty()) {
    // SARIF `fixes`: each a replacement of a region by new text.
    r += ",\"fixes\":[";
    for (size_t k = 0; k < d.fixits.size(); ++k) {
      const auto& f = d.fixits[k];
      if (k) r += ",";
      int end_line = f.range.end_line > 0 ? f.range.end_line : f.range.line;
      int end_col = f.range.end_line > 0 ? f.range.end_col : f.range.col + 1;
      r += "{\"description\":{\"text\":" + json_quote("replace with `" + f.replacement + "`") +
           "},\"artifactChanges\":[{\"artifactLocation\":{\"uri\":" + json_quote(file_of(f.range, file)) +
           "},\"replacements\":[{\"deletedRegion\":" +
           fmt::format("{{\"startLine\":{},\"startColumn\":{},\"endLine\":{},\"endColumn\":{}}}", f.range.line,
                       f.range.col, end_line, end_col) +
           ",\"insertedContent\":{\"text\":" + json_quote(f.replacement) + "}}]}]}";
    }
    r += "]";
  }
  sarif_results().push_back({r + "}"});
}

std::string sarif_log(std::string_view tool_version) {
  std::string out =
      "{\"version\":\"2.1.0\",\"$schema\":\"https://json.schemastore.org/sarif-2.1.0.json\",\"runs\":[{\"tool\":{"
      "\"driver\":{\"name\":\"dccc\",\"version\":" +
      json_quote(tool_version) + ",\"informationUri\":\"docs/errors.md\"}},\"results\":[";
  for (size_t k = 0; k < sarif_results().size(); ++k) {
    if (k) out += ",";
    out += sarif_results()[k].json_result;
  }
  return out + "]}]}\n";
}

}  // namespace dccc
