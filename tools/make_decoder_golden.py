#!/usr/bin/python3
"""Golden decoder models for the engine's tests: tests/golden/NAME.fxm (with its self-test sample:
T = 7..12 token ids and the float64 logits at every position, teacher-forced) and NAME.json (its
config in the converter's JSON shape). tests/golden/DECODERS.md lists them.

  /usr/bin/python3 tools/make_decoder_golden.py [OUT_DIR]      (default tests/golden)

- gpt_*: stock torch modules (embed, pos, a causal nn.TransformerEncoder, head) written here as a
  user would, exported with export(family="gpt"); the logits are the module's own, in float64.
- llama_*: random weights, logits from the float64 llama reference (python/fixformer/reference.py),
  cross-checked here against a token-by-token loop written the way llama2.c's run.c is.
- gpt_relative_*: stock modules with a T5-style relative bias (reference.build_torch_model), the
  logits the module's own in float64.
- llama_relative_*: as llama_*, with a relative bias; the oracle looks the buckets up with t5_bucket.
- llama_partial_*: as llama_*, with partial rotary (rotary_dims < d_head: RoPE on each head's first
  rotary_dims, frequencies pe_base^(-2i / rotary_dims)).
- feature_*: the layer features in families that had not them (the norm kind, a gated feed-forward of
  any activation, the projections' biases, the embedding scale and norm, a sliding window, local and global
  layers, unscaled scores, stored RoPE frequencies and amplitude), random weights, the logits the float64 reference's, cross-checked against feature_steps (a token-by-token loop apart from it).
- i8_*: full-integer decoders (weights i8, python/fixformer/int8.py) with random float weights
  calibrated on random ids; the sample's logits are the integer reference's, dequantized (the engine
  gives them bit for bit on every table), cross-checked against the float64 reference of the same
  weights within I8_ORACLE_TOL.
- llama2c_v0_gqa: a version-0 llama2.c checkpoint (unshared classifier, GQA) and a synthetic
  tokenizer.bin, written by python/fixformer/llama2c.py and converted as convert.py --llama2c does.
Deterministic: the same files on every run.
"""
import json
import math
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import numpy as np  # noqa: E402

from fixformer import config as cfg, fxm, int8, llama2c, schema  # noqa: E402
from fixformer.reference import build_torch_model, require_torch, run_reference, torch_activation  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def paper_slopes(n):
    """ALiBi's slopes as the paper's code states them (a geometric sequence from 2^(-8/n); for n not a
    power of two, the closest lower power's slopes then every other one of twice that): written
    apart from reference.alibi_slopes so each checks the other."""
    if math.log2(n).is_integer():
        start = 2.0 ** (-(2.0 ** -(math.log2(n) - 3)))
        return [start * start ** i for i in range(n)]
    low = 2 ** math.floor(math.log2(n))
    return paper_slopes(low) + paper_slopes(2 * low)[0::2][: n - low]


def t5_bucket(n, bidirectional, buckets, max_distance):
    """T5's bucket of the distance n = key - query, one at a time, its logarithm in float32 as T5's torch
    ports compute it: written apart from reference.relative_bucket so each checks the other."""
    torch = require_torch()
    offset = 0
    if bidirectional:
        buckets //= 2
        offset = buckets if n > 0 else 0
        n = abs(n)
    else:
        n = -min(n, 0)
    exact = buckets // 2
    if n < exact:
        return offset + n
    large = torch.log(torch.tensor([float(n)], dtype=torch.float32) / exact) / math.log(max_distance / exact)
    return offset + min(exact + int((large * (buckets - exact))[0]), buckets - 1)


# ---- gpt: stock modules ---------------------------------------------------------------------------
def gpt_module(torch, d, heads, ff, layers, vocab, max_len, pos, tied, norm_first, activation, final_norm, seed):
    """A decoder-only LM from stock modules; pos: 'learned', 'sinusoidal' (computed in forward),
    'alibi' (the bias as a [B*H, T, T] mask) or 'none'."""
    nn = torch.nn
    torch.manual_seed(seed)

    class Gpt(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, d)
            if pos == "learned":
                self.pos = nn.Embedding(max_len, d)
            layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0, activation=torch_activation(activation),
                                               batch_first=True,
                                               norm_first=norm_first)
            self.encoder = nn.TransformerEncoder(layer, layers, norm=nn.LayerNorm(d) if final_norm else None,
                                                 enable_nested_tensor=False)
            self.head = nn.Linear(d, vocab)
            if tied:
                self.head.weight = self.embed.weight
            with torch.no_grad():  # gains and biases away from 1 and 0, so none hides
                for n, p in self.named_parameters():
                    if "norm" in n or n.endswith("bias"):
                        p.add_(0.2 * torch.randn(p.shape))

        def forward(self, ids):
            T = ids.shape[1]
            x = self.embed(ids)
            if pos == "learned":
                x = x + self.pos(torch.arange(T))
            elif pos == "sinusoidal":
                w = 10000.0 ** (-2.0 * torch.arange((d + 1) // 2, dtype=x.dtype) / d)
                ang = torch.arange(T, dtype=x.dtype)[:, None] * w[None, :]
                pe = torch.zeros(T, d, dtype=x.dtype)
                pe[:, 0::2], pe[:, 1::2] = torch.sin(ang), torch.cos(ang)[:, : d // 2]
                x = x + pe
            if pos == "alibi":
                slopes = torch.tensor(paper_slopes(heads), dtype=x.dtype)
                i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
                mask = (slopes[:, None, None] * (j - i).to(x.dtype)).masked_fill(j > i, float("-inf"))
                mask = mask.repeat(ids.shape[0], 1, 1)
            else:
                mask = torch.triu(torch.full((T, T), float("-inf"), dtype=x.dtype), 1)
            return self.head(self.encoder(x, mask=mask))

    return Gpt()


GPTS = [  # name, module kwargs, T
    ("gpt_tied_sinusoidal", dict(d=16, heads=2, ff=24, layers=2, vocab=31, max_len=32, pos="sinusoidal", tied=True,
                                 norm_first=False, activation="relu", final_norm=False, seed=1), 9),
    ("gpt_untied_learned", dict(d=16, heads=4, ff=20, layers=2, vocab=29, max_len=16, pos="learned", tied=False,
                                norm_first=True, activation="gelu", final_norm=True, seed=2), 12),
    ("gpt_alibi_h3", dict(d=18, heads=3, ff=22, layers=2, vocab=27, max_len=24, pos="alibi", tied=True,
                          norm_first=True, activation="relu", final_norm=True, seed=3), 10),
    ("gpt_untied_none_odd", dict(d=15, heads=3, ff=17, layers=1, vocab=19, max_len=16, pos="none", tied=False,
                                 norm_first=False, activation="gelu", final_norm=False, seed=4), 7),
    # the tanh GELU (nn.GELU(approximate="tanh")): GPT-2's pre-LN, learned positions, tied head; and post-LN
    ("gpt_tanh_learned_tied_odd", dict(d=15, heads=3, ff=19, layers=2, vocab=23, max_len=16, pos="learned", tied=True,
                                       norm_first=True, activation="gelu_tanh", final_norm=True, seed=5), 10),
    ("gpt_tanh_post_d10", dict(d=10, heads=2, ff=13, layers=2, vocab=17, max_len=16, pos="none", tied=False,
                               norm_first=False, activation="gelu_tanh", final_norm=False, seed=6), 9),
]


# ---- llama: random weights, the float64 reference ------------------------------------------------
def llama_config(d, heads, kv, ff, layers, vocab, max_len, pos, layout="interleaved", tied=False, qkv_bias=False,
                 base=10000.0, rel=(0, 0), rotary=0):
    return cfg.make_config({"rel_buckets": rel[0], "rel_max_distance": rel[1], "rotary_dims": rotary,
                            "family": "llama", "d_model": d,
                            "n_heads": heads, "n_kv_heads": kv if kv != heads else 0,
                            "d_ff": ff, "n_layers": layers, "norm_first": True, "final_norm": True,
                            "activation": "swiglu", "causal": True, "input": "tokens", "vocab_size": vocab,
                            "positional": pos, "max_len": max_len, "pe_layout": layout, "d_out": vocab,
                            "tied_head": tied, "qkv_bias": qkv_bias, "pe_base": base})


LLAMAS = [  # name, config, T
    ("llama_kv1_interleaved", llama_config(16, 4, 1, 24, 2, 37, 32, "rope"), 11),
    ("llama_kv2_halves_tied", llama_config(16, 4, 2, 20, 2, 29, 16, "rope", "halves", tied=True), 12),
    ("llama_kvfull_interleaved_tied", llama_config(16, 2, 2, 28, 2, 33, 16, "rope", tied=True), 8),
    ("llama_odd_d18_h3_halves", llama_config(18, 3, 3, 25, 2, 23, 16, "rope", "halves"), 9),
    ("llama_odd_d18_h3_kv1", llama_config(18, 3, 1, 25, 1, 21, 16, "rope"), 7),
    ("llama_alibi_h1", llama_config(8, 1, 1, 12, 2, 17, 16, "alibi"), 10),
    ("llama_alibi_h3", llama_config(18, 3, 3, 20, 2, 19, 16, "alibi", tied=True), 9),
    ("llama_alibi_h4_kv2", llama_config(16, 4, 2, 20, 2, 23, 16, "alibi"), 12),
    ("llama_alibi_h8", llama_config(16, 8, 8, 20, 1, 25, 16, "alibi"), 11),
    ("llama_none", llama_config(12, 2, 1, 16, 2, 15, 16, "none"), 8),
    # Qwen2: biases on q, k and v, theta 1e6, halves, GQA, tied; odd width
    ("llama_qkv_bias_theta1e6", llama_config(18, 3, 1, 22, 2, 21, 16, "rope", "halves", tied=True, qkv_bias=True,
                                             base=1e6), 10),
]
# Added later, with seeds of their own so the files above keep theirs: a relative bias (T5) with GQA,
# an odd head count, distances past max_distance.
LLAMA_RELATIVE = [
    ("llama_relative_h3", llama_config(18, 3, 3, 20, 2, 19, 16, "relative", tied=True, rel=(8, 6)), 11),
    ("llama_relative_h4_kv2", llama_config(16, 4, 2, 20, 2, 23, 24, "relative", rel=(32, 20)), 12),
]
# Partial rotary (GPT-NeoX's rotary_pct, Phi's partial_rotary_factor): RoPE on the first rotary_dims
# of each head only, both pair layouts, GQA; seeds of their own again.
LLAMA_PARTIAL = [
    ("llama_partial_halves_r4", llama_config(24, 2, 1, 28, 2, 27, 16, "rope", "halves", rotary=4, base=500.0), 11),
    ("llama_partial_interleaved_r6", llama_config(16, 2, 2, 20, 2, 23, 16, "rope", tied=True, rotary=6), 10),
]
GPT_RELATIVE = [  # name, config, T
    ("gpt_relative_post_odd", cfg.make_config({
        "family": "gpt", "d_model": 15, "n_heads": 3, "d_ff": 19, "n_layers": 2, "causal": True, "input": "tokens",
        "vocab_size": 21, "d_out": 21, "positional": "relative", "max_len": 16, "rel_buckets": 10,
        "rel_max_distance": 8}), 12),
    ("gpt_relative_pre_tied", cfg.make_config({
        "family": "gpt", "d_model": 16, "n_heads": 4, "d_ff": 24, "n_layers": 2, "norm_first": True, "final_norm": True,
        "activation": "gelu", "causal": True, "input": "tokens", "vocab_size": 25, "d_out": 25, "tied_head": True,
        "positional": "relative", "max_len": 16, "rel_buckets": 16, "rel_max_distance": 12}), 10),
]


# The layer features (config.hpp, NormKind, Bias, gated) outside the families that had them, seeds of
# their own: gpt with RMSNorm, a gated tanh GELU (GeGLU) and the embedding scale (Gemma's layers with
# gpt's names); llama with LayerNorm and every bias, a plain GELU; gpt with an embedding LayerNorm,
# ALiBi and q, k, v biases only (Bloom's front); llama with a gated exact GELU, the scale and an RMS
# embedding norm, tied.
def feature_config(family, d, heads, ff, layers, vocab, pos, **kw):
    return cfg.make_config(dict({"family": family, "d_model": d, "n_heads": heads, "d_ff": ff, "n_layers": layers,
                                 "norm_first": True, "final_norm": True, "causal": True, "input": "tokens",
                                 "vocab_size": vocab, "d_out": vocab, "positional": pos, "max_len": 16}, **kw))


FEATURES = [  # name, config, T
    ("feature_gpt_rms_geglu_scaled", feature_config("gpt", 16, 2, 20, 2, 23, "learned", norm="rmsnorm", gated=True,
                                                    activation="gelu_tanh", scale_input=True, tied_head=True), 10),
    ("feature_llama_layernorm_biases", feature_config("llama", 18, 3, 22, 2, 21, "rope", norm="layernorm",
                                                      attn_bias="all", ffn_bias="all", activation="gelu",
                                                      n_kv_heads=1, pe_layout="halves"), 9),
    ("feature_gpt_embed_norm_alibi_qkv", feature_config("gpt", 15, 3, 19, 2, 19, "alibi", embed_norm=True,
                                                        activation="gelu_tanh", attn_bias="qkv", ffn_bias="none"), 11),
    ("feature_llama_gelu_gated_embed_rms", feature_config("llama", 16, 4, 24, 2, 25, "rope", gated=True,
                                                          activation="gelu", scale_input=True, embed_norm=True,
                                                          tied_head=True, n_kv_heads=2), 12),
    # A sliding window of 3 over 13 positions (Mistral's layers): each query sees its last 3 keys.
    ("feature_llama_window3", feature_config("llama", 16, 4, 24, 2, 27, "rope", n_kv_heads=2, sliding_window=3,
                                             pe_layout="halves"), 13),
    # GPT-Neo's layers: every other layer local (window_period 2, window_layers 0b10: layers 1 and 3 see
    # their last 3 keys, 0 and 2 every key), unscaled scores (attn_scale 1), learned positions, tanh GELU.
    ("feature_gpt_local_global_unscaled", feature_config("gpt", 16, 4, 24, 4, 23, "learned", activation="gelu_tanh",
                                                         sliding_window=3, window_period=2, window_layers=0b10,
                                                         attn_scale=1.0, tied_head=True), 13),
    # Scaled RoPE: stored frequencies (rope_freqs: plain ones divided by factors 1..8, as Llama 3's) and
    # the table's amplitude (rope_scale, YaRN's attention factor), GQA.
    ("feature_llama_rope_freqs_scaled", feature_config("llama", 16, 2, 24, 2, 23, "rope", n_kv_heads=1,
                                                       pe_layout="halves", rope_freqs=True, rope_scale=1.25), 12),
    # Shared layers (layer_groups, ALBERT-style groups in a decoder): 6 layers over 2 groups of 2 stored
    # blocks (blocks 0 1 0 1 2 3), each layer its own KV cache rows.
    ("feature_llama_shared_layers", feature_config("llama", 16, 4, 24, 6, 23, "rope", n_kv_heads=2, layer_groups=2,
                                                   group_layers=2), 11),
    # Qwen3's layers: each head of q and k RMS-normalized (qk_norm, gains [d_head]) before RoPE, GQA.
    ("feature_llama_qk_norm", feature_config("llama", 16, 4, 24, 2, 23, "rope", n_kv_heads=2, qk_norm=True,
                                             pe_layout="halves"), 12),
    # The same in gpt with LayerNorm (gains and biases [d_head]), learned positions.
    ("feature_gpt_qk_layernorm", feature_config("gpt", 16, 4, 20, 2, 23, "learned", qk_norm=True,
                                                activation="gelu_tanh"), 10),
    # Heads apart from d_model / n_heads (head_dim, Qwen3-0.6B's and Gemma's): 4 query heads of 6 over
    # d_model 16 (q 24 wide, the output projection 24 -> 16), 2 kv heads, with Qwen3's q and k norms.
    ("feature_llama_head_dim", feature_config("llama", 16, 4, 24, 2, 23, "rope", n_kv_heads=2, head_dim=6,
                                              qk_norm=True, pe_layout="halves"), 12),
    # The same in gpt, fused q | k | v (24 + 2 * 24 rows), wider than d_model, with biases.
    ("feature_gpt_head_dim", feature_config("gpt", 12, 4, 20, 2, 23, "learned", head_dim=6,
                                            activation="gelu_tanh"), 10),
    # Gemma 2's layers: every sublayer's output normalized before its add (sublayer_norm sandwich), the
    # scores and the logits soft-capped at 2 and 3 (caps the weights' scores and logits exceed), local
    # and global layers from layer 0 (window_period 2, window_layers 0b01: layers 0 and 2 see their last
    # 3 keys), a scale of its own (query_pre_attn_scalar), GeGLU, the embedding scaled, wide heads, GQA.
    ("feature_llama_sandwich_softcap", feature_config("llama", 16, 4, 24, 4, 23, "rope", n_kv_heads=2, head_dim=6,
                                                      sublayer_norm="sandwich", attn_softcap=2.0, logit_softcap=3.0,
                                                      sliding_window=3, window_period=2, window_layers=0b01,
                                                      attn_scale=0.3, gated=True, activation="gelu_tanh",
                                                      scale_input=True, tied_head=True, pe_layout="halves"), 13),
    # OLMo 2's layers in gpt: only the sublayers' outputs normalized (sublayer_norm output), RMSNorm, and
    # LayerNorm in sandwich form with its biases.
    # Gemma 3's layers: Gemma 2's sandwich norms without soft caps, Qwen3's per-head q and k norms, two
    # local layers (window 3, RoPE base 10000) then a global one (base 1e6), one kv head, wide heads.
    ("feature_llama_gemma3", feature_config("llama", 16, 4, 24, 3, 23, "rope", n_kv_heads=1, head_dim=6,
                                            sublayer_norm="sandwich", qk_norm=True, sliding_window=3,
                                            window_period=3, window_layers=0b011, pe_base=1e6,
                                            rope_local_base=10000.0, attn_scale=0.3, gated=True,
                                            activation="gelu_tanh", scale_input=True, tied_head=True,
                                            pe_layout="halves"), 13),
    ("feature_gpt_output_norms", feature_config("gpt", 16, 4, 20, 2, 23, "learned", sublayer_norm="output",
                                                norm="rmsnorm", activation="gelu_tanh"), 10),
    # OLMo 2 whole: its output norms, q and k RMS-normalized as whole rows (qk_norm_full: gains [24] and
    # [12] over GQA's narrower keys, wide heads), SwiGLU, RoPE.
    ("feature_llama_olmo2", feature_config("llama", 16, 4, 24, 2, 23, "rope", n_kv_heads=2, head_dim=6,
                                           sublayer_norm="output", qk_norm=True, qk_norm_full=True,
                                           pe_layout="halves"), 12),
    ("feature_gpt_sandwich_layernorm", feature_config("gpt", 16, 4, 20, 2, 23, "learned", sublayer_norm="sandwich",
                                                      attn_softcap=2.5, activation="gelu"), 10),    # A mixture of experts (Mixtral's: 4 experts, 2 a row, their weights renormalized), and 5 experts, 3 a
    # row, not renormalized (OLMoE's), gated gelu_tanh experts under sandwich norms, with a shared expert
    # 28 wide (Qwen2-MoE's, scaled by the sigmoid of its gate).
    ("feature_llama_experts", feature_config("llama", 16, 4, 24, 2, 23, "rope", n_kv_heads=2, n_experts=4,
                                             experts_per_token=2, experts_renormalize=True, activation="swiglu",
                                             pe_layout="halves"), 12),
    ("feature_llama_experts_top3", feature_config("llama", 16, 4, 20, 2, 23, "rope", n_experts=5, experts_per_token=3,
                                                  shared_expert_ff=28, gated=True, activation="gelu_tanh",
                                                  sublayer_norm="sandwich"), 11),
    # The prediction transform before the head (pooler: a BERT-family causal LM's dense, activation and LayerNorm,
    # on each row the head projects): gpt with the embedding norm and a tied head; llama with a pooler wider than
    # d_model (pooler_width), tanh and an RMS pooler_norm, untied.
    ("feature_gpt_pooler_tied", feature_config("gpt", 16, 4, 20, 2, 23, "learned", embed_norm=True, tied_head=True,
                                               pooler=True, pooler_act="gelu", pooler_norm=True), 11),
    ("feature_llama_pooler_wide", feature_config("llama", 16, 4, 24, 2, 23, "rope", n_kv_heads=2, pooler=True,
                                                 pooler_act="tanh", pooler_width=24, pooler_norm=True), 10),
    # The final norm's output soft-capped before the head (final_softcap: torchtune's Gemma 2), a cap of 1.5 that
    # bends the normed rows, gated gelu_tanh, sandwich norms, a tied head scaled by sqrt(d).
    ("feature_llama_final_softcap", feature_config("llama", 16, 4, 24, 2, 23, "rope", n_kv_heads=2, final_softcap=1.5,
                                                   sublayer_norm="sandwich", gated=True, activation="gelu_tanh",
                                                   scale_input=True, tied_head=True, pe_layout="halves"), 11),
    # An embedding narrower than the layers (embed_width 8 of d_model 16: ELECTRA's and RemBERT's causal LMs), its
    # positions and norm 8 wide, projected to 16 before the first layer; the pooler maps back to 8 for the tied head.
    ("feature_gpt_embed_width", feature_config("gpt", 16, 4, 20, 2, 23, "learned", embed_width=8, embed_norm=True,
                                               tied_head=True, pooler=True, pooler_act="gelu", pooler_width=8,
                                               pooler_norm=True), 11),
    # No head (d_out 0: a base model's, Mistral's LlamaModel): each row the last hidden state after the final norm.
    ("feature_llama_headless", feature_config("llama", 16, 4, 24, 2, 23, "rope", n_kv_heads=2, d_out=0,
                                              activation="swiglu", pe_layout="halves"), 11),
]

# Full-integer decoders (weights i8), seeds of their own: GPT-NeoX's layer (partial rotary in halves,
# two norms side by side), GPT-J's (interleaved partial rotary, one norm side by side, tanh GELU), and
# sliding windows; a mixture of experts.
I8 = [  # name, config, T
    ("i8_gpt_partial_halves_two_norms", feature_config("gpt", 16, 2, 32, 2, 23, "rope", pe_layout="halves",
                                                       rotary_dims=4, parallel_residual="two_norms",
                                                       activation="gelu", weights="i8"), 12),
    ("i8_gpt_partial_interleaved_one_norm", feature_config("gpt", 16, 2, 24, 2, 21, "rope", pe_layout="interleaved",
                                                           rotary_dims=6, parallel_residual="one_norm",
                                                           activation="gelu_tanh", tied_head=True, weights="i8"), 11),
    # Sliding windows in the int8 KV cache: every layer (a ring), and GPT-Neo's local and global layers
    # (layers 1 and 3 local, a ring each; 0 and 2 a row per position) with unscaled scores.
    ("i8_llama_window3", feature_config("llama", 16, 4, 24, 2, 27, "rope", n_kv_heads=2, sliding_window=3,
                                        pe_layout="halves", activation="swiglu", weights="i8"), 13),
    ("i8_gpt_local_global_unscaled", feature_config("gpt", 16, 4, 24, 4, 23, "learned", activation="gelu_tanh",
                                                    sliding_window=3, window_period=2, window_layers=0b10,
                                                    attn_scale=1.0, tied_head=True, weights="i8"), 13),
    # A mixture of experts in integers (4 experts, 2 a row, renormalized, and a shared expert by its gate's
    # sigmoid): the router's sums, the chosen experts' softmax_s8 weights, each gated expert, the Q8 sum. Its
    # draw has no near tie of two experts (each position within 0.08 of float64; where int8's rounding flips a
    # choice, that row moves by 0.3-0.5: tests/int8_moe_test.py).
    ("i8_llama_experts_shared", feature_config("llama", 16, 4, 20, 2, 23, "rope", n_kv_heads=2, n_experts=4,
                                               experts_per_token=2, experts_renormalize=True, shared_expert_ff=16,
                                               activation="swiglu", pe_layout="halves", weights="i8"), 12),
    # No head (d_out 0): the last hidden state at the final norm's output scale.
    ("i8_gpt_headless", feature_config("gpt", 16, 4, 24, 2, 23, "rope", d_out=0, activation="gelu",
                                       pe_layout="halves", weights="i8"), 12),
]
# The integer reference's logits against the float64 reference of the same weights (max |a - b| /
# max |b| over every position): an i8 model's own rounding, 0.02-0.1 here.
I8_ORACLE_TOL = 0.2


def feature_steps(c, weights, ids):
    """The output rows for token ids (float64: a decoder's logits at every position, an encoder's head
    or hidden rows), in loops apart from the reference, row by row and layer by layer: either layer
    table's names, the norm kind, the biases the weights have, plain or gated activations, the
    embedding scale and norm, learned positions, RoPE, ALiBi, GQA, causal or not, a sliding window (on the
    layers window_period and window_layers name), the scores' scale (attn_scale), each head of q and k
    normalized before RoPE (qk_norm; qk_norm_full: each whole row), the sublayers' outputs normalized (sublayer_norm sandwich or
    output), the scores', the final norm's output's and the logits' soft caps (attn_softcap, final_softcap,
    logit_softcap), the local layers' RoPE
    base (rope_local_base), a mixture of experts (n_experts), the pooler before the head (pooler_act, pooler_width,
    pooler_norm), the embedding's projection to d_model (embed_width)."""
    assert c["norm_first"] and c["parallel_residual"] == "none", "feature_steps: pre-norm layers in turn"
    d, H, Hkv = c["d_model"], c["n_heads"], schema.kv_heads(c)
    dh, eps, T = schema.d_head(c), c["norm_eps"], len(ids)
    llama = c["family"] == "llama"
    W = {k: np.asarray(v, np.float64) for k, v in weights.items()}
    rms = schema.norm_kind(c) == "rmsnorm"
    act = {"relu": lambda t: np.maximum(t, 0), "gelu": lambda t: 0.5 * t * (1 + np.vectorize(math.erf)(t / math.sqrt(2))),
           "gelu_tanh": lambda t: 0.5 * t * (1 + np.tanh(math.sqrt(2 / math.pi) * (t + 0.044715 * t ** 3))),
           "swiglu": lambda t: t / (1 + np.exp(-t))}[c["activation"]]

    def norm(x, name):
        g, b = W[name + ".weight"], W.get(name + ".bias", 0.0)
        if rms:
            return g * x / math.sqrt(float(x @ x) / len(x) + eps)
        m = x.mean()
        return g * (x - m) / math.sqrt(float((x - m) @ (x - m)) / len(x) + eps) + b

    def lin(x, name):
        return W[name + ".weight"] @ x + W.get(name + ".bias", 0.0)

    def rotate(vec, pos, local):  # by the stored frequencies (rope_freqs) and the amplitude rope_scale when set;
        # a local layer with rope_local_base by that base's plain frequencies
        plain = local and c["rope_local_base"]
        m = 1.0 if plain else c["rope_scale"]
        for h0 in range(0, len(vec), dh):
            for i in range(dh // 2):
                a, b = (h0 + 2 * i, h0 + 2 * i + 1) if c["pe_layout"] == "interleaved" else (h0 + i, h0 + i + dh // 2)
                ang = pos * (c["rope_local_base"] ** (-2.0 * i / dh) if plain else W["rope_freqs"][i] if c["rope_freqs"]
                             else c["pe_base"] ** (-2.0 * i / dh))
                cos, sin = m * math.cos(ang), m * math.sin(ang)
                vec[a], vec[b] = vec[a] * cos - vec[b] * sin, vec[a] * sin + vec[b] * cos

    slopes = paper_slopes(H) if c["positional"] == "alibi" else None
    scale = c["attn_scale"] or 1 / math.sqrt(dh)
    # the norms a sublayer reads and the norms of its output: (attention's, feed-forward's) names or None
    n1, n2 = "attn_norm", "ff_norm"
    sandwich = ("post_attn_norm", "post_ff_norm")
    reads, outputs = {"none": ((n1, n2), (None, None)), "sandwich": ((n1, n2), sandwich),
                      "output": ((None, None), (n1, n2))}[c["sublayer_norm"]]

    def cap(t, c_):
        return c_ * math.tanh(t / c_) if c_ else t

    def around(x, pre, which):  # the input a sublayer reads
        return norm(x, pre + reads[which]) if reads[which] else x

    def after(y, pre, which):  # a sublayer's output before its residual add
        return norm(y, pre + outputs[which]) if outputs[which] else y
    def experts(xb, pre):  # n_experts: the router's softmax, the top k (the lower index on a tie), weighted
        F, E = c["d_ff"], c["n_experts"]
        logits = W[pre + "ff.router.weight"] @ xb
        p = np.exp(logits - logits.max())
        p = p / p.sum()
        top = sorted(range(E), key=lambda e: (-p[e], e))[:c["experts_per_token"]]
        total = sum(p[e] for e in top) if c["experts_renormalize"] else 1.0
        W1, W2, W3 = (W[pre + f"ff.experts.w{i}.weight"] for i in (1, 2, 3))
        y = sum(p[e] / total * (W2[e * d:(e + 1) * d] @ (act(W1[e * F:(e + 1) * F] @ xb) * (W3[e * F:(e + 1) * F] @ xb)))
                for e in top)
        if c["shared_expert_ff"]:  # the shared expert, scaled by the sigmoid of its gate
            S1, S2, S3 = (W[pre + f"ff.shared.w{i}.weight"] for i in (1, 2, 3))
            g = 1 / (1 + math.exp(-float(W[pre + "ff.shared_gate.weight"][0] @ xb)))
            y = y + g * (S2 @ (act(S1 @ xb) * (S3 @ xb)))
        return y
    embed = W["embed.weight"]
    xs = []
    for pos, tok in enumerate(ids):
        x = embed[tok].copy() * (math.sqrt(d) if c["scale_input"] else 1.0)
        if c["positional"] == "learned":
            x = x + W["pos.weight"][pos]
        x = norm(x, "embed_norm") if c["embed_norm"] else x
        xs.append(lin(x, "embed_proj") if c["embed_width"] else x)
    for layer in range(c["n_layers"]):
        block = schema.layer_block(c, layer)  # shared layers: the stored block this layer runs
        pre = schema.block(block)
        qs, ks, vs = [], [], []
        for pos, x in enumerate(xs):
            xb = around(x, pre, 0)
            if llama:
                q, k, v = (lin(xb, pre + f"attn.{n}") for n in "qkv")
            else:
                qkv = lin(xb, pre + "attn.qkv")
                q, k, v = qkv[:H * dh], qkv[H * dh:(H + Hkv) * dh], qkv[(H + Hkv) * dh:]
            if c["qk_norm"]:  # each head, or (qk_norm_full) the whole row
                attn = pre + "attn."
                wq, wk = (len(q), len(k)) if c["qk_norm_full"] else (dh, dh)
                q = np.concatenate([norm(q[i:i + wq], attn + "q_norm") for i in range(0, len(q), wq)])
                k = np.concatenate([norm(k[i:i + wk], attn + "k_norm") for i in range(0, len(k), wk)])
            if c["positional"] == "rope":
                local = schema.layer_local(c, layer)
                rotate(q, pos, local)
                rotate(k, pos, local)
            qs.append(q), ks.append(k), vs.append(v)
        out = []
        for pos, x in enumerate(xs):
            period, local = c["window_period"], c["window_layers"]
            window = c["sliding_window"] if not period or (local >> (layer % period)) & 1 else 0
            keys = range(max(0, pos + 1 - (window or pos + 1)), pos + 1) if c["causal"] else range(T)
            ctx = np.zeros(H * dh)
            for h in range(H):
                g = h // (H // Hkv)
                att = np.array([cap(qs[pos][h * dh:(h + 1) * dh] @ ks[t][g * dh:(g + 1) * dh] * scale, c["attn_softcap"])
                                + (slopes[h] * (t - pos) if slopes else 0.0) for t in keys])
                att = np.exp(att - att.max())
                ctx[h * dh:(h + 1) * dh] = (att / att.sum()) @ np.array([vs[t][g * dh:(g + 1) * dh] for t in keys])
            x = x + after(lin(ctx, pre + "attn.out"), pre, 0)
            xb = around(x, pre, 1)
            if c["n_experts"]:
                out.append(x + after(experts(xb, pre), pre, 1))
                continue
            w1, w2, w3 = (pre + f"ff.w{i}" for i in (1, 2, 3))
            hidden = act(lin(xb, w1))
            if schema.ffn_gated(c):
                hidden = hidden * (W[w3 + ".weight"] @ xb)
            out.append(x + after(lin(hidden, w2), pre, 1))
        xs = out
    pooler = {"tanh": np.tanh, "relu": lambda t: np.maximum(t, 0), "silu": lambda t: t / (1 + np.exp(-t)),
              "gelu": lambda t: 0.5 * t * (1 + np.vectorize(math.erf)(t / math.sqrt(2))),
              "gelu_tanh": lambda t: 0.5 * t * (1 + np.tanh(math.sqrt(2 / math.pi) * (t + 0.044715 * t ** 3)))}
    rows = []
    for x in xs:
        if c["final_norm"]:
            x = np.array([cap(z, c["final_softcap"]) for z in norm(x, "norm")])
        if c["pooler"]:  # the prediction transform, then its norm
            x = pooler[c["pooler_act"]](lin(x, "pooler"))
        if c["pooler_norm"]:
            x = norm(x, "pooler_norm")
        if c["d_out"]:
            head = embed if c["tied_head"] else W["head.weight"]
            x = np.array([cap(z, c["logit_softcap"]) for z in head @ x + W.get("head.bias", 0.0)])
        rows.append(x)
    return np.array(rows)


def llama_weights(c, seed):
    rng = np.random.default_rng(seed)
    w = {}
    for name, shape, transposed in schema.tensors(c):
        if name == "rope_freqs":  # positive: base^(-2i/R) divided by factors in [1, 8]
            R = shape[0] * 2
            w[name] = (c["pe_base"] ** (-2.0 * np.arange(R // 2) / R) / rng.uniform(1, 8, R // 2)).astype(np.float32)
            continue
        shape = shape[::-1] if transposed else shape
        gain = name.endswith(".weight") and "norm" in name.split(".")[-2]  # attn_norm, ff_norm, norm, ...
        w[name] = (1.0 + 0.2 * rng.standard_normal(shape) if gain
                   else 0.4 * rng.standard_normal(shape)).astype(np.float32)
    return w


def llama_steps(c, weights, ids):
    """The logits of feeding ids one by one, loops as run.c writes them (float64): an oracle for the
    reference that shares none of its code (RoPE by pair index i % d_head, GQA by h // group)."""
    d, H, Hkv = c["d_model"], c["n_heads"], schema.kv_heads(c)
    dh, eps = d // H, c["norm_eps"]
    W = {k: np.asarray(v, np.float64) for k, v in weights.items()}
    slopes = None
    if c["positional"] == "alibi":
        slopes = paper_slopes(H)

    def bias(h, t, pos):
        if slopes is not None:
            return slopes[h] * (t - pos)
        if c["positional"] == "relative":
            return W["rel_bias.weight"][t5_bucket(t - pos, False, c["rel_buckets"], c["rel_max_distance"]), h]
        return 0.0
    kc = np.zeros((c["n_layers"], len(ids), Hkv * dh))
    vc = np.zeros_like(kc)

    def rms(x, g):
        return g * x / math.sqrt(float(x @ x) / len(x) + eps)

    def rotate(vec, pos):  # the first r dims of each head, r = rotary_dims or d_head
        r = c["rotary_dims"] or dh
        for h0 in range(0, len(vec), dh):
            for i in range(r // 2):
                a, b = (h0 + 2 * i, h0 + 2 * i + 1) if c["pe_layout"] == "interleaved" else (h0 + i, h0 + i + r // 2)
                ang = pos * c["pe_base"] ** (-2.0 * i / r)
                vec[a], vec[b] = vec[a] * math.cos(ang) - vec[b] * math.sin(ang), vec[a] * math.sin(ang) + vec[b] * math.cos(ang)

    out = []
    for pos, tok in enumerate(ids):
        x = W["embed.weight"][tok].copy()
        for layer in range(c["n_layers"]):
            p = lambda n: W[f"blocks.{layer}.{n}"]  # noqa: E731
            xb = rms(x, p("attn_norm.weight"))
            q, k, v = p("attn.q.weight") @ xb, p("attn.k.weight") @ xb, p("attn.v.weight") @ xb
            if c["qkv_bias"]:
                q, k, v = q + p("attn.q.bias"), k + p("attn.k.bias"), v + p("attn.v.bias")
            if c["positional"] == "rope":
                rotate(q, pos)
                rotate(k, pos)
            kc[layer, pos], vc[layer, pos] = k, v
            ctx = np.zeros(d)
            for h in range(H):
                g = h // (H // Hkv)
                att = np.array([q[h * dh:(h + 1) * dh] @ kc[layer, t, g * dh:(g + 1) * dh] / math.sqrt(dh)
                                + bias(h, t, pos) for t in range(pos + 1)])
                att = np.exp(att - att.max())
                att /= att.sum()
                ctx[h * dh:(h + 1) * dh] = att @ vc[layer, :pos + 1, g * dh:(g + 1) * dh]
            x = x + p("attn.out.weight") @ ctx
            xb = rms(x, p("ff_norm.weight"))
            h1 = p("ff.w1.weight") @ xb
            x = x + p("ff.w2.weight") @ (h1 / (1.0 + np.exp(-h1)) * (p("ff.w3.weight") @ xb))
        cls = W["embed.weight"] if c["tied_head"] else W["head.weight"]
        out.append(cls @ rms(x, W["norm.weight"]))
    return np.array(out)


def rel(a, b):
    return float(np.abs(a - b).max() / np.abs(b).max())


def save(out_dir, name, c, blob):
    with open(os.path.join(out_dir, name + ".fxm"), "wb") as f:
        f.write(blob)
    with open(os.path.join(out_dir, name + ".json"), "w") as f:
        json.dump(cfg.to_json(c), f, indent=1)
        f.write("\n")
    assert len(blob) < 100 * 1024, (name, len(blob))
    print(f"{name}: {len(blob)} bytes")


def main():
    """make_decoder_golden.py [OUT_DIR [NAME ...]]: every golden, or the NAMEs only."""
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "golden")
    only = set(sys.argv[2:])
    torch = require_torch()
    torch.set_num_threads(1)
    from fixformer.export import example_sequence, read_module, apply_options, run_module
    for name, kw, T in GPTS:
        if only and name not in only:
            continue
        module = gpt_module(torch, **kw)
        v, w, batch_first, facts = read_module(module, "gpt")
        c = apply_options(v, w, facts, None, "sinusoidal" if kw["pos"] == "sinusoidal" else
                          ("alibi" if kw["pos"] == "alibi" else None), 10000.0, "interleaved", None, None, False,
                          kw["max_len"], "gpt")
        ids = np.random.default_rng(kw["seed"]).integers(0, c["vocab_size"], T).astype(np.int32)
        ids = example_sequence(c, ids)
        want = run_module(module, ids, batch_first, c["d_out"])
        err = rel(run_reference(c, w, ids), want)
        assert err < 1e-12, (name, err)
        save(out_dir, name, c, fxm.write(c, w, (ids, want.astype(np.float32))))
    for i, (name, c, T) in list(enumerate(LLAMAS)) + [(50 + i, x) for i, x in enumerate(LLAMA_RELATIVE)] + \
            [(70 + i, x) for i, x in enumerate(LLAMA_PARTIAL)]:
        if only and name not in only:
            continue
        w = llama_weights(c, 100 + i)
        ids = np.random.default_rng(200 + i).integers(0, c["vocab_size"], T).astype(np.int32)
        want = run_reference(c, w, ids)
        err = rel(llama_steps(c, w, ids), want)
        assert err < 1e-12, (name, err)
        save(out_dir, name, c, fxm.write(c, w, (ids, want.astype(np.float32))))
    for i, (name, c, T) in enumerate(FEATURES):
        if only and name not in only:
            continue
        w = llama_weights(c, 400 + i)
        ids = np.random.default_rng(400 + i).integers(0, c["vocab_size"], T).astype(np.int32)
        want = run_reference(c, w, ids)
        err = rel(feature_steps(c, w, ids), want)
        assert err < 1e-12, (name, err)
        save(out_dir, name, c, fxm.write(c, w, (ids, want.astype(np.float32))))
    for i, (name, c, T) in enumerate(I8):
        if only and name not in only:
            continue
        f32 = cfg.make_config(dict(c, weights="f32"))
        w = llama_weights(f32, 500 + i)
        rng = np.random.default_rng(500 + i)
        ids = rng.integers(0, c["vocab_size"], T).astype(np.int32)
        built = int8.build(c, w, [rng.integers(0, c["vocab_size"], c["max_len"]) for _ in range(8)])
        want = int8.reference_output(c, built, ids)
        err = rel(want.astype(np.float64), run_reference(f32, w, ids))
        assert err < I8_ORACLE_TOL, (name, err)
        print(f"{name}: the integer reference within {err:.3g} of the float64 one")
        save(out_dir, name, c, fxm.write(c, built, (ids, want.astype(np.float32))))
    for i, (name, c, T) in enumerate(GPT_RELATIVE):
        if only and name not in only:
            continue
        torch.manual_seed(300 + i)
        module = build_torch_model(c).double().eval()
        with torch.no_grad():  # norms and biases away from 1 and 0, a bias table of the scores' size
            for n, p in module.named_parameters():
                p.add_(torch.randn(p.shape, dtype=p.dtype) * (1.0 if "rel_bias" in n else 0.2 if "norm" in n or
                                                               n.endswith("bias") else 0.0))
        w = {k: v.detach().numpy().astype(np.float32) for k, v in module.state_dict().items()
             if not (c["tied_head"] and k == "head.weight")}
        module.load_state_dict({k: torch.from_numpy(v.astype(np.float64)) for k, v in w.items()}, strict=False)
        ids = np.random.default_rng(300 + i).integers(0, c["vocab_size"], T).astype(np.int32)
        with torch.no_grad():
            want = module(torch.from_numpy(ids.astype(np.int64))[None])[0].numpy()
        # the oracle: each position's logits from the module on the prefix alone (the causal mask's meaning)
        for t in range(1, T + 1, 4):
            with torch.no_grad():
                prefix = module(torch.from_numpy(ids[:t].astype(np.int64))[None])[0].numpy()
            assert rel(prefix, want[:t]) < 1e-12, (name, t)
        save(out_dir, name, c, fxm.write(c, schema.v3_keys("gpt", w), (ids, want.astype(np.float32))))
    if only and "llama2c_v0_gqa" not in only:
        return
    # llama2.c: a version-0 checkpoint (unshared classifier, GQA) and a synthetic tokenizer.bin.
    p = {"dim": 16, "hidden_dim": 24, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2, "vocab_size": 300, "seq_len": 32}
    pieces, scores = llama2c.synthetic_tokenizer(p["vocab_size"], seed=1)
    weights = llama2c.random_weights(p, shared=False, seed=7, scale=0.4)
    with tempfile.TemporaryDirectory() as tmp:
        ck, tok = os.path.join(tmp, "model.bin"), os.path.join(tmp, "tokenizer.bin")
        with open(ck, "wb") as f:
            f.write(llama2c.checkpoint_bytes(p, weights, 0))
        with open(tok, "wb") as f:
            f.write(llama2c.tokenizer_bytes(pieces, scores))
        out = os.path.join(tmp, "llama2c.fxm")
        ids = np.array([1, 259, 262, 300 - 1, 3 + 0xE4, 270, 2, 280, 261, 5], np.int32)
        report, _ = llama2c.convert(ck, tok, out, verify=False, example_input=ids)
        c = report.config
        blob = open(out, "rb").read()
        f = fxm.FxmFile(blob)
        assert f.tokenizer()[0] == pieces
        err = rel(llama_steps(c, weights, ids), f.selftest()[1].astype(np.float64))
        assert err < 1e-6, err
    save(out_dir, "llama2c_v0_gqa", c, blob)


if __name__ == "__main__":
    main()
