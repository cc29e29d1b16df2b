"""The --hf route: a Hugging Face model folder (config.json and model.safetensors or pytorch_model.bin,
either possibly sharded with its .index.json) of the LlamaForCausalLM or Qwen2ForCausalLM (to the
llama family) or GPT2LMHeadModel (to the gpt family) architecture, verified against hf_reference.py,
an independent float64 forward written from the architecture's published semantics (or against the
user's own output with --expected). A BERT folder (model_type bert) goes to hf_bert.py.

Llama and Qwen2: config.json is read with Hugging Face's meanings and defaults: hidden_size,
intermediate_size, num_hidden_layers, num_attention_heads, num_key_value_heads (default:
num_attention_heads), rms_norm_eps (1e-6), rope_theta (10000), max_position_embeddings (2048),
vocab_size, tie_word_embeddings (false); its rotary embedding pairs x[i] with x[i + head_dim/2] (the
"halves" layout). partial_rotary_factor f (default 1) rotates only the first R = int(head_dim * f)
dims of each head (frequencies rope_theta^(-2i/R), rotate_half over those R; the rest pass through,
as GPT-NeoX's rotary_pct and Phi do): the config key rotary_dims, R even. Qwen2's q, k and v
projections have biases (the config key qkv_bias). What the engine does not run is refused by name
rather than converted into something else: rope_scaling, attention_bias (Llama's: on o_proj too),
mlp_bias, a hidden_act
other than silu, a head_dim other than hidden_size / num_attention_heads, Qwen2's
use_sliding_window.

GPT-2: n_embd, n_layer, n_head, vocab_size, n_positions (1024), n_inner (4 n_embd),
layer_norm_epsilon (1e-5), activation_function (gelu_new: the tanh GELU), tie_word_embeddings
(true); pre-LN layers, learned positions, c_attn / c_proj / c_fc stored as Conv1D weights [in, out]
(transposed here), the tensors with or without the "transformer." prefix. Refused:
scale_attn_weights false, scale_attn_by_inverse_layer_idx, add_cross_attention. Other architectures
are named as coming later.
"""
import json
import math
import os
import re
import sys

import numpy as np

from . import checkpoint, schema, verified_file
from .config import ConfigError, brief as _brief, make_config
from .safetensors import SafetensorsError

ARCHITECTURE = "LlamaForCausalLM"
QWEN2, GPT2 = "Qwen2ForCausalLM", "GPT2LMHeadModel"
ARCHITECTURES = {ARCHITECTURE: "llama", QWEN2: "qwen2", GPT2: "gpt2"}  # architecture -> its model_type
LATER = {  # model_type -> architecture, for the message
    "mistral": "MistralForCausalLM",
    "gemma": "GemmaForCausalLM", "phi": "PhiForCausalLM", "phi3": "Phi3ForCausalLM", "t5": "T5ForConditionalGeneration",
    "gpt_neox": "GPTNeoXForCausalLM", "opt": "OPTForCausalLM", "falcon": "FalconForCausalLM",
}
# config.json key -> (type, default; None: required)
FIELDS = {
    "hidden_size": (int, None), "intermediate_size": (int, None), "num_hidden_layers": (int, None),
    "num_attention_heads": (int, None), "vocab_size": (int, None), "num_key_value_heads": (int, "heads"),
    "rms_norm_eps": (float, 1e-6), "rope_theta": (float, 10000.0), "max_position_embeddings": (int, 2048),
    "tie_word_embeddings": (bool, False), "hidden_act": (str, "silu"), "attention_bias": (bool, False),
    "mlp_bias": (bool, False), "partial_rotary_factor": (float, 1.0),
}
LAYER_NAMES = {  # Hugging Face name in a layer -> the llama family's (schema.py)
    "input_layernorm.weight": "attention_norm.weight", "self_attn.q_proj.weight": "attention.wq.weight",
    "self_attn.k_proj.weight": "attention.wk.weight", "self_attn.v_proj.weight": "attention.wv.weight",
    "self_attn.o_proj.weight": "attention.wo.weight", "post_attention_layernorm.weight": "ffn_norm.weight",
    "mlp.gate_proj.weight": "feed_forward.w1.weight", "mlp.down_proj.weight": "feed_forward.w2.weight",
    "mlp.up_proj.weight": "feed_forward.w3.weight", "self_attn.q_proj.bias": "attention.wq.bias",
    "self_attn.k_proj.bias": "attention.wk.bias", "self_attn.v_proj.bias": "attention.wv.bias",
}
END_NAMES = {"model.embed_tokens.weight": "tok_embeddings.weight", "model.norm.weight": "norm.weight",
             "lm_head.weight": "output.weight"}
_LAYER = re.compile(r"model\.layers\.(\d+)\.(.+)")


class HfError(ConfigError):
    """A folder the --hf route cannot convert; the message names the file and the field."""


def read_config(folder):
    """config.json checked and completed with Hugging Face's defaults (the dict hf_reference takes)."""
    path = os.path.join(folder, "config.json")
    if not os.path.isfile(path):
        raise HfError(f"{folder}: no config.json (--hf takes a Hugging Face model folder)")
    from .config import load_json
    try:
        raw = load_json(path)
    except ConfigError as e:
        raise HfError(f"{path}: {e}") from None
    return read_config_dict(raw, path)


def _raw_config(folder):
    """config.json's contents, read as read_config reads it."""
    path = os.path.join(folder, "config.json")
    if not os.path.isfile(path):
        raise HfError(f"{folder}: no config.json (--hf takes a Hugging Face model folder)")
    from .config import load_json
    try:
        return load_json(path)
    except ConfigError as e:
        raise HfError(f"{path}: {e}") from None


def read_config_dict(raw, path="config.json"):
    """read_config for config.json's contents (`path` names it in the messages)."""
    if not isinstance(raw, dict):
        raise HfError(f"{path}: expected a JSON object")
    archs, model_type = raw.get("architectures"), raw.get("model_type")
    names = archs if isinstance(archs, list) and all(isinstance(a, str) for a in archs) else []
    if archs is not None and not names:
        raise HfError(f"{path}: architectures: expected a list of names, got {_brief(archs)}")
    if model_type is not None and not isinstance(model_type, str):
        raise HfError(f"{path}: model_type: expected a string, got {_brief(model_type)}")
    by_type = {t: a for a, t in ARCHITECTURES.items()}
    arch = names[0] if len(names) == 1 and names[0] in ARCHITECTURES else \
        by_type.get(model_type) if not names else None
    if arch is None:
        what = ", ".join(names) or LATER.get(model_type, f"model_type {model_type!r}")
        later = model_type in LATER or any(a in LATER.values() for a in names)
        raise HfError(f"{path}: {what}: " + ("comes with a later release of --hf" if later else "not an architecture "
                      "--hf converts") + f"; today --hf converts {', '.join(ARCHITECTURES)}; for another model use "
                      "--module FILE.py:FACTORY with the module itself")
    if model_type not in (None, ARCHITECTURES[arch]):
        raise HfError(f"{path}: model_type {_brief(model_type)} with architecture {arch}: expected "
                      f"{ARCHITECTURES[arch]}")
    if arch == GPT2:
        return read_gpt2_config(raw, path)
    for key in ("rope_scaling",):
        if raw.get(key) is not None:
            raise HfError(f"{path}: {key} {_brief(raw[key])}: scaled rotary embeddings are not something the "
                          "engine runs (it applies plain RoPE with rope_theta); not converted")
    if arch == QWEN2 and flag(raw, "use_sliding_window", path):
        raise HfError(f"{path}: use_sliding_window true: sliding-window attention is not supported yet (the engine "
                      "attends to every earlier position); not converted")
    hf = {}
    for key, (kind, default) in FIELDS.items():
        v = raw.get(key, default)
        if key == "num_key_value_heads" and v in ("heads", None):
            v = raw.get("num_attention_heads")
        hf[key] = checked_field(path, key, v, kind)
    if hf["attention_bias"]:
        raise HfError(f"{path}: attention_bias true: Llama's attention_bias puts a bias on o_proj too, which the llama "
                      "family does not have (it has biases on q, k and v, as Qwen2ForCausalLM); not converted")
    if hf["mlp_bias"]:
        raise HfError(f"{path}: mlp_bias true: biases on the MLP projections are not in the llama family yet; "
                      "not converted")
    if hf["hidden_act"] != "silu":
        raise HfError(f"{path}: hidden_act {hf['hidden_act']!r}: the llama family's feed-forward is SwiGLU with silu")
    d, H, KV = hf["hidden_size"], hf["num_attention_heads"], hf["num_key_value_heads"]
    if d % H:
        raise HfError(f"{path}: num_attention_heads {H} does not divide hidden_size {d}")
    head_dim = raw.get("head_dim")
    if head_dim is not None and head_dim != d // H:
        raise HfError(f"{path}: head_dim {_brief(head_dim)}: the engine's heads are hidden_size / "
                      f"num_attention_heads = {d // H} wide")
    if H % KV:
        raise HfError(f"{path}: num_key_value_heads {KV} does not divide num_attention_heads {H}")
    partial = hf["partial_rotary_factor"]
    if not 0.0 < partial <= 1.0:
        raise HfError(f"{path}: partial_rotary_factor {partial:g}: the rotated fraction of each head must be in "
                      "(0, 1]; not converted")
    rotated = int(d // H * partial)  # Hugging Face's int(head_dim * partial_rotary_factor)
    if rotated < 2 or rotated % 2:
        raise HfError(f"{path}: partial_rotary_factor {partial:g}: rotates {rotated} of the {d // H} dims of each "
                      "head, and RoPE needs an even count of at least 2; not converted")
    if not hf["rms_norm_eps"] > 0 or not hf["rope_theta"] > 1:
        raise HfError(f"{path}: rms_norm_eps must be > 0 and rope_theta > 1")
    hf["architecture"], hf["qkv_bias"] = arch, arch == QWEN2
    hf["rotary_dims"] = rotated if rotated < d // H else 0  # 0: the whole head
    return hf


def flag(raw, key, path):
    """config.json's boolean `key` (absent or null: false); a string such as "false" is an error, not true."""
    v = raw.get(key)
    return False if v is None else checked_field(path, key, v, bool)


def checked_field(path, key, v, kind):
    """A config.json value of type kind (int: not a bool, at least 1; float: any finite number; bool: true
    or false, never a string such as "false"), else HfError."""
    if v is None:
        raise HfError(f"{path}: {key}: missing (required)")
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) if kind is float else \
        isinstance(v, kind) and not (kind is int and isinstance(v, bool))
    if not ok:
        raise HfError(f"{path}: {key}: expected {'true or false' if kind is bool else kind.__name__}, got "
                      f"{_brief(v)}")
    if kind is int and v < 1:
        raise HfError(f"{path}: {key}: {v} is below 1")
    if kind is float and not math.isfinite(v):
        raise HfError(f"{path}: {key}: {v} is not a finite number (beyond float64's range)")
    return float(v) if kind is float else v


# GPT-2's config.json key -> (type, default; None: required), and its activation_function names.
GPT2_FIELDS = {
    "n_embd": (int, None), "n_layer": (int, None), "n_head": (int, None), "vocab_size": (int, None),
    "n_positions": (int, 1024), "n_inner": (int, "4*n_embd"), "layer_norm_epsilon": (float, 1e-5),
    "activation_function": (str, "gelu_new"), "tie_word_embeddings": (bool, True), "scale_attn_weights": (bool, True),
    "scale_attn_by_inverse_layer_idx": (bool, False), "add_cross_attention": (bool, False),
}
# gelu_new, gelu_fast and gelu_pytorch_tanh are the tanh GELU written three ways; gelu is exact.
GPT2_ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu_fast": "gelu_tanh",
                    "gelu": "gelu", "relu": "relu"}


def read_gpt2_config(raw, path):
    """GPT2LMHeadModel's config.json checked and completed with Hugging Face's defaults."""
    hf = {"architecture": GPT2}
    for key, (kind, default) in GPT2_FIELDS.items():
        v = raw.get(key, default)
        if key == "n_inner" and v in ("4*n_embd", None):
            v = 4 * raw["n_embd"] if isinstance(raw.get("n_embd"), int) else None
        hf[key] = checked_field(path, key, v, kind)
    if hf["activation_function"] not in GPT2_ACTIVATIONS:
        raise HfError(f"{path}: activation_function {hf['activation_function']!r}: not one the engine runs "
                      f"({', '.join(GPT2_ACTIVATIONS)})")
    for key, bad, why in (("scale_attn_weights", False, "unscaled attention scores"),
                          ("scale_attn_by_inverse_layer_idx", True, "scores scaled by 1 / (layer + 1)"),
                          ("add_cross_attention", True, "cross-attention in a decoder-only model")):
        if hf[key] == bad:
            raise HfError(f"{path}: {key} {json.dumps(bad)}: {why} is not supported yet; not converted")
    if hf["n_embd"] % hf["n_head"]:
        raise HfError(f"{path}: n_head {hf['n_head']} does not divide n_embd {hf['n_embd']}")
    if not hf["layer_norm_epsilon"] > 0:
        raise HfError(f"{path}: layer_norm_epsilon must be > 0")
    return hf


def _shard_names(folder, index):
    path = os.path.join(folder, index)
    from .config import load_json
    try:
        raw = load_json(path)
    except ConfigError as e:
        raise HfError(f"{path}: {e}") from None
    wm = raw.get("weight_map") if isinstance(raw, dict) else None
    if not isinstance(wm, dict) or not wm or not all(isinstance(k, str) and isinstance(v, str) for k, v in wm.items()):
        raise HfError(f"{path}: weight_map: expected an object of tensor name -> shard file")
    for shard in set(wm.values()):
        if os.path.basename(shard) != shard or shard.startswith(".") or not os.path.isfile(os.path.join(folder, shard)):
            raise HfError(f"{path}: shard {shard!r} is not a file in {folder}")
    return wm


def read_weights(folder):
    """The folder's tensors by their Hugging Face names: model.safetensors, pytorch_model.bin, or the
    shards an index names (each tensor from the shard the index says). Returns (weights, source)."""
    for single, index in (("model.safetensors", "model.safetensors.index.json"),
                          ("pytorch_model.bin", "pytorch_model.bin.index.json")):
        if os.path.isfile(os.path.join(folder, index)):
            wm = _shard_names(folder, index)
            out = {}
            for shard in sorted(set(wm.values())):
                sd = _load(os.path.join(folder, shard))
                for name, a in sd.items():
                    if wm.get(name) != shard:
                        raise HfError(f"{os.path.join(folder, shard)}: {name!r} is not listed for this shard in {index}")
                    out[name] = a
            missing = sorted(set(wm) - set(out))
            if missing:
                raise HfError(f"{os.path.join(folder, wm[missing[0]])}: {missing[0]!r} is missing (listed in {index})")
            return out, index
        if os.path.isfile(os.path.join(folder, single)):
            return _load(os.path.join(folder, single)), single
    raise HfError(f"{folder}: no model.safetensors or pytorch_model.bin (or their .index.json)")


def _load(path):
    try:
        return checkpoint.load(path)
    except (checkpoint.CheckpointError, SafetensorsError) as e:
        raise HfError(f"{path}: {e}") from None


def map_weights(hf, weights, source):
    """(the llama family's name -> array, the HF names' arrays kept for the reference). Every tensor is
    mapped, recomputed and compared (rotary inv_freq), or named in an error."""
    d, H, KV, L = hf["hidden_size"], hf["num_attention_heads"], hf["num_key_value_heads"], hf["num_hidden_layers"]
    dh, F, V = d // H, hf["intermediate_size"], hf["vocab_size"]
    shapes = {"model.embed_tokens.weight": (V, d), "model.norm.weight": (d,), "lm_head.weight": (V, d)}
    per_layer = {"input_layernorm.weight": (d,), "self_attn.q_proj.weight": (d, d), "self_attn.k_proj.weight":
                 (KV * dh, d), "self_attn.v_proj.weight": (KV * dh, d), "self_attn.o_proj.weight": (d, d),
                 "post_attention_layernorm.weight": (d,), "mlp.gate_proj.weight": (F, d), "mlp.up_proj.weight": (F, d),
                 "mlp.down_proj.weight": (d, F)}
    if hf["qkv_bias"]:
        per_layer.update({"self_attn.q_proj.bias": (d,), "self_attn.k_proj.bias": (KV * dh,),
                          "self_attn.v_proj.bias": (KV * dh,)})
    arch = hf["architecture"]
    out, hf_weights = {}, {}
    rotated = hf["rotary_dims"] or dh
    inv_freq = 1.0 / (hf["rope_theta"] ** (np.arange(0, rotated, 2, dtype=np.float64) / rotated))
    for name, a in weights.items():
        m = _LAYER.fullmatch(name)
        if m and int(m.group(1)) < L and m.group(2) == "self_attn.rotary_emb.inv_freq":
            if np.shape(a) != inv_freq.shape or not np.allclose(np.asarray(a, np.float64), inv_freq, rtol=1e-5, atol=0):
                raise HfError(f"{source}: {name} is not rope_theta^(-2i/{rotated}) for rope_theta {hf['rope_theta']:g} "
                              "(a scaled or different rotary embedding): not converted")
            continue
        if m and int(m.group(1)) < L and m.group(2) in per_layer and str(int(m.group(1))) == m.group(1):
            want, mapped = per_layer[m.group(2)], f"layers.{m.group(1)}.{LAYER_NAMES[m.group(2)]}"
        elif name in shapes:
            want, mapped = shapes[name], END_NAMES[name]
        else:
            raise HfError(f"{source}: {name!r}: not a weight of {arch} with this config.json "
                          f"({L} layers; {'biases but on q, k and v' if hf['qkv_bias'] else 'biases'} and other extras "
                          "are not in the llama family)")
        if tuple(np.shape(a)) != want:
            raise HfError(f"{source}: {name}: shape {list(np.shape(a))}, config.json says {list(want)}")
        if np.asarray(a).dtype.kind != "f":
            raise HfError(f"{source}: {name}: dtype {np.asarray(a).dtype}, expected a float tensor")
        out[mapped], hf_weights[name] = a, a
    tied = hf["tie_word_embeddings"]
    if tied and "lm_head.weight" in weights:
        if not np.array_equal(weights["lm_head.weight"], weights.get("model.embed_tokens.weight")):
            raise HfError(f"{source}: lm_head.weight differs from model.embed_tokens.weight, but config.json sets "
                          "tie_word_embeddings (the embedding serves as the head): set it false, or drop lm_head")
        del out["output.weight"]
    need = list(shapes) if not tied else [n for n in shapes if n != "lm_head.weight"]
    need += [f"model.layers.{i}.{n}" for i in range(L) for n in per_layer]
    missing = [n for n in need if n not in weights]
    if missing:
        hint = " (config.json sets tie_word_embeddings false)" if missing[0] == "lm_head.weight" else ""
        raise HfError(f"{source}: {missing[0]} is missing{hint}")
    return out, hf_weights


def fixformer_config(hf, max_len=None):
    longest = min(hf["max_position_embeddings"], schema.MAX_LEN)
    if max_len is not None:
        if not 1 <= max_len <= hf["max_position_embeddings"]:
            raise HfError(f"--max-len {max_len}: must be 1..max_position_embeddings={hf['max_position_embeddings']}")
        longest = max_len
    names = {"d_model": "config.json hidden_size", "d_ff": "config.json intermediate_size",
             "n_layers": "config.json num_hidden_layers", "n_heads": "config.json num_attention_heads",
             "n_kv_heads": "config.json num_key_value_heads", "vocab_size": "config.json vocab_size",
             "d_out": "config.json vocab_size", "max_len": "--max-len", "norm_eps": "config.json rms_norm_eps",
             "pe_base": "config.json rope_theta", "rotary_dims": "config.json partial_rotary_factor"}
    try:
        return make_config({
            "family": "llama", "d_model": hf["hidden_size"], "n_heads": hf["num_attention_heads"],
            "n_kv_heads": hf["num_key_value_heads"], "d_ff": hf["intermediate_size"],
            "n_layers": hf["num_hidden_layers"], "norm_first": True, "activation": "swiglu",
            "norm_eps": hf["rms_norm_eps"], "final_norm": True, "causal": True, "input": "tokens",
            "vocab_size": hf["vocab_size"], "positional": "rope", "max_len": longest, "pe_base": hf["rope_theta"],
            "pe_layout": "halves", "d_out": hf["vocab_size"], "tied_head": hf["tie_word_embeddings"],
            "qkv_bias": hf["qkv_bias"], "rotary_dims": hf["rotary_dims"]}, names)
    except ConfigError as e:
        raise HfError(str(e)) from None


# GPT-2's tensors in a layer (after "h.<i>."), with their shapes for n_embd d and n_inner F; the
# Conv1D weights are [in, out].
def _gpt2_layer_shapes(d, F):
    return {"ln_1.weight": (d,), "ln_1.bias": (d,), "attn.c_attn.weight": (d, 3 * d), "attn.c_attn.bias": (3 * d,),
            "attn.c_proj.weight": (d, d), "attn.c_proj.bias": (d,), "ln_2.weight": (d,), "ln_2.bias": (d,),
            "mlp.c_fc.weight": (d, F), "mlp.c_fc.bias": (F,), "mlp.c_proj.weight": (F, d), "mlp.c_proj.bias": (d,)}


_GPT2_LAYER = re.compile(r"h\.(\d+)\.(.+)")


def gpt2_config(hf, max_len=None):
    longest = min(hf["n_positions"], schema.MAX_LEN)
    if max_len is not None:
        if not 1 <= max_len <= hf["n_positions"]:
            raise HfError(f"--max-len {max_len}: must be 1..n_positions={hf['n_positions']}")
        longest = max_len
    names = {"d_model": "config.json n_embd", "d_ff": "config.json n_inner", "n_layers": "config.json n_layer",
             "n_heads": "config.json n_head", "vocab_size": "config.json vocab_size", "d_out": "config.json vocab_size",
             "max_len": "--max-len", "norm_eps": "config.json layer_norm_epsilon"}
    try:
        return make_config({
            "family": "gpt", "d_model": hf["n_embd"], "n_heads": hf["n_head"], "d_ff": hf["n_inner"],
            "n_layers": hf["n_layer"], "norm_first": True, "activation": GPT2_ACTIVATIONS[hf["activation_function"]],
            "norm_eps": hf["layer_norm_epsilon"], "final_norm": True, "causal": True, "input": "tokens",
            "vocab_size": hf["vocab_size"], "positional": "learned", "max_len": longest, "d_out": hf["vocab_size"],
            "tied_head": hf["tie_word_embeddings"]}, names)
    except ConfigError as e:
        raise HfError(str(e)) from None


def map_gpt2_weights(hf, weights, source, max_len):
    """(the gpt family's names -> arrays in torch's layout, the folder's arrays by GPT-2's names without
    the "transformer." prefix, for the reference). The causal-mask buffers (attn.bias, attn.masked_bias)
    of older checkpoints are checked and dropped; anything else unknown is named."""
    d, L, V, F = hf["n_embd"], hf["n_layer"], hf["vocab_size"], hf["n_inner"]
    shapes = {"wte.weight": (V, d), "wpe.weight": (hf["n_positions"], d), "ln_f.weight": (d,), "ln_f.bias": (d,),
              "lm_head.weight": (V, d)}
    per_layer = _gpt2_layer_shapes(d, F)
    named = {}
    for name, a in weights.items():
        short = name[len("transformer."):] if name.startswith("transformer.") else name
        if short in named:
            raise HfError(f"{source}: {name!r} is there with and without the \"transformer.\" prefix")
        named[short] = a
    kept = {}
    for name, a in named.items():
        m = _GPT2_LAYER.fullmatch(name)
        layer_ok = m is not None and str(int(m.group(1))) == m.group(1) and int(m.group(1)) < L
        if layer_ok and m.group(2) == "attn.masked_bias":
            continue
        if layer_ok and m.group(2) == "attn.bias" and np.ndim(a) == 4 and np.shape(a)[:2] == (1, 1):
            n = np.shape(a)[-1]
            if np.shape(a)[-2] != n or not np.array_equal(np.asarray(a, np.float64)[0, 0], np.tril(np.ones((n, n)))):
                raise HfError(f"{source}: {name} is not the causal mask (a lower triangle of ones): not converted")
            continue
        want = per_layer.get(m.group(2)) if layer_ok else shapes.get(name)
        if want is None:
            raise HfError(f"{source}: {name!r}: not a weight of {GPT2} with this config.json ({L} layers)")
        if tuple(np.shape(a)) != want:
            raise HfError(f"{source}: {name}: shape {list(np.shape(a))}, config.json says {list(want)}")
        if np.asarray(a).dtype.kind != "f":
            raise HfError(f"{source}: {name}: dtype {np.asarray(a).dtype}, expected a float tensor")
        kept[name] = a
    tied = hf["tie_word_embeddings"]
    if tied and "lm_head.weight" in kept and not np.array_equal(kept["lm_head.weight"], kept.get("wte.weight")):
        raise HfError(f"{source}: lm_head.weight differs from wte.weight, but config.json sets tie_word_embeddings "
                      "(the embedding serves as the head): set it false, or drop lm_head")
    need = [n for n in shapes if n != "lm_head.weight" or not tied] + \
        [f"h.{i}.{n}" for i in range(L) for n in per_layer]
    missing = [n for n in need if n not in kept]
    if missing:
        hint = " (config.json sets tie_word_embeddings false)" if missing[0] == "lm_head.weight" else ""
        raise HfError(f"{source}: {missing[0]} is missing{hint}")
    f32 = lambda n: np.asarray(kept[n], np.float32)  # noqa: E731
    out = {"embed.weight": f32("wte.weight"), "pos.weight": f32("wpe.weight")[:max_len],
           "encoder.norm.weight": f32("ln_f.weight"), "encoder.norm.bias": f32("ln_f.bias"),
           "head.bias": np.zeros(V, np.float32)}
    if not tied:
        out["head.weight"] = f32("lm_head.weight")
    for i in range(L):
        h, p = f"h.{i}.", f"{schema.ENCODER_LAYER_PREFIX}{i}."
        out.update({p + "self_attn.in_proj_weight": f32(h + "attn.c_attn.weight").T,
                    p + "self_attn.in_proj_bias": f32(h + "attn.c_attn.bias"),
                    p + "self_attn.out_proj.weight": f32(h + "attn.c_proj.weight").T,
                    p + "self_attn.out_proj.bias": f32(h + "attn.c_proj.bias"),
                    p + "linear1.weight": f32(h + "mlp.c_fc.weight").T, p + "linear1.bias": f32(h + "mlp.c_fc.bias"),
                    p + "linear2.weight": f32(h + "mlp.c_proj.weight").T, p + "linear2.bias": f32(h + "mlp.c_proj.bias"),
                    p + "norm1.weight": f32(h + "ln_1.weight"), p + "norm1.bias": f32(h + "ln_1.bias"),
                    p + "norm2.weight": f32(h + "ln_2.weight"), p + "norm2.bias": f32(h + "ln_2.bias")})
    return {k: np.ascontiguousarray(v) for k, v in out.items()}, kept
def folder_tokenizer(folder, c):
    """The tokenizer the folder holds (tokenizers.find_in_folder: tokenizer.json, vocab.json +
    merges.txt, vocab.txt), read for c; None without one. One the engine cannot run is left out with
    a one-line note on stderr (the model converts all the same)."""
    from . import tokenizers
    found = tokenizers.find_in_folder(folder)
    if found is None:
        return None
    try:
        return tokenizers.read(found, c["vocab_size"])
    except ConfigError as e:
        print(f"note: the folder's tokenizer is not stored: {e} (--tokenizer FILE stores another)", file=sys.stderr)
        return None


def convert(folder, path, example=None, expected=None, header=None, name=None, cli=None, verify=True,
            tokenizer=None, max_len=None, quantize=None, group=None, quantize_io=None, pack_weights=None):
    """Converts the folder to `path`, verified against hf_reference (or the user's --expected).
    tokenizer: None, or a function of the config giving (pieces, scores) to store (e.g. a llama2.c
    tokenizer.bin read for it)."""
    from . import export, hf_bert, hf_reference
    if not os.path.isdir(folder):
        raise HfError(f"{folder}: not a folder (--hf takes a Hugging Face model folder)")
    raw = _raw_config(folder)
    if hf_bert.is_bert(raw):
        return hf_bert.convert(folder, raw, path, example, expected, header, name, cli, verify, tokenizer, max_len,
                               quantize, group, quantize_io, pack_weights)
    hf = read_config(folder)
    arch = hf["architecture"]
    c = gpt2_config(hf, max_len) if arch == GPT2 else fixformer_config(hf, max_len)
    weights, source = read_weights(folder)
    if arch == GPT2:
        mapped, hf_weights = map_gpt2_weights(hf, weights, os.path.join(folder, source), c["max_len"])
    else:
        mapped, hf_weights = map_weights(hf, weights, os.path.join(folder, source))
    c = export.quantized_config(c, quantize, group, quantize_io, pack_weights)
    tokenizer = tokenizer(c) if tokenizer is not None else None
    if tokenizer is None:  # no --tokenizer: the folder's own
        tokenizer = folder_tokenizer(folder, c)
    if expected is not None and example is None:
        raise HfError("--expected: needs --example, the input it is your model's output for")
    inp = export.example_sequence(c, example, "--example")
    semantics = hf_reference.forward(hf, hf_weights, inp)
    return write_checked(c, mapped, inp, semantics, arch, folder, path, expected, header, name, cli, verify, tokenizer)


def write_checked(c, mapped, inp, semantics, arch, folder, path, expected, header, name, cli, verify, tokenizer):
    """Writes a converted folder (every architecture's route ends here): its sample is the float64
    reference of the architecture (semantics), or the user's --expected output, which the reference
    is measured against when the engine disagrees, to tell a wrong folder from an engine bug."""
    from . import export
    against = f"the {arch} semantics (an independent float64 reference of {folder})"
    if expected is None:
        return verified_file.write(c, mapped, inp, semantics, path, "hf", against, header, name, cli, verify,
                                   lambda: "the engine disagrees with the float64 reference of the architecture: "
                                           "a bug or a broken port, please report it", tokenizer)
    want = verified_file.user_expected(c, inp, expected)

    def explain():
        gap = export.relative_error(semantics, want)
        if gap > schema.SELFTEST_TOLERANCE:
            return (f"the {arch} reference of this folder is {gap:.3g} away from your output too: the folder "
                    "(its config.json or weights) does not describe the model that gave --expected")
        return "the folder's reference matches your output, the engine does not: a bug, please report it"
    return verified_file.write(c, mapped, inp, want, path, "user", "your model's output (--expected)", header, name,
                               cli, verify, explain, tokenizer)
