// Dimensioned values in scenario and catalog files.
//
// Files carry units in strings ("80GiB", "3.35TB/s", "400Gb/s", "2s", "150ms", "20/s",
// "989.4TFLOP/s", "700W"); inside the program everything is SI base units as double:
// seconds, bytes, bytes/s, FLOP/s, 1/s, watts. A bare number for a dimensioned field is an
// error with a hint that shows the accepted units.
#pragma once

#include <string>
#include <string_view>

namespace fleetsim::units {

enum class Dim {
  kTime,       ///< seconds.  ns, us, ms, s, min, h, d
  kBytes,      ///< bytes.    B, kB, MB, GB, TB (10^3 steps), KiB, MiB, GiB, TiB (2^10 steps);
               ///<           bit spellings ("80Gb") are rejected, not divided by 8
  kBandwidth,  ///< bytes/s.  B/s, kB/s, MB/s, GB/s, TB/s, GiB/s...; bits: Mb/s, Gb/s, Tb/s, Gbps
  kFlopRate,   ///< FLOP/s.   FLOP/s, GFLOP/s, TFLOP/s, PFLOP/s (also TFLOPS, TOPS)
  kRate,       ///< 1/s.      "/s", "/min", "/h" with a leading number: "20/s", "1200/min"
  kPower,      ///< watts.    W, kW, MW
};

/// Name of a dimension for messages ("time", "bytes", ...).
const char* dim_name(Dim d);
/// Example spellings for hints, e.g. "'150ms', '2s', '1h'".
const char* dim_examples(Dim d);

/// Parses `text` as a value of dimension `d` and returns it in SI base units.
/// Whitespace between number and unit is allowed ("2 s"). Throws fleetsim::InputError
/// (message + hint, no location) when the unit is missing, unknown, or of another
/// dimension, or when the number is malformed or not finite.
double parse(std::string_view text, Dim d);

/// Human formatting with 3 significant digits and an SI prefix, e.g. format(0.00231, kTime)
/// == "2.31 ms", format(80e9, kBytes) == "80.0 GB", format(3.35e12, kBandwidth) == "3.35 TB/s".
std::string format(double value, Dim d);

/// Human count with 3 significant digits: 41700 -> "41.7k", 1.84e6 -> "1.84M".
std::string format_count(double value);

}  // namespace fleetsim::units
