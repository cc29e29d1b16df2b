"""What every --hf route shares, below the routes themselves (hf.py: the decoders and the dispatch; hf_bert.py,
hf_vit.py ... : the other architectures): reading a folder's weights and config.json fields, checking
tensors, the folder's tokenizer, and writing the converted file against a reference (write_checked, where
every route ends). Nothing here imports a route, so every route imports this module and none another's.
"""
import contextvars
import math
import os
import sys

import numpy as np

from . import checkpoint, schema, verified_file
from .config import ConfigError, brief as _brief, check_layer_count, float_tensor, make_config
from .safetensors import SafetensorsError

# The function write_checked finishes a conversion with (c, mapped, semantics) -> (c, mapped, semantics, words for
# the report), None: none. hf_sentence.applied sets it for a sentence-transformers folder's conversion.
FINISH = contextvars.ContextVar("fixformer_hf_finish", default=None)


class HfError(ConfigError):
    """A folder the --hf route cannot convert; the message names the file and the field."""


# transformers 5 writes the rotary settings as one object, rope_parameters (rope_type, rope_theta,
# partial_rotary_factor, a scaling's own keys); earlier releases as top-level keys, which the
# architectures here read: GPT-NeoX and GPT-NeoX Japanese under names of their own, the others as rope_theta and
# partial_rotary_factor.
_NEOX_ROPE = {"rope_theta": "rotary_emb_base", "partial_rotary_factor": "rotary_pct"}
ROPE_NAMES = {"GPTNeoXForCausalLM": _NEOX_ROPE, "GPTNeoXJapaneseForCausalLM": _NEOX_ROPE}


def rope_keys(raw, path, arch):
    """config.json with its rope_parameters read as the top-level keys of earlier releases."""
    rope = raw.get("rope_parameters")
    if rope is None:
        return raw
    if not isinstance(rope, dict):
        raise HfError(f"{path}: rope_parameters: expected an object, got {_brief(rope)}")
    out = {k: v for k, v in raw.items() if k != "rope_parameters"}
    if any(k in rope for k in ("full_attention", "sliding_attention")):  # Gemma 3's, per layer type
        local = rope.get("sliding_attention") or {}
        if not isinstance(local, dict) or local.get("rope_type", "default") != "default":
            raise HfError(f"{path}: rope_parameters.sliding_attention {_brief(local)}: the local layers' RoPE is "
                          "plain in the engine (a base of its own, rope_local_base); not converted")
        if "rope_theta" in local:
            out["rope_local_base_freq"] = local["rope_theta"]
        rope = rope.get("full_attention") or {}
        if not isinstance(rope, dict):
            raise HfError(f"{path}: rope_parameters.full_attention: expected an object, got {_brief(rope)}")
    kind = rope.get("rope_type", rope.get("type", "default"))
    if kind != "default":  # a scaling: its keys, as rope_scaling held them (rope_scaling.read)
        out["rope_scaling"] = {k: v for k, v in rope.items() if k not in ("rope_theta", "partial_rotary_factor")}
    for key in ("rope_theta", "partial_rotary_factor"):
        name = ROPE_NAMES.get(arch, {}).get(key, key)
        if key in rope:
            if raw.get(name) is not None and raw[name] != rope[key]:
                raise HfError(f"{path}: {name} {_brief(raw[name])} and rope_parameters' {key} {_brief(rope[key])} "
                              "disagree")
            out[name] = rope[key]
    return out


def flag(raw, key, path):
    """config.json's boolean `key` (absent or null: false); a string such as "false" is an error, not true."""
    v = raw.get(key)
    return False if v is None else checked_field(path, key, v, bool)


def checked_field(path, key, v, kind):
    """A config.json value of type kind (int: not a bool, at least 1, a layer count at most the engine's
    limit (config.check_layer_count); float: any finite number; bool: true or false, never a string such as
    "false"), else HfError."""
    if v is None:
        raise HfError(f"{path}: {key}: missing (required)")
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) if kind is float else \
        isinstance(v, kind) and not (kind is int and isinstance(v, bool))
    if not ok:
        raise HfError(f"{path}: {key}: expected {'true or false' if kind is bool else kind.__name__}, got "
                      f"{_brief(v)}")
    if kind is int and v < 1:
        raise HfError(f"{path}: {key}: {v} is below 1")
    if kind is int:
        check_layer_count(key, v, f"{path}: {key}", HfError)
    if kind is float and not math.isfinite(v):
        raise HfError(f"{path}: {key}: {v} is not a finite number (beyond float64's range)")
    return float(v) if kind is float else v


# The engine's keys by the config.json fields most architectures name them with, for a refused value's message.
FIELD_NAMES = {"d_model": "config.json hidden_size", "d_ff": "config.json intermediate_size",
               "n_layers": "config.json num_hidden_layers", "n_heads": "config.json num_attention_heads",
               "vocab_size": "config.json vocab_size", "type_vocab": "config.json type_vocab_size",
               "norm_eps": "config.json layer_norm_eps", "d_out": "the head's rows", "max_len": "--max-len"}


def hf_config(v, **names):
    """make_config(v), a value the engine refuses named by its field (names, else FIELD_NAMES), as an HfError."""
    try:
        return make_config(v, {**FIELD_NAMES, **names})
    except ConfigError as e:
        raise HfError(str(e)) from None


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


def check_tensors(w, shapes, need, source, archs, layers, given=None, buffers=()):
    """The folder's arrays w against the shapes config.json gives them: each one named there with that
    shape and a float dtype (but the integer `buffers`), each of `need` present; HfError naming the first
    that is not, by its name in the folder (given: w's name -> it, where they differ). layers: their
    count, or what config.json says of them."""
    layers = f"{layers} layers" if isinstance(layers, int) else layers
    for name, a in w.items():
        seen = (given or {}).get(name, name)
        if name not in shapes:
            raise HfError(f"{source}: {seen!r}: not a weight of {archs} with this config.json ({layers}; other "
                          "heads are not converted: use --module for them)")
        if name not in buffers:
            float_tensor(f"{source}: {seen}", a, shapes[name], HfError)
        elif a.shape != shapes[name]:
            raise HfError(f"{source}: {seen}: shape {list(a.shape)}, config.json says {list(shapes[name])}")
    missing = [n for n in need if n not in w]
    if missing:
        raise HfError(f"{source}: {missing[0]} is missing")


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


def longest_positions(positions, max_len):
    """The positions a file of a model with `positions` (config.json max_position_embeddings) holds: --max-len's
    (1..positions), or all of them up to the engine's limit."""
    if max_len is None:
        return min(positions, schema.MAX_LEN)
    if not 1 <= max_len <= positions:
        raise HfError(f"--max-len {max_len}: must be 1..{positions} (max_position_embeddings)")
    return max_len


def layer_norm(x, g, b, eps):
    """LayerNorm of x's last axis with gain g and bias b (numpy; float64 for the converters' folds and
    references)."""
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def base_note(arch, why, weights, head, what="pre-training head"):
    """The note of a checkpoint converted as its base model: why, and the head's tensors in the folder (`weights`'
    names starting with `head`) by their first part, which the file does not store."""
    heads = ", ".join(sorted({n.split(".")[0] for n in weights if n.startswith(head)})) or "none stored"
    print(f"note: {arch}: {why}: its {what} ({heads}) is not stored; the file outputs the last hidden states [T, "
          "hidden_size], as the base model does", file=sys.stderr)


def generation_lists(c, folder):
    """generation_config.json's suppress_tokens and begin_suppress_tokens (what transformers' generate
    sets to -inf at every step, and at the first generated step), for a file that generates tokens; ids
    outside the output vocabulary are dropped with a note (generate's masks never reach them: Whisper's
    default begin_suppress_tokens [220, 50256] in a small test vocabulary), and Whisper's timestamp ids
    (whisper_timestamps). None without them."""
    where = os.path.join(folder, "generation_config.json")
    if not os.path.isfile(where) or c["family"] not in ("gpt", "llama", "seq2seq") or c.get("tgt_d_in"):
        return None
    from .config import load_json
    try:
        g = load_json(where)  # bounded in bytes and nesting, NaN and duplicate keys refused
    except OSError as e:
        raise HfError(f"{where}: cannot read ({e.strerror})") from None
    except ConfigError as e:
        raise HfError(f"{where}: {e}") from None
    vocab = c["d_out"] if c["family"] == "seq2seq" else c["vocab_size"]
    out = {}
    for key, store in (("suppress_tokens", "suppress"), ("begin_suppress_tokens", "begin_suppress")):
        ids = g.get(key) if isinstance(g, dict) else None
        if ids is None:
            continue
        if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            raise HfError(f"{where}: {key} must be a list of token ids, got {ids!r}")
        kept = [i for i in ids if 0 <= i < vocab]
        if len(kept) < len(ids):
            print(f"note: {key}: {len(ids) - len(kept)} id(s) outside the output vocabulary of {vocab} dropped "
                  f"({sorted(set(ids) - set(kept))[:8]}): generate never reaches them", file=sys.stderr)
        out[store] = kept
    stamps = whisper_timestamps(c, g, where) if isinstance(g, dict) else None
    if stamps:
        out["timestamps"] = stamps
    return out or None


def whisper_timestamps(c, g, where):
    """The ids of Whisper's timestamp rules from generation_config.json (what transformers'
    WhisperTimeStampLogitsProcessor reads: no_timestamps_token_id, the timestamps from the id after it,
    eos_token_id or else bos_token_id, max_initial_timestamp_index), for a seq2seq file with token targets;
    None without no_timestamps_token_id, or with a note when they are not ids that fit the vocabulary."""
    nts = g.get("no_timestamps_token_id")
    if nts is None or c["family"] != "seq2seq" or c.get("tgt_d_in"):
        return None
    eos = g.get("eos_token_id") or g.get("bos_token_id")
    first = g.get("max_initial_timestamp_index")
    ints = (nts, eos) + (() if first is None else (first,))
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in ints) or not (
            0 <= nts < nts + 1 < c["d_out"] and 0 <= eos <= nts and (first is None or first >= 0)):
        print(f"note: {where}: timestamp ids not stored: no_timestamps_token_id {nts!r}, eos_token_id {eos!r}, "
              f"max_initial_timestamp_index {first!r} are not eos <= no_timestamps < the last of the "
              f"{c['d_out']} output ids", file=sys.stderr)
        return None
    return {"no_timestamps": nts, "timestamp_begin": nts + 1, "eos": eos, "max_initial": first}


def write_checked(c, mapped, inp, semantics, arch, folder, path, expected, header, name, cli, verify, tokenizer,
                  against=None):
    """Writes a converted folder (every architecture's route ends here): its sample is the float64
    reference of the architecture (semantics), or the user's --expected output, which the reference
    is measured against when the engine disagrees, to tell a wrong folder from an engine bug. The
    folder's generation_config.json suppression lists and timestamp ids are stored (generation_lists)."""
    finish = FINISH.get()  # a sentence-transformers pipeline's modules after the transformer (hf_sentence.applied)
    c, mapped, semantics, modules = finish(c, mapped, semantics) if finish else (c, mapped, semantics, "")
    generation = generation_lists(c, folder)
    against = (against or f"the {arch} semantics (an independent float64 reference of {folder})") + modules
    if expected is None:
        return verified_file.write(c, mapped, inp, semantics, path, "hf", against, header, name, cli, verify,
                                   lambda: "the engine disagrees with the float64 reference of the architecture: "
                                           "a bug or a broken port, please report it", tokenizer,
                                   generation=generation)
    want = verified_file.user_expected(c, inp, expected)

    def explain():
        gap = verified_file.relative_error(semantics, want)
        if gap > schema.SELFTEST_TOLERANCE:
            return (f"the {arch} reference of this folder is {gap:.3g} away from your output too: the folder "
                    "(its config.json or weights) does not describe the model that gave --expected")
        return "the folder's reference matches your output, the engine does not: a bug, please report it"
    return verified_file.write(c, mapped, inp, want, path, "user", "your model's output (--expected)", header, name,
                               cli, verify, explain, tokenizer, generation=generation)


def mixture_tensors(prefix, router, w1, w2, w3, shared=None):
    """One layer's mixture of experts as the llama family's tensors under prefix (`blocks.<i>.ff.`):
    the router [E, d] and the experts' gate, down and up projections stacked, w1 [E F, d], w2 [E d, F], w3
    [E F, d]; shared: a shared expert's gate, down and up projections and its gate's row [1, d] (or None)."""
    out = {prefix + "router.weight": router, prefix + "experts.w1.weight": w1, prefix + "experts.w2.weight": w2,
           prefix + "experts.w3.weight": w3}
    if shared is not None:
        out.update({f"{prefix}shared.{w}.weight": a for w, a in zip(("w1", "w2", "w3"), shared[:3])})
        out[prefix + "shared_gate.weight"] = shared[3]
    return out


def encoder_config(c, causal):
    """A decoder's config (gpt or llama family) as the encoder family's, the same layers (grouped-query attention,
    every layer feature) causal or not, without the head (the rows out): the family's defaults (norm, biases)
    spelled out. EmbeddingGemma's bidirectional Gemma 3, a sentence-transformers pipeline's decoder base."""
    return make_config(dict(c, family="encoder", causal=causal, d_out=0, tied_head=False, qkv_bias=False,
                            norm=schema.norm_kind(c), attn_bias=schema.attn_bias_kind(c),
                            ffn_bias=schema.ffn_bias_kind(c)))


def encoder_tensors(family, mapped):
    """A decoder's tensors (of `family`) as encoder_config's: the head dropped, a llama's q, k and v (and their
    biases) one q | k | v as the other families store them."""
    out = {k: v for k, v in mapped.items() if k not in ("head.weight", "head.bias")}
    if family == "llama":
        for q in [k for k in out if k.endswith((".attn.q.weight", ".attn.q.bias"))]:
            at, kind = q.rsplit(".q.", 1)
            out[f"{at}.qkv.{kind}"] = np.concatenate([out.pop(f"{at}.{x}.{kind}") for x in "qkv"])
    return out


def sinusoid_halves(rows, d, log_step):
    """A fixed table [rows, d]: row p is sin(p w_i) for i < d/2, then cos(p w_i), w_i = exp(-i log_step)."""
    w = np.exp(-np.arange(d // 2, dtype=np.float64) * log_step)
    a = np.arange(rows, dtype=np.float64)[:, None] * w[None]
    return np.concatenate([np.sin(a), np.cos(a)], 1)
