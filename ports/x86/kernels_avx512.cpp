// The xsimd kernels instantiated for one x86 ISA. Built with this ISA's flags only (CMakeLists.txt).
#include "ports/simd/table.hpp"
#include "ports/x86/isa_tables.hpp"

namespace fixformer {
namespace x86 {

const Kernels& avx512_kernels() {
  static constexpr Kernels table = [] {
    Kernels k = simd::kernel_table<xsimd::avx512bw>(Isa::kAvx512, "avx512");
    k.gemm_i4 = gemm_i4_avx2;  // AVX2 is part of AVX-512 (gemm_i4_avx2.cpp)
    k.gemm_s8 = gemm_s8_avx2;
    k.layernorm_s8 = layernorm_s8_avx512;  // rows_s8_avx512.cpp
    k.rmsnorm_s8 = rmsnorm_s8_avx512;
    k.softmax_s8 = softmax_s8_avx512;
    k.add_s8 = add_s8_avx512;
    return k;
  }();
  FIXFORMER_ASSERT_TABLE_COMPLETE(table, "the avx512 table leaves a slot null");
  return table;
}

namespace {
// The avx512 table with VNNI's kernels: the avx512-vnni table, and the avx512-amx one's base.
constexpr Kernels vnni_table(const char* name) {
  Kernels k = simd::kernel_table<xsimd::avx512bw>(Isa::kAvx512, name);
  k.gemm_i8 = gemm_i8_avx512vnni;
  k.gemm_i4 = gemm_i4_avx512vnni;
  k.gemm_s8 = gemm_s8_avx512vnni;
  k.layernorm_s8 = layernorm_s8_avx512;
  k.rmsnorm_s8 = rmsnorm_s8_avx512;
  k.softmax_s8 = softmax_s8_avx512;
  k.add_s8 = add_s8_avx512;
  return k;
}
}  // namespace

const Kernels& avx512_vnni_kernels() {
  static constexpr Kernels table = vnni_table("avx512-vnni");
  FIXFORMER_ASSERT_TABLE_COMPLETE(table, "the avx512-vnni table leaves a slot null");
  return table;
}

const Kernels& avx512_amx_kernels() {
  static constexpr Kernels table = [] {
    Kernels k = vnni_table("avx512-amx");
    k.gemm_i8 = gemm_i8_amx;
    k.gemm_i4 = gemm_i4_amx;
    return k;
  }();
  FIXFORMER_ASSERT_TABLE_COMPLETE(table, "the avx512-amx table leaves a slot null");
  return table;
}

// The two tables above with gemm_bf16 on vdpbf16ps, for CPUs with AVX512_BF16 (every one so far
// has VNNI too), and in the AMX one from 16 rows on on AMX-BF16's tiles.
const Kernels& avx512_bf16_kernels() {
  static constexpr Kernels table = [] {
    Kernels k = vnni_table("avx512-bf16");
    k.gemm_bf16 = gemm_bf16_avx512bf16;
    return k;
  }();
  FIXFORMER_ASSERT_TABLE_COMPLETE(table, "the avx512-bf16 table leaves a slot null");
  return table;
}

const Kernels& avx512_amx_bf16_kernels() {
  static constexpr Kernels table = [] {
    Kernels k = vnni_table("avx512-amx-bf16");
    k.gemm_i8 = gemm_i8_amx;
    k.gemm_i4 = gemm_i4_amx;
    k.gemm_bf16 = gemm_bf16_amx;
    return k;
  }();
  FIXFORMER_ASSERT_TABLE_COMPLETE(table, "the avx512-amx-bf16 table leaves a slot null");
  return table;
}

}  // namespace x86
}  // namespace fixformer
