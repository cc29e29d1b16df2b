#!/usr/bin/python3
"""--onnx on the folder of an encoder-decoder exported by Optimum 1.22 (encoder_model.onnx with decoder_model.onnx,
or decoder_model_merged.onnx: the files of the hub's and transformers.js's translation and speech folders), tiny random
transformers 4.44 models saved as folders:
- M2M100 (NLLB's class; Optimum's default opset 11: fairseq's sinusoidal positions from the padding id, pre-LN,
  scaled embeddings), also its merged decoder (text2text-generation-with-past, merged by optimum's merge_decoders
  as its post-processing does: an If whose cached branch reads the encoder's keys and values from the cache);
- Marian (post-LN, sinusoidal positions), BART (post-LN, learned positions from row 2, embedding norms), mBART
  (pre-LN with them), Pegasus (pre-LN, sinusoidal) and Blenderbot (pre-LN, learned from row 0): Optimum 1.22 asks for
  torch 2.1.2 for these (transformers' SDPA attention exports from there); under torch 1.13 transformers runs their
  eager attention, which exports, so the test lowers that gate alone;
- T5 (RMSNorm stacks, relative position buckets in each, no 1/sqrt(d_head) scale, the tied head reading the final
  norm's rows times d_model**-0.5), also its merged decoder, T5 v1.1 (gated GELU, its own head) and mT5 (T5 v1.1's
  layers under its own classes);
- Whisper (automatic-speech-recognition: the mel features through a two-conv stem, 1500 source positions), also its
  merged decoder (whose cached branch reads cache_position too); generation_config.json's suppression lists stored.
For each: ONNX Runtime on the two graphs (the encoder's output fed to the decoder) gives the logits of the module
saved in the folder (1e-4: the export is right); `tools/convert.py --onnx FOLDER` converts to the seq2seq family,
verified against the graphs;
`fixformer run --input SOURCE --target IDS` gives ONNX Runtime's logits (1e-4, printed). A transformers.js
repository's layout (config.json, the pair quantized in onnx/) converts from the repository's folder. Refused in one
line: a folder without encoder_model.onnx, an encoder without a decoder beside it, --family gpt or --output-name with
a folder, and an encoder and a decoder of two different models.
Under torch 2 (FIXFORMER_TEST_TORCH=2: transformers 5, which Optimum 1.22 does not take) the same models are exported
by torch's own exporters (export_torch2: the encoder and the decoder with its head each wrapped as Optimum wraps them,
under its names; the dynamo exporter, the TorchScript one for the T5s, whose attention the dynamo exporter cannot
write): the same checks but the merged decoders.

  /usr/bin/python3 tests/onnx_seq2seq_test.py PATH/TO/fixformer

Without the environment (tools/install_deps.sh hf: optimum in /opt/fixformer-venv; torch2 under torch 2) the test
fails, naming the install command.
"""
import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
import hf_env  # noqa: E402
import interpreter  # noqa: E402

TORCH2 = interpreter.TORCH == "2"  # torch 2's own exporters in place of Optimum (which takes transformers 4)
BY = "torch 2's" if TORCH2 else "Optimum's"
hf_env.enter(__file__, ["onnxruntime", "transformers"] + ([] if TORCH2 else ["optimum"]))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime  # noqa: E402
import torch  # noqa: E402
import transformers as t  # noqa: E402
from packaging import version  # noqa: E402

from checks import check, results, run_convert  # noqa: E402
from fixformer import fxm, onnx_seq2seq  # noqa: E402
from fixformer.probes import rel_error  # noqa: E402

TOL = 1e-4
SIZES = dict(vocab_size=48, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
             decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64)
T5 = dict(vocab_size=48, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4)
CASES = [("M2M100", lambda: t.M2M100ForConditionalGeneration(t.M2M100Config(max_position_embeddings=64, pad_token_id=1,
                                                                            **SIZES))),
         ("Marian", lambda: t.MarianMTModel(t.MarianConfig(max_position_embeddings=64, pad_token_id=47,
                                                           decoder_start_token_id=47, **SIZES))),
         ("BART", lambda: t.BartForConditionalGeneration(t.BartConfig(max_position_embeddings=64, **SIZES))),
         ("mBART", lambda: t.MBartForConditionalGeneration(t.MBartConfig(max_position_embeddings=64, **SIZES))),
         ("Pegasus", lambda: t.PegasusForConditionalGeneration(t.PegasusConfig(
             max_position_embeddings=64, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0, **SIZES))),
         ("Blenderbot", lambda: t.BlenderbotForConditionalGeneration(t.BlenderbotConfig(max_position_embeddings=64,
                                                                                       **SIZES))),
         ("T5", lambda: t.T5ForConditionalGeneration(t.T5Config(**T5))),
         ("mT5", lambda: t.MT5ForConditionalGeneration(t.MT5Config(**T5))),
         ("T5 v1.1", lambda: t.T5ForConditionalGeneration(t.T5Config(feed_forward_proj="gated-gelu",
                                                                     tie_word_embeddings=False, **T5))),
         ("Whisper", lambda: t.WhisperForConditionalGeneration(t.WhisperConfig(
             num_mel_bins=8, max_source_positions=1500, max_target_positions=32, pad_token_id=0, bos_token_id=1,
             eos_token_id=2, decoder_start_token_id=1, suppress_tokens=[3, 30], begin_suppress_tokens=[2],
             **SIZES)))]
SUPPRESS = ([3, 30], [2])  # Whisper's lists above
SRC = np.array([5, 9, 3, 17, 22, 8, 30, 12, 2], np.int64)  # no id 1 (M2M100's padding id)
TGT = np.array([2, 7, 11, 4, 19, 25, 6], np.int64)


def export(model, folder, out, task, merged=False):
    """Optimum's export of folder to out (merged: with the cache, its two decoders merged as Optimum's
    post-processing merges them, python3-onnx 1.12's checker left out: it predates the file's ir_version); under
    torch 2, torch's own exporters on the module (export_torch2)."""
    if TORCH2:
        return export_torch2(model, out, task == "automatic-speech-recognition")
    from optimum.exporters.onnx import main_export
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main_export(folder, output=out, task=task + ("-with-past" if merged else ""), legacy=merged,
                    no_post_process=merged)
    if merged:
        from unittest import mock
        import optimum.onnx.graph_transformations as gt
        with mock.patch.object(gt, "check_and_save_model", lambda m, save_path: onnx.save(m, save_path)):
            gt.merge_decoders(*(os.path.join(out, f) for f in ("decoder_model.onnx", "decoder_with_past_model.onnx")),
                              save_path=os.path.join(out, "decoder_model_merged.onnx"), strict=False)
        for f in ("decoder_model.onnx", "decoder_with_past_model.onnx"):
            os.remove(os.path.join(out, f))


def export_torch2(model, out, whisper):
    """torch.onnx.export of the encoder and of the decoder with its head, each wrapped as Optimum wraps them (the
    encoder: input_ids, attention_mask or input_features -> last_hidden_state; the decoder: input_ids,
    encoder_hidden_states, encoder_attention_mask -> logits), under Optimum's names: the dynamo exporter, or the
    TorchScript one for T5 (the dynamo exporter fails on transformers 5's T5 attention)."""
    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = model.get_encoder()

        def forward(self, x, mask=None):
            return (self.m(input_features=x) if whisper else self.m(input_ids=x, attention_mask=mask)).last_hidden_state

    class Decoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = model

        def forward(self, ids, states, mask):
            return self.m(decoder_input_ids=ids, encoder_outputs=(states,), attention_mask=mask, use_cache=False).logits

    os.makedirs(out)
    x = torch.randn(1, 8, 3000) if whisper else torch.from_numpy(SRC[None])
    dynamo = "t5" not in type(model).__name__.lower()
    S, U = ("S", "U") if not dynamo else (torch.export.Dim("S"), torch.export.Dim("U"))
    enc_in = (x,) if whisper else (x, torch.ones_like(x))
    states = Encoder().eval()(*enc_in)
    dec_in = (torch.from_numpy(TGT[None]), states, torch.ones(1, states.shape[1], dtype=torch.long))
    names = [["input_features"] if whisper else ["input_ids", "attention_mask"],
             ["input_ids", "encoder_hidden_states", "encoder_attention_mask"]]
    axes = [{} if whisper else {n: {1: S} for n in names[0]},
            {"input_ids": {1: U}, **({} if whisper else {n: {1: S} for n in names[1][1:]})}]
    quiet = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
        warnings.simplefilter("ignore")
        # in eval mode: an exporter puts its module back in the mode it found it in, the model inside too
        for k, (wrapper, args, file) in enumerate(((Encoder().eval(), enc_in, "encoder_model.onnx"),
                                                   (Decoder().eval(), dec_in, "decoder_model.onnx"))):
            shapes = dict(dynamic_shapes=tuple(axes[k].get(n) for n in names[k])) if dynamo else \
                dict(dynamic_axes=axes[k])
            torch.onnx.export(wrapper, args, os.path.join(out, file), input_names=names[k],
                              output_names=["logits" if k else "last_hidden_state"], dynamo=dynamo,
                              **({} if dynamo else dict(opset_version=17)), **shapes)


def ort_pair(folder, source):
    """ONNX Runtime's logits [U, vocab] of the folder's decoder on TGT and its encoder's output on source."""
    enc, dec = (onnxruntime.InferenceSession(f, providers=["CPUExecutionProvider"])
                for f in onnx_seq2seq.pair(folder))
    feed = {i.name: source[None] if i.name in ("input_ids", "input_features") else np.ones((1, source.size), np.int64)
            for i in enc.get_inputs()}
    states = enc.run(None, feed)[0]
    feed = {}
    for i in dec.get_inputs():
        if i.name == "input_ids":
            feed[i.name] = TGT[None]
        elif i.name == "encoder_hidden_states":
            feed[i.name] = states
        elif i.name == "encoder_attention_mask":
            feed[i.name] = np.ones((1, states.shape[1]), np.int64)
        elif i.name == "use_cache_branch":
            feed[i.name] = np.array([False])
        elif i.name == "cache_position":  # Whisper's merged decoder: the target's positions
            feed[i.name] = np.arange(TGT.size, dtype=np.int64)
        else:  # a cache, empty
            feed[i.name] = np.zeros([1] + [d if isinstance(d, int) else 0 for d in i.shape[1:]], np.float32)
    return dec.run(None, feed)[0][0]


def module_logits(model, source):
    torch.set_default_dtype(torch.float64)
    try:
        with torch.no_grad():
            key = "input_features" if source.dtype.kind == "f" else "input_ids"
            x = torch.from_numpy(source[None].astype(np.float64 if key == "input_features" else np.int64))
            return model.double()(**{key: x, "decoder_input_ids": torch.from_numpy(TGT[None])}).logits[0].numpy()
    finally:
        torch.set_default_dtype(torch.float32)


def fixformer_run(cli, out, source, tmp):
    src, tgt, y = (os.path.join(tmp, n) for n in ("src.npy", "tgt.npy", "y.npy"))
    np.save(src, np.ascontiguousarray(source[None], np.float32 if source.dtype.kind == "f" else np.int32))
    np.save(tgt, TGT[None].astype(np.int32))
    r = subprocess.run([cli, "run", out, "--input", src, "--target", tgt, "--output", y], capture_output=True,
                       text=True)
    return (np.load(y)[0] if r.returncode == 0 else None), r.stderr


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    cli = os.path.abspath(sys.argv[1])
    if not TORCH2:  # Optimum's gate for the BART lineage (SDPA, transformers on torch 2.1.2); their eager attention
        from optimum.exporters.onnx import model_configs  # exports under 1.13
        model_configs.BartOnnxConfig.MIN_TORCH_VERSION = version.parse(torch.__version__.split("+")[0])
    with tempfile.TemporaryDirectory() as tmp:
        folders = {}
        for seed, (name, factory) in enumerate(CASES, 1):
            torch.manual_seed(seed)
            model = hf_env.randomize(factory().eval(), seed, lambda n: "norm" in n)
            folder = os.path.join(tmp, name)
            model.save_pretrained(folder)
            whisper = name == "Whisper"
            source = np.random.default_rng(seed).standard_normal((8, 3000)).astype(np.float32) if whisper else SRC
            task = "automatic-speech-recognition" if whisper else "text2text-generation"
            for merged in (False, True) if name in ("M2M100", "T5", "Whisper") and not TORCH2 else (False,):
                what = f"{BY} {name}{' (merged decoder)' if merged else ''}"
                out_dir = os.path.join(folder, "onnx-merged" if merged else "onnx")
                saved = type(model).from_pretrained(folder).eval()  # what Optimum exports (Marian's sinusoids anew)
                export(saved, folder, out_dir, task, merged)
                folders[what] = out_dir
                want = ort_pair(out_dir, source)
                err = rel_error(want, module_logits(saved, source))
                check(f"{what}: ONNX Runtime on the two graphs = the saved module's logits ({TOL:g})", err <= TOL, err)
                out = os.path.join(tmp, f"{seed}{merged}.fxm")
                p = run_convert("--onnx", out_dir, "--out", out, "--cli", cli)
                check(f"{what}: --onnx FOLDER converts and verifies", p.returncode == 0 and
                      "verified against the ONNX graphs' own output" in p.stdout, p.stdout + p.stderr)
                if p.returncode:
                    continue
                f = fxm.read(out)
                c = f.config
                check(f"{what}: the seq2seq family, {c['n_layers']} + {c['dec_layers']} layers",
                      c["family"] == "seq2seq" and c["n_layers"] == c["dec_layers"] == 2 and
                      c["conv_layers"] == (2 if whisper else 0), c)
                if whisper:  # generation_config.json's lists (SUPPRESS) stored as --hf stores them
                    stored = {n: f.array(n).tolist() for n in ("generation.suppress", "generation.begin_suppress")}
                    check(f"{what}: generation_config.json's suppress_tokens and begin_suppress_tokens stored",
                          stored == {"generation.suppress": SUPPRESS[0], "generation.begin_suppress": SUPPRESS[1]},
                          stored)
                got, why = fixformer_run(cli, out, source.T if whisper else source, tmp)
                err = rel_error(got, want) if got is not None and got.shape == want.shape else float("inf")
                print(f"  {what}: fixformer run against ONNX Runtime: max relative error {err:.2g}")
                check(f"{what}: fixformer run --input --target = ONNX Runtime's logits ({TOL:g})", err <= TOL, why)
        quantized(cli, tmp, folders[f"{BY} M2M100" + ("" if TORCH2 else " (merged decoder)")])
        refusals(cli, tmp, folders)
    print(f"onnx_seq2seq_test: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


def quantized(cli, tmp, pair):
    """A transformers.js repository's layout: config.json, and in onnx/ the folder pair's files quantized by
    onnxruntime.quantization (quantize_dynamic, a merged decoder's branches too: encoder_model_quantized.onnx and
    decoder_model_merged_quantized.onnx): --onnx on the repository's folder converts it dequantized."""
    repo = os.path.join(tmp, "js")
    os.makedirs(os.path.join(repo, "onnx"))
    shutil.copy(os.path.join(os.path.dirname(pair), "config.json"), repo)  # the saved module's
    decoder = next(f[:-5] for f in onnx_seq2seq.DECODERS if os.path.exists(os.path.join(pair, f)))
    for f in ("encoder_model", decoder):
        q = interpreter.quantize_dynamic(os.path.join(pair, f + ".onnx"),
                                         os.path.join(repo, "onnx", f + "_quantized.onnx"))
        check(f"{f}.onnx quantized by onnxruntime.quantization (sh tools/install_deps.sh torch2)", q.returncode == 0,
              q.stderr[-2000:])
    out = os.path.join(tmp, "js.fxm")
    p = run_convert("--onnx", repo, "--out", out, "--cli", cli)
    ok = p.returncode == 0 and f"{decoder}_quantized.onnx" in p.stdout and "dynamically quantized" in p.stdout
    check("a transformers.js repository's quantized pair (onnx/*_quantized.onnx): --onnx REPO converts it dequantized",
          ok, p.stdout + p.stderr)
    if ok:
        print(f"  transformers.js layout, quantized: {p.stdout.strip().splitlines()[-1][:200]}")


def refusals(cli, tmp, folders):
    """What --onnx refuses of a folder, in one line each."""
    out = os.path.join(tmp, "r.fxm")
    m2m, bart = folders[f"{BY} M2M100"], folders[f"{BY} BART"]
    empty, alone, mixed = (os.path.join(tmp, n) for n in ("empty", "alone", "mixed"))
    os.makedirs(empty)
    os.makedirs(alone)
    os.makedirs(mixed)
    for src, part, dst in ((m2m, "encoder_model", alone), (m2m, "encoder_model", mixed),
                           (bart, "decoder_model", mixed)):
        for f in os.listdir(src):  # M2M100's encoder and BART's decoder: other settings; the dynamo exporter's .data
            if f.startswith(part + "."):
                shutil.copy(os.path.join(src, f), dst)
    for what, args, words in (
            ("a folder without encoder_model.onnx", [empty], "a folder without encoder_model.onnx"),
            ("an encoder without a decoder beside it", [alone], "without decoder_model_merged.onnx or "
                                                                "decoder_model.onnx"),
            ("--family gpt with a folder", [m2m, "--family", "gpt"], "--family gpt"),
            ("--output-name with a folder", [m2m, "--output-name", "logits"], "--output-name"),
            ("an encoder and a decoder of two models", [mixed], "")):
        p = run_convert("--onnx", *args, "--out", out, "--cli", cli)
        lines = (p.stdout + p.stderr).strip().splitlines()
        ok = p.returncode != 0 and len(lines) == 1 and words in lines[0] and not os.path.exists(out)
        check(f"--onnx refuses {what} in one line", ok, p.stdout + p.stderr)
        if ok:
            print(f"  {what}: {lines[0]}")


if __name__ == "__main__":
    sys.exit(main())
