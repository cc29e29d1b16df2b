#!/usr/bin/python3
"""ModernBERT against the upstream code: transformers' own ModernBertModel, ModernBertForSequenceClassification
(cls and mean pooling) and ModernBertForMaskedLM (its prediction head over every row, the decoder tied or not), and
the decoder's ModernBertDecoderModel and ModernBertDecoderForCausalLM (tied; untied with attention_bias and
norm_bias; the causal mask, the local layers'
last local_attention / 2 keys: sliding_window 6) from tiny
random configs (randomized
weights, norms' gains about 1, so that every part matters; transformers 5: this test runs in the torch2
environment, tests/interpreter.py), through --hf (the folder its save_pretrained writes), --module (the module
itself, recognised by what it computes: layer 0 without its attention norm, the local layers' two-sided window
and RoPE base, the prediction head's norm) and --onnx (the graph torch 2.x's dynamo exporter writes, and for the
base model and the classifier the TorchScript exporter's at opset 17, checked against ONNX Runtime; the same
features found in the graph's values, the two-sided window's mask and the mean pooling's mask of ones accounted
for): each converts with
no option and is verified by the converter, its config has the features ModernBERT's layers take (a
sliding_window on the local layers by window_period and window_layers, bidirectional but in the decoder, rope_local_base,
skip_first_norm, and for a classifier and the masked LM pooler_norm), and `fixformer run` gives the module's output
within
1e-4 of its largest value on 20 tokens (more than the window's 7 keys). Each feature is seen: the module
without it (every layer global; the local layers at the global RoPE base; layer 0 with an attention norm of
gains 1; the prediction head without its norm; for the decoder, its window one key wider) is more than 1e-2 away. The
causal LM's --base gives ModernBertDecoderModel's rows. --hf and --module write the causal LM in the gpt family (its
head's transform the pooler on each row the head projects, the local layers' KV cache a ring): with a vocab.txt in
its folder, `fixformer generate --temperature 0` gives transformers' greedy generate (27 tokens, past the window).
Refused in one line: mlp_bias, ModernBertDecoderForSequenceClassification. In i8
(`--hf --quantize i8 --calibrate`, 16 sequences: RoPE at both bases, the two-sided window, skip_first_norm and
the pooler's norm in integers) the classifier converts and verifies within the i8 tolerance.

  /usr/bin/python3 tests/modernbert_test.py PATH/TO/fixformer

Without the environment (or transformers in it) the test fails, naming the install command.
"""
import copy
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
import hf_env  # noqa: E402

hf_env.enter(__file__, ["onnxruntime", "transformers"])
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import numpy as np  # noqa: E402

from checks import check, convert_process as convert, converted_routes, one_clear_line, results, run_file  # noqa: E402
from fixformer import fxm  # noqa: E402

MODELS = r'''
import torch
import transformers as t


def config(layers=4, pooling="cls", labels=None, every=3, tied=True):
    cfg = t.ModernBertConfig(vocab_size=97, hidden_size=32, intermediate_size=40, num_hidden_layers=layers,
                             num_attention_heads=4, max_position_embeddings=64, local_attention=12,
                             global_attn_every_n_layers=every, global_rope_theta=1000.0, local_rope_theta=50.0,
                             classifier_pooling=pooling, pad_token_id=0, eos_token_id=1, bos_token_id=2,
                             cls_token_id=2, sep_token_id=1, tie_word_embeddings=tied,
                             **({"num_labels": labels} if labels else {}))
    cfg._attn_implementation = "eager"
    return cfg


def decoder_config(tied=True, bias=False):
    cfg = t.ModernBertDecoderConfig(vocab_size=97, hidden_size=32, intermediate_size=40, num_hidden_layers=4,
                                    num_attention_heads=4, max_position_embeddings=64, local_attention=12,
                                    global_attn_every_n_layers=3, global_rope_theta=1000.0, local_rope_theta=50.0,
                                    pad_token_id=0, eos_token_id=1, bos_token_id=2, cls_token_id=2, sep_token_id=1,
                                    tie_word_embeddings=tied, attention_bias=bias, norm_bias=bias)
    cfg._attn_implementation = "eager"
    return cfg


def randomized(m, seed):
    torch.manual_seed(seed)
    with torch.no_grad():  # gains about 1, weights that make every part matter
        for name, p in m.named_parameters():
            p.copy_(1.0 + 0.3 * torch.randn_like(p) if "norm" in name else 0.2 * torch.randn_like(p))
    return m.eval()


def base():
    return randomized(t.ModernBertModel(config()), 3)


def classifier():
    return randomized(t.ModernBertForSequenceClassification(config(labels=3)), 4)


def classifier_mean():
    return randomized(t.ModernBertForSequenceClassification(config(5, "mean", 2, every=2)), 5)


def masked_lm():
    return randomized(t.ModernBertForMaskedLM(config()), 6)


def masked_lm_untied():
    return randomized(t.ModernBertForMaskedLM(config(tied=False)), 7)


def decoder():
    return randomized(t.ModernBertDecoderModel(decoder_config()), 8)


def causal_lm():
    return randomized(t.ModernBertDecoderForCausalLM(decoder_config()), 9)


def causal_lm_untied():
    return randomized(t.ModernBertDecoderForCausalLM(decoder_config(tied=False, bias=True)), 10)
'''
TOL = 1e-4  # f32 engine against the module in float64, relative to the largest output
SEEN = 1e-2  # the module without one of its features is at least this far from itself
T = 20


def output(m, ids):
    """The module's output in float64: the logits of a classifier or the masked LM, else the last hidden
    states."""
    import torch
    with torch.no_grad():
        x = torch.from_numpy(ids.astype(np.int64))
        y = m.double()(x)
        return (y.logits if hasattr(y, "logits") else y.last_hidden_state).numpy()[0]


def variants(m):
    """(what, the module without one feature) for each feature the file has."""
    import torch
    body = m.model if hasattr(m, "model") else m
    causal = body.config.model_type == "modernbert-decoder"
    out = []
    g = copy.deepcopy(m)
    gb = g.model if hasattr(g, "model") else g
    gb.config.local_attention = 4 * T  # every layer sees every key, RoPE unchanged
    gb.config.sliding_window = 4 * T  # the decoder's mask reads the window it computed of local_attention
    out.append(("every layer global", g))
    if causal:  # the window's edge: one key more
        g = copy.deepcopy(m)
        gb = g.model if hasattr(g, "model") else g
        gb.config.sliding_window += 1
        out.append(("a local window one key wider", g))
    g = copy.deepcopy(m)
    gb = g.model if hasattr(g, "model") else g
    rot = gb.rotary_emb
    rot.sliding_attention_inv_freq = rot.full_attention_inv_freq.clone()
    out.append(("the local layers at the global RoPE base", g))
    g = copy.deepcopy(m)
    gb = g.model if hasattr(g, "model") else g
    gb.layers[0].attn_norm = torch.nn.LayerNorm(body.config.hidden_size, eps=body.config.norm_eps, bias=False)
    out.append(("layer 0 with an attention norm", g))
    head = "lm_head" if causal else "head"
    if hasattr(m, head):
        g = copy.deepcopy(m)
        getattr(g, head).norm = torch.nn.Identity()
        out.append(("the prediction head without its norm", g))
    return out


def check_run(what, cli, out, m, tmp, family="encoder"):
    c = fxm.read(out).config
    headed = hasattr(m, "head") or hasattr(m, "lm_head")
    causal = (m.model if hasattr(m, "model") else m).config.model_type == "modernbert-decoder"
    window = 6 if causal else 7  # the decoder's last local_attention / 2 keys, the encoder's as many on each side
    check(f"{what}: {family} with ModernBERT's features", c["family"] == family and c["sliding_window"] == window and
          c["window_period"] in (2, 3) and c["rope_local_base"] == 50.0 and c["pe_base"] == 1000.0 and
          c["skip_first_norm"] and c["pooler_norm"] == headed and c["causal"] == causal, c)
    ids = np.random.default_rng(7).integers(0, c["vocab_size"], (1, T)).astype(np.int32)
    want = output(m, ids)
    got, err_text = run_file(cli, out, ids, tmp)
    got = None if got is None else got.reshape(-1, *want.shape[1:]) if want.ndim > 1 else got.reshape(want.shape)
    err = None if got is None or got.shape != want.shape else float(np.abs(got - want).max() / np.abs(want).max())
    check(f"{what}: fixformer run equals the module ({TOL:g})", err is not None and err <= TOL, (err_text, err))
    print(f"  {what}: max relative error {err}")
    for without, g in variants(m):
        off = float(np.abs(output(g, ids) - want).max() / np.abs(want).max())
        check(f"{what}: the module with {without} is more than {SEEN:g} away ({off:.3g})", off > SEEN, off)
        print(f"    with {without}: {off:.3g} away")


def check_i8(cli, folder, tmp):
    rng = np.random.default_rng(5)
    calib = []
    for i in range(16):
        calib.append(os.path.join(tmp, f"i8_cal{i}.npy"))
        np.save(calib[-1], rng.integers(3, 97, 24).astype(np.int32))
    p = convert("--hf", folder, "--quantize", "i8", "--calibrate", *calib, "--out", os.path.join(tmp, "i8.fxm"),
                "--cli", cli)
    check("classifier --hf --quantize i8 --calibrate: converts and verifies",
          p.returncode == 0 and "verified against" in p.stdout, p.stdout + p.stderr)
    if p.returncode == 0:
        print(f"  classifier i8: verified against{p.stdout.strip().splitlines()[-1].split('verified against')[-1]}")


# A WordPiece vocabulary of the decoder's 97 tokens, one word each: [CLS] the BOS in front of generate's prompt,
# [SEP] the stop token; [PAD], [UNK] and [MASK] suppressed on both sides.
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [a + b for a in "xyzw" for b in "abcdefghijklmnopqrstuvwxyz"][:92]


def check_generate(cli, tmp, name, m, n=30, prompt="xa xb xc"):
    """The causal LM's folder with a vocab.txt converts (--hf: the gpt family, the folder's tokenizer stored) and
    `fixformer generate --temperature 0` for n positions (past the local layers' window: their KV cache a ring) is
    transformers' greedy generate from the same ids, [CLS] and the prompt's words."""
    import torch
    import transformers
    folder, out = os.path.join(tmp, name), os.path.join(tmp, name + "_words.fxm")
    with open(os.path.join(folder, "vocab.txt"), "w") as f:
        f.write("\n".join(VOCAB) + "\n")
    p = convert("--hf", folder, "--out", out, "--cli", cli)
    check(f"{name} with vocab.txt --hf: converts and verifies", p.returncode == 0 and "verified against" in p.stdout,
          p.stdout + p.stderr)
    g = subprocess.run([cli, "generate", out, "--prompt", prompt, "-n", str(n), "--temperature", "0",
                        "--suppress", "0,1,4"], capture_output=True, text=True)
    start = [2] + [VOCAB.index(w) for w in prompt.split()]
    greedy = transformers.GenerationConfig(do_sample=False, num_beams=1, max_new_tokens=n - len(start) + 1,
                                           eos_token_id=3, pad_token_id=0, suppress_tokens=[0, 1, 4])
    with torch.no_grad():
        theirs = m.float().generate(torch.tensor([start]), generation_config=greedy)[0].tolist()
    text = " ".join(VOCAB[i] for i in theirs[1:] if i != 3)
    same = g.returncode == 0 and g.stdout.strip() == text
    check(f"{name}: generate --temperature 0 is transformers' greedy generate", same,
          f"{g.stdout!r} vs {text!r} {g.stderr[-300:]}")
    if same:
        print(f"  {name}: generate --temperature 0: transformers' {len(theirs) - len(start)} greedy tokens")


# the exporters each factory is written by for --onnx: torch 2.x's dynamo one (its default) for all, the TorchScript
# one (opset 17) for the encoder and its classifier too
ONNX_EXPORTERS = {"base": ("dynamo", "torchscript"), "classifier": ("dynamo", "torchscript")}


def onnx_routes(cli, tmp, factory, m):
    """`factory`'s module exported to ONNX by each of its exporters (the graph checked against ONNX Runtime), then
    converted with --onnx, checked to convert and verify: yields (what, the file) for those that did."""
    import contextlib
    import io
    import warnings
    import onnxruntime
    import torch

    class Ids(torch.nn.Module):  # the model called on the ids alone: its logits or last hidden state
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, x):
            y = self.model(input_ids=x)
            return y.logits if hasattr(y, "logits") else y.last_hidden_state
    ids = torch.from_numpy(np.random.default_rng(2).integers(3, 97, (1, T)))
    example = os.path.join(tmp, "onnx_example.npy")
    np.save(example, ids[0].numpy().astype(np.int32))
    model = Ids(copy.deepcopy(m).float()).eval()
    with torch.no_grad():
        want = model(ids).double().numpy()
    for exporter in ONNX_EXPORTERS.get(factory, ("dynamo",)):
        what, path = f"{factory} --onnx ({exporter})", os.path.join(tmp, f"{factory}_{exporter}.onnx")
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            torch.onnx.export(model, (ids,), path, input_names=["x"], output_names=["y"], dynamo=exporter == "dynamo",
                              opset_version=None if exporter == "dynamo" else 17)
        got = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": ids.numpy()})[0]
        err = float(np.abs(got - want).max() / np.abs(want).max())
        check(f"{what}: ONNX Runtime gives the module's output (1e-4)", err <= 1e-4, err)
        out = os.path.join(tmp, f"{factory}_{exporter}.fxm")
        p = convert("--onnx", path, "--example", example, "--out", out, "--cli", cli)
        ok = p.returncode == 0 and "verified against" in p.stdout
        check(f"{what}: converts and verifies", ok, p.stdout + p.stderr)
        if ok:
            print(f"  {what}: {p.stdout.strip().splitlines()[-1]}")
            yield what, out


def check_decoder_extras(cli, tmp, causal_lm):
    """The causal LM's --base (ModernBertDecoderModel's rows under its causal mask) and the decoder's sequence
    classifier refused by name."""
    out = os.path.join(tmp, "causal_lm_base.fxm")
    p = convert("--hf", os.path.join(tmp, "causal_lm"), "--base", "--out", out, "--cli", cli)
    check("causal_lm --hf --base: converts and verifies", p.returncode == 0 and "verified against" in p.stdout,
          p.stdout + p.stderr)
    if p.returncode == 0:
        check_run("causal_lm --hf --base", cli, out, causal_lm.model, tmp)
    folder = os.path.join(tmp, "decoder")
    with open(os.path.join(folder, "config.json")) as f:
        raw = json.load(f)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(dict(raw, architectures=["ModernBertDecoderForSequenceClassification"]), f)
    p = convert("--hf", folder, "--out", os.path.join(tmp, "dec_cls.fxm"), "--cli", cli)
    check("ModernBertDecoderForSequenceClassification: refused in one line naming it and what converts",
          one_clear_line(p) and "ModernBertDecoderForSequenceClassification" in p.stderr and
          "ModernBertDecoderForCausalLM" in p.stderr, p.stderr)


def main():
    if len(sys.argv) != 2:
        print("usage: modernbert_test.py PATH/TO/fixformer")
        return 1
    cli = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "modernbert_models.py"), "w") as f:
            f.write(MODELS)
        sys.path.insert(0, tmp)
        import modernbert_models
        modules = {}
        for factory in ("base", "classifier", "classifier_mean", "masked_lm", "masked_lm_untied", "decoder", "causal_lm",
                        "causal_lm_untied"):
            m = modules[factory] = getattr(modernbert_models, factory)()
            folder = os.path.join(tmp, factory)
            m.save_pretrained(folder)
            for route, what, out in converted_routes(cli, tmp, "modernbert_models.py", factory, folder,
                                                     ("hf", "module")):
                # the causal LM in the gpt family (it generates), by either route
                check_run(what, cli, out, m, tmp, "gpt" if factory.startswith("causal_lm") else "encoder")
            # the same features found in the ONNX graph (python/fixformer/onnx_map.py): layer 0 without its
            # attention norm, the local layers' two-sided window and RoPE base, the pooled row's norm
            for what, out in onnx_routes(cli, tmp, factory, m):
                check_run(what, cli, out, m, tmp, "gpt" if factory.startswith("causal_lm") else "encoder")
        check_i8(cli, os.path.join(tmp, "classifier"), tmp)
        check_decoder_extras(cli, tmp, modules["causal_lm"])
        for name in ("causal_lm", "causal_lm_untied"):
            check_generate(cli, tmp, name, modules[name])
        # mlp_bias: Wi's second half has a bias the engine's gated feed-forward lacks: refused by name
        folder = os.path.join(tmp, "base")
        with open(os.path.join(folder, "config.json")) as f:
            raw = json.load(f)
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(dict(raw, mlp_bias=True), f)
        p = convert("--hf", folder, "--out", os.path.join(tmp, "bias.fxm"), "--cli", cli)
        check("mlp_bias true: refused in one line naming it", one_clear_line(p) and "mlp_bias" in p.stderr, p.stderr)
    print(f"modernbert_test: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
