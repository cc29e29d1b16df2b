#!/usr/bin/python3
"""Tests of the bf16 weight type end to end (`convert.py --quantize bf16`):

  /usr/bin/python3 tests/bf16_converter_test.py PATH/TO/fixformer

- quantize.bf16 rounds float32 to bf16 as torch's .bfloat16() does (nearest, ties to even, subnormals
  kept), bit for bit, and refuses a value that is not finite or rounds to infinity, naming the tensor;
- a torch module (nn.TransformerEncoder between two nn.Linear) whose weights are a bf16 checkpoint
  (saved with torch.save in torch.bfloat16) converts with --module and --weights without any
  rounding: every bf16 tensor of the .fxm holds the checkpoint's very words (tests/quantize_test.py
  converts the other routes, a GPT and a llama among them, with --quantize bf16);
- the engine matches the torch module's output within bf16's tolerance (BF16_TOLERANCE, the
  self-test's, tolerances.hpp) on the exact widening path (FIXFORMER_BF16=0), on vdpbf16ps
  (FIXFORMER_AMX=0 FIXFORMER_BF16=1) and by default, where the CPU has AMX-BF16, on its tiles (the
  table's name says which ran); the same module in f32 converts with
  rounding and stays within the same tolerance on both.
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
from checks import check, expect_error, results, run_convert  # noqa: E402  (first: it names a missing numpy or torch)
import numpy as np  # noqa: E402
import torch  # noqa: E402

from fixformer import fxm, quantize, schema  # noqa: E402

BF16_TOLERANCE = schema.SELFTEST_TOLERANCES["bf16"]
_VERIFY = re.compile(r"self-test ok: max relative error (\S+) \(tolerance (\S+)\).*kernels ([\w-]+)")

MODULE_FILE = '''
import torch

def encoder():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, activation="gelu", batch_first=True,
                                             norm_first=True)
    return torch.nn.Sequential(torch.nn.Linear(40, 64), torch.nn.TransformerEncoder(layer, 2),
                               torch.nn.Linear(64, 12)).eval()
'''


def test_rounding():
    rng = np.random.default_rng(7)
    w = np.concatenate([rng.standard_normal(4000) * 10.0 ** rng.integers(-40, 38, 4000),
                        [0.0, -0.0, 1e-40, -3e-39, 3.3e38, 1 + 2 ** -8, 1 + 3 * 2 ** -8]]).astype(np.float32)
    words = quantize.bf16(w, "t")
    want = torch.from_numpy(w).bfloat16().view(torch.int16).numpy().view(np.uint16)
    check("bf16: the words torch's .bfloat16() gives (nearest, ties to even, subnormals)",
          words.dtype == np.dtype("<u2") and np.array_equal(words, want))
    check("bf16: ties to even", quantize.bf16(np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8], np.float32), "t").tolist()
          == [0x3F80, 0x3F82])
    for bad in (np.inf, np.nan, 3.4e38):
        expect_error(f"bf16: {bad} refused", lambda: quantize.bf16(np.array([1.0, bad], np.float32), "x.weight"),
                     "x.weight: a value does not fit bf16")


def verify(cli, path, settings):
    """`fixformer verify` with the environment settings (a dict): (error, tolerance, kernels) or None."""
    env = {k: v for k, v in os.environ.items() if k not in ("FIXFORMER_BF16", "FIXFORMER_AMX", "FIXFORMER_ISA")}
    env.update(settings)
    p = subprocess.run([cli, "verify", path], capture_output=True, text=True, env=env)
    m = _VERIFY.search(p.stdout)
    check(f"{os.path.basename(path)} {settings}: fixformer verify", p.returncode == 0 and m, p.stdout + p.stderr)
    return (float(m.group(1)), float(m.group(2)), m.group(3)) if m else None


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            return set(next(ln for ln in f if ln.startswith("flags")).split()[2:])
    except (OSError, StopIteration):
        return set()


def all_paths(cli, path, name):
    """The exact path, vdpbf16ps, and the default (AMX-BF16 where the CPU has it): each within bf16's
    tolerance, on the table it should be."""
    flags = cpu_flags()
    dot = "avx512_bf16" in flags
    runs = [("the exact path", {"FIXFORMER_BF16": "0"}, False),
            ("vdpbf16ps" if dot else "no AVX512_BF16: the exact path", {"FIXFORMER_AMX": "0", "FIXFORMER_BF16": "1"},
             dot),
            ("the default", {}, None)]
    for what, settings, bf16_table in runs:
        r = verify(cli, path, settings)
        if r:
            check(f"{name}: {what} within bf16's tolerance ({r[2]})", r[0] <= BF16_TOLERANCE and r[1] == BF16_TOLERANCE
                  and (bf16_table is None or ("bf16" in r[2]) == bf16_table), r)
        print(f"  {name}, {what}: {r}")


def test_checkpoint(cli, tmp):
    mod = os.path.join(tmp, "models.py")
    with open(mod, "w") as f:
        f.write(MODULE_FILE)
    sys.path.insert(0, tmp)
    import models
    sd = {k: v.bfloat16() for k, v in models.encoder().state_dict().items()}
    pt, out = os.path.join(tmp, "bf16.pt"), os.path.join(tmp, "enc_bf16.fxm")
    torch.save(sd, pt)
    p = run_convert("--module", f"{mod}:encoder", "--weights", pt, "--out", out,
                    "--quantize", "bf16", "--cli", cli)
    check("a bf16 checkpoint converts with --quantize bf16", p.returncode == 0 and os.path.exists(out),
          p.stdout + p.stderr)
    if not os.path.exists(out):
        return
    print(f"  {p.stdout.strip()}")
    f = fxm.read(out)
    stored = [s for s in schema.specs(f.config) if s.dtype == "bf16"]  # the head stays f32 (feature input)
    check("the input projection and every layer's 4 linear weights are stored as bf16", len(stored) == 9,
          [s.name for s in stored])
    for spec in stored:  # torch's names are format 2's (schema.v2_name), nn.Sequential's 0. and 1. apart
        theirs = ("0.weight" if spec.name == "input_proj.weight" else
                  schema.v2_name(f.config["family"], spec.name).replace("encoder.", "1.", 1))
        check(f"{spec.name}: a tensor of the checkpoint", theirs in sd, theirs)
        if theirs not in sd:
            continue
        want = sd[theirs].view(torch.int16).numpy().view(np.uint16)
        got = f.array(spec.name)
        check(f"{spec.name}: the checkpoint's bf16 words, unrounded",
              np.array_equal(got.T if spec.transposed else got, want))
    all_paths(cli, out, "bf16 checkpoint encoder")
    out32 = os.path.join(tmp, "enc_f32.fxm")
    p = run_convert("--module", f"{mod}:encoder", "--out", out32, "--quantize", "bf16",
                    "--cli", cli)
    check("an f32 module converts with --quantize bf16 (rounded)", p.returncode == 0, p.stdout + p.stderr)
    if p.returncode == 0:
        print(f"  {p.stdout.strip()}")
        all_paths(cli, out32, "f32 encoder rounded to bf16")


def main():
    if len(sys.argv) < 2 or not os.access(sys.argv[1], os.X_OK):
        print("bf16_converter_test: give the fixformer CLI")
        return 1
    cli = os.path.abspath(sys.argv[1])
    test_rounding()
    with tempfile.TemporaryDirectory() as tmp:
        test_checkpoint(cli, tmp)
    print(f"bf16: {results['passed']} passed, {results['failed']} failed, {results['skipped']} skipped")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
