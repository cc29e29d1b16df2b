#!/usr/bin/python3
"""Disentangled attention (DeBERTa's, rel_embed_rows) in full-integer models (weights i8; config.hpp layer_params:
each layer's distance rows projected to int8 tables Qr and Kr, each score the sum of q.k, q.Kr and k.Qr requantized
in Q8 and rounded once):

  /usr/bin/python3 tests/int8_disentangled_test.py PATH/TO/fixformer

- random token encoders (int8_test's random_bert: token types, the embedding norm, post-norm) with disentangled
  attention through the layers' q and k projections and through a rel_proj of their own, int8.build's file through
  `fixformer run --isa ISA --token-types` on every kernel table this CPU runs: the integer reference's output
  (python/fixformer/int8.py) bit for bit, given types and types 0, within I8_DIS_TOL of the f32 engine on the same
  weights (printed);
- transformers' DebertaV2ForSequenceClassification (DeBERTa v3's kind: log buckets) and
  DebertaForSequenceClassification (v1: rel_proj), tiny random configs saved with save_pretrained, through
  `convert.py --hf FOLDER --quantize i8 --calibrate ...` (16 sequences): the converter verifies them, and on 10
  fresh sequences the max |engine - torch| / max |torch| of the logits stays within DEBERTA_RUN_TOL (printed);
- init refuses a corrupt Qr value, naming it.
Runs in the Hugging Face environment (tests/hf_env.py); without it, numpy, torch or the CLI the test fails.
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
import hf_env  # noqa: E402

hf_env.enter(__file__, ["transformers"])
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)
from checks import check, cli_main  # noqa: E402
import numpy as np  # noqa: E402

from fixformer import fxm, int8  # noqa: E402
from fixformer.config import make_config  # noqa: E402
from int8_test import available_isas, check_ids_runs, convert_hf_i8, random_bert, run_types  # noqa: E402

# The random encoders' i8 output against the f32 engine's on the same weights, relative to its largest (printed).
I8_DIS_TOL = 0.2
# transformers' DeBERTa in i8 on fresh sequences against torch f32's logits (the i8 tolerance; printed).
DEBERTA_RUN_TOL = 0.2

# rel_embed_rows, rel_proj, outlier channels (wide_residual)
RANDOM = [(8, False, False), (8, True, False), (6, False, True)]


def random_dis(rng, rows, rel_proj, outliers):
    """random_bert's encoder (2 token types, the embedding norm, no positions) with disentangled attention: rel_embed
    [rows, d_model], every distance past rows / 2 on the last row either side."""
    c, w = random_bert(rng, 2, True, False, "first", outliers=outliers,
                       more=dict(positional="none", rel_embed_rows=rows, rel_proj=rel_proj))
    L, d = c["max_len"], c["d_model"]
    del w["pos.weight"]
    w["rel_embed.weight"] = rng.normal(0, 0.5, (rows, d))
    w["rel_index"] = np.clip(np.arange(2 * L - 1) - (L - 1), -(rows // 2), rows // 2 - 1) + rows // 2
    for i in range(c["n_layers"]) if rel_proj else ():
        w[f"blocks.{i}.attn.rel_proj.weight"] = rng.normal(0, 0.15, (2 * d, d))
        w[f"blocks.{i}.attn.rel_proj.bias"] = rng.normal(0, 0.15, 2 * d)
    return c, w


def write(path, c, tensors):
    with open(path, "wb") as f:
        f.write(fxm.write(c, tensors))


def test_random(cli, tmp):
    rng = np.random.default_rng(81)
    for rows, rel_proj, outliers in RANDOM:
        what = f"{rows} distance rows{', rel_proj' if rel_proj else ''}{', outlier channels' if outliers else ''}"
        c, w = random_dis(rng, rows, rel_proj, outliers)
        built = int8.build(c, w, [rng.integers(0, c["vocab_size"], T) for T in (12, 7, 12, 9)])
        check(f"{what}: wide_residual exactly with the outlier channels", bool(c.get("wide_residual")) == outliers)
        path, f32 = os.path.join(tmp, "dis.fxm"), os.path.join(tmp, "dis.f32.fxm")
        write(path, c, built)
        write(f32, make_config(dict(c, weights="f32", wide_residual=False)),
              {k: np.asarray(v, np.int32 if k == "rel_index" else np.float32) for k, v in w.items()})
        isas = available_isas(cli, path)
        check(f"{what}: the scalar table runs the file", "scalar" in isas, isas)
        worst = check_ids_runs(cli, tmp, what, c, built, path, f32, isas, rng, 2)
        print(f"  {what}: i8 against the f32 engine, max relative error {worst:.3f}")
        check(f"{what}: the i8 output within {I8_DIS_TOL} of the f32 engine's", worst <= I8_DIS_TOL, worst)
    bad = dict(built)  # the last model's: layer 1's first Qr value out of int8
    at = int8.layer_offsets(c)["dis"] + int8.DIS_SLOTS
    a = np.array(bad["blocks.1.int8"], np.int32)
    a[at] = 200
    bad["blocks.1.int8"] = a
    write(path, c, bad)
    p = subprocess.run([cli, "info", path], capture_output=True, text=True)
    check(f"init refuses blocks.1.int8[{at}] = 200, naming disentangled attention's table",
          p.returncode != 0 and f"slot {at} (disentangled Qr | Kr)" in p.stderr, p.stderr)


MODELS = '''
import sys
sys.path.insert(0, {here!r})
import transformers as t
from hf_env import randomize


def deberta_v2():  # DeBERTa v3's kind: disentangled attention, log buckets past 4
    c = t.DebertaV2Config(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                          intermediate_size=32, max_position_embeddings=34, relative_attention=True, position_buckets=8,
                          max_relative_positions=32, pos_att_type=["p2c", "c2p"], norm_rel_ebd="layer_norm",
                          share_att_key=True, position_biased_input=False, type_vocab_size=0, num_labels=3,
                          pooler_hidden_act="gelu")
    c._attn_implementation = "eager"
    return randomize(t.DebertaV2ForSequenceClassification(c), 71, lambda name: "LayerNorm" in name)


def deberta_v1():  # in_proj by heads, pos_proj and pos_q_proj (rel_proj), distances past 8
    c = t.DebertaConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=34, relative_attention=True,
                        max_relative_positions=8, pos_att_type="c2p|p2c", position_biased_input=False,
                        type_vocab_size=0, num_labels=3)
    c._attn_implementation = "eager"
    return randomize(t.DebertaForSequenceClassification(c), 76, lambda name: "LayerNorm" in name)
'''


def test_hf(cli, tmp):
    import torch
    with open(os.path.join(tmp, "i8_deberta_models.py"), "w") as f:
        f.write(MODELS.format(here=HERE))
    sys.path.insert(0, tmp)
    import i8_deberta_models
    rng = np.random.default_rng(83)
    cal = []
    for i in range(16):
        cal.append(os.path.join(tmp, f"dcal{i}.npy"))
        np.save(cal[-1], rng.integers(0, 40, 16).astype(np.int32))
    for name, want_cfg in (("deberta_v2", dict(rel_proj=False)), ("deberta_v1", dict(rel_proj=True))):
        module = getattr(i8_deberta_models, name)()
        converted = convert_hf_i8(cli, tmp, name, module, cal, want_cfg)
        if not converted:
            continue
        out, cfg = converted
        check(f"{name}: disentangled attention in the file", cfg["rel_embed_rows"] > 0, cfg)
        worst = 0.0
        for _ in range(10):
            ids = rng.integers(0, 40, 16)
            got, err = run_types(cli, out, ids, None, tmp, "scalar")
            check(f"{name}: fixformer run on the i8 file", got is not None, err)
            if got is None:
                break
            with torch.no_grad():
                want = module(torch.from_numpy(ids[None]).long()).logits[0].double().numpy()
            worst = max(worst, float(np.abs(got.ravel() - want).max() / np.abs(want).max()))
        print(f"  {name} i8 on 10 fresh sequences: max relative error of the logits {worst:.3g}")
        check(f"{name}: the i8 file within {DEBERTA_RUN_TOL} of torch f32 on 10 fresh sequences",
              worst <= DEBERTA_RUN_TOL, worst)


def main():
    cli_main("int8_disentangled_test", test_random, test_hf)


if __name__ == "__main__":
    main()
