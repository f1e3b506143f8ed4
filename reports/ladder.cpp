#include "reports/ladder.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "reports/format.h"
#include "reports/plot.h"

namespace fleetsim::reports {

namespace {

std::string factor(double f) {
  if (f <= 0) return "-";
  char b[32];
  std::snprintf(b, sizeof b, f >= 100 ? "x%.0f" : f >= 10 ? "x%.1f" : "x%.2f", f);
  return b;
}

std::string fixed(double v, int decimals) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

std::string what_is_simulated(const app::LadderResult& r) {
  std::ostringstream o;
  o << r.rungs.size() << " steps. Each is a search over the size of the fleet (every pool "
    << "resized by one factor) for the fewest replicas with which " << pct(r.spec.target)
    << " of calls meet their SLO, in the day's busiest hour (hour " << r.peak_hour
    << " of the run, after " << duration(r.spec.warmup_s) << " of warm-up, simulated for "
    << duration(r.spec.window_s) << "), at " << general(r.sample * 100, 3)
    << " % of the users and of the replicas, to within 5 % or one simulated replica. "
    << "Failures and autoscaling are off in the search. GPUs are provisioned for that hour and "
    << "held all day, except from an autoscaling step on, where GPU-hours and energy follow "
    << "the load (derived from the busiest hour, not simulated: an upper bound on what "
    << "autoscaling saves). A day's calls, tokens and energy are the window's at the day's "
    << "mean load: divided by the ratio of the population's session starts in the simulated "
    << "stretch to their day's mean, " << general(r.window_to_mean, 3)
    << ". $ per million tokens counts the tokens the GPUs process (a response-cache hit adds "
    << "none): compare steps by $ a day.";
  return o.str();
}

}  // namespace

Table ladder_table(const app::LadderResult& r) {
  Table t;
  t.header = {"step",        "GPUs",     "$/day",   "$/M tok",  "Wh/call",
              "vs previous", "vs start", "SLO met", "TTFT p99", "TPOT p99"};
  for (const auto& s : r.rungs) {
    if (!s.met) {
      t.rows.push_back({s.name, "-", "-", "-", "-", "-", "-", "no: " + s.reason, "-", "-"});
      continue;
    }
    t.rows.push_back({s.name, human(s.gpus), usd(s.usd_per_day) + (s.price_missing ? "*" : ""),
                      std::string("$").append(general(s.usd_per_mtok, 3)), fixed(s.wh_per_call, 3),
                      factor(s.factor_previous), factor(s.factor_start), pct(s.attainment),
                      duration(s.ttft_p99_s), duration(s.tpot_p99_s)});
  }
  return t;
}

std::string ladder_text(const app::LadderResult& r) {
  std::ostringstream o;
  o << "LADDER   " << r.scenario_name << " (" << r.scenario_file << ")\n";
  o << wrap(what_is_simulated(r)) << "\n\n";
  o << table_text(ladder_table(r)) << "\n";
  const auto& first = r.rungs.front();
  const auto& last = r.rungs.back();
  if (first.met && last.met && last.usd_per_day > 0) {
    char b[256];
    std::snprintf(b, sizeof b,
                  "From the naive start to the last step: %s fewer GPUs, %s less a day "
                  "(%s → %s), %s less energy per call (%.3g → %.3g Wh).\n",
                  factor(first.gpus / last.gpus).c_str(), factor(last.factor_start).c_str(),
                  usd(first.usd_per_day).c_str(), usd(last.usd_per_day).c_str(),
                  factor(first.wh_per_call / last.wh_per_call).c_str(), first.wh_per_call,
                  last.wh_per_call);
    o << b;
  }
  bool missing = false;
  for (const auto& s : r.rungs) missing = missing || s.price_missing;
  if (missing) o << "* a pool of that step has no price in the catalog: its $ leave it out\n";
  if (last.met && last.wh_per_call > 0)
    for (const auto& f : r.spec.published) {
      char pb[160];
      std::snprintf(pb, sizeof pb, "PUBLISHED %.3g Wh per call: ", f.wh_per_call);
      o << pb << f.name << " (" << f.source << "); the last step uses "
        << general(last.wh_per_call, 3) << " Wh, " << factor(last.wh_per_call / f.wh_per_call)
        << " that\n";
    }
  o << "NOTES\n";
  for (const auto& s : r.rungs)
    if (!s.note.empty()) o << wrap(s.name + ": " + s.note) << "\n";
  char b[160];
  std::snprintf(b, sizeof b, "  %d simulations in %.1f s on %d thread%s\n", r.simulations, r.wall_s,
                r.threads, r.threads == 1 ? "" : "s");
  o << b;
  return o.str();
}

nlohmann::ordered_json rung_json(const app::LadderRung& s) {
  nlohmann::ordered_json j;
  j["met"] = s.met;
  if (!s.met) j["reason"] = s.reason;
  j["replicas_simulated"] = s.replicas_simulated;
  j["scale"] = s.scale;
  if (!s.pool_factors.empty()) {
    j["pool_factors"] = s.pool_factors;
    j["sizing"] = s.sizing;
  }
  j["gpus"] = s.gpus;
  j["gpu_hours_per_day"] = s.gpu_hours_per_day;
  j["usd_per_day"] = s.usd_per_day;
  j["price_missing"] = s.price_missing;
  j["calls_per_day"] = s.calls_per_day;
  j["tokens_per_day"] = s.tokens_per_day;
  j["usd_per_mtok"] = s.usd_per_mtok;
  j["wh_per_call"] = s.wh_per_call;
  j["wh_per_call_busiest_hour"] = s.wh_per_call_window;
  j["slo_attainment"] = s.attainment;
  j["slo_attainment_ci95"] = s.attainment_ci95;
  j["ttft_p99_s"] = s.ttft_p99_s;
  j["tpot_p99_s"] = s.tpot_p99_s;
  j["busy_fraction"] = s.busy;
  j["simulations"] = s.simulations;
  return j;
}

nlohmann::ordered_json ladder_json(const app::LadderResult& r) {
  nlohmann::ordered_json l;
  l["scenario"] = r.scenario_name;
  l["target"] = r.spec.target;
  l["window_s"] = r.spec.window_s;
  l["warmup_s"] = r.spec.warmup_s;
  l["sample"] = r.sample;
  l["peak_hour"] = r.peak_hour;
  l["calls_per_day_expected"] = r.calls_per_day;
  l["window_to_mean"] = r.window_to_mean;
  l["simulations"] = r.simulations;
  nlohmann::ordered_json pub = nlohmann::ordered_json::array();
  for (const auto& f : r.spec.published)
    pub.push_back({{"name", f.name}, {"wh_per_call", f.wh_per_call}, {"source", f.source}});
  l["published"] = std::move(pub);
  nlohmann::ordered_json steps = nlohmann::ordered_json::array();
  for (const auto& s : r.rungs) {
    nlohmann::ordered_json j;
    j["name"] = s.name;
    j["note"] = s.note;
    j["overrides"] = s.overrides;
    j["autoscaling"] = s.autoscaling;
    j.update(rung_json(s));
    j["factor_previous"] = s.factor_previous;
    j["factor_start"] = s.factor_start;
    steps.push_back(std::move(j));
  }
  l["steps"] = std::move(steps);
  nlohmann::ordered_json out;
  out["ladder"] = std::move(l);
  return out;
}

std::vector<std::string> write_ladder_report(const app::LadderResult& r, const std::string& dir) {
  Document d("The technique ladder: " + r.scenario_name);
  d.paragraph(what_is_simulated(r));
  d.table(ladder_table(r));
  // Waterfall: $ a day per step (log scale), each bar labelled with its factor against the
  // previous step.
  std::string data = "step,name,usd_per_day,factor\n";  // a header: plots read columnheaders
  std::vector<double> values;
  for (size_t i = 0; i < r.rungs.size(); ++i) {
    const auto& s = r.rungs[i];
    if (!s.met || s.usd_per_day <= 0) continue;
    std::string name = s.name;
    std::replace(name.begin(), name.end(), ',', ';');
    std::replace(name.begin(), name.end(), '"', '\'');
    if (name.size() > 28) name = name.substr(0, 27) + "…";
    data += std::to_string(i) + "," + gnuplot_quote(name) + "," + general(s.usd_per_day, 6) + "," +
            gnuplot_quote(i == 0 ? "start" : factor(s.factor_previous)) + "\n";
    values.push_back(s.usd_per_day);
  }
  const AxisRange y = axis_range(values, true, 0.15);
  const std::string script =
      "set style fill solid 0.85 border -1\nset boxwidth 0.7\n" + gnuplot_range("y", y) +
      "set ylabel \"$ a day\"\nset xtics rotate by -35 font \",9\"\n"
      "set grid ytics\nset xrange [-0.6:" +
      std::to_string(r.rungs.size()) +
      "-0.4]\n"
      "plot 'ladder.csv' using 1:3:xtic(2) with boxes lc rgb '#4a7ebb' notitle, "
      "'' using 1:3:4 with labels offset 0,0.8 font \",9\" notitle\n";
  d.figure(draw_gnuplot("ladder_waterfall",
                        "$ a day at each step of the ladder (log scale); each bar carries its "
                        "factor against the step before",
                        script, {{"ladder.csv", data}}, 480));
  if (!r.spec.published.empty() && !r.rungs.empty() && r.rungs.back().met) {
    Table p;
    p.header = {"published figure", "Wh per call", "the last step against it", "source"};
    p.last_is_text = true;
    for (const auto& f : r.spec.published)
      p.rows.push_back({f.name, general(f.wh_per_call, 3),
                        factor(r.rungs.back().wh_per_call / f.wh_per_call), f.source});
    d.table(p);
  }
  for (const auto& s : r.rungs)
    if (!s.note.empty()) d.paragraph(s.name + ": " + s.note);
  return d.write(dir);
}

}  // namespace fleetsim::reports
