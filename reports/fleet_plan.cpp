#include "reports/fleet_plan.h"

#include <cstdio>
#include <map>
#include <sstream>

#include "reports/format.h"
#include "reports/ladder.h"

namespace fleetsim::reports {

namespace {

std::string method(const app::FleetPlanResult& r) {
  std::ostringstream o;
  const size_t n = r.candidates.size();
  o << n << (n == 1 ? " configuration" : " configurations") << " (" << r.spec.options.size()
    << (r.spec.options.size() == 1 ? " option" : " options");
  for (const auto& [path, values] : r.spec.axes) o << " × " << values.size() << " " << path;
  for (const auto& opt : r.spec.options)
    for (const auto& [path, values] : opt.axes)
      o << "; " << opt.name << " × " << values.size() << " " << path;
  o << "). Each is a search over the size of the fleet (every pool resized by one factor) for "
    << "the fewest replicas with which " << pct(r.spec.target)
    << " of calls meet their SLO in the day's busiest hour (hour " << r.window.peak_hour
    << " of the run, after " << duration(r.spec.warmup_s) << " of warm-up, simulated for "
    << duration(r.spec.window_s) << "), at " << general(r.window.sample * 100, 3)
    << " % of the users and of the replicas, to within 5 % or one simulated replica; failures "
    << "and autoscaling off in the search. "
    << (r.spec.autoscaling
            ? "GPU-hours and energy follow the day's load (derived from the busiest hour: an "
              "upper bound on what autoscaling saves). "
            : "GPUs are provisioned for that hour and held all day. ")
    << "A day's calls, tokens and energy are the hour's at the day's mean load (÷ "
    << general(r.window.window_to_mean, 3) << "). Ranked by $ a day."
    << (r.spec.rank_per_region && r.window.region_names.size() > 1
            ? " Every configuration that meets the target is then sized region by region (as "
              "below) and the ranking and the table are by that size."
            : "")
    << (r.spec.per_region && r.window.region_names.size() > 1
            ? " The cheapest is then sized region by region: each region's pools, in its own "
              "busiest hour, get the fewest replicas with which its calls and the fleet's meet "
              "the target (the regions before it already resized), and the result is "
              "simulated again in the fleet's busiest hour."
            : "");
  if (r.traffic) {
    int estimated = 0;
    for (const auto& c : r.candidates) estimated += c.analytic_usd_per_day ? 1 : 0;
    o << " Analytic pre-screen (slack " << general(*r.spec.slack, 3)
      << "): the busiest stretch's traffic measured once, on [" << r.traffic_from << "] ("
      << general(r.traffic->calls_per_s, 3) << " calls/s, " << general(r.traffic->mean_prompt, 3)
      << " prompt and " << general(r.traffic->mean_output, 3)
      << " output tokens a call); each configuration's $ a day estimated from the step model "
         "(the single-pool planner's estimate, pools resized by one factor to carry the calls "
         "at 90 % of their capacity); "
      << r.pruned << " of " << estimated
      << " estimated configurations pruned, not simulated, their estimate above (1 + slack) x "
         "the cheapest; the others simulated.";
  }
  return o.str();
}

}  // namespace

Table fleet_plan_table(const app::FleetPlanResult& r) {
  // With failure rates, every configuration carries its spares, and ranks by $ a day with
  // them: two more columns.
  bool spares = false;
  for (const int i : r.ranking)
    spares = spares || r.candidates[static_cast<size_t>(i)].spares_gpus > 0;
  Table t;
  t.header = {"configuration (cheapest first)", "GPUs", "$/day"};
  if (spares) t.header.insert(t.header.end(), {"spare GPUs", "$/day w/ spares"});
  t.header.insert(t.header.end(),
                  {"$/M tok", "Wh/call", "vs cheapest", "SLO met", "TTFT p99", "TPOT p99"});
  const double best =
      r.chosen >= 0 ? r.candidates[static_cast<size_t>(r.chosen)].ranked_usd_per_day() : 0;
  for (const int i : r.ranking) {
    const app::FleetPlanCandidate& c = r.candidates[static_cast<size_t>(i)];
    const app::LadderRung& a = c.ranked();
    char vs[32];
    std::snprintf(vs, sizeof vs, "+%.0f %%",
                  best > 0 ? 100 * (c.ranked_usd_per_day() / best - 1) : 0.0);
    std::vector<std::string> row = {c.label, human(a.gpus),
                                    usd(a.usd_per_day) + (a.price_missing ? "*" : "")};
    if (spares)
      row.insert(row.end(), {human(c.spares_gpus), c.spares_usd_per_day > 0 || c.spares_gpus == 0
                                                       ? usd(c.ranked_usd_per_day())
                                                       : "-"});
    row.insert(row.end(), {std::string("$").append(general(a.usd_per_mtok, 3)),
                           general(a.wh_per_call, 3), i == r.chosen ? "(chosen)" : vs,
                           pct(a.attainment), duration(a.ttft_p99_s), duration(a.tpot_p99_s)});
    t.rows.push_back(std::move(row));
  }
  for (const auto& c : r.candidates)
    if (!c.answer.met) {
      std::vector<std::string> row(t.header.size(), "-");
      row[0] = c.label;
      row[t.header.size() - 3] = "no: " + c.answer.reason;
      t.rows.push_back(std::move(row));
    }
  return t;
}

std::vector<std::string> fleet_plan_dropped(const app::FleetPlanResult& r) {
  std::map<std::string, std::pair<int, int>> by_option;  // name → (configurations, invalid)
  std::map<std::string, std::string> reason;
  for (const auto& c : r.candidates) {
    auto& n = by_option[c.option];
    ++n.first;
    if (!c.answer.met && c.answer.reason.rfind("invalid: ", 0) == 0) {
      ++n.second;
      if (!reason.count(c.option)) reason[c.option] = c.answer.reason.substr(9);
    }
  }
  std::vector<std::string> lines;
  for (const auto& o : r.spec.options) {
    const auto& n = by_option[o.name];
    if (n.first > 0 && n.second == n.first)
      lines.push_back("option '" + o.name + "': all " + std::to_string(n.first) +
                      (n.first == 1 ? " configuration" : " configurations") +
                      " invalid: " + reason[o.name]);
  }
  return lines;
}

std::string fleet_plan_answer(const app::FleetPlanResult& r) {
  if (r.chosen < 0)
    return "No configuration meets the SLO target: see each one's reason below (more replicas "
           "do not help, or a configuration is invalid).";
  const app::FleetPlanCandidate& c = r.candidates[static_cast<size_t>(r.chosen)];
  const app::LadderRung& a = c.answer;
  std::ostringstream o;
  o << "[" << c.label << "]: " << human(a.gpus) << " GPUs, " << usd(a.usd_per_day) << " a day ("
    << usd(a.usd_per_day * 30.44) << " a month), $" << general(a.usd_per_mtok, 3)
    << " per million tokens, " << general(a.wh_per_call, 3) << " Wh per call. In the busiest hour "
    << pct(a.attainment) << " of calls meet their SLO (TTFT p99 " << duration(a.ttft_p99_s)
    << ", TPOT p99 " << duration(a.tpot_p99_s) << ").";
  if (!a.sizing.empty()) o << " " << a.sizing << ".";
  if (!c.error_band.empty())
    o << " Validation error of configurations like this one (" << c.error_band
      << "): if the model is that optimistic, " << human(c.gpus_at_p75) << " GPUs.";
  if (c.perturbed) {
    const app::LadderRung& p = c.perturbed_answer;
    o << " With " << general(100 * r.spec.perturb_traffic, 3) << " % more users: ";
    if (!p.met)
      o << "no fleet size meets the target (" << p.reason << ").";
    else if (p.gpus <= a.gpus)
      o << "still meets at this size (" << pct(p.attainment) << ").";
    else
      o << "needs " << human(p.gpus) << " GPUs (+" << general(100 * (p.gpus / a.gpus - 1), 2)
        << " %, " << usd(p.usd_per_day) << " a day).";
  }
  if (r.regional) {
    const app::RegionalAnswer& g = *r.regional;
    o << " Sized region by region, each for its own busiest hour: ";
    if (!g.met) {
      o << "not done (" << g.reason << "); the answer keeps one factor for all.";
    } else {
      o << human(g.rung.gpus) << " GPUs, " << usd(g.rung.usd_per_day) << " a day (";
      const double d = g.rung.usd_per_day / a.usd_per_day - 1;
      o << (d <= 0 ? "" : "+") << general(100 * d, 2) << " % against one factor for all; "
        << pct(g.rung.attainment) << " of calls meet their SLO in the fleet's busiest hour):";
      for (size_t i = 0; i < g.regions.size(); ++i) {
        const app::RegionSize& x = g.regions[i];
        o << (i ? "; " : " ") << x.name << " " << general(x.scale, 3) << "x (" << human(x.gpus)
          << (x.gpus == 1 ? " GPU, " : " GPUs, ") << pct(x.attainment)
          << " met in its busiest hour, hour " << x.peak_hour << ")";
      }
      o << ".";
      for (const app::RegionSize& x : g.regions)
        if (!x.one_factor_met)
          o << " At one factor for all, " << x.name << "'s calls met their SLO "
            << pct(x.attainment_one_factor) << " of the time in its own busiest hour"
            << (x.attainment_one_factor >= r.spec.target ? " (the fleet's missed the target)" : "")
            << ": the fleet's busiest hour is not every region's.";
    }
  }
  if (r.spec.availability > 0) {
    if (r.spares.empty()) {
      o << " No failure rates in the scenario (fleet.failures): no spares sized.";
    } else {
      o << " Failure headroom (fleet.failures' rates; at most that many replicas down at once "
        << pct(r.spec.availability) << " of the time): " << human(r.spares_gpus)
        << " GPUs more in spares";
      std::string pools;
      for (const app::PoolSpares& ps : r.spares)
        if (ps.spares > 0)
          pools += (pools.empty() ? "" : ", ") + ps.name + " +" + std::to_string(ps.spares);
      if (!pools.empty()) o << " (" << pools << ")";
      if (r.spares_usd_per_day > 0) o << ", " << usd(r.spares_usd_per_day) << " a day";
      o << ".";
    }
  }
  if (r.ranking.size() > 1) {
    const app::FleetPlanCandidate& second = r.candidates[static_cast<size_t>(r.ranking[1])];
    const bool with_spares = second.spares_gpus > 0 || c.spares_gpus > 0;
    o << " The runner-up, [" << second.label << "], costs " << usd(second.ranked_usd_per_day())
      << " a day (+" << general(100 * (second.ranked_usd_per_day() / c.ranked_usd_per_day() - 1), 2)
      << " %" << (c.regional ? ", both sized region by region" : "")
      << (with_spares ? ", both with their spares" : "") << ").";
  }
  return o.str();
}

std::string fleet_plan_text(const app::FleetPlanResult& r) {
  std::ostringstream o;
  o << "PLAN  " << r.scenario_name << ": the cheapest fleet meeting its SLO for "
    << pct(r.spec.target) << " of calls in the busiest hour\n";
  for (const std::string& d : fleet_plan_dropped(r)) o << wrap("DROPPED " + d);
  o << wrap(method(r)) << "\n";
  o << "ANSWER\n" << wrap(fleet_plan_answer(r)) << "\n";
  o << table_text(fleet_plan_table(r));
  bool notes = false;
  for (const auto& opt : r.spec.options)
    if (!opt.note.empty()) {
      if (!notes) o << "NOTES\n";
      notes = true;
      o << wrap(opt.name + ": " + opt.note);
    }
  char b[160];
  std::snprintf(b, sizeof b, "  %d simulations in %.1f s on %d thread%s\n", r.simulations, r.wall_s,
                r.threads, r.threads == 1 ? "" : "s");
  o << b;
  return o.str();
}

nlohmann::ordered_json fleet_plan_json(const app::FleetPlanResult& r) {
  nlohmann::ordered_json p;
  p["scenario"] = r.scenario_name;
  p["target"] = r.spec.target;
  p["window_s"] = r.spec.window_s;
  p["warmup_s"] = r.spec.warmup_s;
  p["autoscaling"] = r.spec.autoscaling;
  p["sample"] = r.window.sample;
  p["peak_hour"] = r.window.peak_hour;
  p["window_to_mean"] = r.window.window_to_mean;
  p["simulations"] = r.simulations;
  if (r.traffic)
    p["prescreen"] = {{"slack", *r.spec.slack},
                      {"traffic_from", r.traffic_from},
                      {"calls_per_s", r.traffic->calls_per_s},
                      {"mean_prompt_tokens", r.traffic->mean_prompt},
                      {"mean_output_tokens", r.traffic->mean_output},
                      {"pruned", r.pruned}};
  p["dropped"] = fleet_plan_dropped(r);
  p["chosen"] = r.chosen >= 0 ? nlohmann::ordered_json(r.chosen) : nlohmann::ordered_json();
  p["ranking"] = r.ranking;
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (const auto& c : r.candidates) {
    nlohmann::ordered_json j;
    j["label"] = c.label;
    j["option"] = c.option;
    for (const auto& [path, v] : c.axis_values) j["axes"][path] = v;
    j["overrides"] = c.answer.overrides;
    j["answer"] = rung_json(c.answer);
    if (c.regional) {
      j["sized_by_region"] = rung_json(c.regional->rung);
      j["sized_by_region"]["met"] = c.regional->met;
      if (!c.regional->reason.empty()) j["sized_by_region"]["reason"] = c.regional->reason;
    }
    if (r.traffic) {
      if (c.analytic_usd_per_day)
        j["analytic_usd_per_day"] = *c.analytic_usd_per_day;
      else if (!c.analytic_note.empty())
        j["analytic_note"] = "not estimated: " + c.analytic_note;
      j["pruned"] = c.pruned;
    }
    if (!c.error_band.empty()) {
      j["error_band"] = c.error_band;
      j["gpus_at_p75_error"] = c.gpus_at_p75;
    }
    if (c.answer.met && r.spec.availability > 0) {
      nlohmann::ordered_json sp;
      sp["gpus"] = c.spares_gpus;
      sp["usd_per_day"] = c.spares_usd_per_day;
      sp["usd_per_day_with_spares"] = c.ranked_usd_per_day();
      nlohmann::ordered_json pools = nlohmann::ordered_json::array();
      for (const app::PoolSpares& ps : c.spares)
        pools.push_back({{"pool", ps.name}, {"replicas", ps.replicas}, {"spares", ps.spares}});
      sp["pools"] = std::move(pools);
      j["spares"] = std::move(sp);
    }
    if (c.perturbed) {
      j["perturb_traffic"] = r.spec.perturb_traffic;
      j["perturbed_answer"] = rung_json(c.perturbed_answer);
    }
    all.push_back(std::move(j));
  }
  p["configurations"] = std::move(all);
  if (r.chosen >= 0 && r.spec.availability > 0) {
    nlohmann::ordered_json sp;
    sp["availability"] = r.spec.availability;
    sp["gpus"] = r.spares_gpus;
    sp["usd_per_day"] = r.spares_usd_per_day;
    nlohmann::ordered_json pools = nlohmann::ordered_json::array();
    for (const app::PoolSpares& ps : r.spares)
      pools.push_back({{"pool", ps.name},
                       {"replicas", ps.replicas},
                       {"spares", ps.spares},
                       {"mean_down", ps.mean_down}});
    sp["pools"] = std::move(pools);
    p["spares"] = std::move(sp);
  }
  if (r.regional) {
    nlohmann::ordered_json g;
    g["met"] = r.regional->met;
    if (!r.regional->reason.empty()) g["reason"] = r.regional->reason;
    g["answer"] = rung_json(r.regional->rung);
    nlohmann::ordered_json regions = nlohmann::ordered_json::array();
    for (const app::RegionSize& x : r.regional->regions) {
      nlohmann::ordered_json j;
      j["name"] = x.name;
      j["peak_hour"] = x.peak_hour;
      j["scale"] = x.scale;
      j["gpus"] = x.gpus;
      j["attainment_own_peak"] = x.attainment;
      j["attainment_own_peak_one_factor"] = x.attainment_one_factor;
      j["one_factor_met"] = x.one_factor_met;
      j["met"] = x.met;
      j["simulations"] = x.simulations;
      regions.push_back(std::move(j));
    }
    g["regions"] = std::move(regions);
    p["per_region"] = std::move(g);
  }
  nlohmann::ordered_json out;
  out["fleet_plan"] = std::move(p);
  return out;
}

std::vector<std::string> write_fleet_plan_report(const app::FleetPlanResult& r,
                                                 const std::string& dir) {
  Document d("fleetsim plan (fleet): " + r.scenario_name);
  d.heading("The answer");
  for (const std::string& line : fleet_plan_dropped(r)) d.paragraph("Dropped: " + line + ".");
  d.paragraph(fleet_plan_answer(r));
  d.heading("Every configuration");
  d.paragraph(method(r));
  d.table(fleet_plan_table(r));
  for (const auto& opt : r.spec.options)
    if (!opt.note.empty()) d.paragraph(opt.name + ": " + opt.note);
  return d.write(dir);
}

}  // namespace fleetsim::reports
