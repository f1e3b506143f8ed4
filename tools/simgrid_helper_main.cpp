// fleetsim-simgrid: work that needs a SimGrid engine of its own (SimGrid allows one engine,
// for one fabric, per process), run by fleetsim in a child process.
//   fleetsim-simgrid tables SPEC OUT  builds the collective cost tables for the fabric and
//       groups in SPEC (hw::Fabric::serialize lines plus `group=size,per_domain` lines) and
//       writes them to OUT (TableNetwork::load_or_build).
//   fleetsim-simgrid run  reads a scenario as JSON on stdin ({document, file, overrides,
//       seed, catalog, calibration}: Scenario's fields of the same names), simulates it and
//       writes the result as JSON on stdout (run_in_own_process, sim/simulation.h).
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "hw_models/catalog.h"
#include "hw_models/error.h"
#include "hw_models/yaml_reader.h"
#include "sim/metrics/summary_codec.h"
#include "sim/network/table_network.h"
#include "sim/scenario/scenario.h"
#include "sim/simulation.h"

using namespace fleetsim;

namespace {

int tables(const std::string& spec_file, const std::string& out_file) {
  std::ifstream in(spec_file);
  if (!in) throw std::runtime_error("cannot read " + spec_file);
  std::string line, fabric_text;
  std::vector<hw::CommGroup> groups;
  while (std::getline(in, line)) {
    if (line.rfind("group=", 0) == 0) {
      hw::CommGroup g;
      if (std::sscanf(line.c_str(), "group=%d,%d", &g.size, &g.per_domain) != 2)
        throw std::runtime_error("bad line '" + line + "'");
      groups.push_back(g);
    } else {
      fabric_text += line + "\n";
    }
  }
  const auto fabric = hw::Fabric::parse(fabric_text);
  const std::string csv = net::TableNetwork::compute_csv(fabric, groups);
  std::ofstream out(out_file, std::ios::binary);
  out << csv;
  if (!out) throw std::runtime_error("cannot write " + out_file);
  return 0;
}

int run() {
  const std::string text((std::istreambuf_iterator<char>(std::cin)),
                         std::istreambuf_iterator<char>());
  nlohmann::json out;
  try {
    const nlohmann::json in = nlohmann::json::parse(text);
    const hw::Catalog catalog = hw::Catalog::load(in["catalog"].get<std::string>());
    const std::string cal = in["calibration"].get<std::string>();
    const auto calibration = cal.empty() ? nullptr
                                         : std::make_shared<const hw::CalibrationSet>(
                                               hw::CalibrationSet::load_dir(cal, catalog));
    const std::string file = in["file"].get<std::string>();
    const yaml::Map root(YAML::Load(in["document"].get<std::string>()),
                         std::make_shared<yaml::Source>(yaml::Source{file, {}}), "");
    scenario::Scenario sc =
        scenario::load_map(root, file, in["overrides"].get<std::vector<std::string>>(),
                           in["seed"].get<uint64_t>(), catalog, calibration);
    // The caller's targets: the scenario's, and any the caller added (the planner's margins).
    if (in.contains("slo_targets"))
      sc.slo_targets = metrics::decode_slo_targets(in["slo_targets"].get<std::string>());
    const RunResult r = run_one_pool(sc);
    out["events"] = r.events;
    out["wall_s"] = r.wall_s;
    out["summary"] = nlohmann::json::parse(metrics::encode_summary(r.summary));
  } catch (const InputError& e) {
    out = {{"input_error", e.message()},
           {"hint", e.hint()},
           {"file", e.file()},
           {"line", e.line()},
           {"field", e.field()}};
  } catch (const std::exception& e) {
    out = {{"error", e.what()}};
  }
  std::cout << out.dump();
  std::cout.flush();
  return std::cout ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "tables" && argc == 4) return tables(argv[2], argv[3]);
    if (mode == "run" && argc == 2) return run();
  } catch (const std::exception& e) {
    std::cerr << "fleetsim-simgrid " << mode << ": " << e.what() << "\n";
    return 1;
  }
  std::cerr << "usage: fleetsim-simgrid tables SPEC OUT | fleetsim-simgrid run (a scenario as JSON "
               "on stdin)\n";
  return 2;
}
