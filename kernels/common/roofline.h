// FLOP and byte counts of the measured operators, with the formulas of
// hw_models/calibration/README.md, and the achieved fraction of a roofline.
#pragma once

namespace fleetsim::kernels {

struct Work {
  double flops = 0;
  double bytes = 0;
};

/// C[m×n] = A[m×k]·B[k×n]: 2·m·n·k FLOPs; (m·k + k·n + m·n)·dtype_bytes.
Work gemm_work(double m, double n, double k, double dtype_bytes);
/// 4·batch·heads·head_dim·q_len·kv_len FLOPs, halved when causal;
/// batch·(2·q_len·heads + 2·kv_len·kv_heads)·head_dim·dtype_bytes.
Work prefill_work(double batch, double q_len, double kv_len, double heads, double kv_heads,
                  double head_dim, bool causal, double dtype_bytes);
/// 4·batch·heads·head_dim·kv_len FLOPs; batch·2·kv_len·kv_heads·head_dim·dtype_bytes.
Work decode_work(double batch, double kv_len, double heads, double kv_heads, double head_dim,
                 double dtype_bytes);

struct Peaks {
  double flops_per_s = 0;  ///< dense tensor rate of the dtype
  double bytes_per_s = 0;  ///< memory bandwidth
};

/// max(FLOPs / peak_rate, bytes / peak_bandwidth) / time: the calibration loader's fraction.
double roofline_fraction(const Work& w, const Peaks& p, double time_s);

}  // namespace fleetsim::kernels
