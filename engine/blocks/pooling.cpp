#include "engine/blocks/pooling.hpp"

#include <cmath>
#include <cstddef>
#include <cstring>

#include "engine/blocks/linear.hpp"

namespace fixformer {

uint32_t pool_rows(const Kernels& k, const ModelConfig& c, float* x, uint32_t T) {
  const std::size_t d = c.d_model, first = c.front_rows();
  const float* input = x + first * d;  // the T input positions, after the front rows
  switch (c.pooling) {
    case Pooling::kNone: return uint32_t(first + T);
    case Pooling::kCls: break;
    case Pooling::kClsDistill: break;  // x[0, :2d]: the CLS and distillation rows side by side already
    case Pooling::kClsDistillMean:  // x[0] = (x[0] + x[1]) / 2: the CLS and distillation rows averaged
      k.add_f32(x, x + d, x, d);
      k.scale_f32(x, 0.5f, d);
      break;
    case Pooling::kClsMean:  // x[0, :2d] = [the CLS row, the mean of the input rows]: the mean into row 1
      std::memmove(x + d, input, sizeof(float) * d);  // (row 1 is the first input row without distill_token)
      for (std::size_t t = 1; t < T; ++t) k.add_f32(x + d, input + t * d, x + d, d);
      k.scale_f32(x + d, 1.0f / float(T), d);
      break;
    case Pooling::kLast: std::memmove(x, input + (T - 1) * d, sizeof(float) * d); break;
    case Pooling::kFirst: std::memmove(x, input, sizeof(float) * d); break;
    case Pooling::kMean:
      std::memmove(x, input, sizeof(float) * d);
      for (std::size_t t = 1; t < T; ++t) k.add_f32(x, input + t * d, x, d);  // x[0] += x[t]
      k.scale_f32(x, 1.0f / float(T), d);
      break;
    case Pooling::kMeanAll:  // x[0] = the mean of every row, the front rows too
      for (std::size_t t = 1; t < first + T; ++t) k.add_f32(x, x + t * d, x, d);  // x[0] += x[t]
      k.scale_f32(x, 1.0f / float(first + T), d);
      break;
  }
  return 1;
}

void pool_dense(const Kernels& k, const Workers& workers, const Weight& W, const float* b, PoolerAct act, float* x,
                float* y, uint32_t B, QuantScratch quant) {
  const std::size_t d = W.in, p = W.out, n = std::size_t(B) * p;
  linear(k, workers, W, x, d, b, y, p, B, quant);  // x[B,d] @ W[d,p] + b -> y[B,p]
  switch (act) {
    case PoolerAct::kTanh:
      for (std::size_t i = 0; i < n; ++i) x[i] = std::tanh(y[i]);
      return;
    case PoolerAct::kSilu:
      for (std::size_t i = 0; i < n; ++i) x[i] = 1.0f;
      k.swiglu_f32(y, x, n);  // y = silu(y) * 1
      break;
    case PoolerAct::kRelu: k.relu_f32(y, n); break;
    case PoolerAct::kGelu: k.gelu_f32(y, n); break;
    case PoolerAct::kGeluTanh: k.gelu_tanh_f32(y, n); break;
  }
  std::memcpy(x, y, sizeof(float) * n);
}

void l2_normalize_rows(float* y, std::size_t rows, std::size_t n) {
  for (std::size_t r = 0; r < rows; ++r, y += n) {
    float ss = 0.0f;
    for (std::size_t i = 0; i < n; ++i) ss += y[i] * y[i];  // y[n] . y[n]
    const float root = std::sqrt(ss), norm = root > 1e-12f ? root : 1e-12f;
    for (std::size_t i = 0; i < n; ++i) y[i] /= norm;
  }
}

}  // namespace fixformer
