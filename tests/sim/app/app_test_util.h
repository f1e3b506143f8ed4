// Helpers shared by the sim/app tests: the bundled catalog, loaded once, and scenario files
// written to a temporary folder of their own.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include "hw_models/catalog.h"

namespace fleetsim::app::test {

inline const hw::Catalog& bundled_catalog() {
  static const hw::Catalog catalog = hw::Catalog::load(hw::Catalog::default_dir());
  return catalog;
}

/// Writes `text` to FOLDER/NAME.yaml under the system's temporary folder; returns its path.
inline std::string scenario_file(const std::string& folder, const std::string& name,
                                 const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / folder;
  std::filesystem::create_directories(dir);
  const std::string path = (dir / (name + ".yaml")).string();
  std::ofstream(path) << text;
  return path;
}

}  // namespace fleetsim::app::test
