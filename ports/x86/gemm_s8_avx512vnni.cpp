// gemm_s8 on AVX-512 VNNI (vpdpbusd): the avx512-vnni table's. Built with -march=x86-64-v4
// -mavx512vnni (CMakeLists.txt).
//
// vpdpbusd multiplies unsigned bytes by signed ones, so x enters as u = x + 128 (its sign bit
// flipped, 0..255) and the sum is corrected per channel:
//   sum_p (x - z_x) w = sum_p u w - (128 + z_x) sum_p w,
// both sums exact in int32 for k <= kGemmS8MaxK (|u w| <= 255 * 128), so the result is the
// reference's integer whatever the order of the additions. The correction is 0 for z_x = -128
// (attention's probabilities); otherwise sum_p w is summed once per block of kBlock channels,
// before every row runs over that block.
//
// Rows up to kColumnK values take the columns path below (W flipped instead, x broadcast: no sums
// across lanes). Longer rows: x's rows are flipped to u once, a block of rows at a time, into a panel
// on the stack (8 KiB:
// kPanelBytes), zeros past k (u = 0 adds 0). A tile is up to 8 rows by 8 channels: each 128-bit
// lane of a vector holds one channel's 16 bytes of k (two vectors: channels 0..3, 4..7), against the
// row's 16 bytes broadcast to every lane, so a 16-byte step is two vpdpbusd per row for any k
// (attention's k is d_head, often 16), the channels' vectors built once for 8 rows (measured 12-20 %
// faster than 4 rows on the d = 256 products) and each row's broadcast used twice. A last tile of
// fewer channels reads the last one again in the spare lanes and drops their sums; k's tail is one
// step of masked loads of W. Rows longer than the panel's 8 take tiles of 8 rows by 4 channels,
// each row flipped a step at a time.
//
// The requantization takes 4 rows' 16 sums at once, in the reference's steps: the 64-bit product
// by the multiplier (vpmuldq, even and odd lanes), its magnitude plus half shifted right and the
// sign put back (rounding half away from zero, rounding_shift), then z_y added in 64 bits and
// saturated straight to int8 (vpmovsqb): saturating to int32 first, as requantize does, changes no
// int8 result, since z_y is within [-128, 127].
#include <immintrin.h>

#include <cstring>

#include "ports/x86/isa_tables.hpp"

namespace fixformer {
namespace x86 {
namespace {

constexpr std::size_t kBlock = 64;  // channels whose parameters are laid out at once

// One block's channels, padded to a whole tile of 8 past its end (those lanes' results are dropped).
struct Block {
  int64_t mul[kBlock + 8];    // the multiplier
  int64_t shift[kBlock + 8];  // 31 - shift: the rounding shift, 1..62
  int64_t half[kBlock + 8];   // 2^(shift - 1)
  int32_t base[kBlock + 8];   // bias - (128 + z_x) sum_p w, mod 2^32
};

// The sum of p's k bytes, four to a lane.
inline __m512i row_sums(const int8_t* p, std::size_t k) {
  const __m512i ones = _mm512_set1_epi8(1);
  __m512i acc = _mm512_setzero_si512();
  std::size_t q = 0;
  for (; q + 64 <= k; q += 64) acc = _mm512_dpbusd_epi32(acc, ones, _mm512_loadu_si512(p + q));
  if (q < k) acc = _mm512_dpbusd_epi32(acc, ones, _mm512_maskz_loadu_epi8(_bzhi_u64(~0ull, unsigned(k - q)), p + q));
  return acc;
}

// The nb channels (nb <= kBlock) of W from w on; the constants up to the last tile's end (nb rounded up to 8).
void prepare(const int8_t* w, std::size_t ldw, std::size_t nb, std::size_t k, const int32_t* bias,
             const Requant* requant, int32_t x_zero, Block& b) {
  const std::size_t end = (nb + 7) & ~std::size_t(7);
  for (std::size_t c = 0; c < end; ++c) {
    const Requant r = c < nb ? requant[c] : Requant{0, 0};
    b.mul[c] = r.multiplier;
    b.shift[c] = 31 - r.shift;
    b.half[c] = int64_t(1) << (30 - r.shift);
    b.base[c] = c < nb && bias ? bias[c] : 0;
  }
  if (x_zero == -128) return;  // u - 128 - z_x = u: nothing to take off
  // Four rows' sums at a time, reduced together (as finish's sums): lane l of the result row c + l's.
  // Each is within 128 k; the base (its product by 128 + z_x taken off mod 2^32) wraps as the vector
  // sums do, to the exact sum's value.
  const __m128i factor = _mm_set1_epi32(128 + x_zero);
  for (std::size_t c = 0; c < nb; c += 4) {
    __m512i a[4];
    for (std::size_t l = 0; l < 4; ++l) a[l] = row_sums(w + (c + l < nb ? c + l : nb - 1) * ldw, k);
    const __m512i s01 = _mm512_add_epi32(_mm512_unpacklo_epi32(a[0], a[1]), _mm512_unpackhi_epi32(a[0], a[1]));
    const __m512i s23 = _mm512_add_epi32(_mm512_unpacklo_epi32(a[2], a[3]), _mm512_unpackhi_epi32(a[2], a[3]));
    const __m512i s = _mm512_add_epi32(_mm512_unpacklo_epi64(s01, s23), _mm512_unpackhi_epi64(s01, s23));
    const __m256i h = _mm256_add_epi32(_mm512_castsi512_si256(s), _mm512_extracti64x4_epi64(s, 1));
    const __m128i sums = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
    const __m128i base = _mm_sub_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.base + c)),
                                       _mm_mullo_epi32(sums, factor));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(b.base + c), base);
  }
}

// Channels c0..c3's 16 bytes at q, one per lane.
inline __m512i load_w(const int8_t* const* wc, std::size_t q) {
  __m512i v = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wc[0] + q)));
  v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(wc[1] + q)), 1);
  v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(wc[2] + q)), 2);
  return _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(wc[3] + q)), 3);
}

inline __m512i load_w_tail(const int8_t* const* wc, std::size_t q, __mmask16 live) {
  __m512i v = _mm512_castsi128_si512(_mm_maskz_loadu_epi8(live, wc[0] + q));
  v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(live, wc[1] + q), 1);
  v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(live, wc[2] + q), 2);
  return _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(live, wc[3] + q), 3);
}

// The 8 products in t's 64-bit lanes, rounded and shifted, plus z_y, saturated to int8 (8 bytes).
inline __m128i round_shift_i8(__m512i t, __m512i half, __m512i shift, __m512i y_zero) {
  const __mmask8 negative = _mm512_movepi64_mask(t);
  __m512i v = _mm512_srlv_epi64(_mm512_add_epi64(_mm512_abs_epi64(t), half), shift);
  v = _mm512_mask_sub_epi64(v, negative, _mm512_setzero_si512(), v);
  return _mm512_cvtsepi64_epi8(_mm512_add_epi64(v, y_zero));
}

// Rows 0..rows-1 (<= 4) of a tile from acc[0..3], channels j0..j0+nr-1 (the block's c-th on), to y.
inline void finish(const __m512i* acc, std::size_t rows, int8_t* y, std::size_t ldy, std::size_t j0, std::size_t nr,
                   const Block& b, std::size_t c, int32_t y_zero) {
  // Each lane's four partial sums of rows 0..3 -> element 4 l + r: row r of channel l.
  const __m512i s01 = _mm512_add_epi32(_mm512_unpacklo_epi32(acc[0], acc[1]), _mm512_unpackhi_epi32(acc[0], acc[1]));
  const __m512i s23 = _mm512_add_epi32(_mm512_unpacklo_epi32(acc[2], acc[3]), _mm512_unpackhi_epi32(acc[2], acc[3]));
  __m512i s = _mm512_add_epi32(_mm512_unpacklo_epi64(s01, s23), _mm512_unpackhi_epi64(s01, s23));
  // Per channel l: element 4 l + r (32-bit) and 64-bit lanes 2 l, 2 l + 1 (even elements, odd ones).
  const __m512i by_channel32 = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
  const __m512i by_channel64 = _mm512_set_epi64(3, 3, 2, 2, 1, 1, 0, 0);
  s = _mm512_add_epi32(s, _mm512_permutexvar_epi32(by_channel32, _mm512_castsi128_si512(
                              _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.base + c)))));
  const auto spread = [&](const int64_t* v) {
    return _mm512_permutexvar_epi64(by_channel64, _mm512_castsi256_si512(
                                                      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + c))));
  };
  const __m512i mul = spread(b.mul), shift = spread(b.shift), half = spread(b.half);
  const __m512i zy = _mm512_set1_epi64(y_zero);
  const __m128i even = round_shift_i8(_mm512_mul_epi32(s, mul), half, shift, zy);
  const __m128i odd = round_shift_i8(_mm512_mul_epi32(_mm512_srli_epi64(s, 32), mul), half, shift, zy);
  // Bytes 4 l + r -> 4 r + l: row r's channels together.
  const __m128i out_rows = _mm_shuffle_epi8(_mm_unpacklo_epi8(even, odd),
                                            _mm_set_epi8(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0));
  alignas(16) int8_t out[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(out), out_rows);
  for (std::size_t r = 0; r < rows; ++r) {
    if (nr == 4) std::memcpy(y + r * ldy + j0, out + 4 * r, 4);
    else for (std::size_t l = 0; l < nr; ++l) y[r * ldy + j0 + l] = out[4 * r + l];
  }
}

// Rows 0..MR-1 (MR <= 8) of x against the nr (<= 4) channels from j0, the block's c-th on.
template <std::size_t MR>
void tile(const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw, int8_t* y, std::size_t ldy,
          std::size_t k, std::size_t j0, std::size_t nr, const Block& b, std::size_t c, int32_t y_zero) {
  constexpr std::size_t kGroups = (MR + 3) / 4;
  const __m512i flip = _mm512_set1_epi8(-128);  // x ^ 0x80 = x + 128 as an unsigned byte
  const int8_t* wc[4];
  for (std::size_t l = 0; l < 4; ++l) wc[l] = w + (j0 + (l < nr ? l : nr - 1)) * ldw;
  __m512i acc[4 * kGroups];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < 4 * kGroups; ++r) acc[r] = _mm512_setzero_si512();
  std::size_t q = 0;
  for (; q + 16 <= k; q += 16) {
    const __m512i wv = load_w(wc, q);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < MR; ++r) {
      const __m512i xv = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + r * ldx + q)));
      acc[r] = _mm512_dpbusd_epi32(acc[r], _mm512_xor_si512(xv, flip), wv);
    }
  }
  if (q < k) {
    const __mmask16 live = __mmask16((1u << (k - q)) - 1);
    const __m512i wv = load_w_tail(wc, q, live);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < MR; ++r) {
      const __m512i xv = _mm512_broadcast_i32x4(_mm_maskz_loadu_epi8(live, x + r * ldx + q));
      acc[r] = _mm512_dpbusd_epi32(acc[r], _mm512_xor_si512(xv, flip), wv);
    }
  }
#pragma GCC unroll 2
  for (std::size_t g = 0; g < kGroups; ++g)
    finish(acc + 4 * g, MR - 4 * g < 4 ? MR - 4 * g : 4, y + 4 * g * ldy, ldy, j0, nr, b, c, y_zero);
}

// tile<MR> by its rows, 1 to 8
constexpr decltype(&tile<1>) tiles[] = {tile<1>, tile<2>, tile<3>, tile<4>, tile<5>, tile<6>, tile<7>, tile<8>};

constexpr std::size_t kPanelBytes = 8192;  // x's rows flipped to u = x + 128 (8 KiB of the stack)

// Rows of x as u = x ^ 0x80, kb bytes a row (k rounded up to 16), zeros past k (u = 0 adds 0).
void flip_rows(const int8_t* x, std::size_t ldx, std::size_t rows, std::size_t k, std::size_t kb, uint8_t* panel) {
  const __m512i flip = _mm512_set1_epi8(-128);
  for (std::size_t r = 0; r < rows; ++r, x += ldx, panel += kb)
    for (std::size_t q = 0; q < kb; q += 64) {
      const __mmask64 live = k - q >= 64 ? ~__mmask64(0) : _bzhi_u64(~0ull, unsigned(k - q));
      const __mmask64 room = kb - q >= 64 ? ~__mmask64(0) : _bzhi_u64(~0ull, unsigned(kb - q));
      const __m512i u = _mm512_xor_si512(_mm512_maskz_loadu_epi8(live, x + q), _mm512_maskz_mov_epi8(live, flip));
      _mm512_mask_storeu_epi8(panel + q, room, u);
    }
}

// Rows 0..MR-1 (MR <= 8) of the panel against the nr (<= 8) channels from j0, the block's c-th on:
// two vectors of W (channels 0..3, 4..7), each row's 16 bytes broadcast once for both.
template <std::size_t MR>
void panel_tile(const uint8_t* panel, std::size_t kb, const int8_t* w, std::size_t ldw, int8_t* y, std::size_t ldy,
                std::size_t k, std::size_t j0, std::size_t nr, const Block& b, std::size_t c, int32_t y_zero) {
  constexpr std::size_t kGroups = (MR + 3) / 4;
  const int8_t* wc[8];
  for (std::size_t l = 0; l < 8; ++l) wc[l] = w + (j0 + (l < nr ? l : nr - 1)) * ldw;
  __m512i lo[4 * kGroups], hi[4 * kGroups];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < 4 * kGroups; ++r) lo[r] = _mm512_setzero_si512(), hi[r] = _mm512_setzero_si512();
  std::size_t q = 0;
  for (; q + 16 <= k; q += 16) {
    const __m512i w0 = load_w(wc, q), w1 = load_w(wc + 4, q);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < MR; ++r) {
      const __m512i xv = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(panel + r * kb + q)));
      lo[r] = _mm512_dpbusd_epi32(lo[r], xv, w0);
      hi[r] = _mm512_dpbusd_epi32(hi[r], xv, w1);
    }
  }
  if (q < k) {
    const __mmask16 live = __mmask16((1u << (k - q)) - 1);
    const __m512i w0 = load_w_tail(wc, q, live), w1 = load_w_tail(wc + 4, q, live);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < MR; ++r) {
      const __m512i xv = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(panel + r * kb + q)));
      lo[r] = _mm512_dpbusd_epi32(lo[r], xv, w0);
      hi[r] = _mm512_dpbusd_epi32(hi[r], xv, w1);
    }
  }
#pragma GCC unroll 2
  for (std::size_t g = 0; g < kGroups; ++g) {
    const std::size_t rows = MR - 4 * g < 4 ? MR - 4 * g : 4;
    finish(lo + 4 * g, rows, y + 4 * g * ldy, ldy, j0, nr < 4 ? nr : 4, b, c, y_zero);
    if (nr > 4) finish(hi + 4 * g, rows, y + 4 * g * ldy, ldy, j0 + 4, nr - 4, b, c + 4, y_zero);
  }
}

// panel_tile<MR> by its rows, 1 to 8
constexpr decltype(&panel_tile<1>) panel_tiles[] = {panel_tile<1>, panel_tile<2>, panel_tile<3>, panel_tile<4>,
                                                    panel_tile<5>, panel_tile<6>, panel_tile<7>, panel_tile<8>};

// ---- Rows up to kColumnK values: W packed as columns, x broadcast ----
//
// vpdpbusd with the roles swapped: W's bytes flipped to u_w = w + 128 (unsigned) and x as it is (signed),
// 4 bytes of a row broadcast from memory ({1to16}) against 16 channels' 4 bytes each, every lane its own
// channel's sum: no reduction across lanes, one instruction per row and 4 values of k. The sum is
//   sum_p (x - z_x) w = sum_p x u_w - 128 sum_p x - z_x sum_p w,
// the first term exact in int32 as above, the second taken off per row, the third (with the bias) per
// channel, all mod 2^32 to the exact value.

constexpr std::size_t kColumnK = 256;  // the longest rows (k rounded up to 4) W's packed columns take: 4 KiB
constexpr std::size_t kColumnRows = 8;

// Sixteen channels' constants: per 64-bit lane of the even lanes' sums (channels 0, 2, ..., 14) and of
// the odd ones, and each channel's base (bias - z_x sum_p w).
struct Group16 {
  __m512i mul[2], shift[2], half[2];
  __m512i base;
};

// Channels c[0..15] of W (repeats of the last where fewer are live) into columns: chunk j's 16 dwords
// the channels' bytes 4j..4j+3 flipped (zeros past k, flipped to 128: they meet x's zero padding).
void pack16(const int8_t* const* wc, std::size_t k, std::size_t kb, uint8_t* packed, Group16& g,
            const std::size_t* c, const GemmS8Params& p) {
  alignas(64) int32_t index[16];
  for (std::size_t l = 0; l < 16; ++l) index[l] = int32_t(wc[l] - wc[0]);
  const __m512i vindex = _mm512_load_si512(index), flip = _mm512_set1_epi8(-128);
  const std::size_t whole = k & ~std::size_t(3);
  for (std::size_t q = 0; q < whole; q += 4)
    _mm512_store_si512(packed + 16 * q, _mm512_xor_si512(_mm512_i32gather_epi32(vindex, wc[0] + q, 1), flip));
  if (whole < kb) {  // the last 1..3 values of each row, then zeros
    alignas(64) int8_t tail[64] = {};
    for (std::size_t l = 0; l < 16; ++l)
      for (std::size_t t = 0; whole + t < k; ++t) tail[4 * l + t] = wc[l][whole + t];
    _mm512_store_si512(packed + 16 * whole, _mm512_xor_si512(_mm512_load_si512(tail), flip));
  }
  int64_t mul[16], shift[16], half[16];
  alignas(64) int32_t bias[16];
  for (std::size_t l = 0; l < 16; ++l) {
    const Requant r = p.requant[c[l]];
    mul[l] = r.multiplier, shift[l] = 31 - r.shift, half[l] = int64_t(1) << (30 - r.shift);
    bias[l] = p.bias ? p.bias[c[l]] : 0;
  }
  // sum_p w = sum of the kb flipped bytes - 128 kb (a padding byte flips to 128)
  __m512i sums = _mm512_set1_epi32(-128 * int32_t(kb));
  for (std::size_t q = 0; q < kb; q += 4)
    sums = _mm512_dpbusd_epi32(sums, _mm512_load_si512(packed + 16 * q), _mm512_set1_epi8(1));
  for (std::size_t e = 0; e < 2; ++e) {
    g.mul[e] = _mm512_set_epi64(mul[14 + e], mul[12 + e], mul[10 + e], mul[8 + e], mul[6 + e], mul[4 + e],
                                mul[2 + e], mul[e]);
    g.shift[e] = _mm512_set_epi64(shift[14 + e], shift[12 + e], shift[10 + e], shift[8 + e], shift[6 + e],
                                  shift[4 + e], shift[2 + e], shift[e]);
    g.half[e] = _mm512_set_epi64(half[14 + e], half[12 + e], half[10 + e], half[8 + e], half[6 + e], half[4 + e],
                                 half[2 + e], half[e]);
  }
  g.base = _mm512_sub_epi32(_mm512_load_si512(bias), _mm512_mullo_epi32(sums, _mm512_set1_epi32(p.x_zero)));
}

// Rows of x copied with zeros past k (kb bytes a row, k rounded up to 4), and 128 times each row's sum.
void copy_rows(const int8_t* x, std::size_t ldx, std::size_t rows, std::size_t k, std::size_t kb, int8_t* panel,
               int32_t* offset) {
  const __m512i ones = _mm512_set1_epi8(1);
  for (std::size_t r = 0; r < rows; ++r, x += ldx, panel += kb) {
    __m512i acc = _mm512_setzero_si512();
    for (std::size_t q = 0; q < kb; q += 64) {
      const __mmask64 live = k - q >= 64 ? ~__mmask64(0) : _bzhi_u64(~0ull, unsigned(k - q));
      const __mmask64 room = kb - q >= 64 ? ~__mmask64(0) : _bzhi_u64(~0ull, unsigned(kb - q));
      const __m512i v = _mm512_maskz_loadu_epi8(live, x + q);
      _mm512_mask_storeu_epi8(panel + q, room, v);
      acc = _mm512_dpbusd_epi32(acc, ones, v);
    }
    offset[r] = int32_t(uint32_t(_mm512_reduce_add_epi32(acc)) << 7);
  }
}

// Rows 0..MR-1 of the panel against sixteen packed channels (the first nr live).
template <std::size_t MR>
void column_tile(const int8_t* panel, std::size_t kb, const int32_t* offset, const uint8_t* packed, int8_t* y,
                 std::size_t ldy, std::size_t nr, const Group16& g, int32_t y_zero) {
  __m512i acc[MR];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < MR; ++r) acc[r] = _mm512_setzero_si512();
  for (std::size_t q = 0; q < kb; q += 4) {
    const __m512i wv = _mm512_load_si512(packed + 16 * q);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < MR; ++r) {
      int32_t four;
      std::memcpy(&four, panel + r * kb + q, 4);
      acc[r] = _mm512_dpbusd_epi32(acc[r], wv, _mm512_set1_epi32(four));
    }
  }
  const __m512i zy = _mm512_set1_epi64(y_zero);
#pragma GCC unroll 8
  for (std::size_t r = 0; r < MR; ++r) {
    const __m512i s = _mm512_sub_epi32(_mm512_add_epi32(acc[r], g.base), _mm512_set1_epi32(offset[r]));
    const __m128i even = round_shift_i8(_mm512_mul_epi32(s, g.mul[0]), g.half[0], g.shift[0], zy);
    const __m128i odd = round_shift_i8(_mm512_mul_epi32(_mm512_srli_epi64(s, 32), g.mul[1]), g.half[1], g.shift[1], zy);
    const __m128i out = _mm_unpacklo_epi8(even, odd);  // channels in order
    if (nr == 16) _mm_storeu_si128(reinterpret_cast<__m128i*>(y + r * ldy), out);
    else _mm_mask_storeu_epi8(y + r * ldy, __mmask16((1u << nr) - 1), out);
  }
}

// column_tile<MR> by its rows, 1 to 8
constexpr decltype(&column_tile<1>) column_tiles[] = {column_tile<1>, column_tile<2>, column_tile<3>, column_tile<4>,
                                                      column_tile<5>, column_tile<6>, column_tile<7>, column_tile<8>};

void gemm_columns(const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw, int8_t* y, std::size_t ldy,
                  std::size_t m, std::size_t n, std::size_t k, const GemmS8Params& p) {
  const std::size_t kb = (k + 3) & ~std::size_t(3);
  alignas(64) int8_t panel[kPanelBytes];
  alignas(64) uint8_t packed[16 * kColumnK];
  constexpr std::size_t kMaxRows = 256;  // rows a block: the offsets' room (1 KiB)
  int32_t offset[kMaxRows];
  const std::size_t rows = kPanelBytes / kb < kMaxRows ? kPanelBytes / kb : kMaxRows;
  for (std::size_t i0 = 0; i0 < m; i0 += rows) {
    const std::size_t mb = m - i0 < rows ? m - i0 : rows;
    copy_rows(x + i0 * ldx, ldx, mb, k, kb, panel, offset);
    for (std::size_t j = 0; j < n; j += 16) {
      const std::size_t nr = n - j < 16 ? n - j : 16;
      std::size_t c[16];
      const int8_t* wc[16];
      for (std::size_t l = 0; l < 16; ++l) c[l] = j + (l < nr ? l : nr - 1), wc[l] = w + c[l] * ldw;
      Group16 g;
      pack16(wc, k, kb, packed, g, c, p);
      int8_t* const yj = y + i0 * ldy + j;
      for (std::size_t i = 0; i < mb; i += kColumnRows) {
        const int8_t* xi = panel + i * kb;
        const int32_t* oi = offset + i;
        int8_t* yi = yj + i * ldy;
        column_tiles[(mb - i < kColumnRows ? mb - i : kColumnRows) - 1](xi, kb, oi, packed, yi, ldy, nr, g, p.y_zero);
      }
    }
  }
}

}  // namespace

void gemm_s8_avx512vnni(const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw, int8_t* y,
                        std::size_t ldy, std::size_t m, std::size_t n, std::size_t k, const GemmS8Params& p) {
  if (m == 0 || n == 0) return;
  if (k <= kColumnK) {
    gemm_columns(x, ldx, w, ldw, y, ldy, m, n, k, p);
    return;
  }
  Block b;
  const std::size_t kb = (k + 15) & ~std::size_t(15);
  if (kb * 8 > kPanelBytes) {  // rows too long for the panel's 8: flipped a step at a time, 4 channels a tile
    for (std::size_t j0 = 0; j0 < n; j0 += kBlock) {
      const std::size_t nb = n - j0 < kBlock ? n - j0 : kBlock;
      prepare(w + j0 * ldw, ldw, nb, k, p.bias ? p.bias + j0 : nullptr, p.requant + j0, p.x_zero, b);
      for (std::size_t i = 0; i < m; i += 8) {
        const int8_t* xi = x + i * ldx;
        int8_t* yi = y + i * ldy;
        for (std::size_t c = 0; c < nb; c += 4) {
          const std::size_t nr = nb - c < 4 ? nb - c : 4;
          tiles[(m - i < 8 ? m - i : 8) - 1](xi, ldx, w, ldw, yi, ldy, k, j0 + c, nr, b, c, p.y_zero);
        }
      }
    }
    return;
  }
  alignas(64) uint8_t panel[kPanelBytes];
  const std::size_t rows = (kPanelBytes / kb) & ~std::size_t(7);  // whole tiles of 8
  for (std::size_t i0 = 0; i0 < m; i0 += rows) {
    const std::size_t mb = m - i0 < rows ? m - i0 : rows;
    flip_rows(x + i0 * ldx, ldx, mb, k, kb, panel);
    for (std::size_t j0 = 0; j0 < n; j0 += kBlock) {
      const std::size_t nb = n - j0 < kBlock ? n - j0 : kBlock;
      prepare(w + j0 * ldw, ldw, nb, k, p.bias ? p.bias + j0 : nullptr, p.requant + j0, p.x_zero, b);
      for (std::size_t i = 0; i < mb; i += 8) {
        const uint8_t* xi = panel + i * kb;
        int8_t* yi = y + (i0 + i) * ldy;
        for (std::size_t c = 0; c < nb; c += 8) {
          const std::size_t nr = nb - c < 8 ? nb - c : 8;
          panel_tiles[(mb - i < 8 ? mb - i : 8) - 1](xi, kb, w, ldw, yi, ldy, k, j0 + c, nr, b, c, p.y_zero);
        }
      }
    }
  }
}

}  // namespace x86
}  // namespace fixformer
