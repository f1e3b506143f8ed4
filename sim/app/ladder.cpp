#include "sim/app/ladder.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <yaml-cpp/yaml.h>

#include "hw_models/error.h"
#include "hw_models/yaml_reader.h"
#include "sim/app/fleet_search.h"
#include "sim/core/time.h"
#include "sim/fleet/population.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/schema.h"

namespace fleetsim::app {

namespace {

const yaml::Key& ladder_key(const std::string& name) {
  return scenario::schema::key("ladder." + name);
}

constexpr const char* kStepsHint =
    "e.g. steps: [{name: naive, set: {serving.max_num_seqs: 1}}, {name: batching, set: "
    "{serving.max_num_seqs: 256}}]";

}  // namespace

LadderSpec read_ladder_section(const std::string& file, const std::vector<std::string>& sets) {
  yaml::Map root = yaml::load_file_with_overrides(file, sets);
  std::optional<yaml::Map> lm = root.map_opt(scenario::schema::key("ladder"));
  if (!lm)
    root.fail("", "the scenario has no ladder: section, so there are no steps to climb",
              "add one (scenarios/README.md, 'The technique ladder'; scenarios/chatgpt-700m.yaml "
              "has one)");
  LadderSpec spec;
  spec.target = lm->number_or(ladder_key("target"));
  spec.window_s = lm->quantity_or(ladder_key("window"));
  spec.warmup_s = lm->quantity_or(ladder_key("warmup"));
  if (!lm->has(ladder_key("steps")))
    lm->fail("steps", "missing required list of steps", kStepsHint);
  const YAML::Node list = lm->node()["steps"];
  if (!list.IsSequence() || list.size() < 2 || list.size() > 64)
    lm->fail("steps", "expected a list of 2 to 64 steps (the first is the naive start)",
             kStepsHint);
  auto src = std::make_shared<yaml::Source>(yaml::Source{lm->file(), {}});
  for (size_t i = 0; i < list.size(); ++i) {
    yaml::Map sm(list[i], src, lm->path() + ".steps[" + std::to_string(i) + "]");
    if (!list[i].IsMap())
      lm->fail("steps", "step " + std::to_string(i + 1) + " is not a mapping", kStepsHint);
    LadderStep step;
    step.name = sm.str(ladder_key("steps[].name"));
    step.note = sm.str_or(ladder_key("steps[].note"));
    step.autoscaling = sm.boolean_or(ladder_key("steps[].autoscaling"));
    if (auto set = sm.map_opt(ladder_key("steps[].set"))) {
      for (const auto& kv : set->node()) {
        const std::string path = kv.first.as<std::string>();
        try {
          scenario::schema::check_override(path);
        } catch (const InputError& e) {
          set->fail(path, e.message(), e.hint());
        }
        step.set.push_back(path + "=" + flow_text(kv.second));
      }
    }
    if (i > 0 && step.set.empty() && !step.autoscaling)
      sm.fail("name", "step '" + step.name + "' changes nothing",
              "give it set: {field.path: value, ...} or autoscaling: true");
    if (i == 0 && step.autoscaling)
      sm.fail("autoscaling", "the naive start cannot autoscale",
              "add autoscaling: true to a later step");
    sm.finish();
    spec.steps.push_back(std::move(step));
  }
  if (lm->has(ladder_key("published"))) {
    const YAML::Node pub = lm->node()["published"];
    if (!pub.IsSequence())
      lm->fail("published", "expected a list of figures",
               "e.g. published: [{name: \"OpenAI, average ChatGPT query\", wh_per_call: 0.34, "
               "source: \"...\"}]");
    for (size_t i = 0; i < pub.size(); ++i) {
      yaml::Map pm(pub[i], src, lm->path() + ".published[" + std::to_string(i) + "]");
      if (!pub[i].IsMap())
        lm->fail("published", "figure " + std::to_string(i + 1) + " is not a mapping",
                 "e.g. {name: ..., wh_per_call: 0.34, source: ...}");
      PublishedFigure f;
      f.name = pm.str(ladder_key("published[].name"));
      f.wh_per_call = pm.number(ladder_key("published[].wh_per_call"));
      f.source = pm.str(ladder_key("published[].source"));
      pm.finish();
      spec.published.push_back(std::move(f));
    }
  }
  lm->finish();
  return spec;
}

LadderResult run_ladder(const std::string& file, const std::vector<std::string>& sets,
                        std::optional<uint64_t> seed, const hw::Catalog& catalog,
                        std::shared_ptr<const hw::CalibrationSet> calibration, int threads,
                        const std::function<void(int, int)>& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  LadderResult res;
  res.scenario_file = file;
  res.spec = read_ladder_section(file, sets);
  res.threads = threads;
  const LadderSpec& spec = res.spec;

  // The day as written: its busiest hour.
  const BusiestWindow window = busiest_window(file, sets, seed, catalog, calibration, spec.warmup_s,
                                              spec.window_s, "the ladder");
  res.scenario_name = window.scenario_name;
  res.sample = window.sample;
  res.peak_hour = window.peak_hour;
  res.calls_per_day = window.calls_per_day;
  res.window_to_mean = window.window_to_mean;

  // Every step's scenario, loaded first so that a bad step fails before anything runs.
  std::vector<FleetConfig> bases;
  std::vector<LadderRung> rungs;
  std::vector<std::string> cumulative = sets;
  bool autoscaling = false;
  for (const LadderStep& step : spec.steps) {
    for (const auto& o : step.set) cumulative.push_back(o);
    autoscaling = autoscaling || step.autoscaling;
    std::vector<std::string> o = cumulative;
    for (const auto& w : window.overrides) o.push_back(w);
    bases.push_back(
        fleet_config(file, o, seed, catalog, calibration, res.sample, "step '" + step.name + "'"));
    LadderRung r;
    r.name = step.name;
    r.note = step.note;
    r.overrides = cumulative;
    r.autoscaling = autoscaling;
    rungs.push_back(std::move(r));
  }

  // The steps side by side; each search runs its simulations one after another.
  searches_side_by_side(
      static_cast<int>(bases.size()), threads,
      [&](int i) {
        const auto u = static_cast<size_t>(i);
        rungs[u] = climb(bases[u], spec.target, res.window_to_mean, rungs[u]);
      },
      progress);

  for (size_t i = 0; i < rungs.size(); ++i) {
    LadderRung& r = rungs[i];
    res.simulations += r.simulations;
    if (!r.met) continue;
    if (i > 0 && rungs[i - 1].met && r.usd_per_day > 0)
      r.factor_previous = rungs[i - 1].usd_per_day / r.usd_per_day;
    if (rungs[0].met && r.usd_per_day > 0) r.factor_start = rungs[0].usd_per_day / r.usd_per_day;
  }
  res.rungs = std::move(rungs);
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace fleetsim::app
