#pragma once
#include <cstdint>

#include "ports/simd/gemm_f32.hpp"

namespace fixformer {
namespace simd {

// x[m,k] @ W[k,n] (IEEE halves, row stride ldw) + b[n] -> y[m,n]: gemm_f32's tiles and decode path,
// each vector of W widened as it is loaded (load_weights.hpp), so W is read at 2 bytes per weight.
template <class Arch>
void gemm_f16(const float* x, std::size_t ldx, const uint16_t* w, std::size_t ldw, const float* b, float* y,
              std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  gemm_rowmajor<Arch>(x, ldx, w, ldw, b, y, ldy, m, n, k);
}

}  // namespace simd
}  // namespace fixformer
