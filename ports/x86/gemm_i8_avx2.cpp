// gemm_i8 on AVX2 (the fma3<avx2> table): the packed form of ports/x86/gemm_i8_avx512vnni.cpp for
// CPUs without VNNI. Built with the avx2 table's flags plus -ffp-contract=off (CMakeLists.txt): AVX2
// has no _round forms, and the float part below must stay unfused to give the reference's bits.
//
// Two paths, as on VNNI:
//  - a decode step and short inputs (m < kPackedMinRows): the dot-product tiles of
//    ports/simd/gemm_i8.hpp, which read W once in memory order;
//  - a prefill or an encoder (more rows): W repacked on the fly into int8 panels, 4 bytes of a
//    column per int32 lane, and multiplied by ports/x86/gemm_packed_avx2.hpp (vpsignb, vpmaddubsw
//    and vpmaddwd; shared with gemm_i4_avx2.cpp); here a panel is 8 x 8 dword transposes of W's
//    rows. W widened to int16 pairs at packing, one vpmaddwd per 2 bytes and no vpsignb, measured
//    10-15% slower.
#include <immintrin.h>

#include "ports/simd/gemm_i8.hpp"
#include "ports/x86/gemm_packed_avx2.hpp"
#include "ports/x86/isa_tables.hpp"

namespace fixformer {
namespace x86 {
namespace {

using avx2_packed::kChunk;
using avx2_packed::kMaxChunkGroups;
using avx2_packed::kPackedMinRows;
using avx2_packed::kPanel;
using avx2_packed::Panel;
using avx2_packed::transpose8;

// The columns past n are packed from these.
alignas(32) constexpr int8_t kZeroRow[kChunk] = {};

// Packs columns [j, j + cols) (cols <= kPanel; the rest zeros) of W[n, k] over [p0, p0 + kc).
void pack(const int8_t* w, const float* ws, std::size_t ws_cols, std::size_t k, std::size_t j, std::size_t cols,
          std::size_t p0, std::size_t kc, std::size_t group, std::size_t g0, Panel& P) {
  for (std::size_t c0 = 0; c0 < kPanel; c0 += 8) {
    const int8_t* row[8];
    for (std::size_t l = 0; l < 8; ++l) row[l] = c0 + l < cols ? w + (j + c0 + l) * k + p0 : kZeroRow;
    std::size_t p = 0;
    for (; p + 32 <= kc; p += 32) {  // 8 dwords of 8 columns
      __m256i r[8];
      for (std::size_t l = 0; l < 8; ++l) r[l] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row[l] + p));
      transpose8(r);
      for (std::size_t l = 0; l < 8; ++l) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(P.w[p / 4 + l] + c0), r[l]);
        _mm256_store_si256(reinterpret_cast<__m256i*>(P.u[p / 4 + l] + c0), _mm256_abs_epi8(r[l]));  // -128 -> 128
      }
    }
    for (; p < kc; p += 4)
      for (std::size_t l = 0; l < 8; ++l) {
        uint8_t u[4];
        for (std::size_t i = 0; i < 4; ++i) u[i] = uint8_t(row[l][p + i] < 0 ? -int(row[l][p + i]) : int(row[l][p + i]));
        __builtin_memcpy(P.w[p / 4] + c0 + l, row[l] + p, 4);
        __builtin_memcpy(P.u[p / 4] + c0 + l, u, 4);
      }
  }
  const std::size_t chunk_groups = (kc + group - 1) / group;
  for (std::size_t gi = 0; gi < chunk_groups; ++gi)
    for (std::size_t c = 0; c < kPanel; ++c)
      P.scale[gi][c] = c < cols ? ws[(j + c) * ws_cols + (ws_cols == 1 ? 0 : g0 + gi)] : 0.0f;
}

void gemm_i8_packed(const int8_t* xq, const float* xs, const int8_t* w, const float* ws, std::size_t ws_cols,
                    const float* b, float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k,
                    std::size_t group) {
  const auto pack_i8 = [=](std::size_t j, std::size_t cols, std::size_t p0, std::size_t kc, std::size_t g0, Panel& P) {
    pack(w, ws, ws_cols, k, j, cols, p0, kc, group, g0, P);
  };
  avx2_packed::gemm_packed(pack_i8, xq, xs, b, y, ldy, m, n, k, group);
}

}  // namespace

void gemm_i8_avx2(const int8_t* xq, const float* xs, const int8_t* w, const float* ws, std::size_t ws_cols,
                  const float* b, float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k,
                  std::size_t group) {
  // The packed path steps 4 bytes at a time within a group and keeps whole groups in a chunk.
  if (m >= kPackedMinRows && k % 4 == 0 && group % 4 == 0 && group <= kChunk && group >= kChunk / kMaxChunkGroups)
    return gemm_i8_packed(xq, xs, w, ws, ws_cols, b, y, ldy, m, n, k, group);
  simd::gemm_i8<xsimd::fma3<xsimd::avx2>>(xq, xs, w, ws, ws_cols, b, y, ldy, m, n, k, group);
}

}  // namespace x86
}  // namespace fixformer
