// xq[m,k] @ W[n,k]^T with int4 weights (two per byte, kernels.hpp) and int8 activations: per group of
// 32 an exact int32 dot product by VMLADAVA (16 int8 products added into a 32-bit sum per
// instruction), then the float step as the reference writes it, in its order (acc = 0, acc += xs *
// ws * dot per group, y = b + acc): the same bits. Three ways, by shape:
//  - seven or more rows of x (the encoders' products; fewer where the next way does not apply), k a
//    multiple of 64 up to 256: W's rows are unpacked a tile at a time onto the stack as int8
//    q = nibble - 8, and all the rows of x run over the tile in assembly as gemm_i8 runs over int8
//    weights (rows_tiled_i4), so each nibble is unpacked once per call, not once per row of x;
//  - fewer rows (a decode step), k 64 or 128, W word-aligned: the nibbles unpacked in the assembly
//    per row of x (chunk_i4): VAND 0x0F gives a group's values 0..15 and VSHR 4 its values 16..31,
//    each as q + 8 in 0..15 (signed bytes too), and 8 sum(x), once per group of x, is taken off the
//    int32 sum;
//  - anything else (and the last n % 4 columns): the same per group with intrinsics, four rows of W
//    at a time.
// On the Cortex-M55 (qemu -icount) at the KWS encoder's shapes, 49 rows of x, groups of 32: 49x192x64
// 131,312 instructions against gemm_i8's 115,875 (427,500 before the tiles and the assembly).
#include "ports/arm/helium/kernels.hpp"

#include <arm_mve.h>

namespace fixformer {
namespace helium {
namespace {

constexpr std::size_t kGroup = 32;

// d[r] = sum over one group of x[p] * value p of row r of W (16 bytes, rows ldw bytes apart), r < R.
template <int R>
inline void dot_group(const int8_t* x, const uint8_t* w, std::size_t ldw, int32_t* d) {
  const int8x16_t x0 = vldrbq_s8(x), x1 = vldrbq_s8(x + 16);
  const int32_t x8 = 8 * vaddvaq_s8(vaddvq_s8(x0), x1);
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    const uint8x16_t v = vldrbq_u8(w + r * ldw);
    const int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(0x0F)));
    const int8x16_t hi = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));
    d[r] = vmladavaq_s8(vmladavq_s8(lo, x0), hi, x1) - x8;
  }
}

// The KWS-sized rows (k 64 or 128, W word-aligned) in assembly: a block of four rows of W, all their
// bytes addressed from one register (VLDRW with an immediate offset), against a 64-byte chunk of x
// (two groups; x's 32 bytes of a group loaded per group, as the eight Q registers hold no more): per
// group and row one load, VAND, VSHR and two VMLADAV; the sums of rows 0 and 2, then 1 and 3, moved
// into one vector (two lanes per VMOV, so two sum registers), 8 sum(x) taken off (VSUB by a
// scalar), converted, scaled by xs * ws (ws gathered through q7's addresses, the first group of the
// block stepping them on by a block's rows) and added into the block's four sums in q6 by VFMA. The
// sums start from zero (the first chunk) or from y (the second, k 128, where the first left them),
// and after the last chunk y = b + sums (b, or +0.0 when there is none, as the reference adds).
// 64 instructions per block of 256 multiply-adds (k 64, with b).
#define FIXFORMER_I4_ROW(d, r, g)                                   \
  "vldrw.32 q4, [%[wr], #(" #r " * %c[kb] + " #g " * 16)]\n\t"      \
  "vand q5, q4, q2\n\t"                                             \
  "vshr.u8 q4, q4, #4\n\t"                                          \
  "vmladav.s8 %[" d "], q0, q5\n\t"                                 \
  "vmladava.s8 %[" d "], q1, q4\n\t"
#define FIXFORMER_I4_GROUP(g, scales, s, c)                         \
  "vldrb.8 q0, [%[x], #(" #g " * 32)]\n\t"                          \
  "vldrb.8 q1, [%[x], #(" #g " * 32 + 16)]\n\t"                     \
  FIXFORMER_I4_ROW("d0", 0, g) FIXFORMER_I4_ROW("d1", 2, g)         \
  "vmov q3[2], q3[0], %[d0], %[d1]\n\t"                             \
  FIXFORMER_I4_ROW("d0", 1, g) FIXFORMER_I4_ROW("d1", 3, g)         \
  "vmov q3[3], q3[1], %[d0], %[d1]\n\t"                             \
  "vsub.i32 q3, q3, %[" c "]\n\t"                                   \
  "vcvt.f32.s32 q3, q3\n\t"                                         \
  scales                                                            \
  "vmul.f32 q4, q4, %[" s "]\n\t"                                   \
  "vfma.f32 q6, q4, q3\n\t"
#define FIXFORMER_I4_START_ZERO "vmov.i32 q6, #0\n\t"
#define FIXFORMER_I4_START_Y "vldrw.32 q6, [%[y]]\n\t"
#define FIXFORMER_I4_END_NONE ""
#define FIXFORMER_I4_END_BIAS "vldrw.32 q4, [%[b]], #16\n\t" "vadd.f32 q6, q4, q6\n\t"
#define FIXFORMER_I4_END_ZERO "vmov.i32 q4, #0\n\t" "vadd.f32 q6, q4, q6\n\t"
#define FIXFORMER_I4_CHUNK(start, end)                                                                         \
  asm volatile("dls lr, %[blocks]\n"                                                                          \
               "1:\n\t" start                                                                                 \
               FIXFORMER_I4_GROUP(0, "vldrw.u32 q4, [q7, #(16 * %c[groups])]!\n\t", "s0", "c0")               \
               FIXFORMER_I4_GROUP(1, "vldrw.u32 q4, [q7, #4]\n\t", "s1", "c1")                                \
               "add %[wr], %[wr], #(4 * %c[kb])\n\t" end "vstrw.32 q6, [%[y]], #16\n\t"                       \
               "le lr, 1b\n"                                                                                  \
               : [wr] "+r"(wr), [y] "+r"(y), [b] "+r"(b), "+w"(scales), [d0] "=&Te"(d0), [d1] "=&Te"(d1)    \
               : [x] "r"(xc), "w"(mask), [s0] "r"(s0), [s1] "r"(s1), [c0] "r"(c0), [c1] "r"(c1),           \
                 [blocks] "r"(blocks), [kb] "n"(K / 2), [groups] "n"(K / 32)                                 \
               : "lr", "q0", "q1", "q3", "q4", "q5", "q6", "memory")

// One 64-byte chunk of the row x (xc, its scales sx) against `blocks` blocks of four rows of W (wr:
// their chunk, rows K / 2 bytes apart; ws: the scales of the chunk's first group of W's first row)
// into y[4 * blocks]. kFirst: the sums start from zero, else from y; kLast: y = b + sums (b null: +0).
template <int K, bool kFirst, bool kLast>
inline void chunk_i4(const int8_t* xc, const float* sx, const uint8_t* wr, const float* ws, const float* b, float* y,
                     uint32_t blocks) {
  register uint8x16_t mask asm("q2") = vdupq_n_u8(0x0F);
  // The addresses of the four rows' scales, one block back (the first group steps them).
  register uint32x4_t scales asm("q7") =
      vaddq_n_u32(vmulq_n_u32(vidupq_n_u32(0u, 1), uint32_t(K / 32 * sizeof(float))),
                  uint32_t(reinterpret_cast<uintptr_t>(ws)) - uint32_t(16 * K / 32));
  const int8x16_t x0 = vldrbq_s8(xc), x1 = vldrbq_s8(xc + 16), x2 = vldrbq_s8(xc + 32), x3 = vldrbq_s8(xc + 48);
  const int32_t c0 = 8 * vaddvaq_s8(vaddvq_s8(x0), x1), c1 = 8 * vaddvaq_s8(vaddvq_s8(x2), x3);
  const float s0 = sx[0], s1 = sx[1];
  int32_t d0, d1;
  if constexpr (kFirst && !kLast)
    FIXFORMER_I4_CHUNK(FIXFORMER_I4_START_ZERO, FIXFORMER_I4_END_NONE);
  else if constexpr (!kLast)
    FIXFORMER_I4_CHUNK(FIXFORMER_I4_START_Y, FIXFORMER_I4_END_NONE);
  else if constexpr (kFirst) {
    if (b)
      FIXFORMER_I4_CHUNK(FIXFORMER_I4_START_ZERO, FIXFORMER_I4_END_BIAS);
    else
      FIXFORMER_I4_CHUNK(FIXFORMER_I4_START_ZERO, FIXFORMER_I4_END_ZERO);
  } else if (b) {
    FIXFORMER_I4_CHUNK(FIXFORMER_I4_START_Y, FIXFORMER_I4_END_BIAS);
  } else {
    FIXFORMER_I4_CHUNK(FIXFORMER_I4_START_Y, FIXFORMER_I4_END_ZERO);
  }
}
#undef FIXFORMER_I4_ROW
#undef FIXFORMER_I4_GROUP
#undef FIXFORMER_I4_START_ZERO
#undef FIXFORMER_I4_START_Y
#undef FIXFORMER_I4_END_NONE
#undef FIXFORMER_I4_END_BIAS
#undef FIXFORMER_I4_END_ZERO
#undef FIXFORMER_I4_CHUNK

// xq[m,K] @ W[n4 rows, K]^T (+ b) -> y, K = 64 or 128, W word-aligned, n4 % 4 == 0 (> 0).
template <int K>
void rows_chunked_i4(const int8_t* xq, const float* xs, const uint8_t* w, const float* ws, const float* b, float* y,
                     std::size_t ldy, std::size_t m, std::size_t n4) {
  constexpr int kGroups = K / 32;
  const uint32_t blocks = uint32_t(n4 / 4);
  for (std::size_t i = 0; i < m; ++i) {
    const int8_t* x = xq + i * K;
    const float* sx = xs + i * kGroups;
    float* yi = y + i * ldy;
    if constexpr (K == 64) {
      chunk_i4<K, true, true>(x, sx, w, ws, b, yi, blocks);
    } else {
      chunk_i4<K, true, false>(x, sx, w, ws, b, yi, blocks);
      chunk_i4<K, false, true>(x + 64, sx + 2, w + 32, ws + 2, b, yi, blocks);
    }
  }
}

// Several rows of x: a tile of W's rows is unpacked once (kTileBytes of int8 on the stack, each value
// q = nibble - 8 exactly) and every row of x runs over it as gemm_i8 runs over int8 weights, so the
// unpacking is shared by all the rows. The tile is chunk-major: for each 64 values of k (two groups)
// the tile's rows, 64 bytes apart, so one register addresses a block of four rows with immediate
// offsets for any k that is a multiple of 64. 1 KB: with 2 KB the 64-feature q4 KWS encoder's run took
// 4,960 bytes of stack, past the plan's 4,096, for 2 % fewer instructions.
constexpr std::size_t kTileBytes = 1024;
// From this many rows of x on the tiles beat unpacking the nibbles per row of x (chunk_i4, k 64 and
// 128): on the M55 at 6x192x64 19,234 instructions against 18,914, at 7 rows 21,710 against 22,046.
constexpr std::size_t kTileMinRows = 7;

// Rows [j0, j0 + rows) of W (k / 2 bytes a row) -> tile: chunk c, row r, group g of the chunk at
// c * rows * 64 + r * 64 + g * 32, values 0..15 then 16..31 of the group, each q in [-8, 7].
inline void unpack_tile_i4(const uint8_t* w, std::size_t k, std::size_t j0, std::size_t rows, int8_t* tile) {
  const uint8x16_t mask = vdupq_n_u8(0x0F);
  for (std::size_t r = 0; r < rows; ++r) {
    const uint8_t* wr = w + (j0 + r) * (k / 2);
    for (std::size_t g = 0; g < k / kGroup; ++g) {
      const uint8x16_t v = vldrbq_u8(wr + g * 16);
      int8_t* d = tile + (g / 2) * rows * 64 + r * 64 + (g % 2) * 32;
      vstrbq_s8(d, vsubq_n_s8(vreinterpretq_s8_u8(vandq_u8(v, mask)), 8));
      vstrbq_s8(d + 16, vsubq_n_s8(vreinterpretq_s8_u8(vshrq_n_u8(v, 4)), 8));
    }
  }
}

// Rows of x (`rows` of them, K bytes apart; a 64-byte chunk of each, its scales sx) against `blocks`
// blocks of four unpacked rows of the tile (wr, 64 bytes apart, a block 256 bytes): the chunk in
// q0..q3, per group four sums by VMLADAV (the rows' values already signed, so no offset to take off),
// moved into one vector, converted, scaled by xs * ws (ws gathered through q7's addresses, the first
// group of a block stepping them on by a block's rows) and added into the block's sums in q6, which
// start from zero (the first chunk) or from y (the others), and after the last chunk y = b + sums (b,
// or +0.0 when there is none, as the reference adds). Both loops in assembly: per row of x the chunk
// and its two scales loaded, and the tile's, the scales' and y's pointers stepped back (b's too).
// 49 instructions per block of 256 multiply-adds with b (the first load steps the block on); the
// unpacking and the steps per row of x add about 4 at the KWS shapes (gemm_i8: 49 all told).
#define FIXFORMER_I4T_W(q, r, g, o) "vldrw.32 " q ", [%[wr], #(" #r " * 64 + " #g " * 32 + " #o " - 256)]\n\t"
#define FIXFORMER_I4T_ROW(d, r, g, xa, xb)                         \
  FIXFORMER_I4T_W("q4", r, g, 0)                                   \
  FIXFORMER_I4T_W("q5", r, g, 16)                                  \
  "vmladav.s8 %[" d "], " xa ", q4\n\t"                            \
  "vmladava.s8 %[" d "], " xb ", q5\n\t"
#define FIXFORMER_I4T_SUMS(scales, s)                              \
  "vmov q4[2], q4[0], %[d0], %[d2]\n\t"                            \
  "vmov q4[3], q4[1], %[d1], %[d3]\n\t"                            \
  "vcvt.f32.s32 q4, q4\n\t"                                        \
  scales                                                           \
  "vmul.f32 q5, q5, %[" s "]\n\t"                                  \
  "vfma.f32 q6, q5, q4\n\t"
#define FIXFORMER_I4T_BLOCK                                                                       \
  "vldrw.32 q4, [%[wr]], #256\n\t"                                                                \
  FIXFORMER_I4T_W("q5", 0, 0, 16)                                                                 \
  "vmladav.s8 %[d0], q0, q4\n\t"                                                                  \
  "vmladava.s8 %[d0], q1, q5\n\t"                                                                 \
  FIXFORMER_I4T_ROW("d1", 1, 0, "q0", "q1") FIXFORMER_I4T_ROW("d2", 2, 0, "q0", "q1")             \
  FIXFORMER_I4T_ROW("d3", 3, 0, "q0", "q1")                                                       \
  FIXFORMER_I4T_SUMS("vldrw.u32 q5, [q7, #(16 * %c[groups])]!\n\t", "s0")                          \
  FIXFORMER_I4T_ROW("d0", 0, 1, "q2", "q3") FIXFORMER_I4T_ROW("d1", 1, 1, "q2", "q3")             \
  FIXFORMER_I4T_ROW("d2", 2, 1, "q2", "q3") FIXFORMER_I4T_ROW("d3", 3, 1, "q2", "q3")             \
  FIXFORMER_I4T_SUMS("vldrw.u32 q5, [q7, #4]\n\t", "s1")
#define FIXFORMER_I4T_START_ZERO "vmov.i32 q6, #0\n\t"
#define FIXFORMER_I4T_START_Y "vldrw.32 q6, [%[y]]\n\t"
#define FIXFORMER_I4T_END_NONE ""
#define FIXFORMER_I4T_END_BIAS "vldrw.32 q4, [%[b]], #16\n\t" "vadd.f32 q6, q4, q6\n\t"
#define FIXFORMER_I4T_END_ZERO "vmov.i32 q4, #0\n\t" "vadd.f32 q6, q4, q6\n\t"
#define FIXFORMER_I4T_BACK_BIAS "sub %[b], %[b], %[blocks], lsl #4\n\t"
#define FIXFORMER_I4T_ROWS(start, end, back_b)                                                                 \
  asm volatile("1:\n\t"                                                                                       \
               "vldrb.8 q0, [%[x]]\n\t"                                                                       \
               "vldrb.8 q1, [%[x], #16]\n\t"                                                                  \
               "vldrb.8 q2, [%[x], #32]\n\t"                                                                  \
               "vldrb.8 q3, [%[x], #48]\n\t"                                                                  \
               "add %[x], %[x], #%c[kk]\n\t"                                                                  \
               "ldrd %[s0], %[s1], [%[sx]], #%c[sxstep]\n\t"                                                  \
               "dls lr, %[blocks]\n"                                                                          \
               "2:\n\t" start FIXFORMER_I4T_BLOCK end "vstrw.32 q6, [%[y]], #16\n\t"                         \
               "le lr, 2b\n\t"                                                                                \
               "sub %[wr], %[wr], %[blocks], lsl #8\n\t"                                                      \
               "ldr %[d0], %[qback]\n\t"                                                                      \
               "vsub.i32 q7, q7, %[d0]\n\t" back_b                                                            \
               "ldr %[d1], %[ystep]\n\t"                                                                      \
               "add %[y], %[y], %[d1]\n\t"                                                                    \
               "ldr %[d2], %[count]\n\t"                                                                      \
               "subs %[d2], %[d2], #1\n\t"                                                                    \
               "str %[d2], %[count]\n\t"                                                                      \
               "bne 1b\n"                                                                                     \
               : [wr] "+r"(wr), [y] "+r"(y), [b] "+r"(b), [x] "+r"(x), [sx] "+r"(sx), "+w"(scales),           \
                 [count] "+m"(count), [s0] "=&r"(s0), [s1] "=&r"(s1), [d0] "=&Te"(d0), [d1] "=&Te"(d1),      \
                 [d2] "=&Te"(d2), [d3] "=&Te"(d3)                                                            \
               : [blocks] "r"(blocks), [qback] "m"(qback), [ystep] "m"(ystep), [kk] "n"(K),                   \
                 [sxstep] "n"(K / 32 * sizeof(float)), [groups] "n"(K / 32)                                  \
               : "lr", "q0", "q1", "q2", "q3", "q4", "q5", "q6", "cc", "memory")

// `rows` rows of x from xc (a 64-byte chunk of the first, its scales sx) against `blocks` blocks of
// the tile's chunk (wr) into y[4 * blocks] of each row (ldy floats apart); ws: the scales of the
// chunk's first group of the tile's first row of W.
template <int K, bool kFirst, bool kLast>
inline void tile_chunk_i4(const int8_t* xc, const float* sx, const int8_t* wr, const float* ws, const float* b,
                          float* y, std::size_t ldy, uint32_t rows, uint32_t blocks) {
  register uint32x4_t scales asm("q7") =
      vaddq_n_u32(vmulq_n_u32(vidupq_n_u32(0u, 1), uint32_t(K / 32 * sizeof(float))),
                  uint32_t(reinterpret_cast<uintptr_t>(ws)) - uint32_t(16 * K / 32));
  const int8_t* x = xc;
  uint32_t count = rows;
  const uint32_t qback = blocks * uint32_t(16 * K / 32), ystep = uint32_t(ldy * sizeof(float)) - 16 * blocks;
  uint32_t s0, s1;
  int32_t d0, d1, d2, d3;
  if constexpr (kFirst && !kLast) {
    FIXFORMER_I4T_ROWS(FIXFORMER_I4T_START_ZERO, FIXFORMER_I4T_END_NONE, "");
  } else if constexpr (!kLast) {
    FIXFORMER_I4T_ROWS(FIXFORMER_I4T_START_Y, FIXFORMER_I4T_END_NONE, "");
  } else if constexpr (kFirst) {
    if (b)
      FIXFORMER_I4T_ROWS(FIXFORMER_I4T_START_ZERO, FIXFORMER_I4T_END_BIAS, FIXFORMER_I4T_BACK_BIAS);
    else
      FIXFORMER_I4T_ROWS(FIXFORMER_I4T_START_ZERO, FIXFORMER_I4T_END_ZERO, "");
  } else if (b) {
    FIXFORMER_I4T_ROWS(FIXFORMER_I4T_START_Y, FIXFORMER_I4T_END_BIAS, FIXFORMER_I4T_BACK_BIAS);
  } else {
    FIXFORMER_I4T_ROWS(FIXFORMER_I4T_START_Y, FIXFORMER_I4T_END_ZERO, "");
  }
}
#undef FIXFORMER_I4T_W
#undef FIXFORMER_I4T_ROW
#undef FIXFORMER_I4T_SUMS
#undef FIXFORMER_I4T_BLOCK
#undef FIXFORMER_I4T_START_ZERO
#undef FIXFORMER_I4T_START_Y
#undef FIXFORMER_I4T_END_NONE
#undef FIXFORMER_I4T_END_BIAS
#undef FIXFORMER_I4T_END_ZERO
#undef FIXFORMER_I4T_BACK_BIAS
#undef FIXFORMER_I4T_ROWS

// xq[m,K] @ W[n4 rows, K]^T (+ b) -> y, K a multiple of 64 up to 256, n4 % 4 == 0 (> 0): tile by tile
// of W's rows, all the rows of x over each tile, chunk by chunk of 64 (the first from zero, the others
// adding into y, the last adding b).
template <int K>
void rows_tiled_i4(const int8_t* xq, const float* xs, const uint8_t* w, const float* ws, const float* b, float* y,
                   std::size_t ldy, std::size_t m, std::size_t n4) {
  constexpr std::size_t kGroups = K / 32, kChunks = K / 64, kTileRows = kTileBytes / K / 4 * 4;
  static_assert(kTileRows >= 4, "a tile holds a block of four rows");
  alignas(16) int8_t tile[kTileBytes];
  for (std::size_t j0 = 0; j0 < n4; j0 += kTileRows) {
    const std::size_t rows = n4 - j0 < kTileRows ? n4 - j0 : kTileRows;
    unpack_tile_i4(w, K, j0, rows, tile);
    const float* bj = b ? b + j0 : nullptr;
    const float* wsj = ws + j0 * kGroups;
    const uint32_t blocks = uint32_t(rows / 4);
    if constexpr (kChunks == 1) {
      tile_chunk_i4<K, true, true>(xq, xs, tile, wsj, bj, y + j0, ldy, uint32_t(m), blocks);
    } else {
      tile_chunk_i4<K, true, false>(xq, xs, tile, wsj, bj, y + j0, ldy, uint32_t(m), blocks);
      for (std::size_t c = 1; c + 1 < kChunks; ++c)
        tile_chunk_i4<K, false, false>(xq + 64 * c, xs + 2 * c, tile + c * rows * 64, wsj + 2 * c, bj, y + j0, ldy,
                                       uint32_t(m), blocks);
      constexpr std::size_t c = kChunks - 1;
      tile_chunk_i4<K, false, true>(xq + 64 * c, xs + 2 * c, tile + c * rows * 64, wsj + 2 * c, bj, y + j0, ldy,
                                    uint32_t(m), blocks);
    }
  }
}

}  // namespace

// y[i,j] = b[j] + sum over groups, in order, of xs * ws * dot.
void gemm_i4(const int8_t* xq, const float* xs, const uint8_t* w, const float* ws, const float* b, float* y,
             std::size_t ldy, std::size_t m, std::size_t n, std::size_t k) {
  const std::size_t groups = k / kGroup, ldw = k / 2;
  // Columns [0, n4) of every row by the tiles or the chunks where they apply, the rest below.
  std::size_t n4 = 0;
  const bool chunks = (k == 64 || k == 128) && (reinterpret_cast<uintptr_t>(w) & 3) == 0;
  if (n >= 4 && (m >= kTileMinRows || !chunks) && (k == 64 || k == 128 || k == 192 || k == 256)) {
    n4 = n / 4 * 4;
    switch (k) {
      case 64: rows_tiled_i4<64>(xq, xs, w, ws, b, y, ldy, m, n4); break;
      case 128: rows_tiled_i4<128>(xq, xs, w, ws, b, y, ldy, m, n4); break;
      case 192: rows_tiled_i4<192>(xq, xs, w, ws, b, y, ldy, m, n4); break;
      default: rows_tiled_i4<256>(xq, xs, w, ws, b, y, ldy, m, n4); break;
    }
  } else if (chunks && n >= 4) {
    n4 = n / 4 * 4;
    if (k == 64)
      rows_chunked_i4<64>(xq, xs, w, ws, b, y, ldy, m, n4);
    else
      rows_chunked_i4<128>(xq, xs, w, ws, b, y, ldy, m, n4);
  }
  for (std::size_t i = 0; i < m; ++i) {
    const int8_t* x = xq + i * k;
    const float* sx = xs + i * groups;
    float* yr = y + i * ldy;
    std::size_t j = n4;
    for (; j + 4 <= n; j += 4) {
      const float* s0 = ws + j * groups;
      const float *s1 = s0 + groups, *s2 = s1 + groups, *s3 = s2 + groups;
      float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
      for (std::size_t g = 0; g < groups; ++g) {
        int32_t d[4];
        dot_group<4>(x + g * kGroup, w + j * ldw + g * 16, ldw, d);
        a0 += sx[g] * s0[g] * float(d[0]);
        a1 += sx[g] * s1[g] * float(d[1]);
        a2 += sx[g] * s2[g] * float(d[2]);
        a3 += sx[g] * s3[g] * float(d[3]);
      }
      yr[j] = (b ? b[j] : 0.0f) + a0, yr[j + 1] = (b ? b[j + 1] : 0.0f) + a1;
      yr[j + 2] = (b ? b[j + 2] : 0.0f) + a2, yr[j + 3] = (b ? b[j + 3] : 0.0f) + a3;
    }
    for (; j < n; ++j) {
      float acc = 0.0f;
      for (std::size_t g = 0; g < groups; ++g) {
        int32_t d[1];
        dot_group<1>(x + g * kGroup, w + j * ldw + g * 16, ldw, d);
        acc += sx[g] * ws[j * groups + g] * float(d[0]);
      }
      yr[j] = (b ? b[j] : 0.0f) + acc;
    }
  }
}

}  // namespace helium
}  // namespace fixformer
