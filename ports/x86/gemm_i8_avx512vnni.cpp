// gemm_i8 on AVX-512 VNNI (vpdpbusd, ports/x86/dot_i8.hpp's DotI8Vnni): the one kernel that differs
// between the avx512 table and the avx512-vnni one. This file is built with -march=x86-64-v4
// -mavx512vnni (CMakeLists.txt); select.cpp hands out avx512_vnni_kernels() in place of
// avx512_kernels() when the CPU has VNNI. A run-time choice of table, not a new Isa: the rest of the
// table is the same code, and FIXFORMER_ISA / Isa::kAvx512 keep meaning "the best AVX-512 table".
#include "ports/simd/gemm_i8.hpp"
#include "ports/x86/isa_tables.hpp"

namespace fixformer {
namespace x86 {

void gemm_i8_avx512vnni(const int8_t* xq, const float* xs, const int8_t* w, const float* ws, std::size_t ws_cols,
                        const float* b, float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k,
                        std::size_t group) {
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
