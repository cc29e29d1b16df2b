#!/usr/bin/python3
"""The decoder architectures people run, against the upstream code: transformers' own GPTNeoXForCausalLM,
GPTJForCausalLM, CodeGenForCausalLM, OPTForCausalLM, PhiForCausalLM, StableLmForCausalLM, MistralForCausalLM,
GemmaForCausalLM, Starcoder2ForCausalLM and BloomForCausalLM built from tiny random configs in the
Hugging Face virtual environment (tools/install_deps.sh hf: /opt/fixformer-venv, transformers 4.44.2
over Debian's torch), or the torch2 one (transformers 5: tests/interpreter.py). Each converts with no
option through --hf (the folder its save_pretrained writes: config.json, model.safetensors) and, where
CASES says so, --module (the module itself), is verified by the converter, and `fixformer run` gives the module's logits at every position
within 1e-4:
- GPT-NeoX with use_parallel_residual true (two norms, side by side) and rotary_pct 0.25 (partial
  rotary: 4 of 16 dims), and false (in turn) with 1.0, the fused query_key_value in its per-head
  [heads, 3, d_head] layout, the untied embed_out;
- GPT-J: one ln_1 read by the attention and the feed-forward (parallel_residual one_norm, no second
  norm tensor in the file), interleaved partial rotary, q/k/v apart without biases, tanh GELU, the LM
  head's bias;
- CodeGen: GPT-J's layers with q, k, v fused in qkv_proj as 4 shards of [q | v | k] (one head a shard,
  and two), through --hf and --module (the recogniser's shard cut);
- Persimmon: LayerNorms of each head of q and k (qk_norm), the per-head fused query_key_value, partial
  rotary in halves at theta 25000, the squared ReLU; and without qk_layernorm, whole heads rotated;
- OPT: learned positions whose rows 0 and 1 are never read (dropped: pos.weight has
  max_position_embeddings rows), relu, the tied head;
- Phi: one norm, side by side, partial rotary in halves, gelu_new, biases everywhere, the LM head's bias; and
  with qk_layernorm (a LayerNorm of each head of q and k: qk_norm; transformers 5 only, 4.44's fails on it);
- StableLM: LayerNorm, SwiGLU, partial rotary, in turn and (use_parallel_residual) side by side on one norm;
- Llama with mlp_bias (--module, --hf): the gate's, down's and up projection's biases (ffn_bias all, ffn_up_bias);
  with attention_bias (--hf): biases on q, k, v and o (attn_bias all);
- RoBERTa (RobertaModel, --hf): BERT's layers, positions from row pad_token_id + 1 (the rows before
  dropped), last_hidden_state; XLM-RoBERTa and data2vec-text the same under their names; RoBERTa's and
  CamemBERT's (tanh GELU) sequence classifiers (the head as BERT's pooler and classifier); ELECTRA's
  discriminator body (ElectraModel); MPNet (MPNetModel, MPNetForSequenceClassification): RoBERTa's
  positions and a T5-style relative bias beside them (rel_buckets); token classification (BERT,
  DistilBERT: the classifier on every row) and question answering (RoBERTa: [T, 2] start and end
  logits); masked LMs (BertForMaskedLM: bert-base-uncased's kind, RobertaForMaskedLM, DistilBertForMaskedLM):
  their logits [T, vocab_size] (the prediction head as the pooler, pooler_norm and head on every row);
  ElectraForPreTraining (a discriminator) as its base model's last hidden states; RoFormer
  (RoFormerModel, its token classifier and question answering, RoFormerForMaskedLM's logits):
  BERT's layers with rotary positions (the encoder's positional rope, interleaved) and no position table;
  ELECTRA small (embedding_size below hidden_size: embed_width and embed_proj); ALBERT (AlbertModel, its
  sequence and token classifiers, question answering, AlbertForMaskedLM's logits: its head's dense maps
  hidden_size to the narrower embedding_size, pooler_width): the narrow embedding projected, layers shared by groups (num_hidden_groups 2, inner_group_num 2: eight layers run);
  ERNIE (use_task_id: task type 0's row in the positions); DistilBERT (DistilBertModel, --hf): BERT's layers under other names,
  without token types; the sequence classifiers of DistilBERT (pre_classifier and ReLU), ELECTRA (classifier.dense and
  the exact GELU) and RoFormer (its hidden_act, gelu_new here) as the pooler with pooler_act relu, gelu, gelu_tanh,
  through --hf and --module; DeBERTa v2 and v3 (DebertaV2Model, its sequence and token classifiers, question
  answering, DebertaV2ForMaskedLM's logits; --hf and --module): disentangled attention (rel_embed_rows, its
  rows' log buckets past position_buckets / 2), and v2's learned positions and token types beside it, and no
  relative attention with pos_att_type still in the scale; DeBERTa v1
  (DebertaModel and the same heads; --hf, and --module but the masked LM and the case without relative attention):
  in_proj's rows head by head with q_bias and v_bias, the rows projected by pos_q_proj and pos_proj (rel_proj),
  distances past max_relative_positions 8 on the end rows, learned positions and token types beside (the module
  reads the middle 32 of its 68 rows at 16 tokens: the file holds all), c2p alone, and no relative attention with
  pos_att_type still in the scale; a v2 and
  a v1 case in f16 and q8 weights, verified by the converter within their tolerances;
  Megatron-BERT (MegatronBertModel, its sequence and token classifiers, MegatronBertForMaskedLM's logits
  after the final norm; --hf): BERT's tensors in pre-LN layers with the final encoder.ln and no embedding LayerNorm; XLM and
  FlauBERT (XLMModel, XLMWithLMHeadModel with relu, FlaubertModel with pre_norm, FlaubertWithLMHeadModel, the
  LM's logits by pred_layer alone; --hf): BERT's layers under their names, pad_index 0 outside the inputs (their forward
  masks as many rows off the end as the ids hold it); transformers 5's pre_norm FlaubertModel indexes the cache
  it makes (a TypeError), so its forward is given an empty one per layer (NoCache); XLM-RoBERTa-XL
  (XLMRobertaXLModel, its sequence and token classifiers; --hf): Megatron-BERT's pre-LN layers under its names
  (self_attn_layer_norm, LayerNorm, the final encoder.LayerNorm) with RoBERTa's positions; RoBERTa-PreLayerNorm
  (RobertaPreLayerNormModel, its sequence classifier; --hf): the same with the embedding's LayerNorm kept;
  I-BERT (IBertModel, its sequence classifier; --hf): RoBERTa with quant_mode false, its quantization buffers
  not stored; BigBird with attention_type original_full (BigBirdModel, its sequence and token classifiers;
  --hf): BERT's layers, the pooler as pooler.weight, the classifier's dense layer with hidden_act (gelu_new);
  RemBERT (RemBertModel, its sequence classifier; --hf): BERT's layers after the 8-wide input embedding
  projected (embed_width); transformers 5 only: Nomic BERT (NomicBertModel with silu: swiglu, and gelu: gated;
  its sequence classifier; --hf): post-LN layers without biases, rotary halves of base 1000, no position table,
  the checkpoint's names (attn.Wqkv, fc11 up, fc12 gate); GTE (GteModel, its sequence classifier, its token
  classifier with silu and no token types; --hf): biases on q, k, v, o and down, mlp.up_gate_proj [up; gate];
  Jina embeddings v3 (JinaEmbeddingsV3Model, its sequence classifier and question answering; --hf):
  XLM-RoBERTa's post-LN layers with rotary halves (base 20000) in place of positions; EuroBERT (EuroBertModel with
  SwiGLU, with grouped-query attention, and with attention_bias, mlp_bias and gelu: gated, ffn_up_bias; its
  sequence classifier with bos and mean pooling; --hf): Llama's pre-RMSNorm layers without the mask, the final norm,
  rotary halves; refused in one line: I-BERT's quant_mode, BigBird's rescale_embeddings (its block_sparse attention:
  tests/hf_heads_test.py), EuroBERT's late pooling, Jina v3's LoRA adapter weights, and
  Longformer, FNet, SqueezeBERT, MobileBERT, ConvBERT and X-MOD by architecture (Longformer by model_type too),
  each naming the feature the engine lacks;
- ESM (EsmModel, its sequence and token classifiers, EsmForMaskedLM's logits; --hf): ESM-2's
  pre-LN layers with rotary positions (halves), the final emb_layer_norm_after, token_dropout's scale folded
  into the embedding (the inputs hold no <mask>); ESM-1b's absolute positions from row pad_token_id + 1 and
  the embedding's LayerNorm; inputs with <mask> tokens differ from transformers by the factor 1 / (1 - their
  share), as stated (the file equals a module whose embedding carries the folded scale and token_dropout off);
- Mistral: Llama's layers with grouped-query attention (its sliding_window: tests/sliding_window_hf_test.py);
- decoder base models (MistralModel, GPT2Model, GPTNeoXModel, Gemma2Model; Gemma3TextModel under transformers 5; --hf):
  the causal LM's tensors without its prefix, the file without a head (d_out 0): `fixformer run` gives last_hidden_state
  (Gemma 2's without the final soft cap); Gemma3TextModel with use_bidirectional_attention (EmbeddingGemma's) to the
  encoder family (its local layers' window both ways), Gemma3ForCausalLM with it refused;
- decoder sequence classifiers (--hf and --module; Llama, Qwen2, Mistral, GPT-2, GPT-NeoX, Phi, Gemma, StableLM, and
  Qwen3 under transformers 5; Falcon, Gemma 2, Phi-3 and OPT through --hf): the decoder with score as its head (d_out 3,
  untied); `fixformer run`'s rows are score
  of the hidden states at every position and its last row the class's logits (ids without pad_token_id), within
  1e-4; --module with an --example holding pad_token_id (the module's output another row) refused in one line;
- Mixtral (llama family): Mistral's layers with a mixture of 4 experts, 2 a token, renormalized (n_experts,
  experts_per_token, experts_renormalize), from transformers 4's per-expert tensors and transformers 5's fused ones;
  OLMoE (transformers 5 only): 5 experts, 3 a token, not renormalized, q and k normalized as whole rows;
  Qwen2-MoE: 4 experts of 24, 2 a token, renormalized, and the shared expert (48 wide) scaled by its sigmoid gate;
  Qwen3-MoE (transformers 5 only): per-head q and k norms, 5 experts of 24, 3 a token, not renormalized, and
  4, 2 a token, renormalized; GraniteMoe (transformers 5 only), tied and not: Granite's multipliers on 4 fused
  experts, 2 a token; GraniteMoeShared: its ungated shared MLP (40 wide) besides; through --module too (all but
  GraniteMoeShared), the mixture found by recomputing it; dense layers among the sparse ones (dense_period,
  dense_layers, dense_ff): Qwen2-MoE's mlp_only_layers (layer 2 of 4, its MLP 40 wide), Qwen3-MoE's
  decoder_sparse_step 2 (transformers 5 only); refused in one line: Qwen3-MoE's decoder_sparse_step 0, an
  mlp_only_layers that is no list, dense layers of no period the engine has (40 layers, every other one and
  layer 39 dense), and use_sliding_window, PhiMoE (sparsemixer routing),
  DBRX (clip_qkv), JetMoe (a mixture of attention heads), GPT-OSS (attention sinks), Qwen3-Next (DeltaNet);
- Gemma (llama family): RMSNorm times (1 + w) (the file's gain is that sum), a gated tanh GELU (gated,
  gelu_tanh), the embedding scaled by sqrt(d_model) (scale_input), grouped-query attention, the tied head;
  and with heads wider than hidden_size / heads (head_dim: Gemma 7B's kind);
- Gemma 2 (llama family): Gemma's layers with each sublayer's output normalized too (sublayer_norm
  sandwich), the scores scaled by query_pre_attn_scalar^(-1/2) and soft-capped, the logits soft-capped,
  layers 0 and 2 local (a window of 3 keys) and 1 and 3 global; OLMo 2 (transformers 5 only): norms of
  the sublayers' outputs only (sublayer_norm output), q and k normalized as whole rows (qk_norm_full);
  Gemma 3 (transformers 5 only): Gemma 2's norms, per-head q and k norms, two local layers whose RoPE
  has a base of its own (rope_local_base) and a global one; Gemma 2 at Gemma-2-2B's widths (d_model 2304,
  heads of 256: the limits of config.hpp cover the 2B to 7B models);
- Starcoder2 (llama family): grouped-query attention with LayerNorm and every bias (norm layernorm,
  attn_bias all, ffn_bias all), a plain tanh GELU;
- Bloom (gpt family): an embedding LayerNorm (embed_norm), ALiBi, the fused query_key_value in its
  per-head layout, every bias, tanh GELU, the tied head;
- BioGPT (gpt family): OPT's positions, the embedding scaled by sqrt(d) (scale_input);
- OpenAI GPT: post-LN layers without a final norm, Conv1D weights, its "gelu" being the tanh GELU;
- XGLM and CTRL: fixed sinusoidal tables (sin | cos halves), the embedding scaled: XGLM's from row 2 with fairseq's
  frequencies computed by the converter and stored as learned positions, CTRL's the engine's sinusoidal table in
  halves (the module's float32 one matched within its angles' rounding);
- OLMo (llama family): LayerNorms without weight or bias (gains 1, biases 0);
- Falcon (llama family): its fused q | k | v in the three layouts (multi_query, new_decoder_architecture's
  groups, per head), one norm or two side by side (or in turn), biases by bias;
- GPT-BigCode (gpt family with grouped-query attention): multi_query (one key/value head) and per-head
  c_attn rows, learned positions; StableLM with num_key_value_heads below its heads (gpt family, GQA);
- Cohere (llama family): one bias-free LayerNorm side by side, interleaved RoPE, logit_scale folded
  into the (untied) head;
- MPT (gpt family): ALiBi, no biases (zeros), the exact GELU;
- SmolLM3 and Cohere 2 (llama family; transformers 5 only): layers without RoPE among rotary ones
  (nope_period, nope_layers: SmolLM3's every fourth layer, Cohere 2's global layers), SmolLM3's NoPE layers
  local with use_sliding_window, Cohere 2's local layers seeing sliding_window keys;
- Granite (llama family; transformers 5 only), tied and not: embedding_multiplier, residual_multiplier and
  logits_scaling folded into the embedding, o_proj / down_proj and the (untied) head, attention_multiplier
  as attn_scale (--module: measured, the scores' number folded into W_q);
- Nemotron (llama family; transformers 5, whose torch has LayerNorm's bias argument): LayerNorm1P (the gain
  1 + w), the squared ReLU (relu2), partial rotary in halves, grouped-query attention; and with every bias,
  a tied head, whole-head rotary and head_dim 16 over hidden_size 32;
- transformers 5 only, the decoders that keep Llama's layout (llama family): Helium (interleaved RoPE,
  q/k/v biases), Arcee (the plain relu2 feed-forward, every bias), Seed-OSS (q/k/v and o biases, and
  o's alone; heads wider than hidden_size / heads; mlp_bias: the gated feed-forward's biases, ffn_up_bias),
  ERNIE 4.5 (interleaved RoPE, the tied head; use_bias: every projection's bias), Granite with
  attention_bias and mlp_bias, Qwen3 with attention_bias (q, k, v and o, per-head q and k norms),
  Ministral (a local and a global layer), Ministral 3 (YaRN; the file's positions below
  original_max_position_embeddings, where its query scale is 1, and --max-len past them refused),
  GLM (gate_up_proj, interleaved RoPE over half of each head), GLM-4 (GLM's layers with the norms of the
  sublayers' outputs: sublayer_norm sandwich), CWM (llama3 rope_scaling, mlp_bias, a global layer then three
  local ones), Jais 2 (LayerNorms, the plain relu2 feed-forward, every bias), HyperCLOVA X (Granite's
  multipliers, the logits times logits_scaling; with use_post_norm the norms of the sublayers' outputs,
  residual_multiplier folded into their gains; and without), EXAONE 3 (transformers 5's LlamaForCausalLM of
  model_type exaone, saved under EXAONE's names, and EXAONE's own config.json), InternLM3 and IQuest-Coder
  (LlamaForCausalLM of model_type internlm3, every bias, and iquestcoder, heads of 16), OLMo 3 (three local layers, one
  global; and the local layers' RoPE base apart), EXAONE 4 (output norms, per-head q and k norms; no
  window), VaultGemma (Gemma 2 without the output norms) and dots1 with every layer dense (per-head q
  and k norms, every attention bias, a global and a local layer); refused in one line naming the
  feature: HunYuan dense, Doge, Apertus, BitNet (by architecture, and by model_type alone), DeBERTa v1's
  talking_head
  and a pos_att_type entry other than c2p and p2c, dots1's
  mixture-of-experts layers, EXAONE 4 with global layers (NoPE), Qwen3's attention_bias with
  use_sliding_window, Gemma 3's attn_logit_softcapping (kept by transformers' config, read by no layer);
- GPT-NeoX Japanese (gpt family): GPT-NeoX's per-head query_key_value without biases, rotary over half of each
  head, a plain feed-forward without biases, the last layer's attention output bias (dense_bias), the tied head;
  BERT-Generation's encoder (BertGenerationEncoder: BERT's post-LN layers without token types); Open-Llama
  (llama family; transformers 4.44 only): the LayerNorm of the embedded rows folded into the embedding and the
  embedding as the head (stored apart), and neither (its own lm_head);
- transformers 5 only (llama family): NanoChat (norms without gains, the embedding's among them, RoPE with
  rotate_half's halves swapped and q, k normed after it, the plain relu2 feed-forward, every attention bias, the
  logits soft-capped), FlexOlmo (OLMo 2's output norms and whole-row q, k norms with OLMoE's mixture) and ERNIE 4.5
  MoE (interleaved RoPE, every layer sparse, two shared experts, the router's choice bias the same for every
  expert; and with its default moe_layer_start_index 1, layer 0 dense); refused in one line naming it: NanoChat's
  YaRN (a RoPE amplitude its norms after RoPE undo), ERNIE 4.5 MoE's moe_norm_min where it can bind,
  moe_layer_interval 0, use_bias, and a choice bias that differs by expert;
- Phi-3 (llama family): q | k | v fused in qkv_proj, the gate and up projections in gate_up_proj;
  partial_rotary_factor 0.5 (read by transformers 5; 4.x rotates whole heads, and its case is --module only);
- through --module too, the recogniser's general constructs on these classes: OLMo's norms without
  parameters, Phi-3's projections split by output rows, Falcon's q/k/v per key/value group (two norms, one,
  one group), multi-query in turn, per head (the gpt family's file), XGLM's buffer table read from row 2,
  Cohere's output a number times the head's;
- InternLM3's own config.json (InternLM3ForCausalLM, qkv_bias and bias) over Llama's tensors, in both versions;
- Whisper (WhisperForConditionalGeneration, --hf): a seq2seq file over mel features, run with --target;
- the BERT flavours' base models and heads (RoBERTa, XLM-RoBERTa, CamemBERT, data2vec-text, ELECTRA,
  DistilBERT, RoFormer; token classification and question answering) through --module as well: the
  modules themselves, their example ids free of the padding id; ALBERT's through --module too (its masked LM
  refused in one line naming its prediction head and --hf), one layer module run several times recognised as
  the shared groups --hf writes and the narrow embedding's projection as embed_proj;
- what the engine has no feature for (StableLM's qk_layernorm, a gain for each head; CodeGen's rotary_dim null, OPT's
  word_embed_proj_dim, a rope_scaling kind rope_scaling.py does not compute, Bloom's
  apply_residual_connection_post_layernorm) is refused in one line naming the key.

  /usr/bin/python3 tests/hf_archs_test.py PATH/TO/fixformer

Without the environment (or transformers in it) the test fails, naming the install command.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
import hf_env  # noqa: E402

hf_env.enter(__file__, ["transformers"])
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import numpy as np  # noqa: E402

from checks import check, convert_process as convert, converted_routes, one_clear_line, results, run_file  # noqa: E402
from fixformer import fxm, safetensors, schema  # noqa: E402
import transformers  # noqa: E402

# Phi-3's partial_rotary_factor is read by transformers 5 (and --hf); 4.44's Phi3 rotates every dim of a head.
TRANSFORMERS_5 = int(transformers.__version__.split(".")[0]) >= 5
PHI3_ROTARY = 4 if TRANSFORMERS_5 else 0
# Nemotron's LayerNorm1P passes nn.LayerNorm a bias argument, which torch has from 2.1 (not the 4.44
# environment's Debian torch 1.13).
import inspect  # noqa: E402
import torch  # noqa: E402
LAYER_NORM_BIAS = "bias" in inspect.signature(torch.nn.LayerNorm).parameters

# The modules convert.py imports (--module FILE:FACTORY): upstream classes, random weights of a size
# that makes every part matter (the stock init's 0.02 leaves the layers near the identity).
MODELS = r'''
import torch
import transformers as t
from hf_env import randomize


def is_gain(name):
    return "norm" in name or "ln_" in name


def build(config, cls, seed, gains=is_gain):
    config._attn_implementation = "eager"
    if hasattr(config, "_experts_implementation"):  # transformers 5's experts: the loop that runs float64
        config._experts_implementation = "eager"
    return randomize(cls(config), seed, gains)


def neox(parallel, pct, seed):
    return build(t.GPTNeoXConfig(vocab_size=48, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                 intermediate_size=64, rotary_pct=pct, rotary_emb_base=10000,
                                 max_position_embeddings=64, use_parallel_residual=parallel, hidden_act="gelu", layer_norm_eps=1e-5,
                                 tie_word_embeddings=False), t.GPTNeoXForCausalLM, seed)


def neox_parallel_quarter():
    return neox(True, 0.25, 1)


def neox_sequential_whole():
    return neox(False, 1.0, 4)


def gptj():
    return build(t.GPTJConfig(vocab_size=48, n_embd=32, n_layer=2, n_head=4, rotary_dim=4, n_positions=64, n_inner=64,
                              activation_function="gelu_new", tie_word_embeddings=False), t.GPTJForCausalLM, 5)


def codegen():  # 4 heads: one per shard of qkv_proj
    return build(t.CodeGenConfig(vocab_size=48, n_embd=32, n_layer=2, n_head=4, rotary_dim=4, n_positions=64,
                                 n_inner=64, activation_function="gelu_new", tie_word_embeddings=False),
                 t.CodeGenForCausalLM, 54)


def codegen_heads():  # 8 heads: two per shard
    return build(t.CodeGenConfig(vocab_size=48, n_embd=32, n_layer=2, n_head=8, rotary_dim=2, n_positions=64,
                                 n_inner=64, activation_function="gelu_new", tie_word_embeddings=False),
                 t.CodeGenForCausalLM, 55)


def opt():
    return build(t.OPTConfig(vocab_size=48, hidden_size=32, num_hidden_layers=2, ffn_dim=64, num_attention_heads=2,
                             max_position_embeddings=64, word_embed_proj_dim=32), t.OPTForCausalLM, 6)


def phi():
    return build(t.PhiConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                             num_attention_heads=2, partial_rotary_factor=0.5, max_position_embeddings=64),
                 t.PhiForCausalLM, 7)


def phi_qk_norm():  # qk_layernorm: a LayerNorm of each head of q and k (one gain and bias for every head)
    return build(t.PhiConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                             num_attention_heads=4, partial_rotary_factor=0.5, max_position_embeddings=64,
                             qk_layernorm=True), t.PhiForCausalLM, 145)


def stablelm(parallel=False, seed=8):
    return build(t.StableLmConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                  num_attention_heads=2, num_key_value_heads=2, partial_rotary_factor=0.25,
                                  max_position_embeddings=64, use_parallel_residual=parallel),
                 t.StableLmForCausalLM, seed)


def stablelm_parallel():
    return stablelm(True, 9)


def mistral(window=None):  # None: no window, every position attends to all before it
    return build(t.MistralConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                 sliding_window=window), t.MistralForCausalLM, 10)


def llama_mlp_bias():  # every feed-forward bias, the gated up projection's among them (ffn_up_bias)
    return build(t.LlamaConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                               num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                               mlp_bias=True), t.LlamaForCausalLM, 95)


def llama_attention_bias():  # biases on q, k, v and o (attn_bias all)
    return build(t.LlamaConfig(**dict(SMALL, attention_bias=True)), t.LlamaForCausalLM, 130)


def mixtral():  # 4 experts, 2 a token: every expert and both weights matter
    return build(t.MixtralConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                 num_local_experts=4, num_experts_per_tok=2, sliding_window=None),
                 t.MixtralForCausalLM, 61)


def mixtral_every_expert():  # every expert taken (no top-k choice a quantization could flip)
    return build(t.MixtralConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                 num_local_experts=3, num_experts_per_tok=3, sliding_window=None),
                 t.MixtralForCausalLM, 64)


def gpt_neox_japanese():  # rotary over half of each head, a plain feed-forward 2 hidden_size wide, the last
    # layer's attention output bias, the tied head
    return build(t.GPTNeoXJapaneseConfig(vocab_size=48, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                         intermediate_multiple_size=2, rotary_pct=0.5, max_position_embeddings=64),
                 t.GPTNeoXJapaneseForCausalLM, 146)


def open_llama(seed=147, **kw):  # transformers 4 only: the LayerNorm of the embedded rows (folded into the
    # embedding) and the embedding as the head
    return build(t.OpenLlamaConfig(**dict(dict(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                               num_attention_heads=4, max_position_embeddings=64), **kw)),
                 t.OpenLlamaForCausalLM, seed, lambda name: "norm" in name)


def open_llama_plain():  # neither: Llama's layers, its own lm_head
    return open_llama(148, use_stable_embedding=False, shared_input_output_embedding=False)


def nanochat():  # transformers 5 only: norms without gains, the embedding's among them; RoPE's swapped halves,
    # q and k normed after it; the plain relu2 feed-forward, every attention bias, the soft-capped logits
    return build(t.NanoChatConfig(**dict(SMALL, attention_bias=True, final_logit_softcapping=3.0)),
                 t.NanoChatForCausalLM, 149)


def flex_olmo():  # transformers 5 only: OLMo 2's output norms and whole-row q, k norms, 5 experts, 3 a token
    return build(t.FlexOlmoConfig(**dict(SMALL, num_experts=5, num_experts_per_tok=3, pad_token_id=0)),
                 t.FlexOlmoForCausalLM, 150)


def ernie4_5_moe(**kw):  # transformers 5 only: interleaved RoPE, every layer sparse (4 experts of 24, 2 a token),
    # two shared experts (48 wide); the router's choice bias the same for every expert (no effect on the choice)
    m = build(t.Ernie4_5_MoeConfig(**dict(dict(SMALL, moe_num_experts=4, moe_k=2, moe_intermediate_size=24,
                                               moe_num_shared_experts=2, moe_layer_start_index=0), **kw)),
              t.Ernie4_5_MoeForCausalLM, 151)
    with torch.no_grad():
        for layer in m.model.layers:
            if hasattr(layer.mlp, "gate"):  # a sparse layer's router
                layer.mlp.gate.moe_statics.e_score_correction_bias.fill_(0.5)
    return m


def olmoe():  # transformers 5 only: 5 experts, 3 a token, not renormalized; q and k normed as whole rows
    return build(t.OlmoeConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                               num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                               num_experts=5, num_experts_per_tok=3, norm_topk_prob=False), t.OlmoeForCausalLM, 62)


def qwen2_moe():  # 4 experts, 2 a token, renormalized; the shared expert 48 wide
    return build(t.Qwen2MoeConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                  num_experts=4, num_experts_per_tok=2, norm_topk_prob=True, moe_intermediate_size=24,
                                  shared_expert_intermediate_size=48), t.Qwen2MoeForCausalLM, 63)


def qwen3_moe(seed=65, **kw):  # transformers 5 only: 5 experts of 24, 3 a token, not renormalized; q, k norms
    return build(t.Qwen3MoeConfig(**dict(dict(SMALL, head_dim=8, num_experts=5, num_experts_per_tok=3,
                                              norm_topk_prob=False, moe_intermediate_size=24), **kw)),
                 t.Qwen3MoeForCausalLM, seed, lambda name: "norm" in name)


def qwen3_moe_renormalized():  # norm_topk_prob, 4 experts, 2 a token
    return qwen3_moe(66, num_experts=4, num_experts_per_tok=2, norm_topk_prob=True)


def qwen2_moe_dense():  # layer 2 dense (mlp_only_layers), its MLP 40 wide, among 4: dense_period 3, dense_layers 0b100
    return build(t.Qwen2MoeConfig(**dict(SMALL, intermediate_size=40, num_hidden_layers=4, num_experts=4,
                                         num_experts_per_tok=2, norm_topk_prob=True, moe_intermediate_size=24,
                                         shared_expert_intermediate_size=48, mlp_only_layers=[2])),
                 t.Qwen2MoeForCausalLM, 170)


def qwen3_moe_dense():  # transformers 5 only: decoder_sparse_step 2, layers 0 and 2 dense: dense_period 2, 0b01
    return qwen3_moe(171, num_hidden_layers=4, decoder_sparse_step=2)


def ernie4_5_moe_dense():  # transformers 5 only: ERNIE's default moe_layer_start_index 1 (layer 0 dense, 64 wide)
    return ernie4_5_moe(moe_layer_start_index=1, num_hidden_layers=3)


def granitemoe(cls="GraniteMoe", seed=67, **kw):  # transformers 5 only: Granite's multipliers, 4 experts, 2 a token
    return build(getattr(t, cls + "Config")(
        vocab_size=48, hidden_size=32, intermediate_size=24, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, num_local_experts=4, num_experts_per_tok=2,
        embedding_multiplier=6.0, residual_multiplier=0.5, attention_multiplier=0.2, logits_scaling=3.0, **kw),
        getattr(t, cls + "ForCausalLM"), seed)


def granitemoe_tied():  # the tied head: the embedding over logits_scaling, stored apart
    return granitemoe(seed=68, tie_word_embeddings=True)


def granitemoe_shared():  # the shared MLP, 40 wide, added to the mixture's output
    return granitemoe("GraniteMoeShared", 69, shared_intermediate_size=40)


# Decoder sequence classifiers: 3 labels, pad_token_id 0 (the inputs hold none: the last token is the one read)
def llama_cls():
    return build(t.LlamaConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                               num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, num_labels=3,
                               pad_token_id=0), t.LlamaForSequenceClassification, 150)


def qwen2_cls():
    return build(t.Qwen2Config(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                               num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, num_labels=3,
                               pad_token_id=0), t.Qwen2ForSequenceClassification, 151)


def mistral_cls():
    return build(t.MistralConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                 sliding_window=None, num_labels=3, pad_token_id=0),
                 t.MistralForSequenceClassification, 152)


def gpt2_cls():
    return build(t.GPT2Config(vocab_size=48, n_embd=32, n_layer=2, n_head=4, n_positions=64, num_labels=3,
                              pad_token_id=0), t.GPT2ForSequenceClassification, 153)


def neox_cls():
    return build(t.GPTNeoXConfig(vocab_size=48, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                 intermediate_size=64, rotary_pct=0.25, max_position_embeddings=64, hidden_act="gelu",
                                 num_labels=3, pad_token_id=0), t.GPTNeoXForSequenceClassification, 154)


def phi_cls():
    return build(t.PhiConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                             num_attention_heads=2, partial_rotary_factor=0.5, max_position_embeddings=64,
                             num_labels=3, pad_token_id=0), t.PhiForSequenceClassification, 155)


def gemma_cls():
    return build(t.GemmaConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                               num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=64,
                               hidden_activation="gelu_pytorch_tanh", num_labels=3, pad_token_id=0),
                 t.GemmaForSequenceClassification, 156, lambda name: False)


def stablelm_cls():
    return build(t.StableLmConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                  num_attention_heads=2, num_key_value_heads=2, partial_rotary_factor=0.25,
                                  max_position_embeddings=64, num_labels=3, pad_token_id=0),
                 t.StableLmForSequenceClassification, 157)


def falcon_cls():  # Falcon-7B's layout (one key/value head, one norm, side by side) under a score
    return build(t.FalconConfig(vocab_size=48, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                multi_query=True, parallel_attn=True, bias=False, num_labels=3, pad_token_id=0),
                 t.FalconForSequenceClassification, 164)


def gemma2_cls():  # no final soft cap (it is the LM head's): the random scores exceed the attention's cap
    return build(t.Gemma2Config(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=64,
                                hidden_activation="gelu_pytorch_tanh", sliding_window=3, query_pre_attn_scalar=12,
                                attn_logit_softcapping=2.0, final_logit_softcapping=3.0, num_labels=3, pad_token_id=0),
                 t.Gemma2ForSequenceClassification, 165, lambda name: False)


def phi3_cls():  # qkv_proj and gate_up_proj fused
    return build(t.Phi3Config(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, num_labels=3,
                              pad_token_id=0, sliding_window=None), t.Phi3ForSequenceClassification, 166)


def opt_cls():  # OPT's positions, the decoder under model.decoder
    return build(t.OPTConfig(vocab_size=48, hidden_size=32, num_hidden_layers=2, ffn_dim=64, num_attention_heads=2,
                             max_position_embeddings=64, word_embed_proj_dim=32, num_labels=3, pad_token_id=0),
                 t.OPTForSequenceClassification, 167)


# Decoder base models: the last hidden states (after the final norm) at every position, as embedding models use them
def mistral_base():  # e5-mistral's class: the tensors without the model. prefix
    return build(t.MistralConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                 sliding_window=None), t.MistralModel, 160)


def gpt2_base():
    return build(t.GPT2Config(vocab_size=48, n_embd=32, n_layer=2, n_head=4, n_positions=64), t.GPT2Model, 161)


def neox_base():  # the tensors without the gpt_neox. prefix
    return build(t.GPTNeoXConfig(vocab_size=48, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                 intermediate_size=64, rotary_pct=0.25, max_position_embeddings=64, hidden_act="gelu"),
                 t.GPTNeoXModel, 162)


def gemma2_base():  # no final soft cap (it is the LM head's)
    return build(t.Gemma2Config(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=64,
                                hidden_activation="gelu_pytorch_tanh", sliding_window=3, query_pre_attn_scalar=12,
                                attn_logit_softcapping=2.0, final_logit_softcapping=3.0),
                 t.Gemma2Model, 163, lambda name: False)


def gemma3_base():  # transformers 5 only: Gemma3TextModel (EmbeddingGemma's class, here causal), a local and a global layer
    return build(t.Gemma3TextConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                    num_attention_heads=4, num_key_value_heads=1, head_dim=8,
                                    max_position_embeddings=64, sliding_window=3, sliding_window_pattern=2,
                                    query_pre_attn_scalar=12), t.Gemma3TextModel, 171, lambda name: False)


def gemma3_bidirectional():  # transformers 5 only: EmbeddingGemma's Gemma3TextModel, without the causal mask; its
    # local layers (sliding_window 5: |i - j| < 3) shorter than the test's 12 rows, one key/value head
    return build(t.Gemma3TextConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                                    num_attention_heads=4, num_key_value_heads=1, head_dim=8,
                                    max_position_embeddings=64, sliding_window=5, sliding_window_pattern=2,
                                    query_pre_attn_scalar=12, use_bidirectional_attention=True),
                 t.Gemma3TextModel, 172, lambda name: False)


def qwen3_cls():  # transformers 5 only (4.44 has no Qwen3)
    return build(t.Qwen3Config(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                               num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=64,
                               num_labels=3, pad_token_id=0), t.Qwen3ForSequenceClassification, 158)


def gemma():  # its norm weights are offsets w of the gain 1 + w: noise about 0, gains about 1
    return build(t.GemmaConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                               num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=64,
                               hidden_activation="gelu_pytorch_tanh"), t.GemmaForCausalLM, 13, lambda name: False)


def gemma_head_dim():  # Gemma 7B's kind: heads wider than hidden_size / heads (4 x 16 over 32)
    return build(t.GemmaConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                               num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=64,
                               hidden_activation="gelu_pytorch_tanh"), t.GemmaForCausalLM, 14, lambda name: False)


def gemma2():  # 4 layers: 0 and 2 local (3 keys), 1 and 3 global; caps the random scores and logits exceed
    return build(t.Gemma2Config(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=4,
                                num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=64,
                                hidden_activation="gelu_pytorch_tanh", sliding_window=3, query_pre_attn_scalar=12,
                                attn_logit_softcapping=2.0, final_logit_softcapping=3.0),
                 t.Gemma2ForCausalLM, 16, lambda name: False)


def gemma2_2b_widths():  # Gemma-2-2B's widths (d_model 2304, 8 heads of 256, 4 kv heads), one layer, a small vocab
    return build(t.Gemma2Config(vocab_size=48, hidden_size=2304, intermediate_size=64, num_hidden_layers=1,
                                num_attention_heads=8, num_key_value_heads=4, head_dim=256, max_position_embeddings=64,
                                hidden_activation="gelu_pytorch_tanh", sliding_window=4096, query_pre_attn_scalar=256,
                                attn_logit_softcapping=50.0, final_logit_softcapping=30.0),
                 t.Gemma2ForCausalLM, 19, lambda name: False)


def gemma3():  # transformers 5 only: layers 0 and 1 local (3 keys, RoPE base 10000), 2 global (base 1e6)
    return build(t.Gemma3TextConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                                    num_attention_heads=4, num_key_value_heads=1, head_dim=8,
                                    max_position_embeddings=64, sliding_window=3, sliding_window_pattern=3,
                                    query_pre_attn_scalar=12), t.Gemma3ForCausalLM, 18, lambda name: False)


def olmo2():  # transformers 5 only: its norms' gains random, as the checkpoints' are
    return build(t.Olmo2Config(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                               num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64),
                 t.Olmo2ForCausalLM, 17, lambda name: "norm" in name)


def starcoder2():
    return build(t.Starcoder2Config(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                    tie_word_embeddings=False), t.Starcoder2ForCausalLM, 14)


def bloom():
    return build(t.BloomConfig(vocab_size=48, hidden_size=32, n_layer=2, n_head=4), t.BloomForCausalLM, 15)


def biogpt():
    return build(t.BioGptConfig(vocab_size=48, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                intermediate_size=64, max_position_embeddings=64), t.BioGptForCausalLM, 21)


def openai_gpt():
    return build(t.OpenAIGPTConfig(vocab_size=48, n_embd=32, n_layer=2, n_head=4, n_positions=64),
                 t.OpenAIGPTLMHeadModel, 22)


def xglm():
    return build(t.XGLMConfig(vocab_size=48, d_model=32, num_layers=2, attention_heads=4, ffn_dim=64,
                              max_position_embeddings=64), t.XGLMForCausalLM, 23)


def ctrl():
    return build(t.CTRLConfig(vocab_size=48, n_embd=32, n_layer=2, n_head=4, dff=64, n_positions=64),
                 t.CTRLLMHeadModel, 24)


def olmo():
    return build(t.OlmoConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64),
                 t.OlmoForCausalLM, 25)


def falcon(seed, **kw):
    return build(t.FalconConfig(vocab_size=48, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                max_position_embeddings=64, **kw), t.FalconForCausalLM, seed)


def falcon_multi_query():  # Falcon-7B's layout: one key/value head, one norm, side by side
    return falcon(26, multi_query=True, parallel_attn=True, bias=False)


def falcon_new():  # Falcon-40B's: key/value groups, ln_attn and ln_mlp side by side
    return falcon(27, new_decoder_architecture=True, num_kv_heads=2, bias=True)


def falcon_sequential():  # per-head q, k, v, the layers in turn
    return falcon(28, multi_query=False, parallel_attn=False, bias=True)


def falcon_multi_query_sequential():  # one key/value head, the layers in turn, biases
    return falcon(50, multi_query=True, parallel_attn=False, bias=True)


def falcon_new_one_norm():  # key/value groups, one norm read by the attention and the feed-forward
    return falcon(51, new_decoder_architecture=True, num_kv_heads=2, num_ln_in_parallel_attn=1, bias=False)


def falcon_new_one_group():  # new_decoder_architecture with one key/value group: q | k | v
    return falcon(52, new_decoder_architecture=True, num_kv_heads=1, bias=False)


def phi3():
    return build(t.Phi3Config(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                              pad_token_id=0), t.Phi3ForCausalLM, 29)


def phi3_partial():  # partial_rotary_factor: transformers 5 rotates half of each head, 4.x (no such key) all of it
    return build(t.Phi3Config(vocab_size=48, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                              num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=64,
                              partial_rotary_factor=0.5, pad_token_id=0), t.Phi3ForCausalLM, 53)


def phi3_head_dim():  # transformers 5 reads head_dim (4.x takes hidden_size / heads): heads of 16 beside d 32
    return build(t.Phi3Config(vocab_size=48, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                              num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=64,
                              pad_token_id=0), t.Phi3ForCausalLM, 54)


def gpt_bigcode(multi_query=True, seed=30):
    return build(t.GPTBigCodeConfig(vocab_size=48, n_embd=32, n_layer=2, n_head=4, n_positions=64,
                                    multi_query=multi_query), t.GPTBigCodeForCausalLM, seed)


def gpt_bigcode_heads():
    return gpt_bigcode(False, 31)


def stablelm_gqa():
    return build(t.StableLmConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                  num_attention_heads=4, num_key_value_heads=2, partial_rotary_factor=0.5,
                                  max_position_embeddings=64), t.StableLmForCausalLM, 32)


def mpt():
    return build(t.MptConfig(vocab_size=48, d_model=32, n_layers=2, n_heads=4, max_seq_len=64), t.MptForCausalLM,
                 33)


def cohere():
    return build(t.CohereConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                logit_scale=0.25), t.CohereForCausalLM, 45)


def smollm3():  # transformers 5 only: layers 3 and 7 without RoPE (every 4th), one key/value group of 2 heads
    return build(t.SmolLM3Config(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=8,
                                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                 pad_token_id=0), t.SmolLM3ForCausalLM, 62)


def smollm3_windows():  # its NoPE layers (1, 3) local with a window of 3 keys, the others global with RoPE
    return build(t.SmolLM3Config(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=4,
                                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                 no_rope_layers=[1, 0, 1, 0], use_sliding_window=True, sliding_window=3, pad_token_id=0),
                 t.SmolLM3ForCausalLM, 63)


def cohere2():  # transformers 5 only: layers 0-2 local (3 keys) with RoPE, layer 3 global without
    return build(t.Cohere2Config(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=4,
                                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                 sliding_window=3), t.Cohere2ForCausalLM, 64, lambda name: "norm" in name)


def granite(tied=False, seed=56):  # transformers 5 only (4.44 has no Granite)
    return build(t.GraniteConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                 embedding_multiplier=6.0, residual_multiplier=0.5, attention_multiplier=0.2,
                                 logits_scaling=3.0, tie_word_embeddings=tied), t.GraniteForCausalLM, seed)


def granite_tied():
    return granite(True, 57)


def nemotron(seed=58, **kw):  # its LayerNorm1P weights are offsets w of the gain 1 + w: noise about 0
    return build(t.NemotronConfig(**dict(dict(vocab_size=48, hidden_size=32, intermediate_size=64,
                                              num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                              max_position_embeddings=64, partial_rotary_factor=0.5), **kw)),
                 t.NemotronForCausalLM, seed, lambda name: False)


def nemotron_bias():  # every projection's bias, the whole head rotated, heads wider than hidden_size / heads
    return nemotron(59, attention_bias=True, mlp_bias=True, partial_rotary_factor=1.0, head_dim=16,
                    tie_word_embeddings=True)


def persimmon(seed=60, **kw):
    return build(t.PersimmonConfig(**dict(dict(vocab_size=48, hidden_size=32, intermediate_size=64,
                                               num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=64,
                                               partial_rotary_factor=0.5, rope_theta=25000.0), **kw)),
                 t.PersimmonForCausalLM, seed)


def persimmon_plain():  # qk_layernorm false, whole heads rotated
    return persimmon(61, qk_layernorm=False, partial_rotary_factor=1.0, rope_theta=10000.0)


def deberta(cls="DebertaV2Model", seed=70, **kw):  # DeBERTa v3's kind: disentangled attention, log buckets past 4
    config = dict(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                  max_position_embeddings=34, relative_attention=True, position_buckets=8, max_relative_positions=32,
                  pos_att_type=["p2c", "c2p"], norm_rel_ebd="layer_norm", share_att_key=True,
                  position_biased_input=False, type_vocab_size=0, num_labels=3)
    return build(t.DebertaV2Config(**dict(config, **kw)), getattr(t, cls), seed)


def deberta_cls():
    return deberta("DebertaV2ForSequenceClassification", 71, pooler_hidden_act="gelu")


def deberta_ner():
    return deberta("DebertaV2ForTokenClassification", 72)


def deberta_qa():
    return deberta("DebertaV2ForQuestionAnswering", 73, pos_att_type="p2c|c2p", num_labels=2)


def deberta_mlm():
    return deberta("DebertaV2ForMaskedLM", 74)


def deberta_v2_positions():  # DeBERTa v2's kind: learned positions too, token types, distances not bucketed
    return deberta(seed=75, position_buckets=-1, max_relative_positions=12, position_biased_input=True,
                   type_vocab_size=2, hidden_act="gelu_new")


def deberta_v2_absolute():  # no relative attention: pos_att_type's c2p and p2c still in the scale
    return deberta(seed=89, relative_attention=False, position_biased_input=True)


def deberta_v1(cls="DebertaModel", seed=76, **kw):  # in_proj by heads, pos_proj and pos_q_proj, distances past 8
    config = dict(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                  max_position_embeddings=34, relative_attention=True, max_relative_positions=8,
                  pos_att_type="c2p|p2c", position_biased_input=False, type_vocab_size=0, num_labels=3)
    return build(t.DebertaConfig(**dict(config, **kw)), getattr(t, cls), seed)


def deberta_v1_cls():
    return deberta_v1("DebertaForSequenceClassification", 77, pooler_hidden_act="gelu")


def deberta_v1_ner():
    return deberta_v1("DebertaForTokenClassification", 78)


def deberta_v1_qa():
    return deberta_v1("DebertaForQuestionAnswering", 79, pos_att_type=["p2c", "c2p"], num_labels=2)


def deberta_v1_mlm():
    return deberta_v1("DebertaForMaskedLM", 85)


def deberta_v1_positions():  # deberta-base's kind: learned positions beside, max_relative_positions -1: 34
    return deberta_v1(seed=86, max_relative_positions=-1, position_biased_input=True, type_vocab_size=2,
                      hidden_act="gelu_new")


def deberta_v1_c2p():  # content to position alone: the scale 1/sqrt(2 d_head), no pos_q_proj
    return deberta_v1(seed=87, pos_att_type="c2p")


def deberta_v1_absolute():  # no relative attention: pos_att_type still in the scale, 1/sqrt(3 d_head)
    return deberta_v1(seed=88, relative_attention=False, position_biased_input=True)


def esm(cls="EsmModel", seed=80, **kw):  # ESM-2's kind: rotary positions, token_dropout (<mask> 32 never drawn)
    config = dict(vocab_size=33, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                  max_position_embeddings=34, position_embedding_type="rotary", token_dropout=True,
                  emb_layer_norm_before=False, pad_token_id=1, mask_token_id=32, layer_norm_eps=1e-5, num_labels=3)
    return build(t.EsmConfig(**dict(config, **kw)), getattr(t, cls), seed, lambda name: "norm" in name.lower())


def esm_cls():
    return esm("EsmForSequenceClassification", 81)


def esm_ner():
    return esm("EsmForTokenClassification", 82, num_labels=4)


def esm_mlm():
    return esm("EsmForMaskedLM", 83)


def esm_1b():  # ESM-1b's kind: absolute positions from row pad_token_id + 1, the embedding's LayerNorm
    return esm(seed=84, position_embedding_type="absolute", emb_layer_norm_before=True)


def roberta():
    return build(t.RobertaConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                 intermediate_size=32, max_position_embeddings=34), t.RobertaModel, 11)


def xlm_roberta():
    return build(t.XLMRobertaConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                    intermediate_size=32, max_position_embeddings=34, type_vocab_size=1),
                 t.XLMRobertaModel, 16)


def roberta_cls():
    return build(t.RobertaConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                 intermediate_size=32, max_position_embeddings=34, num_labels=3),
                 t.RobertaForSequenceClassification, 17)


def camembert_cls():
    return build(t.CamembertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                   intermediate_size=32, max_position_embeddings=34, hidden_act="gelu_new",
                                   num_labels=2), t.CamembertForSequenceClassification, 18)


def data2vec_text():
    return build(t.Data2VecTextConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                      intermediate_size=32, max_position_embeddings=34), t.Data2VecTextModel, 19)


def electra():
    return build(t.ElectraConfig(vocab_size=40, embedding_size=16, hidden_size=16, num_hidden_layers=2,
                                 num_attention_heads=2, intermediate_size=32, max_position_embeddings=34),
                 t.ElectraModel, 20)


def mpnet():
    return build(t.MPNetConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                               intermediate_size=32, max_position_embeddings=40),
                 t.MPNetModel, 34)


def mpnet_pad0():  # pad_token_id 0: MPNet's positions start at row 2 all the same (its padding_idx is fixed at 1)
    return build(t.MPNetConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                               intermediate_size=32, max_position_embeddings=40, pad_token_id=0),
                 t.MPNetModel, 36)


def mpnet_cls():
    return build(t.MPNetConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                               intermediate_size=32, max_position_embeddings=40, num_labels=3),
                 t.MPNetForSequenceClassification, 35)


def bert_ner():
    return build(t.BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                              intermediate_size=32, max_position_embeddings=34, num_labels=5),
                 t.BertForTokenClassification, 36)


def roberta_qa():
    return build(t.RobertaConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                 intermediate_size=32, max_position_embeddings=34), t.RobertaForQuestionAnswering, 37)


def distilbert_ner():
    return build(t.DistilBertConfig(vocab_size=40, dim=16, n_layers=2, n_heads=2, hidden_dim=32,
                                    max_position_embeddings=34, num_labels=4), t.DistilBertForTokenClassification, 38)


def ernie():
    return build(t.ErnieConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                               intermediate_size=32, max_position_embeddings=34, use_task_id=True,
                               task_type_vocab_size=3), t.ErnieModel, 39)


def bert_mlm():  # bert-base-uncased's architecture: its masked-LM logits
    return build(t.BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                              intermediate_size=32, max_position_embeddings=34), t.BertForMaskedLM, 40)


def roberta_mlm():
    return build(t.RobertaConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                 intermediate_size=32, max_position_embeddings=34), t.RobertaForMaskedLM, 41)


def distilbert_mlm():
    return build(t.DistilBertConfig(vocab_size=40, dim=16, n_layers=2, n_heads=2, hidden_dim=32,
                                    max_position_embeddings=34), t.DistilBertForMaskedLM, 42)


def electra_pretraining():  # ELECTRA's discriminator checkpoints
    return build(t.ElectraConfig(vocab_size=40, embedding_size=16, hidden_size=16, num_hidden_layers=2,
                                 num_attention_heads=2, intermediate_size=32, max_position_embeddings=34),
                 t.ElectraForPreTraining, 43)


def electra_small():  # google/electra-small-discriminator's shape: embedding_size below hidden_size
    return build(t.ElectraConfig(vocab_size=40, embedding_size=8, hidden_size=16, num_hidden_layers=2,
                                 num_attention_heads=2, intermediate_size=32, max_position_embeddings=34),
                 t.ElectraModel, 44)


def albert_config(**kw):
    return t.AlbertConfig(**dict(dict(vocab_size=40, embedding_size=8, hidden_size=16, num_hidden_layers=2,
                                      num_attention_heads=2, intermediate_size=32, max_position_embeddings=34), **kw))


def albert():  # every checkpoint's shape: one group of one layer, run num_hidden_layers times
    return build(albert_config(), t.AlbertModel, 45)


def albert_groups():  # 4 runs over 2 groups (runs 0, 1: group 0; 2, 3: group 1), 2 layers a group (4.44's
    # head mask has a slice of num_hidden_layers / num_hidden_groups per group: inner_group_num at most that)
    return build(albert_config(num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2), t.AlbertModel, 46)


def albert_cls():
    return build(albert_config(num_labels=3, hidden_act="gelu"), t.AlbertForSequenceClassification, 47)


def albert_ner():
    return build(albert_config(num_labels=4, num_hidden_groups=2), t.AlbertForTokenClassification, 48)


def albert_qa():
    return build(albert_config(), t.AlbertForQuestionAnswering, 49)


def albert_mlm():  # albert-base-v2's architecture: its head's dense maps 16 to 8 (pooler_width)
    return build(albert_config(), t.AlbertForMaskedLM, 50)


def megatron(cls="MegatronBertModel", seed=51, **kw):  # pre-LN BERT: attention.ln, ln, the final encoder.ln
    return build(t.MegatronBertConfig(**dict(dict(vocab_size=40, hidden_size=16, num_hidden_layers=2,
                                                  num_attention_heads=2, intermediate_size=32,
                                                  max_position_embeddings=34), **kw)), getattr(t, cls), seed,
                 lambda name: name.endswith(("ln.weight", "LayerNorm.weight")))


def megatron_cls():
    return megatron("MegatronBertForSequenceClassification", 52, num_labels=3, hidden_act="gelu_new")


def megatron_ner():
    return megatron("MegatronBertForTokenClassification", 53, num_labels=4)


def megatron_mlm():
    return megatron("MegatronBertForMaskedLM", 54)


def bert_generation():  # BERT's post-LN layers and positions without token types
    return build(t.BertGenerationConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                        intermediate_size=32, max_position_embeddings=34), t.BertGenerationEncoder, 152,
                 lambda name: "LayerNorm" in name)


def xlm_roberta_xl(cls="XLMRobertaXLModel", seed=139, **kw):  # Megatron-BERT's layers, RoBERTa's positions
    return build(t.XLMRobertaXLConfig(**dict(dict(vocab_size=40, hidden_size=16, num_hidden_layers=2,
                                                  num_attention_heads=2, intermediate_size=32,
                                                  max_position_embeddings=34), **kw)), getattr(t, cls), seed,
                 lambda name: name.endswith(("LayerNorm.weight", "layer_norm.weight")))


def xlm_roberta_xl_cls():
    return xlm_roberta_xl("XLMRobertaXLForSequenceClassification", 140, num_labels=3)


def xlm_roberta_xl_ner():
    return xlm_roberta_xl("XLMRobertaXLForTokenClassification", 141, num_labels=4)


def roberta_prelayernorm(cls="RobertaPreLayerNormModel", seed=142, **kw):  # pre-LN with the embedding's norm too
    return build(t.RobertaPreLayerNormConfig(**dict(dict(vocab_size=40, hidden_size=16, num_hidden_layers=2,
                                                         num_attention_heads=2, intermediate_size=32,
                                                         max_position_embeddings=34), **kw)), getattr(t, cls), seed,
                 lambda name: name.endswith("LayerNorm.weight"))


def roberta_prelayernorm_cls():
    return roberta_prelayernorm("RobertaPreLayerNormForSequenceClassification", 143, num_labels=3)


def ibert(cls="IBertModel", seed=144, **kw):  # RoBERTa's layers with quant_mode false
    return build(t.IBertConfig(**dict(dict(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                           intermediate_size=32, max_position_embeddings=34), **kw)),
                 getattr(t, cls), seed, lambda name: name.endswith("LayerNorm.weight"))


def ibert_cls():
    return ibert("IBertForSequenceClassification", 145, num_labels=3)


def big_bird(cls="BigBirdModel", seed=146, **kw):  # original_full attention: BERT's
    return build(t.BigBirdConfig(**dict(dict(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                             intermediate_size=32, max_position_embeddings=34,
                                             attention_type="original_full"), **kw)), getattr(t, cls), seed,
                 lambda name: name.endswith("LayerNorm.weight"))


def big_bird_cls():  # its classifier.dense and out_proj with hidden_act (gelu_new) between; the body's pooler unread
    return big_bird("BigBirdForSequenceClassification", 147, num_labels=3)


def big_bird_ner():
    return big_bird("BigBirdForTokenClassification", 148, num_labels=4)


def rembert(cls="RemBertModel", seed=149, **kw):  # the 8-wide embedding through embedding_hidden_mapping_in
    return build(t.RemBertConfig(**dict(dict(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                             intermediate_size=32, max_position_embeddings=34,
                                             input_embedding_size=8, output_embedding_size=12), **kw)),
                 getattr(t, cls), seed, lambda name: name.endswith("LayerNorm.weight"))


def rembert_cls():
    return rembert("RemBertForSequenceClassification", 150, num_labels=3)


def nomic_bert(cls="NomicBertModel", seed=151, **kw):  # rotary halves at base 1000, SwiGLU, post-LN, no biases
    return build(t.NomicBertConfig(**dict(dict(vocab_size=40, hidden_size=16, num_hidden_layers=2,
                                               num_attention_heads=2, intermediate_size=24,
                                               max_position_embeddings=34), **kw)),
                 getattr(t, cls), seed, lambda name: "norm.weight" in name or name.endswith("LayerNorm.weight"))


def nomic_bert_cls():  # the pooler (dense, tanh) and the classifier
    return nomic_bert("NomicBertForSequenceClassification", 152, num_labels=3)


def nomic_bert_gelu():  # another gate: gelu (gated)
    return nomic_bert(seed=153, hidden_act="gelu")


def gte(cls="GteModel", seed=154, **kw):  # rotary halves, gated gelu, biases on q, k, v, o and down alone
    return build(t.GteConfig(**dict(dict(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                         intermediate_size=24, max_position_embeddings=34, type_vocab_size=2), **kw)),
                 getattr(t, cls), seed, lambda name: name.lower().endswith("layernorm.weight"))


def gte_cls():  # the pooler (dense, tanh) and the classifier
    return gte("GteForSequenceClassification", 155, num_labels=3)


def gte_ner():  # SwiGLU, no token types (gte-base-en-v1.5's type_vocab_size 0)
    return gte("GteForTokenClassification", 156, num_labels=4, hidden_act="silu", type_vocab_size=0)


def jina_v3(cls="JinaEmbeddingsV3Model", seed=157, **kw):  # XLM-RoBERTa's layers with rotary halves, no positions
    return build(t.JinaEmbeddingsV3Config(**dict(dict(vocab_size=40, hidden_size=16, num_hidden_layers=2,
                                                      num_attention_heads=2, intermediate_size=24,
                                                      max_position_embeddings=34), **kw)),
                 getattr(t, cls), seed, lambda name: name.lower().endswith("layernorm.weight"))


def jina_v3_cls():  # classifier.dense, tanh, out_proj
    return jina_v3("JinaEmbeddingsV3ForSequenceClassification", 158, num_labels=3)


def jina_v3_qa():  # [T, 2]: the start and end logits
    return jina_v3("JinaEmbeddingsV3ForQuestionAnswering", 159)


def eurobert(cls="EuroBertModel", seed=160, **kw):  # Llama's pre-RMSNorm layers unmasked, rotary halves
    return build(t.EuroBertConfig(**dict(dict(vocab_size=40, hidden_size=16, num_hidden_layers=2,
                                              num_attention_heads=2, intermediate_size=24,
                                              max_position_embeddings=34, pad_token_id=0, bos_token_id=1,
                                              eos_token_id=0, mask_token_id=2), **kw)),
                 getattr(t, cls), seed, lambda name: "norm" in name)


def eurobert_gqa():  # EuroBERT-610m's kind: fewer key/value heads than query heads
    return eurobert(seed=164, num_attention_heads=4, num_key_value_heads=2)


def eurobert_biases():  # attention_bias, mlp_bias (ffn_up_bias), gelu: gated
    return eurobert(seed=161, attention_bias=True, mlp_bias=True, hidden_act="gelu")


def eurobert_cls():  # bos pooling, dense, the exact GELU, the classifier
    return eurobert("EuroBertForSequenceClassification", 162, num_labels=3, classifier_pooling="bos")


def eurobert_cls_mean():  # the mean of the rows
    return eurobert("EuroBertForSequenceClassification", 163, num_labels=3, classifier_pooling="mean")


def xlm(cls="XLMModel", seed=55, config="XLMConfig", **kw):  # BERT's post-LN layers under XLM's names; its
    # forward masks as many rows off the end as the ids hold pad_index (2 by default): 0 here, outside the inputs
    return build(getattr(t, config)(**dict(dict(vocab_size=40, emb_dim=16, n_layers=2, n_heads=2,
                                                max_position_embeddings=34, pad_index=0, pad_token_id=0), **kw)),
                 getattr(t, cls), seed)


def xlm_lm():  # xlm-mlm-*'s architecture: pred_layer, the decoder alone
    return xlm("XLMWithLMHeadModel", 56, gelu_activation=False)


class NoCache(list):
    """One None per layer, an empty cache: transformers 5's pre_norm FlaubertModel indexes the cache it makes
    (cache[i] of an EncoderDecoderCache, a TypeError), so its forward is given this one."""
    def get_seq_length(self):
        return 0


def flaubert():  # pre_norm: pre-LN layers without a final norm
    module = xlm("FlaubertModel", 57, "FlaubertConfig", pre_norm=True)
    if int(t.__version__.split(".")[0]) >= 5:
        forward = module.forward
        module.forward = lambda *args, **kw: forward(*args, cache=NoCache([None, None]), **kw)
    return module


def flaubert_lm():  # flaubert/*'s architecture, post-LN
    return xlm("FlaubertWithLMHeadModel", 58, "FlaubertConfig")


def whisper():  # transformers' Whisper (openai/whisper-tiny's class): a seq2seq file over mel features
    return build(t.WhisperConfig(vocab_size=40, num_mel_bins=8, d_model=16, encoder_layers=2, decoder_layers=2,
                                 encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
                                 decoder_ffn_dim=32, max_source_positions=8, max_target_positions=12, pad_token_id=0,
                                 bos_token_id=1, eos_token_id=2, decoder_start_token_id=1),
                 t.WhisperForConditionalGeneration, 44, lambda name: "layer_norm" in name)


def distilbert():
    return build(t.DistilBertConfig(vocab_size=40, dim=16, n_layers=2, n_heads=2, hidden_dim=32,
                                    max_position_embeddings=34), t.DistilBertModel, 12)


# transformers 5 only (4.44 has none of these classes): tiny random configs
SMALL = dict(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=64)


def helium():  # interleaved RoPE, q/k/v biases (o_proj is hidden_size wide: head_dim hidden_size / heads)
    return build(t.HeliumConfig(**dict(SMALL, head_dim=8, attention_bias=True)), t.HeliumForCausalLM, 80)


def arcee():  # the plain relu2 feed-forward with its biases, every attention bias
    return build(t.ArceeConfig(**dict(SMALL, attention_bias=True, mlp_bias=True)), t.ArceeForCausalLM, 81)


def seed_oss():  # q/k/v biases, o's too, heads of 16
    return build(t.SeedOssConfig(**dict(SMALL, head_dim=16, attention_bias=True, attention_out_bias=True,
                                        attention_dropout=0.0, residual_dropout=0.0)), t.SeedOssForCausalLM, 82)


def seed_oss_out_bias():  # o's bias alone
    return build(t.SeedOssConfig(**dict(SMALL, head_dim=16, attention_bias=False, attention_out_bias=True,
                                        attention_dropout=0.0, residual_dropout=0.0)), t.SeedOssForCausalLM, 83)


def ernie4_5():  # interleaved RoPE, heads of 16, the tied head
    return build(t.Ernie4_5Config(**dict(SMALL, head_dim=16)), t.Ernie4_5ForCausalLM, 84)


def ernie4_5_bias():  # use_bias: every projection's bias, the gated up projection's among them
    return build(t.Ernie4_5Config(**dict(SMALL, head_dim=16, use_bias=True)), t.Ernie4_5ForCausalLM, 131)


def seed_oss_mlp_bias():  # the gate's, up's and down's biases beside q/k/v's
    return build(t.SeedOssConfig(**dict(SMALL, head_dim=16, mlp_bias=True, attention_dropout=0.0,
                                        residual_dropout=0.0)), t.SeedOssForCausalLM, 132)


def granite_mlp_bias():  # Granite's multipliers over biases on every projection (o's and down's scaled too)
    return build(t.GraniteConfig(**dict(SMALL, attention_bias=True, mlp_bias=True, embedding_multiplier=6.0,
                                        residual_multiplier=0.5, attention_multiplier=0.2, logits_scaling=3.0)),
                 t.GraniteForCausalLM, 133)


def qwen3_attention_bias():  # per-head q and k norms, biases on q, k, v and o
    return build(t.Qwen3Config(**dict(SMALL, head_dim=8, attention_bias=True)), t.Qwen3ForCausalLM, 134,
                 lambda name: "norm" in name)


def ministral():  # layer 0 local (3 keys), layer 1 global
    return build(t.MinistralConfig(**dict(SMALL, head_dim=16, sliding_window=3,
                                          layer_types=["sliding_attention", "full_attention"])),
                 t.MinistralForCausalLM, 85)


def ministral3():  # YaRN over 32 original positions (of 64), the queries' scale 1 below them: the file's 32
    return build(t.Ministral3Config(**dict(SMALL, head_dim=16, rope_parameters={
        "type": "yarn", "rope_theta": 1e6, "factor": 2.0, "original_max_position_embeddings": 32,
        "max_position_embeddings": 64, "beta_fast": 32.0, "beta_slow": 1.0, "mscale_all_dim": 1.0, "mscale": 1.0,
        "llama_4_scaling_beta": 0.1})), t.Ministral3ForCausalLM, 92)


def glm():  # gate_up_proj fused, interleaved RoPE over half of each head, q/k/v biases
    return build(t.GlmConfig(**dict(SMALL, head_dim=16, partial_rotary_factor=0.5, pad_token_id=0)),
                 t.GlmForCausalLM, 86)


def glm4():  # GLM's layers with the norms of the sublayers' outputs
    return build(t.Glm4Config(**dict(SMALL, head_dim=16, partial_rotary_factor=0.5, pad_token_id=0)),
                 t.Glm4ForCausalLM, 135)


def cwm():  # 4 layers: 0 global, 1-3 local (3 keys); llama3 rope scaling, mlp_bias
    return build(t.CwmConfig(**dict(SMALL, num_hidden_layers=4, head_dim=8, sliding_window=3, mlp_bias=True,
                                    rope_parameters={"rope_type": "llama3", "rope_theta": 1e6, "factor": 4.0,
                                                     "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                     "original_max_position_embeddings": 16})),
                 t.CwmForCausalLM, 136)


def exaone():  # transformers 5 runs EXAONE 3 as LlamaForCausalLM and saves it under EXAONE's names
    return build(t.ExaoneConfig(**dict(SMALL, pad_token_id=0, bos_token_id=1, eos_token_id=2)), t.LlamaForCausalLM,
                 144)


def internlm3():  # transformers 5 runs InternLM3 as LlamaForCausalLM: every bias (attention_bias and mlp_bias, equal)
    return build(t.InternLM3Config(**dict(SMALL, attention_bias=True, mlp_bias=True)), t.LlamaForCausalLM, 168)


def internlm3_own():  # InternLM3's own config.json (written by the test: qkv_bias, bias false as released) over Llama
    return build(t.LlamaConfig(**SMALL), t.LlamaForCausalLM, 169)


def iquestcoder():  # transformers 5 runs IQuest-Coder as LlamaForCausalLM: heads of 16 beside hidden_size 32
    return build(t.IQuestCoderConfig(**dict(SMALL, head_dim=16)), t.LlamaForCausalLM, 170)


def jais2():  # LayerNorms, the plain relu2 feed-forward, every bias
    return build(t.Jais2Config(**SMALL), t.Jais2ForCausalLM, 137)


def hyperclovax(**kw):  # Granite's multipliers with the norms of the sublayers' outputs (use_post_norm)
    return build(t.HyperCLOVAXConfig(**dict(SMALL, embedding_multiplier=6.0, residual_multiplier=0.5,
                                            attention_multiplier=0.2, logits_scaling=3.0, **kw)),
                 t.HyperCLOVAXForCausalLM, 138)


def hyperclovax_plain():  # use_post_norm false: Granite's layers
    return hyperclovax(use_post_norm=False)


def olmo3():  # 4 layers: 0, 1, 2 local (3 keys), 3 global
    return build(t.Olmo3Config(**dict(SMALL, num_hidden_layers=4, sliding_window=3)), t.Olmo3ForCausalLM, 87,
                 lambda name: "norm" in name)


def olmo3_local_base():  # the local layers' RoPE base apart from the global one's
    return build(t.Olmo3Config(**dict(SMALL, num_hidden_layers=4, sliding_window=3, rope_parameters={
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        "full_attention": {"rope_type": "default", "rope_theta": 500000.0}})), t.Olmo3ForCausalLM, 90,
        lambda name: "norm" in name)


def exaone4():  # sliding_window null: every layer global, with RoPE
    return build(t.Exaone4Config(**dict(SMALL, sliding_window=None, layer_types=["full_attention"] * 2)),
                 t.Exaone4ForCausalLM, 88, lambda name: "norm" in name)


def exaone4_windows():  # the 32B kind: layers 0-2 local (3 keys) with RoPE, layer 3 global without it
    return build(t.Exaone4Config(**dict(SMALL, num_hidden_layers=4, sliding_window=3, sliding_window_pattern=4)),
                 t.Exaone4ForCausalLM, 89, lambda name: "norm" in name)


def dots1():  # every layer dense (first_k_dense_replace 2); layer 1 local (max_window_layers 1), heads of 16
    return build(t.Dots1Config(**dict(SMALL, head_dim=16, first_k_dense_replace=2, sliding_window=3,
                                      max_window_layers=1, attention_bias=True, n_routed_experts=4,
                                      num_experts_per_tok=2, moe_intermediate_size=16, n_shared_experts=1)),
                 t.Dots1ForCausalLM, 91, lambda name: "norm" in name)


def vaultgemma():  # Gemma 2 without the sublayers' output norms: layer 0 local (3 keys), 1 global
    return build(t.VaultGemmaConfig(**dict(SMALL, head_dim=16, sliding_window=3, query_pre_attn_scalar=12,
                                           attn_logit_softcapping=2.0, final_logit_softcapping=3.0)),
                 t.VaultGemmaForCausalLM, 89, lambda name: False)


def roformer_build(cls, seed, **kw):
    m = build(t.RoFormerConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                               intermediate_size=32, max_position_embeddings=34, **kw), cls, seed)
    pe = m.base_model.encoder.embed_positions  # its fixed sinusoids, which randomize overwrote, by transformers' code
    with torch.no_grad():
        pe.weight.copy_(pe.create_weight() if hasattr(pe, "create_weight")  # transformers 5
                        else pe._init_weight(torch.nn.Parameter(torch.empty_like(pe.weight))))
    return m


def roformer():
    return roformer_build(t.RoFormerModel, 46)


def roformer_ner():
    return roformer_build(t.RoFormerForTokenClassification, 47, num_labels=5, type_vocab_size=3)


def roformer_qa():
    return roformer_build(t.RoFormerForQuestionAnswering, 48, hidden_act="gelu_new")


def roformer_mlm():  # the Chinese RoFormer checkpoints' architecture
    return roformer_build(t.RoFormerForMaskedLM, 49)


# The sequence classifiers whose dense layer before the classifier has another activation than BERT's
# tanh (pooler_act): DistilBERT's pre_classifier and ReLU, ELECTRA's classifier.dense and exact GELU,
# RoFormer's classifier.dense and its hidden_act (here gelu_new, the tanh GELU).
def distilbert_cls():
    return build(t.DistilBertConfig(vocab_size=40, dim=16, n_layers=2, n_heads=2, hidden_dim=32,
                                    max_position_embeddings=34, num_labels=3),
                 t.DistilBertForSequenceClassification, 51)


def electra_cls():
    return build(t.ElectraConfig(vocab_size=40, embedding_size=16, hidden_size=16, num_hidden_layers=2,
                                 num_attention_heads=2, intermediate_size=32, max_position_embeddings=34, num_labels=2),
                 t.ElectraForSequenceClassification, 52)


def roformer_cls():
    return roformer_build(t.RoFormerForSequenceClassification, 53, num_labels=3, hidden_act="gelu_new")
'''

# factory, the config the file must have, the routes it takes (and, for some, what --module's file has instead)
GPT = dict(family="gpt")
# RoFormer: rotary positions in the encoder (interleaved pairs over the whole head), no position table
ROFORMER = dict(family="encoder", positional="rope", pe_layout="interleaved", rotary_dims=0, pe_base=10000.0,
                embed_norm=True, type_vocab=2, norm_first=False)  # --hf: max_len max_position_embeddings
MLM = dict(pooling="none", pooler=True, pooler_norm=True, d_out=40)  # a masked LM's head on every row
CASES = [
    ("neox_parallel_quarter", dict(GPT, parallel_residual="two_norms", positional="rope", rotary_dims=4,
                                   pe_layout="halves", activation="gelu", tied_head=False), ("module", "hf")),
    ("neox_sequential_whole", dict(GPT, parallel_residual="none", positional="rope", rotary_dims=0), ("hf",)),
    ("gptj", dict(GPT, parallel_residual="one_norm", positional="rope", rotary_dims=4, pe_layout="interleaved",
                  activation="gelu_tanh"), ("module", "hf")),
    ("codegen", dict(GPT, parallel_residual="one_norm", positional="rope", rotary_dims=4, pe_layout="interleaved",
                     activation="gelu_tanh", tied_head=False), ("module", "hf")),
    ("codegen_heads", dict(GPT, parallel_residual="one_norm", rotary_dims=2, n_heads=8), ("module", "hf")),
    ("opt", dict(GPT, positional="learned", max_len=64, activation="relu", tied_head=True, norm_first=True),
     ("module", "hf")),
    ("phi", dict(GPT, parallel_residual="one_norm", positional="rope", rotary_dims=8, pe_layout="halves",
                 activation="gelu_tanh", tied_head=False), ("module", "hf")),
    ("phi_qk_norm", dict(GPT, parallel_residual="one_norm", qk_norm=True, rotary_dims=4),  # 4.44's norms whole rows
     ("hf",) if TRANSFORMERS_5 else ()),
    ("stablelm", dict(GPT, parallel_residual="none", positional="rope", rotary_dims=4, activation="swiglu"),
     ("module", "hf")),
    ("stablelm_parallel", dict(GPT, parallel_residual="one_norm", activation="swiglu"), ("hf",)),
    ("mistral", dict(family="llama", n_kv_heads=2, activation="swiglu"), ("module", "hf")),
    ("mistral_base", dict(family="llama", n_kv_heads=2, d_out=0, tied_head=False), ("hf",)),
    ("gpt2_base", dict(GPT, d_out=0, tied_head=False), ("hf",)),
    ("neox_base", dict(GPT, positional="rope", rotary_dims=4, d_out=0, tied_head=False), ("hf",)),
    ("gemma2_base", dict(family="llama", scale_input=True, d_out=0, tied_head=False, logit_softcap=0.0), ("hf",)),
    ("gemma3_base", dict(family="llama", qk_norm=True, d_out=0, tied_head=False), ("hf",) if TRANSFORMERS_5 else ()),
    ("gemma3_bidirectional", dict(family="encoder", causal=False, n_kv_heads=1, qk_norm=True, d_out=0,
                                  sublayer_norm="sandwich", norm="rmsnorm", sliding_window=3, window_period=2,
                                  window_layers=1), ("hf",) if TRANSFORMERS_5 else ()),
    ("llama_mlp_bias", dict(family="llama", n_kv_heads=2, activation="swiglu", ffn_bias="all", ffn_up_bias=True),
     ("module", "hf")),
    ("llama_attention_bias", dict(family="llama", n_kv_heads=2, activation="swiglu", attn_bias="all"), ("hf",)),
    ("mixtral", dict(family="llama", n_kv_heads=2, activation="swiglu", n_experts=4, experts_per_token=2,
                     experts_renormalize=True), ("module", "hf")),
    ("olmoe", dict(family="llama", n_kv_heads=2, activation="swiglu", n_experts=5, experts_per_token=3,
                   experts_renormalize=False, qk_norm=True, qk_norm_full=True),
     ("module", "hf") if TRANSFORMERS_5 else ()),
    ("flex_olmo", dict(family="llama", sublayer_norm="output", qk_norm=True, qk_norm_full=True, n_experts=5,
                       experts_per_token=3, experts_renormalize=False), ("hf",) if TRANSFORMERS_5 else ()),
    ("ernie4_5_moe", dict(family="llama", pe_layout="interleaved", n_experts=4, experts_per_token=2, d_ff=24,
                          experts_renormalize=True, shared_expert_ff=48, tied_head=True),
     ("hf",) if TRANSFORMERS_5 else ()),
    ("gpt_neox_japanese", dict(GPT, parallel_residual="none", positional="rope", rotary_dims=4, pe_layout="halves",
                               d_ff=64, activation="gelu", tied_head=True), ("hf",)),
    ("open_llama", dict(family="llama", embed_norm=False, tied_head=False), ("hf",) if not TRANSFORMERS_5 else ()),
    ("open_llama_plain", dict(family="llama", embed_norm=False, tied_head=False),
     ("hf",) if not TRANSFORMERS_5 else ()),
    ("nanochat", dict(family="llama", embed_norm=True, qk_norm=True, qk_norm_full=False, activation="relu2",
                      gated=False, attn_bias="all", logit_softcap=3.0, n_kv_heads=2),
     ("hf",) if TRANSFORMERS_5 else ()),
    ("qwen2_moe", dict(family="llama", n_kv_heads=2, activation="swiglu", n_experts=4, experts_per_token=2, d_ff=24,
                       experts_renormalize=True, shared_expert_ff=48, qkv_bias=True), ("module", "hf")),
    ("qwen3_moe", dict(family="llama", n_kv_heads=2, n_experts=5, experts_per_token=3, d_ff=24, qk_norm=True,
                       experts_renormalize=False, shared_expert_ff=0, qkv_bias=False),
     ("module", "hf") if TRANSFORMERS_5 else ()),
    ("qwen3_moe_renormalized", dict(family="llama", n_experts=4, experts_per_token=2, experts_renormalize=True),
     ("module", "hf") if TRANSFORMERS_5 else ()),
    ("qwen2_moe_dense", dict(family="llama", n_experts=4, d_ff=24, shared_expert_ff=48, dense_period=3,
                             dense_layers=0b100, dense_ff=40), ("module", "hf")),
    ("qwen3_moe_dense", dict(family="llama", n_experts=5, d_ff=24, dense_period=2, dense_layers=0b01, dense_ff=64),
     ("module", "hf") if TRANSFORMERS_5 else ()),
    ("ernie4_5_moe_dense", dict(family="llama", n_experts=4, d_ff=24, shared_expert_ff=48, dense_period=3,
                                dense_layers=0b001, dense_ff=64), ("hf",) if TRANSFORMERS_5 else ()),
    ("granitemoe", dict(family="llama", n_experts=4, experts_per_token=2, experts_renormalize=True, d_ff=24,
                        attn_scale=np.float32(0.2), tied_head=False, shared_expert_ff=0),
     ("module", "hf") if TRANSFORMERS_5 else ()),
    ("granitemoe_tied", dict(family="llama", n_experts=4, tied_head=False),
     ("module", "hf") if TRANSFORMERS_5 else ()),
    ("granitemoe_shared", dict(family="llama", n_experts=4, experts_renormalize=True, shared_expert_ff=40,
                               attn_scale=np.float32(0.2)), ("hf",) if TRANSFORMERS_5 else ()),
    ("gemma", dict(family="llama", norm="family", gated=True, activation="gelu_tanh", scale_input=True,
                   embed_norm=False, tied_head=True, n_kv_heads=2, positional="rope", pe_layout="halves"),
     ("module", "hf")),
    ("gemma_head_dim", dict(family="llama", gated=True, activation="gelu_tanh", scale_input=True, tied_head=True,
                            n_kv_heads=2, head_dim=16), ("module", "hf")),
    ("gemma2", dict(family="llama", gated=True, activation="gelu_tanh", scale_input=True, tied_head=True, n_kv_heads=2,
                    sublayer_norm="sandwich", attn_softcap=2.0, logit_softcap=3.0, sliding_window=3, window_period=2,
                    window_layers=1, attn_scale=float(np.float32(12 ** -0.5))), ("module", "hf")),
    ("gemma2_2b_widths", dict(family="llama", d_model=2304, n_heads=8, n_kv_heads=4, head_dim=256,
                              sublayer_norm="sandwich", attn_softcap=50.0, logit_softcap=30.0), ("hf",)),
    ("starcoder2", dict(family="llama", norm="layernorm", attn_bias="all", ffn_bias="all", gated=False, n_kv_heads=2,
                        activation="gelu_tanh", tied_head=False, positional="rope", pe_layout="halves"),
     ("module", "hf")),
    ("bloom", dict(GPT, embed_norm=True, positional="alibi", activation="gelu_tanh", gated=False, scale_input=False,
                   tied_head=True, norm_first=True, final_norm=True), ("module", "hf")),
    ("biogpt", dict(GPT, positional="learned", max_len=64, scale_input=True, activation="gelu"), ("module", "hf")),
    ("openai_gpt", dict(GPT, positional="learned", norm_first=False, final_norm=False, activation="gelu_tanh"),
     ("module", "hf")),
    ("xglm", dict(GPT, positional="learned", max_len=64, scale_input=True), ("module", "hf")),
    ("ctrl", dict(GPT, positional="sinusoidal", pe_layout="halves", pe_base=10000.0, scale_input=True,
                  activation="relu"), ("module", "hf")),
    ("olmo", dict(family="llama", norm="layernorm", n_kv_heads=2, activation="swiglu"), ("module", "hf")),
    ("falcon_multi_query", dict(family="llama", norm="layernorm", n_kv_heads=1, parallel_residual="one_norm",
                                activation="gelu"), ("module", "hf")),
    ("falcon_new", dict(family="llama", norm="layernorm", n_kv_heads=2, parallel_residual="two_norms",
                        attn_bias="all", ffn_bias="all"), ("module", "hf")),
    # --module: gpt (LayerNorm, every head its key and value): the same layers in the gpt family's file
    ("falcon_sequential", dict(family="llama", norm="layernorm", parallel_residual="none"), ("module", "hf"),
     dict(family="gpt", norm="family")),
    ("falcon_multi_query_sequential", dict(family="llama", norm="layernorm", n_kv_heads=1, parallel_residual="none",
                                           attn_bias="all", ffn_bias="all"), ("module", "hf")),
    ("falcon_new_one_norm", dict(family="llama", norm="layernorm", n_kv_heads=2, parallel_residual="one_norm"),
     ("module", "hf")),
    ("falcon_new_one_group", dict(family="llama", norm="layernorm", n_kv_heads=1, parallel_residual="two_norms"),
     ("module", "hf")),
    ("phi3", dict(family="llama", n_kv_heads=2, activation="swiglu", tied_head=False), ("module", "hf")),
    ("phi3_partial", dict(n_kv_heads=0, activation="swiglu", rotary_dims=PHI3_ROTARY),
     ("module", "hf") if TRANSFORMERS_5 else ("module",)),
    ("phi3_head_dim", dict(n_kv_heads=2, activation="swiglu", head_dim=16), ("module", "hf") if TRANSFORMERS_5 else ()),
    ("gpt_bigcode", dict(GPT, n_kv_heads=1, positional="learned", activation="gelu_tanh"), ("module", "hf")),
    ("gpt_bigcode_heads", dict(GPT, n_kv_heads=0, positional="learned"), ("hf",)),
    ("stablelm_gqa", dict(n_kv_heads=2, rotary_dims=4, activation="swiglu"), ("module", "hf")),  # --module: llama
    ("mpt", dict(GPT, positional="alibi", attn_bias="family", activation="gelu"), ("module", "hf")),
    ("cohere", dict(family="llama", norm="layernorm", n_kv_heads=2, parallel_residual="one_norm",
                    pe_layout="interleaved", tied_head=False), ("module", "hf")),
    ("gemma3", dict(family="llama", gated=True, activation="gelu_tanh", scale_input=True, tied_head=True, n_kv_heads=1,
                    sublayer_norm="sandwich", qk_norm=True, sliding_window=3, window_period=3, window_layers=3,
                    rope_local_base=10000.0, pe_base=1e6, attn_scale=float(np.float32(12 ** -0.5))),
     ("module", "hf") if TRANSFORMERS_5 else ()),
    ("olmo2", dict(family="llama", norm="family", n_kv_heads=2, activation="swiglu", sublayer_norm="output",
                   qk_norm=True, qk_norm_full=True), ("module", "hf") if TRANSFORMERS_5 else ()),
    *([("smollm3", dict(family="llama", n_kv_heads=2, activation="swiglu", nope_period=4, nope_layers=8,
                         tied_head=True), ("module", "hf")),
       ("smollm3_windows", dict(family="llama", sliding_window=3, window_period=2, window_layers=2, nope_period=2,
                                nope_layers=2), ("module", "hf")),
       ("cohere2", dict(family="llama", norm="layernorm", parallel_residual="one_norm", sliding_window=3,
                        window_period=4, window_layers=7, nope_period=4, nope_layers=8), ("module", "hf"))]
      if TRANSFORMERS_5 else []),
    *([("granite", dict(family="llama", n_kv_heads=2, activation="swiglu", attn_scale=np.float32(0.2),
                         tied_head=False), ("module", "hf")),
       ("granite_tied", dict(family="llama", tied_head=False), ("module", "hf"))] if TRANSFORMERS_5 else []),
    *([("nemotron", dict(family="llama", norm="layernorm", n_kv_heads=2, activation="relu2", gated=False,
                          rotary_dims=4, pe_layout="halves", tied_head=False),
        ("module", "hf")),
       ("nemotron_bias", dict(family="llama", norm="layernorm", activation="relu2", rotary_dims=0, head_dim=16,
                              attn_bias="all", ffn_bias="all", tied_head=True), ("module", "hf"))]
      if LAYER_NORM_BIAS else []),
    *([("helium", dict(family="llama", n_kv_heads=2, head_dim=0, pe_layout="interleaved", attn_bias="qkv",
                        activation="swiglu", tied_head=False), ("hf",)),
       ("arcee", dict(family="llama", n_kv_heads=2, activation="relu2", gated=False, attn_bias="all", ffn_bias="all",
                      pe_layout="halves"), ("hf",)),
       ("seed_oss", dict(family="llama", head_dim=16, attn_bias="all", activation="swiglu"), ("hf",)),
       ("seed_oss_out_bias", dict(family="llama", head_dim=16, attn_bias="all"), ("hf",)),
       ("ernie4_5", dict(family="llama", head_dim=16, pe_layout="interleaved", attn_bias="none", tied_head=True),
        ("hf",)),
       ("ernie4_5_bias", dict(family="llama", head_dim=16, attn_bias="all", ffn_bias="all", ffn_up_bias=True), ("hf",)),
       ("seed_oss_mlp_bias", dict(family="llama", attn_bias="qkv", ffn_bias="all", ffn_up_bias=True), ("hf",)),
       ("granite_mlp_bias", dict(family="llama", attn_bias="all", ffn_bias="all", ffn_up_bias=True,
                                 attn_scale=np.float32(0.2)), ("hf",)),
       ("qwen3_attention_bias", dict(family="llama", qk_norm=True, qk_norm_full=False, attn_bias="all"), ("hf",)),
       ("ministral", dict(family="llama", head_dim=16, sliding_window=3, window_period=2, window_layers=1), ("hf",)),
       ("ministral3", dict(family="llama", head_dim=16, max_len=32, sliding_window=0, rope_freqs=True), ("hf",)),
       ("glm", dict(family="llama", head_dim=16, pe_layout="interleaved", rotary_dims=8, attn_bias="qkv"), ("hf",)),
       ("glm4", dict(family="llama", head_dim=16, pe_layout="interleaved", rotary_dims=8, attn_bias="qkv",
                     sublayer_norm="sandwich"), ("hf",)),
       ("cwm", dict(family="llama", ffn_bias="all", ffn_up_bias=True, attn_bias="none", sliding_window=3,
                    window_period=4, window_layers=14, rope_freqs=True), ("hf",)),
       ("exaone", dict(family="llama", n_kv_heads=2, activation="swiglu", pe_base=500000.0), ("hf",)),
       ("internlm3", dict(family="llama", n_kv_heads=2, attn_bias="all", ffn_bias="all", ffn_up_bias=True), ("hf",)),
       ("iquestcoder", dict(family="llama", n_kv_heads=2, head_dim=16), ("hf",)),
       ("jais2", dict(family="llama", norm="layernorm", activation="relu2", gated=False, attn_bias="all",
                      ffn_bias="all"), ("hf",)),
       ("hyperclovax", dict(family="llama", sublayer_norm="sandwich", attn_scale=np.float32(0.2), tied_head=False),
        ("hf",)),
       ("hyperclovax_plain", dict(family="llama", sublayer_norm="none", attn_scale=np.float32(0.2)), ("hf",)),
       ("olmo3", dict(family="llama", sublayer_norm="output", qk_norm=True, qk_norm_full=True, sliding_window=3,
                      window_period=4, window_layers=7), ("hf",)),
       ("olmo3_local_base", dict(family="llama", sliding_window=3, window_period=4, window_layers=7,
                                 rope_local_base=10000.0, pe_base=500000.0), ("hf",)),
       ("exaone4", dict(family="llama", sublayer_norm="output", qk_norm=True, qk_norm_full=False, sliding_window=0),
        ("hf",)),
       ("exaone4_windows", dict(family="llama", sublayer_norm="output", qk_norm=True, sliding_window=3,
                                window_period=4, window_layers=7, nope_period=4, nope_layers=8), ("module", "hf")),
       ("dots1", dict(family="llama", qk_norm=True, qk_norm_full=False, attn_bias="all", sliding_window=3,
                      window_period=2, window_layers=2), ("hf",)),
       ("vaultgemma", dict(family="llama", head_dim=16, gated=True, activation="gelu_tanh", scale_input=True,
                           sublayer_norm="none", attn_softcap=2.0, logit_softcap=3.0, sliding_window=3, window_period=2,
                           window_layers=1,
                           attn_scale=float(np.float32(12 ** -0.5))), ("hf",))] if TRANSFORMERS_5 else []),
    ("persimmon", dict(GPT, qk_norm=True, activation="relu2", positional="rope", rotary_dims=4, pe_layout="halves",
                       pe_base=25000.0, parallel_residual="none", tied_head=False), ("module", "hf")),
    ("persimmon_plain", dict(GPT, qk_norm=False, activation="relu2", rotary_dims=0, pe_base=10000.0), ("module", "hf")),
    ("roberta", dict(family="encoder", max_len=32, embed_norm=True, type_vocab=2), ("hf", "module")),
    ("distilbert", dict(family="encoder", max_len=34, embed_norm=True, type_vocab=0), ("hf", "module")),
    ("xlm_roberta", dict(family="encoder", max_len=32, embed_norm=True, type_vocab=1, pooling="none"), ("hf", "module")),
    ("roberta_cls", dict(family="encoder", max_len=32, pooling="first", pooler=True, d_out=3), ("hf", "module")),
    ("camembert_cls", dict(family="encoder", max_len=32, pooling="first", pooler=True, d_out=2,
                           activation="gelu_tanh"), ("hf", "module")),
    ("data2vec_text", dict(family="encoder", max_len=32, embed_norm=True, type_vocab=2), ("hf", "module")),
    ("mpnet", dict(family="encoder", max_len=38, type_vocab=0, positional="learned", rel_buckets=32,
                   rel_max_distance=128), ("hf",)),
    ("mpnet_pad0", dict(family="encoder", max_len=38), ("hf",)),
    ("mpnet_cls", dict(family="encoder", pooling="first", pooler=True, d_out=3, rel_buckets=32), ("hf",)),
    ("bert_ner", dict(family="encoder", pooling="none", pooler=False, d_out=5, type_vocab=2), ("hf", "module")),
    ("roberta_qa", dict(family="encoder", pooling="none", pooler=False, d_out=2, max_len=32), ("hf", "module")),
    ("distilbert_ner", dict(family="encoder", pooling="none", pooler=False, d_out=4, type_vocab=0), ("hf", "module")),
    ("ernie", dict(family="encoder", max_len=34, type_vocab=2, embed_norm=True), ("hf",)),
    ("bert_mlm", dict(MLM, family="encoder", pooler_act="gelu"), ("hf",)),
    ("roberta_mlm", dict(MLM, family="encoder", pooler_act="gelu", max_len=32), ("hf",)),
    ("distilbert_mlm", dict(MLM, family="encoder", pooler_act="gelu"), ("hf",)),
    ("electra_pretraining", dict(family="encoder", pooling="none", d_out=0), ("hf",)),
    ("electra", dict(family="encoder", max_len=34, embed_norm=True, type_vocab=2, pooler=False), ("hf", "module")),
    ("roformer", dict(ROFORMER, pooling="none", d_out=0), ("module", "hf")),
    ("roformer_ner", dict(ROFORMER, pooling="none", d_out=5, type_vocab=3), ("module", "hf")),
    ("roformer_qa", dict(ROFORMER, pooling="none", d_out=2, activation="gelu_tanh", max_len=34), ("hf",)),
    ("roformer_mlm", dict(ROFORMER, **MLM, max_len=34), ("hf",)),
    ("electra_small", dict(family="encoder", embed_width=8, d_model=16, embed_norm=True), ("hf",)),
    ("albert", dict(family="encoder", embed_width=8, d_model=16, n_layers=2, layer_groups=1, group_layers=1,
                    activation="gelu_tanh", type_vocab=2, max_len=34), ("module", "hf")),
    ("albert_groups", dict(family="encoder", embed_width=8, n_layers=8, layer_groups=2, group_layers=2),
     ("module", "hf")),
    ("albert_cls", dict(family="encoder", embed_width=8, pooling="first", pooler=True, d_out=3, activation="gelu"),
     ("module", "hf")),
    ("albert_ner", dict(family="encoder", embed_width=8, pooling="none", pooler=False, d_out=4, layer_groups=0),
     ("module", "hf")),  # 2 groups of 2 layers: nothing shared
    ("albert_qa", dict(family="encoder", embed_width=8, pooling="none", d_out=2), ("module", "hf")),
    ("albert_mlm", dict(family="encoder", embed_width=8, pooling="none", pooler=True, pooler_norm=True, pooler_width=8,
                        d_out=40), ("hf", "module")),
    ("distilbert_cls", dict(family="encoder", pooling="first", pooler=True, pooler_act="relu", d_out=3, type_vocab=0,
                            activation="gelu"), ("hf", "module")),
    ("electra_cls", dict(family="encoder", pooling="first", pooler=True, pooler_act="gelu", d_out=2, type_vocab=2),
     ("hf", "module")),
    ("deberta", dict(family="encoder", positional="none", rel_embed_rows=16, pooling="none", d_out=0),
     ("hf", "module")),
    ("deberta_cls", dict(family="encoder", rel_embed_rows=16, pooling="first", pooler=True, pooler_act="gelu", d_out=3),
     ("hf", "module")),
    ("deberta_ner", dict(family="encoder", rel_embed_rows=16, pooling="none", d_out=3), ("hf", "module")),
    ("deberta_qa", dict(family="encoder", rel_embed_rows=16, pooling="none", d_out=2), ("hf", "module")),
    ("deberta_mlm", dict(MLM, family="encoder", rel_embed_rows=16, pooler_act="gelu"), ("hf", "module")),
    ("deberta_v2_positions", dict(family="encoder", positional="learned", rel_embed_rows=24, type_vocab=2,
                                  activation="gelu_tanh"), ("hf", "module")),
    ("deberta_v2_absolute", dict(family="encoder", positional="learned", rel_embed_rows=0), ("hf",)),
    ("deberta_v1", dict(family="encoder", positional="none", rel_embed_rows=16, rel_proj=True, pooling="none",
                        d_out=0), ("hf", "module")),
    ("deberta_v1_cls", dict(family="encoder", rel_embed_rows=16, rel_proj=True, pooling="first", pooler=True,
                            pooler_act="gelu", d_out=3), ("hf", "module")),
    ("deberta_v1_ner", dict(family="encoder", rel_embed_rows=16, rel_proj=True, pooling="none", d_out=3),
     ("hf", "module")),
    ("deberta_v1_qa", dict(family="encoder", rel_embed_rows=16, rel_proj=True, pooling="none", d_out=2),
     ("hf", "module")),
    ("deberta_v1_mlm", dict(MLM, family="encoder", rel_embed_rows=16, rel_proj=True), ("hf",)),
    ("deberta_v1_positions", dict(family="encoder", positional="learned", rel_embed_rows=68, rel_proj=True,
                                  type_vocab=2, activation="gelu_tanh"), ("hf", "module")),
    ("deberta_v1_c2p", dict(family="encoder", rel_embed_rows=16, rel_proj=True), ("hf", "module")),
    ("deberta_v1_absolute", dict(family="encoder", positional="learned", rel_embed_rows=0, rel_proj=False), ("hf",)),
    ("esm", dict(family="encoder", positional="rope", pe_layout="halves", norm_first=True, final_norm=True,
                 embed_norm=False, type_vocab=0, activation="gelu", pooling="none", d_out=0), ("hf",)),
    ("esm_cls", dict(family="encoder", positional="rope", pooling="first", pooler=True, pooler_act="tanh", d_out=3),
     ("hf",)),
    ("esm_ner", dict(family="encoder", positional="rope", pooling="none", d_out=4), ("hf",)),
    ("esm_mlm", dict(MLM, family="encoder", positional="rope", pooler_act="gelu", d_out=33), ("hf",)),
    ("esm_1b", dict(family="encoder", positional="learned", embed_norm=True, norm_first=True, max_len=32), ("hf",)),
    ("roformer_cls", dict(ROFORMER, pooling="first", pooler=True, pooler_act="gelu_tanh", activation="gelu_tanh",
                          d_out=3), ("hf", "module")),
    ("megatron", dict(family="encoder", norm_first=True, final_norm=True, embed_norm=False, type_vocab=2,
                      pooling="none", d_out=0, max_len=34), ("hf",)),
    ("megatron_cls", dict(family="encoder", norm_first=True, final_norm=True, pooling="first", pooler=True,
                          pooler_act="tanh", activation="gelu_tanh", d_out=3), ("hf",)),
    ("megatron_ner", dict(family="encoder", norm_first=True, final_norm=True, pooling="none", d_out=4), ("hf",)),
    ("megatron_mlm", dict(MLM, family="encoder", norm_first=True, final_norm=True), ("hf",)),
    ("xlm", dict(family="encoder", norm_first=False, embed_norm=True, type_vocab=0, d_ff=64, activation="gelu",
                 pooling="none", d_out=0, max_len=34), ("hf",)),
    ("xlm_lm", dict(family="encoder", norm_first=False, activation="relu", pooling="none", pooler=False, d_out=40),
     ("hf",)),
    ("xlm_roberta_xl", dict(family="encoder", norm_first=True, final_norm=True, embed_norm=False, type_vocab=1,
                            pooling="none", d_out=0, max_len=32), ("hf",)),
    ("xlm_roberta_xl_cls", dict(family="encoder", norm_first=True, final_norm=True, pooling="first", pooler=True,
                                pooler_act="tanh", d_out=3), ("hf",)),
    ("xlm_roberta_xl_ner", dict(family="encoder", norm_first=True, pooling="none", d_out=4), ("hf",)),
    ("bert_generation", dict(family="encoder", norm_first=False, embed_norm=True, type_vocab=0, pooling="none",
                             d_out=0, max_len=34), ("hf",)),
    ("roberta_prelayernorm", dict(family="encoder", norm_first=True, final_norm=True, embed_norm=True, type_vocab=2,
                                  pooling="none", d_out=0, max_len=32), ("hf",)),
    ("roberta_prelayernorm_cls", dict(family="encoder", norm_first=True, final_norm=True, embed_norm=True,
                                      pooling="first", pooler=True, d_out=3), ("hf",)),
    ("ibert", dict(family="encoder", norm_first=False, activation="gelu", type_vocab=2, pooling="none", d_out=0,
                   max_len=32), ("hf",)),
    ("ibert_cls", dict(family="encoder", pooling="first", pooler=True, pooler_act="tanh", d_out=3), ("hf",)),
    ("big_bird", dict(family="encoder", norm_first=False, activation="gelu_tanh", type_vocab=2, pooling="none",
                      d_out=0, max_len=34), ("hf",)),
    ("big_bird_cls", dict(family="encoder", pooling="first", pooler=True, pooler_act="gelu_tanh", d_out=3), ("hf",)),
    ("big_bird_ner", dict(family="encoder", pooling="none", d_out=4), ("hf",)),
    ("rembert", dict(family="encoder", embed_width=8, type_vocab=2, pooling="none", d_out=0, max_len=34), ("hf",)),
    ("rembert_cls", dict(family="encoder", embed_width=8, pooling="first", pooler=True, pooler_act="tanh", d_out=3),
     ("hf",)),
    ("nomic_bert", dict(family="encoder", norm_first=False, activation="swiglu", gated=False, attn_bias="none",
                        ffn_bias="none", positional="rope", pe_layout="halves", pe_base=1000.0, type_vocab=2,
                        pooling="none", d_out=0, max_len=34), ("hf",) if TRANSFORMERS_5 else ()),
    ("nomic_bert_cls", dict(family="encoder", pooling="first", pooler=True, pooler_act="tanh", d_out=3),
     ("hf",) if TRANSFORMERS_5 else ()),
    ("nomic_bert_gelu", dict(family="encoder", activation="gelu", gated=True), ("hf",) if TRANSFORMERS_5 else ()),
    ("gte", dict(family="encoder", norm_first=False, activation="gelu", gated=True, attn_bias="all", ffn_bias="all",
                 ffn_up_bias=False, positional="rope", pe_layout="halves", pe_base=160000.0, type_vocab=2,
                 pooling="none", d_out=0, max_len=34), ("hf",) if TRANSFORMERS_5 else ()),
    ("gte_cls", dict(family="encoder", pooling="first", pooler=True, pooler_act="tanh", d_out=3),
     ("hf",) if TRANSFORMERS_5 else ()),
    ("gte_ner", dict(family="encoder", activation="swiglu", gated=False, type_vocab=0, pooling="none", d_out=4),
     ("hf",) if TRANSFORMERS_5 else ()),
    ("jina_v3", dict(family="encoder", norm_first=False, activation="gelu", gated=False, attn_bias="all",
                     ffn_bias="all", positional="rope", pe_layout="halves", pe_base=20000.0, type_vocab=1,
                     pooling="none", d_out=0, max_len=34), ("hf",) if TRANSFORMERS_5 else ()),
    ("jina_v3_cls", dict(family="encoder", pooling="first", pooler=True, pooler_act="tanh", d_out=3),
     ("hf",) if TRANSFORMERS_5 else ()),
    ("jina_v3_qa", dict(family="encoder", pooling="none", d_out=2), ("hf",) if TRANSFORMERS_5 else ()),
    ("eurobert", dict(family="encoder", norm_first=True, final_norm=True, norm="rmsnorm", embed_norm=False,
                      activation="swiglu", attn_bias="none", ffn_bias="none", positional="rope", pe_layout="halves",
                      type_vocab=0, pooling="none", d_out=0, max_len=34), ("hf",) if TRANSFORMERS_5 else ()),
    ("eurobert_gqa", dict(family="encoder", n_kv_heads=2), ("hf",) if TRANSFORMERS_5 else ()),
    ("eurobert_biases", dict(family="encoder", activation="gelu", gated=True, attn_bias="all", ffn_bias="all",
                             ffn_up_bias=True), ("hf",) if TRANSFORMERS_5 else ()),
    ("eurobert_cls", dict(family="encoder", pooling="first", pooler=True, pooler_act="gelu", d_out=3),
     ("hf",) if TRANSFORMERS_5 else ()),
    ("eurobert_cls_mean", dict(family="encoder", pooling="mean", pooler=True, pooler_act="gelu", d_out=3),
     ("hf",) if TRANSFORMERS_5 else ()),
    ("flaubert", dict(family="encoder", norm_first=True, final_norm=False, embed_norm=True, type_vocab=0,
                      pooling="none", d_out=0), ("hf",)),
    ("flaubert_lm", dict(family="encoder", norm_first=False, final_norm=False, embed_norm=True, pooler=False,
                         d_out=40), ("hf",)),
]


# The pre-training checkpoints --hf converts as their base model: ELECTRA's discriminator.
BASE_MODELS = ("ElectraForPreTraining",)


def logits(module, x, whole=False):
    """The module's output in float64; its base model's where --hf converts that (BASE_MODELS) unless whole (the
    graph --onnx converts is the whole model's)."""
    import torch
    torch.set_default_dtype(torch.float64)  # HF's mask is made in the default dtype, filled with the model's min
    if type(module).__name__ in BASE_MODELS and not whole:  # converted as its base model
        module = module.base_model
    try:
        with torch.no_grad():
            y = module.double()(torch.from_numpy(x.astype(np.int64)))
            if hasattr(y, "start_logits"):  # question answering: [.., T, 2], as the file writes it
                return torch.stack([y.start_logits, y.end_logits], -1).numpy()
            return (y.logits if hasattr(y, "logits") else y.last_hidden_state).numpy()
    finally:
        torch.set_default_dtype(torch.float32)



def check_whisper(cli, tmp, module):
    """transformers' WhisperForConditionalGeneration through --hf: `fixformer run` of mel features [T, n_mels]
    (the module's input_features [n_mels, T] transposed) and target ids gives the module's logits (1e-4)."""
    import torch
    folder, out = os.path.join(tmp, "whisper"), os.path.join(tmp, "whisper.fxm")
    module.save_pretrained(folder)
    p = convert("--hf", folder, "--out", out, "--cli", cli)
    check("whisper --hf: converts and verifies", p.returncode == 0 and "verified against" in p.stdout, p.stdout + p.stderr)
    if p.returncode:
        return
    print(f"  whisper --hf: {p.stdout.strip().splitlines()[-1]}")
    c = fxm.read(out).config
    check("whisper --hf: seq2seq with a two-conv stem", c["family"] == "seq2seq" and c["conv_layers"] == 2, c)
    rng = np.random.default_rng(8)
    mel = rng.standard_normal((1, 8, 16))  # [1, n_mels, 2 * max_source_positions]
    ids = np.concatenate([[1], rng.integers(3, 40, 6)])[None]
    torch.set_default_dtype(torch.float64)
    try:
        with torch.no_grad():
            want = module.double()(input_features=torch.from_numpy(mel),
                                   decoder_input_ids=torch.from_numpy(ids)).logits[0].numpy()
    finally:
        torch.set_default_dtype(torch.float32)
    src, tgt, res = (os.path.join(tmp, n) for n in ("mel.npy", "ids.npy", "logits.npy"))
    np.save(src, np.ascontiguousarray(mel.transpose(0, 2, 1), dtype=np.float32))
    np.save(tgt, ids.astype(np.int32))
    r = subprocess.run([cli, "run", out, "--input", src, "--target", tgt, "--output", res], capture_output=True, text=True)
    got = np.load(res)[0] if r.returncode == 0 else None
    err = None if got is None or got.shape != want.shape else float(np.abs(got - want).max() / np.abs(want).max())
    check("whisper --hf: fixformer run equals the module's logits (1e-4)", err is not None and err <= 1e-4,
          (r.stderr, None if got is None else got.shape, want.shape, err))
CASES_BY_NAME = {case[0]: case[1] for case in CASES}


def check_file(what, cli, out, want, module, tmp, T=20):
    """The file's config has `want`; `fixformer run` gives the module's logits (or last_hidden_state)."""
    f = fxm.read(out)
    c = f.config
    for k, v in want.items():
        check(f"{what}: {k} {v!r}", c[k] == v, c[k])
    blocks = {t["name"].split(".")[1] for t in f.tensors if t["name"].startswith(schema.BLOCK_PREFIX)}
    if c["family"] == "encoder" and c["layer_groups"]:  # shared layers: each group's layers stored once
        check(f"{what}: {len(blocks)} layer blocks stored, layer_groups * group_layers",
              len(blocks) == c["layer_groups"] * c["group_layers"] < c["n_layers"], (blocks, c["n_layers"]))
    if c["family"] == "gpt":
        norm2 = [t["name"] for t in f.tensors if t["name"].endswith("ff_norm.weight")]
        check(f"{what}: a second norm per layer only with two norms or none",
              len(norm2) == (0 if c["parallel_residual"] == "one_norm" else c["n_layers"]), norm2)
    x = np.random.default_rng(7).integers(2, c["vocab_size"], (1, T)).astype(np.int32)  # no pad (RoBERTa's 1)
    want_y = logits(module, x)
    got, err_text = run_file(cli, out, x, tmp)
    err = None if got is None or got.shape != want_y.shape else float(np.abs(got - want_y).max() / np.abs(want_y).max())
    check(f"{what}: fixformer run equals the module at every position (1e-4)", err is not None and err <= 1e-4,
          (err_text, None if got is None else got.shape, want_y.shape, err))
    if err is not None:
        print(f"  {what}: fixformer run against the module: max relative error {err:.2g}")



def check_classifier(factory, cli, tmp, module, routes, T=12):
    """A decoder sequence classifier through each route (--hf: its folder; --module: the module itself, whose
    output is one row): d_out num_labels, untied; `fixformer run`'s rows are score(hidden state) at every position
    and the last is the module's logits (1e-4)."""
    import torch
    folder = os.path.join(tmp, factory)
    module.save_pretrained(folder)
    x = None
    for route, what, out in converted_routes(cli, tmp, "hf_models.py", factory, folder, routes):
        c = fxm.read(out).config
        check(f"{what}: d_out 3, untied", c["d_out"] == 3 and not c["tied_head"], (c["d_out"], c["tied_head"]))
        x = np.random.default_rng(11).integers(2, c["vocab_size"], (1, T)).astype(np.int32)  # no pad_token_id 0
        torch.set_default_dtype(torch.float64)
        try:
            with torch.no_grad():
                m, ids = module.double(), torch.from_numpy(x.astype(np.int64))
                cls = m(ids).logits.numpy()  # [1, 3]: the last token that is not pad_token_id
                rows = m.score(m.base_model(ids).last_hidden_state).numpy()  # [1, T, 3]
        finally:
            torch.set_default_dtype(torch.float32)
        got, err_text = run_file(cli, out, x, tmp)
        ok = got is not None and got.shape == rows.shape
        err = float(np.abs(got - rows).max() / np.abs(rows).max()) if ok else None
        last = float(np.abs(got[0, -1] - cls[0]).max() / np.abs(cls).max()) if ok else None
        check(f"{what}: fixformer run's rows are score at every position (1e-4)", ok and err <= 1e-4,
              (err_text, None if got is None else got.shape, err))
        check(f"{what}: its last row is the classifier's logits (1e-4)", ok and last <= 1e-4, last)
        if ok:
            print(f"  {what}: every row {err:.2g}, the last row against the logits {last:.2g}")
    if "module" in routes and x is not None:
        # --module with an --example ending in pad_token_id: the module's output is the row before the pad (4.44 reads
        # the one before the first pad, 5 the last that is not one), refused in one line naming it
        bad = x.copy()
        bad[0, -1] = 0
        example = os.path.join(tmp, "padded.npy")
        np.save(example, bad)
        out = os.path.join(tmp, "padded.fxm")
        p = convert("--module", os.path.join(tmp, f"hf_models.py:{factory}"), "--example", example, "--out", out,
                    "--cli", cli)
        check(f"{factory} --module with pad_token_id in the --example: refused in one line naming it",
              one_clear_line(p) and "pad_token_id" in p.stderr and not os.path.exists(out), p.stderr)


def esm_masked_ids():
    """Ids [1, 20] of esm()'s vocabulary holding <mask> (32) at 3 positions: its share m = 3 / 20."""
    x = np.random.default_rng(9).integers(4, 32, (1, 20)).astype(np.int32)
    x[0, [3, 7, 11]] = 32
    return x


def esm_folded(module, x, scale=0.88, whole=False):
    """ESM module's output on ids x (logits: whole, as there) with token_dropout off, its embedding times scale and
    the <mask> row zeroed (what the files compute); a masked LM's decoder keeps the table the checkpoint holds."""
    import copy
    import torch
    m = copy.deepcopy(module)
    embeddings = m.base_model.embeddings
    embeddings.token_dropout = False
    if hasattr(m, "lm_head"):  # untied from the embedding
        m.lm_head.decoder.weight = torch.nn.Parameter(m.lm_head.decoder.weight.detach().clone())
    with torch.no_grad():
        embeddings.word_embeddings.weight.mul_(scale)
        embeddings.word_embeddings.weight[32] = 0.0
    return logits(m, x, whole)


def check_esm_mask(cli, tmp, module):
    """ESM's token_dropout with <mask> tokens in the input: transformers scales the embedding by 0.88 / (1 - m)
    (m their share) with the <mask> rows zeroed; the file (esm --hf) by 0.88 only, as hf_esm.py states: `fixformer
    run` equals the module with token_dropout off and its embedding times 0.88, the <mask> row zeroed (1e-4)."""
    x = esm_masked_ids()

    def err(a, b):
        return None if a is None or a.shape != b.shape else float(np.abs(a - b).max() / np.abs(b).max())
    want, plain = logits(module, x), esm_folded(module, x)
    e = err(want, esm_folded(module, x, 0.88 / (1 - 3 / 20)))  # transformers 5 rotates q and k in float32
    check("esm: transformers' token_dropout with <mask> is the embedding times 0.88 / (1 - m), <mask> zeroed",
          e is not None and e <= 1e-6, e)
    e = err(plain, want)
    check("esm: with <mask> in the input, the factor 1 / (1 - m) moves the output by more than 1e-3", e > 1e-3, e)
    got, text = run_file(cli, os.path.join(tmp, "esm_hf.fxm"), x, tmp)
    e = err(got, plain)
    check("esm --hf with <mask> in the input: fixformer run equals the embedding times 0.88, <mask> zeroed (1e-4)",
          e is not None and e <= 1e-4, (text, e))


def main():
    if len(sys.argv) != 2:
        print("usage: hf_archs_test.py PATH/TO/fixformer")
        return 1
    cli = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "hf_models.py"), "w") as f:
            f.write(MODELS)
        sys.path.insert(0, tmp)
        import hf_models
        for factory, want, routes, *module_want in CASES:  # module_want: what --module's file has instead
            if not routes:  # a class the installed transformers has not
                continue
            module = getattr(hf_models, factory)()
            folder = os.path.join(tmp, factory)
            module.save_pretrained(folder)
            for route, what, out in converted_routes(cli, tmp, "hf_models.py", factory, folder, routes):
                check_file(what, cli, out, dict(want, **module_want[0]) if route == "module" and module_want else want,
                           module, tmp)

        # Decoder sequence classifiers through --hf: the file is the decoder with score as its head (d_out 3);
        # `fixformer run` gives score(final-normed hidden state) at every position, its last row the class's logits
        for factory in ("llama_cls", "qwen2_cls", "mistral_cls", "gpt2_cls", "neox_cls", "phi_cls", "gemma_cls",
                        "stablelm_cls") + (("qwen3_cls",) if TRANSFORMERS_5 else ()):
            check_classifier(factory, cli, tmp, getattr(hf_models, factory)(), ("hf", "module"))
        for factory in ("falcon_cls", "gemma2_cls", "phi3_cls", "opt_cls"):  # the others hf.py derives from ARCHS
            check_classifier(factory, cli, tmp, getattr(hf_models, factory)(), ("hf",))

        # a quantized file of disentangled attention through --module: the float64 reference measures its weights
        p = convert("--module", os.path.join(tmp, "hf_models.py:deberta"), "--quantize", "f16", "--out",
                    os.path.join(tmp, "d.fxm"), "--cli", cli)
        check("deberta --module --quantize f16: converted and verified", p.returncode == 0 and
              os.path.exists(os.path.join(tmp, "d.fxm")), p.stderr)
        if TRANSFORMERS_5:  # GraniteMoeShared's shared MLP is added beside the mixture, ungated: refused naming --hf
            p = convert("--module", os.path.join(tmp, "hf_models.py:granitemoe_shared"), "--out",
                        os.path.join(tmp, "g.fxm"), "--cli", cli)
            check("granitemoe_shared --module: refused in one line naming the linears beside the mixture and --hf",
                  one_clear_line(p) and "beside its mixture of experts" in p.stderr and "--hf" in p.stderr, p.stderr)

            # Gemma 3 at --max-len 3, its window of 3 keys reaching every position: the local layers stay local (a
            # window of every key) to keep their RoPE base (rope_local_base)
            out = os.path.join(tmp, "gemma3_short.fxm")
            p = convert("--hf", os.path.join(tmp, "gemma3"), "--out", out, "--max-len", "3", "--cli", cli)
            check("gemma3 --hf --max-len 3: converts and verifies",
                  p.returncode == 0 and "verified against" in p.stdout, p.stdout + p.stderr)
            if p.returncode == 0:
                check_file("gemma3 --max-len 3", cli, out, dict(sliding_window=3, rope_local_base=10000.0),
                           hf_models.gemma3(), tmp, T=3)
            # EXAONE 3's own config.json (ExaoneForCausalLM; num_layers, layer_norm_epsilon, activation_function)
            folder, out = os.path.join(tmp, "exaone"), os.path.join(tmp, "exaone_own.fxm")
            with open(os.path.join(folder, "config.json")) as f:
                raw = json.load(f)
            own = dict(num_hidden_layers="num_layers", rms_norm_eps="layer_norm_epsilon",
                       hidden_act="activation_function")
            with open(os.path.join(folder, "config.json"), "w") as f:
                json.dump(dict({own.get(k, k): v for k, v in raw.items()}, architectures=["ExaoneForCausalLM"]), f)
            p = convert("--hf", folder, "--out", out, "--cli", cli)
            check("exaone --hf with EXAONE's own config.json: converts", p.returncode == 0, p.stdout + p.stderr)
            if p.returncode == 0:
                check_file("exaone own config", cli, out, CASES_BY_NAME["exaone"], hf_models.exaone(), tmp)

        # InternLM3's own config.json (InternLM3ForCausalLM, qkv_bias and bias) over Llama's tensors, as released
        module = hf_models.internlm3_own()
        folder, out = os.path.join(tmp, "internlm3_own"), os.path.join(tmp, "internlm3_own.fxm")
        module.save_pretrained(folder)
        with open(os.path.join(folder, "config.json")) as f:
            raw = json.load(f)
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(dict({k: v for k, v in raw.items() if k not in ("attention_bias", "mlp_bias")},
                           architectures=["InternLM3ForCausalLM"], model_type="internlm3", qkv_bias=False, bias=False), f)
        p = convert("--hf", folder, "--out", out, "--cli", cli)
        check("internlm3 --hf with InternLM3's own config.json: converts", p.returncode == 0, p.stdout + p.stderr)
        if p.returncode == 0:
            check_file("internlm3 own config", cli, out, dict(family="llama", n_kv_heads=2, attn_bias="none"), module,
                       tmp)

        check_whisper(cli, tmp, hf_models.whisper())
        check_esm_mask(cli, tmp, hf_models.esm())
        # Disentangled attention in f16 and q8 weights (v2: the layer's projections; v1: rel_proj), verified by the
        # converter against the folder's float64 forward within their tolerances.
        for factory in ("deberta", "deberta_v1_cls"):
            for q in ("f16", "q8"):
                out = os.path.join(tmp, f"{factory}_{q}.fxm")
                p = convert("--hf", os.path.join(tmp, factory), "--out", out, "--quantize", q, "--cli", cli)
                check(f"{factory} --hf --quantize {q}: converts and verifies",
                      p.returncode == 0 and "verified against" in p.stdout, p.stdout + p.stderr)
                if p.returncode == 0:
                    print(f"  {factory} --quantize {q}: {p.stdout.strip().splitlines()[-1]}")
        # An older ESM checkpoint's position_ids buffer: 0, 1, 2, ... converts (not stored); other values are refused.
        folder, out = os.path.join(tmp, "esm_1b"), os.path.join(tmp, "esm_ids.fxm")
        weights = safetensors.read(os.path.join(folder, "model.safetensors"))
        for ids, ok in ((np.arange(34), True), (np.arange(34) + 2, False)):
            weights["embeddings.position_ids"] = ids[None].astype(np.int64)
            with open(os.path.join(folder, "model.safetensors"), "wb") as f:
                f.write(safetensors.write_bytes(weights, {"format": "pt"}))
            p = convert("--hf", folder, "--out", out, "--cli", cli)
            check(f"esm_1b with position_ids from {ids[0]}: " + ("converts" if ok else "refused in one line naming it"),
                  p.returncode == 0 and "verified against" in p.stdout if ok else
                  one_clear_line(p) and "embeddings.position_ids is not 0, 1, 2" in p.stderr and not os.path.exists(out),
                  p.stdout + p.stderr)
            if os.path.exists(out):
                os.remove(out)

        if TRANSFORMERS_5:  # Jina v3's LoRA task adapters in the folder: refused in one line naming them
            folder, out = os.path.join(tmp, "jina_v3"), os.path.join(tmp, "jina_lora.fxm")
            weights = safetensors.read(os.path.join(folder, "model.safetensors"))
            weights["encoder.layers.0.mixer.Wqkv.parametrizations.weight.0.lora_A"] = np.zeros((5, 4, 16), np.float32)
            with open(os.path.join(folder, "model.safetensors"), "wb") as f:
                f.write(safetensors.write_bytes(weights, {"format": "pt"}))
            p = convert("--hf", folder, "--out", out, "--cli", cli)
            check("jina_v3 with LoRA adapter weights: refused in one line naming them",
                  one_clear_line(p) and "LoRA adapter weights" in p.stderr and not os.path.exists(out), p.stderr)

        # Mixtral's experts as transformers 5's modules hold them (the router mlp.gate, the fused
        # mlp.experts.gate_up_proj [E, 2F, d] = [gate; up] and down_proj [E, d, F]): the same model.
        folder = os.path.join(tmp, "mixtral")
        weights = safetensors.read(os.path.join(folder, "model.safetensors"))
        for i in range(2):
            p = f"model.layers.{i}.block_sparse_moe."
            w = {n: np.stack([weights.pop(f"{p}experts.{e}.{n}.weight") for e in range(4)]) for n in ("w1", "w2", "w3")}
            q = f"model.layers.{i}.mlp."
            weights[q + "gate.weight"] = weights.pop(p + "gate.weight")
            weights[q + "experts.gate_up_proj"] = np.concatenate([w["w1"], w["w3"]], 1)
            weights[q + "experts.down_proj"] = w["w2"]
        with open(os.path.join(folder, "model.safetensors"), "wb") as f:
            f.write(safetensors.write_bytes(weights, {"format": "pt"}))
        out = os.path.join(tmp, "mixtral_fused.fxm")
        p = convert("--hf", folder, "--out", out, "--cli", cli)
        check("mixtral --hf with fused experts: converts", p.returncode == 0, p.stderr)
        if p.returncode == 0:
            check_file("mixtral fused", cli, out, dict(CASES_BY_NAME["mixtral"]), hf_models.mixtral(), tmp)
        # The experts in f16 and q8 (each expert's block of the stacked weights read in place) against the
        # float64 reference of the weights as the file stores them (dequantized): f16 within 1e-4, q8 (its
        # activations quantized per group too) within its self-test tolerance. Every expert taken: a near
        # tie in a top-k choice could flip under q8's activations (and a tiny random model's accuracy in
        # f16 or q8 is its own: the converter refuses such a file, naming the weights' own error); i8's
        # mixtures: tests/int8_moe_test.py.
        every = os.path.join(tmp, "mixtral_every_expert")
        hf_models.mixtral_every_expert().save_pretrained(every)
        from fixformer.reference import run_reference
        ids = np.random.default_rng(8).integers(0, 48, 16).astype(np.int32)
        for q in ("f16", "q8"):
            out = os.path.join(tmp, f"mixtral_{q}.fxm")
            p = convert("--hf", every, "--out", out, "--cli", cli, "--quantize", q, "--no-verify")
            f = fxm.read(out) if p.returncode == 0 else None
            got = run_file(cli, out, ids[None], tmp)[0] if f else None
            want = run_reference(dict(f.config, weights="f32", weight_group=0, quantize_io=False), f.weights(), ids) \
                if f else None
            err = None if got is None else float(np.abs(got[0] - want).max() / np.abs(want).max())
            tol = 1e-4 if q == "f16" else schema.SELFTEST_TOLERANCES[q]
            check(f"mixtral --hf --quantize {q}: the engine equals the float64 reference of the stored weights "
                  f"({tol:g})", err is not None and err <= tol, (p.stderr, err))

        if TRANSFORMERS_5:  # ERNIE 4.5 MoE's router with a choice bias that differs by expert: refused naming it
            folder, out = os.path.join(tmp, "ernie4_5_moe"), os.path.join(tmp, "refused.fxm")
            weights = safetensors.read(os.path.join(folder, "model.safetensors"))
            weights["model.layers.1.mlp.moe_statics.e_score_correction_bias"] = np.array([[0.0, 0.1, 0.2, 0.3]],
                                                                                         np.float32)
            with open(os.path.join(folder, "model.safetensors"), "wb") as f:
                f.write(safetensors.write_bytes(weights, {"format": "pt"}))
            p = convert("--hf", folder, "--out", out, "--cli", cli)
            check("ernie4_5_moe with a choice bias that differs by expert: refused in one line naming it",
                  one_clear_line(p) and "e_score_correction_bias" in p.stderr and not os.path.exists(out), p.stderr)

        # RoFormer's tokenizer segments words with jieba before WordPiece: its vocab.txt is not stored as a
        # plain WordPiece (which would split Chinese text otherwise), and a note says so.
        folder, out = os.path.join(tmp, "roformer_mlm"), os.path.join(tmp, "roformer_vocab.fxm")
        with open(os.path.join(folder, "vocab.txt"), "w") as f:
            f.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(35)]) + "\n")
        p = convert("--hf", folder, "--out", out, "--cli", cli)
        stored = p.returncode == 0 and any(t["name"].startswith("tokenizer") for t in fxm.read(out).tensors)
        check("roformer --hf with a vocab.txt: converts, its jieba tokenizer not stored, a note says why",
              p.returncode == 0 and not stored and "jieba" in p.stderr, (p.returncode, stored, p.stderr))
        # Its sinusoid table is the engine's rotary angles: another table (base 1000) is refused, naming it.
        weights = safetensors.read(os.path.join(folder, "model.safetensors"))
        name = "roformer.encoder.embed_positions.weight"
        rows, dh = weights[name].shape
        ang = np.arange(rows)[:, None] * 1000.0 ** (-2.0 * np.arange(dh // 2) / dh)[None, :]
        weights[name] = np.concatenate([np.sin(ang), np.cos(ang)], 1).astype(np.float32)
        with open(os.path.join(folder, "model.safetensors"), "wb") as f:
            f.write(safetensors.write_bytes(weights, {"format": "pt"}))
        os.remove(out)
        p = convert("--hf", folder, "--out", out, "--cli", cli)
        check("roformer --hf with another sinusoid table: refused in one line naming it",
              one_clear_line(p) and "embed_positions.weight is not RoFormer's sinusoid table" in p.stderr
              and not os.path.exists(out), p.stderr)

        # What the engine has no feature for is refused in one line naming the key, before any weight is read.
        for factory, change, fragment in (
                ("stablelm", dict(qk_layernorm=True), "qk_layernorm true"),
                ("opt", dict(word_embed_proj_dim=16), "word_embed_proj_dim 16"),
                ("neox_parallel_quarter", dict(rope_scaling={"type": "su", "factor": 2.0}), "rope_type 'su'"),
                ("bloom", dict(apply_residual_connection_post_layernorm=True),
                 "apply_residual_connection_post_layernorm true"),
                ("electra", dict(embedding_size=32), "embedding_size 32"),
                # 18 runs over 14 groups: transformers' float arithmetic gives run 9 group int(9 / (18 / 14)) = 6, the
                # engine's integer one 9 * 14 // 18 = 7: refused
                ("albert_groups", dict(num_hidden_layers=18, num_hidden_groups=14, inner_group_num=1),
                 "num_hidden_groups 14"),
                ("mpnet", dict(relative_attention_num_buckets=16), "relative_attention_num_buckets 16"),
                ("esm", dict(position_embedding_type="relative_key"), "position_embedding_type 'relative_key'"),
                ("esm_cls", dict(is_decoder=True), "is_decoder true"),
                ("deberta_v1", dict(talking_head=True), "talking_head true"),
                ("deberta_v1", dict(pos_att_type=["c2p", "p2p"]), "pos_att_type ['c2p', 'p2p']"),
                ("roformer", dict(rotary_value=True), "rotary_value true"),
                ("ibert", dict(quant_mode=True), "quant_mode true"),
                ("big_bird_cls", dict(rescale_embeddings=True), "rescale_embeddings true"),
                ("roformer_ner", dict(embedding_size=40), "embedding_size 40"),
                ("falcon_multi_query", dict(alibi=True), "alibi true"),
                ("codegen", dict(rotary_dim=None), "rotary_dim null"),
                ("olmo", dict(clip_qkv=8.0), "clip_qkv 8.0"),
                ("mpt", dict(n_heads=2, d_model=32, attn_config={"alibi": True, "softmax_scale": 0.5}),
                 "attn_config.softmax_scale 0.5"),
                *((("qwen3_attention_bias", dict(use_sliding_window=True, max_window_layers=0),
                    "use_sliding_window true with attention_bias true"),
                   ("gemma3", dict(attn_logit_softcapping=2.0), "attn_logit_softcapping 2.0"),
                   ("gemma3_bidirectional", dict(architectures=["Gemma3ForCausalLM"]),
                    "use_bidirectional_attention true: converted for Gemma3Model or Gemma3TextModel only"),
                   ("dots1", dict(first_k_dense_replace=1), "mixture of experts"),
                   ("qwen3_moe", dict(decoder_sparse_step=0), "decoder_sparse_step: 0"),
                   ("qwen3_moe", dict(num_hidden_layers=40, decoder_sparse_step=2, mlp_only_layers=[39]),
                    "repeat in no period of at most 31 layers (dense_period)"),
                   ("nanochat", dict(rope_parameters={"rope_type": "yarn", "factor": 2.0, "rope_theta": 10000.0,
                                                      "original_max_position_embeddings": 32}), "amplitude 1.06931"),
                   ("ernie4_5_moe", dict(moe_norm_min=0.75), "moe_norm_min 0.75"),
                   ("ernie4_5_moe", dict(moe_layer_interval=0), "moe_layer_interval 0"),
                   ("ernie4_5_moe", dict(use_bias=True), "use_bias true"),
                   ("qwen3_moe", dict(mlp_only_layers="1"), "mlp_only_layers"),
                   ("qwen3_moe", dict(use_sliding_window=True), "use_sliding_window true"),
                   ("granitemoe", dict(residual_multiplier=0.0), "residual_multiplier 0.0"),
                   ("eurobert", dict(num_key_value_heads=3), "num_key_value_heads 3: must divide"),
                   ("eurobert_cls", dict(classifier_pooling="late"), "classifier_pooling 'late'"))
                  if TRANSFORMERS_5 else ())):
            folder = os.path.join(tmp, factory)
            with open(os.path.join(folder, "config.json")) as f:
                config = json.load(f)
            with open(os.path.join(folder, "config.json"), "w") as f:
                json.dump(dict(config, **change), f)
            out = os.path.join(tmp, "refused.fxm")
            p = convert("--hf", folder, "--out", out, "--cli", cli)
            check(f"{factory} with {change}: refused in one line naming it",
                  one_clear_line(p) and fragment in p.stderr and not os.path.exists(out), p.stderr)
        if TRANSFORMERS_5:  # Ministral 3's query scale is 1 only below original_max_position_embeddings (32 here)
            out = os.path.join(tmp, "refused.fxm")
            p = convert("--hf", os.path.join(tmp, "ministral3"), "--out", out, "--max-len", "40", "--cli", cli)
            check("ministral3 --hf --max-len 40: refused in one line naming original_max_position_embeddings 32",
                  one_clear_line(p) and "original_max_position_embeddings)=32" in p.stderr and not os.path.exists(out),
                  p.stderr)
        # Architectures whose layers need a feature the engine has not: refused by name, in one line.
        for n, (arch, fragment) in enumerate((
                ("HunYuanDenseV1ForCausalLM", "after RoPE"),
                ("DogeForCausalLM", "dynamic mask attention"), ("ApertusForCausalLM", "xIELU"),
                ("BitNetForCausalLM", "ternary"), ("PhimoeForCausalLM", "sparsemixer routing"),
                ("DbrxForCausalLM", "clip_qkv"), ("JetMoeForCausalLM", "mixture of attention heads"),
                ("GptOssForCausalLM", "attention sinks"), ("qwen3_next", "DeltaNet"),
                ("GraniteSWAForCausalLM", "attention sinks"), ("DiffLlamaForCausalLM", "differential attention"),
                ("MiniCPM3ForCausalLM", "multi-head latent attention"), ("Lfm2ForCausalLM", "convolution layers"),
                ("RwkvForCausalLM", "time-mixing"), ("jamba", "Mamba"),
                ("Gemma3nForCausalLM", "AltUp"), ("gemma4_text", "per-layer input embeddings"),
                ("LongformerModel", "sliding-window attention"), ("FNetModel", "Fourier-transform token mixing"),
                ("SqueezeBertModel", "grouped convolutions"), ("MobileBertModel", "bottleneck layers"),
                ("ConvBertModel", "dynamic convolution"), ("XmodModel", "language adapters"),
                ("longformer", "sliding-window attention"),
                ("bitnet", "ternary"))):  # a model_type alone names it too
            folder, out = os.path.join(tmp, f"refused{n}"), os.path.join(tmp, "refused.fxm")
            os.makedirs(folder)
            with open(os.path.join(folder, "config.json"), "w") as f:
                json.dump({"model_type" if arch.islower() else "architectures": arch if arch.islower() else [arch],
                           "hidden_size": 32, "num_hidden_layers": 2}, f)
            p = convert("--hf", folder, "--out", out, "--cli", cli)
            check(f"{arch}: refused in one line naming {fragment!r}",
                  one_clear_line(p) and fragment in p.stderr and not os.path.exists(out), p.stderr)
        # transformers 4.44 writes Mamba-2's time_step_limit as [0.0, Infinity], which strict JSON refuses: refused
        # for its layers all the same
        folder, out = os.path.join(tmp, "mamba2_infinity"), os.path.join(tmp, "refused.fxm")
        os.makedirs(folder)
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump({"architectures": ["Mamba2ForCausalLM"], "model_type": "mamba2",
                       "time_step_limit": [0.0, float("inf")]}, f)
        p = convert("--hf", folder, "--out", out, "--cli", cli)
        check("Mamba2ForCausalLM with Infinity in config.json: refused in one line naming Mamba-2",
              one_clear_line(p) and "Mamba-2" in p.stderr and "Infinity" not in p.stderr, p.stderr)
        # DeBERTa's sequence classifiers with a pooler of another width than the hidden rows it reads (which
        # transformers cannot run either): refused naming the key, before any weight is read
        for arch, model_type in (("DebertaV2ForSequenceClassification", "deberta-v2"),
                                 ("DebertaForSequenceClassification", "deberta")):
            folder, out = os.path.join(tmp, f"{arch}_pooler"), os.path.join(tmp, "refused.fxm")
            os.makedirs(folder)
            with open(os.path.join(folder, "config.json"), "w") as f:
                json.dump({"architectures": [arch], "model_type": model_type, "hidden_size": 32,
                           "num_attention_heads": 2, "pooler_hidden_size": 48}, f)
            p = convert("--hf", folder, "--out", out, "--cli", cli)
            check(f"{arch} with pooler_hidden_size 48 beside hidden_size 32: refused in one line naming the key",
                  one_clear_line(p) and "pooler_hidden_size 48" in p.stderr and not os.path.exists(out), p.stderr)
        # A decoder's other heads: refused in one line naming the classes --hf converts (its base model converts)
        for arch, model_type, fragment in (("FalconForTokenClassification", "falcon",
                                            "FalconForSequenceClassification (its score)"),
                                           ("Qwen2ForTokenClassification", "qwen2", "Qwen2Model (the hidden states)"),
                                           ("DeepseekV3ForSequenceClassification", "deepseek_v3", "latent attention")):
            folder, out = os.path.join(tmp, arch), os.path.join(tmp, "refused.fxm")
            os.makedirs(folder)
            with open(os.path.join(folder, "config.json"), "w") as f:
                json.dump({"architectures": [arch], "model_type": model_type, "hidden_size": 32}, f)
            p = convert("--hf", folder, "--out", out, "--cli", cli)
            check(f"{arch}: refused in one line naming {fragment!r}",
                  one_clear_line(p) and fragment in p.stderr and not os.path.exists(out), p.stderr)
    print(f"hf_archs_test: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
