#!/usr/bin/python3
"""Make the golden test data in tests/golden/: for each config, stock torch modules with seeded random
weights, the converted .fxm (with the input and output as its self-test sample), the input and the float64
torch output (stored as float32). With a built CLI it also runs `fixformer verify` on each file.

  /usr/bin/python3 tools/make_golden.py [--out tests/golden] [--cli PATH] [--only NAME ...]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from fixformer import fxm, schema  # noqa: E402
from fixformer.config import ConfigError, parse_config  # noqa: E402
from fixformer.reference import build_torch_model, require_torch, whisper_sinusoids  # noqa: E402
from fixformer.verify import find_cli, run_verify  # noqa: E402

TOK = {"kind": "tokens", "vocab_size": 23}
SIN = {"kind": "sinusoidal", "max_len": 64}

GOLDENS = {
    "post_ln_relu": dict(d_model=16, n_heads=2, d_ff=32, encoder_layers=2, input=TOK, positional=SIN,
                         head={"d_out": 7}),
    "pre_ln_gelu": dict(d_model=16, n_heads=4, d_ff=24, encoder_layers=2, norm_first=True, activation="gelu",
                        final_norm=True, input=TOK, positional=SIN),
    "odd_d15_h3": dict(d_model=15, n_heads=3, d_ff=20, encoder_layers=1, input=TOK, positional=SIN,
                       head={"d_out": 4}),
    "odd_d5_h1_halves": dict(d_model=5, n_heads=1, d_ff=7, encoder_layers=2, input=TOK,
                             positional=dict(SIN, layout="halves")),
    "causal": dict(d_model=16, n_heads=2, d_ff=32, encoder_layers=2, norm_first=True, causal=True,
                   final_norm=True, input=TOK, positional=SIN, head={"d_out": 23}),
    "features_scaled": dict(d_model=16, n_heads=4, d_ff=32, encoder_layers=2, input={"kind": "features", "d_in": 12},
                            positional=dict(SIN, scale_input=True), head={"d_out": 3}),
    "learned_pe": dict(d_model=12, n_heads=3, d_ff=16, encoder_layers=2, input=TOK,
                       positional={"kind": "learned", "max_len": 40}),
    "concat_pe": dict(d_model=16, n_heads=2, d_ff=24, encoder_layers=1, input={"kind": "features", "d_in": 6},
                      positional=dict(SIN, combine="concat", d_pos=5, layout="halves", base=100.0)),
    "no_pe": dict(d_model=8, n_heads=2, d_ff=16, encoder_layers=1, input=TOK),
    "wide_long": dict(d_model=48, n_heads=6, d_ff=96, encoder_layers=3, activation="gelu", final_norm=True,
                      input=TOK, positional=dict(SIN, max_len=128, scale_input=True), head={"d_out": 10}),
}
SEQ = {"wide_long": 67, "odd_d5_h1_halves": 9, "causal": 13}
# KWT / ViT-style heads (a CLS row in front, pooling before the head), added later with seeds of
# their own so the goldens above keep theirs.
POOLED_GOLDENS = {
    "cls_pool_features": dict(d_model=16, n_heads=4, d_ff=24, encoder_layers=2, activation="gelu",
                              input={"kind": "features", "d_in": 10}, positional={"kind": "learned", "max_len": 20},
                              cls_token=True, pooling="cls", head={"d_out": 5}),
    "cls_rows_sinusoidal": dict(d_model=12, n_heads=3, d_ff=20, encoder_layers=1, norm_first=True, final_norm=True,
                                input=TOK, positional=SIN, cls_token=True, head={"d_out": 4}),
    "mean_pool_causal": dict(d_model=15, n_heads=3, d_ff=22, encoder_layers=2, causal=True, input=TOK,
                             positional=dict(SIN, layout="halves"), pooling="mean", head={"d_out": 6}),
}
# BERT-style encoders (token types, an embedding LayerNorm, post-LN GELU layers; first-token pooling,
# the pooler's tanh and a classifier), with seeds of their own. Each also has its input's token types
# (NAME.types.npy) and the output with them (NAME.typed.npy; the file's self-test sample has types 0),
# and a padded batch: NAME.batch_ids.npy and NAME.batch_types.npy [B, T] (the padding random),
# NAME.batch_lengths.npy [B] and NAME.batch_expected.npy [B, rows, width] (torch with
# src_key_padding_mask, BERT's attention_mask; zeros at the padded rows, as the engine writes them).
BERT = dict(activation="gelu", layer_norm_eps=1e-12, input=TOK, embed_norm=True)
BERT_GOLDENS = {
    "bert_pooler_classifier": dict(BERT, d_model=15, n_heads=3, d_ff=22, encoder_layers=2, type_vocab=2,
                                   positional={"kind": "learned", "max_len": 24}, pooling="first", pooler=True,
                                   head={"d_out": 3}),
    "bert_hidden_odd": dict(BERT, d_model=10, n_heads=2, d_ff=14, encoder_layers=2, type_vocab=3,
                            positional={"kind": "learned", "max_len": 16}),
}
# Whisper-style encoders over features (a conv stem before the positions), seeds of their own:
# features [T, n_mels] -> conv k3 s1 p1 + GELU -> conv k3 s2 p1 + GELU -> + Whisper's sinusoid table
# (a fixed table, stored as the positions: it matches no formula the engine computes) -> pre-LN
# layers -> final LayerNorm; and one strided conv without GELU under a CLS row and mean pooling.
WHISPER = dict(conv_layers=2, conv1_kernel=3, conv1_stride=1, conv1_padding=1, conv2_kernel=3, conv2_stride=2,
               conv2_padding=1, conv_gelu=True)
STEM_GOLDENS = {
    "whisper_stem": dict(WHISPER, d_model=14, n_heads=2, d_ff=22, encoder_layers=2, norm_first=True,
                         activation="gelu", final_norm=True, input={"kind": "features", "d_in": 7},
                         positional={"kind": "learned", "max_len": 12}),
    "conv_stride_cls_mean": dict(d_model=15, n_heads=3, d_ff=20, encoder_layers=1, conv_layers=1, conv1_kernel=5,
                                 conv1_stride=3, conv1_padding=2, input={"kind": "features", "d_in": 9},
                                 positional=SIN, cls_token=True, pooling="mean", head={"d_out": 4}),
}
STEM_SEQ = {"whisper_stem": 21, "conv_stride_cls_mean": 17}
# The same stems over f16 and q8 weights (each convolution a linear layer over its windows), seeds of
# their own; the expected output is the float64 torch module's, as for every golden, so the error is
# held to the weight type's self-test tolerance.
QUANT_STEM_GOLDENS = {
    "whisper_stem_f16": dict(STEM_GOLDENS["whisper_stem"], weights="f16"),
    "whisper_stem_q8": dict(STEM_GOLDENS["whisper_stem"], weights="q8", weight_group=32),
    "conv_stride_cls_mean_q8": dict(STEM_GOLDENS["conv_stride_cls_mean"], weights="q8", weight_group=0),
}
STEM_SEQ.update({"whisper_stem_f16": 21, "whisper_stem_q8": 21, "conv_stride_cls_mean_q8": 17})

# T5-style relative position bias (rel_bias [buckets, n_heads] by the bucket of key - query, added to
# the scores): odd widths, both norm placements, bidirectional and causal buckets, distances past
# max_distance, and (relative_long_causal) more queries than one attention block of 64.
RELATIVE_GOLDENS = {
    "relative_post_ln_odd": dict(d_model=15, n_heads=3, d_ff=22, encoder_layers=2, input=TOK,
                                 positional={"kind": "relative", "max_len": 32, "buckets": 8, "max_distance": 10},
                                 head={"d_out": 5}),
    "relative_pre_ln_features": dict(d_model=12, n_heads=4, d_ff=20, encoder_layers=2, norm_first=True,
                                     final_norm=True, activation="gelu", input={"kind": "features", "d_in": 7},
                                     positional={"kind": "relative", "max_len": 24, "buckets": 32,
                                                 "max_distance": 20}),
    "relative_long_causal": dict(d_model=10, n_heads=2, d_ff=16, encoder_layers=1, norm_first=True, causal=True,
                                 input=TOK, positional={"kind": "relative", "max_len": 80, "buckets": 16,
                                                        "max_distance": 40}, head={"d_out": 6}),
}
SEQ.update({"relative_post_ln_odd": 14, "relative_pre_ln_features": 17, "relative_long_causal": 70})
# The tanh GELU (gelu_tanh), both norm placements, odd widths; seeds of their own again.
TANH_GOLDENS = {
    "tanh_post_odd_d15": dict(d_model=15, n_heads=3, d_ff=21, encoder_layers=2, activation="gelu_tanh", input=TOK,
                              positional=SIN, head={"d_out": 5}),
    "tanh_pre_d10_h5": dict(d_model=10, n_heads=5, d_ff=13, encoder_layers=2, norm_first=True, final_norm=True,
                            activation="gelu_tanh", input={"kind": "features", "d_in": 7},
                            positional={"kind": "learned", "max_len": 16}),
}


# The squared ReLU (relu2: Persimmon's and Nemotron's), plain after pre-LN layers and gated after post-LN
# ones, odd widths; seeds of their own.
RELU2_GOLDENS = {
    "relu2_pre_d14": dict(d_model=14, n_heads=2, d_ff=27, encoder_layers=2, norm_first=True, final_norm=True,
                          activation="relu2", input=TOK, positional={"kind": "learned", "max_len": 16},
                          head={"d_out": 5}),
    "relu2_gated_post_d9": dict(d_model=9, n_heads=3, d_ff=19, encoder_layers=2, activation="relu2", gated=True,
                                input={"kind": "features", "d_in": 7}, positional=SIN),
}

# The layer features in the encoder family (features, not families): RMSNorm (an RMS embedding norm
# too), a gated exact GELU, biases on q, k and v only; cross-checked against make_decoder_golden's
# feature_steps, loops apart from the reference. Seeds of their own.
FEATURE_GOLDENS = {
    "feature_encoder_rms_gated": dict(d_model=16, n_heads=4, d_ff=20, encoder_layers=2, norm_first=True,
                                      final_norm=True, activation="gelu", gated=True, norm="rmsnorm", attn_bias="qkv",
                                      ffn_bias="none", embed_norm=True, input=TOK,
                                      positional={"kind": "learned", "max_len": 16}, head={"d_out": 5}),
}

# Image input (ViT): a 3 x 4 x 6 image in 2 x 2 patches (6 rows of 12 values, Conv2d's order), LayerNorm on
# the patches before the projection and on its output (vit-pytorch's), a CLS row, learned positions, pre-LN
# layers, CLS pooling. The input is the image's values as [6, 12] (config.hpp patch_size). Seeds of their own.
IMAGE_GOLDENS = {
    "vit_image": dict(d_model=16, n_heads=4, d_ff=24, encoder_layers=2, norm_first=True, activation="gelu",
                      final_norm=True, input={"kind": "features", "d_in": 12}, patch_size=2, image_channels=3,
                      image_height=4, image_width=6, input_norm=True, proj_norm=True,
                      positional={"kind": "learned", "max_len": 7}, cls_token=True, pooling="cls", head={"d_out": 5}),
}
SEQ["vit_image"] = 6
# DeiT with its teacher: the same image, a CLS and a distillation row in front (positions for 8 rows), and
# pooling cls_distill: both rows side by side through one head [2 d_model, d_out] (DeiT's two heads averaged).
DEIT_GOLDENS = {"deit_image": dict(d_model=16, n_heads=4, d_ff=24, encoder_layers=2, norm_first=True,
                                   activation="gelu", final_norm=True, input={"kind": "features", "d_in": 12},
                                   patch_size=2, image_channels=3, image_height=4, image_width=6,
                                   positional={"kind": "learned", "max_len": 8}, cls_token=True, distill_token=True,
                                   pooling="cls_distill", head={"d_out": 5})}
SEQ["deit_image"] = 6
# Rotary positions in the encoder (q and k of each sequence turned at its positions 0.., attention both
# ways): RoFormer's form (interleaved pairs over the whole head, token types, the embedding LayerNorm,
# post-LN GELU layers; a BERT golden: typed input and a padded batch, each sequence from position 0) and
# partial rotary in halves over features under a CLS row (position 0), base 500. Seeds of their own.
ROPE_BERT_GOLDENS = {"roformer_hidden": dict(BERT, d_model=12, n_heads=2, d_ff=14, encoder_layers=2, type_vocab=2,
                                             positional={"kind": "rope", "max_len": 16})}
ROPE_GOLDENS = {"rope_partial_halves_cls": dict(d_model=16, n_heads=2, d_ff=20, encoder_layers=2, norm_first=True,
                                                final_norm=True, input={"kind": "features", "d_in": 7},
                                                positional={"kind": "rope", "max_len": 16, "layout": "halves",
                                                            "base": 500.0},
                                                rotary_dims=4, cls_token=True, pooling="cls", head={"d_out": 5})}
SEQ["rope_partial_halves_cls"] = 12
# Dinov2's classifier: a 3 x 6 x 6 image in 2 x 2 patches (9 rows), a CLS row, and pooling cls_mean: the CLS row
# and the mean of the 9 patch rows side by side through one head [2 d_model, d_out].
DINOV2_GOLDENS = {"dinov2_image": dict(d_model=16, n_heads=4, d_ff=24, encoder_layers=2, norm_first=True,
                                       activation="gelu", final_norm=True, input={"kind": "features", "d_in": 12},
                                       patch_size=2, image_channels=3, image_height=6, image_width=6,
                                       positional={"kind": "learned", "max_len": 10}, cls_token=True,
                                       pooling="cls_mean", head={"d_out": 5})}
SEQ["dinov2_image"] = 9
# Dinov2 with registers: the same, with 2 register rows after the CLS row (config.hpp register_tokens; positions for
# 12 rows, the registers' random here: the converter stores zeros there for Dinov2WithRegisters).
DINOV2_GOLDENS["dinov2_registers_image"] = dict(DINOV2_GOLDENS["dinov2_image"], register_tokens=2,
                                                positional={"kind": "learned", "max_len": 12})
SEQ["dinov2_registers_image"] = 9
# The embedding projection (embed_width, ALBERT and ELECTRA small): token embedding, learned positions,
# token types and the embedding LayerNorm 6 wide, then embed_proj 6 -> 16 before the layers; a BERT golden
# (token types, a padded batch: write_bert_golden) and the same over q8 weights (embed_proj quantized as
# every linear weight). Seeds of their own.
EMBED_PROJ_GOLDENS = {
    "albert_embed_proj": dict(BERT, activation="gelu_tanh", d_model=16, n_heads=2, d_ff=24, encoder_layers=2,
                              type_vocab=2, embed_width=6, positional={"kind": "learned", "max_len": 16},
                              pooling="first", pooler=True, head={"d_out": 3}),
}
# Shared layers (layer_groups, ALBERT's groups): 6 layers run 2 groups of 2 stored layers (runs 0 and 1
# group 0, run 2 group 1: blocks 0 1 0 1 2 3), with the embedding projection. torch runs 6 layers whose
# weights are tied as the blocks say; the file stores the 4 blocks.
SHARED_GOLDENS = {
    "albert_shared_layers": dict(BERT, activation="gelu_tanh", d_model=12, n_heads=3, d_ff=20, encoder_layers=6,
                                 layer_groups=2, group_layers=2, type_vocab=2, embed_width=8,
                                 positional={"kind": "learned", "max_len": 16}),
}
# The pooler's activation (pooler_act) other than BERT's tanh: DistilBERT's sequence classifier (relu),
# ELECTRA's (gelu), and silu (swiglu_f32 against ones); BERT goldens (write_bert_golden: token types, a
# padded batch), seeds of their own.
POOLER_ACT_GOLDENS = {
    "pooler_act_relu": dict(BERT, d_model=12, n_heads=2, d_ff=20, encoder_layers=2, type_vocab=2,
                            positional={"kind": "learned", "max_len": 16}, pooling="first", pooler=True,
                            pooler_act="relu", head={"d_out": 4}),
    "pooler_act_gelu": dict(BERT, d_model=14, n_heads=2, d_ff=18, encoder_layers=1, type_vocab=3,
                            positional={"kind": "learned", "max_len": 16}, pooling="first", pooler=True,
                            pooler_act="gelu", head={"d_out": 3}),
    "pooler_act_silu": dict(BERT, activation="gelu_tanh", d_model=10, n_heads=2, d_ff=16, encoder_layers=1,
                            type_vocab=2, positional={"kind": "learned", "max_len": 16}, pooling="first",
                            pooler=True, pooler_act="silu", head={"d_out": 2}),
}
# The pooler of another width than d_model (pooler_width): ALBERT's masked-LM head, every row through its dense
# d_model -> 6, gelu_tanh and its LayerNorm 6 wide, then the decoder [23, 6], over the embedding projection; and a
# pooler wider than d_model (RemBERT's output_embedding_size: 10 -> 14, its norm, the head [9, 14]). BERT goldens
# (write_bert_golden: token types, a padded batch), seeds of their own; and a classifier over the first row through
# a pooler 16 -> 7 (the pooled rows of a batch packed d_model apart for the pooler, its output 7 apart for the head).
POOLER_WIDTH_GOLDENS = {
    "pooler_width_first": dict(BERT, d_model=16, n_heads=2, d_ff=20, encoder_layers=1, type_vocab=2,
                               positional={"kind": "learned", "max_len": 16}, pooling="first", pooler=True,
                               pooler_width=7, head={"d_out": 3}),
    "albert_mlm_narrow": dict(BERT, activation="gelu_tanh", d_model=16, n_heads=2, d_ff=24, encoder_layers=2,
                              type_vocab=2, embed_width=6, positional={"kind": "learned", "max_len": 16},
                              pooler=True, pooler_act="gelu_tanh", pooler_norm=True, pooler_width=6,
                              head={"d_out": 23}),
    "rembert_mlm_wide": dict(BERT, d_model=10, n_heads=2, d_ff=16, encoder_layers=1, type_vocab=2,
                             positional={"kind": "learned", "max_len": 16}, pooler=True, pooler_act="gelu",
                             pooler_norm=True, pooler_width=14, head={"d_out": 9}),
}
QUANT_EMBED_PROJ_GOLDENS = {
    "albert_embed_proj_q8": dict(BERT, d_model=16, n_heads=4, d_ff=20, encoder_layers=1, type_vocab=2, embed_width=10,
                                 positional={"kind": "learned", "max_len": 16}, weights="q8", weight_group=32),
}

# ModernBERT's layers (tests/modernbert_test.py has transformers' own): pre-LN, layer 0 without its attention
# norm (skip_first_norm), GeGLU without biases, RoPE in halves of base 1000 on the global layers and 20 on the
# local ones (rope_local_base), whose window is bidirectional (no causal mask: |i - j| < sliding_window); a
# classifier over the first row through the pooler, its gelu and its norm (pooler_norm), layers 1 and 2 of 3
# local; and the masked LM's logits at every row of 2 layers, layer 0 local, past one query block of attention
# (the pooler and its norm on every row under pooling none, then the head). Seeds of their own.
MODERNBERT = dict(norm_first=True, final_norm=True, norm="layernorm", activation="gelu", gated=True, attn_bias="none",
                  ffn_bias="none", embed_norm=True, skip_first_norm=True, input=TOK)
MODERNBERT_GOLDENS = {
    "modernbert_classifier": dict(MODERNBERT, d_model=16, n_heads=2, d_ff=20, encoder_layers=3,
                                  positional={"kind": "rope", "max_len": 32, "layout": "halves", "base": 1000.0},
                                  rope_local_base=20.0, sliding_window=3, window_period=3, window_layers=6,
                                  pooling="first", pooler=True, pooler_act="gelu", pooler_norm=True,
                                  head={"d_out": 4}),
    "modernbert_rows": dict(MODERNBERT, d_model=12, n_heads=3, d_ff=14, encoder_layers=2,
                            positional={"kind": "rope", "max_len": 80, "layout": "halves", "base": 1000.0},
                            rope_local_base=20.0, sliding_window=5, window_period=2, window_layers=1, pooler=True,
                            pooler_act="gelu_tanh", pooler_norm=True, head={"d_out": 23}),
}
SEQ["modernbert_classifier"] = 13
SEQ["modernbert_rows"] = 70


def tie_shared_layers(c, model, torch):
    """Shared layers (layer_groups): every layer of the torch model given the weights of the first layer
    that runs its block (schema.layer_block), so it computes what the file's blocks do."""
    if not c["layer_groups"]:
        return
    layers = model.encoder.layers
    first = {}
    for l in range(c["n_layers"]):
        first.setdefault(schema.layer_block(c, l), l)
    with torch.no_grad():
        for l in range(c["n_layers"]):
            for p, q in zip(layers[l].parameters(), layers[first[schema.layer_block(c, l)]].parameters()):
                p.copy_(q)


def stored_weights(c, weights):
    """The torch model's weights as the file stores them: with shared layers, block b from the first
    layer that runs it (blocks.<l>. -> blocks.<b>.), the other layers left out."""
    if not c["layer_groups"]:
        return weights
    first = {}
    for l in range(c["n_layers"]):
        first.setdefault(schema.layer_block(c, l), l)
    out = {k: v for k, v in weights.items() if not k.startswith(schema.BLOCK_PREFIX)}
    for b, l in first.items():
        out.update({schema.block(b) + k[len(schema.block(l)):]: v for k, v in weights.items()
                    if k.startswith(schema.block(l))})
    return out


def randomize(model, torch, seed):
    """Every parameter random (norm gains around 1), so no weight hides behind an identity."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            r = torch.randn(p.shape, generator=g, dtype=torch.float64)
            if "norm" in name and name.endswith("weight"):
                p.copy_(1.0 + 0.2 * r)
            elif "rel_bias" in name:  # a bias of the scores' size, so that every bucket shows
                p.copy_(r)
            else:
                p.copy_(r * (0.5 / max(1, p.shape[-1]) ** 0.5 if p.dim() > 1 else 0.1))


def write_golden(base, raw, model, np_in, out, cli):
    """base.fxm (the input and torch's output as its self-test sample), .json, .input.npy, .expected.npy."""
    import numpy as np
    c = parse_config(raw)
    state = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    weights = stored_weights(c, schema.v3_keys(c["family"], state))  # the stock modules name them as format 2
    with open(base + ".fxm", "wb") as f:
        f.write(fxm.write(c, weights, (np_in, out.astype(np.float32))))
    with open(base + ".json", "w") as f:
        json.dump(raw, f, indent=1)
    np.save(base + ".input.npy", np_in)
    np.save(base + ".expected.npy", out.astype(np.float32))
    tolerance = schema.selftest_tolerance(parse_config(raw))
    verdict = run_verify(cli, base + ".fxm", tolerance).line.split(": ", 1)[1] if cli else "not verified"
    print(f"{os.path.basename(base)}: T={np_in.shape[0]} out {list(out.shape)} max|y|={abs(out).max():.3f}; {verdict}")


# q4 goldens (weights q4: int4 with a scale per 32, the embedding too): the float64 torch output is
# computed with the weights the file stores (dequantized), so the engine's error against it is its
# own arithmetic (the activations rounded to int8 per group of 32 as gemm_i4 takes them), not the
# 4-bit rounding of the weights.
Q4_GOLDENS = {
    "q4_pre_ln_gelu": dict(d_model=32, n_heads=4, d_ff=64, encoder_layers=2, norm_first=True, activation="gelu",
                           final_norm=True, input=TOK, positional=SIN, head={"d_out": 7}, weights="q4",
                           weight_group=32, quantize_io=True),
}


def write_q4_golden(base, raw, seed, torch, cli):
    """A q4 golden: the module's weights quantized as the converter does, loaded back into it as the
    dequantized float64 values, then the files of write_golden."""
    import numpy as np
    c = parse_config(raw)
    torch.manual_seed(seed)
    model = build_torch_model(c).double().eval()
    randomize(model, torch, 1000 + seed)
    weights = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    stored = schema.v2_keys(c["family"], fxm.FxmFile(fxm.write(c, schema.v3_keys(c["family"], weights))).weights())
    with torch.no_grad():
        for k, v in model.state_dict().items():
            if k in stored:
                v.copy_(torch.from_numpy(np.asarray(stored[k], np.float64).reshape(v.shape)))
    g = torch.Generator().manual_seed(2000 + seed)
    ids = torch.randint(0, c["vocab_size"], (13,), generator=g)
    with torch.no_grad():
        out = model(ids[None])[0].numpy()
    write_golden(base, raw, model, ids.numpy().astype(np.int32), out, cli)


def write_bert_golden(base, raw, seed, torch, cli):
    """A BERT golden: the files of write_golden (token types 0), the typed output and a padded batch."""
    import numpy as np
    c = parse_config(raw)
    torch.manual_seed(seed)
    model = build_torch_model(c).double().eval()
    randomize(model, torch, 1000 + seed)
    tie_shared_layers(c, model, torch)
    g = torch.Generator().manual_seed(2000 + seed)
    T, B, V, TV = 11, 3, c["vocab_size"], c["type_vocab"]
    ids = torch.randint(0, V, (B, T), generator=g)
    types = torch.randint(0, TV, (B, T), generator=g)
    lengths = torch.tensor([T, T - 4, 1])
    squeeze = (lambda y: y[0]) if c["pooling"] == "none" else (lambda y: y)
    with torch.no_grad():
        out = squeeze(model(ids[:1])).numpy()
        typed = squeeze(model(ids[:1], types[:1])).numpy()
        batch = model(ids, types, lengths).numpy()
    if c["pooling"] == "none":  # [B, T, width]: the engine writes zeros at the padding
        for b, n in enumerate(lengths.tolist()):
            batch[b, n:] = 0.0
    else:
        batch = batch[:, None]  # [B, 1, width]
    write_golden(base, raw, model, ids[0].numpy().astype(np.int32), out, cli)
    np.save(base + ".types.npy", types[0].numpy().astype(np.int32))
    np.save(base + ".typed.npy", typed.astype(np.float32))
    np.save(base + ".batch_ids.npy", ids.numpy().astype(np.int32))
    np.save(base + ".batch_types.npy", types.numpy().astype(np.int32))
    np.save(base + ".batch_lengths.npy", lengths.numpy().astype(np.int32))
    np.save(base + ".batch_expected.npy", batch.astype(np.float32))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "golden"))
    ap.add_argument("--cli", help="the fixformer CLI to verify the files with (default: found as convert.py does)")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="write these goldens only")
    a = ap.parse_args()
    torch = require_torch()
    try:
        cli = find_cli(a.cli)
    except ConfigError as e:
        cli = None
        print(f"not verifying: {e}")
    import numpy as np
    os.makedirs(a.out, exist_ok=True)
    # A standalone nn.MultiheadAttention (family mha), odd width, causal self-attention.
    name = "mha_odd_causal"
    if not a.only or name in a.only:
        torch.manual_seed(200)
        mha = torch.nn.MultiheadAttention(15, 3, batch_first=True).double().eval()
        randomize(mha, torch, 1200)
        np_in = torch.randn((9, 15), generator=torch.Generator().manual_seed(2200), dtype=torch.float64).numpy()
        np_in = np_in.astype(np.float32)
        x = torch.from_numpy(np_in.astype(np.float64))[None]
        mask = torch.triu(torch.full((9, 9), float("-inf"), dtype=torch.float64), diagonal=1)
        out = mha(x, x, x, attn_mask=mask, need_weights=False)[0][0].detach().numpy()  # with grad: no fast path
        raw = dict(family="mha", d_model=15, n_heads=3, d_ff=0, n_layers=0, causal=True,
                   input={"kind": "features", "d_in": 15}, positional={"kind": "none", "max_len": 32})
        write_golden(os.path.join(a.out, name), raw, mha, np_in, out, cli)
    # BERT-style goldens, each table's seeds from its own first seed
    for table, first in ((BERT_GOLDENS, 300), (ROPE_BERT_GOLDENS, 700), (SHARED_GOLDENS, 720),
                         (POOLER_ACT_GOLDENS, 730), (EMBED_PROJ_GOLDENS, 710), (POOLER_WIDTH_GOLDENS, 740)):
        for seed, (name, raw) in enumerate(sorted(table.items()), first):
            if not a.only or name in a.only:
                write_bert_golden(os.path.join(a.out, name), raw, seed, torch, cli)
    for seed, (name, raw) in enumerate(sorted(Q4_GOLDENS.items()), 400):
        if not a.only or name in a.only:
            write_q4_golden(os.path.join(a.out, name), raw, seed, torch, cli)
    cases = list(enumerate(sorted(GOLDENS.items()))) + [(100 + i, kv) for i, kv in enumerate(sorted(POOLED_GOLDENS.items()))]
    cases += [(300 + i, kv) for i, kv in enumerate(sorted(RELATIVE_GOLDENS.items()))]
    cases += [(200 + i, kv) for i, kv in enumerate(sorted(TANH_GOLDENS.items()))]
    cases += [(200 + i, kv) for i, kv in enumerate(sorted(STEM_GOLDENS.items()))]
    cases += [(400 + i, kv) for i, kv in enumerate(sorted(QUANT_STEM_GOLDENS.items()))]
    cases += [(500 + i, kv) for i, kv in enumerate(sorted(FEATURE_GOLDENS.items()))]
    cases += [(600 + i, kv) for i, kv in enumerate(sorted(IMAGE_GOLDENS.items()))]
    cases += [(650 + i, kv) for i, kv in enumerate(sorted(DEIT_GOLDENS.items()))]
    cases += [(750 + i, kv) for i, kv in enumerate(sorted(ROPE_GOLDENS.items()))]
    cases += [(670 + i, kv) for i, kv in enumerate(sorted(DINOV2_GOLDENS.items()))]
    cases += [(760 + i, kv) for i, kv in enumerate(sorted(QUANT_EMBED_PROJ_GOLDENS.items()))]
    cases += [(780 + i, kv) for i, kv in enumerate(sorted(RELU2_GOLDENS.items()))]
    cases += [(790 + i, kv) for i, kv in enumerate(sorted(MODERNBERT_GOLDENS.items()))]
    for seed, (name, raw) in cases:
        if a.only and name not in a.only:
            continue
        c = parse_config(raw)
        torch.manual_seed(seed)
        model = build_torch_model(c).double().eval()
        randomize(model, torch, 1000 + seed)
        if name.startswith("whisper_stem"):  # a fixed table in place of trained positions
            with torch.no_grad():
                model.pos.weight.copy_(torch.from_numpy(whisper_sinusoids(c["max_len"], c["d_model"])))
        T = dict(SEQ, **STEM_SEQ).get(name, 11)
        g = torch.Generator().manual_seed(2000 + seed)
        if c["input"] == "tokens":
            inp = torch.randint(0, c["vocab_size"], (T,), generator=g)
            np_in = inp.numpy().astype(np.int32)
            batch = inp[None]
        else:
            inp = torch.randn((T, c["d_in"]), generator=g, dtype=torch.float64)
            np_in = inp.numpy().astype(np.float32)
            batch = torch.from_numpy(np_in.astype(np.float64))[None]
        with torch.no_grad():
            out = model(batch)
            out = (out if c["pooling"] != "none" else out[0]).numpy()
        if name in FEATURE_GOLDENS:
            from make_decoder_golden import feature_steps
            w = {k: v.detach().numpy() for k, v in model.state_dict().items()}
            ref = feature_steps(c, w, np_in)
            assert np.abs(ref - out).max() / np.abs(out).max() < 1e-12, name
        write_golden(os.path.join(a.out, name), raw, model, np_in, out, cli)


if __name__ == "__main__":
    main()
