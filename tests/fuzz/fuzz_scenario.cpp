// libFuzzer target: the scenario loader with --set overrides. Input: the YAML text, then
// optionally a NUL byte and NUL-separated "key.path=value" overrides.
#include <cstdint>
#include <string>
#include <vector>

#include "hw_models/catalog.h"
#include "sim/scenario/scenario.h"
#include "tests/fuzz/fuzz_common.h"

using namespace fleetsim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const hw::Catalog catalog = hw::Catalog::load(FLEETSIM_DEFAULT_CATALOG);
  const std::string in(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = in.find('\0');
  const std::string yaml = in.substr(0, nul);
  std::vector<std::string> overrides;
  for (std::size_t at = nul; at != std::string::npos && at < in.size();) {
    const std::size_t next = in.find('\0', at + 1);
    overrides.push_back(in.substr(at + 1, next == std::string::npos ? next : next - at - 1));
    at = next;
  }
  const std::string path =
      fuzz::write_temp("scenario.yaml", reinterpret_cast<const uint8_t*>(yaml.data()), yaml.size());
  fuzz::expect_input_errors_only(
      [&] { (void)scenario::load(path, overrides, std::nullopt, catalog); });
  return 0;
}
