// libFuzzer target: the trace readers. The first byte picks the reader (even: Azure CSV,
// odd: Mooncake JSONL); the rest is the file.
#include <cstdint>

#include "sim/workload/trace.h"
#include "tests/fuzz/fuzz_common.h"

using namespace fleetsim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool azure = data[0] % 2 == 0;
  const std::string path =
      fuzz::write_temp(azure ? "trace.csv" : "trace.jsonl", data + 1, size - 1);
  fuzz::expect_input_errors_only([&] {
    const workload::Trace t =
        azure ? workload::load_azure_csv(path) : workload::load_mooncake_jsonl(path);
    (void)t;
  });
  return 0;
}
