#include "sim/validation/fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "hw_models/error.h"
#include "hw_models/files.h"
#include "hw_models/units.h"
#include "sim/validation/error_band.h"

namespace fleetsim::validation {

namespace {

double median_abs(const std::vector<Case>& cases) {
  std::vector<double> v;
  for (const auto& c : cases) v.push_back(std::fabs(c.error));
  return quantile(std::move(v), 0.5);
}

std::vector<std::string> files_of(const std::vector<Case>& cases) {
  std::vector<std::string> f;
  for (const auto& c : cases) f.push_back(c.file);
  return f;
}

// Runs `files` with the engine's parameters set to `x`.
std::vector<Case> evaluate(const std::vector<std::string>& files, const hw::Catalog& base,
                           const std::shared_ptr<const hw::CalibrationSet>& calibration,
                           const hw::EngineSpec& engine, const std::vector<std::string>& params,
                           const std::vector<double>& x, int threads) {
  hw::Catalog catalog = base;
  hw::EngineSpec e = engine;
  for (size_t i = 0; i < params.size(); ++i) hw::set_engine_parameter(e, params[i], x[i]);
  catalog.put_engine(e);
  return run_cases(files, catalog, calibration, threads);
}

// Coordinate descent with golden-section line searches from `x`, then a Nelder–Mead polish
// in the box normalised to [0, 1]^n (coordinate steps crawl along a valley where two
// parameters trade off, e.g. overhead against kernel efficiency).
std::vector<double> minimise(const std::vector<std::string>& files, const hw::Catalog& catalog,
                             const std::shared_ptr<const hw::CalibrationSet>& calibration,
                             const hw::EngineSpec& engine, const std::vector<std::string>& params,
                             std::vector<double> x, const FitOptions& opt) {
  if (params.empty() || files.empty()) return x;
  auto f = [&](const std::vector<double>& v) {
    return fit_objective(evaluate(files, catalog, calibration, engine, params, v, opt.threads));
  };
  const size_t n = params.size();
  std::vector<double> lo(n), hi(n);
  for (size_t i = 0; i < n; ++i) {
    const hw::EngineParameterInfo info = hw::engine_parameter_info(params[i]);
    lo[i] = info.lo;
    hi[i] = info.hi;
    x[i] = std::clamp(x[i], lo[i], hi[i]);
  }
  double best = f(x);
  const double phi = (std::sqrt(5.0) - 1.0) / 2.0;  // 0.618…
  for (int sweep = 0; sweep < opt.sweeps; ++sweep) {
    for (size_t i = 0; i < n; ++i) {
      double a = lo[i], b = hi[i];
      auto at = [&](double v) {
        std::vector<double> y = x;
        y[i] = v;
        return f(y);
      };
      double c = b - phi * (b - a), d = a + phi * (b - a);
      double fc = at(c), fd = at(d);
      for (int k = 0; k < opt.golden_steps; ++k) {
        if (fc <= fd) {
          b = d;
          d = c;
          fd = fc;
          c = b - phi * (b - a);
          fc = at(c);
        } else {
          a = c;
          c = d;
          fc = fd;
          d = a + phi * (b - a);
          fd = at(d);
        }
      }
      const double v = fc <= fd ? c : d, fv = std::min(fc, fd);
      // Keep the old value unless the search found a strictly better one (the objective
      // is piecewise flat where a parameter does not matter: leave it where it was).
      if (fv < best - 1e-12) {
        best = fv;
        x[i] = v;
      }
    }
  }
  if (n < 2 || opt.polish_evals <= 0) return x;
  // Nelder–Mead (reflection 1, expansion 2, contraction 1/2, shrink 1/2) on u ∈ [0, 1]^n.
  auto to_x = [&](const std::vector<double>& u) {
    std::vector<double> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = lo[i] + std::clamp(u[i], 0.0, 1.0) * (hi[i] - lo[i]);
    return v;
  };
  std::vector<std::vector<double>> simplex(n + 1, std::vector<double>(n));
  for (size_t i = 0; i < n; ++i) simplex[0][i] = (x[i] - lo[i]) / (hi[i] - lo[i]);
  for (size_t k = 1; k <= n; ++k) {
    simplex[k] = simplex[0];
    const double step = 0.02;
    simplex[k][k - 1] += simplex[k][k - 1] + step <= 1.0 ? step : -step;
  }
  std::vector<double> fs(n + 1);
  fs[0] = best;
  for (size_t k = 1; k <= n; ++k) fs[k] = f(to_x(simplex[k]));
  int evals = static_cast<int>(n);
  while (evals < opt.polish_evals) {
    std::vector<size_t> order(n + 1);
    for (size_t k = 0; k <= n; ++k) order[k] = k;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return fs[a] < fs[b]; });
    const size_t b = order[0], w = order[n], sw = order[n - 1];
    if (fs[w] - fs[b] < 1e-10) break;
    std::vector<double> centroid(n, 0.0);
    for (size_t k = 0; k <= n; ++k)
      if (k != w)
        for (size_t i = 0; i < n; ++i) centroid[i] += simplex[k][i] / static_cast<double>(n);
    auto along = [&](double t) {
      std::vector<double> p(n);
      for (size_t i = 0; i < n; ++i)
        p[i] = std::clamp(centroid[i] + t * (simplex[w][i] - centroid[i]), 0.0, 1.0);
      return p;
    };
    const std::vector<double> r = along(-1.0);
    const double fr = f(to_x(r));
    ++evals;
    if (fr < fs[b]) {
      const std::vector<double> e = along(-2.0);
      const double fe = f(to_x(e));
      ++evals;
      if (fe < fr) {
        simplex[w] = e;
        fs[w] = fe;
      } else {
        simplex[w] = r;
        fs[w] = fr;
      }
    } else if (fr < fs[sw]) {
      simplex[w] = r;
      fs[w] = fr;
    } else {
      const std::vector<double> c = along(fr < fs[w] ? -0.5 : 0.5);
      const double fc = f(to_x(c));
      ++evals;
      if (fc < std::min(fr, fs[w])) {
        simplex[w] = c;
        fs[w] = fc;
      } else {
        for (size_t k = 0; k <= n; ++k) {
          if (k == b) continue;
          for (size_t i = 0; i < n; ++i)
            simplex[k][i] = simplex[b][i] + 0.5 * (simplex[k][i] - simplex[b][i]);
          fs[k] = f(to_x(simplex[k]));
          ++evals;
        }
      }
    }
  }
  size_t bi = 0;
  for (size_t k = 1; k <= n; ++k)
    if (fs[k] < fs[bi]) bi = k;
  return fs[bi] < best ? to_x(simplex[bi]) : x;
}

// MoE-only parameters are fitted on MoE cases, the others on dense cases (with the MoE
// terms at their starting values); the dense stage first, so that the MoE terms explain
// what is left of the MoE cases' error once the shared operators are pinned by dense ones.
// A shared parameter is never fitted on MoE cases alone: there it would absorb the MoE
// kernels' slowness and carry it to every dense model the engine runs.
// mla_efficiency counts as one: it moves only MLA models, and every MLA model (DeepSeek-V2/V3,
// Kimi-K2) is a MoE one.
bool moe_parameter(const std::string& p) {
  return p == "moe_efficiency" || p == "moe_compute_efficiency" || p == "moe_half_tokens" ||
         p == "moe_half_expert_mb" || p == "moe_imbalance" || p == "mla_efficiency";
}

struct Staged {
  std::vector<std::string> params;  // dense-stage parameters, then MoE-stage ones
  std::vector<double> values;
};

// The two-stage fit of `engine` on `train`; each stage fits at most size/kCasesPerParameter
// of its parameters, in the order of the engine's fit: list.
Staged fit_stages(const std::vector<Case>& train, const hw::Catalog& catalog,
                  const std::shared_ptr<const hw::CalibrationSet>& calibration,
                  const hw::EngineSpec& engine, const FitOptions& opt) {
  std::vector<std::string> dense_files, moe_files, dense_params, moe_params;
  for (const auto& c : train) (c.model_kind == "moe" ? moe_files : dense_files).push_back(c.file);
  for (const auto& p : engine.fit) (moe_parameter(p) ? moe_params : dense_params).push_back(p);
  dense_params.resize(std::min(dense_params.size(), dense_files.size() / kCasesPerParameter));
  moe_params.resize(std::min(moe_params.size(), moe_files.size() / kCasesPerParameter));
  hw::EngineSpec e = engine;
  Staged out;
  for (const auto& [params, files] :
       {std::pair{dense_params, dense_files}, std::pair{moe_params, moe_files}}) {
    std::vector<double> x;
    for (const auto& p : params) x.push_back(hw::engine_parameter(e, p));
    x = minimise(files, catalog, calibration, e, params, x, opt);
    for (size_t i = 0; i < params.size(); ++i) {
      hw::set_engine_parameter(e, params[i], x[i]);
      out.params.push_back(params[i]);
      out.values.push_back(x[i]);
    }
  }
  return out;
}

std::string format_param(const std::string& name, double v) {
  const hw::EngineParameterInfo info = hw::engine_parameter_info(name);
  char buf[64];
  if (info.time) {
    std::snprintf(buf, sizeof buf, "%.4gus", v * 1e6);
  } else if (info.bandwidth) {
    std::snprintf(buf, sizeof buf, "%.4gGB/s", v * 1e-9);
  } else {
    std::snprintf(buf, sizeof buf, "%.4g", v);
  }
  return buf;
}

}  // namespace

double fit_objective(const std::vector<Case>& cases) {
  if (cases.empty()) return 0;
  double s = 0;
  for (const auto& c : cases) s += std::fabs(std::log(c.predicted / c.measured));
  return s / static_cast<double>(cases.size());
}

FitResult fit_engine(const std::vector<std::string>& files, const hw::Catalog& catalog,
                     std::shared_ptr<const hw::CalibrationSet> calibration,
                     const std::string& engine_id, const FitOptions& opt) {
  const hw::EngineSpec& engine = catalog.engine(engine_id);
  if (engine.fit.empty())
    throw InputError("engine '" + engine_id + "' names no parameters to fit",
                     "list up to 4 under 'fit:' in its catalog file");
  // Which cases are the engine's, and which of those train.
  const std::vector<Case> all = run_cases(files, catalog, calibration, opt.threads);
  std::vector<Case> train, held;
  for (const auto& c : all) {
    if (c.engine != engine_id || c.category == "collective") continue;
    (c.heldout ? held : train).push_back(c);
  }
  if (train.empty())
    throw InputError("engine '" + engine_id + "' has no training cases in the suite",
                     "add published measurements of it (scenarios/validation/README.md)");
  FitResult r;
  r.engine = engine_id;
  r.train_cases = static_cast<int>(train.size());
  r.heldout_cases = static_cast<int>(held.size());

  // Start from the priors the last fit recorded, so a refit does not compound on its output.
  hw::EngineSpec start = engine;
  for (const auto& [p, v] : engine.priors) hw::set_engine_parameter(start, p, v);
  r.train_median_before =
      median_abs(evaluate(files_of(train), catalog, calibration, start, {}, {}, opt.threads));
  r.heldout_median_before =
      median_abs(evaluate(files_of(held), catalog, calibration, start, {}, {}, opt.threads));
  const Staged fit = fit_stages(train, catalog, calibration, start, opt);
  r.params = fit.params;
  r.after = fit.values;
  // A parameter an earlier fit changed that this one does not (its list or its case count
  // changed) goes back to its prior, so the file holds the engine that was evaluated.
  for (const auto& [p, v] : engine.priors)
    if (std::find(r.params.begin(), r.params.end(), p) == r.params.end()) {
      r.params.push_back(p);
      r.after.push_back(v);
    }
  for (const auto& p : r.params) r.before.push_back(hw::engine_parameter(start, p));
  const std::vector<Case> train_after =
      evaluate(files_of(train), catalog, calibration, start, r.params, r.after, opt.threads);
  r.train_median_after = median_abs(train_after);
  const std::vector<Case> held_after =
      evaluate(files_of(held), catalog, calibration, start, r.params, r.after, opt.threads);
  r.heldout_median_after = median_abs(held_after);

  std::map<std::string, std::vector<Case>> by_source;
  for (const auto& c : train) by_source[c.source].push_back(c);
  r.sources = static_cast<int>(by_source.size());
  if (opt.loso && by_source.size() > 1) {
    std::vector<Case> predicted;
    for (const auto& [source, cases] : by_source) {
      std::vector<Case> rest;
      for (const auto& c : train)
        if (c.source != source) rest.push_back(c);
      const Staged x = fit_stages(rest, catalog, calibration, start, opt);
      const std::vector<Case> out =
          evaluate(files_of(cases), catalog, calibration, start, x.params, x.values, opt.threads);
      predicted.insert(predicted.end(), out.begin(), out.end());
    }
    r.loso_median = median_abs(predicted);
  } else {
    r.loso_median = std::nan("");
  }
  return r;
}

std::string fit_provenance(const FitResult& r, const std::string& date) {
  auto r4 = [](double v) { return std::round(v * 1e4) / 1e4; };
  std::ostringstream prov;
  prov << "  by: fleetsim calibrate fit\n  date: " << date
       << "\n  objective: mean |ln(predicted/measured)| over the training cases"
       << "\n  training_cases: " << r.train_cases << "\n  heldout_cases: " << r.heldout_cases
       << "\n  training_sources: " << r.sources
       << "\n  train_median_abs_error: " << r4(r.train_median_after)
       << "\n  heldout_median_abs_error: " << r4(r.heldout_median_after);
  if (!std::isnan(r.loso_median)) prov << "\n  loso_median_abs_error: " << r4(r.loso_median);
  prov << "\n  before:";
  for (size_t i = 0; i < r.params.size(); ++i) {
    char b[128];
    std::snprintf(b, sizeof b, "\n    %s: %.6g", r.params[i].c_str(), r.before[i]);
    prov << b;
  }
  prov << "\n";
  return prov.str();
}

void write_fit(const std::string& engine_file, const FitResult& r, const std::string& provenance) {
  std::ifstream in(engine_file);
  if (!in) throw InputError("cannot read the engine file", "check the catalog folder", engine_file);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  // Drop an old `fitted:` block (it is the file's last top-level section).
  const std::regex fitted_block(R"((^|\n)fitted:[\s\S]*$)");
  text = std::regex_replace(text, fitted_block, "$1");
  if (!text.empty() && text.back() != '\n') text += '\n';
  for (size_t i = 0; i < r.params.size(); ++i) {
    const hw::EngineParameterInfo info = hw::engine_parameter_info(r.params[i]);
    // "<section>:" then, before the next top-level key, "  <key>: <value>" (comments kept).
    const size_t sec = text.find("\n" + info.section + ":");
    if (sec == std::string::npos)
      throw InputError(
          "engine file has no '" + info.section + ":' section for fitted parameter " + r.params[i],
          "write '" + info.section + ": {" + info.key + ": ...}' as a block mapping", engine_file);
    const std::regex line("(\n  " + info.key + ":[ \t]*)([^ \t\n#]+)");
    std::smatch m;
    const std::string tail = text.substr(sec + 1);
    const size_t next_top = [&] {
      std::smatch t;
      const std::regex top("\n[A-Za-z_]");
      return std::regex_search(tail, t, top) ? static_cast<size_t>(t.position(0)) : tail.size();
    }();
    std::string section = tail.substr(0, next_top);
    if (!std::regex_search(section, m, line))
      throw InputError("engine file's '" + info.section + ":' has no '" + info.key + ":' line",
                       "write every fitted parameter on its own line", engine_file);
    // The line's comment says whether the value is fitted (and from which prior) or the
    // prior itself; what else it said is kept.
    std::string rest = m.suffix().str();
    const size_t eol = std::min(rest.find('\n'), rest.size());
    std::string comment = rest.substr(0, eol);
    rest = rest.substr(eol);
    const size_t hash = comment.find('#');
    std::string said = hash == std::string::npos ? std::string() : comment.substr(hash + 1);
    static const std::regex tag(
        R"(^\s*(prior before the fit|fitted \(prior [^)]*\)|prior(?=[\s:;,]|$))?[\s:;,]*)");
    said = std::regex_replace(said, tag, "", std::regex_constants::format_first_only);
    while (!said.empty() && (said.back() == ' ' || said.back() == '\t')) said.pop_back();
    const std::string pad = hash == std::string::npos ? "   " : comment.substr(0, hash);
    std::string note = r.after[i] == r.before[i]
                           ? std::string("prior")
                           : "fitted (prior " + format_param(r.params[i], r.before[i]) + ")";
    if (!said.empty()) note += ": " + said;
    section = m.prefix().str() + m[1].str() + format_param(r.params[i], r.after[i]) +
              (pad.empty() ? std::string(" ") : pad) + "# " + note + rest;
    text = text.substr(0, sec + 1) + section + tail.substr(next_top);
  }
  text += "fitted:\n" + provenance;
  // Rewriting the engine file is this command's job, so it may replace an input.
  files::AtomicFile out(engine_file, false, true);
  out << text;
  out.commit();
}

}  // namespace fleetsim::validation
