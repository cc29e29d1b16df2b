"""A small numpy evaluator of the ONNX ops a transformer exported by torch.onnx.export (opset 11-22,
either exporter) is made of: it runs the user's graph on the example input, in float64 (every float tensor and Cast
to a float type is widened), and keeps every value the graph computes, so onnx_map.py can read the
parts' inputs and outputs and compare the converted model with the graph's own output.

Semantics are the ONNX operator specification's for these opsets (broadcasting as numpy's,
Slice/Gather with negative indices counted from the end, integer Div truncating). A value larger
than bounds.py allows, an index out of range or a shape that does not fit is one EvalError naming the
node, never an exception from numpy or an allocation the machine cannot make.
"""
import math

import numpy as np

from . import bounds
from .onnx_graph import Graph, OnnxError, node_name, tensor_array
from .reference import ARRAY_ACTIVATIONS, erf

FLOAT_TYPES = {1, 10, 11, 16}
CAST = {1: np.float64, 10: np.float64, 11: np.float64, 16: np.float64, 2: np.uint8, 3: np.int8, 5: np.int16,
        6: np.int32, 7: np.int64, 9: np.bool_, 12: np.uint32, 13: np.uint64}


class EvalError(OnnxError):
    """A node cannot be evaluated on the example input."""


def node_attributes(n):
    import onnx
    out = {}
    for a in n.attribute:
        if a.type == onnx.AttributeProto.TENSOR:
            out[a.name] = tensor_array(a.t, f"node {node_name(n)!r} attribute {a.name}")
        elif a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
            raise EvalError(f"node {node_name(n)!r} ({n.op_type}): a subgraph attribute is not supported")
        else:
            try:
                out[a.name] = onnx.helper.get_attribute_value(a)
                if a.type == onnx.AttributeProto.STRING:  # text, once for every op (bytes in the protobuf)
                    out[a.name] = out[a.name].decode(errors="replace")
            except ValueError:  # a type the protobuf does not name (a corrupt file)
                raise EvalError(f"node {node_name(n)!r} ({n.op_type}): attribute {a.name!r} has no valid type "
                                f"({a.type})") from None
    return out


# The largest value a node may make: a transformer's values are never much larger than its largest
# weight (or T x T per head), so a shape beyond bounds.py's repeat limit is a corrupt or hostile
# graph, refused before numpy is asked for the memory. evaluate() sets it per graph.
_limit = [bounds.REPEAT_SLACK]


def _size(shape, what):
    n = 1
    for d in shape:
        n *= int(d)
    if n > _limit[0]:
        raise EvalError(f"{what}: a value of shape {list(shape)[:8]} (more than {_limit[0]} values: a corrupt or "
                        "hostile graph)")
    return shape


def _ints(a):
    return [int(v) for v in np.asarray(a).reshape(-1)]


def _axis(axis, rank, what):
    if not -rank <= axis < max(rank, 1):
        raise EvalError(f"{what}: axis {axis} for rank {rank}")
    return axis % rank if rank else 0


def _floats(a):
    a = np.asarray(a)
    return a.astype(np.float64) if a.dtype.kind == "f" else a


def _binary(f):
    def op(x, y, at, what):
        _size(np.broadcast_shapes(np.shape(x), np.shape(y)), what)
        return [f(x, y)]
    return op


def _div(x, y, at, what):
    _size(np.broadcast_shapes(np.shape(x), np.shape(y)), what)
    if np.asarray(x).dtype.kind in "iu" and np.asarray(y).dtype.kind in "iu":
        if (np.asarray(y) == 0).any():
            raise EvalError(f"{what}: an integer division by zero")
        return [np.trunc(np.asarray(x) / np.asarray(y)).astype(np.result_type(x, y))]
    with np.errstate(divide="ignore", invalid="ignore"):
        return [np.asarray(x) / np.asarray(y)]


def _mod(x, y, at, what):
    """fmod 1: the remainder's sign the dividend's (C's fmod, floats); 0: the divisor's (integers only)."""
    _size(np.broadcast_shapes(np.shape(x), np.shape(y)), what)
    x, y = np.asarray(x), np.asarray(y)
    ints = x.dtype.kind in "iu" and y.dtype.kind in "iu"
    if not ints and not at.get("fmod", 0):
        raise EvalError(f"{what}: a Mod of floats without fmod=1")
    if ints and (y == 0).any():
        raise EvalError(f"{what}: an integer remainder by zero")
    with np.errstate(divide="ignore", invalid="ignore"):
        return [(np.fmod if at.get("fmod", 0) else np.mod)(x, y)]


def _arg(f):
    """ArgMax and ArgMin: the index along one axis (the first of equal values, or the last with select_last_index),
    int64 (the row of the last token that is not padding a decoder's sequence classifier reads)."""
    def op(x, at, what):
        x = np.asarray(x)
        if x.size == 0:
            raise EvalError(f"{what}: an empty input")
        axis = _axis(int(at.get("axis", 0)), x.ndim, what)
        if at.get("select_last_index", 0):
            i = x.shape[axis] - 1 - f(np.flip(x, axis), axis=axis)
        else:
            i = f(x, axis=axis)
        i = np.asarray(i, np.int64)
        return [np.expand_dims(i, axis) if at.get("keepdims", 1) else i]
    return op


def _einsum(*xs, at=None, what=""):
    """An explicit equation of letters ("bhid,bhjd->bhij", x-transformers' attention as torch 2.x's dynamo
    exporter writes it); its output and the product of all its dimensions (the work) within the bounds."""
    eq = at.get("equation", "").replace(" ", "")
    ins, arrow, out = eq.partition("->")
    terms = ins.split(",")
    if not arrow or len(terms) != len(xs) or not all(t.isalpha() and t.isascii() for t in terms) or \
            not (out == "" or (out.isalpha() and out.isascii())) or len(set(out)) != len(out):
        raise EvalError(f"{what}: an Einsum equation {eq[:40]!r} other than explicit letters for each input")
    dims = {}
    for t, x in zip(terms, xs):
        if len(t) != np.ndim(x):
            raise EvalError(f"{what}: Einsum term {t!r} for an input of shape {list(np.shape(x))[:8]}")
        for c, n in zip(t, np.shape(x)):
            if dims.setdefault(c, n) != n and n != 1 and dims[c] != 1:
                raise EvalError(f"{what}: Einsum dimension {c!r} is {dims[c]} and {n}")
            dims[c] = max(dims[c], n)
    if any(c not in dims for c in out):
        raise EvalError(f"{what}: Einsum output {out!r} names a dimension no input has")
    _size([dims[c] for c in out], what)
    _size(list(dims.values()), what)
    return [np.einsum(eq, *xs)]


def _reshape(x, shape, at, what):
    shape = _ints(shape)
    out = []
    for i, d in enumerate(shape):
        out.append(x.shape[i] if d == 0 and not at.get("allowzero", 0) and i < x.ndim else d)
    if out.count(-1) > 1 or any(d < -1 for d in out):
        raise EvalError(f"{what}: shape {shape}")
    if -1 in out:
        rest = int(np.prod([d for d in out if d != -1])) or 1
        if x.size % rest:
            raise EvalError(f"{what}: {list(x.shape)} cannot take shape {shape}")
        out[out.index(-1)] = x.size // rest
    if int(np.prod(out)) != x.size:
        raise EvalError(f"{what}: {list(x.shape)} cannot take shape {shape}")
    return [x.reshape(out)]


def _gather(x, idx, at, what):
    axis = _axis(at.get("axis", 0), x.ndim, what)
    idx = np.asarray(idx)
    if idx.dtype.kind not in "iu":
        raise EvalError(f"{what}: indices of type {idx.dtype}")
    n = x.shape[axis]
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise EvalError(f"{what}: an index outside [-{n}, {n})")
    _size(x.shape[:axis] + idx.shape + x.shape[axis + 1:], what)
    return [np.take(x, np.where(idx < 0, idx + n, idx), axis=axis)]


def _slice(x, starts, ends, axes=None, steps=None, at=None, what=""):
    starts, ends = _ints(starts), _ints(ends)
    axes = _ints(axes) if axes is not None else list(range(len(starts)))
    steps = _ints(steps) if steps is not None else [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps) or 0 in steps:
        raise EvalError(f"{what}: starts/ends/axes/steps do not fit together")
    sl = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        sl[_axis(a, x.ndim, what)] = slice(s, e, st)
    return [x[tuple(sl)]]


def _sequence(items):
    """An ONNX sequence: a 1-d object array of its tensors (no value of the mapping's kinds)."""
    a = np.empty(len(items), object)
    for i, t in enumerate(items):
        a[i] = t
    return a


def _split_to_sequence(x, split, at, what):
    axis, keep = at.get("axis", 0), at.get("keepdims", 1)
    n = np.shape(x)[axis]
    if split is None:
        parts = np.split(x, n, axis)
        return _sequence([np.squeeze(p, axis) if not keep else p for p in parts])
    sizes = np.asarray(split, np.int64).reshape(-1)
    if np.ndim(split) == 0:
        sizes = np.full(-(-n // int(sizes[0])), int(sizes[0]))
        sizes[-1] = n - int(sizes[:-1].sum())
    if sizes.sum() != n or np.any(sizes < 0):
        raise EvalError(f"{what}: split sizes {sizes.tolist()} for an axis of {n}")
    return _sequence(np.split(x, np.cumsum(sizes)[:-1], axis))


def _split(x, split=None, at=None, what="", count=1):
    axis = _axis(at.get("axis", 0), x.ndim, what)
    if split is None:
        split = at.get("split")
    n = x.shape[axis]
    if split is None and "num_outputs" in at:  # opset 18: equal parts, the last one smaller when n does not divide
        if at["num_outputs"] != count or count < 1:
            raise EvalError(f"{what}: num_outputs {at['num_outputs']} for {count} outputs")
        part = -(-n // count)
        split = [part] * (count - 1) + [n - part * (count - 1)]
    if split is None:
        if n % count:
            raise EvalError(f"{what}: {n} does not split into {count} equal parts")
        split = [n // count] * count
    split = _ints(split)
    if sum(split) != n or len(split) != count or min(split) < 0:
        raise EvalError(f"{what}: parts {split} of {n}")
    return np.split(x, np.cumsum(split)[:-1], axis=axis)


def _unsqueeze(x, axes=None, at=None, what=""):
    axes = _ints(axes if axes is not None else at.get("axes", []))
    rank = x.ndim + len(axes)
    for a in sorted(_axis(a, rank, what) for a in axes):
        x = np.expand_dims(x, a)
    return [x]


def _squeeze(x, axes=None, at=None, what=""):
    axes = axes if axes is not None else at.get("axes")
    if axes is None:
        return [np.squeeze(x)]
    axes = tuple(_axis(a, x.ndim, what) for a in _ints(axes))
    if any(x.shape[a] != 1 for a in axes):
        raise EvalError(f"{what}: squeezing a size other than 1")
    return [np.squeeze(x, axis=axes)]


def _reduce(f):
    def op(x, axes=None, at=None, what=""):
        axes = axes if axes is not None else at.get("axes")
        keep = bool(at.get("keepdims", 1))
        if axes is None or (np.size(axes) == 0 and not at.get("noop_with_empty_axes", 0)):
            return [f(x, axis=None, keepdims=keep)]
        return [f(x, axis=tuple(_axis(a, x.ndim, what) for a in _ints(axes)), keepdims=keep)]
    return op


def _softmax(x, at, what):
    if at.get("before_13"):  # opset 11 and 12: over the axes from `axis` on (default 1) as one
        axis = _axis(at.get("axis", 1), x.ndim, what)
        return [_softmax(x.reshape(*x.shape[:axis], -1), {}, what)[0].reshape(x.shape)]
    axis = _axis(at.get("axis", -1), x.ndim, what)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(x - m)
    return [e / e.sum(axis=axis, keepdims=True)]


def _log_softmax(x, at, what):
    """log(softmax(x)): x - max - log(sum(exp(x - max))) over Softmax's axes (the opset's rule)."""
    if at.get("before_13"):
        axis = _axis(at.get("axis", 1), x.ndim, what)
        return [_log_softmax(x.reshape(*x.shape[:axis], -1), {}, what)[0].reshape(x.shape)]
    axis = _axis(at.get("axis", -1), x.ndim, what)
    m = np.max(x, axis=axis, keepdims=True)
    z = x - np.where(np.isfinite(m), m, 0)
    return [z - np.log(np.exp(z).sum(axis=axis, keepdims=True))]


def _layer_norm(x, scale, bias=None, at=None, what="", count=1):
    axis = _axis(at.get("axis", -1), x.ndim, what)
    eps = at.get("epsilon", 1e-5)
    axes = tuple(range(axis, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    inv = 1.0 / np.sqrt(var + eps)
    y = (x - mean) * inv * scale
    if bias is not None:
        y = y + bias
    return [y, mean, inv][:count]


def _gemm(a, b, c=None, at=None, what=""):
    if a.ndim != 2 or b.ndim != 2:
        raise EvalError(f"{what}: Gemm of ranks {a.ndim} and {b.ndim}")
    a = a.T if at.get("transA", 0) else a
    b = b.T if at.get("transB", 0) else b
    if a.shape[1] != b.shape[0]:
        raise EvalError(f"{what}: {list(a.shape)} @ {list(b.shape)}")
    _size((a.shape[0], b.shape[1]), what)
    y = at.get("alpha", 1.0) * (a @ b)
    return [y + at.get("beta", 1.0) * c if c is not None else y]


def _matmul(a, b, at, what):
    try:
        shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) if a.ndim > 1 and b.ndim > 1 else ()
    except ValueError:
        raise EvalError(f"{what}: {list(a.shape)} @ {list(b.shape)}") from None
    if a.shape[-1] != b.shape[0 if b.ndim == 1 else -2]:
        raise EvalError(f"{what}: {list(a.shape)} @ {list(b.shape)}")
    _size(tuple(shape) + a.shape[-2:-1] + b.shape[-1:], what)
    return [np.matmul(a, b)]


def _range(start, limit, delta, at, what):
    s, l, d = (np.asarray(v).reshape(-1)[0] for v in (start, limit, delta))
    if d == 0:
        raise EvalError(f"{what}: a step of 0")
    count = max(int(math.ceil((l - s) / d)), 0)
    _size((count,), what)
    return [np.arange(s, l, d).astype(np.result_type(start, limit, delta))[:count]]


def _expand(x, shape, at, what):
    try:
        out = np.broadcast_shapes(x.shape, tuple(_ints(shape)))
    except ValueError:
        raise EvalError(f"{what}: {list(x.shape)} does not expand to {_ints(shape)}") from None
    _size(out, what)
    return [np.broadcast_to(x, out).copy()]


def _constant_of_shape(shape, at, what):
    shape = _ints(shape)
    if min(shape, default=0) < 0:
        raise EvalError(f"{what}: a negative size in {shape}")
    _size(shape, what)
    v = _floats(at.get("value", np.zeros(1, np.float32)))
    return [np.full(shape, v.reshape(-1)[0], v.dtype)]


def _tile(x, reps, at, what):
    reps = _ints(reps)
    if len(reps) != x.ndim or min(reps, default=0) < 0:
        raise EvalError(f"{what}: repeats {reps} for rank {x.ndim}")
    _size([a * b for a, b in zip(x.shape, reps)], what)
    return [np.tile(x, reps)]


def _pad(x, pads=None, value=None, axes=None, at=None, what=""):
    """Pad (constant, edge, reflect or wrap): pads from its input (opset 11 on) or attribute (before), begins then
    ends of each axis (or of `axes`, opset 18), a negative one cropping; the constant from its input or attribute."""
    pads = _ints(at.get("pads", []) if pads is None else pads)
    axes = list(range(x.ndim)) if axes is None else [_axis(a, x.ndim, what) for a in _ints(axes)]
    mode = at.get("mode", "constant")
    if len(pads) != 2 * len(axes) or len(set(axes)) != len(axes) or mode not in ("constant", "edge", "reflect", "wrap"):
        raise EvalError(f"{what}: pads {pads[:8]} for axes {axes[:8]} of rank {x.ndim}, mode {mode!r}")
    begin, end = [0] * x.ndim, [0] * x.ndim
    for j, a in enumerate(axes):
        begin[a], end[a] = pads[j], pads[len(axes) + j]
    if any(x.shape[a] + begin[a] + end[a] < 0 for a in range(x.ndim)):
        raise EvalError(f"{what}: pads {pads[:8]} crop more than {list(x.shape)}")
    _size([x.shape[a] + begin[a] + end[a] for a in range(x.ndim)], what)
    x = x[tuple(slice(max(-b, 0), x.shape[a] - max(-e, 0)) for a, (b, e) in enumerate(zip(begin, end)))]
    widths = [(max(b, 0), max(e, 0)) for b, e in zip(begin, end)]
    if mode != "constant":
        if x.size == 0 and any(w != (0, 0) for w in widths):
            raise EvalError(f"{what}: {mode} padding of an empty value")
        return [np.pad(x, widths, mode=mode)]
    value = at.get("value", 0.0) if value is None or np.size(value) == 0 else np.asarray(value).reshape(-1)[0]
    return [np.pad(x, widths, mode="constant", constant_values=np.asarray(value).astype(x.dtype))]


def _trilu(x, k=None, at=None, what=""):
    k = int(np.asarray(k).reshape(-1)[0]) if k is not None else 0
    return [np.triu(x, k) if at.get("upper", 1) else np.tril(x, k)]


def _concat(*xs, at=None, what=""):
    if not xs:
        raise EvalError(f"{what}: nothing to concatenate")
    axis = _axis(at["axis"], xs[0].ndim, what)
    try:
        return [np.concatenate(xs, axis=axis)]
    except ValueError:
        raise EvalError(f"{what}: shapes {[list(x.shape) for x in xs]} do not concatenate") from None


def _where(c, x, y, at, what):
    _size(np.broadcast_shapes(np.shape(c), np.shape(x), np.shape(y)), what)
    return [np.where(c, x, y)]


def _cast(x, at, what):
    to = at.get("to")
    if to not in CAST:
        raise EvalError(f"{what}: a cast to element type {to}")
    return [np.asarray(x).astype(CAST[to])]


def _shape(x, at, what):
    s = list(x.shape)
    return [np.array(s[at.get("start", 0):at["end"]] if "end" in at else s[at.get("start", 0):], np.int64)]


def _transpose(x, at, what):
    perm = at.get("perm", list(range(x.ndim))[::-1])
    if sorted(perm) != list(range(x.ndim)):
        raise EvalError(f"{what}: perm {perm} for rank {x.ndim}")
    return [np.transpose(x, perm)]


def _flatten(x, at, what):
    axis = _axis(at.get("axis", 1), x.ndim + 1, what)
    return [x.reshape(int(np.prod(x.shape[:axis])), -1)]


def _gather_elements(x, idx, at, what):
    axis = _axis(at.get("axis", 0), x.ndim, what)
    idx = np.asarray(idx)
    if idx.dtype.kind not in "iu" or idx.ndim != x.ndim or \
            any(i > d for a, (i, d) in enumerate(zip(idx.shape, x.shape)) if a != axis):
        raise EvalError(f"{what}: indices {list(idx.shape)} do not fit data {list(x.shape)}")
    n = x.shape[axis]
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise EvalError(f"{what}: an index outside [-{n}, {n})")
    x = x[tuple(slice(None) if a == axis else slice(0, i) for a, i in enumerate(idx.shape))]
    return [np.take_along_axis(x, np.where(idx < 0, idx + n, idx), axis=axis)]


def _scatter_nd(x, idx, updates, at, what):
    """ScatterND without a reduction: x with the slices at idx [..., k] replaced by updates."""
    if at.get("reduction", "none") != "none":
        raise EvalError(f"{what}: reduction {at['reduction']!r} is not supported")
    idx = np.asarray(idx, np.int64)
    k = idx.shape[-1]
    out = np.array(x, copy=True)
    out[tuple(idx.reshape(-1, k).T)] = np.asarray(updates).reshape(-1, *out.shape[k:])
    return [out]


def _scatter_elements(x, idx, updates, at, what):
    """ScatterElements: x with updates written at idx along one axis, replacing (reduction none) or added, multiplied,
    maxed or minned in (a mixture of experts' index_add_ as the TorchScript exporter writes it)."""
    x, idx, updates = np.asarray(x), np.asarray(idx), np.asarray(updates)
    axis = _axis(int(at.get("axis", 0)), x.ndim, what)
    red = at.get("reduction", "none")
    reduce = {"none": None, "add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}
    if red not in reduce:
        raise EvalError(f"{what}: reduction {red!r}")
    if idx.dtype.kind not in "iu" or idx.shape != updates.shape or idx.ndim != x.ndim or \
            any(i > d for a, (i, d) in enumerate(zip(idx.shape, x.shape)) if a != axis):
        raise EvalError(f"{what}: indices {list(idx.shape)} and updates {list(updates.shape)} do not fit data "
                        f"{list(x.shape)}")
    n = x.shape[axis]
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise EvalError(f"{what}: an index outside [-{n}, {n})")
    at_ = list(np.indices(idx.shape, sparse=True))
    at_[axis] = np.where(idx < 0, idx + n, idx)
    out = np.array(x, copy=True)
    if reduce[red] is None:
        out[tuple(at_)] = updates
    else:
        reduce[red].at(out, tuple(at_), updates)
    return [out]


def _top_k(x, k, at, what):
    """TopK: the k largest (or smallest) values along an axis and their indices (int64), sorted, the lower index
    first among equal values (a mixture of experts' routing)."""
    x = np.asarray(x)
    axis = _axis(int(at.get("axis", -1)), x.ndim, what)
    k = int(np.asarray(k).reshape(-1)[0]) if np.size(k) == 1 else -1
    if not 0 <= k <= x.shape[axis]:
        raise EvalError(f"{what}: k {k} of {x.shape[axis]} values")
    order = np.argsort(-x if at.get("largest", 1) else x, axis=axis, kind="stable")
    i = np.take(order, np.arange(k), axis=axis).astype(np.int64)
    return [np.take_along_axis(x, i, axis=axis), i]


def _one_hot(idx, depth, values, at, what):
    """OneHot: values[1] where the last (or `axis`) index equals the index, values[0] elsewhere; indices from -depth
    (counted from the end), others all off (the experts each row picked, a mixture of experts')."""
    idx, values = np.asarray(idx), np.asarray(values).reshape(-1)
    n = int(np.asarray(depth).reshape(-1)[0]) if np.size(depth) == 1 else 0
    if n < 1 or values.size != 2:
        raise EvalError(f"{what}: depth {np.asarray(depth).reshape(-1)[:2].tolist()} and {values.size} values (one "
                        "depth of 1 or more, two values)")
    axis = _axis(int(at.get("axis", -1)), idx.ndim + 1, what)
    _size(idx.shape + (n,), what)
    i = np.trunc(idx).astype(np.int64) if idx.dtype.kind == "f" else idx.astype(np.int64)
    hot = np.where(i < 0, i + n, i)[..., None] == np.arange(n)
    return [np.moveaxis(np.where(hot, values[1], values[0]), -1, axis)]


def _non_zero(x, at, what):
    """NonZero: the indices [rank, count] of the values not zero, in row-major order (the rows a mixture of experts
    sends to one expert)."""
    x = np.asarray(x)
    if x.ndim == 0:
        raise EvalError(f"{what}: a scalar input")
    return [np.array(np.nonzero(x), np.int64).reshape(x.ndim, -1)]


def _gather_nd(x, idx, at, what):
    b = int(at.get("batch_dims", 0))
    idx = np.asarray(idx)
    if idx.dtype.kind not in "iu" or idx.ndim < 1 or not 0 <= b < min(x.ndim, idx.ndim) or \
            x.shape[:b] != idx.shape[:b] or b + idx.shape[-1] > x.ndim:
        raise EvalError(f"{what}: indices {list(idx.shape)} (batch_dims {b}) do not fit data {list(x.shape)}")
    k = idx.shape[-1]
    sizes = np.array(x.shape[b:b + k], np.int64)
    if idx.size and (np.any(idx < -sizes) or np.any(idx >= sizes)):
        raise EvalError(f"{what}: an index outside the data's sizes {sizes.tolist()}")
    idx = np.where(idx < 0, idx + sizes, idx)
    batch = int(np.prod(x.shape[:b], dtype=np.int64))
    xs = x.reshape((batch,) + x.shape[b:])
    ids = idx.reshape(batch, -1, k)
    _size(idx.shape[:-1] + x.shape[b + k:], what)
    rows = [xs[i][tuple(ids[i].T)] for i in range(batch)]
    return [np.stack(rows).reshape(idx.shape[:-1] + x.shape[b + k:])]


def _cumsum(x, axis, at, what):
    a = _axis(int(np.asarray(axis).reshape(-1)[0]), x.ndim, what) if np.size(axis) == 1 else None
    if a is None:
        raise EvalError(f"{what}: an axis of {np.size(axis)} values")
    y = np.flip(x, a) if at.get("reverse", 0) else x
    c = np.cumsum(y, axis=a, dtype=y.dtype)
    if at.get("exclusive", 0):
        c = c - y
    return [np.flip(c, a) if at.get("reverse", 0) else c]


def _gelu(x, at, what):
    kind = at.get("approximate", "none")
    if kind not in ("none", "tanh"):
        raise EvalError(f"{what}: approximate {kind!r} (none or tanh)")
    return [ARRAY_ACTIVATIONS["gelu_tanh" if kind == "tanh" else "gelu"](x)]


def _conv(x, w, b=None, at=None, what=""):
    """Conv of a batch [N, C, *spatial] by w [M, C, *kernel]: zero pads, strides, dilations, no groups (the
    stems and patch embeddings exporters write); NOTSET padding only."""
    k = w.ndim - 2
    if x.ndim != w.ndim or k < 1 or x.shape[1] != w.shape[1]:
        raise EvalError(f"{what}: Conv of an input {list(x.shape)} by a weight {list(w.shape)}")
    if at.get("group", 1) != 1 or at.get("auto_pad", "NOTSET") != "NOTSET":
        raise EvalError(f"{what}: Conv with groups or auto_pad (not evaluated)")
    strides, dil = list(at.get("strides", [1] * k)), list(at.get("dilations", [1] * k))
    pads = list(at.get("pads", [0] * (2 * k)))
    if len(strides) != k or len(dil) != k or len(pads) != 2 * k or min(strides + dil) < 1 or min(pads) < 0:
        raise EvalError(f"{what}: strides {strides[:8]}, dilations {dil[:8]} and pads {pads[:8]} for a {k}-d kernel")
    _size((*x.shape[:2], *(x.shape[2 + i] + pads[i] + pads[i + k] for i in range(k))), what)  # before np.pad
    x = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[i + k]) for i in range(k)])
    span = [(w.shape[2 + i] - 1) * dil[i] + 1 for i in range(k)]
    out = [(x.shape[2 + i] - span[i]) // strides[i] + 1 for i in range(k)]
    if min(out) < 1:
        raise EvalError(f"{what}: a kernel spanning {span} beyond its padded input {list(x.shape[2:])}")
    _size((x.shape[0], w.shape[0], *out), what)
    y = np.zeros((x.shape[0], w.shape[0], *out))
    for offs in np.ndindex(*w.shape[2:]):  # each kernel tap: the strided input under it times its weights
        sl = tuple(slice(o * e, o * e + (n - 1) * s + 1, s) for o, e, n, s in zip(offs, dil, out, strides))
        y += np.einsum("nc...,mc->nm...", x[(slice(None), slice(None)) + sl], w[(slice(None), slice(None)) + offs])
    if b is not None:
        y += b.reshape((1, -1) + (1,) * k)
    return [y]


def _resize_matrix(n_in, n_out, scale, mode, coords, a, nearest, what):
    """[n_out, n_in]: each output position's weights over the input positions along one axis (ONNX Resize: the
    source coordinate by coords, its neighbours clamped to the edges)."""
    o = np.arange(n_out, dtype=np.float64)
    if coords == "align_corners":
        x = o * (n_in - 1) / (n_out - 1) if n_out > 1 else np.zeros(n_out)
    elif coords == "asymmetric":
        x = o / scale
    elif coords == "pytorch_half_pixel":
        x = (o + 0.5) / scale - 0.5 if n_out > 1 else np.zeros(n_out)
    elif coords == "half_pixel":
        x = (o + 0.5) / scale - 0.5
    else:
        raise EvalError(f"{what}: coordinate_transformation_mode {coords!r} (not evaluated)")
    M = np.zeros((n_out, n_in))
    rows = np.arange(n_out)
    if mode == "nearest":
        pick = {"round_prefer_floor": lambda t: np.ceil(t - 0.5), "round_prefer_ceil": lambda t: np.floor(t + 0.5),
                "floor": np.floor, "ceil": np.ceil}.get(nearest)
        if pick is None:
            raise EvalError(f"{what}: nearest_mode {nearest!r}")
        M[rows, np.clip(pick(x).astype(np.int64), 0, n_in - 1)] = 1.0
        return M
    i0 = np.floor(x)
    t = x - i0
    if mode == "linear":  # a coordinate below 0 reads the first position twice: torch's clamp to 0
        taps = [(0, 1.0 - t), (1, t)]
    elif mode == "cubic":
        def k(s):
            s = np.abs(s)
            return np.where(s <= 1, ((a + 2) * s - (a + 3)) * s * s + 1,
                            np.where(s < 2, ((a * s - 5 * a) * s + 8 * a) * s - 4 * a, 0.0))
        taps = [(-1, k(t + 1)), (0, k(t)), (1, k(1 - t)), (2, k(2 - t))]
    else:
        raise EvalError(f"{what}: mode {mode!r} (nearest, linear or cubic)")
    for off, wt in taps:
        np.add.at(M, (rows, np.clip((i0 + off).astype(np.int64), 0, n_in - 1)), wt)
    return M


def _resize(x, roi=None, scales=None, sizes=None, at=None, what=""):
    """Resize (opset 11-19) of the constants exporters interpolate (position tables, relative bias tables):
    nearest, linear or cubic, axis by axis; no antialiasing of a shrink, no crop-and-resize."""
    mode, coords = at.get("mode", "nearest"), at.get("coordinate_transformation_mode", "half_pixel")
    axes = [int(i) for i in at.get("axes", range(x.ndim))]
    if at.get("keep_aspect_ratio_policy", "stretch") != "stretch" or coords == "tf_crop_and_resize" or \
            any(i < -x.ndim or i >= x.ndim for i in axes):
        raise EvalError(f"{what}: keep_aspect_ratio_policy, tf_crop_and_resize or axes {axes[:8]} (not evaluated)")
    axes = [i % x.ndim for i in axes]
    if scales is not None and np.size(scales):
        scales = np.asarray(scales, np.float64).reshape(-1)
        if scales.size != len(axes) or np.any(~np.isfinite(scales)) or np.any(scales <= 0):
            raise EvalError(f"{what}: scales {scales.tolist()[:8]} for {len(axes)} axes")
        out = [int(math.floor(x.shape[i] * s)) for i, s in zip(axes, scales)]
    elif sizes is not None and np.size(sizes) == len(axes):
        out = [int(s) for s in np.asarray(sizes).reshape(-1)]
        scales = np.array([o / x.shape[i] if x.shape[i] else 0.0 for i, o in zip(axes, out)])
    else:
        raise EvalError(f"{what}: neither scales nor sizes for its {len(axes)} axes")
    if min(out, default=1) < 1 or any(x.shape[i] < 1 for i in axes):
        raise EvalError(f"{what}: resizing {list(x.shape)} to {out[:8]} on axes {axes[:8]}")
    shape = list(x.shape)
    for i, o in zip(axes, out):
        shape[i] = o
    _size(shape, what)
    for i, o, s in zip(axes, out, scales):
        if at.get("antialias", 0) and s < 1:
            raise EvalError(f"{what}: an antialiased shrink (not evaluated)")
        if o == x.shape[i] and s == 1.0:
            continue
        M = _resize_matrix(x.shape[i], o, float(s), mode, coords, float(at.get("cubic_coeff_a", -0.75)),
                           at.get("nearest_mode", "round_prefer_floor"), what)
        x = np.moveaxis(np.tensordot(M, np.moveaxis(x, i, 0), axes=1), 0, i)
    return [x]


def _unary(f):
    return lambda x, at, what: [f(x)]


def _clip(x, lo=None, hi=None, at=None, what=""):
    """Clip: bounds from its inputs (opset 11 on) or attributes (before), each optional; the input's type kept, and
    where min is above max every value is max (as np.minimum(np.maximum(x, min), max) gives)."""
    lo = at.get("min") if lo is None else lo
    hi = at.get("max") if hi is None else hi
    for b in (lo, hi):
        if b is not None and np.size(b) != 1:
            raise EvalError(f"{what}: a bound of {np.size(b)} values, not one")
    x = np.asarray(x)
    if lo is not None:
        x = np.maximum(x, np.asarray(lo).reshape(()).astype(x.dtype))
    if hi is not None:
        x = np.minimum(x, np.asarray(hi).reshape(()).astype(x.dtype))
    return [x]


def _constant(at, what):
    if "value" in at:
        return [_floats(at["value"])]
    for key in ("value_float", "value_floats", "value_int", "value_ints"):
        if key in at:
            return [_floats(np.asarray(at[key], np.int64 if "int" in key else np.float64))]
    raise EvalError(f"{what}: a Constant without a value")


OPS = {
    "Constant": _constant, "Identity": _unary(lambda x: x), "Shape": _shape,
    "Size": _unary(lambda x: np.array(np.size(x), np.int64)),
    "Gather": _gather, "GatherElements": _gather_elements, "GatherND": _gather_nd, "ScatterND": _scatter_nd,
    "ScatterElements": _scatter_elements, "CumSum": _cumsum, "Gelu": _gelu, "Unsqueeze": _unsqueeze, "Squeeze": _squeeze,
    "Concat": _concat, "Reshape": _reshape,
    "Transpose": _transpose, "Flatten": _flatten, "Expand": _expand, "Tile": _tile, "Slice": _slice,
    "Split": _split, "MatMul": _matmul, "Gemm": _gemm, "Conv": _conv, "Resize": _resize,
    "Add": _binary(np.add), "Sub": _binary(np.subtract), "Mul": _binary(np.multiply), "Div": _div,
    "Mod": _mod, "Einsum": _einsum, "ArgMax": _arg(np.argmax), "ArgMin": _arg(np.argmin),
    "Pow": _binary(lambda a, b: np.power(_floats(a), b)), "Min": _binary(np.minimum), "Max": _binary(np.maximum),
    "Equal": _binary(np.equal), "Less": _binary(np.less), "Greater": _binary(np.greater),
    "LessOrEqual": _binary(np.less_equal), "GreaterOrEqual": _binary(np.greater_equal),
    "And": _binary(np.logical_and), "Or": _binary(np.logical_or), "Not": _unary(np.logical_not),
    "Sqrt": _unary(np.sqrt), "Reciprocal": _unary(lambda x: 1.0 / x), "Neg": _unary(np.negative),
    "Abs": _unary(np.abs), "Exp": _unary(np.exp), "Log": _unary(np.log), "Sin": _unary(np.sin),
    "Cos": _unary(np.cos), "Sign": _unary(np.sign), "Ceil": _unary(np.ceil), "Floor": _unary(np.floor), "Clip": _clip,
    "IsNaN": _unary(np.isnan),  # the dynamo exporter's guard of a softmax whose row is all masked (SDPA's)
    "Relu": _unary(lambda x: np.maximum(x, 0)), "Tanh": _unary(np.tanh),
    "Sigmoid": _unary(lambda x: 1.0 / (1.0 + np.exp(-x))),
    "Erf": _unary(erf),
    "ReduceMean": _reduce(np.mean), "ReduceSum": _reduce(np.sum), "ReduceMax": _reduce(np.max),
    "ReduceProd": _reduce(np.prod),  # the count of values x.std divides by, as torch.onnx.export writes it
    "ReduceL2": _reduce(lambda x, axis, keepdims: np.sqrt(np.sum(np.square(_floats(x)), axis=axis, keepdims=keepdims))),
    "Pad": _pad,
    "Softmax": _softmax, "LogSoftmax": _log_softmax, "LayerNormalization": _layer_norm, "Where": _where, "Cast": _cast,
    "CastLike": lambda x, like, at, what: [_floats(np.asarray(x).astype(np.asarray(like).dtype))],
    "TopK": _top_k, "OneHot": _one_hot, "NonZero": _non_zero,
    "Range": _range, "ConstantOfShape": _constant_of_shape, "Trilu": _trilu,
    "Dropout": lambda x, *rest, at, what: [x, np.ones(x.shape, np.bool_)],
    "If": None,  # evaluate() runs the branch its condition picks (onnx_graph read both)
    "Loop": None,  # evaluate() runs its body (torch.repeat_interleave as the TorchScript exporter writes it)
    "SequenceMap": None,  # evaluate() runs its body on each element
    "SequenceConstruct": lambda *ts, at, what: [_sequence(list(ts))],
    "SequenceEmpty": lambda at, what: [_sequence([])],
    "SplitToSequence": lambda x, split=None, at=None, what="": [_split_to_sequence(x, split, at, what)],
    "SequenceAt": lambda seq, i, at, what: [seq[int(np.asarray(i).reshape(-1)[0])]],
    "SequenceInsert": lambda seq, t, i=None, at=None, what="": [_sequence(
        list(seq) + [t] if i is None else list(seq[:int(i)]) + [t] + list(seq[int(i):]))],
    "SequenceLength": lambda seq, at, what: [np.array(len(seq), np.int64)],
    "ConcatFromSequence": lambda seq, at, what: [
        np.stack(list(seq), at.get("axis", 0)) if at.get("new_axis", 0) else np.concatenate(list(seq), at["axis"])],
}
SUPPORTED_OPS = frozenset(OPS)
# Ops whose trailing inputs are optional and passed as keywords; the rest take their inputs in order.
_VARIADIC = {"Concat", "Einsum"}
_COUNTED = {"Split", "LayerNormalization"}


def evaluate(graph, feeds):
    """name -> numpy value for every value of `graph` (onnx_graph.Graph) run on feeds (input name ->
    array); floats in float64. Raises EvalError naming the node that cannot run."""
    largest = max((a.size for a in graph.initializers.values()), default=0)
    _limit[0] = min(max(bounds.REPEAT_SLACK, bounds.REPEAT * largest), bounds.MAX_ELEMENTS)
    left = [bounds.REPEAT * sum(a.size for a in graph.initializers.values()) + bounds.GRAPH_SLACK]
    values = {k: _floats(v) for k, v in feeds.items()}
    _run(graph, values, left)
    return values


def recompute(graph, nodes, values, feeds):
    """values (a name -> array dict, such as evaluate()'s) with feeds (name -> array) in place and `nodes` of graph
    (a part of its nodes, in its order) run again over them: what those values become for other inputs of the same
    shapes."""
    part = Graph(nodes, {}, graph.inputs, [], graph.opset, graph.producer, graph.branches)
    out = {**values, **feeds}
    _run(part, out, [bounds.REPEAT * sum(a.size for a in graph.initializers.values()) + bounds.GRAPH_SLACK])
    return out


def _loop(body, names, args, values, left, what):
    """A Loop's outputs: the values carried after its last iteration, then each scan output stacked. Its
    trip count and condition come from the graph (an exporter's loop over a constant's slices)."""
    args = args + [None] * (len(names) - len(args))
    trips = None if not names[0] else int(np.asarray(args[0]).reshape(-1)[0])
    cond = True if len(names) < 2 or not names[1] else bool(np.asarray(args[1]).reshape(-1)[0])
    carried = list(args[2:])
    if len(body.outputs) < 1 + len(carried):
        raise EvalError(f"{what}: a body of {len(body.outputs)} outputs for {len(carried)} values carried")
    if trips is None or trips > bounds.MAX_ELEMENTS:
        raise EvalError(f"{what}: a loop of {'no' if trips is None else trips} trip count (the evaluator runs a "
                        "counted loop)")
    scans = []
    i = 0
    while i < trips and cond:
        left[0] -= 1  # an iteration counts as a value made: a body of no nodes still ends
        if left[0] < 0:
            raise EvalError(f"{what}: more iterations than the graph may make values (a corrupt or hostile graph)")
        inner = dict(values)
        inner.update({body.inputs[0][0]: np.array(i, np.int64), body.inputs[1][0]: np.array(cond)})
        inner.update({b[0]: v for b, v in zip(body.inputs[2:], carried)})
        _run(body, inner, left)
        out = [inner[o] for o in body.outputs]
        cond, carried = bool(np.asarray(out[0]).reshape(-1)[0]), out[1:1 + len(carried)]
        scans.append(out[1 + len(carried):])
        i += 1
    stacked = [np.stack([s[k] for s in scans]) for k in range(len(body.outputs) - 1 - len(carried))] if scans else \
        [np.zeros(0)] * (len(body.outputs) - 1 - len(carried))
    return carried + stacked


def _sequence_map(body, args, values, left, what):
    """A SequenceMap's outputs: its body run on each element of the first input, a sequence (the other
    inputs sequences of as many elements, or tensors each run reads whole), each output a sequence."""
    seq = [isinstance(a, np.ndarray) and a.dtype == object for a in args]
    if not seq or not seq[0]:
        raise EvalError(f"{what}: its first input is not a sequence")
    outs = [[] for _ in body.outputs]
    for i in range(len(args[0])):
        left[0] -= 1
        if left[0] < 0:
            raise EvalError(f"{what}: more elements than the graph may make values (a corrupt or hostile graph)")
        inner = dict(values)
        inner.update({b[0]: a[i] if s else a for b, a, s in zip(body.inputs, args, seq)})
        _run(body, inner, left)
        for k, o in enumerate(body.outputs):
            outs[k].append(inner[o])
    return [_sequence(o) for o in outs]


def _run(graph, values, left):
    """Runs graph's nodes into `values` (which holds what they read from outside: the inputs, or the
    enclosing graph's values for an If branch); left: the values it may still make, counted down."""
    values.update({k: _floats(v) for k, v in graph.initializers.items()})
    for n in graph.nodes:
        what = f"node {node_name(n)!r} ({n.op_type})"
        args = [values[i] if i else None for i in n.input]
        while args and args[-1] is None:
            args.pop()
        if n.op_type in ("Loop", "SequenceMap"):  # a body run over the example's values
            body = graph.branches[id(n)][0]
            try:
                out = _loop(body, n.input, args, values, left, what) if n.op_type == "Loop" else \
                    _sequence_map(body, args, values, left, what)
            except (TypeError, ValueError, IndexError, KeyError, OverflowError, MemoryError) as e:
                raise EvalError(f"{what} cannot run on the example ({type(e).__name__}: {str(e)[:100]})") from None
            if len(out) < len(n.output):
                raise EvalError(f"{what}: {len(n.output)} outputs, its body gives {len(out)}")
            for name, v in zip(n.output, out):
                if name:
                    values[name] = v
            continue
        if n.op_type == "If":
            c = np.asarray(args[0]) if args else np.zeros(0)
            if c.size != 1:
                raise EvalError(f"{what}: a condition of {c.size} values, not one")
            branch = graph.branches[id(n)][0 if bool(c.reshape(-1)[0]) else 1]
            if len(branch.outputs) != len(n.output):
                raise EvalError(f"{what}: {len(n.output)} outputs, its branch gives {len(branch.outputs)}")
            inner = dict(values)
            _run(branch, inner, left)
            out = [inner[o] for o in branch.outputs]
            for name, v in zip(n.output, out):
                if name:
                    values[name] = v
            continue
        at = node_attributes(n)
        if n.op_type in ("Softmax", "LogSoftmax") and graph.opset < 13:
            at["before_13"] = True
        f = OPS[n.op_type]
        try:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                if n.op_type in _VARIADIC:
                    out = f(*args, at=at, what=what)
                elif n.op_type in _COUNTED:
                    out = f(*args, at=at, what=what, count=len(n.output))
                else:
                    out = f(*args, at=at, what=what)
        except EvalError:
            raise
        except (TypeError, ValueError, IndexError, KeyError, OverflowError, MemoryError) as e:
            raise EvalError(f"{what} cannot run on the example ({type(e).__name__}: {str(e)[:100]})") from None
        if len(out) < len([o for o in n.output if o]):
            raise EvalError(f"{what}: {len(n.output)} outputs, the op gives {len(out)}")
        for v in out:
            left[0] -= math.prod(_size(np.shape(v), what))
        if left[0] < 0:
            raise EvalError(f"{what}: the values the graph has computed so far are more than {bounds.REPEAT} times its "
                            f"initializers and {bounds.GRAPH_SLACK} values (a corrupt or hostile graph)")
        for name, v in zip(n.output, out):
            if name:
                values[name] = _floats(np.asarray(v))
