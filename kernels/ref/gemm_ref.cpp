#include "kernels/ref/gemm_ref.h"

#include <Eigen/Dense>

namespace fleetsim::kernels::ref {

void gemm(const float* A, const float* W, double* C, int m, int n, int k) {
  using RowF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using RowD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const RowF> a(A, m, k);
  const Eigen::Map<const RowF> w(W, n, k);
  Eigen::Map<RowD> c(C, m, n);
  c.noalias() = a.cast<double>() * w.cast<double>().transpose();
}

double dot(const float* a, const float* w, int k) {
  double s = 0;
  for (int l = 0; l < k; ++l) s += static_cast<double>(a[l]) * static_cast<double>(w[l]);
  return s;
}

}  // namespace fleetsim::kernels::ref
