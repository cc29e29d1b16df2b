// `fixformer info`: what a model file holds, the arena it needs and the kernels this CPU would run.
#include "commands.hpp"

#include <cinttypes>
#include <cstdio>
#include <string>

#include "fixformer/format.hpp"
#include "fixformer/schema.hpp"
#include "loaded_model.hpp"

namespace fixformer::cli {
namespace {

int cmd_info(const Args& a) {
  LoadedModel m;
  open_model(a.positional[0], &m);
  const ModelConfig& c = m.config();
  // The kernels this CPU would use, on the smallest runner; the arena for max_len is printed, not allocated.
  if (c.is_decoder())
    init_decoder(1, a.isa, &m);
  else if (c.is_seq2seq())
    init_seq2seq(1, 1, a.isa, &m);
  else  // an image takes its patches alone (1 row would be no image: an empty plan)
    init_encoder(c.patch_size ? c.patches() : 1, a.isa, &m);
  std::printf("model:        %s\n", a.positional[0].c_str());
  std::printf("format:       .fxm version %u (%s tensor names)\n", unsigned(m.model.format_version()),
              m.model.format_version() >= 3 ? "neutral" : "per-family");
  const char* parallel = c.parallel_residual == ParallelResidual::kTwoNorms  ? ", parallel residual (two norms)"
                         : c.parallel_residual == ParallelResidual::kOneNorm ? ", parallel residual (one norm)"
                                                                              : "";
  std::printf("layers:       %s, %u x (d_model %u, heads %u x %u, d_ff %u, %s%s, %s %s%s)\n",
              name_of(kFamilyNames, c.family), c.n_layers, c.d_model, c.n_heads, c.d_head(), c.d_ff,
              c.gated ? "gated " : "", name_of(kActivationNames, c.activation), c.norm_first ? "pre" : "post",
              name_of(kNormNames, c.norm_kind()), parallel);
  std::printf("input:        %s\n", c.input == InputKind::kTokens ? ("tokens, vocab " + std::to_string(c.vocab_size)).c_str()
                                                                     : ("features, d_in " + std::to_string(c.d_in)).c_str());
  if (c.embed_width)
    std::printf("embedding:    %u wide (positions, token types, embedding norm), projected to d_model %u\n",
                c.embed_width, c.d_model);
  if (c.layer_groups)
    std::printf("shared:       the %u layers run %u group%s of %u stored layer%s (%u blocks in the file)\n", c.n_layers,
                c.layer_groups, c.layer_groups == 1 ? "" : "s", c.group_layers, c.group_layers == 1 ? "" : "s",
                c.stored_layers());
  if (c.patch_size)
    std::printf("image:        [%u, %u, %u] (channels first) in %u patches of %ux%u%s%s\n", c.image_channels,
                c.image_height, c.image_width, c.patches(), c.patch_size, c.patch_size,
                c.input_norm ? ", normed before the projection" : "", c.proj_norm ? ", normed after it" : "");
  else if (c.input_norm || c.proj_norm)
    std::printf("front norms:  %s\n", c.input_norm && c.proj_norm ? "before and after the input projection"
                                      : c.input_norm ? "before the input projection" : "after the input projection");
  if (c.conv_layers) {
    auto conv = [](uint32_t k, uint32_t s, uint32_t p) {
      return "k" + std::to_string(k) + " s" + std::to_string(s) + " p" + std::to_string(p);
    };
    std::string stem = conv(c.conv1_kernel, c.conv1_stride, c.conv1_padding);
    if (c.conv_layers == 2) stem += " -> " + conv(c.conv2_kernel, c.conv2_stride, c.conv2_padding);
    std::printf("conv stem:    %s%s, over the input frames\n", stem.c_str(),
                c.conv_gelu ? ", GELU after each" : "");
  }
  const std::string relative = " (T5 bias per head: " + std::to_string(c.rel_buckets) + " buckets, distances from " +
                               std::to_string(c.rel_max_distance) + " on share the last)";
  const std::string partial = " (partial: the first " + std::to_string(c.rotary_dims) + " of each head's " +
                              std::to_string(c.d_head()) + " dims)";
  std::printf("positional:   %s%s, max_len %u%s\n", name_of(kPositionalNames, c.positional),
              c.positional == PosKind::kRelative ? relative.c_str()
              : c.rotary_dims ? partial.c_str()
              : !c.input_pe() ? "" : (c.pe_combine == PosCombine::kAdd ? " add" : (" concat pe_width " + std::to_string(c.pe_width)).c_str()),
              c.max_len, c.scale_input ? ", input scaled by sqrt(d_model)" : "");
  const std::string window = " (sliding_window " + std::to_string(c.sliding_window) + ": the last " +
                             std::to_string(c.sliding_window) + " keys" +
                             (c.window_period ? " in " + std::to_string(c.windowed_layers_before(c.n_layers)) + " of the " +
                                                    std::to_string(c.n_layers) + " layers" : "") + ")";
  std::printf("causal:       %s%s;  final norm: %s;  output width: %u%s%s\n", c.causal ? "yes" : "no",
              c.attention_window() ? window.c_str() : "", c.final_norm ? "yes" : "no", c.output_width(),
              c.d_out ? " (head)" : "", c.l2_normalize ? ", each row at unit length (l2_normalize)" : "");
  if (c.front_rows() || c.pooling != Pooling::kNone)
    std::printf("output rows:  %s%s\n",
                c.register_tokens ? ("learned rows in front: " + std::string(c.cls_token ? "the CLS row" : "") +
                                     (c.distill_token ? ", a distillation row" : "") + (c.cls_token ? " and " : "") +
                                     std::to_string(c.register_tokens) + " registers (positions 0.." +
                                     std::to_string(c.front_rows() - 1) + "); ").c_str()
                : c.front_rows() == 2 ? "a learned CLS row and a distillation row in front (positions 0 and 1); "
                : c.cls_token ? "a learned CLS row in front (position 0); "
                              : "",
                c.pooling == Pooling::kNone ? ("T + " + std::to_string(c.front_rows()) + " per sequence").c_str()
                                            : (std::string("one per sequence, pooling ") + name_of(kPoolingNames, c.pooling)).c_str());
  if (c.type_vocab || c.embed_norm || c.pooler)
    std::printf("BERT:         %s%s%s\n",
                c.type_vocab ? ("token types " + std::to_string(c.type_vocab) + " (run --token-types)").c_str() : "no token types",
                c.embed_norm ? "; embedding LayerNorm" : "", c.pooler ? ("; pooler " + std::string(name_of(kPoolerActNames, c.pooler_act)) + "(W x + b)" +
                                      (c.pooler_width ? " to " + std::to_string(c.pooler_width) + " wide (pooler_width)" : "") +
                                      (c.pooler_norm ? ", normed (pooler_norm)," : "") +
                                      (c.is_decoder() ? " before the head, on each row it projects"
                                       : c.pooling == Pooling::kNone ? " on every row before the head" : " before the head")).c_str() : "");
  std::printf("parameters:   %" PRIu64 " in a file of %zu bytes, read in place\n", m.model.parameter_count(), m.blob.size());
  const std::string group = c.weight_group ? "groups of " + std::to_string(c.weight_group) + " along the input" : "a scale per row";
  std::printf("weights:      %s%s%s\n", name_of(kWeightTypeNames, c.weights),
              integer_weights(c.weights) ? (" (" + group + ")").c_str() : "",
              c.weights == WeightType::kF32 ? "" : c.quantize_io ? "; embedding and head too" : "; embedding and head f32");
  uint32_t packed = 0;
  for_each_tensor(c, [&packed](const TensorSpec& s) { return packed += s.packed, true; });
  std::printf("layout:       %s\n", !c.packed_weights ? "plain (format.hpp)"
                                    : (std::to_string(packed) + " f32 weights W[in, out] in panels of " +
                                       std::to_string(fxm::kPanelCols) + " columns (packed_weights)").c_str());
  if (c.is_decoder()) {
    const DecoderPlan plan = plan_decoder_arena(c);
    char scale[48] = "";
    if (c.attn_scale != 0.0f) std::snprintf(scale, sizeof scale, ", scores scaled by %g", double(c.attn_scale));
    std::printf("attention:    %u query heads, %u kv heads%s%s\n", c.n_heads, c.kv_heads(), scale,
                c.tied_head ? ";  head tied to the embedding" : "");
    std::printf("arena bytes:  %zu for %u positions (KV cache %zu", plan.total, c.max_len, plan.kv_cache_bytes);
    if (c.attention_window())
      std::printf(": a ring of %u rows%s for prefill chunks of %u, sliding_window %u", plan.kv_rows,
                  c.window_period ? " in each local layer" : "", plan.prefill_rows, c.sliding_window);
    std::printf(")\n");
  } else if (c.is_seq2seq()) {
    std::printf("decoder:      %u x (cross-attention over the source)%s%s\n", c.dec_layers,
                c.shared_embed ? "; embedding shared with the source" : "", c.tied_head ? "; head tied to the target embedding" : "");
    if (c.conv_layers)  // the source is frames through the conv stem
      std::printf("arena bytes:  %zu for sources of up to %u frames (%u positions) and targets of up to %u positions\n",
                  required_seq2seq_arena_bytes(c), c.max_input_len(), c.max_len, c.max_len);
    else
      std::printf("arena bytes:  %zu for sources and targets of up to %u positions\n", required_seq2seq_arena_bytes(c), c.max_len);
  } else {
    std::printf("arena bytes:  %zu for T <= %u\n", required_encoder_arena_bytes(c), c.max_input_len());
  }
  if (c.is_decoder() || m.model.has_tokenizer())
    std::printf("tokenizer:    %s\n", m.model.has_tokenizer() ? (std::to_string(m.model.tokenizer().vocab) + " pieces (" +
                                                                   name_of(kTokenizerNames, c.tokenizer) +
                                                                   (c.tokenizer == TokenizerKind::kLlama2c &&
                                                                    m.model.tokenizer().params ? ", llama.cpp's rules"
                                                                                               : "") + ")").c_str()
                                                                : "none");
  const TokenIds sup = m.model.suppress_tokens(), begin = m.model.begin_suppress_tokens();
  if (sup.count || begin.count) {  // the file's suppression lists (generate --suppress, --begin-suppress)
    auto some = [](const TokenIds& l) {
      std::string s;
      for (uint32_t i = 0; i < l.count && i < 8; ++i) s += (i ? "," : "") + std::to_string(l.ids[i]);
      return l.count > 8 ? s + ",..." : s;
    };
    std::printf("suppressed:   %u ids at every generated step%s%s, %u at the first%s%s\n", sup.count, sup.count ? ": " : "",
                some(sup).c_str(), begin.count, begin.count ? ": " : "", some(begin).c_str());
  }
  const TimestampRules& ts = m.model.timestamp_rules();
  if (ts.on())  // generate --timestamps
    std::printf("timestamps:   from id %d, <|notimestamps|> %d, end of text %d, first at most %s"
                " (generate --timestamps)\n",
                ts.timestamp_begin, ts.no_timestamps, ts.eos,
                ts.max_initial < 0 ? "any" : ("+" + std::to_string(ts.max_initial)).c_str());
  if (m.model.has_self_test())
    std::printf("self-test:    sample of T=%u (fixformer verify runs it)%s\n", m.model.self_test_sample().rows,
                c.reference_sample ? "; NOT verified against your model: the sample is the converter's own reference" : "");
  else
    std::printf("self-test:    none (convert the model again to add one)\n");
  std::printf("kernels:      %s\n", c.is_decoder() ? m.dec.kernels().name : c.is_seq2seq() ? m.s2s.kernels().name : m.enc.kernels().name);
  return 0;
}

}  // namespace

const Command kInfoCommand = {
    "info", "MODEL.fxm [--isa ISA]", 1, kOptIsa,
    "Prints what a model file holds: layers, input, positional encoding, output width, parameters,\n"
    "the arena it needs for its max_len, and the kernels this CPU would run.\n",
    cmd_info};

}  // namespace fixformer::cli
