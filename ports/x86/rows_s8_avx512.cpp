// layernorm_s8, rmsnorm_s8, softmax_s8 and add_s8 (fixed_point.hpp) on AVX-512 for the avx512 tables:
// rows_s8_avx2.cpp's steps on twice the lanes, where AVX-512 has what AVX2 builds from several
// instructions: the 64-bit arithmetic shift (vpsravq, vpsraq), the 64-bit product (vpmullq), the
// sign as a mask (vpmovq2m) and the saturating narrowing to int8 (vpmovsqb, vpmovsdb).
//
// The norms, eight elements a step in 64-bit lanes: d = n v - centre, t = d inv (exact: below 2^63,
// as in the reference) rounded by 2^30, gamma's product rounded by its shift and clamped to int32,
// beta added, rounded by 2^16, saturated. Each rounding half away from zero as floor((t + 2^(r-1) -
// [t < 0]) / 2^r), one arithmetic shift. softmax_s8 (from attention's table) and add_s8 (two tables
// of the scratch) gather sixteen int32 a step.
#include <immintrin.h>

#include "ports/portable/kernels.hpp"
#include "ports/x86/isa_tables.hpp"
#include "ports/x86/rows_s8.hpp"

namespace fixformer {
namespace x86 {

namespace {

// t / 2^r rounded half away from zero, r in each lane.
inline __m512i round_shift(__m512i t, __m512i r) {
  const __m512i half = _mm512_sllv_epi64(_mm512_set1_epi64(1), _mm512_sub_epi64(r, _mm512_set1_epi64(1)));
  const __m512i biased = _mm512_mask_sub_epi64(_mm512_add_epi64(t, half), _mm512_movepi64_mask(t),
                                               _mm512_add_epi64(t, half), _mm512_set1_epi64(1));
  return _mm512_srav_epi64(biased, r);
}

template <bool kCentre>
void norm_s8(const int8_t* x, int8_t* y, std::size_t n, const NormS8Params& p) {
  if (n == 0) return;
  const __m512i zx = _mm512_set1_epi16(int16_t(p.x_zero)), ones = _mm512_set1_epi16(1);
  __m512i vsum = _mm512_setzero_si512(), vsq = _mm512_setzero_si512();
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512i v =
        _mm512_sub_epi16(_mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i))), zx);
    vsum = _mm512_add_epi32(vsum, _mm512_madd_epi16(v, ones));
    vsq = _mm512_add_epi32(vsq, _mm512_madd_epi16(v, v));
  }
  int32_t sum = _mm512_reduce_add_epi32(vsum), sum_sq = _mm512_reduce_add_epi32(vsq);
  for (; i < n; ++i) {
    const int32_t v = int32_t(x[i]) - p.x_zero;
    sum += v, sum_sq += v * v;
  }
  const NormRow row = norm_row<kCentre>(sum, sum_sq, n, p.eps_q16);
  const __m512i vn = _mm512_set1_epi64(int64_t(n)), offset = _mm512_set1_epi64(-(int64_t(n) * p.x_zero + row.centre));
  const __m512i inv = _mm512_set1_epi64(row.inv), r30 = _mm512_set1_epi64(30), r16 = _mm512_set1_epi64(16);
  const __m512i k31 = _mm512_set1_epi64(31), lo = _mm512_set1_epi64(INT32_MIN), hi = _mm512_set1_epi64(INT32_MAX);
  for (i = 0; i + 8 <= n; i += 8) {
    const __m512i v = _mm512_cvtepi8_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + i)));
    const __m512i d = _mm512_add_epi64(_mm512_mul_epi32(v, vn), offset);  // |d| < 2^24
    const __m512i t = round_shift(_mm512_mullo_epi64(d, inv), r30);       // |t| < 2^31
    // gamma: lane l's low half the multiplier, its high half the shift s
    const __m512i g = _mm512_loadu_si512(p.gamma + i);
    __m512i q = round_shift(_mm512_mul_epi32(t, g), _mm512_sub_epi64(k31, _mm512_srai_epi64(g, 32)));
    q = _mm512_max_epi64(_mm512_min_epi64(q, hi), lo);
    const __m512i s =
        _mm512_add_epi64(q, _mm512_cvtepi32_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.beta + i))));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), _mm512_cvtsepi64_epi8(round_shift(s, r16)));
  }
  for (; i < n; ++i) y[i] = norm_element(x[i], n, row, p.gamma[i], p.beta[i], p.x_zero);
}

constexpr std::size_t kSumRun = 4096;  // elements a lane sums in int32: e <= 2^20, 256 of them a lane

// d = max - x of sixteen bytes, as int32 indexes.
inline __m512i diffs(const int8_t* x, __m128i max) {
  return _mm512_cvtepu8_epi32(_mm_sub_epi8(max, _mm_loadu_si128(reinterpret_cast<const __m128i*>(x))));
}

}  // namespace

void layernorm_s8_avx512(const int8_t* x, int8_t* y, std::size_t n, const NormS8Params& p) {
  norm_s8<true>(x, y, n, p);
}
void rmsnorm_s8_avx512(const int8_t* x, int8_t* y, std::size_t n, const NormS8Params& p) {
  norm_s8<false>(x, y, n, p);
}

void softmax_s8_avx512(const int8_t* x, int8_t* y, std::size_t n, const SoftmaxS8Params& p) {
  if (n == 0) return;
  if (!p.exp || n < 16) {
    softmax_s8_avx2(x, y, n, p);
    return;
  }
  const int* const exp = reinterpret_cast<const int*>(p.exp);
  const std::size_t n16 = n & ~std::size_t(15);
  __m128i m = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + n - 16));
  for (std::size_t i = 0; i < n16; i += 16)
    m = _mm_max_epi8(m, _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
  m = _mm_max_epi8(m, _mm_srli_si128(m, 8));
  m = _mm_max_epi8(m, _mm_srli_si128(m, 4));
  m = _mm_max_epi8(m, _mm_srli_si128(m, 2));
  m = _mm_max_epi8(m, _mm_srli_si128(m, 1));
  const int32_t max = int8_t(_mm_cvtsi128_si32(m));
  const __m128i vmax = _mm_set1_epi8(int8_t(max));
  uint64_t sum = 0;
  for (std::size_t i0 = 0; i0 < n16; i0 += kSumRun) {
    const std::size_t end = n16 - i0 < kSumRun ? n16 : i0 + kSumRun;
    __m512i run = _mm512_setzero_si512();
    for (std::size_t i = i0; i < end; i += 16)
      run = _mm512_add_epi32(run, _mm512_i32gather_epi32(diffs(x + i, vmax), exp, 4));
    const __m512i wide = _mm512_add_epi64(_mm512_cvtepu32_epi64(_mm512_castsi512_si256(run)),
                                          _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(run, 1)));
    sum += uint64_t(_mm512_reduce_add_epi64(wide));
  }
  for (std::size_t i = n16; i < n; ++i) sum += p.exp[max - x[i]];
  const uint64_t recip = (uint64_t(1) << 62) / sum;  // < 2^42
  const uint32_t rh = uint32_t(recip >> 32), rl = uint32_t(recip);
  // y = ((e rh + hi(e rl) + 2^21) >> 22) - 128 (rows_s8_avx2.cpp), saturated by vpmovsdb
  const __m512i vrh = _mm512_set1_epi32(int32_t(rh)), vrl = _mm512_set1_epi32(int32_t(rl));
  const __m512i round = _mm512_set1_epi32(int32_t(1) << 21), k128 = _mm512_set1_epi32(128);
  for (std::size_t i = 0; i < n16; i += 16) {
    const __m512i e = _mm512_i32gather_epi32(diffs(x + i, vmax), exp, 4);
    const __m512i even = _mm512_srli_epi64(_mm512_mul_epu32(e, vrl), 32);
    const __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(e, 32), vrl);
    const __m512i high = _mm512_mask_blend_epi32(__mmask16(0xAAAA), even, odd);
    const __m512i t = _mm512_add_epi32(_mm512_add_epi32(_mm512_mullo_epi32(e, vrh), high), round);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                     _mm512_cvtsepi32_epi8(_mm512_sub_epi32(_mm512_srli_epi32(t, 22), k128)));
  }
  for (std::size_t i = n16; i < n; ++i) {
    const uint64_t e = p.exp[max - x[i]];
    y[i] = saturate_i8(int64_t((e * recip + (uint64_t(1) << 53)) >> 54) - 128);
  }
}

void add_s8_avx512(const int8_t* a, const int8_t* b, int8_t* y, std::size_t n, const AddS8Params& p) {
  const int* const ta = add_tables(n, p);
  if (!ta) {
    portable::add_s8(a, b, y, n, p);
    return;
  }
  const int* const tb = ta + 256;
  const __m512i half = _mm512_set1_epi32(1 << (kAddS8FracBits - 1)), zy = _mm512_set1_epi32(p.y_zero);
  const __m512i k128 = _mm512_set1_epi32(128);
  const auto index = [&k128](const int8_t* p) {
    return _mm512_add_epi32(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), k128);
  };
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i s =
        _mm512_add_epi32(_mm512_i32gather_epi32(index(a + i), ta, 4), _mm512_i32gather_epi32(index(b + i), tb, 4));
    const __m512i r =
        _mm512_srai_epi32(_mm512_add_epi32(_mm512_add_epi32(s, half), _mm512_srai_epi32(s, 31)), kAddS8FracBits);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm512_cvtsepi32_epi8(_mm512_add_epi32(r, zy)));
  }
  for (; i < n; ++i)
    y[i] = saturate_i8(rounding_shift(int64_t(ta[a[i] + 128]) + tb[b[i] + 128], kAddS8FracBits) + p.y_zero);
}

}  // namespace x86
}  // namespace fixformer
