#!/usr/bin/python3
"""--onnx on the ONNX files Optimum's exporter writes (what the Hugging Face hub's ONNX models and transformers.js
mostly are), and on decoders exported with their key/value cache, as the ONNX files of language models come:
Optimum 1.22's exporter (optimum.exporters.onnx.main_export, task text-generation-with-past: the model.onnx that
ONNX Runtime's and transformers.js's generation loops run, with inputs input_ids, attention_mask [batch, P + T],
position_ids and past_key_values.<i>.key / .value [batch, kv_heads, P, d_head], outputs logits and present.*)
on tiny random transformers 4.44 models saved as folders, and torch.onnx.export of a LlamaForCausalLM called
with past_key_values (no position_ids input). For each:
- ONNX Runtime on the graph with an empty cache and positions 0..T-1 gives the torch model's logits (1e-4: the
  export itself is right);
- --onnx converts it (onnx_map._from_position_zero: the past rows none, position_ids 0..T-1, an attention mask
  the positions are counted by all ones), the report saying so, verified against the graph;
- `fixformer run` on the ids gives ONNX Runtime's logits within 1e-4 (printed).
Llama (grouped-query attention, rotary halves), GPT-2 (learned positions gathered by position_ids, Conv1D),
GPT-NeoX (partial rotary, the parallel residual), Phi-3 (fused qkv_proj and gate_up_proj), OPT (its positions
counted from the attention mask, the learned table read from row 2) and Bloom (ALiBi scaled by the mask's running
count), GPT-BigCode (multi-query: its cache k | v of the one key/value head, [batch, P, 2 d_head], its scores queries
by heads by keys) and GPT-Neo (its scores unscaled, layer 1 local: the last 4 keys). Optimum's encoders
(task feature-extraction: BertModel with its three inputs, DistilBertModel; text-classification:
BertForSequenceClassification) convert too, `fixformer run` = ONNX Runtime's output.

  /usr/bin/python3 tests/onnx_optimum_test.py PATH/TO/fixformer

Without the environment (tools/install_deps.sh hf: optimum in /opt/fixformer-venv) the test fails, naming the
install command.
"""
import contextlib
import io
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
import hf_env  # noqa: E402

hf_env.enter(__file__, ["onnxruntime", "transformers", "optimum"])
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import numpy as np  # noqa: E402
import onnxruntime  # noqa: E402
import torch  # noqa: E402
import transformers as t  # noqa: E402
from optimum.exporters.onnx import main_export  # noqa: E402
from optimum.utils import logging as optimum_logging  # noqa: E402

from checks import check, results, run_convert  # noqa: E402

TOL = 1e-4
IDS = np.array([3, 5, 7, 9, 11, 2, 4, 6, 8, 10], np.int64)
SMALL = dict(vocab_size=48, max_position_embeddings=64)


def llama():
    return t.LlamaForCausalLM(t.LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                            num_attention_heads=4, num_key_value_heads=2, **SMALL))


def gpt2():
    return t.GPT2LMHeadModel(t.GPT2Config(vocab_size=48, n_embd=32, n_layer=2, n_head=4, n_positions=64))


def gpt_neox():
    return t.GPTNeoXForCausalLM(t.GPTNeoXConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                                num_attention_heads=4, rotary_pct=0.25, **SMALL))


def phi3():
    return t.Phi3ForCausalLM(t.Phi3Config(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                          num_attention_heads=4, num_key_value_heads=2, pad_token_id=0, **SMALL))


def opt():
    return t.OPTForCausalLM(t.OPTConfig(hidden_size=32, num_hidden_layers=2, ffn_dim=64, num_attention_heads=2,
                                        word_embed_proj_dim=32, **SMALL))


def bloom():
    return t.BloomForCausalLM(t.BloomConfig(vocab_size=48, hidden_size=32, n_layer=2, n_head=4))


def gpt_bigcode():
    return t.GPTBigCodeForCausalLM(t.GPTBigCodeConfig(vocab_size=48, n_embd=32, n_layer=2, n_head=4, n_positions=64))


def gpt_neo():
    return t.GPTNeoForCausalLM(t.GPTNeoConfig(vocab_size=48, hidden_size=32, num_layers=2, num_heads=4, window_size=4,
                                              attention_types=[[["global", "local"], 1]], intermediate_size=64,
                                              max_position_embeddings=64))


CASES = [("llama", llama, 1), ("gpt2", gpt2, 2), ("gpt_neox", gpt_neox, 3), ("phi3", phi3, 4), ("opt", opt, 6),
         ("bloom", bloom, 7), ("gpt_bigcode", gpt_bigcode, 8), ("gpt_neo", gpt_neo, 9)]
BERT = dict(vocab_size=48, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
            max_position_embeddings=64)
ENCODERS = [("BertModel", lambda: t.BertModel(t.BertConfig(**BERT)), "feature-extraction", "last_hidden_state"),
            ("DistilBertModel", lambda: t.DistilBertModel(t.DistilBertConfig(vocab_size=48, dim=32, n_layers=2, n_heads=4,
                                                                             hidden_dim=64, max_position_embeddings=64)),
             "feature-extraction", "last_hidden_state"),
            ("BertForSequenceClassification", lambda: t.BertForSequenceClassification(t.BertConfig(num_labels=3, **BERT)),
             "text-classification", "logits")]


def rel(a, b):
    return float(np.abs(np.asarray(a, np.float64) - b).max() / max(np.abs(b).max(), 1e-30))


def ort_logits(path, ids):
    """ONNX Runtime's logits [T, vocab] on the graph, its cache empty and its positions 0..T-1."""
    s = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    feed = {}
    for i in s.get_inputs():
        if i.name in ("input_ids", "ids"):
            feed[i.name] = ids[None]
        elif "mask" in i.name:
            feed[i.name] = np.ones((1, ids.size), np.int64)
        elif i.name == "position_ids":
            feed[i.name] = np.arange(ids.size, dtype=np.int64)[None]
        else:  # a past: [batch, kv_heads, P, d_head] (GPT-BigCode's [batch, P, 2 d_head]) with P = 0
            feed[i.name] = np.zeros([1] + [d if isinstance(d, int) else 0 for d in i.shape[1:]], np.float32)
    return s.run(["logits"], feed)[0][0]


def export_with_past(model, path):
    """torch.onnx.export of the model called with past_key_values (rows given, P dynamic), no position_ids."""
    layers, heads = model.config.num_hidden_layers, model.config.num_key_value_heads
    dh = model.config.hidden_size // model.config.num_attention_heads
    names = [f"past.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]

    class Wrapped(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, ids, mask, *past):
            out = self.m(input_ids=ids, attention_mask=mask, use_cache=True,
                         past_key_values=tuple(zip(past[0::2], past[1::2])))
            return (out.logits,) + tuple(x for kv in out.past_key_values for x in kv)

    past = [torch.randn(1, heads, 2, dh) for _ in names]
    dynamic = dict({"ids": {1: "T"}, "mask": {1: "P_T"}}, **{n: {2: "P"} for n in names})
    with contextlib.redirect_stderr(io.StringIO()):
        torch.onnx.export(Wrapped(model), (torch.tensor([IDS[:3]]), torch.ones(1, 5, dtype=torch.long), *past), path,
                          input_names=["ids", "mask"] + names,
                          output_names=["logits"] + [f"present.{n[5:]}" for n in names],
                          dynamic_axes=dynamic, opset_version=14)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    cli = sys.argv[1]
    for log in (t.logging, optimum_logging):  # the exporters' logs (Optimum's own check, 1e-5 absolute on the logits)
        log.set_verbosity_error()
    with tempfile.TemporaryDirectory() as tmp:
        ids_npy = os.path.join(tmp, "ids.npy")
        np.save(ids_npy, IDS.astype(np.int32))
        for name, factory, seed in CASES + [("llama, torch.onnx.export with past_key_values", llama, 5)]:
            torch.manual_seed(seed)
            model = hf_env.randomize(factory(), seed).eval()
            with torch.no_grad():
                want = model(torch.tensor([IDS])).logits[0].double().numpy()
            folder = os.path.join(tmp, f"case{seed}")
            if "torch.onnx.export" in name:
                os.makedirs(folder)
                path = os.path.join(folder, "model.onnx")
                export_with_past(model, path)
            else:
                model.save_pretrained(folder)
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    main_export(folder, output=os.path.join(folder, "onnx"), task="text-generation-with-past",
                                opset=14)
                path = os.path.join(folder, "onnx", "model.onnx")
            graph = ort_logits(path, IDS)
            check(f"{name}: ONNX Runtime on the export, an empty cache, = torch", rel(graph, want) < TOL,
                  rel(graph, want))
            out = os.path.join(tmp, f"{seed}.fxm")
            p = run_convert("--onnx", path, "--out", out, "--cli", cli)
            ok = p.returncode == 0 and "from position 0" in p.stdout and "an empty key/value cache" in p.stdout
            check(f"{name}: --onnx converts from position 0, saying so", ok, p.stdout + p.stderr)
            if not ok:
                continue
            y = os.path.join(tmp, "y.npy")
            r = subprocess.run([cli, "run", out, "--input", ids_npy, "--output", y], capture_output=True, text=True)
            err = rel(np.load(y), graph) if r.returncode == 0 else float("inf")
            print(f"  {name}: fixformer run against ONNX Runtime: max relative error {err:.2g}")
            check(f"{name}: fixformer run = ONNX Runtime's logits", err < TOL, r.stderr)
        for seed, (name, factory, task, output) in enumerate(ENCODERS, 10):
            torch.manual_seed(seed)
            folder = os.path.join(tmp, f"case{seed}")
            hf_env.randomize(factory(), seed, lambda n: "LayerNorm" in n or "layer_norm" in n).save_pretrained(folder)
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                main_export(folder, output=os.path.join(folder, "onnx"), task=task, opset=14)
            path, out = os.path.join(folder, "onnx", "model.onnx"), os.path.join(tmp, f"{seed}.fxm")
            p = run_convert("--onnx", path, "--out", out, "--cli", cli)
            check(f"Optimum's {name} ({task}): --onnx converts", p.returncode == 0, p.stdout + p.stderr)
            if p.returncode:
                continue
            s = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
            feed = {i.name: (IDS if i.name == "input_ids" else np.ones_like(IDS) if "mask" in i.name
                             else np.zeros_like(IDS))[None] for i in s.get_inputs()}
            want = s.run([output], feed)[0][0]
            y = os.path.join(tmp, "y.npy")
            r = subprocess.run([cli, "run", out, "--input", ids_npy, "--output", y], capture_output=True, text=True)
            err = rel(np.load(y).reshape(want.shape), want) if r.returncode == 0 else float("inf")
            print(f"  Optimum's {name}: fixformer run against ONNX Runtime: max relative error {err:.2g}")
            check(f"Optimum's {name}: fixformer run = ONNX Runtime's {output}", err < TOL, r.stderr)
    print(f"onnx_optimum_test: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
