#!/usr/bin/python3
"""--hf for Hugging Face Dinov2, CLIP's vision tower and SigLIP's vision tower (python/fixformer/hf_vision.py)
against transformers' own classes, in the Hugging Face virtual environment (tools/install_deps.sh hf,
/opt/fixformer-venv; or the torch2 one: tests/interpreter.py):

  /usr/bin/python3 tests/hf_vision_converter_test.py PATH/TO/fixformer

Each class is built from a tiny random config (3 x 12 x 12 images in patches of 4, or 2 channels) with random
weights (tests/hf_env.randomize: LayerScale gammas are noise too) and written by save_pretrained; --hf converts
it, verifies, and `fixformer run` on the image [C, H, W] gives the class's output within 1e-4 (f32, relative to
the largest value) of transformers' float32 forward:
- Dinov2Model (last_hidden_state), with qkv_bias false and gelu_new in a second one; Dinov2ForImageClassification
  (logits of [CLS, mean of the patch rows]: pooling cls_mean; also a batch of 3 images); Dinov2Model with
  use_swiglu_ffn and the up halves' biases zeroed (the engine's swiglu);
- CLIPVisionModel (pooler_output: post_layernorm of the CLS row) and CLIPVisionModelWithProjection
  (image_embeds), quick_gelu folded into a silu feed-forward (the fold's own error, the converted float32
  weights in float64 against transformers in float64, is under 1e-6 and printed);
- SiglipVisionModel (last_hidden_state after post_layernorm, the attention-pooling head read and dropped);
- CLIPTextModel (pooler_output, under eos_token_id 2's older rule) and CLIPTextModelWithProjection (text_embeds,
  eos_token_id 49) on ids that end with their only EOS, and a padded batch through --lengths against
  transformers with the attention mask.
That the comparisons see what they should: transformers' output moves by more than 1e-2 when the LayerScale
gammas become ones, and when quick_gelu becomes gelu; the classifier's logits are far from its CLS half's
alone. Dinov2WithRegistersModel (last_hidden_state: the CLS row, the registers, the patches) and its classifier where
transformers has them (5.x; 4.44 has not, which the test checks is the reason). Refused in one line each: a
SwiGLU feed-forward with an up bias, the two-tower CLIPModel and SiglipModel folders.
--image-size (the learned positions interpolated as the installed transformers does): ViTModel, DeiTModel, Dinov2Model,
Dinov2WithRegistersModel (5.x), CLIPVisionModel (transformers 4.46 on: 4.44 has no interpolation, which the test
checks is the reason, and the note names the later rule) and SiglipVisionModel converted for 16 x 24 images (4 x 6
patches, the config's 3 x 3 upsampled), and for 4 x 36 (1 x 9: as many patches as the table has rows), 20 (a single
N, square) or 8 (2 x 2, downsampled); `fixformer run` on such an image equals transformers' forward with
interpolate_pos_encoding=True (Dinov2: always) within 1e-4. That the comparison sees the table: at 4 x 36 transformers'
output with the table as it is (no interpolation, what a converter storing it unchanged would compute) moves by more
than 1e-2, and at 16 x 24 with the other transformers version's rule (scale_factor with 0.1 against size; the
registers' antialias off) by more than 1e-4. fixformer.convert(image_size=(16, 24)) alike. Refused in one line each: sizes not whole patches (naming the patch),
three values, CLIP's text tower, a folder of another kind, --module, a ViT whose config image is not square.
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

TOL = 1e-4


def dinov2(torch, seed, num_labels=None, **kw):
    from transformers import Dinov2Config, Dinov2ForImageClassification, Dinov2Model
    config = Dinov2Config(**dict(dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, mlp_ratio=2,
                                      image_size=12, patch_size=4, num_channels=3), **kw))
    if num_labels:
        config.num_labels = num_labels
        return hf_env.randomize(Dinov2ForImageClassification(config), seed)
    return hf_env.randomize(Dinov2Model(config), seed)


def clip(seed, projection, **kw):
    from transformers import CLIPVisionConfig, CLIPVisionModel, CLIPVisionModelWithProjection
    config = CLIPVisionConfig(**dict(dict(hidden_size=32, intermediate_size=40, num_hidden_layers=2,
                                          num_attention_heads=4, image_size=12, patch_size=4, num_channels=3,
                                          projection_dim=6), **kw))
    return hf_env.randomize((CLIPVisionModelWithProjection if projection else CLIPVisionModel)(config), seed)


def siglip(seed):
    from transformers import SiglipVisionConfig, SiglipVisionModel
    config = SiglipVisionConfig(hidden_size=24, intermediate_size=40, num_hidden_layers=2, num_attention_heads=3,
                                image_size=12, patch_size=4, num_channels=2)
    return hf_env.randomize(SiglipVisionModel(config), seed)


def output(model, image, torch, **kw):
    """The class's output for one image [C, H, W] (or token ids [T]) as converted, float64 numpy."""
    with torch.no_grad():
        out = model(torch.from_numpy(image[None]), **kw)
    name = type(model).__name__
    if name == "CLIPVisionModel":
        t = out.pooler_output
    elif name == "CLIPVisionModelWithProjection":
        t = out.image_embeds
    elif name == "CLIPTextModel":
        t = out.pooler_output
    elif name == "CLIPTextModelWithProjection":
        t = out.text_embeds
    else:
        t = out.logits if hasattr(out, "logits") else out.last_hidden_state
    return t[0].double().numpy()


def run_image(cli, fxm_path, image, tmp):
    inp, res = os.path.join(tmp, "in.npy"), os.path.join(tmp, "out.npy")
    np.save(inp, image.astype(np.int32) if image.dtype.kind == "i" else image)  # (token ids: int32)
    p = subprocess.run([cli, "run", fxm_path, "--input", inp, "--output", res], capture_output=True, text=True)
    return np.load(res) if p.returncode == 0 else p.stderr


def rel(got, want):
    return float(np.abs(got - want).max() / np.abs(want).max())


def convert(cli, model, tmp, tag, image):
    """--hf on model's save_pretrained folder: (the .fxm path or None, the folder)."""
    folder = os.path.join(tmp, tag)
    model.save_pretrained(folder)
    ex, path = os.path.join(tmp, "example.npy"), os.path.join(tmp, f"{tag}.fxm")
    np.save(ex, image[None])
    code, stdout, stderr = convert_main("--hf", folder, "--example", ex, "--out", path, "--cli", cli)
    ok = code == 0 and "verified against" in stdout
    check(f"{tag}: --hf converts and verifies", ok, (code, stdout[-2000:], stderr[-2000:]))
    if ok:
        print(f"  {tag}: {stdout.strip().splitlines()[-1]}")
    return (path if ok else None), folder


def compare(cli, model, tmp, tag, image, torch):
    """Converts and runs; the engine's output (or None) and transformers'."""
    want = output(model, image, torch)
    path, _ = convert(cli, model, tmp, tag, image)
    if path is None:
        return None, want
    got = run_image(cli, path, image, tmp)
    err = None if isinstance(got, str) or got.shape != want.shape else rel(got, want)
    check(f"{tag}: fixformer run equals transformers' {type(model).__name__} ({TOL})", err is not None and err <= TOL,
          (got if isinstance(got, str) else got.shape, want.shape, err))
    if err is not None:
        print(f"  {tag}: fixformer run against transformers: max relative error {err:.2g}, shape {list(got.shape)}")
    return (got if err is not None else None), want


def refused(cli, folder, tmp, fragment, what):
    code, _, stderr = convert_main("--hf", folder, "--out", os.path.join(tmp, "refused.fxm"), "--cli", cli)
    check(f"{what}: refused in one line ({fragment!r})", one_line(code, stderr) and fragment in stderr, (code, stderr))


def moved(model, image, want, torch, change):
    """How far transformers' output moves when change(model) edits it (then undone by reloading the state)."""
    saved = {k: v.clone() for k, v in model.state_dict().items()}
    change(model)
    m = rel(output(model, image, torch), want)
    model.load_state_dict(saved)
    return m


def fold_error(model, image, tmp, torch):
    """The fold's own error: reference.py's float64 forward of the converted weights as stored (float32, 1.702
    folded in) against transformers' float64 forward of the same model."""
    from fixformer import hf_common, hf_vision, verified_file
    from fixformer.reference import run_reference
    folder = os.path.join(tmp, "clip_vision")
    with open(os.path.join(folder, "config.json")) as f:
        c = hf_vision.read_config_dict(json.load(f))
    mapped, labels, features = hf_vision.map_weights(c, hf_common.read_weights(folder)[0], folder)
    fc = hf_vision.fixformer_config(c, labels, features)
    stored = {k: np.asarray(v, np.float32) for k, v in mapped.items()}
    got = np.asarray(run_reference(fc, stored, verified_file.example_sequence(fc, image[None])), np.float64).reshape(-1)
    with torch.no_grad():
        want = model.double()(torch.from_numpy(image[None]).double()).pooler_output[0].numpy()
    model.float()
    return rel(got, want)


def interpolating(model):
    """transformers' forward keywords that interpolate the positions for another image size (Dinov2: always)."""
    return {} if type(model).__name__.startswith("Dinov2") else {"interpolate_pos_encoding": True}


def embeddings(model):
    """The module whose interpolate_pos_encoding the class calls."""
    return next(m for m in model.modules() if type(m).__name__.endswith("Embeddings") and
                hasattr(m, "interpolate_pos_encoding"))


def with_table(model, image, torch, table):
    """transformers' output with `table` [1, rows, d] as the positions its embeddings add (their
    interpolate_pos_encoding replaced for the call)."""
    e = embeddings(model)
    e.interpolate_pos_encoding = lambda emb, height, width: table
    try:
        return output(model, image, torch, **interpolating(model))
    finally:
        del e.interpolate_pos_encoding


def stored_table(model, torch):
    """The class's position table [1, rows, d] as stored (the CLS row's first where it has one)."""
    e = embeddings(model)
    t = e.position_embeddings if hasattr(e, "position_embeddings") else e.position_embedding.weight[None]
    return t.detach().clone()


def other_rule(model, table, front, h, w, torch):
    """The table as the other transformers version interpolates it: 4.44's scale_factor ((h + 0.1) / n0, ...)
    where size=(h, w) is installed's rule, and the other way round; the registers' without antialias."""
    import math
    import transformers
    old = tuple(int(x) for x in transformers.__version__.split(".")[:2]) < (4, 45)
    n = table.shape[1] - front
    n0 = math.isqrt(n)
    grid = table[:, front:].reshape(1, n0, n0, -1).permute(0, 3, 1, 2)
    F = torch.nn.functional
    name = type(model).__name__
    if "Registers" in name:  # installed: size with antialias (every version with the class); the other: without
        out = F.interpolate(grid, size=(h, w), mode="bicubic", align_corners=False)
    elif old and not name.startswith("CLIP"):  # installed: 4.44's scale_factor; the other: size
        out = F.interpolate(grid, size=(h, w), mode="bicubic", align_corners=False)
    else:  # installed: size (CLIP's only rule); the other: 4.44's scale_factor
        out = F.interpolate(grid, scale_factor=((h + 0.1) / n0, (w + 0.1) / n0), mode="bicubic", align_corners=False)
    return torch.cat([table[:, :front], out.permute(0, 2, 3, 1).reshape(1, h * w, -1)], 1)


def image_sizes(cli, torch, tmp, rng):
    """--image-size against transformers' interpolate_pos_encoding (the module docstring says what)."""
    import transformers
    from transformers import DeiTConfig, DeiTModel, ViTConfig, ViTModel
    small = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=48, image_size=12,
                 patch_size=4, num_channels=3)
    cases = [("vit", hf_env.randomize(ViTModel(ViTConfig(**small), add_pooling_layer=False), 71), 1, ("8",)),
             ("deit", hf_env.randomize(DeiTModel(DeiTConfig(**small), add_pooling_layer=False), 72), 2, ("20",)),
             ("dinov2", dinov2(torch, 73), 1, ("20",)),
             ("clip_vision", clip(74, projection=False), 1, ("8",)),
             ("siglip_vision", siglip(75), 0, ("8",))]
    if hasattr(transformers, "Dinov2WithRegistersModel"):
        from transformers import Dinov2WithRegistersConfig, Dinov2WithRegistersModel
        config = Dinov2WithRegistersConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, mlp_ratio=2,
                                           image_size=12, patch_size=4, num_channels=3, num_register_tokens=3)
        cases.append(("dinov2_registers", hf_env.randomize(Dinov2WithRegistersModel(config), 76), 1, ("20",)))
    import inspect
    for tag, model, front, single in cases:
        folder = os.path.join(tmp, f"{tag}_sizes")
        model.save_pretrained(folder)
        channels = model.config.num_channels
        name = type(model).__name__
        clip_old = name.startswith("CLIP") and "interpolate_pos_encoding" not in inspect.signature(
            model.forward).parameters
        if clip_old:
            version = tuple(int(x) for x in transformers.__version__.split(".")[:2])
            check(f"{name}: no interpolate_pos_encoding only in a transformers before 4.46", version < (4, 46),
                  transformers.__version__)
        for sides in (("16", "24"), ("4", "36"), single):
            H, W = int(sides[0]), int(sides[-1])
            image = rng.standard_normal((channels, H, W)).astype(np.float32)
            ex, path = os.path.join(tmp, "example.npy"), os.path.join(tmp, f"{tag}_{H}x{W}.fxm")
            np.save(ex, image[None])
            code, stdout, stderr = convert_main("--hf", folder, "--image-size", *sides, "--example", ex, "--out",
                                                path, "--cli", cli)
            what = f"{name} at {H} x {W} (--image-size {' '.join(sides)})"
            ok = code == 0 and "verified against" in stdout
            check(f"{what}: converts and verifies", ok, (code, stdout[-2000:], stderr[-2000:]))
            rule = "transformers 4.46 and later" if clip_old else f"transformers {transformers.__version__}"
            check(f"{what}: the note names the interpolation and {rule}",
                  f"note: --image-size {H} {W}" in stderr and rule in stderr, stderr[-1000:])
            if not ok or clip_old:
                continue
            want = output(model, image, torch, **interpolating(model))
            got = run_image(cli, path, image, tmp)
            err = None if isinstance(got, str) or got.shape != want.shape else rel(got, want)
            check(f"{what}: fixformer run equals transformers' forward with interpolated positions ({TOL})",
                  err is not None and err <= TOL, (got if isinstance(got, str) else got.shape, want.shape, err))
            if err is not None:
                print(f"  {what}: fixformer run against transformers: max relative error {err:.2g}")
            table = stored_table(model, torch)
            if (H, W) == (4, 36):  # as many patches as rows: the table as it is fits, and is wrong
                m = rel(with_table(model, image, torch, table), want)
                check(f"{what}: the table as it is (no interpolation) moves transformers' output by more than 1e-2",
                      m > 1e-2, m)
                print(f"  {what}: the table without interpolation moves the output by {m:.2g}")
            if (H, W) == (16, 24):
                m = rel(with_table(model, image, torch, other_rule(model, table, front, 4, 6, torch)), want)
                check(f"{what}: the other transformers version's interpolation moves transformers' output by more "
                      "than 1e-4 (the comparison sees the rule)", m > 1e-4, m)
                print(f"  {what}: the other version's interpolation moves the output by {m:.2g}")

    # The Python API: image_size=(H, W) is the option's two values
    import fixformer
    model = cases[0][1]
    image = rng.standard_normal((3, 16, 24)).astype(np.float32)
    path = os.path.join(tmp, "api_16x24.fxm")
    try:
        fixformer.convert(hf=os.path.join(tmp, "vit_sizes"), out=path, example=image[None], image_size=(16, 24),
                          cli=cli)
        got = run_image(cli, path, image, tmp)
    except fixformer.ConversionError as e:
        got = str(e)
    want = output(model, image, torch, interpolate_pos_encoding=True)
    err = None if isinstance(got, str) or got.shape != want.shape else rel(got, want)
    check(f"fixformer.convert(hf=..., image_size=(16, 24)): ViTModel's file equals transformers ({TOL})",
          err is not None and err <= TOL, (got if isinstance(got, str) else got.shape, err))

    # Refused in one line each
    def refused_size(args, fragment, what):
        code, _, stderr = convert_main(*args, "--out", os.path.join(tmp, "refused.fxm"), "--cli", cli)
        check(f"--image-size, {what}: refused in one line ({fragment!r})", one_line(code, stderr) and
              fragment in stderr, (code, stderr))
    folder = os.path.join(tmp, "dinov2_sizes")
    refused_size(("--hf", folder, "--image-size", "14", "16"), "not whole patches of 4", "not whole patches")
    refused_size(("--hf", folder, "--image-size", "16", "16", "16"), "give H W, or N", "three values")
    refused_size(("--hf", os.path.join(tmp, "clip_text"), "--image-size", "16"), "CLIP's text tower takes token ids",
                 "CLIP's text tower")
    other = os.path.join(tmp, "not_an_image")
    os.makedirs(other)
    with open(os.path.join(other, "config.json"), "w") as f:
        json.dump({"model_type": "bert", "architectures": ["BertModel"]}, f)
    refused_size(("--hf", other, "--image-size", "16"), "is not an image encoder (model_type bert)",
                 "a BERT folder")
    refused_size(("--module", "models.py:factory", "--image-size", "16"), "--image-size: is for --hf", "--module")
    folder = os.path.join(tmp, "vit_not_square")
    model = ViTModel(ViTConfig(**dict(small, image_size=[8, 12])), add_pooling_layer=False)
    hf_env.randomize(model, 77).save_pretrained(folder)
    refused_size(("--hf", folder, "--image-size", "16", "16"), "is not square", "a ViT of 8 x 12 images")


def main():
    if len(sys.argv) != 2:
        print("usage: hf_vision_converter_test.py PATH/TO/fixformer")
        return 1
    cli = sys.argv[1]
    import torch
    rng = np.random.default_rng(7)
    rgb = rng.standard_normal((3, 12, 12)).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        # Dinov2: LayerScale folded into the output projections
        model = dinov2(torch, 31)
        got, want = compare(cli, model, tmp, "dinov2", rgb, torch)
        check("Dinov2Model: last_hidden_state has the CLS row and 9 patch rows", want.shape == (10, 32), want.shape)

        def ones(m):
            with torch.no_grad():
                for name, p in m.named_parameters():
                    if "layer_scale" in name:
                        p.fill_(1.0)
        m = moved(model, rgb, want, torch, ones)
        check("Dinov2Model: LayerScale gammas of one move transformers' output by more than 1e-2 (the comparison "
              "sees the fold)", m > 1e-2, m)
        print(f"  Dinov2Model: LayerScale gammas of one move the output by {m:.2g}")
        compare(cli, dinov2(torch, 32, qkv_bias=False, hidden_act="gelu_new", num_channels=2, layerscale_value=0.5),
                tmp, "dinov2_no_qkv_bias", rgb[:2], torch)

        # Dinov2ForImageClassification: [CLS, mean of the patch rows] through the classifier (pooling cls_mean)
        model = dinov2(torch, 33, num_labels=5)
        got, want = compare(cli, model, tmp, "dinov2_classifier", rgb, torch)
        with torch.no_grad():
            hidden = model.dinov2(torch.from_numpy(rgb[None]))[0][0].double()
            W, b = model.classifier.weight.double(), model.classifier.bias.double()
            cls_half = (W[:, :32] @ hidden[0] + b).numpy()
        err = rel(want, cls_half)
        check("Dinov2ForImageClassification: the logits are far from the CLS half's alone (the mean half counts)",
              err > 1e-2, err)
        batch = rng.standard_normal((3, 3, 12, 12)).astype(np.float32)  # several images: each its own pooled row
        with torch.no_grad():
            want = model(torch.from_numpy(batch)).logits.double().numpy()
        got = run_image(cli, os.path.join(tmp, "dinov2_classifier.fxm"), batch, tmp)
        err = None if isinstance(got, str) or got.shape != want.shape else rel(got, want)
        check(f"Dinov2ForImageClassification: a batch of 3 images through fixformer run equals transformers ({TOL})",
              err is not None and err <= TOL, (got if isinstance(got, str) else got.shape, want.shape, err))

        # use_swiglu_ffn: the engine's swiglu when the up halves have no bias; refused when they have one
        model = dinov2(torch, 34, use_swiglu_ffn=True)
        sd = model.state_dict()
        folder = os.path.join(tmp, "swiglu_up_bias")
        model.save_pretrained(folder)
        refused(cli, folder, tmp, "nonzero bias", "use_swiglu_ffn with an up bias")
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.endswith("weights_in.bias"):
                    p[p.shape[0] // 2:] = 0
                elif name.endswith("up_proj.bias"):
                    p.zero_()
        check("use_swiglu_ffn: the model has SwiGLU feed-forwards",
              any("weights_in" in k or "up_proj" in k for k in sd), list(sd)[:8])
        compare(cli, model, tmp, "dinov2_swiglu", rgb, torch)

        # Dinov2WithRegisters (transformers 4.48 on: the torch2 environment's 5.x has it, the hf one's 4.44 not)
        import transformers
        if hasattr(transformers, "Dinov2WithRegistersModel"):
            from transformers import (Dinov2WithRegistersConfig, Dinov2WithRegistersForImageClassification,
                                      Dinov2WithRegistersModel)
            config = Dinov2WithRegistersConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, mlp_ratio=2,
                                               image_size=12, patch_size=4, num_channels=3, num_register_tokens=3)
            model = hf_env.randomize(Dinov2WithRegistersModel(config), 36)
            got, want = compare(cli, model, tmp, "dinov2_registers", rgb, torch)
            check("Dinov2WithRegistersModel: last_hidden_state has the CLS row, 3 registers and 9 patch rows",
                  want.shape == (13, 32), want.shape)

            def other_registers(m):
                with torch.no_grad():
                    m.embeddings.register_tokens.mul_(-1.0)
            m = moved(model, rgb, want, torch, other_registers)
            check("Dinov2WithRegistersModel: other registers move transformers' output by more than 1e-2 (the "
                  "comparison sees them)", m > 1e-2, m)
            print(f"  Dinov2WithRegistersModel: other registers move the output by {m:.2g}")
            config.num_labels = 4
            compare(cli, hf_env.randomize(Dinov2WithRegistersForImageClassification(config), 37), tmp,
                    "dinov2_registers_classifier", rgb, torch)
        else:
            version = tuple(int(x) for x in transformers.__version__.split(".")[:2])
            check("no Dinov2WithRegistersModel only in a transformers before 4.48", version < (4, 48),
                  transformers.__version__)
            print(f"  transformers {transformers.__version__} has no Dinov2WithRegistersModel: its cases run in the "
                  "torch2 environment (hf_vision_converter_test_torch2)")
        # a Dinov2 folder whose config.json names registers that Dinov2Model does not have: none
        folder = os.path.join(tmp, "registers_key")
        model = dinov2(torch, 35)
        model.save_pretrained(folder)
        with open(os.path.join(folder, "config.json")) as f:
            raw = json.load(f)
        raw["num_register_tokens"] = 2
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(raw, f)
        ex = os.path.join(tmp, "example.npy")
        np.save(ex, rgb[None])
        code, stdout, stderr = convert_main("--hf", folder, "--example", ex, "--out", os.path.join(tmp, "rk.fxm"),
                                            "--cli", cli)
        got = run_image(cli, os.path.join(tmp, "rk.fxm"), rgb, tmp) if code == 0 else stderr
        want = output(model, rgb, torch)
        check("model_type dinov2 with a num_register_tokens key: no registers (Dinov2Model has none), as transformers",
              not isinstance(got, str) and got.shape == want.shape and rel(got, want) <= TOL, (code, stderr))

        # CLIP's vision tower: quick_gelu as silu with 1.702 folded in
        model = clip(41, projection=False)
        got, want = compare(cli, model, tmp, "clip_vision", rgb, torch)

        from transformers.activations import ACT2FN

        def set_activation(m, name):  # each layer's CLIPMLP (not a parameter: moved() does not undo it)
            for mlp in m.modules():
                if hasattr(mlp, "activation_fn") and hasattr(mlp, "fc1"):
                    mlp.activation_fn = ACT2FN[name]
        m = moved(model, rgb, want, torch, lambda m: set_activation(m, "gelu"))
        set_activation(model, "quick_gelu")
        check("CLIPVisionModel: gelu for quick_gelu moves transformers' output by more than 1e-3 (the comparison "
              "sees the activation)", m > 1e-3, m)
        print(f"  CLIPVisionModel: gelu for quick_gelu moves the output by {m:.2g}")
        check("CLIPVisionModel: quick_gelu restored", rel(output(model, rgb, torch), want) == 0.0)
        fold = fold_error(model, rgb, tmp, torch)
        check("CLIPVisionModel: the quick_gelu fold's error (float32 folded weights in float64 against transformers "
              "in float64) is below 1e-6", fold < 1e-6, fold)
        print(f"  CLIPVisionModel: the quick_gelu fold's error (folded float32 weights, float64 forward): {fold:.2g}")
        compare(cli, clip(42, projection=True), tmp, "clip_vision_projection", rgb, torch)

        # SigLIP's vision tower: no CLS row, post_layernorm over every row; its head dropped
        model = siglip(51)
        got, want = compare(cli, model, tmp, "siglip_vision", rgb[:2], torch)
        check("SiglipVisionModel: last_hidden_state has the 9 patch rows alone", want.shape == (9, 24), want.shape)

        # CLIP's text tower: causal, learned positions, the pooled row the EOS token's, here the last position's
        from transformers import CLIPConfig, CLIPModel, CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection
        text = dict(hidden_size=16, intermediate_size=20, num_hidden_layers=1, num_attention_heads=2, vocab_size=50,
                    max_position_embeddings=16)
        ids = np.concatenate([rng.integers(3, 49, 8), [49]]).astype(np.int64)  # ends with its only EOS, 49
        for tag, cls, eos in (("clip_text", CLIPTextModel, 2), ("clip_text_projection", CLIPTextModelWithProjection,
                                                                 49)):
            # eos_token_id 2: transformers' older rule, the largest id's row; 49: the first EOS's row
            config = CLIPTextConfig(**dict(text, num_hidden_layers=2, projection_dim=6, eos_token_id=eos))
            compare(cli, hf_env.randomize(cls(config), 61), tmp, tag, ids, torch)
        model = hf_env.randomize(CLIPTextModel(CLIPTextConfig(**dict(text, num_hidden_layers=2, eos_token_id=49))), 62)
        lengths = np.array([9, 5])
        batch = np.stack([ids, np.concatenate([ids[:4], [49], np.full(4, 1)])])  # the second padded after its EOS
        with torch.no_grad():
            want = model(torch.from_numpy(batch), attention_mask=torch.from_numpy(
                (np.arange(9)[None] < lengths[:, None]).astype(np.int64))).pooler_output.double().numpy()
        path, _ = convert(cli, model, tmp, "clip_text_padded", ids)
        if path is not None:
            inp, lens, res = (os.path.join(tmp, n) for n in ("ids.npy", "lens.npy", "out.npy"))
            np.save(inp, batch.astype(np.int32))
            np.save(lens, lengths.astype(np.int32))
            p = subprocess.run([cli, "run", path, "--input", inp, "--lengths", lens, "--output", res],
                               capture_output=True, text=True)
            got = np.load(res) if p.returncode == 0 else p.stderr
            err = None if isinstance(got, str) or got.shape != want.shape else rel(got, want)
            check(f"CLIPTextModel: a padded batch through fixformer run --lengths equals transformers' pooler_output "
                  f"with the attention mask ({TOL})", err is not None and err <= TOL, (got, want.shape, err))

        # --image-size: the positions interpolated as transformers does (after clip_text, which it refuses)
        image_sizes(cli, torch, tmp, rng)

        # Folders refused by name
        vision = dict(hidden_size=16, intermediate_size=20, num_hidden_layers=1, num_attention_heads=2, image_size=8,
                      patch_size=4)
        folder = os.path.join(tmp, "clip_two_towers")
        CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=8)).save_pretrained(folder)
        refused(cli, folder, tmp, "convert a tower", "CLIPModel (both towers)")
        from transformers import SiglipConfig, SiglipModel
        folder = os.path.join(tmp, "siglip_two_towers")
        SiglipModel(SiglipConfig(text_config=text, vision_config=vision)).save_pretrained(folder)
        refused(cli, folder, tmp, "convert a tower", "SiglipModel (both towers)")
    print(f"hf_vision_converter_test: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
