// libFuzzer target: the checkpoint reader of plan and sweep (`--resume`), with the checks
// both commands apply to each result. The first byte picks the command (even: plan, odd:
// sweep); the rest is the file, whose first line must be "fuzz" (the search identity).
#include <cstdint>
#include <string>

#include "sim/app/sweep.h"
#include "sim/dist/dist.h"
#include "sim/plan/planner.h"
#include "tests/fuzz/fuzz_common.h"

using namespace fleetsim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool plan = data[0] % 2 == 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  fuzz::expect_input_errors_only([&] {
    const auto done =
        dist::Checkpoint::parse(text, "checkpoint.txt", "fuzz", 64,
                                plan ? dist::Checkpoint::ResultCheck([](const std::string& r) {
                                  plan::Candidate c;
                                  plan::Planner::decode_search(c, r);
                                })
                                     : dist::Checkpoint::ResultCheck(app::check_sweep_result));
    // What the commands do next with the results that passed.
    for (const auto& [i, r] : done) {
      if (plan) {
        plan::Candidate c;
        plan::Planner::decode_search(c, r);
      } else {
        app::check_sweep_result(r);
      }
    }
  });
  return 0;
}
