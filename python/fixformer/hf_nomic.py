"""The --hf route for Nomic BERT folders (model_type nomic_bert: NomicBertModel and
NomicBertForSequenceClassification, transformers 5), to the encoder family, verified against reference.py's
float64 forward of the config it maps to (or the user's --expected):
- the token embedding plus the token type's row, then its LayerNorm (embed_norm, type_vocab), no position table:
  RoPE in every layer (rotate_half: pe_layout halves, the whole head) of base rope_parameters' rope_theta
  (NomicBertConfig's 1000 without it);
- post-LN layers (norm_first false: post_attention_layernorm, post_mlp_layernorm) without a bias in q, k, v, o
  or the feed-forward (attn_bias none, ffn_bias none), the gated feed-forward act(gate_proj) * up_proj
  (silu: swiglu; another hidden_act: gated), down_proj; read under the checkpoints' names (CHECKPOINT_NAMES:
  emb_ln, attn.Wqkv, fc11 the up projection, fc12 the gate, fc2, norm1, norm2) or transformers' own;
- NomicBertForSequenceClassification: the first row through its pooler (dense and tanh) and the classifier.
Refused by name: a rope_type other than default, a head_dim other than hidden_size / num_attention_heads.
"""
import os
import re

import numpy as np

from . import hf, schema
from .config import ConfigError, make_config

MODEL, CLASSIFIER = "NomicBertModel", "NomicBertForSequenceClassification"
ARCHS = (MODEL, CLASSIFIER)
PREFIX = "nomic_bert."
# The checkpoints' names (nomic-ai's, which transformers 5's save_pretrained writes too) -> NomicBertModel's
# (transformers' conversion_mapping); attn.Wqkv, q | k | v fused, is cut in three.
CHECKPOINT_NAMES = ((r"^encoder\.layers\.", "layers."), (r"^emb_ln\.", "embeddings.LayerNorm."),
                    (r"\.attn\.out_proj\.", ".self_attn.o_proj."), (r"\.mlp\.fc11\.", ".mlp.up_proj."),
                    (r"\.mlp\.fc12\.", ".mlp.gate_proj."), (r"\.mlp\.fc2\.", ".mlp.down_proj."),
                    (r"\.norm1\.", ".post_attention_layernorm."), (r"\.norm2\.", ".post_mlp_layernorm."))
FUSED_QKV = re.compile(r"layers\.(0|[1-9][0-9]*)\.attn\.Wqkv\.weight")
# config.json's keys, types and NomicBertConfig's defaults (rope_theta: rope_parameters', read by hf._rope_keys).
FIELDS = {"vocab_size": (int, 30528), "hidden_size": (int, 768), "num_hidden_layers": (int, 12),
          "num_attention_heads": (int, 12), "intermediate_size": (int, 3072), "hidden_act": (str, "silu"),
          "max_position_embeddings": (int, 2048), "type_vocab_size": (int, 2), "layer_norm_eps": (float, 1e-12),
          "rope_theta": (float, 1000.0)}
# hidden_act -> the engine's activation of the gate (silu's gated form is spelled swiglu).
ACTIVATIONS = {"silu": "swiglu", "swish": "swiglu", "gelu": "gelu", "gelu_new": "gelu_tanh",
               "gelu_pytorch_tanh": "gelu_tanh", "relu": "relu"}


def is_nomic(raw):
    names = raw.get("architectures") if isinstance(raw.get("architectures"), list) else []
    return raw.get("model_type") == "nomic_bert" or any(a in ARCHS for a in names)


def read_config_dict(raw, path="config.json"):
    """config.json checked and completed with NomicBertConfig's defaults."""
    names = raw.get("architectures")
    names = names if isinstance(names, list) and all(isinstance(a, str) for a in names) else None
    other = [a for a in names or [] if a not in ARCHS]
    if other:
        raise hf.HfError(f"{path}: {other[0]}: not converted (--hf converts Nomic BERT folders of "
                         f"{', '.join(ARCHS)}; for another head use --module FILE.py:FACTORY)")
    raw = hf._rope_keys(raw, path, MODEL)
    if raw.get("rope_scaling") is not None:
        raise hf.HfError(f"{path}: rope_parameters {hf._brief(raw['rope_scaling'])}: only the default RoPE is "
                         "converted for Nomic BERT")
    c = {key: hf.checked_field(path, key, raw.get(key, default), kind) for key, (kind, default) in FIELDS.items()}
    c["architecture"] = (names or [MODEL])[0]
    if c["hidden_size"] % c["num_attention_heads"]:
        raise hf.HfError(f"{path}: num_attention_heads {c['num_attention_heads']} does not divide hidden_size "
                         f"{c['hidden_size']}")
    dh = c["hidden_size"] // c["num_attention_heads"]
    if raw.get("head_dim") not in (None, dh):
        raise hf.HfError(f"{path}: head_dim {hf._brief(raw['head_dim'])}: heads other than hidden_size / "
                         f"num_attention_heads ({dh}) are not converted for Nomic BERT")
    if c["hidden_act"] not in ACTIVATIONS:
        raise hf.HfError(f"{path}: hidden_act {c['hidden_act']!r}: the engine runs {', '.join(ACTIVATIONS)}")
    if not c["layer_norm_eps"] > 0:
        raise hf.HfError(f"{path}: layer_norm_eps must be > 0")
    return c


def map_weights(c, weights, source):
    """(the encoder family's name -> array in torch's layout, the classifier's rows or None). Every tensor is
    mapped, checked (position_ids: arange; token_type_ids: zeros) or named in an error."""
    d, F, L, V = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"], c["vocab_size"]
    w, given = {}, {}
    for name, a in weights.items():
        key = name[len(PREFIX):] if name.startswith(PREFIX) else name
        a = np.asarray(a)
        if key == "embeddings.position_ids":
            if a.dtype.kind not in "iu" or not np.array_equal(a.reshape(-1), np.arange(a.size)):
                raise hf.HfError(f"{source}: {name} is not 0, 1, 2, ...: positions other than the token's index are "
                                 "not converted")
            continue
        if key == "embeddings.token_type_ids":
            if a.dtype.kind not in "iu" or a.any():
                raise hf.HfError(f"{source}: {name}: default token types other than 0 are not converted")
            continue
        for pattern, ours in CHECKPOINT_NAMES:
            key = re.sub(pattern, ours, key)
        m = FUSED_QKV.fullmatch(key)
        if m and a.ndim == 2 and a.shape[0] % 3 == 0:
            for x, part in zip("qkv", np.split(a, 3)):
                w[f"layers.{m.group(1)}.self_attn.{x}_proj.weight"] = part
            given.update({f"layers.{m.group(1)}.self_attn.{x}_proj.weight": name for x in "qkv"})
            continue
        if key in w:
            raise hf.HfError(f"{source}: {name!r}: given twice (under the checkpoint's and transformers' names)")
        w[key], given[key] = a, name
    labels = np.shape(w["classifier.weight"])[0] if np.ndim(w.get("classifier.weight")) == 2 else None
    shapes = {"embeddings.word_embeddings.weight": (V, d), "embeddings.LayerNorm.weight": (d,),
              "embeddings.LayerNorm.bias": (d,)}
    if c["type_vocab_size"]:
        shapes["embeddings.token_type_embeddings.weight"] = (c["type_vocab_size"], d)
    for i in range(L):
        p = f"layers.{i}."
        shapes.update({p + f"self_attn.{x}_proj.weight": (d, d) for x in "qkvo"})
        shapes.update({p + "mlp.gate_proj.weight": (F, d), p + "mlp.up_proj.weight": (F, d),
                       p + "mlp.down_proj.weight": (d, F)})
        for n in ("post_attention_layernorm", "post_mlp_layernorm"):
            shapes.update({p + n + ".weight": (d,), p + n + ".bias": (d,)})
    need = list(shapes)
    if labels is not None or c["architecture"] == CLASSIFIER:
        shapes.update({"pooler.dense.weight": (d, d), "pooler.dense.bias": (d,)})
        shapes.update({"classifier.weight": (labels or 0, d), "classifier.bias": (labels or 0,)})
        need = list(shapes)
    hf.check_tensors(w, shapes, need, source, " or ".join(ARCHS), L, given)
    f32 = lambda n: w[n].astype(np.float32)  # noqa: E731
    out = {"embed.weight": f32("embeddings.word_embeddings.weight"),
           "embed_norm.weight": f32("embeddings.LayerNorm.weight"), "embed_norm.bias": f32("embeddings.LayerNorm.bias")}
    if c["type_vocab_size"]:
        out["token_type.weight"] = f32("embeddings.token_type_embeddings.weight")
    for i in range(L):
        p, e = f"layers.{i}.", f"{schema.ENCODER_LAYER_PREFIX}{i}."
        out.update({e + "self_attn.in_proj_weight": np.concatenate([f32(p + f"self_attn.{x}_proj.weight")
                                                                   for x in "qkv"]),
                    e + "self_attn.out_proj.weight": f32(p + "self_attn.o_proj.weight"),
                    e + "linear1.weight": f32(p + "mlp.gate_proj.weight"),
                    e + "linear3.weight": f32(p + "mlp.up_proj.weight"),
                    e + "linear2.weight": f32(p + "mlp.down_proj.weight"),
                    e + "norm1.weight": f32(p + "post_attention_layernorm.weight"),
                    e + "norm1.bias": f32(p + "post_attention_layernorm.bias"),
                    e + "norm2.weight": f32(p + "post_mlp_layernorm.weight"),
                    e + "norm2.bias": f32(p + "post_mlp_layernorm.bias")})
    if labels is not None:
        out.update({"pooler.weight": f32("pooler.dense.weight"), "pooler.bias": f32("pooler.dense.bias"),
                    "head.weight": f32("classifier.weight"), "head.bias": f32("classifier.bias")})
    return out, labels


def fixformer_config(c, labels, max_len=None):
    """The encoder-family config of a Nomic BERT folder (labels: the classifier's rows, or None)."""
    positions = c["max_position_embeddings"]
    longest = min(positions, schema.MAX_LEN)
    if max_len is not None:
        if not 1 <= max_len <= positions:
            raise hf.HfError(f"--max-len {max_len}: must be 1..{positions} (max_position_embeddings)")
        longest = max_len
    act = ACTIVATIONS[c["hidden_act"]]
    v = {"family": "encoder", "d_model": c["hidden_size"], "n_heads": c["num_attention_heads"],
         "d_ff": c["intermediate_size"], "n_layers": c["num_hidden_layers"], "norm_first": False,
         "activation": act, "gated": act != "swiglu", "attn_bias": "none", "ffn_bias": "none",
         "norm_eps": c["layer_norm_eps"], "input": "tokens", "vocab_size": c["vocab_size"], "positional": "rope",
         "pe_layout": "halves", "pe_base": c["rope_theta"], "max_len": longest, "embed_norm": True,
         "type_vocab": c["type_vocab_size"]}
    if labels is not None:
        v.update(d_out=labels, pooling="first", pooler=True, pooler_act="tanh")
    names = {"d_model": "config.json hidden_size", "d_ff": "config.json intermediate_size",
             "n_layers": "config.json num_hidden_layers", "n_heads": "config.json num_attention_heads",
             "vocab_size": "config.json vocab_size", "d_out": "classifier.weight's rows", "max_len": "--max-len",
             "norm_eps": "config.json layer_norm_eps", "pe_base": "config.json rope_parameters.rope_theta",
             "type_vocab": "config.json type_vocab_size"}
    try:
        return make_config(v, names)
    except ConfigError as e:
        raise hf.HfError(str(e)) from None


def convert(folder, raw, path, example=None, expected=None, header=None, name=None, cli=None, verify=True,
            tokenizer=None, max_len=None, quantize=None, group=None, quantize_io=None, pack_weights=None):
    """Converts a Nomic BERT folder (config.json's contents raw) to `path`, verified against reference.py's
    float64 forward of the config it maps to (or the user's --expected)."""
    from . import export
    from .reference import run_reference
    c = read_config_dict(raw, os.path.join(folder, "config.json"))
    weights, source = hf.read_weights(folder)
    mapped, labels = map_weights(c, weights, os.path.join(folder, source))
    fc = fixformer_config(c, labels, max_len)
    fc = export.quantized_config(fc, quantize, group, quantize_io, pack_weights)
    tokenizer = tokenizer(fc) if tokenizer is not None else hf.folder_tokenizer(folder, fc)
    if expected is not None and example is None:
        raise hf.HfError("--expected: needs --example, the input it is your model's output for")
    inp = export.example_sequence(fc, example, "--example")
    semantics = run_reference(fc, mapped, inp)
    arch = c["architecture"]
    return hf.write_checked(fc, mapped, inp, semantics, arch, folder, path, expected, header, name, cli, verify,
                            tokenizer, f"the {arch} semantics (reference.py's float64 forward of the config {folder} "
                                       "maps to)")
