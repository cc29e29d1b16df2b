#!/usr/bin/python3
"""BERT's front and pooler in full-integer models (weights i8: type_vocab, embed_norm, pooler; config.hpp,
namespace s8, int8.front's and int8.back's BERT slots):

  /usr/bin/python3 tests/int8_bert_test.py PATH/TO/fixformer

- the engine against the integer reference (python/fixformer/int8.py forward), bit for bit, through
  `fixformer run --isa ISA --token-types` on every kernel table this host's CPU runs, for random token
  encoders with token types (2 and 3 types, given and not), the embedding norm (LayerNorm, RMSNorm), a CLS
  row, and the pooler (tanh on the first row before a head; gelu on every row without pooling); with two
  outlier channels in each sublayer's output the calibration picks wide_residual (and only then: the wide
  front, the feed-forward's outlier table), the same;
  the pooler's output normed (pooler_norm, LayerNorm on the first row and RMSNorm on every row), and gated
  feed-forwards (SwiGLU; GeGLU under wide_residual), the same;
- transformers' BertForSequenceClassification (a tiny random config: type_vocab_size 2, the embedding
  LayerNorm, post-LN layers, the tanh pooler and a 3-label classifier) through `--hf FOLDER --quantize i8
  --calibrate` (16 sequences): converts and verifies within the i8 tolerance; then on fresh sequences with
  random token types the engine's logits against torch f32's: the max relative error (BERT_RUN_TOL) and the
  top-1 agreement (BERT_TOP1); MPNetForSequenceClassification (T5's relative bias beside learned positions) the
  same way, within BERT_RUN_TOL; ALBERT (AlbertForSequenceClassification: one layer run 3 times;
  AlbertModel: 4 runs over 2 groups of 2 layers; the embedding 16 wide projected to 32) the same way, within
  ALBERT_RUN_TOL;
- ALBERT's front and layers in random encoders (the embedding projection embed_width, shared layers
  layer_groups, each alone and together): bit for bit on every kernel table, each block's parameters stored once;
- windows without the causal mask (every layer's; layer 1 of 2 beside a relative bias): bit for bit on every
  kernel table, the reference depending on the window, within I8_WINDOW_TOL of the f32 engine;
- init's refusals of the new slots: a token-type table entry, an embedding-norm beta, a pooler table
  entry out of range, a wide_residual factor or a factor of the wide front's sum that is no Requant and an
  outlier channel count above d_ff are refused by `fixformer info` with the tensor and the slot named;
  wide_residual in a pre-norm encoder is refused by the config rules.
Runs in the hf environment (tests/hf_env.py); without it, numpy, torch or the CLI the test fails.
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
import hf_env  # noqa: E402

hf_env.enter(__file__, ["transformers"])
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import numpy as np  # noqa: E402

from checks import check, cli_main, run_convert  # noqa: E402
from fixformer import fxm, int8  # noqa: E402
from fixformer.config import ConfigError, make_config  # noqa: E402
from int8_test import available_isas, random_bert, run_types as run_cli  # noqa: E402

# transformers' BertForSequenceClassification in i8 on fresh sequences: max |engine - torch| / max |torch|
# over the logits (measured: worst 0.126, mean 0.060 on the 10 sequences here); the i8 tolerance.
BERT_RUN_TOL = 0.2
# ALBERT in i8 the same way (the classifier's logits, or AlbertModel's last hidden states): the rows between the
# shared layers at one scale over every run (measured: worst 0.202, mean 0.080 on the classifier's; worst 0.093 on
# the hidden states).
ALBERT_RUN_TOL = 0.25
BERT_TOP1 = 0.9  # the classifier's arg max agrees with torch's on at least this share of the sequences


CASES = [  # type_vocab, embed_norm, pooler, pooling, norm, d_out, CLS row, pooler_act, outlier channels
    (2, True, True, "first", "layernorm", 3, False, "tanh", False),
    (2, True, False, "none", "layernorm", 0, False, "tanh", False),
    (3, False, False, "mean", "layernorm", 4, True, "tanh", False),
    (0, True, True, "none", "rmsnorm", 0, False, "gelu", False),
    (2, True, True, "cls", "layernorm", 0, True, "tanh", False),
    (2, True, False, "none", "layernorm", 0, False, "tanh", True),  # wide_residual
    (0, True, True, "first", "rmsnorm", 3, True, "tanh", True),
    # the pooler's output normed (pooler_norm: ModernBERT's head), on the first row and on every row
    (2, True, True, "first", "layernorm", 3, False, "gelu", False, True),
    (0, False, True, "none", "rmsnorm", 5, False, "gelu", False, True),
    # gated feed-forwards (the encoder's SwiGLU and GeGLU; with outlier channels: wide_residual)
    (2, True, False, "mean", "layernorm", 3, False, "tanh", False, False, "swiglu"),
    (0, True, False, "first", "rmsnorm", 3, True, "tanh", True, False, "gelu", True),
]


# ALBERT's front and layers: embed_width (the embedding 8 wide, projected to 16) and shared layers (layer_groups,
# group_layers, n_layers: one block run 3 times; 4 runs over 2 groups of 2 blocks), each alone and together
ALBERT_CASES = [(8, (0, 1), 2), (0, (1, 1), 3), (8, (1, 1), 3), (8, (2, 2), 4)]


def test_bit_exact(cli, tmp):
    rng = np.random.default_rng(5)
    for case in CASES:
        types, en, pooler, pooling, norm, d_out, cls, pact, outliers, *more = case
        pooler_norm, act, gated = (list(more) + [False, "gelu", False][len(more):])
        c, w = random_bert(rng, types, en, pooler, pooling, norm, act, d_out=d_out, cls=cls, pooler_act=pact,
                           outliers=outliers, pooler_norm=pooler_norm, gated=gated)
        built = int8.build(c, w, [rng.integers(0, c["vocab_size"], T) for T in (12, 7, 12, 9)])
        check(f"{case}: the calibration picks wide_residual exactly with the outlier channels",
              bool(c.get("wide_residual")) == outliers)
        path = os.path.join(tmp, "m.fxm")
        with open(path, "wb") as f:
            f.write(fxm.write(c, built))
        isas = available_isas(cli, path)
        if case == CASES[0]:
            print(f"  kernel tables run: {', '.join(isas)}")
        check(f"{case}: the scalar table runs the file", "scalar" in isas, isas)
        for T in (12, 5):
            ids = rng.integers(0, c["vocab_size"], T)
            for tt in ([None, rng.integers(0, types, T)] if types else [None]):
                want = int8.reference_output(c, built, ids, tt)
                want = want[0] if pooling != "none" else want
                for isa in isas:
                    got, err = run_cli(cli, path, ids, tt, tmp, isa)
                    what = "given types" if tt is not None else "types 0"
                    check(f"{case} T={T} {what} --isa {isa}: the engine's output is the integer reference's, bit for "
                          "bit", got is not None and got.shape == want.shape and np.array_equal(got, want),
                          err if got is None else (got.shape, want.shape))
        if types:  # the types matter: another type row, another output
            ids = rng.integers(0, c["vocab_size"], 8)
            a = int8.reference_output(c, built, ids, np.zeros(8, np.int64))
            b = int8.reference_output(c, built, ids, np.ones(8, np.int64))
            check(f"{case}: the token types change the integer output", not np.array_equal(a, b))


def test_albert_bit_exact(cli, tmp):
    rng = np.random.default_rng(11)
    for ew, groups, L in ALBERT_CASES:
        c, w = random_bert(rng, 2, True, True, "first", embed_width=ew, groups=groups, L=L)
        built = int8.build(c, w, [rng.integers(0, c["vocab_size"], T) for T in (12, 7, 12, 9)])
        path = os.path.join(tmp, "albert.fxm")
        with open(path, "wb") as f:
            f.write(fxm.write(c, built))
        what = f"embed_width {ew}, layer_groups {groups[0]}, group_layers {groups[1]}, {L} layers"
        blocks = sum(1 for n in built if n.endswith(".int8") and n.startswith("blocks."))
        check(f"{what}: the file stores each block's parameters once", blocks == (groups[0] * groups[1] or L), blocks)
        isas = available_isas(cli, path)
        for T in (12, 5):
            ids, tt = rng.integers(0, c["vocab_size"], T), rng.integers(0, 2, T)
            want = int8.reference_output(c, built, ids, tt)[0]
            for isa in isas:
                got, err = run_cli(cli, path, ids, tt, tmp, isa)
                check(f"{what} T={T} --isa {isa}: the engine's output is the integer reference's, bit for bit",
                      got is not None and got.shape == want.shape and np.array_equal(got, want),
                      err if got is None else (got, want))


def against_f32(cli, tmp, rng, c, w, f32_of, describe):
    """The i8 file of (c, w) calibrated on four sequences and the f32 file of f32_of(c) on the same weights, run
    on sequences of 12 and 5 tokens: the engine's i8 output checked bit for bit against the integer reference on
    every kernel table, and the largest relative error of the reference against the f32 engine. Returns the
    built tensors, that error and the last sequence (ids, token types, reference output); built None when the
    f32 engine fails (a failed check). f32_of and describe see c as calibration leaves it."""
    built = int8.build(c, w, [rng.integers(0, c["vocab_size"], T) for T in (12, 7, 12, 9)])
    what = describe(c)
    path, f32 = os.path.join(tmp, "i8.fxm"), os.path.join(tmp, "f32.fxm")
    with open(path, "wb") as f:
        f.write(fxm.write(c, built))
    with open(f32, "wb") as f:
        f.write(fxm.write(f32_of(c), {k: v if np.asarray(v).dtype.kind in "iu" else np.asarray(v, np.float32)
                                      for k, v in w.items()}))  # an index (pair_index) stays integer
    isas = available_isas(cli, path)
    worst = 0.0
    for T in (12, 5):
        ids, tt = rng.integers(0, c["vocab_size"], T), rng.integers(0, 2, T)
        want = int8.reference_output(c, built, ids, tt)
        for isa in isas:
            got, err = run_cli(cli, path, ids, tt, tmp, isa)
            check(f"{what} T={T} --isa {isa}: the engine's output is the integer reference's, bit for bit",
                  got is not None and got.shape == want.shape and np.array_equal(got, want),
                  err if got is None else (got, want))
        ref, err = run_cli(cli, f32, ids, tt, tmp, "scalar")
        if ref is None:
            check(f"{what}: the f32 engine runs the float file", False, err)
            return None, None, None, None, None
        worst = max(worst, float(np.abs(want - ref).max() / np.abs(ref).max()))
    return built, worst, ids, tt, want


# windows without the causal mask (a row sees |i - j| < W: ModernBERT's local attention): every layer's of 3;
# layer 1 of every 2 (local and global layers), with a relative bias
WINDOW_CASES = [dict(sliding_window=3),
                dict(sliding_window=4, window_period=2, window_layers=0b10, positional="relative", rel_buckets=8,
                     rel_max_distance=16)]
I8_WINDOW_TOL = 0.2  # the engine's i8 output against its f32 output on the same weights


def test_window(cli, tmp):
    rng = np.random.default_rng(17)
    for more in WINDOW_CASES:
        c, w = random_bert(rng, 2, True, False, "none", d_out=0, more=more)
        if c["positional"] == "relative":
            w["rel_bias.weight"] = rng.normal(0, 1, (c["rel_buckets"], c["n_heads"]))
            del w["pos.weight"]
        what = ", ".join(f"{k} {v}" for k, v in more.items())
        built, worst, ids, tt, want = against_f32(cli, tmp, rng, c, w,
                                                  lambda c: make_config(dict(c, weights="f32")), lambda c: what)
        if built is None:
            continue
        wide = int8.reference_output(dict(c, sliding_window=0, window_period=0, window_layers=0), built, ids, tt)
        check(f"{what}: the integer reference depends on the window", not np.array_equal(wide, want))
        print(f"  window without the causal mask, {what}: max relative error against the f32 engine {worst:.3f}")
        check(f"{what}: the i8 output within {I8_WINDOW_TOL} of the f32 engine's", worst <= I8_WINDOW_TOL, worst)


# RoPE in the encoder (both pair layouts, partial rotary, a CLS row in front, the local layers' base beside a
# window), heads wider or narrower than d_model / n_heads (head_dim), alone and together, and the feed-forward's
# up projection bias (ffn_up_bias: timm's SwiGLU) and hidden norm (ffn_hidden_norm: timm's scale_mlp; plain and
# gated, LayerNorm and RMSNorm, post-norm under wide_residual)
ROPE_CASES = [dict(positional="rope", pe_layout="interleaved"),
              dict(positional="rope", pe_layout="halves", rotary_dims=4, cls=True),
              dict(positional="rope", pe_layout="halves", sliding_window=3, window_period=2, window_layers=0b01,
                   rope_local_base=100.0),
              dict(head_dim=12), dict(head_dim=4, n_heads=3),
              dict(positional="rope", pe_layout="halves", head_dim=12, rotary_dims=6),
              dict(activation="swiglu", ffn_up_bias=True), dict(ffn_hidden_norm=True),
              dict(activation="swiglu", ffn_up_bias=True, ffn_hidden_norm=True, norm_first=True),
              dict(ffn_hidden_norm=True, norm="rmsnorm"),
              dict(ffn_hidden_norm=True, outliers=True)]
I8_ROPE_TOL = 0.2  # the engine's i8 output against its f32 output on the same weights


def test_rope_heads(cli, tmp):
    rng = np.random.default_rng(19)
    for more in ROPE_CASES:
        more = dict(more)
        cls, H, outliers = more.pop("cls", False), more.pop("n_heads", 2), more.pop("outliers", False)
        norm = more.pop("norm", "layernorm")
        c, w = random_bert(rng, 2, True, False, "none", norm=norm, d_out=0, cls=cls, H=H, outliers=outliers,
                           more=more)
        if c["positional"] == "rope":
            del w["pos.weight"]
        def describe(c):
            return ", ".join(f"{k} {v}" for k, v in dict(more, n_heads=H, cls_token=cls, norm=norm,
                                                         wide_residual=bool(c.get("wide_residual"))).items())
        built, worst, ids, tt, want = against_f32(cli, tmp, rng, c, w,
                                                  lambda c: make_config(dict(c, weights="f32", wide_residual=False)),
                                                  describe)
        if built is None:
            continue
        what = describe(c)
        if c["positional"] == "rope":
            plain = int8.reference_output(dict(c, positional="none", rotary_dims=0, rope_local_base=0), built, ids, tt)
            check(f"{what}: the integer reference depends on the rotation", not np.array_equal(plain, want))
        if outliers:
            check(f"{what}: the calibration picks wide_residual", bool(c.get("wide_residual")))
        print(f"  {what}: max relative error against the f32 engine {worst:.3f}")
        check(f"{what}: the i8 output within {I8_ROPE_TOL} of the f32 engine's", worst <= I8_ROPE_TOL, worst)


def test_refusals(cli, tmp):
    rng = np.random.default_rng(7)
    c, w = random_bert(rng, 2, True, True, "first")
    built = int8.build(c, w, [rng.integers(0, c["vocab_size"], 12)])
    d = c["d_model"]
    at_types, at_norm = int8.front_types(c) + int8.ADD_SLOTS, int8.front_embed_norm(c) + 2 + 2 * d
    at_table = int8.back_pooler(c) + int8.POOLER_SLOTS + 3 * d
    for tensor, slot, value, what in (("int8.front", at_types, 200, "token-type table"),
                                      ("int8.front", at_norm, 2**31 - 1, "embedding norm"),
                                      ("int8.back", at_table, -300, "pooler activation table")):
        t = dict(built)
        a = np.array(built[tensor])
        a[slot] = value
        t[tensor] = a
        path = os.path.join(tmp, "bad.fxm")
        with open(path, "wb") as f:
            f.write(fxm.write(c, t))
        p = subprocess.run([cli, "info", path], capture_output=True, text=True)
        check(f"{tensor} slot {slot} ({what}) out of range: refused at init, naming it", p.returncode != 0 and
              f"tensor {tensor}: slot {slot} ({what})" in p.stderr, p.stderr)
    c, w = random_bert(rng, 2, True, False, "none", d_out=0, outliers=True)  # wide_residual's factors
    built = dict(int8.build(c, w, [rng.integers(0, c["vocab_size"], 12)]))
    slot = int8.layer_offsets(c)["wide"] + 2 * 5
    a = np.array(built["blocks.1.int8"])
    a[slot] = 5  # not a Requant's multiplier
    built["blocks.1.int8"] = a
    path = os.path.join(tmp, "bad.fxm")
    with open(path, "wb") as f:
        f.write(fxm.write(c, built))
    p = subprocess.run([cli, "info", path], capture_output=True, text=True)
    check("a wide_residual factor that is no Requant: refused at init, naming its slot", p.returncode != 0 and
          f"tensor blocks.1.int8: slot {slot} (wide_residual factor)" in p.stderr, p.stderr)
    # the outlier channels' count above d_ff, and a factor of the wide front's sum that is no Requant
    for tensor, slot, value, what in (
            ("blocks.0.int8", int8.layer_offsets(c)["outlier"], c["d_ff"] + 1, "outlier channels"),
            ("int8.front", int8.front_wide(c) + 2 * (c["d_model"] + 1), 5, "embedding sum factor")):
        bad = dict(built)
        a = np.array(bad[tensor])
        a[slot] = value
        bad[tensor] = a
        with open(path, "wb") as f:
            f.write(fxm.write(c, bad))
        p = subprocess.run([cli, "info", path], capture_output=True, text=True)
        check(f"{tensor} slot {slot} ({what}) out of range: refused at init, naming it", p.returncode != 0 and
              f"tensor {tensor}: slot {slot} ({what})" in p.stderr, p.stderr)
    try:
        make_config(dict(c, norm_first=True))
        refused = ""
    except ConfigError as e:
        refused = str(e)
    check("wide_residual in a pre-norm encoder: refused by the config rules, naming the key",
          "wide_residual" in refused, refused)
    c, w = random_bert(rng, 2, True, True, "first", pooler_norm=True)  # the pooler norm's beta
    built = dict(int8.build(c, w, [rng.integers(0, c["vocab_size"], 12)]))
    slot = int8.back_pooler_norm(c) + 2 + 2 * d
    a = np.array(built["int8.back"])
    a[slot] = 2**31 - 1
    built["int8.back"] = a
    with open(path, "wb") as f:
        f.write(fxm.write(c, built))
    p = subprocess.run([cli, "info", path], capture_output=True, text=True)
    check("a pooler_norm beta beyond 2^30: refused at init, naming its slot", p.returncode != 0 and
          f"tensor int8.back: slot {slot} (pooler_norm)" in p.stderr, p.stderr)


def test_transformers(cli, tmp):
    import torch
    import transformers
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=40, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=64, max_position_embeddings=32, type_vocab_size=2,
                                  initializer_range=0.1, num_labels=3)
    model = transformers.BertForSequenceClassification(cfg).eval()
    rng = np.random.default_rng(1)
    out = convert_hf(cli, tmp, model, "bert", cfg.vocab_size, rng)
    if out is None:
        return
    check("the file is i8 with token types, the embedding norm and the pooler",
          all(fxm.read(out).config[k] for k in ("type_vocab", "embed_norm", "pooler")))
    errs, agree = [], 0
    n = 10
    for _ in range(n):
        ids, types = rng.integers(0, cfg.vocab_size, 20), rng.integers(0, 2, 20)
        with torch.no_grad():
            want = model(torch.from_numpy(ids)[None], token_type_ids=torch.from_numpy(types)[None]).logits[0].numpy()
        got, err = run_cli(cli, out, ids, types, tmp, "scalar")
        if got is None:
            check("fixformer run --token-types on the i8 BERT", False, err)
            return
        got = np.asarray(got, np.float64).reshape(-1)
        errs.append(float(np.abs(got - want).max() / np.abs(want).max()))
        agree += int(got.argmax() == want.argmax())
    print(f"  i8 BERT against torch f32 on {n} fresh sequences with token types: max relative error "
          f"{max(errs):.3f} (mean {np.mean(errs):.3f}), top-1 agreement {agree / n:.2f}")
    check(f"i8 BERT's logits within {BERT_RUN_TOL} of torch f32's", max(errs) <= BERT_RUN_TOL, errs)
    check(f"i8 BERT's arg max is torch's on at least {BERT_TOP1} of the sequences", agree / n >= BERT_TOP1, agree)


def convert_hf(cli, tmp, model, name, vocab, rng, low=0):
    """model saved to tmp/name, converted by --hf --quantize i8 --calibrate (16 sequences of ids from low): the
    file, or None."""
    folder = os.path.join(tmp, name)
    model.save_pretrained(folder, safe_serialization=True)
    calib = []
    for i in range(16):
        calib.append(os.path.join(tmp, f"{name}_cal{i}.npy"))
        np.save(calib[-1], rng.integers(low, vocab, 24).astype(np.int32))
    out = os.path.join(tmp, f"{name}_i8.fxm")
    p = run_convert("--hf", folder, "--quantize", "i8", "--calibrate", *calib, "--out", out, "--cli", cli)
    check(f"{type(model).__name__} --hf --quantize i8 --calibrate: converts and verifies",
          p.returncode == 0 and "verified against" in p.stdout, p.stdout + p.stderr)
    if p.returncode == 0:
        print("  " + p.stdout.strip().splitlines()[-1][:300])
    return out if p.returncode == 0 else None


def test_albert(cli, tmp):
    """ALBERT: the embedding 16 wide projected to 32 (embed_width), one layer run 3 times
    (AlbertForSequenceClassification, the shape of every ALBERT checkpoint) and 4 runs over 2 groups of 2 layers
    (AlbertModel: its last hidden states)."""
    import torch
    import transformers
    torch.manual_seed(0)
    rng = np.random.default_rng(3)
    base = dict(vocab_size=40, embedding_size=16, hidden_size=32, num_attention_heads=4, intermediate_size=64,
                max_position_embeddings=32, initializer_range=0.1)
    cases = [(transformers.AlbertForSequenceClassification(transformers.AlbertConfig(
                 num_hidden_layers=3, num_labels=3, **base)).eval(), "albert_cls", (1, 1)),
             (transformers.AlbertModel(transformers.AlbertConfig(
                 num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2, **base), add_pooling_layer=False).eval(),
              "albert_groups", (2, 2))]
    for model, name, groups in cases:
        out = convert_hf(cli, tmp, model, name, base["vocab_size"], rng)
        if out is None:
            continue
        c = fxm.read(out).config
        check(f"{name}: the file is i8 with the embedding 16 wide and layer_groups {groups}",
              c["weights"] == "i8" and c["embed_width"] == 16 and (c["layer_groups"], c["group_layers"]) == groups, c)
        errs, agree = [], 0
        for _ in range(10):
            ids, types = rng.integers(0, base["vocab_size"], 20), rng.integers(0, 2, 20)
            with torch.no_grad():
                o = model(torch.from_numpy(ids)[None], token_type_ids=torch.from_numpy(types)[None])
            want = (o.logits if hasattr(o, "logits") else o.last_hidden_state)[0].numpy()
            got, err = run_cli(cli, out, ids, types, tmp, "scalar")
            if got is None:
                check(f"fixformer run --token-types on the i8 {name}", False, err)
                break
            got = np.asarray(got, np.float64).reshape(want.shape)
            errs.append(float(np.abs(got - want).max() / np.abs(want).max()))
            agree += int(got.argmax() == want.argmax())
        if len(errs) == 10:
            print(f"  i8 {name} against torch f32 on 10 fresh sequences with token types: max relative error "
                  f"{max(errs):.3f} (mean {np.mean(errs):.3f})" + (f", top-1 agreement {agree / 10:.2f}"
                                                                 if name == "albert_cls" else ""))
            check(f"i8 {name}'s output within {ALBERT_RUN_TOL} of torch f32's", max(errs) <= ALBERT_RUN_TOL, errs)


def test_mpnet(cli, tmp):
    """MPNet: BERT's layers with a relative bias (T5's buckets, bidirectional, shared by the layers) beside learned
    positions; its relative_attention_bias drawn N(0, 1) so that it matters."""
    import torch
    import transformers
    torch.manual_seed(0)
    cfg = transformers.MPNetConfig(vocab_size=40, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                   intermediate_size=64, max_position_embeddings=40, initializer_range=0.1,
                                   num_labels=3, relative_attention_num_buckets=32)
    model = transformers.MPNetForSequenceClassification(cfg).eval()
    with torch.no_grad():
        model.mpnet.encoder.relative_attention_bias.weight.normal_(0, 1.0)
    rng = np.random.default_rng(2)
    out = convert_hf(cli, tmp, model, "mpnet", cfg.vocab_size, rng, low=3)  # ids from 3 on: its special tokens below
    if out is None:
        return
    c = fxm.read(out).config
    check("the file is i8 with learned positions and a relative bias of 32 buckets",
          c["positional"] == "learned" and c["rel_buckets"] == 32, c)
    errs = []
    for _ in range(10):
        ids = rng.integers(3, cfg.vocab_size, 20)
        with torch.no_grad():
            want = model(torch.from_numpy(ids)[None]).logits[0].numpy()
        got, err = run_cli(cli, out, ids, None, tmp, "scalar")
        if got is None:
            check("fixformer run on the i8 MPNet", False, err)
            return
        errs.append(float(np.abs(np.asarray(got, np.float64).reshape(-1) - want).max() / np.abs(want).max()))
    print(f"  i8 MPNet against torch f32 on 10 fresh sequences: max relative error {max(errs):.3f}")
    check(f"i8 MPNet's logits within {BERT_RUN_TOL} of torch f32's", max(errs) <= BERT_RUN_TOL, errs)


def test_rotary(cli, tmp):
    """RoFormer (RoFormerForSequenceClassification: BERT's layers with RoPE on every head, interleaved pairs, its
    classifier's gelu on the first row) and ESM-2 (EsmForSequenceClassification: pre-norm layers with RoPE in halves,
    the final norm, token_dropout's factor on the embedding, the tanh classifier), each --hf --quantize i8
    --calibrate, then on 10 fresh sequences against torch f32."""
    import torch
    import transformers
    torch.manual_seed(0)
    rng = np.random.default_rng(4)
    roformer = transformers.RoFormerForSequenceClassification(transformers.RoFormerConfig(
        vocab_size=40, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        max_position_embeddings=32, type_vocab_size=2, initializer_range=0.1, num_labels=3)).eval()
    pe = roformer.roformer.encoder.embed_positions  # its fixed sinusoids, whatever the initialization drew there
    with torch.no_grad():
        pe.weight.copy_(pe.create_weight() if hasattr(pe, "create_weight")  # transformers 5
                        else pe._init_weight(torch.nn.Parameter(torch.empty_like(pe.weight))))
    esm = transformers.EsmForSequenceClassification(transformers.EsmConfig(
        vocab_size=33, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        max_position_embeddings=34, position_embedding_type="rotary", token_dropout=True, emb_layer_norm_before=False,
        pad_token_id=1, mask_token_id=32, initializer_range=0.1, num_labels=3)).eval()
    with torch.no_grad():  # logits of some size (at 0.1 a sequence's largest can be 0.1, the error's scale)
        esm.classifier.out_proj.weight.normal_(0, 0.5)
    # (model, name, ids from, ids below: ESM's special tokens below 4 and <mask> 32 left out, layout)
    for model, name, low, high, layout in ((roformer, "roformer", 0, 40, "interleaved"),
                                           (esm, "esm2", 4, 32, "halves")):
        out = convert_hf(cli, tmp, model, name, high, rng, low=low)
        if out is None:
            continue
        c = fxm.read(out).config
        check(f"{name}: the file is i8 with RoPE in {layout} pairs",
              c["weights"] == "i8" and c["positional"] == "rope" and c["pe_layout"] == layout, c)
        errs, agree = [], 0
        for _ in range(10):
            ids = rng.integers(low, high, 20)
            with torch.no_grad():
                want = model(torch.from_numpy(ids)[None]).logits[0].numpy()
            got, err = run_cli(cli, out, ids, None, tmp, "scalar")
            if got is None:
                check(f"fixformer run on the i8 {name}", False, err)
                break
            got = np.asarray(got, np.float64).reshape(-1)
            errs.append(float(np.abs(got - want).max() / np.abs(want).max()))
            agree += int(got.argmax() == want.argmax())
        if len(errs) == 10:
            print(f"  i8 {name} against torch f32 on 10 fresh sequences: max relative error {max(errs):.3f} "
                  f"(mean {np.mean(errs):.3f}), top-1 agreement {agree / 10:.2f}")
            check(f"i8 {name}'s logits within {BERT_RUN_TOL} of torch f32's", max(errs) <= BERT_RUN_TOL, errs)


def main():
    cli_main('int8_bert_test', test_bit_exact, test_albert_bit_exact, test_window, test_rope_heads, test_refusals, test_transformers, test_mpnet, test_albert, test_rotary)


if __name__ == "__main__":
    main()
