// A run's Summary as text and back (exact: doubles round-trip), for simulations that run
// in a child process (run_in_own_process, sim/simulation.h).
#pragma once

#include <string>
#include <vector>

#include "sim/metrics/collector.h"

namespace fleetsim::metrics {

std::string encode_summary(const Summary& s);
/// Throws std::runtime_error on text that encode_summary did not write.
Summary decode_summary(const std::string& text);

/// Percentile targets and their checks as JSON text and back (the same exactness; throws
/// std::runtime_error on text that the encoder did not write).
std::string encode_slo_targets(const std::vector<workload::SloTarget>& t);
std::vector<workload::SloTarget> decode_slo_targets(const std::string& text);
std::string encode_slo_checks(const std::vector<SloCheck>& c);
std::vector<SloCheck> decode_slo_checks(const std::string& text);

}  // namespace fleetsim::metrics
