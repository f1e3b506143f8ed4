// Writes calibration tables in the format of hw_models/calibration/README.md, which
// `fleetsim calibrate import FILE` reads (hw_models/calibration.cpp).
#pragma once

#include <string>
#include <vector>

namespace fleetsim::kernels {

struct CalibProvenance {
  std::string gpu;     ///< catalog id, e.g. "h100-sxm"
  std::string source;  ///< "fleetsim kernels <git sha>"
  std::string driver;  ///< NVIDIA driver version
  std::string cuda;    ///< CUDA runtime / library versions
  std::string date;    ///< YYYY-MM-DD
  std::string notes;   ///< optional
};

/// One row; a field that does not apply to the operator is negative and written empty.
struct CalibRow {
  std::string op;     ///< gemm | attn_prefill | attn_decode
  std::string dtype;  ///< bf16 | fp16 | fp8
  long m = -1, n = -1, k = -1;
  long batch = -1, q_len = -1, kv_len = -1, heads = -1, kv_heads = -1, head_dim = -1;
  int causal = -1;
  double time_us = 0;
  std::string citation;
};

/// The column header row, exactly as the loader expects it.
const char* calibration_columns();
std::string format_calibration_csv(const CalibProvenance& p, const std::vector<CalibRow>& rows);
/// Writes the file; throws std::runtime_error when it cannot.
void write_calibration_csv(const std::string& path, const CalibProvenance& p,
                           const std::vector<CalibRow>& rows);
/// A CSV field, quoted when it holds a comma, quote or leading/trailing space.
std::string csv_field(const std::string& s);

}  // namespace fleetsim::kernels
