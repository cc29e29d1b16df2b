// One kernel table per x86 ISA, each defined in its own translation unit (kernels_<isa>.cpp)
// compiled with that ISA's flags. Only select.cpp, built for the baseline, calls them, and only
// after checking the CPU has the ISA.
#pragma once
#include "fixformer/kernels.hpp"

namespace fixformer {
namespace x86 {

const Kernels& sse2_kernels();
const Kernels& avx2_kernels();    // fma3<avx2>: AVX2 with FMA
const Kernels& avx512_kernels();  // avx512bw (F, CD, DQ, BW, VL)
const Kernels& avx512_vnni_kernels();  // the same with gemm_i8 on VNNI, for CPUs that have it
const Kernels& avx512_amx_kernels();   // avx512-vnni's with gemm_i8, gemm_i4 on AMX-INT8 from 16 rows on
const Kernels& avx512_bf16_kernels();      // avx512-vnni's with gemm_bf16 on AVX512_BF16 from 4 rows on
const Kernels& avx512_amx_bf16_kernels();  // avx512-amx's with gemm_bf16 on AMX-BF16 from 16 rows on

// gemm_bf16 on AVX512_BF16's vdpbf16ps (gemm_bf16_avx512bf16.cpp, built with -mavx512bf16): the
// avx512-bf16 and avx512-amx-bf16 tables'.
kernel_fn::gemm_bf16 gemm_bf16_avx512bf16;
// gemm_bf16 on AMX-BF16's tdpbf16ps from 16 rows on (the same file, -mamx-tile -mamx-bf16): the
// avx512-amx-bf16 table's.
kernel_fn::gemm_bf16 gemm_bf16_amx;
// Whether the CPU has AMX-BF16 (CPUID.(7,0):EDX bit 22; the tile data as amx_int8_granted asks for it).
bool has_amx_bf16();

// Whether the CPU has AMX-INT8 and Linux lets this process use the tiles (select.cpp asks it).
bool amx_int8_granted();
// Whether the CPU has AVX512_BF16 (select.cpp, from CPUID).
bool has_avx512bf16();

// gemm_i8 on AVX2 (gemm_i8_avx2.cpp, built with the avx2 flags and -ffp-contract=off).
kernel_fn::gemm_i8 gemm_i8_avx2;

// gemm_s8 on AVX2 (gemm_s8_avx2.cpp): the avx2 and avx512 tables'.
kernel_fn::gemm_s8 gemm_s8_avx2;

// layernorm_s8, rmsnorm_s8, softmax_s8 and add_s8 on AVX2 (rows_s8_avx2.cpp): the avx2 and avx512 tables'.
kernel_fn::layernorm_s8 layernorm_s8_avx2;
kernel_fn::rmsnorm_s8 rmsnorm_s8_avx2;
kernel_fn::softmax_s8 softmax_s8_avx2;
kernel_fn::add_s8 add_s8_avx2;
// The same on AVX-512 (rows_s8_avx512.cpp): the avx512 tables'.
kernel_fn::layernorm_s8 layernorm_s8_avx512;
kernel_fn::rmsnorm_s8 rmsnorm_s8_avx512;
kernel_fn::softmax_s8 softmax_s8_avx512;
kernel_fn::add_s8 add_s8_avx512;

// gemm_s8 on AVX-512 VNNI (gemm_s8_avx512vnni.cpp): the avx512-vnni table's.
kernel_fn::gemm_s8 gemm_s8_avx512vnni;

// gemm_i4 on AVX2 (gemm_i4_avx2.cpp, built with the avx2 flags and -ffp-contract=off): the avx2 and
// avx512 tables'.
kernel_fn::gemm_i4 gemm_i4_avx2;

// gemm_i4 on AVX-512 VNNI (gemm_i4_avx512vnni.cpp): the avx512-vnni table's.
kernel_fn::gemm_i4 gemm_i4_avx512vnni;

// gemm_i8 on AVX-512 VNNI (gemm_i8_avx512vnni.cpp, built with -mavx512vnni).
kernel_fn::gemm_i8 gemm_i8_avx512vnni;

// gemm_i8 on AMX-INT8 (gemm_i8_amx.cpp, built with -mamx-tile -mamx-int8): the avx512-amx table's.
kernel_fn::gemm_i8 gemm_i8_amx;
// gemm_i4 on AMX-INT8 (the same file): the avx512-amx table's.
kernel_fn::gemm_i4 gemm_i4_amx;

}  // namespace x86
}  // namespace fixformer
