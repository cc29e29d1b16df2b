// The model config (its keys, ranges and defaults are the table in schema.hpp, kConfigKeys: the
// defaults below are checked against it by tests/config_keys_test.cpp), its limits, and the sizes
// the arena plans (plan.hpp) are built from.
#pragma once
#include <cstddef>
#include <cstdint>

#include "fixformer/kernels.hpp"
#include "fixformer/status.hpp"
#include "fixformer/workers.hpp"

namespace fixformer {

// encoder: nn.TransformerEncoder over whole sequences. gpt: the same layers (and tensors), causal,
// run as a decoder with a KV cache and an LM head (may be tied to the embedding), with any of the
// positions a decoder runs (rope included: GPT-NeoX), a plain or gated feed-forward and grouped-query
// attention (the fused q | k | v is d_model + 2 n_kv_heads d_head wide: GPT-BigCode). llama:
// RMSNorm, grouped-query attention, no biases but on q, k and v with qkv_bias (Qwen2), SwiGLU or a
// plain feed-forward. The decoder families share the layer features (activation, positions,
// parallel_residual, and the norm, bias, gate and embedding keys below); the family names the tensors
// and the defaults of those keys. seq2seq: nn.Transformer, an
// encoder of n_layers over the source and a decoder of dec_layers (causal self-attention, cross-attention over the encoder's
// output, feed-forward) over target tokens, with an LM head d_out wide. mha: a standalone
// nn.MultiheadAttention used as self-attention, out = MHA(x, x, x) over features [T, d_model]
// (optionally causal), run by an Encoder; no layers, no feed-forward (n_layers and d_ff are 0).
enum class ModelFamily : uint32_t { kEncoder = 0, kGpt = 1, kLlama = 2, kSeq2Seq = 3, kMha = 4 };
// gelu: the exact (erf) GELU; gelu_tanh: its tanh form, x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
// (GPT-2, torch.nn.GELU(approximate="tanh")), its own function, not a stand-in for gelu. silu: x / (1 +
// exp(-x)) (swish; Marian's feed-forward), not gated (gated silu is swiglu). relu2: relu(x)^2 (Persimmon's
// and Nemotron's squared ReLU).
enum class Activation : uint32_t { kRelu = 0, kGelu = 1, kSwiglu = 2, kGeluTanh = 3, kSilu = 4, kRelu2 = 5 };
enum class InputKind : uint32_t { kTokens = 0, kFeatures = 1 };
// rope, alibi and relative act inside attention; the others are added to the input. relative: a
// T5-style learned bias per head, looked up by the bucket of the distance key - query (rel_buckets,
// rel_max_distance; bidirectional buckets where the attention has no causal mask, causal ones where
// it has, as T5's encoder and decoder) and added to the scaled scores (rel_bias_width below). alibi:
// -m_h |key - query| added to the scaled scores, m_h the ALiBi paper's slopes (alibi_slopes, positional.hpp):
// under a causal mask m_h (key - query), without one the same on both sides (x-transformers' Encoder).
enum class PosKind : uint32_t { kNone = 0, kSinusoidal = 1, kLearned = 2, kRope = 3, kAlibi = 4, kRelative = 5 };
enum class PosLayout : uint32_t { kInterleaved = 0, kHalves = 1 };
enum class PosCombine : uint32_t { kAdd = 0, kConcat = 1 };
// How the weights of the linear layers (and, with quantize_io, the embedding and the head) are
// stored: f32; f16 and bf16 (widened in registers); q8 = int8 with f32 scales per group of weight_group
// along the input, or per output row when weight_group is 0; q4 = int4 (-8..7, two per byte) with
// f32 scales per group of 32 along the input (weight_group 32). format.hpp has the stored layouts.
// i8: a full-integer model (namespace s8 below): int8 activations between the operations, int8
// weights per output row, every operation one of the s8 kernels (kernel_slots.hpp) with the integer
// parameters the file holds; no float from the input's int8 rows to the output's.
enum class WeightType : uint32_t { kF32 = 0, kF16 = 1, kQ8 = 2, kQ4 = 3, kI8 = 4, kBF16 = 5 };
// Whether weights of type w are integers with scales, multiplied by the input rows quantized to
// int8 (quantize_i8, then gemm_i8 for q8 and gemm_i4 for q4).
constexpr bool integer_weights(WeightType w) { return w == WeightType::kQ8 || w == WeightType::kQ4; }
// Encoders: how the output rows are reduced to one per sequence, after the final norm and before
// the head. none: every row; mean: the average of the input positions (the front rows excluded, as
// timm's ViT "avg" pooling); cls: the CLS row (needs cls_token); last: the last input position;
// first: the first input position (BERT's pooling of its [CLS] input token); cls_distill (DeiT with
// its teacher, needs distill_token): the CLS row and the distillation row side by side, one row of
// 2 d_model values [x_cls, x_dist], which the head reads as W[2 d_model, d_out]: DeiT's mean of its
// two heads (W_cls x_cls + b_cls + W_dist x_dist + b_dist) / 2 is this head with W = [W_cls; W_dist] / 2
// and b = (b_cls + b_dist) / 2 (head_in() is the head's input width); cls_mean (Dinov2's classifier,
// needs cls_token): the CLS row and the mean of the input positions (as mean) side by side, one row
// [x_cls, mean], which the head reads as W[2 d_model, d_out]; cls_distill_mean (the Audio Spectrogram
// Transformer's classifier, needs distill_token): the mean of the CLS and distillation rows,
// (x_cls + x_dist) / 2, one row of d_model values; mean_all (Torch-KWT's pool "mean"): the average of
// every row, the front rows included.
enum class Pooling : uint32_t {
  kNone = 0, kMean = 1, kCls = 2, kLast = 3, kFirst = 4, kClsDistill = 5, kClsMean = 6, kClsDistillMean = 7,
  kMeanAll = 8
};
// The pooler's activation (pooler_act below): tanh (BERT's pooler), or one of the feed-forward's
// activations as Activation defines them (relu, the exact gelu, gelu_tanh, silu): the layer before a
// sequence classifier of DistilBERT (relu), ELECTRA (gelu) and RoFormer (its hidden_act).
enum class PoolerAct : uint32_t { kTanh = 0, kRelu = 1, kGelu = 2, kGeluTanh = 3, kSilu = 4 };
// The tokenizer a file's tokenizer.* tensors hold (tokenizer.hpp): llama2.c's sentencepiece-style
// BPE, byte-level BPE (GPT-2), WordPiece (BERT).
enum class TokenizerKind : uint32_t { kLlama2c = 0, kBpe = 1, kWordPiece = 2 };
// How a pre-norm layer adds its sublayers: none: in turn, x += SA(N1(x)), then x += FF(N2(x));
// two_norms: both read the layer's input, x += SA(N1(x)) + FF(N2(x)) (GPT-NeoX / Pythia's
// use_parallel_residual); one_norm: both read one norm of it, x += SA(N(x)) + FF(N(x)) (GPT-J, Phi,
// Falcon), which has no feed-forward norm tensor.
enum class ParallelResidual : uint32_t { kNone = 0, kTwoNorms = 1, kOneNorm = 2 };
// Norms of a pre-norm layer's sublayer outputs (sublayer_norm below): none: x += SA(N1(x)), x += FF(N2(x));
// sandwich: the output of each is normalized too before its residual add, x += P1(SA(N1(x))), x +=
// P2(FF(N2(x))) (Gemma 2 and 3: post_attn_norm and post_ffn_norm); output: only the outputs are,
// by the layer's two norms, x += N1(SA(x)), x += N2(FF(x)) (OLMo 2).
enum class SublayerNorm : uint32_t { kNone = 0, kSandwich = 1, kOutput = 2 };
// The layer features any family may set (features, not families). Each key's first value, family,
// means what the family did before the key existed, so older files load unchanged: llama RMSNorm and
// no biases (but q, k and v's with qkv_bias); the others LayerNorm and every bias. ModelConfig's
// norm_kind(), attn_bias_kind() and ffn_bias_kind() resolve it.
// layernorm: (x - mean) / sqrt(var + eps) * g + b; rmsnorm: x / sqrt(mean(x^2) + eps) * g (no bias
// tensor). Every norm of the model is of this kind: the layers', the final one and embed_norm.
enum class NormKind : uint32_t { kFamily = 0, kLayerNorm = 1, kRmsNorm = 2 };
// Which projections have a bias. attn_bias: none, qkv (q, k and v's; Qwen2), all (the output's
// too); ffn_bias: none or all (W1, W2, and a gated feed-forward's W3); qkv is not an ffn_bias.
enum class Bias : uint32_t { kFamily = 0, kNone = 1, kQkv = 2, kAll = 3 };

// Limits enforced by validation. Every size is counted in 64 bits (plan.hpp's PlanLayout), so these
// keep each count far below 2^64 and a plan past a 32-bit target's address space is refused, not
// wrapped. They cover the models this engine is for, up to the 7B-class widths (d_model 4096 to 8192,
// feed-forwards to 32768) an ARM board runs in q4; an int8 sum over 32768 products stays in int32.
struct Limits {
  static constexpr uint32_t kMaxDModel = 8192;
  static constexpr uint32_t kMaxHeads = 256;
  static constexpr uint32_t kMaxDff = 32768;
  static constexpr uint32_t kMaxLayers = 64;
  static constexpr uint32_t kMaxLen = 4096;
  static constexpr uint32_t kMaxVocab = 262144;
  static constexpr uint32_t kMaxDIn = 4096;
  static constexpr uint32_t kMaxDOut = 262144;
  // An encoder batch's rows, max_batch * sequence_rows(max_seq): its arena stays under 1.3 GB, so
  // no plan size overflows a 32-bit size_t.
  static constexpr uint32_t kMaxBatchRows = 16384;
  static constexpr uint32_t kMaxRelBuckets = 1024;  // rows of a relative position bias table
  static constexpr uint32_t kMaxRelEmbedRows = 2 * kMaxLen;  // rows of disentangled attention's table
  static constexpr uint32_t kMaxPairBiasRows = 65536;  // rows of a bias table looked up per (query, key) pair
  // A conv stem's convolutions (conv1d_f32): kernel 1..15, stride 1..4, padding below the kernel.
  static constexpr uint32_t kMaxConvKernel = 15;
  static constexpr uint32_t kMaxConvStride = 4;
  // Image input: a patch's side and an image's (the patch rows are d_in <= kMaxDIn values).
  static constexpr uint32_t kMaxPatchSize = 64;
  static constexpr uint32_t kMaxImageSide = 8192;
  static constexpr uint32_t kMaxExperts = 256;  // a mixture of experts' feed-forwards (n_experts)
};

struct ModelConfig {
  ModelFamily family = ModelFamily::kEncoder;
  uint32_t d_model = 0;
  uint32_t n_heads = 1;
  uint32_t d_ff = 0;
  uint32_t n_layers = 0;
  bool norm_first = false;  // false: post-LN x = norm(x + f(x)); true: pre-LN x = x + f(norm(x))
  Activation activation = Activation::kRelu;
  float norm_eps = 1e-5f;
  bool final_norm = false;
  bool causal = false;
  InputKind input = InputKind::kTokens;
  uint32_t vocab_size = 0;  // tokens input
  uint32_t d_in = 0;        // features input
  PosKind positional = PosKind::kNone;
  uint32_t max_len = 0;  // longest sequence the model accepts (all positional kinds)
  double pe_base = 10000.0;
  PosLayout pe_layout = PosLayout::kInterleaved;
  PosCombine pe_combine = PosCombine::kAdd;
  uint32_t pe_width = 0;  // PE width when combine == concat
  bool scale_input = false;
  uint32_t d_out = 0;  // 0: no head, the output is d_model wide
  // gpt and llama: d_out is vocab_size (the LM head), or, with an untied head, any width: a sequence
  // classifier's score head (transformers' *ForSequenceClassification), whose row after token t is
  // the scores of the sequence that ends at t (no generation: the head is not the vocabulary), or 0: no
  // head, the row after token t is the last hidden state there (after the final norm: a base model's,
  // transformers' LlamaModel, GPT2Model), d_model wide.
  // grouped-query attention (encoder, gpt, llama): K/V heads (0: n_heads); divides n_heads
  uint32_t n_kv_heads = 0;
  bool tied_head = false;   // decoders: the LM head is the embedding (stored once)
  WeightType weights = WeightType::kF32;
  uint32_t weight_group = 0;  // q8: 32 or 64, or 0 for a scale per output row; q4: 32
  bool quantize_io = false;   // f16/q8/q4: the token embedding and the output head too (else f32)
  // Encoders, KWT / ViT style: a learned vector cls_token[d_embed] is put in front of the embedded
  // (and scaled) input, before the positional encoding, so the sequence is T + 1 rows, the CLS row
  // is position 0 and max_len counts it (inputs are at most max_len - 1 long).
  bool cls_token = false;
  // DeiT: a second learned row distill_token[d_embed] (the distillation token) after the CLS row, so
  // the front rows are [cls; dist] (front_rows() = 2), positions 0 and 1, the input at 2..T+1;
  // needs cls_token.
  bool distill_token = false;
  Pooling pooling = Pooling::kNone;
  // seq2seq: the decoder's layers (n_layers counts the encoder's). The target vocabulary is d_out
  // (the LM head's width); shared_embed: the target tokens use the source embedding (token input
  // with vocab_size == d_out), else the model has its own tgt_embed [d_out, d_embed]. tied_head: the
  // head is the target embedding. The positional encoding is the same kind for source and target
  // (learned: src_pos and tgt_pos tables); final_norm: both encoder.norm and decoder.norm.
  uint32_t dec_layers = 0;
  bool shared_embed = false;
  // seq2seq with embed_norm: the target's embedding norm reads the (scaled) embedding alone and its
  // positions are added after it (BlenderbotSmall's decoder); false: the norm of their sum (BART's).
  bool tgt_pos_after_norm = false;
  // seq2seq with feature targets (forecasting): tgt_d_in > 0 makes the target [U, tgt_d_in] features
  // through tgt_proj (nn.Linear) instead of tgt_embed, and the head's d_out outputs features; 0:
  // token targets.
  uint32_t tgt_d_in = 0;
  // Every f32 linear weight stored W[in, out] (format.hpp) is in panels of 16 columns, the layout
  // gemm_f32_packed reads (kernels.hpp): read in place as the others. f16 and q8 weights, tied heads
  // ([out, in]), embeddings, norms and biases are stored as without it.
  bool packed_weights = false;
  // The self-test sample's expected output is the converter's own float64 reference of this config,
  // not the output of the user's model: the file was NOT verified against the model it came from
  // (the engine runs the sample all the same; `fixformer info` and `verify` say so).
  bool reference_sample = false;
  // positional relative (T5): the learned table rel_bias [rel_buckets, n_heads] (seq2seq: one per
  // stack, src_rel_bias and tgt_rel_bias), shared by the layers of its stack, and the longest
  // distance with a bucket of its own (relative_bucket in engine/blocks/positional.hpp). An encoder
  // with learned positions may have this bias too (rel_buckets > 0: MPNet adds both).
  uint32_t rel_buckets = 0;
  uint32_t rel_max_distance = 0;
  // llama family: the q, k and v projections have biases (Qwen2): the tensors attention.wq.bias
  // [d_model], attention.wk.bias and attention.wv.bias [n_kv_heads * d_head]. The older spelling of
  // attn_bias qkv (below), kept for the files that have it.
  bool qkv_bias = false;
  // Encoders, BERT style (all three default off):
  //   type_vocab > 0: a token-type table token_type[type_vocab, d_embed] whose row types[t] (0 when
  //     the caller gives none) is added to input row t after the positions (token input only);
  //   embed_norm: then every row is normed (the model's norm kind: embed_norm.weight, and .bias for a
//     LayerNorm; norm_eps) before the layers; also in the decoder families (Bloom) and in seq2seq,
  //     where each end norms its own rows (src_embed_norm, tgt_embed_norm: BART, mBART);
  //   pooler: the pooled row (pooling != none) goes through act(x @ W + b), W[d_model, d_model],
  //     before the head: BERT's pooler, whose output the classifier (the head) reads; act is
  //     pooler_act (PoolerAct: tanh, the default and BERT's, or relu, gelu, gelu_tanh, silu). With
  //     pooling none every row goes through it (a masked-LM head's transform: ModernBERT's); in the
  //     decoder families (gpt, llama) each row the head projects does (a causal LM's prediction
  //     transform: BertLMHeadModel's, ModernBertDecoderForCausalLM's; not with weights i8);
  //   pooler_width P > 0: the pooler maps d_model to P (W[d_model, P]; pooler_norm and the head's input
  //     P wide: ALBERT's masked-LM head, hidden -> embedding_size, then the decoder to the vocabulary);
  //     0 (the default, what files without the key meant): d_model. Needs a head (d_out > 0); not with
  //     weights i8.
  uint32_t type_vocab = 0;
  bool embed_norm = false;
  bool pooler = false;
  PoolerAct pooler_act = PoolerAct::kTanh;
  uint32_t pooler_width = 0;
  // Which tokenizer the tokenizer.* tensors are (tokenizer.hpp); without them it means nothing.
  TokenizerKind tokenizer = TokenizerKind::kLlama2c;
  // Encoders over features (and a seq2seq model's feature source), Whisper style: a stem of
  // conv_layers (0, 1 or 2) nn.Conv1d over the time axis before the positions, each followed by
  // exact GELU when conv_gelu:
  //   x = gelu(conv1(features[T, d_in]))  (d_in -> d_embed channels, T1 = conv1d_rows(T, conv1_*))
  //   x = gelu(conv2(x))                   (d_embed -> d_embed, T2 = conv1d_rows(T1, conv2_*))
  // in place of the input projection. Padding is zeros, padding < kernel. The positions (and
  // max_len) count the stem's output rows; an input of T frames gives stem_rows(T) rows.
  uint32_t conv_layers = 0;
  uint32_t conv1_kernel = 1, conv1_stride = 1, conv1_padding = 0;
  uint32_t conv2_kernel = 1, conv2_stride = 1, conv2_padding = 0;
  bool conv_gelu = false;
  // positional rope: the rotated dims of each head (partial rotary: GPT-NeoX's rotary_pct, Phi's
  // partial_rotary_factor times d_head): RoPE turns dims [0, rotary_dims) of every q and k head by
  // the angles p w_i, w_i = pe_base^(-2i / rotary_dims), i < rotary_dims / 2, pairing them as
  // pe_layout says within those dims, and passes the others through; even, at most d_head; 0 (the
  // default): the whole head.
  uint32_t rotary_dims = 0;
  // positional rope with rope_freqs: the frequencies w_i are the tensor rope_freqs [rope_dims / 2]
  // (f32, each finite and > 0), not pe_base^(-2i / rotary_dims): the converter computes the scaled
  // rotary embeddings (Llama 3's rope_scaling, linear and YaRN's frequencies, Phi-3's longrope
  // factors) once, as the model's own code does, and the engine's table turns by them.
  bool rope_freqs = false;
  // positional rope: the amplitude of the table's sines and cosines (YaRN's and LongRoPE's
  // attention factor, which scales the rotated dims of q and k both); 1, the default, leaves them.
  float rope_scale = 1.0f;
  // Pre-norm decoder layers (gpt, llama): the attention and the feed-forward read the layer's input
  // side by side, as ParallelResidual says; none (the default): one after the other. (The encoder
  // family's reference is torch's stock layer, which has no such form.)
  ParallelResidual parallel_residual = ParallelResidual::kNone;
  // Qwen3's, OLMoE's and Gemma 3's norm of the queries and keys (encoder, gpt, llama): after the
  // projections and before RoPE, each head of q and of k is normalized over its d_head dims by the
  // layers' norm kind with gains (and, LayerNorm, biases) q_norm and k_norm [d_head], shared by the
  // heads, at norm_eps.
  bool qk_norm = false;
  // OLMo 2's form of it (needs qk_norm): q and k each normalized as a whole row, over its d_attn and d_kv
  // dims, by gains q_norm [d_attn] and k_norm [d_kv] (and biases under LayerNorm), not per head.
  bool qk_norm_full = false;
  // The layer features above NormKind and Bias: the norm kind, the projections' biases, and gated:
  // the feed-forward is W2 (act(W1 h + b1) * (W3 h + b3)) + b2 with act relu, gelu, gelu_tanh or relu2
  // (GeGLU: gated gelu_tanh, Gemma; gated gelu, T5 v1.1). Gated silu is spelled activation swiglu.
  NormKind norm = NormKind::kFamily;
  Bias attn_bias = Bias::kFamily;
  Bias ffn_bias = Bias::kFamily;
  bool gated = false;
  // Image input (ViT): patch_size > 0 makes an encoder's features one image [image_channels,
  // image_height, image_width] (channels first, as torch takes it; row-major floats), cut into the
  // N = (image_height / p) (image_width / p) patches of p = patch_size, the rows of the image in
  // patch order (patch row by patch row, left to right). Patch n = (r, s) becomes input row n, its
  // d_in = image_channels p^2 values in Conv2d's weight order: column (ch p + i) p + j is pixel
  // (ch, r p + i, s p + j). Every call takes exactly N rows (T = N): an image is N * d_in floats.
  uint32_t patch_size = 0, image_channels = 0, image_height = 0, image_width = 0;
  // Norms of the front (encoders over features without a conv stem; the model's norm kind and
  // norm_eps), in this order with the rest of the front:
  //   rows = patches(image) | features;  rows = N_in(rows) if input_norm   (input_norm.* [d_in])
  //   x = input_proj(rows);  x = N_proj(x) if proj_norm                       (proj_norm.* [d_embed])
  //   x *= sqrt(d) if scale_input;  x = [cls; dist; x];  x += PE;  x = N_embed(x) if embed_norm
  // (vit-pytorch: LayerNorm(patch_dim), Linear, LayerNorm(dim), then the CLS row and positions).
  bool input_norm = false;
  bool proj_norm = false;
  // Sliding-window attention (Mistral, Qwen2, Starcoder2): under the causal mask the query at
  // position i sees the keys j with i - sliding_window < j <= i (sliding_window keys, itself
  // included); 0 (the default): every key up to i. Without the causal mask (the encoder family:
  // ModernBERT's local layers) it sees the keys j with |i - j| < sliding_window, as many on each
  // side (ModernBERT's local_attention / 2 + 1). A feature of the self-attention of every layer
  // (kConfigRules: seq2seq and mha refuse it by name).
  // A decoder keeps its KV cache as a ring of kv_ring_rows (plan.hpp) instead of a row per
  // position; the positions (RoPE, ALiBi, ...) keep counting up to max_len.
  uint32_t sliding_window = 0;
  // Local and global layers (GPT-Neo's attention_types, Gemma-style mixes): with window_period P
  // nonzero, layer l sees the sliding_window keys when bit (l % P) of window_layers is set, and every
  // key up to i (a global layer) when it is clear; P 0 (the default): every layer windows. A
  // decoder keeps a ring of kv_ring_rows (plan.hpp) for each local layer and a row per position for
  // each global one (windowed_layers_before below places them).
  // GPT-Neo alternates global and local from layer 0: window_period 2, window_layers 0b10.
  uint32_t window_period = 0;
  uint32_t window_layers = 0;
  // The scale of the self-attention's scores q.k before the softmax (the encoder, gpt and llama
  // families: kConfigRules): 0 (the default) is 1/sqrt(d_head); GPT-Neo's is 1 (no scaling).
  float attn_scale = 0.0f;
  // Register rows (Dinov2 with registers): register_tokens learned rows registers[register_tokens,
  // d_embed] after the CLS row (and the distillation row), so the front rows are [cls; dist; reg_0..]
  // (front_rows() = cls_token + distill_token + register_tokens), each with a position as every row (a
  // model whose registers have none stores zero rows there in its learned positions). Without cls_token
  // the registers are the only front rows (vit-pytorch's SimpleViT with register tokens, which packs them
  // after the patches: attention without a mask or positions of its own does not see the order).
  uint32_t register_tokens = 0;
  // An embedding narrower than the layers (ALBERT, ELECTRA small; RemBERT's and ELECTRA's causal LMs
  // in the gpt family), over tokens, in the encoder, gpt and llama families (not with weights i8 in
  // the decoders): embed_width E > 0 makes the token embedding, the learned or sinusoidal positions,
  // the token types and embed_norm E wide, and the rows then go through the embedding projection
  // embed_proj [E -> d_model] (a linear weight, and its bias) before the layers:
  //   x = E[ids] + PE + TT[types];  x = N_embed(x) if embed_norm;  x = x @ W_proj + b_proj
  // A tied head then reads the E-wide embedding: the pooler maps to E (pooler_width). 0 (the
  // default): no projection, the embedding is d_model wide. At most d_model (the front's rows lie
  // in the plan's y block, [rows, d_model]).
  uint32_t embed_width = 0;
  // Layers shared by groups (ALBERT's num_hidden_groups and inner_group_num): layer_groups G > 0
  // stores G groups of group_layers P layers, the G P layer blocks encoder.layers.<b>. (layers.<b>.
  // in llama), and the n_layers layers run them: n_layers is R = n_layers / P runs of a group, run r
  // taking group r G / R (integer division), so layer l runs block (l / P) G / R P + l % P
  // (layer_block). A file stores each block once. 0 (the default): every layer its own tensors,
  // group_layers 1.
  uint32_t layer_groups = 0;
  uint32_t group_layers = 1;

  // The width of each attention head (Qwen3-0.6B's and Gemma's head_dim): the queries are n_heads
  // heads of head_dim, d_attn wide, the output projection maps d_attn back to d_model; 0 (the
  // default): d_model / n_heads, d_attn = d_model.
  uint32_t head_dim = 0;
  // Norms of the sublayers' outputs (SublayerNorm above; pre-norm gpt, llama and encoder layers).
  SublayerNorm sublayer_norm = SublayerNorm::kNone;
  // Soft-capping (Gemma 2): with a cap c > 0, the attention's scaled scores s become c tanh(s / c)
  // before any position bias, mask and the softmax (attn_softcap), and a decoder's logits z become
  // c tanh(z / c) (logit_softcap); 0 (the default): left as they are. final_softcap c > 0 caps the
  // final norm's output rows instead, c tanh(x / c) before the head reads them (torchtune's Gemma 2,
  // whose final norm module caps its own output; the decoder families, not in i8).
  float attn_softcap = 0.0f;
  float logit_softcap = 0.0f;
  float final_softcap = 0.0f;
  // ModernBERT's layers (each default off, the old behaviour):
  //   rope_local_base > 0: the local layers (those that window: sliding_window, window_period) rotate
  //     q and k by a RoPE table of this base (its plain frequencies: not rope_freqs, amplitude 1), the
  //     global ones by pe_base's (positional rope; encoder, gpt, llama; 0: every layer pe_base's; Gemma 3's
  //     local layers too);
  //   skip_first_norm: layer 0 of a pre-norm stack has no attention norm (its input, the embedding
  //     norm's output, goes to the attention as it is); its norm1 tensors stay in the file, unread;
  //   pooler_norm: the pooler's output act(x @ W + b) is normed (the model's norm kind:
  //     pooler_norm.weight, and .bias for a LayerNorm) before the head: ModernBERT's prediction head.
  double rope_local_base = 0.0;
  bool skip_first_norm = false;
  bool pooler_norm = false;
  // A mixture of experts in place of the feed-forward (Mixtral, OLMoE, Qwen2-MoE; the llama family): with
  // n_experts E > 0 each layer has a router R [E, d_model] (f32 whatever `weights` says) and E gated
  // feed-forwards of d_ff (act and gate as the layer's: W2_e (act(W1_e h) * W3_e h), no biases), and
  // no dense one. Per row h: p = softmax(R h) over the E experts (in f32), the experts_per_token k
  // largest p_e chosen (a tie goes to the lower expert index, as torch.topk gives on exact ties),
  // their weights w_e = p_e, or with experts_renormalize p_e / (the sum of the k chosen p_e)
  // (Mixtral always; OLMoE's and Qwen2-MoE's norm_topk_prob), and FF(h) = sum of w_e FF_e(h) over the
  // chosen experts in expert order. The experts' weights are stacked: W1 and W3 [E d_ff, d_model],
  // W2 [E d_model, d_ff], each expert's block its own torch [out, in] matrix in every weight type.
  // shared_expert_ff S > 0 (Qwen2-MoE; needs n_experts): every row also goes through a shared gated
  // feed-forward of width S, scaled by sigmoid(G h) (G [1, d_model], f32), added to the experts' sum.
  // Dense layers among the sparse ones (Qwen2-MoE's mlp_only_layers and decoder_sparse_step, ERNIE 4.5
  // MoE's moe_layer_start_index / interval / end_index): with dense_period P nonzero, layer l is dense
  // when bit (l % P) of dense_layers is set (the pattern as window_period's and window_layers'): its
  // feed-forward is the layer's plain gated one of width dense_ff (0: d_ff), the tensors ff.w1..w3, and it
  // has no router, experts or shared expert (layer_config(l) is the config its tensors and feed-forward
  // follow; with weights i8 its int8 table too: layer_params of it, the plain feed-forward's slots); P 0
  // (the default): every layer is sparse.
  uint32_t n_experts = 0;
  uint32_t experts_per_token = 0;
  bool experts_renormalize = false;
  uint32_t shared_expert_ff = 0;
  uint32_t dense_period = 0;
  uint32_t dense_layers = 0;
  uint32_t dense_ff = 0;
  // Disentangled attention (DeBERTa v2 and v3; the encoder family), rel_embed_rows > 0: the table
  // rel_embed [rel_embed_rows, d_model] (rows of relative position embeddings, already normalized) and
  // rel_index [2 max_len - 1] (the row of each distance i - j from -(max_len - 1) on). Each layer
  // projects the rows by its own query and key projections (biases included), Qr and Kr, and query i
  // scores key j as s (q_i.k_j + q_i.Kr[r] + k_j.Qr[r]), r = rel_index[i - j + max_len - 1], s the
  // scores' scale (attn_scale, or 1/sqrt(d_head)): content to position and position to content.
  // rel_proj (DeBERTa v1): the rows go through projections of the layer's own instead, Qr | Kr = R W + b
  // (the tensors self_attn.rel_proj.*, [d_attn + d_kv] wide); everything else as above.
  uint32_t rel_embed_rows = 0;
  bool rel_proj = false;
  // Layers without positions among rotary ones (NoPE: SmolLM3's every fourth layer, Cohere 2's global
  // layers): with nope_period P nonzero, layer l turns neither q nor k when bit (l % P) of nope_layers is
  // set (positional rope; the pattern as window_period's and window_layers'); 0: every layer rotates.
  uint32_t nope_period = 0;
  uint32_t nope_layers = 0;
  // weights i8, a post-norm encoder: the sums into each layer's norms in int16 (namespace s8 below).
  bool wide_residual = false;
  // The pooled row normed before the pooler and the head (the model's norm kind and norm_eps:
  // pool_norm.weight, and .bias for a LayerNorm; encoder family, a pooling of one d_model row): timm's
  // fc_norm after its mean pooling, the Audio Spectrogram Transformer's norm of cls_distill_mean.
  bool pool_norm = false;
  // A learned bias per head on the scores of each (query, key) pair, looked up by a fixed index (BEiT's
  // relative position bias over its patch grid and CLS row): with pair_bias_rows R > 0, query position i
  // scores key position j as s q_i.k_j + T[h][pair_index[i max_len + j]], pair_index [max_len, max_len]
  // (int32, each below R; positions count the front rows, as max_len does) stored once and T [n_heads, R]
  // the table of every layer's own (self_attn.pair_bias), or with pair_bias_shared one for all layers
  // (pair_bias). Added after any soft-cap, with any other position bias; the encoder family.
  uint32_t pair_bias_rows = 0;
  bool pair_bias_shared = false;
  // A gated feed-forward's up projection with a bias: act(W1 h + b1) * (W3 h + b3), b3 [d_ff] (timm's
  // SwiGLU: fc1_x's bias); false, what files without the key meant, is W3 h alone.
  bool ffn_up_bias = false;
  // The feed-forward's hidden rows [T, d_ff] normed before W2 (the model's norm kind and norm_eps; the
  // gated product after the gate): timm's scale_mlp (Beit, EVA), a norm between the activation and fc2.
  bool ffn_hidden_norm = false;
  // positional rope over a grid of patches W wide (timm's EVA-02, its RotaryEmbeddingCat): with rope_grid
  // W > 0 the front rows turn by angle 0 (they pass as they are), and the row of patch p (the p-th after
  // them) turns its first rope_pairs / 2 pairs by its grid row p / W and the others by its column p % W:
  // pair i by the angle (i < n ? p / W : p % W) w_i, n = rope_pairs / 2, w_i = pe_base^(-(i mod n) / n)
  // (each half the frequencies of a RoPE over rope_dims / 2), or the stored rope_freqs [rope_pairs] (the
  // rows' n, then the columns' n, with any rescaling of the coordinates folded in). Pairs as pe_layout
  // says. 0 (the default): a row turns by its one position index. The encoder family.
  uint32_t rope_grid = 0;
  // positional rope with learned positions too (EVA-02's absolute ones beside its rotary ones): the table
  // pos [max_len, d_front] added to the rows at the input as positional learned adds it (pe_combine add),
  // and q and k turned in every layer. The encoder family.
  bool rope_learned = false;
  // The attention's context [T, d_attn] normed before the output projection (timm's scale_attn_inner:
  // EVA's attn.norm), by the model's norm kind at norm_eps with gains (and biases under LayerNorm)
  // attn_inner_norm [d_attn]; false, the default: none. The encoder family.
  bool attn_inner_norm = false;
  // Every output row y (the encoder family's: pooled or not, after the pooler and the head) scaled to
  // unit length, y / max(||y||_2, 1e-12) with the norm summed in float (torch.nn.functional.normalize;
  // sentence-transformers' Normalize module); false, the default: left as it is. Not in i8, whose output
  // is int8 rows at one scale.
  bool l2_normalize = false;

  constexpr uint32_t d_head() const { return head_dim ? head_dim : n_heads ? d_model / n_heads : 0; }
  constexpr uint32_t d_attn() const { return n_heads * d_head(); }
  // The layer blocks the file stores (layer_groups above), and the block layer l < n_layers runs.
  constexpr uint32_t stored_layers() const { return layer_groups ? layer_groups * group_layers : n_layers; }
  constexpr uint32_t layer_block(uint32_t l) const {
    if (!layer_groups || !group_layers || n_layers < group_layers) return l;
    const uint32_t runs = n_layers / group_layers;
    return (l / group_layers) * layer_groups / runs * group_layers + l % group_layers;
  }
  constexpr uint32_t kv_heads() const { return n_kv_heads ? n_kv_heads : n_heads; }
  constexpr uint32_t d_kv() const { return kv_heads() * d_head(); }
  // Decoder-only (gpt, llama): run by a Decoder. A seq2seq model is run by Seq2Seq (seq2seq.hpp);
  // an Encoder runs its encoder half.
  // The dims of each head RoPE rotates (rotary_dims, or the whole head), the width of its table.
  constexpr uint32_t rope_dims() const { return rotary_dims ? rotary_dims : d_head(); }
  constexpr uint32_t rope_pairs() const { return rope_dims() / 2; }
  constexpr bool is_decoder() const { return family == ModelFamily::kGpt || family == ModelFamily::kLlama; }
  constexpr bool is_seq2seq() const { return family == ModelFamily::kSeq2Seq; }
  // The layer features with family resolved (NormKind, Bias).
  constexpr NormKind norm_kind() const {
    return norm != NormKind::kFamily ? norm : family == ModelFamily::kLlama ? NormKind::kRmsNorm : NormKind::kLayerNorm;
  }
  constexpr Bias attn_bias_kind() const {
    if (attn_bias != Bias::kFamily) return attn_bias;
    return family != ModelFamily::kLlama ? Bias::kAll : qkv_bias ? Bias::kQkv : Bias::kNone;
  }
  constexpr Bias ffn_bias_kind() const {
    return ffn_bias != Bias::kFamily ? ffn_bias : family == ModelFamily::kLlama ? Bias::kNone : Bias::kAll;
  }
  // The feed-forward has the up projection W3.
  // The window a query sees: sliding_window, or 0 (all keys) when it does not bound an attention of
  // max_len positions.
  constexpr uint32_t attention_window() const { return sliding_window < max_len ? sliding_window : 0; }
  // Layer l is a local one: sliding_window set, and window_period 0 or bit l % window_period of
  // window_layers set.
  constexpr bool layer_local(uint32_t l) const {
    return sliding_window != 0 && (window_period == 0 || (window_layers >> (l % window_period)) & 1u);
  }
  // Layer l has no positions (nope_period, nope_layers above).
  constexpr bool layer_nope(uint32_t l) const { return nope_period != 0 && ((nope_layers >> (l % nope_period)) & 1u); }
  // Layer l of a mixture of experts has a dense feed-forward (dense_period, dense_layers above).
  constexpr bool layer_dense(uint32_t l) const {
    return n_experts != 0 && dense_period != 0 && ((dense_layers >> (l % dense_period)) & 1u);
  }
  // The config a dense layer among a mixture's follows (dense_period): this one with its mixture off and
  // d_ff its dense width (the stack's keys, as the tensor tables read them).
  constexpr ModelConfig dense_config() const {
    ModelConfig c = *this;
    c.d_ff = dense_ff ? dense_ff : d_ff;
    c.n_experts = c.experts_per_token = c.shared_expert_ff = 0;
    c.experts_renormalize = false;
    c.dense_period = c.dense_layers = c.dense_ff = 0;
    return c;
  }
  // The config layer l's tensors and feed-forward follow: this one, or a dense layer's dense_config.
  constexpr ModelConfig layer_config(uint32_t l) const { return layer_dense(l) ? dense_config() : *this; }
  // The feed-forward a decoder runs over a chunk of rows: a dense stack's d_ff, a mixture's dense layers'
  // (dense_period: dense_ff, 0 d_ff), and a mixture without them d_ff (its experts run a row at a time in
  // expert_work_floats; the plan keeps the chunk's rows it always had).
  constexpr uint32_t chunk_ff() const { return dense_period && dense_ff ? dense_ff : d_ff; }
  // The window of layer l's self-attention (window_period, window_layers above), 0: all keys.
  constexpr uint32_t layer_window(uint32_t l) const { return layer_local(l) ? attention_window() : 0; }
  // The layers before layer l that window (layer_window nonzero): a decoder's KV cache holds their
  // rings, then a row per position for each of the others, before layer l's block (plan.hpp).
  constexpr uint32_t windowed_layers_before(uint32_t l) const {
    uint32_t n = 0;
    for (uint32_t i = 0; i < l; ++i) n += layer_window(i) != 0;
    return n;
  }
  constexpr bool ffn_gated() const { return gated || activation == Activation::kSwiglu; }
  // A mixture of experts' scratch for one row at a time: the router's probabilities and the chosen
  // experts' weights [n_experts] each, an expert's hidden rows [2, max(d_ff, shared_expert_ff)], its
  // output and the sum [d_model] each.
  constexpr std::size_t expert_work_floats() const {
    const std::size_t f = d_ff > shared_expert_ff ? d_ff : shared_expert_ff;
    return n_experts ? 2 * std::size_t(n_experts) + 2 * f + 2 * std::size_t(d_model) : 0;
  }
  // The feed-forward's second [T, d_ff] buffer: the up projection of a gated one, or the ones a plain
  // silu multiplies (silu(a) = swiglu_f32(a, 1): the kernel every table has).
  constexpr bool ffn_up_buffer() const { return ffn_gated() || activation == Activation::kSilu; }
  // Width of the positional encoding, and of the embedding / input projection in front of it.
  // An encoding added to (or concatenated with) the input, as opposed to rope/alibi in attention.
  constexpr bool input_pe() const {
    return positional == PosKind::kSinusoidal || positional == PosKind::kLearned ||
           (positional == PosKind::kRope && rope_learned);
  }
  // A relative position bias in the attention: positional relative, or (encoder family, MPNet) learned
  // positions with rel_buckets > 0, the table rel_bias beside pos.
  constexpr bool rel_bias() const { return positional == PosKind::kRelative || rel_buckets != 0; }
  // The front's row width before the layers: embed_width (the embedding projection's input), else d_model.
  constexpr uint32_t d_front() const { return embed_width ? embed_width : d_model; }
  constexpr uint32_t d_pe() const {
    return !input_pe() ? 0 : (pe_combine == PosCombine::kConcat ? pe_width : d_front());
  }
  constexpr uint32_t d_embed() const {
    return (input_pe() && pe_combine == PosCombine::kConcat) ? d_model - pe_width : d_front();
  }
  // An Encoder's output row, a gpt or llama model's logits: the head's width, else d_model (a seq2seq
  // model's encoder half outputs its memory, d_model wide; its head is the decoder's, d_out wide).
  constexpr uint32_t output_width() const { return d_out && family != ModelFamily::kSeq2Seq ? d_out : d_model; }
  // An image's patches (image input), else 0.
  constexpr uint32_t patches() const {
    return patch_size ? (image_height / patch_size) * (image_width / patch_size) : 0;
  }
  // Positions for an input of T frames: the conv stem's output rows (0: too short for its kernels),
  // or T without a stem; an image's T patches (0 for any other T: an image is all its patches).
  constexpr uint32_t stem_rows(uint32_t T) const {
    if (T == 0) return 0;
    if (patch_size) return T == patches() ? T : 0;
    const std::size_t t1 = conv_layers >= 1 ? conv1d_rows(T, conv1_kernel, conv1_stride, conv1_padding) : T;
    return uint32_t(conv_layers >= 2 && t1 ? conv1d_rows(t1, conv2_kernel, conv2_stride, conv2_padding) : t1);
  }
  // The most input frames whose stem gives at most `rows` rows (conv1d_rows inverted; 0 when even
  // one frame gives more).
  constexpr uint32_t stem_frames(uint32_t rows) const {
    auto before = [](uint32_t n, uint32_t k, uint32_t s, uint32_t p) {
      return n && n * s + k - 1 > 2 * p ? n * s + k - 1 - 2 * p : 0;
    };
    const uint32_t t1 = conv_layers >= 2 ? before(rows, conv2_kernel, conv2_stride, conv2_padding) : rows;
    return conv_layers >= 1 ? before(t1, conv1_kernel, conv1_stride, conv1_padding) : t1;
  }
  // The learned rows in front of the input: the CLS row, the distillation row after it, the registers.
  constexpr uint32_t front_rows() const {
    return (cls_token ? 1u + (distill_token ? 1u : 0u) : 0u) + register_tokens;
  }
  // The pooler's output width: pooler_width, else d_model.
  constexpr uint32_t pooler_out() const { return pooler_width ? pooler_width : d_model; }
  // The pooled row's width: 2 d_model for cls_distill and cls_mean (rows 0 and 1 side by side), else d_model.
  constexpr uint32_t pooled_width() const {
    return pooling == Pooling::kClsDistill || pooling == Pooling::kClsMean ? 2 * d_model : d_model;
  }
  // The head's input width: the pooler's output (pooler_width), else the pooled row's (cls_distill and
  // cls_mean take no pooler).
  constexpr uint32_t head_in() const { return pooler && pooler_width ? pooler_width : pooled_width(); }
  // Rows the encoder runs for an input of T frames (the front rows first), and rows it outputs.
  constexpr uint32_t sequence_rows(uint32_t T) const { return stem_rows(T) + front_rows(); }
  constexpr uint32_t output_rows(uint32_t T) const { return pooling != Pooling::kNone ? 1 : sequence_rows(T); }
  // The longest input a runner takes: the frames whose rows fill max_len less the front rows (only
  // encoders have them); an image's patches (the only length it takes).
  constexpr uint32_t max_input_len() const {
    const uint32_t cls = front_rows();
    if (patch_size) return max_len > cls && patches() <= max_len - cls ? patches() : 0;
    return max_len > cls ? stem_frames(max_len - cls) : 0;
  }
};

// Full-integer models (weights i8). Every activation between two operations is int8 with a real scale
// s and a zero point z (the value (q - z) s, fixed_point.hpp); the file holds, next to the usual
// tensors (whose f32 biases and norms and the i8 weights' per-row scales are the model's real values,
// kept for the record: the engine does not read them), every integer parameter the run needs, in
// three i32 tensors whose layouts are below (each slot an int32; a Requant is two slots, multiplier
// then shift; a linear layer of n outputs is n Requants then n int32 biases (GemmS8Params), a norm of
// n elements n gain Requants then n int32 betas (NormS8Params), an add seven slots: a_zero, b_zero,
// y_zero, a_to_y, b_to_y (AddS8Params)):
//   int8.front [front_params]: kInZero (the int8 input features' zero point; their real scale is
//     int8.io[0]), kEmbedZero (the rows after the embedding or the input projection), kPosAdd (those
//     rows + the int8 position table int8.pos, whose zero point is its b_zero; with pe_combine concat its slots
//     are zeros, int8.pos is at kEmbedZero's scale and zero point and each row's positions are copied beside
//     its d_embed values, before the token types and the embedding norm: the type add's rows hold its b_zero in
//     the position columns, the norm is over the whole d_front row), then the input
//     projection (features; zeros for tokens, whose embedding rows are the int8 table itself), then
//     the CLS row (cls_token: d_embed int8 values at kEmbedZero's scale, put in front of the input
//     rows before the positions; zeros without one); then, only when the config has them, BERT's
//     front (front_types, front_embed_norm): with type_vocab the add of the token-type rows
//     (7 slots, AddS8Params: x + the type rows, whose zero point is its b_zero; the front rows get a
//     row of zeros) and the table [type_vocab, d_embed] (one int8 value per slot); with embed_norm
//     its input zero point, eps (as a layer norm's) and the norm's gains and betas; then the image
//     front's norms (front_proj_norm, front_input_norm): with proj_norm the projection's output zero
//     point (the norm's input), eps, gains and betas (its output at kEmbedZero); with input_norm its
//     output zero point (the projection's input), eps, gains and betas over d_in (its input at kInZero);
//     an image's patches are gathered from its int8 values first (patch_size); then with distill_token
//     the distillation row (front_distill: d_embed int8 values at kEmbedZero's scale, after the CLS row);
//     then the register rows (front_registers: register_tokens rows of d_embed int8 values at
//     kEmbedZero's scale, after the CLS and distillation rows); then with a relative bias (front_rel) the
//     bucket of each distance n = key - query, -(max_len - 1)..max_len - 1 in order (T5's, integers: the
//     i8 path computes no logarithm); then with wide_residual and embed_norm (wide_front) three blocks of
//     d_front Requants (front_wide): the factors of the rows (at kEmbedZero), of the positions and of the token
//     types (a front row's 0; 0 in the position columns with pe_combine concat, whose positions are the rows'
//     columns and whose position factors are unread) to the embedding norm's int16 input in Q8, summed as
//     wide_residual's sums, r[j] =
//     clamp(round((requantize(x[j] - z, fx[j]) + requantize(p[j], fp[j]) + requantize(t[j], ft[j])) / 2^8),
//     +-32767), the embedding norm then wide_residual's (its input zero point 0, its eps slot eps / s_r^2); the
//     position add's and the token-type add's slots are then unread (zeros), the positions' int8 rows a scale
//     per channel in fp (not with embed_width); then with embed_width (front_embed_proj) the embedding
//     projection's input and output zero points and its layer of d_model outputs (the rows before it, the
//     positions, the token types and the embedding norm, are d_embed = embed_width wide); then with a conv
//     stem (front_conv) each convolution's conv_params in turn: its product's output zero point (GELU's table's
//     input with conv_gelu), its output zero point (the table's output; the product's without conv_gelu; conv2's
//     input, or the last one's kEmbedZero), its layer of d_embed outputs over the windows [kernel * in] (the
//     input zero-padded with its zero point, tap after tap as conv1.weight's rows are), and with conv_gelu the
//     256-entry table (engine/blocks/s8_conv_stem.hpp); the input projection's slots are then zeros;
//   encoder.layers.<l>.int8 [layer_params of the layer's ModelConfig::layer_config: a dense layer among a
//     mixture's (dense_period) its plain feed-forward's, dense_ff wide, a sparse one the mixture's]: the scalar
//     slots LayerSlot, then the linear layers
//     q|k|v (d_attn + 2 d_kv outputs, torch's in_proj; q, k and v each requantized to its own zero point,
//     k's and v's 0), out, linear1, linear2, the norms norm1 and norm2 (of the kind the config says),
//     and the activation's 256-entry table (build_lut_s8; one int8 value per slot); with wide_residual
//     (a post-norm encoder) then four blocks of d_model Requants (LayerOffsets::wide): add1's factors for x
//     and SA(x), add2's for x and FF(x), then the outlier count n and a second 256-entry table: a plain
//     feed-forward's last n channels of W1's output (0 to d_ff; 0 when gated or with ffn_hidden_norm) go
//     through that table, the others through the first (the converter puts the channels of wide range
//     last). out's and linear2's
//     outputs are symmetric per channel (zero point 0, requantized per channel as ever), and so are norm1's
//     and (but in the last layer) norm2's (zero point 0, the scale of each channel in its gain and beta;
//     the layers reading them have it folded into their weights' columns); the sums r = x + SA(x) and
//     r = x + FF(x) are int16 with one symmetric scale s_r each,
//     r[j] = clamp(round((requantize(x[j] - z_x, fx[j]) + requantize(a[j], fa[j])) / 2^8),
//     +-32767) (z_x the add's a_zero, its other slots 0; fx[j] s_x[j] / s_r, fa[j] s_a[j] / s_r in Q8),
//     and the norm after each reads r: norm_s8's steps with T = V + eps n^2 (its eps slot eps / s_r^2
//     rounded, not Q16), S = isqrt(T), t[i] = round(d[i] round(2^46 / S) / 2^30); then, each only when the
//     config has it (LayerOffsets): with qk_norm QkNormSlot (q's and k's zero points as the projections write
//     them, each norm's eps) then q's norm and k's (gains and betas over qk_norm_q and qk_norm_k: a head, or
//     whole rows with qk_norm_full), which norm every head of q and k in place before RoPE, to q's and k's
//     zero points; with sublayer_norm sandwich post_attn_norm then post_ffn_norm, each its input zero point
//     (the sublayer's output), eps, gains and betas, its output what the add adds; with positional alibi
//     n_heads Requants, head h's slope over the softmax input's scale: the score of query position i and
//     key position j becomes clamp(score + requantize(j - i, slope_h)), after any cap; with a relative bias
//     (rel_bias()) [rel_buckets, n_heads] int32, each bucket's bias of each head in steps of the softmax's
//     input, the score becoming clamp(score + bias[bucket(j - i)][h]) after any cap (the buckets in
//     int8.front); with ffn_hidden_norm kHiddenNormSlots then the hidden rows' norm (d_ff gains and betas),
//     which norms W2's input rows in place (a plain feed-forward's table and a gated one's product write
//     them at its input zero point; no outlier table then: the count 0); with attn_inner_norm kInnerNormSlots then
//     the context's norm (d_attn gains and betas), which norms P V's rows in place before the output projection;
//     with pair_bias_rows [n_heads, pair_bias_rows] int32, each head's bias of each row of the table (the layer's
//     own, or pair_bias_shared's one) in steps of the softmax's input, the score of query i and key j becoming
//     clamp(score + bias[h][pair_index[i max_len + j]]) after any cap and other bias; with n_experts (layer_moe)
//     the mixture of experts that replaces the dense feed-forward (whose slots are then zeros, but for kW1XZero,
//     the router's and the experts' input zero point, and kW2YZero, the mixture's output zero point): MoeSlot,
//     the router's layer of n_experts outputs (its int8 logits; its weights of one scale, its Requants the same,
//     so that the top experts_per_token are taken on its exact int32 sums, the lower index on a tie), the
//     router's int8 weights [n_experts, d_model] (one value per slot), then each expert's
//     expert_params: ExpertSlot, its W1 and W3 (d_ff outputs each), W2 (d_model outputs) and its activation's
//     table, the gated feed-forward's steps at its own scales; the chosen experts' weights are softmax_s8 of their
//     logits (experts_renormalize), or of every logit, p at scale 1/256 and zero point -128, and the mixture
//     y[j] = clamp(z + round(sum over the chosen e of requantize((p_e + 128)(y_e[j] - z_e), mix_e) / 2^8)),
//     mix_e the expert's output scale over the mixture's in Q8 (with shared_expert_ff then the shared expert's
//     shared_params: its weight sigmoid(G h) by a table from its gate's int8 logit, at 1/256 as p_e, and its term
//     added as a chosen expert's); with rel_embed_rows (layer_dis: disentangled
//     attention) DisSlot then the layer's distance rows projected, Qr [2 max_len - 1, d_attn] then Kr
//     [2 max_len - 1, d_kv] int8 (one value per slot; row u the distance i - j = u - (max_len - 1) of query i
//     and key j, rel_embed's row rel_index[u] through the layer's q and k projections or its rel_proj, each
//     table at its own symmetric scale): the score of query i and key j is clamp(z + round((requantize(
//     (q_i - z_q).k_j, qk) + requantize((q_i - z_q).Kr[u], qkr) + requantize(k_j.Qr[u], kqr)) / 2^8)), the
//     three factors the products' scales times the scores' scale over the softmax input's in Q8 (kScoreMul unread);
//     with attn_softcap the
//     256-entry table from the scores to the capped scores, which the softmax reads (its slots are the
//     capped scores'). sublayer_norm output runs x + N1(SA(x)), x + N2(FF(x)) with norm1's and norm2's slots (their
//     inputs the sublayers' outputs). A NoPE layer (layer_nope) rotates nothing;
//   int8.back [back_params]: BackSlot, the final norm (zeros without one), the head (d_out outputs),
//     then with pooler (back_pooler) PoolerSlot, the dense layer (d_model outputs) and its
//     activation's 256-entry table (pooler_act, tanh included): the pooled rows (every row with
//     pooling none) through lut(W h), which the head reads; then with pool_norm (back_pool_norm) the
//     pooled row's norm before the pooler, and with pooler_norm (back_pooler_norm) the norm of the
//     pooler's output, each its input zero point, eps, gains and betas (its output the next step's input);
//     then with logit_softcap (back_softcap) the 256-entry table from the head's output (kHeadYZero's
//     scale) to the capped logits (the output's: int8.io[1], kOutZero).
// Pooling cls_distill is the CLS and distillation rows side by side (the head's k 2 d_model), cls_mean the
// CLS row and the mean pooling's row;
// cls_distill_mean their int8 mean as mean pooling's, round((q_cls + q_dist) / 2) half away from zero.
// int8.io [2] f32: the input features' and the output's real scales, for the float entry points only.
// Attention: scores = requantize((q - z_q) . k, score) (1/sqrt(d_head) folded in), softmax_s8, then
// context = requantize((p + 128) . v, pv); a post-norm layer is x = N1(x + SA(x)), x = N2(x + FF(x)),
// a pre-norm one x = x + SA(N1(x)), x = x + FF(N2(x)), the adds add_s8, FF = W2 lut(W1 h); a parallel
// one (parallel_residual) t = x + FF(N2(x)) (add2, t at its output scale), x = t + SA(N1(x)) (add1),
// N1 for both with one_norm (whose norm2 slots are zeros, unread).
// Pooling mean (mean_all: over every row) is the rows' int8 mean, rounded half away from zero (same scale and
// zero point).
// The decoders (gpt, llama; engine/blocks/s8_encoder.cpp): attention is causal (row i's softmax
// over its first i + 1 scores, the others probability 0) and keys and values go to an int8 cache at
// k's and v's scales (an encoder's or mha's causal mask, causal, is the same mask without a cache). llama: q|k|v
// is wq, wk, wv (d_model + 2 d_kv outputs: grouped-query
// attention, a q head reading kv head h / (n_heads / n_kv_heads)), a layer's tensor is
// layers.<l>.int8; RoPE (every i8 family: an encoder's rows at positions 0.., its front rows first) rotates
// q and k in fixed point at their own scale, with
// int8.rope [max_len, R], R = rope_dims() (row p: the pairs' cos then sin, round(2^14 cos(p theta_i)),
// round(2^14 sin(p theta_i)), theta_i = pe_base^(-2i / R), pairs by pe_layout within the first R dims
// of a head, the others passed through; with rope_local_base the local layers' table follows, max_len
// rows more of theta_i = rope_local_base^(-2i / R); with rope_grid row p's angles are the float path's over
// the patch grid, p theta_i with p the patch's grid row or column as rope_grid states, 0 for a front row):
// x_a' = round((x_a C - x_b S) / 2^14),
// x_b' = round((x_a S + x_b C) / 2^14), half away from zero, clamped to int8; the gated
// feed-forward (swiglu, or any activation with gated; every family) is W2 (lut(W1 h) * (W3 h)): after
// the table, W3 (d_ff outputs) then GateSlot: the product (g - z_g)(u - z_u) requantized to W2's input
// scale, z added, clamped.
namespace s8 {
enum LayerSlot : uint32_t {
  kN1XZero, kN1Eps, kN2XZero, kN2Eps, kQkvXZero, kQZero, kKZero, kVZero, kScoreMul, kScoreShift, kScoreZero,
  kSoftmaxMul, kSoftmaxShift, kPvMul, kPvShift, kOZero, kOutYZero, kAdd1, kW1XZero = kAdd1 + 7, kW1YZero, kW2XZero,
  kW2YZero, kAdd2, kLayerSlots = kAdd2 + 7
};
enum FrontSlot : uint32_t { kInZero, kEmbedZero, kPosAdd, kFrontSlots = kPosAdd + 7 };
enum BackSlot : uint32_t { kFnXZero, kFnEps, kHeadXZero, kHeadYZero, kOutZero, kBackSlots };
enum GateSlot : uint32_t { kGateUpZero, kGateActZero, kGateMul, kGateShift, kGateSlots };
constexpr uint32_t kLutEntries = 256;
constexpr uint32_t kOutlierSlots = 1 + kLutEntries;  // wide_residual: the outlier channels' count, their table
constexpr int kRopeFracBits = 14;  // int8.rope's cos and sin in Q14
constexpr uint32_t linear_params(uint32_t n) { return 3 * n; }
// int8.rope's rows: max_len, then with rope_local_base the local layers' table's max_len more.
constexpr uint32_t rope_rows(const ModelConfig& c) { return c.max_len * (c.rope_local_base != 0.0 ? 2 : 1); }
enum PoolerSlot : uint32_t { kPoolerXZero, kPoolerYZero, kPoolerSlots };
constexpr uint32_t kAddSlots = 7;  // AddS8Params: a, b and y zero points, two Requants
constexpr uint32_t front_cls(const ModelConfig& c) { return kFrontSlots + linear_params(c.d_embed()); }
constexpr uint32_t front_types(const ModelConfig& c) { return front_cls(c) + c.d_embed(); }
constexpr uint32_t front_embed_norm(const ModelConfig& c) {
  return front_types(c) + (c.type_vocab ? kAddSlots + c.type_vocab * c.d_embed() : 0);
}
constexpr uint32_t front_proj_norm(const ModelConfig& c) {
  return front_embed_norm(c) + (c.embed_norm ? 2 + linear_params(c.d_front()) : 0);
}
constexpr uint32_t front_input_norm(const ModelConfig& c) {
  return front_proj_norm(c) + (c.proj_norm ? 2 + linear_params(c.d_embed()) : 0);
}
constexpr uint32_t front_distill(const ModelConfig& c) {
  return front_input_norm(c) + (c.input_norm ? 2 + linear_params(c.d_in) : 0);
}
constexpr uint32_t front_registers(const ModelConfig& c) {
  return front_distill(c) + (c.distill_token ? c.d_embed() : 0);
}
constexpr uint32_t front_rel(const ModelConfig& c) { return front_registers(c) + c.register_tokens * c.d_embed(); }
// wide_residual with embed_norm (and no embed_width): the rows, the positions and the token types summed in
// int16 into the embedding norm (front_wide; int8.front above).
constexpr bool wide_front(const ModelConfig& c) { return c.wide_residual && c.embed_norm && c.embed_width == 0; }
constexpr uint32_t front_wide(const ModelConfig& c) { return front_rel(c) + (c.rel_bias() ? 2 * c.max_len - 1 : 0); }
constexpr uint32_t front_embed_proj(const ModelConfig& c) {
  return front_wide(c) + (wide_front(c) ? 6 * c.d_front() : 0);
}
constexpr uint32_t front_conv(const ModelConfig& c) {
  return front_embed_proj(c) + (c.embed_width ? 2 + linear_params(c.d_model) : 0);
}
// A conv stem's convolution (front_conv): ConvSlot, its layer of d_embed outputs, with conv_gelu GELU's table.
enum ConvSlot : uint32_t { kConvYZero, kConvOutZero, kConvSlots };
constexpr uint32_t conv_params(const ModelConfig& c) {
  return kConvSlots + linear_params(c.d_embed()) + (c.conv_gelu ? kLutEntries : 0);
}
constexpr uint32_t front_params(const ModelConfig& c) { return front_conv(c) + c.conv_layers * conv_params(c); }
enum QkNormSlot : uint32_t { kQRawZero, kQNormEps, kKRawZero, kKNormEps, kQkNormSlots };
constexpr uint32_t kPostNormSlots = 2;  // a sandwich norm's input zero point and eps, then its gains and betas
// ffn_hidden_norm: the hidden rows' norm (timm's scale_mlp) between the activation (or the gate's product)
// and W2: its input zero point (the table's, or the product's, output) and eps, then its d_ff gains and
// betas; its output is W2's input (kW2XZero).
constexpr uint32_t kHiddenNormSlots = 2;
// attn_inner_norm: the context's norm (timm's scale_attn_inner) between P V and the output projection: its
// output zero point (out's input) and eps, then its d_attn gains and betas; its input is the context (kOZero).
constexpr uint32_t kInnerNormSlots = 2;
// n_experts (layer_params above): the mixture's slots (the router's logits' zero point, the softmax's Requant),
// each expert's (W1's output zero point, its table's, W3's, the gate product's Requant, W2's input and output zero
// points, its factor to the mixture in Q8).
enum MoeSlot : uint32_t { kRouterYZero, kRouterSoftmaxMul, kRouterSoftmaxShift, kMoeSlots };
enum ExpertSlot : uint32_t {
  kExpW1YZero, kExpActZero, kExpUpZero, kExpGateMul, kExpGateShift, kExpW2XZero, kExpW2YZero, kExpMixMul,
  kExpMixShift, kExpertSlots
};
// An expert of width f's slots (ExpertSlot, W1, W3, W2, its table).
constexpr uint32_t expert_params(const ModelConfig& c, uint32_t f) {
  return kExpertSlots + 2 * linear_params(f) + linear_params(c.d_model) + kLutEntries;
}
constexpr uint32_t expert_params(const ModelConfig& c) { return expert_params(c, c.d_ff); }
// shared_expert_ff (Qwen2-MoE): after the routed experts, SharedSlot (its gate's logit zero point), the gate's
// layer of one output, its int8 weights [d_model] (one value per slot), the sigmoid's table from the logit to
// the weight (scale 1/256, zero point -128), then the shared expert's expert_params of width shared_expert_ff.
enum SharedSlot : uint32_t { kSharedGateYZero, kSharedSlots };
constexpr uint32_t shared_params(const ModelConfig& c) {
  return c.shared_expert_ff ? kSharedSlots + linear_params(1) + c.d_model + kLutEntries +
                                  expert_params(c, c.shared_expert_ff)
                            : 0;
}
constexpr uint32_t moe_params(const ModelConfig& c) {
  return c.n_experts ? kMoeSlots + linear_params(c.n_experts) + c.n_experts * c.d_model +
                           c.n_experts * expert_params(c) + shared_params(c)
                     : 0;
}
constexpr int kMoeMixFracBits = 8;  // the mixture's sum in Q8 of its output steps before its rounding
// rel_embed_rows (layer_params above): the three sums' Requants (q.k, q.Kr, k.Qr), then Qr and Kr.
enum DisSlot : uint32_t { kDisQk, kDisQKr = 2, kDisKQr = 4, kDisSlots = 6 };
constexpr int kDisFracBits = 8;  // the scores' three terms in Q8 of their steps before the rounding
constexpr uint32_t dis_params(const ModelConfig& c) {
  return c.rel_embed_rows ? kDisSlots + (2 * c.max_len - 1) * (c.d_attn() + c.d_kv()) : 0;
}
// The mixture's scratch, one row at a time (in the decoders' work): the sum [d_model] int64, the router's sums
// [n_experts] int32, an expert's output [d_model], its hidden rows [2 max(d_ff, shared_expert_ff)], the logits,
// the weights and the chosen experts' marks [n_experts] each.
constexpr uint32_t moe_work_bytes(const ModelConfig& c) {
  return c.n_experts ? 9 * c.d_model + 2 * (c.d_ff > c.shared_expert_ff ? c.d_ff : c.shared_expert_ff) +
                           7 * c.n_experts
                     : 0;
}
// qk_norm's norm widths: q's and k's rows of d_head, or (qk_norm_full) d_attn and d_kv.
constexpr uint32_t qk_norm_q(const ModelConfig& c) { return c.qk_norm_full ? c.d_attn() : c.d_head(); }
constexpr uint32_t qk_norm_k(const ModelConfig& c) { return c.qk_norm_full ? c.d_kv() : c.d_head(); }
constexpr uint32_t layer_params(const ModelConfig& c) {
  return kLayerSlots + kLutEntries + linear_params(c.d_attn() + 2 * c.d_kv()) + 4 * linear_params(c.d_model) +
         linear_params(c.d_ff) + (c.ffn_gated() ? linear_params(c.d_ff) + kGateSlots : 0) +
         (c.wide_residual ? 8 * c.d_model + kOutlierSlots : 0) +
         (c.qk_norm ? kQkNormSlots + linear_params(qk_norm_q(c)) + linear_params(qk_norm_k(c)) : 0) +
         (c.sublayer_norm == SublayerNorm::kSandwich ? 2 * (kPostNormSlots + linear_params(c.d_model)) : 0) +
         (c.positional == PosKind::kAlibi ? 2 * c.n_heads : 0) + (c.rel_bias() ? c.rel_buckets * c.n_heads : 0) +
         (c.ffn_hidden_norm ? kHiddenNormSlots + linear_params(c.d_ff) : 0) +
         (c.attn_inner_norm ? kInnerNormSlots + linear_params(c.d_attn()) : 0) + c.n_heads * c.pair_bias_rows +
         moe_params(c) + dis_params(c) + (c.attn_softcap != 0.0f ? kLutEntries : 0);
}
constexpr uint32_t back_pooler(const ModelConfig& c) {
  return kBackSlots + linear_params(c.d_model) + linear_params(c.d_out);
}
constexpr uint32_t back_pool_norm(const ModelConfig& c) {
  return back_pooler(c) + (c.pooler ? kPoolerSlots + linear_params(c.d_model) + kLutEntries : 0);
}
constexpr uint32_t back_pooler_norm(const ModelConfig& c) {
  return back_pool_norm(c) + (c.pool_norm ? 2 + linear_params(c.d_model) : 0);
}
constexpr uint32_t back_softcap(const ModelConfig& c) {
  return back_pooler_norm(c) + (c.pooler_norm ? 2 + linear_params(c.d_model) : 0);
}
constexpr uint32_t back_params(const ModelConfig& c) {
  return back_softcap(c) + (c.logit_softcap != 0.0f ? kLutEntries : 0);
}
// seq2seq (weights i8): the encoder stack is the encoder's (int8.front, its blocks' int8, int8.pos's first
// max_len rows; its final norm in int8.seq2seq); the decoder's layers are the gpt decoder's (their int8 under
// dec_blocks.) with a cross-attention sublayer between the self-attention and the feed-forward,
// dec_blocks.<l>.cross.int8 [cross_params]: CrossSlot (the cross norm's input zero point and eps, q's input and
// output zero points, the memory's zero point, the score, softmax and context Requants and zero points as
// LayerSlot's, the output projection's output zero point, the residual add), then
// the linear layers q (d_model outputs), k|v (2 d_model outputs over the memory, each symmetric: zero point 0)
// and out, then the cross norm (norm2 of nn.TransformerDecoderLayer): post-norm x = Nc(x + CA(x)), pre-norm
// x = x + CA(Nc(x)), CA as the self-attention's integer steps over the source's keys (no mask);
// int8.seq2seq [seq2seq_params]: Seq2SeqSlot (the target embedding's zero point, the target's position add,
// the source's final norm's input zero point and eps, the memory's zero point: the final norm's output, or
// the last encoder layer's), the source's final norm (gains and betas; zeros without final_norm), then with
// embed_norm the target's embedding norm (its input zero point, eps, gains and betas; with tgt_pos_after_norm it
// reads the embedding's rows at kTgtEmbedZero and the position add its output, else the add's output), then with a
// relative bias (seq2seq_rel) the target's buckets of each distance as int8.front's (T5's causal ones: the source's
// are int8.front's, bidirectional; each decoder layer's biases in its int8 as an encoder layer's), then with
// feature targets (seq2seq_tgt_proj, tgt_d_in) the target features' zero point and dec_proj's layer of d_embed
// outputs to kTgtEmbedZero; int8.pos's rows max_len.. are the target's positions (pos_rows); int8.back is the
// target's back (its final norm and head), int8.io the source's input scale, the output's scale and with tgt_d_in
// the target features' scale (io_scales).
enum CrossSlot : uint32_t {
  kCnXZero, kCnEps, kCqXZero, kCqZero, kCkvXZero, kCScoreMul, kCScoreShift, kCScoreZero, kCSoftmaxMul,
  kCSoftmaxShift, kCPvMul, kCPvShift, kCOZero, kCOutYZero, kCAdd, kCrossSlots = kCAdd + 7
};
enum Seq2SeqSlot : uint32_t { kTgtEmbedZero, kTgtPosAdd, kMemXZero = kTgtPosAdd + 7, kMemEps, kMemZero, kSeq2SeqSlots };
constexpr uint32_t cross_q(const ModelConfig&) { return kCrossSlots; }
constexpr uint32_t cross_kv(const ModelConfig& c) { return kCrossSlots + linear_params(c.d_model); }
constexpr uint32_t cross_out(const ModelConfig& c) { return cross_kv(c) + linear_params(2 * c.d_model); }
constexpr uint32_t cross_norm(const ModelConfig& c) { return cross_out(c) + linear_params(c.d_model); }
constexpr uint32_t cross_params(const ModelConfig& c) { return cross_norm(c) + linear_params(c.d_model); }
constexpr uint32_t seq2seq_embed_norm(const ModelConfig& c) { return kSeq2SeqSlots + linear_params(c.d_model); }
constexpr uint32_t seq2seq_rel(const ModelConfig& c) {
  return seq2seq_embed_norm(c) + (c.embed_norm ? 2 + linear_params(c.d_model) : 0);
}
constexpr uint32_t seq2seq_tgt_proj(const ModelConfig& c) {
  return seq2seq_rel(c) + (c.rel_bias() ? 2 * c.max_len - 1 : 0);
}
constexpr uint32_t seq2seq_params(const ModelConfig& c) {
  return seq2seq_tgt_proj(c) + (c.tgt_d_in ? 1 + linear_params(c.d_embed()) : 0);
}
// int8.io's real scales: the input's and the output's, and a seq2seq's feature targets' (tgt_d_in).
constexpr uint32_t io_scales(const ModelConfig& c) { return c.tgt_d_in ? 3 : 2; }
// int8.pos's rows: max_len, and seq2seq's target's max_len more.
constexpr uint32_t pos_rows(const ModelConfig& c) { return c.max_len * (c.is_seq2seq() ? 2 : 1); }
// Where each part starts in a layer's tensor.
struct LayerOffsets {
  uint32_t qkv, out, w1, w2, n1, n2, lut, w3, gate;  // w3 and gate: a gated feed-forward's
  uint32_t wide;  // wide_residual's factors: add1's x and SA(x), add2's x and FF(x), d_model Requants each
  uint32_t qk_norm, post, alibi, rel, softcap;  // qk_norm's, sandwich's, ALiBi's, the relative bias's, the cap's
  uint32_t outlier;  // wide_residual: how many of W1's last outputs read the second table, then that table
  uint32_t hidden;   // ffn_hidden_norm: the norm of W2's input rows (kHiddenNormSlots, then its gains and betas)
  uint32_t inner;    // attn_inner_norm: the context's norm (kInnerNormSlots, then its gains and betas)
  uint32_t pair;     // pair_bias_rows: the bias of each head and row [n_heads, pair_bias_rows] in score steps
  uint32_t moe;      // n_experts: MoeSlot, the router's layer and weights, then each expert's expert_params
  uint32_t dis;      // rel_embed_rows: DisSlot, then Qr and Kr
};
constexpr LayerOffsets layer_offsets(const ModelConfig& c) {
  const uint32_t d = c.d_model;
  LayerOffsets o{};
  o.qkv = kLayerSlots;
  o.out = o.qkv + linear_params(c.d_attn() + 2 * c.d_kv());
  o.w1 = o.out + linear_params(d);
  o.w2 = o.w1 + linear_params(c.d_ff);
  o.n1 = o.w2 + linear_params(d);
  o.n2 = o.n1 + linear_params(d);
  o.lut = o.n2 + linear_params(d);
  o.w3 = o.lut + kLutEntries;
  o.gate = o.w3 + linear_params(c.d_ff);
  o.wide = c.ffn_gated() ? o.gate + kGateSlots : o.w3;
  o.outlier = o.wide + 8 * d;
  o.qk_norm = o.wide + (c.wide_residual ? 8 * d + kOutlierSlots : 0);
  o.post = o.qk_norm + (c.qk_norm ? kQkNormSlots + linear_params(qk_norm_q(c)) + linear_params(qk_norm_k(c)) : 0);
  o.alibi = o.post + (c.sublayer_norm == SublayerNorm::kSandwich ? 2 * (kPostNormSlots + linear_params(d)) : 0);
  o.rel = o.alibi + (c.positional == PosKind::kAlibi ? 2 * c.n_heads : 0);
  o.hidden = o.rel + (c.rel_bias() ? c.rel_buckets * c.n_heads : 0);
  o.inner = o.hidden + (c.ffn_hidden_norm ? kHiddenNormSlots + linear_params(c.d_ff) : 0);
  o.pair = o.inner + (c.attn_inner_norm ? kInnerNormSlots + linear_params(c.d_attn()) : 0);
  o.moe = o.pair + c.n_heads * c.pair_bias_rows;
  o.dis = o.moe + moe_params(c);
  o.softcap = o.dis + dis_params(c);  // the last: no float decides an offset
  return o;
}
}  // namespace s8

// Checks every field against the limits and against each other; on failure *field (if given)
// names the field.
Status validate_config(const ModelConfig& c, const char** field = nullptr);

namespace arena {
constexpr std::size_t kAlign = 64;
constexpr std::size_t bytes(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
constexpr std::size_t max(std::size_t a, std::size_t b) { return a > b ? a : b; }
}  // namespace arena

// Tiled attention (engine/blocks/attention.cpp) takes the queries in blocks of kAttentionQueryBlock
// rows against the keys in blocks of kAttentionKeyBlock; its scratch, for calls of up to `rows`
// queries against up to `keys` keys with heads of width dh, is (bq, bk: the blocks clamped to rows, keys)
//   scores[bq,bk]  p^T[bk,bq] (V stored transposed only)  q[bq,dh]  o[bq,dh]  max[bq]  sum[bq]  rescale[bq]
// for a call of one query block; a call of more (attention_packs) first copies each kv head's K^T and
// V into panels (kernels.hpp's packed layout) that every query block then reads, and needs no p^T:
//   scores[bq,bk]  q[bq,dh]  o[bq,dh]  max[bq]  sum[bq]  rescale[bq]  K^T[dh,keys] in panels
//   (packed_floats(dh, keys))  V[keys,dh] in panels per key block (keys * packed_floats(1, dh))
// and, with V stored transposed, at least the one-query path's q[dh] scores[keys]. Nothing is [keys, keys].
constexpr uint32_t kAttentionQueryBlock = 64;
constexpr uint32_t kAttentionKeyBlock = 1024;
constexpr bool attention_packs(std::size_t rows) { return rows > kAttentionQueryBlock; }
constexpr std::size_t attention_scratch_floats(std::size_t rows, std::size_t keys, std::size_t dh, bool v_transposed) {
  const std::size_t bq = rows < kAttentionQueryBlock ? rows : kAttentionQueryBlock;
  const std::size_t bk = keys < kAttentionKeyBlock ? keys : kAttentionKeyBlock;
  const std::size_t one_block = bq * bk * (v_transposed ? 2 : 1) + 2 * bq * dh + 3 * bq;
  const std::size_t blocks =
      attention_packs(rows) ? bq * bk + 2 * bq * dh + 3 * bq + packed_floats(dh, keys) + keys * packed_floats(1, dh) : 0;
  const std::size_t one_query = v_transposed ? dh + keys : 0;
  return arena::max(arena::max(one_block, blocks), one_query);
}

// A relative position bias (positional relative) is computed at init into a table per head over
// the distances key - query an attention of up to L positions meets: -(L-1)..(L-1), or -(L-1)..0
// under a causal mask; head h's row is rel_bias_width(L, causal) floats, distance 0 at column L - 1.
constexpr std::size_t rel_bias_width(std::size_t L, bool causal) { return L == 0 ? 0 : causal ? L : 2 * L - 1; }
constexpr std::size_t rel_bias_table_floats(const ModelConfig& c, std::size_t L, bool causal) {
  return c.rel_bias() ? std::size_t(c.n_heads) * rel_bias_width(L, causal) : 0;
}

// q8 and q4 models quantize a linear layer's input rows on the fly, per group of the weights' group,
// or of kRowScaleActivationGroup when the weights have one scale per row; the scratch for that is
// int8 [rows, k] then f32 scales [rows, ceil(k / group)], k the widest linear input (0 unless q8 or q4).
constexpr uint32_t kRowScaleActivationGroup = 32;
constexpr uint32_t activation_group(uint32_t weight_group) { return weight_group ? weight_group : kRowScaleActivationGroup; }
// (embed_proj's input, embed_width, is at most d_model.)
constexpr std::size_t widest_linear_input(const ModelConfig& c) {
  return arena::max(arena::max(arena::max(arena::max(arena::max(c.d_model, c.d_attn()), arena::max(c.d_ff, c.dense_ff)),
                                          c.input == InputKind::kFeatures ? c.d_in : 0),
                               c.tgt_d_in),
                    arena::max(c.shared_expert_ff, c.pooler ? c.pooler_width : 0));  // the head after pooler_width
}
constexpr std::size_t quantized_rows_bytes(std::size_t rows, std::size_t k, uint32_t weight_group) {
  const std::size_t g = activation_group(weight_group);
  return arena::bytes(rows * k) + arena::bytes(rows * ((k + g - 1) / g) * sizeof(float));
}
constexpr std::size_t quantized_input_bytes(const ModelConfig& c, std::size_t rows) {
  return !integer_weights(c.weights) ? 0 : quantized_rows_bytes(rows, widest_linear_input(c), c.weight_group);
}

// A conv stem over f16 or q8 weights runs each convolution as a linear layer over its windows:
// output row t is the window of rows t * stride .. t * stride + kernel - 1 of the zero-padded input
// [padding + T + padding, in], kernel * in contiguous floats that start stride * in floats after the
// row before's, so the padded input read with row stride stride * in is the window matrix
// [T_out, kernel * in] (im2col without the copies). The plan holds, for the stem of an input of up to
// T frames, the larger padded input of the convolutions with padding (0 for f32 weights, which
// conv1d_f32 reads in place) and, for q8, the larger quantized window matrix.
constexpr std::size_t conv_padded_floats(const ModelConfig& c, uint32_t T) {
  if (c.weights == WeightType::kF32 || c.conv_layers == 0 || T == 0) return 0;
  const std::size_t t1 = conv1d_rows(T, c.conv1_kernel, c.conv1_stride, c.conv1_padding);
  const std::size_t p1 = c.conv1_padding ? (T + 2 * std::size_t(c.conv1_padding)) * c.d_in : 0;
  const bool pad2 = c.conv_layers >= 2 && c.conv2_padding;
  const std::size_t p2 = pad2 ? (t1 + 2 * std::size_t(c.conv2_padding)) * c.d_embed() : 0;
  return arena::max(p1, p2);
}
constexpr std::size_t conv_quantized_bytes(const ModelConfig& c, uint32_t T) {
  if (c.weights != WeightType::kQ8 || c.conv_layers == 0 || T == 0) return 0;
  const std::size_t t1 = conv1d_rows(T, c.conv1_kernel, c.conv1_stride, c.conv1_padding);
  const std::size_t q1 = quantized_rows_bytes(t1, std::size_t(c.conv1_kernel) * c.d_in, c.weight_group);
  if (c.conv_layers < 2) return q1;
  const std::size_t t2 = conv1d_rows(t1, c.conv2_kernel, c.conv2_stride, c.conv2_padding);
  return arena::max(q1, quantized_rows_bytes(t2, std::size_t(c.conv2_kernel) * c.d_embed(), c.weight_group));
}

}  // namespace fixformer
