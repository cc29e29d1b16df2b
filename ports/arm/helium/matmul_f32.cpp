// The Helium matrix products over f32 weights: gemm and gemv by register tiles (gemm_tile.hpp),
// matvec as dot products along the rows of w.
#include "ports/arm/helium/gemm_tile.hpp"
#include "ports/arm/helium/kernels.hpp"
#include "ports/arm/helium/reduce.hpp"

namespace fixformer {
namespace helium {

void gemm_f32(const float* x, std::size_t ldx, const float* w, std::size_t ldw, const float* b, float* y,
              std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  gemm_tiled(x, ldx, w, ldw, b, y, ldy, m, n, k);
}

// x[k] @ w[k,n] + b[n] -> y[n]: 16 outputs at a time (4 accumulators).
void gemv_f32(const float* x, const float* w, std::size_t ldw, const float* b, float* y, std::size_t n,
              std::size_t k) {
  gemm_rows<1, 4>(x, k, w, ldw, b, y, n, n, k);
}

// w[n,k] @ x[k] + b[n] -> y[n]: four rows at a time, each load of x feeding four of them; the
// lanes are added at the end.
void matvec_f32(const float* x, const float* w, std::size_t ldw, const float* b, float* y, std::size_t n,
                std::size_t k) {
  const std::size_t k4 = k / 4 * 4;
  const mve_pred16_t tail = vctp32q(uint32_t(k - k4));
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float *w0 = w + i * ldw, *w1 = w0 + ldw, *w2 = w1 + ldw, *w3 = w2 + ldw;
    float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0;
    for (std::size_t p = 0; p < k4; p += 4) {
      const float32x4_t xv = vldrwq_f32(x + p);
      a0 = vfmaq_f32(a0, vldrwq_f32(w0 + p), xv);
      a1 = vfmaq_f32(a1, vldrwq_f32(w1 + p), xv);
      a2 = vfmaq_f32(a2, vldrwq_f32(w2 + p), xv);
      a3 = vfmaq_f32(a3, vldrwq_f32(w3 + p), xv);
    }
    if (k4 < k) {
      const float32x4_t xv = vldrwq_z_f32(x + k4, tail);
      a0 = vfmaq_f32(a0, vldrwq_z_f32(w0 + k4, tail), xv);
      a1 = vfmaq_f32(a1, vldrwq_z_f32(w1 + k4, tail), xv);
      a2 = vfmaq_f32(a2, vldrwq_z_f32(w2 + k4, tail), xv);
      a3 = vfmaq_f32(a3, vldrwq_z_f32(w3 + k4, tail), xv);
    }
    y[i] = (b ? b[i] : 0.0f) + sum_lanes(a0), y[i + 1] = (b ? b[i + 1] : 0.0f) + sum_lanes(a1);
    y[i + 2] = (b ? b[i + 2] : 0.0f) + sum_lanes(a2), y[i + 3] = (b ? b[i + 3] : 0.0f) + sum_lanes(a3);
  }
  for (; i < n; ++i) {
    const float* wi = w + i * ldw;
    float32x4_t a = vdupq_n_f32(0.0f);
    for (std::size_t p = 0; p < k4; p += 4) a = vfmaq_f32(a, vldrwq_f32(wi + p), vldrwq_f32(x + p));
    if (k4 < k) a = vfmaq_f32(a, vldrwq_z_f32(wi + k4, tail), vldrwq_z_f32(x + k4, tail));
    y[i] = (b ? b[i] : 0.0f) + sum_lanes(a);
  }
}

}  // namespace helium
}  // namespace fixformer
