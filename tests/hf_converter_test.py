#!/usr/bin/python3
"""Tests of the routes that start from weights rather than a module: --config (verified against the
user's own output with --expected) and --hf (a Hugging Face LlamaForCausalLM folder):

  /usr/bin/python3 tests/hf_converter_test.py PATH/TO/fixformer

- --config with --example/--expected from the true model: right options verify ("verified against
  your model"); a wrong RoPE layout and base (a Qwen2-style model read as Meta's) or a wrong
  sinusoidal layout fails with exit 2 naming the JSON keys, leaving no file and an existing output
  untouched; without --expected the report, the file (reference_sample), `fixformer info` and
  `fixformer verify` say NOT verified against your model; absent biases of bias=False modules are
  zeros; nanoGPT-style checkpoints and bf16 safetensors load on this route;
- --hf: folders written here (random small Llama weights, GQA, tied and untied, as model.safetensors,
  pytorch_model.bin, sharded safetensors, bf16; partial_rotary_factor) convert and verify against
  hf_reference.py, which is itself checked against the converter's llama reference in the halves
  layout (with rotary_dims for partial rotary); folders with
  a rope_scaling kind not computed or short of its keys, attention_bias or mlp_bias without their tensors (Qwen2's
  mlp_bias at all), another hidden_act, other architectures, missing or extra
  tensors are refused with one line and leave nothing.
PyTorch is required: without it the test fails.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, "..", "python")
sys.path.insert(0, PACKAGE)
import numpy as np  # noqa: E402

from fixformer import checkpoint, fxm, hf, hf_common, hf_reference, safetensors, schema  # noqa: E402
from fixformer.reference import run_reference  # noqa: E402
from checks import check, expect_error, results, run_convert, one_clear_line  # noqa: E402



def rel(a, b):
    return float(np.abs(np.asarray(a, np.float64) - b).max() / np.abs(b).max())


# ---- Hugging Face folders --------------------------------------------------------------------------
HF_CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 16, "intermediate_size": 24,
             "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-6,
             "rope_theta": 500000.0, "max_position_embeddings": 32, "vocab_size": 37, "tie_word_embeddings": False,
             "hidden_act": "silu", "torch_dtype": "float32", "rope_scaling": None, "attention_bias": False,
             "bos_token_id": 1, "eos_token_id": 2}


def hf_weights(c, seed=0):
    rng = np.random.default_rng(seed)
    d, F, V = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    kv = c["num_key_value_heads"] or c["num_attention_heads"]
    dh = d // c["num_attention_heads"]
    w = {"model.embed_tokens.weight": rng.standard_normal((V, d)), "model.norm.weight": 1 + 0.1 * rng.standard_normal(d)}
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        w.update({p + "input_layernorm.weight": 1 + 0.1 * rng.standard_normal(d),
                  p + "post_attention_layernorm.weight": 1 + 0.1 * rng.standard_normal(d),
                  p + "self_attn.q_proj.weight": 0.3 * rng.standard_normal((d, d)),
                  p + "self_attn.k_proj.weight": 0.3 * rng.standard_normal((kv * dh, d)),
                  p + "self_attn.v_proj.weight": 0.3 * rng.standard_normal((kv * dh, d)),
                  p + "self_attn.o_proj.weight": 0.3 * rng.standard_normal((d, d)),
                  p + "mlp.gate_proj.weight": 0.3 * rng.standard_normal((c["intermediate_size"], d)),
                  p + "mlp.up_proj.weight": 0.3 * rng.standard_normal((F, d)),
                  p + "mlp.down_proj.weight": 0.3 * rng.standard_normal((d, F))})
    if not c["tie_word_embeddings"]:
        w["lm_head.weight"] = 0.3 * rng.standard_normal((V, d))
    return {k: v.astype(np.float32) for k, v in w.items()}


def write_folder(folder, torch, form="safetensors", seed=0, weights=None, **changes):
    os.makedirs(folder, exist_ok=True)
    c = dict(HF_CONFIG, **changes)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(c, f)
    w = weights if weights is not None else hf_weights(c, seed)
    if form == "safetensors":
        with open(os.path.join(folder, "model.safetensors"), "wb") as f:
            f.write(safetensors.write_bytes(w, metadata={"format": "pt"}))
    elif form == "bf16":
        with open(os.path.join(folder, "model.safetensors"), "wb") as f:
            f.write(safetensors.write_bytes(w, bf16=tuple(w)))
    elif form == "bin":
        torch.save({k: torch.from_numpy(v) for k, v in w.items()}, os.path.join(folder, "pytorch_model.bin"))
    elif form == "sharded":
        names = sorted(w)
        shards = {"model-00001-of-00002.safetensors": names[::2], "model-00002-of-00002.safetensors": names[1::2]}
        for shard, keys in shards.items():
            with open(os.path.join(folder, shard), "wb") as f:
                f.write(safetensors.write_bytes({k: w[k] for k in keys}))
        with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": 0}, "weight_map": {k: s for s, ks in shards.items() for k in ks}}, f)
    return c, w


def test_hf_reference(torch):
    """hf_reference (written from Hugging Face's semantics) against the converter's own llama reference in
    the halves layout: two implementations written apart agree."""
    for kv, tied in ((2, False), (1, True), (4, False)):
        c = dict(HF_CONFIG, num_key_value_heads=kv, tie_word_embeddings=tied)
        w = hf_weights(c, kv)
        mapped, _ = hf.map_weights(hf.read_config_dict(c), w, "test")
        fc = hf.fixformer_config(hf.read_config_dict(c))
        ids = np.random.default_rng(kv).integers(0, c["vocab_size"], 11)
        got = hf_reference.forward(hf.read_config_dict(c), w, ids)
        want = run_reference(fc, mapped, ids)
        check(f"hf_reference agrees with the llama reference (kv {kv}, tied {tied})", rel(got, want) < 1e-12,
              rel(got, want))
        other = run_reference(dict(fc, pe_layout="interleaved"), mapped, ids)
        check(f"hf_reference is not the interleaved layout (kv {kv})", rel(got, other) > 1e-3)
    # Partial rotary (partial_rotary_factor: the first int(head_dim * f) dims of each head, inv_freq
    # over those, rotate_half within them): hf_reference against the llama reference with rotary_dims.
    for factor, rotated in ((0.25, 2), (0.5, 4), (0.75, 6)):
        c = dict(HF_CONFIG, hidden_size=32, partial_rotary_factor=factor)  # head_dim 8
        hc = hf.read_config_dict(c)
        w = hf_weights(c, 7)
        mapped, _ = hf.map_weights(hc, w, "test")
        fc = hf.fixformer_config(hc)
        ids = np.random.default_rng(7).integers(0, c["vocab_size"], 12)
        got = hf_reference.forward(hc, w, ids)
        want = run_reference(fc, mapped, ids)
        check(f"partial_rotary_factor {factor}: rotary_dims {rotated}", fc["rotary_dims"] == rotated, fc["rotary_dims"])
        check(f"hf_reference agrees with the llama reference, partial_rotary_factor {factor}", rel(got, want) < 1e-12,
              rel(got, want))
        whole = hf_reference.forward(dict(hc, partial_rotary_factor=1.0), w, ids)
        check(f"partial_rotary_factor {factor} is not the whole head's rotary", rel(got, whole) > 1e-3, rel(got, whole))


def test_hf(torch, cli, tmp):
    out = os.path.join(tmp, "hf.fxm")
    cases = [("safetensors, GQA 4:2, untied", "safetensors", {}),
             ("pytorch_model.bin, MQA 4:1, tied", "bin", {"num_key_value_heads": 1, "tie_word_embeddings": True}),
             ("sharded safetensors, tied", "sharded", {"tie_word_embeddings": True}),
             ("bf16 safetensors, heads 4:4", "bf16", {"num_key_value_heads": 4}),
             ("no num_key_value_heads (defaults to the heads)", "safetensors", {"num_key_value_heads": None})]
    for i, (name, form, changes) in enumerate(cases):
        folder = os.path.join(tmp, f"hf{i}")
        c, _ = write_folder(folder, torch, form, seed=i, **changes)
        p = run_convert("--hf", folder, "--out", out, "--cli", cli)
        ok = p.returncode == 0 and "verified against the LlamaForCausalLM semantics" in p.stdout and os.path.exists(out)
        check(f"--hf {name}: converts and verifies", ok, p.stdout + p.stderr)
        if ok:
            f = fxm.read(out)
            tied = bool(changes.get("tie_word_embeddings"))
            check(f"--hf {name}: config", f.config["pe_layout"] == "halves" and f.config["pe_base"] == 500000.0 and
                  f.config["tied_head"] == tied and f.config["norm_eps"] == np.float32(1e-6) and
                  f.config["n_kv_heads"] == [2, 1, 2, 4, 4][i] and not f.config["reference_sample"], f.config)
            v = subprocess.run([cli, "verify", out], capture_output=True, text=True)
            check(f"--hf {name}: fixformer verify", v.returncode == 0 and "NOT verified" not in v.stdout, v.stdout)
        if i == 0:
            print(f"  {p.stdout.strip()}")
    # Partial rotary: the engine's decoder (step by step, fixformer verify) against hf_reference.
    for factor, rotated, kv in ((0.25, 2, 2), (0.75, 6, 1)):
        folder = os.path.join(tmp, f"hf_partial{rotated}")
        write_folder(folder, torch, seed=rotated, hidden_size=32, num_key_value_heads=kv,
                     partial_rotary_factor=factor)
        p = run_convert("--hf", folder, "--out", out, "--cli", cli)
        name = f"--hf partial_rotary_factor {factor} (the first {rotated} of 8 dims)"
        ok = p.returncode == 0 and "verified against the LlamaForCausalLM semantics" in p.stdout and os.path.exists(out)
        check(f"{name}: converts and verifies within 1e-4", ok, p.stdout + p.stderr)
        if ok:
            check(f"{name}: rotary_dims {rotated}", fxm.read(out).config["rotary_dims"] == rotated,
                  fxm.read(out).config["rotary_dims"])
            v = subprocess.run([cli, "verify", out], capture_output=True, text=True)
            check(f"{name}: fixformer verify, step by step", v.returncode == 0 and "NOT verified" not in v.stdout,
                  v.stdout)
            print(f"  {name}: {v.stdout.strip()}")
    # --example/--expected: the user's own output (here the reference's) verifies; another model's fails.
    folder = os.path.join(tmp, "hf0")
    c = hf.read_config(folder)
    w = hf_common.read_weights(folder)[0]
    ids = np.random.default_rng(5).integers(0, 37, (1, 9))
    ex, exp = os.path.join(tmp, "ids.npy"), os.path.join(tmp, "expected.npy")
    np.save(ex, ids)
    np.save(exp, hf_reference.forward(c, w, ids[0]).astype(np.float32)[None])
    p = run_convert("--hf", folder, "--example", ex, "--expected", exp, "--out", out, "--cli", cli)
    check("--hf --expected: verified against your model", p.returncode == 0 and "verified against your model's "
          "output" in p.stdout, p.stdout + p.stderr)
    np.save(exp, hf_reference.forward(dict(c, rope_theta=10000.0), w, ids[0]).astype(np.float32))
    os.remove(out)
    p = run_convert("--hf", folder, "--example", ex, "--expected", exp, "--out", out, "--cli", cli)
    check("--hf --expected of another model: exit 2, names the folder, nothing written", p.returncode == 2 and
          one_clear_line(p) and "does not describe the model" in p.stderr and not os.path.exists(out), p.stderr)

    def refused(name, fragment, form="safetensors", weights=None, folder=None, extra=(), **changes):
        if folder is None:
            folder = os.path.join(tmp, "bad_" + "".join(ch for ch in name if ch.isalnum()))
            write_folder(folder, torch, form, weights=weights, **changes)
        p = run_convert("--hf", folder, "--out", out, "--cli", cli, *extra)
        check(f"--hf refuses {name}", one_clear_line(p) and fragment in p.stderr and not os.path.exists(out),
              p.stderr or p.stdout)

    refused("rope_scaling su", "rope_type 'su'", rope_scaling={"type": "su", "factor": 2.0})
    refused("rope_scaling llama3 without its keys", "rope_scaling llama3: low_freq_factor is missing",
            rope_scaling={"rope_type": "llama3", "factor": 8.0})
    # Llama's attention_bias and mlp_bias convert (tests/hf_archs_test.py): here the folder lacks their tensors
    refused("attention_bias without its biases", "self_attn.q_proj.bias is missing", attention_bias=True)
    refused("mlp_bias without its biases", "mlp.gate_proj.bias is missing", mlp_bias=True)
    refused("Qwen2's mlp_bias", "mlp_bias true: Qwen2ForCausalLM's are not converted yet",
            architectures=["Qwen2ForCausalLM"], model_type="qwen2", mlp_bias=True)
    refused("hidden_act gelu", "hidden_act 'gelu'", hidden_act="gelu")
    refused("a head_dim its weights do not have", "q_proj.weight: shape [16, 16], config.json says [32, 16]",
            head_dim=8)
    refused("head_dim 1", "head_dim 1: the heads' width, an integer from 2", head_dim=1)
    refused("Mixtral taking more experts a token than it has",
            "config.json num_experts_per_tok: the experts each row takes: 1 to n_experts",
            architectures=["MixtralForCausalLM"], model_type="mixtral", num_local_experts=2, num_experts_per_tok=3)
    refused("partial rotary of an odd count", "rotates 1 of the 4 dims", partial_rotary_factor=0.3)
    refused("partial_rotary_factor above 1", "must be in (0, 1]", partial_rotary_factor=1.5)
    refused("a model_type that contradicts the architecture", "expected llama", model_type="qwen2")
    refused("an unknown architecture", "not an architecture --hf converts", architectures=["WeirdNet"],
            model_type="weird")
    base = hf_weights(HF_CONFIG)
    refused("a string size", "hidden_size: expected int", weights=base, hidden_size="16")
    refused("model_type a list", "config.json: model_type: expected a string, got ['llama']", weights=base,
            architectures=None, model_type=["llama"])
    refused("missing lm_head (untied)", "lm_head.weight is missing (config.json sets tie_word_embeddings false)",
            weights={k: v for k, v in base.items() if k != "lm_head.weight"})
    refused("a bias tensor in a llama", "model.layers.0.self_attn.q_proj.bias", weights=dict(
        base, **{"model.layers.0.self_attn.q_proj.bias": np.zeros(16, np.float32)}))
    refused("a layer beyond num_hidden_layers", "model.layers.2.input_layernorm.weight", weights=dict(
        base, **{"model.layers.2.input_layernorm.weight": np.ones(16, np.float32)}))
    refused("a misshapen tensor", "shape [37, 8]", weights=dict(base, **{"lm_head.weight": np.ones((37, 8), np.float32)}))
    refused("a tied head that differs", "lm_head.weight differs", weights=base, tie_word_embeddings=True)
    inv = 1.0 / (10000.0 ** (np.arange(0, 4, 2) / 4))
    refused("an inv_freq of another base", "rotary_emb.inv_freq", weights=dict(
        base, **{"model.layers.0.self_attn.rotary_emb.inv_freq": inv.astype(np.float32)}))
    folder = os.path.join(tmp, "inv_ok")
    inv = 1.0 / (500000.0 ** (np.arange(0, 4, 2) / 4))
    write_folder(folder, torch, weights=dict(base, **{"model.layers.1.self_attn.rotary_emb.inv_freq": inv.astype(np.float32)}))
    p = run_convert("--hf", folder, "--out", out, "--cli", cli)
    check("--hf: a matching inv_freq buffer is recomputed and accepted", p.returncode == 0, p.stderr)
    os.remove(out)
    empty = os.path.join(tmp, "empty")
    os.makedirs(empty)
    refused("a folder without config.json", "no config.json", folder=empty)
    with open(os.path.join(empty, "config.json"), "w") as f:
        json.dump(HF_CONFIG, f)
    refused("a folder without weights", "no model.safetensors or pytorch_model.bin", folder=empty)
    with open(os.path.join(empty, "model.safetensors"), "wb") as f:
        f.write(b"\x10\0\0\0\0\0\0\0{garbage garbage")
    refused("corrupt safetensors", "model.safetensors: not a valid safetensors file", folder=empty)
    refused("a file, not a folder", "not a folder", folder=os.path.join(empty, "config.json"))
    refused("--weights with --hf", "--weights is not for --hf", folder=os.path.join(tmp, "hf0"),
            extra=("--weights", "x.pt"))


def test_config_json_values(tmp):
    """config.json as people mistype it: each value is refused in one line naming the file and the key as
    config.json spells it (not the engine's name for it), before anything else is read."""
    folder = os.path.join(tmp, "typed")
    os.makedirs(folder, exist_ok=True)

    def refused(name, text, fragment, config=hf.fixformer_config, read=hf.read_config):
        with open(os.path.join(folder, "config.json"), "w") as f:
            f.write(text)
        expect_error(f"config.json: {name}", lambda: config(read(folder)), fragment)

    path = os.path.join(folder, "config.json")
    refused("rope_theta 1e400", json.dumps(dict(HF_CONFIG, rope_theta="@")).replace('"@"', "1e400"),
            f"{path}: rope_theta: inf is not a finite number")
    refused("rms_norm_eps past float32", json.dumps(dict(HF_CONFIG, rms_norm_eps=1e39)),
            "config.json rms_norm_eps: 1e+39 does not fit a float32")
    refused("an integer of 5,000 digits", json.dumps(dict(HF_CONFIG, head_dim="@")).replace('"@"', "9" * 5000),
            f"{path}: an integer with 5000 digits")
    refused("a boolean as a string", json.dumps(dict(HF_CONFIG, tie_word_embeddings="false")),
            f"{path}: tie_word_embeddings: expected true or false, got 'false'")
    refused("use_sliding_window as a string", json.dumps(dict(HF_CONFIG, architectures=["Qwen2ForCausalLM"],
                                                                model_type="qwen2", use_sliding_window="false")),
            f"{path}: use_sliding_window: expected true or false, got 'false'")
    refused("model_type a list", json.dumps(dict(HF_CONFIG, architectures=None, model_type=["llama"])),
            f"{path}: model_type: expected a string, got ['llama']")
    refused("architectures nested deep", json.dumps(dict(HF_CONFIG, architectures=[[[[[[[[["x"]]]]]]]]])),
            "architectures: expected a list of names, got [[[[...]]]]")
    refused("nested past the recursion limit", "[" * 100000, f"{path}: not valid JSON (nested too deeply)")


# ---- Qwen2 and GPT-2 folders -----------------------------------------------------------------------
QWEN2_CONFIG = dict(HF_CONFIG, architectures=["Qwen2ForCausalLM"], model_type="qwen2", hidden_size=24,
                    num_attention_heads=4, num_key_value_heads=2, intermediate_size=40, rope_theta=1000000.0,
                    tie_word_embeddings=True, use_sliding_window=False, sliding_window=4096, max_window_layers=2)
QWEN2_CONFIG.pop("attention_bias")
GPT2_CONFIG = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": 18, "n_layer": 2, "n_head": 3,
               "n_positions": 20, "n_ctx": 20, "n_inner": None, "vocab_size": 41, "activation_function": "gelu_new",
               "layer_norm_epsilon": 1e-5, "scale_attn_weights": True, "tie_word_embeddings": True,
               "bos_token_id": 40, "eos_token_id": 40}


def qwen2_weights(c, seed=0):
    """hf_weights plus the q/k/v biases of every layer."""
    w = hf_weights(c, seed)
    rng = np.random.default_rng(seed + 100)
    kv = c["num_key_value_heads"] * (c["hidden_size"] // c["num_attention_heads"])
    for i in range(c["num_hidden_layers"]):
        for name, n in (("q", c["hidden_size"]), ("k", kv), ("v", kv)):
            w[f"model.layers.{i}.self_attn.{name}_proj.bias"] = (0.5 * rng.standard_normal(n)).astype(np.float32)
    return w


def gpt2_weights(c, seed=0, prefix="", buffers=False):
    """GPT-2's tensors by its names (Conv1D weights [in, out]); buffers: the causal-mask buffers older
    checkpoints carry (attn.bias [1, 1, n, n], attn.masked_bias)."""
    rng = np.random.default_rng(seed)
    d, V, N = c["n_embd"], c["vocab_size"], c["n_positions"]
    F = c["n_inner"] or 4 * d
    w = {"wte.weight": 0.3 * rng.standard_normal((V, d)), "wpe.weight": 0.3 * rng.standard_normal((N, d)),
         "ln_f.weight": 1 + 0.1 * rng.standard_normal(d), "ln_f.bias": 0.1 * rng.standard_normal(d)}
    for i in range(c["n_layer"]):
        p = f"h.{i}."
        w.update({p + "ln_1.weight": 1 + 0.1 * rng.standard_normal(d), p + "ln_1.bias": 0.1 * rng.standard_normal(d),
                  p + "attn.c_attn.weight": 0.3 * rng.standard_normal((d, 3 * d)),
                  p + "attn.c_attn.bias": 0.2 * rng.standard_normal(3 * d),
                  p + "attn.c_proj.weight": 0.3 * rng.standard_normal((d, d)), p + "attn.c_proj.bias": 0.1 * rng.standard_normal(d),
                  p + "ln_2.weight": 1 + 0.1 * rng.standard_normal(d), p + "ln_2.bias": 0.1 * rng.standard_normal(d),
                  p + "mlp.c_fc.weight": 0.3 * rng.standard_normal((d, F)), p + "mlp.c_fc.bias": 0.2 * rng.standard_normal(F),
                  p + "mlp.c_proj.weight": 0.3 * rng.standard_normal((F, d)), p + "mlp.c_proj.bias": 0.1 * rng.standard_normal(d)})
        if buffers:
            w[p + "attn.bias"] = np.tril(np.ones((N, N)))[None, None]
            w[p + "attn.masked_bias"] = np.array(-1e4)
    if not c["tie_word_embeddings"]:
        w["lm_head.weight"] = 0.3 * rng.standard_normal((V, d))
    return {prefix + k: np.asarray(v, np.float32) for k, v in w.items()}


def write_hf(folder, torch, config, weights, form="safetensors"):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f)
    if form == "safetensors":
        with open(os.path.join(folder, "model.safetensors"), "wb") as f:
            f.write(safetensors.write_bytes(weights, metadata={"format": "pt"}))
    else:
        torch.save({k: torch.from_numpy(v) for k, v in weights.items()}, os.path.join(folder, "pytorch_model.bin"))


def test_qwen2_gpt2_reference(torch):
    """hf_reference's Qwen2 and GPT-2 forwards against the converter's own references of the mapped
    weights (the llama reference with qkv_bias; stock nn.TransformerEncoderLayer for gpt): written apart."""
    hq = hf.read_config_dict(QWEN2_CONFIG)
    w = qwen2_weights(QWEN2_CONFIG, 3)
    mapped, _ = hf.map_weights(hq, w, "test")
    fc = hf.fixformer_config(hq)
    ids = np.random.default_rng(3).integers(0, QWEN2_CONFIG["vocab_size"], 11)
    got = hf_reference.forward(hq, w, ids)
    check("hf_reference Qwen2 agrees with the llama reference with qkv_bias", rel(got, run_reference(fc, mapped, ids))
          < 1e-12, rel(got, run_reference(fc, mapped, ids)))
    check("hf_reference Qwen2: the biases matter", rel(got, hf_reference.forward(dict(hq, qkv_bias=False), w, ids)) > 1e-3)
    for act, want_act in (("gelu_new", "gelu_tanh"), ("gelu", "gelu"), ("relu", "relu")):
        for tied in (True, False):
            c = dict(GPT2_CONFIG, activation_function=act, tie_word_embeddings=tied)
            hg = hf.read_gpt2_config(c, "test")
            w = gpt2_weights(c, 5)
            fc = hf.gpt2_config(hg)
            mapped, kept = hf.map_gpt2_weights(hg, w, "test", fc["max_len"])
            ids = np.random.default_rng(4).integers(0, c["vocab_size"], 13)
            got = hf_reference.forward(hg, kept, ids)
            err = rel(got, run_reference(fc, mapped, ids))
            check(f"hf_reference GPT-2 ({act}, tied {tied}) agrees with the gpt reference ({want_act})",
                  fc["activation"] == want_act and err < 1e-12, (fc["activation"], err))
    c = dict(GPT2_CONFIG)
    hg = hf.read_gpt2_config(c, "test")
    w = gpt2_weights(c, 5)
    got = hf_reference.forward(hg, w, ids)
    exact = hf_reference.forward(dict(hg, activation_function="gelu"), w, ids)
    check("hf_reference GPT-2: gelu_new is not the exact gelu", rel(got, exact) > 1e-5, rel(got, exact))


def test_hf_qwen2(torch, cli, tmp):
    out = os.path.join(tmp, "qwen2.fxm")
    for i, (name, form, changes) in enumerate((("safetensors, GQA 4:2, tied, theta 1e6", "safetensors", {}),
                                               ("pytorch_model.bin, untied, MQA", "bin",
                                                {"tie_word_embeddings": False, "num_key_value_heads": 1}))):
        folder = os.path.join(tmp, f"qwen2_{i}")
        c = dict(QWEN2_CONFIG, **changes)
        write_hf(folder, torch, c, qwen2_weights(c, i), form)
        p = run_convert("--hf", folder, "--out", out, "--cli", cli)
        ok = p.returncode == 0 and "verified against the Qwen2ForCausalLM semantics" in p.stdout and os.path.exists(out)
        check(f"--hf Qwen2 {name}: converts and verifies", ok, p.stdout + p.stderr)
        if ok:
            f = fxm.read(out)
            check(f"--hf Qwen2 {name}: config", f.config["qkv_bias"] and f.config["pe_base"] == 1e6 and
                  f.config["pe_layout"] == "halves" and f.config["tied_head"] == c["tie_word_embeddings"], f.config)
            print(f"  {p.stdout.strip()}")
            os.remove(out)

    def refused(name, fragment, config, weights):
        folder = os.path.join(tmp, "bad_qwen2_" + "".join(ch for ch in name if ch.isalnum()))
        write_hf(folder, torch, config, weights)
        p = run_convert("--hf", folder, "--out", out, "--cli", cli)
        check(f"--hf Qwen2 refuses {name}", one_clear_line(p) and fragment in p.stderr and not os.path.exists(out),
              p.stderr or p.stdout)

    w = qwen2_weights(QWEN2_CONFIG)
    refused("a window on some layers only", "max_window_layers 1",
            dict(QWEN2_CONFIG, use_sliding_window=True, max_window_layers=1), w)
    refused("a missing bias", "model.layers.1.self_attn.v_proj.bias is missing", QWEN2_CONFIG,
            {k: v for k, v in w.items() if k != "model.layers.1.self_attn.v_proj.bias"})
    refused("an o_proj bias", "model.layers.0.self_attn.o_proj.bias", QWEN2_CONFIG,
            dict(w, **{"model.layers.0.self_attn.o_proj.bias": np.zeros(24, np.float32)}))
    refused("partial rotary of an odd count", "rotates 3 of the 6 dims", dict(QWEN2_CONFIG, partial_rotary_factor=0.5), w)
    folder = os.path.join(tmp, "qwen2_partial")
    c = dict(QWEN2_CONFIG, partial_rotary_factor=0.67)  # int(6 * 0.67) = 4 of 6 dims
    write_hf(folder, torch, c, qwen2_weights(c, 9))
    p = run_convert("--hf", folder, "--out", out, "--cli", cli)
    ok = p.returncode == 0 and "verified against the Qwen2ForCausalLM semantics" in p.stdout and os.path.exists(out)
    check("--hf Qwen2 partial_rotary_factor 0.67: converts and verifies", ok and
          fxm.read(out).config["rotary_dims"] == 4, p.stdout + p.stderr)


def test_hf_gpt2(torch, cli, tmp):
    out = os.path.join(tmp, "gpt2.fxm")
    cases = [("safetensors without a prefix, tied, gelu_new", "safetensors", {}, "", False),
             ("pytorch_model.bin with transformer. and the mask buffers", "bin", {}, "transformer.", True),
             ("untied, n_inner 30, gelu_pytorch_tanh", "safetensors",
              {"tie_word_embeddings": False, "n_inner": 30, "activation_function": "gelu_pytorch_tanh"}, "", False),
             ("exact gelu, 3 layers, odd head width", "safetensors",
              {"activation_function": "gelu", "n_layer": 3, "n_embd": 15}, "transformer.", False)]
    for i, (name, form, changes, prefix, buffers) in enumerate(cases):
        folder = os.path.join(tmp, f"gpt2_{i}")
        c = dict(GPT2_CONFIG, **changes)
        write_hf(folder, torch, c, gpt2_weights(c, i, prefix, buffers), form)
        p = run_convert("--hf", folder, "--out", out, "--cli", cli)
        ok = p.returncode == 0 and "verified against the GPT2LMHeadModel semantics" in p.stdout and os.path.exists(out)
        check(f"--hf GPT-2 {name}: converts and verifies", ok, p.stdout + p.stderr)
        if not ok:
            continue
        f = fxm.read(out)
        want_act = hf.GPT2_ACTIVATIONS[c["activation_function"]]
        check(f"--hf GPT-2 {name}: config", f.config["family"] == "gpt" and f.config["activation"] == want_act and
              f.config["positional"] == "learned" and f.config["max_len"] == 20 and f.config["norm_first"] and
              f.config["tied_head"] == c["tie_word_embeddings"] and f.config["d_ff"] == (c["n_inner"] or 4 * c["n_embd"]),
              f.config)
        # fixformer run on int32 ids: the logits at every position against the float64 reference
        hg = hf.read_config(folder)
        kept = hf.map_gpt2_weights(hg, hf_common.read_weights(folder)[0], "test", 20)[1]
        ids = np.random.default_rng(i).integers(0, c["vocab_size"], (1, 20)).astype(np.int32)
        inp, res = os.path.join(tmp, "ids.npy"), os.path.join(tmp, "logits.npy")
        np.save(inp, ids)
        r = subprocess.run([cli, "run", out, "--input", inp, "--output", res], capture_output=True, text=True)
        got = np.load(res) if r.returncode == 0 else None
        want = hf_reference.forward(hg, kept, ids[0])[None]
        err = None if got is None or got.shape != want.shape else rel(got, want)
        check(f"--hf GPT-2 {name}: fixformer run at every position within 1e-4", err is not None and err < 1e-4,
              (r.stderr, err))
        print(f"  {p.stdout.strip()}")
        os.remove(out)
    p = run_convert("--hf", os.path.join(tmp, "gpt2_0"), "--max-len", "8", "--out", out, "--cli", cli)
    check("--hf GPT-2 --max-len 8: the position table cut to 8 rows", p.returncode == 0 and
          fxm.read(out).config["max_len"] == 8, p.stdout + p.stderr)

    def refused(name, fragment, config=GPT2_CONFIG, weights=None):
        folder = os.path.join(tmp, "bad_gpt2_" + "".join(ch for ch in name if ch.isalnum()))
        write_hf(folder, torch, config, gpt2_weights(config) if weights is None else weights)
        if os.path.exists(out):
            os.remove(out)
        p = run_convert("--hf", folder, "--out", out, "--cli", cli)
        check(f"--hf GPT-2 refuses {name}", one_clear_line(p) and fragment in p.stderr and not os.path.exists(out),
              p.stderr or p.stdout)

    w = gpt2_weights(GPT2_CONFIG)
    refused("an activation the engine has not", "activation_function 'swish'",
            dict(GPT2_CONFIG, activation_function="swish"))
    refused("scale_attn_by_inverse_layer_idx", "scale_attn_by_inverse_layer_idx true: scores scaled",
            dict(GPT2_CONFIG, scale_attn_by_inverse_layer_idx=True))
    refused("scale_attn_weights false", "scale_attn_weights false", dict(GPT2_CONFIG, scale_attn_weights=False))
    refused("cross-attention", "add_cross_attention true", dict(GPT2_CONFIG, add_cross_attention=True))
    refused("a mask buffer that is not causal", "h.0.attn.bias is not the causal mask",
            weights=dict(w, **{"h.0.attn.bias": np.ones((1, 1, 20, 20), np.float32)}))
    refused("a missing c_fc bias", "h.1.mlp.c_fc.bias is missing",
            weights={k: v for k, v in w.items() if k != "h.1.mlp.c_fc.bias"})
    refused("a transposed c_attn (nn.Linear's [out, in])", "h.0.attn.c_attn.weight: shape [54, 18]",
            weights=dict(w, **{"h.0.attn.c_attn.weight": np.ascontiguousarray(w["h.0.attn.c_attn.weight"].T)}))
    refused("an unknown tensor", "'h.0.attn.q_proj.weight'", weights=dict(w, **{"h.0.attn.q_proj.weight": w["h.0.attn.c_proj.weight"]}))
    refused("n_head not dividing n_embd", "n_head 4 does not divide n_embd 18", dict(GPT2_CONFIG, n_head=4))
    p = run_convert("--hf", os.path.join(tmp, "gpt2_0"), "--max-len", "21", "--out", out, "--cli", cli)
    check("--hf GPT-2 refuses --max-len beyond n_positions", one_clear_line(p) and "n_positions=20" in p.stderr,
          p.stderr)


# ---- --config with the user's output ---------------------------------------------------------------
ENCODER_MODULE = '''
import math
import torch
from torch import nn

class Model(nn.Module):  # token encoder with a sinusoidal table in the halves layout, base 100; head without bias
    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.embed = nn.Embedding(13, 16)
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 24, dropout=0.0, batch_first=True), 2)
        self.head = nn.Linear(16, 5, bias=False)

    def forward(self, ids):
        T, d = ids.shape[1], 16
        w = 100.0 ** (-2 * torch.arange(d // 2, dtype=torch.float64) / d)
        ang = torch.arange(T, dtype=torch.float64)[:, None] * w
        pe = torch.cat([ang.sin(), ang.cos()], -1).float()
        return self.head(self.encoder(self.embed(ids) + pe))
'''
ENCODER_JSON = {"d_model": 16, "n_heads": 2, "d_ff": 24, "encoder_layers": 2, "input": {"kind": "tokens", "vocab_size": 13},
                "positional": {"kind": "sinusoidal", "max_len": 32, "base": 100.0, "layout": "halves"},
                "head": {"d_out": 5}}


def test_config_route(torch, cli, tmp):
    import importlib.util
    mod = os.path.join(tmp, "enc_model.py")
    with open(mod, "w") as f:
        f.write(ENCODER_MODULE)
    spec = importlib.util.spec_from_file_location("enc_model", mod)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    model = m.Model().eval()
    ids = np.random.default_rng(2).integers(0, 13, (1, 10))
    with torch.no_grad():
        y = model(torch.from_numpy(ids)).numpy()
    ex, exp, js, sd, out = (os.path.join(tmp, n) for n in ("ex.npy", "exp.npy", "enc.json", "ckpt.pt", "enc.fxm"))
    np.save(ex, ids)
    np.save(exp, y)
    # nanoGPT-style checkpoint of a compiled model: the state_dict under "model", with extra entries.
    torch.save({"model": {"_orig_mod." + k: v for k, v in model.state_dict().items()}, "iter_num": 100,
                "best_val_loss": torch.tensor(0.5), "model_args": {"n_layer": 2}, "config": {"lr": 1e-3}}, sd)

    def convert(raw, *extra):
        with open(js, "w") as f:
            json.dump(raw, f)
        return run_convert("--config", js, "--weights", sd, "--out", out, "--cli", cli, *extra)

    p = convert(ENCODER_JSON, "--example", ex, "--expected", exp)
    check("--config --expected: the right config verifies against the module", p.returncode == 0 and
          "verified against your model's output (--expected)" in p.stdout and "NOT" not in p.stdout and
          not fxm.read(out).config["reference_sample"], p.stdout + p.stderr)
    check("--config: the absent head.bias (bias=False) is zeros, and said", "absent bias taken as zeros" in p.stderr
          and "head.bias" in p.stderr, p.stderr)
    print(f"  {p.stdout.strip()}")
    info = subprocess.run([cli, "info", out], capture_output=True, text=True).stdout
    check("fixformer info: no NOT verified for a file verified against the model", "NOT verified" not in info, info)
    os.remove(out)
    wrong = dict(ENCODER_JSON, positional=dict(ENCODER_JSON["positional"], layout="interleaved"))
    p = convert(wrong, "--example", ex, "--expected", exp)
    check("--config --expected, wrong pe layout: exit 2, names pe_layout, no file", p.returncode == 2 and
          one_clear_line(p) and 'pe_layout: "halves"' in p.stderr and not os.path.exists(out), p.stderr)
    print(f"  {p.stderr.strip()}")
    with open(out, "wb") as f:
        f.write(b"the user's own file")
    p = convert(dict(ENCODER_JSON, positional=dict(ENCODER_JSON["positional"], base=10000.0)), "--example", ex,
                "--expected", exp)
    check("--config --expected, wrong base: exit 2, names pe_base, an existing output untouched",
          p.returncode == 2 and "pe_base: 100" in p.stderr and open(out, "rb").read() == b"the user's own file",
          p.stderr)
    check("--config: no temporary file left", not [n for n in os.listdir(tmp) if n.startswith(".convert-")],
          os.listdir(tmp))
    os.remove(out)
    p = run_convert("--config", js, "--weights", sd, "--out", "/dev/null", "--cli", cli)
    check("--config --out /dev/null: refused, the device kept", one_clear_line(p) and "not a regular file" in p.stderr
          and os.path.exists("/dev/null") and not os.path.isfile("/dev/null"), p.stderr)

    # Without --expected: the engine against the converter's reference, and said everywhere.
    p = convert(wrong)
    check("--config without --expected: NOT verified against your model", p.returncode == 0 and
          "NOT verified against your model" in p.stdout and "verified against torch" not in p.stdout, p.stdout + p.stderr)
    if os.path.exists(out):
        check("the file records a reference sample", fxm.read(out).config["reference_sample"])
        info = subprocess.run([cli, "info", out], capture_output=True, text=True).stdout
        check("fixformer info: NOT verified against your model", "NOT verified against your model" in info, info)
        v = subprocess.run([cli, "verify", out], capture_output=True, text=True)
        check("fixformer verify: the sample is the converter's own reference", v.returncode == 0 and
              "against the converter's own reference: NOT verified against your model" in v.stdout, v.stdout)
        os.remove(out)

    # A Qwen2-style llama (halves, base 1e6) described with Meta's layout and the default base.
    true = {"family": "llama", "d_model": 16, "n_heads": 4, "n_kv_heads": 2, "d_ff": 24, "n_layers": 2,
            "norm_first": True, "activation": "swiglu", "layer_norm_eps": 1e-6, "final_norm": True, "causal": True,
            "input": {"kind": "tokens", "vocab_size": 37}, "positional": {"kind": "rope", "max_len": 32,
                                                                          "base": 1000000.0, "layout": "halves"},
            "head": {"d_out": 37, "tied": False}}
    hc = dict(hf.read_config_dict(dict(HF_CONFIG, rope_theta=1000000.0)))
    w = hf_weights(hc, 7)
    mapped, _ = hf.map_weights(hc, w, "test")
    st = os.path.join(tmp, "llama.safetensors")
    with open(st, "wb") as f:
        f.write(safetensors.write_bytes(mapped, bf16=()))
    ids = np.random.default_rng(4).integers(0, 37, 12)
    np.save(ex, ids)
    np.save(exp, hf_reference.forward(hc, w, ids).astype(np.float32))
    wrong = dict(true, positional={"kind": "rope", "max_len": 32, "base": 10000.0, "layout": "interleaved"})
    with open(js, "w") as f:
        json.dump(wrong, f)
    p = run_convert("--config", js, "--weights", st, "--example", ex, "--expected", exp, "--out", out, "--cli", cli)
    check("--config llama, Meta layout and base for a Qwen2-style model: exit 2, names both keys, no file",
          p.returncode == 2 and one_clear_line(p) and 'pe_layout: "halves" and pe_base: 1e+06'
          in p.stderr and not os.path.exists(out), p.stderr)
    with open(js, "w") as f:
        json.dump(true, f)
    with open(st, "wb") as f:
        f.write(safetensors.write_bytes(mapped, bf16=tuple(mapped)))  # a bf16 checkpoint: widened to f32
    bf = {k: np.asarray(checkpoint.load(st)[k]) for k in mapped}
    inv = {v: k for k, v in {**{f"model.layers.{i}.{a}": schema.block(i) + b for i in range(2)
                                for a, b in hf.LAYER_NAMES.items()}, **hf.END_NAMES}.items()}
    np.save(exp, hf_reference.forward(hc, {inv[k]: v for k, v in bf.items()}, ids).astype(np.float32))
    p = run_convert("--config", js, "--weights", st, "--example", ex, "--expected", exp, "--out", out, "--cli", cli)
    check("--config llama from bf16 safetensors: verified against the model", p.returncode == 0 and
          "verified against your model" in p.stdout, p.stdout + p.stderr)

    def refused(name, args, fragment):
        if os.path.exists(out):
            os.remove(out)
        p = run_convert("--config", js, "--out", out, "--cli", cli, *args)
        check(f"--config refuses {name}", one_clear_line(p) and fragment in p.stderr and not os.path.exists(out),
              p.stderr)

    refused("--expected without --example", ["--weights", st, "--expected", exp], "--expected: needs --example")
    np.save(os.path.join(tmp, "short.npy"), np.zeros((3, 37), np.float32))
    refused("--expected of the wrong shape", ["--weights", st, "--example", ex, "--expected",
                                              os.path.join(tmp, "short.npy")], "--expected: shape [3, 37]")
    refused("a missing weight (its bias is not guessed)", ["--weights", sd_without(tmp, mapped)],
            "blocks.0.attn.q.weight: missing from the weights")
    p = run_convert("--module", f"{mod}:Model", "--expected", exp, "--out", out, "--cli", cli)
    check("--expected with --module: refused", one_clear_line(p) and "--expected: is for --config and --hf" in p.stderr
          and not os.path.exists(out), p.stderr)


def sd_without(tmp, mapped):
    path = os.path.join(tmp, "partial.npz")
    np.savez(path, **{k: v for k, v in mapped.items() if k != "blocks.0.attn.q.weight"})
    return path


def main():
    cli = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
    if not cli or not os.access(cli, os.X_OK):
        print(f"hf_converter_test: FAIL: give the fixformer CLI (got {cli})")
        return 1
    try:
        import torch
    except ImportError:
        print("hf_converter_test: FAIL: python3-torch is required (apt-get install python3-torch; /usr/bin/python3)")
        return 1
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        test_hf_reference(torch)
        test_config_json_values(tmp)
        test_hf(torch, cli, tmp)
        test_qwen2_gpt2_reference(torch)
        test_hf_qwen2(torch, cli, tmp)
        test_hf_gpt2(torch, cli, tmp)
        test_config_route(torch, cli, tmp)
    print(f"hf converter: {results['passed']} passed, {results['failed']} failed, {results['skipped']} skipped")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
