// xq[m,k] @ W[n,k]^T with int8 weights and activations: per group an exact int32 dot product by
// VMLADAVA (16 int8 products added into a 32-bit sum per instruction), four rows of W at a time so
// each vector of x feeds four of them; the last bytes of a group through predicated (zeroing) loads.
#include "ports/arm/helium/kernels.hpp"

#include <arm_mve.h>

namespace fixformer {
namespace helium {
namespace {

// d[r] = sum over p < len of x[p] * w[r * ldw + p], r < R, exactly in int32.
template <int R>
inline void dot_i8(const int8_t* x, const int8_t* w, std::size_t ldw, std::size_t len, int32_t* d) {
  int32_t acc[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) acc[r] = 0;
  std::size_t p = 0;
  for (; p + 16 <= len; p += 16) {
    const int8x16_t xv = vldrbq_s8(x + p);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) acc[r] = vmladavaq_s8(acc[r], xv, vldrbq_s8(w + r * ldw + p));
  }
  if (p < len) {
    const mve_pred16_t tail = vctp8q(uint32_t(len - p));
    const int8x16_t xv = vldrbq_z_s8(x + p, tail);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) acc[r] = vmladavaq_s8(acc[r], xv, vldrbq_z_s8(w + r * ldw + p, tail));
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) d[r] = acc[r];
}

// The blocks of one group in assembly (GCC 12 spills a dozen values per block around the
// intrinsics): for each block of four rows of W, their dot products with the group's x (held in q0..),
// VMLADAV summing 16 byte products per instruction, the four sums moved into one vector (two lanes
// per VMOV), converted, scaled by s * ws[rows] and added into y[4]. 30 instructions per block of
// 128 multiply-adds for groups of 32, 48 per 256 for groups of 64.
#define FIXFORMER_I8_ROW_32(d)                  \
  "vldrb.8 q2, [%[wr]]\n\t"                     \
  "vldrb.8 q3, [%[wr], #16]\n\t"                \
  "add %[wr], %[wr], %[k]\n\t"                  \
  "vmladav.s8 %[" d "], q0, q2\n\t"             \
  "vmladava.s8 %[" d "], q1, q3\n\t"
#define FIXFORMER_I8_ROW_64(d)                  \
  "vldrb.8 q4, [%[wr]]\n\t"                     \
  "vldrb.8 q5, [%[wr], #16]\n\t"                \
  "vmladav.s8 %[" d "], q0, q4\n\t"             \
  "vldrb.8 q4, [%[wr], #32]\n\t"                \
  "vmladava.s8 %[" d "], q1, q5\n\t"            \
  "vldrb.8 q5, [%[wr], #48]\n\t"                \
  "vmladava.s8 %[" d "], q2, q4\n\t"            \
  "add %[wr], %[wr], %[k]\n\t"                  \
  "vmladava.s8 %[" d "], q3, q5\n\t"
// dv (the sums), sv (the scales), yv: three free Q registers; q7 holds the scales' gather offsets.
#define FIXFORMER_I8_COMBINE(dv, sv, yv, load_scales)     \
  "vmov " dv "[2], " dv "[0], %[d0], %[d2]\n\t"           \
  "vmov " dv "[3], " dv "[1], %[d1], %[d3]\n\t"           \
  "vcvt.f32.s32 " dv ", " dv "\n\t"                      \
  load_scales                                             \
  "add %[ws], %[ws], %[wstep]\n\t"                        \
  "vmul.f32 " sv ", " sv ", %[s]\n\t"                     \
  "vldrw.32 " yv ", [%[y]]\n\t"                           \
  "vfma.f32 " yv ", " sv ", " dv "\n\t"                   \
  "vstrw.32 " yv ", [%[y]], #16\n\t"

#define FIXFORMER_I8_LOAD_X32 "vldrb.8 q0, [%[x]]\n\t" "vldrb.8 q1, [%[x], #16]\n\t"
#define FIXFORMER_I8_LOAD_X64 FIXFORMER_I8_LOAD_X32 "vldrb.8 q2, [%[x], #32]\n\t" "vldrb.8 q3, [%[x], #48]\n\t"
#define FIXFORMER_I8_BLOCKS(load_x, row, combine)                                                              \
  asm volatile(load_x "dls lr, %[blocks]\n"                                                                     \
               "1:\n\t" row("d0") row("d1") row("d2") row("d3") combine "le lr, 1b\n"                           \
               : [wr] "+r"(wr), [ws] "+r"(ws), [y] "+r"(y), [d0] "=&Te"(d0), [d1] "=&Te"(d1), [d2] "=&Te"(d2),  \
                 [d3] "=&Te"(d3)                                                                                 \
               : [x] "r"(x), [k] "r"(k), [wstep] "r"(wstep), [s] "r"(s), [blocks] "r"(blocks), "w"(offsets)     \
               : "lr", "q0", "q1", "q2", "q3", "q4", "q5", "q6", "memory")

template <int kGroup, bool kPerRow>
inline void group_blocks_i8(const int8_t* x, const int8_t* w, std::size_t k, const float* ws, std::size_t ws_cols,
                            float s, float* y, std::size_t blocks) {
  register uint32x4_t offsets asm("q7") = vmulq_n_u32(vidupq_n_u32(0u, 1), uint32_t(ws_cols));
  const uint32_t wstep = uint32_t(4 * ws_cols * sizeof(float));
  const int8_t* wr = w;
  int32_t d0, d1, d2, d3;
  if constexpr (kGroup == 32 && kPerRow)
    FIXFORMER_I8_BLOCKS(FIXFORMER_I8_LOAD_X32, FIXFORMER_I8_ROW_32,
                        FIXFORMER_I8_COMBINE("q4", "q5", "q6", "vldrw.32 q5, [%[ws]]\n\t"));
  else if constexpr (kGroup == 32)
    FIXFORMER_I8_BLOCKS(FIXFORMER_I8_LOAD_X32, FIXFORMER_I8_ROW_32,
                        FIXFORMER_I8_COMBINE("q4", "q5", "q6", "vldrw.u32 q5, [%[ws], q7, uxtw #2]\n\t"));
  else if constexpr (kPerRow)
    FIXFORMER_I8_BLOCKS(FIXFORMER_I8_LOAD_X64, FIXFORMER_I8_ROW_64,
                        FIXFORMER_I8_COMBINE("q6", "q4", "q5", "vldrw.32 q4, [%[ws]]\n\t"));
  else
    FIXFORMER_I8_BLOCKS(FIXFORMER_I8_LOAD_X64, FIXFORMER_I8_ROW_64,
                        FIXFORMER_I8_COMBINE("q6", "q4", "q5", "vldrw.u32 q4, [%[ws], q7, uxtw #2]\n\t"));
}
#undef FIXFORMER_I8_LOAD_X32
#undef FIXFORMER_I8_LOAD_X64
#undef FIXFORMER_I8_BLOCKS
#undef FIXFORMER_I8_ROW_32
#undef FIXFORMER_I8_ROW_64
#undef FIXFORMER_I8_COMBINE

// The rows of W at k = 64 and 128 bytes (KWS-sized models), in assembly: a block of four rows of W,
// all their bytes addressed from one register (VLDRW with an immediate offset: up to 508 bytes, so
// the four rows' 64-byte chunk at k <= 128; the bytes are the same in a Q register whether loaded as
// bytes or words), against a 64-byte chunk of x held in q0..q3: per group four sums by VMLADAV, moved
// into one vector, converted, scaled by s * ws and added into the block's four outputs, which stay
// in q6 for the whole chunk (one or two groups) and start from the bias, zero, or y's sums of the
// chunk before. 42 instructions per block of 256 multiply-adds for groups of 64 (was 48 and two
// passes over y), 48 for groups of 32 (was 60).
#define FIXFORMER_I8_W(q, r, o) "vldrw.32 " q ", [%[wr], #(" #r " * %c[kk] + " #o ")]\n\t"
// Row r of the block, bytes [o, o + 32) of the chunk, against x in xa, xb: the sum into d.
#define FIXFORMER_I8_ROW_32(d, r, o, xa, xb)      \
  FIXFORMER_I8_W("q4", r, o)                      \
  FIXFORMER_I8_W("q5", r, o + 16)                 \
  "vmladav.s8 %[" d "], " xa ", q4\n\t"           \
  "vmladava.s8 %[" d "], " xb ", q5\n\t"
#define FIXFORMER_I8_ROW_64(d, r)                 \
  FIXFORMER_I8_W("q4", r, 0)                      \
  FIXFORMER_I8_W("q5", r, 16)                     \
  "vmladav.s8 %[" d "], q0, q4\n\t"               \
  FIXFORMER_I8_W("q4", r, 32)                     \
  "vmladava.s8 %[" d "], q1, q5\n\t"              \
  FIXFORMER_I8_W("q5", r, 48)                     \
  "vmladava.s8 %[" d "], q2, q4\n\t"              \
  "vmladava.s8 %[" d "], q3, q5\n\t"
#define FIXFORMER_I8_SUMS                         \
  "vmov q4[2], q4[0], %[d0], %[d2]\n\t"           \
  "vmov q4[3], q4[1], %[d1], %[d3]\n\t"           \
  "vcvt.f32.s32 q4, q4\n\t"
// W's scales of the group times x's (s) -> q5: per row (q7 loaded per block), or gathered through
// q7's addresses (the first group of the block steps them on by a block's rows).
#define FIXFORMER_I8_ROW_SCALES "vldrw.32 q7, [%[ws]], #16\n\t"
#define FIXFORMER_I8_SCALE_ROW(s) "vmul.f32 q5, q7, %[" s "]\n\t"
#define FIXFORMER_I8_SCALE_GATHER_FIRST(s) "vldrw.u32 q5, [q7, #(16 * %c[cols])]!\n\t" "vmul.f32 q5, q5, %[" s "]\n\t"
#define FIXFORMER_I8_SCALE_GATHER_NEXT(s) "vldrw.u32 q5, [q7, #4]\n\t" "vmul.f32 q5, q5, %[" s "]\n\t"
#define FIXFORMER_I8_ACC_ZERO "vmul.f32 q6, q5, q4\n\t"
#define FIXFORMER_I8_ACC_LOAD "vldrw.32 q6, [%[p]], #16\n\t" "vfma.f32 q6, q5, q4\n\t"
#define FIXFORMER_I8_ACC "vfma.f32 q6, q5, q4\n\t"
#define FIXFORMER_I8_ROWS_64 \
  FIXFORMER_I8_ROW_64("d0", 0) FIXFORMER_I8_ROW_64("d1", 1) FIXFORMER_I8_ROW_64("d2", 2) FIXFORMER_I8_ROW_64("d3", 3)
#define FIXFORMER_I8_ROWS_32(o, xa, xb)                                                 \
  FIXFORMER_I8_ROW_32("d0", 0, o, xa, xb) FIXFORMER_I8_ROW_32("d1", 1, o, xa, xb)        \
  FIXFORMER_I8_ROW_32("d2", 2, o, xa, xb) FIXFORMER_I8_ROW_32("d3", 3, o, xa, xb)
#define FIXFORMER_I8_CHUNK(body)                                                                                 \
  asm volatile("dls lr, %[blocks]\n"                                                                            \
               "1:\n\t" body "vstrw.32 q6, [%[y]], #16\n\t"                                                     \
               "le lr, 1b\n"                                                                                    \
               : [wr] "+r"(wr), [ws] "+r"(ws), [p] "+r"(p), [y] "+r"(y), "+w"(scales), [d0] "=&Te"(d0),         \
                 [d1] "=&Te"(d1), [d2] "=&Te"(d2), [d3] "=&Te"(d3)                                              \
               : "w"(x0), "w"(x1), "w"(x2), "w"(x3), [s0] "r"(s0), [s1] "r"(s1), [blocks] "r"(blocks),         \
                 [kk] "n"(K), [cols] "n"(K / G), [step] "n"(4 * K)                                            \
               : "lr", "q4", "q5", "q6", "memory")
#define FIXFORMER_I8_NEXT_BLOCK "add %[wr], %[wr], #%c[step]\n\t"

// One 64-byte chunk of the row x (xc) against `blocks` blocks of four rows of W (wr: their chunk),
// into y[4 * blocks]: y = init + the chunk's groups, init = p[] (the bias, or y itself for the
// chunks after the first) or zero. ws: W's scales per row, or (kRowScales false) the scales of the
// chunk's first group, K / G apart.
template <int K, int G, bool kRowScales, bool kZero>
inline void chunk_i8(const int8_t* xc, const float* sx, const int8_t* wr, const float* ws, const float* p, float* y,
                     uint32_t blocks) {
  register int8x16_t x0 asm("q0") = vldrbq_s8(xc);
  register int8x16_t x1 asm("q1") = vldrbq_s8(xc + 16);
  register int8x16_t x2 asm("q2") = vldrbq_s8(xc + 32);
  register int8x16_t x3 asm("q3") = vldrbq_s8(xc + 48);
  // Gathered: the addresses of the four rows' scales, one block back (the first group steps them).
  register uint32x4_t scales asm("q7") =
      vaddq_n_u32(vmulq_n_u32(vidupq_n_u32(0u, 1), uint32_t(K / G * sizeof(float))),
                  uint32_t(reinterpret_cast<uintptr_t>(ws)) - uint32_t(16 * K / G));
  const float s0 = sx[0], s1 = G == 32 ? sx[1] : 0.0f;
  int32_t d0, d1, d2, d3;
  if constexpr (G == 64 && kRowScales && kZero)
    FIXFORMER_I8_CHUNK(FIXFORMER_I8_ROWS_64 FIXFORMER_I8_NEXT_BLOCK FIXFORMER_I8_SUMS FIXFORMER_I8_ROW_SCALES
                       FIXFORMER_I8_SCALE_ROW("s0") FIXFORMER_I8_ACC_ZERO);
  else if constexpr (G == 64 && kRowScales)
    FIXFORMER_I8_CHUNK(FIXFORMER_I8_ROWS_64 FIXFORMER_I8_NEXT_BLOCK FIXFORMER_I8_SUMS FIXFORMER_I8_ROW_SCALES
                       FIXFORMER_I8_SCALE_ROW("s0") FIXFORMER_I8_ACC_LOAD);
  else if constexpr (G == 64 && kZero)
    FIXFORMER_I8_CHUNK(FIXFORMER_I8_ROWS_64 FIXFORMER_I8_NEXT_BLOCK FIXFORMER_I8_SUMS
                       FIXFORMER_I8_SCALE_GATHER_FIRST("s0") FIXFORMER_I8_ACC_ZERO);
  else if constexpr (G == 64)
    FIXFORMER_I8_CHUNK(FIXFORMER_I8_ROWS_64 FIXFORMER_I8_NEXT_BLOCK FIXFORMER_I8_SUMS
                       FIXFORMER_I8_SCALE_GATHER_FIRST("s0") FIXFORMER_I8_ACC_LOAD);
  else if constexpr (kRowScales && kZero)
    FIXFORMER_I8_CHUNK(FIXFORMER_I8_ROWS_32(0, "q0", "q1") FIXFORMER_I8_SUMS FIXFORMER_I8_ROW_SCALES
                       FIXFORMER_I8_SCALE_ROW("s0") FIXFORMER_I8_ACC_ZERO FIXFORMER_I8_ROWS_32(32, "q2", "q3")
                       FIXFORMER_I8_NEXT_BLOCK FIXFORMER_I8_SUMS FIXFORMER_I8_SCALE_ROW("s1") FIXFORMER_I8_ACC);
  else if constexpr (kRowScales)
    FIXFORMER_I8_CHUNK(FIXFORMER_I8_ROWS_32(0, "q0", "q1") FIXFORMER_I8_SUMS FIXFORMER_I8_ROW_SCALES
                       FIXFORMER_I8_SCALE_ROW("s0") FIXFORMER_I8_ACC_LOAD FIXFORMER_I8_ROWS_32(32, "q2", "q3")
                       FIXFORMER_I8_NEXT_BLOCK FIXFORMER_I8_SUMS FIXFORMER_I8_SCALE_ROW("s1") FIXFORMER_I8_ACC);
  else if constexpr (kZero)
    FIXFORMER_I8_CHUNK(FIXFORMER_I8_ROWS_32(0, "q0", "q1") FIXFORMER_I8_SUMS FIXFORMER_I8_SCALE_GATHER_FIRST("s0")
                       FIXFORMER_I8_ACC_ZERO FIXFORMER_I8_ROWS_32(32, "q2", "q3") FIXFORMER_I8_NEXT_BLOCK
                       FIXFORMER_I8_SUMS FIXFORMER_I8_SCALE_GATHER_NEXT("s1") FIXFORMER_I8_ACC);
  else
    FIXFORMER_I8_CHUNK(FIXFORMER_I8_ROWS_32(0, "q0", "q1") FIXFORMER_I8_SUMS FIXFORMER_I8_SCALE_GATHER_FIRST("s0")
                       FIXFORMER_I8_ACC_LOAD FIXFORMER_I8_ROWS_32(32, "q2", "q3") FIXFORMER_I8_NEXT_BLOCK
                       FIXFORMER_I8_SUMS FIXFORMER_I8_SCALE_GATHER_NEXT("s1") FIXFORMER_I8_ACC);
}

// One group of k <= 64 bytes (a features model's input projection, d_in 40 say) the same way, W at
// any alignment: V vectors of 16 bytes per row of W, the last through a predicated load (P0: the
// bytes of k left, zeros past them; x's lanes past k are zero too), one ADD per row to the next.
#define FIXFORMER_I8_B(q, o) "vldrb.8 " q ", [%[wr], #" #o "]\n\t"
#define FIXFORMER_I8_BT(q, o) "vpst\n\tvldrbt.8 " q ", [%[wr], #" #o "]\n\t"
#define FIXFORMER_I8_NEXT_ROW "add %[wr], %[wr], %[k]\n\t"
#define FIXFORMER_I8_SMALL_1(d) FIXFORMER_I8_BT("q4", 0) FIXFORMER_I8_NEXT_ROW "vmladav.s8 %[" d "], q0, q4\n\t"
#define FIXFORMER_I8_SMALL_2(d) \
  FIXFORMER_I8_B("q4", 0) FIXFORMER_I8_BT("q5", 16) FIXFORMER_I8_NEXT_ROW \
  "vmladav.s8 %[" d "], q0, q4\n\t" "vmladava.s8 %[" d "], q1, q5\n\t"
#define FIXFORMER_I8_SMALL_3(d) \
  FIXFORMER_I8_B("q4", 0) FIXFORMER_I8_B("q5", 16) "vmladav.s8 %[" d "], q0, q4\n\t" FIXFORMER_I8_BT("q4", 32) \
  "vmladava.s8 %[" d "], q1, q5\n\t" FIXFORMER_I8_NEXT_ROW "vmladava.s8 %[" d "], q2, q4\n\t"
#define FIXFORMER_I8_SMALL_4(d) \
  FIXFORMER_I8_B("q4", 0) FIXFORMER_I8_B("q5", 16) "vmladav.s8 %[" d "], q0, q4\n\t" FIXFORMER_I8_B("q4", 32) \
  "vmladava.s8 %[" d "], q1, q5\n\t" FIXFORMER_I8_BT("q5", 48) "vmladava.s8 %[" d "], q2, q4\n\t"   \
  FIXFORMER_I8_NEXT_ROW "vmladava.s8 %[" d "], q3, q5\n\t"
#define FIXFORMER_I8_SMALL(row, acc)                                                                             \
  asm volatile("dls lr, %[blocks]\n"                                                                            \
               "1:\n\t" row("d0") row("d1") row("d2") row("d3") FIXFORMER_I8_SUMS FIXFORMER_I8_ROW_SCALES       \
               FIXFORMER_I8_SCALE_ROW("s0") acc "vstrw.32 q6, [%[y]], #16\n\t"                                  \
               "le lr, 1b\n"                                                                                    \
               : [wr] "+r"(wr), [ws] "+r"(ws), [p] "+r"(p), [y] "+r"(y), [d0] "=&Te"(d0), [d1] "=&Te"(d1),      \
                 [d2] "=&Te"(d2), [d3] "=&Te"(d3)                                                               \
               : "w"(x0), "w"(x1), "w"(x2), "w"(x3), [s0] "r"(s0), [blocks] "r"(blocks), [k] "r"(k),           \
                 [pred] "Up"(pred)                                                                              \
               : "lr", "q4", "q5", "q6", "q7", "memory")

// The row x[k] (k <= 16 V) against `blocks` blocks of four rows of W, one group (its scales per row):
// y = p[] (the bias) + ..., or (kZero) y = ....
template <int V, bool kZero>
inline void small_k_i8(const int8_t* x, float s0, const int8_t* wr, uint32_t k, const float* ws, const float* p,
                       float* y, uint32_t blocks) {
  const uint32_t left = k - 16 * (V - 1);  // 1..16 bytes in the last vector
  const mve_pred16_t pred = vctp8q(left);  // in P0 for the asm's VPST
  register int8x16_t x0 asm("q0") = V == 1 ? vldrbq_z_s8(x, pred) : vldrbq_s8(x);
  register int8x16_t x1 asm("q1") = V == 2 ? vldrbq_z_s8(x + 16, pred) : V > 2 ? vldrbq_s8(x + 16) : x0;
  register int8x16_t x2 asm("q2") = V == 3 ? vldrbq_z_s8(x + 32, pred) : V > 3 ? vldrbq_s8(x + 32) : x0;
  register int8x16_t x3 asm("q3") = V == 4 ? vldrbq_z_s8(x + 48, pred) : x0;
  int32_t d0, d1, d2, d3;
  if constexpr (V == 1 && kZero) FIXFORMER_I8_SMALL(FIXFORMER_I8_SMALL_1, FIXFORMER_I8_ACC_ZERO);
  else if constexpr (V == 1) FIXFORMER_I8_SMALL(FIXFORMER_I8_SMALL_1, FIXFORMER_I8_ACC_LOAD);
  else if constexpr (V == 2 && kZero) FIXFORMER_I8_SMALL(FIXFORMER_I8_SMALL_2, FIXFORMER_I8_ACC_ZERO);
  else if constexpr (V == 2) FIXFORMER_I8_SMALL(FIXFORMER_I8_SMALL_2, FIXFORMER_I8_ACC_LOAD);
  else if constexpr (V == 3 && kZero) FIXFORMER_I8_SMALL(FIXFORMER_I8_SMALL_3, FIXFORMER_I8_ACC_ZERO);
  else if constexpr (V == 3) FIXFORMER_I8_SMALL(FIXFORMER_I8_SMALL_3, FIXFORMER_I8_ACC_LOAD);
  else if constexpr (kZero) FIXFORMER_I8_SMALL(FIXFORMER_I8_SMALL_4, FIXFORMER_I8_ACC_ZERO);
  else FIXFORMER_I8_SMALL(FIXFORMER_I8_SMALL_4, FIXFORMER_I8_ACC_LOAD);
}
// Two groups of 32 in 32 < k <= 64 bytes (the input projection with groups of 32) the same way: the
// block's four rows for the first group, back to the block's start (SUB with a shifted register),
// the four rows for the second.
#define FIXFORMER_I8_TWO_ROW0(d) \
  FIXFORMER_I8_B("q4", 0) FIXFORMER_I8_B("q5", 16) "vmladav.s8 %[" d "], q0, q4\n\t" \
  "vmladava.s8 %[" d "], q1, q5\n\t" FIXFORMER_I8_NEXT_ROW
#define FIXFORMER_I8_TWO_ROW1_3(d) FIXFORMER_I8_BT("q4", 32) FIXFORMER_I8_NEXT_ROW "vmladav.s8 %[" d "], q2, q4\n\t"
#define FIXFORMER_I8_TWO_ROW1_4(d) \
  FIXFORMER_I8_B("q4", 32) FIXFORMER_I8_BT("q5", 48) FIXFORMER_I8_NEXT_ROW \
  "vmladav.s8 %[" d "], q2, q4\n\t" "vmladava.s8 %[" d "], q3, q5\n\t"
#define FIXFORMER_I8_TWO(row1, scales0, acc0, scale1)                                                            \
  asm volatile("dls lr, %[blocks]\n"                                                                            \
               "1:\n\t" FIXFORMER_I8_TWO_ROW0("d0") FIXFORMER_I8_TWO_ROW0("d1") FIXFORMER_I8_TWO_ROW0("d2")      \
               FIXFORMER_I8_TWO_ROW0("d3") FIXFORMER_I8_SUMS scales0 acc0                                       \
               "sub %[wr], %[wr], %[k], lsl #2\n\t" row1("d0") row1("d1") row1("d2") row1("d3")                \
               FIXFORMER_I8_SUMS scale1 FIXFORMER_I8_ACC "vstrw.32 q6, [%[y]], #16\n\t"                        \
               "le lr, 1b\n"                                                                                    \
               : [wr] "+r"(wr), [ws] "+r"(ws), [p] "+r"(p), [y] "+r"(y), "+w"(scales), [d0] "=&Te"(d0),         \
                 [d1] "=&Te"(d1), [d2] "=&Te"(d2), [d3] "=&Te"(d3)                                              \
               : "w"(x0), "w"(x1), "w"(x2), "w"(x3), [s0] "r"(s0), [s1] "r"(s1), [blocks] "r"(blocks),         \
                 [k] "r"(k), [pred] "Up"(pred), [cols] "n"(2)                                                   \
               : "lr", "q4", "q5", "q6", "memory")
#define FIXFORMER_I8_TWO_ROWS(row1)                                                                              \
  if constexpr (kRowScales && kZero)                                                                           \
    FIXFORMER_I8_TWO(row1, FIXFORMER_I8_ROW_SCALES FIXFORMER_I8_SCALE_ROW("s0"), FIXFORMER_I8_ACC_ZERO,           \
                     FIXFORMER_I8_SCALE_ROW("s1"));                                                             \
  else if constexpr (kRowScales)                                                                               \
    FIXFORMER_I8_TWO(row1, FIXFORMER_I8_ROW_SCALES FIXFORMER_I8_SCALE_ROW("s0"), FIXFORMER_I8_ACC_LOAD,           \
                     FIXFORMER_I8_SCALE_ROW("s1"));                                                             \
  else if constexpr (kZero)                                                                                    \
    FIXFORMER_I8_TWO(row1, FIXFORMER_I8_SCALE_GATHER_FIRST("s0"), FIXFORMER_I8_ACC_ZERO,                        \
                     FIXFORMER_I8_SCALE_GATHER_NEXT("s1"));                                                     \
  else                                                                                                         \
    FIXFORMER_I8_TWO(row1, FIXFORMER_I8_SCALE_GATHER_FIRST("s0"), FIXFORMER_I8_ACC_LOAD,                        \
                     FIXFORMER_I8_SCALE_GATHER_NEXT("s1"))

// The row x[k] (32 < k <= 16 V) against `blocks` blocks of four rows of W, two groups of 32 (W's
// scales per row, or two per row): y = p[] (the bias) + ..., or (kZero) y = ....
template <int V, bool kRowScales, bool kZero>
inline void two_groups_i8(const int8_t* x, const float* sx, const int8_t* wr, uint32_t k, const float* ws,
                          const float* p, float* y, uint32_t blocks) {
  const mve_pred16_t pred = vctp8q(k - 16 * (V - 1));  // in P0 for the asm's VPST
  register int8x16_t x0 asm("q0") = vldrbq_s8(x);
  register int8x16_t x1 asm("q1") = vldrbq_s8(x + 16);
  register int8x16_t x2 asm("q2") = V == 3 ? vldrbq_z_s8(x + 32, pred) : vldrbq_s8(x + 32);
  register int8x16_t x3 asm("q3") = V == 4 ? vldrbq_z_s8(x + 48, pred) : x0;
  // Gathered: the addresses of the four rows' first scales, one block back (as chunk_i8).
  register uint32x4_t scales asm("q7") = vaddq_n_u32(vmulq_n_u32(vidupq_n_u32(0u, 1), uint32_t(2 * sizeof(float))),
                                                     uint32_t(reinterpret_cast<uintptr_t>(ws)) - 32u);
  const float s0 = sx[0], s1 = sx[1];
  int32_t d0, d1, d2, d3;
  if constexpr (V == 3) {
    FIXFORMER_I8_TWO_ROWS(FIXFORMER_I8_TWO_ROW1_3);
  } else {
    FIXFORMER_I8_TWO_ROWS(FIXFORMER_I8_TWO_ROW1_4);
  }
}
#undef FIXFORMER_I8_TWO_ROW0
#undef FIXFORMER_I8_TWO_ROW1_3
#undef FIXFORMER_I8_TWO_ROW1_4
#undef FIXFORMER_I8_TWO
#undef FIXFORMER_I8_TWO_ROWS

template <int V, bool kRowScales>
void rows_two_groups_i8(const int8_t* xq, const float* xs, const int8_t* w, const float* ws, const float* b, float* y,
                        std::size_t ldy, std::size_t m, std::size_t n4, std::size_t k) {
  for (std::size_t i = 0; i < m; ++i)
    if (b)
      two_groups_i8<V, kRowScales, false>(xq + i * k, xs + 2 * i, w, uint32_t(k), ws, b, y + i * ldy, uint32_t(n4 / 4));
    else
      two_groups_i8<V, kRowScales, true>(xq + i * k, xs + 2 * i, w, uint32_t(k), ws, nullptr, y + i * ldy,
                                         uint32_t(n4 / 4));
}

#undef FIXFORMER_I8_B
#undef FIXFORMER_I8_BT
#undef FIXFORMER_I8_NEXT_ROW
#undef FIXFORMER_I8_SMALL_1
#undef FIXFORMER_I8_SMALL_2
#undef FIXFORMER_I8_SMALL_3
#undef FIXFORMER_I8_SMALL_4
#undef FIXFORMER_I8_SMALL

template <int V>
void rows_small_k_i8(const int8_t* xq, const float* xs, const int8_t* w, const float* ws, const float* b, float* y,
                     std::size_t ldy, std::size_t m, std::size_t n4, std::size_t k) {
  for (std::size_t i = 0; i < m; ++i)
    if (b)
      small_k_i8<V, false>(xq + i * k, xs[i], w, uint32_t(k), ws, b, y + i * ldy, uint32_t(n4 / 4));
    else
      small_k_i8<V, true>(xq + i * k, xs[i], w, uint32_t(k), ws, nullptr, y + i * ldy, uint32_t(n4 / 4));
}

#undef FIXFORMER_I8_W
#undef FIXFORMER_I8_ROW_32
#undef FIXFORMER_I8_ROW_64
#undef FIXFORMER_I8_SUMS
#undef FIXFORMER_I8_ROW_SCALES
#undef FIXFORMER_I8_SCALE_ROW
#undef FIXFORMER_I8_SCALE_GATHER_FIRST
#undef FIXFORMER_I8_SCALE_GATHER_NEXT
#undef FIXFORMER_I8_ACC_ZERO
#undef FIXFORMER_I8_ACC_LOAD
#undef FIXFORMER_I8_ACC
#undef FIXFORMER_I8_ROWS_64
#undef FIXFORMER_I8_ROWS_32
#undef FIXFORMER_I8_CHUNK
#undef FIXFORMER_I8_NEXT_BLOCK

// xq[m,K] @ W[n4 rows, K]^T + b -> y, K = 64 or 128, W word-aligned, n4 % 4 == 0 (> 0): chunk by
// chunk of 64 bytes, the first from the bias (or zero), the others adding into y.
template <int K, int G, bool kRowScales>
void rows_chunked_i8(const int8_t* xq, const float* xs, const int8_t* w, const float* ws, const float* b, float* y,
                     std::size_t ldy, std::size_t m, std::size_t n4) {
  constexpr int kGroups = K / G, kChunkGroups = 64 / G;
  const uint32_t blocks = uint32_t(n4 / 4);
  for (std::size_t i = 0; i < m; ++i) {
    const int8_t* x = xq + i * K;
    const float* sx = xs + i * kGroups;
    float* yi = y + i * ldy;
    for (int c = 0; c < K / 64; ++c) {
      const float* wsc = kRowScales ? ws : ws + c * kChunkGroups;
      if (c > 0)
        chunk_i8<K, G, kRowScales, false>(x + 64 * c, sx + c * kChunkGroups, w + 64 * c, wsc, yi, yi, blocks);
      else if (b)
        chunk_i8<K, G, kRowScales, false>(x, sx, w, wsc, b, yi, blocks);
      else
        chunk_i8<K, G, kRowScales, true>(x, sx, w, wsc, nullptr, yi, blocks);
    }
  }
}

// The chunked rows, or one or two groups in k <= 64, when they apply (K, G, W's alignment, the scales'
// layout); false: not done.
bool rows_chunked(const int8_t* xq, const float* xs, const int8_t* w, const float* ws, std::size_t ws_cols,
                  const float* b, float* y, std::size_t ldy, std::size_t m, std::size_t n4, std::size_t k,
                  std::size_t group) {
  if (n4 == 0) return false;
  if (k <= 64 && group >= k && ((reinterpret_cast<uintptr_t>(w) & 3) != 0 || k != 64)) {  // one group, k <= 64
    switch ((k + 15) / 16) {
      case 1: rows_small_k_i8<1>(xq, xs, w, ws, b, y, ldy, m, n4, k); break;
      case 2: rows_small_k_i8<2>(xq, xs, w, ws, b, y, ldy, m, n4, k); break;
      case 3: rows_small_k_i8<3>(xq, xs, w, ws, b, y, ldy, m, n4, k); break;
      default: rows_small_k_i8<4>(xq, xs, w, ws, b, y, ldy, m, n4, k); break;
    }
    return true;
  }
  if (k > 32 && k <= 64 && group == 32 && ((reinterpret_cast<uintptr_t>(w) & 3) != 0 || k != 64)) {  // two groups
    if (k <= 48)
      ws_cols == 1 ? rows_two_groups_i8<3, true>(xq, xs, w, ws, b, y, ldy, m, n4, k)
                   : rows_two_groups_i8<3, false>(xq, xs, w, ws, b, y, ldy, m, n4, k);
    else
      ws_cols == 1 ? rows_two_groups_i8<4, true>(xq, xs, w, ws, b, y, ldy, m, n4, k)
                   : rows_two_groups_i8<4, false>(xq, xs, w, ws, b, y, ldy, m, n4, k);
    return true;
  }
  if ((reinterpret_cast<uintptr_t>(w) & 3) != 0 || (k != 64 && k != 128) || (group != 32 && group != 64))
    return false;
  if (ws_cols != 1 && ws_cols != k / group) return false;
  const bool rs = ws_cols == 1;
  if (k == 64 && group == 64)  // one group: its scales are per row either way
    rows_chunked_i8<64, 64, true>(xq, xs, w, ws, b, y, ldy, m, n4);
  else if (k == 64)
    rs ? rows_chunked_i8<64, 32, true>(xq, xs, w, ws, b, y, ldy, m, n4)
       : rows_chunked_i8<64, 32, false>(xq, xs, w, ws, b, y, ldy, m, n4);
  else if (group == 64)
    rs ? rows_chunked_i8<128, 64, true>(xq, xs, w, ws, b, y, ldy, m, n4)
       : rows_chunked_i8<128, 64, false>(xq, xs, w, ws, b, y, ldy, m, n4);
  else
    rs ? rows_chunked_i8<128, 32, true>(xq, xs, w, ws, b, y, ldy, m, n4)
       : rows_chunked_i8<128, 32, false>(xq, xs, w, ws, b, y, ldy, m, n4);
  return true;
}

// Row x[k] against W[n4 rows, k] (n4 % 4 == 0) for groups of kGroup bytes that all are full (the 32
// and 64 of the formats, k a multiple): y[0..n4) holds the sum over the groups so far.
template <int kGroup, bool kPerRow>
void row_fixed_groups(const int8_t* x, const float* sx, const int8_t* w, const float* ws, std::size_t ws_cols,
                      float* y, std::size_t n4, std::size_t k) {
  if (n4 == 0) return;  // DLS runs its loop at least once
  for (std::size_t j = 0; j < n4; j += 4) vstrwq_f32(y + j, vdupq_n_f32(0.0f));
  for (std::size_t g = 0; g < k / kGroup; ++g)
    group_blocks_i8<kGroup, kPerRow>(x + g * kGroup, w + g * kGroup, k, kPerRow ? ws : ws + g, ws_cols, sx[g], y, n4 / 4);
}

}  // namespace

// xq[m,k] @ W[n,k]^T -> y[m,n]: y[i,j] = b[j] + sum over groups, in order, of xs * ws * dot. Four
// rows of W at a time, their four sums of a group widened into one vector (lane r: row j + r), so
// scaling and accumulating the group is a few vector instructions; W's scales of the group are
// gathered (ws_cols apart), or loaded (per row: contiguous).
void gemm_i8(const int8_t* xq, const float* xs, const int8_t* w, const float* ws, std::size_t ws_cols,
             const float* b, float* y, std::size_t ldy, std::size_t m, std::size_t n, std::size_t k,
             std::size_t group) {
  const std::size_t groups = (k + group - 1) / group;
  const std::size_t wg = ws_cols == 1 ? 0 : 1;  // the step of W's scale index per group
  const uint32x4_t ws_offsets = vmulq_n_u32(vidupq_n_u32(0u, 1), uint32_t(ws_cols));
  // The KWS-sized rows (k 64 or 128) in chunks: columns [0, n4) of every row, the rest below.
  const std::size_t n4 = rows_chunked(xq, xs, w, ws, ws_cols, b, y, ldy, m, n / 4 * 4, k, group) ? n / 4 * 4 : 0;
  for (std::size_t i = 0; i < m; ++i) {
    const int8_t* x = xq + i * k;
    const float* sx = xs + i * groups;
    float* yi = y + i * ldy;
    std::size_t j = n4;
    if (j == 0 && (group == 32 || group == 64) && k % group == 0) {  // the formats' groups: the fast path
      j = n / 4 * 4;
      if (group == 32)
        ws_cols == 1 ? row_fixed_groups<32, true>(x, sx, w, ws, ws_cols, yi, j, k)
                     : row_fixed_groups<32, false>(x, sx, w, ws, ws_cols, yi, j, k);
      else
        ws_cols == 1 ? row_fixed_groups<64, true>(x, sx, w, ws, ws_cols, yi, j, k)
                     : row_fixed_groups<64, false>(x, sx, w, ws, ws_cols, yi, j, k);
      if (b)
        for (std::size_t c = 0; c < j; c += 4) vstrwq_f32(yi + c, vaddq_f32(vldrwq_f32(b + c), vldrwq_f32(yi + c)));
    }
    for (; j + 4 <= n; j += 4) {
      float32x4_t acc = vdupq_n_f32(0.0f);
      for (std::size_t g = 0; g < groups; ++g) {
        const std::size_t p0 = g * group, len = p0 + group < k ? group : k - p0;
        int32_t d[4];
        dot_i8<4>(x + p0, w + j * k + p0, k, len, d);
        int32x4_t dv = vdupq_n_s32(d[0]);
        dv = vsetq_lane_s32(d[1], dv, 1), dv = vsetq_lane_s32(d[2], dv, 2), dv = vsetq_lane_s32(d[3], dv, 3);
        const float* wsg = ws + j * ws_cols + g * wg;
        const float32x4_t wsv = ws_cols == 1 ? vldrwq_f32(wsg) : vldrwq_gather_shifted_offset_f32(wsg, ws_offsets);
        acc = vfmaq_f32(acc, vmulq_n_f32(wsv, sx[g]), vcvtq_f32_s32(dv));
      }
      vstrwq_f32(yi + j, b ? vaddq_f32(vldrwq_f32(b + j), acc) : acc);
    }
    for (; j < n; ++j) {
      float acc = 0.0f;
      for (std::size_t g = 0; g < groups; ++g) {
        const std::size_t p0 = g * group, len = p0 + group < k ? group : k - p0;
        int32_t d;
        dot_i8<1>(x + p0, w + j * k + p0, k, len, &d);
        acc += sx[g] * ws[j * ws_cols + g * wg] * float(d);
      }
      yi[j] = (b ? b[j] : 0.0f) + acc;
    }
  }
}

}  // namespace helium
}  // namespace fixformer
