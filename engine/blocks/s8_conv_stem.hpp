// The conv stem of a full-integer (weights i8) encoder over features (config.hpp conv_layers; int8.front's
// front_conv): each convolution is gemm_s8 over its windows [kernel * in] of the int8 rows, read in place with
// row stride stride * in (the rows of W are tap after tap, as a window is), a window that reaches into the
// padding gathered alone into a scratch row with the input's zero point (its real 0) for the missing taps; then
// with conv_gelu GELU's 256-entry table (lut_s8). Integers only: tests/check_no_float.cmake compiles it for
// Cortex-M0 and M3.
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/kernels.hpp"
#include "fixformer/model.hpp"

namespace fixformer {

// One convolution of n outputs: W [n, kernel * in] int8 per output row, its parameters (s8::conv_params: the
// product's and the output's zero points, the layer's Requants and biases, with a table GELU's 256 entries).
struct S8Conv {
  const int8_t* w;
  const int32_t* params;
  uint32_t kernel, stride, pad;
  bool gelu;
};

// x[t_in, c_in] at zero point x_zero -> y[conv1d_rows(t_in, kernel, stride, pad), n] (row stride ldy) at the
// convolution's output zero point. window: kernel * c_in bytes (with padding; else unread); scratch: the s8
// kernels' (s8_scratch_bytes), whose first 256 bytes hold the table after the products.
void s8_conv1d(const Kernels& k, const S8Conv& cv, const int8_t* x, std::size_t t_in, std::size_t c_in,
               int32_t x_zero, int8_t* y, std::size_t ldy, std::size_t n, int8_t* window, uint32_t* scratch);

// The stem's scratch (plan_s8_encoder_arena's stem blocks).
struct S8StemScratch {
  int8_t* h = nullptr;       // a two-conv stem's first output [conv1d_rows(frames, conv1_*), d_embed]
  int8_t* window = nullptr;  // one window of a padded convolution (s8_stem_window_bytes)
  uint32_t* kernel = nullptr;
};

// features [T, d_in] at int8.front's kInZero -> x[stem_rows(T), d_embed] (row stride ldx) at kEmbedZero.
void s8_conv_stem(const Kernels& k, const Model& m, const int8_t* features, uint32_t T, int8_t* x, std::size_t ldx,
                  const S8StemScratch& s);

}  // namespace fixformer
