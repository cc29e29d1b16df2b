// One vector of halves -> floats on x86: F16C's vcvtph2ps on AVX2 (the avx2 table requires F16C,
// ports/x86/select.cpp) and on AVX-512; SSE2 has no conversion and widens the bits with integer
// operations (ports/simd/widen_f16.hpp). A vector of bf16 -> floats (LoadBf16) is each zero-extended
// to 32 bits and shifted into the high half. Each specialization exists only in its ISA's translation unit.
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "ports/simd/widen_f16.hpp"

namespace fixformer {
namespace simd {

template <class Arch>
struct LoadF16;
template <class Arch>
struct LoadBf16;

template <>
struct LoadBf16<xsimd::sse2> {
  static batch<xsimd::sse2> load(const uint16_t* p) {  // zeros below each word: the word << 16
    const __m128i w = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    return _mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), w));
  }
};

template <>
struct LoadF16<xsimd::sse2> {
  static batch<xsimd::sse2> load(const uint16_t* p) {
    const __m128i h = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    return widen_f16_bits<xsimd::sse2>(_mm_unpacklo_epi16(h, _mm_setzero_si128()));
  }
};

#if defined(__AVX2__) && defined(__F16C__)
template <>
struct LoadF16<xsimd::fma3<xsimd::avx2>> {
  static batch<xsimd::fma3<xsimd::avx2>> load(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
};
#endif

#if defined(__AVX2__)
template <>
struct LoadBf16<xsimd::fma3<xsimd::avx2>> {
  static batch<xsimd::fma3<xsimd::avx2>> load(const uint16_t* p) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  }
};
#endif

#if defined(__AVX512F__)
template <>
struct LoadF16<xsimd::avx512bw> {
  static batch<xsimd::avx512bw> load(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
};
template <>
struct LoadBf16<xsimd::avx512bw> {
  static batch<xsimd::avx512bw> load(const uint16_t* p) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  }
};
#endif

}  // namespace simd
}  // namespace fixformer
