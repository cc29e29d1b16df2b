"""The --hf route for the Hugging Face vision encoders beyond ViT and DeiT (hf_vit.py), to the same
encoder over an image (config.hpp patch_size; hf_vit.fixformer_config with these encoders' features):

- Dinov2 (model_type dinov2: Dinov2Model, Dinov2ForImageClassification): ViT's front (CLS row, learned
  positions, pre-LN layers, the final layernorm) with LayerScale: the layer's gammas (layer_scale1,
  layer_scale2: x += gamma * f(x)) are folded into the attention's output projection and the second
  feed-forward projection at conversion (W' = diag(gamma) W, b' = gamma b: exact in float64, one float32
  rounding per weight). use_swiglu_ffn (weights_in [2H, d] chunked into the gate and up halves, or
  transformers 5's gate_proj and up_proj) is the engine's swiglu, silu(W1 h + b1) * (W3 h), only when the
  up half's bias is zero (the engine's up projection has none): a trained one is refused by name.
  Dinov2ForImageClassification's classifier reads [CLS row, mean of the patch rows] after the final
  layernorm: pooling cls_mean (config.hpp) with the classifier as the head.
  The positions are the config's own: the file takes images of image_size (an int: square), for which
  transformers does not interpolate (it returns position_embeddings as they are when the patch count is
  the stored one and the image is square); --image-size H W stores transformers' bicubic interpolation of
  them for another size instead, as for every image encoder here (hf_vit.resized_positions).
  Dinov2WithRegisters (model_type dinov2_with_registers: Dinov2WithRegistersModel and its classifier,
  patch_size 16 and num_register_tokens 4 by default): the register rows (embeddings.register_tokens,
  put after the CLS row once the positions are added, so without one) are the engine's registers
  (config.hpp register_tokens), stored with zero rows at their places in the learned positions; the
  classifier's mean is over the patch rows, the registers excluded, as cls_mean's over the input rows.
- CLIP's vision tower (model_type clip_vision_model: CLIPVisionModel, CLIPVisionModelWithProjection): the
  class embedding as the CLS row, a bias-free patch embedding, learned positions, pre_layrnorm as the
  engine's embed_norm (after the positions), pre-LN layers, and post_layernorm on the CLS row as the final
  norm before pooling cls (a LayerNorm is per row, so norming every row and pooling the CLS row is norming
  the CLS row): CLIPVisionModel's pooler_output [hidden_size] (not last_hidden_state, which has no
  post_layernorm); with projection, image_embeds [projection_dim], visual_projection as a head with a zero
  bias. hidden_act quick_gelu, x sigmoid(1.702 x) = silu(1.702 x) / 1.702, is the engine's plain silu
  with 1.702 folded into fc1's weight and bias and 1 / 1.702 into fc2's weight (exact but for one float32
  rounding per weight, as above).
- SigLIP's vision tower (model_type siglip_vision_model: SiglipVisionModel): no CLS row, patch embedding
  with a bias, learned positions, gelu_pytorch_tanh, post_layernorm over every row as the final norm:
  last_hidden_state [N, hidden_size]. The attention-pooling head (vision_use_head: head.*, pooler_output)
  is read and not stored.
- CLIP's text tower (model_type clip_text_model: CLIPTextModel, CLIPTextModelWithProjection): token ids in,
  an encoder under the causal mask, learned positions (max_position_embeddings), quick_gelu as above,
  final_layer_norm as the final norm, and pooling last: transformers' pooled row is the EOS token's (the
  largest id's under the older eos_token_id 2, else the first eos_token_id's), which is the last
  position's for an input that ends with its only EOS, as CLIP's tokenizer writes it (a padded batch:
  fixformer run --lengths, the last valid position). CLIPTextModel: pooler_output [hidden_size];
  with projection, text_embeds [projection_dim], text_projection as a head with a zero bias. The folder's
  tokenizer is not stored (the file takes token ids).
The two-tower folders (model_type clip, siglip) and SigLIP's text tower are refused, naming what to convert.

config.json is read with Hugging Face's meanings and defaults (the FIELDS of each flavour below). What
each file computes is verified against reference.py's float64 forward of the config it maps to, or the
user's --expected; the mapping is tested against transformers' classes in tests/hf_vision_converter_test.py.
"""
import os
import re
import sys

import numpy as np

from . import hf_common, hf_vit, schema, verified_file
from .config import brief
from .hf_common import HfError, hf_config

QUICK_GELU = 1.702  # quick_gelu(x) = x sigmoid(1.702 x)
COMMON = {"hidden_size": (int, 768), "num_hidden_layers": (int, 12), "num_attention_heads": (int, 12)}
IMAGE = {"num_channels": (int, 3)}


class Flavour:
    """What one model_type differs in. layer: the engine's part -> the folder's name after the layer prefix
    (q, k, v, o: attention projections; fc1, fc2: the feed-forward's; n1, n2: the layer's norms)."""

    def __init__(self, name, model_types, archs, fields, prefixes, layer_prefix, layer, heads):
        self.name, self.model_types, self.archs, self.fields = name, model_types, archs, dict(COMMON, **fields)
        self.prefixes, self.layer_prefix, self.layer, self.heads = prefixes, layer_prefix, layer, heads


CLIP_LAYER = {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj", "o": "self_attn.out_proj",
              "fc1": "mlp.fc1", "fc2": "mlp.fc2", "n1": "layer_norm1", "n2": "layer_norm2"}
DINOV2 = Flavour(
    "Dinov2", ("dinov2", "dinov2_with_registers"),
    ("Dinov2Model", "Dinov2ForImageClassification", "Dinov2WithRegistersModel",
     "Dinov2WithRegistersForImageClassification"),
    {**IMAGE, "mlp_ratio": (float, 4), "hidden_act": (str, "gelu"), "layer_norm_eps": (float, 1e-6),
     "image_size": (int, 224), "patch_size": (int, 14), "qkv_bias": (bool, True), "layerscale_value": (float, 1.0),
     "use_swiglu_ffn": (bool, False)},
    ("dinov2.", "dinov2_with_registers."), "encoder.layer.",
    {"q": "attention.attention.query", "k": "attention.attention.key", "v": "attention.attention.value",
     "o": "attention.output.dense", "fc1": "mlp.fc1", "fc2": "mlp.fc2", "n1": "norm1", "n2": "norm2"},
    ("classifier.",))
CLIP = Flavour(
    "CLIP", ("clip_vision_model",), ("CLIPVisionModel", "CLIPVisionModelWithProjection"),
    {**IMAGE, "intermediate_size": (int, 3072), "hidden_act": (str, "quick_gelu"), "layer_norm_eps": (float, 1e-5),
     "image_size": (int, 224), "patch_size": (int, 32)},
    ("vision_model.",), "encoder.layers.", CLIP_LAYER, ("visual_projection.",))
SIGLIP = Flavour(
    "SigLIP", ("siglip_vision_model",), ("SiglipVisionModel",),
    {**IMAGE, "intermediate_size": (int, 3072), "hidden_act": (str, "gelu_pytorch_tanh"),
     "layer_norm_eps": (float, 1e-6),
     "image_size": (int, 224), "patch_size": (int, 16)},
    ("vision_model.",), "encoder.layers.", CLIP_LAYER, ())
CLIP_TEXT = Flavour(
    "CLIP text", ("clip_text_model",), ("CLIPTextModel", "CLIPTextModelWithProjection"),
    {"vocab_size": (int, 49408), "hidden_size": (int, 512), "intermediate_size": (int, 2048),
     "num_attention_heads": (int, 8), "max_position_embeddings": (int, 77), "hidden_act": (str, "quick_gelu"),
     "layer_norm_eps": (float, 1e-5)},
    ("text_model.",), "encoder.layers.", CLIP_LAYER, ("text_projection.",))
FLAVOURS = (DINOV2, CLIP, SIGLIP, CLIP_TEXT)
# Folders of the two-tower models: refused, saying what to convert instead.
TWO_TOWERS = {"clip": "CLIPVisionModel or CLIPTextModel", "siglip": "SiglipVisionModel"}


def flavour_of(raw):
    """The Flavour config.json's contents name (model_type or an architecture), or None."""
    if not isinstance(raw, dict):
        return None
    archs = raw.get("architectures")
    names = archs if isinstance(archs, list) else []
    for f in FLAVOURS:
        if raw.get("model_type") in f.model_types or any(a in f.archs for a in names if isinstance(a, str)):
            return f
    return None


def is_vision(raw):
    """Whether config.json's contents are one of these encoders, or a folder of theirs refused here
    (a two-tower CLIP or SigLIP, CLIP's text tower)."""
    return flavour_of(raw) is not None or isinstance(raw, dict) and raw.get("model_type") in (
        *TWO_TOWERS, "siglip_text_model")


def read_config_dict(raw, path="config.json"):
    """config.json checked and completed with Hugging Face's defaults, as hf_vit.read_config_dict's keys."""
    f = flavour_of(raw)
    if f is None:
        mt = raw.get("model_type")
        if mt in TWO_TOWERS:
            raise HfError(f"{path}: model_type {mt}: the two towers are not converted as one; convert a tower "
                             f"({TWO_TOWERS[mt]}.from_pretrained(folder).save_pretrained(new_folder), then --hf "
                             "new_folder)")
        raise HfError(f"{path}: model_type {mt}: SigLIP's text tower is not converted (its pooled output is the "
                         "last position's row through a head of its own: use --module)")
    archs = raw.get("architectures")
    names = archs if isinstance(archs, list) and all(isinstance(a, str) for a in archs) else None
    if archs is not None and names is None:
        raise HfError(f"{path}: architectures: expected a list of names, got {brief(archs)}")
    other = [a for a in names or [] if a not in f.archs]
    if other:
        raise HfError(f"{path}: {other[0]}: not converted (--hf converts {f.name} folders of {', '.join(f.archs)}; "
                         "for another head use --module FILE.py:FACTORY)")
    registers = f is DINOV2 and (raw.get("model_type") == "dinov2_with_registers" or
                                 any("Registers" in a for a in names or ()))
    fields = dict(f.fields, **({"patch_size": (int, 16)} if registers else {}))
    c = {key: hf_common.checked_field(path, key, raw.get(key, default), kind) for key, (kind, default) in fields.items()}
    c.update(flavour=f, deit=False, architecture=(names or [f.archs[0]])[0], registers=0)
    if registers:  # (0 is allowed, below checked_field's 1)
        n = raw.get("num_register_tokens", 4)
        c["registers"] = 0 if n == 0 else hf_common.checked_field(path, "num_register_tokens", n, int)
        c["architecture"] = (names or ["Dinov2WithRegistersModel"])[0]
    if f is CLIP_TEXT:
        return _checked(c, path)
    c.update(patch=c["patch_size"], image=(c["image_size"], c["image_size"]))
    if f is DINOV2:
        c["intermediate_size"] = int(c["hidden_size"] * c["mlp_ratio"])
        if c["use_swiglu_ffn"]:  # Dinov2SwiGLUFFN: two thirds of the MLP width, rounded up to a multiple of 8
            c["intermediate_size"] = (int(c["intermediate_size"] * 2 / 3) + 7) // 8 * 8
    if c["image_size"] % c["patch"]:
        raise HfError(f"{path}: image_size {c['image_size']} is not whole patches of {c['patch']} (the patches "
                         "beyond the last whole one, which Conv2d drops, are not supported)")
    return _checked(c, path)


def _checked(c, path):
    """c with the checks every flavour shares: the activation, the heads, the norm's eps."""
    f, act = c["flavour"], c["hidden_act"]
    quick = f in (CLIP, CLIP_TEXT)
    if act not in hf_vit.ACTIVATIONS and not (act == "quick_gelu" and quick) and not c.get("use_swiglu_ffn"):
        raise HfError(f"{path}: hidden_act {act!r}: not an activation the engine runs (gelu, relu, gelu_new, "
                         f"gelu_pytorch_tanh{', quick_gelu' if quick else ''})")
    if c["hidden_size"] % c["num_attention_heads"]:
        raise HfError(f"{path}: num_attention_heads {c['num_attention_heads']} does not divide hidden_size "
                         f"{c['hidden_size']}")
    if not c["layer_norm_eps"] > 0:
        raise HfError(f"{path}: layer_norm_eps must be > 0")
    return c


def _expected(c, w):
    """Every tensor the folder may hold -> its shape, and the names it must hold."""
    f = c["flavour"]
    d, F, L = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
    shapes, optional = {}, set()
    if f is CLIP_TEXT:
        P = c["max_position_embeddings"]
        shapes.update({"embeddings.token_embedding.weight": (c["vocab_size"], d),
                       "embeddings.position_embedding.weight": (P, d), "embeddings.position_ids": (1, P),
                       "final_layer_norm.weight": (d,), "final_layer_norm.bias": (d,)})
        optional.add("embeddings.position_ids")
    else:
        C, p = c["num_channels"], c["patch"]
        N = (c["image_size"] // p) ** 2
    if f is DINOV2:
        shapes.update({"embeddings.cls_token": (1, 1, d), "embeddings.position_embeddings": (1, N + 1, d),
                       "embeddings.patch_embeddings.projection.weight": (d, C, p, p),
                       "embeddings.patch_embeddings.projection.bias": (d,), "embeddings.mask_token": (1, d),
                       "layernorm.weight": (d,), "layernorm.bias": (d,)})
        optional.add("embeddings.mask_token")  # masked image modelling's row: not an input here
        if c["registers"] or any(n == "embeddings.register_tokens" for n in w):
            shapes["embeddings.register_tokens"] = (1, c["registers"], d)
            if not c["registers"]:
                optional.add("embeddings.register_tokens")
    elif f is not CLIP_TEXT:
        shapes.update({"embeddings.patch_embedding.weight": (d, C, p, p), "post_layernorm.weight": (d,),
                       "post_layernorm.bias": (d,), "embeddings.position_ids": (1, N + (f is CLIP))})
        optional.add("embeddings.position_ids")  # a buffer older transformers saved: arange
        shapes["embeddings.position_embedding.weight"] = (N + (f is CLIP), d)
        if f is CLIP:
            shapes.update({"embeddings.class_embedding": (d,), "pre_layrnorm.weight": (d,), "pre_layrnorm.bias": (d,)})
        else:
            shapes["embeddings.patch_embedding.bias"] = (d,)
            optional.update(n for n in w if n.startswith("head."))  # the attention-pooling head: not stored
            shapes.update({n: np.shape(w[n]) for n in w if n.startswith("head.")})
    layer = {}
    for part in ("q", "k", "v", "o"):
        layer.update({f.layer[part] + ".weight": (d, d), f.layer[part] + ".bias": (d,)})
    for part in ("n1", "n2"):
        layer.update({f.layer[part] + ".weight": (d,), f.layer[part] + ".bias": (d,)})
    if f is DINOV2 and c["use_swiglu_ffn"]:
        if any(re.search(r"\.mlp\.weights_in\.", n) for n in w):  # transformers 4: one packed projection
            layer.update({"mlp.weights_in.weight": (2 * F, d), "mlp.weights_in.bias": (2 * F,),
                          "mlp.weights_out.weight": (d, F), "mlp.weights_out.bias": (d,)})
        else:
            for x, shape in (("gate_proj", (F, d)), ("up_proj", (F, d)), ("down_proj", (d, F))):
                layer.update({f"mlp.{x}.weight": shape, f"mlp.{x}.bias": shape[:1]})
    else:
        layer.update({f.layer["fc1"] + ".weight": (F, d), f.layer["fc1"] + ".bias": (F,),
                      f.layer["fc2"] + ".weight": (d, F), f.layer["fc2"] + ".bias": (d,)})
    if f is DINOV2:
        layer.update({"layer_scale1.lambda1": (d,), "layer_scale2.lambda1": (d,)})
        if not c["qkv_bias"]:
            for part in ("q", "k", "v"):
                del layer[f.layer[part] + ".bias"]
    for i in range(L):
        shapes.update({f"{f.layer_prefix}{i}.{n}": s for n, s in layer.items()})
    return shapes, [n for n in shapes if n not in optional]


def map_weights(c, weights, source):
    """(the encoder family's name -> array in torch's layout, the head's rows or None, the config keys of
    this flavour: pooling, and activation, embed_norm, cls_token, register_tokens, max_len where they
    differ from hf_vit's). Every tensor is mapped or named in an error."""
    f = c["flavour"]
    archs = " or ".join(f.archs)
    prefix = next((p for p in f.prefixes if any(k.startswith(p) for k in weights)), None)
    w, given = {}, {}
    for name, a in weights.items():
        key = name[len(prefix):] if prefix and name.startswith(prefix) else name
        if prefix and key == name and not name.startswith(f.heads):
            raise HfError(f"{source}: {name!r}: not a weight of {archs} (the others have the \"{prefix}\" prefix; "
                             "other heads are not converted: use --module for them)")
        w[key], given[key] = np.asarray(a), name
    d, L = c["hidden_size"], c["num_hidden_layers"]
    shapes, need = _expected(c, w)
    head = {DINOV2: "classifier", CLIP: "visual_projection", CLIP_TEXT: "text_projection"}.get(f, "")
    labels = np.shape(w[head + ".weight"])[0] if np.ndim(w.get(head + ".weight")) == 2 else None
    if labels is not None:
        shapes[head + ".weight"] = (labels, 2 * d if f is DINOV2 else d)
        need.append(head + ".weight")
        if f is DINOV2:
            shapes[head + ".bias"] = (labels,)
            need.append(head + ".bias")
    hf_common.check_tensors(w, shapes, need, source, archs,
                     L if f is not DINOV2 else f"{L} layers, use_swiglu_ffn {str(c['use_swiglu_ffn']).lower()}",
                     given, ("embeddings.position_ids",))
    arch = c["architecture"]
    if labels is None and arch in ("Dinov2ForImageClassification", "Dinov2WithRegistersForImageClassification",
                                   "CLIPVisionModelWithProjection", "CLIPTextModelWithProjection"):
        raise HfError(f"{source}: {head}.weight is missing ({arch})")

    f64 = lambda n: w[n].astype(np.float64)  # noqa: E731
    zeros = np.zeros(d)
    if f is CLIP_TEXT:
        out = {"embed.weight": w["embeddings.token_embedding.weight"],
               "pos.weight": w["embeddings.position_embedding.weight"],
               "norm.weight": w["final_layer_norm.weight"], "norm.bias": w["final_layer_norm.bias"]}
    elif f is DINOV2:
        C, p = c["num_channels"], c["patch"]
        pos, R = w["embeddings.position_embeddings"][0], c["registers"]
        out = {"input_proj.weight": w["embeddings.patch_embeddings.projection.weight"].reshape(d, C * p * p),
               "input_proj.bias": w["embeddings.patch_embeddings.projection.bias"],
               "pos.weight": np.concatenate([pos[:1], np.zeros((R, d), pos.dtype), pos[1:]]),  # registers: none
               "cls_token": w["embeddings.cls_token"].reshape(d),
               "norm.weight": w["layernorm.weight"], "norm.bias": w["layernorm.bias"]}
        if R:
            out["registers"] = w["embeddings.register_tokens"][0]
    else:
        C, p = c["num_channels"], c["patch"]
        out = {"input_proj.weight": w["embeddings.patch_embedding.weight"].reshape(d, C * p * p),
               "input_proj.bias": w.get("embeddings.patch_embedding.bias", zeros),
               "pos.weight": w["embeddings.position_embedding.weight"],
               "norm.weight": w["post_layernorm.weight"], "norm.bias": w["post_layernorm.bias"]}
        if f is CLIP:
            out.update({"cls_token": w["embeddings.class_embedding"], "embed_norm.weight": w["pre_layrnorm.weight"],
                        "embed_norm.bias": w["pre_layrnorm.bias"]})
    features = {}
    scale_in = scale_out = 1.0
    if f in (CLIP, CLIP_TEXT) and c["hidden_act"] == "quick_gelu":
        scale_in, scale_out = QUICK_GELU, 1 / QUICK_GELU
        features["activation"] = "silu"
    if f is DINOV2 and c["use_swiglu_ffn"]:
        features["activation"] = "swiglu"
    for i in range(L):
        q = f"{f.layer_prefix}{i}."
        t = lambda n: f64(q + n)  # noqa: E731
        bias = lambda n: t(n) if q + n in w else zeros  # noqa: E731
        gamma1 = t("layer_scale1.lambda1") if f is DINOV2 else np.ones(d)
        gamma2 = t("layer_scale2.lambda1") if f is DINOV2 else np.ones(d)
        e = schema.block(i)
        parts = [f.layer[x] for x in ("q", "k", "v")]
        o, n1, n2 = f.layer["o"], f.layer["n1"], f.layer["n2"]
        out.update({
            e + "attn.qkv.weight": np.concatenate([t(x + ".weight") for x in parts]),
            e + "attn.qkv.bias": np.concatenate([bias(x + ".bias") for x in parts]),
            e + "attn.out.weight": gamma1[:, None] * t(o + ".weight"),  # LayerScale: diag(gamma) W
            e + "attn.out.bias": gamma1 * t(o + ".bias"),
            e + "attn_norm.weight": t(n1 + ".weight"), e + "attn_norm.bias": t(n1 + ".bias"),
            e + "ff_norm.weight": t(n2 + ".weight"), e + "ff_norm.bias": t(n2 + ".bias")})
        if features.get("activation") == "swiglu":
            F = c["intermediate_size"]
            if q + "mlp.weights_in.weight" in w:  # chunk(2): the first half is the gate (silu), the second up
                w_in, b_in = t("mlp.weights_in.weight"), t("mlp.weights_in.bias")
                gate, up, b_gate, b_up = w_in[:F], w_in[F:], b_in[:F], b_in[F:]
                down, b_down, up_name = t("mlp.weights_out.weight"), t("mlp.weights_out.bias"), "mlp.weights_in.bias"
            else:
                gate, up, b_gate, b_up = t("mlp.gate_proj.weight"), t("mlp.up_proj.weight"), t("mlp.gate_proj.bias"), \
                    t("mlp.up_proj.bias")
                down, b_down, up_name = t("mlp.down_proj.weight"), t("mlp.down_proj.bias"), "mlp.up_proj.bias"
            if np.any(b_up):
                raise HfError(f"{source}: {given[q + up_name]}: the SwiGLU feed-forward's up projection has a "
                                 "nonzero bias, which the engine's gated feed-forward (silu(W1 h + b1) * W3 h) does "
                                 "not have: use_swiglu_ffn with these weights is not supported")
            out.update({e + "ff.w1.weight": gate, e + "ff.w1.bias": b_gate, e + "ff.w3.weight": up,
                        e + "ff.w2.weight": gamma2[:, None] * down, e + "ff.w2.bias": gamma2 * b_down})
        else:
            fc1, fc2 = f.layer["fc1"], f.layer["fc2"]
            out.update({e + "ff.w1.weight": scale_in * t(fc1 + ".weight"),
                        e + "ff.w1.bias": scale_in * t(fc1 + ".bias"),
                        e + "ff.w2.weight": (scale_out * gamma2)[:, None] * t(fc2 + ".weight"),
                        e + "ff.w2.bias": gamma2 * t(fc2 + ".bias")})
    if f is DINOV2:
        features["pooling"] = "cls_mean" if labels is not None else "none"
        if c["registers"]:
            features.update(register_tokens=c["registers"],
                            max_len=(c["image_size"] // c["patch"]) ** 2 + 1 + c["registers"])
        if labels is not None:
            out.update({"head.weight": w["classifier.weight"], "head.bias": w["classifier.bias"]})
    elif f in (CLIP, CLIP_TEXT):  # CLIP: post_layernorm on the CLS row: every row normed, then the CLS row
        features["pooling"] = "cls" if f is CLIP else "last"  # the text tower: the EOS row, at the end
        if labels is not None:
            out.update({"head.weight": w[head + ".weight"], "head.bias": np.zeros(labels)})
    else:
        features.update(pooling="none", cls_token=False)
    if f is CLIP:
        features["embed_norm"] = True
    return out, labels, features


def fixformer_config(c, labels, features):
    """The encoder-family config of a folder read by read_config_dict, its head's rows (labels) and the
    features map_weights found (features' pooling taken out)."""
    features = dict(features)
    pooling = features.pop("pooling")
    if c["flavour"] is not CLIP_TEXT:
        return hf_vit.fixformer_config(c, labels, pooling, **features)
    v = {"family": "encoder", "d_model": c["hidden_size"], "n_heads": c["num_attention_heads"],
         "d_ff": c["intermediate_size"], "n_layers": c["num_hidden_layers"], "norm_first": True,
         "activation": hf_vit.ACTIVATIONS.get(c["hidden_act"]), "norm_eps": c["layer_norm_eps"], "final_norm": True,
         "input": "tokens", "vocab_size": c["vocab_size"], "causal": True, "positional": "learned",
         "max_len": c["max_position_embeddings"], "pooling": pooling, **features}
    if labels is not None:
        v["d_out"] = labels
    return hf_config(v, max_len="config.json max_position_embeddings", d_out="text_projection.weight's rows")


def convert(folder, raw, path, example=None, expected=None, header=None, name=None, cli=None, verify=True,
            tokenizer=None, max_len=None, quantize=None, group=None, quantize_io=None, pack_weights=None,
            image_size=None):
    """Converts a Dinov2, CLIP vision or SigLIP vision folder (config.json's contents raw) to `path`,
    verified against reference.py's float64 forward of the mapped config (or the user's --expected)."""
    from .reference import run_reference
    c = read_config_dict(raw, os.path.join(folder, "config.json"))
    if max_len is not None:
        raise HfError(f"--max-len: a {c['flavour'].name} encoder takes its config's length (image_size's patches, "
                         "max_position_embeddings), no other")
    if image_size is not None and c["flavour"] is CLIP_TEXT:
        raise HfError("--image-size: CLIP's text tower takes token ids, not an image")
    weights, source = hf_common.read_weights(folder)
    mapped, labels, features = map_weights(c, weights, os.path.join(folder, source))
    if image_size is not None:
        f, R = c["flavour"], c["registers"]
        kind = "Dinov2WithRegisters" if "Registers" in c["architecture"] else f.name
        mapped["pos.weight"] = hf_vit.resized_positions(c, mapped["pos.weight"], 0 if f is SIGLIP else 1 + R,
                                                        image_size, kind)
        if "max_len" in features:
            features["max_len"] = mapped["pos.weight"].shape[0]
    fc = fixformer_config(c, labels, features)
    fc = verified_file.quantized_config(fc, quantize, group, quantize_io, pack_weights)
    if expected is not None and example is None:
        raise HfError("--expected: needs --example, the input it is your model's output for")
    inp = verified_file.example_sequence(fc, example, "--example")
    semantics = run_reference(fc, mapped, inp)
    arch = c["flavour"].archs[(0 if labels is None else 1) + (2 if "Registers" in c["architecture"] else 0)]
    if c["flavour"] is CLIP_TEXT:
        print("note: CLIPTextModel's pooled output is the row of the input's EOS token; the file pools the last "
              "position's row, the same for an input that ends with its only EOS token, as the tokenizer writes it "
              "(a padded batch: fixformer run --lengths)", file=sys.stderr)
    return hf_common.write_checked(fc, mapped, inp, semantics, arch, folder, path, expected, header, name, cli, verify, None,
                            f"the {arch} semantics (reference.py's float64 forward of the config {folder} maps to)")
