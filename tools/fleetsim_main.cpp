// fleetsim command-line entry point: parses arguments and calls the library. No domain
// logic lives here.
#include <boost/program_options.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "hw_models/catalog.h"
#include "hw_models/error.h"
#include "hw_models/units.h"
#include "reports/summary.h"
#include "sim/scenario/scenario.h"
#include "sim/serving/registry.h"
#include "sim/simulation.h"

namespace po = boost::program_options;
using namespace fleetsim;

namespace {

const char* kUsage =
    "usage: fleetsim <command> [options]\n"
    "\n"
    "commands:\n"
    "  run SCENARIO     simulate a scenario, print a summary, write DIR/summary.json\n"
    "  check SCENARIO   validate a scenario and print its resolved configuration\n"
    "  list WHAT        list gpus | models | policies | routers\n"
    "\n"
    "  fleetsim --version          print the version\n"
    "  fleetsim <command> --help   options of a command\n";

// Common options of run and check.
po::options_description scenario_options() {
  po::options_description d("scenario options");
  d.add_options()
      ("set", po::value<std::vector<std::string>>()->composing(),
       "override a field: --set key.path=value (repeatable), e.g. --set serving.replicas=8")
      ("seed", po::value<uint64_t>(), "random seed (replaces the scenario's seed)")
      ("catalog", po::value<std::string>(), "catalog folder (default: $FLEETSIM_CATALOG or the bundled one)")
      ("help,h", "show this help");
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
    throw InputError("missing scenario file", "usage: fleetsim " + cmd + " SCENARIO (e.g. scenarios/default.yaml)");
  }
  p.scenario = p.vm["scenario"].as<std::string>();
  return p;
}

scenario::Scenario load_scenario(const Parsed& p) {
  const std::string dir =
      p.vm.count("catalog") ? p.vm["catalog"].as<std::string>() : hw::Catalog::default_dir();
  const hw::Catalog catalog = hw::Catalog::load(dir);
  std::vector<std::string> sets;
  if (p.vm.count("set")) sets = p.vm["set"].as<std::vector<std::string>>();
  std::optional<uint64_t> seed;
  if (p.vm.count("seed")) seed = p.vm["seed"].as<uint64_t>();
  return scenario::load(p.scenario, sets, seed, catalog);
}

int cmd_run(const std::vector<std::string>& args) {
  po::options_description desc = scenario_options();
  desc.add_options()
      ("out", po::value<std::string>(), "output folder (default: out/<scenario name>/)")
      ("requests-csv", po::value<std::string>(), "stream one CSV row per request to this file")
      ("quiet,q", "print no progress");
  auto p = parse("run", args, desc);
  if (!p) return 0;
  const scenario::Scenario sc = load_scenario(*p);
  const std::string out_dir =
      p->vm.count("out") ? p->vm["out"].as<std::string>() : "out/" + sc.name;
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) throw InputError("cannot create output folder: " + ec.message(), "pass --out DIR", out_dir);

  RunOptions opts;
  std::unique_ptr<reports::RequestsCsv> csv;
  if (p->vm.count("requests-csv")) {
    csv = std::make_unique<reports::RequestsCsv>(p->vm["requests-csv"].as<std::string>());
    opts.observers.push_back(csv.get());
  }
  if (!p->vm.count("quiet")) {
    opts.progress = [](const Progress& pr) {
      std::fprintf(stderr, "  ... simulated %s, %llu requests arrived, %llu completed (%s wall)\n",
                   units::format(pr.sim_time_s, units::Dim::kTime).c_str(),
                   static_cast<unsigned long long>(pr.arrived),
                   static_cast<unsigned long long>(pr.completed),
                   units::format(pr.wall_s, units::Dim::kTime).c_str());
    };
  }
  Simulation sim(sc, opts);
  const RunResult res = sim.run();
  std::cout << reports::summary_table(sc, res);
  const std::string json_path = (std::filesystem::path(out_dir) / "summary.json").string();
  reports::write_json(reports::summary_json(sc, res), json_path);
  std::cout << "  wrote       " << json_path << "\n";
  return 0;
}

int cmd_check(const std::vector<std::string>& args) {
  auto p = parse("check", args, scenario_options());
  if (!p) return 0;
  std::cout << reports::check_report(load_scenario(*p));
  return 0;
}

int cmd_list(const std::vector<std::string>& args) {
  const std::vector<std::string> what = {"gpus", "models", "policies", "routers"};
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << "usage: fleetsim list gpus|models|policies|routers [--catalog DIR]\n";
    return args.empty() ? 2 : 0;
  }
  std::string dir = hw::Catalog::default_dir();
  for (size_t i = 1; i + 1 < args.size(); ++i)
    if (args[i] == "--catalog") dir = args[i + 1];
  const std::string& w = args[0];
  if (w == "gpus" || w == "models") {
    const hw::Catalog cat = hw::Catalog::load(dir);
    if (w == "gpus") {
      for (const auto& [id, g] : cat.gpus()) {
        std::printf("%-16s %-28s %9s %11s %12s\n", id.c_str(), g.name.c_str(),
                    units::format(g.memory_bytes, units::Dim::kBytes).c_str(),
                    units::format(g.memory_bw_bytes_per_s, units::Dim::kBandwidth).c_str(),
                    units::format(g.bf16_flops_per_s, units::Dim::kFlopRate).c_str());
      }
    } else {
      for (const auto& [id, m] : cat.models()) {
        std::printf("%-16s %-24s %8s params, %3d layers, hidden %5d, %3d/%2d heads\n", id.c_str(),
                    m.name.c_str(), units::format_count(m.derived_params()).c_str(), m.layers,
                    m.hidden, m.heads, m.kv_heads);
      }
    }
  } else if (w == "policies") {
    for (const auto& pol : serving::policies())
      std::printf("%-12s %s\n%-12s [%s]\n", pol.name.c_str(), pol.summary.c_str(), "", pol.citation.c_str());
  } else if (w == "routers") {
    for (const auto& r : serving::routers()) std::printf("%-20s %s\n", r.name.c_str(), r.summary.c_str());
  } else {
    throw InputError("unknown list '" + w + "'" + did_you_mean(w, what), "one of gpus, models, policies, routers");
  }
  return 0;
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
  try {
    if (cmd == "run") return cmd_run(args);
    if (cmd == "check") return cmd_check(args);
    if (cmd == "list") return cmd_list(args);
    std::cerr << "fleetsim: unknown command '" << cmd << "'"
              << did_you_mean(cmd, {"run", "check", "list"}) << "\n" << kUsage;
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
