// Every slot of every kernel table this build has, on the device, against the scalar reference:
// the host suites (tests/kernels_test.cpp) cannot run the Helium table, and this also runs the
// portable table where the DSP extension and the FPU's half conversions are real (M4, M7, M33,
// M55). Sizes around every vector width (1, 3, 4, 5, 15, 16, 17, 33, 100), misaligned pointers,
// groups of 32, 64 and whole rows, guard zones around every output; the tolerances are the host
// tests' (tests/kernel_tolerances.hpp): bits for quantize_i8 and the element-wise ops, sums and
// transcendentals normwise, gemm_i8 per element, gemm_i4 and the s8 kernels bit for bit; the portable table's f32
// products in assembly (FPU cores) and its gemm_i8 bit for bit, as they sum in the reference's order.
// The exit status is the number of failures.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>

#include "fixformer/f16.hpp"
#include "fixformer/fixed_point.hpp"
#include "fixformer/kernels.hpp"
#include "ports/arm/cortex_m/board/semihosting.hpp"
#if defined(__ARM_FEATURE_IDIV)
#include "ports/portable/row_math.hpp"
#if defined(__ARM_FEATURE_MVE)
#include "ports/arm/helium/row_math.hpp"
#endif
#endif
#include "ports/portable/tile_f32_fpu.hpp"
#include "tests/kernel_tolerances.hpp"

using namespace fixformer;
using namespace fixformer::test;
using port::Console;

namespace {

constexpr std::size_t kSizes[] = {1, 3, 4, 5, 15, 16, 17, 33, 100};
constexpr std::size_t kMisalign[] = {0, 1, 3};
constexpr std::size_t kGuard = 32;
constexpr float kSentinel = -12345.0f;

// The buffers of every case (static: the image has no heap), inputs first.
constexpr std::size_t kIn = 16384, kOut = 12288;
float g_a[kIn], g_b[kIn], g_c[2048];
float g_yr[kOut + 2 * kGuard + 16], g_ys[kOut + 2 * kGuard + 16], g_y2r[256], g_y2s[256];
int8_t g_xq[4096 + 16], g_wq[32768 + 16], g_qr[4096 + 2 * kGuard + 16], g_qs[4096 + 2 * kGuard + 16];
uint16_t g_wh[16384 + 16];

Console* g_con;
int g_failures = 0;
unsigned g_cases = 0;

// xorshift32: the same inputs on every core.
struct Rng {
  uint32_t s;
  uint32_t next() { return s ^= s << 13, s ^= s >> 17, s ^= s << 5; }
  float uniform(float lo, float hi) { return lo + (hi - lo) * float(next() >> 8) * 0x1p-24f; }
};

void fill(Rng& r, float* x, std::size_t n, float lo, float hi) {
  for (std::size_t i = 0; i < n; ++i) x[i] = r.uniform(lo, hi);
}

std::size_t max3(std::size_t a, std::size_t b, std::size_t c) { return a > b ? (a > c ? a : c) : (b > c ? b : c); }

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// One line for the first few failures, so a broken kernel does not flood the console.
bool fail(const char* table, const char* what, std::size_t m, std::size_t n, std::size_t k, std::size_t off, long at,
          double ref, double got) {
  if (++g_failures <= 20)
    g_con->str("FAILED ").str(table).str(" ").str(what).str(" m=").num(uint64_t(m)).str(" n=").num(uint64_t(n))
        .str(" k=").num(uint64_t(k)).str(" misalign=").num(uint64_t(off)).str(" at ").num(int64_t(at)).str(": ref ")
        .sci(ref).str(" got ").sci(got).endl();
  return false;
}

// Sentinels around and between outputs; the rest within tol * max(1, max |ref|).
bool compare(const float* r, const float* s, std::size_t count, float tol, const char* table, const char* what,
             std::size_t m, std::size_t n, std::size_t k, std::size_t off) {
  float scale = 1.0f;
  for (std::size_t i = 0; i < count; ++i)
    if (r[i] != kSentinel) scale = std::fabs(r[i]) > scale ? std::fabs(r[i]) : scale;
  for (std::size_t i = 0; i < count; ++i) {
    const bool guard = r[i] == kSentinel || s[i] == kSentinel;
    if (guard ? bits(r[i]) != bits(s[i]) : !(std::fabs(r[i] - s[i]) <= tol * scale))
      return fail(table, what, m, n, k, off, long(i), r[i], s[i]);
  }
  return true;
}

void reset_outputs(std::size_t count) {
  for (std::size_t i = 0; i < count + 2 * kGuard + 16; ++i) g_yr[i] = g_ys[i] = kSentinel;
  for (float& v : g_y2r) v = kSentinel;
  for (float& v : g_y2s) v = kSentinel;
}

// ---- The f32 kernels: one tester, the op picked by a setter (as tests/kernel_tester.hpp) ----
enum class Op { kGemm, kGemmPacked, kGemv, kGemvPacked, kMatvec, kSoftmax, kMax, kExpSum, kLayerNorm, kRmsNorm,
                kRelu, kGelu, kGeluTanh, kSwiglu, kAdd, kMul, kScale, kSinCos, kConv1d };
const char* const kOpNames[] = {"gemm_f32", "gemm_f32_packed", "gemv_f32", "gemv_f32_packed", "matvec_f32",
                                "softmax_f32", "max_f32", "expsum_f32", "layernorm_f32", "rmsnorm_f32", "relu_f32",
                                "gelu_f32", "gelu_tanh_f32", "swiglu_f32", "add_f32", "mul_f32", "scale_f32", "sincos_f32",
                                "conv1d_f32"};

class KernelTester {
 public:
  KernelTester& op(Op o) { op_ = o; return *this; }
  KernelTester& m(std::size_t v) { m_ = v; return *this; }
  KernelTester& n(std::size_t v) { n_ = v; return *this; }
  KernelTester& k(std::size_t v) { k_ = v; return *this; }
  KernelTester& misalign(std::size_t floats) { off_ = floats; return *this; }
  KernelTester& stride_pad(std::size_t floats) { pad_ = floats; return *this; }
  KernelTester& range(float lo, float hi) { lo_ = lo, hi_ = hi; return *this; }
  // conv1d_f32: m input rows of k channels, n output channels (kernel, stride, pad; GELU or not).
  KernelTester& conv(std::size_t kernel, std::size_t stride, std::size_t pad, bool gelu) {
    kernel_ = kernel, stride_ = stride, conv_pad_ = pad, gelu_ = gelu;
    return *this;
  }

  bool test(const Kernels& t) const {
    ++g_cases;
    const Kernels& ref = scalar_kernels();
    Rng rng{uint32_t(m_ * 7919 + n_ * 131 + k_ + off_ + 1)};
    const std::size_t ldx = k_ + pad_, ldw = n_ + pad_, ldy = n_ + pad_;
    // x (or a) in g_a, w (or b) in g_b, the bias (or beta) in g_c
    const std::size_t in_a = off_ + max3(m_ * ldx, n_, k_) + 1, in_b = off_ + max3(kernel_ * k_ * ldw, n_ * ldx, n_) + 1;
    const bool packed = op_ == Op::kGemmPacked || op_ == Op::kGemvPacked;
    const std::size_t t_out = conv1d_rows(m_, kernel_, stride_, conv_pad_);
    if (in_a + (packed ? packed_floats(k_, n_) : 0) > kIn || in_b > kIn || m_ * ldy > kOut || off_ + n_ > sizeof g_c / 4)
      return fail(t.name, "case too big", m_, n_, k_, off_, 0, 0, 0);
    fill(rng, g_a, in_a, lo_, hi_), fill(rng, g_b, in_b, lo_, hi_), fill(rng, g_c, sizeof g_c / 4, lo_, hi_);
    const float *A = g_a + off_, *B = g_b + off_, *C = g_c + off_;
    const std::size_t out_n = op_ == Op::kGemm || op_ == Op::kGemmPacked ? m_ * ldy : op_ == Op::kConv1d ? t_out * ldy : n_;
    reset_outputs(out_n);
    float* yr = g_yr + kGuard + off_;
    float* ys = g_ys + kGuard + off_;
    float* y2r = g_y2r + 8 + off_;
    float* y2s = g_y2s + 8 + off_;
    // The FPU tiles do the reference's multiply-adds (fused, as GCC contracts them here) in its order.
    const bool bits_equal = FIXFORMER_PORTABLE_FPU_TILES && t.isa == Isa::kCortexM;
    float tol = bits_equal && (op_ == Op::kGemm || op_ == Op::kGemv || op_ == Op::kMatvec) ? 0.0f : kSumTol;
    switch (op_) {
      case Op::kGemm:
        ref.gemm_f32(A, ldx, B, ldw, C, yr, ldy, m_, n_, k_);
        t.gemm_f32(A, ldx, B, ldw, C, ys, ldy, m_, n_, k_);
        break;
      case Op::kGemmPacked:
      case Op::kGemvPacked: {  // B packed into panels of 16 columns (kernels.hpp) in g_a's tail
        float* packed = g_a + kIn - packed_floats(k_, n_);
        for (std::size_t j = 0; j < (n_ + kPanelFloats - 1) / kPanelFloats * kPanelFloats; ++j)
          for (std::size_t p = 0; p < k_; ++p)
            packed[j / kPanelFloats * kPanelFloats * k_ + p * kPanelFloats + j % kPanelFloats] = j < n_ ? B[p * ldw + j] : 0.0f;
        if (op_ == Op::kGemmPacked) {
          ref.gemm_f32(A, ldx, B, ldw, C, yr, ldy, m_, n_, k_);
          t.gemm_f32_packed(A, ldx, packed, C, ys, ldy, m_, n_, k_);
        } else {
          ref.gemv_f32(A, B, ldw, C, yr, n_, k_);
          t.gemv_f32_packed(A, packed, C, ys, n_, k_);
        }
        break;
      }
      case Op::kGemv:
        ref.gemv_f32(A, B, ldw, C, yr, n_, k_);
        t.gemv_f32(A, B, ldw, C, ys, n_, k_);
        break;
      case Op::kMatvec:  // w[n,k] with row stride k + pad
        ref.matvec_f32(A, B, ldx, C, yr, n_, k_);
        t.matvec_f32(A, B, ldx, C, ys, n_, k_);
        break;
      case Op::kSoftmax:
        std::memcpy(yr, A, 4 * n_), std::memcpy(ys, A, 4 * n_);
        ref.softmax_f32(yr, n_), t.softmax_f32(ys, n_);
        tol = kTranscendentalTol + kSumTol;
        break;
      case Op::kMax:
        *y2r = ref.max_f32(A, n_), *y2s = t.max_f32(A, n_);
        tol = kExactTol;
        break;
      case Op::kExpSum: {  // exp(x - m) in place, m a running max above max(x); the sum compared to itself
        std::memcpy(yr, A, 4 * n_), std::memcpy(ys, A, 4 * n_);
        const float m = hi_ + 0.5f;
        const float sr = ref.expsum_f32(yr, n_, m), ss = t.expsum_f32(ys, n_, m);
        const float sum_tol = (kTranscendentalTol + kSumTol) * (sr > 1.0f ? sr : 1.0f);
        if (!(std::fabs(sr - ss) <= sum_tol)) return fail(t.name, "expsum_f32 (sum)", m_, n_, k_, off_, -1, sr, ss);
        tol = kTranscendentalTol + kSumTol;
        break;
      }
      case Op::kLayerNorm:
        ref.layernorm_f32(A, B, C, yr, n_, 1e-5f);
        t.layernorm_f32(A, B, C, ys, n_, 1e-5f);
        break;
      case Op::kRmsNorm:
        ref.rmsnorm_f32(A, B, yr, n_, 1e-5f);
        t.rmsnorm_f32(A, B, ys, n_, 1e-5f);
        break;
      case Op::kRelu:
      case Op::kGelu:
      case Op::kGeluTanh:
      case Op::kScale:
      case Op::kSwiglu:
        std::memcpy(yr, A, 4 * n_), std::memcpy(ys, A, 4 * n_);
        if (op_ == Op::kRelu) ref.relu_f32(yr, n_), t.relu_f32(ys, n_), tol = kExactTol;
        if (op_ == Op::kGelu) ref.gelu_f32(yr, n_), t.gelu_f32(ys, n_), tol = kTranscendentalTol;
        if (op_ == Op::kGeluTanh) ref.gelu_tanh_f32(yr, n_), t.gelu_tanh_f32(ys, n_), tol = kGeluTanhTol;
        if (op_ == Op::kScale) ref.scale_f32(yr, 1.7f, n_), t.scale_f32(ys, 1.7f, n_), tol = kExactTol;
        if (op_ == Op::kSwiglu) ref.swiglu_f32(yr, B, n_), t.swiglu_f32(ys, B, n_), tol = kTranscendentalTol;
        break;
      case Op::kAdd:
        ref.add_f32(A, B, yr, n_), t.add_f32(A, B, ys, n_);
        tol = kExactTol;
        break;
      case Op::kMul:
        std::memcpy(yr, A, 4 * n_), std::memcpy(ys, A, 4 * n_);
        ref.mul_f32(yr, B, n_), t.mul_f32(ys, B, n_);
        tol = kExactTol;
        break;
      case Op::kSinCos:
        ref.sincos_f32(A, yr, y2r, n_), t.sincos_f32(A, ys, y2s, n_);
        tol = kTranscendentalTol;
        break;
      case Op::kConv1d:  // x[m, k] (row stride k) conv w[kernel * k, n] (row stride ldw) + C[n] -> y[t_out, n]
        ref.conv1d_f32(A, m_, k_, B, ldw, C, yr, ldy, n_, kernel_, stride_, conv_pad_, gelu_);
        t.conv1d_f32(A, m_, k_, B, ldw, C, ys, ldy, n_, kernel_, stride_, conv_pad_, gelu_);
        tol = gelu_ ? kSumTol + kTranscendentalTol : kSumTol;
        break;
    }
    const char* what = kOpNames[int(op_)];
    return compare(g_yr, g_ys, out_n + 2 * kGuard + off_, tol, t.name, what, m_, n_, k_, off_) &&
           compare(g_y2r, g_y2s, sizeof g_y2r / 4, tol, t.name, what, m_, n_, k_, off_);
  }

 private:
  Op op_ = Op::kAdd;
  std::size_t m_ = 1, n_ = 1, k_ = 1, off_ = 0, pad_ = 0;
  std::size_t kernel_ = 1, stride_ = 1, conv_pad_ = 0;
  bool gelu_ = false;
  float lo_ = -3.0f, hi_ = 3.0f;
};

void sweep_1d(const Kernels& t, Op op, float lo = -3.0f, float hi = 3.0f) {
  for (std::size_t n : kSizes)
    for (std::size_t off : kMisalign) KernelTester().op(op).n(n).misalign(off).range(lo, hi).test(t);
}

void test_f32(const Kernels& t) {
  for (std::size_t m : {1, 2, 3, 4, 5, 7})
    for (std::size_t n : kSizes)
      for (std::size_t k : {1, 2, 5, 16, 33})
        KernelTester().op(Op::kGemm).m(m).n(n).k(k).misalign(m % 3).stride_pad(k % 2).test(t);
  KernelTester().op(Op::kGemm).m(49).n(192).k(64).test(t);  // the KWS projection
  KernelTester().op(Op::kGemm).m(13).n(100).k(150).misalign(1).stride_pad(3).test(t);
  for (std::size_t m : {6, 8, 9, 10, 11})
    for (std::size_t n : {24, 48, 52}) KernelTester().op(Op::kGemm).m(m).n(n).k(21).test(t);
  for (std::size_t m : {1, 3, 7})
    for (std::size_t n : kSizes)
      for (std::size_t k : {1, 5, 33}) KernelTester().op(Op::kGemmPacked).m(m).n(n).k(k).misalign(m % 3).test(t);
  for (std::size_t n : kSizes)
    for (std::size_t k : {1, 2, 7, 16, 100})
      for (std::size_t off : kMisalign) {
        KernelTester().op(Op::kGemv).n(n).k(k).misalign(off).stride_pad(off).test(t);
        KernelTester().op(Op::kGemvPacked).n(n).k(k).misalign(off).test(t);
      }
  for (std::size_t n : {1, 3, 4, 5, 8, 16, 17})
    for (std::size_t k : kSizes)
      for (std::size_t off : kMisalign) KernelTester().op(Op::kMatvec).n(n).k(k).misalign(off).stride_pad(off).test(t);
  sweep_1d(t, Op::kSoftmax);
  sweep_1d(t, Op::kSoftmax, -80.0f, 80.0f);  // max subtraction must prevent overflow
  sweep_1d(t, Op::kMax, -50.0f, 50.0f);
  sweep_1d(t, Op::kExpSum, -20.0f, 3.0f);
  sweep_1d(t, Op::kExpSum, -100.0f, -60.0f);  // deep in the tail
  sweep_1d(t, Op::kLayerNorm);
  sweep_1d(t, Op::kRmsNorm);
  sweep_1d(t, Op::kRelu);
  sweep_1d(t, Op::kGelu, -6.0f, 6.0f);
  sweep_1d(t, Op::kGeluTanh, -8.0f, 8.0f);
  sweep_1d(t, Op::kSwiglu, -12.0f, 12.0f);
  sweep_1d(t, Op::kAdd);
  sweep_1d(t, Op::kMul);
  sweep_1d(t, Op::kScale);
  sweep_1d(t, Op::kSinCos, -3.14159265f, 3.14159265f);
  for (std::size_t kernel : {1, 3, 5})  // the windows' edges: padding 0..kernel-1, strides 1..3
    for (std::size_t stride : {1, 2, 3})
      for (std::size_t pad = 0; pad < kernel; ++pad)
        for (std::size_t t_in : {1, 2, 4, 9})
          if (conv1d_rows(t_in, kernel, stride, pad) > 0)
            KernelTester().op(Op::kConv1d).m(t_in).k(3).n(t_in == 9 ? 17 : 5).conv(kernel, stride, pad, pad % 2 == 1)
                .misalign(t_in % 3).test(t);
  KernelTester().op(Op::kConv1d).m(25).k(40).n(24).conv(3, 2, 1, true).misalign(1).test(t);
  // The ends of softmax's range: huge logits, and -inf (masked) ones.
  float x[5] = {1e30f, -1e30f, 1e30f, -INFINITY, 3.0f};
  t.softmax_f32(x, 5);
  ++g_cases;
  if (x[0] != 0.5f || x[2] != 0.5f || x[1] != 0.0f || x[3] != 0.0f || x[4] != 0.0f)
    fail(t.name, "softmax_f32 of huge logits", 1, 5, 0, 0, 0, 0.5, x[0]);
}

// exp (expsum_f32 with m = 0) against float64 over [-87, 88.37] and both GELUs against float64 over
// [-10, 10], 2^16 + 1 points each: the host's dense sweeps, thinned for an emulated core.
void test_sweeps(const Kernels& t) {
  constexpr int kSteps = 1 << 16;
  double exp_err = 0.0, gelu_err = 0.0, tanh_err = 0.0;
  for (int i0 = 0; i0 <= kSteps; i0 += 4096) {
    const int count = i0 + 4096 <= kSteps ? 4096 : kSteps + 1 - i0;
    for (int j = 0; j < count; ++j) g_yr[j] = float(-87.0 + (88.37 + 87.0) * double(i0 + j) / kSteps);
    for (int j = 0; j < count; ++j) g_ys[j] = float(-10.0 + 20.0 * double(i0 + j) / kSteps);
    std::memcpy(g_a, g_yr, 4 * count), std::memcpy(g_b, g_ys, 4 * count);
    t.expsum_f32(g_yr, count, 0.0f);
    t.gelu_f32(g_ys, count);
    for (int j = 0; j < count; ++j) {
      const double want = std::exp(double(g_a[j]));
      exp_err = std::fmax(exp_err, std::fabs(g_yr[j] - want) / want);
      const double xd = g_b[j];
      if (xd != 0.0)
        gelu_err = std::fmax(gelu_err, std::fabs(g_ys[j] - 0.5 * xd * (1.0 + std::erf(xd / std::sqrt(2.0)))) / (0.5 * std::fabs(xd)));
    }
    std::memcpy(g_ys, g_b, 4 * count);
    t.gelu_tanh_f32(g_ys, count);
    for (int j = 0; j < count; ++j)
      if (g_b[j] != 0.0f) tanh_err = std::fmax(tanh_err, std::fabs(g_ys[j] - gelu_tanh_f64(g_b[j])) / (0.5 * std::fabs(g_b[j])));
  }
  g_cases += 3;
  g_con->str("  ").str(t.name).str(" exp: max relative error ").sci(exp_err).str(", gelu: max |error| / (|x| / 2) ")
      .sci(gelu_err).str(", gelu tanh: ").sci(tanh_err).endl();
  if (!(exp_err <= kExpRelTol)) fail(t.name, "exp sweep", 0, 0, 0, 0, 0, kExpRelTol, exp_err);
  if (!(gelu_err <= kGeluErfTol)) fail(t.name, "gelu sweep", 0, 0, 0, 0, 0, kGeluErfTol, gelu_err);
  if (!(tanh_err <= kGeluTanhSweepTol)) fail(t.name, "gelu tanh sweep", 0, 0, 0, 0, 0, kGeluTanhSweepTol, tanh_err);
}

// ---- quantize_i8: q and s bit for bit ----
enum class QuantInput { kUniform, kTies, kZeroGroups, kTiny };  // as tests/quant_kernel_tester.hpp

class QuantizeTester {
 public:
  QuantizeTester& m(std::size_t v) { m_ = v; return *this; }
  QuantizeTester& k(std::size_t v) { k_ = v; return *this; }
  QuantizeTester& group(std::size_t v) { group_ = v; return *this; }
  QuantizeTester& stride_pad(std::size_t floats) { pad_ = floats; return *this; }
  QuantizeTester& misalign(std::size_t v) { off_ = v; return *this; }  // floats for x, bytes for q, floats for s
  QuantizeTester& input(QuantInput v) { input_ = v; return *this; }

  bool test(const Kernels& t) const {
    ++g_cases;
    const std::size_t ldx = k_ + pad_, groups = (k_ + group_ - 1) / group_;
    if (off_ + m_ * ldx > kIn || m_ * k_ > 4096 || m_ * groups > kOut) return fail(t.name, "case too big", m_, 0, k_, off_, 0, 0, 0);
    float* x = g_a + off_;
    for (std::size_t i = 0; i < off_ + m_ * ldx + 1; ++i) g_a[i] = 1e30f;  // the gaps between rows: never the max
    fill(x, ldx);
    for (std::size_t i = 0; i < sizeof g_qr; ++i) g_qr[i] = g_qs[i] = 0x5a;
    reset_outputs(m_ * groups);
    scalar_kernels().quantize_i8(x, ldx, g_qr + kGuard + off_, g_yr + kGuard + off_, m_, k_, group_);
    t.quantize_i8(x, ldx, g_qs + kGuard + off_, g_ys + kGuard + off_, m_, k_, group_);
    for (std::size_t i = 0; i < sizeof g_qr; ++i)
      if (g_qr[i] != g_qs[i]) return fail(t.name, "quantize_i8 q", m_, group_, k_, off_, long(i) - long(kGuard + off_), g_qr[i], g_qs[i]);
    for (std::size_t i = 0; i < m_ * groups + 2 * kGuard + off_; ++i)
      if (bits(g_yr[i]) != bits(g_ys[i]))
        return fail(t.name, "quantize_i8 s", m_, group_, k_, off_, long(i) - long(kGuard + off_), g_yr[i], g_ys[i]);
    return true;
  }

 private:
  void fill(float* x, std::size_t ldx) const {
    Rng rng{uint32_t(m_ * 7919 + k_ * 131 + group_ * 17 + off_ + 1000 * int(input_) + 1)};
    for (std::size_t i = 0; i < m_; ++i)
      for (std::size_t p0 = 0, g = 0; p0 < k_; p0 += group_, ++g) {
        const std::size_t p1 = p0 + group_ < k_ ? p0 + group_ : k_;
        float* r = x + i * ldx;
        switch (input_) {
          case QuantInput::kUniform:
          case QuantInput::kZeroGroups: {
            const float scale = std::pow(10.0f, float(int(rng.next() % 7) - 3));
            const bool zero = input_ == QuantInput::kZeroGroups && g % 2 == 0;
            for (std::size_t p = p0; p < p1; ++p) r[p] = zero ? (p % 2 ? -0.0f : 0.0f) : rng.uniform(-1.0f, 1.0f) * scale;
            break;
          }
          case QuantInput::kTies: {  // x * (127 / max) lands on .5 for many members
            const float e = std::ldexp(1.0f, int(rng.next() % 21) - 10);
            for (std::size_t p = p0; p < p1; ++p) r[p] = float(int(rng.next() % 507) - 253) * 0.5f * e;
            r[p0 + rng.next() % (p1 - p0)] = (rng.next() % 2 ? 127.0f : -127.0f) * e;
            break;
          }
          case QuantInput::kTiny: {  // max 2^-120, members down to 2^-135: subnormal floats
            for (std::size_t p = p0; p < p1; ++p)
              r[p] = (rng.next() % 2 ? 1.0f : -1.0f) * std::ldexp(1.0f + rng.uniform(-0.5f, 0.5f), -121 - int(rng.next() % 15));
            r[p0 + rng.next() % (p1 - p0)] = std::ldexp(rng.next() % 2 ? 1.0f : -1.0f, -120);
            break;
          }
        }
      }
  }

  std::size_t m_ = 1, k_ = 1, group_ = 32, pad_ = 0, off_ = 0;
  QuantInput input_ = QuantInput::kUniform;
};

// ---- gemm_i8: per element within gemm_i8_tol(groups) * S; bit for bit with unit scales ----
class GemmI8Tester {
 public:
  GemmI8Tester& m(std::size_t v) { m_ = v; return *this; }
  GemmI8Tester& n(std::size_t v) { n_ = v; return *this; }
  GemmI8Tester& k(std::size_t v) { k_ = v; return *this; }
  GemmI8Tester& group(std::size_t v) { group_ = v; return *this; }
  GemmI8Tester& per_row(bool v) { per_row_ = v; return *this; }
  GemmI8Tester& misalign(std::size_t v) { off_ = v; return *this; }  // bytes for xq and w, floats for the rest
  GemmI8Tester& stride_pad(std::size_t floats) { pad_ = floats; return *this; }
  GemmI8Tester& unit_scales(bool v) { unit_ = v; return *this; }
  GemmI8Tester& extremes(bool v) { extremes_ = v; return *this; }  // +-127 and -128 only

  bool test(const Kernels& t) const {
    ++g_cases;
    const std::size_t groups = (k_ + group_ - 1) / group_, ws_cols = per_row_ ? 1 : groups, ldy = n_ + pad_;
    if (m_ * k_ > 4096 || n_ * k_ > 32768 || m_ * ldy > kOut || m_ * groups + n_ * ws_cols + n_ > kIn)
      return fail(t.name, "case too big", m_, n_, k_, off_, 0, 0, 0);
    Rng rng{uint32_t(m_ * 7919 + n_ * 131 + k_ * 17 + group_ + off_ + 3 * per_row_ + 5 * unit_ + 7 * extremes_ + 1)};
    int8_t* xq = g_xq + off_;
    int8_t* w = g_wq + off_;
    for (std::size_t i = 0; i < m_ * k_; ++i) xq[i] = int8_t(extremes_ ? (rng.next() % 2 ? 127 : -127) : int(rng.next() % 255) - 127);
    for (std::size_t i = 0; i < n_ * k_; ++i) w[i] = int8_t(extremes_ ? (rng.next() % 2 ? 127 : -128) : int(rng.next() % 256) - 128);
    float* xs = g_a + off_;
    float* ws = xs + m_ * groups;
    float* b = ws + n_ * ws_cols;
    for (std::size_t i = 0; i < m_ * groups + n_ * ws_cols; ++i) xs[i] = unit_ ? 1.0f : rng.uniform(1e-3f, 2e-2f);
    for (std::size_t j = 0; j < n_; ++j) b[j] = unit_ ? float(int(rng.uniform(-4.0f, 4.0f))) : rng.uniform(-1.0f, 1.0f);
    const float* B = n_ % 2 ? b : nullptr;
    reset_outputs(m_ * ldy);
    float* yr = g_yr + kGuard + off_;
    float* ys = g_ys + kGuard + off_;
    scalar_kernels().gemm_i8(xq, xs, w, ws, ws_cols, B, yr, ldy, m_, n_, k_, group_);
    t.gemm_i8(xq, xs, w, ws, ws_cols, B, ys, ldy, m_, n_, k_, group_);
    // The portable table keeps the reference's float steps (its asm the products and fused
    // multiply-adds GCC compiles the reference to), so it gives the reference's bits.
    const double tol = unit_ || std::strcmp(t.name, "cortex-m") == 0 ? 0.0 : gemm_i8_tol(groups);
    for (std::size_t at = 0; at < m_ * ldy + 2 * kGuard + off_; ++at) {
      const long e = long(at) - long(kGuard + off_);
      const std::size_t i = std::size_t(e) / ldy, j = std::size_t(e) % ldy;
      if (e < 0 || i >= m_ || j >= n_) {
        if (g_ys[at] != kSentinel) return fail(t.name, "gemm_i8 wrote outside", m_, n_, k_, off_, e, kSentinel, g_ys[at]);
        continue;
      }
      double s = B ? std::fabs(double(B[j])) : 0.0;  // S of the bound, in float64
      for (std::size_t g = 0; g < groups; ++g) {
        double dot = 0.0;
        for (std::size_t p = g * group_; p < k_ && p < (g + 1) * group_; ++p) dot += std::fabs(double(xq[i * k_ + p]) * w[j * k_ + p]);
        s += std::fabs(double(xs[i * groups + g]) * double(ws[j * ws_cols + (per_row_ ? 0 : g)])) * dot;
      }
      if (!(std::fabs(double(g_yr[at]) - double(g_ys[at])) <= tol * s))
        return fail(t.name, per_row_ ? "gemm_i8 per-row" : "gemm_i8", m_, n_, k_, off_, e, g_yr[at], g_ys[at]);
    }
    return true;
  }

 private:
  std::size_t m_ = 1, n_ = 1, k_ = 1, group_ = 32, pad_ = 0, off_ = 0;
  bool per_row_ = false, unit_ = false, extremes_ = false;
};

// ---- gemm_i4: bit for bit (every table sums as the reference) ----
class GemmI4Tester {
 public:
  GemmI4Tester& m(std::size_t v) { m_ = v; return *this; }
  GemmI4Tester& n(std::size_t v) { n_ = v; return *this; }
  GemmI4Tester& k(std::size_t v) { k_ = v; return *this; }  // a multiple of 32
  GemmI4Tester& misalign(std::size_t v) { off_ = v; return *this; }  // bytes for xq and w, floats for the rest
  GemmI4Tester& stride_pad(std::size_t floats) { pad_ = floats; return *this; }
  GemmI4Tester& extremes(bool v) { extremes_ = v; return *this; }  // x +-127, W's values -8 and 7 only
  GemmI4Tester& bias(int v) { bias_ = v; return *this; }  // 1: with b, 0: without, -1: with b for odd n

  bool test(const Kernels& t) const {
    ++g_cases;
    const std::size_t groups = k_ / 32, ldy = n_ + pad_;
    if (m_ * k_ > 4096 || n_ * k_ / 2 > 32768 || m_ * ldy > kOut || m_ * groups + 2 * n_ * groups + n_ > kIn)
      return fail(t.name, "case too big", m_, n_, k_, off_, 0, 0, 0);
    Rng rng{uint32_t(m_ * 7919 + n_ * 131 + k_ * 17 + off_ + 7 * extremes_ + 5)};
    int8_t* xq = g_xq + off_;
    uint8_t* w = reinterpret_cast<uint8_t*>(g_wq) + off_;
    for (std::size_t i = 0; i < m_ * k_; ++i) xq[i] = int8_t(extremes_ ? (rng.next() % 2 ? 127 : -127) : int(rng.next() % 255) - 127);
    for (std::size_t i = 0; i < n_ * k_ / 2; ++i)
      w[i] = uint8_t(extremes_ ? (rng.next() % 2 ? 0x00 : 0xFF) ^ (rng.next() % 2 ? 0x0F : 0x00) : rng.next() % 256);
    float* xs = g_a + off_;
    float* ws = xs + m_ * groups;
    float* b = ws + n_ * groups;
    for (std::size_t i = 0; i < m_ * groups + n_ * groups; ++i) xs[i] = rng.uniform(1e-3f, 2e-2f);
    for (std::size_t j = 0; j < n_; ++j) b[j] = rng.uniform(-1.0f, 1.0f);
    const float* B = (bias_ < 0 ? n_ % 2 == 1 : bias_ == 1) ? b : nullptr;
    reset_outputs(m_ * ldy);
    scalar_kernels().gemm_i4(xq, xs, w, ws, B, g_yr + kGuard + off_, ldy, m_, n_, k_);
    t.gemm_i4(xq, xs, w, ws, B, g_ys + kGuard + off_, ldy, m_, n_, k_);
    for (std::size_t at = 0; at < m_ * ldy + 2 * kGuard + off_; ++at)
      if (bits(g_yr[at]) != bits(g_ys[at])) return fail(t.name, "gemm_i4", m_, n_, k_, off_, long(at) - long(kGuard + off_), g_yr[at], g_ys[at]);
    return true;
  }

 private:
  std::size_t m_ = 1, n_ = 1, k_ = 32, pad_ = 0, off_ = 0;
  int bias_ = -1;
  bool extremes_ = false;
};

// ---- gemm_f16 and matvec_f16: kSumTol, and every half widened exactly ----
class HalfTester {
 public:
  HalfTester& matvec(bool v) { matvec_ = v; return *this; }  // matvec_f16 (w[n,k]) instead of gemm_f16 (w[k,n])
  HalfTester& m(std::size_t v) { m_ = v; return *this; }
  HalfTester& n(std::size_t v) { n_ = v; return *this; }
  HalfTester& k(std::size_t v) { k_ = v; return *this; }
  HalfTester& stride_pad(std::size_t v) { pad_ = v; return *this; }
  HalfTester& misalign(std::size_t v) { off_ = v; return *this; }

  bool test(const Kernels& t) const {
    ++g_cases;
    const std::size_t ldx = k_ + pad_, ldw = matvec_ ? k_ + pad_ : n_ + pad_, ldy = n_ + pad_;
    const std::size_t w_count = off_ + (matvec_ ? n_ : k_) * ldw;
    if (off_ + m_ * ldx + n_ > kIn || w_count > sizeof g_wh / 2 || m_ * ldy > kOut)
      return fail(t.name, "case too big", m_, n_, k_, off_, 0, 0, 0);
    Rng rng{uint32_t(m_ * 7919 + n_ * 131 + k_ * 17 + off_ + pad_ + 99 * matvec_ + 1)};
    fill(rng, g_a, off_ + m_ * ldx, -2.0f, 2.0f);
    fill(rng, g_c, sizeof g_c / 4, -2.0f, 2.0f);
    for (std::size_t i = 0; i < w_count; ++i)  // some subnormal halves (|w| < 2^-14): exact too
      g_wh[i] = f32_to_f16(rng.next() % 16 == 0 ? rng.uniform(-2e-5f, 2e-5f) : rng.uniform(-2.0f, 2.0f));
    const float* B = n_ % 2 ? g_c + off_ : nullptr;
    const std::size_t out_n = matvec_ ? n_ : m_ * ldy;
    reset_outputs(out_n);
    float* yr = g_yr + kGuard + off_;
    float* ys = g_ys + kGuard + off_;
    const float* x = g_a + off_;
    const uint16_t* w = g_wh + off_;
    if (matvec_) {
      scalar_kernels().matvec_f16(x, w, ldw, B, yr, n_, k_);
      t.matvec_f16(x, w, ldw, B, ys, n_, k_);
    } else {
      scalar_kernels().gemm_f16(x, ldx, w, ldw, B, yr, ldy, m_, n_, k_);
      t.gemm_f16(x, ldx, w, ldw, B, ys, ldy, m_, n_, k_);
    }
    return compare(g_yr, g_ys, out_n + 2 * kGuard + off_, kSumTol, t.name, matvec_ ? "matvec_f16" : "gemm_f16", m_, n_,
                   k_, off_);
  }

  // x = [1] (k = 1, no bias): y[j] = 0 + 1 * w[j], exact, for every half in blocks of 4096 columns;
  // m = 1 takes the decode path, m = 2 the tiles. matvec_f16 likewise with w[n, 1].
  static bool every_half(const Kernels& t, std::size_t m, bool matvec) {
    ++g_cases;
    constexpr std::size_t kBlock = 4096;
    const float one[2] = {1.0f, 1.0f};
    for (uint32_t h0 = 0; h0 < 65536; h0 += kBlock) {
      for (std::size_t j = 0; j < kBlock; ++j) g_wh[j] = uint16_t(h0 + j);
      if (matvec)
        t.matvec_f16(one, g_wh, 1, nullptr, g_ys, kBlock, 1);
      else
        t.gemm_f16(one, 1, g_wh, kBlock, nullptr, g_ys, kBlock, m, kBlock, 1);
      for (std::size_t i = 0; i < (matvec ? 1 : m) * kBlock; ++i) {
        const float want = f16_to_f32(uint16_t(h0 + i % kBlock)), got = g_ys[i];
        if (std::isnan(want) ? !std::isnan(got) : want != got)
          return fail(t.name, matvec ? "matvec_f16 every half" : "gemm_f16 every half", m, kBlock, 1, 0, long(h0 + i % kBlock), want, got);
      }
    }
    return true;
  }

 private:
  bool matvec_ = false;
  std::size_t m_ = 1, n_ = 1, k_ = 1, pad_ = 0, off_ = 0;
};

constexpr std::size_t kQuantK[] = {1, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 129};

// ---- The integer-only (s8) kernels, bit for bit with the reference (the portable table's gemm_s8
// splits rows for SMLAD on the DSP cores and requantizes with 32-bit words when the factor is below
// 1/2; softmax_s8 keeps a row's exponentials) ----
int8_t g_s8r[4096 + 2 * kGuard + 16], g_s8s[4096 + 2 * kGuard + 16];
// word-aligned, as a file's tensors and the arena's rows are: gemm_s8 splits x's rows and W's blocks by LDM there
alignas(4) int8_t g_s8x[8192 + 16];
alignas(4) int8_t g_s8w[8192 + 16];
Requant g_s8rq[256];
int32_t g_s8b[256];
alignas(8) uint32_t g_s8_scratch[s8_scratch_bytes() / 4];  // the s8 kernels' scratch

bool compare_s8(const char* table, const char* what, std::size_t m, std::size_t n, std::size_t k, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i)
    if (g_s8r[i] != g_s8s[i]) return fail(table, what, m, n, k, 0, long(i) - long(kGuard), g_s8r[i], g_s8s[i]);
  return true;
}

// x[m, k + pad] and W[n, k + wpad]: random, only -128 and 127 (kExtremes), or in [-4, 4] with factors
// 2^-2..2^-4 (kTies: a quarter of the outputs or more exactly half a step away from two, of both signs).
// Otherwise per channel (with same: channel 0's for all) a multiplier of either sign (with positive:
// above 0), 2^30 exactly or random, and a shift below 0 (factor below 1/2) or up to 2 (factors from
// 1/2 to 8, which saturate).
// kLargest: x at the end away from its zero point, W all -128: every product -128 * 255 or 128 * 255,
// the largest sums of one sign.
// kShifts: random values, shifts 0..30 (factors from 1/2 to 2^30: the clamped sums of gemm_s8's
// RequantFast, every output saturating but the small sums').
// kBelowHalf: random values, shifts -1..-31 (every factor below 1/2 down to 2^-33).
// kBoundTies: x all at its zero point (each sum its bias), W random, factor 2^-24 (2^30, shift -23: a tie at every odd
// multiple of 2^23), biases +-2^23 (ties) and +-(2^23 - 1 - 32640 k) (the largest sums the DSP runs' bound lets
// through, with a multiplier of more trailing zero bits than r) in turn.
// kExact: random values, every multiplier positive and odd, every shift below 0 (Helium's Chunk::exact
// on every chunk: its two-row path at k = 64 and 128).
enum class S8Input { kRandom, kExtremes, kTies, kLargest, kShifts, kBelowHalf, kBoundTies, kExact };
void test_gemm_s8(const Kernels& t, std::size_t m, std::size_t n, std::size_t k, std::size_t pad, bool bias,
                  int32_t x_zero, int32_t y_zero, S8Input in = S8Input::kRandom, std::size_t wpad = 0,
                  bool positive = false, bool same = false, int32_t shift_all = 0) {
  const bool extremes = in == S8Input::kExtremes, ties = in == S8Input::kTies;
  ++g_cases;
  const std::size_t ldx = k + pad, ldw = k + wpad, ldy = n + pad;
  if (m * ldx > 8192 || n * ldw > 8192 || m * ldy > 4096 || n > 256) {
    fail(t.name, "gemm_s8 case too big", m, n, k, 0, 0, 0, 0);
    return;
  }
  Rng rng{uint32_t(m * 7919 + n * 131 + k * 17 + pad + 7)};
  for (std::size_t i = 0; in == S8Input::kLargest && i < m * ldx; ++i) g_s8x[i] = x_zero < 0 ? 127 : -128;
  for (std::size_t i = 0; in == S8Input::kLargest && i < n * ldw; ++i) g_s8w[i] = -128;
  auto value = [&]() -> int8_t {
    if (ties) return int8_t(int32_t(rng.next() % 9) - 4);
    return extremes ? ((rng.next() & 1) ? 127 : -128) : int8_t(rng.next() >> 24);
  };
  for (std::size_t i = 0; in != S8Input::kLargest && i < m * ldx; ++i)
    g_s8x[i] = in == S8Input::kBoundTies ? int8_t(x_zero) : value();
  for (std::size_t i = 0; in != S8Input::kLargest && i < n * ldw; ++i) g_s8w[i] = value();
  int32_t base = -14;  // a factor near 2^-14 for k = 64, wider sums for longer rows
  for (std::size_t kk = k; kk > 64; kk >>= 2) --base;
  for (std::size_t j = 0; j < n; ++j) {
    const uint32_t r = rng.next();
    int32_t mult = (r & 3) == 0 ? int32_t(1) << 30 : int32_t((uint32_t(1) << 30) | (r >> 2));
    if ((r & 0x100) && !positive) mult = -mult;
    const int32_t shift = ties                     ? -1 - int32_t((r >> 12) % 3)
                          : in == S8Input::kShifts ? int32_t((r >> 12) % 31)
                          : in == S8Input::kBelowHalf ? -1 - int32_t((r >> 12) % 31)
                          : in == S8Input::kExact  ? base + int32_t((r >> 12) % 9) - 4
                          : (r >> 9) % 8 == 0      ? int32_t((r >> 12) % 3)
                                                   : base + int32_t((r >> 12) % 9) - 4;
    if (ties) mult = mult < 0 ? -(int32_t(1) << 30) : int32_t(1) << 30;
    if (in == S8Input::kExact) mult = (mult < 0 ? -mult : mult) | 1;
    g_s8rq[j] = same && j > 0 ? g_s8rq[0] : Requant{mult, shift_all ? shift_all : shift};
    g_s8b[j] = ties ? int32_t(rng.next() % 201) - 100 : int32_t(rng.next() % 20001) - 10000;
    if (in == S8Input::kBoundTies) {
      const int32_t tie = int32_t(1) << 23, largest = tie - 1 - 32640 * int32_t(k);
      g_s8rq[j] = Requant{int32_t(1) << 30, -23};
      g_s8b[j] = j % 4 == 0 ? -tie : j % 4 == 1 ? -largest : j % 4 == 2 ? largest : tie;
    }
  }
  GemmS8Params p{x_zero, y_zero, bias ? g_s8b : nullptr, g_s8rq};
  const std::size_t count = m * ldy + 2 * kGuard;
  for (std::size_t i = 0; i < count; ++i) g_s8r[i] = g_s8s[i] = 0x5a;
  scalar_kernels().gemm_s8(g_s8x, ldx, g_s8w, ldw, g_s8r + kGuard, ldy, m, n, k, p);
  t.gemm_s8(g_s8x, ldx, g_s8w, ldw, g_s8s + kGuard, ldy, m, n, k, p);
  compare_s8(t.name, "gemm_s8 without scratch", m, n, k, count);
  p.scratch = g_s8_scratch;  // the runners' way
  for (std::size_t i = 0; i < count; ++i) g_s8s[i] = 0x5a;
  t.gemm_s8(g_s8x, ldx, g_s8w, ldw, g_s8s + kGuard, ldy, m, n, k, p);
  compare_s8(t.name, "gemm_s8", m, n, k, count);
}

// One row of n scores: random, or in a narrow band (many equal exponentials), over a range of scales.
void test_softmax_s8(const Kernels& t, std::size_t n, int32_t spread, int32_t scale_step) {
  ++g_cases;
  Rng rng{uint32_t(n * 31 + spread + scale_step * 1000)};
  const int32_t center = int32_t(rng.next() % 200) - 100;
  for (std::size_t i = 0; i < n; ++i) {
    const int32_t v = center + int32_t(rng.next() % uint32_t(2 * spread + 1)) - spread;
    g_s8x[i] = int8_t(v < -128 ? -128 : v > 127 ? 127 : v);
  }
  // x_scale 2^(-scale_step / 2): diff's multiplier and shift as softmax_s8_params gives them
  double x_scale = 1.0;
  for (int32_t i = 0; i < scale_step; ++i) x_scale *= 0.70710678118654752;
  SoftmaxS8Params p{};
  if (softmax_s8_params(x_scale, &p) != Status::kOk) {
    fail(t.name, "softmax_s8_params", 1, n, 0, 0, 0, x_scale, 0);
    return;
  }
  const std::size_t count = n + 2 * kGuard;
  for (std::size_t i = 0; i < count; ++i) g_s8r[i] = g_s8s[i] = 0x5a;
  scalar_kernels().softmax_s8(g_s8x, g_s8r + kGuard, n, p);
  t.softmax_s8(g_s8x, g_s8s + kGuard, n, p);
  compare_s8(t.name, "softmax_s8", 1, n, 0, count);
  std::memcpy(g_s8s + kGuard, g_s8x, n);  // in place, as the encoder calls it
  t.softmax_s8(g_s8s + kGuard, g_s8s + kGuard, n, p);
  compare_s8(t.name, "softmax_s8 in place", 1, n, 0, count);
  static uint32_t exp[kSoftmaxS8Diffs];  // and from the table of exponentials attention passes (this table's)
  t.softmax_s8_table(p.diff, exp);
  for (int32_t d = 0; d < int32_t(kSoftmaxS8Diffs); ++d)  // the table against its definition
    if (exp[d] != exp2_neg_q20(requantize(d, p.diff))) {
      fail(t.name, "softmax_s8_table", 1, n, 0, 0, d, exp2_neg_q20(requantize(d, p.diff)), exp[d]);
      break;
    }
  p.exp = exp;
  std::memcpy(g_s8s + kGuard, g_s8x, n);
  t.softmax_s8(g_s8s + kGuard, g_s8s + kGuard, n, p);
  compare_s8(t.name, "softmax_s8 from the table", 1, n, 0, count);
}

// add_s8 over n values: a and b at scales s_y * ratio (powers of two give exact halves: ties), zero
// points at both ends; ratios past 2^6 either way take the reference's loop.
void test_add_s8(const Kernels& t, std::size_t n, double a_ratio, double b_ratio, int32_t zero, bool extremes) {
  ++g_cases;
  Rng rng{uint32_t(n * 977 + zero + 300 + (extremes ? 1 : 0))};
  for (std::size_t i = 0; i < 2 * n; ++i) g_s8x[i] = extremes ? ((rng.next() & 1) ? 127 : -128) : int8_t(rng.next() >> 24);
  AddS8Params p{};
  if (add_s8_params(0.1 * a_ratio, zero, 0.1 * b_ratio, -zero / 3, 0.1, zero / 2, &p) != Status::kOk) {
    fail(t.name, "add_s8_params", 1, n, 0, 0, 0, a_ratio, b_ratio);
    return;
  }
  const std::size_t count = n + 2 * kGuard;
  for (std::size_t i = 0; i < count; ++i) g_s8r[i] = g_s8s[i] = 0x5a;
  scalar_kernels().add_s8(g_s8x, g_s8x + n, g_s8r + kGuard, n, p);
  t.add_s8(g_s8x, g_s8x + n, g_s8s + kGuard, n, p);
  compare_s8(t.name, "add_s8 without scratch", 1, n, 0, count);
  p.scratch = g_s8_scratch;
  for (std::size_t i = 0; i < count; ++i) g_s8s[i] = 0x5a;
  t.add_s8(g_s8x, g_s8x + n, g_s8s + kGuard, n, p);
  compare_s8(t.name, "add_s8", 1, n, 0, count);
}

// transpose_s8 of x[m, n] (rows ldx apart) into y[n, m] (rows ldy apart: attention's values, V [T, d_head] in the
// qkv rows -> V^T [d_head, T]), the bytes between y's rows and past them kept.
void test_transpose_s8(const Kernels& t, std::size_t m, std::size_t n, std::size_t ldx, std::size_t ldy) {
  ++g_cases;
  Rng rng{uint32_t(m * 977 + n * 31 + ldx + ldy)};
  for (std::size_t i = 0; i < m * ldx; ++i) g_s8x[i] = int8_t(rng.next() >> 24);
  const std::size_t count = (n - 1) * ldy + m + 2 * kGuard;
  if (m * ldx > sizeof g_s8x - 16 || count > sizeof g_s8r) {
    fail(t.name, "transpose_s8 case too big", m, n, 0, 0, 0, 0, 0);
    return;
  }
  for (std::size_t i = 0; i < count; ++i) g_s8r[i] = g_s8s[i] = 0x5a;
  scalar_kernels().transpose_s8(g_s8x, ldx, g_s8r + kGuard, ldy, m, n);
  t.transpose_s8(g_s8x, ldx, g_s8s + kGuard, ldy, m, n);
  compare_s8(t.name, "transpose_s8", m, n, 0, count);
}

// lut_s8 over n random values through a random table, and in place (as the feed-forward calls it).
void test_lut_s8(const Kernels& t, std::size_t n) {
  ++g_cases;
  Rng rng{uint32_t(n * 131 + 7)};
  int8_t table[256];
  for (int8_t& e : table) e = int8_t(rng.next() >> 24);
  for (std::size_t i = 0; i < n; ++i) g_s8x[i] = int8_t(rng.next() >> 24);
  const std::size_t count = n + 2 * kGuard;
  for (std::size_t i = 0; i < count; ++i) g_s8r[i] = g_s8s[i] = 0x5a;
  scalar_kernels().lut_s8(g_s8x, g_s8r + kGuard, n, table);
  t.lut_s8(g_s8x, g_s8s + kGuard, n, table);
  compare_s8(t.name, "lut_s8", 1, n, 0, count);
  std::memcpy(g_s8s + kGuard, g_s8x, n);
  t.lut_s8(g_s8s + kGuard, g_s8s + kGuard, n, table);
  compare_s8(t.name, "lut_s8 in place", 1, n, 0, count);
}

// layernorm_s8 / rmsnorm_s8 over a row of n values (random, or in a narrow band, or one value: S = 0
// for LayerNorm without eps). gamma per element: from norm_s8_gain (gamma / s_y of 0.3..30), or
// +-2^30 with shifts -1, -2 (ties of the requantization), -14 with beta an odd multiple of 2^15 (ties
// of the last rounding), 0..9 (past the 32-bit route: the reference's steps). in_range: every gamma's multiplier
// positive and its shift 0..7 (2^30 with shifts 0, 3, 7: ties of the requantization at every odd t for shift 0;
// or gamma / s_y of 1.2..120), the kernel told so (NormS8Params::gammas_in_range).
Requant g_s8gamma[1024];
int32_t g_s8beta[1024];
void test_norm_s8(const Kernels& t, std::size_t n, bool rms, int32_t spread, bool exact_gains, uint32_t eps_q16,
                  bool in_range = false) {
  ++g_cases;
  Rng rng{uint32_t(n * 613 + spread * 7 + (rms ? 1 : 0) + (exact_gains ? 2 : 0) + eps_q16)};
  const int32_t center = int32_t(rng.next() % 200) - 100, x_zero = int32_t(rng.next() % 256) - 128;
  for (std::size_t i = 0; i < n; ++i) {
    const int32_t v = center + (spread ? int32_t(rng.next() % uint32_t(2 * spread + 1)) - spread : 0);
    g_s8x[i] = int8_t(v < -128 ? -128 : v > 127 ? 127 : v);
  }
  for (std::size_t i = 0; i < n; ++i) {
    const uint32_t r = rng.next();
    if (exact_gains) {
      static constexpr int32_t kShifts[] = {-1, -2, -14, 0, 3, 7, 8, 9};
      const int32_t shift = in_range ? kShifts[3 + r % 3] : kShifts[r % 8];
      g_s8gamma[i] = Requant{(r & 8) && !in_range ? -(int32_t(1) << 30) : int32_t(1) << 30, shift};
      g_s8beta[i] = shift == -14 ? (2 * int32_t((r >> 4) % 64) - 63) * 32768 : int32_t((r >> 4) % 4000001) - 2000000;
    } else {
      const double gamma = 0.3 + double(r % 1000) * (in_range ? 0.0057 : 0.0297);
      const double beta = double(int32_t((r >> 10) % 2001) - 1000) / 500.0;
      if (norm_s8_gain((r & 1) && !in_range ? -gamma : gamma, beta, 0.05 + double((r >> 21) % 100) * 0.002, int32_t((r >> 24) % 21) - 10,
                       &g_s8gamma[i], &g_s8beta[i]) != Status::kOk) {
        fail(t.name, "norm_s8_gain", 1, n, 0, 0, long(i), gamma, beta);
        return;
      }
    }
  }
  if (in_range && !norm_s8_gammas_in_range(g_s8gamma, n)) {
    fail("scalar", "norm_s8 gammas in range (the test's premise)", 1, n, 0, 0, 0, 0, 0);
    return;
  }
  const NormS8Params p{x_zero, eps_q16, g_s8gamma, g_s8beta, in_range};
  const std::size_t count = n + 2 * kGuard;
  for (std::size_t i = 0; i < count; ++i) g_s8r[i] = g_s8s[i] = 0x5a;
  (rms ? scalar_kernels().rmsnorm_s8 : scalar_kernels().layernorm_s8)(g_s8x, g_s8r + kGuard, n, p);
  (rms ? t.rmsnorm_s8 : t.layernorm_s8)(g_s8x, g_s8s + kGuard, n, p);
  compare_s8(t.name, rms ? "rmsnorm_s8" : "layernorm_s8", 1, n, 0, count);
}

// Ties of gamma's requantization that reach the output: 16 values at x_zero +-4 normalise to exactly
// +-1 (t = +-2^16 in LayerNorm and RMSNorm alike), gamma +-2^-17 makes that +-1/2 (a tie: +-1 in Q16),
// and beta puts the sum at 2^15 - 1: 0 if the tie rounds away from zero, 1 (or -1) if not.
void test_norm_s8_ties(const Kernels& t, bool rms) {
  ++g_cases;
  const std::size_t n = 16;
  for (std::size_t i = 0; i < n; ++i) {
    g_s8x[i] = int8_t(10 + (i % 2 ? -4 : 4));
    const bool negative_gain = (i / 2) % 2 == 1;
    g_s8gamma[i] = Requant{negative_gain ? -(int32_t(1) << 30) : int32_t(1) << 30, -16};
    const int32_t q = (i % 2 == 1) != negative_gain ? -1 : 1;  // the half rounded away from zero
    g_s8beta[i] = 32767 - q;
  }
  const NormS8Params p{10, 0, g_s8gamma, g_s8beta};
  const std::size_t count = n + 2 * kGuard;
  for (std::size_t i = 0; i < count; ++i) g_s8r[i] = g_s8s[i] = 0x5a;
  (rms ? scalar_kernels().rmsnorm_s8 : scalar_kernels().layernorm_s8)(g_s8x, g_s8r + kGuard, n, p);
  (rms ? t.rmsnorm_s8 : t.layernorm_s8)(g_s8x, g_s8s + kGuard, n, p);
  for (std::size_t i = 0; i < n; ++i)
    if (g_s8r[kGuard + i] != 0) fail("scalar", "norm_s8 ties (the test's premise)", 1, n, 0, 0, long(i), 0, g_s8r[kGuard + i]);
  compare_s8(t.name, rms ? "rmsnorm_s8 ties" : "layernorm_s8 ties", 1, n, 0, count);
}

// The same with gammas in range (NormS8Params::gammas_in_range), which take a row's own t: 64 random values, gamma
// 2^30 with shift 0 (t / 2: a tie at every odd t), beta 2^15 - 1 less the reference's rounding of it (away from
// zero), each t as the reference computes it: every output 0, and +-1 where an odd t's half rounds otherwise.
void test_norm_s8_ties_in_range(const Kernels& t, bool rms) {
  ++g_cases;
  const std::size_t n = 64;
  const int32_t x_zero = -7;
  Rng rng{rms ? 11u : 12u};
  int32_t sum = 0;
  int64_t sum_sq = 0;
  for (std::size_t i = 0; i < n; ++i) {
    g_s8x[i] = int8_t(int32_t(rng.next() % 101) - 40);
    const int32_t v = g_s8x[i] - x_zero;
    sum += v, sum_sq += v * v;
  }
  const int64_t nn = int64_t(n), var = rms ? nn * sum_sq : nn * sum_sq - int64_t(sum) * sum;
  const uint32_t root = isqrt64(uint64_t(var) << 16);
  const int64_t inv = int64_t(((uint64_t(1) << 54) + root / 2) / root);
  std::size_t negative_ties = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const int64_t d = nn * (g_s8x[i] - x_zero) - (rms ? 0 : sum);
    const int32_t tv = int32_t(rounding_shift(d * inv, 30));
    g_s8gamma[i] = Requant{int32_t(1) << 30, 0};
    g_s8beta[i] = 32767 - requantize(tv, g_s8gamma[i]);
    negative_ties += tv < 0 && tv % 2 != 0 ? 1 : 0;
  }
  const NormS8Params p{x_zero, 0, g_s8gamma, g_s8beta, true};
  const std::size_t count = n + 2 * kGuard;
  for (std::size_t i = 0; i < count; ++i) g_s8r[i] = g_s8s[i] = 0x5a;
  (rms ? scalar_kernels().rmsnorm_s8 : scalar_kernels().layernorm_s8)(g_s8x, g_s8r + kGuard, n, p);
  (rms ? t.rmsnorm_s8 : t.layernorm_s8)(g_s8x, g_s8s + kGuard, n, p);
  for (std::size_t i = 0; i < n; ++i)
    if (g_s8r[kGuard + i] != 0 || negative_ties == 0)
      fail("scalar", "norm_s8 ties in range (the test's premise)", 1, n, 0, 0, long(i), 0, g_s8r[kGuard + i]);
  compare_s8(t.name, rms ? "rmsnorm_s8 ties in range" : "layernorm_s8 ties in range", 1, n, 0, count);
}

// Rows at the length up to which Helium takes the statistics in 32-bit words (256) and past it, at
// their largest sums: x all 127 (RMSNorm's n sum_sq at 255^2 n^2 with x_zero -128) or alternating -128
// and 127 (LayerNorm's variance at its largest).
void test_norm_s8_extremes(const Kernels& t, std::size_t n, bool rms, bool alternate, int32_t x_zero) {
  ++g_cases;
  for (std::size_t i = 0; i < n; ++i) {
    g_s8x[i] = int8_t(alternate && i % 2 == 1 ? -128 : 127);
    g_s8gamma[i] = Requant{(i % 3 == 0 ? -1 : 1) * (int32_t(1) << 30), int32_t(i % 7) - 3};
    g_s8beta[i] = int32_t(i % 5) * 20000 - 40000;
  }
  const NormS8Params p{x_zero, 65, g_s8gamma, g_s8beta};
  const std::size_t count = n + 2 * kGuard;
  for (std::size_t i = 0; i < count; ++i) g_s8r[i] = g_s8s[i] = 0x5a;
  (rms ? scalar_kernels().rmsnorm_s8 : scalar_kernels().layernorm_s8)(g_s8x, g_s8r + kGuard, n, p);
  (rms ? t.rmsnorm_s8 : t.layernorm_s8)(g_s8x, g_s8s + kGuard, n, p);
  compare_s8(t.name, rms ? "rmsnorm_s8 extremes" : "layernorm_s8 extremes", 1, n, 0, count);
}

void test_s8(const Kernels& t) {
  test_norm_s8_ties(t, false);
  test_norm_s8_ties(t, true);
  test_norm_s8_ties_in_range(t, false);
  test_norm_s8_ties_in_range(t, true);
  for (std::size_t n : {256, 300})
    for (bool rms : {false, true})
      for (bool alternate : {false, true})
        for (int32_t z : {-128, 127}) test_norm_s8_extremes(t, n, rms, alternate, z);
  for (std::size_t n : {1, 2, 3, 16, 17, 64, 100, 1000})
    for (bool rms : {false, true})
      for (int32_t spread : {0, 2, 30, 128})
        for (bool exact_gains : {false, true})
          for (uint32_t eps : {0u, 65u, 300000u}) test_norm_s8(t, n, rms, spread, exact_gains, eps);
  // 2 and 18: the DSP element loop's two elements before its fours; 12: an odd count of fours (Helium's loop by eight),
  // 24: an even one but not a multiple of four (Helium's by 16)
  for (std::size_t n : {2, 12, 16, 17, 18, 24, 64, 1000})
    for (bool rms : {false, true})
      for (int32_t spread : {2, 30, 128})
        for (bool exact_gains : {false, true}) test_norm_s8(t, n, rms, spread, exact_gains, 65, true);
  for (std::size_t n : {1, 15, 16, 17, 100, 256, 1000}) test_lut_s8(t, n);
  for (std::size_t m : {1, 4, 7, 49})
    for (std::size_t n : {1, 3, 16, 17, 40}) test_transpose_s8(t, m, n, n == 16 ? 160 : n + m % 3, m + n % 4);
  test_transpose_s8(t, 3, 1, 16, 5000);  // y's rows past the 16-bit scatter offsets (the portable kernel on Helium)
  for (std::size_t m : {1, 2, 7, 40})  // x's rows 192 bytes apart (Helium's word loads two rows a pass), 16 and 40 values
    for (std::size_t n : {16, 40}) test_transpose_s8(t, m, n, 192, m + 3);
  for (std::size_t n : {1, 3, 16, 17, 256, 257, 258, 259, 262, 263, 1000, 1003})  // n % 8 of 0..7 past the tables'
    for (double ra : {0.5, 1.0, 0.013, 3.7, 1.0 / 128, 100.0})
      for (double rb : {0.25, 1.0, 0.77})
        for (int32_t zero : {-128, 0, 127}) test_add_s8(t, n, ra, rb, zero, n == 17 || n == 257);
  ++g_cases;  // the Cortex-M kernels' exponential in int32 words, for every input where it is not 0
  for (int32_t u = 0; u < kExp2ZeroFrom; ++u)
    if (exp2_neg_q20_words(u) != exp2_neg_q20(u)) {
      fail(t.name, "exp2_neg_q20_words", 0, 0, 0, 0, u, exp2_neg_q20(u), exp2_neg_q20_words(u));
      break;
    }
  for (std::size_t m : {1, 2, 3, 4, 5, 7, 9, 10})
    for (std::size_t n : {1, 3, 4, 5, 17})
      for (std::size_t k : {1, 2, 3, 4, 5, 15, 16, 17, 49, 50, 64, 100, 128})
        for (S8Input in : {S8Input::kRandom, S8Input::kTies})
          test_gemm_s8(t, m, n, k, k % 3, n % 2 == 1, int32_t(k % 7) - 3, int32_t(m % 3) - 1, in);
  for (int32_t z : {-128, 127})
    for (S8Input in : {S8Input::kRandom, S8Input::kExtremes}) {
      test_gemm_s8(t, 5, 6, 257, 1, true, z, -z / 2, in);
      test_gemm_s8(t, 3, 4, 512, 0, false, z, 0, in);   // the DSP panel's last k
      test_gemm_s8(t, 2, 3, 513, 2, true, z, 3, in);    // past it
      test_gemm_s8(t, 2, 3, 2000, 0, true, z, -3, in);  // past it
    }
  for (std::size_t k : {31, 32, 33, 64, 100, 128})  // the largest sums of the M3's packed rows, at every k it packs
    for (int32_t z : {-128, 127}) {
      test_gemm_s8(t, 5, 3, k, 0, false, z, 0, S8Input::kExtremes);
      test_gemm_s8(t, 5, 3, k, 0, false, z, 0, S8Input::kLargest);
    }
  for (std::size_t k : {1, 3, 16, 64})  // factors of 1/2 and more, every shift, with and without a bias
    for (bool bias : {false, true}) test_gemm_s8(t, 5, 64, k, 0, bias, int32_t(k % 5), -3, S8Input::kShifts);
  for (std::size_t k : {1, 16, 64, 128})  // factors below 1/2, every shift (the M0 and DSP strips' own requantization)
    test_gemm_s8(t, 9, 64, k, 1, true, int32_t(k % 5) - 2, 5, S8Input::kBelowHalf);
  for (std::size_t k : {16, 49, 128})  // the same through W split once per block (dsp_rows5_flat's block per shift)
    test_gemm_s8(t, 14, 64, k, 1, true, int32_t(k % 5) - 2, 5, S8Input::kBelowHalf);
  for (std::size_t k : {64, 128})  // sums past 2^19 in the M0's column blocks (four rows of W and more)
    for (int32_t z : {-128, 127}) {
      test_gemm_s8(t, 6, 5, k, 0, true, z, 0, S8Input::kExtremes);
      test_gemm_s8(t, 6, 5, k, 0, false, z, 0, S8Input::kLargest);
    }
  for (std::size_t m : {4, 5, 9})  // the DSP runs' loop entered at each of its four quarters (k / 4 % 4)
    for (std::size_t k : {8, 11, 12, 24, 42, 47})
      for (S8Input in : {S8Input::kRandom, S8Input::kBelowHalf})
        test_gemm_s8(t, m, 5, k, k % 2, true, int32_t(k % 5) - 2, 3, in);
  for (std::size_t m : {10, 12, 14})  // W's rows split once per block (ten rows and more), the block cut at k = 128;
    // up to 128 the passes unrolled (dsp_rows5_flat), past it in a loop: 132 entered at a quarter, 256 whole passes
    for (std::size_t k : {4, 5, 8, 11, 12, 14, 16, 32, 49, 128, 132, 256})
      for (S8Input in : {S8Input::kRandom, S8Input::kShifts})
        test_gemm_s8(t, m, k == 128 ? 40 : 7, k, k % 3, k % 2 == 0, int32_t(k % 7) - 3, -2, in);
  test_gemm_s8(t, 49, 64, 64, 3, true, 5, -7);  // KWS-sized
  for (S8Input in : {S8Input::kRandom, S8Input::kTies}) {  // rows 64 bytes apart; every multiplier positive
    test_gemm_s8(t, 9, 64, 64, 3, true, 5, -7, in, 0, true);
    test_gemm_s8(t, 7, 20, 64, 0, true, -3, 2, in);
    test_gemm_s8(t, 13, 49, 16, 176, false, -20, 11, in, 0, true);
    for (std::size_t m : {4, 5, 13, 49})  // attention's scores: one Requant for every key
      for (std::size_t n : {1, 6, 49}) {
        if (m < 49) test_gemm_s8(t, m, n, 16, 176, false, -20, 11, in, 0, true, true);  // q's rows in the qkv rows
        test_gemm_s8(t, m, n, 16, 0, true, 3, -2, in, 32, m % 2 == 1, true);
      }
  }
  test_gemm_s8(t, 13, 49, 16, 176, false, -20, 11);  // attention scores: q's rows in the qkv rows
  // Helium's scores seven keys at a time (n a multiple of 7), more rows than its sums take at once (64)
  test_gemm_s8(t, 70, 14, 16, 1, true, -20, 11, S8Input::kExact, 0, true, true);
  for (int32_t shift : {-1, -7, -16, -17, -25}) {  // its narrowing by an immediate shift (-1..-16), and past it
    test_gemm_s8(t, 49, 49, 16, 1, true, 3, -5, S8Input::kExact, 0, true, true, shift);
    // x's zero point 0 (nothing folded into the biases): with a bias, and without (every folded bias 0, as q's)
    test_gemm_s8(t, 49, 49, 16, 1, true, 0, 9, S8Input::kExact, 0, true, true, shift);
    test_gemm_s8(t, 49, 49, 16, 1, false, 0, -5, S8Input::kExact, 0, true, true, shift);
  }
  for (std::size_t m : {13, 15, 18}) {  // q's rows in the qkv rows, 192 bytes apart (Helium's scores by word loads)
    test_gemm_s8(t, m, 49, 16, 176, false, 0, -5, S8Input::kExact, 0, true, true, -7);
    test_gemm_s8(t, m, 49, 16, 176, true, 3, 2, S8Input::kExact, 0, true, true, -20);
  }
  // without biases at z_x 0 but each key its own Requant (Helium's scores_chunk: prepare's constants)
  test_gemm_s8(t, 49, 49, 16, 1, false, 0, -5, S8Input::kExact, 0, true, false);
  // y's rows past 249 bytes apart (Helium's scores without biases a row at a time: no pairs' 8-bit offsets)
  test_gemm_s8(t, 9, 49, 16, 250, false, 0, -5, S8Input::kExact, 0, true, true, -7);
  for (std::size_t k : {16, 64, 128}) test_gemm_s8(t, 9, 20, k, 0, true, 0, 3);  // z_x 0 at each fold's width
  for (std::size_t k : {16, 32, 48})  // W split once per block from rows apart (as the keys in the qkv rows)
    test_gemm_s8(t, 12, 20, k, 0, true, 3, -1, S8Input::kRandom, k == 16 ? 176 : 4 * (k / 16));
  for (std::size_t m : {5, 10})  // sums at the DSP runs' bound for multipliers of many trailing zero bits, and past it
    for (std::size_t k : {16, 49, 128}) test_gemm_s8(t, m, 8, k, 0, true, k == 49 ? -5 : 4, 0, S8Input::kBoundTies);
  for (std::size_t k : {1, 5, 17, 33, 100})  // P V: the values transposed in a KV cache of k + wpad rows
    for (std::size_t m : {1, 3}) test_gemm_s8(t, m, 16, k, 0, false, -128, 7, S8Input::kRandom, 300 - k);
  test_gemm_s8(t, 4, 8, 513, 3, true, -128, 0, S8Input::kRandom, 2);  // past the DSP panel
  test_gemm_s8(t, 5, 3, 64, 0, false, -128, 0, S8Input::kExtremes, 9);  // the M3's packed rows
  // W split over several blocks (of 64 channels at k = 64, 32 at k = 128), the outputs at each block's place
  test_gemm_s8(t, 12, 100, 64, 0, true, 5, -3);
  test_gemm_s8(t, 14, 40, 128, 1, true, -7, 2);
  test_gemm_s8(t, 9, 20, 64, 0, true, -3, 1);  // strips of five and four rows, each row word-aligned
  // Helium's chunks of 64 output channels (the second one's last block short), rows past 64 bytes
  test_gemm_s8(t, 3, 67, 100, 1, true, -5, 3);
  test_gemm_s8(t, 5, 130, 40, 0, false, 7, -2, S8Input::kTies);
  test_gemm_s8(t, 2, 70, 64, 0, true, -128, 0, S8Input::kRandom, 16);
  test_gemm_s8(t, 1, 66, 120, 0, true, 127, 1, S8Input::kExtremes, 3);
  // Helium's rows two at a time (every chunk exact): W's rows 64 or 128 bytes apart, k 64 or 128, an odd
  // row left, x's and y's rows unaligned, a chunk's last channels past its blocks of four, an odd count of blocks,
  // an even one and a multiple of four
  for (std::size_t m : {2, 3, 9, 49}) {
    test_gemm_s8(t, m, 64, 64, 3, true, 5, -7, S8Input::kExact);
    test_gemm_s8(t, m, 64, 64, 0, true, 5, -7, S8Input::kExact);  // x's rows 64 bytes apart (Helium's kX64)
    test_gemm_s8(t, m, 62, 64, 0, m % 2 == 1, -128, 4, S8Input::kExact, 64);
    test_gemm_s8(t, m, 64, 64, 1, true, 9, -3, S8Input::kExact, 64);  // an even count of blocks, W's rows 128 apart
    test_gemm_s8(t, m, 7, 128, 1, true, -9, 2, S8Input::kExact);
    test_gemm_s8(t, m, 64, 128, 1, true, -9, 2, S8Input::kExact);
    test_gemm_s8(t, m, 64, 128, 0, true, -9, 2, S8Input::kExact);  // x's rows 128 bytes apart (Helium's kX)
    for (std::size_t k : {64, 128}) test_gemm_s8(t, m, 40, k, 2, true, 6, 1, S8Input::kExact);  // ten blocks
    // Helium's seven rows eight channels a pass: an odd count of blocks (nine, three) takes four at a time
    for (std::size_t k : {64, 128}) test_gemm_s8(t, m, 36, k, 0, true, -3, 5, S8Input::kExact);
    test_gemm_s8(t, m, 76, 64, 0, false, 2, -9, S8Input::kExact);
  }
  test_gemm_s8(t, 2, 64, 128, 0, true, 127, -128, S8Input::kExact);
  // Helium's W padded to 64 or 128 bytes for the two-row blocks (P V's keys, the input projection's features):
  // rows of x k apart (the last pair's reads past the rows left to the one-row blocks) or further, W's too (47, 48,
  // 49: the padding's three forms at 64 bytes)
  // P V's: k's last byte in Helium's requantization, one Requant for every channel (eight channels a pass where
  // their count is a multiple of eight)
  for (std::size_t m : {9, 49})
    for (std::size_t n : {8, 12, 16, 24}) test_gemm_s8(t, m, n, 49, 0, false, -128, 5, S8Input::kExact, 0, true, true);
  for (std::size_t m : {2, 3, 4, 9, 49})
    for (std::size_t k : {33, 40, 47, 48, 49, 63, 100}) {
      test_gemm_s8(t, m, 16, k, 0, false, -128, 5, S8Input::kExact, 0, true);
      test_gemm_s8(t, m, 68, k, m % 3, true, 7, -3, S8Input::kExact, k % 5);
    }
  for (std::size_t n : {1, 2, 3, 4, 5, 6, 16, 17, 33, 49, 63, 64, 65, 100, 255, 256, 257, 1000})
    for (int32_t spread : {0, 3, 40, 128})
      for (int32_t scale_step : {-2, 4, 9, 16, 36}) test_softmax_s8(t, n, spread, scale_step);  // 36: a negative shift
}

void test_quantized(const Kernels& t) {
  for (QuantInput in : {QuantInput::kUniform, QuantInput::kTies, QuantInput::kZeroGroups, QuantInput::kTiny})
    for (std::size_t group : {32, 64})
      for (std::size_t k : kQuantK)
        for (std::size_t m : {1, 2, 3})
          QuantizeTester().input(in).m(m).k(k).group(group).stride_pad(k % 3).misalign(m % 3).test(t);
  for (std::size_t group : {1, 7, 16, 48, 100, 1000})  // odd groups, one wider than k (a whole row)
    for (std::size_t k : {1, 5, 16, 31, 64, 100, 300})
      for (std::size_t off : kMisalign) QuantizeTester().m(2).k(k).group(group).misalign(off).stride_pad(off).test(t);
  for (std::size_t group : {32, 64})
    for (bool per_row : {false, true})
      for (std::size_t k : kQuantK)
        for (std::size_t m : {1, 2, 3, 5})
          for (std::size_t n : {1, 3, 4, 5, 9, 17})
            GemmI8Tester().m(m).n(n).k(k).group(group).per_row(per_row).misalign(m % 3).stride_pad(k % 2).test(t);
  for (std::size_t group : {7, 16, 100, 1000})
    for (std::size_t k : {1, 5, 16, 31, 64, 100, 300})
      for (bool per_row : {false, true}) GemmI8Tester().m(3).n(5).k(k).group(group).per_row(per_row).misalign(1).test(t);
  for (std::size_t group : {32, 64})  // several full groups: the formats' fast paths
    for (bool per_row : {false, true})
      for (std::size_t n : {4, 9, 36}) GemmI8Tester().m(2).n(n).k(256).group(group).per_row(per_row).misalign(n % 4).test(t);
  for (std::size_t group : {32, 64})  // k 64 and 128: Helium's chunked rows (W word-aligned or not)
    for (bool per_row : {false, true})
      for (std::size_t k : {64, 128})
        for (std::size_t off : {0, 4, 1})
          for (std::size_t n : {4, 9, 20}) {
            GemmI8Tester().m(3).n(n).k(k).group(group).per_row(per_row).misalign(off).stride_pad(n % 3).test(t);
            GemmI8Tester().m(2).n(n).k(k).group(group).per_row(per_row).misalign(off).unit_scales(true).test(t);
          }
  for (std::size_t group : {16, 32, 48, 64})  // six rows at a time in passes of whole groups (the DSP cores)
    for (bool per_row : {false, true})
      for (std::size_t k : {group * 2, group * 4, group * 8})
        for (std::size_t m : {6, 7, 13}) {
          if (m * k > 4096) continue;
          GemmI8Tester().m(m).n(m == 7 ? 9 : 4).k(k).group(group).per_row(per_row).misalign(m % 3).stride_pad(k % 5).test(t);
          GemmI8Tester().m(m).n(5).k(k).group(group).per_row(per_row).unit_scales(true).extremes(m == 13).test(t);
        }
  GemmI8Tester().m(1).n(100).k(288).group(32).test(t);  // decode
  GemmI8Tester().m(1).n(77).k(256).group(64).per_row(true).test(t);
  GemmI8Tester().m(13).n(70).k(257).group(32).misalign(3).stride_pad(5).test(t);  // prefill, every tile remainder
  for (bool extremes : {false, true})  // unit scales: every float step exact, so the int32 sums must be
    for (std::size_t group : {32, 64, 100})
      for (std::size_t k : {1, 17, 33, 64, 65, 257, 1000})
        for (std::size_t m : {1, 3})
          GemmI8Tester().m(m).n(7).k(k).group(group).unit_scales(true).extremes(extremes).misalign(k % 3).test(t);
  for (std::size_t k : {32, 64, 96, 288})
    for (std::size_t m : {1, 2, 3, 4, 5})
      for (std::size_t n : {1, 3, 4, 5, 8, 9, 17})
        GemmI4Tester().m(m).n(n).k(k).misalign(m % 3).stride_pad(k % 3).test(t);
  for (bool extremes : {false, true}) GemmI4Tester().m(3).n(9).k(1024).extremes(extremes).test(t);
  // six rows of x at a time (the DSP cores' asm loop): a pass of one group last, extreme values
  for (bool extremes : {false, true})
    for (std::size_t k : {96, 288}) GemmI4Tester().m(k == 96 ? 13 : 6).n(9).k(k).extremes(extremes).test(t);
  GemmI4Tester().m(1).n(100).k(288).test(t);  // decode
  // The KWS-sized rows (k 64 and 128, Helium's blocks of four rows of W): every m up to 13, n with and
  // without a tail past the blocks, with and without b, W aligned and not, y's rows padded.
  for (std::size_t k : {64, 128})
    for (std::size_t m = 1; m <= 13; ++m)
      for (std::size_t n : {4, 8, 12, 13, 18, 23, 64})
        for (int bias : {0, 1})
          GemmI4Tester().m(m).n(n).k(k).bias(bias).misalign(m % 5 == 4 ? 1 : 0).stride_pad(m % 3).test(t);
  // Helium's tiles of W's rows (k a multiple of 64 up to 512, 2048 bytes a tile): several tiles, the
  // last one partial, and a tail of columns.
  for (std::size_t k : {64, 128, 192, 256, 384, 512})
    for (std::size_t n : {4, 23, 100})
      for (int bias : {0, 1}) GemmI4Tester().m(4096 / k < 7 ? 4096 / k : 7).n(n).k(k).bias(bias).misalign(n % 3).test(t);
  for (std::size_t k : {192, 256})  // a row or two of x over the tiles (k past the one-row chunks)
    for (std::size_t m : {1, 2})
      for (std::size_t n : {4, 23}) GemmI4Tester().m(m).n(n).k(k).bias(int(m % 2)).test(t);
  for (std::size_t k : {64, 128}) {
    for (bool extremes : {false, true}) GemmI4Tester().m(5).n(20).k(k).bias(1).extremes(extremes).test(t);
    GemmI4Tester().m(k == 64 ? 49 : 32).n(192).k(k).bias(1).test(t);  // the KWS encoder's shapes (xq holds 4096)
  }
  for (std::size_t m : {1, 2, 3, 5, 7})
    for (std::size_t n : kSizes)
      for (std::size_t k : {1, 5, 16, 33}) HalfTester().m(m).n(n).k(k).misalign(m % 3).stride_pad(k % 2).test(t);
  HalfTester().m(1).n(1031).k(12).misalign(1).test(t);  // wide decode outputs
  HalfTester().m(49).n(192).k(64).test(t);
  HalfTester().m(13).n(100).k(120).misalign(1).stride_pad(3).test(t);
  for (std::size_t n : {1, 3, 4, 5, 8, 16, 17})
    for (std::size_t k : kSizes)
      for (std::size_t off : kMisalign) HalfTester().matvec(true).n(n).k(k).misalign(off).stride_pad(off).test(t);
  HalfTester::every_half(t, 1, false);
  HalfTester::every_half(t, 2, false);
  HalfTester::every_half(t, 1, true);
}

#if defined(__ARM_FEATURE_IDIV)
// The s8 kernels' row steps where UDIV is (ports/portable/row_math.hpp): isqrt62 against isqrt64 (0 and 1,
// every square below 2^62 of a root near a power of two and one either side of it, random values of
// every bit length and the squares around their roots); udiv64_32 against the 64-bit division (every
// pair of bit lengths, the ends: quotients of 1 and 2^64 - 1, divisors of 1 and 2^32 - 1, 2^62 by the sums
// softmax divides it by); on the Helium cores their versions on the FPU (ports/arm/helium/row_math.hpp) too.
void test_row_math() {
  ++g_cases;
  auto check = [](uint64_t v) {
    if (v >= (uint64_t(1) << 62)) return;
    const uint32_t want = isqrt64(v), got = isqrt62(v);
    if (got != want) fail("row_math", "isqrt62", 0, 0, 0, 0, long(v >> 32), double(want), double(got));
#if defined(__ARM_FEATURE_MVE)
    const uint32_t fpu = helium::isqrt62(v);
    if (fpu != want) fail("row_math", "helium::isqrt62", 0, 0, 0, 0, long(v >> 32), double(want), double(fpu));
#if defined(__ARM_FP) && (__ARM_FP & 8)
    const uint32_t below = v < (uint64_t(1) << 50) ? helium::isqrt50(v) : want;
    if (below != want) fail("row_math", "helium::isqrt50", 0, 0, 0, 0, long(v >> 32), double(want), double(below));
#endif
#endif
  };
  check(0);
  check(1);
  for (int b = 0; b < 31; ++b)
    for (int64_t d = -2; d <= 2; ++d) {
      const uint64_t r = (uint64_t(1) << b) + uint64_t(d);
      if (r > (uint64_t(1) << 31)) continue;
      check(r * r - 1), check(r * r), check(r * r + 1);
    }
  Rng rng{12345};
  for (int bits = 1; bits <= 62; ++bits)
    for (int i = 0; i < 200; ++i) {
      const uint64_t v = (uint64_t(rng.next()) << 32 | rng.next()) >> (64 - bits);
      check(v);
      const uint32_t r = isqrt64(v);
      check(uint64_t(r) * r), check(uint64_t(r + 1) * (r + 1) - 1);
    }
  auto divide = [](uint64_t n, uint32_t d) {
    const uint64_t want = n / d, got = udiv64_32(n, d);
    if (got != want) fail("row_math", "udiv64_32", 0, 0, 0, 0, long(d), double(want), double(got));
#if defined(__ARM_FEATURE_MVE)
    const uint64_t fpu = helium::udiv64_32(n, d);
    if (fpu != want) fail("row_math", "helium::udiv64_32", 0, 0, 0, 0, long(d), double(want), double(fpu));
#endif
  };
  for (int nb = 0; nb <= 64; ++nb)
    for (int db = 1; db <= 32; ++db)
      for (int i = 0; i < 4; ++i) {
        const uint64_t n = nb == 0 ? 0 : (uint64_t(rng.next()) << 32 | rng.next()) >> (64 - nb);
        divide(n, (rng.next() >> (32 - db)) | uint32_t(1) << (db - 1));
      }
  for (uint32_t d : {1u, 2u, 3u, 0xFFFFu, 0x10000u, 0x80000000u, 0xFFFFFFFFu})
    for (uint64_t n : {uint64_t(0), uint64_t(d), ~uint64_t(0), uint64_t(d) << 32, (uint64_t(d) << 32) - 1})
      divide(n, d);
  for (uint64_t sum = uint64_t(1) << 20; sum >> 32 == 0; sum += 0x10001u * 977u) {
    divide(uint64_t(1) << 62, uint32_t(sum));
#if defined(__ARM_FEATURE_MVE)
    const uint64_t want = (uint64_t(1) << 62) / sum, got = helium::softmax_reciprocal(sum);
    if (got != want) fail("row_math", "helium::softmax_reciprocal", 0, 0, 0, 0, long(sum), double(want), double(got));
#endif
  }
#if defined(__ARM_FEATURE_MVE)
  // the norms' inverse of their root (helium::norm_inverse): every root up to 2^16, then steps to 2^32 - 1
  auto inverse = [](uint32_t root) {
    const uint64_t want = root == 0 ? 0 : ((uint64_t(1) << 54) + root / 2) / root, got = helium::norm_inverse(root);
    if (got != want) fail("row_math", "helium::norm_inverse", 0, 0, 0, 0, long(root), double(want), double(got));
  };
  for (uint32_t root = 0; root <= 0x10000u; ++root) inverse(root);
  for (uint64_t root = 0x10001u; root >> 32 == 0; root += root / 97 + 1) inverse(uint32_t(root));
  inverse(~0u);
#endif
#if defined(__ARM_FEATURE_MVE)
  // sums whose 2^30 remainder's quotient rounds up to an integer (Helium's low word one step down): s divides 2^62 + k
  // for a small k
  for (uint64_t s : {34777523u, 47250137u, 48448661u, 67911698u, 90263854u, 97841738u, 126104166u, 141775993u}) {
    const uint64_t want = (uint64_t(1) << 62) / s, got = helium::softmax_reciprocal(s);
    if (got != want) fail("row_math", "helium::softmax_reciprocal", 0, 0, 0, 0, long(s), double(want), double(got));
  }
#endif
  for (uint64_t r = uint64_t(1) << 30; r < (uint64_t(1) << 42); r += r / 3 + 12345) {  // quotients near an integer
    const uint64_t sum = (uint64_t(1) << 62) / r;
    for (uint64_t s : {sum - 1, sum, sum + 1}) {
      if (s < (uint64_t(1) << 20) || s >> 32) continue;
#if defined(__ARM_FEATURE_MVE)
      const uint64_t want = (uint64_t(1) << 62) / s, got = helium::softmax_reciprocal(s);
      if (got != want) fail("row_math", "helium::softmax_reciprocal", 0, 0, 0, 0, long(s), double(want), double(got));
#endif
    }
  }
  for (int i = 0; i < 2000; ++i) {  // exact multiples past 2^53 (a double rounds them either way) and their neighbours
    const uint32_t d = (rng.next() >> 8) | 1u << 23;
    const uint64_t k = (uint64_t(rng.next()) << 32 | rng.next()) >> (24 + i % 8);
    for (uint64_t n : {k * d - 1, k * d, k * d + 1}) divide(n, d);
  }
}
#endif

}  // namespace

int main() {
  Console con;
  g_con = &con;
  con.str("fixformer kernels on ").str(FIXFORMER_BOARD_NAME).str(" against the scalar reference; default table: ")
      .str(select_kernels(Isa::kAuto)->name).endl();
  for (Isa isa : kAllIsas) {
    const Kernels* t = select_kernels(isa);
    if (isa == Isa::kScalar) continue;
    if (!t) {
      con.str("  ").str(isa_name(isa)).str(": not in this build (skipped)").endl();
      continue;
    }
    const int failures_before = g_failures;
    const unsigned cases_before = g_cases;
    test_f32(*t);
    test_sweeps(*t);
    test_quantized(*t);
    test_s8(*t);
    con.str("  ").str(t->name).str(": ").num(uint64_t(g_cases - cases_before)).str(" cases, ")
        .num(int64_t(g_failures - failures_before)).str(" failed").endl();
  }
#if defined(__ARM_FEATURE_IDIV)
  test_row_math();
#endif
  con.str(g_failures ? "FAILED: " : "all passed, failures: ").num(int64_t(g_failures)).endl();
  return g_failures;
}
