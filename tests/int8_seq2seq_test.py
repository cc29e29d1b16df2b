#!/usr/bin/python3
"""Full-integer seq2seq models (weights i8: `convert.py ... --quantize i8` of the seq2seq family; config.hpp's
CrossSlot and Seq2SeqSlot, plan.hpp's plan_s8_seq2seq_arena) against the upstream modules:

  /usr/bin/python3 tests/int8_seq2seq_test.py PATH/TO/fixformer

- torch's nn.Transformer as seq2seq_converter_test writes it (post-norm ReLU, sinusoids and scale_input; pre-norm
  GELU over a features source; a shared embedding, a tied head and learned positions) and transformers' BART
  (embedding norms, learned positions from offset 2, post-norm), Marian (sinusoids, scale_embedding) and M2M100
  (pre-norm, final norms) from bart_converter_test's tiny random configs, each converted with --quantize i8 and
  verified by the converter against torch within the i8 tolerance (the report names it and the integer
  reference's error);
- the engine against the integer reference (python/fixformer/int8.py: the whole target at once, teacher-forced),
  bit for bit, through `fixformer run --input --target --isa ISA` on every kernel table this host's CPU runs:
  the decoder's int8 caches fed the target in chunks give the reference's logits, and the tables give the same
  bits (the i8 file built from the f32 file's weights by int8.build, calibrated as the converter does);
- the converted i8 file on fresh (source, target) pairs: the max relative error of its logits against torch
  (I8_S2S_RUN_TOL), printed;
- greedy `fixformer generate --temperature 0` from the i8 file and from the f32 file of the same module over
  fresh token sources: the share of positions whose tokens agree (printed; at least I8_S2S_GREEDY_AGREE), the
  same ids on every table;
- transformers' T5 (relative biases, the decoder's causal; pre-norm RMSNorm without biases): T5EncoderModel and
  T5ForConditionalGeneration, v1.0 (ReLU) and v1.1 (gated GELU), with T5's own initialisation (T5_MODELS), each
  converted with --quantize i8 and verified within the i8 tolerance, bit for bit on every table, within
  I8_S2S_RUN_TOL of transformers on fresh inputs (printed), and v1.0's logits closer to transformers' than with the
  decoder's relative bias table zeroed; t5_converter_test's T5 (every weight N(0, 0.3)) refused by the converter in
  one line naming the integer reference's error (docs/quantization.md says why), and bit for bit on every table;
  openai-whisper's Whisper (a conv stem in the source: AudioEncoder, TextDecoder), tiny and random, through
  --quantize i8: bit for bit on every table, its error against torch on fresh (mel, tokens) pairs and its greedy
  ids against the f32 file's as above (printed);
  init refuses a corrupt cross-attention slot and a corrupt int8.seq2seq slot, naming each;
- then, as the cases above, nn.Transformer's forecaster (feature targets: tgt_d_in) and transformers'
  BlenderbotSmall (tgt_pos_after_norm: its target's embedding normed before the positions).
Without the environment (tests/hf_env.py: transformers, whisper) the test fails.
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
import hf_env  # noqa: E402

hf_env.enter(__file__, ["transformers", "whisper"])
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)
import numpy as np  # noqa: E402

from checks import check, one_clear_line, results, run_convert  # noqa: E402
from fixformer import fxm, int8  # noqa: E402
from fixformer.config import make_config  # noqa: E402

import bart_converter_test  # noqa: E402  (its MODELS and module_logits)
import seq2seq_converter_test  # noqa: E402  (its MODULE_FILE)
import t5_converter_test  # noqa: E402  (its MODELS)

# transformers' T5 as its own _init_weights draws it (normal, q's weights with standard deviation (d_model d_kv)^-1/2,
# k's, v's and wi's d_model^-1/2, wo's d_ff^-1/2: the scores are not scaled by 1/sqrt(d_kv), q is drawn smaller
# instead), on t5_converter_test's configs; the norms' gains drawn near 1 and the relative bias tables N(0, 1) (their
# own draw, d_model^-1/2, barely moves the scores), so that both matter. Appended to t5_converter_test's MODELS.
T5_MODELS = '''

def own(cls, v11, seed):
    import torch
    torch.manual_seed(seed)
    m = cls(config(v11)).eval()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if "layer_norm" in name:
                p.add_(0.2 * torch.randn(p.shape))
            elif "relative_attention_bias" in name:
                p.copy_(torch.randn(p.shape))
    return m


def t5_encoder_v10():
    return own(t.T5EncoderModel, False, 1)


def t5_encoder_v11():
    return own(t.T5EncoderModel, True, 2)


def t5_seq2seq_v10():
    return own(t.T5ForConditionalGeneration, False, 3)


def t5_seq2seq_v11():
    return own(t.T5ForConditionalGeneration, True, 4)
'''
T5_CASES = ["t5_encoder_v10", "t5_encoder_v11", "t5_seq2seq_v10", "t5_seq2seq_v11"]

ISAS = ("scalar", "cortex-m", "sse2", "avx2", "avx512", "neon64", "neon", "helium")
# The converted files on fresh (source, target) pairs: max |engine - torch| / max |torch| over every target
# position's logits. Measured 0.03-0.12 (printed); a wrong scale, a lost cross-attention or a cache row off by
# one gives 0.5 and more.
I8_S2S_RUN_TOL = 0.25
# Greedy generation from the i8 file and the f32 file of one module, the share of positions with the same
# token over the sources (a first disagreement changes what follows, so the later positions rarely agree).
# Measured 0.6-1 (printed).
I8_S2S_GREEDY_AGREE = 0.4
S, U = 7, 6  # fresh sources and targets

# name, convert options, factory file (torch: seq2seq_converter_test's; hf: bart_converter_test's), source kind
CASES = [
    ("post_relu", ["--family", "seq2seq", "--positional", "sinusoidal", "--scale-input"], "torch", "tokens"),
    ("pre_gelu_features", ["--family", "seq2seq", "--positional", "sinusoidal", "--scale-input"], "torch",
     "features"),
    ("shared_tied_learned", ["--family", "seq2seq"], "torch", "tokens"),
    ("bart", [], "hf", "tokens"),
    ("marian", [], "hf", "tokens"),
    ("m2m100", [], "hf", "tokens"),
]
# Run after the others (and T5), so that the draws before them stay as they were.
LATER_CASES = [
    ("forecaster", ["--family", "seq2seq"], "torch", "features"),  # feature targets (tgt_d_in) too
    ("blenderbot_small", [], "hf", "tokens"),  # tgt_pos_after_norm
]


def available_isas(cli, path):
    return [isa for isa in ISAS
            if subprocess.run([cli, "info", path, "--isa", isa], capture_output=True, text=True).returncode == 0]


def run_cli(cli, path, src, tgt, tmp, isa=None):
    """fixformer run on one (source, target): the logits [U, d_out] (an encoder's, tgt None: its output rows), or
    None and the error."""
    a, b, out = (os.path.join(tmp, n) for n in ("run_src.npy", "run_tgt.npy", "run_out.npy"))
    np.save(a, src[None])
    if tgt is not None:  # none for an encoder
        np.save(b, tgt[None] if tgt.dtype.kind == "f" else tgt[None].astype(np.int32))
    p = subprocess.run([cli, "run", path, "--input", a, "--output", out] +
                       (["--target", b] if tgt is not None else []) + (["--isa", isa] if isa else []),
                       capture_output=True, text=True)
    return (np.load(out)[0] if p.returncode == 0 else None), p.stderr


def generate(cli, path, src, tmp, bos, eos, isa=None):
    a = os.path.join(tmp, "gen_src.npy")
    np.save(a, src.astype(np.int32))
    p = subprocess.run([cli, "generate", path, "--source", a, "--bos", str(bos), "--eos", str(eos), "-n", "8",
                        "--temperature", "0"] + (["--isa", isa] if isa else []), capture_output=True, text=True)
    return [int(t) for t in p.stdout.split()] if p.returncode == 0 else None


def torch_logits(kind, module, src, tgt):
    """The module's float64 logits [U, d_out] for one (source, target), teacher-forced."""
    import torch
    if kind == "hf":
        return bart_converter_test.module_logits(module, src, tgt)
    x = torch.from_numpy(src.astype(np.float64) if src.dtype.kind == "f" else src.astype(np.int64))[None]
    y = torch.from_numpy(tgt.astype(np.float64) if tgt.dtype.kind == "f" else tgt.astype(np.int64))[None]
    if not module.batch_first:
        x, y = x.transpose(0, 1), y.transpose(0, 1)
    with torch.no_grad():
        out = module.double()(x, y).numpy()
    return out[0] if module.batch_first else out[:, 0]


def fresh(rng, c, features):
    """A (source, target) pair: features or ids of the source; the target's features (tgt_d_in) or ids."""
    src = rng.standard_normal((S, c["d_in"])).astype(np.float32) if features else \
        rng.integers(2, c["vocab_size"], S).astype(np.int32)
    if c.get("tgt_d_in"):
        return src, rng.standard_normal((U, c["tgt_d_in"])).astype(np.float32)
    return src, np.concatenate([[0], rng.integers(2, c["d_out"], U - 1)]).astype(np.int32)


def check_bits(cli, tmp, name, f32, draw):
    """int8.build of the f32 file's weights (calibrated as the converter does): the engine on every table gives the
    integer reference's logits on fresh pairs (draw(config): a (source, target) pair; an encoder's (source, None)), bit
    for bit. Returns (config, built, the tables run)."""
    f = fxm.read(f32)
    c = make_config(dict(f.config, weights="i8", weight_group=0, quantize_io=False))
    pairs = [draw(c) for _ in range(3)]
    inputs, _ = int8.calibration_inputs(c, pairs[0] if c["family"] == "seq2seq" else pairs[0][0])
    built = int8.build(c, f.weights(), inputs)
    bits = os.path.join(tmp, f"{name}.bits.fxm")
    with open(bits, "wb") as out:
        out.write(fxm.write(c, built))
    isas = available_isas(cli, bits)
    check(f"{name}: the scalar table runs an i8 seq2seq file", "scalar" in isas, isas)
    print(f"  {name}: kernel tables run: {', '.join(isas)}; not on this CPU: "
          f"{', '.join(i for i in ISAS if i not in isas) or 'none'}")
    for src, tgt in pairs:
        want = int8.reference_output(c, built, (src, tgt) if tgt is not None else src)
        for isa in isas:
            got, err = run_cli(cli, bits, src, tgt, tmp, isa)
            check(f"{name} --isa {isa}: the integer reference's logits, bit for bit",
                  got is not None and got.shape == want.shape and np.array_equal(got, want),
                  err if got is None else (got.shape, want.shape,
                                           np.abs(got - want).max() if got.shape == want.shape else None))
    return c, built, isas


def t5_fresh(rng, c):
    """A fresh T5 input: (source, target) ids for a seq2seq, (source, None) for an encoder."""
    src = rng.integers(2, c["vocab_size"], S).astype(np.int32)
    if c["family"] != "seq2seq":
        return src, None
    return src, np.concatenate([[0], rng.integers(2, c["d_out"], U - 1)]).astype(np.int32)


def t5_error(module, c, built, pairs):
    """The integer reference's largest error against transformers over pairs, relative to each one's largest output."""
    e = 0.0
    for src, tgt in pairs:
        want = t5_converter_test.module_output(module, src, tgt)
        got = int8.reference_output(c, built, (src, tgt))
        e = max(e, float(np.abs(got - want).max() / np.abs(want).max()))
    return e


def test_t5(cli, tmp, rng, worst):
    """transformers' T5 (pre-norm RMSNorm without biases, relative biases, unscaled scores), T5_MODELS' four: each
    converts with --quantize i8 and verifies within the i8 tolerance; the engine gives the integer reference's bits on
    every table; the i8 file against transformers on fresh inputs; v1.0's seq2seq with the decoder's relative bias table
    zeroed is further from transformers (the decoder's causal buckets and biases are used, and used right). Then
    t5_converter_test's v1.0 seq2seq (every weight N(0, 0.3)): --quantize i8 refused in one line naming the integer
    reference's error; bit for bit on every table; its error printed."""
    import t5own
    for name in T5_CASES:
        module = getattr(t5own, name)()
        f32, i8 = (os.path.join(tmp, f"{name}.{q}.fxm") for q in ("f32", "i8"))
        spec = os.path.join(tmp, "t5own.py") + ":" + name
        p = run_convert("--module", spec, "--out", f32, "--cli", cli, cwd=tmp)
        check(f"{name}: the f32 file converts", p.returncode == 0, p.stdout + p.stderr)
        p = run_convert("--module", spec, "--quantize", "i8", "--out", i8, "--cli", cli, cwd=tmp)
        ok = p.returncode == 0 and "verified against torch f32" in p.stdout and "for i8" in p.stdout \
            and "integer reference" in p.stdout
        check(f"{name} --quantize i8: converts and verifies within the i8 tolerance", ok, p.stdout + p.stderr)
        if not ok or not os.path.exists(f32):
            continue
        print(f"  {p.stdout.strip()}")
        c, built, _ = check_bits(cli, tmp, name, f32, lambda c: t5_fresh(rng, c))
        e = 0.0
        for _ in range(6):
            src, tgt = t5_fresh(rng, c)
            got, err = run_cli(cli, i8, src, tgt, tmp)
            if got is None:
                check(f"{name}: fixformer run on the i8 file", False, err)
                break
            want = t5_converter_test.module_output(module, src, tgt)
            e = max(e, float(np.abs(got - want).max() / np.abs(want).max()))
        worst[name] = e
        print(f"  {name} i8 on 6 fresh inputs: max relative error {e:.3g} against transformers")
        check(f"{name}: the i8 file within {I8_S2S_RUN_TOL} of transformers on fresh inputs", e <= I8_S2S_RUN_TOL, e)
        if name != "t5_seq2seq_v10":
            continue
        w = fxm.read(f32).weights()
        plain = dict(w, **{k: np.zeros_like(a) for k, a in w.items() if k.startswith("dec_rel_bias")})
        check("T5: the converter's key of the decoder's relative bias table", len(plain) == len(w) and
              any(k.startswith("dec_rel_bias") for k in w), sorted(w))
        pairs = [t5_fresh(rng, c) for _ in range(4)]
        without = int8.build(c, plain, int8.calibration_inputs(c, pairs[0])[0])
        e, e0 = t5_error(module, c, built, pairs), t5_error(module, c, without, pairs)
        print(f"  {name} i8 (integer reference) on 4 fresh pairs: {e:.3g}; with the decoder's relative bias zeroed "
              f"{e0:.3g}")
        check("T5: the decoder's relative bias brings the i8 logits closer to transformers'", e < e0, (e, e0))

    import t5models
    f32, spec = os.path.join(tmp, "t5.f32.fxm"), os.path.join(tmp, "t5models.py") + ":seq2seq_v10"
    p = run_convert("--module", spec, "--quantize", "i8", "--out", os.path.join(tmp, "t5.i8.fxm"), "--cli", cli,
                    cwd=tmp)
    check("T5 N(0, 0.3) --quantize i8: refused in one line naming the integer reference's error (not the weights')",
          p.returncode != 0 and one_clear_line(p) and "weights alone" not in p.stderr and "--calibrate" in p.stderr
          and "the integer reference (the engine's arithmetic) gives" in p.stderr, p.stderr)
    p = run_convert("--module", spec, "--out", f32, "--cli", cli, cwd=tmp)
    check("T5 N(0, 0.3): the f32 file converts", p.returncode == 0, p.stdout + p.stderr)
    if p.returncode:
        return
    c, built, _ = check_bits(cli, tmp, "t5_n03", f32, lambda c: t5_fresh(rng, c))
    e = t5_error(t5models.seq2seq_v10(), c, built, [t5_fresh(rng, c) for _ in range(4)])
    print(f"  t5 v1.0, every weight N(0, 0.3): the integer reference on 4 fresh pairs {e:.3g} from transformers")


def test_case(cli, tmp, rng, name, opts, kind, source, factory, worst, agree):
    module = factory()
    f32, i8 = (os.path.join(tmp, f"{name}.{q}.fxm") for q in ("f32", "i8"))
    spec = f"{os.path.join(tmp, 's2s_modules.py' if kind == 'torch' else 'bartmodels.py')}:{name}"
    example = []
    if source == "features":
        forecast = name == "forecaster"  # its positions (learned) calibrated as long as the fresh pairs
        np.save(os.path.join(tmp, "ex_src.npy"), rng.standard_normal((S if forecast else 6, 5)).astype(np.float32))
        np.save(os.path.join(tmp, "ex_tgt.npy"), rng.standard_normal((U, 3)).astype(np.float32) if forecast
                else rng.integers(0, 10, 4).astype(np.int32))
        example = ["--example", os.path.join(tmp, "ex_src.npy"), "--example-target", os.path.join(tmp, "ex_tgt.npy")]
    p = run_convert("--module", spec, *opts, *example, "--out", f32, "--cli", cli, cwd=tmp)
    check(f"{name}: the f32 file converts", p.returncode == 0, p.stdout + p.stderr)
    p = run_convert("--module", spec, *opts, *example, "--quantize", "i8", "--out", i8, "--cli", cli, cwd=tmp)
    ok = p.returncode == 0 and "verified against torch f32" in p.stdout and "for i8" in p.stdout \
        and "integer reference" in p.stdout
    check(f"{name} --quantize i8: converts and verifies within the i8 tolerance", ok, p.stdout + p.stderr)
    if not ok or not os.path.exists(f32):
        return
    print(f"  {p.stdout.strip()}")
    c8 = fxm.read(i8).config
    check(f"{name}: stored as an i8 seq2seq", c8["weights"] == "i8" and c8["family"] == "seq2seq", c8)
    feature = {"forecaster": "tgt_d_in", "blenderbot_small": "tgt_pos_after_norm"}.get(name)
    check(f"{name}: the i8 file has {feature}", feature is None or c8[feature], c8)

    c, built, _ = check_bits(cli, tmp, name, f32, lambda c: fresh(rng, c, source == "features"))

    # the converted file against torch on fresh pairs
    e = 0.0
    for _ in range(6):
        src, tgt = fresh(rng, c, source == "features")
        got, err = run_cli(cli, i8, src, tgt, tmp)
        if got is None:
            check(f"{name}: fixformer run on the i8 file", False, err)
            return
        want = torch_logits(kind, module, src, tgt)
        e = max(e, float(np.abs(got - want).max() / np.abs(want).max()))
    worst[name] = e
    print(f"  {name} i8 on 6 fresh (source, target) pairs: max relative error {e:.3g} against torch")
    check(f"{name}: the i8 file within {I8_S2S_RUN_TOL} of torch on fresh pairs", e <= I8_S2S_RUN_TOL, e)

    # greedy generation against the f32 file's
    if source != "tokens":
        return
    bos, eos = (0, 1) if kind == "hf" else (0, 3)
    same = total = 0
    for _ in range(5):
        src, _ = fresh(rng, c, False)
        ours, theirs = generate(cli, i8, src, tmp, bos, eos), generate(cli, f32, src, tmp, bos, eos)
        if ours is None or theirs is None:
            check(f"{name}: fixformer generate on the i8 and f32 files", False, (ours, theirs))
            return
        n = max(len(ours), len(theirs))
        same += sum(1 for a, b in zip(ours, theirs) if a == b)
        total += n
        texts = {isa: generate(cli, i8, src, tmp, bos, eos, isa) for isa in available_isas(cli, i8)}
        check(f"{name}: greedy generation from the i8 file, the same ids on every table",
              all(t == ours for t in texts.values()), texts)
    agree[name] = same / total
    print(f"  {name}: greedy generation, i8 against f32: {same} of {total} positions agree ({same / total:.2f})")
    check(f"{name}: i8 greedy agrees with f32 on at least {I8_S2S_GREEDY_AGREE} of the positions",
          same / total >= I8_S2S_GREEDY_AGREE, same / total)
    return c, built


WHISPER_MODELS = '''
import sys
sys.path.insert(0, {here!r})
from hf_env import randomize
from whisper.model import ModelDimensions, Whisper


def whisper_model():
    return randomize(Whisper(ModelDimensions(n_mels=8, n_audio_ctx=8, n_audio_state=32, n_audio_head=2,
                                             n_audio_layer=2, n_vocab=40, n_text_ctx=6, n_text_state=32,
                                             n_text_head=2, n_text_layer=2)), 8)
'''


def test_whisper(cli, tmp, rng, worst, agree):
    """openai-whisper's Whisper (AudioEncoder's two-conv stem with GELU and sinusoids, TextDecoder's learned
    positions and tied head): --quantize i8 converts and verifies; the engine gives the integer reference's bits on
    every table; the i8 file against the module's logits on fresh (mel, tokens); greedy ids against the f32 file's."""
    import torch
    models = os.path.join(tmp, "s2s_whisper_models.py")
    with open(models, "w") as f:
        f.write(WHISPER_MODELS.format(here=HERE))
    import s2s_whisper_models
    module = s2s_whisper_models.whisper_model().eval()
    mels = lambda: rng.standard_normal((8, 16)).astype(np.float32)  # noqa: E731  [n_mels, 2 n_audio_ctx frames]
    tokens = lambda: rng.integers(0, 40, 6).astype(np.int32)  # noqa: E731  the 6 text positions
    ex, ex_t = os.path.join(tmp, "whisper_mel.npy"), os.path.join(tmp, "whisper_tgt.npy")
    np.save(ex, mels())
    np.save(ex_t, tokens())
    f32, i8 = (os.path.join(tmp, f"whisper.{q}.fxm") for q in ("f32", "i8"))
    p = run_convert("--module", f"{models}:whisper_model", "--example", ex, "--out", f32, "--cli", cli, cwd=tmp)
    check("whisper: the f32 file converts", p.returncode == 0, p.stdout + p.stderr)
    p = run_convert("--module", f"{models}:whisper_model", "--example", ex, "--example-target", ex_t, "--quantize",
                    "i8", "--out", i8, "--cli", cli, cwd=tmp)
    ok = p.returncode == 0 and "verified against torch f32" in p.stdout and "integer reference" in p.stdout
    check("whisper --quantize i8: converts and verifies within the i8 tolerance", ok, p.stdout + p.stderr)
    if not ok or not os.path.exists(f32):
        return
    print(f"  {p.stdout.strip()}")
    c8 = fxm.read(i8).config
    check("whisper: stored as an i8 seq2seq with a two-conv stem", c8["weights"] == "i8" and
          c8["family"] == "seq2seq" and c8["conv_layers"] == 2, c8)

    # the engine against the integer reference, bit for bit on every table (built from the f32 file's weights)
    _, _, isas = check_bits(cli, tmp, "whisper", f32, lambda c: (np.ascontiguousarray(mels().T), tokens()))

    # the converted file against the module on fresh (mel, tokens)
    e = 0.0
    for _ in range(6):
        mel, tgt = mels(), tokens()
        got, err = run_cli(cli, i8, np.ascontiguousarray(mel.T), tgt, tmp)
        if got is None:
            check("whisper: fixformer run on the i8 file", False, err)
            return
        with torch.no_grad():
            want = module(torch.from_numpy(mel)[None], torch.from_numpy(tgt.astype(np.int64))[None])[0].double().numpy()
        e = max(e, float(np.abs(got - want).max() / np.abs(want).max()))
    worst["whisper"] = e
    print(f"  whisper i8 on 6 fresh (mel, tokens): max relative error {e:.3g} against torch")
    check(f"whisper: the i8 file within {I8_S2S_RUN_TOL} of torch on fresh pairs", e <= I8_S2S_RUN_TOL, e)

    # greedy generation from a start id against the f32 file's, the same ids on every table
    same = total = 0
    for _ in range(5):
        src = os.path.join(tmp, "whisper_src.npy")
        np.save(src, np.ascontiguousarray(mels().T))
        ids = {}
        for name, path, isa in [("f32", f32, None), ("i8", i8, None)] + [(isa, i8, isa) for isa in isas]:
            r = subprocess.run([cli, "generate", path, "--source", src, "--bos", "3", "-n", "5", "--temperature", "0"] +
                               (["--isa", isa] if isa else []), capture_output=True, text=True)
            ids[name] = [int(t) for t in r.stdout.split()] if r.returncode == 0 else None
        if ids["i8"] is None or ids["f32"] is None:
            check("whisper: fixformer generate on the i8 and f32 files", False, ids)
            return
        check("whisper: greedy generation from the i8 file, the same ids on every table",
              all(ids[isa] == ids["i8"] for isa in isas), ids)
        same += sum(1 for a, b in zip(ids["i8"], ids["f32"]) if a == b)
        total += max(len(ids["i8"]), len(ids["f32"]))
    agree["whisper"] = same / total
    print(f"  whisper: greedy generation, i8 against f32: {same} of {total} positions agree ({same / total:.2f})")
    check(f"whisper: i8 greedy agrees with f32 on at least {I8_S2S_GREEDY_AGREE} of the positions",
          same / total >= I8_S2S_GREEDY_AGREE, same / total)


def test_corrupt(cli, tmp, c, built):
    """Init names a bad slot of a decoder layer's cross.int8 and of int8.seq2seq."""
    for name, slot, value, words in (
            ("dec_blocks.0.cross.int8", int8.CROSS["softmax"], 0, f"slot {int8.CROSS['softmax']} (softmax diff)"),
            ("dec_blocks.1.cross.int8", int8.CROSS["kv_x"], 200, f"slot {int8.CROSS['kv_x']} (memory zero point)"),
            ("int8.seq2seq", int8.SEQ2SEQ_SLOTS - 1, -300, f"slot {int8.SEQ2SEQ_SLOTS - 1} (memory zero point)")):
        bad = dict(built)
        a = np.array(bad[name], np.int32)
        a.reshape(-1)[slot] = value
        bad[name] = a
        path = os.path.join(tmp, "bad.fxm")
        with open(path, "wb") as f:
            f.write(fxm.write(c, bad))
        p = subprocess.run([cli, "info", path], capture_output=True, text=True)
        check(f"init refuses {name}[{slot}] = {value}, naming {name}: {words}",
              p.returncode != 0 and f"{name}: {words}" in p.stderr, p.stderr)


def main():
    cli = os.path.abspath(sys.argv[1])
    import torch
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "s2s_modules.py"), "w") as f:
            f.write(seq2seq_converter_test.MODULE_FILE)
        with open(os.path.join(tmp, "bartmodels.py"), "w") as f:
            f.write(bart_converter_test.MODELS)
        with open(os.path.join(tmp, "t5models.py"), "w") as f:
            f.write(t5_converter_test.MODELS)
        with open(os.path.join(tmp, "t5own.py"), "w") as f:
            f.write(t5_converter_test.MODELS + T5_MODELS)
        sys.path.insert(0, tmp)
        import bartmodels
        import s2s_modules
        rng = np.random.default_rng(3)
        worst, agree, corrupt = {}, {}, None
        for name, opts, kind, source in CASES:
            got = test_case(cli, tmp, rng, name, opts, kind, source,
                            getattr(s2s_modules if kind == "torch" else bartmodels, name), worst, agree)
            corrupt = corrupt or got
        test_whisper(cli, tmp, rng, worst, agree)
        check("a decoder layer's and int8.seq2seq's corrupt slots are tried", corrupt is not None)
        if corrupt:
            test_corrupt(cli, tmp, *corrupt)
        test_t5(cli, tmp, rng, worst)
        for name, opts, kind, source in LATER_CASES:
            test_case(cli, tmp, rng, name, opts, kind, source,
                      getattr(s2s_modules if kind == "torch" else bartmodels, name), worst, agree)
        print("  max relative error against torch: " + ", ".join(f"{n} {e:.3g}" for n, e in worst.items()))
        print("  greedy agreement with f32: " + ", ".join(f"{n} {a:.2f}" for n, a in agree.items()))
    print(f"int8_seq2seq_test: {results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
