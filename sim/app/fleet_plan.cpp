#include "sim/app/fleet_plan.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>

#include <yaml-cpp/yaml.h>

#include "hw_models/error.h"
#include "hw_models/yaml_reader.h"
#include "sim/fleet/population.h"
#include "sim/scenario/schema.h"
#include "sim/validation/error_band.h"

namespace fleetsim::app {

namespace {

const yaml::Key& plan_key(const std::string& name) {
  return scenario::schema::key("fleet_plan." + name);
}

constexpr const char* kOptionsHint =
    "e.g. options: [{name: B200, set: {hardware.gpu: b200}}, {name: H200, set: {hardware.gpu: "
    "h200-sxm}}]";

// The override path `path` checked against the schema, as an error at `m`'s `field`.
void check_path(yaml::Map& m, const std::string& field, const std::string& path) {
  try {
    scenario::schema::check_override(path);
  } catch (const InputError& e) {
    m.fail(field, e.message(), e.hint());
  }
}

// An axes mapping, {field.path: [values]}.
PlanAxes read_axes(yaml::Map& axes) {
  PlanAxes out;
  for (const auto& kv : axes.node()) {
    const std::string path = kv.first.as<std::string>();
    check_path(axes, path, path);
    if (!kv.second.IsSequence() || kv.second.size() == 0)
      axes.fail(path, "expected a list of values to try",
                "e.g. axes: {serving.max_num_seqs: [256, 512]}");
    std::vector<std::string> values;
    for (const auto& v : kv.second) values.push_back(flow_text(v));
    out.emplace_back(path, std::move(values));
  }
  return out;
}

}  // namespace

size_t FleetPlanOption::combinations(const PlanAxes& plan_axes) const {
  size_t n = 1;
  for (const auto& [path, values] : plan_axes) n *= values.size();
  for (const auto& [path, values] : axes) n *= values.size();
  return n;
}

size_t FleetPlanSpec::configurations() const {
  size_t n = 0;
  for (const auto& o : options) n += o.combinations(axes);
  return n;
}

FleetPlanSpec read_fleet_plan_section(const std::string& file,
                                      const std::vector<std::string>& sets) {
  yaml::Map root = yaml::load_file_with_overrides(file, sets);
  std::optional<yaml::Map> pm = root.map_opt(scenario::schema::key("fleet_plan"));
  if (!pm)
    root.fail("", "a fleet scenario is planned from its fleet_plan: section, and it has none",
              "add one: fleet_plan: {options: [{name: ..., set: {...}}, ...]} (README, "
              "'Planning a fleet'; scenarios/examples/fleet-plan.yaml has one)");
  FleetPlanSpec spec;
  spec.target = pm->number_or(plan_key("target"));
  spec.window_s = pm->quantity_or(plan_key("window"));
  spec.warmup_s = pm->quantity_or(plan_key("warmup"));
  spec.autoscaling = pm->boolean_or(plan_key("autoscaling"));
  spec.perturb_traffic = pm->number_or(plan_key("perturb_traffic"));
  spec.per_region = pm->boolean_or(plan_key("per_region"));
  spec.rank_per_region = pm->boolean_or(plan_key("rank_per_region"));
  spec.availability = pm->number_or(plan_key("availability"));
  spec.max_configurations = static_cast<int>(pm->integer_or(plan_key("max_configurations")));
  if (pm->has(plan_key("slack"))) spec.slack = pm->number(plan_key("slack"));
  if (!pm->has(plan_key("options"))) pm->fail("options", "missing required list", kOptionsHint);
  const YAML::Node list = pm->node()["options"];
  if (!list.IsSequence() || list.size() < 1 || list.size() > 256)
    pm->fail("options", "expected a list of 1 to 256 options", kOptionsHint);
  auto src = std::make_shared<yaml::Source>(yaml::Source{pm->file(), {}});
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].IsMap())
      pm->fail("options", "option " + std::to_string(i + 1) + " is not a mapping", kOptionsHint);
    yaml::Map om(list[i], src, pm->path() + ".options[" + std::to_string(i) + "]");
    FleetPlanOption o;
    o.name = om.str(plan_key("options[].name"));
    o.note = om.str_or(plan_key("options[].note"));
    if (auto set = om.map_opt(plan_key("options[].set")))
      for (const auto& kv : set->node()) {
        const std::string path = kv.first.as<std::string>();
        check_path(*set, path, path);
        o.set.push_back(path + "=" + flow_text(kv.second));
      }
    if (auto axes = om.map_opt(plan_key("options[].axes"))) o.axes = read_axes(*axes);
    om.finish();
    for (const auto& other : spec.options)
      if (other.name == o.name) om.fail("name", "two options are named '" + o.name + "'");
    spec.options.push_back(std::move(o));
  }
  if (auto axes = pm->map_opt(plan_key("axes"))) spec.axes = read_axes(*axes);
  for (size_t i = 0; i < spec.options.size(); ++i)
    for (const auto& [path, values] : spec.options[i].axes)
      for (const auto& [plan_path, plan_values] : spec.axes)
        if (path == plan_path)
          pm->fail("options",
                   "option '" + spec.options[i].name + "' has an axis " + path +
                       " that the plan's axes already vary",
                   "keep " + path + " in one of the two");
  if (spec.configurations() > static_cast<size_t>(spec.max_configurations))
    pm->fail("options",
             std::to_string(spec.configurations()) +
                 " configurations (options × axes) is more "
                 "than max_configurations = " +
                 std::to_string(spec.max_configurations),
             "drop options or axis values, or raise fleet_plan.max_configurations");
  pm->finish();
  return spec;
}

FleetPlanResult run_fleet_plan(const std::string& file, const std::vector<std::string>& sets,
                               std::optional<uint64_t> seed, const hw::Catalog& catalog,
                               std::shared_ptr<const hw::CalibrationSet> calibration, int threads,
                               const std::function<void(int, int)>& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  FleetPlanResult res;
  res.scenario_file = file;
  res.spec = read_fleet_plan_section(file, sets);
  res.threads = threads;
  const FleetPlanSpec& spec = res.spec;
  res.window = busiest_window(file, sets, seed, catalog, calibration, spec.warmup_s, spec.window_s,
                              "fleetsim plan");
  res.scenario_name = res.window.scenario_name;

  // Every configuration, loaded first: one that does not load (memory fit, layout, an unknown
  // engine) is kept with its reason, and searched no further.
  std::vector<std::optional<FleetConfig>> configs;
  for (const FleetPlanOption& o : spec.options) {
    const size_t combos = o.combinations(spec.axes);
    for (size_t k = 0; k < combos; ++k) {
      FleetPlanCandidate c;
      c.option = o.name;
      c.label = o.name;
      std::vector<std::string> overrides = sets;
      for (const auto& s : o.set) overrides.push_back(s);
      size_t rest = k;
      for (const PlanAxes* axes : {&spec.axes, &o.axes})
        for (const auto& [path, values] : *axes) {
          const std::string& v = values[rest % values.size()];
          rest /= values.size();
          c.axis_values.emplace_back(path, v);
          c.label += " " + path + "=" + v;
          overrides.push_back(path + "=" + v);
        }
      c.answer.name = c.label;
      c.answer.note = o.note;
      c.answer.overrides = overrides;
      c.answer.autoscaling = spec.autoscaling;
      for (const auto& w : res.window.overrides) overrides.push_back(w);
      try {
        configs.push_back(fleet_config(file, overrides, seed, catalog, calibration,
                                       res.window.sample, "option '" + o.name + "'"));
        if (configs.back()->sc.error_band)
          c.error_band = validation::describe(*configs.back()->sc.error_band);
      } catch (const InputError& e) {
        configs.push_back(std::nullopt);
        c.answer.reason =
            "invalid: " + e.message() + (e.hint().empty() ? "" : " (" + e.hint() + ")");
      }
      res.candidates.push_back(std::move(c));
    }
  }

  // The analytic pre-screen (fleet_plan.slack): the stretch's traffic measured once, on the
  // first valid configuration at its own size; each configuration's $ a day estimated from
  // the step model; those above (1 + slack) × the cheapest estimate are not simulated.
  if (spec.slack) {
    size_t first = 0;
    while (first < configs.size() && !configs[first]) ++first;
    if (first < configs.size()) {
      res.traffic = window_traffic(*configs[first]);
      res.traffic_from = res.candidates[first].label;
      ++res.simulations;
      double best = std::numeric_limits<double>::infinity();
      for (size_t i = 0; i < configs.size(); ++i) {
        if (!configs[i]) continue;
        FleetPlanCandidate& c = res.candidates[i];
        c.analytic_usd_per_day = analytic_usd_per_day(*configs[i], *res.traffic, &c.analytic_note);
        if (c.analytic_usd_per_day) best = std::min(best, *c.analytic_usd_per_day);
      }
      for (auto& c : res.candidates) {
        if (!c.analytic_usd_per_day || *c.analytic_usd_per_day <= (1 + *spec.slack) * best)
          continue;
        c.pruned = true;
        ++res.pruned;
        char b[160];
        std::snprintf(b, sizeof b,
                      "pruned, not simulated: analytic $%.0f a day, above (1 + slack %.3g) x "
                      "the cheapest estimate ($%.0f)",
                      *c.analytic_usd_per_day, *spec.slack, best);
        c.answer.reason = b;
      }
    }
  }

  // The searches side by side; each runs its simulations one after another.
  const int n = static_cast<int>(res.candidates.size());
  searches_side_by_side(
      n, threads,
      [&](int i) {
        const auto u = static_cast<size_t>(i);
        if (configs[u] && !res.candidates[u].pruned)
          res.candidates[u].answer =
              climb(*configs[u], spec.target, res.window.window_to_mean, res.candidates[u].answer);
      },
      progress);

  for (int i = 0; i < n; ++i) {
    FleetPlanCandidate& c = res.candidates[static_cast<size_t>(i)];
    res.simulations += c.answer.simulations;
    if (c.answer.met && c.answer.price_missing) {
      // Its $ a day would leave a pool out and rank it falsely cheap.
      c.answer.met = false;
      c.answer.reason =
          "invalid: a pool's GPU has no price, so $ a day would leave that pool out (give its "
          "catalog file a cloud_usd_per_gpu_hour, or cost: {basis: owned, ...})";
    }
    if (!c.answer.met) continue;
    res.ranking.push_back(i);
    const auto& band = configs[static_cast<size_t>(i)]->sc.error_band;
    if (band) c.gpus_at_p75 = std::ceil(c.answer.gpus * band->capacity_factor_p75());
  }
  // Each configuration that met the target, sized region by region (rank_per_region).
  const bool regions_apart = res.window.region_names.size() > 1;
  auto regional_of = [&](size_t i) {
    const FleetPlanCandidate& c = res.candidates[i];
    auto region_config = [&](size_t r) {
      std::vector<std::string> overrides = c.answer.overrides;
      for (const auto& w : res.window.region_overrides[r]) overrides.push_back(w);
      return fleet_config(file, overrides, seed, catalog, calibration, res.window.sample,
                          "region " + res.window.region_names[r] + "'s busiest hour");
    };
    RegionalAnswer g =
        size_regions(*configs[i], region_config, spec.target, res.window.window_to_mean, c.answer);
    for (size_t r = 0; r < g.regions.size(); ++r)
      g.regions[r].peak_hour = res.window.region_peak_hours[r];
    return g;
  };
  if (spec.rank_per_region && regions_apart) {
    searches_side_by_side(static_cast<int>(res.ranking.size()), threads,
                          [&](int k) {
                            const auto i = static_cast<size_t>(res.ranking[static_cast<size_t>(k)]);
                            res.candidates[i].regional = regional_of(i);
                          },
                          {});
    for (const int i : res.ranking)
      res.simulations += res.candidates[static_cast<size_t>(i)].regional->simulations;
  }
  // Each configuration's failure headroom at the sizes it is ranked by (analytic, no
  // simulation); the answer's again below at its final sizes if it is then sized region by
  // region.
  struct Spares {
    std::vector<PoolSpares> pools;
    double gpus = 0, usd_per_day = 0;
  };
  auto spares_of = [&](const FleetConfig& b, const std::vector<int>& replicas) {
    Spares sp;
    sp.pools = failure_spares(*b.sc.fleet, replicas, spec.availability);
    const fleet::CostModel& cm = b.sc.fleet->cost;
    bool priced = cm.basis == fleet::CostModel::Basis::kCloud;
    for (const PoolSpares& ps : sp.pools) {
      const double gpus = static_cast<double>(ps.spares) * ps.gpus_per_replica;
      sp.gpus += gpus;
      if (ps.usd_per_gpu_hour <= 0 && gpus > 0) priced = false;
      sp.usd_per_day += gpus * 24 * ps.usd_per_gpu_hour * (1 - cm.reserved_discount);
    }
    if (!priced) sp.usd_per_day = 0;
    return sp;
  };
  if (spec.availability > 0)
    for (const int i : res.ranking) {
      FleetPlanCandidate& c = res.candidates[static_cast<size_t>(i)];
      const FleetConfig& b = *configs[static_cast<size_t>(i)];
      Spares sp = spares_of(b, c.regional && c.regional->met
                                   ? c.regional->replicas
                                   : pool_replicas(b, pool_factors(c.answer, b.replicas.size())));
      c.spares = std::move(sp.pools);
      c.spares_gpus = sp.gpus;
      c.spares_usd_per_day = sp.usd_per_day;
    }
  // Cheapest $ a day (spares included) first; equal costs by fewer GPUs, then enumeration
  // order.
  std::stable_sort(res.ranking.begin(), res.ranking.end(), [&](int a, int b) {
    const FleetPlanCandidate &x = res.candidates[static_cast<size_t>(a)],
                             &y = res.candidates[static_cast<size_t>(b)];
    if (x.ranked_usd_per_day() != y.ranked_usd_per_day())
      return x.ranked_usd_per_day() < y.ranked_usd_per_day();
    return x.ranked().gpus + x.spares_gpus < y.ranked().gpus + y.spares_gpus;
  });
  if (!res.ranking.empty()) res.chosen = res.ranking.front();

  // The answer with more traffic: the same search with (1 + perturb_traffic) x the users.
  if (res.chosen >= 0 && spec.perturb_traffic > 0) {
    FleetPlanCandidate& c = res.candidates[static_cast<size_t>(res.chosen)];
    const FleetConfig& base = *configs[static_cast<size_t>(res.chosen)];
    const double wau =
        base.sc.make_population(base.sc.seed)->weekly_active() * (1 + spec.perturb_traffic);
    char buf[64];
    std::snprintf(buf, sizeof buf, "users.weekly_active=%.17g", wau);
    std::vector<std::string> overrides = c.answer.overrides;
    overrides.emplace_back(buf);
    for (const auto& w : res.window.overrides) overrides.push_back(w);
    const FleetConfig more = fleet_config(file, overrides, seed, catalog, calibration,
                                          res.window.sample, "the traffic perturbation");
    LadderRung r;
    r.name = c.answer.name;
    r.note = c.answer.note;
    r.overrides = overrides;
    r.autoscaling = c.answer.autoscaling;
    c.perturbed_answer = climb(more, spec.target, res.window.window_to_mean, r);
    c.perturbed = true;
    res.simulations += c.perturbed_answer.simulations;
  }
  // The answer's regions sized apart, each for its own busiest hour (already, when every
  // configuration was).
  if (res.chosen >= 0 && regions_apart) {
    const auto i = static_cast<size_t>(res.chosen);
    if (res.candidates[i].regional) {
      res.regional = res.candidates[i].regional;
    } else if (spec.per_region) {
      res.regional = regional_of(i);
      res.simulations += res.regional->simulations;
    }
  }
  // The answer's final sizes, and its failure headroom at them.
  if (res.chosen >= 0) {
    const FleetConfig& b = *configs[static_cast<size_t>(res.chosen)];
    const LadderRung& a = res.candidates[static_cast<size_t>(res.chosen)].answer;
    res.answer_replicas = res.regional && res.regional->met
                              ? res.regional->replicas
                              : pool_replicas(b, pool_factors(a, b.replicas.size()));
  }
  if (res.chosen >= 0 && spec.availability > 0) {
    const FleetPlanCandidate& c = res.candidates[static_cast<size_t>(res.chosen)];
    if (res.regional && res.regional->met && !c.regional) {
      Spares sp = spares_of(*configs[static_cast<size_t>(res.chosen)], res.regional->replicas);
      res.spares = std::move(sp.pools);
      res.spares_gpus = sp.gpus;
      res.spares_usd_per_day = sp.usd_per_day;
    } else {
      res.spares = c.spares;
      res.spares_gpus = c.spares_gpus;
      res.spares_usd_per_day = c.spares_usd_per_day;
    }
  }
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace fleetsim::app
