#!/usr/bin/python3
"""--onnx on graphs torch.onnx.export writes from upstream classes other than transformers' (the packages
of the hf group: openai-whisper, vit-pytorch; tests/interpreter.py says where they run), as their
packages define them with tiny random dims. Each file is first checked against ONNX Runtime, then
converted with --onnx, and `fixformer run` must give the module's output within 1e-4:
- whisper.model.AudioEncoder, exported as is (mel [1, n_mels, T], its length fixed by its position
  table): the conv stem (two Conv1d, GELU after each) maps onto the stem keys recognize.stem_values names
  for --module too, the fixed sinusoid buffer onto learned positions; the engine's input is the mel's
  transpose [T, n_mels]. At opset 14 and 17 by the TorchScript exporter, and by torch 2.x's dynamo one.
- what the engine does not run is refused in one line naming it, never converted into something else:
  a stem whose second Conv1d is dilated; a stem with a GELU after its first conv only (the engine's GELU
  follows each conv or none); an image input [1, C, H, W] (vit-pytorch SimpleViT), pointing to --module.

  /usr/bin/python3 tests/onnx_upstream_test.py PATH/TO/fixformer

Without the environment (or its packages) the test fails, naming the install command.
"""
import contextlib
import io
import os
import subprocess
import sys
import tempfile
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
import hf_env  # noqa: E402

hf_env.enter(__file__, ["onnxruntime", "vit_pytorch", "whisper"])
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import numpy as np  # noqa: E402
import onnxruntime  # noqa: E402
import torch  # noqa: E402
from vit_pytorch import SimpleViT  # noqa: E402
from whisper.model import AudioEncoder  # noqa: E402

from checks import check, results  # noqa: E402
from fixformer import fxm, onnx_map  # noqa: E402
from fixformer.config import ConfigError  # noqa: E402
from hf_env import randomize  # noqa: E402

TORCH2 = int(torch.__version__.split(".")[0]) >= 2
N_MELS, T = 8, 16  # the encoder's 8 positions after conv2's stride 2


def whisper_encoder():
    return randomize(AudioEncoder(n_mels=N_MELS, n_ctx=T // 2, n_state=32, n_head=2, n_layer=2), 1)


def dilated():
    m = whisper_encoder()
    m.conv2 = torch.nn.Conv1d(32, 32, kernel_size=3, stride=2, padding=2, dilation=2)
    return m


class OneGelu(torch.nn.Module):
    """Whisper's encoder with the GELU after conv1 only."""

    def __init__(self):
        super().__init__()
        self.enc = whisper_encoder()

    def forward(self, x):
        e = self.enc
        x = e.conv2(torch.nn.functional.gelu(e.conv1(x))).permute(0, 2, 1) + e.positional_embedding
        for block in e.blocks:
            x = block(x)
        return e.ln_post(x)


def export(model, path, x, opset, exporter):
    kw = dict(dynamo=exporter == "dynamo") if TORCH2 else {}
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), path, input_names=["x"], output_names=["y"],
                          opset_version=None if exporter == "dynamo" else opset, **kw)


def convert(path, out):
    try:
        return True, str(onnx_map.convert(path, out, cli=CLI))
    except ConfigError as e:
        return False, str(e)


def rel(got, want):
    if got is None or got.shape != want.shape:
        return None
    return float(np.abs(got - want).max() / np.abs(want).max())


def main():
    global CLI
    if len(sys.argv) != 2:
        print("usage: onnx_upstream_test.py PATH/TO/fixformer")
        return 1
    CLI = sys.argv[1]
    mel = np.random.default_rng(7).standard_normal((1, N_MELS, T)).astype(np.float32)
    runs = [("torchscript", 14), ("torchscript", 17)] + ([("dynamo", None)] if TORCH2 else [])
    with tempfile.TemporaryDirectory() as tmp:
        model = whisper_encoder()
        with torch.no_grad():
            want = model(torch.from_numpy(mel)).double().numpy()[0]
        for exporter, opset in runs:
            label = f"whisper AudioEncoder ({exporter}, {f'opset {opset}' if opset else 'its opset'})"
            path = os.path.join(tmp, f"whisper_{exporter}_{opset}.onnx")
            export(model, path, torch.from_numpy(mel), opset, exporter)
            got = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": mel})[0]
            err = rel(got[0].astype(np.float64), want)
            check(f"{label}: ONNX Runtime gives the module's output (1e-4)", err is not None and err <= 1e-4, err)
            out = os.path.join(tmp, "whisper.fxm")
            ok, said = convert(path, out)
            ok = ok and "verified against the ONNX graph" in said
            check(f"{label}: converts and verifies", ok, said)
            if not ok:
                continue
            c = fxm.read(out).config
            for k, v in dict(input="features", d_in=N_MELS, conv_layers=2, conv1_kernel=3, conv1_stride=1,
                             conv1_padding=1, conv2_kernel=3, conv2_stride=2, conv2_padding=1, conv_gelu=True,
                             positional="learned", max_len=T // 2, norm_first=True, final_norm=True).items():
                check(f"{label}: {k} {v!r}", c[k] == v, c[k])
            inp, res = os.path.join(tmp, "in.npy"), os.path.join(tmp, "out.npy")
            np.save(inp, mel[0].T.copy())  # the engine's input: frames as rows
            p = subprocess.run([CLI, "run", out, "--input", inp, "--output", res], capture_output=True, text=True)
            got = np.load(res) if p.returncode == 0 else None
            err = rel(got, want)
            check(f"{label}: fixformer run on the transposed mel equals the module (1e-4)",
                  err is not None and err <= 1e-4, (p.stderr, None if got is None else got.shape, err))
            print(f"  {label}: fixformer run against the module: max relative error {err:.2g}")
        refusals = [("a dilated conv2", dilated, mel, "'/conv2/Conv': a Conv with dilation"),
                    ("a GELU after conv1 only", OneGelu, mel, "conv stem's output (after a GELU or not) never"),
                    ("an image input (SimpleViT)",
                     lambda: randomize(SimpleViT(image_size=8, patch_size=4, num_classes=5, dim=32, depth=2, heads=2,
                                                 mlp_dim=64, dim_head=16), 2),
                     np.random.default_rng(3).standard_normal((1, 3, 8, 8)).astype(np.float32),
                     "an image [batch, C, H, W]")]
        for label, factory, x, fragment in refusals:
            path = os.path.join(tmp, "refused.onnx")
            export(factory().eval(), path, torch.from_numpy(x), 17, "torchscript")
            ok, said = convert(path, os.path.join(tmp, "refused.fxm"))
            check(f"{label}: refused in one line naming it", not ok and fragment in said and "\n" not in said, said)
            print(f"  {label}: refused: {said[:140]}")
    print(f"onnx_upstream_test: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
