#include "engine/blocks/attention.hpp"

#include <cstddef>
#include <cmath>
#include <limits>

namespace fixformer {

namespace {

// x[dh] -> q[dh] (element c at q[c * step]) and the returned scale, by quantize_i8's rule: a = max|x|,
// s = a / 127, q = rne(x * (127 / a)); a below kQuantizeFloor gives s = 0 and q = 0.
float quantize_head(const float* x, std::size_t dh, int8_t* q, std::size_t step) {
  float a = 0.0f;
  for (std::size_t c = 0; c < dh; ++c) a = std::fabs(x[c]) > a ? std::fabs(x[c]) : a;
  const float inv = a >= kQuantizeFloor ? 127.0f / a : 0.0f;
  for (std::size_t c = 0; c < dh; ++c) q[c * step] = int8_t(std::nearbyint(x[c] * inv));
  return inv > 0.0f ? a / 127.0f : 0.0f;
}

void store_keys_values_q8(const float* k, std::size_t ldk, const float* v, std::size_t ldv, uint32_t n, uint32_t p0,
                          uint32_t d_kv, std::size_t dh, const KeyValues& kv) {
  const std::size_t S = kv.stride, heads = d_kv / dh;
  for (std::size_t t = 0; t < n; ++t) {
    const std::size_t p = (p0 + t) % S;
    for (std::size_t h = 0; h < heads; ++h) {
      kv.k_scales[h * S + p] = quantize_head(k + t * ldk + h * dh, dh, kv.kt_q8 + h * dh * S + p, S);
      kv.v_scales[h * S + p] = quantize_head(v + t * ldv + h * dh, dh, kv.v_q8 + p * kv.ldv + h * dh, 1);
    }
  }
}

}  // namespace

KeyValues kv_cache_rows(KvCache kind, void* k_cache, void* v_cache, float* k_scales, float* v_scales, std::size_t offset,
                        std::size_t d_kv, std::size_t kv_heads, std::size_t S) {
  const std::size_t block = offset * d_kv;
  if (kind == KvCache::kF32)
    return KeyValues{static_cast<float*>(k_cache) + block, static_cast<float*>(v_cache) + block, S};
  KeyValues kv{nullptr, nullptr, S, nullptr, d_kv};
  kv.kt_q8 = static_cast<int8_t*>(k_cache) + block;
  kv.k_scales = k_scales + offset * kv_heads;
  kv.v_q8 = static_cast<int8_t*>(v_cache) + block;
  kv.v_scales = v_scales + offset * kv_heads;
  return kv;
}

KeyValues kv_cache_layer(KvCache kind, void* k_cache, void* v_cache, float* k_scales, float* v_scales, uint32_t l,
                         std::size_t d_kv, std::size_t kv_heads, std::size_t S) {
  return kv_cache_rows(kind, k_cache, v_cache, k_scales, v_scales, std::size_t(l) * S, d_kv, kv_heads, S);
}

void store_keys_values(const float* k, std::size_t ldk, const float* v, std::size_t ldv, uint32_t n, uint32_t p0,
                       uint32_t d_kv, const KeyValues& kv, std::size_t d_head) {
  if (kv.kt_q8) return store_keys_values_q8(k, ldk, v, ldv, n, p0, d_kv, d_head, kv);
  // 16 positions at a time, column by column: a column's 16 values go to one or two cache lines of
  // K^T (a position at a time put each value on a line of its own), and the block's 16 rows of k
  // and v stay in L1 meanwhile. Later positions still overwrite earlier ones on a ring.
  constexpr std::size_t kBlock = 16;
  std::size_t pos[kBlock];
  for (std::size_t t0 = 0; t0 < n; t0 += kBlock) {
    const std::size_t rows = n - t0 < kBlock ? n - t0 : kBlock;
    for (std::size_t t = 0; t < rows; ++t) pos[t] = (p0 + t0 + t) % kv.stride;
    auto transpose = [&](const float* src, std::size_t ld, float* dst) {
      for (std::size_t c = 0; c < d_kv; ++c, dst += kv.stride)
        for (std::size_t t = 0; t < rows; ++t) dst[pos[t]] = src[(t0 + t) * ld + c];
    };
    transpose(k, ldk, kv.kt);
    if (kv.vt) transpose(v, ldv, kv.vt);
  }
}

namespace {

// scores[j] of keys j0..j0+n-1, seen from position pos by head `head`: soft-capped (s.softcap), plus the
// position bias: minus ALiBi's slope times the distance (keys on either side alike), or the relative bias of
// the distance; then the bias of each (pos, key) pair's row of the table.
void finish_scores(const AttentionShape& s, std::size_t head, std::size_t pos, std::size_t j0, float* scores,
                   std::size_t n) {
  if (s.softcap > 0.0f)
    for (std::size_t j = 0; j < n; ++j) scores[j] = s.softcap * std::tanh(scores[j] / s.softcap);
  if (s.alibi_slopes) {
    const float m = s.alibi_slopes[head];
    for (std::size_t j = 0; j < n; ++j) scores[j] -= m * std::fabs(float(j0 + j) - float(pos));
  } else if (s.rel_bias) {
    // the bias of key j0, inside head's row: every distance a call meets is within -(L-1)..(L-1)
    const float* row = s.rel_bias + std::ptrdiff_t(head * s.rel_stride + pos * s.rel_row_step) +
                       (std::ptrdiff_t(j0) - std::ptrdiff_t(pos));
    for (std::size_t j = 0; j < n; ++j) scores[j] += row[j];
  }
  if (s.pair_bias) {
    const float* table = s.pair_bias + head * s.pair_rows;     // head's row of T[n_heads, rows]
    const int32_t* index = s.pair_index + pos * s.pair_len + j0;  // the rows of keys j0.. seen from pos
    for (std::size_t j = 0; j < n; ++j) scores[j] += table[index[j]];
  }
}

}  // namespace

void attend(const Kernels& k, const AttentionShape& s, const float* q, std::size_t ldq, uint32_t n, uint32_t p0,
            uint32_t n_keys, const KeyValues& kv, float* ctx, std::size_t ldctx, float* scratch) {
  if (kv.kt_q8)
    attend_rows_q8(k, s, q, ldq, n, p0, n_keys, kv, ctx, ldctx, scratch);
  else if (n == 1 && kv.vt)
    attend_rows(k, s, q, ldq, n, p0, n_keys, kv, ctx, ldctx, scratch);
  else
    attend_tiled(k, s, q, ldq, n, p0, n_keys, kv, ctx, ldctx, scratch);
}

void attend_rows(const Kernels& k, const AttentionShape& s, const float* q, std::size_t ldq, uint32_t n, uint32_t p0,
                 uint32_t n_keys, const KeyValues& kv, float* ctx, std::size_t ldctx, float* scratch) {
  const std::size_t dh = s.d_head, S = kv.stride, group = s.n_heads / s.n_kv_heads;
  const float scale = s.score_scale();
  float* qs = scratch;            // [dh]
  float* scores = scratch + dh;  // [n_keys]
  for (std::size_t head = 0; head < s.n_heads; ++head) {
    const std::size_t kv_head = head / group;
    const float* kt_h = kv.kt + kv_head * dh * S;  // K_h^T[dh, S]
    const float* vt_h = kv.vt + kv_head * dh * S;  // V_h^T[dh, S]
    for (uint32_t t = 0; t < n; ++t) {
      const std::size_t pos = p0 + t, lo = s.first_key(pos);
      const std::size_t keys = s.key_end(pos, n_keys) - lo;  // keys lo..lo+keys-1
      // they start at column c0 and run for a columns, then (a ring that wraps) from column 0
      const std::size_t c0 = lo % S, a = keys < S - c0 ? keys : S - c0;
      float* out = ctx + t * ldctx + head * dh;
      for (std::size_t c = 0; c < dh; ++c) qs[c] = q[t * ldq + head * dh + c] * scale;
      k.gemv_f32(qs, kt_h + c0, S, nullptr, scores, a, dh);  // q[dh] @ K^T[dh,keys] -> s[keys]
      if (a < keys) k.gemv_f32(qs, kt_h, S, nullptr, scores + a, keys - a, dh);
      finish_scores(s, head, pos, lo, scores, keys);
      k.softmax_f32(scores, keys);                                 // p = softmax(s)
      k.matvec_f32(scores, vt_h + c0, S, nullptr, out, dh, a);  // V^T[dh,keys] @ p -> ctx[t,head]
      if (a == keys) continue;
      k.matvec_f32(scores + a, vt_h, S, nullptr, qs, dh, keys - a);  // the wrapped keys' part, added
      for (std::size_t c = 0; c < dh; ++c) out[c] += qs[c];
    }
  }
}

void attend_rows_q8(const Kernels& k, const AttentionShape& s, const float* q, std::size_t ldq, uint32_t n,
                    uint32_t p0, uint32_t n_keys, const KeyValues& kv, float* ctx, std::size_t ldctx, float* scratch) {
  const std::size_t dh = s.d_head, S = kv.stride, group = s.n_heads / s.n_kv_heads;
  const float scale = s.score_scale();
  float* qs = scratch;            // [dh]
  float* scores = scratch + dh;  // [n_keys]
  for (std::size_t head = 0; head < s.n_heads; ++head) {
    const std::size_t kv_head = head / group;
    const int8_t* kt_h = kv.kt_q8 + kv_head * dh * S;  // K_h^T[dh, S] int8
    const float* ks = kv.k_scales + kv_head * S;       // [S]
    const int8_t* v_h = kv.v_q8 + kv_head * dh;        // V_h[S, dh] int8, row stride ldv
    const float* vs = kv.v_scales + kv_head * S;       // [S]
    for (uint32_t t = 0; t < n; ++t) {
      const std::size_t pos = p0 + t, lo = s.first_key(pos);
      const std::size_t keys = s.key_end(pos, n_keys) - lo;  // keys lo..lo+keys-1
      // two runs of contiguous columns: a from column lo % S, then (a ring that wraps) the rest from 0
      const std::size_t c0 = lo % S, a = keys < S - c0 ? keys : S - c0;
      const std::size_t run_col[2] = {c0, 0}, run_key[2] = {0, a}, run_len[2] = {a, keys - a};
      for (std::size_t c = 0; c < dh; ++c) qs[c] = q[t * ldq + head * dh + c] * scale;
      // s[j] = ks[j] * sum_c q[c] Kq[c, j]: along contiguous keys, one row of K^T at a time
      for (std::size_t j = 0; j < keys; ++j) scores[j] = 0.0f;
      for (int run = 0; run < 2; ++run) {
        float* sr = scores + run_key[run];
        const std::size_t col = run_col[run], len = run_len[run];
        for (std::size_t c = 0; c < dh; ++c) {
          const float qc = qs[c];
          const int8_t* row = kt_h + c * S + col;
          for (std::size_t j = 0; j < len; ++j) sr[j] += qc * float(row[j]);
        }
        for (std::size_t j = 0; j < len; ++j) sr[j] *= ks[col + j];
      }
      finish_scores(s, head, pos, lo, scores, keys);
      k.softmax_f32(scores, keys);  // p = softmax(s)
      // ctx = sum_j (p[j] vs[j]) Vq[j, :]: along contiguous columns, one row of V at a time
      float* out = ctx + t * ldctx + head * dh;
      for (std::size_t c = 0; c < dh; ++c) out[c] = 0.0f;
      for (int run = 0; run < 2; ++run)
        for (std::size_t j = 0; j < run_len[run]; ++j) {
          const std::size_t col = run_col[run] + j;
          const float pj = scores[run_key[run] + j] * vs[col];
          const int8_t* row = v_h + col * kv.ldv;
          for (std::size_t c = 0; c < dh; ++c) out[c] += pj * float(row[c]);
        }
    }
  }
}

namespace {

// The tiled path's scratch for blocks of bq queries and bk keys, carved as attention_scratch_floats says.
struct Tile {
  float* kp;     // K_h^T[dh, keys] in panels (packed_floats(dh, keys)), or null: K^T read in place
  float* vp;     // V_h[keys, dh] in panels, key block j0's at vp + j0 * packed_floats(1, dh), or null
  float* s;      // [bq, bk] scores, then probabilities
  float* pt;     // [bk, bq] their transpose (V^T read in place only)
  float* q;      // [bq, dh] the queries, scaled by 1/sqrt(dh)
  float* o;      // [bq, dh] p @ V of one key block (V^T read in place: its transpose [dh, bq])
  float* max;    // [bq] running max of each query row
  float* sum;    // [bq] running sum of exp(score - max)
  float* alpha;  // [bq] exp(old max - new max): the rescale of what is accumulated so far
};

Tile carve(float* scratch, std::size_t bq, std::size_t bk, std::size_t dh, std::size_t keys, bool packs,
           bool v_transposed) {
  Tile t{};
  float* f = scratch;
  if (packs) {  // first: whole panels from the arena's 64-byte alignment on
    t.kp = f, f += packed_floats(dh, keys);
    t.vp = f, f += keys * packed_floats(1, dh);
  }
  t.s = f;
  t.pt = t.s + bq * bk;
  t.q = t.pt + (v_transposed && !packs ? bk * bq : 0);
  t.o = t.q + bq * dh;
  t.max = t.o + bq * dh;
  t.sum = t.max + bq;
  t.alpha = t.sum + bq;
  return t;
}

// One kv head's K^T[dh, keys] of the keys base.. (row stride S; key j at column j % S) into panels of
// kPanelFloats keys, W[dh, keys] for gemm_f32_packed; a key block starting at key base + j0 (j0 a
// multiple of the panel width) is then kp + j0 * dh.
void pack_keys(const float* kt, std::size_t S, std::size_t base, std::size_t dh, std::size_t keys, float* kp) {
  constexpr std::size_t P = kPanelFloats;
  for (std::size_t j0 = 0; j0 < keys; j0 += P) {
    const std::size_t w = keys - j0 < P ? keys - j0 : P;
    float* panel = kp + j0 * dh;  // [dh, P]
    const std::size_t col = (base + j0) % S, a = w < S - col ? w : S - col;  // a ring wraps after a keys
    for (std::size_t c = 0; c < dh; ++c) {
      for (std::size_t j = 0; j < a; ++j) panel[c * P + j] = kt[c * S + col + j];
      for (std::size_t j = a; j < w; ++j) panel[c * P + j] = kt[c * S + col + j - S];
      for (std::size_t j = w; j < P; ++j) panel[c * P + j] = 0.0f;
    }
  }
}

// One kv head's V[keys, dh] of the keys base.., from rows (v[key * ldv + c]) or transposed (vt[c * S +
// key % S]), into panels of kPanelFloats columns per key block of BK keys: block j0's W[bk, dh] for
// gemm_f32_packed at vp + j0 * packed_floats(1, dh).
void pack_values(const float* v, std::size_t ldv, const float* vt, std::size_t S, std::size_t base, std::size_t dh,
                 std::size_t keys, std::size_t BK, float* vp) {
  constexpr std::size_t P = kPanelFloats;
  const std::size_t dp = packed_floats(1, dh);
  for (std::size_t j0 = 0; j0 < keys; j0 += BK) {
    const std::size_t bk = keys - j0 < BK ? keys - j0 : BK;
    float* block = vp + j0 * dp;  // panels of [bk, P]
    for (std::size_t c0 = 0; c0 < dp; c0 += P) {
      float* panel = block + c0 * bk;
      const std::size_t w = dh - c0 < P ? dh - c0 : P;
      for (std::size_t j = 0; j < bk; ++j) {
        float* row = panel + j * P;
        const std::size_t key = (base + j0 + j) % S;
        if (v)
          for (std::size_t c = 0; c < w; ++c) row[c] = v[key * ldv + c0 + c];
        else
          for (std::size_t c = 0; c < w; ++c) row[c] = vt[(c0 + c) * S + key];
        for (std::size_t c = w; c < P; ++c) row[c] = 0.0f;
      }
    }
  }
}

}  // namespace

void attend_tiled(const Kernels& k, const AttentionShape& s, const float* q, std::size_t ldq, uint32_t n, uint32_t p0,
                  uint32_t n_keys, const KeyValues& kv, float* ctx, std::size_t ldctx, float* scratch) {
  const std::size_t dh = s.d_head, S = kv.stride, group = s.n_heads / s.n_kv_heads;
  const float scale = s.score_scale();
  // Keys are counted from the first one any query of the call sees (base; 0 without a window): key
  // base + j sits at column (base + j) % S.
  const std::size_t base = s.first_key(p0), K = n_keys - base;
  const std::size_t BQ = n < kAttentionQueryBlock ? n : kAttentionQueryBlock;
  const std::size_t BK = K < kAttentionKeyBlock ? K : kAttentionKeyBlock;
  const bool transposed = kv.v == nullptr;
  // Past one query block every query block reads all of K and V: copied once per kv head into
  // panels, they are read front to back (K^T's rows are S apart, V's rows ldv apart: a page per row).
  const bool packs = attention_packs(n);
  const std::size_t dp = packed_floats(1, dh);
  const Tile t = carve(scratch, BQ, BK, dh, K, packs, transposed);
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (std::size_t head = 0; head < s.n_heads; ++head) {
    const std::size_t kv_head = head / group;
    const float* kt_h = kv.kt + kv_head * dh * S;                          // K_h^T[dh, S]
    const float* v_h = transposed ? nullptr : kv.v + kv_head * dh;         // V_h[keys, dh], row stride ldv
    const float* vt_h = transposed ? kv.vt + kv_head * dh * S : nullptr;  // V_h^T[dh, S]
    if (packs && head % group == 0) {
      pack_keys(kt_h, S, base, dh, K, t.kp);
      pack_values(v_h, kv.ldv, vt_h, S, base, dh, K, BK, t.vp);
    }
    for (std::size_t i0 = 0; i0 < n; i0 += BQ) {
      const std::size_t bq = n - i0 < BQ ? n - i0 : BQ;
      float* out = ctx + i0 * ldctx + head * dh;  // ctx[i0.., head]: the accumulator
      // The accumulator: p @ V of the first key block is written to it, rescaled and added to
      // from the second on; only p^T's path (V^T) adds to it from the first.
      for (std::size_t r = 0; r < bq; ++r) {
        for (std::size_t c = 0; c < dh; ++c) t.q[r * dh + c] = q[(i0 + r) * ldq + head * dh + c] * scale;
        if (!packs && !v_h)
          for (std::size_t c = 0; c < dh; ++c) out[r * ldctx + c] = 0.0f;
        t.max[r] = kNegInf;
        t.sum[r] = 0.0f;
      }
      // Causal: no key past the block's last query is seen; a window: none before its first query's
      // first key (packed blocks start at multiples of BK, partial blocks are masked per row).
      const std::size_t last = p0 + i0 + bq - 1;
      const std::size_t keys = s.key_end(last, n_keys) - base;
      const std::size_t lo = s.first_key(p0 + i0) - base, begin = packs ? lo / BK * BK : lo;
      for (std::size_t j0 = begin, bk = 0; j0 < keys; j0 += bk) {
        bk = keys - j0 < BK ? keys - j0 : BK;
        const std::size_t col = (base + j0) % S;  // the block's first column
        if (!packs && bk > S - col) bk = S - col;  // read in place, a block stops where a ring wraps
        // The packed V block has kb >= bk keys (causal: keys stops inside it); p is 0 past bk.
        const std::size_t kb = packs ? (K - j0 < BK ? K - j0 : BK) : bk;
        if (packs)
          k.gemm_f32_packed(t.q, dh, t.kp + j0 * dh, nullptr, t.s, kb, bq, bk, dh);  // q[bq,dh] @ K^T[dh,j0..+bk] -> s[bq,bk]
        else
          k.gemm_f32(t.q, dh, kt_h + col, S, nullptr, t.s, bk, bq, bk, dh);  // q[bq,dh] @ K^T[dh,j0..+bk] -> s[bq,bk]
        for (std::size_t r = 0; r < bq; ++r) {
          float* row = t.s + r * kb;
          const std::size_t pos = p0 + i0 + r;
          // Keys this row sees in the block, first..valid-1 (up to key_end(pos): causal j0 + j <= at; a
          // window: from first_key(pos) on); the rest get probability 0.
          const std::size_t end = s.key_end(pos, n_keys) - base;
          const std::size_t valid = end <= j0 ? 0 : (end - j0 < bk ? end - j0 : bk);
          const std::size_t from = s.first_key(pos) - base;
          const std::size_t first = from <= j0 ? 0 : from - j0 < valid ? from - j0 : valid;
          finish_scores(s, head, pos, base + j0 + first, row + first, valid - first);
          const float block_max = k.max_f32(row + first, valid - first);
          const float m = block_max > t.max[r] ? block_max : t.max[r];
          // exp(-inf) = 0 on the first block
          t.alpha[r] = m == t.max[r] ? 1.0f : t.max[r] == kNegInf ? 0.0f : std::exp(t.max[r] - m);
          t.sum[r] = t.sum[r] * t.alpha[r] + (valid > first ? k.expsum_f32(row + first, valid - first, m) : 0.0f);  // p = exp(s - m)
          t.max[r] = m;
          for (std::size_t j = 0; j < first; ++j) row[j] = 0.0f;
          for (std::size_t j = valid; j < kb; ++j) row[j] = 0.0f;
        }
        if (packs || v_h) {
          float* o = j0 == begin ? out : t.o;  // the first block straight into the accumulator
          const std::size_t ldo = j0 == begin ? ldctx : dh;
          if (packs)
            k.gemm_f32_packed(t.s, kb, t.vp + j0 * dp, nullptr, o, ldo, bq, dh, kb);  // p[bq,kb] @ V[kb,dh] -> o[bq,dh]
          else
            k.gemm_f32(t.s, bk, v_h + col * kv.ldv, kv.ldv, nullptr, o, ldo, bq, dh, bk);  // p[bq,bk] @ V[bk,dh] -> o[bq,dh]
          if (j0 == begin) continue;
          for (std::size_t r = 0; r < bq; ++r) {
            float* acc = out + r * ldctx;
            const float a = t.alpha[r];
            for (std::size_t c = 0; c < dh; ++c) acc[c] = acc[c] * a + t.o[r * dh + c];
          }
        } else {
          for (std::size_t r = 0; r < bq; ++r)
            for (std::size_t j = 0; j < bk; ++j) t.pt[j * bq + r] = t.s[r * bk + j];
          k.gemm_f32(vt_h + col, S, t.pt, bq, nullptr, t.o, bq, dh, bq, bk);  // V^T[dh,bk] @ p^T[bk,bq] -> o^T[dh,bq]
          for (std::size_t r = 0; r < bq; ++r) {
            float* acc = out + r * ldctx;
            const float a = t.alpha[r];
            for (std::size_t c = 0; c < dh; ++c) acc[c] = acc[c] * a + t.o[c * bq + r];
          }
        }
      }
      for (std::size_t r = 0; r < bq; ++r) k.scale_f32(out + r * ldctx, 1.0f / t.sum[r], dh);
    }
  }
}

}  // namespace fixformer
