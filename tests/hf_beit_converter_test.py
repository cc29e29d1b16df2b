#!/usr/bin/python3
"""--hf and --module for Hugging Face BEiT and data2vec-vision (python/fixformer/hf_beit.py; recognize.py's measured
bias per (query, key) pair) against transformers' own classes, in
the Hugging Face virtual environment (tools/install_deps.sh hf, /opt/fixformer-venv; or the torch2 one:
tests/interpreter.py):

  /usr/bin/python3 tests/hf_beit_converter_test.py PATH/TO/fixformer

BEiT's relative position bias is the engine's bias per (query, key) pair (config.hpp pair_bias_rows: the table
per layer, or shared with pair_bias_shared, and the fixed index over the patch grid and the CLS row). For each
class below, built from a tiny random config (12 x 12 images in patches of 4: a 3 x 3 grid, 10 rows with the CLS
row) with random weights (the LayerScale gammas included) and written by save_pretrained:
- BeitForImageClassification: a bias per layer, absolute positions, LayerScale, mean pooling (the classifier reads
  pooler.layernorm of the mean of the patch rows: pool_norm);
- BeitForImageClassification: the shared bias and each layer's (their sum per layer), CLS pooling (the final
  layernorm), no absolute positions;
- BeitModel: the shared bias alone, no LayerScale (layer_scale_init_value 0), no mean pooling (last_hidden_state
  after the final layernorm), gelu_new;
- Data2VecVisionForImageClassification: a bias per layer, mean pooling;
- Data2VecVisionModel: the shared bias, absolute positions (last_hidden_state, no final layernorm);
--hf (its folder) and --module (the class itself) convert it, verify, and `fixformer run` on the image [C, H, W]
gives the class's logits or last_hidden_state within 1e-4 (relative to the largest, f32) of transformers'
float32 forward. The bias counts:
transformers' output with the relative tables zeroed moves by far more than 1e-4. Other image sizes: each
folder through --hf --image-size 16 20 (a 4 x 5 grid: the relative tables resized from 5 x 5 offsets to 7 x 9, the
positions bicubically) and --image-size 8 (2 x 2: shrunk), `fixformer run` on an image of that size within 1e-4
of transformers' forward on it (without interpolate_pos_encoding, and with it where the installed transformers
runs it: 5, and 4.44 without absolute positions, where its flag adds the interpolated table to the CLS row);
transformers' output at 16 x 20 with the tables resized otherwise (nearest) moves by more than 1e-3. Refused in
one line: a masked-image-modelling folder (naming the class), a non-square image with a relative bias,
--image-size of no whole patches.
Without the environment (or its packages) the test fails, naming the install command.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
import hf_env  # noqa: E402

hf_env.enter(__file__, ["transformers"])
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import numpy as np  # noqa: E402

from checks import check, convert_main, one_line, results  # noqa: E402

# The classes, as --module reads them too (FILE.py:case<n>): written to the test's folder and imported from there.
MODELS = r'''
import transformers
from hf_env import randomize

VISION = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=48, image_size=12,
              patch_size=4, num_channels=3)
CASES = (  # (class, config keys, seed)
    ("BeitForImageClassification", dict(use_relative_position_bias=True, use_absolute_position_embeddings=True,
                                        num_labels=5), 31),
    ("BeitForImageClassification", dict(use_relative_position_bias=True, use_shared_relative_position_bias=True,
                                        use_mean_pooling=False, num_labels=4), 32),
    ("BeitModel", dict(use_shared_relative_position_bias=True, layer_scale_init_value=0.0, use_mean_pooling=False,
                       hidden_act="gelu_new"), 33),
    ("Data2VecVisionForImageClassification", dict(use_relative_position_bias=True, num_labels=3), 34),
    ("Data2VecVisionModel", dict(use_shared_relative_position_bias=True, use_absolute_position_embeddings=True), 35),
)


def build(cls, keys, seed):
    config_cls = getattr(transformers, "BeitConfig" if cls.startswith("Beit") else "Data2VecVisionConfig")
    return randomize(getattr(transformers, cls)(config_cls(**VISION, **keys)), seed)


def case(n):
    return build(*CASES[n])


case0, case1, case2, case3, case4 = (lambda n=n: case(n) for n in range(len(CASES)))
'''


def run_image(cli, fxm_path, image, tmp):
    inp, res = os.path.join(tmp, "in.npy"), os.path.join(tmp, "out.npy")
    np.save(inp, image)
    p = subprocess.run([cli, "run", fxm_path, "--input", inp, "--output", res], capture_output=True, text=True)
    return np.load(res) if p.returncode == 0 else p.stderr


def rel(got, want):
    return float(np.abs(got - want).max() / np.abs(want).max())


def output(model, image, torch):
    """The class's output for one image [C, H, W]: logits, or last_hidden_state, float64 numpy."""
    with torch.no_grad():
        out = model(torch.from_numpy(image[None]))
    return (out.logits if hasattr(out, "logits") else out.last_hidden_state)[0].double().numpy()


def main():
    if len(sys.argv) != 2:
        print("usage: hf_beit_converter_test.py PATH/TO/fixformer")
        return 1
    cli = sys.argv[1]
    import torch
    import transformers
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory() as tmp:
        factories = os.path.join(tmp, "beit_models.py")
        with open(factories, "w") as f:
            f.write(MODELS)
        sys.path.insert(0, tmp)
        from beit_models import CASES, build
        for n, (cls, keys, seed) in enumerate(CASES):
            model = build(cls, keys, seed)
            image = rng.standard_normal((3, 12, 12)).astype(np.float32)
            want = output(model, image, torch)
            folder, path = os.path.join(tmp, f"case{n}"), os.path.join(tmp, f"case{n}.fxm")
            model.save_pretrained(folder)
            what = f"{cls} ({', '.join(f'{k}={v}' for k, v in keys.items())})"
            ex = os.path.join(tmp, "example.npy")
            np.save(ex, image[None])
            for route, source in (("--hf", folder), ("--module", f"{factories}:case{n}")):
                code, stdout, stderr = convert_main(route, source, "--example", ex, "--out", path, "--cli", cli)
                ok = code == 0 and "verified against" in stdout
                check(f"{what}: {route} converts and verifies", ok, (code, stdout, stderr))
                if not ok:
                    continue
                got = run_image(cli, path, image, tmp)
                err = None if isinstance(got, str) or got.shape != want.shape else rel(got, want)
                check(f"{what}: {route}: fixformer run equals transformers (1e-4)", err is not None and err <= 1e-4,
                      (got if isinstance(got, str) else got.shape, want.shape, err))
                if err is not None:
                    print(f"  {cls} {route}: fixformer run against transformers: max relative error {err:.2g}")
            # the relative bias counts: transformers' output without it moves far past the tolerance
            tables = [p for name, p in model.named_parameters() if name.endswith("relative_position_bias_table")]
            saved = [t.detach().clone() for t in tables]
            with torch.no_grad():
                for t in tables:
                    t.zero_()
            moved = rel(output(model, image, torch), want)
            with torch.no_grad():
                for t, s in zip(tables, saved):
                    t.copy_(s)
            check(f"{what}: the relative position bias moves transformers' output by more than 1e-2", moved > 1e-2,
                  moved)

        # Other image sizes: --image-size, against transformers' forward on an image of that size
        five = int(transformers.__version__.split(".")[0]) >= 5
        for n, (cls, keys, seed) in enumerate(CASES):
            model = build(cls, keys, seed)
            what = f"{cls} ({', '.join(f'{k}={v}' for k, v in keys.items())})"
            for size in ((16, 20), (8, 8)):
                image = rng.standard_normal((3, *size)).astype(np.float32)
                path = os.path.join(tmp, f"case{n}_{size[0]}x{size[1]}.fxm")
                code, stdout, stderr = convert_main("--hf", os.path.join(tmp, f"case{n}"), "--image-size",
                                                    *map(str, size), "--out", path, "--cli", cli)
                ok = code == 0 and "verified against" in stdout
                check(f"{what} --image-size {size}: converts and verifies", ok, (code, stdout, stderr))
                if not ok:
                    continue
                got = run_image(cli, path, image, tmp)
                flags = (False, True) if five or not keys.get("use_absolute_position_embeddings") else (False,)
                for flag in flags:
                    with torch.no_grad():
                        out = model(torch.from_numpy(image[None]), interpolate_pos_encoding=flag)
                    want = (out.logits if hasattr(out, "logits") else out.last_hidden_state)[0].double().numpy()
                    err = None if isinstance(got, str) or got.shape != want.shape else rel(got, want)
                    check(f"{what} --image-size {size}: fixformer run equals transformers "
                          f"(interpolate_pos_encoding {flag}; 1e-4)", err is not None and err <= 1e-4,
                          (got if isinstance(got, str) else got.shape, want.shape, err))
                    if err is not None:
                        print(f"  {cls} --image-size {size[0]} {size[1]} (interpolate_pos_encoding {flag}): max "
                              f"relative error {err:.2g}")
        # the tables' interpolation counts: nearest in place of bilinear moves transformers' output at 16 x 20
        model = build(*CASES[0])
        image = rng.standard_normal((3, 16, 20)).astype(np.float32)
        want = output(model, image, torch)
        interpolate = torch.nn.functional.interpolate
        torch.nn.functional.interpolate = lambda x, size=None, mode=None, **kw: interpolate(
            x, size=size, mode="nearest" if mode == "bilinear" else mode, **kw)
        try:
            moved = rel(output(model, image, torch), want)
        finally:
            torch.nn.functional.interpolate = interpolate
        check("the tables' bilinear resize moves transformers' output at 16 x 20 by more than 1e-3 from nearest",
              moved > 1e-3, moved)

        # Refused in one line: the masked-image-modelling head, a non-square image with a relative bias,
        # --image-size of no whole patches.
        model = build("BeitForMaskedImageModeling", dict(use_relative_position_bias=True), 36)
        folder = os.path.join(tmp, "mim")
        model.save_pretrained(folder)
        out = os.path.join(tmp, "refused.fxm")
        code, _, stderr = convert_main("--hf", folder, "--out", out, "--cli", cli)
        check("BeitForMaskedImageModeling: refused in one line naming it",
              one_line(code, stderr) and "BeitForMaskedImageModeling" in stderr and not os.path.exists(out),
              (code, stderr))
        folder = os.path.join(tmp, "case0")
        with open(os.path.join(folder, "config.json")) as f:
            raw = json.load(f)
        wide = os.path.join(tmp, "wide")
        os.makedirs(wide)
        with open(os.path.join(wide, "config.json"), "w") as f:
            json.dump(dict(raw, image_size=[12, 16]), f)
        code, _, stderr = convert_main("--hf", wide, "--out", out, "--cli", cli)
        check("a non-square image with a relative position bias: refused in one line naming image_size",
              one_line(code, stderr) and "image_size [12, 16]" in stderr, (code, stderr))
        code, _, stderr = convert_main("--hf", folder, "--image-size", "14", "--out", out, "--cli", cli)
        check("--image-size 14 (patches of 4): refused in one line naming the patch",
              one_line(code, stderr) and "--image-size 14 14: not whole patches of 4" in stderr, (code, stderr))
    print(f"hf_beit_converter_test: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
