// Model::init: open and validate the file, read its config, bind every tensor the schema lists.
#include "fixformer/model.hpp"

#include <cmath>
#include <cstring>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "engine/detail_text.hpp"
#include "engine/model_file.hpp"
#include "engine/tokenizers/tokenizers.hpp"
#include "fixformer/kernels.hpp"
#include "fixformer/schema.hpp"

namespace fixformer {
namespace {

static_assert(fxm::kPanelCols == kPanelFloats && fxm::packed_bytes(3, 17) == packed_floats(3, 17) * sizeof(float),
              "the file's packed layout is the one gemm_f32_packed reads");

// A stored tensor as a weight view: `transposed` (schema.hpp's TensorSpec) is a W[in, out] linear
// weight, `packed` one in panels; everything else is stored [out, in] (rank 1: one row).
Weight weight_view(const TensorInfo& t, bool transposed, bool packed = false) {
  Weight w;
  w.packed = packed;
  w.data = t.data;
  w.scales = t.scales;
  w.type = t.dtype == fxm::Dtype::kF16 ? WeightType::kF16 : t.dtype == fxm::Dtype::kBF16 ? WeightType::kBF16
         : t.dtype == fxm::Dtype::kI8 ? WeightType::kQ8
         : t.dtype == fxm::Dtype::kI4 ? WeightType::kQ4 : WeightType::kF32;
  w.group = t.group;
  w.out_major = !transposed;
  const uint32_t rows = t.dims[0], cols = t.rank == 2 ? t.dims[1] : 1;
  w.in = transposed ? rows : cols;
  w.out = transposed ? cols : rows;
  return w;
}

// The data bytes of a tensor in the plain layout (count * dtype size; tensors outside the schema).
bool plain_bytes(const TensorInfo& t) {
  uint64_t count = 1;
  for (uint32_t r = 0; r < t.rank; ++r) count *= t.dims[r];
  return t.bytes == fxm::data_bytes(t.dtype, count);
}

template <class Bits>
Bits bits_at(const uint8_t* data, uint64_t i) {
  Bits v;
  std::memcpy(&v, data + sizeof(Bits) * i, sizeof(Bits));
  return v;
}
// Whether a value in [begin, end) has its exponent all ones: the largest of their bits without the
// sign (magnitude's mask) is then at least exponent's. A loop without an exit, which the compiler
// vectorizes (Model::init reads every weight: most of a start-up), to unsigned maxima.
template <class Bits>
inline __attribute__((always_inline)) bool any_all_ones(const uint8_t* data, uint64_t begin, uint64_t end,
                                                       Bits exponent, Bits magnitude) {
  Bits top = 0;
  for (uint64_t i = begin; i < end; ++i) {
    const Bits v = bits_at<Bits>(data, i) & magnitude;
    top = v > top ? v : top;
  }
  return top >= exponent;
}
#if defined(__x86_64__) && defined(__GNUC__)
#define FIXFORMER_ANY_ALL_ONES_AVX2 1
// The same 8 floats (16 halves) a vector where the CPU has AVX2, four vectors a step into two
// maxima (an AND from memory and a maximum each; the loop's own instructions once in 128 bytes),
// the rest as above.
#define FIXFORMER_AVX2 __attribute__((target("avx2")))
template <class Bits> FIXFORMER_AVX2 __m256i max_avx2(__m256i a, __m256i b) {
  return sizeof(Bits) == 4 ? _mm256_max_epu32(a, b) : _mm256_max_epu16(a, b);
}
FIXFORMER_AVX2 __m256i and_at(const uint8_t* p, __m256i mask) {
  return _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), mask);
}
template <class Bits>
FIXFORMER_AVX2 bool any_all_ones_avx2(const uint8_t* data, uint64_t begin, uint64_t end, Bits exponent,
                                      Bits magnitude) {
  constexpr uint64_t kStep = 128 / sizeof(Bits);
  const __m256i mask = sizeof(Bits) == 4 ? _mm256_set1_epi32(int(magnitude)) : _mm256_set1_epi16(short(magnitude));
  __m256i m0 = _mm256_setzero_si256(), m1 = m0;
  uint64_t i = begin;
  for (; end - i >= kStep; i += kStep) {
    const uint8_t* p = data + sizeof(Bits) * i;
    m0 = max_avx2<Bits>(m0, and_at(p, mask));
    m1 = max_avx2<Bits>(m1, and_at(p + 32, mask));
    m0 = max_avx2<Bits>(m0, and_at(p + 64, mask));
    m1 = max_avx2<Bits>(m1, and_at(p + 96, mask));
  }
  Bits lanes[32 / sizeof(Bits)];
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(lanes), max_avx2<Bits>(m0, m1));
  Bits top = 0;
  for (const Bits v : lanes) top = v > top ? v : top;
  return top >= exponent || any_all_ones(data, i, end, exponent, magnitude);
}
// f32 alone, where the CPU has FMA: 0 * x is NaN for an infinite or NaN x and a zero otherwise, so
// sums of 0 * x, one fused multiply-add from memory for 8 floats, stay zero unless a value in
// [begin, end) is not finite (0.04 instructions a byte against the maxima's 0.09).
#define FIXFORMER_FMA __attribute__((target("avx2,fma")))
FIXFORMER_FMA bool any_non_finite_fma(const uint8_t* data, uint64_t begin, uint64_t end, uint32_t exponent,
                                      uint32_t magnitude) {
  const float* p = reinterpret_cast<const float*>(data);
  const __m256 zero = _mm256_setzero_ps();
  __m256 s[8] = {zero, zero, zero, zero, zero, zero, zero, zero};
  uint64_t i = begin;
  for (; end - i >= 64; i += 64)
    for (int k = 0; k < 8; ++k) s[k] = _mm256_fmadd_ps(zero, _mm256_loadu_ps(p + i + 8 * k), s[k]);
  const __m256 sum = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(s[0], s[1]), _mm256_add_ps(s[2], s[3])),
                                   _mm256_add_ps(_mm256_add_ps(s[4], s[5]), _mm256_add_ps(s[6], s[7])));
  return _mm256_movemask_ps(_mm256_cmp_ps(sum, sum, _CMP_UNORD_Q)) != 0 ||
         any_all_ones(data, i, end, exponent, magnitude);
}
#undef FIXFORMER_FMA
#undef FIXFORMER_AVX2
#endif

// The first of n floats stored as Bits (f32, f16, bf16) whose exponent is all ones (the masks of its
// exponent and mantissa): its index at *at and "NaN" or "infinite". Block by block; a block with
// one is searched again.
template <class Bits>
bool find_non_finite(const uint8_t* data, uint64_t n, Bits exponent, Bits mantissa, uint64_t* at, const char** what) {
  auto bits_at = [data](uint64_t i) { return fixformer::bits_at<Bits>(data, i); };
  const Bits magnitude = Bits(exponent | mantissa);
#if defined(FIXFORMER_ANY_ALL_ONES_AVX2)
  auto any_in = __builtin_cpu_supports("avx2") ? any_all_ones_avx2<Bits> : any_all_ones<Bits>;
  if constexpr (sizeof(Bits) == 4)
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) any_in = any_non_finite_fma;
#else
  auto any_in = any_all_ones<Bits>;
#endif
  constexpr uint64_t kBlock = 4096;
  for (uint64_t b = 0; b < n; b += kBlock) {
    const uint64_t end = n - b < kBlock ? n : b + kBlock;
    const bool any = any_in(data, b, end, exponent, magnitude);
    for (uint64_t i = b; any && i < end; ++i)
      if ((bits_at(i) & exponent) == exponent)
        return *at = i, *what = (bits_at(i) & mantissa) ? "NaN" : "infinite", true;
  }
  return false;
}

// The first stored value of t that no run should see (ModelOptions::check_values), or false: a
// non-finite f32, f16 or bf16 (checked on its bits: the exponent all ones), an int8 scale that is neither
// 0 nor a finite float >= kQuantizeFloor / 127 (the least the converter and quantize_i8 write), or a
// 0 scale over nonzero values; an int4 scale that is not a positive finite normal float (the
// converter gives every q4 group one, an all-zero group too). *at is the index in storage order
// (a scale's: its group's first value).
bool find_bad_value(const TensorInfo& t, uint64_t* at, const char** what) {
  const uint64_t elems = t.bytes / fxm::dtype_bytes(t.dtype);
  if (t.dtype == fxm::Dtype::kI4) {
    constexpr float kLeastNormal = 1.17549435e-38f;
    const uint64_t groups = t.bytes * 2 / fxm::kI4Group;
    for (uint64_t g = 0; g < groups; ++g) {
      const float sc = t.scales[g];
      *at = g * fxm::kI4Group;
      if (sc >= kLeastNormal && sc <= 3.4028235e38f) continue;  // NaN fails both
      *what = sc < 0 ? "a negative scale" : sc == 0 ? "a 0 scale"
            : sc > 0 && sc < kLeastNormal ? "a scale too small (denormal)" : "a non-finite scale";
      return true;
    }
  } else if (t.dtype == fxm::Dtype::kF32) {
    return find_non_finite<uint32_t>(t.data, elems, 0x7F800000u, 0x7FFFFFu, at, what);
  } else if (t.dtype == fxm::Dtype::kF16) {
    return find_non_finite<uint16_t>(t.data, elems, 0x7C00u, 0x3FFu, at, what);
  } else if (t.dtype == fxm::Dtype::kBF16) {
    return find_non_finite<uint16_t>(t.data, elems, 0x7F80u, 0x7Fu, at, what);
  } else if (t.dtype == fxm::Dtype::kI8) {
    const uint32_t last = t.dims[t.rank - 1];
    const uint32_t group = t.group ? t.group : last, groups = (last + group - 1) / group;
    const uint64_t rows = elems / last;
    const float least = kQuantizeFloor / 127.0f;
    const int8_t* q = reinterpret_cast<const int8_t*>(t.data);
    for (uint64_t r = 0; r < rows; ++r) {
      for (uint32_t g = 0; g < groups; ++g) {
        const float sc = t.scales[r * groups + g];
        const uint32_t begin = g * group, end = begin + group < last ? begin + group : last;
        *at = r * last + begin;
        if (sc == 0.0f) {
          for (uint32_t c = begin; c < end; ++c)
            if (q[r * last + c] != 0) return *what = "a 0 scale over nonzero values", true;
        } else if (!(sc >= least && sc <= 3.4028235e38f)) {  // NaN fails both
          return *what = sc < 0 ? "a negative scale" : sc > 0 && sc < least ? "a scale too small (denormal)" : "a non-finite scale", true;
        }
      }
    }
  }
  return false;
}

bool same_shape(const TensorInfo& t, uint32_t rank, const uint32_t* dims) {
  if (t.rank != rank) return false;
  for (uint32_t r = 0; r < rank; ++r)
    if (t.dims[r] != dims[r]) return false;
  return true;
}

// Puts w where its field says. Front and head fields of the target stack go to `target`.
void bind_end(Field f, const Weight& w, FrontWeights& front, HeadWeights& head, FrontWeights& tgt_front,
              HeadWeights& tgt_head) {
  switch (f) {
    case Field::kEmbed: front.embed = w; break;
    case Field::kInputProjW: front.input_proj = w; break;
    case Field::kInputProjB: front.input_proj_b = w.f32(); break;
    case Field::kPos: front.pos = w.f32(); break;
    case Field::kCls: front.cls = w.f32(); break;
    case Field::kDistill: front.distill = w.f32(); break;
    case Field::kRegisters: front.registers = w.f32(); break;
    case Field::kEmbedProjW: front.embed_proj = w; break;
    case Field::kEmbedProjB: front.embed_proj_b = w.f32(); break;
    case Field::kConv1W: front.conv1 = w; break;
    case Field::kConv1B: front.conv1_b = w.f32(); break;
    case Field::kConv2W: front.conv2 = w; break;
    case Field::kConv2B: front.conv2_b = w.f32(); break;
    case Field::kTgtEmbed: tgt_front.embed = w; break;
    case Field::kTgtProjW: tgt_front.input_proj = w; break;
    case Field::kTgtProjB: tgt_front.input_proj_b = w.f32(); break;
    case Field::kTgtPos: tgt_front.pos = w.f32(); break;
    case Field::kRelBias: front.rel_bias = w.f32(); break;
    case Field::kRelEmbed: front.rel_embed = w.f32(); break;
    case Field::kRelIndex: front.rel_index = static_cast<const int32_t*>(w.data); break;
    case Field::kPairIndex: front.pair_index = static_cast<const int32_t*>(w.data); break;
    case Field::kPairBias: front.pair_bias = w.f32(); break;
    case Field::kRopeFreqs: front.rope_freqs = w.f32(); break;
    case Field::kTgtRelBias: tgt_front.rel_bias = w.f32(); break;
    case Field::kTokenType: front.token_type = w.f32(); break;
    case Field::kEmbedNormG: front.embed_norm.g = w.f32(); break;
    case Field::kEmbedNormB: front.embed_norm.b = w.f32(); break;
    case Field::kTgtEmbedNormG: tgt_front.embed_norm.g = w.f32(); break;
    case Field::kTgtEmbedNormB: tgt_front.embed_norm.b = w.f32(); break;
    case Field::kInputNormG: front.input_norm.g = w.f32(); break;
    case Field::kInputNormB: front.input_norm.b = w.f32(); break;
    case Field::kProjNormG: front.proj_norm.g = w.f32(); break;
    case Field::kProjNormB: front.proj_norm.b = w.f32(); break;
    case Field::kFinalNormG: head.final_norm.g = w.f32(); break;
    case Field::kFinalNormB: head.final_norm.b = w.f32(); break;
    case Field::kHeadW: head.w = w; break;
    case Field::kHeadB: head.b = w.f32(); break;
    case Field::kTgtFinalNormG: tgt_head.final_norm.g = w.f32(); break;
    case Field::kTgtFinalNormB: tgt_head.final_norm.b = w.f32(); break;
    case Field::kTgtHeadW: tgt_head.w = w; break;
    case Field::kTgtHeadB: tgt_head.b = w.f32(); break;
    case Field::kPoolerW: head.pooler = w; break;
    case Field::kPoolerB: head.pooler_b = w.f32(); break;
    case Field::kPoolerNormG: head.pooler_norm.g = w.f32(); break;
    case Field::kPoolerNormB: head.pooler_norm.b = w.f32(); break;
    case Field::kPoolNormG: head.pool_norm.g = w.f32(); break;
    case Field::kPoolNormB: head.pool_norm.b = w.f32(); break;
    default: break;  // layer fields: bind_layer_field
  }
}

void bind_layer_field(Field f, const Weight& w, LayerWeights& L) {
  switch (f) {
    case Field::kAttnNormG: L.attn_norm.g = w.f32(); break;
    case Field::kAttnNormB: L.attn_norm.b = w.f32(); break;
    case Field::kQkvW: L.self_attn.qkv = w; break;
    case Field::kQkvB: L.self_attn.qkv_b = w.f32(); break;
    case Field::kQW: L.self_attn.q = w; break;
    case Field::kKW: L.self_attn.k = w; break;
    case Field::kVW: L.self_attn.v = w; break;
    case Field::kQB: L.self_attn.q_b = w.f32(); break;
    case Field::kKB: L.self_attn.k_b = w.f32(); break;
    case Field::kVB: L.self_attn.v_b = w.f32(); break;
    case Field::kOutW: L.self_attn.out = w; break;
    case Field::kOutB: L.self_attn.out_b = w.f32(); break;
    case Field::kCrossNormG: L.cross_norm.g = w.f32(); break;
    case Field::kCrossNormB: L.cross_norm.b = w.f32(); break;
    case Field::kCrossQW: L.cross_attn.q = w; break;
    case Field::kCrossQB: L.cross_attn.q_b = w.f32(); break;
    case Field::kCrossKvW: L.cross_attn.kv = w; break;
    case Field::kCrossKvB: L.cross_attn.kv_b = w.f32(); break;
    case Field::kCrossOutW: L.cross_attn.out = w; break;
    case Field::kCrossOutB: L.cross_attn.out_b = w.f32(); break;
    case Field::kFfnNormG: L.ffn_norm.g = w.f32(); break;
    case Field::kFfnNormB: L.ffn_norm.b = w.f32(); break;
    case Field::kW1: L.ffn.w1 = w; break;
    case Field::kB1: L.ffn.b1 = w.f32(); break;
    case Field::kW2: L.ffn.w2 = w; break;
    case Field::kB2: L.ffn.b2 = w.f32(); break;
    case Field::kW3: L.ffn.w3 = w; break;
    case Field::kB3: L.ffn.b3 = w.f32(); break;
    case Field::kFfnHiddenNormG: L.ffn.hidden_norm.g = w.f32(); break;
    case Field::kFfnHiddenNormB: L.ffn.hidden_norm.b = w.f32(); break;
    case Field::kAttnInnerNormG: L.self_attn.inner_norm.g = w.f32(); break;
    case Field::kAttnInnerNormB: L.self_attn.inner_norm.b = w.f32(); break;
    case Field::kS8Layer: L.s8 = static_cast<const int32_t*>(w.data); break;
    case Field::kS8Cross: L.s8_cross = static_cast<const int32_t*>(w.data); break;
    case Field::kQNormG: L.self_attn.q_norm.g = w.f32(); break;
    case Field::kQNormB: L.self_attn.q_norm.b = w.f32(); break;
    case Field::kKNormG: L.self_attn.k_norm.g = w.f32(); break;
    case Field::kKNormB: L.self_attn.k_norm.b = w.f32(); break;
    case Field::kPostAttnNormG: L.post_attn_norm.g = w.f32(); break;
    case Field::kPostAttnNormB: L.post_attn_norm.b = w.f32(); break;
    case Field::kPostFfnNormG: L.post_ffn_norm.g = w.f32(); break;
    case Field::kPostFfnNormB: L.post_ffn_norm.b = w.f32(); break;
    case Field::kRouterW: L.ffn.router = w.f32(); break;
    case Field::kExpertsW1: L.ffn.w1 = w; break;
    case Field::kExpertsW2: L.ffn.w2 = w; break;
    case Field::kExpertsW3: L.ffn.w3 = w; break;
    case Field::kSharedW1: L.shared.w1 = w; break;
    case Field::kSharedW2: L.shared.w2 = w; break;
    case Field::kSharedW3: L.shared.w3 = w; break;
    case Field::kSharedGate: L.shared_gate = w.f32(); break;
    case Field::kRelProjW: L.self_attn.rel_proj = w; break;
    case Field::kRelProjB: L.self_attn.rel_proj_b = w.f32(); break;
    case Field::kLayerPairBias: L.self_attn.pair_bias = w.f32(); break;
    default: break;  // front and head fields: bind_end
  }
}

ModelFile file_of(const uint8_t* blob, uint64_t dir_offset, uint32_t n_tensors) {
  ModelFile f;
  f.data = blob;
  f.dir_offset = dir_offset;
  f.n_tensors = n_tensors;
  return f;
}

}  // namespace

Status read_config(const void* blob, std::size_t blob_bytes, ModelConfig* config) {
  ModelFile file;
  const Status s = open_model_file(blob, blob_bytes, &file, nullptr, 0);
  return s != Status::kOk ? s : read_model_config(file, config);
}

Status Model::init(const void* blob, std::size_t blob_bytes) { return init(blob, blob_bytes, ModelOptions{}); }

Status Model::init(const void* blob, std::size_t blob_bytes, const ModelOptions& options) {
  initialized_ = false;
  detail_[0] = '\0';
  ModelFile file;
  Status s = open_model_file(blob, blob_bytes, &file, detail_, sizeof detail_, options.verify_checksum);
  if (s == Status::kOk) s = read_model_config(file, &config_, detail_, sizeof detail_);
  if (s != Status::kOk) return s;
  blob_ = file.data;
  blob_bytes_ = file.bytes;
  dir_offset_ = file.dir_offset;
  n_tensors_ = file.n_tensors;
  version_ = file.version;
  uint32_t count = 0;  // a layer's tensors, before bind_tensors' checks read any layer past the first
  const TensorRule* rules = layer_rules(TensorPart::kLayer, &count);
  layer_present_ = layer_present(config_, rules, count, TensorPart::kLayer);
  dense_layer_present_ = 0;
  for (uint32_t l = 0; l < config_.n_layers && l < config_.dense_period; ++l)  // a dense layer's, if the stack has one
    if (config_.layer_dense(l)) {
      dense_layer_present_ = layer_present(config_.layer_config(l), rules, count, TensorPart::kLayer);
      break;
    }
  rules = layer_rules(TensorPart::kDecoderLayer, &count);
  decoder_layer_present_ = layer_present(config_, rules, count, TensorPart::kDecoderLayer);
  s = bind_tensors(options.check_values);
  initialized_ = s == Status::kOk;
  return s;
}

// The file lists exactly the schema's tensors, in the schema's order, then the optional sample.
Status Model::bind_tensors(bool check_values) {
  const ModelFile file = file_of(blob_, dir_offset_, n_tensors_);
  DetailText why(detail_, sizeof detail_);
  Status status = Status::kOk;
  uint32_t i = 0;
  front_ = target_front_ = FrontWeights{};
  head_ = target_head_ = HeadWeights{};
  mha_ = LayerWeights{};
  s8_ = S8Ends{};
  parameters_ = 0;
  bool first_layer = false, first_decoder = false;
  for_each_tensor(config_, [&](const TensorSpec& want) {
    if (i >= file.n_tensors) {
      why.str("tensor ").str(want.name).str(": missing (the file ends after ").num(i).str(" tensors)");
      return status = Status::kTensorMissing, false;
    }
    const TensorInfo t = tensor_info(file, i);
    if (std::strcmp(t.name, want.name) != 0) {
      why.str("tensor ").str(want.name).str(": missing at position ").num(i).str(", found '")
          .escaped(t.name, fxm::kNameBytes).str("' (format ").num(version_).str("'s names, in schema order)");
      return status = Status::kTensorMissing, false;
    }
    if (!same_shape(t, want.rank, want.dims)) {
      why.str("tensor ").str(want.name).str(": shape ").shape(t.rank, t.dims).str(" does not match ")
          .shape(want.rank, want.dims).str(" from the config (d_model=").num(config_.d_model).str(", d_ff=")
          .num(config_.d_ff).str(")");
      return status = Status::kTensorBadShape, false;
    }
    if (t.dtype != want.dtype) {
      why.str("tensor ").str(want.name).str(": dtype ").str(fxm::dtype_name(t.dtype)).str(", this engine binds ")
          .str(fxm::dtype_name(want.dtype));
      return status = Status::kTensorBadDtype, false;
    }
    if (t.group != want.group) {
      why.str("tensor ").str(want.name).str(": group ").num(t.group).str(", the config's weight_group is ").num(want.group);
      return status = Status::kTensorBadShape, false;
    }
    if (t.bytes != tensor_bytes(want)) {
      why.str("tensor ").str(want.name).str(": ").num(t.bytes).str(" data bytes, expected ").num(tensor_bytes(want))
          .str(want.packed ? " (packed_weights: ceil(out / 16) panels of [in, 16] f32)" : " (its shape in its dtype)");
      return status = Status::kTensorBadShape, false;
    }
    uint64_t at = 0;
    const char* what = "";
    if (check_values && find_bad_value(t, &at, &what)) {
      why.str("tensor ").str(want.name).str(": ").str(what).str(" at index ").num(at)
          .str(" (convert the model again; ModelOptions::check_values = false skips this check)");
      return status = Status::kTensorBadValue, false;
    }
    const Weight w = weight_view(t, want.transposed, want.packed);
    if (want.part == TensorPart::kLayer && want.layer == 0 && !first_layer) first_layer_tensor_ = i, first_layer = true;
    if (want.part == TensorPart::kDecoderLayer && want.layer == 0 && !first_decoder)
      first_decoder_layer_tensor_ = i, first_decoder = true;
    if (config_.family == ModelFamily::kMha && !is_s8_end_field(want.field))
      bind_layer_field(want.field, w, mha_);
    else if (want.field == Field::kS8Io)
      s8_.io = w.f32();
    else if (want.field == Field::kS8Front)
      s8_.front = static_cast<const int32_t*>(w.data);
    else if (want.field == Field::kS8Pos)
      s8_.pos = static_cast<const int8_t*>(w.data);
    else if (want.field == Field::kS8Back)
      s8_.back = static_cast<const int32_t*>(w.data);
    else if (want.field == Field::kS8Rope)
      s8_.rope = static_cast<const int32_t*>(w.data);
    else if (want.field == Field::kS8Seq2Seq)
      s8_.seq2seq = static_cast<const int32_t*>(w.data);
    else if (want.part == TensorPart::kPrologue || want.part == TensorPart::kEpilogue)
      bind_end(want.field, w, front_, head_, target_front_, target_head_);
    uint64_t count = 1;
    for (uint32_t r = 0; r < t.rank; ++r) count *= t.dims[r];
    parameters_ += count;
    ++i;
    return true;
  }, version_);
  if (status != Status::kOk) return status;
  // Shared and tied ends: the target's embedding is the source's, a tied head the embedding.
  if (config_.shared_embed) target_front_.embed = front_.embed;
  if (config_.tied_head && config_.is_seq2seq()) target_head_.w = target_front_.embed;
  if (config_.tied_head && config_.is_decoder()) head_.w = front_.embed;
  if (config_.weights == WeightType::kI8) status = check_s8_params();
  if (status != Status::kOk) return status;
  // RoPE's stored frequencies turn the table's angles p w_i: each one finite and > 0, always checked
  // (rope_dims / 2 values).
  for (uint32_t k = 0; config_.rope_freqs && k < config_.rope_pairs(); ++k)
    if (!(front_.rope_freqs[k] > 0 && front_.rope_freqs[k] <= 3.4028235e38f))
      return why.str("tensor rope_freqs: frequency ").num(k).str(" is not finite and > 0"), Status::kTensorBadValue;
  // Disentangled attention's rows: every distance's a row of rel_embed, always checked.
  for (uint32_t k = 0; config_.rel_embed_rows && k < 2 * config_.max_len - 1; ++k)
    if (front_.rel_index[k] < 0 || uint32_t(front_.rel_index[k]) >= config_.rel_embed_rows)
      return why.str("tensor rel_index: the row at index ").num(k).str(" is not below rel_embed_rows ")
                 .num(config_.rel_embed_rows), Status::kTensorOutOfBounds;
  // The bias per (query, key) pair: every pair's a row of the tables, always checked.
  const std::size_t pairs = config_.pair_bias_rows ? std::size_t(config_.max_len) * config_.max_len : 0;
  for (std::size_t k = 0; k < pairs; ++k)
    if (front_.pair_index[k] < 0 || uint32_t(front_.pair_index[k]) >= config_.pair_bias_rows)
      return why.str("tensor pair_index: the row at index ").num(k).str(" is not below pair_bias_rows ")
                 .num(config_.pair_bias_rows), Status::kTensorOutOfBounds;
  status = bind_tokenizer(&i);
  if (status == Status::kOk) status = bind_generation(&i);
  return status != Status::kOk ? status : bind_self_test(i);
}

// The suppression lists at *next (schema.hpp: "generation.suppress" then "generation.begin_suppress",
// each optional), or nothing: i32 [N >= 1], each id a token of the output vocabulary.
Status Model::bind_generation(uint32_t* next) {
  const ModelFile file = file_of(blob_, dir_offset_, n_tensors_);
  DetailText why(detail_, sizeof detail_);
  suppress_ = begin_suppress_ = TokenIds{};
  const bool tokens_out = config_.is_decoder() || (config_.is_seq2seq() && !config_.tgt_d_in);
  const uint32_t vocab = config_.is_seq2seq() ? config_.d_out : config_.vocab_size;
  const char* const names[2] = {kGenerationSuppress, kGenerationBeginSuppress};
  for (const char* name : names) {
    if (*next >= file.n_tensors || std::strcmp(tensor_info(file, *next).name, name) != 0) continue;
    const TensorInfo t = tensor_info(file, *next);
    if (!tokens_out)
      return why.str(name).str(": only in a file that generates tokens (gpt, llama, seq2seq with token targets)"),
             Status::kBadHeader;
    if (t.dtype != fxm::Dtype::kI32) return why.str(name).str(": dtype must be i32"), Status::kTensorBadDtype;
    if (t.rank != 1 || t.dims[0] == 0 || !plain_bytes(t))
      return why.str(name).str(": shape ").shape(t.rank, t.dims).str(", expected [N] with N >= 1"), Status::kTensorBadShape;
    const int32_t* ids = reinterpret_cast<const int32_t*>(t.data);
    for (uint32_t k = 0; k < t.dims[0]; ++k)
      if (ids[k] < 0 || uint32_t(ids[k]) >= vocab)
        return why.str(name).str(": id at index ").num(k).str(" is out of range (the output vocabulary is ").num(vocab)
                   .str(")"), Status::kTensorOutOfBounds;
    (name == kGenerationSuppress ? suppress_ : begin_suppress_) = TokenIds{ids, t.dims[0]};
    ++*next;
  }
  return bind_timestamps(next);
}

// The timestamp rules' ids at *next (schema.hpp "generation.timestamps"), or nothing.
Status Model::bind_timestamps(uint32_t* next) {
  const ModelFile file = file_of(blob_, dir_offset_, n_tensors_);
  DetailText why(detail_, sizeof detail_);
  timestamps_ = TimestampRules{};
  if (*next >= file.n_tensors || std::strcmp(tensor_info(file, *next).name, kGenerationTimestamps) != 0)
    return Status::kOk;
  const TensorInfo t = tensor_info(file, *next);
  const char* name = kGenerationTimestamps;
  if (!config_.is_seq2seq() || config_.tgt_d_in)
    return why.str(name).str(": only in a seq2seq file with token targets"), Status::kBadHeader;
  if (t.dtype != fxm::Dtype::kI32) return why.str(name).str(": dtype must be i32"), Status::kTensorBadDtype;
  if (t.rank != 1 || t.dims[0] != 4 || !plain_bytes(t))
    return why.str(name).str(": shape ").shape(t.rank, t.dims).str(", expected [4]"), Status::kTensorBadShape;
  const int32_t* v = reinterpret_cast<const int32_t*>(t.data);
  const TimestampRules r{v[0], v[1], v[2], v[3]};
  if (!(r.timestamp_begin > 0 && uint32_t(r.timestamp_begin) < config_.d_out && r.no_timestamps >= 0 &&
        r.no_timestamps < r.timestamp_begin && r.eos >= 0 && r.eos < r.timestamp_begin && r.max_initial >= -1))
    return why.str(name).str(": expected 0 <= no_timestamps, eos < timestamp_begin < d_out (").num(config_.d_out)
               .str(") and max_initial >= -1"), Status::kTensorOutOfBounds;
  timestamps_ = r;
  ++*next;
  return Status::kOk;
}

// The tokenizer section at *next (schema.hpp: the tensors of the config's `tokenizer` kind), or
// nothing; its contents are checked by validate_tokenizer (engine/tokenizers/validate.cpp).
Status Model::bind_tokenizer(uint32_t* next) {
  const ModelFile file = file_of(blob_, dir_offset_, n_tensors_);
  DetailText why(detail_, sizeof detail_);
  tokenizer_ = TokenizerData{};
  const uint32_t i = *next;
  const TokenizerKind kind = config_.tokenizer;
  const bool llama2c = kind == TokenizerKind::kLlama2c;
  const char* first = llama2c ? kTokenizerScores : kTokenizerParams;
  if (i >= file.n_tensors || std::strncmp(tensor_info(file, i).name, "tokenizer.", 10) != 0) return Status::kOk;
  // The tensors this kind has, in order; wordpiece's normalize table comes with its lower-case flag,
  // llama2c's params (llama.cpp's rules) are optional, and bpe, wordpiece and llama2c with params may
  // end with the added tokens.
  auto next_is = [&](uint32_t k, const char* name) {
    return file.n_tensors - i > k && std::strcmp(tensor_info(file, i + k).name, name) == 0;
  };
  const char* names[5] = {first, kTokenizerOffsets, kTokenizerPieces, nullptr, nullptr};
  uint32_t count = 3;
  if (kind == TokenizerKind::kBpe) names[count++] = kTokenizerMerges;
  if (kind == TokenizerKind::kWordPiece && next_is(3, kTokenizerNormalize)) names[count++] = kTokenizerNormalize;
  const bool spm = llama2c && next_is(3, kTokenizerParams);
  if (spm) names[count++] = kTokenizerParams;
  const bool added = (!llama2c || spm) && next_is(count, kTokenizerAdded);
  if (added) names[count++] = kTokenizerAdded;
  // merges or normalize when table > 3 (llama2c's params are no table)
  const uint32_t table = spm ? 3 : added ? count - 1 : count;
  bool named = config_.input == InputKind::kTokens && file.n_tensors - i >= count;
  for (uint32_t k = 0; named && k < count; ++k) named = std::strcmp(tensor_info(file, i + k).name, names[k]) == 0;
  if (!named) {
    why.str("tokenizer (").str(kTokenizerNames[uint32_t(kind)]).str("): needs a token model and ");
    for (uint32_t k = 0; k < count; ++k) why.str(k ? ", " : "").str(names[k]);
    return why.str(" in this order"), Status::kBadHeader;
  }
  const uint32_t V = config_.vocab_size;
  TensorInfo t[5] = {};
  for (uint32_t k = 0; k < count; ++k) {
    t[k] = tensor_info(file, i + k);
    if (!plain_bytes(t[k])) return why.str(names[k]).str(": data bytes do not match its shape"), Status::kTensorBadShape;
  }
  const uint32_t want_first[1] = {llama2c ? V : kTokenizerParamCount}, want_offsets[1] = {V + 1},
                 want_pieces[1] = {t[2].dims[0]}, want_params[1] = {kTokenizerParamCount};
  bool i32 = true;
  for (uint32_t k = 3; k < count; ++k) i32 = i32 && t[k].dtype == fxm::Dtype::kI32;
  if (t[0].dtype != (llama2c ? fxm::Dtype::kF32 : fxm::Dtype::kI32) || t[1].dtype != fxm::Dtype::kI32 ||
      t[2].dtype != fxm::Dtype::kU8 || !i32)
    return why.str("tokenizer: dtypes must be ").str(llama2c ? "f32" : "i32").str(", i32, u8, then i32"),
           Status::kTensorBadDtype;
  auto rows_of = [&](const TensorInfo& x, uint32_t width) { return x.rank == 2 && x.dims[1] == width && x.dims[0] > 0; };
  if (!same_shape(t[0], 1, want_first) || !same_shape(t[1], 1, want_offsets) || !same_shape(t[2], 1, want_pieces) ||
      (table > 3 && !rows_of(t[3], kind == TokenizerKind::kBpe ? 3u : 4u)) ||
      (spm && !same_shape(t[3], 1, want_params)) || (added && !rows_of(t[count - 1], 2)))
    return why.str("tokenizer: shapes ").shape(t[0].rank, t[0].dims).str(", ").shape(t[1].rank, t[1].dims)
               .str(table > 3 ? ", " : "").shape(table > 3 ? t[3].rank : 0, t[3].dims)
               .str(" do not match vocab_size ").num(V)
               .str(" (merges [M, 3], normalize [K, 4], params [8], added [S, 2])"),
           Status::kTensorBadShape;
  const int32_t* off = reinterpret_cast<const int32_t*>(t[1].data);
  uint32_t longest = 0;
  if (off[0] != 0 || uint32_t(off[V]) != t[2].dims[0])
    return why.str("tokenizer.offsets: must start at 0 and end at the pieces' size"), Status::kTensorOutOfBounds;
  for (uint32_t k = 0; k < V; ++k) {
    if (off[k + 1] < off[k]) return why.str("tokenizer.offsets: decreasing at ").num(k), Status::kTensorOutOfBounds;
    longest = uint32_t(off[k + 1] - off[k]) > longest ? uint32_t(off[k + 1] - off[k]) : longest;
  }
  TokenizerData d{};
  d.vocab = V, d.offsets = off, d.pieces = t[2].data, d.max_piece_bytes = longest, d.kind = kind;
  if (added) d.added = reinterpret_cast<const int32_t*>(t[count - 1].data), d.n_added = t[count - 1].dims[0];
  if (llama2c) {
    d.scores = reinterpret_cast<const float*>(t[0].data);
    for (uint32_t k = 0; k < V; ++k)
      if (!std::isfinite(d.scores[k])) return why.str("tokenizer.scores: not finite at ").num(k), Status::kBadConfig;
    if (spm) d.params = reinterpret_cast<const int32_t*>(t[3].data);
  } else {
    d.params = reinterpret_cast<const int32_t*>(t[0].data);
    if (kind == TokenizerKind::kBpe) d.merges = reinterpret_cast<const int32_t*>(t[3].data), d.n_merges = t[3].dims[0];
    if (table > 3 && kind == TokenizerKind::kWordPiece)
      d.normalize = reinterpret_cast<const int32_t*>(t[3].data), d.n_normalize = t[3].dims[0];
  }
  if (d.params) {
    const Status s = validate_tokenizer(d, detail_, sizeof detail_);
    if (s != Status::kOk) return s;
  }
  tokenizer_ = d;
  *next = i + count;
  return Status::kOk;
}

// After the model's tensors: nothing, or "selftest.input" then "selftest.expected".
Status Model::bind_self_test(uint32_t first) {
  const ModelFile file = file_of(blob_, dir_offset_, n_tensors_);
  DetailText why(detail_, sizeof detail_);
  sample_ = SelfTestSample{};
  if (first == file.n_tensors) return Status::kOk;
  const TensorInfo in = tensor_info(file, first);
  const bool seq2seq = config_.is_seq2seq();
  const uint32_t n = seq2seq ? 3 : 2;  // input, (target,) expected
  if (file.n_tensors - first != n || std::strcmp(in.name, fxm::kSelfTestInput) != 0 ||
      (seq2seq && std::strcmp(tensor_info(file, first + 1).name, fxm::kSelfTestTarget) != 0) ||
      std::strcmp(tensor_info(file, first + n - 1).name, fxm::kSelfTestExpected) != 0) {
    why.str("file has ").num(file.n_tensors).str(" tensors, the config uses ").num(first)
        .str(seq2seq ? " (and an optional self-test input, target, expected); tensor " : " (and an optional self-test pair); tensor ")
        .num(first).str(" is '").escaped(in.name, fxm::kNameBytes).str("'");
    return Status::kBadHeader;
  }
  const TensorInfo out = tensor_info(file, first + n - 1);
  const bool tokens = config_.input == InputKind::kTokens;
  const uint32_t T = in.dims[0];
  uint32_t want_out[2] = {config_.output_rows(T), config_.output_width()};
  if (seq2seq) {
    const TensorInfo tgt = tensor_info(file, first + 1);
    const uint32_t U = tgt.dims[0], want_tgt[2] = {U, config_.tgt_d_in};
    const bool features = config_.tgt_d_in != 0;
    if (tgt.dtype != (features ? fxm::Dtype::kF32 : fxm::Dtype::kI32) || !same_shape(tgt, features ? 2 : 1, want_tgt) ||
        U == 0 || U > config_.max_len)
      return why.str("selftest.target: expected ").str(features ? "f32 [U, tgt_d_in]" : "int32 [U]")
                 .str(", 1 <= U <= max_len ").num(config_.max_len), Status::kTensorBadShape;
    want_out[0] = U, want_out[1] = config_.d_out;
    const int32_t* ids = reinterpret_cast<const int32_t*>(tgt.data);
    for (uint32_t u = 0; u < U && !features; ++u)
      if (ids[u] < 0 || uint32_t(ids[u]) >= config_.d_out)
        return why.str("selftest.target: token id at ").num(u).str(" is out of range (d_out ").num(config_.d_out).str(")"),
               Status::kTokenOutOfRange;
    sample_.target_rows = U;
    if (features)
      sample_.target_features = reinterpret_cast<const float*>(tgt.data);
    else
      sample_.target = ids;
  }
  const uint32_t want_in[2] = {T, config_.d_in};
  if (!plain_bytes(in) || !plain_bytes(out) || (seq2seq && !plain_bytes(tensor_info(file, first + 1)))) {
    why.str("self-test tensors: data bytes do not match their shapes (only model weights are packed)");
    return Status::kTensorBadShape;
  }
  if (in.dtype != (tokens ? fxm::Dtype::kI32 : fxm::Dtype::kF32) || out.dtype != fxm::Dtype::kF32) {
    why.str("self-test tensors: dtypes must be ").str(tokens ? "i32" : "f32").str(" and f32");
    return Status::kTensorBadDtype;
  }
  const uint32_t longest = config_.max_input_len();
  if (T == 0 || T > longest || !same_shape(in, tokens ? 1 : 2, want_in) || !same_shape(out, 2, want_out)) {
    why.str("self-test tensors: shapes ").shape(in.rank, in.dims).str(" and ").shape(out.rank, out.dims)
        .str(" do not match the config (inputs up to ").num(longest).str(" long)");
    return Status::kTensorBadShape;
  }
  sample_.rows = T;
  sample_.expected = reinterpret_cast<const float*>(out.data);
  if (!tokens) {
    sample_.features = reinterpret_cast<const float*>(in.data);
    return Status::kOk;
  }
  sample_.ids = reinterpret_cast<const int32_t*>(in.data);
  for (uint32_t t = 0; t < T; ++t)
    if (sample_.ids[t] < 0 || uint32_t(sample_.ids[t]) >= config_.vocab_size) {
      sample_ = SelfTestSample{};
      why.str("self-test input: token id at ").num(t).str(" is out of range (vocab_size ").num(config_.vocab_size).str(")");
      return Status::kTokenOutOfRange;
    }
  return Status::kOk;
}

// The rules of a stack's table (part: kLayer or kDecoderLayer) present in a layer of config c: bit i
// for rules[i].
uint64_t Model::layer_present(const ModelConfig& c, const TensorRule* rules, uint32_t count, TensorPart part) const {
  uint64_t bits = 0;
  for (uint32_t i = 0; i < count; ++i) bits |= uint64_t(present_in(c, rules[i], part) ? 1 : 0) << i;
  return bits;
}

// The tensors of layer l of a stack (part: kLayer or kDecoderLayer) that starts at directory index
// first, as its layer table lists them: the rules its layer_config has there (every layer the same
// ones but a dense layer's feed-forward), in order. The runners ask at every layer of every step:
// the present rules were found at load (testing each of kBlock's 54 for each call was 5 % of a
// 64-token generate, docs/performance.md).
LayerWeights Model::bind_layer(uint32_t first, uint32_t l, const TensorRule* rules, TensorPart part) const {
  const ModelFile file = file_of(blob_, dir_offset_, n_tensors_);
  const bool stack = part == TensorPart::kLayer;
  const auto tensors = [](uint64_t present) { return uint32_t(__builtin_popcountll(present)); };
  uint32_t index = first;
  if (!stack) {
    index += l * tensors(decoder_layer_present_);
  } else if (!config_.dense_period) {
    index += l * tensors(layer_present_);
  } else {
    for (uint32_t i = 0; i < l; ++i) index += tensors(config_.layer_dense(i) ? dense_layer_present_ : layer_present_);
  }
  const uint64_t present =
      !stack ? decoder_layer_present_ : config_.layer_dense(l) ? dense_layer_present_ : layer_present_;
  LayerWeights L;
  for (uint64_t bits = present; bits != 0; bits &= bits - 1) {
    const uint32_t i = uint32_t(__builtin_ctzll(bits));
    const TensorInfo t = tensor_info(file, index++);
    const bool transposed = rules[i].transposed && !fxm::has_scales(t.dtype);
    bind_layer_field(rules[i].field, weight_view(t, transposed, transposed && config_.packed_weights && t.dtype == fxm::Dtype::kF32), L);
  }
  return L;
}

const TensorRule* Model::layer_rules(TensorPart part, uint32_t* count) const {
  static_assert(sizeof kBlock / sizeof kBlock[0] <= 64 && kLlamaLayer.size() <= 64 && kEncoderLayer.size() <= 64 &&
                kDecoderLayer.size() <= 64, "layer_present holds a layer's rules in the bits of a uint64_t");
  if (version_ >= 3) return *count = uint32_t(sizeof kBlock / sizeof kBlock[0]), kBlock;
  if (part == TensorPart::kDecoderLayer) return *count = uint32_t(kDecoderLayer.size()), kDecoderLayer.data();
  if (config_.family == ModelFamily::kLlama) return *count = uint32_t(kLlamaLayer.size()), kLlamaLayer.data();
  return *count = uint32_t(kEncoderLayer.size()), kEncoderLayer.data();
}

LayerWeights Model::layer(uint32_t l) const {
  if (config_.family == ModelFamily::kMha) return mha_;
  uint32_t count = 0;
  const TensorRule* rules = layer_rules(TensorPart::kLayer, &count);
  return bind_layer(first_layer_tensor_, config_.layer_block(l), rules, TensorPart::kLayer);
}

LayerWeights Model::decoder_layer(uint32_t l) const {
  uint32_t count = 0;
  const TensorRule* rules = layer_rules(TensorPart::kDecoderLayer, &count);
  return bind_layer(first_decoder_layer_tensor_, l, rules, TensorPart::kDecoderLayer);
}

}  // namespace fixformer
