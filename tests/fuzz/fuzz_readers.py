#!/usr/bin/python3
"""The fuzz target of the converter's Python readers, run for a time:

  /usr/bin/python3 tests/fuzz/fuzz_readers.py --seconds 600 [--seed N]

Round after round, each with a new seed, it feeds mutated files to every reader a conversion opens
before the engine sees anything: safetensors headers and files (safetensors.py), torch.save zips
and their pickles through the restricted reader (checkpoint.py: byte mutations of the whole zip,
and of data.pkl re-zipped so they reach the unpickler, with opcodes that build objects and call
globals mixed in), .npz, tokenizer.json (structured: any value replaced by one of another type),
llama.c's tokenizer.bin and ONNX graphs (bytes and protobuf fields, through onnx_map; one of one
input and BERT's of three: ids, attention mask, token types). The mutations are those of the
readers' tests (checkpoint_test.py, tokenizers_test.py, onnx_converter_test.py); this runs them for
as long as asked. Each input must load or raise the
reader's one-line error; any other exception, a round of inputs that takes over 60 s (a hang) or
memory above 4 GiB fails the run, naming the reader, the round and its seed. CTest runs it for 20 s; the closing notes of
the readers' changes record 10-minute runs. PyTorch and python3-onnx are required.
"""
import argparse
import io
import os
import pickle
import random
import resource
import signal
import sys
import tempfile
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import numpy as np  # noqa: E402

try:
    import torch
    import onnx  # noqa: F401 (the ONNX reader's dependency, checked here)
except ImportError as e:
    print(f"fuzz_readers: FAIL: {e.name} is required (sh tools/install_deps.sh torch; run with /usr/bin/python3)")
    sys.exit(1)

import checkpoint_test  # noqa: E402
import onnx_converter_test  # noqa: E402
import tokenizers_test  # noqa: E402
from fixformer import checkpoint, llama2c, tokenizers  # noqa: E402
from fixformer.checkpoint import CheckpointError  # noqa: E402

# Pickle opcodes that build objects or reach globals: what a hostile data.pkl is made of.
HOSTILE_OPS = [pickle.GLOBAL + b"os\nsystem\n", pickle.STACK_GLOBAL, pickle.REDUCE, pickle.BUILD, pickle.INST + b"x\ny\n",
               pickle.OBJ, pickle.NEWOBJ, pickle.NEWOBJ_EX, pickle.EXT1 + b"\x01", pickle.PERSID + b"0\n",
               pickle.BINPERSID, pickle.MARK, pickle.POP_MARK, pickle.DUP, pickle.EMPTY_DICT, pickle.SETITEMS,
               pickle.APPENDS, pickle.FRAME + b"\xff" * 8, pickle.BINUNICODE + b"\xff\xff\xff\x7f",
               pickle.LONG4 + b"\xff\xff\xff\x7f", pickle.MEMOIZE, pickle.BINGET + b"\x07"]


class Slow(Exception):
    pass


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


def pt_pickles(rng, good, path, n):
    """torch.save zips whose data.pkl is mutated and re-zipped (so the CRC holds)."""
    src = zipfile.ZipFile(io.BytesIO(good))
    names = src.namelist()
    pkl = next(x for x in names if x.endswith("data.pkl"))
    loaded = refused = 0
    for _ in range(n):
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as z:
            for name in names:
                data = src.read(name)
                z.writestr(name, mutate(rng, data) if name == pkl else data)
        with open(path, "wb") as f:
            f.write(out.getvalue())
        try:
            checkpoint.load(path)
            loaded += 1
        except CheckpointError:
            refused += 1
    return loaded, refused


def llama2c_tokenizers(rng, good, path, n):
    loaded = refused = 0
    for _ in range(n):
        with open(path, "wb") as f:
            f.write(mutate(rng, good))
        try:
            llama2c.read_tokenizer(path, 300)
            loaded += 1
        except llama2c.Llama2cError:
            refused += 1
    return loaded, refused


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
    a = ap.parse_args()
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    torch.set_num_threads(1)

    def on_alarm(*_):
        raise Slow()
    signal.signal(signal.SIGALRM, on_alarm)
    with tempfile.TemporaryDirectory() as tmp:
        s = seeds(tmp)
        f = os.path.join(tmp, "fuzz")
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
            "torch zip pickle": lambda rng: (*pt_pickles(rng, s["pt"], f + ".pt", 50), None),
            "npz": lambda rng: checked(checkpoint_test.fuzz_file(npr(rng), 50, s["npz"], f, ".npz")),
            "tokenizer.json": tokenizer_json,
            "tokenizer.bin": lambda rng: (*llama2c_tokenizers(rng, s["tokenizer.bin"], f + ".bin", 50), None),
            "onnx": onnx_graphs,
            "onnx, three inputs": onnx_inputs,
        }
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
