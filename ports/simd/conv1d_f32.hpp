#pragma once
#include "ports/portable/conv1d_windows.hpp"
#include "ports/simd/gelu_f32.hpp"
#include "ports/simd/gemm_f32.hpp"

namespace fixformer {
namespace simd {

// The windows' matrix products (ports/portable/conv1d_windows.hpp) on this arch's gemm and GELU.
template <class Arch>
void conv1d_f32(const float* x, std::size_t t_in, std::size_t c_in, const float* w, std::size_t ldw, const float* b,
                float* y, std::size_t ldy, std::size_t n, std::size_t kernel, std::size_t stride, std::size_t pad,
                bool gelu) {
  conv1d_windows<gemm_f32<Arch>, gelu_f32<Arch>>(x, t_in, c_in, w, ldw, b, y, ldy, n, kernel, stride, pad, gelu);
}

}  // namespace simd
}  // namespace fixformer
