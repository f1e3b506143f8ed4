// Tests for hw_models/units: parsing dimensioned strings into SI units and formatting back.
#include "hw_models/units.h"

#include <gtest/gtest.h>

#include <string>

#include "hw_models/error.h"

namespace fleetsim::units {
namespace {

// Relative comparison for values that go through a multiplication (1e-12 is far below any
// meaningful difference and far above double rounding).
void expect_rel(double actual, double expected) {
  EXPECT_NEAR(actual, expected, 1e-12 * std::abs(expected)) << "expected " << expected;
}

std::string parse_error(std::string_view text, Dim d) {
  try {
    parse(text, d);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(UnitsParse, Time) {
  expect_rel(parse("150ms", Dim::kTime), 0.150);     // 150 · 1e-3 s
  expect_rel(parse("2s", Dim::kTime), 2.0);
  expect_rel(parse("2 s", Dim::kTime), 2.0);         // space between number and unit
  expect_rel(parse("  3.5us ", Dim::kTime), 3.5e-6); // surrounding blanks
  expect_rel(parse("3.5\xC2\xB5s", Dim::kTime), 3.5e-6);  // micro sign µ
  expect_rel(parse("40ns", Dim::kTime), 40e-9);
  expect_rel(parse("1.5min", Dim::kTime), 90.0);     // 1.5 · 60
  expect_rel(parse("1h", Dim::kTime), 3600.0);
  expect_rel(parse("2d", Dim::kTime), 172800.0);     // 2 · 86400
  expect_rel(parse("1e3ms", Dim::kTime), 1.0);       // exponent notation
  expect_rel(parse(".5s", Dim::kTime), 0.5);
}

TEST(UnitsParse, BytesDecimalAndBinary) {
  expect_rel(parse("80GB", Dim::kBytes), 80e9);                    // 80 · 10^9
  expect_rel(parse("80GiB", Dim::kBytes), 80.0 * 1073741824.0);    // 80 · 2^30
  expect_rel(parse("512MiB", Dim::kBytes), 512.0 * 1048576.0);     // 512 · 2^20
  expect_rel(parse("16kB", Dim::kBytes), 16e3);
  expect_rel(parse("4KiB", Dim::kBytes), 4096.0);
  expect_rel(parse("2TB", Dim::kBytes), 2e12);
  expect_rel(parse("1TiB", Dim::kBytes), 1099511627776.0);         // 2^40
  expect_rel(parse("100B", Dim::kBytes), 100.0);
}

TEST(UnitsParse, BandwidthBytesAndBits) {
  expect_rel(parse("3.35TB/s", Dim::kBandwidth), 3.35e12);
  expect_rel(parse("900GB/s", Dim::kBandwidth), 900e9);
  expect_rel(parse("1GiB/s", Dim::kBandwidth), 1073741824.0);
  // Bits: b is a bit, B a byte. 400 Gb/s = 400e9 / 8 = 50e9 bytes/s.
  expect_rel(parse("400Gb/s", Dim::kBandwidth), 50e9);
  expect_rel(parse("400Gbit/s", Dim::kBandwidth), 50e9);
  expect_rel(parse("400Gbps", Dim::kBandwidth), 50e9);
  // 100 Mb/s = 1e8 / 8 = 12.5e6 B/s, while 100 MB/s = 1e8 B/s: case decides.
  expect_rel(parse("100Mb/s", Dim::kBandwidth), 12.5e6);
  expect_rel(parse("100MB/s", Dim::kBandwidth), 100e6);
  expect_rel(parse("1.6Tb/s", Dim::kBandwidth), 0.2e12);  // 1.6e12 / 8
}

TEST(UnitsParse, FlopRate) {
  expect_rel(parse("989.4TFLOP/s", Dim::kFlopRate), 989.4e12);
  expect_rel(parse("312TFLOPS", Dim::kFlopRate), 312e12);
  expect_rel(parse("624TOPS", Dim::kFlopRate), 624e12);
  expect_rel(parse("500GFLOP/s", Dim::kFlopRate), 500e9);
  expect_rel(parse("1.98PFLOP/s", Dim::kFlopRate), 1.98e15);
}

TEST(UnitsParse, Rate) {
  expect_rel(parse("20/s", Dim::kRate), 20.0);
  expect_rel(parse("1200/min", Dim::kRate), 20.0);  // 1200 / 60
  expect_rel(parse("3/h", Dim::kRate), 3.0 / 3600.0);
  expect_rel(parse("20 /s", Dim::kRate), 20.0);
}

TEST(UnitsParse, Power) {
  expect_rel(parse("700W", Dim::kPower), 700.0);
  expect_rel(parse("10.2kW", Dim::kPower), 10200.0);
  expect_rel(parse("1.5MW", Dim::kPower), 1.5e6);
}

TEST(UnitsParse, NegativeAndSignedNumbers) {
  expect_rel(parse("-5ms", Dim::kTime), -5e-3);  // sign allowed; range checks belong to callers
  expect_rel(parse("+5ms", Dim::kTime), 5e-3);
}

TEST(UnitsParse, BareNumberIsAnErrorWithAHint) {
  try {
    parse("512", Dim::kTime);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.message(), "expected a time value with a unit, got '512'");
    EXPECT_NE(e.hint().find("'150ms'"), std::string::npos) << e.hint();
    EXPECT_NE(e.hint().find("'2s'"), std::string::npos) << e.hint();
  }
  EXPECT_NE(parse_error("80", Dim::kBytes).find("with a unit"), std::string::npos);
}

TEST(UnitsParse, WrongDimensionNamesBoth) {
  const std::string e = parse_error("80GB", Dim::kTime);
  EXPECT_NE(e.find("time"), std::string::npos) << e;   // what was expected
  EXPECT_NE(e.find("bytes"), std::string::npos) << e;  // what it is
  EXPECT_NE(e.find("'80GB'"), std::string::npos) << e;
  const std::string e2 = parse_error("3.35TB/s", Dim::kBytes);
  EXPECT_NE(e2.find("bandwidth"), std::string::npos) << e2;
}

TEST(UnitsParse, BitsAreNotBytes) {
  // "80Gb" is gigabits; a size in bytes must not silently accept it as 10 GB.
  const std::string e = parse_error("80Gb", Dim::kBytes);
  EXPECT_NE(e.find("bits"), std::string::npos) << e;
}

TEST(UnitsParse, UnknownUnitSuggestsTheClosest) {
  const std::string e = parse_error("2sec", Dim::kTime);
  EXPECT_NE(e.find("unknown time unit 'sec'"), std::string::npos) << e;
  const std::string e2 = parse_error("80Gib", Dim::kBytes);  // lower-case i-b
  EXPECT_NE(e2.find("did you mean 'GiB'"), std::string::npos) << e2;
}

TEST(UnitsParse, MalformedAndNonFiniteNumbers) {
  EXPECT_NE(parse_error("GB", Dim::kBytes).find("a number followed by a unit"), std::string::npos);
  EXPECT_NE(parse_error("", Dim::kTime).find("a number followed by a unit"), std::string::npos);
  EXPECT_NE(parse_error("abc ms", Dim::kTime).find("a number followed by a unit"),
            std::string::npos);
  EXPECT_NE(parse_error("infs", Dim::kTime).find("not a finite"), std::string::npos);
  EXPECT_NE(parse_error("nanms", Dim::kTime).find("not a finite"), std::string::npos);
  EXPECT_NE(parse_error("1e999s", Dim::kTime).find("not a finite"), std::string::npos);
  EXPECT_THROW(parse("0x10s", Dim::kTime), InputError);  // no hex: "x10s" is no unit
  EXPECT_THROW(parse("1,5s", Dim::kTime), InputError);   // no decimal comma
}

TEST(UnitsParse, ErrorsHaveNoLocation) {
  // The unit parser does not know the file; Map::quantity adds it (see catalog_test).
  try {
    parse("5", Dim::kPower);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_TRUE(e.file().empty());
    EXPECT_EQ(e.line(), 0);
  }
}

TEST(UnitsFormat, ThreeSignificantDigitsWithPrefix) {
  EXPECT_EQ(format(0.00231, Dim::kTime), "2.31 ms");
  EXPECT_EQ(format(80e9, Dim::kBytes), "80.0 GB");
  EXPECT_EQ(format(3.35e12, Dim::kBandwidth), "3.35 TB/s");
  EXPECT_EQ(format(989.4e12, Dim::kFlopRate), "989 TFLOP/s");
  EXPECT_EQ(format(700, Dim::kPower), "700 W");
  EXPECT_EQ(format(10200, Dim::kPower), "10.2 kW");
  EXPECT_EQ(format(20, Dim::kRate), "20.0/s");
  EXPECT_EQ(format(2.5e-6, Dim::kTime), "2.50 us");
  EXPECT_EQ(format(1.5, Dim::kTime), "1.50 s");
  EXPECT_EQ(format(90, Dim::kTime), "1.50 min");  // 90 s = 1.5 min
  EXPECT_EQ(format(7200, Dim::kTime), "2.00 h");
  EXPECT_EQ(format(0, Dim::kTime), "0 s");
  EXPECT_EQ(format(0, Dim::kBytes), "0 B");
  EXPECT_EQ(format(-0.00231, Dim::kTime), "-2.31 ms");
}

TEST(UnitsFormat, RoundingCarriesIntoTheNextPrefix) {
  // 999.7 ms rounds to 1000 ms at 3 significant digits, which is written 1.00 s.
  EXPECT_EQ(format(0.9997, Dim::kTime), "1.00 s");
  // 99.96 GB -> 100 GB (not "100.0 GB": still 3 digits).
  EXPECT_EQ(format(99.96e9, Dim::kBytes), "100 GB");
  EXPECT_EQ(format(9.996e9, Dim::kBytes), "10.0 GB");
}

TEST(UnitsFormat, Count) {
  EXPECT_EQ(format_count(41700), "41.7k");
  EXPECT_EQ(format_count(1.84e6), "1.84M");
  EXPECT_EQ(format_count(512), "512");
  EXPECT_EQ(format_count(0), "0");
  EXPECT_EQ(format_count(8.03e9), "8.03G");
  EXPECT_EQ(format_count(0.5), "0.5");
}

TEST(UnitsFormat, RoundTripsThroughParse) {
  // format() writes a space and a unit parse() reads back (to 3 significant digits).
  expect_rel(parse(format(3.35e12, Dim::kBandwidth), Dim::kBandwidth), 3.35e12);
  expect_rel(parse(format(0.00231, Dim::kTime), Dim::kTime), 0.00231);
  expect_rel(parse(format(700, Dim::kPower), Dim::kPower), 700);
}

}  // namespace
}  // namespace fleetsim::units
