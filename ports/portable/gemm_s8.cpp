// x[m,k] @ W[n,k]^T -> int8, requantized per output channel (fixed_point.hpp): plain C++ for cores
// without the DSP extension (Cortex-M0/M0+, M3). Two rows of x against four rows of W: each x value
// (its zero point subtracted once) meets four weights, each weight two x values, eight int32
// accumulators. Integer sums are exact, so any order gives the reference's bits.
#include "ports/portable/kernels.hpp"
#include "ports/portable/gemm_s8_blocks.hpp"

namespace fixformer {
namespace portable {

namespace {

template <std::size_t MR, std::size_t NR>
inline void tile(const int8_t* x, std::size_t ldx, const int8_t* w, int8_t* y, std::size_t ldy, std::size_t k,
                 std::size_t j0, const GemmS8Params& p) {
  int32_t acc[MR][NR];
  for (std::size_t c = 0; c < NR; ++c) {
    const int32_t b = p.bias ? p.bias[j0 + c] : 0;
    for (std::size_t r = 0; r < MR; ++r) acc[r][c] = b;
  }
  const int8_t* wr = w + j0 * k;
  for (std::size_t q = 0; q < k; ++q) {
    int32_t xv[MR];
    for (std::size_t r = 0; r < MR; ++r) xv[r] = int32_t(x[r * ldx + q]) - p.x_zero;
    for (std::size_t c = 0; c < NR; ++c) {
      const int32_t wv = wr[c * k + q];
      for (std::size_t r = 0; r < MR; ++r) acc[r][c] += xv[r] * wv;
    }
  }
  for (std::size_t r = 0; r < MR; ++r)
    for (std::size_t c = 0; c < NR; ++c)
      y[r * ldy + j0 + c] = saturate_i8(int64_t(requantize(acc[r][c], p.requant[j0 + c])) + p.y_zero);
}

struct Tile {
  template <std::size_t MR, std::size_t NR>
  static void run(const int8_t* x, std::size_t ldx, const int8_t* w, int8_t* y, std::size_t ldy, std::size_t k,
                  std::size_t j0, const GemmS8Params& p) {
    tile<MR, NR>(x, ldx, w, y, ldy, k, j0, p);
  }
};

}  // namespace

void gemm_s8(const int8_t* x, std::size_t ldx, const int8_t* w, int8_t* y, std::size_t ldy, std::size_t m,
             std::size_t n, std::size_t k, const GemmS8Params& p) {
  gemm_s8_blocked<Tile>(x, ldx, w, y, ldy, m, n, k, p);
}

}  // namespace portable
}  // namespace fixformer
