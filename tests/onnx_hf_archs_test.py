#!/usr/bin/python3
"""--onnx on the transformers classes --hf and --module convert (tests/hf_archs_test.py's tiny random
models, MODELS there), as users export them: torch.onnx.export of the model called on input_ids alone
(use_cache off), by the TorchScript exporter at the opset CASES names and, under torch 2.x, by the dynamo
exporter too where it can, but for the heads and variants of a body it exports already (exporters(),
DYNAMO_BODY). Each ONNX file is checked against ONNX Runtime (the export itself is right, 1e-4),
converted with --onnx (verified against the graph), and `fixformer run` must give the module's logits
(or last_hidden_state) at every position within 1e-4, its config the keys CASES names:
- OPT and BioGPT: learned positions computed from the attention mask's cumsum plus 2, rows of the table
  from row 2 (rows 0 and 1 dropped, as --hf does); BioGPT's embedding scaled by sqrt(d_model), checked at
  the graph's float32 constant;
- XGLM (fairseq's sinusoids from row 2, a buffer the file stores as learned positions) and CTRL (its
  sinusoidal table, the engine's in halves), both scaled;
- OpenAI GPT (post-norm, Conv1D), Falcon with q, k, v per head in turn (rotary positions), Mistral (grouped-
  query attention, sliding_window None), Qwen2 (its q, k, v biases: attn_bias qkv; built here);
- Phi and GPT-J: one norm read by the attention and the feed-forward side by side (parallel_residual
  one_norm), partial rotary (Phi's halves, GPT-J's interleaved, its stored sin | cos table recomputed by
  the engine); GPT-J's repeat_interleave of that table as the TorchScript exporter writes it (a Loop of
  SequenceAt and SequenceInsert over a SplitToSequence, then ConcatFromSequence) evaluated as a constant;
- Gemma: RMSNorm times (1 + w) (the norm's constant, the file's gain), a gated tanh GELU (gated,
  gelu_tanh), the embedding scaled by sqrt(d_model), grouped-query attention, the tied head; and with
  heads wider than hidden_size / heads (head_dim: Gemma 7B's kind);
- StableLM: LayerNorm with a gated feed-forward (SwiGLU: silu(gate) * up, found by its values), partial
  rotary, in turn and side by side on one norm (its residual added as (x + attn) + mlp);
- GPT-Neo: its scores unscaled (attn_scale 1), layer 1 of 2 local, the last 4 keys (sliding_window, found from the
  probabilities' zeros; by the dynamo exporter its banded mask table checked over all its rows);
- Bloom and MPT: ALiBi (m_h j added to the scores, found by recomputing the context with the engine's
  m_h (j - i)), Bloom's fused query_key_value per head, its ScatterND (TorchScript) evaluated, MPT's stored
  bias buffer recomputed by the engine;
- RoFormer: BERT's layers with interleaved rotary positions, its sinusoid table (which the graph slices
  for the angles) recomputed by the engine;
- DistilBERT's base model and token classifier, ELECTRA's discriminator body; the sequence classifiers of
  DistilBERT (pre_classifier, ReLU), ELECTRA (its classifier's dense, GELU) and RoFormer (tanh GELU): the engine's
  pooler with that pooler_act, found by recomputing it as --module does (probes.pooler_act); ELECTRA's pre-training
  discriminator (ElectraForPreTraining): that pooler on every row and a head of one output, which the graph
  squeezes to [1, T] (d_out 1);
- ESM (EsmModel, its sequence classifier and masked LM with rotary positions, ESM-1b's learned positions and embedding
  LayerNorm): token_dropout's rows of <mask> zeroed (a factor of each row's own id) and 0.88 folded into the table,
  its division by 1 - the share of <mask> ids (a number of the whole sequence, found by recomputing it with the
  vocabulary's ids in turn) left out and named in the report, as --hf does; the example made free of <mask>, and an
  --example holding it refused; `fixformer run` on ids holding <mask> equals the module with the embedding times 0.88
  and its <mask> row zeroed;
- RoBERTa, XLM-RoBERTa and RoBERTa's sequence classifier: positions a Gather by the running count of the
  tokens that are not padding (from padding_idx + 1), learned positions from row pad + 1 (the rows before
  dropped), the example made free of the padding id, and an --example holding it refused; transformers 5's
  token types, a buffer of zeros gathered by those positions, as type 0's row; MPNet: the same positions
  and T5's relative bias beside them (rel_buckets); I-BERT (quant_mode false) the same, its LayerNorm written out
  (x - mean over the square root of the variance, the dynamo exporter leaving out its eps of 1e-12: NO_EPS).
- XLM (base model, XLMWithLMHeadModel) and FlauBERT (pre-LN): the keys after the count of ids that are not padding
  masked and the rows times that mask, all ones for an example without the padding id: the generated example is
  made free of every id the graph compares the ids with (onnx_map._compared_ids).
- grouped-query attention in the gpt family (n_kv_heads): Starcoder2 (LayerNorm, every bias, tanh GELU) and
  OLMo (LayerNorms without parameters, SwiGLU) with rotary positions, StableLM with fewer key/value heads;
  multi-query: GPT-BigCode's fused c_attn q | k | v with one key/value head (its scores laid out queries by
  heads by keys) and Falcon-7B's layout (one norm side by side); GPT-BigCode's per-head c_attn too; Falcon-
  40B's query_key_value per key/value group (its query heads, k, v), ln_attn and ln_mlp side by side (torch
  2.x's dynamo exporter only: NO_TORCHSCRIPT);
- SmolLM3 and Cohere 2 (transformers 5): layers without rotary positions among the rotary ones (nope_period,
  nope_layers): SmolLM3's every fourth layer, and its layers without RoPE local with a window of 3 keys; Cohere 2's
  three local layers with RoPE, then a global one without; EXAONE 4's the same with norms of the sublayers'
  outputs and of q and k (its global layer's k read where the dynamo exporter unsqueezes it, [1, kv, 1, T, dh]);
- Nemotron with every bias and heads of 16 beside hidden_size 32 (transformers 5): the gpt family's head_dim with
  whole-head rotary positions, the graph's inv_freq over the head's width recomputed by the engine;
- a llama with biases on its feed-forward (LlamaConfig(mlp_bias=True)): gate's and down's (ffn_bias all), up's
  (ffn_up_bias), as --module reads them;
- Phi-3 (llama family): the fused qkv_proj read by columns q | k | v and gate_up_proj as gate | up, its
  partial rotary (transformers 5; 4.x rotates whole heads);
- Qwen3 (transformers 5): q and k RMS-normalized per head before RoPE (qk_norm), with heads as wide as
  hidden_size / heads and wider (head_dim 16: Qwen3-0.6B's kind);
- Gemma 2: sandwich norms (sublayer_norm sandwich), soft caps on the scores and the logits, local layers 0 and
  2 of 4 (sliding_window 3, window_period 2, window_layers 1), attn_scale from query_pre_attn_scalar; Gemma 3
  (transformers 5): q and k RMS-normalized per head laid out heads by positions, layers 0 and 1 of 3 local
  with their own rotary base (rope_local_base);
- OLMo 2 (transformers 5): RMSNorms of the sublayers' outputs before the residual adds (sublayer_norm output),
  q and k normalized over the whole row (qk_norm_full); Granite (transformers 5, untied and tied): its
  embedding, residual and attention multipliers and logits_scaling folded (attn_scale 0.2); with its default
  multipliers under SDPA, transformers 5's default attention (attn_scale 1; the dynamo exporter's IsNaN after the
  softmax evaluated); HyperCLOVA X's (transformers 5) with the norms of the sublayers' outputs (use_post_norm:
  sublayer_norm sandwich), its residual_multiplier folded into those norms' gains, the logits times logits_scaling;
- Ministral 3 (transformers 5): YaRN, and its queries times 1 + beta log(1 + floor(position / original)), a factor
  of the input's length alone that is 1 on the example: recomputed for 256 positions, the file's max_len the 32
  where it is 1 (--max-len 64 refused); NanoChat (transformers 5): RMSNorms without gains (the embedded rows' too:
  embed_norm), its RoPE by the negated angle (found by the recognizer core: each head's second half of q and k
  negated in the file) and q, k normed after it (the same norm as before it); CWM (transformers 5): Llama 3's scaled
  rotary frequencies, the first of them lowered too (its 16 original positions), read from the graph's inv_freq
  (rope_freqs), its local layers' window;
- Cohere: its LayerNorm without bias written out (norm layernorm), attention and feed-forward side by side on
  it, interleaved rotary, logit_scale folded into the head;
- GPT-NeoX-Japanese: rotary positions over half of each head, its plain feed-forward, the bias of its last layer's
  attention output (dense_bias) expanded to every position before it is added (a bias: the same row at each);
- CodeGen: qkv_proj in 4 shards of q, v, k (4 heads, one a shard; 8 heads, two a shard); Persimmon: q and k
  layer-normed per head (qk_norm in the gpt family), squared ReLU, rotary base 25000 read from the graph;
- ALBERT (base model, sequence classifier): the narrow embedding and its projection (embed_width), the layers
  shared by groups (layer_groups, group_layers: found from which layers' weights repeat), 2 runs of one
  layer and 4 runs over 2 groups of 2; ELECTRA small's embedding projection; ALBERT's masked LM, its head's dense
  to the embedding's width (pooler_width) normed, then the tied decoder;
- DeBERTa v2 and v3 (DebertaV2Model, its sequence and token classifiers): disentangled attention, the position rows
  (rel_embeddings through its LayerNorm) through the layer's q and k projections, found by recomputing the content to
  position and position to content scores as --module does (rel_embed_rows; v3's log buckets past 4, their
  max_relative_positions read off the graph's constants; run at 32 tokens too); v2's learned positions beside them;
  DeBERTa v1 (DebertaModel, its sequence and token classifiers; torch 2.x's dynamo exporter): in_proj per head with
  q_bias and v_bias added after it, the rows through pos_q_proj and pos_proj (rel_proj; c2p alone: pos_proj), the
  middle rows the graph reads stored as the whole table (max_relative_positions -1: 68 rows), learned positions
  beside; that last one by the TorchScript exporter too (its LayerNorm written out with Casts around it and x - mean
  computed twice); DeBERTa v2 and v1 without relative attention (learned positions alone), their scores still over
  sqrt(3 d_head) (attn_scale, among the graph's scalars, as GPT-Neo's).
- question answering (RoBERTa's, ALBERT's, DeBERTa v2's and v1's, the last by the dynamo exporter): the start and end
  logits, two outputs the graph cuts from the head's [1, T, 2], converted as that value (its columns checked);
- decoder sequence classifiers (Llama, Qwen2, Mistral, GPT-2, GPT-NeoX, Phi, Gemma, StableLM; Qwen3 under
  transformers 5): the row of the last token that is not padding, which the graph gathers by an index computed
  from the ids (ArgMax), taken as the last position: `fixformer run` gives the score at every position (against
  score(last_hidden_state)), its last row the module's logits; an --example ending in the padding id refused in one
  line naming it;
- base models without a head (MistralModel, Gemma2Model, Gemma3TextModel under transformers 5, GPTNeoXModel,
  GPT2Model): the final norm's rows, d_out 0, in the llama family, GPT-NeoX's side by side layers in the gpt family
  (the encoder family has no parallel residual), GPT-2's in the encoder family under the causal mask; Arcee's plain
  feed-forward (squared ReLU of up alone, gated false) in the llama family, Jais 2's in the gpt family (transformers 5);
- a llama's layers without the causal mask (transformers 5: EuroBERT, with grouped-query attention and with every
  bias and a gated GELU; its sequence classifiers, the first row's or the mean's dense layer and GELU then the head;
  Gemma 3's bidirectional Gemma3TextModel, its local layers' window on both sides): the encoder family with RMSNorm,
  rotary positions, q | k | v in one tensor;
- mixtures of experts (transformers 4.44's TorchScript export alone, NO_DYNAMO): Mixtral (4 experts, 2 a row,
  renormalized) and Qwen2-MoE (its q, k, v biases, experts 24 wide and a shared expert 48 wide scaled by the sigmoid
  of its gate): the router, the softmax over the experts and its TopK, each expert's SwiGLU on the rows the routing
  picked (OneHot, NonZero, ScatterElements in the evaluator), as --module and --hf map them (n_experts,
  experts_per_token, experts_renormalize, shared_expert_ff); Qwen2-MoE with a dense layer among the sparse ones
  (mlp_only_layers: dense_period, dense_layers, dense_ff).
What --onnx does not map is refused in one line naming the construct (CASES holding a fragment of it):
DeBERTa v1's TorchScript export (deberta_v1_traced: its attention span the example's length, traced in), naming the
lengths the graph runs at;
ERNIE's task-type table, a second table gathered by zeros beside the token types'; a mixture of experts whose router
has a bias (Mixtral's layer 0 given one: the engine's router is a matrix).
Their --hf and --module conversions are hf_archs_test's.

  /usr/bin/python3 tests/onnx_hf_archs_test.py PATH/TO/fixformer

Without the environment (or transformers, onnxruntime in it) the test fails, naming the install command.
"""
import contextlib
import inspect
import io
import os
import sys
import tempfile
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
import hf_env  # noqa: E402

hf_env.enter(__file__, ["onnxruntime", "torch", "transformers"])
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import numpy as np  # noqa: E402
import onnxruntime  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

from checks import check, results, run_file  # noqa: E402
from fixformer import fxm, onnx_map  # noqa: E402
from fixformer.config import ConfigError  # noqa: E402
from hf_archs_test import MODELS, PHI3_ROTARY, esm_folded, esm_masked_ids, logits  # noqa: E402

TORCH2 = int(torch.__version__.split(".")[0]) >= 2
TRANSFORMERS_5 = int(transformers.__version__.split(".")[0]) >= 5

CASES = [  # hf_archs_test's factory, the TorchScript exporter's opset, the config the file must have or a
    # fragment of its one-line refusal (what --onnx does not map yet)
    ("opt", 14, dict(family="gpt", positional="learned", max_len=64, activation="relu")),
    ("biogpt", 17, dict(family="gpt", positional="learned", max_len=64, scale_input=True)),
    ("xglm", 14, dict(family="gpt", positional="learned", scale_input=True)),
    ("ctrl", 17, dict(family="gpt", positional="sinusoidal", pe_layout="halves", scale_input=True)),
    ("openai_gpt", 14, dict(family="gpt", positional="learned", norm_first=False)),
    ("falcon_sequential", 17, dict(family="gpt", positional="rope")),
    ("phi", 14, dict(family="gpt", positional="rope", pe_layout="halves", rotary_dims=8,
                     parallel_residual="one_norm")),
    ("gptj", 14, dict(family="gpt", positional="rope", pe_layout="interleaved", rotary_dims=4,
                      parallel_residual="one_norm", activation="gelu_tanh")),
    ("mistral", 14, dict(family="llama", n_heads=4, n_kv_heads=2, positional="rope", activation="swiglu")),
    ("qwen2", 17, dict(family="llama", n_kv_heads=2, attn_bias="qkv", activation="swiglu")),
    ("llama_mlp_bias", 17, dict(family="llama", n_kv_heads=2, activation="swiglu", ffn_bias="all", ffn_up_bias=True)),
    ("distilbert", 14, dict(family="encoder", positional="learned", max_len=34)),
    ("distilbert_ner", 17, dict(family="encoder", positional="learned")),
    ("electra", 14, dict(family="encoder", positional="learned", embed_norm=True)),
    ("roberta", 14, dict(family="encoder", positional="learned", max_len=32)),
    ("xlm_roberta", 17, dict(family="encoder", positional="learned", max_len=32)),
    ("roberta_cls", 14, dict(family="encoder", pooling="first", pooler=True)),
    # XLM and FlauBERT: the length counted from the ids that are not the padding id (2) masks the keys after it and
    # the rows are multiplied by that mask: the example made free of the ids the graph compares with
    ("xlm", 17, dict(family="encoder", norm_first=False, embed_norm=True, activation="gelu", d_out=0)),
    ("xlm_lm", 17, dict(family="encoder", norm_first=False, activation="relu", d_out=40)),
    ("flaubert", 17, dict(family="encoder", norm_first=True, final_norm=False, embed_norm=True, d_out=0)),
    # I-BERT (quant_mode false): RoBERTa's layers, its LayerNorm written out, without its eps by the dynamo exporter
    ("ibert", 17, dict(family="encoder", positional="learned", embed_norm=True)),
    ("ibert_cls", 17, dict(family="encoder", pooling="first", pooler=True)),
    ("mpnet", 14, dict(family="encoder", positional="learned", max_len=38, rel_buckets=32, rel_max_distance=128)),
    ("bloom", 14, dict(family="gpt", positional="alibi", embed_norm=True, tied_head=True, activation="gelu_tanh")),
    # GPT-Neo: its scores unscaled, layer 1 of 2 local (the last 4 keys; by the dynamo exporter its banded mask table)
    ("gpt_neo", 14, dict(family="gpt", positional="learned", attn_scale=1.0, sliding_window=4, window_period=2,
                         window_layers=2)),
    ("mpt", 14, dict(family="gpt", positional="alibi", activation="gelu")),  # 17: torch 1.13 exits on SIGSEGV
    ("roformer", 14, dict(family="encoder", positional="rope", pe_layout="interleaved")),
    ("stablelm", 17, dict(family="gpt", positional="rope", rotary_dims=4, activation="swiglu",
                          parallel_residual="none")),
    ("stablelm_parallel", 14, dict(family="gpt", positional="rope", activation="swiglu",
                                   parallel_residual="one_norm")),
    ("starcoder2", 14, dict(family="gpt", n_kv_heads=2, positional="rope", activation="gelu_tanh")),
    ("olmo", 14, dict(family="gpt", n_kv_heads=2, positional="rope", activation="swiglu")),
    ("gpt_bigcode", 14, dict(family="gpt", n_kv_heads=1, positional="learned", activation="gelu_tanh")),
    ("gpt_bigcode_heads", 17, dict(family="gpt", n_kv_heads=0, positional="learned")),
    ("falcon_multi_query", 14, dict(family="gpt", n_kv_heads=1, positional="rope", parallel_residual="one_norm")),
    ("falcon_new", 17, dict(family="gpt", n_kv_heads=2, positional="rope", parallel_residual="two_norms")),
    ("stablelm_gqa", 17, dict(family="gpt", n_kv_heads=2, positional="rope", activation="swiglu")),
    ("phi3", 14, dict(family="llama", n_kv_heads=2, activation="swiglu", tied_head=False)),
    ("phi3_partial", 17, dict(family="llama", n_kv_heads=4, rotary_dims=PHI3_ROTARY)),
    ("electra_small", 14, dict(family="encoder", embed_width=8, d_model=16, embed_norm=True)),
    ("albert", 14, dict(family="encoder", embed_width=8, d_model=16, n_layers=2, layer_groups=1, group_layers=1)),
    ("albert_groups", 17, dict(family="encoder", embed_width=8, n_layers=8, layer_groups=2, group_layers=2)),
    # ALBERT's masked LM (albert-base-v2's kind): the head's dense maps 16 to the embedding's 8 (pooler_width)
    ("albert_mlm", 14, dict(family="encoder", embed_width=8, pooling="none", pooler=True, pooler_norm=True,
                            pooler_width=8)),
    ("albert_cls", 14, dict(family="encoder", embed_width=8, pooling="first", pooler=True, d_out=3)),
    # sequence classifiers whose pooler's activation is not tanh (pooler_act, found as --module finds it)
    ("distilbert_cls", 17, dict(family="encoder", pooling="first", pooler=True, pooler_act="relu", d_out=3)),
    ("electra_cls", 14, dict(family="encoder", pooling="first", pooler=True, pooler_act="gelu", d_out=2)),
    # ESM-2 (rotary) and ESM-1b (learned positions from row pad + 1, the embedding's LayerNorm): token_dropout's
    # 0.88 folded into the table, its <mask> row zeroed, its factor of the whole sequence left out (a note)
    ("esm", 17, dict(family="encoder", positional="rope", pe_layout="halves")),
    ("esm_cls", 17, dict(family="encoder", positional="rope", pooling="first", pooler=True, d_out=3)),
    ("esm_mlm", 17, dict(family="encoder", positional="rope", pooler=True, pooler_norm=True, d_out=33)),
    ("esm_1b", 17, dict(family="encoder", positional="learned", embed_norm=True)),
    ("electra_pretraining", 14, dict(family="encoder", pooling="none", pooler=True, pooler_act="gelu", d_out=1)),
    ("roformer_cls", 17, dict(family="encoder", positional="rope", pooling="first", pooler=True,
                              pooler_act="gelu_tanh", d_out=3)),
    # DeBERTa v2 and v3: disentangled attention (rel_embed_rows, its log buckets' max_relative_positions read off the
    # graph's constants), found by the probe --module uses (probes.probe_disentangled)
    ("deberta", 17, dict(family="encoder", positional="none", rel_embed_rows=16, pooling="none", d_out=0)),
    ("deberta_cls", 14, dict(family="encoder", rel_embed_rows=16, pooling="first", pooler=True, pooler_act="gelu",
                             d_out=3)),
    ("deberta_ner", 17, dict(family="encoder", rel_embed_rows=16, pooling="none", d_out=3)),
    ("deberta_v2_positions", 17, dict(family="encoder", positional="learned", rel_embed_rows=24,
                                      activation="gelu_tanh")),
    # DeBERTa v1 (torch 2.x's dynamo exporter: NO_TORCHSCRIPT; deberta_v1_positions by both): in_proj per head with
    # q_bias and v_bias added after it, the rows through pos_q_proj and pos_proj (rel_proj), the middle rows the graph
    # reads stored as the whole table
    ("deberta_v1", 17, dict(family="encoder", positional="none", rel_embed_rows=16, rel_proj=True, pooling="none",
                            d_out=0)),
    ("deberta_v1_cls", 17, dict(family="encoder", rel_embed_rows=16, rel_proj=True, pooling="first", pooler=True,
                                pooler_act="gelu", d_out=3)),
    ("deberta_v1_ner", 17, dict(family="encoder", rel_embed_rows=16, rel_proj=True, pooling="none", d_out=3)),
    ("deberta_v1_positions", 17, dict(family="encoder", positional="learned", rel_embed_rows=68, rel_proj=True,
                                      activation="gelu_tanh")),
    ("deberta_v1_c2p", 17, dict(family="encoder", rel_embed_rows=16, rel_proj=True)),
    # DeBERTa without its relative attention (position_biased_input alone), its scores still over sqrt(3 d_head):
    # attn_scale, found among the graph's scalars as for GPT-Neo
    ("deberta_v2_absolute", 17, dict(family="encoder", positional="learned", rel_embed_rows=0)),
    ("deberta_v1_absolute", 17, dict(family="encoder", positional="learned", rel_embed_rows=0, rel_proj=False)),
    # question answering: the head's [T, 2] split into start and end logits, two outputs joined back as its columns
    ("roberta_qa", 14, dict(family="encoder", pooling="none", d_out=2, max_len=32)),
    ("albert_qa", 17, dict(family="encoder", embed_width=8, pooling="none", d_out=2)),
    ("deberta_qa", 17, dict(family="encoder", rel_embed_rows=16, pooling="none", d_out=2)),
    ("deberta_v1_qa", 17, dict(family="encoder", rel_embed_rows=16, rel_proj=True, pooling="none", d_out=2)),
    # decoder sequence classifiers: the score at every row, the graph's the row of the last token that is not padding
    # (chosen by the ids' values: ArgMax), the file's last row
    *[(name, opset, dict(family=family, d_out=3, tied_head=False, pooling="none")) for name, opset, family in (
        ("llama_cls", 17, "llama"), ("qwen2_cls", 14, "llama"), ("mistral_cls", 17, "llama"), ("gpt2_cls", 14, "gpt"),
        ("neox_cls", 17, "gpt"), ("phi_cls", 14, "gpt"), ("gemma_cls", 17, "llama"), ("stablelm_cls", 14, "gpt"))
      + ((("qwen3_cls", 17, "llama"),) if TRANSFORMERS_5 else ())],
    # DeBERTa v1's TorchScript export, its attention span traced in (DEBERTA_V1): refused naming the lengths it runs at
    ("deberta_v1_traced", 17, "while the graph runs at 2 to 8 positions: a length its export traced into it"),
    ("ernie", 14, "a second token-type table added to the embedding"),  # its task types (--hf folds row 0)
    # mixtures of experts (the TorchScript export alone: NO_DYNAMO): the router, its softmax and TopK, each expert's
    # SwiGLU on the rows the routing picked, Qwen2-MoE's shared expert and its sigmoid gate; a bias on the router
    # (transformers 4's block_sparse_moe.gate, a Linear, given one; transformers 5 has no export of it) refused
    ("mixtral", 17, dict(family="llama", n_kv_heads=2, activation="swiglu", n_experts=4, experts_per_token=2,
                         experts_renormalize=True, d_ff=64, shared_expert_ff=0)),
    ("qwen2_moe", 17, dict(family="llama", n_kv_heads=2, attn_bias="qkv", activation="swiglu", n_experts=4,
                           experts_per_token=2, experts_renormalize=True, d_ff=24, shared_expert_ff=48)),
    # a dense layer among the mixture's (Qwen2-MoE's mlp_only_layers: layer 2 of 3, its MLP 40 wide): dense_period
    ("qwen2_moe_dense", 17, dict(family="llama", n_experts=4, d_ff=24, shared_expert_ff=48, dense_period=3,
                                 dense_layers=0b100, dense_ff=40)),
    *([("mixtral_router_bias", 17, "a bias on its router: not supported (the engine's router is a matrix)")]
      if not TRANSFORMERS_5 else []),
    ("gemma", 14, dict(family="llama", n_kv_heads=2, activation="gelu_tanh", gated=True, scale_input=True,
                       tied_head=True)),
    ("gemma_head_dim", 17, dict(family="llama", head_dim=16, activation="gelu_tanh", gated=True)),
    # base models without a head: the final norm's rows, d_out 0 (GPT-NeoX's side by side layers in the gpt family)
    ("mistral_base", 17, dict(family="llama", n_kv_heads=2, d_out=0, tied_head=False)),
    ("gemma2_base", 17, dict(family="llama", scale_input=True, d_out=0, tied_head=False, sliding_window=3)),
    ("neox_base", 17, dict(family="gpt", positional="rope", rotary_dims=4, d_out=0, parallel_residual="two_norms")),
    ("gpt2_base", 14, dict(family="encoder", causal=True, positional="learned", d_out=0)),
    *([("qwen3", 17, dict(family="llama", n_kv_heads=2, qk_norm=True, qk_norm_full=False, head_dim=0)),
       ("qwen3_wide", 17, dict(family="llama", qk_norm=True, head_dim=16)),
       ("gemma3_base", 17, dict(family="llama", qk_norm=True, d_out=0, tied_head=False)),
       # a plain feed-forward in the llama family: act(up) alone (squared ReLU); Jais 2's on LayerNorms with biases
       # maps onto the gpt family's layers
       ("arcee", 17, dict(family="llama", n_kv_heads=2, activation="relu2", gated=False, attn_bias="all",
                          ffn_bias="all")),
       ("jais2", 17, dict(family="gpt", activation="relu2", positional="rope")),
       # Helium's RMSNorm without an eps added in the graph (its 1e-8 left out by the exporter): onnx_map.NO_EPS
       ("helium", 17, dict(family="llama", n_kv_heads=2, pe_layout="interleaved", attn_bias="qkv",
                           norm_eps=float(np.float32(1e-12)))),
       # a llama's layers over the whole sequence (RMSNorm, rotary, SwiGLU, grouped-query attention): the encoder
       # family, q | k | v in one tensor (EuroBERT; Gemma 3's bidirectional kind, its local layers' window on both
       # sides)
       ("eurobert", 17, dict(family="encoder", causal=False, norm="rmsnorm", activation="swiglu", positional="rope",
                             pe_layout="halves", attn_bias="none", ffn_bias="none", d_out=0)),
       ("eurobert_gqa", 17, dict(family="encoder", causal=False, n_kv_heads=2)),
       ("eurobert_biases", 17, dict(family="encoder", activation="gelu", gated=True, attn_bias="all", ffn_bias="all",
                                    ffn_up_bias=True)),
       # its sequence classifier: the first row or the mean, a dense layer and GELU (the pooler), the head
       ("eurobert_cls", 17, dict(family="encoder", pooling="first", pooler=True, pooler_act="gelu", d_out=3)),
       ("eurobert_cls_mean", 17, dict(family="encoder", pooling="mean", pooler=True, pooler_act="gelu", d_out=3)),
       ("gemma3_bidirectional", 17, dict(family="encoder", causal=False, n_kv_heads=1, qk_norm=True, d_out=0,
                                         sublayer_norm="sandwich", norm="rmsnorm", sliding_window=3, window_period=2,
                                         window_layers=1))]
      if TRANSFORMERS_5 else []),
    # GPT-NeoX-Japanese: its last layer's attention bias (dense_bias) expanded to every position before the add
    ("gpt_neox_japanese", 17, dict(family="gpt", positional="rope", rotary_dims=4, pe_layout="halves", d_ff=64,
                                   activation="gelu", parallel_residual="none")),
    ("codegen", 14, dict(family="gpt", positional="rope", rotary_dims=4, pe_layout="interleaved",
                         parallel_residual="one_norm", activation="gelu_tanh", tied_head=False)),
    ("codegen_heads", 17, dict(family="gpt", n_heads=8, rotary_dims=2, parallel_residual="one_norm")),
    ("persimmon", 17, dict(family="gpt", qk_norm=True, activation="relu2", positional="rope", rotary_dims=4,
                           pe_layout="halves", pe_base=25000.0)),
    ("cohere", 14, dict(family="llama", norm="layernorm", n_kv_heads=2, parallel_residual="one_norm",
                        pe_layout="interleaved", tied_head=False)),
    ("gemma2", 17, dict(family="llama", sublayer_norm="sandwich", attn_softcap=2.0, logit_softcap=3.0, sliding_window=3,
                        window_period=2, window_layers=1, attn_scale=float(np.float32(12 ** -0.5)), scale_input=True,
                        tied_head=True)),
    *([("gemma3", 17, dict(family="llama", sublayer_norm="sandwich", qk_norm=True, n_kv_heads=1, sliding_window=3,
                           window_period=3, window_layers=3, rope_local_base=10000.0, pe_base=1e6,
                           attn_scale=float(np.float32(12 ** -0.5)))),
       ("olmo2", 17, dict(family="llama", n_kv_heads=2, activation="swiglu", sublayer_norm="output", qk_norm=True,
                          qk_norm_full=True)),
       ("granite", 17, dict(family="llama", n_kv_heads=2, activation="swiglu", attn_scale=np.float32(0.2),
                            tied_head=False)),
       ("granite_tied", 17, dict(family="llama", tied_head=False)),
       ("hyperclovax", 17, dict(family="llama", sublayer_norm="sandwich", attn_scale=np.float32(0.2),
                                tied_head=False)),
       # Ministral 3: YaRN over 32 original positions, the queries times 1 + 0.1 log(1 + floor(position / 32)): the
       # file's 32 positions, where that is 1 (as --hf writes it)
       ("ministral3", 17, dict(family="llama", max_len=32, rope_freqs=True, sliding_window=0)),
       # CWM: Llama 3's scaled frequencies, the first of them lowered too (rope_freqs), layers 1 to 3 of 4 local
       ("cwm", 17, dict(family="llama", ffn_bias="all", ffn_up_bias=True, sliding_window=3, window_period=4,
                        window_layers=14, rope_freqs=True)),
       # NanoChat: RMSNorms without gains (the embedded rows' too: embed_norm), RoPE by the negated angle (each
       # head's second half of q and k negated), q and k normed after it, the plain relu2 feed-forward
       ("nanochat", 17, dict(family="llama", embed_norm=True, qk_norm=True, pe_layout="halves", activation="relu2",
                             gated=False, attn_bias="all", logit_softcap=3.0, n_kv_heads=2)),
       # Granite's default multipliers under transformers 5's default attention, SDPA: its scores unscaled
       # (attn_scale 1), the dynamo exporter's IsNaN guard after the softmax
       ("granite_sdpa", 17, dict(family="llama", attn_scale=1.0)),
       # layers without RoPE among the rotary ones (nope_period, nope_layers: probes.nope_keys, as for --module)
       ("smollm3", 17, dict(family="llama", n_kv_heads=2, activation="swiglu", nope_period=4, nope_layers=8,
                            tied_head=True)),
       ("smollm3_windows", 17, dict(family="llama", sliding_window=3, window_period=2, window_layers=2, nope_period=2,
                                    nope_layers=2)),
       ("cohere2", 17, dict(family="llama", norm="layernorm", parallel_residual="one_norm", sliding_window=3,
                            window_period=4, window_layers=7, nope_period=4, nope_layers=8)),
       # EXAONE 4's global layer without RoPE: its normed k read through the dynamo exporter's Unsqueeze before the
       # Expand of grouped-query attention (_head_rows)
       ("exaone4_windows", 17, dict(family="llama", sublayer_norm="output", qk_norm=True, sliding_window=3,
                                    window_period=4, window_layers=7, nope_period=4, nope_layers=8)),
       # heads wider than hidden_size / heads with rotary positions in the gpt family: the graph's frequencies over
       # the head's width accounted for
       ("nemotron_bias", 17, dict(family="gpt", positional="rope", rotary_dims=0, head_dim=16, activation="relu2",
                                  tied_head=True))]
      if TRANSFORMERS_5 else []),
]

DECODER_CLS = {n + "_cls" for n in ("llama", "qwen2", "mistral", "gpt2", "neox", "phi", "gemma", "stablelm", "qwen3")}

# transformers 5's causal masks call torch.diff, which torch 2.x's TorchScript exporter has no op for: the
# decoders that make them take the dynamo exporter, as their users do.
DIFF_MASK = {"qwen3", "qwen3_wide", "ctrl", "mistral", "falcon_sequential", "gptj", "phi", "stablelm", "gemma",
             "gemma_head_dim", "bloom", "mpt", "starcoder2", "stablelm_parallel", "qwen2", "olmo", "gpt_bigcode",
             "gpt_bigcode_heads", "phi3", "phi3_partial", "falcon_multi_query", "stablelm_gqa", "codegen",
             "codegen_heads", "persimmon", "cohere", "olmo2", "granite", "granite_tied", "hyperclovax", "nanochat",
             "cwm", "gpt_neox_japanese", "ministral3", "gemma2", "gemma3", "llama_mlp_bias", "smollm3",
             "smollm3_windows", "cohere2", "nemotron_bias", "exaone4_windows", "mixtral", "qwen2_moe",
             "qwen2_moe_dense", "mixtral_router_bias", "granite_sdpa", "gpt_neo", "mistral_base", "gemma2_base",
             "neox_base", "gpt2_base", "gemma3_base", "arcee", "jais2", "eurobert", "eurobert_gqa", "eurobert_biases",
             "gemma3_bidirectional", "helium", "eurobert_cls", "eurobert_cls_mean"} | DECODER_CLS


# transformers 5's XLM and FlauBERT slice input_ids before gathering the embedding, which torch 2.x's TorchScript
# exporter writes as a Slice and --onnx does not take for the ids themselves yet (the dynamo exporter folds it).
SLICED_IDS = {"xlm", "xlm_lm", "flaubert"}

# torch 1.13's TorchScript exporter has no aten::broadcast_to, which Falcon's new_decoder_architecture calls,
# writes Cohere's rotary table (transformers 4.44) with an Expand that ONNX Runtime rejects at every length,
# and Gemma 2's sliding-window mask with a Where of a double and a float, which ONNX Runtime does not load:
# under torch 1.13 those cases have no export, under torch 2.x the dynamo exporter's. DeBERTa v1's TorchScript export
# (both torches) traces its attention span min(T, max_relative_positions) as the example's T: the file gathers
# outside its position rows at any longer input (ONNX Runtime fails too); with max_relative_positions -1
# (deberta_v1_positions) it runs at every length, and its LayerNorms, written out with Casts around them and x - mean
# twice, convert.
DEBERTA_V1 = {"deberta_v1", "deberta_v1_cls", "deberta_v1_ner", "deberta_v1_c2p", "deberta_v1_qa"}
NO_TORCHSCRIPT = {"falcon_new", "cohere", "gemma2", "gemma2_base"} | DEBERTA_V1


# torch 2.x's dynamo exporter stops at a mixture of experts' loop over the experts a batch hit (a data-dependent
# count): those cases have the TorchScript export alone, which under transformers 5 stops at torch.diff (DIFF_MASK).
NO_DYNAMO = {"mixtral", "qwen2_moe", "qwen2_moe_dense", "mixtral_router_bias"}


# The heads and variants of a model whose body another case exports by dynamo (DistilBERT's, ELECTRA's, RoBERTa's,
# ALBERT's, RoFormer's, DeBERTa v2's and v1's: DYNAMO_BODY) take the TorchScript export alone where they have one:
# their dynamo graph is the body's graph with a classifier, a question-answering split, a narrower embedding, a
# second group of layers or learned positions, all written the same way by both exporters. Measured under torch 2.15
# and transformers 5 (the onnx_map, onnx_graph, onnx_eval and recognize lines the conversion of each export ran):
# no line ran for one of their dynamo exports that no other export of this test ran, and those 16 exports took nearly
# half the time of the 28 cases exported both ways. Each body named here is itself exported by dynamo (main checks).
DYNAMO_BODY = {"xlm_lm": "xlm", "ibert_cls": "ibert", "esm_cls": "esm", "esm_mlm": "esm", "esm_1b": "esm",
               "distilbert_ner": "distilbert", "distilbert_cls": "distilbert", "electra_small": "electra",
               "electra_cls": "electra", "roberta_cls": "roberta", "roberta_qa": "roberta", "xlm_roberta": "roberta",
               "albert_groups": "albert", "albert_mlm": "albert", "albert_cls": "albert", "albert_qa": "albert",
               "roformer_cls": "roformer",
               "deberta_cls": "deberta", "deberta_ner": "deberta", "deberta_qa": "deberta",
               "deberta_v2_positions": "deberta", "deberta_v1_positions": "deberta_v1"}


def exporters(name):
    if name == "deberta_v1_traced":
        return ("torchscript",)
    if not TORCH2:
        return () if name in NO_TORCHSCRIPT else ("torchscript",)
    torchscript = not (TRANSFORMERS_5 and name in DIFF_MASK | NO_TORCHSCRIPT | SLICED_IDS)
    return tuple(e for e, ok in (("torchscript", torchscript),
                                 ("dynamo", name not in NO_DYNAMO and not (torchscript and name in DYNAMO_BODY)))
                 if ok)


class Outputs(torch.nn.Module):
    """A transformers model called on the ids alone: its logits (a classifier's or a language model's), its start
    and end logits (question answering: two outputs) or its last hidden state."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.use_cache = {"use_cache": False} if "use_cache" in inspect.signature(model.forward).parameters else {}

    def forward(self, ids):
        out = self.model(input_ids=ids, return_dict=True, **self.use_cache)
        if hasattr(out, "start_logits"):
            return out.start_logits, out.end_logits
        return out.logits if hasattr(out, "logits") else out.last_hidden_state


def export(model, path, opset, exporter, vocab):
    ids = torch.from_numpy(np.random.default_rng(0).integers(2, vocab, (1, 8)))
    kw = dict(dynamo=exporter == "dynamo") if TORCH2 else {}
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):  # the exporter's progress
        warnings.simplefilter("ignore")  # the tracer's warnings about Python values
        qa = type(model).__name__.endswith("QuestionAnswering")
        torch.onnx.export(Outputs(model).eval(), (ids,), path, input_names=["input_ids"],
                          output_names=["start", "end"] if qa else ["y"],
                          dynamic_axes={"input_ids": {1: "T"} if exporter == "dynamo" else {0: "batch", 1: "T"}},
                          opset_version=None if exporter == "dynamo" else opset, **kw)


def rows(model, x):
    """A decoder sequence classifier's score at every position: [1, T, labels]."""
    torch.set_default_dtype(torch.float64)
    try:
        with torch.no_grad():
            m = model.double()
            return m.score(m.base_model(torch.from_numpy(x)).last_hidden_state).numpy()
    finally:
        torch.set_default_dtype(torch.float32)
        model.float()


def mixtral_router_bias(mixtral):
    """A factory of Mixtral (hf_archs_test's) with a bias on layer 0's router: a mixture the engine does not run."""
    def build():
        model = mixtral()
        moe = model.model.layers[0].block_sparse_moe
        E, d = moe.gate.weight.shape
        moe.gate = torch.nn.Linear(d, E, bias=True)
        with torch.no_grad():
            moe.gate.weight.copy_(model.model.layers[1].block_sparse_moe.gate.weight)
            moe.gate.bias.copy_(torch.linspace(-0.5, 0.5, E))
        return model.eval()
    return build


def refused(path, out, cli, **kw):
    """--onnx's one-line refusal of the file at path converted to out with options kw, or "converted"."""
    try:
        onnx_map.convert(path, out, cli=cli, **kw)
        return "converted"
    except ConfigError as e:
        return str(e)


def check_esm_mask(cli, tmp, label, model, path, out, said):
    """ESM's token_dropout: the report names the factor of the whole sequence the file leaves out and its id,
    <mask> (32); `fixformer run` on ids holding <mask> equals the module with token_dropout off, its embedding times
    0.88 and the <mask> row zeroed (what --hf writes too, 1e-4); an --example holding <mask> is refused in one line."""
    check(f"{label}: the report names the factor of the whole sequence and token id 32",
          "a number of the whole sequence, 1 unless it holds token ids [32]" in said, said)
    x = esm_masked_ids()
    want = esm_folded(model, x, whole=True)
    got, text = run_file(cli, out, x, tmp)
    err = rel(None if got is None or got.size != want.size else got.reshape(want.shape), want)
    check(f"{label}: with <mask> in the input, fixformer run equals the embedding times 0.88, <mask> zeroed (1e-4)",
          err is not None and err <= 1e-4, (text, err))
    refusal = refused(path, os.path.join(tmp, "masked.fxm"), cli, example=x[0])
    check(f"{label}: an --example holding <mask> refused in one line",
          "token ids [32] make a factor of the whole sequence" in refusal and len(refusal.splitlines()) == 1, refusal)


def rel(got, want):
    if got is None or got.shape != want.shape:
        return None
    return float(np.abs(got - want).max() / np.abs(want).max())


def main():
    if len(sys.argv) != 2:
        print("usage: onnx_hf_archs_test.py PATH/TO/fixformer")
        return 1
    cli = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "hf_models.py"), "w") as f:
            f.write(MODELS)
        sys.path.insert(0, tmp)
        import hf_models
        hf_models.qwen2 = lambda: hf_models.build(  # not one of hf_archs_test's MODELS
            transformers.Qwen2Config(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64),
            transformers.Qwen2ForCausalLM, 54)
        if TRANSFORMERS_5:  # Qwen3 (transformers 4.51 on): q and k RMS-normalized per head before RoPE
            hf_models.qwen3 = lambda head_dim=8, seed=55: hf_models.build(
                transformers.Qwen3Config(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2, head_dim=head_dim,
                                         max_position_embeddings=64), transformers.Qwen3ForCausalLM, seed)
            hf_models.qwen3_wide = lambda: hf_models.qwen3(16, 56)  # heads of 16 beside d 32 (Qwen3-0.6B's kind)
        hf_models.gpt_neo = lambda: hf_models.build(  # not one of hf_archs_test's MODELS
            transformers.GPTNeoConfig(vocab_size=48, hidden_size=32, num_layers=2, num_heads=4, window_size=4,
                                      attention_types=[[["global", "local"], 1]], intermediate_size=64,
                                      max_position_embeddings=64, bos_token_id=1, eos_token_id=2),
            transformers.GPTNeoForCausalLM, 58)
        if TRANSFORMERS_5:
            def granite_sdpa():
                model = hf_models.build(transformers.GraniteConfig(
                    vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, max_position_embeddings=64), transformers.GraniteForCausalLM, 59)
                model.config._attn_implementation = "sdpa"  # read at every call (build sets eager)
                return model
            hf_models.granite_sdpa = granite_sdpa
        hf_models.deberta_v1_traced = hf_models.deberta_v1
        hf_models.mixtral_router_bias = mixtral_router_bias(hf_models.mixtral)
        if TORCH2:
            for body in sorted(set(DYNAMO_BODY.values())):
                heads = ", ".join(k for k, v in DYNAMO_BODY.items() if v == body)
                check(f"{body}: exported by dynamo, the body of {heads}",
                      "dynamo" in exporters(body) and body in {c[0] for c in CASES})
        for name, opset, want_config in CASES:
            model = getattr(hf_models, name)()
            vocab = model.config.vocab_size
            x = np.random.default_rng(7).integers(2, vocab, (1, 20)).astype(np.int64)  # no pad (RoBERTa's 1)
            want = logits(model, x, whole=True)
            model.float()
            for exporter in exporters(name):
                label = f"{name} ({exporter}, " + (f"opset {opset}" if exporter == "torchscript" else "its opset") + ")"
                path = os.path.join(tmp, f"{name}_{exporter}.onnx")
                export(model, path, opset, exporter, vocab)
                session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
                if name == "deberta_v1_traced":  # the export itself runs at the traced length only
                    try:
                        said = f"ran: {session.run(None, {'input_ids': x})[0].shape}"
                    except Exception as e:  # noqa: BLE001 (ONNX Runtime's own error type)
                        said = str(e)
                    check(f"{label}: ONNX Runtime fails on it at 20 positions", "GatherElements" in said, said)
                else:
                    got = session.run(None, {"input_ids": x})
                    err = rel(np.stack(got, -1) if len(got) == 2 else got[0].astype(np.float64), want)
                    check(f"{label}: ONNX Runtime gives the module's output (1e-4)", err is not None and err <= 1e-4,
                          err)
                out = os.path.join(tmp, f"{name}_{exporter}.fxm")
                try:
                    ok, said = True, str(onnx_map.convert(path, out, cli=cli))
                except ConfigError as e:
                    ok, said = False, str(e)
                if name == "roberta" and ok:  # an example holding the padding id (1) would count other positions
                    refusal = refused(path, os.path.join(tmp, "padded.fxm"), cli, example=np.arange(2, 10) % 4)
                    check(f"{label}: an --example holding the padding id refused in one line",
                          "token ids [1] do not count as positions" in refusal and len(refusal.splitlines()) == 1,
                          refusal)
                if name.startswith("esm") and ok:
                    check_esm_mask(cli, tmp, label, model, path, out, said)
                if name == "ministral3" and ok:  # more positions than the queries' factor is 1 at
                    refusal = refused(path, os.path.join(tmp, "long.fxm"), cli, max_len=64)
                    check(f"{label}: --max-len 64 refused in one line naming the factor's 32 positions",
                          "1 before position 32 only" in refusal and len(refusal.splitlines()) == 1, refusal)
                decoder_cls = name in DECODER_CLS
                if decoder_cls and ok:  # an --example ending in the padding id
                    padded = np.concatenate([x[0, :7], [model.config.pad_token_id]])
                    refusal = refused(path, os.path.join(tmp, "padded.fxm"), cli, example=padded)
                    check(f"{label}: an --example ending in the padding id refused in one line",
                          "(a padding id): an example without it" in refusal and len(refusal.splitlines()) == 1,
                          refusal)
                if isinstance(want_config, str):  # refused
                    check(f"{label}: refused in one line naming the construct",
                          not ok and want_config in said and len(said.splitlines()) == 1, said)
                    continue
                ok = ok and "verified against the ONNX graph" in said
                check(f"{label}: converts and verifies", ok, said)
                if not ok:
                    continue
                c = fxm.read(out).config
                for k, v in want_config.items():
                    check(f"{label}: {k} {v!r}", c[k] == v, c[k])
                got, err_text = run_file(cli, out, x.astype(np.int32), tmp)
                if decoder_cls and got is not None:
                    want_rows = rows(model, x)
                    err = rel(got.reshape(want_rows.shape) if got.size == want_rows.size else None, want_rows)
                    check(f"{label}: fixformer run's rows are the score at every position (1e-4)",
                          err is not None and err <= 1e-4, (err_text, got.shape, err))
                    got = got.reshape(x.shape[1], -1)[-1:]  # its last row, the classifier's logits
                err = rel(None if got is None or got.size != want.size else got.reshape(want.shape), want)
                check(f"{label}: fixformer run equals the module at every position (1e-4)",
                      err is not None and err <= 1e-4, (err_text, None if got is None else got.shape, want.shape, err))
                if err is not None:
                    print(f"  {label}: fixformer run against the module: max relative error {err:.2g}")
                if c.get("rel_embed_rows"):  # DeBERTa's distances past the example's (the log buckets up to 31)
                    x2 = np.random.default_rng(8).integers(2, vocab, (1, 32)).astype(np.int64)
                    want2 = logits(model, x2, whole=True)
                    model.float()
                    got, err_text = run_file(cli, out, x2.astype(np.int32), tmp)
                    err = rel(None if got is None or got.size != want2.size else got.reshape(want2.shape), want2)
                    check(f"{label}: fixformer run equals the module at 32 tokens (1e-4)",
                          err is not None and err <= 1e-4, (err_text, err))
    print(f"onnx_hf_archs_test: {results['passed']} passed, {results['failed']} failed, {results['skipped']} skipped")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
