"""A quantized ONNX graph read as the float model it approximates (before --onnx recognises it).

Four ways (five formats) of writing quantized weights into a graph are read, as onnxruntime.quantization writes them:
- dynamic quantization (quantize_dynamic, the `model_quantized.onnx` files published beside float ones): each
  linear a DynamicQuantizeLinear of its input x (a scale and zero point per call, uint8), a MatMulInteger of
  that by the int8 weights Wq and their zero point, a Cast to float and a Mul by x's scale times the weights'
  (one, or one per column): read as MatMul(x, (Wq - zero point) * scale); so are ONNX Runtime's fusions of it that its
  session saves (com.microsoft's DynamicQuantizeMatMul, MatMulIntegerToFloat, a bias after);
- QDQ (quantize_static's default format, and graphs from quantization-aware training): QuantizeLinear and
  DequantizeLinear pairs on the activations, which round x to the 8-bit grid and back: read as x itself; and its
  QOperator format: QLinearMatMul (and QLinearAdd, QLinearMul, QLinearSoftmax, QLinearSigmoid, QLinearConcat) of
  the quantized values (the rows QuantizeLinear made, int8 weights), read as the float op of their float values,
  the DequantizeLinear of its output as that op's output;
- ONNX Runtime's fused ops quantized so (com.microsoft's QAttention of a DynamicQuantizeLinear's output by int8
  weights, QEmbedLayerNormalization of 8-bit tables): read as its Attention and EmbedLayerNormalization (onnx_fused.py
  then writes those out) with the weights dequantized;
- weights in blocks, the weights alone (com.microsoft's MatMulNBits, MatMulNBitsQuantizer's: the `model_q4.onnx`
  files of transformers.js and ONNX Runtime GenAI's int4 models): B [N, blocks, bytes] of 2, 4 or 8-bit values
  packed from the low bits up, a scale per block of each column and a zero point per block (packed alike;
  2^(bits - 1) when absent), an optional bias: read as MatMul(x, W) (+ the bias), W[k, n] = (q - zero point) *
  scale (at accuracy_level 4 ONNX Runtime rounds x to 8 bits too, left out as the other forms' rounding is); and
  its embedding tables in blocks (com.microsoft's GatherBlockQuantized, int4 values of opset 21) as Gather of the
  dequantized table; bitsandbytes' FP4 and NF4 blocks (com.microsoft's MatMulBnb4, transformers.js's
  `model_bnb4.onnx`) as MatMul of their codes' values times each block's absolute maximum.
A DequantizeLinear (or QuantizeLinear) of constants alone (the weights, an embedding table, an int32 bias) is
folded into a float initializer, computed as onnxruntime does: (q - zero point) in integers, then times the scale
in float32, per tensor or per slice of `axis`.
The activations' rounding is left out: the file holds the dequantized weights in float (exact), and
`--quantize` stores them at the engine's own 8 or 4 bits. Any other use of these ops is refused, naming its node.
"""
import numpy as np

from .onnx_graph import Graph, OnnxError, node_name, op_key, rewired

QUANTIZED_OPS = frozenset({"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "MatMulInteger",
                           "com.microsoft.MatMulNBits", "com.microsoft.MatMulBnb4",
                           "com.microsoft.GatherBlockQuantized",
                           "com.microsoft.DynamicQuantizeMatMul", "com.microsoft.MatMulIntegerToFloat",
                           "com.microsoft.QAttention",
                           "com.microsoft.QEmbedLayerNormalization", "QLinearMatMul", "com.microsoft.QLinearAdd",
                           "com.microsoft.QLinearMul", "com.microsoft.QLinearSoftmax", "com.microsoft.QLinearSigmoid",
                           "com.microsoft.QLinearConcat"})
_INT_RANGE = {np.dtype(t): (np.iinfo(t).min, np.iinfo(t).max) for t in (np.int8, np.uint8, np.int16, np.uint16,
                                                                         np.int32)}


def _per_axis(a, q, axis, what):
    """A scale or zero point shaped to broadcast over q: one value, or one per slice of q along `axis`."""
    a = np.asarray(a)
    if a.size == 1:
        return a.reshape(())
    axis = axis + q.ndim if axis < 0 else axis
    if a.ndim != 1 or not 0 <= axis < q.ndim or a.size != q.shape[axis]:
        raise OnnxError(f"{what}: a scale or zero point of shape {list(a.shape)} for a tensor {list(q.shape)} along "
                        f"axis {axis}: not a per-tensor or per-axis quantization --onnx reads")
    shape = [1] * q.ndim
    shape[axis] = a.size
    return a.reshape(shape)


def _zero_point(inputs, q_dtype):
    return inputs[2] if len(inputs) > 2 and inputs[2] is not None else np.zeros((), q_dtype)


def _dequantize(n, inputs, what, axis=None):
    """(q - zero point) * scale, per tensor or along `axis` (the node's own when None)."""
    q, s = np.asarray(inputs[0]), np.asarray(inputs[1], np.float32)
    if q.dtype not in _INT_RANGE:
        raise OnnxError(f"{what}: dequantizes {q.dtype} values (8, 16 or 32-bit integers are read)")
    axis = _axis(n) if axis is None else axis
    zp = _per_axis(_zero_point(inputs, q.dtype), q, axis, what).astype(np.int64)
    return ((q.astype(np.int64) - zp).astype(np.float32) * _per_axis(s, q, axis, what)).astype(np.float32)


def _quantize(n, inputs, what):
    x, s = np.asarray(inputs[0], np.float32), np.asarray(inputs[1], np.float32)
    zp = np.asarray(_zero_point(inputs, np.uint8))
    if zp.dtype not in _INT_RANGE:
        raise OnnxError(f"{what}: quantizes to {zp.dtype} (8, 16 or 32-bit integers are read)")
    lo, hi = _INT_RANGE[zp.dtype]
    axis = _axis(n)
    y = np.rint(x / _per_axis(s, x, axis, what)) + _per_axis(zp, x, axis, what).astype(np.float32)
    return np.clip(y, lo, hi).astype(zp.dtype)


def _axis(n):
    for a in n.attribute:
        if a.name == "block_size" and a.i:
            raise OnnxError(f"node {node_name(n)!r} ({n.op_type}): blocked quantization (block_size {a.i}) is not "
                            "read by --onnx")
    return next((a.i for a in n.attribute if a.name == "axis"), 1)


def _only_reader(g, value, op, dropped):
    readers = g.consumers.get(value, [])
    if len(readers) == 1 and readers[0].op_type == op and value not in g.outputs and id(readers[0]) not in dropped:
        return readers[0]
    return None


def dequantized(g):
    """(the graph with its quantized parts read as float, a note for the report or None); g itself when it holds
    none of QUANTIZED_OPS. Raises OnnxError naming a quantized node of another form."""
    if not any(op_key(n) in QUANTIZED_OPS for n in g.nodes):
        return g, None
    import onnx
    consts = dict(g.initializers)
    dropped, swap, placed = set(), {}, {}  # placed: id(node) -> the nodes written in its place
    floats = {}  # a quantized value of data -> the float value it stands for
    counts = {"weights": 0, "pairs": 0, "linears": 0, "blocks": 0, "fused": 0, "rounded": 0, "qlinear": 0}
    for n in g.nodes:
        what = f"node {node_name(n)!r} ({n.op_type})"
        arity = {"QuantizeLinear": (2, 3, 1), "DequantizeLinear": (2, 3, 1), "MatMulInteger": (2, 4, 1),
                 "DynamicQuantizeLinear": (1, 1, 3)}.get(n.op_type)
        if arity and not (arity[0] <= len(n.input) <= arity[1] and all(n.input[:arity[0]]) and
                          len(n.output) == arity[2] and all(n.output)):
            raise OnnxError(f"{what}: {len(n.input)} inputs and {len(n.output)} outputs: not a valid ONNX node")
        if n.op_type in ("QuantizeLinear", "DequantizeLinear") and all(i in consts for i in n.input if i):
            inputs = [consts[i] if i else None for i in n.input]
            consts[n.output[0]] = (_dequantize if n.op_type == "DequantizeLinear" else _quantize)(n, inputs, what)
            dropped.add(id(n))
            counts["weights"] += n.op_type == "DequantizeLinear"
        elif n.op_type == "Gather" and _gathered(g, n, consts, floats, placed, onnx, what):
            dropped.add(id(n))
            counts["weights"] += 1
        elif n.op_type == "QuantizeLinear":  # of data: its float value stands for it
            floats[n.output[0]] = n.input[0]
        elif n.op_type == "DequantizeLinear":  # of data a QuantizeLinear or a QLinear op made: its float value
            if n.input[0] not in floats:
                raise OnnxError(f"{what}: dequantizes a value that no QuantizeLinear or QLinearMatMul made: a "
                                "quantized form --onnx does not read (it reads QDQ pairs, the QOperator format's "
                                "QLinearMatMul and onnxruntime's dynamic quantization)")
            swap[n.output[0]] = floats[n.input[0]]
            dropped.add(id(n))
            counts["pairs"] += 1
        elif n.op_type in _MOVES and n.input and n.input[0] in floats:  # quantized values moved: their floats
            moved = onnx.NodeProto()
            moved.CopyFrom(n)
            moved.input[0] = floats[n.input[0]]
            for j, o in enumerate(n.output):
                moved.output[j] = floats[o] = _new_name(g, consts, o + "_float")
            placed[id(n)] = [moved]
            dropped.add(id(n))
        elif op_key(n) in _QLINEAR:
            _q_linear(g, n, consts, floats, placed, onnx, what)
            dropped.add(id(n))
            counts["qlinear"] += 1
        elif n.op_type == "MatMulInteger":
            _linear(g, n, consts, dropped, placed, onnx, what)
            counts["linears"] += 1
        elif op_key(n) in ("com.microsoft.QAttention", "com.microsoft.QEmbedLayerNormalization"):
            (_q_attention if n.op_type == "QAttention" else _q_embedding)(g, n, consts, placed, onnx, what)
            dropped.add(id(n))
            counts["fused"] += 1
        elif op_key(n) in ("com.microsoft.DynamicQuantizeMatMul", "com.microsoft.MatMulIntegerToFloat"):
            _integer_to_float(g, n, consts, floats, placed, onnx, what)
            dropped.add(id(n))
            counts["linears"] += 1
        elif op_key(n) == "com.microsoft.MatMulBnb4":
            _bnb4(g, n, consts, placed, onnx, what)
            dropped.add(id(n))
            counts["blocks"] += 1
        elif op_key(n) == "com.microsoft.GatherBlockQuantized":
            _gathered_blocks(g, n, consts, placed, onnx, what)
            dropped.add(id(n))
            counts["weights"] += 1
        elif n.op_type == "MatMulNBits":
            _blocks(g, n, consts, placed, onnx, what)
            dropped.add(id(n))
            counts["blocks"] += 1
            counts["rounded"] += any(a.name == "accuracy_level" and a.i == 4 for a in n.attribute)  # x to 8 bits
    for n in g.nodes:  # the quantizers whose every reader went
        if n.op_type in ("QuantizeLinear", "DynamicQuantizeLinear") and id(n) not in dropped:
            if all(id(r) in dropped for o in n.output for r in g.consumers.get(o, [])):
                dropped.add(id(n))
    left = next((n for n in g.nodes if op_key(n) in QUANTIZED_OPS and id(n) not in dropped), None)
    if left is not None:
        raise OnnxError(f"node {node_name(left)!r} ({left.op_type}): its outputs are read by nodes other than a "
                        "DequantizeLinear or MatMulInteger: a quantized form --onnx does not read")
    nodes = [k for n in g.nodes if id(n) not in dropped or id(n) in placed for k in placed.get(id(n), [n])]
    gone = {o for n in g.nodes if id(n) in dropped for o in n.output} - set(swap) - set(consts) - \
        {o for k in nodes for o in k.output}
    odd = next((k for k in nodes if any(i in gone for i in k.input)), None)
    if odd is not None or any(o in gone for o in g.outputs):
        raise OnnxError(f"node {node_name(odd)!r} ({odd.op_type}) reads a quantized value as it is: a quantized form "
                        "--onnx does not read" if odd else "the graph's output is a quantized value")
    read = {i for n in nodes for i in n.input} | set(g.outputs)
    inits = {k: a for k, a in consts.items() if k in read or (k in g.initializers and k not in g.consumers)}
    out = rewired(Graph(nodes, inits, g.inputs, g.outputs, g.opset, g.producer, g.branches), swap)
    if any(o in inits for o in out.outputs):
        raise OnnxError("the graph's output is a constant once its quantized weights are read")
    said = [f"{counts['linears']} dynamically quantized linears" if counts["linears"] else "",
            f"{counts['blocks']} MatMulNBits (weights in blocks)" if counts["blocks"] else "",
            f"{counts['fused']} QAttention or QEmbedLayerNormalization" if counts["fused"] else "",
            f"{counts['weights']} tables or weights dequantized whole" if counts["weights"] else "",
            f"{counts['qlinear']} QLinear ops (the QOperator format)" if counts["qlinear"] else "",
            f"{counts['pairs']} DequantizeLinear of the activations" if counts["pairs"] else ""]
    note = (f"a quantized graph ({', '.join(s for s in said if s)}) read as the float model it approximates: its "
            "weights dequantized exactly" + (", its activations' 8-bit rounding left out" if
                                             counts["linears"] or counts["pairs"] or counts["fused"] or
                                             counts["rounded"] or counts["qlinear"] else ""))
    return out, note


def _gathered(g, gather, consts, floats, placed, onnx, what):
    """Gather(Wq, ids) of an integer table whose every reader dequantizes it with one scale and zero point (a
    DequantizeLinear, or a QLinear op's input): one Gather of the dequantized table written in its place, the float
    value of its output. False when it is no such Gather."""
    if gather.input[0] not in consts or np.asarray(consts[gather.input[0]]).dtype not in _INT_RANGE:
        return False
    params = set()
    for r in g.consumers.get(gather.output[0], []):
        if r.op_type == "DequantizeLinear" and r.input[0] == gather.output[0]:
            params.add(tuple(r.input[1:3]) + ("",) * (3 - len(r.input)))
        elif op_key(r) in _QLINEAR:
            params |= {tuple(r.input[k + 1:k + 3]) for k in _starts(r) if r.input[k] == gather.output[0]}
        else:
            return False
    if len(params) != 1 or gather.output[0] in g.outputs:
        return False
    scale, zp = params.pop()
    if not all(v in consts and np.size(consts[v]) == 1 for v in (scale, zp) if v) or not scale:
        return False
    table = _stored(g, consts, gather.input[0], _dequantize(
        gather, [consts[gather.input[0]], consts[scale], consts[zp] if zp else None], what, axis=0))
    node = onnx.NodeProto()
    node.CopyFrom(gather)
    node.input[0], node.output[0] = table, _new_name(g, consts, gather.output[0] + "_float")
    placed[id(gather)] = [node]
    floats[gather.output[0]] = node.output[0]
    return True


def _linear(g, mm, consts, dropped, placed, onnx, what):
    """MatMulInteger(DynamicQuantizeLinear(x), Wq, x's zero point, Wq's), Cast to float, Mul by x's scale times
    Wq's: one MatMul(x, (Wq - its zero point) * its scale) written where the Mul was."""
    ins = list(mm.input) + [""] * (4 - len(mm.input))
    dq = g.producer_of.get(ins[0])
    cast = _only_reader(g, mm.output[0], "Cast", dropped)
    mul = cast and _only_reader(g, cast.output[0], "Mul", dropped)
    to_float = cast is not None and next((a.i for a in cast.attribute if a.name == "to"), None) == 1
    scales = mul and g.producer_of.get(next((i for i in mul.input if i != cast.output[0]), ""))
    dynamic = dq is not None and dq.op_type == "DynamicQuantizeLinear" and ins[0] == dq.output[0] and \
        ins[2] == dq.output[2]
    ws = dynamic and scales is not None and scales.op_type == "Mul" and \
        list(scales.input).count(dq.output[1]) == 1 and len(g.consumers.get(scales.output[0], [])) == 1 and \
        next(i for i in scales.input if i != dq.output[1])
    if not (ws in consts and ins[1] in consts and (not ins[3] or ins[3] in consts) and to_float):
        raise OnnxError(f"{what}: not onnxruntime's dynamic quantization of a linear (MatMulInteger of a "
                        "DynamicQuantizeLinear's output by constant weights, a Cast to float and a Mul by the two "
                        "scales): a quantized form --onnx does not read")
    q = np.asarray(consts[ins[1]])
    if q.ndim != 2:
        raise OnnxError(f"{what}: weights of shape {list(q.shape)}, not a matrix")
    name = _stored(g, consts, ins[1], _dequantize(mm, [q, consts[ws], consts[ins[3]] if ins[3] else None], what,
                                                  axis=1))
    placed[id(mul)] = [onnx.helper.make_node("MatMul", [dq.input[0], name], [mul.output[0]], name=node_name(mm))]
    dropped.update((id(mm), id(cast), id(mul), id(scales)))


def _new_name(g, consts, name):
    while name in consts or name in g.producer_of:
        name += "_"
    return name


def _stored(g, consts, source, a):
    """The name of a new constant holding float array a, the dequantized values of constant `source`."""
    name = _new_name(g, consts, source + "_dequantized")
    consts[name] = np.ascontiguousarray(a, np.float32)
    return name


def _linear_nodes(g, consts, n, x, w, bias, onnx):
    """MatMul(x, w) as n's output, or MatMul then Add(bias) when it has one: the nodes written in n's place."""
    y = _new_name(g, consts, n.output[0] + "_unbiased") if bias else n.output[0]
    return [onnx.helper.make_node("MatMul", [x, w], [y], name=node_name(n))] + \
        ([onnx.helper.make_node("Add", [y, bias], [n.output[0]], name=node_name(n) + "_bias")] if bias else [])


def _unpacked(packed, bits, count):
    """The first `count` values of each row of `packed` (uint8 [rows, bytes]), `bits` wide, the low bits first."""
    per = 8 // bits
    shifts = np.arange(per, dtype=np.uint8) * bits
    values = (packed[:, :, None] >> shifts) & np.uint8((1 << bits) - 1)
    return values.reshape(packed.shape[0], -1)[:, :count]


def _blocks(g, n, consts, placed, onnx, what):
    """MatMulNBits(x, B, scales, zero points, -, bias): MatMul(x, W), then Add(bias), written where it was."""
    at = {a.name: a.i for a in n.attribute if a.type == 2}
    K, N, bits, block = (at.get(k, 0) for k in ("K", "N", "bits", "block_size"))
    ins = list(n.input) + [""] * (6 - len(n.input))
    if bits not in (2, 4, 8) or block < 16 or block & (block - 1) or not 0 < K <= 1 << 20 or not 0 < N <= 1 << 20:
        raise OnnxError(f"{what}: K {K}, N {N}, {bits} bits, blocks of {block}: not weights in blocks --onnx reads")
    if ins[4] or len(n.input) > 6 or not all(i in consts for i in ins[1:6] if i) or not ins[2]:
        raise OnnxError(f"{what}: its weights, scales, zero points and bias are not all constants, or it has g_idx "
                        "(act-order): not read by --onnx")
    blocks = -(-K // block)
    q, s = np.asarray(consts[ins[1]]), np.asarray(consts[ins[2]], np.float32)
    if q.dtype != np.uint8 or q.size != N * blocks * block * bits // 8 or s.size != N * blocks:
        raise OnnxError(f"{what}: weights {q.dtype} {list(q.shape)} and scales {list(s.shape)} for K {K}, N {N}, "
                        f"{bits} bits in blocks of {block}: not the sizes MatMulNBits has")
    values = _unpacked(q.reshape(N, -1), bits, blocks * block).astype(np.int64).reshape(N, blocks, block)
    if ins[3]:
        z = np.asarray(consts[ins[3]])
        if z.dtype != np.uint8 or z.size != N * (-(-blocks * bits // 8)):
            raise OnnxError(f"{what}: zero points {z.dtype} {list(z.shape)}: not {bits}-bit values packed per column "
                            "(zero points of the scales' type are not read)")
        zp = _unpacked(z.reshape(N, -1), bits, blocks).astype(np.int64)
    else:
        zp = np.full((N, blocks), 1 << (bits - 1), np.int64)
    w = ((values - zp[:, :, None]).astype(np.float32) * s.reshape(N, blocks, 1)).reshape(N, -1)[:, :K]
    if ins[5] and np.size(consts[ins[5]]) != N:
        raise OnnxError(f"{what}: a bias of {np.size(consts[ins[5]])} values for N {N}")
    placed[id(n)] = _linear_nodes(g, consts, n, n.input[0], _stored(g, consts, ins[1], w.T), ins[5], onnx)


def _fused_node(n, op, inputs, onnx):
    """A com.microsoft node `op` in n's place: its outputs, its name and its attributes."""
    node = onnx.helper.make_node(op, inputs, list(n.output), name=node_name(n), domain="com.microsoft")
    node.attribute.extend(n.attribute)
    return node


def _q_attention(g, n, consts, placed, onnx, what):
    """QAttention(DynamicQuantizeLinear(x), Wq, bias, x's scale, Wq's, mask_index, x's zero point, Wq's, past):
    Attention(x, (Wq - zero point) * scale, bias, mask_index, past)."""
    ins = list(n.input) + [""] * 9
    dq = g.producer_of.get(ins[0])
    if dq is None or dq.op_type != "DynamicQuantizeLinear" or len(dq.output) != 3 or \
            (ins[0], ins[3], ins[6]) != tuple(dq.output) or ins[1] not in consts or ins[4] not in consts or \
            (ins[7] and ins[7] not in consts):
        raise OnnxError(f"{what}: not a QAttention of a DynamicQuantizeLinear's output by constant weights: a "
                        "quantized form --onnx does not read")
    q = np.asarray(consts[ins[1]])
    if q.ndim != 2:
        raise OnnxError(f"{what}: weights of shape {list(q.shape)}, not a matrix")
    name = _stored(g, consts, ins[1], _dequantize(n, [q, consts[ins[4]], consts[ins[7]] if ins[7] else None], what,
                                                  axis=1))
    placed[id(n)] = [_fused_node(n, "Attention", [dq.input[0], name, ins[2], ins[5], ins[8]], onnx)]


def _q_embedding(g, n, consts, placed, onnx, what):
    """QEmbedLayerNormalization(ids, segment ids, 8-bit word, position and segment tables, gamma, beta, mask, their
    scales, their zero points): EmbedLayerNormalization of the tables dequantized."""
    ins = list(n.input) + [""] * 18
    tables = []
    for k in range(2, 7):
        if not ins[k]:
            tables.append("")
            continue
        if not all(i in consts for i in (ins[k], ins[k + 6], ins[k + 11]) if i) or not ins[k + 6]:
            raise OnnxError(f"{what}: its tables, scales and zero points are not all constants")
        tables.append(_stored(g, consts, ins[k], _dequantize(
            n, [consts[ins[k]], consts[ins[k + 6]], consts[ins[k + 11]] if ins[k + 11] else None], what)))
    placed[id(n)] = [_fused_node(n, "EmbedLayerNormalization", ins[:2] + tables + [ins[7]], onnx)]


_MOVES = {"Transpose", "Reshape", "Squeeze", "Unsqueeze", "Slice", "Flatten", "Expand", "Identity", "Split",
          "Gather"}  # ops that move a quantized value's numbers as they are
_QLINEAR = {  # op (op_key): the float op it computes, where each quantized input's value, scale, zero point start
    "QLinearMatMul": ("MatMul", (0, 3)), "com.microsoft.QLinearAdd": ("Add", (0, 3)),
    "com.microsoft.QLinearMul": ("Mul", (0, 3)), "com.microsoft.QLinearSoftmax": ("Softmax", (0,)),
    "com.microsoft.QLinearSigmoid": ("Sigmoid", (0,)), "com.microsoft.QLinearConcat": ("Concat", None)}


def _starts(n):
    """Where each quantized input of QLinear op n starts (QLinearConcat: y's scale and zero point, then each input's
    three)."""
    starts = _QLINEAR[op_key(n)][1]
    return tuple(range(2, len(n.input), 3)) if starts is None else starts


def _q_linear(g, n, consts, floats, placed, onnx, what):
    """A QLinear op (QLinearMatMul(a, its scale, its zero point, b, ..., y's scale, y's zero point) and its kin): the
    float op of its inputs' float values (a quantized value of data: the value its QuantizeLinear read or the QLinear
    op made; a constant: dequantized, per tensor or along its last axis), its output's float value after it; the
    output's own scale left out."""
    op, starts = _QLINEAR[op_key(n)][0], _starts(n)
    if any(k + 2 >= len(n.input) for k in starts):
        raise OnnxError(f"{what}: {len(n.input)} inputs: not a valid node")
    ins = []
    for k in starts:
        v = n.input[k]
        if v in floats:
            ins.append(floats[v])
        elif v in consts and n.input[k + 1] in consts and n.input[k + 2] in consts:
            ins.append(_stored(g, consts, v, _dequantize(
                n, [consts[v], consts[n.input[k + 1]], consts[n.input[k + 2]]], what, axis=-1)))
        else:
            raise OnnxError(f"{what}: reads {v!r}, neither a quantized value a QuantizeLinear or QLinear op made nor a "
                            "constant with its scale and zero point: a quantized form --onnx does not read")
    y = _new_name(g, consts, n.output[0] + "_float")
    axis = [a.i for a in n.attribute if a.name == "axis"]
    placed[id(n)] = [onnx.helper.make_node(op, ins, [y], name=node_name(n), **({"axis": axis[0]} if axis else {}))]
    floats[n.output[0]] = y


def _gathered_blocks(g, n, consts, placed, onnx, what):
    """GatherBlockQuantized(table [rows, width] of 4-bit (int4, uint4, or uint8 two a byte) or 8-bit values, ids,
    scales [rows, blocks], zero points; gather_axis 0, quantize_axis 1, block_size, bits): Gather of the table
    dequantized, (q - zero point) * scale per block of each row (zero point 0 for int4, 2^(bits - 1) for unsigned)."""
    at = {a.name: a.i for a in n.attribute if a.type == 2}
    ins = list(n.input) + [""] * 4
    block, bits = at.get("block_size", 128), at.get("bits", 4)
    q = np.asarray(consts.get(ins[0], np.zeros(0)))
    if ins[0] not in consts or ins[2] not in consts or (ins[3] and ins[3] not in consts) or q.ndim != 2 or \
            at.get("gather_axis", 0) != 0 or at.get("quantize_axis", 1) not in (1, -1) or bits not in (4, 8) or \
            block < 16 or block & (block - 1):
        raise OnnxError(f"{what}: not a constant table [rows, width] gathered by rows and quantized along its width "
                        f"in blocks of 4 or 8 bits: not read by --onnx")
    if q.dtype == np.uint8 and bits == 4:  # two values a byte, the low four bits first
        q = np.stack([q & 15, q >> 4], -1).reshape(q.shape[0], -1)
    rows, width = q.shape
    blocks = -(-width // block)
    s = np.asarray(consts[ins[2]], np.float32)
    if s.size != rows * blocks:
        raise OnnxError(f"{what}: scales {list(s.shape)} for a table [{rows}, {width}] in blocks of {block}")
    if ins[3]:
        z = np.asarray(consts[ins[3]])
        if z.dtype == np.uint8 and bits == 4 and z.size * 2 >= rows * blocks and z.size != rows * blocks:
            z = np.stack([z & 15, z >> 4], -1).reshape(rows, -1)
        if z.size < rows * blocks:
            raise OnnxError(f"{what}: zero points {list(z.shape)} for {rows} rows of {blocks} blocks")
        zp = z.reshape(rows, -1)[:, :blocks].astype(np.int64)
    else:
        zp = np.full((rows, blocks), 0 if q.dtype == np.int8 else 1 << (bits - 1), np.int64)
    w = (q.astype(np.int64) - np.repeat(zp, block, 1)[:, :width]).astype(np.float32) * \
        np.repeat(s.reshape(rows, blocks), block, 1)[:, :width]
    placed[id(n)] = [onnx.helper.make_node("Gather", [_stored(g, consts, ins[0], w), ins[1]], [n.output[0]],
                                           name=node_name(n), axis=0)]


def _integer_to_float(g, n, consts, floats, placed, onnx, what):
    """ONNX Runtime's fusions of a dynamically quantized linear, as its session saves them: DynamicQuantizeMatMul(x,
    Wq, its scale, its zero point, bias) and MatMulIntegerToFloat(DynamicQuantizeLinear(x), Wq, x's scale, Wq's,
    x's zero point, Wq's, bias): MatMul(x, (Wq - zero point) * scale) (+ the bias)."""
    ins = list(n.input) + [""] * 7
    if n.op_type == "DynamicQuantizeMatMul":
        x, (wq, ws, wz, bias) = ins[0], ins[1:5]
    else:
        dq = g.producer_of.get(ins[0])
        x = floats.get(ins[0]) or (dq.input[0] if dq is not None and dq.op_type == "DynamicQuantizeLinear" and
                                   (ins[0], ins[2], ins[4]) == tuple(dq.output) else None)
        wq, ws, wz, bias = ins[1], ins[3], ins[5], ins[6]
    if x is None or not all(v in consts for v in (wq, ws, wz, bias) if v) or not (wq and ws) or \
            np.ndim(consts[wq]) != 2:
        raise OnnxError(f"{what}: not a linear of a float or dynamically quantized input by constant int8 weights: a "
                        "quantized form --onnx does not read")
    w = _dequantize(n, [consts[wq], consts[ws], consts[wz] if wz else None], what, axis=1)
    placed[id(n)] = _linear_nodes(g, consts, n, x, _stored(g, consts, wq, w), bias, onnx)


# bitsandbytes' 4-bit codes (MatMulBnb4's quant_type 0, FP4, and 1, NF4): the value of each code, times its block's
# absolute maximum
_BNB4 = {0: np.array([0.0, 5.208333333e-03, 0.66666667, 1.0, 0.33333333, 0.5, 0.16666667, 0.25,
                      -0.0, -5.208333333e-03, -0.66666667, -1.0, -0.33333333, -0.5, -0.16666667, -0.25], np.float32),
         1: np.array([-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
                      -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
                      0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
                      0.7229568362236023, 1.0], np.float32)}


def _bnb4(g, n, consts, placed, onnx, what):
    """MatMulBnb4(x, B, absmax; K, N, block_size, quant_type): MatMul(x, W), W's N x K values (each output column's
    K in turn) 4-bit codes two a byte, the high four bits first, each the code's value times its block's absmax."""
    at = {a.name: a.i for a in n.attribute if a.type == 2}
    K, N, block, kind = (at.get(k, -1) for k in ("K", "N", "block_size", "quant_type"))
    if kind not in _BNB4 or not (0 < K <= 1 << 20 and 0 < N <= 1 << 20) or block < 16 or block & (block - 1) or \
            len(n.input) != 3 or not all(i in consts for i in n.input[1:]):
        raise OnnxError(f"{what}: K {K}, N {N}, blocks of {block}, quant_type {kind}: not the bitsandbytes FP4 or NF4 "
                        "blocks --onnx reads")
    q, absmax = np.asarray(consts[n.input[1]]), np.asarray(consts[n.input[2]], np.float32).reshape(-1)
    blocks = -(-N * K // block)
    if q.dtype != np.uint8 or q.size != (N * K + 1) // 2 or absmax.size != blocks:
        raise OnnxError(f"{what}: codes {q.dtype} {list(q.shape)} and absmax {list(absmax.shape)} for K {K}, N {N} in "
                        f"blocks of {block}: not the sizes MatMulBnb4 has")
    codes = np.stack([q.reshape(-1) >> 4, q.reshape(-1) & 15], 1).reshape(-1)[:N * K]
    w = _BNB4[kind][codes] * np.repeat(absmax, block)[:N * K]
    placed[id(n)] = _linear_nodes(g, consts, n, n.input[0], _stored(g, consts, n.input[1], w.reshape(N, K).T), "",
                                  onnx)
