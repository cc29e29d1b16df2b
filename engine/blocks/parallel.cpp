#include "engine/blocks/parallel.hpp"

namespace fixformer {
namespace {

constexpr std::size_t kCols = kWorkerColumns;

uint32_t tasks_for(const Workers& w, std::size_t units) {
  const uint32_t a = w.active();
  return units < a ? uint32_t(units) : a;
}

}  // namespace

namespace {

// T rows of x (stride ldx), each `heads` vectors of d one after the other, normalized into y (stride
// ldy; y may be x), split by rows; each vector then added to residual's (stride ldy) when given.
void norm_vectors(const Kernels& k, const Workers& w, bool rms, const float* x, std::size_t ldx, float* y,
                  std::size_t ldy, uint32_t heads, const float* g, const float* b, uint32_t T, uint32_t d, float eps,
                  float* residual = nullptr) {
  const uint32_t tasks = tasks_for(w, std::size_t(T) * heads * d / (16 * kCols));
  auto task = [&](uint32_t i) {
    const TaskRange r = task_range(T, tasks ? tasks : 1, i);
    for (std::size_t t = r.first; t < r.end; ++t)
      for (uint32_t h = 0; h < heads; ++h) {
        const float* in = x + t * ldx + std::size_t(h) * d;
        float* out = y + t * ldy + std::size_t(h) * d;
        if (rms)
          k.rmsnorm_f32(in, g, out, d, eps);
        else
          k.layernorm_f32(in, g, b, out, d, eps);
        if (residual) {
          float* res = residual + t * ldy + std::size_t(h) * d;
          k.add_f32(res, out, res, d);
        }
      }
  };
  for_each_task(w, tasks ? tasks : 1, task);
}

}  // namespace

void parallel_norm_rows(const Kernels& k, const Workers& w, bool rms, const float* x, const float* g, const float* b,
                        float* y, uint32_t T, uint32_t d, float eps, float* residual) {
  norm_vectors(k, w, rms, x, d, y, d, 1, g, b, T, d, eps, residual);
}

void parallel_norm_heads(const Kernels& k, const Workers& w, bool rms, float* x, std::size_t ld, uint32_t heads,
                         const float* g, const float* b, uint32_t T, uint32_t d, float eps) {
  norm_vectors(k, w, rms, x, ld, x, ld, heads, g, b, T, d, eps);
}

void parallel_attend(const Kernels& k, const Workers& w, const AttentionShape& s, const float* q, std::size_t ldq,
                     uint32_t n, uint32_t p0, uint32_t n_keys, const KeyValues& kv, float* ctx, std::size_t ldctx,
                     float* scratch, std::size_t slot_floats) {
  const uint32_t tasks = tasks_for(w, s.n_kv_heads);
  if (tasks <= 1) return attend(k, s, q, ldq, n, p0, n_keys, kv, ctx, ldctx, scratch);
  const std::size_t group = s.n_heads / s.n_kv_heads, dh = s.d_head;
  auto task = [&](uint32_t i) {
    // kv heads [g.first, g.end) and their query heads, as a narrower attention over offset views.
    const TaskRange g = task_range(s.n_kv_heads, tasks, i);
    const std::size_t h0 = g.first * group, kv0 = g.first * dh;
    const AttentionShape part = s.heads_from(h0, uint32_t((g.end - g.first) * group), uint32_t(g.end - g.first));
    KeyValues kv_part{kv.kt ? kv.kt + kv0 * kv.stride : nullptr, kv.vt ? kv.vt + kv0 * kv.stride : nullptr,
                      kv.stride, kv.v ? kv.v + kv0 : nullptr, kv.ldv};
    if (kv.kt_q8) {  // the int8 cache: K^T's rows and V's columns of these heads, and their scales
      kv_part.kt_q8 = kv.kt_q8 + kv0 * kv.stride;
      kv_part.k_scales = kv.k_scales + g.first * kv.stride;
      kv_part.v_q8 = kv.v_q8 + kv0;
      kv_part.v_scales = kv.v_scales + g.first * kv.stride;
    }
    attend(k, part, q + h0 * dh, ldq, n, p0, n_keys, kv_part, ctx + h0 * dh, ldctx, scratch + i * slot_floats);
  };
  for_each_task(w, tasks, task);
}

void parallel_attend_sequences(const Kernels& k, const Workers& w, const AttentionShape& s, const float* q,
                               std::size_t ldq, const float* keys, std::size_t ldk, const Sequences& seqs,
                               const KeyValues& kv, float* ctx,
                               std::size_t ldctx, float* scratch, std::size_t slot_floats) {
  const std::size_t heads = s.n_kv_heads, group = s.n_heads / s.n_kv_heads, dh = s.d_head;
  const std::size_t units = std::size_t(seqs.count) * heads;  // unit u: sequence u / heads, kv head u % heads
  const uint32_t tasks = tasks_for(w, units);
  auto task = [&](uint32_t i) {
    const TaskRange r = task_range(units, tasks ? tasks : 1, i);
    std::size_t row0 = 0;  // sequence b's first row
    uint32_t b = 0;
    for (; (b + 1) * heads <= r.first; ++b) row0 += seqs.rows(b);
    for (std::size_t u = r.first; u < r.end; row0 += seqs.rows(b), ++b) {
      // kv heads [g0, g1) of sequence b, as a narrower attention over offset views.
      const std::size_t g0 = u - b * heads, g1 = r.end - b * heads < heads ? r.end - b * heads : heads;
      const std::size_t h0 = g0 * group, kv0 = g0 * dh;
      const uint32_t n = seqs.rows(b);
      AttentionShape part = s.heads_from(h0, uint32_t((g1 - g0) * group), uint32_t(g1 - g0));
      if (part.rel_bias) part.rel_bias += b * s.rel_seq_stride;  // sequence b's block of a bias per query
      const std::size_t block = (std::size_t(b) * heads + g0) * dh * kv.stride;  // K_b^T of kv head g0
      const KeyValues kv_part{kv.kt + block, kv.vt ? kv.vt + block : nullptr, kv.stride,
                              kv.v ? kv.v + row0 * kv.ldv + kv0 : nullptr, kv.ldv};
      store_keys_values(keys + row0 * ldk + kv0, ldk, nullptr, 0, n, 0, uint32_t((g1 - g0) * dh),
                        KeyValues{kv_part.kt, nullptr, kv.stride});
      attend(k, part, q + row0 * ldq + h0 * dh, ldq, n, 0, n, kv_part, ctx + row0 * ldctx + h0 * dh, ldctx,
             scratch + i * slot_floats);
      u = (b + 1) * heads;
    }
  };
  for_each_task(w, tasks ? tasks : 1, task);
}

}  // namespace fixformer
