// The scenario schema table: well formed, read by the parsers for every key they read, the
// source of --set errors, of the defaults and of the key reference in scenarios/README.md.
#include "sim/scenario/schema.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "../scenario_text.h"
#include "hw_models/error.h"
#include "sim/plan/planner.h"

namespace fleetsim::scenario {
namespace schema_test {  // named: the tests build as one unit with other files

namespace fs = std::filesystem;
using yaml::Key;

const std::string kRoot = FLEETSIM_SOURCE_DIR;

std::string parent_of(const std::string& path) {
  const size_t dot = path.rfind('.');
  std::string p = dot == std::string::npos ? std::string() : path.substr(0, dot);
  if (p.size() > 2 && p.compare(p.size() - 2, 2, "[]") == 0) p.resize(p.size() - 2);
  return p;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Schema, EveryPathIsDeclaredOnceUnderADeclaredMapping) {
  std::set<std::string> seen;
  for (const Key& k : schema::keys()) {
    EXPECT_TRUE(seen.insert(k.path).second) << k.path << " is declared twice";
    EXPECT_FALSE(k.help.empty()) << k.path;
    const std::string parent = parent_of(k.path);
    if (!parent.empty()) {
      // "fleet.regions[].name" lives in the list fleet.regions, "serving.lora.rank" in the
      // mapping serving.lora.
      const Key* p = schema::find(parent);
      ASSERT_NE(p, nullptr) << k.path << ": parent " << parent << " is not declared";
      const bool list_item = k.path.find(parent + "[].") == 0;
      EXPECT_EQ(p->type, list_item ? Key::Type::kList : Key::Type::kMap) << k.path;
    }
    if (k.type == Key::Type::kChoice) {
      EXPECT_FALSE(k.choices.empty()) << k.path;
      if (!k.fallback.empty()) {
        EXPECT_NE(std::find(k.choices.begin(), k.choices.end(), k.fallback), k.choices.end())
            << k.path << ": default '" << k.fallback << "' is not one of its choices";
      }
    }
    if (!k.same_as.empty()) {
      const Key* target = schema::find(k.same_as);
      ASSERT_NE(target, nullptr) << k.path << " is the same as undeclared " << k.same_as;
      EXPECT_EQ(target->type, Key::Type::kMap) << k.path;
    }
    EXPECT_LE(k.min, k.max) << k.path;
  }
  EXPECT_GT(seen.size(), 200u);
  // A read of an undeclared key is a bug in the parser, not an input error.
  EXPECT_THROW(schema::key("serving.no_such_key"), std::logic_error);
}

TEST(Schema, FindResolvesListItemsAliasesAndOpenMappings) {
  // A list index is generic; a pool's hardware takes the hardware keys; anything under a
  // distribution or a free mapping (wan_rtt's region names) is covered by it.
  ASSERT_NE(schema::find("fleet.regions[3].pools[0].replicas"), nullptr);
  EXPECT_EQ(schema::find("fleet.regions[3].pools[0].replicas")->path,
            "fleet.regions[].pools[].replicas");
  EXPECT_EQ(schema::find("fleet.regions[0].pools[1].hardware.tp")->path, "hardware.tp");
  EXPECT_EQ(schema::find("fleet.regions[0].pools[1].speculative.k")->path, "serving.speculative.k");
  EXPECT_EQ(schema::find("fleet.failures.node.mttr")->path, "fleet.failures.gpu.mttr");
  EXPECT_EQ(schema::find("users.classes[2].slo.ttft")->path, "slo.ttft");
  EXPECT_EQ(schema::find("workload.prompt_tokens.median")->path, "workload.prompt_tokens");
  EXPECT_EQ(schema::find("fleet.regions[0].wan_rtt.eu-west")->path, "fleet.regions[].wan_rtt");
  EXPECT_EQ(schema::find("fleet.regions[0].pools[1].hardware.tpp"), nullptr);
  EXPECT_EQ(schema::find("serving.max_num_seq"), nullptr);
}

TEST(Schema, DeclaredDefaultsParseWithinTheirRanges) {
  // Each fixed default, written into its mapping as a scenario would write it, reads back
  // through the key's own accessor (in range, right type, right unit) and equals what the
  // accessor returns for an empty mapping.
  auto src = std::make_shared<yaml::Source>(yaml::Source{"defaults.yaml", {}});
  int checked = 0;
  for (const Key& k : schema::keys()) {
    if (k.fallback.empty()) continue;
    YAML::Node doc;
    doc[k.name()] = k.fallback;
    yaml::Map written(doc, src, parent_of(k.path));
    yaml::Map empty(YAML::Node(YAML::NodeType::Map), src, parent_of(k.path));
    SCOPED_TRACE(k.path);
    switch (k.type) {
      case Key::Type::kInt: EXPECT_EQ(written.integer(k), empty.integer_or(k)); break;
      case Key::Type::kNumber: EXPECT_EQ(written.number(k), empty.number_or(k)); break;
      case Key::Type::kQuantity: EXPECT_EQ(written.quantity(k), empty.quantity_or(k)); break;
      case Key::Type::kChoice: EXPECT_EQ(written.choice(k), empty.choice_or(k)); break;
      case Key::Type::kBool: EXPECT_EQ(written.boolean_or(k, false), empty.boolean_or(k)); break;
      case Key::Type::kString: EXPECT_EQ(written.str(k), empty.str_or(k)); break;
      default: continue;  // distributions: parsed by the distribution reader
    }
    ++checked;
  }
  EXPECT_GT(checked, 80);
}

TEST(Schema, AnEmptySectionGivesTheDeclaredDefaults) {
  // The defaults the parsers took from literals before they read through the table:
  // replicas 1, block_tokens 16, gpu_memory_utilization 0.9, runtime_reserve 1 GiB =
  // 2^30 B, max_queue 0, seed 1, tp = pp = dp_attention = 1, 32 nodes per leaf.
  const Scenario sc = test::load_text(R"(
model: llama-3.1-8b
hardware: {gpu: h100-sxm}
serving: {}
network: {}
workload: {arrival: {rate: 1/s}, requests: 10, prompt_tokens: 100, output_tokens: 10}
)",
                                      "empty.yaml");
  EXPECT_EQ(sc.replicas, 1);
  EXPECT_EQ(sc.vllm.block_tokens, 16);
  EXPECT_EQ(sc.gpu_memory_utilization, 0.9);
  EXPECT_EQ(sc.runtime_reserve_bytes, 1073741824.0);
  EXPECT_EQ(sc.vllm.max_queue, 0);
  EXPECT_EQ(sc.vllm.forced_token_share, 0.0);
  EXPECT_TRUE(sc.vllm.fast_forward);
  EXPECT_FALSE(sc.vllm.prefix_caching);
  EXPECT_EQ(sc.router, "round-robin");
  EXPECT_EQ(sc.policy, "vllm");
  EXPECT_EQ(sc.seed, 1u);
  EXPECT_EQ(sc.par.tp, 1);
  EXPECT_EQ(sc.par.pp, 1);
  EXPECT_EQ(sc.par.dp_attention, 1);
  EXPECT_EQ(sc.network_model, "analytic");
  EXPECT_EQ(sc.fabric.nodes_per_leaf, 32);
  EXPECT_EQ(sc.engine.id, schema::key("serving.engine").fallback);
  // And they are the table's.
  EXPECT_EQ(std::to_string(sc.replicas), schema::key("serving.replicas").fallback);
  EXPECT_EQ(std::to_string(sc.vllm.block_tokens), schema::key("serving.block_tokens").fallback);
  EXPECT_EQ(schema::key("serving.runtime_reserve").fallback, "1GiB");
  EXPECT_EQ(schema::key("serving.gpu_memory_utilization").fallback, "0.9");
  EXPECT_EQ(std::to_string(sc.fabric.nodes_per_leaf),
            schema::key("network.nodes_per_leaf").fallback);
}

TEST(Schema, AFleetsEmptySectionsGiveTheDeclaredDefaults) {
  // Absent sections keep fleet::FleetSpec's own defaults, present but empty ones take the
  // table's: both must agree. pue 1.2, 2.5 m² per rack, spill at load 1, report every
  // 1 h = 3600 s; autoscaling every 60 s, cooldown 10 min = 600 s, start-up 60 s, 2 GB/s =
  // 2e9 B/s; retry after 1 s; margin 0.3, 4 years.
  const std::string fleet = R"(
model: llama-3.1-8b
hardware: {gpu: h100-sxm}
serving: {}
users: {weekly_active: 1000, daily_active_fraction: 0.5, sessions_per_day: 1,
        turns_per_session: 1, think_time: 10s, prompt_tokens: 100, output_tokens: 10}
fleet:
  regions: [{name: r, utc_offset: 0h, users: 1, pools: [{name: p, replicas: 1}]}]
)";
  const fleet::FleetSpec absent = *test::load_text(fleet, "fleet.yaml").fleet;
  const std::string with_empty = fleet + R"(  routing: {}
  datacenter: {}
  autoscaling: {}
  failures: {gpu: {mtbf: 1000h, mttr: 1h}}
cost: {}
)";
  const fleet::FleetSpec empty = *test::load_text(with_empty, "fleet.yaml").fleet;
  for (const fleet::FleetSpec* s : {&absent, &empty}) {
    EXPECT_EQ(s->pue, 1.2);
    EXPECT_EQ(s->floor_m2_per_rack, 2.5);
    EXPECT_EQ(s->spill_load, 1.0);
    EXPECT_EQ(s->report_interval_s, 3600.0);
    EXPECT_EQ(s->autoscaling.interval_s, 60.0);
    EXPECT_EQ(s->autoscaling.cooldown_s, 600.0);
    EXPECT_EQ(s->autoscaling.startup_s, 60.0);
    EXPECT_EQ(s->autoscaling.storage_bytes_per_s, 2e9);
    EXPECT_EQ(s->cost.margin, 0.3);
    EXPECT_EQ(s->cost.depreciation_years, 4.0);
  }
  EXPECT_EQ(empty.failures.retry_delay_s, 1.0);
  EXPECT_EQ(absent.failures.retry_delay_s, 1.0);
}

TEST(Schema, EveryKeyAShippedScenarioReadsIsDeclared) {
  // Each shipped scenario is loaded with a read log: every field any parser asks of the
  // file must be covered by a declaration, and a read through a declaration must go
  // through the one that covers it (a pool's speculative.k through serving.speculative.k).
  int files = 0;
  for (const char* dir : {"scenarios", "scenarios/examples", "scenarios/bench"}) {
    for (const auto& e : fs::directory_iterator(kRoot + "/" + dir)) {
      if (e.path().extension() != ".yaml") continue;
      const std::string file = e.path().string();
      SCOPED_TRACE(file);
      yaml::ReadLog log;
      (void)load(file, {}, std::nullopt, test::catalog());
      if (file.find("plan-") != std::string::npos)
        (void)plan::Planner(file, {}, std::nullopt, test::catalog(), nullptr);
      int reads = 0;
      for (const auto& [f, path] : log.reads()) {
        if (f != file) continue;
        ++reads;
        EXPECT_NE(schema::find(path), nullptr) << path << " is read but not declared";
      }
      for (const auto& [path, declared] : log.declared_reads()) {
        const Key* k = schema::find(path);
        ASSERT_NE(k, nullptr) << path;
        EXPECT_EQ(k->path, declared) << path << " is read through the wrong declaration";
      }
      EXPECT_GT(reads, 5);
      ++files;
    }
  }
  EXPECT_GE(files, 20);
}

TEST(Schema, SetOfAnUnknownKeyNamesTheNearestDeclaredOne) {
  const std::string e = error_of([] { schema::check_override("serving.max_num_seq"); });
  EXPECT_NE(e.find("--set serving.max_num_seq"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown key 'serving.max_num_seq' (did you mean 'serving.max_num_seqs'?)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("serving.max_num_seqs: integer, 1 … 65536, default the engine's"),
            std::string::npos)
      << e;
  // Nothing close: the hint names the section's listing.
  const std::string far = error_of([] { schema::check_override("serving.zzzzzzzzzzzz"); });
  EXPECT_NE(far.find("fleetsim list keys serving"), std::string::npos) << far;
  // Declared paths, list items, aliases and distribution parameters pass.
  for (const char* ok : {"serving.max_num_seqs", "fleet.regions[0].pools[1].replicas",
                         "fleet.regions[0].pools[0].hardware.gpu", "workload.prompt_tokens.median",
                         "workload.trace"})
    EXPECT_NO_THROW(schema::check_override(ok)) << ok;
  // Through scenario::load, before any section is read.
  const std::string file = kRoot + "/scenarios/chat-service.yaml";
  const std::string l = error_of(
      [&] { (void)load(file, {"serving.prefil_caching=true"}, std::nullopt, test::catalog()); });
  EXPECT_NE(l.find("did you mean 'serving.prefix_caching'"), std::string::npos) << l;
}

TEST(Schema, SetOutOfRangeStatesTheDeclaredTypeAndRange) {
  const std::string file = kRoot + "/scenarios/chat-service.yaml";
  auto with = [&](const std::string& o) {
    return error_of([&] { (void)load(file, {o}, std::nullopt, test::catalog()); });
  };
  const std::string e = with("serving.max_num_seqs=0");
  EXPECT_NE(e.find("--set serving.max_num_seqs: 'serving.max_num_seqs': must be in [1, 65536], "
                   "got 0 (hint: serving.max_num_seqs: integer, 1 … 65536"),
            std::string::npos)
      << e;
  // A number past its declared maximum.
  const std::string t = with("serving.gpu_memory_utilization=1.5");
  EXPECT_NE(t.find("must be in [0.05, 1], got 1.5 (hint: serving.gpu_memory_utilization: "
                   "number, 0.05 … 1, default 0.9"),
            std::string::npos)
      << t;
  const std::string c = with("serving.preemption=swp");
  EXPECT_NE(c.find("did you mean 'swap'"), std::string::npos) << c;
}

TEST(Schema, TextListsOneSection) {
  const std::string t = schema::text("serving.lora");
  // The section and its two keys, one line each.
  EXPECT_EQ(std::count(t.begin(), t.end(), '\n'), 3) << t;
  EXPECT_NE(t.find("serving.lora.rank"), std::string::npos) << t;
  EXPECT_NE(t.find("integer 1 … 1024, default 16: adapter rank"), std::string::npos) << t;
  EXPECT_NE(schema::text("fleet.regions").find("fleet.regions[].pools[].role"), std::string::npos);
  const std::string e = error_of([] { (void)schema::text("servng"); });
  EXPECT_NE(e.find("did you mean 'serving'"), std::string::npos) << e;
}

TEST(Schema, TheDocsEmbedTheGeneratedReference) {
  std::ifstream in(kRoot + "/scenarios/README.md");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  const size_t begin = doc.find(schema::kBeginMarker);
  const size_t end = doc.find(schema::kEndMarker);
  ASSERT_NE(begin, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  const size_t from = begin + std::string(schema::kBeginMarker).size() + 1;  // after its newline
  EXPECT_TRUE(doc.substr(from, end - from) == schema::markdown())
      << "scenarios/README.md's key reference differs from the schema table: replace the text "
         "between the markers with the output of `fleetsim list keys --markdown`";
}

}  // namespace schema_test
}  // namespace fleetsim::scenario
