// Host-side number formats and error metrics shared by the CPU references, the device
// validation and the tests.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace fleetsim::kernels {

/// bf16 bits -> float (exact).
inline float bf16_to_float(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// float -> bf16 bits, round to nearest even (as __float2bfloat16_rn); NaN stays NaN.
inline std::uint16_t float_to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

/// True when a bf16 bit pattern is Inf or NaN.
inline bool bf16_nonfinite(std::uint16_t b) { return (b & 0x7F80u) == 0x7F80u; }

/// FP8 e4m3 (OCP "E4M3FN": bias 7, no infinities, S.1111.111 is NaN) -> float (exact).
float fp8_e4m3_to_float(std::uint8_t b);

/// How far an output is from its reference, over the compared elements.
struct ErrorStats {
  std::size_t count = 0;      ///< elements compared
  std::size_t nonfinite = 0;  ///< outputs that are Inf/NaN (poison left unwritten included)
  double rel_l2 = 0;          ///< ||out - ref|| / ||ref||
  double max_abs = 0;         ///< max |out - ref|
  double ref_rms = 0;         ///< sqrt(mean ref^2)
  /// max |out - ref| / ref_rms: catches one wrong tile that the L2 norm would average away.
  double max_over_rms() const { return ref_rms > 0 ? max_abs / ref_rms : max_abs; }
  void add(double out, double ref);  ///< accumulate one pair (call finish() after)
  void finish();
  std::string str() const;
  double sq_err_ = 0, sq_ref_ = 0;
};

ErrorStats compare(const std::vector<double>& out, const std::vector<double>& ref);

/// Indices of [0, n) to check: all of them when n <= limit; else `limit` sorted distinct
/// indices: 0, 1, n-2, n-1, the 64/128 tile boundaries, n/2, and random ones (seeded).
std::vector<int> sample_indices(int n, int limit, std::uint64_t seed);

/// Tolerances per precision (kernels/README.md): bf16 operands with fp32 accumulation and a
/// bf16 output land between 1e-3 and 1e-2 in relative L2; NaN never passes.
struct Tolerance {
  double rel_l2 = 1e-2;
  double max_over_rms = 6e-2;
  bool pass(const ErrorStats& e) const {
    return e.count > 0 && e.nonfinite == 0 && e.rel_l2 <= rel_l2 &&
           e.max_over_rms() <= max_over_rms;
  }
};

}  // namespace fleetsim::kernels
