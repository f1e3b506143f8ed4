#include "sim/scenario/scenario.h"

#include <filesystem>

#include "hw_models/error.h"
#include "sim/serving/registry.h"

namespace fleetsim::scenario {

double dtype_bytes(const std::string& dtype) {
  if (dtype == "fp32") return 4;
  if (dtype == "bf16" || dtype == "fp16") return 2;
  if (dtype == "fp8" || dtype == "int8") return 1;
  if (dtype == "int4" || dtype == "fp4") return 0.5;
  throw InputError("unknown dtype '" + dtype + "'", "one of fp32, bf16, fp16, fp8, int8, int4, fp4");
}

std::unique_ptr<workload::Workload> Scenario::make_workload(uint64_t seed_value) const {
  yaml::Map section = *workload_section;  // a fresh copy: from_yaml records the keys it reads
  return workload::Workload::from_yaml(section, RngStreams(seed_value), base_dir);
}

Scenario load(const std::string& file, const std::vector<std::string>& overrides,
              std::optional<uint64_t> seed, const hw::Catalog& catalog) {
  yaml::Map root = yaml::load_file_with_overrides(file, overrides);
  {
    // Unknown top-level keys first, so a misspelt section is reported as such ("did you
    // mean 'serving'?") rather than as the correct one missing.
    yaml::Map top = root;
    for (const char* k : {"name", "description", "seed", "model", "hardware", "precision",
                          "efficiency", "serving", "workload", "slo"}) {
      top.has(k);
    }
    top.finish();
  }
  Scenario sc;
  sc.file = file;
  sc.overrides = overrides;
  const std::filesystem::path path(file);
  sc.base_dir = path.parent_path().string();
  sc.name = root.str_or("name", path.stem().string());
  sc.description = root.str_or("description", "");
  sc.seed = static_cast<uint64_t>(root.integer_or("seed", 0, INT64_MAX, 1));
  if (seed) sc.seed = *seed;

  // Model and hardware from the catalog.
  const std::string model_id = root.str("model");
  try {
    sc.model = catalog.model(model_id);
  } catch (const InputError& e) {
    throw root.locate("model", e);
  }
  {
    yaml::Map hw = root.map("hardware");
    const std::string gpu_id = hw.str("gpu");
    try {
      sc.gpu = catalog.gpu(gpu_id);
    } catch (const InputError& e) {
      throw hw.locate("gpu", e);
    }
    sc.par.tp = static_cast<int>(hw.integer_or("tp", 1, 64, 1));
    if (sc.model.heads % sc.par.tp != 0) {
      hw.fail("tp", "tensor parallelism " + std::to_string(sc.par.tp) + " does not divide the " +
                        std::to_string(sc.model.heads) + " attention heads of " + sc.model.id,
              "use a divisor of the head count, e.g. 1, 2, 4 or 8");
    }
    hw.finish();
  }
  const std::vector<std::string> dtypes = {"fp32", "bf16", "fp16", "fp8", "int8", "int4", "fp4"};
  if (auto pr = root.map_opt("precision")) {
    sc.weights_dtype = pr->choice_or("weights", dtypes, "bf16");
    sc.kv_dtype = pr->choice_or("kv", {"fp32", "bf16", "fp16", "fp8", "int8"}, "bf16");
    pr->finish();
  }
  sc.prec.weight_bytes = dtype_bytes(sc.weights_dtype);
  sc.prec.kv_bytes = dtype_bytes(sc.kv_dtype);
  sc.prec.act_bytes = 2;

  // Efficiency: the GPU's measured figures unless the scenario overrides them.
  sc.eff.compute = sc.gpu.compute_efficiency;
  sc.eff.memory = sc.gpu.memory_efficiency;
  sc.eff.link_bw_bytes_per_s = sc.gpu.scaleup_bw_bytes_per_s;
  sc.eff.allreduce_latency_s = sc.gpu.scaleup_latency_s;
  sc.efficiency_source = "catalog (" + sc.gpu.id + ")";
  if (auto ef = root.map_opt("efficiency")) {
    if (ef->has("compute") || ef->has("memory")) sc.efficiency_source = "scenario override";
    sc.eff.compute = ef->number_or("compute", 0.01, 1.0, sc.eff.compute);
    sc.eff.memory = ef->number_or("memory", 0.01, 1.0, sc.eff.memory);
    sc.eff.iteration_overhead_s = ef->quantity_or("iteration_overhead", units::Dim::kTime, 0.0);
    ef->finish();
  }

  // Serving.
  {
    yaml::Map sv = root.map("serving");
    sc.replicas = static_cast<int>(sv.integer_or("replicas", 1, 1'000'000, 1));
    sc.router = sv.choice_or("router", serving::router_names(), "round-robin");
    sc.policy = sv.choice_or("policy", serving::policy_names(), "vllm");
    sc.vllm.chunked_prefill = sv.boolean_or("chunked_prefill", false);
    sc.vllm.block_tokens = static_cast<int>(sv.integer_or("block_tokens", 1, 1024, 16));
    sc.vllm.max_num_seqs = sv.integer_or("max_num_seqs", 1, 65536, 256);
    sc.vllm.max_batched_tokens = sv.integer_or("max_batched_tokens", 1, 1 << 24, 8192);
    sc.vllm.fast_forward = sv.boolean_or("fast_forward", true);
    sc.gpu_memory_utilization = sv.number_or("gpu_memory_utilization", 0.05, 1.0, 0.9);
    sc.runtime_reserve_bytes = sv.quantity_or("runtime_reserve", units::Dim::kBytes, 1.0 * (1 << 30));
    if (sc.vllm.chunked_prefill && sc.vllm.max_batched_tokens < sc.vllm.max_num_seqs) {
      sv.fail("max_batched_tokens",
              "with chunked prefill the token budget (" + std::to_string(sc.vllm.max_batched_tokens) +
                  ") must be at least max_num_seqs (" + std::to_string(sc.vllm.max_num_seqs) + ")",
              "every running sequence decodes one token per iteration; raise max_batched_tokens "
              "or lower max_num_seqs");
    }
    sc.vllm.max_context_tokens = sc.model.max_context_tokens;
    // Memory fit: what is left for the KV cache after weights, activations and reserve.
    try {
      sc.memory = hw::fit_memory(sc.model, sc.par, sc.gpu, sc.prec, sc.gpu_memory_utilization,
                                 sc.runtime_reserve_bytes, sc.vllm.max_batched_tokens,
                                 sc.vllm.block_tokens, sc.vllm.block_tokens);
    } catch (const InputError& e) {
      throw root.locate("model", e);
    }
    sc.vllm.kv_blocks = sc.memory.kv_blocks;
    sv.finish();
  }

  if (auto slo = root.map_opt("slo")) {
    if (slo->has("ttft")) sc.slo_ttft_s = slo->quantity("ttft", units::Dim::kTime);
    if (slo->has("tpot")) sc.slo_tpot_s = slo->quantity("tpot", units::Dim::kTime);
    slo->finish();
  }

  // Workload: validated now (one generator, strict about unknown keys), rebuilt per run.
  sc.workload_section = root.map("workload");
  {
    yaml::Map copy = *sc.workload_section;
    sc.workload_description = workload::Workload::from_yaml(copy, RngStreams(sc.seed), sc.base_dir)->describe();
    copy.finish();
  }
  root.finish();
  return sc;
}

}  // namespace fleetsim::scenario
