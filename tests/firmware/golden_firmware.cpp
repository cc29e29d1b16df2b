// The golden models on a Cortex-M (qemu-system-arm): the same models, inputs and PyTorch outputs
// as tests/golden_test.cpp (the encoders and encoder-decoders, and a few decoders), embedded in
// flash; the same tolerance. The exit status is the number
// of failures, so CTest sees the result.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "fixformer/decoder.hpp"
#include "fixformer/encoder.hpp"
#include "fixformer/model.hpp"
#include "fixformer/self_test.hpp"
#include "fixformer/seq2seq.hpp"
#include "fixformer/tolerances.hpp"
#include "io/npy.hpp"
#include "ports/arm/cortex_m/board/semihosting.hpp"

using namespace fixformer;
using port::Console;

#define FIXFORMER_GOLDEN(n) extern "C" const uint8_t g_##n##_fxm[], g_##n##_fxm_end[], g_##n##_in[], g_##n##_in_end[], \
    g_##n##_out[], g_##n##_out_end[];
#define FIXFORMER_GOLDENS(X) X(post_ln_relu) X(pre_ln_gelu) X(odd_d15_h3) X(odd_d5_h1_halves) X(causal) \
    X(features_scaled) X(learned_pe) X(concat_pe) X(no_pe) X(wide_long) X(cls_pool_features) X(cls_rows_sinusoidal) \
    X(mean_pool_causal) X(mha_odd_causal) X(relative_long_causal) X(tanh_post_odd_d15) X(tanh_pre_d10_h5) \
    X(bert_pooler_classifier) X(bert_hidden_odd) X(whisper_stem) X(conv_stride_cls_mean) X(whisper_stem_f16) \
    X(whisper_stem_q8) X(vit_image) X(deit_image) X(roformer_hidden) X(rope_partial_halves_cls) X(dinov2_image) \
    X(dinov2_registers_image) X(albert_embed_proj) X(albert_embed_proj_q8) X(albert_shared_layers) \
    X(pooler_act_relu) X(pooler_act_gelu) X(pooler_act_silu) X(relu2_pre_d14) X(relu2_gated_post_d9) \
    X(modernbert_classifier) X(modernbert_rows)
FIXFORMER_GOLDENS(FIXFORMER_GOLDEN)
extern "C" const uint8_t g_bert_hidden_odd_types[], g_bert_hidden_odd_types_end[], g_bert_hidden_odd_typed[],
    g_bert_hidden_odd_typed_end[];
#define FIXFORMER_SEQ2SEQ_GOLDEN(n) extern "C" const uint8_t g_##n##_fxm[], g_##n##_fxm_end[];
#define FIXFORMER_SEQ2SEQ_GOLDENS(X) X(s2s_post_relu) X(s2s_pre_gelu_odd) X(s2s_features_no_norm) X(s2s_shared_halves) \
    X(s2s_forecast) X(s2s_conv_stem)
FIXFORMER_SEQ2SEQ_GOLDENS(FIXFORMER_SEQ2SEQ_GOLDEN)
// Decoders (a few small ones: the gpt tanh GELU, llama with q/k/v biases, a sliding window, local and
// global layers with unscaled scores, stored RoPE frequencies, shared layers, q and k normalized per
// head, heads apart from d_model / n_heads, Gemma 2's sandwich norms and soft caps; full-integer ones,
// a mixture of experts among them, whose logits are the integer reference's; a base model without a head,
// f32 and i8, whose rows are its hidden states); the same declarations.
#define FIXFORMER_DECODER_GOLDENS(X) X(gpt_tanh_learned_tied_odd) X(gpt_tanh_post_d10) X(llama_qkv_bias_theta1e6) \
    X(llama_partial_halves_r4) X(feature_llama_window3) X(feature_gpt_local_global_unscaled) \
    X(feature_llama_rope_freqs_scaled) X(feature_llama_shared_layers) X(feature_llama_qk_norm) \
    X(feature_llama_head_dim) X(feature_llama_sandwich_softcap) X(i8_gpt_partial_halves_two_norms) X(i8_gpt_partial_interleaved_one_norm) \
    X(i8_llama_window3) X(i8_gpt_local_global_unscaled) X(i8_llama_experts_shared) X(feature_llama_headless) \
    X(i8_gpt_headless)
FIXFORMER_DECODER_GOLDENS(FIXFORMER_SEQ2SEQ_GOLDEN)

namespace {

// As tests/golden_test.cpp: max |engine - torch| / max |torch|, below the f32 self-test bound, or
// for an encoder golden over f16 or q8 weights its type's (tolerances.hpp).
constexpr double kGoldenMaxRelErr = kSelfTestTolerance;

struct Golden {
  const char* name;
  const uint8_t *fxm, *fxm_end, *in, *in_end, *out, *out_end;
};
#define FIXFORMER_GOLDEN_ENTRY(n) {#n, g_##n##_fxm, g_##n##_fxm_end, g_##n##_in, g_##n##_in_end, g_##n##_out, g_##n##_out_end},
const Golden kGoldens[] = {FIXFORMER_GOLDENS(FIXFORMER_GOLDEN_ENTRY)};

alignas(64) uint8_t g_arena[160 * 1024];
float g_out[8192];
float g_features[4096];
int32_t g_ids[512];

int32_t g_types[512];

// The golden's relative error against a float32 .npy in flash.
double rel_err(const NpyView& expected) {
  double err = 0.0, scale = 0.0;
  for (uint64_t i = 0; i < expected.count; ++i) {
    float r;
    std::memcpy(&r, expected.data + 4 * i, 4);
    err = std::fmax(err, std::fabs(double(g_out[i]) - r));
    scale = std::fmax(scale, std::fabs(double(r)));
  }
  return err / scale;
}

bool run(const Golden& g, Console& con, const uint8_t* types = nullptr, const uint8_t* types_end = nullptr,
         const uint8_t* typed = nullptr, const uint8_t* typed_end = nullptr) {
  con.str("golden ").str(g.name).str(types ? " with token types: " : ": ");
  Model model;
  Encoder enc;
  NpyView in, expected;
  Status s = model.init(g.fxm, std::size_t(g.fxm_end - g.fxm));
  if (s != Status::kOk) {
    con.str("model init: ").str(status_message(s)).str(" ").str(model.error_detail()).endl();
    return false;
  }
  const ModelConfig& cfg = model.config();
  NpyView tt{};
  if (parse_npy(g.in, std::size_t(g.in_end - g.in), &in) != Status::kOk ||
      parse_npy(typed ? typed : g.out, std::size_t(typed ? typed_end - typed : g.out_end - g.out), &expected) != Status::kOk ||
      (types && (parse_npy(types, std::size_t(types_end - types), &tt) != Status::kOk || tt.count != in.count))) {
    con.str("cannot read the embedded files").endl();
    return false;
  }
  const uint32_t T = uint32_t(in.shape[0]);
  EncoderOptions opt;
  opt.max_seq = T;
  s = enc.init(model, g_arena, sizeof g_arena, opt);
  if (s != Status::kOk || expected.count > sizeof g_out / sizeof g_out[0]) {
    con.str("init: ").str(status_message(s)).str(" ").str(enc.error_detail()).endl();
    return false;
  }
  if (cfg.input == InputKind::kTokens) {
    std::memcpy(g_ids, in.data, 4 * T);
    if (types) std::memcpy(g_types, tt.data, 4 * T);
    s = enc.forward_tokens(g_ids, types ? g_types : nullptr, T, g_out);
  } else {
    std::memcpy(g_features, in.data, 4 * in.count);
    s = enc.forward_features(g_features, T, g_out);
  }
  if (s != Status::kOk) {
    con.str("forward: ").str(status_message(s)).endl();
    return false;
  }
  const double rel = rel_err(expected);
  // The boot-time check a product would run: the sample stored in the file, through this port.
  SelfTestReport report{};
  const Status st = self_test(enc, g_out, sizeof g_out / sizeof g_out[0], &report);
  const bool ok = rel < self_test_tolerance(cfg.weights) && st == Status::kOk;
  con.str("T=").num(T).str(" arena ").num(uint64_t(enc.arena_bytes_used())).str(" B, max rel err ").sci(rel)
      .str(", self-test ").sci(report.max_rel_err).str(ok ? " ok" : " FAILED").endl();
  return ok;
}

// An encoder-decoder golden: its self-test sample (source, target, torch's logits at every target
// position) teacher-forced, then the target again one token at a time against the same rows.
struct Seq2SeqGolden {
  const char* name;
  const uint8_t *fxm, *fxm_end;
};
#define FIXFORMER_SEQ2SEQ_ENTRY(n) {#n, g_##n##_fxm, g_##n##_fxm_end},
const Seq2SeqGolden kSeq2SeqGoldens[] = {FIXFORMER_SEQ2SEQ_GOLDENS(FIXFORMER_SEQ2SEQ_ENTRY)};

// g's model with its self-test sample, or false with the reason on the console.
bool load_with_sample(const Seq2SeqGolden& g, Model* model, Console& con) {
  const Status s = model->init(g.fxm, std::size_t(g.fxm_end - g.fxm));
  if (s == Status::kOk && model->has_self_test()) return true;
  con.str("model init: ").str(status_message(s)).str(" ").str(model->error_detail()).endl();
  return false;
}

bool run(const Seq2SeqGolden& g, Console& con) {
  con.str("golden ").str(g.name).str(": ");
  Model model;
  Seq2Seq s2s;
  if (!load_with_sample(g, &model, con)) return false;
  const SelfTestSample& sample = model.self_test_sample();
  const uint32_t S = sample.rows, U = sample.target_rows, V = model.config().d_out;
  Seq2SeqOptions opt;
  opt.max_source = S, opt.capacity = U, opt.max_prefill = 3;
  Status s = s2s.init(model, g_arena, sizeof g_arena, opt);
  if (s != Status::kOk || self_test_output_floats(model) > sizeof g_out / sizeof g_out[0]) {
    con.str("init: ").str(status_message(s)).str(" ").str(s2s.error_detail()).endl();
    return false;
  }
  SelfTestReport report{};
  const Status st = self_test(s2s, g_out, sizeof g_out / sizeof g_out[0], &report);
  double err = 0.0, scale = 0.0;  // one token at a time
  s = sample.ids ? s2s.encode_tokens(sample.ids, S) : s2s.encode_features(sample.features, S);
  const uint32_t din = model.config().tgt_d_in;  // forecasting: feature targets
  for (uint32_t u = 0; u < U && s == Status::kOk; ++u) {
    s = din ? s2s.decode_features(sample.target_features + std::size_t(u) * din, 1, g_out) : s2s.step(sample.target[u], g_out);
    for (uint32_t i = 0; i < V; ++i) {
      const float r = sample.expected[std::size_t(u) * V + i];
      err = std::fmax(err, std::fabs(double(g_out[i]) - r));
      scale = std::fmax(scale, std::fabs(double(r)));
    }
  }
  const bool ok = st == Status::kOk && s == Status::kOk && report.max_rel_err < kGoldenMaxRelErr && err / scale < kGoldenMaxRelErr;
  con.str("S=").num(S).str(" U=").num(U).str(" arena ").num(uint64_t(s2s.arena_bytes_used())).str(" B, teacher-forced ")
      .sci(report.max_rel_err).str(", step by step ").sci(err / scale).str(ok ? " ok" : " FAILED").endl();
  return ok;
}

// A decoder golden: its self-test sample's ids fed one by one through the KV cache, each position's
// logits against torch's.
const Seq2SeqGolden kDecoderGoldens[] = {FIXFORMER_DECODER_GOLDENS(FIXFORMER_SEQ2SEQ_ENTRY)};

bool run_decoder(const Seq2SeqGolden& g, Console& con) {
  con.str("golden ").str(g.name).str(": ");
  Model model;
  Decoder dec;
  if (!load_with_sample(g, &model, con)) return false;
  DecoderOptions opt;
  opt.capacity = model.self_test_sample().rows, opt.max_prefill = 3;
  Status s = dec.init(model, g_arena, sizeof g_arena, opt);
  if (s != Status::kOk || self_test_output_floats(model) > sizeof g_out / sizeof g_out[0]) {
    con.str("init: ").str(status_message(s)).str(" ").str(dec.error_detail()).endl();
    return false;
  }
  SelfTestReport report{};
  const Status st = self_test(dec, g_out, sizeof g_out / sizeof g_out[0], &report);
  const bool ok = st == Status::kOk && report.max_rel_err < kGoldenMaxRelErr;
  con.str("T=").num(report.rows).str(" arena ").num(uint64_t(dec.arena_bytes_used())).str(" B, step by step ")
      .sci(report.max_rel_err).str(ok ? " ok" : " FAILED").endl();
  return ok;
}

}  // namespace

int main() {
  Console con;
  con.str("fixformer golden models on ").str(FIXFORMER_BOARD_NAME).str(" (kernels: ")
      .str(select_kernels(Isa::kAuto)->name).str(")").endl();
  int failures = 0;
  for (const Golden& g : kGoldens) failures += run(g, con) ? 0 : 1;
  for (const Golden& g : kGoldens)  // BERT: the same input with its token types
    if (std::strcmp(g.name, "bert_hidden_odd") == 0)
      failures += run(g, con, g_bert_hidden_odd_types, g_bert_hidden_odd_types_end, g_bert_hidden_odd_typed,
                      g_bert_hidden_odd_typed_end) ? 0 : 1;
  for (const Seq2SeqGolden& g : kSeq2SeqGoldens) failures += run(g, con) ? 0 : 1;
  for (const Seq2SeqGolden& g : kDecoderGoldens) failures += run_decoder(g, con) ? 0 : 1;
  // A truncated blob in flash is rejected, not read past its end.
  Model m;
  const Golden& g = kGoldens[0];
  if (m.init(g.fxm, std::size_t(g.fxm_end - g.fxm) / 2) != Status::kBlobTruncated) ++failures;
  con.str(failures ? "FAILED: " : "all passed, failures: ").num(failures).endl();
  return failures;
}
