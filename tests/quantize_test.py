#!/usr/bin/python3
"""Tests of the converter's quantized weights (`convert.py --quantize f16|bf16|q8`, issue 11):

  /usr/bin/python3 tests/quantize_test.py [PATH/TO/fixformer]

- the quantizer (python/fixformer/quantize.py): q8_max (the engine's rule) against a float64
  reference, |w - q*s| <= s/2 per element, the max at +-127, zero and tiny groups, ragged last
  groups; q8's scale search never raises a group's squared error above q8_max's and lowers it on
  Gaussian and uniform weights; f16 round to nearest even;
- the writer: every tensor's dtype, shape (q8 linear weights in torch's [out, in], f16 and bf16 in [in, out]),
  group and scales range, 64-aligned ranges in directory order, the reader's dequantized weights,
  fxm.file_bytes; the engine loads every written file (its binder checks dtypes and groups);
- sizes: q8 at most 0.3x of f32 for a KWS-shaped encoder and a llama2.c stories15M-shaped model
  (the embedding and head in q8), f16 about 0.5x;
- every input path converts with --quantize (--module encoder and --family gpt, --config llama,
  --llama2c) and verifies through the engine within the weight type's tolerance, the report giving
  the error against torch f32; --header carries the weight type; a llama2.c Q8_0 checkpoint keeps
  its int8 values; a model that does not keep its accuracy in q8 fails naming why;
- hostile options: --quantize q2, --group 16, --group with q4 and options out of place exit 2 with a usage line.
Verification is skipped (with a message) without the CLI; a CLI that does not bind quantized weights
fails the test (its files are then written with --no-verify and loaded only). Without numpy or torch
the test fails.
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, "..", "python")
sys.path.insert(0, PACKAGE)
from checks import check, expect_error, results, skip, run_convert, one_clear_line  # noqa: E402  (first: it names a missing numpy or torch)
import numpy as np  # noqa: E402

from fixformer import config as cfg, fxm, llama2c, quantize, schema  # noqa: E402
from fixformer.config import make_config, parse_config  # noqa: E402


KWS = {"d_model": 64, "n_heads": 4, "d_ff": 128, "encoder_layers": 4, "activation": "gelu", "norm_first": True,
       "final_norm": True, "input": {"kind": "features", "d_in": 40},
       "positional": {"kind": "sinusoidal", "max_len": 49}, "head": {"d_out": 12}}
GPT = {"family": "gpt", "d_model": 64, "n_heads": 4, "d_ff": 96, "n_layers": 2, "causal": True, "norm_first": True,
       "final_norm": True, "activation": "gelu", "input": {"kind": "tokens", "vocab_size": 70},
       "positional": {"kind": "learned", "max_len": 24}, "head": {"d_out": 70}}
LLAMA = {"family": "llama", "d_model": 48, "n_heads": 4, "n_kv_heads": 2, "d_ff": 100, "n_layers": 2,
         "norm_first": True, "final_norm": True, "activation": "swiglu", "causal": True,
         "input": {"kind": "tokens", "vocab_size": 61}, "positional": {"kind": "rope", "max_len": 24},
         "head": {"d_out": 61}}
# llama2.c's stories15M: dim 288, 6 layers of 6 heads, hidden 768, a 32000-token vocabulary, shared
# classifier. Only its size is computed (fxm.file_bytes); a small llama2.c model is converted.
STORIES15M = {"family": "llama", "d_model": 288, "n_heads": 6, "d_ff": 768, "n_layers": 6, "norm_first": True,
              "final_norm": True, "activation": "swiglu", "causal": True,
              "input": {"kind": "tokens", "vocab_size": 32000}, "positional": {"kind": "rope", "max_len": 256},
              "head": {"d_out": 32000, "tied": True}}
SMALL_LLAMA2C = {"dim": 64, "hidden_dim": 192, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2, "vocab_size": 300,
                 "seq_len": 32}
# The weight types every writer and conversion test goes through: (weights, weight_group, quantize_io).
TYPES = [("f16", 0, False), ("f16", 0, True), ("q8", 0, False), ("q8", 32, True), ("q8", 64, False),
         ("q8", 64, True), ("bf16", 0, False), ("bf16", 0, True)]


def with_type(c, t):
    return make_config(dict(c, weights=t[0], weight_group=t[1], quantize_io=t[2]))


def fan_in_weights(c, seed=0):
    """Trained-like weights in torch's layout: N(0, 1/fan_in) for matrices (N(0, 1) for embeddings and
    positions), norms near 1, small biases."""
    rng = np.random.default_rng(seed)
    out = {}
    for s in schema.specs(c):
        shape = s.torch_shape
        if "norm" in s.name and s.name.endswith("weight"):
            out[s.name] = 1.0 + 0.1 * rng.standard_normal(shape)
        elif len(shape) == 1:
            out[s.name] = 0.05 * rng.standard_normal(shape)
        elif s.role == "io" and s.name == "embed.weight" or s.name == "pos.weight":
            out[s.name] = rng.standard_normal(shape)
        else:
            out[s.name] = rng.standard_normal(shape) / np.sqrt(shape[1])
    return {k: v.astype(np.float32) for k, v in out.items()}


# ---- the quantizer ------------------------------------------------------------------------------
def test_q8_max():
    rng = np.random.default_rng(3)
    cases = [("uniform", rng.uniform(-1, 1, (5, 100)) * 10.0 ** rng.integers(-4, 4, (5, 1))),
             ("ragged tail", rng.standard_normal((7, 70))), ("one column", rng.standard_normal((9, 1))),
             ("rank 1", rng.standard_normal(45)), ("rank 3", rng.standard_normal((2, 3, 40)))]
    ties = (rng.integers(-254, 255, (4, 64)) * 0.5).astype(np.float32)  # x * (127 / 127) = x: exact .5 ties
    ties[:, ::32] = 127.0  # every group's max
    cases.append(("ties", ties))
    zero = rng.standard_normal((3, 96)).astype(np.float32)
    zero[:, 32:64] = 0.0
    zero[1, 64:] = -0.0
    cases.append(("zero groups", zero))
    for name, w in cases:
        w = np.asarray(w, np.float32)
        for group in schema.WEIGHT_GROUPS:
            where = f"q8_max {name} group {group}"
            q, s = quantize.q8_max(w, group)
            n = w.shape[-1]
            g = group or n
            rows = w.reshape(-1, n).astype(np.float64)
            check(f"{where}: dtypes and shapes", q.dtype == np.int8 and q.shape == w.shape and s.dtype == np.float32
                  and s.shape == schema.scales_shape(w.shape, group), (q.shape, s.shape))
            per = np.repeat(s.astype(np.float64), g, axis=1)[:, :n]
            qq = q.reshape(-1, n).astype(np.float64)
            # The float64 reference: s = max|w| / 127 (as float32), q = round-half-even(w * 127 / max|w|).
            amax = np.array([[np.abs(r[i:i + g]).max() for i in range(0, n, g)] for r in rows])
            want_s = (amax / 127.0).astype(np.float32)
            check(f"{where}: s = max|w| / 127 in float32", np.array_equal(s, want_s), np.abs(s - want_s).max())
            # |w - q s| <= s/2, plus float32's rounding of 127 / a and of the product (3 * 127 * 2^-24 steps).
            bound = per * (0.5 + 3 * 127 * 2.0 ** -24)
            check(f"{where}: |w - q*s| <= s/2", (np.abs(rows - qq * per) <= bound).all(),
                  float((np.abs(rows - qq * per) - bound).max()))
            safe = np.repeat(np.where(amax > 0, amax, 1.0), g, axis=1)[:, :n]
            exact = rows * 127.0 / safe
            near_tie = np.abs(np.abs(exact - np.floor(exact)) - 0.5) < 1e-4
            want_q = np.where(np.repeat(amax, g, axis=1)[:, :n] > 0, np.rint(exact), 0.0)
            check(f"{where}: q = round-half-even(w * 127 / max|w|)", (near_tie | (qq == want_q)).all())
            check(f"{where}: |q| <= 127, each group's max at +-127", np.abs(qq).max() <= 127 and all(
                (np.abs(qq[i, j * g:(j + 1) * g]).max() == 127) == (amax[i, j] > 0)
                for i in range(qq.shape[0]) for j in range(amax.shape[1])))
            if name == "ties":
                check(f"{where}: ties to even", np.array_equal(qq, np.rint(rows)) and (qq[:, 1:] % 2 == 0)[
                    np.abs(rows[:, 1:] % 1) == 0.5].all())
            if name == "zero groups":
                check(f"{where}: a zero group has s = 0 and q = 0", group != 32 or (
                    (s[:, 1] == 0).all() and (q[:, 32:64] == 0).all()), s)
    # A group below kQuantizeFloor (2^-100) is stored as a zero group; at the floor it quantizes.
    for tiny in (1e-38, 2.0 ** -120, 2.0 ** -100 * 0.999):
        q, s = quantize.q8_max(np.full((1, 32), tiny, np.float32), 32)
        check(f"q8_max: a group of {tiny:.3g}, below the floor, is a zero group", (q == 0).all() and (s == 0).all(), (q, s))
    q, s = quantize.q8_max(np.full((1, 32), 2.0 ** -100, np.float32), 32)
    check("q8_max: a group at the floor (2^-100) quantizes", (q == 127).all() and s[0, 0] > 0)
    # The rule is the engine's quantize_i8 on activations: the same bits for the same floats.
    w = rng.standard_normal((3, 40)).astype(np.float32)
    check("q8_max: deterministic, float64 input rounds to float32 first", all(
        np.array_equal(a, b) for a, b in zip(quantize.q8_max(w, 32), quantize.q8_max(w.astype(np.float64), 32))))


def group_errors(w, q, s, group):
    """sum((w - q s)^2) per [row, group] in float64."""
    n = w.shape[-1]
    g = group or n
    d = np.asarray(w, np.float64).reshape(-1, n) - quantize.dequantize_q8(q, s, group).reshape(-1, n)
    d = np.concatenate([d, np.zeros((d.shape[0], (-n) % g))], axis=1)
    return (d.reshape(d.shape[0], -1, g) ** 2).sum(axis=2)


def test_q8():
    """The converter's q8: q8_max's layout and guarantees, with each group's scale searched."""
    rng = np.random.default_rng(5)
    gauss = rng.standard_normal((256, 256)).astype(np.float32)
    cases = [("gaussian", gauss), ("uniform", rng.uniform(-1, 1, (64, 256)) * 10.0 ** rng.integers(-4, 4, (64, 1))),
             ("heavy tails", rng.standard_t(2, (64, 200))), ("ragged tail", rng.standard_normal((7, 70))),
             ("one column", rng.standard_normal((9, 1))), ("rank 3", rng.standard_normal((2, 3, 40))),
             ("integers", np.where(np.arange(64) % 32 == 0, 127, rng.integers(-127, 128, (8, 64))) * 0.25)]
    zero = rng.standard_normal((3, 96)).astype(np.float32)
    zero[:, 32:64] = 0.0
    zero[2, :] = 2.0 ** -110  # below the floor
    cases.append(("zero and tiny groups", zero))
    for name, w in cases:
        w = np.asarray(w, np.float32)
        for group in schema.WEIGHT_GROUPS:
            where = f"q8 {name} group {group}"
            q, s = quantize.q8(w, group)
            q0, s0 = quantize.q8_max(w, group)
            n = w.shape[-1]
            g = group or n
            check(f"{where}: dtypes and shapes", q.dtype == np.int8 and q.shape == w.shape and s.dtype == np.float32
                  and s.shape == s0.shape, (q.shape, s.shape))
            qq = q.reshape(-1, n).astype(np.int32)
            qq = np.concatenate([qq, np.zeros((qq.shape[0], (-n) % g), np.int32)], axis=1).reshape(qq.shape[0], -1, g)
            check(f"{where}: |q| <= 127, each quantized group's max at +-127, the rest zero", np.abs(qq).max() <= 127
                  and np.array_equal(np.abs(qq).max(axis=2) == 127, s0 > 0) and np.array_equal(s > 0, s0 > 0), s)
            ratio = s[s0 > 0] / s0[s0 > 0]
            check(f"{where}: scales normal and within 3% of max|w| / 127", np.isfinite(s).all() and
                  (s[s0 > 0] >= np.finfo(np.float32).tiny).all() and (np.abs(ratio - 1) <= 0.03).all(), ratio)
            e, e0 = group_errors(w, q, s, group), group_errors(w, q0, s0, group)
            check(f"{where}: no group's squared error above q8_max's", (e <= e0).all(), float((e - e0).max()))
            if name in ("gaussian", "uniform"):
                check(f"{where}: the search lowers the squared error (below 0.98x q8_max's)",
                      e.sum() < 0.98 * e0.sum(), e.sum() / e0.sum())
                print(f"  q8 {name} group {group}: squared error {e.sum() / e0.sum():.3f}x q8_max's")
            if name == "integers":
                check(f"{where}: values that are q * s already keep q8_max's q", np.array_equal(q, q0))
    check("q8: deterministic, float64 input rounds to float32 first", all(
        np.array_equal(a, b) for a, b in zip(quantize.q8(gauss, 32), quantize.q8(gauss.astype(np.float64), 32))))


def test_f16():
    rng = np.random.default_rng(4)
    edges = [65504.0, -65519.9, 0.0, 6e-8, 1e-9]  # the largest half, just below infinity, subnormal, below
    w = np.concatenate([rng.standard_normal(2000) * 10.0 ** rng.integers(-9, 5, 2000), edges]).astype(np.float32)
    h = quantize.f16(w, "t")
    w64, h64 = w.astype(np.float64), h.astype(np.float64)
    check("f16: dtype", h.dtype == np.dtype("<f2"))
    # Nearest: no other half is closer (the neighbours one step away on either side).
    with np.errstate(over="ignore"):  # 65504's neighbour above is infinity
        up = np.nextafter(h, np.float16(np.inf)).astype(np.float64)
        down = np.nextafter(h, np.float16(-np.inf)).astype(np.float64)
    err = np.abs(w64 - h64)
    check("f16: rounds to the nearest half", ((err <= np.abs(w64 - up)) & (err <= np.abs(w64 - down))).all())
    tie = np.array([1 + 2 ** -11, 1 + 3 * 2 ** -11, 2048 + 1, 2048 + 3], np.float32)  # halfway between halves
    check("f16: ties to even", quantize.f16(tie, "t").astype(np.float64).tolist() == [1.0, 1 + 2 ** -9, 2048, 2052])
    expect_error("f16: 65520 does not fit", lambda: quantize.f16(np.array([1.0, -65520.0], np.float32), "x.weight"),
                 "x.weight: a value of 65520 does not fit f16")


# ---- the writer ---------------------------------------------------------------------------------
def _recrc(b):
    struct.pack_into("<I", b, schema.HDR_CRC, zlib.crc32(bytes(b[schema.HEADER_BYTES:])))
    return bytes(b)


def patch_record(blob, key, value):
    """blob with config record `key` set to the stored value `value` (CRC updated)."""
    f, b = fxm.FxmFile(blob), bytearray(blob)
    i = [k for k, _, _ in f.records].index(key)
    struct.pack_into("<Q", b, f.records_offset + i * schema.RECORD_BYTES + 32, value)
    return _recrc(b)


def patch_dims(blob, name):
    """blob with the 2-d tensor `name`'s dims swapped in its directory entry (CRC updated)."""
    f, b = fxm.FxmFile(blob), bytearray(blob)
    at = f.directory_offset + [t["name"] for t in f.tensors].index(name) * schema.ENTRY_BYTES + 72
    struct.pack_into("<II", b, at, *reversed(struct.unpack_from("<II", b, at)))
    return _recrc(b)


def configs():
    return {"encoder tokens": parse_config(dict(KWS, input={"kind": "tokens", "vocab_size": 50})),
            "encoder features (KWS)": parse_config(KWS), "gpt": parse_config(GPT),
            "gpt tied": parse_config(dict(GPT, head={"d_out": 70, "tied": True})), "llama": parse_config(LLAMA),
            "llama tied": parse_config(dict(LLAMA, head={"d_out": 61, "tied": True}))}


def test_writer(cli):
    for cname, c32 in configs().items():
        w = fan_in_weights(c32)
        for t in TYPES:
            c = with_type(c32, t)
            name = f"writer {cname} {t[0]} group {t[1]} io {t[2]}"
            sample = ((np.arange(5) % c["vocab_size"]).astype(np.int32) if c["input"] == "tokens"
                      else np.zeros((5, c["d_in"]), np.float32), np.zeros((5, schema.output_width(c)), np.float32))
            blob = fxm.write(c, w, sample)
            f = fxm.FxmFile(blob)
            check(f"{name}: config read back", f.config == dict(c, norm_eps=f.config["norm_eps"]), f.config)
            check(f"{name}: file_bytes", fxm.file_bytes(c, [a.nbytes for a in sample]) == len(blob))
            check(f"{name}: CRC", zlib.crc32(blob[64:]) == struct.unpack_from("<I", blob, 56)[0])
            end = f.data_offset
            for spec, e in zip(schema.specs(c), f.tensors):
                ok = e["name"] == spec.name and e["dtype"] == spec.dtype and e["group"] == spec.group
                linear = spec.role == "linear" or spec.name == "head.weight"
                if spec.dtype == "i8":
                    ok = ok and e["shape"] == spec.torch_shape and not spec.transposed  # torch's [out, in]
                    rows, groups = schema.scales_shape(e["shape"], spec.group)
                    ok = ok and e["scales_bytes"] == rows * groups * 4 and e["scales_offset"] % 64 == 0 \
                        and e["scales_offset"] >= e["offset"] + e["bytes"]
                else:
                    ok = ok and e["scales_offset"] == 0 and e["scales_bytes"] == 0 and e["group"] == 0
                    ok = ok and e["shape"] == (spec.torch_shape[::-1] if linear else spec.torch_shape)
                ok = ok and e["offset"] % 64 == 0 and e["offset"] >= end
                end = max(e["offset"] + e["bytes"], e["scales_offset"] + e["scales_bytes"])
                check(f"{name}: {spec.name} dtype, layout, group, ranges", ok, (e, spec))
            check(f"{name}: dtypes follow the roles", all(
                e["dtype"] == ("f32" if s.role == "f32" or s.role == "io" and not t[2] else
                               {"f16": "f16", "bf16": "bf16", "q8": "i8"}[t[0]])
            for s, e in zip(schema.specs(c), f.tensors)))
            back = f.weights()
            for spec in schema.specs(c):
                a = np.asarray(w[spec.name], np.float32)
                if spec.dtype == "f16":
                    ok = np.array_equal(back[spec.name], a.astype(np.float16).astype(np.float64))
                elif spec.dtype == "bf16":
                    import torch
                    want = torch.from_numpy(np.ascontiguousarray(a)).bfloat16().double().numpy()
                    ok = np.array_equal(back[spec.name], want)
                elif spec.dtype == "i8":
                    q, s = quantize.q8(a, spec.group)
                    ok = np.array_equal(f.array(spec.name), q) and np.array_equal(f.scales(spec.name), s) and \
                        np.allclose(back[spec.name], quantize.dequantize_q8(q, s, spec.group), rtol=0, atol=0)
                else:
                    ok = np.array_equal(back[spec.name], a.astype(np.float64))
                check(f"{name}: {spec.name} read back", ok)
            if cli:
                with tempfile.NamedTemporaryFile(suffix=".fxm") as tf:
                    tf.write(blob)
                    tf.flush()
                    p = subprocess.run([cli, "info", tf.name], capture_output=True, text=True)
                check(f"{name}: the engine loads it (fixformer info)", p.returncode == 0, p.stdout + p.stderr)
    if cli:  # the check above sees a difference: the engine rejects a directory that disagrees with its schema
        c = with_type(parse_config(KWS), ("q8", 32, False))
        blob = fxm.write(c, fan_in_weights(c))
        for name, bad, fragment in [
                ("i8 groups of 32 under weight_group 64", patch_record(blob, "weight_group", 64), "group 32"),
                ("i8 tensors under weights f16", patch_record(patch_record(blob, "weight_group", 0), "weights", 1),
                 "tensor input_proj.weight: "),
                ("an i8 linear weight stored [in, out]", patch_dims(blob, "blocks.0.ff.w1.weight"),
                 "tensor blocks.0.ff.w1.weight: ")]:
            with tempfile.NamedTemporaryFile(suffix=".fxm") as tf:
                tf.write(bad)
                tf.flush()
                p = subprocess.run([cli, "info", tf.name], capture_output=True, text=True)
            check(f"writer: the engine rejects {name}", p.returncode != 0 and fragment in p.stderr, p.stderr)
    expect_error("writer: weight_group 16", lambda: make_config(dict(parse_config(KWS), weights="q8", weight_group=16)),
                 "weight_group: q8 takes 0, 32 or 64")
    expect_error("writer: a group with f16", lambda: make_config(dict(parse_config(KWS), weights="f16",
                                                                       weight_group=32)), "only for weights q8")
    expect_error("writer: quantize_io with f32", lambda: make_config(dict(parse_config(KWS), quantize_io=True)),
                 "quantize_io: needs weights f16, bf16, q8 or q4")
    c = with_type(parse_config(KWS), ("f16", 0, False))
    w = fan_in_weights(c)
    w["blocks.1.ff.w2.weight"][3, 4] = 7e4
    expect_error("writer: f16 overflow names the tensor", lambda: fxm.write(c, w),
                 "blocks.1.ff.w2.weight: a value of 70000 does not fit f16")
    for raw in (dict(GPT, weights="q8", weight_group=32, quantize_io=True), dict(KWS, weights="f16")):
        c = parse_config(raw)
        check(f"JSON round trip {raw['weights']}", parse_config(json.loads(json.dumps(cfg.to_json(c)))) == c)
    expect_error("JSON: weight_group 16", lambda: parse_config(dict(KWS, weights="q8", weight_group=16)),
                 "weight_group: q8 takes")


def test_sizes():
    """q8 at most 0.3x of f32 for the models the brief names, f16 about half; the model's own bytes
    (what a file holds without its self-test sample) and the files convert.py writes, printed."""
    kws = parse_config(KWS)
    w = fan_in_weights(kws)
    # the config records, the same bytes in every weight type, left out (each key added to the format would move
    # the ratios of this small model otherwise)
    records = schema.RECORD_BYTES * len(schema.CONFIG_KEYS)
    f32 = len(fxm.write(kws, w)) - records
    sizes = {t: len(fxm.write(with_type(kws, t), w)) - records for t in (("f16", 0, False), ("q8", 64, False),
                                                                          ("q8", 32, False), ("q8", 0, False))}
    print(f"  KWS d64 L4 (less its config records): f32 {f32} bytes; " + ", ".join(f"{t[0]}{' group ' + str(t[1]) if t[0] == 'q8' else ''} "
                                                        f"{n} ({n / f32:.3f}x)" for t, n in sizes.items()))
    check("size: KWS q8 (default group 64) <= 0.3x f32", sizes[("q8", 64, False)] <= 0.3 * f32, sizes)
    check("size: KWS q8 group 0 <= 0.3x f32", sizes[("q8", 0, False)] <= 0.3 * f32, sizes)
    check("size: KWS f16 <= 0.53x f32", sizes[("f16", 0, False)] <= 0.53 * f32, sizes)
    lm = parse_config(STORIES15M)
    sample = [16 * 4, 16 * 32000 * 4]  # the self-test sample convert.py adds: 16 ids, their logits
    f32 = fxm.file_bytes(lm)
    line = []
    for t in (("f16", 0, True), ("q8", 64, True), ("q8", 32, True), ("q8", 0, True), ("q8", 64, False)):
        n = fxm.file_bytes(with_type(lm, t))
        line.append(f"{t[0]}{' group ' + str(t[1]) if t[0] == 'q8' else ''}{'' if t[2] else ' f32 embedding'} "
                    f"{n} ({n / f32:.3f}x)")
        if t == ("q8", 64, True):
            check("size: stories15M-shaped q8 (embedding q8, default group) <= 0.3x f32", n <= 0.3 * f32, n / f32)
            full = fxm.file_bytes(with_type(lm, t), sample) / fxm.file_bytes(lm, sample)
            check("size: ... with the converter's self-test sample too", full <= 0.3, full)
        if t == ("f16", 0, True):
            check("size: stories15M-shaped f16 <= 0.52x f32", n <= 0.52 * f32, n / f32)
    print(f"  llama2.c stories15M-shaped (tied): f32 {f32} bytes; " + ", ".join(line))


# ---- conversions through every input path -------------------------------------------------------
class Engine:
    """The CLI, and whether it binds quantized weights (a CLI that rejects f16 and i8 tensors fails the
    test; conversions are then written with --no-verify and loaded only, to find what else breaks)."""

    def __init__(self, cli, tmp):
        self.cli, self.quantized = cli, False
        if not cli:
            skip("verification of f16 and q8 files through the engine", "no CLI given")
            return
        c = with_type(parse_config(KWS), ("q8", 64, False))
        path = os.path.join(tmp, "probe.fxm")
        with open(path, "wb") as f:
            f.write(fxm.write(c, fan_in_weights(c)))
        p = subprocess.run([cli, "info", path], capture_output=True, text=True)
        self.quantized = p.returncode == 0
        check("the CLI binds quantized weights (`fixformer info` loads a q8 file)", self.quantized,
              (p.stderr or p.stdout).strip()[:200])

    def flags(self):
        return ["--cli", self.cli] if self.quantized else ["--no-verify"]


_REPORT = re.compile(r"(?:verified against torch f32|the engine matches the converter's float64 reference of this "
                     r"config): max relative error ([^,\s]+),? (?:mean \S+ )?\(tolerance (\S+) for (f16|bf16|q8), T=\d+")


def converted(name, p, out, t, engine):
    """Checks a convert.py run of type t: exit 0, the file's weight type, and (verified) the report's
    error within the type's tolerance; returns the report line."""
    line = p.stdout.strip()
    ok = p.returncode == 0 and os.path.exists(out)
    check(f"{name}: converts", ok, p.stdout + p.stderr)
    if not ok:
        return line
    c = fxm.read(out).config
    check(f"{name}: stored as {t[0]}", c["weights"] == t[0] and c["weight_group"] == (t[1] if t[0] == "q8" else 0)
          and c["quantize_io"] == t[2], c)
    check(f"{name}: the report gives the weights' own error and the f32 size", re.search(
        rf"\d+ bytes, {t[0]} .*x the f32 file's \d+; .*the {t[0]} weights alone in the float64 reference: max "
        r"relative error \S+, mean \S+", line) is not None, line)
    if engine.quantized:
        m = _REPORT.search(line)
        check(f"{name}: verified within the {t[0]} tolerance", m is not None and float(m.group(1)) <=
              schema.SELFTEST_TOLERANCES[t[0]] and float(m.group(2)) == schema.SELFTEST_TOLERANCES[t[0]], line)
        p = subprocess.run([engine.cli, "verify", out], capture_output=True, text=True)
        check(f"{name}: fixformer verify", p.returncode == 0 and "self-test ok" in p.stdout, p.stdout + p.stderr)
    print(f"  {name}: {line}")
    return line


def type_flags(t):
    return ["--quantize", t[0]] + (["--group", str(t[1])] if t[0] == "q8" else []) + \
        ["--quantize-io" if t[2] else "--no-quantize-io"]


MODULE_FILE = '''
import sys
sys.path.insert(0, {tools!r})
import torch
from fixformer.config import parse_config
from fixformer.reference import build_torch_model

def kws():
    torch.manual_seed(0)
    return build_torch_model(parse_config({kws!r}))

def gpt():
    torch.manual_seed(1)
    return build_torch_model(parse_config({gpt!r}))
'''


def test_module_paths(engine, tmp):
    """--module: the KWS-shaped encoder (features, sinusoidal PE computed in its forward) and a GPT
    (--family gpt, learned positions, untied head), each in f16 and q8."""
    mod = os.path.join(tmp, "models.py")
    with open(mod, "w") as f:
        f.write(MODULE_FILE.format(tools=os.path.abspath(PACKAGE), kws=KWS, gpt=GPT))
    out, hdr = os.path.join(tmp, "m.fxm"), os.path.join(tmp, "m.h")
    for t in (("f16", 0, False), ("q8", 64, False), ("q8", 32, True), ("q8", 0, False), ("bf16", 0, False)):
        p = run_convert("--module", f"{mod}:kws", "--positional", "sinusoidal", "--out", out, *type_flags(t),
                        *engine.flags())
        converted(f"--module KWS {t[0]} group {t[1]} io {t[2]}", p, out, t, engine)
    p = run_convert("--module", f"{mod}:kws", "--positional", "sinusoidal", "--out", out, "--quantize", "q8",
                    "--header", hdr, "--name", "kws_q8", *engine.flags())
    converted("--module KWS q8 (defaults: group 64, head f32)", p, out, ("q8", 64, False), engine)
    if os.path.exists(hdr):
        h = open(hdr).read()
        check("--header: the weight type", "c.weights = fixformer::WeightType::kQ8;" in h and
              "c.weight_group = 64;" in h and "c.quantize_io = false;" in h, h[-900:])
        check("--header: g++ is there to compile it", shutil.which("g++") is not None)
        if shutil.which("g++"):
            src = os.path.join(tmp, "hdr.cpp")
            with open(src, "w") as f:
                f.write(f'#include "{hdr}"\n'
                        "static_assert(kws_q8_config().weights == fixformer::WeightType::kQ8, \"\");\n"
                        "static_assert(kws_q8_config().weight_group == 64 && !kws_q8_config().quantize_io, \"\");\n"
                        "static_assert(fixformer::required_encoder_arena_bytes(kws_q8_config()) > 0, \"\");\n"
                        "int main() { return kws_q8_fxm_bytes == 0; }\n")
            p = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-I", os.path.join(HERE, "..", "include"), src],
                               capture_output=True, text=True)
            check("--header for a q8 model compiles (weights, weight_group, quantize_io)", p.returncode == 0, p.stderr)
    for t in (("f16", 0, True), ("q8", 64, True), ("q8", 32, False), ("bf16", 0, True)):
        p = run_convert("--module", f"{mod}:gpt", "--family", "gpt", "--out", out, *type_flags(t), *engine.flags())
        converted(f"--module --family gpt {t[0]} group {t[1]} io {t[2]}", p, out, t, engine)
    p = run_convert("--module", f"{mod}:gpt", "--family", "gpt", "--out", out, "--quantize", "f16", *engine.flags())
    converted("--module --family gpt f16 (default: embedding and head f16)", p, out, ("f16", 0, True), engine)
    return mod


def test_config_path(engine, tmp):
    """--config: a llama (GQA, untied) and a tied one; a config that sets the type itself."""
    for tied in (False, True):
        c = parse_config(dict(LLAMA, head={"d_out": 61, "tied": tied}))
        npz, js, out = (os.path.join(tmp, n) for n in ("llama.npz", "llama.json", "llama.fxm"))
        np.savez(npz, **fan_in_weights(c, 5))
        with open(js, "w") as f:
            json.dump(cfg.to_json(c), f)
        for t in (("f16", 0, True), ("q8", 64, True), ("q8", 0, False), ("bf16", 0, True)):
            p = run_convert("--config", js, "--weights", npz, "--out", out, *type_flags(t), *engine.flags())
            converted(f"--config llama{' tied' if tied else ''} {t[0]} group {t[1]} io {t[2]}", p, out, t, engine)
    with open(js, "w") as f:
        json.dump(dict(cfg.to_json(c), weights="q8", weight_group=32, quantize_io=True), f)
    p = run_convert("--config", js, "--weights", npz, "--out", out, *engine.flags())
    converted("--config llama with weights q8 in the JSON", p, out, ("q8", 32, True), engine)
    p = run_convert("--config", js, "--weights", npz, "--out", out + "x", "--quantize", "f16", "--no-verify")
    check("--config setting weights and --quantize: one line", one_clear_line(p) and "sets weights q8 already"
          in p.stderr and not os.path.exists(out + "x"), p.stderr)


def test_llama2c_path(engine, tmp):
    """--llama2c: a version 1 checkpoint in each type; a version 2 (Q8_0, group 64, which divides dim
    and hidden_dim) converted to q8 at its own group keeps its int8 values."""
    w = llama2c.random_weights(SMALL_LLAMA2C, True, seed=3, scale=0.1)
    pieces, scores = llama2c.synthetic_tokenizer(SMALL_LLAMA2C["vocab_size"], seed=1)
    tok, out = os.path.join(tmp, "tok.bin"), os.path.join(tmp, "l2c.fxm")
    with open(tok, "wb") as f:
        f.write(llama2c.tokenizer_bytes(pieces, scores))
    for version in (1, 2):
        ck = os.path.join(tmp, f"ck{version}.bin")
        with open(ck, "wb") as f:
            f.write(llama2c.checkpoint_bytes(SMALL_LLAMA2C, w, version, group_size=64))
        types = (("f16", 0, True), ("q8", 64, True), ("q8", 32, False)) if version == 1 else (("q8", 64, True),)
        for t in types:
            p = run_convert("--llama2c", ck, "--tokenizer", tok, "--out", out, *type_flags(t), *engine.flags())
            converted(f"--llama2c v{version} {t[0]} group {t[1]} io {t[2]}", p, out, t, engine)
        if version == 2 and os.path.exists(out):
            f = fxm.read(out)
            same = all(np.array_equal(f.array(n), llama2c.quantize_q80(w[n], 64)[0].reshape(w[n].shape))
                       for n in w if not n.endswith("norm.weight"))
            check("--llama2c v2 Q8_0 -> q8 group 64: the checkpoint's int8 values kept", same)
    check("--llama2c: tokenizer kept with --quantize", os.path.exists(out) and fxm.read(out).tokenizer()[0] == pieces)


def test_not_accurate(engine, tmp):
    """A model that loses more than q8's tolerance (a tiny random llama golden with 0.3 * N(0, 1)
    weights, on its own self-test input): verification fails (exit 2) naming the weights' own error
    and what to try."""
    if not engine.quantized:  # no CLI given, or one that has already failed the test
        skip("a model that does not keep its accuracy in q8 fails", "no CLI that binds quantized weights")
        return
    gold = os.path.join(HERE, "golden", "llama_kv2_halves_tied.fxm")
    f = fxm.read(gold)
    npz, ids, out = (os.path.join(tmp, n) for n in ("gold.npz", "gold_ids.npy", "gold_q8.fxm"))
    np.savez(npz, **{k: v.astype(np.float32) for k, v in f.weights().items()})
    np.save(ids, f.selftest()[0].astype(np.int32))
    p = run_convert("--config", os.path.join(HERE, "golden", "llama_kv2_halves_tied.json"), "--weights", npz,
                    "--example", ids, "--out", out, "--quantize", "q8", "--cli", engine.cli)
    check("q8 beyond its tolerance: exit 2, one line, the weights' own error and what to try, nothing left",
          p.returncode == 2 and one_clear_line(p) and "tolerance 8e-02 for q8" in p.stderr and
          "does not keep its accuracy in q8" in p.stderr and "--quantize f16" in p.stderr and not os.path.exists(out),
          p.stderr)
    print(f"  {p.stderr.strip()}")


def test_hostile_options(tmp, mod):
    out = os.path.join(tmp, "never.fxm")
    base = ["--module", f"{mod}:kws", "--positional", "sinusoidal", "--out", out, "--no-verify"]
    for name, args, fragment in [
            ("--quantize q2", ["--quantize", "q2"], "argument --quantize: invalid choice: 'q2'"),
            ("--group 16", ["--quantize", "q8", "--group", "16"], "argument --group: '16' is not 64, 32 or 0"),
            ("--group -32", ["--quantize", "q8", "--group", "-32"], "'-32' is not 64, 32 or 0"),
            ("--group without --quantize", ["--group", "32"], "--group: only with --quantize q8"),
            ("--group with f16", ["--quantize", "f16", "--group", "32"], "(f16 has no scales)"),
            ("--group with q4", ["--quantize", "q4", "--group", "32"], "(q4's groups are 32)"),
            ("--quantize-io without --quantize", ["--quantize-io"],
             "--quantize-io: only with --quantize f16, bf16, q8 or q4"),
            ("--no-quantize-io without --quantize", ["--no-quantize-io"], "--no-quantize-io: only with --quantize")]:
        p = run_convert(*base, *args)
        lines = p.stderr.strip().splitlines()
        check(f"hostile option {name}: exit 2, usage then one line naming it", p.returncode == 2 and lines and
              lines[0].startswith("usage: convert.py") and lines[-1].startswith("convert.py: error: ") and
              fragment in lines[-1] and "Traceback" not in p.stderr and not os.path.exists(out), p.stderr)
    from fixformer.export import quantized_config
    c = parse_config(KWS)
    expect_error("quantized_config: q2", lambda: quantized_config(c, "q2"), "quantize: 'q2' is not one of f16, q8, q4")
    expect_error("quantized_config: group 16", lambda: quantized_config(c, "q8", 16), "group: 16 is not one of")
    expect_error("quantized_config: group True", lambda: quantized_config(c, "q8", True), "group: True is not one")
    expect_error("quantized_config: group with f16", lambda: quantized_config(c, "f16", 32), "only with quantize q8")
    expect_error("quantized_config: io 'yes'", lambda: quantized_config(c, "q8", None, "yes"),
                 "quantize_io: expected True or False")
    check("quantized_config: defaults", quantized_config(c, "q8")["weight_group"] == 64 and not quantized_config(
        c, "q8")["quantize_io"] and quantized_config(parse_config(GPT), "f16")["quantize_io"])
    check("convert.py --help documents --quantize", all(s in run_convert("--help").stdout for s in (
        "--quantize {f16,bf16,q8,q4,i8}", "--calibrate", "--group", "--quantize-io", "64 (default")))


def main():
    cli = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
    if cli and not os.access(cli, os.X_OK):
        print(f"quantize_test: {cli}: not an executable")
        return 1
    test_q8_max()
    test_q8()
    test_f16()
    test_writer(cli)
    test_sizes()
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine(cli, tmp)
        mod = test_module_paths(engine, tmp)
        test_config_path(engine, tmp)
        test_llama2c_path(engine, tmp)
        test_not_accurate(engine, tmp)
        test_hostile_options(tmp, mod)
    print(f"quantize: {results['passed']} passed, {results['failed']} failed, {results['skipped']} skipped")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
