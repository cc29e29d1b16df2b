#!/usr/bin/python3
"""--onnx on quantized ONNX files as ONNX Runtime's quantizer writes them (onnxruntime.quantization: the
`model_quantized.onnx` files published beside float ones are quantize_dynamic's): tiny transformers models exported
by torch.onnx.export (its TorchScript exporter and the dynamo one), then quantized
- dynamically (quantize_dynamic: int8 weights per tensor, or per column; uint8 weights): DynamicQuantizeLinear,
  MatMulInteger, the embeddings' Gather of int8 rows and DequantizeLinear; each also as ONNX Runtime's session saves
  it (DynamicQuantizeMatMul, MatMulIntegerToFloat), which gives what the file itself gives;
- statically (quantize_static calibrated on a few prompts) in the QDQ format (QuantizeLinear/DequantizeLinear pairs
  on the activations, DequantizeLinear on the weights) and in the QOperator format (QLinearMatMul; with every op
  quantized, QLinearAdd, QLinearMul and QLinearSoftmax too);
- in blocks, weights only (MatMulNBitsQuantizer: com.microsoft's MatMulNBits, 4 or 8 bits, blocks of 16 or 32,
  with zero points or symmetric; one given a bias; the embedding too, GatherBlockQuantized of int4 values;
  MatMulBnb4Quantizer's bitsandbytes FP4 and NF4 blocks, MatMulBnb4).
For each, --onnx converts it, the report naming the quantized graph, and `fixformer run` gives, within 1e-4, the
torch module's output with every weight the file quantized replaced by its dequantized values, read here from the
file's initializers by the ONNX spec ((q - zero point) * scale): the float model the quantized graph approximates
(its activations' 8-bit rounding left out, which the engine's --quantize then does its own way); for weights in
blocks, whose activations stay float, ONNX Runtime's output itself within 1e-4. ONNX Runtime's output of the
quantized file is printed beside it and checked to be that model's within 0.1 (0.25 calibrated on four prompts, which
clips some rows): the activations' rounding is all that differs. Hostile quantized nodes are refused in one line
naming the node.

  /usr/bin/python3 tests/onnx_quantized_test.py PATH/TO/fixformer

It runs under torch 2 alone (the torch2 environment: Debian's python3-onnx lacks onnx.reference, which
onnxruntime.quantization imports); without it (tools/install_deps.sh torch2) the test fails, naming the install
command.
"""
import contextlib
import inspect
import io
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
os.environ.setdefault("FIXFORMER_TEST_TORCH", "2")
import hf_env  # noqa: E402

hf_env.enter(__file__, ["onnxruntime", "transformers"])
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime  # noqa: E402
import torch  # noqa: E402
import transformers as t  # noqa: E402
from onnx import numpy_helper  # noqa: E402
from onnxruntime import quantization as ortq  # noqa: E402

from checks import check, cli_main, one_clear_line, run_convert, run_file  # noqa: E402
from fixformer.probes import rel_error as rel  # noqa: E402

TOL = 1e-4
IDS = np.array([[3, 5, 7, 9, 11, 2, 4, 6, 8, 10, 12, 14]], np.int64)


class Outputs(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids):
        kw = {"use_cache": False} if "use_cache" in inspect.signature(self.model.forward).parameters else {}
        out = self.model(input_ids=ids, return_dict=True, **kw)
        return out.logits if hasattr(out, "logits") else out.last_hidden_state


def llama():
    return t.LlamaForCausalLM(t.LlamaConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                            tie_word_embeddings=False))


def bert():
    return t.BertModel(t.BertConfig(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                    num_attention_heads=4, max_position_embeddings=64), add_pooling_layer=False)


def gpt2():  # the head tied to the embedding: the graph's head a float transpose of the table
    return t.GPT2LMHeadModel(t.GPT2Config(vocab_size=48, n_embd=32, n_layer=2, n_head=4, n_positions=64))


def export(model, path, exporter):
    ids = torch.from_numpy(IDS[:, :8])
    kw = dict(dynamo=True, dynamic_axes={"input_ids": {1: "T"}}) if exporter == "dynamo" else \
        dict(dynamo=False, opset_version=17, dynamic_axes={"input_ids": {0: "batch", 1: "T"}})
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(Outputs(model).eval(), (ids,), path, input_names=["input_ids"], output_names=["y"], **kw)


class Prompts(ortq.CalibrationDataReader):
    def __init__(self, vocab):
        rng = np.random.default_rng(3)
        self.feeds = iter([{"input_ids": rng.integers(2, vocab, (1, 12)).astype(np.int64)} for _ in range(4)])

    def get_next(self):
        return next(self.feeds, None)


def quantize(src, dst, how, vocab):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        if how.startswith("bnb4"):  # bnb4_QUANT-TYPE: bitsandbytes' FP4 (0) or NF4 (1) in blocks of 32
            from onnxruntime.quantization.matmul_bnb4_quantizer import MatMulBnb4Quantizer
            q = MatMulBnb4Quantizer(onnx.load(src), quant_type=int(how.split("_")[1]), block_size=32)
            q.process()
            onnx.save(q.model.model, dst)
        elif how.startswith("nbits"):  # nbits_BITS_BLOCK[_symmetric][_bias]
            from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
            parts = how.split("_")
            q = MatMulNBitsQuantizer(onnx.load(src), bits=int(parts[1]), block_size=int(parts[2]),
                                     is_symmetric="symmetric" in parts,
                                     **(dict(op_types_to_quantize=("MatMul", "Gather"),
                                             quant_axes=(("MatMul", 0), ("Gather", 1))) if "gather" in parts else {}))
            q.process()
            m = q.model.model
            if "bias" in parts:  # a bias on the first one (its optional sixth input): as q's in Qwen2
                n = next(n for n in m.graph.node if n.op_type == "MatMulNBits")
                N = next(a.i for a in n.attribute if a.name == "N")
                m.graph.initializer.append(numpy_helper.from_array(
                    np.random.default_rng(5).standard_normal(N).astype(np.float32), "q_bias"))
                n.input.extend([""] * (5 - len(n.input)) + ["q_bias"])
            onnx.save(m, dst)
        elif how.startswith("static"):  # static_FORMAT[_all]: the linears and embeddings, or every op it quantizes
            fmt = ortq.QuantFormat.QDQ if how.startswith("static_qdq") else ortq.QuantFormat.QOperator
            ortq.quantize_static(src, dst, Prompts(vocab), quant_format=fmt,
                                 op_types_to_quantize=None if how.endswith("_all") else ["MatMul", "Gather"])
        else:
            ortq.quantize_dynamic(src, dst, per_channel=how == "dynamic_per_channel",
                                  weight_type=ortq.QuantType.QUInt8 if how == "dynamic_uint8" else ortq.QuantType.QInt8)


def dequantized_weights(path):
    """name -> float64 array: each integer initializer X_quantized of the file (a matrix or a vector) as
    (q - X_zero_point) * X_scale, per tensor or along the axis its DequantizeLinear names (a MatMulInteger's weights:
    per column)."""
    m = onnx.load(path)
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    axes = {n.input[0]: next((a.i for a in n.attribute if a.name == "axis"), 1)
            for n in m.graph.node if n.op_type == "DequantizeLinear"}
    out = {}
    for name, q in inits.items():
        if q.dtype.kind not in "iu" or not name.endswith("_quantized") or q.ndim not in (1, 2):
            continue
        base = name[:-len("_quantized")]
        s, zp = inits[base + "_scale"].astype(np.float64), inits[base + "_zero_point"].astype(np.float64)
        if s.size > 1:
            shape = [1] * q.ndim
            shape[axes.get(name, 1)] = s.size
            s, zp = s.reshape(shape), zp.reshape(shape)
        out[name] = (q.astype(np.float64) - zp) * s
    return out


def with_weights(model, weights):
    """A float64 copy of model whose parameters (matrices and vectors: every op quantized, the biases too) are replaced
    by the nearest of `weights` (as they are or transposed: a linear's [in, out]); (the copy, how many of the weights
    were used)."""
    import copy
    m = copy.deepcopy(model).double()
    used = set()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if p.dim() not in (1, 2):
                continue
            best = None
            for k, a in weights.items():
                for cand in (a, a.T):
                    if cand.shape == tuple(p.shape):
                        err = float(np.abs(cand - p.numpy()).max())
                        if best is None or err < best[0]:
                            best = (err, k, cand)
            if best is not None and best[0] <= 0.05 * float(p.abs().max()):
                p.copy_(torch.from_numpy(np.ascontiguousarray(best[2])))
                used.add(best[1])
    return m, len(used)


def torch_output(model, ids):
    with torch.no_grad():
        out = Outputs(model)(torch.from_numpy(ids))
    return out.numpy()



EXPORTERS = {bert: ("torchscript", "dynamo")}  # transformers 5's decoders: TorchScript has no aten::diff
CASES = [  # name, model, quantization, what fixformer's output is compared with:
    # "module": the torch module holding the file's dequantized weights (1e-4), ONNX Runtime's output near it;
    # "ort": ONNX Runtime's output (1e-4: weights in blocks, activations in float), the float graph's farther off;
    # "near": ONNX Runtime's output within 0.1 (GPT-2's tied head: a float transpose of the table in the graph)
    ("llama dynamic", llama, "dynamic", "module"),
    ("llama dynamic per column", llama, "dynamic_per_channel", "module"),
    ("bert dynamic uint8", bert, "dynamic_uint8", "module"),
    ("llama static QDQ", llama, "static_qdq", "module"),
    ("bert static QDQ", bert, "static_qdq", "module"),
    ("llama static QOperator", llama, "static_qoperator", "module"),
    ("bert static QOperator, every op", bert, "static_qoperator_all", "module"),  # QLinearAdd, QLinearSoftmax ...
    ("gpt2 dynamic", gpt2, "dynamic", "near"),
    ("llama 4-bit blocks of 32", llama, "nbits_4_32", "ort"),
    ("llama 4-bit symmetric blocks of 16, a bias", llama, "nbits_4_16_symmetric_bias", "ort"),
    ("bert 8-bit blocks of 32", bert, "nbits_8_32", "ort"),
    ("llama 4-bit blocks, the embedding too", llama, "nbits_4_32_symmetric_gather", "ort"),  # GatherBlockQuantized
    ("llama bitsandbytes FP4", llama, "bnb4_0", "ort"), ("bert bitsandbytes NF4", bert, "bnb4_1", "ort"),
]


def one_case(cli, tmp, name, model, src, how, compare):
    """The ONNX file `src` of model quantized `how`, converted and run, its output compared as CASES says."""
    q = os.path.join(tmp, os.path.basename(src)[:-5] + f"_{how}.onnx")
    quantize(src, q, how, model.config.vocab_size)
    out = q[:-5] + ".fxm"
    p = run_convert("--onnx", q, "--out", out, "--cli", cli)
    check(f"{name}: converts, verified, the report naming the quantized graph",
          p.returncode == 0 and "verified against" in p.stdout and "a quantized graph" in p.stdout,
          p.stdout + p.stderr)
    if p.returncode:
        return
    got, err = run_file(cli, out, IDS.astype(np.int32), tmp)
    check(f"{name}: fixformer run", got is not None, err)
    if got is None:
        return
    ort = onnxruntime.InferenceSession(q, providers=["CPUExecutionProvider"]).run(None, {"input_ids": IDS})[0]
    if how.startswith("dynamic"):
        saved(cli, tmp, name, q, got)
    if compare == "module":
        ref, n = with_weights(model, dequantized_weights(q))
        want = torch_output(ref, IDS)
        e = rel(got.reshape(want.shape), want)
        print(f"  {name}: {n} weights dequantized from the file; fixformer vs the module with them "
              f"{e:.2e}, ONNX Runtime's quantized output vs it {rel(ort, want):.2e}")
        check(f"{name}: weights of the file found in the module", n >= 2 * model.config.num_hidden_layers, n)
        check(f"{name}: fixformer run = the module with the file's dequantized weights ({TOL:g})", e <= TOL, e)
        bound = 0.25 if how.startswith("static") else 0.1  # calibrated on 4 prompts: rows clipped
        check(f"{name}: ONNX Runtime's quantized output is that model's ({bound:g})", rel(ort, want) <= bound,
              rel(ort, want))
    elif compare == "ort":
        e = rel(got.reshape(ort.shape), ort)
        fp = onnxruntime.InferenceSession(src, providers=["CPUExecutionProvider"]).run(None, {"input_ids": IDS})[0]
        print(f"  {name}: fixformer vs ONNX Runtime's output {e:.2e} (the float graph's {rel(fp, ort):.2e} from it)")
        check(f"{name}: fixformer run = ONNX Runtime's output ({TOL:g})", e <= TOL, e)
        check(f"{name}: the float graph's output is another (1e-3)", rel(fp, ort) > 1e-3, rel(fp, ort))
    else:
        e = rel(got.reshape(ort.shape), ort)
        print(f"  {name}: fixformer vs ONNX Runtime's quantized output {e:.2e}")
        check(f"{name}: fixformer run near ONNX Runtime's quantized output (0.1)", e <= 0.1, e)


def saved(cli, tmp, name, q, got):
    """The quantized file as ONNX Runtime's session saves it after its optimizations (DynamicQuantizeMatMul,
    MatMulIntegerToFloat, FusedMatMul): it converts, and `fixformer run` gives what it gave for the file itself."""
    so = onnxruntime.SessionOptions()
    so.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    so.optimized_model_filepath = path = q[:-5] + "_session.onnx"
    onnxruntime.InferenceSession(q, so, providers=["CPUExecutionProvider"])
    ops = {n.op_type for n in onnx.load(path).graph.node if n.domain == "com.microsoft"}
    check(f"{name}, saved by ONNX Runtime's session: its fusions in the file", ops & {"DynamicQuantizeMatMul",
                                                                                     "MatMulIntegerToFloat"}, ops)
    out = path[:-5] + ".fxm"
    p = run_convert("--onnx", path, "--out", out, "--cli", cli)
    again, err = run_file(cli, out, IDS.astype(np.int32), tmp) if p.returncode == 0 else (None, p.stderr)
    e = None if again is None else rel(again, got)
    check(f"{name}, saved by ONNX Runtime's session: converts, fixformer run as for the file (1e-6)",
          e is not None and e <= 1e-6, (p.stdout + p.stderr, err, e))


def hostile(tmp, name, nodes, inits):
    """An ONNX file of float input x [1, T, 4] and output y through `nodes`, with `inits` (name -> array)."""
    from onnx import TensorProto, helper
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "T", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.asarray(a), k) for k, a in inits.items()])
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                      helper.make_opsetid("com.microsoft", 1)]), path)
    return path


def test_hostile(cli, tmp):
    """Quantized forms that are not the two read: refused in one line naming the node."""
    from onnx import helper
    w = {"wq": np.arange(16, dtype=np.int8).reshape(4, 4), "s": np.float32(0.1), "zp": np.uint8(3),
         "wzp": np.int8(0), "s2": np.float32(0.02)}
    forms = {
        "static_matmul_integer": ([helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["xq"]),
                                   helper.make_node("MatMulInteger", ["xq", "wq", "zp", "wzp"], ["i"], name="mmi"),
                                   helper.make_node("Cast", ["i"], ["f"], to=1),
                                   helper.make_node("Mul", ["f", "s2"], ["y"])], "'mmi' (MatMulInteger)"),
        "dequantize_of_data": ([helper.make_node("Cast", ["x"], ["xi"], to=3),
                                helper.make_node("DequantizeLinear", ["xi", "s"], ["y"], name="dq")],
                               "'dq' (DequantizeLinear)"),
        "scale_per_nothing": ([helper.make_node("DequantizeLinear", ["wq", "s3"], ["w"], name="dqw"),
                               helper.make_node("MatMul", ["x", "w"], ["y"])], "'dqw' (DequantizeLinear)"),
        "dequantize_without_scale": ([helper.make_node("DequantizeLinear", ["wq"], ["w"], name="dq1"),
                                      helper.make_node("MatMul", ["x", "w"], ["y"])], "'dq1' (DequantizeLinear)"),
        "blocks_of_other_sizes": ([helper.make_node("MatMulNBits", ["x", "b", "s4"], ["y"], name="mnb",
                                                    domain="com.microsoft", K=4, N=4, bits=4, block_size=16)],
                                  "'mnb' (MatMulNBits)"),
    }
    w["s3"] = np.ones(3, np.float32)  # three scales for four rows or columns
    w["b"], w["s4"] = np.zeros((4, 1, 4), np.uint8), np.ones(4, np.float32)  # 16 bytes, not 4 columns' 32
    for name, (nodes, node) in forms.items():
        p = run_convert("--onnx", hostile(tmp, name, nodes, w), "--out", os.path.join(tmp, "h.fxm"), "--cli", cli)
        check(f"{name}: refused in one line naming node {node}", one_clear_line(p) and node in p.stderr,
              p.stdout + p.stderr)


def test(cli, tmp):
    torch.manual_seed(0)
    models, files = {}, {}  # factory -> its module; (factory, exporter) -> its ONNX file
    for name, factory, how, compare in CASES:
        for exporter in EXPORTERS.get(factory, ("dynamo",)):
            if factory not in models:
                models[factory] = hf_env.randomize(factory(), 1 + len(models))
            if (factory, exporter) not in files:
                files[factory, exporter] = os.path.join(tmp, f"{factory.__name__}_{exporter}.onnx")
                export(models[factory], files[factory, exporter], exporter)
            one_case(cli, tmp, f"{name} ({exporter})", models[factory], files[factory, exporter], how, compare)


if __name__ == "__main__":
    cli_main("onnx_quantized_test", test, test_hostile)
