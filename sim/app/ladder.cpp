#include "sim/app/ladder.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>

#include <yaml-cpp/yaml.h>

#include "hw_models/error.h"
#include "hw_models/yaml_reader.h"
#include "sim/app/run.h"
#include "sim/core/parallel.h"
#include "sim/core/time.h"
#include "sim/fleet/population.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/schema.h"

namespace fleetsim::app {

namespace {

const yaml::Key& ladder_key(const std::string& name) {
  return scenario::schema::key("ladder." + name);
}

// A YAML value on one line, as --set takes it ("[{name: a, replicas: 2}]", "fp8").
std::string flow_text(const YAML::Node& n) {
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
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

namespace {

struct Evaluation {
  int n = 0;  // simulated replicas of the largest pool
  RunRecord record;
  bool met = false;
};

// The step's scenario at the busiest window, ready to resize: failures and autoscaling off,
// no spares.
struct StepBase {
  scenario::Scenario sc;
  std::vector<int> replicas;  // full scale, per pool in order
  int largest = 1;
  double sample = 1;
};

Evaluation evaluate(const StepBase& b, int n, double target) {
  scenario::Scenario sc = b.sc;
  const double k = n / (b.sample * b.largest);
  size_t j = 0;
  for (auto& region : sc.fleet->regions)
    for (auto& fp : region.pools) {
      fp.pool.replicas = std::max(1, static_cast<int>(std::llround(k * b.replicas[j++])));
      fp.spares = 0;
    }
  Evaluation e;
  e.n = n;
  e.record = run(sc, {}, 1);
  e.met = e.record.answer->slo_attainment >= target;
  return e;
}

LadderRung climb(const StepBase& b, const LadderSpec& spec, double rho, LadderRung rung) {
  // The fewest replicas of the largest pool (sampled) that meet the target: from the
  // scenario's own size, halve or double until the answer is bracketed, then bisect to
  // 5 % (or one replica).
  constexpr int kMaxSimulated = 1 << 16;
  const int start =
      std::max(1, static_cast<int>(std::llround(b.sample * static_cast<double>(b.largest))));
  Evaluation first = evaluate(b, start, spec.target);
  rung.simulations = 1;
  std::optional<Evaluation> hi, lo;
  if (first.met) {
    hi = std::move(first);
    while (hi->n > 1) {
      Evaluation e = evaluate(b, std::max(1, hi->n / 2), spec.target);
      ++rung.simulations;
      if (!e.met) {
        lo = std::move(e);
        break;
      }
      hi = std::move(e);
    }
  } else {
    lo = std::move(first);
    while (!hi) {
      if (lo->n >= kMaxSimulated) {
        rung.reason = "the SLO target is not met even with " + std::to_string(lo->n) +
                      " simulated replicas of the largest pool";
        return rung;
      }
      Evaluation e = evaluate(b, std::min(kMaxSimulated, lo->n * 2), spec.target);
      ++rung.simulations;
      if (e.met)
        hi = std::move(e);
      else
        lo = std::move(e);
    }
  }
  while (lo && hi->n - lo->n > std::max(1, hi->n / 20)) {
    Evaluation e = evaluate(b, lo->n + (hi->n - lo->n) / 2, spec.target);
    ++rung.simulations;
    if (e.met)
      hi = std::move(e);
    else
      lo = std::move(e);
  }
  const fleet::FleetAnswer& a = *hi->record.answer;
  const metrics::Summary& s = hi->record.summary();
  rung.met = true;
  rung.replicas_simulated = hi->n;
  rung.scale = hi->n / (b.sample * b.largest);
  rung.gpus = a.gpus_configured;
  rung.attainment = a.slo_attainment;
  rung.attainment_ci95 = a.slo_ci95;
  rung.ttft_p99_s = s.ttft.p99_s;
  rung.tpot_p99_s = s.tpot.p99_s;
  rung.busy = a.busy_fraction;
  rung.price_missing = a.price_missing;
  // A day: the window's calls, tokens and energy at the day's mean load (ρ times less).
  rung.window_to_mean = rho;
  rung.calls_per_day = a.calls_per_day / rho;
  rung.tokens_per_day = a.tokens_per_day / rho;
  rung.wh_per_call_window = a.calls_per_day > 0 ? a.energy_kwh_per_day * 1e3 / a.calls_per_day : 0;
  double energy_kwh_day = 0;
  if (rung.autoscaling) {
    // The fleet follows the load: the busiest window's GPU-hours and energy per call, all day.
    rung.gpu_hours_per_day = a.gpu_hours_per_day / rho;
    energy_kwh_day = a.energy_kwh_per_day / rho;
  } else {
    // Held all day: idle draw all day, busy draw for the day's work (ρ times less than the
    // window's).
    rung.gpu_hours_per_day = a.gpu_hours_per_day;
    energy_kwh_day =
        a.energy_kwh_per_day_idle + (a.energy_kwh_per_day - a.energy_kwh_per_day_idle) / rho;
  }
  rung.wh_per_call = rung.calls_per_day > 0 ? energy_kwh_day * 1e3 / rung.calls_per_day : 0;
  const fleet::CostModel& cm = b.sc.fleet->cost;
  if (a.owned) {
    rung.usd_per_day = a.capital_usd / (cm.depreciation_years * 365.0) +
                       energy_kwh_day * cm.electricity_usd_per_kwh;
  } else {
    rung.usd_per_day =
        a.usd_per_day * (1 - cm.reserved_discount) * (rung.autoscaling ? 1.0 / rho : 1.0);
  }
  rung.usd_per_mtok = rung.tokens_per_day > 0 ? rung.usd_per_day / rung.tokens_per_day * 1e6 : 0;
  return rung;
}

// users.start moved to `at_s` seconds after Monday 00:00 UTC, as --set overrides.
std::vector<std::string> start_overrides(double at_s, double duration_s) {
  static const char* kDays[] = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};
  constexpr double kWeek = 7 * 86400.0;
  at_s = std::fmod(std::fmod(at_s, kWeek) + kWeek, kWeek);
  const int day = std::min(6, static_cast<int>(at_s / 86400.0));
  const double hour = std::min(23.999, (at_s - day * 86400.0) / 3600.0);
  char h[32], d[32];
  std::snprintf(h, sizeof h, "%.6g", hour);
  std::snprintf(d, sizeof d, "%.6gs", duration_s);
  return {std::string("users.start.weekday=") + kDays[day],
          std::string("users.start.hour_utc=") + h, std::string("users.duration=") + d};
}

}  // namespace

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
  const scenario::Scenario day = scenario::load(file, sets, seed, catalog, calibration);
  if (!day.fleet)
    throw InputError("the ladder runs on fleet scenarios (users: and fleet:)",
                     "give the scenario a users: section and a fleet: section (scenarios/"
                     "chatgpt-700m.yaml), or compare single-pool setups with fleetsim sweep",
                     file, 0, "ladder");
  res.scenario_name = day.name;
  const auto pop = day.make_population(day.seed);
  res.sample = pop->sample();
  res.peak_hour = pop->peak_hour();
  res.calls_per_day = pop->calls_per_day();
  const double window_start_s = res.peak_hour * 3600.0 - spec.warmup_s;
  const std::vector<std::string> window =
      start_overrides(pop->start_s() + window_start_s, spec.warmup_s + spec.window_s);
  // ρ: the session starts (summed over regions) in the simulated stretch over their mean
  // over the day, from the population's curves (minute by minute).
  auto starts_per_s = [&](double t_s) {
    double rate = 0;
    for (size_t r = 0; r < pop->regions().size(); ++r)
      rate += pop->session_rate(r, seconds_to_ns(t_s));
    return rate;
  };
  auto mean_rate = [&](double from_s, double span_s) {
    const int steps = std::max(1, static_cast<int>(std::lround(span_s / 60.0)));
    double sum = 0;
    for (int i = 0; i < steps; ++i) sum += starts_per_s(from_s + (i + 0.5) * span_s / steps);
    return sum / steps;
  };
  const double day_mean = mean_rate(0, ns_to_seconds(pop->duration_ns()));
  res.window_to_mean =
      day_mean > 0 ? mean_rate(window_start_s, spec.warmup_s + spec.window_s) / day_mean : 1;

  // Every step's scenario, loaded first so that a bad step fails before anything runs.
  std::vector<StepBase> bases;
  std::vector<LadderRung> rungs;
  std::vector<std::string> cumulative = sets;
  bool autoscaling = false;
  for (const LadderStep& step : spec.steps) {
    for (const auto& o : step.set) cumulative.push_back(o);
    autoscaling = autoscaling || step.autoscaling;
    std::vector<std::string> o = cumulative;
    for (const auto& w : window) o.push_back(w);
    StepBase b{scenario::load(file, o, seed, catalog, calibration), {}, 1, res.sample};
    if (!b.sc.fleet)
      throw InputError("step '" + step.name + "' turns the fleet into a single pool",
                       "a step may change the fleet, not remove it", file, 0, "ladder");
    b.sc.fleet->failures.enabled = false;
    b.sc.fleet->autoscaling.mode = fleet::Autoscaling::Mode::kOff;
    for (const auto& region : b.sc.fleet->regions)
      for (const auto& fp : region.pools) {
        b.replicas.push_back(std::max(1, fp.pool.replicas));
        b.largest = std::max(b.largest, b.replicas.back());
      }
    prepare_network(b.sc);
    bases.push_back(std::move(b));
    LadderRung r;
    r.name = step.name;
    r.note = step.note;
    r.overrides = cumulative;
    r.autoscaling = autoscaling;
    rungs.push_back(std::move(r));
  }

  // The steps side by side; each search runs its simulations one after another.
  const int n = static_cast<int>(bases.size());
  std::atomic<int> done{0};
  std::mutex progress_mutex;
  parallel_for(n, threads, [&](int i) {
    const auto u = static_cast<size_t>(i);
    rungs[u] = climb(bases[u], spec, res.window_to_mean, rungs[u]);
    const int d = ++done;
    if (progress) {
      std::lock_guard<std::mutex> lock(progress_mutex);
      progress(d, n);
    }
  });

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
