#include "reports/format.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "hw_models/units.h"

namespace fleetsim::reports {

std::string human(double v) {
  const char* suffix[] = {"", "k", "M", "B", "T"};
  int i = 0;
  double a = std::fabs(v);
  // 999.5 rounds to "1.00k", not "1000".
  while (a >= 999.5 && i < 4) {
    a /= 1000;
    v /= 1000;
    ++i;
  }
  char buf[64];
  if (a >= 99.95 || (i == 0 && a == std::floor(a)))
    std::snprintf(buf, sizeof buf, "%.0f%s", v, suffix[i]);
  else if (a >= 9.995)
    std::snprintf(buf, sizeof buf, "%.1f%s", v, suffix[i]);
  else
    std::snprintf(buf, sizeof buf, "%.2f%s", v, suffix[i]);
  return buf;
}

std::string pct(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %%", 100 * fraction);
  return buf;
}

std::string usd(double v) {
  std::string s = "$";  // not "$" + human(v): GCC 12 warns falsely (-Wrestrict) on that
  return s += human(v);
}

// `text` word-wrapped at 92 columns, each line indented by two spaces.
std::string wrap(const std::string& text) {
  std::istringstream words(text);
  std::ostringstream o;
  std::string w;
  size_t col = 2;
  bool first = true;
  o << "  ";
  while (words >> w) {
    if (!first && col + 1 + w.size() > 92) {
      o << "\n  ";
      col = 2;
    } else if (!first) {
      o << ' ';
      ++col;
    }
    o << w;
    col += w.size();
    first = false;
  }
  o << "\n";
  return o.str();
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char ch : s) o += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return o + "\"";
}

std::string duration(double seconds) { return units::format(seconds, units::Dim::kTime); }

std::string general(double v, int digits) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

}  // namespace fleetsim::reports
