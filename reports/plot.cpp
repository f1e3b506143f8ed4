#include "reports/plot.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>

namespace fleetsim::reports {

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// For the shell: 'text' with every ' written as '\''.
std::string shell_quote(const std::string& s) {
  std::string o = "'";
  for (char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return o + "'";
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t p = 0; (p = s.find(from, p)) != std::string::npos; p += to.size())
    s.replace(p, from.size(), to);
}

// The SVG element from gnuplot's output (prolog dropped), every id X renamed to prefix-X
// along with its references (#X in href and url()).
std::string inline_svg(std::string svg, const std::string& prefix) {
  const size_t start = svg.find("<svg");
  if (start == std::string::npos) return {};
  svg.erase(0, start);
  while (!svg.empty() && (svg.back() == '\n' || svg.back() == ' ')) svg.pop_back();
  std::vector<std::string> ids;
  for (size_t p = 0; (p = svg.find(" id=", p)) != std::string::npos;) {
    const char q = svg[p + 4];
    const size_t end = svg.find(q, p + 5);
    if (end == std::string::npos) break;
    ids.push_back(svg.substr(p + 5, end - p - 5));
    p = end;
  }
  for (const auto& id : ids)
    for (const char* pat : {"id='%s'", "id=\"%s\"", "#%s'", "#%s\"", "#%s)"}) {
      std::string from = pat, to = pat;
      replace_all(from, "%s", id);
      replace_all(to, "%s", prefix + "-" + id);
      replace_all(svg, from, to);
    }
  return svg;
}

void warn_once(const std::string& msg) {
  static std::mutex m;
  static std::vector<std::string> said;
  std::lock_guard<std::mutex> lock(m);
  if (std::find(said.begin(), said.end(), msg) != said.end()) return;
  said.push_back(msg);
  std::cerr << "warning: " << msg << "\n";
}

}  // namespace

std::string gnuplot_program() {
  if (const char* env = std::getenv("FLEETSIM_GNUPLOT")) return access(env, X_OK) == 0 ? env : "";
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string d; std::getline(dirs, d, ':');) {
    const fs::path p = fs::path(d.empty() ? "." : d) / "gnuplot";
    if (access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

std::string gnuplot_quote(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o + "\"";
}

Figure draw_gnuplot(const std::string& name, const std::string& caption, const std::string& script,
                    const std::vector<DataFile>& data, int height) {
  Figure f{name, caption, "", ""};
  const std::string prog = gnuplot_program();
  if (prog.empty()) {
    f.note =
        "gnuplot was not found (install the Debian package gnuplot-nox, or set FLEETSIM_GNUPLOT)";
    warn_once(f.note + ": the report shows this note in place of each plot");
    return f;
  }
  std::string tmpl = (fs::temp_directory_path() / "fleetsim-plot-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) {
    f.note = "cannot create a temporary folder for gnuplot";
    warn_once(f.note);
    return f;
  }
  const fs::path dir = tmpl;
  for (const auto& d : data) std::ofstream(dir / d.name, std::ios::binary) << d.contents;
  std::ofstream(dir / "plot.gp") << "set terminal svg size 800," << height
                                 << " dynamic noenhanced font \"sans,11\" background \"white\"\n"
                                    "set output \"plot.svg\"\n"
                                    "set datafile separator \",\"\n"
                                    "set datafile columnheaders\n"
                                 << script << "\n";
  const std::string cmd = "cd " + shell_quote(dir.string()) + " && " + shell_quote(prog) +
                          " plot.gp >/dev/null 2>gnuplot.err </dev/null";
  const int rc = std::system(cmd.c_str());
  const std::string svg = slurp(dir / "plot.svg");
  std::string err = slurp(dir / "gnuplot.err");
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (rc != 0 || svg.find("</svg>") == std::string::npos) {
    while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
    const size_t cut = err.find_last_of('\n');
    f.note =
        "gnuplot failed (exit status " + std::to_string(WIFEXITED(rc) ? WEXITSTATUS(rc) : rc) +
        ")" +
        (err.empty() ? std::string() : ": " + err.substr(cut == std::string::npos ? 0 : cut + 1));
    warn_once("plot " + name + " not drawn: " + f.note);
    return f;
  }
  f.svg = inline_svg(svg, name);
  return f;
}

std::vector<size_t> pareto_frontier(const std::vector<ParetoPoint>& points,
                                    bool x_higher_is_better) {
  // Point a dominates b: a.y <= b.y and a's x at least as good, one of them strictly.
  auto better_x = [&](double a, double b) { return x_higher_is_better ? a > b : a < b; };
  std::vector<size_t> front;
  for (size_t i = 0; i < points.size(); ++i) {
    if (!points[i].feasible) continue;
    bool dominated = false;
    for (size_t j = 0; j < points.size() && !dominated; ++j) {
      if (j == i || !points[j].feasible) continue;
      const auto &a = points[j], &b = points[i];
      const bool x_ok = !better_x(b.x, a.x), y_ok = a.y <= b.y;
      dominated = x_ok && y_ok && (better_x(a.x, b.x) || a.y < b.y);
    }
    if (!dominated) front.push_back(i);
  }
  std::stable_sort(front.begin(), front.end(),
                   [&](size_t a, size_t b) { return points[a].x < points[b].x; });
  return front;
}

std::string pareto_csv(const std::vector<ParetoPoint>& points, bool x_higher_is_better,
                       const std::string& x_column, const std::string& y_column) {
  const std::vector<size_t> front = pareto_frontier(points, x_higher_is_better);
  std::ostringstream o;
  o.precision(10);
  o << "label," << x_column << ',' << y_column << ",feasible,chosen,on_frontier\n";
  for (size_t i = 0; i < points.size(); ++i) {
    std::string label = points[i].label;  // gnuplot reads fields apart at every comma
    std::replace(label.begin(), label.end(), ',', ';');
    std::replace(label.begin(), label.end(), '"', '\'');
    o << label << ',' << points[i].x << ',' << points[i].y << ',' << points[i].feasible << ','
      << points[i].chosen << ',' << (std::find(front.begin(), front.end(), i) != front.end())
      << '\n';
  }
  return o.str();
}

AxisRange axis_range(const std::vector<double>& values, bool allow_log, double margin) {
  std::vector<double> v;
  for (double x : values)
    if (std::isfinite(x)) v.push_back(x);
  if (v.empty()) return {};
  const auto [min_it, max_it] = std::minmax_element(v.begin(), v.end());
  const double lo = *min_it, hi = *max_it;
  if (allow_log && lo > 0 && std::log10(hi / lo) > 1.5) {
    const double a = std::log10(lo), b = std::log10(hi), m = margin * (b - a);
    return {std::pow(10.0, a - m), std::pow(10.0, b + m), true};
  }
  if (hi == lo) {
    const double half = lo != 0 ? 0.1 * std::fabs(lo) : 1.0;
    return {lo - half, hi + half, false};
  }
  const double m = margin * (hi - lo);
  return {lo >= 0 ? std::max(0.0, lo - m) : lo - m, hi + m, false};
}

std::string gnuplot_range(const std::string& axis, const AxisRange& r) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "set %srange [%.10g:%.10g]\n", axis.c_str(), r.lo, r.hi);
  return buf + std::string(r.log ? "set logscale " : "unset logscale ") + axis + "\n";
}

Figure pareto_plot(const std::string& name, const std::string& caption,
                   const std::vector<ParetoPoint>& points, bool x_higher_is_better,
                   const std::string& x_title, const std::string& y_title, bool log_x, bool log_y) {
  std::ostringstream frontier;
  frontier.precision(10);
  frontier << "x,y\n";
  for (size_t i : pareto_frontier(points, x_higher_is_better))
    frontier << points[i].x << ',' << points[i].y << '\n';
  std::vector<double> xs, ys;
  for (const auto& p : points) {
    xs.push_back(p.x);
    ys.push_back(p.y);
  }
  std::ostringstream s;
  s << "set xlabel " << gnuplot_quote(x_title) << "\nset ylabel " << gnuplot_quote(y_title) << "\n"
    << "set grid\nset key outside bottom center horizontal\n"
    << gnuplot_range("x", axis_range(xs, log_x)) << gnuplot_range("y", axis_range(ys, log_y))
    << "plot 'points.csv' using 2:($4==0 ? $3 : NaN) with points pt 6 lc rgb '#999999' title "
       "'infeasible', \\\n"
       "     'points.csv' using 2:($4==1 ? $3 : NaN) with points pt 7 lc rgb '#1f77b4' title "
       "'feasible', \\\n"
       "     'frontier.csv' using 1:2 with lines lw 2 lc rgb '#1f77b4' title 'Pareto frontier', "
       "\\\n"
       "     'points.csv' using 2:($5==1 ? $3 : NaN) with points pt 7 ps 2 lc rgb '#d62728' title "
       "'chosen', \\\n"
       "     'points.csv' using 2:($5==1 ? $3 : NaN):1 with labels offset 1,1 left notitle\n";
  return draw_gnuplot(name, caption, s.str(),
                      {{"points.csv", pareto_csv(points, x_higher_is_better, "x", "y")},
                       {"frontier.csv", frontier.str()}});
}

}  // namespace fleetsim::reports
