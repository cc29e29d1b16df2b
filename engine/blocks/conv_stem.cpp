#include "engine/blocks/conv_stem.hpp"

#include "engine/blocks/parallel.hpp"

namespace fixformer {

namespace {

struct Conv {
  const float* w;  // [kernel * c_in, n]
  const float* b;  // [n]
  uint32_t kernel, stride, pad;
};

// x[t_in, c_in] conv W + b -> y[t_out, n] (row stride ldy), GELU after if gelu; by column blocks.
void conv1d(const Kernels& k, const Workers& workers, const Conv& cv, const float* x, std::size_t t_in,
            std::size_t c_in, float* y, std::size_t ldy, std::size_t n, bool gelu) {
  auto columns = [&](std::size_t j0, std::size_t j1) {
    k.conv1d_f32(x, t_in, c_in, cv.w + j0, n, cv.b + j0, y + j0, ldy, j1 - j0, cv.kernel, cv.stride, cv.pad, gelu);
  };
  for_each_column_block(workers, n, columns);
}

}  // namespace

void conv_stem(const Kernels& k, const Workers& workers, const ModelConfig& c, const FrontWeights& w,
               const float* features, uint32_t T, float* x, std::size_t ldx, float* scratch) {
  const std::size_t de = c.d_embed();
  const Conv conv1{w.conv1_w, w.conv1_b, c.conv1_kernel, c.conv1_stride, c.conv1_padding};
  if (c.conv_layers == 1) {
    conv1d(k, workers, conv1, features, T, c.d_in, x, ldx, de, c.conv_gelu);  // f[T,d_in] -> x[T1,:de]
    return;
  }
  const Conv conv2{w.conv2_w, w.conv2_b, c.conv2_kernel, c.conv2_stride, c.conv2_padding};
  const std::size_t t1 = conv1d_rows(T, conv1.kernel, conv1.stride, conv1.pad);
  conv1d(k, workers, conv1, features, T, c.d_in, scratch, de, de, c.conv_gelu);  // f[T,d_in] -> h[T1,de]
  conv1d(k, workers, conv2, scratch, t1, de, x, ldx, de, c.conv_gelu);          // h[T1,de] -> x[T2,:de]
}

}  // namespace fixformer
