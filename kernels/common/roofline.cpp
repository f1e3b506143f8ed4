#include "kernels/common/roofline.h"

#include <algorithm>

namespace fleetsim::kernels {

Work gemm_work(double m, double n, double k, double dtype_bytes) {
  return {2.0 * m * n * k, (m * k + k * n + m * n) * dtype_bytes};
}

Work prefill_work(double batch, double q_len, double kv_len, double heads, double kv_heads,
                  double head_dim, bool causal, double dtype_bytes) {
  return {4.0 * batch * heads * head_dim * q_len * kv_len * (causal ? 0.5 : 1.0),
          batch * (2.0 * q_len * heads + 2.0 * kv_len * kv_heads) * head_dim * dtype_bytes};
}

Work decode_work(double batch, double kv_len, double heads, double kv_heads, double head_dim,
                 double dtype_bytes) {
  return {4.0 * batch * heads * head_dim * kv_len,
          batch * 2.0 * kv_len * kv_heads * head_dim * dtype_bytes};
}

double roofline_fraction(const Work& w, const Peaks& p, double time_s) {
  if (!(time_s > 0) || !(p.flops_per_s > 0) || !(p.bytes_per_s > 0)) return 0;
  return std::max(w.flops / p.flops_per_s, w.bytes / p.bytes_per_s) / time_s;
}

}  // namespace fleetsim::kernels
