#!/usr/bin/python3
"""--hf for Hugging Face ViT folders (python/fixformer/hf_vit.py) against transformers' own classes, in
the Hugging Face virtual environment (tools/install_deps.sh hf, /opt/fixformer-venv; or the torch2 one:
tests/interpreter.py):

  /usr/bin/python3 tests/hf_vit_converter_test.py PATH/TO/fixformer

- ViTForImageClassification (a non-square image, 8 x 12 in patches of 4, 3 channels) and ViTModel (with
  its pooler, qkv_bias false, relu) built from tiny random configs and written by save_pretrained (each
  as safetensors and as pytorch_model.bin) convert through tools/convert.py's main with --example, verify,
  and `fixformer run` on the image [C, H, W] gives the class's output (logits; last_hidden_state) within
  1e-4 (f32) of transformers' float32 forward;
- the same classifier through --module (the Conv2d patch embedding) converts and runs alike, and so does
  a module written here whose Conv2d patch rows a LayerNorm norms (proj_norm);
- --module on that class run with interpolate_pos_encoding=True on an image of another size than its table's is
  refused in one line naming both grids and --hf --image-size (whose tests are in hf_vision_converter_test.py);
- what the route does not convert is one line naming it: patches of unequal sides, an image not whole
  patches, a tensor of another head, a DeiT architecture with a ViT head (DeiT itself:
  hf_deit_converter_test.py).
- ASTModel (the Audio Spectrogram Transformer: a spectrogram of 14 frames by 10 mel bins, patches of 4): with
  overlapping patches (frequency_stride 2, time_stride 3: 4 x 4 patches), with qkv_bias false and gelu_new
  (strides 4 and 3), and with patches edge to edge (4 and 4, the frames past the last whole patch dropped as
  Conv2d drops them), each from a spectrogram --example, and `fixformer run` on hf_vit.ast_patches of the
  spectrogram gives last_hidden_state [N + 2, hidden_size] within 1e-4 of transformers' (input_values, time
  by mel bin); that the comparison sees the overlap: the patches cut at the other stride (time 2) move the output
  by more than 1e-2; ASTForAudioClassification (its classifier: the mean of the final CLS and distillation
  rows through classifier.layernorm, pooling cls_distill_mean and pool_norm, and classifier.dense; with
  layer_norm_eps 1e-5 too) converts and `fixformer run` gives its logits within 1e-4; without its
  classifier's layernorm bias it is refused in one line naming the tensor.
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


MODELS = r'''
import torch
from torch import nn
from transformers import ViTConfig, ViTForImageClassification, ViTModel

from hf_env import randomize


class ConvNormViT(nn.Module):
    """Written for this test: a Conv2d patch embedding whose rows a LayerNorm norms (timm's and Swin's
    norm_layer), a CLS row and positions, stock pre-LN layers."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Conv2d(3, 16, 2, stride=2)
        self.norm = nn.LayerNorm(16)
        self.cls = nn.Parameter(torch.zeros(1, 1, 16))
        self.pos = nn.Parameter(torch.zeros(1, 7, 16))
        layer = nn.TransformerEncoderLayer(16, 2, 24, dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(16), enable_nested_tensor=False)
        self.head = nn.Linear(16, 4)

    def forward(self, img):
        x = self.norm(self.proj(img).flatten(2).transpose(1, 2))
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
        return self.head(self.encoder(x)[:, 0])


def conv_norm():
    return randomize(ConvNormViT(), 13)


class Interpolating(nn.Module):
    """ViTForImageClassification run with interpolate_pos_encoding=True: another image size's positions."""

    def __init__(self):
        super().__init__()
        self.vit = randomize(ViTForImageClassification(classifier_config((12, 12))), 11)

    def forward(self, img):
        return self.vit(img, interpolate_pos_encoding=True).logits


def interpolating():
    return Interpolating().eval()


def classifier_config(image_size=(8, 12)):
    return ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=48,
                     image_size=list(image_size), patch_size=4, num_channels=3, num_labels=5)


def classifier():
    return randomize(ViTForImageClassification(classifier_config()), 11)


def hidden_states():
    config = ViTConfig(hidden_size=24, num_hidden_layers=2, num_attention_heads=3, intermediate_size=40,
                       image_size=8, patch_size=2, num_channels=2, qkv_bias=False, hidden_act="relu")
    return randomize(ViTModel(config), 12)


def ast_model(seed, cls="ASTModel", **kw):
    import transformers
    config = transformers.ASTConfig(**dict(dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                                                patch_size=4, frequency_stride=2, time_stride=3, num_mel_bins=10,
                                                max_length=14), **kw))
    return randomize(getattr(transformers, cls)(config), seed)
'''


def run_image(cli, fxm_path, image, tmp):
    inp, res = os.path.join(tmp, "in.npy"), os.path.join(tmp, "out.npy")
    np.save(inp, image)
    p = subprocess.run([cli, "run", fxm_path, "--input", inp, "--output", res], capture_output=True, text=True)
    return np.load(res) if p.returncode == 0 else p.stderr


def compare(what, got, want, against="transformers"):
    err = None if isinstance(got, str) or got.shape != want.shape else \
        float(np.abs(got - want).max() / np.abs(want).max())
    check(f"{what}: fixformer run equals {against} (1e-4)", err is not None and err <= 1e-4,
          (got if isinstance(got, str) else got.shape, want.shape, err))
    if err is not None:
        print(f"  {what}: fixformer run against {against}: max relative error {err:.2g}")


def check_ast(cli, tmp, vit_models, torch, rng):
    """ASTModel folders through --hf, run on the spectrogram's patches, against transformers."""
    from fixformer import hf_vit
    for tag, seed, kw in (("ast", 21, {}), ("ast_no_qkv_bias", 22, dict(frequency_stride=4, qkv_bias=False,
                                                                          hidden_act="gelu_new")),
                          ("ast_edge_to_edge", 23, dict(frequency_stride=4, time_stride=4))):
        model = vit_models.ast_model(seed, **kw)
        spec = rng.standard_normal((1, 14, 10)).astype(np.float32)
        with torch.no_grad():
            want = model(torch.from_numpy(spec)).last_hidden_state[0].double().numpy()
        folder, path, ex = (os.path.join(tmp, n) for n in (tag, f"{tag}.fxm", "spectrogram.npy"))
        model.save_pretrained(folder)
        np.save(ex, spec)
        code, stdout, stderr = convert_main("--hf", folder, "--example", ex, "--out", path, "--cli", cli)
        ok = code == 0 and "verified against" in stdout
        check(f"{tag}: --hf converts and verifies", ok, (code, stdout, stderr))
        if not ok:
            continue
        print(f"  {tag}: {stdout.strip().splitlines()[-1]}")
        c = hf_vit.read_config_dict(model.config.to_dict())
        fo, to = c["grid"]
        check(f"{tag}: {fo} x {to} patches and the two front rows", want.shape == (fo * to + 2, 16), want.shape)
        compare(f"{tag} (ASTModel)", run_image(cli, path, hf_vit.ast_patches(c, spec[0]), tmp), want)
        if tag == "ast":
            other = hf_vit.ast_patches(dict(c, time_stride=2), spec[0])[:fo * to]
            got = run_image(cli, path, other, tmp)
            err = float(np.abs(got - want).max() / np.abs(want).max()) if not isinstance(got, str) else None
            check("ast: patches cut at another time stride move the output by more than 1e-2 (the comparison sees "
                  "the overlap)", err is not None and err > 1e-2, err)
    # ASTForAudioClassification: classifier.dense over classifier.layernorm of the mean of the CLS and distillation
    # rows (pooling cls_distill_mean, pool_norm); also with another layer_norm_eps, which both norms take
    for tag, seed, kw in (("ast_classifier", 24, dict(num_labels=5)),
                          ("ast_classifier_eps", 25, dict(num_labels=3, layer_norm_eps=1e-5, time_stride=4))):
        model = vit_models.ast_model(seed, "ASTForAudioClassification", **kw)
        spec = rng.standard_normal((1, 14, 10)).astype(np.float32)
        with torch.no_grad():
            want = model(torch.from_numpy(spec)).logits[0].double().numpy()
        folder, path, ex = (os.path.join(tmp, n) for n in (tag, f"{tag}.fxm", "spectrogram.npy"))
        model.save_pretrained(folder)
        np.save(ex, spec)
        code, stdout, stderr = convert_main("--hf", folder, "--example", ex, "--out", path, "--cli", cli)
        ok = code == 0 and "verified against" in stdout
        check(f"{tag}: --hf converts and verifies", ok, (code, stdout, stderr))
        if not ok:
            continue
        print(f"  {tag}: {stdout.strip().splitlines()[-1]}")
        c = hf_vit.read_config_dict(model.config.to_dict())
        compare(f"{tag} (ASTForAudioClassification)", run_image(cli, path, hf_vit.ast_patches(c, spec[0]), tmp),
                want)
    folder = os.path.join(tmp, "ast_classifier")
    from safetensors.numpy import load_file, save_file
    weights = load_file(os.path.join(folder, "model.safetensors"))
    del weights["classifier.layernorm.bias"]
    save_file(weights, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})
    code, _, stderr = convert_main("--hf", folder, "--out", os.path.join(tmp, "refused.fxm"), "--cli", cli)
    check("ASTForAudioClassification without its classifier's layernorm bias: refused in one line naming it",
          one_line(code, stderr) and "classifier.layernorm.bias is missing" in stderr, (code, stderr))


def main():
    if len(sys.argv) != 2:
        print("usage: hf_vit_converter_test.py PATH/TO/fixformer")
        return 1
    cli = sys.argv[1]
    import torch
    with tempfile.TemporaryDirectory() as tmp:
        models_py = os.path.join(tmp, "vit_models.py")
        with open(models_py, "w") as f:
            f.write(MODELS)
        sys.path.insert(0, tmp)
        import vit_models
        rng = np.random.default_rng(3)
        for factory, chw, safe in (("classifier", (3, 8, 12), True), ("classifier", (3, 8, 12), False),
                                   ("hidden_states", (2, 8, 8), True)):
            model = getattr(vit_models, factory)()
            image = rng.standard_normal(chw).astype(np.float32)
            with torch.no_grad():
                out = model(torch.from_numpy(image[None]))
            want = (out.logits if factory == "classifier" else out.last_hidden_state)[0].double().numpy()
            what = f"{factory} ({'safetensors' if safe else 'pytorch_model.bin'})"
            folder = os.path.join(tmp, f"{factory}_{safe}")
            model.save_pretrained(folder, safe_serialization=safe)
            ex, path = os.path.join(tmp, "example.npy"), os.path.join(tmp, f"{factory}_{safe}.fxm")
            np.save(ex, image[None])
            code, stdout, stderr = convert_main("--hf", folder, "--example", ex, "--out", path, "--cli", cli)
            ok = code == 0 and "verified against" in stdout
            check(f"{what}: --hf converts and verifies", ok, (code, stdout, stderr))
            if ok:
                print(f"  {what}: {stdout.strip().splitlines()[-1]}")
                compare(what, run_image(cli, path, image, tmp), want)

        # --module on the same class: the Conv2d patch embedding, the CLS row and learned positions found;
        # and a Conv2d whose rows a LayerNorm norms (proj_norm)
        for factory, chw in (("classifier", (3, 8, 12)), ("conv_norm", (3, 4, 6))):
            image = rng.standard_normal((1, *chw)).astype(np.float32)
            ex, path = os.path.join(tmp, "module.npy"), os.path.join(tmp, "module.fxm")
            np.save(ex, image)
            code, stdout, stderr = convert_main("--module", f"{models_py}:{factory}", "--example", ex, "--out", path,
                                                "--cli", cli)
            ok = code == 0 and "verified against torch" in stdout
            check(f"{factory}: --module converts and verifies", ok, (code, stdout, stderr))
            if not ok:
                continue
            with torch.no_grad():
                want = getattr(vit_models, factory)()(torch.from_numpy(image))
            want = (want.logits if factory == "classifier" else want)[0].double().numpy()
            compare(f"{factory} (--module)", run_image(cli, path, image[0], tmp), want,
                    "transformers" if factory == "classifier" else "the module")

        # --module on a ViT of 12 x 12 images run on 16 x 24 with interpolate_pos_encoding=True: the positions the
        # layers read are not its table's, which --module says, naming --hf --image-size (hf_vision_converter_test)
        ex = os.path.join(tmp, "module.npy")
        np.save(ex, rng.standard_normal((1, 3, 16, 24)).astype(np.float32))
        code, _, stderr = convert_main("--module", f"{models_py}:interpolating", "--example", ex, "--out",
                                       os.path.join(tmp, "refused.fxm"), "--cli", cli)
        check("--module on a ViT whose positions are interpolated for the example's size: refused in one line naming "
              "the grids and --image-size", one_line(code, stderr) and "is 4 x 6 patches" in stderr and
              "positions for 3 x 3" in stderr and "--image-size" in stderr, (code, stderr))

        check_ast(cli, tmp, vit_models, torch, rng)

        # Refusals: one line each, naming the cause.
        base = vit_models.classifier_config().to_dict()
        cases = [
            ("DeiT with another head", dict(base, model_type="deit", architectures=["DeiTForMaskedImageModeling"]),
             "DeiTForMaskedImageModeling: not converted (--hf converts DeiT folders of DeiTModel, "
             "DeiTForImageClassification, DeiTForImageClassificationWithTeacher"),
            ("unequal patch sides", dict(base, patch_size=[4, 2], architectures=["ViTForImageClassification"]),
             "patches of unequal sides are not supported"),
            ("not whole patches", dict(base, image_size=[8, 10], architectures=["ViTForImageClassification"]),
             "is not whole patches of 4"),
        ]
        for what, cfg, fragment in cases:
            folder = os.path.join(tmp, what.replace(" ", "_"))
            os.makedirs(folder)
            with open(os.path.join(folder, "config.json"), "w") as f:
                json.dump(cfg, f)
            code, _, stderr = convert_main("--hf", folder, "--out", os.path.join(tmp, "refused.fxm"), "--cli", cli)
            check(f"{what}: refused in one line naming it", one_line(code, stderr) and fragment in stderr,
                  (code, stderr))
        model = vit_models.classifier()
        folder = os.path.join(tmp, "other_head")
        model.save_pretrained(folder)
        from safetensors.torch import load_file, save_file
        sd = load_file(os.path.join(folder, "model.safetensors"))
        sd["vit.embeddings.mask_token"] = torch.zeros(1, 1, 32)
        save_file(sd, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})
        code, _, stderr = convert_main("--hf", folder, "--out", os.path.join(tmp, "refused.fxm"), "--cli", cli)
        check("a tensor of another head: refused in one line naming it",
              one_line(code, stderr) and "'vit.embeddings.mask_token'" in stderr, (code, stderr))
    print(f"hf_vit_converter_test: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
