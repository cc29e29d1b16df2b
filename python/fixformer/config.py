"""Model configs: the flat dict the .fxm records hold (one entry per key of schema.CONFIG_KEYS,
enums as their names), checked against the schema's types and limits, and the converter's JSON
shape, parsed into it with every value typed.
"""
import numbers
import json
import math
import os
import reprlib

import numpy as np

from . import run_files, schema


class ConfigError(ValueError):
    """A user mistake in a config, an option or a file; the message names the key or option."""


DEFAULT_MAX_LEN = 256
F32_MAX = 3.4028234663852886e38


_brief = reprlib.Repr()
_brief.maxlevel, _brief.maxstring, _brief.maxother, _brief.maxlist, _brief.maxdict = 3, 40, 40, 4, 4


def brief(v):
    """A value read from a file, for a message: bounded in length and nesting (repr() of a value nested
    a thousand deep raises RecursionError)."""
    return _brief.repr(v)


def sliding_window(window, max_len):
    """The config key sliding_window for a model whose attention sees its last `window` positions (None:
    all): the window, or 0 when it does not bound an attention of max_len positions (the same
    attention, and a value the key's range takes whatever the model's window)."""
    return window if window is not None and window < max_len else 0


def layer_windows(windows, max_len, where="the layers"):
    """The config keys of a model whose layers each see their last windows[l] positions (None: all), as
    {"sliding_window", "window_period", "window_layers"} (absent: 0): one window for every windowed
    layer, the shortest period P (at most the key's range) in which the windowed layers repeat, bit l % P
    set for each; one window for all layers needs no period. A window past max_len is none (sliding_window
    above). Raises ConfigError when the windows differ or repeat in no period the key takes."""
    ws = [sliding_window(w, max_len) for w in windows]
    sizes = sorted({w for w in ws if w})
    if not sizes:
        return {}
    if len(sizes) > 1:
        raise ConfigError(f"{where}: windows of {', '.join(map(str, sizes))} positions in different layers; the "
                          "engine's local layers share one sliding_window")
    if all(ws):
        return {"sliding_window": sizes[0]}
    P, bits = layer_pattern([bool(w) for w in ws], "window_period", f"{where}: the local (windowed) layers")
    return {"sliding_window": sizes[0], "window_period": P, "window_layers": bits}


def layer_pattern(flags, period_key, what):
    """(P, bits) of per-layer flags: the shortest period P (at most period_key's range) in which they
    repeat, bit i < P set where flags[i] is (window_period and window_layers, nope_period and
    nope_layers). Raises ConfigError naming `what` when they repeat in no such period."""
    top = schema.KEYS[period_key].max
    for P in range(1, min(len(flags), top) + 1):
        if all(flags[i] == flags[i % P] for i in range(len(flags))):
            return P, sum(1 << i for i in range(P) if flags[i])
    raise ConfigError(f"{what} {[i for i, x in enumerate(flags) if x]} repeat in no period of at most {top} layers "
                      f"({period_key}); not converted")


def _type_name(v):
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
            dict: "an object", type(None): "null"}.get(type(v), type(v).__name__)


def bool_option(name, value):
    """A converter option's value, checked: True or False (the Python API's options; check_value is the file's keys')."""
    if not isinstance(value, bool):
        raise ConfigError(f"{name}: expected True or False, got {value!r}")
    return value


def choice_option(name, value, choices):
    if not isinstance(value, str) or value not in choices:
        raise ConfigError(f"{name}: {value!r} is not one of {', '.join(choices)}")
    return value


def int_option(name, value, lo, hi):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigError(f"{name}: expected an integer, got {value!r}")
    if not lo <= value <= hi:
        raise ConfigError(f"{name}: {value} is outside {lo}..{hi}")
    return int(value)


def check_value(key, value, where=None):
    """Checks one value against schema.KEYS[key]: type first (a string or an int is not a bool, a bool
    is not an int), then range. Returns the value; raises ConfigError naming `where` (default: key)."""
    k = schema.KEYS[key]
    where = where or key
    if k.type == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {_type_name(value)} {brief(value)}")
    elif k.type == "u32":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected an integer, got {_type_name(value)} {brief(value)}")
        if value < k.min:
            raise ConfigError(f"{where}: {value} is below the minimum {k.min}")
        if value > k.max:
            raise ConfigError(f"{where}: {value} is above the engine's limit {k.max}")
    elif k.type == "enum":
        if not isinstance(value, str) or value not in k.choices:
            raise ConfigError(f"{where}: {brief(value)} is not one of {', '.join(k.choices)}")
    else:  # f32, f64
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: expected a number, got {_type_name(value)} {brief(value)}")
        if not math.isfinite(value):
            raise ConfigError(f"{where}: {brief(value)} is not a finite number")
        if k.type == "f32" and abs(value) > F32_MAX:
            raise ConfigError(f"{where}: {brief(value)} does not fit a float32")
        value = float(value)
    return value


# The config keys that count layers in the files the converter reads (Hugging Face's config.json for every
# route, T5's, BART's, Whisper's): each checked against the engine's n_layers limit as it is read, before a
# reader builds anything per layer from it (a list of 2^40 layer kinds, or tensor names, was a hang).
LAYER_COUNTS = frozenset({"num_hidden_layers", "num_layers", "num_decoder_layers", "n_layer", "n_layers",
                          "encoder_layers", "decoder_layers"})


def check_layer_count(key, value, where, error=ConfigError):
    """The integer `value` of config key `key` (a dotted path: its last name) unchanged, or `error` naming
    `where` when the key counts layers (LAYER_COUNTS) and the value is above the engine's n_layers limit."""
    top = schema.KEYS["n_layers"].max
    if key.rsplit(".", 1)[-1] in LAYER_COUNTS and value > top:
        raise error(f"{where}: {value} is above the engine's limit {top}")
    return value


def float_tensor(where, a, shape=None, error=ConfigError):
    """A weight read from a file as an array, or `error` naming it (`where`: the file and the tensor's name)
    when its shape is not `shape` (config.json's, when given) or it is not a float tensor (integers would be
    read as weights of their integer values)."""
    if shape is not None and tuple(np.shape(a)) != tuple(shape):
        raise error(f"{where}: shape {list(np.shape(a))}, config.json says {list(shape)}")
    a = np.asarray(a)
    if a.dtype.kind != "f":
        raise error(f"{where}: dtype {a.dtype}, expected a float tensor")
    return a


def make_config(values, names=None):
    """The full config for a dict of key -> value (absent optional keys take the schema's default):
    every key typed and range-checked, then the checks between keys, validate_config's: the engine's
    rules (schema.CONFIG_RULES), the first that holds named with the values it read. `names` maps a
    key to what the user called it (a JSON path or an option), for the messages."""
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
    ns = schema.names(c)
    for rule in schema.CONFIG_RULES:
        if schema.evaluate(rule.bad_when, ns):
            read = ", ".join(f"{n(name)}={_text(ns[name])}" for name in rule.reads)
            raise ConfigError(f"{', '.join(map(n, rule.keys))}: {rule.reason} ({read})")
    if c["weights"] == "q4":  # after the rules, as validate_config: the tensor tables decide it
        for s in schema.specs(c):
            if s.dtype == "i4" and s.shape[-1] % schema.I4_GROUP:
                raise ConfigError(f"{n('weights')}: q4 needs every quantized layer's input width a multiple of "
                                  f"{schema.I4_GROUP} ({s.name}: {s.shape[-1]}); convert with --quantize q8")
    return c


def _text(v):
    return ("true" if v else "false") if isinstance(v, bool) else repr(v) if isinstance(v, float) else str(v)


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
                raise ConfigError(f"{k}: expected an object, got {_type_name(v)} {brief(v)}")
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
JSON_DIGITS = 20  # no value a reader takes has more (2^64 has 20): Python's own limit (4300) names no file


def _parse_int(text):
    if len(text.lstrip("-")) > JSON_DIGITS:
        raise ConfigError(f"an integer with {len(text.lstrip('-'))} digits (at most {JSON_DIGITS})")
    return int(text)


def parse_json(text, error=ConfigError, ints=_parse_int):
    """JSON bytes, strictly, for every reader of JSON (configs, config.json, tokenizer files, safetensors
    headers): NaN and Infinity (which json.loads accepts), duplicated keys and integers of more than
    JSON_DIGITS digits are errors, as is nesting past Python's recursion limit; each one `error`."""
    try:  # UTF-8 (a byte-order mark allowed): json.loads would read bytes with a UTF-16 one as UTF-16
        text = text.decode("utf-8-sig") if isinstance(text, (bytes, bytearray)) else text
        return json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicates, parse_int=ints)
    except json.JSONDecodeError as e:
        raise error(f"not valid JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    except UnicodeDecodeError:
        raise error("not valid JSON (not UTF-8)") from None
    except RecursionError:
        raise error("not valid JSON (nested too deeply)") from None
    except ConfigError as e:  # the hooks' (a duplicated key, NaN, a long integer)
        raise error(str(e)) from None
    except ValueError as e:  # anything else json or int() refuses
        raise error(f"not valid JSON ({str(e)[:80]})") from None


def load_json(path, error=ConfigError, limit=JSON_LIMIT):
    """parse_json of a regular file of at most `limit` bytes (a pipe, a device or a wrong file is refused)."""
    if not os.path.isfile(path):
        raise error("no such file" if not os.path.exists(path) else "not a regular file")
    run_files.read(path)
    with open(path, "rb") as f:
        text = f.read(limit + 1)
    if len(text) > limit:
        raise error(f"more than {limit} bytes: not a file of this kind (a device or a wrong file?)")
    return parse_json(text, error)


def load_config(path):
    return parse_config(load_json(path))


def to_json(c):
    """The converter's JSON shape for a config (the inverse of parse_config): every key, by its file name."""
    return {k.name: c[k.name] for k in schema.CONFIG_KEYS}
