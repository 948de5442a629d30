// How diagnostics are written: text for people (optionally in colour), or
// machine-readable JSON or SARIF for editors and CI (`dccc --color=`,
// `--diagnostics-format=`; the schemas are in docs/errors.md).
//
// The style is process-wide: the driver sets it once from the command line
// and every DiagnosticEngine renders with it.
//   text   file:LINE:COL: error: message [Kind], the source line, a caret
//   json   one JSON object per diagnostic, one per line (JSON Lines)
//   sarif  nothing per diagnostic; the driver writes one SARIF 2.1.0 log
//          holding every diagnostic at exit (sarif_log())
#pragma once

#include <string>
#include <string_view>

namespace dccc {

struct Diagnostic;
class SourceFile;

enum class DiagnosticFormat { Text, Json, Sarif };

struct DiagnosticStyle {
  DiagnosticFormat format = DiagnosticFormat::Text;
  bool color = false;  // text only: ANSI colours (bold location, red error, ...)
};

void set_diagnostic_style(const DiagnosticStyle& style);
const DiagnosticStyle& diagnostic_style();

/// Whether `--color=auto` colours output written to file descriptor `fd`:
/// a terminal, `NO_COLOR` unset or empty, `TERM` not `dumb`.
bool color_auto(int fd);

/// One diagnostic as a JSON object on one line (no newline); `file` is the
/// engine's file, used when the ranges name none.
std::string diagnostic_json(const Diagnostic& d, const SourceFile* file);

/// Records `d` for the SARIF log (--diagnostics-format=sarif).
void sarif_record(const Diagnostic& d, const SourceFile* file);

/// The SARIF 2.1.0 log of every recorded diagnostic, with a newline.
std::string sarif_log(std::string_view tool_version);

/// A JSON string literal for `s` (quotes included; control bytes escaped,
/// invalid UTF-8 bytes as U+FFFD).
std::string json_quote(std::string_view s);

}  // namespace dccc
