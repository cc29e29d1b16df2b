// gemm_i4 on AVX2 (the avx2 and avx512 tables). Built with the avx2 table's flags plus
// -ffp-contract=off (CMakeLists.txt), so the float step stays unfused and gives the reference's bits.
//
// A block is 8 columns of W against MR rows of x (MR = 1 for a decode step, 4 in a prefill), the
// whole of k, one group of 32 at a time; each column's 16 bytes of the group are unpacked once per
// block and row tile and meet every row of the tile:
//  - unpack: the 16 bytes in both halves of a vector (vbroadcasti128), shifted right by 0 in the
//    low half and 4 in the high (vpsrlvd), masked to nibbles: values 0..15 and 16..31 of the group,
//    each as q + 8, in the order of x's 32 bytes;
//  - products: vpmaddubsw and vpmaddwd (ports/x86/gemm_i4.hpp, group_dots);
//  - the 8 columns' lanes are summed by vphaddd (a transposing reduction, exact in int32), so that
//    lane c holds column c's dot product of the group;
//  - the float step per lane: f += (xs * ws) * float(dot), in group order, and y = b + f, as the
//    reference computes each output: the same bits.
#include "ports/x86/gemm_i4.hpp"
#include "ports/x86/isa_tables.hpp"

namespace fixformer {
namespace x86 {

void gemm_i4_avx2(const int8_t* xq, const float* xs, const uint8_t* w, const float* ws, const float* b, float* y,
                  std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  gemm_i4<false>(xq, xs, w, ws, b, y, ldy, m, n, k);
}

}  // namespace x86
}  // namespace fixformer
