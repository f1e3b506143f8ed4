#include "reports/sweep.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "hw_models/files.h"
#include "reports/format.h"
#include "reports/plot.h"
#include "sim/app/replicate.h"

namespace fleetsim::reports {

namespace {

// Metric names in the order of the first result (every item of a sweep has the same).
std::vector<std::string> metric_names(const std::vector<std::string>& results) {
  std::vector<std::string> names;
  if (results.empty()) return names;
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(results.front());
  for (const auto& [k, v] : j.items()) names.push_back(k);
  return names;
}

// The leading number of `v` ("20/s" → 20, "256" → 256) and the rest ("/s"); nullopt when it
// does not start with a number.
std::optional<std::pair<double, std::string>> number_and_unit(const std::string& v) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (end == v.c_str() || !std::isfinite(x)) return std::nullopt;
  return std::make_pair(x, std::string(end));
}

// The curve of a sweep over one numeric axis: axis values (ascending as given) and the mean
// over seeds of each metric. Empty when the sweep is not such a sweep.
struct Curve {
  std::vector<double> x;
  std::map<std::string, std::vector<double>> y;
};
Curve curve_of(const app::SweepSpec& spec, const std::vector<std::string>& results) {
  Curve c;
  if (spec.vary.size() != 1 || spec.points() < 3 || results.size() != spec.items()) return c;
  std::string unit;
  for (size_t i = 0; i < spec.vary[0].second.size(); ++i) {
    const auto nu = number_and_unit(spec.vary[0].second[i]);
    if (!nu || (i > 0 && (nu->second != unit || nu->first <= c.x.back()))) return {};
    unit = nu->second;
    c.x.push_back(nu->first);
  }
  const std::vector<std::string> names = metric_names(results);
  for (size_t p = 0; p < spec.points(); ++p)
    for (const auto& n : names) {
      double sum = 0;
      for (int s = 0; s < spec.seeds; ++s)
        sum += nlohmann::json::parse(
                   results[p * static_cast<size_t>(spec.seeds) + static_cast<size_t>(s)])
                   .at(n)
                   .get<double>();
      c.y[n].push_back(sum / spec.seeds);
    }
  return c;
}

const char* kLatencyCurves[] = {"ttft_p99_s", "e2e_p99_s", "tpot_p99_s"};

}  // namespace

int knee_index(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = x.size();
  if (n < 3 || y.size() != n) return -1;
  const double x0 = x.front(), xs = x.back() - x.front();
  const double y0 = y.front(), ys = y.back() - y.front();
  if (!(xs > 0) || !(ys > 0)) return -1;
  int best = -1;
  double gap = 0;
  for (size_t i = 1; i + 1 < n; ++i) {
    // Scaled to [0, 1] the chord is the diagonal: how far the point lies below it.
    const double d = (x[i] - x0) / xs - (y[i] - y0) / ys;
    if (d > gap) {
      gap = d;
      best = static_cast<int>(i);
    }
  }
  return best;
}

std::optional<SweepKnee> sweep_knee(const app::SweepSpec& spec,
                                    const std::vector<std::string>& results) {
  const Curve c = curve_of(spec, results);
  if (c.x.empty()) return std::nullopt;
  for (const char* m : kLatencyCurves) {
    const auto it = c.y.find(m);
    if (it == c.y.end()) continue;
    const int k = knee_index(c.x, it->second);
    if (k < 0) return std::nullopt;
    return SweepKnee{spec.vary[0].first, spec.vary[0].second[static_cast<size_t>(k)], m};
  }
  return std::nullopt;
}

std::vector<std::string> write_sweep_report(const app::SweepSpec& spec,
                                            const std::vector<std::string>& results,
                                            const std::string& name, const std::string& dir) {
  Document d("fleetsim sweep: " + name);
  const Curve c = curve_of(spec, results);
  const std::optional<SweepKnee> knee = sweep_knee(spec, results);
  if (knee)
    d.paragraph("The knee: " + knee->metric + " turns up at " + knee->axis + " = " + knee->value +
                " (the point farthest below the curve's chord, both axes scaled to [0, 1]: "
                "Kneedle).");
  d.table(sweep_table(spec, results));
  if (!c.x.empty()) {
    std::string data = "x";
    std::vector<std::string> shown;
    std::vector<double> all;
    for (const char* m : kLatencyCurves)
      if (c.y.count(m)) {
        shown.push_back(m);
        data += std::string(",") + m;
        for (double v : c.y.at(m)) all.push_back(v);
      }
    data += "\n";
    for (size_t i = 0; i < c.x.size(); ++i) {
      data += general(c.x[i], 8);
      for (const auto& m : shown) data.append(",").append(general(c.y.at(m)[i], 8));
      data += "\n";
    }
    std::string script = gnuplot_range("x", axis_range(c.x, false)) +
                         gnuplot_range("y", axis_range(all, true, 0.08)) + "set xlabel " +
                         gnuplot_quote(spec.vary[0].first) +
                         "\nset ylabel \"seconds\"\nset grid\nset key top left\n";
    if (knee) {
      const double kx = number_and_unit(knee->value)->first;
      script += "set arrow from " + general(kx, 8) + ", graph 0 to " + general(kx, 8) +
                ", graph 1 nohead dt 2 lw 2 lc rgb '#c0392b'\nset label " +
                gnuplot_quote("knee: " + knee->value) + " at " + general(kx, 8) +
                ", graph 0.92 offset 0.5,0 textcolor rgb '#c0392b'\n";
    }
    script += "plot ";
    for (size_t k = 0; k < shown.size(); ++k)
      script += std::string(k ? ", " : "") +
                "'sweep_latency.csv' using 1:" + std::to_string(k + 2) +
                " with linespoints lw 2 pt 7 title " + gnuplot_quote(shown[k]);
    script += "\n";
    d.figure(draw_gnuplot("sweep_latency",
                          "Tail latencies against " + spec.vary[0].first +
                              (spec.seeds > 1 ? " (mean over the seeds)" : "") +
                              (knee ? "; the dashed line marks the knee" : ""),
                          script, {{"sweep_latency.csv", data}}));
  }
  return d.write(dir);
}

std::string write_sweep_csv(const app::SweepSpec& spec, uint64_t base_seed,
                            const std::vector<std::string>& results, const std::string& dir) {
  const std::string path = dir + "/sweep.csv";
  files::AtomicFile file(path);
  std::ostream& f = file.stream();
  const std::vector<std::string> names = metric_names(results);
  for (const auto& [k, v] : spec.vary) f << csv_field(k) << ',';
  f << "seed";
  for (const auto& n : names) f << ',' << n;
  f << '\n';
  for (std::size_t i = 0; i < results.size(); ++i) {
    const std::size_t p = i / static_cast<std::size_t>(spec.seeds);
    for (const auto& o : spec.point_overrides(p)) f << csv_field(o.substr(o.find('=') + 1)) << ',';
    f << base_seed + i % static_cast<std::size_t>(spec.seeds);
    const nlohmann::json j = nlohmann::json::parse(results[i]);
    for (const auto& n : names) f << ',' << general(j.at(n).get<double>(), 6);
    f << '\n';
  }
  file.commit();
  return path;
}

nlohmann::ordered_json sweep_rows(const app::SweepSpec& spec, uint64_t base_seed,
                                  const std::vector<std::string>& results) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < results.size(); ++i) {
    const std::size_t p = i / static_cast<std::size_t>(spec.seeds);
    nlohmann::ordered_json row;
    const std::vector<std::string> sets = spec.point_overrides(p);  // "key=value"
    for (std::size_t a = 0; a < spec.vary.size(); ++a)
      row[spec.vary[a].first] = sets[a].substr(spec.vary[a].first.size() + 1);
    row["seed"] = base_seed + i % static_cast<std::size_t>(spec.seeds);
    const nlohmann::ordered_json metrics = nlohmann::ordered_json::parse(results[i]);
    for (const auto& [k, v] : metrics.items()) row[k] = v;
    rows.push_back(std::move(row));
  }
  return rows;
}

Table sweep_table(const app::SweepSpec& spec, const std::vector<std::string>& results) {
  const std::vector<std::string> names = metric_names(results);
  Table t;
  std::string first;
  for (const auto& [k, v] : spec.vary) first += (first.empty() ? "" : ", ") + k;
  t.header.push_back(first.empty() ? "point" : first);
  for (const auto& n : names) t.header.push_back(n);
  for (std::size_t p = 0; p < spec.points(); ++p) {
    std::vector<std::string> row;
    std::string label;
    for (const auto& o : spec.point_overrides(p))
      label += (label.empty() ? "" : ", ") + o.substr(o.find('=') + 1);
    row.push_back(label.empty() ? "as written" : label);
    std::map<std::string, std::vector<double>> vals;
    for (int s = 0; s < spec.seeds; ++s) {
      const nlohmann::json j = nlohmann::json::parse(
          results[p * static_cast<std::size_t>(spec.seeds) + static_cast<std::size_t>(s)]);
      for (const auto& n : names) vals[n].push_back(j.at(n).get<double>());
    }
    for (const auto& n : names) {
      if (spec.seeds == 1) {
        row.push_back(general(vals[n][0], 6));
      } else {
        const app::MetricSpread m = app::spread_of(vals[n]);
        row.push_back(general(m.mean, 6) + " ± " + general(m.ci95, 6));
      }
    }
    t.rows.push_back(row);
  }
  return t;
}

}  // namespace fleetsim::reports
