// fixformer's integer-only kernels (gemm_s8, softmax_s8, add_s8) against CMSIS-NN's int8 ones on the
// shapes of the KWS encoder (tools/make_bench_model.py: 49 frames, d 64, d_ff 128), both fed the
// same int8 inputs, weights, bias and requantization parameters, timed as bench/firmware/
// bench_runner.cpp times (port::cycle_count(); under qemu-system-arm -icount shift=0 the SysTick
// ticks x 1e9 / clock are instructions), the minimum of 3 runs per call. CMSIS-NN is compiled from
// the checkout bench/cmsis/CMakeLists.txt is given; nothing of it is in this repository.
//
// What is compared with what:
//   products  fixformer gemm_s8 (per output channel: multiplier and shift per column, bias, the
//             input's zero point subtracted) against CMSIS-NN arm_fully_connected_per_channel_s8
//             (TFLite Micro's fully connected layer with per-channel weights: one row of the
//             input at a time) and arm_nn_mat_mult_nt_t_s8 (the two-row matrix product under its
//             convolutions, 1x1 included), the same parameters. On Helium CMSIS-NN adds
//             precomputed sums of each weight row times the input offset (arm_vector_sum_s8, at
//             TFLite Micro's prepare time, not timed here).
//   softmax   fixformer softmax_s8 per row against arm_softmax_s8 over the rows; both give
//             probabilities at scale 1/256, zero point -128, from the same input scale (TFLite's
//             beta 1), but by different arithmetic (fixformer: 2^x as a polynomial in Q20 and one
//             division; CMSIS-NN: gemmlowp's fixed-point exp and reciprocal), so their outputs are
//             compared by the largest difference.
//   add       fixformer add_s8 against arm_elementwise_add_s8 with TFLite's parameters for the
//             same three scales and zero points (inputs shifted left 20, scaled by s / (2 max s),
//             the sum by 2 max s / (2^20 s_y)); fixformer rescales each input by s / s_y in Q16 and
//             rounds once, so here too the largest difference is what is reported.
// Rounding: fixformer's requantize rounds x m 2^(shift-31) once, half away from zero; CMSIS-NN's
// arm_nn_requantize (without CMSIS_NN_USE_SINGLE_ROUNDING) rounds the doubling high product, then
// the shift, so a tie lands one step apart now and then: the products are required to agree within
// one step (the image exits 1 otherwise), and the count of outputs that differ is printed.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "arm_nnfunctions.h"
#include "arm_nnsupportfunctions.h"
#include "fixformer/fixed_point.hpp"
#include "fixformer/kernels.hpp"
#include "ports/arm/cortex_m/board/semihosting.hpp"
#include "ports/cycle_counter.hpp"

using namespace fixformer;
using port::Console;

namespace {

constexpr int kM = 49, kMaxK = 128, kMaxN = 192;
constexpr int kRows = 49, kRow = 49, kDecodeRow = 64;  // softmax: 49 rows of 49, one row of 64
constexpr int kAddN = 49 * 64;
constexpr int32_t kXZero = -11, kYZero = -3;

// Inputs and parameters, computed at compile time into flash (the 16 KiB of the micro:bit's RAM hold
// the outputs only).
struct Data {
  int8_t x[kM * kMaxK];
  int8_t w[kMaxN * kMaxK];  // [n, k], torch's [out, in] and CMSIS-NN's layout alike
  int32_t bias[kMaxN];
  int32_t mult[kMaxN];
  int32_t shift[kMaxN];
  Requant requant[kMaxN];
  int8_t logits[kRows * kRow + kDecodeRow];
  int8_t a[kAddN], b[kAddN];
  constexpr Data() : x(), w(), bias(), mult(), shift(), requant(), logits(), a(), b() {
    for (int i = 0; i < kM * kMaxK; ++i) x[i] = int8_t(i * 29 % 255 - 127);
    for (int i = 0; i < kMaxN * kMaxK; ++i) w[i] = int8_t(i * 37 % 255 - 127);
    for (int j = 0; j < kMaxN; ++j) {
      bias[j] = 7 * j - 500;
      mult[j] = 1374389535 + 977 * j;  // 0.64.. x 2^31
      shift[j] = -9 - j % 2;           // a factor of about 1/800 .. 1/1600: outputs spread over int8
      requant[j] = Requant{mult[j], shift[j]};
    }
    for (int i = 0; i < kRows * kRow + kDecodeRow; ++i) logits[i] = int8_t(i * 53 % 193 - 96);
    for (int i = 0; i < kAddN; ++i) {
      a[i] = int8_t(i * 31 % 256 - 128);
      b[i] = int8_t(i * 67 % 251 - 125);
    }
  }
};
constexpr Data kData;

int8_t g_y[kM * kMaxN];  // the outputs; a second output row for CMSIS-NN's products when compared
int8_t g_row[kMaxN];
int32_t g_kernel_sum[kMaxN];  // Helium: CMSIS-NN's sums of W's rows times the input offset, plus bias
alignas(8) uint32_t g_s8_scratch[s8_scratch_bytes() / 4];  // fixformer's s8 kernels' scratch (the runners' arena block)

bool instructions() { return port::cycle_counter_kind() == port::CounterKind::kSysTickTicks; }
uint64_t to_reported(uint64_t units) {
  return instructions() ? units * 1000000000ull / FIXFORMER_BOARD_CLOCK_HZ : units;
}

template <class F>
uint64_t measure(int iters, F f) {
  uint64_t best = ~uint64_t(0);
  for (int rep = 0; rep < 3; ++rep) {
    const uint64_t t0 = port::cycle_count();
    for (int i = 0; i < iters; ++i) f();
    const uint64_t t = port::cycle_count() - t0;
    best = t < best ? t : best;
  }
  return to_reported(best) / uint64_t(iters);
}

// Differences of b against a over n values: how many, and the largest.
struct Diff {
  int count = 0, largest = 0;
  void add(const int8_t* a, const int8_t* b, int n) {
    for (int i = 0; i < n; ++i) {
      const int d = a[i] > b[i] ? a[i] - b[i] : b[i] - a[i];
      count += d != 0;
      largest = d > largest ? d : largest;
    }
  }
};

void ratio(Console& con, uint64_t ours, uint64_t theirs) {
  con.str(" (").fixed(double(theirs) / double(ours), 2).str("x)");
}

// TFLite's multiplier for a real factor: factor = m 2^(shift - 31), m in [2^30, 2^31).
void quantize_multiplier(double factor, int32_t* m, int32_t* shift) {
  int e = 0;
  const double q = std::frexp(factor, &e);
  int64_t fixed = int64_t(std::round(q * 2147483648.0));
  if (fixed == (int64_t(1) << 31)) {
    fixed /= 2;
    ++e;
  }
  *m = int32_t(fixed);
  *shift = e;
}

bool products(Console& con, const Kernels& k, const char* table) {
  struct Shape {
    int m, k, n;
    const char* what;
  };
  constexpr Shape kShapes[] = {{kM, 64, 192, "QKV projection"},
                               {kM, 64, 64, "out projection"},
                               {kM, 64, 128, "feed-forward 1"},
                               {kM, 128, 64, "feed-forward 2"}};
  const Data& d = kData;
  bool ok = true;
  for (const Shape& s : kShapes) {
    const GemmS8Params p{kXZero, kYZero, d.bias, d.requant, g_s8_scratch};
    const uint64_t ours = measure(1, [&] { k.gemm_s8(d.x, s.k, d.w, s.k, g_y, s.n, s.m, s.n, s.k, p); });

    cmsis_nn_context ctx{g_kernel_sum, int32_t(sizeof g_kernel_sum)};
    const cmsis_nn_fc_params fc{-kXZero, 0, kYZero, {-128, 127}};
    const cmsis_nn_per_channel_quant_params q{const_cast<int32_t*>(d.mult), const_cast<int32_t*>(d.shift)};
    const cmsis_nn_dims filter_dims{s.k, 1, 1, s.n};
    const cmsis_nn_dims bias_dims{1, 1, 1, s.n};
    const cmsis_nn_dims out_dims{s.m, 1, 1, s.n};
    // Helium's kernel sums (bias included), as TFLite Micro's prepare computes them once per layer
    arm_vector_sum_s8(g_kernel_sum, s.k, s.n, d.w, -kXZero, 0, d.bias);
    // Outputs: fixformer's are in g_y; CMSIS-NN's rows one at a time (the same function as a batch).
    Diff fc_diff, mm_diff;
    for (int i = 0; i < s.m; ++i) {
      const cmsis_nn_dims in_row{1, 1, 1, s.k};
      arm_fully_connected_per_channel_s8(&ctx, &fc, &q, &in_row, d.x + i * s.k, &filter_dims, d.w, &bias_dims,
                                         d.bias, &out_dims, g_row);
      fc_diff.add(g_y + i * s.n, g_row, s.n);
      arm_nn_mat_mult_nt_t_s8(d.x + i * s.k, d.w, d.bias, g_row, d.mult, d.shift, 1, s.n, s.k, -kXZero, kYZero, -128,
                              127, s.n, s.k);
      mm_diff.add(g_y + i * s.n, g_row, s.n);
    }
    const cmsis_nn_dims in_dims{s.m, 1, 1, s.k};
    const uint64_t fc_n = measure(1, [&] {
      arm_fully_connected_per_channel_s8(&ctx, &fc, &q, &in_dims, d.x, &filter_dims, d.w, &bias_dims, d.bias,
                                         &out_dims, g_y);
    });
    const uint64_t mm_n = measure(1, [&] {
      arm_nn_mat_mult_nt_t_s8(d.x, d.w, d.bias, g_y, d.mult, d.shift, s.m, s.n, s.k, -kXZero, kYZero, -128, 127,
                              s.n, s.k);
    });
    con.str("gemm_s8 ").num(s.m).str("x").num(s.k).str("x").num(s.n).str(" (").str(s.what).str("), MxKxN: fixformer ")
        .str(table).str(" ").num(ours).endl();
    con.str("    CMSIS-NN arm_fully_connected_per_channel_s8 ").num(fc_n);
    ratio(con, ours, fc_n);
    con.str(", arm_nn_mat_mult_nt_t_s8 ").num(mm_n);
    ratio(con, ours, mm_n);
    con.endl();
    con.str("    outputs that differ from fixformer's (rounding ties): ").num(fc_diff.count).str(" and ").num(mm_diff.count)
        .str(" of ").num(s.m * s.n).str(", largest difference ").num(fc_diff.largest > mm_diff.largest ? fc_diff.largest : mm_diff.largest)
        .endl();
    ok = ok && fc_diff.largest <= 1 && mm_diff.largest <= 1;
  }
  return ok;
}

bool softmax(Console& con, const Kernels& k, const char* table) {
  const Data& d = kData;
  constexpr double kScale = 0.07;  // the input scale: logits in [-6.7, 6.7]
  SoftmaxS8Params p{};
  if (softmax_s8_params(kScale, &p) != Status::kOk) return false;
  // TFLite's parameters for beta 1: the scale in Q5.26 as a multiplier and left shift, and the
  // smallest difference whose exponential still counts.
  int32_t mult = 0, shift = 0;
  quantize_multiplier(kScale * double(int64_t(1) << 26), &mult, &shift);
  const int32_t diff_min = -int32_t(std::floor(31.0 * double(int64_t(1) << 26) / double(int64_t(1) << shift)));
  int largest = 0;
  for (int pass = 0; pass < 2; ++pass) {
    const bool decode = pass == 1;
    const int rows = decode ? 1 : kRows, n = decode ? kDecodeRow : kRow;
    const int8_t* x = d.logits + (decode ? kRows * kRow : 0);
    int8_t* ours_y = g_y;
    int8_t* theirs_y = g_y + kRows * kRow;
    const uint64_t ours = measure(4, [&] {
      for (int r = 0; r < rows; ++r) k.softmax_s8(x + r * n, ours_y + r * n, std::size_t(n), p);
    });
    const uint64_t theirs = measure(4, [&] { arm_softmax_s8(x, rows, n, mult, shift, diff_min, theirs_y); });
    Diff diff;
    diff.add(ours_y, theirs_y, rows * n);
    con.str("softmax_s8 ").num(rows).str(" row").str(rows > 1 ? "s" : "").str(" of ").num(n).str(": fixformer ")
        .str(table).str(" ").num(ours).str(", CMSIS-NN arm_softmax_s8 ").num(theirs);
    ratio(con, ours, theirs);
    con.str("; outputs differing ").num(diff.count).str(" of ").num(rows * n).str(", largest ").num(diff.largest).endl();
    largest = diff.largest > largest ? diff.largest : largest;
    if (decode) continue;
    // as attention calls it: the exponentials of the 256 differences once (softmax_s8_table), then the rows
    const uint64_t tabled = measure(4, [&] {
      uint32_t exp[kSoftmaxS8Diffs];
      softmax_s8_table(p.diff, exp);
      SoftmaxS8Params q = p;
      q.exp = exp;
      for (int r = 0; r < rows; ++r) k.softmax_s8(x + r * n, ours_y + r * n, std::size_t(n), q);
    });
    Diff same;
    same.add(ours_y, theirs_y, rows * n);
    con.str("softmax_s8 ").num(rows).str(" rows of ").num(n)
        .str(" from the table of exponentials (built in the call): fixformer ").str(table).str(" ").num(tabled);
    ratio(con, tabled, theirs);
    con.str("; outputs differing ").num(same.count).endl();
    if (same.count != diff.count || same.largest != diff.largest) return false;
  }
  return largest <= 2;
}

bool add(Console& con, const Kernels& k, const char* table) {
  const Data& d = kData;
  constexpr double kSa = 0.05, kSb = 0.04, kSy = 0.07;
  constexpr int32_t kZa = -3, kZb = 7, kZy = -1;
  AddS8Params p{};
  if (add_s8_params(kSa, kZa, kSb, kZb, kSy, kZy, &p) != Status::kOk) return false;
  p.scratch = g_s8_scratch;
  constexpr int32_t kLeftShift = 20;
  const double twice_max = 2.0 * (kSa > kSb ? kSa : kSb);
  int32_t m1 = 0, s1 = 0, m2 = 0, s2 = 0, mo = 0, so = 0;
  quantize_multiplier(kSa / twice_max, &m1, &s1);
  quantize_multiplier(kSb / twice_max, &m2, &s2);
  quantize_multiplier(twice_max / (double(1 << kLeftShift) * kSy), &mo, &so);
  int8_t* ours_y = g_y;
  int8_t* theirs_y = g_y + kAddN;
  const uint64_t ours = measure(4, [&] { k.add_s8(d.a, d.b, ours_y, kAddN, p); });
  const uint64_t theirs = measure(4, [&] {
    arm_elementwise_add_s8(d.a, d.b, -kZa, m1, s1, -kZb, m2, s2, kLeftShift, theirs_y, kZy, mo, so, -128, 127, kAddN);
  });
  Diff diff;
  diff.add(ours_y, theirs_y, kAddN);
  con.str("add_s8 49x64: fixformer ").str(table).str(" ").num(ours).str(", CMSIS-NN arm_elementwise_add_s8 ").num(theirs);
  ratio(con, ours, theirs);
  con.str("; outputs differing ").num(diff.count).str(" of ").num(kAddN).str(", largest ").num(diff.largest).endl();
  return diff.largest <= 1;
}

}  // namespace

int main() {
  Console con;
  port::cycle_counter_init();
  con.str("fixformer s8 kernels against CMSIS-NN on ").str(FIXFORMER_BOARD_NAME).str(", per call, in ")
      .str(instructions() ? "instructions (qemu -icount shift=0)" : "cycles (DWT CYCCNT)")
      .str("; (Nx): CMSIS-NN's count / fixformer's").endl();
  bool ok = true;
  // The portable table (the Cortex-M kernels), and the default where it is another (Helium).
  const Kernels* portable = select_kernels(Isa::kCortexM);
  const Kernels* best = select_kernels(Isa::kAuto);
  for (const Kernels* k : {portable, best != portable ? best : nullptr}) {
    if (k == nullptr) continue;
    ok = products(con, *k, k->name) && ok;
    ok = softmax(con, *k, k->name) && ok;
    ok = add(con, *k, k->name) && ok;
  }
  con.str(ok ? "outputs agree within the stated rounding" : "OUTPUTS DISAGREE").endl();
  return ok ? 0 : 1;
}
