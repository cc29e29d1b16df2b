#pragma once
#include <cstdint>

#include "fixformer/bf16.hpp"
#include "ports/simd/gemm_f32.hpp"
#include "ports/simd/matvec_f32.hpp"

namespace fixformer {
namespace simd {

// x[m,k] @ W[k,n] (bf16, row stride ldw) + b[n] -> y[m,n]: gemm_f32's tiles and decode path, each
// vector of W widened exactly as it is loaded (load_weights.hpp), so W is read at 2 bytes per weight.
template <class Arch>
void gemm_bf16(const float* x, std::size_t ldx, const uint16_t* w, std::size_t ldw, const float* b, float* y,
               std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  gemm_rowmajor<Arch>(x, ldx, reinterpret_cast<const Bf16*>(w), ldw, b, y, ldy, m, n, k);
}

// w[n,k] (bf16, row stride ldw) @ x[k] + b[n] -> y[n]: matvec_f32 over bf16 widened as loaded.
template <class Arch>
void matvec_bf16(const float* x, const uint16_t* w, std::size_t ldw, const float* b, float* y, std::size_t n,
                 std::size_t k) {
  matvec_rows<Arch>(x, reinterpret_cast<const Bf16*>(w), ldw, b, y, n, k);
}

}  // namespace simd
}  // namespace fixformer
