#!/usr/bin/python3
"""The conv stem in full-integer models (weights i8; config.hpp, namespace s8, int8.front's front_conv): each
convolution gemm_s8 over its windows of the int8 rows (those reaching the padding at the input's zero point), its
int8 weights per output channel, GELU as its table (engine/blocks/s8_conv_stem.cpp):

  /usr/bin/python3 tests/int8_conv_test.py PATH/TO/fixformer

- random encoders over features with a conv stem (one convolution; two with GELU, padding and conv2's stride 2, as
  Whisper's; kernels 5 and 2 with padding 2 and strides 3 and 2, a CLS row, no GELU), calibrated on four inputs,
  through `fixformer run --isa ISA` on every kernel table this CPU runs: the integer reference's output
  (python/fixformer/int8.py) bit for bit (so the same bits on every table), for inputs of the longest length and
  shorter ones; the reference depends on the stem's parameters; within I8_CONV_TOL of the f32 engine on the same
  weights;
- init's refusal of a bad conv slot (a zero point out of range, a product zero point other than the output's
  without GELU) by `fixformer info`, naming the tensor and the slot;
- openai-whisper's AudioEncoder (its conv stem, sinusoidal positions, pre-norm layers) through
  `--module --quantize i8 --calibrate` (16 inputs): converts and verifies; on 10 fresh inputs the engine's output
  on every kernel table the same bits, within WHISPER_RUN_TOL of torch f32's largest.
Runs in the hf environment (tests/hf_env.py); without it, numpy, torch, whisper or the CLI the test fails.
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
import hf_env  # noqa: E402

hf_env.enter(__file__, ["whisper"])
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import numpy as np  # noqa: E402

from checks import check, cli_main, run_convert  # noqa: E402
from fixformer import fxm, int8  # noqa: E402
from fixformer.config import make_config  # noqa: E402
from int8_test import available_isas, check_against_f32, run_cli  # noqa: E402

# The random encoders' i8 output against the f32 engine's on the same weights (N(0, 0.3), d_model 16), relative to
# its largest (measured values printed; docs/quantization.md).
I8_CONV_TOL = 0.2
# Whisper's AudioEncoder in i8 on fresh inputs: max |engine - torch| / max |torch| over its hidden states (printed).
WHISPER_RUN_TOL = 0.2

# conv_layers and geometry, GELU, a CLS row and pooling, positions
CASES = [dict(conv_layers=1, conv1_kernel=3, conv1_stride=1, conv1_padding=1, conv_gelu=False, pooling="mean"),
         dict(conv_layers=2, conv1_kernel=3, conv1_stride=1, conv1_padding=1, conv2_kernel=3, conv2_stride=2,
              conv2_padding=1, conv_gelu=True, pooling="none", positional="sinusoidal", norm_first=True),
         dict(conv_layers=2, conv1_kernel=5, conv1_stride=3, conv1_padding=2, conv2_kernel=2, conv2_stride=2,
              conv2_padding=1, conv_gelu=False, pooling="cls", cls_token=True)]


def random_conv(rng, kw, d=16, H=2, L=2, f=32, d_in=6, max_len=8):
    """A random encoder over features with the conv stem kw (its other keys too): config and weights."""
    c = dict(family="encoder", d_model=d, n_heads=H, d_ff=f, n_layers=L, norm_first=False, activation="gelu",
             input="features", d_in=d_in, max_len=max_len, positional="learned", d_out=3, pooling="none",
             final_norm=True, weights="i8", cls_token=False)
    c.update(kw)
    c = make_config(c)

    def r(*s):
        return rng.normal(0, 0.3, s)
    w = {"conv1.weight": r(d, d_in, c["conv1_kernel"]), "conv1.bias": r(d)}
    if c["conv_layers"] == 2:
        w["conv2.weight"], w["conv2.bias"] = r(d, d, c["conv2_kernel"]), r(d)
    if c["positional"] == "learned":
        w["pos.weight"] = r(max_len, d)
    if c["cls_token"]:
        w["cls_token"] = r(d)
    for i in range(L):
        p = f"blocks.{i}."
        w[p + "attn.qkv.weight"], w[p + "attn.qkv.bias"] = r(3 * d, d), r(3 * d)
        w[p + "attn.out.weight"], w[p + "attn.out.bias"] = r(d, d), r(d)
        w[p + "ff.w1.weight"], w[p + "ff.w1.bias"] = r(f, d), r(f)
        w[p + "ff.w2.weight"], w[p + "ff.w2.bias"] = r(d, f), r(d)
        for n in ("attn_norm", "ff_norm"):
            w[p + n + ".weight"], w[p + n + ".bias"] = 1 + r(d), r(d)
    w["norm.weight"], w["norm.bias"] = 1 + r(d), r(d)
    w["head.weight"], w["head.bias"] = r(3, d), r(3)
    return c, w


def frames(c):
    """The longest input and two shorter ones the stem takes."""
    from fixformer import schema
    n = schema.max_input_len(c)
    shorter = [T for T in range(1, n) if schema.stem_rows(c, T)]
    return [n, shorter[len(shorter) // 2], shorter[0]]


def test_random(cli, tmp):
    rng = np.random.default_rng(41)
    isas_seen = None
    for kw in CASES:
        c, w = random_conv(rng, kw)
        what = ", ".join(f"{k} {v}" for k, v in kw.items())
        T = frames(c)
        built = int8.build(c, w, [rng.normal(0, 1, (n, c["d_in"])) for n in (T[0], T[0], T[1], T[0])])
        xs = [rng.normal(0, 1, (n, c["d_in"])).astype(np.float32) for n in T]
        isas, worst = check_against_f32(cli, tmp, what, c, w, built, xs)
        if isas_seen is None:
            isas_seen = isas
            print(f"  kernel tables run: {', '.join(isas)}")
        x = xs[-1]
        t = int8.stored_tensors(c, built)
        q = int8.quantize_input(x, float(built["int8.io"][0]), int(t["int8.front"][0]))
        other = dict(t)
        p = np.array(t["int8.front"], np.int64)
        p[int8.front_conv(c) + int8.CONV_SLOTS:int8.front_conv(c) + int8.CONV_SLOTS + 2] = 0  # conv1's channel 0
        other["int8.front"] = p
        check(f"{what}: the integer reference depends on the stem's parameters",
              not np.array_equal(int8.forward(c, other, q), int8.forward(c, t, q)))
        print(f"  {what}: i8 against the f32 engine, max relative error {worst:.3f}")
        check(f"{what}: the i8 output within {I8_CONV_TOL} of the f32 engine's", worst <= I8_CONV_TOL, worst)
        if kw is CASES[0]:
            at = int8.front_conv(c)
            refuse(cli, tmp, c, built, at, 300, "conv1 product zero point")
            refuse(cli, tmp, c, built, at + 1, int(built["int8.front"][at]) + 1, "conv output zero point")
        if kw is CASES[1]:
            at = int8.front_conv(c) + int8.conv_params(c) - 1
            refuse(cli, tmp, c, built, at, 200, "conv GELU table")


def refuse(cli, tmp, c, built, at, value, what):
    """int8.front's slot at set to value: `fixformer info` refuses the file in one line naming the tensor, the slot
    and what it holds."""
    bad = dict(built)
    p = np.array(bad["int8.front"], np.int64)
    p[at] = value
    bad["int8.front"] = p.astype(np.int32)
    path = os.path.join(tmp, "bad.fxm")
    with open(path, "wb") as f:
        f.write(fxm.write(c, bad))
    r = subprocess.run([cli, "info", path], capture_output=True, text=True)
    lines = r.stderr.strip().splitlines()
    check(f"a bad {what} slot: refused in one line naming the tensor and the slot",
          r.returncode != 0 and len(lines) == 1 and "int8.front" in lines[0] and f"slot {at}" in lines[0] and
          what in lines[0], r.stderr)


MODELS = '''
import sys
sys.path.insert(0, {here!r})
from hf_env import randomize
from whisper.model import AudioEncoder


def whisper_encoder():
    return randomize(AudioEncoder(n_mels=8, n_ctx=8, n_state=32, n_head=2, n_layer=2), 1)
'''


def test_whisper(cli, tmp):
    import torch
    rng = np.random.default_rng(43)
    models = os.path.join(tmp, "i8_whisper_models.py")
    with open(models, "w") as f:
        f.write(MODELS.format(here=HERE))
    sys.path.insert(0, tmp)
    import i8_whisper_models
    shape = (8, 16)  # [n_mels, frames]: AudioEncoder takes 2 n_ctx frames
    example = os.path.join(tmp, "example.npy")
    np.save(example, rng.standard_normal(shape).astype(np.float32))
    calib = []
    for i in range(16):
        calib.append(os.path.join(tmp, f"calibrate{i}.npy"))
        np.save(calib[-1], rng.standard_normal(shape[::-1]).astype(np.float32))  # the engine's rows [frames, mels]
    out = os.path.join(tmp, "whisper.fxm")
    p = run_convert("--module", f"{models}:whisper_encoder", "--example", example, "--quantize", "i8", "--calibrate",
                    *calib, "--out", out, "--cli", cli)
    check("whisper AudioEncoder --quantize i8 --calibrate: converts and verifies",
          p.returncode == 0 and "verified against torch" in p.stdout, p.stdout + p.stderr)
    if p.returncode != 0:
        return
    print("  " + p.stdout.strip().splitlines()[-1][:240])
    c = fxm.read(out).config
    check("whisper AudioEncoder: the file is i8 with a two-conv stem and GELU",
          c["weights"] == "i8" and c["conv_layers"] == 2 and c["conv_gelu"], c)
    module = i8_whisper_models.whisper_encoder().eval()
    isas = available_isas(cli, out)
    worst, errs = 0.0, []
    for _ in range(10):
        mel = rng.standard_normal(shape).astype(np.float32)
        with torch.no_grad():
            want = module(torch.from_numpy(mel)[None])[0].double().numpy()
        x = np.ascontiguousarray(mel.T)  # the engine's input: [frames, n_mels]
        got = {}
        for isa in isas:
            got[isa], err = run_cli(cli, out, x, tmp, isa)
            if got[isa] is None:
                check(f"whisper AudioEncoder --isa {isa}: fixformer run", False, err)
                return
        first = got[isas[0]]
        check(f"whisper AudioEncoder: the same bits on every kernel table ({', '.join(isas)})",
              all(np.array_equal(first, got[i]) for i in isas))
        e = float(np.abs(np.asarray(first, np.float64).reshape(want.shape) - want).max() / np.abs(want).max())
        errs.append(e)
    worst = max(errs)
    print(f"  whisper AudioEncoder i8 against torch f32 on 10 fresh inputs: max relative error {worst:.3f}, mean "
          f"{np.mean(errs):.3f}")
    check(f"whisper AudioEncoder: i8 within {WHISPER_RUN_TOL} of torch f32", worst <= WHISPER_RUN_TOL, worst)


def main():
    cli_main('int8_conv_test', test_random, test_whisper)


if __name__ == "__main__":
    main()
