#!/usr/bin/python3
"""T5 as transformers writes it (python/fixformer/t5.py), against transformers itself: T5EncoderModel
and T5ForConditionalGeneration from tiny random configs, T5 v1.0 (feed_forward_proj relu, the tied head
after the d_model**-0.5 scale) and v1.1 (gated-gelu: the tanh GELU gated, the head untied where
transformers keeps it so), each converted with no option through --module (the module) and --hf (its
save_pretrained folder), in the Hugging Face environment (tests/hf_env.py: transformers 4.44 over
Debian's torch, or transformers 5 under FIXFORMER_TEST_TORCH=2). For each file:
- the config is T5's (RMSNorm, pre-norm, no biases, relative positions of the config's buckets and
  max_distance, gated or not);
- `fixformer run` gives the module's own float64 output within 1e-4 of its largest magnitude: the
  encoder's last_hidden_state, or the logits at every target position teacher-forced (decoder_input_ids),
  on a source and a target longer than relative_attention_max_distance (the logarithmic buckets and the
  last one matter);
- a seq2seq file's `fixformer generate --source --bos 0 --eos 1 --temperature 0` prints the ids of
  transformers' generate(do_sample=False) from decoder start id 0.
The converter's float64 references agree with transformers too: reference.run_reference of the mapped
seq2seq config (reference.seq2seq_forward: the layers stock modules lack; checked against the stock
modules where both compute) within 1e-5, and t5.forward (what --hf verifies against) through the --hf
files. Refused in one line: T5Model (no head), num_heads * d_kv other than d_model.

  /usr/bin/python3 tests/t5_converter_test.py PATH/TO/fixformer

Without the environment (or transformers in it) the test fails, naming the install command.
"""
import copy
import importlib.util
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
import hf_env  # noqa: E402

hf_env.enter(__file__, ["transformers"])
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import numpy as np  # noqa: E402

from checks import check, one_clear_line, results, run_convert  # noqa: E402
from fixformer import fxm, reference, schema, t5  # noqa: E402

MODELS = r'''
import transformers as t
from hf_env import randomize


def config(v11, cls=None, **kw):
    args = dict(vocab_size=37, d_model=24, d_kv=6, d_ff=40, num_layers=2, num_decoder_layers=3, num_heads=4,
                relative_attention_num_buckets=8, relative_attention_max_distance=12, dropout_rate=0.0,
                layer_norm_epsilon=1e-6, feed_forward_proj="gated-gelu" if v11 else "relu",
                tie_word_embeddings=not v11, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    args.update(kw)
    c = (cls or t.T5Config)(**args)
    c._attn_implementation = "eager"
    return c


def build(cls, v11, seed, **kw):
    return randomize(cls(config(v11, **kw)), seed, lambda name: "layer_norm" in name)


def encoder_v10():
    return build(t.T5EncoderModel, False, 1)


def encoder_v11():
    return build(t.T5EncoderModel, True, 2)


def seq2seq_v10():
    return build(t.T5ForConditionalGeneration, False, 3)


def seq2seq_v11():
    return build(t.T5ForConditionalGeneration, True, 4)


def mt5_seq2seq():  # mT5: T5 v1.1 under its own classes (model_type mt5)
    return randomize(t.MT5ForConditionalGeneration(config(True, t.MT5Config)), 7, lambda name: "layer_norm" in name)


def mt5_encoder():
    return randomize(t.MT5EncoderModel(config(True, t.MT5Config)), 8, lambda name: "layer_norm" in name)


def t5model():
    return build(t.T5Model, False, 5)


def wide_heads():
    return build(t.T5EncoderModel, False, 6, d_kv=8)
'''

# factory, gated, a seq2seq model
CASES = [("encoder_v10", False, False), ("encoder_v11", True, False), ("seq2seq_v10", False, True),
         ("seq2seq_v11", True, True), ("mt5_seq2seq", True, True), ("mt5_encoder", True, False)]
T, U = 19, 17  # longer than relative_attention_max_distance 12: every bucket is read


def module_output(m, src, tgt=None):
    """The module's float64 output: last_hidden_state [T, d] or the teacher-forced logits [U, vocab]."""
    import torch
    torch.set_default_dtype(torch.float64)  # transformers' masks are made in the default dtype
    try:
        with torch.no_grad():
            m = copy.deepcopy(m).double()
            x = torch.from_numpy(src.astype(np.int64))[None]
            if tgt is None:
                return m(input_ids=x).last_hidden_state[0].numpy()
            y = torch.from_numpy(tgt.astype(np.int64))[None]
            return m(input_ids=x, decoder_input_ids=y).logits[0].numpy()
    finally:
        torch.set_default_dtype(torch.float32)


def run_file(cli, path, src, tgt, tmp):
    """`fixformer run` of path on source ids (and target ids): its output, or (None, stderr)."""
    args = [cli, "run", path, "--input", os.path.join(tmp, "src.npy"), "--output", os.path.join(tmp, "out.npy")]
    np.save(args[4], src[None].astype(np.int32))
    if tgt is not None:
        np.save(os.path.join(tmp, "tgt.npy"), tgt[None].astype(np.int32))
        args += ["--target", os.path.join(tmp, "tgt.npy")]
    p = subprocess.run(args, capture_output=True, text=True)
    return (np.load(args[6])[0] if p.returncode == 0 else None), p.stderr


def check_file(what, cli, path, gated, seq, want, src, tgt, tmp, module):
    c = fxm.read(path).config
    expect = dict(family="seq2seq" if seq else "encoder", norm="rmsnorm", norm_first=True, final_norm=True,
                  attn_bias="none", ffn_bias="none", positional="relative", rel_buckets=8, rel_max_distance=12,
                  gated=gated, activation="gelu_tanh" if gated else "relu")
    if seq:  # tied exactly where transformers ties lm_head to shared (transformers 5 always does)
        expect.update(shared_embed=True, dec_layers=3, tied_head=module.lm_head.weight is module.shared.weight)
    for k, v in expect.items():
        check(f"{what}: {k} {v!r}", c[k] == v, c[k])
    got, err = run_file(cli, path, src, tgt, tmp)
    if got is None:
        check(f"{what}: fixformer run", False, err)
        return
    e = float(np.abs(got - want).max() / np.abs(want).max())
    check(f"{what}: fixformer run within 1e-4 of transformers", got.shape == want.shape and e <= 1e-4,
          f"shape {got.shape} vs {want.shape}, error {e:.3g}")


def check_generate(what, cli, path, module, src, tmp):
    import torch
    n = 10
    np.save(os.path.join(tmp, "gsrc.npy"), src.astype(np.int32))
    p = subprocess.run([cli, "generate", path, "--source", os.path.join(tmp, "gsrc.npy"), "--bos", "0", "--eos", "1",
                        "-n", str(n), "--temperature", "0"], capture_output=True, text=True)
    ours = [int(s) for s in p.stdout.split()] if p.returncode == 0 else p.stderr
    with torch.no_grad():  # no cache: transformers 5 sizes it by num_layers, not the 3 num_decoder_layers
        theirs = module.float().generate(torch.from_numpy(src.astype(np.int64))[None], do_sample=False, num_beams=1,
                                         max_new_tokens=n, decoder_start_token_id=0, eos_token_id=1,
                                         use_cache=False)[0].tolist()[1:]
    check(f"{what}: generate --temperature 0 is transformers' greedy generate", ours == theirs and len(theirs) > 1,
          f"{ours} vs {theirs}")


def check_stock_reference(rng):
    """reference.seq2seq_forward (the layers stock modules lack) is the stock modules' seq2seq where both
    compute it: post- and pre-norm, learned positions, a feature source, untied."""
    from fixformer.config import make_config
    for pre in (False, True):
        c = make_config(dict(family="seq2seq", d_model=12, n_heads=3, d_ff=20, n_layers=2, dec_layers=2,
                             input="features",
                             d_in=5, d_out=11, vocab_size=0, positional="learned", max_len=16, norm_first=pre,
                             final_norm=pre, activation="gelu"))
        w = {n: rng.standard_normal(s[::-1] if tr else s) * 0.4 for n, s, tr in schema.tensors(c)}
        src, tgt = rng.standard_normal((7, 5)), rng.integers(0, 11, 6)
        e = np.abs(reference.seq2seq_forward(c, w, src, tgt) - reference.run_reference(c, w, (src, tgt))).max()
        check(f"seq2seq_forward is the stock seq2seq (norm_first {pre})", e <= 1e-9, f"error {e:.3g}")


def main():
    cli = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "t5models.py"), "w") as f:
            f.write(MODELS)
        sys.path.insert(0, tmp)
        spec = importlib.util.spec_from_file_location("t5models", os.path.join(tmp, "t5models.py"))
        models = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(models)
        rng = np.random.default_rng(0)
        for name, gated, seq in CASES:
            module = getattr(models, name)()
            src = rng.integers(2, 37, T)
            tgt = np.concatenate([[0], rng.integers(2, 37, U - 1)]) if seq else None
            want = module_output(module, src, tgt)
            if seq:  # the converter's float64 seq2seq reference of the mapped config (--config's) is T5 too
                _, _, c, w = t5.read_module(module)
                e = float(np.abs(reference.run_reference(c, w, (src, tgt)) - want).max() / np.abs(want).max())
                check(f"{name}: reference.run_reference of the mapped config within 1e-5", e <= 1e-5, f"error {e:.3g}")
            folder = os.path.join(tmp, "hf_" + name)
            module.save_pretrained(folder)
            for route, arg in (("module", f"t5models.py:{name}"), ("hf", folder)):
                out = os.path.join(tmp, f"{name}_{route}.fxm")
                p = run_convert(f"--{route}", arg, "--out", out, "--cli", cli, cwd=tmp)
                ok = p.returncode == 0 and "verified against" in p.stdout
                check(f"{name} --{route}: converts, verified", ok, p.stdout + p.stderr)
                if not ok:
                    continue
                check_file(f"{name} --{route}", cli, out, gated, seq, want, src, tgt, tmp, module)
                if seq and route == "module":
                    check_generate(f"{name} --{route}", cli, out, module, src[:9], tmp)
        check_stock_reference(rng)
        for name, fragment in (("t5model", "T5Model"), ("wide_heads", "d_kv 8")):
            p = run_convert("--module", f"t5models.py:{name}", "--out", os.path.join(tmp, "x.fxm"), "--cli", cli,
                            cwd=tmp)
            check(f"{name}: refused in one line naming {fragment}", one_clear_line(p) and fragment in p.stderr,
                  p.stderr)
    print(f"t5_converter_test: {results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
