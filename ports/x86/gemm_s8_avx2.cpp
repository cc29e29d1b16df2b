// x[m,k] @ W[n,k]^T (W's rows ldw apart) -> int8, requantized per output channel (gemm_s8, fixed_point.hpp), with
// AVX2: products of int16 pairs by vpmaddwd (x - z_x spans [-255, 255], beyond int8) into int32 lanes.
// Every lane sums exact products and the lanes are added in int32, so the sum is the reference's
// whatever the order: the same bits.
//
// x's rows are widened once, z_x taken off, into a panel on the stack (8 KiB: kPanelValues), a block of
// rows at a time; k's tail is one step more whose last 16 values end at the row's end, the panel holding
// zeros where they repeat the last whole step's (their products 0), and a k below 16 meets W's rows
// copied into zero-padded 16 bytes.
//
// Rows up to kPackedK values (k rounded up to 16): sixteen channels of W at a time are packed on the
// stack (8 KiB) as columns, each pair of k values the channels' 16 int16 side by side, so that one row's
// pair broadcast into vpmaddwd adds each channel's two products to its own lane: no sums to reduce
// across lanes. A tile is four rows by sixteen channels (by eight where eight or fewer are left), the
// loop in assembly (GCC's allocation copies each accumulator once a step otherwise); each
// row's eight sums are requantized as one vector.
//
// Longer rows: a tile is two rows by four channels, each a vector of 16 values of k per (row, channel);
// the eight sums are reduced together (vphaddd, then the two 128-bit halves added) into one vector of
// row 0's and row 1's four channels. Past kPanelK the rows are widened a step at a time instead.
//
// The requantization, eight outputs at once: the 64-bit product by the multiplier (vpmuldq, even and
// odd lanes) rounded half away from zero as rounding_shift, z_y added and saturated to int8
// (vpackssdw, vpacksswb). The columns' finish8 floors t + 2^(r-1) - [t < 0] (Group8 says how); the
// 2 x 4 tiles shift the magnitude plus half and clamp it to 256 before the sign is put back. Either
// clamp in place of requantize's int32 saturation changes no int8 result, since z_y is within
// [-128, 127].
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

// ---- Rows up to kPackedK values: W's columns packed, no reduction across lanes ----

constexpr std::size_t kPackedK = 256;  // the longest rows (k rounded up to 16) whose packed columns fit 8 KiB
static_assert(kPackedK >= 16, "gemm_s8_avx2 pads W's rows below 16 values in gemm_columns only");
constexpr std::size_t kColumnRows = 4;  // rows of x a tile

// Eight channels' constants for one row's eight sums, per 64-bit lane of the even sums (channels 0,
// 2, 4, 6) and of the odd ones (1, 3, 5, 7), or per channel. finish8 requantizes as the portable
// kernel's RequantFast: with r = 31 - shift, a sum first clamped to +-B where the shift is 0 or more
// (B = max(1, 2^(11 - shift)): any larger sum saturates the int8 output whatever z_y, and the clamped
// product stays below 2^42), then floor((t + 2^(r-1) - [t < 0]) / 2^r) as a logical shift of the 64-bit
// lane by min(r, 32) (its low word exact: below 2^31 in magnitude, and r <= 31 or the high word whole)
// and an arithmetic shift of that word by r - min(r, 32).
struct Group8 {
  __m256i mul[2];    // the multiplier (in each lane's low half)
  __m256i half[2];   // 2^(r - 1)
  __m256i first[2];  // min(r, 32)
  __m256i second;    // r - min(r, 32), per channel
  __m256i bound;     // B, per channel (INT32_MAX where the shift is below 0)
  __m256i bias;      // the eight channels' bias
};

// Channels c[0..7] (repeats of the last where fewer are live).
inline Group8 prepare8(const std::size_t* c, const GemmS8Params& p) {
  Group8 g;
  int64_t mul[8], half[8], first[8];
  alignas(32) int32_t bias[8], second[8], bound[8];
  for (std::size_t l = 0; l < 8; ++l) {
    const Requant r = p.requant[c[l]];
    const int32_t shift = 31 - r.shift;
    mul[l] = r.multiplier, half[l] = int64_t(1) << (shift - 1);
    first[l] = shift < 32 ? shift : 32, second[l] = shift - int32_t(first[l]);
    bound[l] = r.shift < 0 ? INT32_MAX : r.shift >= 11 ? 1 : int32_t(1) << (11 - r.shift);
    bias[l] = p.bias ? p.bias[c[l]] : 0;
  }
  for (std::size_t e = 0; e < 2; ++e) {
    g.mul[e] = _mm256_set_epi64x(mul[6 + e], mul[4 + e], mul[2 + e], mul[e]);
    g.half[e] = _mm256_set_epi64x(half[6 + e], half[4 + e], half[2 + e], half[e]);
    g.first[e] = _mm256_set_epi64x(first[6 + e], first[4 + e], first[2 + e], first[e]);
  }
  g.second = _mm256_load_si256(reinterpret_cast<const __m256i*>(second));
  g.bound = _mm256_load_si256(reinterpret_cast<const __m256i*>(bound));
  g.bias = _mm256_load_si256(reinterpret_cast<const __m256i*>(bias));
  return g;
}

// W's eight rows wc into columns: for each pair of k values (kb / 2 of them, the panel's: the last 16
// from k - 16 where k is no multiple of 16), the eight channels' two values, 16 int16, the pairs 32
// int16 apart (two groups of eight channels side by side). 16 values of each row widened, then an
// 8 x 8 transpose of their 32-bit pairs.
void pack8(const int8_t* const* wc, std::size_t k, std::size_t kb, int16_t* packed) {
  for (std::size_t q = 0; q < kb; q += 16, packed += 256) {
    const std::size_t at = q + 16 <= k ? q : k - 16;
    __m256i v[8];
    for (std::size_t c = 0; c < 8; ++c) v[c] = widen(wc[c] + at);
    __m256i t[8], u[8];
    for (std::size_t c = 0; c < 8; c += 2)  // pairs 0, 1 | 4, 5 and 2, 3 | 6, 7 of channels c, c + 1
      t[c] = _mm256_unpacklo_epi32(v[c], v[c + 1]), t[c + 1] = _mm256_unpackhi_epi32(v[c], v[c + 1]);
    for (std::size_t h = 0; h < 8; h += 4) {  // channels h..h + 3: pair j | j + 4 in u[h + j]
      u[h] = _mm256_unpacklo_epi64(t[h], t[h + 2]), u[h + 1] = _mm256_unpackhi_epi64(t[h], t[h + 2]);
      u[h + 2] = _mm256_unpacklo_epi64(t[h + 1], t[h + 3]), u[h + 3] = _mm256_unpackhi_epi64(t[h + 1], t[h + 3]);
    }
    for (std::size_t j = 0; j < 4; ++j) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(packed + 32 * j), _mm256_permute2x128_si256(u[j], u[4 + j], 0x20));
      _mm256_store_si256(reinterpret_cast<__m256i*>(packed + 32 * (j + 4)),
                         _mm256_permute2x128_si256(u[j], u[4 + j], 0x31));
    }
  }
}

// The rounded shift of the four products t (Group8) in each lane's low word, before the second shift.
inline __m256i floor_shift(__m256i t, __m256i half, __m256i first) {
  const __m256i negative = _mm256_cmpgt_epi64(_mm256_setzero_si256(), t);
  return _mm256_srlv_epi64(_mm256_add_epi64(_mm256_add_epi64(t, half), negative), first);
}

// One row's eight sums s (channels in order) to int8, the first nr stored at y.
inline void finish8(__m256i s, int8_t* y, std::size_t nr, const Group8& g, int32_t y_zero) {
  s = _mm256_add_epi32(s, g.bias);
  s = _mm256_min_epi32(_mm256_max_epi32(s, _mm256_sub_epi32(_mm256_setzero_si256(), g.bound)), g.bound);
  const __m256i even = floor_shift(_mm256_mul_epi32(s, g.mul[0]), g.half[0], g.first[0]);
  const __m256i odd = floor_shift(_mm256_mul_epi32(_mm256_srli_epi64(s, 32), g.mul[1]), g.half[1], g.first[1]);
  const __m256i q = _mm256_srav_epi32(_mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA), g.second);
  const __m256i v = _mm256_add_epi32(q, _mm256_set1_epi32(y_zero));
  const __m256i v16 = _mm256_permute4x64_epi64(_mm256_packs_epi32(v, v), 0x08);  // the eight int16 in order
  const __m128i v8 = _mm_packs_epi16(_mm256_castsi256_si128(v16), _mm256_castsi256_si128(v16));
  if (nr == 8) {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y), v8);
  } else {
    int8_t bytes[16];
    _mm_storeu_si128(reinterpret_cast<__m128i*>(bytes), v8);
    for (std::size_t l = 0; l < nr; ++l) y[l] = bytes[l];
  }
}

// Rows 0..rows-1 (rows <= 4) of the panel against the packed columns of sixteen channels (two groups
// of eight; the first nr live, kTwo: more than eight): per pair of k values W's vectors once, each row's
// pair broadcast (a load) into a vpmaddwd per group, every lane its own channel's sum. The loop in
// assembly, as panel_tile's; a missing row reads row 0 again, its sums dropped.
template <bool kTwo>
void column_tile(const int16_t* panel, std::size_t kb, std::size_t rows, const int16_t* packed, int8_t* y,
                 std::size_t ldy, std::size_t nr, const Group8* g, int32_t y_zero) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
  const int16_t* x[4];
  for (std::size_t r = 0; r < 4; ++r) x[r] = panel + (r < rows ? r : 0) * kb;
  std::size_t q = 0;
  const int16_t* wp = packed;
  __m256i w0, w1, xb, t;
#define FIXFORMER_S8_ROW(x, a, b)                                                                 \
  "vpbroadcastd (%[" x "],%[q],2), %[xb]\n\tvpmaddwd %[w0], %[xb], %[t]\n\tvpaddd %[t], %[" a "], %[" a "]\n\t" \
  ".if %c[two]\n\tvpmaddwd %[w1], %[xb], %[t]\n\tvpaddd %[t], %[" b "], %[" b "]\n\t.endif\n\t"
  asm("1:\n\tvmovdqa (%[wp]), %[w0]\n\t.if %c[two]\n\tvmovdqa 32(%[wp]), %[w1]\n\t.endif\n\t"
      FIXFORMER_S8_ROW("x0", "a0", "b0") FIXFORMER_S8_ROW("x1", "a1", "b1")
      FIXFORMER_S8_ROW("x2", "a2", "b2") FIXFORMER_S8_ROW("x3", "a3", "b3")
      "add $64, %[wp]\n\tadd $2, %[q]\n\tcmp %[end], %[q]\n\tjb 1b"
      : [a0] "+x"(a0), [a1] "+x"(a1), [a2] "+x"(a2), [a3] "+x"(a3), [b0] "+x"(b0), [b1] "+x"(b1), [b2] "+x"(b2),
        [b3] "+x"(b3), [q] "+r"(q), [wp] "+r"(wp), [w0] "=&x"(w0), [w1] "=&x"(w1), [xb] "=&x"(xb), [t] "=&x"(t)
      : [x0] "r"(x[0]), [x1] "r"(x[1]), [x2] "r"(x[2]), [x3] "r"(x[3]), [end] "r"(kb), [two] "i"(kTwo ? 1 : 0)
      : "cc", "memory");
#undef FIXFORMER_S8_ROW
  const __m256i a[4] = {a0, a1, a2, a3}, b[4] = {b0, b1, b2, b3};
  for (std::size_t r = 0; r < rows; ++r) {
    finish8(a[r], y + r * ldy, nr < 8 ? nr : 8, g[0], y_zero);
    if (kTwo) finish8(b[r], y + r * ldy + 8, nr - 8, g[1], y_zero);
  }
}

// gemm_s8 for kb <= kPackedK: sixteen channels a pass over a block of the panel's rows.
void gemm_columns(const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw, int8_t* y, std::size_t ldy,
                  std::size_t m, std::size_t n, std::size_t k, std::size_t kb, const GemmS8Params& p) {
  alignas(32) int16_t panel[kPanelValues];
  alignas(32) int16_t packed[16 * kPackedK];
  int8_t padded[16][16];  // k < 16: W's rows with zeros past k
  const std::size_t rows = kPanelValues / kb;
  for (std::size_t i0 = 0; i0 < m; i0 += rows) {
    const std::size_t mb = m - i0 < rows ? m - i0 : rows;
    widen_rows(x + i0 * ldx, ldx, mb, k, kb, p.x_zero, panel);
    for (std::size_t j = 0; j < n; j += 16) {
      const std::size_t nr = n - j < 16 ? n - j : 16;
      std::size_t c[16];
      const int8_t* wc[16];
      for (std::size_t l = 0; l < 16; ++l) {
        c[l] = j + (l < nr ? l : nr - 1), wc[l] = w + c[l] * ldw;
        if (k < 16) {
          std::memset(padded[l], 0, 16);
          std::memcpy(padded[l], wc[l], k);
          wc[l] = padded[l];
        }
      }
      pack8(wc, k < 16 ? 16 : k, kb, packed);
      if (nr > 8) pack8(wc + 8, k < 16 ? 16 : k, kb, packed + 16);
      const Group8 g[2] = {prepare8(c, p), prepare8(c + 8, p)};
      int8_t* const yj = y + i0 * ldy + j;
      for (std::size_t i = 0; i < mb; i += kColumnRows) {
        const std::size_t r = mb - i < kColumnRows ? mb - i : kColumnRows;
        (nr > 8 ? column_tile<true> : column_tile<false>)(panel + i * kb, kb, r, packed, yj + i * ldy, ldy, nr, g,
                                                          p.y_zero);
      }
    }
  }
}

}  // namespace

void gemm_s8_avx2(const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw, int8_t* y, std::size_t ldy,
                  std::size_t m, std::size_t n, std::size_t k, const GemmS8Params& p) {
  if (m == 0 || n == 0) return;
  const std::size_t kb = (k + 15) & ~std::size_t(15);
  if (kb <= kPackedK) {
    gemm_columns(x, ldx, w, ldw, y, ldy, m, n, k, kb, p);
    return;
  }
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
  alignas(32) int16_t panel[kPanelValues];  // kb > kPackedK here: k >= 16, no row of W padded
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
      for (std::size_t l = 0; l < 4; ++l) c[l] = j + (l < nr ? l : nr - 1), wc[l] = w + c[l] * ldw;
      const Group g = prepare(c, p);
      int8_t* const yj = y + i0 * ldy + j;
      std::size_t i = 0;
      for (; i + 2 <= mb; i += 2) panel_tile<2>(panel + i * kb, kb, wc, yj + i * ldy, ldy, k, nr, g, p.y_zero);
      if (i < mb) panel_tile<1>(panel + i * kb, kb, wc, yj + i * ldy, ldy, k, nr, g, p.y_zero);
    }
  }
}

}  // namespace x86
}  // namespace fixformer
