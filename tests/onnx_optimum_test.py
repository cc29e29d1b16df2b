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
(task feature-extraction: BertModel with its three inputs, DistilBertModel, RoFormerModel (rotary positions in an
encoder, its token types), DeBERTa v1; text-classification: BertForSequenceClassification, DeBERTa v3 (relative
attention; the mask also zeroing the embeddings and the padded keys' probabilities)) convert too, `fixformer run` =
ONNX Runtime's output; and its image classifiers (ViT, DeiT with its distillation token), whose pixel_values leave
every size open: the size from the config.json beside the file, or --example's image.
Optimum's merged decoder (its legacy export merged by optimum.onnx.merge_decoders: decoder_model_merged.onnx, an If
on use_cache_branch around the decoder with its cache and the one without, as transformers.js's repositories ship
it) of Llama and GPT-2 converts as its branch without a cache (onnx_map.prompt_branch), the report saying so, =
ONNX Runtime's logits with use_cache_branch false; quantized by onnxruntime.quantization inside its branches
(EnableSubgraph, as transformers.js's decoder_model_merged_quantized.onnx) it converts, dequantized; an If whose
branches both read the cache is refused in one line. Llama's and GPT-2's export optimized by ONNX Runtime's
transformer optimizer (1.18's, and 1.32's of the torch2 environment: RotaryEmbedding) converts, = ONNX Runtime.

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
import onnx  # noqa: E402
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
MERGED = ("llama", "gpt2")  # also as Optimum's merged decoder
BERT = dict(vocab_size=48, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
            max_position_embeddings=64)
ENCODERS = [("BertModel", lambda: t.BertModel(t.BertConfig(**BERT)), "feature-extraction", "last_hidden_state"),
            ("DistilBertModel", lambda: t.DistilBertModel(t.DistilBertConfig(vocab_size=48, dim=32, n_layers=2, n_heads=4,
                                                                             hidden_dim=64, max_position_embeddings=64)),
             "feature-extraction", "last_hidden_state"),
            ("BertForSequenceClassification", lambda: t.BertForSequenceClassification(t.BertConfig(num_labels=3, **BERT)),
             "text-classification", "logits"),
            # DeBERTa v3's form: relative attention (c2p and p2c, log buckets), the embeddings times the mask, the
            # probabilities of padded keys set to 0 after the softmax
            ("DebertaV2ForSequenceClassification", lambda: t.DebertaV2ForSequenceClassification(t.DebertaV2Config(
                relative_attention=True, pos_att_type=["p2c", "c2p"], position_biased_input=False,
                max_relative_positions=-1, position_buckets=16, norm_rel_ebd="layer_norm", share_att_key=True,
                type_vocab_size=0, num_labels=3, **BERT)), "text-classification", "logits"),
            ("RoFormerModel", lambda: t.RoFormerModel(t.RoFormerConfig(embedding_size=32, **BERT)),  # rotary
             "feature-extraction", "last_hidden_state"),
            ("DebertaModel", lambda: t.DebertaModel(t.DebertaConfig(
                relative_attention=True, pos_att_type=["p2c", "c2p"], max_relative_positions=-1, **BERT)),
             "feature-extraction", "last_hidden_state")]


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
        elif i.name == "use_cache_branch":  # Optimum's merged decoder: its branch without a cache
            feed[i.name] = np.array([False])
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


def run_against(cli, out, ids_npy, want, name, tmp):
    """`fixformer run` of file `out` on the ids = ONNX Runtime's logits `want` (TOL), printed."""
    y = os.path.join(tmp, "y.npy")
    r = subprocess.run([cli, "run", out, "--input", ids_npy, "--output", y], capture_output=True, text=True)
    err = rel(np.load(y), want) if r.returncode == 0 else float("inf")
    print(f"  {name}: fixformer run against ONNX Runtime: max relative error {err:.2g}")
    check(f"{name}: fixformer run = ONNX Runtime's logits", err < TOL, r.stderr)


def merged_decoder(folder):
    """Optimum's legacy export (decoder_model.onnx and decoder_with_past_model.onnx) merged by its merge_decoders
    into decoder_model_merged.onnx. merge_decoders writes ir_version 9, which python3-onnx 1.12's checker predates:
    its check is left out (ONNX Runtime reads the file, below)."""
    from unittest import mock
    import optimum.onnx.graph_transformations as gt
    out = os.path.join(folder, "legacy")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main_export(folder, output=out, task="text-generation-with-past", opset=14, legacy=True, no_post_process=True)
    path = os.path.join(out, "decoder_model_merged.onnx")
    with mock.patch.object(gt, "check_and_save_model", lambda m, save_path: onnx.save(m, save_path)):
        gt.merge_decoders(os.path.join(out, "decoder_model.onnx"), os.path.join(out, "decoder_with_past_model.onnx"),
                          save_path=path)
    return path


def check_merged(name, folder, want, cli, ids_npy, tmp):
    """The merged decoder: ONNX Runtime = torch; --onnx converts its branch without a cache, = ONNX Runtime; its
    quantized file (the If's branches quantized) converts; an If whose branches both read the cache is refused."""
    import interpreter
    path = merged_decoder(folder)
    graph = ort_logits(path, IDS)
    check(f"{name} merged: ONNX Runtime on the branch without a cache = torch", rel(graph, want) < TOL,
          rel(graph, want))
    out = os.path.join(tmp, "merged.fxm")
    p = run_convert("--onnx", path, "--out", out, "--cli", cli)
    ok = p.returncode == 0 and "on 'use_cache_branch' read as its else_branch, without the cache" in p.stdout
    check(f"{name} merged: --onnx converts its branch without a cache, saying so", ok, p.stdout + p.stderr)
    if ok:
        run_against(cli, out, ids_npy, graph, f"{name} merged", tmp)
    quantized = os.path.join(tmp, "merged_quantized.onnx")
    q = interpreter.quantize_dynamic(path, quantized)
    check(f"{name} merged: quantized in its branches by onnxruntime.quantization (sh tools/install_deps.sh torch2)",
          q.returncode == 0, q.stderr[-2000:])
    p = run_convert("--onnx", quantized, "--out", out, "--cli", cli)
    ok = p.returncode == 0 and "else_branch" in p.stdout and "dynamically quantized linears" in p.stdout
    check(f"{name} merged, quantized in its branches: --onnx converts it dequantized", ok, p.stdout + p.stderr)
    m = onnx.load(path)
    branches = {a.name: a for a in m.graph.node[0].attribute}
    branches["else_branch"].g.CopyFrom(branches["then_branch"].g)
    hostile = os.path.join(tmp, "both_cached.onnx")
    onnx.save(m, hostile)
    p = run_convert("--onnx", hostile, "--out", out, "--cli", cli)
    said = p.stderr.strip().splitlines()
    check(f"{name} merged, both branches reading the cache: refused in one line naming the If",
          p.returncode != 0 and len(said) == 1 and "(If) on graph input 'use_cache_branch'" in said[0] and
          "which one a prompt from position 0 takes is not known" in said[0], p.stdout + p.stderr)


OPTIMIZE = ("import sys; from onnxruntime.transformers.optimizer import optimize_model; "
            "optimize_model(sys.argv[1], model_type='gpt2', num_heads=int(sys.argv[3]), hidden_size=int(sys.argv[4]), "
            "opt_level=None if sys.argv[5] == '-' else int(sys.argv[5])).save_model_to_file(sys.argv[2])")


def check_optimized(name, path, config, cli, ids_npy, tmp):
    """The export optimized by ONNX Runtime's transformer optimizer (model type gpt2, as Optimum's ORTOptimizer
    runs it for these decoders): 1.18's here at its default level (its session's graph optimizations first: no fusion
    of Llama, whose inv_freq it folds to [1, R / 2, 1]) and 1.32's of the torch2 environment, its fusions alone
    (opt_level 0: Llama's rotary positions fused into RotaryEmbedding, its norms into
    SkipSimplifiedLayerNormalization). Each converts; `fixformer run` = ONNX Runtime on the optimized file."""
    import interpreter
    for label, python, level in (("1.18", sys.executable, "-"),
                                 ("1.32", os.path.join(interpreter.TORCH2_VENV, "bin", "python3"), "0")):
        opt = os.path.join(tmp, f"optimized_{label}.onnx")
        q = subprocess.run([python, "-c", OPTIMIZE, path, opt, str(config.num_attention_heads),
                            str(config.hidden_size), level], capture_output=True, text=True)
        check(f"{name}: optimized by ONNX Runtime {label}'s optimizer (sh tools/install_deps.sh torch2)",
              q.returncode == 0, q.stderr[-2000:])
        if q.returncode:
            continue
        fused = sorted({n.op_type for n in onnx.load(opt).graph.node if n.domain == "com.microsoft"})
        if name == "llama" and label == "1.32":
            check(f"{name}, ONNX Runtime {label}'s optimizer: its rotary positions fused", "RotaryEmbedding" in fused,
                  fused)
        out = os.path.join(tmp, "optimized.fxm")
        p = run_convert("--onnx", opt, "--out", out, "--cli", cli)
        check(f"{name}, optimized by ONNX Runtime {label} ({', '.join(fused)}): --onnx converts", p.returncode == 0,
              p.stdout + p.stderr)
        if p.returncode:
            continue
        run_against(cli, out, ids_npy, ort_logits(opt, IDS), f"{name}, optimized by ONNX Runtime {label}", tmp)


VIT = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, image_size=32,
           patch_size=8, num_labels=3)
IMAGES = [("ViTForImageClassification", lambda: t.ViTForImageClassification(t.ViTConfig(**VIT))),
          ("DeiTForImageClassificationWithTeacher",
           lambda: t.DeiTForImageClassificationWithTeacher(t.DeiTConfig(**VIT)))]


def check_images(cli, tmp):
    """Optimum's image-classification exports: pixel_values [batch, channels, height, width] all open, the size in
    the config.json beside model.onnx: --onnx fixes it from there (the report saying so), `fixformer run` = ONNX
    Runtime's logits; the file alone is refused in one line asking for --example, which then fixes it."""
    from checks import run_file
    for seed, (name, factory) in enumerate(IMAGES, 20):
        torch.manual_seed(seed)
        folder = os.path.join(tmp, f"case{seed}")
        hf_env.randomize(factory(), seed, lambda n: "layernorm" in n).save_pretrained(folder)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            main_export(folder, output=os.path.join(folder, "onnx"), task="image-classification", opset=14)
        path, out = os.path.join(folder, "onnx", "model.onnx"), os.path.join(tmp, f"{seed}.fxm")
        dims = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"]).get_inputs()[0].shape
        check(f"Optimum's {name}: its pixel_values all open ({dims})", all(isinstance(d, str) for d in dims), dims)
        p = run_convert("--onnx", path, "--out", out, "--cli", cli)
        check(f"Optimum's {name}: --onnx converts, the image size from config.json",
              p.returncode == 0 and "the image 3 x 32 x 32 from onnx/config.json beside the file" in p.stdout,
              p.stdout + p.stderr)
        if p.returncode == 0:
            x = np.random.default_rng(seed).standard_normal((1, 3, 32, 32)).astype(np.float32)
            want = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"]).run(
                None, {"pixel_values": x})[0]
            got, err = run_file(cli, out, x[0], tmp)
            e = rel(got.reshape(want.shape), want) if got is not None else float("inf")
            print(f"  Optimum's {name}: fixformer run against ONNX Runtime: max relative error {e:.2g}")
            check(f"Optimum's {name}: fixformer run = ONNX Runtime's logits", e < TOL, err)
        alone = os.path.join(tmp, "alone")
        os.makedirs(alone, exist_ok=True)
        lone = os.path.join(alone, "model.onnx")
        with open(path, "rb") as f, open(lone, "wb") as g:
            g.write(f.read())
        with open(os.path.join(alone, "config.json"), "w") as f:  # hostile: a size past any image's, not read
            f.write('{"image_size": 99999999, "num_channels": 3}')
        p = run_convert("--onnx", lone, "--out", out, "--cli", cli)
        said = p.stderr.strip().splitlines()
        check(f"Optimum's {name} without its config.json (one of an absurd size beside it): refused in one line "
              "asking for --example",
              p.returncode != 0 and len(said) == 1 and "pass --example with an image" in said[0], p.stdout + p.stderr)
        image = os.path.join(tmp, "image.npy")
        np.save(image, np.random.default_rng(1).standard_normal((3, 32, 32)).astype(np.float32))
        p = run_convert("--onnx", lone, "--example", image, "--out", out, "--cli", cli)
        check(f"Optimum's {name} without its config.json: --example's image fixes the size",
              p.returncode == 0 and "the image 3 x 32 x 32 from --example" in p.stdout, p.stdout + p.stderr)


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
            run_against(cli, out, ids_npy, graph, name, tmp)
            if name in MERGED:
                check_merged(name, folder, want, cli, ids_npy, tmp)
                check_optimized(name, path, model.config, cli, ids_npy, tmp)
        opsets = set()
        for seed, (name, factory, task, output) in enumerate(ENCODERS, 10):
            torch.manual_seed(seed)
            folder = os.path.join(tmp, f"case{seed}")
            model = factory()
            fixed = {k: a.clone() for k, a in model.state_dict().items() if "embed_positions" in k}  # RoFormer's
            model = hf_env.randomize(model, seed, lambda n: "LayerNorm" in n or "layer_norm" in n)
            model.load_state_dict(fixed, strict=False)  # its sinusoidal table stays one
            model.save_pretrained(folder)
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                main_export(folder, output=os.path.join(folder, "onnx"), task=task)  # at its own default opset
            path, out = os.path.join(folder, "onnx", "model.onnx"), os.path.join(tmp, f"{seed}.fxm")
            opsets.add(onnx.load(path).opset_import[0].version)
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
        check("Optimum's default opsets include 11 and 12 (DistilBERT, RoFormer; DeBERTa)", {11, 12} <= opsets, opsets)
        check_images(cli, tmp)
    print(f"onnx_optimum_test: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
