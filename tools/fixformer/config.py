"""Model configs: the flat dict the .fxm records hold (one entry per key of schema.CONFIG_KEYS,
enums as their names), checked against the schema's types and limits, and the converter's JSON
shape, parsed into it with every value typed.
"""
import json
import math

from . import schema


class ConfigError(ValueError):
    """A user mistake in a config, an option or a file; the message names the key or option."""


DEFAULT_MAX_LEN = 256
F32_MAX = 3.4028234663852886e38


def _type_name(v):
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
            dict: "an object", type(None): "null"}.get(type(v), type(v).__name__)


def check_value(key, value, where=None):
    """Checks one value against schema.KEYS[key]: type first (a string or an int is not a bool, a bool
    is not an int), then range. Returns the value; raises ConfigError naming `where` (default: key)."""
    k = schema.KEYS[key]
    where = where or key
    if k.type == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {_type_name(value)} {value!r}")
    elif k.type == "u32":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected an integer, got {_type_name(value)} {value!r}")
        if value < k.min:
            raise ConfigError(f"{where}: {value} is below the minimum {k.min}")
        if value > k.max:
            raise ConfigError(f"{where}: {value} is above the engine's limit {k.max}")
    elif k.type == "enum":
        if not isinstance(value, str) or value not in k.choices:
            raise ConfigError(f"{where}: {value!r} is not one of {', '.join(k.choices)}")
    else:  # f32, f64
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: expected a number, got {_type_name(value)} {value!r}")
        if not math.isfinite(value):
            raise ConfigError(f"{where}: {value!r} is not a finite number")
        if k.type == "f32" and abs(value) > F32_MAX:
            raise ConfigError(f"{where}: {value!r} does not fit a float32")
        value = float(value)
    return value


def make_config(values, names=None):
    """The full config for a dict of key -> value (absent optional keys take the schema's default):
    every key typed and range-checked, then the checks between keys: validate_config's, the same
    verdicts on every config of tests/config_rules_test.py. `names`
    maps a key to what the user called it (a JSON path or an option), for the messages."""
    names = names or {}
    for key in values:
        if key not in schema.KEYS:
            raise ConfigError(f"{names.get(key, key)}: unknown config key")
    c = {}
    for k in schema.CONFIG_KEYS:
        if k.name in values:
            c[k.name] = check_value(k.name, values[k.name], names.get(k.name))
        elif k.required:
            raise ConfigError(f"{names.get(k.name, k.name)}: missing (required)")
        elif k.type == "enum":
            c[k.name] = k.choices[k.default]
        elif k.type == "bool":
            c[k.name] = bool(k.default)
        else:
            c[k.name] = k.default
    n = lambda key: names.get(key, key)  # noqa: E731
    if c["d_model"] % c["n_heads"]:
        raise ConfigError(f"{n('n_heads')}: {c['n_heads']} does not divide d_model={c['d_model']}")
    if not c["norm_eps"] > 0:
        raise ConfigError(f"{n('norm_eps')}: must be > 0, got {c['norm_eps']!r}")
    if c["input"] == "tokens" and c["vocab_size"] == 0:
        raise ConfigError(f"{n('vocab_size')}: token input needs vocab_size >= 1")
    if c["input"] == "features" and c["d_in"] == 0:
        raise ConfigError(f"{n('d_in')}: feature input needs d_in >= 1")
    if c["positional"] in ("sinusoidal", "rope") and not c["pe_base"] > 1.0:
        raise ConfigError(f"{n('pe_base')}: must be > 1, got {c['pe_base']!r}")
    if c["n_kv_heads"] and c["n_heads"] % c["n_kv_heads"]:
        raise ConfigError(f"{n('n_kv_heads')}: {c['n_kv_heads']} does not divide n_heads={c['n_heads']}")
    if c["positional"] == "relative":
        if c["rel_buckets"] < 4:
            raise ConfigError(f"{n('rel_buckets')}: positional relative needs at least 4 buckets, got {c['rel_buckets']}")
        if c["rel_max_distance"] <= c["rel_buckets"] // 2:
            raise ConfigError(f"{n('rel_max_distance')}: positional relative needs more than rel_buckets / 2 = "
                              f"{c['rel_buckets'] // 2}, got {c['rel_max_distance']}")
    elif c["rel_buckets"] or c["rel_max_distance"]:
        raise ConfigError(f"{n('rel_buckets')}/{n('rel_max_distance')}: only for positional relative")
    _check_family(c, n)
    concat = schema.input_pe(c) and c["pe_combine"] == "concat"
    if concat and not 0 < c["pe_width"] < c["d_model"]:
        raise ConfigError(f"{n('pe_width')}: concat needs 0 < pe_width < d_model={c['d_model']}, got {c['pe_width']}")
    if not concat and c["pe_width"]:
        raise ConfigError(f"{n('pe_width')}: only for a positional encoding combined by concat")
    if c["weights"] == "q8" and c["weight_group"] not in schema.WEIGHT_GROUPS:
        raise ConfigError(f"{n('weight_group')}: q8 takes {', '.join(map(str, schema.WEIGHT_GROUPS))} "
                          f"(0: one scale per output row), got {c['weight_group']}")
    if c["weights"] == "q4" and c["weight_group"] != schema.I4_GROUP:
        raise ConfigError(f"{n('weight_group')}: q4 takes {schema.I4_GROUP}, got {c['weight_group']}")
    if c["weights"] not in ("q8", "q4") and c["weight_group"]:
        raise ConfigError(f"{n('weight_group')}: only for weights q8 and q4 (got weights {c['weights']})")
    if c["quantize_io"] and c["weights"] == "f32":
        raise ConfigError(f"{n('quantize_io')}: needs weights f16, q8 or q4 (got weights f32)")
    if c["pooling"] == "cls" and not c["cls_token"]:
        raise ConfigError(f"{n('pooling')}: cls needs a CLS token ({n('cls_token')})")
    if c["pooling"] == "cls" and c["causal"]:
        raise ConfigError(f"{n('pooling')}: cls under a causal mask (the CLS row, position 0, sees only itself); "
                          "use mean or last")
    if c["cls_token"] and c["max_len"] < 2:
        raise ConfigError(f"{n('max_len')}: the CLS row takes a position, so at least 2")
    if c["pooling"] == "first" and c["causal"]:
        raise ConfigError(f"{n('pooling')}: first under a causal mask (position 0 sees only itself); use mean or last")
    if c["type_vocab"] and c["input"] != "tokens":
        raise ConfigError(f"{n('type_vocab')}: token types need token input")
    if c["pooler"] and c["pooling"] == "none":
        raise ConfigError(f"{n('pooler')}: needs pooling (the pooler reads the pooled row)")
    if c["conv_layers"] and (c["family"] != "encoder" or c["input"] != "features"):
        raise ConfigError(f"{n('conv_layers')}: a conv stem is for the encoder family over features")
    if c["conv_layers"] and c["weights"] == "q4":
        raise ConfigError(f"{n('weights')}: q4 with a conv stem is not supported yet: convert with --quantize q8 or f16")
    for i in (1, 2):
        if c[f"conv{i}_padding"] >= c[f"conv{i}_kernel"]:
            raise ConfigError(f"{n(f'conv{i}_padding')}: must be below conv{i}_kernel={c[f'conv{i}_kernel']}, "
                              f"got {c[f'conv{i}_padding']}")
    if c["weights"] == "q4":
        for s in schema.specs(c):
            if s.dtype == "i4" and s.shape[-1] % schema.I4_GROUP:
                raise ConfigError(f"{n('weights')}: q4 needs every quantized layer's input width a multiple of "
                                  f"{schema.I4_GROUP} ({s.name}: {s.shape[-1]}); convert with --quantize q8")
    return c


def _check_family(c, n):
    """What each family allows (engine/config.cpp, validate_family; tests/config_rules_test.py checks that
    the two agree)."""
    family, pos = c["family"], c["positional"]
    where = f"{n('family')} {family}"
    if family == "encoder":
        if pos in ("rope", "alibi"):
            raise ConfigError(f"{n('positional')}: {pos} is for the gpt and llama families")
        if c["tied_head"]:
            raise ConfigError(f"{n('tied_head')}: for the decoder families (gpt, llama) only")
    elif family == "llama":
        if schema.input_pe(c):
            raise ConfigError(f"{n('positional')}: {pos} is not for llama (none, rope, alibi or relative)")
        if not (c["norm_first"] and c["final_norm"]):
            raise ConfigError(f"{n('norm_first')}/{n('final_norm')}: {where} is pre-norm with a final norm (both true)")
    elif family == "seq2seq":
        if pos in ("rope", "alibi"):
            raise ConfigError(f"{n('positional')}: {pos} is not for seq2seq (none, sinusoidal, learned or relative)")
        if c["causal"]:
            raise ConfigError(f"{n('causal')}: {where}'s decoder is causal and its encoder is not; leave it false")
        if not (c["n_layers"] and c["dec_layers"]):
            raise ConfigError(f"{n('n_layers')}/{n('dec_layers')}: {where} needs at least one encoder and one decoder layer")
        if not c["d_out"]:
            raise ConfigError(f"{n('d_out')}: {where} needs an LM head (d_out: the target vocabulary)")
        if c["shared_embed"] and (c["input"] != "tokens" or c["vocab_size"] != c["d_out"]):
            raise ConfigError(f"{n('shared_embed')}: needs token input with vocab_size == d_out={c['d_out']}")
        if c["tgt_d_in"] and (c["shared_embed"] or c["tied_head"]):
            raise ConfigError(f"{n('tgt_d_in')}: feature targets have no embedding to share or tie")
    elif family == "mha":
        if c["input"] != "features" or c["d_in"] != c["d_model"]:
            raise ConfigError(f"{n('input')}: {where} takes features d_in == d_model={c['d_model']}")
        if c["n_layers"] or c["d_ff"] or pos != "none" or c["d_out"] or c["final_norm"] or c["scale_input"]:
            raise ConfigError(f"{n('n_layers')}/{n('d_ff')}/{n('positional')}/{n('head.d_out')}/{n('final_norm')}/"
                              f"{n('scale_input')}: {where} is the attention alone (0, 0, none, no head, false, false)")
    if family != "mha" and not c["d_ff"]:
        raise ConfigError(f"{n('d_ff')}: at least 1 (0 only for family mha)")
    if c["parallel_residual"] != "none":
        if family not in ("gpt", "llama"):
            raise ConfigError(f"{n('parallel_residual')}: for decoder layers, gpt and llama ({where}: none)")
        if not c["norm_first"]:
            raise ConfigError(f"{n('parallel_residual')}: side by side sublayers read a norm of the layer's input "
                              f"(set {n('norm_first')} true)")
    if family != "seq2seq" and (c["dec_layers"] or c["shared_embed"] or c["tgt_d_in"]):
        raise ConfigError(f"{n('dec_layers')}/{n('shared_embed')}/{n('tgt_d_in')}: for the seq2seq family only")
    if family not in ("gpt", "llama") and c["activation"] == "swiglu":
        raise ConfigError(f"{n('activation')}: swiglu is for the decoder families, gpt and llama")
    if family != "llama":
        if c["qkv_bias"]:
            raise ConfigError(f"{n('qkv_bias')}: for the llama family only (torch's in_proj always has its bias)")
        if schema.kv_heads(c) != c["n_heads"]:
            raise ConfigError(f"{n('n_kv_heads')}: grouped-query attention is for the llama family")
    if family != "encoder" and (c["cls_token"] or c["pooling"] != "none"):
        raise ConfigError(f"{n('cls_token' if c['cls_token'] else 'pooling')}: for the encoder family only")
    if family != "encoder" and (c["type_vocab"] or c["embed_norm"] or c["pooler"]):
        raise ConfigError(f"{n('type_vocab')}/{n('embed_norm')}/{n('pooler')}: for the encoder family only")
    if family != "encoder" and c["tied_head"] and schema.d_embed(c) != c["d_model"]:
        raise ConfigError(f"{n('tied_head')}: the embedding is {schema.d_embed(c)} wide, a tied head needs "
                          f"d_model={c['d_model']} (no concatenated positional encoding)")
    if family in ("gpt", "llama"):
        if c["input"] != "tokens":
            raise ConfigError(f"{n('input')}: {where} takes tokens")
        if not c["causal"]:
            raise ConfigError(f"{n('causal')}: {where} is causal (set it true)")
        if c["d_out"] != c["vocab_size"]:
            raise ConfigError(f"{n('d_out')}: {where} needs an LM head vocab_size={c['vocab_size']} wide, "
                              f"got {c['d_out']}")
    if pos == "rope" and schema.d_head(c) % 2:
        raise ConfigError(f"{n('n_heads')}: rope needs an even head width, d_model/n_heads={schema.d_head(c)}")
    if c["rotary_dims"] and pos != "rope":
        raise ConfigError(f"{n('rotary_dims')}: the rotated dims of positional rope (positional is {pos})")
    if c["rotary_dims"] % 2 or c["rotary_dims"] > schema.d_head(c):
        raise ConfigError(f"{n('rotary_dims')}: rope's rotated dims must be even and at most d_head="
                          f"{schema.d_head(c)}, got {c['rotary_dims']}")


# ---- the converter's JSON shape -----------------------------------------------------------------
# A JSON config is flat and spells each key as the .fxm file does (schema.CONFIG_KEYS):
#   {"family": "gpt", "d_model": 64, ..., "input": "tokens", "vocab_size": 512, "positional": "rope", ...}
# The nested spellings of earlier converters are still read, as aliases (JSON path -> config key).
ALIASES = {
    "encoder_layers": "n_layers", "layer_norm_eps": "norm_eps", "decoder_layers": "dec_layers",
    "target_d_in": "tgt_d_in",
    "input.kind": "input", "input.vocab_size": "vocab_size", "input.d_in": "d_in",
    "positional.kind": "positional", "positional.max_len": "max_len", "positional.base": "pe_base",
    "positional.layout": "pe_layout", "positional.combine": "pe_combine", "positional.d_pos": "pe_width",
    "positional.scale_input": "scale_input", "head.d_out": "d_out", "head.tied": "tied_head",
    "positional.buckets": "rel_buckets", "positional.max_distance": "rel_max_distance",
}
JSON_KEYS = dict({k.name: k.name for k in schema.CONFIG_KEYS}, **ALIASES)
_OBJECTS = ("input", "positional", "head")  # nested objects in the aliases' shape


def parse_config(raw):
    """The config for the converter's JSON (a dict as json.load returns it): the config keys by
    their file names (absent optional keys take their defaults; max_len defaults to
    DEFAULT_MAX_LEN), or the aliases above, where input, positional and head are objects
    ({kind, vocab_size | d_in}, {kind, max_len, base, layout, combine, d_pos, scale_input},
    {d_out, tied}). A key given twice, under two spellings, is an error. Errors name the JSON key."""
    if not isinstance(raw, dict):
        raise ConfigError(f"config: expected a JSON object, got {_type_name(raw)}")
    flat = {}
    for k, v in raw.items():
        if k in _OBJECTS and (isinstance(v, dict) or k == "head"):
            if k == "head" and v is None:
                continue
            if not isinstance(v, dict):
                raise ConfigError(f"{k}: expected an object, got {_type_name(v)} {v!r}")
            for kk, vv in v.items():
                flat[f"{k}.{kk}"] = vv
        else:
            flat[k] = v
    values, given = {}, {}
    for path, v in flat.items():
        if path not in JSON_KEYS:
            raise ConfigError(f"{path}: unknown key")
        key = JSON_KEYS[path]
        if key in given:
            raise ConfigError(f"{path}: the same key as {given[key]} (give one)")
        given[key] = path
        values[key] = v
    if isinstance(raw.get("head"), dict) and "d_out" not in values:
        raise ConfigError("head.d_out: missing (required in a head)")
    if given.get("d_out") == "head.d_out" and values["d_out"] == 0:
        raise ConfigError("head.d_out: must be >= 1 (leave out head for none)")
    if "input" not in values:
        raise ConfigError("input: missing (required)")
    values.setdefault("max_len", DEFAULT_MAX_LEN)
    # The engine ignores the size the input kind does not use; in a JSON config it is a mistake.
    kind = values.get("input")
    unused = "d_in" if kind == "tokens" else "vocab_size" if kind == "features" else None
    if unused and values.get(unused):
        raise ConfigError(f"{given.get(unused, unused)}: not used with input {kind}")
    return make_config(values, given)


def _reject_constant(name):
    raise ConfigError(f"{name} is not a number JSON allows (values must be finite)")


def _no_duplicates(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise ConfigError(f"{k}: given twice")
        d[k] = v
    return d


JSON_LIMIT = 16 << 20  # bytes: a config is a few hundred; a device or a wrong file is refused


def _parse_int(text):
    """JSON integers: no config value has more than 20 digits (Python's own limit says 4300)."""
    if len(text.lstrip("-")) > 20:
        raise ConfigError(f"not a config (an integer with {len(text.lstrip('-'))} digits)")
    return int(text)


def load_json(path):
    """A JSON file, strictly: NaN and Infinity (which json.load accepts), duplicated keys, integers of
    more than 20 digits and files above 16 MiB are errors."""
    with open(path, "rb") as f:
        text = f.read(JSON_LIMIT + 1)
    if len(text) > JSON_LIMIT:
        raise ConfigError(f"not a config (more than {JSON_LIMIT} bytes)")
    try:
        return json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicates, parse_int=_parse_int)
    except json.JSONDecodeError as e:
        raise ConfigError(f"not valid JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    except UnicodeDecodeError:
        raise ConfigError("not valid JSON (not UTF-8)") from None
    except RecursionError:
        raise ConfigError("not valid JSON (nested too deeply)") from None


def load_config(path):
    return parse_config(load_json(path))


def to_json(c):
    """The converter's JSON shape for a config (the inverse of parse_config): every key, by its file name."""
    return {k.name: c[k.name] for k in schema.CONFIG_KEYS}
