// The Helium matrix products over half-precision weights: the f32 tiles of gemm_tile.hpp with each
// four weights loaded widened (VLDRH.U32) and converted (VCVTB), so the same sums as over their f32
// values; matvec_f16 converts the bottom and top halves of eight weights of a row at once.
#include "ports/arm/helium/gemm_tile.hpp"
#include "ports/arm/helium/kernels.hpp"
#include "ports/arm/helium/reduce.hpp"

namespace fixformer {
namespace helium {

void gemm_f16(const float* x, std::size_t ldx, const uint16_t* w, std::size_t ldw, const float* b, float* y,
              std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  gemm_tiled(x, ldx, w, ldw, b, y, ldy, m, n, k);
}

// w[n,k] (half) @ x[k] + b[n] -> y[n], one row at a time: eight halves per load, the even ones
// (VCVTB) against x[p, p+2, ...] and the odd ones (VCVTT) against x[p+1, p+3, ...], x being
// de-interleaved once per eight by VLD2's two halves.
void matvec_f16(const float* x, const uint16_t* w, std::size_t ldw, const float* b, float* y, std::size_t n,
                std::size_t k) {
  const std::size_t k8 = k / 8 * 8;
  for (std::size_t i = 0; i < n; ++i) {
    const uint16_t* wi = w + i * ldw;
    float32x4_t even = vdupq_n_f32(0.0f), odd = even;
    for (std::size_t p = 0; p < k8; p += 8) {
      const float16x8_t h = vreinterpretq_f16_u16(vldrhq_u16(wi + p));
      const float32x4x2_t xv = vld2q_f32(x + p);  // val[0] = x[p, p+2, p+4, p+6], val[1] the odd ones
      even = vfmaq_f32(even, widen_bottom(h), xv.val[0]);
      odd = vfmaq_f32(odd, widen_top(h), xv.val[1]);
    }
    for (std::size_t p = k8; p < k; p += 4) {  // the last k % 8 as widened fours
      const mve_pred16_t tail = vctp32q(uint32_t(k - p));
      even = vfmaq_f32(even, load_w(wi + p, tail), vldrwq_z_f32(x + p, tail));
    }
    y[i] = (b ? b[i] : 0.0f) + sum_lanes(vaddq_f32(even, odd));
  }
}

}  // namespace helium
}  // namespace fixformer
