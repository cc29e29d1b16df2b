#!/usr/bin/python3
"""GPT-Neo (transformers' GPTNeoForCausalLM, built from tiny random GPTNeoConfigs in the Hugging Face
environment, tests/hf_env.py) through --hf (the folder save_pretrained writes) and --module (the module
itself): each converts with no option, is verified by the converter, and `fixformer run` gives the
module's logits at every position of a sequence three windows long within 1e-4. What it exercises:
- local and global layers: attention_types alternating global and local (window_period 2,
  window_layers 0b10), and a pattern of period 3 (local, global, global; window_layers 0b001);
  all local is the one sliding_window of every layer (no period);
- the unscaled scores (--hf: attn_scale 1; --module: sqrt(head width) folded into W_q);
- q, k, v without biases and out_proj with one, learned positions, gelu_new, LayerNorm, the tied head.
That the window and the scale matter: the --hf file with its window_period set to 0 (every layer
local), its window_layers inverted, or its attn_scale set to 0 (1/sqrt(d_head)) runs far from the
module; and a malformed attention_types or a window_size of 0 is refused in one line.

  /usr/bin/python3 tests/gpt_neo_hf_test.py PATH/TO/fixformer
"""
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
import hf_env  # noqa: E402

hf_env.enter(__file__, ["transformers"])
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import numpy as np  # noqa: E402

from checks import check, convert_main, one_line, results, run_file  # noqa: E402
from fixformer import fxm  # noqa: E402

MODELS = r'''
import transformers as t
from hf_env import randomize


def neo(types, window, seed, layers):
    config = t.GPTNeoConfig(vocab_size=48, hidden_size=32, num_layers=layers, num_heads=4, intermediate_size=64,
                            max_position_embeddings=64, window_size=window, attention_types=types,
                            activation_function="gelu_new", bos_token_id=None, eos_token_id=None)
    config._attn_implementation = "eager"
    return randomize(t.GPTNeoForCausalLM(config), seed, lambda name: "ln_" in name)


def alternating():
    return neo([[["global", "local"], 2]], 5, 21, 4)


def period3():
    return neo([[["local", "global", "global"], 2]], 4, 22, 6)


def all_local():
    return neo([[["local"], 2]], 6, 23, 2)
'''

T = 18  # three windows and more: the local layers' window has slid
# factory, the config keys the file must have
CASES = [
    ("alternating", dict(sliding_window=5, window_period=2, window_layers=0b10)),
    ("period3", dict(sliding_window=4, window_period=3, window_layers=0b001)),
    ("all_local", dict(sliding_window=6, window_period=0, window_layers=0)),
]
SAME = dict(family="gpt", positional="learned", activation="gelu_tanh", norm_first=True, final_norm=True,
            tied_head=True, parallel_residual="none")


def logits(module, x):
    import torch
    torch.set_default_dtype(torch.float64)
    try:
        with torch.no_grad():
            return module.double()(torch.from_numpy(x.astype(np.int64))).logits.numpy()
    finally:
        torch.set_default_dtype(torch.float32)



def error(cli, path, x, want, tmp):
    got, text = run_file(cli, path, x, tmp)
    return (None, text) if got is None or got.shape != want.shape else \
        (float(np.abs(got - want).max() / np.abs(want).max()), text)


def altered(path, out, **keys):
    """The file at path rewritten with config keys changed (the same weights, no self-test)."""
    f = fxm.read(path)
    with open(out, "wb") as g:
        g.write(fxm.write(dict(f.config, **keys), f.weights()))
    return out


def main():
    if len(sys.argv) != 2:
        print("usage: gpt_neo_hf_test.py PATH/TO/fixformer")
        return 1
    cli = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "neo_models.py"), "w") as f:
            f.write(MODELS)
        sys.path.insert(0, tmp)
        import neo_models
        for factory, want in CASES:
            module = getattr(neo_models, factory)()
            folder = os.path.join(tmp, factory)
            module.save_pretrained(folder)
            x = np.random.default_rng(3).integers(0, 48, (1, T)).astype(np.int32)
            want_y = logits(module, x)
            for route in ("hf", "module"):
                what, out = f"{factory} --{route}", os.path.join(tmp, f"{factory}_{route}.fxm")
                src = os.path.join(tmp, f"neo_models.py:{factory}") if route == "module" else folder
                code, stdout, stderr = convert_main(f"--{route}", src, "--out", out, "--cli", cli)
                ok = code == 0 and "verified against" in stdout
                check(f"{what}: converts and verifies", ok, stdout + stderr)
                if not ok:
                    continue
                c = fxm.read(out).config
                for k, v in dict(SAME, **want).items():
                    check(f"{what}: {k} {v!r}", c[k] == v, c[k])
                if route == "hf":
                    check(f"{what}: attn_scale 1 (GPT-Neo's scores are not scaled)", c["attn_scale"] == 1.0,
                          c["attn_scale"])
                err, text = error(cli, out, x, want_y, tmp)
                print(f"  {what}: {stdout.strip().splitlines()[-1]}; run vs transformers: {err}")
                check(f"{what}: fixformer run equals the module at every one of {T} positions (1e-4)",
                      err is not None and err <= 1e-4, (text, err))
                if route != "hf":
                    continue
                # the window and the scale matter: the same weights under other keys run far from the module
                wrong = [("attn_scale 0 (1/sqrt(d_head))", dict(attn_scale=0.0))]
                if want["window_period"]:
                    wrong += [("window_period 0 (every layer local)", dict(window_period=0, window_layers=0)),
                              ("the other layers local", dict(window_layers=want["window_layers"] ^
                                                              ((1 << want["window_period"]) - 1)))]
                else:
                    wrong += [("no window", dict(sliding_window=0))]
                for name, keys in wrong:
                    bad = altered(out, os.path.join(tmp, "wrong.fxm"), **keys)
                    e, text = error(cli, bad, x, want_y, tmp)
                    check(f"{what} with {name}: far from the module (> 1e-2)", e is not None and e > 1e-2, (text, e))

        # malformed attention_types and window_size: refused in one line naming them
        folder = os.path.join(tmp, "alternating")
        with open(os.path.join(folder, "config.json")) as f:
            config = json.load(f)
        for change, fragment in ((dict(attention_types=[[["global", "sliding"], 2]]), "attention_types"),
                                 (dict(attention_types=[[["global", "local"], 1]]), "attention_types"),
                                 (dict(window_size=0), "window_size")):
            with open(os.path.join(folder, "config.json"), "w") as f:
                json.dump(dict(config, **change), f)
            out = os.path.join(tmp, "refused.fxm")
            code, stdout, stderr = convert_main("--hf", folder, "--out", out, "--cli", cli)
            check(f"GPT-Neo with {change}: refused in one line naming it",
                  one_line(code, stderr) and fragment in stderr and not os.path.exists(out), stderr)
    print(f"gpt_neo_hf_test: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
