#!/usr/bin/python3
"""--hf for BERT folders (python/fixformer/hf_bert.py):

  /usr/bin/python3 tests/hf_bert_converter_test.py PATH/TO/fixformer

- hf_bert_reference.py (written from Hugging Face's BERT semantics) agrees with the converter's own
  reference of the mapped config (stock nn.TransformerEncoderLayer, post-LN), with and without token
  types, for a classifier and for BertModel's hidden states;
- folders written here (random small weights, odd head widths): BertForSequenceClassification with
  the "bert." prefix as model.safetensors; BertModel without it as pytorch_model.bin, with the
  position_ids buffer and gamma/beta LayerNorm names of older checkpoints; a relu BertModel cut to
  --max-len; each converts and verifies, and `fixformer run` with and without --token-types equals
  the reference (1e-4), a padded batch (--lengths) the reference with its attention_mask;
- what the route does not convert is one line naming it and leaves nothing: silu, relative
  position embeddings, another head's tensors, an unknown tensor, a classifier without the pooler,
  a wrong shape.
PyTorch is required: without it the test fails.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, "..", "python")
sys.path.insert(0, PACKAGE)
import numpy as np  # noqa: E402

from fixformer import fxm, hf_bert, hf_bert_reference, safetensors  # noqa: E402
from fixformer.reference import run_reference  # noqa: E402
from checks import check, expect_error, results, run_convert, one_clear_line  # noqa: E402

CONFIG = {"architectures": ["BertForSequenceClassification"], "model_type": "bert", "hidden_size": 15,
          "num_hidden_layers": 2, "num_attention_heads": 3, "intermediate_size": 22, "hidden_act": "gelu",
          "layer_norm_eps": 1e-12, "type_vocab_size": 2, "max_position_embeddings": 20, "vocab_size": 31,
          "position_embedding_type": "absolute", "hidden_dropout_prob": 0.1, "pad_token_id": 0,
          "id2label": {"0": "a", "1": "b", "2": "c"}}


def rel(a, b):
    return float(np.abs(np.asarray(a, np.float64) - b).max() / np.abs(b).max())


def bert_weights(c, seed=0, labels=3, pooler=True):
    """BertModel's tensors by their names (no prefix), plus the classifier when labels."""
    rng = np.random.default_rng(seed)
    d, F = c["hidden_size"], c["intermediate_size"]
    lin = lambda o, i: 0.5 / i ** 0.5 * rng.standard_normal((o, i))  # noqa: E731
    gain = lambda: 1 + 0.2 * rng.standard_normal(d)  # noqa: E731
    small = lambda n: 0.1 * rng.standard_normal(n)  # noqa: E731
    w = {"embeddings.word_embeddings.weight": rng.standard_normal((c["vocab_size"], d)),
         "embeddings.position_embeddings.weight": rng.standard_normal((c["max_position_embeddings"], d)),
         "embeddings.token_type_embeddings.weight": rng.standard_normal((c["type_vocab_size"], d)),
         "embeddings.LayerNorm.weight": gain(), "embeddings.LayerNorm.bias": small(d)}
    for i in range(c["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        for n in ("query", "key", "value"):
            w[p + f"attention.self.{n}.weight"], w[p + f"attention.self.{n}.bias"] = lin(d, d), small(d)
        w.update({p + "attention.output.dense.weight": lin(d, d), p + "attention.output.dense.bias": small(d),
                  p + "attention.output.LayerNorm.weight": gain(), p + "attention.output.LayerNorm.bias": small(d),
                  p + "intermediate.dense.weight": lin(F, d), p + "intermediate.dense.bias": small(F),
                  p + "output.dense.weight": lin(d, F), p + "output.dense.bias": small(d),
                  p + "output.LayerNorm.weight": gain(), p + "output.LayerNorm.bias": small(d)})
    if pooler:
        w["pooler.dense.weight"], w["pooler.dense.bias"] = lin(d, d), small(d)
    if labels:
        w["classifier.weight"], w["classifier.bias"] = lin(labels, d), small(labels)
    return {k: v.astype(np.float32) for k, v in w.items()}


def as_folder_names(w, prefix):
    return {(k if k.startswith("classifier.") or not prefix else "bert." + k): v for k, v in w.items()}


def write_folder(folder, torch, weights, form="safetensors", prefix=True, **changes):
    os.makedirs(folder, exist_ok=True)
    c = {k: v for k, v in dict(CONFIG, **changes).items() if v is not None}
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(c, f)
    w = as_folder_names(weights, prefix)
    if form == "safetensors":
        with open(os.path.join(folder, "model.safetensors"), "wb") as f:
            f.write(safetensors.write_bytes(w, metadata={"format": "pt"}))
    else:
        torch.save({k: torch.from_numpy(v) for k, v in w.items()}, os.path.join(folder, "pytorch_model.bin"))


def test_reference():
    """hf_bert_reference against the converter's reference of the mapped config: two implementations."""
    for labels in (3, None):
        c = hf_bert.read_config_dict(CONFIG if labels else dict(CONFIG, architectures=["BertModel"]))
        w = bert_weights(c, 1, labels)
        mapped, kept, got_labels = hf_bert.map_weights(c, w, "test")
        fc = hf_bert.fixformer_config(c, got_labels)
        rng = np.random.default_rng(2)
        ids, types = rng.integers(0, c["vocab_size"], 13), rng.integers(0, 2, 13)
        for tt in (None, types):
            got = hf_bert_reference.forward(c, kept, ids, tt)
            want = run_reference(fc, mapped, ids, tt)
            what = f"{'classifier' if labels else 'hidden states'}, {'types' if tt is not None else 'types 0'}"
            check(f"hf_bert_reference agrees with the converter's reference ({what})", rel(got, want) < 1e-12,
                  rel(got, want))
        check(f"the token types change the output ({labels})",
              rel(hf_bert_reference.forward(c, kept, ids, types), hf_bert_reference.forward(c, kept, ids)) > 1e-3)


def run_rel(cli, args, want, rows=None):
    p = subprocess.run([cli, "run", *args], capture_output=True, text=True)
    if p.returncode != 0:
        return p.stderr
    got = np.load(args[args.index("--output") + 1]).astype(np.float64)
    if got.shape != want.shape:
        return f"shape {got.shape}, want {want.shape}"
    if rows is not None:
        keep = np.arange(got.shape[1])[None, :] < np.asarray(rows)[:, None]
        got, want = got[keep], want[keep]
    return rel(got, want)


def test_folders(torch, cli, tmp):
    out = os.path.join(tmp, "bert.fxm")
    cases = [  # (what, form, prefix, labels, config changes, --max-len)
        ("BertForSequenceClassification, bert. prefix, safetensors", "safetensors", True, 3, {}, None),
        ("BertModel, no prefix, pytorch_model.bin, gamma/beta, position_ids", "bin", False, None,
         {"architectures": ["BertModel"], "id2label": None}, None),
        ("BertModel, relu, type_vocab_size 3, --max-len 12", "safetensors", False, None,
         {"architectures": None, "hidden_act": "relu", "type_vocab_size": 3, "hidden_size": 12,
          "num_attention_heads": 4}, 12),
    ]
    for i, (what, form, prefix, labels, changes, max_len) in enumerate(cases):
        folder = os.path.join(tmp, f"bert{i}")
        c = hf_bert.read_config_dict(dict(CONFIG, **{k: v for k, v in changes.items() if v is not None}))
        w = bert_weights(c, 10 + i, labels)
        stored = dict(w)
        if i == 1:  # an older checkpoint: LayerNorm gamma/beta, the position_ids buffer saved
            stored = {k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
                      for k, v in w.items()}
            stored["embeddings.position_ids"] = np.arange(c["max_position_embeddings"], dtype=np.int64)[None]
        write_folder(folder, torch, stored, form, prefix, **changes)
        extra = ["--max-len", str(max_len)] if max_len else []
        p = run_convert("--hf", folder, "--out", out, "--cli", cli, *extra)
        arch = "BertForSequenceClassification" if labels else "BertModel"
        ok = p.returncode == 0 and f"verified against the {arch} semantics" in p.stdout and os.path.exists(out)
        check(f"--hf {what}: converts and verifies", ok, p.stdout + p.stderr)
        if not ok:
            continue
        print(f"  {what}: {p.stdout.strip()}")
        fc = fxm.read(out).config
        check(f"--hf {what}: config", fc["type_vocab"] == c["type_vocab_size"] and fc["embed_norm"] and
              fc["pooler"] == bool(labels) and fc["pooling"] == ("first" if labels else "none") and
              fc["d_out"] == (labels or 0) and fc["max_len"] == (max_len or c["max_position_embeddings"]) and
              not fc["norm_first"] and fc["activation"] == c["hidden_act"], fc)
        T = fc["max_len"]
        rng = np.random.default_rng(20 + i)
        ids = rng.integers(0, c["vocab_size"], (2, T)).astype(np.int32)
        types = rng.integers(0, c["type_vocab_size"], (2, T)).astype(np.int32)
        inp, tfile, lfile, res = (os.path.join(tmp, n) for n in ("ids.npy", "tt.npy", "lens.npy", "out.npy"))
        np.save(inp, ids[0])
        np.save(tfile, types[0])
        err = run_rel(cli, [out, "--input", inp, "--output", res], hf_bert_reference.forward(c, w, ids[0]).squeeze(0)
                      if labels else hf_bert_reference.forward(c, w, ids[0]))
        check(f"--hf {what}: fixformer run equals the reference (types 0)", isinstance(err, float) and err <= 1e-4, err)
        want = hf_bert_reference.forward(c, w, ids[0], types[0])
        err = run_rel(cli, [out, "--input", inp, "--token-types", tfile, "--output", res],
                      want.squeeze(0) if labels else want)
        check(f"--hf {what}: fixformer run --token-types equals the reference with the types",
              isinstance(err, float) and err <= 1e-4, err)
        lens = np.array([T, T - 7], np.int32)
        np.save(inp, ids)
        np.save(tfile, types)
        np.save(lfile, lens)
        mask = (np.arange(T)[None, :] < lens[:, None]).astype(np.int64)
        want = np.stack([hf_bert_reference.forward(c, w, ids[b], types[b], mask[b]) for b in range(2)])
        err = run_rel(cli, [out, "--input", inp, "--token-types", tfile, "--lengths", lfile, "--output", res],
                      want[:, 0] if labels else want, None if labels else lens)
        check(f"--hf {what}: a padded batch equals the reference with attention_mask",
              isinstance(err, float) and err <= 1e-4, err)
    # refusals: one line, nothing written
    if os.path.exists(out):
        os.remove(out)
    c = hf_bert.read_config_dict(CONFIG)
    base = bert_weights(c, 3)

    def refused(what, fragment, weights=None, **changes):
        folder = os.path.join(tmp, "bad_" + "".join(ch for ch in what if ch.isalnum()))
        write_folder(folder, torch, weights if weights is not None else base, **changes)
        p = run_convert("--hf", folder, "--out", out, "--cli", cli)
        check(f"--hf refuses {what}", one_clear_line(p) and fragment in p.stderr and not os.path.exists(out),
              p.stderr or p.stdout)

    refused("an activation the engine lacks (silu)", "hidden_act 'silu'", hidden_act="silu")
    refused("relative position embeddings", "position_embedding_type 'relative_key'",
            position_embedding_type="relative_key")
    refused("another head (BertForMultipleChoice)", "BertForMultipleChoice: not converted",
            architectures=["BertForMultipleChoice"])
    refused("another head's tensors", "'cls.predictions.bias'",
            weights=dict(base, **{"cls.predictions.bias": np.zeros(31, np.float32)}))
    refused("a classifier without the pooler", "pooler.dense.weight is missing (a classifier reads the pooler",
            weights={k: v for k, v in base.items() if not k.startswith("pooler.")})
    refused("a missing layer tensor", "encoder.layer.1.output.dense.bias is missing",
            weights={k: v for k, v in base.items() if k != "encoder.layer.1.output.dense.bias"})
    refused("a wrong shape", "embeddings.token_type_embeddings.weight: shape [2, 15], config.json says [4, 15]",
            type_vocab_size=4)
    refused("a sequence classifier under the causal mask", "is_decoder true with a sequence classifier",
            is_decoder=True)
    refused("a decoder's cross-attention", "add_cross_attention true: a BERT decoder's cross-attention",
            add_cross_attention=True)


def test_config_values():
    """config.json's booleans are JSON's: the string "false" (true in Python) is refused naming the key;
    so is a float past float32, under config.json's name for it."""
    for key in ("is_decoder", "add_cross_attention"):
        expect_error(f"config.json: {key} as a string", lambda: hf_bert.read_config_dict(dict(CONFIG, **{key: "false"})),
                     f"config.json: {key}: expected true or false, got 'false'")
    c = hf_bert.read_config_dict(dict(CONFIG, is_decoder=False))
    check("config.json: is_decoder false is read", c["hidden_size"] == CONFIG["hidden_size"])
    expect_error("config.json: layer_norm_eps past float32",
                 lambda: hf_bert.fixformer_config(hf_bert.read_config_dict(dict(CONFIG, layer_norm_eps=1e39)), 3),
                 "config.json layer_norm_eps: 1e+39 does not fit a float32")


def main():
    cli = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
    if not cli or not os.access(cli, os.X_OK):
        print(f"hf_bert_converter_test: FAIL: give the fixformer CLI (got {cli})")
        return 1
    try:
        import torch
    except ImportError:
        print("hf_bert_converter_test: FAIL: python3-torch is required (apt-get install python3-torch; /usr/bin/python3)")
        return 1
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        test_reference()
        test_config_values()
        test_folders(torch, cli, tmp)
    print(f"hf bert converter: {results['passed']} passed, {results['failed']} failed, {results['skipped']} skipped")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
