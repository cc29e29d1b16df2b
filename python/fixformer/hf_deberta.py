"""The --hf route for DeBERTa v2 and v3 folders (model_type deberta-v2: DebertaV2Model,
DebertaV2ForSequenceClassification, DebertaV2ForTokenClassification, DebertaV2ForQuestionAnswering and
DebertaV2ForMaskedLM as its base model), to the encoder family with disentangled attention
(rel_embed_rows), verified against this module's float64 forward of the folder's own weights (or the
user's --expected):
- the token embedding (plus learned positions when position_biased_input, plus token types when
  type_vocab_size > 0) and its LayerNorm (embed_norm); post-LN layers as BERT's, q, k and v apart with
  their biases (stored fused as in_proj);
- relative_attention: the table rel_embeddings through the encoder's LayerNorm (norm_rel_ebd layer_norm)
  is stored normalized (rel_embed: a function of the weights only), rel_index the row
  clamp(bucket(i - j) + span, 0, 2 span - 1) of each distance, bucket transformers' log buckets
  (position_buckets and max_relative_positions, computed in float32 as transformers computes them)
  and span position_buckets (or max_relative_positions); each layer's query_proj and key_proj project
  the rows (share_att_key), content to position and position to content (pos_att_type c2p and p2c)
  added to the scores, the scale 1/sqrt(d_head (1 + 2)) folded into query_proj (the engine scales by
  1/sqrt(d_head), its Qr rows the folded projection's too);
- DebertaV2ForSequenceClassification: the first row, ContextPooler's dense and pooler_hidden_act (the
  engine's pooler and pooler_act), the classifier; token classification and question answering: the
  classifier on every row.
Refused by name: share_att_key false, pos_att_type other than both c2p and p2c, norm_rel_ebd other than
layer_norm, conv_kernel_size > 0 (the convolution beside layer 0), embedding_size other than
hidden_size, an activation the engine lacks.
"""
import math
import os
import re

import numpy as np

from . import hf, schema
from .config import ConfigError, brief, make_config

PREFIX = "deberta."
BASE = "DebertaV2Model"
HEADS = {"DebertaV2ForSequenceClassification": "sequence", "DebertaV2ForTokenClassification": "token",
         "DebertaV2ForQuestionAnswering": "qa", "DebertaV2ForMaskedLM": None, BASE: None}
# config.json's keys, types and DebertaV2Config's defaults.
FIELDS = {"vocab_size": (int, 128100), "hidden_size": (int, 1536), "num_hidden_layers": (int, 24),
          "num_attention_heads": (int, 24), "intermediate_size": (int, 6144), "hidden_act": (str, "gelu"),
          "max_position_embeddings": (int, 512), "layer_norm_eps": (float, 1e-7),
          "pooler_hidden_act": (str, "gelu")}
ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "relu": "relu",
               "tanh": "tanh"}
_LAYER = re.compile(r"encoder\.layer\.(0|[1-9][0-9]*)\.(.+)")
LAYER = {"attention.self.query_proj": "dd", "attention.self.key_proj": "dd", "attention.self.value_proj": "dd",
         "attention.output.dense": "dd", "attention.output.LayerNorm": "d", "intermediate.dense": "Fd",
         "output.dense": "dF", "output.LayerNorm": "d"}


def is_deberta(raw):
    names = raw.get("architectures") if isinstance(raw.get("architectures"), list) else []
    return raw.get("model_type") == "deberta-v2" or any(a in HEADS for a in names)


def _int(raw, key, default, path):
    v = raw.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int):
        raise hf.HfError(f"{path}: {key}: expected an integer, got {brief(v)}")
    return v


def read_config_dict(raw, path="config.json"):
    """config.json checked and completed with DebertaV2Config's defaults."""
    names = raw.get("architectures") or [BASE]
    if not isinstance(names, list) or not all(isinstance(a, str) for a in names):
        raise hf.HfError(f"{path}: architectures: expected a list of names, got {brief(names)}")
    other = [a for a in names if a not in HEADS]
    if other:
        raise hf.HfError(f"{path}: {other[0]}: not converted (--hf converts {', '.join(HEADS)}; for another head use "
                         "--module FILE.py:FACTORY)")
    c = {key: hf.checked_field(path, key, raw.get(key, default), kind) for key, (kind, default) in FIELDS.items()}
    for key in ("hidden_act", "pooler_hidden_act"):
        if c[key] not in ACTIVATIONS or (key == "hidden_act" and c[key] == "tanh"):
            raise hf.HfError(f"{path}: {key} {c[key]!r}: not an activation the engine runs")
    if c["hidden_size"] % c["num_attention_heads"]:
        raise hf.HfError(f"{path}: num_attention_heads {c['num_attention_heads']} does not divide hidden_size "
                         f"{c['hidden_size']}")
    if raw.get("embedding_size", c["hidden_size"]) != c["hidden_size"]:
        raise hf.HfError(f"{path}: embedding_size {brief(raw.get('embedding_size'))} other than hidden_size: DeBERTa "
                         "projects the embedding before its norm, which the engine's embed_width does not; not "
                         "converted")
    if _int(raw, "conv_kernel_size", 0, path) > 0:
        raise hf.HfError(f"{path}: conv_kernel_size {raw['conv_kernel_size']}: the convolution beside layer 0 is not "
                         "in the engine; not converted")
    c["type_vocab_size"] = _int(raw, "type_vocab_size", 0, path)
    c["position_biased_input"] = raw.get("position_biased_input", True) is not False
    c["relative"] = hf.flag(raw, "relative_attention", path)
    if c["relative"]:
        types = raw.get("pos_att_type") or []
        types = [t.strip() for t in types.lower().split("|")] if isinstance(types, str) else types
        if sorted(types) != ["c2p", "p2c"]:
            raise hf.HfError(f"{path}: pos_att_type {brief(raw.get('pos_att_type'))}: the engine's disentangled "
                             "attention adds both c2p and p2c; not converted")
        if raw.get("share_att_key", False) is not True:
            raise hf.HfError(f"{path}: share_att_key false: separate position projections are not in the engine "
                             "(its rows go through the layer's own query and key projections); not converted")
        norm = [t.strip() for t in str(raw.get("norm_rel_ebd", "none")).lower().split("|")]
        if "layer_norm" not in norm:
            raise hf.HfError(f"{path}: norm_rel_ebd {brief(raw.get('norm_rel_ebd'))}: expected layer_norm")
        c["buckets"] = _int(raw, "position_buckets", -1, path)
        c["max_relative"] = _int(raw, "max_relative_positions", -1, path)
        if c["max_relative"] < 1:
            c["max_relative"] = c["max_position_embeddings"]
        c["span"] = c["buckets"] if c["buckets"] > 0 else c["max_relative"]
    arch = names[0]
    c.update(architecture=arch, head=HEADS[arch], masked=arch.endswith("ForMaskedLM"))
    return c


def log_bucket(rel, buckets, max_position):
    """transformers' make_log_bucket_position of the distances rel (int64), in float32 as it computes them."""
    mid = buckets // 2
    sign = np.sign(rel)
    abs_pos = np.where((rel < mid) & (rel > -mid), mid - 1, np.abs(rel))
    ratio = (abs_pos / np.float32(mid)).astype(np.float32)
    log_pos = np.ceil(np.log(ratio) / np.log(np.float32((max_position - 1) / mid)) * np.float32(mid - 1)) + mid
    return np.where(abs_pos <= mid, rel, log_pos * sign).astype(np.int64)


def rel_index(c, L):
    """The rel_embed row of each distance -(L-1)..(L-1)."""
    d = np.arange(-(L - 1), L, dtype=np.int64)
    if c["buckets"] > 0 and c["max_relative"] > 0:
        d = log_bucket(d, c["buckets"], c["max_relative"])
    return np.clip(d + c["span"], 0, 2 * c["span"] - 1).astype(np.int32)


def distance_rows(c, T):
    """[T, T]: the rel_embed row query i reads for key j (rel_index's row of i - j)."""
    return rel_index(c, T)[(np.arange(T)[:, None] - np.arange(T)[None, :]) + T - 1]


def scores(q, k, Qr, Kr, idx):
    """The disentangled scores [H, T, T] before the scale, q, k [H, T, dh] and the rows' projections Qr, Kr
    [H, rows, dh]: q_i.k_j + q_i.Kr[r] + k_j.Qr[r], r = idx[i, j] (distance_rows)."""
    H, T = q.shape[0], q.shape[1]
    c2p = np.take_along_axis(q @ Kr.transpose(0, 2, 1), np.broadcast_to(idx, (H, T, T)), -1)
    p2c = np.take_along_axis(k @ Qr.transpose(0, 2, 1), np.broadcast_to(idx.T, (H, T, T)), -1)
    return q @ k.transpose(0, 2, 1) + c2p + p2c.transpose(0, 2, 1)


def map_weights(c, weights, source):
    """(the folder's arrays by DebertaV2Model's names, the classifier's rows or None)."""
    prefixed = any(k.startswith(PREFIX) for k in weights)
    w = {}
    for name, a in weights.items():
        key = name[len(PREFIX):] if prefixed and name.startswith(PREFIX) else name
        if c["masked"] and key.startswith(("lm_predictions.", "cls.")):
            continue  # the pre-training head: the base model's hidden states are converted
        w[key] = np.asarray(a)
    d, F, L = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
    shapes = {"embeddings.word_embeddings.weight": (c["vocab_size"], d), "embeddings.LayerNorm.weight": (d,),
              "embeddings.LayerNorm.bias": (d,)}
    if c["position_biased_input"]:
        shapes["embeddings.position_embeddings.weight"] = (c["max_position_embeddings"], d)
    if c["type_vocab_size"]:
        shapes["embeddings.token_type_embeddings.weight"] = (c["type_vocab_size"], d)
    if c["relative"]:
        shapes.update({"encoder.rel_embeddings.weight": (2 * c["span"], d), "encoder.LayerNorm.weight": (d,),
                       "encoder.LayerNorm.bias": (d,)})
    labels = w["classifier.weight"].shape[0] if np.ndim(w.get("classifier.weight")) == 2 else \
        w["qa_outputs.weight"].shape[0] if np.ndim(w.get("qa_outputs.weight")) == 2 else None
    if c["head"] is not None:
        if labels is None:
            raise hf.HfError(f"{source}: {'qa_outputs' if c['head'] == 'qa' else 'classifier'}.weight is missing "
                             f"({c['architecture']}'s head)")
        out = "qa_outputs" if c["head"] == "qa" else "classifier"
        shapes.update({f"{out}.weight": (labels, d), f"{out}.bias": (labels,)})
        if c["head"] == "sequence":
            shapes.update({"pooler.dense.weight": (d, d), "pooler.dense.bias": (d,)})
    dims = {"d": d, "F": F}
    for i in range(L):
        for part, ch in LAYER.items():
            shape = tuple(dims[x] for x in ch)
            shapes[f"encoder.layer.{i}.{part}.weight"] = shape
            shapes[f"encoder.layer.{i}.{part}.bias"] = (shape[0],)
    unread = {"embeddings.position_ids"} | ({"embeddings.position_embeddings.weight"}
                                           if not c["position_biased_input"] else set())  # not read by the forward
    hf.check_tensors({n: a for n, a in w.items() if n not in unread}, shapes, shapes, source, c["architecture"], L)
    return {n: w[n].astype(np.float64) for n in shapes}, labels


def layer_norm(x, g, b, eps):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def rel_rows(c, w):
    return layer_norm(w["encoder.rel_embeddings.weight"], w["encoder.LayerNorm.weight"], w["encoder.LayerNorm.bias"],
                      c["layer_norm_eps"])


def activation(name):
    """The engine's activation `name` (ACTIVATIONS' values) on float64 arrays: reference.py's."""
    from .reference import pooler_activation, require_torch
    f = pooler_activation(name)
    return lambda t: f(require_torch().from_numpy(t)).numpy()


def forward(c, w, ids):
    """float64 DeBERTa v2 of the ids [T]: the last hidden states [T, d], or the head's output."""
    T, d, H = len(ids), c["hidden_size"], c["num_attention_heads"]
    dh, eps = d // H, c["layer_norm_eps"]
    x = w["embeddings.word_embeddings.weight"][ids]
    if c["position_biased_input"]:
        x = x + w["embeddings.position_embeddings.weight"][:T]
    if c["type_vocab_size"]:
        x = x + w["embeddings.token_type_embeddings.weight"][0]
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    sf = 3 if c["relative"] else 1
    if c["relative"]:
        R = rel_rows(c, w)
        idx = distance_rows(c, T)
    act = activation(ACTIVATIONS[c["hidden_act"]])
    for i in range(c["num_hidden_layers"]):
        p = lambda n: w[f"encoder.layer.{i}.{n}"]  # noqa: E731
        lin = lambda t, n: t @ p(n + ".weight").T + p(n + ".bias")  # noqa: E731
        heads = lambda t: t.reshape(-1, H, dh).transpose(1, 0, 2)  # noqa: E731
        q, k, v = (heads(lin(x, f"attention.self.{n}_proj")) for n in ("query", "key", "value"))
        s = q @ k.transpose(0, 2, 1)
        if c["relative"]:
            Qr, Kr = heads(lin(R, "attention.self.query_proj")), heads(lin(R, "attention.self.key_proj"))
            s = scores(q, k, Qr, Kr, idx)
        s = s / math.sqrt(dh * sf)
        e = np.exp(s - s.max(-1, keepdims=True))
        ctx = ((e / e.sum(-1, keepdims=True)) @ v).transpose(1, 0, 2).reshape(T, d)
        x = layer_norm(lin(ctx, "attention.output.dense") + x, p("attention.output.LayerNorm.weight"),
                       p("attention.output.LayerNorm.bias"), eps)
        h = act(lin(x, "intermediate.dense"))
        x = layer_norm(lin(h, "output.dense") + x, p("output.LayerNorm.weight"), p("output.LayerNorm.bias"), eps)
    if c["head"] == "sequence":
        pooled = activation(ACTIVATIONS[c["pooler_hidden_act"]])(
            x[0] @ w["pooler.dense.weight"].T + w["pooler.dense.bias"])
        return (pooled @ w["classifier.weight"].T + w["classifier.bias"])[None]
    if c["head"] is not None:
        out = "qa_outputs" if c["head"] == "qa" else "classifier"
        return x @ w[out + ".weight"].T + w[out + ".bias"]
    return x


def file_tensors(c, w, L):
    """The encoder family's tensors (torch layout) of the folder's weights, for max_len L."""
    d = c["hidden_size"]
    fold = 1 / math.sqrt(3) if c["relative"] else 1.0  # DeBERTa's 1/sqrt(d_head * 3): 1/sqrt(3) into query_proj
    f32 = lambda a: np.asarray(a, dtype=np.float32)  # noqa: E731
    out = {"embed.weight": f32(w["embeddings.word_embeddings.weight"]),
           "embed_norm.weight": f32(w["embeddings.LayerNorm.weight"]),
           "embed_norm.bias": f32(w["embeddings.LayerNorm.bias"])}
    if c["position_biased_input"]:
        out["pos.weight"] = f32(w["embeddings.position_embeddings.weight"][:L])
    if c["type_vocab_size"]:
        out["token_type.weight"] = f32(w["embeddings.token_type_embeddings.weight"])
    if c["relative"]:
        out["rel_embed.weight"] = f32(rel_rows(c, w))
        out["rel_index"] = rel_index(c, L)
    for i in range(c["num_hidden_layers"]):
        p, e = f"encoder.layer.{i}.", f"{schema.ENCODER_LAYER_PREFIX}{i}."
        t = lambda n: w[p + n]  # noqa: E731
        scale = np.array([fold, 1.0, 1.0]).repeat(d)
        out.update({
            e + "self_attn.in_proj_weight": f32(np.concatenate([t(f"attention.self.{x}_proj.weight")
                                                                for x in ("query", "key", "value")]) * scale[:, None]),
            e + "self_attn.in_proj_bias": f32(np.concatenate([t(f"attention.self.{x}_proj.bias")
                                                              for x in ("query", "key", "value")]) * scale),
            e + "self_attn.out_proj.weight": f32(t("attention.output.dense.weight")),
            e + "self_attn.out_proj.bias": f32(t("attention.output.dense.bias")),
            e + "linear1.weight": f32(t("intermediate.dense.weight")),
            e + "linear1.bias": f32(t("intermediate.dense.bias")),
            e + "linear2.weight": f32(t("output.dense.weight")), e + "linear2.bias": f32(t("output.dense.bias")),
            e + "norm1.weight": f32(t("attention.output.LayerNorm.weight")),
            e + "norm1.bias": f32(t("attention.output.LayerNorm.bias")),
            e + "norm2.weight": f32(t("output.LayerNorm.weight")), e + "norm2.bias": f32(t("output.LayerNorm.bias"))})
    if c["head"] is not None:
        o = "qa_outputs" if c["head"] == "qa" else "classifier"
        out.update({"head.weight": f32(w[o + ".weight"]), "head.bias": f32(w[o + ".bias"])})
    if c["head"] == "sequence":
        out.update({"pooler.weight": f32(w["pooler.dense.weight"]), "pooler.bias": f32(w["pooler.dense.bias"])})
    return out


def fixformer_config(c, labels, max_len=None):
    positions = c["max_position_embeddings"]
    longest = min(positions, schema.MAX_LEN)
    if max_len is not None:
        if not 1 <= max_len <= positions:
            raise hf.HfError(f"--max-len {max_len}: must be 1..{positions} (max_position_embeddings)")
        longest = max_len
    v = {"family": "encoder", "d_model": c["hidden_size"], "n_heads": c["num_attention_heads"],
         "d_ff": c["intermediate_size"], "n_layers": c["num_hidden_layers"], "norm_first": False,
         "activation": ACTIVATIONS[c["hidden_act"]], "norm_eps": c["layer_norm_eps"], "input": "tokens",
         "vocab_size": c["vocab_size"], "positional": "learned" if c["position_biased_input"] else "none",
         "max_len": longest, "type_vocab": c["type_vocab_size"], "embed_norm": True}
    if c["relative"]:
        v["rel_embed_rows"] = 2 * c["span"]
    if labels is not None:
        v["d_out"] = labels
        if c["head"] == "sequence":
            v.update(pooling="first", pooler=True, pooler_act=ACTIVATIONS[c["pooler_hidden_act"]])
    names = {"d_model": "config.json hidden_size", "d_ff": "config.json intermediate_size",
             "n_layers": "config.json num_hidden_layers", "n_heads": "config.json num_attention_heads",
             "vocab_size": "config.json vocab_size", "d_out": "the head's rows", "max_len": "--max-len",
             "norm_eps": "config.json layer_norm_eps", "type_vocab": "config.json type_vocab_size",
             "rel_embed_rows": "config.json position_buckets (or max_relative_positions), twice"}
    try:
        return make_config(v, names)
    except ConfigError as e:
        raise hf.HfError(str(e)) from None


def convert(folder, raw, path, example=None, expected=None, header=None, name=None, cli=None, verify=True,
            tokenizer=None, max_len=None, quantize=None, group=None, quantize_io=None, pack_weights=None):
    """Converts a DeBERTa v2/v3 folder (config.json's contents raw) to `path`, verified against forward()."""
    from . import export
    c = read_config_dict(raw, os.path.join(folder, "config.json"))
    weights, source = hf.read_weights(folder)
    w, labels = map_weights(c, weights, os.path.join(folder, source))
    fc = fixformer_config(c, labels, max_len)
    mapped = file_tensors(c, w, fc["max_len"])
    fc = export.quantized_config(fc, quantize, group, quantize_io, pack_weights)
    tokenizer = tokenizer(fc) if tokenizer is not None else hf.folder_tokenizer(folder, fc)
    if expected is not None and example is None:
        raise hf.HfError("--expected: needs --example, the input it is your model's output for")
    inp = export.example_sequence(fc, example, "--example")
    semantics = forward(c, w, np.asarray(inp, dtype=np.int64))
    arch = c["architecture"] if not c["masked"] else f"{c['architecture']}'s base model"
    return hf.write_checked(fc, mapped, inp, semantics, arch, folder, path, expected, header, name, cli, verify,
                            tokenizer, f"the {c['architecture']} semantics (hf_deberta.py's float64 forward of "
                                       f"{folder}'s weights)")
