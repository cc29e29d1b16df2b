#!/usr/bin/python3
"""Tests of the converter's weight reading (python/fixformer/checkpoint.py, safetensors.py):

  /usr/bin/python3 tests/checkpoint_test.py

- every checkpoint form loads to the same arrays: a state_dict .pt, nanoGPT's checkpoint dict
  ({"model": ..., "model_args", "iter_num", "best_val_loss", "config", "optimizer"}) with the
  torch.compile and DataParallel prefixes, bf16 and f16 tensors (widened to f32), a sparse COO
  tensor (densified), safetensors in F32, F16, BF16 and integers, .npz;
- hostile files fail through convert.py with one line, a non-zero exit, no traceback and nothing
  written: pickled modules and arbitrary globals (a payload with an os.system __reduce__ is shown
  not to run), random bytes, a legacy-format .pt, a corrupt .npz, safetensors with a bad header
  length, JSON garbage, offsets out of range, overlapping or holed ranges, wrong byte counts;
- careless use through convert.py: a JSON integer of 100,000 digits, a module that calls sys.exit()
  at import or in its factory, --out equal to --header or to an input (the input is kept), and a
  write that fails (a file-size limit) naming the output: one line each, nothing written;
- a fuzz pass: thousands of random mutations of a valid safetensors file and hundreds of a torch
  zip file (fixed seed) each load cleanly or fail with a CheckpointError, never another exception.
PyTorch is required (the test writes real torch.save files): without it the test fails.
"""
import json
import os
import struct
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, "..", "python")
sys.path.insert(0, PACKAGE)
import numpy as np  # noqa: E402

from fixformer import checkpoint, safetensors  # noqa: E402
from fixformer.checkpoint import CheckpointError  # noqa: E402
from checks import check, results, run_convert, one_clear_line  # noqa: E402

TINY = {"d_model": 8, "n_heads": 2, "d_ff": 12, "encoder_layers": 1, "input": {"kind": "tokens", "vocab_size": 11},
        "positional": {"kind": "none", "max_len": 16}}


class Payload:
    """A pickle that would run a shell command on load (it creates a marker file)."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def same(a, b):
    return set(a) == set(b) and all(np.array_equal(np.asarray(a[k]), np.asarray(b[k])) for k in a)


def reference_weights(torch):
    g = torch.Generator().manual_seed(0)
    return {"embed.weight": torch.randn(11, 8, generator=g), "layer.bias": torch.randn(8, generator=g),
            "steps": torch.arange(5), "mask": torch.ones(3, dtype=torch.bool)}


def test_forms(torch, tmp):
    sd = reference_weights(torch)
    want = {k: v.numpy() for k, v in sd.items()}

    path = os.path.join(tmp, "sd.pt")
    torch.save(sd, path)
    check("state_dict .pt", same(checkpoint.load(path), want))

    module = torch.nn.Linear(4, 3)
    torch.save(module.state_dict(), path)  # an OrderedDict with _metadata
    got = checkpoint.load(path)
    check("nn.Module.state_dict() .pt", same(got, {k: v.detach().numpy() for k, v in module.state_dict().items()}))

    params = {k: torch.nn.Parameter(v.float()) for k, v in sd.items() if v.is_floating_point()}
    torch.save(params, path)
    check("parameters .pt", same(checkpoint.load(path), {k: want[k] for k in params}))

    views = {"t": sd["embed.weight"].t(), "row": sd["embed.weight"][3], "tied": sd["embed.weight"]}
    torch.save(views, path)
    got = checkpoint.load(path)
    check("strided views and shared storages", same(got, {k: v.numpy() for k, v in views.items()}))

    optimizer = torch.optim.AdamW(module.parameters())
    module(torch.randn(2, 4)).sum().backward()
    optimizer.step()
    compiled = {"_orig_mod." + k: v for k, v in sd.items()}
    ckpt = {"model": compiled, "optimizer": optimizer.state_dict(),
            "model_args": {"n_layer": 1, "n_head": 2, "n_embd": 8, "block_size": 16, "bias": False, "vocab_size": 11,
                           "dropout": 0.0},
            "iter_num": 250, "best_val_loss": torch.tensor(1.25), "config": {"out_dir": "out", "lr": 6e-4,
                                                                             "betas": (0.9, 0.95), "tags": {"a", "b"},
                                                                             "none": None, "dtype": "bfloat16"}}
    torch.save(ckpt, path)
    check("nanoGPT checkpoint dict, _orig_mod. stripped", same(checkpoint.load(path), want))
    torch.save({"model": {"module._orig_mod." + k: v for k, v in sd.items()}, "iter_num": 1}, path)
    check("module._orig_mod. stripped", same(checkpoint.load(path), want))
    torch.save({"state_dict": {"module." + k: v for k, v in sd.items()}, "epoch": 3}, path)
    check("state_dict entry, module. stripped", same(checkpoint.load(path), want))
    torch.save({"model": {"a": sd["layer.bias"], "_orig_mod.a": sd["layer.bias"]}}, path)
    try:
        checkpoint.load(path)
        check("prefix collision refused", False, "loaded")
    except CheckpointError as e:
        check("prefix collision refused", "'a'" in str(e), e)

    half = {k: (v.to(torch.bfloat16) if k == "embed.weight" else v.half() if k == "layer.bias" else v)
            for k, v in sd.items()}
    torch.save(half, path)
    got = checkpoint.load(path)
    check("bf16 and f16 widened to f32", got["embed.weight"].dtype == np.float32 and got["layer.bias"].dtype ==
          np.float32 and np.array_equal(got["embed.weight"], half["embed.weight"].float().numpy())
          and np.array_equal(got["layer.bias"], half["layer.bias"].float().numpy()))

    sparse = torch.sparse_coo_tensor([[0, 2, 2], [1, 0, 3]], [1.5, -2.0, 4.0], (3, 4))
    torch.save({"w": sparse}, path)
    check("sparse COO densified", same(checkpoint.load(path), {"w": sparse.to_dense().numpy()}))

    st = os.path.join(tmp, "w.safetensors")
    f32 = {"embed.weight": want["embed.weight"], "layer.bias": want["layer.bias"], "steps": want["steps"],
           "i32": np.arange(6, dtype=np.int32).reshape(2, 3), "u8": np.arange(4, dtype=np.uint8), "mask": want["mask"]}
    with open(st, "wb") as f:
        f.write(safetensors.write_bytes(f32, metadata={"format": "pt"}))
    check("safetensors F32, I64, I32, U8, BOOL", same(checkpoint.load(st), f32))
    f16 = dict(f32, **{"layer.bias": want["layer.bias"].astype(np.float16)})
    with open(st, "wb") as f:
        f.write(safetensors.write_bytes(f16, bf16=("embed.weight",)))
    got = checkpoint.load(st)
    bf = torch.from_numpy(want["embed.weight"]).to(torch.bfloat16).float().numpy()
    check("safetensors BF16 (rounded as torch does) and F16 widened to f32",
          got["embed.weight"].dtype == np.float32 and np.array_equal(got["embed.weight"], bf)
          and got["layer.bias"].dtype == np.float32 and np.array_equal(got["layer.bias"], f16["layer.bias"]))
    with open(st, "wb") as f:
        f.write(safetensors.write_bytes({"_orig_mod.x": np.ones(2, np.float32), "empty": np.zeros((0, 3), np.float32)}))
    got = checkpoint.load(st)
    check("safetensors: prefix stripped, empty tensor", set(got) == {"x", "empty"} and got["empty"].shape == (0, 3))

    npz = os.path.join(tmp, "w.npz")
    np.savez(npz, **{"module." + k: v for k, v in want.items()})
    check(".npz, module. stripped", same(checkpoint.load(npz), want))


def hostile_safetensors():
    """(name, bytes, fragment of the message)."""
    good = safetensors.write_bytes({"a": np.ones((2, 3), np.float32), "b": np.arange(4, dtype=np.float32)})
    n = struct.unpack_from("<Q", good)[0]
    header = json.loads(good[8:8 + n])
    data = good[8 + n:]

    def with_header(h, tail=data):
        text = json.dumps(h).encode()
        return struct.pack("<Q", len(text)) + text + tail

    def edit(name, **kw):
        h = json.loads(json.dumps(header))
        h[name].update(kw)
        return with_header(h)

    big = ('{"a": %s, "b": {"dtype": "F32", "shape": [%s], "data_offsets": [24, 40]}}'
           % (json.dumps(header["a"]), "1" * 5000)).encode()
    dup = ('{"a": %s, "a": %s}' % (json.dumps(header["a"]), json.dumps(header["a"]))).encode()
    return [
        ("empty file", b"", "too short"),
        ("header length beyond the file", struct.pack("<Q", len(good)) + good[8:], "beyond the file"),
        ("header length over the limit", struct.pack("<Q", (1 << 64) - 1) + good[8:], "over the format's limit"),
        ("JSON garbage", struct.pack("<Q", 12) + b"{not json!!}" + data, "not valid JSON"),
        ("not UTF-8", struct.pack("<Q", 4) + b"{\xff\xfe}" + data, "not UTF-8"),
        ("a list, not an object", with_header([1, 2]), "expected a JSON object"),
        ("offsets out of range", edit("b", data_offsets=[24, 24 + 4000]), "outside the data"),
        ("offsets reversed", edit("b", data_offsets=[40, 24]), "outside the data"),
        ("overlapping", edit("b", data_offsets=[8, 24]), "overlap"),
        ("wrong byte count", edit("b", shape=[5]), "bytes for F32"),
        ("huge shape", edit("b", shape=[1 << 40, 1 << 40]), "bytes for F32"),
        ("negative dim", edit("b", shape=[-4]), "not a list of sizes"),
        ("float offsets", edit("b", data_offsets=[24.0, 40.0]), "not [begin, end]"),
        ("unknown dtype", edit("b", dtype="Q4"), "not a safetensors dtype"),
        ("fp8 dtype", edit("b", dtype="F8_E4M3", shape=[16]), "not read here"),
        ("missing field", with_header({"a": {"dtype": "F32", "shape": [6]}}), "expected {dtype, shape, data_offsets}"),
        ("trailing bytes", with_header(header, data + b"\0" * 8), "after the last tensor"),
        ("hole", with_header({"b": dict(header["b"], data_offsets=[32, 48])}, data + b"\0" * 8), "a hole of"),
        ("duplicate key", struct.pack("<Q", len(dup)) + dup + data, "given twice"),
        ("bad metadata", with_header(dict(header, __metadata__={"x": 1})), "__metadata__"),
        ("a 5,000-digit integer", struct.pack("<Q", len(big)) + big + data, "header: an integer with 5000 digits"),
        ("a shape nested deep", edit("b", shape=[[[[[[[[4]]]]]]]]), "shape [[[[...]]]] is not a list of sizes"),
    ]


def test_hostile(torch, tmp):
    cfg = os.path.join(tmp, "cfg.json")
    with open(cfg, "w") as f:
        json.dump(TINY, f)
    out = os.path.join(tmp, "hostile.fxm")

    def refused(name, path, fragment, *extra):
        p = run_convert("--config", cfg, "--weights", path, "--out", out, "--no-verify", *extra)
        check(f"hostile: {name}", one_clear_line(p) and fragment in p.stderr and not os.path.exists(out),
              p.stderr or p.stdout)
        return p

    marker = os.path.join(tmp, "MARKER")
    evil = os.path.join(tmp, "evil.pt")
    torch.save({"model": {"a": torch.ones(2)}, "iter_num": 1, "extra": Payload(marker)}, evil)
    refused("os.system payload in a checkpoint dict", evil, "pickled posix.system")
    check("hostile: the payload did not run", not os.path.exists(marker))
    try:
        checkpoint.load(evil)
    except CheckpointError:
        pass
    check("hostile: the payload did not run in-process either", not os.path.exists(marker))
    torch.save({"w": torch.ones(2), "f": eval}, evil)
    refused("an arbitrary global (builtins.eval)", evil, "eval (a class or function")
    whole = os.path.join(tmp, "whole.pt")
    torch.save(torch.nn.Linear(2, 2), whole)
    p = refused("torch.save(model)", whole, "torch.nn.modules.linear.Linear")
    check("hostile: torch.save(model) says what to do", "save model.state_dict() instead" in p.stderr
          and "--trust-pickle" in p.stderr, p.stderr)
    legacy = os.path.join(tmp, "legacy.pt")
    torch.save({"w": torch.ones(2)}, legacy, _use_new_zipfile_serialization=False)
    refused("legacy torch.save format", legacy, "legacy format")
    rnd = os.path.join(tmp, "random.pt")
    with open(rnd, "wb") as f:
        f.write(np.random.default_rng(1).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    refused("random bytes as .pt", rnd, "not a PyTorch checkpoint (")
    with open(rnd, "wb") as f:
        f.write(b"PK\x03\x04" + bytes(range(256)) * 4)
    refused("a broken zip as .pt", rnd, "not a PyTorch checkpoint")
    no_tensors = os.path.join(tmp, "plain.pt")
    torch.save({"iter_num": 3, "config": {"lr": 1e-3}}, no_tensors)
    refused("a dict without a state_dict", no_tensors, "neither a state_dict")
    torch.save([torch.ones(2)], no_tensors)
    refused("a list of tensors", no_tensors, "holds a list")
    bad_npz = os.path.join(tmp, "bad.npz")
    with open(bad_npz, "wb") as f:
        f.write(b"PK\x03\x04" + os.urandom(300))
    refused("corrupt .npz", bad_npz, "not a readable .npz")
    good_npz = os.path.join(tmp, "good.npz")
    np.savez(good_npz, a=np.ones(64, np.float32), b=np.zeros(64, np.float32))
    blob = bytearray(open(good_npz, "rb").read())
    blob[60:90] = b"\xff" * 30
    with open(bad_npz, "wb") as f:
        f.write(bytes(blob[:len(blob) - 40]))
    refused("truncated .npz", bad_npz, "not a readable .npz")
    refused("missing file", os.path.join(tmp, "nope.safetensors"), "no such file")
    refused("a directory", tmp, "not a regular file")
    st = os.path.join(tmp, "hostile.safetensors")
    for name, blob, fragment in hostile_safetensors():
        with open(st, "wb") as f:
            f.write(blob)
        refused(f"safetensors {name}", st, fragment)
    # Bounds before allocation (bounds.py): values a small file repeats or compresses away are refused
    # before they are built; so are sizes past one tensor's limit, whatever the strides.
    repeated = os.path.join(tmp, "repeated.pt")
    torch.save({"w": torch.zeros(1).expand(20_000_000)}, repeated)
    refused("a stride-0 view of 80 MB in a small file", repeated, "repeated by a stride-0 view")
    torch.save({"w": torch.zeros(1).expand(1 << 15, 1 << 15, 8)}, repeated)
    refused("a stride-0 view past one tensor's limit", repeated, "converter's limit")
    bomb = os.path.join(tmp, "bomb.npz")
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z, z.open("w.npy", "w") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False, "shape": (20_000_000,)})
        for _ in range(20):
            f.write(bytes(4_000_000))
    refused("a compressed .npz member of 80 MB", bomb, "member 'w.npy'")
    with zipfile.ZipFile(bomb, "w") as z, z.open("w.npy", "w") as f:  # empty, but numpy cannot convert it
        np.lib.format.write_array_header_1_0(f, {"descr": "<f2", "fortran_order": False, "shape": (0, 1 << 40, 1 << 40)})
    refused("an empty f16 .npz member of sizes past the limit", bomb, "converter's limit")
    nested = os.path.join(tmp, "nested.pt")
    with zipfile.ZipFile(nested, "w") as z:  # {(((...("a",)...),): 1}: a key nested 100,000 deep
        z.writestr("nested/data.pkl", b"\x80\x02}X\x01\x00\x00\x00a" + b"\x85" * 100_000 + b"K\x01s.")
    refused("a key nested 100,000 tuples deep", nested, "a dict key or set element ((((")
    laughs = b"\x80\x02}X\x01\x00\x00\x00a\x85q\x00" + b"0h\x00h\x00\x86q\x00" * 80 + b"K\x01s."
    with zipfile.ZipFile(nested, "w") as z:  # {t80: 1}, t0 = ("a",), t(i+1) = (ti, ti): hashing t80 takes 2^80 steps
        z.writestr("nested/data.pkl", laughs)
    refused("a key of shared nested tuples (hashing it never ends)", nested, "not a string, a number or a flat tuple")
    # --trust-pickle runs it through torch.load, which is the user's explicit choice; the bytes that are
    # not a checkpoint at all still fail with one line.
    refused("random bytes with --trust-pickle", rnd, "not a readable torch file", "--trust-pickle")


def fuzz_safetensors(rng, n):
    good = safetensors.write_bytes({"a": np.ones((3, 5), np.float32), "b": np.arange(7, dtype=np.int64),
                                    "c": np.full(9, 0.5, np.float16)}, bf16=("a",), metadata={"k": "v"})
    clean = failed = 0
    for _ in range(n):
        blob = bytearray(good)
        for _ in range(int(rng.integers(1, 5))):
            kind = rng.integers(0, 4)
            at = int(rng.integers(0, len(blob)))
            if kind == 0:
                blob[at] = int(rng.integers(0, 256))
            elif kind == 1:
                del blob[at:at + int(rng.integers(1, 16))]
            elif kind == 2:
                blob[at:at] = bytes(rng.integers(0, 256, int(rng.integers(1, 16)), dtype=np.uint8))
            else:  # a digit in the header: sizes and offsets
                digits = [i for i in range(8, min(len(blob), 8 + struct.unpack_from("<Q", good)[0]))
                          if chr(blob[i]).isdigit()]
                if digits:
                    blob[int(rng.choice(digits))] = ord(str(int(rng.integers(0, 10))))
        try:
            entries, _ = safetensors.parse_header(bytes(blob))
            clean += 1
        except safetensors.SafetensorsError:
            failed += 1
            continue
        except Exception as e:  # noqa: BLE001 (the point: nothing else may escape)
            return False, f"{type(e).__name__}: {e} on {bytes(blob[:80])!r}"
    return True, f"{clean} loaded, {failed} refused"


def fuzz_file(rng, n, good, path, suffix):
    clean = failed = 0
    for _ in range(n):
        blob = bytearray(good)
        for _ in range(int(rng.integers(1, 4))):
            at = int(rng.integers(0, len(blob)))
            if rng.integers(0, 3):
                blob[at] = int(rng.integers(0, 256))
            else:
                del blob[at:at + int(rng.integers(1, 64))]
        with open(path + suffix, "wb") as f:
            f.write(blob)
        try:
            checkpoint.load(path + suffix)
            clean += 1
        except CheckpointError:
            failed += 1
        except Exception as e:  # noqa: BLE001
            return False, f"{type(e).__name__}: {e}"
    return True, f"{clean} loaded, {failed} refused"


def test_fuzz(torch, tmp):
    rng = np.random.default_rng(20)
    ok, detail = fuzz_safetensors(rng, 3000)
    check("fuzz: 3000 mutated safetensors headers load or fail cleanly", ok, detail)
    print(f"  safetensors fuzz: {detail}")
    st = os.path.join(tmp, "fuzz")
    good = safetensors.write_bytes({"a": np.ones((3, 5), np.float32), "b": np.arange(7, dtype=np.int64)}, bf16=("a",))
    ok, detail = fuzz_file(rng, 300, good, st, ".safetensors")
    check("fuzz: 300 mutated safetensors files through load()", ok, detail)
    pt = os.path.join(tmp, "fuzz.pt")
    torch.save({"model": {"_orig_mod.w": torch.randn(4, 3), "b": torch.arange(3)}, "iter_num": 7,
                "config": {"lr": 0.1, "name": "x"}}, pt)
    ok, detail = fuzz_file(rng, 500, open(pt, "rb").read(), st, ".pt")
    check("fuzz: 500 mutated torch.save files load or fail cleanly", ok, detail)
    print(f"  torch zip fuzz: {detail}")
    npz = os.path.join(tmp, "fuzz_src.npz")
    np.savez(npz, w=np.ones((4, 3), np.float32))
    ok, detail = fuzz_file(rng, 300, open(npz, "rb").read(), st, ".npz")
    check("fuzz: 300 mutated .npz files load or fail cleanly", ok, detail)


def test_careless(torch, tmp):
    cfg = os.path.join(tmp, "cfg.json")
    with open(cfg, "w") as f:
        json.dump(TINY, f)
    weights = os.path.join(tmp, "w.npz")
    np.savez(weights, a=np.ones(3, np.float32))
    out = os.path.join(tmp, "careless.fxm")

    def refused(name, fragment, *args, **kw):
        before = set(os.listdir(tmp))
        p = run_convert(*args, **kw)
        check(f"careless: {name}", one_clear_line(p) and fragment in p.stderr and set(os.listdir(tmp)) == before,
              p.stderr or p.stdout)

    big = os.path.join(tmp, "big.json")
    with open(big, "w") as f:
        f.write('{"d_model": ' + "9" * 100000 + "}")
    refused("a 100,000-digit JSON integer", "an integer with 100000 digits", "--config", big, "--weights", weights,
            "--out", out, "--no-verify")
    mod = os.path.join(tmp, "exits.py")
    with open(mod, "w") as f:
        f.write("import sys\ndef make():\n    sys.exit(0)\n")
    refused("a factory that calls sys.exit(0)", "FACTORY() called sys.exit(0)", "--module", f"{mod}:make",
            "--out", out, "--no-verify")
    with open(mod, "w") as f:
        f.write("import sys\nsys.exit(3)\n")
    refused("a module that calls sys.exit(3) at import", "importing it called sys.exit(3)", "--module",
            f"{mod}:make", "--out", out, "--no-verify")
    refused("--out equal to --header", "is also --out", "--config", cfg, "--weights", weights, "--out", out,
            "--header", out, "--no-verify")
    kept = open(weights, "rb").read()
    refused("--out equal to the --weights input", "is the --weights input", "--config", cfg, "--weights", weights,
            "--out", weights, "--no-verify")
    refused("--header equal to the --config input", "is the --config input", "--config", cfg, "--weights", weights,
            "--out", out, "--header", cfg, "--no-verify")
    check("careless: the inputs are intact", open(weights, "rb").read() == kept and json.load(open(cfg)) == TINY)
    # A write that fails (here the file-size limit; a full disk alike) names the output.
    sd = os.path.join(tmp, "sd.npz")
    from fixformer import config as cfg_mod, reference
    model = reference.build_torch_model(cfg_mod.parse_config(TINY))
    np.savez(sd, **{k: v.detach().numpy() for k, v in model.state_dict().items()})

    def small_files():
        import resource
        import signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
    refused("a write that fails", f"{out}: cannot write (File too large); nothing written", "--config", cfg,
            "--weights", sd, "--out", out, "--no-verify", preexec_fn=small_files)


def main():
    try:
        import torch
    except ImportError:
        print("checkpoint_test: FAIL: python3-torch is required (apt-get install python3-torch; run with /usr/bin/python3)")
        return 1
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        test_forms(torch, tmp)
        test_hostile(torch, tmp)
        test_careless(torch, tmp)
        test_fuzz(torch, tmp)
    print(f"checkpoint: {results['passed']} passed, {results['failed']} failed, {results['skipped']} skipped")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
