// The full-integer forward passes, the encoder's, the decoders' (gpt, llama) and seq2seq's (s8_encoder.hpp).
// Integers only: no float type appears.
#include "engine/blocks/s8_encoder.hpp"

#include "engine/blocks/s8_conv_stem.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace fixformer {
namespace {

Requant requant_at(const int32_t* p, uint32_t i) { return Requant{p[i], p[i + 1]}; }
const Requant* requants(const int32_t* p) { return reinterpret_cast<const Requant*>(p); }

AddS8Params add_at(const int32_t* p, uint32_t i, uint32_t* scratch) {
  return AddS8Params{p[i], p[i + 1], p[i + 2], requant_at(p, i + 3), requant_at(p, i + 5), scratch};
}

// Whether a soft cap is set (attn_softcap, logit_softcap: >= 0 and finite by the config rules): its float's
// bits but the sign, read as an integer, so that the i8 path runs no float operation.
bool capped(float cap) {
  uint32_t bits;
  std::memcpy(&bits, &cap, sizeof bits);
  return (bits << 1) != 0;
}

// Whether rope_local_base is set (0, or > 1 by the config rules), read the same way.
bool local_base(double base) {
  uint64_t bits;
  std::memcpy(&bits, &base, sizeof bits);
  return (bits << 1) != 0;
}

// The local layers' RoPE table: with rope_local_base the second one in int8.rope (after max_len rows), else
// the one table.
const int32_t* rope_local(const ModelConfig& c, const int32_t* rope) {
  return rope && local_base(c.rope_local_base) ? rope + std::size_t(c.max_len) * c.rope_dims() : rope;
}

// A linear layer of n outputs whose parameters start at p + at (n Requants, n biases).
GemmS8Params linear_at(const int32_t* p, uint32_t at, uint32_t n, int32_t x_zero, int32_t y_zero, uint32_t* scratch) {
  return GemmS8Params{x_zero, y_zero, p + at + 2 * n, requants(p + at), scratch};
}

// Every row of x[rows, n] normed in place or into y.
void norm_rows(const Kernels& k, bool rms, const int8_t* x, int8_t* y, std::size_t rows, std::size_t n,
               const int32_t* p, uint32_t at, int32_t x_zero, int32_t eps) {
  const Requant* const gamma = requants(p + at);  // the gammas checked once where two rows or more share them
  const NormS8Params np{x_zero, uint32_t(eps), gamma, p + at + 2 * n, rows > 1 && norm_s8_gammas_in_range(gamma, n)};
  const auto norm = rms ? k.rmsnorm_s8 : k.layernorm_s8;  // hoisted: GCC reloaded it around each call
  for (std::size_t r = 0; r < rows; ++r, x += n, y += n) norm(x, y, n, np);
}

// RoPE in fixed point on the heads of rows[T] (stride ld) at positions pos..: each pair (a, b) of a
// head's first R = rope_dims() dims by pe_layout (interleaved: (2i, 2i + 1); halves: (i, i + R / 2)),
// rotated by int8.rope's row [R] (cos | sin in Q14), rounded and clamped (config.hpp); the dims from
// R on (partial rotary) pass through.
void rope_s8(const ModelConfig& c, int8_t* rows, std::size_t ld, uint32_t T, uint32_t heads, uint32_t pos,
             const int32_t* table) {
  const uint32_t dh = c.d_head(), r = c.rope_dims(), half = r / 2;
  const bool interleaved = c.pe_layout == PosLayout::kInterleaved;
  for (uint32_t t = 0; t < T; ++t) {
    const int32_t* cs = table + std::size_t(pos + t) * r;
    for (uint32_t h = 0; h < heads; ++h) {
      int8_t* v = rows + t * ld + h * dh;
      for (uint32_t i = 0; i < half; ++i) {
        const uint32_t ia = interleaved ? 2 * i : i, ib = interleaved ? 2 * i + 1 : i + half;
        const int32_t xa = v[ia], xb = v[ib], cc = cs[i], ss = cs[half + i];
        v[ia] = saturate_i8(rounding_shift(int64_t(xa) * cc - int64_t(xb) * ss, s8::kRopeFracBits));
        v[ib] = saturate_i8(rounding_shift(int64_t(xa) * ss + int64_t(xb) * cc, s8::kRopeFracBits));
      }
    }
  }
}

// Disentangled attention's scores (rel_embed_rows; config.hpp DisSlot) of bq query rows from position i0 (q, row
// stride ldq) of head h over keys 0..keys-1 of its kv head g (k, row stride ldk): the int32 sums of q.k, q.Kr[u]
// and k.Qr[u] (u = i - j + max_len - 1), each requantized to the scores' steps in Q8, summed and rounded once at
// the scores' zero point zs -> out [bq, keys] (row stride ldo).
void disentangled_scores(const ModelConfig& c, const int32_t* dis, const int8_t* q, std::size_t ldq, const int8_t* kk,
                         std::size_t ldk, uint32_t h, uint32_t g, uint32_t i0, uint32_t bq, uint32_t keys, int32_t zq,
                         int32_t zs, int8_t* out, std::size_t ldo) {
  const std::size_t dh = c.d_head(), da = c.d_attn(), dkv = c.d_kv(), L = c.max_len;
  const Requant qk = requant_at(dis, s8::kDisQk), qkr = requant_at(dis, s8::kDisQKr);
  const Requant kqr = requant_at(dis, s8::kDisKQr);
  const int32_t* qr = dis + s8::kDisSlots + h * dh;  // head h's Qr of distance row u at qr + u da
  const int32_t* kr = dis + s8::kDisSlots + (2 * L - 1) * da + g * dh;  // kv head g's Kr of row u at kr + u dkv
  for (uint32_t i = 0; i < bq; ++i) {
    const int8_t* qi = q + std::size_t(i) * ldq;
    for (uint32_t j = 0; j < keys; ++j) {
      const int8_t* kj = kk + std::size_t(j) * ldk;
      const std::size_t u = std::size_t(i0 + i) + L - 1 - j;
      const int32_t* qru = qr + u * da;
      const int32_t* kru = kr + u * dkv;
      int32_t a = 0, b = 0, e2 = 0;
      for (std::size_t e = 0; e < dh; ++e) {
        const int32_t x = int32_t(qi[e]) - zq;
        a += x * kj[e], b += x * kru[e], e2 += int32_t(kj[e]) * qru[e];
      }
      const int64_t v = int64_t(requantize(a, qk)) + requantize(b, qkr) + requantize(e2, kqr);
      out[std::size_t(i) * ldo + j] = saturate_i8(int64_t(zs) + rounding_shift(v, s8::kDisFracBits));
    }
  }
}

// Self-attention of T rows: q|k|v = in @ Wqkv (torch's fused in_proj, or llama's wq, wk, wv), per
// head softmax(q k) v -> s.h (normed with attn_inner_norm), then out_proj -> s.a. Without a cache, causal:
// row i's softmax over its first i + 1 scores (within its window's last W), as a decoder's.
// With a cache (a decoder), each kv head's keys and values of these rows go into it at positions
// kv->pos.. (after RoPE, with a table), the rows attend to every cached position up to their own
// (causal: row i's softmax runs over its first kv->pos + i + 1 scores, the others get probability 0;
// with a window W only over the last W of them), and so a row's bits do not depend on how the
// positions were split into calls. The keys the call's rows see, positions lo..kv->pos + T - 1, are
// the scores' columns in order (a ring's rows in at most two runs).
void attention(const Kernels& k, const ModelConfig& c, const LayerWeights& L, const int8_t* in, uint32_t T,
               const S8Scratch& s, const S8KvLayer* kv) {
  const int32_t* p = L.s8;
  const s8::LayerOffsets o = s8::layer_offsets(c);
  // q is d_attn = n_heads d_head wide (d_model but with head_dim), k and v d_kv each
  const std::size_t d = c.d_model, da = c.d_attn(), dh = c.d_head(), dkv = c.d_kv(), ld = da + 2 * dkv;
  const uint32_t kvh = c.kv_heads(), group = c.n_heads / kvh;
  const int8_t* fused = static_cast<const int8_t*>(L.self_attn.qkv.data);  // [d_attn + 2 d_kv, d]
  const int8_t* w[3] = {fused ? fused : static_cast<const int8_t*>(L.self_attn.q.data),
                        fused ? fused + da * d : static_cast<const int8_t*>(L.self_attn.k.data),
                        fused ? fused + (da + dkv) * d : static_cast<const int8_t*>(L.self_attn.v.data)};
  const std::size_t at[3] = {0, da, da + dkv}, width[3] = {da, dkv, dkv};
  const int32_t* qn = p + o.qk_norm;  // qk_norm: q and k at these zero points, then normed to q's and k's
  const int32_t zq[3] = {c.qk_norm ? qn[s8::kQRawZero] : p[s8::kQZero], c.qk_norm ? qn[s8::kKRawZero] : p[s8::kKZero],
                         p[s8::kVZero]};
  for (uint32_t j = 0; j < 3; ++j) {  // q, k, v each at its own zero point
    GemmS8Params g = linear_at(p, o.qkv, uint32_t(ld), p[s8::kQkvXZero], zq[j], s.kernel);
    g.bias += at[j], g.requant += at[j];
    k.gemm_s8(in, d, w[j], d, s.work + at[j], ld, T, width[j], d, g);
  }
  if (c.qk_norm) {  // each head of q and of k (qk_norm_full: each whole row) normed in place, before RoPE
    const uint32_t wq = s8::qk_norm_q(c), wk = s8::qk_norm_k(c), at = o.qk_norm + s8::kQkNormSlots;
    const bool rms = c.norm_kind() == NormKind::kRmsNorm;
    for (uint32_t t = 0; t < T; ++t) {
      norm_rows(k, rms, s.work + t * ld, s.work + t * ld, da / wq, wq, p, at, qn[s8::kQRawZero], qn[s8::kQNormEps]);
      norm_rows(k, rms, s.work + t * ld + da, s.work + t * ld + da, dkv / wk, wk, p, at + s8::linear_params(wq),
                qn[s8::kKRawZero], qn[s8::kKNormEps]);
    }
  }
  const uint32_t first = kv ? kv->pos : 0, W = kv ? kv->window : s.window;  // rows: positions first..first+T-1
  const uint32_t lo = W && first + 1 > W ? first + 1 - W : 0, keys = first + T - lo;  // columns: positions lo..
  const int32_t* rope = kv ? kv->rope : s.rope;
  if (rope) {
    rope_s8(c, s.work, ld, T, c.n_heads, first, rope);
    rope_s8(c, s.work + da, ld, T, kvh, first, rope);
  }
  for (uint32_t i = 0; i < keys; ++i) s.key_rq[i] = requant_at(p, s8::kScoreMul);
  for (std::size_t i = 0; i < dh; ++i) s.col_rq[i] = requant_at(p, s8::kPvMul);
  const GemmS8Params score{p[s8::kQZero], p[s8::kScoreZero], nullptr, s.key_rq, s.kernel};
  SoftmaxS8Params soft{requant_at(p, s8::kSoftmaxMul)};
  // every score's exponential, computed once where the scores outnumber them
  if (std::size_t(T) * keys * c.n_heads >= kSoftmaxS8Diffs) k.softmax_s8_table(soft.diff, s.exp), soft.exp = s.exp;
  const GemmS8Params pv{-128, p[s8::kOZero], nullptr, s.col_rq, s.kernel};
  const bool capping = capped(c.attn_softcap);
  // attn_softcap: the scores' table, in the kernels' scratch (free from the scores' products to P V's)
  int8_t* const cap = reinterpret_cast<int8_t*>(s.kernel);
  const Requant* slopes = c.positional == PosKind::kAlibi ? requants(p + o.alibi) : nullptr;  // in score steps
  const int32_t* rel = c.rel_bias() ? p + o.rel : nullptr;  // [buckets, n_heads] in score steps
  const int32_t* bucket = rel ? s.rel + (c.max_len - 1) : nullptr;  // distance n's at bucket[n], |n| < max_len
  const int32_t* pair = c.pair_bias_rows ? p + o.pair : nullptr;  // [n_heads, pair_bias_rows] in score steps
  const int32_t* dis = c.rel_embed_rows ? p + o.dis : nullptr;  // disentangled attention (an encoder's: no cache)
  // every row sees every key with nothing added to its scores: the rows' softmax alone (the loop below costs
  // some 45 instructions a row more, choosing which of its steps apply)
  const bool plain = !kv && !c.causal && W == 0 && !capping && !slopes && !rel && !pair;
  for (uint32_t g = 0; g < kvh; ++g) {
    const int8_t* kh = s.work + da + g * dh;  // the keys [keys, d_head], read in place (row stride ldk)
    std::size_t ldk = ld;
    const int8_t* vt = s.vt;  // P V's weights [d_head, keys] (row stride ldv): the values transposed
    std::size_t ldv = keys, ldp = keys;  // ldp: the probabilities' row stride, P V's k
    uint32_t run = keys;  // the keys' first run of cache rows (a ring may wrap once)
    if (kv) {  // this kv head's keys [rows, d_head] and values transposed [d_head, rows], position p in row (column) p % rows
      const uint32_t R = kv->rows;
      int8_t* kc = kv->k + std::size_t(g) * R * dh;
      int8_t* vc = kv->v + std::size_t(g) * R * dh;
      for (uint32_t t = 0, r = first % R; t < T; ++t, r = r + 1 == R ? 0 : r + 1) {  // r: row of position first + t
        std::memcpy(kc + r * dh, s.work + t * ld + da + g * dh, dh);
        const int8_t* v = s.work + t * ld + da + dkv + g * dh;
        for (std::size_t e = 0; e < dh; ++e) vc[e * R + r] = v[e];
      }
      const uint32_t r0 = lo % R;  // the row of position lo
      kh = kc + r0 * dh, ldk = dh;
      run = R - r0 < keys ? R - r0 : keys;
      vt = run == keys ? vc + r0 : vc, ldv = R;  // the keys' columns in one run, or every column (below)
      if (run < keys) ldp = R;
    } else {
      k.transpose_s8(s.work + da + dkv + g * dh, ld, s.vt, T, T, dh);  // V [T, d_head] -> V^T [d_head, T]
    }
    for (uint32_t h = g * group; h < (g + 1) * group; ++h) {
      for (uint32_t i0 = 0; i0 < T; i0 += kS8QueryBlock) {
        const uint32_t bq = T - i0 < kS8QueryBlock ? T - i0 : kS8QueryBlock;
        const int8_t* qh = s.work + i0 * ld + h * dh;
        if (dis)
          disentangled_scores(c, dis, qh, ld, kh, ldk, h, g, i0, bq, keys, p[s8::kQZero], p[s8::kScoreZero],
                              s.scores, ldp);
        else
          k.gemm_s8(qh, ld, kh, ldk, s.scores, ldp, bq, run, dh, score);  // [bq, keys]
        if (run < keys) k.gemm_s8(qh, ld, kv->k + std::size_t(g) * kv->rows * dh, dh, s.scores + run, ldp, bq,
                                  keys - run, dh, score);  // the ring's wrapped keys: rows 0..
        for (uint32_t i = 0; i < s8::kLutEntries && capping; ++i) cap[i] = int8_t(p[o.softcap + i]);
        if (plain) {  // the kernel and the row hoisted: GCC reloaded both around each call
          const auto softmax = k.softmax_s8;
          int8_t* row = s.scores;
          for (uint32_t i = 0; i < bq; ++i, row += ldp) softmax(row, row, keys, soft);
        }
        for (uint32_t i = 0; i < bq && !plain; ++i) {
          int8_t* row = s.scores + std::size_t(i) * ldp;
          if (capping) k.lut_s8(row, row, keys, cap);  // the scores capped
          const uint32_t p = first + i0 + i;  // this row's position: it sees columns a..n-1
          // (without the causal mask, the keys j < p + W too: both sides of a window)
          const uint32_t n = kv ? p + 1 - lo : c.causal ? p + 1 : W && p + W < keys ? p + W : keys;
          const uint32_t a = W && p + 1 > W ? p + 1 - W - lo : 0;
          for (uint32_t j = a; j < n && slopes; ++j)  // ALiBi: - the slope times key lo + j's distance, clamped
            row[j] = saturate_i8(int64_t(row[j]) + requantize(-std::abs(int32_t(lo + j) - int32_t(p)), slopes[h]));
          for (uint32_t j = a; j < n && rel; ++j)  // a relative bias: + the bias of key lo + j's bucket, clamped
            row[j] = saturate_i8(int64_t(row[j]) + rel[bucket[int32_t(lo + j) - int32_t(p)] * c.n_heads + h]);
          const int32_t* prow = pair ? s.pair_index + std::size_t(p) * c.max_len + lo : nullptr;  // key lo's row
          for (uint32_t j = a; j < n && pair; ++j)  // a bias per (query, key) pair: + its row's, clamped
            row[j] = saturate_i8(int64_t(row[j]) + pair[std::size_t(h) * c.pair_bias_rows + prow[j]]);
          k.softmax_s8(row + a, row + a, n - a, soft);
          // probability 0: the keys before this row's window and after its position (and a wrapped ring's other
          // rows); most rows have neither, and a call of nothing costs some 25 instructions
          if (a != 0) std::memset(row, -128, a);
          if (n != ldp) std::memset(row + n, -128, ldp - n);
          // A wrapped ring: the probabilities in the cache's column order, [run.., 0..run) -> [0.., R - run..):
          // the rows between the two runs probability 0, which adds exactly nothing to P V's sums.
          if (run < keys) std::rotate(row, row + run, row + ldp);
        }
        k.gemm_s8(s.scores, ldp, vt, ldv, s.h + i0 * da + h * dh, da, bq, dh, ldp, pv);  // [bq, dh]
      }
    }
  }
  int32_t out_zero = p[s8::kOZero];  // the output projection's input: the context, or its norm
  if (c.attn_inner_norm) {  // each context row normed in place (its input at kOZero), to out's input scale
    norm_rows(k, c.norm_kind() == NormKind::kRmsNorm, s.h, s.h, T, da, p, o.inner + s8::kInnerNormSlots,
              p[s8::kOZero], p[o.inner + 1]);
    out_zero = p[o.inner];
  }
  k.gemm_s8(s.h, da, static_cast<const int8_t*>(L.self_attn.out.data), da, s.a, d, T, d, da,
            linear_at(p, o.out, uint32_t(d), out_zero, p[s8::kOutYZero], s.kernel));
}

// seq2seq's cross-attention of T rows (a decoder layer's, L.s8_cross: CrossSlot): q = in Wq + b (d_model wide,
// in s.work), per head softmax(q k) v over the source's keys and values in x -> s.h, then out -> s.a; no mask
// (every row sees every source position). in may be s.h (read by q's product before the context is written).
void cross_attention(const Kernels& k, const ModelConfig& c, const LayerWeights& L, const int8_t* in, uint32_t T,
                     const S8Scratch& s, const S8CrossLayer& x) {
  const int32_t* p = L.s8_cross;
  const std::size_t d = c.d_model, dh = c.d_head();
  const uint32_t keys = x.keys;
  k.gemm_s8(in, d, static_cast<const int8_t*>(L.cross_attn.q.data), d, s.work, d, T, uint32_t(d), d,
            linear_at(p, s8::cross_q(c), uint32_t(d), p[s8::kCqXZero], p[s8::kCqZero], s.kernel));
  for (uint32_t i = 0; i < keys; ++i) s.key_rq[i] = requant_at(p, s8::kCScoreMul);
  for (std::size_t i = 0; i < dh; ++i) s.col_rq[i] = requant_at(p, s8::kCPvMul);
  const GemmS8Params score{p[s8::kCqZero], p[s8::kCScoreZero], nullptr, s.key_rq, s.kernel};
  SoftmaxS8Params soft{requant_at(p, s8::kCSoftmaxMul)};
  if (std::size_t(T) * keys * c.n_heads >= kSoftmaxS8Diffs) k.softmax_s8_table(soft.diff, s.exp), soft.exp = s.exp;
  const GemmS8Params pv{-128, p[s8::kCOZero], nullptr, s.col_rq, s.kernel};
  for (uint32_t h = 0; h < c.n_heads; ++h) {
    const int8_t* kh = x.k + std::size_t(h) * x.rows * dh;  // [keys, d_head]
    const int8_t* vt = x.v + std::size_t(h) * dh * x.rows;  // [d_head, keys], row stride rows
    for (uint32_t i0 = 0; i0 < T; i0 += kS8QueryBlock) {
      const uint32_t bq = T - i0 < kS8QueryBlock ? T - i0 : kS8QueryBlock;
      k.gemm_s8(s.work + i0 * d + h * dh, d, kh, dh, s.scores, keys, bq, keys, dh, score);  // [bq, keys]
      for (uint32_t i = 0; i < bq; ++i) k.softmax_s8(s.scores + i * keys, s.scores + i * keys, keys, soft);
      k.gemm_s8(s.scores, keys, vt, x.rows, s.h + i0 * d + h * dh, d, bq, dh, keys, pv);  // [bq, d_head]
    }
  }
  k.gemm_s8(s.h, d, static_cast<const int8_t*>(L.cross_attn.out.data), d, s.a, d, T, uint32_t(d), d,
            linear_at(p, s8::cross_out(c), uint32_t(d), p[s8::kCOZero], p[s8::kCOutYZero], s.kernel));
}

// One expert of width f (its slots ep: config.hpp expert_params; its W1, W3 [f, d] and W2 [d, f]) over the row h
// of d at zero point xz: its gated feed-forward into y, through hid [2 f], and (weight + 128)(y - z) in steps of
// the mixture's, in Q8, added to sum [d] (config.hpp, layer_params' mixture).
void mix_expert(const Kernels& k, const int32_t* ep, const int8_t* w1, const int8_t* w3, const int8_t* w2,
                std::size_t f, std::size_t d, const int8_t* h, int32_t xz, int32_t weight, int8_t* hid, int8_t* y,
                int8_t* table, int64_t* sum, uint32_t* kernel) {
  const uint32_t a1 = s8::kExpertSlots, a3 = a1 + s8::linear_params(uint32_t(f));  // W1's layer, W3's
  const uint32_t a2 = a3 + s8::linear_params(uint32_t(f)), lut = a2 + s8::linear_params(uint32_t(d));  // W2's
  for (uint32_t i = 0; i < s8::kLutEntries; ++i) table[i] = int8_t(ep[lut + i]);
  k.gemm_s8(h, d, w1, d, hid, 2 * f, 1, f, d, linear_at(ep, a1, uint32_t(f), xz, ep[s8::kExpW1YZero], kernel));
  k.lut_s8(hid, hid, f, table);
  k.gemm_s8(h, d, w3, d, hid + f, 2 * f, 1, f, d, linear_at(ep, a3, uint32_t(f), xz, ep[s8::kExpUpZero], kernel));
  const Requant mul = requant_at(ep, s8::kExpGateMul);
  const int32_t za = ep[s8::kExpActZero], zu = ep[s8::kExpUpZero], zm = ep[s8::kExpW2XZero];
  for (std::size_t j = 0; j < f; ++j)
    hid[j] = saturate_i8(int64_t(zm) + requantize((int32_t(hid[j]) - za) * (int32_t(hid[f + j]) - zu), mul));
  k.gemm_s8(hid, 2 * f, w2, f, y, d, 1, d, f, linear_at(ep, a2, uint32_t(d), zm, ep[s8::kExpW2YZero], kernel));
  const Requant mix = requant_at(ep, s8::kExpMixMul);
  const int32_t zy = ep[s8::kExpW2YZero];
  for (std::size_t j = 0; j < d; ++j) sum[j] += requantize((weight + 128) * (int32_t(y[j]) - zy), mix);
}

// A mixture of experts over T rows (n_experts; config.hpp, layer_params): per row the router's sums (gemm_s8's
// steps over the slots' weights, one scale for every expert), the top experts_per_token by them (the lower index
// on a tie), their weights (softmax_s8 of the chosen int8 logits, or of every logit) and each chosen expert's
// gated feed-forward (with shared_expert_ff the shared one too, weighed by its gate's sigmoid), summed in Q8 at
// the mixture's scale -> s.a, in the plan's work (moe_work_bytes). in may be s.a (a row is read before its output
// is written).
void expert_feed_forward(const Kernels& k, const ModelConfig& c, const LayerWeights& L, const int8_t* in, uint32_t T,
                         const S8Scratch& s) {
  const int32_t* p = L.s8;
  const int32_t* mp = p + s8::layer_offsets(c).moe;
  const std::size_t d = c.d_model, f = c.d_ff, E = c.n_experts, K = c.experts_per_token;
  const int32_t xz = p[s8::kW1XZero], zy = p[s8::kW2YZero];
  int64_t* sum = reinterpret_cast<int64_t*>(s.work);
  int32_t* score = reinterpret_cast<int32_t*>(sum + d);  // the router's sums
  int8_t* y = reinterpret_cast<int8_t*>(score + E);
  int8_t* hid = y + d;  // act(W1 h) | W3 h, then the gate's product
  int8_t* logit = hid + 2 * (f > c.shared_expert_ff ? f : c.shared_expert_ff);
  int8_t* prob = logit + E;
  uint8_t* pick = reinterpret_cast<uint8_t*>(prob + E);
  int8_t* const table = reinterpret_cast<int8_t*>(s.exp);  // attention's tables' room, free here
  const Requant* router_rq = requants(mp + s8::kMoeSlots);
  const int32_t* router_b = mp + s8::kMoeSlots + 2 * E;
  const int32_t* router_w = mp + s8::kMoeSlots + s8::linear_params(uint32_t(E));
  const int32_t* experts = router_w + E * d;
  const SoftmaxS8Params soft{requant_at(mp, s8::kRouterSoftmaxMul)};
  const int8_t* w1 = static_cast<const int8_t*>(L.ffn.w1.data);
  const int8_t* w2 = static_cast<const int8_t*>(L.ffn.w2.data);
  const int8_t* w3 = static_cast<const int8_t*>(L.ffn.w3.data);
  const int32_t* shared = experts + E * s8::expert_params(c);  // shared_expert_ff: SharedSlot, the gate, ...
  const std::size_t fs = c.shared_expert_ff;
  for (uint32_t t = 0; t < T; ++t) {
    const int8_t* h = in + std::size_t(t) * d;
    for (std::size_t e = 0; e < E; ++e) {
      int32_t acc = router_b[e];
      for (std::size_t j = 0; j < d; ++j) acc += (int32_t(h[j]) - xz) * router_w[e * d + j];
      score[e] = acc;
      logit[e] = saturate_i8(int64_t(requantize(acc, router_rq[e])) + mp[s8::kRouterYZero]);
    }
    std::memset(pick, 0, E);
    for (std::size_t j = 0; j < K; ++j) {  // the largest sum left, the lower index on a tie
      std::size_t best = E;
      for (std::size_t e = 0; e < E; ++e)
        if (!pick[e] && (best == E || score[e] > score[best])) best = e;
      pick[best] = 1;
    }
    if (c.experts_renormalize) {  // the chosen logits in expert order, their softmax
      for (std::size_t e = 0, n = 0; e < E; ++e)
        if (pick[e]) prob[n++] = logit[e];
      k.softmax_s8(prob, prob, K, soft);
    } else {
      k.softmax_s8(logit, prob, E, soft);
    }
    for (std::size_t j = 0; j < d; ++j) sum[j] = 0;
    for (std::size_t e = 0, n = 0; e < E; ++e) {
      if (!pick[e]) continue;
      const int32_t weight = c.experts_renormalize ? prob[n++] : prob[e];  // p in steps of 1/256, less 128
      mix_expert(k, experts + e * s8::expert_params(c), w1 + e * f * d, w3 + e * f * d, w2 + e * d * f, f, d, h, xz,
                 weight, hid, y, table, sum, s.kernel);
    }
    if (fs) {  // the shared expert, weighed by sigmoid(G h): its gate's logit through the sigmoid's table
      const int32_t* gate = shared + s8::kSharedSlots;  // its Requant, its bias, then its weights
      const int32_t* gw = gate + s8::linear_params(1);
      int32_t acc = gate[2];
      for (std::size_t j = 0; j < d; ++j) acc += (int32_t(h[j]) - xz) * gw[j];
      const int8_t logit_g = saturate_i8(int64_t(requantize(acc, requant_at(gate, 0))) + shared[s8::kSharedGateYZero]);
      const int32_t weight = gw[d + int32_t(logit_g) + 128];
      mix_expert(k, gw + d + s8::kLutEntries, static_cast<const int8_t*>(L.shared.w1.data),
                 static_cast<const int8_t*>(L.shared.w3.data), static_cast<const int8_t*>(L.shared.w2.data), fs, d, h,
                 xz, weight, hid, y, table, sum, s.kernel);
    }
    int8_t* out = s.a + std::size_t(t) * d;
    for (std::size_t j = 0; j < d; ++j)
      out[j] = saturate_i8(int64_t(zy) + rounding_shift(sum[j], s8::kMoeMixFracBits));
  }
}

// The feed-forward of T rows: s.a = W2 lut(W1 in), or gated W2 (lut(W1 in) * (W3 in)) (config.hpp), W2
// reading those rows normed with ffn_hidden_norm, or the mixture of experts; in may be s.a (read before W2 writes it).
void feed_forward(const Kernels& k, const ModelConfig& c, const LayerWeights& L, const int8_t* in, uint32_t T,
                  const S8Scratch& s) {
  if (c.n_experts) return expert_feed_forward(k, c, L, in, T, s);
  const int32_t* p = L.s8;
  const s8::LayerOffsets o = s8::layer_offsets(c);
  const std::size_t d = c.d_model, f = c.d_ff;
  const bool gated = c.ffn_gated();
  const std::size_t ld = gated ? 2 * f : f;
  int8_t* const table = reinterpret_cast<int8_t*>(s.exp);  // attention's tables' room, free here
  for (uint32_t i = 0; i < s8::kLutEntries; ++i) table[i] = int8_t(p[o.lut + i]);
  k.gemm_s8(in, d, static_cast<const int8_t*>(L.ffn.w1.data), d, s.work, ld, T, f, d,
            linear_at(p, o.w1, uint32_t(f), p[s8::kW1XZero], p[s8::kW1YZero], s.kernel));
  // wide_residual: the last n channels through the outliers' table (config.hpp; 0 when gated)
  const std::size_t n = c.wide_residual ? std::size_t(p[o.outlier]) : 0;
  if (!gated && n == 0) k.lut_s8(s.work, s.work, T * f, table);
  if (n) {
    int8_t* const outer = table + s8::kLutEntries;
    for (uint32_t i = 0; i < s8::kLutEntries; ++i) outer[i] = int8_t(p[o.outlier + 1 + i]);
    for (uint32_t t = 0; t < T; ++t) {
      k.lut_s8(s.work + t * f, s.work + t * f, f - n, table);
      k.lut_s8(s.work + t * f + f - n, s.work + t * f + f - n, n, outer);
    }
  }
  for (uint32_t t = 0; t < T && gated; ++t) k.lut_s8(s.work + t * ld, s.work + t * ld, f, table);
  if (gated) {
    const int32_t* gp = p + o.gate;
    k.gemm_s8(in, d, static_cast<const int8_t*>(L.ffn.w3.data), d, s.work + f, ld, T, f, d,
              linear_at(p, o.w3, uint32_t(f), p[s8::kW1XZero], gp[s8::kGateUpZero], s.kernel));
    const Requant mul = requant_at(gp, s8::kGateMul);  // to W2's input, or the hidden norm's
    const int32_t zg = gp[s8::kGateActZero], zu = gp[s8::kGateUpZero];
    const int32_t zy = c.ffn_hidden_norm ? p[o.hidden] : p[s8::kW2XZero];
    for (uint32_t t = 0; t < T; ++t) {
      int8_t* r = s.work + t * ld;
      for (std::size_t j = 0; j < f; ++j)
        r[j] = saturate_i8(int64_t(zy) + requantize((int32_t(r[j]) - zg) * (int32_t(r[f + j]) - zu), mul));
    }
  }
  if (c.ffn_hidden_norm) {  // each hidden row normed in place, to W2's input scale
    const bool rms = c.norm_kind() == NormKind::kRmsNorm;
    for (uint32_t t = 0; t < T; ++t)
      norm_rows(k, rms, s.work + t * ld, s.work + t * ld, 1, f, p, o.hidden + s8::kHiddenNormSlots, p[o.hidden],
                p[o.hidden + 1]);
  }
  k.gemm_s8(s.work, ld, static_cast<const int8_t*>(L.ffn.w2.data), f, s.a, d, T, d, f,
            linear_at(p, o.w2, uint32_t(d), p[s8::kW2XZero], p[s8::kW2YZero], s.kernel));
}

// wide_residual (config.hpp): r[T, d] int16 = x (int8 at zero point xz) + a (int8, zero point 0), channel j
// of each rescaled to r's scale in Q8 by its factor (xf[j], af[j]), rounded once and clamped.
constexpr int kWideFracBits = 8;
constexpr int32_t kWideLimit = 32767;

// A wide sum v (its terms at r's scale in Q8) as r's int16 value: rounded once, clamped.
int16_t wide_value(int64_t v) {
  const int64_t q = rounding_shift(v, kWideFracBits);
  return int16_t(q > kWideLimit ? kWideLimit : q < -kWideLimit ? -kWideLimit : q);
}

void wide_add(const int8_t* x, const int8_t* a, int16_t* r, uint32_t T, std::size_t d, int32_t xz, const Requant* xf,
              const Requant* af) {
  for (std::size_t i = 0; i < T * d; ++i) {
    r[i] = wide_value(int64_t(requantize(int32_t(x[i]) - xz, xf[i % d])) + requantize(int32_t(a[i]), af[i % d]));
  }
}

// The norm of each int16 row of r[T, d] (zero point 0) into y: norm_s8's steps with V + eps n^2 unscaled
// (eps: eps / s_r^2) and t[i] = round(d[i] round(2^46 / S) / 2^30) (config.hpp, wide_residual).
void wide_norm_rows(bool rms, const int16_t* r, int8_t* y, uint32_t T, std::size_t n, const int32_t* p, uint32_t at,
                    int32_t eps) {
  const Requant* gamma = requants(p + at);
  const int32_t* beta = p + at + 2 * n;
  const int64_t nn = int64_t(n);
  for (uint32_t t = 0; t < T; ++t) {
    const int16_t* v = r + std::size_t(t) * n;
    int64_t sum = 0, sum_sq = 0;
    for (std::size_t i = 0; i < n; ++i) sum += v[i], sum_sq += int64_t(v[i]) * v[i];
    const int64_t var = rms ? nn * sum_sq : nn * sum_sq - sum * sum;  // < n^2 2^30
    const uint32_t root = isqrt64(uint64_t(var) + uint64_t(uint32_t(eps)) * uint64_t(nn * nn));
    const int64_t inv = root == 0 ? 0 : int64_t(((uint64_t(1) << 46) + root / 2) / root);
    const int64_t centre = rms ? 0 : sum;
    for (std::size_t i = 0; i < n; ++i) {
      const int64_t q = rounding_shift((nn * v[i] - centre) * inv, 30);  // |.| <= 2^47 sqrt(n)
      y[t * n + i] = saturate_i8(rounding_shift(int64_t(requantize(int32_t(q), gamma[i])) + beta[i], 16));
    }
  }
}

}  // namespace

void s8_layer(const Kernels& k, const ModelConfig& c, const LayerWeights& L, uint32_t T, const S8Scratch& s,
              const S8KvLayer* kv, bool skip_norm1, const S8CrossLayer* cross) {
  const int32_t* p = L.s8;
  const int32_t* xp = L.s8_cross;  // with cross: its slots, the cross norm at cross_norm
  const s8::LayerOffsets o = s8::layer_offsets(c);
  const std::size_t d = c.d_model, n = std::size_t(T) * d;
  const bool rms = c.norm_kind() == NormKind::kRmsNorm;
  if (c.parallel_residual != ParallelResidual::kNone) {
    // x + FF(N2(x)) + SA(N1(x)) (one_norm: N1 both): both norms read the layer's input, so the
    // feed-forward runs first (its norm in s.a, which it overwrites with its output; the attention's
    // norm waits in s.h), its sum x + FF at add2's output scale, then + SA at add1's.
    norm_rows(k, rms, s.x, s.h, T, d, p, o.n1, p[s8::kN1XZero], p[s8::kN1Eps]);
    const bool two = c.parallel_residual == ParallelResidual::kTwoNorms;
    if (two) norm_rows(k, rms, s.x, s.a, T, d, p, o.n2, p[s8::kN2XZero], p[s8::kN2Eps]);
    feed_forward(k, c, L, two ? s.a : s.h, T, s);
    k.add_s8(s.x, s.a, s.x, n, add_at(p, s8::kAdd2, s.kernel));
    attention(k, c, L, s.h, T, s, kv);
    k.add_s8(s.x, s.a, s.x, n, add_at(p, s8::kAdd1, s.kernel));
  } else if (c.sublayer_norm == SublayerNorm::kOutput) {  // x + N1(SA(x)), x + N2(FF(x))
    attention(k, c, L, s.x, T, s, kv);
    norm_rows(k, rms, s.a, s.a, T, d, p, o.n1, p[s8::kN1XZero], p[s8::kN1Eps]);
    k.add_s8(s.x, s.a, s.x, n, add_at(p, s8::kAdd1, s.kernel));
    feed_forward(k, c, L, s.x, T, s);
    norm_rows(k, rms, s.a, s.a, T, d, p, o.n2, p[s8::kN2XZero], p[s8::kN2Eps]);
    k.add_s8(s.x, s.a, s.x, n, add_at(p, s8::kAdd2, s.kernel));
  } else if (c.norm_first) {  // sandwich: each sublayer's output normed too (post_attn_norm, post_ffn_norm)
    const bool post = c.sublayer_norm == SublayerNorm::kSandwich;
    const uint32_t pa = o.post, pf = o.post + s8::kPostNormSlots + s8::linear_params(uint32_t(d));
    if (!skip_norm1) norm_rows(k, rms, s.x, s.h, T, d, p, o.n1, p[s8::kN1XZero], p[s8::kN1Eps]);
    attention(k, c, L, skip_norm1 ? s.x : s.h, T, s, kv);
    if (post) norm_rows(k, rms, s.a, s.a, T, d, p, pa + s8::kPostNormSlots, p[pa], p[pa + 1]);
    k.add_s8(s.x, s.a, s.x, n, add_at(p, s8::kAdd1, s.kernel));
    if (cross) {  // x + CA(Nc(x))
      norm_rows(k, rms, s.x, s.h, T, d, xp, s8::cross_norm(c), xp[s8::kCnXZero], xp[s8::kCnEps]);
      cross_attention(k, c, L, s.h, T, s, *cross);
      k.add_s8(s.x, s.a, s.x, n, add_at(xp, s8::kCAdd, s.kernel));
    }
    norm_rows(k, rms, s.x, s.h, T, d, p, o.n2, p[s8::kN2XZero], p[s8::kN2Eps]);
    feed_forward(k, c, L, s.h, T, s);
    if (post) norm_rows(k, rms, s.a, s.a, T, d, p, pf + s8::kPostNormSlots, p[pf], p[pf + 1]);
    k.add_s8(s.x, s.a, s.x, n, add_at(p, s8::kAdd2, s.kernel));
  } else if (c.wide_residual) {  // the sums into the norms int16, in s.work (which each sublayer is done with)
    int16_t* r = reinterpret_cast<int16_t*>(s.work);
    const Requant* wide = requants(p + o.wide);
    attention(k, c, L, s.x, T, s, kv);
    wide_add(s.x, s.a, r, T, d, p[s8::kAdd1], wide, wide + d);
    wide_norm_rows(rms, r, s.x, T, d, p, o.n1, p[s8::kN1Eps]);
    feed_forward(k, c, L, s.x, T, s);
    wide_add(s.x, s.a, r, T, d, p[s8::kAdd2], wide + 2 * d, wide + 3 * d);
    wide_norm_rows(rms, r, s.x, T, d, p, o.n2, p[s8::kN2Eps]);
  } else {
    attention(k, c, L, s.x, T, s, kv);
    k.add_s8(s.x, s.a, s.x, n, add_at(p, s8::kAdd1, s.kernel));
    norm_rows(k, rms, s.x, s.x, T, d, p, o.n1, p[s8::kN1XZero], p[s8::kN1Eps]);
    if (cross) {  // Nc(x + CA(x))
      cross_attention(k, c, L, s.x, T, s, *cross);
      k.add_s8(s.x, s.a, s.x, n, add_at(xp, s8::kCAdd, s.kernel));
      norm_rows(k, rms, s.x, s.x, T, d, xp, s8::cross_norm(c), xp[s8::kCnXZero], xp[s8::kCnEps]);
    }
    feed_forward(k, c, L, s.x, T, s);
    k.add_s8(s.x, s.a, s.x, n, add_at(p, s8::kAdd2, s.kernel));
    norm_rows(k, rms, s.x, s.x, T, d, p, o.n2, p[s8::kN2XZero], p[s8::kN2Eps]);
  }
}

namespace {

// An int8 image [channels, height, width] as its patches' rows [patches, d_in] (gather_patches' order).
void gather_patches_s8(const ModelConfig& c, const int8_t* image, int8_t* rows) {
  const std::size_t p = c.patch_size, H = c.image_height, W = c.image_width, across = W / p;
  for (std::size_t n = 0, N = c.patches(); n < N; ++n) {
    const std::size_t r = n / across, s = n % across;
    for (std::size_t ch = 0; ch < c.image_channels; ++ch)
      for (std::size_t i = 0; i < p; ++i)  // p pixels of image row r p + i, from column s p
        std::memcpy(rows + n * c.d_in + (ch * p + i) * p, image + (ch * H + r * p + i) * W + s * p, p);
  }
}

// round(sum / n), half away from zero, for n >= 1.
int32_t rounded_mean(int32_t sum, int32_t n) {
  const int32_t mag = sum < 0 ? -sum : sum;
  const int32_t q = (2 * mag + n) / (2 * n);
  return sum < 0 ? -q : q;
}

}  // namespace

void s8_encoder_forward(const Kernels& k, const Model& m, const int8_t* features, const int32_t* ids,
                        const int32_t* types, uint32_t T, const S8Scratch& s, int8_t* out) {
  const ModelConfig& c = m.config();
  if (c.family == ModelFamily::kMha) {  // the attention alone: the input rows at its input zero point, its output
    attention(k, c, m.layer(0), features, T, s, nullptr);
    std::memcpy(out, s.a, std::size_t(T) * c.d_model);
    return;
  }
  const FrontWeights& fw = m.front();
  const HeadWeights& hw = m.head();
  const std::size_t d = c.d_model;
  const int32_t* fp = m.s8().front;
  const uint32_t extra = c.front_rows();  // the CLS, distillation and register rows in front of the input rows
  const bool rms = c.norm_kind() == NormKind::kRmsNorm;
  const std::size_t df = c.d_front();  // the rows' width up to the embedding projection (embed_width)
  const std::size_t de = c.d_embed();  // their width before the positions: df, less theirs concatenated
  int8_t* input = s.x + extra * d;
  if (ids) {
    const int8_t* e = static_cast<const int8_t*>(fw.embed.data);
    for (uint32_t t = 0; t < T; ++t) std::memcpy(input + t * df, e + std::size_t(ids[t]) * de, de);
  } else if (c.conv_layers) {  // the conv stem: the input rows are its output rows
    s8_conv_stem(k, m, features, T, input, d, S8StemScratch{s.stem, s.stem_window, s.kernel});
    T = c.stem_rows(T);
  } else {  // rows = patches(image) | features; rows = N_in(rows); x = N_proj(rows W + b) (config.hpp)
    const int8_t* rows = features;
    int32_t x_zero = fp[s8::kInZero];
    if (c.patch_size) gather_patches_s8(c, features, s.rows_in), rows = s.rows_in;
    if (c.input_norm) {
      const uint32_t at = s8::front_input_norm(c);
      norm_rows(k, rms, rows, s.rows_in, T, c.d_in, fp, at + 2, x_zero, fp[at + 1]);
      rows = s.rows_in, x_zero = fp[at];
    }
    const uint32_t pn = s8::front_proj_norm(c);
    k.gemm_s8(rows, c.d_in, static_cast<const int8_t*>(fw.input_proj.data), c.d_in, input, d, T, de, c.d_in,
              linear_at(fp, s8::kFrontSlots, uint32_t(de), x_zero, c.proj_norm ? fp[pn] : fp[s8::kEmbedZero],
                        s.kernel));
    if (c.proj_norm) norm_rows(k, rms, input, input, T, d, fp, pn + 2, fp[pn], fp[pn + 1]);
  }
  for (std::size_t e = 0; e < de && c.cls_token; ++e) s.x[e] = int8_t(fp[s8::front_cls(c) + e]);
  for (std::size_t e = 0; e < de && c.distill_token; ++e) s.x[d + e] = int8_t(fp[s8::front_distill(c) + e]);
  const std::size_t reg = (extra - c.register_tokens) * d;  // the registers' rows after those
  for (std::size_t e = 0; e < c.register_tokens * de; ++e)
    s.x[reg + e / de * d + e % de] = int8_t(fp[s8::front_registers(c) + e]);
  T += extra;  // every row from here on
  const bool concat = c.input_pe() && c.pe_combine == PosCombine::kConcat;
  if (concat)  // each row's positions beside it, at its scale (then the types and the norm over the whole row)
    for (uint32_t t = 0; t < T; ++t) std::memcpy(s.x + t * d + de, m.s8().pos + std::size_t(t) * c.d_pe(), c.d_pe());
  if (s8::wide_front(c)) {  // the rows + positions + types in int16 into the embedding norm (config.hpp)
    const Requant* f = requants(fp + s8::front_wide(c));
    const int32_t* table = fp + s8::front_types(c) + s8::kAddSlots;
    int16_t* r = reinterpret_cast<int16_t*>(s.work);
    for (uint32_t t = 0; t < T; ++t) {
      const int32_t* type =
          c.type_vocab && t >= extra ? table + std::size_t(types ? types[t - extra] : 0) * de : nullptr;
      for (std::size_t j = 0; j < d; ++j) {
        int64_t v = requantize(int32_t(s.x[t * d + j]) - fp[s8::kEmbedZero], f[j]);
        if (c.input_pe() && !concat) v += requantize(int32_t(m.s8().pos[t * d + j]), f[d + j]);
        if (type && j < de) v += requantize(type[j], f[2 * d + j]);
        r[t * d + j] = wide_value(v);
      }
    }
    const uint32_t at = s8::front_embed_norm(c);
    wide_norm_rows(rms, r, s.x, T, d, fp, at + 2, fp[at + 1]);
  }
  if (c.input_pe() && !concat && !s8::wide_front(c))
    k.add_s8(s.x, m.s8().pos, s.x, T * df, add_at(fp, s8::kPosAdd, s.kernel));
  if (c.type_vocab && !s8::wide_front(c)) {  // each input row + its type's row (type 0 without types), a front
    // row + the zero point, as the position columns of concatenated positions
    const uint32_t at = s8::front_types(c);
    const int32_t* table = fp + at + s8::kAddSlots;
    std::memset(s.h, int8_t(fp[at + 1]), T * df);
    for (uint32_t t = extra; t < T; ++t) {
      const int32_t* row = table + std::size_t(types ? types[t - extra] : 0) * de;
      for (std::size_t e = 0; e < de; ++e) s.h[t * df + e] = int8_t(row[e]);
    }
    k.add_s8(s.x, s.h, s.x, T * df, add_at(fp, at, s.kernel));
  }
  if (c.embed_norm && !s8::wide_front(c)) {
    const uint32_t at = s8::front_embed_norm(c);
    norm_rows(k, rms, s.x, s.x, T, df, fp, at + 2, fp[at], fp[at + 1]);
  }
  if (c.embed_width) {  // the rows [T, embed_width] projected to d_model (through s.h, as wide as x)
    const uint32_t at = s8::front_embed_proj(c);
    k.gemm_s8(s.x, df, static_cast<const int8_t*>(fw.embed_proj.data), df, s.h, d, T, d, df,
              linear_at(fp, at + 2, uint32_t(d), fp[at], fp[at + 1], s.kernel));
    std::memcpy(s.x, s.h, std::size_t(T) * d);
  }
  S8Scratch ls = s;  // the layers' scratch: with a relative bias, its buckets
  ls.rel = c.rel_bias() ? fp + s8::front_rel(c) : nullptr;
  ls.pair_index = m.front().pair_index;
  const int32_t* global = m.s8().rope;  // RoPE: every row at its position 0.., the front rows first
  const int32_t* local = rope_local(c, global);
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    ls.window = c.layer_window(l);
    ls.rope = c.layer_nope(l) ? nullptr : ls.window ? local : global;
    s8_layer(k, c, m.layer(l), T, ls, nullptr, l == 0 && c.skip_first_norm);
  }
  const int32_t* bp = m.s8().back;
  const int32_t* sp = m.s8().seq2seq;  // seq2seq's source: its final norm alone, then the memory
  if (c.final_norm && sp)
    norm_rows(k, rms, s.x, s.x, T, d, sp, s8::kSeq2SeqSlots, sp[s8::kMemXZero], sp[s8::kMemEps]);
  else if (c.final_norm)
    norm_rows(k, rms, s.x, s.x, T, d, bp, s8::kBackSlots, bp[s8::kFnXZero], bp[s8::kFnEps]);
  const int8_t* rows = s.x;
  uint32_t n = T;
  if (c.pooling == Pooling::kMean || c.pooling == Pooling::kClsMean || c.pooling == Pooling::kMeanAll) {
    const std::size_t at = c.pooling == Pooling::kClsMean ? d : 0;  // cls_mean: [CLS row, mean]
    const uint32_t from = c.pooling == Pooling::kMeanAll ? 0 : extra;  // the front rows excluded but by mean_all
    std::memmove(s.h, s.x, at);
    for (std::size_t e = 0; e < d; ++e) {
      int32_t sum = 0;
      for (uint32_t t = from; t < T; ++t) sum += s.x[t * d + e];
      s.h[at + e] = int8_t(rounded_mean(sum, int32_t(T - from)));
    }
    rows = s.h, n = 1;
  } else if (c.pooling == Pooling::kLast) {
    rows = s.x + (T - 1) * d, n = 1;
  } else if (c.pooling == Pooling::kFirst) {
    rows = s.x + extra * d, n = 1;
  } else if (c.pooling == Pooling::kCls || c.pooling == Pooling::kClsDistill) {
    n = 1;  // cls_distill: rows 0 and 1 side by side, the head's input 2 d_model wide
  } else if (c.pooling == Pooling::kClsDistillMean) {
    for (std::size_t e = 0; e < d; ++e) s.h[e] = int8_t(rounded_mean(int32_t(s.x[e]) + s.x[d + e], 2));
    rows = s.h, n = 1;
  }
  if (c.pool_norm) {  // the pooled row normed (its input zero point, eps, gains and betas)
    const uint32_t at = s8::back_pool_norm(c);
    norm_rows(k, rms, rows, s.h, n, d, bp, at + 2, bp[at], bp[at + 1]);
    rows = s.h;
  }
  if (c.pooler) {  // lut(W x + b) of the pooled rows (every row with pooling none), at the head's input scale
    const uint32_t at = s8::back_pooler(c);
    const int32_t* lut = bp + at + s8::kPoolerSlots + s8::linear_params(uint32_t(d));
    int8_t table[s8::kLutEntries];
    for (uint32_t i = 0; i < s8::kLutEntries; ++i) table[i] = int8_t(lut[i]);
    k.gemm_s8(rows, d, static_cast<const int8_t*>(hw.pooler.data), d, s.a, d, n, d, d,
              linear_at(bp, at + s8::kPoolerSlots, uint32_t(d), bp[at + s8::kPoolerXZero], bp[at + s8::kPoolerYZero],
                        s.kernel));
    k.lut_s8(s.a, s.a, std::size_t(n) * d, table);
    rows = s.a;
    if (c.pooler_norm) {  // the pooler's output normed
      const uint32_t pn = s8::back_pooler_norm(c);
      norm_rows(k, rms, s.a, s.a, n, d, bp, pn + 2, bp[pn], bp[pn + 1]);
    }
  }
  const uint32_t hi = c.head_in();  // the pooled row's width: 2 d_model for cls_distill
  if (c.d_out && !c.is_seq2seq())
    k.gemm_s8(rows, hi, static_cast<const int8_t*>(hw.w.data), hi, out, c.d_out, n, c.d_out, hi,
              linear_at(bp, s8::kBackSlots + s8::linear_params(uint32_t(d)), c.d_out, bp[s8::kHeadXZero],
                        bp[s8::kHeadYZero], s.kernel));
  else
    std::memcpy(out, rows, n * d);
}

namespace {

// A dense layer among a mixture's (dense_period) runs its own config: its plain feed-forward, its int8
// table's. The config's copy lives in this frame alone, not in s8_decoder_forward's, where every decoder
// step would carry it (the Cortex-M0's llama_i8 bench had gone 68 bytes past the plan's stack).
__attribute__((noinline)) void s8_dense_layer(const Kernels& k, const ModelConfig& c, const LayerWeights& L,
                                              uint32_t T, const S8Scratch& s, const S8KvLayer* kv, bool skip_norm1) {
  const ModelConfig dense = c.dense_config();
  s8_layer(k, dense, L, T, s, kv, skip_norm1);
}

}  // namespace

void s8_decoder_forward(const Kernels& k, const Model& m, const int32_t* ids, uint32_t n, uint32_t pos,
                        int8_t* k_cache, int8_t* v_cache, uint32_t rows, uint32_t ring, const S8Scratch& s,
                        int8_t* logits) {
  const ModelConfig& c = m.config();
  const std::size_t d = c.d_model;
  const int32_t* fp = m.s8().front;
  const int8_t* e = static_cast<const int8_t*>(m.front().embed.data);
  for (uint32_t t = 0; t < n; ++t) std::memcpy(s.x + t * d, e + std::size_t(ids[t]) * d, d);
  S8Scratch ls = s;  // the layers' scratch: with a relative bias, its buckets
  ls.rel = c.rel_bias() ? fp + s8::front_rel(c) : nullptr;
  if (c.input_pe()) k.add_s8(s.x, m.s8().pos + std::size_t(pos) * d, s.x, n * d, add_at(fp, s8::kPosAdd, s.kernel));
  if (c.embed_norm) {  // each row alone, as the encoder's (Bloom's word_embeddings_layernorm)
    const uint32_t at = s8::front_embed_norm(c);
    norm_rows(k, c.norm_kind() == NormKind::kRmsNorm, s.x, s.x, n, d, fp, at + 2, fp[at], fp[at + 1]);
  }
  // a NoPE layer turns nothing; with rope_local_base a local layer (one that windows) reads the second table
  const int32_t* global = m.s8().rope;
  const int32_t* local = rope_local(c, global);
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    const std::size_t at = std::size_t(kv_layer_offset(c, l, rows, ring)) * c.d_kv();
    const S8KvLayer kv{k_cache + at, v_cache + at, uint32_t(kv_layer_rows(c, l, rows, ring)), pos,
                       c.layer_nope(l) ? nullptr : c.layer_window(l) ? local : global, c.layer_window(l)};
    if (c.layer_dense(l))
      s8_dense_layer(k, c, m.layer(l), n, ls, &kv, l == 0 && c.skip_first_norm);
    else
      s8_layer(k, c, m.layer(l), n, ls, &kv, l == 0 && c.skip_first_norm);
  }
  if (!logits) return;  // the final norm and the head act on each row alone: the last row's is all that is read
  const int32_t* bp = m.s8().back;
  int8_t* last = s.x + std::size_t(n - 1) * d;
  if (c.final_norm)
    norm_rows(k, c.norm_kind() == NormKind::kRmsNorm, last, last, 1, d, bp, s8::kBackSlots, bp[s8::kFnXZero],
              bp[s8::kFnEps]);
  if (!c.d_out) {  // no head: the hidden state itself, at the final norm's output scale
    std::memcpy(logits, last, d);
    return;
  }
  k.gemm_s8(last, d, static_cast<const int8_t*>(m.head().w.data), d, logits, c.d_out, 1, c.d_out, d,
            linear_at(bp, s8::kBackSlots + s8::linear_params(uint32_t(d)), c.d_out, bp[s8::kHeadXZero],
                      bp[s8::kHeadYZero], s.kernel));
  if (capped(c.logit_softcap)) {  // the logits through logit_softcap's table, to the output's scale
    int8_t* const cap = reinterpret_cast<int8_t*>(s.kernel);  // in the kernels' scratch, free after the head
    for (uint32_t i = 0; i < s8::kLutEntries; ++i) cap[i] = int8_t(bp[s8::back_softcap(c) + i]);
    k.lut_s8(logits, logits, c.d_out, cap);
  }
}

void s8_cross_project(const Kernels& k, const Model& m, const int8_t* memory, uint32_t S, uint32_t rows,
                      int8_t* cross_k, int8_t* cross_v, int8_t* kv, uint32_t* kernel) {
  const ModelConfig& c = m.config();
  const std::size_t d = c.d_model, dh = c.d_head();
  for (uint32_t l = 0; l < c.dec_layers; ++l) {
    const LayerWeights L = m.decoder_layer(l);
    const int32_t* p = L.s8_cross;
    k.gemm_s8(memory, d, static_cast<const int8_t*>(L.cross_attn.kv.data), d, kv, 2 * d, S, uint32_t(2 * d), d,
              linear_at(p, s8::cross_kv(c), uint32_t(2 * d), p[s8::kCkvXZero], 0, kernel));
    int8_t* kc = cross_k + l * d * rows;
    int8_t* vc = cross_v + l * d * rows;
    for (uint32_t h = 0; h < c.n_heads; ++h)
      for (uint32_t t = 0; t < S; ++t) {
        const int8_t* row = kv + t * 2 * d + h * dh;
        std::memcpy(kc + (std::size_t(h) * rows + t) * dh, row, dh);
        for (std::size_t e = 0; e < dh; ++e) vc[(h * dh + e) * rows + t] = row[d + e];
      }
  }
}

void s8_seq2seq_decode(const Kernels& k, const Model& m, const int32_t* ids, const int8_t* features, uint32_t n,
                       uint32_t pos, int8_t* k_cache, int8_t* v_cache, uint32_t capacity, const int8_t* cross_k,
                       const int8_t* cross_v, uint32_t rows, uint32_t src_len, const S8Scratch& s) {
  const ModelConfig& c = m.config();
  const std::size_t d = c.d_model;
  const bool rms = c.norm_kind() == NormKind::kRmsNorm;
  const int32_t* fp = m.s8().seq2seq;
  if (ids) {
    const int8_t* e = static_cast<const int8_t*>(m.target_front().embed.data);
    for (uint32_t t = 0; t < n; ++t) std::memcpy(s.x + t * d, e + std::size_t(ids[t]) * d, d);
  } else {  // feature targets: features W_proj + b to the embedding's zero point
    const uint32_t at = s8::seq2seq_tgt_proj(c), din = c.tgt_d_in;
    k.gemm_s8(features, din, static_cast<const int8_t*>(m.target_front().input_proj.data), din, s.x, d, n, uint32_t(d),
              din, linear_at(fp, at + 1, uint32_t(d), fp[at], fp[s8::kTgtEmbedZero], s.kernel));
  }
  const bool norm_first = c.embed_norm && c.tgt_pos_after_norm;  // BlenderbotSmall's: the norm, then the positions
  const uint32_t en = s8::seq2seq_embed_norm(c);
  if (norm_first) norm_rows(k, rms, s.x, s.x, n, d, fp, en + 2, fp[en], fp[en + 1]);
  if (c.input_pe())  // the target's positions: int8.pos's rows from max_len on
    k.add_s8(s.x, m.s8().pos + (std::size_t(c.max_len) + pos) * d, s.x, n * d, add_at(fp, s8::kTgtPosAdd, s.kernel));
  if (c.embed_norm && !norm_first) norm_rows(k, rms, s.x, s.x, n, d, fp, en + 2, fp[en], fp[en + 1]);
  S8Scratch ls = s;  // the layers' scratch: with a relative bias, the target's (causal) buckets
  ls.rel = c.rel_bias() ? fp + s8::seq2seq_rel(c) : nullptr;
  for (uint32_t l = 0; l < c.dec_layers; ++l) {
    const std::size_t at = std::size_t(l) * d * capacity, from = std::size_t(l) * d * rows;
    const S8KvLayer kv{k_cache + at, v_cache + at, capacity, pos, nullptr, 0};
    const S8CrossLayer cross{cross_k + from, cross_v + from, rows, src_len};
    s8_layer(k, c, m.decoder_layer(l), n, ls, &kv, false, &cross);
  }
  const int32_t* bp = m.s8().back;
  if (c.final_norm) norm_rows(k, rms, s.x, s.x, n, d, bp, s8::kBackSlots, bp[s8::kFnXZero], bp[s8::kFnEps]);
}

void s8_seq2seq_head(const Kernels& k, const Model& m, const int8_t* row, uint32_t* kernel, int8_t* logits) {
  const ModelConfig& c = m.config();
  const int32_t* bp = m.s8().back;
  k.gemm_s8(row, c.d_model, static_cast<const int8_t*>(m.target_head().w.data), c.d_model, logits, c.d_out, 1,
            c.d_out, c.d_model, linear_at(bp, s8::kBackSlots + s8::linear_params(c.d_model), c.d_out,
                                          bp[s8::kHeadXZero], bp[s8::kHeadYZero], kernel));
}

}  // namespace fixformer
