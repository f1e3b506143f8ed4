#include "hw_models/kernel_bench_import.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "hw_models/error.h"

namespace fleetsim::hw {
namespace {

using json = nlohmann::json;

// The table's shape columns, in its column order after op and dtype.
constexpr std::array<const char*, 10> kShapeColumns = {
    "m", "n", "k", "batch", "q_len", "kv_len", "heads", "kv_heads", "head_dim", "causal"};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// "Elements{io}" → "elements": nvbench marks some axes with a suffix in braces.
std::string field_name(const std::string& s) { return lower(s.substr(0, s.find('{'))); }

std::optional<double> number(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {  // nvbench writes some values as strings
    const std::string& s = v.get_ref<const std::string&>();
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (end != s.c_str() && *end == '\0') return d;
  }
  return std::nullopt;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// One run: its name, shape fields found (lower-case column → value) and time in seconds.
struct Run {
  std::string name;
  std::map<std::string, double> fields;
  double time_s = 0;
};

// Which columns an op needs, and the defaults of the rest it uses.
void complete_shape(const std::string& op, Run& r, const std::string& file,
                    const std::string& args_hint) {
  auto need = [&](const char* c) {
    if (!r.fields.count(c))
      throw InputError("benchmark '" + r.name + "' has no " + c + " for a " + op + " row",
                       std::string("give the benchmark a counter (Google Benchmark) or axis "
                                   "(nvbench) named ") +
                           c + args_hint,
                       file);
  };
  if (op == "gemm") {
    for (const char* c : {"m", "n", "k"}) need(c);
    return;
  }
  for (const char* c : {"batch", "heads", "head_dim"}) need(c);
  if (!r.fields.count("kv_heads")) r.fields["kv_heads"] = r.fields["heads"];  // MHA
  if (op == "attn_prefill") {
    need("q_len");
    if (!r.fields.count("kv_len")) r.fields["kv_len"] = r.fields["q_len"];  // a whole prompt
    if (!r.fields.count("causal")) r.fields["causal"] = 1;
  } else {
    need("kv_len");
  }
}

// Whether a row of `op` has the column (the others stay empty).
bool uses(const std::string& op, const std::string& column) {
  if (op == "gemm") return column == "m" || column == "n" || column == "k";
  if (column == "m" || column == "n" || column == "k") return false;
  return op == "attn_prefill" || (column != "q_len" && column != "causal");
}

// Google Benchmark's runs; `date` gets the context's day (YYYY-MM-DD) when it has one.
std::vector<Run> google_benchmark_runs(const json& j, const KernelBenchImportOptions& opt,
                                       const std::string& file, KernelBenchImport& out,
                                       std::string& date) {
  static const std::map<std::string, double> kUnit = {
      {"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0}};
  // The median aggregates where the file has them (--benchmark_repetitions with
  // aggregates), else every iteration run (repetitions combined below by shape).
  bool medians = false;
  for (const auto& b : j.at("benchmarks"))
    medians = medians ||
              (b.value("run_type", "") == "aggregate" && b.value("aggregate_name", "") == "median");
  std::vector<Run> runs;
  for (const auto& b : j.at("benchmarks")) {
    const std::string name = b.value("name", "");
    if (!opt.match.empty() && name.find(opt.match) == std::string::npos) continue;
    const bool aggregate = b.value("run_type", "") == "aggregate";
    if (b.value("error_occurred", false) || aggregate != medians ||
        (aggregate && b.value("aggregate_name", "") != "median")) {
      ++out.skipped;
      continue;
    }
    Run r;
    r.name = b.value("run_name", name);
    // The name's arguments, named by --args: "BM_Gemm/4096/1024/512" → m, n, k.
    std::vector<std::string> parts;
    std::stringstream ss(r.name);
    for (std::string p; std::getline(ss, p, '/');) parts.push_back(p);
    for (size_t i = 0; i < opt.args.size() && i + 1 < parts.size(); ++i) {
      const std::string& v = parts[i + 1];
      const std::string arg = v.substr(v.find(':') + 1);  // "m:4096" or "4096"
      char* end = nullptr;
      const double d = std::strtod(arg.c_str(), &end);
      if (end == arg.c_str() || *end != '\0')
        throw InputError("benchmark '" + name + "': argument " + std::to_string(i + 1) + " ('" + v +
                             "') is not a number for --args " + opt.args[i],
                         "name only numeric arguments with --args", file);
      r.fields[lower(opt.args[i])] = d;
    }
    for (const char* c : kShapeColumns) {  // counters win over the name's arguments
      for (auto it = b.begin(); it != b.end(); ++it)
        if (lower(it.key()) == c)
          if (const auto v = number(it.value())) r.fields[c] = *v;
    }
    const auto t = b.find("real_time");
    const auto unit = kUnit.find(b.value("time_unit", "ns"));
    if (t == b.end() || !number(*t) || unit == kUnit.end())
      throw InputError("benchmark '" + name + "' has no real_time in a known time_unit",
                       "write the file with --benchmark_format=json or --benchmark_out", file);
    r.time_s = *number(*t) * unit->second;
    runs.push_back(std::move(r));
  }
  if (j.contains("context") && j["context"].is_object()) {
    const std::string d = j["context"].value("date", "");
    if (d.size() >= 10) date = d.substr(0, 10);
  }
  return runs;
}

// nvbench's mean cold GPU time of a state: summaries as a list of {tag, data: [{name,
// value}]} (current nvbench) or an object by tag of {values: [{name, value}]} (2021).
std::optional<double> nvbench_time(const json& state) {
  static const char* kTag = "nv/cold/time/gpu/mean";
  const auto s = state.find("summaries");
  if (s == state.end()) return std::nullopt;
  auto value_of = [](const json& list) -> std::optional<double> {
    if (!list.is_array()) return std::nullopt;
    for (const auto& d : list)
      if (d.value("name", "") == "value" && d.contains("value")) return number(d["value"]);
    return std::nullopt;
  };
  if (s->is_array()) {
    for (const auto& x : *s)
      if (x.value("tag", "") == kTag) return value_of(x.value("data", json::array()));
  } else if (s->is_object() && s->contains(kTag)) {
    return value_of((*s)[kTag].value("values", json::array()));
  }
  return std::nullopt;
}

std::vector<Run> nvbench_runs(const json& j, const KernelBenchImportOptions& opt,
                              const std::string& file, KernelBenchImport& out) {
  std::vector<Run> runs;
  for (const auto& b : j.at("benchmarks")) {
    const std::string bench = b.value("name", "");
    if (!opt.match.empty() && bench.find(opt.match) == std::string::npos) continue;
    for (const auto& st : b.value("states", json::array())) {
      Run r;
      r.name = bench + " " + st.value("description", "state " + std::to_string(runs.size()));
      if (st.value("is_skipped", false)) {
        ++out.skipped;
        continue;
      }
      for (const auto& a : st.value("axis_values", json::array())) {
        const std::string f = field_name(a.value("name", ""));
        if (std::find(kShapeColumns.begin(), kShapeColumns.end(), f) != kShapeColumns.end() &&
            a.contains("value"))
          if (const auto v = number(a["value"])) r.fields[f] = *v;
      }
      const auto t = nvbench_time(st);
      if (!t)
        throw InputError("nvbench state '" + r.name + "' has no nv/cold/time/gpu/mean summary",
                         "run the benchmark with cold measurements (the default) and --json", file);
      r.time_s = *t;
      runs.push_back(std::move(r));
    }
  }
  return runs;
}

std::string csv_quote(const std::string& s) {
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

}  // namespace

KernelBenchImport import_kernel_bench(const std::string& path, const KernelBenchImportOptions& opt,
                                      const Catalog& catalog) {
  KernelBenchImport out;
  const std::string file_name = std::filesystem::path(path).filename().string();
  if (opt.op != "gemm" && opt.op != "attn_prefill" && opt.op != "attn_decode")
    throw InputError("unknown --op '" + opt.op + "'", "one of gemm, attn_prefill, attn_decode");
  if (opt.dtype != "bf16" && opt.dtype != "fp16" && opt.dtype != "fp8" && opt.dtype != "fp4")
    throw InputError("unknown --dtype '" + opt.dtype + "'", "one of bf16, fp16, fp8, fp4");
  if (opt.dtype == "fp4" && opt.op != "gemm")
    throw InputError("fp4 rows are GEMM rows only", "use --op gemm, or another dtype");
  (void)catalog.gpu(opt.gpu);  // an unknown id throws, with the closest ids
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot open the benchmark result", "check the path", path);
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& e) {
    throw InputError(std::string("not JSON: ") + e.what(),
                     "give the file Google Benchmark (--benchmark_format=json) or nvbench "
                     "(--json) wrote",
                     path);
  }
  if (!j.is_object() || !j.contains("benchmarks") || !j["benchmarks"].is_array())
    throw InputError("no 'benchmarks' list: neither Google Benchmark nor nvbench JSON",
                     "give the file Google Benchmark (--benchmark_format=json) or nvbench "
                     "(--json) wrote",
                     path);
  // nvbench's benchmarks hold states; Google Benchmark's are flat runs with a real_time.
  bool nvbench = false;
  for (const auto& b : j["benchmarks"]) nvbench = nvbench || b.contains("states");
  std::vector<Run> runs;
  std::string context_date;
  std::string args_hint = opt.args.empty()
                              ? std::string(", or name the benchmark's arguments with --args m,n,k")
                              : std::string();
  try {
    if (nvbench) {
      out.format = "nvbench";
      runs = nvbench_runs(j, opt, path, out);
      args_hint.clear();
    } else {
      out.format = "Google Benchmark";
      runs = google_benchmark_runs(j, opt, path, out, context_date);
    }
  } catch (const json::exception& e) {
    throw InputError(std::string("unexpected structure: ") + e.what(),
                     "give the file Google Benchmark or nvbench wrote, unedited", path);
  }
  if (runs.empty())
    throw InputError(
        "no benchmark run to import" +
            (opt.match.empty() ? std::string() : " whose name contains '" + opt.match + "'"),
        "check --match, or that the benchmarks ran without errors", path);
  // Combine the runs of one shape by their median time; keep the first one's name.
  std::map<std::vector<double>, std::pair<std::string, std::vector<double>>> shapes;
  std::vector<std::vector<double>> order;
  for (Run& r : runs) {
    complete_shape(opt.op, r, path, args_hint);
    if (!(r.time_s > 0))
      throw InputError("benchmark '" + r.name + "' has a time that is not positive",
                       "check the benchmark's timing", path);
    std::vector<double> key;
    for (const char* c : kShapeColumns)
      key.push_back(uses(opt.op, c) && r.fields.count(c) ? r.fields[c] : -1);
    auto [it, fresh] = shapes.try_emplace(key, r.name, std::vector<double>{});
    if (fresh) order.push_back(key);
    it->second.second.push_back(r.time_s);
    ++out.runs;
  }
  const std::string date = opt.date.empty() ? context_date : opt.date;
  if (date.empty())
    throw InputError("the file carries no date", "give the measurement's day: --date YYYY-MM-DD",
                     path);
  std::ostringstream o;
  o << "# fleetsim-calibration: 1\n"
    << "# gpu: " << opt.gpu << "\n"
    << "# source: "
    << one_line(opt.source.empty() ? file_name + " (" + out.format + " JSON)" : opt.source) << "\n"
    << "# driver: " << one_line(opt.driver) << "\n"
    << "# cuda: " << one_line(opt.cuda) << "\n"
    << "# date: " << one_line(date) << "\n"
    << "# notes: imported by `fleetsim calibrate import-kernels` from " << file_name << " ("
    << out.format << "): " << out.runs << " runs into " << order.size()
    << " shapes, each the median of its runs' "
    << (out.format == "nvbench" ? "mean cold GPU time" : "real_time") << "\n"
    << "op,dtype,m,n,k,batch,q_len,kv_len,heads,kv_heads,head_dim,causal,time_us,citation\n";
  for (const auto& key : order) {
    const auto& [name, times] = shapes[key];
    o << opt.op << "," << opt.dtype;
    for (size_t c = 0; c < kShapeColumns.size(); ++c) {
      o << ",";
      if (key[c] >= 0) {
        char b[32];
        std::snprintf(b, sizeof b, "%.15g", key[c]);
        o << b;
      }
    }
    char t[32];
    std::snprintf(t, sizeof t, "%.6g", median(times) * 1e6);
    o << "," << t << ","
      << csv_quote(file_name + ": " + name +
                   (times.size() > 1 ? " (median of " + std::to_string(times.size()) + ")" : ""))
      << "\n";
  }
  out.rows = static_cast<int>(order.size());
  out.text = o.str();
  return out;
}

}  // namespace fleetsim::hw
