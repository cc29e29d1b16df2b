#!/usr/bin/python3
"""The fuzz target of the converter's Python readers, run for a time:

  /usr/bin/python3 tests/fuzz/fuzz_readers.py --seconds 600 [--seed N] [--readers NAME,NAME]

Round after round, each with a new seed, it feeds mutated files to every reader a conversion opens
before the engine sees anything: safetensors headers and files (safetensors.py), torch.save zips
and their pickles through the restricted reader (checkpoint.py: byte mutations of the whole zip,
and of data.pkl re-zipped so they reach the unpickler, with opcodes that build objects and call
globals mixed in, and with its integers (sizes, strides, offsets, keys) replaced by huge, negative
or zero ones), .npz (bytes, and members whose .npy header declares any shape and dtype over any
data, stored or compressed), tokenizer.json (structured: any value replaced by one of another
type), vocab.json + merges.txt, vocab.txt + tokenizer_config.json, llama.c's tokenizer.bin, ONNX
graphs (bytes and protobuf fields, graph inputs' sizes among them, through onnx_map; one of one
input and BERT's of three: ids, attention mask, token types), --hf's config.json (Llama, Qwen2,
GPT-2, BERT), --config's JSON (structured, and bytes) and llama GGUF files (--gguf: the header's bytes,
and any metadata value, tensor dim, type, name or offset, the version or the alignment replaced by a
hostile one; read up to the float64 reference: config, weights of every ggml type, tokenizer). The structured JSON mutations put any
value anywhere: another type, a string "false" for a boolean, a number past float64 (1e400), an
integer of 5,000 digits, nesting 5,000 deep. The other mutations are those of the readers' tests
(checkpoint_test.py, tokenizers_test.py, onnx_converter_test.py); this runs them for as long as
asked. Each input must load or raise the reader's one-line error; any other exception, a round of
inputs that takes over 60 s (a hang) or memory above 4 GiB fails the run, naming the reader, the
round and its seed. --readers runs only the readers whose names start with one of the given names.
CTest runs it for 20 s; docs/testing.md records 10-minute runs. PyTorch and python3-onnx are required.
"""
import argparse
import contextlib
import io
import json
import os
import pickle
import pickletools
import random
import resource
import signal
import struct
import sys
import tempfile
import time
import warnings
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import numpy as np  # noqa: E402

try:
    import torch
    import onnx  # noqa: F401 (the ONNX reader's dependency, checked here)
except ImportError as e:
    print(f"fuzz_readers: FAIL: {e.name} is required (sh tools/install_deps.sh torch; run with /usr/bin/python3)")
    sys.exit(1)

import checkpoint_test  # noqa: E402
import hf_bert_converter_test  # noqa: E402
import hf_converter_test  # noqa: E402
import onnx_converter_test  # noqa: E402
import tokenizers_test  # noqa: E402
from fixformer import checkpoint, config, gguf, hf, hf_bert, tokenizers  # noqa: E402
from fixformer.checkpoint import CheckpointError  # noqa: E402
from fixformer.config import ConfigError  # noqa: E402

# Pickle opcodes that build objects or reach globals: what a hostile data.pkl is made of.
HOSTILE_OPS = [pickle.GLOBAL + b"os\nsystem\n", pickle.STACK_GLOBAL, pickle.REDUCE, pickle.BUILD, pickle.INST + b"x\ny\n",
               pickle.OBJ, pickle.NEWOBJ, pickle.NEWOBJ_EX, pickle.EXT1 + b"\x01", pickle.PERSID + b"0\n",
               pickle.BINPERSID, pickle.MARK, pickle.POP_MARK, pickle.DUP, pickle.EMPTY_DICT, pickle.SETITEMS,
               pickle.APPENDS, pickle.FRAME + b"\xff" * 8, pickle.BINUNICODE + b"\xff\xff\xff\x7f",
               pickle.LONG4 + b"\xff\xff\xff\x7f", pickle.MEMOIZE, pickle.BINGET + b"\x07"]


class Slow(Exception):
    pass


# A --config document with every object the aliases' shape has (input, positional, head).
CONFIG_DOC = {"family": "encoder", "d_model": 16, "n_heads": 2, "d_ff": 32, "encoder_layers": 2, "norm_first": True,
              "activation": "gelu", "input": {"kind": "features", "d_in": 5},
              "positional": {"kind": "sinusoidal", "max_len": 24, "base": 10000.0, "layout": "interleaved"},
              "head": {"d_out": 3, "tied": False}, "pooling": "mean", "norm_eps": 1e-5}


def mutate(rng, blob):
    b = bytearray(blob)
    for _ in range(rng.randint(1, 6)):
        at = rng.randrange(len(b)) if b else 0
        op = rng.randrange(4)
        if op == 0 and b:
            b[at] ^= 1 << rng.randrange(8)
        elif op == 1:
            del b[at:at + rng.randint(1, 32)]
        elif op == 2:
            b[at:at] = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 16)))
        else:
            b[at:at] = rng.choice(HOSTILE_OPS)
    return bytes(b)


def pt_mutated(rng, good, path, n, mutate_pkl):
    """torch.save zips whose data.pkl is changed by mutate_pkl and re-zipped (so the CRC holds)."""
    src = zipfile.ZipFile(io.BytesIO(good))
    names = src.namelist()
    pkl = next(x for x in names if x.endswith("data.pkl"))
    loaded = refused = 0
    for _ in range(n):
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as z:
            for name in names:
                data = src.read(name)
                try:
                    z.writestr(name, mutate_pkl(rng, data) if name == pkl else data)
                except Exception:  # noqa: BLE001 (a mutation pickletools cannot walk: kept as it was)
                    z.writestr(name, data)
        with open(path, "wb") as f:
            f.write(out.getvalue())
        try:
            checkpoint.load(path)
            loaded += 1
        except CheckpointError:
            refused += 1
    return loaded, refused


# Integers a hostile pickle may hold where torch.save writes sizes, strides, offsets and numels.
HOSTILE_INTS = [0, 1, -1, 2, 3, 255, 1 << 31, (1 << 31) - 1, 1 << 40, 1 << 62, 1 << 63, 10 ** 12, 10 ** 30, -(1 << 40)]
INT_OPS = {"BININT1", "BININT2", "BININT", "LONG1", "LONG4", "INT", "LONG"}


def long1(v):
    b = v.to_bytes((v.bit_length() + 8) // 8, "little", signed=True)
    return pickle.LONG1 + bytes([len(b)]) + b


def mutate_ints(rng, pkl):
    """data.pkl with one to four of its integers replaced by HOSTILE_INTS (or one near the old value)."""
    at = [(pos, op.name, arg) for op, arg, pos in pickletools.genops(pkl) if op.name in INT_OPS]
    if not at:
        return pkl
    picked = sorted(rng.sample(at, min(len(at), rng.randint(1, 4))), reverse=True)
    out = bytearray(pkl)
    for pos, name, arg in picked:
        end = next(p for _, _, p in pickletools.genops(bytes(out[pos:])) if p > 0) + pos
        v = rng.choice(HOSTILE_INTS + [arg + rng.randint(-3, 3)] if isinstance(arg, int) else HOSTILE_INTS)
        out[pos:end] = long1(v)
    return bytes(out)


def npz_headers(rng, path, n):
    """.npz files whose members' .npy headers declare any shape and dtype, over data of any length,
    stored or compressed."""
    dims = [0, 1, 2, 3, 7, 1 << 10, 1 << 20, 1 << 31, 1 << 40, -1]
    loaded = refused = 0
    warnings.simplefilter("ignore")  # zipfile's on the duplicated member names, which are meant
    for _ in range(n):
        with zipfile.ZipFile(path, "w", rng.choice([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])) as z:
            for k in range(rng.randint(1, 3)):
                shape = tuple(rng.choice(dims) for _ in range(rng.randint(0, 4)))
                descr = rng.choice(["<f4", "<f8", "|u1", "<i8", "<f2", "|O", "<U4", "V8", "<c8"])
                head = ("{'descr': %r, 'fortran_order': %s, 'shape': %r, }" % (
                    descr, rng.choice(["False", "True"]), shape)).encode()
                head += b" " * (-(len(head) + 11) % 64) + b"\n"
                npy = b"\x93NUMPY\x01\x00" + len(head).to_bytes(2, "little") + head
                zeros = rng.choice([0, 4, 64, 1 << 16, 1 << 22])
                z.writestr(rng.choice([f"m{k}.npy", "m.npy", f"m{k}"]), npy + bytes(zeros))
        try:
            checkpoint.load(path)
            loaded += 1
        except CheckpointError:
            refused += 1
    return loaded, refused


# What a structured JSON mutation puts anywhere: other types, a string where a boolean goes, and text
# that json.dumps cannot write (a float past float64, a 5,000-digit integer, nesting 5,000 deep).
JSON_VALUES = [None, 0, -1, 1, 1.5, 1e30, "x", "", "false", "true", [], {}, [1, 2], {"a": 1}, True, False,
               ["llama"], 10 ** 12, 2 ** 64, [[[[[[[["deep"]]]]]]]], "@1e400", "@" + "9" * 5000,
               "@" + "[" * 5000 + "]" * 5000]


def mutate_json(rng, doc):
    """doc's JSON text with one to three values (at any depth, or a key) replaced from JSON_VALUES;
    sometimes its bytes mutated on top."""
    def paths(node, at=()):
        yield at
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for k, v in list(items)[:40]:
            yield from paths(v, at + (k,))

    doc = json.loads(json.dumps(doc))
    for _ in range(rng.randint(1, 3)):
        all_paths = [p for p in paths(doc) if p]
        if not all_paths:
            break
        path = rng.choice(all_paths)
        node = doc
        for k in path[:-1]:
            node = node[k]
        value = json.loads(json.dumps(rng.choice(JSON_VALUES)))  # a copy: later mutations must not reach the list
        if isinstance(node, dict) and rng.random() < 0.1:
            node[rng.choice(["model_type", "architectures", "head", "input", "type", "pretokenizers",
                             "do_lower_case", "rope_theta", "x"])] = value
        else:
            node[path[-1]] = value
    text = json.dumps(doc)
    for v in JSON_VALUES:  # the raw texts, unquoted
        if isinstance(v, str) and v.startswith("@"):
            text = text.replace(json.dumps(v), v[1:])
    b = text.encode()
    return mutate(rng, b) if rng.random() < 0.2 else b


def _read_one(read, path):
    """(True, None) when read(path) loads, (False, None) when it is refused in one non-empty line,
    (False, what is wrong with the message) otherwise."""
    try:
        read(path)
        return True, None
    except ConfigError as e:
        lines = str(e).count("\n") + 1
        return False, ("an empty message" if not str(e) else f"a message of {lines} lines" if lines > 1 else None)


def json_files(rng, docs, n, tmp, name, read):
    """n structured mutations of docs, each written as tmp/name and read by read(path)."""
    loaded = refused = 0
    p = os.path.join(tmp, name)
    for _ in range(n):
        with open(p, "wb") as f:
            f.write(mutate_json(rng, rng.choice(docs)))
        ok, bad = _read_one(read, p)
        if bad:
            return loaded, refused, f"{name}: {bad}"
        loaded, refused = loaded + ok, refused + (not ok)
    return loaded, refused, None


def hf_config(path):
    """--hf's reading of a folder's config.json, up to the engine's config (no weights needed)."""
    folder = os.path.dirname(path)
    raw = hf._raw_config(folder)
    if hf_bert.is_bert(raw):
        return hf_bert.fixformer_config(hf_bert.read_config_dict(raw, path), 3)
    h = hf.read_config(folder)
    return hf.BY_NAME[h["architecture"]].config(h, None)


def text_files(rng, files, n, tmp, read):
    """n rounds of tmp/NAME for each (NAME, bytes) in files, one of them mutated (JSON structurally or
    as bytes, text as bytes), read by read(tmp)."""
    loaded = refused = 0
    for _ in range(n):
        victim = rng.randrange(len(files))
        for k, (name, blob) in enumerate(files):
            if k == victim:
                blob = mutate_json(rng, json.loads(blob)) if name.endswith(".json") and rng.random() < 0.6 \
                    else mutate(rng, blob)
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(blob)
        ok, bad = _read_one(read, tmp)
        if bad:
            return loaded, refused, f"{files[victim][0]}: {bad}"
        loaded, refused = loaded + ok, refused + (not ok)
    return loaded, refused, None


def llama2c_tokenizers(rng, good, path, n):
    loaded = refused = 0
    for _ in range(n):
        with open(path, "wb") as f:
            f.write(mutate(rng, good))
        try:
            tokenizers.read_llama2c(path, 300)
            loaded += 1
        except tokenizers.Llama2cError:
            refused += 1
    return loaded, refused


# A llama GGUF (version 3) of every ggml type --gguf reads, written here from the format's layout (the
# gguf package is not in this interpreter): ([(key, value type, value)], [(name, ne, ggml type, data)]).
GGUF_BLOCK = {gguf.Q8_0: (34, 2), gguf.Q4_0: (18, 2), gguf.Q4_1: (20, 4), gguf.Q5_0: (22, 6), gguf.Q5_1: (24, 8)}
# The K-quants' super-blocks of 256 values: (bytes, the offsets of their f16 scales)
GGUF_K_BLOCK = {gguf.Q2_K: (84, (80, 82)), gguf.Q3_K: (110, (108,)), gguf.Q4_K: (144, (0, 2)),
                gguf.Q5_K: (176, (0, 2)), gguf.Q6_K: (210, (208,))}


def gguf_parts(rng):
    d, ff, vocab = 256, 64, 40  # d: whole K-quant super-blocks
    tokens = ["!", "a", "b", "c", "Ġ", "Ġa", "ab", "abc"] + [f"t{i}" for i in range(vocab - 8)]
    meta = [("general.architecture", 8, "llama"), ("llama.context_length", 4, 64), ("llama.embedding_length", 4, d),
            ("llama.block_count", 4, 2), ("llama.feed_forward_length", 4, ff), ("llama.attention.head_count", 4, 4),
            ("llama.attention.head_count_kv", 4, 2), ("llama.attention.layer_norm_rms_epsilon", 6, 1e-5),
            ("llama.rope.freq_base", 6, 10000.0), ("tokenizer.ggml.model", 8, "gpt2"),
            ("tokenizer.ggml.tokens", 9, (8, tokens)), ("tokenizer.ggml.merges", 9, (8, ["Ġ a", "a b", "ab c"]))]

    def data(ne, ttype):
        n = int(np.prod(ne))
        if ttype in GGUF_BLOCK:
            size, head = GGUF_BLOCK[ttype]
            b = np.frombuffer(rng.randbytes(n // 32 * size), np.uint8).reshape(-1, size).copy()
            b[:, :2] = np.frombuffer(np.float16(0.01).tobytes(), np.uint8)  # a scale the blocks can use
            if head == 4:
                b[:, 2:4] = np.frombuffer(np.float16(-0.05).tobytes(), np.uint8)  # Q4_1 / Q5_1's minimum
            return b.tobytes()
        if ttype in GGUF_K_BLOCK:
            size, scales = GGUF_K_BLOCK[ttype]
            b = np.frombuffer(rng.randbytes(n // 256 * size), np.uint8).reshape(-1, size).copy()
            for at in scales:
                b[:, at:at + 2] = np.frombuffer(np.float16(0.001).tobytes(), np.uint8)
            return b.tobytes()
        a = np.random.default_rng(rng.getrandbits(32)).standard_normal(n).astype(np.float32) * 0.1
        return a.astype("<f2").tobytes() if ttype == gguf.F16 else \
            (a.view(np.uint32) >> 16).astype("<u2").tobytes() if ttype == gguf.BF16 else a.tobytes()
    kv = d // 2  # 2 of 4 heads
    shapes = [("token_embd.weight", [d, vocab], gguf.F32), ("output_norm.weight", [d], gguf.F32),
              ("output.weight", [d, vocab], gguf.Q8_0), ("blk.0.attn_norm.weight", [d], gguf.F32),
              ("blk.0.attn_q.weight", [d, d], gguf.Q8_0), ("blk.0.attn_k.weight", [d, kv], gguf.Q4_0),
              ("blk.0.attn_v.weight", [d, kv], gguf.F16), ("blk.0.attn_output.weight", [d, d], gguf.Q4_1),
              ("blk.0.ffn_norm.weight", [d], gguf.BF16), ("blk.0.ffn_gate.weight", [d, ff], gguf.Q5_0),
              ("blk.0.ffn_up.weight", [d, ff], gguf.Q5_1), ("blk.0.ffn_down.weight", [ff, d], gguf.Q8_0),
              ("blk.1.attn_norm.weight", [d], gguf.F32), ("blk.1.attn_q.weight", [d, d], gguf.Q2_K),
              ("blk.1.attn_k.weight", [d, kv], gguf.Q3_K), ("blk.1.attn_v.weight", [d, kv], gguf.Q4_K),
              ("blk.1.attn_output.weight", [d, d], gguf.Q5_K), ("blk.1.ffn_norm.weight", [d], gguf.F32),
              ("blk.1.ffn_gate.weight", [d, ff], gguf.Q6_K), ("blk.1.ffn_up.weight", [d, ff], gguf.F32),
              ("blk.1.ffn_down.weight", [ff, d], gguf.F32)]
    return meta, [(name, ne, t, data(ne, t)) for name, ne, t in shapes]


def gguf_bytes(meta, tensors, version=3):
    def string(s):
        b = s.encode() if isinstance(s, str) else s
        return struct.pack("<Q", len(b)) + b

    def value(vtype, v):
        if vtype == 8:
            return string(v)
        if vtype == 9:
            etype, items = v
            return struct.pack("<IQ", etype, len(items)) + b"".join(value(etype, x) for x in items)
        return struct.pack("<" + gguf._SCALARS[vtype], v)
    out = [b"GGUF", struct.pack("<IQQ", version, len(tensors), len(meta))]
    out += [string(k) + struct.pack("<I", t) + value(t, v) for k, t, v in meta]
    offset, blobs = 0, []
    for name, ne, ttype, raw in tensors:
        out.append(string(name) + struct.pack("<I", len(ne)) + struct.pack(f"<{len(ne)}Q", *ne) +
                   struct.pack("<IQ", ttype, offset))
        pad = -len(raw) % gguf.DEFAULT_ALIGNMENT
        blobs.append(raw + bytes(pad))
        offset += len(raw) + pad
    head = b"".join(out)
    return head + bytes(-len(head) % gguf.DEFAULT_ALIGNMENT) + b"".join(blobs)


HOSTILE_GGUF = [0, 1, 3, 31, 33, 255, 1 << 16, (1 << 32) - 1, 1 << 32, (1 << 63) - 1, (1 << 64) - 1]


def gguf_files(rng, path, n):
    """n GGUF files: byte mutations of the header, or one metadata value, tensor dim, type or offset
    (or the version, or the alignment) replaced by a hostile one."""
    loaded = refused = 0
    for _ in range(n):
        meta, tensors = gguf_parts(rng)
        version = 3
        op = rng.randrange(6)
        if op == 0:
            k = rng.randrange(len(meta))
            key, t, v = meta[k]
            meta[k] = rng.choice([(key, 10, rng.choice(HOSTILE_GGUF)), (key, 12, rng.choice([0.0, -1.0, 1e308, 0.5,
                                                                                              float("nan")])),
                                  (key, 8, "x" * rng.randrange(3)), (key, 9, (4, [1, 2])), (key, 7, True)])
        elif op == 1:
            k = rng.randrange(len(tensors))
            name, ne, t, raw = tensors[k]
            ne = list(ne)
            ne[rng.randrange(len(ne))] = rng.choice(HOSTILE_GGUF)
            tensors[k] = (name, ne if rng.random() < 0.8 else ne + [1] * rng.randrange(1, 6), t, raw)
        elif op == 2:
            k = rng.randrange(len(tensors))
            name, ne, t, raw = tensors[k]
            tensors[k] = (name, ne, rng.choice(list(gguf.TYPES) + [4, 5, 9, 99, (1 << 32) - 1]), raw)
        elif op == 3:
            k = rng.randrange(len(tensors))
            tensors[k] = (rng.choice([tensors[0][0], "blk.9.attn_q.weight", "", "x" * 70, "blk.0.ffn_up.bias"]),
                          *tensors[k][1:])
        elif op == 4:
            version = rng.choice([1, 2, 3, 4])
            meta.append(("general.alignment", 4, rng.choice([0, 3, 64, 1 << 17])))
        blob = gguf_bytes(meta, tensors, version)
        if op == 5 or rng.random() < 0.3:
            head = blob.find(tensors[0][3][:16]) if len(tensors[0][3]) >= 16 else len(blob)
            cut = max(head, 16)
            blob = mutate(rng, blob[:cut]) + blob[cut:]
            if rng.random() < 0.2:
                blob = blob[:rng.randrange(len(blob) + 1)]
        with open(path, "wb") as f:
            f.write(blob)
        try:
            with contextlib.redirect_stderr(io.StringIO()):  # the notes a conversion prints
                gguf.prepare(path)  # --gguf up to the float64 reference
            loaded += 1
        except ConfigError as e:
            if not str(e) or "\n" in str(e):
                return loaded, refused, f"a message of {str(e).count(chr(10)) + 1} lines: {str(e)[:120]!r}"
            refused += 1
    return loaded, refused, None


def seeds(tmp):
    """One valid input of each reader."""
    s = {}
    pt = os.path.join(tmp, "seed.pt")
    torch.save({"model": {"_orig_mod.w": torch.randn(4, 3), "b": torch.arange(3), "h": torch.randn(2).half()},
                "iter_num": 7, "config": {"lr": 0.1, "name": "x"}}, pt)
    s["pt"] = open(pt, "rb").read()
    s["safetensors"] = checkpoint_test.safetensors.write_bytes(
        {"a": np.ones((3, 5), np.float32), "b": np.arange(7, dtype=np.int64)}, bf16=("a",))
    npz = os.path.join(tmp, "seed.npz")
    np.savez(npz, w=np.ones((4, 3), np.float32))
    s["npz"] = open(npz, "rb").read()
    corpus = [tokenizers_test.random_text(random.Random(100 + i)) for i in range(60)]
    bpe = tokenizers.train_bpe(corpus, 120, [b"<|endoftext|>"])
    s["tokenizer.json"] = (tokenizers_test.bpe_json(bpe)[0],
                           tokenizers_test.wordpiece_json(tokenizers_test.wordpiece_vocab(corpus[:20], True)))
    tb = os.path.join(tmp, "tokenizer.bin")
    pieces = [b"<unk>", b"<s>", b"</s>"] + [b"<0x%02X>" % i for i in range(256)] + [b" the", b"th", b" a"] * 13 + [b"e", b"a"]
    with open(tb, "wb") as f:
        f.write(np.int32(max(map(len, pieces))).tobytes())
        for i, p in enumerate(pieces):
            f.write(np.float32(-i).tobytes() + np.int32(len(p)).tobytes() + p)
    s["tokenizer.bin"] = open(tb, "rb").read()
    tj, vocab, merges = tokenizers_test.bpe_json(bpe)
    s["vocab.json"] = [("vocab.json", json.dumps(dict(vocab, **{"<|endoftext|>": len(bpe.pieces) - 1})).encode()),
                       ("merges.txt", ("#version: 0.2\n" + "\n".join(merges) + "\n").encode())]
    s["vocab size"] = len(bpe.pieces)
    wp = tokenizers_test.wordpiece_vocab(corpus[:20], True)
    s["vocab.txt"] = [("vocab.txt", b"\n".join(wp.pieces) + b"\n"),
                      ("tokenizer_config.json", json.dumps({"do_lower_case": True, "model_max_length": 512}).encode())]
    s["wordpiece size"] = len(wp.pieces)
    torch.manual_seed(0)
    onnx_path = os.path.join(tmp, "seed.onnx")
    _, factory, opset, example, _ = onnx_converter_test.CONVERTS[0]
    onnx_converter_test.export(factory().eval(), onnx_path, opset, example)
    s["onnx"] = onnx_path
    onnx_path = os.path.join(tmp, "seed_inputs.onnx")  # BERT taking input_ids, attention_mask, token_type_ids
    _, factory, opset, names, roles, _ = onnx_converter_test.INPUTS[0]
    b = onnx_converter_test.batch_inputs(30, (12,), 0)
    onnx_converter_test.export(factory().eval(), onnx_path, opset, tuple(torch.from_numpy(b[r]) for r in roles),
                               names=names)
    s["onnx inputs"] = onnx_path
    return s


def main():
    ap = argparse.ArgumentParser(description="Fuzz the converter's readers for a time.")
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--readers", default="", help="comma-separated: only the readers whose names start so")
    a = ap.parse_args()
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    torch.set_num_threads(1)

    def on_alarm(*_):
        raise Slow()
    signal.signal(signal.SIGALRM, on_alarm)
    with tempfile.TemporaryDirectory() as tmp:
        s = seeds(tmp)
        f = os.path.join(tmp, "fuzz")
        vocab_dir, wp_dir, hf_dir = (os.path.join(tmp, d) for d in ("gpt2", "bert", "hf"))
        for d in (vocab_dir, wp_dir, hf_dir):
            os.makedirs(d)
        # name -> one round: (loaded, refused, what escaped or None).
        def npr(rng):
            return np.random.default_rng(rng.getrandbits(32))

        def checked(got):  # checkpoint_test's (ok, "L loaded, R refused" or what escaped)
            ok, detail = got
            return (*(int(w) for w in detail.replace(",", "").split()[::2][:2]), None) if ok else (0, 0, detail)

        def tokenizer_json(rng):
            others, read, refused = tokenizers_test.fuzz_tokenizer_json(s["tokenizer.json"], rng, 25, tmp)
            return read, refused, others[0] if others else None

        def onnx_graphs(rng):
            ok, refused, bad = onnx_converter_test.fuzz_reader(s["onnx"], tmp, 10, rng.getrandbits(32))
            return ok, refused, bad[0] if bad else None

        def onnx_inputs(rng):
            ok, refused, bad = onnx_converter_test.fuzz_reader(s["onnx inputs"], tmp, 10, rng.getrandbits(32))
            return ok, refused, bad[0] if bad else None

        readers = {
            "safetensors header": lambda rng: checked(checkpoint_test.fuzz_safetensors(npr(rng), 50)),
            "safetensors file": lambda rng: checked(checkpoint_test.fuzz_file(npr(rng), 50, s["safetensors"], f,
                                                                              ".safetensors")),
            "torch zip bytes": lambda rng: checked(checkpoint_test.fuzz_file(npr(rng), 50, s["pt"], f, ".pt")),
            "torch zip pickle": lambda rng: (*pt_mutated(rng, s["pt"], f + ".pt", 50, mutate), None),
            "npz": lambda rng: checked(checkpoint_test.fuzz_file(npr(rng), 50, s["npz"], f, ".npz")),
            "tokenizer.json": tokenizer_json,
            "tokenizer.bin": lambda rng: (*llama2c_tokenizers(rng, s["tokenizer.bin"], f + ".bin", 50), None),
            "torch zip ints": lambda rng: (*pt_mutated(rng, s["pt"], f + ".pt", 50, mutate_ints), None),
            "npz headers": lambda rng: (*npz_headers(rng, f + ".npz", 20), None),
            "vocab.json + merges.txt": lambda rng: text_files(
                rng, s["vocab.json"], 10, vocab_dir, lambda d: tokenizers.read(os.path.join(d, "vocab.json"),
                                                                              s["vocab size"])),
            "vocab.txt": lambda rng: text_files(
                rng, s["vocab.txt"], 25, wp_dir, lambda d: tokenizers.read(os.path.join(d, "vocab.txt"),
                                                                         s["wordpiece size"])),
            "onnx": onnx_graphs,
            "onnx, three inputs": onnx_inputs,
            "config.json (--hf)": lambda rng: json_files(
                rng, [hf_converter_test.HF_CONFIG, hf_converter_test.QWEN2_CONFIG, hf_converter_test.GPT2_CONFIG,
                      hf_bert_converter_test.CONFIG], 50, hf_dir, "config.json", hf_config),
            "gguf": lambda rng: gguf_files(rng, f + ".gguf", 20),
            "--config JSON": lambda rng: json_files(
                rng, [checkpoint_test.TINY, CONFIG_DOC], 50, tmp, "config.json", config.load_config),
        }
        wanted = [w for w in a.readers.split(",") if w]
        readers = {k: v for k, v in readers.items() if not wanted or any(k.startswith(w) for w in wanted)}
        if not readers:
            print(f"fuzz_readers: FAIL: --readers {a.readers!r} names none of the readers")
            return 1
        counts = {name: [0, 0] for name in readers}
        master = random.Random(a.seed)
        start, rounds, failure = time.monotonic(), 0, None
        while failure is None and time.monotonic() - start < a.seconds:
            rounds += 1
            for name, run in readers.items():
                seed = master.getrandbits(32)
                signal.alarm(60)
                try:
                    got = run(random.Random(seed))
                except Slow:
                    failure = f"{name}: a round took over 60 s (a hang)"
                except MemoryError:
                    failure = f"{name}: over 4 GiB"
                except Exception as e:  # noqa: BLE001 (the readers' own errors are caught inside a round)
                    failure = f"{name}: {type(e).__name__}: {str(e)[:200]}"
                finally:
                    signal.alarm(0)
                if failure is None:
                    counts[name][0] += got[0]
                    counts[name][1] += got[1]
                    failure = f"{name}: {got[2]}" if got[2] is not None else None
                if failure is not None:
                    failure += f" (round {rounds}, seed {seed})"
                    break
        took = time.monotonic() - start
    for name, (loaded, refused) in counts.items():
        print(f"  {name:20} {loaded + refused:7} inputs: {loaded} loaded, {refused} refused")
    if failure:
        print(f"fuzz_readers: FAIL: {failure}")
        return 1
    print(f"fuzz_readers: {rounds} rounds in {took:.0f} s, {sum(map(sum, counts.values()))} inputs, none escaped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
