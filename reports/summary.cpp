#include "reports/summary.h"

#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>

#include "hw_models/error.h"
#include "hw_models/files.h"
#include "hw_models/units.h"
#include "reports/format.h"

namespace fleetsim::reports {

using nlohmann::json;
using units::Dim;

json resolved_scenario(const scenario::Scenario& sc) {
  json j;
  j["file"] = sc.file;
  j["name"] = sc.name;
  j["description"] = sc.description;
  j["seed"] = sc.seed;
  j["overrides"] = sc.overrides;
  j["model"] = {{"id", sc.model.id},
                {"name", sc.model.name},
                {"layers", sc.model.layers},
                {"hidden", sc.model.hidden},
                {"heads", sc.model.heads},
                {"kv_heads", sc.model.kv_heads},
                {"head_dim", sc.model.head_dim},
                {"ffn", sc.model.ffn},
                {"vocab", sc.model.vocab},
                {"params", sc.model.derived_params()},
                {"active_params", sc.model.derived_active_params()},
                {"moe", sc.model.is_moe()},
                {"mla", sc.model.mla.has_value()},
                {"max_context_tokens", sc.model.max_context_tokens}};
  j["hardware"] = {{"gpu", sc.gpu.id},
                   {"gpu_name", sc.gpu.name},
                   {"node", sc.node ? sc.node->id : std::string()},
                   {"tp", sc.par.tp},
                   {"pp", sc.par.pp},
                   {"dp_attention", sc.par.dp_attention},
                   {"expert_parallel", sc.par.expert_parallel},
                   {"gpus_per_replica", sc.par.gpus()},
                   {"memory_bytes", sc.gpu.memory_bytes},
                   {"memory_bw_bytes_per_s", sc.gpu.memory_bw_bytes_per_s},
                   {"bf16_flops_per_s", sc.gpu.bf16_flops_per_s}};
  j["precision"] = {{"weights", sc.weights_dtype},
                    {"activations", sc.activations_dtype},
                    {"kv", sc.kv_dtype},
                    {"gemm_math", hw::dtype_name(sc.prec.math)}};
  j["efficiency"] = {{"compute", sc.eff.compute},
                     {"memory", sc.eff.memory},
                     {"iteration_overhead_s", sc.eff.iteration_overhead_s},
                     {"allreduce_latency_s", sc.eff.allreduce_latency_s},
                     {"link_bw_bytes_per_s", sc.eff.link_bw_bytes_per_s},
                     {"kernel_launch_s", sc.eff.kernel_launch_s},
                     {"cuda_graphs", sc.eff.cuda_graphs},
                     {"moe_imbalance", sc.eff.moe_imbalance},
                     {"per_sequence_overhead_s", sc.eff.per_sequence_overhead_s},
                     {"cuda_graph_max_batch", sc.eff.cuda_graph_max_batch},
                     {"kernel_efficiency", sc.eff.kernel_efficiency},
                     {"moe_half_tokens", sc.eff.moe_half_tokens},
                     {"quant_bandwidth", sc.eff.quant_bandwidth},
                     {"pipeline_sequential", sc.eff.pipeline_sequential},
                     {"calibration_tables", sc.calibration_used},
                     {"source", sc.efficiency_source}};
  j["serving"] = {{"engine", sc.engine.id},
                  {"engine_defaulted", sc.engine_defaulted},
                  {"engine_fitted", !sc.engine.fitted.empty()},
                  {"replicas", sc.replicas},
                  {"router", sc.router},
                  {"policy", sc.policy},
                  {"chunked_prefill", sc.vllm.chunked_prefill},
                  {"split_prompts",
                   sc.vllm.chunked_prefill ? sc.vllm.split_prompts : sc.vllm.split_long_prompts},
                  {"block_tokens", sc.vllm.block_tokens},
                  {"max_num_seqs", sc.vllm.max_num_seqs},
                  {"max_batched_tokens", sc.vllm.max_batched_tokens},
                  {"fast_forward", sc.vllm.fast_forward},
                  {"gpu_memory_utilization", sc.gpu_memory_utilization},
                  {"runtime_reserve_bytes", sc.runtime_reserve_bytes},
                  {"kv_blocks", sc.vllm.kv_blocks}};
  j["memory_per_gpu"] = {{"usable_bytes", sc.memory.usable_bytes},
                         {"weight_bytes", sc.memory.weight_bytes},
                         {"activation_bytes", sc.memory.activation_bytes},
                         {"reserve_bytes", sc.memory.reserve_bytes},
                         {"kv_bytes", sc.memory.kv_bytes}};
  json network = {{"model", sc.network_model},
                  {"oversubscription", sc.fabric.oversubscription},
                  {"nodes_per_leaf", sc.fabric.nodes_per_leaf},
                  {"regions", sc.fabric.regions},
                  {"live_alltoall", sc.live_alltoall}};
  if (sc.fabric.regions > 1)
    network["wan"] = {{"bandwidth_bytes_per_s", sc.fabric.wan.bw_bytes_per_s},
                      {"latency_s", sc.fabric.wan.latency_s}};
  j["network"] = network;
  j["workload"] = sc.workload_description;
  json slo = json::object();
  if (sc.slo_ttft_s) slo["ttft_s"] = *sc.slo_ttft_s;
  if (sc.slo_tpot_s) slo["tpot_s"] = *sc.slo_tpot_s;
  for (const auto& t : sc.slo_targets)
    slo["percentiles"].push_back({{"metric", workload::slo_key(t.metric)},
                                  {"percentile", workload::percentile_name(t.quantile)},
                                  {"bound_s", t.bound_s}});
  j["slo"] = slo;
  return j;
}

std::string slo_check_text(const metrics::SloCheck& c) {
  std::string s = workload::slo_label(c.target.metric);
  s += ' ';
  s += workload::percentile_name(c.target.quantile);
  if (!c.target.cls.empty()) s += " (class " + c.target.cls + ")";
  if (c.beyond) {
    char b[96];
    std::snprintf(b, sizeof b, "%.3g", 100 * (1 - c.target.quantile));
    return s += std::string(": missed, more than ") + b + " % of the requests were rejected";
  }
  s += ' ';
  s += duration(c.value_s);
  s += " of ";
  s += duration(c.target.bound_s);
  const double m = c.margin();
  char b[64];
  const double a = std::fabs(100 * m);
  std::snprintf(b, sizeof b, a >= 10 || a == 0 ? "%.0f %%" : "%.1f %%", a);
  if (c.met) {
    s += std::string(": ") + b + " margin";
  } else if (c.value_s >= 10 * c.target.bound_s) {
    // "missed by 36001 %" reads worse than the ratio.
    std::snprintf(b, sizeof b, "%.3g", c.value_s / c.target.bound_s);
    s += std::string(": ") + b + "x the bound";
  } else {
    s += std::string(": missed by ") + b;
  }
  return s;
}

nlohmann::json slo_check_json(const metrics::SloCheck& c) {
  json j = {{"metric", workload::slo_key(c.target.metric)},
            {"percentile", workload::percentile_name(c.target.quantile)},
            {"quantile", c.target.quantile},
            {"bound_s", c.target.bound_s},
            {"met", c.met}};
  if (!c.target.cls.empty()) j["class"] = c.target.cls;
  if (c.target.plain) j["plain"] = true;
  if (c.beyond) {
    j["value_s"] = nullptr;
    j["margin"] = nullptr;
  } else {
    j["value_s"] = c.value_s;
    j["margin"] = c.margin();
  }
  return j;
}

namespace {
void put_latency(json& j, const std::string& name, const metrics::LatencyStats& s) {
  j[name + "_mean_s"] = s.mean_s;
  j[name + "_p50_s"] = s.p50_s;
  j[name + "_p90_s"] = s.p90_s;
  j[name + "_p99_s"] = s.p99_s;
  j[name + "_max_s"] = s.max_s;
}
}  // namespace

void put_common_metrics(json& j, const metrics::Summary& s) {
  j["requests_arrived"] = s.requests_arrived;
  j["requests_completed"] = s.requests_completed;
  j["requests_rejected"] = s.requests_rejected;
  j["input_tokens"] = s.input_tokens;
  j["output_tokens"] = s.output_tokens;
  put_latency(j, "ttft", s.ttft);
  put_latency(j, "tpot", s.tpot);
  put_latency(j, "itl", s.itl);
  put_latency(j, "e2e", s.e2e);
  put_latency(j, "queue", s.queue);
  j["input_tok_per_s"] = s.input_tok_per_s;
  j["output_tok_per_s"] = s.output_tok_per_s;
  j["requests_per_s"] = s.requests_per_s;
  j["goodput_req_per_s"] = s.goodput_req_per_s;
  j["slo_attainment"] = s.slo_attainment;
  j["sim_duration_s"] = s.sim_duration_s;
  if (!s.slo_checks.empty()) {
    json checks = json::array();
    for (const auto& c : s.slo_checks) checks.push_back(slo_check_json(c));
    j["slo_checks"] = checks;
  }
  j["requests_rejected_too_long_for_model"] = s.rejected_too_long_for_model;
  j["requests_rejected_too_long_for_kv_cache"] = s.rejected_too_long_for_kv;
  j["requests_rejected_too_long_for_batch"] = s.rejected_too_long_for_batch;
  j["requests_rejected_queue_full"] = s.rejected_queue_full;
  j["preemptions"] = s.preemptions;
  j["prefix_lookup_tokens"] = s.prefix_lookup_tokens;
  j["prefix_hit_tokens"] = s.prefix_hit_tokens;
  j["prefix_hit_rate"] = s.prefix_hit_rate;
  j["prefix_host_tokens"] = s.prefix_host_tokens;
  j["kv_transfers"] = s.kv_transfers;
  j["response_cache_hits"] = s.response_cache_hits;
  if (!s.classes.empty()) {
    json classes = json::object();
    for (const auto& c : s.classes) {
      classes[c.name] = {{"priority", c.priority},
                         {"requests_completed", c.completed},
                         {"requests_rejected", c.rejected},
                         {"ttft_p50_s", c.ttft.p50_s},
                         {"ttft_p99_s", c.ttft.p99_s},
                         {"tpot_p50_s", c.tpot.p50_s},
                         {"tpot_p99_s", c.tpot.p99_s},
                         {"e2e_p50_s", c.e2e.p50_s},
                         {"slo_attainment", c.slo_attainment}};
    }
    j["classes"] = classes;
  }
  j["escalations"] = s.escalations;
  j["kv_transfer_bytes"] = s.kv_transfer_bytes;
  j["kv_transfer_mean_s"] = s.kv_transfer_mean_s;
}

json summary_json(const scenario::Scenario& sc, const RunResult& run) {
  const auto& s = run.summary;
  json j;
  j["fleetsim_version"] = FLEETSIM_VERSION;
  j["seed"] = sc.seed;
  j["engine"] = sc.engine.id;
  j["validation_error"] =
      accuracy_json(sc, static_cast<double>(sc.replicas_all_pools() * sc.par.gpus()));
  put_common_metrics(j, s);
  if (sc.live_alltoall) {
    j["alltoall_live_iterations"] = s.alltoall_iterations;
    j["alltoall_live_bytes"] = s.alltoall_bytes;
    j["alltoall_delayed_iterations"] = s.alltoall_delayed;
    j["alltoall_delay_mean_s"] = s.alltoall_delay_mean_s;
    j["alltoall_delay_max_s"] = s.alltoall_delay_max_s;
  }
  j["replica_busy_fraction"] = s.replica_busy_fraction;
  j["mean_decode_batch"] = s.mean_decode_batch;
  j["kv_occupancy_mean"] = s.kv_occupancy_mean;
  j["kv_occupancy_peak"] = s.kv_occupancy_peak;
  j["iterations"] = s.iterations;
  j["events"] = run.events;
  j["wall_s"] = run.wall_s;
  j["scenario"] = resolved_scenario(sc);
  return j;
}

std::string serving_setup(const scenario::Scenario& sc) {
  std::ostringstream o;
  o << sc.model.name << " on " << sc.replicas << " × " << sc.par.gpus() << " × " << sc.gpu.name
    << ", " << sc.policy
    << (sc.policy != "vllm" ? ""
        : sc.vllm.chunked_prefill
            ? (sc.vllm.split_prompts ? " (chunked prefill)" : " (whole prompts with decodes)")
            : (sc.vllm.split_long_prompts ? " (prefill-first, long prompts in chunks)"
                                          : " (prefill-first)"))
    << ", router " << sc.router;
  return o.str();
}

Table latency_table(const metrics::Summary& s) {
  Table tb{{"latency", "mean", "p50", "p90", "p99", "max"}, {}};
  auto t = [](double v) { return units::format(v, Dim::kTime); };
  for (const auto& [name, l] : {std::pair{"TTFT", s.ttft},
                                {"TPOT", s.tpot},
                                {"inter-token", s.itl},
                                {"end-to-end", s.e2e},
                                {"queueing", s.queue}})
    tb.rows.push_back({name, t(l.mean_s), t(l.p50_s), t(l.p90_s), t(l.p99_s), t(l.max_s)});
  return tb;
}

std::string summary_notes(const scenario::Scenario& sc, const RunResult& run) {
  const auto& s = run.summary;
  std::ostringstream o;
  o << "engine      " << engine_line(sc) << "\n";
  if (sc.error_band)
    o << "accuracy    "
      << accuracy_line(sc, static_cast<double>(sc.replicas_all_pools() * sc.par.gpus())) << "\n";
  o << "requests    " << s.requests_completed << " completed of " << s.requests_arrived
    << " arrived, " << s.requests_rejected << " rejected, " << s.preemptions << " preemptions\n";
  for (const auto& c : s.classes) {
    char line[256];
    std::snprintf(line, sizeof line,
                  "class %-10s priority %d: %llu done, %llu rejected, TTFT p50/p99 %s / %s, "
                  "TPOT p50/p99 %s / %s, SLO met %.1f %%\n",
                  c.name.c_str(), c.priority, static_cast<unsigned long long>(c.completed),
                  static_cast<unsigned long long>(c.rejected),
                  units::format(c.ttft.p50_s, Dim::kTime).c_str(),
                  units::format(c.ttft.p99_s, Dim::kTime).c_str(),
                  units::format(c.tpot.p50_s, Dim::kTime).c_str(),
                  units::format(c.tpot.p99_s, Dim::kTime).c_str(), 100 * c.slo_attainment);
    o << line;
  }
  if (sc.response_cache)
    o << "response cache " << s.response_cache_hits << " requests answered without a model call\n";
  if (sc.small_pool)
    o << "cascade    " << s.escalations << " requests escalated from " << sc.small_pool->model.id
      << " to " << sc.model.id << "\n";
  if (sc.prefill_pool)
    o << "KV moves   " << s.kv_transfers << " transfers prefill → decode pool, "
      << units::format(s.kv_transfer_bytes, Dim::kBytes) << " in all, mean "
      << units::format(s.kv_transfer_mean_s, Dim::kTime) << " each (in TTFT)\n";
  if (sc.live_alltoall)
    o << "all-to-all " << s.alltoall_iterations
      << " iterations ran their cross-domain EP all-to-all live ("
      << units::format(s.alltoall_bytes, Dim::kBytes) << "); " << s.alltoall_delayed
      << " were slowed by contention, mean " << units::format(s.alltoall_delay_mean_s, Dim::kTime)
      << " per iteration, max " << units::format(s.alltoall_delay_max_s, Dim::kTime) << "\n";
  if (sc.vllm.prefix_caching)
    o << "prefix     " << units::format_count(static_cast<double>(s.prefix_hit_tokens)) << " of "
      << units::format_count(static_cast<double>(s.prefix_lookup_tokens))
      << " prompt tokens found cached (hit rate " << std::fixed << std::setprecision(1)
      << 100 * s.prefix_hit_rate << " %), not computed"
      << (s.prefix_host_tokens > 0
              ? "; " + units::format_count(static_cast<double>(s.prefix_host_tokens)) +
                    " of them loaded from host memory"
              : std::string())
      << "\n"
      << std::defaultfloat;
  o << "throughput  " << units::format_count(s.requests_per_s) << " req/s, "
    << units::format_count(s.input_tok_per_s) << " input tok/s, "
    << units::format_count(s.output_tok_per_s) << " output tok/s\n";
  if (sc.slo_ttft_s || sc.slo_tpot_s) {
    o << "goodput     " << units::format_count(s.goodput_req_per_s) << " req/s meeting the SLO ("
      << pct(s.slo_attainment) << " of completed)\n";
  }
  for (const auto& c : s.slo_checks) o << "SLO         " << slo_check_text(c) << "\n";
  // "Busy" alone reads as saturated: a replica running a batch of 2 is busy. The mean
  // decode batch against max_num_seqs says how full the batches are.
  o << "replicas    running a batch " << pct(s.replica_busy_fraction)
    << " of the time; mean decode batch " << units::format_count(s.mean_decode_batch) << " of "
    << sc.vllm.max_num_seqs << " slots ("
    << pct(s.mean_decode_batch / static_cast<double>(std::max<int64_t>(1, sc.vllm.max_num_seqs)))
    << ")\n";
  o << "            KV cache mean " << pct(s.kv_occupancy_mean) << " / peak "
    << pct(s.kv_occupancy_peak) << " of " << sc.vllm.kv_blocks << " blocks × "
    << sc.vllm.block_tokens << " tokens\n";
  o << "simulated   " << units::format(s.sim_duration_s, Dim::kTime) << ", "
    << units::format_count(static_cast<double>(run.events)) << " events, "
    << units::format_count(static_cast<double>(s.iterations)) << " iterations\n";
  return o.str();
}

std::string summary_table(const scenario::Scenario& sc, const RunResult& run) {
  std::ostringstream o;
  o << "fleetsim " << FLEETSIM_VERSION << " — " << sc.name << " (seed " << sc.seed << ")\n";
  o << "  " << serving_setup(sc) << "\n";
  o << "  workload: " << sc.workload_description << "\n\n";
  o << table_text(latency_table(run.summary)) << "\n";
  std::istringstream notes(summary_notes(sc, run));
  for (std::string line; std::getline(notes, line);) o << "  " << line << "\n";
  o << "  wall time   " << units::format(run.wall_s, Dim::kTime) << "\n";
  return o.str();
}

std::string accuracy_line(const scenario::Scenario& sc, double gpus) {
  if (!sc.error_band) return "";
  const validation::ErrorBand& b = *sc.error_band;
  std::string s = "Validation error of scenarios like this one (" + validation::describe(b) + ")";
  if (gpus > 0) {
    char buf[128];
    std::snprintf(buf, sizeof buf, ": %s GPUs instead of %s",
                  units::format_count(std::ceil(gpus * b.capacity_factor_p75())).c_str(),
                  units::format_count(gpus).c_str());
    s += buf;
  }
  return s + ".";
}

nlohmann::json accuracy_json(const scenario::Scenario& sc, double gpus) {
  if (!sc.error_band) return nullptr;
  const validation::ErrorBand& b = *sc.error_band;
  json j = {{"group", b.group},
            {"cases", b.n},
            {"median_abs_error", b.median_abs},
            {"p75_abs_error", b.p75_abs},
            {"median_optimism", b.median_optimism},
            {"capacity_factor_at_p75", b.capacity_factor_p75()},
            {"source", "fleetsim validate (scenarios/validation/error_bands.json)"}};
  if (gpus > 0) j["gpus_at_p75_error"] = std::ceil(gpus * b.capacity_factor_p75());
  return j;
}

std::string engine_line(const scenario::Scenario& sc) {
  const hw::EngineSpec& e = sc.engine;
  std::ostringstream o;
  o << e.id << " (" << e.name << ")"
    << (sc.engine_defaulted ? ", the default: the scenario names no serving.engine" : "")
    << "; overhead " << units::format(sc.eff.iteration_overhead_s, Dim::kTime) << "/iteration + "
    << units::format(sc.eff.per_sequence_overhead_s, Dim::kTime) << "/sequence, kernels at "
    << std::fixed << std::setprecision(2) << sc.eff.kernel_efficiency << "x the calibrated rates";
  if (sc.model.is_moe()) {
    o << ", MoE grouped GEMMs at " << sc.eff.moe_efficiency << "x the dense rate";
    if (sc.eff.moe_half_expert_bytes > 0)
      o << " times w / (w + " << units::format(sc.eff.moe_half_expert_bytes, Dim::kBytes)
        << ") for experts of w bytes a GPU";
    if (sc.eff.moe_compute_efficiency != 1.0)
      o << " (their compute side at a further " << sc.eff.moe_compute_efficiency << "x)";
    if (sc.model.mla && sc.eff.mla_efficiency != 1.0)
      o << ", MLA attention at " << sc.eff.mla_efficiency << "x the calibrated rate";
    o << ", hottest expert " << sc.model.moe->hot_expert << "x the mean"
      << (sc.model.moe->hot_expert > 1 ? "" : " (no published routing statistics: balanced)");
  }
  o << (e.fitted.empty() ? ", not fitted" : ", fitted on the validation suite");
  return o.str();
}

std::string check_report(const scenario::Scenario& sc) {
  std::ostringstream o;
  const auto& m = sc.memory;
  auto b = [](double v) { return units::format(v, Dim::kBytes); };
  o << sc.file << ": OK — " << sc.name << "\n";
  o << "  model      " << sc.model.name << " (" << units::format_count(sc.model.derived_params())
    << " params"
    << (sc.model.is_moe() ? ", " + units::format_count(sc.model.derived_active_params()) + " active"
                          : "")
    << "), weights " << sc.weights_dtype << ", activations " << sc.activations_dtype << ", KV "
    << sc.kv_dtype << " (GEMMs on " << hw::dtype_name(sc.prec.math) << ")\n";
  o << "  hardware   " << sc.replicas << " replica(s) × " << sc.par.gpus() << " × " << sc.gpu.name
    << " (tp " << sc.par.tp << ", pp " << sc.par.pp << ", dp_attention " << sc.par.dp_attention
    << (sc.par.expert_parallel ? ", expert-parallel" : "") << ")"
    << (sc.node ? ", node " + sc.node->id : std::string()) << "\n";
  o << "  engine     " << engine_line(sc) << "\n";
  o << "  efficiency " << sc.efficiency_source << "\n";
  o << "  memory/GPU usable " << b(m.usable_bytes) << " = weights " << b(m.weight_bytes)
    << " + activations " << b(m.activation_bytes) << " + reserve " << b(m.reserve_bytes)
    << " + KV cache " << b(m.kv_bytes) << "\n";
  o << "  KV cache   " << sc.vllm.kv_blocks << " blocks × " << sc.vllm.block_tokens << " tokens = "
    << units::format_count(static_cast<double>(sc.vllm.kv_blocks * sc.vllm.block_tokens))
    << " tokens per replica\n";
  if (sc.network_model != "analytic" || sc.fabric.regions > 1) {
    o << "  network    " << sc.network_model;
    if (sc.network_model == "simgrid")
      o << ", fabric of " << sc.fabric.gpus << " GPUs (" << sc.fabric.gpus / sc.fabric.gpus_per_node
        << " nodes, " << sc.fabric.nodes_per_leaf << " per leaf, oversubscription "
        << sc.fabric.oversubscription << ":1)";
    if (sc.prefill_pool)
      o << (sc.network_model == "simgrid" ? "; KV transfers live" : "; KV transfers α-β");
    if (sc.fabric.regions > 1)
      o << "; prefill pool in region 0, decode pool in region 1, WAN "
        << units::format(sc.fabric.wan.bw_bytes_per_s, Dim::kBandwidth) << " one way, latency "
        << units::format(sc.fabric.wan.latency_s, Dim::kTime);
    if (sc.network_model == "simgrid")
      o << (sc.live_alltoall ? "; expert all-to-all live" : "; collectives from the tables");
    o << "\n";
  }
  o << "  workload   " << sc.workload_description << "\n";
  if (sc.fleet) {
    // The lines above are the scenario's defaults; each pool has its own fit.
    o << "  fleet      " << sc.fleet->regions.size() << " regions; pools (full scale):\n";
    for (const auto& r : sc.fleet->regions)
      for (const auto& p : r.pools) {
        const double kv_tokens =
            static_cast<double>(p.pool.memory.kv_blocks * p.pool.vllm.block_tokens);
        o << "    " << p.name << ": " << p.pool.replicas
          << (p.spares ? " + " + std::to_string(p.spares) + " spare" : std::string()) << " × "
          << p.pool.par.gpus() << " × " << p.pool.gpu.id << ", " << p.pool.model.id << ", KV "
          << units::format_count(kv_tokens) << " tokens/replica, load time "
          << units::format(p.load_time_s, Dim::kTime);
        if (p.failure_rate_per_s > 0)
          o << ", MTBF/replica " << units::format(1.0 / p.failure_rate_per_s, Dim::kTime);
        o << "\n";
      }
  }
  return o.str();
}

void write_json(const json& j, const std::string& path) {
  // Strings are checked for UTF-8 where they are read; replacing what slipped through keeps
  // the dump from throwing.
  files::write_file_atomically(path, j.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
}

std::string RequestRow::status() const {
  return rejected ? std::string("rejected_") + serving::reject_reason_name(*rejected)
                  : std::string("completed");
}

RequestRow request_row(const serving::RequestRecord& rec) {
  const auto& r = *rec.spec;
  RequestRow row;
  row.id = r.id;
  row.replica = rec.replica;
  row.cls = r.cls;
  row.arrival_s = ns_to_seconds(r.arrival_ns);
  row.prompt_tokens = r.prompt_tokens;
  row.output_tokens = r.output_tokens;
  row.queue_s = ns_to_seconds(rec.scheduled_ns - r.arrival_ns);
  row.ttft_s = ns_to_seconds(rec.first_token_ns - r.arrival_ns);
  row.tpot_s = r.output_tokens > 1
                   ? ns_to_seconds(rec.done_ns - rec.first_token_ns) / (r.output_tokens - 1)
                   : 0.0;
  row.e2e_s = ns_to_seconds(rec.done_ns - r.arrival_ns);
  row.preemptions = rec.preemptions;
  return row;
}

RequestRow request_row(const workload::RequestSpec& r, int replica, serving::RejectReason why) {
  RequestRow row;
  row.id = r.id;
  row.replica = replica;
  row.cls = r.cls;
  row.arrival_s = ns_to_seconds(r.arrival_ns);
  row.prompt_tokens = r.prompt_tokens;
  row.output_tokens = r.output_tokens;
  row.rejected = why;
  return row;
}

RequestsCsv::RequestsCsv(const std::string& path) : file_(path), out_(file_.stream()) {
  out_ << "id,replica,arrival_s,prompt_tokens,output_tokens,queue_s,ttft_s,tpot_s,e2e_s,"
          "preemptions,status\n";
  out_.precision(9);
}

void RequestsCsv::write(const RequestRow& row) {
  out_ << row.id << ',' << row.replica << ',' << row.arrival_s << ',' << row.prompt_tokens << ','
       << row.output_tokens;
  for (const double v : {row.queue_s, row.ttft_s, row.tpot_s, row.e2e_s}) {
    out_ << ',';
    if (!std::isnan(v)) out_ << v;
  }
  out_ << ',' << row.preemptions << ',' << row.status() << '\n';
  file_.check();
}

void RequestsCsv::on_completion(const serving::RequestRecord& rec) { write(request_row(rec)); }

void RequestsCsv::on_reject(const workload::RequestSpec& r, int replica, serving::RejectReason why,
                            SimTime) {
  write(request_row(r, replica, why));
}

std::string capacity_text(const app::Capacity& c) {
  auto x = [](double v) { return general(v, 3) + "x"; };
  auto probe_at = [&c](double scale) -> const app::CapacityProbe& {
    for (const auto& p : c.probes)
      if (p.scale == scale) return p;
    return c.probes.back();
  };
  const std::string indent = "\n              ";
  std::ostringstream o;
  if (c.scale_met <= 0) {
    o << "capacity    misses the SLO even at " << x(c.probes.back().scale)
      << " this traffic: " << c.probes.back().misses << "\n";
    return o.str();
  }
  o << "capacity    meets the SLO up to " << x(c.scale_met) << " this traffic ("
    << human(c.throughput_at_capacity_per_s) << " req/s completed; " << pct(c.target)
    << " of requests within the plain targets, every percentile target)" << indent;
  if (c.scale_missed > 0)
    o << "at " << x(c.scale_missed) << " it misses: " << probe_at(c.scale_missed).misses;
  else
    o << "still meets it at " << x(c.scale_met) << ", the most tried";
  o << indent << "headroom now: "
    << (c.headroom() >= 0
            ? "+" + pct(c.headroom()) + " more traffic"
            : "none: the traffic as written is " + x(1.0 / c.scale_met) + " what meets the SLO")
    << " (\"running a batch\" above is busy time, not load)\n";
  return o.str();
}

nlohmann::json capacity_json(const app::Capacity& c) {
  nlohmann::json j = {{"target_slo_attainment", c.target},
                      {"scale_met", c.scale_met},
                      {"scale_missed", c.scale_missed},
                      {"headroom", c.scale_met > 0 ? c.headroom() : -1.0},
                      {"requests_per_s_at_capacity", c.throughput_at_capacity_per_s}};
  j["probes"] = nlohmann::json::array();
  for (const auto& p : c.probes)
    j["probes"].push_back({{"scale", p.scale},
                           {"met", p.met},
                           {"misses", p.misses},
                           {"requests_per_s", p.throughput_per_s}});
  return j;
}

}  // namespace fleetsim::reports
