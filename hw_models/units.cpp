#include "hw_models/units.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>
#include <system_error>
#include <vector>

#include "hw_models/error.h"

namespace fleetsim::units {

namespace {

struct UnitDef {
  const char* symbol;
  Dim dim;
  double to_si;  ///< multiply the number by this to get SI base units
};

// Every spelling the parser accepts. Case matters: 'b' is a bit and 'B' a byte, 'M' is
// mega and 'm' milli. Bit rates are divided by 8 to get bytes/s.
constexpr double kKi = 1024.0;
constexpr double kMi = kKi * 1024.0;
constexpr double kGi = kMi * 1024.0;
constexpr double kTi = kGi * 1024.0;
constexpr double kPi = kTi * 1024.0;

const std::vector<UnitDef>& unit_table() {
  static const std::vector<UnitDef> table = {
      // time
      {"ns", Dim::kTime, 1e-9},
      {"us", Dim::kTime, 1e-6},
      {"\xC2\xB5s", Dim::kTime, 1e-6},  // U+00B5 micro sign
      {"\xCE\xBCs", Dim::kTime, 1e-6},  // U+03BC Greek small mu
      {"ms", Dim::kTime, 1e-3},
      {"s", Dim::kTime, 1.0},
      {"min", Dim::kTime, 60.0},
      {"h", Dim::kTime, 3600.0},
      {"d", Dim::kTime, 86400.0},
      // bytes (decimal SI prefixes, then binary IEC prefixes)
      {"B", Dim::kBytes, 1.0},
      {"kB", Dim::kBytes, 1e3},
      {"MB", Dim::kBytes, 1e6},
      {"GB", Dim::kBytes, 1e9},
      {"TB", Dim::kBytes, 1e12},
      {"PB", Dim::kBytes, 1e15},
      {"KiB", Dim::kBytes, kKi},
      {"MiB", Dim::kBytes, kMi},
      {"GiB", Dim::kBytes, kGi},
      {"TiB", Dim::kBytes, kTi},
      {"PiB", Dim::kBytes, kPi},
      // bandwidth in bytes/s
      {"B/s", Dim::kBandwidth, 1.0},
      {"kB/s", Dim::kBandwidth, 1e3},
      {"MB/s", Dim::kBandwidth, 1e6},
      {"GB/s", Dim::kBandwidth, 1e9},
      {"TB/s", Dim::kBandwidth, 1e12},
      {"PB/s", Dim::kBandwidth, 1e15},
      {"KiB/s", Dim::kBandwidth, kKi},
      {"MiB/s", Dim::kBandwidth, kMi},
      {"GiB/s", Dim::kBandwidth, kGi},
      {"TiB/s", Dim::kBandwidth, kTi},
      // bandwidth in bits/s: value * prefix / 8 bits per byte
      {"b/s", Dim::kBandwidth, 1.0 / 8},
      {"bps", Dim::kBandwidth, 1.0 / 8},
      {"kb/s", Dim::kBandwidth, 1e3 / 8},
      {"kbit/s", Dim::kBandwidth, 1e3 / 8},
      {"kbps", Dim::kBandwidth, 1e3 / 8},
      {"Mb/s", Dim::kBandwidth, 1e6 / 8},
      {"Mbit/s", Dim::kBandwidth, 1e6 / 8},
      {"Mbps", Dim::kBandwidth, 1e6 / 8},
      {"Gb/s", Dim::kBandwidth, 1e9 / 8},
      {"Gbit/s", Dim::kBandwidth, 1e9 / 8},
      {"Gbps", Dim::kBandwidth, 1e9 / 8},
      {"Tb/s", Dim::kBandwidth, 1e12 / 8},
      {"Tbit/s", Dim::kBandwidth, 1e12 / 8},
      {"Tbps", Dim::kBandwidth, 1e12 / 8},
      // FLOP rate
      {"FLOP/s", Dim::kFlopRate, 1.0},
      {"FLOPS", Dim::kFlopRate, 1.0},
      {"GFLOP/s", Dim::kFlopRate, 1e9},
      {"GFLOPS", Dim::kFlopRate, 1e9},
      {"TFLOP/s", Dim::kFlopRate, 1e12},
      {"TFLOPS", Dim::kFlopRate, 1e12},
      {"PFLOP/s", Dim::kFlopRate, 1e15},
      {"PFLOPS", Dim::kFlopRate, 1e15},
      {"GOPS", Dim::kFlopRate, 1e9},
      {"TOPS", Dim::kFlopRate, 1e12},
      {"POPS", Dim::kFlopRate, 1e15},
      // event rate in 1/s
      {"/s", Dim::kRate, 1.0},
      {"/min", Dim::kRate, 1.0 / 60},
      {"/h", Dim::kRate, 1.0 / 3600},
      {"/d", Dim::kRate, 1.0 / 86400},
      // power
      {"W", Dim::kPower, 1.0},
      {"kW", Dim::kPower, 1e3},
      {"MW", Dim::kPower, 1e6},
  };
  return table;
}

// Bit spellings that look like byte sizes ("80Gb"): never silently read as bytes.
bool is_bit_size(std::string_view unit) {
  static const std::array<std::string_view, 10> bits = {"b",  "kb",   "Mb",   "Gb",   "Tb",
                                                        "Kb", "kbit", "Mbit", "Gbit", "Tbit"};
  for (auto b : bits)
    if (unit == b) return true;
  return false;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::string> symbols_of(Dim d) {
  std::vector<std::string> out;
  for (const auto& u : unit_table())
    if (u.dim == d) out.emplace_back(u.symbol);
  return out;
}

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

// Rounds |x| > 0 to 3 significant digits: 0.0023149 -> 0.00231, 999.7 -> 1000.
double round3(double x) {
  const double e = std::floor(std::log10(x));
  const double scale = std::pow(10.0, e - 2);
  return std::round(x / scale) * scale;
}

// "2.31", "80.0", "989" for a mantissa already rounded to 3 significant digits in [1, 1000).
// The thresholds sit half a last digit below the decade so that float noise in m (e.g.
// 9.9999999 for 10.0) cannot pick the wrong number of decimals.
std::string mantissa(double m) {
  const int decimals = m >= 99.95 ? 0 : (m >= 9.995 ? 1 : 2);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, m);
  return buf;
}

struct Scale {
  double factor;
  const char* suffix;
};

// Picks the largest scale <= |value|, formats value/scale with 3 significant digits, and
// moves up one scale when rounding reaches the next one (999.7 ms -> "1.00 s").
std::string format_scaled(double value, const std::vector<Scale>& scales) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  const std::string sign = value < 0 ? "-" : "";
  const double x = std::fabs(value);
  if (x == 0) {  // "0 s", "0 B": the base unit, not the smallest prefix
    for (const auto& sc : scales)
      if (sc.factor == 1) return std::string("0") + sc.suffix;
    return std::string("0") + scales.front().suffix;
  }
  size_t i = 0;
  while (i + 1 < scales.size() && x >= scales[i + 1].factor) ++i;
  if (x < scales[0].factor) {
    // Below the smallest prefix: plain 3-significant-digit notation in that unit.
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g", x / scales[0].factor);
    return sign + buf + scales[0].suffix;
  }
  double m = round3(x / scales[i].factor);
  if (i + 1 < scales.size() && m * scales[i].factor >= scales[i + 1].factor * (1 - 1e-12)) {
    ++i;
    m = round3(x / scales[i].factor);
  }
  if (m >= 1000) {  // beyond the largest prefix: fall back to plain %.3g
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g", m);
    return sign + buf + scales[i].suffix;
  }
  return sign + mantissa(m) + scales[i].suffix;
}

const std::vector<Scale>& scales_of(Dim d) {
  static const std::vector<Scale> time = {{1e-9, " ns"}, {1e-6, " us"}, {1e-3, " ms"}, {1, " s"},
                                          {60, " min"},  {3600, " h"},  {86400, " d"}};
  static const std::vector<Scale> bytes = {{1, " B"},     {1e3, " kB"},  {1e6, " MB"}, {1e9, " GB"},
                                           {1e12, " TB"}, {1e15, " PB"}, {1e18, " EB"}};
  static const std::vector<Scale> bandwidth = {{1, " B/s"},    {1e3, " kB/s"},  {1e6, " MB/s"},
                                               {1e9, " GB/s"}, {1e12, " TB/s"}, {1e15, " PB/s"}};
  static const std::vector<Scale> flops = {
      {1, " FLOP/s"},     {1e3, " kFLOP/s"},  {1e6, " MFLOP/s"}, {1e9, " GFLOP/s"},
      {1e12, " TFLOP/s"}, {1e15, " PFLOP/s"}, {1e18, " EFLOP/s"}};
  static const std::vector<Scale> rate = {
      {1, "/s"}, {1e3, "k/s"}, {1e6, "M/s"}, {1e9, "G/s"}, {1e12, "T/s"}};
  static const std::vector<Scale> power = {{1, " W"}, {1e3, " kW"}, {1e6, " MW"}, {1e9, " GW"}};
  switch (d) {
    case Dim::kTime: return time;
    case Dim::kBytes: return bytes;
    case Dim::kBandwidth: return bandwidth;
    case Dim::kFlopRate: return flops;
    case Dim::kRate: return rate;
    case Dim::kPower: return power;
  }
  return time;
}

}  // namespace

const char* dim_name(Dim d) {
  switch (d) {
    case Dim::kTime: return "time";
    case Dim::kBytes: return "bytes";
    case Dim::kBandwidth: return "bandwidth";
    case Dim::kFlopRate: return "FLOP rate";
    case Dim::kRate: return "rate";
    case Dim::kPower: return "power";
  }
  return "?";
}

const char* dim_examples(Dim d) {
  switch (d) {
    case Dim::kTime: return "'150ms', '2s', '1h'";
    case Dim::kBytes: return "'80GB', '16GiB', '512MiB'";
    case Dim::kBandwidth: return "'3.35TB/s', '900GB/s', '400Gb/s'";
    case Dim::kFlopRate: return "'989TFLOP/s', '1.98PFLOP/s'";
    case Dim::kRate: return "'20/s', '1200/min', '3/h'";
    case Dim::kPower: return "'700W', '10.2kW'";
  }
  return "";
}

double parse(std::string_view text, Dim d) {
  const std::string_view s = trim(text);
  const std::string hint = std::string("write a number and a unit, e.g. ") + dim_examples(d);

  // Number: [+-] then whatever std::from_chars accepts as a decimal float (no hex).
  std::string_view rest = s;
  bool negative = false;
  if (!rest.empty() && (rest.front() == '+' || rest.front() == '-')) {
    negative = rest.front() == '-';
    rest.remove_prefix(1);
  }
  double value = 0;
  const auto [end, ec] =
      std::from_chars(rest.data(), rest.data() + rest.size(), value, std::chars_format::general);
  if (ec == std::errc::invalid_argument || end == rest.data())
    throw InputError("expected a " + std::string(dim_name(d)) +
                         " value (a number followed by a unit), got " + quoted(s),
                     hint);
  if (ec == std::errc::result_out_of_range || !std::isfinite(value))
    throw InputError("the number in " + quoted(s) + " is not a finite " + dim_name(d) + " value",
                     hint);
  if (negative) value = -value;

  const std::string_view unit =
      trim(std::string_view(end, static_cast<size_t>(rest.data() + rest.size() - end)));
  if (unit.empty())
    throw InputError(
        "expected a " + std::string(dim_name(d)) + " value with a unit, got " + quoted(s),
        std::string("a bare number is ambiguous; write e.g. ") + dim_examples(d));

  for (const auto& u : unit_table()) {
    if (unit != u.symbol) continue;
    if (u.dim == d) return value * u.to_si;
    throw InputError("expected a " + std::string(dim_name(d)) + " value, got " + quoted(s) +
                         ", which is a " + dim_name(u.dim) + " value",
                     hint);
  }
  if (d == Dim::kBytes && is_bit_size(unit))
    throw InputError("'" + std::string(unit) + "' in " + quoted(s) +
                         " is bits (b = bit, B = byte); sizes are in bytes",
                     "write e.g. '80GB' or '16GiB'");
  throw InputError("unknown " + std::string(dim_name(d)) + " unit " + quoted(unit) + " in " +
                       quoted(s) + did_you_mean(std::string(unit), symbols_of(d)),
                   hint);
}

std::string format(double value, Dim d) { return format_scaled(value, scales_of(d)); }

std::string format_count(double value) {
  static const std::vector<Scale> count = {
      {1, ""}, {1e3, "k"}, {1e6, "M"}, {1e9, "G"}, {1e12, "T"}};
  if (value != 0 && std::isfinite(value) && std::fabs(value) < 1) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g", value);
    return buf;
  }
  return format_scaled(value, count);
}

}  // namespace fleetsim::units
