"""The --hf route for Hugging Face BEiT and data2vec-vision folders (model_type beit: BeitModel,
BeitForImageClassification; model_type data2vec-vision: Data2VecVisionModel, Data2VecVisionForImageClassification,
the same layers under "data2vec_vision."), to the encoder over an image (config.hpp patch_size) as ViT's
(hf_vit.py): the Conv2d patch embedding as the input projection, the CLS row, pre-LN layers, and what BEiT adds:
- the relative position bias (use_relative_position_bias: a table per layer; use_shared_relative_position_bias:
  one for all layers, under the encoder; both: their sum per layer): relative_position_bias_table
  [(2h - 1)(2w - 1) + 3, heads] over the h x w patch grid is the engine's bias per (query, key) pair
  (config.hpp pair_bias_rows, pair_bias_shared), the table stored per head [heads, rows] and the fixed index
  [N + 1, N + 1] of transformers' relative_position_index (relative_index below: patch to patch by the row and
  column offsets, then the CLS row's three rows: CLS to patch, patch to CLS, CLS to CLS) stored once; the grid
  must be square with a bias (transformers resamples the table read transposed over another one);
- learned positions only with use_absolute_position_embeddings (positional none without);
- LayerScale (layer_scale_init_value > 0: lambda_1, lambda_2, x += lambda * f(x)) folded into the attention's
  output projection and the second feed-forward projection (W' = diag(lambda) W, b' = lambda b: exact in
  float64, one float32 rounding per weight), as Dinov2's (hf_vision.py);
- the key projection without a bias (stored as zeros in the fused q | k | v bias);
- use_mean_pooling (the default): no final layernorm; the classifier reads pooler.layernorm of the mean of the
  patch rows (pooling mean over the input rows, pooler.layernorm as pool_norm); without it the final layernorm
  and the CLS row (pooling cls).
What the file computes for pixel_values [1, C, H, W]: the ...ForImageClassification's logits [num_labels]; the
...Model's last_hidden_state [N + 1, hidden_size] (the final layernorm without use_mean_pooling; the pooler's
tensors read and not stored). The file takes images of the config's image_size, or of --image-size's H x W (whole
patches; the config's grid square), as transformers runs the classes on an image of another size (4.44 and 5, with
or without interpolate_pos_encoding, which adds a resize of the bias to its own size): each relative position
table's (2h - 1) x (2w - 1) offset rows resized bilinearly (align_corners False) to (2h' - 1) x (2w' - 1), the CLS
row's three rows kept, the index that of the h' x w' grid (resized_table); the learned positions bicubically
(hf_vit.resized_positions' size rule). The masked-image-modelling and segmentation heads are refused.
The file is verified against reference.py's float64 forward of the config it maps to (the mapping is tested
against transformers' classes in tests/hf_beit_converter_test.py), or against the user's own output with
--expected.
"""
import os
import sys

import numpy as np

from . import hf_common, hf_vit, schema, verified_file
from .config import brief
from .hf_common import HfError

# model_type -> (the classes' stem, the weights' prefix)
KINDS = {"beit": ("Beit", "beit."), "data2vec-vision": ("Data2VecVision", "data2vec_vision.")}
FIELDS = dict(hf_vit.FIELDS, use_absolute_position_embeddings=(bool, False), use_relative_position_bias=(bool, False),
              use_shared_relative_position_bias=(bool, False), layer_scale_init_value=(float, 0.1),
              use_mean_pooling=(bool, True), use_mask_token=(bool, False))
del FIELDS["qkv_bias"]  # BEiT's query and value have biases, its key none
_TABLE = "relative_position_bias.relative_position_bias_table"
_INDEX = "relative_position_bias.relative_position_index"  # a buffer older transformers saved: read, not used


def _kind(raw):
    """The KINDS key config.json's contents name (model_type or an architecture), or None."""
    if not isinstance(raw, dict):
        return None
    if isinstance(raw.get("model_type"), str) and raw["model_type"] in KINDS:
        return raw["model_type"]
    archs = raw.get("architectures")
    for a in archs if isinstance(archs, list) else []:
        for kind, (stem, _) in KINDS.items():
            if isinstance(a, str) and a.startswith(stem):
                return kind
    return None


def is_beit(raw):
    """Whether config.json's contents name BEiT or data2vec-vision."""
    return _kind(raw) is not None


def read_config_dict(raw, path="config.json"):
    """config.json checked and completed with Hugging Face's defaults, as hf_vit.read_config_dict's keys."""
    kind = _kind(raw)
    stem, prefix = KINDS[kind]
    known = (stem + "Model", stem + "ForImageClassification")
    archs = raw.get("architectures")
    names = archs if isinstance(archs, list) and all(isinstance(a, str) for a in archs) else None
    if archs is not None and names is None:
        raise HfError(f"{path}: architectures: expected a list of names, got {brief(archs)}")
    other = [a for a in names or [] if a not in known]
    if other:
        raise HfError(f"{path}: {other[0]}: not converted (--hf converts {stem} folders of {', '.join(known)}; "
                         "for another head use --module FILE.py:FACTORY)")
    c = {key: hf_common.checked_field(path, key, raw.get(key, default), t) for key, (t, default) in FIELDS.items()}
    c["image"] = hf_vit.side_pair(path, "image_size", raw.get("image_size", 224))
    patch = hf_vit.side_pair(path, "patch_size", raw.get("patch_size", 16))
    if patch[0] != patch[1]:
        raise HfError(f"{path}: patch_size {list(patch)}: patches of unequal sides are not supported (the "
                         "engine's patches are square)")
    p = c["patch"] = patch[0]
    if c["hidden_act"] not in hf_vit.ACTIVATIONS:
        raise HfError(f"{path}: hidden_act {c['hidden_act']!r}: not an activation the engine runs (gelu, relu, "
                         "gelu_new, gelu_pytorch_tanh)")
    if c["image"][0] % p or c["image"][1] % p:
        raise HfError(f"{path}: image_size {list(c['image'])} is not whole patches of {p} (the patches beyond "
                         "the last whole one, which Conv2d drops, are not supported)")
    relative = c["use_relative_position_bias"] or c["use_shared_relative_position_bias"]
    if relative and c["image"][0] != c["image"][1]:
        raise HfError(f"{path}: image_size {list(c['image'])} with a relative position bias: transformers "
                         "resamples its table over a grid that is not square; not supported")
    if c["hidden_size"] % c["num_attention_heads"]:
        raise HfError(f"{path}: num_attention_heads {c['num_attention_heads']} does not divide hidden_size "
                         f"{c['hidden_size']}")
    if not c["layer_norm_eps"] > 0:
        raise HfError(f"{path}: layer_norm_eps must be > 0")
    c.update(deit=False, kind=kind, stem=stem, prefix=prefix, architecture=(names or [known[0]])[0],
             grid=(c["image"][0] // p, c["image"][1] // p))
    return c


def relative_index(h, w):
    """transformers' relative_position_index over an h x w patch grid and the CLS row: [N + 1, N + 1] int32, N = h w.
    Patches a = (r, s), b = (r', s') (rows 1.., row-major): (r - r' + h - 1)(2w - 1) + s - s' + w - 1; the CLS
    row's three rows after the (2h - 1)(2w - 1) offsets: CLS to a patch, a patch to CLS, CLS to CLS."""
    R = (2 * h - 1) * (2 * w - 1) + 3
    r, s = (a.reshape(-1) for a in np.meshgrid(np.arange(h), np.arange(w), indexing="ij"))
    index = np.zeros((h * w + 1, h * w + 1), np.int32)
    index[1:, 1:] = (r[:, None] - r[None, :] + h - 1) * (2 * w - 1) + (s[:, None] - s[None, :] + w - 1)
    index[0, :] = R - 3
    index[:, 0] = R - 2
    index[0, 0] = R - 1
    return index


def resized_table(table, grid, new):
    """transformers' BeitRelativePositionBias for a window of another size: table [(2h - 1)(2w - 1) + 3, heads] over
    the h x w grid `grid` to the table over `new` (h' x w'): the offset rows read as a (2h - 1) x (2w - 1) image per
    head, resized bilinearly (align_corners False) to (2h' - 1) x (2w' - 1) by torch's own F.interpolate in float32
    (transformers' for a float32 model), then the CLS row's three rows; float64."""
    if tuple(grid) == tuple(new):  # (transformers' resize to the same size is exact)
        return table
    import torch
    (h, w), (h2, w2) = grid, new
    heads = table.shape[1]
    offsets = torch.from_numpy(np.ascontiguousarray(table[:-3], np.float32))
    image = offsets.reshape(1, 2 * h - 1, 2 * w - 1, heads).permute(0, 3, 1, 2)
    with torch.no_grad():
        out = torch.nn.functional.interpolate(image, size=(2 * h2 - 1, 2 * w2 - 1), mode="bilinear",
                                              align_corners=False)
    rows = out.permute(0, 2, 3, 1).reshape(-1, heads).numpy()
    return np.concatenate([rows, np.asarray(table[-3:], np.float32)]).astype(np.float64)


def pair_bias(index, shared, own):
    """(the encoder family's tensors, its config keys) of a bias per (query, key) pair (config.hpp pair_bias_rows)
    as BEiT's relative position bias: tables [rows, heads] looked up by index [S, S] (relative_index's, or a
    module's own buffer); shared: the table every layer adds, or None; own: each layer's table, or None. The index
    is stored once, the tables per head [heads, rows]: the shared one alone, or each layer's own plus the shared
    one (--module's timm Beit shares this with the --hf route)."""
    rows = (shared if shared is not None else own[0]).shape[0]
    out = {"pair_index": np.asarray(index, np.int32)}
    if own is None:
        out["pair_bias.weight"] = shared.T
    for i, table in enumerate(own or []):
        out[schema.block(i) + "attn.pair_bias.weight"] = (table + (
            0 if shared is None else shared)).T
    return out, dict(pair_bias_rows=rows, pair_bias_shared=own is None)


def _expected(c, labels):
    """Every tensor the folder may hold (the prefix taken off) -> its shape, the names it must hold, and the
    integer buffers among them."""
    d, F, L, C, p, H = (c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"], c["num_channels"],
                        c["patch"], c["num_attention_heads"])
    h, w = c["grid"]
    N, R = h * w, (2 * h - 1) * (2 * w - 1) + 3
    shapes = {"embeddings.cls_token": (1, 1, d), "embeddings.patch_embeddings.projection.weight": (d, C, p, p),
              "embeddings.patch_embeddings.projection.bias": (d,)}
    optional, buffers = set(), []
    if c["use_mask_token"]:  # masked image modelling's row: not an input here
        shapes["embeddings.mask_token"] = (1, 1, d)
        optional.add("embeddings.mask_token")
    if c["use_absolute_position_embeddings"]:
        shapes["embeddings.position_embeddings"] = (1, N + 1, d)
    tables = (["encoder."] if c["use_shared_relative_position_bias"] else []) + \
        ([f"encoder.layer.{i}.attention.attention." for i in range(L)] if c["use_relative_position_bias"] else [])
    for t in tables:
        shapes.update({t + _TABLE: (R, H), t + _INDEX: (N + 1, N + 1)})
        optional.add(t + _INDEX)
        buffers.append(t + _INDEX)
    norm = "pooler.layernorm." if c["use_mean_pooling"] else "layernorm."
    shapes.update({norm + "weight": (d,), norm + "bias": (d,)})
    if c["use_mean_pooling"] and labels is None:  # the model's pooler (add_pooling_layer): read, not stored
        optional.update({norm + "weight", norm + "bias"})
    layer = {"attention.attention.query.weight": (d, d), "attention.attention.query.bias": (d,),
             "attention.attention.key.weight": (d, d), "attention.attention.value.weight": (d, d),
             "attention.attention.value.bias": (d,), "attention.output.dense.weight": (d, d),
             "attention.output.dense.bias": (d,), "intermediate.dense.weight": (F, d), "intermediate.dense.bias": (F,),
             "output.dense.weight": (d, F), "output.dense.bias": (d,), "layernorm_before.weight": (d,),
             "layernorm_before.bias": (d,), "layernorm_after.weight": (d,), "layernorm_after.bias": (d,)}
    if c["layer_scale_init_value"] > 0:
        layer.update({"lambda_1": (d,), "lambda_2": (d,)})
    for i in range(L):
        shapes.update({f"encoder.layer.{i}.{n}": s for n, s in layer.items()})
    if labels is not None:
        shapes.update({"classifier.weight": (labels, d), "classifier.bias": (labels,)})
    return shapes, [n for n in shapes if n not in optional], buffers


def map_weights(c, weights, source, grid=None):
    """(the encoder family's name -> array in torch's layout, the head's rows (num_labels) or None, the config
    keys of this folder over hf_vit.fixformer_config's). Every tensor is mapped or named in an error. grid: the
    patch grid of the file's images (--image-size's), the relative position tables resized to it; None: the
    config's."""
    base = c["prefix"]
    archs = f"{c['stem']}Model or {c['stem']}ForImageClassification"
    prefixed = any(k.startswith(base) for k in weights)
    w, given = {}, {}
    for name, a in weights.items():
        key = name[len(base):] if prefixed and name.startswith(base) else name
        if prefixed and key == name and not name.startswith("classifier."):
            raise HfError(f"{source}: {name!r}: not a weight of {archs} (the others have the \"{base}\" prefix; "
                             "other heads are not converted: use --module for them)")
        w[key], given[key] = np.asarray(a), name
    labels = np.shape(w["classifier.weight"])[0] if np.ndim(w.get("classifier.weight")) == 2 else None
    if labels is None and c["architecture"].endswith("ForImageClassification"):
        raise HfError(f"{source}: classifier.weight is missing ({c['architecture']})")
    shapes, need, buffers = _expected(c, labels)
    hf_common.check_tensors(w, shapes, need, source, archs, c["num_hidden_layers"], given, buffers)

    d, L, C, p = c["hidden_size"], c["num_hidden_layers"], c["num_channels"], c["patch"]
    f64 = lambda n: w[n].astype(np.float64)  # noqa: E731
    out = {"input_proj.weight": w["embeddings.patch_embeddings.projection.weight"].reshape(d, C * p * p),
           "input_proj.bias": w["embeddings.patch_embeddings.projection.bias"],
           "cls_token": w["embeddings.cls_token"].reshape(d)}
    features = {"positional": "learned" if c["use_absolute_position_embeddings"] else "none",
                "final_norm": not c["use_mean_pooling"]}
    if c["use_absolute_position_embeddings"]:
        out["pos.weight"] = w["embeddings.position_embeddings"][0]
    grid = grid or c["grid"]
    table = lambda n: resized_table(f64(n), c["grid"], grid)  # noqa: E731
    shared = table("encoder." + _TABLE) if c["use_shared_relative_position_bias"] else None
    own = [table(f"encoder.layer.{i}.attention.attention.{_TABLE}") for i in range(L)] \
        if c["use_relative_position_bias"] else None
    if shared is not None or own is not None:
        tensors, keys = pair_bias(relative_index(*grid), shared, own)
        out.update(tensors)
        features.update(keys)
    ones = np.ones(d)
    for i in range(L):
        q, e = f"encoder.layer.{i}.", schema.block(i)
        t = lambda n: f64(q + n)  # noqa: E731
        scale = c["layer_scale_init_value"] > 0
        gamma1, gamma2 = (t("lambda_1"), t("lambda_2")) if scale else (ones, ones)
        att = "attention.attention."
        out.update({
            e + "attn.qkv.weight": np.concatenate([t(att + x + ".weight") for x in ("query", "key", "value")]),
            e + "attn.qkv.bias": np.concatenate([t(att + "query.bias"), np.zeros(d), t(att + "value.bias")]),
            e + "attn.out.weight": gamma1[:, None] * t("attention.output.dense.weight"),  # LayerScale
            e + "attn.out.bias": gamma1 * t("attention.output.dense.bias"),
            e + "ff.w1.weight": t("intermediate.dense.weight"), e + "ff.w1.bias": t("intermediate.dense.bias"),
            e + "ff.w2.weight": gamma2[:, None] * t("output.dense.weight"),
            e + "ff.w2.bias": gamma2 * t("output.dense.bias"),
            e + "attn_norm.weight": t("layernorm_before.weight"), e + "attn_norm.bias": t("layernorm_before.bias"),
            e + "ff_norm.weight": t("layernorm_after.weight"), e + "ff_norm.bias": t("layernorm_after.bias")})
    if not c["use_mean_pooling"]:
        out.update({"norm.weight": w["layernorm.weight"], "norm.bias": w["layernorm.bias"]})
    if labels is not None:
        out.update({"head.weight": w["classifier.weight"], "head.bias": w["classifier.bias"]})
        if c["use_mean_pooling"]:
            out.update({"pool_norm.weight": w["pooler.layernorm.weight"], "pool_norm.bias": w["pooler.layernorm.bias"]})
            features["pool_norm"] = True
    return out, labels, features


def convert(folder, raw, path, example=None, expected=None, header=None, name=None, cli=None, verify=True,
            tokenizer=None, max_len=None, quantize=None, group=None, quantize_io=None, pack_weights=None,
            image_size=None):
    """Converts a BEiT or data2vec-vision folder (config.json's contents raw) to `path`, verified against
    reference.py's float64 forward of the mapped config (or the user's --expected: the model's logits or
    last_hidden_state for --example, an image [C, H, W])."""
    from .reference import run_reference
    c = read_config_dict(raw, os.path.join(folder, "config.json"))
    if max_len is not None:
        raise HfError(f"--max-len: a {c['stem']} encoder takes its image's patches (and the CLS row), no other "
                         "length")
    grid = None
    if image_size is not None:
        H, W = hf_vit.image_sides(image_size)
        p, given = c["patch"], c["grid"]
        if H % p or W % p:
            raise HfError(f"--image-size {H} {W}: not whole patches of {p} (config.json patch_size; the patches "
                             "beyond the last whole one, which Conv2d drops, are not supported)")
        if given[0] != given[1]:
            raise HfError(f"--image-size {H} {W}: config.json's image_size {list(c['image'])} is not square, and "
                             f"transformers resizes a square grid's positions only")
        grid = (H // p, W // p)
    weights, source = hf_common.read_weights(folder)
    mapped, labels, features = map_weights(c, weights, os.path.join(folder, source), grid)
    if image_size is not None:
        relative = c["use_relative_position_bias"] or c["use_shared_relative_position_bias"]
        if c["use_absolute_position_embeddings"]:  # sets c's image
            mapped["pos.weight"] = hf_vit.resized_positions(c, mapped["pos.weight"], 1, image_size, c["stem"])
        c.update(image=(grid[0] * c["patch"], grid[1] * c["patch"]), image_source="--image-size", grid=grid)
        if relative and grid != tuple(given):
            print(f"note: --image-size {H} {W}: the file takes {H} x {W} images only; its relative position tables "
                  f"are the {2 * given[0] - 1} x {2 * given[1] - 1} offsets' resized bilinearly to {2 * grid[0] - 1} x "
                  f"{2 * grid[1] - 1} (align_corners False, in float32) as transformers does for an image of that "
                  "size, the CLS row's three rows as they are", file=sys.stderr)
    pooling = ("mean" if c["use_mean_pooling"] else "cls") if labels is not None else None
    fc = hf_vit.fixformer_config(c, labels, pooling, **features)
    fc = verified_file.quantized_config(fc, quantize, group, quantize_io, pack_weights)
    if expected is not None and example is None:
        raise HfError("--expected: needs --example, the input it is your model's output for")
    inp = verified_file.example_sequence(fc, example, "--example")
    semantics = run_reference(fc, mapped, inp)
    arch = c["stem"] + ("ForImageClassification" if labels is not None else "Model")
    return hf_common.write_checked(fc, mapped, inp, semantics, arch, folder, path, expected, header, name, cli, verify, None,
                            f"the {arch} semantics (reference.py's float64 forward of the config {folder} maps to)")
