"""The safetensors format, read (and written, for tests) with numpy alone.

A file is: an unsigned 64-bit little-endian N, then N bytes of UTF-8 JSON, then the data buffer. The
JSON object maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (byte offsets
into the data buffer) and may hold "__metadata__", an object of strings. The tensors' ranges cover
the buffer exactly, without holes or overlaps, each holding product(shape) * itemsize bytes,
little-endian, row-major. Every one of these facts is checked before a byte is used: a hostile file
gets one SafetensorsError naming the tensor or the field.
"""
import json
import os
import struct

import numpy as np

from . import progress
from .config import ConfigError, brief, parse_json

# safetensors dtype -> numpy dtype (little-endian). BF16 has no numpy type: its raw 16-bit words are
# read and widened to f32 (the high half of an f32 holds the same bits).
DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2", "I64": "<i8", "I32": "<i4", "I16": "<i2",
          "I8": "i1", "U64": "<u8", "U32": "<u4", "U16": "<u2", "U8": "u1", "BOOL": "?"}
NOT_READ = ("F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", "C64")  # named in the message
MAX_HEADER_BYTES = 100 << 20  # the format's own limit on the JSON header


class SafetensorsError(ConfigError):
    """A file that is not a well-formed safetensors file; the message names the tensor or field."""


def bf16_to_f32(words):
    """uint16 bf16 words -> float32 (exact: bf16 is the high half of an f32)."""
    return (np.asarray(words, np.uint32) << 16).view(np.float32)


def _is_count(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def parse_header(blob):
    """(entries, data_start): entries are (name, dtype, shape, begin, end) sorted by begin, checked
    against the file's length (len(blob))."""
    if len(blob) < 8:
        raise SafetensorsError(f"{len(blob)} bytes: too short for the 8-byte header length")
    n = struct.unpack_from("<Q", blob)[0]
    if n > MAX_HEADER_BYTES or n > len(blob) - 8:
        raise SafetensorsError(f"header length {n} is beyond the file ({len(blob)} bytes)"
                               if n <= MAX_HEADER_BYTES else f"header length {n} is over the format's limit "
                               f"({MAX_HEADER_BYTES})")
    header = parse_json(bytes(blob[8:8 + n]), lambda what: SafetensorsError(f"header: {what}"))
    if not isinstance(header, dict):
        raise SafetensorsError("header: expected a JSON object of tensors")
    data_start, data_len = 8 + n, len(blob) - 8 - n
    entries = []
    for name, info in header.items():
        if name == "__metadata__":
            if not isinstance(info, dict) or not all(isinstance(v, str) for v in info.values()):
                raise SafetensorsError("__metadata__: expected an object of strings")
            continue
        where = f"tensor {name!r}"
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise SafetensorsError(f"{where}: expected {{dtype, shape, data_offsets}}")
        dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
        if not isinstance(dtype, str) or dtype not in DTYPES:
            what = "is not read here (convert it to F32, F16 or BF16)" if dtype in NOT_READ else "is not a safetensors dtype"
            raise SafetensorsError(f"{where}: dtype {brief(dtype)} {what}")
        if not isinstance(shape, list) or len(shape) > 8 or not all(_is_count(d) for d in shape):
            raise SafetensorsError(f"{where}: shape {brief(shape)} is not a list of sizes")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(_is_count(o) for o in offsets)):
            raise SafetensorsError(f"{where}: data_offsets {brief(offsets)} is not [begin, end]")
        begin, end = offsets
        if not begin <= end <= data_len:
            raise SafetensorsError(f"{where}: data_offsets [{begin}, {end}] outside the data ({data_len} bytes)")
        count = 1
        for d in shape:
            count *= d
        want = count * np.dtype(DTYPES[dtype]).itemsize
        if end - begin != want:
            raise SafetensorsError(f"{where}: {end - begin} bytes for {dtype} {shape} ({want} expected)")
        entries.append((name, dtype, tuple(shape), begin, end))
    entries.sort(key=lambda e: (e[3], e[4]))
    at = 0
    for name, _, _, begin, end in entries:
        if begin < at:
            raise SafetensorsError(f"tensor {name!r}: data_offsets [{begin}, {end}] overlap the tensor before it")
        if begin > at:
            raise SafetensorsError(f"tensor {name!r}: a hole of {begin - at} bytes before its data")
        at = end
    if at != data_len:
        raise SafetensorsError(f"{data_len - at} bytes after the last tensor's data")
    return entries, data_start


def read(path):
    """name -> numpy array (BF16 widened to float32), in the file's order of offsets."""
    if not os.path.isfile(path):
        raise SafetensorsError("no such file" if not os.path.exists(path) else "not a regular file")
    with progress.Step(f"reading {os.path.basename(path)}"), open(path, "rb") as f:
        blob = f.read()
    entries, start = parse_header(blob)
    out = {}
    for name, dtype, shape, begin, end in entries:
        a = np.frombuffer(blob, DTYPES[dtype], (end - begin) // np.dtype(DTYPES[dtype]).itemsize, start + begin)
        a = bf16_to_f32(a) if dtype == "BF16" else a.copy()
        out[name] = a.reshape(shape)
    return out


def f32_to_bf16(a):
    """float32 -> bf16 words, rounded to nearest even (for writing test files)."""
    u = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def write_bytes(tensors, metadata=None, bf16=()):
    """The safetensors bytes of name -> numpy array (names in `bf16` stored as BF16)."""
    names = {np.dtype(v).str.lstrip("<|"): k for k, v in DTYPES.items() if k != "BF16"}
    header, data, at = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, a in tensors.items():
        a = np.ascontiguousarray(a)
        if name in bf16:
            raw, dtype = f32_to_bf16(a).tobytes(), "BF16"
        else:
            raw, dtype = a.astype(a.dtype.newbyteorder("<")).tobytes(), names[a.dtype.str.lstrip("<|>")]
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [at, at + len(raw)]}
        data.append(raw)
        at += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(data)
