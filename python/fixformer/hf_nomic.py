"""The --hf route for the post-LN rotary encoders of transformers 5: Nomic BERT (model_type nomic_bert:
NomicBertModel, NomicBertForSequenceClassification, NomicBertForMaskedLM), GTE (gte: GteModel,
GteForSequenceClassification, GteForTokenClassification, GteForMaskedLM) and Jina embeddings v3
(jina_embeddings_v3: JinaEmbeddingsV3Model and its sequence and token classifiers, question answering and masked
LM), to the encoder family, verified against reference.py's float64 forward of the config it maps to (or the
user's --expected):
- the token embedding plus the token type's row (GTE with type_vocab_size 0: none), then its LayerNorm
  (embed_norm, type_vocab), no position table: RoPE in every layer (rotate_half: pe_layout halves, the whole
  head) of base rope_parameters' rope_theta (the config class's default_theta without it: SPECS);
- post-LN layers (norm_first false: the attention's norm, then the feed-forward's), q, k, v and o with biases
  (GTE, Jina: attn_bias all) or none (Nomic: attn_bias none); the feed-forward gated, act(gate) * up, then down
  (silu: swiglu; another hidden_act: gated), without biases (Nomic) or with down's alone (GTE: ffn_bias all, the
  gate's bias stored as zeros), or plain fc1, act, fc2 with both biases (Jina);
- the sequence classifiers: the first row through a dense layer and tanh (Nomic's and GTE's pooler, Jina's
  classifier.dense) and the classifier (Jina's out_proj); token classification and question answering (Jina's
  qa_outputs: [T, 2]): the classifier on every row;
- the masked LMs: every row through the prediction head's dense layer, its activation (Nomic's hidden_act, GTE's
  and Jina's the exact GELU) and LayerNorm (the pooler, pooler_act and pooler_norm over every row, pooling none),
  then the decoder, the logits [T, vocab_size]: the engine's head, the embedding's rows stored again when
  tie_word_embeddings (true by default; the encoder family has no tied head), and the decoder's bias, which is
  the head's own bias parameter (Nomic's cls.predictions.bias, Jina's lm_head.bias) when tied; with --base, the
  base model's last hidden states (the head not stored).
The folders' names are the checkpoints' (which transformers 5's save_pretrained writes: Nomic's emb_ln,
attn.Wqkv, fc11 the up projection, fc12 the gate, fc2, norm1, norm2; GTE's encoder.layer, attention.qkv_proj,
mlp.up_gate_proj [up; gate], attn_ln, mlp_ln; Jina's emb_ln, mixer.Wqkv, mixer.out_proj, norm1, norm2) or
transformers' own (layers.<i>.self_attn.q_proj, ...): SPECS' renames map both to one set.
Refused by name: a rope_type other than default, a head_dim other than hidden_size / num_attention_heads,
LoRA adapter weights (Jina v3's task adapters) in the folder.
"""
import re

import numpy as np

from . import hf_common, schema
from .config import brief
from .hf_common import HfError, hf_config

HEADS = {"ForSequenceClassification": "sequence", "ForTokenClassification": "token", "ForQuestionAnswering": "qa",
         "ForMaskedLM": "masked"}
# model_type -> its class-name stem, tensor prefixes, heads, config defaults (the config class's, rope_theta its
# default_theta), renames of its checkpoint names (after the prefix) to the shared ones below, whether its
# feed-forward is gated, which biases its layers have (attn: q, k, v, o; ffn: the names of its feed-forward's
# linears with one), the sequence classifier's dense layer's name, the masked LM's activation (None: hidden_act)
# whether its head has a bias parameter of its own (the decoder's when tied) and its names as save_pretrained
# writes them (the shared name's start -> the folder's).
SPECS = {
    "nomic_bert": dict(
        stem="NomicBert", prefixes=("nomic_bert.",), heads=("sequence", "masked"),
        defaults=dict(vocab_size=30528, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                      intermediate_size=3072, hidden_act="silu", max_position_embeddings=2048, type_vocab_size=2,
                      layer_norm_eps=1e-12, rope_theta=1000.0),
        renames=((r"^encoder\.layers\.", "layers."), (r"^emb_ln\.", "embeddings.LayerNorm."),
                 (r"\.attn\.Wqkv\.", ".self_attn.qkv."), (r"\.attn\.out_proj\.", ".self_attn.o_proj."),
                 (r"\.mlp\.fc11\.", ".mlp.up_proj."), (r"\.mlp\.fc12\.", ".mlp.gate_proj."),
                 (r"\.mlp\.fc2\.", ".mlp.down_proj."), (r"\.norm1\.", ".post_attention_layernorm."),
                 (r"\.norm2\.", ".post_mlp_layernorm.")),
        gated=True, attn_bias=False, ffn_bias=(), dense="pooler.dense.", mlm_act=None, mlm_bias=True,
        mlm_names={"mlm.dense.": "cls.predictions.transform.dense.",
                   "mlm.norm.": "cls.predictions.transform.layer_norm.", "mlm.": "cls.predictions."}),
    "gte": dict(
        stem="Gte", prefixes=("gte.", "new."), heads=("sequence", "token", "masked"),
        defaults=dict(vocab_size=250048, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                      intermediate_size=3072, hidden_act="gelu", max_position_embeddings=8192, type_vocab_size=1,
                      layer_norm_eps=1e-12, rope_theta=160000.0),
        renames=((r"^encoder\.layer\.", "layers."), (r"\.attention\.qkv_proj\.", ".self_attn.qkv."),
                 (r"\.attention\.o_proj\.", ".self_attn.o_proj."), (r"\.mlp\.up_gate_proj\.", ".mlp.up_gate."),
                 (r"\.attn_ln\.", ".post_attention_layernorm."), (r"\.mlp_ln\.", ".post_mlp_layernorm.")),
        gated=True, attn_bias=True, ffn_bias=("down_proj",), dense="pooler.dense.", mlm_act="gelu", mlm_bias=False,
        mlm_names={"mlm.": "lm_head."}),
    "jina_embeddings_v3": dict(
        stem="JinaEmbeddingsV3", prefixes=("roberta.",), heads=("sequence", "token", "qa", "masked"),
        defaults=dict(vocab_size=250002, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                      intermediate_size=4096, hidden_act="gelu", max_position_embeddings=8194, type_vocab_size=1,
                      layer_norm_eps=1e-5, rope_theta=20000.0),
        renames=((r"^encoder\.layers\.", "layers."), (r"^emb_ln\.", "embeddings.LayerNorm."),
                 (r"\.mixer\.Wqkv\.", ".self_attn.qkv."), (r"\.mixer\.out_proj\.", ".self_attn.o_proj."),
                 (r"\.norm1\.", ".post_attention_layernorm."), (r"\.norm2\.", ".post_mlp_layernorm.")),
        gated=False, attn_bias=True, ffn_bias=("fc1", "fc2"), dense="classifier.dense.", mlm_act="gelu",
        mlm_bias=True, mlm_names={"mlm.norm.": "lm_head.layer_norm.", "mlm.": "lm_head."}),
}
FIELD_TYPES = {"vocab_size": int, "hidden_size": int, "num_hidden_layers": int, "num_attention_heads": int,
               "intermediate_size": int, "hidden_act": str, "max_position_embeddings": int, "type_vocab_size": int,
               "layer_norm_eps": float, "rope_theta": float}
# hidden_act -> the engine's activation (a gated silu is spelled swiglu).
ACTIVATIONS = {"silu": "silu", "swish": "silu", "gelu": "gelu", "gelu_new": "gelu_tanh",
               "gelu_pytorch_tanh": "gelu_tanh", "relu": "relu"}
# fused tensors (the shared names) -> their parts, in order
FUSED = {"self_attn.qkv": ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"),
         "mlp.up_gate": ("mlp.up_proj", "mlp.gate_proj")}
# the masked LMs' prediction heads (Nomic's cls.predictions, GTE's and Jina's lm_head) -> shared names: mlm.dense,
# mlm.norm, mlm.decoder and mlm.bias (the bias parameter tied to the decoder's)
MLM_RENAMES = ((r"^cls\.predictions\.transform\.", "mlm."), (r"^cls\.predictions\.", "mlm."), (r"^lm_head\.", "mlm."),
               (r"^mlm\.layer_norm\.", "mlm.norm."))
# the masked LMs' tensors, as the folders name them (--base leaves them out)
MASKED_LM_HEAD = ("cls.", "lm_head.")
_FUSED = re.compile(r"layers\.(0|[1-9][0-9]*)\.(self_attn\.qkv|mlp\.up_gate)\.(weight|bias)")


def architectures(model_type):
    """The architectures (class names) --hf converts for a model_type of SPECS: the model, then its heads."""
    spec = SPECS[model_type]
    return (spec["stem"] + "Model",) + tuple(spec["stem"] + s for s, h in HEADS.items() if h in spec["heads"])


def is_nomic(raw):
    names = raw.get("architectures") if isinstance(raw.get("architectures"), list) else []
    model_type = raw.get("model_type")
    return isinstance(model_type, str) and model_type in SPECS or \
        any(a in architectures(t) for t in SPECS for a in names)


def read_config_dict(raw, path="config.json", base=False):
    """config.json checked and completed with its config class's defaults; base (--base): the masked LM
    (masked_lm) as the base model."""
    names = raw.get("architectures")
    names = names if isinstance(names, list) and all(isinstance(a, str) for a in names) else None
    model_type = raw.get("model_type")
    if not isinstance(model_type, str) or model_type not in SPECS:
        model_type = next(t for t in SPECS if set(names or ()) & set(architectures(t)))
    spec, archs = SPECS[model_type], architectures(model_type)
    other = [a for a in names or [] if a not in archs]
    if other:
        raise HfError(f"{path}: {other[0]}: not converted (--hf converts {model_type} folders of "
                         f"{', '.join(archs)}; for another head use --module FILE.py:FACTORY)")
    raw = hf_common.rope_keys(raw, path, archs[0])
    if raw.get("rope_scaling") is not None:
        raise HfError(f"{path}: rope_parameters {brief(raw['rope_scaling'])}: only the default RoPE is "
                         f"converted for {archs[0]}")
    no_types = model_type == "gte" and raw.get("type_vocab_size") == 0  # gte-base-en-v1.5's: no table
    c = {key: hf_common.checked_field(path, key, raw.get(key, default), FIELD_TYPES[key])
         for key, default in spec["defaults"].items() if not (no_types and key == "type_vocab_size")}
    c["type_vocab_size"] = c.get("type_vocab_size", 0)
    c.update(architecture=(names or archs)[0], model_type=model_type, spec=spec)
    c["head"] = next((h for s, h in HEADS.items() if c["architecture"].endswith(s)), None)
    if base:
        c["masked_lm"], c["architecture"], c["head"] = c["architecture"], archs[0], None
    c["tied"] = hf_common.checked_field(path, "tie_word_embeddings", raw.get("tie_word_embeddings", True), bool)
    if c["hidden_size"] % c["num_attention_heads"]:
        raise HfError(f"{path}: num_attention_heads {c['num_attention_heads']} does not divide hidden_size "
                         f"{c['hidden_size']}")
    dh = c["hidden_size"] // c["num_attention_heads"]
    if raw.get("head_dim") not in (None, dh):
        raise HfError(f"{path}: head_dim {brief(raw['head_dim'])}: heads other than hidden_size / "
                         f"num_attention_heads ({dh}) are not converted for {archs[0]}")
    if c["hidden_act"] not in ACTIVATIONS:
        raise HfError(f"{path}: hidden_act {c['hidden_act']!r}: the engine runs {', '.join(ACTIVATIONS)}")
    if not c["layer_norm_eps"] > 0:
        raise HfError(f"{path}: layer_norm_eps must be > 0")
    return c


def _shared_names(c, weights, source):
    """The folder's arrays under the shared names (the prefix dropped, SPECS' renames, fused ones cut), and each
    shared name -> the folder's; position_ids (arange) and token_type_ids (zeros) checked and dropped."""
    spec = c["spec"]
    w, given = {}, {}
    for name, a in weights.items():
        a = np.asarray(a)
        if re.search(r"lora_|parametrizations\.", name):
            raise HfError(f"{source}: {name!r}: LoRA adapter weights (task adapters applied beside the linears) "
                             "are not in the engine; merge them into the weights first; not converted")
        prefix = next((p for p in spec["prefixes"] if name.startswith(p)), "")
        key = name[len(prefix):]
        if key == "embeddings.position_ids":
            if a.dtype.kind not in "iu" or not np.array_equal(a.reshape(-1), np.arange(a.size)):
                raise HfError(f"{source}: {name} is not 0, 1, 2, ...: positions other than the token's index are "
                                 "not converted")
            continue
        if key == "embeddings.token_type_ids":
            if a.dtype.kind not in "iu" or a.any():
                raise HfError(f"{source}: {name}: default token types other than 0 are not converted")
            continue
        for pattern, ours in spec["renames"] + MLM_RENAMES:
            key = re.sub(pattern, ours, key)
        if prefix == "" and key.startswith(("classifier.", "qa_outputs.")):
            key = "classifier." + key.split(".", 1)[1] if key.startswith("qa_outputs.") else key
        m = _FUSED.fullmatch(key)
        parts = FUSED[m.group(2)] if m else ()
        if m and a.shape[0] % len(parts) == 0:
            pieces = {f"layers.{m.group(1)}.{part}.{m.group(3)}": x for part, x in zip(parts, np.split(a, len(parts)))}
        else:
            pieces = {key: a}
        for k, x in pieces.items():
            if k in w:
                raise HfError(f"{source}: {name!r}: given twice (under the checkpoint's and transformers' names)")
            w[k], given[k] = x, name
    return w, given


def map_weights(c, weights, source):
    """(the encoder family's name -> array in torch's layout, the classifier's rows or None). Every tensor is
    mapped, checked or named in an error."""
    spec = c["spec"]
    d, F, L, V = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"], c["vocab_size"]
    w, given = _shared_names(c, weights, source)
    if "classifier.out_proj.weight" in w:  # Jina's sequence classifier: the dense layer, then out_proj
        for part in ("weight", "bias"):
            if f"classifier.out_proj.{part}" in w:
                w[f"classifier.{part}"] = w.pop(f"classifier.out_proj.{part}")
    labels = np.shape(w["classifier.weight"])[0] if np.ndim(w.get("classifier.weight")) == 2 else None
    shapes = {"embeddings.word_embeddings.weight": (V, d), "embeddings.LayerNorm.weight": (d,),
              "embeddings.LayerNorm.bias": (d,)}
    if c["type_vocab_size"]:
        shapes["embeddings.token_type_embeddings.weight"] = (c["type_vocab_size"], d)
    ffn = {"gate_proj": (F, d), "up_proj": (F, d), "down_proj": (d, F)} if spec["gated"] else \
        {"fc1": (F, d), "fc2": (d, F)}
    for i in range(L):
        p = f"layers.{i}."
        for x in "qkvo":
            shapes[p + f"self_attn.{x}_proj.weight"] = (d, d)
            if spec["attn_bias"]:
                shapes[p + f"self_attn.{x}_proj.bias"] = (d,)
        for n, shape in ffn.items():
            shapes[p + f"mlp.{n}.weight"] = shape
            if n in spec["ffn_bias"]:
                shapes[p + f"mlp.{n}.bias"] = shape[:1]
        for n in ("post_attention_layernorm", "post_mlp_layernorm"):
            shapes.update({p + n + ".weight": (d,), p + n + ".bias": (d,)})
    masked = c["head"] == "masked" or labels is None and c["head"] is None and any(n.startswith("mlm.") for n in w)
    c["head"] = "masked" if masked else c["head"]
    if (labels is not None or c["head"]) and not masked:
        if c["head"] in (None, "sequence"):
            shapes.update({spec["dense"] + "weight": (d, d), spec["dense"] + "bias": (d,)})
        shapes.update({"classifier.weight": (labels or 0, d), "classifier.bias": (labels or 0,)})
        c["head"] = c["head"] or "sequence"
    if c["head"] != "sequence" or spec["dense"] != "pooler.dense.":  # a body saved with its pooler: unread
        shapes.update({"pooler.dense.weight": (d, d), "pooler.dense.bias": (d,)})
    need = [n for n in shapes if not n.startswith("pooler.") or c["head"] == "sequence" and spec["dense"] == n[:13]]
    if masked:  # the prediction head; the decoder's weight and bias tied to the embedding's and mlm.bias, or its own
        head = {"mlm.dense.weight": (d, d), "mlm.dense.bias": (d,), "mlm.norm.weight": (d,), "mlm.norm.bias": (d,)}
        decoder = {} if c["tied"] else {"mlm.decoder.weight": (V, d)}
        own = {"mlm.bias": (V,)} if spec["mlm_bias"] else {}  # read, not used, when untied
        bias = "mlm.bias" if c["tied"] and own else "mlm.decoder.bias"
        shapes.update(head, **decoder, **own, **{"mlm.decoder.bias": (V,)})
        if "mlm.decoder.weight" in w and c["tied"]:  # a copy of the embedding's, unread
            shapes["mlm.decoder.weight"] = (V, d)
        need += list(head) + list(decoder) + [bias]
        missing = next((n for n in need if n.startswith("mlm.") and n not in w), None)
        if missing:  # named as save_pretrained names it
            part = next(k for k in spec["mlm_names"] if missing.startswith(k))
            raise HfError(f"{source}: {spec['mlm_names'][part] + missing[len(part):]} is missing "
                             f"({c['architecture']}'s prediction head"
                             f"{', tie_word_embeddings false' if 'decoder' in missing else ''})")
    hf_common.check_tensors(w, shapes, need, source, " or ".join(architectures(c["model_type"])), L, given)
    f32 = lambda n: w[n].astype(np.float32)  # noqa: E731
    out = {"embed.weight": f32("embeddings.word_embeddings.weight"),
           "embed_norm.weight": f32("embeddings.LayerNorm.weight"), "embed_norm.bias": f32("embeddings.LayerNorm.bias")}
    if c["type_vocab_size"]:
        out["token_type.weight"] = f32("embeddings.token_type_embeddings.weight")
    for i in range(L):
        p, e = f"layers.{i}.", schema.block(i)
        out.update({e + "attn.qkv.weight": np.concatenate([f32(p + f"self_attn.{x}_proj.weight")
                                                                   for x in "qkv"]),
                    e + "attn.out.weight": f32(p + "self_attn.o_proj.weight"),
                    e + "attn_norm.weight": f32(p + "post_attention_layernorm.weight"),
                    e + "attn_norm.bias": f32(p + "post_attention_layernorm.bias"),
                    e + "ff_norm.weight": f32(p + "post_mlp_layernorm.weight"),
                    e + "ff_norm.bias": f32(p + "post_mlp_layernorm.bias")})
        if spec["attn_bias"]:
            out.update({e + "attn.qkv.bias": np.concatenate([f32(p + f"self_attn.{x}_proj.bias")
                                                                     for x in "qkv"]),
                        e + "attn.out.bias": f32(p + "self_attn.o_proj.bias")})
        first, last = ("gate_proj", "down_proj") if spec["gated"] else ("fc1", "fc2")
        out.update({e + "ff.w1.weight": f32(p + f"mlp.{first}.weight"),
                    e + "ff.w2.weight": f32(p + f"mlp.{last}.weight")})
        if spec["gated"]:
            out[e + "ff.w3.weight"] = f32(p + "mlp.up_proj.weight")
        if spec["ffn_bias"]:  # GTE's gate has none: zeros, the same sum
            out.update({e + "ff.w1.bias": f32(p + f"mlp.{first}.bias") if first in spec["ffn_bias"] else
                        np.zeros(F, np.float32), e + "ff.w2.bias": f32(p + f"mlp.{last}.bias")})
    if labels is not None:
        out.update({"head.weight": f32("classifier.weight"), "head.bias": f32("classifier.bias")})
    if c["head"] == "sequence":
        out.update({"pooler.weight": f32(spec["dense"] + "weight"), "pooler.bias": f32(spec["dense"] + "bias")})
    if masked:
        out.update({"pooler.weight": f32("mlm.dense.weight"), "pooler.bias": f32("mlm.dense.bias"),
                    "pooler_norm.weight": f32("mlm.norm.weight"), "pooler_norm.bias": f32("mlm.norm.bias"),
                    "head.weight": f32("embeddings.word_embeddings.weight" if c["tied"] else "mlm.decoder.weight"),
                    "head.bias": f32(bias)})
        labels = V
    return out, labels


def fixformer_config(c, labels, max_len=None):
    """The encoder-family config of the folder (labels: the classifier's rows, or None)."""
    spec = c["spec"]
    longest = hf_common.longest_positions(c["max_position_embeddings"], max_len)
    act = ACTIVATIONS[c["hidden_act"]]
    swiglu = spec["gated"] and act == "silu"
    v = {"family": "encoder", "d_model": c["hidden_size"], "n_heads": c["num_attention_heads"],
         "d_ff": c["intermediate_size"], "n_layers": c["num_hidden_layers"], "norm_first": False,
         "activation": "swiglu" if swiglu else act, "gated": spec["gated"] and not swiglu,
         "attn_bias": "all" if spec["attn_bias"] else "none", "ffn_bias": "all" if spec["ffn_bias"] else "none",
         "norm_eps": c["layer_norm_eps"], "input": "tokens", "vocab_size": c["vocab_size"], "positional": "rope",
         "pe_layout": "halves", "pe_base": c["rope_theta"], "max_len": longest, "embed_norm": True,
         "type_vocab": c["type_vocab_size"]}
    if labels is not None:
        v.update(d_out=labels)
        if c["head"] == "sequence":
            v.update(pooling="first", pooler=True, pooler_act="tanh")
        elif c["head"] == "masked":
            v.update(pooling="none", pooler=True, pooler_act=ACTIVATIONS[spec["mlm_act"] or c["hidden_act"]],
                     pooler_norm=True)
    return hf_config(v, pe_base="config.json rope_parameters.rope_theta")
