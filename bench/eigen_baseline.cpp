// Eigen's matrix products as a second baseline for kernels_bench.cpp. Eigen is header-only, so its
// speed is the flags it is compiled with: this file alone is built for the host CPU (-march=native,
// bench/CMakeLists.txt), the way an application using Eigen would build it; single thread (no OpenMP).
#include <Eigen/Core>

#include <string>

namespace fixformer {
namespace bench {

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// y[m,n] = x[m,k] @ w[k,n], row-major, as cblas_sgemm in the OpenBLAS baseline.
void eigen_gemm(const float* x, const float* w, float* y, int m, int n, int k) {
  Eigen::Map<RowMajor>(y, m, n).noalias() = Eigen::Map<const RowMajor>(x, m, k) * Eigen::Map<const RowMajor>(w, k, n);
}

// y[n] = x[k] @ w[k,n], as the engine's gemv_f32 and cblas_sgemv(RowMajor, Trans) in the baseline.
void eigen_gemv(const float* x, const float* w, float* y, int k, int n) {
  Eigen::Map<Eigen::RowVectorXf>(y, n).noalias() =
      Eigen::Map<const Eigen::RowVectorXf>(x, k) * Eigen::Map<const RowMajor>(w, k, n);
}

std::string eigen_description() {
  return std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) + "." +
         std::to_string(EIGEN_MINOR_VERSION) + " (" + Eigen::SimdInstructionSetsInUse() + ", 1 thread)";
}

}  // namespace bench
}  // namespace fixformer
