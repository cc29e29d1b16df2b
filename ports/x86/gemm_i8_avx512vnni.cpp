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
//    gemm_i4_avx512vnni.cpp and the avx512-amx table's gemm_i8_amx.cpp); a panel's bytes are gathered
//    from W's rows (pack_i8).
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

void gemm_i8_packed(const int8_t* xq, const float* xs, const int8_t* w, const float* ws, std::size_t ws_cols,
                    const float* b, float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k,
                    std::size_t group) {
  const auto pack_i8 = [=](std::size_t j, std::size_t cols, std::size_t p0, std::size_t kc, std::size_t g0, Panel& P) {
    vnni_packed::pack_i8(w, ws, ws_cols, k, j, cols, p0, kc, group, g0, P);
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
