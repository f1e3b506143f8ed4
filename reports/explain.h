// `fleetsim run --explain`: where the time of a representative iteration goes.
#pragma once

#include <string>

#include "hw_models/perf_model.h"
#include "sim/scenario/scenario.h"

namespace fleetsim::reports {

/// Representative iterations of a scenario, from the mean prompt and output lengths of
/// 2,000 requests of its workload: one prefill of a mean prompt (a chunk of at most
/// max_batched_tokens) and one decode of min(max_num_seqs, 32) sequences at the mean
/// context halfway through their output.
struct Representative {
  hw::BatchShape prefill, decode;
  double mean_prompt = 0, mean_output = 0;
  int64_t decode_seqs = 0;
  int64_t prefill_prior = 0;  ///< prompt tokens cached before the representative chunk
};
Representative representative_iterations(const scenario::Scenario& sc);

/// Operator table of one iteration: per-operator FLOPs, bytes, time, bound, and the
/// category totals (gemm, attention, moe, communication, offload, overhead).
std::string explain_table(const scenario::Scenario& sc, const hw::BatchShape& b,
                          const std::string& title);

/// Both representative iterations; with `simulated_decode_batch` (a run's mean decode
/// batch, Summary::mean_decode_batch) above the representative 32, also a decode iteration
/// of that many sequences at the same context.
std::string explain(const scenario::Scenario& sc, double simulated_decode_batch = 0);
/// That decode iteration alone ("" when `simulated_decode_batch` rounds to 32 or fewer).
std::string explain_loaded_decode(const scenario::Scenario& sc, double simulated_decode_batch);

}  // namespace fleetsim::reports
