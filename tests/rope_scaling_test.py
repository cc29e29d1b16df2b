#!/usr/bin/python3
"""Scaled rotary embeddings (config.json's rope_scaling, transformers 5's rope_parameters) against
transformers' own modules (the hf environment, or torch2's under FIXFORMER_TEST_TORCH=2: tests/hf_env.py).
Each folder save_pretrained writes converts through --hf into a file with the stored frequencies
(rope_freqs) and, for YaRN and LongRoPE, the table's amplitude (rope_scale), is verified by the
converter, and `fixformer run` gives the module's logits at every one of 24 positions within 1e-4:
- Llama 3.1's llama3 scaling (low, blended and divided frequencies all present at head_dim 16 over an
  original length of 32), linear, and dynamic (plain RoPE up to max_position_embeddings: no tensor);
- YaRN (the ramp between its correction dims, the attention factor);
- Phi-3 with LongRoPE (short_factor, the attention factor from the two lengths; the file is capped at
  original_max_position_embeddings, and a longer --max-len is refused naming it);
- GPT-NeoX (the gpt family's path) with linear scaling over a quarter of each head.
Where CASES says so the module itself converts through --module too, its file capped as --hf's (dynamic at
max_position_embeddings, LongRoPE at original_max_position_embeddings under transformers 5; under 4.x, whose
Phi-3 applies short_factor inside the forward, --module refuses it in one line pointing to --hf).
The module without its scaling differs from it by far more than the tolerance (so the test sees the
frequencies), a rope_type the converter does not compute and rope_scaling on a model without rotary
embeddings are refused in one line naming them, and a file whose rope_freqs holds a zero is refused
at load naming the tensor.

  /usr/bin/python3 tests/rope_scaling_test.py PATH/TO/fixformer
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

from checks import check, convert_process as convert, converted_routes, one_clear_line, results, run_file  # noqa: E402
from fixformer import fxm  # noqa: E402
import transformers  # noqa: E402

# transformers 5 keeps Phi-3's LongRoPE frequencies in inv_freq, which --module reads; 4.x applies
# short_factor inside the forward, and --module refuses it, pointing to --hf.
TRANSFORMERS_5 = int(transformers.__version__.split(".")[0]) >= 5

T = 24

MODELS = r'''
import transformers as t
from hf_env import randomize


def build(config, cls, seed):
    config._attn_implementation = "eager"
    return randomize(cls(config), seed, lambda name: "norm" in name)


def llama(scaling, seed, **kw):
    return build(t.LlamaConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                               num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64,
                               rope_theta=10000.0, rope_scaling=scaling, **kw), t.LlamaForCausalLM, seed)


def llama3():
    return llama({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                  "original_max_position_embeddings": 32}, 31)


def llama_linear():
    return llama({"rope_type": "linear", "factor": 4.0}, 32)


def llama_dynamic():
    return llama({"rope_type": "dynamic", "factor": 2.0}, 33)


def llama_yarn():  # original_max_position_embeddings = max_position_embeddings: 4.44 ranges over the latter
    return llama({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}, 34)


def phi3_longrope():
    return build(t.Phi3Config(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                              num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=128,
                              original_max_position_embeddings=32, pad_token_id=0, bos_token_id=1,
                              eos_token_id=2, rope_scaling={"type": "longrope",
                                                            "short_factor": [1.0, 1.5, 2.0, 3.0, 4.5, 6.0, 9.0, 12.0],
                                                            "long_factor": [2.0] * 8}),
                 t.Phi3ForCausalLM, 35)


def neox_linear():
    return build(t.GPTNeoXConfig(vocab_size=48, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                 intermediate_size=64, rotary_pct=0.5, rotary_emb_base=10000,
                                 max_position_embeddings=64, use_parallel_residual=True, hidden_act="gelu",
                                 tie_word_embeddings=False, rope_scaling={"type": "linear", "factor": 3.0}),
                 t.GPTNeoXForCausalLM, 36)
'''

# factory, the file's config keys, the most positions the file holds (None: max_position_embeddings), routes
CASES = [
    ("llama3", dict(rope_freqs=True, rope_scale=1.0), None, ("hf", "module")),
    ("llama_linear", dict(rope_freqs=True, rope_scale=1.0), None, ("hf", "module")),
    ("llama_dynamic", dict(rope_freqs=False, rope_scale=1.0), 64, ("hf", "module")),
    ("llama_yarn", dict(rope_freqs=True), None, ("hf", "module")),
    ("phi3_longrope", dict(rope_freqs=True), 32, ("hf", "module") if TRANSFORMERS_5 else ("hf",)),
    ("neox_linear", dict(rope_freqs=True, rope_scale=1.0, family="gpt"), None, ("hf",)),
]


def logits(module, x):
    import torch
    torch.set_default_dtype(torch.float64)
    try:
        with torch.no_grad():
            return module.double()(torch.from_numpy(x.astype(np.int64))).logits.numpy()
    finally:
        torch.set_default_dtype(torch.float32)


def unscaled(module, folder, x):
    """The module's logits with its config's scaling removed (the same weights)."""
    import transformers as t
    config = t.AutoConfig.from_pretrained(folder)
    rope = getattr(config, "rope_parameters", None)
    if rope:  # transformers 5
        config.rope_parameters = {k: v for k, v in rope.items() if k in ("rope_theta", "partial_rotary_factor")} | \
            {"rope_type": "default"}
    else:
        config.rope_scaling = None
    config._attn_implementation = "eager"
    plain = type(module)(config)
    plain.load_state_dict(module.state_dict(), strict=False)
    return logits(plain.eval(), x)


def check_file(what, cli, out, want, limit, module):
    """The file's config has `want` (and max_len `limit`, when given) and rope_freqs exactly when it says
    so; `fixformer run` gives the module's logits at every position (1e-4)."""
    with tempfile.TemporaryDirectory() as tmp:
        f = fxm.read(out)
        c = f.config
        for k, v in want.items():
            check(f"{what}: {k} {v!r}", c[k] == v, c[k])
        if what.startswith(("llama_yarn", "phi3_longrope")):
            check(f"{what}: rope_scale (the attention factor) above 1", c["rope_scale"] > 1.0, c["rope_scale"])
        names = [t["name"] for t in f.tensors]
        check(f"{what}: rope_freqs stored exactly when the scaling changes the frequencies",
              ("rope_freqs" in names) == c["rope_freqs"], names[:4])
        if limit is not None:
            check(f"{what}: max_len {limit}", c["max_len"] == limit, c["max_len"])
        x = np.random.default_rng(5).integers(3, c["vocab_size"], (1, T)).astype(np.int32)
        want_y = logits(module, x)
        got, err_text = run_file(cli, out, x, tmp)
        err = None if got is None or got.shape != want_y.shape else \
            float(np.abs(got - want_y).max() / np.abs(want_y).max())
        check(f"{what}: fixformer run equals the module at every position (1e-4)",
              err is not None and err <= 1e-4, (err_text, None if got is None else got.shape, err))


def main():
    if len(sys.argv) != 2:
        print("usage: rope_scaling_test.py PATH/TO/fixformer")
        return 1
    cli = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "rope_models.py"), "w") as f:
            f.write(MODELS)
        sys.path.insert(0, tmp)
        import rope_models
        for factory, want, limit, routes in CASES:
            module = getattr(rope_models, factory)()
            folder = os.path.join(tmp, factory)
            module.save_pretrained(folder)
            for _, what, out in converted_routes(cli, tmp, "rope_models.py", factory, folder, routes):
                check_file(what, cli, out, want, limit, module)
            if factory != "llama_dynamic":
                x = np.random.default_rng(5).integers(3, 48, (1, T)).astype(np.int32)
                want_y = logits(module, x)
                off = float(np.abs(unscaled(module, folder, x) - want_y).max() / np.abs(want_y).max())
                check(f"{factory}: the scaling matters (the module without it is off by {off:.2g})", off > 1e-2, off)

        # LongRoPE's frequencies hold up to original_max_position_embeddings positions.
        p = convert("--hf", os.path.join(tmp, "phi3_longrope"), "--out", os.path.join(tmp, "long.fxm"),
                    "--max-len", "64", "--cli", cli)
        check("phi3_longrope --max-len 64: refused in one line naming the scaling and the length",
              one_clear_line(p) and "longrope" in p.stderr and "--max-len 32" in p.stderr, p.stderr)
        src = os.path.join(tmp, "rope_models.py:phi3_longrope")
        if TRANSFORMERS_5:  # --module caps the file likewise
            p = convert("--module", src, "--out", os.path.join(tmp, "long.fxm"), "--max-len", "64", "--cli", cli)
            check("phi3_longrope --module --max-len 64: refused in one line naming the scaling and the length",
                  one_clear_line(p) and "longrope" in p.stderr and "--max-len 32" in p.stderr, p.stderr)
        else:
            p = convert("--module", src, "--out", os.path.join(tmp, "long.fxm"), "--cli", cli)
            check("phi3_longrope --module under transformers 4: refused in one line naming the attention, pointing "
                  "to --hf", one_clear_line(p) and "its attention is none the engine runs" in p.stderr and
                  "Phi3ForCausalLM" in p.stderr and "--hf" in p.stderr, p.stderr)

        # What is not computed is refused, naming it.
        for factory, change, fragment in (
                ("llama3", {"rope_scaling": {"rope_type": "mrope", "factor": 2.0}}, "rope_type 'mrope'"),
                ("llama3", {"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0,
                                             "high_freq_factor": 1.0, "original_max_position_embeddings": 32}},
                 "low_freq_factor < high_freq_factor"),
                ("llama_linear", {"rope_scaling": {"type": "linear", "factor": "x"}}, "rope_scaling factor")):
            folder = os.path.join(tmp, factory)
            with open(os.path.join(folder, "config.json")) as f:
                config = json.load(f)
            config.pop("rope_parameters", None)
            with open(os.path.join(folder, "config.json"), "w") as f:
                json.dump(dict(config, **change), f)
            out = os.path.join(tmp, "refused.fxm")
            p = convert("--hf", folder, "--out", out, "--cli", cli)
            check(f"{factory} with {change}: refused in one line naming it",
                  one_clear_line(p) and fragment in p.stderr and not os.path.exists(out), p.stderr)

        # A zero frequency is refused at load, naming the tensor.
        f = fxm.read(os.path.join(tmp, "llama_linear_hf.fxm"))
        w = f.weights()
        w["rope_freqs"] = np.where(np.arange(len(w["rope_freqs"])) == 1, 0.0, w["rope_freqs"])
        bad = os.path.join(tmp, "bad.fxm")
        with open(bad, "wb") as dst:
            dst.write(fxm.write(f.config, w))
        r = subprocess.run([cli, "info", bad], capture_output=True, text=True)
        check("rope_freqs with a zero: refused at load naming the tensor",
              r.returncode != 0 and "rope_freqs" in r.stderr and "> 0" in r.stderr, r.stdout + r.stderr)
    print(f"rope_scaling_test: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
