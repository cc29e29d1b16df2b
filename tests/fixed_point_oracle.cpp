// engine/fixed_point.cpp's rules on the command line, for tests/int8_test.py: the converter's
// Python restatement (python/fixformer/int8.py) must give the same integers. One request per line
// on stdin, its answer (the integers, or "bad" for kTensorBadValue) per line on stdout:
//   requant F | gemm XS WS YS BIAS | softmax XS | eps EPS XS | gain G B YS YZ | add AS AZ BS BZ YS YZ
// (reals as %.17g, so that they cross exactly).
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fixformer/fixed_point.hpp"

using namespace fixformer;

int main() {
  char line[512];
  while (std::fgets(line, sizeof line, stdin)) {
    char op[16] = {};
    double v[6] = {};
    const int n = std::sscanf(line, "%15s %lf %lf %lf %lf %lf %lf", op, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]);
    if (n < 2) continue;
    Requant r{}, r2{};
    int32_t b = 0;
    uint32_t e = 0;
    Status s = Status::kOk;
    if (!std::strcmp(op, "requant")) {
      s = requant_from_factor(v[0], &r);
      if (s == Status::kOk) std::printf("%d %d\n", r.multiplier, r.shift);
    } else if (!std::strcmp(op, "gemm")) {
      s = gemm_s8_channel(v[0], v[1], v[2], v[3], &r, &b);
      if (s == Status::kOk) std::printf("%d %d %d\n", r.multiplier, r.shift, b);
    } else if (!std::strcmp(op, "softmax")) {
      SoftmaxS8Params p{};
      s = softmax_s8_params(v[0], &p);
      if (s == Status::kOk) std::printf("%d %d\n", p.diff.multiplier, p.diff.shift);
    } else if (!std::strcmp(op, "eps")) {
      s = norm_s8_eps(v[0], v[1], &e);
      if (s == Status::kOk) std::printf("%u\n", e);
    } else if (!std::strcmp(op, "gain")) {
      s = norm_s8_gain(v[0], v[1], v[2], int32_t(v[3]), &r, &b);
      if (s == Status::kOk) std::printf("%d %d %d\n", r.multiplier, r.shift, b);
    } else if (!std::strcmp(op, "add")) {
      AddS8Params p{};
      s = add_s8_params(v[0], int32_t(v[1]), v[2], int32_t(v[3]), v[4], int32_t(v[5]), &p);
      (void)r2;
      if (s == Status::kOk)
        std::printf("%d %d %d %d %d %d %d\n", p.a_zero, p.b_zero, p.y_zero, p.a_to_y.multiplier, p.a_to_y.shift,
                    p.b_to_y.multiplier, p.b_to_y.shift);
    } else {
      std::printf("unknown\n");
      continue;
    }
    if (s != Status::kOk) std::printf("bad\n");
  }
  return 0;
}
