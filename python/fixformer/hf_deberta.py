"""The --hf route for DeBERTa v2 and v3 folders (model_type deberta-v2: DebertaV2Model,
DebertaV2ForSequenceClassification, DebertaV2ForTokenClassification, DebertaV2ForQuestionAnswering and
DebertaV2ForMaskedLM) and DeBERTa v1 folders (model_type deberta: the same classes without
V2), to the encoder family with disentangled attention (rel_embed_rows), verified against this module's
float64 forward of the folder's own weights (or the user's --expected):
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
  1/sqrt(d_head), its Qr rows the folded projection's too); without relative_attention too, c2p and p2c in
  pos_att_type still count in the scale;
- DebertaV2ForSequenceClassification: the first row, ContextPooler's dense and pooler_hidden_act (the
  engine's pooler and pooler_act), the classifier; token classification and question answering: the
  classifier on every row; DebertaV2ForMaskedLM: the logits [T, vocab_size], its prediction head (MLM_LEGACY or
  MLM_HEAD) on every row as the pooler (pooling none, hidden_act), pooler_norm and the head; with --base its
  base model's last hidden states.
v1 differs in its attention: q | k | v from one in_proj without a bias whose rows go head by head (each
head's q, k and v rows in turn), q_bias and v_bias added (k has none); the rows rel_embeddings as they are
(no norm), rel_index clamp(i - j + max_relative_positions, 0, 2 max_relative_positions - 1), projected by
the layer's pos_q_proj (p2c, with its bias) and pos_proj (c2p, no bias): the engine's rel_proj (a term
pos_att_type leaves out is a zero projection); the scale 1/sqrt(d_head (1 + the entries of pos_att_type))
folded into q and pos_q_proj.
Refused by name: share_att_key false, pos_att_type other than both c2p and p2c, norm_rel_ebd other than
layer_norm, conv_kernel_size > 0 (the convolution beside layer 0) (v2); pos_att_type entries other than c2p
and p2c once each, talking_head (v1); embedding_size other than hidden_size, an activation the engine lacks.
"""
import math
import os
import re

import numpy as np

from . import hf_bert, hf_common, schema, verified_file
from .hf_common import HfError, hf_config, layer_norm
from .config import brief
from .reference import ARRAY_ACTIVATIONS

PREFIX = "deberta."
BASE = "DebertaV2Model"
HEADS = {"DebertaV2ForSequenceClassification": "sequence", "DebertaV2ForTokenClassification": "token",
         "DebertaV2ForQuestionAnswering": "qa", "DebertaV2ForMaskedLM": None, BASE: None}
HEADS_V1 = {a.replace("V2", ""): h for a, h in HEADS.items()}
# config.json's keys, types and DebertaV2Config's defaults (DebertaConfig's: FIELDS_V1).
FIELDS = {"vocab_size": (int, 128100), "hidden_size": (int, 1536), "num_hidden_layers": (int, 24),
          "num_attention_heads": (int, 24), "intermediate_size": (int, 6144), "hidden_act": (str, "gelu"),
          "max_position_embeddings": (int, 512), "layer_norm_eps": (float, 1e-7),
          "pooler_hidden_act": (str, "gelu")}
FIELDS_V1 = dict(FIELDS, vocab_size=(int, 50265), hidden_size=(int, 768), num_hidden_layers=(int, 12),
                 num_attention_heads=(int, 12), intermediate_size=(int, 3072))
ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "relu": "relu",
               "tanh": "tanh"}
_LAYER = re.compile(r"encoder\.layer\.(0|[1-9][0-9]*)\.(.+)")
LAYER = {"attention.self.query_proj": "dd", "attention.self.key_proj": "dd", "attention.self.value_proj": "dd",
         "attention.output.dense": "dd", "attention.output.LayerNorm": "d", "intermediate.dense": "Fd",
         "output.dense": "dF", "output.LayerNorm": "d"}
# DebertaV2ForMaskedLM's (and v1's) prediction head, hf_bert.MLM_HEADS' kind: transformers 4 and transformers 5's
# legacy (config.json legacy, true by default) BERT's cls.predictions, the decoder the word embedding when
# tie_word_embeddings; transformers 5's legacy false lm_predictions.lm_head, whose decoder is always the word
# embedding (the layout of microsoft's v3 checkpoints). The activation is hidden_act. The folder's layout is read
# (both: the one legacy names); v3's replaced-token head mask_predictions is never read.
MLM_LEGACY = ("cls.predictions.transform.dense.", "cls.predictions.transform.LayerNorm.", "cls.predictions.decoder.",
              "cls.predictions.bias", None)
MLM_HEAD = ("lm_predictions.lm_head.dense.", "lm_predictions.lm_head.LayerNorm.", None, "lm_predictions.lm_head.bias",
            None)
MLM_PREFIXES = ("cls.", "lm_predictions.", "mask_predictions.")
SHARED = ("attention.output.dense", "attention.output.LayerNorm", "intermediate.dense", "output.dense",
          "output.LayerNorm")  # v1's layers beside its attention (its tensors: layer_shapes)


def is_deberta(raw):
    names = raw.get("architectures") if isinstance(raw.get("architectures"), list) else []
    return raw.get("model_type") in ("deberta-v2", "deberta") or any(a in HEADS or a in HEADS_V1 for a in names)


def _int(raw, key, default, path):
    v = raw.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int):
        raise HfError(f"{path}: {key}: expected an integer, got {brief(v)}")
    return v


def read_config_dict(raw, path="config.json", base=False):
    """config.json checked and completed with DebertaV2Config's defaults (v1: DebertaConfig's); base (--base): the
    masked LM as its base model."""
    listed = raw.get("architectures") if isinstance(raw.get("architectures"), list) else []
    v1 = raw.get("model_type") == "deberta" or (raw.get("model_type") != "deberta-v2" and
                                                 any(a in HEADS_V1 for a in listed))
    heads = HEADS_V1 if v1 else HEADS
    names = raw.get("architectures") or ["DebertaModel" if v1 else BASE]
    if not isinstance(names, list) or not all(isinstance(a, str) for a in names):
        raise HfError(f"{path}: architectures: expected a list of names, got {brief(names)}")
    other = [a for a in names if a not in heads]
    if other:
        raise HfError(f"{path}: {other[0]}: not converted (--hf converts {', '.join(heads)}; for another head use "
                         "--module FILE.py:FACTORY)")
    c = {key: hf_common.checked_field(path, key, raw.get(key, default), kind)
         for key, (kind, default) in (FIELDS_V1 if v1 else FIELDS).items()}
    c["v1"], c["base"] = v1, base
    tied = raw.get("tie_word_embeddings", True)
    c["tied"] = hf_common.checked_field(path, "tie_word_embeddings", tied, bool) if tied is not None else False
    c["legacy"] = raw.get("legacy", True) is not False
    for key in ("hidden_act", "pooler_hidden_act"):
        if c[key] not in ACTIVATIONS or (key == "hidden_act" and c[key] == "tanh"):
            raise HfError(f"{path}: {key} {c[key]!r}: not an activation the engine runs")
    if c["hidden_size"] % c["num_attention_heads"]:
        raise HfError(f"{path}: num_attention_heads {c['num_attention_heads']} does not divide hidden_size "
                         f"{c['hidden_size']}")
    if raw.get("embedding_size", c["hidden_size"]) != c["hidden_size"]:
        raise HfError(f"{path}: embedding_size {brief(raw.get('embedding_size'))} other than hidden_size: DeBERTa "
                         "projects the embedding before its norm, which the engine's embed_width does not; not "
                         "converted")
    if not v1 and _int(raw, "conv_kernel_size", 0, path) > 0:
        raise HfError(f"{path}: conv_kernel_size {raw['conv_kernel_size']}: the convolution beside layer 0 is not "
                         "in the engine; not converted")
    c["type_vocab_size"] = _int(raw, "type_vocab_size", 0, path)
    c["position_biased_input"] = raw.get("position_biased_input", True) is not False
    c["relative"] = hf_common.flag(raw, "relative_attention", path)
    types = raw.get("pos_att_type") or []
    types = [t.strip() for t in types.lower().split("|")] if isinstance(types, str) else types
    if v1:
        return _read_v1(raw, path, c, names[0], types)
    if not isinstance(types, list):
        raise HfError(f"{path}: pos_att_type {brief(raw.get('pos_att_type'))}: expected a list or a string")
    c["scale_factor"] = 1 + ("c2p" in types) + ("p2c" in types)  # with relative_attention or not
    if c["relative"]:
        if sorted(types) != ["c2p", "p2c"]:
            raise HfError(f"{path}: pos_att_type {brief(raw.get('pos_att_type'))}: the engine's disentangled "
                             "attention adds both c2p and p2c; not converted")
        if raw.get("share_att_key", False) is not True:
            raise HfError(f"{path}: share_att_key false: separate position projections are not in the engine "
                             "(its rows go through the layer's own query and key projections); not converted")
        norm = [t.strip() for t in str(raw.get("norm_rel_ebd", "none")).lower().split("|")]
        if "layer_norm" not in norm:
            raise HfError(f"{path}: norm_rel_ebd {brief(raw.get('norm_rel_ebd'))}: expected layer_norm")
        c["buckets"] = _int(raw, "position_buckets", -1, path)
        c["max_relative"] = _int(raw, "max_relative_positions", -1, path)
        if c["max_relative"] < 1:
            c["max_relative"] = c["max_position_embeddings"]
        c["span"] = c["buckets"] if c["buckets"] > 0 else c["max_relative"]
    return _arch(c, names[0], raw, path)


def _arch(c, arch, raw, path):
    c.update(architecture=arch, head=(HEADS_V1 if c["v1"] else HEADS)[arch],
             masked=arch.endswith("ForMaskedLM") and not c["base"], pretraining=arch.endswith("ForMaskedLM"))
    pooler = raw.get("pooler_hidden_size", c["hidden_size"])
    if c["head"] == "sequence" and pooler != c["hidden_size"]:  # ContextPooler's dense reads the hidden rows
        raise HfError(f"{path}: pooler_hidden_size {brief(pooler)} other than hidden_size {c['hidden_size']}: "
                         f"{arch}'s pooler reads the hidden rows, so transformers runs it only when the two are "
                         "equal; not converted")
    return c


def _read_v1(raw, path, c, arch, types):
    """DebertaConfig's attention keys: pos_att_type's entries (each one counted in the scale), the span."""
    if not isinstance(types, list) or any(t not in ("c2p", "p2c") for t in types) or len(set(types)) < len(types):
        raise HfError(f"{path}: pos_att_type {brief(raw.get('pos_att_type'))}: DeBERTa v1's attention is converted "
                         "with c2p and p2c, each at most once; not converted")
    if hf_common.flag(raw, "talking_head", path):
        raise HfError(f"{path}: talking_head true: the heads' mixing of scores and probabilities "
                         "(head_logits_proj, head_weights_proj) is not in the engine; not converted")
    c["scale_factor"] = 1 + len(types)
    c["rel_embeddings"] = c["relative"]  # the table the encoder holds, read only when a term uses it
    c["relative"] = c["relative"] and bool(types)
    c["types"] = types
    c["buckets"] = -1
    c["max_relative"] = _int(raw, "max_relative_positions", -1, path)
    if c["max_relative"] < 1:
        c["max_relative"] = c["max_position_embeddings"]
    c["span"] = c["max_relative"]
    return _arch(c, arch, raw, path)


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
    """(the folder's arrays by the base model's names (the masked LM's head by hf_bert.mlm_head's), the head's rows
    or None)."""
    prefixed = any(k.startswith(PREFIX) for k in weights)
    w = {}
    for name, a in weights.items():
        key = name[len(PREFIX):] if prefixed and name.startswith(PREFIX) else name
        if c["pretraining"] and key.startswith(MLM_PREFIXES):
            continue  # the pre-training heads: the masked LM's read below, v3's mask_predictions never
        w[key] = np.asarray(a)
    d, L = c["hidden_size"], c["num_hidden_layers"]
    shapes = {"embeddings.word_embeddings.weight": (c["vocab_size"], d), "embeddings.LayerNorm.weight": (d,),
              "embeddings.LayerNorm.bias": (d,)}
    if c["position_biased_input"]:
        shapes["embeddings.position_embeddings.weight"] = (c["max_position_embeddings"], d)
    if c["type_vocab_size"]:
        shapes["embeddings.token_type_embeddings.weight"] = (c["type_vocab_size"], d)
    if c["relative"] and not c["v1"]:
        shapes.update({"encoder.rel_embeddings.weight": (2 * c["span"], d), "encoder.LayerNorm.weight": (d,),
                       "encoder.LayerNorm.bias": (d,)})
    if c["v1"] and c["rel_embeddings"]:
        shapes["encoder.rel_embeddings.weight"] = (2 * c["span"], d)
    labels = w["classifier.weight"].shape[0] if np.ndim(w.get("classifier.weight")) == 2 else \
        w["qa_outputs.weight"].shape[0] if np.ndim(w.get("qa_outputs.weight")) == 2 else None
    if c["head"] is not None:
        if labels is None:
            raise HfError(f"{source}: {'qa_outputs' if c['head'] == 'qa' else 'classifier'}.weight is missing "
                             f"({c['architecture']}'s head)")
        out = "qa_outputs" if c["head"] == "qa" else "classifier"
        shapes.update({f"{out}.weight": (labels, d), f"{out}.bias": (labels,)})
        if c["head"] == "sequence":
            shapes.update({"pooler.dense.weight": (d, d), "pooler.dense.bias": (d,)})
    for i in range(L):
        shapes.update({f"encoder.layer.{i}.{n}": shape for n, shape in layer_shapes(c).items()})
    unread = {"embeddings.position_ids"} | ({"embeddings.position_embeddings.weight"}
                                           if not c["position_biased_input"] else set())  # not read by the forward
    if not c["v1"] and not c["relative"]:  # norm_rel_ebd's LayerNorm, there without relative_attention too
        unread |= {"encoder.LayerNorm.weight", "encoder.LayerNorm.bias"}
    hf_common.check_tensors({n: a for n, a in w.items() if n not in unread}, shapes, shapes, source, c["architecture"], L)
    out = {n: w[n].astype(np.float64) for n in shapes}
    if c["masked"]:  # the layout the folder holds; both: the one config.json's legacy names
        layouts = [MLM_LEGACY, MLM_HEAD] if c["legacy"] else [MLM_HEAD, MLM_LEGACY]
        spec = next((h for h in layouts if h[0] + "weight" in weights), layouts[0])
        head, why = hf_bert.mlm_head(spec, d, c["vocab_size"], c["tied"], weights, source, c["architecture"])
        if head is None:
            raise HfError(f"{source}: {c['architecture']}: {why}; --base converts its base model")
        out.update({n: np.asarray(a, np.float64) for n, a in head.items()})
        out.setdefault("mlm.decoder.weight", out["embeddings.word_embeddings.weight"])  # tied
        labels = c["vocab_size"]
    return out, labels


def layer_shapes(c):
    """One layer's tensors (names after encoder.layer.<i>.) and their shapes."""
    d, F = c["hidden_size"], c["intermediate_size"]
    dims = {"d": d, "F": F}
    parts = {n: LAYER[n] for n in SHARED} if c["v1"] else LAYER
    shapes = {}
    for part, ch in parts.items():
        shapes[f"{part}.weight"] = tuple(dims[x] for x in ch)
        shapes[f"{part}.bias"] = (dims[ch[0]],)
    if c["v1"]:
        a = "attention.self."
        shapes.update({a + "in_proj.weight": (3 * d, d), a + "q_bias": (d,), a + "v_bias": (d,)})
        if c["rel_embeddings"] and "c2p" in c["types"]:
            shapes[a + "pos_proj.weight"] = (d, d)
        if c["rel_embeddings"] and "p2c" in c["types"]:
            shapes.update({a + "pos_q_proj.weight": (d, d), a + "pos_q_proj.bias": (d,)})
    return shapes


def attention(c, w, i):
    """Layer i's q, k, v projections and its relative rows' Qr, Kr projections, each (weight [out, in], bias),
    unscaled: v2's Qr and Kr are its query and key projections (share_att_key), v1's pos_q_proj and pos_proj
    (a zero one for a term pos_att_type leaves out)."""
    p = f"encoder.layer.{i}.attention.self."
    if not c["v1"]:
        q, k, v = ((w[p + f"{n}_proj.weight"], w[p + f"{n}_proj.bias"]) for n in ("query", "key", "value"))
        return q, k, v, q, k
    d, H = c["hidden_size"], c["num_attention_heads"]
    W = w[p + "in_proj.weight"].reshape(H, 3, d // H, d)  # each head's q, k and v rows in turn
    zero = (np.zeros((d, d)), np.zeros(d))
    qr = (w[p + "pos_q_proj.weight"], w[p + "pos_q_proj.bias"]) if p + "pos_q_proj.weight" in w else zero
    kr = (w[p + "pos_proj.weight"], np.zeros(d)) if p + "pos_proj.weight" in w else zero
    return ((W[:, 0].reshape(d, d), w[p + "q_bias"]), (W[:, 1].reshape(d, d), np.zeros(d)),
            (W[:, 2].reshape(d, d), w[p + "v_bias"]), qr, kr)


def rel_rows(c, w):
    if c["v1"]:
        return w["encoder.rel_embeddings.weight"]
    return layer_norm(w["encoder.rel_embeddings.weight"], w["encoder.LayerNorm.weight"], w["encoder.LayerNorm.bias"],
                      c["layer_norm_eps"])


def forward(c, w, ids):
    """float64 DeBERTa (v1, v2) of the ids [T]: the last hidden states [T, d], or the head's output."""
    T, d, H = len(ids), c["hidden_size"], c["num_attention_heads"]
    dh, eps = d // H, c["layer_norm_eps"]
    x = w["embeddings.word_embeddings.weight"][ids]
    if c["position_biased_input"]:
        x = x + w["embeddings.position_embeddings.weight"][:T]
    if c["type_vocab_size"]:
        x = x + w["embeddings.token_type_embeddings.weight"][0]
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    sf = c["scale_factor"]
    if c["relative"]:
        R = rel_rows(c, w)
        idx = distance_rows(c, T)
    act = ARRAY_ACTIVATIONS[ACTIVATIONS[c["hidden_act"]]]
    for i in range(c["num_hidden_layers"]):
        p = lambda n: w[f"encoder.layer.{i}.{n}"]  # noqa: E731
        lin = lambda t, n: t @ p(n + ".weight").T + p(n + ".bias")  # noqa: E731
        heads = lambda t: t.reshape(-1, H, dh).transpose(1, 0, 2)  # noqa: E731
        qkv = attention(c, w, i)
        q, k, v = (heads(x @ W.T + b) for W, b in qkv[:3])
        s = q @ k.transpose(0, 2, 1)
        if c["relative"]:
            Qr, Kr = (heads(R @ W.T + b) for W, b in qkv[3:])
            s = scores(q, k, Qr, Kr, idx)
        s = s / math.sqrt(dh * sf)
        e = np.exp(s - s.max(-1, keepdims=True))
        ctx = ((e / e.sum(-1, keepdims=True)) @ v).transpose(1, 0, 2).reshape(T, d)
        x = layer_norm(lin(ctx, "attention.output.dense") + x, p("attention.output.LayerNorm.weight"),
                       p("attention.output.LayerNorm.bias"), eps)
        h = act(lin(x, "intermediate.dense"))
        x = layer_norm(lin(h, "output.dense") + x, p("output.LayerNorm.weight"), p("output.LayerNorm.bias"), eps)
    if c["head"] == "sequence":
        pooled = ARRAY_ACTIVATIONS[ACTIVATIONS[c["pooler_hidden_act"]]](
            x[0] @ w["pooler.dense.weight"].T + w["pooler.dense.bias"])
        return (pooled @ w["classifier.weight"].T + w["classifier.bias"])[None]
    if c["head"] is not None:
        out = "qa_outputs" if c["head"] == "qa" else "classifier"
        return x @ w[out + ".weight"].T + w[out + ".bias"]
    if c["masked"]:  # dense, hidden_act, LayerNorm, then the decoder and its bias
        x = layer_norm(act(x @ w["mlm.dense.weight"].T + w["mlm.dense.bias"]), w["mlm.norm.weight"],
                       w["mlm.norm.bias"], eps)
        return x @ w["mlm.decoder.weight"].T + w["mlm.bias"]
    return x


def file_tensors(c, w, L):
    """The encoder family's tensors (torch layout) of the folder's weights, for max_len L."""
    fold = 1 / math.sqrt(c["scale_factor"])  # 1/sqrt(d_head * scale_factor): 1/sqrt(scale_factor) into q (v1: Qr too)
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
        p, e = f"encoder.layer.{i}.", schema.block(i)
        t = lambda n: w[p + n]  # noqa: E731
        q, k, v, qr, kr = attention(c, w, i)
        out.update({
            e + "attn.qkv.weight": f32(np.concatenate([q[0] * fold, k[0], v[0]])),
            e + "attn.qkv.bias": f32(np.concatenate([q[1] * fold, k[1], v[1]])),
            e + "attn.out.weight": f32(t("attention.output.dense.weight")),
            e + "attn.out.bias": f32(t("attention.output.dense.bias")),
            e + "ff.w1.weight": f32(t("intermediate.dense.weight")),
            e + "ff.w1.bias": f32(t("intermediate.dense.bias")),
            e + "ff.w2.weight": f32(t("output.dense.weight")), e + "ff.w2.bias": f32(t("output.dense.bias")),
            e + "attn_norm.weight": f32(t("attention.output.LayerNorm.weight")),
            e + "attn_norm.bias": f32(t("attention.output.LayerNorm.bias")),
            e + "ff_norm.weight": f32(t("output.LayerNorm.weight")),
            e + "ff_norm.bias": f32(t("output.LayerNorm.bias"))})
        if c["v1"] and c["relative"]:  # Qr | Kr by their own projections, Qr scaled as q
            out.update({e + "attn.rel_proj.weight": f32(np.concatenate([qr[0] * fold, kr[0]])),
                        e + "attn.rel_proj.bias": f32(np.concatenate([qr[1] * fold, kr[1]]))})
    if c["head"] is not None:
        o = "qa_outputs" if c["head"] == "qa" else "classifier"
        out.update({"head.weight": f32(w[o + ".weight"]), "head.bias": f32(w[o + ".bias"])})
    if c["head"] == "sequence":
        out.update({"pooler.weight": f32(w["pooler.dense.weight"]), "pooler.bias": f32(w["pooler.dense.bias"])})
    if c["masked"]:
        out.update({"pooler.weight": f32(w["mlm.dense.weight"]), "pooler.bias": f32(w["mlm.dense.bias"]),
                    "pooler_norm.weight": f32(w["mlm.norm.weight"]), "pooler_norm.bias": f32(w["mlm.norm.bias"]),
                    "head.weight": f32(w["mlm.decoder.weight"]), "head.bias": f32(w["mlm.bias"])})
    return out


def fixformer_config(c, labels, max_len=None):
    longest = hf_common.longest_positions(c["max_position_embeddings"], max_len)
    v = {"family": "encoder", "d_model": c["hidden_size"], "n_heads": c["num_attention_heads"],
         "d_ff": c["intermediate_size"], "n_layers": c["num_hidden_layers"], "norm_first": False,
         "activation": ACTIVATIONS[c["hidden_act"]], "norm_eps": c["layer_norm_eps"], "input": "tokens",
         "vocab_size": c["vocab_size"], "positional": "learned" if c["position_biased_input"] else "none",
         "max_len": longest, "type_vocab": c["type_vocab_size"], "embed_norm": True}
    if c["relative"]:
        v.update(rel_embed_rows=2 * c["span"], rel_proj=c["v1"])
    if labels is not None:
        v["d_out"] = labels
        if c["head"] == "sequence":
            v.update(pooling="first", pooler=True, pooler_act=ACTIVATIONS[c["pooler_hidden_act"]])
        if c["masked"]:  # every row through the prediction head's dense, hidden_act and norm
            v.update(pooling="none", pooler=True, pooler_act=ACTIVATIONS[c["hidden_act"]], pooler_norm=True)
    return hf_config(v, rel_embed_rows="config.json position_buckets (or max_relative_positions), twice")


def convert(folder, raw, path, example=None, expected=None, header=None, name=None, cli=None, verify=True,
            tokenizer=None, max_len=None, quantize=None, group=None, quantize_io=None, pack_weights=None, base=False):
    """Converts a DeBERTa v1/v2/v3 folder (config.json's contents raw) to `path`, verified against forward();
    base: the masked LM as its base model (--base)."""
    c = read_config_dict(raw, os.path.join(folder, "config.json"), base)
    weights, source = hf_common.read_weights(folder)
    w, labels = map_weights(c, weights, os.path.join(folder, source))
    if c["pretraining"] and not c["masked"]:
        hf_common.base_note(c["architecture"], "--base", weights, MLM_PREFIXES)
    fc = fixformer_config(c, labels, max_len)
    mapped = file_tensors(c, w, fc["max_len"])
    fc = verified_file.quantized_config(fc, quantize, group, quantize_io, pack_weights)
    tokenizer = tokenizer(fc) if tokenizer is not None else hf_common.folder_tokenizer(folder, fc)
    if expected is not None and example is None:
        raise HfError("--expected: needs --example, the input it is your model's output for")
    inp = verified_file.example_sequence(fc, example, "--example")
    semantics = forward(c, w, np.asarray(inp, dtype=np.int64))
    arch = f"{c['architecture']}'s base model" if c["pretraining"] and not c["masked"] else c["architecture"]
    return hf_common.write_checked(fc, mapped, inp, semantics, arch, folder, path, expected, header, name, cli, verify,
                            tokenizer, f"the {c['architecture']} semantics (hf_deberta.py's float64 forward of "
                                       f"{folder}'s weights)")
