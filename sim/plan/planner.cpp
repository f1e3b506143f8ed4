#include "sim/plan/planner.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "hw_models/error.h"
#include "hw_models/perf_model.h"
#include "hw_models/units.h"
#include "hw_models/yaml_reader.h"
#include "sim/core/parallel.h"
#include "sim/metrics/summary_codec.h"
#include "sim/scenario/schema.h"
#include "sim/simulation.h"

#include <nlohmann/json.hpp>

namespace fleetsim::plan {

namespace {

// The plan's axes: key in `plan:` → scenario path it sets, in enumeration order (the last
// axis varies fastest).
struct AxisDef {
  const char* key;
  const char* path;
};
constexpr AxisDef kAxes[] = {
    {"gpu", "hardware.gpu"},
    {"tp", "hardware.tp"},
    {"pp", "hardware.pp"},
    {"expert_parallel", "hardware.expert_parallel"},
    {"weights", "precision.weights"},
    {"kv", "precision.kv"},
    {"policy", "serving.policy"},
    {"max_num_seqs", "serving.max_num_seqs"},
    {"max_batched_tokens", "serving.max_batched_tokens"},
    {"prefill_share", "plan.prefill_share"},  // not a scenario field: sets serving.disaggregation
};

const YAML::Node& root_of(const std::shared_ptr<const void>& p) {
  return *static_cast<const YAML::Node*>(p.get());
}

// Sets a dotted path in a YAML tree, creating mappings on the way.
void set_path(YAML::Node root, const std::string& dotted, const YAML::Node& value) {
  std::vector<std::string> keys;
  std::stringstream ss(dotted);
  for (std::string k; std::getline(ss, k, '.');) keys.push_back(k);
  YAML::Node cur = root;
  for (std::size_t i = 0; i + 1 < keys.size(); ++i) {
    YAML::Node next = cur[keys[i]];
    if (!next || next.IsNull() || !next.IsMap()) {
      cur[keys[i]] = YAML::Node(YAML::NodeType::Map);
      next = cur[keys[i]];
    }
    cur.reset(next);
  }
  cur[keys.back()] = value;
}

std::string short_value(const std::string& key, const std::string& v) {
  if (key == "gpu") return v;
  if (key == "expert_parallel") return v == "true" ? "ep" : "no-ep";
  return key + "=" + v;
}

double percent(double x) { return 100.0 * x; }

// Three significant digits, no exponent for the magnitudes printed here ("1.84", "152", "99.5").
double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string sig3(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

}  // namespace

std::optional<NonMonotone> non_monotone(const std::vector<Outcome>& tried) {
  std::optional<NonMonotone> out;
  for (const Outcome& a : tried) {
    if (!a.met || (out && a.replicas >= out->met)) continue;
    int missed = 0;
    for (const Outcome& b : tried)
      if (!b.met && b.replicas > a.replicas) missed = std::max(missed, b.replicas);
    if (missed > 0) out = NonMonotone{a.replicas, missed};
  }
  return out;
}

const char* status_name(Status s) {
  switch (s) {
    case Status::kInvalid: return "invalid";
    case Status::kInfeasible: return "infeasible";
    case Status::kPruned: return "pruned";
    case Status::kSloMissed: return "slo-missed";
    case Status::kFeasible: return "feasible";
  }
  return "?";
}

std::size_t PlanSpec::configurations() const {
  std::size_t n = 1;
  for (const auto& [k, v] : axes) n *= v.size();
  return n;
}

int Planner::prefill_replicas_for(double s, int replicas) {
  if (s <= 0) return 0;
  return std::max(1, static_cast<int>(std::ceil(s * replicas - 1e-9)));
}

int Planner::spares_for(int replicas) const {
  return spec_.spares + static_cast<int>(std::ceil(spec_.spare_fraction * replicas - 1e-9));
}

Planner::Planner(const std::string& file, const std::vector<std::string>& overrides,
                 std::optional<uint64_t> seed, const hw::Catalog& catalog,
                 std::shared_ptr<const hw::CalibrationSet> calibration)
    : file_(file),
      overrides_(overrides),
      seed_(seed),
      catalog_(&catalog),
      calibration_(std::move(calibration)) {
  yaml::Map root = yaml::load_file_with_overrides(file, overrides);
  std::optional<yaml::Map> pm = root.map_opt(scenario::schema::key("plan"));
  if (!pm)
    root.fail("", "the scenario has no plan: section, so there is nothing to search",
              "add e.g. plan: {gpu: [h100-sxm, h200-sxm], tp: [1, 2, 4, 8], target: 0.99} "
              "(scenarios/plan-llama70b-chat.yaml is an example)");
  if (root.has("users") || root.has("fleet"))
    root.fail("fleet", "fleetsim plan searches single-pool scenarios (workload: at the peak hour)",
              "describe the peak hour of one region as a workload: with serving: and slo:");

  // The plan section, strictly.
  for (const AxisDef& a : kAxes) {
    const yaml::Key& axis = scenario::schema::key_in(*pm, a.key);
    if (!pm->has(axis)) continue;
    std::vector<std::string> v = pm->str_list_or(axis, {});
    // An empty list would drop the axis without a word (the scenario's own value would be
    // searched alone): refuse it.
    if (v.empty())
      pm->fail(a.key, std::string("'") + a.key + "' is an empty list: the plan has no value to try",
               "give at least one value, or remove the key to keep the scenario's own value");
    std::vector<std::string> uniq;
    for (const auto& x : v)
      if (std::find(uniq.begin(), uniq.end(), x) == uniq.end()) uniq.push_back(x);
    if (std::string(a.key) == "prefill_share")
      for (const auto& x : uniq) {
        char* end = nullptr;
        const double s = std::strtod(x.c_str(), &end);
        if (end == x.c_str() || *end != '\0' || s < 0 || s > 4)
          pm->fail(a.key, "prefill_share must be numbers in [0, 4], got '" + x + "'",
                   "0 = colocated; 0.25 = one prefill replica per four decode replicas");
      }
    spec_.axes[a.path] = uniq;
  }
  // The space is the product of the axes: bounded before anything is enumerated.
  double space = 1;
  std::string product;
  for (const auto& [path, values] : spec_.axes) {
    space *= static_cast<double>(values.size());
    product += (product.empty() ? "" : " × ") + std::to_string(values.size());
  }
  if (space > kMaxConfigurations) {
    char b[64];
    std::snprintf(b, sizeof b, "%.4g", space);
    pm->fail("",
             "the plan space has " + product + " = " + b +
                 " configurations, more than the limit of " +
                 std::to_string(static_cast<long>(kMaxConfigurations)),
             "search fewer values per axis, or split the plan into several runs");
  }
  auto key = [](const char* name) -> const yaml::Key& {
    return scenario::schema::key(std::string("plan.") + name);
  };
  spec_.target = pm->number_or(key("target"));
  spec_.spares = static_cast<int>(pm->integer_or(key("spares")));
  spec_.spare_fraction = pm->number_or(key("spare_fraction"));
  if (auto rm = pm->map_opt(key("replicas"))) {
    spec_.min_replicas = static_cast<int>(rm->integer_or(key("replicas.min")));
    spec_.max_replicas = static_cast<int>(rm->integer_or(key("replicas.max")));
    if (spec_.max_replicas < spec_.min_replicas)
      rm->fail("max", "replicas.max (" + std::to_string(spec_.max_replicas) + ") is below min (" +
                          std::to_string(spec_.min_replicas) + ")");
    rm->finish();
  }
  spec_.simulate = static_cast<int>(pm->integer_or(key("simulate")));
  spec_.slack = pm->number_or(key("slack"));
  spec_.tie_tolerance = pm->number_or(key("tie_tolerance"));
  if (auto pt = pm->map_opt(key("perturb"))) {
    spec_.perturb_traffic = pt->number_or(key("perturb.traffic"), spec_.perturb_traffic);
    spec_.perturb_overhead_s =
        pt->quantity_or(key("perturb.iteration_overhead"), spec_.perturb_overhead_s);
    pt->finish();
  }
  if (auto pr = pm->map_opt(key("usd_per_gpu_hour"))) {
    for (const auto& kv : pr->node()) {
      const std::string id = kv.first.as<std::string>();
      try {
        (void)catalog.gpu(id);
      } catch (const InputError& e) {
        throw pr->locate(id, e);
      }
      spec_.usd_per_gpu_hour[id] = pr->number(id, 0.0, 1000.0);
    }
    pr->finish();
  }
  pm->finish();

  try {
    moe_ = catalog.model(root.str("model")).is_moe();
  } catch (const InputError& e) {
    throw root.locate("model", e);
  }

  // The scenario without plan:, resolved once as the base configuration.
  auto doc = std::make_shared<YAML::Node>(YAML::Clone(root.node()));
  doc->remove("plan");
  root_ = doc;
  // The base: the scenario as written, or (when that one does not fit, say) the first
  // configuration of the plan that resolves; if none does, the scenario's own error.
  try {
    base_ = std::make_unique<scenario::Scenario>(scenario::load_map(
        yaml::Map(YAML::Clone(*doc), std::make_shared<yaml::Source>(yaml::Source{file, {}}), ""),
        file, overrides, seed, catalog, calibration_));
  } catch (const InputError&) {
    for (const Candidate& c : candidates_unresolved()) {
      try {
        base_ = std::make_unique<scenario::Scenario>(resolve(c, spec_.min_replicas));
        break;
      } catch (const InputError&) {}
    }
    if (!base_) throw;
  }
  if (!base_->slo_ttft_s && !base_->slo_tpot_s && base_->slo_targets.empty())
    root.fail("slo", "the plan needs a service-level objective to meet",
              "add slo: {ttft: 2s, tpot: 50ms}, or percentiles: slo: {ttft: {p99: 1s}, "
              "itl: {p99: 200ms}}");

  // What the analytic model needs from the workload: a sample of its requests.
  auto w = base_->make_workload(base_->seed);
  double first = -1, last = 0, prompt = 0, output = 0;
  uint64_t n = 0;
  for (; n < 50000; ++n) {
    auto r = w->next_arrival();
    if (!r) break;
    const double t = static_cast<double>(r->arrival_ns) * 1e-9;
    if (first < 0) first = t;
    last = t;
    prompt += r->prompt_tokens;
    stats_.prompts_sorted.push_back(r->prompt_tokens);
    output += r->output_tokens;
  }
  if (n < 2 || last <= first || w->nominal_rate_per_s() <= 0)
    root.fail("workload", "the plan needs an open-loop workload (arrival: or trace:) with a rate",
              "describe the peak hour as workload: {arrival: {process: poisson, rate: 40/s}, "
              "duration: 1h, ...}");
  stats_.sampled = n;
  std::sort(stats_.prompts_sorted.begin(), stats_.prompts_sorted.end());
  stats_.rate_per_s = static_cast<double>(n - 1) / (last - first);
  stats_.mean_prompt = prompt / static_cast<double>(n);
  stats_.mean_output = output / static_cast<double>(n);
}

scenario::Scenario Planner::resolve(const Candidate& c, int replicas, std::optional<uint64_t> seed,
                                    const Perturbation& p) const {
  YAML::Node doc = YAML::Clone(root_of(root_));
  for (const auto& [path, value] : c.values) {
    if (path == "plan.prefill_share") continue;
    set_path(doc, path, YAML::Load(value));
    // Another GPU: its catalog node; other weights: the activation rule's default.
    if (path == "hardware.gpu" && doc["hardware"]["node"]) doc["hardware"].remove("node");
    if (path == "precision.weights" && doc["precision"]["activations"])
      doc["precision"].remove("activations");
  }
  set_path(doc, "serving.replicas", YAML::Node(replicas));
  if (c.prefill_share > 0)
    set_path(doc, "serving.disaggregation.prefill_replicas",
             YAML::Node(prefill_replicas_for(c.prefill_share, replicas)));
  if (p.traffic_scale != 1.0) {
    const YAML::Node w = doc["workload"];
    const double s = w && w["traffic_scale"] ? w["traffic_scale"].as<double>() : 1.0;
    set_path(doc, "workload.traffic_scale", YAML::Node(s * p.traffic_scale));
  }
  auto load = [&](const YAML::Node& d) {
    yaml::Map m(d, std::make_shared<yaml::Source>(yaml::Source{file_, {}}), "");
    return scenario::load_map(m, file_, overrides_, seed ? seed : seed_, *catalog_, calibration_);
  };
  if (p.extra_iteration_overhead_s == 0) return load(doc);
  // The engine's own overhead (its profile, or the scenario's efficiency:) plus the extra.
  const double own = load(YAML::Clone(doc)).eff.iteration_overhead_s;
  char v[48];
  std::snprintf(v, sizeof v, "%.17gs", own + p.extra_iteration_overhead_s);
  set_path(doc, "efficiency.iteration_overhead", YAML::Node(std::string(v)));
  return load(doc);
}

void Planner::price(Candidate& c) const {
  const std::string gpu = [&] {
    for (const auto& [p, v] : c.values)
      if (p == "hardware.gpu") return v;
    return base_->gpu.id;
  }();
  auto it = spec_.usd_per_gpu_hour.find(gpu);
  c.usd_per_gpu_hour =
      it != spec_.usd_per_gpu_hour.end() ? it->second : catalog_->gpu(gpu).cloud_usd_per_gpu_hour;
}

// Analytic capacity of one replica (colocated) or one decode replica plus its share of
// prefill replicas (disaggregated), from the performance model:
//   decode: the largest batch n ≤ min(max_num_seqs, KV tokens ÷ (P + O)) whose step
//           t(n) = fixed(n) + per_ctx(n)·n·(P + O/2) keeps TPOT ≤ 0.8·SLO;
//   prefill: t_p = one step computing the mean prompt P;
//   colocated: each request holds the replica for t_p + O·t(n)/n → capacity 1/(that);
//   disaggregated: decode n/(O·t(n)) per decode replica, 1/t_p per prefill replica.
// Replicas = ceil(rate / (0.9 · capacity)) (a 90 % utilisation target), within min..max.
ReplicaEstimate estimate_replica(const hw::Deployment& d, double P, double O, int64_t max_num_seqs,
                                 double kv_tokens, double step_budget_s) {
  O = std::max(1.0, O);
  const int64_t n_max = std::max<int64_t>(
      1, std::min<int64_t>(max_num_seqs, static_cast<int64_t>(kv_tokens / (P + O))));
  ReplicaEstimate e;
  hw::BatchShape pre;
  pre.prefill_tokens = static_cast<int64_t>(std::llround(P));
  pre.prefill_attn_pairs = P * (P + 1) / 2;
  pre.prefill_kv_tokens = pre.prefill_tokens;
  pre.logits_tokens = 1;
  pre.largest_chunk_tokens = pre.prefill_tokens;  // one prompt: on one attention-DP rank
  pre.largest_chunk_pairs = pre.prefill_attn_pairs;
  pre.largest_chunk_kv_tokens = pre.prefill_kv_tokens;
  e.prefill_s = hw::estimate_step(d, pre).total_s();
  auto step = [&](int64_t n) {
    const hw::DecodeAffine a = hw::decode_affine(d, n);
    return a.fixed_s + a.per_ctx_token_s * static_cast<double>(n) * (P + O / 2);
  };
  e.step_batch1_s = step(1);
  int64_t lo = 1, hi = n_max;  // the largest n with step(n) ≤ budget
  if (step(hi) <= step_budget_s) {
    lo = hi;
  } else {
    while (hi - lo > 1) {
      const int64_t mid = (lo + hi) / 2;
      (step(mid) <= step_budget_s ? lo : hi) = mid;
    }
  }
  e.batch = lo;
  e.step_s = step(lo);
  e.calls_per_s = 1.0 / (e.prefill_s + O * e.step_s / static_cast<double>(lo));
  return e;
}

void Planner::estimate(Candidate& c, const scenario::Scenario& sc) const {
  const double P = stats_.mean_prompt, O = std::max(1.0, stats_.mean_output);
  const hw::Deployment& d = sc.dep;
  c.gpus_per_replica = sc.par.gpus();
  c.error_band = sc.error_band;
  const double kv_tokens = static_cast<double>(sc.memory.kv_blocks) * sc.vllm.block_tokens;
  const ReplicaEstimate r = estimate_replica(d, P, O, sc.vllm.max_num_seqs, kv_tokens,
                                             sc.slo_tpot_s ? 0.8 * *sc.slo_tpot_s : 1e30);
  c.prefill_mean_s = r.prefill_s;
  c.tpot_batch1_s = r.step_batch1_s;
  if (sc.slo_tpot_s && c.tpot_batch1_s > *sc.slo_tpot_s) {
    c.status = Status::kInfeasible;
    c.reason = "TPOT at batch 1 is " + units::format(c.tpot_batch1_s, units::Dim::kTime) +
               ", above the SLO of " + units::format(*sc.slo_tpot_s, units::Dim::kTime);
    return;
  }
  // Every token gap is at least one decode step, and a step of one sequence is the shortest
  // (speculative decoding aside: its accepted tokens come with no gap).
  if (!sc.spec)
    for (const auto& t : sc.slo_targets)
      if (t.metric == workload::SloMetric::kItl && c.tpot_batch1_s > t.bound_s) {
        c.status = Status::kInfeasible;
        c.reason = "a decode step at batch 1 takes " +
                   units::format(c.tpot_batch1_s, units::Dim::kTime) + ", above the ITL " +
                   workload::percentile_name(t.quantile) + " target of " +
                   units::format(t.bound_s, units::Dim::kTime);
        return;
      }
  if (sc.slo_ttft_s && c.prefill_mean_s > *sc.slo_ttft_s) {
    c.status = Status::kInfeasible;
    c.reason = "the mean prompt alone takes " + units::format(c.prefill_mean_s, units::Dim::kTime) +
               " to prefill, above the TTFT SLO of " +
               units::format(*sc.slo_ttft_s, units::Dim::kTime);
    return;
  }
  // Prefill-first batching cannot schedule a prompt longer than max_batched_tokens: such
  // requests are rejected, and if they alone exceed the SLO's allowance no replica count helps.
  if (!sc.vllm.chunked_prefill) {
    const auto& ps = stats_.prompts_sorted;
    const auto over = ps.end() - std::upper_bound(ps.begin(), ps.end(), sc.vllm.max_batched_tokens);
    const double share =
        static_cast<double>(over) / static_cast<double>(std::max<std::size_t>(1, ps.size()));
    if (share > 1.0 - spec_.target) {
      c.status = Status::kInfeasible;
      c.reason =
          "prefill-first batching rejects prompts over max_batched_tokens = " +
          std::to_string(sc.vllm.max_batched_tokens) + " tokens (" + sig3(percent(share)) +
          " % of requests), more than the SLO allows; chunked prefill (policy sarathi) or a larger "
          "max_batched_tokens serves them";
      return;
    }
  }
  const int64_t lo = r.batch;
  c.decode_batch = static_cast<int>(lo);
  const double t = r.step_s;
  const double util = 0.9;
  int replicas = 0;
  if (c.prefill_share > 0) {
    const double decode_cap = static_cast<double>(lo) / (O * t);
    const double prefill_cap = 1.0 / c.prefill_mean_s;
    c.capacity_per_s = decode_cap;
    replicas = std::max(
        static_cast<int>(std::ceil(stats_.rate_per_s / (util * decode_cap))),
        static_cast<int>(std::ceil(stats_.rate_per_s / (util * prefill_cap * c.prefill_share))));
  } else {
    c.capacity_per_s = r.calls_per_s;
    replicas = static_cast<int>(std::ceil(stats_.rate_per_s / (util * c.capacity_per_s)));
  }
  replicas = std::max(replicas, spec_.min_replicas);
  c.analytic_replicas = replicas;
  if (replicas > spec_.max_replicas) {
    c.status = Status::kInfeasible;
    c.reason = "needs about " + std::to_string(replicas) + " replicas (" +
               units::format(c.capacity_per_s, units::Dim::kRate) +
               " each), above replicas.max = " + std::to_string(spec_.max_replicas);
    return;
  }
  const int gpus =
      (replicas + prefill_replicas_for(c.prefill_share, replicas) + spares_for(replicas)) *
      c.gpus_per_replica;
  c.analytic_usd_per_hour = gpus * c.usd_per_gpu_hour;
  c.status = Status::kPruned;  // until chosen for simulation
}

std::vector<Candidate> Planner::candidates_unresolved() const {
  // Axes in kAxes order; an MoE-only axis collapses for dense models.
  std::vector<std::pair<std::string, std::vector<std::string>>> axes;
  for (const AxisDef& a : kAxes) {
    auto it = spec_.axes.find(a.path);
    if (it == spec_.axes.end()) continue;
    std::vector<std::string> v = it->second;
    if (std::string(a.key) == "expert_parallel" && !moe_) v = {"false"};
    axes.emplace_back(a.path, v);
  }
  std::size_t total = 1;
  for (const auto& a : axes) total *= a.second.size();
  std::vector<Candidate> out;
  out.reserve(total);
  for (std::size_t i = 0; i < total; ++i) {
    Candidate c;
    c.index = static_cast<int>(i);
    std::size_t rest = i;
    std::vector<std::pair<std::string, std::string>> vals(axes.size());
    for (std::size_t a = axes.size(); a-- > 0;) {
      vals[a] = {axes[a].first, axes[a].second[rest % axes[a].second.size()]};
      rest /= axes[a].second.size();
    }
    c.values = vals;
    for (const auto& [p, v] : vals) {
      const std::string key = p.substr(p.find('.') + 1);
      if (!c.label.empty()) c.label += ' ';  // (not `"" + ...`: GCC 12 warns falsely, -Wrestrict)
      c.label += short_value(key, v);
      if (p == "plan.prefill_share") c.prefill_share = std::strtod(v.c_str(), nullptr);
    }
    if (c.label.empty()) c.label = "as in the scenario";
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<Candidate> Planner::enumerate() const {
  std::vector<Candidate> out = candidates_unresolved();
  for (Candidate& c : out) {
    try {
      price(c);
      const scenario::Scenario sc = resolve(c, spec_.min_replicas);
      if (c.usd_per_gpu_hour <= 0)
        throw InputError("no price for " + sc.gpu.id +
                             (spec_.usd_per_gpu_hour.count(sc.gpu.id)
                                  ? " (plan.usd_per_gpu_hour gives it 0)"
                                  : " (the catalog has no cloud price for it)"),
                         "give plan.usd_per_gpu_hour: {" + sc.gpu.id + ": ...}");
      estimate(c, sc);
    } catch (const InputError& e) {
      c.status = Status::kInvalid;
      c.reason = e.message();
      c.fix = e.hint();
    }
  }
  return out;
}

Outcome Planner::evaluate(const Candidate& c, int replicas, std::optional<uint64_t> seed,
                          const Perturbation& p) const {
  scenario::Scenario sc = resolve(c, replicas, seed, p);
  // The plain targets at the plan's target share, for their margins.
  if (sc.slo_plain) {
    if (sc.slo_ttft_s)
      sc.slo_targets.push_back(
          {workload::SloMetric::kTtft, spec_.target, *sc.slo_ttft_s, "", true});
    if (sc.slo_tpot_s)
      sc.slo_targets.push_back(
          {workload::SloMetric::kTpot, spec_.target, *sc.slo_tpot_s, "", true});
  }
  const RunResult r = run_in_own_process(sc);  // SimGrid scenarios in their own process
  const metrics::Summary& s = r.summary;
  Outcome o;
  o.replicas = replicas;
  o.prefill_replicas = prefill_replicas_for(c.prefill_share, replicas);
  o.arrived = s.requests_arrived;
  // slo_attainment is over completed requests; rejected ones count as misses here.
  const double met = s.slo_attainment * static_cast<double>(s.requests_completed);
  o.attainment = s.requests_arrived > 0 ? met / static_cast<double>(s.requests_arrived) : 0.0;
  o.ttft_p99_s = s.ttft.p99_s;
  o.tpot_p99_s = s.tpot.p99_s;
  o.e2e_p50_s = s.e2e.p50_s;
  o.itl_p99_s = s.itl.p99_s;
  o.busy = s.replica_busy_fraction;
  o.output_tok_per_s = s.output_tok_per_s;
  o.events = r.events;
  o.wall_s = r.wall_s;
  o.slo_checks = s.slo_checks;
  o.met = meets(o);
  return o;
}

bool Planner::meets(const Outcome& o) const {
  if (base_->slo_plain && o.attainment < spec_.target) return false;
  for (const auto& c : o.slo_checks)
    if (!c.target.plain && !c.met) return false;
  return true;
}

namespace {

// What keeps `o` from meeting the SLO, in a few words: "98.2 % of requests meet the SLO",
// "ITL p99 318 ms > 200 ms".
std::string misses_text(const Outcome& o, bool plain, double target) {
  std::string s;
  if (plain && o.attainment < target)
    s = sig3(percent(o.attainment)) + " % of requests meet the SLO";
  for (const auto& c : o.slo_checks) {
    if (c.target.plain || c.met) continue;
    if (!s.empty()) s += ", ";
    s += workload::slo_label(c.target.metric);
    s += ' ';
    s += workload::percentile_name(c.target.quantile);
    if (!c.target.cls.empty()) s += " of " + c.target.cls;
    s += c.beyond ? std::string(" beyond its bound (too many rejected)")
                  : " " + units::format(c.value_s, units::Dim::kTime) + " > " +
                        units::format(c.target.bound_s, units::Dim::kTime);
  }
  return s.empty() ? "meets the SLO" : s;
}

// Whether going from `a` to `b` (more replicas) moved anything the SLO looks at: the
// attainment by 0.1 point, or a percentile target's value by 1 % of its bound.
bool improved(const Outcome& a, const Outcome& b) {
  if (b.attainment - a.attainment >= 0.001) return true;
  for (std::size_t i = 0; i < a.slo_checks.size() && i < b.slo_checks.size(); ++i) {
    const metrics::SloCheck &x = a.slo_checks[i], &y = b.slo_checks[i];
    if (x.target.plain) continue;
    if (x.beyond != y.beyond) return true;
    if (x.value_s - y.value_s >= 0.01 * x.target.bound_s) return true;
  }
  return false;
}

}  // namespace

// Fewest replicas in [min, max] whose attainment reaches the target, assuming attainment
// grows with replicas: start at the analytic estimate, double up until it meets the
// target, then bisect between the largest count known to miss and the smallest known to
// meet.
void Planner::search_replicas(Candidate& c) const {
  auto meets = [&](int n) {
    for (const auto& o : c.tried)
      if (o.replicas == n) return o.met;
    c.tried.push_back(evaluate(c, n));
    return c.tried.back().met;
  };
  int ok = std::clamp(c.analytic_replicas, spec_.min_replicas, spec_.max_replicas);
  int miss = spec_.min_replicas - 1;
  while (!meets(ok)) {
    // Doubling the replicas did not move the attainment: the misses are not from load
    // (e.g. requests too long for the batch limits), so more replicas will not help.
    if (c.tried.size() >= 2 && miss >= spec_.min_replicas) {
      const Outcome &before = c.tried[c.tried.size() - 2], &now = c.tried.back();
      if (!improved(before, now)) {
        c.status = Status::kSloMissed;
        c.reason =
            "more replicas do not help: " + misses_text(before, base_->slo_plain, spec_.target) +
            " at " + std::to_string(miss) + " replicas and " +
            misses_text(now, base_->slo_plain, spec_.target) + " at " + std::to_string(ok);
        return;
      }
    }
    miss = ok;
    if (ok == spec_.max_replicas) break;
    ok = std::min(spec_.max_replicas, ok * 2);
  }
  if (miss == spec_.max_replicas) {
    const Outcome& last = c.tried.back();
    c.status = Status::kSloMissed;
    c.reason = "misses the SLO even at replicas.max = " + std::to_string(spec_.max_replicas) +
               " (" + misses_text(last, base_->slo_plain, spec_.target) + ")";
    return;
  }
  while (ok - miss > 1) {
    const int mid = miss + (ok - miss) / 2;
    (meets(mid) ? ok : miss) = mid;
  }
  for (const auto& o : c.tried)
    if (o.replicas == ok) c.best = o;
  c.status = Status::kFeasible;
  c.reason.clear();
  c.spare_replicas = spares_for(ok);
  c.total_gpus = (ok + c.best->prefill_replicas + c.spare_replicas) * c.gpus_per_replica;
  c.usd_per_hour = c.total_gpus * c.usd_per_gpu_hour;
}

PlanResult Planner::prepare(int threads) const {
  PlanResult res;
  res.scenario_name = base_->name;
  res.scenario_file = file_;
  res.spec = spec_;
  res.workload = stats_;
  res.slo_ttft_s = base_->slo_ttft_s;
  res.slo_tpot_s = base_->slo_tpot_s;
  res.slo_plain = base_->slo_plain;
  res.slo_targets = base_->slo_targets;
  res.threads = std::max(1, threads);
  res.candidates = enumerate();

  // Which to simulate: analytically cheapest first, within slack of the best, at most N.
  std::vector<int> order;
  for (const auto& c : res.candidates)
    if (c.status == Status::kPruned) order.push_back(c.index);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return res.candidates[a].analytic_usd_per_hour < res.candidates[b].analytic_usd_per_hour;
  });
  if (order.empty()) return res;
  const double best = res.candidates[order.front()].analytic_usd_per_hour;
  for (int i : order) {
    Candidate& c = res.candidates[i];
    const double over = c.analytic_usd_per_hour / best - 1.0;
    if (static_cast<int>(res.to_simulate.size()) < spec_.simulate && over <= spec_.slack + 1e-12) {
      res.to_simulate.push_back(i);
    } else {
      c.reason =
          "analytic estimate " + sig3(c.analytic_usd_per_hour) + " $/h is +" + sig3(percent(over)) +
          " % over the best estimate (" + sig3(best) + " $/h)" +
          (over <= spec_.slack ? "; beyond the " + std::to_string(spec_.simulate) +
                                     " configurations simulated (plan.simulate)"
                               : "; outside plan.slack = " + sig3(percent(spec_.slack)) + " %");
    }
  }
  return res;
}

void Planner::finish(PlanResult& res, double started_wall_s) const {
  res.simulations = 0;
  for (const int i : res.to_simulate)
    res.simulations += static_cast<int>(res.candidates[i].tried.size());
  res.ranking.clear();
  for (const auto& c : res.candidates)
    if (c.status == Status::kFeasible) res.ranking.push_back(c.index);
  // The equally cheap (within the tolerance of the cheapest) first, smoothest streaming
  // first; then the rest, cheapest first.
  double cheapest = std::numeric_limits<double>::infinity();
  for (const int i : res.ranking) cheapest = std::min(cheapest, res.candidates[i].usd_per_hour);
  auto tied = [&](const Candidate& x) {
    return x.usd_per_hour <= cheapest * (1 + spec_.tie_tolerance) + 1e-9;
  };
  std::stable_sort(res.ranking.begin(), res.ranking.end(), [&](int a, int b) {
    const Candidate &x = res.candidates[a], &y = res.candidates[b];
    const bool tx = tied(x), ty = tied(y);
    if (tx != ty) return tx;
    if (tx) {
      if (x.best->itl_p99_s != y.best->itl_p99_s) return x.best->itl_p99_s < y.best->itl_p99_s;
      if (x.best->tpot_p99_s != y.best->tpot_p99_s) return x.best->tpot_p99_s < y.best->tpot_p99_s;
    } else if (x.usd_per_hour != y.usd_per_hour) {
      return x.usd_per_hour < y.usd_per_hour;
    }
    if (!tx && x.total_gpus != y.total_gpus) return x.total_gpus < y.total_gpus;
    if (x.best->ttft_p99_s != y.best->ttft_p99_s) return x.best->ttft_p99_s < y.best->ttft_p99_s;
    if (x.total_gpus != y.total_gpus) return x.total_gpus < y.total_gpus;
    return a < b;
  });
  res.answers.clear();
  for (const int i : res.ranking)
    if (tied(res.candidates[i])) res.answers.push_back(i);
  res.chosen = res.ranking.empty() ? -1 : res.ranking.front();
  res.wall_s = wall_seconds() - started_wall_s;
}

PlanResult Planner::run(int threads, const std::function<void(int, int)>& progress) const {
  const double t0 = wall_seconds();
  PlanResult res = prepare(threads);
  // Simulate: one configuration per task, any thread; results land in their own slots.
  std::atomic<int> done{0};
  std::mutex progress_mu;
  const int n = static_cast<int>(res.to_simulate.size());
  parallel_for(n, res.threads, [&](int k) {
    search_replicas(res.candidates[res.to_simulate[static_cast<std::size_t>(k)]]);
    const int d = ++done;
    if (progress) {
      std::lock_guard<std::mutex> lock(progress_mu);
      progress(d, n);
    }
  });
  finish(res, t0);
  perturb_answers(res, threads);
  res.wall_s = wall_seconds() - t0;
  return res;
}

std::string Perturbation::describe() const {
  std::string s;
  if (traffic_scale != 1.0) {
    s += "traffic ";
    s += traffic_scale > 1 ? "+" : "";
    s += sig3(percent(traffic_scale - 1));
    s += " %";
  }
  if (extra_iteration_overhead_s != 0) {
    if (!s.empty()) s += ", ";
    s += "engine overhead +" + units::format(extra_iteration_overhead_s, units::Dim::kTime) +
         " per iteration";
  }
  return s.empty() ? "as planned" : s;
}

std::string Perturbation::short_name() const {
  if (extra_iteration_overhead_s == 0) return describe();
  std::string s = "overhead +" + units::format(extra_iteration_overhead_s, units::Dim::kTime);
  return traffic_scale != 1.0 ? describe() : s;
}

std::vector<Perturbation> Planner::perturbations() const {
  std::vector<Perturbation> out;
  if (spec_.perturb_traffic > 0) out.push_back({1.0 + spec_.perturb_traffic, 0.0});
  if (spec_.perturb_overhead_s > 0) out.push_back({1.0, spec_.perturb_overhead_s});
  return out;
}

PerturbedAnswer Planner::perturb(const Candidate& c, const Perturbation& p) const {
  PerturbedAnswer a;
  a.perturbation = p;
  const int base = c.best->replicas;
  auto meets_at = [&](int n) {
    for (const auto& o : a.tried)
      if (o.replicas == n) return o.met;
    a.tried.push_back(evaluate(c, n, {}, p));
    return a.tried.back().met;
  };
  a.still_meets = meets_at(base);
  a.at_answer = a.tried.front();
  int ok = base, miss = base;
  if (!a.still_meets) {
    // base + 1, + 2, + 4, ... until it meets (or replicas.max misses), then bisect.
    ok = -1;
    for (int step = 1; miss < spec_.max_replicas; step *= 2) {
      const int n = std::min(spec_.max_replicas, base + step);
      if (meets_at(n)) {
        ok = n;
        break;
      }
      // As in the search: when twice the replicas moved nothing, more will not help.
      if (n >= 2 * base && !improved(a.tried.front(), a.tried.back())) {
        miss = n;
        break;
      }
      miss = n;
    }
    if (ok > 0)
      while (ok - miss > 1) {
        const int mid = miss + (ok - miss) / 2;
        (meets_at(mid) ? ok : miss) = mid;
      }
  }
  if (ok > 0) {
    a.replicas_needed = ok;
    a.gpus_needed =
        (ok + prefill_replicas_for(c.prefill_share, ok) + spares_for(ok)) * c.gpus_per_replica;
    a.usd_per_hour_needed = a.gpus_needed * c.usd_per_gpu_hour;
  }
  return a;
}

void Planner::perturb_answers(PlanResult& res, int threads) const {
  const std::vector<Perturbation> ps = perturbations();
  std::vector<std::pair<int, std::size_t>> tasks;  // (candidate, perturbation)
  for (const int i : res.answers) {
    res.candidates[i].perturbed.assign(ps.size(), {});
    for (std::size_t k = 0; k < ps.size(); ++k) tasks.push_back({i, k});
  }
  parallel_for(static_cast<int>(tasks.size()), threads, [&](int t) {
    const auto& [i, k] = tasks[static_cast<std::size_t>(t)];
    Candidate& c = res.candidates[i];
    c.perturbed[k] = perturb(c, ps[k]);
  });
}

std::string Planner::encode_search(const Candidate& c) {
  nlohmann::json j;
  j["status"] = static_cast<int>(c.status);
  j["reason"] = c.reason;
  j["spares"] = c.spare_replicas;
  j["gpus"] = c.total_gpus;
  j["usd_per_hour"] = c.usd_per_hour;
  j["best"] = c.best ? c.best->replicas : -1;
  j["tried"] = nlohmann::json::array();
  j["checks"] = nlohmann::json::array();
  for (const auto& o : c.tried) {
    j["tried"].push_back({o.replicas, o.prefill_replicas, o.attainment, o.ttft_p99_s, o.tpot_p99_s,
                          o.e2e_p50_s, o.busy, o.output_tok_per_s, o.arrived, o.events, o.wall_s,
                          o.itl_p99_s, o.met ? 1 : 0});
    j["checks"].push_back(nlohmann::json::parse(metrics::encode_slo_checks(o.slo_checks)));
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

// A whole number that fits T, else an exception: nlohmann's get<int>() converts a float such
// as 2.7e114 to int, which is undefined behaviour.
template <class T>
T whole(const nlohmann::json& v) {
  if (!v.is_number_integer()) throw std::out_of_range("expected a whole number, got " + v.dump());
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<T>::max()))
      throw std::out_of_range("number out of range: " + v.dump());
    return static_cast<T>(u);
  }
  const int64_t i = v.get<int64_t>();
  if (i < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
      (i > 0 && static_cast<uint64_t>(i) > static_cast<uint64_t>(std::numeric_limits<T>::max())))
    throw std::out_of_range("number out of range: " + v.dump());
  return static_cast<T>(i);
}

double real(const nlohmann::json& v) {
  if (!v.is_number()) throw std::out_of_range("expected a number, got " + v.dump());
  return v.get<double>();
}

}  // namespace

void Planner::decode_search(Candidate& c, const std::string& text) {
  // Results come back from other ranks and from checkpoint files: every access is checked
  // (at(), not operator[]; whole numbers range-checked), so a damaged result is an
  // exception, never undefined behaviour.
  const nlohmann::json j = nlohmann::json::parse(text);
  const int status = whole<int>(j.at("status"));
  if (status < static_cast<int>(Status::kInvalid) || status > static_cast<int>(Status::kFeasible))
    throw std::out_of_range("status " + std::to_string(status) + " is not a search status");
  c.status = static_cast<Status>(status);
  c.reason = j.at("reason").get<std::string>();
  c.spare_replicas = whole<int>(j.at("spares"));
  c.total_gpus = whole<int>(j.at("gpus"));
  c.usd_per_hour = real(j.at("usd_per_hour"));
  const int best = whole<int>(j.at("best"));
  c.tried.clear();
  c.best.reset();
  const nlohmann::json& checks = j.at("checks");
  if (!checks.is_array() || checks.size() != j.at("tried").size())
    throw std::out_of_range("the SLO checks do not match the tried outcomes");
  for (const auto& t : j.at("tried")) {
    if (!t.is_array() || t.size() != 13)
      throw std::out_of_range("a tried outcome is not an array of 13 numbers");
    Outcome o;
    o.replicas = whole<int>(t.at(0));
    o.prefill_replicas = whole<int>(t.at(1));
    o.attainment = real(t.at(2));
    o.ttft_p99_s = real(t.at(3));
    o.tpot_p99_s = real(t.at(4));
    o.e2e_p50_s = real(t.at(5));
    o.busy = real(t.at(6));
    o.output_tok_per_s = real(t.at(7));
    o.arrived = whole<uint64_t>(t.at(8));
    o.events = whole<uint64_t>(t.at(9));
    o.wall_s = real(t.at(10));
    o.itl_p99_s = real(t.at(11));
    const int met = whole<int>(t.at(12));
    if (met != 0 && met != 1) throw std::out_of_range("met is not 0 or 1");
    o.met = met == 1;
    try {
      o.slo_checks = metrics::decode_slo_checks(checks.at(c.tried.size()).dump());
    } catch (const std::runtime_error& e) {
      throw std::out_of_range(e.what());
    }
    c.tried.push_back(o);
    if (o.replicas == best) c.best = o;
  }
}

}  // namespace fleetsim::plan
