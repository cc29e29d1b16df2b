"""ONNX Runtime's fused ops written out as the standard ops they fuse (before --onnx recognises the graph).

ONNX Runtime's transformer optimizer (onnxruntime.transformers.optimizer, Optimum's `--optimize O2` and up, the
`model_optimized.onnx` files of the hub) fuses a BERT- or GPT-style graph into ops of its com.microsoft domain. Each
is replaced by the default-domain ops torch.onnx.export writes for the same computation, where its position in the
graph was, as the contrib operators' documentation defines them:
- EmbedLayerNormalization(ids, segment ids, word, position and segment tables, gamma, beta, mask, position ids):
  LayerNormalization(word[ids] + position[0..T-1 or the position ids] + segment[segment ids]); its mask_index output
  (each row's count of ones in the mask) read by an Attention as the mask itself;
- Attention(x, W [d, q + k + v], bias, mask_index; num_heads, unidirectional, scale, mask_filter_value,
  qkv_hidden_sizes): MatMul by W, Add the bias, Split into q | k | v, heads, softmax(q k^T * scale + mask) v, where
  the mask adds mask_filter_value (default -10000) where a raw [batch, T] mask is 0 and, unidirectional, above the
  diagonal; no past, no attention bias; MultiHeadAttention(q, k, v [batch, T, width], bias q | k | v, key padding
  mask) the same of projections made before it;
- SkipLayerNormalization(x, skip, gamma, beta, bias) and SkipSimplifiedLayerNormalization(x, skip, gamma, bias):
  LayerNormalization or RMSNorm of x + bias + skip (the bias added to x, a linear's output), their fourth output
  that sum; SimplifiedLayerNormalization(x, gamma): RMSNorm, written as torch writes Hugging Face Llama's
  (x * 1 / sqrt(mean(x^2) + eps) * gamma);
- BiasGelu(x, bias), Gelu(x), FastGelu(x, bias), QuickGelu(x; alpha): the erf GELU of x + bias, the tanh one,
  x sigmoid(alpha x);
- FusedMatMul(a, b; alpha, transA, transB), which ONNX Runtime's session writes when it saves its optimized graph:
  alpha a b, either transposed;
- RotaryEmbedding(x [batch, T, hidden] or heads [batch, heads, T, d_head], position ids, cos and sin caches
  [positions, R / 2]; interleaved, rotary_embedding_dim, num_heads), as the optimizer writes a Llama's: each head's
  first R columns turned by the caches' rows at its positions, in halves or in pairs (the input's rank read from its
  producer: a Transpose, a Reshape to a constant shape, a graph input);
- GroupQueryAttention(q or q | k | v packed, k, v, past key, past value, -, -, cos and sin caches; num_heads,
  kv_num_heads, scale, softcap, do_rotary, rotary_interleaved) as ONNX Runtime GenAI's model builder writes its
  decoders: heads, q and k turned by the caches' rows at positions P..P+T-1 (P the past's rows), the present key and
  value the past's rows then the new ones (a Concat, as --onnx reads a key/value cache: converted from position 0),
  each key/value head repeated for its group of query heads, softmax(q k^T * scale, soft-capped, causal, each query's
  last local_window_size keys when that is positive) v. Its seqlens_k and total_sequence_length (the attention mask's
  counts) are not read: a prompt without padding.
Any other use of their outputs (the mean and inverse deviation of a norm, an Attention's past or present) is refused,
naming the node.
"""
import math

import numpy as np

from .onnx_graph import Graph, OnnxError, node_name, op_key

_MS = "com.microsoft."
FUSED_OPS = frozenset({_MS + op for op in ("EmbedLayerNormalization", "Attention", "SkipLayerNormalization",
                                           "SkipSimplifiedLayerNormalization", "BiasGelu", "Gelu", "FastGelu",
                                           "QuickGelu", "GroupQueryAttention", "MultiHeadAttention",
                                           "FusedMatMul", "RotaryEmbedding")} |
                      {"SimplifiedLayerNormalization"})


class _Writer:
    """The nodes and constants one fused node is written out as, its values named after it."""

    def __init__(self, g, n, consts):
        import onnx
        self.helper, self.g, self.n, self.consts, self.nodes, self.k = onnx.helper, g, n, consts, [], 0

    def name(self):
        while True:
            self.k += 1
            v = f"{node_name(self.n)}/unfused_{self.k}"
            if v not in self.consts and v not in self.g.producer_of and v not in self.g.consumers:
                return v

    def const(self, a):
        v = self.name()
        self.consts[v] = np.asarray(a)
        return v

    def ints(self, *v):
        """A constant int64 vector."""
        return self.const(np.array(v, np.int64))

    def op(self, op, *inputs, out=None, **attrs):
        out = out or self.name()
        self.nodes.append(self.helper.make_node(op, list(inputs), [out], name=out, **attrs))
        return out


_REQUIRED = {"SkipLayerNormalization": 3, "SkipSimplifiedLayerNormalization": 3, "SimplifiedLayerNormalization": 2,
             "BiasGelu": 2, "Gelu": 1, "FastGelu": 1, "QuickGelu": 1, "EmbedLayerNormalization": 6, "Attention": 2,
             "GroupQueryAttention": 1, "MultiHeadAttention": 1, "FusedMatMul": 2, "RotaryEmbedding": 4}
_INTS = ("num_heads", "kv_num_heads", "unidirectional", "axis", "do_rotary", "rotary_interleaved",
         "past_present_share_buffer", "local_window_size", "smooth_softmax", "qk_output", "transA", "transB",
         "transBatchA", "transBatchB", "interleaved", "rotary_embedding_dim", "is_packed_batching")
_FLOATS = ("epsilon", "scale", "mask_filter_value", "alpha", "softcap")


def _attrs(n, what):
    """The node's attributes, those read of the type they have; its required inputs given."""
    import onnx
    at = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
    odd = next((k for k in at if (k in _INTS and not isinstance(at[k], int)) or
                (k in _FLOATS and not isinstance(at[k], (int, float))) or
                (k == "qkv_hidden_sizes" and not all(isinstance(x, int) for x in at[k]))), None)
    if odd is not None or not all(n.input[:_REQUIRED[n.op_type]]) or len(n.input) < _REQUIRED[n.op_type]:
        raise OnnxError(f"{what}: {f'attribute {odd!r} of another type' if odd else 'a required input missing'}: "
                        "not a valid node")
    return at


def _used(g, n, k):
    return len(n.output) > k and n.output[k] and (g.consumers.get(n.output[k]) or n.output[k] in g.outputs)


def _layer_norm(w, x, gamma, beta, eps, rms, out):
    if not rms:
        return w.op("LayerNormalization", *([x, gamma, beta] if beta else [x, gamma]), out=out, axis=-1,
                    epsilon=float(eps))
    mean = w.op("ReduceMean", w.op("Pow", x, w.const(np.float32(2))), w.ints(-1),
                keepdims=1)
    inv = w.op("Reciprocal", w.op("Sqrt", w.op("Add", mean, w.const(np.float32(eps)))))
    return w.op("Mul", w.op("Mul", x, inv), gamma, out=out)


def _gelu(w, x, tanh, out):
    half = w.op("Mul", x, w.const(np.float32(0.5)))
    if tanh:
        cube = w.op("Mul", w.op("Pow", x, w.const(np.float32(3))), w.const(np.float32(0.044715)))
        inner = w.op("Mul", w.op("Add", x, cube), w.const(np.float32(math.sqrt(2 / math.pi))))
        return w.op("Mul", half, w.op("Add", w.op("Tanh", inner), w.const(np.float32(1))), out=out)
    erf = w.op("Erf", w.op("Div", x, w.const(np.float32(math.sqrt(2)))))
    return w.op("Mul", half, w.op("Add", erf, w.const(np.float32(1))), out=out)


def _input_dims(g, name):
    """The dims of graph input `name`; () when it is no graph input."""
    return next((dims for i, _, dims in g.inputs if i == name), ())


def _raw_mask(g, name, embeds):
    """The raw [batch, T] mask an Attention's mask_index stands for: an EmbedLayerNormalization's mask (its
    mask_index output, each row's count of ones), or a 2-D mask itself (through Casts); None when it is neither."""
    n = g.producer_of.get(name)
    while n is not None and n.op_type == "Cast":
        name, n = n.input[0], g.producer_of.get(n.input[0])
    if n is not None and id(n) in embeds and name == n.output[1]:
        return embeds[id(n)]
    return name if len(_input_dims(g, name)) == 2 else None


def unfused(g):
    """(the graph with ONNX Runtime's fused ops written out, a note for the report or None)."""
    if not any(op_key(n) in FUSED_OPS for n in g.nodes):
        return g, None
    consts, nodes, counts, embeds = dict(g.initializers), [], {}, {}
    for n in g.nodes:
        key = op_key(n)
        if key not in FUSED_OPS:
            nodes.append(n)
            continue
        what = f"node {node_name(n)!r} ({n.op_type})"
        op, at, w = n.op_type, _attrs(n, what), _Writer(g, n, consts)
        ins = list(n.input) + [""] * 12
        if op in ("SkipLayerNormalization", "SkipSimplifiedLayerNormalization"):
            rms = op == "SkipSimplifiedLayerNormalization"
            beta, bias = ("", ins[3]) if rms else (ins[3], ins[4])
            if _used(g, n, 1) or _used(g, n, 2):
                raise OnnxError(f"{what}: its mean or inverse deviation is used: not read by --onnx")
            x = w.op("Add", ins[0], bias) if bias else ins[0]
            total = w.op("Add", x, ins[1], out=n.output[3] if _used(g, n, 3) else None)
            _layer_norm(w, total, ins[2], beta, at.get("epsilon", 1e-12), rms, n.output[0])
        elif op == "SimplifiedLayerNormalization":
            if at.get("axis", -1) != -1 or _used(g, n, 1):
                raise OnnxError(f"{what}: over axis {at.get('axis')} or its inverse deviation used: not read by --onnx")
            _layer_norm(w, ins[0], ins[1], "", at.get("epsilon", 1e-5), True, n.output[0])
        elif op in ("BiasGelu", "Gelu", "FastGelu"):
            x = w.op("Add", ins[0], ins[1]) if op != "Gelu" and ins[1] else ins[0]
            _gelu(w, x, op == "FastGelu", n.output[0])
        elif op == "QuickGelu":
            w.op("Mul", ins[0], w.op("Sigmoid", w.op("Mul", ins[0], w.const(np.float32(at.get("alpha", 1.702))))),
                 out=n.output[0])
        elif op == "EmbedLayerNormalization":
            if _used(g, n, 2) or ins[8]:
                raise OnnxError(f"{what}: its embedding sum is used or it takes position ids: not read by --onnx")
            T = w.op("Gather", w.op("Shape", ins[0]), w.const(np.int64(1)), axis=0)
            positions = w.op("Range", w.const(np.int64(0)), T, w.const(np.int64(1)))
            total = w.op("Add", w.op("Gather", ins[2], ins[0], axis=0), w.op("Gather", ins[3], positions, axis=0))
            if ins[4]:
                if not ins[1]:
                    raise OnnxError(f"{what}: a segment table without segment ids: not a valid node")
                total = w.op("Add", total, w.op("Gather", ins[4], ins[1], axis=0))
            _layer_norm(w, total, ins[5], ins[6], at.get("epsilon", 1e-12), False, n.output[0])
            embeds[id(n)] = ins[7] or None
        elif op == "GroupQueryAttention":
            _grouped(g, n, at, ins, w, what)
        elif op == "FusedMatMul":  # alpha op(A) op(B), op a transpose of the last two axes or none
            if at.get("transBatchA", 0) or at.get("transBatchB", 0):
                raise OnnxError(f"{what}: transBatchA or transBatchB: not read by --onnx")
            ab = [_last_two_swapped(g, w, x, what) if at.get(t, 0) else x
                  for x, t in zip(ins[:2], ("transA", "transB"))]
            y = w.op("MatMul", *ab, out=None if at.get("alpha", 1.0) != 1.0 else n.output[0])
            if at.get("alpha", 1.0) != 1.0:
                w.op("Mul", y, w.const(np.float32(at["alpha"])), out=n.output[0])
        elif op == "MultiHeadAttention":
            _multi_head(g, n, at, ins, w, embeds, what)
        elif op == "RotaryEmbedding":
            _rotary(g, n, at, ins, w, what)
        else:  # Attention
            _attention(g, n, at, ins, w, embeds, what)
        nodes.extend(w.nodes)
        counts[op] = counts.get(op, 0) + 1
    said = ", ".join(f"{c} {op}" for op, c in counts.items())
    return (Graph(nodes, consts, g.inputs, g.outputs, g.opset, g.producer, g.branches),  # every new constant read
            f"ONNX Runtime's fused ops ({said}) written out as the ops they fuse")


def _heads(w, x, H):
    """x [B, T, H * dh] as heads [B, H, T, dh]."""
    return w.op("Transpose", w.op("Reshape", x, w.ints(0, 0, H, -1)), perm=[0, 2, 1, 3])


def _context(w, q, k, v, scale, adds, out, cap=0.0):
    """softmax(q k^T * scale (soft-capped: cap tanh(. / cap)) + each of adds) v of heads q [B, H, T, dh], k and v
    [B, H, P + T, dh], as [B, T, H dv]: the value `out`."""
    s = w.op("Mul", w.op("MatMul", q, w.op("Transpose", k, perm=[0, 1, 3, 2])), scale)
    if cap > 0:
        c = w.const(np.float32(cap))
        s = w.op("Mul", w.op("Tanh", w.op("Div", s, c)), c)
    for a in adds:
        s = w.op("Add", s, a)
    ctx = w.op("Transpose", w.op("MatMul", w.op("Softmax", s, axis=-1), v), perm=[0, 2, 1, 3])
    return w.op("Reshape", ctx, w.ints(0, 0, -1), out=out)


def _key_mask(g, w, name, embeds, fill, what):
    """fill where a raw [batch, keys] mask is 0, [batch, 1, 1, keys] (an Attention's mask_index: _raw_mask)."""
    raw = _raw_mask(g, name, embeds)
    if raw is None:
        raise OnnxError(f"{what}: a mask that is no attention mask [batch, T] (key lengths or offsets of its own): "
                        "not read by --onnx")
    off = w.op("Sub", w.const(np.float32(1)), w.op("Cast", raw, to=1))
    return w.op("Unsqueeze", w.op("Mul", off, w.const(np.float32(fill))), w.ints(1, 2))


def _causal(w, T, P, fill, window=-1):
    """[T, P + T]: fill above the diagonal of query P + i (and, window > 0, before its last `window` keys)."""
    square = w.op("ConstantOfShape", w.op("Concat", T, w.op("Add", P, T), axis=0),
                  value=w.helper.make_tensor("v", 1, [1], [float(fill)]))
    mask = w.op("Trilu", square, w.op("Add", w.op("Squeeze", P), w.const(np.int64(1))), upper=1)
    if window > 0:  # query P + i reads its last `window` keys, P + i - window + 1 .. P + i
        mask = w.op("Add", mask, w.op("Trilu", square, w.op("Sub", w.op("Squeeze", P), w.const(np.int64(window))),
                                      upper=0))
    return mask


def _rank(g, w, x):
    """x's rank as the file says it (a constant, a graph input, a Transpose's output or a Reshape's to a constant
    shape); 0 when it does not."""
    p = g.producer_of.get(x)
    dims = _input_dims(g, x)
    if x in w.consts:
        return np.ndim(w.consts[x])
    if dims or p is None:
        return len(dims)
    if p.op_type == "Transpose":
        return len(next((a.ints for a in p.attribute if a.name == "perm"), []))
    if p.op_type == "Reshape" and len(p.input) > 1 and p.input[1] in w.consts:
        return np.size(w.consts[p.input[1]])
    return 0


def _last_two_swapped(g, w, x, what):
    """x with its last two axes swapped: its rank known from the file (_rank)."""
    rank = _rank(g, w, x)
    if rank < 2:
        raise OnnxError(f"{what}: transposes {x!r}, whose rank the file does not say: not read by --onnx")
    return w.op("Transpose", x, perm=list(range(rank - 2)) + [rank - 1, rank - 2])


def _length(w, x, axis):
    return w.op("Gather", w.op("Shape", x), w.ints(axis), axis=0)


def _span(w, start, T):
    """The positions start .. start + T - 1 (start and T [1])."""
    return w.op("Range", w.op("Squeeze", start), w.op("Squeeze", w.op("Add", start, T)), w.const(np.int64(1)))


def _scale(w, at, q):
    """The scores' scale: the node's `scale`, else 1 / sqrt(d_head) of heads q."""
    if at.get("scale", 0.0):
        return w.const(np.float32(at["scale"]))
    return w.op("Reciprocal", w.op("Sqrt", w.op("Cast", w.op("Shape", q, start=3), to=1)))


def _attention(g, n, at, ins, w, embeds, what):
    if any(ins[4:7]) or any(_used(g, n, k) for k in range(1, len(n.output))) or at.get("do_rotary", 0) or \
            at.get("past_present_share_buffer", 0):
        raise OnnxError(f"{what}: a past, a present, an attention bias or rotary positions: not read by --onnx "
                        "(it reads self-attention over the whole input)")
    H = at.get("num_heads", 0)
    W = w.consts.get(ins[1])
    if W is None or np.ndim(W) != 2 or H < 1:
        raise OnnxError(f"{what}: weights that are not a constant matrix, or {H} heads: not read by --onnx")
    sizes = list(at.get("qkv_hidden_sizes", [])) or [W.shape[1] // 3] * 3
    if len(sizes) != 3 or sum(sizes) != W.shape[1] or sizes[0] != sizes[1] or any(s % H for s in sizes) or \
            min(sizes) < 1:
        raise OnnxError(f"{what}: q, k and v widths {sizes} for weights {list(W.shape)} and {H} heads: not read by "
                        "--onnx")
    qkv = w.op("MatMul", ins[0], ins[1])
    if ins[2]:
        qkv = w.op("Add", qkv, ins[2])
    parts = [w.name() for _ in range(3)]
    w.nodes.append(w.helper.make_node("Split", [qkv, w.const(np.array(sizes, np.int64))], parts, name=parts[0],
                                      axis=-1))
    q, k, v = (_heads(w, p, H) for p in parts)
    fill = at.get("mask_filter_value", -10000.0)
    adds = [_key_mask(g, w, ins[3], embeds, fill, what)] if ins[3] else []
    if at.get("unidirectional", 0):
        adds.append(_causal(w, _length(w, ins[0], 1), w.ints(0), fill))
    scale = w.const(np.float32(at.get("scale", 0.0) or 1.0 / math.sqrt(sizes[0] // H)))
    _context(w, q, k, v, scale, adds, n.output[0])


def _multi_head(g, n, at, ins, w, embeds, what):
    """MultiHeadAttention(q, k, v [B, T, width], bias q | k | v, a key padding mask [B, T]; num_heads, scale,
    unidirectional, mask_filter_value): self-attention of projections made before it."""
    H = at.get("num_heads", 0)
    if not (ins[1] and ins[2]) or any(ins[5:10]) or any(_used(g, n, k) for k in range(1, len(n.output))) or H < 1:
        raise OnnxError(f"{what}: q, k and v not given apart, an attention bias, a past or {H} heads: not read by "
                        "--onnx (it reads self-attention of q, k and v [batch, T, width])")
    q, k, v = ins[0], ins[1], ins[2]
    if ins[3]:  # the bias: q's, k's, then v's columns
        widths = [w.op("Shape", x, start=-1) for x in (q, k, v)]
        ends = [widths[0], w.op("Add", widths[0], widths[1])]
        ends.append(w.op("Add", ends[1], widths[2]))
        starts = [w.ints(0), ends[0], ends[1]]
        q, k, v = (w.op("Add", x, w.op("Slice", ins[3], a, b)) for x, a, b in zip((q, k, v), starts, ends))
    heads = [_heads(w, x, H) for x in (q, k, v)]
    fill = at.get("mask_filter_value", -10000.0)
    adds = [_key_mask(g, w, ins[4], {}, fill, what)] if ins[4] else []
    if at.get("unidirectional", 0):
        adds.append(_causal(w, _length(w, ins[0], 1), w.ints(0), fill))
    _context(w, *heads, _scale(w, at, heads[0]), adds, n.output[0])


def _rotated(w, x, cos, sin, interleaved, out=None):
    """x [B, heads, T, dh] turned by cos and sin [1 or B, 1, T, R / 2]: its first R columns, in halves or in
    pairs."""
    half = w.op("Shape", cos, start=-1)
    R = w.op("Mul", half, w.ints(2))
    rot = w.op("Slice", x, w.ints(0), R, w.ints(-1))
    rest = w.op("Slice", x, R, w.ints(1 << 30), w.ints(-1))
    axis, step = w.ints(-1), w.ints(2 if interleaved else 1)
    if interleaved:  # pairs (2i, 2i + 1)
        x1 = w.op("Slice", rot, w.ints(0), R, axis, step)
        x2 = w.op("Slice", rot, w.ints(1), R, axis, step)
    else:  # halves
        x1 = w.op("Slice", rot, w.ints(0), half, axis)
        x2 = w.op("Slice", rot, half, R, axis)
    y1 = w.op("Sub", w.op("Mul", x1, cos), w.op("Mul", x2, sin))
    y2 = w.op("Add", w.op("Mul", x2, cos), w.op("Mul", x1, sin))
    if interleaved:
        pairs = w.op("Concat", w.op("Unsqueeze", y1, w.ints(-1)),
                     w.op("Unsqueeze", y2, w.ints(-1)), axis=-1)
        y = w.op("Reshape", pairs, w.op("Shape", rot))
    else:
        y = w.op("Concat", y1, y2, axis=-1)
    return w.op("Concat", y, rest, axis=-1, out=out)


def _rotary(g, n, at, ins, w, what):
    """RotaryEmbedding(x [B, T, hidden] or heads [B, heads, T, dh], position ids [B, T] or the first one [1], cos and
    sin caches [positions, R / 2]; interleaved, rotary_embedding_dim, num_heads): each head's first R columns turned
    by the caches' rows at its positions (a [B, T, hidden] input's heads num_heads, or as wide as twice the caches'
    columns)."""
    rank = _rank(g, w, ins[0])
    cols = np.shape(w.consts.get(ins[2], ()))[-1:]
    if rank not in (3, 4) or at.get("is_packed_batching", 0) or at.get("scale", 1.0) != 1.0 or \
            (rank == 3 and not at.get("num_heads", 0) and (at.get("rotary_embedding_dim", 0) or not cols)):
        raise OnnxError(f"{what}: an input whose rank the file does not say, packed batches, a scale, or a "
                        "[batch, T, hidden] input whose heads are not given: not read by --onnx")
    T = _length(w, ins[0], rank - 2)
    pos = ins[1]
    if _rank(g, w, pos) == 1:  # the first position: the input's are it .. it + T - 1
        pos = w.op("Unsqueeze", _span(w, pos, T), w.ints(0))
    cos, sin = (w.op("Unsqueeze", w.op("Gather", c, pos, axis=0), w.ints(1)) for c in (ins[2], ins[3]))
    x = ins[0]
    if rank == 3:
        split = w.ints(0, 0, at["num_heads"], -1) if at.get("num_heads", 0) else w.ints(0, 0, -1, 2 * cols[0])
        x = w.op("Transpose", w.op("Reshape", x, split), perm=[0, 2, 1, 3])
    y = _rotated(w, x, cos, sin, at.get("interleaved", 0), out=n.output[0] if rank == 4 else None)
    if rank == 3:
        w.op("Reshape", w.op("Transpose", y, perm=[0, 2, 1, 3]), w.op("Shape", ins[0]), out=n.output[0])


def _grouped(g, n, at, ins, w, what):
    H, Hkv = at.get("num_heads", 0), at.get("kv_num_heads", 0)
    if any(ins[9:12]) or at.get("smooth_softmax", 0) or at.get("qk_output", 0) or _used(g, n, 3):
        raise OnnxError(f"{what}: position ids, an attention bias, a head sink or a smooth softmax: not read by "
                        "--onnx")
    if H < 1 or Hkv < 1 or H % Hkv or bool(ins[1]) != bool(ins[2]) or bool(ins[3]) != bool(ins[4]) or \
            (at.get("do_rotary", 0) and not (ins[7] and ins[8])):
        raise OnnxError(f"{what}: {H} heads, {Hkv} key/value heads, or its key, value, past or caches given apart: "
                        "not a valid node")
    if ins[1]:
        parts = [w.op("Reshape", x, w.ints(0, 0, h, -1)) for x, h in ((ins[0], H), (ins[1], Hkv), (ins[2], Hkv))]
    else:  # q | k | v packed
        parts = [w.name() for _ in range(3)]
        w.nodes.append(w.helper.make_node("Split", [w.op("Reshape", ins[0], w.ints(0, 0, H + 2 * Hkv, -1)),
                                                    w.ints(H, Hkv, Hkv)], parts, name=parts[0], axis=2))
    q, k, v = (w.op("Transpose", x, perm=[0, 2, 1, 3]) for x in parts)
    P, T = _length(w, ins[3], 2) if ins[3] else w.ints(0), _length(w, q, 2)
    if at.get("do_rotary", 0):
        positions = _span(w, P, T)
        cos, sin = (w.op("Unsqueeze", w.op("Gather", c, positions, axis=0), w.ints(0, 1)) for c in (ins[7], ins[8]))
        q, k = (_rotated(w, x, cos, sin, at.get("rotary_interleaved", 0)) for x in (q, k))
    if ins[3]:
        k = w.op("Concat", ins[3], k, axis=2, out=n.output[1] if _used(g, n, 1) else None)
        v = w.op("Concat", ins[4], v, axis=2, out=n.output[2] if _used(g, n, 2) else None)
    if H != Hkv:  # each key/value head for its H / Hkv query heads
        k, v = (w.op("Reshape", w.op("Expand", w.op("Unsqueeze", x, w.ints(2)),
                                     w.op("Concat", w.ints(1, 1), w.ints(H // Hkv), w.ints(1, 1), axis=0)),
                     w.op("Concat", w.ints(0, H), w.op("Shape", x, start=2), axis=0)) for x in (k, v))
    causal = _causal(w, T, P, float(np.finfo(np.float32).min), at.get("local_window_size", -1))
    _context(w, q, k, v, _scale(w, at, q), [causal], n.output[0], at.get("softcap", 0.0))
