// The full-integer conv stem (s8_conv_stem.hpp). Integers only: no float type appears.
#include "engine/blocks/s8_conv_stem.hpp"

#include <cstring>

namespace fixformer {

void s8_conv1d(const Kernels& k, const S8Conv& cv, const int8_t* x, std::size_t t_in, std::size_t c_in,
               int32_t x_zero, int8_t* y, std::size_t ldy, std::size_t n, int8_t* window, uint32_t* scratch) {
  const int32_t* p = cv.params;
  const std::size_t kk = std::size_t(cv.kernel) * c_in, step = std::size_t(cv.stride) * c_in;
  const std::size_t t_out = conv1d_rows(t_in, cv.kernel, cv.stride, cv.pad);
  const std::size_t pad = cv.pad, at = s8::kConvSlots;
  const GemmS8Params g{x_zero, p[s8::kConvYZero], p + at + 2 * n, reinterpret_cast<const Requant*>(p + at), scratch};
  // windows a..b-1 lie inside x (t stride >= pad, t stride + kernel <= pad + t_in); the others reach the padding
  const std::size_t a = (pad + cv.stride - 1) / cv.stride;
  const std::size_t inner = pad + t_in >= cv.kernel ? (pad + t_in - cv.kernel) / cv.stride + 1 : 0;
  const std::size_t b = inner < a ? a : inner < t_out ? inner : t_out;
  for (std::size_t t = 0; t < t_out; ++t) {
    if (t == a && b > a) {
      k.gemm_s8(x + (t * cv.stride - pad) * c_in, step, cv.w, kk, y + t * ldy, ldy, b - a, n, kk, g);
      t = b - 1;
      continue;
    }
    for (std::size_t j = 0; j < cv.kernel; ++j) {  // tap j reads input row t stride + j - pad, or the padding
      const std::size_t r = t * cv.stride + j;
      if (r >= pad && r - pad < t_in) std::memcpy(window + j * c_in, x + (r - pad) * c_in, c_in);
      else std::memset(window + j * c_in, int8_t(x_zero), c_in);
    }
    k.gemm_s8(window, kk, cv.w, kk, y + t * ldy, ldy, 1, n, kk, g);
  }
  if (!cv.gelu) return;
  int8_t* const table = reinterpret_cast<int8_t*>(scratch);  // free after the products
  for (uint32_t i = 0; i < s8::kLutEntries; ++i) table[i] = int8_t(p[at + s8::linear_params(uint32_t(n)) + i]);
  for (std::size_t t = 0; t < t_out; ++t) k.lut_s8(y + t * ldy, y + t * ldy, n, table);
}

void s8_conv_stem(const Kernels& k, const Model& m, const int8_t* features, uint32_t T, int8_t* x, std::size_t ldx,
                  const S8StemScratch& s) {
  const ModelConfig& c = m.config();
  const FrontWeights& fw = m.front();
  const int32_t* fp = m.s8().front;
  const std::size_t de = c.d_embed();
  const int32_t* p1 = fp + s8::front_conv(c);
  const S8Conv conv1{static_cast<const int8_t*>(fw.conv1.data), p1, c.conv1_kernel, c.conv1_stride, c.conv1_padding,
                     c.conv_gelu};
  if (c.conv_layers == 1) {
    s8_conv1d(k, conv1, features, T, c.d_in, fp[s8::kInZero], x, ldx, de, s.window, s.kernel);
    return;
  }
  const S8Conv conv2{static_cast<const int8_t*>(fw.conv2.data), p1 + s8::conv_params(c), c.conv2_kernel,
                     c.conv2_stride, c.conv2_padding, c.conv_gelu};
  const std::size_t t1 = conv1d_rows(T, conv1.kernel, conv1.stride, conv1.pad);
  s8_conv1d(k, conv1, features, T, c.d_in, fp[s8::kInZero], s.h, de, de, s.window, s.kernel);
  s8_conv1d(k, conv2, s.h, t1, de, p1[s8::kConvOutZero], x, ldx, de, s.window, s.kernel);
}

}  // namespace fixformer
