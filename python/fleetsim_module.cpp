// The Python module `fleetsim`: run, plan and sweep a scenario from Python and get what the
// command-line tool writes (summary.json, per-request rows, plan.json and plan.csv,
// sweep.csv) as Python objects. Every step is the library's own (scenario::load with the
// --set overrides, the app layer's runs, the reports' JSON and rows); this file converts
// arguments and results and releases the GIL while the simulator runs.
#include <pybind11/pybind11.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "hw_models/calibration.h"
#include "hw_models/catalog.h"
#include "hw_models/error.h"
#include "hw_models/yaml_reader.h"
#include "reports/deploy.h"
#include "reports/fleet_plan.h"
#include "reports/fleet_report.h"
#include "reports/plan_report.h"
#include "reports/replications.h"
#include "reports/summary.h"
#include "reports/sweep.h"
#include "sim/app/fleet_plan.h"
#include "sim/app/plan.h"
#include "sim/app/replicate.h"
#include "sim/app/run.h"
#include "sim/app/sweep.h"
#include "sim/dist/dist.h"
#include "sim/plan/planner.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/schema.h"

namespace py = pybind11;

namespace fleetsim::python {

// The module's InputError type (a ValueError), created at import.
PyObject* g_input_error = nullptr;

// ---- Python to C++ ------------------------------------------------------------------------

// Text as a Python str; bytes that are not UTF-8 (a file name) become U+FFFD.
py::str text(const std::string& s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
  if (o == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

std::string type_name(const py::handle& v) { return py::str(py::type::of(v).attr("__name__")); }

// An integer-like object (int, numpy.int64, ...) as a Python int.
py::int_ index_of(const py::handle& v) {
  PyObject* o = PyNumber_Index(v.ptr());
  if (o == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::int_>(o);
}

// A scenario value as the text `--set key=value` takes: true/false, numbers as Python
// writes them, strings as they are; lists and mappings in YAML flow style with their
// strings quoted (["h100-sxm", "h200-sxm"], {"ttft": {"p99": "2s"}}).
std::string scenario_value_text(const py::handle& v, const std::string& key, bool nested) {
  if (v.is_none()) return "null";
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>() ? "true" : "false";
  if (py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v)) return py::str(v);
  if (py::hasattr(v, "__index__") && !py::isinstance<py::str>(v)) return py::str(index_of(v));
  if (py::isinstance<py::str>(v) || py::hasattr(v, "__fspath__")) {
    const std::string s = py::str(py::module_::import("os").attr("fspath")(v));
    return nested ? nlohmann::json(s).dump() : s;
  }
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    std::string out = "[";
    for (const auto& item : v) {
      out += (out.size() > 1 ? ", " : "") + scenario_value_text(item, key, true);
    }
    return out + "]";
  }
  if (py::isinstance<py::dict>(v)) {
    std::string out = "{";
    for (const auto& [k, item] : v.cast<py::dict>()) {
      if (!py::isinstance<py::str>(k))
        throw py::type_error("the keys of the mapping given for '" + key +
                             "' must be strings, not " + type_name(k));
      out += (out.size() > 1 ? ", " : "") + nlohmann::json(k.cast<std::string>()).dump() + ": " +
             scenario_value_text(item, key, true);
    }
    return out + "}";
  }
  throw py::type_error("the value given for '" + key + "' (a " + type_name(v) +
                       ") is not a scenario value: use a str, int, float, bool, list or dict");
}

// {"serving.replicas": 4} → {"serving.replicas=4"}, the command line's --set overrides.
std::vector<std::string> override_list(const py::object& overrides) {
  std::vector<std::string> sets;
  if (overrides.is_none()) return sets;
  if (!py::isinstance<py::dict>(overrides))
    throw py::type_error(
        "overrides must be a dict of scenario keys and values, e.g. "
        "{'serving.replicas': 4}, not a " +
        type_name(overrides));
  for (const auto& [k, v] : overrides.cast<py::dict>()) {
    if (!py::isinstance<py::str>(k))
      throw py::type_error(
          "the keys of overrides must be strings (scenario key paths such as "
          "'serving.replicas'), not " +
          type_name(k));
    const std::string key = k.cast<std::string>();
    sets.push_back(key + "=" + scenario_value_text(v, key, false));
  }
  return sets;
}

// seed=None keeps the scenario's; otherwise a whole number in [0, 2^64 − 1].
std::optional<uint64_t> seed_of(const py::object& seed) {
  if (seed.is_none()) return std::nullopt;
  if (py::isinstance<py::bool_>(seed) || !py::hasattr(seed, "__index__"))
    throw py::type_error("seed must be an int, not " + type_name(seed));
  const py::int_ v = index_of(seed);
  const py::int_ max = py::reinterpret_steal<py::int_>(PyLong_FromUnsignedLongLong(UINT64_MAX));
  if (v < py::int_(0) || v > max)
    throw InputError("seed must be a whole number from 0 to 18446744073709551615, got " +
                         py::str(py::handle(v)).cast<std::string>(),
                     "e.g. seed=42");
  return static_cast<uint64_t>(PyLong_AsUnsignedLongLong(v.ptr()));
}

int threads_of(int threads) {
  if (threads < 1)
    throw InputError("threads must be at least 1, got " + std::to_string(threads),
                     "e.g. threads=4");
  return threads;
}

int replications_of(int replications) {
  if (replications != 0 && (replications < 2 || replications > 1000))
    throw InputError(
        "replications must be 0 (none) or between 2 and 1000, got " + std::to_string(replications),
        "e.g. replications=10");
  return replications;
}

// A path argument: str or os.PathLike.
std::string path_of(const py::object& p, const char* what) {
  if (!py::isinstance<py::str>(p) && !py::hasattr(p, "__fspath__"))
    throw py::type_error(std::string(what) + " must be a path (str or os.PathLike), not " +
                         type_name(p));
  const py::object s = py::module_::import("os").attr("fspath")(p);
  if (py::isinstance<py::bytes>(s)) return s.cast<std::string>();
  return py::str(s).cast<std::string>();
}

// What every command reads before it runs: the scenario file, its overrides and seed, and
// the catalog and calibration folders (the command line's --catalog and --calibration).
struct Inputs {
  std::string file;
  std::vector<std::string> sets;
  std::optional<uint64_t> seed;
  std::string catalog_dir, calibration_dir;

  hw::Catalog catalog() const { return hw::Catalog::load(catalog_dir); }
  std::shared_ptr<const hw::CalibrationSet> calibration(const hw::Catalog& c) const {
    if (calibration_dir == "none") return nullptr;
    return std::make_shared<const hw::CalibrationSet>(
        hw::CalibrationSet::load_dir(calibration_dir, c));
  }
};

Inputs inputs_of(const py::object& scenario, const py::object& overrides, const py::object& seed,
                 const py::object& catalog, const py::object& calibration) {
  Inputs in;
  in.file = path_of(scenario, "scenario");
  in.sets = override_list(overrides);
  in.seed = seed_of(seed);
  in.catalog_dir = catalog.is_none() ? hw::Catalog::default_dir() : path_of(catalog, "catalog");
  in.calibration_dir = calibration.is_none() ? hw::CalibrationSet::default_dir()
                                             : path_of(calibration, "calibration");
  return in;
}

// ---- C++ to Python ------------------------------------------------------------------------

// JSON as Python objects (dict, list, str, int, float, bool, None), objects' keys in their
// order. Documents (summary.json, plan.json) give None for a number that is not finite, as
// the file does (JSON has no NaN); table rows keep it (a CSV cell "inf", "nan").
enum class NonFinite { kNone, kKeep };

template <class Json>
py::object to_python(const Json& j, NonFinite nf) {
  switch (j.type()) {
    case nlohmann::json::value_t::boolean: return py::bool_(j.template get<bool>());
    case nlohmann::json::value_t::number_integer: return py::int_(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: return py::int_(j.template get<uint64_t>());
    case nlohmann::json::value_t::number_float: {
      const double d = j.template get<double>();
      if (!std::isfinite(d) && nf == NonFinite::kNone) return py::none();
      return py::float_(d);
    }
    case nlohmann::json::value_t::string: return text(j.template get_ref<const std::string&>());
    case nlohmann::json::value_t::array: {
      py::list l;
      for (const auto& v : j) l.append(to_python(v, nf));
      return l;
    }
    case nlohmann::json::value_t::object: {
      py::dict d;
      for (const auto& [k, v] : j.items()) d[text(k)] = to_python(v, nf);
      return d;
    }
    default: return py::none();
  }
}

// A value as written in a scenario, as Python reads it: an int or float when it is one
// ("4", "0.5"), True/False for true/false, else the text ("10/s", "h100-sxm").
py::object scalar_of(const std::string& s) {
  if (s == "true") return py::bool_(true);
  if (s == "false") return py::bool_(false);
  const bool digits = !s.empty() && s.find_first_not_of("0123456789+-.eE") == std::string::npos;
  if (digits) {
    for (const char* type : {"int", "float"}) {
      try {
        return py::module_::import("builtins").attr(type)(s);
      } catch (const py::error_already_set& e) {
        if (!e.matches(PyExc_ValueError)) throw;
      }
    }
  }
  return text(s);
}

// Rows of a CSV file (plan.csv, sweep.csv) as a list of dicts, the values of the `axes`
// columns (written as in a scenario) as Python reads them.
py::list table_of(const nlohmann::ordered_json& rows, const std::vector<std::string>& axes) {
  py::list out = to_python(rows, NonFinite::kKeep);
  for (auto row : out)
    for (const auto& key : axes) {
      const py::str k = text(key);
      row[k] = scalar_of(row[k].cast<std::string>());
    }
  return out;
}

// Per-request rows as columns (a dict of equal-length lists), which pandas.DataFrame reads.
py::dict request_columns(const std::vector<reports::RequestRow>& rows,
                         const std::vector<std::string>& class_names) {
  const std::size_t n = rows.size();
  py::list id(n), cls(n), replica(n), arrival(n), prompt(n), output(n), queue(n), ttft(n), tpot(n),
      e2e(n), preemptions(n), status(n);
  std::vector<py::object> classes;
  for (const auto& c : class_names) classes.push_back(text(c));
  std::map<std::string, py::object> statuses;  // one str object per status
  for (std::size_t i = 0; i < n; ++i) {
    const reports::RequestRow& r = rows[i];
    const std::size_t c = static_cast<std::size_t>(r.cls);
    const std::string st = r.status();
    auto s = statuses.find(st);
    if (s == statuses.end()) s = statuses.emplace(st, text(st)).first;
    id[i] = py::int_(r.id);
    cls[i] = c < classes.size() ? classes[c] : py::none();
    replica[i] = py::int_(r.replica);
    arrival[i] = py::float_(r.arrival_s);
    prompt[i] = py::int_(r.prompt_tokens);
    output[i] = py::int_(r.output_tokens);
    queue[i] = py::float_(r.queue_s);
    ttft[i] = py::float_(r.ttft_s);
    tpot[i] = py::float_(r.tpot_s);
    e2e[i] = py::float_(r.e2e_s);
    preemptions[i] = py::int_(r.preemptions);
    status[i] = s->second;
  }
  py::dict out;
  out["id"] = id;
  out["class"] = cls;
  out["replica"] = replica;
  out["arrival_s"] = arrival;
  out["prompt_tokens"] = prompt;
  out["output_tokens"] = output;
  out["queue_s"] = queue;
  out["ttft_s"] = ttft;
  out["tpot_s"] = tpot;
  out["e2e_s"] = e2e;
  out["preemptions"] = preemptions;
  out["status"] = status;
  return out;
}

// ---- Ctrl-C while the simulator runs --------------------------------------------------------

// Thrown by the work when Watch asks it to stop.
struct Stopped {};

// Runs the simulator's work on a thread of its own while the calling thread, the GIL
// released, checks for signals every 0.1 s (Python handles them on its main thread only).
// On Ctrl-C (or any signal whose handler raises) it asks the work to stop — check() throws
// at the work's next check point: before each simulation of a sweep or plan, at each
// progress report of a run — and raises what the handler raised (KeyboardInterrupt).
class Watch {
 public:
  void check() const {
    if (stop_.load()) throw Stopped{};
  }

  // Call with the GIL released; rethrows the work's exception.
  void run(const std::function<void()>& work) {
    std::future<void> done = std::async(std::launch::async, work);
    std::optional<py::error_already_set> raised;
    while (done.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
      if (raised) continue;
      py::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() != 0) {
        raised.emplace();  // takes the handler's exception
        stop_ = true;
      }
    }
    if (raised) {
      try {
        done.get();
      } catch (...) {  // the work stopped, or failed meanwhile: the signal comes first
      }
      throw *raised;
    }
    done.get();
  }

 private:
  std::atomic<bool> stop_{false};
};

// ---- the functions ------------------------------------------------------------------------

py::dict run(const py::object& scenario, const py::object& overrides, const py::object& seed,
             bool requests, int replications, int threads, const py::object& catalog,
             const py::object& calibration) {
  const Inputs in = inputs_of(scenario, overrides, seed, catalog, calibration);
  threads_of(threads);
  replications_of(replications);
  nlohmann::json summary;
  reports::RequestRows rows;
  std::vector<std::string> class_names;
  Watch watch;
  {
    py::gil_scoped_release nogil;
    watch.run([&] {
      const hw::Catalog cat = in.catalog();
      const scenario::Scenario sc =
          scenario::load(in.file, in.sets, in.seed, cat, in.calibration(cat));
      RunOptions opts;
      if (requests) opts.observers.push_back(&rows);
      opts.progress = [&watch](const Progress&) { watch.check(); };
      const app::RunRecord rec = app::run(sc, opts, threads);
      summary =
          rec.fleet ? reports::fleet_json(sc, *rec.fleet) : reports::summary_json(sc, *rec.pool);
      if (replications > 0)
        summary["replications"] =
            reports::replications_json(app::replicate_scenario(sc, replications, threads));
      for (const auto& c : rec.summary().classes) class_names.push_back(c.name);
    });
  }
  py::dict out = to_python(summary, NonFinite::kNone);
  if (requests) out["requests"] = request_columns(rows.rows(), class_names);
  return out;
}

py::list sweep(const py::object& scenario, const py::object& vary, const py::object& seeds,
               const py::object& overrides, const py::object& seed, int threads,
               const py::object& catalog, const py::object& calibration) {
  const Inputs in = inputs_of(scenario, overrides, seed, catalog, calibration);
  threads_of(threads);
  std::vector<std::pair<std::string, std::vector<std::string>>> axes;
  if (!vary.is_none()) {
    if (!py::isinstance<py::dict>(vary))
      throw py::type_error(
          "vary must be a dict of scenario keys and lists of values, e.g. "
          "{'serving.replicas': [1, 2, 4]}, not a " +
          type_name(vary));
    for (const auto& [k, values] : vary.cast<py::dict>()) {
      if (!py::isinstance<py::str>(k))
        throw py::type_error("the keys of vary must be strings, not " + type_name(k));
      const std::string key = k.cast<std::string>();
      if (py::isinstance<py::str>(values) || !py::hasattr(values, "__iter__"))
        throw py::type_error("vary['" + key +
                             "'] must be a list of values, e.g. [1, 2, 4], not a " +
                             type_name(values));
      std::vector<std::string> texts;
      for (const auto& v : values) texts.push_back(scenario_value_text(v, key, false));
      if (texts.empty())
        throw InputError("vary['" + key + "'] has no values", "e.g. [1, 2, 4]", "", 0, key);
      axes.emplace_back(key, std::move(texts));
    }
  }
  std::optional<int> n_seeds;
  if (!seeds.is_none()) {
    if (py::isinstance<py::bool_>(seeds) || !py::hasattr(seeds, "__index__"))
      throw py::type_error("seeds must be an int, not " + type_name(seeds));
    const py::int_ v = index_of(seeds);
    if (v < py::int_(1) || v > py::int_(10000))
      throw InputError(
          "seeds must be between 1 and 10000, got " + py::str(py::handle(v)).cast<std::string>(),
          "e.g. seeds=10");
    n_seeds = v.cast<int>();
  }
  nlohmann::ordered_json rows;
  std::vector<std::string> axis_names;
  Watch watch;
  {
    py::gil_scoped_release nogil;
    watch.run([&] {
      app::SweepSpec spec = app::read_sweep_section(in.file, in.sets);
      for (auto& a : axes) spec.vary.push_back(std::move(a));
      if (n_seeds) spec.seeds = *n_seeds;
      app::check_sweep_spec(spec);
      if (spec.vary.empty() && spec.seeds == 1)
        throw InputError("nothing to sweep",
                         "give vary={'serving.replicas': [1, 2, 4]} and/or seeds=N, or a sweep: "
                         "section in the scenario (sweep: {vary: {serving.replicas: [1, 2, 4]}, "
                         "seeds: 5})");
      const hw::Catalog cat = in.catalog();
      const auto calib = in.calibration(cat);
      const scenario::Scenario base =
          app::check_sweep_points(in.file, in.sets, in.seed, spec, cat, calib, true);
      const std::vector<std::string> results = dist::map(spec.items(), threads, [&](std::size_t i) {
        watch.check();
        return app::run_sweep_item(in.file, in.sets, base.seed, spec, i, cat, calib);
      });
      rows = reports::sweep_rows(spec, base.seed, results);
      for (const auto& [key, values] : spec.vary) axis_names.push_back(key);  // file's and vary's
    });
  }
  return table_of(rows, axis_names);
}

py::dict plan(const py::object& scenario, const py::object& overrides, const py::object& seed,
              int replications, int threads, const py::object& catalog,
              const py::object& calibration) {
  const Inputs in = inputs_of(scenario, overrides, seed, catalog, calibration);
  threads_of(threads);
  replications_of(replications);
  nlohmann::json doc;
  nlohmann::ordered_json rows;
  std::vector<std::string> axes;
  Watch watch;
  {
    py::gil_scoped_release nogil;
    watch.run([&] {
      const double t0 =
          std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
              .count();
      const hw::Catalog cat = in.catalog();
      if (yaml::load_file_with_overrides(in.file, in.sets).has("fleet")) {
        // A fleet scenario: its fleet_plan: section (sim/app/fleet_plan.h), the document
        // `fleetsim plan` writes as fleet_plan.json, and a row per configuration.
        watch.check();
        const app::FleetPlanResult r =
            app::run_fleet_plan(in.file, in.sets, in.seed, cat, in.calibration(cat), threads);
        doc = reports::fleet_plan_json(r)["fleet_plan"];
        rows = nlohmann::ordered_json::array();
        for (const auto& c : r.candidates) {
          nlohmann::ordered_json row;
          row["label"] = c.label;
          row["option"] = c.option;
          for (const auto& [path, v] : c.axis_values) {
            row[path] = v;
            if (axes.size() < c.axis_values.size()) axes.push_back(path);
          }
          const app::LadderRung& a = c.answer;
          row["met"] = a.met;
          row["reason"] = a.reason;
          row["gpus"] = a.gpus;
          row["usd_per_day"] = a.usd_per_day;
          row["usd_per_mtok"] = a.usd_per_mtok;
          row["wh_per_call"] = a.wh_per_call;
          row["slo_attainment"] = a.attainment;
          row["ttft_p99_s"] = a.ttft_p99_s;
          row["tpot_p99_s"] = a.tpot_p99_s;
          rows.push_back(std::move(row));
        }
        return;
      }
      const plan::Planner planner(in.file, in.sets, in.seed, cat, in.calibration(cat));
      // The planner's steps as `fleetsim plan` runs them (sim/plan/planner.h): the replica
      // searches side by side, each a point where Ctrl-C stops the plan.
      plan::PlanResult res = planner.prepare(threads);
      const std::vector<std::string> found =
          dist::map(res.to_simulate.size(), threads, [&](std::size_t k) {
            watch.check();
            plan::Candidate c = res.candidates[static_cast<std::size_t>(res.to_simulate[k])];
            planner.search_replicas(c);
            return plan::Planner::encode_search(c);
          });
      for (std::size_t k = 0; k < found.size(); ++k)
        plan::Planner::decode_search(res.candidates[static_cast<std::size_t>(res.to_simulate[k])],
                                     found[k]);
      res.threads = threads;
      planner.finish(res, t0);
      planner.perturb_answers(res, threads);
      doc = reports::plan_json(res, app::plan_robustness(planner, res, replications, threads));
      rows = reports::plan_rows(res);
      if (!res.candidates.empty())
        for (const auto& [key, value] : res.candidates.front().values) axes.push_back(key);
      if (res.chosen >= 0) {
        const plan::Candidate& win = res.candidates[static_cast<std::size_t>(res.chosen)];
        doc["deploy"] = reports::deployable_json(
            reports::deployable(planner.resolve(win, win.best->replicas), planner.base().name));
      }
    });
  }
  py::dict out = to_python(doc, NonFinite::kNone);
  out["candidates"] = table_of(rows, axes);
  return out;
}

py::list list_keys(const py::object& section) {
  std::string s;
  if (!section.is_none()) {
    if (!py::isinstance<py::str>(section))
      throw py::type_error("section must be a str, e.g. 'serving', not " + type_name(section));
    s = section.cast<std::string>();
  }
  py::list out;
  // InputError (with "did you mean") for an unknown section.
  for (const yaml::Key* key : scenario::schema::keys_under(s)) {
    const yaml::Key& k = *key;
    py::dict d;
    d["path"] = text(k.path);
    d["type"] = text(k.type_name());
    d["range"] = text(k.range_text());
    d["default"] = text(k.default_text());
    d["required"] = k.required;
    py::list choices;
    for (const auto& c : k.choices) choices.append(text(c));
    d["choices"] = choices;
    d["help"] = text(k.help);
    out.append(d);
  }
  return out;
}

// fleetsim's InputError becomes fleetsim.InputError (a ValueError) with the whole message
// and its parts as attributes; any other C++ exception a RuntimeError with its message.
// Python's own errors, pybind11's and std::bad_alloc (MemoryError) pass on.
void translate_exception(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const InputError& e) {
    const py::object err = py::reinterpret_borrow<py::object>(g_input_error)(text(e.what()));
    err.attr("message") = text(e.message());
    err.attr("hint") = text(e.hint());
    err.attr("file") = text(e.file());
    err.attr("line") = e.line();
    err.attr("field") = text(e.field());
    PyErr_SetObject(g_input_error, err.ptr());
  } catch (const py::error_already_set&) {
    throw;
  } catch (const py::builtin_exception&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    PyErr_SetObject(PyExc_RuntimeError, text(e.what()).ptr());
  }
}

}  // namespace fleetsim::python

PYBIND11_MODULE(fleetsim, m) {
  namespace fp = fleetsim::python;
  using py::arg;
  m.doc() =
      "fleetsim from Python: run, plan and sweep LLM-serving scenarios.\n\n"
      "Each function takes a scenario file (YAML), optional overrides applied as the command\n"
      "line's --set key=value, and an optional seed, runs fleetsim's simulator in this\n"
      "process (the GIL released) and returns what the command line writes, as Python\n"
      "objects: run() summary.json (and per-request rows as columns), plan() plan.json and\n"
      "plan.csv's rows, sweep() sweep.csv's rows. A problem with the input raises\n"
      "fleetsim.InputError (a ValueError) with the command line's message: file, line,\n"
      "field and hint.";
  m.attr("__version__") = FLEETSIM_VERSION;
  PyObject* type = PyErr_NewExceptionWithDoc(
      "fleetsim.InputError",
      "A problem with fleetsim's input (scenario file, override, catalog): str(e) is the whole\n"
      "message; e.message, e.hint, e.file, e.line (0 when unknown) and e.field its parts.",
      PyExc_ValueError, nullptr);
  if (type == nullptr) throw py::error_already_set();
  fp::g_input_error = type;  // kept for the life of the process
  m.attr("InputError") = py::reinterpret_borrow<py::object>(type);
  py::register_local_exception_translator(fp::translate_exception);

  m.def("run", &fp::run, arg("scenario"), arg("overrides") = py::none(), arg("seed") = py::none(),
        arg("requests") = false, py::kw_only(), arg("replications") = 0, arg("threads") = 1,
        arg("catalog") = py::none(), arg("calibration") = py::none(),
        R"(Runs a scenario once and returns its summary.json as a dict.

scenario:     path of a scenario file (YAML).
overrides:    {key path: value}, applied as `fleetsim run --set key=value`, e.g.
              {"serving.replicas": 4, "workload.arrival.rate": "10/s"}; bools are written
              true/false, lists and dicts in YAML flow style.
seed:         replaces the scenario's seed (0 to 2**64-1).
requests:     also return one row per finished request, as columns (a dict of equal-length
              lists, so that pandas.DataFrame(result["requests"]) works) under "requests":
              id, class (None without request classes), replica, arrival_s, prompt_tokens,
              output_tokens, queue_s, ttft_s, tpot_s, e2e_s, preemptions and status
              ("completed" or "rejected_<reason>"; a rejected request's latencies are NaN).
              Rows are in the order requests finished; ids below workload.warmup_requests
              count in throughput only, not in the summary's latencies. A fleet gives one
              row per call (a sampled day can be millions).
replications: also run this many seeds (the scenario's and the next ones) and add
              "replications" (mean and 95 % confidence interval of each metric), as
              `fleetsim run --replications N`.
threads:      a fleet's pools run on up to this many threads (the result does not depend on it).
catalog, calibration: folders as --catalog and --calibration ("none": no calibration).

The same scenario, overrides and seed give the same dict, except wall_s (and a fleet's
peak_rss_bytes, the process's peak memory). Raises fleetsim.InputError (a ValueError) for bad
input, RuntimeError for an internal error, KeyboardInterrupt on Ctrl-C.)");

  m.def("sweep", &fp::sweep, arg("scenario"), arg("vary") = py::none(), arg("seeds") = py::none(),
        arg("overrides") = py::none(), arg("seed") = py::none(), py::kw_only(), arg("threads") = 1,
        arg("catalog") = py::none(), arg("calibration") = py::none(),
        R"(Runs a scenario over a grid of values and returns sweep.csv's rows (list of dicts).

vary:      {key path: [values]}, the axes as `fleetsim sweep --vary key=v1,v2`; they follow
           the scenario's own sweep: section. Points are the cartesian product (the last axis
           varies fastest).
seeds:     seeds per point (the scenario's seed and the next ones); None keeps the file's
           sweep.seeds (or 1).
overrides, seed, catalog, calibration: as for run().
threads:   simulations run side by side on this many threads (the rows do not depend on it).

One row per simulation, points in order and each point's seeds in order: the varied values
(numbers and booleans as Python values, other values as written), "seed", then the run's
metrics (ttft_p99_s, ..., the same names as sweep.csv) at full precision.)");

  m.def(
      "plan", &fp::plan, arg("scenario"), arg("overrides") = py::none(), arg("seed") = py::none(),
      py::kw_only(), arg("replications") = 0, arg("threads") = 1, arg("catalog") = py::none(),
      arg("calibration") = py::none(),
      R"(Runs the capacity planner on a scenario with a plan: section; returns plan.json as a dict.

overrides, seed, catalog, calibration: as for run() (e.g. {"plan.gpu": ["h100-sxm"]}).
replications: re-simulate the chosen and the next two configurations with this many seeds
              (plan.json's "robustness"), as `fleetsim plan --replications N`.
threads:      configurations are simulated side by side on this many threads (the answer
              does not depend on it).

Besides plan.json's keys ("chosen", "answers", "ranking", "counts", ...) the dict has
"candidates": plan.csv's rows, one dict per configuration (None where plan.csv's cell is
empty), and, when a configuration meets the SLO, "deploy": the chosen deployment's launch
commands for vLLM, SGLang and TensorRT-LLM, its Kubernetes manifests and notes. When none
meets the SLO there is no "chosen"; each candidate's "reason" says why.)");

  m.def("list_keys", &fp::list_keys, arg("section") = py::none(),
        R"(The scenario keys fleetsim reads (its declarative schema), as `fleetsim list keys`.

section: only the keys under this section ("serving", "fleet.regions"); InputError for an
         unknown one. Each key is a dict: path, type, range, default, required, choices, help.)");
}
