// A run's Summary as text and back (exact: doubles round-trip), for simulations that run
// in a child process (run_in_own_process, sim/simulation.h).
#pragma once

#include <string>

#include "sim/metrics/collector.h"

namespace fleetsim::metrics {

std::string encode_summary(const Summary& s);
/// Throws std::runtime_error on text that encode_summary did not write.
Summary decode_summary(const std::string& text);

}  // namespace fleetsim::metrics
