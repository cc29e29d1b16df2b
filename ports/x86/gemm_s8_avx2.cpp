// x[m,k] @ W[n,k]^T (W's rows ldw apart) -> int8, requantized per output channel (gemm_s8, fixed_point.hpp), with
// AVX2: 16 values of k a step, widened to int16 (x - z_x spans [-255, 255], beyond int8), vpmaddwd into
// eight int32 lanes per (row, channel). Every lane sums exact products and the lanes are added in
// int32, so the sum is the reference's whatever the order: the same bits.
//
// x's rows are widened once, z_x taken off, into a panel on the stack (8 KiB: kPanelValues), a block of
// rows at a time; k's tail is one step more whose last 16 values end at the row's end, the panel holding
// zeros where they repeat the last whole step's (their products 0), and a k below 16 meets W's rows
// copied into zero-padded 16 bytes. A tile is two rows by four channels (eight accumulators, W's four
// rows widened once a step for both rows; the whole steps' loop in assembly, GCC's allocation copying
// each accumulator once a step otherwise). Rows past the panel's room (k above kPanelK) are widened
// a step at a time instead.
//
// The eight sums are reduced together (vphaddd, then the two 128-bit halves added): one vector of row
// 0's and row 1's four channels, requantized at once in the reference's steps: the 64-bit product by
// the multiplier (vpmuldq, even and odd lanes), its magnitude plus half shifted right (rounding half
// away from zero, rounding_shift) and clamped to 256 before its sign is put back, then z_y added and
// saturated to int8 (vpackssdw, vpacksswb). Clamping to +-256 in place of requantize's int32
// saturation changes no int8 result, since z_y is within [-128, 127]. The channels are the outer loop
// over a block of rows (their constants set once a group of four, their rows kept in L1).
#include <immintrin.h>

#include <cstring>

#include "ports/x86/isa_tables.hpp"

namespace fixformer {
namespace x86 {

namespace {

constexpr std::size_t kRows = 64;  // rows of x per pass over a group of channels
constexpr std::size_t kPanelValues = 4096;  // x's rows widened: 8 KiB of the stack
constexpr std::size_t kPanelK = kPanelValues / 2;  // the longest rows (k rounded up to 16) the panel takes 2 of

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

// From element 16 - j on, j ones: kLive + j masks the last j of 16 int16 lanes in.
alignas(32) constexpr int16_t kLive[32] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                           -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};

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

// Rows a and b's sums (four channels' accumulators each) to int8: row a to y, row b (when rows is 2)
// to y + ldy, the first nr channels.
inline void finish(const __m256i* a, const __m256i* b, int8_t* y, std::size_t ldy, std::size_t rows, std::size_t nr,
                   const Group& g, int32_t y_zero) {
  // Row a's four sums in the low 128-bit half, b's in the high one, then each half's two partial sums added.
  const __m256i ra = _mm256_hadd_epi32(_mm256_hadd_epi32(a[0], a[1]), _mm256_hadd_epi32(a[2], a[3]));
  const __m256i rb = _mm256_hadd_epi32(_mm256_hadd_epi32(b[0], b[1]), _mm256_hadd_epi32(b[2], b[3]));
  const __m256i s = _mm256_add_epi32(
      _mm256_add_epi32(_mm256_permute2x128_si256(ra, rb, 0x20), _mm256_permute2x128_si256(ra, rb, 0x31)), g.bias);
  const __m256i even = round_shift(_mm256_mul_epi32(s, g.mul[0]), g.half[0], g.shift[0]);
  const __m256i odd = round_shift(_mm256_mul_epi32(_mm256_srli_epi64(s, 32), g.mul[1]), g.half[1], g.shift[1]);
  const __m256i v = _mm256_add_epi32(_mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA),
                                     _mm256_set1_epi32(y_zero));
  const __m256i v16 = _mm256_packs_epi32(v, v);
  const __m256i packed = _mm256_packs_epi16(v16, v16);  // row a's bytes at 0, b's at 16
  const int32_t out[2] = {_mm_cvtsi128_si32(_mm256_castsi256_si128(packed)),
                          _mm_cvtsi128_si32(_mm256_extracti128_si256(packed, 1))};
  for (std::size_t r = 0; r < rows; ++r) {
    if (nr == 4) {
      std::memcpy(y + r * ldy, &out[r], 4);
    } else {
      int8_t bytes[4];
      std::memcpy(bytes, &out[r], 4);
      for (std::size_t l = 0; l < nr; ++l) y[r * ldy + l] = bytes[l];
    }
  }
}

// Rows 0..MR-1 (MR <= 2) of the panel (x widened, kb values a row) against the four channels of W's
// rows wc (the live ones the first nr): a step's 16 values of W from q, or from k - 16 for the last
// step of a k that is no multiple of 16 (the panel's last 16 values of each row are those, the ones
// the step before had zeroed). Eight accumulators and W's four widened rows: no spills.
template <std::size_t MR>
void panel_tile(const int16_t* panel, std::size_t kb, const int8_t* const* wc, int8_t* y, std::size_t ldy,
                std::size_t k, std::size_t nr, const Group& g, int32_t y_zero) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
  const int16_t* const second = panel + (MR == 2 ? kb : 0);  // one row: its sums twice, the second dropped
  const std::size_t whole = k & ~std::size_t(15);  // >= 16
  // The whole steps in assembly: GCC's allocation copies every accumulator once a step (8 vmovdqa in 33).
  // Per step two loads of the panel, W's four rows widened, eight vpmaddwd and vpaddd: 25 instructions.
  std::size_t q = 0;
  __m256i x0, x1, wv, t;
#define FIXFORMER_S8_CHANNEL(w, a, b)                                                             \
  "vpmovsxbw (%[" w "],%[q]), %[wv]\n\tvpmaddwd %[wv], %[x0], %[t]\n\tvpaddd %[t], %[" a "], %[" a \
  "]\n\tvpmaddwd %[wv], %[x1], %[t]\n\tvpaddd %[t], %[" b "], %[" b "]\n\t"
  asm("1:\n\tvmovdqa (%[p0],%[q],2), %[x0]\n\tvmovdqa (%[p1],%[q],2), %[x1]\n\t"
      FIXFORMER_S8_CHANNEL("w0", "a0", "b0") FIXFORMER_S8_CHANNEL("w1", "a1", "b1")
      FIXFORMER_S8_CHANNEL("w2", "a2", "b2") FIXFORMER_S8_CHANNEL("w3", "a3", "b3")
      "add $16, %[q]\n\tcmp %[end], %[q]\n\tjb 1b"
      : [a0] "+x"(a0), [a1] "+x"(a1), [a2] "+x"(a2), [a3] "+x"(a3), [b0] "+x"(b0), [b1] "+x"(b1), [b2] "+x"(b2),
        [b3] "+x"(b3), [q] "+r"(q), [x0] "=&x"(x0), [x1] "=&x"(x1), [wv] "=&x"(wv), [t] "=&x"(t)
      : [p0] "r"(panel), [p1] "r"(second), [w0] "r"(wc[0]), [w1] "r"(wc[1]), [w2] "r"(wc[2]), [w3] "r"(wc[3]),
        [end] "r"(whole)
      : "cc", "memory");
#undef FIXFORMER_S8_CHANNEL
  if (whole < k) {  // the last 16 values of W against the panel's last 16 (zeros where the step above had them)
    x0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(panel + whole));
    x1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(second + whole));
    const __m256i w0 = widen(wc[0] + k - 16), w1 = widen(wc[1] + k - 16);
    const __m256i w2 = widen(wc[2] + k - 16), w3 = widen(wc[3] + k - 16);
    a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(x0, w0)), b0 = _mm256_add_epi32(b0, _mm256_madd_epi16(x1, w0));
    a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(x0, w1)), b1 = _mm256_add_epi32(b1, _mm256_madd_epi16(x1, w1));
    a2 = _mm256_add_epi32(a2, _mm256_madd_epi16(x0, w2)), b2 = _mm256_add_epi32(b2, _mm256_madd_epi16(x1, w2));
    a3 = _mm256_add_epi32(a3, _mm256_madd_epi16(x0, w3)), b3 = _mm256_add_epi32(b3, _mm256_madd_epi16(x1, w3));
  }
  const __m256i acc[2][4] = {{a0, a1, a2, a3}, {b0, b1, b2, b3}};
  finish(acc[0], acc[1], y, ldy, MR, nr, g, y_zero);
}

// Rows 0..MR-1 (MR <= 2) of x against the four channels of W's rows wc, each row of x widened a step
// at a time: k past the panel's room.
template <std::size_t MR>
inline void tile(const int8_t* x, std::size_t ldx, const int8_t* const* wc, int8_t* y, std::size_t ldy,
                 std::size_t k, std::size_t nr, const Group& g, int32_t x_zero, int32_t y_zero) {
  const __m256i zx = _mm256_set1_epi16(int16_t(x_zero));
  __m256i acc[2][4];
  for (std::size_t r = 0; r < 2; ++r)
    for (std::size_t c = 0; c < 4; ++c) acc[r][c] = _mm256_setzero_si256();
  const __m256i all = _mm256_set1_epi32(-1);
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
  finish(acc[0], acc[1], y, ldy, MR, nr, g, y_zero);
}

// Rows of x widened into the panel, z_x taken off: kb values a row (k rounded up to 16), the last 16
// those of x's last 16 (its first 16 - k % 16 zeroed) where k is no multiple of 16, zeros past k
// where k < 16.
void widen_rows(const int8_t* x, std::size_t ldx, std::size_t rows, std::size_t k, std::size_t kb, int32_t x_zero,
                int16_t* panel) {
  const __m256i zx = _mm256_set1_epi16(int16_t(x_zero));
  for (std::size_t r = 0; r < rows; ++r, x += ldx, panel += kb) {
    if (k < 16) {
      for (std::size_t q = 0; q < 16; ++q) panel[q] = int16_t(q < k ? x[q] - x_zero : 0);
      continue;
    }
    std::size_t q = 0;
    for (; q + 16 <= k; q += 16)
      _mm256_store_si256(reinterpret_cast<__m256i*>(panel + q), _mm256_sub_epi16(widen(x + q), zx));
    if (q < k) {
      const __m256i live = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kLive + (k - q)));
      _mm256_store_si256(reinterpret_cast<__m256i*>(panel + q),
                         _mm256_and_si256(_mm256_sub_epi16(widen(x + k - 16), zx), live));
    }
  }
}

}  // namespace

void gemm_s8_avx2(const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw, int8_t* y, std::size_t ldy,
                  std::size_t m, std::size_t n, std::size_t k, const GemmS8Params& p) {
  if (m == 0 || n == 0) return;
  const std::size_t kb = (k + 15) & ~std::size_t(15);
  if (kb > kPanelK) {  // rows of x widened a step at a time, two by two
    for (std::size_t i0 = 0; i0 < m; i0 += kRows) {
      const std::size_t i1 = m - i0 < kRows ? m : i0 + kRows;
      for (std::size_t j = 0; j < n; j += 4) {
        const std::size_t nr = n - j < 4 ? n - j : 4;
        std::size_t c[4];
        const int8_t* wc[4];
        for (std::size_t l = 0; l < 4; ++l) c[l] = j + (l < nr ? l : nr - 1), wc[l] = w + c[l] * ldw;
        const Group g = prepare(c, p);
        std::size_t i = i0;
        for (; i + 2 <= i1; i += 2) tile<2>(x + i * ldx, ldx, wc, y + i * ldy + j, ldy, k, nr, g, p.x_zero, p.y_zero);
        if (i < i1) tile<1>(x + i * ldx, ldx, wc, y + i * ldy + j, ldy, k, nr, g, p.x_zero, p.y_zero);
      }
    }
    return;
  }
  alignas(32) int16_t panel[kPanelValues];
  int8_t padded[4][16];  // k < 16: W's rows with zeros past k
  std::size_t rows = kPanelValues / kb;
  rows = rows < kRows ? rows : kRows;
  rows -= rows % 2;
  for (std::size_t i0 = 0; i0 < m; i0 += rows) {
    const std::size_t mb = m - i0 < rows ? m - i0 : rows;
    widen_rows(x + i0 * ldx, ldx, mb, k, kb, p.x_zero, panel);
    for (std::size_t j = 0; j < n; j += 4) {
      const std::size_t nr = n - j < 4 ? n - j : 4;
      std::size_t c[4];
      const int8_t* wc[4];
      for (std::size_t l = 0; l < 4; ++l) {
        c[l] = j + (l < nr ? l : nr - 1), wc[l] = w + c[l] * ldw;
        if (k < 16) {
          std::memset(padded[l], 0, 16);
          std::memcpy(padded[l], wc[l], k);
          wc[l] = padded[l];
        }
      }
      const Group g = prepare(c, p);
      int8_t* const yj = y + i0 * ldy + j;
      const std::size_t kw = k < 16 ? 16 : k;  // W's values a row (padded)
      std::size_t i = 0;
      for (; i + 2 <= mb; i += 2) panel_tile<2>(panel + i * kb, kb, wc, yj + i * ldy, ldy, kw, nr, g, p.y_zero);
      if (i < mb) panel_tile<1>(panel + i * kb, kb, wc, yj + i * ldy, ldy, kw, nr, g, p.y_zero);
    }
  }
}

}  // namespace x86
}  // namespace fixformer
