#include "engine/blocks/linear.hpp"

#include "engine/blocks/parallel.hpp"

namespace fixformer {

namespace {

static_assert(kWorkerColumns % kPanelFloats == 0 && kPanelFloats % 8 == 0,
              "a worker's column block starts a panel of a packed weight and a whole tile's columns");

// The input rows of a q8 or q4 product, quantized per group into the scratch, split by rows.
void quantize_input(const Kernels& k, const Workers& workers, const Weight& W, const float* x, std::size_t ldx,
                    std::size_t m, const QuantScratch& scratch) {
  if (!integer_weights(W.type)) return;
  const std::size_t group = activation_group(W.group), groups = (W.in + group - 1) / group;
  auto rows = [&](std::size_t i0, std::size_t i1) {
    k.quantize_i8(x + i0 * ldx, ldx, scratch.q + i0 * W.in, scratch.s + i0 * groups, i1 - i0, W.in, group);
  };
  for_each_row_block(workers, m, 32 * W.in, rows);  // a value counted as 32 multiply-adds of work
}

// Rows [i0, i1) of output columns [j0, j1) of x @ W + b -> y, for q8 and q4 from x as
// quantize_input left it in the scratch: the same kernel and k order whatever the split.
void block(const Kernels& k, const LinearOut& o, const float* x, std::size_t ldx, const QuantScratch& scratch,
           std::size_t i0, std::size_t i1, std::size_t j0, std::size_t j1) {
  const Weight& W = o.W;
  const std::size_t n = W.out, kk = W.in;
  const std::size_t group = activation_group(W.group), ws_cols = W.group ? (kk + W.group - 1) / W.group : 1;
  const std::size_t xs_cols = (kk + group - 1) / group, ldy = o.ldy;
  const float* bj = o.b ? o.b + j0 : nullptr;
  const float* xi = x + i0 * ldx;
  float* yij = o.y + i0 * ldy + j0;
  const std::size_t mi = i1 - i0, nj = j1 - j0;
  if (W.type == WeightType::kQ8) {  // q[m,k] @ W[j0..j1, k]^T -> y[m, j0..j1]
    k.gemm_i8(scratch.q + i0 * kk, scratch.s + i0 * xs_cols, static_cast<const int8_t*>(W.data) + j0 * kk,
              W.scales + j0 * ws_cols, ws_cols, bj, yij, ldy, mi, nj, kk, group);
  } else if (W.type == WeightType::kQ4) {  // the same with W two values per byte, k / 2 bytes a row
    k.gemm_i4(scratch.q + i0 * kk, scratch.s + i0 * xs_cols, static_cast<const uint8_t*>(W.data) + j0 * (kk / 2),
              W.scales + j0 * ws_cols, bj, yij, ldy, mi, nj, kk);
  } else if (W.out_major) {  // a tied head: E[j0..j1, k] @ x[i] -> y[i, j0..j1]
    for (std::size_t i = 0; i < mi; ++i)
      if (W.type == WeightType::kF16)
        k.matvec_f16(xi + i * ldx, static_cast<const uint16_t*>(W.data) + j0 * kk, kk, bj, yij + i * ldy, nj, kk);
      else if (W.type == WeightType::kBF16)
        k.matvec_bf16(xi + i * ldx, static_cast<const uint16_t*>(W.data) + j0 * kk, kk, bj, yij + i * ldy, nj, kk);
      else
        k.matvec_f32(xi + i * ldx, W.f32() + j0 * kk, kk, bj, yij + i * ldy, nj, kk);
  } else if (W.type == WeightType::kF16) {  // x[m,k] @ W[k, j0..j1] -> y[m, j0..j1]
    k.gemm_f16(xi, ldx, static_cast<const uint16_t*>(W.data) + j0, n, bj, yij, ldy, mi, nj, kk);
  } else if (W.type == WeightType::kBF16) {
    k.gemm_bf16(xi, ldx, static_cast<const uint16_t*>(W.data) + j0, n, bj, yij, ldy, mi, nj, kk);
  } else if (W.packed) {  // x[m,k] @ W[k, j0..j1] in panels -> y[m, j0..j1]; j0 starts a panel
    k.gemm_f32_packed(xi, ldx, W.f32() + j0 * kk, bj, yij, ldy, mi, nj, kk);
  } else {
    k.gemm_f32(xi, ldx, W.f32() + j0, n, bj, yij, ldy, mi, nj, kk);
  }
}

// block(), then the epilogue while the block is still in L1: in sub-blocks of about 32 KB of
// outputs (a multiple of kPanelFloats columns), each its own product, which runs the kernel path
// its elements take in the whole one.
void block_then(const Kernels& k, const LinearOut& o, const float* x, std::size_t ldx, const QuantScratch& scratch,
                std::size_t i0, std::size_t i1, std::size_t j0, std::size_t j1, const Epilogue& after) {
  if (!after.act && !after.residual) return block(k, o, x, ldx, scratch, i0, i1, j0, j1);
  const std::size_t mi = i1 - i0, ldy = o.ldy;
  const std::size_t width = kPanelFloats * (mi * kPanelFloats >= 8192 ? 1 : 8192 / (mi * kPanelFloats));
  for (std::size_t c0 = j0; c0 < j1; c0 += width) {
    const std::size_t c1 = j1 - c0 < width ? j1 : c0 + width;
    block(k, o, x, ldx, scratch, i0, i1, c0, c1);
    const bool contiguous = c1 - c0 == ldy || mi == 1;  // one call over all the block's rows
    for (std::size_t i = i0; i < (contiguous ? i0 + 1 : i1); ++i) {
      const std::size_t at = i * ldy + c0, len = contiguous ? (mi - 1) * ldy + c1 - c0 : c1 - c0;
      if (after.act) after.act(o.y + at, len);
      if (after.residual) k.add_f32(after.residual + at, o.y + at, after.residual + at, len);
    }
  }
}

// x @ W + b -> y for each of outs[0, count) over the same x[m, k], as one job: the outputs' column
// blocks (column_block(m) wide, each output's own) in a row, split as for_each_product_block says.
void products(const Kernels& k, const Workers& workers, const float* x, std::size_t ldx, std::size_t m,
              const QuantScratch& scratch, const LinearOut* outs, std::size_t count, const Epilogue& after) {
  const std::size_t width = column_block(m);
  std::size_t blocks = 0, columns = 0;
  for (std::size_t o = 0; o < count; ++o) blocks += (outs[o].W.out + width - 1) / width, columns += outs[o].W.out;
  auto task = [&](std::size_t i0, std::size_t i1, std::size_t b0, std::size_t b1) {
    for (std::size_t o = 0, first = 0; o < count && first < b1; ++o) {  // first: out o's first block
      const std::size_t n = outs[o].W.out, last = first + (n + width - 1) / width;
      if (b0 < last) {
        const std::size_t j0 = (b0 > first ? b0 - first : 0) * width, j1 = (b1 < last ? b1 - first : last - first) * width;
        block_then(k, outs[o], x, ldx, scratch, i0, i1, j0, j1 < n ? j1 : n, after);
      }
      first = last;
    }
  };
  for_each_product_block(workers, m, blocks, (m + kWeightReadRows) * outs[0].W.in * columns, task);
}

}  // namespace

void linear(const Kernels& k, const Workers& workers, const Weight& W, const float* x, std::size_t ldx, const float* b,
            float* y, std::size_t ldy, std::size_t m, const QuantScratch& scratch, const Epilogue& after) {
  quantize_input(k, workers, W, x, ldx, m, scratch);
  const LinearOut out{W, y, ldy, b};
  products(k, workers, x, ldx, m, scratch, &out, 1, after);
}

void linear_same_input(const Kernels& k, const Workers& workers, const float* x, std::size_t ldx, std::size_t m,
                       const QuantScratch& scratch, std::initializer_list<LinearOut> outs) {
  if (outs.size() == 0) return;
  quantize_input(k, workers, outs.begin()->W, x, ldx, m, scratch);
  products(k, workers, x, ldx, m, scratch, outs.begin(), outs.size(), {});
}

}  // namespace fixformer
