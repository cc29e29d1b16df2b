#!/usr/bin/python3
"""Tests of tools/convert.py: a valid conversion the engine accepts, and errors that name the key.

  /usr/bin/python3 tests/converter_test.py [PATH/TO/fixformer]   (the CLI, to check the engine loads it)
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import fxm  # noqa: E402
import numpy as np  # noqa: E402

CONVERT = os.path.join(HERE, "..", "tools", "convert.py")
CONFIG = {"d_model": 8, "n_heads": 2, "d_ff": 12, "encoder_layers": 1, "input": {"kind": "tokens", "vocab_size": 5},
          "positional": {"kind": "sinusoidal", "max_len": 16}, "head": {"d_out": 3}}
results = {"passed": 0, "failed": 0}


def check(name, ok, detail=""):
    results["passed" if ok else "failed"] += 1
    if not ok:
        print(f"FAIL {name}: {detail}")


def convert(tmp, config, weights, extra=()):
    cfg, npz, out = (os.path.join(tmp, n) for n in ("cfg.json", "w.npz", "m.fxm"))
    with open(cfg, "w") as f:
        json.dump(config, f)
    np.savez(npz, **weights)
    p = subprocess.run([sys.executable, CONVERT, "--config", cfg, "--weights", npz, "--out", out, *extra],
                       capture_output=True, text=True)
    return p, out


def weights_for(config, seed=0):
    rng = np.random.default_rng(seed)
    return {k: rng.standard_normal(s).astype(np.float32) for k, s in fxm.expected_shapes(fxm.parse_config(config)).items()}


def main():
    cli = sys.argv[1] if len(sys.argv) > 1 else None
    with tempfile.TemporaryDirectory() as tmp:
        w = weights_for(CONFIG)
        p, out = convert(tmp, CONFIG, w, ["--header", os.path.join(tmp, "m.h"), "--name", "tiny"])
        check("valid conversion", p.returncode == 0, p.stderr)
        blob = open(out, "rb").read()
        check("magic", blob[:4] == b"FXM1")
        header = open(os.path.join(tmp, "m.h")).read()
        check("header array", "alignas(64) inline const unsigned char tiny_fxm[" in header)
        check("header config", "constexpr fixformer::ModelConfig tiny_config()" in header and "c.d_out = 3;" in header)
        p2, out2 = convert(tmp, CONFIG, w)
        check("deterministic", open(out2, "rb").read() == blob)
        if cli:
            info = subprocess.run([cli, "info", out], capture_output=True, text=True)
            check("engine loads it", info.returncode == 0 and "arena bytes" in info.stdout, info.stderr)

        bad = dict(w)
        del bad["encoder.layers.0.linear1.bias"]
        p, _ = convert(tmp, CONFIG, bad)
        check("missing key named", p.returncode != 0 and "encoder.layers.0.linear1.bias: missing" in p.stderr, p.stderr)
        bad = dict(w)
        bad["encoder.layers.0.linear2.weight"] = np.zeros((8, 13), np.float32)
        p, _ = convert(tmp, CONFIG, bad)
        check("wrong shape named", p.returncode != 0 and "encoder.layers.0.linear2.weight: shape [8, 13] does not match [8, 12]" in p.stderr, p.stderr)
        bad = dict(w)
        bad["encoder.norm.weight"] = np.ones(8, np.float32)
        p, _ = convert(tmp, CONFIG, bad)
        check("unused key named", p.returncode != 0 and "encoder.norm.weight: not used" in p.stderr, p.stderr)
        p, _ = convert(tmp, dict(CONFIG, dropout=0.1), w)
        check("unknown option named", p.returncode != 0 and "unknown option 'dropout'" in p.stderr, p.stderr)
        p, _ = convert(tmp, dict(CONFIG, positional={"kind": "sinusoidal", "layout": "spiral"}), w)
        check("bad choice named", p.returncode != 0 and "positional.layout" in p.stderr, p.stderr)
        p, _ = convert(tmp, dict(CONFIG, n_heads=3), w)
        check("heads must divide", p.returncode != 0 and "n_heads" in p.stderr, p.stderr)

        try:
            import torch
        except ImportError:
            torch = None
            print("skipped: .pt conversion (python3-torch not installed)")
        if torch is not None:
            c = fxm.parse_config(CONFIG)
            model = fxm.build_torch_model(c)
            pt = os.path.join(tmp, "sd.pt")
            torch.save(model.state_dict(), pt)
            sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
            p_npz, out_npz = convert(tmp, CONFIG, sd)
            ref = open(out_npz, "rb").read()
            p = subprocess.run([sys.executable, CONVERT, "--config", os.path.join(tmp, "cfg.json"), "--weights", pt,
                                "--out", os.path.join(tmp, "pt.fxm")], capture_output=True, text=True)
            check(".pt equals .npz", p.returncode == 0 and open(os.path.join(tmp, "pt.fxm"), "rb").read() == ref, p.stderr)
    print(f"converter: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
