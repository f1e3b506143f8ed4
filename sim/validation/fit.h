// `fleetsim calibrate fit`: fits the few named parameters of a serving-engine profile
// (hw_models/catalog/engines/<id>.yaml, its `fit:` list, at most 4) on the training split of
// the validation suite, and says how well that generalises.
//
// Objective: the mean over the engine's training cases of |ln(predicted / measured)|, a
// symmetric relative error that a 2x over- and a 2x under-prediction cost alike. Held-out
// cases (heldout: true) are never evaluated during the fit; their error is reported after
// it. Two stages: the parameters every model uses (overheads, kernel and compute
// efficiency) on the dense-model cases, then the MoE-only ones (moe_efficiency,
// moe_half_tokens, moe_imbalance) on the MoE cases with the first stage's values in place,
// so a slow MoE kernel is not mistaken for a slow engine. Each stage fits at most
// (its cases / kCasesPerParameter) of its parameters, in the order the engine file lists
// them; an engine without dense cases keeps its priors for the shared parameters.
// Minimised by cyclic coordinate descent (a golden-section search per parameter inside its
// physical bounds, hw::engine_parameter_info) and a Nelder–Mead polish in the normalised
// box: deterministic, and every value it returns lies inside the bounds.
//
// Leave-one-source-out (LOSO): for every source (publication or table) among the training
// cases, the parameters are refitted without that source's cases and those cases are
// predicted; the median of those errors is the figure to expect on a new publication.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hw_models/calibration.h"
#include "hw_models/catalog.h"
#include "sim/validation/validation.h"

namespace fleetsim::validation {

/// Training cases needed per fitted parameter (an engine with fewer cases fits fewer of its
/// `fit:` list, in order, and none below this many).
inline constexpr size_t kCasesPerParameter = 5;

struct FitOptions {
  int sweeps = 3;         ///< coordinate-descent sweeps over the parameters
  int golden_steps = 16;  ///< golden-section steps per parameter and sweep
  int polish_evals = 80;  ///< Nelder–Mead evaluations after the sweeps (0: none)
  bool loso = true;       ///< also run leave-one-source-out
  int threads = 2;
};

struct FitResult {
  std::string engine;
  std::vector<std::string> params;
  std::vector<double> before, after;  ///< parameter values (SI)
  int train_cases = 0, heldout_cases = 0;
  int sources = 0;
  double train_median_before = 0, train_median_after = 0;  ///< median |error|
  double heldout_median_before = 0, heldout_median_after = 0;
  double loso_median = 0;  ///< median |error| of every training case, predicted
                           ///< with the parameters fitted without its source
};

/// The objective over `cases` (mean |ln(pred/meas)|).
double fit_objective(const std::vector<Case>& cases);

/// Fits engine `engine_id` of `catalog` on the training cases among `files` whose engine it
/// is. Throws InputError when the engine has no `fit:` parameters or no training cases.
FitResult fit_engine(const std::vector<std::string>& files, const hw::Catalog& catalog,
                     std::shared_ptr<const hw::CalibrationSet> calibration,
                     const std::string& engine_id, const FitOptions& opt);

/// The `fitted:` block's lines for `r` (indented by two spaces): who, `date`, objective, case
/// counts, training / held-out / leave-one-source-out errors and `before:`, the priors.
std::string fit_provenance(const FitResult& r, const std::string& date);

/// Rewrites the fitted parameters and a `fitted:` provenance block in the engine's file
/// (the values in place; each value's comment starts "fitted (prior X)", or "prior" when the
/// value is its prior, and keeps what it said besides; `fitted:` replaced or appended at the
/// end).
void write_fit(const std::string& engine_file, const FitResult& r, const std::string& provenance);

}  // namespace fleetsim::validation
