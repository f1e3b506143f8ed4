#include "reports/run_report.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "git_sha.h"  // generated: FLEETSIM_GIT_SHA
#include "hw_models/error.h"
#include "hw_models/files.h"
#include "hw_models/units.h"
#include "reports/fleet_report.h"
#include "reports/format.h"
#include "reports/plot.h"
#include "reports/summary.h"
#include "sim/fleet/population.h"

namespace fleetsim::reports {

namespace {

using units::Dim;

void write_text(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::path(dir) / name).string();
  files::write_file_atomically(path, text, true);
}

// The unit of a plot's time axis: seconds, minutes or hours by the run's length.
struct TimeAxis {
  double div = 1;
  std::string title;
  double duration_s = 0;
  // gnuplot: the x range [0, run end] in the axis unit.
  std::string range() const { return "set xrange [0:" + general(duration_s / div, 10) + "]\n"; }
};
TimeAxis time_axis(double duration_s, const std::string& what) {
  if (duration_s >= 2 * 3600.0) return {3600, what + " (h)", duration_s};
  if (duration_s >= 120) return {60, what + " (min)", duration_s};
  return {1, what + " (s)", duration_s};
}

// "americas europe": group names as a gnuplot word list (word(names, i)).
std::string gnuplot_words(const std::vector<std::string>& names) {
  std::string w;
  for (const auto& n : names) w += (w.empty() ? "" : " ") + n;
  return gnuplot_quote(w);
}

// Columns of over_time.csv (1-based, as gnuplot counts them).
constexpr const char* kOverTimeColumns =
    "region,region_index,start_s,end_s,first_tokens_simulated,ttft_p50_s,ttft_p90_s,ttft_p99_s,"
    "busy_fraction,"
    "decode_batch_mean";

using BucketGroups = std::vector<std::pair<std::string, const metrics::TimeBuckets*>>;

// TTFT percentiles per bucket, one colour per group: p99 solid, p50 dashed (and p90 dotted
// for a single group); the TTFT target as a grey line when the scenario sets one. The y range
// holds every plotted percentile and the target (so its line always shows), on a log scale
// when they span more than 1.5 decades.
Figure latency_figure(const BucketGroups& groups, const TimeAxis& ax, const std::string& csv,
                      std::optional<double> slo_ttft_s) {
  std::vector<std::string> names;
  std::vector<double> ys;
  for (const auto& [name, tb] : groups) {
    names.push_back(name);
    for (const auto& b : tb->buckets())
      if (b.latency.count() > 0)
        for (double q : {0.5, 0.9, 0.99}) ys.push_back(b.latency.quantile(q));
  }
  if (slo_ttft_s) ys.push_back(*slo_ttft_s);
  // A wider margin than the default: the target's label sits just above its line.
  const AxisRange yr = axis_range(ys, true, 0.08);
  std::ostringstream s;
  s << "names = " << gnuplot_words(names) << "\nn = " << names.size() << "\n"
    << "set xlabel " << gnuplot_quote(ax.title) << "\nset ylabel 'time to first token (s)'\n"
    << ax.range() << gnuplot_range("y", yr)
    << "set grid\nset key outside right top\nset style data linespoints\n"
    << "x(a, b) = (a + b) / 2 / " << ax.div << "\n";
  if (slo_ttft_s)
    s << "set arrow from graph 0, first " << general(*slo_ttft_s, 10) << " to graph 1, first "
      << general(*slo_ttft_s, 10)
      << " nohead lc rgb '#888888' dt 4\nset label 'TTFT target' at graph 0.01, first "
      << general(*slo_ttft_s, 10) << " offset 0,0.6 tc rgb '#666666'\n";
  s << "plot for [i=1:n] 'over_time.csv' using (x($3,$4)):($2==i-1 && $5>0 ? $8 : NaN) lc i pt 7 "
       "ps 0.6 lw 2 "
       "title word(names, i).' p99', \\\n";
  if (names.size() == 1)
    s << "     for [i=1:n] 'over_time.csv' using (x($3,$4)):($2==i-1 && $5>0 ? $7 : NaN) lc i pt 6 "
         "ps 0.6 dt 3 "
         "title word(names, i).' p90', \\\n";
  s << "     for [i=1:n] 'over_time.csv' using (x($3,$4)):($2==i-1 && $5>0 ? $6 : NaN) lc i pt 6 "
       "ps 0.6 dt 2 "
       "title word(names, i).' p50'\n";
  return draw_gnuplot("latency_over_time",
                      std::string("Time to first token over the run: percentiles per time bucket") +
                          (yr.log ? " (log scale)." : "."),
                      s.str(), {{"over_time.csv", csv}});
}

// Busy share of the held replica-time per bucket, one line per group; with one group the
// mean decode batch (sequences per iteration) on the right axis.
Figure utilization_figure(const std::vector<std::string>& groups, const TimeAxis& ax,
                          const std::string& csv, const std::string& caption) {
  std::ostringstream s;
  s << "names = " << gnuplot_words(groups) << "\nn = " << groups.size() << "\n"
    << "set xlabel " << gnuplot_quote(ax.title) << "\nset ylabel 'GPU busy (% of held time)'\n"
    << ax.range()
    << "set yrange [0:105]\nset grid\nset key outside right top\nset style data linespoints\n"
    << "x(a, b) = (a + b) / 2 / " << ax.div << "\n";
  if (groups.size() == 1)
    s << "set y2label 'decode batch (sequences per iteration)'\nset y2tics\nset ytics "
         "nomirror\nset y2range [0:*]\n"
         "plot 'over_time.csv' using (x($3,$4)):($9*100) lc 1 pt 7 ps 0.6 lw 2 title 'busy', \\\n"
         "     'over_time.csv' using (x($3,$4)):10 axes x1y2 lc 2 pt 6 ps 0.6 lw 2 title 'decode "
         "batch'\n";
  else
    s << "plot for [i=1:n] 'over_time.csv' using (x($3,$4)):($2==i-1 ? $9*100 : NaN) lc i pt 7 ps "
         "0.6 lw 2 "
         "title word(names, i)\n";
  return draw_gnuplot("utilization", caption, s.str(), {{"over_time.csv", csv}});
}

// The question and the assumptions: scenario, seed, overrides, resolved configuration,
// calibration, version.
void add_assumptions(Document& d, const scenario::Scenario& sc,
                     const std::vector<std::string>& efficiency_sources) {
  d.heading("Assumptions");
  d.paragraph(provenance_text(sc));
  std::string eff;
  for (const auto& e : efficiency_sources) eff += e + "\n";
  d.paragraph(
      "Efficiency and calibration tables used (kernel measurements behind the performance model):");
  d.preformatted(eff);
  d.paragraph("The resolved configuration (as printed by fleetsim check):");
  d.preformatted(check_report(sc));
}

void add_question(Document& d, const scenario::Scenario& sc) {
  d.heading("The question");
  d.paragraph(sc.description.empty() ? "Scenario " + sc.name + "." : sc.description);
}

}  // namespace

std::string provenance_text(const scenario::Scenario& sc) {
  std::ostringstream p;
  p << "Scenario " << sc.file << ", seed " << sc.seed;
  if (!sc.overrides.empty()) {
    p << ", overrides:";
    for (const auto& o : sc.overrides) p << " " << o;
  }
  p << "; fleetsim " << version_string() << ".";
  return p.str();
}

std::string version_string() {
  const std::string sha = FLEETSIM_GIT_SHA;
  return std::string(FLEETSIM_VERSION) + (sha.empty() ? "" : " (git " + sha + ")");
}

std::string over_time_csv(
    const std::vector<std::pair<std::string, const metrics::TimeBuckets*>>& groups) {
  std::ostringstream o;
  o << kOverTimeColumns << "\n";
  for (size_t g = 0; g < groups.size(); ++g) {
    const metrics::TimeBuckets& tb = *groups[g].second;
    const auto& buckets = tb.buckets();
    for (size_t k = 0; k < buckets.size(); ++k) {
      const auto& b = buckets[k];
      const SimTime start = static_cast<SimTime>(k) * tb.width_ns();
      const bool any = b.latency.count() > 0;
      o << groups[g].first << ',' << g << ',' << general(ns_to_seconds(start), 10) << ','
        << general(ns_to_seconds(start + tb.width_ns()), 10) << ',' << b.latency.count() << ','
        << (any ? general(b.latency.quantile(0.5), 10) : "") << ','
        << (any ? general(b.latency.quantile(0.9), 10) : "") << ','
        << (any ? general(b.latency.quantile(0.99), 10) : "") << ','
        << (b.held_s > 0 ? general(b.busy_s / b.held_s, 10) : "") << ','
        << (b.iterations > 0 ? general(b.decode_tokens / b.iterations, 10) : "") << '\n';
    }
  }
  return o.str();
}

std::vector<std::string> write_fleet_run_report(const scenario::Scenario& sc,
                                                const fleet::FleetResult& res,
                                                const std::string& dir) {
  const fleet::FleetAnswer a = fleet::fleet_answer(sc, res);
  const FleetProse prose = fleet_prose(sc, res, a);
  const auto pop = sc.make_population(sc.seed);
  const double duration_s = ns_to_seconds(pop->duration_ns());
  char start[32];
  std::snprintf(start, sizeof start, "%02d:%02d UTC",
                static_cast<int>(std::fmod(pop->start_s(), 86400.0) / 3600),
                static_cast<int>(std::fmod(pop->start_s(), 3600.0) / 60));
  const TimeAxis ax = time_axis(duration_s, std::string("time since the run's start at ") + start);
  std::vector<std::string> names;
  std::vector<std::pair<std::string, const metrics::TimeBuckets*>> groups;
  for (const auto& r : res.regions) {
    names.push_back(r.name);
    groups.emplace_back(r.name, &r.over_time);
  }

  Document d("fleetsim report — " + sc.name);
  add_question(d, sc);
  d.heading("The answer");
  d.paragraph(prose.answer);
  if (!prose.why_not_at_home.empty()) {
    d.heading("Why not at home");
    for (const auto& p : prose.why_not_at_home) d.paragraph(p);
  }
  if (!prose.cost.empty()) {
    d.heading("Cost and energy");
    d.paragraph(prose.cost);
  }
  d.heading("Users and sampling");
  d.preformatted(fleet_users_notes(sc, res, a));
  d.heading("Tables");
  for (auto& t : fleet_tables(sc, res)) d.table(std::move(t));
  d.preformatted(fleet_techniques_notes(sc, res) + fleet_events_notes(res));

  d.heading("Over the run");
  // Load against capacity, per region, from regions.csv (sampled counts): calls/s at full
  // scale = calls in the interval / sample / its length (the last may be shorter); GPUs at
  // full scale = simulated GPUs × the region's full/simulated GPU ratio.
  {
    const std::vector<double> scale = fleet::region_gpu_scale(res);
    const size_t n = res.regions.size(), cols = n > 1 ? 2 : 1, rows = (n + cols - 1) / cols;
    std::ostringstream s;
    s << "names = " << gnuplot_words(names) << "\narray gscale[" << n << "]\n";
    for (size_t r = 0; r < n; ++r)
      s << "gscale[" << r + 1 << "] = " << general(scale[r], 10) << "\n";
    s << "I = " << general(sc.fleet->report_interval_s, 10) << "\nD = " << general(duration_s, 10)
      << "\nS = " << general(res.sample, 10)
      << "\nlen(t) = (t + I < D ? I : D - t)\nx(t) = (t + len(t) / 2) / " << ax.div << "\n"
      << "set multiplot layout " << rows << "," << cols << "\n"
      << ax.range()
      << "set grid\nset key bmargin center horizontal\nset ytics nomirror\nset y2tics\nset yrange "
         "[0:*]\nset y2range [0:*]\n"
      << "set ylabel 'calls/s'\nset y2label 'GPUs active'\nset xlabel " << gnuplot_quote(ax.title)
      << "\n"
      << "do for [i=1:" << n << "] {\n"
      << "  set title word(names, i)\n"
      << "  plot 'regions.csv' using (x($2)):(strcol(1) eq word(names, i) ? $3 / S / len($2) : "
         "NaN) with lines lw 2 "
         "lc 1 title 'load (calls/s)', \\\n"
      << "       'regions.csv' using (x($2)):(strcol(1) eq word(names, i) ? $7 * gscale[i] : NaN) "
         "axes x1y2 with steps "
         "lw 2 lc 2 title 'capacity (GPUs active)'\n}\nunset multiplot\n";
    d.figure(draw_gnuplot("load_capacity",
                          "Load against capacity per region (full scale): calls/s from the "
                          "region's users and the GPUs "
                          "of its active replicas, per report interval.",
                          s.str(), {{"regions.csv", fleet_series_csv(res)}},
                          static_cast<int>(320 * rows)));
  }
  const std::string ot = over_time_csv(groups);
  d.figure(latency_figure(groups, ax, ot, sc.slo_ttft_s));
  d.figure(utilization_figure(names, ax, ot,
                              "GPU utilization per region: share of the held replica-time with a "
                              "batch iteration running."));
  std::string cost_csv;
  if (a.cost_usd_per_day > 0) {
    cost_csv = "pool,cloud_usd_per_day,hardware_usd_per_day,electricity_usd_per_day\n";
    for (const auto& c : a.pool_costs)
      cost_csv += c.pool + "," + general(c.cloud_usd_per_day, 10) + "," +
                  general(c.hardware_usd_per_day, 10) + "," +
                  general(c.electricity_usd_per_day, 10) + "\n";
    // Cloud: one bar per pool; owned: hardware and electricity stacked.
    const std::string s =
        "set style data histograms\nset style histogram rowstacked\nset style fill solid 0.85 "
        "border -1\n"
        "set boxwidth 0.7\nset grid ytics\nset key outside right top\nset ylabel 'cost ($/day, "
        "full scale)'\n"
        "set yrange [0:*]\nset xtics rotate by -30 left\nset format y '$%.1s%c'\n" +
        std::string(
            a.owned ? "plot 'cost.csv' using 3:xtic(1) title 'hardware (depreciation)' lc rgb "
                      "'#ff7f0e', \\\n"
                      "     '' using 4 title 'electricity' lc rgb '#2ca02c'\n"
                    : "plot 'cost.csv' using 2:xtic(1) title 'cloud GPU-hours' lc rgb '#1f77b4'\n");
    d.figure(draw_gnuplot("cost", "Cost a day per pool at full scale, by what it pays for.", s,
                          {{"cost.csv", cost_csv}}));
  }
  std::vector<std::string> eff;
  for (const auto& p : res.pools) eff.push_back(p.name + ": " + p.spec->pool.efficiency_source);
  add_assumptions(d, sc, eff);
  std::vector<std::string> files = d.write(dir);
  write_text(dir, "over_time.csv", ot);
  files.push_back("over_time.csv");
  if (!cost_csv.empty()) {
    write_text(dir, "cost.csv", cost_csv);
    files.push_back("cost.csv");
  }
  return files;
}

std::vector<std::string> write_single_run_report(const scenario::Scenario& sc, const RunResult& run,
                                                 const metrics::TimeBuckets& over_time,
                                                 const std::string& dir) {
  const auto& s = run.summary;
  Document d("fleetsim report — " + sc.name);
  add_question(d, sc);
  d.heading("The answer");
  std::ostringstream ans;
  auto t = [](double v) { return units::format(v, Dim::kTime); };
  ans << serving_setup(sc) << " served " << s.requests_completed << " of " << s.requests_arrived
      << " requests (" << sc.workload_description << ") in " << t(s.sim_duration_s)
      << " of simulated time: " << units::format_count(s.requests_per_s) << " requests/s and "
      << units::format_count(s.output_tok_per_s)
      << " output tokens/s. Time to first token: " << t(s.ttft.p50_s) << " at the median, "
      << t(s.ttft.p99_s) << " at p99; time per output token " << t(s.tpot.p50_s) << " (p50), "
      << t(s.tpot.p99_s) << " (p99). The replicas were busy " << pct(s.replica_busy_fraction)
      << " of the time";
  if (sc.slo_ttft_s || sc.slo_tpot_s)
    ans << "; " << pct(s.slo_attainment) << " of completed requests met the SLO";
  ans << ".";
  d.paragraph(ans.str());
  d.heading("Tables");
  d.table(latency_table(s));
  d.preformatted(summary_notes(sc, run));
  d.heading("Over the run");
  const TimeAxis ax = time_axis(s.sim_duration_s, "simulated time");
  const BucketGroups all = {{"all", &over_time}};
  const std::string ot = over_time_csv(all);
  d.figure(latency_figure(all, ax, ot, sc.slo_ttft_s));
  d.figure(utilization_figure(
      {"all"}, ax, ot,
      "Utilization over the run: share of replica-time with a batch iteration running, and the "
      "mean decode batch (sequences per iteration)."));
  add_assumptions(d, sc, {sc.efficiency_source});
  std::vector<std::string> files = d.write(dir);
  write_text(dir, "over_time.csv", ot);
  files.push_back("over_time.csv");
  return files;
}

}  // namespace fleetsim::reports
