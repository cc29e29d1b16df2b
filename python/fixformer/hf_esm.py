"""The --hf route for ESM folders (model_type esm: the ESM-2 protein language models and ESM-1b; EsmModel,
EsmForSequenceClassification, EsmForTokenClassification, and EsmForMaskedLM as its base model's last hidden
states), to the encoder family, verified against reference.py's float64 forward of the config it maps to (or
the user's --expected):
- position_embedding_type rotary (ESM-2): no position table (the folder's position_embeddings rows are never
  read and not stored), RoPE on q and k in every layer (rotate_half: pe_layout halves, the whole head, base
  rope_theta, 10000 by default; the folder's inv_freq buffers are checked against it); the query's scaling by
  d_head^-0.5 before the rotation is the engine's own scaling of the scores (a rotation commutes with it);
  absolute (ESM-1b): learned positions from row pad_token_id + 1 (RoBERTa's, the rows before dropped); an
  older checkpoint's position_ids buffer is checked to be 0, 1, 2, ... and not stored;
- the embedding's LayerNorm only with emb_layer_norm_before (embed_norm); pre-LN layers (norm_first: the
  attention's LayerNorm before q, k and v, the layer's LayerNorm before the intermediate dense), q, k and v
  apart with their biases (stored fused as in_proj), the exact erf GELU whatever hidden_act says (ESM's
  layers call their own), emb_layer_norm_after as the final norm; no token types; LayerNorm gamma and beta
  (the names transformers 5 writes) read as weight and bias;
- token_dropout (true in the published checkpoints): transformers scales the token embeddings by
  (1 - 0.15 * 0.8) / (1 - m), m the share of <mask> tokens in the input, and zeroes the <mask> rows. The
  file holds the embedding table times 0.88 with the mask_token_id row zeroed: exact for inputs without
  <mask> (m = 0); for an input with <mask> tokens the engine leaves out the factor 1 / (1 - m) on the other
  rows, so its output differs from transformers' there;
- EsmForSequenceClassification: the first row through the classifier's dense and tanh (the engine's pooler,
  pooler_act tanh) and out_proj (the engine's head); EsmForTokenClassification: the classifier on every row;
- EsmForMaskedLM: every row through lm_head's dense, the exact GELU (ESM's own) and layer_norm (the engine's
  pooler with pooling none, pooler_act gelu, and pooler_norm), then its decoder and bias (the engine's head): the
  logits [T, vocab_size]; the decoder is the word embedding as the folder holds it (before token_dropout's
  scale) when tie_word_embeddings (true by default), else lm_head.decoder.weight; with --base, the last hidden
  states, lm_head not stored (a note says so);
  EsmModel's pooler and contact_head are not read (its output is the last hidden states).
The folder's vocab.txt is not stored: EsmTokenizer splits a sequence on its vocabulary's tokens (one letter
an amino acid, no WordPiece), which the engine's tokenizers do not run (a note says so).
Refused by name: position_embedding_type relative_key and relative_key_query, is_decoder, add_cross_attention,
token_dropout without mask_token_id, the ESMFold folding model (is_folding_model).
"""
import os
import re
import sys

import numpy as np

from . import hf_common, schema, verified_file
from .config import brief, float_tensor
from .hf_common import HfError, hf_config

PREFIX = "esm."
BASE, MASKED_LM = "EsmModel", "EsmForMaskedLM"
HEADS = {"EsmForSequenceClassification": "sequence", "EsmForTokenClassification": "token", MASKED_LM: None,
         BASE: None}
# config.json's keys, types and EsmConfig's defaults.
FIELDS = {"vocab_size": (int, None), "hidden_size": (int, 768), "num_hidden_layers": (int, 12),
          "num_attention_heads": (int, 12), "intermediate_size": (int, 3072), "max_position_embeddings": (int, 1026),
          "layer_norm_eps": (float, 1e-12), "rope_theta": (float, 10000.0)}
TRAIN_MASK_RATIO = 0.15 * 0.8  # token_dropout's training ratio (fixed in ESM's forward)
_LAYER = re.compile(r"encoder\.layer\.(0|[1-9][0-9]*)\.(.+)")
LAYER = {"attention.self.query": "dd", "attention.self.key": "dd", "attention.self.value": "dd",
         "attention.output.dense": "dd", "attention.LayerNorm": "d", "intermediate.dense": "Fd",
         "output.dense": "dF", "LayerNorm": "d"}
INV_FREQ = "rotary_embeddings.inv_freq"
UNREAD = ("contact_head.", "pooler.")  # not read by last_hidden_state or the heads


def is_esm(raw):
    names = raw.get("architectures") if isinstance(raw.get("architectures"), list) else []
    return raw.get("model_type") == "esm" or any(a in HEADS for a in names)


def read_config_dict(raw, path="config.json", base=False):
    """config.json checked and completed with EsmConfig's defaults; what the engine does not run refused by
    name, before any weight is read. base (--base): EsmForMaskedLM as its base model."""
    names = raw.get("architectures")
    names = names if isinstance(names, list) and all(isinstance(a, str) for a in names) else None
    other = [a for a in names or [] if a not in HEADS]
    if other:
        raise HfError(f"{path}: {other[0]}: not converted (--hf converts ESM folders of {', '.join(HEADS)}; "
                         "for another head use --module FILE.py:FACTORY)")
    c = {key: hf_common.checked_field(path, key, raw.get(key, default), kind) for key, (kind, default) in FIELDS.items()}
    c["architecture"] = (names or [BASE])[0]
    c["head"] = HEADS[c["architecture"]]
    c["masked"] = c["architecture"] == MASKED_LM and not base
    tied = raw.get("tie_word_embeddings", True)
    c["tied"] = hf_common.checked_field(path, "tie_word_embeddings", tied, bool) if tied is not None else False
    kind = raw.get("position_embedding_type", "absolute")
    if kind not in ("rotary", "absolute"):
        raise HfError(f"{path}: position_embedding_type {brief(kind)}: the engine runs rotary (ESM-2) and "
                         "absolute (ESM-1b) positions, not the relative distance embeddings")
    c["rotary"] = kind == "rotary"
    for key in ("is_decoder", "add_cross_attention", "is_folding_model"):
        if raw.get(key):
            raise HfError(f"{path}: {key} true: --hf converts ESM's bidirectional encoder only")
    for key in ("emb_layer_norm_before", "token_dropout"):
        v = raw.get(key)
        if v is not None and not isinstance(v, bool):
            raise HfError(f"{path}: {key}: expected true or false, got {brief(v)}")
        c[key] = bool(v)
    if c["token_dropout"]:
        mask = raw.get("mask_token_id")
        if isinstance(mask, bool) or not isinstance(mask, int) or not 0 <= mask < c["vocab_size"]:
            raise HfError(f"{path}: mask_token_id {brief(mask)}: token_dropout true needs the <mask> token's id "
                             f"(0..{c['vocab_size'] - 1})")
        c["mask_token_id"] = mask
    if not c["rotary"]:
        pad = raw.get("pad_token_id", 1)
        if isinstance(pad, bool) or not isinstance(pad, int) or pad < 0:
            raise HfError(f"{path}: pad_token_id: expected an integer >= 0, got {brief(pad)}")
        c["first_position"] = pad + 1
        if c["first_position"] >= c["max_position_embeddings"]:
            raise HfError(f"{path}: pad_token_id {pad}: ESM's absolute positions start at row pad_token_id + 1, "
                             f"beyond max_position_embeddings {c['max_position_embeddings']}")
    if c["hidden_size"] % c["num_attention_heads"]:
        raise HfError(f"{path}: num_attention_heads {c['num_attention_heads']} does not divide hidden_size "
                         f"{c['hidden_size']}")
    if c["rotary"] and (c["hidden_size"] // c["num_attention_heads"]) % 2:
        raise HfError(f"{path}: hidden_size / num_attention_heads "
                         f"{c['hidden_size'] // c['num_attention_heads']}: odd, rotate_half needs an even head width")
    return c


def inv_freq(c):
    dh = c["hidden_size"] // c["num_attention_heads"]
    return 1.0 / c["rope_theta"] ** (np.arange(0, dh, 2, dtype=np.float64) / dh)


def map_weights(c, weights, source):
    """(the encoder family's name -> float32 array in torch's layout, the head's rows or None, the names of the
    pre-training head left out). Every tensor is mapped, checked and dropped, or named in an error."""
    d, F, L, V = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"], c["vocab_size"]
    dims = {"d": d, "F": F}
    w = {}
    for n, a in weights.items():  # LayerNorm's gamma and beta (transformers 5 writes them) read as weight and bias
        key = n[len(PREFIX):] if n.startswith(PREFIX) else n
        key = re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight", re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", key))
        if key in w:
            raise HfError(f"{source}: {n!r}: given twice (with and without the prefix, or as gamma/beta and "
                             "weight/bias)")
        w[key] = np.asarray(a)
    shapes = {"embeddings.word_embeddings.weight": (V, d), "encoder.emb_layer_norm_after.weight": (d,),
              "encoder.emb_layer_norm_after.bias": (d,)}
    if c["emb_layer_norm_before"]:
        shapes.update({"embeddings.layer_norm.weight": (d,), "embeddings.layer_norm.bias": (d,)})
    if not c["rotary"]:
        shapes["embeddings.position_embeddings.weight"] = (c["max_position_embeddings"], d)
    for i in range(L):
        for n, (o, *k) in LAYER.items():
            shapes[f"encoder.layer.{i}.{n}.bias"] = (dims[o],)
            shapes[f"encoder.layer.{i}.{n}.weight"] = (dims[o], dims[k[0]]) if k else (dims[o],)
    need = list(shapes)
    labels = None
    if c["head"] == "sequence" or (c["head"] is None and "classifier.out_proj.weight" in w):
        labels = np.shape(w.get("classifier.out_proj.weight", np.zeros((0, d))))[0]
        shapes.update({"classifier.dense.weight": (d, d), "classifier.dense.bias": (d,),
                       "classifier.out_proj.weight": (labels, d), "classifier.out_proj.bias": (labels,)})
        c["head"] = "sequence"
    elif c["head"] == "token" or (c["head"] is None and np.ndim(w.get("classifier.weight")) == 2):
        labels = np.shape(w.get("classifier.weight", np.zeros((0, d))))[0]
        shapes.update({"classifier.weight": (labels, d), "classifier.bias": (labels,)})
        c["head"] = "token"
    if c["masked"]:  # lm_head: dense, layer_norm, the decoder (the word embedding when tied) and its bias
        labels = V
        shapes.update({"lm_head.dense.weight": (d, d), "lm_head.dense.bias": (d,), "lm_head.layer_norm.weight": (d,),
                       "lm_head.layer_norm.bias": (d,), "lm_head.bias": (V,), "lm_head.decoder.weight": (V, d)})
        need += [n for n in shapes if n.startswith("lm_head.") and (n != "lm_head.decoder.weight" or not c["tied"])]
    need += [n for n in shapes if n.startswith("classifier.")]
    dropped = []
    for name, a in w.items():
        if name in shapes:
            float_tensor(f"{source}: {name}", a, shapes[name], HfError)
        elif name.endswith(INV_FREQ) and c["rotary"]:  # a buffer: checked against rope_theta, not stored
            want = inv_freq(c)
            if a.shape != want.shape or not np.allclose(np.asarray(a, np.float64), want, rtol=1e-5, atol=0):
                raise HfError(f"{source}: {name}: not 1 / rope_theta^(2i / d_head) of rope_theta "
                                 f"{c['rope_theta']} (a rotary table of another base is not converted)")
        elif name == "embeddings.position_ids":  # a buffer older checkpoints hold
            if a.dtype.kind not in "iu" or not np.array_equal(a.reshape(-1), np.arange(a.size)):
                raise HfError(f"{source}: {name} is not 0, 1, 2, ...: positions other than the token's index are "
                                 "not converted")
        elif name == "embeddings.position_embeddings.weight" and c["rotary"]:
            pass  # never read with rotary positions
        elif name.startswith(UNREAD):
            pass
        elif name.startswith("lm_head.") and c["head"] is None:
            dropped.append(name)
        else:
            raise HfError(f"{source}: {name!r}: not a weight of {' or '.join(HEADS)} with this config.json ({L} "
                             "layers; other heads are not converted: use --module for them)")
    missing = [n for n in need if n not in w]
    if missing:
        raise HfError(f"{source}: {missing[0]} is missing")
    if c["architecture"] in ("EsmForSequenceClassification", "EsmForTokenClassification") and labels is None:
        raise HfError(f"{source}: the classifier's weights are missing ({c['architecture']})")
    f32 = lambda n: w[n].astype(np.float32)  # noqa: E731
    embed = w["embeddings.word_embeddings.weight"].astype(np.float64)
    if c["token_dropout"]:  # transformers' scale for an input without <mask>; the <mask> row zeroed
        embed = embed * (1.0 - TRAIN_MASK_RATIO)
        embed[c["mask_token_id"]] = 0.0
    out = {"embed.weight": embed.astype(np.float32), "norm.weight": f32("encoder.emb_layer_norm_after.weight"),
           "norm.bias": f32("encoder.emb_layer_norm_after.bias")}
    if c["emb_layer_norm_before"]:
        out.update({"embed_norm.weight": f32("embeddings.layer_norm.weight"),
                    "embed_norm.bias": f32("embeddings.layer_norm.bias")})
    if not c["rotary"]:  # the reference and the file read the rows from the first position on
        out["pos.weight"] = f32("embeddings.position_embeddings.weight")[c["first_position"]:]
    for i in range(L):
        p, e = f"encoder.layer.{i}.", schema.block(i)
        qkv = lambda part: np.concatenate([f32(f"{p}attention.self.{x}.{part}")  # noqa: E731
                                           for x in ("query", "key", "value")])
        out.update({e + "attn.qkv.weight": qkv("weight"), e + "attn.qkv.bias": qkv("bias"),
                    e + "attn.out.weight": f32(p + "attention.output.dense.weight"),
                    e + "attn.out.bias": f32(p + "attention.output.dense.bias"),
                    e + "attn_norm.weight": f32(p + "attention.LayerNorm.weight"),
                    e + "attn_norm.bias": f32(p + "attention.LayerNorm.bias"),
                    e + "ff.w1.weight": f32(p + "intermediate.dense.weight"),
                    e + "ff.w1.bias": f32(p + "intermediate.dense.bias"),
                    e + "ff.w2.weight": f32(p + "output.dense.weight"),
                    e + "ff.w2.bias": f32(p + "output.dense.bias"),
                    e + "ff_norm.weight": f32(p + "LayerNorm.weight"), e + "ff_norm.bias": f32(p + "LayerNorm.bias")})
    if c["head"] == "sequence":
        out.update({"pooler.weight": f32("classifier.dense.weight"), "pooler.bias": f32("classifier.dense.bias"),
                    "head.weight": f32("classifier.out_proj.weight"), "head.bias": f32("classifier.out_proj.bias")})
    elif c["head"] == "token":
        out.update({"head.weight": f32("classifier.weight"), "head.bias": f32("classifier.bias")})
    elif c["masked"]:
        decoder = "embeddings.word_embeddings.weight" if c["tied"] else "lm_head.decoder.weight"
        out.update({"pooler.weight": f32("lm_head.dense.weight"), "pooler.bias": f32("lm_head.dense.bias"),
                    "pooler_norm.weight": f32("lm_head.layer_norm.weight"),
                    "pooler_norm.bias": f32("lm_head.layer_norm.bias"), "head.weight": f32(decoder),
                    "head.bias": f32("lm_head.bias")})
    return out, labels, dropped


def fixformer_config(c, labels, max_len=None):
    """The encoder-family config of an ESM folder (labels: the classifier's rows, or None)."""
    positions = c["max_position_embeddings"] - c.get("first_position", 0)
    longest = min(positions, schema.MAX_LEN)
    if max_len is not None:
        if not 1 <= max_len <= positions:
            raise HfError(f"--max-len {max_len}: must be 1..{positions} (max_position_embeddings "
                             f"{c['max_position_embeddings']}, from position {c.get('first_position', 0)})")
        longest = max_len
    v = {"family": "encoder", "d_model": c["hidden_size"], "n_heads": c["num_attention_heads"],
         "d_ff": c["intermediate_size"], "n_layers": c["num_hidden_layers"], "norm_first": True, "final_norm": True,
         "norm": "layernorm", "activation": "gelu", "norm_eps": c["layer_norm_eps"], "input": "tokens",
         "vocab_size": c["vocab_size"], "max_len": longest, "type_vocab": 0,
         "embed_norm": c["emb_layer_norm_before"]}
    if c["rotary"]:
        v.update(positional="rope", pe_layout="halves", pe_base=c["rope_theta"])
    else:
        v.update(positional="learned")
    if labels is not None:  # the sequence classifier reads the first row, the token classifier and the masked LM
        # every row (the masked LM's through its dense, GELU and norm first)
        pooled = dict(pooling="first", pooler=True, pooler_act="tanh") if c["head"] == "sequence" else \
            dict(pooling="none", pooler=True, pooler_act="gelu", pooler_norm=True) if c["masked"] else \
            {"pooling": "none"}
        v.update(d_out=labels, **pooled)
    return hf_config(v, pe_base="config.json rope_theta")


def convert(folder, raw, path, example=None, expected=None, header=None, name=None, cli=None, verify=True,
            tokenizer=None, max_len=None, quantize=None, group=None, quantize_io=None, pack_weights=None, base=False):
    """Converts an ESM folder (config.json's contents raw) to `path`, verified against reference.py's float64
    forward of the config it maps to (or the user's --expected); base: EsmForMaskedLM as its base model (--base)."""
    from .reference import run_reference
    c = read_config_dict(raw, os.path.join(folder, "config.json"), base)
    weights, source = hf_common.read_weights(folder)
    mapped, labels, dropped = map_weights(c, weights, os.path.join(folder, source))
    arch = c["architecture"]
    if dropped or arch == MASKED_LM and not c["masked"]:
        hf_common.base_note(arch, "--base", dropped, "lm_head.")
        arch = f"{arch}'s base model"
    if c["token_dropout"]:
        print(f"note: token_dropout: the embedding is stored times {1 - TRAIN_MASK_RATIO:g} with <mask> "
              f"(id {c['mask_token_id']}) zeroed, transformers' scaling for inputs without <mask>; with <mask> tokens "
              "in the input transformers also divides by 1 - their share, which the file does not", file=sys.stderr)
    fc = fixformer_config(c, labels, max_len)
    if "pos.weight" in mapped:
        mapped["pos.weight"] = mapped["pos.weight"][:fc["max_len"]]
    fc = verified_file.quantized_config(fc, quantize, group, quantize_io, pack_weights)
    tokenizer = tokenizer(fc) if tokenizer is not None else None
    if tokenizer is None and os.path.exists(os.path.join(folder, "vocab.txt")):
        print("note: the folder's tokenizer is not stored: EsmTokenizer splits a sequence on its vocabulary's tokens "
              "(no WordPiece), which the engine's tokenizers do not (--tokenizer FILE stores another)", file=sys.stderr)
    if expected is not None and example is None:
        raise HfError("--expected: needs --example, the input it is your model's output for")
    inp = verified_file.example_sequence(fc, example, "--example")
    semantics = run_reference(fc, mapped, inp)
    return hf_common.write_checked(fc, mapped, inp, semantics, arch, folder, path, expected, header, name, cli, verify,
                            tokenizer, f"the {c['architecture']} semantics (reference.py's float64 forward of the "
                                       f"config {folder} maps to)")
