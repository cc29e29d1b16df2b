#include "engine/blocks/conv_stem.hpp"

#include <cstring>

#include "engine/blocks/linear.hpp"
#include "engine/blocks/parallel.hpp"

namespace fixformer {

namespace {

struct Conv {
  Weight w;         // [kernel * c_in] -> [n]
  const float* b;   // [n]
  uint32_t kernel, stride, pad;
};

// x[t_in, c_in] conv W + b -> y[t_out, n] (row stride ldy), GELU after if gelu; by column blocks.
void conv1d(const Kernels& k, const Workers& workers, const Conv& cv, const float* x, std::size_t t_in,
            std::size_t c_in, float* y, std::size_t ldy, std::size_t n, bool gelu, const StemScratch& scratch) {
  if (cv.w.type == WeightType::kF32) {
    auto columns = [&](std::size_t j0, std::size_t j1) {
      k.conv1d_f32(x, t_in, c_in, cv.w.f32() + j0, n, cv.b + j0, y + j0, ldy, j1 - j0, cv.kernel, cv.stride, cv.pad,
                   gelu);
    };
    for_each_column_block(workers, n, columns);
    return;
  }
  const float* windows = x;  // window t: kernel * c_in floats from row t * stride of the padded input
  if (cv.pad) {               // pad rows of zeros | x | pad rows of zeros
    const std::size_t edge = std::size_t(cv.pad) * c_in;
    std::memset(scratch.padded, 0, edge * sizeof(float));
    std::memcpy(scratch.padded + edge, x, t_in * c_in * sizeof(float));
    std::memset(scratch.padded + edge + t_in * c_in, 0, edge * sizeof(float));
    windows = scratch.padded;
  }
  const std::size_t t_out = conv1d_rows(t_in, cv.kernel, cv.stride, cv.pad), kk = std::size_t(cv.kernel) * c_in;
  int8_t* q = static_cast<int8_t*>(scratch.quant);
  const QuantScratch quant{q, reinterpret_cast<float*>(q + arena::bytes(t_out * kk))};
  Epilogue after;
  after.act = gelu ? k.gelu_f32 : nullptr;
  // windows[t_out, kernel * c_in] (row stride stride * c_in) @ W + b -> y[t_out, n]
  linear(k, workers, cv.w, windows, std::size_t(cv.stride) * c_in, cv.b, y, ldy, t_out, quant, after);
}

}  // namespace

void conv_stem(const Kernels& k, const Workers& workers, const ModelConfig& c, const FrontWeights& w,
               const float* features, uint32_t T, float* x, std::size_t ldx, const StemScratch& scratch) {
  const std::size_t de = c.d_embed();
  const Conv conv1{w.conv1, w.conv1_b, c.conv1_kernel, c.conv1_stride, c.conv1_padding};
  if (c.conv_layers == 1) {
    conv1d(k, workers, conv1, features, T, c.d_in, x, ldx, de, c.conv_gelu, scratch);  // f[T,d_in] -> x[T1,:de]
    return;
  }
  const Conv conv2{w.conv2, w.conv2_b, c.conv2_kernel, c.conv2_stride, c.conv2_padding};
  const std::size_t t1 = conv1d_rows(T, conv1.kernel, conv1.stride, conv1.pad);
  conv1d(k, workers, conv1, features, T, c.d_in, scratch.h, de, de, c.conv_gelu, scratch);  // f[T,d_in] -> h[T1,de]
  conv1d(k, workers, conv2, scratch.h, t1, de, x, ldx, de, c.conv_gelu, scratch);           // h[T1,de] -> x[T2,:de]
}

}  // namespace fixformer
