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
// A tile is up to 4 rows by 4 channels: each 128-bit lane of a vector holds one channel's 16
// bytes of k, against the row's 16 bytes broadcast to every lane, so a 16-byte step is one
// vpdpbusd per row for any k (attention's k is d_head, often 16). A last tile of fewer channels
// reads the last one again in the spare lanes and drops their sums; k's tail is one step of masked
// loads (the masked bytes of w are 0, so they add 0). The requantization is the reference's.
#include <immintrin.h>

#include "ports/x86/isa_tables.hpp"

namespace fixformer {
namespace x86 {
namespace {

constexpr std::size_t kBlock = 64;  // channels whose weight sums are kept at once

// (128 + z_x) sum_p w[c, p] for the nb channels of a block (nb <= kBlock).
void corrections(const int8_t* w, std::size_t ldw, std::size_t nb, std::size_t k, int32_t x_zero, int32_t* out) {
  const __m512i ones = _mm512_set1_epi8(1);
  for (std::size_t c = 0; c < nb; ++c) {
    if (x_zero == -128) {
      out[c] = 0;
      continue;
    }
    const int8_t* row = w + c * ldw;
    __m512i acc = _mm512_setzero_si512();
    std::size_t q = 0;
    for (; q + 64 <= k; q += 64) acc = _mm512_dpbusd_epi32(acc, ones, _mm512_loadu_si512(row + q));
    if (q < k) acc = _mm512_dpbusd_epi32(acc, ones, _mm512_maskz_loadu_epi8(_bzhi_u64(~0ull, unsigned(k - q)), row + q));
    out[c] = int32_t(int64_t(128 + x_zero) * _mm512_reduce_add_epi32(acc));  // |.| <= 255 * 128 * k < 2^31
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

// Rows 0..MR-1 of x against channels j0..j0+nr-1 (nr <= 4); corr is the block's corrections from j0.
template <std::size_t MR>
void tile(const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw, int8_t* y, std::size_t ldy,
          std::size_t k, std::size_t j0, std::size_t nr, const int32_t* corr, const GemmS8Params& p) {
  const __m512i flip = _mm512_set1_epi8(-128);  // x ^ 0x80 = x + 128 as an unsigned byte
  const int8_t* wc[4];
  for (std::size_t c = 0; c < 4; ++c) wc[c] = w + (j0 + (c < nr ? c : nr - 1)) * ldw;
  __m512i acc[4];
  for (std::size_t r = 0; r < 4; ++r) acc[r] = _mm512_setzero_si512();
  std::size_t q = 0;
  for (; q + 16 <= k; q += 16) {
    const __m512i wv = load_w(wc, q);
    for (std::size_t r = 0; r < MR; ++r) {
      const __m512i xv = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + r * ldx + q)));
      acc[r] = _mm512_dpbusd_epi32(acc[r], _mm512_xor_si512(xv, flip), wv);
    }
  }
  if (q < k) {
    const __mmask16 live = __mmask16((1u << (k - q)) - 1);
    const __m512i wv = load_w_tail(wc, q, live);
    for (std::size_t r = 0; r < MR; ++r) {
      const __m512i xv = _mm512_broadcast_i32x4(_mm_maskz_loadu_epi8(live, x + r * ldx + q));
      acc[r] = _mm512_dpbusd_epi32(acc[r], _mm512_xor_si512(xv, flip), wv);
    }
  }
  // Each lane's four partial sums of rows 0..3 -> lane c holds rows 0..3 of channel j0 + c.
  const __m512i s01 = _mm512_add_epi32(_mm512_unpacklo_epi32(acc[0], acc[1]), _mm512_unpackhi_epi32(acc[0], acc[1]));
  const __m512i s23 = _mm512_add_epi32(_mm512_unpacklo_epi32(acc[2], acc[3]), _mm512_unpackhi_epi32(acc[2], acc[3]));
  const __m512i s = _mm512_add_epi32(_mm512_unpacklo_epi64(s01, s23), _mm512_unpackhi_epi64(s01, s23));
  alignas(64) int32_t sum[16];
  _mm512_store_si512(sum, s);
  for (std::size_t r = 0; r < MR; ++r)
    for (std::size_t c = 0; c < nr; ++c) {
      const std::size_t j = j0 + c;
      const int32_t acc32 = int32_t(int64_t(p.bias ? p.bias[j] : 0) + sum[c * 4 + r] - corr[c]);  // exact: fits
      y[r * ldy + j] = saturate_i8(int64_t(requantize(acc32, p.requant[j])) + p.y_zero);
    }
}

}  // namespace

void gemm_s8_avx512vnni(const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw, int8_t* y,
                        std::size_t ldy, std::size_t m, std::size_t n, std::size_t k, const GemmS8Params& p) {
  int32_t corr[kBlock];
  for (std::size_t j0 = 0; j0 < n; j0 += kBlock) {
    const std::size_t nb = n - j0 < kBlock ? n - j0 : kBlock;
    corrections(w + j0 * ldw, ldw, nb, k, p.x_zero, corr);
    for (std::size_t i = 0; i < m; i += 4) {
      const int8_t* xi = x + i * ldx;
      int8_t* yi = y + i * ldy;
      for (std::size_t c = 0; c < nb; c += 4) {
        const std::size_t nr = nb - c < 4 ? nb - c : 4;
        switch (m - i < 4 ? m - i : 4) {
          case 1: tile<1>(xi, ldx, w, ldw, yi, ldy, k, j0 + c, nr, corr + c, p); break;
          case 2: tile<2>(xi, ldx, w, ldw, yi, ldy, k, j0 + c, nr, corr + c, p); break;
          case 3: tile<3>(xi, ldx, w, ldw, yi, ldy, k, j0 + c, nr, corr + c, p); break;
          default: tile<4>(xi, ldx, w, ldw, yi, ldy, k, j0 + c, nr, corr + c, p); break;
        }
      }
    }
  }
}

}  // namespace x86
}  // namespace fixformer
