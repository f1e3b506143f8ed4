// Number formatting shared by the terminal reports and the Markdown/HTML documents.
#pragma once

#include <string>

namespace fleetsim::reports {

/// 3 significant digits with k / M / B / T ("B" for billions, as people write user counts);
/// whole numbers below 1000 without decimals: human(41700) == "41.7k", human(958) == "958".
std::string human(double v);
/// A fraction as a percentage with one decimal: pct(0.982) == "98.2 %".
std::string pct(double fraction);
/// Dollars with human(): usd(1.84e6) == "$1.84M".
std::string usd(double v);
/// A CSV cell: as is, or in double quotes (inner quotes doubled) when it holds a comma, a
/// quote or a newline (RFC 4180).
std::string csv_field(const std::string& s);
/// `text` word-wrapped at 92 columns, each line indented by two spaces.
std::string wrap(const std::string& text);
/// A duration with its unit (units::format): duration(0.0123) == "12.3 ms".
std::string duration(double seconds);
/// printf's %g with `digits` significant digits: general(0.95, 3) == "0.95",
/// general(1234567, 3) == "1.23e+06" (for CSV and machine-read text).
std::string general(double v, int digits);

}  // namespace fleetsim::reports
