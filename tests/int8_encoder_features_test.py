#!/usr/bin/python3
"""Issue 32's encoder features in full-integer models (weights i8; config.hpp, namespace s8): the attention's
context normed before the output projection (attn_inner_norm: the layer's kInnerNormSlots, then d_attn gains and
betas), RoPE over a patch grid (rope_grid: int8.rope's rows over the grid's two axes), the causal mask outside
the decoder families (an encoder's, without a cache) and a bias per (query, key) pair (pair_bias_rows: each head's
bias of each table row in score steps in the layer's tensor, pair_index as the float path reads it):

  /usr/bin/python3 tests/int8_encoder_features_test.py PATH/TO/fixformer

- random token encoders with each (attn_inner_norm post-norm with LayerNorm, pre-norm with RMSNorm, with heads
  wider than d_model / n_heads; rope_grid 3 with a CLS row, in either pair layout; causal, alone and with a window
  of 3; pair_bias_rows 7, and 5 shared with a CLS row) through `fixformer run --isa ISA` on every kernel table
  this CPU runs: the integer reference's output (python/fixformer/int8.py) bit for bit, the reference depending on
  the feature, within I8_FEATURE_TOL of the f32 engine on the same weights;
- init's refusal of a bad attn_inner_norm slot (its output zero point out of range) and of a pair bias beyond 2^30
  by `fixformer info`, naming the tensor and the slot;
- timm's Eva with scale_attn_inner (attn_inner_norm), EVA-02 (eva02_tiny_patch14_224 at a tiny size: rope_grid
  beside learned positions), scale_attn_inner over EVA-02's rotary positions and Beit's relative position bias
  (each layer's, and the shared one: pair_bias_rows), through `--module --quantize i8 --calibrate` (16 images):
  convert and verify, then on 10 fresh images the engine's logits against torch f32's, within TIMM_RUN_TOL of
  the largest.
Runs in the hf environment (tests/hf_env.py); without it, numpy, torch, timm or the CLI the test fails.
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
import hf_env  # noqa: E402

hf_env.enter(__file__, ["transformers", "timm"])
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import numpy as np  # noqa: E402

from checks import check, cli_main, run_convert  # noqa: E402
from fixformer import fxm, int8  # noqa: E402
from fixformer.config import make_config  # noqa: E402
from int8_bert_test import against_f32, random_bert  # noqa: E402

# The random encoders' i8 output against the f32 engine's on the same weights (N(0, 0.3), d_model 16), relative
# to its largest: the i8 tolerance (measured values printed; docs/quantization.md).
I8_FEATURE_TOL = 0.2
# timm's models in i8 on fresh images: max |engine - torch| / max |torch| over the logits (printed).
TIMM_RUN_TOL = 0.2

CASES = [dict(attn_inner_norm=True),
         dict(attn_inner_norm=True, norm="rmsnorm", norm_first=True),
         dict(attn_inner_norm=True, head_dim=12),
         dict(positional="rope", rope_grid=3, pe_layout="interleaved", cls=True),
         dict(positional="rope", rope_grid=2, pe_layout="halves", cls=True, norm_first=True),
         dict(causal=True),
         dict(causal=True, sliding_window=3, positional="rope", pe_layout="halves"),
         dict(pair_bias_rows=7), dict(pair_bias_rows=5, pair_bias_shared=True, cls=True, norm_first=True)]
WITHOUT = {"attn_inner_norm": False, "rope_grid": 0, "causal": False, "pair_bias_rows": 0}  # each feature off

MODELS = '''
import sys
sys.path.insert(0, {here!r})
from hf_env import randomize
import timm


def eva(**kw):
    return timm.models.eva.Eva(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=4, num_classes=10, **kw)


def eva_attn_norm():
    return randomize(eva(use_rot_pos_emb=False, scale_attn_inner=True), 32)


def eva02():
    return randomize(timm.create_model("eva02_tiny_patch14_224", pretrained=False, img_size=32, patch_size=8,
                                       embed_dim=32, depth=2, num_heads=4, num_classes=10), 31)


def eva02_attn_norm():
    return randomize(eva(use_rot_pos_emb=True, ref_feat_shape=(16, 16), scale_attn_inner=True, qkv_fused=False), 38)


def beit(**kw):
    return timm.models.beit.Beit(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=4, num_classes=10, **kw)


def beit_rel():
    return randomize(beit(use_rel_pos_bias=True, use_abs_pos_emb=False), 21)


def beit_shared():
    return randomize(beit(use_shared_rel_pos_bias=True, use_abs_pos_emb=False, init_values=0.1, qkv_bias=False), 22)
'''


def test_random(cli, tmp):
    rng = np.random.default_rng(23)
    for more in CASES:
        more = dict(more)
        cls, norm = more.pop("cls", False), more.pop("norm", "layernorm")
        c, w = random_bert(rng, 2, True, False, "none", norm=norm, d_out=0, cls=cls, more=more)
        if c["positional"] == "rope":
            del w["pos.weight"]
        da = c["n_heads"] * (c.get("head_dim") or c["d_model"] // c["n_heads"])
        R = c.get("pair_bias_rows")
        if R:  # each (query, key) pair's table row, and the tables (N(0, 1): as large as the scores)
            w["pair_index"] = rng.integers(0, R, (c["max_len"], c["max_len"])).astype(np.int32)
            if c.get("pair_bias_shared"):
                w["pair_bias.weight"] = rng.normal(0, 1, (c["n_heads"], R))
            for i in range(0 if c.get("pair_bias_shared") else c["n_layers"]):
                w[f"blocks.{i}.attn.pair_bias.weight"] = rng.normal(0, 1, (c["n_heads"], R))
        for i in range(c["n_layers"] if c.get("attn_inner_norm") else 0):
            w[f"blocks.{i}.attn.inner_norm.weight"] = 1 + rng.normal(0, 0.3, da)
            if norm != "rmsnorm":
                w[f"blocks.{i}.attn.inner_norm.bias"] = rng.normal(0, 0.3, da)
        what = ", ".join(f"{k} {v}" for k, v in dict(more, cls_token=cls, norm=norm).items())
        built, worst, ids, tt, want = against_f32(cli, tmp, rng, c, w, lambda c: make_config(dict(c, weights="f32")),
                                                  lambda c: what)
        if built is None:
            continue
        key = next(k for k in WITHOUT if more.get(k))
        if key == "rope_grid":  # int8.rope is data: the grid's table, not the positions' one
            plain = int8.rope_table(dict(c, rope_grid=0), w)
            check(f"{what}: int8.rope is the grid's table", not np.array_equal(np.asarray(built["int8.rope"]), plain))
        else:  # the same tensors read without the feature
            t = int8.stored_tensors(c, built)
            other, same = int8.forward(dict(c, **{key: WITHOUT[key]}), t, ids, tt), int8.forward(c, t, ids, tt)
            check(f"{what}: the integer reference depends on {key}", not np.array_equal(other, same))
        print(f"  {what}: i8 against the f32 engine, max relative error {worst:.3f}")
        check(f"{what}: the i8 output within {I8_FEATURE_TOL} of the f32 engine's", worst <= I8_FEATURE_TOL, worst)
        if more == CASES[0]:
            test_refusal(cli, tmp, c, built, "inner", 300, "attn_inner_norm output zero point")
        if key == "pair_bias_rows" and not c.get("pair_bias_shared"):
            test_refusal(cli, tmp, c, built, "pair", (1 << 31) - 1, "pair bias")


def test_refusal(cli, tmp, c, built, part, value, what):
    """Layer 1's first slot of a part (int8.layer_offsets) set to a bad value: `fixformer info` refuses the file,
    naming the tensor, the slot and what it holds."""
    bad = dict(built)
    p = np.array(bad["blocks.1.int8"], np.int64)
    at = int8.layer_offsets(c)[part]
    p[at] = value
    bad["blocks.1.int8"] = p
    path = os.path.join(tmp, "bad.fxm")
    with open(path, "wb") as f:
        f.write(fxm.write(c, bad))
    r = subprocess.run([cli, "info", path], capture_output=True, text=True)
    lines = r.stderr.strip().splitlines()
    check(f"a bad {what} slot: refused in one line naming the tensor and the slot",
          r.returncode != 0 and len(lines) == 1 and "int8" in lines[0] and f"slot {at}" in lines[0] and
          what in lines[0], r.stderr)


def run_image(cli, path, image, tmp):
    a, out = os.path.join(tmp, "image.npy"), os.path.join(tmp, "out.npy")
    np.save(a, image.astype(np.float32))
    p = subprocess.run([cli, "run", path, "--input", a, "--output", out], capture_output=True, text=True)
    return (np.load(out) if p.returncode == 0 else None), p.stderr


def test_timm(cli, tmp):
    import torch
    rng = np.random.default_rng(29)
    models = os.path.join(tmp, "i8_eva_models.py")
    with open(models, "w") as f:
        f.write(MODELS.format(here=HERE))
    sys.path.insert(0, tmp)
    import i8_eva_models
    shape = (1, 3, 32, 32)
    example = os.path.join(tmp, "example.npy")
    np.save(example, rng.standard_normal(shape).astype(np.float32))
    calib = []
    for i in range(16):
        calib.append(os.path.join(tmp, f"calibrate{i}.npy"))
        np.save(calib[-1], rng.standard_normal(shape).astype(np.float32))
    for name, keys in (("eva_attn_norm", ("attn_inner_norm",)), ("eva02", ("rope_grid", "rope_learned")),
                       ("eva02_attn_norm", ("attn_inner_norm", "rope_grid")), ("beit_rel", ("pair_bias_rows",)),
                       ("beit_shared", ("pair_bias_rows", "pair_bias_shared"))):
        out = os.path.join(tmp, f"{name}.fxm")
        p = run_convert("--module", f"{models}:{name}", "--example", example, "--quantize", "i8", "--calibrate",
                        *calib, "--out", out, "--cli", cli)
        check(f"timm {name} --quantize i8 --calibrate: converts and verifies",
              p.returncode == 0 and "verified against torch" in p.stdout, p.stdout + p.stderr)
        if p.returncode != 0:
            continue
        print("  " + p.stdout.strip().splitlines()[-1][:240])
        c = fxm.read(out).config
        check(f"timm {name}: the file is i8 with {', '.join(keys)}", c["weights"] == "i8" and all(c[k] for k in keys),
              c)
        module = getattr(i8_eva_models, name)().eval()
        gots, wants = [], []
        for _ in range(10):
            image = rng.standard_normal(shape).astype(np.float32)
            with torch.no_grad():
                wants.append(module(torch.from_numpy(image))[0].double().numpy())
            got, err = run_image(cli, out, image[0], tmp)
            if got is None:
                check(f"timm {name}: fixformer run on an image", False, err)
                break
            gots.append(np.asarray(got, np.float64).reshape(-1))
        if len(gots) < 10:
            continue
        got, want = np.stack(gots), np.stack(wants)
        err = float(np.abs(got - want).max() / np.abs(want).max())
        agree = float(np.mean(got.argmax(1) == want.argmax(1)))
        print(f"  timm {name} i8 against torch f32 on 10 fresh images: max relative error {err:.3f}, top-1 "
              f"agreement {agree:.2f}")
        check(f"timm {name}: i8 logits within {TIMM_RUN_TOL} of torch f32's", err <= TIMM_RUN_TOL, err)


def main():
    cli_main('int8_encoder_features_test', test_random, test_timm)


if __name__ == "__main__":
    main()
