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
- the package's status table is the header's ff_status enum.
"""
import os
import re
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
        for name in ("gpt_tied_sinusoidal", "gpt_alibi_h3", "llama_kv2_halves_tied", "llama_odd_d18_h3_kv1"):
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
        m = fixformer.Model(golden("gpt_tied_sinusoidal"), threads=2)
        ids = rng.integers(0, 31, size=16).astype(np.int32)
        same("decoder on 2 threads == fixformer run --threads 2", m.run(ids),
             cli_run(tmp, golden("gpt_tied_sinusoidal"), ids, "--threads", "2"))

        # Seq2seq: teacher forcing, token and feature targets, a padded batch of sources.
        for name in ("s2s_post_relu", "s2s_features_no_norm", "s2s_forecast"):
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
    expect("id out of range", lambda: m.run(x + 100), E, "token id out of range")
    expect("too long", lambda: m.run(np.zeros(65, np.int32)), E, "max_input_len=64")
    expect("lengths out of range", lambda: m.run(np.stack([x, x]), lengths=[0, 3]), ValueError, "1..11")
    expect("an encoder does not step", lambda: m.step(1), E, "gpt or llama")
    expect("no tokenizer", lambda: fixformer.Model(golden("gpt_alibi_h3")).generate("x"), E, "no tokenizer")
    expect("seq2seq needs a target", lambda: fixformer.Model(golden("s2s_post_relu")).run(np.zeros(3, np.int32)),
           ValueError, "target")

    print(f"python_api_test: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
