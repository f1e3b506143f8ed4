#include "sim/scenario/scenario.h"

#include <cstdlib>
#include <filesystem>

#include "hw_models/error.h"
#include "sim/network/simgrid_network.h"
#include "sim/network/table_network.h"
#include "sim/scenario/schema.h"
#include "sim/serving/registry.h"

namespace fleetsim::scenario {

std::unique_ptr<workload::Workload> Scenario::make_workload(uint64_t seed_value) const {
  yaml::Map section = *workload_section;  // a fresh copy: from_yaml records the keys it reads
  return workload::Workload::from_yaml(section, RngStreams(seed_value), base_dir);
}

namespace {

hw::DType dtype_of(yaml::Map& m, const yaml::Key& key, const std::string& fallback,
                   std::string* name) {
  *name = m.choice_or(key, fallback);
  hw::DType d;
  hw::parse_dtype(*name, &d);
  return d;
}

}  // namespace

namespace {

// network: {model: analytic | simgrid, oversubscription, nodes_per_leaf}: the
// fabric from the node and its NIC, and the NetworkModel the performance model asks.
void load_network(yaml::Map& root, Scenario& sc, const hw::LinkLevel& up, const hw::LinkLevel& out,
                  int domain, const hw::Catalog& catalog) {
  hw::Fabric& fab = sc.fabric;
  fab.domain_gpus = domain;
  fab.gpus_per_node = sc.node ? sc.node->gpus_per_node : domain;
  fab.nics_per_node = sc.node ? sc.node->nics_per_node : 0;
  fab.scaleup = up;
  if (sc.node && sc.node->nics_per_node > 0) {
    const hw::InterconnectSpec& nic = catalog.interconnect(sc.node->nic);
    fab.nic = {nic.latency_s, nic.bw_bytes_per_s};
  }
  fab.gpus = std::max(domain, fab.gpus_per_node);
  std::optional<yaml::Map> nw = root.map_opt(schema::key("network"));
  if (nw) {
    sc.network_model = nw->choice_or(schema::key("network.model"));
    if (nw->has(schema::key("network.oversubscription"))) {
      // A ratio: 2, 2.0 or "2:1" (leaf downlink bandwidth over uplink bandwidth).
      const std::string text = nw->str("oversubscription");
      char* end = nullptr;
      double o = std::strtod(text.c_str(), &end);
      if (end != text.c_str() && *end == ':') {
        const char* den = end + 1;
        const double d = std::strtod(den, &end);
        o = (end != den && d > 0) ? o / d : -1;
      }
      if (end == text.c_str() || *end != '\0' || !(o >= 1.0) || !(o <= 1000.0))
        nw->fail("oversubscription",
                 "expected a ratio from 1 to 1000 (leaf downlink over uplink bandwidth), got '" +
                     text + "'",
                 "1 is a non-blocking fat tree; write 2:1 oversubscription as 2 or \"2:1\"");
      fab.oversubscription = o;
    }
    fab.nodes_per_leaf = static_cast<int>(nw->integer_or(schema::key("network.nodes_per_leaf")));
    // Regions joined by WAN links: the disaggregated pools sit in different regions
    // (checked with the serving section, load_regions_and_alltoall).
    fab.regions = static_cast<int>(nw->integer_or(schema::key("network.regions")));
    if (auto wan = nw->map_opt(schema::key("network.wan"))) {
      if (fab.regions < 2)
        nw->fail("wan", "a WAN link joins regions, and there is one",
                 "add regions: 2, or drop wan");
      fab.wan.bw_bytes_per_s = wan->quantity(schema::key("network.wan.bandwidth"));
      fab.wan.latency_s = wan->quantity(schema::key("network.wan.latency"));
      wan->finish();
    } else if (fab.regions > 1) {
      nw->fail("regions", "two regions need the WAN link between them",
               "add wan: {bandwidth: 400Gbps, latency: 10ms} (one direction, one-way latency)");
    }
    if (fab.regions > 1 && fab.nics_per_node == 0)
      nw->fail("regions",
               "node '" + (sc.node ? sc.node->id : std::string("?")) +
                   "' has no scale-out NIC to reach another region",
               "pick a node with NICs");
    // Resolved once the pools are known (load_regions_and_alltoall).
    if (nw->has(schema::key("network.live_alltoall"))) {
      if (nw->boolean_or(schema::key("network.live_alltoall"), false) &&
          sc.network_model != "simgrid")
        nw->fail("live_alltoall", "the live all-to-all runs on the SimGrid fabric",
                 "set model: simgrid, or drop live_alltoall");
    }
    nw->finish();
  }
  fab.gpus *= fab.regions;  // a node per region at least (size_simgrid_fabric sizes the run's)
  if (sc.network_model != "simgrid") {
    sc.dep.network = std::make_shared<const hw::AnalyticNetwork>(up, out, fab.oversubscription);
    return;
  }
  if (!net::simgrid_available())
    nw->fail("model", "this fleetsim was built without SimGrid",
             "install libsimgrid-dev and rebuild, or use network: {model: analytic}");
  try {
    fab.validate();
  } catch (const std::invalid_argument& e) {
    nw->fail("model", std::string("SimGrid cannot build this node's fabric: ") + e.what(),
             "use network: {model: analytic}");
  }
  // The tables are built when a cost is first asked (net::DeferredTableNetwork): loading
  // checks what it can and records the fabric and groups, and starts no process and writes
  // no file.
  const std::vector<hw::CommGroup> groups =
      net::groups_for(sc.par.tp, sc.par.gpus_per_stage(), domain);
  try {
    net::TableNetwork::check(fab, groups);
  } catch (const std::exception& e) {
    nw->fail("model", e.what(), "use network: {model: analytic}");
  }
  const InputError at = nw->locate("model", InputError(""));
  sc.dep.network = std::make_shared<const net::DeferredTableNetwork>(fab, groups, at.file(),
                                                                     at.line(), at.field());
}

}  // namespace

namespace {

// Offloaded weights live in the host memory of the replica's servers, each server holding
// its GPUs' shares. 10 % of host memory is left to the OS and the serving engine
// (ASSUMPTION: a round figure; the engine's own pinned buffers are not modelled). `where`
// is the map the error names: the offload section that put the weights there.
void check_host_memory(const hw::MemoryFit& m, const hw::Parallelism& par,
                       const std::optional<hw::NodeSpec>& node, const yaml::Map& where,
                       const hw::Offload& off, const std::string& what) {
  if (m.host_weight_bytes <= 0 || !node || node->host_memory_bytes <= 0) return;
  const int per_server = std::min(par.gpus(), std::max(1, node->gpus_per_node));
  const double need = m.host_weight_bytes * per_server;
  const double usable = 0.9 * node->host_memory_bytes;
  if (need <= usable) return;
  where.fail(off.experts_on_host > 0 ? "experts_on_host" : "layers_on_host",
             "the offloaded weights need " + units::format(need, units::Dim::kBytes) +
                 " of host memory per server" + what + ", more than the " +
                 units::format(usable, units::Dim::kBytes) + " usable of " + node->id + "'s " +
                 units::format(node->host_memory_bytes, units::Dim::kBytes) +
                 " (90 %: the rest is the OS's and the engine's)",
             "offload fewer layers or experts, quantize the weights, or pick a node with more "
             "host memory (hardware.node)");
}

}  // namespace

void load_deployment(yaml::Map& root, Scenario& sc, const hw::Catalog& catalog,
                     std::shared_ptr<const hw::CalibrationSet> calibration) {
  yaml::Map hw = root.map(schema::key("hardware"));
  const std::string gpu_id = hw.str(schema::key("hardware.gpu"));
  try {
    sc.gpu = catalog.gpu(gpu_id);
  } catch (const InputError& e) {
    throw hw.locate("gpu", e);
  }
  if (hw.has(schema::key("hardware.node"))) {
    try {
      sc.node = catalog.node(hw.str(schema::key("hardware.node")));
    } catch (const InputError& e) {
      throw hw.locate("node", e);
    }
    if (sc.node->gpu != sc.gpu.id)
      hw.fail("node", "node '" + sc.node->id + "' holds " + sc.node->gpu + ", not " + sc.gpu.id,
              "pick a node built from " + sc.gpu.id + ", or drop 'node' to use the default");
  } else if (const hw::NodeSpec* n = catalog.default_node_for(sc.gpu.id)) {
    sc.node = *n;
  }
  sc.par.tp = static_cast<int>(hw.integer_or(schema::key("hardware.tp")));
  sc.par.pp = static_cast<int>(hw.integer_or(schema::key("hardware.pp")));
  sc.par.dp_attention = static_cast<int>(hw.integer_or(schema::key("hardware.dp_attention")));
  sc.par.expert_parallel = hw.boolean_or(schema::key("hardware.expert_parallel"));
  sc.par.redundant_experts =
      static_cast<int>(hw.integer_or(schema::key("hardware.redundant_experts")));
  sc.par.two_batch_overlap = hw.boolean_or(schema::key("hardware.two_batch_overlap"));
  for (const char* k : {"redundant_experts", "two_batch_overlap"})
    if (hw.has(k) && !sc.par.expert_parallel)
      hw.fail(k, std::string(k) + " applies to expert parallelism", "set expert_parallel: true");
  // Under attention TP every GPU holds every token and the MoE all-reduces: there is no
  // all-to-all for a second micro-batch to hide.
  if (sc.par.two_batch_overlap && sc.par.dp_attention <= 1)
    hw.fail("two_batch_overlap",
            "two_batch_overlap hides the expert-parallel all-to-all, which runs only under "
            "attention data parallelism (under attention TP the MoE output is all-reduced)",
            "set dp_attention > 1, or drop two_batch_overlap");
  if (sc.model.heads % sc.par.tp != 0)
    hw.fail("tp",
            "tensor parallelism " + std::to_string(sc.par.tp) + " does not divide the " +
                std::to_string(sc.model.heads) + " attention heads of " + sc.model.id,
            "use a divisor of the head count, e.g. 1, 2, 4 or 8");
  if (sc.par.pp > sc.model.layers)
    hw.fail("pp",
            "pipeline parallelism " + std::to_string(sc.par.pp) + " exceeds the " +
                std::to_string(sc.model.layers) + " layers of " + sc.model.id,
            "use pp <= " + std::to_string(sc.model.layers));
  if (sc.par.expert_parallel && !sc.model.is_moe())
    hw.fail("expert_parallel", sc.model.id + " is a dense model: it has no experts",
            "drop expert_parallel");
  if (sc.par.expert_parallel && sc.model.moe->experts % sc.par.gpus_per_stage() != 0)
    hw.fail("expert_parallel",
            std::to_string(sc.model.moe->experts) +
                " experts do not split evenly over tp x "
                "dp_attention = " +
                std::to_string(sc.par.gpus_per_stage()) + " GPUs",
            "use a GPU count per stage that divides the expert count");
  if (sc.par.redundant_experts > 0 &&
      (sc.model.moe->experts + sc.par.redundant_experts) % sc.par.gpus_per_stage() != 0)
    hw.fail("redundant_experts",
            std::to_string(sc.model.moe->experts) + " experts + " +
                std::to_string(sc.par.redundant_experts) +
                " redundant ones do not split evenly over " +
                std::to_string(sc.par.gpus_per_stage()) + " GPUs",
            "use a multiple of the GPU count, e.g. " + std::to_string(sc.par.gpus_per_stage()));
  hw.finish();

  // Precision. FP8 weights on a GPU with FP8 units default to FP8 activations (W8A8, as
  // vLLM runs FP8 checkpoints on Hopper and later); others default to 16-bit activations.
  hw::DType w = hw::DType::kBf16, a = hw::DType::kBf16, kv = hw::DType::kBf16;
  std::optional<yaml::Map> pr = root.map_opt(schema::key("precision"));
  const yaml::Key& weights = schema::key("precision.weights");
  if (pr) w = dtype_of(*pr, weights, weights.fallback, &sc.weights_dtype);
  const bool has_fp8 = sc.gpu.fp8_flops_per_s > 0;
  const std::string act_default = (w == hw::DType::kFp8 && has_fp8) ? "fp8" : "bf16";
  if (pr) {
    a = dtype_of(*pr, schema::key("precision.activations"), act_default, &sc.activations_dtype);
    const yaml::Key& kv_key = schema::key("precision.kv");
    kv = dtype_of(*pr, kv_key, kv_key.fallback, &sc.kv_dtype);
    pr->finish();
  } else {
    sc.activations_dtype = act_default;
    hw::parse_dtype(act_default, &a);
  }
  sc.prec = hw::Precision::of(w, a, kv);

  // Efficiency: the GPU's measured figures and the serving engine's overhead and kernel
  // terms, unless the scenario overrides them.
  sc.eff = hw::catalog_efficiency(sc.gpu);
  // On AMD GPUs an engine runs its ROCm build, on Apple GPUs its Metal backend: other
  // kernels, a profile of their own.
  if (sc.gpu.vendor == "AMD" && !sc.engine.rocm_variant.empty())
    sc.engine = catalog.engine(sc.engine.rocm_variant);
  else if (sc.gpu.vendor == "Apple" && !sc.engine.metal_variant.empty())
    sc.engine = catalog.engine(sc.engine.metal_variant);
  hw::apply_engine(sc.engine, &sc.eff);
  sc.efficiency_source = "catalog (" + sc.gpu.id + ", " + sc.gpu.efficiency_basis + ")";
  bool use_calibration = true;
  if (auto ef = root.map_opt(schema::key("efficiency"))) {
    const yaml::Key& compute = schema::key("efficiency.compute");
    const yaml::Key& memory = schema::key("efficiency.memory");
    if (ef->has(compute) || ef->has(memory)) sc.efficiency_source = "scenario override";
    sc.eff.compute = ef->number_or(compute, sc.eff.compute);
    sc.eff.memory = ef->number_or(memory, sc.eff.memory);
    sc.eff.iteration_overhead_s =
        ef->quantity_or(schema::key("efficiency.iteration_overhead"), sc.eff.iteration_overhead_s);
    sc.eff.per_sequence_overhead_s = ef->quantity_or(
        schema::key("efficiency.per_sequence_overhead"), sc.eff.per_sequence_overhead_s);
    sc.eff.kernel_launch_s =
        ef->quantity_or(schema::key("efficiency.kernel_launch"), sc.eff.kernel_launch_s);
    sc.eff.min_kernel_s =
        ef->quantity_or(schema::key("efficiency.min_kernel"), sc.eff.min_kernel_s);
    sc.eff.operator_latency_s =
        ef->quantity_or(schema::key("efficiency.operator_latency"), sc.eff.operator_latency_s);
    sc.eff.cuda_graphs = ef->boolean_or(schema::key("efficiency.cuda_graphs"));
    sc.eff.moe_imbalance =
        ef->number_or(schema::key("efficiency.moe_imbalance"), sc.eff.moe_imbalance);
    sc.eff.kernel_efficiency =
        ef->number_or(schema::key("efficiency.kernel_efficiency"), sc.eff.kernel_efficiency);
    use_calibration = ef->boolean_or(schema::key("efficiency.calibration"));
    ef->finish();
  }

  // Offload.
  if (auto of = root.map_opt(schema::key("offload"))) {
    // At most the model's layers: a bound the table cannot hold, checked the same way.
    yaml::Key layers = schema::key("offload.layers_on_host");
    layers.max = sc.model.layers;
    sc.offload.layers_on_host = static_cast<int>(of->integer_or(layers));
    sc.offload.experts_on_host = of->number_or(schema::key("offload.experts_on_host"));
    if (sc.offload.experts_on_host > 0 && !sc.model.is_moe())
      of->fail("experts_on_host", sc.model.id + " is a dense model: it has no experts",
               "use layers_on_host for a dense model");
    sc.offload.expert_popularity_zipf =
        of->number_or(schema::key("offload.expert_popularity_zipf"));
    sc.offload.mode = of->choice_or(schema::key("offload.mode")) == "stream"
                          ? hw::Offload::Mode::kStream
                          : hw::Offload::Mode::kHostCompute;
    if (sc.offload.mode == hw::Offload::Mode::kHostCompute &&
        !(sc.node && sc.node->host_flops_per_s > 0 && sc.node->host_memory_bw_bytes_per_s > 0))
      of->fail("mode", "host_compute needs the node's host_compute and host_memory_bandwidth",
               "pick a node that gives them (hardware.node), or use mode: stream");
    of->finish();
  }
  const hw::InterconnectSpec& host = catalog.interconnect(sc.gpu.host_link);
  sc.offload.host_link = {host.latency_s, host.bw_bytes_per_s};
  if (sc.node) {
    sc.offload.host_memory_bw_bytes_per_s = sc.node->host_memory_bw_bytes_per_s;
    sc.offload.host_flops_per_s = sc.node->host_flops_per_s;
  }

  // Network: the GPU's scale-up fabric inside a domain, the node's NICs between domains.
  hw::LinkLevel up{sc.eff.allreduce_latency_s, sc.eff.link_bw_bytes_per_s};
  hw::LinkLevel out;
  int domain = std::max(8, sc.par.gpus());
  if (sc.node) {
    domain = sc.node->scaleup_domain_gpus;
    if (sc.node->nics_per_node > 0) {
      const hw::InterconnectSpec& nic = catalog.interconnect(sc.node->nic);
      out = {nic.latency_s, nic.bw_bytes_per_s * sc.node->nics_per_node / sc.node->gpus_per_node};
    }
    if (sc.par.gpus() > domain && sc.node->nics_per_node == 0)
      root.fail("hardware",
                std::to_string(sc.par.gpus()) + " GPUs per replica span more than one " +
                    sc.node->id + " (" + std::to_string(domain) +
                    " GPUs per scale-up domain) and the node has no NICs",
                "use at most " + std::to_string(domain) + " GPUs per replica on this node");
  }

  sc.dep.model = std::make_shared<const hw::ModelSpec>(sc.model);
  sc.dep.gpu = std::make_shared<const hw::GpuSpec>(sc.gpu);
  sc.dep.par = sc.par;
  sc.dep.prec = sc.prec;
  sc.dep.eff = sc.eff;
  sc.dep.scaleup_domain_gpus = domain;
  load_network(root, sc, up, out, domain, catalog);
  sc.dep.offload = sc.offload;
  if (use_calibration && calibration) {
    sc.dep.bind_calibration(calibration);
    // This GPU's tables, and its compute twin's whose rows stand in for missing ones.
    std::string used;
    for (const auto& t : calibration->tables())
      if (t.gpu == sc.gpu.id || (t.gpu == sc.gpu.compute_twin && sc.dep.uses_table(t)))
        used += (used.empty() ? "" : ", ") + std::filesystem::path(t.file).filename().string() +
                (t.gpu == sc.gpu.id ? "" : " (compute twin " + t.gpu + ")");
    if (!used.empty()) {
      sc.calibration_used = used;
      sc.efficiency_source += "; calibrated by " + used;
    } else {
      sc.dep.bind_calibration(nullptr);
    }
  }
}

Scenario load(const std::string& file, const std::vector<std::string>& overrides,
              std::optional<uint64_t> seed, const hw::Catalog& catalog,
              std::shared_ptr<const hw::CalibrationSet> calibration) {
  yaml::Map root = yaml::load_file_with_overrides(file, overrides);
  // Every --set names a declared key: a misspelt one is reported with the nearest key and
  // its type, range and default, before any section is read.
  for (const auto& o : overrides) schema::check_override(o.substr(0, o.find('=')));
  return load_map(std::move(root), file, overrides, seed, catalog, std::move(calibration));
}

std::unique_ptr<fleet::Population> Scenario::make_population(uint64_t seed_value) const {
  yaml::Map section = *fleet->users;
  std::vector<fleet::RegionTraffic> traffic;
  for (const auto& r : fleet->regions) traffic.push_back(r.traffic);
  return std::make_unique<fleet::Population>(section, std::move(traffic), RngStreams(seed_value),
                                             base_dir);
}

Pool load_pool(const yaml::Map& root, yaml::Map& section, const std::string& override_key,
               const hw::ModelSpec& model, const Scenario& sc, const hw::Catalog& catalog,
               const std::shared_ptr<const hw::CalibrationSet>& calibration, const char* what,
               const DraftSettings* draft) {
  Pool pool;
  pool.model = model;
  YAML::Node merged = YAML::Clone(root.node());
  if (auto ph = section.map_opt(override_key))
    for (const auto& kv : ph->node()) merged["hardware"][kv.first.as<std::string>()] = kv.second;
  // A fleet pool may also set its own precision, efficiency and offload sections.
  if (override_key == "hardware")
    for (const char* k : {"precision", "efficiency", "offload"})
      if (section.has(k)) merged[k] = YAML::Clone(section.node()[k]);
  yaml::Map mroot(merged, std::make_shared<yaml::Source>(yaml::Source{root.file(), {}}), "");
  Scenario tmp;
  tmp.model = model;
  tmp.engine = sc.engine;
  load_deployment(mroot, tmp, catalog, calibration);
  pool.gpu = tmp.gpu;
  pool.node = tmp.node;
  pool.par = tmp.par;
  pool.dep = tmp.dep;
  pool.weights_dtype = tmp.weights_dtype;
  pool.kv_dtype = tmp.kv_dtype;
  pool.efficiency_source = tmp.efficiency_source;
  if (sc.lora_rank > 0 && model.id == sc.model.id) {
    // Multi-LoRA in a pool of the scenario's model: its adapter slots take GPU memory, and
    // a load moves one adapter over the pool's host link.
    const double bytes = hw::lora_adapter_bytes(model, sc.lora_rank, pool.dep.prec.weight_bytes);
    pool.dep.extra_weight_bytes_per_gpu += sc.vllm.lora_slots * bytes / pool.par.gpus();
    pool.lora_rank = sc.lora_rank;
  }
  if (draft) {
    if (!draft->mtp && draft->draft.heads % pool.par.tp != 0)
      section.fail(override_key,
                   "tp " + std::to_string(pool.par.tp) + " does not divide the draft's " +
                       std::to_string(draft->draft.heads) + " heads [" + what + "]",
                   "give this pool a tp that divides them, or another draft");
    pool.spec = attach_speculative(draft->draft, draft->mtp, draft->k, pool.dep);
  }
  // The scenario's limits, or the engine's per-rank ones times this pool's ranks.
  const int64_t ranks = pool.par.dp_attention;
  const int64_t max_seqs =
      sc.engine_seqs_per_rank > 0 ? ranks * sc.engine_seqs_per_rank : sc.vllm.max_num_seqs;
  const int64_t max_tokens = sc.engine_tokens_per_rank > 0 ? ranks * sc.engine_tokens_per_rank
                                                           : sc.vllm.max_batched_tokens;
  try {
    pool.memory = hw::fit_memory(pool.dep, sc.gpu_memory_utilization, sc.runtime_reserve_bytes,
                                 max_tokens, sc.vllm.block_tokens, sc.vllm.block_tokens);
  } catch (const InputError& e) {
    throw section.locate(override_key,
                         InputError(e.message() + " [memory fit, " + what + "]", e.hint()));
  }
  // A fleet pool may have an offload section of its own; the other pools (prefill, cascade)
  // take the scenario's.
  if (override_key == "hardware" && section.has("offload"))
    check_host_memory(pool.memory, pool.par, pool.node, section.map("offload"), pool.dep.offload,
                      std::string(" [") + what + "]");
  else if (yaml::Map r = root; r.has("offload"))
    check_host_memory(pool.memory, pool.par, pool.node, r.map("offload"), pool.dep.offload,
                      std::string(" [") + what + "]");
  pool.vllm = sc.vllm;
  pool.vllm.max_num_seqs = max_seqs;
  pool.vllm.max_batched_tokens = max_tokens;
  if (draft) {
    pool.vllm.spec_k = draft->k;
    pool.vllm.spec_acceptance = draft->acceptance;
    pool.vllm.spec_acceptance_spread = draft->spread;
  } else {
    // No draft here: the pool decodes one token per iteration (its step model has no
    // draft to run; a cascade's small model keeps none of the large model's).
    pool.vllm.spec_k = 0;
  }
  pool.vllm.kv_blocks = pool.memory.kv_blocks;
  pool.vllm.max_context_tokens = model.max_context_tokens;
  if (pool.lora_rank > 0) {
    const double bytes = hw::lora_adapter_bytes(model, sc.lora_rank, pool.dep.prec.weight_bytes);
    const hw::InterconnectSpec& host = catalog.interconnect(pool.gpu.host_link);
    pool.vllm.lora_load_ns =
        seconds_to_ns(host.latency_s + bytes / pool.par.tp / host.bw_bytes_per_s);
  } else {
    pool.vllm.lora_slots = 0;  // adapters belong to the scenario's model
  }
  if (sc.prefix_host_bytes > 0) {
    // The prefix cache's host tier holds the same bytes in this pool's KV blocks, which
    // move over this pool's GPU's host link.
    const double block_bytes = pool.memory.kv_bytes_per_token * sc.vllm.block_tokens;
    const hw::InterconnectSpec& host = catalog.interconnect(pool.gpu.host_link);
    pool.prefix_host_blocks = static_cast<int64_t>(sc.prefix_host_bytes / block_bytes);
    pool.vllm.swap_ns_per_block = block_bytes / host.bw_bytes_per_s * 1e9;
    pool.vllm.swap_latency_ns = seconds_to_ns(host.latency_s);
  }
  return pool;
}

namespace {

// Prefill/decode disaggregation: the scenario's hardware and serving.replicas are the decode
// pool; `serving.disaggregation` gives the prefill pool's replica count and any hardware
// fields that differ (gpu, node, tp, pp, ...).
void load_disaggregation(const yaml::Map& root, yaml::Map& dg, Scenario& sc,
                         const hw::Catalog& catalog,
                         const std::shared_ptr<const hw::CalibrationSet>& calibration) {
  if (!sc.vllm_family())
    dg.fail("", "disaggregation needs the vllm policy", "set serving.policy: vllm");
  if (sc.vllm.prefix_caching)
    dg.fail("", "prefix caching with disaggregation is not modelled yet",
            "set serving.prefix_caching: false");
  const int replicas =
      static_cast<int>(dg.integer(schema::key("serving.disaggregation.prefill_replicas")));
  (void)dg.has(schema::key("serving.disaggregation.prefill_hardware"));
  Pool pool =
      load_pool(root, dg, "prefill_hardware", sc.model, sc, catalog, calibration, "prefill pool");
  pool.replicas = replicas;
  if (pool.dep.prec.kv_bytes != sc.prec.kv_bytes)
    dg.fail("prefill_hardware", "the pools must keep KV in the same format", "");
  pool.vllm.role = serving::EngineConfig::Role::kPrefill;
  sc.vllm.role = serving::EngineConfig::Role::kDecode;
  dg.finish();
  sc.prefill_pool = pool;
}

// network: {model: simgrid}: the fabric holds every GPU of the run, each pool starting on
// a node boundary (prefill pool first, as the simulation numbers replicas), a domain
// boundary with a live all-to-all, and in the second region with regions: 2.
void size_simgrid_fabric(yaml::Map& root, Scenario& sc) {
  const int per_node = sc.fabric.gpus_per_node;
  // A live all-to-all needs each replica on whole scale-up domains (a multiple of nodes).
  const int align = sc.live_alltoall ? std::max(per_node, sc.fabric.domain_gpus) : per_node;
  auto aligned = [&](int g) { return (g + align - 1) / align * align; };
  const int decode = aligned(sc.replicas * sc.par.gpus());
  int prefill = 0;
  if (sc.prefill_pool) {
    if (!sc.prefill_pool->node || !sc.node || sc.prefill_pool->node->id != sc.node->id)
      root.map("network").fail("model",
                               "network model simgrid needs both pools on the same node type",
                               "give serving.disaggregation.prefill_hardware the same node, or "
                               "use network: {model: analytic}");
    prefill = aligned(sc.prefill_pool->replicas * sc.prefill_pool->par.gpus());
  }
  int total = prefill + decode;
  sc.decode_gpu_base = prefill;
  if (sc.prefill_pool && sc.fabric.regions > 1) {
    // One pool per region; the regions have equal node counts (the larger pool's).
    sc.decode_gpu_base = std::max(prefill, decode);
    total = sc.fabric.regions * sc.decode_gpu_base;
  }
  sc.fabric.gpus = std::max(total, sc.fabric.domain_gpus);
  sc.fabric.gpus = (sc.fabric.gpus + per_node - 1) / per_node * per_node;
  try {
    sc.fabric.validate();
  } catch (const std::invalid_argument& e) {
    root.map("network").fail("model",
                             std::string("SimGrid cannot build the run's fabric: ") + e.what(),
                             "use network: {model: analytic}");
  }
}

// network.regions and network.live_alltoall, once the pools are known.
void load_regions_and_alltoall(yaml::Map& root, Scenario& sc) {
  std::optional<yaml::Map> nw = root.map_opt("network");
  if (sc.fabric.regions > 1 && !sc.prefill_pool)
    nw->fail("regions",
             "regions put the prefill and the decode pool in different places, and this "
             "scenario has one pool",
             "add serving.disaggregation, or drop regions");
  const bool main_crosses = hw::ep_alltoall_leaves_domain(sc.dep);
  const bool prefill_crosses =
      sc.prefill_pool && hw::ep_alltoall_leaves_domain(sc.prefill_pool->dep);
  const bool any = main_crosses || prefill_crosses;
  const bool pipelined =
      (main_crosses && sc.par.pp > 1) || (prefill_crosses && sc.prefill_pool->par.pp > 1);
  const bool asked = nw && nw->has("live_alltoall");
  if (!(asked ? nw->boolean_or(schema::key("network.live_alltoall"), false)
              : sc.network_model == "simgrid"))
    return;
  const int domain = sc.fabric.domain_gpus;
  if (!any) {
    if (asked)
      nw->fail("live_alltoall",
               "no pool's expert-parallel all-to-all leaves its scale-up domain of " +
                   std::to_string(domain) + " GPUs, so there is nothing to run live",
               "drop live_alltoall (an all-to-all inside the domain is priced from the tables)");
    return;
  }
  if (pipelined) {
    // Default: the tables price it (README, network models).
    if (asked)
      nw->fail("live_alltoall", "the live all-to-all needs pp 1 in the pools that run it",
               "set pp: 1, or live_alltoall: false to price it from the tables");
    return;
  }
  sc.live_alltoall = true;
}

// Cascade (FrugalGPT, Chen et al., arXiv:2305.05176): every request goes to the small model
// first; a share `escalation` (chosen per request id) is then answered again by the
// scenario's model, and the user waits for both.
void load_cascade(const yaml::Map& root, yaml::Map& cs, Scenario& sc, const hw::Catalog& catalog,
                  const std::shared_ptr<const hw::CalibrationSet>& calibration) {
  if (!sc.vllm_family()) cs.fail("", "a cascade needs the vllm policy", "set serving.policy: vllm");
  hw::ModelSpec small;
  try {
    small = catalog.model(cs.str(schema::key("serving.cascade.small_model")));
  } catch (const InputError& e) {
    throw cs.locate("small_model", e);
  }
  const int replicas = static_cast<int>(cs.integer(schema::key("serving.cascade.small_replicas")));
  sc.escalation = cs.number(schema::key("serving.cascade.escalation"));
  (void)cs.has(schema::key("serving.cascade.small_hardware"));
  Pool pool =
      load_pool(root, cs, "small_hardware", small, sc, catalog, calibration, "cascade small model");
  pool.replicas = replicas;
  pool.vllm.lora_slots = 0;  // adapters belong to the large model
  cs.finish();
  sc.small_pool = pool;
}

}  // namespace

std::optional<DraftSettings> read_speculative(yaml::Map& sp, const hw::ModelSpec& model, int tp,
                                              int block_tokens, const hw::Catalog& catalog) {
  DraftSettings d;
  const std::string id = sp.str(schema::key_in(sp, "draft_model"));
  d.mtp = id == "mtp";
  if (d.mtp) {
    if (model.mtp_layers <= 0)
      sp.fail("draft_model", model.id + " has no multi-token-prediction head",
              "name a draft model from the catalog (fleetsim list models)");
    // The MTP module: mtp_layers transformer layers of the model's own shape.
    d.draft = model;
    d.draft.id = model.id + "-mtp";
    d.draft.layers = model.mtp_layers;
    if (d.draft.moe) d.draft.moe->dense_layers = 0;
  } else {
    try {
      d.draft = catalog.model(id);
    } catch (const InputError& e) {
      throw sp.locate("draft_model", e);
    }
    if (d.draft.vocab != model.vocab)
      sp.fail("draft_model",
              "the draft's vocabulary (" + std::to_string(d.draft.vocab) + ") differs from " +
                  model.id + "'s (" + std::to_string(model.vocab) + ")",
              "a draft must share the target's tokenizer");
    if (d.draft.heads % tp != 0)
      sp.fail("draft_model",
              "tp " + std::to_string(tp) + " does not divide the draft's " +
                  std::to_string(d.draft.heads) + " heads",
              "");
  }
  const yaml::Key& acceptance = schema::key_in(sp, "acceptance");
  const yaml::Key& spread = schema::key_in(sp, "acceptance_spread");
  d.k = static_cast<int>(sp.integer(schema::key_in(sp, "k")));
  if (d.k == 0) {  // k: 0 turns speculative decoding off (handy with --set)
    sp.number_or(acceptance, 0.0);
    sp.number_or(spread);
    sp.finish();
    return std::nullopt;
  }
  if (d.k + 1 > block_tokens)
    sp.fail("k",
            "k + 1 tokens per iteration must fit one KV block of " + std::to_string(block_tokens) +
                " tokens",
            "use k <= " + std::to_string(block_tokens - 1));
  d.acceptance = sp.number(acceptance);
  d.spread = sp.number_or(spread);
  sp.finish();
  return d;
}

serving::Speculative attach_speculative(const hw::ModelSpec& draft, bool mtp, int k,
                                        hw::Deployment& dep) {
  serving::Speculative spec;
  spec.k = k;
  spec.draft = dep;
  spec.draft.model = std::make_shared<const hw::ModelSpec>(draft);
  // The engine's CPU work (scheduling, sampling set-up, detokenisation) happens once per
  // iteration, in the target's step: the draft's k forward passes are GPU work (their
  // launches stay).
  spec.draft.eff.iteration_overhead_s = 0;
  spec.draft.eff.per_sequence_overhead_s = 0;
  const hw::Precision& p = dep.prec;
  const hw::Parallelism& par = dep.par;
  dep.extra_weight_bytes_per_gpu =
      (mtp ? draft.derived_params() - draft.embedding_params() : draft.derived_params()) *
      p.weight_bytes / par.gpus();
  const double kvh = std::max(static_cast<double>(draft.kv_heads) / par.tp, 1.0);
  dep.extra_kv_bytes_per_token_per_gpu =
      draft.mla ? draft.layers * draft.kv_elements_per_token_per_layer() * p.kv_bytes / par.pp
                : 2.0 * draft.layers * kvh * draft.head_dim * p.kv_bytes / par.pp;
  return spec;
}

namespace {

// serving.speculative: {draft_model: <catalog id> | mtp, k, acceptance, acceptance_spread}.
// The draft runs on the same GPUs with the same parallelism and precision; its weights and
// KV cache take memory from the target's KV cache.
void load_speculative(yaml::Map& sp, Scenario& sc, const hw::Catalog& catalog) {
  sc.draft_model = sp.str(schema::key("serving.speculative.draft_model"));
  const std::optional<DraftSettings> d =
      read_speculative(sp, sc.model, sc.par.tp, sc.vllm.block_tokens, catalog);
  if (!d) {
    sc.vllm.spec_k = 0;
    return;
  }
  sc.vllm.spec_k = d->k;
  sc.vllm.spec_acceptance = d->acceptance;
  sc.vllm.spec_acceptance_spread = d->spread;
  sc.spec = attach_speculative(d->draft, d->mtp, d->k, sc.dep);
}

}  // namespace

Scenario load_map(yaml::Map root, const std::string& file,
                  const std::vector<std::string>& overrides, std::optional<uint64_t> seed,
                  const hw::Catalog& catalog,
                  std::shared_ptr<const hw::CalibrationSet> calibration) {
  {
    // Unknown top-level keys first, so a misspelt section is reported as such ("did you
    // mean 'serving'?") rather than as the correct one missing.
    yaml::Map top = root;
    for (const std::string& k : schema::sections()) top.has(schema::key(k));
    top.finish();
  }
  Scenario sc;
  sc.file = file;
  sc.overrides = overrides;
  sc.document = YAML::Dump(root.node());
  sc.catalog_dir = catalog.dir();
  sc.calibration_dir = calibration ? calibration->dir() : std::string();
  const std::filesystem::path path(file);
  sc.base_dir = path.parent_path().string();
  // plan:, sweep: and ladder: are read by `fleetsim plan` (sim/plan/planner.h), `fleetsim
  // sweep` (sim/app/sweep.h) and `fleetsim ladder` (sim/app/ladder.h); a run simulates the
  // scenario as written.
  (void)root.has(schema::key("plan"));
  (void)root.has(schema::key("sweep"));
  (void)root.has(schema::key("ladder"));
  (void)root.has(schema::key("fleet_plan"));
  sc.name = root.str_or(schema::key("name"), path.stem().string());
  sc.description = root.str_or(schema::key("description"), "");
  sc.seed = static_cast<uint64_t>(root.integer_or(schema::key("seed")));
  if (seed) sc.seed = *seed;

  // Model and hardware from the catalog.
  const std::string model_id = root.str(schema::key("model"));
  try {
    sc.model = catalog.model(model_id);
  } catch (const InputError& e) {
    throw root.locate("model", e);
  }
  // The serving engine, first: its overheads enter the deployment and its scheduler
  // semantics the serving defaults below.
  {
    const yaml::Key& engine = schema::key("serving.engine");
    std::string engine_id = engine.fallback;
    sc.engine_defaulted = true;
    if (auto sv = root.map_opt(schema::key("serving")); sv && sv->has(engine)) {
      engine_id = sv->str(engine);
      sc.engine_defaulted = false;
      try {
        sc.engine = catalog.engine(engine_id);
      } catch (const InputError& e) {
        throw sv->locate("engine", e);
      }
    } else {
      sc.engine = catalog.engine(engine_id);
    }
  }
  load_deployment(root, sc, catalog, calibration);
  sc.error_band =
      validation::error_band(validation::default_band_cases(), sc.model.is_moe() ? "moe" : "dense",
                             validation::gpu_family(sc.gpu), sc.engine.id);

  // Serving.
  {
    yaml::Map sv = root.map(schema::key("serving"));
    auto key = [](const char* name) -> const yaml::Key& {
      return schema::key(std::string("serving.") + name);
    };
    sc.replicas = static_cast<int>(sv.integer_or(key("replicas")));
    sc.router = sv.choice_or(key("router"));
    sc.router_params.prefix_balance_slack = sv.integer_or(key("prefix_balance_slack"));
    if (sv.has("prefix_balance_slack") && sc.router != "prefix-aware")
      sv.fail("prefix_balance_slack", "prefix_balance_slack applies to router: prefix-aware", "");
    (void)sv.has(key("engine"));  // read above
    // A scenario that names no policy gets the engine's scheduler: the vllm replica,
    // chunked or prefill-first as the engine runs. One that names `vllm` means vLLM's
    // prefill-first scheduling unless it also sets chunked_prefill.
    const bool policy_named = sv.has(key("policy"));
    sc.policy = sv.choice_or(key("policy"));
    sc.vllm.chunked_prefill =
        sv.boolean_or(key("chunked_prefill"),
                      sc.policy == "sarathi" || (!policy_named && sc.engine.chunked_prefill));
    if (sc.policy == "sarathi" && !sc.vllm.chunked_prefill)
      sv.fail("chunked_prefill", "the sarathi policy is chunked prefill",
              "drop chunked_prefill, or use policy: vllm for prefill-first");
    // Whole or split prompts in a chunked iteration, and whether prefill-first cuts a long
    // prompt or rejects it: the engine's way unless the file says.
    const bool split = sv.boolean_or(
        key("split_prompts"),
        sc.policy == "sarathi" ||
            (sc.vllm.chunked_prefill ? sc.engine.split_prompts : sc.engine.split_long_prompts));
    (sc.vllm.chunked_prefill ? sc.vllm.split_prompts : sc.vllm.split_long_prompts) = split;
    if (sc.policy == "sarathi" && !sc.vllm.split_prompts)
      sv.fail("split_prompts", "the sarathi policy splits prompts into chunks",
              "use policy: vllm with chunked_prefill: true for whole prompts with decodes");
    sc.vllm.reserve_at_admission =
        sv.choice_or(key("admission"), sc.engine.reserve_at_admission ? "reserve" : "paged") ==
        "reserve";
    sc.vllm.block_tokens = static_cast<int>(sv.integer_or(key("block_tokens")));
    // The file's limits are the replica's (all its attention-DP ranks together); an engine
    // whose ranks schedule separately brings its defaults per rank.
    const int64_t ranks = sc.engine.limits_per_dp_rank ? sc.par.dp_attention : 1;
    sc.vllm.max_num_seqs = sv.integer_or(key("max_num_seqs"), ranks * sc.engine.max_num_seqs);
    sc.vllm.max_batched_tokens =
        sv.integer_or(key("max_batched_tokens"), ranks * sc.engine.max_batched_tokens);
    if (sc.engine.limits_per_dp_rank) {
      if (!sv.has(key("max_num_seqs"))) sc.engine_seqs_per_rank = sc.engine.max_num_seqs;
      if (!sv.has(key("max_batched_tokens")))
        sc.engine_tokens_per_rank = sc.engine.max_batched_tokens;
    }
    sc.vllm.fast_forward = sv.boolean_or(key("fast_forward"));
    sc.vllm.prefix_caching = sv.boolean_or(key("prefix_caching"));
    // Fleet users' prompts are generated with block hashes of this many tokens (a trace or
    // workload.conversations brings its own). vLLM hashes every 16-token KV block; coarser
    // blocks keep a fleet day fast and lose up to one block of reuse per prompt.
    if (root.has("fleet") && sc.vllm.prefix_caching) {
      const int bt = sc.vllm.block_tokens;
      sc.vllm.prefix_block_tokens =
          static_cast<int>(sv.integer_or(key("prefix_block_tokens"), (256 + bt - 1) / bt * bt));
      if (sc.vllm.prefix_block_tokens % bt != 0)
        sv.fail("prefix_block_tokens",
                "must be a whole number of KV blocks of " + std::to_string(bt) + " tokens",
                "e.g. " + std::to_string(16 * bt));
    } else if (sv.has("prefix_block_tokens")) {
      sv.fail("prefix_block_tokens",
              "applies to fleet scenarios with prefix_caching: true (a replayed trace or "
              "workload.conversations sets its own prefix blocks)",
              "drop prefix_block_tokens");
    }
    if (sc.router == "prefix-aware" && !sc.vllm.prefix_caching)
      sv.fail("router", "the prefix-aware router needs prefix_caching: true",
              "turn prefix caching on, or use router: least-outstanding");
    if (sv.has("batch_timeout")) {
      if (sc.policy != "dynamic")
        sv.fail("batch_timeout",
                "batch_timeout applies only to policy 'dynamic' (policy is '" + sc.policy + "')",
                "set serving.policy: dynamic, or remove batch_timeout");
      sc.vllm.batch_timeout_ns = seconds_to_ns(sv.quantity(key("batch_timeout")));
    }
    sc.gpu_memory_utilization = sv.number_or(key("gpu_memory_utilization"));
    sc.runtime_reserve_bytes = sv.quantity_or(key("runtime_reserve"));
    if (sc.vllm.chunked_prefill && sc.vllm.max_batched_tokens < sc.vllm.max_num_seqs) {
      sv.fail("max_batched_tokens",
              "with chunked prefill the token budget (" +
                  std::to_string(sc.vllm.max_batched_tokens) + ") must be at least max_num_seqs (" +
                  std::to_string(sc.vllm.max_num_seqs) + ")",
              "every running sequence decodes one token per iteration; raise max_batched_tokens "
              "or lower max_num_seqs");
    }
    sc.vllm.max_context_tokens = sc.model.max_context_tokens;
    if (auto sp = sv.map_opt(key("speculative"))) load_speculative(*sp, sc, catalog);
    if (auto lo = sv.map_opt(key("lora"))) {
      // Adapter slots live in GPU memory; a load moves one adapter over the host link.
      sc.vllm.lora_slots = static_cast<int>(lo->integer(schema::key("serving.lora.max_loras")));
      sc.lora_rank = static_cast<int>(lo->integer_or(schema::key("serving.lora.rank")));
      lo->finish();
      const double bytes = hw::lora_adapter_bytes(sc.model, sc.lora_rank, sc.prec.weight_bytes);
      const hw::InterconnectSpec& host = catalog.interconnect(sc.gpu.host_link);
      sc.vllm.lora_load_ns =
          seconds_to_ns(host.latency_s + bytes / sc.par.tp / host.bw_bytes_per_s);
      sc.dep.extra_weight_bytes_per_gpu += sc.vllm.lora_slots * bytes / sc.par.gpus();
    }
    // Memory fit: what is left for the KV cache after weights, activations and reserve.
    try {
      sc.memory =
          hw::fit_memory(sc.dep, sc.gpu_memory_utilization, sc.runtime_reserve_bytes,
                         sc.vllm.max_batched_tokens, sc.vllm.block_tokens, sc.vllm.block_tokens);
    } catch (const InputError& e) {
      // The fit is a property of model × hardware: point at the hardware section.
      throw root.locate("hardware", InputError(e.message() + " [memory fit]", e.hint()));
    }
    if (auto of = root.map_opt("offload"))
      check_host_memory(sc.memory, sc.par, sc.node, *of, sc.offload, "");
    sc.vllm.kv_blocks = sc.memory.kv_blocks;
    // The techniques below live in the vllm policy; the others would silently ignore them.
    if (!sc.vllm_family())
      for (const char* k :
           {"prefix_caching", "speculative", "preemption", "swap_space", "max_queue",
            "forced_token_share", "prefix_cache_host_space", "disaggregation", "cascade", "lora"})
        if (sv.has(k))
          sv.fail(k,
                  std::string(k) + " is modelled by the vllm policy only (policy is '" + sc.policy +
                      "')",
                  std::string("set serving.policy: vllm, or drop ") + k);
    // Preemption mode and load shedding.
    sc.vllm.swap = sv.choice_or(key("preemption")) == "swap";
    const double swap_space = sv.quantity_or(key("swap_space"));
    if (sc.vllm.swap) {
      // Each GPU moves its shard of a block over its own host link, in parallel.
      const double block_bytes = sc.memory.kv_bytes_per_token * sc.vllm.block_tokens;
      const hw::InterconnectSpec& host = catalog.interconnect(sc.gpu.host_link);
      sc.vllm.host_blocks = static_cast<int64_t>(swap_space / block_bytes);
      sc.vllm.swap_ns_per_block = block_bytes / host.bw_bytes_per_s * 1e9;
      sc.vllm.swap_latency_ns = seconds_to_ns(host.latency_s);
    } else if (sv.has("swap_space")) {
      sv.fail("swap_space", "swap_space without preemption: swap",
              "set preemption: swap, or drop swap_space");
    }
    sc.vllm.max_queue = sv.integer_or(key("max_queue"));
    if (sv.has("prefix_cache_host_space")) {
      if (!sc.vllm.prefix_caching)
        sv.fail("prefix_cache_host_space",
                "a host tier for the prefix cache needs prefix_caching: true", "");
      const double bytes = sv.quantity(key("prefix_cache_host_space"));
      const double block_bytes = sc.memory.kv_bytes_per_token * sc.vllm.block_tokens;
      const hw::InterconnectSpec& host = catalog.interconnect(sc.gpu.host_link);
      // Entries are whole trace prefix blocks; their size is known once the trace is read
      // (Simulation divides by the KV blocks per entry).
      sc.prefix_host_blocks = static_cast<int64_t>(bytes / block_bytes);
      sc.prefix_host_bytes = bytes;
      sc.vllm.swap_ns_per_block = block_bytes / host.bw_bytes_per_s * 1e9;
      sc.vllm.swap_latency_ns = seconds_to_ns(host.latency_s);
    }
    sc.vllm.forced_token_share = sv.number_or(key("forced_token_share"));
    if (serving::max_tokens_per_iteration(sc.vllm) > sc.vllm.block_tokens)
      sv.fail(sv.has("forced_token_share") ? "forced_token_share" : "speculative",
              "a sequence could advance " +
                  std::to_string(serving::max_tokens_per_iteration(sc.vllm)) +
                  " tokens per iteration, more than one KV block of " +
                  std::to_string(sc.vllm.block_tokens) + " tokens",
              "use a larger block_tokens, a smaller speculative k or forced_token_share");
    if (auto dg = sv.map_opt(key("disaggregation")))
      load_disaggregation(root, *dg, sc, catalog, calibration);
    load_regions_and_alltoall(root, sc);
    if (sc.network_model == "simgrid") size_simgrid_fabric(root, sc);
    if (auto cs = sv.map_opt(key("cascade"))) {
      if (sc.prefill_pool) cs->fail("", "a cascade with disaggregation is not modelled", "");
      if (root.has("fleet")) {
        // A fleet's small model runs in its own pools (load_fleet checks that it has some).
        for (const char* k : {"small_replicas", "small_hardware"})
          if (cs->has(k))
            cs->fail(k, "a fleet's small model runs in its pools",
                     "drop " + std::string(k) + " and give the regions pools with model: " +
                         cs->str_or("small_model", "<the small model>"));
        sc.cascade_small_model = cs->str(schema::key("serving.cascade.small_model"));
        sc.escalation = cs->number(schema::key("serving.cascade.escalation"));
        cs->finish();
      } else {
        load_cascade(root, *cs, sc, catalog, calibration);
      }
    }
    if (auto rc = sv.map_opt(key("response_cache"))) {
      sc.response_cache = true;
      sc.response_cache_latency_s = rc->quantity_or(schema::key("serving.response_cache.latency"));
      if (rc->has("hit_rate") == rc->has("capacity"))
        rc->fail("",
                 "give either hit_rate (a fixed share of hits) or capacity (exact matches "
                 "of trace prompts, LRU)",
                 "e.g. response_cache: {hit_rate: 0.1} or {capacity: 100000}");
      if (rc->has("hit_rate"))
        sc.response_cache_hit_rate = rc->number(schema::key("serving.response_cache.hit_rate"));
      else
        sc.response_cache_capacity = rc->integer(schema::key("serving.response_cache.capacity"));
      rc->finish();
    }
    sv.finish();
  }

  if (auto slo = root.map_opt(schema::key("slo"))) {
    const workload::SloSection s = workload::read_slo(*slo, "");
    sc.slo_ttft_s = s.ttft_s;
    sc.slo_tpot_s = s.tpot_s;
    sc.slo_plain = s.plain;
    sc.slo_targets = s.targets;
  }

  if (root.has("fleet")) {
    // A fleet: users and regions instead of a workload and one pool of replicas.
    if (root.has("workload"))
      root.fail("workload", "a fleet scenario takes its traffic from users:, not workload:",
                "drop workload:, or drop fleet: and users: for a single-pool scenario");
    yaml::Map sv = root.map("serving");
    if (sv.has("replicas"))
      sv.fail("replicas", "a fleet scenario sizes its pools under fleet.regions[].pools[].replicas",
              "drop serving.replicas");
    if (sv.has("disaggregation"))
      sv.fail("disaggregation",
              "a fleet disaggregates pool by pool: a pool with role: prefill hands its calls to "
              "a pool with role: decode of the same model in its region",
              "drop serving.disaggregation and give fleet.regions[].pools[] roles, e.g. "
              "{name: b200-prefill, replicas: 300, role: prefill} and {name: b200-decode, "
              "replicas: 900, role: decode}");
    // Multi-LoRA: each session uses one adapter (users.adapters), served by the pools of
    // the scenario's model, which hold serving.lora's adapter slots.
    const bool adapters = root.map("users").has("adapters");
    if (adapters && sc.vllm.lora_slots == 0)
      root.map("users").fail("adapters",
                             "the users' sessions name LoRA adapters but serving has no lora "
                             "section",
                             "add serving.lora: {max_loras: 8, rank: 16}");
    if (!adapters && sc.vllm.lora_slots > 0)
      sv.fail("lora", "serving.lora needs users whose sessions name adapters",
              "add users.adapters: {count: 100, popularity_zipf: 1.0}, or drop serving.lora");
    if (sc.response_cache && sc.response_cache_hit_rate < 0)
      sv.map("response_cache")
          .fail("capacity",
                "exact response caching needs prompts with identities (trace hashes); fleet "
                "users' prompts are generated",
                "give response_cache: {hit_rate: ...}");
    load_fleet(root, sc, catalog, calibration);
    if (sv.has("router")) sc.fleet->router = sc.router;
    root.finish();
    return sc;
  }
  if (root.has("cost"))
    root.fail("cost", "the cost model applies to fleet scenarios (users: and fleet:) for now",
              "drop cost:, or describe the deployment as a fleet with one region and one pool");
  // Workload: validated now (one generator, strict about unknown keys), rebuilt per run.
  sc.workload_section = root.map("workload");
  {
    yaml::Map copy = *sc.workload_section;
    const auto w = workload::Workload::from_yaml(copy, RngStreams(sc.seed), sc.base_dir);
    sc.workload_description = w->describe();
    copy.finish();
    const bool has_adapters = sc.workload_section->node()["adapters"].IsDefined();
    if (has_adapters != (sc.vllm.lora_slots > 0)) {
      yaml::Map sv = root.map("serving");
      if (has_adapters)
        sv.fail("", "the workload's requests name LoRA adapters but serving has no lora section",
                "add serving.lora: {max_loras: 8, rank: 16}");
      sv.fail("lora", "serving.lora needs a workload whose requests name adapters",
              "add workload.adapters: {count: 100, popularity_zipf: 1.0}");
    }
    if (sc.response_cache && sc.response_cache_hit_rate < 0) {
      const workload::Trace* t = w->trace();
      if (t == nullptr || t->block_tokens <= 0) {
        yaml::Map sv = root.map("serving");
        yaml::Map rc = sv.map("response_cache");
        rc.fail("capacity", "exact response caching needs prompts with identities (trace hashes)",
                "replay a trace with hash_ids, or give response_cache: {hit_rate: ...}");
      }
    }
    if (sc.vllm.prefix_caching) {
      const workload::Trace* t = w->trace();
      yaml::Map sv = root.map("serving");
      if (t == nullptr || t->block_tokens <= 0)
        sv.fail("prefix_caching",
                "prefix caching needs a workload that carries prefix-block hashes",
                "replay a trace with hash_ids (workload: {trace: {format: mooncake, ...}}), use "
                "workload: {conversations: ...}, or set prefix_caching: false");
      if (t->block_tokens % sc.vllm.block_tokens != 0)
        sv.fail("block_tokens",
                "the trace's prefix blocks (" + std::to_string(t->block_tokens) +
                    " tokens) are not a whole number of KV blocks of " +
                    std::to_string(sc.vllm.block_tokens) + " tokens",
                "use a block_tokens that divides " + std::to_string(t->block_tokens));
    }
  }
  root.finish();
  return sc;
}

}  // namespace fleetsim::scenario
