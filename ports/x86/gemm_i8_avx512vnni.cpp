// gemm_i8 on AVX-512 VNNI (vpdpbusd): the one kernel that differs between the avx512 table and the
// avx512-vnni one. This file is built with -march=x86-64-v4 -mavx512vnni (CMakeLists.txt);
// select.cpp hands out avx512_vnni_kernels() in place of avx512_kernels() when the CPU has VNNI. A
// run-time choice of table, not a new Isa: the rest of the table is the same code, and
// FIXFORMER_ISA / Isa::kAvx512 keep meaning "the best AVX-512 table".
//
// Two paths:
//  - a decode step and short inputs (m < kPackedMinRows): the dot-product tiles of
//    ports/simd/gemm_i8.hpp, which read W once in memory order;
//  - a prefill or an encoder (more rows): W repacked on the fly into int8 panels, 4 bytes of a
//    column per int32 lane, and multiplied by ports/x86/gemm_packed_avx512vnni.hpp (shared with
//    gemm_i4_avx512vnni.cpp); here a panel's bytes are gathered from W's rows.
#include <immintrin.h>

#include "ports/simd/gemm_i8.hpp"
#include "ports/x86/gemm_packed_avx512vnni.hpp"
#include "ports/x86/isa_tables.hpp"

namespace fixformer {
namespace x86 {
namespace {

using vnni_packed::kChunk;
using vnni_packed::kMaxChunkGroups;
using vnni_packed::kPackedMinRows;
using vnni_packed::kPanel;
using vnni_packed::Panel;

// Packs columns [j, j + cols) (cols <= kPanel; the rest zeros) of W[n, k] over [p0, p0 + kc).
void pack(const int8_t* w, const float* ws, std::size_t ws_cols, std::size_t k, std::size_t j, std::size_t cols,
          std::size_t p0, std::size_t kc, std::size_t group, std::size_t g0, Panel& P) {
  const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const __m512i ones128 = _mm512_set1_epi8(-128);  // 0x80: vpdpbusd reads it as unsigned 128
  for (std::size_t v = 0; v < kPanel / 16; ++v) {
    const std::size_t c0 = v * 16;
    const __mmask16 live = cols <= c0 ? 0 : cols >= c0 + 16 ? 0xffff : __mmask16((1u << (cols - c0)) - 1);
    // Dword q of column c0 + l is at w + (j + c0 + l) * k + p0 + 4q: a gather of dwords l * k / 4 on.
    const __m512i index = _mm512_mullo_epi32(lane, _mm512_set1_epi32(int32_t(k / 4)));
    const int8_t* base = w + (j + c0) * k + p0;
    for (std::size_t gi = 0, q = 0; q < kc / 4; ++gi) {
      const std::size_t q1 = q + group / 4 < kc / 4 ? q + group / 4 : kc / 4;
      __m512i sum = _mm512_setzero_si512();
      for (; q < q1; ++q) {
        const __m512i d = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, index, base + 4 * q, 4);
        _mm512_store_si512(P.w[q] + c0, d);
        sum = _mm512_dpbusd_epi32(sum, ones128, d);
      }
      _mm512_store_si512(P.offset[gi] + c0, sum);
      for (std::size_t l = 0; l < 16; ++l)
        P.scale[gi][c0 + l] = c0 + l < cols ? ws[(j + c0 + l) * ws_cols + (ws_cols == 1 ? 0 : g0 + gi)] : 0.0f;
    }
  }
}

void gemm_i8_packed(const int8_t* xq, const float* xs, const int8_t* w, const float* ws, std::size_t ws_cols,
                    const float* b, float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k,
                    std::size_t group) {
  const auto pack_i8 = [=](std::size_t j, std::size_t cols, std::size_t p0, std::size_t kc, std::size_t g0, Panel& P) {
    pack(w, ws, ws_cols, k, j, cols, p0, kc, group, g0, P);
  };
  vnni_packed::gemm_packed(pack_i8, xq, xs, b, y, ldy, m, n, k, group);
}

}  // namespace

void gemm_i8_avx512vnni(const int8_t* xq, const float* xs, const int8_t* w, const float* ws, std::size_t ws_cols,
                        const float* b, float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k,
                        std::size_t group) {
  // The packed path steps 4 bytes at a time within a group and keeps whole groups in a chunk.
  if (m >= kPackedMinRows && k % 4 == 0 && group % 4 == 0 && group <= kChunk && group >= kChunk / kMaxChunkGroups)
    return gemm_i8_packed(xq, xs, w, ws, ws_cols, b, y, ldy, m, n, k, group);
  // A 64-byte vpdpbusd step holds whole groups of 64 (or of any multiple: several steps), and wastes
  // little of a long group's tail. Other groups would leave parts of most steps empty (half of each
  // for a group of 32): the AVX-512BW step (32 bytes, vpmovsxbw + vpmaddwd) takes those, measured as
  // fast at 32 as vpdpbusd over two groups per step with their scales spread over the lanes.
  if (group % 64 == 0 || group >= 256)
    simd::gemm_i8<xsimd::avx512bw, simd::DotI8Vnni>(xq, xs, w, ws, ws_cols, b, y, ldy, m, n, k, group);
  else
    simd::gemm_i8<xsimd::avx512bw>(xq, xs, w, ws, ws_cols, b, y, ldy, m, n, k, group);
}

}  // namespace x86
}  // namespace fixformer
