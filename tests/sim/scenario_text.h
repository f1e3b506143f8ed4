// Scenarios from YAML text, for tests: the shipped catalog, no calibration tables, and
// `file` as the name errors give.
#pragma once

#include <string>

#include "hw_models/error.h"
#include "sim/scenario/scenario.h"

namespace fleetsim::test {

inline const hw::Catalog& catalog() {
  static const hw::Catalog c = hw::Catalog::load(hw::Catalog::default_dir());
  return c;
}

inline scenario::Scenario load_text(const std::string& text, const std::string& file) {
  auto src = std::make_shared<yaml::Source>();
  src->file = file;
  return scenario::load_map(yaml::Map(YAML::Load(text), src, ""), file, {}, std::nullopt,
                            catalog());
}

/// The InputError loading `text` gives, or "no error".
inline std::string load_error(const std::string& text, const std::string& file) {
  try {
    load_text(text, file);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace fleetsim::test
