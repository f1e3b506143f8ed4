#include "sim/workload/trace.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string_view>

#include "hw_models/error.h"
#include "hw_models/files.h"

namespace fleetsim::workload {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

void require_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw InputError("cannot open trace file (no such file)",
                     "paths in a scenario are relative to the scenario file's folder", path);
  // A regular file (not a folder, a device or a pipe), of a bounded size; remembered as an
  // input so no output replaces it.
  files::check_input_file(path, "trace file", files::kMaxTraceBytes);
}

std::ifstream open_trace(const std::string& path) {
  require_file(path);
  std::ifstream in(path);
  if (!in) throw InputError("cannot open trace file (not readable)", {}, path);
  return in;
}

// A whole field as an integer in [INT64_MIN, INT64_MAX]; false if anything else is there.
bool parse_int(std::string_view s, int64_t& out) {
  s = trim(s);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil):
// shift the year to start in March so the leap day is the last day of the "year", then
// count 400-year eras (146097 days), years of the era (365 each + leap days), and days of
// the year from March 1 via the 153-day five-month cycle (153·m + 2)/5.
int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;                                   // [0, 399]
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;  // [0, 365]
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;           // [0, 146096]
  return era * 146097 + doe - 719468;
}

bool is_leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

// "YYYY-MM-DD HH:MM:SS[.fffffff]" → nanoseconds since 1970-01-01 00:00:00 (no time zone:
// only differences are used). Integer arithmetic keeps the 100 ns resolution of the Azure
// timestamps, which a double of seconds since 1970 (~1.7e9 s, ulp ~2.4e-7 s) would not.
// Fraction digits beyond the ninth are truncated.
bool parse_timestamp_ns(std::string_view s, int64_t& out_ns) {
  s = trim(s);
  if (s.size() < 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') ||
      s[13] != ':' || s[16] != ':')
    return false;
  int64_t y, mo, d, h, mi, sec;
  if (!parse_int(s.substr(0, 4), y) || !parse_int(s.substr(5, 2), mo) ||
      !parse_int(s.substr(8, 2), d) || !parse_int(s.substr(11, 2), h) ||
      !parse_int(s.substr(14, 2), mi) || !parse_int(s.substr(17, 2), sec))
    return false;
  static constexpr int kDaysInMonth[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (mo < 1 || mo > 12) return false;
  const int64_t mdays = kDaysInMonth[mo - 1] + (mo == 2 && is_leap(y) ? 1 : 0);
  if (d < 1 || d > mdays || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59)
    return false;
  int64_t frac_ns = 0;
  std::string_view rest = s.substr(19);
  if (!rest.empty()) {
    if (rest[0] != '.' || rest.size() < 2) return false;
    int64_t scale = 100'000'000;  // first fraction digit is 1e8 ns
    for (char c : rest.substr(1)) {
      if (c < '0' || c > '9') return false;
      frac_ns += (c - '0') * scale;
      scale /= 10;
    }
  }
  const int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
  // Within ±4.5e9 s of 1970 (the years 1828 to 2112), so that the ns count and the
  // difference of any two of them fit in an int64.
  if (secs <= -4'500'000'000 || secs >= 4'500'000'000) return false;
  out_ns = secs * 1'000'000'000 + frac_ns;
  return true;
}

int32_t checked_tokens(int64_t v, const std::string& path, int line, const char* field) {
  if (v < 1)
    throw InputError("token count must be >= 1, got " + std::to_string(v), {}, path, line, field);
  if (v > INT32_MAX)
    throw InputError("token count too large, got " + std::to_string(v), {}, path, line, field);
  return static_cast<int32_t>(v);
}

// Sorts by time (stable, so equal timestamps keep file order) and makes times relative to
// the earliest record; rejects an empty trace.
void finish_trace(Trace& t, std::vector<int64_t>& time_ns) {
  if (t.records.empty())
    throw InputError("trace has no records", "the file holds only a header or blank lines", t.file);
  const int64_t t0 = *std::min_element(time_ns.begin(), time_ns.end());
  for (size_t i = 0; i < t.records.size(); ++i)
    t.records[i].time_s = static_cast<double>(time_ns[i] - t0) * 1e-9;
  std::stable_sort(t.records.begin(), t.records.end(),
                   [](const TraceRecord& a, const TraceRecord& b) { return a.time_s < b.time_s; });
}

}  // namespace

std::string resolve_path(const std::string& base_dir, const std::string& path) {
  const std::filesystem::path p(path);
  if (p.is_absolute() || base_dir.empty()) return path;
  return (std::filesystem::path(base_dir) / p).lexically_normal().string();
}

Trace load_azure_csv(const std::string& path) {
  std::ifstream in = open_trace(path);
  Trace t;
  t.file = path;
  t.format = "azure";
  std::vector<int64_t> time_ns;
  std::string raw;
  int line = 0;
  bool header_seen = false;
  while (std::getline(in, raw)) {
    ++line;
    std::string_view s = trim(raw);
    if (line == 1 && s.substr(0, 3) == "\xEF\xBB\xBF") s.remove_prefix(3);  // UTF-8 BOM
    if (s.empty()) continue;
    if (!header_seen) {
      if (s != "TIMESTAMP,ContextTokens,GeneratedTokens")
        throw InputError("expected the header 'TIMESTAMP,ContextTokens,GeneratedTokens', got '" +
                             std::string(s) + "'",
                         "is this an Azure LLM inference trace?", path, line);
      header_seen = true;
      continue;
    }
    std::string_view cols[3];
    size_t ncols = 0, start = 0;
    for (size_t i = 0; i <= s.size(); ++i) {
      if (i == s.size() || s[i] == ',') {
        if (ncols < 3) cols[ncols] = s.substr(start, i - start);
        ++ncols;
        start = i + 1;
      }
    }
    if (ncols != 3)
      throw InputError("expected 3 columns (TIMESTAMP,ContextTokens,GeneratedTokens), got " +
                           std::to_string(ncols),
                       {}, path, line);
    int64_t ns = 0, in_tok = 0, out_tok = 0;
    if (!parse_timestamp_ns(cols[0], ns))
      throw InputError("bad timestamp '" + std::string(cols[0]) + "'",
                       "expected 'YYYY-MM-DD HH:MM:SS.fffffff', a year from 1830 to 2110", path,
                       line, "TIMESTAMP");
    if (!parse_int(cols[1], in_tok))
      throw InputError("not an integer: '" + std::string(cols[1]) + "'", {}, path, line,
                       "ContextTokens");
    if (!parse_int(cols[2], out_tok))
      throw InputError("not an integer: '" + std::string(cols[2]) + "'", {}, path, line,
                       "GeneratedTokens");
    TraceRecord r;
    r.input_tokens = checked_tokens(in_tok, path, line, "ContextTokens");
    r.output_tokens = checked_tokens(out_tok, path, line, "GeneratedTokens");
    t.records.push_back(r);
    time_ns.push_back(ns);
  }
  if (in.bad()) throw InputError("error while reading the trace file", {}, path, line);
  finish_trace(t, time_ns);
  return t;
}

Trace load_mooncake_jsonl(const std::string& path) {
  using nlohmann::json;
  std::ifstream in = open_trace(path);
  Trace t;
  t.file = path;
  t.format = "mooncake";
  t.block_tokens = 512;  // Mooncake hashes 512-token prefix blocks (hash count = ⌈input/512⌉)
  std::vector<int64_t> time_ns;
  std::string raw;
  int line = 0;
  while (std::getline(in, raw)) {
    ++line;
    const std::string_view s = trim(raw);
    if (s.empty()) continue;
    json j;
    try {
      j = json::parse(s);
    } catch (const json::parse_error& e) {
      throw InputError("invalid JSON at byte " + std::to_string(e.byte), {}, path, line);
    } catch (const json::exception& e) {
      // Not only syntax: a number too large for a double ("6E758") is an out_of_range error
      // thrown while parsing.
      throw InputError(std::string("invalid JSON: ") + e.what(), {}, path, line);
    }
    if (!j.is_object()) throw InputError("expected a JSON object", {}, path, line);
    for (const char* key : {"timestamp", "input_length", "output_length", "hash_ids"})
      if (!j.contains(key))
        throw InputError(std::string("missing key '") + key + "'", {}, path, line, key);

    const json& ts = j["timestamp"];
    // Bounded to ~100 years (3.2e12 ms) so the nanosecond count cannot overflow.
    if (!ts.is_number() || !(ts.get<double>() >= 0) || !(ts.get<double>() <= 3.2e12))
      throw InputError("timestamp must be a number of milliseconds in [0, 3.2e12]", {}, path, line,
                       "timestamp");
    // Integral milliseconds convert exactly; fractional ones round to the nearest ns.
    const int64_t ns = ts.is_number_integer() ? ts.get<int64_t>() * 1'000'000
                                              : std::llround(ts.get<double>() * 1e6);

    auto tokens = [&](const char* key) {
      const json& v = j[key];
      if (!v.is_number_integer()) throw InputError("must be an integer", {}, path, line, key);
      return checked_tokens(v.get<int64_t>(), path, line, key);
    };
    TraceRecord r;
    r.input_tokens = tokens("input_length");
    r.output_tokens = tokens("output_length");

    const json& ids = j["hash_ids"];
    if (!ids.is_array())
      throw InputError("hash_ids must be a list of integers", {}, path, line, "hash_ids");
    if (t.hashes.size() + ids.size() > UINT32_MAX)
      throw InputError("too many hash ids in the trace (more than 2^32)", {}, path, line,
                       "hash_ids");
    r.hash_begin = static_cast<uint32_t>(t.hashes.size());
    r.hash_count = static_cast<uint32_t>(ids.size());
    for (const json& id : ids) {
      if (!id.is_number_unsigned())
        throw InputError("hash_ids must be non-negative integers", {}, path, line, "hash_ids");
      t.hashes.push_back(id.get<uint64_t>());
    }
    t.records.push_back(r);
    time_ns.push_back(ns);
  }
  if (in.bad()) throw InputError("error while reading the trace file", {}, path, line);
  finish_trace(t, time_ns);
  return t;
}

Trace load_trace(const std::string& path, const std::string& format) {
  require_file(path);  // "no such file" is a better first message than a format question
  std::string f = format;
  if (f == "auto") {
    const std::string ext = std::filesystem::path(path).extension().string();
    if (ext == ".csv") {
      f = "azure";
    } else if (ext == ".jsonl") {
      f = "mooncake";
    } else {
      throw InputError("cannot tell the trace format from the extension '" + ext + "'",
                       "name it .csv (Azure) or .jsonl (Mooncake), or set format: azure|mooncake",
                       path);
    }
  }
  if (f == "azure") return load_azure_csv(path);
  if (f == "mooncake") return load_mooncake_jsonl(path);
  throw InputError(
      "unknown trace format '" + format + "'" + did_you_mean(format, {"auto", "azure", "mooncake"}),
      "one of auto, azure, mooncake", path);
}

}  // namespace fleetsim::workload
