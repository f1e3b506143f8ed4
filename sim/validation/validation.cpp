#include "sim/validation/validation.h"
#include "sim/validation/error_band.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "hw_models/error.h"
#include "hw_models/files.h"
#include "hw_models/perf_model.h"
#include "hw_models/units.h"
#include "hw_models/yaml_reader.h"
#include "sim/network/table_network.h"
#include "sim/scenario/scenario.h"
#include "sim/simulation.h"

namespace fleetsim::validation {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kStepMetrics = {"decode_tokens_per_s", "prefill_tokens_per_s",
                                               "tpot", "ttft"};
const std::vector<std::string> kSimMetrics = {"output_tokens_per_s",
                                              "total_tokens_per_s",
                                              "requests_per_s",
                                              "ttft_mean",
                                              "ttft_p50",
                                              "ttft_p99",
                                              "tpot_mean",
                                              "tpot_p50",
                                              "tpot_p99",
                                              "e2e_mean",
                                              "e2e_p50"};

// Collective cases (setup: collective): NCCL bus bandwidth, nccl-tests' convention.
const std::vector<std::string> kCollectiveMetrics = {"allreduce_busbw", "tree_allreduce_busbw",
                                                     "allgather_busbw", "reduce_scatter_busbw",
                                                     "alltoall_busbw"};

bool is_busbw(const std::string& metric) {
  return metric.size() > 6 && metric.compare(metric.size() - 6, 6, "_busbw") == 0;
}

std::string category_of(const std::string& metric) {
  if (is_busbw(metric)) return "collective";
  // A batch-1 prefill rate is the inverse of its time to first token.
  if (metric.rfind("ttft", 0) == 0 || metric == "prefill_tokens_per_s") return "ttft";
  if (metric.rfind("tpot", 0) == 0 || metric == "decode_tokens_per_s") return "tpot";
  if (metric.rfind("e2e", 0) == 0) return "e2e";
  return "throughput";
}

std::string unit_of(const std::string& metric) {
  if (is_busbw(metric)) return "GB/s";
  if (metric == "requests_per_s") return "requests/s";
  if (metric.find("tokens_per_s") != std::string::npos) return "tokens/s";
  return "s";
}

std::string family_of(const hw::GpuSpec& g) { return gpu_family(g); }

// One iteration of the performance model.
double predict_step(yaml::Map step, Case& c, const hw::Catalog& catalog,
                    std::shared_ptr<const hw::CalibrationSet> calibration, CaseSetup* setup) {
  scenario::Scenario sc;
  sc.engine = catalog.engine(c.engine);
  const std::string model_id = step.str("model");
  try {
    sc.model = catalog.model(model_id);
  } catch (const InputError& e) {
    throw step.locate("model", e);
  }
  scenario::load_deployment(step, sc, catalog, std::move(calibration));
  const std::string mode = step.choice("mode", {"decode", "prefill"});
  const int64_t batch = step.integer("batch", 1, 1 << 20);
  hw::BatchShape b;
  int64_t context = 0;
  if (mode == "prefill") {
    const int64_t p = step.integer("prompt_tokens", 1, 1 << 24);
    b.prefill_tokens = batch * p;
    const double pd = static_cast<double>(p);
    b.prefill_attn_pairs = static_cast<double>(batch) * pd * (pd + 1.0) / 2.0;
    b.prefill_kv_tokens = batch * p;
    b.logits_tokens = batch;
    b.largest_chunk_tokens = p;  // each prompt whole on one attention-DP rank
    b.largest_chunk_pairs = pd * (pd + 1.0) / 2.0;
    b.largest_chunk_kv_tokens = p;
    context = p;
    if (c.metric != "prefill_tokens_per_s" && c.metric != "ttft")
      step.fail("mode", "metric " + c.metric + " needs mode: decode", "");
  } else {
    const int64_t ctx = step.integer("context_tokens", 0, 1 << 24);
    b.decode_seqs = batch;
    b.decode_ctx_tokens = batch * (ctx + 1);
    b.logits_tokens = batch;
    context = ctx + 1;
    if (c.metric != "decode_tokens_per_s" && c.metric != "tpot")
      step.fail("mode", "metric " + c.metric + " needs mode: prefill", "");
  }
  step.finish();
  // The configuration must fit: weights, activations and the batch's KV cache.
  try {
    hw::fit_memory(sc.dep, 1.0, 0.5 * (1 << 30), std::max<int64_t>(b.prefill_tokens, batch), 16,
                   context);
  } catch (const InputError& e) {
    throw step.locate("hardware", InputError(e.message() + " [memory fit]", e.hint()));
  }
  const double t = hw::estimate_step(sc.dep, b).total_s();
  if (setup) {
    setup->scenario = sc;
    setup->step = b;
  }
  c.engine = sc.engine.id;  // the profile that ran (an AMD GPU runs the ROCm build's)
  c.model = sc.model.id;
  c.gpu = sc.gpu.id;
  c.gpu_family = family_of(sc.gpu);
  c.model_kind = sc.model.is_moe() ? "moe" : "dense";
  c.gpus = sc.par.gpus();
  if (c.metric == "decode_tokens_per_s") return static_cast<double>(batch) / t;
  if (c.metric == "prefill_tokens_per_s") return static_cast<double>(b.prefill_tokens) / t;
  return t;  // tpot, ttft
}

double predict_simulation(yaml::Map scen, const std::string& file, Case& c,
                          const hw::Catalog& catalog,
                          std::shared_ptr<const hw::CalibrationSet> calibration, CaseSetup* setup) {
  // The case's engine is the scenario's, unless the scenario names one itself.
  {
    YAML::Node root = scen.node();
    if (!root["serving"] || !root["serving"]["engine"]) root["serving"]["engine"] = c.engine;
  }
  const scenario::Scenario sc =
      scenario::load_map(scen, file, {}, std::nullopt, catalog, std::move(calibration));
  if (setup) setup->scenario = sc;
  const RunResult r = run_in_own_process(sc);  // cases run on threads; SimGrid: its own process
  const metrics::Summary& s = r.summary;
  if (setup) setup->mean_decode_batch = s.mean_decode_batch;
  c.engine = sc.engine.id;
  c.model = sc.model.id;
  c.gpu = sc.gpu.id;
  c.gpu_family = family_of(sc.gpu);
  c.model_kind = sc.model.is_moe() ? "moe" : "dense";
  c.gpus = sc.replicas * sc.par.gpus();
  const std::map<std::string, double> values = {
      {"output_tokens_per_s", s.output_tok_per_s},
      {"total_tokens_per_s", s.input_tok_per_s + s.output_tok_per_s},
      {"requests_per_s", s.requests_per_s},
      {"ttft_mean", s.ttft.mean_s},
      {"ttft_p50", s.ttft.p50_s},
      {"ttft_p99", s.ttft.p99_s},
      {"tpot_mean", s.tpot.mean_s},
      {"tpot_p50", s.tpot.p50_s},
      {"tpot_p99", s.tpot.p99_s},
      {"e2e_mean", s.e2e.mean_s},
      {"e2e_p50", s.e2e.p50_s}};
  if (s.requests_completed == 0)
    throw InputError("the case's scenario completed no requests", "check its workload", file);
  return values.at(c.metric);
}

// One collective of the network model: `hardware` and `network` as in a scenario,
// `gpus` taking part, `bytes` per GPU (nccl-tests' size). Predicted bus bandwidth in GB/s:
// size / time × 2(n−1)/n for all-reduce, × (n−1)/n for all-gather, reduce-scatter and
// all-to-all (nccl-tests doc/PERFORMANCE.md).
double predict_collective(yaml::Map coll, Case& c, const hw::Catalog& catalog) {
  scenario::Scenario sc;
  // The collective does not depend on the model; load_deployment checks tp against one.
  sc.model = catalog.model("llama-3.1-8b");
  scenario::load_deployment(coll, sc, catalog, nullptr);
  const int n = static_cast<int>(coll.integer("gpus", 2, 1 << 20));
  const double bytes = coll.quantity("bytes", units::Dim::kBytes, 1.0);
  coll.finish();
  const hw::CommGroup g{n, std::min(n, std::max(1, sc.dep.scaleup_domain_gpus))};
  if (sc.network_model == "simgrid") {
    // The scenario's tables hold its deployment's groups; this case needs its own.
    try {
      sc.dep.network = net::TableNetwork::load_or_build(sc.fabric, {g});
    } catch (const std::exception& e) {
      throw InputError(e.what(), "use network: {model: analytic}", c.file);
    }
  }
  const hw::NetworkModel& net = *sc.dep.network;
  const std::string op = c.metric.substr(0, c.metric.size() - 6);
  double t = 0, factor = (n - 1.0) / n;
  if (op == "allreduce") {
    t = net.allreduce_s(bytes, g);
    factor *= 2;
  } else if (op == "tree_allreduce") {
    t = net.tree_allreduce_s(bytes, g);
    factor *= 2;
  } else if (op == "allgather") {
    t = net.allgather_s(bytes, g);
  } else if (op == "reduce_scatter") {
    t = net.reduce_scatter_s(bytes, g);
  } else {
    t = net.alltoall_s(bytes, g);
  }
  c.model = "-";
  c.gpu = sc.gpu.id;
  c.gpu_family = family_of(sc.gpu);
  c.model_kind = "";
  c.gpus = n;
  return bytes / t * factor / 1e9;
}

// Case files without `engine:` (older suites, others' cases): the engine named in the
// system, case and citation text, by the rules of scenarios/validation/README.md.
std::string infer_engine(const std::string& text) {
  auto has = [&](const char* s) { return text.find(s) != std::string::npos; };
  std::smatch m;
  if (has("llama.cpp") || has("llama-bench") || has("llamacpp")) return "llamacpp";
  if (has("SGLang") || has("sglang")) return "sglang";
  static const std::regex trt(R"((?:TensorRT-LLM|TRT-LLM|trtllm)\s*v?(\d+)\.(\d+))");
  if (std::regex_search(text, m, trt)) return std::stoi(m[1]) >= 1 ? "trtllm-1" : "trtllm-0";
  if (has("PyTorch backend")) return "trtllm-1";
  if (has("TensorRT-LLM") || has("TRT-LLM") || has("NIM")) return "trtllm-0";
  static const std::regex vllm(R"(vLLM\s*v?0\.(\d+))");
  if (std::regex_search(text, m, vllm)) return std::stoi(m[1]) >= 8 ? "vllm-v1" : "vllm-v0";
  return hw::kDefaultEngine;
}

double median(std::vector<double> v) { return quantile(std::move(v), 0.5); }

}  // namespace

Case run_case(const std::string& file, const hw::Catalog& catalog,
              std::shared_ptr<const hw::CalibrationSet> calibration, CaseSetup* setup) {
  yaml::Map m = yaml::load_file(file);
  Case c;
  c.file = file;
  c.id = fs::path(file).stem().string();
  c.description = m.str("case");
  c.citation = m.str("citation");
  c.system = m.str_or("system", "");
  c.heldout = m.boolean_or("heldout", false);
  c.setup = m.choice("setup", {"step", "simulate", "collective"});
  // The serving engine that produced the measurement (collectives: none).
  if (c.setup == "collective") {
    c.engine = m.str_or("engine", "none");
    if (c.engine != "none")
      m.fail("engine", "a collective case runs no serving engine", "use engine: none");
  } else if (m.has("engine")) {
    c.engine = m.str("engine");
    try {
      (void)catalog.engine(c.engine);
    } catch (const InputError& e) {
      throw m.locate("engine", e);
    }
  } else {
    c.engine = infer_engine(c.system + " " + c.description + " " + c.citation);
  }
  c.source = m.str_or("source", c.citation.substr(0, c.citation.find(',')));
  c.metric = m.choice("metric", c.setup == "step"         ? kStepMetrics
                                : c.setup == "collective" ? kCollectiveMetrics
                                                          : kSimMetrics);
  c.category = category_of(c.metric);
  c.unit = unit_of(c.metric);
  c.measured = m.number("measured", 1e-12, 1e15);
  const bool per_gpu = m.choice_or("normalize", {"none", "per_gpu"}, "none") == "per_gpu";
  if (c.setup == "step") {
    c.predicted = predict_step(m.map("step"), c, catalog, calibration, setup);
  } else if (c.setup == "collective") {
    c.predicted = predict_collective(m.map("collective"), c, catalog);
  } else {
    c.predicted = predict_simulation(m.map("scenario"), file, c, catalog, calibration, setup);
  }
  if (per_gpu) {
    if (c.unit == "s") m.fail("normalize", "per_gpu applies to throughput metrics only", "");
    c.predicted /= c.gpus;
  }
  c.error = (c.predicted - c.measured) / c.measured;
  m.finish();
  return c;
}

std::vector<std::string> case_files(const std::string& dir) {
  if (!fs::is_directory(dir))
    throw InputError("validation directory not found", "give the folder of case files", dir);
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".yaml") files.push_back(e.path().string());
  if (files.empty())
    throw InputError("no case files (*.yaml) in the validation directory",
                     "give the folder of case files (scenarios/validation)", dir);
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<Case> run_cases(const std::vector<std::string>& files, const hw::Catalog& catalog,
                            std::shared_ptr<const hw::CalibrationSet> calibration, int threads) {
  std::vector<Case> out(files.size());
  std::vector<std::exception_ptr> errors(files.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < files.size(); i = next++) {
      try {
        out[i] = run_case(files[i], catalog, calibration);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::max(1, threads); ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);  // the first failing file, whatever the thread count
  return out;
}

std::vector<Case> run_suite(const std::string& dir, const hw::Catalog& catalog,
                            std::shared_ptr<const hw::CalibrationSet> calibration) {
  return run_cases(case_files(dir), catalog, std::move(calibration), 2);
}

double optimism(const Case& c) {
  if (c.unit == "s") return (c.measured - c.predicted) / c.predicted;
  return c.error;
}

std::vector<GroupStats> group_stats(const std::vector<Case>& cases) {
  std::map<std::string, std::vector<double>> groups, signed_groups;
  std::vector<std::string> order;
  auto add = [&](const std::string& g, const Case& c) {
    if (!groups.count(g)) order.push_back(g);
    groups[g].push_back(std::fabs(c.error));
    signed_groups[g].push_back(optimism(c));
  };
  // Collective cases (network model) form their own group and stay out of the
  // end-to-end ones, whose baselines they would otherwise move.
  std::vector<Case> e2e;
  for (const auto& c : cases)
    if (c.category != "collective") e2e.push_back(c);
  // One group per value of `key` in `values` order (all values seen, sorted, when empty).
  auto by = [&](const std::string& prefix, auto key, std::vector<std::string> values) {
    if (values.empty()) {
      for (const auto& c : e2e)
        if (std::find(values.begin(), values.end(), key(c)) == values.end())
          values.push_back(key(c));
      std::sort(values.begin(), values.end());
    }
    for (const auto& v : values)
      for (const auto& c : e2e)
        if (key(c) == v) add(prefix + v, c);
  };
  for (const auto& c : e2e) add("all", c);
  by("category ", [](const Case& c) { return c.category; }, {"throughput", "ttft", "tpot", "e2e"});
  by("model ", [](const Case& c) { return c.model_kind; }, {"dense", "moe"});
  by("gpu ", [](const Case& c) { return c.gpu_family; }, {});
  by("engine ", [](const Case& c) { return c.engine; }, {});
  for (const auto& c : e2e) add(c.gpus == 1 ? "single-GPU" : "multi-GPU", c);
  for (const auto& c : e2e) add(c.heldout ? "held out" : "tuned on", c);
  for (const auto& c : cases)
    if (c.category == "collective") add("category collective", c);
  std::vector<GroupStats> out;
  for (const auto& g : order) {
    const auto& v = groups[g];
    out.push_back({g, static_cast<int>(v.size()), median(v), *std::max_element(v.begin(), v.end()),
                   median(signed_groups[g]), quantile(v, 0.75)});
  }
  return out;
}

namespace {
std::string fmt_value(double v, const std::string& unit) {
  if (unit == "s") return units::format(v, units::Dim::kTime);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g %s", v, unit.c_str());
  return buf;
}
}  // namespace

std::string format_report(const std::vector<Case>& cases) {
  std::ostringstream o;
  char line[512];
  std::snprintf(line, sizeof line, "%-40s %-10s %-16s %5s %-21s %16s %16s %8s\n", "case",
                "category", "gpu", "gpus", "metric", "measured", "predicted", "error");
  o << line;
  for (const auto& c : cases) {
    std::snprintf(line, sizeof line, "%-40s %-10s %-16s %5d %-21s %16s %16s %+7.1f%%%s\n",
                  c.id.substr(0, 40).c_str(), c.category.c_str(), c.gpu.c_str(), c.gpus,
                  c.metric.c_str(), fmt_value(c.measured, c.unit).c_str(),
                  fmt_value(c.predicted, c.unit).c_str(), 100 * c.error,
                  c.heldout ? "  (held out)" : "");
    o << line;
  }
  o << "\n";
  std::snprintf(line, sizeof line, "%-28s %4s %14s %14s %14s %14s\n", "group", "n", "median |err|",
                "p75 |err|", "worst |err|", "optimism p50");
  o << line;
  for (const auto& g : group_stats(cases)) {
    std::snprintf(line, sizeof line, "%-28s %4d %13.1f%% %13.1f%% %13.1f%% %+13.1f%%\n",
                  g.group.c_str(), g.n, 100 * g.median_abs, 100 * g.p75_abs, 100 * g.worst_abs,
                  100 * g.median_signed);
    o << line;
  }
  return o.str();
}

std::string check_baseline(const std::vector<Case>& cases, const std::string& baseline_file,
                           double slack) {
  std::ifstream in(baseline_file);
  if (!in)
    throw InputError("cannot read the validation baseline",
                     "run 'fleetsim validate --update-baseline' to write it", baseline_file);
  nlohmann::json j;
  try {
    in >> j;
  } catch (const std::exception& e) {
    throw InputError(std::string("baseline is not valid JSON: ") + e.what(), "", baseline_file);
  }
  std::string out;
  for (const auto& g : group_stats(cases)) {
    if (!j.contains("median_abs_error") || !j["median_abs_error"].contains(g.group)) continue;
    const double base = j["median_abs_error"][g.group].get<double>();
    if (g.median_abs > base + slack) {
      char buf[256];
      std::snprintf(buf, sizeof buf,
                    "%s: median |error| %.2f%% is worse than the baseline %.2f%%\n",
                    g.group.c_str(), 100 * g.median_abs, 100 * base);
      out += buf;
    }
  }
  return out;
}

void write_error_bands(const std::vector<Case>& cases, const std::string& file) {
  nlohmann::json j;
  j["note"] =
      "Every validation case's error, written by 'fleetsim validate --update-baseline'. "
      "Runs look up the group their scenario falls into (sim/validation/error_band.h).";
  j["cases"] = nlohmann::json::array();
  for (const auto& c : cases) {
    if (c.category == "collective") continue;
    // Rounded so that the file does not churn with the last bits of a prediction.
    auto r4 = [](double v) { return std::round(v * 1e4) / 1e4; };
    j["cases"].push_back({{"id", c.id},
                          {"engine", c.engine},
                          {"model_kind", c.model_kind},
                          {"gpu_family", c.gpu_family},
                          {"category", c.category},
                          {"abs_error", r4(std::fabs(c.error))},
                          {"optimism", r4(optimism(c))},
                          {"heldout", c.heldout}});
  }
  files::write_file_atomically(file, j.dump(1) + "\n");
}

void write_results_json(const std::vector<Case>& cases, const std::string& file) {
  nlohmann::json j;
  j["note"] =
      "fleetsim validate --json: error = (predicted - measured) / measured; optimism > 0 "
      "when the model predicts more throughput or less time than measured.";
  j["cases"] = nlohmann::json::array();
  for (const auto& c : cases)
    j["cases"].push_back({{"id", c.id},
                          {"file", c.file},
                          {"metric", c.metric},
                          {"unit", c.unit},
                          {"category", c.category},
                          {"setup", c.setup},
                          {"model", c.model},
                          {"model_kind", c.model_kind},
                          {"gpu", c.gpu},
                          {"gpu_family", c.gpu_family},
                          {"gpus", c.gpus},
                          {"engine", c.engine},
                          {"source", c.source},
                          {"heldout", c.heldout},
                          {"measured", c.measured},
                          {"predicted", c.predicted},
                          {"error", c.error},
                          {"optimism", optimism(c)}});
  j["groups"] = nlohmann::json::array();
  for (const auto& g : group_stats(cases))
    j["groups"].push_back({{"group", g.group},
                           {"cases", g.n},
                           {"median_abs_error", g.median_abs},
                           {"p75_abs_error", g.p75_abs},
                           {"worst_abs_error", g.worst_abs},
                           {"median_optimism", g.median_signed}});
  files::write_file_atomically(file, j.dump(1) + "\n");
}

void write_baseline(const std::vector<Case>& cases, const std::string& baseline_file) {
  nlohmann::json j;
  j["note"] =
      "Committed median absolute errors of fleetsim validate; CI fails when a group gets "
      "worse. Update with 'fleetsim validate --update-baseline' only when the model "
      "genuinely improved (or a case was added), and say so in the commit.";
  j["cases"] = cases.size();
  for (const auto& g : group_stats(cases)) {
    // Rounded up to 0.01 % so that re-running the same code never reads as a regression.
    j["median_abs_error"][g.group] = std::ceil(g.median_abs * 1e4) / 1e4;
  }
  files::write_file_atomically(baseline_file, j.dump(2) + "\n");
}

}  // namespace fleetsim::validation
