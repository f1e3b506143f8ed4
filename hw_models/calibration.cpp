#include "hw_models/calibration.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "hw_models/error.h"
#include "hw_models/files.h"

#ifndef FLEETSIM_DEFAULT_CALIBRATION
#define FLEETSIM_DEFAULT_CALIBRATION "hw_models/calibration"
#endif

namespace fleetsim::hw {

namespace fs = std::filesystem;

const char* calib_op_name(CalibOp op) {
  switch (op) {
    case CalibOp::kGemm: return "gemm";
    case CalibOp::kAttnPrefill: return "attn_prefill";
    case CalibOp::kAttnDecode: return "attn_decode";
  }
  return "gemm";
}

namespace {

const std::vector<std::string> kColumns = {"op",       "dtype",  "m",       "n",       "k",
                                           "batch",    "q_len",  "kv_len",  "heads",   "kv_heads",
                                           "head_dim", "causal", "time_us", "citation"};

// Splits one CSV line; double-quoted fields may hold commas and "" escapes.
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

// YYYY-MM-DD naming a day of the Gregorian calendar.
bool is_calendar_date(const std::string& s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
    if (s[i] < '0' || s[i] > '9') return false;
  const int y = std::stoi(s.substr(0, 4)), m = std::stoi(s.substr(5, 2)),
            d = std::stoi(s.substr(8, 2));
  if (m < 1 || m > 12 || d < 1) return false;
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return d <= kDays[m - 1] + (m == 2 && leap ? 1 : 0);
}

std::string fmt_us(double seconds) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g us", seconds * 1e6);
  return b;
}

}  // namespace

CalibrationTable load_calibration(const std::string& path, const Catalog& catalog) {
  const std::string text = files::read_input_file(path, "calibration table");
  files::check_utf8(text, path);
  std::istringstream in(text);
  CalibrationTable t;
  t.file = path;
  std::string line;
  int lineno = 0;
  std::string version;
  int date_line = 0;
  auto fail = [&](int ln, const std::string& field, const std::string& msg,
                  const std::string& hint) -> void {
    throw InputError(msg, hint, path, ln, field);
  };
  // Header.
  std::vector<std::string> header;
  int header_line = 0;
  while (std::getline(in, line)) {
    ++lineno;
    const std::string s = trim(line);
    if (s.empty()) continue;
    if (s[0] == '#') {
      const std::string kv = trim(s.substr(1));
      const auto colon = kv.find(':');
      if (colon == std::string::npos) continue;  // free comment
      const std::string key = trim(kv.substr(0, colon)), value = trim(kv.substr(colon + 1));
      if (key == "fleetsim-calibration")
        version = value;
      else if (key == "gpu")
        t.gpu = value;
      else if (key == "source")
        t.source = value;
      else if (key == "driver")
        t.driver = value;
      else if (key == "cuda")
        t.cuda = value;
      else if (key == "date") {
        t.date = value;
        date_line = lineno;
      } else if (key == "notes")
        t.notes += (t.notes.empty() ? "" : " ") + value;
      continue;
    }
    header = split_csv(s);
    header_line = lineno;
    break;
  }
  if (version != "1")
    fail(1, "fleetsim-calibration",
         version.empty() ? "missing header line '# fleetsim-calibration: 1'"
                         : "unsupported format version '" + version + "'",
         "start the file with '# fleetsim-calibration: 1' (hw_models/calibration/README.md)");
  for (const auto& [key, value] : {std::pair<const char*, std::string*>{"gpu", &t.gpu},
                                   {"source", &t.source},
                                   {"driver", &t.driver},
                                   {"cuda", &t.cuda},
                                   {"date", &t.date}})
    if (value->empty())
      fail(0, key, std::string("missing provenance header '# ") + key + ": ...'",
           "every table says which GPU, who measured it with what software, driver, CUDA "
           "version and date ('unknown (not published)' where a source does not say)");
  if (!is_calendar_date(t.date))
    fail(date_line, "date", "date '" + t.date + "' is not a date in the form YYYY-MM-DD",
         "the day of the measurement or publication, e.g. 2025-03-27");
  const GpuSpec* gpu = nullptr;
  try {
    gpu = &catalog.gpu(t.gpu);
  } catch (const InputError& e) {
    fail(0, "gpu", e.message(), e.hint());
  }
  if (header.empty()) fail(lineno, "", "no CSV header row", "add: op,dtype,m,n,k,...");
  for (auto& h : header) h = trim(h);
  if (header != kColumns) {
    std::string want;
    for (const auto& c : kColumns) want += (want.empty() ? "" : ",") + c;
    fail(header_line, "", "the CSV columns are not the expected ones", "use exactly: " + want);
  }

  auto num = [&](const std::vector<std::string>& f, size_t i, bool required) -> double {
    const std::string s = trim(f[i]);
    if (s.empty()) {
      if (required)
        fail(lineno, kColumns[i], "empty value in column '" + kColumns[i] + "'",
             "this operator needs it");
      return 0;
    }
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (end == s.c_str() || *end != '\0' || !std::isfinite(v) || v < 0)
      fail(lineno, kColumns[i], "'" + s + "' in column '" + kColumns[i] + "' is not a number >= 0",
           "");
    return v;
  };

  std::map<std::string, std::pair<int, double>> shapes;  // shape -> (line, time)
  while (std::getline(in, line)) {
    ++lineno;
    const std::string s = trim(line);
    if (s.empty() || s[0] == '#') continue;
    const auto f = split_csv(s);
    if (f.size() != kColumns.size())
      fail(lineno, "",
           "row has " + std::to_string(f.size()) + " fields, expected " +
               std::to_string(kColumns.size()),
           "quote fields that contain commas");
    CalibrationRow r;
    r.line = lineno;
    const std::string op = trim(f[0]);
    if (op == "gemm")
      r.op = CalibOp::kGemm;
    else if (op == "attn_prefill")
      r.op = CalibOp::kAttnPrefill;
    else if (op == "attn_decode")
      r.op = CalibOp::kAttnDecode;
    else
      fail(lineno, "op", "unknown op '" + op + "'", "one of gemm, attn_prefill, attn_decode");
    r.dtype = trim(f[1]);
    if (r.dtype == "fp16") r.dtype = "bf16";
    if (r.dtype != "bf16" && r.dtype != "fp8" && r.dtype != "fp4")
      fail(lineno, "dtype", "unknown dtype '" + r.dtype + "'", "one of bf16, fp16, fp8, fp4");
    // fp4: block-scaled 4-bit operands (NVFP4/MXFP4, W4A4) on the FP4 tensor rate. Every
    // operand is counted at the element size the step model charges (the scales, 1/16 or
    // 1/32 of a byte per element, are left out on both sides), so a row's fraction
    // reproduces its own time when the model costs that shape.
    const double bytes_per = r.dtype == "fp4" ? 0.5 : r.dtype == "fp8" ? 1.0 : 2.0;
    const double peak = r.dtype == "fp4"   ? gpu->fp4_flops_per_s
                        : r.dtype == "fp8" ? gpu->fp8_flops_per_s
                                           : gpu->bf16_flops_per_s;
    if (!(peak > 0))
      fail(lineno, "dtype", t.gpu + " has no " + r.dtype + " tensor rate in the catalog",
           "use bf16 rows for this GPU");
    if (r.dtype == "fp4" && r.op != CalibOp::kGemm)
      fail(lineno, "dtype", "fp4 rows are GEMMs only (attention runs at 16 bits in the model)",
           "use op gemm, or bf16/fp8 for attention rows");
    if (r.op == CalibOp::kGemm) {
      const double m = num(f, 2, true), n = num(f, 3, true), k = num(f, 4, true);
      r.flops = 2.0 * m * n * k;
      r.bytes = (m * k + k * n + m * n) * bytes_per;
    } else {
      const double batch = num(f, 5, true), kv = num(f, 7, true), heads = num(f, 8, true),
                   kvh = num(f, 9, true), d = num(f, 10, true);
      if (r.op == CalibOp::kAttnPrefill) {
        const double q = num(f, 6, true), causal = num(f, 11, true);
        r.flops = 4.0 * batch * heads * d * q * kv * (causal != 0 ? 0.5 : 1.0);
        r.bytes = batch * (2.0 * q * heads + 2.0 * kv * kvh) * d * bytes_per;
      } else {
        r.flops = 4.0 * batch * heads * d * kv;
        r.bytes = batch * 2.0 * kv * kvh * d * bytes_per;
      }
      // Attention runs at the 16-bit rate in the model; an fp8 attention row is kept as its
      // own dtype and only used where asked for.
    }
    r.time_s = num(f, 12, true) * 1e-6;
    if (!(r.time_s > 0)) fail(lineno, "time_us", "time_us must be > 0", "");
    // One row per shape: a repeated shape is a duplicate (same time) or two measurements that
    // disagree, and either way the interpolation would weigh that shape twice.
    std::string shape = op + "," + r.dtype;
    for (size_t i = 2; i <= 11; ++i) {
      const std::string v = trim(f[i]);
      char* end = nullptr;
      const double d = std::strtod(v.c_str(), &end);
      shape += ",";
      shape += v.empty() || *end != '\0' ? v : std::to_string(d);
    }
    const auto [first, fresh] = shapes.emplace(shape, std::pair{lineno, r.time_s});
    if (!fresh)
      fail(lineno, "",
           "row repeats the shape of line " + std::to_string(first->second.first) +
               (first->second.second == r.time_s
                    ? " (a duplicate)"
                    : " with another time (" + fmt_us(first->second.second) + " there, " +
                          fmt_us(r.time_s) + " here: conflicting measurements)"),
           "keep one row per shape (for repeated measurements, their median)");
    r.citation = trim(f[13]);
    if (r.citation.empty())
      fail(lineno, "citation", "empty citation", "say which table/figure the row comes from");
    const double tf = r.flops / peak, tb = r.bytes / gpu->memory_bw_bytes_per_s;
    r.compute_bound = tf >= tb;
    r.ridge_ratio = tf / tb;
    r.work = r.compute_bound ? r.flops : r.bytes;
    r.log_work = std::log10(r.work);
    r.fraction = std::max(tf, tb) / r.time_s;
    if (r.fraction > 1.0 + 1e-9)
      fail(lineno, "time_us",
           "the row is faster than the datasheet roofline of " + t.gpu + " (" +
               std::to_string(r.fraction) + " of peak)",
           "check the unit (microseconds), the shape and that the rate is dense, not sparse");
    t.rows.push_back(r);
  }
  if (t.rows.empty()) fail(lineno, "", "calibration table has no rows", "");
  return t;
}

std::string CalibrationSet::default_dir() {
  const char* env = std::getenv("FLEETSIM_CALIBRATION");
  if (env != nullptr && *env != '\0') return env;
  return FLEETSIM_DEFAULT_CALIBRATION;
}

CalibrationSet CalibrationSet::load_dir(const std::string& dir, const Catalog& catalog) {
  CalibrationSet set;
  set.dir_ = dir;
  // A folder that is not there (a typo) would silently run uncalibrated: refuse it.
  files::check_input_dir(dir, "calibration folder",
                         "give a folder of calibration tables (*.csv), or --calibration none to "
                         "run without calibration");
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".csv") files.push_back(e.path().string());
  if (files.empty())
    throw InputError("the calibration folder holds no calibration tables (*.csv)",
                     "give a folder of tables (hw_models/calibration/README.md), or "
                     "--calibration none to run without calibration",
                     dir);
  std::sort(files.begin(), files.end());
  for (const auto& f : files) set.add(load_calibration(f, catalog));
  return set;
}

namespace {
// index_'s key: "gpu|op|dtype|regime", regime m (memory-bound), c (compute-bound) or cf
// (compute-bound and far from the ridge).
std::string index_key(const std::string& gpu, CalibOp op, const std::string& dtype,
                      const char* regime) {
  return gpu + "|" + calib_op_name(op) + "|" + dtype + "|" + regime;
}
}  // namespace

void CalibrationSet::add(const CalibrationTable& t) {
  tables_.push_back(t);
  const auto by_work = [](const CalibrationRow& a, const CalibrationRow& b) {
    return a.work < b.work;
  };
  for (const auto& r : t.rows) {
    auto& v = index_[index_key(t.gpu, r.op, r.dtype, r.compute_bound ? "c" : "m")];
    v.push_back(r);
    std::stable_sort(v.begin(), v.end(), by_work);
    if (r.compute_bound && r.ridge_ratio >= kFarFromRidge) {
      auto& far = index_[index_key(t.gpu, r.op, r.dtype, "cf")];
      far.push_back(r);
      std::stable_sort(far.begin(), far.end(), by_work);
    }
  }
}

const std::vector<CalibrationRow>* CalibrationSet::rows(const std::string& gpu, CalibOp op,
                                                        const std::string& dtype,
                                                        bool compute_bound) const {
  auto it = index_.find(index_key(gpu, op, dtype, compute_bound ? "c" : "m"));
  return it == index_.end() ? nullptr : &it->second;
}

const std::vector<CalibrationRow>* CalibrationSet::rows_far(const std::string& gpu, CalibOp op,
                                                            const std::string& dtype) const {
  auto it = index_.find(index_key(gpu, op, dtype, "cf"));
  return it == index_.end() ? nullptr : &it->second;
}

double CalibrationSet::fraction_at(const std::vector<CalibrationRow>& rows, double work) {
  if (work <= rows.front().work) return rows.front().fraction;
  if (work >= rows.back().work) return rows.back().fraction;
  auto hi = std::lower_bound(rows.begin(), rows.end(), work,
                             [](const CalibrationRow& r, double w) { return r.work < w; });
  auto lo = hi - 1;
  if (hi->work == lo->work) return hi->fraction;
  const double x = (std::log10(work) - lo->log_work) / (hi->log_work - lo->log_work);
  return lo->fraction + x * (hi->fraction - lo->fraction);
}

double CalibrationSet::fraction_large(const std::vector<CalibrationRow>& rows) {
  return rows.back().fraction;
}

}  // namespace fleetsim::hw
