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

/// Both representative iterations.
std::string explain(const scenario::Scenario& sc);

}  // namespace fleetsim::reports
