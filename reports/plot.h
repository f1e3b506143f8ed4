// Plots drawn by gnuplot (the Debian package gnuplot-nox) as SVG text, for the Markdown/HTML
// reports (reports/document.h). gnuplot runs as a subprocess in a temporary folder holding
// the plot's data files and script; its SVG is read back and its element ids prefixed with
// the figure's name, so several plots can share one HTML page. Output depends only on the
// data and the script (no timestamps). Without gnuplot, a figure comes back with a note
// instead of SVG, and one warning goes to stderr.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "reports/document.h"

namespace fleetsim::reports {

/// A file given to gnuplot: name (relative, no folders) and contents.
struct DataFile {
  std::string name, contents;
};

/// The gnuplot program: $FLEETSIM_GNUPLOT if set, else "gnuplot" on PATH; empty when it
/// cannot be found or run.
std::string gnuplot_program();

/// Runs gnuplot on `script` (the plot commands; the SVG terminal, output and a CSV data
/// separator are set before it) with `data` in its working folder. Never throws for a
/// missing or failing gnuplot: the figure then has a note and no SVG. `height`: of the
/// 800-wide canvas, in SVG units (the HTML page scales it to its width).
Figure draw_gnuplot(const std::string& name, const std::string& caption, const std::string& script,
                    const std::vector<DataFile>& data, int height = 440);

/// `s` quoted as a gnuplot string literal ("…" with \ and " escaped).
std::string gnuplot_quote(const std::string& s);

/// The range of one plot axis, chosen from the data rather than left to gnuplot's autoscale
/// (which widens a log axis to whole decades and can bunch every point in one corner).
struct AxisRange {
  double lo = 0, hi = 1;
  bool log = false;
};

/// The range of an axis that shows every finite value of `values` with a margin of `margin`
/// times the span on each side (on a log axis, of the span in decades). Log when `allow_log`,
/// every value is positive and they span more than 1.5 decades (max / min > 10^1.5 ≈ 31.6);
/// a linear range of non-negative values does not go below 0. No values: [0, 1]; one value
/// v (or all equal): v ± 10 % of |v| (± 1 when v is 0).
AxisRange axis_range(const std::vector<double>& values, bool allow_log, double margin = 0.05);

/// gnuplot commands for `r` on `axis` ("x" or "y"): "set xrange [lo:hi]" and "set logscale
/// x" or "unset logscale x", each on its own line.
std::string gnuplot_range(const std::string& axis, const AxisRange& r);

/// One configuration tried by a search, for the Pareto plot.
struct ParetoPoint {
  std::string label;
  double x = 0;          ///< throughput (higher is better) or cost (lower is better)
  double y = 0;          ///< latency: lower is better
  bool feasible = true;  ///< meets the constraints (SLOs)
  bool chosen = false;   ///< the configuration picked
};

/// Indices of the feasible points no other feasible point dominates (at least as good in
/// x and y, better in one), sorted by x. `x_higher_is_better`: throughput (true) or cost.
std::vector<size_t> pareto_frontier(const std::vector<ParetoPoint>& points,
                                    bool x_higher_is_better);

/// The points as CSV (label,x,y,feasible,chosen,on_frontier), with the given column names
/// for x and y (units in them, e.g. "cost_usd_per_day", "ttft_p99_s").
std::string pareto_csv(const std::vector<ParetoPoint>& points, bool x_higher_is_better,
                       const std::string& x_column, const std::string& y_column);

/// The Pareto plot: infeasible points grey, feasible ones blue, the frontier as a line, the
/// chosen point red and labelled. Axis titles carry the units ("cost ($/day)"). The axis
/// ranges come from the points (axis_range); `log_x`, `log_y`: a log scale is allowed there,
/// and used when the points span more than 1.5 decades.
Figure pareto_plot(const std::string& name, const std::string& caption,
                   const std::vector<ParetoPoint>& points, bool x_higher_is_better,
                   const std::string& x_title, const std::string& y_title, bool log_x = false,
                   bool log_y = false);

}  // namespace fleetsim::reports
