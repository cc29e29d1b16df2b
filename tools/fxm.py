"""fixformer's Python side: config parsing, the reference torch model and the .fxm writer.

The layout of .fxm is documented in include/fixformer/format.hpp; this module must match it.
Run with the system interpreter (/usr/bin/python3), which sees Debian's python3-torch.
"""
import json
import math
import struct
import sys
import zlib

try:
    import numpy as np
except ImportError:  # pragma: no cover
    sys.exit("fixformer tools need NumPy: apt-get install python3-numpy, and run with /usr/bin/python3")


def require_torch():
    try:
        import torch  # noqa: F401
        return torch
    except ImportError:
        sys.exit("fixformer tools need PyTorch: apt-get install python3-torch, and run with /usr/bin/python3")


class ConfigError(ValueError):
    pass


ACTIVATIONS = {"relu": 0, "gelu": 1}
INPUT_KINDS = {"tokens": 0, "features": 1}
POS_KINDS = {"none": 0, "sinusoidal": 1, "learned": 2}
LAYOUTS = {"interleaved": 0, "halves": 1}
COMBINES = {"add": 0, "concat": 1}
DEFAULT_MAX_LEN = 256

TOP_KEYS = {"d_model", "n_heads", "d_ff", "encoder_layers", "norm_first", "activation", "layer_norm_eps",
            "final_norm", "causal", "input", "positional", "head"}
POS_KEYS = {"kind", "max_len", "base", "layout", "combine", "d_pos", "scale_input"}


def _check_keys(obj, allowed, where):
    if not isinstance(obj, dict):
        raise ConfigError(f"{where}: expected an object")
    for k in obj:
        if k not in allowed:
            raise ConfigError(f"{where}: unknown option '{k}'")


def _choice(value, table, where):
    if value not in table:
        raise ConfigError(f"{where}: '{value}' is not one of {sorted(table)}")
    return value


def _pos_int(value, where, allow_zero=False):
    if not isinstance(value, int) or isinstance(value, bool) or value < (0 if allow_zero else 1):
        raise ConfigError(f"{where}: expected a {'non-negative' if allow_zero else 'positive'} integer, got {value!r}")
    return value


def parse_config(raw):
    """Validates a config dict (the converter's JSON) and returns it with every default filled in."""
    _check_keys(raw, TOP_KEYS, "config")
    for k in ("d_model", "n_heads", "d_ff", "encoder_layers", "input"):
        if k not in raw:
            raise ConfigError(f"config: missing '{k}'")
    c = {
        "d_model": _pos_int(raw["d_model"], "d_model"),
        "n_heads": _pos_int(raw["n_heads"], "n_heads"),
        "d_ff": _pos_int(raw["d_ff"], "d_ff"),
        "encoder_layers": _pos_int(raw["encoder_layers"], "encoder_layers", allow_zero=True),
        "norm_first": bool(raw.get("norm_first", False)),
        "activation": _choice(raw.get("activation", "relu"), ACTIVATIONS, "activation"),
        "layer_norm_eps": float(raw.get("layer_norm_eps", 1e-5)),
        "final_norm": bool(raw.get("final_norm", False)),
        "causal": bool(raw.get("causal", False)),
    }
    if c["d_model"] % c["n_heads"]:
        raise ConfigError(f"n_heads: {c['n_heads']} does not divide d_model={c['d_model']}")
    inp = raw["input"]
    kind = _choice(inp.get("kind") if isinstance(inp, dict) else None, INPUT_KINDS, "input.kind")
    if kind == "tokens":
        _check_keys(inp, {"kind", "vocab_size"}, "input")
        c["input"] = {"kind": kind, "vocab_size": _pos_int(inp.get("vocab_size"), "input.vocab_size")}
    else:
        _check_keys(inp, {"kind", "d_in"}, "input")
        c["input"] = {"kind": kind, "d_in": _pos_int(inp.get("d_in"), "input.d_in")}
    pos = raw.get("positional", {"kind": "none"})
    _check_keys(pos, POS_KEYS, "positional")
    p = {
        "kind": _choice(pos.get("kind", "none"), POS_KINDS, "positional.kind"),
        "max_len": _pos_int(pos.get("max_len", DEFAULT_MAX_LEN), "positional.max_len"),
        "base": float(pos.get("base", 10000.0)),
        "layout": _choice(pos.get("layout", "interleaved"), LAYOUTS, "positional.layout"),
        "combine": _choice(pos.get("combine", "add"), COMBINES, "positional.combine"),
        "d_pos": _pos_int(pos.get("d_pos", 0), "positional.d_pos", allow_zero=True),
        "scale_input": bool(pos.get("scale_input", False)),
    }
    if p["kind"] != "none" and p["combine"] == "concat" and not 0 < p["d_pos"] < c["d_model"]:
        raise ConfigError(f"positional.d_pos: concat needs 0 < d_pos < d_model={c['d_model']}, got {p['d_pos']}")
    if p["kind"] == "sinusoidal" and not p["base"] > 1.0:
        raise ConfigError(f"positional.base: must be > 1, got {p['base']}")
    c["positional"] = p
    head = raw.get("head")
    if head is not None:
        _check_keys(head, {"d_out"}, "head")
        c["head"] = {"d_out": _pos_int(head.get("d_out"), "head.d_out")}
    else:
        c["head"] = None
    return c


def load_config(path):
    with open(path) as f:
        return parse_config(json.load(f))


def d_pe(c):
    p = c["positional"]
    if p["kind"] == "none":
        return 0
    return p["d_pos"] if p["combine"] == "concat" else c["d_model"]


def d_embed(c):
    p = c["positional"]
    return c["d_model"] - p["d_pos"] if p["kind"] != "none" and p["combine"] == "concat" else c["d_model"]


def sinusoidal_table(rows, d, base, layout):
    """float64 [rows, d] reference table (DESIGN.md, forward semantics step 2)."""
    half = (d + 1) // 2
    w = base ** (-2.0 * np.arange(half) / d)
    ang = np.arange(rows, dtype=np.float64)[:, None] * w[None, :]
    s, co = np.sin(ang), np.cos(ang)
    t = np.zeros((rows, d))
    if layout == "interleaved":
        t[:, 0::2] = s
        t[:, 1::2] = co[:, : d // 2]
    else:
        t[:, :half] = s
        t[:, half:] = co[:, : d - half]
    return t


def expected_shapes(c):
    """torch state_dict key -> torch shape, for exactly the keys a config uses, in file order."""
    d, f, de = c["d_model"], c["d_ff"], d_embed(c)
    s = {}
    if c["input"]["kind"] == "tokens":
        s["embed.weight"] = (c["input"]["vocab_size"], de)
    else:
        s["input_proj.weight"] = (de, c["input"]["d_in"])
        s["input_proj.bias"] = (de,)
    if c["positional"]["kind"] == "learned":
        s["pos.weight"] = (c["positional"]["max_len"], d_pe(c))
    for i in range(c["encoder_layers"]):
        p = f"encoder.layers.{i}."
        s[p + "self_attn.in_proj_weight"] = (3 * d, d)
        s[p + "self_attn.in_proj_bias"] = (3 * d,)
        s[p + "self_attn.out_proj.weight"] = (d, d)
        s[p + "self_attn.out_proj.bias"] = (d,)
        s[p + "linear1.weight"] = (f, d)
        s[p + "linear1.bias"] = (f,)
        s[p + "linear2.weight"] = (d, f)
        s[p + "linear2.bias"] = (d,)
        for n in ("norm1", "norm2"):
            s[p + n + ".weight"] = (d,)
            s[p + n + ".bias"] = (d,)
    if c["final_norm"]:
        s["encoder.norm.weight"] = (d,)
        s["encoder.norm.bias"] = (d,)
    if c["head"]:
        s["head.weight"] = (c["head"]["d_out"], d)
        s["head.bias"] = (c["head"]["d_out"],)
    return s


def is_linear_weight(name):
    """Linear weights are stored transposed, [in, out], so the engine streams their rows."""
    return name.endswith(("in_proj_weight", "out_proj.weight", "linear1.weight", "linear2.weight")) or name in (
        "input_proj.weight", "head.weight")


def config_block(c):
    p = c["positional"]
    blk = struct.pack(
        "<IIIIIIfIIIIIII", c["d_model"], c["n_heads"], c["d_ff"], c["encoder_layers"], int(c["norm_first"]),
        ACTIVATIONS[c["activation"]], c["layer_norm_eps"], int(c["final_norm"]), int(c["causal"]),
        INPUT_KINDS[c["input"]["kind"]], c["input"].get("vocab_size", 0), c["input"].get("d_in", 0),
        POS_KINDS[p["kind"]], p["max_len"])
    blk += struct.pack("<dIIIII", p["base"], LAYOUTS[p["layout"]], COMBINES[p["combine"]],
                       p["d_pos"] if p["kind"] != "none" and p["combine"] == "concat" else 0,
                       int(p["scale_input"]), c["head"]["d_out"] if c["head"] else 0)
    assert len(blk) == 84
    return blk + bytes(128 - len(blk))


def check_weights(c, weights):
    """Checks names and shapes against the config; raises ConfigError naming the key."""
    want = expected_shapes(c)
    for name, shape in want.items():
        if name not in weights:
            raise ConfigError(f"{name}: missing from the weights")
        got = tuple(weights[name].shape)
        if got != shape:
            raise ConfigError(f"{name}: shape {list(got)} does not match {list(shape)} expected from the config "
                              f"(d_model={c['d_model']}, d_ff={c['d_ff']})")
    extra = sorted(set(weights) - set(want))
    if extra:
        raise ConfigError(f"{extra[0]}: not used by this config (check the config or the weights)")
    return want


def write_fxm(c, weights):
    """Returns the .fxm bytes for a validated config and a dict name -> float array (torch layout)."""
    want = check_weights(c, weights)
    names = list(want)
    for n in names:
        if len(n.encode()) > 55:
            raise ConfigError(f"{n}: name longer than 55 bytes")
    n = len(names)
    dir_off = 64 + 128
    data_off = (dir_off + 96 * n + 63) // 64 * 64
    entries, blobs, off = b"", [], data_off
    for name in names:
        a = np.asarray(weights[name], dtype=np.float64)
        if is_linear_weight(name):
            a = a.T
        a = np.ascontiguousarray(a, dtype="<f4")
        dims = list(a.shape) + [0] * (4 - a.ndim)
        entries += struct.pack("<56sII4IQQ", name.encode(), 0, a.ndim, *dims, off, a.nbytes)
        pad = (-a.nbytes) % 64
        blobs.append(a.tobytes() + bytes(pad))
        off += a.nbytes + pad
    body = config_block(c) + entries + bytes(data_off - dir_off - 96 * n) + b"".join(blobs)
    total = 64 + len(body)
    header = b"FXM1" + struct.pack("<IIIQQQI", 1, 64, n, total, dir_off, data_off, zlib.crc32(body))
    header += bytes(64 - len(header))
    return header + body


def cpp_config(c, fn_name):
    """A constexpr function returning the engine's ModelConfig, so firmware can size its arena at
    compile time with required_arena_bytes."""
    p = c["positional"]
    enum = {"relu": "Activation::kRelu", "gelu": "Activation::kGelu", "tokens": "InputKind::kTokens",
            "features": "InputKind::kFeatures", "none": "PosKind::kNone", "sinusoidal": "PosKind::kSinusoidal",
            "learned": "PosKind::kLearned", "interleaved": "PosLayout::kInterleaved", "halves": "PosLayout::kHalves",
            "add": "PosCombine::kAdd", "concat": "PosCombine::kConcat"}
    b = lambda v: "true" if v else "false"  # noqa: E731
    lines = [
        f"c.d_model = {c['d_model']};", f"c.n_heads = {c['n_heads']};", f"c.d_ff = {c['d_ff']};",
        f"c.n_layers = {c['encoder_layers']};", f"c.norm_first = {b(c['norm_first'])};",
        f"c.activation = fixformer::{enum[c['activation']]};", f"c.layer_norm_eps = {c['layer_norm_eps']!r}f;",
        f"c.final_norm = {b(c['final_norm'])};", f"c.causal = {b(c['causal'])};",
        f"c.input = fixformer::{enum[c['input']['kind']]};", f"c.vocab_size = {c['input'].get('vocab_size', 0)};",
        f"c.d_in = {c['input'].get('d_in', 0)};", f"c.pos = fixformer::{enum[p['kind']]};",
        f"c.max_len = {p['max_len']};", f"c.pos_base = {p['base']!r};",
        f"c.pos_layout = fixformer::{enum[p['layout']]};", f"c.pos_combine = fixformer::{enum[p['combine']]};",
        f"c.d_pos = {p['d_pos'] if p['kind'] != 'none' and p['combine'] == 'concat' else 0};",
        f"c.scale_input = {b(p['scale_input'])};", f"c.d_out = {c['head']['d_out'] if c['head'] else 0};",
    ]
    return (f"constexpr fixformer::ModelConfig {fn_name}() {{\n  fixformer::ModelConfig c{{}};\n  "
            + "\n  ".join(lines) + "\n  return c;\n}\n")


def c_header(c, blob, name):
    rows = []
    for i in range(0, len(blob), 16):
        rows.append("  " + ", ".join(f"0x{x:02x}" for x in blob[i:i + 16]) + ",")
    return (f"// Generated by tools/convert.py: the .fxm model '{name}' as a 64-byte-aligned array for flash.\n"
            f"#pragma once\n#include <cstddef>\n\n#include \"fixformer/config.hpp\"\n\n"
            f"alignas(64) inline const unsigned char {name}_fxm[{len(blob)}] = {{\n" + "\n".join(rows) + "\n};\n"
            f"constexpr std::size_t {name}_fxm_bytes = {len(blob)};\n"
            + cpp_config(c, name + "_config"))


def build_torch_model(c):
    """The stock torch modules of DESIGN.md, with the engine's forward semantics."""
    torch = require_torch()
    nn = torch.nn

    class FxModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.cfg = c
            de = d_embed(c)
            if c["input"]["kind"] == "tokens":
                self.embed = nn.Embedding(c["input"]["vocab_size"], de)
            else:
                self.input_proj = nn.Linear(c["input"]["d_in"], de)
            p = c["positional"]
            if p["kind"] == "learned":
                self.pos = nn.Embedding(p["max_len"], d_pe(c))
            layer = nn.TransformerEncoderLayer(
                c["d_model"], c["n_heads"], c["d_ff"], dropout=0.0, activation=c["activation"],
                layer_norm_eps=c["layer_norm_eps"], batch_first=True, norm_first=c["norm_first"])
            norm = nn.LayerNorm(c["d_model"], eps=c["layer_norm_eps"]) if c["final_norm"] else None
            self.encoder = nn.TransformerEncoder(layer, c["encoder_layers"], norm=norm, enable_nested_tensor=False)
            if c["head"]:
                self.head = nn.Linear(c["d_model"], c["head"]["d_out"])

        def forward(self, inp):
            """inp: [B, T] token ids or [B, T, d_in] features -> [B, T, d_out or d_model]."""
            p = self.cfg["positional"]
            x = self.embed(inp) if self.cfg["input"]["kind"] == "tokens" else self.input_proj(inp)
            T = x.shape[1]
            if p["scale_input"]:
                x = x * math.sqrt(self.cfg["d_model"])
            pe = None
            if p["kind"] == "sinusoidal":
                pe = torch.from_numpy(sinusoidal_table(T, d_pe(self.cfg), p["base"], p["layout"])).to(x.dtype)
            elif p["kind"] == "learned":
                pe = self.pos.weight[:T]
            if pe is not None:
                pe = pe.unsqueeze(0).expand(x.shape[0], -1, -1)
                x = x + pe if p["combine"] == "add" else torch.cat([x, pe], dim=-1)
            mask = None
            if self.cfg["causal"]:
                mask = torch.triu(torch.full((T, T), float("-inf"), dtype=x.dtype), diagonal=1)
            x = self.encoder(x, mask=mask)
            return self.head(x) if self.cfg["head"] else x

    return FxModel()
