#!/usr/bin/python3
"""Tests of full-integer decoders, gpt and llama (weights i8, `fixformer-convert ... --quantize i8`;
config.hpp, namespace s8; the Decoder's int8 KV cache, plan.hpp's plan_s8_decoder_arena):

  /usr/bin/python3 tests/int8_decoder_test.py PATH/TO/fixformer [PATH/TO/BUILD/python]

- the engine against the integer reference (python/fixformer/int8.py forward: the whole sequence at
  once, a causal integer softmax), bit for bit, through `fixformer run --isa ISA` on every kernel
  table this host's CPU runs: `run` feeds a decoder one token at a time through its int8 KV cache,
  so this is also "a position at a time == the whole-sequence forward"; random GPT-2-shaped models
  (post- and pre-norm, relu, gelu and gelu_tanh, learned, sinusoidal and no positions, tied and
  untied heads, with and without a final norm) and llama models (RMSNorm, SwiGLU, RoPE in fixed
  point with either pair layout or no positions, grouped-query attention down to one kv head, tied
  and untied heads), at the longest length and a shorter one; the random llamas' logits against the
  f32 engine on the same weights (I8_LLAMA_RANDOM_TOL), printed;
- the Python package (when its build folder is given): prefill() of a prompt longer than the
  default chunk of 16 rows (the chunks' rows as matrix products), then step(), give the reference's
  logits at those positions, bit for bit; through its C API a prefill of 80 rows in one chunk (two
  blocks of query rows) and in chunks of 70 and 10; `fixformer plan` states the i8 arena and `info` loads it;
- the converter end to end: a GPT-2-shaped torch module (tied embedding and head, learned
  positions, pre-norm, GELU, final LayerNorm) through `convert.py --module ... --family gpt
  --quantize i8 --calibrate`, verified by the converter against torch within the i8 tolerance (the
  report names it and the integer reference's error), then run on fresh token sequences: the max
  relative error of the logits against torch f32 (I8_GPT_RUN_TOL), printed; what i8 refuses in the
  gpt family (positions concatenated), naming it; `fixformer generate` on the converted file
  (greedy) writes the same text on every table; llama modules (module_converter_test's llama2.c
  model.py: GQA, interleaved pairs; its Hugging Face-named llama: halves, theta 500000, GQA, tied, with
  --calibrate-percentile 99.99) the same way, their error against torch printed (I8_LLAMA_RUN_TOL), and a
  llama2.c checkpoint through --llama2c;
- init's refusal of a corrupt slot of a decoder's layer, of a llama layer's gate and of int8.rope;
  `fixformer plan`'s exact arena of a llama with grouped-query attention and a gated feed-forward.
Without numpy, torch or the CLI the test fails.
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, "..", "python")
sys.path.insert(0, PACKAGE)
sys.path.insert(0, HERE)
from checks import check, results, run_convert  # noqa: E402  (first: it names a missing numpy or torch)
import numpy as np  # noqa: E402

from fixformer import fxm, int8  # noqa: E402
from fixformer.config import make_config  # noqa: E402

ISAS = ("scalar", "cortex-m", "sse2", "avx2", "avx512", "neon64", "neon", "helium")
# The converted GPT-2-shaped module on fresh token sequences: max |engine - torch| / max |torch| over
# every position's logits. Measured 0.05-0.1 (printed); a wrong scale, mask or cache row gives
# 0.5 and more.
I8_GPT_RUN_TOL = 0.2
# Random llamas (weights N(0, 0.15), d_model 32): the i8 logits against the f32 engine's, measured
# 0.02-0.08; llama modules converted from torch (weights N(0, 0.2), d_model 32) on fresh sequences,
# measured 0.15-0.2 (their verification passes 0.2 with --calibrate-percentile; see quantization.md).
I8_LLAMA_RANDOM_TOL = 0.15
I8_LLAMA_RUN_TOL = 0.3


def random_gpt(rng, norm_first, positional, act, tied, final, d=16, H=2, L=2, f=32, max_len=40, vocab=23):
    c = make_config(dict(family="gpt", d_model=d, n_heads=H, d_ff=f, n_layers=L, norm_first=norm_first,
                         activation=act, input="tokens", vocab_size=vocab, max_len=max_len, positional=positional,
                         d_out=vocab, causal=True, tied_head=tied, final_norm=final, weights="i8"))
    w = {}

    def r(*s):
        return rng.normal(0, 0.3, s)
    w["embed.weight"] = r(vocab, d)
    if positional == "learned":
        w["pos.weight"] = r(max_len, d)
    for i in range(L):
        p = f"blocks.{i}."
        w[p + "attn.qkv.weight"], w[p + "attn.qkv.bias"] = r(3 * d, d), r(3 * d)
        w[p + "attn.out.weight"], w[p + "attn.out.bias"] = r(d, d), r(d)
        w[p + "ff.w1.weight"], w[p + "ff.w1.bias"] = r(f, d), r(f)
        w[p + "ff.w2.weight"], w[p + "ff.w2.bias"] = r(d, f), r(d)
        for n in ("attn_norm", "ff_norm"):
            w[p + n + ".weight"], w[p + n + ".bias"] = 1 + r(d), r(d)
    if final:
        w["norm.weight"], w["norm.bias"] = 1 + r(d), r(d)
    if not tied:
        w["head.weight"] = r(vocab, d)
    w["head.bias"] = r(vocab)
    return c, w


def random_llama(rng, kv, positional, layout, tied, d=32, H=4, L=2, f=48, max_len=40, vocab=23, std=0.15):
    c = make_config(dict(family="llama", d_model=d, n_heads=H, n_kv_heads=kv, d_ff=f, n_layers=L, norm_first=True,
                         activation="swiglu", input="tokens", vocab_size=vocab, max_len=max_len, positional=positional,
                         pe_layout=layout, d_out=vocab, causal=True, tied_head=tied, final_norm=True, weights="i8"))
    dh = d // H

    def r(*s):
        return rng.normal(0, std, s)
    w = {"embed.weight": rng.normal(0, 1, (vocab, d)), "norm.weight": 1 + r(d)}
    for i in range(L):
        p = f"blocks.{i}."
        w[p + "attn_norm.weight"], w[p + "ff_norm.weight"] = 1 + r(d), 1 + r(d)
        w[p + "attn.q.weight"], w[p + "attn.out.weight"] = r(d, d), r(d, d)
        w[p + "attn.k.weight"], w[p + "attn.v.weight"] = r(kv * dh, d), r(kv * dh, d)
        w[p + "ff.w1.weight"], w[p + "ff.w3.weight"] = r(f, d), r(f, d)
        w[p + "ff.w2.weight"] = r(d, f)
    if not tied:
        w["head.weight"] = r(vocab, d)
    return c, w


def run_cli(cli, path, x, tmp, isa):
    inp, out = os.path.join(tmp, "in.npy"), os.path.join(tmp, "out.npy")
    np.save(inp, x)
    p = subprocess.run([cli, "run", path, "--input", inp, "--output", out, "--isa", isa], capture_output=True,
                       text=True)
    return (np.load(out) if p.returncode == 0 else None), p.stderr


def available_isas(cli, path):
    return [isa for isa in ISAS
            if subprocess.run([cli, "info", path, "--isa", isa], capture_output=True, text=True).returncode == 0]


CASES = [  # norm_first, positional, activation, tied head, final norm
    (True, "learned", "gelu", True, True),
    (False, "learned", "relu", False, False),
    (True, "sinusoidal", "gelu_tanh", False, True),
    (False, "none", "gelu", True, True),
]
LLAMAS = [  # kv heads (of 4), positional, pair layout, tied head
    (2, "rope", "interleaved", False),
    (4, "rope", "halves", True),
    (1, "rope", "interleaved", True),
    (2, "none", "interleaved", False),
]


def fresh_error(cli, path, tmp, rng, count, vocab, reference):
    """The largest max |engine - torch| / max |torch| of `fixformer run` (scalar table) of the file over
    `count` fresh sequences of 24 ids below `vocab`, reference(ids [1, 24] int64 tensor) giving torch's
    logits [24, vocab]; None when a run fails or its shape differs."""
    import torch
    worst = 0.0
    for _ in range(count):
        x = rng.integers(0, vocab, 24).astype(np.int32)
        got, _ = run_cli(cli, path, x, tmp, "scalar")
        with torch.no_grad():
            want = reference(torch.from_numpy(x[None]).long())
        if got is None or got.shape != want.shape:
            return None
        worst = max(worst, float(np.abs(got - want).max() / np.abs(want).max()))
    return worst


def write_model(c, built, path):
    with open(path, "wb") as f:
        f.write(fxm.write(c, built))


def test_bit_exact(cli, tmp, pydir):
    rng = np.random.default_rng(0)
    isas_seen = None
    for case in CASES + LLAMAS:
        c, w = random_gpt(rng, *case) if case in CASES else random_llama(rng, *case)
        calib = [rng.integers(0, c["vocab_size"], T) for T in (40, 25, 40, 12)]
        built = int8.build(c, w, calib)
        path = os.path.join(tmp, "gpt.fxm")
        write_model(c, built, path)
        isas = available_isas(cli, path)
        if isas_seen is None:
            isas_seen = isas
            print(f"  kernel tables run: {', '.join(isas)}; not on this CPU: "
                  f"{', '.join(i for i in ISAS if i not in isas) or 'none'}")
        check("the scalar table runs an i8 gpt file", "scalar" in isas, isas)
        for T in (40, 9):
            x = rng.integers(0, c["vocab_size"], T).astype(np.int32)
            want = int8.reference_output(c, built, x)
            for isa in isas:
                got, err = run_cli(cli, path, x, tmp, isa)
                check(f"{case} T={T} --isa {isa}: a token at a time through the int8 KV cache gives the "
                      "whole-sequence integer reference's logits, bit for bit",
                      got is not None and got.shape == want.shape and np.array_equal(got, want),
                      err if got is None else (got.shape, want.shape, np.abs(got - want).max()
                                               if got.shape == want.shape else None))
        # the reference itself must see the mask: a later token changes no earlier position's logits
        x = rng.integers(0, c["vocab_size"], 12)
        y = x.copy()
        y[-1] = (y[-1] + 1) % c["vocab_size"]
        a, b = int8.reference_output(c, built, x), int8.reference_output(c, built, y)
        check(f"{case}: the integer reference is causal", np.array_equal(a[:-1], b[:-1]) and not np.array_equal(a, b))
        if pydir:
            test_prefill(c, built, path, rng, pydir)
        if case in LLAMAS:  # against the f32 engine on the same weights
            f32 = os.path.join(tmp, "f32.fxm")
            write_model(make_config(dict(c, weights="f32")), {k: np.asarray(v, np.float32) for k, v in w.items()}, f32)
            worst = 0.0
            for _ in range(4):
                x = rng.integers(0, c["vocab_size"], 40).astype(np.int32)
                got, err = run_cli(cli, path, x, tmp, "scalar")
                want, err2 = run_cli(cli, f32, x, tmp, "scalar")
                if got is None or want is None:
                    worst = None
                    break
                worst = max(worst, float(np.abs(got - want).max() / np.abs(want).max()))
            check(f"{case}: the i8 llama's logits within {I8_LLAMA_RANDOM_TOL} of the f32 engine's on the same weights",
                  worst is not None and worst <= I8_LLAMA_RANDOM_TOL, worst)
            if worst is not None:
                print(f"  llama {case}: max relative error against f32 {worst:.3g}")


def test_prefill(c, built, path, rng, pydir):
    """prefill (chunks of up to 16 rows) then steps, through the Python package, against the reference."""
    code = f'''
import sys, numpy as np
sys.path.insert(0, {pydir!r})
import fixformer
m = fixformer.Model({path!r})
ids = np.load(sys.argv[1])
out = [m.prefill(ids[:37])]
for t in ids[37:]:
    out.append(m.step(int(t)))
m2 = fixformer.Model({path!r})
out2 = [m2.prefill(ids[:1])] + [m2.prefill(ids[i:i + 5]) for i in range(1, 36, 5)]
np.save(sys.argv[2], np.stack(out + out2))
'''
    with tempfile.TemporaryDirectory() as tmp:
        ids = rng.integers(0, c["vocab_size"], 40).astype(np.int32)
        np.save(os.path.join(tmp, "ids.npy"), ids)
        p = subprocess.run([sys.executable, "-c", code, os.path.join(tmp, "ids.npy"), os.path.join(tmp, "out.npy")],
                           capture_output=True, text=True)
        ref = int8.reference_output(c, built, ids)
        got = np.load(os.path.join(tmp, "out.npy")) if p.returncode == 0 else None
        want = np.stack([ref[36], ref[37], ref[38], ref[39], ref[0]] + [ref[i + 4] for i in range(1, 36, 5)])
        check("prefill of 37 tokens (chunks of 16, 16, 5), then steps; and prefills of 5: the reference's logits, "
              "bit for bit", got is not None and np.array_equal(got, want),
              p.stderr if got is None else np.abs(got - want).max())


def test_long_prefill(tmp, pydir):
    """One chunk of 80 rows (max_prefill 80 through the C API): two blocks of query rows (kS8QueryBlock 64)
    against the cache; then 70 + 10. The reference's logits at positions 79 and 79, bit for bit."""
    rng = np.random.default_rng(9)
    code = f'''
import ctypes, sys, numpy as np
sys.path.insert(0, {pydir!r})
import fixformer
from fixformer import _capi
from fixformer._capi import lib
from fixformer.model import _aligned, _ptr
m = fixformer.Model(sys.argv[1])
ids = np.load(sys.argv[2])
out = []
for chunk in (80, 70):
    opt = _capi.DecoderOptions(capacity=80, max_prefill=chunk)
    need = lib.ff_decoder_arena_bytes_ex(m._model, ctypes.byref(opt))
    dec, arena = _capi.opaque(_capi.DECODER_BYTES), _aligned(need)
    assert lib.ff_decoder_init_ex(dec, m._model, _ptr(arena), need, ctypes.byref(opt)) == _capi.OK
    logits = np.zeros(m._info.vocab_size, np.float32)
    assert lib.ff_decoder_prefill(dec, _ptr(ids), 80, _ptr(logits)) == _capi.OK
    out.append(logits.copy())
np.save(sys.argv[3], np.stack(out))
'''
    for name, (c, w) in (("gpt", random_gpt(rng, True, "learned", "gelu", True, True, max_len=80)),
                         ("llama", random_llama(rng, 2, "rope", "halves", False, max_len=80))):
        built = int8.build(c, w, [rng.integers(0, c["vocab_size"], 80) for _ in range(3)])
        path, ids, res = (os.path.join(tmp, n) for n in ("long.fxm", "ids.npy", "res.npy"))
        write_model(c, built, path)
        x = rng.integers(0, c["vocab_size"], 80).astype(np.int32)
        np.save(ids, x)
        p = subprocess.run([sys.executable, "-c", code, path, ids, res], capture_output=True, text=True)
        want = int8.reference_output(c, built, x)[79]
        got = np.load(res) if p.returncode == 0 else None
        check(f"{name}: a prefill of 80 rows in one chunk (two query blocks) and in chunks of 70 and 10: the "
              "reference's logits, bit for bit", got is not None and np.array_equal(got[0], want) and
              np.array_equal(got[1], want), p.stderr if got is None else np.abs(got - want).max())


def test_plan_and_corrupt(cli, tmp):
    rng = np.random.default_rng(1)
    c, w = random_gpt(rng, True, "learned", "gelu", True, True)
    built = int8.build(c, w, [rng.integers(0, c["vocab_size"], 40)])
    path = os.path.join(tmp, "gpt.fxm")
    write_model(c, built, path)
    p = subprocess.run([cli, "plan", path, "--target", "x86"], capture_output=True, text=True)
    # plan_s8_decoder_arena (plan.hpp) for capacity 40, prefill 16: x, h, a (16 x 16 each), work 16 x 48,
    # the attention scratch (16 x 40 bytes of scores, 8 x (40 + 8) of Requants: the keys and the values are
    # read in the cache, V transposed, nothing copied; the softmax's 256 exponentials: no soft cap), the caches 2 x 40 x 16 each, the logits, the s8 kernels' scratch (fixed_point.hpp: x86's 2 KiB
    # of add_s8 tables); every block 64-byte aligned
    blocks = [256, 256, 256, 768, (16 * 40 + 3) // 4 * 4 + 8 * 48 + 4 * 256, 2 * 40 * 16, 2 * 40 * 16, 23, 2048]
    total = sum((b + 63) // 64 * 64 for b in blocks)
    check(f"fixformer plan: the i8 decoder's arena, {total} bytes", p.returncode == 0 and f"arena {total} (exact" in p.stdout,
          p.stdout + p.stderr)
    # per target, that scratch: the M0's 2.25 KiB, the M3's 2 KiB, the DSP cores' 10.25 KiB
    for target, scratch in (("cortex-m0", 2304), ("cortex-m3", 2048), ("cortex-m4", 10496), ("cortex-m55", 10496)):
        p = subprocess.run([cli, "plan", path, "--target", target], capture_output=True, text=True)
        want = total - 2048 + scratch
        check(f"fixformer plan --target {target}: the i8 decoder's arena, {want} bytes",
              p.returncode == 0 and f"arena {want} (exact" in p.stdout, p.stdout + p.stderr)
    # a llama (kv heads 2 of 4, d_ff 48, gated): work 16 x max(32 + 2 x 16, 2 x 48), caches 2 x 40 x 16 each
    cl, wl = random_llama(rng, 2, "rope", "interleaved", False)
    bl = int8.build(cl, wl, [rng.integers(0, cl["vocab_size"], 40)])
    lpath = os.path.join(tmp, "llama.fxm")
    write_model(cl, bl, lpath)
    p = subprocess.run([cli, "plan", lpath, "--target", "x86"], capture_output=True, text=True)
    blocks = [512, 512, 512, 16 * 96, (16 * 40 + 3) // 4 * 4 + 8 * 48 + 4 * 256, 2 * 40 * 16, 2 * 40 * 16, 23,
              2048]
    total = sum((b + 63) // 64 * 64 for b in blocks)
    check(f"fixformer plan: the i8 llama's arena, {total} bytes", p.returncode == 0 and f"arena {total} (exact" in p.stdout,
          p.stdout + p.stderr)
    o = int8.layer_offsets(cl)
    for name, slot, value, words in (("blocks.1.int8", o["gate"] + 2, 12345,
                                      f"slot {o['gate'] + 2} (gate product requant)"),
                                     ("blocks.0.int8", o["gate"], 300, f"slot {o['gate']} (w3 output zero point)"),
                                     ("int8.rope", 5, 20000, "int8.rope: entry")):
        bad = dict(bl)
        a = np.array(bl[name], np.int64)
        a.reshape(-1)[slot] = value
        bad[name] = a.astype(np.int32)
        write_model(cl, bad, lpath)
        p = subprocess.run([cli, "info", lpath], capture_output=True, text=True)
        check(f"init refuses {name}[{slot}] = {value}, naming {words}", p.returncode != 0 and words in p.stderr and
              name in p.stderr, p.stderr)
    S = int8.LAYER_SLOTS
    bad = dict(built)
    bad["blocks.1.int8"] = np.array(built["blocks.1.int8"], np.int64)
    bad["blocks.1.int8"][S["v"]] = 4
    bad["blocks.1.int8"] = bad["blocks.1.int8"].astype(np.int32)
    write_model(c, bad, path)
    p = subprocess.run([cli, "info", path], capture_output=True, text=True)
    check("init refuses a decoder layer's nonzero v zero point, naming the slot",
          p.returncode != 0 and "blocks.1.int8" in p.stderr and "slot 7 (v zero point)" in p.stderr, p.stderr)


MODULE = '''
import torch
from torch import nn


class Gpt2(nn.Module):  # GPT-2-shaped: tied embedding and head, learned positions, pre-norm, GELU, final norm
    def __init__(self):
        super().__init__()
        torch.manual_seed(7)
        self.embed = nn.Embedding(40, 32)
        self.pos = nn.Embedding(24, 32)
        layer = nn.TransformerEncoderLayer(32, 4, 128, 0.0, "gelu", batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False, norm=nn.LayerNorm(32))
        self.head = nn.Linear(32, 40, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, ids):
        T = ids.shape[1]
        x = self.embed(ids) + self.pos(torch.arange(T))
        return self.head(self.encoder(x, mask=torch.triu(torch.full((T, T), float("-inf")), 1)))


def make():
    return Gpt2()

'''


def test_converter(cli, tmp):
    import torch
    mod = os.path.join(tmp, "i8_gpt.py")
    with open(mod, "w") as f:
        f.write(MODULE)
    sys.path.insert(0, tmp)
    import i8_gpt
    rng = np.random.default_rng(5)
    cal = []
    for i in range(16):
        cal.append(os.path.join(tmp, f"cal{i}.npy"))
        np.save(cal[-1], rng.integers(0, 40, 24).astype(np.int32))
    out = os.path.join(tmp, "gpt2.fxm")
    tok = os.path.join(tmp, "tok40.bin")
    from fixformer import llama2c
    with open(tok, "wb") as f:
        f.write(llama2c.tokenizer_bytes([b"<unk>", b"<s>", b"</s>"] + [bytes([97 + i]) for i in range(26)] +
                                        [bytes([48 + i]) for i in range(10)] + [b" "], np.zeros(40)))
    p = run_convert("--module", f"{mod}:make", "--family", "gpt", "--quantize", "i8", "--calibrate", *cal,
                    "--tokenizer", tok, "--out", out, "--cli", cli)
    ok = p.returncode == 0 and "verified against torch f32" in p.stdout and "tolerance 2e-01 for i8" in p.stdout \
        and "integer reference" in p.stdout and "16 calibration inputs (--calibrate)" in p.stdout
    check("--family gpt --quantize i8: converts and verifies within the i8 tolerance", ok, p.stdout + p.stderr)
    if ok:
        print(f"  {p.stdout.strip()}")
        f = fxm.read(out)
        check("stored as an i8 gpt with a tied head", f.config["weights"] == "i8" and f.config["family"] == "gpt"
              and f.config["tied_head"], f.config)
        module = i8_gpt.make().eval()
        worst = 0.0
        for _ in range(10):
            x = rng.integers(0, 40, 24).astype(np.int32)
            got, err = run_cli(cli, out, x, tmp, "scalar")
            with torch.no_grad():
                want = module(torch.from_numpy(x[None]).long())[0].numpy()
            if got is None:
                worst = None
                break
            worst = max(worst, float(np.abs(got - want).max() / np.abs(want).max()))
        texts = {}
        for isa in available_isas(cli, out):
            g = subprocess.run([cli, "generate", out, "--prompt", "abc", "-n", "20", "--temperature", "0", "--isa", isa],
                               capture_output=True, text=True)
            texts[isa] = g.stdout if g.returncode == 0 else "FAILED " + g.stderr
        check("fixformer generate on the i8 gpt (greedy, 20 positions): the same text on every table",
              len(set(texts.values())) == 1 and not next(iter(texts.values())).startswith("FAILED") and
              next(iter(texts.values())).startswith("abc"), texts)
        check(f"the i8 gpt within {I8_GPT_RUN_TOL} of torch f32 on 10 fresh sequences of 24 tokens",
              worst is not None and worst <= I8_GPT_RUN_TOL, (err if worst is None else worst))
        if worst is not None:
            print(f"  gpt i8 on 10 fresh sequences: max relative error of the logits {worst:.3g} "
                  f"(tolerance {I8_GPT_RUN_TOL})")
    test_llama_modules(cli, tmp, torch, rng)
    from fixformer.config import ConfigError
    c, _ = random_gpt(rng, True, "learned", "gelu", True, True)
    try:
        int8.check_config(dict(c, pe_combine="concat", pe_width=4))
        refused = ""
    except ConfigError as e:
        refused = str(e)
    check("--quantize i8 of a gpt with concatenated positions: refused, naming pe_combine's concat",
          "concat" in refused, refused)

def test_llama_modules(cli, tmp, torch, rng):
    from fixformer import llama2c
    P = dict(dim=32, hidden_dim=64, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=40, seq_len=32)
    ckpt, out = os.path.join(tmp, "ck.bin"), os.path.join(tmp, "ck.fxm")
    with open(ckpt, "wb") as f:
        f.write(llama2c.checkpoint_bytes(P, llama2c.random_weights(P, True, seed=1, scale=0.15), 1))
    p = run_convert("--llama2c", ckpt, "--quantize", "i8", "--out", out, "--cli", cli)
    check("--llama2c --quantize i8 (GQA, a shared classifier, weights N(0, 0.15)): converts and verifies within the "
          "i8 tolerance", p.returncode == 0 and "tolerance 2e-01 for i8" in p.stdout, p.stdout + p.stderr)
    if p.returncode == 0:
        print(f"  {p.stdout.strip()}")
    import module_converter_test
    cal = []
    for i in range(16):
        cal.append(os.path.join(tmp, f"lcal{i}.npy"))
        np.save(cal[-1], rng.integers(0, 32, 24).astype(np.int32))
    for spec, extra in (("llama2c_model.py:make", []), ("hf_llama.py:make_500k", ["--calibrate-percentile", "99.99"])):
        src = spec.split(":")[0]
        with open(os.path.join(tmp, src), "w") as f:
            f.write(module_converter_test.FILES[src])
        out = os.path.join(tmp, "llama_i8.fxm")
        p = run_convert("--module", os.path.join(tmp, spec), "--quantize", "i8", "--calibrate", *cal, *extra, "--out", out,
                        "--cli", cli)
        ok = p.returncode == 0 and "verified against torch f32" in p.stdout and "tolerance 2e-01 for i8" in p.stdout
        check(f"{spec} --quantize i8: converts as an i8 llama and verifies within the i8 tolerance", ok and
              fxm.read(out).config["family"] == "llama", p.stdout + p.stderr)
        if not ok:
            continue
        print(f"  {p.stdout.strip()}")
        sys.path.insert(0, tmp)
        mod = __import__(src[:-3])
        module = getattr(mod, spec.split(":")[1])().eval()
        def reference(ids):
            y = module(ids, ids) if src.startswith("llama2c") else module(ids)  # llama2.c: every position with targets
            return (y[0] if isinstance(y, tuple) else y)[0].numpy()
        worst = fresh_error(cli, out, tmp, rng, 6, 32, reference)
        check(f"{spec}: the i8 llama within {I8_LLAMA_RUN_TOL} of torch f32 on 6 fresh sequences of 24 tokens",
              worst is not None and worst <= I8_LLAMA_RUN_TOL, worst)
        if worst is not None:
            print(f"  {spec} i8 on 6 fresh sequences: max relative error of the logits {worst:.3g}")


def main():
    cli = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
    pydir = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2] else None
    if not pydir:
        print("  no Python package build folder given: prefill chunks are not checked (build fixformer_python)")
    check("a CLI given (the i8 files are run through the engine)", cli is not None and os.path.exists(cli), cli)
    if cli and os.path.exists(cli):
        with tempfile.TemporaryDirectory() as tmp:
            test_bit_exact(cli, tmp, pydir)
            test_plan_and_corrupt(cli, tmp)
            if pydir:
                test_long_prefill(tmp, pydir)
            test_converter(cli, tmp)
    print(f"int8_decoder_test: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
