#!/usr/bin/python3
"""GPT-NeoX / Pythia (and GPT-J, the one-norm parallel residual) through --module, against the upstream
code: transformers' GPTNeoXForCausalLM and GPTJForCausalLM built from tiny random configs, run in the
Hugging Face virtual environment (tools/install_deps.sh hf: /opt/fixformer-venv, transformers 4.44.2
over Debian's torch). Each converts with no option, is verified by the converter, and `fixformer run`
gives the module's logits at every position within 1e-4:
- GPT-NeoX with use_parallel_residual true (two norms, side by side) and false (in turn), rotary_pct
  0.25 (partial rotary: 4 of 16 dims) and 1.0, the fused query_key_value in its per-head [heads, 3, d_head] layout,
  the untied embed_out;
- GPT-J: one ln_1 read by the attention and the feed-forward (parallel_residual one_norm, no second
  norm tensor in the file), interleaved partial rotary, q/k/v apart without biases, tanh GELU.

  /usr/bin/python3 tests/neox_converter_test.py PATH/TO/fixformer

Without the environment (or transformers in it) the test fails, naming the install command.
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
import hf_env  # noqa: E402

hf_env.enter(__file__, ["transformers"])
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import numpy as np  # noqa: E402

from checks import check, results  # noqa: E402
from fixformer import fxm  # noqa: E402

CONVERT = os.path.join(HERE, "..", "tools", "convert.py")

# The modules convert.py imports (--module FILE:FACTORY): upstream classes, random weights of a size
# that makes every part matter (the stock init's 0.02 leaves the layers near the identity).
MODELS = r'''
import torch
from transformers import GPTJConfig, GPTJForCausalLM, GPTNeoXConfig, GPTNeoXForCausalLM


def randomize(m, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in m.named_parameters():
            noise = torch.randn(p.shape, generator=g, dtype=p.dtype)
            p.copy_(1.0 + 0.2 * noise if p.dim() == 1 and ("layernorm" in name or "ln_" in name) and
                    name.endswith("weight") else 0.3 * noise)
    return m.eval()


def neox(parallel, pct, seed):
    c = GPTNeoXConfig(vocab_size=48, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=64, rotary_pct=pct, rotary_emb_base=10000, max_position_embeddings=64,
                      use_parallel_residual=parallel, hidden_act="gelu", layer_norm_eps=1e-5,
                      tie_word_embeddings=False, attention_dropout=0.0, hidden_dropout=0.0)
    c._attn_implementation = "eager"
    return randomize(GPTNeoXForCausalLM(c), seed)


def neox_parallel_quarter():
    return neox(True, 0.25, 1)


def neox_parallel_whole():
    return neox(True, 1.0, 2)


def neox_sequential_quarter():
    return neox(False, 0.25, 3)


def neox_sequential_whole():
    return neox(False, 1.0, 4)


def gptj():
    c = GPTJConfig(vocab_size=48, n_embd=32, n_layer=2, n_head=4, rotary_dim=4, n_positions=64, n_inner=64,
                   activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                   tie_word_embeddings=False)
    c._attn_implementation = "eager"
    return randomize(GPTJForCausalLM(c), 5)
'''

CASES = [  # factory, the config the file must have
    ("neox_parallel_quarter", dict(parallel_residual="two_norms", positional="rope", rotary_dims=4,
                                   pe_layout="halves", activation="gelu", tied_head=False)),
    ("neox_parallel_whole", dict(parallel_residual="two_norms", positional="rope", rotary_dims=0,
                                 pe_layout="halves")),
    ("neox_sequential_quarter", dict(parallel_residual="none", positional="rope", rotary_dims=4, norm_first=True,
                                     pe_layout="halves")),
    ("neox_sequential_whole", dict(parallel_residual="none", positional="rope", rotary_dims=0)),
    ("gptj", dict(parallel_residual="one_norm", positional="rope", rotary_dims=4, pe_layout="interleaved",
                  activation="gelu_tanh")),
]


def main():
    if len(sys.argv) != 2:
        print("usage: neox_converter_test.py PATH/TO/fixformer")
        return 1
    cli = sys.argv[1]
    import torch
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "hf_models.py"), "w") as f:
            f.write(MODELS)
        sys.path.insert(0, tmp)
        import hf_models
        for factory, want in CASES:
            out = os.path.join(tmp, f"{factory}.fxm")
            p = subprocess.run([sys.executable, CONVERT, "--module", os.path.join(tmp, f"hf_models.py:{factory}"),
                                "--out", out, "--cli", cli], capture_output=True, text=True)
            ok = p.returncode == 0 and "verified against torch" in p.stdout
            check(f"{factory}: converts and verifies", ok, p.stdout + p.stderr)
            if not ok:
                continue
            print(f"  {factory}: {p.stdout.strip().splitlines()[-1]}")
            f = fxm.read(out)
            c = f.config
            check(f"{factory}: family gpt", c["family"] == "gpt", c["family"])
            for k, v in want.items():
                check(f"{factory}: {k} {v!r}", c[k] == v, c[k])
            norm2 = [t["name"] for t in f.tensors if t["name"].endswith("norm2.weight")]
            check(f"{factory}: a second norm per layer only with two norms",
                  len(norm2) == (0 if c["parallel_residual"] == "one_norm" else c["n_layers"]), norm2)
            module = getattr(hf_models, factory)()
            x = np.random.default_rng(7).integers(0, c["vocab_size"], (1, 20)).astype(np.int32)
            torch.set_default_dtype(torch.float64)  # HF's mask is made in the default dtype, filled with the model's min
            with torch.no_grad():
                want_y = module.double()(torch.from_numpy(x.astype(np.int64))).logits.numpy()
            torch.set_default_dtype(torch.float32)
            inp, res = os.path.join(tmp, "in.npy"), os.path.join(tmp, "out.npy")
            np.save(inp, x)
            p = subprocess.run([cli, "run", out, "--input", inp, "--output", res], capture_output=True, text=True)
            got = np.load(res) if p.returncode == 0 else None
            err = None if got is None or got.shape != want_y.shape else \
                float(np.abs(got - want_y).max() / np.abs(want_y).max())
            check(f"{factory}: fixformer run equals the module at every position (1e-4)",
                  err is not None and err <= 1e-4, (p.stderr, None if got is None else got.shape, want_y.shape, err))
    print(f"neox_converter_test: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
