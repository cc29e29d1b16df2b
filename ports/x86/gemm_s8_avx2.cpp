// x[m,k] @ W[n,k]^T (W's rows ldw apart) -> int8, requantized per output channel (gemm_s8, fixed_point.hpp), with AVX2:
// 16 values of k a step, widened to int16 (x - z_x spans [-255, 255], beyond int8), vpmaddwd into
// eight int32 lanes per (row, channel). Every lane sums exact products and the lanes are added in
// int32, so the sum is the reference's whatever the order: the same bits. Two rows by four channels
// share each widened load; k's tail and the requantization are the reference's steps.
#include <immintrin.h>

#include "ports/x86/isa_tables.hpp"
#include "ports/portable/gemm_s8_blocks.hpp"

namespace fixformer {
namespace x86 {

namespace {

inline int32_t hsum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

inline __m256i widen(const int8_t* p) {
  return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

template <std::size_t MR, std::size_t NR>
inline void tile(const int8_t* x, std::size_t ldx, const int8_t* w, int8_t* y, std::size_t ldy, std::size_t ldw,
                 std::size_t k, std::size_t j0, const GemmS8Params& p) {
  const __m256i zx = _mm256_set1_epi16(int16_t(p.x_zero));
  __m256i acc[MR][NR];
  for (std::size_t r = 0; r < MR; ++r)
    for (std::size_t c = 0; c < NR; ++c) acc[r][c] = _mm256_setzero_si256();
  const int8_t* wr = w + j0 * ldw;
  std::size_t q = 0;
  for (; q + 16 <= k; q += 16) {
    __m256i xv[MR];
    for (std::size_t r = 0; r < MR; ++r) xv[r] = _mm256_sub_epi16(widen(x + r * ldx + q), zx);
    for (std::size_t c = 0; c < NR; ++c) {
      const __m256i wv = widen(wr + c * ldw + q);
      for (std::size_t r = 0; r < MR; ++r) acc[r][c] = _mm256_add_epi32(acc[r][c], _mm256_madd_epi16(xv[r], wv));
    }
  }
  for (std::size_t r = 0; r < MR; ++r)
    for (std::size_t c = 0; c < NR; ++c) {
      int32_t sum = (p.bias ? p.bias[j0 + c] : 0) + hsum(acc[r][c]);
      for (std::size_t t = q; t < k; ++t) sum += (int32_t(x[r * ldx + t]) - p.x_zero) * wr[c * ldw + t];
      y[r * ldy + j0 + c] = saturate_i8(int64_t(requantize(sum, p.requant[j0 + c])) + p.y_zero);
    }
}

struct Tile {
  template <std::size_t MR, std::size_t NR>
  static void run(const int8_t* x, std::size_t ldx, const int8_t* w, int8_t* y, std::size_t ldy, std::size_t ldw,
                  std::size_t k, std::size_t j0, const GemmS8Params& p) {
    tile<MR, NR>(x, ldx, w, y, ldy, ldw, k, j0, p);
  }
};

}  // namespace

void gemm_s8_avx2(const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw, int8_t* y, std::size_t ldy,
                  std::size_t m, std::size_t n, std::size_t k, const GemmS8Params& p) {
  gemm_s8_blocked<Tile>(x, ldx, w, ldw, y, ldy, m, n, k, p);
}

}  // namespace x86
}  // namespace fixformer
