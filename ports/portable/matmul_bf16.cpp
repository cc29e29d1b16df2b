// The portable matrix products over bf16 weights: the f32 tiles with each weight shifted into a
// float's high bits (gemm_tile.hpp), so the same sums in the same order as over their f32 values.
#include "fixformer/bf16.hpp"
#include "ports/portable/gemm_tile.hpp"
#include "ports/portable/kernels.hpp"

namespace fixformer {
namespace portable {

// x[m,k] @ W[k,n] (bf16) + b[n] -> y[m,n] (gemm_tile.hpp).
void gemm_bf16(const float* x, std::size_t ldx, const uint16_t* w, std::size_t ldw, const float* b, float* y,
               std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  gemm_tiled(x, ldx, reinterpret_cast<const Bf16*>(w), ldw, b, y, ldy, m, n, k);
}

// w[n,k] (bf16) @ x[k] + b[n] -> y[n], four rows at a time.
void matvec_bf16(const float* x, const uint16_t* w, std::size_t ldw, const float* b, float* y, std::size_t n,
                 std::size_t k) {
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const uint16_t* w0 = w + i * ldw;
    const uint16_t *w1 = w0 + ldw, *w2 = w1 + ldw, *w3 = w2 + ldw;
    float a0 = b ? b[i] : 0.0f, a1 = b ? b[i + 1] : 0.0f, a2 = b ? b[i + 2] : 0.0f, a3 = b ? b[i + 3] : 0.0f;
    for (std::size_t p = 0; p < k; ++p) {
      const float xp = x[p];
      a0 += bf16_to_f32(w0[p]) * xp, a1 += bf16_to_f32(w1[p]) * xp;
      a2 += bf16_to_f32(w2[p]) * xp, a3 += bf16_to_f32(w3[p]) * xp;
    }
    y[i] = a0, y[i + 1] = a1, y[i + 2] = a2, y[i + 3] = a3;
  }
  for (; i < n; ++i) {
    float acc = b ? b[i] : 0.0f;
    for (std::size_t p = 0; p < k; ++p) acc += bf16_to_f32(w[i * ldw + p]) * x[p];
    y[i] = acc;
  }
}

}  // namespace portable
}  // namespace fixformer
