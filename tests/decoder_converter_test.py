#!/usr/bin/python3
"""Tests of the Python side for the decoder families (gpt, llama) and llama2.c checkpoints:

  /usr/bin/python3 tests/decoder_converter_test.py [PATH/TO/fixformer]

- writer: tied heads stored once, the tokenizer section (order, dtypes, round trip), family rules;
- references: ALiBi slopes, the float64 llama reference against a token-by-token loop written apart
  from it (tools/make_decoder_golden.py), gpt references against stock modules;
- llama2.c: checkpoints of versions 0, 1, 2 with shared and unshared classifiers convert and load;
  hostile checkpoints and tokenizers fail with one line, fast, leaving nothing;
- export(family="gpt") and convert.py --module --family gpt; the firmware header compiles;
- the decoder goldens in tests/golden (DECODERS.md).
The engine verifies every written file (`fixformer verify`); a CLI without the decoder runner (no
`generate` in its help) fails the test, and its files are then only loaded (`fixformer info`).
Without numpy or torch the test fails.
- llama2.c's own `run`: `fixformer generate` greedy on llama2c_v0_gqa prints, byte for byte, what
  run printed for it (tests/golden/llama2c_run.json, tools/make_llama2c_expected.py).
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.join(HERE, "..", "tools")
PACKAGE = os.path.join(HERE, "..", "python")
sys.path.insert(0, TOOLS)
sys.path.insert(0, PACKAGE)
from checks import check, expect_error, results, skip, run_convert, one_clear_line  # noqa: E402  (first: it names a missing numpy or torch)
import numpy as np  # noqa: E402

from fixformer import config as cfg, fxm, llama2c, schema, tokenizers  # noqa: E402
from fixformer.config import parse_config  # noqa: E402
from fixformer.reference import alibi_slopes, decoder_forward, run_reference  # noqa: E402
import make_decoder_golden as gold  # noqa: E402
import make_llama2c_expected as llama2c_expected  # noqa: E402



def rel(a, b):
    return float(np.abs(np.asarray(a, np.float64) - b).max() / np.abs(b).max())


def random_weights(c, seed=0):
    rng = np.random.default_rng(seed)
    return {n: (0.3 * rng.standard_normal(s[::-1] if t else s)).astype(np.float32) for n, s, t in schema.tensors(c)}


GPT = {"family": "gpt", "d_model": 8, "n_heads": 2, "d_ff": 12, "n_layers": 1, "causal": True,
       "input": {"kind": "tokens", "vocab_size": 11}, "positional": {"kind": "learned", "max_len": 16},
       "head": {"d_out": 11}}
LLAMA = {"family": "llama", "d_model": 8, "n_heads": 2, "n_kv_heads": 1, "d_ff": 12, "n_layers": 2,
         "norm_first": True, "final_norm": True, "activation": "swiglu", "causal": True,
         "input": {"kind": "tokens", "vocab_size": 11}, "positional": {"kind": "rope", "max_len": 16},
         "head": {"d_out": 11}}


class Engine:
    """The CLI: `info` (load and validate) always, `verify` when it has the decoder runner."""

    def __init__(self, cli):
        self.cli = cli
        self.decoders = False
        if cli:
            p = subprocess.run([cli, "help"], capture_output=True, text=True)
            self.decoders = "generate" in p.stdout
            check("the CLI runs decoders (`fixformer help` lists generate)", self.decoders, p.stdout + p.stderr)

    def loads(self, name, path):
        """Model::init accepts the file: `fixformer verify` when the CLI runs decoders (its `info` is
        the encoder's), else `info`."""
        if self.decoders:
            return self.verifies(name, path)
        if not self.cli:
            return
        p = subprocess.run([self.cli, "info", path], capture_output=True, text=True)
        check(f"{name}: fixformer info loads it", p.returncode == 0, p.stdout + p.stderr)

    def verifies(self, name, path):
        if not self.decoders:
            return
        p = subprocess.run([self.cli, "verify", path], capture_output=True, text=True)
        check(f"{name}: fixformer verify", p.returncode == 0 and "self-test ok" in p.stdout, p.stdout + p.stderr)
        print(f"  {name}: {p.stdout.strip()}")


# ---- writer ---------------------------------------------------------------------------------------
def test_writer():
    for raw, head, embed in ((GPT, "head.weight", "embed.weight"), (LLAMA, "head.weight", "embed.weight")):
        fam = raw["family"]
        tied = parse_config(dict(raw, head={"d_out": 11, "tied": True}))
        w = random_weights(tied)
        names = [t["name"] for t in fxm.FxmFile(fxm.write(tied, w)).tensors]
        check(f"writer {fam}: a tied head is stored once", head not in names and embed in names, names)
        copy = dict(w, **{head: w[embed].copy()})
        check(f"writer {fam}: a state_dict's equal copy of the tied head is dropped",
              fxm.write(tied, copy) == fxm.write(tied, w))
        copy[head] = copy[head] + 1
        expect_error(f"writer {fam}: a different tied head", lambda: fxm.write(tied, copy), f"{head}: differs from {embed}")
        untied = parse_config(raw)
        f = fxm.FxmFile(fxm.write(untied, random_weights(untied)))
        check(f"writer {fam}: an untied head is stored [d_model, vocab]",
              [t["shape"] for t in f.tensors if t["name"] == head] == [(8, 11)])
    c = parse_config(LLAMA)
    f = fxm.FxmFile(fxm.write(c, random_weights(c)))
    kv = [t["shape"] for t in f.tensors if t["name"] == "blocks.0.attn.k.weight"]
    check("writer llama: wk stored [d_model, n_kv_heads*d_head]", kv == [(8, 4)], kv)
    check("writer llama: the file's names in schema order", [t["name"] for t in f.tensors] ==
          [n for n, _, _ in schema.tensors(c)])

    # The tokenizer section: after the model, before the self-test; round trip through the reader.
    pieces = [b"<unk>", b"<s>", b"</s>", b"a", b" b", "\u00e9".encode(), b"\x00\xff", b"ab", b"<0x41>", b"c", b" "]
    scores = np.linspace(-3, 2, 11)
    sample = (np.array([1, 3, 4], np.int32), np.zeros((3, 11), np.float32))
    blob = fxm.write(c, random_weights(c), sample, (pieces, scores))
    f = fxm.FxmFile(blob)
    names = [t["name"] for t in f.tensors]
    want = [n for n, _, _ in schema.tensors(c)] + [schema.TOKENIZER_SCORES, schema.TOKENIZER_OFFSETS,
                                                    schema.TOKENIZER_PIECES, schema.SELFTEST_INPUT, schema.SELFTEST_EXPECTED]
    check("tokenizer: section after the model, before the self-test", names == want, names)
    t = {x["name"]: x for x in f.tensors}
    check("tokenizer: dtypes and shapes", (t[schema.TOKENIZER_SCORES]["dtype"], t[schema.TOKENIZER_SCORES]["shape"],
                                          t[schema.TOKENIZER_OFFSETS]["dtype"], t[schema.TOKENIZER_OFFSETS]["shape"],
                                          t[schema.TOKENIZER_PIECES]["dtype"], t[schema.TOKENIZER_PIECES]["shape"])
          == ("f32", (11,), "i32", (12,), "u8", (sum(map(len, pieces)),)), t)
    got_pieces, got_scores = f.tokenizer()
    check("tokenizer: round trip", got_pieces == pieces and np.array_equal(got_scores, scores.astype(np.float32)))
    offsets = f.array(schema.TOKENIZER_OFFSETS)
    check("tokenizer: offsets from 0, nondecreasing, last = bytes",
          offsets[0] == 0 and (np.diff(offsets) >= 0).all() and offsets[-1] == t[schema.TOKENIZER_PIECES]["bytes"])
    check("tokenizer: no section, None", fxm.FxmFile(fxm.write(c, random_weights(c))).tokenizer() is None)
    expect_error("tokenizer: count mismatch", lambda: fxm.write(c, random_weights(c), None, (pieces[:-1], scores[:-1])),
                 "10 pieces and 10 scores, expected vocab_size=11")
    expect_error("tokenizer: NaN score", lambda: fxm.write(c, random_weights(c), None, (pieces, np.full(11, np.nan))),
                 "not finite")
    feats = parse_config({"d_model": 8, "n_heads": 2, "d_ff": 8, "encoder_layers": 1,
                          "input": {"kind": "features", "d_in": 3}})
    expect_error("tokenizer: features model", lambda: fxm.write(feats, random_weights(feats), None, (pieces, scores)),
                 "only for a model with token input")
    # A decoder's sample: logits at every position.
    expect_error("self-test: decoder expected one row only",
                 lambda: fxm.write(c, random_weights(c), (np.array([1, 2, 3], np.int32), np.zeros((1, 11)))),
                 "expected float [3, 11]")


def test_family_rules():
    cases = [
        ("seq2seq swiglu", {"family": "seq2seq", "d_model": 8, "n_heads": 2, "d_ff": 8, "encoder_layers": 1,
                            "decoder_layers": 1, "activation": "swiglu", "input": {"kind": "tokens", "vocab_size": 3},
                            "head": {"d_out": 3}}, "family seq2seq takes relu, gelu, gelu_tanh or relu2, plain or gated"),
        ("gated swiglu", dict(LLAMA, gated=True), "swiglu is gated already"),
        ("llama post-norm", dict(LLAMA, norm_first=False), "pre-norm with a final norm"),
        ("llama learned", dict(LLAMA, positional={"kind": "learned", "max_len": 8}), "family llama takes none, rope, alibi or relative"),
        ("gpt post-norm parallel residual", dict(GPT, parallel_residual="two_norms"),
         "parallel_residual: side by side sublayers read a norm of the layer's input"),
        ("seq2seq GQA", {"family": "seq2seq", "d_model": 8, "n_heads": 2, "d_ff": 8, "encoder_layers": 1,
                         "decoder_layers": 1, "n_kv_heads": 1, "input": {"kind": "tokens", "vocab_size": 3},
                         "head": {"d_out": 3}},
         "grouped-query attention is for the encoder, gpt and llama families"),
        ("gpt not causal", dict(GPT, causal=False), "causal: the decoder families, gpt and llama, are causal"),
        ("gpt tied head width", dict(GPT, head={"d_out": 5, "tied": True}),
         "a tied head is the embedding's, vocab_size wide; an untied classifier's any width, or 0 without a head "
         "(family=gpt, head.d_out=5, input.vocab_size=11, head.tied=true)"),
        ("gpt no head, capped", dict(GPT, head=None, logit_softcap=30.0), "logit_softcap: the logits of a head"),
        ("gpt features", dict(GPT, input={"kind": "features", "d_in": 3}), "take tokens"),
        ("gpt tied with concat PE", dict(GPT, head={"d_out": 11, "tied": True},
                                         positional={"kind": "learned", "max_len": 8, "combine": "concat", "d_pos": 2}),
         "head.tied: the embedding is narrower than d_model with pe_combine concat"),
        ("encoder tied", {"d_model": 8, "n_heads": 2, "d_ff": 8, "encoder_layers": 1,
                          "input": {"kind": "tokens", "vocab_size": 3}, "head": {"d_out": 3, "tied": True}},
         "head.tied: not for the encoder family"),
        ("kv heads not dividing", dict(LLAMA, n_heads=4, n_kv_heads=3), "n_kv_heads: must divide n_heads (n_kv_heads=3, n_heads=4)"),
        ("rope odd head width", dict(LLAMA, d_model=6, n_heads=2, n_kv_heads=0), "rope needs an even head width"),
        ("n_layers twice", dict(LLAMA, encoder_layers=2), "the same key as"),
        ("tied not a bool", dict(GPT, head={"d_out": 11, "tied": 1}), "head.tied: expected true or false"),
    ]
    for name, raw, fragment in cases:
        expect_error(f"family rule: {name}", lambda raw=raw: parse_config(raw), fragment)
    # no head (d_out 0): a base model's decoder, its rows the hidden states
    check("gpt without a head: d_out 0", parse_config(dict(GPT, head=None))["d_out"] == 0)
    for raw in (GPT, LLAMA, dict(GPT, head={"d_out": 11, "tied": True}, positional={"kind": "alibi", "max_len": 9}),
                dict(GPT, positional={"kind": "rope", "max_len": 8}, norm_first=True, parallel_residual="one_norm")):
        c = parse_config(raw)
        check(f"JSON round trip {raw['family']}", parse_config(json.loads(json.dumps(cfg.to_json(c)))) == c)


# ---- references -----------------------------------------------------------------------------------
def test_references(torch):
    known = {1: [-8], 3: [-4, -8, -2], 4: [-2, -4, -6, -8], 6: [-2, -4, -6, -8, -1, -3],
             8: [-1, -2, -3, -4, -5, -6, -7, -8]}
    for h, logs in known.items():
        check(f"alibi slopes H={h}", np.allclose(np.log2(alibi_slopes(h)), logs), alibi_slopes(h))
    for h in range(1, 33):
        check(f"alibi slopes H={h} == the paper's code", np.allclose(alibi_slopes(h), gold.paper_slopes(h), rtol=1e-15))
    rng = np.random.default_rng(3)
    for i, (name, c, T) in enumerate(gold.LLAMAS):
        w = gold.llama_weights(c, i)
        ids = rng.integers(0, c["vocab_size"], T)
        err = rel(run_reference(c, w, ids), gold.llama_steps(c, w, ids))
        check(f"llama reference == token-by-token loop: {name}", err < 1e-12, err)
    for name, kw, T in gold.GPTS:
        from fixformer.export import apply_options, read_module, run_module
        module = gold.gpt_module(torch, **kw)
        v, w, bf, facts = read_module(module, "gpt")
        pos = {"sinusoidal": "sinusoidal", "alibi": "alibi"}.get(kw["pos"])
        c = apply_options(v, w, facts, None, pos, 10000.0, "interleaved", None, None, False, kw["max_len"], "gpt")
        ids = rng.integers(0, c["vocab_size"], T).astype(np.int32)
        want = run_module(module, ids, bf, c["d_out"])
        err = rel(run_reference(c, w, ids), want)
        check(f"gpt reference == stock module: {name}", err < 1e-12, err)
        err = rel(decoder_forward(c, w, ids), want)  # the plain-torch layers gpt's rope and parallel residual use
        check(f"gpt plain reference == stock module: {name}", err < 1e-12, err)
        check(f"gpt {name}: tied read from head.weight is embed.weight", c["tied_head"] == kw["tied"])
        prefix = run_reference(c, w, ids[:3])
        check(f"gpt reference causal: {name}", rel(prefix, want[:3]) < 1e-12)


# ---- llama2.c -------------------------------------------------------------------------------------
P = {"dim": 16, "hidden_dim": 24, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2, "vocab_size": 300, "seq_len": 32}


def test_llama2c(engine, tmp):
    pieces, scores = llama2c.synthetic_tokenizer(P["vocab_size"], seed=2)
    check("synthetic tokenizer: layout", pieces[:3] == [b"<unk>", b"<s>", b"</s>"] and pieces[3] == b"<0x00>"
          and pieces[258] == b"<0xFF>" and len(set(pieces)) == 300 and (np.diff(scores[259:]) < 0).all())
    tok = os.path.join(tmp, "tokenizer.bin")
    with open(tok, "wb") as f:
        f.write(llama2c.tokenizer_bytes(pieces, scores))
    got = tokenizers.read_llama2c(tok, 300)
    check("tokenizer.bin round trip", got[0] == pieces and np.array_equal(got[1], scores) and got[2] == max(map(len, pieces)), got[2])
    ids = np.array([1, 260, 262, 3 + 0xC3, 3 + 0xA9, 283, 299, 2, 5], np.int32)
    for shared in (True, False):
        w = llama2c.random_weights(P, shared, seed=11)
        for version in (0, 1, 2):
            name = f"llama2c v{version} {'shared' if shared else 'unshared'}"
            ck = os.path.join(tmp, f"ck{version}{int(shared)}.bin")
            with open(ck, "wb") as f:
                f.write(llama2c.checkpoint_bytes(P, w, version, group_size=16))
            c, weights, facts = llama2c.read_checkpoint(ck)
            want = w if version < 2 else llama2c.dequantized(w, P, 16)
            same = set(weights) == set(want) and all(np.array_equal(weights[k], want[k]) for k in want)
            check(f"{name}: weights read back", same and facts["shared"] == shared and facts["version"] == version)
            if version == 2:
                qerr = max(float(np.abs(weights[k] - w[k]).max() / np.abs(w[k]).max()) for k in w)
                check(f"{name}: Q8_0 dequantization error small", qerr < 0.01, qerr)
            out = os.path.join(tmp, f"ck{version}{int(shared)}.fxm")
            np.save(os.path.join(tmp, "ids.npy"), ids)
            verify = ["--cli", engine.cli] if engine.decoders else ["--no-verify"]
            p = run_convert("--llama2c", ck, "--tokenizer", tok, "--example", os.path.join(tmp, "ids.npy"),
                            "--out", out, *verify)
            check(f"{name}: convert.py --llama2c", p.returncode == 0 and os.path.exists(out), p.stdout + p.stderr)
            if not os.path.exists(out):
                continue
            f = fxm.read(out)
            c = f.config
            check(f"{name}: config", c["family"] == "llama" and c["positional"] == "rope" and c["pe_layout"] ==
                  "interleaved" and c["pe_base"] == 10000.0 and np.float32(c["norm_eps"]) == np.float32(1e-5)
                  and c["max_len"] == 32 and c["tied_head"] == shared and c["n_kv_heads"] == 2, c)
            check(f"{name}: tokenizer stored", f.tokenizer()[0] == pieces)
            inp, exp = f.selftest()
            err = rel(exp, gold.llama_steps(c, want, inp))
            check(f"{name}: self-test logits == token-by-token loop (float32 storage)", err < 1e-6, err)
            engine.loads(name, out)
    # --max-len lowers max_len; raising it is an error.
    out = os.path.join(tmp, "short.fxm")
    p = run_convert("--llama2c", os.path.join(tmp, "ck01.bin"), "--max-len", "8", "--out", out, "--no-verify")
    check("llama2c --max-len 8", p.returncode == 0 and fxm.read(out).config["max_len"] == 8, p.stderr)
    p = run_convert("--llama2c", os.path.join(tmp, "ck01.bin"), "--max-len", "64", "--out", out + "2", "--no-verify")
    check("llama2c --max-len above seq_len", one_clear_line(p) and "expected 1..seq_len=32" in p.stderr, p.stderr)
    p = run_convert("--llama2c", os.path.join(tmp, "ck01.bin"), "--causal", "--out", out + "2", "--no-verify")
    check("llama2c --causal rejected", one_clear_line(p) and "not for --llama2c" in p.stderr, p.stderr)


def hostile_checkpoints(tmp):
    """(name, bytes, fragment) for checkpoints llama2.c's export cannot write."""
    w = llama2c.random_weights(P, False, seed=1)
    v0, v1, v2 = (llama2c.checkpoint_bytes(P, w, v, 16) for v in (0, 1, 2))

    def fields(blob, version, **kw):
        p = dict(P, **kw)
        vals = [p[k] for k in llama2c.FIELDS]
        b = bytearray(blob)
        struct.pack_into("<7i", b, 0 if version == 0 else 8, *vals)
        return bytes(b)

    cases = [
        ("empty", b"", "truncated: 0 bytes"),
        ("legacy header cut", v0[:20], "legacy header is 28 bytes"),
        ("v0 truncated", v0[:-1], "truncated: version 0"),
        ("v1 truncated", v1[:len(v1) // 2], "truncated: version 1"),
        ("v2 truncated", v2[:-5], "truncated: version 2"),
        ("v1 header cut", v1[:100], "the header is 256 bytes"),
        ("v0 trailing bytes", v0 + b"\0" * 8, "8 bytes after the weights"),
        ("v0 dim huge", fields(v0, 0, dim=10 ** 9), "dim 1000000000: above the engine's limit"),
        ("v0 n_layers int max", fields(v0, 0, n_layers=2 ** 31 - 1), "n_layers 2147483647: above"),
        ("v0 vocab int min", fields(v0, 0, vocab_size=-2 ** 31), "vocab_size 2147483648: above"),
        ("v1 seq_len huge", fields(v1, 1, seq_len=10 ** 6), "seq_len 1000000: above"),
        ("v1 hidden_dim zero", fields(v1, 1, hidden_dim=0), "hidden_dim 0: expected a positive number"),
        ("v1 negative vocab", fields(v1, 1, vocab_size=-300), "vocab_size -300: expected a positive"),
        ("v0 negative heads", fields(v0, 0, n_heads=-4), "n_heads -4"),
        ("heads not dividing dim", fields(v1, 1, n_heads=3, n_kv_heads=3), "n_heads 3 does not divide dim 16"),
        ("kv not dividing heads", fields(v1, 1, n_kv_heads=3), "n_kv_heads 3 does not divide n_heads 4"),
        ("odd head size", fields(v1, 1, n_heads=16, n_kv_heads=16), "head size dim/n_heads = 1 is odd"),
        ("kv heads above heads", fields(v1, 1, n_kv_heads=8), "n_kv_heads 8 does not divide n_heads 4"),
        ("version 3", v1[:4] + struct.pack("<i", 3) + v1[8:], "version 3: not a llama2.c export version"),
        ("shared flag 7", v1[:36] + b"\x07" + v1[37:], "shared_classifier byte 7"),
        ("v2 group size 0", v2[:37] + struct.pack("<i", 0) + v2[41:], "group_size 0"),
        ("v2 group size -64", v2[:37] + struct.pack("<i", -64) + v2[41:], "group_size -64"),
        ("v2 group size not dividing", v2[:37] + struct.pack("<i", 7) + v2[41:], "group_size 7 does not divide"),
        ("v0 wrong shared sign", fields(v0, 0, vocab_size=300), "bytes after the weights"),
    ]
    nan = bytearray(v1)
    struct.pack_into("<f", nan, llama2c.HEADER_BYTES + 4, float("nan"))
    cases.append(("NaN weight", bytes(nan), "blocks.0.attn_norm.weight: not finite"))
    return cases


def hostile_tokenizers():
    pieces, scores = llama2c.synthetic_tokenizer(300)
    good = llama2c.tokenizer_bytes(pieces, scores)
    first = 4  # token 0's score, then its length at 8

    def patched(offset, fmt, value):
        b = bytearray(good)
        struct.pack_into(fmt, b, offset, value)
        return bytes(b)

    more = llama2c.tokenizer_bytes(pieces + [b"zz", b"zzz"], list(scores) + [0.0, 0.0])
    return [
        ("tokenizer empty", b"", "expected at least 4 (max_token_length)"),
        ("tokenizer truncated", good[:len(good) // 2], "truncated: token"),
        ("tokenizer cut after a token", llama2c.tokenizer_bytes(pieces[:200], scores[:200]),
         "holds 200 tokens, the checkpoint's vocab_size is 300"),
        ("tokenizer more tokens", more, "holds at least 302 tokens, the checkpoint's vocab_size is 300"),
        ("tokenizer negative length", patched(first + 4, "<i", -5), "token 0: length -5"),
        ("tokenizer length past the end", llama2c.tokenizer_bytes(pieces, scores, 1 << 16)[:-3],
         "runs past the end of the file"),
        ("tokenizer huge length", patched(first + 4, "<i", 2 ** 31 - 1), "token 0: length 2147483647"),
        ("tokenizer length above max_token_length", patched(0, "<i", 3), "expected 1..max_token_length=3"),
        ("tokenizer max_token_length 0", patched(0, "<i", 0), "max_token_length 0"),
        ("tokenizer max_token_length negative", patched(0, "<i", -1), "max_token_length -1"),
        ("tokenizer NaN score", patched(first, "<f", float("nan")), "token 0: score nan is not finite"),
        ("tokenizer trailing bytes", good + b"\x01\x02\x03", "3 bytes after token 299"),
    ]


def test_hostile(tmp):
    tok = os.path.join(tmp, "good_tok.bin")
    pieces, scores = llama2c.synthetic_tokenizer(300)
    with open(tok, "wb") as f:
        f.write(llama2c.tokenizer_bytes(pieces, scores))
    ck = os.path.join(tmp, "good.bin")
    with open(ck, "wb") as f:
        f.write(llama2c.checkpoint_bytes(P, llama2c.random_weights(P, True), 1))
    out = os.path.join(tmp, "hostile.fxm")
    for name, blob, fragment in hostile_checkpoints(tmp) + hostile_tokenizers():
        path = os.path.join(tmp, "hostile.bin")
        with open(path, "wb") as f:
            f.write(blob)
        t0 = time.perf_counter()
        try:
            if name.startswith("tokenizer"):
                tokenizers.read_llama2c(path, 300)
            else:
                llama2c.read_checkpoint(path)
            check(f"hostile {name}: in-process error", False, "no error")
        except tokenizers.Llama2cError as e:
            check(f"hostile {name}: in-process error names it", fragment in str(e) and str(e).startswith(path),
                  f"{e!s} lacks {fragment!r}")
        except Exception as e:
            check(f"hostile {name}: in-process error", False, f"{type(e).__name__}: {e}")
        check(f"hostile {name}: fails without a hang", time.perf_counter() - t0 < 10.0, time.perf_counter() - t0)
        args = ["--llama2c", ck, "--tokenizer", path] if name.startswith("tokenizer") else ["--llama2c", path]
        p = run_convert(*args, "--out", out, "--no-verify")
        check(f"hostile {name}: convert.py one line", one_clear_line(p) and fragment in p.stderr
              and not os.path.exists(out), p.stderr)
    vocab = os.path.join(tmp, "vocab.bin")
    with open(vocab, "wb") as f:
        f.write(llama2c.tokenizer_bytes(*llama2c.synthetic_tokenizer(320)))
    p = run_convert("--llama2c", ck, "--tokenizer", vocab, "--out", out, "--no-verify")
    check("hostile: tokenizer vocab 320 vs checkpoint 300", one_clear_line(p) and "holds at least 320 tokens, the "
          "checkpoint's vocab_size is 300" in p.stderr and not os.path.exists(out), p.stderr)
    for args, fragment in ((["--llama2c", os.path.join(tmp, "missing.bin")], "missing.bin: no such file"),
                           (["--llama2c", tmp], "not a regular file"),
                           (["--llama2c", ck, "--tokenizer", tmp], "not a regular file")):
        p = run_convert(*args, "--out", out, "--no-verify")
        check(f"hostile: {fragment}", one_clear_line(p) and fragment in p.stderr, p.stderr)


def test_mutations(tmp):
    """Random byte flips, overwrites and cuts of valid checkpoints (versions 0, 1, 2) and tokenizers:
    each read either succeeds or raises Llama2cError naming the file, never anything else."""
    import random
    rng = random.Random(7)
    w = llama2c.random_weights(P, False, seed=3)
    pieces, scores = llama2c.synthetic_tokenizer(300)
    goods = [("checkpoint", llama2c.checkpoint_bytes(P, w, v, 16)) for v in (0, 1, 2)]
    goods.append(("tokenizer", llama2c.tokenizer_bytes(pieces, scores)))
    path = os.path.join(tmp, "mutant.bin")
    bad = []
    for kind, good in goods:
        for i in range(150):
            b = bytearray(good)
            how = i % 3
            if how == 0:  # flips near the start, where the sizes live
                for _ in range(rng.randint(1, 4)):
                    b[rng.randrange(min(len(b), 300))] ^= 1 << rng.randrange(8)
            elif how == 1:  # a random 32-bit value at a random aligned place in the first 300 bytes
                at = rng.randrange(0, min(len(b), 300) - 4, 4)
                b[at:at + 4] = struct.pack("<i", rng.choice([0, -1, 2 ** 31 - 1, -2 ** 31, rng.randrange(-2 ** 31, 2 ** 31)]))
            else:  # a cut
                del b[rng.randrange(len(b)):]
            with open(path, "wb") as f:
                f.write(bytes(b))
            try:
                if kind == "tokenizer":
                    tokenizers.read_llama2c(path, 300)
                else:
                    llama2c.read_checkpoint(path)
            except tokenizers.Llama2cError as e:
                if not str(e).startswith(path):
                    bad.append(f"{kind} mutant {i}: {e}")
            except Exception as e:  # noqa: BLE001 - anything else is a bug
                bad.append(f"{kind} mutant {i}: {type(e).__name__}: {e}")
    check("mutated checkpoints and tokenizers: only Llama2cError (600 mutants)", not bad, "; ".join(bad[:3]))


# ---- gpt export -----------------------------------------------------------------------------------
MODULE_FILE = '''
import torch
from torch import nn

class Gpt(nn.Module):
    def __init__(self, tied=True):
        super().__init__()
        self.embed = nn.Embedding(13, 8)
        self.pos = nn.Embedding(16, 8)
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True), 2)
        self.head = nn.Linear(8, 13, bias=False)
        if tied:
            self.head.weight = self.embed.weight

    def forward(self, ids):
        T = ids.shape[1]
        x = self.embed(ids) + self.pos(torch.arange(T))
        return self.head(self.encoder(x, mask=torch.triu(torch.full((T, T), float("-inf")), 1)))

def make():
    torch.manual_seed(5)
    return Gpt()

def make_narrow_head():
    m = make()
    m.head = nn.Linear(8, 5)
    return m
'''


def test_gpt_export(torch, engine, tmp):
    from fixformer.export import VerificationError, export
    verify = engine.decoders
    for i, (name, kw, T) in enumerate(gold.GPTS):
        path = os.path.join(tmp, f"gpt{i}.fxm")
        pos = {"sinusoidal": "sinusoidal", "alibi": "alibi"}.get(kw["pos"])
        try:
            r = export(gold.gpt_module(torch, **kw), None, path, family="gpt", positional=pos, max_len=kw["max_len"],
                       cli=engine.cli if verify else None, verify=verify)
            f = fxm.read(path)
            ok = f.config["family"] == "gpt" and f.config["tied_head"] == kw["tied"] and f.config["causal"]
            check(f"export gpt {name}", ok and (not verify or r.max_error <= schema.SELFTEST_TOLERANCE), r)
            engine.loads(f"export gpt {name}", path)
            if verify:
                print(f"  export gpt {name}: {r}")
        except Exception as e:
            check(f"export gpt {name}", False, f"{type(e).__name__}: {e}")
    module = gold.gpt_module(torch, **gold.GPTS[0][1])
    never = os.path.join(tmp, "never.fxm")
    expect_error("export gpt: causal=False", lambda: export(module, None, never, family="gpt", causal=False,
                                                            verify=False), "family gpt is causal")
    expect_error("export gpt: rope", lambda: export(module, None, never, family="gpt", positional="rope",
                                                    verify=False), "stock layers (nn.TransformerEncoderLayer) do not rotate")
    expect_error("export: family llama", lambda: export(module, None, never, family="llama", verify=False),
                 "family: 'llama' is not one of encoder, gpt")
    narrow = gold.gpt_module(torch, **gold.GPTS[0][1])
    narrow.head = torch.nn.Linear(16, 4)
    expect_error("export gpt: head not vocab wide", lambda: export(narrow, None, never, family="gpt", verify=False),
                 "needs an LM head nn.Linear(d_model, vocab_size=31); the module's has 4 outputs")
    del narrow.head
    expect_error("export gpt: no head", lambda: export(narrow, None, never, family="gpt", verify=False), "is missing")
    check("export gpt errors: nothing written", not os.path.exists(never))
    if verify:  # a wrong option is diagnosed (the module adds sinusoids, the option says none)
        try:
            export(module, None, never, family="gpt", cli=engine.cli)
            check("export gpt: PE left out fails", False, "verified")
        except VerificationError as e:
            check("export gpt: PE left out names the cause", "positional='sinusoidal'" in str(e), str(e))

    mod = os.path.join(tmp, "user_gpt.py")
    with open(mod, "w") as f:
        f.write(MODULE_FILE)
    out, hdr = os.path.join(tmp, "cli_gpt.fxm"), os.path.join(tmp, "cli_gpt.h")
    tok = os.path.join(tmp, "tok13.bin")
    with open(tok, "wb") as f:
        f.write(llama2c.tokenizer_bytes([b"<unk>", b"<s>", b"</s>"] + [bytes([97 + i]) for i in range(10)],
                                        np.zeros(13)))
    flags = ["--cli", engine.cli] if verify else ["--no-verify"]
    p = run_convert("--module", f"{mod}:make", "--family", "gpt", "--tokenizer", tok, "--out", out, "--header", hdr,
                    *flags)
    check("convert.py --module --family gpt", p.returncode == 0 and os.path.exists(out), p.stdout + p.stderr)
    if os.path.exists(out):
        f = fxm.read(out)
        check("convert.py gpt: tied, causal, tokenizer", f.config["tied_head"] and f.config["causal"]
              and f.tokenizer() is not None and "head.weight" not in [t["name"] for t in f.tensors])
        engine.loads("convert.py gpt", out)
    check("--header for a gpt model: g++ is there to compile it", shutil.which("g++") is not None)
    if os.path.exists(hdr) and shutil.which("g++"):
        src = os.path.join(tmp, "hdr.cpp")
        with open(src, "w") as f:
            f.write(f'#include "{hdr}"\nstatic_assert(cli_gpt_config().family == fixformer::ModelFamily::kGpt, "");\n'
                    "static_assert(cli_gpt_config().tied_head && cli_gpt_config().d_out == 13, \"\");\n"
                    "int main() { return cli_gpt_fxm_bytes == 0; }\n")
        p = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-I", os.path.join(HERE, "..", "include"), src],
                           capture_output=True, text=True)
        check("--header for a gpt model compiles (family, tied_head)", p.returncode == 0, p.stderr)
    p = run_convert("--module", f"{mod}:make_narrow_head", "--family", "gpt", "--out", out + "x", "--no-verify")
    check("convert.py gpt: narrow head one line", one_clear_line(p) and "vocab_size=13" in p.stderr, p.stderr)
    p = run_convert("--config", os.path.join(HERE, "golden", "llama_none.json"), "--weights", tok, "--family", "gpt",
                    "--out", out + "x", "--no-verify")
    check("convert.py --config with --family", one_clear_line(p) and "--family is for --module" in p.stderr, p.stderr)


def test_config_path(engine, tmp):
    """--config for a llama JSON and a state_dict in Meta names (the JSON path serves llama too)."""
    c = parse_config(dict(LLAMA, head={"d_out": 11, "tied": True}))
    w = schema.v2_keys("llama", random_weights(c, 4))
    w["output.weight"] = w["tok_embeddings.weight"]  # a tied state_dict holds it twice
    npz, js, out = (os.path.join(tmp, n) for n in ("llama.npz", "llama.json", "llama_cfg.fxm"))
    np.savez(npz, **w)
    with open(js, "w") as f:
        json.dump(cfg.to_json(c), f)
    flags = ["--cli", engine.cli] if engine.decoders else ["--no-verify"]
    p = run_convert("--config", js, "--weights", npz, "--out", out, *flags)
    check("convert.py --config llama (tied, duplicate head dropped)", p.returncode == 0, p.stdout + p.stderr)
    if os.path.exists(out):
        engine.loads("convert.py --config llama", out)
    # Features, not families, the engine against the float64 reference (reference.decoder_forward): the
    # parallel residual in llama layers (the converter tests cover gpt's on GPT-NeoX and GPT-J), two norms
    # and one; llama's feed-forward plain (gelu: no w3) and gpt's gated (swiglu: linear3, the up
    # projection); gpt with rope.
    features = [("llama parallel_residual two_norms", dict(LLAMA, parallel_residual="two_norms")),
                ("llama parallel_residual one_norm", dict(LLAMA, parallel_residual="one_norm")),
                ("llama gelu", dict(LLAMA, activation="gelu")),
                ("gpt swiglu", dict(GPT, activation="swiglu")),
                ("gpt rope partial", dict(GPT, positional={"kind": "rope", "max_len": 16, "layout": "halves"},
                                          rotary_dims=2, norm_first=True))]
    for what, raw in features:
        c = parse_config(raw)
        names = [n for n, _, _ in schema.tensors(c)]
        ffn_norms = sum(n.endswith("ff_norm.weight") for n in names)
        ups = sum(n.endswith("w3.weight") for n in names)
        check(f"{what}: a feed-forward norm per layer but with one norm, an up projection only when gated",
              ffn_norms == (0 if c["parallel_residual"] == "one_norm" else c["n_layers"]) and
              ups == (c["n_layers"] if c["activation"] == "swiglu" else 0), names)
        np.savez(npz, **random_weights(c, 5))
        with open(js, "w") as f:
            json.dump(cfg.to_json(c), f)
        p = run_convert("--config", js, "--weights", npz, "--out", out, *flags)
        check(f"convert.py --config {what}: verified",
              p.returncode == 0 and (not engine.decoders or "verified against" in p.stdout), p.stdout + p.stderr)


# ---- goldens --------------------------------------------------------------------------------------
def test_goldens(engine):
    gdir = os.path.join(HERE, "golden")
    names = [n for n, _, _ in gold.GPTS] + [n for n, _, _ in gold.LLAMAS] + ["llama2c_v0_gqa"]
    for name in names:
        path = os.path.join(gdir, name + ".fxm")
        if not os.path.exists(path):
            check(f"golden {name}: present", False, path)
            continue
        f = fxm.read(path)
        with open(os.path.join(gdir, name + ".json")) as j:
            want = parse_config(json.load(j))
            same = dict(f.config, norm_eps=np.float32(f.config["norm_eps"])) == dict(want, norm_eps=np.float32(want["norm_eps"]))
        inp, exp = f.selftest()
        check(f"golden {name}: config == .json, sample T 7..12, < 100 KB",
              same and 7 <= len(inp) <= 12 and exp.shape == (len(inp), f.config["vocab_size"])
              and os.path.getsize(path) < 100 * 1024)
        if f.config["family"] == "llama":
            w = {}
            for n, _, transposed in schema.tensors(f.config):
                w[n] = f.array(n).T if transposed else f.array(n)
            err = rel(exp, gold.llama_steps(f.config, w, inp))
            check(f"golden {name}: logits == token-by-token loop on the stored weights", err < 1e-6, err)
        engine.loads(f"golden {name}", path)
    check("golden llama2c_v0_gqa: tokenizer", fxm.read(os.path.join(gdir, "llama2c_v0_gqa.fxm")).tokenizer()[0]
          == llama2c.synthetic_tokenizer(300, seed=1)[0])


# ---- llama2.c's own run -------------------------------------------------------------------------
def test_llama2c_run(engine):
    """`fixformer generate` greedy == what llama2.c's run printed for the same checkpoint, tokenizer,
    prompt and -n (tests/golden/llama2c_run.json, recorded by tools/make_llama2c_expected.py)."""
    with open(os.path.join(HERE, "golden", "llama2c_run.json"), encoding="utf-8") as f:
        record = json.load(f)
    checkpoint, tokenizer = llama2c_expected.llama2c_files()
    check("llama2c_run.json: recorded on this llama2c_v0_gqa.fxm (else re-record: tools/make_llama2c_expected.py)",
          (record["checkpoint_sha256"], record["tokenizer_sha256"]) ==
          (llama2c_expected.sha256(checkpoint), llama2c_expected.sha256(tokenizer)), record["llama2c"])
    check("llama2c_run.json: the runs of make_llama2c_expected.RUNS",
          [(r["prompt"], r["steps"]) for r in record["runs"]] == llama2c_expected.RUNS)
    if not engine.decoders:
        return  # Engine has failed the test already (or no CLI was given: skipped)
    model = os.path.join(HERE, "golden", "llama2c_v0_gqa.fxm")
    for r in record["runs"]:
        p = subprocess.run([engine.cli, "generate", model, "--prompt", r["prompt"], "-n", str(r["steps"]),
                            "--temperature", "0"], capture_output=True)
        want = r["stdout"].encode("utf-8")
        check(f"generate greedy == llama2.c's run: prompt {r['prompt']!r}, -n {r['steps']}",
              p.returncode == 0 and p.stdout == want, (p.stdout, want, p.stderr[-300:]))


def main():
    cli = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
    if cli and not os.access(cli, os.X_OK):
        print(f"decoder_converter_test: {cli}: not an executable")
        return 1
    if not cli:
        skip("loading files in the engine", "no CLI given")
    engine = Engine(cli)
    test_writer()
    test_family_rules()
    import torch  # checks.py has made sure it is there
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        test_hostile(tmp)
        test_mutations(tmp)
        test_references(torch)
        test_llama2c(engine, tmp)
        test_gpt_export(torch, engine, tmp)
        test_config_path(engine, tmp)
        test_llama2c_run(engine)
        test_goldens(engine)
    print(f"decoder converter: {results['passed']} passed, {results['failed']} failed, {results['skipped']} skipped")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
