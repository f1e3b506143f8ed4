// Calibration tables: measured kernel times over shapes (format in
// hw_models/calibration/README.md).
//
// A table row gives an operator's shape and measured time; from the shape the loader
// computes the FLOPs and bytes (same formulas as the performance model) and the row's
// achieved fraction of the roofline,
//     fraction = max(FLOPs / peak_rate, bytes / peak_bandwidth) / time,
// with the catalog's datasheet peaks for the table's GPU. The performance model then costs
// an operator of that kind as roofline_time(FLOPs, bytes at peak) / fraction, where the
// fraction is interpolated from the table's rows in the operator's own regime: among the
// compute-bound rows (FLOPs/peak ≥ bytes/bandwidth) linearly in log10(FLOPs) for a
// compute-bound operator, among the memory-bound rows in log10(bytes) for a memory-bound
// one, clamped at the ends. A small square GEMM that is slow from launch overhead thus never
// stands in for a skinny weight-streaming decode GEMM. A compute-bound operator far from the
// ridge (FLOPs time ≥ kFarFromRidge × bytes time) uses only the rows far from it, when there
// are any: a kernel on the ridge is slowed by its memory traffic too. With no row in the
// operator's regime the model keeps the catalog efficiency.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "hw_models/catalog.h"

namespace fleetsim::hw {

enum class CalibOp { kGemm, kAttnPrefill, kAttnDecode };
const char* calib_op_name(CalibOp op);

/// A compute-bound shape whose FLOPs time is at least this many times its bytes time is
/// "far from the ridge" of the roofline (see CalibrationSet::rows_far).
inline constexpr double kFarFromRidge = 2.0;

struct CalibrationRow {
  CalibOp op = CalibOp::kGemm;
  std::string dtype;  ///< "bf16" (fp16 rows are stored as bf16), "fp8" or "fp4"
  double flops = 0, bytes = 0, time_s = 0;
  double fraction = 0;         ///< achieved fraction of the roofline at datasheet peaks
  bool compute_bound = false;  ///< FLOPs / peak >= bytes / bandwidth
  double ridge_ratio = 0;      ///< (FLOPs / peak) / (bytes / bandwidth): 1 on the ridge
  double work = 0;             ///< FLOPs when compute-bound, bytes when memory-bound
  double log_work = 0;         ///< log10(work), precomputed for interpolation
  std::string citation;
  int line = 0;  ///< line in the file
};

/// One file: provenance plus rows.
struct CalibrationTable {
  std::string file;
  std::string gpu;  ///< catalog id
  std::string source, driver, cuda, date, notes;
  std::vector<CalibrationRow> rows;
};

/// Reads and checks one table. Every problem is an InputError naming the file, line and
/// column: a missing header key, an unknown GPU, a column missing or out of order, a
/// non-positive time, a row faster than the datasheet roofline (fraction > 1).
CalibrationTable load_calibration(const std::string& path, const Catalog& catalog);

/// Every table for the GPUs of a catalog, indexed by (gpu, op, dtype), rows sorted by FLOPs.
class CalibrationSet {
 public:
  /// Loads every *.csv in `dir`; a folder that is not there or holds no table is an
  /// InputError (a typo would otherwise run uncalibrated without a word).
  static CalibrationSet load_dir(const std::string& dir, const Catalog& catalog);
  /// The shipped tables: <source>/hw_models/calibration, or $FLEETSIM_CALIBRATION.
  static std::string default_dir();

  void add(const CalibrationTable& t);
  /// Rows for (gpu, op, dtype) in one regime, sorted by work; nullptr when none.
  const std::vector<CalibrationRow>* rows(const std::string& gpu, CalibOp op,
                                          const std::string& dtype, bool compute_bound) const;
  /// The compute-bound rows for (gpu, op, dtype) that are far from the ridge (ridge_ratio >=
  /// kFarFromRidge), sorted by FLOPs; nullptr when none.
  const std::vector<CalibrationRow>* rows_far(const std::string& gpu, CalibOp op,
                                              const std::string& dtype) const;
  /// Interpolated fraction at `work` (log-linear, clamped). Precondition: rows non-empty.
  static double fraction_at(const std::vector<CalibrationRow>& rows, double work);
  /// The fraction of the largest row (the steady state of a long kernel).
  static double fraction_large(const std::vector<CalibrationRow>& rows);

  const std::vector<CalibrationTable>& tables() const { return tables_; }
  /// The folder load_dir read ("" for a set built otherwise).
  const std::string& dir() const { return dir_; }
  bool empty() const { return tables_.empty(); }

 private:
  std::string dir_;
  std::vector<CalibrationTable> tables_;
  std::map<std::string, std::vector<CalibrationRow>> index_;  // "gpu|op|dtype|regime"
};

}  // namespace fleetsim::hw
