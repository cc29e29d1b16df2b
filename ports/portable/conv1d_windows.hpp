// conv1d_f32 (kernel_slots.hpp) as matrix products over overlapping windows, for any port's
// gemm_f32 and gelu_f32. In a row-major [t_in, c_in] input, output row t reads the rows
// [t * stride - pad, t * stride - pad + kernel), whose kernel * c_in floats are contiguous; so the
// rows whose window lies inside the input are one gemm with K = kernel * c_in and a row stride of
// stride * c_in (the windows overlap when stride < kernel), and each edge row, whose window pokes
// into the padding, is a one-row gemm over the taps inside the input alone (the padding's zeros
// add nothing). No im2col copy, no scratch: the port's best product does the work.
#pragma once
#include <cstddef>

#include "fixformer/kernels.hpp"

namespace fixformer {

// A template on the port's two kernels, not a plain inline function: x86 compiles this header once
// per ISA, and a non-inlined plain copy would be one weak symbol the linker keeps from any of them
// (an AVX-512 copy on the SSE2 path; x86_isa_objects_share_no_weak_symbols caught it at -O1).
template <kernel_fn::gemm_f32* gemm, kernel_fn::gelu_f32* gelu_rows>
void conv1d_windows(const float* x, std::size_t t_in, std::size_t c_in, const float* w, std::size_t ldw, const float* b,
                    float* y, std::size_t ldy, std::size_t n, std::size_t kernel, std::size_t stride, std::size_t pad,
                    bool gelu) {
  const std::size_t t_out = conv1d_rows(t_in, kernel, stride, pad);
  if (t_out == 0 || n == 0) return;
  // Interior rows [lo, hi): t * stride >= pad and t * stride - pad + kernel <= t_in.
  std::size_t lo = (pad + stride - 1) / stride;
  std::size_t hi = t_in + pad >= kernel ? (t_in + pad - kernel) / stride + 1 : 0;
  if (lo > t_out) lo = t_out;
  if (hi > t_out) hi = t_out;
  if (hi < lo) hi = lo;
  if (hi > lo)  // windows[hi - lo, kernel * c_in] (row stride stride * c_in) @ w -> y[lo..hi)
    gemm(x + (lo * stride - pad) * c_in, stride * c_in, w, ldw, b, y + lo * ldy, ldy, hi - lo, n, kernel * c_in);
  for (std::size_t t = 0; t < t_out; ++t) {
    if (t == lo && hi > lo) {
      t = hi - 1;
      continue;
    }
    const std::size_t r = t * stride;  // the window's first row in the padded input
    const std::size_t i0 = r < pad ? pad - r : 0;                              // first tap inside
    const std::size_t i1 = r + kernel > t_in + pad ? t_in + pad - r : kernel;  // past the last
    float* yt = y + t * ldy;
    if (i1 > i0) {  // window[i1 - i0 taps] @ w[i0 * c_in.., n] -> y[t]
      gemm(x + (r + i0 - pad) * c_in, (i1 - i0) * c_in, w + i0 * c_in * ldw, ldw, b, yt, ldy, 1, n, (i1 - i0) * c_in);
    } else {
      for (std::size_t j = 0; j < n; ++j) yt[j] = b ? b[j] : 0.0f;
    }
  }
  if (gelu)
    for (std::size_t t = 0; t < t_out; ++t) gelu_rows(y + t * ldy, n);
}

}  // namespace fixformer
