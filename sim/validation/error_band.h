// Error bands: how far fleetsim's answers were from published measurements for scenarios
// like this one. `fleetsim validate --update-baseline` writes every case's error to
// scenarios/validation/error_bands.json; a run looks up the most specific group its scenario
// falls into (model kind × GPU family × engine, then coarser) that has enough cases, and
// every report prints that group's error next to the answer.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hw_models/catalog.h"

namespace fleetsim::validation {

/// The q-quantile of `v` (0 ≤ q ≤ 1), linear between order statistics (q = 0.5: the
/// median); 0 for an empty `v`.
double quantile(std::vector<double> v, double q);

/// "NVIDIA Hopper", "NVIDIA Blackwell", "AMD", "Apple", ...: the groups errors are kept by.
std::string gpu_family(const hw::GpuSpec& g);

/// One case's error as stored in the bands file.
struct BandCase {
  std::string id, engine, model_kind, gpu_family, category;
  double abs_error = 0;  ///< |predicted − measured| / measured
  double optimism = 0;   ///< > 0: the model promised more than was measured (see optimism())
  bool heldout = false;
};

struct ErrorBand {
  std::string group;           ///< e.g. "MoE on NVIDIA Blackwell, trtllm-1"
  int n = 0;                   ///< cases in the group
  double median_abs = 0;       ///< median |error|
  double p75_abs = 0;          ///< 75th percentile of |error|
  double median_optimism = 0;  ///< median signed error, optimistic positive
  /// Capacity needed if the model is as optimistic as the group's 75th-percentile error:
  /// a model that over-states each GPU's throughput by e needs (1 + e) times the GPUs.
  double capacity_factor_p75() const { return 1.0 + p75_abs; }
};

/// Smallest group size a band is quoted for; coarser groups are tried until one has it.
inline constexpr int kMinBandCases = 4;

/// The band for a scenario of `model_kind` ("dense" | "moe") on `gpu_family` with `engine`,
/// from `cases`: the first group with at least kMinBandCases cases among (kind, family,
/// engine), (kind, family), (kind, engine), (kind), (all). Empty when `cases` is.
std::optional<ErrorBand> error_band(const std::vector<BandCase>& cases,
                                    const std::string& model_kind, const std::string& gpu_family,
                                    const std::string& engine);

/// Reads the bands file; an absent file gives no cases, a malformed one an InputError.
std::vector<BandCase> load_band_cases(const std::string& file);
/// The default bands file (FLEETSIM_VALIDATION_DIR/error_bands.json).
std::string default_bands_file();
/// The default file's cases, read once per process (thread-safe); empty when absent.
const std::vector<BandCase>& default_band_cases();

/// "MoE on NVIDIA Blackwell, trtllm-1: median ±34 % (optimistic by +20 % at the median) over
/// 12 published cases; at the 75th percentile (48 %) the answer needs 1.48x the capacity".
std::string describe(const ErrorBand& b);

}  // namespace fleetsim::validation
