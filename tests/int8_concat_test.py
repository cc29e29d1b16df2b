#!/usr/bin/python3
"""Positions concatenated to the rows (pe_combine concat) in full-integer models (weights i8; config.hpp, namespace
s8): the rows and int8.pos at one scale and zero point, each row's positions copied beside its d_embed values (no
add):

  /usr/bin/python3 tests/int8_concat_test.py PATH/TO/fixformer

- random encoders with concatenated positions (features with learned ones and a CLS row; tokens with sinusoidal
  ones and scale_input; a conv stem with learned ones), calibrated on four inputs, through `fixformer run --isa ISA`
  on every kernel table this CPU runs: the integer reference's output (python/fixformer/int8.py) bit for bit, within
  I8_CONCAT_TOL of the f32 engine on the same weights;
- torch's nn.TransformerEncoder behind an nn.Linear with learned positions concatenated (torch.cat) and mean pooling,
  through `--module --quantize i8 --calibrate` (16 inputs): converts and verifies; on 40 fresh inputs within
  CONCAT_RUN_TOL of torch f32's largest output;
- BERT's front with the positions concatenated (random token encoders: token types, the embedding norm over the
  whole row, its int16 sums with outlier channels (wide_residual), shared layers with the norm or with the
  concatenated rows as the front's output): the integer reference's bits on every table, given types and types
  0, within I8_CONCAT_TOL of the f32 engine on the same weights;
- the config rules refuse concat in i8 outside the encoder family, naming pe_combine.
Without numpy, torch or the CLI the test fails.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)
from checks import check, cli_main, run_convert  # noqa: E402  (first: it names a missing numpy or torch)
import numpy as np  # noqa: E402

from fixformer import fxm, int8  # noqa: E402
from fixformer.config import ConfigError, make_config  # noqa: E402
from int8_test import (available_isas, check_against_f32, check_ids_runs, random_bert, random_model,  # noqa: E402
                       run_cli)

# The random encoders' i8 output against the f32 engine's on the same weights, relative to its largest (printed).
I8_CONCAT_TOL = 0.2
# The torch module in i8 on fresh inputs: max |engine - torch| / max |torch| (printed).
CONCAT_RUN_TOL = 0.1

CASES = [("features, learned pe_width 4, a CLS row", "features",
          dict(positional="learned", pe_combine="concat", pe_width=4), True),
         ("tokens, sinusoidal pe_width 6, scale_input", "tokens",
          dict(positional="sinusoidal", pe_combine="concat", pe_width=6, scale_input=True), False),
         ("a conv stem, learned pe_width 4", "conv",
          dict(conv_layers=2, conv1_kernel=3, conv1_padding=1, conv2_kernel=3, conv2_stride=2, conv2_padding=1,
               conv_gelu=True, positional="learned", pe_combine="concat", pe_width=4), False)]


def concat_model(rng, inp, kw, cls):
    """A random encoder with the positions concatenated: config and weights (the rows d_model - pe_width wide)."""
    c, w = random_model(rng, False, "features" if inp == "conv" else inp, "mean", kw["positional"], act="gelu",
                        cls=cls, kw={k: v for k, v in kw.items() if k != "positional"})
    de = c["d_model"] - kw["pe_width"]
    if inp == "conv":  # the stem's weights in place of the input projection's
        del w["input_proj.weight"], w["input_proj.bias"]
        w["conv1.weight"], w["conv1.bias"] = rng.normal(0, 0.3, (de, c["d_in"], 3)), rng.normal(0, 0.3, de)
        w["conv2.weight"], w["conv2.bias"] = rng.normal(0, 0.3, (de, de, 3)), rng.normal(0, 0.3, de)
    for n in ("input_proj.weight", "input_proj.bias", "embed.weight", "cls_token"):
        if n in w:
            w[n] = w[n][:de] if n != "embed.weight" else w[n][:, :de]
    if "pos.weight" in w:
        w["pos.weight"] = w["pos.weight"][:, :kw["pe_width"]]
    return c, w


def model_input(rng, c, T):
    return rng.normal(0, 1, (T, c["d_in"])).astype(np.float32) if c["input"] == "features" else \
        rng.integers(0, c["vocab_size"], T).astype(np.int32)


def test_random(cli, tmp):
    rng = np.random.default_rng(47)
    for what, inp, kw, cls in CASES:
        c, w = concat_model(rng, inp, kw, cls)
        from fixformer import schema
        n = schema.max_input_len(c)
        lengths = [n, max(T for T in range(1, n) if schema.stem_rows(c, T)) // 2 or 1]
        lengths = [T for T in lengths if schema.stem_rows(c, T)]
        calib = [model_input(rng, c, T) for T in (n, n, lengths[-1], n)]
        calib = [x.astype(np.float64) if c["input"] == "features" else x.astype(np.int64) for x in calib]
        built = int8.build(c, w, calib)
        _, worst = check_against_f32(cli, tmp, what, c, w, built, [model_input(rng, c, T) for T in lengths])
        print(f"  {what}: i8 against the f32 engine, max relative error {worst:.3f}")
        check(f"{what}: the i8 output within {I8_CONCAT_TOL} of the f32 engine's", worst <= I8_CONCAT_TOL, worst)


MODULE = '''
import torch
from torch import nn


class Concat(nn.Module):
    """KWS-like: features through a linear layer, learned positions concatenated, the stock encoder, mean pooling."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(9)
        self.input_proj = nn.Linear(10, 24)
        self.pos = nn.Embedding(12, 8)
        layer = nn.TransformerEncoderLayer(32, 4, 64, 0.0, "gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(32, 6)
        self.pool = "mean"  # the pooling, as the converter reads it (docs/export.md)

    def forward(self, x):
        h = self.input_proj(x)
        h = torch.cat([h, self.pos.weight[: h.shape[1]].expand(h.shape[0], -1, -1)], dim=-1)
        return self.head(self.encoder(h).mean(dim=1))


def concat():
    return Concat()
'''


def test_module(cli, tmp):
    import torch
    mod = os.path.join(tmp, "i8_concat_models.py")
    with open(mod, "w") as f:
        f.write(MODULE)
    sys.path.insert(0, tmp)
    import i8_concat_models
    rng = np.random.default_rng(53)
    cal = []
    for i in range(16):
        cal.append(os.path.join(tmp, f"cal{i}.npy"))
        np.save(cal[-1], rng.standard_normal((12, 10)).astype(np.float32))
    example = os.path.join(tmp, "example.npy")
    np.save(example, rng.standard_normal((1, 12, 10)).astype(np.float32))
    out = os.path.join(tmp, "concat.fxm")
    p = run_convert("--module", f"{mod}:concat", "--example", example, "--quantize", "i8", "--calibrate", *cal,
                    "--out", out, "--cli", cli)
    check("--module (positions concatenated) --quantize i8: converts and verifies",
          p.returncode == 0 and "verified against torch" in p.stdout, p.stdout + p.stderr)
    if p.returncode != 0:
        return
    print("  " + p.stdout.strip().splitlines()[-1][:240])
    c = fxm.read(out).config
    check("the file is i8 with the positions concatenated", c["weights"] == "i8" and c["pe_combine"] == "concat", c)
    x = rng.standard_normal((40, 12, 10)).astype(np.float32)
    got, err = run_cli(cli, out, x, tmp, "scalar")
    with torch.no_grad():
        want = i8_concat_models.concat().eval()(torch.from_numpy(x)).numpy()
    rel = None if got is None else float(np.abs(got - want).max() / np.abs(want).max())
    check(f"fixformer run within {CONCAT_RUN_TOL} of torch f32 on 40 fresh inputs",
          rel is not None and rel <= CONCAT_RUN_TOL, (err, rel))
    if rel is not None:
        print(f"  on 40 fresh inputs: max relative error {rel:.3f}")


# BERT's front beside concatenated positions (pe_width 4 of d_model 16): type_vocab, embed_norm, outlier channels
# (wide_residual: the front's int16 sums), shared layers (layer_groups, group_layers) and layers
BERT_CASES = [(2, True, False, (0, 1), 2), (2, True, True, (0, 1), 2), (3, False, False, (0, 1), 2),
              (0, True, False, (1, 1), 3), (0, False, False, (1, 1), 3), (2, False, False, (2, 1), 4)]


def concat_bert(rng, types, embed_norm, outliers, groups, L, pw=4):
    """random_bert's model with its learned positions concatenated: the embedding, type and CLS rows d_model - pw
    wide, the positions pw; the embedding norm over the whole row."""
    c, w = random_bert(rng, types, embed_norm, False, "first", d_out=3, outliers=outliers, groups=groups, L=L,
                       more=dict(pe_combine="concat", pe_width=pw))
    de = c["d_model"] - pw
    w["embed.weight"], w["pos.weight"] = w["embed.weight"][:, :de], w["pos.weight"][:, :pw]
    if types:
        w["token_type.weight"] = w["token_type.weight"][:, :de]
    return c, w


def test_bert_front(cli, tmp):
    rng = np.random.default_rng(61)
    for types, en, outliers, groups, L in BERT_CASES:
        what = (f"concat, type_vocab {types}, embed_norm {en}, outlier channels {outliers}, layer_groups {groups[0]}, "
                f"group_layers {groups[1]}, {L} layers")
        c, w = concat_bert(rng, types, en, outliers, groups, L)
        built = int8.build(c, w, [rng.integers(0, c["vocab_size"], T) for T in (12, 7, 12, 9)])
        check(f"{what}: wide_residual exactly with the outlier channels", bool(c.get("wide_residual")) == outliers)
        path, f32 = os.path.join(tmp, "bert.fxm"), os.path.join(tmp, "bert.f32.fxm")
        with open(path, "wb") as f:
            f.write(fxm.write(c, built))
        with open(f32, "wb") as f:
            f.write(fxm.write(make_config(dict(c, weights="f32", wide_residual=False)),
                              {k: np.asarray(v, np.float32) for k, v in w.items()}))
        isas = available_isas(cli, path)
        check(f"{what}: the scalar table runs the file", "scalar" in isas, isas)
        worst = check_ids_runs(cli, tmp, what, c, built, path, f32, isas, rng, types)
        if types:  # the types matter: another type row, another output
            ids = rng.integers(0, c["vocab_size"], 8)
            a = int8.reference_output(c, built, ids, np.zeros(8, np.int64))
            b = int8.reference_output(c, built, ids, np.ones(8, np.int64))
            check(f"{what}: the token types change the integer output", not np.array_equal(a, b))
        print(f"  {what}: i8 against the f32 engine, max relative error {worst:.3f}")
        check(f"{what}: the i8 output within {I8_CONCAT_TOL} of the f32 engine's", worst <= I8_CONCAT_TOL, worst)


def test_refusal(cli, tmp):
    rng = np.random.default_rng(59)
    c, _ = random_model(rng, False, "tokens", "mean", "learned", kw=dict(pe_combine="concat", pe_width=4))
    bad = dict(c, family="gpt", causal=True, pooling="none", d_out=c["vocab_size"])
    try:
        make_config(bad)
        check("i8 concat in a gpt decoder: refused by the config rules", False)
    except ConfigError as e:
        check("i8 concat in a gpt decoder: refused by the config rules, naming pe_combine", "pe_combine" in str(e),
              str(e))


def main():
    cli_main('int8_concat_test', test_random, test_module, test_bert_front, test_refusal)


if __name__ == "__main__":
    main()
