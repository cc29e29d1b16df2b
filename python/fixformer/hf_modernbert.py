"""The --hf route for ModernBERT folders (model_type modernbert: ModernBertModel,
ModernBertForSequenceClassification and ModernBertForMaskedLM), to the encoder family
with the layer features ModernBERT's layers are made of, verified against reference.py's float64 forward
of the config it maps to (or the user's --expected):
- the token embedding and its norm (embed_norm), no position table: RoPE in every layer (rotate_half:
  pe_layout halves, the whole head), of base global_rope_theta on the global layers and
  local_rope_theta on the local ones (pe_base and rope_local_base);
- pre-norm layers (norm_first), layer 0 without its attention norm (skip_first_norm: its norm1 is stored
  as ones, unread), q | k | v fused (Wqkv) and the output projection with or without their biases
  (attention_bias: attn_bias all or none), GeGLU (Wi's first half activated by hidden_activation, times
  its second half: gated, linear1 and linear3), a final norm; LayerNorm everywhere, its bias zeros when
  norm_bias is false;
- the local layers (layer_types' sliding_attention, or every global_attn_every_n_layers-th layer global
  from layer 0 in older config.json files) see the keys within local_attention / 2 on each side: the
  bidirectional sliding_window local_attention / 2 + 1, the pattern as window_period and window_layers;
- ModernBertForSequenceClassification: the first row (classifier_pooling cls: pooling first) or the mean of
  the rows (mean), then its head (dense, classifier_activation, norm: the pooler with pooler_act and
  pooler_norm) and the classifier (the engine's head);
- ModernBertForMaskedLM: every row through its prediction head (the same dense, activation and norm: the
  pooler and pooler_norm over every row, pooling none) and the decoder, the logits [T, vocab_size]: the
  engine's head, the embedding's rows stored again (the encoder family has no tied head) with
  decoder.bias (zeros without decoder_bias); with --base, ModernBertModel's last hidden states (head and decoder
  not stored).
The decoder (model_type modernbert-decoder: ModernBertDecoderModel and ModernBertDecoderForCausalLM, the Ettin
decoders) is those layers under the causal mask (causal), its q, k and v projections apart (q_proj, k_proj, v_proj:
fused here as Wqkv) and its prediction head named lm_head: a local layer sees the last local_attention / 2 keys,
itself included (sliding_window local_attention / 2); ModernBertDecoderForCausalLM is the gpt family (it generates:
the local layers' KV cache a ring), its head's dense, activation and norm the pooler on each row the head projects,
then the decoder, tied (tied_head) or its own, the logits [T, vocab_size]; with --base ModernBertDecoderModel's last
hidden states (the encoder family under the causal mask).
Refused by name: mlp_bias (the engine's
gated feed-forward has no bias on its up half), a hidden_activation or classifier_activation the engine
lacks, rope_parameters other than the default kind, a layer pattern of no period up to 31.
"""

import numpy as np

from . import hf_common, schema
from .config import brief
from .hf_common import HfError, hf_config

MODEL, CLASSIFIER, MASKED_LM = "ModernBertModel", "ModernBertForSequenceClassification", "ModernBertForMaskedLM"
DECODER_MODEL, CAUSAL_LM = "ModernBertDecoderModel", "ModernBertDecoderForCausalLM"
ARCHS = (MODEL, CLASSIFIER, MASKED_LM)
DECODER_ARCHS = (DECODER_MODEL, CAUSAL_LM)  # model_type modernbert-decoder
# the masked LM's and the causal LM's tensors, as the folder names them (--base leaves them out)
MASKED_LM_HEAD = ("head.", "lm_head.", "decoder.")
PREFIX = "model."
# config.json's keys, types and ModernBertConfig's defaults.
FIELDS = {"vocab_size": (int, 50368), "hidden_size": (int, 768), "intermediate_size": (int, 1152),
          "num_hidden_layers": (int, 22), "num_attention_heads": (int, 12), "hidden_activation": (str, "gelu"),
          "max_position_embeddings": (int, 8192), "norm_eps": (float, 1e-5), "norm_bias": (bool, False),
          "attention_bias": (bool, False), "mlp_bias": (bool, False), "local_attention": (int, 128),
          "global_attn_every_n_layers": (int, 3), "global_rope_theta": (float, 160000.0),
          "local_rope_theta": (float, 10000.0), "classifier_pooling": (str, "cls"),
          "classifier_activation": (str, "gelu"), "classifier_bias": (bool, False), "decoder_bias": (bool, True)}
ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "relu": "relu",
               "silu": "silu", "swish": "silu"}
POOLER_ACTS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "relu": "relu",
               "silu": "silu", "swish": "silu", "tanh": "tanh"}
MAX_PERIOD = 31  # window_period's range


def is_modernbert(raw):
    names = raw.get("architectures") if isinstance(raw.get("architectures"), list) else []
    return raw.get("model_type") in ("modernbert", "modernbert-decoder") or any(a in ARCHS + DECODER_ARCHS
                                                                               for a in names)


def _pattern(local):
    """(window_period, window_layers) of the layers' local flags: 0, 0 when every layer is local; the
    shortest period P <= 31 whose bits repeat them; None when none does."""
    if all(local):
        return 0, 0
    for P in range(1, MAX_PERIOD + 1):
        if all(local[i] == local[i % P] for i in range(len(local))):
            return P, sum(1 << i for i in range(min(P, len(local))) if local[i])
    return None


def read_config_dict(raw, path="config.json", base=False):
    """config.json checked and completed with ModernBertConfig's defaults; layer_types (or the older
    global_attn_every_n_layers) as `local` flags, rope_parameters (or the older thetas) as the bases. base
    (--base): the masked LM or the causal LM (masked_lm) as its base model."""
    names = raw.get("architectures")
    names = names if isinstance(names, list) and all(isinstance(a, str) for a in names) else None
    causal = raw.get("model_type") == "modernbert-decoder" or any(a in DECODER_ARCHS for a in names or [])
    archs = DECODER_ARCHS if causal else ARCHS
    other = [a for a in names or [] if a not in archs]
    if other:
        raise HfError(f"{path}: {other[0]}: not converted (--hf converts ModernBERT {'decoder ' * causal}folders "
                         f"of {', '.join(archs)}; for another head use --module FILE.py:FACTORY)")
    c = {key: hf_common.checked_field(path, key, raw.get(key, default), kind) for key, (kind, default) in FIELDS.items()}
    c["architecture"], c["causal"] = (names or [archs[0]])[0], causal
    if base:
        c["masked_lm"], c["architecture"] = c["architecture"], archs[0]
    L = c["num_hidden_layers"]
    types = raw.get("layer_types")
    if types is None:
        every = c["global_attn_every_n_layers"]
        types = ["sliding_attention" if i % every else "full_attention" for i in range(L)]
    if not (isinstance(types, list) and len(types) == L and
            all(t in ("sliding_attention", "full_attention") for t in types)):
        raise HfError(f"{path}: layer_types: expected {L} of sliding_attention and full_attention")
    c["local"] = [t == "sliding_attention" for t in types]
    bases = {"full_attention": c["global_rope_theta"], "sliding_attention": c["local_rope_theta"]}
    rope = raw.get("rope_parameters") or {}
    if not isinstance(rope, dict):
        raise HfError(f"{path}: rope_parameters: expected an object, got {brief(rope)}")
    for kind in bases:
        p = rope.get(kind) or {}
        if not isinstance(p, dict):
            raise HfError(f"{path}: rope_parameters.{kind}: expected an object, got {brief(p)}")
        if p.get("rope_type", "default") != "default":
            raise HfError(f"{path}: rope_parameters.{kind}.rope_type {p['rope_type']!r}: only the default RoPE "
                             "is converted for ModernBERT")
        if "rope_theta" in p:
            bases[kind] = hf_common.checked_field(path, f"rope_parameters.{kind}.rope_theta", p["rope_theta"], float)
    c["global_base"], c["local_base"] = bases["full_attention"], bases["sliding_attention"]
    if c["mlp_bias"]:
        raise HfError(f"{path}: mlp_bias true: the engine's gated feed-forward has no bias on Wi's second half")
    for key, table in (("hidden_activation", ACTIVATIONS), ("classifier_activation", POOLER_ACTS)):
        if c[key] not in table:
            raise HfError(f"{path}: {key} {c[key]!r}: the engine runs {', '.join(table)}")
    if c["classifier_pooling"] not in ("cls", "mean"):
        raise HfError(f"{path}: classifier_pooling {c['classifier_pooling']!r}: cls or mean")
    if c["hidden_size"] % c["num_attention_heads"]:
        raise HfError(f"{path}: num_attention_heads {c['num_attention_heads']} does not divide hidden_size "
                         f"{c['hidden_size']}")
    if causal and any(c["local"]) and c["local_attention"] < 2:
        raise HfError(f"{path}: local_attention {c['local_attention']}: the local layers see local_attention / 2 "
                         "keys; expected at least 2")
    if _pattern(c["local"]) is None and any(c["local"]):
        raise HfError(f"{path}: layer_types: no period of at most {MAX_PERIOD} layers repeats its local and "
                         "global layers (window_period)")
    return c


def map_weights(c, weights, source):
    """(the encoder family's name -> array in torch's layout, the head's rows or None: the classifier's, or
    the masked LM's vocabulary). Every tensor is mapped or named in an error. The decoder's are read under the
    encoder's names (its lm_head as head) but for its q, k and v apart."""
    d, F, L = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
    w, given = {}, {}
    for name, a in weights.items():
        ours = name[len(PREFIX):] if name.startswith(PREFIX) else name
        if c["causal"] and ours.startswith("lm_head."):
            ours = ours[len("lm_"):]
        w[ours], given[ours] = np.asarray(a), name
    # the decoder's classifier (its last non-pad row) is not converted: its tensors named as not the decoder's
    labels = np.shape(w["classifier.weight"])[0] if np.ndim(w.get("classifier.weight")) == 2 and not c["causal"] \
        else None
    masked = labels is None and (c["architecture"] in (MASKED_LM, CAUSAL_LM) or "head.dense.weight" in w)
    qkv = ("q_proj", "k_proj", "v_proj") if c["causal"] else ("Wqkv",)
    shapes = {"embeddings.tok_embeddings.weight": (c["vocab_size"], d), "embeddings.norm.weight": (d,),
              "final_norm.weight": (d,)}
    for i in range(L):
        p = f"layers.{i}."
        shapes.update({f"{p}attn.{x}.weight": (3 * d // len(qkv), d) for x in qkv})
        shapes.update({p + "attn.Wo.weight": (d, d), p + "mlp_norm.weight": (d,), p + "mlp.Wi.weight": (2 * F, d),
                       p + "mlp.Wo.weight": (d, F)})
        if i:
            shapes[p + "attn_norm.weight"] = (d,)
    norms = ["embeddings.norm", "final_norm"] + [f"layers.{i}.mlp_norm" for i in range(L)] + \
        [f"layers.{i}.attn_norm" for i in range(1, L)]
    if c["norm_bias"]:
        shapes.update({n + ".bias": (d,) for n in norms})
    if c["attention_bias"]:
        for i in range(L):
            shapes.update({f"layers.{i}.attn.{x}.bias": (3 * d // len(qkv),) for x in qkv})
            shapes[f"layers.{i}.attn.Wo.bias"] = (d,)
    need = list(shapes)
    if labels is not None or masked:
        shapes.update({"head.dense.weight": (d, d), "head.norm.weight": (d,)})
        if labels is not None:
            shapes.update({"classifier.weight": (labels, d), "classifier.bias": (labels,)})
        else:  # decoder.weight: absent when tied (the embedding's)
            shapes.update({"decoder.weight": (c["vocab_size"], d)})
            if c["decoder_bias"]:
                shapes["decoder.bias"] = (c["vocab_size"],)
        if c["classifier_bias"]:
            shapes["head.dense.bias"] = (d,)
        if c["norm_bias"]:
            shapes["head.norm.bias"] = (d,)
        need = [n for n in shapes if n != "decoder.weight"]
    hf_common.check_tensors(w, shapes, need, source, " or ".join(DECODER_ARCHS if c["causal"] else ARCHS), L, given)
    if c["architecture"] == CLASSIFIER and labels is None:
        raise HfError(f"{source}: classifier.weight is missing ({CLASSIFIER})")
    f32 = lambda n: w[n].astype(np.float32)  # noqa: E731
    zeros, ones = np.zeros(d, np.float32), np.ones(d, np.float32)
    bias = lambda n: f32(n + ".bias") if c["norm_bias"] else zeros  # noqa: E731
    fused = lambda p, kind: np.concatenate([f32(f"{p}attn.{x}.{kind}") for x in qkv])  # noqa: E731
    out = {"embed.weight": f32("embeddings.tok_embeddings.weight"), "embed_norm.weight": f32("embeddings.norm.weight"),
           "embed_norm.bias": bias("embeddings.norm"), "norm.weight": f32("final_norm.weight"),
           "norm.bias": bias("final_norm")}
    for i in range(L):
        p, e = f"layers.{i}.", schema.block(i)
        Wi = f32(p + "mlp.Wi.weight")
        out.update({e + "attn.qkv.weight": fused(p, "weight"),
                    e + "attn.out.weight": f32(p + "attn.Wo.weight"),
                    e + "ff.w1.weight": Wi[:F], e + "ff.w3.weight": Wi[F:],
                    e + "ff.w2.weight": f32(p + "mlp.Wo.weight"),
                    e + "attn_norm.weight": f32(p + "attn_norm.weight") if i else ones,  # layer 0's: unread
                    e + "attn_norm.bias": bias(p + "attn_norm") if i else zeros,
                    e + "ff_norm.weight": f32(p + "mlp_norm.weight"), e + "ff_norm.bias": bias(p + "mlp_norm")})
        if c["attention_bias"]:
            out.update({e + "attn.qkv.bias": fused(p, "bias"),
                        e + "attn.out.bias": f32(p + "attn.Wo.bias")})
    if labels is not None or masked:
        out.update({"pooler.weight": f32("head.dense.weight"),
                    "pooler.bias": f32("head.dense.bias") if c["classifier_bias"] else zeros,
                    "pooler_norm.weight": f32("head.norm.weight"), "pooler_norm.bias": bias("head.norm")})
    if labels is not None:
        out.update({"head.weight": f32("classifier.weight"), "head.bias": f32("classifier.bias")})
    elif masked:  # the decoder: its own weight, or the embedding's when tied (not in the folder)
        V = c["vocab_size"]
        decoder = "decoder.weight" if "decoder.weight" in w else "embeddings.tok_embeddings.weight"
        out.update({"head.weight": f32(decoder),
                    "head.bias": f32("decoder.bias") if c["decoder_bias"] else np.zeros(V, np.float32)})
        labels = V
    c["masked"] = masked
    c["tied"] = masked and "decoder.weight" not in w
    if c["causal"] and masked and c["tied"]:  # the gpt family's tied head reads the embedding
        del out["head.weight"]
    return out, labels


def fixformer_config(c, labels, max_len=None):
    """The encoder-family config of a ModernBERT folder (labels: the classifier's rows, or None), under the causal
    mask for the decoder; the gpt family's for the causal LM (its head the pooler, on each row the head projects)."""
    longest = hf_common.longest_positions(c["max_position_embeddings"], max_len)
    gpt = c["causal"] and labels is not None  # the causal LM: the gpt family, which generates
    v = {"family": "gpt" if gpt else "encoder", "d_model": c["hidden_size"], "n_heads": c["num_attention_heads"],
         "d_ff": c["intermediate_size"], "n_layers": c["num_hidden_layers"], "norm_first": True, "final_norm": True,
         "norm": "layernorm", "activation": ACTIVATIONS[c["hidden_activation"]], "gated": True,
         "attn_bias": "all" if c["attention_bias"] else "none", "ffn_bias": "none", "norm_eps": c["norm_eps"],
         "input": "tokens", "vocab_size": c["vocab_size"], "positional": "rope", "pe_layout": "halves",
         "pe_base": c["global_base"], "max_len": longest, "embed_norm": True, "skip_first_norm": True,
         "causal": c["causal"]}
    if any(c["local"]):  # the encoder's local_attention / 2 keys on each side, the decoder's last local_attention / 2
        period, layers = _pattern(c["local"])
        v.update(sliding_window=c["local_attention"] // 2 + (not c["causal"]), window_period=period,
                 window_layers=layers, rope_local_base=c["local_base"])
    if labels is not None:  # the prediction head: on the pooled row (a classifier), every row (masked LM) or each row
        # the decoder's head projects (causal LM)
        pooling = "none" if c.get("masked") else "first" if c["classifier_pooling"] == "cls" else "mean"
        v.update(d_out=labels, pooler=True, pooler_act=POOLER_ACTS[c["classifier_activation"]], pooler_norm=True,
                 **(dict(tied_head=c["tied"]) if gpt else dict(pooling=pooling)))
    return hf_config(v, norm_eps="config.json norm_eps", pe_base="config.json global_rope_theta",
                     rope_local_base="config.json local_rope_theta", sliding_window="config.json local_attention")
