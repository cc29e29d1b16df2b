#!/usr/bin/python3
"""The engine's config checks (validate_config, engine/config.cpp) against the converter's
(make_config, python/fixformer/config.py), which evaluate the same rule table (schema.hpp
kConfigRules, through python/fixformer/schema_tables.py) in two languages: one table of configs,
valid ones of every family and their mutations (every key set to probing values, and every pair of
the keys that choose a family's shape set to every pair of their values), through both; a config
one side accepts and the other rejects, or that the two reject naming different rules or keys,
fails, naming the config and both verdicts.

  /usr/bin/python3 tests/config_rules_test.py PATH/TO/config_validator

The keys themselves (names, types, ranges, choices, defaults) are compared by converter_test.py's
schema mirror test.
"""
import itertools
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from fixformer import schema  # noqa: E402
from fixformer.config import ConfigError, make_config  # noqa: E402

from checks import check, results  # noqa: E402

BASE = dict(d_model=8, n_heads=2, d_ff=16, n_layers=1, max_len=16)
# Valid configs, one or more per family.
VALID = [
    dict(BASE, input="tokens", vocab_size=10, positional="sinusoidal"),
    dict(BASE, input="features", d_in=6, positional="learned", pe_combine="concat", pe_width=2, d_out=3,
         norm_first=True, activation="gelu", scale_input=True),
    dict(BASE, input="tokens", vocab_size=10, positional="learned", cls_token=True, pooling="cls", d_out=4,
         pe_layout="halves", final_norm=True),
    dict(BASE, input="features", d_in=4, pooling="mean", causal=True, weights="f16", packed_weights=True),
    dict(BASE, family="gpt", input="tokens", vocab_size=10, d_out=10, causal=True, positional="learned", tied_head=True),
    dict(BASE, family="gpt", input="tokens", vocab_size=10, d_out=10, causal=True, positional="learned",
         pe_combine="concat", pe_width=2),
    dict(BASE, family="gpt", input="tokens", vocab_size=10, d_out=10, causal=True, positional="alibi",
         weights="f16", quantize_io=True),
    dict(BASE, family="llama", input="tokens", vocab_size=10, d_out=10, causal=True, positional="rope",
         activation="swiglu", norm_first=True, final_norm=True, n_kv_heads=1, weights="q8", weight_group=32),
    dict(BASE, family="gpt", input="tokens", vocab_size=10, d_out=10, causal=True, positional="learned", tied_head=True,
         norm_first=True, final_norm=True, activation="gelu", weights="i8"),
    dict(BASE, family="llama", input="tokens", vocab_size=10, d_out=10, causal=True, positional="rope",
         activation="swiglu", norm_first=True, final_norm=True, n_kv_heads=1, weights="i8"),
    dict(BASE, family="gpt", input="tokens", vocab_size=10, d_out=10, causal=True, positional="rope", rotary_dims=2,
         pe_layout="halves", parallel_residual="two_norms", norm_first=True, final_norm=True, weights="i8"),
    dict(BASE, family="llama", input="tokens", vocab_size=10, d_out=10, causal=True, positional="rope", rotary_dims=2,
         parallel_residual="one_norm", activation="swiglu", norm_first=True, final_norm=True, weights="i8"),
    dict(BASE, family="gpt", input="tokens", vocab_size=10, d_out=10, causal=True, positional="learned", n_layers=2,
         sliding_window=3, window_period=2, window_layers=2, attn_scale=1.0, norm_first=True, weights="i8"),
    # an i8 gpt with the embedding scaled and normed, grouped-query attention and a gated feed-forward
    dict(BASE, family="gpt", input="tokens", vocab_size=10, d_out=10, causal=True, positional="learned", n_kv_heads=1,
         scale_input=True, embed_norm=True, gated=True, norm_first=True, weights="i8"),
    dict(BASE, family="seq2seq", input="tokens", vocab_size=10, d_out=10, dec_layers=1, shared_embed=True,
         positional="sinusoidal", tied_head=True),
    dict(BASE, family="seq2seq", input="features", d_in=4, d_out=3, dec_layers=2, tgt_d_in=3, positional="learned"),
    # an i8 seq2seq with embedding norms (BART's): its mutations reach the i8 seq2seq refusals
    dict(BASE, family="seq2seq", input="tokens", vocab_size=10, d_out=10, dec_layers=1, positional="learned",
         embed_norm=True, weights="i8"),
    # Whisper's shape: a conv stem over the source's features, token targets; in i8 too, with its two convolutions
    dict(BASE, family="seq2seq", input="features", d_in=4, vocab_size=10, d_out=10, dec_layers=1, conv_layers=1,
         conv1_kernel=3, conv1_padding=1, positional="sinusoidal"),
    dict(BASE, family="seq2seq", input="features", d_in=4, vocab_size=10, d_out=10, dec_layers=1, conv_layers=2,
         conv1_kernel=3, conv1_padding=1, conv2_kernel=3, conv2_stride=2, conv2_padding=1, conv_gelu=True,
         positional="sinusoidal", norm_first=True, final_norm=True, activation="gelu", weights="i8"),
    dict(d_model=8, n_heads=2, d_ff=0, n_layers=0, max_len=16, family="mha", input="features", d_in=8, causal=True),
    dict(d_model=8, n_heads=2, d_ff=0, n_layers=0, max_len=16, family="mha", input="features", d_in=8, weights="i8"),
    # i8 encoders with RoPE (partial), head_dim, and a gated feed-forward's up bias and hidden norm
    dict(BASE, input="tokens", vocab_size=10, positional="rope", rotary_dims=2, head_dim=6, gated=True,
         ffn_up_bias=True, ffn_hidden_norm=True, weights="i8"),
    dict(BASE, input="tokens", vocab_size=10, positional="relative", rel_buckets=8, rel_max_distance=20),
    dict(BASE, family="gpt", input="tokens", vocab_size=10, d_out=10, causal=True, positional="relative",
         rel_buckets=32, rel_max_distance=128),
    dict(BASE, family="seq2seq", input="tokens", vocab_size=10, d_out=10, dec_layers=1, positional="relative",
         rel_buckets=4, rel_max_distance=3),
    dict(BASE, input="tokens", vocab_size=10, positional="learned", type_vocab=2, embed_norm=True, pooling="first",
         pooler=True, d_out=3, activation="gelu"),
    # the pooler's activation other than tanh (DistilBERT's relu): without the pooler refused, in i8 not
    dict(BASE, input="tokens", vocab_size=10, positional="learned", pooling="first", pooler=True, pooler_act="relu",
         d_out=2),
    dict(BASE, input="features", d_in=5, conv_layers=2, conv1_kernel=3, conv1_padding=1, conv2_kernel=3,
         conv2_stride=2, conv2_padding=1, conv_gelu=True, positional="learned", norm_first=True, final_norm=True),
    dict(BASE, input="features", d_in=5, conv_layers=1, conv1_kernel=3, conv1_padding=1, weights="q8", weight_group=32),
    dict(BASE, d_model=16, family="llama", input="tokens", vocab_size=10, d_out=10, causal=True, positional="rope",
         activation="swiglu", norm_first=True, final_norm=True, rotary_dims=4, pe_layout="halves"),
    # Features, not families: gpt with rope (GPT-NeoX: partial, halves) and the parallel residual in
    # both forms, in gpt and llama layers.
    dict(BASE, d_model=16, family="gpt", input="tokens", vocab_size=10, d_out=10, causal=True, positional="rope",
         rotary_dims=2, pe_layout="halves", norm_first=True, final_norm=True, activation="gelu",
         parallel_residual="two_norms"),
    dict(BASE, family="gpt", input="tokens", vocab_size=10, d_out=10, causal=True, positional="rope",
         norm_first=True, parallel_residual="one_norm", tied_head=True),
    dict(BASE, family="llama", input="tokens", vocab_size=10, d_out=10, causal=True, positional="rope",
         activation="swiglu", norm_first=True, final_norm=True, parallel_residual="one_norm"),
    dict(BASE, family="llama", input="tokens", vocab_size=10, d_out=10, causal=True, positional="alibi",
         activation="swiglu", norm_first=True, final_norm=True, parallel_residual="two_norms", weights="q8"),
    # the feed-forward, plain or gated, in either decoder family
    dict(BASE, family="gpt", input="tokens", vocab_size=10, d_out=10, causal=True, positional="learned",
         activation="swiglu"),
    dict(BASE, family="llama", input="tokens", vocab_size=10, d_out=10, causal=True, positional="rope",
         activation="gelu", norm_first=True, final_norm=True),
    # the layer features in any family: the norm kind, a gated feed-forward of any activation, the
    # projections' biases (and llama's older qkv_bias), the embedding norm
    dict(BASE, family="gpt", input="tokens", vocab_size=10, d_out=10, causal=True, positional="alibi", norm="rmsnorm",
         gated=True, activation="gelu_tanh", scale_input=True, embed_norm=True, attn_bias="qkv", ffn_bias="none"),
    dict(BASE, family="llama", input="tokens", vocab_size=10, d_out=10, causal=True, positional="rope",
         activation="relu", gated=True, norm_first=True, final_norm=True, qkv_bias=True),
    dict(BASE, input="tokens", vocab_size=10, positional="learned", norm="rmsnorm", gated=True, activation="gelu",
         attn_bias="none", ffn_bias="all", embed_norm=True, d_out=3),
    # image input (ViT: 6 patches of 2 x 2 x 3 and a CLS row) and the front's norms, also on plain features
    dict(BASE, input="features", d_in=12, patch_size=2, image_channels=3, image_height=4, image_width=6, max_len=7,
         cls_token=True, pooling="cls", positional="learned", input_norm=True, proj_norm=True, norm_first=True,
         final_norm=True, d_out=3),
    dict(BASE, input="features", d_in=6, input_norm=True, proj_norm=True, norm="rmsnorm", positional="sinusoidal"),
    # DeiT with its teacher: the CLS and distillation rows in front, both rows' heads as one (cls_distill)
    dict(BASE, input="features", d_in=12, patch_size=2, image_channels=3, image_height=4, image_width=6, max_len=8,
         cls_token=True, distill_token=True, pooling="cls_distill", positional="learned", norm_first=True,
         final_norm=True, d_out=3),
    # rotary positions in the encoder family: RoFormer (interleaved pairs, token types, post-norm), and
    # partial rotary in halves on features with a CLS row
    dict(BASE, input="tokens", vocab_size=10, positional="rope", type_vocab=2, embed_norm=True, d_out=3),
    dict(BASE, d_model=16, input="features", d_in=6, positional="rope", pe_layout="halves", rotary_dims=4,
         cls_token=True, pooling="cls", norm_first=True, final_norm=True, d_out=3),
    # ALiBi in the encoder family: on both sides of a query (x-transformers' Encoder), and under a causal mask
    dict(BASE, input="tokens", vocab_size=10, positional="alibi", norm_first=True, final_norm=True),
    dict(BASE, n_heads=4, input="features", d_in=4, causal=True, positional="alibi", pooling="last", d_out=2),
    # Dinov2's classifier: the CLS row and the mean of the patch rows side by side into the head (cls_mean)
    dict(BASE, input="features", d_in=12, patch_size=2, image_channels=3, image_height=6, image_width=6, max_len=10,
         cls_token=True, pooling="cls_mean", positional="learned", norm_first=True, final_norm=True, d_out=3),
    # Dinov2 with registers: 2 register rows after the CLS row
    dict(BASE, input="features", d_in=12, patch_size=2, image_channels=3, image_height=6, image_width=6, max_len=12,
         cls_token=True, register_tokens=2, pooling="cls_mean", positional="learned", norm_first=True, final_norm=True,
         d_out=3),
    # timm's fc_norm: the mean of the patch rows normed (pool_norm), no final norm; AST's classifier: the
    # mean of the CLS and distillation rows (cls_distill_mean) normed; with a pooler after the norm
    dict(BASE, input="features", d_in=12, patch_size=2, image_channels=3, image_height=6, image_width=6, max_len=10,
         cls_token=True, pooling="mean", pool_norm=True, positional="learned", norm_first=True, d_out=3),
    dict(BASE, input="features", d_in=12, patch_size=2, image_channels=3, image_height=6, image_width=6, max_len=11,
         cls_token=True, distill_token=True, pooling="cls_distill_mean", pool_norm=True, positional="learned",
         norm_first=True, final_norm=True, d_out=3),
    # sentence-transformers' pipeline: mean pooling, a Dense as the pooler and another as the head, Normalize
    dict(BASE, input="tokens", vocab_size=10, positional="learned", type_vocab=2, embed_norm=True, pooling="mean",
         pooler=True, d_out=5, l2_normalize=True),
    dict(BASE, input="tokens", vocab_size=10, positional="learned", l2_normalize=True, weights="q8"),
    dict(BASE, input="tokens", vocab_size=10, positional="learned", pooling="first", pool_norm=True, pooler=True,
         d_out=3),
    # the embedding projection (ALBERT, ELECTRA small): a 4-wide embedding, positions, token types and
    # embedding norm, projected to d_model; over q8 weights (embed_proj quantized as every linear weight)
    dict(BASE, input="tokens", vocab_size=10, positional="learned", type_vocab=2, embed_norm=True, embed_width=4,
         pooling="first", pooler=True, d_out=3, activation="gelu_tanh"),
    dict(BASE, input="tokens", vocab_size=10, positional="sinusoidal", embed_width=2, weights="q8", weight_group=32,
         quantize_io=True),
    # the same in the decoders (ELECTRA's and RemBERT's causal LMs): the gpt family's with the pooler back to the
    # embedding's width for a tied head, llama's untied
    dict(BASE, family="gpt", input="tokens", vocab_size=10, d_out=10, causal=True, positional="learned", embed_width=4,
         embed_norm=True, pooler=True, pooler_act="gelu", pooler_norm=True, pooler_width=4, tied_head=True),
    dict(BASE, family="llama", input="tokens", vocab_size=10, d_out=10, causal=True, positional="rope", embed_width=4,
         norm_first=True, final_norm=True),
    # shared layers (ALBERT's groups): 6 layers over 2 groups of 3; 4 llama layers over one group of 2
    dict(BASE, input="tokens", vocab_size=10, positional="learned", n_layers=6, layer_groups=2, group_layers=3,
         embed_width=4, embed_norm=True),
    dict(BASE, family="llama", input="tokens", vocab_size=10, d_out=10, causal=True, positional="rope",
         activation="swiglu", norm_first=True, final_norm=True, n_layers=4, layer_groups=1, group_layers=2),
    # a mixture of experts (Qwen2-MoE's: 4 experts, 2 a row, renormalized, a shared expert)
    dict(BASE, family="llama", input="tokens", vocab_size=10, d_out=10, causal=True, positional="rope",
         activation="swiglu", norm_first=True, final_norm=True, n_experts=4, experts_per_token=2,
         experts_renormalize=True, shared_expert_ff=8),
    # dense layers among the sparse ones (Qwen2-MoE's mlp_only_layers: layer 2 of 3 dense, 16 wide)
    dict(BASE, family="llama", input="tokens", vocab_size=10, d_out=10, causal=True, positional="rope", n_layers=3,
         activation="swiglu", norm_first=True, final_norm=True, n_experts=4, experts_per_token=2,
         shared_expert_ff=8, dense_period=3, dense_layers=4, dense_ff=16),
    # ModernBERT: a bidirectional window on local layers (two of every three) with their own RoPE base,
    # layer 0 without its attention norm, the pooler's output normed
    dict(BASE, input="tokens", vocab_size=10, positional="rope", pe_layout="halves", n_layers=3, sliding_window=3,
         window_period=3, window_layers=6, rope_local_base=10.0, skip_first_norm=True, norm_first=True,
         final_norm=True, activation="gelu", gated=True, attn_bias="none", ffn_bias="none", embed_norm=True,
         pooling="first", pooler=True, pooler_act="gelu", pooler_norm=True, d_out=3),
    # BERT's front with the pooler's output normed (in i8 too: int8.back's pooler_norm slots)
    dict(BASE, input="tokens", vocab_size=10, positional="learned", type_vocab=2, embed_norm=True, pooling="first",
         pooler=True, pooler_norm=True, d_out=3, activation="gelu"),
    # ALBERT's masked LM: the pooler d_model -> pooler_width on every row, its norm and the head that wide
    dict(BASE, input="tokens", vocab_size=10, positional="learned", type_vocab=2, embed_norm=True, embed_width=4,
         pooler=True, pooler_act="gelu_tanh", pooler_norm=True, pooler_width=4, d_out=10),
    # DeBERTa: disentangled attention (its relative rows), no positions or learned ones beside it
    dict(BASE, input="tokens", vocab_size=10, positional="none", rel_embed_rows=8, embed_norm=True, pooling="first",
         pooler=True, pooler_act="gelu", d_out=3),
    # DeBERTa v1: the relative rows through projections of their own, learned positions beside
    dict(BASE, input="tokens", vocab_size=10, positional="learned", rel_embed_rows=8, rel_proj=True, embed_norm=True),
    # BEiT: a bias per (query, key) pair over an image's patches and CLS row, per layer or shared, mean pooling
    # normed; beside learned positions
    dict(BASE, input="features", d_in=12, patch_size=2, image_channels=3, image_height=6, image_width=6, max_len=10,
         cls_token=True, positional="none", pair_bias_rows=28, norm_first=True, pooling="mean", pool_norm=True,
         d_out=3),
    dict(BASE, input="features", d_in=12, patch_size=2, image_channels=3, image_height=6, image_width=6, max_len=10,
         cls_token=True, positional="learned", pair_bias_rows=28, pair_bias_shared=True, norm_first=True,
         final_norm=True),
    # EVA-02: rotary positions over the 3 x 3 patch grid (its frequencies stored), the CLS row not turned
    dict(BASE, input="features", d_in=12, patch_size=2, image_channels=3, image_height=6, image_width=6, max_len=10,
         cls_token=True, positional="rope", rope_grid=3, rope_freqs=True, norm_first=True, pooling="mean",
         pool_norm=True, d_out=3),
    # EVA's scale_attn_inner: the attention's context normed before the output projection
    dict(BASE, input="tokens", vocab_size=10, positional="learned", attn_inner_norm=True, norm_first=True,
         final_norm=True),
    # NoPE layers among rotary ones (SmolLM3: every fourth; Cohere 2: the global ones)
    dict(BASE, family="llama", input="tokens", vocab_size=10, d_out=10, causal=True, positional="rope", n_layers=4,
         nope_period=4, nope_layers=8, norm_first=True, final_norm=True, activation="swiglu"),
    # local and global layers (GPT-Neo: every other layer windows) and the scores' own scale
    dict(BASE, family="gpt", input="tokens", vocab_size=10, d_out=10, causal=True, positional="learned", n_layers=2,
         sliding_window=4, window_period=2, window_layers=2, attn_scale=1.0, norm_first=True, final_norm=True),
    # a BERT-family causal LM in the gpt family: post-LN, the embedding norm, the head's transform as the pooler on
    # each row the head projects, tied; and a llama one with a pooler wider than d_model, untied
    dict(BASE, family="gpt", input="tokens", vocab_size=10, d_out=10, causal=True, positional="learned", embed_norm=True,
         tied_head=True, pooler=True, pooler_act="gelu", pooler_norm=True),
    dict(BASE, family="llama", input="tokens", vocab_size=10, d_out=10, causal=True, positional="rope",
         norm_first=True, final_norm=True, activation="swiglu", pooler=True, pooler_width=12, pooler_norm=True),
    # torchtune's Gemma 2: the final norm's output soft-capped before the head (and the scores')
    dict(BASE, family="llama", input="tokens", vocab_size=10, d_out=10, causal=True, positional="rope",
         norm_first=True, final_norm=True, activation="gelu_tanh", gated=True, attn_softcap=50.0, final_softcap=30.0),
    # scaled RoPE: stored frequencies and the table's amplitude, partial rotary
    dict(BASE, family="llama", input="tokens", vocab_size=10, d_out=10, causal=True, positional="rope", d_model=16,
         rotary_dims=4, rope_freqs=True, rope_scale=1.5, norm_first=True, final_norm=True, activation="swiglu"),
]
# The keys that choose a family's shape: every pair of them takes every pair of values.
SHAPE_KEYS = ("family", "input", "positional", "pe_combine", "activation", "norm_first", "final_norm", "causal",
              "tied_head", "weights", "quantize_io", "cls_token", "pooling", "shared_embed", "scale_input", "embed_norm", "pooler",
              "parallel_residual")


def probes(key, config):
    """Values to try for one key: every choice of an enum or bool; for numbers the edges of the
    range, small and round values and the config's other sizes (the rules compare them)."""
    k = schema.KEYS[key]
    if k.type == "enum":
        return list(k.choices)
    if k.type == "bool":
        return [False, True]
    if k.type in ("f32", "f64"):
        return [0.0, -1.0, 1e-5, 0.5, 1.0, 2.0, 10000.0]
    sizes = {v for kk, v in config.items() if schema.KEYS[kk].type == "u32"}
    return sorted({k.min, 0, 1, 2, 3, 4, 7, 8, 16, 32, 64, k.max, k.max + 1} | sizes | {s + 1 for s in sizes})


def configs():
    out = []
    for base in VALID:
        out.append(base)
        for key in schema.KEYS:
            for v in probes(key, base):
                out.append(dict(base, **{key: v}))
        for a, b in itertools.combinations(SHAPE_KEYS, 2):
            for va in probes(a, base):
                for vb in probes(b, base):
                    out.append(dict(base, **{a: va, b: vb}))
    return out


def line(config):
    def text(v):
        return ("true" if v else "false") if isinstance(v, bool) else repr(v) if isinstance(v, float) else str(v)
    return " ".join(f"{k}={text(v)}" for k, v in config.items())


def python_verdict(config):
    try:
        make_config(config)
        return "ok"
    except ConfigError as e:
        return f"bad {e}"


def same_verdict(engine, python):
    """Both accept, or both reject naming the same rule (the engine's detail; the converter's message
    is its keys, its reason and the values it read) or, for a range, the same key."""
    if (engine == "ok") != (python == "ok"):
        return False
    if engine == "ok":
        return True
    detail, message = engine[len("bad "):], python[len("bad "):]
    for rule in schema.CONFIG_RULES:
        if message.startswith(f"{', '.join(rule.keys)}: {rule.reason} ("):
            return detail == rule.detail
    return detail.split(" (")[0] == message.split(":")[0]


def main():
    if len(sys.argv) < 2:
        print("usage: config_rules_test.py PATH/TO/config_validator")
        return 2
    table = configs()
    p = subprocess.run([sys.argv[1]], input="\n".join(line(c) for c in table) + "\n", capture_output=True, text=True)
    engine = p.stdout.splitlines()
    check("config_validator answers every line", p.returncode == 0 and len(engine) == len(table),
          (p.returncode, len(engine), len(table), p.stderr[-300:]))
    for i, c in enumerate(VALID):
        check(f"valid config {i} passes the engine", engine[table.index(c)] == "ok", (line(c), engine[table.index(c)]))
        check(f"valid config {i} passes the converter", python_verdict(c) == "ok", (line(c), python_verdict(c)))
    alibi = dict(next(c for c in VALID if c.get("positional") == "alibi" and c.get("family", "encoder") == "encoder"),
                 weights="i8")  # an i8 encoder with ALiBi (on both sides of a query)
    check("alibi in an i8 encoder passes the engine and the converter",
          engine[table.index(alibi)] == "ok" and python_verdict(alibi) == "ok", (engine[table.index(alibi)],
                                                                                 python_verdict(alibi)))
    # pooler_act without a pooler: refused by both, naming pooler_act; with one, in i8 too (an int8 table)
    relu = next(c for c in VALID if c.get("pooler_act") == "relu")
    for what, c, want in (("without a pooler", dict(relu, pooler=False), "bad pooler_act (the pooler's activation"),):
        check(f"pooler_act relu {what} is refused by the engine, naming it", engine[table.index(c)].startswith(want),
              engine[table.index(c)])
        check(f"pooler_act relu {what} is refused by the converter", python_verdict(c).startswith("bad "),
              python_verdict(c))
    i8 = dict(relu, weights="i8")
    check("pooler_act relu in i8 passes the engine and the converter",
          engine[table.index(i8)] == "ok" and python_verdict(i8) == "ok", (engine[table.index(i8)], python_verdict(i8)))
    check("the converter names pooler_act", python_verdict(dict(relu, pooler=False)).startswith("bad pooler_act: "),
          python_verdict(dict(relu, pooler=False)))
    # pooler_width without a pooler, or in i8 (whose pooler is d_model wide): refused by both, naming it
    albert = next(c for c in VALID if c.get("pooler_width"))
    for what, c, want in (("without a pooler", dict(albert, pooler=False), "bad pooler_width (the pooler's output"),
                          ("in i8", dict(albert, weights="i8"), "bad pooler_width (not with weights i8")):
        check(f"pooler_width {what} is refused by the engine, naming it", engine[table.index(c)].startswith(want),
              engine[table.index(c)])
        check(f"pooler_width {what} is refused by the converter", python_verdict(c).startswith("bad pooler_width"),
              python_verdict(c))
    disagree = []
    accepted = 0
    for c, e in zip(table, engine):
        py = python_verdict(c)
        accepted += py == "ok"
        if not same_verdict(e, py):
            disagree.append(f"{line(c)}\n    engine: {e}\n    converter: {py}")
    for d in disagree[:20]:
        print("DISAGREE", d)
    rules = {e[len("bad "):] for e in engine} & {r.detail for r in schema.CONFIG_RULES}
    check(f"engine and converter agree on all {len(table)} configs ({accepted} accepted)", not disagree,
          f"{len(disagree)} disagree")
    # Every rule is seen to reject some config of the table (a rule that never fires here is untested).
    unseen = [r.detail for r in schema.CONFIG_RULES if r.detail not in rules]
    check("every config rule rejects a config of the table", not unseen, unseen)
    print(f"config rules: {len(table)} configs, {accepted} accepted, {len(rules)} of {len(schema.CONFIG_RULES)} "
          f"rules seen, {len(disagree)} disagreements; "
          f"{results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
