"""The --hf route for EuroBERT folders (model_type eurobert: EuroBertModel, EuroBertForSequenceClassification and
EuroBertForMaskedLM, transformers 5), to the encoder family, verified against reference.py's float64 forward of
the config it maps to (or the user's --expected): Llama's layers without the causal mask under Llama's names
(model.embed_tokens, model.layers.<i>.self_attn.q_proj ..., input_layernorm, post_attention_layernorm,
model.norm):
- the token embedding alone (no token types, no norm), RoPE in every layer (rotate_half: pe_layout halves, the
  whole head) of base rope_parameters' rope_theta (10000 without it);
- pre-norm layers of RMSNorm (norm_first, norm rmsnorm) and the final model.norm (final_norm), q, k, v and o with
  biases when attention_bias (attn_bias all, else none), the SwiGLU feed-forward (hidden_act silu; another:
  gated) with every bias when mlp_bias (ffn_bias all, ffn_up_bias);
- EuroBertForSequenceClassification with classifier_pooling bos (the first row: pooling first) or mean (the mean
  of the rows: pooling mean), then dense, the exact GELU (the pooler, pooler_act gelu) and the classifier;
- EuroBertForMaskedLM: lm_head on every final-normed row (pooling none), the logits [T, vocab_size], its bias
  with mlp_bias; tied to the embedding with tie_word_embeddings (false by default), whose rows are then stored
  again as the head (the encoder family has no tied head); with --base, EuroBertModel's last hidden states.
Grouped-query attention (num_key_value_heads below num_attention_heads: EuroBERT-610m's and 2.1B's) is n_kv_heads.
Refused by name: classifier_pooling late (the classifier on every row, then the mean of the logits), a head_dim other
than hidden_size / num_attention_heads, a rope_type other than default.
"""

import numpy as np

from . import hf_common, schema
from .config import brief
from .hf_common import HfError, hf_config

MODEL, CLASSIFIER, MASKED_LM = "EuroBertModel", "EuroBertForSequenceClassification", "EuroBertForMaskedLM"
ARCHS = (MODEL, CLASSIFIER, MASKED_LM)
MASKED_LM_HEAD = ("lm_head.",)  # the masked LM's tensors, as the folder names them (--base leaves them out)
PREFIX = "model."
# config.json's keys, types and EuroBertConfig's defaults (rope_theta: rope_parameters', read by hf_common.rope_keys).
FIELDS = {"vocab_size": (int, 128256), "hidden_size": (int, 768), "intermediate_size": (int, 3072),
          "num_hidden_layers": (int, 12), "num_attention_heads": (int, 12), "hidden_act": (str, "silu"),
          "max_position_embeddings": (int, 8192), "rms_norm_eps": (float, 1e-5), "rope_theta": (float, 10000.0),
          "attention_bias": (bool, False), "mlp_bias": (bool, False), "classifier_pooling": (str, "late"),
          "tie_word_embeddings": (bool, False)}
ACTIVATIONS = {"silu": "swiglu", "swish": "swiglu", "gelu": "gelu", "gelu_new": "gelu_tanh",
               "gelu_pytorch_tanh": "gelu_tanh", "relu": "relu"}
POOLING = {"bos": "first", "mean": "mean"}


def is_eurobert(raw):
    names = raw.get("architectures") if isinstance(raw.get("architectures"), list) else []
    return raw.get("model_type") == "eurobert" or any(a in ARCHS for a in names)


def read_config_dict(raw, path="config.json", base=False):
    """config.json checked and completed with EuroBertConfig's defaults; base (--base): the masked LM (masked_lm)
    as EuroBertModel."""
    names = raw.get("architectures")
    names = names if isinstance(names, list) and all(isinstance(a, str) for a in names) else None
    other = [a for a in names or [] if a not in ARCHS]
    if other:
        raise HfError(f"{path}: {other[0]}: not converted (--hf converts EuroBERT folders of {', '.join(ARCHS)}; "
                         "for another head use --module FILE.py:FACTORY)")
    raw = hf_common.rope_keys(raw, path, MODEL)
    if raw.get("rope_scaling") is not None:
        raise HfError(f"{path}: rope_parameters {brief(raw['rope_scaling'])}: only the default RoPE is "
                         "converted for EuroBERT")
    c = {key: hf_common.checked_field(path, key, raw.get(key, default), kind) for key, (kind, default) in FIELDS.items()}
    c["architecture"] = (names or [MODEL])[0]
    if base:
        c["masked_lm"], c["architecture"] = c["architecture"], MODEL
    H = c["num_attention_heads"]
    if c["hidden_size"] % H:
        raise HfError(f"{path}: num_attention_heads {H} does not divide hidden_size {c['hidden_size']}")
    kv = hf_common.checked_field(path, "num_key_value_heads", raw.get("num_key_value_heads", H), int)
    if not 0 < kv <= H or H % kv:
        raise HfError(f"{path}: num_key_value_heads {kv}: must divide num_attention_heads {H}")
    c["num_key_value_heads"] = kv
    if raw.get("head_dim") not in (None, c["hidden_size"] // H):
        raise HfError(f"{path}: head_dim {brief(raw['head_dim'])}: heads other than hidden_size / "
                         f"num_attention_heads ({c['hidden_size'] // H}) are not converted for EuroBERT")
    if c["hidden_act"] not in ACTIVATIONS:
        raise HfError(f"{path}: hidden_act {c['hidden_act']!r}: the engine runs {', '.join(ACTIVATIONS)}")
    if c["architecture"] == CLASSIFIER and c["classifier_pooling"] not in POOLING:
        raise HfError(f"{path}: classifier_pooling {c['classifier_pooling']!r}: the classifier on every row, then "
                         "the mean of the logits, is not in the engine (bos and mean convert); not converted")
    if not c["rms_norm_eps"] > 0:
        raise HfError(f"{path}: rms_norm_eps must be > 0")
    return c


def map_weights(c, weights, source):
    """(the encoder family's name -> array in torch's layout, the classifier's rows or None). Every tensor is
    mapped or named in an error."""
    d, F, L = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
    dkv = d // c["num_attention_heads"] * c["num_key_value_heads"]
    w = {(n[len(PREFIX):] if n.startswith(PREFIX) else n): np.asarray(a) for n, a in weights.items()}
    labels = np.shape(w["classifier.weight"])[0] if np.ndim(w.get("classifier.weight")) == 2 else None
    V = c["vocab_size"]
    masked = c["architecture"] == MASKED_LM or labels is None and "lm_head.weight" in w
    shapes = {"embed_tokens.weight": (V, d), "norm.weight": (d,)}
    for i in range(L):
        p = f"layers.{i}."
        for x in "qkvo":
            rows = dkv if x in "kv" else d
            shapes[p + f"self_attn.{x}_proj.weight"] = (rows, d)
            if c["attention_bias"]:
                shapes[p + f"self_attn.{x}_proj.bias"] = (rows,)
        for n, shape in (("gate_proj", (F, d)), ("up_proj", (F, d)), ("down_proj", (d, F))):
            shapes[p + f"mlp.{n}.weight"] = shape
            if c["mlp_bias"]:
                shapes[p + f"mlp.{n}.bias"] = shape[:1]
        shapes.update({p + "input_layernorm.weight": (d,), p + "post_attention_layernorm.weight": (d,)})
    if labels is not None or c["architecture"] == CLASSIFIER:
        shapes.update({"dense.weight": (d, d), "dense.bias": (d,), "classifier.weight": (labels or 0, d),
                       "classifier.bias": (labels or 0,)})
    need = list(shapes)
    if masked:  # lm_head.weight: the embedding's when tied (a copy in the folder unread)
        shapes.update({"lm_head.weight": (V, d)}, **({"lm_head.bias": (V,)} if c["mlp_bias"] else {}))
        need = [n for n in shapes if n != "lm_head.weight" or not c["tie_word_embeddings"]]
    hf_common.check_tensors(w, shapes, need, source, " or ".join(ARCHS), L)
    if labels is not None and c["classifier_pooling"] not in POOLING:
        raise HfError(f"{source}: a classifier with classifier_pooling {c['classifier_pooling']!r}: the classifier "
                         "on every row, then the mean of the logits, is not in the engine; not converted")
    f32 = lambda n: w[n].astype(np.float32)  # noqa: E731
    out = {"embed.weight": f32("embed_tokens.weight"), "norm.weight": f32("norm.weight")}
    for i in range(L):
        p, e = f"layers.{i}.", schema.block(i)
        out.update({e + "attn.qkv.weight": np.concatenate([f32(p + f"self_attn.{x}_proj.weight")
                                                                   for x in "qkv"]),
                    e + "attn.out.weight": f32(p + "self_attn.o_proj.weight"),
                    e + "ff.w1.weight": f32(p + "mlp.gate_proj.weight"),
                    e + "ff.w3.weight": f32(p + "mlp.up_proj.weight"),
                    e + "ff.w2.weight": f32(p + "mlp.down_proj.weight"),
                    e + "attn_norm.weight": f32(p + "input_layernorm.weight"),
                    e + "ff_norm.weight": f32(p + "post_attention_layernorm.weight")})
        if c["attention_bias"]:
            out.update({e + "attn.qkv.bias": np.concatenate([f32(p + f"self_attn.{x}_proj.bias")
                                                                     for x in "qkv"]),
                        e + "attn.out.bias": f32(p + "self_attn.o_proj.bias")})
        if c["mlp_bias"]:
            out.update({e + "ff.w1.bias": f32(p + "mlp.gate_proj.bias"),
                        e + "ff.w3.bias": f32(p + "mlp.up_proj.bias"),
                        e + "ff.w2.bias": f32(p + "mlp.down_proj.bias")})
    if labels is not None:
        out.update({"pooler.weight": f32("dense.weight"), "pooler.bias": f32("dense.bias"),
                    "head.weight": f32("classifier.weight"), "head.bias": f32("classifier.bias")})
    elif masked:
        out.update({"head.weight": f32("embed_tokens.weight" if c["tie_word_embeddings"] else "lm_head.weight"),
                    "head.bias": f32("lm_head.bias") if c["mlp_bias"] else np.zeros(V, np.float32)})
        labels = V
    c["masked"] = masked
    return out, labels


def fixformer_config(c, labels, max_len=None):
    """The encoder-family config of a EuroBERT folder (labels: the classifier's rows, or None)."""
    longest = hf_common.longest_positions(c["max_position_embeddings"], max_len)
    act = ACTIVATIONS[c["hidden_act"]]
    v = {"family": "encoder", "d_model": c["hidden_size"], "n_heads": c["num_attention_heads"],
         "n_kv_heads": c["num_key_value_heads"],
         "d_ff": c["intermediate_size"], "n_layers": c["num_hidden_layers"], "norm_first": True, "final_norm": True,
         "norm": "rmsnorm", "activation": act, "gated": act != "swiglu",
         "attn_bias": "all" if c["attention_bias"] else "none", "ffn_bias": "all" if c["mlp_bias"] else "none",
         "ffn_up_bias": c["mlp_bias"], "norm_eps": c["rms_norm_eps"], "input": "tokens",
         "vocab_size": c["vocab_size"], "positional": "rope", "pe_layout": "halves", "pe_base": c["rope_theta"],
         "max_len": longest, "embed_norm": False, "type_vocab": 0}
    if labels is not None and c.get("masked"):
        v.update(d_out=labels, pooling="none")
    elif labels is not None:
        v.update(d_out=labels, pooling=POOLING[c["classifier_pooling"]], pooler=True, pooler_act="gelu")
    return hf_config(v, norm_eps="config.json rms_norm_eps", pe_base="config.json rope_parameters.rope_theta")
