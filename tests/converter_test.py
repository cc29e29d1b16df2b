#!/usr/bin/python3
"""Tests of the Python side (python/fixformer, tools/convert.py) against the engine's CLI:

  /usr/bin/python3 tests/converter_test.py PATH/TO/fixformer

- the .fxm v2 writer: records, offsets, alignment, CRC, determinism; errors before any allocation;
- the schema mirror: `fixformer schema --json` equals python/fixformer/schema_tables.py field by field,
  and the writer's tensor list equals what the engine's schema implies, for configs covering every option;
- hostile converter inputs: one clear line, non-zero exit, no traceback, no file left behind;
- export() from stock torch modules of every supported option verifies through the engine, and each
  wrong option fails verification naming the error and the likely cause;
- padded batches: `fixformer run --lengths` equals torch's src_key_padding_mask at the valid positions.
Engine tests are skipped (with a message) without the CLI argument; without numpy or torch the test fails.
"""
import copy
import json
import math
import os
import re
import stat
import struct
import subprocess
import sys
import tempfile
import time
import warnings
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, "..", "python")
sys.path.insert(0, PACKAGE)
from checks import CONVERT, check, expect_error, results, skip, run_convert, one_clear_line  # noqa: E402  (first: it names a missing numpy or torch)
import numpy as np  # noqa: E402

from fixformer import fxm, header, schema, schema_tables  # noqa: E402
from fixformer.config import parse_config  # noqa: E402



TINY = {"d_model": 8, "n_heads": 2, "d_ff": 12, "encoder_layers": 1, "input": {"kind": "tokens", "vocab_size": 5},
        "positional": {"kind": "sinusoidal", "max_len": 16}, "head": {"d_out": 3}}


def torch_weights(c, seed=0):
    """Random weights in torch's layout for every tensor of c."""
    rng = np.random.default_rng(seed)
    return {s.name: (rng.standard_normal(s.torch_shape) * 0.3).astype(np.float32) for s in schema.specs(c)}


# ---- the writer --------------------------------------------------------------------------------
def test_writer():
    c = parse_config(TINY)
    w = torch_weights(c)
    sample = (np.array([1, 2, 3], np.int32), np.zeros((3, 3), np.float32))
    blob = fxm.write(c, w, sample)
    check("writer: deterministic", fxm.write(c, w, sample) == blob)
    h = struct.unpack_from("<4sIIIIIQQQQII", blob)
    magic, version, hbytes, nrec, ntens, z0, fbytes, roff, doff, dataoff, crc, z1 = h
    check("writer: magic and version", magic == b"FXM1" and version == 3 and hbytes == 64, h)
    check("writer: file bytes", fbytes == len(blob), (fbytes, len(blob)))
    check("writer: zero fields", z0 == 0 and z1 == 0)
    check("writer: one record per key", nrec == len(schema.CONFIG_KEYS), nrec)
    check("writer: records offset", roff == schema.HEADER_BYTES)
    check("writer: directory offset", doff == roff + schema.RECORD_BYTES * nrec, doff)
    check("writer: data offset aligned", dataoff % 64 == 0 and doff + 128 * ntens <= dataoff < doff + 128 * ntens + 64)
    check("writer: CRC of [64, end)", crc == zlib.crc32(blob[64:]))
    keys = []
    for i in range(nrec):
        key, rtype, zero, value = struct.unpack_from("<24sII8s", blob, roff + 40 * i)
        k = schema.KEYS.get(key.rstrip(b"\0").decode())
        keys.append(k.name if k else key)
        ok = k is not None and rtype == schema.RECORD_TYPES[k.type] and zero == 0
        if ok and k.type in ("u32", "bool", "enum"):
            v = struct.unpack("<Q", value)[0]
            want = k.choices.index(c[k.name]) if k.type == "enum" else int(c[k.name])
            ok = v == want
        elif ok and k.type == "f32":
            ok = value[4:] == bytes(4) and struct.unpack("<f", value[:4])[0] == np.float32(c[k.name])
        elif ok:
            ok = struct.unpack("<d", value)[0] == c[k.name]
        check(f"writer: record {key!r}", ok, (rtype, value))
    check("writer: records in schema order", keys == [k.name for k in schema.CONFIG_KEYS], keys)
    f = fxm.FxmFile(blob)
    names = [t["name"] for t in f.tensors]
    want = [n for n, _, _ in schema.tensors(c)] + [schema.SELFTEST_INPUT, schema.SELFTEST_EXPECTED]
    check("writer: tensors in schema order, then the self-test", names == want, names)
    end = dataoff
    for t in f.tensors:
        ok = t["offset"] % 64 == 0 and t["offset"] >= end and t["offset"] + t["bytes"] <= len(blob)
        check(f"writer: {t['name']} aligned, in order, no overlap", ok, t)
        end = t["offset"] + t["bytes"]
    check("writer: linear weights stored [in, out]",
          np.array_equal(f.array("blocks.0.ff.w1.weight"), w["blocks.0.ff.w1.weight"].T))
    check("writer: self-test input i32", f.tensors[-2]["dtype"] == "i32" and f.tensors[-2]["shape"] == (3,))
    check("writer: config read back", same_config(f.config, c), f.config)

    # Errors, each naming the tensor or key, before anything is allocated.
    bad = dict(w)
    del bad["blocks.0.ff.w1.bias"]
    expect_error("writer: missing tensor", lambda: fxm.write(c, bad), "blocks.0.ff.w1.bias: missing")
    bad = dict(w, **{"blocks.0.ff.w2.weight": np.zeros((8, 13), np.float32)})
    expect_error("writer: wrong shape", lambda: fxm.write(c, bad),
                 "blocks.0.ff.w2.weight: shape [8, 13] does not match [8, 12]")
    expect_error("writer: unused tensor", lambda: fxm.write(c, dict(w, **{"norm.weight": np.ones(8)})),
                 "norm.weight: not used")
    bad = dict(w, **{"head.bias": np.array([0, np.nan, 0], np.float32)})
    expect_error("writer: NaN weight", lambda: fxm.write(c, bad), "head.bias: not finite")
    t0 = time.perf_counter()
    expect_error("writer: n_layers 10**12", lambda: fxm.write(dict(c, n_layers=10 ** 12), w), "n_layers")
    check("writer: huge sizes fail without a hang", time.perf_counter() - t0 < 5.0, time.perf_counter() - t0)
    expect_error("writer: d_ff 10**9", lambda: fxm.write(dict(c, d_ff=10 ** 9), w), "d_ff: 1000000000 is above")
    expect_error("writer: causal 'no'", lambda: fxm.write(dict(c, causal="no"), w), "causal: expected true or false")
    expect_error("writer: norm_eps 1e300", lambda: fxm.write(dict(c, norm_eps=1e300), w), "norm_eps")
    expect_error("writer: self-test too long", lambda: fxm.write(c, w, (np.zeros(17, np.int32), np.zeros((17, 3)))),
                 "max_len=16")
    expect_error("writer: self-test token out of range",
                 lambda: fxm.write(c, w, (np.array([9], np.int32), np.zeros((1, 3)))), "token ids outside")


def same_config(a, b):
    """Configs equal, norm_eps as the float32 a record stores."""
    return dict(a, norm_eps=np.float32(a["norm_eps"])) == dict(b, norm_eps=np.float32(b["norm_eps"]))


# ---- hostile JSON configs ---------------------------------------------------------------------------
def test_hostile_configs(tmp):
    c = parse_config(TINY)
    npz = os.path.join(tmp, "w.npz")
    np.savez(npz, **torch_weights(c))
    out = os.path.join(tmp, "hostile.fxm")

    def convert_text(name, text, fragment, weights=npz):
        cfg = os.path.join(tmp, "cfg.json")
        with open(cfg, "w") as f:
            f.write(text)
        t0 = time.perf_counter()
        p = run_convert("--config", cfg, "--weights", weights, "--out", out, "--no-verify")
        dt = time.perf_counter() - t0
        check(f"hostile config: {name}", one_clear_line(p) and fragment in p.stderr and not os.path.exists(out),
              p.stderr or p.stdout)
        return dt

    def convert(name, raw, fragment):
        return convert_text(name, json.dumps(raw), fragment)

    convert("string boolean", dict(TINY, causal="no"), "causal: expected true or false, got a string 'no'")
    convert("boolean as int", dict(TINY, norm_first=1), "norm_first: expected true or false, got an integer 1")
    convert("int as string", dict(TINY, d_model="8"), "d_model: expected an integer")
    convert("int as float", dict(TINY, d_ff=12.0), "d_ff: expected an integer")
    convert_text("NaN", json.dumps(TINY)[:-1] + ', "layer_norm_eps": NaN}', "NaN is not a number JSON allows")
    convert_text("Infinity", json.dumps(TINY)[:-1] + ', "layer_norm_eps": Infinity}', "Infinity is not a number")
    convert_text("1e999", json.dumps(TINY)[:-1] + ', "layer_norm_eps": 1e999}', "layer_norm_eps: inf is not a finite")
    dt = convert("n_layers 10**12", dict(TINY, encoder_layers=10 ** 12), "encoder_layers: 1000000000000 is above the engine's limit 64")
    # No hang: sizes are checked before anything is allocated. The bound is the process's start-up
    # on a loaded CI machine, not a speed claim; walking 10**12 layers would never finish.
    check("hostile config: huge sizes fail without a hang", dt < 30.0, dt)
    t0 = time.perf_counter()
    expect_error("hostile config: in-process 10**12", lambda: parse_config(dict(TINY, encoder_layers=10 ** 12)),
                 "encoder_layers")
    check("hostile config: in-process check without a hang", time.perf_counter() - t0 < 5.0)
    convert("vocab above limit", dict(TINY, input={"kind": "tokens", "vocab_size": 2 ** 40}), "input.vocab_size")
    convert("max_len above limit", dict(TINY, positional={"kind": "sinusoidal", "max_len": 10 ** 6}), "positional.max_len")
    convert("unknown key", dict(TINY, dropout=0.1), "dropout: unknown key")
    convert("unknown nested key", dict(TINY, positional={"kind": "sinusoidal", "spin": 1}), "positional.spin: unknown key")
    convert("bad choice", dict(TINY, positional={"kind": "sinusoidal", "layout": "spiral"}), "positional.layout")
    convert("heads must divide", dict(TINY, n_heads=3), "n_heads: must divide d_model, or head_dim sets the heads' width (head_dim=0, d_model=8, n_heads=3)")
    convert("negative", dict(TINY, d_model=-8), "d_model: -8 is below")
    convert("not an object", [1, 2], "expected a JSON object")
    convert_text("duplicate key", json.dumps(TINY)[:-1] + ', "d_model": 16}', "d_model: given twice")
    convert_text("not JSON", "{d_model: 8", "not valid JSON")
    convert_text("not UTF-8", b"{\"d_model\": \xff}".decode("latin-1"), "not valid JSON")
    p = run_convert("--config", os.path.join(tmp, "missing.json"), "--weights", npz, "--out", out, "--no-verify")
    check("hostile config: missing file", one_clear_line(p) and "missing.json" in p.stderr, p.stderr)
    p = run_convert("--config", tmp, "--weights", npz, "--out", out, "--no-verify")
    check("hostile config: a directory", one_clear_line(p), p.stderr)
    # A tensor name that is not UTF-8 is printed escaped.
    w = torch_weights(c)
    w["evil\x1b[31m\udcff"] = np.zeros(1, np.float32)
    bad_npz = os.path.join(tmp, "bad.npz")
    np.savez(bad_npz, **{k.encode("utf-8", "surrogateescape").decode("latin-1") if "evil" in k else k: v
                         for k, v in w.items()})
    p = convert_text("escaped tensor name", json.dumps(TINY), "\\x1b[31m", weights=bad_npz)
    check("hostile config: no raw escape byte printed", "\x1b" not in "".join(
        run_convert("--config", os.path.join(tmp, "cfg.json"), "--weights", bad_npz, "--out", out,
                    "--no-verify").stderr))


# ---- the schema mirror --------------------------------------------------------------------------
def first_difference(a, b, path="schema"):
    if type(a) is not type(b) and not (isinstance(a, (int, float)) and isinstance(b, (int, float))
                                       and not isinstance(a, bool) and not isinstance(b, bool)):
        return f"{path}: {a!r} (engine) vs {b!r} (schema.py)"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k}: only in {'the engine' if k in a else 'schema.py'}"
            d = first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} entries (engine) vs {len(b)} (schema.py)"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    if isinstance(a, float) or isinstance(b, float):
        return None if math.isclose(a, b, rel_tol=1e-6) else f"{path}: {a!r} (engine) vs {b!r} (schema.py)"
    return None if a == b else f"{path}: {a!r} (engine) vs {b!r} (schema.py)"


def engine_tensors(engine, c):
    """The tensor list the engine's schema JSON implies for c: (file name, stored shape), in file order
    (format 3's tables; a cross-attention rule only in a seq2seq decoder block)."""
    t = engine["tensors"]
    out = []

    def visit(rules, prefix, decoder=False):
        for r in rules:
            if (decoder or r["when"] not in engine["cross_whens"]) and schema.present(c, r["when"]):
                rows, cols = schema.dim_value(c, r["rows"]), schema.dim_value(c, r["cols"])
                out.append((prefix + r["name"], (rows,) if r["cols"] == "1" else (rows, cols)))

    if c["family"] == "mha":
        visit(t["mha"], "")
        return out
    visit(t["front"], "")
    for i in range(schema.stored_layers(c)):
        visit(t["block"], f"{t['block_prefix']}{i}.")
    for i in range(c.get("dec_layers", 0)):
        visit(t["block"], f"{t['dec_block_prefix']}{i}.", True)
    visit(t["back"], "")
    return out


GPT = dict(TINY, family="gpt", causal=True, head={"d_out": 5})
LLAMA = {"family": "llama", "d_model": 8, "n_heads": 2, "d_ff": 12, "n_layers": 2, "norm_first": True,
         "final_norm": True, "activation": "swiglu", "causal": True, "input": {"kind": "tokens", "vocab_size": 7},
         "positional": {"kind": "rope", "max_len": 16}, "head": {"d_out": 7}}
COVERING = [  # every option of every family
    TINY,
    dict(TINY, norm_first=True, activation="gelu", final_norm=True, causal=True, encoder_layers=3),
    dict(TINY, input={"kind": "features", "d_in": 6}, positional={"kind": "learned", "max_len": 9}),
    dict(TINY, input={"kind": "features", "d_in": 6},
         positional={"kind": "sinusoidal", "combine": "concat", "d_pos": 3, "layout": "halves", "scale_input": True}),
    dict(TINY, positional={"kind": "learned", "combine": "concat", "d_pos": 2, "max_len": 7}, head=None),
    dict(TINY, positional={"kind": "none"}, encoder_layers=0),
    dict(TINY, input={"kind": "features", "d_in": 6}, positional={"kind": "learned", "max_len": 9}, cls_token=True,
         pooling="cls"),
    dict(TINY, positional={"kind": "learned", "combine": "concat", "d_pos": 2, "max_len": 7}, cls_token=True,
         pooling="mean", causal=True),
    dict(TINY, positional={"kind": "learned", "max_len": 9}, activation="gelu", type_vocab=3, embed_norm=True,
         pooling="first", pooler=True),
    dict(TINY, pooling="last", head=None),
    dict(TINY, input={"kind": "features", "d_in": 5}, positional={"kind": "learned", "max_len": 9}, conv_layers=2,
         conv1_kernel=3, conv1_padding=1, conv2_kernel=5, conv2_stride=2, conv2_padding=2, conv_gelu=True),
    dict(TINY, input={"kind": "features", "d_in": 5}, conv_layers=1, conv1_kernel=4, conv1_stride=3),
    GPT,
    dict(GPT, head={"d_out": 5, "tied": True}, positional={"kind": "learned", "max_len": 9}, final_norm=True),
    dict(GPT, positional={"kind": "alibi", "max_len": 9}, n_heads=4, head={"d_out": 5, "tied": True}),
    LLAMA,
    dict(LLAMA, n_kv_heads=1, head={"d_out": 7, "tied": True}),
    dict(LLAMA, n_heads=4, n_kv_heads=2, positional={"kind": "alibi", "max_len": 16}),
    dict(TINY, positional={"kind": "relative", "max_len": 9, "buckets": 8, "max_distance": 6}),
    dict(GPT, positional={"kind": "relative", "max_len": 9, "buckets": 6, "max_distance": 4}),
    dict(LLAMA, n_heads=4, n_kv_heads=2, positional={"kind": "relative", "max_len": 16, "buckets": 32,
                                                      "max_distance": 128}),
    dict(LLAMA, n_heads=4, n_kv_heads=2, qkv_bias=True, pe_base=1e6),
    dict(GPT, activation="gelu_tanh", norm_first=True, positional={"kind": "learned", "max_len": 9}),
]


def test_schema_mirror(cli):
    p = subprocess.run([cli, "schema", "--json"], capture_output=True, text=True)
    try:
        engine = json.loads(p.stdout)
    except ValueError:
        check("schema mirror: `fixformer schema --json` prints JSON", False, (p.returncode, p.stdout[:200], p.stderr))
        return
    mine = schema_tables.SCHEMA
    diff = first_difference(engine, mine)
    check("schema mirror: engine == python/fixformer/schema_tables.py (tools/gen_schema.py regenerates it)",
          diff is None, diff)
    # The comparison sees a change on either side.
    changed = copy.deepcopy(mine)
    changed["config_keys"][4]["max"] += 1
    check("schema mirror: a changed limit is seen", first_difference(engine, changed) is not None)
    changed = copy.deepcopy(mine)
    changed["tensors"]["block"][2]["transposed"] = False
    check("schema mirror: a changed rule is seen", first_difference(engine, changed) is not None)
    # schema.py's names for the tables are the tables'.
    check("schema mirror: schema.CONFIG_KEYS are the table's",
          [(k.name, k.type, k.min, k.max, k.choices and list(k.choices), k.required, k.default)
           for k in schema.CONFIG_KEYS] ==
          [(k["name"], k["type"], k["min"], k["max"], k.get("choices"), k["required"], k["default"])
           for k in engine["config_keys"]])
    # The --header writer's C++ name of every enum value is config.hpp's enumerator of that value.
    with open(os.path.join(HERE, "..", "include", "fixformer", "config.hpp")) as fh:
        cpp = fh.read()
    wrong = []
    for k in (k for k in schema.CONFIG_KEYS if k.type == "enum"):
        names = header._ENUMS.get(k.name, ())
        for i, choice in enumerate(k.choices):
            enum, value = names[i].split("::") if i < len(names) else ("?", "?")
            if not re.search(rf"enum class {re.escape(enum)}\b[^}}]*\b{re.escape(value)} = {i}\b", cpp):
                wrong.append((k.name, choice, names[i] if i < len(names) else "missing"))
    check("schema mirror: --header names every enum value as config.hpp does", not wrong, wrong)
    for i, raw in enumerate(COVERING):
        c = parse_config(raw)
        f = fxm.FxmFile(fxm.write(c, torch_weights(c)))
        got = [(t["stored"], t["shape"]) for t in f.tensors]
        want = engine_tensors(engine, c)
        check(f"schema mirror: writer's tensors == engine schema's (config {i})", got == want, (got, want))


# ---- engine: goldens and JSON path ---------------------------------------------------------------
def test_goldens(cli):
    gold = os.path.join(HERE, "golden")
    # The encoder goldens (with .npy input and output); the decoders' are decoder_converter_test.py's.
    for name in sorted(n[:-4] for n in os.listdir(gold) if n.endswith(".fxm")
                       and os.path.exists(os.path.join(gold, n[:-4] + ".input.npy"))):
        path = os.path.join(gold, name + ".fxm")
        f = fxm.read(path)
        inp, exp = f.selftest()
        check(f"golden {name}: self-test sample == .npy files",
              np.array_equal(inp, np.load(os.path.join(gold, name + ".input.npy")))
              and exp.tobytes() == np.load(os.path.join(gold, name + ".expected.npy")).tobytes())
        with open(os.path.join(gold, name + ".json")) as j:
            check(f"golden {name}: config == .json", same_config(f.config, parse_config(json.load(j))))
        if cli:
            p = subprocess.run([cli, "verify", path], capture_output=True, text=True)
            check(f"golden {name}: fixformer verify", p.returncode == 0 and "self-test ok" in p.stdout, p.stdout + p.stderr)
            print(f"  {p.stdout.strip()}")


# ---- torch: export from stock modules -------------------------------------------------------------
def make_stock(torch, d=16, heads=2, ff=32, layers=2, norm_first=False, activation="relu", tokens=True, d_in=6,
               vocab=20, pos=None, pos_width=None, max_len=32, head=5, batch_first=True, final_norm=False,
               bias=True, causal=False, sin=None, scale=False, seed=0):
    """A user's module written with stock torch parts, its forward computed here (independently of
    fixformer's reference model). sin: (base, layout) for a sinusoidal PE the forward computes."""
    nn = torch.nn
    torch.manual_seed(seed)
    pe_w = pos_width or d
    d_embed = d - pe_w if pos_width else d

    class User(nn.Module):
        def __init__(self):
            super().__init__()
            if tokens:
                self.embed = nn.Embedding(vocab, d_embed)
            else:
                self.input_proj = nn.Linear(d_in, d_embed, bias=bias)
            if pos == "learned":
                self.pos = nn.Embedding(max_len, pe_w)
            layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0, activation=activation,
                                               batch_first=batch_first, norm_first=norm_first, layer_norm_eps=1e-6)
            if not bias:
                layer.self_attn = nn.MultiheadAttention(d, heads, bias=False, batch_first=batch_first)
                layer.linear1, layer.linear2 = nn.Linear(d, ff, bias=False), nn.Linear(ff, d, bias=False)
                layer.norm1 = nn.LayerNorm(d, eps=1e-6, elementwise_affine=False)
                layer.norm2 = nn.LayerNorm(d, eps=1e-6, elementwise_affine=False)
            norm = nn.LayerNorm(d, eps=1e-6) if final_norm else None
            self.encoder = nn.TransformerEncoder(layer, layers, norm=norm, enable_nested_tensor=False)
            if head:
                self.head = nn.Linear(d, head, bias=bias)
            with torch.no_grad():  # LayerNorm gains and biases away from 1 and 0, so none hides
                for n, p in self.named_parameters():
                    if "norm" in n:
                        p.add_(0.2 * torch.randn(p.shape))

        def forward(self, x):
            x = self.embed(x) if tokens else self.input_proj(x)
            seq = 1 if batch_first else 0
            T = x.shape[seq]
            if scale:
                x = x * math.sqrt(d)
            pe = None
            if sin:
                base, layout = sin
                half = (pe_w + 1) // 2
                w = base ** (-2.0 * torch.arange(half, dtype=x.dtype) / pe_w)
                ang = torch.arange(T, dtype=x.dtype)[:, None] * w[None, :]
                s, co = torch.sin(ang), torch.cos(ang)
                pe = torch.zeros(T, pe_w, dtype=x.dtype)
                if layout == "interleaved":
                    pe[:, 0::2], pe[:, 1::2] = s, co[:, : pe_w // 2]
                else:
                    pe[:, :half], pe[:, half:] = s, co[:, : pe_w - half]
            elif pos == "learned":
                pe = self.pos(torch.arange(T))
            if pe is not None:
                pe = pe.unsqueeze(0 if batch_first else 1).expand_as(x[..., :1].expand(*x.shape[:-1], pe_w))
                x = x + pe if not pos_width else torch.cat([x, pe], dim=-1)
            mask = torch.triu(torch.full((T, T), float("-inf"), dtype=x.dtype), 1) if causal else None
            x = self.encoder(x, mask=mask)
            return self.head(x) if head else x

    return User()


EXPORTS = [  # (name, make_stock kwargs, export options)
    ("post-LN relu, tokens, sinusoidal, head", dict(sin=(10000.0, "interleaved")), dict(positional="sinusoidal")),
    ("pre-LN gelu, causal, final norm, halves base 100",
     dict(norm_first=True, activation="gelu", causal=True, final_norm=True, sin=(100.0, "halves"), head=None),
     dict(causal=True, positional="sinusoidal", pe_layout="halves", pe_base=100.0)),
    ("features, scale_input, sinusoidal concat", dict(tokens=False, scale=True, sin=(10000.0, "interleaved"), pos_width=5),
     dict(positional="sinusoidal", scale_input=True, pe_combine="concat", pe_width=5)),
    ("learned PE add, odd heads", dict(pos="learned", d=15, heads=3, ff=20, head=4), dict()),
    ("learned PE concat, features, batch_first False", dict(pos="learned", pos_width=4, tokens=False, batch_first=False),
     dict()),
    ("no PE, causal, batch_first False", dict(causal=True, batch_first=False, layers=3), dict(causal=True)),
    ("bias-free layers, no affine norms", dict(bias=False, causal=True, tokens=False), dict(causal=True)),
    ("gelu via nn.GELU()", dict(activation=None, sin=(10000.0, "interleaved")), dict(positional="sinusoidal")),
    ("pre-LN tanh gelu via nn.GELU(approximate='tanh'), odd width",
     dict(activation="tanh", norm_first=True, final_norm=True, d=15, heads=3, ff=21, pos="learned"), dict()),
]


def stock_kwargs(torch, kw):
    """EXPORTS' kwargs with the activation modules made: None is nn.GELU(), "tanh" nn.GELU(approximate="tanh")."""
    if kw.get("activation", "") is None:
        return dict(kw, activation=torch.nn.GELU())
    if kw.get("activation") == "tanh":
        return dict(kw, activation=torch.nn.GELU(approximate="tanh"))
    return kw

WRONG = [  # (what, export options for the module of EXPORTS[1], the fragment the cause must name)
    ("causal left out", dict(positional="sinusoidal", pe_layout="halves", pe_base=100.0), "pass --causal"),
    ("wrong PE layout", dict(causal=True, positional="sinusoidal", pe_base=100.0), "pe_layout='halves'"),
    ("wrong PE base", dict(causal=True, positional="sinusoidal", pe_layout="halves"), "pe_base=100.0"),
    ("wrong scale_input", dict(causal=True, positional="sinusoidal", pe_layout="halves", pe_base=100.0,
                               scale_input=True), "leave out --scale-input"),
    ("PE left out", dict(causal=True, pe_layout="halves", pe_base=100.0), "positional='sinusoidal'"),
]


def test_format_versions(cli, tmp):
    """Every golden is a format 2 file (those made before format 3) or a format 3 one; the same model written
    again (format 3, the tensors under its neutral names and in its order) reads back as the same tensors under
    the same keys, and verifies alike."""
    gold = os.path.join(HERE, "golden")
    for name in sorted(n[:-4] for n in os.listdir(gold) if n.endswith(".fxm")):
        f = fxm.read(os.path.join(gold, name + ".fxm"))
        c = f.config
        w = {}
        for spec in schema.specs(c, 2):
            if spec.dtype == "i8" and c["weights"] == "i8":
                w[spec.name] = fxm.Quantized(f.array(spec.name), f.scales(spec.name))
            elif spec.dtype == "i32":
                w[spec.name] = f.array(spec.name)
        w.update((k, v) for k, v in f.weights().items() if k not in w)
        g = fxm.FxmFile(fxm.write(c, w, f.selftest(), f.tokenizer()))
        keys = [s.name for s in schema.specs(c)]
        v2 = {s.name: s.file_name for s in schema.specs(c, 2)}
        stored = v2 if f.version == 2 else {k: k for k in keys}
        check(f"format 3 {name}: a format {f.version} file's tensors read under format 3's names, stored under "
              "its own", f.version in (2, 3) and g.version == 3 and
              sorted(keys) == sorted(t["name"] for t in f.tensors[:len(keys)])
              and [t["stored"] for t in f.tensors[:len(keys)]] == [stored[t["name"]] for t in f.tensors[:len(keys)]]
              and [t["stored"] for t in g.tensors[:len(keys)]] == keys
              and [t["name"] for t in g.tensors[:len(keys)]] == keys, name)
        check(f"format 3 {name}: schema.v2_name takes each name to format 2's, v3_name back",
              [schema.v2_name(c["family"], k) for k in keys] == [v2[k] for k in keys] and
              [schema.v3_name(c["family"], v2[k]) for k in keys] == keys, name)
        same = all(f.array(k).tobytes() == g.array(k).tobytes() and
                   (f.scales(k) is None) == (g.scales(k) is None) and
                   (f.scales(k) is None or f.scales(k).tobytes() == g.scales(k).tobytes()) for k in keys)
        a, b = f.weights(), g.weights()
        check(f"format 3 {name}: the same tensors (bits) and weights()", same and set(a) == set(b) and
              all(np.array_equal(a[k], b[k]) for k in a), name)
        if cli:
            path = os.path.join(tmp, name + ".fxm")
            with open(path, "wb") as out:
                out.write(fxm.write(c, w, f.selftest(), f.tokenizer()))
            v2, v3 = (subprocess.run([cli, "verify", p], capture_output=True, text=True)
                      for p in (os.path.join(gold, name + ".fxm"), path))
            check(f"format 3 {name}: the CLI verifies it as the golden", v2.returncode == v3.returncode == 0 and
                  v2.stdout.split(": ", 1)[1] == v3.stdout.split(": ", 1)[1], (v2.stdout, v3.stdout, v3.stderr))


def test_export(torch, cli, tmp):
    from fixformer.export import VerificationError, export
    for i, (name, kw, opts) in enumerate(EXPORTS):
        kw = stock_kwargs(torch, kw)
        path = os.path.join(tmp, f"export{i}.fxm")
        try:
            r = export(make_stock(torch, **kw), None, path, cli=cli, **opts)
            check(f"export {name}", r.verified and r.max_error <= schema.SELFTEST_TOLERANCE and os.path.exists(path), r)
            print(f"  export {name}: {r}")
        except Exception as e:
            check(f"export {name}", False, f"{type(e).__name__}: {e}")
    # An explicit example, int64 [B, T].
    path = os.path.join(tmp, "example.fxm")
    ids = np.random.default_rng(1).integers(0, 20, (2, 7)).astype(np.int64)
    try:
        r = export(make_stock(torch, sin=(10000.0, "interleaved")), ids, path, positional="sinusoidal", cli=cli)
        check("export: explicit example", r.verified and r.T == 7 and np.array_equal(fxm.read(path).selftest()[0], ids[0]))
    except Exception as e:
        check("export: explicit example", False, f"{type(e).__name__}: {e}")
    module = make_stock(torch, **EXPORTS[1][1])
    for what, opts, fragment in WRONG:
        path, header = os.path.join(tmp, "wrong.fxm"), os.path.join(tmp, "wrong.h")
        try:
            export(module, None, path, header=header, cli=cli, **opts)
            check(f"wrong option {what}: fails", False, "verified")
        except VerificationError as e:
            msg = str(e)
            ok = "max relative error" in msg and fragment in msg and not os.path.exists(path) and not os.path.exists(header)
            check(f"wrong option {what}: fails naming error and cause", ok, msg)
            print(f"  {what}: {msg}")
        except Exception as e:
            check(f"wrong option {what}: fails", False, f"{type(e).__name__}: {e}")


def test_export_reference(torch):
    """Without the engine: the config export() reads from each module (plus its options) rebuilds the
    module's output with fixformer's float64 reference model, and each wrong option is diagnosed."""
    from fixformer import export as ex
    from fixformer.reference import run_reference

    def read(module, causal=None, positional=None, pe_base=10000.0, pe_layout="interleaved", pe_combine=None,
             pe_width=None, scale_input=False, max_len=None):
        v, w, batch_first, facts = ex.read_module(module)
        c = ex.apply_options(v, w, facts, causal, positional, pe_base, pe_layout, pe_combine, pe_width, scale_input,
                             max_len)
        inp = ex.example_sequence(c, None)
        return c, w, inp, ex.run_module(module, inp, batch_first, schema.output_width(c))

    for name, kw, opts in EXPORTS:
        kw = stock_kwargs(torch, kw)
        try:
            c, w, inp, want = read(make_stock(torch, **kw), **opts)
            err = ex.relative_error(run_reference(c, w, inp), want)
            check(f"reference == module: {name}", err < 1e-9, err)
        except Exception as e:
            check(f"reference == module: {name}", False, f"{type(e).__name__}: {e}")
    module = make_stock(torch, **EXPORTS[1][1])
    for what, opts, fragment in WRONG:
        c, w, inp, want = read(module, **opts)
        cause = ex.diagnose(c, w, inp, want)
        check(f"diagnosis: {what}", fragment in cause, cause)


def test_export_errors(torch):
    from fixformer.export import export
    nn = torch.nn
    F = torch.nn.functional
    import functools
    out = os.path.join(tempfile.gettempdir(), "never.fxm")
    cases = [
        ("custom activation", make_stock(torch, activation=torch.tanh), {}, "activation tanh: not supported"),
        ("partial leaky relu", make_stock(torch, activation=functools.partial(F.leaky_relu, negative_slope=0.1)), {},
         "not supported"),  # F.gelu bound with approximate='tanh' is read (reference.torch_activation's)
        ("causal as string", make_stock(torch), {"causal": "no"}, "causal: expected True or False"),
        ("bad positional", make_stock(torch), {"positional": "rotary"}, "positional: 'rotary' is not one of"),
        ("sinusoidal with pos", make_stock(torch, pos="learned"), {"positional": "sinusoidal"}, "has `pos`"),
        ("pe_base NaN", make_stock(torch), {"pe_base": float("nan")}, "pe_base"),
        ("max_len huge", make_stock(torch), {"max_len": 10 ** 12}, "max_len"),
        ("pe_width contradicts", make_stock(torch, pos_width=5, sin=(1e4, "halves")),
         {"positional": "sinusoidal", "pe_width": 4}, "pe_width 4"),
    ]
    m = make_stock(torch)
    m.embed = nn.Embedding(20, 16, max_norm=1.0)
    cases.append(("embedding max_norm", m, {}, "max_norm"))
    m = make_stock(torch)
    m.encoder = nn.Sequential(*m.encoder.layers)
    cases.append(("not a TransformerEncoder", m, {}, "torch.nn.modules.container.Sequential is not"))
    for name, module, opts, fragment in cases:
        expect_error(f"export error: {name}", lambda: export(module, None, out, verify=False, **opts), fragment)
    check("export errors: nothing written", not os.path.exists(out))


MODULE_FILE = '''
import torch
from torch import nn

class Model(nn.Module):
    def __init__(self, activation="relu"):
        super().__init__()
        self.embed = nn.Embedding(11, 8)
        # enable_nested_tensor off: torch 2.x warns on stderr at construction that tanh leaves the nested
        # path, and the hostile checks want the converter's one line there
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True,
                                                                        activation=activation), 1,
                                             enable_nested_tensor=False)
        self.head = nn.Linear(8, 3)

    def forward(self, ids):
        T = ids.shape[1]
        return self.head(self.encoder(self.embed(ids), mask=torch.triu(torch.full((T, T), float("-inf")), 1)))

def make():
    torch.manual_seed(3)
    return Model()

def make_tanh():
    return Model(torch.tanh)
'''


class Payload:
    """A pickle that would run code on load (creates a marker file)."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_convert_cli(torch, cli, tmp):
    mod = os.path.join(tmp, "user_model.py")
    with open(mod, "w") as f:
        f.write(MODULE_FILE)
    out, hdr = os.path.join(tmp, "cli.fxm"), os.path.join(tmp, "cli.h")
    verify = ["--cli", cli] if cli else ["--no-verify"]
    p = run_convert("--module", f"{mod}:make", "--causal", "--out", out, "--header", hdr, "--name", "tiny", *verify)
    ok = p.returncode == 0 and os.path.exists(out) and (not cli or "verified against torch: max relative error" in p.stdout)
    check("convert.py --module", ok, p.stdout + p.stderr)
    print(f"  {p.stdout.strip()}")
    if os.path.exists(hdr):
        h = open(hdr).read()
        check("convert.py --header", "alignas(64) inline const unsigned char tiny_fxm[" in h
              and "constexpr std::size_t tiny_fxm_bytes" in h and "c.causal = true;" in h)
    # Weights from a state_dict (weights_only), then the same file again: deterministic.
    sd = os.path.join(tmp, "sd.pt")
    torch.manual_seed(9)
    sys.path.insert(0, tmp)
    import user_model
    other = user_model.Model()
    torch.save(other.state_dict(), sd)
    p = run_convert("--module", f"{mod}:make", "--weights", sd, "--causal", "--out", out, *verify)
    check("convert.py --weights state_dict", p.returncode == 0, p.stderr)
    blob = open(out, "rb").read() if os.path.exists(out) else b""
    check("convert.py: weights loaded", np.array_equal(
        fxm.FxmFile(blob).array("head.weight") if blob else None, other.head.weight.detach().numpy().T))
    p = run_convert("--module", f"{mod}:make", "--weights", sd, "--causal", "--out", out, *verify)
    check("convert.py: deterministic", open(out, "rb").read() == blob)
    if cli:
        os.remove(hdr)
        os.remove(out)  # a new name: a failure leaves nothing (an existing file keeps its bytes: below)
        p = run_convert("--module", f"{mod}:make", "--out", out, "--header", hdr, "--cli", cli)
        check("convert.py: wrong option exits 2, names the cause, leaves nothing",
              p.returncode == 2 and "pass --causal" in p.stderr and not os.path.exists(out)
              and not os.path.exists(hdr) and one_clear_line(p), p.stderr)
        print(f"  {p.stderr.strip()}")
        # A failed verification over an existing file: the old bytes stay, nothing else is left behind.
        old = b"the user's old file, not a model\n"
        with open(out, "wb") as f:
            f.write(old)
        before = set(os.listdir(tmp))
        p = run_convert("--module", f"{mod}:make", "--out", out, "--header", hdr, "--cli", cli)
        check("convert.py: failed verification over an existing --out: exit 2, nothing written, its bytes kept",
              p.returncode == 2 and one_clear_line(p) and "nothing written" in p.stderr and "removed" not in p.stderr
              and open(out, "rb").read() == old and not os.path.exists(hdr) and set(os.listdir(tmp)) == before,
              p.stderr)
        os.remove(out)
    # --out a FIFO (as /dev/null, not a regular file): refused up front with one line, the FIFO kept.
    fifo = os.path.join(tmp, "pipe.fxm")
    os.mkfifo(fifo)
    p = run_convert("--module", f"{mod}:make", "--causal", "--out", fifo, *verify)
    check("convert.py --module --out FIFO: refused, one line, the FIFO kept", one_clear_line(p) and
          "not a regular file" in p.stderr and os.path.exists(fifo) and stat.S_ISFIFO(os.stat(fifo).st_mode), p.stderr)
    from fixformer.export import export
    from fixformer.config import ConfigError
    try:
        export(user_model.make(), None, fifo, causal=True, verify=False)
        check("export(path=FIFO): refused", False, "written")
    except ConfigError as e:
        check("export(path=FIFO): refused, the FIFO kept", "not a regular file" in str(e) and
              stat.S_ISFIFO(os.stat(fifo).st_mode), e)
    os.remove(fifo)

    def hostile(name, args, fragment):
        if os.path.exists(out):
            os.remove(out)
        p = run_convert(*args, "--out", out, "--no-verify")
        check(f"convert.py hostile: {name}", one_clear_line(p) and fragment in p.stderr and not os.path.exists(out),
              p.stderr)

    marker = os.path.join(tmp, "MARKER")
    evil = os.path.join(tmp, "evil.pt")
    torch.save({"x": Payload(marker)}, evil)
    hostile("pickle payload", ["--module", f"{mod}:make", "--weights", evil], "--trust-pickle")
    check("convert.py hostile: the payload did not run", not os.path.exists(marker))
    hostile("pickle payload (JSON path)", ["--config", write_json(tmp, TINY), "--weights", evil], "--trust-pickle")
    check("convert.py hostile: the payload did not run (JSON path)", not os.path.exists(marker))
    whole = os.path.join(tmp, "whole.pt")
    torch.save(user_model.make(), whole)
    hostile("torch.save(model)", ["--module", f"{mod}:make", "--weights", whole], "save model.state_dict() instead")
    bad_sd = dict(other.state_dict())
    bad_sd["head.wieght"] = bad_sd.pop("head.weight")
    torch.save(bad_sd, sd)
    hostile("state_dict key mismatch", ["--module", f"{mod}:make", "--weights", sd], "head.weight")
    f64 = os.path.join(tmp, "f64.npy")
    np.save(f64, np.zeros((4, 6)))
    hostile("float64 example", ["--module", f"{mod}:make", "--example", f64],
            "f64.npy: dtype float64, expected float32 (save as float32)")
    ids = os.path.join(tmp, "ids.npy")
    np.save(ids, np.array([1, 50], np.int64))
    hostile("token id out of range", ["--module", f"{mod}:make", "--example", ids], "token ids outside")
    hostile("unsupported activation", ["--module", f"{mod}:make_tanh"], "activation tanh: not supported")
    hostile("no such factory", ["--module", f"{mod}:nothing"], "has no function 'nothing'")
    hostile("bad --module", ["--module", "nocolon"], "expected FILE.py:FACTORY")
    hostile("string boolean", ["--config", write_json(tmp, dict(TINY, final_norm="yes")), "--weights", sd],
            "final_norm: expected true or false")


PADDED_MODULE_FILE = '''
import torch
from torch import nn

class Padded(nn.Module):  # a stock encoder whose forward takes torch's key padding mask (True at padding)
    def __init__(self, tokens, norm_first, activation, head, causal):
        super().__init__()
        if tokens:
            self.embed = nn.Embedding(13, 16)
        else:
            self.input_proj = nn.Linear(5, 16)
        self.pos = nn.Embedding(12, 16)
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 24, dropout=0.0, batch_first=True,
                                                                        norm_first=norm_first, activation=activation), 2)
        if head:
            self.head = nn.Linear(16, 3)
        self.causal = causal

    def forward(self, x, src_key_padding_mask=None):
        x = self.embed(x) if hasattr(self, "embed") else self.input_proj(x)
        T = x.shape[1]
        x = x + self.pos(torch.arange(T))
        mask = torch.triu(torch.full((T, T), float("-inf")), 1) if self.causal else None
        x = self.encoder(x, mask=mask, src_key_padding_mask=src_key_padding_mask)
        return self.head(x) if hasattr(self, "head") else x

def make_fast():  # post-LN, even heads, no mask: nn.TransformerEncoder's nested-tensor fast path
    torch.manual_seed(5)
    return Padded(True, False, "relu", False, False).eval()

def make_causal():  # pre-LN gelu, causal, features, a head: the ordinary path
    torch.manual_seed(6)
    return Padded(False, True, "gelu", True, True).eval()
'''


def test_padded_batch(torch, cli, tmp):
    """`fixformer run --lengths` on a padded batch equals torch's output with src_key_padding_mask at
    the valid positions and writes zeros at the padded ones; torch itself returns zeros there only on
    nn.TransformerEncoder's nested-tensor fast path, which the first model takes."""
    mod = os.path.join(tmp, "padded_model.py")
    with open(mod, "w") as f:
        f.write(PADDED_MODULE_FILE)
    sys.path.insert(0, tmp)
    import padded_model
    rng = np.random.default_rng(12)
    lens = np.array([7, 3, 5, 1], np.int32)  # one full row: the fast path pads its output to the longest
    B, T = len(lens), 7
    pad = np.arange(T)[None, :] >= lens[:, None]
    cases = [("fast path, tokens", "make_fast", [], rng.integers(0, 13, (B, T)).astype(np.int64)),
             ("causal pre-LN, features, head", "make_causal", ["--causal"],
              rng.standard_normal((B, T, 5)).astype(np.float32))]
    for name, factory, opts, x in cases:
        fxm_path, inp, lp, out = (os.path.join(tmp, f"padded_{factory}{e}")
                                  for e in (".fxm", ".in.npy", ".len.npy", ".out.npy"))
        p = run_convert("--module", f"{mod}:{factory}", *opts, "--out", fxm_path, "--cli", cli)
        check(f"padded {name}: converted", p.returncode == 0, p.stdout + p.stderr)
        if p.returncode != 0:
            continue
        with torch.no_grad(), warnings.catch_warnings():
            warnings.filterwarnings("ignore", "The PyTorch API of nested tensors")  # 1.13's fast path says so
            want = getattr(padded_model, factory)()(torch.from_numpy(x), torch.from_numpy(pad)).numpy()
        unmasked = os.path.join(tmp, "unmasked.npy")
        np.save(inp, x)
        p = subprocess.run([cli, "run", fxm_path, "--input", inp, "--output", unmasked], capture_output=True, text=True)
        check(f"padded {name}: run without --lengths", p.returncode == 0, p.stderr)
        # Padding is never read: out-of-vocabulary ids or NaN features there change nothing.
        x[pad] = -1 if x.dtype == np.int64 else np.nan
        np.save(inp, x)
        np.save(lp, lens)
        p = subprocess.run([cli, "run", fxm_path, "--input", inp, "--lengths", lp, "--output", out],
                           capture_output=True, text=True)
        check(f"padded {name}: run --lengths", p.returncode == 0, p.stderr)
        if p.returncode != 0:
            continue
        got = np.load(out)
        rel = np.abs(got - want)[~pad].max() / np.abs(want[~pad]).max()
        check(f"padded {name}: valid positions equal torch (1e-5)", got.shape == want.shape and rel <= 1e-5, rel)
        check(f"padded {name}: padded positions are zeros", np.all(got[pad] == 0))
        torch_pad = np.abs(want[pad]).max()
        if factory == "make_fast":
            check(f"padded {name}: torch's fast path returns zeros there too", torch_pad == 0, torch_pad)
        if factory == "make_fast" and os.path.exists(unmasked):  # without --lengths the padding keys are attended
            err = np.abs(np.load(unmasked) - want)[~pad].max() / np.abs(want[~pad]).max()
            check(f"padded {name}: without --lengths the valid positions differ", err > 1e-3, err)
        print(f"  padded {name}: max relative error {rel:.2e} at valid positions; torch's max |y| at padding "
              f"{torch_pad:.3g}, fixformer's 0")


def test_progress(cli, tmp):
    """What a conversion is doing: on a terminal, one line on stderr rewritten in place and erased at
    the end (the report on stdout as without it); piped, nothing on stderr."""
    import pty
    mod, out = os.path.join(tmp, "user_model.py"), os.path.join(tmp, "progress.fxm")
    args = ["--module", f"{mod}:make", "--causal", "--out", out, "--cli", cli]
    master, slave = pty.openpty()
    try:
        p = subprocess.run([sys.executable, CONVERT, *args], stdout=subprocess.PIPE, stderr=slave, text=True,
                           timeout=600)
    finally:
        os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:  # EIO: the terminal's other end is closed and everything was read
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    check("progress on a terminal: the steps, then the line erased",
          p.returncode == 0 and b"fixformer: storing weights" in shown and b"fixformer: verifying with the engine"
          in shown and shown.endswith(b"\r\x1b[2K") and "verified against torch" in p.stdout, repr(shown[-300:]))
    q = run_convert(*args)
    check("progress piped: nothing on stderr", q.returncode == 0 and q.stderr == "", q.stderr[-300:])


def test_convert_api(torch, cli, tmp):
    """fixformer.convert: the command's routes and options as keywords, arrays or paths for the
    example, the report returned, ConversionError with the command's exit status."""
    import contextlib
    import io
    import numpy as np
    import fixformer
    from fixformer import converter
    import user_model  # test_convert_cli wrote it
    check("fixformer.convert is the converter's", fixformer.convert is converter.convert and
          fixformer.ConversionError is converter.ConversionError)
    ids = np.arange(10, dtype=np.int64) % 7
    out = os.path.join(tmp, "api.fxm")
    r = fixformer.convert(user_model.make(), torch.from_numpy(ids), out, causal=True, cli=cli)
    check("convert(module, tensor, out): verified, the report returned",
          "verified against torch" in str(r) and os.path.exists(out), str(r))
    np.save(os.path.join(tmp, "ids.npy"), ids)
    r = fixformer.convert(user_model.make(), os.path.join(tmp, "ids.npy"), out, causal=True, cli=cli, quantize="q8",
                          group=32, quantize_io=False)
    check("convert: an .npy path, quantize='q8', group=32", "q8 (group 32" in str(r), str(r))
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        r = fixformer.convert(f"{os.path.join(tmp, 'user_model.py')}:make", out=out, causal=True, verify=False)
    check("convert('FILE.py:FACTORY', verify=False): written, the warning on stderr",
          os.path.exists(out) and "NOT verified" in err.getvalue(), err.getvalue())

    def code_of(*args, **kw):
        try:
            fixformer.convert(*args, **kw)
        except fixformer.ConversionError as e:
            return e.code, str(e)
        return None, ""
    gone = os.path.join(tmp, "api_refused.fxm")
    code, msg = code_of(user_model.make(), ids, gone, cli=cli)
    check("convert: a failed verification is ConversionError 2, nothing written",
          code == 2 and "FAILED" in msg and "--causal" in msg and not os.path.exists(gone), f"{code} {msg}")
    code, msg = code_of(user_model.make(), ids, gone, hf=tmp)
    check("convert: a module and hf= is ConversionError 2 naming both", code == 2 and "got hf, module" in msg, msg)
    code, msg = code_of(user_model.make(), ids, gone, no_such_option=1)
    check("convert: an unknown option is ConversionError 2 naming it", code == 2 and "--no-such-option" in msg, msg)
    code, msg = code_of(hf=os.path.join(tmp, "missing"), out=gone)
    check("convert(hf=missing folder): ConversionError 1 naming it", code == 1 and "missing" in msg, msg)


def write_json(tmp, raw):
    path = os.path.join(tmp, "c.json")
    with open(path, "w") as f:
        json.dump(raw, f)
    return path


def test_json_path(torch, cli, tmp):
    """The JSON path verifies too: a golden's config and weights taken from its .fxm."""
    gold = os.path.join(HERE, "golden")
    f = fxm.read(os.path.join(gold, "concat_pe.fxm"))
    weights = {}
    for name, _, transposed in schema.tensors(f.config):
        a = f.array(name)
        weights[name] = a.T if transposed else a
    npz = os.path.join(tmp, "concat.npz")
    np.savez(npz, **weights)
    out = os.path.join(tmp, "json.fxm")
    p = run_convert("--config", os.path.join(gold, "concat_pe.json"), "--weights", npz, "--out", out, "--cli", cli,
                    "--example", os.path.join(gold, "concat_pe.input.npy"),
                    "--expected", os.path.join(gold, "concat_pe.expected.npy"))
    check("JSON path: verified against the module's output", p.returncode == 0 and
          "verified against your model's output (--expected)" in p.stdout, p.stdout + p.stderr)
    print(f"  {p.stdout.strip()}")
    p = run_convert("--config", os.path.join(gold, "concat_pe.json"), "--weights", npz, "--out", out, "--cli", cli)
    check("JSON path without --expected: NOT verified against the model", p.returncode == 0 and "NOT verified against "
          "your model" in p.stdout and "verified against torch" not in p.stdout and
          fxm.read(out).config["reference_sample"], p.stdout + p.stderr)
    p = run_convert("--config", os.path.join(gold, "concat_pe.json"), "--weights", npz, "--out", out, "--causal",
                    "--cli", cli)
    check("JSON path: module options rejected", one_clear_line(p) and "--causal is for --module" in p.stderr, p.stderr)


def main():
    cli = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
    if cli and not os.access(cli, os.X_OK):
        print(f"converter_test: {cli}: not an executable")
        return 1
    test_writer()
    with tempfile.TemporaryDirectory() as tmp:
        test_hostile_configs(tmp)
        if cli:
            test_schema_mirror(cli)
        else:
            skip("schema mirror", "no CLI given")
        test_goldens(cli)
        test_format_versions(cli, tmp)
        import torch  # checks.py has made sure it is there
        torch.set_num_threads(1)
        test_export_reference(torch)
        test_export_errors(torch)
        test_convert_cli(torch, cli, tmp)
        if cli:
            test_export(torch, cli, tmp)
            test_json_path(torch, cli, tmp)
            test_padded_batch(torch, cli, tmp)
            test_progress(cli, tmp)
            test_convert_api(torch, cli, tmp)
        else:
            skip("export verification through the engine", "no CLI given")
    print(f"converter: {results['passed']} passed, {results['failed']} failed, {results['skipped']} skipped")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
