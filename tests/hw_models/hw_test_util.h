// Helpers shared by the hw_models tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "hw_models/catalog.h"

namespace fleetsim::hw::test_util {

/// The shipped catalog, loaded once.
inline const Catalog& catalog() {
  static const Catalog c = Catalog::load(std::string(FLEETSIM_SOURCE_DIR) + "/hw_models/catalog");
  return c;
}

/// `actual` within `rel` of `expected`, relative.
inline void expect_rel(double actual, double expected, double rel = 1e-12) {
  EXPECT_NEAR(actual, expected, rel * std::abs(expected)) << "expected " << expected;
}

}  // namespace fleetsim::hw::test_util
