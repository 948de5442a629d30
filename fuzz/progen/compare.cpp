#include "fuzz/progen/compare.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <vector>

namespace dccc::progen {
namespace {

std::vector<std::string> tokens(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&]() {
    if (!cur.empty()) out.push_back(cur);
    cur.clear();
  };
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      flush();
    } else if (c == '[' || c == ']' || c == ',') {
      flush();
      out.push_back(std::string(1, c));
    } else {
      cur += c;
    }
  }
  flush();
  return out;
}

bool number(const std::string& t, double* v) {
  if (t == "true" || t == "false") return false;
  char* end = nullptr;
  *v = std::strtod(t.c_str(), &end);
  return end && *end == '\0' && end != t.c_str();
}

}  // namespace

Tolerance tolerance_for(const std::string& elem) {
  if (elem == "f16") return {2e-2, 6e-2};
  if (elem == "bf16") return {1e-1, 2.5e-1};
  if (elem == "f32") return {2e-4, 2e-4};
  if (elem == "f64") return {1e-9, 1e-9};
  return {0, 0};
}

bool same_output(const std::string& a, const std::string& b, Tolerance tol, std::string* why) {
  std::vector<std::string> ta = tokens(a), tb = tokens(b);
  for (size_t i = 0; i < ta.size() || i < tb.size(); ++i) {
    if (i >= ta.size() || i >= tb.size()) {
      *why = "token " + std::to_string(i) + ": one output ends, the other has `" +
             (i < ta.size() ? ta[i] : tb[i]) + "`";
      return false;
    }
    if (ta[i] == tb[i]) continue;
    double x = 0, y = 0;
    if (number(ta[i], &x) && number(tb[i], &y)) {
      if (std::isnan(x) && std::isnan(y)) continue;
      if (std::isinf(x) || std::isinf(y) || std::isnan(x) || std::isnan(y)) {
        if (x == y) continue;
      } else if (std::fabs(x - y) <= tol.abs + tol.rel * std::max(std::fabs(x), std::fabs(y))) {
        continue;
      }
    }
    *why = "token " + std::to_string(i) + ": `" + ta[i] + "` vs `" + tb[i] + "`";
    return false;
  }
  return true;
}

}  // namespace dccc::progen
