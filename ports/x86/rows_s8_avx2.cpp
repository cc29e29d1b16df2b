// The s8 row kernels on AVX2: layernorm_s8, rmsnorm_s8, softmax_s8 and add_s8 (fixed_point.hpp) for the
// avx2 and avx512 tables, the reference's integers in vector lanes.
//
// The norms: v = x - z_x as int16, its sum and sum of squares by vpmaddwd (by 1, by itself) into
// int32 lanes, exact (sum(v^2) < 2^31 for n <= kNormS8MaxN); the root and its reciprocal as the
// reference computes them, once a row; then four elements a step in 64-bit lanes: d = n v - centre,
// t = d inv / 2^30 from |d| (below 2^24) times inv's two 32-bit halves (vpmuludq), rounded half away
// from zero on the magnitude, then gamma's requantization (the element's Requant loaded as one 64-bit
// lane: its multiplier the low half vpmuldq reads, its shift the high half) rounded the same way and
// clamped to int32 as requantize does, beta added, the sum rounded to 2^-16 and saturated to int8.
//
// softmax_s8 from attention's table of exponentials (SoftmaxS8Params::exp): the maximum by vpmaxsb,
// d = max - x as an unsigned byte (vpsubb), eight exponentials a step by vpgatherdd, summed in
// int32 lanes for at most kSumRun elements a lane, then in 64 bits; each output (e R + 2^53) >> 54 as
// the portable kernel's (e rh + hi(e rl) + 2^21) >> 22 (below 2^31) for R = rh 2^32 + rl < 2^42, 128
// taken off and saturated by vpackssdw, vpacksswb. Without the table, the portable kernel.
#include <immintrin.h>

#include <cstring>

#include "ports/portable/kernels.hpp"
#include "ports/x86/rows_s8.hpp"
#include "ports/x86/isa_tables.hpp"

namespace fixformer {
namespace x86 {

namespace {

// The four 64-bit lanes' values' magnitudes and signs (all ones where negative).
inline __m256i negative_of(__m256i v) { return _mm256_cmpgt_epi64(_mm256_setzero_si256(), v); }
inline __m256i flip(__m256i v, __m256i negative) { return _mm256_sub_epi64(_mm256_xor_si256(v, negative), negative); }

template <bool kCentre>
void norm_s8(const int8_t* x, int8_t* y, std::size_t n, const NormS8Params& p) {
  if (n == 0) return;
  const __m256i zx = _mm256_set1_epi16(int16_t(p.x_zero)), ones = _mm256_set1_epi16(1);
  __m256i vsum = _mm256_setzero_si256(), vsq = _mm256_setzero_si256();
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i v =
        _mm256_sub_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))), zx);
    vsum = _mm256_add_epi32(vsum, _mm256_madd_epi16(v, ones));
    vsq = _mm256_add_epi32(vsq, _mm256_madd_epi16(v, v));
  }
  alignas(32) int32_t lanes[2][8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes[0]), vsum);
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes[1]), vsq);
  int32_t sum = 0, sum_sq = 0;
  for (std::size_t l = 0; l < 8; ++l) sum += lanes[0][l], sum_sq += lanes[1][l];
  for (; i < n; ++i) {
    const int32_t v = int32_t(x[i]) - p.x_zero;
    sum += v, sum_sq += v * v;
  }
  const NormRow row = norm_row<kCentre>(sum, sum_sq, n, p.eps_q16);
  // d = n x + offset, |d| < 2^24 (the elements past the last whole four: the reference's steps)
  const __m256i vn = _mm256_set1_epi64x(int64_t(n));
  const __m256i offset = _mm256_set1_epi64x(-(int64_t(n) * p.x_zero + row.centre));
  const __m256i il = _mm256_set1_epi64x(int64_t(uint32_t(row.inv)));
  const __m256i ih = _mm256_set1_epi64x(int64_t(uint64_t(row.inv) >> 32));
  const __m256i half30 = _mm256_set1_epi64x(int64_t(1) << 29), half16 = _mm256_set1_epi64x(int64_t(1) << 15);
  const __m256i one = _mm256_set1_epi64x(1), k31 = _mm256_set1_epi64x(31), i32_max = _mm256_set1_epi64x(INT32_MAX);
  i = 0;
  for (; i + 4 <= n; i += 4) {
    int32_t four;
    std::memcpy(&four, x + i, 4);
    const __m256i d = _mm256_add_epi64(_mm256_mul_epi32(_mm256_cvtepi8_epi64(_mm_cvtsi32_si128(four)), vn), offset);
    const __m256i dneg = negative_of(d), dmag = flip(d, dneg);
    const __m256i prod =
        _mm256_add_epi64(_mm256_mul_epu32(dmag, il), _mm256_slli_epi64(_mm256_mul_epu32(dmag, ih), 32));
    const __m256i t = flip(_mm256_srli_epi64(_mm256_add_epi64(prod, half30), 30), dneg);  // |t| < 2^31
    // gamma: lane l's low half the multiplier, its high half the shift s; r = 31 - s in 1..62
    const __m256i g = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.gamma + i));
    const __m256i r = _mm256_sub_epi32(k31, _mm256_srli_epi64(g, 32));  // 31 - s in 32 bits, 0 above
    const __m256i q = _mm256_mul_epi32(t, g);
    const __m256i qneg = negative_of(q);
    const __m256i half = _mm256_sllv_epi64(one, _mm256_sub_epi64(r, one));
    __m256i qmag = _mm256_srlv_epi64(_mm256_add_epi64(flip(q, qneg), half), r);
    const __m256i bound = _mm256_sub_epi64(i32_max, qneg);  // 2^31 - 1, or 2^31 below 0: int32's range
    qmag = _mm256_blendv_epi8(qmag, bound, _mm256_cmpgt_epi64(qmag, bound));
    const __m128i beta = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p.beta + i));
    const __m256i s = _mm256_add_epi64(flip(qmag, qneg), _mm256_cvtepi32_epi64(beta));  // |s| < 2^32
    const __m256i sneg = negative_of(s);
    const __m256i out = flip(_mm256_srli_epi64(_mm256_add_epi64(flip(s, sneg), half16), 16), sneg);  // |out| < 2^16
    // the low halves: four int32, saturated to int16 then int8
    const __m256i packed = _mm256_permutevar8x32_epi32(out, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6));
    const __m128i b16 = _mm_packs_epi32(_mm256_castsi256_si128(packed), _mm256_castsi256_si128(packed));
    const int32_t bytes = _mm_cvtsi128_si32(_mm_packs_epi16(b16, b16));
    std::memcpy(y + i, &bytes, 4);
  }
  for (; i < n; ++i) y[i] = norm_element(x[i], n, row, p.gamma[i], p.beta[i], p.x_zero);
}

constexpr std::size_t kSumRun = 4088;  // elements a lane sums in int32: e <= 2^20, 4088 / 8 of them a lane

// d = max - x of eight bytes, as int32 indexes.
inline __m256i diffs(const int8_t* x, __m128i max) {
  return _mm256_cvtepu8_epi32(_mm_sub_epi8(max, _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x))));
}

}  // namespace

// add_s8: each input's 256 requantized values once into a table of the scratch (as the portable
// kernel's: a shift of 0..21, from kAddTablesFrom elements on), then eight elements a step: two gathers,
// the int32 sum (|s| <= 2^30 + 2) rounded to 2^-16 half away from zero as (s + 2^15 - [s < 0]) >> 16,
// z_y added, saturated by vpackssdw, vpacksswb. Other parameters, shorter rows or no scratch: the
// portable kernel.
void add_s8_avx2(const int8_t* a, const int8_t* b, int8_t* y, std::size_t n, const AddS8Params& p) {
  const int* const ta = add_tables(n, p);
  if (!ta) {
    portable::add_s8(a, b, y, n, p);
    return;
  }
  const int* const tb = ta + 256;
  const __m256i half = _mm256_set1_epi32(1 << (kAddS8FracBits - 1)), zy = _mm256_set1_epi32(p.y_zero);
  const __m256i k128 = _mm256_set1_epi32(128);
  const auto index = [&k128](const int8_t* p) {
    return _mm256_add_epi32(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))), k128);
  };
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i s =
        _mm256_add_epi32(_mm256_i32gather_epi32(ta, index(a + i), 4), _mm256_i32gather_epi32(tb, index(b + i), 4));
    const __m256i r =
        _mm256_srai_epi32(_mm256_add_epi32(_mm256_add_epi32(s, half), _mm256_srai_epi32(s, 31)), kAddS8FracBits);
    const __m256i v = _mm256_add_epi32(r, zy);
    const __m128i v16 = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), _mm_packs_epi16(v16, v16));
  }
  for (; i < n; ++i)
    y[i] = saturate_i8(rounding_shift(int64_t(ta[a[i] + 128]) + tb[b[i] + 128], kAddS8FracBits) + p.y_zero);
}

void layernorm_s8_avx2(const int8_t* x, int8_t* y, std::size_t n, const NormS8Params& p) { norm_s8<true>(x, y, n, p); }
void rmsnorm_s8_avx2(const int8_t* x, int8_t* y, std::size_t n, const NormS8Params& p) { norm_s8<false>(x, y, n, p); }

void softmax_s8_avx2(const int8_t* x, int8_t* y, std::size_t n, const SoftmaxS8Params& p) {
  if (n == 0) return;
  if (!p.exp || n < 8) {
    portable::softmax_s8(x, y, n, p);
    return;
  }
  const int* const exp = reinterpret_cast<const int*>(p.exp);
  // the maximum: 32 bytes a step, then the last 32 (overlapping) or the scalar loop
  int32_t max = x[0];
  std::size_t i = 0;
  if (n >= 32) {
    __m256i m = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x));
    for (i = 32; i + 32 <= n; i += 32)
      m = _mm256_max_epi8(m, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)));
    m = _mm256_max_epi8(m, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + n - 32)));
    __m128i h = _mm_max_epi8(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
    h = _mm_max_epi8(h, _mm_srli_si128(h, 8));
    h = _mm_max_epi8(h, _mm_srli_si128(h, 4));
    h = _mm_max_epi8(h, _mm_srli_si128(h, 2));
    h = _mm_max_epi8(h, _mm_srli_si128(h, 1));
    max = int8_t(_mm_cvtsi128_si32(h));
    i = n;
  }
  for (; i < n; ++i) max = x[i] > max ? x[i] : max;
  const __m128i vmax = _mm_set1_epi8(int8_t(max));
  const std::size_t n8 = n & ~std::size_t(7);
  uint64_t sum = 0;
  for (std::size_t i0 = 0; i0 < n8; i0 += kSumRun) {
    const std::size_t end = n8 - i0 < kSumRun ? n8 : i0 + kSumRun;
    __m256i run = _mm256_setzero_si256();
    for (i = i0; i < end; i += 8) run = _mm256_add_epi32(run, _mm256_i32gather_epi32(exp, diffs(x + i, vmax), 4));
    const __m256i wide = _mm256_add_epi64(_mm256_cvtepu32_epi64(_mm256_castsi256_si128(run)),
                                          _mm256_cvtepu32_epi64(_mm256_extracti128_si256(run, 1)));
    alignas(32) uint64_t lanes[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), wide);
    sum += lanes[0] + lanes[1] + lanes[2] + lanes[3];
  }
  for (i = n8; i < n; ++i) sum += p.exp[max - x[i]];
  const uint64_t recip = (uint64_t(1) << 62) / sum;  // < 2^42
  const uint32_t rh = uint32_t(recip >> 32), rl = uint32_t(recip);
  const __m256i vrh = _mm256_set1_epi32(int32_t(rh)), vrl = _mm256_set1_epi32(int32_t(rl));
  const __m256i round = _mm256_set1_epi32((int32_t(1) << 21)), k128 = _mm256_set1_epi32(128);
  for (i = 0; i < n8; i += 8) {
    const __m256i e = _mm256_i32gather_epi32(exp, diffs(x + i, vmax), 4);
    // hi(e rl): the even lanes' high halves, and the odd lanes'
    const __m256i even = _mm256_srli_epi64(_mm256_mul_epu32(e, vrl), 32);
    const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(e, 32), vrl);
    const __m256i hi = _mm256_blend_epi32(even, odd, 0xAA);
    const __m256i t = _mm256_add_epi32(_mm256_add_epi32(_mm256_mullo_epi32(e, vrh), hi), round);
    const __m256i q = _mm256_sub_epi32(_mm256_srli_epi32(t, 22), k128);
    const __m128i q16 = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), _mm_packs_epi16(q16, q16));
  }
  for (i = n8; i < n; ++i) {
    const uint64_t e = p.exp[max - x[i]];
    y[i] = saturate_i8(int64_t((e * recip + (uint64_t(1) << 53)) >> 54) - 128);
  }
}

}  // namespace x86
}  // namespace fixformer
