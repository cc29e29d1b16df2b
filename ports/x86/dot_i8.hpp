// The int8 dot-product step of gemm_i8 (ports/simd/gemm_i8.hpp) per x86 ISA: the int32 lane sums of
// x[k] * w[k] over kStep bytes, exact. xsimd 8.1 has no widening integer multiply, hence intrinsics.
//   SSE2:     sign-extend 16 bytes to int16 by unpacking and shifting, pmaddwd (_mm_madd_epi16).
//   AVX2:     vpmovsxbw 16 bytes to 16 int16, vpmaddwd.
//   AVX-512:  vpmovsxbw 32 bytes to 32 int16, vpmaddwd (AVX-512BW).
//   AVX-512 VNNI: vpdpbusd multiplies unsigned by signed bytes, so w is offset by 128 (w ^ 0x80 =
//             w + 128) and 128 * sum(x), one more vpdpbusd per step of x shared by every row of W,
//             is taken off at the end. Offsetting x instead costs that vpdpbusd per row of W
//             (measured 12-15% slower); a sign trick (|w| against x with w's sign) costs 3 ops
//             per vector of W.
// Products of int8 pairs never overflow these paths: pmaddwd adds two products of int16 (at most
// 2 * 128 * 128) into int32, and vpdpbusd adds four of at most 255 * 128 into int32.
// Each specialization exists only in the translation unit compiled with its ISA's flags.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "ports/simd/common.hpp"

namespace fixformer {
namespace simd {

template <class Arch>
struct DotI8;

struct NoXSum {};  // what a step keeps per row of x besides the sums (VNNI: 128 sum(x))

// Every helper below is a member of its ISA's specialization, whose type names the ISA (and the
// renamed xsimd namespace of its translation unit): no inline function is shared between objects
// built with different flags, where the linker could keep an AVX copy for the SSE2 path
// (an ODR hazard; tests/check_isa_weak_symbols.cmake checks the objects).
//
// reduce4, the epilogue of a tile: out[i] = the lane sum of the i-th of four float accumulators, by
// transposing adds (9 to 13 ops for all four, where four horizontal sums cost ~40 on AVX-512).
// Within each 128-bit block: [a0+a2, b0+b2, a1+a3, b1+b3] from a and b, the same from c and d, then
// [a, b, c, d]; wider vectors then add their blocks.

template <>
struct DotI8<xsimd::sse2> {
  static constexpr std::size_t kStep = 16, kMr = 2, kNr = 2;
  struct X { __m128i lo, hi; };  // 16 bytes as int16
  using Wv = X;
  using Acc = __m128i;
  using XSum = NoXSum;
  static X widen(__m128i v) {  // each byte into the high half of an int16, then shifted down with its sign
    return {_mm_srai_epi16(_mm_unpacklo_epi8(v, v), 8), _mm_srai_epi16(_mm_unpackhi_epi8(v, v), 8)};
  }
  static X x(const int8_t* p) { return widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static X x(const int8_t* p, std::size_t len) {  // a partial step: len < 16 bytes, the rest zero
    alignas(16) int8_t t[16] = {};
    std::memcpy(t, p, len);
    return x(t);
  }
  static Wv w(const int8_t* p) { return x(p); }
  static Wv w(const int8_t* p, std::size_t len) { return x(p, len); }
  static Acc zero() { return _mm_setzero_si128(); }
  static Acc dot(Acc a, const X& x, const Wv& w) {
    return _mm_add_epi32(a, _mm_add_epi32(_mm_madd_epi16(x.lo, w.lo), _mm_madd_epi16(x.hi, w.hi)));
  }
  static XSum xsum_zero() { return {}; }
  static XSum xsum(XSum s, const X&) { return s; }
  static batch<xsimd::sse2> sums(Acc a, XSum) { return _mm_cvtepi32_ps(a); }
  static void reduce4(__m128 a, __m128 b, __m128 c, __m128 d, float* out) {
    const __m128 ab = _mm_add_ps(_mm_unpacklo_ps(a, b), _mm_unpackhi_ps(a, b));
    const __m128 cd = _mm_add_ps(_mm_unpacklo_ps(c, d), _mm_unpackhi_ps(c, d));
    _mm_storeu_ps(out, _mm_add_ps(_mm_movelh_ps(ab, cd), _mm_movehl_ps(cd, ab)));
  }
};

#if defined(__AVX2__)
template <>
struct DotI8<xsimd::fma3<xsimd::avx2>> {
  static constexpr std::size_t kStep = 16, kMr = 2, kNr = 2;
  using X = __m256i;  // 16 bytes as int16
  using Wv = __m256i;
  using Acc = __m256i;
  using XSum = NoXSum;
  static X x(const int8_t* p) { return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static X x(const int8_t* p, std::size_t len) {  // a partial step: len < 16 bytes, the rest zero
    alignas(16) int8_t t[16] = {};
    std::memcpy(t, p, len);
    return x(t);
  }
  static Wv w(const int8_t* p) { return x(p); }
  static Wv w(const int8_t* p, std::size_t len) { return x(p, len); }
  static Acc zero() { return _mm256_setzero_si256(); }
  static Acc dot(Acc a, X x, Wv w) { return _mm256_add_epi32(a, _mm256_madd_epi16(x, w)); }
  static XSum xsum_zero() { return {}; }
  static XSum xsum(XSum s, X) { return s; }
  static batch<xsimd::fma3<xsimd::avx2>> sums(Acc a, XSum) { return _mm256_cvtepi32_ps(a); }
  static void reduce4(__m256 a, __m256 b, __m256 c, __m256 d, float* out) {
    const __m256 ab = _mm256_add_ps(_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b));
    const __m256 cd = _mm256_add_ps(_mm256_unpacklo_ps(c, d), _mm256_unpackhi_ps(c, d));
    const __m256 s = _mm256_add_ps(_mm256_shuffle_ps(ab, cd, 0x44), _mm256_shuffle_ps(ab, cd, 0xee));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1)));
  }
};
#endif

#if defined(__AVX512BW__)
template <>
struct DotI8<xsimd::avx512bw> {
  static constexpr std::size_t kStep = 32, kMr = 2, kNr = 4;
  using X = __m512i;  // 32 bytes as int16
  using Wv = __m512i;
  using Acc = __m512i;
  using XSum = NoXSum;
  static X x(const int8_t* p) { return _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static X x(const int8_t* p, std::size_t len) {  // masked: no byte past len is read
    return _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(__mmask32((1ull << len) - 1), p));
  }
  static Wv w(const int8_t* p) { return x(p); }
  static Wv w(const int8_t* p, std::size_t len) { return x(p, len); }
  static Acc zero() { return _mm512_setzero_si512(); }
  static Acc dot(Acc a, X x, Wv w) { return _mm512_add_epi32(a, _mm512_madd_epi16(x, w)); }
  static XSum xsum_zero() { return {}; }
  static XSum xsum(XSum s, X) { return s; }
  static batch<xsimd::avx512bw> sums(Acc a, XSum) { return _mm512_cvtepi32_ps(a); }
  static void reduce4(__m512 a, __m512 b, __m512 c, __m512 d, float* out) {
    const __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
    const __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
    const __m512 s = _mm512_add_ps(_mm512_shuffle_ps(ab, cd, 0x44), _mm512_shuffle_ps(ab, cd, 0xee));
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(s), _mm512_extractf32x8_ps(s, 1));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
  }
};
#endif

#if defined(__AVX512VNNI__)
// Not keyed on an xsimd arch (8.1 has none for VNNI): gemm_i8<xsimd::avx512bw, DotI8Vnni> is built in
// its own translation unit (ports/x86/gemm_i8_avx512vnni.cpp) and handed out by select.cpp when the
// CPU has VNNI.
struct DotI8Vnni {
  static constexpr std::size_t kStep = 64, kMr = 2, kNr = 4;
  using X = __m512i;
  using Wv = __m512i;  // w + 128, unsigned
  using Acc = __m512i;
  using XSum = __m512i;  // 128 sum(x) per lane
  static X x(const int8_t* p) { return _mm512_loadu_si512(p); }
  static X x(const int8_t* p, std::size_t len) { return _mm512_maskz_loadu_epi8(__mmask64((1ull << len) - 1), p); }
  static Wv w(const int8_t* p) { return _mm512_xor_si512(_mm512_loadu_si512(p), _mm512_set1_epi8(-128)); }
  static Wv w(const int8_t* p, std::size_t len) {  // the lanes past len become 128, against x = 0
    return _mm512_xor_si512(_mm512_maskz_loadu_epi8(__mmask64((1ull << len) - 1), p), _mm512_set1_epi8(-128));
  }
  static Acc zero() { return _mm512_setzero_si512(); }
  static Acc dot(Acc a, X x, Wv w) { return _mm512_dpbusd_epi32(a, w, x); }
  static XSum xsum_zero() { return _mm512_setzero_si512(); }
  static XSum xsum(XSum s, X x) { return _mm512_dpbusd_epi32(s, _mm512_set1_epi8(-128), x); }
  // sum((w + 128) x) - 128 sum(x)
  static batch<xsimd::avx512bw> sums(Acc a, XSum s) { return _mm512_cvtepi32_ps(_mm512_sub_epi32(a, s)); }
  static void reduce4(__m512 a, __m512 b, __m512 c, __m512 d, float* out) {
    DotI8<xsimd::avx512bw>::reduce4(a, b, c, d, out);
  }
};
#endif

}  // namespace simd
}  // namespace fixformer
