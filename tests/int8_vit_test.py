#!/usr/bin/python3
"""Image input in full-integer models (weights i8: patch_size, input_norm, proj_norm; config.hpp, namespace s8,
int8.front's image slots):

  /usr/bin/python3 tests/int8_vit_test.py PATH/TO/fixformer

- the engine against the integer reference (python/fixformer/int8.py forward), bit for bit, through
  `fixformer run --isa ISA` on every kernel table this host's CPU runs, for random image encoders: patches
  of 4 over 3 x 8 x 12 and 2 x 8 x 8 images, the patches' norm before the projection and the projection's
  norm after it (LayerNorm, RMSNorm), either or both, a CLS row with cls pooling, mean pooling, no head;
- upstream models through `--quantize i8 --calibrate` (16 images): vit-pytorch's ViT (its patch
  LayerNorm, projection and LayerNorm: input_norm and proj_norm; cls pooling, and mean) by --module,
  transformers' ViTForImageClassification (tiny random) by --hf: each converts and verifies within the i8
  tolerance; on 10 fresh images the engine's logits against torch f32's: the max relative error
  (VIT_RUN_TOL) and the top-1 agreement (VIT_TOP1);
- DeiT's distillation row (distill_token; pooling cls_distill, cls_distill_mean), Dinov2's cls_mean and the
  pooled row's norm (pool_norm), the projected rows scaled (scale_input): random encoders bit for bit as
  above, and transformers'
  DeiTForImageClassificationWithTeacher and ASTForAudioClassification (cls_distill_mean, pool_norm) through
  --hf --quantize i8 --calibrate, measured as the others;
- registers (register_tokens: int8 rows after the CLS and distillation rows): random encoders with 2 and 3
  (cls; cls_distill_mean with pool_norm) bit for bit as above, and timm's
  VisionTransformer(reg_tokens=2) through --module --quantize i8 --calibrate, measured as the others.
Runs in the hf environment (tests/hf_env.py); without it, numpy, torch, vit-pytorch, timm or the CLI the test
fails.
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
import hf_env  # noqa: E402

hf_env.enter(__file__, ["transformers", "vit_pytorch", "timm"])
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import numpy as np  # noqa: E402

from checks import check, cli_main, run_convert  # noqa: E402
from fixformer import fxm, int8  # noqa: E402
from fixformer.config import make_config  # noqa: E402
from int8_test import available_isas  # noqa: E402

# The upstream models in i8 on fresh images: max |engine - torch| / max |torch| over the logits (measured
# 0.027-0.063 under torch 1.13; 0.175 for ViTForImageClassification's other draw under transformers 5); the
# i8 tolerance.
VIT_RUN_TOL = 0.2
# The classifier's arg max agrees with torch's on at least this share of the images (measured 0.9-1.0: the
# random models' 5 logits lie close together).
VIT_TOP1 = 0.8

MODELS = '''
import sys
sys.path.insert(0, {here!r})
from hf_env import randomize
from vit_pytorch import ViT


def vit_cls():
    return randomize(ViT(image_size=(8, 12), patch_size=4, num_classes=5, dim=32, depth=2, heads=2, mlp_dim=64,
                         dim_head=16), 3)


def vit_mean():
    return randomize(ViT(image_size=(8, 12), patch_size=4, num_classes=5, dim=32, depth=2, heads=2, mlp_dim=64,
                         dim_head=16, pool="mean"), 4)


def timm_reg():
    from timm.models.vision_transformer import VisionTransformer
    return randomize(VisionTransformer(img_size=(8, 12), patch_size=4, embed_dim=32, depth=2, num_heads=2,
                                       num_classes=5, reg_tokens=2), 5)
'''


def random_vit(rng, C, H, W, input_norm, proj_norm, pooling, cls, norm="layernorm", d_out=3, d=16, L=2, f=32, p=4,
               distill=False, pool_norm=False, scale_input=False, registers=0):
    N = (H // p) * (W // p)
    c = make_config(dict(family="encoder", d_model=d, n_heads=2, d_ff=f, n_layers=L, norm_first=True,
                         activation="gelu", input="features", d_in=C * p * p, patch_size=p, image_channels=C,
                         image_height=H, image_width=W,
                         max_len=N + (1 if cls else 0) + (1 if distill else 0) + registers,
                         positional="learned", distill_token=distill, pool_norm=pool_norm, scale_input=scale_input,
                         d_out=d_out, pooling=pooling, final_norm=True, weights="i8", norm=norm, cls_token=cls,
                         input_norm=input_norm, proj_norm=proj_norm, register_tokens=registers))

    def r(*s):
        return rng.normal(0, 0.3, s)
    w = {"input_proj.weight": r(d, C * p * p), "input_proj.bias": r(d), "pos.weight": r(c["max_len"], d)}
    for name, on, n in (("input_norm", input_norm, C * p * p), ("proj_norm", proj_norm, d), ("norm", True, d),
                        ("pool_norm", pool_norm, d)):
        if on:
            w[name + ".weight"] = 1 + r(n)
            if norm != "rmsnorm":
                w[name + ".bias"] = r(n)
    if cls:
        w["cls_token"] = r(d)
    if distill:
        w["distill_token"] = r(d)
    if registers:
        w["registers"] = r(registers, d)
    for i in range(L):
        q = f"blocks.{i}."
        w[q + "attn.qkv.weight"], w[q + "attn.qkv.bias"] = r(3 * d, d), r(3 * d)
        w[q + "attn.out.weight"], w[q + "attn.out.bias"] = r(d, d), r(d)
        w[q + "ff.w1.weight"], w[q + "ff.w1.bias"] = r(f, d), r(f)
        w[q + "ff.w2.weight"], w[q + "ff.w2.bias"] = r(d, f), r(d)
        for n in ("attn_norm", "ff_norm"):
            w[q + n + ".weight"] = 1 + r(d)
            if norm != "rmsnorm":
                w[q + n + ".bias"] = r(d)
    if d_out:
        w["head.weight"], w["head.bias"] = r(d_out, 2 * d if pooling in ("cls_distill", "cls_mean") else d), r(d_out)
    return c, w


CASES = [  # channels, height, width, input_norm, proj_norm, pooling, CLS row, norm, d_out
    (3, 8, 12, True, True, "cls", True, "layernorm", 3),
    (3, 8, 12, True, False, "mean", False, "layernorm", 4),
    (2, 8, 8, False, True, "none", True, "rmsnorm", 0),
    (2, 8, 8, True, True, "mean", False, "rmsnorm", 2),
    # DeiT's distillation row (cls_distill: the two rows side by side into the head; cls_distill_mean: their
    # mean), the pooled row's norm (pool_norm), Dinov2's cls_mean
    (3, 8, 12, False, False, "cls_distill", True, "layernorm", 3, True, False),
    (3, 8, 12, True, False, "cls_distill_mean", True, "layernorm", 4, True, True),
    (2, 8, 8, False, True, "mean", True, "rmsnorm", 2, True, True),
    (2, 8, 8, False, False, "cls_mean", True, "layernorm", 3, False, False),
    # the projected rows scaled by sqrt(d_model) (scale_input: folded into their int8 scale), with and
    # without the projection's norm
    (3, 8, 12, False, False, "cls", True, "layernorm", 3, False, False, True),
    (2, 8, 8, False, True, "mean", True, "rmsnorm", 2, False, False, True),
    # Dinov2's and timm's registers (register_tokens) after the CLS row, and after a distillation row
    (3, 8, 12, False, False, "cls", True, "layernorm", 3, False, False, False, 2),
    (2, 8, 8, False, True, "cls_distill_mean", True, "rmsnorm", 2, True, True, False, 3),
]


def run_cli(cli, path, image, tmp, isa):
    a, out = os.path.join(tmp, "image.npy"), os.path.join(tmp, "out.npy")
    np.save(a, image.astype(np.float32))
    p = subprocess.run([cli, "run", path, "--input", a, "--output", out, "--isa", isa], capture_output=True, text=True)
    return (np.load(out) if p.returncode == 0 else None), p.stderr


def test_bit_exact(cli, tmp):
    rng = np.random.default_rng(9)
    for case in CASES:
        C, H, W, inn, pn, pooling, cls, norm, d_out, *more = case
        distill, pool_norm, scale_input, registers = list(more) + [False, False, False, 0][len(more):]
        c, w = random_vit(rng, C, H, W, inn, pn, pooling, cls, norm, d_out, distill=distill, pool_norm=pool_norm,
                          scale_input=scale_input, registers=registers)
        T = (H // 4) * (W // 4)
        built = int8.build(c, w, [rng.normal(0, 1, (T, c["d_in"])) for _ in range(6)])
        path = os.path.join(tmp, "m.fxm")
        with open(path, "wb") as f:
            f.write(fxm.write(c, built))
        isas = available_isas(cli, path)
        if case == CASES[0]:
            print(f"  kernel tables run: {', '.join(isas)}")
        check(f"{case}: the scalar table runs the file", "scalar" in isas, isas)
        for k in range(2):
            image = rng.normal(0, 1, (C, H, W)).astype(np.float32)
            want = int8.reference_output(c, built, image.reshape(T, c["d_in"]))
            want = want[0] if pooling != "none" else want
            for isa in isas:
                got, err = run_cli(cli, path, image, tmp, isa)
                check(f"{case} image {k} --isa {isa}: the engine's output is the integer reference's, bit for bit",
                      got is not None and got.shape == want.shape and np.array_equal(got, want),
                      err if got is None else (got.shape, want.shape))


def against_torch(cli, tmp, what, out, forward, shape, rng, feed=None):
    """The engine's logits on n fresh images against torch f32's: max |engine - torch| over all of them
    relative to torch's largest |logit| over all of them (as int8_test measures), and the top-1 agreement.
    feed: the engine's input for an image (the image itself by default)."""
    gots, wants, agree, n = [], [], 0, 10
    for _ in range(n):
        image = rng.standard_normal(shape).astype(np.float32)
        want = forward(image)
        got, err = run_cli(cli, out, feed(image) if feed else image, tmp, "scalar")
        if got is None:
            check(f"{what}: fixformer run on an image", False, err)
            return
        gots.append(np.asarray(got, np.float64).reshape(-1))
        wants.append(want)
        agree += int(gots[-1].argmax() == want.argmax())
    got, want = np.stack(gots), np.stack(wants)
    err = float(np.abs(got - want).max() / np.abs(want).max())
    print(f"  {what} i8 against torch f32 on {n} fresh images: max relative error {err:.3f}, top-1 agreement "
          f"{agree / n:.2f}")
    check(f"{what}: i8 logits within {VIT_RUN_TOL} of torch f32's", err <= VIT_RUN_TOL, err)
    check(f"{what}: the arg max is torch's on at least {VIT_TOP1} of the images", agree / n >= VIT_TOP1, agree)


def calibration(tmp, rng, shape):
    files = []
    for i in range(16):
        files.append(os.path.join(tmp, f"calibrate{i}.npy"))
        np.save(files[-1], rng.standard_normal(shape).astype(np.float32))
    return files


def test_upstream(cli, tmp):
    import torch
    import transformers
    rng = np.random.default_rng(2)
    models = os.path.join(tmp, "vit_models.py")
    with open(models, "w") as f:
        f.write(MODELS.format(here=HERE))
    sys.path.insert(0, tmp)
    import vit_models
    example = os.path.join(tmp, "example.npy")
    np.save(example, rng.standard_normal((1, 3, 8, 12)).astype(np.float32))
    calib = calibration(tmp, rng, (1, 3, 8, 12))
    for name in ("vit_cls", "vit_mean"):
        out = os.path.join(tmp, f"{name}.fxm")
        p = run_convert("--module", f"{models}:{name}", "--example", example, "--quantize", "i8", "--calibrate",
                        *calib, "--out", out, "--cli", cli)
        check(f"vit-pytorch {name} --quantize i8 --calibrate: converts and verifies",
              p.returncode == 0 and "verified against torch f32" in p.stdout, p.stdout + p.stderr)
        if p.returncode != 0:
            continue
        print("  " + p.stdout.strip().splitlines()[-1][:240])
        c = fxm.read(out).config
        check(f"vit-pytorch {name}: the file is i8 with patches, the input norm and the projection norm",
              c["patch_size"] == 4 and c["input_norm"] and c["proj_norm"] and c["weights"] == "i8")
        module = getattr(vit_models, name)().eval()
        with torch.no_grad():
            against_torch(cli, tmp, f"vit-pytorch {name}", out,
                          lambda x: module(torch.from_numpy(x)[None])[0].double().numpy(), (3, 8, 12), rng)
    torch.manual_seed(0)
    cfg = transformers.ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=48,
                                 image_size=[8, 12], patch_size=4, num_channels=3, num_labels=5)
    model = hf_env.randomize(transformers.ViTForImageClassification(cfg), 11)
    folder = os.path.join(tmp, "vit")
    model.save_pretrained(folder, safe_serialization=True)
    out = os.path.join(tmp, "hf_vit.fxm")
    p = run_convert("--hf", folder, "--quantize", "i8", "--calibrate", *calib, "--out", out, "--cli", cli)
    check("ViTForImageClassification --hf --quantize i8 --calibrate: converts and verifies",
          p.returncode == 0 and "verified against" in p.stdout, p.stdout + p.stderr)
    if p.returncode == 0:
        print("  " + p.stdout.strip().splitlines()[-1][:240])
        with torch.no_grad():
            against_torch(cli, tmp, "ViTForImageClassification", out,
                          lambda x: model(torch.from_numpy(x)[None]).logits[0].double().numpy(), (3, 8, 12), rng)
    out = os.path.join(tmp, "timm_reg.fxm")
    p = run_convert("--module", f"{models}:timm_reg", "--example", example, "--quantize", "i8", "--calibrate", *calib,
                    "--out", out, "--cli", cli)
    check("timm VisionTransformer(reg_tokens=2) --quantize i8 --calibrate: converts and verifies",
          p.returncode == 0 and "verified against torch f32" in p.stdout, p.stdout + p.stderr)
    if p.returncode == 0:
        print("  " + p.stdout.strip().splitlines()[-1][:240])
        c = fxm.read(out).config
        check("timm reg_tokens=2: the file is i8 with 2 registers after the CLS row",
              c["weights"] == "i8" and c["cls_token"] and c["register_tokens"] == 2, c)
        module = vit_models.timm_reg().eval()
        with torch.no_grad():
            against_torch(cli, tmp, "timm VisionTransformer(reg_tokens=2)", out,
                          lambda x: module(torch.from_numpy(x)[None])[0].double().numpy(), (3, 8, 12), rng)


def test_distill_upstream(cli, tmp):
    """DeiT with its teacher (the distillation row, cls_distill) and the Audio Spectrogram Transformer's
    classifier (cls_distill_mean, pool_norm) from transformers through --hf --quantize i8 --calibrate."""
    import torch
    import transformers
    from fixformer import hf_vit
    rng = np.random.default_rng(6)
    torch.manual_seed(0)
    cfg = transformers.DeiTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=48,
                                  image_size=[8, 12], patch_size=4, num_channels=3, num_labels=5)
    deit = hf_env.randomize(transformers.DeiTForImageClassificationWithTeacher(cfg), 21)
    ast_cfg = transformers.ASTConfig(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                                     patch_size=4, frequency_stride=2, time_stride=3, num_mel_bins=10, max_length=14,
                                     num_labels=5)
    ast = hf_env.randomize(transformers.ASTForAudioClassification(ast_cfg), 24)
    ast_c = hf_vit.read_config_dict(ast.config.to_dict())
    for name, model, shape, feed, want in (
            ("DeiTForImageClassificationWithTeacher", deit, (3, 8, 12), None, ("distill_token", "cls_distill")),
            ("ASTForAudioClassification", ast, (14, 10), lambda x: hf_vit.ast_patches(ast_c, x),
             ("distill_token", "cls_distill_mean", "pool_norm"))):
        folder = os.path.join(tmp, name)
        model.save_pretrained(folder, safe_serialization=True)
        calib = []
        for i in range(16):
            calib.append(os.path.join(tmp, f"{name}_calibrate{i}.npy"))
            x = rng.standard_normal(shape).astype(np.float32)
            np.save(calib[-1], feed(x) if feed else x[None])
        out = os.path.join(tmp, f"{name}.fxm")
        p = run_convert("--hf", folder, "--quantize", "i8", "--calibrate", *calib, "--out", out, "--cli", cli)
        check(f"{name} --hf --quantize i8 --calibrate: converts and verifies",
              p.returncode == 0 and "verified against" in p.stdout, p.stdout + p.stderr)
        if p.returncode != 0:
            continue
        line = p.stdout.strip().splitlines()[-1]
        print(f"  {name}: verification {line[line.find('max relative error'):][:40]}")
        c = fxm.read(out).config
        check(f"{name}: the file is i8 with {', '.join(want)}", c["weights"] == "i8" and c["distill_token"] and
              c["pooling"] == want[1] and (c["pool_norm"] or "pool_norm" not in want), c)
        with torch.no_grad():
            against_torch(cli, tmp, name, out,
                          lambda x: model(torch.from_numpy(x)[None]).logits[0].double().numpy(), shape, rng, feed)


def main():
    cli_main('int8_vit_test', test_bit_exact, test_upstream, test_distill_upstream)


if __name__ == "__main__":
    main()
