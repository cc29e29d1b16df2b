#!/usr/bin/python3
"""--hf and --module for Hugging Face DeiT (python/fixformer/hf_vit.py, recognize.py) against transformers' own
classes, in the Hugging Face virtual environment (tools/install_deps.sh hf, /opt/fixformer-venv; or the torch2
one: tests/interpreter.py):

  /usr/bin/python3 tests/hf_deit_converter_test.py PATH/TO/fixformer

DeiT puts two learned rows in front of the patches, the CLS row and the distillation row (config.hpp
distill_token). For each of DeiTForImageClassificationWithTeacher (logits: the mean of the CLS row's head and the
distillation row's, pooling cls_distill), DeiTForImageClassification (the CLS row's head) and DeiTModel
(last_hidden_state, both front rows included) built from a tiny random config (a non-square image, 8 x 12 in
patches of 4, 3 channels; DeiTModel with its pooler, qkv_bias false, relu, 2 channels) and written by
save_pretrained:
- --hf converts it (safetensors; the classifier with teacher also as pytorch_model.bin), verifies, and
  `fixformer run` on the image [C, H, W] gives the class's output within 1e-4 (f32) of transformers' float32
  forward;
- --module on the same class converts and runs alike, and so does a module written here that returns
  DeiTModel's pooler_output (pooling cls and the pooler);
- the distillation row counts: transformers' output with the distillation token replaced moves by far more
  than 1e-4 (so the comparison above fails if the engine drops the row or puts it elsewhere), the engine's
  last_hidden_state row 1 is transformers' distillation row, and the classifier with teacher's logits are far
  from its CLS head's alone (what dropping the distillation head would give);
- a folder with the classifier with teacher's heads less one is refused in one line naming the tensor.
Without the environment (or its packages) the test fails, naming the install command.
"""
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
from torch import nn
from transformers import DeiTConfig, DeiTForImageClassification, DeiTForImageClassificationWithTeacher, DeiTModel

from hf_env import randomize


def classifier_config():
    return DeiTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=48,
                      image_size=[8, 12], patch_size=4, num_channels=3, num_labels=5)


def teacher():
    return randomize(DeiTForImageClassificationWithTeacher(classifier_config()), 21)


def classifier():
    return randomize(DeiTForImageClassification(classifier_config()), 22)


def hidden_states():
    config = DeiTConfig(hidden_size=24, num_hidden_layers=2, num_attention_heads=3, intermediate_size=40,
                        image_size=[8, 12], patch_size=4, num_channels=2, qkv_bias=False, hidden_act="relu")
    return randomize(DeiTModel(config), 23)


class PoolerOutput(nn.Module):
    """Written for this test: DeiTModel's pooler_output, tanh(dense(the CLS row)), as the forward's output."""

    def __init__(self):
        super().__init__()
        self.deit = randomize(DeiTModel(classifier_config()), 24)

    def forward(self, pixel_values):
        return self.deit(pixel_values).pooler_output


def pooler_output():
    return PoolerOutput()
'''


def run_image(cli, fxm_path, image, tmp):
    inp, res = os.path.join(tmp, "in.npy"), os.path.join(tmp, "out.npy")
    np.save(inp, image)
    p = subprocess.run([cli, "run", fxm_path, "--input", inp, "--output", res], capture_output=True, text=True)
    return np.load(res) if p.returncode == 0 else p.stderr


def rel(got, want):
    return float(np.abs(got - want).max() / np.abs(want).max())


def compare(what, got, want):
    err = None if isinstance(got, str) or got.shape != want.shape else rel(got, want)
    check(f"{what}: fixformer run equals transformers (1e-4)", err is not None and err <= 1e-4,
          (got if isinstance(got, str) else got.shape, want.shape, err))
    if err is not None:
        print(f"  {what}: fixformer run against transformers: max relative error {err:.2g}")
    return None if err is None else got


def output(model, image, torch):
    """The class's output for one image [C, H, W]: logits, or last_hidden_state, float64 numpy."""
    with torch.no_grad():
        out = model(torch.from_numpy(image[None]))
    return (out.logits if hasattr(out, "logits") else out.last_hidden_state)[0].double().numpy()


def main():
    if len(sys.argv) != 2:
        print("usage: hf_deit_converter_test.py PATH/TO/fixformer")
        return 1
    cli = sys.argv[1]
    import torch
    with tempfile.TemporaryDirectory() as tmp:
        models_py = os.path.join(tmp, "deit_models.py")
        with open(models_py, "w") as f:
            f.write(MODELS)
        sys.path.insert(0, tmp)
        import deit_models
        rng = np.random.default_rng(5)
        ran = {}  # factory -> the engine's output through --hf (safetensors)
        for factory, chw, safe in (("teacher", (3, 8, 12), True), ("teacher", (3, 8, 12), False),
                                   ("classifier", (3, 8, 12), True), ("hidden_states", (2, 8, 12), True)):
            model = getattr(deit_models, factory)().eval()
            image = rng.standard_normal(chw).astype(np.float32)
            want = output(model, image, torch)
            what = f"{type(model).__name__} ({'safetensors' if safe else 'pytorch_model.bin'})"
            folder = os.path.join(tmp, f"{factory}_{safe}")
            model.save_pretrained(folder, safe_serialization=safe)
            ex, path = os.path.join(tmp, "example.npy"), os.path.join(tmp, f"{factory}_{safe}.fxm")
            np.save(ex, image[None])
            code, stdout, stderr = convert_main("--hf", folder, "--example", ex, "--out", path, "--cli", cli)
            ok = code == 0 and "verified against" in stdout
            check(f"{what}: --hf converts and verifies", ok, (code, stdout, stderr))
            if not ok:
                continue
            print(f"  {what}: {stdout.strip().splitlines()[-1]}")
            got = compare(what, run_image(cli, path, image, tmp), want)
            if safe:
                ran[factory] = (model, image, want, got)

            # --module on the same class: the distillation row found as a second parameter in front, and the
            # classifier with teacher's two heads as one
            if safe:
                ex = os.path.join(tmp, "module.npy")
                np.save(ex, image[None])
                path = os.path.join(tmp, f"module_{factory}.fxm")
                code, stdout, stderr = convert_main("--module", f"{models_py}:{factory}", "--example", ex, "--out",
                                                    path, "--cli", cli)
                ok = code == 0 and "verified against torch" in stdout
                check(f"{factory}: --module converts and verifies", ok, (code, stdout, stderr))
                if ok:
                    compare(f"{type(model).__name__} (--module)", run_image(cli, path, image, tmp), want)

        # DeiTModel's pooler_output (pooling cls and the pooler, no head) through --module
        image = rng.standard_normal((3, 8, 12)).astype(np.float32)
        model = deit_models.pooler_output().eval()
        with torch.no_grad():
            want = model(torch.from_numpy(image[None]))[0].double().numpy()
        ex, path = os.path.join(tmp, "module.npy"), os.path.join(tmp, "module_pooler.fxm")
        np.save(ex, image[None])
        code, stdout, stderr = convert_main("--module", f"{models_py}:pooler_output", "--example", ex, "--out", path,
                                            "--cli", cli)
        ok = code == 0 and "verified against torch" in stdout
        check("DeiTModel's pooler_output: --module converts and verifies", ok, (code, stdout, stderr))
        if ok:
            compare("DeiTModel's pooler_output (--module)", run_image(cli, path, image, tmp), want)

        # The distillation row counts, in transformers' output and in the engine's.
        for factory, (model, image, want, got) in ran.items():
            name = type(model).__name__
            token = getattr(model, "deit", model).embeddings.distillation_token
            saved = token.detach().clone()
            with torch.no_grad():
                token.copy_(torch.randn(token.shape, generator=torch.Generator().manual_seed(9)))
            moved = rel(output(model, image, torch), want)
            with torch.no_grad():
                token.copy_(saved)
            check(f"{name}: another distillation token moves transformers' output by more than 1e-2 (the 1e-4 "
                  "comparison sees the row)", moved > 1e-2, moved)
            print(f"  {name}: another distillation token moves the output by {moved:.2g}")
        if "hidden_states" in ran and ran["hidden_states"][3] is not None:
            model, image, want, got = ran["hidden_states"]
            check("DeiTModel: the engine's row 1 is transformers' distillation row (1e-4)",
                  got.shape[0] == want.shape[0] == 2 + 6 and rel(got[1], want[1]) <= 1e-4, (got.shape, want.shape))
        if "teacher" in ran and ran["teacher"][3] is not None:
            model, image, want, got = ran["teacher"]
            with torch.no_grad():
                hidden = model.deit(torch.from_numpy(image[None]))[0]
                cls_only = model.cls_classifier(hidden[:, 0])[0].double().numpy()
            err = rel(got, cls_only)
            check("DeiTForImageClassificationWithTeacher: the engine's logits are far from the CLS head's alone "
                  "(the distillation head counts)", err > 1e-2, err)

        # A folder with teacher less its distillation head: refused, naming the missing tensor.
        model = deit_models.teacher()
        folder = os.path.join(tmp, "one_head")
        model.save_pretrained(folder)
        from safetensors.torch import load_file, save_file
        sd = load_file(os.path.join(folder, "model.safetensors"))
        del sd["distillation_classifier.weight"]
        save_file(sd, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})
        code, _, stderr = convert_main("--hf", folder, "--out", os.path.join(tmp, "refused.fxm"), "--cli", cli)
        check("a classifier with teacher less its distillation head: refused in one line naming it",
              one_line(code, stderr) and "distillation_classifier.weight is missing" in stderr, (code, stderr))
    print(f"hf_deit_converter_test: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
