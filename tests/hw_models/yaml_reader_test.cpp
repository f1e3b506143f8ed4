// --set overrides: list items by index (name[i]), and the errors of a bad index.
#include "hw_models/yaml_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "hw_models/error.h"

namespace fleetsim::yaml {
namespace {

struct TempYaml {
  std::filesystem::path path;
  explicit TempYaml(const std::string& text)
      : path(std::filesystem::temp_directory_path() /
             ("fleetsim-yaml-" + std::to_string(::getpid()) + ".yaml")) {
    std::ofstream(path) << text;
  }
  ~TempYaml() { std::filesystem::remove(path); }
};

const char* kDoc = R"(
fleet:
  regions:
    - {name: a, pools: [{name: p0, replicas: 1}, {name: p1, replicas: 2}]}
    - {name: b, pools: []}
)";

std::string error_of(const std::string& file, const std::string& set) {
  try {
    load_file_with_overrides(file, {set});
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(YamlOverrides, ListItemsByIndex) {
  const TempYaml f(kDoc);
  Map root = load_file_with_overrides(
      f.path.string(), {"fleet.regions[0].pools[1].replicas=8", "fleet.regions[1].name=c",
                        "fleet.regions[0].pools[0]={name: q, replicas: 3}"});
  const YAML::Node regions = root.node()["fleet"]["regions"];
  EXPECT_EQ(regions[0]["pools"][1]["replicas"].as<int>(), 8);
  EXPECT_EQ(regions[0]["pools"][1]["name"].as<std::string>(), "p1");  // the rest kept
  EXPECT_EQ(regions[1]["name"].as<std::string>(), "c");
  EXPECT_EQ(regions[0]["pools"][0]["name"].as<std::string>(), "q");  // a whole item
  EXPECT_EQ(regions[0]["pools"][0]["replicas"].as<int>(), 3);
  EXPECT_EQ(regions.size(), 2u);
}

TEST(YamlOverrides, BadIndexesAreErrorsNamingTheOverride) {
  const TempYaml f(kDoc);
  const std::string file = f.path.string();
  EXPECT_NE(
      error_of(file, "fleet.regions[2].name=x").find("'regions' has 2 items; there is no [2]"),
      std::string::npos);
  EXPECT_NE(error_of(file, "fleet.regions[1].pools[0].name=x").find("'pools' has 0 items"),
            std::string::npos);
  EXPECT_NE(error_of(file, "fleet.regions[-1].name=x").find("malformed list index"),
            std::string::npos);
  EXPECT_NE(error_of(file, "fleet.regions[0.name=x").find("malformed list index"),
            std::string::npos);
  EXPECT_NE(error_of(file, "fleet[0].x=1").find("'fleet' is a mapping, not a list"),
            std::string::npos);
  EXPECT_NE(error_of(file, "fleet.regions[0].pools[0].name.x=1").find("not a section"),
            std::string::npos);
  EXPECT_NE(error_of(file, "fleet.regions[0].pools[1].replicas=8").find("no error"),
            std::string::npos);
}

}  // namespace
}  // namespace fleetsim::yaml
