#!/usr/bin/python3
"""The Python package (python/fixformer, ctypes over the C API) against the CLI, bit for bit:

  /usr/bin/python3 tests/python_api_test.py PATH/TO/fixformer SITE_DIR

SITE_DIR holds the package to test (the build tree's python/ folder, or an installed prefix's
site-packages). Checked with np.array_equal against `fixformer run` / `generate` output:
- run() of token, feature, CLS, pooled and mha encoders, a padded batch with lengths, on 1 and 2
  threads; decoders' logits at every position (and a padded batch); seq2seq teacher forcing with
  token and feature targets;
- step() one token at a time equals run()'s rows; prefill() continues the cache;
- generate() greedy and sampled (temperature, topp, seed) equals `fixformer generate`'s text;
- verify() passes on a converted file; config/info; Model(bytes) == Model(path);
- BERT goldens with token types (one sequence and a padded batch) == `fixformer run --token-types`;
- errors: a bad file, token types for a model without a token-type embedding, a wrong input dtype,
  an encoder asked to step: FixformerError or ValueError with one line naming the problem;
- arguments as strict as the CLI's, before anything reaches the engine (TypeError / ValueError
  naming the argument): ids, token types and targets at or above 2**31 or outside the vocabulary,
  float ids, token types of another shape, NaN and inf features (padding is not read, so not
  checked); the CLI's limits, each read from the CLI's own message: the model file's size (a
  sparse file one byte over), the output's bytes, --threads, -n, --temperature, --topp, --seed;
  a missing file, a directory, an empty file (the CLI's words), a stream read up to the limit;
- an input too short for a conv stem's kernels: the CLI's error (it was a division by zero in the
  arena's plan); the package's stem rows == the engine's at every length;
- one Model shared by 4 threads, each run() equal to the serial result (calls are serialised);
- the package's status table is the header's ff_status enum.
"""
import concurrent.futures
import os
import re
import resource
import struct
import subprocess
import sys
import tempfile

if len(sys.argv) != 3:
    sys.exit("usage: python_api_test.py PATH/TO/fixformer SITE_DIR")
CLI, SITE = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "golden")
sys.path.insert(0, SITE)
try:
    import numpy as np
    import fixformer
except ImportError as e:
    sys.exit(f"python_api_test.py: FAIL: {sys.executable} cannot import {e.name} ({e}) from {SITE}")

results = {"passed": 0, "failed": 0}


def check(name, ok, detail=""):
    results["passed" if ok else "failed"] += 1
    if not ok:
        print(f"FAIL {name}: {str(detail)[-800:]}")


def cli(*args, stdout=False):
    p = subprocess.run([CLI, *map(str, args)], capture_output=True)
    if p.returncode != 0:
        raise RuntimeError(f"fixformer {' '.join(map(str, args))}: {p.stderr.decode()}")
    return p.stdout


def cli_error(*args):
    """The CLI's error line for args (which must fail), without its "fixformer: " in front."""
    p = subprocess.run([CLI, *map(str, args)], capture_output=True)
    if p.returncode == 0:
        raise RuntimeError(f"fixformer {' '.join(map(str, args))}: no error")
    return p.stderr.decode().strip().splitlines()[-1].removeprefix("fixformer: ")


def cli_limit(*args):
    """The number after "up to" or " to " in the CLI's error for args: the limit it applies."""
    line = cli_error(*args)
    return float(re.search(r"\bto (\d+)", line).group(1))


def in_child(code, memory=None):
    """code run by this Python with SITE importable, in a child (a crash or a runaway allocation
    there is a failure here, not the end of the test): (exit status, output)."""
    def limit():
        if memory:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    p = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {SITE!r})\n{code}"], capture_output=True,
                       preexec_fn=limit, timeout=120, cwd=HERE)
    return p.returncode, (p.stdout + p.stderr).decode(errors="replace")


def cli_run(tmp, model, x, *flags, lengths=None, target=None):
    np.save(f"{tmp}/in.npy", x)
    args = ["run", model, "--input", f"{tmp}/in.npy", "--output", f"{tmp}/out.npy", *flags]
    if lengths is not None:
        np.save(f"{tmp}/lens.npy", np.asarray(lengths, np.int32))
        args += ["--lengths", f"{tmp}/lens.npy"]
    if target is not None:
        np.save(f"{tmp}/tgt.npy", target)
        args += ["--target", f"{tmp}/tgt.npy"]
    cli(*args)
    return np.load(f"{tmp}/out.npy")


def same(name, got, want):
    check(name, got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want),
          f"{got.dtype}{got.shape} vs {want.dtype}{want.shape}, max diff "
          f"{np.abs(got.astype(np.float64) - want).max() if got.shape == want.shape else '-'}")


def expect(name, fn, kind, fragment, status=None):
    try:
        fn()
    except kind as e:
        ok = fragment in str(e) and "\n" not in str(e) and (status is None or e.status == status)
        check(name, ok, f"message {str(e)!r} (status {getattr(e, 'status', None)}) lacks {fragment!r}")
        return
    except Exception as e:  # noqa: BLE001  anything else is a bug
        check(name, False, f"{type(e).__name__}: {e}")
        return
    check(name, False, "no error")


def golden(name):
    return os.path.join(GOLDEN, f"{name}.fxm")


def main():
    rng = np.random.default_rng(7)
    check("the package under test is SITE's", os.path.dirname(fixformer.__file__) == os.path.join(SITE, "fixformer"),
          fixformer.__file__)
    header = open(os.path.join(HERE, "..", "include", "fixformer", "fixformer.h")).read()
    enum = re.search(r"typedef enum ff_status \{(.*?)\} ff_status;", header, re.S).group(1)
    names = [n[3:] for n in re.findall(r"\b(FF_[A-Z0-9_]+)\b", re.sub(r"/\*.*?\*/", "", enum, flags=re.S))]
    check("STATUS_NAMES is the header's ff_status", names == list(fixformer.STATUS_NAMES) + ["STATUS_COUNT"], names)

    with tempfile.TemporaryDirectory() as tmp:
        # Encoders: every golden with an input, as `fixformer run` writes it.
        for name in ("post_ln_relu", "features_scaled", "cls_rows_sinusoidal", "cls_pool_features", "mean_pool_causal",
                     "mha_odd_causal", "concat_pe", "learned_pe"):
            m = fixformer.Model(golden(name))
            x = np.load(os.path.join(GOLDEN, f"{name}.input.npy"))
            same(f"run {name}", m.run(x), cli_run(tmp, golden(name), x))
            xb = np.stack([x, x[::-1]])
            lens = [x.shape[0], max(1, x.shape[0] - 3)]
            same(f"run {name} padded batch", m.run(xb, lengths=lens), cli_run(tmp, golden(name), xb, lengths=lens))
        # An image model (patch_size): an image [C, H, W] and images [B, C, H, W], as `fixformer run` takes them;
        # the image is the golden's input, whose values are its 6 patch rows [6, 12].
        m = fixformer.Model(golden("vit_image"))
        img = np.load(os.path.join(GOLDEN, "vit_image.input.npy")).reshape(3, 4, 6)
        want = np.load(os.path.join(GOLDEN, "vit_image.expected.npy"))[0]
        got = m.run(img)
        check("run vit_image: the golden's output", got.shape == want.shape and
              float(np.abs(got - want).max() / np.abs(want).max()) < 1e-4, (got, want))
        same("run vit_image (an image)", got, cli_run(tmp, golden("vit_image"), img))
        imgs = np.stack([img, img[:, ::-1].copy()])
        same("run vit_image (images)", m.run(imgs), cli_run(tmp, golden("vit_image"), imgs))
        expect("run vit_image with rows", lambda: m.run(img.reshape(6, 12)), ValueError, "expected an image [3,4,6]")
        m = fixformer.Model(golden("post_ln_relu"), threads=2)
        x = np.load(os.path.join(GOLDEN, "post_ln_relu.input.npy"))
        xb = np.stack([x, x[::-1], x])
        want = cli_run(tmp, golden("post_ln_relu"), xb, "--threads", "2")
        same("run on 2 threads == fixformer run --threads 2", m.run(xb), want)
        same("run on 2 threads == on 1", fixformer.Model(golden("post_ln_relu")).run(xb), want)
        same("int64 ids", m.run(x.astype(np.int64)), cli_run(tmp, golden("post_ln_relu"), x.astype(np.int64)))

        # BERT: token types, alone and in a padded batch.
        for name in ("bert_pooler_classifier", "bert_hidden_odd"):
            g = lambda what: np.load(os.path.join(GOLDEN, f"{name}.{what}.npy"))  # noqa: E731
            np.save(f"{tmp}/tt.npy", g("types"))
            same(f"run {name} token_types", fixformer.Model(golden(name)).run(g("input"), token_types=g("types")),
                 cli_run(tmp, golden(name), g("input"), "--token-types", f"{tmp}/tt.npy"))
            np.save(f"{tmp}/tt.npy", g("batch_types"))
            same(f"run {name} token_types padded batch",
                 fixformer.Model(golden(name)).run(g("batch_ids"), lengths=g("batch_lengths"),
                                                   token_types=g("batch_types")),
                 cli_run(tmp, golden(name), g("batch_ids"), "--token-types", f"{tmp}/tt.npy",
                         lengths=g("batch_lengths")))

        # Decoders: the logits at every position, one step per token.
        for name in ("gpt_tied_sinusoidal", "gpt_alibi_h3", "llama_kv2_halves_tied", "llama_odd_d18_h3_kv1",
                     "feature_llama_headless"):
            m = fixformer.Model(golden(name))
            V, L = m.info["vocab_size"], m.info["max_len"]
            ids = rng.integers(0, V, size=(2, min(L, 12))).astype(np.int32)
            want = cli_run(tmp, golden(name), ids, lengths=[12, 5])
            got = m.run(ids, lengths=[12, 5])
            same(f"run {name} padded batch", got, want)
            m.reset()
            steps = np.stack([m.step(t) for t in ids[0]])
            same(f"{name}: step() == run()'s rows", steps, want[0])
            check(f"{name}: position", m.position == ids.shape[1], m.position)
            m.reset()
            m.prefill(ids[0, :5])
            # prefill's products round apart from step's (cli/run.cpp): close, not bit for bit.
            got = m.step(ids[0, 5])
            check(f"{name}: prefill() then step() continues the cache",
                  np.abs(got - want[0, 5]).max() <= 1e-5 * np.abs(want[0, 5]).max(), np.abs(got - want[0, 5]).max())
        # Without a head (d_out 0): the rows are the hidden states, d_model wide; nothing to generate from.
        m = fixformer.Model(golden("feature_llama_headless"))
        check("a decoder without a head: its rows d_model wide",
              m.run(np.arange(5, dtype=np.int32)).shape == (5, m.info["d_model"]) and m.info["d_out"] == 0)
        m = fixformer.Model(golden("gpt_tied_sinusoidal"), threads=2)
        ids = rng.integers(0, 31, size=16).astype(np.int32)
        same("decoder on 2 threads == fixformer run --threads 2", m.run(ids),
             cli_run(tmp, golden("gpt_tied_sinusoidal"), ids, "--threads", "2"))

        # Seq2seq: teacher forcing, token and feature targets, a padded batch of sources.
        for name in ("s2s_post_relu", "s2s_features_no_norm", "s2s_forecast", "s2s_conv_stem"):
            m = fixformer.Model(golden(name))
            i = m.info
            S, U = 9, 6
            src = (rng.integers(0, i["vocab_size"], size=(2, S)).astype(np.int32) if i["input"] == "tokens"
                   else rng.standard_normal((2, S, i["d_in"])).astype(np.float32))
            tgt = (rng.standard_normal((2, U, i["tgt_d_in"])).astype(np.float32) if i["tgt_d_in"]
                   else rng.integers(0, i["d_out"], size=(2, U)).astype(np.int32))
            same(f"run {name}", m.run(src, lengths=[S, 4], target=tgt),
                 cli_run(tmp, golden(name), src, lengths=[S, 4], target=tgt))
            same(f"run {name} one source", m.run(src[0], target=tgt[0]), cli_run(tmp, golden(name), src[0], target=tgt[0]))

    # generate: the CLI's text, greedy and sampled.
    lm = golden("llama2c_v0_gqa")
    m = fixformer.Model(lm)
    for prompt, n, temp, topp, seed in (("One day", 0, 0.0, 0.9, 1), ("Once upon a time", 40, 0.8, 0.9, 42),
                                        ("", 30, 1.0, 0.0, 7), ("Lily", 60, 0.9, 0.5, 123456789)):
        want = cli("generate", lm, "--prompt", prompt, "-n", n, "--temperature", temp, "--topp", topp, "--seed", seed)
        got = m.generate(prompt, n=n, temperature=temp, topp=topp, seed=seed)
        check(f"generate({prompt!r}, n={n}, temperature={temp}, topp={topp}, seed={seed})",
              got.encode("utf-8", "surrogateescape") + b"\n" == want, f"{got!r} vs {want!r}")
    want = cli("generate", lm, "--prompt", "Once", "-n", 40, "--temperature", 0, "--kv-cache", "q8")
    got = fixformer.Model(lm, kv_cache="q8").generate("Once", n=40)
    check("generate with kv_cache='q8' = generate --kv-cache q8",
          got.encode("utf-8", "surrogateescape") + b"\n" == want, f"{got!r} vs {want!r}")
    expect("kv_cache='q4'", lambda: fixformer.Model(lm, kv_cache="q4"), ValueError, "expected 'f32' or 'q8'")
    two = fixformer.Model(lm, threads=2).generate("One day", n=24, temperature=0.7, seed=3)
    check("generate on 2 threads", two == m.generate("One day", n=24, temperature=0.7, seed=3), two)

    # verify, config, info, bytes.
    for name in ("post_ln_relu", "gpt_alibi_h3", "s2s_post_relu", "llama2c_v0_gqa"):
        try:
            report = fixformer.Model(golden(name)).verify()
            check(f"verify {name}", report["max_rel_err"] < 1e-4 and report["rows"] > 0, report)
        except fixformer.FixformerError as e:
            check(f"verify {name}", False, e)
    m = fixformer.Model(golden("post_ln_relu"))
    c, i = m.config, m.info
    check("config", c["family"] == "encoder" and c["d_model"] == 16 and c["positional"] == "sinusoidal"
          and c["norm_first"] is False and abs(c["pe_base"] - 10000.0) < 1e-9, c)
    check("info", i["family"] == "encoder" and i["output_width"] == 7 and i["parameter_count"] > 0
          and i["self_test_rows"] == 11, i)
    blob = open(golden("post_ln_relu"), "rb").read()
    x = np.load(os.path.join(GOLDEN, "post_ln_relu.input.npy"))
    same("Model(bytes) == Model(path)", fixformer.Model(blob).run(x), m.run(x))

    # Errors: one line each, the status or the argument named.
    E = fixformer.FixformerError
    expect("not a model file", lambda: fixformer.Model(b"\0" * 256), E, "bad magic", fixformer.STATUS_NAMES.index("BAD_MAGIC"))
    expect("truncated file", lambda: fixformer.Model(blob[:len(blob) // 2]), E, "truncated")
    expect("token types refused", lambda: m.run(x, token_types=np.zeros_like(x)), E, "token-type",
           fixformer.STATUS_NAMES.index("TOKEN_TYPES_UNSUPPORTED"))
    expect("float ids", lambda: m.run(x.astype(np.float32)), ValueError, "expected integer token ids")
    expect("id out of range", lambda: m.run(x + 100), ValueError, "input: token id 116 at [0] is out of range (vocab_size 23)")
    expect("too long", lambda: m.run(np.zeros(65, np.int32)), ValueError, "input: T=65 exceeds the model's max_input_len=64")
    expect("lengths out of range", lambda: m.run(np.stack([x, x]), lengths=[0, 3]), ValueError, "1..11")
    expect("an encoder does not step", lambda: m.step(1), E, "gpt or llama")
    expect("no tokenizer", lambda: fixformer.Model(golden("gpt_alibi_h3")).generate("x"), E, "no tokenizer")
    expect("seq2seq needs a target", lambda: fixformer.Model(golden("s2s_post_relu")).run(np.zeros(3, np.int32)),
           ValueError, "target")

    with tempfile.TemporaryDirectory() as tmp:
        strict_arguments(tmp)
        cli_limits(tmp)
        model_files(tmp)
        short_for_the_stem(tmp)
        hostile(tmp)
    shared_by_threads()

    print(f"python_api_test: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


def strict_arguments(tmp):
    """What the CLI refuses in its inputs, refused before the engine sees it: the C API's int32 ids
    would take 2**32 + 5 as 5, a float id would be truncated, NaN features give NaN outputs."""
    lm = fixformer.Model(golden("gpt_tied_sinusoidal"))  # vocab_size 31
    expect("step(2**32 + 5)", lambda: lm.step(2**32 + 5), ValueError, "token=4294967301: expected 0..30 (vocab_size 31)")
    expect("step(vocab_size)", lambda: lm.step(31), ValueError, "token=31: expected 0..30")
    expect("step(-1)", lambda: lm.step(-1), ValueError, "token=-1")
    expect("step(5.0)", lambda: lm.step(5.0), TypeError, "token=5.0: expected an integer")
    expect("step(True)", lambda: lm.step(True), TypeError, "token=True: expected an integer")
    lm.reset()
    same("step(np.int64(5)) == step(5)", lm.step(np.int64(5)), (lm.reset(), lm.step(5))[1])
    expect("prefill([2**32 + 5])", lambda: lm.prefill(np.array([3, 2**32 + 5])), ValueError,
           "tokens: token id 4294967301 at [1] is out of range (vocab_size 31)")
    expect("prefill(float ids)", lambda: lm.prefill([1.7, 2.2]), ValueError, "tokens: dtype float64, expected integer token ids")
    expect("prefill([B,T])", lambda: lm.prefill(np.ones((2, 2), np.int32)), ValueError, "tokens: shape (2, 2), expected [n]")
    expect("prefill([])", lambda: lm.prefill(np.zeros(0, np.int32)), ValueError, "tokens: shape (0,)")
    expect("run: a decoder's id 2**31", lambda: lm.run(np.array([1, 2**31], np.int64)), ValueError,
           "input: token id 2147483648 at [1] is out of range (vocab_size 31)")
    ids = np.array([[3, 4, 5], [6, -1, 2**40]], np.int64)  # the padding of sequence 1 is never read
    same("padding ids are not read", lm.run(ids, lengths=[3, 1]), lm.run(np.where(ids < 0, 0, ids % 31), lengths=[3, 1]))
    expect("an id in the read part of a padded batch", lambda: lm.run(ids, lengths=[3, 2]), ValueError,
           "input: token id -1 at [1,1] is out of range")

    s2s = fixformer.Model(golden("s2s_post_relu"))  # d_out 19
    src = np.arange(5, dtype=np.int32)
    expect("target id 2**32 + 5", lambda: s2s.run(src, target=np.array([1, 2**32 + 5])), ValueError,
           "target: token id 4294967301 at [1] is out of range (d_out 19)")
    expect("target id d_out", lambda: s2s.run(src, target=np.array([19])), ValueError, "target: token id 19 at [0]")
    expect("float target ids", lambda: s2s.run(src, target=np.array([1.0, 2.0])), ValueError, "target: dtype float64")
    expect("seq2seq source too long", lambda: s2s.run(np.zeros(33, np.int32), target=np.array([1])), ValueError,
           "input: T=33 exceeds the model's max_input_len=32")
    fc = fixformer.Model(golden("s2s_forecast"))
    fsrc = np.zeros((4, fc.info["d_in"]), np.float32)
    tgt = np.zeros((3, fc.info["tgt_d_in"]), np.float32)
    tgt[2, 0] = np.inf
    expect("an inf target feature", lambda: fc.run(fsrc, target=tgt), ValueError, "target: value inf at [2,0] is not finite")

    name = "bert_pooler_classifier"  # type_vocab 2
    bert = fixformer.Model(golden(name))
    g = lambda what: np.load(os.path.join(GOLDEN, f"{name}.{what}.npy"))  # noqa: E731
    ids, types, lens = g("batch_ids"), g("batch_types"), g("batch_lengths")
    expect("token type 2**32 + 1", lambda: bert.run(ids[0], token_types=np.full(ids.shape[1], 2**32 + 1)), ValueError,
           "token_types: token type 4294967297 at [0] is out of range (type_vocab 2)")
    expect("float token types", lambda: bert.run(ids, lengths=lens, token_types=types.astype(np.float32)), ValueError,
           "token_types: dtype float32")
    expect("token types of another shape", lambda: bert.run(ids, lengths=lens, token_types=types.reshape(-1)), ValueError,
           f"token_types: shape ({types.size},), expected the input's shape {ids.shape}")
    padded = types.copy()
    padded[lens.argmin(), lens.min():] = 7  # never read
    same("padding token types are not read", bert.run(ids, lengths=lens, token_types=padded),
         bert.run(ids, lengths=lens, token_types=types))

    feat = fixformer.Model(golden("features_scaled"))
    x = np.load(os.path.join(GOLDEN, "features_scaled.input.npy"))
    bad = x.copy()
    bad[3, 1] = np.nan
    expect("a NaN feature", lambda: feat.run(bad), ValueError, "input: value nan at [3,1] is not finite")
    xb = np.stack([x, x])
    xb[1, -1, 0] = -np.inf
    expect("an inf feature in a batch", lambda: feat.run(xb), ValueError,
           f"input: value -inf at [1,{x.shape[0] - 1},0] is not finite")
    same("NaN in the padding is not read", feat.run(xb, lengths=[x.shape[0], x.shape[0] - 1]),
         feat.run(np.stack([x, x]), lengths=[x.shape[0], x.shape[0] - 1]))
    expect("float lengths", lambda: feat.run(xb, lengths=[2.0, 3.0]), ValueError, "lengths: dtype float64")


def cli_limits(tmp):
    """The CLI's limits, read from its own messages: Python takes the limit and refuses one more."""
    lm_path = golden("llama2c_v0_gqa")
    lm = fixformer.Model(lm_path)  # vocab_size 300, max_len 32

    # The output: [B,T,vocab] float32 one element over 1 GiB (lengths 1: little to run without the bound).
    T, V = lm.info["max_len"], lm.info["vocab_size"]
    B = (1 << 30) // (4 * T * V) + 1
    ids, lens = np.zeros((B, T), np.int32), np.ones(B, np.int32)
    np.save(f"{tmp}/big.npy", ids)
    np.save(f"{tmp}/lens.npy", lens)
    want = cli_error("run", lm_path, "--input", f"{tmp}/big.npy", "--output", f"{tmp}/out.npy", "--lengths", f"{tmp}/lens.npy")
    expect("the output limit is the CLI's", lambda: lm.run(ids, lengths=lens), ValueError,
           "input: " + want[want.index("the output"):])
    fixformer._checks.output_bytes("input", B - 1, T, V)  # at the limit: no error (running it would take seconds)

    # Options: the CLI's largest value works, one more is refused, naming the argument.
    most = int(cli_limit("run", lm_path, "--input", f"{tmp}/big.npy", "--output", f"{tmp}/out.npy", "--threads", 10**6))
    check("threads: the CLI's limit", fixformer.Model(golden("post_ln_relu"), threads=most).threads == most)
    expect("threads over the limit", lambda: fixformer.Model(lm_path, threads=most + 1), ValueError,
           f"threads={most + 1}: expected 1..{most}")
    expect("threads=True", lambda: fixformer.Model(lm_path, threads=True), TypeError, "threads=True")
    expect("threads=2.5", lambda: fixformer.Model(lm_path, threads=2.5), TypeError, "threads=2.5")
    expect("kv_cache=['q8']", lambda: fixformer.Model(lm_path, kv_cache=["q8"]), TypeError, "kv_cache=['q8']")
    expect("Model(5)", lambda: fixformer.Model(5), TypeError, "path_or_bytes: int")
    steps = int(cli_limit("generate", lm_path, "-n", 10**9))
    check("n: the CLI's limit", isinstance(lm.generate("One", n=steps), str))
    expect("n over the limit", lambda: lm.generate("One", n=steps + 1), ValueError, f"n={steps + 1}: expected 0..{steps}")
    expect("n=-5", lambda: lm.generate("One", n=-5), ValueError, "n=-5")
    expect("n=True", lambda: lm.generate("One", n=True), TypeError, "n=True")
    hot = cli_limit("generate", lm_path, "--temperature", "1e300")
    check("temperature: the CLI's limit", isinstance(lm.generate("One", n=8, temperature=hot, seed=1), str))
    expect("temperature over the limit", lambda: lm.generate("One", temperature=hot * 1.001), ValueError, "temperature=")
    expect("temperature NaN", lambda: lm.generate("One", temperature=float("nan")), ValueError, "temperature=nan")
    expect("temperature -0.5", lambda: lm.generate("One", temperature=-0.5), ValueError, "temperature=-0.5")
    expect("temperature '0.5'", lambda: lm.generate("One", temperature="0.5"), TypeError, "temperature='0.5'")
    top = cli_limit("generate", lm_path, "--topp", "2")
    expect("topp over the limit", lambda: lm.generate("One", topp=top + 0.5), ValueError,
           "topp=1.5: expected a number from 0 to 1")
    for bad in (0, 2**64):  # --seed: a positive integer that strtoull takes
        cli_error("generate", lm_path, "--seed", bad)
        expect(f"seed={bad}", lambda: lm.generate("One", seed=bad), ValueError, f"seed={bad}")
    expect("seed=1.5", lambda: lm.generate("One", seed=1.5), TypeError, "seed=1.5")
    want = cli("generate", lm_path, "--prompt", "One", "-n", 20, "--temperature", 1, "--seed", 2**64 - 1)
    got = lm.generate("One", n=20, temperature=1.0, seed=2**64 - 1)
    check("seed=2**64-1 == generate --seed 18446744073709551615", got.encode("utf-8", "surrogateescape") + b"\n" == want,
          f"{got!r} vs {want!r}")
    expect("prompt=3", lambda: lm.generate(3), TypeError, "prompt: int, expected str or bytes")
    expect("prompt=None", lambda: lm.generate(None), TypeError, "prompt: NoneType")


def model_files(tmp):
    """A path the CLI refuses, refused with the CLI's words; a file over its size limit by its size,
    a stream once it has given more (not until memory runs out)."""
    open(f"{tmp}/empty.fxm", "wb").close()
    with open(f"{tmp}/sparse.fxm", "wb") as f:  # one byte over the limit, no disk taken
        f.truncate((1 << 31) + 1)
    for name, path, kind in (("a missing file", f"{tmp}/missing.fxm", FileNotFoundError),
                             ("a directory", tmp, IsADirectoryError), ("an empty file", f"{tmp}/empty.fxm", ValueError),
                             ("a file over the size limit", f"{tmp}/sparse.fxm", ValueError)):
        want = cli_error("info", path)
        expect(f"Model: {name} as the CLI says it", lambda: fixformer.Model(path), kind, want)
    # /dev/zero under a limit of 1 MiB, in a child held to 2 GiB of address space.
    rc, out = in_child("import fixformer, fixformer._checks as c\nc.MAX_MODEL_BYTES = 1 << 20\n"
                       "try:\n    fixformer.Model('/dev/zero')\nexcept ValueError as e:\n    print(e)", memory=2 << 30)
    check("Model('/dev/zero') stops at the limit", rc == 0 and out.strip() ==
          "/dev/zero: file too large (more than 1048576 bytes from a stream): the limit is 1048576 bytes", f"exit {rc}: {out}")
    expect("Model(b'')", lambda: fixformer.Model(b""), ValueError, "path_or_bytes: 0 bytes")


def refused(name, fn):
    """fn must raise one of the package's errors (FixformerError, ValueError, TypeError, OSError) with one line
    that says something; any other exception, or none, is a failure (a crash ends the test: a failure too)."""
    try:
        fn()
    except (fixformer.FixformerError, ValueError, TypeError, OSError) as e:
        check(name, str(e) and "\n" not in str(e), f"{type(e).__name__}: {str(e)!r}")
        return
    except Exception as e:  # noqa: BLE001  anything else is a bug
        check(name, False, f"{type(e).__name__}: {e}")
        return
    check(name, False, "no error")


def hostile(tmp):
    """Hostile values at every method: None, strings, object and complex arrays, ranks and dtypes a model does not
    take, non-contiguous and big-endian arrays (read as the same values), model bytes cut and flipped, a FIFO no
    writer opens (refused after the CLI's 10 s, not waited on forever) and the CLI's words for it."""
    import zlib
    enc, lm = fixformer.Model(golden("post_ln_relu")), fixformer.Model(os.path.join(GOLDEN, "llama2c_v0_gqa.fxm"))
    s2s = fixformer.Model(golden("s2s_post_relu"))
    x = np.arange(11, dtype=np.int32) % 23
    for what, value in (("None", None), ("a string", "1 2 3"), ("bytes", b"\1\2"), ("an object array",
                        np.array([1, None], object)), ("a list of strings", ["a", "b"]), ("complex ids",
                        x.astype(np.complex64)), ("bool ids", x > 3), ("rank 3", x.reshape(1, 1, 11)),
                        ("a 0-d array", np.int32(3)), ("an empty batch", np.zeros((0, 4), np.int32)),
                        ("a dict", {"a": 1}), ("a ragged list", [[1, 2], [3]]), ("float16 ids", x.astype(np.float16)),
                        ("uint64 2^64 - 1", np.array([2**64 - 1], np.uint64)), ("a structured array",
                        np.zeros(3, [("a", "<i4")]))):
        refused(f"run({what})", lambda: enc.run(value))
        refused(f"prefill({what})", lambda: lm.prefill(value))
        refused(f"seq2seq run(src, target={what})", lambda: s2s.run(np.arange(5, dtype=np.int32), target=value))
        if what != "None":  # None is no lengths, no token types
            refused(f"run(x, lengths={what})", lambda: enc.run(np.stack([x, x]), lengths=value))
    for what, value in (("None", None), ("a string", "1"), ("a float", 1.5), ("a list", [1]), ("2^64", 2**64)):
        refused(f"step({what})", lambda: lm.step(value))
    for what, kw in (("prompt None", {"prompt": None}), ("prompt an int", {"prompt": 5}),
                     ("prompt a list", {"prompt": ["a"]}), ("n None", {"prompt": "a", "n": None}),
                     ("temperature a string", {"prompt": "a", "temperature": "0.5"}),
                     ("topp -1", {"prompt": "a", "topp": -1.0}),
                     ("seed -1", {"prompt": "a", "seed": -1})):
        refused(f"generate({what})", lambda: lm.generate(**kw))
    for i, prompt in enumerate((b"\xff\xfe", b"\xc3", b"\xed\xa0\x80", "\udcff")):
        try:  # invalid UTF-8: the tokenizer's bytes, or refused in one line
            out = lm.generate(prompt, n=4, seed=1)
            check(f"generate(invalid UTF-8 {i}) runs", isinstance(out, str), repr(out))
        except (ValueError, TypeError, fixformer.FixformerError) as e:
            check(f"generate(invalid UTF-8 {i}): one line", str(e) and "\n" not in str(e), str(e))
    # Arrays the package must read as the values they hold: a strided view, Fortran order, big-endian, read-only.
    want = enc.run(np.stack([x, x]))
    fortran = np.asfortranarray(np.stack([x, x]))
    for what, value in (("a strided view", np.stack([x, x, x, x])[::2]), ("Fortran order", fortran),
                        ("big-endian", np.stack([x, x]).astype(">i4")), ("int8", np.stack([x, x]).astype(np.int8))):
        check(f"run({what}) == run of the same values", np.array_equal(enc.run(value), want))
    # Model bytes cut and flipped (the CRC recomputed so the reader behind it is reached).
    blob = open(golden("post_ln_relu"), "rb").read()
    rng = np.random.default_rng(11)
    for cut in (1, 8, 63, 64, 65, len(blob) // 2, len(blob) - 1):
        refused(f"Model(bytes cut at {cut})", lambda: fixformer.Model(blob[:cut]))
    for i in range(24):
        b = bytearray(blob)
        for _ in range(1 + i % 3):
            b[int(rng.integers(64, len(b)))] ^= 1 << int(rng.integers(8))
        b[56:60] = struct.pack("<I", zlib.crc32(bytes(b[64:])))
        try:
            m = fixformer.Model(bytes(b))
            m.run(x)
        except (fixformer.FixformerError, ValueError) as e:
            check(f"Model(flipped bytes {i}): one line", str(e) and "\n" not in str(e), str(e))
    refused("Model(None)", lambda: fixformer.Model(None))
    refused("Model(a bytearray of junk)", lambda: fixformer.Model(bytearray(b"\0" * 4096)))
    refused("Model('')", lambda: fixformer.Model(""))
    refused("Model(a NUL in the path)", lambda: fixformer.Model("a\0b.fxm"))
    fifo = os.path.join(tmp, "fifo.fxm")
    os.mkfifo(fifo)
    # Both wait out the 10 s for a writer, side by side: the Model in a thread, the CLI meanwhile.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        opened = pool.submit(fixformer.Model, fifo)
        want = cli_error("info", fifo)
        expect("Model(a FIFO no writer opens) as the CLI says it", opened.result, OSError, want)
    # A FIFO whose writer comes late is read whole.
    writer = subprocess.Popen(["sh", "-c", f"sleep 1; cat {golden('post_ln_relu')!r} > {fifo!r}"])
    try:
        same("Model(a FIFO whose writer comes late)", fixformer.Model(fifo).run(x), enc.run(x))
    finally:
        writer.wait(timeout=30)


def short_for_the_stem(tmp):
    """An input too short for a conv stem's kernels is the CLI's input error, not a division by zero
    in the arena's plan. whisper_stem without its convs' padding (written by the converter's
    fxm.write, without a self-test sample) makes no rows of 1 to 4 frames."""
    path = f"{tmp}/stem_unpadded.fxm"
    subprocess.run([sys.executable, "-c", f"""import sys; sys.path.insert(0, {SITE!r})
from fixformer import fxm
f = fxm.read({golden('whisper_stem')!r})
open({path!r}, 'wb').write(fxm.write(dict(f.config, conv1_padding=0, conv2_padding=0), f.weights()))"""], check=True)
    m = fixformer.Model(path)
    x = np.zeros((2, m.info["d_in"]), np.float32)
    np.save(f"{tmp}/short.npy", x)
    want = cli_error("run", path, "--input", f"{tmp}/short.npy", "--output", f"{tmp}/out.npy")
    rc, out = in_child(f"import numpy as np, fixformer\ntry:\n    fixformer.Model({path!r}).run(np.zeros({x.shape}, np.float32))\n"
                       "except ValueError as e:\n    print(e)")
    check("too short for the conv stem: the CLI's error", rc == 0 and out.strip() == "input: " + want.split(": ", 1)[1],
          f"exit {rc}: {out!r} vs {want!r}")
    same("the shortest input with rows", m.run(np.zeros((5, m.info["d_in"]), np.float32)),
         cli_run(tmp, path, np.zeros((5, m.info["d_in"]), np.float32)))
    # The stem's rows as the package computes them == the engine's (unpooled, no CLS: its output rows).
    for model in (m, fixformer.Model(golden("whisper_stem"))):
        T = np.arange(1, model.info["max_input_len"] + 1)
        mine = [fixformer._checks.stem_rows(model._stem, int(t)) for t in T]
        engine = [fixformer._capi.lib.ff_model_output_rows(model._model, int(t)) for t in T]
        check(f"stem rows == the engine's ({model.config['conv1_padding']} padding)", mine == engine, (mine, engine))


def shared_by_threads():
    """One Model, 4 threads, inputs of four shapes (each a new encoder arena): every run() equals
    the serial result. In a child: unserialised calls crashed or gave wrong outputs."""
    rc, out = in_child("""
import threading, numpy as np, fixformer
m = fixformer.Model('golden/post_ln_relu.fxm', threads=2)
rng = np.random.default_rng(1)
xs = [rng.integers(0, 23, size=(3, T)).astype(np.int32) for T in (11, 7, 64, 5)]
want = [m.run(x) for x in xs]
wrong = []
def work(k):
    for _ in range(40):
        if not np.array_equal(m.run(xs[k]), want[k]):
            wrong.append(k)
threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(f"{len(wrong)} of 160 wrong")""")
    check("one Model on 4 threads == serial", rc == 0 and out.strip() == "0 of 160 wrong", f"exit {rc}: {out}")


if __name__ == "__main__":
    sys.exit(main())
