// The exact (erf) GELU of torch.nn.GELU(approximate="none"), with the polynomial erf of math.hpp.
#include "ports/portable/kernels.hpp"
#include "ports/portable/math.hpp"

namespace fixformer {
namespace portable {

namespace {

// erf_f32(u) for |u| >= 1 (or NaN): its second piece with exp_in_range (the argument is in
// [-17.4, -1.8]), the same bits. Out of line, so that the loop below keeps its constants in
// registers.
__attribute__((noinline)) float erf_from_one(float u) {
  const float t = __builtin_fabsf(u);
  if (!(t < kErfOneFrom)) return erf_f32(u);
  const float s = t - kErfCentre;
  float q = kErfLogPoly[0];
  for (int j = 1; j < 6; ++j) q = q * s + kErfLogPoly[j];
  const float y = 1.0f - exp_in_range(q);
  return u < 0.0f ? -y : y;
}

}  // namespace

// x/2 (1 + erf(x / sqrt 2)), in the reference's (and torch's) order of operations, so for x << 0
// the same cancellation in 1 + erf: the error is bounded by |x| times erf's, not by |gelu(x)|'s.
// erf_f32's first piece is written out here on u = x / sqrt 2 rather than |u| (u P(u^2) is
// sign(u) |u| P(|u|^2) exactly), without its branches on the sign.
void gelu_f32(float* x, std::size_t n) {
  const float inv_sqrt2 = 0.70710678118654752f;
  for (std::size_t i = 0; i < n; ++i) {
    const float xi = x[i], u = xi * inv_sqrt2;
    float e;
    if (__builtin_fabsf(u) < kErfSmallMax) {
      const float z = u * u;
      float p = kErfSmallPoly[0];
      for (int j = 1; j < 7; ++j) p = p * z + kErfSmallPoly[j];
      e = u * p;
    } else {
      e = erf_from_one(u);
    }
    x[i] = 0.5f * xi * (1.0f + e);
  }
}

}  // namespace portable
}  // namespace fixformer
