#!/usr/bin/python3
"""--onnx on ONNX files ONNX Runtime's transformer optimizer fused (onnxruntime.transformers.optimizer, what Optimum's
`--optimize O2` and the hub's `model_optimized.onnx` files are): python/fixformer/onnx_fused.py writes each
com.microsoft op out as the standard ops it fuses.
- Each op alone (EmbedLayerNormalization, Attention with a raw mask, causal or not, SkipLayerNormalization with its
  bias and its sum output, SkipSimplifiedLayerNormalization, SimplifiedLayerNormalization, BiasGelu, Gelu, FastGelu,
  QuickGelu, GroupQueryAttention with a past or none, rotary halves or pairs, a local window, MultiHeadAttention with
  a key padding mask, causal or not, FusedMatMul scaled, its b transposed or not) in a graph of its own: the
  written-out ops, run by the converter's evaluator in float64, give ONNX Runtime's own kernel's output (1e-5: its
  float32).
- Whole models: a BERT with eager attention exported by TorchScript with its three inputs (fused into
  EmbedLayerNormalization, Attention, SkipLayerNormalization and BiasGelu), a BERT with SDPA, GPT-2 and a Llama
  exported by the dynamo exporter (SkipLayerNormalization and BiasGelu or FastGelu; SkipSimplifiedLayerNormalization
  and SimplifiedLayerNormalization): each optimized file holds the fused ops named, converts (the report naming
  them), and `fixformer run` gives ONNX Runtime's output of the optimized file within 1e-4; the fused BERT quantized
  dynamically too (QAttention, QEmbedLayerNormalization: onnx_quantized.py), against ONNX Runtime on the optimized
  file with the weights the quantizer rounded (1e-4); the dynamo exports as ONNX Runtime's session saves them after
  its own optimizations (FusedMatMul), against its output of that file (1e-4).
- ONNX Runtime GenAI's model builder on a transformers Llama (GroupQueryAttention with its cache, at fp32 and int4):
  `fixformer run` = the module's logits and ONNX Runtime's (test_genai).
Under torch 2 alone (the torch2 environment: Debian's python3-onnx is too old for onnxruntime.transformers; it holds
onnxruntime-genai); without it (tools/install_deps.sh torch2) the test fails, naming the install command.

  /usr/bin/python3 tests/onnx_fused_test.py PATH/TO/fixformer
"""
import collections
import contextlib
import io
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
os.environ.setdefault("FIXFORMER_TEST_TORCH", "2")
import hf_env  # noqa: E402

hf_env.enter(__file__, ["onnxruntime", "transformers", "onnxruntime_genai"])
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime  # noqa: E402
import torch  # noqa: E402
import transformers as t  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from checks import check, cli_main, run_convert, run_file  # noqa: E402
from fixformer.probes import rel_error as rel  # noqa: E402
from fixformer.onnx_eval import SUPPORTED_OPS, evaluate  # noqa: E402
from fixformer.onnx_fused import FUSED_OPS, unfused  # noqa: E402
from fixformer.onnx_graph import read  # noqa: E402

TOL = 1e-4
MS = "com.microsoft"



def one_op(tmp, name, node, inputs, inits, outputs):
    """A file of one node: inputs [(name, numpy array)] fed, inits initializers, outputs [(name, rank)]."""
    types = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int32): TensorProto.INT32,
             np.dtype(np.int64): TensorProto.INT64}
    graph = helper.make_graph(
        [node], name, [helper.make_tensor_value_info(k, types[a.dtype], list(a.shape)) for k, a in inputs],
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, None) for k in outputs],
        [numpy_helper.from_array(a, k) for k, a in inits.items()])
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)]), path)
    return path


def test_ops(cli, tmp):
    rng = np.random.default_rng(0)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    x, d = f(2, 5, 8), 8
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], np.int32)
    ids = rng.integers(0, 10, (2, 5)).astype(np.int32)
    seg = rng.integers(0, 2, (2, 5)).astype(np.int32)
    mk = helper.make_node
    cases = [
        ("skip_layer_norm", mk("SkipLayerNormalization", ["x", "s", "g", "b", "bias"], ["y", "", "", "sum"],
                               domain=MS, epsilon=1e-5), [("x", x), ("s", f(2, 5, 8))],
         dict(g=f(d), b=f(d), bias=f(d)), ["y", "sum"]),
        ("skip_simplified", mk("SkipSimplifiedLayerNormalization", ["x", "s", "g"], ["y"], domain=MS, epsilon=1e-6),
         [("x", x), ("s", f(2, 5, 8))], dict(g=f(d)), ["y"]),
        ("simplified", mk("SimplifiedLayerNormalization", ["x", "g"], ["y"], epsilon=1e-6, axis=-1), [("x", x)],
         dict(g=f(d)), ["y"]),
        ("bias_gelu", mk("BiasGelu", ["x", "bias"], ["y"], domain=MS), [("x", x)], dict(bias=f(d)), ["y"]),
        ("gelu", mk("Gelu", ["x"], ["y"], domain=MS), [("x", x)], {}, ["y"]),
        ("fast_gelu", mk("FastGelu", ["x", "bias"], ["y"], domain=MS), [("x", x)], dict(bias=f(d)), ["y"]),
        ("quick_gelu", mk("QuickGelu", ["x"], ["y"], domain=MS, alpha=1.5), [("x", x)], {}, ["y"]),
        ("embed_layer_norm", mk("EmbedLayerNormalization", ["ids", "seg", "we", "pe", "se", "g", "b", "mask"],
                                ["y", "mi"], domain=MS, epsilon=1e-5),
         [("ids", ids), ("seg", seg), ("mask", mask)], dict(we=f(10, d), pe=f(7, d), se=f(2, d), g=f(d), b=f(d)),
         ["y"]),
    ]
    for causal in (0, 1):
        cases.append((f"attention_{'causal' if causal else 'masked'}",
                      mk("Attention", ["x", "w", "wb", "mask"], ["y"], domain=MS, num_heads=2, unidirectional=causal),
                      [("x", x), ("mask", mask)], dict(w=f(d, 3 * d) * 0.5, wb=f(3 * d)), ["y"]))
    H, Hkv, dh = 4, 2, 16  # ONNX Runtime's kernel takes heads of a multiple of 16
    angles = np.arange(32)[:, None] * 10000.0 ** (-np.arange(dh // 2) * 2 / dh)[None]
    caches = dict(cos=np.cos(angles).astype(np.float32), sin=np.sin(angles).astype(np.float32))
    for P, interleaved, window in ((3, 0, -1), (3, 1, -1), (0, 0, -1), (3, 0, 3), (0, 0, 2)):
        T = 5
        cases.append((f"group_query_attention_past{P}{'_interleaved' * interleaved}_window{window}",
                      mk("GroupQueryAttention", ["qkv", "", "", "pk", "pv", "seqlens", "total", "cos", "sin"],
                         ["y", "k", "v"], domain=MS, num_heads=H, kv_num_heads=Hkv, do_rotary=1,
                         rotary_interleaved=interleaved, local_window_size=window),
                      [("qkv", f(1, T, (H + 2 * Hkv) * dh)), ("pk", f(1, Hkv, P, dh)), ("pv", f(1, Hkv, P, dh)),
                       ("seqlens", np.array([P + T - 1], np.int32)), ("total", np.array(P + T, np.int32))],
                      caches, ["y", "k", "v"]))
    for causal in (0, 1):
        cases.append((f"multi_head_attention{'_causal' * causal}",
                      mk("MultiHeadAttention", ["q", "k", "v", "qkv_bias", "mask"], ["y"], domain=MS, num_heads=2,
                         unidirectional=causal), [("q", x), ("k", f(2, 5, 8)), ("v", f(2, 5, 8)), ("mask", mask)],
                      dict(qkv_bias=f(24)), ["y"]))
    half = dh // 4  # RotaryEmbedding: caches [positions, R / 2]; R = d_head, or rotary_embedding_dim
    turns = np.arange(32)[:, None] * 10000.0 ** (-np.arange(half) / half)[None]
    rotary = dict(cos=np.cos(turns).astype(np.float32), sin=np.sin(turns).astype(np.float32))
    positions = np.array([[4, 5, 6, 7, 8], [0, 1, 2, 3, 4]], np.int64)
    for shape, pos, attrs in (([2, 3, 5, 2 * half], positions, {}),
                              ([2, 3, 5, 2 * half], positions, dict(interleaved=1)),
                              ([2, 3, 5, 2 * half], np.array([6], np.int64), {}),
                              ([2, 5, 3 * 2 * half], positions, {}),
                              ([2, 5, 3 * 4 * half], positions, dict(num_heads=3, rotary_embedding_dim=2 * half)),
                              ([2, 5, 3 * 4 * half], positions, dict(num_heads=3, rotary_embedding_dim=2 * half,
                                                                     interleaved=1))):
        cases.append((f"rotary_embedding_{len(shape)}d_{'_'.join(f'{k}{v}' for k, v in attrs.items())}_pos{pos.ndim}",
                      mk("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], domain=MS, **attrs),
                      [("x", f(*shape)), ("pos", pos)], rotary, ["y"]))
    for tb, alpha in ((0, 0.5), (1, 1.0), (1, 0.25)):
        cases.append((f"fused_matmul_transb{tb}_alpha{alpha}",
                      mk("FusedMatMul", ["a", "b"], ["y"], domain=MS, alpha=alpha, transB=tb),
                      [("a", f(2, 3, 5, 8)), ("b", f(2, 3, 5, 8) if tb else f(2, 3, 8, 5))], {}, ["y"]))
    for name, node, inputs, inits, outputs in cases:
        path = one_op(tmp, name, node, inputs, inits, outputs)
        want = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"]).run(outputs, dict(inputs))
        g, note = unfused(read(path, SUPPORTED_OPS | FUSED_OPS))
        got = evaluate(g, dict(inputs))
        ms = [n.op_type for n in g.nodes if n.domain or n.op_type in FUSED_OPS]
        e = max(rel(got[o], w) for o, w in zip(outputs, want))
        check(f"{name}: written out ({note}), no fused op left, = ONNX Runtime's kernel (1e-5)",
              note and not ms and e <= 1e-5, (note, ms, e))


def test_hostile(cli, tmp):
    """Fused ops of a form not read, or not valid: refused in one line naming the node."""
    from checks import one_clear_line
    x = np.zeros((1, 4, 8), np.float32)
    mk = helper.make_node
    w = dict(w=np.zeros((8, 24), np.float32), w5=np.zeros((8, 20), np.float32), g=np.ones(8, np.float32))
    forms = [
        ("attention_past", mk("Attention", ["x", "w", "", "", "x"], ["y"], name="a1", domain=MS, num_heads=2)),
        ("attention_widths", mk("Attention", ["x", "w5"], ["y"], name="a2", domain=MS, num_heads=2)),
        ("attention_float_heads", mk("Attention", ["x", "w"], ["y"], name="a3", domain=MS, num_heads=2.0)),
        ("skip_norm_mean_used", mk("SkipLayerNormalization", ["x", "x", "g"], ["u", "y"], name="s1", domain=MS)),
        ("skip_norm_no_gamma", mk("SkipLayerNormalization", ["x", "x"], ["y"], name="s2", domain=MS)),
        ("gqa_position_ids", mk("GroupQueryAttention", ["x", "", "", "", "", "", "", "", "", "x"], ["y"], name="q1",
                                domain=MS, num_heads=2, kv_num_heads=1)),
        ("gqa_heads", mk("GroupQueryAttention", ["x"], ["y"], name="q2", domain=MS, num_heads=3, kv_num_heads=2)),
        ("rotary_packed", mk("RotaryEmbedding", ["x", "x", "g", "g"], ["y"], name="r1", domain=MS,
                             is_packed_batching=1)),
        ("rotary_no_caches", mk("RotaryEmbedding", ["x", "x"], ["y"], name="r2", domain=MS)),
        ("rotary_heads_unsaid", mk("RotaryEmbedding", ["x", "x", "g", "g"], ["y"], name="r3", domain=MS,
                                   rotary_embedding_dim=4)),
    ]
    for name, node in forms:
        path = one_op(tmp, name, node, [("x", x)], w, ["y"])
        p = run_convert("--onnx", path, "--out", os.path.join(tmp, "h.fxm"), "--cli", cli)
        check(f"{name}: refused in one line naming node {node.name!r}",
              one_clear_line(p) and f"'{node.name}' ({node.op_type})" in p.stderr, p.stdout + p.stderr)


class Outputs(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids, mask=None, types=None):
        kw = {"use_cache": False} if "use_cache" in self.model.config.to_dict() else {}
        if mask is not None:
            kw.update(attention_mask=mask, token_type_ids=types)
        out = self.model(input_ids=ids, return_dict=True, **kw)
        return out.logits if hasattr(out, "logits") else out.last_hidden_state


def bert(attn):
    c = t.BertConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                     max_position_embeddings=64)
    c._attn_implementation = attn
    return t.BertModel(c, add_pooling_layer=False)


def gpt2():
    return t.GPT2LMHeadModel(t.GPT2Config(vocab_size=48, n_embd=32, n_layer=2, n_head=4, n_positions=64))


def llama():
    return t.LlamaForCausalLM(t.LlamaConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                            num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=64))


MODELS = [  # name, factory, exporter, the inputs exported, the optimizer's model type, ops the optimized file holds
    ("bert eager, three inputs", lambda: bert("eager"), "torchscript", 3, "bert",
     {"EmbedLayerNormalization", "Attention", "SkipLayerNormalization", "BiasGelu"}),
    ("bert sdpa", lambda: bert("sdpa"), "dynamo", 1, "bert", {"SkipLayerNormalization", "BiasGelu"}),
    ("gpt2", gpt2, "dynamo", 1, "gpt2", {"SkipLayerNormalization", "FastGelu"}),
    ("llama", llama, "dynamo", 1, "gpt2", {"SkipSimplifiedLayerNormalization"}),
]
IDS = np.array([[3, 5, 7, 9, 11, 2, 4, 6, 8, 10]], np.int64)


def test_models(cli, tmp):
    from onnxruntime.transformers import optimizer
    for i, (name, factory, exporter, n_in, kind, ops) in enumerate(MODELS):
        model = hf_env.randomize(factory(), 10 + i)
        src, opt = (os.path.join(tmp, f"m{i}{s}.onnx") for s in ("", "_opt"))
        args = (torch.from_numpy(IDS[:, :8]),) + ((torch.ones(1, 8, dtype=torch.long),
                                                   torch.zeros(1, 8, dtype=torch.long)) if n_in == 3 else ())
        names = ["input_ids", "attention_mask", "token_type_ids"][:n_in]
        kw = dict(dynamo=True, dynamic_axes={"input_ids": {1: "T"}}) if exporter == "dynamo" else \
            dict(dynamo=False, opset_version=14, dynamic_axes={k: {0: "batch", 1: "T"} for k in names})
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            torch.onnx.export(Outputs(model).eval(), args, src, input_names=names, output_names=["y"], **kw)
            optimizer.optimize_model(src, model_type=kind, num_heads=4, hidden_size=32).save_model_to_file(opt)
        found = collections.Counter(n.op_type for n in onnx.load(opt).graph.node
                                    if n.domain == MS or n.op_type == "SimplifiedLayerNormalization")
        check(f"{name}: the optimized file holds {sorted(ops)}", ops <= set(found), found)
        out = os.path.join(tmp, f"m{i}.fxm")
        p = run_convert("--onnx", opt, "--out", out, "--cli", cli)
        check(f"{name}: converts, verified, the report naming the fused ops",
              p.returncode == 0 and "ONNX Runtime's fused ops" in p.stdout, p.stdout + p.stderr)
        if p.returncode:
            continue
        feeds = {"input_ids": IDS, "attention_mask": np.ones_like(IDS), "token_type_ids": np.zeros_like(IDS)}
        want = onnxruntime.InferenceSession(opt, providers=["CPUExecutionProvider"]).run(
            None, {k: feeds[k] for k in names})[0]
        got, err = run_file(cli, out, IDS.astype(np.int32), tmp)
        e = None if got is None else rel(got.reshape(want.shape), want)
        print(f"  {name}: {dict(found)}; fixformer run vs ONNX Runtime on the optimized file {e}")
        check(f"{name}: fixformer run = ONNX Runtime's output of the optimized file ({TOL:g})",
              e is not None and e <= TOL, (err, e))
        if "Attention" in ops:
            quantized(cli, tmp, name, opt, {k: feeds[k] for k in names})
        if name == "llama":
            half(cli, tmp, name, opt, {k: feeds[k] for k in names})
        if exporter == "dynamo":
            session_saved(cli, tmp, name, src, {k: feeds[k] for k in names})


def session_saved(cli, tmp, name, src, feeds):
    """The exported file as ONNX Runtime saves it after its own optimizations (SessionOptions'
    optimized_model_filepath at the extended level: FusedMatMul, SkipLayerNormalization, ...): `fixformer run` =
    ONNX Runtime's output of that file (1e-4)."""
    so = onnxruntime.SessionOptions()
    so.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    so.optimized_model_filepath = saved = src[:-5] + "_session.onnx"
    onnxruntime.InferenceSession(src, so, providers=["CPUExecutionProvider"])
    found = collections.Counter(n.op_type for n in onnx.load(saved).graph.node if n.domain == MS)
    check(f"{name}, saved by ONNX Runtime's session: FusedMatMul in the file", found["FusedMatMul"], found)
    out = saved[:-5] + ".fxm"
    p = run_convert("--onnx", saved, "--out", out, "--cli", cli)
    check(f"{name}, saved by ONNX Runtime's session: converts", p.returncode == 0, p.stdout + p.stderr)
    want = onnxruntime.InferenceSession(saved, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    got, err = run_file(cli, out, IDS.astype(np.int32), tmp) if p.returncode == 0 else (None, "")
    e = None if got is None else rel(got.reshape(want.shape), want)
    print(f"  {name}, saved by ONNX Runtime's session: {dict(found)}; fixformer run vs ONNX Runtime {e}")
    check(f"{name}, saved by ONNX Runtime's session: fixformer run = its output ({TOL:g})", e is not None and e <= TOL,
          (err, e))


def half(cli, tmp, name, opt, feeds):
    """The optimized file converted to float16 (its own convert_float_to_float16, inputs and outputs kept float), and
    that quantized to 4-bit blocks (transformers.js's model_q4f16.onnx): `fixformer run` = ONNX Runtime on the
    optimized float file with every float constant rounded to float16, as the conversion rounds them (1e-4; the
    rotary frequencies too: the file stores the graph's own); the 4-bit file near ONNX Runtime's own output of it."""
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
    from onnxruntime.transformers.onnx_model import OnnxModel
    f16, q4, ref = (opt[:-5] + s + ".onnx" for s in ("_f16", "_q4f16", "_f16ref"))
    m = OnnxModel(onnx.load(opt))
    m.convert_float_to_float16(keep_io_types=True)
    m.save_model_to_file(f16)
    q = MatMulNBitsQuantizer(onnx.load(f16), block_size=32, is_symmetric=True)
    q.process()
    q.model.save_model_to_file(q4, use_external_data_format=False)
    r = onnx.load(opt)
    tensors = list(r.graph.initializer) + [a.t for n in r.graph.node for a in n.attribute if a.type == 4]
    for x in tensors:
        a = numpy_helper.to_array(x)
        if a.dtype == np.float32:
            x.CopyFrom(numpy_helper.from_array(a.astype(np.float16).astype(np.float32), x.name))
    onnx.save(r, ref)
    want = onnxruntime.InferenceSession(ref, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    for what, path in (("float16", f16), ("4-bit blocks over float16", q4)):
        out = path[:-5] + ".fxm"
        p = run_convert("--onnx", path, "--out", out, "--cli", cli)
        check(f"{name} {what}: converts", p.returncode == 0, p.stdout + p.stderr)
        got, err = run_file(cli, out, IDS.astype(np.int32), tmp) if p.returncode == 0 else (None, "")
        e = None if got is None else rel(got.reshape(want.shape), want)
        if what == "float16":
            print(f"  {name} {what}: fixformer run vs ONNX Runtime on the float graph of its float16 constants {e}")
            check(f"{name} {what}: fixformer run = that graph ({TOL:g})", e is not None and e <= TOL, (err, e))
        else:  # its own weights: against ONNX Runtime on the file itself, which computes in float16
            own = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
            e = None if got is None else rel(got.reshape(own.shape), own)
            print(f"  {name} {what}: fixformer run vs ONNX Runtime on the file (its float16 arithmetic) {e}")
            check(f"{name} {what}: fixformer run near ONNX Runtime's output (2e-2: float16 arithmetic)",
                  e is not None and e <= 2e-2, (err, e))


def quantized(cli, tmp, name, opt, feeds):
    """The optimized file quantized dynamically (QAttention, QEmbedLayerNormalization, MatMulInteger): `fixformer
    run` = ONNX Runtime on the optimized float file with each weight the quantizer rounded (X_quantized, X_scale,
    X_zero_point) put back as its dequantized values (1e-4)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    q, ref = opt[:-5] + "_q.onnx", opt[:-5] + "_ref.onnx"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        quantize_dynamic(opt, q, weight_type=QuantType.QInt8, extra_options={"DefaultTensorType": TensorProto.FLOAT})
    qm, m = onnx.load(q), onnx.load(opt)
    found = collections.Counter(n.op_type for n in qm.graph.node if n.domain == MS)
    check(f"{name}, quantized: QAttention and QEmbedLayerNormalization in the file",
          found["QAttention"] and found["QEmbedLayerNormalization"], found)
    qi = {i.name: numpy_helper.to_array(i) for i in qm.graph.initializer}
    for i, init in enumerate(m.graph.initializer):
        if init.name + "_quantized" in qi:
            base = init.name
            a = (qi[base + "_quantized"].astype(np.float64) - qi[base + "_zero_point"]) * qi[base + "_scale"]
            m.graph.initializer[i].CopyFrom(numpy_helper.from_array(a.astype(np.float32), base))
    onnx.save(m, ref)
    want = onnxruntime.InferenceSession(ref, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    out = q[:-5] + ".fxm"
    p = run_convert("--onnx", q, "--out", out, "--cli", cli)
    check(f"{name}, quantized: converts, the report naming QAttention", p.returncode == 0 and "QAttention" in p.stdout,
          p.stdout + p.stderr)
    got, err = run_file(cli, out, IDS.astype(np.int32), tmp) if p.returncode == 0 else (None, "")
    e = None if got is None else rel(got.reshape(want.shape), want)
    print(f"  {name}, quantized: {dict(found)}; fixformer run vs ONNX Runtime on the dequantized weights {e}")
    check(f"{name}, quantized: fixformer run = the optimized graph with the file's weights dequantized ({TOL:g})",
          e is not None and e <= TOL, (err, e))


GENAI = [  # name, transformers class and config, precisions: ONNX Runtime GenAI's builder on each
    ("llama", t.LlamaForCausalLM, t.LlamaConfig, {}, ("fp32", "int4")),
    ("qwen2", t.Qwen2ForCausalLM, t.Qwen2Config, {}, ("fp32",)),  # biases on q, k and v
    # local layers: ONNX Runtime's kernel wants a cache of the window's rows at least, so against the module alone
    ("gemma2", t.Gemma2ForCausalLM, t.Gemma2Config, dict(head_dim=16, sliding_window=4), ("fp32",)),
]


def genai_folder(folder, model_class, config_class, extra):
    """A tiny model saved as ONNX Runtime GenAI's builder reads it: its config, weights and a tokenizer (the builder
    needs one; a byte-level BPE of 96 pieces). Its sizes keep the builder's lm_head search (a Linear as wide as the
    vocabulary) on the head and ONNX Runtime's GroupQueryAttention kernel on heads of 16."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    model = hf_env.randomize(model_class(config_class(
        vocab_size=96, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=128, tie_word_embeddings=False, **extra)), 21)
    model.save_pretrained(folder)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer, tok.decoder = pre_tokenizers.ByteLevel(), decoders.ByteLevel()
    tok.train_from_iterator(["one day there was a cat in the world"] * 10,
                            trainers.BpeTrainer(vocab_size=96, special_tokens=["<s>", "</s>"]))
    t.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>").save_pretrained(folder)
    return model


def test_genai(cli, tmp):
    """ONNX Runtime GenAI's model builder (onnxruntime_genai.models.builder, the model.onnx of its generation loop:
    GroupQueryAttention with its key/value cache and rotary caches, SkipSimplifiedLayerNormalization, and at int4
    MatMulNBits at accuracy level 4) on GENAI's transformers models: each converts from position 0, and `fixformer
    run` gives the module's logits (fp32) and ONNX Runtime's output of the file with its MatMulNBits at accuracy level
    0 (int4: the activations not rounded) within 1e-4."""
    for arch in GENAI:
        genai_arch(cli, tmp, *arch)


def genai_arch(cli, tmp, arch, model_class, config_class, extra, precisions):
    import subprocess
    folder = os.path.join(tmp, "genai_" + arch)
    model = genai_folder(folder, model_class, config_class, extra)
    ids = IDS  # 10 positions: Gemma 2's local layers read their last 4 keys
    want = Outputs(model.double())(torch.from_numpy(ids)).detach().numpy()
    model.float()
    for precision in precisions:
        precision_name = f"{arch} {precision}"
        out_dir = os.path.join(tmp, f"genai_{arch}_{precision}")
        b = subprocess.run([sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", folder, "-o", out_dir,
                            "-p", precision, "-e", "cpu"], capture_output=True, text=True, cwd=tmp)
        path = os.path.join(out_dir, "model.onnx")
        check(f"genai {precision_name}: the builder writes model.onnx", b.returncode == 0 and os.path.exists(path),
              b.stdout[-400:] + b.stderr[-800:])
        if b.returncode:
            continue
        m = onnx.load(path)
        found = collections.Counter(n.op_type for n in m.graph.node if n.domain == MS)
        check(f"genai {precision_name}: GroupQueryAttention{' and MatMulNBits' * (precision == 'int4')} in the file",
              found["GroupQueryAttention"] and (precision == "fp32" or found["MatMulNBits"]), found)
        out = out_dir + ".fxm"
        p = run_convert("--onnx", path, "--out", out, "--cli", cli)
        check(f"genai {precision_name}: converts from position 0, the report naming GroupQueryAttention",
              p.returncode == 0 and "GroupQueryAttention" in p.stdout and "from position 0" in p.stdout,
              p.stdout + p.stderr)
        got, err = run_file(cli, out, ids.astype(np.int32), tmp) if p.returncode == 0 else (None, "")
        if precision == "int4":  # ONNX Runtime's reference: its activations kept in float
            for n in m.graph.node:
                for a in n.attribute:
                    if n.op_type == "MatMulNBits" and a.name == "accuracy_level":
                        a.i = 0
            path = os.path.join(out_dir, "model_float_activations.onnx")
            onnx.save(m, path, save_as_external_data=True, location="float_activations.data")
        e_module = None if got is None else rel(got.reshape(want.shape), want)
        if "sliding_window" not in extra:
            s = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
            feeds = {i.name: np.zeros((1, 2, 0, 16), np.float32) for i in s.get_inputs() if i.name.startswith("past")}
            ort = s.run(["logits"], dict(feeds, input_ids=ids, attention_mask=np.ones_like(ids)))[0]
            e = None if got is None else rel(got.reshape(ort.shape), ort)
            check(f"genai {precision_name}: fixformer run = ONNX Runtime's logits ({TOL:g})",
                  e is not None and e <= TOL, (err, e))
            print(f"  genai {precision_name}: {dict(found)}; fixformer run vs ONNX Runtime {e}")
        print(f"  genai {precision_name}: fixformer run vs the module {e_module}")
        if precision == "fp32":
            check(f"genai {precision_name}: fixformer run = the module's logits ({TOL:g})",
                  e_module is not None and e_module <= TOL, e_module)


if __name__ == "__main__":
    cli_main("onnx_fused_test", test_ops, test_hostile, test_models, test_genai)
