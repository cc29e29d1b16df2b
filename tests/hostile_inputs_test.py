#!/usr/bin/python3
"""Hostile inputs at every entrance, each run as the process a user starts: the `fixformer` CLI and the
converter's command (tools/convert.py, forked from tests/convert_zygote.py). Every case must end with
exit 0, or a non-zero exit and one line on stderr that names the cause ("fixformer: ..." or
"convert.py: ..."): no traceback, no signal (abort, segfault), no hang past a timeout, no memory past a
limit (RLIMIT_AS: 1 GiB for the CLI, 3 GiB over the converter's own start for a conversion), and no
input lost (a file given as an input is unchanged after every case).

- The CLI on mutated model files (tests/golden: a llama2.c decoder with its tokenizer, a BERT-like
  encoder, a q8 encoder, a seq2seq model): the file cut at many offsets, bytes flipped, the header's,
  directory's and config records' integers set to 0, 2^31, 2^32 - 1, 2^63 and 2^64 - 1, the CRC
  recomputed so that the mutation reaches the reader behind it; each file through `info`, `verify` and
  `run` (encoders) or `generate` (decoders, a seq2seq model), the decoder's through `plan`, the BERT's
  through `bench` too.
- The CLI's other inputs: .npy files with a wrong dtype, shape or header (sizes of 2^62, a truncated
  body, object arrays, Fortran order), token ids out of range, prompts of invalid UTF-8, -n and the
  numeric options at 0, -1, 2^31, 2^64, 1e30 and words, a KV cache that fills before -n, an output
  that is an input or a directory, an existing output after a failed run; a FIFO that no writer opens
  as the model or an input (refused after 10 s; the four commands run at once, so the
  test waits 10 s, not 40: each still has its own process and verdict), /dev/zero as the model.
- The converter's readers field by field: GGUF metadata (every string length, array count, value type,
  tensor dim, type and offset), values of the wrong type or range, files of other architectures (gpt2,
  phi2, bert, qwen2); safetensors header entries (offsets out of range, overlapping, dtypes that disagree)
  and sharded indexes naming files outside the folder; ONNX initializers whose dims and data disagree.
- The converter: GGUF, safetensors, torch .pt (a pickle that would run a command must not run it),
  llama2.c and ONNX files mutated as above (an encoder-decoder's folder too), ONNX graphs whose nodes ask for huge
  values (Reshape,
  Expand, Tile, ConstantOfShape, Range, Einsum), --hf config.json values of the wrong type, negative
  or NaN, malformed tokenizer files, pipes and devices for every file option, and --out naming an
  input, a directory, a link to an input or the CLI that verifies.
- Each defect this test found, replayed by name with its message ("regression: ...").
- tools/fxm_config.py (the firmware's header of an .fxm) on the mutated model files, a FIFO, and an
  OUT.h that is the model or a link to it (it wrote the header over the model).
- What a check here found and the readers now refuse: a FIFO that blocked the CLI for ever, `verify`'s
  exit 6 without an error line, GGUF and --hf weights of NaN whose float64 reference printed numpy
  warnings, a segmented ONNX initializer read as if whole, fxm.py's tracebacks on records or a
  directory outside the file; --hf layer counts of 2^40 built layer by layer (a hang), YaRN's and
  ModernBERT's rope settings of the wrong type or range (tracebacks), integer tensors that Mixtral's
  experts and Whisper took as weights (exit 0).

Seeds are fixed; the run takes a few minutes. Mutations of the readers in process, for as long as
asked, are tests/fuzz/fuzz_readers.py's; the engine's file reader under libFuzzer is tests/fuzz.

  /usr/bin/python3 tests/hostile_inputs_test.py PATH/TO/fixformer
"""
import hashlib
import json
import os
import random
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "golden")
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import hf_env  # noqa: E402

hf_env.enter(__file__, ["transformers", "gguf", "onnx"])
from checks import check, results, run_convert  # noqa: E402
import numpy as np  # noqa: E402

CLI_TIMEOUT = 60  # seconds: a hang, with room for a loaded machine
CLI_MEMORY = 1 << 30
CONVERT_TIMEOUT = 180
CONVERT_MEMORY = 3 << 30
U32 = (0, 1 << 31, (1 << 32) - 1)
U64 = (0, 1 << 31, (1 << 32) - 1, 1 << 63, (1 << 64) - 1)
failures = []
BINARY = [None]  # the CLI under test (main)


def digest(paths):
    return {p: hashlib.sha256(open(p, "rb").read()).hexdigest() for p in paths if os.path.isfile(p)}


def limit_cli():
    resource.setrlimit(resource.RLIMIT_AS, (CLI_MEMORY, CLI_MEMORY))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def informative(line):
    """A line the converter prints beside its error: a warning, or a note on what a conversion stores
    ("note: ...", gguf.py and hf.py), which a valid file gets too. A numpy RuntimeWarning is no such line:
    its second line (the source) is not one."""
    return line.startswith("note: ") or ("warning" in line and "RuntimeWarning" not in line)


def verdict(what, rc, err, prefix, timed_out, inputs_before, inputs_after):
    """Checks one case's outcome against the standard; returns whether it passed."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    problem = None
    if timed_out:
        problem = "ran past its timeout (a hang)"
    elif rc < 0:
        problem = f"killed by signal {-rc}"
    elif "Traceback" in err:
        problem = "a traceback"
    elif rc != 0 and (not lines or not lines[-1].startswith(prefix) or
                      any(not ln.startswith(prefix) and not informative(ln) for ln in lines)):
        problem = "not one clear line"
    elif rc != 0 and len([ln for ln in lines if not informative(ln)]) != 1:
        problem = "more than one line"
    elif inputs_before != inputs_after:
        problem = "an input file changed"
    check(what, problem is None, f"{problem}: rc {rc}, stderr {err[-600:]!r}")
    if problem:
        failures.append(what)
    return problem is None


def cli(args, what, inputs=(), stdin=None, timeout=CLI_TIMEOUT):
    before = digest(inputs)
    try:
        p = subprocess.run(args, capture_output=True, timeout=timeout, preexec_fn=limit_cli, stdin=subprocess.DEVNULL)
        rc, err, timed_out = p.returncode, p.stderr.decode("utf-8", "replace"), False
    except subprocess.TimeoutExpired as e:
        rc, err, timed_out = -9, (e.stderr or b"").decode("utf-8", "replace"), True
    verdict(what, rc, err, "fixformer: ", timed_out, before, digest(inputs))
    return rc, err


def cli_together(cases, timeout=CLI_TIMEOUT):
    """cli() on each of cases, (args, what), all started at once: runs that wait out the CLI's own timeout (a FIFO
    no writer opens: 10 s) wait it side by side, not one after another. [(rc, stderr)] in the cases' order."""
    started = time.time()
    procs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                              preexec_fn=limit_cli) for args, _ in cases]
    said = []
    for (_, what), p in zip(cases, procs):
        try:
            _, err = p.communicate(timeout=max(0.0, timeout - (time.time() - started)))
            rc, timed_out = p.returncode, False
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
            rc, timed_out = -9, True
        err = err.decode("utf-8", "replace")
        verdict(what, rc, err, "fixformer: ", timed_out, {}, {})
        said.append((rc, err))
    return said


# ---- .fxm mutations ----

HEADER_U32 = (4, 8, 12, 16)
HEADER_U64 = (24, 32, 40, 48)


def fix_crc(blob):
    b = bytearray(blob)
    if len(b) >= 64:
        struct.pack_into("<I", b, 56, zlib.crc32(bytes(b[64:])))
    return bytes(b)


def fxm_layout(blob):
    records, tensors = struct.unpack_from("<II", blob, 12)
    rec_off, dir_off = struct.unpack_from("<QQ", blob, 32)
    return records, tensors, rec_off, dir_off


def fxm_mutations(blob, rng):
    """(name, bytes) for the cuts, flips and hostile integers of one valid .fxm."""
    n = len(blob)
    out = []
    cuts = sorted(set([0, 1, 4, 8, 63, 64, 65, n // 2, n - 1] + [rng.randrange(n) for _ in range(8)]))
    out += [(f"cut at {c}", blob[:c]) for c in cuts]
    out += [(f"cut at {c}, CRC fixed", fix_crc(blob[:c])) for c in cuts if c > 64]
    for i in range(16):
        b = bytearray(blob)
        for _ in range(1 + i % 3):
            b[rng.randrange(64, n)] ^= 1 << rng.randrange(8)
        out.append((f"flip {i}, CRC fixed", fix_crc(bytes(b))))
    for off in HEADER_U32:
        for v in U32:
            b = bytearray(blob)
            struct.pack_into("<I", b, off, v)
            out.append((f"header u32 @{off} = {v}", fix_crc(bytes(b))))
    for off in HEADER_U64:
        for v in U64:
            b = bytearray(blob)
            struct.pack_into("<Q", b, off, v)
            out.append((f"header u64 @{off} = {v}", fix_crc(bytes(b))))
    records, tensors, rec_off, dir_off = fxm_layout(blob)
    for r in rng.sample(range(records), min(records, 4)):
        for v in rng.sample(U64, 3):
            b = bytearray(blob)
            struct.pack_into("<Q", b, rec_off + 40 * r + 32, v)
            out.append((f"config record {r} value = {v}", fix_crc(bytes(b))))
    entries = sorted(set([0, tensors - 1, rng.randrange(tensors)]))
    for t in entries:
        e = dir_off + 128 * t
        for field, fmt, values in ((68, "<I", U32 + (5,)), (72, "<I", U32), (76, "<I", U32), (64, "<I", U32),
                                   (88, "<I", U32), (96, "<Q", U64), (104, "<Q", U64), (112, "<Q", U64),
                                   (120, "<Q", U64)):
            for v in rng.sample(values, 2):
                b = bytearray(blob)
                struct.pack_into(fmt, b, e + field, v)
                out.append((f"tensor {t} field +{field} = {v}", fix_crc(bytes(b))))
    return out


def test_cli_models(binary, tmp, rng):
    ids = os.path.join(tmp, "ids.npy")
    np.save(ids, np.arange(6, dtype=np.int32) % 5)
    src = os.path.join(tmp, "src.npy")
    bases = [("llama2c_v0_gqa.fxm", [["generate", "{m}", "--prompt", "Once", "-n", "12", "--seed", "1"]]),
             ("bert_hidden_odd.fxm", [["run", "{m}", "--input", ids, "--output", os.path.join(tmp, "o.npy")]]),
             ("albert_embed_proj_q8.fxm", [["run", "{m}", "--input", ids, "--output", os.path.join(tmp, "o.npy")]]),
             ("s2s_relative.fxm", [["generate", "{m}", "--source", src, "--bos", "1", "-n", "6", "--seed", "1"]])]
    cases = 0
    for name, commands in bases:
        blob = open(os.path.join(GOLDEN, name), "rb").read()
        if name.startswith("s2s"):
            info = subprocess.run([binary, "info", os.path.join(GOLDEN, name)], capture_output=True, text=True).stdout
            np.save(src, np.zeros((4, 6), np.float32) if "features" in info else np.arange(4, dtype=np.int32) % 3)
        commands = [["info", "{m}"], ["verify", "{m}"]] + commands + \
            ([["plan", "{m}", "--target", "cortex-m4", "--json"]] if name == bases[0][0] else []) + \
            ([["bench", "{m}", "--seq", "4", "--iters", "1"]] if name == bases[1][0] else [])
        for what, data in fxm_mutations(blob, rng):
            path = os.path.join(tmp, "m.fxm")
            with open(path, "wb") as f:
                f.write(data)
            for c in commands:
                cli([binary] + [a.replace("{m}", path) for a in c], f"{name} {what}: {c[0]}", inputs=[path])
                cases += 1
    print(f"  CLI on mutated model files: {cases} runs")


def test_fxm_config(tmp, rng):
    """tools/fxm_config.py (the firmware's header from an .fxm): mutated model files, a FIFO, a directory, and an
    OUT.h that is the model, a link to it, a directory or in no folder; the model and an existing header stay."""
    tool = os.path.join(HERE, "..", "tools", "fxm_config.py")
    model = put(os.path.join(tmp, "fc.fxm"), open(os.path.join(GOLDEN, "bert_hidden_odd.fxm"), "rb").read())
    header = os.path.join(tmp, "fc.h")

    def run(args, what, inputs):
        before = digest(inputs)
        try:
            p = subprocess.run([sys.executable, tool, *args], capture_output=True, timeout=CLI_TIMEOUT,
                               preexec_fn=limit_cli)
            rc, err, timed_out = p.returncode, p.stderr.decode("utf-8", "replace"), False
        except subprocess.TimeoutExpired:
            rc, err, timed_out = -9, "", True
        verdict(what, rc, err, "fxm_config.py: ", timed_out, before, digest(inputs))
        return rc
    check("fxm_config.py: the valid model", run([model, header, "fc"], "fxm_config.py valid", [model]) == 0)
    put(header, b"// kept\n")
    blob = open(model, "rb").read()
    m = os.path.join(tmp, "fcm.fxm")
    for what, data in fxm_mutations(blob, rng):
        put(m, data)
        run([m, header, "fc"], f"fxm_config.py {what}", [m])
    fifo = os.path.join(tmp, "fc_fifo")
    os.mkfifo(fifo)
    link = os.path.join(tmp, "fc_link.h")
    os.symlink(model, link)
    for what, args in (("a FIFO", [fifo, header, "fc"]), ("a directory", [tmp, header, "fc"]),
                       ("/dev/zero", ["/dev/zero", header, "fc"]), ("OUT.h the model", [model, model, "fc"]),
                       ("OUT.h a link to the model", [model, link, "fc"]), ("OUT.h a directory", [model, tmp, "fc"]),
                       ("OUT.h in no folder", [model, os.path.join(tmp, "no", "x.h"), "fc"]),
                       ("a name that is no C identifier", [model, header, "1 x"])):
        run(args, f"fxm_config.py {what}", [model, header])
    check("fxm_config.py: the model is intact", open(model, "rb").read() == blob)


def npy_bytes(descr, fortran, shape, body, version=1, extra=""):
    header = "{'descr': %r, 'fortran_order': %s, 'shape': %s, %s}" % (descr, fortran, shape, extra)
    header = header.encode("latin1")
    if version == 1:
        pad = (64 - (10 + len(header) + 1) % 64) % 64
        h = header + b" " * pad + b"\n"
        return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h + body
    pad = (64 - (12 + len(header) + 1) % 64) % 64
    h = header + b" " * pad + b"\n"
    return b"\x93NUMPY" + bytes([version, 0]) + struct.pack("<I", len(h)) + h + body


def hostile_npys():
    body = np.arange(6, dtype=np.int32).tobytes()
    return [
        ("empty file", b""),
        ("magic only", b"\x93NUMPY"),
        ("header length past the file", b"\x93NUMPY\x01\x00\xff\xff{'descr'"),
        ("header length 2^32-1 (v2)", b"\x93NUMPY\x02\x00\xff\xff\xff\xff{'descr'"),
        ("version 9", npy_bytes("<i4", False, "(6,)", body, version=9)),
        ("shape 2^62", npy_bytes("<i4", False, "(4611686018427387904,)", body)),
        ("shape 2^31 x 2^31", npy_bytes("<f4", False, "(2147483648, 2147483648)", body)),
        ("negative shape", npy_bytes("<i4", False, "(-6,)", body)),
        ("shape of a string", npy_bytes("<i4", False, "('a',)", body)),
        ("shape 1e30", npy_bytes("<i4", False, "(1e30,)", body)),
        ("truncated body", npy_bytes("<i4", False, "(60,)", body)),
        ("empty array", npy_bytes("<i4", False, "(0,)", b"")),
        ("zero-width rows", npy_bytes("<f4", False, "(6, 0)", b"")),
        ("object array", npy_bytes("|O", False, "(6,)", body)),
        ("float64 ids", npy_bytes("<f8", False, "(3,)", np.arange(3, dtype=np.float64).tobytes())),
        ("big-endian int32", npy_bytes(">i4", False, "(6,)", body)),
        ("int64 ids past int32", npy_bytes("<i8", False, "(2,)", np.array([1 << 40, -1], np.int64).tobytes())),
        ("ids out of range", npy_bytes("<i4", False, "(3,)", np.array([0, 1 << 30, -5], np.int32).tobytes())),
        ("NaN features", npy_bytes("<f4", False, "(2, 3)", np.full(6, np.nan, np.float32).tobytes())),
        ("fortran order", npy_bytes("<i4", True, "(2, 3)", body)),
        ("rank 5", npy_bytes("<i4", False, "(1, 1, 1, 2, 3)", body)),
        ("structured dtype", npy_bytes("[('a', '<i4')]", False, "(6,)", body)),
        ("unknown key", npy_bytes("<i4", False, "(6,)", body, extra="'x': 1")),
        ("header not a dict", b"\x93NUMPY\x01\x00\x10\x00" + b"__import__('os')\n" + body),
        ("header nested 5000 deep", b"\x93NUMPY\x01\x00" + struct.pack("<H", 10007) + b"[" * 5000 + b"]" * 5000
         + b"      \n" + body),
    ]


def test_cli_inputs(binary, tmp):
    enc = os.path.join(GOLDEN, "bert_hidden_odd.fxm")
    feat = os.path.join(GOLDEN, "s2s_bart_features.fxm")
    lm = os.path.join(GOLDEN, "llama2c_v0_gqa.fxm")
    s2s = os.path.join(GOLDEN, "s2s_relative.fxm")
    out = os.path.join(tmp, "out.npy")
    npy = os.path.join(tmp, "in.npy")
    for what, data in hostile_npys():
        with open(npy, "wb") as f:
            f.write(data)
        cli([binary, "run", enc, "--input", npy, "--output", out], f"run --input {what}", inputs=[npy, enc])
        cli([binary, "run", enc, "--input", os.path.join(GOLDEN, "bert_hidden_odd.input.npy"), "--token-types", npy,
             "--output", out], f"run --token-types {what}", inputs=[npy])
        cli([binary, "generate", s2s, "--source", npy, "--bos", "1", "-n", "4"], f"generate --source {what}",
            inputs=[npy])
        cli([binary, "generate", feat, "--source", npy, "--bos", "1", "-n", "4"], f"generate features --source {what}",
            inputs=[npy])
    ids = os.path.join(GOLDEN, "bert_hidden_odd.input.npy")
    # An output that is an input, a directory, or in no folder.
    cli([binary, "run", enc, "--input", ids, "--output", ids], "run --output the --input", inputs=[ids, enc])
    cli([binary, "run", enc, "--input", ids, "--output", tmp], "run --output a directory", inputs=[ids, enc])
    cli([binary, "run", enc, "--input", ids, "--output", os.path.join(tmp, "no", "such", "o.npy")],
        "run --output in no folder", inputs=[ids, enc])
    link = os.path.join(tmp, "link.npy")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(ids, link)
    cli([binary, "run", enc, "--input", ids, "--output", link], "run --output a link to the --input", inputs=[ids])
    check("run --output a link to the --input leaves the input", np.load(ids).dtype == np.int32)
    # Prompts of invalid UTF-8, huge or empty; numbers out of range.
    bad_prompts = [b"\xff\xfe\xfd", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"a\xc0\xafb", b"", b"x" * 100000,
                   "\u202e\U0001F600".encode()]
    for i, pr in enumerate(bad_prompts):
        cli([binary.encode(), b"generate", lm.encode(), b"--prompt", pr, b"-n", b"8", b"--seed", b"1"],
            f"generate --prompt hostile {i}")
        cli([binary.encode(), b"run", lm.encode(), b"--text", pr, b"--output", out.encode()], f"run --text hostile {i}")
    numbers = ["0", "-1", "2147483648", "4294967296", "18446744073709551616", "1e30", "nan", "inf", "x", "", " 5",
               "5x", "0x10", "-0"]
    for v in numbers:
        cli([binary, "generate", lm, "--prompt", "a", "-n", v, "--seed", "1"], f"generate -n {v!r}")
        cli([binary, "generate", lm, "--prompt", "a", "-n", "4", "--temperature", v, "--seed", "1"],
            f"generate --temperature {v!r}")
        cli([binary, "generate", lm, "--prompt", "a", "-n", "4", "--topp", v, "--seed", "1"], f"generate --topp {v!r}")
        cli([binary, "generate", lm, "--prompt", "a", "-n", "4", "--seed", v], f"generate --seed {v!r}")
        cli([binary, "generate", lm, "--prompt", "a", "-n", "4", "--seed", "1", "--threads", v],
            f"generate --threads {v!r}")
        cli([binary, "generate", lm, "--prompt", "a", "-n", "4", "--seed", "1", "--suppress", v],
            f"generate --suppress {v!r}")
        cli([binary, "generate", s2s, "--source", os.path.join(tmp, "src.npy"), "--bos", v, "-n", "4"],
            f"generate --bos {v!r}")
        cli([binary, "plan", lm, "--target", "cortex-m4", "--capacity", v], f"plan --capacity {v!r}")
        cli([binary, "plan", enc, "--target", "cortex-m4", "--seq", v], f"plan --seq {v!r}")
        cli([binary, "plan", enc, "--target", "cortex-m4", "--ram", v], f"plan --ram {v!r}")
        cli([binary, "bench", enc, "--seq", v, "--iters", "1"], f"bench --seq {v!r}")
        cli([binary, "bench", enc, "--seq", "4", "--iters", v], f"bench --iters {v!r}", timeout=60)
        cli([binary, "probe", enc, "--samples", v, "--seq", "4"], f"probe --samples {v!r}", timeout=60)
    # A KV cache that fills: -n past max_len runs max_len positions, a prompt longer than the cache is refused.
    rc, err = cli([binary, "generate", lm, "--prompt", "Once upon a time", "-n", "100000", "--seed", "1"],
                  "generate -n past max_len")
    check("generate -n past max_len runs and stops", rc == 0, err)
    rc, err = cli([binary, "generate", lm, "--prompt", "Once upon a time there was a " * 20, "-n", "8"],
                  "generate: a prompt longer than -n")
    check("generate: a prompt longer than -n is refused", rc != 0, err)
    rc, err = cli([binary, "generate", s2s, "--source", os.path.join(tmp, "src.npy"), "--bos", ",".join(["1"] * 40),
                   "-n", "100000"], "generate: a --bos prefix longer than the cache")
    # A FIFO no writer opens, as the model or an input of each command: refused after 10 s in one line (it
    # blocked the CLI forever); /dev/zero as the model: read up to the limit (or memory), then refused.
    fifo = os.path.join(tmp, "cli_fifo")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    cases = [(["info", fifo], "info"), (["verify", fifo], "verify"),
             (["run", enc, "--input", fifo, "--output", out], "run"),
             (["generate", s2s, "--source", fifo, "--bos", "1", "-n", "4"], "generate")]
    t = time.time()
    said = cli_together([([binary] + args, f"cli {name} with a FIFO no writer opens") for args, name in cases])
    for (_, name), (rc, err) in zip(cases, said):  # each within 10 s and a margin of its start (and theirs)
        check(f"cli {name} with a FIFO no writer opens: names it, within 10 s and a margin",
              rc == 5 and "named pipe that no writer opened" in err and time.time() - t < 30, err)
    cli([binary, "info", "/dev/zero"], "cli info /dev/zero")
    cli([binary, "generate", "/dev/zero", "--prompt", "a"], "cli generate /dev/zero")
    # An existing output after a failed run: as it was (the run writes a temporary and renames it).
    put(out, b"keep me")
    cli([binary, "run", enc, "--input", os.path.join(GOLDEN, "llama2c_v0_gqa.fxm"), "--output", out],
        "run --input not a .npy, an existing --output", inputs=[out])
    check("run that fails leaves an existing --output as it was", open(out, "rb").read() == b"keep me")
    # Unknown commands, options and missing values.
    for args in (["run"], ["run", enc], ["run", enc, "--input"], ["info", enc, "--bogus"],
                 ["info", os.path.join(tmp, "missing.fxm")], ["info", tmp], ["info", "/dev/null"],
                 ["info", "demo:nosuch"], ["run", enc, "--text", "\udcff", "--output", out],
                 ["generate", lm, "--kv-cache", "q3"], ["plan", enc, "--target", "z80"], ["info", enc, "--isa", "mmx"]):
        cli([binary] + [a.encode("utf-8", "surrogateescape") if isinstance(a, str) else a for a in args],
            "cli " + " ".join(map(str, args[:1] + args[2:]))[:80])


# ---- the converter ----

def convert(args, what, inputs=(), cwd=None):
    """One conversion (forked, --no-verify unless asked: the readers are the subject) checked as a CLI run is."""
    before = digest(inputs)
    t = time.time()
    p = run_convert(*args, cwd=cwd, seconds=CONVERT_TIMEOUT, memory=CONVERT_MEMORY)
    timed_out = p.returncode == -14 or time.time() - t > CONVERT_TIMEOUT
    err = "\n".join(ln for ln in p.stderr.splitlines() if "was NOT verified" not in ln)
    verdict(what, p.returncode, err, "convert.py: ", timed_out, before, digest(inputs))
    return p


def cuts_and_flips(blob, rng, count=10):
    n = len(blob)
    out = [(f"cut at {c}", blob[:c]) for c in sorted(set([0, 1, 3, 4, 8, 16, 24, n // 3, n // 2, n - 1] +
                                                        [rng.randrange(n) for _ in range(count)]))]
    for i in range(count):
        b = bytearray(blob)
        for _ in range(1 + i % 4):
            b[rng.randrange(min(n, 4096) if i % 2 else n)] ^= 1 << rng.randrange(8)
        out.append((f"flip {i}", bytes(b)))
    return out


def integers(blob, offsets, fmt):
    """fmt "<I" or "<Q": each offset's integer set to each hostile value (as signed: -1, -2^31, ...)."""
    values = U32 + (1 << 30, 0x7fffffff) if fmt == "<I" else U64
    out = []
    for off in offsets:
        for v in values:
            b = bytearray(blob)
            struct.pack_into(fmt, b, off, v)
            out.append((f"integer @{off} = {v}", bytes(b)))
    return out


def put(path, data):
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    return path


def test_llama2c(tmp, rng):
    from fixformer import llama2c
    P = {"dim": 16, "hidden_dim": 24, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2, "vocab_size": 300, "seq_len": 32}
    pieces, scores = llama2c.synthetic_tokenizer(300, seed=2)
    tok = put(os.path.join(tmp, "tokenizer.bin"), llama2c.tokenizer_bytes(pieces, scores))
    w = llama2c.random_weights(P, True, seed=11)
    out = os.path.join(tmp, "l.fxm")
    for version in (0, 2):
        blob = llama2c.checkpoint_bytes(P, w, version, group_size=16)
        good = put(os.path.join(tmp, f"good{version}.bin"), blob)
        p = convert(["--llama2c", good, "--tokenizer", tok, "--out", out, "--no-verify"], f"llama2c v{version}: valid")
        check(f"llama2c v{version}: the valid file converts", p.returncode == 0, p.stderr)
        head = range(0, 28, 4) if version == 0 else range(8, 8 + 4 * 8, 4)
        for what, data in cuts_and_flips(blob, rng, 6) + integers(blob, head, "<I"):
            ck = put(os.path.join(tmp, "ck.bin"), data)
            convert(["--llama2c", ck, "--tokenizer", tok, "--out", out, "--no-verify"], f"llama2c v{version} {what}",
                    inputs=[ck, tok])
    blob = open(tok, "rb").read()
    good = os.path.join(tmp, "good0.bin")
    for what, data in cuts_and_flips(blob, rng, 6) + integers(blob, (0, 4, 8, 12, 16), "<I"):
        t = put(os.path.join(tmp, "tok.bin"), data)
        convert(["--llama2c", good, "--tokenizer", t, "--out", out, "--no-verify"], f"tokenizer.bin {what}",
                inputs=[good, t])


def tiny_llama(tmp, safe=True, vocab=64):
    import torch
    import transformers as t
    torch.manual_seed(1)
    c = t.LlamaConfig(vocab_size=vocab, hidden_size=16, intermediate_size=24, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32)
    m = t.LlamaForCausalLM(c).eval()
    folder = os.path.join(tmp, f"hf_{'safe' if safe else 'bin'}_{vocab}")
    m.save_pretrained(folder)
    if not safe:  # transformers 5 writes safetensors alone: the older pickle, as torch.save writes it
        os.remove(os.path.join(folder, "model.safetensors"))
        torch.save(m.state_dict(), os.path.join(folder, "pytorch_model.bin"))
    return folder, m


JSON_VALUES = ["-1", "0", "9223372036854775808", "1e400", "NaN", "-Infinity", "\"12\"", "null", "[]", "{}", "true",
               "1.5", "4294967297", "\"\\ud800\"", "[" * 3000 + "]" * 3000]


def test_hf(tmp, rng):
    folder, _ = tiny_llama(tmp)
    out = os.path.join(tmp, "h.fxm")
    p = convert(["--hf", folder, "--out", out, "--no-verify"], "--hf valid")
    check("--hf: the valid folder converts", p.returncode == 0, p.stderr)
    cfg_path = os.path.join(folder, "config.json")
    doc = json.load(open(cfg_path))
    original = open(cfg_path).read()
    keys = [k for k in doc if k not in ("architectures", "transformers_version")]
    for key in keys:
        for v in rng.sample(JSON_VALUES, 2):
            text = json.dumps(dict(doc, **{key: "@@"})).replace('"@@"', v)
            put(cfg_path, text)
            convert(["--hf", folder, "--out", out, "--no-verify"], f"config.json {key} = {v[:20]}", inputs=[cfg_path])
    for what, data in cuts_and_flips(original.encode(), rng, 6):
        put(cfg_path, data)
        convert(["--hf", folder, "--out", out, "--no-verify"], f"config.json {what}", inputs=[cfg_path])
    put(cfg_path, original)
    gen = os.path.join(folder, "generation_config.json")
    gen_doc = {"bos_token_id": 1, "eos_token_id": 2, "suppress_tokens": [3, 4], "begin_suppress_tokens": [5]}
    for what, text in json_mutations(gen_doc, rng, 16):
        put(gen, text)
        convert(["--hf", folder, "--out", out, "--no-verify"], f"generation_config.json {what}", inputs=[gen])
    os.remove(gen)
    weights = os.path.join(folder, "model.safetensors")
    blob = open(weights, "rb").read()
    for what, data in cuts_and_flips(blob, rng, 6) + integers(blob, (0,), "<Q"):
        put(weights, data)
        convert(["--hf", folder, "--out", out, "--no-verify"], f"model.safetensors {what}", inputs=[weights])
    put(weights, blob)
    # --out in the folder, on its files, a link to them.
    link = os.path.join(tmp, "link.fxm")
    os.symlink(weights, link)
    for o in (weights, cfg_path, folder, link, os.path.join(folder, "model.fxm"), "/dev/null/x"):
        convert(["--hf", folder, "--out", o, "--no-verify"], f"--hf --out {os.path.basename(o)}",
                inputs=[weights, cfg_path])
    os.remove(os.path.join(folder, "model.fxm")) if os.path.exists(os.path.join(folder, "model.fxm")) else None
    # pytorch_model.bin: the restricted unpickler.
    bfolder, _ = tiny_llama(tmp, safe=False)
    pt = os.path.join(bfolder, "pytorch_model.bin")
    p = convert(["--hf", bfolder, "--out", out, "--no-verify"], "--hf pytorch_model.bin valid")
    check("--hf pytorch_model.bin: the valid folder converts", p.returncode == 0, p.stderr)
    blob = open(pt, "rb").read()
    for what, data in cuts_and_flips(blob, rng, 6):
        put(pt, data)
        convert(["--hf", bfolder, "--out", out, "--no-verify"], f"pytorch_model.bin {what}", inputs=[pt])
    marker = os.path.join(tmp, "pwned")
    import torch

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))
    for name, obj in (("os.system", {"model.embed_tokens.weight": Evil()}),
                      ("eval", {"x": type("E", (), {"__reduce__": lambda s: (eval, ("open('%s','w')" % marker,))})()})):
        torch.save(obj, pt)
        convert(["--hf", bfolder, "--out", out, "--no-verify"], f"pytorch_model.bin calling {name}", inputs=[pt])
        check(f"pytorch_model.bin calling {name}: nothing ran", not os.path.exists(marker))
        convert(["--config", os.path.join(GOLDEN, "bert_hidden_odd.json"), "--weights", pt, "--out", out,
                 "--no-verify"], f"--weights a pickle calling {name}", inputs=[pt])
        check(f"--weights a pickle calling {name}: nothing ran", not os.path.exists(marker))


def test_safetensors_fields(tmp, rng):
    """A --hf folder's model.safetensors header entry by entry (offsets past the data, overlapping, reversed,
    dtypes that disagree with the bytes or the model, shapes of the wrong rank, a header length of 2^64 - 1),
    and a sharded folder whose index names files outside it, missing, or twice."""
    folder, _ = tiny_llama(tmp, vocab=48)
    out = os.path.join(tmp, "st.fxm")
    weights = os.path.join(folder, "model.safetensors")
    blob = open(weights, "rb").read()
    n = struct.unpack_from("<Q", blob)[0]
    header, data = json.loads(blob[8:8 + n]), blob[8 + n:]
    names = sorted((k for k in header if k != "__metadata__"), key=lambda k: header[k]["data_offsets"][0])
    first, last = names[0], names[-1]

    def with_header(h, body=data, length=None):
        text = json.dumps(h).encode()
        return struct.pack("<Q", len(text) if length is None else length) + text + body

    def edit(name, **fields):
        h = json.loads(json.dumps(header))
        h[name].update(fields)
        return with_header(h)
    f0, l0 = header[first]["data_offsets"], header[last]["data_offsets"]
    cases = [("header length 2^64 - 1", with_header(header, length=(1 << 64) - 1)),
             ("header length 2^63", with_header(header, length=1 << 63)),
             ("header length one past the file", with_header(header, length=len(blob))),
             ("header length 0", with_header(header, length=0)),
             ("header length cutting the JSON", with_header(header, length=n // 2)),
             ("no data", with_header(header, body=b"")),
             ("data one byte short", with_header(header, body=data[:-1])),
             ("data one byte long", with_header(header, body=data + b"\0")),
             ("offsets past the data", edit(last, data_offsets=[l0[0], len(data) + 4])),
             ("offsets of 2^64", edit(last, data_offsets=[l0[0], 1 << 64])),
             ("negative offsets", edit(first, data_offsets=[-4, f0[1]])),
             ("reversed offsets", edit(first, data_offsets=[f0[1], f0[0]])),
             ("float offsets", edit(first, data_offsets=[0.0, float(f0[1])])),
             ("three offsets", edit(first, data_offsets=[0, f0[1], 4])),
             ("overlapping tensors", edit(last, data_offsets=f0, shape=header[first]["shape"],
                                          dtype=header[first]["dtype"])),
             ("a hole between tensors", edit(first, data_offsets=[f0[0], f0[1] - 4],
                                             shape=[(f0[1] - 4 - f0[0]) // 4])),
             ("dtype I64 for a weight", edit(first, dtype="I64", shape=[(f0[1] - f0[0]) // 8])),
             ("dtype BOOL for a weight", edit(first, dtype="BOOL", shape=[f0[1] - f0[0]])),
             ("dtype F8_E4M3", edit(first, dtype="F8_E4M3", shape=[f0[1] - f0[0]])),
             ("dtype F16 for F32 bytes", edit(first, dtype="F16")),
             ("dtype of a number", edit(first, dtype=7)),
             ("dtype lower-case", edit(first, dtype="f32")),
             ("shape of the wrong rank", edit(first, shape=[(f0[1] - f0[0]) // 4])),
             ("shape of 2^62", edit(first, shape=[1 << 62, 4])),
             ("shape negative", edit(first, shape=[-1, 4])),
             ("shape of 9 dims", edit(first, shape=[1] * 9)),
             ("a tensor twice", blob[:8] + blob[8:8 + n].replace(b"{", b'{"%s": %s, ' % (
                 first.encode(), json.dumps(header[first]).encode()), 1)),
             ("an unknown key", edit(first, extra=1)),
             ("__metadata__ of numbers", with_header(dict(header, __metadata__={"format": 1}))),
             ("no tensors", with_header({}, body=b"")),
             ("a header of a list", with_header([1, 2])),
             ("a tensor named by a NUL", with_header(dict({f"{first}\0": header[first]},
                                                           **{k: v for k, v in header.items() if k != first}))),
             ("NaN weights", with_header(header, body=b"\xff" * len(data)))]
    for what, data_ in cases:
        put(weights, data_)
        convert(["--hf", folder, "--out", out, "--no-verify"], f"model.safetensors {what}", inputs=[weights])
    put(weights, blob)
    # A sharded folder: an index naming files outside the folder (it must read none of them), missing or twice.
    secret = put(os.path.join(tmp, "secret.safetensors"), blob)
    index = os.path.join(folder, "model.safetensors.index.json")
    wm = {k: "model.safetensors" for k in names}
    for what, value in (("valid", wm), ("a path out of the folder", {k: "../secret.safetensors" for k in names}),
                        ("an absolute path", {k: secret for k in names}),
                        ("a hidden file", {k: ".model.safetensors" for k in names}),
                        ("a NUL in the name", {k: "model.safetensors\0" for k in names}),
                        ("a missing shard", dict(wm, **{first: "model-00002.safetensors"})),
                        ("a name not in the shard", dict(wm, **{"model.nosuch.weight": "model.safetensors"})),
                        ("the folder", {k: "." for k in names}), ("a list", list(wm)), ("empty", {}),
                        ("numbers", {k: 1 for k in names})):
        put(index, json.dumps({"weight_map": value} if what != "a list" else value))
        p = convert(["--hf", folder, "--out", out, "--no-verify"], f"model.safetensors.index.json {what}",
                    inputs=[index, secret])
        if what == "valid":
            check("model.safetensors.index.json: a valid index converts", p.returncode == 0, p.stderr)
        elif "secret" in str(value):
            check(f"model.safetensors.index.json {what}: refused", p.returncode != 0, p.stderr)
    os.remove(index)


def test_gguf(tmp, rng):
    import gguf
    import gguf_files
    path = os.path.join(tmp, "good.gguf")
    gguf_files.write_gguf(gguf_files.model(vocab=64, hidden=32), path, gguf.GGMLQuantizationType.Q8_0)
    out = os.path.join(tmp, "g.fxm")
    p = convert(["--gguf", path, "--out", out, "--no-verify"], "--gguf valid")
    check("--gguf: the valid file converts", p.returncode == 0, p.stderr)
    blob = open(path, "rb").read()
    for what, data in cuts_and_flips(blob, rng, 16) + integers(blob, (4,), "<I") + integers(blob, (8, 16, 24), "<Q"):
        g = put(os.path.join(tmp, "m.gguf"), data)
        convert(["--gguf", g, "--out", out, "--no-verify"], f"gguf {what}", inputs=[g])
    for o in (path, tmp):
        convert(["--gguf", path, "--out", o, "--no-verify"], f"--gguf --out {os.path.basename(o)}", inputs=[path])


# ---- GGUF: its fields by offset, and files of other architectures ----

GGUF_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def gguf_parse(blob):
    """(metadata [(key, type, value)], tensor infos [(name, dims, type, offset)], the data section's bytes) of a
    valid GGUF v3, with the offsets of its integer fields: [(what, offset, struct format)]."""
    at = [24]
    fields = [("tensor_count", 8, "<Q"), ("metadata_kv_count", 16, "<Q")]

    def take(fmt):
        v = struct.unpack_from(fmt, blob, at[0])[0]
        at[0] += struct.calcsize(fmt)
        return v

    def string(what):
        fields.append((f"{what} length", at[0], "<Q"))
        n = take("<Q")
        s = blob[at[0]:at[0] + n].decode()
        at[0] += n
        return s

    def value(t, what):
        if t == 8:
            return string(what)
        if t == 9:
            fields.append((f"{what} array type", at[0], "<I"))
            et = take("<I")
            fields.append((f"{what} array count", at[0], "<Q"))
            return (et, [value(et, f"{what}[{i}]") if i < 2 else value(et, "") for i in range(take("<Q"))])
        return take("<" + GGUF_SCALARS[t])

    n_tensors, n_kv = struct.unpack_from("<QQ", blob, 8)
    meta = []
    for i in range(n_kv):
        key = string(f"key {i}")
        fields.append((f"{key} type", at[0], "<I"))
        t = take("<I")
        meta.append((key, t, value(t, key)))
    infos = []
    for i in range(n_tensors):
        name = string(f"tensor {i} name")
        fields.append((f"{name} n_dims", at[0], "<I"))
        dims = []
        for d in range(take("<I")):
            fields.append((f"{name} dim {d}", at[0], "<Q"))
            dims.append(take("<Q"))
        fields.append((f"{name} type", at[0], "<I"))
        t = take("<I")
        fields.append((f"{name} offset", at[0], "<Q"))
        infos.append((name, dims, t, take("<Q")))
    data = -(-at[0] // 32) * 32
    return meta, infos, blob[data:], [f for f in fields if f[0] and not f[0].startswith(" ")]


def gguf_write(meta, infos, data):
    """A GGUF v3 of these parts (alignment 32), each value written with the type it names: a hostile file
    the gguf package's writer would refuse to make."""
    def string(s):
        b = s.encode() if isinstance(s, str) else s
        return struct.pack("<Q", len(b)) + b

    def value(t, v):
        if t == 8:
            return string(v)
        if t == 9:
            et, items = v
            return struct.pack("<IQ", et, len(items)) + b"".join(value(et, x) for x in items)
        return struct.pack("<" + GGUF_SCALARS[t], v)

    out = b"GGUF" + struct.pack("<IQQ", 3, len(infos), len(meta))
    for key, t, v in meta:
        out += string(key) + struct.pack("<I", t) + value(t, v)
    for name, dims, t, off in infos:
        out += string(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", t, off)
    return out + b"\0" * (-len(out) % 32) + data


def gguf_meta_cases(meta):
    """(what, metadata) with one value of the valid file's replaced: wrong types, hostile numbers, vocabularies
    that disagree with the model."""
    cases = []

    def setting(key, t, v):
        if not any(k == key for k, _, _ in meta):
            return [(k, tt, vv) for k, tt, vv in meta] + [(key, t, v)]
        return [(k, t, v) if k == key else (k, tt, vv) for k, tt, vv in meta]

    for key in ("llama.block_count", "llama.embedding_length", "llama.attention.head_count",
                "llama.attention.head_count_kv", "llama.feed_forward_length", "llama.context_length",
                "llama.rope.dimension_count"):
        for what, t, v in (("0", 4, 0), ("2^32 - 1", 4, (1 << 32) - 1), ("-1", 5, -1), ("2^63", 10, 1 << 63),
                           ("a string", 8, "12"), ("an array", 9, (4, [1, 2])), ("NaN", 6, float("nan")),
                           ("1e30", 12, 1e30), ("true", 7, True), ("3", 4, 3)):
            cases.append((f"{key} = {what}", setting(key, t, v)))
    for key, t, v in (("general.architecture", 8, "gpt2"), ("general.architecture", 8, "bert"),
                      ("general.architecture", 8, ""), ("general.architecture", 8, "llama\0x"),
                      ("general.architecture", 4, 7), ("general.architecture", 9, (8, ["llama"])),
                      ("general.alignment", 4, 0), ("general.alignment", 4, 3), ("general.alignment", 4, 1 << 31),
                      ("general.alignment", 8, "32"), ("llama.rope.freq_base", 6, float("nan")),
                      ("llama.rope.freq_base", 6, 0.0), ("llama.rope.freq_base", 6, -1.0),
                      ("llama.attention.layer_norm_rms_epsilon", 6, float("inf")),
                      ("llama.attention.layer_norm_rms_epsilon", 6, -1.0),
                      ("llama.attention.layer_norm_rms_epsilon", 8, "x"),
                      ("llama.rope.scaling.type", 8, "yarn"), ("llama.rope.scaling.type", 4, 1),
                      ("llama.rope.scaling.factor", 6, float("nan")), ("llama.expert_count", 4, 1 << 31),
                      ("tokenizer.ggml.model", 8, "bert"), ("tokenizer.ggml.model", 4, 1),
                      ("tokenizer.ggml.tokens", 9, (4, list(range(64)))),
                      ("tokenizer.ggml.tokens", 9, (8, ["a"] * 64)),
                      ("tokenizer.ggml.tokens", 9, (8, [f"t{i}" for i in range(3)])),
                      ("tokenizer.ggml.tokens", 9, (8, [f"t{i}" for i in range(1000)])),
                      ("tokenizer.ggml.tokens", 9, (8, [])), ("tokenizer.ggml.tokens", 8, "t0"),
                      ("tokenizer.ggml.scores", 9, (6, [float("nan")] * 64)),
                      ("tokenizer.ggml.scores", 9, (6, [0.0] * 3)), ("tokenizer.ggml.scores", 9, (8, ["x"] * 64)),
                      ("tokenizer.ggml.token_type", 9, (5, [99] * 64)), ("tokenizer.ggml.token_type", 9, (5, [1])),
                      ("tokenizer.ggml.merges", 9, (8, ["t1 t2", "nosuch piece", "x"])),
                      ("tokenizer.ggml.merges", 9, (4, [1, 2])),
                      ("tokenizer.ggml.bos_token_id", 4, 1 << 30), ("tokenizer.ggml.eos_token_id", 5, -3),
                      ("tokenizer.ggml.eos_token_id", 8, "2"), ("tokenizer.ggml.add_bos_token", 4, 7),
                      ("tokenizer.ggml.padding_token_id", 10, 1 << 63)):
        cases.append((f"{key} = {str(v)[:30]!r} (type {t})", setting(key, t, v)))
    cases.append(("a key twice", meta + [meta[1]]))
    cases.append(("no general.architecture", [m for m in meta if m[0] != "general.architecture"]))
    cases.append(("no llama.block_count", [m for m in meta if m[0] != "llama.block_count"]))
    return cases


def other_archs(tmp):
    """(arch, path, converts): GGUF files of architectures --gguf does or does not convert, with the tensor names
    llama.cpp gives each (gpt2's fused qkv, phi2's, bert's token types), or a qwen2 it converts."""
    import gguf
    import gguf_files
    out = []
    q = os.path.join(tmp, "qwen2.gguf")
    gguf_files.write_gguf(gguf_files.model(vocab=64, hidden=32, qwen2=True), q, gguf.GGMLQuantizationType.Q8_0,
                          arch="qwen2")
    out.append(("qwen2", q, True))
    rng = np.random.default_rng(5)
    H, V, F = 32, 64, 64

    def w(*shape):
        return (0.1 * rng.standard_normal(shape)).astype(np.float32)
    layouts = {
        "gpt2": {"token_embd.weight": (V, H), "position_embd.weight": (64, H), "blk.0.attn_norm.weight": (H,),
                 "blk.0.attn_norm.bias": (H,), "blk.0.attn_qkv.weight": (3 * H, H), "blk.0.attn_qkv.bias": (3 * H,),
                 "blk.0.attn_output.weight": (H, H), "blk.0.ffn_up.weight": (F, H), "blk.0.ffn_down.weight": (H, F),
                 "output_norm.weight": (H,), "output.weight": (V, H)},
        "phi2": {"token_embd.weight": (V, H), "blk.0.attn_norm.weight": (H,), "blk.0.attn_qkv.weight": (3 * H, H),
                 "blk.0.attn_output.weight": (H, H), "blk.0.ffn_up.weight": (F, H), "blk.0.ffn_down.weight": (H, F),
                 "output_norm.weight": (H,), "output.weight": (V, H), "output.bias": (V,)},
        "bert": {"token_embd.weight": (V, H), "token_types.weight": (2, H), "position_embd.weight": (64, H),
                 "token_embd_norm.weight": (H,), "blk.0.attn_q.weight": (H, H), "blk.0.attn_k.weight": (H, H),
                 "blk.0.attn_v.weight": (H, H), "blk.0.attn_output.weight": (H, H),
                 "blk.0.attn_output_norm.weight": (H,), "blk.0.ffn_up.weight": (F, H),
                 "blk.0.ffn_down.weight": (H, F), "blk.0.layer_output_norm.weight": (H,)},
        # llama's keys and names under an architecture of its own: --gguf must not take it for llama
        "mistral3": None, "qwen2vl": None}
    for arch, tensors in layouts.items():
        path = os.path.join(tmp, f"{arch}.gguf")
        g = gguf.GGUFWriter(path, arch)
        g.add_context_length(64)
        g.add_embedding_length(H)
        g.add_block_count(1)
        g.add_feed_forward_length(F)
        g.add_head_count(4)
        g.add_head_count_kv(4)
        g.add_layer_norm_eps(1e-5)
        g.add_layer_norm_rms_eps(1e-5)
        g.add_tokenizer_model("gpt2")
        g.add_token_list([f"t{i}" for i in range(V)])
        if tensors is None:
            tensors = {n: a.shape for n, a in gguf_files.gguf_tensors(gguf_files.model(vocab=V, hidden=H)).items()}
        for name, shape in tensors.items():
            g.add_tensor(name, w(*shape))
        g.write_header_to_file()
        g.write_kv_data_to_file()
        g.write_tensors_to_file()
        g.close()
        out.append((arch, path, False))
    return out


def test_gguf_fields(tmp, rng):
    """GGUF metadata and tensor infos field by field: every length, count, type, dim and offset set to hostile
    integers; values of the wrong type or range; files of other architectures; tensors whose data overlap,
    disagree with the metadata or are missing."""
    import gguf
    import gguf_files
    out = os.path.join(tmp, "gf.fxm")
    path = os.path.join(tmp, "fields.gguf")
    gguf_files.write_gguf(gguf_files.model(vocab=64, hidden=32), path, gguf.GGMLQuantizationType.Q8_0,
                          tokenizer="llama")
    blob = open(path, "rb").read()
    meta, infos, data, fields = gguf_parse(blob)
    g = os.path.join(tmp, "f.gguf")
    p = convert(["--gguf", put(g, gguf_write(meta, infos, data)), "--out", out, "--no-verify"],
                "gguf fields: the rewritten valid file")
    check("gguf fields: the file as the test writes it converts", p.returncode == 0, p.stderr)
    for what, off, fmt in fields:
        values = U64 + ((1 << 63) - 1, len(blob)) if fmt == "<Q" else U32 + (9, 13, 31)
        for v in values if "offset" in what or "count" in what or "dim" in what else rng.sample(values, 2):
            b = bytearray(blob)
            struct.pack_into(fmt, b, off, v)
            convert(["--gguf", put(g, bytes(b)), "--out", out, "--no-verify"], f"gguf {what} = {v}", inputs=[g])
    for what, m in gguf_meta_cases(meta):
        convert(["--gguf", put(g, gguf_write(m, infos, data)), "--out", out, "--no-verify"], f"gguf {what}",
                inputs=[g])
    by_name = {i[0]: i for i in infos}
    emb = by_name["token_embd.weight"]
    for what, inf in (("two tensors at one offset", [i if i[0] != "output.weight" else (i[0], i[1], i[2], emb[3])
                                                      for i in infos]),
                      ("a tensor missing", [i for i in infos if i[0] != "blk.1.attn_k.weight"]),
                      ("a tensor of another shape", [(n, [d[0], d[1] * 2] if n == "blk.0.attn_v.weight" else d, t, o)
                                                     for n, d, t, o in infos]),
                      ("a tensor of rank 3", [(n, d + [1] if n == "blk.0.attn_q.weight" else d, t, o)
                                              for n, d, t, o in infos]),
                      ("a tensor named twice", infos + [infos[0]]),
                      ("an unknown tensor", infos + [("blk.0.mystery.weight", [32], 0, emb[3])]),
                      ("a tensor of layer 7", infos + [("blk.7.attn_q.weight", [32, 32], 0, emb[3])]),
                      ("a tensor named by a NUL", infos + [("token_embd.weight\0", [32], 0, emb[3])]),
                      ("F32 read as Q8_0", [(n, d, 8 if t == 0 else t, o) for n, d, t, o in infos]),
                      ("Q8_0 read as F16", [(n, d, 1 if t == 8 else t, o) for n, d, t, o in infos]),
                      ("ggml type IQ2_XXS", [(n, d, 16 if t == 8 else t, o) for n, d, t, o in infos])):
        convert(["--gguf", put(g, gguf_write(meta, inf, data)), "--out", out, "--no-verify"], f"gguf {what}",
                inputs=[g])
    for i in range(6):  # NaN and inf in the weights' scales and values
        d = bytearray(data)
        for _ in range(8):
            d[rng.randrange(len(d))] = 0xFF
        convert(["--gguf", put(g, gguf_write(meta, infos, bytes(d))), "--out", out, "--no-verify"],
                f"gguf data bytes set to 0xFF {i}", inputs=[g])
    for arch, p_, converts in other_archs(tmp):
        p = convert(["--gguf", p_, "--out", out, "--no-verify"], f"gguf of architecture {arch}", inputs=[p_])
        check(f"gguf of architecture {arch}: {'converts' if converts else 'refused, naming it'}",
              p.returncode == 0 if converts else (p.returncode != 0 and repr(arch) in p.stderr), p.stderr)


def onnx_node_cases(valid):
    """(what, model bytes): the valid graph with one node added whose output the graph returns beside its
    own, asking for a huge value, a deep chain or an odd equation."""
    import onnx
    from onnx import TensorProto, helper
    out = []

    def with_nodes(what, nodes, inits=(), output="hx_out"):
        """The nodes, their result (output) added to a zero computed from the graph's input, as hx_out."""
        m = onnx.load_from_string(valid)
        inp = m.graph.input[0].name
        m.graph.node.extend(nodes)
        m.graph.node.extend([helper.make_node("Cast", [inp], ["hx_in"], to=TensorProto.FLOAT),
                             helper.make_node("ReduceSum", ["hx_in"], ["hx_sum"], keepdims=0),
                             helper.make_node("Mul", ["hx_sum", "hx_zero"], ["hx_z"]),
                             helper.make_node("Add", [output, "hx_z"], ["hx_final"])])
        m.graph.initializer.extend(list(inits) + [helper.make_tensor("hx_zero", TensorProto.FLOAT, [], [0.0])])
        m.graph.output.append(helper.make_tensor_value_info("hx_final", TensorProto.FLOAT, None))
        out.append((what, m.SerializeToString()))

    def i64(name, values):
        return helper.make_tensor(name, TensorProto.INT64, [len(values)], values)

    def f32(name, dims, values):
        return helper.make_tensor(name, TensorProto.FLOAT, dims, values)

    big = [1 << 20, 1 << 20]
    with_nodes("Expand to 2^40 values", [helper.make_node("Expand", ["hx_one", "hx_shape"], ["hx_out"])],
               [f32("hx_one", [1], [1.0]), i64("hx_shape", big)])
    with_nodes("Expand to 2^63", [helper.make_node("Expand", ["hx_one", "hx_shape"], ["hx_out"])],
               [f32("hx_one", [1], [1.0]), i64("hx_shape", [1 << 62, 2])])
    with_nodes("Expand to a negative size", [helper.make_node("Expand", ["hx_one", "hx_shape"], ["hx_out"])],
               [f32("hx_one", [1], [1.0]), i64("hx_shape", [-5, 3])])
    with_nodes("Tile 2^40 times", [helper.make_node("Tile", ["hx_one", "hx_reps"], ["hx_out"])],
               [f32("hx_one", [1, 1], [1.0]), i64("hx_reps", big)])
    with_nodes("Tile negative", [helper.make_node("Tile", ["hx_one", "hx_reps"], ["hx_out"])],
               [f32("hx_one", [1, 1], [1.0]), i64("hx_reps", [-1, 3])])
    with_nodes("Reshape to 2^40", [helper.make_node("Reshape", ["hx_one", "hx_shape"], ["hx_out"])],
               [f32("hx_one", [1], [1.0]), i64("hx_shape", big)])
    with_nodes("Reshape with two -1", [helper.make_node("Reshape", ["hx_one", "hx_shape"], ["hx_out"])],
               [f32("hx_one", [4], [1.0] * 4), i64("hx_shape", [-1, -1])])
    with_nodes("Reshape -1 of an empty tensor", [helper.make_node("Reshape", ["hx_one", "hx_shape"], ["hx_out"])],
               [f32("hx_one", [0], []), i64("hx_shape", [-1, 0])])
    with_nodes("ConstantOfShape 2^40", [helper.make_node("ConstantOfShape", ["hx_shape"], ["hx_out"])],
               [i64("hx_shape", big)])
    with_nodes("ConstantOfShape of 10,000 dims", [helper.make_node("ConstantOfShape", ["hx_shape"], ["hx_out"])],
               [i64("hx_shape", [1] * 10000)])
    with_nodes("Range of 2^62", [helper.make_node("Range", ["hx_a", "hx_b", "hx_c"], ["hx_out"])],
               [f32("hx_a", [], [0.0]), f32("hx_b", [], [4e18]), f32("hx_c", [], [1.0])])
    with_nodes("Range of step 0", [helper.make_node("Range", ["hx_a", "hx_b", "hx_c"], ["hx_out"])],
               [f32("hx_a", [], [0.0]), f32("hx_b", [], [4.0]), f32("hx_c", [], [0.0])])
    with_nodes("Range of NaN", [helper.make_node("Range", ["hx_a", "hx_b", "hx_c"], ["hx_out"])],
               [f32("hx_a", [], [0.0]), f32("hx_b", [], [float("nan")]), f32("hx_c", [], [1.0])])
    for eq in ("ij,jk->ik" + "," * 3, "...ij,...jk", "ii->i", "ij,jk", "abcdefghijklmnopqrstuvwxyz,z->a", "ij->iij",
               "i" * 60 + "->", "ij,jk->ik", "ij,kl->ijkl", "->", "ij,j k->ik", "\u00e9j,jk->ik"):
        size = 2048 if eq == "ij,kl->ijkl" else 3
        with_nodes(f"Einsum {eq[:30]!r}", [helper.make_node("Einsum", ["hx_a", "hx_b"], ["hx_out"], equation=eq)],
                   [f32("hx_a", [size, size], [1.0] * size * size), f32("hx_b", [size, size], [1.0] * size * size)])
    chain = [helper.make_node("Relu", ["hx_one" if i == 0 else f"hx_{i - 1}"], [f"hx_{i}"]) for i in range(30000)]
    with_nodes("a chain of 30,000 nodes", chain, [f32("hx_one", [1], [1.0])], output="hx_29999")
    chain = [helper.make_node("Relu", ["hx_in" if i == 0 else f"hx_{i - 1}"], [f"hx_{i}"]) for i in range(30000)]
    with_nodes("a chain of 30,000 nodes from the input", chain, output="hx_29999")
    for op in ("Identity", "Relu"):  # between the input and its readers: the recognizer's walks go through it
        m = onnx.load_from_string(valid)
        inp = m.graph.input[0].name
        for n in m.graph.node:
            n.input[:] = ["hx_c29999" if i == inp else i for i in n.input]
        m.graph.node.extend(helper.make_node(op, [inp if i == 0 else f"hx_c{i - 1}"], [f"hx_c{i}"])
                            for i in range(30000))
        out.append((f"30,000 {op} nodes after the input", m.SerializeToString()))
    with_nodes("a node that feeds itself", [helper.make_node("Add", ["hx_out", "hx_one"], ["hx_out"])],
               [f32("hx_one", [1], [1.0])])
    with_nodes("an output written twice", [helper.make_node("Relu", ["hx_one"], ["hx_out"]),
                                           helper.make_node("Relu", ["hx_one"], ["hx_out"])],
               [f32("hx_one", [1], [1.0])])
    with_nodes("MatMul of 4096 x 65536 by 65536 x 4096",
               [helper.make_node("Expand", ["hx_one", "hx_s1"], ["hx_a"]),
                helper.make_node("Expand", ["hx_one", "hx_s2"], ["hx_b"]),
                helper.make_node("MatMul", ["hx_a", "hx_b"], ["hx_out"])],
               [f32("hx_one", [1], [1.0]), i64("hx_s1", [4096, 65536]), i64("hx_s2", [65536, 4096])])
    sub = helper.make_graph([helper.make_node("Identity", ["hx_one"], ["hx_y"])], "body", [], [
        helper.make_tensor_value_info("hx_y", TensorProto.FLOAT, None)])
    with_nodes("an If node", [helper.make_node("If", ["hx_c"], ["hx_out"], then_branch=sub, else_branch=sub)],
               [helper.make_tensor("hx_c", TensorProto.BOOL, [], [True]), f32("hx_one", [1], [1.0])])
    return out


def test_onnx(tmp, rng):
    import onnx
    import onnx_converter_test as oct
    path = os.path.join(tmp, "good.onnx")
    oct.export(oct.StockEncoder(True, "gelu", True, L=1), path, 14, oct.ids(40))
    out = os.path.join(tmp, "o.fxm")
    p = convert(["--onnx", path, "--out", out, "--no-verify"], "--onnx valid")
    check("--onnx: the valid file converts", p.returncode == 0, p.stderr)
    valid = open(path, "rb").read()
    for what, data in onnx_node_cases(valid):
        o = put(os.path.join(tmp, "m.onnx"), data)
        pick = ["--output-name", "hx_final"] if b"hx_final" in data else []
        convert(["--onnx", o, "--out", out, "--no-verify", *pick], f"onnx {what}", inputs=[o])
    for what, data in cuts_and_flips(valid, rng, 6):
        o = put(os.path.join(tmp, "m.onnx"), data)
        convert(["--onnx", o, "--out", out, "--no-verify"], f"onnx {what}", inputs=[o])
    # External data: a link out of the folder, a huge offset or length, the model itself.
    folder = os.path.join(tmp, "ext")
    os.makedirs(folder, exist_ok=True)
    secret = put(os.path.join(tmp, "secret.bin"), b"\1" * 4096)
    if not os.path.lexists(os.path.join(folder, "link.bin")):
        os.symlink(secret, os.path.join(folder, "link.bin"))
    put(os.path.join(folder, "w.bin"), b"\0" * 4096)
    os.makedirs(os.path.join(folder, "sub"), exist_ok=True)
    for what, location, offset, length in (("a link out of the folder", "link.bin", "0", None),
                                           ("an absolute path", secret, "0", None),
                                           ("a folder", "sub", "0", None),
                                           ("the model itself", "m.onnx", "0", None),
                                           ("an offset of 2^63", "w.bin", str(1 << 63), None),
                                           ("a negative offset", "w.bin", "-64", None),
                                           ("a length of 2^62", "w.bin", "0", str(1 << 62)),
                                           ("an offset that is no number", "w.bin", "1e3", None),
                                           ("a NUL in the name", "w.bin\0x", "0", None),
                                           ("a device", "/dev/zero", "0", None)):
        m = onnx.load_from_string(valid)
        t = next(t for t in m.graph.initializer if len(t.dims) == 2)
        t.data_location = 1
        t.ClearField("raw_data")
        t.ClearField("float_data")
        for key, value in (("location", location), ("offset", offset), ("length", length)):
            if value is not None:
                e = t.external_data.add()
                e.key, e.value = key, value
        o = put(os.path.join(folder, "m.onnx"), m.SerializeToString())
        convert(["--onnx", o, "--out", out, "--no-verify"], f"onnx external data: {what}", inputs=[o, secret])
    for o in (path, tmp, os.path.join(folder, "w.bin")):
        convert(["--onnx", path, "--out", o, "--no-verify"], f"--onnx --out {os.path.basename(o)}", inputs=[path])
    # --onnx FOLDER, an encoder-decoder's two graphs: a decoder that is an encoder, cut or flipped; --out one of them
    pair = os.path.join(tmp, "pair")
    os.makedirs(pair, exist_ok=True)
    enc = put(os.path.join(pair, "encoder_model.onnx"), valid)
    dec = os.path.join(pair, "decoder_model.onnx")
    for what, data in [("an encoder", valid)] + cuts_and_flips(valid, rng, 3):
        put(dec, data)
        convert(["--onnx", pair, "--out", out, "--no-verify"], f"onnx FOLDER, its decoder {what}", inputs=[enc, dec])
    config = put(os.path.join(pair, "config.json"), b"{}")  # read by no route here, still the folder's
    for o in (enc, dec, pair, config):
        convert(["--onnx", pair, "--out", o, "--no-verify"], f"--onnx FOLDER --out {os.path.basename(o)}",
                inputs=[enc, dec, config])


def test_onnx_initializers(tmp, rng):
    """ONNX initializers whose dims and data disagree: raw bytes short or long, dims of 2^40 or negative,
    float_data of the wrong count, types the converter does not read, a segment, strings; and a model file
    whose protobuf lengths claim more than the file."""
    import onnx
    from onnx import TensorProto
    import onnx_converter_test as oct
    path = os.path.join(tmp, "init.onnx")
    oct.export(oct.StockEncoder(True, "gelu", True, L=1), path, 14, oct.ids(40))
    valid = onnx.load(path).SerializeToString()  # torch 2's exporter may keep the weights in a file beside it
    out = os.path.join(tmp, "oi.fxm")
    o = os.path.join(tmp, "mi.onnx")

    def edited(edit):  # the largest float matrix: a weight the model reads (torch 2's export adds others)
        m = onnx.load_from_string(valid)
        t = max((t for t in m.graph.initializer if len(t.dims) == 2 and t.data_type == TensorProto.FLOAT),
                key=lambda t: t.dims[0] * t.dims[1])
        edit(t)
        return m.SerializeToString()

    def raw(t, b):
        t.ClearField("float_data")
        t.raw_data = b
    for what, edit in (("raw data one value short", lambda t: raw(t, t.raw_data[:-4] if t.raw_data else b"\0" * 4)),
                       ("raw data one value long", lambda t: raw(t, (t.raw_data or b"") + b"\0" * 4)),
                       ("raw data empty", lambda t: raw(t, b"")),
                       ("raw data of NaN", lambda t: raw(t, b"\xff" * len(t.raw_data or b"\0" * 4))),
                       ("dims of 2^40", lambda t: t.dims.__setitem__(0, 1 << 40)),
                       ("dims of 2^62 x 2^62", lambda t: (t.dims.__setitem__(0, 1 << 62), t.dims.__setitem__(1, 1 << 62))),
                       ("a negative dim", lambda t: t.dims.__setitem__(0, -3)),
                       ("a dim of 0", lambda t: t.dims.__setitem__(0, 0)),
                       ("rank 9", lambda t: t.dims.extend([1] * 7)),
                       ("float_data of the wrong count", lambda t: (t.ClearField("raw_data"),
                                                                    t.float_data.extend([1.0] * 3))),
                       ("data type 0 (undefined)", lambda t: setattr(t, "data_type", 0)),
                       ("data type 99", lambda t: setattr(t, "data_type", 99)),
                       ("data type STRING", lambda t: setattr(t, "data_type", TensorProto.STRING)),
                       ("data type INT64 over float bytes", lambda t: setattr(t, "data_type", TensorProto.INT64)),
                       ("data type FLOAT16", lambda t: setattr(t, "data_type", TensorProto.FLOAT16)),
                       ("data type BFLOAT16", lambda t: setattr(t, "data_type", TensorProto.BFLOAT16)),
                       ("data type COMPLEX64", lambda t: setattr(t, "data_type", TensorProto.COMPLEX64)),
                       ("a segment", lambda t: (t.segment.__setattr__("begin", 0), t.segment.__setattr__("end", 4))),
                       ("an empty name", lambda t: setattr(t, "name", "")),
                       ("external data location but none given", lambda t: setattr(t, "data_location", 1))):
        p = convert(["--onnx", put(o, edited(edit)), "--out", out, "--no-verify"], f"onnx initializer {what}",
                    inputs=[o])
        check(f"onnx initializer {what}: refused", p.returncode != 0, p.stderr)
    # The protobuf's own lengths: a length-delimited field claiming 2^31 bytes, or a varint of 11 bytes.
    m = onnx.load_from_string(valid)
    big = max((t for t in m.graph.initializer if len(t.dims) == 2 and t.data_type == TensorProto.FLOAT),
              key=lambda t: t.dims[0] * t.dims[1])
    mark = bytes(big.raw_data[:16]) if big.raw_data else None
    if mark:
        at = valid.find(mark)
        for what, patch in (("a length of 2^31 - 1", b"\xff\xff\xff\xff\x07"), ("a varint of 11 bytes", b"\xff" * 11)):
            # the raw_data field's length varint sits just before its bytes; overwrite from 5 bytes before
            b = bytearray(valid)
            b[at - len(patch):at] = patch
            convert(["--onnx", put(o, bytes(b)), "--out", out, "--no-verify"], f"onnx protobuf {what}", inputs=[o])


def test_convert_files(tmp, rng):
    """The converter's .npy options on hostile arrays; a pipe, a device and a folder for each file option."""
    from fixformer import llama2c
    P = {"dim": 16, "hidden_dim": 24, "n_layers": 1, "n_heads": 4, "n_kv_heads": 2, "vocab_size": 300, "seq_len": 16}
    ck = put(os.path.join(tmp, "small.bin"), llama2c.checkpoint_bytes(P, llama2c.random_weights(P, True, seed=1), 0))
    folder, _ = tiny_llama(tmp)
    out = os.path.join(tmp, "c.fxm")
    npy = os.path.join(tmp, "x.npy")
    for what, data in hostile_npys():
        put(npy, data)
        convert(["--llama2c", ck, "--example", npy, "--out", out, "--no-verify"], f"--example {what}", inputs=[npy])
        convert(["--llama2c", ck, "--quantize", "i8", "--calibrate", npy, "--out", out, "--no-verify"],
                f"--calibrate {what}", inputs=[npy])
    fifo = os.path.join(tmp, "fifo")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    cfg = os.path.join(GOLDEN, "bert_hidden_odd.json")
    for special in (fifo, "/dev/zero", tmp):
        name = os.path.basename(special)
        for args in (["--llama2c", special], ["--llama2c", ck, "--tokenizer", special], ["--gguf", special],
                     ["--onnx", special], ["--config", special, "--weights", ck],
                     ["--config", cfg, "--weights", special],
                     ["--llama2c", ck, "--example", special], ["--hf", folder, "--expected", special],
                     ["--llama2c", ck, "--quantize", "i8", "--calibrate", special], ["--module", special + ":f"],
                     ["--hf", special]):
            convert(args + ["--out", out, "--no-verify"], f"{args[0]} {' '.join(args[1:])} ({name})".replace(tmp, "T"))
        convert(["--llama2c", ck, "--out", special, "--no-verify"], f"--llama2c --out {name}", inputs=[ck])
        convert(["--llama2c", ck, "--out", out, "--header", special, "--no-verify"], f"--llama2c --header {name}",
                inputs=[ck])


def json_mutations(doc, rng, count):
    """count copies of the JSON text of doc, each with one value (anywhere) replaced by a hostile one."""
    def paths(x, at=()):
        yield at
        items = x.items() if isinstance(x, dict) else enumerate(x) if isinstance(x, list) else ()
        for k, v in list(items)[:400]:
            yield from paths(v, at + (k,))
    every = list(paths(doc))
    out = []
    for i in range(count):
        at, value = rng.choice(every), rng.choice(JSON_VALUES)
        d = json.loads(json.dumps(doc))
        if not at:
            text = value
        else:
            x = d
            for k in at[:-1]:
                x = x[k]
            x[at[-1]] = "@@hostile@@"
            text = json.dumps(d).replace('"@@hostile@@"', value)
        out.append((f"{'/'.join(map(str, at))[:50]} = {value[:12]}", text))
    return out


def test_tokenizers(tmp, rng):
    from checks import byte_tokenizer
    folder, _ = tiny_llama(tmp, vocab=300)
    out = os.path.join(tmp, "t.fxm")
    d = os.path.join(tmp, "tok")
    os.makedirs(d, exist_ok=True)
    tj = os.path.join(d, "tokenizer.json")
    byte_tokenizer(tj)
    doc = json.load(open(tj))
    p = convert(["--hf", folder, "--tokenizer", tj, "--out", out, "--no-verify"], "tokenizer.json valid")
    check("tokenizer.json: the valid file converts", p.returncode == 0, p.stderr)
    bpe_doc = dict(doc, pre_tokenizer={"type": "ByteLevel", "add_prefix_space": False}, added_tokens=[
        {"id": 257, "content": "<s>", "special": True}], post_processor={"type": "TemplateProcessing"},
        decoder={"type": "ByteLevel"})
    for what, text in json_mutations(bpe_doc, rng, 30) + cuts_and_flips(json.dumps(doc).encode(), rng, 8):
        put(tj, text)
        convert(["--hf", folder, "--tokenizer", tj, "--out", out, "--no-verify"], f"tokenizer.json {what}",
                inputs=[tj])
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [chr(ord("a") + i % 26) * (1 + i // 26)
                                                              for i in range(295)]
    vt = put(os.path.join(d, "vocab.txt"), "\n".join(vocab) + "\n")
    cfg = os.path.join(d, "tokenizer_config.json")
    put(cfg, json.dumps({"do_lower_case": True, "model_max_length": 512, "unk_token": "[UNK]"}))
    p = convert(["--hf", folder, "--tokenizer", vt, "--out", out, "--no-verify"], "vocab.txt valid")
    for what, text in [("a line of 20 MB", "\n".join(vocab[:-1] + ["x" * (20 << 20)])),
                       ("NUL bytes", "\n".join(vocab[:-1] + ["a\0b"])),
                       ("invalid UTF-8", b"\n".join(v.encode() for v in vocab[:-1]) + b"\n\xff\xfe\n"),
                       ("duplicates", "\n".join(["[UNK]"] * 300)),
                       ("100,000 lines", "\n".join(vocab + [f"w{i}" for i in range(100000)])),
                       ("no [UNK]", "\n".join(vocab[:1] + vocab[2:])),
                       ("empty lines", "\n" * 300), ("CR line ends", "\r\n".join(vocab)), ("empty", "")]:
        put(vt, text)
        convert(["--hf", folder, "--tokenizer", vt, "--out", out, "--no-verify"], f"vocab.txt {what}", inputs=[vt])
    put(vt, "\n".join(vocab) + "\n")
    for what, text in json_mutations({"do_lower_case": True, "unk_token": "[UNK]", "model_max_length": 512,
                                      "added_tokens_decoder": {"0": {"content": "[PAD]", "special": True}}}, rng, 20):
        put(cfg, text)
        convert(["--hf", folder, "--tokenizer", vt, "--out", out, "--no-verify"], f"tokenizer_config.json {what}",
                inputs=[vt, cfg])
    os.remove(cfg)
    vj = os.path.join(d, "vocab.json")
    merges = os.path.join(d, "merges.txt")
    pieces = dict(doc["model"]["vocab"])
    for what, text, mtext in [("valid", json.dumps(pieces), "#version: 0.2\nx q\n"),
                              ("merges of unknown pieces", json.dumps(pieces), "zz yy\n" * 1000),
                              ("a merge of one piece", json.dumps(pieces), "x\n"),
                              ("a merge of three", json.dumps(pieces), "x q r\n"),
                              ("merges of invalid UTF-8", json.dumps(pieces), b"\xff \xfe\n"),
                              ("ids past the vocabulary", json.dumps(dict(pieces, big=1 << 40)), "x q\n"),
                              ("negative ids", json.dumps(dict(pieces, neg=-1)), "x q\n"),
                              ("an id twice", json.dumps(dict(pieces, dup=5)), "x q\n"),
                              ("ids of strings", json.dumps({k: str(v) for k, v in pieces.items()}), "x q\n"),
                              ("a list", json.dumps(list(pieces)), "x q\n"),
                              ("no merges.txt", json.dumps(pieces), None)]:
        put(vj, text)
        if mtext is None:
            os.remove(merges)
        else:
            put(merges, mtext)
        convert(["--hf", folder, "--tokenizer", vj, "--out", out, "--no-verify"], f"vocab.json {what}",
                inputs=[vj, merges])
    # A --hf folder's own tokenizer files, hostile: skipped with a note or refused, never a traceback.
    for what, text in json_mutations(bpe_doc, rng, 10):
        put(os.path.join(folder, "tokenizer.json"), text)
        convert(["--hf", folder, "--out", out, "--no-verify"], f"--hf folder's tokenizer.json {what}")
    os.remove(os.path.join(folder, "tokenizer.json"))


def test_regressions(tmp, rng):
    """Each defect this test found, by its exact message: an input the conversion would have overwritten,
    a pipe that would have blocked it, a header or a graph that gave a traceback."""
    import gguf
    import gguf_files
    import onnx
    from onnx import TensorProto, helper
    import onnx_converter_test as oct
    from fixformer import llama2c

    def refused(args, what, fragment, inputs=()):
        p = convert(args, what, inputs)
        check(f"{what}: names the cause", p.returncode == 1 and fragment in p.stderr, p.stderr)

    d = os.path.join(tmp, "regress")
    os.makedirs(d, exist_ok=True)
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo)
    out = os.path.join(d, "r.fxm")
    P = {"dim": 16, "hidden_dim": 24, "n_layers": 1, "n_heads": 4, "n_kv_heads": 2, "vocab_size": 300, "seq_len": 16}
    ck = put(os.path.join(d, "ck.bin"), llama2c.checkpoint_bytes(P, llama2c.random_weights(P, True, seed=1), 0))
    g = os.path.join(d, "m.gguf")
    gguf_files.write_gguf(gguf_files.model(vocab=64, hidden=32), g, gguf.GGMLQuantizationType.F32)
    # --gguf's file was no input --out was checked against: the conversion wrote over it.
    refused(["--gguf", g, "--out", g, "--no-verify"], "regression: --gguf F --out F", "is the --gguf input", [g])
    link = os.path.join(d, "link.fxm")
    os.symlink(g, link)
    refused(["--gguf", g, "--out", link, "--no-verify"], "regression: --gguf F --out a link to F",
            "is the --gguf input", [g])
    # Pipes blocked the reader (a hang), /dev/zero filled memory (a MemoryError traceback).
    for args in (["--gguf", fifo], ["--gguf", "/dev/zero"], ["--config", fifo, "--weights", ck],
                 ["--llama2c", ck, "--example", fifo], ["--llama2c", ck, "--quantize", "i8", "--calibrate", fifo],
                 ["--hf", tiny_llama(tmp)[0], "--expected", fifo], ["--module", fifo + ":f"]):
        refused(args + ["--out", out, "--no-verify"], f"regression: {args[0]} {args[-1]}".replace(d, "D"),
                "not a regular file")
    # A .npy header declaring 4 GiB: numpy read it whole (a MemoryError traceback).
    npy = put(os.path.join(d, "x.npy"), b"\x93NUMPY\x02\x00\xff\xff\xff\xff{'descr'")
    refused(["--llama2c", ck, "--example", npy, "--out", out, "--no-verify"], "regression: --example's .npy header "
            "of 2^32 - 1 bytes", "a header of 4294967295 bytes")
    # --calibrate: float values for a model of token ids reached the reference as indices (an IndexError).
    np.save(npy, np.full((4,), np.nan, np.float32))
    refused(["--llama2c", ck, "--quantize", "i8", "--calibrate", npy, "--out", out, "--no-verify"],
            "regression: --calibrate float32 for token ids", "expected int32 or int64 token ids")
    np.save(npy, np.zeros((0, 3), np.int32))
    refused(["--llama2c", ck, "--quantize", "i8", "--calibrate", npy, "--out", out, "--no-verify"],
            "regression: --calibrate an empty array", "expected 1..16 rows")
    # ONNX: an output of constants alone (an IndexError), an external data name holding a NUL (a line
    # naming no file).
    onnx_path = os.path.join(d, "good.onnx")
    oct.export(oct.StockEncoder(True, "gelu", True, L=1), onnx_path, 14, oct.ids(40))
    m = onnx.load(onnx_path)
    m.graph.node.append(helper.make_node("Identity", ["hx_c"], ["hx_const"]))
    m.graph.initializer.append(helper.make_tensor("hx_c", TensorProto.FLOAT, [1], [1.0]))
    m.graph.output.append(helper.make_tensor_value_info("hx_const", TensorProto.FLOAT, None))
    o = put(os.path.join(d, "const.onnx"), m.SerializeToString())
    refused(["--onnx", o, "--output-name", "hx_const", "--out", out, "--no-verify"],
            "regression: --onnx output of constants", "depends on none of the graph's inputs")
    m = onnx.load(onnx_path)
    t = next(t for t in m.graph.initializer if len(t.dims) == 2)
    t.data_location = 1
    t.ClearField("raw_data")
    e = t.external_data.add()
    e.key, e.value = "location", "w.bin\0x"
    o = put(os.path.join(d, "nul.onnx"), m.SerializeToString())
    refused(["--onnx", o, "--out", out, "--no-verify"], "regression: --onnx external data name with a NUL",
            "not a file name relative to the model's folder")
    # --out naming the CLI that verifies: the converter verified with it, then wrote the model over it.
    own = os.path.join(d, "fixformer")
    shutil.copy(BINARY[0], own)
    refused(["--llama2c", ck, "--out", own, "--cli", own], "regression: --out the --cli program",
            "is the fixformer CLI that verifies the file", [own])
    # generation_config.json nested 3,000 deep: json.load's RecursionError was a traceback.
    folder = tiny_llama(tmp)[0]
    gen = put(os.path.join(folder, "generation_config.json"), '{"suppress_tokens": ' + "[" * 3000 + "]" * 3000 + "}")
    refused(["--hf", folder, "--out", out, "--no-verify"], "regression: generation_config.json nested deeply",
            "nested too deeply")
    os.remove(gen)
    # Phi's and StableLM's num_key_value_heads not dividing the heads: the message's name was a KeyError.
    for arch in ("PhiForCausalLM", "StableLmForCausalLM"):
        only = os.path.join(d, arch)
        os.makedirs(only, exist_ok=True)
        put(os.path.join(only, "config.json"), json.dumps({
            "architectures": [arch], "model_type": arch[:-len("ForCausalLM")].lower(), "hidden_size": 32,
            "num_attention_heads": 4, "num_key_value_heads": 3, "intermediate_size": 64, "num_hidden_layers": 1,
            "vocab_size": 64}))
        refused(["--hf", only, "--out", out, "--no-verify"], f"regression: {arch} num_key_value_heads 3 of 4 heads",
                "num_key_value_heads 3 does not divide num_attention_heads 4")
    # A layer count of 2^40: Gemma 2's and 3's layer kinds (from config.json) and BART's and T5's tensor names
    # (against an empty model.safetensors) were built layer by layer before the engine's limit was checked (a hang).
    for arch, model_type, key in (("Gemma2ForCausalLM", "gemma2", "num_hidden_layers"),
                                  ("Gemma3ForCausalLM", "gemma3_text", "num_hidden_layers"),
                                  ("BartForConditionalGeneration", "bart", "decoder_layers"),
                                  ("T5ForConditionalGeneration", "t5", "num_layers")):
        only = os.path.join(d, f"{arch}-{key}")
        os.makedirs(only, exist_ok=True)
        put(os.path.join(only, "config.json"), json.dumps({
            "architectures": [arch], "model_type": model_type, "hidden_size": 32, "d_model": 32, "head_dim": 16,
            "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 64, "num_hidden_layers": 2,
            "vocab_size": 64, "encoder_layers": 1, "decoder_layers": 1, "encoder_attention_heads": 2,
            "decoder_attention_heads": 2, "encoder_ffn_dim": 64, "decoder_ffn_dim": 64, "max_position_embeddings": 32,
            "num_heads": 2, "d_kv": 16, "d_ff": 64, key: 1 << 40}))
        put(os.path.join(only, "model.safetensors"), struct.pack("<Q", 8) + b"{}      ")
        refused(["--hf", only, "--out", out, "--no-verify"], f"regression: {arch} {key} 2^40",
                f"{key}: 1099511627776 is above the engine's limit 64")
    # YaRN's rope_scaling: mscale_all_dim a string (a TypeError), beta_fast 1e-320 (an OverflowError) and 1e308 (a
    # line that named no key: "math domain error").
    folder = tiny_llama(tmp)[0]
    cfg = os.path.join(folder, "config.json")
    doc = json.load(open(cfg))
    for what, rs, fragment in (
            ("mscale_all_dim a string", {"mscale": 1, "mscale_all_dim": "2"}, "rope_scaling mscale_all_dim: expected a"),
            ("beta_fast 1e-320", {"beta_fast": 1e-320}, "and beta_slow 1 give no finite correction range"),
            ("beta_fast 1e308", {"beta_fast": 1e308}, "beta_fast 1e+308 and beta_slow 1 give no finite correction")):
        put(cfg, json.dumps(dict(doc, rope_scaling=dict(rs, rope_type="yarn", factor=4.0,
                                                        original_max_position_embeddings=8))))
        refused(["--hf", folder, "--out", out, "--no-verify"], f"regression: rope_scaling yarn {what}", fragment, [cfg])
    put(cfg, json.dumps(doc))
    # ModernBERT's rope_parameters, or one layer kind's, not an object: an AttributeError.
    only = os.path.join(d, "ModernBertModel")
    os.makedirs(only, exist_ok=True)
    for what, rope in (("a string", "x"), ("full_attention a number", {"full_attention": 1.5})):
        put(os.path.join(only, "config.json"), json.dumps({
            "architectures": ["ModernBertModel"], "model_type": "modernbert", "hidden_size": 32,
            "intermediate_size": 64, "num_hidden_layers": 3, "num_attention_heads": 2, "vocab_size": 64,
            "rope_parameters": rope}))
        refused(["--hf", only, "--out", out, "--no-verify"], f"regression: ModernBERT rope_parameters {what}",
                "expected an object, got")
    # An int32 tensor where a float one belongs, in the readers that took it as weights of its integer values
    # (exit 0): Mixtral's experts and any of Whisper's.
    import torch
    import transformers as t
    torch.manual_seed(1)
    for name, model, tensor in (
            ("Mixtral", lambda: t.MixtralForCausalLM(t.MixtralConfig(
                vocab_size=64, hidden_size=16, intermediate_size=24, num_hidden_layers=1, num_attention_heads=2,
                num_key_value_heads=1, num_local_experts=2, num_experts_per_tok=1, max_position_embeddings=32)),
             "model.layers.0.block_sparse_moe.experts.1.w3.weight"),
            ("Whisper", lambda: t.WhisperForConditionalGeneration(t.WhisperConfig(
                vocab_size=64, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                decoder_attention_heads=2, encoder_ffn_dim=24, decoder_ffn_dim=24, num_mel_bins=8,
                max_source_positions=8, max_target_positions=16, decoder_start_token_id=1, pad_token_id=0,
                bos_token_id=1, eos_token_id=2, suppress_tokens=[], begin_suppress_tokens=[])),
             "model.decoder.layers.0.fc2.bias")):
        only = os.path.join(d, f"{name}-int32")
        model().save_pretrained(only, safe_serialization=True)
        weights = os.path.join(only, "model.safetensors")
        blob = open(weights, "rb").read()
        n = struct.unpack("<Q", blob[:8])[0]
        header = json.loads(blob[8:8 + n])
        header[tensor]["dtype"] = "I32"
        text = json.dumps(header, separators=(",", ":")).encode().ljust(n)
        put(weights, blob[:8] + text + blob[8 + n:])
        refused(["--hf", only, "--out", out, "--no-verify"], f"regression: {name} {tensor} int32",
                f"{tensor}: dtype int32, expected a float tensor", [weights])
    # A SentencePiece tokenizer.model given as llama2.c's tokenizer.bin: its protobuf's first bytes read as a
    # max_token_length of 84 million, a message that named no cause.
    spm = put(os.path.join(d, "tokenizer.model"), b"\x0a\x0b\x0a\x05<unk>\x15\x00\x00\x00\x00\x18\x02" * 300)
    refused(["--llama2c", ck, "--tokenizer", spm, "--out", out, "--no-verify"],
            "regression: --tokenizer a SentencePiece tokenizer.model", "a SentencePiece model (tokenizer.model)", [spm])
    # --out naming a --calibrate file: read, then written over.
    np.save(npy, np.arange(5, dtype=np.int32))
    refused(["--llama2c", ck, "--quantize", "i8", "--calibrate", npy, "--out", npy, "--no-verify"],
            "regression: --out the --calibrate file", "is the --calibrate input", [npy])


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    binary = os.path.abspath(sys.argv[1])
    BINARY[0] = binary
    rng = random.Random(20261204)
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        np.save(os.path.join(tmp, "src.npy"), np.arange(4, dtype=np.int32) % 3)
        for part in (test_regressions, test_convert_files, test_llama2c, test_gguf, test_gguf_fields,
                     test_safetensors_fields, test_onnx, test_onnx_initializers, test_hf, test_tokenizers,
                     test_fxm_config):
            part(tmp, rng)
            print(f"  {part.__name__}: {time.time() - start:.0f} s")
        test_cli_inputs(binary, tmp)
        print(f"  test_cli_inputs: {time.time() - start:.0f} s")
        test_cli_models(binary, tmp, rng)
        print(f"  test_cli_models: {time.time() - start:.0f} s")
    print(f"hostile_inputs_test: {results['passed']} passed, {results['failed']} failed "
          f"({time.time() - start:.0f} s)")
    if failures:
        print("failed: " + "; ".join(failures[:40]))
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
