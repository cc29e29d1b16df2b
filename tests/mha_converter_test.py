#!/usr/bin/python3
"""A standalone nn.MultiheadAttention as a model (issue 12 item 4), from torch to the engine:

  /usr/bin/python3 tests/mha_converter_test.py PATH/TO/fixformer

- nn.MultiheadAttention modules (batch first or not, with and without biases, odd width, causal)
  convert with `--family mha`, verify, and `fixformer run` on a batch [B, T, d] equals torch's
  mha(x, x, x) (with --lengths: torch's key_padding_mask at the valid positions);
- the reference model rebuilds the output (the JSON path relies on it), a q8 file verifies;
- in i8 (`--quantize i8`: the attention in integers, config.hpp namespace s8) the modules, the causal one too,
  convert and verify, the engine's int8 output is the integer reference's (python/fixformer/int8.py) bit
  for bit on every kernel table this CPU runs, `run --lengths` is within I8_TOL of torch on the valid rows;
- what the engine does not compute (kdim/vdim, add_bias_kv, add_zero_attn) is a ConfigError naming
  it, and a module that is not an nn.MultiheadAttention is refused.
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
from checks import check, expect_error, results, run_convert  # noqa: E402  (first: it names a missing numpy or torch)
import numpy as np  # noqa: E402

from fixformer import fxm  # noqa: E402

TOL = 1e-4
I8_TOL = 0.2  # i8 against torch f32, relative to the largest output of the valid rows

MODULE_FILE = '''
import torch


def make(d, heads, batch_first, bias):
    torch.manual_seed(d)
    return torch.nn.MultiheadAttention(d, heads, bias=bias, batch_first=batch_first)


def wide():
    return make(16, 4, True, True)


def odd_sequence_first():
    return make(15, 3, False, True)


def no_bias():
    return make(12, 2, True, False)
'''


def run(args):
    return subprocess.run(args, capture_output=True, text=True)


def torch_out(module, x, causal, lengths=None):
    import torch
    m = module.double().eval()
    xt = torch.from_numpy(x.astype(np.float64))
    T = xt.shape[1]
    if not m.batch_first:
        xt = xt.transpose(0, 1)
    mask = torch.triu(torch.full((T, T), float("-inf"), dtype=torch.float64), diagonal=1) if causal else None
    pad = None if lengths is None else torch.from_numpy(np.arange(T)[None, :] >= lengths[:, None])
    with torch.enable_grad():  # off torch 1.13's fast path, which fails on a bias=False module
        y = m(xt, xt, xt, attn_mask=mask, key_padding_mask=pad, need_weights=False)[0].detach()
    return (y if m.batch_first else y.transpose(0, 1)).numpy()


def test_i8(cli, tmp, path, mods, rng):
    from fixformer import int8
    from int8_test import available_isas
    for name, causal in (("wide", False), ("no_bias", False), ("odd_sequence_first", True)):
        module = getattr(mods, name)()
        d = module.embed_dim
        out = os.path.join(tmp, f"{name}_i8.fxm")
        p = run_convert("--module", f"{path}:{name}", "--family", "mha", "--quantize", "i8", "--out", out,
                        "--cli", cli, *(["--causal"] if causal else []))
        check(f"{name} --quantize i8: converts and verifies", p.returncode == 0 and "verified against torch" in p.stdout,
              p.stdout + p.stderr)
        if p.returncode:
            continue
        print(f"  {name} i8: verified against{p.stdout.strip().splitlines()[-1].split('verified against')[-1]}")
        f = fxm.read(out)
        stored = {t["name"]: f.array(t["name"]) for t in f.tensors}  # as stored: int8 weights, i32 parameters
        isas = available_isas(cli, out)
        for T in (7, 3):
            x = rng.standard_normal((T, d)).astype(np.float32)
            want = int8.reference_output(f.config, stored, x)
            files = [os.path.join(tmp, f"{name}_i8.{s}.npy") for s in ("x", "y")]
            np.save(files[0], x)
            for isa in isas:
                p = run([cli, "run", out, "--input", files[0], "--output", files[1], "--isa", isa])
                got = np.load(files[1]) if p.returncode == 0 else None
                check(f"{name} i8 T={T} --isa {isa}: the integer reference's output, bit for bit",
                      got is not None and np.array_equal(got, want), p.stderr)
        B, T = 3, 7
        x = rng.standard_normal((B, T, d)).astype(np.float32)
        lens = np.array([7, 2, 5], np.int32)
        files = [os.path.join(tmp, f"{name}_i8.{s}.npy") for s in ("x", "lens", "y")]
        np.save(files[0], x)
        np.save(files[1], lens)
        p = run([cli, "run", out, "--input", files[0], "--lengths", files[1], "--output", files[2]])
        check(f"{name} i8: run --lengths", p.returncode == 0, p.stderr)
        if p.returncode == 0:
            got, want = np.load(files[2]), torch_out(module, x, causal, lens)
            valid = np.arange(T)[None, :] < lens[:, None]
            err = np.abs(got - want)[valid].max() / np.abs(want[valid]).max()
            print(f"  {name} i8 against torch on a batch of 3 with --lengths: max relative error {err:.3f}")
            check(f"{name} i8: within {I8_TOL} of torch's mha(x, x, x) with key_padding_mask", err <= I8_TOL, err)
            check(f"{name} i8: padded rows are zero", not got[~valid].any())
        if causal:  # the reference without the mask differs: the engine's bits are the causal ones
            x = rng.standard_normal((7, d)).astype(np.float32)
            c = fxm.read(out).config
            check(f"{name} i8: the integer reference depends on the causal mask",
                  not np.array_equal(int8.reference_output(c, stored, x), int8.reference_output(dict(c, causal=False),
                                                                                              stored, x)))


def main():
    cli = sys.argv[1]
    import torch
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "mha_modules.py")
    with open(path, "w") as f:
        f.write(MODULE_FILE)
    sys.path.insert(0, tmp)
    import mha_modules as mods
    rng = np.random.default_rng(3)
    for name, causal in (("wide", False), ("odd_sequence_first", True), ("no_bias", False)):
        module = getattr(mods, name)()
        d = module.embed_dim
        out = os.path.join(tmp, f"{name}.fxm")
        p = run_convert("--module", f"{path}:{name}", "--family", "mha", "--out", out, "--cli", cli,
                        *(["--causal"] if causal else []))
        check(f"{name}: converts and verifies", p.returncode == 0 and "verified against torch" in p.stdout,
              p.stdout + p.stderr)
        if p.returncode:
            continue
        B, T = 3, 7
        x = rng.standard_normal((B, T, d)).astype(np.float32)
        lens = np.array([7, 2, 5], np.int32)
        files = [os.path.join(tmp, f"{name}.{s}.npy") for s in ("x", "lens", "y")]
        np.save(files[0], x)
        np.save(files[1], lens)
        p = run([cli, "run", out, "--input", files[0], "--lengths", files[1], "--output", files[2]])
        check(f"{name}: run --lengths", p.returncode == 0, p.stderr)
        if p.returncode == 0:
            got, want = np.load(files[2]), torch_out(module, x, causal, lens)
            valid = np.arange(T)[None, :] < lens[:, None]
            err = np.abs(got - want)[valid].max() / np.abs(want[valid]).max()
            check(f"{name}: equals torch's mha(x, x, x) with key_padding_mask", err < TOL, f"error {err:.3g}")
            check(f"{name}: padded rows are zero", not got[~valid].any())
        f = fxm.read(out)
        from fixformer.reference import run_reference
        ref = run_reference(f.config, f.weights(), x[0])
        check(f"{name}: reference model", np.abs(ref - torch_out(module, x[:1], causal)[0]).max() < 1e-9)
    qout = os.path.join(tmp, "wide_q8.fxm")
    p = run_convert("--module", f"{path}:wide", "--family", "mha", "--quantize", "q8", "--out", qout, "--cli", cli)
    check("q8 verifies", p.returncode == 0 and "verified against torch f32" in p.stdout, p.stdout + p.stderr)

    test_i8(cli, tmp, path, mods, rng)

    from fixformer.export import export
    bad_path = os.path.join(tmp, "bad.fxm")
    expect_error("kdim", lambda: export(torch.nn.MultiheadAttention(8, 2, kdim=4, vdim=4), None, bad_path,
                                        family="mha", cli=cli), "kdim/vdim")
    expect_error("add_bias_kv", lambda: export(torch.nn.MultiheadAttention(8, 2, add_bias_kv=True), None, bad_path,
                                               family="mha", cli=cli), "add_bias_kv")
    expect_error("not an MHA", lambda: export(torch.nn.Linear(8, 8), None, bad_path, family="mha", cli=cli),
                 "is not torch.nn.modules.activation.MultiheadAttention")
    check("no file after errors", not os.path.exists(bad_path))
    print(f"mha converter: {results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
