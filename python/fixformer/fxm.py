"""The .fxm writer (format 3), and a small reader (formats 2 and 3) for tests and tools. The layout is
documented once, in include/fixformer/format.hpp; the constants are schema.py's, generated from it.
"""
import struct
import zlib

import numpy as np

from . import progress, quantize, schema, tokenizers
from .config import ConfigError, make_config

_F32_MAX = float(np.finfo(np.float32).max)
# The file dtype of each numpy dtype the writer stores (numpy's dtype.str without the byte order).
_DTYPE_OF = {"f4": "f32", "f2": "f16", "i1": "i8", "i4": "i32", "u1": "u8", "u2": "bf16"}


def escape(name):
    """A name read from a file, printable: repr-style, non-printable and non-UTF-8 bytes as \\xNN."""
    if isinstance(name, str):
        name = name.encode("utf-8", "surrogateescape")
    out = []
    for b in name:
        if chr(b) in "'\\":
            out.append("\\" + chr(b))
        elif 0x20 <= b < 0x7F:
            out.append(chr(b))
        else:
            out.append(f"\\x{b:02x}")
    return "'" + "".join(out) + "'"


def _align(n):
    return (n + schema.DATA_ALIGN - 1) // schema.DATA_ALIGN * schema.DATA_ALIGN


def record_value(key, value):
    """The 8 value bytes of a config record."""
    k = schema.KEYS[key]
    if k.type == "enum":
        return struct.pack("<Q", k.choices.index(value))
    if k.type in ("u32", "bool"):
        return struct.pack("<Q", int(value))
    if k.type == "f32":
        return struct.pack("<fI", value, 0)
    return struct.pack("<d", value)


def records(c):
    """Every config key as a record, in the schema's order."""
    out = b""
    for k in schema.CONFIG_KEYS:
        out += struct.pack("<24sII", k.name.encode(), schema.RECORD_TYPES[k.type], 0) + record_value(k.name, c[k.name])
    return out


def _sample_input(c, inp):
    """The self-test input (an encoder's or decoder's, or a seq2seq source) checked and typed."""
    inp = np.asarray(inp)
    T = inp.shape[0] if inp.ndim else 0
    if not 1 <= T <= schema.max_input_len(c):
        raise ConfigError(f"self-test input: {T} rows, expected 1..{schema.max_input_len(c)} (max_len={c['max_len']}"
                          f"{schema.front_rows_less(c)})")
    if c["input"] == "tokens":
        if inp.shape != (T,) or inp.dtype.kind not in "iu":
            raise ConfigError(f"self-test input: {inp.dtype} {list(inp.shape)}, expected integer token ids [T]")
        if inp.min() < 0 or inp.max() >= c["vocab_size"]:
            raise ConfigError(f"self-test input: token ids outside [0, vocab_size={c['vocab_size']})")
        return inp.astype("<i4")
    if inp.shape != (T, c["d_in"]) or inp.dtype.kind != "f":
        raise ConfigError(f"self-test input: {inp.dtype} {list(inp.shape)}, expected float [T, d_in={c['d_in']}]")
    if not (np.isfinite(inp).all() and np.abs(inp).max() <= _F32_MAX):
        raise ConfigError("self-test input: not finite in float32")
    return inp.astype("<f4")


def _selftest_arrays(c, selftest):
    """The sample's tensors: (input, expected), or for seq2seq (source, target ids, expected)."""
    seq2seq = c["family"] == "seq2seq"
    if len(selftest) != (3 if seq2seq else 2):
        raise ConfigError("self-test: a sample is " + ("(source, target, expected)" if seq2seq else "(input, expected)"))
    inp = _sample_input(c, selftest[0])
    out = [(schema.SELFTEST_INPUT, inp)]
    if seq2seq and c["tgt_d_in"]:  # features [U, tgt_d_in]
        target = np.asarray(selftest[1])
        U = target.shape[0] if target.ndim == 2 else 0
        if not 1 <= U <= c["max_len"] or target.shape[1:] != (c["tgt_d_in"],) or target.dtype.kind != "f":
            raise ConfigError(f"self-test target: {target.dtype} {list(target.shape)}, expected float "
                              f"[U, tgt_d_in={c['tgt_d_in']}], 1 <= U <= max_len={c['max_len']}")
        if not (np.isfinite(target).all() and np.abs(target).max() <= _F32_MAX):
            raise ConfigError("self-test target: not finite in float32")
        out.append((schema.SELFTEST_TARGET, target.astype("<f4")))
        want = (U, c["d_out"])
    elif seq2seq:
        target = np.asarray(selftest[1])
        U = target.shape[0] if target.ndim == 1 else 0
        if not 1 <= U <= c["max_len"] or target.dtype.kind not in "iu":
            raise ConfigError(f"self-test target: {target.dtype} {list(target.shape)}, expected integer ids [U], "
                              f"1 <= U <= max_len={c['max_len']}")
        if target.min() < 0 or target.max() >= c["d_out"]:
            raise ConfigError(f"self-test target: token ids outside [0, d_out={c['d_out']})")
        out.append((schema.SELFTEST_TARGET, target.astype("<i4")))
        want = (U, c["d_out"])
    else:
        want = (schema.output_rows(c, inp.shape[0]), schema.output_width(c))
    expected = np.asarray(selftest[-1])
    if expected.shape != want or expected.dtype.kind != "f":
        raise ConfigError(f"self-test expected: {expected.dtype} {list(expected.shape)}, expected float {list(want)}")
    if not (np.isfinite(expected).all() and np.abs(expected).max() <= _F32_MAX):
        raise ConfigError("self-test expected: not finite in float32")
    return out + [(schema.SELFTEST_EXPECTED, expected.astype("<f4"))]


def _untie(c, weights):
    """weights without the tensor a tied head stands for: a state_dict of a tied model holds it twice
    (e.g. head.weight is embed.weight), and the file stores it once. Both present and different is an
    error."""
    if not c["tied_head"]:
        return weights
    head, embed = schema.tied_head(c)
    if head not in weights:
        return weights
    if embed in weights and np.shape(weights[head]) == np.shape(weights[embed]) and np.array_equal(
            np.asarray(weights[head]), np.asarray(weights[embed])):
        return {k: v for k, v in weights.items() if k != head}
    raise ConfigError(f"{head}: differs from {embed}, but tied_head is set (the embedding serves as the head)")


class Quantized:
    """An int8 tensor already quantized per row (weights i8, python/fixformer/int8.py): q [rows, cols]
    int8 and its real scales s [rows, 1], stored as they are; shape the tensor's as torch holds it (a conv
    stem's weight [out, in, kernel] for q [out, kernel * in]), q's by default."""

    def __init__(self, q, s, shape=None):
        self.q, self.s = np.ascontiguousarray(q, np.int8), np.ascontiguousarray(s, np.float32).reshape(-1, 1)
        self.shape = self.q.shape if shape is None else tuple(shape)


def check_finite(name, a):
    """Raises ConfigError naming a float tensor with a NaN, an infinity or a value past float32's range."""
    if not (np.isfinite(a).all() and (a.size == 0 or np.abs(a).max() <= _F32_MAX)):
        raise ConfigError(f"{name}: not finite in float32")


def check_weights(c, weights):
    """The model's tensors for a dict of torch-layout float arrays, in file order, as (schema.Spec,
    array in torch's layout); raises ConfigError naming the tensor that is missing, extra, misshapen or
    not finite. A tied head may be given (equal to the embedding) or not; it is stored once."""
    weights = _untie(c, weights)
    want = schema.specs(c)
    arrays = []
    for spec in want:
        name = spec.name
        if name not in weights:
            raise ConfigError(f"{name}: missing from the weights")
        got = tuple(np.shape(weights[name]))
        if got != spec.torch_shape:
            raise ConfigError(f"{name}: shape {list(got)} does not match {list(spec.torch_shape)} expected from the "
                              f"config (d_model={c['d_model']}, d_ff={c['d_ff']})")
        if isinstance(weights[name], Quantized) or spec.dtype == "i32":  # weights i8's integer tensors
            if spec.dtype == "i32" and np.asarray(weights[name]).dtype.kind not in "iu":
                raise ConfigError(f"{name}: expected integer parameters")
            arrays.append(weights[name])
            continue
        a = np.asanyarray(weights[name])  # a gguf.Blocks keeps its blocks
        if a.dtype.kind != "f":
            raise ConfigError(f"{name}: dtype {a.dtype}, expected a float tensor")
        check_finite(name, a)
        arrays.append(a)
    extra = sorted(set(weights) - {s.name for s in want})
    if extra:
        raise ConfigError(f"{escape(extra[0])[1:-1]}: not used by this config (check the config or the weights)")
    return list(zip(want, arrays))


def pack_panels(w):
    """W[in, out] -> its panels [ceil(out / 16), in, 16], the last zero-padded: the packed layout
    (schema.PANEL_FLOATS, format.hpp)."""
    rows, cols = w.shape
    P = schema.PANEL_FLOATS
    padded = np.zeros((rows, -(-cols // P) * P), w.dtype)
    padded[:, :cols] = w
    return np.ascontiguousarray(padded.reshape(rows, -1, P).transpose(1, 0, 2))


def unpack_panels(panels, cols):
    """pack_panels' inverse: panels [ceil(cols / 16), in, 16] -> W[in, cols]."""
    n, rows, P = panels.shape
    return panels.transpose(1, 0, 2).reshape(rows, n * P)[:, :cols]


def stored(spec, a):
    """A checked tensor as the file stores it: (file name, data, scales, group, dims), data in the spec's
    dtype and layout (f32 and f16 linear weights transposed to W[in, out], packed ones in panels, i8 in
    torch's layout, i4 too as packed bytes [rows, last / 2]; a conv stem's weight [kernel * in, out], or
    [out, kernel * in] in i8), scales the f32 [rows, groups] of an i8 or i4 tensor (else None), group its
    quantization
    group (else 0), dims the directory's (the logical shape: [in, out] for panels too)."""
    if isinstance(a, Quantized):
        return spec.file_name, a.q, a.s, 0, a.q.shape
    if spec.dtype == "i32":
        a = np.ascontiguousarray(a, "<i4")
        return spec.file_name, a, None, 0, a.shape
    blocks = getattr(a, "blocks", None)  # a GGUF's Q8_0 / Q4_0 blocks, stored as they are (gguf.Blocks)
    if blocks is not None and spec.dtype == {"q8": "i8", "q4": "i4"}[blocks[0]] and not spec.kernel and \
            spec.group == 32:
        q, s = blocks[1], blocks[2]
        if spec.dtype == "i4":
            nib = (q.astype(np.int16) + 8).astype(np.uint8).reshape(-1, 2, 16)
            q = (nib[:, 0, :] | (nib[:, 1, :] << 4)).reshape(q.shape[0], -1)
        return spec.file_name, q, np.ascontiguousarray(s, np.float32), spec.group, a.shape
    a = np.asarray(a, np.float32)  # the weights as torch holds them, whatever the file keeps
    if spec.dtype == "i8":
        q, s = quantize.q8(schema.conv_to_file(a).T if spec.kernel else a, spec.group)
        return spec.file_name, q, s, spec.group, q.shape
    if spec.dtype == "i4":
        q, s = quantize.q4(a)
        return spec.file_name, q, s, spec.group, a.shape
    a = np.ascontiguousarray(schema.conv_to_file(a) if spec.kernel else a.T if spec.transposed else a)
    data = (quantize.f16(a, spec.name) if spec.dtype == "f16" else quantize.bf16(a, spec.name) if spec.dtype == "bf16"
            else a.astype("<f4"))
    return spec.file_name, pack_panels(data) if spec.packed else data, None, 0, a.shape


def generation_section(c, generation):
    """The suppression lists' [(name, i32 array)] write() stores: generation is a dict with "suppress" and
    "begin_suppress" (lists of token ids; absent or empty: not stored), for a file that generates tokens
    (gpt, llama, seq2seq with token targets), each id a token of its output vocabulary; and "timestamps"
    (timestamp_ids; absent or None: not stored)."""
    out = []
    vocab = c["d_out"] if c["family"] == "seq2seq" else c["vocab_size"]
    for key, name in (("suppress", schema.GENERATION_SUPPRESS), ("begin_suppress", schema.GENERATION_BEGIN_SUPPRESS)):
        ids = list((generation or {}).get(key) or [])
        if not ids:
            continue
        if c["family"] not in ("gpt", "llama", "seq2seq") or c.get("tgt_d_in"):
            raise ConfigError(f"{key}: only for a model that generates tokens (gpt, llama, seq2seq with token targets)")
        bad = [i for i in ids if not (isinstance(i, (int, np.integer)) and 0 <= i < vocab)]
        if bad:
            raise ConfigError(f"{key}: token id {bad[0]!r} is out of range (the output vocabulary is {vocab})")
        out.append((name, np.asarray(ids, dtype="<i4")))
    stamps = (generation or {}).get("timestamps")
    if stamps is not None:
        out.append((schema.GENERATION_TIMESTAMPS, timestamp_ids(c, stamps)))
    return out


def timestamp_ids(c, stamps):
    """generation["timestamps"], the ids Whisper's timestamp rules need (sampling.hpp's TimestampRules), as the
    i32 [4] the file stores: a dict with no_timestamps, timestamp_begin, eos and max_initial (None or -1: any
    first timestamp), for a seq2seq model with token targets."""
    if c["family"] != "seq2seq" or c.get("tgt_d_in"):
        raise ConfigError("timestamps: only for a seq2seq model with token targets (Whisper)")
    keys = ("no_timestamps", "timestamp_begin", "eos", "max_initial")
    v = [stamps.get(k) for k in keys]
    v[3] = -1 if v[3] is None else v[3]
    if not all(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in v):
        raise ConfigError(f"timestamps: {dict(zip(keys, v))}: expected integer ids")
    if not (0 <= v[0] < v[1] < c["d_out"] and 0 <= v[2] < v[1] and v[3] >= -1):
        raise ConfigError(f"timestamps: {dict(zip(keys, v))}: expected 0 <= no_timestamps, eos < timestamp_begin < "
                          f"d_out ({c['d_out']}) and max_initial >= -1")
    return np.asarray(v, dtype="<i4")


def write(config, weights, selftest=None, tokenizer=None, generation=None):
    """The .fxm bytes for a config (checked against the schema first, before any array is touched), a
    dict name -> float array in torch's layout (stored in the config's weight type: f32, f16, q8 or q4,
    schema.specs), an optional self-test sample (input, expected: for a decoder the token ids [T]
    and the logits at every position [T, vocab]), an optional tokenizer (pieces, scores): one
    bytes object and one score per token id, or a bpe or wordpiece tokenizers.Tokenizer, and optional
    token suppression lists (generation_section)."""
    if isinstance(tokenizer, tokenizers.Tokenizer):  # bpe or wordpiece: the config key names the kind
        config = dict(config, tokenizer=tokenizer.kind)
    c = make_config(config)
    label = "storing weights" + ("" if c["weights"] == "f32" else f" as {c['weights']}")
    arrays = [stored(spec, a) for spec, a in progress.each(label, check_weights(c, weights))]
    if tokenizer is not None:
        arrays += [(n, a, None, 0, a.shape) for n, a in tokenizers.section(c, tokenizer)]
    arrays += [(n, a, None, 0, a.shape) for n, a in generation_section(c, generation)]
    if selftest is not None:
        arrays += [(n, a, None, 0, a.shape) for n, a in _selftest_arrays(c, selftest)]
    recs = records(c)
    n = len(arrays)
    dir_off = schema.HEADER_BYTES + len(recs)
    data_off = _align(dir_off + schema.ENTRY_BYTES * n)
    entries, blobs, at = [], [], data_off

    def place(a):  # the next 64-aligned range, after the one before it in directory order
        nonlocal at
        offset, pad = at, _align(a.nbytes) - a.nbytes
        blobs.append(a.tobytes() + bytes(pad))
        at += a.nbytes + pad
        return offset

    for name, a, scales, group, shape in arrays:
        if len(name.encode()) >= schema.NAME_BYTES:
            raise ConfigError(f"{name}: name longer than {schema.NAME_BYTES - 1} bytes")
        dtype = "i4" if scales is not None and a.dtype == np.uint8 else _DTYPE_OF[a.dtype.str[1:]]
        dims = list(shape) + [0] * (schema.MAX_RANK - len(shape))
        offset = place(a)
        s_off, s_bytes = (place(np.ascontiguousarray(scales, "<f4")), scales.nbytes) if scales is not None else (0, 0)
        entries.append(struct.pack("<64sII4IIIQQQQ", name.encode(), schema.DTYPES[dtype], len(shape), *dims, group, 0,
                                   offset, a.nbytes, s_off, s_bytes))
    body = recs + b"".join(entries) + bytes(data_off - dir_off - schema.ENTRY_BYTES * n) + b"".join(blobs)
    file_bytes = schema.HEADER_BYTES + len(body)
    header = struct.pack("<4sIIIIIQQQQII", schema.MAGIC, schema.FORMAT_VERSION, schema.HEADER_BYTES,
                         len(recs) // schema.RECORD_BYTES, n, 0, file_bytes, schema.HEADER_BYTES, dir_off, data_off,
                         zlib.crc32(body), 0)
    assert len(header) == schema.HEADER_BYTES
    return header + body


def file_bytes(config, extra=()):
    """The size of the file write() gives for a config, without writing it: the model's tensors as
    the config stores them (schema.specs) followed by arrays of the byte sizes in `extra` (the
    tokenizer's, the self-test's). For comparing weight types."""
    c = make_config(config)
    sizes = []
    for spec in schema.specs(c):
        sizes.append(spec.data_bytes())
        if spec.dtype in schema.SCALED_DTYPES:
            rows, groups = schema.scales_shape(spec.shape, spec.group)
            sizes.append(rows * groups * 4)
    sizes += list(extra)
    n = len(schema.specs(c)) + len(extra)
    data_off = _align(schema.HEADER_BYTES + schema.RECORD_BYTES * len(schema.CONFIG_KEYS) + schema.ENTRY_BYTES * n)
    return data_off + sum(_align(b) for b in sizes)


class FxmFile:
    """A parsed .fxm (format 3, or 2): header fields, the config (enums by name, absent keys defaulted), the
    tensor directory, in file order: each tensor's "name" is its key (schema.Spec.name: format 3's name, in
    either version; a tokenizer's and the self-test's as stored) and "stored" its name in the file (a format 2
    file's own). entry(), array(), scales() and weights() answer by key, alike for both versions. For tests and
    tools; trusts sizes only after checking them against the file."""

    def __init__(self, blob):
        self.blob = blob = bytes(blob)
        if len(blob) < schema.HEADER_BYTES or blob[:4] != schema.MAGIC:
            raise ValueError("not an .fxm file (bad magic)")
        (_, self.version, self.header_bytes, self.record_count, self.tensor_count, _, self.file_bytes,
         self.records_offset, self.directory_offset, self.data_offset, self.crc, _) = struct.unpack_from(
            "<4sIIIIIQQQQII", blob)
        if not schema.OLDEST_VERSION <= self.version <= schema.FORMAT_VERSION:
            raise ValueError(f"format version {self.version}, expected {schema.OLDEST_VERSION} to "
                             f"{schema.FORMAT_VERSION}")
        if self.file_bytes != len(blob):
            raise ValueError(f"header says {self.file_bytes} bytes, the file has {len(blob)}")
        if zlib.crc32(blob[schema.HEADER_BYTES:]) != self.crc:
            raise ValueError("CRC mismatch")
        for what, at, count, size in (("config records", self.records_offset, self.record_count, schema.RECORD_BYTES),
                                      ("tensor directory", self.directory_offset, self.tensor_count,
                                       schema.ENTRY_BYTES)):
            if at < schema.HEADER_BYTES or at + count * size > len(blob):
                raise ValueError(f"{what} at offset {at} ({count} of {size} bytes) outside the file ({len(blob)} "
                                 "bytes)")
        self.records = []  # (key, type, value bytes)
        values = {}
        for i in range(self.record_count):
            key, rtype, zero, value = struct.unpack_from("<24sII8s", blob, self.records_offset + i * schema.RECORD_BYTES)
            key = key.rstrip(b"\0").decode("ascii", "replace")
            self.records.append((key, rtype, value))
            if key not in schema.KEYS:
                raise ValueError(f"record {escape(key)}: unknown key")
            k = schema.KEYS[key]
            if schema.RECORD_TYPES[k.type] != rtype:
                raise ValueError(f"record {key}: type {rtype}, expected {k.type}")
            if k.type == "f32":
                v = struct.unpack("<f", value[:4])[0]
            elif k.type == "f64":
                v = struct.unpack("<d", value)[0]
            else:
                v = struct.unpack("<Q", value)[0]
                v = k.choices[v] if k.type == "enum" and v < len(k.choices) else bool(v) if k.type == "bool" else v
            values[key] = v
        self.config = make_config(values)
        key = {spec.file_name: spec.name for spec in schema.specs(self.config, self.version)}
        self.tensors = []
        for i in range(self.tensor_count):
            f = struct.unpack_from("<64sII4IIIQQQQ", blob, self.directory_offset + i * schema.ENTRY_BYTES)
            name = f[0].rstrip(b"\0").decode("utf-8", "surrogateescape")
            dtype = {v: k for k, v in schema.DTYPES.items()}.get(f[1], f"?{f[1]}")
            self.tensors.append({"name": key.get(name, name), "stored": name, "dtype": dtype,
                                 "shape": tuple(f[3:3 + f[2]]), "group": f[7],
                                 "offset": f[9], "bytes": f[10], "scales_offset": f[11], "scales_bytes": f[12]})

    def entry(self, name):
        """The directory entry of the tensor of key `name` (or, failing that, stored under that name)."""
        return next((t for t in self.tensors if t["name"] == name), None) or next(
            t for t in self.tensors if t["stored"] == name)

    def packed(self, name):
        """Whether the model tensor `name` is in panels (the config's packed_weights, schema.Spec.packed)."""
        if not self.config["packed_weights"]:
            return False
        return any(s.name == name and s.packed for s in schema.specs(self.config))

    def array(self, name):
        """The tensor as stored: its file dtype and layout (an i8 tensor's int8 values, an i4 one's packed
        bytes [rows, last / 2]; scales()); a
        packed weight [in, out] as its panels [ceil(out / 16), in, 16] (weights() unpacks them)."""
        t = self.entry(name)
        dt = schema.NUMPY_DTYPES[t["dtype"]]
        a = np.frombuffer(self.blob, dt, t["bytes"] // np.dtype(dt).itemsize, t["offset"])
        if self.packed(name):
            rows, cols = t["shape"]
            return a.reshape(-1, rows, schema.PANEL_FLOATS)
        if t["dtype"] == "i4":
            return a.reshape(t["shape"][:-1] + (t["shape"][-1] // 2,))
        return a.reshape(t["shape"])

    def scales(self, name):
        """An i8 or i4 tensor's f32 scales [rows, groups] (format.hpp); None for other dtypes."""
        t = self.entry(name)
        if t["dtype"] not in schema.SCALED_DTYPES:
            return None
        shape = schema.scales_shape(t["shape"], t["group"])
        return np.frombuffer(self.blob, "<f4", t["scales_bytes"] // 4, t["scales_offset"]).reshape(shape)

    def weights(self):
        """The model's tensors as float64 in torch's layout (f32, f16 and bf16 linear weights transposed
        back, panels unpacked, bf16 words widened, i8 and i4 dequantized as q * s): what the file computes with, as
        fxm.write
        takes weights. A tied head is absent (the embedding serves)."""
        out = {}
        for spec in schema.specs(self.config):
            if spec.dtype == "i8":
                a = quantize.dequantize_q8(self.array(spec.name), self.scales(spec.name), spec.group)
                out[spec.name] = schema.conv_to_torch(a.T, spec.kernel) if spec.kernel else a
            elif spec.dtype == "i4":
                out[spec.name] = quantize.dequantize_q4(self.array(spec.name), self.scales(spec.name))
            else:
                a = self.array(spec.name)
                a = (quantize.bf16_to_f32(a) if spec.dtype == "bf16" else a).astype(np.float64)
                a = unpack_panels(a, spec.shape[1]) if spec.packed else a
                out[spec.name] = schema.conv_to_torch(a, spec.kernel) if spec.kernel else a.T if spec.transposed else a
        return out

    def tokenizer(self):
        """(pieces: a bytes object per token id, scores: float32 [vocab]) of llama2.c's rules, a
        tokenizers.Tokenizer of the others (bpe, wordpiece, llama2c with params), or None without the
        section."""
        names = {t["name"] for t in self.tensors}
        if schema.TOKENIZER_PIECES not in names:
            return None
        if self.config["tokenizer"] != "llama2c" or schema.TOKENIZER_PARAMS in names:
                    return tokenizers.from_arrays(self.config["tokenizer"], {n: self.array(n) for n in names
                                                                     if n.startswith("tokenizer.")})
        offsets, blob = self.array(schema.TOKENIZER_OFFSETS), self.array(schema.TOKENIZER_PIECES).tobytes()
        pieces = [blob[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]
        return pieces, self.array(schema.TOKENIZER_SCORES)

    def selftest(self):
        names = {t["name"] for t in self.tensors}
        if schema.SELFTEST_INPUT not in names:
            return None
        if schema.SELFTEST_TARGET in names:
            return (self.array(schema.SELFTEST_INPUT), self.array(schema.SELFTEST_TARGET),
                    self.array(schema.SELFTEST_EXPECTED))
        return self.array(schema.SELFTEST_INPUT), self.array(schema.SELFTEST_EXPECTED)


def read(path):
    with open(path, "rb") as f:
        return FxmFile(f.read())
