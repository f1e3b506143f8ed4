// Service-level objectives as people write them: time to first token (TTFT), time per output
// token (TPOT) and inter-token latency (ITL: the gap between consecutive output tokens of a
// request, stalls included), each either plain or at percentiles.
//
//   slo:
//     ttft: 2s                          # plain: a request meets it when its TTFT ≤ 2 s
//     tpot: {p50: 20ms, p99: 50ms}      # percentiles: p99 of the requests' TPOT ≤ 50 ms, ...
//     itl: {p99: 200ms, p99.9: 1s}      # over every token gap of every request
//
// A percentile key is `p` and a number in (0, 100): p50, p90, p95, p99, p99.9, p75.5.
// A percentile target holds when that quantile of the distribution is within its bound;
// rejected requests count as beyond every TTFT and TPOT bound. A request meets its
// per-request targets (goodput, SLO attainment) when its TTFT and TPOT are within the plain
// bound, or, for a metric given at percentiles, within the bound of the highest percentile
// given (the tail bound). ITL is a property of token gaps, not of one request: ITL targets
// are checked over all gaps together and do not enter goodput.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fleetsim::yaml {
class Map;
}  // namespace fleetsim::yaml

namespace fleetsim::workload {

enum class SloMetric : uint8_t { kTtft, kTpot, kItl };
/// "ttft", "tpot", "itl" (the YAML keys).
const char* slo_key(SloMetric m);
/// "TTFT", "TPOT", "ITL".
const char* slo_label(SloMetric m);

/// One percentile target: quantile `quantile` of `metric` ≤ `bound_s`.
struct SloTarget {
  SloMetric metric = SloMetric::kTtft;
  double quantile = 0.99;  ///< in (0, 1)
  double bound_s = 0;      ///< > 0
  std::string cls;         ///< request class it applies to; "" = all requests
  /// Added by the planner for a plain target, at the plan's target share: reported with
  /// its margin, but what must hold is the share of requests meeting every plain target.
  bool plain = false;
};

/// "p99" for 0.99, "p99.9" for 0.999, "p50" for 0.5 (the shortest decimal that reads back).
std::string percentile_name(double quantile);

/// An `slo:` mapping read: the per-request bounds (plain, or the highest percentile's) and
/// the percentile targets, in the order ttft, tpot, itl and ascending percentile.
struct SloSection {
  std::optional<double> ttft_s, tpot_s;  ///< per-request bounds (goodput)
  bool plain = false;                    ///< ttft or tpot was written plainly
  std::vector<SloTarget> targets;
};

/// Reads `slo` strictly (finish() included). `cls` names the request class ("" for the
/// scenario's slo:); a class takes no itl (InputError with a hint). Errors name the file,
/// line and field (`slo.tpot.p101`).
SloSection read_slo(yaml::Map& slo, const std::string& cls);

}  // namespace fleetsim::workload
