// libFuzzer target: the calibration-table reader (what `fleetsim calibrate import` checks).
#include <cstdint>

#include "hw_models/calibration.h"
#include "hw_models/catalog.h"
#include "tests/fuzz/fuzz_common.h"

using namespace fleetsim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const hw::Catalog catalog = hw::Catalog::load(FLEETSIM_DEFAULT_CATALOG);
  const std::string path = fuzz::write_temp("table.csv", data, size);
  fuzz::expect_input_errors_only([&] {
    hw::CalibrationSet set;
    set.add(hw::load_calibration(path, catalog));
  });
  return 0;
}
