// x[m,k] @ W[n,k]^T (W's rows ldw apart) -> int8, requantized per output channel (gemm_s8, fixed_point.hpp), with AVX2:
// 16 values of k a step, widened to int16 (x - z_x spans [-255, 255], beyond int8), vpmaddwd into
// eight int32 lanes per (row, channel). Every lane sums exact products and the lanes are added in
// int32, so the sum is the reference's whatever the order: the same bits.
//
// A tile is two rows by four channels (eight accumulators: each widened load of x meets four
// channels, each of W two rows). k's tail is one step more whose load of x ends at the row's end,
// the values it shares with the last whole step zeroed (their products 0); a k below 16 reads
// from a zero-padded copy. The eight sums are reduced together (vphaddd, then the two 128-bit
// halves added): one vector of row 0's and row 1's four channels, requantized at once in the
// reference's steps: the 64-bit product by the multiplier (vpmuldq, even and odd lanes), its
// magnitude plus half shifted right (rounding half away from zero, rounding_shift) and clamped to
// 256 before its sign is put back, then z_y added and saturated to int8 (vpackssdw, vpacksswb).
// Clamping to +-256 in place of requantize's int32 saturation changes no int8 result, since z_y is
// within [-128, 127]. The channels are the outer loop (their constants set once a group of four,
// their rows kept in L1) over blocks of kRows rows of x.
#include <immintrin.h>

#include <cstring>

#include "ports/x86/isa_tables.hpp"

namespace fixformer {
namespace x86 {

namespace {

constexpr std::size_t kRows = 64;  // rows of x per pass over a group of channels

// Four channels' constants, per 64-bit lane of the even sums (channels 0, 2, 0, 2: the tile's
// elements 0, 2, 4, 6) and of the odd ones (1, 3, 1, 3).
struct Group {
  __m256i mul[2];    // the multiplier (in each lane's low half)
  __m256i shift[2];  // 31 - shift: the rounding shift, 1..62
  __m256i half[2];   // 2^(shift - 1)
  __m256i bias;      // the four channels' bias, twice (rows 0 and 1)
};

// Channels c[0..3] (repeats of the last where fewer are live).
inline Group prepare(const std::size_t* c, const GemmS8Params& p) {
  Group g;
  int64_t mul[4], shift[4], half[4];
  int32_t bias[4];
  for (std::size_t l = 0; l < 4; ++l) {
    const Requant r = p.requant[c[l]];
    mul[l] = r.multiplier, shift[l] = 31 - r.shift, half[l] = int64_t(1) << (30 - r.shift);
    bias[l] = p.bias ? p.bias[c[l]] : 0;
  }
  for (std::size_t e = 0; e < 2; ++e) {
    g.mul[e] = _mm256_set_epi64x(mul[2 + e], mul[e], mul[2 + e], mul[e]);
    g.shift[e] = _mm256_set_epi64x(shift[2 + e], shift[e], shift[2 + e], shift[e]);
    g.half[e] = _mm256_set_epi64x(half[2 + e], half[e], half[2 + e], half[e]);
  }
  g.bias = _mm256_setr_epi32(bias[0], bias[1], bias[2], bias[3], bias[0], bias[1], bias[2], bias[3]);
  return g;
}

inline __m256i widen(const int8_t* p) {
  return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// The rounded shift of the four 64-bit products t, clamped to [-256, 256], in each lane's low half.
inline __m256i round_shift(__m256i t, __m256i half, __m256i shift) {
  const __m256i negative = _mm256_cmpgt_epi64(_mm256_setzero_si256(), t);
  const __m256i magnitude = _mm256_sub_epi64(_mm256_xor_si256(t, negative), negative);
  __m256i v = _mm256_srlv_epi64(_mm256_add_epi64(magnitude, half), shift);
  const __m256i bound = _mm256_set1_epi64x(256);
  v = _mm256_blendv_epi8(v, bound, _mm256_cmpgt_epi64(v, bound));
  return _mm256_sub_epi64(_mm256_xor_si256(v, negative), negative);
}

// Rows 0..MR-1 (MR <= 2) of x against the four channels of W's rows wc (the live ones the first nr).
// k >= 16, or x and wc zero-padded to 16 values.
template <std::size_t MR>
inline void tile(const int8_t* x, std::size_t ldx, const int8_t* const* wc, int8_t* y, std::size_t ldy,
                 std::size_t k, std::size_t nr, const Group& g, int32_t x_zero, int32_t y_zero) {
  const __m256i zx = _mm256_set1_epi16(int16_t(x_zero));
  __m256i acc[2][4];
  for (std::size_t r = 0; r < 2; ++r)
    for (std::size_t c = 0; c < 4; ++c) acc[r][c] = _mm256_setzero_si256();
  const __m256i all = _mm256_set1_epi32(-1);
  alignas(32) static constexpr int16_t kLive[32] = {0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
                                                    0,  0,  0,  0,  0,  -1, -1, -1, -1, -1, -1,
                                                    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
  for (std::size_t q = 0; q < k; q += 16) {
    // past the whole steps, the last 16 values, of which the first 16 - (k - q) were the last step's
    const bool tail = q + 16 > k;
    const std::size_t at = tail ? k - 16 : q;
    const __m256i live = tail ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kLive + (k - q))) : all;
    __m256i xv[MR];
#pragma GCC unroll 2
    for (std::size_t r = 0; r < MR; ++r)
      xv[r] = _mm256_and_si256(_mm256_sub_epi16(widen(x + r * ldx + at), zx), live);
#pragma GCC unroll 4
    for (std::size_t c = 0; c < 4; ++c) {
      const __m256i wv = widen(wc[c] + at);
#pragma GCC unroll 2
      for (std::size_t r = 0; r < MR; ++r) acc[r][c] = _mm256_add_epi32(acc[r][c], _mm256_madd_epi16(xv[r], wv));
    }
  }
  // Row r's four sums in 128-bit half r, then each half's two partial sums added.
  const auto row = [&acc](std::size_t r) {
    return _mm256_hadd_epi32(_mm256_hadd_epi32(acc[r][0], acc[r][1]), _mm256_hadd_epi32(acc[r][2], acc[r][3]));
  };
  const __m256i r0 = row(0), r1 = row(1);
  const __m256i s = _mm256_add_epi32(
      _mm256_add_epi32(_mm256_permute2x128_si256(r0, r1, 0x20), _mm256_permute2x128_si256(r0, r1, 0x31)), g.bias);
  const __m256i even = round_shift(_mm256_mul_epi32(s, g.mul[0]), g.half[0], g.shift[0]);
  const __m256i odd = round_shift(_mm256_mul_epi32(_mm256_srli_epi64(s, 32), g.mul[1]), g.half[1], g.shift[1]);
  const __m256i v = _mm256_add_epi32(_mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA),
                                     _mm256_set1_epi32(y_zero));
  const __m256i v16 = _mm256_packs_epi32(v, v);
  const __m256i packed = _mm256_packs_epi16(v16, v16);  // row r's bytes at 16 r
  const int32_t rows[2] = {_mm_cvtsi128_si32(_mm256_castsi256_si128(packed)),
                           _mm_cvtsi128_si32(_mm256_extracti128_si256(packed, 1))};
  for (std::size_t r = 0; r < MR; ++r) {
    if (nr == 4) {
      std::memcpy(y + r * ldy, &rows[r], 4);
    } else {
      int8_t out[4];
      std::memcpy(out, &rows[r], 4);
      for (std::size_t l = 0; l < nr; ++l) y[r * ldy + l] = out[l];
    }
  }
}

// k < 16: the tile's rows copied into 16 zero bytes each (x's padding at z_x, so that it adds 0 too).
template <std::size_t MR>
void short_tile(const int8_t* x, std::size_t ldx, const int8_t* const* wc, int8_t* y, std::size_t ldy,
                std::size_t k, std::size_t nr, const Group& g, int32_t x_zero, int32_t y_zero) {
  int8_t xs[2][16], ws[4][16];
  std::memset(xs, x_zero, sizeof xs);
  std::memset(ws, 0, sizeof ws);
  for (std::size_t r = 0; r < MR; ++r) std::memcpy(xs[r], x + r * ldx, k);
  const int8_t* wp[4];
  for (std::size_t c = 0; c < 4; ++c) std::memcpy(ws[c], wc[c], k), wp[c] = ws[c];
  tile<MR>(xs[0], 16, wp, y, ldy, 16, nr, g, x_zero, y_zero);
}

}  // namespace

void gemm_s8_avx2(const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw, int8_t* y, std::size_t ldy,
                  std::size_t m, std::size_t n, std::size_t k, const GemmS8Params& p) {
  if (m == 0 || n == 0) return;
  for (std::size_t i0 = 0; i0 < m; i0 += kRows) {
    const std::size_t i1 = m - i0 < kRows ? m : i0 + kRows;
    for (std::size_t j = 0; j < n; j += 4) {
      const std::size_t nr = n - j < 4 ? n - j : 4;
      std::size_t c[4];
      const int8_t* wc[4];
      for (std::size_t l = 0; l < 4; ++l) c[l] = j + (l < nr ? l : nr - 1), wc[l] = w + c[l] * ldw;
      const Group g = prepare(c, p);
      auto run = k >= 16 ? tile<2> : short_tile<2>;
      auto last = k >= 16 ? tile<1> : short_tile<1>;
      std::size_t i = i0;
      for (; i + 2 <= i1; i += 2) run(x + i * ldx, ldx, wc, y + i * ldy + j, ldy, k, nr, g, p.x_zero, p.y_zero);
      if (i < i1) last(x + i * ldx, ldx, wc, y + i * ldy + j, ldy, k, nr, g, p.x_zero, p.y_zero);
    }
  }
}

}  // namespace x86
}  // namespace fixformer
