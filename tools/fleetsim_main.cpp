// fleetsim command-line entry point: parses arguments and calls the library. No domain
// logic lives here.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <boost/program_options.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "hw_models/calibration.h"
#include "hw_models/catalog.h"
#include "hw_models/error.h"
#include "hw_models/files.h"
#include "hw_models/hf_import.h"
#include "hw_models/kernel_bench_import.h"
#include "hw_models/units.h"
#include "reports/deploy.h"
#include "reports/explain.h"
#include "reports/fleet_plan.h"
#include "reports/fleet_report.h"
#include "reports/ladder.h"
#include "reports/plan_report.h"
#include "reports/replications.h"
#include "reports/run_report.h"
#include "reports/summary.h"
#include "reports/sweep.h"
#include "reports/trace.h"
#include "sim/app/fleet_plan.h"
#include "sim/app/ladder.h"
#include "sim/app/plan.h"
#include "sim/app/replicate.h"
#include "sim/app/run.h"
#include "sim/app/sweep.h"
#include "sim/dist/dist.h"
#include "sim/plan/planner.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/schema.h"
#include "sim/serving/registry.h"
#include "sim/validation/bench_import.h"
#include "sim/validation/fit.h"
#include "sim/validation/validation.h"

namespace po = boost::program_options;
using namespace fleetsim;

namespace {

const char* kUsage =
    "usage: fleetsim <command> [options]\n"
    "\n"
    "commands:\n"
    "  run SCENARIO     simulate a scenario, print a summary, write DIR/summary.json and "
    "DIR/report.{md,html}\n"
    "  check SCENARIO   validate a scenario and print its resolved configuration\n"
    "  plan SCENARIO    search the scenario's plan: space for the cheapest deployment meeting its "
    "SLO\n"
    "                   (a fleet scenario: its fleet_plan: options, the cheapest fleet for the "
    "day)\n"
    "  sweep SCENARIO   run a scenario over a grid of --vary KEY=V1,V2,... (and --seeds N)\n"
    "  ladder SCENARIO  what each serving technique is worth: the scenario's ladder: steps, each\n"
    "                   searched for the GPUs that meet its SLO\n"
    "  (plan and sweep also run under mpirun -n N: rank 0 hands out whole simulations)\n"
    "  list WHAT        list gpus | models | nodes | interconnects | policies | routers | keys\n"
    "  validate [DIR]   predict the published measurements of the validation suite\n"
    "  calibrate import FILE   check a kernel calibration table and install it\n"
    "  calibrate import-kernels RESULT.json ...   a calibration table from Google Benchmark or\n"
    "                   nvbench JSON\n"
    "  calibrate fit    fit serving-engine profiles on the validation suite's training split\n"
    "  import-model CONFIG.json --id ID   a catalog model from a Hugging Face config.json\n"
    "\n"
    "  fleetsim --version          print the version\n"
    "  fleetsim <command> --help   options of a command\n"
    "\n"
    "exit codes: 0 done; 1 input error (the message names file, line and field); 2 usage\n"
    "  error; 3 internal error (a bug: please report it); 4 plan: no configuration meets the\n"
    "  SLO (ladder: a step meets it at no size); 130 / 143 interrupted by SIGINT / SIGTERM "
    "(nothing half-written is left)\n";

// ---- interruption --------------------------------------------------------------------
// SIGINT/SIGTERM: remove the temporary files being written (outputs are renamed into place
// only when complete, so no file is left half-written), say what was interrupted, and exit
// with 128 + the signal number. Only async-signal-safe calls (unlink, write, _exit).
char g_activity[512] = "starting";

void write_all(const char* s) {
  std::size_t n = std::strlen(s);
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<std::size_t>(w);
  }
}

extern "C" void on_signal(int sig) {
  const int removed = files::remove_temporaries_signal_safe();
  write_all("\nfleetsim: interrupted by ");
  write_all(sig == SIGINT ? "SIGINT" : "SIGTERM");
  write_all(" while ");
  write_all(g_activity);
  char num[16];
  int i = 15;
  num[i] = '\0';
  int v = removed;
  do {
    num[--i] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v > 0 && i > 0);
  write_all(": not finished; ");
  write_all(num + i);
  write_all(removed == 1 ? " file being written was removed" : " files being written were removed");
  write_all(" (every output file is either complete or absent)\n");
  ::_exit(128 + sig);
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

// What a signal interrupts, for its message (set before the work starts).
void set_activity(const std::string& what) {
  std::snprintf(g_activity, sizeof g_activity, "%s", what.c_str());
}

// Test-only: FLEETSIM_TEST_SIGNAL_AFTER_REQUESTS=N (or N:INT) makes `run` send itself
// SIGTERM (SIGINT) when the N-th request finishes, so a test interrupts a run mid-way
// without depending on timing.
class SignalAfterRequests final : public serving::ServingObserver {
 public:
  explicit SignalAfterRequests(const std::string& spec)
      : n_(std::strtoull(spec.c_str(), nullptr, 10)),
        sig_(spec.find(":INT") != std::string::npos ? SIGINT : SIGTERM) {}
  void on_completion(const serving::RequestRecord&) override {
    if (++seen_ == n_) std::raise(sig_);
  }

 private:
  uint64_t n_, seen_ = 0;
  int sig_;
};

// ---- output folders -------------------------------------------------------------------
// Held for the life of the process: the kernel releases the lock when it exits.
int g_lock_fd = -1;

// A scenario name is used as a folder name under out/: letters, digits, '.', '_', '-', not
// starting with '.', so it cannot climb out of out/ ("../x") or hide.
void check_name_for_path(const std::string& name, const std::string& scenario_file) {
  const bool ok = !name.empty() && name.size() <= 200 && name[0] != '.' &&
                  name.find_first_not_of(
                      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                      "0123456789._-") == std::string::npos;
  if (!ok)
    throw InputError("the scenario name '" + files::to_valid_utf8(name) +
                         "' cannot name its output folder out/<name>",
                     "use letters, digits, '.', '_' and '-' (not starting with '.') in 'name', or "
                     "pass --out DIR",
                     scenario_file, 0, "name");
}

// Creates the output folder, takes its lock (two runs writing one folder would interleave
// their files) and says when it replaces an earlier run's results.
std::string prepare_out_dir(const po::variables_map& vm, const std::string& scenario_file,
                            const std::string& name, const std::string& suffix,
                            std::initializer_list<const char*> result_files) {
  std::string out_dir;
  if (vm.count("out")) {
    out_dir = vm["out"].as<std::string>();
    if (out_dir.empty()) throw InputError("--out is empty", "e.g. --out out/mine");
  } else {
    check_name_for_path(name, scenario_file);
    out_dir = "out/" + name + suffix;
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(out_dir, ec) && !fs::is_directory(out_dir, ec))
    throw InputError("the output folder is not a folder", "pass --out DIR naming a folder",
                     out_dir);
  fs::create_directories(out_dir, ec);
  if (ec)
    throw InputError("cannot create output folder: " + ec.message(), "pass --out DIR", out_dir);
  const std::string lock = (fs::path(out_dir) / ".fleetsim.lock").string();
  const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw InputError("cannot create the lock file: " + std::string(std::strerror(errno)),
                     "check that the output folder is writable", lock);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char buf[32] = {};
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    ::close(fd);
    std::string pid = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "";
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    throw InputError("another fleetsim run" + (pid.empty() ? "" : " (pid " + pid + ")") +
                         " is writing to " + out_dir,
                     "wait for it to finish, or pass another --out");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The pid is only for the message of a run that finds the folder locked.
  }
  g_lock_fd = fd;
  for (const char* f : result_files)
    if (fs::exists(fs::path(out_dir) / f, ec)) {
      std::fprintf(stderr, "note: replacing the results in %s (use a new --out to keep them)\n",
                   out_dir.c_str());
      break;
    }
  return out_dir;
}

// Common options of run and check.
po::options_description scenario_options() {
  po::options_description d("scenario options");
  d.add_options()(
      "set", po::value<std::vector<std::string>>()->composing(),
      "override a field: --set key.path=value (repeatable), e.g. --set serving.replicas=8")(
      "seed", po::value<std::string>(), "random seed, 0 to 2^64-1 (replaces the scenario's seed)")(
      "catalog", po::value<std::string>(),
      "catalog folder (default: $FLEETSIM_CATALOG or the bundled one)")(
      "calibration", po::value<std::string>(),
      "calibration folder (default: $FLEETSIM_CALIBRATION or the bundled one); 'none' for none")(
      "help,h", "show this help");
  return d;
}

struct Parsed {
  po::variables_map vm;
  std::string scenario;
};

std::optional<Parsed> parse(const std::string& cmd, const std::vector<std::string>& args,
                            po::options_description desc) {
  desc.add_options()("scenario", po::value<std::string>(), "scenario file");
  po::positional_options_description pos;
  pos.add("scenario", 1);
  Parsed p;
  po::store(po::command_line_parser(args).options(desc).positional(pos).run(), p.vm);
  po::notify(p.vm);
  if (p.vm.count("help")) {
    std::cout << "usage: fleetsim " << cmd << " SCENARIO [options]\n\n" << desc << "\n";
    return std::nullopt;
  }
  if (!p.vm.count("scenario")) {
    throw InputError("missing scenario file",
                     "usage: fleetsim " + cmd + " SCENARIO (e.g. scenarios/default.yaml)");
  }
  p.scenario = p.vm["scenario"].as<std::string>();
  return p;
}

hw::Catalog load_catalog(const po::variables_map& vm) {
  return hw::Catalog::load(vm.count("catalog") ? vm["catalog"].as<std::string>()
                                               : hw::Catalog::default_dir());
}

std::shared_ptr<const hw::CalibrationSet> load_calibration(const po::variables_map& vm,
                                                           const hw::Catalog& catalog) {
  const std::string dir = vm.count("calibration") ? vm["calibration"].as<std::string>()
                                                  : hw::CalibrationSet::default_dir();
  if (dir == "none") return nullptr;
  return std::make_shared<const hw::CalibrationSet>(hw::CalibrationSet::load_dir(dir, catalog));
}

int threads_of(const po::variables_map& vm) {
  const int threads = vm.count("threads")
                          ? vm["threads"].as<int>()
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (threads < 1) throw InputError("--threads must be at least 1", "e.g. --threads 4");
  return threads;
}

// --seed: a whole number in [0, 2^64 − 1]; program_options would read "-1" as 2^64 − 1.
std::optional<uint64_t> seed_of(const po::variables_map& vm) {
  if (!vm.count("seed")) return std::nullopt;
  const std::string text = vm["seed"].as<std::string>();
  const bool digits = !text.empty() && text.size() <= 20 &&
                      text.find_first_not_of("0123456789") == std::string::npos;
  errno = 0;
  const unsigned long long v = digits ? std::strtoull(text.c_str(), nullptr, 10) : 0;
  if (!digits || errno == ERANGE)
    throw InputError(
        "--seed must be a whole number from 0 to 18446744073709551615, got '" + text + "'",
        "e.g. --seed 42");
  return static_cast<uint64_t>(v);
}

scenario::Scenario load_scenario(const Parsed& p) {
  const hw::Catalog catalog = load_catalog(p.vm);
  std::vector<std::string> sets;
  if (p.vm.count("set")) sets = p.vm["set"].as<std::vector<std::string>>();
  return scenario::load(p.scenario, sets, seed_of(p.vm), catalog, load_calibration(p.vm, catalog));
}

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

int cmd_run(const std::vector<std::string>& args) {
  po::options_description desc = scenario_options();
  desc.add_options()("out", po::value<std::string>(),
                     "output folder (default: out/<scenario name>/)")(
      "requests-csv", po::value<std::string>(), "stream one CSV row per request to this file")(
      "trace", po::value<std::string>(),
      "write a Chrome/Perfetto trace (batch segments per replica, requests) to this file")(
      "quiet,q", "print no progress")(
      "explain",
      "print where the time of a representative prefill and decode iteration goes (a single "
      "pool, after the run: also a decode at the run's mean decode batch)")(
      "threads", po::value<int>(), "threads (default: all cores; results do not depend on it)")(
      "replications", po::value<int>(),
      "also run N seeds (the scenario's and the next N-1) in parallel and report "
      "each metric's mean and 95 % confidence interval")(
      "capacity",
      "also find the most traffic these replicas carry within the SLO (a single pool with an "
      "slo: and an arrival rate or trace; about 9 more runs) and the headroom now")(
      "capacity-target", po::value<double>(),
      "with --capacity: share of requests that must meet the plain SLO targets (default 0.99)");
  auto p = parse("run", args, desc);
  if (!p) return 0;
  const scenario::Scenario sc = load_scenario(*p);
  app::prepare_network(sc);  // before anything is printed or written
  // Under mpirun a fleet's partitions (one per model, sim/fleet/spec.h) run on the ranks;
  // rank 0 merges them and writes everything. A single pool, or a run with per-request
  // observers (--requests-csv, --trace), runs on rank 0 alone.
  const bool observed = p->vm.count("requests-csv") || p->vm.count("trace") ||
                        std::getenv("FLEETSIM_TEST_SIGNAL_AFTER_REQUESTS") != nullptr;
  const bool distribute = dist::size() > 1 && sc.fleet && !observed;
  if (dist::rank() != 0) {
    if (distribute) {
      RunOptions worker;
      worker.distribute = true;
      app::run(sc, worker, threads_of(p->vm));
    }
    return 0;
  }
  if (p->vm.count("capacity")) app::check_capacity_applies(sc, p->scenario);
  if (p->vm.count("explain")) std::cout << reports::explain(sc) << "\n";
  const std::string out_dir = prepare_out_dir(p->vm, p->scenario, sc.name, "", {"summary.json"});
  set_activity("running " + p->scenario + " (output folder " + out_dir + ")");

  RunOptions opts;
  opts.distribute = distribute;
  std::unique_ptr<SignalAfterRequests> test_signal;
  if (const char* v = std::getenv("FLEETSIM_TEST_SIGNAL_AFTER_REQUESTS")) {
    test_signal = std::make_unique<SignalAfterRequests>(v);
    opts.observers.push_back(test_signal.get());
  }
  std::unique_ptr<reports::RequestsCsv> csv;
  if (p->vm.count("requests-csv")) {
    csv = std::make_unique<reports::RequestsCsv>(p->vm["requests-csv"].as<std::string>());
    opts.observers.push_back(csv.get());
  }
  std::unique_ptr<reports::PerfettoTrace> trace;
  if (p->vm.count("trace")) {
    trace = std::make_unique<reports::PerfettoTrace>(p->vm["trace"].as<std::string>());
    opts.observers.push_back(trace.get());
  }
  // Reports what --trace wrote (called once the run is done).
  auto trace_done = [&trace, &csv] {
    if (csv) csv->finish();
    if (!trace) return;
    const uint64_t n = trace->finish();
    std::cout << "  trace       " << n << " events"
              << (trace->truncated() ? " (truncated: a trace is for small runs)" : "") << "\n";
  };
  if (!p->vm.count("quiet")) {
    opts.progress = [](const Progress& pr) {
      std::fprintf(stderr, "  ... simulated %s, %llu requests arrived, %llu completed (%s wall)\n",
                   units::format(pr.sim_time_s, units::Dim::kTime).c_str(),
                   static_cast<unsigned long long>(pr.arrived),
                   static_cast<unsigned long long>(pr.completed),
                   units::format(pr.wall_s, units::Dim::kTime).c_str());
    };
  }
  const int threads = threads_of(p->vm);
  const int replications = p->vm.count("replications") ? p->vm["replications"].as<int>() : 0;
  if (p->vm.count("replications") && (replications < 2 || replications > 1000))
    throw InputError(
        "--replications must be between 2 and 1000, got " + std::to_string(replications),
        "e.g. --replications 10");
  const std::string json_path = (std::filesystem::path(out_dir) / "summary.json").string();
  const app::RunRecord rec = app::run(sc, opts, threads);
  nlohmann::json j;
  std::vector<std::string> wrote;
  if (rec.fleet) {
    const fleet::FleetResult& res = *rec.fleet;
    std::cout << reports::fleet_report(sc, res);
    const std::string csv_path = (std::filesystem::path(out_dir) / "regions.csv").string();
    j = reports::fleet_json(sc, res);
    reports::write_fleet_series_csv(res, csv_path);
    reports::write_fleet_tables_csv(sc, res, out_dir);
    wrote = {json_path, csv_path, "pools.csv", "datacenters.csv"};
  } else {
    std::cout << reports::summary_table(sc, *rec.pool);
    if (p->vm.count("explain"))
      std::cout << "\n" << reports::explain_loaded_decode(sc, rec.pool->summary.mean_decode_batch);
    j = reports::summary_json(sc, *rec.pool);
    wrote = {json_path};
  }
  if (p->vm.count("capacity")) {
    const double target =
        p->vm.count("capacity-target") ? p->vm["capacity-target"].as<double>() : 0.99;
    if (!(target > 0 && target <= 1))
      throw InputError("--capacity-target must be in (0, 1], got " + std::to_string(target),
                       "e.g. --capacity-target 0.99");
    const hw::Catalog catalog = load_catalog(p->vm);
    std::vector<std::string> sets;
    if (p->vm.count("set")) sets = p->vm["set"].as<std::vector<std::string>>();
    const app::Capacity cap = app::find_capacity(p->scenario, sets, seed_of(p->vm), catalog,
                                                 load_calibration(p->vm, catalog), target);
    std::cout << "  " << reports::capacity_text(cap);
    j["capacity"] = reports::capacity_json(cap);
  } else if (p->vm.count("capacity-target")) {
    throw InputError("--capacity-target applies to --capacity", "add --capacity");
  }
  if (replications) {
    // Seeds s … s + n − 1 of the same scenario, without progress lines or extra observers.
    const app::Replications rep = app::replicate_scenario(sc, replications, threads);
    std::cout << reports::replications_table(rep);
    j["replications"] = reports::replications_json(rep);
  }
  reports::write_json(j, json_path);
  const std::vector<std::string> report =
      rec.fleet ? reports::write_fleet_run_report(sc, *rec.fleet, out_dir)
                : reports::write_single_run_report(sc, *rec.pool, *rec.over_time, out_dir);
  trace_done();
  for (const auto& f : report) wrote.push_back(f);
  std::cout << (rec.fleet ? "  wrote     " : "  wrote       ") << join(wrote) << "\n";
  return 0;
}

// Options of plan and sweep that handle many simulations.
void add_search_options(po::options_description& desc) {
  desc.add_options()("out", po::value<std::string>(), "output folder")(
      "threads", po::value<int>(),
      "threads per rank (default: all cores; the result does not depend on it)")(
      "resume",
      "continue a search that stopped (a killed rank, a crash): skip what OUT/checkpoint.txt "
      "holds")("quiet,q", "print no progress");
}

// `fleetsim plan` on a fleet scenario: its fleet_plan: section (sim/app/fleet_plan.h).
int cmd_fleet_plan(const Parsed& p, const std::vector<std::string>& sets) {
  if (p.vm.count("replications") || p.vm.count("resume") || dist::size() > 1)
    throw InputError("a fleet plan takes no --replications or --resume and runs in one process",
                     "drop them (its configurations run side by side on --threads)");
  const hw::Catalog catalog = load_catalog(p.vm);
  const auto calibration = load_calibration(p.vm, catalog);
  const std::optional<uint64_t> seed = seed_of(p.vm);
  // The section and the scenario first, so that a bad one fails before the folder is made.
  (void)app::read_fleet_plan_section(p.scenario, sets);
  const scenario::Scenario base = scenario::load(p.scenario, sets, seed, catalog, calibration);
  const std::string out_dir =
      prepare_out_dir(p.vm, p.scenario, base.name, "-plan", {"fleet_plan.json"});
  set_activity("planning the fleet of " + p.scenario + " (output folder " + out_dir + ")");
  const bool quiet = p.vm.count("quiet") > 0;
  const app::FleetPlanResult r = app::run_fleet_plan(
      p.scenario, sets, seed, catalog, calibration, threads_of(p.vm), [quiet](int done, int n) {
        if (!quiet) std::fprintf(stderr, "  plan: %d of %d configurations searched\n", done, n);
      });
  std::cout << reports::fleet_plan_text(r);
  const std::string json_path = (std::filesystem::path(out_dir) / "fleet_plan.json").string();
  reports::write_json(reports::fleet_plan_json(r), json_path);
  std::string files;
  for (const auto& f : reports::write_fleet_plan_report(r, out_dir)) files += ", " + f;
  std::cout << "  wrote       " << json_path << files << "\n";
  if (r.chosen >= 0) {
    // Deployable output: every pool of the answer, its serving replicas plus its spares.
    const app::FleetPlanCandidate& c = r.candidates[static_cast<size_t>(r.chosen)];
    const scenario::Scenario answer =
        scenario::load(p.scenario, c.answer.overrides, seed, catalog, calibration);
    reports::Deployable d = reports::fleet_deployable(answer, r.deploy_replicas(), base.name);
    if (!r.spares.empty())
      d.notes.push_back("the replica counts include each pool's failure spares (" +
                        std::to_string(static_cast<int>(r.spares_gpus)) +
                        " GPUs in all; fleet_plan.availability)");
    reports::write_deployable(d, out_dir);
    std::cout << "  deploy      " << (std::filesystem::path(out_dir) / "deploy").string()
              << "/ (vllm.sh, sglang.sh, trtllm.sh, kubernetes.yaml, README.md: " << d.notes.size()
              << " note" << (d.notes.size() == 1 ? "" : "s") << ")\n";
  }
  return r.chosen >= 0 ? 0 : 4;
}

int cmd_plan(const std::vector<std::string>& args) {
  po::options_description desc = scenario_options();
  add_search_options(desc);
  desc.add_options()("replications", po::value<int>(),
                     "re-simulate the chosen and the next two configurations with N seeds "
                     "and report how robust the choice is")(
      "runners-up", po::value<int>()->default_value(5), "runners-up to print");
  auto p = parse("plan", args, desc);
  if (!p) return 0;
  const double t0 =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  std::vector<std::string> sets;
  if (p->vm.count("set")) sets = p->vm["set"].as<std::vector<std::string>>();
  if (yaml::load_file_with_overrides(p->scenario, sets).has("fleet"))
    return cmd_fleet_plan(*p, sets);
  const hw::Catalog catalog = load_catalog(p->vm);
  const std::optional<uint64_t> seed = seed_of(p->vm);
  const plan::Planner planner(p->scenario, sets, seed, catalog, load_calibration(p->vm, catalog));
  const int threads = threads_of(p->vm);
  const int replications = p->vm.count("replications") ? p->vm["replications"].as<int>() : 0;
  if (p->vm.count("replications") && (replications < 2 || replications > 1000))
    throw InputError(
        "--replications must be between 2 and 1000, got " + std::to_string(replications),
        "e.g. --replications 10");
  std::string out_dir;
  if (dist::rank() == 0) {
    out_dir = prepare_out_dir(p->vm, p->scenario, planner.base().name, "-plan", {"plan.json"});
    set_activity("planning " + p->scenario + " (output folder " + out_dir +
                 "; its checkpoint keeps the finished simulations: rerun with --resume)");
  }
  if (dist::rank() == 0 && !p->vm.count("quiet"))
    std::fprintf(stderr, "  plan: %zu configurations\n", planner.spec().configurations());

  // Every rank enumerates the same configurations; the replica searches are the work items.
  plan::PlanResult res = planner.prepare(threads);
  const std::vector<std::string> found = dist::map_checkpointed(
      res.to_simulate.size(), threads, out_dir, dist::search_identity("plan", p->scenario, args),
      p->vm.count("resume") > 0, p->vm.count("quiet") > 0,
      [&](std::size_t k) {
        plan::Candidate c = res.candidates[static_cast<std::size_t>(res.to_simulate[k])];
        planner.search_replicas(c);
        return plan::Planner::encode_search(c);
      },
      [](const std::string& result) {
        plan::Candidate c;
        plan::Planner::decode_search(c, result);
      });
  if (dist::rank() != 0) return 0;
  for (std::size_t k = 0; k < found.size(); ++k)
    plan::Planner::decode_search(res.candidates[static_cast<std::size_t>(res.to_simulate[k])],
                                 found[k]);
  res.threads = threads * dist::size();
  planner.finish(res, t0);
  // How fragile each answer is: re-simulated under plan.perturb's perturbations.
  if (!res.answers.empty() && !p->vm.count("quiet"))
    std::fprintf(stderr, "  plan: re-simulating %zu answer%s under %zu perturbation%s\n",
                 res.answers.size(), res.answers.size() == 1 ? "" : "s",
                 planner.perturbations().size(), planner.perturbations().size() == 1 ? "" : "s");
  planner.perturb_answers(res, threads);

  const std::vector<app::PlanRobustness> robust =
      app::plan_robustness(planner, res, replications, threads);
  std::cout << reports::plan_report(res, robust, p->vm["runners-up"].as<int>());
  const std::string json_path = (std::filesystem::path(out_dir) / "plan.json").string();
  const std::string csv_path = (std::filesystem::path(out_dir) / "plan.csv").string();
  reports::write_json(reports::plan_json(res, robust), json_path);
  reports::write_plan_csv(res, csv_path);
  std::string files;
  for (const auto& f : reports::write_plan_report(res, robust, planner.base(), out_dir))
    files += ", " + f;
  std::cout << "  wrote       " << json_path << ", plan.csv" << files << "\n";
  if (res.chosen >= 0) {
    // Deployable output: the answer's launch commands and Kubernetes manifests.
    const plan::Candidate& win = res.candidates[static_cast<std::size_t>(res.chosen)];
    const reports::Deployable d =
        reports::deployable(planner.resolve(win, win.best->replicas), planner.base().name);
    reports::write_deployable(d, out_dir);
    std::cout << "  deploy      " << (std::filesystem::path(out_dir) / "deploy").string()
              << "/ (vllm.sh, sglang.sh, trtllm.sh, kubernetes.yaml, README.md: " << d.notes.size()
              << " note" << (d.notes.size() == 1 ? "" : "s") << ")\n";
    for (const auto& l : d.launches)
      if (l.engine == "vllm")
        std::cout << "    " << l.pool << " x" << l.replicas << ": " << reports::shell_line(l.argv)
                  << "\n";
  }
  dist::remove_checkpoint(out_dir);
  if (res.chosen >= 0) return 0;
  // No configuration meets the SLO: exit 4, with why on stderr: each kind of reason (its
  // "[tag]" when it has one, else the whole reason), how many configurations it ruled out
  // (most first) and an example.
  std::map<std::string, std::pair<int, std::string>> reasons;  // kind -> (count, example)
  for (const auto& c : res.candidates) {
    const std::string why = files::to_valid_utf8(c.reason);
    const auto tag = why.rfind(" [");
    std::string kind = plan::status_name(c.status);
    if (tag != std::string::npos && !why.empty() && why.back() == ']')
      kind += why.substr(tag);
    else if (!why.empty())
      kind += ": " + why;
    auto& [n, example] = reasons[kind];
    if (n++ == 0) example = why;
  }
  std::vector<std::pair<int, std::string>> by_count;
  for (const auto& [kind, r] : reasons)
    by_count.emplace_back(
        r.first,
        kind + (kind.find(r.second) == std::string::npos ? " (e.g. " + r.second + ")" : ""));
  std::stable_sort(by_count.begin(), by_count.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::fprintf(stderr, "error: no configuration meets the SLO (%zu configurations searched):\n",
               res.candidates.size());
  const std::size_t shown = std::min<std::size_t>(by_count.size(), 10);
  for (std::size_t i = 0; i < shown; ++i)
    std::fprintf(stderr, "  %5d x %s\n", by_count[i].first, by_count[i].second.c_str());
  if (by_count.size() > shown)
    std::fprintf(stderr, "  ... and %zu other reasons (%s)\n", by_count.size() - shown,
                 csv_path.c_str());
  return 4;
}

int cmd_sweep(const std::vector<std::string>& args) {
  po::options_description desc = scenario_options();
  add_search_options(desc);
  desc.add_options()("vary", po::value<std::vector<std::string>>()->composing(),
                     "KEY=V1,V2,...: a scenario field and its values (repeatable; points are the "
                     "cartesian product)")("seeds", po::value<int>()->default_value(1),
                                           "seeds per point (the scenario's seed and the next N-1; "
                                           "replaces the file's sweep.seeds)");
  auto p = parse("sweep", args, desc);
  if (!p) return 0;
  std::vector<std::string> sets;
  if (p->vm.count("set")) sets = p->vm["set"].as<std::vector<std::string>>();
  app::SweepSpec spec = app::read_sweep_section(p->scenario, sets);
  if (p->vm.count("vary"))
    for (const auto& v : p->vm["vary"].as<std::vector<std::string>>())
      spec.vary.push_back(app::parse_vary(v));
  if (!p->vm["seeds"].defaulted()) spec.seeds = p->vm["seeds"].as<int>();
  if (spec.seeds < 1 || spec.seeds > 10000)
    throw InputError("--seeds must be between 1 and 10000, got " + std::to_string(spec.seeds),
                     "e.g. --seeds 10");
  app::check_sweep_spec(spec);
  if (spec.vary.empty() && spec.seeds == 1)
    throw InputError("nothing to sweep",
                     "give --vary KEY=V1,V2 (e.g. --vary serving.replicas=1,2,4) and/or --seeds N, "
                     "or a sweep: section "
                     "in the scenario (sweep: {vary: {serving.replicas: [1, 2, 4]}, seeds: 5})");
  const hw::Catalog catalog = load_catalog(p->vm);
  const auto calibration = load_calibration(p->vm, catalog);
  const std::optional<uint64_t> seed = seed_of(p->vm);
  const scenario::Scenario base = app::check_sweep_points(p->scenario, sets, seed, spec, catalog,
                                                          calibration, p->vm.count("quiet") > 0);
  const int threads = threads_of(p->vm);
  std::string out_dir;
  if (dist::rank() == 0) {
    out_dir = prepare_out_dir(p->vm, p->scenario, base.name, "-sweep", {"sweep.csv"});
    set_activity("sweeping " + p->scenario + " (output folder " + out_dir +
                 "; its checkpoint keeps the finished simulations: rerun with --resume)");
  }
  const std::vector<std::string> results = dist::map_checkpointed(
      spec.items(), threads, out_dir, dist::search_identity("sweep", p->scenario, args),
      p->vm.count("resume") > 0, p->vm.count("quiet") > 0,
      [&](std::size_t i) {
        return app::run_sweep_item(p->scenario, sets, base.seed, spec, i, catalog, calibration);
      },
      app::check_sweep_result);
  if (dist::rank() != 0) return 0;
  std::cout << "SWEEP  " << base.name << ": " << spec.points() << " points × " << spec.seeds
            << " seed" << (spec.seeds == 1 ? "" : "s")
            << (spec.seeds > 1 ? " (mean ± 95 % CI over the seeds)" : "") << "\n"
            << reports::table_text(reports::sweep_table(spec, results));
  if (const auto knee = reports::sweep_knee(spec, results))
    std::cout << "KNEE   " << knee->metric << " turns up at " << knee->axis << " = " << knee->value
              << " (the point farthest below the curve's chord, axes scaled to [0, 1])\n";
  std::cout << "  wrote       " << reports::write_sweep_csv(spec, base.seed, results, out_dir);
  for (const auto& f : reports::write_sweep_report(spec, results, base.name, out_dir))
    std::cout << ", " << f;
  std::cout << "\n";
  dist::remove_checkpoint(out_dir);
  return 0;
}

int cmd_ladder(const std::vector<std::string>& args) {
  po::options_description desc = scenario_options();
  desc.add_options()("out", po::value<std::string>(), "output folder (default: out/<name>-ladder)")(
      "threads", po::value<int>(),
      "threads (default: all cores; steps run side by side; the result does not depend on it)")(
      "quiet,q", "print no progress");
  auto p = parse("ladder", args, desc);
  if (!p) return 0;
  std::vector<std::string> sets;
  if (p->vm.count("set")) sets = p->vm["set"].as<std::vector<std::string>>();
  const hw::Catalog catalog = load_catalog(p->vm);
  const auto calibration = load_calibration(p->vm, catalog);
  const std::optional<uint64_t> seed = seed_of(p->vm);
  // The section and the scenario first, so that a bad one fails before the folder is made.
  (void)app::read_ladder_section(p->scenario, sets);
  const scenario::Scenario base = scenario::load(p->scenario, sets, seed, catalog, calibration);
  const std::string out_dir =
      prepare_out_dir(p->vm, p->scenario, base.name, "-ladder", {"ladder.json"});
  set_activity("climbing the ladder of " + p->scenario + " (output folder " + out_dir + ")");
  const bool quiet = p->vm.count("quiet") > 0;
  const app::LadderResult r = app::run_ladder(
      p->scenario, sets, seed, catalog, calibration, threads_of(p->vm), [quiet](int done, int n) {
        if (!quiet) std::fprintf(stderr, "  ladder: %d of %d steps searched\n", done, n);
      });
  std::cout << reports::ladder_text(r);
  const std::string json_path = (std::filesystem::path(out_dir) / "ladder.json").string();
  reports::write_json(reports::ladder_json(r), json_path);
  std::string files;
  for (const auto& f : reports::write_ladder_report(r, out_dir)) files += ", " + f;
  std::cout << "  wrote       " << json_path << files << "\n";
  for (const auto& s : r.rungs)
    if (!s.met) return 4;
  return 0;
}

int cmd_check(const std::vector<std::string>& args) {
  auto p = parse("check", args, scenario_options());
  if (!p) return 0;
  std::cout << reports::check_report(load_scenario(*p));
  return 0;
}

// `list keys [SECTION] [--markdown]`: the scenario schema's declared keys.
int cmd_list_keys(const std::vector<std::string>& args) {
  std::string section;
  bool markdown = false;
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--markdown") {
      markdown = true;
    } else if (section.empty() && args[i].rfind("--", 0) != 0) {
      section = args[i];
    } else {
      throw po::error("list keys takes one SECTION and --markdown, '" + args[i] + "' is extra");
    }
  }
  if (markdown && !section.empty())
    throw po::error("--markdown writes the whole reference; drop the section");
  std::cout << (markdown ? scenario::schema::markdown() : scenario::schema::text(section));
  return 0;
}

int cmd_list(const std::vector<std::string>& args) {
  const std::vector<std::string> what = {"gpus",    "models",   "nodes",   "interconnects",
                                         "engines", "policies", "routers", "keys"};
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << "usage: fleetsim list gpus|models|nodes|interconnects|engines|policies|routers "
                 "[--catalog DIR]\n"
                 "       fleetsim list keys [SECTION] [--markdown]\n"
                 "  keys: every scenario key (path, type, range, default, meaning), or those "
                 "under SECTION\n  (e.g. serving, fleet.regions); --markdown: the reference "
                 "scenarios/README.md embeds\n";
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "keys") return cmd_list_keys(args);
  std::string dir = hw::Catalog::default_dir();
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--catalog" && i + 1 < args.size()) {
      dir = args[++i];
      continue;
    }
    // One kind per call: "list gpus models" would otherwise list gpus and ignore models.
    throw po::error("list takes one kind, '" + args[i] + "' is extra" +
                    (std::find(what.begin(), what.end(), args[i]) != what.end()
                         ? " (run fleetsim list " + args[i] + " separately)"
                         : ""));
  }
  const std::string& w = args[0];
  if (w == "gpus" || w == "models" || w == "nodes" || w == "interconnects" || w == "engines") {
    const hw::Catalog cat = hw::Catalog::load(dir);
    if (w == "gpus") {
      for (const auto& [id, g] : cat.gpus()) {
        std::printf("%-16s %-34s %9s %11s %12s BF16  efficiency %s\n", id.c_str(),
                    g.name.substr(0, 34).c_str(),
                    units::format(g.memory_bytes, units::Dim::kBytes).c_str(),
                    units::format(g.memory_bw_bytes_per_s, units::Dim::kBandwidth).c_str(),
                    units::format(g.bf16_flops_per_s, units::Dim::kFlopRate).c_str(),
                    g.efficiency_basis.c_str());
      }
    } else if (w == "models") {
      for (const auto& [id, m] : cat.models()) {
        std::string kind = m.is_moe() ? "MoE " + std::to_string(m.moe->top_k) + "/" +
                                            std::to_string(m.moe->experts)
                                      : "dense";
        if (m.mla) kind += ", MLA";
        std::printf(
            "%-16s %-26s %8s params (%8s active), %3d layers, hidden %5d, %3d/%3d heads, %s\n",
            id.c_str(), m.name.substr(0, 26).c_str(),
            units::format_count(m.derived_params()).c_str(),
            units::format_count(m.derived_active_params()).c_str(), m.layers, m.hidden, m.heads,
            m.kv_heads, kind.c_str());
      }
    } else if (w == "nodes") {
      for (const auto& [id, n] : cat.nodes())
        std::printf("%-22s %-40s %2d x %-12s %3d NICs %-12s %9s/node, %2d nodes/rack\n", id.c_str(),
                    n.name.substr(0, 40).c_str(), n.gpus_per_node, n.gpu.c_str(), n.nics_per_node,
                    n.nic.c_str(), units::format(n.node_power_w, units::Dim::kPower).c_str(),
                    n.nodes_per_rack);
    } else if (w == "engines") {
      for (const auto& [id, e] : cat.engines())
        std::printf(
            "%-10s %-42s %s, budget %lld tokens, overhead %s/iteration + %s/sequence, kernels "
            "x%.2f%s%s\n",
            id.c_str(), e.name.substr(0, 42).c_str(),
            !e.chunked_prefill
                ? (e.split_long_prompts ? "prefill-first, long prompts in chunks" : "prefill-first")
            : e.split_prompts ? "chunked prefill"
                              : "whole prompts with decodes",
            static_cast<long long>(e.max_batched_tokens),
            units::format(e.iteration_overhead_s, units::Dim::kTime).c_str(),
            units::format(e.per_sequence_overhead_s, units::Dim::kTime).c_str(),
            e.kernel_efficiency, e.fitted.empty() ? "" : ", fitted",
            id == hw::kDefaultEngine ? " (default)" : "");
    } else {
      for (const auto& [id, l] : cat.interconnects())
        std::printf("%-20s %-9s %-44s %11s %9s\n", id.c_str(), l.kind.c_str(),
                    l.name.substr(0, 44).c_str(),
                    units::format(l.bw_bytes_per_s, units::Dim::kBandwidth).c_str(),
                    units::format(l.latency_s, units::Dim::kTime).c_str());
    }
  } else if (w == "policies") {
    for (const auto& pol : serving::policies()) {
      std::printf("%-12s %s\n%-12s [%s]\n", pol.name.c_str(), pol.summary.c_str(), "",
                  pol.citation.c_str());
      for (const auto& p : pol.params)
        std::printf("%-12s   serving.%-20s %-8s default %-6s %-7s %s\n", "", p.key.c_str(),
                    p.type.c_str(), p.fallback.c_str(), p.unit.c_str(), p.help.c_str());
    }
  } else if (w == "routers") {
    for (const auto& r : serving::routers()) {
      std::printf("%-20s %s\n", r.name.c_str(), r.summary.c_str());
      for (const auto& p : r.params)
        std::printf("%-20s   serving.%-20s %-8s default %-6s %-9s %s\n", "", p.key.c_str(),
                    p.type.c_str(), p.fallback.c_str(), p.unit.c_str(), p.help.c_str());
    }
  } else {
    throw InputError("unknown list '" + w + "'" + did_you_mean(w, what),
                     "one of gpus, models, nodes, interconnects, engines, policies, routers, keys");
  }
  return 0;
}

int cmd_validate(const std::vector<std::string>& args) {
  po::options_description desc("validate options");
  desc.add_options()("dir", po::value<std::string>(),
                     "folder of case files (default: scenarios/validation)")(
      "check-baseline", "exit 1 if a group's median error is worse than the committed baseline")(
      "update-baseline",
      "write the current errors as the baseline (DIR/baseline.json) and the error bands "
      "(DIR/error_bands.json)")("catalog", po::value<std::string>(), "catalog folder")(
      "calibration", po::value<std::string>(), "calibration folder, or 'none'")(
      "json", po::value<std::string>(),
      "also write every case's result in full (ids, measured, predicted, error, engine, "
      "model, GPU, source) and the group table to this JSON file")(
      "explain", po::value<std::string>(),
      "for each case whose file name contains this text: the case's result and where the time "
      "of its iteration goes (simulated cases: their representative iterations)")("help,h",
                                                                                  "show this help");
  po::positional_options_description pos;
  pos.add("dir", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << "usage: fleetsim validate [DIR] [options]\n\n" << desc << "\n";
    return 0;
  }
  const std::string dir =
      vm.count("dir") ? vm["dir"].as<std::string>() : std::string(FLEETSIM_VALIDATION_DIR);
  const hw::Catalog catalog = load_catalog(vm);
  if (vm.count("explain")) {
    const std::string want = vm["explain"].as<std::string>();
    const auto calibration = load_calibration(vm, catalog);
    int shown = 0;
    for (const std::string& f : validation::case_files(dir)) {
      if (std::filesystem::path(f).filename().string().find(want) == std::string::npos) continue;
      validation::CaseSetup setup;
      const validation::Case c = validation::run_case(f, catalog, calibration, &setup);
      std::cout << validation::format_report({c}) << "\n";
      if (setup.step)
        std::cout << reports::explain_table(*setup.scenario, *setup.step, "the case's iteration")
                  << "\n";
      else if (setup.scenario)
        std::cout << reports::explain(*setup.scenario, setup.mean_decode_batch) << "\n";
      ++shown;
    }
    if (shown == 0)
      throw InputError("no case file name contains '" + want + "'",
                       "list the folder's files, or give a shorter part of a name", dir);
    return 0;
  }
  const std::string json_file = vm.count("json") ? vm["json"].as<std::string>() : "";
  if (!json_file.empty()) {
    const auto parent = std::filesystem::absolute(json_file).parent_path();
    if (!std::filesystem::is_directory(parent))
      throw InputError(
          "--json " + json_file + ": the folder " + parent.string() + " does not exist",
          "give a file in an existing folder", json_file);
    if (std::filesystem::is_directory(json_file))
      throw InputError("--json " + json_file + " is a folder",
                       "give a file name, e.g. " +
                           (std::filesystem::path(json_file) / "validation.json").string(),
                       json_file);
  }
  const auto cases = validation::run_suite(dir, catalog, load_calibration(vm, catalog));
  std::cout << validation::format_report(cases);
  if (!json_file.empty()) {
    validation::write_results_json(cases, json_file);
    std::cout << "wrote " << json_file << "\n";
  }
  const std::string baseline = (std::filesystem::path(dir) / "baseline.json").string();
  if (vm.count("update-baseline")) {
    validation::write_baseline(cases, baseline);
    const std::string bands = (std::filesystem::path(dir) / "error_bands.json").string();
    validation::write_error_bands(cases, bands);
    std::cout << "wrote " << baseline << " and " << bands << "\n";
  }
  if (vm.count("check-baseline")) {
    const std::string worse = validation::check_baseline(cases, baseline);
    if (!worse.empty()) {
      std::cerr << "error: validation got worse than the committed baseline (" << baseline << "):\n"
                << worse;
      return 1;
    }
    std::cout << "baseline: no group is worse than " << baseline << "\n";
  }
  return 0;
}

// Today's date (UTC), YYYY-MM-DD, for provenance lines.
std::string today_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char b[16];
  std::strftime(b, sizeof b, "%Y-%m-%d", &tm);
  return b;
}

// `calibrate fit`: fits engine profiles on the validation suite's training split.
int cmd_calibrate_fit(const std::vector<std::string>& args) {
  po::options_description desc("calibrate fit options");
  desc.add_options()("engine", po::value<std::vector<std::string>>(),
                     "engine id(s) to fit (default: every engine with fit: parameters)")(
      "dir", po::value<std::string>(), "folder of case files (default: scenarios/validation)")(
      "write", "write the fitted values and their provenance into the engine files")(
      "no-loso", "skip the leave-one-source-out refits")(
      "threads", po::value<int>()->default_value(2), "threads running cases")(
      "catalog", po::value<std::string>(), "catalog folder")(
      "calibration", po::value<std::string>(), "calibration folder, or 'none'")("help,h",
                                                                                "show this help");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << "usage: fleetsim calibrate fit [--engine ID ...] [--write] [options]\n"
                 "  fits the parameters each engine file lists under 'fit:' (at most 4) on the\n"
                 "  validation suite's training cases of that engine (held-out cases are never\n"
                 "  used), then prints training, held-out and leave-one-source-out errors\n\n"
              << desc << "\n";
    return 0;
  }
  const int threads = vm["threads"].as<int>();
  if (threads < 1 || threads > 256)
    throw InputError("--threads must be between 1 and 256, got " + std::to_string(threads), "");
  const std::string dir =
      vm.count("dir") ? vm["dir"].as<std::string>() : std::string(FLEETSIM_VALIDATION_DIR);
  const hw::Catalog catalog = load_catalog(vm);
  const auto calibration = load_calibration(vm, catalog);
  std::vector<std::string> engines;
  if (vm.count("engine")) {
    engines = vm["engine"].as<std::vector<std::string>>();
    for (const auto& e : engines) (void)catalog.engine(e);  // unknown: error with the list
  } else {
    for (const auto& [id, e] : catalog.engines())
      if (!e.fit.empty()) engines.push_back(id);
  }
  const std::vector<std::string> files = validation::case_files(dir);
  validation::FitOptions opt;
  opt.loso = !vm.count("no-loso");
  opt.threads = threads;
  char line[256];
  std::snprintf(line, sizeof line, "%-10s %5s %5s %4s  %-8s %-8s %-8s %-8s  %s\n", "engine",
                "train", "held", "src", "train0", "train", "held", "loso",
                "parameters (before -> after)");
  std::cout << line;
  for (const auto& id : engines) {
    const validation::FitResult r = validation::fit_engine(files, catalog, calibration, id, opt);
    std::string params;
    for (size_t i = 0; i < r.params.size(); ++i) {
      char b[128];
      std::snprintf(b, sizeof b, "%s%s %.4g -> %.4g", i ? ", " : "", r.params[i].c_str(),
                    r.before[i], r.after[i]);
      params += b;
    }
    auto pct = [](double v) {
      char b[16];
      if (std::isnan(v)) return std::string("-");
      std::snprintf(b, sizeof b, "%.1f%%", 100 * v);
      return std::string(b);
    };
    std::snprintf(line, sizeof line, "%-10s %5d %5d %4d  %-8s %-8s %-8s %-8s  ", id.c_str(),
                  r.train_cases, r.heldout_cases, r.sources, pct(r.train_median_before).c_str(),
                  pct(r.train_median_after).c_str(), pct(r.heldout_median_after).c_str(),
                  pct(r.loso_median).c_str());
    std::cout << line << params << "\n";
    if (r.params.empty()) {
      std::cout << "  too few training cases to fit any parameter ("
                << validation::kCasesPerParameter
                << " per parameter and model kind): the priors stay\n";
    } else if (vm.count("write")) {
      const std::string file =
          (std::filesystem::path(catalog.dir()) / "engines" / (id + ".yaml")).string();
      validation::write_fit(file, r, validation::fit_provenance(r, today_utc()));
      std::cout << "  wrote " << file << "\n";
    }
  }
  std::cout << "(median |error|: train0 before the fit, train after it, held = held-out cases,\n"
               " loso = each training case predicted by a fit without its source)\n";
  return 0;
}

// `calibrate list`: the installed tables, one line each.
int cmd_calibrate_list(const std::string& dir, const hw::Catalog& catalog) {
  const hw::CalibrationSet set = hw::CalibrationSet::load_dir(dir, catalog);
  std::cout << "calibration tables in " << dir << "\n";
  for (const auto& t : set.tables()) {
    std::map<std::string, int> kinds;  // "gemm bf16" -> rows
    for (const auto& r : t.rows) ++kinds[std::string(hw::calib_op_name(r.op)) + " " + r.dtype];
    std::string what;
    for (const auto& [k, n] : kinds)
      what += (what.empty() ? "" : ", ") + k + " " + std::to_string(n);
    std::cout << "  " << std::filesystem::path(t.file).filename().string() << "  " << t.gpu << "  "
              << t.rows.size() << " rows (" << what << ")  " << t.date << "  " << t.source << "\n";
  }
  return 0;
}

// `calibrate remove NAME`: deletes one installed table (a file name in the folder, nothing
// else), after checking it is one.
int cmd_calibrate_remove(const std::string& name, const std::string& dir,
                         const hw::Catalog& catalog) {
  namespace fs = std::filesystem;
  if (name.empty() || name.find('/') != std::string::npos || fs::path(name).extension() != ".csv")
    throw InputError("'" + name + "' is not the file name of an installed table",
                     "give a name that `fleetsim calibrate list` shows, e.g. h100-sxm-fa3.csv");
  const fs::path p = fs::path(dir) / name;
  if (!fs::is_regular_file(p))
    throw InputError("no calibration table named " + name + " is installed",
                     "see `fleetsim calibrate list`", dir);
  const hw::CalibrationTable t = hw::load_calibration(p.string(), catalog);  // it is a table
  fs::remove(p);
  std::cout << "removed " << p.string() << " (" << t.rows.size() << " rows for " << t.gpu << ")\n";
  return 0;
}

// What importing `t` changes: for each (operator, dtype, regime) where installed tables
// already have rows for its GPU, the installed fraction of the roofline at the new rows'
// shapes against the new rows' own. The model interpolates over all rows of a kind, so
// overlapping tables combine; this makes the combination visible.
std::string calibration_diff(const hw::CalibrationTable& t, const hw::CalibrationSet& installed) {
  std::map<std::string, std::vector<double>> ratio;  // kind -> new / installed fraction
  std::map<std::string, size_t> installed_rows;
  for (const auto& r : t.rows) {
    const auto* rows = installed.rows(t.gpu, r.op, r.dtype, r.compute_bound);
    if (rows == nullptr || rows->empty()) continue;
    const std::string kind = std::string(hw::calib_op_name(r.op)) + " " + r.dtype + " " +
                             (r.compute_bound ? "compute-bound" : "memory-bound");
    ratio[kind].push_back(r.fraction / hw::CalibrationSet::fraction_at(*rows, r.work));
    installed_rows[kind] = rows->size();
  }
  std::ostringstream o;
  for (auto& [kind, v] : ratio) {
    std::sort(v.begin(), v.end());
    const double median = v[v.size() / 2];
    char b[256];
    std::snprintf(b, sizeof b,
                  "warning: overlaps installed %s rows for %s (%zu installed, %zu new): the new "
                  "rows reach %.2fx the installed fraction of the roofline at their shapes "
                  "(median; %.2fx to %.2fx); runs will interpolate over both\n",
                  kind.c_str(), t.gpu.c_str(), installed_rows[kind], v.size(), median, v.front(),
                  v.back());
    o << b;
  }
  return o.str();
}

// `calibrate import-bench FILE`: validation cases from a vLLM/SGLang serving benchmark's
// saved result (sim/validation/bench_import.h), written into --out; nothing is replaced
// without --force.
int cmd_calibrate_import_bench(const std::vector<std::string>& args) {
  po::options_description desc("calibrate import-bench options");
  desc.add_options()("model", po::value<std::string>(), "catalog model id that ran (required)")(
      "gpu", po::value<std::string>(), "catalog GPU id that ran (required)")(
      "tp", po::value<int>()->default_value(1), "tensor-parallel GPUs per replica")(
      "replicas", po::value<int>()->default_value(1), "replicas behind the endpoint")(
      "weights", po::value<std::string>(), "weight precision it ran with (e.g. fp8, fp4)")(
      "engine", po::value<std::string>(),
      "catalog engine id (default: from the file's backend: vllm-v1 or sglang)")(
      "source", po::value<std::string>(),
      "source id for leave-one-source-out (default: file stem)")(
      "heldout", "mark the cases held out (calibrate fit never trains on them)")(
      "out", po::value<std::string>(), "folder to write the case files into (required)")(
      "force", "replace case files of the same name")("help,h", "show this help");
  po::positional_options_description pos;
  pos.add("file", 1);
  desc.add_options()("file", po::value<std::string>(), "the benchmark's result JSON");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
  po::notify(vm);
  if (vm.count("help") || !vm.count("file")) {
    std::cout
        << "usage: fleetsim calibrate import-bench RESULT.json --model ID --gpu ID --out DIR\n"
           "  turns the JSON that `vllm bench serve --save-result` or sglang.bench_serving\n"
           "  wrote into validation cases (throughput, mean TTFT, mean TPOT); then\n"
           "  `fleetsim validate DIR` compares fleetsim with them and `calibrate fit --dir\n"
           "  DIR` can fit an engine profile on them\n\n"
        << desc << "\n";
    return vm.count("help") ? 0 : 2;
  }
  if (!vm.count("out"))
    throw InputError("no --out folder", "name the folder the case files go into: --out DIR");
  validation::BenchImportOptions opt;
  if (vm.count("model")) opt.model = vm["model"].as<std::string>();
  if (vm.count("gpu")) opt.gpu = vm["gpu"].as<std::string>();
  opt.tp = vm["tp"].as<int>();
  opt.replicas = vm["replicas"].as<int>();
  if (vm.count("weights")) opt.weights = vm["weights"].as<std::string>();
  if (vm.count("engine")) opt.engine = vm["engine"].as<std::string>();
  if (vm.count("source")) opt.source = vm["source"].as<std::string>();
  opt.heldout = vm.count("heldout") > 0;
  const hw::Catalog catalog = hw::Catalog::load(hw::Catalog::default_dir());
  const auto cases = validation::import_serving_bench(vm["file"].as<std::string>(), opt, catalog);
  namespace fs = std::filesystem;
  const fs::path dir = vm["out"].as<std::string>();
  for (const auto& c : cases)
    if (fs::exists(dir / c.name) && !vm.count("force"))
      throw InputError("a case file named " + c.name + " is already there",
                       "pass --force to replace it, or choose another --out",
                       (dir / c.name).string());
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw InputError("cannot create the folder: " + ec.message(), "check the path", dir.string());
  for (const auto& c : cases) {
    std::ofstream f(dir / c.name, std::ios::binary);
    f << c.text;
    if (!f)
      throw InputError("cannot write the case file", "check the folder", (dir / c.name).string());
    std::cout << "wrote " << (dir / c.name).string() << "\n";
  }
  return 0;
}

// `calibrate import-kernels FILE`: a calibration table from Google Benchmark or nvbench JSON
// (hw_models/kernel_bench_import.h), written to --out (not replaced without --force) and
// checked as `calibrate import` will check it.
int cmd_calibrate_import_kernels(const std::vector<std::string>& args) {
  po::options_description desc("calibrate import-kernels options");
  desc.add_options()("gpu", po::value<std::string>(), "catalog GPU id it ran on (required)")(
      "op", po::value<std::string>(), "gemm, attn_prefill or attn_decode (required)")(
      "dtype", po::value<std::string>(), "bf16, fp16, fp8 or fp4 (required)")(
      "args", po::value<std::string>(),
      "names of a Google Benchmark name's arguments, in order (e.g. m,n,k for BM_Gemm/M/N/K)")(
      "match", po::value<std::string>(), "only benchmarks whose name contains this")(
      "source", po::value<std::string>(), "who measured it, with what (default: the file name)")(
      "date", po::value<std::string>(),
      "day of the measurement, YYYY-MM-DD (default: Google Benchmark's context date)")(
      "driver", po::value<std::string>(), "NVIDIA driver version")("cuda", po::value<std::string>(),
                                                                   "CUDA / ROCm version")(
      "out", po::value<std::string>(), "the table file to write (required)")(
      "force", "replace --out if it exists")("help,h", "show this help");
  po::positional_options_description pos;
  pos.add("file", 1);
  desc.add_options()("file", po::value<std::string>(), "the benchmark's JSON");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
  po::notify(vm);
  if (vm.count("help") || !vm.count("file")) {
    std::cout << "usage: fleetsim calibrate import-kernels RESULT.json --gpu ID --op OP --dtype D "
                 "--out TABLE.csv\n"
                 "  turns the JSON that Google Benchmark (--benchmark_format=json) or nvbench\n"
                 "  (--json) wrote into a calibration table: one row per shape, from counters or\n"
                 "  axes named m, n, k, batch, q_len, kv_len, heads, kv_heads, head_dim, causal\n"
                 "  (or --args), the time from real_time or nvbench's mean cold GPU time; then\n"
                 "  `fleetsim calibrate import TABLE.csv` installs it\n\n"
              << desc << "\n";
    return vm.count("help") ? 0 : 2;
  }
  for (const char* k : {"gpu", "op", "dtype", "out"})
    if (!vm.count(k))
      throw InputError(std::string("no --") + k,
                       "usage: fleetsim calibrate import-kernels RESULT.json --gpu ID --op OP "
                       "--dtype D --out TABLE.csv");
  hw::KernelBenchImportOptions opt;
  opt.gpu = vm["gpu"].as<std::string>();
  opt.op = vm["op"].as<std::string>();
  opt.dtype = vm["dtype"].as<std::string>();
  if (vm.count("args")) {
    std::stringstream ss(vm["args"].as<std::string>());
    for (std::string a; std::getline(ss, a, ',');) opt.args.push_back(a);
  }
  if (vm.count("match")) opt.match = vm["match"].as<std::string>();
  if (vm.count("source")) opt.source = vm["source"].as<std::string>();
  if (vm.count("date")) opt.date = vm["date"].as<std::string>();
  if (vm.count("driver")) opt.driver = vm["driver"].as<std::string>();
  if (vm.count("cuda")) opt.cuda = vm["cuda"].as<std::string>();
  const hw::Catalog catalog = hw::Catalog::load(hw::Catalog::default_dir());
  const hw::KernelBenchImport t =
      hw::import_kernel_bench(vm["file"].as<std::string>(), opt, catalog);
  namespace fs = std::filesystem;
  const fs::path out = vm["out"].as<std::string>();
  if (fs::exists(out) && !vm.count("force"))
    throw InputError("the table file is already there", "pass --force to replace it", out.string());
  // Written beside, checked as `calibrate import` checks a table, then moved into place:
  // a table that fails the check (a row faster than the roofline) replaces nothing.
  const fs::path tmp = out.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f << t.text;
    if (!f) throw InputError("cannot write the table", "check the folder", tmp.string());
  }
  try {
    (void)hw::load_calibration(tmp.string(), catalog);
  } catch (const InputError& e) {
    std::error_code ec;
    fs::remove(tmp, ec);
    // Name the benchmark the refused row came from (its line of the table).
    std::stringstream lines(t.text);
    std::string row;
    for (int i = 0; i < e.line() && std::getline(lines, row);) ++i;
    throw InputError("the table refuses a row: " + e.message() +
                         (e.line() > 0 ? " (row " + row + ")" : std::string()),
                     e.hint(), vm["file"].as<std::string>());
  }
  fs::rename(tmp, out);
  std::cout << "wrote " << out.string() << ": " << t.rows << " rows from " << t.runs << " "
            << t.format << " runs"
            << (t.skipped ? " (" + std::to_string(t.skipped) +
                                " left out: errors, skipped "
                                "states or aggregates other than the median)"
                          : std::string())
            << "\ninstall it with: fleetsim calibrate import " << out.string() << "\n";
  return 0;
}

int cmd_calibrate(const std::vector<std::string>& args) {
  if (!args.empty() && args[0] == "fit")
    return cmd_calibrate_fit(std::vector<std::string>(args.begin() + 1, args.end()));
  if (!args.empty() && args[0] == "import-bench")
    return cmd_calibrate_import_bench(std::vector<std::string>(args.begin() + 1, args.end()));
  if (!args.empty() && args[0] == "import-kernels")
    return cmd_calibrate_import_kernels(std::vector<std::string>(args.begin() + 1, args.end()));
  const bool wants_help = std::any_of(
      args.begin(), args.end(), [](const std::string& a) { return a == "--help" || a == "-h"; });
  const bool known =
      !args.empty() && (args[0] == "import" || args[0] == "remove" || args[0] == "list");
  if (!known || wants_help || (args[0] != "list" && args.size() < 2)) {
    std::cout
        << "usage: fleetsim calibrate import FILE [--force] [--calibration DIR]\n"
           "  checks a calibration table (hw_models/calibration/README.md), shows where it\n"
           "  overlaps installed tables, and copies it into the calibration folder;\n"
           "  --force replaces a table of the same name\n"
           "       fleetsim calibrate list [--calibration DIR]\n"
           "  lists the installed tables\n"
           "       fleetsim calibrate remove NAME [--calibration DIR]\n"
           "  removes the installed table NAME (as list shows it)\n"
           "       fleetsim calibrate fit [--engine ID ...] [--write]\n"
           "  fits serving-engine profiles on the validation suite (calibrate fit --help)\n"
           "       fleetsim calibrate import-bench RESULT.json --model ID --gpu ID --out DIR\n"
           "  validation cases from a vLLM/SGLang serving benchmark's saved result\n"
           "       fleetsim calibrate import-kernels RESULT.json --gpu ID --op OP --dtype D --out "
           "TABLE.csv\n"
           "  a calibration table from Google Benchmark or nvbench JSON\n";
    return wants_help ? 0 : 2;
  }
  const std::string file = args[0] == "list" ? std::string() : args[1];
  bool force = false;
  std::string dir = hw::CalibrationSet::default_dir();
  for (size_t i = args[0] == "list" ? 1 : 2; i < args.size(); ++i) {
    if (args[i] == "--force" && args[0] == "import")
      force = true;
    else if (args[i] == "--calibration" && i + 1 < args.size())
      dir = args[++i];
    else
      throw InputError("unknown option '" + args[i] + "'",
                       "fleetsim calibrate " + args[0] + " --help");
  }
  const hw::Catalog catalog = hw::Catalog::load(hw::Catalog::default_dir());
  if (args[0] == "list") return cmd_calibrate_list(dir, catalog);
  if (args[0] == "remove") return cmd_calibrate_remove(file, dir, catalog);
  const hw::CalibrationTable t = hw::load_calibration(file, catalog);
  namespace fs = std::filesystem;
  const fs::path dest = fs::path(dir) / fs::path(file).filename();
  if (fs::is_directory(dir) && !(fs::exists(dest) && fs::equivalent(dest, file))) {
    // Compare with what is installed, the table it would replace left out.
    hw::CalibrationSet others;
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.path().extension() == ".csv" && entry.path().filename() != dest.filename())
        others.add(hw::load_calibration(entry.path().string(), catalog));
    std::cerr << calibration_diff(t, others);
  }
  std::error_code ec;
  if (fs::exists(dest) && fs::equivalent(dest, file, ec)) {
    std::cout << "checked " << file << ": " << t.rows.size() << " rows for " << t.gpu
              << " (already installed)\n";
    return 0;
  }
  if (fs::exists(dest) && !force)
    throw InputError(
        "a calibration table named " + dest.filename().string() + " is already installed",
        "pass --force to replace it, or rename the file", dest.string());
  fs::create_directories(dir, ec);
  if (ec)
    throw InputError("cannot create the calibration folder: " + ec.message(), "check the path",
                     dir);
  // The checked bytes, written under a temporary name and renamed into place: a table is
  // installed whole or not at all.
  files::write_file_atomically(dest.string(), files::read_input_file(file, "calibration table"),
                               true);
  std::cout << "checked " << file << ": " << t.rows.size() << " rows for " << t.gpu << " from "
            << t.source << "\ninstalled " << dest.string() << "\n";
  return 0;
}

// A parameter count as a model card writes it: 1.04e12, 1T, 32B, 671e9, 3.3B.
double parse_count(const std::string& option, const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  const std::string unit = end != nullptr ? std::string(end) : std::string();
  const double scale = unit.empty()                 ? 1.0
                       : unit == "K" || unit == "k" ? 1e3
                       : unit == "M"                ? 1e6
                       : unit == "B" || unit == "G" ? 1e9
                       : unit == "T"                ? 1e12
                                                    : -1.0;
  if (end == text.c_str() || scale < 0 || !(v > 0) || !std::isfinite(v))
    throw po::error("--" + option + " expects a parameter count such as 671e9, 671B or 1T, got '" +
                    text + "'");
  return v * scale;
}

int cmd_import_model(const std::vector<std::string>& args) {
  po::options_description desc("import-model options");
  desc.add_options()("config", po::value<std::string>(), "the model's Hugging Face config.json")(
      "id", po::value<std::string>(), "catalog id: the file stem (e.g. kimi-k2)")(
      "name", po::value<std::string>(), "display name (default: the config's _name_or_path)")(
      "params", po::value<std::string>(),
      "the model card's total parameters (671B, 1T, 1.04e12): checked against the shape")(
      "active", po::value<std::string>(), "an MoE model card's active parameters per token")(
      "source", po::value<std::string>(),
      "the citation written under sources (default: the config file's name)")(
      "hf-repo", po::value<std::string>(),
      "the Hugging Face repository (owner/name) the deployable output loads")(
      "out", po::value<std::string>(), "write the catalog file here (default: standard output)")(
      "force", "replace --out if it exists")("help,h", "show this help");
  po::positional_options_description pos;
  pos.add("config", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
  po::notify(vm);
  if (vm.count("help") || !vm.count("config")) {
    std::cout << "usage: fleetsim import-model CONFIG.json --id ID [options]\n\n"
              << "Writes a catalog model (hw_models/catalog/models/ID.yaml) from a Hugging Face\n"
              << "config.json: dense, GQA, MoE (Mixtral, Qwen, DeepSeek/Kimi, Llama 4, gpt-oss\n"
              << "spellings), MLA, sliding windows, chunked attention. Each value names the\n"
              << "key it came from.\n\n"
              << desc << "\n";
    return vm.count("help") ? 0 : 2;
  }
  if (!vm.count("id")) throw po::error("--id is required (the catalog file's stem, e.g. kimi-k2)");
  hw::HfImportOptions opt;
  opt.id = vm["id"].as<std::string>();
  if (opt.id.empty() || opt.id.find_first_of("/\\ ") != std::string::npos)
    throw po::error("--id must be a file stem without '/', '\\' or spaces, got '" + opt.id + "'");
  if (vm.count("name")) opt.name = vm["name"].as<std::string>();
  if (vm.count("source")) opt.source = vm["source"].as<std::string>();
  if (vm.count("hf-repo")) opt.hf_repo = vm["hf-repo"].as<std::string>();
  if (vm.count("params"))
    opt.published_params = parse_count("params", vm["params"].as<std::string>());
  if (vm.count("active"))
    opt.published_active = parse_count("active", vm["active"].as<std::string>());
  const std::string file = vm["config"].as<std::string>();
  const hw::HfImport r =
      hw::import_hf_config(files::read_input_file(file, "model config"), file, opt);
  // The file written must load as a catalog model: load it from a scratch folder first.
  namespace fs = std::filesystem;
  const fs::path scratch =
      fs::temp_directory_path() / ("fleetsim-import-" + std::to_string(::getpid()));
  fs::create_directories(scratch);
  const fs::path probe = scratch / (opt.id + ".yaml");
  try {
    files::write_file_atomically(probe.string(), r.yaml, false);
    hw::load_model_file(probe.string());
  } catch (...) {
    std::error_code ec;
    fs::remove_all(scratch, ec);
    throw;
  }
  std::error_code ec;
  fs::remove_all(scratch, ec);
  if (vm.count("out")) {
    const std::string out = vm["out"].as<std::string>();
    if (fs::exists(out) && !vm.count("force"))
      throw InputError("the output file exists",
                       "pass --force to replace it, or choose another --out", out);
    files::write_file_atomically(out, r.yaml, false);
    std::cerr << "wrote " << out << "\n";
  } else {
    std::cout << r.yaml;
  }
  std::cerr << r.model.id << ": " << units::format_count(r.model.derived_params()) << " parameters";
  if (r.model.is_moe())
    std::cerr << " (" << units::format_count(r.model.derived_active_params()) << " active)";
  std::cerr << "\n";
  for (const auto& a : r.assumed) std::cerr << "  assumed: " << a << "\n";
  return 0;
}

}  // namespace

namespace {

int dispatch(const std::string& cmd, const std::vector<std::string>& args) {
  try {
    if (cmd == "run") return cmd_run(args);
    if (cmd == "check") return cmd_check(args);
    if (cmd == "list") return cmd_list(args);
    if (cmd == "validate") return cmd_validate(args);
    if (cmd == "calibrate") return cmd_calibrate(args);
    if (cmd == "plan") return cmd_plan(args);
    if (cmd == "sweep") return cmd_sweep(args);
    if (cmd == "ladder") return cmd_ladder(args);
    if (cmd == "import-model") return cmd_import_model(args);
    std::cerr << "fleetsim: unknown command '" << cmd << "'"
              << did_you_mean(cmd, {"run", "check", "plan", "sweep", "ladder", "list", "validate",
                                    "calibrate", "import-model"})
              << "\n"
              << kUsage;
    return 2;
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const po::error& e) {
    std::cerr << "error: " << e.what() << " (hint: fleetsim " << cmd << " --help)\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return 3;
  }
}

// Started by mpirun/mpiexec (Open MPI, MPICH/Hydra or PMIx launchers)?
bool under_mpi_launcher() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version") {
    std::cout << "fleetsim " << FLEETSIM_VERSION << "\n";
    return 0;
  }
  const std::string cmd = args[0];
  args.erase(args.begin());
  install_signal_handlers();
  const bool mpi = (cmd == "plan" || cmd == "sweep" || cmd == "run") && under_mpi_launcher();
  if (mpi) dist::init(&argc, &argv);
  const int rc = dispatch(cmd, args);
  // A rank that failed alone would leave the others waiting: end the whole job.
  if (mpi && rc != 0 && dist::size() > 1) dist::abort(rc);
  if (mpi) dist::finalize();
  return rc;
}
