// Golden summaries of every shipped scenario: each line of tests/golden/scenarios.txt is run
// with the real binary and its summary.json compared with tests/golden/NAME_summary.json,
// written by tools/update_golden.sh at the commit that last changed the model on purpose
// (regenerate after a deliberate change and say in the commit why the numbers moved).
//
// What is compared: every key of the golden, at any depth (objects by key, arrays element by
// element, equal lengths). Left out on both sides, as tools/update_golden.sh leaves them out:
// wall-clock and memory (wall_s, peak_rss_bytes), the event count (an implementation detail
// of the fast path), the resolved scenario (checked by other tests), the program's version
// and the scenario's path. A key of the golden missing from the run fails; a key in the run
// that the golden lacks is printed but does not fail (a new output is not a regression;
// regenerate the golden to pin it).
//
// Tolerance: strings, booleans and integers exactly; a number that either side writes as
// floating point within 1e-9 relative (absolute below 1), as the chat-service golden of
// cli_test.cpp. Runs are deterministic: the same seed gives the same numbers for any
// --threads (each scenario was run with 1, 2 and 5 threads and with all cores: identical
// summaries), so no scenario needs a looser tolerance; 1e-9 leaves room only for the last
// digits of another compiler's or optimisation level's rounding.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <set>
#include <vector>

#include "tests/cli/cli_fixture.h"

using nlohmann::json;

namespace {

// One line of tests/golden/scenarios.txt.
struct GoldenCase {
  std::string name;      // the golden is tests/golden/<name>_summary.json; "-" for none
  std::string scenario;  // relative to the repository root
  std::string args;      // more `fleetsim run` arguments (the reductions)
};

void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.scenario; }

const std::string kGoldenDir = kRoot + "/tests/golden";

std::vector<GoldenCase> read_golden_list() {
  std::vector<GoldenCase> cases;
  std::ifstream in(kGoldenDir + "/scenarios.txt");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    GoldenCase c;
    if (!(words >> c.name) || c.name[0] == '#') continue;
    words >> c.scenario;
    for (std::string w; words >> w;) {
      if (!c.args.empty()) c.args += ' ';
      c.args += w;
    }
    cases.push_back(c);
  }
  return cases;
}

std::vector<GoldenCase> golden_cases() {
  std::vector<GoldenCase> cases;
  for (const auto& c : read_golden_list())
    if (c.name != "-") cases.push_back(c);
  return cases;
}

// Fields that say how a run went, not what it computed (the list of tools/update_golden.sh).
const std::set<std::string> kNotMetrics = {"wall_s",   "peak_rss_bytes", "events",
                                           "scenario", "scenario_file",  "fleetsim_version"};

json metrics_only(const json& j) {
  if (j.is_object()) {
    json out = json::object();
    for (const auto& [k, v] : j.items())
      if (!kNotMetrics.count(k)) out[k] = metrics_only(v);
    return out;
  }
  if (j.is_array()) {
    json out = json::array();
    for (const auto& v : j) out.push_back(metrics_only(v));
    return out;
  }
  return j;
}

struct Differences {
  std::vector<std::string> failures;  // golden keys missing or different
  std::vector<std::string> new_keys;  // in the run only
};

// Compares `run` with `golden` below `path` (a JSON pointer-like name for messages).
void compare_with_golden(const json& run, const json& golden, const std::string& path,
                         Differences& d) {
  std::ostringstream why;
  why.precision(17);
  if (golden.is_object() && run.is_object()) {
    for (const auto& [k, v] : golden.items()) {
      const std::string at = path + "/" + k;
      if (run.contains(k))
        compare_with_golden(run[k], v, at, d);
      else
        d.failures.push_back(at + ": in the golden, missing from the run");
    }
    for (const auto& [k, v] : run.items())
      if (!golden.contains(k)) d.new_keys.push_back(path + "/" + k);
    return;
  }
  if (golden.is_array() && run.is_array()) {
    if (golden.size() != run.size()) {
      why << path << ": " << run.size() << " elements, the golden has " << golden.size();
      d.failures.push_back(why.str());
      return;
    }
    for (size_t i = 0; i < golden.size(); ++i) {
      std::string at = path;
      at += '[';
      at += std::to_string(i);
      at += ']';
      compare_with_golden(run[i], golden[i], at, d);
    }
    return;
  }
  if (golden.is_number() && run.is_number() &&
      (golden.is_number_float() || run.is_number_float())) {
    const double g = golden.get<double>(), r = run.get<double>();
    if (!(std::abs(r - g) <= 1e-9 * std::max(1.0, std::abs(g)))) {
      why << path << ": " << r << ", the golden has " << g;
      d.failures.push_back(why.str());
    }
    return;
  }
  if (run != golden) {
    why << path << ": " << run.dump() << ", the golden has " << golden.dump();
    d.failures.push_back(why.str());
  }
}

class Golden : public Cli, public ::testing::WithParamInterface<GoldenCase> {};

TEST_P(Golden, MatchesTheRecordedSummary) {
  const GoldenCase& c = GetParam();
  const std::string o = (dir_ / "out").string();
  // SimGrid tables (network: {model: simgrid}) are built afresh in this test's folder, not
  // read from the user's cache.
  const Result r = run("run " + c.scenario + " --quiet --out " + o + " " + c.args,
                       "FLEETSIM_CACHE_DIR='" + (dir_ / "cache").string() + "'");
  if (r.code != 0 && r.err.find("built without SimGrid") != std::string::npos)
    GTEST_SKIP() << r.err;
  ASSERT_EQ(r.code, 0) << r.err;
  const fs::path golden_file = kGoldenDir + "/" + c.name + "_summary.json";
  ASSERT_TRUE(fs::exists(golden_file))
      << golden_file << " is missing: run tools/update_golden.sh " << c.name;
  const json golden = json::parse(slurp(golden_file));
  const json summary = metrics_only(json::parse(slurp(o + "/summary.json")));

  Differences d;
  compare_with_golden(summary, golden, "", d);
  if (!d.new_keys.empty()) {
    std::string keys;
    for (const auto& k : d.new_keys) {
      keys += ' ';
      keys += k;
    }
    std::cout << "note: " << c.name << ": the run has keys the golden lacks (not a failure; "
              << "tools/update_golden.sh " << c.name << " records them):" << keys << "\n";
    RecordProperty("new_keys", keys);
  }
  if (!d.failures.empty()) {
    std::ostringstream msg;
    const size_t shown = std::min<size_t>(d.failures.size(), 30);
    for (size_t i = 0; i < shown; ++i) msg << "  " << d.failures[i] << "\n";
    if (shown < d.failures.size()) msg << "  ... and " << d.failures.size() - shown << " more\n";
    ADD_FAILURE() << c.scenario << " " << c.args << " differs from " << golden_file << " in "
                  << d.failures.size() << " values:\n"
                  << msg.str() << "After a deliberate model change: tools/update_golden.sh "
                  << c.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Shipped, Golden, ::testing::ValuesIn(golden_cases()),
                         [](const ::testing::TestParamInfo<GoldenCase>& param_info) {
                           return param_info.param.name;
                         });

// The list is complete: every shipped scenario has a line (with a golden, or "-" and its
// reason), every line names a scenario that exists, and every golden file has a line.
TEST(GoldenList, CoversEveryShippedScenario) {
  const auto cases = read_golden_list();
  ASSERT_FALSE(cases.empty()) << kGoldenDir << "/scenarios.txt";
  std::set<std::string> listed, names;
  for (const auto& c : cases) {
    EXPECT_TRUE(listed.insert(c.scenario).second) << c.scenario << " is listed twice";
    EXPECT_TRUE(fs::exists(kRoot + "/" + c.scenario)) << c.scenario;
    if (c.name == "-") continue;
    EXPECT_TRUE(names.insert(c.name).second) << c.name << " is used twice";
    EXPECT_TRUE(fs::exists(kGoldenDir + "/" + c.name + "_summary.json")) << c.name;
  }
  for (const char* dir : {"scenarios", "scenarios/examples", "scenarios/bench"}) {
    for (const auto& e : fs::directory_iterator(kRoot + "/" + dir)) {
      if (e.path().extension() != ".yaml") continue;
      const std::string rel = std::string(dir) + "/" + e.path().filename().string();
      EXPECT_TRUE(listed.count(rel)) << rel << " has no line in tests/golden/scenarios.txt";
    }
  }
  const std::string suffix = "_summary.json";
  for (const auto& e : fs::directory_iterator(kGoldenDir)) {
    const std::string f = e.path().filename().string();
    if (f.size() <= suffix.size() || f.compare(f.size() - suffix.size(), suffix.size(), suffix))
      continue;
    EXPECT_TRUE(names.count(f.substr(0, f.size() - suffix.size())))
        << "tests/golden/" << f << " belongs to no line of tests/golden/scenarios.txt";
  }
}

}  // namespace
