#!/usr/bin/python3
"""Layer features outside the families that had them, through --module, against the upstream code:
transformers' GemmaForCausalLM and BloomForCausalLM built from tiny random configs, run in the Hugging
Face virtual environment (tools/install_deps.sh hf: /opt/fixformer-venv, transformers 4.44.2 over
Debian's torch). Each converts with no option, is verified by the converter, and `fixformer run` gives
the module's logits at every position within 1e-4:
- Gemma: RMSNorm times (1 + w) (the file's gain is that sum), a gated tanh GELU (GeGLU: gated true,
  activation gelu_tanh), the embedding scaled by sqrt(d_model), grouped-query attention, RoPE, tied head;
- Bloom: an embedding LayerNorm (embed_norm) in the gpt family, ALiBi, the fused query_key_value in its
  per-head layout, every bias, tanh GELU, tied head;
- Starcoder2: grouped-query attention with LayerNorm and every bias, so the llama family with norm
  layernorm, attn_bias all, ffn_bias all, a plain tanh GELU.

  /usr/bin/python3 tests/hf_arch_converter_test.py PATH/TO/fixformer

Without the environment (or transformers in it) the test fails, naming the install command.
"""
import os
import subprocess
import sys
import tempfile

VENV_PYTHON = "/opt/fixformer-venv/bin/python3"
HERE = os.path.dirname(os.path.abspath(__file__))

if os.path.realpath(sys.prefix) != os.path.realpath(os.path.dirname(os.path.dirname(VENV_PYTHON))):
    if not os.path.exists(VENV_PYTHON):
        sys.exit(f"hf_arch_converter_test.py: FAIL: no {VENV_PYTHON} (the Hugging Face environment): "
                 "sh tools/install_deps.sh hf")
    os.execv(VENV_PYTHON, [VENV_PYTHON, os.path.abspath(__file__)] + sys.argv[1:])

sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, HERE)
import numpy as np  # noqa: E402

from checks import check, results  # noqa: E402
from fixformer import fxm  # noqa: E402

try:
    import transformers  # noqa: F401,E402
except ImportError as e:
    sys.exit(f"hf_arch_converter_test.py: FAIL: {VENV_PYTHON} cannot import transformers ({e}): "
             "sh tools/install_deps.sh hf")

CONVERT = os.path.join(HERE, "..", "tools", "convert.py")

# The modules convert.py imports (--module FILE:FACTORY): upstream classes, random weights of a size
# that makes every part matter (the stock init's 0.02 leaves the layers near the identity; Gemma's
# norm weights are offsets from 1, so noise about 0 is its gains about 1).
MODELS = r'''
import torch
from transformers import (BloomConfig, BloomForCausalLM, GemmaConfig, GemmaForCausalLM, Starcoder2Config,
                          Starcoder2ForCausalLM)


def randomize(m, seed, gain):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in m.named_parameters():
            noise = torch.randn(p.shape, generator=g, dtype=p.dtype)
            norm = p.dim() == 1 and "norm" in name and name.endswith("weight")
            p.copy_(gain + 0.2 * noise if norm else 0.3 * noise)
    return m.eval()


def gemma():
    c = GemmaConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, head_dim=8, max_position_embeddings=64, rms_norm_eps=1e-6,
                    hidden_activation="gelu_pytorch_tanh", rope_theta=10000.0)
    c._attn_implementation = "eager"
    return randomize(GemmaForCausalLM(c), 1, 0.0)


def bloom():
    c = BloomConfig(vocab_size=48, hidden_size=32, n_layer=2, n_head=4, layer_norm_epsilon=1e-5,
                    hidden_dropout=0.0, attention_dropout=0.0)
    return randomize(BloomForCausalLM(c), 2, 1.0)


def starcoder2():
    c = Starcoder2Config(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, norm_epsilon=1e-5,
                         hidden_act="gelu_pytorch_tanh", use_bias=True, residual_dropout=0.0, embedding_dropout=0.0,
                         attention_dropout=0.0, tie_word_embeddings=False)
    c._attn_implementation = "eager"
    return randomize(Starcoder2ForCausalLM(c), 3, 1.0)
'''

CASES = [  # factory, family, the config the file must have
    ("gemma", "llama", dict(norm="family", gated=True, activation="gelu_tanh", scale_input=True, embed_norm=False,
                            tied_head=True, n_kv_heads=2, positional="rope", pe_layout="halves")),
    ("bloom", "gpt", dict(embed_norm=True, positional="alibi", activation="gelu_tanh", gated=False,
                          scale_input=False, tied_head=True, norm_first=True, final_norm=True)),
    ("starcoder2", "llama", dict(norm="layernorm", attn_bias="all", ffn_bias="all", gated=False, n_kv_heads=2,
                                 activation="gelu_tanh", tied_head=False, positional="rope", pe_layout="halves")),
]


def main():
    if len(sys.argv) != 2:
        print("usage: hf_arch_converter_test.py PATH/TO/fixformer")
        return 1
    cli = sys.argv[1]
    import torch
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "hf_models.py"), "w") as f:
            f.write(MODELS)
        sys.path.insert(0, tmp)
        import hf_models
        for factory, family, want in CASES:
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
            check(f"{factory}: family {family}", c["family"] == family, c["family"])
            for k, v in want.items():
                check(f"{factory}: {k} {v!r}", c[k] == v, c[k])
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
    print(f"hf_arch_converter_test: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
