#include "kernels/common/numeric.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <random>
#include <set>

namespace fleetsim::kernels {

float fp8_e4m3_to_float(std::uint8_t b) {
  const bool neg = (b & 0x80u) != 0;
  const int exp = (b >> 3) & 0xF;
  const int man = b & 0x7;
  if (exp == 0xF && man == 0x7) return std::numeric_limits<float>::quiet_NaN();
  float v;
  if (exp == 0)
    v = std::ldexp(static_cast<float>(man) / 8.0f, -6);  // subnormal
  else
    v = std::ldexp(1.0f + static_cast<float>(man) / 8.0f, exp - 7);
  return neg ? -v : v;
}

void ErrorStats::add(double out, double ref) {
  ++count;
  if (!std::isfinite(out)) {
    ++nonfinite;
    return;
  }
  const double d = out - ref;
  sq_err_ += d * d;
  sq_ref_ += ref * ref;
  max_abs = std::max(max_abs, std::fabs(d));
}

void ErrorStats::finish() {
  rel_l2 = sq_ref_ > 0 ? std::sqrt(sq_err_ / sq_ref_) : std::sqrt(sq_err_);
  ref_rms = count > 0 ? std::sqrt(sq_ref_ / static_cast<double>(count)) : 0;
}

std::string ErrorStats::str() const {
  char buf[200];
  std::snprintf(buf, sizeof buf, "n=%zu nonfinite=%zu rel_l2=%.3g max_abs=%.3g max/rms=%.3g", count,
                nonfinite, rel_l2, max_abs, max_over_rms());
  return buf;
}

ErrorStats compare(const std::vector<double>& out, const std::vector<double>& ref) {
  ErrorStats e;
  const std::size_t n = std::min(out.size(), ref.size());
  for (std::size_t i = 0; i < n; ++i) e.add(out[i], ref[i]);
  e.finish();
  return e;
}

std::vector<int> sample_indices(int n, int limit, std::uint64_t seed) {
  std::vector<int> out;
  if (n <= 0) return out;
  if (n <= limit) {
    out.resize(static_cast<std::size_t>(n));
    std::iota(out.begin(), out.end(), 0);
    return out;
  }
  std::set<int> s;
  for (int c : {0, 1, n - 1, n - 2, 63, 64, 127, 128, n / 2})
    if (c >= 0 && c < n && static_cast<int>(s.size()) < limit) s.insert(c);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> pick(0, n - 1);
  while (static_cast<int>(s.size()) < limit) s.insert(pick(rng));
  return {s.begin(), s.end()};
}

}  // namespace fleetsim::kernels
