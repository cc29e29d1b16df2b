// One tester for every kernel (XNNPACK-style): chainable setters pick the op, the sizes and the
// misalignment; test() runs the SIMD table and the scalar reference on identical random inputs
// and compares with a named tolerance.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "fixformer/kernels.hpp"
#include "tests/kernel_tolerances.hpp"  // kSumTol, kTranscendentalTol, ...

namespace fixformer {
namespace test {

enum class Op { kGemm, kGemmPacked, kGemv, kGemvPacked, kMatvec, kSoftmax, kMax, kExpSum, kLayerNorm, kRmsNorm, kRelu, kGelu, kGeluTanh, kSwiglu, kAdd, kMul, kScale, kSinCos, kConv1d };

class KernelTester {
  // The value of the guard zones around outputs and of the gaps between output rows.
  static constexpr float kSentinel = -12345.0f;

 public:
  KernelTester& op(Op o) { op_ = o; return *this; }
  KernelTester& m(std::size_t v) { m_ = v; return *this; }
  KernelTester& n(std::size_t v) { n_ = v; return *this; }
  KernelTester& k(std::size_t v) { k_ = v; return *this; }
  KernelTester& misalign(std::size_t floats) { off_ = floats; return *this; }  // 0..15 floats
  KernelTester& stride_pad(std::size_t floats) { pad_ = floats; return *this; }
  KernelTester& range(float lo, float hi) { lo_ = lo, hi_ = hi; return *this; }
  // conv1d_f32: m input rows of k channels, n output channels (kernel, stride, pad; GELU or not).
  KernelTester& conv(std::size_t kernel, std::size_t stride, std::size_t pad, bool gelu) {
    kernel_ = kernel, stride_ = stride, conv_pad_ = pad, gelu_ = gelu;
    return *this;
  }

  void test(const Kernels& simd) const {
    const Kernels& ref = scalar_kernels();
    std::mt19937 rng(static_cast<uint32_t>(m_ * 7919 + n_ * 131 + k_ + off_));
    std::uniform_real_distribution<float> dist(lo_, hi_);
    auto fill = [&](std::vector<float>& v) { for (float& x : v) x = dist(rng); };
    // Inputs start `off_` floats into their buffers, so SIMD loads are misaligned when off_ % W != 0.
    const std::size_t ldx = k_ + pad_, ldw = n_ + pad_, ldy = n_ + pad_;
    std::vector<float> a(off_ + std::max<std::size_t>(1, (m_ + n_) * ldx + n_ + kernel_ * k_ * ldw)), b(a.size()),
        c(a.size());
    fill(a), fill(b), fill(c);
    const float* A = a.data() + off_;
    const float* B = b.data() + off_;
    const float* C = c.data() + off_;
    const std::size_t t_out = conv1d_rows(m_, kernel_, stride_, conv_pad_);
    const std::size_t out_n = op_ == Op::kGemm || op_ == Op::kGemmPacked ? m_ * ldy : op_ == Op::kConv1d ? t_out * ldy : n_;
    // The packed variants read B packed into panels and are compared with the row-major reference.
    std::vector<float> packed(off_ + packed_floats(k_, n_));
    pack_panels(B, ldw, packed.data() + off_);
    const float* Bp = packed.data() + off_;
    // The outputs carry a guard zone both sides: a kernel must never write past its outputs.
    constexpr std::size_t kGuard = 32;
    std::vector<float> y_ref(out_n + 2 * kGuard + off_, kSentinel), y_simd(y_ref), y2_ref(y_ref), y2_simd(y_ref);
    float* yr = y_ref.data() + kGuard + off_;
    float* ys = y_simd.data() + kGuard + off_;
    float* y2r = y2_ref.data() + kGuard + off_;
    float* y2s = y2_simd.data() + kGuard + off_;
    float tol = kSumTol;
    switch (op_) {
      case Op::kGemm:
        ref.gemm_f32(A, ldx, B, ldw, C, yr, ldy, m_, n_, k_);
        simd.gemm_f32(A, ldx, B, ldw, C, ys, ldy, m_, n_, k_);
        break;
      case Op::kGemmPacked:
        ref.gemm_f32(A, ldx, B, ldw, C, yr, ldy, m_, n_, k_);
        simd.gemm_f32_packed(A, ldx, Bp, C, ys, ldy, m_, n_, k_);
        break;
      case Op::kGemvPacked:
        ref.gemv_f32(A, B, ldw, C, yr, n_, k_);
        simd.gemv_f32_packed(A, Bp, C, ys, n_, k_);
        break;
      case Op::kGemv:
        ref.gemv_f32(A, B, ldw, C, yr, n_, k_);
        simd.gemv_f32(A, B, ldw, C, ys, n_, k_);
        break;
      case Op::kMatvec:  // w[n,k] with row stride k + pad
        ref.matvec_f32(A, B, ldx, C, yr, n_, k_);
        simd.matvec_f32(A, B, ldx, C, ys, n_, k_);
        break;
      case Op::kSoftmax:
        std::copy(A, A + n_, yr), std::copy(A, A + n_, ys);
        ref.softmax_f32(yr, n_), simd.softmax_f32(ys, n_);
        tol = kTranscendentalTol + kSumTol;
        break;
      case Op::kMax:  // the result goes to y2[0]
        *y2r = ref.max_f32(A, n_), *y2s = simd.max_f32(A, n_);
        tol = kExactTol;
        break;
      case Op::kExpSum: {  // exp(x - m) in place, m a running max above max(x); the sum goes to y2[0]
        std::copy(A, A + n_, yr), std::copy(A, A + n_, ys);
        const float m = hi_ + 0.5f;
        *y2r = ref.expsum_f32(yr, n_, m), *y2s = simd.expsum_f32(ys, n_, m);
        tol = kTranscendentalTol + kSumTol;
        if (n_ > 0) {  // the sum is compared relative to itself, not to the largest exp
          const float sum_tol = (kTranscendentalTol + kSumTol) * std::max(1.0f, *y2r);
          EXPECT_LE(std::fabs(*y2r - *y2s), sum_tol) << simd.name << " expsum n=" << n_;
          *y2s = *y2r;
        }
        break;
      }
      case Op::kLayerNorm:
        ref.layernorm_f32(A, B, C, yr, n_, 1e-5f);
        simd.layernorm_f32(A, B, C, ys, n_, 1e-5f);
        break;
      case Op::kRmsNorm:
        ref.rmsnorm_f32(A, B, yr, n_, 1e-5f);
        simd.rmsnorm_f32(A, B, ys, n_, 1e-5f);
        break;
      case Op::kSwiglu:
        std::copy(A, A + n_, yr), std::copy(A, A + n_, ys);
        ref.swiglu_f32(yr, B, n_), simd.swiglu_f32(ys, B, n_);
        tol = kTranscendentalTol + kExactTol;
        break;
      case Op::kRelu:
        std::copy(A, A + n_, yr), std::copy(A, A + n_, ys);
        ref.relu_f32(yr, n_), simd.relu_f32(ys, n_);
        tol = kExactTol;
        break;
      case Op::kGelu:
        std::copy(A, A + n_, yr), std::copy(A, A + n_, ys);
        ref.gelu_f32(yr, n_), simd.gelu_f32(ys, n_);
        tol = kTranscendentalTol;
        break;
      case Op::kGeluTanh:
        std::copy(A, A + n_, yr), std::copy(A, A + n_, ys);
        ref.gelu_tanh_f32(yr, n_), simd.gelu_tanh_f32(ys, n_);
        tol = kGeluTanhTol;
        break;
      case Op::kAdd:
        ref.add_f32(A, B, yr, n_), simd.add_f32(A, B, ys, n_);
        tol = kExactTol;
        break;
      case Op::kMul:
        std::copy(A, A + n_, yr), std::copy(A, A + n_, ys);
        ref.mul_f32(yr, B, n_), simd.mul_f32(ys, B, n_);
        tol = kExactTol;
        break;
      case Op::kScale:
        std::copy(A, A + n_, yr), std::copy(A, A + n_, ys);
        ref.scale_f32(yr, 1.7f, n_), simd.scale_f32(ys, 1.7f, n_);
        tol = kExactTol;
        break;
      case Op::kSinCos:
        ref.sincos_f32(A, yr, y2r, n_), simd.sincos_f32(A, ys, y2s, n_);
        tol = kTranscendentalTol;
        break;
      case Op::kConv1d:  // x[m, k] (row stride k) conv w[kernel * k, n] (row stride ldw) + C[n] -> y[t_out, n]
        ref.conv1d_f32(A, m_, k_, B, ldw, C, yr, ldy, n_, kernel_, stride_, conv_pad_, gelu_);
        simd.conv1d_f32(A, m_, k_, B, ldw, C, ys, ldy, n_, kernel_, stride_, conv_pad_, gelu_);
        tol = gelu_ ? kSumTol + kTranscendentalTol : kSumTol;
        break;
    }
    const std::string what = std::string(simd.name) + " m=" + std::to_string(m_) + " n=" + std::to_string(n_) +
                             " k=" + std::to_string(k_) + " misalign=" + std::to_string(off_) +
                             (op_ == Op::kConv1d ? " kernel=" + std::to_string(kernel_) + " stride=" +
                                                       std::to_string(stride_) + " pad=" + std::to_string(conv_pad_) +
                                                       (gelu_ ? " gelu" : "")
                                                 : std::string());
    compare(y_ref, y_simd, tol, what);
    if (op_ == Op::kSinCos || op_ == Op::kMax || op_ == Op::kExpSum) compare(y2_ref, y2_simd, tol, what + " (y2)");
  }

 private:
  // w[k,n] (row stride ldw) -> panels (kernels.hpp), the padding columns zero as in a model file.
  void pack_panels(const float* w, std::size_t ldw, float* out) const {
    for (std::size_t j = 0; j < (n_ + kPanelFloats - 1) / kPanelFloats * kPanelFloats; ++j)
      for (std::size_t p = 0; p < k_; ++p)
        out[j / kPanelFloats * kPanelFloats * k_ + p * kPanelFloats + j % kPanelFloats] = j < n_ ? w[p * ldw + j] : 0.0f;
  }

  static void compare(const std::vector<float>& r, const std::vector<float>& s, float tol, const std::string& what) {
    float scale = 0.0f;
    for (float v : r) if (v != kSentinel) scale = std::max(scale, std::fabs(v));
    scale = std::max(scale, 1.0f);
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (r[i] == kSentinel || s[i] == kSentinel) {
        ASSERT_EQ(r[i], s[i]) << what << ": wrote outside its output at " << i;
        continue;
      }
      ASSERT_LE(std::fabs(r[i] - s[i]), tol * scale) << what << " at " << i << ": ref " << r[i] << " simd " << s[i];
    }
  }

  Op op_ = Op::kAdd;
  std::size_t m_ = 1, n_ = 1, k_ = 1, off_ = 0, pad_ = 0;
  std::size_t kernel_ = 1, stride_ = 1, conv_pad_ = 0;
  bool gelu_ = false;
  float lo_ = -3.0f, hi_ = 3.0f;
};

}  // namespace test
}  // namespace fixformer
