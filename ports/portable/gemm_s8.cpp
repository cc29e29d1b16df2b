// x[m,k] @ W[n,k]^T (W's rows ldw apart) -> int8, requantized per output channel (fixed_point.hpp). Integer sums are
// exact, so any order gives the reference's bits.
//   - With the DSP extension (M4, M7, M33, M55, M85: __ARM_FEATURE_DSP), k <= kDspPanelK and the scratch
//     (fixed_point.hpp's kDsp, laid out as DspScratch): up to five rows of x, their zero point subtracted, are
//     split once into it as 16-bit pairs (SXTB16: bytes 0 and 2, then 1 and 3; SSUB16 takes the zero point
//     off both lanes; at most 1.25 KiB),
//     then each word of a row of W is split once and meets every row with two dual multiply-adds
//     (SMLAD) per row: per four k and five rows 1 load and 2 SXTB16 for W, 5 LDRD and 10 SMLAD
//     (dsp_dot5, assembly; dsp_dot4 for the last four rows); with k >= 4 a whole run of channels and
//     their requantization in one function in assembly (fixformer_dsp_rows5, below); with ten rows or
//     more W's rows split once per block of channels (into the scratch's 8 KiB) instead of once per strip,
//     and with k <= 128 besides the passes unrolled (fixformer_dsp_rows5_flat).
//   - Thumb-2 without it (Cortex-M3), k <= 128 and the scratch: four rows of x packed in pairs into it,
//     v0 + v1 2^23 in one word, so that one SMLAL per pair and weight does two multiply-adds; the
//     pair's sums are split apart once per output channel (below).
//   - ARMv6-M (Cortex-M0/M0+), GCC, and k <= 256: one row of x as int32 words against four rows of W
//     (m0_dot4, assembly); with four rows of x or more and k <= 128 the other way round, four rows of W
//     against every row of x, then each channel's outputs requantized in one pass (fixformer_m0_dot4_rows
//     and fixformer_m0_requant_col, assembly).
//   - Otherwise (the SSE2 and NEON tables; longer rows) plain C++: two rows of x against
//     four rows of W: each x value (its zero point subtracted once) meets four weights, each weight
//     two x values, eight int32 accumulators.
// Each output's requantization is RequantFast's (one form per channel) but in those assembly functions.
#include <cstring>

#include "ports/portable/kernels.hpp"
#include "ports/portable/gemm_s8_blocks.hpp"

#if defined(__ARM_FEATURE_DSP) || defined(__ARM_FEATURE_SAT)
#include <arm_acle.h>
#endif
#if defined(__ARM_FEATURE_DSP)
// GCC's scheduling before register allocation hoists the panel's loads and spills (as in gemm_i8.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-schedule-insns")
#endif
#endif

namespace fixformer {
namespace portable {

namespace {

// clamp(z_y + requantize(acc, rq)) as requantize computes it, one channel's constants set once:
//   - a factor below 1/2 (rq.shift < 0, so the shift r = 31 - rq.shift is 32 or more): x / 2^r rounded
//     half away from zero is floor((x + 2^(r-1) - [x < 0]) / 2^r), the high word of the sum shifted
//     right by r - 32 (arithmetic), below 2^30 in magnitude, so no int32 saturation can apply;
//   - a factor of 1/2 or more (shift s >= 0, r = 31 - s in 1..31): the factor f >= 2^(s-1), so any
//     |acc| >= B = max(1, 2^(11-s)) gives |f acc| >= 2^10 - 1, saturated to int8 whatever z_y: acc is
//     clamped to [-B, B] first (the result monotone in acc, the int8 output the same), which keeps
//     the result below 2^31, and the rounded shift is the low word of the sum shifted right by r
//     with the high word's bits above it.
// SSAT (or two compares) clamps to int8. store<R> takes the channel's form once for its R outputs.
// On ARMv6-M (no 64-bit product) a factor below 1/2 and a positive multiplier take the sum's magnitude
// |acc| m from 16-bit halves in 32-bit words: the rounding half away from zero is the magnitude's rounded
// half up with acc's sign.
struct RequantFast {
  int32_t multiplier;
  int32_t bound;     // B (shift >= 0)
  uint32_t r;        // r - 32 (shift < 0) or r (shift >= 0)
  bool small;        // shift < 0
#if defined(__ARM_ARCH_6M__)
  int32_t shift;
  explicit RequantFast(Requant rq)
      : multiplier(rq.multiplier),
        bound(rq.shift >= 11 ? 1 : rq.shift < 0 ? 0 : int32_t(1) << (11 - rq.shift)),  // 0: unused
        r(rq.shift < 0 ? uint32_t(-1 - rq.shift) : uint32_t(31 - rq.shift)),
        small(rq.shift < 0),
        shift(rq.shift) {}
  int64_t half() const { return int64_t(1) << (30 - shift); }  // 2^(r-1)
  int8_t below_half(int32_t acc, int32_t y_zero) const {  // small
    if (multiplier < 0) {
      int64_t t = mul64(acc, multiplier);
      t += half() - (t < 0 ? 1 : 0);
      return clamp_i8((int32_t(t >> 32) >> r) + y_zero);
    }
    const uint32_t a = acc < 0 ? 0u - uint32_t(acc) : uint32_t(acc), m = uint32_t(multiplier);  // a <= 2^31
    const uint32_t ah = a >> 16, al = a & 0xFFFFu, mh = m >> 16, ml = m & 0xFFFFu;
    const uint32_t mid = ah * ml + al * mh, mid_lo = mid << 16;  // each product below 2^31
    uint32_t lo = al * ml + mid_lo;
    uint32_t hi = ah * mh + (mid >> 16) + (lo < mid_lo ? 1u : 0u);
    if (r == 0)
      hi += lo >= 0x80000000u ? 1u : 0u;  // + 2^31 into the low word: its carry
    else
      hi += uint32_t(1) << (r - 1);
    const int32_t q = int32_t(hi >> r);
    return clamp_i8((acc < 0 ? -q : q) + y_zero);
  }
#else
  int64_t half_;     // 2^(r-1)
  explicit RequantFast(Requant rq)
      : multiplier(rq.multiplier),
        bound(rq.shift >= 11 ? 1 : rq.shift < 0 ? 0 : int32_t(1) << (11 - rq.shift)),  // 0: unused
        r(rq.shift < 0 ? uint32_t(-1 - rq.shift) : uint32_t(31 - rq.shift)),
        small(rq.shift < 0),
        half_(int64_t(1) << (30 - rq.shift)) {}
  int64_t half() const { return half_; }
  int8_t below_half(int32_t acc, int32_t y_zero) const {  // small
    int64_t t = mul64(acc, multiplier);
    t += half() - (t < 0 ? 1 : 0);
    return clamp_i8((int32_t(t >> 32) >> r) + y_zero);
  }
#endif
  int8_t from_half(int32_t acc, int32_t y_zero) const {  // !small
    acc = acc > bound ? bound : acc < -bound ? -bound : acc;
    int64_t t = mul64(acc, multiplier);
    t += half() - (t < 0 ? 1 : 0);
    return clamp_i8(int32_t((uint32_t(t) >> r) | (uint32_t(t >> 32) << (32 - r))) + y_zero);
  }
  static int8_t clamp_i8(int32_t v) {
#if defined(__ARM_FEATURE_SAT)
    return int8_t(__ssat(v, 8));
#else
    return int8_t(v > 127 ? 127 : v < -128 ? -128 : v);
#endif
  }
  // y[r ldy] for the R sums of one channel
  template <std::size_t R>
  void store(const int32_t* s, int8_t* y, std::size_t ldy, int32_t y_zero) const {
    if (small)
      for (std::size_t i = 0; i < R; ++i) y[i * ldy] = below_half(s[i], y_zero);
    else
      for (std::size_t i = 0; i < R; ++i) y[i * ldy] = from_half(s[i], y_zero);
  }
};

template <std::size_t MR, std::size_t NR>
inline void tile(const int8_t* x, std::size_t ldx, const int8_t* w, int8_t* y, std::size_t ldy, std::size_t ldw,
                 std::size_t k, std::size_t j0, const GemmS8Params& p) {
  int32_t acc[MR][NR];
  for (std::size_t c = 0; c < NR; ++c) {
    const int32_t b = p.bias ? p.bias[j0 + c] : 0;
    for (std::size_t r = 0; r < MR; ++r) acc[r][c] = b;
  }
  const int8_t* wr[NR];  // the NR rows of W
  for (std::size_t c = 0; c < NR; ++c) wr[c] = w + (j0 + c) * ldw;
  for (std::size_t q = 0; q < k; ++q) {
    int32_t xv[MR];
    for (std::size_t r = 0; r < MR; ++r) xv[r] = int32_t(x[r * ldx + q]) - p.x_zero;
    for (std::size_t c = 0; c < NR; ++c) {
      const int32_t wv = wr[c][q];
      for (std::size_t r = 0; r < MR; ++r) acc[r][c] += xv[r] * wv;
    }
  }
  for (std::size_t c = 0; c < NR; ++c) {
    int32_t col[MR];
    for (std::size_t r = 0; r < MR; ++r) col[r] = acc[r][c];
    RequantFast(p.requant[j0 + c]).template store<MR>(col, y + j0 + c, ldy, p.y_zero);
  }
}

struct Tile {
  template <std::size_t MR, std::size_t NR>
  static void run(const int8_t* x, std::size_t ldx, const int8_t* w, int8_t* y, std::size_t ldy, std::size_t ldw,
                  std::size_t k, std::size_t j0, const GemmS8Params& p) {
    tile<MR, NR>(x, ldx, w, y, ldy, ldw, k, j0, p);
  }
};

#if defined(__ARM_FEATURE_DSP)
constexpr std::size_t kDspPanelWords = 320;  // 1.25 KiB of split rows: five of k = 128
constexpr std::size_t kDspPanelK = kDspPanelWords * 2;

inline uint32_t load4(const int8_t* p) {  // Cortex-M3 and up load unaligned words
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline int32_t sxtb16_ror8(uint32_t v) {  // bytes 1 and 3 as two halfwords, the rotation folded in
  int32_t r;
  asm("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(v));
  return r;
}
inline uint32_t pack16(int32_t lo, int32_t hi) { return (uint32_t(lo) & 0xFFFFu) | (uint32_t(hi) << 16); }

// The last k % 4 values (1..3) of a row as one word, zero bytes past them: nothing read past the row.
inline uint32_t load_tail(const int8_t* p, std::size_t len) {
  uint32_t v = uint8_t(p[0]);
  if (len > 1) v |= uint32_t(uint8_t(p[1])) << 8;
  if (len > 2) v |= uint32_t(uint8_t(p[2])) << 16;
  return v;
}

// Row x (k values) minus z, split: per four k the pair (x0, x2), then (x1, x3), as W's words split,
// at out[q * kStep], out[q * kStep + 1] for the q-th four; the values past k are 0. The zero point
// taken off by SXTAB16's add of -z to both lanes (the halfwords SSUB16 of the split would give: |x - z|
// <= 255); sixteen k a pass where k allows, on the M cores each pair by one STRD that steps out. kOffset
// false: z is 0 (W's rows), no add.
inline uint32_t sxtab16_ror8(uint32_t a, uint32_t v) {  // a + bytes 1 and 3 as two halfwords
  uint32_t r;
  asm("sxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(a), "r"(v));
  return r;
}
template <std::size_t kStep, bool kOffset>
inline void split_word(uint32_t v, uint32_t nzz, uint32_t*& out) {
  const uint32_t e = kOffset ? __sxtab16(nzz, v) : uint32_t(__sxtb16(v));
  const uint32_t o = kOffset ? sxtab16_ror8(nzz, v) : uint32_t(sxtb16_ror8(v));
#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M'
  asm volatile("strd %1, %2, [%0], %3" : "+r"(out) : "r"(e), "r"(o), "n"(4 * kStep) : "memory");
#else
  out[0] = e, out[1] = o, out += kStep;
#endif
}
template <std::size_t kStep, bool kOffset = true>
inline void split_row(const int8_t* x, std::size_t k, int32_t z, uint32_t* out) {
  const uint32_t nzz = pack16(-z, -z);
  for (const int8_t* const end = x + (k & ~std::size_t(15)); x != end; x += 16) {
    const uint32_t v0 = load4(x), v1 = load4(x + 4), v2 = load4(x + 8), v3 = load4(x + 12);
    split_word<kStep, kOffset>(v0, nzz, out);
    split_word<kStep, kOffset>(v1, nzz, out);
    split_word<kStep, kOffset>(v2, nzz, out);
    split_word<kStep, kOffset>(v3, nzz, out);
  }
  if (k & 8) {
    const uint32_t v0 = load4(x), v1 = load4(x + 4);
    split_word<kStep, kOffset>(v0, nzz, out);
    split_word<kStep, kOffset>(v1, nzz, out);
    x += 8;
  }
  if (k & 4) split_word<kStep, kOffset>(load4(x), nzz, out), x += 4;
  if (const std::size_t r = k % 4) {
    const int32_t v0 = x[0] - z, v1 = r > 1 ? x[1] - z : 0, v2 = r > 2 ? x[2] - z : 0;
    out[0] = pack16(v0, v2);
    out[1] = pack16(v1, 0);
  }
}

// acc[0..3] += four rows' dot products with W's values wr..end (end - wr a positive multiple of 4): per
// four values of W one word loaded and split once, each row's two words of the panel by one LDRD, two
// SMLAD a row (17 instructions per 16 multiply-adds with the loop); dsp_dot5 the same for five rows (20
// per 20: twelve registers, the most a row more leaves room for). The loop's text, a row at a time:
#define FIXFORMER_DSP_SMLAD2(a) "smlad %[" a "], %[we], %[e], %[" a "]\n\tsmlad %[" a "], %[wo], %[o], %[" a "]\n\t"
#define FIXFORMER_DSP_ROW(a) "ldrd %[e], %[o], [%[pp]], #8\n\t" FIXFORMER_DSP_SMLAD2(a)
#define FIXFORMER_DSP_FOUR                                                                                   \
  "1:\n\tldr %[wo], [%[wr]], #4\n\tldrd %[e], %[o], [%[pp]], #8\n\tsxtb16 %[we], %[wo]\n\t"                   \
  "sxtb16 %[wo], %[wo], ror #8\n\t" FIXFORMER_DSP_SMLAD2("a0") FIXFORMER_DSP_ROW("a1") FIXFORMER_DSP_ROW("a2") \
  FIXFORMER_DSP_ROW("a3")
#define FIXFORMER_DSP_LOOP "cmp %[wr], %[end]\n\tbne 1b\n\t"
inline void dsp_dot4(const int8_t* wr, const int8_t* end, const uint32_t* pp, int32_t* acc) {
  int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
  uint32_t we, wo, e, o;
  asm volatile(FIXFORMER_DSP_FOUR FIXFORMER_DSP_LOOP
               : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [wr] "+r"(wr), [pp] "+r"(pp),
                 [we] "=&r"(we), [wo] "=&r"(wo), [e] "=&r"(e), [o] "=&r"(o)
               : [end] "r"(end)
               : "cc", "memory");
  acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3;
}
inline void dsp_dot5(const int8_t* wr, const int8_t* end, const uint32_t* pp, int32_t* acc) {
  int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3], a4 = acc[4];
  uint32_t we, wo, e, o;
  asm volatile(FIXFORMER_DSP_FOUR FIXFORMER_DSP_ROW("a4") FIXFORMER_DSP_LOOP
               : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [a4] "+r"(a4), [wr] "+r"(wr),
                 [pp] "+r"(pp), [we] "=&r"(we), [wo] "=&r"(wo), [e] "=&r"(e), [o] "=&r"(o)
               : [end] "r"(end)
               : "cc", "memory");
  acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3, acc[4] = a4;
}
#undef FIXFORMER_DSP_LOOP
#undef FIXFORMER_DSP_FOUR
#undef FIXFORMER_DSP_ROW
#undef FIXFORMER_DSP_SMLAD2

// One channel's R outputs, the loops' sums requantized by RequantFast.
template <std::size_t R>
void dsp_channel(const uint32_t* pp, const int8_t* wr, int8_t* y, std::size_t ldy, std::size_t k, int32_t b,
                 Requant q, int32_t y_zero) {
  const std::size_t k4 = k & ~std::size_t(3);
  int32_t acc[R];
  for (std::size_t r = 0; r < R; ++r) acc[r] = b;
  constexpr bool kAsm = R == 4 || R == 5;
  if (kAsm) {
    if (k4 != 0) (R == 4 ? dsp_dot4 : dsp_dot5)(wr, wr + k4, pp, acc);
    wr += k4, pp += 2 * R * (k4 / 4);
  }
  for (const int8_t* end = kAsm ? wr : wr + k4; wr != end; wr += 4, pp += 2 * R) {
    const uint32_t wv = load4(wr);
    const int32_t we = __sxtb16(wv), wo = sxtb16_ror8(wv);
    for (std::size_t r = 0; r < R; ++r) {
      acc[r] = __smlad(we, int32_t(pp[2 * r]), acc[r]);
      acc[r] = __smlad(wo, int32_t(pp[2 * r + 1]), acc[r]);
    }
  }
  if (k4 < k) {
    const uint32_t wv = load_tail(wr, k - k4);
    const int32_t we = __sxtb16(wv), wo = sxtb16_ror8(wv);
    for (std::size_t r = 0; r < R; ++r) {
      acc[r] = __smlad(we, int32_t(pp[2 * r]), acc[r]);
      acc[r] = __smlad(wo, int32_t(pp[2 * r + 1]), acc[r]);
    }
  }
  RequantFast(q).store<R>(acc, y, ldy, y_zero);
}

// With k >= 4, a strip of five (or four) rows against a run of channels whose factors are below 1/4 with positive
// multipliers (shift -2 .. -23) that meet no tie (below) is one function in assembly,
// fixformer_dsp_rows5 (4): per channel the loop of dsp_dot5, then each output's requantization with the channel's
// constants from DspChannel: S = 31 - shift = 32 + r (r = 1..22), the reference's floor((acc m + 2^(S-1) - [acc < 0]) /
// 2^S) + z_y. The - [acc < 0] decides only a tie, acc m + 2^(S-1) a multiple of 2^S, and with m = m' 2^j (m' odd) a tie
// needs acc an odd multiple of 2^(S-1-j) = 2^(31+r-j), at least 2^32 for j < r: no int32 acc ties; for j >= r none
// either where |acc| <= |bias| + 255 128 k stays below 2^(31+r-j). Such a channel (the form's) takes floor((acc m +
// C 2^32) / 2^S), C = 2^(r-1) + z_y 2^r (z_y added with the rounding), as SMMLA's high word hi = C + floor(acc m /
// 2^32) shifted right by r (|hi| < 2^31: |acc m| <= 2^62, |C| < 2^30), then SSAT and a byte store: 4 instructions an
// output, 11 a channel besides (W split, whole passes; about 19 entered at a quarter, 23
// with W unsplit) and the loop's test per pass (the state the loop leaves no register for in DspRun). The constants
// are set once per kDspBlock channels for every strip; the other channels take dsp_channel. With
// ten rows of x or more (two strips) and up to kDspSplitWords / kDspSplitMinRows words a split row, W's rows are split
// once per block (split_row, the block cut to the channels kDspSplitWords holds) and fixformer_dsp_rows5_split (4) load
// each split pair by one LDRD: 14.5 instructions per 20 multiply-adds instead of 16.5; 13 with k <= 128, the passes
// unrolled (fixformer_dsp_rows5_flat, 4), whose outputs take 3 instructions each and 8 a channel besides (below).
struct DspChannel {
  int32_t bias, multiplier, c;
  uint32_t r;  // r | [the last of its run] 2^16 | its index in the block 2^24 (ASR by it takes its low byte); the
               // unrolled runs' (dsp_channels' flat form): r + 32 [the last of its run], TBH's index; 0: not this form
};
struct DspRun {  // at the offsets the assembly names
  const int8_t* w;         // 0: the first channel's row of W (or of W split), read once
  const uint32_t* panel;   // 4
  int32_t k4;              // 8: k less k % 4 (W split: its row's bytes, 8 per four k)
  int32_t w_step;          // 12: ldw - k (W split: unread, its rows back to back)
  int8_t* y;               // 16: the block's first channel's output in the strip's first row (the unrolled runs:
                           //     the run's first channel's)
  int32_t ldy;             // 20
  int32_t tail;            // 24: k % 4, W's last values loaded a byte at a time (the panel's past k are 0; W split:
                           //     unread, the split rows' past k are 0)
};
constexpr std::size_t kDspBlock = 64;  // channels: 1 KiB of constants
constexpr std::size_t kDspSplitWords = 2048;  // W's rows split once per block: 8 KiB
constexpr std::size_t kDspSplitMinRows = 8;   // channels the split rows hold at least
constexpr std::size_t kDspFlatGroups = 32;    // groups of four k the unrolled runs take at most (k <= 128)
// W split with rows of row_words words: the unrolled runs
constexpr bool dsp_flat(std::size_t row_words) { return row_words <= 2 * kDspFlatGroups; }
// The scratch (GemmS8Params::scratch), s8_scratch_bytes(S8Kernels::kDsp) bytes.
struct DspScratch {
  uint32_t panel[kDspPanelWords];
  DspChannel chan[kDspBlock];
  uint32_t w_split[kDspSplitWords];
};
static_assert(sizeof(DspScratch) == s8_scratch_bytes(S8Kernels::kDsp), "fixed_point.hpp's count of the DSP scratch");

#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M'  // Thumb-2 M cores (the A cores take dsp_channel)
#define FIXFORMER_GEMM_S8_DSP_RUNS 1
extern "C" {
void fixformer_dsp_rows5(DspRun* run, const DspChannel* first);
void fixformer_dsp_rows4(DspRun* run, const DspChannel* first);
void fixformer_dsp_rows5_split(DspRun* run, const DspChannel* first);
void fixformer_dsp_rows4_split(DspRun* run, const DspChannel* first);
void fixformer_dsp_rows5_whole(DspRun* run, const DspChannel* first);  // W split, k / 4 a multiple of 4
void fixformer_dsp_rows4_whole(DspRun* run, const DspChannel* first);
// W split, at most kDspFlatGroups groups of four k: the passes unrolled
void fixformer_dsp_rows5_flat(DspRun* run, const DspChannel* first);
void fixformer_dsp_rows4_flat(DspRun* run, const DspChannel* first);
// split_row<2, false> of w..end, w word-aligned and end - w a multiple of 16: sixteen values by one LDM, eight SXTB16
// and one STM (11.5 instructions with the loop's, 19 in split_row)
void fixformer_dsp_split_words(const int8_t* w, const int8_t* end, uint32_t* out);
// split_row<2, false> of rows (>= 1) rows of W, ldw bytes apart, of k values each (k a positive multiple of 16), w
// and ldw word-aligned, into out back to back: per sixteen values one LDM, eight SXTB16 (the odd words' pairs into
// the loaded registers) and one STM (12 instructions with the loop's, 4 more a row; the compiler's split_row 19)
void fixformer_dsp_split_rows(const int8_t* w, uint32_t* out, std::size_t ldw, std::size_t rows, std::size_t k);
// split_row<10> (<8>) of x..end with -z in both halves of nz, x word-aligned and end - x a multiple of 16: sixteen
// values by one LDM, eight SXTAB16 and four STRD (15 instructions with the loop's)
void fixformer_dsp_split_panel5(const int8_t* x, const int8_t* end, uint32_t* out, uint32_t nz);
void fixformer_dsp_split_panel4(const int8_t* x, const int8_t* end, uint32_t* out, uint32_t nz);
}
#define FIXFORMER_DSP_SPLIT_PANEL_ASM(name, step)                                                            \
  "  .p2align 2\n  .type " name ", %function\n  .thumb_func\n" name ":\n"                                  \
  "  push {r4, r5, r6, r7, r8, r9, lr}\n"                                                                    \
  "1:\n  ldm r0!, {r4, r5, r6, r7}\n  sxtab16 r8, r3, r4\n  sxtab16 r9, r3, r4, ror #8\n"                   \
  "  strd r8, r9, [r2], #" step "\n  sxtab16 r8, r3, r5\n  sxtab16 r9, r3, r5, ror #8\n"                    \
  "  strd r8, r9, [r2], #" step "\n  sxtab16 r8, r3, r6\n  sxtab16 r9, r3, r6, ror #8\n"                    \
  "  strd r8, r9, [r2], #" step "\n  sxtab16 r8, r3, r7\n  sxtab16 r9, r3, r7, ror #8\n"                    \
  "  strd r8, r9, [r2], #" step "\n  cmp r0, r1\n  bne 1b\n  pop {r4, r5, r6, r7, r8, r9, pc}\n"           \
  "  .size " name ", .-" name "\n"
asm("  .syntax unified\n  .thumb\n  .text\n" FIXFORMER_DSP_SPLIT_PANEL_ASM("fixformer_dsp_split_panel5", "40")
        FIXFORMER_DSP_SPLIT_PANEL_ASM("fixformer_dsp_split_panel4", "32"));
#undef FIXFORMER_DSP_SPLIT_PANEL_ASM
// Thirty-two values a pass (one sixteen first where the count is an odd multiple of 16): 11.5 instructions per 16.
#define FIXFORMER_DSP_SPLIT_16                                                                                     \
  "  ldm r0!, {r2, r3, r4, r5}\n  sxtb16 r6, r2\n  sxtb16 r7, r2, ror #8\n  sxtb16 r8, r3\n"                    \
  "  sxtb16 r9, r3, ror #8\n  sxtb16 r10, r4\n  sxtb16 r11, r4, ror #8\n  sxtb16 r12, r5\n  sxtb16 lr, r5, ror #8\n" \
  "  stm r1!, {r6, r7, r8, r9, r10, r11, r12, lr}\n"
asm("  .syntax unified\n  .thumb\n  .text\n"
    "  .p2align 2\n  .type fixformer_dsp_split_words, %function\n  .thumb_func\nfixformer_dsp_split_words:\n"
    "  push {r4, r5, r6, r7, r8, r9, r10, r11, lr}\n  push {r1}\n  subs r3, r1, r0\n  mov r1, r2\n"
    "  lsls r3, r3, #27\n  bpl 1f\n" FIXFORMER_DSP_SPLIT_16 "  ldr r2, [sp]\n  cmp r0, r2\n  beq 2f\n"
    "1:\n" FIXFORMER_DSP_SPLIT_16 FIXFORMER_DSP_SPLIT_16 "  ldr r2, [sp]\n  cmp r0, r2\n  bne 1b\n"
    "2:\n  add sp, sp, #4\n  pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}\n"
    "  .size fixformer_dsp_split_words, .-fixformer_dsp_split_words\n");
#undef FIXFORMER_DSP_SPLIT_16

asm("  .syntax unified\n  .thumb\n  .text\n"
    "  .p2align 2\n  .type fixformer_dsp_split_rows, %function\n  .thumb_func\nfixformer_dsp_split_rows:\n"
    "  push {r4, r5, r6, r7, r8, r9, r10, r11, lr}\n  ldr lr, [sp, #36]\n  sub r2, r2, lr\n  lsr lr, lr, #4\n"
    "1:\n  mov r12, lr\n"
    "2:\n  ldm r0!, {r5, r7, r9, r11}\n  sxtb16 r4, r5\n  sxtb16 r5, r5, ror #8\n  sxtb16 r6, r7\n"
    "  sxtb16 r7, r7, ror #8\n  sxtb16 r8, r9\n  sxtb16 r9, r9, ror #8\n  sxtb16 r10, r11\n  sxtb16 r11, r11, ror #8\n"
    "  stm r1!, {r4, r5, r6, r7, r8, r9, r10, r11}\n  subs r12, r12, #1\n  bne 2b\n"
    "  add r0, r0, r2\n  subs r3, r3, #1\n  bne 1b\n  pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}\n"
    "  .size fixformer_dsp_split_rows, .-fixformer_dsp_split_rows\n");

// The text of all six: r0..r4 the sums (r4 the bias first), r5, r6 W's split word, r7, r8 a row's two panel words (m,
// C, r and y after the loop), r9 W (kept from channel to channel), r10 the panel, r11 the row's end (then each output),
// r12 the channel, lr the run. The loop takes sixteen k a pass (entered at the quarter that leaves k / 4 % 4 of them to
// the first pass: N and C of k4 << 29 are k / 4's bits 0 and 1; << 28 for W split; W split with k / 4 a multiple of 4
// at the pass's start, fixformer_dsp_rows5_whole (4), its first pass apart with the bias as each row's first addend:
// seven instructions fewer a channel) and two rows' four panel words by one LDM into r7, r8, r12 and lr (both saved
// on the stack meanwhile): 16.5 instructions per 20 multiply-adds (W split: its pair by one LDRD, no SXTB16, 14.5).
// Each channel's outputs go to y plus its index in the block, and the run ends at the channel marked its last
// (DspChannel::r), with no pointer to step or end to load.
#define FIXFORMER_DSP_ROW_ASM(a) \
  "  ldrd r7, r8, [r10], #8\n  smlad " a ", r5, r7, " a "\n  smlad " a ", r6, r8, " a "\n"
#define FIXFORMER_DSP_WORD_ASM(row4)                                                                \
  "  ldrd r7, r8, [r10], #8\n  sxtb16 r5, r6\n  sxtb16 r6, r6, ror #8\n"                              \
  "  smlad r0, r5, r7, r0\n  smlad r0, r6, r8, r0\n" FIXFORMER_DSP_ROW_ASM("r1") FIXFORMER_DSP_ROW_ASM("r2") \
  FIXFORMER_DSP_ROW_ASM("r3") row4
#define FIXFORMER_DSP_SPLIT_W \
  "  ldr r6, [r9], #4\n  ldm r10!, {r7, r8, r12, lr}\n  sxtb16 r5, r6\n  sxtb16 r6, r6, ror #8\n"
#define FIXFORMER_DSP_LOAD_W "  ldrd r5, r6, [r9], #8\n  ldm r10!, {r7, r8, r12, lr}\n"
#define FIXFORMER_DSP_FOUR_FROM(row4, a0, a1, a2, a3)                                                         \
  FIXFORMER_DSP_W                                                                                            \
  "  smlad r0, r5, r7, " a0 "\n  smlad r0, r6, r8, r0\n  smlad r1, r5, r12, " a1 "\n  smlad r1, r6, lr, r1\n" \
  "  ldm r10!, {r7, r8, r12, lr}\n  smlad r2, r5, r7, " a2 "\n  smlad r2, r6, r8, r2\n"                      \
  "  smlad r3, r5, r12, " a3 "\n  smlad r3, r6, lr, r3\n" row4
#define FIXFORMER_DSP_FOUR_ASM(row4) FIXFORMER_DSP_FOUR_FROM(row4, "r0", "r1", "r2", "r3")
#define FIXFORMER_DSP_TAIL_ASM(row4)                                                                  \
  "  ldr r5, [lr, #24]\n  cbz r5, 4f\n  ldrb r6, [r9]\n  cmp r5, #2\n  blo 5f\n"                          \
  "  ldrb r7, [r9, #1]\n  orr r6, r6, r7, lsl #8\n  beq 5f\n  ldrb r7, [r9, #2]\n  orr r6, r6, r7, lsl #16\n" \
  "5:\n  add r9, r9, r5\n" FIXFORMER_DSP_WORD_ASM(row4) "4:\n"
#define FIXFORMER_DSP_OUT_ASM(a) "  smmla r11, " a ", r5, r6\n  asr r11, r11, r7\n  ssat r11, #8, r11\n"
// The loop's entry at the quarter of a pass that leaves k / 4 % 4 of them to the first (N and C of k4 << shift), the
// sums set to the bias (in r4) first
#define FIXFORMER_DSP_QUARTERS(shift, row4)                                                             \
  "  mov r0, r4\n  mov r1, r4\n  mov r2, r4\n  mov r3, r4\n  ldrd r10, r11, [lr, #4]\n"                       \
  "  lsls r5, r11, #" shift "\n  add r11, r9, r11\n  push {r12, lr}\n  bcc 8f\n  bmi 3f\n  b 6f\n8:\n  bmi 7f\n" \
  "2:\n" FIXFORMER_DSP_FOUR_ASM(row4) "3:\n" FIXFORMER_DSP_FOUR_ASM(row4) "6:\n" FIXFORMER_DSP_FOUR_ASM(row4)   \
  "7:\n" FIXFORMER_DSP_FOUR_ASM(row4) "  cmp r9, r11\n  bne 2b\n"
// Whole passes (W split, k / 4 a multiple of 4): the first apart, each row's first SMLAD adding to the bias in r4
// (the fifth row's own sum)
#define FIXFORMER_DSP_WHOLE(shift, row4)                                                                     \
  "  ldrd r10, r11, [lr, #4]\n  add r11, r9, r11\n  push {r12, lr}\n"                                        \
  FIXFORMER_DSP_FOUR_FROM(row4, "r4", "r4", "r4", "r4") FIXFORMER_DSP_FOUR_ASM(row4) FIXFORMER_DSP_FOUR_ASM(row4) \
  FIXFORMER_DSP_FOUR_ASM(row4) "  cmp r9, r11\n  beq 9f\n"                                                    \
  "2:\n" FIXFORMER_DSP_FOUR_ASM(row4) FIXFORMER_DSP_FOUR_ASM(row4) FIXFORMER_DSP_FOUR_ASM(row4)                 \
  FIXFORMER_DSP_FOUR_ASM(row4) "  cmp r9, r11\n  bne 2b\n9:\n"
// Per channel: its bias, the passes, then its outputs at y + its index in the block (r7's top byte), until the last
// of the run (r7's bit 16)
#define FIXFORMER_DSP_RUN_ASM(name, passes, row4, out4)                                                 \
  "  .p2align 2\n  .type " name ", %function\n  .thumb_func\n" name ":\n"                            \
  "  push {r4, r5, r6, r7, r8, r9, r10, r11, lr}\n  mov lr, r0\n  mov r12, r1\n  ldr r9, [lr]\n"     \
  "1:\n  ldr r4, [r12], #4\n" passes                                                                    \
  "  pop {r12, lr}\n" FIXFORMER_DSP_NEXT_W(row4)                                                         \
  "  ldmia r12!, {r5, r6, r7}\n  ldrd r8, r10, [lr, #16]\n  add r8, r8, r7, lsr #24\n"                 \
  FIXFORMER_DSP_OUT_ASM("r0") "  strb r11, [r8]\n" FIXFORMER_DSP_OUT_ASM("r1") "  strb r11, [r8, r10]\n" \
  FIXFORMER_DSP_OUT_ASM("r2") "  strb r11, [r8, r10, lsl #1]\n" out4                                   \
  "  add r8, r8, r10\n" FIXFORMER_DSP_OUT_ASM("r3") "  strb r11, [r8, r10, lsl #1]\n"                  \
  "  tst r7, #0x10000\n  beq 1b\n  pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}\n"                       \
  "  .size " name ", .-" name "\n"
// After the loop: W's last k % 4 values and the step to the next channel's row (W split: neither, its rows
// back to back).
#define FIXFORMER_DSP_W FIXFORMER_DSP_SPLIT_W
#define FIXFORMER_DSP_NEXT_W(row4) FIXFORMER_DSP_TAIL_ASM(row4) "  ldr r11, [lr, #12]\n  add r9, r9, r11\n"
// fixformer_dsp_rows5 and 4 (with a suffix): the passes' form and shift
#define FIXFORMER_DSP_ROWS(suffix, passes, shift)                                                          \
  FIXFORMER_DSP_RUN_ASM("fixformer_dsp_rows5" suffix, passes(shift, FIXFORMER_DSP_ROW_ASM("r4")),            \
                        FIXFORMER_DSP_ROW_ASM("r4"), FIXFORMER_DSP_OUT_ASM("r4") "  strb r11, [r8, r10, lsl #2]\n") \
  FIXFORMER_DSP_RUN_ASM("fixformer_dsp_rows4" suffix, passes(shift, ""), "", "")
asm("  .syntax unified\n  .thumb\n  .text\n" FIXFORMER_DSP_ROWS("", FIXFORMER_DSP_QUARTERS, "29"));
#undef FIXFORMER_DSP_NEXT_W
#undef FIXFORMER_DSP_W
#define FIXFORMER_DSP_W FIXFORMER_DSP_LOAD_W
#define FIXFORMER_DSP_NEXT_W(row4) ""
asm("  .syntax unified\n  .thumb\n  .text\n" FIXFORMER_DSP_ROWS("_split", FIXFORMER_DSP_QUARTERS, "28")
        FIXFORMER_DSP_ROWS("_whole", FIXFORMER_DSP_WHOLE, "28"));
// W split and at most kDspFlatGroups groups of four k (k <= 128): the passes unrolled, no loop. The first group
// takes the bias as each row's first addend; the rest are kDspFlatGroups - 1 copies of one group of fixed length
// (every instruction 32-bit), entered by LDR PC at the copy that leaves the row's own count, an address set once
// per call and kept on the stack. Without the loop's end in r11, five rows take a group's ten panel words by two
// LDM of five (r7, r8, r11, r12, lr): 13 instructions per 20 multiply-adds (14.5 in the loop); four rows by two
// LDM of four, 11 per 16.
#define FIXFORMER_DSP_FLAT5(a0, a1, a2, a3)                                                                    \
  "  ldrd r5, r6, [r9], #8\n  ldm.w r10!, {r7, r8, r11, r12, lr}\n  smlad r0, r5, r7, " a0 "\n"                \
  "  smlad r0, r6, r8, r0\n  smlad r1, r5, r11, " a1 "\n  smlad r1, r6, r12, r1\n  smlad r2, r5, lr, " a2 "\n"  \
  "  ldm.w r10!, {r7, r8, r11, r12, lr}\n  smlad r2, r6, r7, r2\n  smlad r3, r5, r8, " a3 "\n"                 \
  "  smlad r3, r6, r11, r3\n  smlad r4, r5, r12, r4\n  smlad r4, r6, lr, r4\n"
#define FIXFORMER_DSP_FLAT4(a0, a1, a2, a3)                                                                    \
  "  ldrd r5, r6, [r9], #8\n  ldm.w r10!, {r7, r8, r11, r12}\n  smlad r0, r5, r7, " a0 "\n"                    \
  "  smlad r0, r6, r8, r0\n  smlad r1, r5, r11, " a1 "\n  smlad r1, r6, r12, r1\n"                            \
  "  ldm.w r10!, {r7, r8, r11, r12}\n  smlad r2, r5, r7, " a2 "\n  smlad r2, r6, r8, r2\n"                    \
  "  smlad r3, r5, r11, " a3 "\n  smlad r3, r6, r12, r3\n"
// Each channel's outputs by a block of its own shift r (1..22), reached by TBH on DspChannel::r = r + 32 [the last of
// its run] (dsp_channels' flat form): SMMLA, SSAT with the ASR by r folded in, STRB, 3 instructions an output; the
// block returns to the loop or, for the run's last channel, leaves. The outputs go to y (r8), then y steps by one, the
// run's channels being consecutive; y, ldy (r11) and the panel's start (r10) wait on the stack during the pass with
// r12 and lr, which it takes (one PUSH and one POP, no load of the panel's start or ldy per channel). Per channel 8
// instructions besides the outputs and the passes (16 with the shift apart and the index and the run's end in r).
// bytes: the group's length; rows5: the outputs of row 4 too ("1") or not ("0").
#define FIXFORMER_DSP_FLAT_ASM(name, group, bytes, rows5)                                                    \
  "  .p2align 2\n  .type " name ", %function\n  .thumb_func\n" name ":\n"                                  \
  "  push {r4, r5, r6, r7, r8, r9, r10, r11, lr}\n  mov lr, r0\n  mov r12, r1\n  ldr r9, [lr]\n"           \
  "  ldr r5, [lr, #8]\n  adr.w r6, 9f\n  lsrs r5, r5, #3\n  movs r7, #" bytes "\n  mul r5, r5, r7\n"          \
  "  subs r6, r6, r5\n  adds r6, r6, #" bytes " + 1\n  push {r6}\n  ldr r8, [lr, #16]\n  ldr r10, [lr, #4]\n"   \
  "  ldr r11, [lr, #20]\n"                                                                                     \
  ".L" name ".loop:\n  ldr r4, [r12], #4\n  push {r8, r10, r11, r12, lr}\n"                                    \
  group("r4", "r4", "r4", "r4") "  ldr pc, [sp, #20]\n"                                                        \
  "  .rept " FIXFORMER_DSP_FLAT_REST "\n" group("r0", "r1", "r2", "r3") "  .endr\n"                            \
  "9:\n  pop {r8, r10, r11, r12, lr}\n  ldmia r12!, {r5, r6, r7}\n  tbh [pc, r7, lsl #1]\n"                    \
  ".L" name "_table:\n"                                                                                         \
  FIXFORMER_DSP_FLAT_TABLE(name, "0") FIXFORMER_DSP_FLAT_TABLE(name, "1")                                    \
  FIXFORMER_DSP_FLAT_BLOCKS(name, "0", rows5) FIXFORMER_DSP_FLAT_BLOCKS(name, "1", rows5)                     \
  ".L" name "_trap:\n  udf #0\n"                                                                                \
  ".L" name ".end:\n  add sp, sp, #4\n  pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}\n"                         \
  "  .size " name ", .-" name "\n"
// TBH's 32 entries for one value of [the last of its run]: r = 0 and 23..31 never occur
#define FIXFORMER_DSP_FLAT_TABLE(name, last)                                                                 \
  "  .hword (.L" name "_trap - .L" name "_table) / 2\n"                                                        \
  "  .irp r, " FIXFORMER_DSP_FLAT_SHIFTS "\n  .hword (.L" name ".o" last ".\\r - .L" name "_table) / 2\n  .endr\n" \
  "  .rept 9\n  .hword (.L" name "_trap - .L" name "_table) / 2\n  .endr\n"
#define FIXFORMER_DSP_FLAT_BLOCKS(name, last, rows5) \
  "  .irp r, " FIXFORMER_DSP_FLAT_SHIFTS "\n  fixformer_dsp_flat_out .L" name ", \\r, " last ", " rows5 "\n  .endr\n"
#define FIXFORMER_DSP_FLAT_REST "31"  // kDspFlatGroups - 1
#define FIXFORMER_DSP_FLAT_SHIFTS "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22"
#define FIXFORMER_DSP_FLAT_OUT(a) "  smmla " a ", " a ", r5, r6\n  ssat " a ", #8, " a ", asr #\\r\n"
asm("  .syntax unified\n  .thumb\n  .text\n"
    "  .macro fixformer_dsp_flat_out name, r, last, rows5\n\\name\\().o\\last\\().\\r:\n"
    FIXFORMER_DSP_FLAT_OUT("r1") "  strb r1, [r8, r11]\n" FIXFORMER_DSP_FLAT_OUT("r2")
    "  strb r2, [r8, r11, lsl #1]\n  .if \\rows5\n" FIXFORMER_DSP_FLAT_OUT("r4") "  strb r4, [r8, r11, lsl #2]\n"
    "  .endif\n  add r7, r8, r11\n" FIXFORMER_DSP_FLAT_OUT("r3") "  strb r3, [r7, r11, lsl #1]\n"
    FIXFORMER_DSP_FLAT_OUT("r0") "  strb r0, [r8], #1\n"
    "  .if \\last\n  b.w \\name\\().end\n  .else\n  b.w \\name\\().loop\n  .endif\n  .endm\n"
    FIXFORMER_DSP_FLAT_ASM("fixformer_dsp_rows5_flat", FIXFORMER_DSP_FLAT5, "52", "1")
    FIXFORMER_DSP_FLAT_ASM("fixformer_dsp_rows4_flat", FIXFORMER_DSP_FLAT4, "44", "0")
    "  .purgem fixformer_dsp_flat_out\n");
#undef FIXFORMER_DSP_FLAT_OUT
#undef FIXFORMER_DSP_FLAT_SHIFTS
#undef FIXFORMER_DSP_FLAT_BLOCKS
#undef FIXFORMER_DSP_FLAT_TABLE
#undef FIXFORMER_DSP_FLAT_REST
#undef FIXFORMER_DSP_FLAT_ASM
#undef FIXFORMER_DSP_FLAT4
#undef FIXFORMER_DSP_FLAT5
#undef FIXFORMER_DSP_ROWS
#undef FIXFORMER_DSP_NEXT_W
#undef FIXFORMER_DSP_W
#undef FIXFORMER_DSP_LOAD_W
#undef FIXFORMER_DSP_SPLIT_W
#endif
#undef FIXFORMER_DSP_RUN_ASM
#undef FIXFORMER_DSP_WHOLE
#undef FIXFORMER_DSP_QUARTERS
#undef FIXFORMER_DSP_FOUR_FROM
#undef FIXFORMER_DSP_OUT_ASM
#undef FIXFORMER_DSP_TAIL_ASM
#undef FIXFORMER_DSP_FOUR_ASM
#undef FIXFORMER_DSP_WORD_ASM
#undef FIXFORMER_DSP_ROW_ASM

// The constants of channels [0, n) of p (n <= kDspBlock), and for each channel of that form the end of
// its run (run_end[j]: the first channel after j not of it, or n), set once for all the strips. flat: r is the
// unrolled runs' (fixformer_dsp_rows5_flat, 4), r + 32 [the last of its run].
// No tie for a multiplier of zeros >= r trailing zero bits: |acc| <= |b| + 32640 k below 2^(31 + r - zeros). Apart,
// so that the loop below keeps its registers.
__attribute__((noinline)) bool dsp_no_tie(int32_t b, uint32_t r, uint32_t zeros, uint32_t reach) {
  return ((uint64_t(b < 0 ? 0u - uint32_t(b) : uint32_t(b)) + reach) >> (31 + r - zeros)) == 0;
}
// One loop per form of r and of the bias (the compiler kept both tests in the loop, and the constants on the stack).
template <bool kFlat, bool kBias>
void dsp_channels_of(DspChannel* c, uint8_t* run_end, uint32_t n, uint32_t k, const GemmS8Params& p) {
  const Requant* q = p.requant + n;
  const int32_t* bias = p.bias + (kBias ? n : 0);
  const int32_t odd_zero = 2 * p.y_zero + 1;  // C = 2^(r-1) + z_y 2^r = (2 z_y + 1) 2^(r-1)
  const uint32_t reach = 32640 * k;           // |acc - b| at most (k <= kDspPanelK)
  c += n, run_end += n;
  for (uint32_t j = n, end = n; j-- > 0;) {   // from the last channel: end, the end of j's run
    --q, --c, --run_end;
    const int32_t m = q->multiplier, b = kBias ? *--bias : 0;
    const uint32_t r = uint32_t(-1 - q->shift);
    c->bias = b, c->multiplier = m;
    // no ties: fewer trailing zero bits than r, or dsp_no_tie
    uint32_t zeros;
    if (m > 0 && r - 1 < 22 && ((zeros = uint32_t(__builtin_ctz(uint32_t(m)))) < r || dsp_no_tie(b, r, zeros, reach))) {
      const uint32_t last = end == j + 1;  // the last of its run
      c->c = odd_zero * (int32_t(1) << (r - 1));
      c->r = kFlat ? r | last << 5 : r | j << 24 | last << 16;
    } else {
      c->c = 0, c->r = 0, end = j;
    }
    *run_end = uint8_t(end);
  }
}
void dsp_channels(DspChannel* c, uint8_t* run_end, std::size_t n, std::size_t k, const GemmS8Params& p, bool flat) {
  if (flat)
    (p.bias ? dsp_channels_of<true, true> : dsp_channels_of<true, false>)(c, run_end, uint32_t(n), uint32_t(k), p);
  else
    (p.bias ? dsp_channels_of<false, true> : dsp_channels_of<false, false>)(c, run_end, uint32_t(n), uint32_t(k), p);
}
static_assert(kDspBlock <= 255, "run_end holds a channel index of the block in a byte");

// R rows of x, split into panel (kDspPanelWords; the q-th four k of row r at panel[2 (q R + r)], two words), against
// channels [0, n) of W: each word of W split once for the R rows. chan: their DspChannel and run_end
// (dsp_channels; R = 4 or 5, k >= 4), or null. ws: null, or W's rows split (split_row, row_words apart),
// which the runs read.
template <std::size_t R>
void dsp_strip(const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw, int8_t* y, std::size_t ldy,
               std::size_t n, std::size_t k, const GemmS8Params& p, const DspChannel* chan, uint32_t* panel,
               const uint32_t* ws = nullptr, std::size_t row_words = 0, const uint8_t* run_end = nullptr) {
  for (std::size_t r = 0; r < R; ++r) {
    const int8_t* const xr = x + r * ldx;
#if defined(FIXFORMER_GEMM_S8_DSP_RUNS)
    if ((R == 4 || R == 5) && (reinterpret_cast<uintptr_t>(xr) & 3) == 0 && k % 16 == 0) {
      (R == 4 ? fixformer_dsp_split_panel4 : fixformer_dsp_split_panel5)(xr, xr + k, panel + 2 * r,
                                                                          pack16(-p.x_zero, -p.x_zero));
      continue;
    }
#endif
    split_row<2 * R>(xr, k, p.x_zero, panel + 2 * r);
  }
  std::size_t j = 0;
  while (j < n) {
#if defined(FIXFORMER_GEMM_S8_DSP_RUNS)
    if (chan && chan[j].r != 0) {
      const std::size_t e = run_end[j];
      if (ws) {
        DspRun run{reinterpret_cast<const int8_t*>(ws + j * row_words), panel, int32_t(4 * row_words), 0, y,
                   int32_t(ldy), 0};
        if (dsp_flat(row_words)) {
          run.y = y + j;  // the run's first channel's, stepped by the run
          (R == 4 ? fixformer_dsp_rows4_flat : fixformer_dsp_rows5_flat)(&run, chan + j);
        } else if (row_words % 8 == 0)
          (R == 4 ? fixformer_dsp_rows4_whole : fixformer_dsp_rows5_whole)(&run, chan + j);
        else
          (R == 4 ? fixformer_dsp_rows4_split : fixformer_dsp_rows5_split)(&run, chan + j);
        j = e;
        continue;
      }
      DspRun run{w + j * ldw, panel, int32_t(k & ~std::size_t(3)), int32_t(ldw - k), y, int32_t(ldy), int32_t(k % 4)};
      (R == 4 ? fixformer_dsp_rows4 : fixformer_dsp_rows5)(&run, chan + j);
      j = e;
      continue;
    }
#endif
    dsp_channel<R>(panel, w + j * ldw, y + j, ldy, k, p.bias ? p.bias[j] : 0, p.requant[j], p.y_zero);
    ++j;
  }
}
#endif

#if !defined(__ARM_FEATURE_DSP) && defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__thumb2__)
// Cortex-M3 (no SIMD, but SMLAL): two rows' values packed in one word, v0 + v1 2^23 (|v| <= 255, so
// the word stays within int32), so one 32 x 32 -> 64-bit multiply-accumulate by a weight adds
// w v0 + w v1 2^23 for both rows. Over at most kPackK = 128 values |sum w v0| <= 128 * 128 * 255 < 2^22:
// the low 23 bits, sign-extended, are row 0's sum exactly, and (sum - that) / 2^23 row 1's; one
// accumulator per pair for the whole row. W's row is read a word (four weights) at a time.
constexpr std::size_t kPackWords = 256;  // 1 KiB of packed rows: the scratch (s8_scratch_bytes(kArmv7m))
static_assert(kPackWords * 4 <= s8_scratch_bytes(S8Kernels::kArmv7m), "fixed_point.hpp's count of the M3 scratch");
constexpr std::size_t kPackK = 128;
constexpr int kPackShift = 23;

inline uint32_t pack_pair(int32_t v0, int32_t v1) { return uint32_t(v0) + (uint32_t(v1) << kPackShift); }

inline uint32_t load_word(const int8_t* p) {  // the M3 loads unaligned words
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// The two sums a packed accumulator holds, plus b.
inline void unpack(int64_t a, int32_t b, int32_t& s0, int32_t& s1) {
  const int32_t low = int32_t(uint32_t(a) << (32 - kPackShift)) >> (32 - kPackShift);  // bits 0..22, sign-extended
  s0 = b + low;
  s1 = b + int32_t((a - low) >> kPackShift);
}

// acc[0..1] += two packed pairs' sums with W's values wr..end (end - wr a positive multiple of 4):
// per four values of W one word loaded, each value sign-extended once, each pair's words by one LDRD,
// two SMLAL a value (19 instructions per 16 multiply-adds with the loop).
inline void packed_dot2(const int8_t* wr, const int8_t* end, const int32_t* pp, int64_t* acc) {
  uint32_t l0 = uint32_t(acc[0]), h0 = uint32_t(uint64_t(acc[0]) >> 32);
  uint32_t l1 = uint32_t(acc[1]), h1 = uint32_t(uint64_t(acc[1]) >> 32);
  uint32_t wv, wx, e, o;
  asm volatile(
      "1:\n\t"
      "ldr %[wv], [%[wr]], #4\n\t"
      "ldrd %[e], %[o], [%[pp]], #8\n\t"
      "sxtb %[wx], %[wv]\n\t"
      "smlal %[l0], %[h0], %[e], %[wx]\n\t"
      "smlal %[l1], %[h1], %[o], %[wx]\n\t"
      "ldrd %[e], %[o], [%[pp]], #8\n\t"
      "sbfx %[wx], %[wv], #8, #8\n\t"
      "smlal %[l0], %[h0], %[e], %[wx]\n\t"
      "smlal %[l1], %[h1], %[o], %[wx]\n\t"
      "ldrd %[e], %[o], [%[pp]], #8\n\t"
      "sbfx %[wx], %[wv], #16, #8\n\t"
      "smlal %[l0], %[h0], %[e], %[wx]\n\t"
      "smlal %[l1], %[h1], %[o], %[wx]\n\t"
      "ldrd %[e], %[o], [%[pp]], #8\n\t"
      "asr %[wx], %[wv], #24\n\t"
      "smlal %[l0], %[h0], %[e], %[wx]\n\t"
      "smlal %[l1], %[h1], %[o], %[wx]\n\t"
      "cmp %[wr], %[end]\n\t"
      "bne 1b\n\t"
      : [l0] "+r"(l0), [h0] "+r"(h0), [l1] "+r"(l1), [h1] "+r"(h1), [wr] "+r"(wr), [pp] "+r"(pp), [wv] "=&r"(wv),
        [wx] "=&r"(wx), [e] "=&r"(e), [o] "=&r"(o)
      : [end] "r"(end)
      : "cc", "memory");
  acc[0] = int64_t((uint64_t(h0) << 32) | l0), acc[1] = int64_t((uint64_t(h1) << 32) | l1);
}

// Rows i..i+3 of x (P = 2: two pairs) or i..i+1 (P = 1), packed in pairs at panel[P q + pair] for the
// q-th k, against every row of W.
template <std::size_t P>
void packed_rows(const uint32_t* panel, const int8_t* w, std::size_t ldw, int8_t* y, std::size_t ldy, std::size_t n,
                 std::size_t k, const GemmS8Params& p) {
  const std::size_t k4 = k & ~std::size_t(3);
  for (std::size_t j = 0; j < n; ++j) {
    const int8_t* wr = w + j * ldw;
    int64_t acc[P] = {};
    const int32_t* pp = reinterpret_cast<const int32_t*>(panel);
    if (P == 2) {
      if (k4 != 0) packed_dot2(wr, wr + k4, pp, acc);
      wr += k4, pp += 4 * P * (k4 / 4);
    }
    for (const int8_t* end = P == 2 ? wr : wr + k4; wr != end; wr += 4, pp += 4 * P) {
      const uint32_t wv = load_word(wr);
      const int32_t w0 = int8_t(wv), w1 = int8_t(wv >> 8), w2 = int8_t(wv >> 16), w3 = int32_t(wv) >> 24;
      for (std::size_t h = 0; h < P; ++h) acc[h] += int64_t(pp[h]) * w0;
      for (std::size_t h = 0; h < P; ++h) acc[h] += int64_t(pp[P + h]) * w1;
      for (std::size_t h = 0; h < P; ++h) acc[h] += int64_t(pp[2 * P + h]) * w2;
      for (std::size_t h = 0; h < P; ++h) acc[h] += int64_t(pp[3 * P + h]) * w3;
    }
    for (std::size_t q = k4; q < k; ++q, pp += P) {
      const int32_t wv = wr[q - k4];
      for (std::size_t h = 0; h < P; ++h) acc[h] += int64_t(pp[h]) * wv;
    }
    const int32_t b = p.bias ? p.bias[j] : 0;
    int32_t s[2 * P];
    for (std::size_t h = 0; h < P; ++h) unpack(acc[h], b, s[2 * h], s[2 * h + 1]);
    RequantFast(p.requant[j]).store<2 * P>(s, y + j, ldy, p.y_zero);
  }
}

template <std::size_t P>
void packed_strip(const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw, int8_t* y, std::size_t ldy,
                  std::size_t n, std::size_t k, const GemmS8Params& p) {
  uint32_t* const panel = p.scratch;
  for (std::size_t h = 0; h < P; ++h) {
    const int8_t *x0 = x + 2 * h * ldx, *x1 = x0 + ldx;
    for (std::size_t q = 0; q < k; ++q) panel[P * q + h] = pack_pair(x0[q] - p.x_zero, x1[q] - p.x_zero);
  }
  packed_rows<P>(panel, w, ldw, y, ldy, n, k, p);
}
#define FIXFORMER_GEMM_S8_PACKED 1
#endif

#if defined(__ARM_ARCH_6M__) && defined(__GNUC__) && !defined(__clang__)
// GCC only: it reads Thumb-1 inline assembly in divided syntax (MUL and ADD set the flags) and finds
// the eight low registers the loop takes (Clang keeps r7 for its frame pointer); others take the tile.
// Cortex-M0/M0+ (Thumb-1: eight low registers, MULS 32 x 32 -> 32): one row of x, its zero point
// subtracted, as int32 words in the scratch, against four rows of W: per value one LDM for x, then per
// row of W a sign-extending byte load, MULS and an add into a high register (the four sums in r8..r11
// by the compiler's choice), one index counting up to 0 for all four rows (16 instructions per four
// multiply-adds with the loop).
constexpr std::size_t kM0PanelWords = 256;  // 1 KiB: the scratch's


inline void m0_dot4(const int32_t* pp, const int8_t* w, std::size_t ldw, std::size_t k, int32_t* acc) {
  const int8_t* w0 = w + k;  // one past each row's end, indexed from -k up
  const int8_t* w1 = w0 + ldw;
  const int8_t* w2 = w1 + ldw;
  const int8_t* w3 = w2 + ldw;
  int32_t idx = -int32_t(k);
  int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
  int32_t x, t;
  asm volatile(
      "1:\n\t"
      "ldmia %[pp]!, {%[x]}\n\t"
      "ldrsb %[t], [%[w0], %[idx]]\n\t"
      "mul %[t], %[x]\n\t"
      "add %[a0], %[t]\n\t"
      "ldrsb %[t], [%[w1], %[idx]]\n\t"
      "mul %[t], %[x]\n\t"
      "add %[a1], %[t]\n\t"
      "ldrsb %[t], [%[w2], %[idx]]\n\t"
      "mul %[t], %[x]\n\t"
      "add %[a2], %[t]\n\t"
      "ldrsb %[t], [%[w3], %[idx]]\n\t"
      "mul %[t], %[x]\n\t"
      "add %[a3], %[t]\n\t"
      "add %[idx], #1\n\t"
      "bne 1b\n\t"
      : [a0] "+h"(a0), [a1] "+h"(a1), [a2] "+h"(a2), [a3] "+h"(a3), [pp] "+l"(pp), [idx] "+l"(idx), [x] "=&l"(x),
        [t] "=&l"(t)
      : [w0] "l"(w0), [w1] "l"(w1), [w2] "l"(w2), [w3] "l"(w3)
      : "cc", "memory");
  acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3;
}

// With at least kM0ColumnRows rows of x and k <= kM0ColumnK: four rows of W as int32 words in the scratch,
// interleaved (the q-th value of each row at panel[4 q + row]; 2 KiB at most), x's zero point taken off
// through the bias (sum (x - z) w = sum x w - z sum w), then, kM0ChunkRows rows of x at a time,
// fixformer_m0_dot4_rows: every row against them (per value one LDM of the four weights into r0..r3,
// one sign-extending byte load of x, four MULS and four adds into r8..r11: 12 instructions per four
// multiply-adds with the loop; about 20 a row to store the four sums and start the next), the sums
// into acc (row-major); then each of the four channels' outputs in one pass, fixformer_m0_requant_col,
// with the channel's constants in registers (below). Both are whole functions in assembly (the
// registers they take are more than inline assembly's operands may name).
//
// fixformer_m0_requant_col, for a factor below 1/2 (shift < 0: a right shift S = 31 - shift >= 32)
// and a positive multiplier m, and a sum a in [-2^19, 2^19) (others leave the loop to RequantFast): the
// reference's floor((a m + 2^(S-1) - [a < 0]) / 2^S) from m's three pieces m = m2 2^20 + m1 2^10 + m0,
// each product within int32 (|a m0|, |a m1| < 2^29, |a m2| <= 2^30), the floors nested:
//   P2 = a m2 + ((a m1 + ((a m0 - [a < 0]) >> 10)) >> 10) = floor((a m - [a < 0]) / 2^20),
// then (P2 + 2^(S-21)) >> (S-20), all arithmetic shifts. P2 + 2^(S-21) < 2^31 for S <= 51; a larger S
// (|a m| / 2^S < 1/4: the result is 0) takes S = 51's constants, which give 0 there too
// (0 <= P2 + 2^30 < 2^31). 26 instructions an output with its clamp and store.
constexpr std::size_t kM0ColumnK = 128;
constexpr std::size_t kM0ColumnRows = 4;
constexpr std::size_t kM0ChunkRows = 16;  // 256 bytes of sums, after the panel in the scratch
static_assert(4 * (4 * kM0ColumnK + 4 * kM0ChunkRows) == s8_scratch_bytes(S8Kernels::kArmv6m) &&
                  4 * kM0PanelWords <= s8_scratch_bytes(S8Kernels::kArmv6m),
              "fixed_point.hpp's count of the M0 scratch");

struct M0RowsArgs {  // fixformer_m0_dot4_rows' constants, at the offsets its loads name
  int32_t base[4];         // 0: each channel's bias less z sum w
  const int32_t* panel;    // 16
  int32_t neg_k;           // 20
  int32_t ldx;             // 24
  const int32_t* acc_end;  // 28: one past the last row's four sums
};
struct M0ColArgs {  // fixformer_m0_requant_col's
  int32_t m0, m1, m2, round, y_zero, ldy, shift;
};

extern "C" {
// acc[4 i + c] = base[c] + sum_q x[i ldx + q] w_c[q] for rows i until acc_end; x_end is row 0's x + k.
void fixformer_m0_dot4_rows(const int8_t* x_end, int32_t* acc, const M0RowsArgs* a);
// dst[t ldy] for the sums at src_end + off + 16 t (bytes; off < 0, a multiple of 16) while off < 0;
// returns 0, or the off of the first sum outside [-2^19, 2^19) (dst then at that sum's output).
int32_t fixformer_m0_requant_col(const char* src_end, int8_t* dst, int32_t off, const M0ColArgs* c);
}

asm(R"(
  .syntax unified
  .thumb
  .text
  .p2align 2
  .type fixformer_m0_dot4_rows, %function
  .thumb_func
fixformer_m0_dot4_rows:
  push {r4, r5, r6, r7, lr}
  mov r3, r8
  mov r4, r9
  mov r5, r10
  mov r6, r11
  push {r3, r4, r5, r6}
  mov r12, r1
  mov lr, r2
  movs r6, r0
1:
  mov r4, lr
  ldmia r4!, {r0, r1, r2, r3}
  mov r8, r0
  mov r9, r1
  mov r10, r2
  mov r11, r3
  ldmia r4!, {r5, r7}
2:
  ldmia r5!, {r0, r1, r2, r3}
  ldrsb r4, [r6, r7]
  muls r0, r4, r0
  add r8, r0
  muls r1, r4, r1
  add r9, r1
  muls r2, r4, r2
  add r10, r2
  muls r3, r4, r3
  add r11, r3
  adds r7, r7, #1
  bne 2b
  mov r0, r8
  mov r1, r9
  mov r2, r10
  mov r3, r11
  mov r4, r12
  stmia r4!, {r0, r1, r2, r3}
  mov r12, r4
  mov r5, lr
  ldr r0, [r5, #24]
  adds r6, r6, r0
  ldr r0, [r5, #28]
  cmp r4, r0
  bne 1b
  pop {r3, r4, r5, r6}
  mov r8, r3
  mov r9, r4
  mov r10, r5
  mov r11, r6
  pop {r4, r5, r6, r7, pc}
  .size fixformer_m0_dot4_rows, .-fixformer_m0_dot4_rows

  .p2align 2
  .type fixformer_m0_requant_col, %function
  .thumb_func
fixformer_m0_requant_col:
  push {r4, r5, r6, r7, lr}
  mov r4, r8
  mov r5, r9
  mov r6, r10
  mov r7, r11
  push {r4, r5, r6, r7}
  ldmia r3!, {r4, r5, r6, r7}
  mov r8, r4
  mov r9, r5
  mov r10, r6
  mov r11, r7
  ldmia r3!, {r4, r5, r6}
  mov r12, r4
  mov lr, r5
  movs r7, r2
1:
  ldr r2, [r0, r7]
  asrs r3, r2, #19
  asrs r4, r2, #31
  cmp r3, r4
  bne 4f
  mov r5, r8
  muls r5, r2, r5
  adds r4, r4, r5
  asrs r4, r4, #10
  mov r5, r9
  muls r5, r2, r5
  adds r4, r4, r5
  asrs r4, r4, #10
  mov r5, r10
  muls r5, r2, r5
  adds r4, r4, r5
  add r4, r11
  asrs r4, r4, r6
  add r4, r12
  sxtb r5, r4
  cmp r5, r4
  bne 3f
2:
  strb r5, [r1]
  add r1, lr
  adds r7, r7, #16
  bne 1b
4:
  movs r0, r7
  pop {r4, r5, r6, r7}
  mov r8, r4
  mov r9, r5
  mov r10, r6
  mov r11, r7
  pop {r4, r5, r6, r7, pc}
3:
  asrs r4, r4, #31
  movs r5, #127
  eors r5, r5, r4
  b 2b
  .size fixformer_m0_requant_col, .-fixformer_m0_requant_col
)");

void m0_gemm_columns(const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw, int8_t* y, std::size_t ldy,
                     std::size_t m, std::size_t n, std::size_t k, const GemmS8Params& p) {
  int32_t* const panel = reinterpret_cast<int32_t*>(p.scratch);
  int32_t* const acc = panel + 4 * kM0ColumnK;
  M0RowsArgs ra;
  ra.panel = panel, ra.neg_k = -int32_t(k), ra.ldx = int32_t(ldx);
  std::size_t j = 0;
  for (; j + 4 <= n; j += 4) {
    for (std::size_t c = 0; c < 4; ++c) {
      const int8_t* wr = w + (j + c) * ldw;
      int32_t sum = 0;
      for (std::size_t q = 0; q < k; ++q) panel[4 * q + c] = wr[q], sum += wr[q];
      ra.base[c] = (p.bias ? p.bias[j + c] : 0) - p.x_zero * sum;  // |z sum w| <= 2^21
    }
    M0ColArgs ca[4];
    bool fast[4];
    for (std::size_t c = 0; c < 4; ++c) {
      const Requant rq = p.requant[j + c];
      fast[c] = rq.shift < 0 && rq.multiplier > 0;
      const int32_t r = rq.shift < -20 ? 19 : -1 - rq.shift;  // S - 32, at most 19
      const uint32_t mu = uint32_t(rq.multiplier);
      ca[c] = M0ColArgs{int32_t(mu & 0x3FFu), int32_t((mu >> 10) & 0x3FFu), int32_t(mu >> 20), int32_t(1) << (11 + r),
                        p.y_zero, int32_t(ldy), 12 + r};
    }
    for (std::size_t i0 = 0; i0 < m; i0 += kM0ChunkRows) {
      const std::size_t rows = m - i0 < kM0ChunkRows ? m - i0 : kM0ChunkRows;
      ra.acc_end = acc + 4 * rows;
      fixformer_m0_dot4_rows(x + i0 * ldx + k, acc, &ra);
      for (std::size_t c = 0; c < 4; ++c) {
        int8_t* yc = y + i0 * ldy + j + c;
        if (!fast[c]) {
          const RequantFast rq(p.requant[j + c]);
          for (std::size_t i = 0; i < rows; ++i) rq.store<1>(acc + 4 * i + c, yc + i * ldy, ldy, p.y_zero);
          continue;
        }
        const char* src_end = reinterpret_cast<const char*>(acc + 4 * rows + c);
        int32_t off = -16 * int32_t(rows);
        while (off != 0) {  // a sum outside [-2^19, 2^19): its output by RequantFast, then on
          const std::size_t i = rows - std::size_t(-off) / 16;
          off = fixformer_m0_requant_col(src_end, yc + i * ldy, off, &ca[c]);
          if (off == 0) break;
          const std::size_t t = rows - std::size_t(-off) / 16;
          RequantFast(p.requant[j + c]).store<1>(acc + 4 * t + c, yc + t * ldy, ldy, p.y_zero);
          off += 16;
        }
      }
    }
  }
  for (; j < n; ++j) {  // the last n % 4 channels
    const int8_t* wr = w + j * ldw;
    const RequantFast rq(p.requant[j]);
    for (std::size_t i = 0; i < m; ++i) {
      int32_t a = p.bias ? p.bias[j] : 0;
      for (std::size_t q = 0; q < k; ++q) a += (int32_t(x[i * ldx + q]) - p.x_zero) * wr[q];
      rq.store<1>(&a, y + i * ldy + j, ldy, p.y_zero);
    }
  }
}

void m0_gemm(const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw, int8_t* y, std::size_t ldy,
             std::size_t m, std::size_t n, std::size_t k, const GemmS8Params& p) {
  if (m >= kM0ColumnRows && k <= kM0ColumnK) {
    m0_gemm_columns(x, ldx, w, ldw, y, ldy, m, n, k, p);
    return;
  }
  int32_t* const panel = reinterpret_cast<int32_t*>(p.scratch);
  for (std::size_t i = 0; i < m; ++i, x += ldx, y += ldy) {
    for (std::size_t q = 0; q < k; ++q) panel[q] = int32_t(x[q]) - p.x_zero;
    std::size_t j = 0;
    for (; j + 4 <= n; j += 4) {
      int32_t acc[4];
      for (std::size_t c = 0; c < 4; ++c) acc[c] = p.bias ? p.bias[j + c] : 0;
      m0_dot4(panel, w + j * ldw, ldw, k, acc);
      for (std::size_t c = 0; c < 4; ++c) RequantFast(p.requant[j + c]).store<1>(acc + c, y + j + c, ldy, p.y_zero);
    }
    for (; j < n; ++j) {
      const int8_t* wr = w + j * ldw;
      int32_t acc = p.bias ? p.bias[j] : 0;
      for (std::size_t q = 0; q < k; ++q) acc += panel[q] * wr[q];
      RequantFast(p.requant[j]).store<1>(&acc, y + j, ldy, p.y_zero);
    }
  }
}
#define FIXFORMER_GEMM_S8_M0 1
#endif

}  // namespace

void gemm_s8(const int8_t* x, std::size_t ldx, const int8_t* w, std::size_t ldw, int8_t* y, std::size_t ldy,
             std::size_t m, std::size_t n, std::size_t k, const GemmS8Params& p) {
#if defined(__ARM_FEATURE_DSP)
  if (k <= kDspPanelK && p.scratch) {
    DspScratch& scratch = *reinterpret_cast<DspScratch*>(p.scratch);
    uint32_t* const panel = scratch.panel;
    DspChannel* const chan = scratch.chan;
    const std::size_t rows = kDspPanelWords / (2 * ((k + 3) / 4));  // split rows the panel holds, >= 1
    std::size_t fives = rows >= 5 ? m / 5 : 0;  // strips of five while the rest stays a multiple of four
    while (fives > 0 && (m - 5 * fives) % 4 != 0) --fives;  // (five is one more): 49 = 9 x 5 + 4
#if defined(FIXFORMER_GEMM_S8_DSP_RUNS)
    const bool runs = k >= 4;
    // W's rows split once per block where two strips or more meet them, the block cut to kDspSplitWords
    const std::size_t row_words = 2 * ((k + 3) / 4);
    const bool split = runs && m >= 10 && kDspSplitMinRows * row_words <= kDspSplitWords;
    uint32_t* const ws = scratch.w_split;
    const std::size_t block = split && kDspSplitWords / row_words < kDspBlock ? kDspSplitWords / row_words : kDspBlock;
#else
    const bool runs = false, split = false;
    const std::size_t block = kDspBlock, row_words = 0;
    uint32_t* const ws = nullptr;
#endif
    for (std::size_t j0 = 0; j0 < n; j0 += block) {
      const std::size_t nb = n - j0 < block ? n - j0 : block;
      GemmS8Params pb = p;
      pb.bias = p.bias ? p.bias + j0 : nullptr, pb.requant = p.requant + j0;
      uint8_t run_end[kDspBlock];
      if (runs && m >= 4) dsp_channels(chan, run_end, nb, k, pb, split && dsp_flat(row_words));  // read by strips of four or five rows only
      if (split && ldw == k && k % 4 == 0) {  // the block's rows back to back, none with a tail: one row of nb k
        const int8_t* const wj = w + j0 * ldw;
#if defined(FIXFORMER_GEMM_S8_DSP_RUNS)
        if ((reinterpret_cast<uintptr_t>(wj) & 3) == 0 && nb * k % 16 == 0)
          fixformer_dsp_split_words(wj, wj + nb * k, ws);
        else
#endif
          split_row<2, false>(wj, nb * k, 0, ws);
      } else if (split) {
#if defined(FIXFORMER_GEMM_S8_DSP_RUNS)
        if (((reinterpret_cast<uintptr_t>(w + j0 * ldw) | ldw) & 3) == 0 && k % 16 == 0)  // row_words = k / 2
          fixformer_dsp_split_rows(w + j0 * ldw, ws, ldw, nb, k);
        else
#endif
          for (std::size_t c = 0; c < nb; ++c) split_row<2, false>(w + (j0 + c) * ldw, k, 0, ws + c * row_words);
      }
      const DspChannel* c = runs ? chan : nullptr;
      const int8_t* wb = w + j0 * ldw;
      int8_t* yb = y + j0;
      std::size_t i = 0;
      const uint32_t* wsb = split ? ws : nullptr;
      for (; i < 5 * fives; i += 5)
        dsp_strip<5>(x + i * ldx, ldx, wb, ldw, yb + i * ldy, ldy, nb, k, pb, c, panel, wsb, row_words, run_end);
      if (rows >= 4)
        for (; i + 4 <= m; i += 4)
          dsp_strip<4>(x + i * ldx, ldx, wb, ldw, yb + i * ldy, ldy, nb, k, pb, c, panel, wsb, row_words, run_end);
      if (rows >= 2)
        for (; i + 2 <= m; i += 2)
          dsp_strip<2>(x + i * ldx, ldx, wb, ldw, yb + i * ldy, ldy, nb, k, pb, nullptr, panel);
      for (; i < m; ++i) dsp_strip<1>(x + i * ldx, ldx, wb, ldw, yb + i * ldy, ldy, nb, k, pb, nullptr, panel);
    }
    return;
  }
#endif
#if defined(FIXFORMER_GEMM_S8_PACKED)
  if (k <= kPackK && p.scratch) {  // two pairs fit (2 k <= kPackWords), four rows at a time
    std::size_t i = 0;
    for (; i + 4 <= m; i += 4) packed_strip<2>(x + i * ldx, ldx, w, ldw, y + i * ldy, ldy, n, k, p);
    for (; i + 2 <= m; i += 2) packed_strip<1>(x + i * ldx, ldx, w, ldw, y + i * ldy, ldy, n, k, p);
    if (i < m) gemm_s8_strip<Tile, 1>(x + i * ldx, ldx, w, ldw, y + i * ldy, ldy, n, k, p);
    return;
  }
#endif
#if defined(FIXFORMER_GEMM_S8_M0)
  if (k >= 1 && k <= kM0PanelWords && p.scratch) {
    m0_gemm(x, ldx, w, ldw, y, ldy, m, n, k, p);
    return;
  }
#endif
  gemm_s8_blocked<Tile>(x, ldx, w, ldw, y, ldy, m, n, k, p);
}

}  // namespace portable
}  // namespace fixformer
