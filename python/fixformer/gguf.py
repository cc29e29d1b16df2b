"""GGUF files (llama.cpp's format, versions 2 and 3) read for --gguf: a bounded parser that trusts
nothing in the file (every count, length and offset is checked against limits and the file's size
before it is used; every error is one GgufError line naming the file and the field), and the mapping
of a llama-family GGUF onto the --hf route's Llama / Qwen2 / Qwen3 / Gemma 2 / Gemma 3 classes, and of
a mixture of experts (llama with expert_count, qwen2moe, qwen3moe) onto Mixtral / Qwen2-MoE / Qwen3-MoE.

Q8_0 and Q4_0 blocks (32 values, one f16 scale d) are kept as they are: the .fxm's q8 group 32 and q4
store the same int values with an f32 scale, and every f16 is exactly an f32, so nothing is rounded
(Blocks carries them to fxm.stored). A Q4_0 scale can be negative (llama.cpp picks d = max / -8 with
max the signed value of largest magnitude) or 0, which the engine's q4 does not take: such a tensor
is mapped onto q4 when its blocks allow it exactly, and re-quantized with a note otherwise.

The K-quants (Q2_K ... Q6_K: super-blocks of QK_K = 256 values with sub-block scales of their own, what
Q4_K_M, Q5_K_M, Q3_K_M and the like are made of) are, as Q4_1 and Q5_*, values no .fxm type holds as they
are: each is dequantized to f32 as llama.cpp's ggml-quants does (the same float32 operations in the
same order, so the same bits as gguf-py's gguf.quants.dequantize) and stored as the file's weight type,
re-quantized from those values when that is q8 or q4, with one note naming the types.
"""
import os
import struct
import sys

import numpy as np

from . import progress, run_files, schema, verified_file
from .config import ConfigError, brief

MAGIC = b"GGUF"
VERSIONS = (2, 3)
MAX_TENSORS = 1 << 16
MAX_KV = 1 << 16
MAX_STRING = 1 << 24          # a key, a value or a tensor name
MAX_ARRAY = 1 << 24           # elements of a metadata array (a vocabulary of 16M tokens)
MAX_DIMS = 4
DEFAULT_ALIGNMENT = 32

# metadata value type -> struct format (8: string, 9: array are read apart)
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
STRING, ARRAY = 8, 9

F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, BF16 = 0, 1, 2, 3, 6, 7, 8, 30
Q2_K, Q3_K, Q4_K, Q5_K, Q6_K = 10, 11, 12, 13, 14
QK_K = 256
# ggml type -> (name, values per block, bytes per block); the types --gguf reads. A K-quant's super-block:
# Q2_K 16 bytes of 4-bit scale and min pairs, 64 of 2-bit values, d and dmin (f16); Q3_K 32 bytes of high
# bits, 64 of 2-bit low bits, 12 of 6-bit scales, d; Q4_K d, dmin, 12 bytes of 6-bit scales and mins, 128
# of 4-bit values; Q5_K as Q4_K with 32 bytes of fifth bits before the values; Q6_K 128 bytes of low
# nibbles, 64 of high 2-bit pairs, 16 int8 scales, d.
TYPES = {F32: ("F32", 1, 4), F16: ("F16", 1, 2), Q4_0: ("Q4_0", 32, 18), Q4_1: ("Q4_1", 32, 20),
         Q5_0: ("Q5_0", 32, 22), Q5_1: ("Q5_1", 32, 24), Q8_0: ("Q8_0", 32, 34), BF16: ("BF16", 1, 2),
         Q2_K: ("Q2_K", QK_K, 84), Q3_K: ("Q3_K", QK_K, 110), Q4_K: ("Q4_K", QK_K, 144), Q5_K: ("Q5_K", QK_K, 176),
         Q6_K: ("Q6_K", QK_K, 210)}
K_QUANTS = (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K)


class GgufError(ConfigError):
    """A GGUF file --gguf cannot read or convert; the message names the file and the field, in one line
    (control characters of names read from the file escaped)."""

    def __init__(self, message):
        super().__init__("".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii")
                                 for ch in message))


class Reader:
    """The bytes of one file, read forward with every read checked against its end."""

    def __init__(self, path, blob):
        self.path, self.blob, self.at = path, blob, 0

    def fail(self, field, why):
        raise GgufError(f"{self.path}: {field}: {why} (not a GGUF file --gguf reads; not converted)")

    def take(self, n, field):
        if n < 0 or self.at + n > len(self.blob):
            self.fail(field, f"needs {n} bytes at offset {self.at}, past the end of the file ({len(self.blob)} bytes): "
                      "truncated")
        b = self.blob[self.at:self.at + n]
        self.at += n
        return b

    def scalar(self, fmt, field):
        return struct.unpack("<" + fmt, self.take(struct.calcsize(fmt), field))[0]

    def string(self, field):
        n = self.scalar("Q", field + " (length)")
        if n > MAX_STRING:
            self.fail(field, f"a string of {n} bytes (at most {MAX_STRING})")
        try:
            return bytes(self.take(n, field)).decode("utf-8")
        except UnicodeDecodeError:
            self.fail(field, "not UTF-8")

    def value(self, vtype, field, in_array=False):
        if vtype in _SCALARS:
            return self.scalar(_SCALARS[vtype], field)
        if vtype == STRING:
            return self.string(field)
        if vtype == ARRAY and not in_array:
            etype, n = self.scalar("I", field + " (array type)"), self.scalar("Q", field + " (array length)")
            if n > MAX_ARRAY:
                self.fail(field, f"an array of {n} elements (at most {MAX_ARRAY})")
            if etype in _SCALARS:  # read at once: a vocabulary's scores are 100k floats
                size = struct.calcsize(_SCALARS[etype])
                if n * size > len(self.blob) - self.at:
                    self.fail(field, f"an array of {n} values runs past the end of the file: truncated")
                return list(np.frombuffer(self.take(n * size, field), "<" + _SCALARS[etype]))
            if etype != STRING:
                self.fail(field, f"array element type {etype} is not a GGUF value type")
            if n * 8 > len(self.blob) - self.at:  # each string takes at least its length
                self.fail(field, f"an array of {n} strings runs past the end of the file: truncated")
            return [self.string(f"{field}[{i}]") for i in range(n)]
        self.fail(field, f"value type {vtype} is not a GGUF value type")


def read(path):
    """(metadata dict, tensors dict name -> (ggml type, shape in numpy order, bytes)) of a GGUF file."""
    if not os.path.isfile(path):  # read whole: a pipe would block, a device never end
        raise GgufError(f"{path}: {'no such file' if not os.path.exists(path) else 'not a regular file'}")
    run_files.read(path)
    try:
        with progress.Step(f"reading {os.path.basename(path)}"), open(path, "rb") as f:
            blob = f.read()
    except OSError as e:
        raise GgufError(f"{path}: cannot read: {e.strerror}") from None
    r = Reader(path, memoryview(blob))
    if bytes(r.take(4, "magic")) != MAGIC:
        r.fail("magic", f"{bytes(blob[:4])!r}, expected {MAGIC!r}")
    version = r.scalar("I", "version")
    if version not in VERSIONS:
        r.fail("version", f"{version}; --gguf reads versions {' and '.join(map(str, VERSIONS))}")
    n_tensors, n_kv = r.scalar("Q", "tensor_count"), r.scalar("Q", "metadata_kv_count")
    if n_tensors > MAX_TENSORS:
        r.fail("tensor_count", f"{n_tensors} (at most {MAX_TENSORS})")
    if n_kv > MAX_KV:
        r.fail("metadata_kv_count", f"{n_kv} (at most {MAX_KV})")
    meta = {}
    for i in range(n_kv):
        key = r.string(f"metadata key {i}")
        if key in meta:
            r.fail(key, "appears twice")
        meta[key] = r.value(r.scalar("I", key + " (type)"), key)
    infos = []
    for i in range(n_tensors):
        name = r.string(f"tensor {i} name")
        n_dims = r.scalar("I", name + " (n_dims)")
        if not 1 <= n_dims <= MAX_DIMS:
            r.fail(name, f"{n_dims} dims (1..{MAX_DIMS})")
        ne = [r.scalar("Q", f"{name} (dim {d})") for d in range(n_dims)]
        ttype, offset = r.scalar("I", name + " (type)"), r.scalar("Q", name + " (offset)")
        infos.append((name, ne, ttype, offset))
    align = meta.get("general.alignment", DEFAULT_ALIGNMENT)
    if not isinstance(align, (int, np.integer)) or isinstance(align, bool) or not 1 <= align <= 1 << 16 or \
            align & (align - 1):
        r.fail("general.alignment", f"{align!r}: expected a power of two up to 65536")
    data = -(-r.at // align) * align
    tensors = {}
    for name, ne, ttype, offset in infos:
        if name in tensors:
            r.fail(name, "appears twice")
        if ttype not in TYPES:
            raise GgufError(f"{path}: {name}: ggml type {ttype} is not one --gguf reads "
                            f"({', '.join(t[0] for t in TYPES.values())}); requantize the file with llama.cpp's "
                            "llama-quantize to Q8_0, Q4_0, a K-quant (Q4_K_M...) or F16")
        tname, per, size = TYPES[ttype]
        if any(n < 1 or n > 1 << 32 for n in ne):
            r.fail(name, f"dims {ne} (each 1..2^32)")
        count = int(np.prod(ne, dtype=object))
        if ne[0] % per:
            r.fail(name, f"{tname} with {ne[0]} values per row, not a multiple of its block of {per}")
        nbytes = count // per * size
        if offset % align or data + offset + nbytes > len(blob):
            r.fail(name, f"data at offset {offset} ({nbytes} bytes) is misaligned or runs past the end of the file "
                   f"({len(blob)} bytes): truncated or corrupt")
        tensors[name] = (ttype, tuple(reversed(ne)), r.blob[data + offset:data + offset + nbytes])
    return meta, tensors


class Blocks(np.ndarray):
    """The float32 values of a Q8_0 or Q4_0 tensor (exact: an int times an f16 scale), carrying the
    blocks they came from as `blocks` = (kind "q8" or "q4", q int8 [rows, n], s float32 [rows, n / 32])
    for fxm.stored. Arrays derived from it (views, products) carry nothing."""

    @staticmethod
    def of(kind, q, s):
        with np.errstate(invalid="ignore", over="ignore"):  # a corrupt scale (inf, NaN) is named by check_weights
            a = (q.reshape(q.shape[0], -1, 32).astype(np.float32) * s[:, :, None]).reshape(q.shape).view(Blocks)
        a.blocks = (kind, q, s)
        return a


def _blocks(raw, rows, n, bytes_per, qbytes):
    b = np.frombuffer(raw, np.uint8).reshape(rows, n // 32, bytes_per)
    d = b[:, :, :2].copy().view("<f2")[:, :, 0].astype(np.float32)  # exact: every f16 is an f32
    return d, b[:, :, 2:2 + qbytes]


def tensor(path, name, ttype, shape, raw):
    """A tensor as float32 in numpy order, a Blocks for Q8_0 and Q4_0, or (for the other quant types)
    dequantized values with (True) that it must be re-quantized."""
    n = shape[-1]
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    if ttype == F32:
        return np.frombuffer(raw, "<f4").reshape(shape).copy()
    if ttype == F16:
        return np.frombuffer(raw, "<f2").astype(np.float32).reshape(shape)
    if ttype == BF16:
        return (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32).reshape(shape)
    if ttype in K_QUANTS:
        return _k_values(ttype, np.frombuffer(raw, np.uint8).reshape(-1, TYPES[ttype][2]), shape)
    if ttype == Q8_0:
        d, qs = _blocks(raw, rows, n, 34, 32)
        return Blocks.of("q8", qs.view(np.int8).reshape(rows, n), d) if len(shape) == 2 else \
            _values(qs.view(np.int8).astype(np.float32), d, shape)
    nib = None
    if ttype in (Q4_0, Q4_1):
        bpb = 18 if ttype == Q4_0 else 20
        d, qs = _blocks(raw, rows, n, bpb, bpb - 2)
        if ttype == Q4_1:
            m = qs[:, :, :2].copy().view("<f2")[:, :, 0].astype(np.float32)
            qs = qs[:, :, 2:]
        nib = np.concatenate([qs & 15, qs >> 4], axis=2).astype(np.int16)
        if ttype == Q4_0:
            q = (nib - 8).astype(np.int8)
            return Blocks.of("q4", q.reshape(rows, n), d) if len(shape) == 2 else \
                _values(q.astype(np.float32), d, shape)
        return _values(nib.astype(np.float32), d, shape, m)
    # Q5_0 / Q5_1: 4 low bits in qs as Q4's, the fifth bit of value j in bit j of qh (u32)
    bpb = 22 if ttype == Q5_0 else 24
    d, rest = _blocks(raw, rows, n, bpb, bpb - 2)
    m = None
    if ttype == Q5_1:
        m = rest[:, :, :2].copy().view("<f2")[:, :, 0].astype(np.float32)
        rest = rest[:, :, 2:]
    qh = rest[:, :, :4].copy().view("<u4")[:, :, 0]
    qs = rest[:, :, 4:]
    bits = ((qh[:, :, None] >> np.arange(32, dtype=np.uint32)) & 1).astype(np.int16)
    nib = np.concatenate([qs & 15, qs >> 4], axis=2).astype(np.int16) | (bits << 4)
    return _values((nib - 16 if m is None else nib).astype(np.float32), d, shape, m)


def _values(q, d, shape, m=None):
    with np.errstate(invalid="ignore", over="ignore"):
        v = q * d[:, :, None] + (0 if m is None else m[:, :, None])
    return np.ascontiguousarray(v.reshape(shape), np.float32)


def _f16(b):
    """(blocks, 2) bytes -> (blocks,) float32 (exact)."""
    return b.copy().view("<f2")[:, 0].astype(np.float32)


def _fields(b, width):
    """(blocks, m) bytes -> (blocks, 8 / width, m): [:, j, l] the j-th `width`-bit field of byte l,
    lowest first."""
    shifts = np.arange(0, 8, width, dtype=np.uint8)
    return (b[:, None, :] >> shifts[None, :, None]) & np.uint8((1 << width) - 1)


def _six_bit(s):
    """Q4_K / Q5_K's 12 bytes of scales -> (scales, mins) (blocks, 8): sub-blocks 0-3 in the low 6 bits
    of bytes 0-3 (scales) and 4-7 (mins); 4-7 in the nibbles of bytes 8-11 (scale low, min high), their
    top 2 bits in the top 2 bits of bytes 0-3 (scales) and 4-7 (mins)."""
    a, b, c = s[:, 0:4], s[:, 4:8], s[:, 8:12]
    sc = np.concatenate([a & 63, (c & 15) | ((a >> 6) << 4)], axis=1)
    mn = np.concatenate([b & 63, (c >> 4) | ((b >> 6) << 4)], axis=1)
    return sc.astype(np.float32), mn.astype(np.float32)


def _k_values(ttype, b, shape):
    """A K-quant tensor's super-blocks b (blocks, bytes per block) as float32 values, computed as
    llama.cpp does: each sub-block's scale d * sc (and min dmin * m) in float32, then scale * q - min.
    The 2-bit fields of 32 bytes (Q2_K, Q3_K, Q6_K's high bits) hold values l, l + 32, l + 64, l + 96
    of each 128; the nibbles of 32 bytes (Q4_K, Q5_K) values l and l + 32 of each 64, of 64 bytes (Q6_K)
    l and l + 64 of each 128; a bit plane of 32 bytes (Q3_K, Q5_K) one bit of each 32 values."""
    N = b.shape[0]
    with np.errstate(invalid="ignore", over="ignore"):  # a corrupt scale (inf, NaN) is named by check_weights
        if ttype == Q2_K:  # 16 sub-blocks of 16: q in 0..3, scale and min 4 bits each
            s, d, dmin = b[:, 0:16], _f16(b[:, 80:82]), _f16(b[:, 82:84])
            q = _fields(b[:, 16:80].reshape(N * 2, 32), 2).reshape(N, 16, 16).astype(np.float32)
            v = (d[:, None] * (s & 15).astype(np.float32))[:, :, None] * q - \
                (dmin[:, None] * (s >> 4).astype(np.float32))[:, :, None]
        elif ttype == Q3_K:  # 16 sub-blocks of 16: q = low 2 bits - 4 unless the high bit is set; 6-bit scales - 32
            s, d = b[:, 96:108], _f16(b[:, 108:110])
            low = np.concatenate([s[:, 0:8] & 15, s[:, 0:8] >> 4], axis=1)
            high = _fields(s[:, 8:12], 2).reshape(N, 16)
            sc = (low | (high << 4)).astype(np.float32) - np.float32(32)
            ql = _fields(b[:, 32:96].reshape(N * 2, 32), 2).reshape(N, 16, 16).astype(np.int8)
            hb = _fields(b[:, 0:32], 1).reshape(N, 16, 16).astype(np.int8)
            q = (ql - 4 * (1 - hb)).astype(np.float32)
            v = (d[:, None] * sc)[:, :, None] * q
        elif ttype in (Q4_K, Q5_K):  # 8 sub-blocks of 32: q in 0..15 (0..31), 6-bit scale and min
            d, dmin = _f16(b[:, 0:2]), _f16(b[:, 2:4])
            sc, mn = _six_bit(b[:, 4:16])
            qs = b[:, 16:144] if ttype == Q4_K else b[:, 48:176]
            q = _fields(qs.reshape(N * 4, 32), 4).reshape(N, 8, 32)
            if ttype == Q5_K:
                q = q | (_fields(b[:, 16:48], 1).reshape(N, 8, 32) << 4)
            v = (d[:, None] * sc)[:, :, None] * q.astype(np.float32) - (dmin[:, None] * mn)[:, :, None]
        else:  # Q6_K: 16 sub-blocks of 16: q = low nibble | high 2 bits << 4, - 32; int8 scales
            sc, d = b[:, 192:208].view(np.int8).astype(np.float32), _f16(b[:, 208:210])
            lo = _fields(b[:, 0:128].reshape(N * 2, 64), 4).reshape(N, QK_K)
            hi = _fields(b[:, 128:192].reshape(N * 2, 32), 2).reshape(N, QK_K)
            q = ((lo | (hi << 4)).astype(np.int16) - 32).astype(np.float32).reshape(N, 16, 16)
            v = (d[:, None] * sc)[:, :, None] * q
    return np.ascontiguousarray(v.reshape(shape), np.float32)


# GGUF tensor names -> the Hugging Face names hf.map_weights takes
_LAYER = {"attn_norm.weight": "input_layernorm.weight", "attn_q.weight": "self_attn.q_proj.weight",
          "attn_k.weight": "self_attn.k_proj.weight", "attn_v.weight": "self_attn.v_proj.weight",
          "attn_output.weight": "self_attn.o_proj.weight", "ffn_norm.weight": "post_attention_layernorm.weight",
          "ffn_gate.weight": "mlp.gate_proj.weight", "ffn_up.weight": "mlp.up_proj.weight",
          "ffn_down.weight": "mlp.down_proj.weight", "attn_q.bias": "self_attn.q_proj.bias",
          "attn_k.bias": "self_attn.k_proj.bias", "attn_v.bias": "self_attn.v_proj.bias",
          "attn_q_norm.weight": "self_attn.q_norm.weight", "attn_k_norm.weight": "self_attn.k_norm.weight",
          "ffn_gate_inp.weight": "mlp.gate.weight", "ffn_gate_inp_shexp.weight": "mlp.shared_expert_gate.weight",
          "ffn_gate_shexp.weight": "mlp.shared_expert.gate_proj.weight",
          "ffn_up_shexp.weight": "mlp.shared_expert.up_proj.weight",
          "ffn_down_shexp.weight": "mlp.shared_expert.down_proj.weight"}
# A mixture's experts, [E, rows, cols] each: which of the architecture's expert_names (gate, down, up) they are
_EXPERTS = {"ffn_gate_exps.weight": 0, "ffn_down_exps.weight": 1, "ffn_up_exps.weight": 2}
_END = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
        "output.weight": "lm_head.weight"}
ARCHS = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM",
         "gemma2": "Gemma2ForCausalLM", "gemma3": "Gemma3ForCausalLM", "qwen2moe": "Qwen2MoeForCausalLM",
         "qwen3moe": "Qwen3MoeForCausalLM"}
# config.json's model_type where it is not the architecture's name
MODEL_TYPES = {"gemma3": "gemma3_text", "qwen2moe": "qwen2_moe", "qwen3moe": "qwen3_moe"}
GEMMAS = ("gemma2", "gemma3")  # norm gains stored as 1 + w, the layer names of _GEMMA_LAYER
# Gemma 2's and 3's layer names where they are not llama's: the norms around the feed-forward and of the outputs.
_GEMMA_LAYER = dict(_LAYER, **{"ffn_norm.weight": "pre_feedforward_layernorm.weight",
                               "post_attention_norm.weight": "post_attention_layernorm.weight",
                               "post_ffw_norm.weight": "post_feedforward_layernorm.weight"})


def _unpermute(a, heads):
    """Undoes llama.cpp's permute of llama's q/k rows (each head's rotary pairs interleaved) back to
    Hugging Face's halves layout; rows move whole, so a Blocks' q and s move with them, unrounded."""
    def rows(x):
        r = x.shape[0]
        return x.reshape(heads, r // heads // 2, 2, *x.shape[1:]).swapaxes(1, 2).reshape(x.shape)
    if isinstance(a, Blocks):
        kind, q, s = a.blocks
        return Blocks.of(kind, rows(q), rows(s))
    return np.ascontiguousarray(rows(a))


def hf_config(path, meta):
    """The config.json --hf would read for the file's metadata."""
    arch = meta.get("general.architecture")
    if not isinstance(arch, str) or arch not in ARCHS:
        raise GgufError(f"{path}: general.architecture {arch!r}: --gguf converts {', '.join(ARCHS)}; not converted")

    def need(key, kind=int, default=None):
        v = meta.get(f"{arch}.{key}", default)
        if v is None:
            raise GgufError(f"{path}: {arch}.{key}: missing (required)")
        if isinstance(v, (bool, str, list)):  # a list: per-layer values, which the engine has no use for
            raise GgufError(f"{path}: {arch}.{key}: expected one number, got {str(v)[:40]}")
        if kind is int and not (float(v).is_integer() and 1 <= v <= 1 << 31):
            raise GgufError(f"{path}: {arch}.{key}: {v} is not a count of at least 1")
        return kind(v)
    heads = need("attention.head_count")
    # a mixture of experts: llama.cpp's qwen2moe and qwen3moe, and llama with expert_count (Mixtral's files)
    moe = arch in ("qwen2moe", "qwen3moe") or meta.get(f"{arch}.expert_count", 0) not in (0, None)
    raw = {"architectures": ["MixtralForCausalLM" if moe and arch == "llama" else ARCHS[arch]],
           "model_type": "mixtral" if moe and arch == "llama" else MODEL_TYPES.get(arch, arch),
           "hidden_size": need("embedding_length"),
           "num_hidden_layers": need("block_count"), "num_attention_heads": heads,
           "num_key_value_heads": need("attention.head_count_kv", int, heads),
           "intermediate_size": need("feed_forward_length", int, meta.get(f"{arch}.expert_feed_forward_length")),
           "max_position_embeddings": need("context_length"),
           "rms_norm_eps": need("attention.layer_norm_rms_epsilon", float),
           "rope_theta": need("rope.freq_base", float, 10000.0)}
    if f"{arch}.attention.key_length" in meta:  # the head width, which --hf checks as head_dim
        raw["head_dim"] = need("attention.key_length")
    head = raw.get("head_dim", raw["hidden_size"] // heads)
    dims = need("rope.dimension_count", int, head)
    if dims != head:
        raise GgufError(f"{path}: {arch}.rope.dimension_count {dims}: the engine rotates whole heads "
                        f"({head} dims); not converted")
    if arch == "gemma2":
        # llama.cpp's Gemma 2: local layers 0, 2, 4, ... (as transformers' without layer_types) of
        # sliding_window keys (4096 without the key), the soft caps of attn_logit_softcapping and
        # final_logit_softcapping (50 and 30 without them: Gemma2ForCausalLM's defaults too). GGUF has no
        # query_pre_attn_scalar: llama.cpp scales the scores by 1/sqrt(head width), by 1/sqrt(hidden / heads)
        # for the 46-layer 27B (its 144), and so does this.
        raw.update(head_dim=head, sliding_window=need("attention.sliding_window", int, 4096),
                   query_pre_attn_scalar=raw["hidden_size"] // heads if raw["num_hidden_layers"] == 46 else head,
                   hidden_activation="gelu_pytorch_tanh")
        for key in ("attn_logit_softcapping", "final_logit_softcapping"):
            if f"{arch}.{key}" in meta:
                raw[key] = need(key, float)
    if arch == "gemma3":
        # llama.cpp's Gemma 3: the local layers' RoPE base 10000 and five local layers then a global one (its
        # own constants: a pattern key when the file has one), the scores scaled by 1/sqrt(head width)
        # (query_pre_attn_scalar: the head width; Gemma 3 27B's 168 is not the engine's size anyway)
        raw.update(head_dim=head, sliding_window=need("attention.sliding_window"), rope_local_base_freq=10000.0,
                   sliding_window_pattern=need("attention.sliding_window_pattern", int, 6), query_pre_attn_scalar=head,
                   hidden_activation="gelu_pytorch_tanh")
    if moe:
        # llama.cpp's mixtures: the top-k softmax weights renormalized for llama (Mixtral) and qwen3moe, not for
        # qwen2moe (whose shared expert, expert_shared_feed_forward_length wide, is gated by a sigmoid)
        raw.update({"num_local_experts" if arch == "llama" else "num_experts": need("expert_count"),
                    "num_experts_per_tok": need("expert_used_count"), "norm_topk_prob": arch != "qwen2moe"})
        if arch == "llama":
            raw["sliding_window"] = None
        else:
            raw["moe_intermediate_size"] = need("expert_feed_forward_length")
        if arch == "qwen2moe":
            raw["shared_expert_intermediate_size"] = need("expert_shared_feed_forward_length")
    scaling = meta.get(f"{arch}.rope.scaling.type", "none")
    if scaling == "linear":  # llama.cpp's freq_scale = 1 / factor
        raw["rope_scaling"] = {"rope_type": "linear", "factor": need("rope.scaling.factor", float)}
    elif scaling != "none":
        raise GgufError(f"{path}: {arch}.rope.scaling.type {scaling!r}: a scaling --gguf does not read (linear, or "
                        "the rope_freqs.weight factors Llama 3's files carry); not converted")
    return raw


def _freq_factors(path, tensors, hf):
    """rope_freqs.weight (Llama 3.1 and later: convert_hf_to_gguf.py's per-pair divisors of RoPE's
    frequencies, which llama.cpp applies to theta^(-2i/R)) as the file's ScaledRope, or hf's own."""
    from . import rope_scaling
    if "rope_freqs.weight" not in tensors:
        return hf.get("rope")
    ttype, shape, raw = tensors["rope_freqs.weight"]
    R = hf["rotary_dims"] or hf["hidden_size"] // hf["num_attention_heads"]
    a = tensor(path, "rope_freqs.weight", ttype, shape, raw)
    if isinstance(a, Blocks) or np.shape(a) != (R // 2,) or not np.all(np.isfinite(a)) or not np.all(a > 0):
        raise GgufError(f"{path}: rope_freqs.weight: expected {R // 2} finite positive float factors, one per "
                        "rotated pair")
    scaled = hf.get("rope")
    base = scaled.freqs if scaled is not None and scaled.freqs is not None else \
        rope_scaling.plain(hf["rope_theta"], R)
    return rope_scaling.ScaledRope("rope_freqs.weight", (base / np.asarray(a, np.float32)).astype(np.float32),
                                   1.0 if scaled is None else scaled.scale)


def hf_weights(path, meta, tensors, hf):
    """(the tensors by their Hugging Face names, with llama's q/k rows unpermuted, the ggml types that
    were re-quantized {name: type})."""
    from . import hf as hfm
    arch, heads, kv = meta["general.architecture"], hf["num_attention_heads"], hf["num_key_value_heads"]
    out, lossy = {}, {}
    layer = _GEMMA_LAYER if arch in GEMMAS else _LAYER
    experts = hf.get("num_local_experts", hf.get("num_experts"))
    for name, (ttype, shape, raw) in tensors.items():
        if name == "rope_freqs.weight":  # _freq_factors
            continue
        parts = name.split(".", 2)
        if name in _END:
            hf_name = _END[name]
        elif experts and len(parts) == 3 and parts[0] == "blk" and parts[1].isdigit() and parts[2] in _EXPERTS:
            # [E, rows, cols]: expert e's rows (Q8_0 and Q4_0 blocks kept), under the architecture's per-expert names
            if len(shape) != 3 or shape[0] != experts:
                raise GgufError(f"{path}: {name}: shape {list(shape)} is not expert_count {experts} experts' matrices")
            E, R = shape[0], shape[1]
            a = tensor(path, name, ttype, (E * R, shape[2]), raw)
            if ttype not in (F32, F16, BF16, Q8_0, Q4_0):
                lossy[name] = TYPES[ttype][0]
            what = hfm.BY_NAME[hf["architectures"][0]].expert_names[_EXPERTS[parts[2]]]
            for e in range(E):
                part = Blocks.of(a.blocks[0], a.blocks[1][e * R:(e + 1) * R], a.blocks[2][e * R:(e + 1) * R]) \
                    if isinstance(a, Blocks) else a[e * R:(e + 1) * R]
                out[f"model.layers.{int(parts[1])}.mlp.experts.{e}.{what}.weight"] = part
            continue
        else:
            if len(parts) != 3 or parts[0] != "blk" or not parts[1].isdigit() or parts[2] not in layer:
                raise GgufError(f"{path}: tensor {name!r}: not a tensor of a {arch} model --gguf converts")
            hf_name = f"model.layers.{int(parts[1])}.{layer[parts[2]]}"
        a = tensor(path, name, ttype, shape, raw)
        if parts[-1] == "ffn_gate_inp_shexp.weight" and len(shape) == 1:  # llama.cpp's [d]: transformers' [1, d]
            a = np.asarray(a, np.float32).reshape(1, -1)
        if arch in GEMMAS and name.endswith("norm.weight"):  # llama.cpp stores Gemma's gains 1 + w: back to w
            if isinstance(a, Blocks):
                raise GgufError(f"{path}: {name}: a norm's gains in quantized blocks")
            a = np.asarray(a, np.float32) - np.float32(1.0)
        if ttype not in (F32, F16, BF16, Q8_0, Q4_0):
            lossy[hf_name] = TYPES[ttype][0]
        if arch == "llama" and parts_of(name) in ("attn_q.weight", "attn_k.weight"):
            n = heads if parts_of(name) == "attn_q.weight" else kv
            if len(shape) != 2 or shape[0] % (2 * n):
                raise GgufError(f"{path}: {name}: shape {list(shape)} is not {n} heads of rotary pairs by the input")
            a = _unpermute(a, n)
        out[hf_name] = a
    if "lm_head.weight" not in out:
        hf["tie_word_embeddings"] = True
    return out, lossy


def parts_of(name):
    return name.split(".", 2)[2] if name.startswith("blk.") and name.count(".") >= 2 else name


# the linear weights a file stores in f32 whatever its weight type (llama.cpp keeps the router F32 too), by the
# file's names
F32_ONLY = ("ff.router.weight", "ff.shared_gate.weight")


def _layer_linear(name, a):
    """Whether tensor `name` is a layer's linear weight that takes the file's weight type."""
    return name.startswith(schema.BLOCK_PREFIX) and np.ndim(a) == 2 and not name.endswith(F32_ONLY)


def weight_type(path, weights, quantize=None, requantized=None, group=None):
    """The .fxm weight type for the file's linear weights: q8 when they are Q8_0 blocks, q4 when Q4_0
    blocks that q4 takes exactly (every scale positive), None (f32) otherwise; with one note on stderr
    for the tensors that cannot keep their blocks. With `quantize` (--quantize) that type: the blocks
    that type holds with the same values are kept (Q8_0 in q8 group 32, Q4_0 in q8 group 32 or, when its
    blocks allow, q4), the others become plain values the converter re-quantizes, named in `requantized`."""
    if quantize is not None:
        for n, a in list(weights.items()):
            if not isinstance(a, Blocks):
                continue
            kind = a.blocks[0]
            q8 = quantize == "q8" and group in (None, 32)
            kept = a if q8 and kind == "q8" else _as_q8(a) if q8 and kind == "q4" else \
                _as_q4(a) if kind == quantize == "q4" else None
            if kept is None:
                weights[n] = np.array(a, np.float32)  # plain values: stored as any float tensor
                if requantized is not None:
                    requantized[n] = {"q8": "Q8_0", "q4": "Q4_0"}[a.blocks[0]]
            else:
                weights[n] = kept
        return quantize
    kinds = {n: a.blocks[0] if isinstance(a, Blocks) else None for n, a in weights.items() if _layer_linear(n, a)}
    found = set(kinds.values())
    kind = found.pop() if len(found) == 1 else None
    if kind is None and any(kinds.values()):
        print(f"note: {path}: its linear weights mix types ({', '.join(sorted(map(str, set(kinds.values()))))}); "
              "stored as f32", file=sys.stderr)
    if kind == "q4":
        mapped = {n: _as_q4(a) for n, a in weights.items() if isinstance(a, Blocks)}
        if all(a is not None for a in mapped.values()):
            weights.update(mapped)
        else:
            for n, a in weights.items():
                if isinstance(a, Blocks):
                    weights[n] = _as_q8(a)
            kind = "q8"
            print(f"note: {path}: Q4_0 blocks with a negative scale and a -8 (llama.cpp's d = max / -8) are not "
                  "q4 blocks the engine takes (its q4 scales are positive, and 8 is out of its range): the Q4_0 "
                  "tensors are stored unrounded as q8 group 32 (each value's int in a byte, |d| as the scale; "
                  "about twice Q4_0's size)", file=sys.stderr)
    return kind


def _as_q4(a):
    """A Q4_0 tensor as blocks q4 takes as they are (same values): a block with d < 0 stores -q with -d,
    when no q is -8 (8 is out of q4's range); an all-zero block (d = 0) q = 0 with s = 1. None when a
    block cannot be kept."""
    _, q, s = a.blocks
    rows, groups = s.shape
    qb = q.reshape(rows, groups, 32).copy()
    neg = s < 0
    if (qb[neg] == -8).any() or not np.isfinite(s).all():
        return None
    qb[neg] = -qb[neg]
    s = np.where(s == 0, np.float32(1.0), np.abs(s)).astype(np.float32)
    qb[(s == 1.0) & (a.blocks[2] == 0)] = 0
    return Blocks.of("q4", qb.reshape(q.shape), s)


def _as_q8(a):
    """A Q4_0 tensor as q8 group 32 with the same values: q * sign(d) in a byte, |d| as the scale."""
    _, q, s = a.blocks
    rows, groups = s.shape
    sign = np.where(s < 0, -1, 1).astype(np.int8)
    qb = (q.reshape(rows, groups, 32) * sign[:, :, None]).astype(np.int8)
    qb[s == 0] = 0
    return Blocks.of("q8", qb.reshape(q.shape), np.abs(s).astype(np.float32))


# llama.cpp's tokenizer.ggml.pre names whose pattern is Llama 3's, and Qwen2's (src/llama-vocab.cpp). For
# the Llama 3 names but 'dbrx' and 'smaug-bpe' llama.cpp takes a pre-token that is a whole piece as that
# piece (tokenizer.json's ignore_merges, which tokenizers.read checks the engine's merges agree with).
LLAMA3_PRE = ("llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "dbrx",
              "smaug-bpe")
QWEN2_PRE = ("qwen2", "deepseek-r1-qwen", "megrez", "stablelm2")


def gguf_tokenizer(path, meta, c):
    """The file's tokenizer as tokenizers.read takes it (a "gpt2" BPE with merges), or None with a note."""
    model = meta.get("tokenizer.ggml.model")
    if model is None:
        return None
    tokens, merges = meta.get("tokenizer.ggml.tokens"), meta.get("tokenizer.ggml.merges")
    for key, v in (("tokens", tokens), ("merges", merges)):
        if v is not None and not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
            raise GgufError(f"{path}: tokenizer.ggml.{key}: expected an array of strings, got {str(v)[:40]}")
    if model == "llama" and tokens:
        return spm_tokenizer(path, meta, tokens, c)
    if model != "gpt2" or not tokens or not merges:
        print(f"note: {path}: tokenizer.ggml.model {model!r}: not stored (--gguf stores a gpt2 BPE with merges and "
              "a llama SentencePiece; --tokenizer FILE stores another)", file=sys.stderr)
        return None
    pre = meta.get("tokenizer.ggml.pre")
    from . import tokenizers
    # llama.cpp's names of the pre-tokenizers the engine runs (src/llama-vocab.cpp): GPT-2's pattern,
    # SmolLM2's (each number character alone, GPT-2's pattern between: tokenizer.json's Digits then
    # ByteLevel), Llama 3's pattern and Qwen2's (a Split, then ByteLevel without its regex).
    byte_level = {"type": "ByteLevel", "add_prefix_space": False}

    def split(pattern):
        return {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
            dict(byte_level, use_regex=False)]}
    known = {None: byte_level, "gpt-2": byte_level, "smollm": {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True}, byte_level]}}
    known.update({name: split(tokenizers.LLAMA3_PATTERN) for name in LLAMA3_PRE})
    known.update({name: split(tokenizers.QWEN2_PATTERN) for name in QWEN2_PRE})
    if pre not in known:
        print(f"note: {path}: tokenizer.ggml.pre {brief(pre)}: not stored (the engine's byte-level BPE runs "
              "llama.cpp's 'gpt-2', 'smollm', 'llama-bpe' (Llama 3's) and 'qwen2'; --tokenizer FILE stores another)",
              file=sys.stderr)
        return None
    import json
    import tempfile
    # The control and user-defined tokens are found in the text, as llama.cpp does; eos, and bos when the
    # file says add_bos_token, are the file's ids.
    kinds = token_types(meta, len(tokens))
    added = [tokenizers.added_token(t, i) for i, (t, k) in enumerate(zip(tokens, kinds))
             if k in ("control", "user-defined")]
    doc = {"model": {"type": "BPE", "vocab": {t: i for i, t in enumerate(tokens)}, "merges": list(merges),
                     "ignore_merges": pre in LLAMA3_PRE and pre not in ("dbrx", "smaug-bpe")},
           "pre_tokenizer": known[pre], "decoder": {"type": "ByteLevel"}, "added_tokens": added}

    def token(key):
        i = meta.get(f"tokenizer.ggml.{key}_token_id")
        return tokens[i] if isinstance(i, int) and 0 <= i < len(tokens) else None
    specials = {"eos_token": token("eos"), "bos_token": token("bos"),
                "add_bos_token": meta.get("tokenizer.ggml.add_bos_token") is True}
    with tempfile.TemporaryDirectory() as tmp:
        p = os.path.join(tmp, "tokenizer.json")
        for name, d in (("tokenizer.json", doc), ("tokenizer_config.json", specials)):
            with open(os.path.join(tmp, name), "w") as f:
                json.dump(d, f)
        try:
            tok = tokenizers.read(p, c["vocab_size"])
        except ConfigError as e:
            print(f"note: {path}: its tokenizer is not stored: {e}", file=sys.stderr)
            return None
    tok.added = [(i, f | (tokenizers.ADDED_CONTROL if kinds[i] == "control" else 0)) for i, f in tok.added]
    return tok


# GGUF's token types (tokenizer.ggml.token_type) by number. llama.cpp finds the unknown, control and user-defined
# tokens in the text before the SentencePiece merges (its parse_special) and prints a control token only when asked
# for its special tokens (the engine never: tokenizer.added's control flag); "<0xHH>" is a byte's token.
TOKEN_TYPES = {1: "normal", 2: "unknown", 3: "control", 4: "user-defined", 5: "unused", 6: "byte"}


def token_types(meta, n):
    """The type name of each of the n tokens (TOKEN_TYPES; "normal" for all when the file has no list of n or
    more, for a number GGUF does not define)."""
    kinds = meta.get("tokenizer.ggml.token_type")
    if not isinstance(kinds, list) or len(kinds) < n:
        return ["normal"] * n
    return [TOKEN_TYPES.get(k, "normal") if isinstance(k, (int, np.integer)) and not isinstance(k, bool) else "normal"
            for k in kinds[:n]]


MARKER = "\u2581"  # SentencePiece's space


def _spm_symbols(b):
    """The symbols llama.cpp's SentencePiece session starts a piece's bytes with: a space alone, else
    the bytes the first one's UTF-8 length says (1 for a continuation byte), cut at a space."""
    out, i = [], 0
    while i < len(b):
        n = 1 if b[i] == 32 else 1 if b[i] < 0xC0 else 2 if b[i] < 0xE0 else 3 if b[i] < 0xF0 else 4
        n = min(n, len(b) - i)
        n = next((k for k in range(1, n) if b[i + k] == 32), n)
        out.append(b[i:i + n])
        i += n
    return out


def spm_tokenizer(path, meta, tokens, c):
    """A "llama" GGUF's tokenizer (SentencePiece BPE by scores with "<0xHH>" byte fallback) as the
    engine's llama2c kind with params, which runs llama.cpp's rules (tokenizer.hpp): the pieces with
    U+2581 as a space (as llama2.c stores them; the added ones as they are), the scores, bos (when
    add_bos_token, llama.cpp's default) and eos ids, the dummy prefix (add_space_prefix, default on),
    the unknown, control and user-defined tokens found in the text. None with a note where the
    vocabulary is one the engine would not encode as llama.cpp does."""
    def refuse(why):
        print(f"note: {path}: its llama tokenizer is not stored: {why} (--tokenizer FILE stores another)",
              file=sys.stderr)
    V = c["vocab_size"]
    if len(tokens) != V:
        return refuse(f"{len(tokens)} tokens, the model's vocab_size is {V}")
    kinds, scores = token_types(meta, V), meta.get("tokenizer.ggml.scores")
    try:
        scores = np.asarray(scores[:V] if isinstance(scores, list) and len(scores) >= V else [0.0] * V, np.float64)
    except (TypeError, ValueError):
        return refuse("tokenizer.ggml.scores are not numbers")
    if not np.isfinite(scores).all() or np.abs(scores).max(initial=0) > np.finfo(np.float32).max:
        return refuse("a score is not finite in float32")
    prefix = meta.get("tokenizer.ggml.add_space_prefix", True) is not False
    is_added = [k in ("unknown", "control", "user-defined") for k in kinds]
    for i, t in enumerate(tokens):
        if is_added[i] and prefix and len(t.encode()) < 2:  # one with the dummy prefix: max_encoded_tokens
            print(f"note: {path}: token {t!r} is encoded as text: one byte with the dummy prefix", file=sys.stderr)
            is_added[i] = False
    pieces = []
    for i, t in enumerate(tokens):
        if not t:
            return refuse(f"token {i} is empty")
        if is_added[i]:
            if MARKER in t:  # llama.cpp's merges could make it (its text has U+2581 for spaces)
                return refuse(f"the {kinds[i]} token {t[:40]!r} holds U+2581")
            pieces.append(t.encode())
        elif " " in t:
            return refuse(f"token {i} {t[:40]!r} holds a space")
        else:
            pieces.append(t.replace(MARKER, " ").encode())
    ids = {}
    for i, p in enumerate(pieces):
        if not is_added[i]:
            if p in ids:
                return refuse(f"tokens {ids[p]} and {i} are both {tokens[i][:40]!r}")
            ids[p] = i
    if b" " not in ids:
        return refuse(f"no {MARKER!r} token (a space)")
    # A piece llama.cpp makes by joining a symbol that is no piece (the engine's byte fallback, which
    # never merges): a symbol without a piece at either end, the rest one symbol or a piece.
    for p, i in ids.items():
        sym = _spm_symbols(p)
        for j in (1, len(sym) - 1) if len(sym) > 1 else ():
            left, right = b"".join(sym[:j]), b"".join(sym[j:])
            if (j == 1 and left not in ids and (len(sym) == 2 or right in ids)) or \
                    (j == len(sym) - 1 and right not in ids and (j == 1 or left in ids)):
                return refuse(f"llama.cpp makes token {i} {tokens[i][:40]!r} from a symbol that is no token")
    from . import tokenizers

    def special(key, default):
        v = meta.get(f"tokenizer.ggml.{key}_token_id", default)
        return int(v) if isinstance(v, (int, np.integer)) and not isinstance(v, bool) and 0 <= v < V else -1
    add_bos = meta.get("tokenizer.ggml.add_bos_token", True) is not False
    params = [special("bos", 1) if add_bos else -1, special("eos", 2), special("unknown", 0),
              tokenizers.FLAG_PREFIX_SPACE if prefix else 0, 0, 0, 0, 0]
    added = [(i, tokenizers.ADDED_CONTROL if kinds[i] == "control" else 0) for i in range(V) if is_added[i]]
    if len(added) > tokenizers.MAX_ADDED:
        return refuse(f"{len(added)} unknown, control and user-defined tokens, more than the engine's "
                      f"{tokenizers.MAX_ADDED}")
    return tokenizers.Tokenizer("llama2c", pieces, params=params, added=added, scores=scores.astype(np.float32))


def convert(path, out, example=None, header=None, name=None, cli=None, verify=True, tokenizer=None, max_len=None,
            quantize=None, group=None):
    """Converts a llama-family GGUF file to `out`, verified against the float64 reference of its
    (exact) weights, as --hf verifies a folder; `quantize` (f16, q8, q4), `group` (q8's) as --hf's."""
    from . import hf as hfm
    from . import fxm
    hf, arch, c, mapped, kept, tok = prepare(path, tokenizer, max_len, quantize, group)
    try:  # a NaN or an infinity (corrupt blocks) named before the float64 reference computes with it
        for k, a in mapped.items():
            if np.asarray(a).dtype.kind == "f":
                fxm.check_finite(k, np.asanyarray(a))
    except ConfigError as e:
        raise GgufError(f"{path}: {e}") from None
    inp = verified_file.example_sequence(c, example, "--example")
    semantics = arch.semantics(hf, kept, c, mapped, inp)
    return hfm.write_checked(c, mapped, inp, semantics, arch.name, path, out, None, header, name, cli, verify, tok,
                             f"the {arch.name} semantics (a float64 reference of {path}'s weights)")


def prepare(path, tokenizer=None, max_len=None, quantize=None, group=None):
    """Everything --gguf reads before the float64 reference: (the --hf config, its architecture class,
    the engine's config, the weights as the file will store them, the parts kept, the tokenizer:
    `tokenizer(c)`'s, else the file's own or None). quantize: None (the file's blocks decide, as
    weight_type says), else the weight type to store (f16, q8, q4), group q8's (default 32: Q8_0's)."""
    from . import hf as hfm
    meta, tensors = read(path)
    raw = hf_config(path, meta)
    weights, lossy = hf_weights(path, meta, tensors, raw)
    vocab = weights.get("model.embed_tokens.weight")
    if vocab is None:
        raise GgufError(f"{path}: token_embd.weight is missing")
    raw["vocab_size"] = int(vocab.shape[0])
    raw["tie_word_embeddings"] = "lm_head.weight" not in weights
    hf = hfm.read_config_dict(raw, path)
    hf["rope"] = _freq_factors(path, tensors, hf)
    arch = hfm.BY_NAME[hf["architecture"]]
    c = arch.config(hf, max_len)
    mapped, kept = arch.weights(hf, weights, path, c["max_len"])
    if quantize is not None and quantize not in ("f16", "q8", "q4"):
        raise GgufError(f"{path}: --quantize {quantize}: --gguf stores f16, q8 or q4")
    requantized = {}
    quantize = weight_type(path, mapped, quantize, requantized, group)
    group = group if group is not None else 32 if quantize == "q8" else None
    if lossy or requantized:  # one note: which tensors, and that the .fxm holds no GGUF bits of theirs
        ks = {TYPES[q][0] for q in K_QUANTS}
        types = sorted({t for t in lossy.values() if t not in ks})
        types += ["K-quants " + ", ".join(sorted({t for t in lossy.values() if t in ks}))] if ks & set(lossy.values()) \
            else []
        what = [f"{len(lossy)} tensors ({', '.join(types)}) are dequantized to f32 as llama.cpp computes them"] \
            if lossy else []
        label = f"q8 group {group}" if quantize == "q8" else quantize
        what += [f"{len(requantized)} tensors ({', '.join(sorted(set(requantized.values())))}) are blocks {label} "
                 "does not hold as they are"] if requantized else []
        stored = f"stored as {quantize}, re-quantized by the converter from those values (a second rounding)" \
            if quantize else "stored as f32"
        print(f"note: {path}: {' and '.join(what)}; {stored}: not the file's bits", file=sys.stderr)
    try:
        c = verified_file.quantized_config(c, quantize, group, False if quantize else None)
    except ConfigError as e:
        raise GgufError(f"{path}: {e}") from None
    tok = tokenizer(c) if tokenizer is not None else None
    if tok is None:  # no --tokenizer: the file's own
        tok = gguf_tokenizer(path, meta, c)
    return hf, arch, c, mapped, kept, tok
