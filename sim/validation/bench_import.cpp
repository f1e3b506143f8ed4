#include "sim/validation/bench_import.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hw_models/error.h"

namespace fleetsim::validation {

namespace {

using nlohmann::json;

constexpr const char* kHint =
    "give the JSON that `vllm bench serve --save-result` or `python -m sglang.bench_serving "
    "--output-file` wrote";

// The result file, with the line each key first appears on for errors.
class Result {
 public:
  explicit Result(std::string file) : file_(std::move(file)) {
    std::ifstream in(file_, std::ios::binary);
    if (!in) throw InputError("cannot open the benchmark result", kHint, file_);
    std::stringstream ss;
    ss << in.rdbuf();
    text_ = ss.str();
    try {
      root_ = json::parse(text_);
    } catch (const json::parse_error& e) {
      throw InputError(std::string("not valid JSON: ") + e.what(), kHint, file_,
                       line_at(e.byte > 0 ? e.byte - 1 : 0));
    }
    if (!root_.is_object())
      throw InputError("expected a JSON object (a serving benchmark's saved result)", kHint, file_,
                       1);
  }

  const std::string& file() const { return file_; }
  bool has(const char* key) const { return root_.contains(key) && !root_[key].is_null(); }

  /// A finite number > 0 (or >= 0 when `zero_ok`); an error naming the key otherwise.
  double number(const char* key, bool zero_ok = false) const {
    if (!has(key))
      throw error(key, std::string("missing field '") + key + "'",
                  "the benchmark writes it with every result; was the file cut short?");
    const json& v = root_[key];
    if (!v.is_number() || !std::isfinite(v.get<double>()) ||
        (zero_ok ? v.get<double>() < 0 : v.get<double>() <= 0))
      throw error(key,
                  std::string("field '") + key + "' must be a number " +
                      (zero_ok ? ">= 0" : "> 0") + ", got " + v.dump(),
                  kHint);
    return v.get<double>();
  }
  std::string str(const char* key) const {
    return has(key) && root_[key].is_string() ? root_[key].get<std::string>() : std::string();
  }
  const json& at(const char* key) const { return root_[key]; }

  InputError error(const char* key, const std::string& what, const std::string& hint) const {
    const size_t at = text_.find(std::string("\"") + key + "\"");
    return InputError(what, hint, file_, at == std::string::npos ? 0 : line_at(at), key);
  }

 private:
  int line_at(size_t byte) const {
    return 1 +
           static_cast<int>(std::count(
               text_.begin(),
               text_.begin() + static_cast<std::ptrdiff_t>(std::min(byte, text_.size())), '\n'));
  }
  std::string file_, text_;
  json root_;
};

std::string num(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.10g", v);
  return b;
}

// A double-quoted YAML scalar (a JSON string is one, with JSON's escapes).
std::string quoted(const std::string& s) { return json(s).dump(); }

}  // namespace

std::vector<ImportedCase> import_serving_bench(const std::string& json_file,
                                               const BenchImportOptions& opt,
                                               const hw::Catalog& catalog) {
  if (opt.model.empty() || opt.gpu.empty())
    throw InputError("the benchmark result does not say which model entry and GPU ran",
                     "name them: --model ID --gpu ID (fleetsim list models / list gpus)");
  (void)catalog.model(opt.model);  // unknown ids: errors with the closest names
  (void)catalog.gpu(opt.gpu);
  for (char ch : opt.weights)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-')
      throw InputError("--weights '" + opt.weights + "' is not a precision name",
                       "e.g. bf16, fp8, fp4, int4 (scenarios/README.md, precision.weights)");
  if (opt.tp < 1) throw InputError("--tp must be >= 1, got " + std::to_string(opt.tp));
  if (opt.replicas < 1)
    throw InputError("--replicas must be >= 1, got " + std::to_string(opt.replicas));
  const Result r(json_file);

  // The engine: the caller's, else the backend the client talked to.
  const std::string backend = r.str("backend");
  std::string engine = opt.engine;
  if (engine.empty()) {
    if (backend.rfind("sglang", 0) == 0) {
      engine = "sglang";
    } else if (backend.rfind("vllm", 0) == 0 || backend.rfind("openai", 0) == 0) {
      engine = "vllm-v1";  // vLLM's client against an OpenAI-compatible server: vLLM's own
    } else {
      throw r.error("backend", "cannot tell the serving engine from backend '" + backend + "'",
                    "name it: --engine ID (fleetsim list engines)");
    }
  }
  (void)catalog.engine(engine);

  // The requests and their mean lengths.
  const double completed = r.number("completed");
  if (completed != std::floor(completed))
    throw r.error("completed", "field 'completed' must be a whole number of requests", kHint);
  const double in_tokens = r.number("total_input_tokens");
  const double out_tokens = r.number("total_output_tokens");
  const double prompt_mean = std::max(1.0, std::round(in_tokens / completed));
  const double output_mean = std::max(1.0, std::round(out_tokens / completed));
  if (r.has("failed") && r.at("failed").is_number() && r.at("failed").get<double>() > 0)
    throw r.error("failed",
                  "the benchmark had failed requests (" + r.at("failed").dump() +
                      "): its figures are not those of the load it was given",
                  "rerun the benchmark until every request completes");

  // The load: a concurrency limit (closed loop), else a request rate (inf: all at once).
  std::string load, load_note;
  if (r.has("max_concurrency")) {
    const double c = r.number("max_concurrency");
    load = "    clients: {users: " + num(std::round(c)) + ", think_time: 0s}\n";
    load_note = "at most " + num(std::round(c)) + " requests in flight (max_concurrency)";
  } else {
    const json& rate = r.has("request_rate") ? r.at("request_rate") : json("inf");
    if (rate.is_string() && (rate == "inf" || rate == "Infinity")) {
      load = "    arrival: {process: poisson, rate: 1000000/s}\n";
      load_note = "every request sent at once (request_rate inf)";
    } else if (rate.is_number() && rate.get<double>() > 0 && std::isfinite(rate.get<double>())) {
      load = "    arrival: {process: poisson, rate: " + num(rate.get<double>()) + "/s}\n";
      load_note = "Poisson arrivals at " + num(rate.get<double>()) + " requests/s (request_rate)";
      if (r.has("burstiness") && r.at("burstiness").is_number() &&
          r.at("burstiness").get<double>() != 1.0)
        throw r.error("burstiness",
                      "burstiness " + r.at("burstiness").dump() +
                          " is not modelled (fleetsim's open-loop arrivals are Poisson, "
                          "burstiness 1)",
                      "import a run made with --burstiness 1");
    } else {
      throw r.error("request_rate",
                    "field 'request_rate' must be a number > 0 or \"inf\", got " + rate.dump(),
                    kHint);
    }
  }

  // The measured figures, in the suite's units.
  struct Figure {
    const char* key;
    const char* metric;
    double scale;  // file unit → case unit
    const char* unit;
  };
  const Figure figures[] = {{"total_token_throughput", "total_tokens_per_s", 1.0, "tokens/s"},
                            {"output_throughput", "output_tokens_per_s", 1.0, "tokens/s"},
                            {"mean_ttft_ms", "ttft_mean", 1e-3, "s"},
                            {"mean_tpot_ms", "tpot_mean", 1e-3, "s"}};
  const std::string stem = std::filesystem::path(json_file).stem().string();
  const std::string source = opt.source.empty() ? stem : opt.source;
  const std::string file_name = std::filesystem::path(json_file).filename().string();
  const hw::EngineSpec& eng = catalog.engine(engine);
  const bool sglang = engine.rfind("sglang", 0) == 0;
  std::vector<ImportedCase> out;
  bool have_throughput = false;
  for (const Figure& f : figures) {
    if (!r.has(f.key)) continue;
    // One throughput case: the total where the file has it (SGLang's older files do not).
    const bool throughput = f.unit[0] == 't';
    if (throughput && have_throughput) continue;
    have_throughput = have_throughput || throughput;
    const double measured = r.number(f.key) * f.scale;
    std::ostringstream o;
    o << "# Imported by `fleetsim calibrate import-bench` from " << file_name << " ('" << f.key
      << "': " << num(r.number(f.key)) << (f.scale == 1.0 ? "" : " ms") << ").\n"
      << "# Benchmark: " << num(completed) << " requests, " << load_note << "; mean prompt "
      << num(prompt_mean) << " and output " << num(output_mean)
      << " tokens (total_input_tokens and total_output_tokens over completed).\n"
      << "# Left out: the length distributions (their means only).\n"
      << "# ASSUMPTION: the server ran with the usual scheduler settings of " << engine << " ("
      << eng.name << "), below; edit them to the flags it ran with.\n"
      << "case: "
      << quoted(opt.model + " on " + std::to_string(opt.replicas) + " x " + opt.gpu + " (tp " +
                std::to_string(opt.tp) + "), " + engine + ", " + num(completed) +
                " requests: " + f.metric)
      << "\n"
      << "citation: " << quoted("serving benchmark result " + file_name + ", field '" + f.key + "'")
      << "\n"
      << "system: "
      << quoted("backend " + (backend.empty() ? std::string("(not recorded)") : backend) +
                ", model " + (r.str("model_id").empty() ? "(not recorded)" : r.str("model_id")) +
                (r.str("date").empty() ? "" : ", run " + r.str("date")))
      << "\n"
      << "engine: " << engine << "\n"
      << "source: " << quoted(source) << "\n"
      << "metric: " << f.metric << "\n"
      << "measured: " << num(measured) << "   # " << f.unit << "\n"
      << "heldout: " << (opt.heldout ? "true" : "false") << "\n"
      << "setup: simulate\n"
      << "scenario:\n"
      << "  model: " << opt.model << "\n"
      << "  hardware: {gpu: " << opt.gpu << ", tp: " << opt.tp << "}\n"
      << (opt.weights.empty() ? "" : "  precision: {weights: " + opt.weights + "}\n")
      << "  serving:\n"
      << "    replicas: " << opt.replicas << "\n"
      << "    policy: vllm\n"
      << "    chunked_prefill: true\n"
      << "    max_num_seqs: 256\n"
      << "    max_batched_tokens: " << (sglang ? 8192 : 2048) << "\n"
      << "    gpu_memory_utilization: 0.9\n"
      << "  workload:\n"
      << "    requests: " << num(completed) << "\n"
      << load << "    prompt_tokens: {dist: fixed, value: " << num(prompt_mean) << "}\n"
      << "    output_tokens: {dist: fixed, value: " << num(output_mean) << "}\n";
    out.push_back({stem + "-" + f.metric + ".yaml", o.str()});
  }
  if (out.empty())
    throw InputError("the file holds none of the figures a case compares (" +
                         std::string("total_token_throughput, output_throughput, mean_ttft_ms, "
                                     "mean_tpot_ms)"),
                     kHint, json_file);
  return out;
}

}  // namespace fleetsim::validation
