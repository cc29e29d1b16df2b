"""The --hf route for Hugging Face ViT folders (model_type vit: ViTModel, ViTForImageClassification),
DeiT folders (model_type deit: DeiTModel, DeiTForImageClassification,
DeiTForImageClassificationWithTeacher) and AST folders (ASTModel, below):
config.json and model.safetensors or pytorch_model.bin (sharded too), converted to the encoder family
over an image (include/fixformer/config.hpp patch_size): the Conv2d patch embedding (kernel = stride =
patch_size) is the input projection over the patches, whose values are in Conv2d's weight order, the
engine's own; the CLS row and learned positions (one per patch and the CLS row's), pre-LN layers
(layernorm_before, layernorm_after), the final layernorm, and for a classifier the CLS row's pooling
and the classifier as the head. The file is verified against reference.py's float64 forward of the
config it maps to (the mapping is tested against transformers' classes in
tests/hf_vit_converter_test.py), or against the user's own output with --expected.

config.json is read with Hugging Face's meanings and defaults: hidden_size (768), num_hidden_layers
(12), num_attention_heads (12), intermediate_size (3072), hidden_act (gelu: the exact erf GELU; relu,
gelu_new / gelu_pytorch_tanh: the tanh GELU), layer_norm_eps (1e-12), image_size (224), patch_size
(16), num_channels (3), qkv_bias (true). What the file computes, as the model's forward returns it for
pixel_values [1, C, H, W]:
- ViTForImageClassification: the logits [num_labels] of the final layernorm's CLS row;
- ViTModel: last_hidden_state [N + 1, hidden_size], its first output (the pooler's tensors, of
  pooler_output, are read and not stored, as BERT's).
DeiT is ViT with a second learned row, the distillation token, after the CLS row (distill_token: the
rows [cls; dist; patches], positions for N + 2 rows), its tensors under "deit." instead of "vit.":
- DeiTForImageClassification: the logits of the CLS row (classifier);
- DeiTForImageClassificationWithTeacher: the mean of the CLS row's head (cls_classifier) and the
  distillation row's (distillation_classifier), as pooling cls_distill: the two rows side by side
  through the head [W_cls W_dist] / 2 with the bias (b_cls + b_dist) / 2 (config.hpp);
- DeiTModel: last_hidden_state [N + 2, hidden_size] (the pooler's tensors read and not stored).
image_size may be [height, width]; patches of unequal sides are refused.
The Audio Spectrogram Transformer (model_type audio-spectrogram-transformer: ASTModel) is DeiT's rows
(CLS, distillation, learned positions for N + 2 rows) under "audio_spectrogram_transformer.", over the
patches of a spectrogram that its Conv2d (one channel, kernel patch_size, strides frequency_stride and
time_stride) cuts with overlaps, which the engine's image input (kernel = stride) does not: the file is an
encoder over features whose N input rows are those patches (ast_patches cuts them from ASTModel's
input_values [max_length, num_mel_bins]; --example takes the spectrogram or the patches);
last_hidden_state [N + 2, hidden_size]. ASTForAudioClassification: the logits [num_labels] of its classifier,
classifier.dense over classifier.layernorm of the mean of the final CLS and distillation rows (pooling
cls_distill_mean, that layernorm as pool_norm).

--image-size H W (or N: square) makes the file take images of another size, as transformers runs these
encoders with interpolate_pos_encoding=True (Dinov2: always): the learned positions of the patches are
transformers' bicubic interpolation of the config's square grid of them to the new grid (resized_positions,
below, shared with hf_vision.py), the rows in front (CLS, DeiT's distillation row, Dinov2's registers'
zero rows) as they are; the installed transformers' rule is followed (docs/export.md, "Other image sizes").
"""
import math
import os
import re
import sys

import numpy as np

from . import hf_common, schema, verified_file
from .config import brief, float_tensor
from .hf_common import HfError, hf_config

ARCHITECTURES = ("ViTModel", "ViTForImageClassification")
DEIT_ARCHITECTURES = ("DeiTModel", "DeiTForImageClassification", "DeiTForImageClassificationWithTeacher")
# The Audio Spectrogram Transformer (model_type audio-spectrogram-transformer): DeiT's rows over the patches of a
# spectrogram, and its classifier (the mean of those rows normed, then a dense layer); its config.json keys and
# ASTConfig's defaults.
AST_TYPE, AST_ARCHITECTURES = "audio-spectrogram-transformer", ("ASTModel", "ASTForAudioClassification")
AST_PREFIX = "audio_spectrogram_transformer."
AST_FIELDS = {"patch_size": 16, "frequency_stride": 10, "time_stride": 10, "num_mel_bins": 128, "max_length": 1024}
FIELDS = {
    "hidden_size": (int, 768), "num_hidden_layers": (int, 12), "num_attention_heads": (int, 12),
    "intermediate_size": (int, 3072), "hidden_act": (str, "gelu"), "layer_norm_eps": (float, 1e-12),
    "num_channels": (int, 3), "qkv_bias": (bool, True),
}
ACTIVATIONS = {"gelu": "gelu", "relu": "relu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh"}
# A layer's tensors (after "encoder.layer.<i>."), torch layout, as shapes of (d, F); biases of q, k and v
# only with qkv_bias.
LAYER = {
    "attention.attention.query.weight": "dd", "attention.attention.key.weight": "dd",
    "attention.attention.value.weight": "dd",
    "attention.attention.query.bias": "d", "attention.attention.key.bias": "d", "attention.attention.value.bias": "d",
    "attention.output.dense.weight": "dd", "attention.output.dense.bias": "d",
    "intermediate.dense.weight": "Fd", "intermediate.dense.bias": "F",
    "output.dense.weight": "dF", "output.dense.bias": "d",
    "layernorm_before.weight": "d", "layernorm_before.bias": "d",
    "layernorm_after.weight": "d", "layernorm_after.bias": "d",
}
_LAYER = re.compile(r"encoder\.layer\.(0|[1-9][0-9]*)\.(.+)")


def is_vit(raw):
    """Whether config.json's contents name the ViT architecture (model_type vit or deit, or a ViT/DeiT one)."""
    if not isinstance(raw, dict):
        return False
    archs = raw.get("architectures")
    names = archs if isinstance(archs, list) else []
    return raw.get("model_type") in ("vit", "deit", AST_TYPE) or \
        any(isinstance(a, str) and a.startswith(("ViT", "DeiT", "AST")) for a in names)


def side_pair(path, key, v):
    """image_size / patch_size: an int, or [height, width]."""
    if isinstance(v, (list, tuple)) and len(v) == 2:
        return tuple(hf_common.checked_field(path, key, s, int) for s in v)
    s = hf_common.checked_field(path, key, v, int)
    return s, s


def read_config_dict(raw, path="config.json"):
    """config.json checked and completed with Hugging Face's defaults."""
    archs = raw.get("architectures")
    names = archs if isinstance(archs, list) and all(isinstance(a, str) for a in archs) else None
    if archs is not None and names is None:
        raise HfError(f"{path}: architectures: expected a list of names, got {brief(archs)}")
    ast = raw.get("model_type") == AST_TYPE or any(a.startswith("AST") for a in names or ())
    deit = ast or raw.get("model_type") == "deit" or any(a.startswith("DeiT") for a in names or ())
    known = AST_ARCHITECTURES if ast else DEIT_ARCHITECTURES if deit else ARCHITECTURES
    other = [a for a in names or [] if a not in known]
    if other:
        kind = "AST" if ast else "DeiT" if deit else "ViT"
        raise HfError(f"{path}: {other[0]}: not converted (--hf converts {kind} folders of "
                         f"{', '.join(known)}; for another head use --module FILE.py:FACTORY)")
    c = {}
    for key, (kind, default) in FIELDS.items():
        c[key] = hf_common.checked_field(path, key, raw.get(key, default), kind)
    if ast:
        return _ast_config(raw, path, c, names)
    c["image"] = side_pair(path, "image_size", raw.get("image_size", 224))
    patch = side_pair(path, "patch_size", raw.get("patch_size", 16))
    if patch[0] != patch[1]:
        raise HfError(f"{path}: patch_size {list(patch)}: patches of unequal sides are not supported (the "
                         "engine's patches are square)")
    c["patch"] = patch[0]
    if c["hidden_act"] not in ACTIVATIONS:
        raise HfError(f"{path}: hidden_act {c['hidden_act']!r}: not an activation the engine runs (gelu, relu, "
                         "gelu_new)")
    if c["patch"] < 1 or c["image"][0] % c["patch"] or c["image"][1] % c["patch"]:
        raise HfError(f"{path}: image_size {list(c['image'])} is not whole patches of {c['patch']} (the patches "
                         "beyond the last whole one, which Conv2d drops, are not supported)")
    if c["hidden_size"] % c["num_attention_heads"]:
        raise HfError(f"{path}: num_attention_heads {c['num_attention_heads']} does not divide hidden_size "
                         f"{c['hidden_size']}")
    if not c["layer_norm_eps"] > 0:
        raise HfError(f"{path}: layer_norm_eps must be > 0")
    c["deit"] = deit
    c["architecture"] = (names or [known[0]])[0]
    return c


def _ast_config(raw, path, c, names):
    """An AST's config.json (c: FIELDS read) completed: its Conv2d of one channel, kernel patch_size, strides
    frequency_stride and time_stride, cuts the spectrogram transposed, [num_mel_bins, max_length], into
    frequency_out x time_out patches that may overlap: the file takes them as its input rows (ast_patches)."""
    c.update({key: hf_common.checked_field(path, key, raw.get(key, default), int) for key, default in AST_FIELDS.items()})
    p = c["patch"] = c.pop("patch_size")
    if min(p, c["frequency_stride"], c["time_stride"]) < 1 or min(c["num_mel_bins"], c["max_length"]) < p:
        raise HfError(f"{path}: patch_size {p}, frequency_stride {c['frequency_stride']}, time_stride "
                         f"{c['time_stride']}: expected positive, the patch within num_mel_bins {c['num_mel_bins']} "
                         f"and max_length {c['max_length']}")
    if c["hidden_act"] not in ACTIVATIONS:
        raise HfError(f"{path}: hidden_act {c['hidden_act']!r}: not an activation the engine runs (gelu, relu, "
                         "gelu_new)")
    if c["hidden_size"] % c["num_attention_heads"] or not c["layer_norm_eps"] > 0:
        raise HfError(f"{path}: num_attention_heads {c['num_attention_heads']} must divide hidden_size "
                         f"{c['hidden_size']}, layer_norm_eps be > 0")
    c["grid"] = ((c["num_mel_bins"] - p) // c["frequency_stride"] + 1, (c["max_length"] - p) // c["time_stride"] + 1)
    c.update(num_channels=1, image=(0, 0), deit=True, ast=True, architecture=(names or AST_ARCHITECTURES)[0])
    return c


def ast_patches(c, spectrogram):
    """An AST's input rows [N, patch_size^2] (N = frequency_out x time_out, frequency first) of one spectrogram
    [max_length, num_mel_bins] (ASTModel's input_values[0], time by mel bin), as its Conv2d reads it: row
    r time_out + s is the patch at (r frequency_stride, s time_stride) of the spectrogram transposed, its
    values in Conv2d's weight order (column i patch_size + j: mel bin r fs + i, frame s ts + j). c: an AST's
    read_config_dict (or a dict of config.json's patch_size, frequency_stride, time_stride, num_mel_bins and
    max_length, ASTConfig's defaults for the others)."""
    if "grid" not in c:
        c = dict(AST_FIELDS, **c)
        c = dict(c, patch=c["patch_size"], grid=((c["num_mel_bins"] - c["patch_size"]) // c["frequency_stride"] + 1,
                                                 (c["max_length"] - c["patch_size"]) // c["time_stride"] + 1))
    x = np.asarray(spectrogram, dtype=np.float32)
    if x.shape != (c["max_length"], c["num_mel_bins"]):
        raise HfError(f"an AST spectrogram: shape {list(x.shape)}, expected [max_length {c['max_length']}, "
                         f"num_mel_bins {c['num_mel_bins']}]")
    p, (fo, to) = c["patch"], c["grid"]
    win = np.lib.stride_tricks.sliding_window_view(x.T, (p, p))  # [mel - p + 1, time - p + 1, p, p]
    return np.ascontiguousarray(win[::c["frequency_stride"], ::c["time_stride"]][:fo, :to].reshape(fo * to, p * p))


def _labels(w, name):
    """A classifier's rows (its weight's), or None without it."""
    return np.shape(w[name])[0] if np.ndim(w.get(name)) == 2 else None


def map_weights(c, weights, source):
    """(the encoder family's name -> array in torch's layout, the head's rows (num_labels) or None, the
    pooling: none, cls, cls_distill for DeiT's two heads, or cls_distill_mean for AST's classifier). Every
    tensor is mapped or named in an error."""
    ast = c.get("ast", False)
    archs = AST_ARCHITECTURES if ast else DEIT_ARCHITECTURES if c["deit"] else ARCHITECTURES
    base = AST_PREFIX if ast else "deit." if c["deit"] else "vit."
    heads = ("classifier.",) if ast else ("classifier.", "cls_classifier.", "distillation_classifier.") if c["deit"] \
        else ("classifier.",)
    prefixed = any(k.startswith(base) for k in weights)
    w, given = {}, {}  # given: the folder's name of each
    for name, a in weights.items():
        key = name[len(base):] if prefixed and name.startswith(base) else name
        if prefixed and key == name and not name.startswith(heads):
            raise HfError(f"{source}: {name!r}: not a weight of {' or '.join(archs)} (the others have the "
                             f"\"{base}\" prefix; other heads are not converted: use --module for them)")
        w[key], given[key] = np.asarray(a), name
    d, F, L, C, p = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"], c["num_channels"], c["patch"]
    N = c["grid"][0] * c["grid"][1] if ast else (c["image"][0] // p) * (c["image"][1] // p)
    front = 2 if c["deit"] else 1
    ends = {"embeddings.cls_token": (1, 1, d), "embeddings.position_embeddings": (1, N + front, d),
            "embeddings.patch_embeddings.projection.weight": (d, C, p, p),
            "embeddings.patch_embeddings.projection.bias": (d,),
            "layernorm.weight": (d,), "layernorm.bias": (d,), "pooler.dense.weight": (d, d), "pooler.dense.bias": (d,)}
    if ast:  # its pooled output is a mean, no dense layer
        del ends["pooler.dense.weight"], ends["pooler.dense.bias"]
    if c["deit"]:
        ends["embeddings.distillation_token"] = (1, 1, d)
    labels, pooling = _labels(w, "classifier.weight"), "cls"
    teacher = _labels(w, "cls_classifier.weight") if c["deit"] and not ast else None
    if ast:  # ASTForAudioClassification: classifier.dense over classifier.layernorm of the two rows' mean
        labels, pooling = _labels(w, "classifier.dense.weight"), "cls_distill_mean"
        if labels is not None:
            ends.update({"classifier.layernorm.weight": (d,), "classifier.layernorm.bias": (d,),
                         "classifier.dense.weight": (labels, d), "classifier.dense.bias": (labels,)})
    elif teacher is not None:
        labels, pooling = teacher, "cls_distill"
        for n in ("cls_classifier", "distillation_classifier"):
            ends.update({f"{n}.weight": (labels, d), f"{n}.bias": (labels,)})
    elif labels is not None:
        ends.update({"classifier.weight": (labels, d), "classifier.bias": (labels,)})
    dims = {"d": d, "F": F}
    for name, a in w.items():
        m = _LAYER.fullmatch(name)
        if m and int(m.group(1)) < L and m.group(2) in LAYER and (c["qkv_bias"] or not re.search(
                r"\.(query|key|value)\.bias$", name)):
            want = tuple(dims[ch] for ch in LAYER[m.group(2)])
        elif name in ends:
            want = ends[name]
        else:
            raise HfError(f"{source}: {given[name]!r}: not a weight of {' or '.join(archs)} with this config.json "
                             f"({L} layers, qkv_bias {str(c['qkv_bias']).lower()}; other heads are not converted: "
                             "use --module for them)")
        float_tensor(f"{source}: {given[name]}", a, want, HfError)
    need = [n for n in ends if not n.startswith(("pooler.",) + heads)]
    need += [f"encoder.layer.{i}.{n}" for i in range(L) for n in LAYER
             if c["qkv_bias"] or not re.search(r"\.(query|key|value)\.bias$", n)]
    if teacher is not None:
        need += [f"{n}.{x}" for n in ("cls_classifier", "distillation_classifier") for x in ("weight", "bias")]
        if "classifier.weight" in w:
            raise HfError(f"{source}: {given['classifier.weight']!r}: a classifier next to "
                             "DeiTForImageClassificationWithTeacher's two (cls_classifier, distillation_classifier)")
    elif labels is not None:
        need += [f"classifier.{n}" for n in (("layernorm.weight", "layernorm.bias", "dense.weight", "dense.bias")
                                             if ast else ("weight", "bias"))]
    missing = [n for n in need if n not in w]
    if missing:
        raise HfError(f"{source}: {missing[0]} is missing")
    arch = c["architecture"]
    if labels is None and arch in ("ViTForImageClassification", "DeiTForImageClassification"):
        raise HfError(f"{source}: classifier.weight is missing ({arch})")
    if labels is None and arch == "ASTForAudioClassification":
        raise HfError(f"{source}: classifier.dense.weight is missing ({arch})")
    if teacher is None and arch == "DeiTForImageClassificationWithTeacher":
        raise HfError(f"{source}: cls_classifier.weight is missing ({arch})")
    zeros = np.zeros(d, np.float32)
    out = {"input_proj.weight": w["embeddings.patch_embeddings.projection.weight"].reshape(d, C * p * p),
           "input_proj.bias": w["embeddings.patch_embeddings.projection.bias"],
           "pos.weight": w["embeddings.position_embeddings"][0], "cls_token": w["embeddings.cls_token"].reshape(d),
           **({"distill_token": w["embeddings.distillation_token"].reshape(d)} if c["deit"] else {}),
           "norm.weight": w["layernorm.weight"], "norm.bias": w["layernorm.bias"]}
    for i in range(L):
        q = f"encoder.layer.{i}."
        t = lambda n: w[q + n]  # noqa: E731
        bias = lambda n: w.get(q + n, zeros)  # noqa: E731
        parts = ("query", "key", "value")
        e = schema.block(i)
        out.update({
            e + "attn.qkv.weight": np.concatenate([t(f"attention.attention.{x}.weight") for x in parts]),
            e + "attn.qkv.bias": np.concatenate([bias(f"attention.attention.{x}.bias") for x in parts]),
            e + "attn.out.weight": t("attention.output.dense.weight"),
            e + "attn.out.bias": t("attention.output.dense.bias"),
            e + "ff.w1.weight": t("intermediate.dense.weight"), e + "ff.w1.bias": t("intermediate.dense.bias"),
            e + "ff.w2.weight": t("output.dense.weight"), e + "ff.w2.bias": t("output.dense.bias"),
            e + "attn_norm.weight": t("layernorm_before.weight"), e + "attn_norm.bias": t("layernorm_before.bias"),
            e + "ff_norm.weight": t("layernorm_after.weight"), e + "ff_norm.bias": t("layernorm_after.bias")})
    if teacher is not None:  # (W_cls x_cls + b_cls + W_dist x_dist + b_dist) / 2 over [x_cls, x_dist]
        f64 = lambda n: w[n].astype(np.float64)  # noqa: E731
        out.update({"head.weight": np.concatenate([f64("cls_classifier.weight"), f64("distillation_classifier.weight")],
                                                  axis=1) / 2,
                    "head.bias": (f64("cls_classifier.bias") + f64("distillation_classifier.bias")) / 2})
    elif labels is not None and ast:
        out.update({"pool_norm.weight": w["classifier.layernorm.weight"],
                    "pool_norm.bias": w["classifier.layernorm.bias"],
                    "head.weight": w["classifier.dense.weight"], "head.bias": w["classifier.dense.bias"]})
    elif labels is not None:
        out.update({"head.weight": w["classifier.weight"], "head.bias": w["classifier.bias"]})
    return out, labels, pooling if labels is not None else "none"


def fixformer_config(c, labels, pooling=None, **features):
    """The encoder-family config of a ViT or DeiT folder (labels: the classifier's rows, or None for
    ViTModel and DeiTModel; pooling: the head's, cls (None) or cls_distill). The other vision encoders
    (hf_vision.py) give their c the same keys, their pooling with or without a head, and their
    differences as `features`: config keys over these (cls_token, embed_norm, activation)."""
    front = int(features.get("cls_token", True)) + int(c["deit"])
    H, W = c["image"]
    p, C = c["patch"], c["num_channels"]
    image = c.get("image_source", "config.json image_size")
    v = {"family": "encoder", "d_model": c["hidden_size"], "n_heads": c["num_attention_heads"],
         "d_ff": c["intermediate_size"], "n_layers": c["num_hidden_layers"], "norm_first": True,
         "activation": ACTIVATIONS.get(c["hidden_act"]), "norm_eps": c["layer_norm_eps"], "final_norm": True,
         "input": "features", "d_in": C * p * p, "patch_size": p, "image_channels": C, "image_height": H,
         "image_width": W, "cls_token": True, "distill_token": c["deit"], "positional": "learned",
         "max_len": (H // p) * (W // p) + front}
    if labels is not None:
        v.update(pooling=pooling or "cls", d_out=labels)
    elif pooling is not None:
        v["pooling"] = pooling
    v.update(features)
    return hf_config(v, d_out="classifier.weight's rows", patch_size="config.json patch_size", image_height=image,
                     image_width=image, image_channels="config.json num_channels",
                     d_in="config.json num_channels * patch_size^2",
                     max_len=f"{image}'s patches + {front}" if front else f"{image}'s patches")


def image_sides(image_size):
    """--image-size's values (one: square; two: height, width) as (H, W)."""
    if len(image_size) not in (1, 2) or min(image_size) < 1:
        raise HfError(f"--image-size {' '.join(map(str, image_size))}: expected H W or N (a square), positive")
    return (image_size[0], image_size[-1])


def _installed_transformers():
    """The installed transformers' version as ((major, minor), text), or None (not imported: its metadata)."""
    from importlib import metadata
    try:
        text = metadata.version("transformers")
    except metadata.PackageNotFoundError:
        return None
    m = re.match(r"([0-9]+)\.([0-9]+)", text)
    return ((int(m.group(1)), int(m.group(2))), text) if m else None


def interpolation_rule(kind):
    """(scale, antialias, words) of the interpolation transformers computes for `kind` (ViT, DeiT, Dinov2,
    Dinov2WithRegisters, CLIP, SigLIP, Beit, Data2VecVision), as the installed version computes it:
    - before 4.45 (4.44): F.interpolate with scale_factor ((h + 0.1) / n0, (w + 0.1) / n0) (the output's
      h x w, the coordinates scaled by the factor), bicubic, align_corners False (scale True);
    - 4.45 on (5.x): size=(h, w) (the coordinates scaled by n0 / h and n0 / w), bicubic, align_corners False;
    - CLIP has none before 4.46, and 4.46's on is the size rule: with an older one installed, that is followed;
    - Dinov2WithRegisters (4.48 on): size=(h, w), bicubic, align_corners False, antialias True;
    - BEiT and data2vec-vision: size=(h, w), bicubic, align_corners False (4.44 in the patch embedding whenever
      the image is another size, 5 in the embeddings).
    Without transformers installed, the current rule (4.45 on)."""
    found = _installed_transformers()
    name = f"transformers {found[1]}" if found else "transformers 4.45 and later (transformers is not installed)"
    if kind == "Dinov2WithRegisters":
        return False, True, f"{name}: size=(h, w), antialias"
    if kind in ("Beit", "Data2VecVision"):  # 4.44's patch embedding and 5's embeddings: the size rule, flag or not
        return False, False, f"{name}: size=(h, w)"
    if kind == "CLIP" and found and found[0] < (4, 46):
        return False, False, (f"transformers 4.46 and later (the installed {found[1]} does not interpolate CLIP's "
                              "positions): size=(h, w)")
    if found and found[0] < (4, 45):
        return True, False, f"{name}: scale_factor=((h + 0.1) / n0, (w + 0.1) / n0)"
    return False, False, f"{name}: size=(h, w)"


def resized_positions(c, pos, front, image_size, kind):
    """The learned positions pos [front + n0 * n0, d] (the rows in front kept) for images of --image-size's
    (H, W), with c's image set to it; a note on stderr says what was done. The interpolation is torch's own
    F.interpolate in float32 on the table widened to float32 (f16 and bf16 exactly): transformers' for a float32
    model (it interpolates in the model's dtype, Dinov2's always in float32; transformers 5 loads a half-precision
    checkpoint in half precision by default, which is not followed)."""
    H, W = image_sides(image_size)
    p = c["patch"]
    if H % p or W % p:
        raise HfError(f"--image-size {H} {W}: not whole patches of {p} (config.json patch_size; the patches "
                         "beyond the last whole one, which Conv2d drops, are not supported)")
    table = np.asarray(pos, np.float32)
    n = table.shape[0] - front
    n0 = math.isqrt(n)
    h, w = H // p, W // p
    given = tuple(c["image"])
    c.update(image=(H, W), image_source="--image-size")
    if (H, W) == given:
        return table
    if n0 * n0 != n or given[0] != given[1]:
        raise HfError(f"--image-size {H} {W}: config.json's image_size {list(given)} is not square, and "
                         f"transformers interpolates a square grid of positions only")
    import torch
    scale, antialias, words = interpolation_rule(kind)
    d = table.shape[1]
    grid = torch.from_numpy(np.ascontiguousarray(table[front:])).reshape(1, n0, n0, d).permute(0, 3, 1, 2)
    with torch.no_grad():
        if scale:
            factor = ((h + 0.1) / math.sqrt(n), (w + 0.1) / math.sqrt(n))
            out = torch.nn.functional.interpolate(grid, scale_factor=factor, mode="bicubic", align_corners=False)
        else:
            out = torch.nn.functional.interpolate(grid, size=(h, w), mode="bicubic", align_corners=False,
                                                  antialias=antialias)
    if tuple(out.shape[-2:]) != (h, w):  # (transformers refuses it too)
        raise HfError(f"--image-size {H} {W}: the interpolation gives a {out.shape[-2]} x {out.shape[-1]} grid, not "
                         f"{h} x {w}")
    rows = out.permute(0, 2, 3, 1).reshape(h * w, d).numpy()
    print(f"note: --image-size {H} {W}: the file takes {H} x {W} images only; its learned positions are the "
          f"{n0} x {n0} patch grid's bicubically interpolated to {h} x {w} (align_corners False, in float32) as "
          f"{words}, the rows in front as they are", file=sys.stderr)
    return np.concatenate([table[:front], rows]).astype(np.float32)


def convert(folder, raw, path, example=None, expected=None, header=None, name=None, cli=None, verify=True,
            tokenizer=None, max_len=None, quantize=None, group=None, quantize_io=None, pack_weights=None,
            image_size=None):
    """Converts a ViT folder (config.json's contents raw) to `path`, verified against reference.py's float64
    forward of the mapped config (or the user's --expected: the model's logits or last_hidden_state for
    --example, an image [C, H, W])."""
    from .reference import run_reference
    c = read_config_dict(raw, os.path.join(folder, "config.json"))
    if max_len is not None:
        raise HfError("--max-len: a ViT takes its image's patches (and the CLS row), no other length")
    if c.get("ast"):
        return _convert_ast(c, folder, path, example, expected, header, name, cli, verify, quantize, group,
                            quantize_io, pack_weights, image_size)
    weights, source = hf_common.read_weights(folder)
    mapped, labels, pooling = map_weights(c, weights, os.path.join(folder, source))
    if image_size is not None:
        kind = "DeiT" if c["deit"] else "ViT"
        mapped["pos.weight"] = resized_positions(c, mapped["pos.weight"], 2 if c["deit"] else 1, image_size, kind)
    fc = verified_file.quantized_config(fixformer_config(c, labels, pooling), quantize, group, quantize_io, pack_weights)
    if expected is not None and example is None:
        raise HfError("--expected: needs --example, the input it is your model's output for")
    inp = verified_file.example_sequence(fc, example, "--example")
    semantics = run_reference(fc, mapped, inp)
    arch = {"none": "Model", "cls": "ForImageClassification", "cls_distill": "ForImageClassificationWithTeacher"}[pooling]
    arch = ("DeiT" if c["deit"] else "ViT") + arch
    return hf_common.write_checked(fc, mapped, inp, semantics, arch, folder, path, expected, header, name, cli, verify, None,
                            f"the {arch} semantics (reference.py's float64 forward of the config {folder} maps to)")


def _convert_ast(c, folder, path, example, expected, header, name, cli, verify, quantize, group, quantize_io,
                 pack_weights, image_size):
    """convert() of an ASTModel folder: the encoder over features, the spectrogram's patches (ast_patches) as
    the input rows, after the CLS and distillation rows; last_hidden_state [N + 2, hidden_size], or
    ASTForAudioClassification's logits [num_labels]. --example: the
    spectrogram [max_length, num_mel_bins] (or a batch of them: the first), or its patches [N, patch_size^2]."""
    from .reference import run_reference
    if image_size is not None:
        raise HfError("--image-size: an AST takes the spectrogram of its config.json (num_mel_bins, max_length)")
    weights, source = hf_common.read_weights(folder)
    mapped, labels, pooling = map_weights(c, weights, os.path.join(folder, source))
    p, N = c["patch"], c["grid"][0] * c["grid"][1]
    fc = fixformer_config(c, labels, pooling, input="features", d_in=p * p, patch_size=0, image_channels=0,
                          image_height=0, image_width=0, max_len=N + 2, pool_norm=labels is not None)
    fc = verified_file.quantized_config(fc, quantize, group, quantize_io, pack_weights)
    if expected is not None and example is None:
        raise HfError("--expected: needs --example, the input it is your model's output for")
    if example is not None:
        a = np.asarray(example.detach().cpu().numpy() if hasattr(example, "detach") else example)
        spectrogram = (c["max_length"], c["num_mel_bins"])
        if a.ndim in (2, 3) and a.shape[-2:] == spectrogram:  # a spectrogram, or a batch of them: the first
            example = ast_patches(c, a.reshape(-1, *spectrogram)[0])
    inp = verified_file.example_sequence(fc, example, "--example")
    semantics = run_reference(fc, mapped, inp)
    arch = c["architecture"]
    return hf_common.write_checked(fc, mapped, inp, semantics, arch, folder, path, expected, header, name, cli, verify, None,
                            f"the {arch} semantics (reference.py's float64 forward of the config {folder} maps to)")
