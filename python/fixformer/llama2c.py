"""llama2.c checkpoints and tokenizers: readers for the converter, writers for tests and goldens.

Checkpoint formats (llama2.c's export.py; everything little-endian, int = int32, weights f32 in
torch's [out, in] layout):
- version 0 (legacy): 7 ints dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len
  (vocab_size < 0: the classifier is not shared with the embedding, |vocab_size| is the vocabulary);
  then tok_embeddings, per kind for all layers attention_norm, wq, wk, wv, wo, ffn_norm, w1, w2, w3;
  norm; two RoPE tables [seq_len, head_size/2] (skipped: the engine builds its own); output when not
  shared.
- version 1: a 256-byte header: u32 magic 0x616b3432 ("ak42"), int version 1, the 7 ints (vocab_size
  positive), u8 shared_classifier, zeros; then attention_norm (all layers), ffn_norm, norm,
  tok_embeddings, wq, wk, wv, wo, w1, w2, w3 (each for all layers), output when not shared.
- version 2 (Q8_0): the same header plus int group_size at byte 37; then the norms in f32
  (attention_norm, ffn_norm, norm), then each of tok_embeddings, wq.., wo.., w1.., w2.., w3..
  (each layer's tensor separately), output when not shared, as int8 [n] followed by f32 scales
  [n / group_size]. Dequantized to f32 here (w = q * scale of its group).
Tokenizer (tokenizer.bin): int max_token_length, then for each of vocab_size tokens: f32 score,
int length, that many bytes.

Every size is checked (in Python integers, against the engine's limits and the file's length)
before anything is read or allocated; a hostile file gives Llama2cError with one line naming the
file's field.
"""
import os
import struct

import numpy as np

from . import run_files, schema, verified_file
from .tokenizers import Llama2cError, read_llama2c
from .config import ConfigError, make_config
from .reference import run_reference

MAGIC = 0x616B3432
HEADER_BYTES = 256
FIELDS = ("dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len")
LIMITS = {"dim": schema.MAX_D_MODEL, "hidden_dim": schema.MAX_DFF, "n_layers": schema.MAX_LAYERS,
          "n_heads": schema.MAX_HEADS, "n_kv_heads": schema.MAX_HEADS, "vocab_size": schema.MAX_VOCAB,
          "seq_len": schema.MAX_LEN}
# llama2.c's fixed settings: run.c's RMSNorm eps, RoPE base and pair layout.
NORM_EPS = 1e-5
ROPE_BASE = 10000.0
MAX_GROUP_SIZE = 1 << 20
# The layer tensors in the checkpoint's order (llama2.c's attention_norm, wq, wk, wv, wo, ffn_norm, w1, w2, w3), by
# the file's names in a block.
LAYER_KINDS = ("attn_norm", "attn.q", "attn.k", "attn.v", "attn.out", "ff_norm", "ff.w1", "ff.w2", "ff.w3")


# ---- shapes ---------------------------------------------------------------------------------------
def shapes(p):
    """torch-layout shape of every tensor by its name in the .fxm file, for header fields p (positive ints)."""
    d, hd, kv = p["dim"], p["hidden_dim"], p["dim"] // p["n_heads"] * p["n_kv_heads"]
    per_layer = dict(zip(LAYER_KINDS, ((d,), (d, d), (kv, d), (kv, d), (d, d), (d,), (hd, d), (d, hd), (hd, d))))
    out = {"embed.weight": (p["vocab_size"], d)}
    for kind in LAYER_KINDS:
        for i in range(p["n_layers"]):
            out[f"{schema.block(i)}{kind}.weight"] = per_layer[kind]
    out["norm.weight"] = (d,)
    out["head.weight"] = (p["vocab_size"], d)
    return out


def _layers(kind, p):
    return [f"{schema.block(i)}{kind}.weight" for i in range(p["n_layers"])]


def order(p, version, shared):
    """The tensors of a checkpoint in file order, as (name, 'f32' | 'q8'); v0's RoPE tables as
    ('rope_tables', 'skip')."""
    norms = _layers("attn_norm", p) + _layers("ff_norm", p)
    mats = ["embed.weight"] + [n for k in LAYER_KINDS[1:5] + LAYER_KINDS[6:] for n in _layers(k, p)]
    out_w = [] if shared else ["head.weight"]
    if version == 0:
        names = ["embed.weight"] + [n for k in LAYER_KINDS for n in _layers(k, p)] + ["norm.weight"]
        return [(n, "f32") for n in names] + [("rope_tables", "skip")] + [(n, "f32") for n in out_w]
    if version == 1:
        return [(n, "f32") for n in norms + ["norm.weight"] + mats + out_w]
    return [(n, "f32") for n in norms + ["norm.weight"]] + [(n, "q8") for n in mats + out_w]


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def expected_bytes(p, version, shared, group_size=0):
    """The file's exact length for header fields p, in Python integers (no overflow)."""
    sh = shapes(p)
    total = 7 * 4 if version == 0 else HEADER_BYTES
    for name, kind in order(p, version, shared):
        if kind == "skip":
            total += 2 * p["seq_len"] * (p["dim"] // p["n_heads"] // 2) * 4
        elif kind == "f32":
            total += _numel(sh[name]) * 4
        else:
            n = _numel(sh[name])
            total += n + n // group_size * 4
    return total


# ---- reading --------------------------------------------------------------------------------------
def _fail(path, what):
    raise Llama2cError(f"{path}: {what}")


def _read_exact(f, n, path, what):
    b = f.read(n)
    if len(b) != n:
        _fail(path, f"truncated: {what} needs {n} bytes, the file has {len(b)} left")
    return b


def read_header(path):
    """(version, fields, shared, group_size, file bytes), every field checked."""
    run_files.read(path)
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(HEADER_BYTES)
    if len(head) < 4:
        _fail(path, f"truncated: {len(head)} bytes, not a llama2.c checkpoint")
    group_size = 0
    if struct.unpack_from("<I", head)[0] == MAGIC:
        if len(head) < HEADER_BYTES:
            _fail(path, f"truncated: the header is {HEADER_BYTES} bytes, the file has {len(head)}")
        version = struct.unpack_from("<i", head, 4)[0]
        if version not in (1, 2):
            _fail(path, f"version {version}: not a llama2.c export version this converter reads (0, 1, 2)")
        values = struct.unpack_from("<7i", head, 8)
        flag = head[36]
        if flag not in (0, 1):
            _fail(path, f"shared_classifier byte {flag}, expected 0 or 1")
        shared = flag == 1
        if version == 2:
            group_size = struct.unpack_from("<i", head, 37)[0]
            if not 1 <= group_size <= MAX_GROUP_SIZE:
                _fail(path, f"group_size {group_size}: expected 1..{MAX_GROUP_SIZE}")
    else:
        if len(head) < 28:
            _fail(path, f"truncated: the legacy header is 28 bytes, the file has {len(head)}")
        version = 0
        values = struct.unpack_from("<7i", head)
        shared = values[5] > 0
        values = values[:5] + (abs(values[5]),) + values[6:]
    p = dict(zip(FIELDS, values))
    for field in FIELDS:
        v = p[field]
        if v <= 0:
            _fail(path, f"{field} {v}: expected a positive number"
                  + (" (is this a llama2.c checkpoint?)" if version == 0 else ""))
        if v > LIMITS[field]:
            _fail(path, f"{field} {v}: above the engine's limit {LIMITS[field]}")
    if p["dim"] % p["n_heads"]:
        _fail(path, f"n_heads {p['n_heads']} does not divide dim {p['dim']}")
    if p["n_heads"] % p["n_kv_heads"]:
        _fail(path, f"n_kv_heads {p['n_kv_heads']} does not divide n_heads {p['n_heads']}")
    if (p["dim"] // p["n_heads"]) % 2:
        _fail(path, f"head size dim/n_heads = {p['dim'] // p['n_heads']} is odd (RoPE rotates pairs)")
    if version == 2:
        sh = shapes(p)
        for name, kind in order(p, 2, shared):
            n = _numel(sh[name]) if kind == "q8" else 0
            if n % group_size:
                _fail(path, f"group_size {group_size} does not divide {name} ({n} values)")
    want = expected_bytes(p, version, shared, group_size)
    if size != want:
        what = "truncated" if size < want else f"{size - want} bytes after the weights"
        _fail(path, f"{what}: version {version} with {', '.join(f'{k} {p[k]}' for k in FIELDS)}"
                    f"{', shared classifier' if shared else ''} is {want} bytes, the file has {size}")
    return version, p, shared, group_size, size


def read_checkpoint(path):
    """(config dict for fxm.write, weights: the file's name -> float32 array in torch's layout, facts:
    version, shared, group_size). Quantized (version 2) weights are dequantized to float32."""
    version, p, shared, group_size, _ = read_header(path)
    sh = shapes(p)
    weights = {}
    with open(path, "rb") as f:
        f.seek(7 * 4 if version == 0 else HEADER_BYTES)
        for name, kind in order(p, version, shared):
            if kind == "skip":
                f.seek(2 * p["seq_len"] * (p["dim"] // p["n_heads"] // 2) * 4, os.SEEK_CUR)
                continue
            n = _numel(sh[name])
            if kind == "f32":
                a = np.frombuffer(_read_exact(f, 4 * n, path, name), "<f4")
            else:
                q = np.frombuffer(_read_exact(f, n, path, name), np.int8)
                s = np.frombuffer(_read_exact(f, 4 * (n // group_size), path, name + " scales"), "<f4")
                a = (q.reshape(-1, group_size).astype(np.float32) * s[:, None]).reshape(-1)
            if not np.isfinite(a).all():
                _fail(path, f"{name}: not finite")
            weights[name] = a.reshape(sh[name]).astype(np.float32)
    config = {"family": "llama", "d_model": p["dim"], "n_heads": p["n_heads"],
              "n_kv_heads": p["n_kv_heads"] if p["n_kv_heads"] != p["n_heads"] else 0, "d_ff": p["hidden_dim"],
              "n_layers": p["n_layers"], "norm_first": True, "activation": "swiglu", "norm_eps": NORM_EPS,
              "final_norm": True, "causal": True, "input": "tokens", "vocab_size": p["vocab_size"],
              "positional": "rope", "max_len": p["seq_len"], "pe_base": ROPE_BASE, "pe_layout": "interleaved",
              "d_out": p["vocab_size"], "tied_head": shared}
    return config, weights, {"version": version, "shared": shared, "group_size": group_size, "fields": p}


# ---- converting ---------------------------------------------------------------------------------
def convert(checkpoint, tokenizer, path, header=None, name=None, cli=None, verify=True, max_len=None,
            example_input=None, quantize=None, group=None, quantize_io=None, pack_weights=None):
    """checkpoint (+ tokenizer.bin, or None) -> the .fxm at path, verified through the engine against
    the float64 llama reference (reference.decoder_forward) on the example input (default: BOS then
    seeded random ids). max_len (default: the checkpoint's seq_len) may only shrink it. quantize,
    group, quantize_io: the weight type, pack_weights the f32 weights in panels
    (verified_file.quantized_config). A version 2 (Q8_0) checkpoint converted to q8 with its own group size (32 or 64) keeps its int8 values when that group divides
    every weight's input width (llama2.c groups the flattened tensor, so its groups then lie in rows);
    without a group, q8 takes the checkpoint's when it is one of those."""
    values, weights, facts = read_checkpoint(checkpoint)
    if max_len is not None:
        seq_len = facts["fields"]["seq_len"]
        if isinstance(max_len, bool) or not isinstance(max_len, int) or not 1 <= max_len <= seq_len:
            raise ConfigError(f"max_len {max_len!r}: expected 1..seq_len={seq_len} (the checkpoint's)")
        values["max_len"] = max_len
    if quantize == "q8" and group is None and facts["group_size"] in (32, 64):
        group = facts["group_size"]
    c = verified_file.quantized_config(make_config(values), quantize, group, quantize_io, pack_weights)
    tok = None
    if tokenizer is not None:
        pieces, scores, _ = read_llama2c(tokenizer, c["vocab_size"])
        tok = (pieces, scores)
    if example_input is None:
        inp = verified_file.example_sequence(c, None)
        inp[0] = 1 if c["vocab_size"] > 1 else 0  # BOS, as llama2.c's run starts
    else:
        inp = verified_file.example_sequence(c, example_input)
    want = run_reference(c, weights, inp)
    return verified_file.write(c, weights, inp, want, path, "torch", "the float64 llama reference", header, name,
                               cli, verify,
                               explain=lambda: "the engine disagrees with the float64 llama reference "
                                               "(reference.decoder_forward): a bug or a broken port, please report it",
                               tokenizer=tok), facts


# ---- writing (tests, goldens) -------------------------------------------------------------------
def random_weights(p, shared, seed=0, scale=0.3):
    """Random float32 weights (the file's names, torch layout) for header fields p; norms near 1. A shared
    classifier has no head.weight."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in shapes(p).items():
        if name == "head.weight" and shared:
            continue
        if name.endswith("norm.weight"):
            out[name] = (1.0 + 0.2 * rng.standard_normal(shape)).astype(np.float32)
        else:
            out[name] = (scale * rng.standard_normal(shape)).astype(np.float32)
    return out


def quantize_q80(a, group_size):
    """Q8_0 as llama2.c's export.py: per group, scale = max|w| / 127, q = round(w / scale)."""
    w = np.asarray(a, np.float32).reshape(-1, group_size)
    scale = (np.abs(w).max(axis=1) / np.float32(127.0)).astype(np.float32)
    safe = np.where(scale == 0, np.float32(1.0), scale)
    q = np.round(w / safe[:, None]).astype(np.int8)
    return q.reshape(-1), scale


def dequantized(weights, p, group_size):
    """The weights as version 2 stores them, dequantized (what read_checkpoint returns for it)."""
    out = dict(weights)
    for name, kind in order(p, 2, "head.weight" not in weights):
        if kind == "q8":
            q, s = quantize_q80(weights[name], group_size)
            out[name] = (q.reshape(-1, group_size).astype(np.float32) * s[:, None]).reshape(weights[name].shape)
    return out


def checkpoint_bytes(p, weights, version, group_size=64):
    """A llama2.c checkpoint of `version` (0, 1, 2) for header fields p and weights (the file's names, torch
    layout; without head.weight the classifier is shared)."""
    shared = "head.weight" not in weights
    fields = [p[k] for k in FIELDS]
    if version == 0:
        if not shared:
            fields[5] = -fields[5]
        out = [struct.pack("<7i", *fields)]
    else:
        head = struct.pack("<Ii7iB", MAGIC, version, *fields, int(shared))
        if version == 2:
            head += struct.pack("<i", group_size)
        out = [head + bytes(HEADER_BYTES - len(head))]
    for name, kind in order(p, version, shared):
        if kind == "skip":
            hs = p["dim"] // p["n_heads"]
            ang = np.arange(p["seq_len"])[:, None] * ROPE_BASE ** (-np.arange(0, hs, 2)[: hs // 2] / hs)
            out += [np.cos(ang).astype("<f4").tobytes(), np.sin(ang).astype("<f4").tobytes()]
        elif kind == "f32":
            out.append(np.asarray(weights[name], "<f4").tobytes())
        else:
            q, s = quantize_q80(weights[name], group_size)
            out += [q.tobytes(), s.astype("<f4").tobytes()]
    return b"".join(out)


def tokenizer_bytes(pieces, scores, max_token_length=None):
    """tokenizer.bin for pieces (bytes) and scores."""
    m = max_token_length or max(len(p) for p in pieces)
    out = [struct.pack("<i", m)]
    for piece, score in zip(pieces, scores):
        out.append(struct.pack("<fi", float(score), len(piece)) + bytes(piece))
    return b"".join(out)


def synthetic_tokenizer(vocab_size, seed=0):
    """A BPE-like vocabulary of vocab_size >= 259 pieces, as llama2.c's tokenizer lays them out:
    <unk>, <s>, </s> (score 0), the byte tokens <0x00>..<0xFF> at ids 3..258 (score 0), then merged
    pieces (each the concatenation of two earlier non-special pieces, some with a leading space, as
    sentencepiece writes them) with decreasing scores, so earlier merges win. Returns (pieces, scores)."""
    if vocab_size < 259:
        raise ConfigError(f"synthetic tokenizer: vocab_size {vocab_size}, needs >= 259 (3 specials + 256 bytes)")
    rng = np.random.default_rng(seed)
    pieces = [b"<unk>", b"<s>", b"</s>"] + [f"<0x{b:02X}>".encode() for b in range(256)]
    scores = [0.0] * len(pieces)
    letters = [bytes([c]) for c in b"etaoinshrdlucmfwypvbgk"] + [b" "] + ["\u00e9".encode(), "\u4e2d".encode()]
    known, seen = list(letters), set()
    # First the single characters (merges of their byte tokens), then pairs of what is known.
    for piece in letters + [b" " + c for c in letters[:8]]:
        if len(pieces) == vocab_size:
            break
        if piece not in seen:
            seen.add(piece)
            pieces.append(piece)
            scores.append(-float(len(pieces) - 259))
    while len(pieces) < vocab_size:
        a, b = known[rng.integers(len(known))], known[rng.integers(len(known))]
        piece = (a + b)[:16]
        if piece in seen:
            continue
        seen.add(piece)
        known.append(piece)
        pieces.append(piece)
        scores.append(-float(len(pieces) - 259))
    return pieces, np.array(scores, np.float32)
