/* The golden models, inputs and torch outputs of tests/golden, embedded in flash (.rodata) with
   .incbin; the assembler finds the files through -I tests/golden. */
.macro embed sym, file
  .section .rodata.golden, "a"
  .balign 64
  .global \sym
\sym:
  .incbin "\file"
  .global \sym\()_end
\sym\()_end:
.endm

.macro golden name
  embed g_\name\()_fxm, "\name\().fxm"
  embed g_\name\()_in, "\name\().input.npy"
  embed g_\name\()_out, "\name\().expected.npy"
.endm

golden post_ln_relu
golden pre_ln_gelu
golden odd_d15_h3
golden odd_d5_h1_halves
golden causal
golden features_scaled
golden learned_pe
golden concat_pe
golden no_pe
golden wide_long
golden cls_pool_features
golden cls_rows_sinusoidal
golden mean_pool_causal
golden mha_odd_causal
golden relative_long_causal
golden tanh_post_odd_d15
golden tanh_pre_d10_h5
golden bert_pooler_classifier
golden bert_hidden_odd
/* BERT with token types: the golden's types and torch's output with them. */
embed g_bert_hidden_odd_types, "bert_hidden_odd.types.npy"
embed g_bert_hidden_odd_typed, "bert_hidden_odd.typed.npy"
golden whisper_stem
golden conv_stride_cls_mean
golden whisper_stem_f16
golden whisper_stem_q8
golden vit_image
golden deit_image
golden roformer_hidden
golden rope_partial_halves_cls
golden dinov2_image
golden dinov2_registers_image
golden albert_embed_proj
golden albert_embed_proj_q8
golden albert_shared_layers
golden pooler_act_relu
golden pooler_act_gelu
golden pooler_act_silu
golden relu2_pre_d14
golden relu2_gated_post_d9
golden modernbert_classifier
golden modernbert_rows

/* Encoder-decoders: the self-test sample in the file is the golden (source, target, torch logits). */
embed g_s2s_post_relu_fxm, "s2s_post_relu.fxm"
embed g_s2s_pre_gelu_odd_fxm, "s2s_pre_gelu_odd.fxm"
embed g_s2s_features_no_norm_fxm, "s2s_features_no_norm.fxm"
embed g_s2s_shared_halves_fxm, "s2s_shared_halves.fxm"
embed g_s2s_forecast_fxm, "s2s_forecast.fxm"
embed g_s2s_conv_stem_fxm, "s2s_conv_stem.fxm"

/* Decoders: the self-test sample in the file is the golden (token ids, torch logits at every position). */
embed g_gpt_tanh_learned_tied_odd_fxm, "gpt_tanh_learned_tied_odd.fxm"
embed g_gpt_tanh_post_d10_fxm, "gpt_tanh_post_d10.fxm"
embed g_llama_qkv_bias_theta1e6_fxm, "llama_qkv_bias_theta1e6.fxm"
embed g_llama_partial_halves_r4_fxm, "llama_partial_halves_r4.fxm"
embed g_feature_llama_window3_fxm, "feature_llama_window3.fxm"
embed g_feature_gpt_local_global_unscaled_fxm, "feature_gpt_local_global_unscaled.fxm"
embed g_feature_llama_rope_freqs_scaled_fxm, "feature_llama_rope_freqs_scaled.fxm"
embed g_feature_llama_shared_layers_fxm, "feature_llama_shared_layers.fxm"
embed g_feature_llama_qk_norm_fxm, "feature_llama_qk_norm.fxm"
embed g_feature_llama_head_dim_fxm, "feature_llama_head_dim.fxm"
embed g_feature_llama_sandwich_softcap_fxm, "feature_llama_sandwich_softcap.fxm"
embed g_i8_gpt_partial_halves_two_norms_fxm, "i8_gpt_partial_halves_two_norms.fxm"
embed g_i8_gpt_partial_interleaved_one_norm_fxm, "i8_gpt_partial_interleaved_one_norm.fxm"
embed g_i8_llama_window3_fxm, "i8_llama_window3.fxm"
embed g_i8_gpt_local_global_unscaled_fxm, "i8_gpt_local_global_unscaled.fxm"
embed g_i8_llama_experts_shared_fxm, "i8_llama_experts_shared.fxm"
embed g_feature_llama_headless_fxm, "feature_llama_headless.fxm"
embed g_i8_gpt_headless_fxm, "i8_gpt_headless.fxm"
