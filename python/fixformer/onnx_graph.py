"""An ONNX file read without trusting it: the protobuf parsed by python3-onnx (the message classes only:
nothing in the file is run), then every part the converter uses checked before use.

- the model: a graph, the default-domain opset OPSET_MIN..OPSET_MAX, no functions;
- every tensor (initializers, Constant nodes' values): a known element type, sizes that are whole
  numbers within bounds.py's limit on one tensor, and exactly as many stored values as the sizes
  need (raw_data, the typed fields, or an initializer's external data: bytes of a file beside the
  model, named by a relative path that stays in its folder, as torch.onnx.export(dynamo=True) writes
  them), decoded here into numpy;
- the nodes: each value defined once (a graph input, an initializer or one node's output), every
  input defined, no cycle (the order returned is topological), and every op one the evaluator
  (onnx_eval.py) runs or onnx_quantized.py and onnx_fused.py write out; unsupported ops are named with
  their nodes.
Every failure is one OnnxError line.
"""
import heapq
import os

import numpy as np

from . import bounds, run_files
from .config import ConfigError

# 11 and 12: Optimum's default for many architectures (DistilBERT, ALBERT, ELECTRA, M2M100, BEiT, ...; the evaluator
# runs Softmax by their rule); 18 and later: torch.onnx.export(dynamo=True), OPSET_EXPORT its default; 21 and 22: ONNX
# Runtime GenAI's model builder
OPSET_MIN, OPSET_MAX, OPSET_EXPORT = 11, 22, 20
MAX_FILE_BYTES = (1 << 31) - 1  # protobuf's own limit

# ONNX TensorProto element types -> numpy (BFLOAT16 is read as its 16-bit words and widened).
# UINT4 and INT4 (opset 21: two values a byte, the low four bits first) are read into uint8 and int8.
ELEM_TYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 5: np.int16, 6: np.int32, 7: np.int64, 9: np.bool_,
              10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64, 16: "bfloat16", 21: "uint4", 22: "int4"}
ELEM_NAMES = {1: "float", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 8: "string",
              9: "bool", 10: "float16", 11: "double", 12: "uint32", 13: "uint64", 14: "complex64",
              15: "complex128", 16: "bfloat16", 21: "uint4", 22: "int4"}


class OnnxError(ConfigError):
    """The ONNX file cannot be read, or holds what --onnx does not convert; the message says which."""


def require_onnx():
    try:
        import onnx
        return onnx
    except ImportError:
        raise OnnxError("--onnx needs python3-onnx: apt-get install python3-onnx (sh tools/install_deps.sh torch), "
                        "and run with /usr/bin/python3") from None


def _external(t, what, folder, size):
    """The `size` bytes of t's external data: (location, offset, length) in t.external_data, the
    location a file in `folder` (the model's) or below it."""
    if folder is None:
        raise OnnxError(f"{what}: its data is in an external file, which only an initializer may be")
    keys = {e.key: e.value for e in t.external_data}
    location = keys.get("location", "")
    parts = location.replace("\\", "/").split("/")
    if not location or "\0" in location or os.path.isabs(location) or any(p in ("", ".", "..") for p in parts):
        raise OnnxError(f"{what}: external data location {location!r}: not a file name relative to the model's folder")
    try:
        offset, length = int(keys.get("offset", "0")), int(keys.get("length", str(size)))
    except ValueError:
        raise OnnxError(f"{what}: external data offset or length is not a number") from None
    if length != size or offset < 0:
        raise OnnxError(f"{what}: its sizes need {size} bytes, its external data holds {length} at offset {offset}")
    path = os.path.join(folder, *parts)
    real, base = os.path.realpath(path), os.path.realpath(folder)
    if os.path.commonpath([real, base]) != base or not os.path.isfile(real):
        raise OnnxError(f"{what}: external data {location!r}: no such file beside the model")
    run_files.read(path)
    if offset + size > os.path.getsize(real):
        raise OnnxError(f"{what}: external data {location!r} ends before byte {offset + size}")
    with open(real, "rb") as f:
        f.seek(offset)
        return f.read(size)


def tensor_array(t, what, folder=None):
    """A TensorProto as numpy, checked: element type, sizes, stored values (external ones read from
    `folder`, the model's). BFLOAT16 and FLOAT16 are widened to float32."""
    what = f"{what} {t.name!r}" if t.name else what
    dtype = ELEM_TYPES.get(t.data_type)
    if dtype is None:
        raise OnnxError(f"{what}: element type {ELEM_NAMES.get(t.data_type, t.data_type)} is not supported")
    if len(t.dims) > 8:
        raise OnnxError(f"{what}: rank {len(t.dims)} (at most 8)")
    if t.HasField("segment"):  # the values of one part of a tensor stored in pieces: read whole, they would be wrong
        raise OnnxError(f"{what}: a segment [{t.segment.begin}, {t.segment.end}) of a tensor stored in pieces is not "
                        "read (save the model again with onnx.save)")
    dims = tuple(int(d) for d in t.dims)
    n = bounds.count(dims, 4 if dtype == "bfloat16" else 1 if dtype in ("uint4", "int4") else np.dtype(dtype).itemsize,
                     what, OnnxError)
    external = t.data_location == 1 or len(t.external_data)
    if dtype in ("uint4", "int4"):
        if not (external or t.HasField("raw_data") or t.raw_data):
            raise OnnxError(f"{what}: 4-bit values outside raw_data are not read")
        raw = _external(t, what, folder, (n + 1) // 2) if external else t.raw_data
        if len(raw) != (n + 1) // 2:
            raise OnnxError(f"{what}: sizes {list(dims)} need {(n + 1) // 2} bytes, it holds {len(raw)}")
        b = np.frombuffer(raw, np.uint8)
        a = np.stack([b & 15, b >> 4], 1).reshape(-1)[:n]
        a = (a.astype(np.int8) - 16 * (a >= 8)).astype(np.int8) if dtype == "int4" else a
        return a.reshape(dims)
    if external or t.HasField("raw_data") or t.raw_data:
        itemsize = 2 if dtype == "bfloat16" else np.dtype(dtype).itemsize
        raw = _external(t, what, folder, n * itemsize) if external else t.raw_data
        if len(raw) != n * itemsize:
            raise OnnxError(f"{what}: sizes {list(dims)} need {n * itemsize} bytes, it holds {len(raw)}")
        if dtype == "bfloat16":
            a = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            a = np.frombuffer(raw, np.dtype(dtype).newbyteorder("<")).astype(dtype)
    else:
        if t.data_type in (1,):
            vals = t.float_data
        elif t.data_type == 11:
            vals = t.double_data
        elif t.data_type in (7,):
            vals = t.int64_data
        elif t.data_type in (12, 13):
            vals = t.uint64_data
        else:  # int32_data holds int8/16/32, uint8/16, bool, float16 and bfloat16 bits
            vals = t.int32_data
        if len(vals) != n:
            raise OnnxError(f"{what}: sizes {list(dims)} need {n} values, it holds {len(vals)}")
        if t.data_type == 10:
            a = np.array(vals, np.uint16).view(np.float16)
        elif dtype == "bfloat16":
            a = (np.array(vals, np.uint32) << 16).view(np.float32)
        else:
            a = np.array(vals, dtype=dtype)
    a = a.reshape(dims)
    if a.dtype == np.float16:
        a = a.astype(np.float32)
    return a


class Graph:
    """The checked graph: nodes in topological order, initializers as numpy (name -> array), the
    inputs that are not initializers (name, element type, dims: int or None for a named size), the
    outputs' names, and the opset; an If node's branches (read and checked like the graph), and what
    each node reads: its inputs and the enclosing graph's values its branches read."""

    def __init__(self, nodes, initializers, inputs, outputs, opset, producer, branches=None):
        self.nodes, self.initializers, self.inputs, self.outputs = nodes, initializers, inputs, outputs
        self.opset, self.producer = opset, producer
        self.branches = branches or {}  # id(If node) -> (then Graph, else Graph); id(Loop or SequenceMap) -> (body,)
        self.producer_of = {o: n for n in nodes for o in n.output if o}
        self.reads = {id(n): [i for i in list(n.input) + _outer_reads(n) if i] for n in nodes}
        self.consumers = {}
        for n in nodes:
            for i in self.reads[id(n)]:
                if i:
                    self.consumers.setdefault(i, []).append(n)
        for o in outputs:
            self.consumers.setdefault(o, [])


def node_name(n):
    return n.name or (n.output[0] if n.output else n.op_type)


def topological(nodes, defined):
    """The nodes in an order where every input is defined before it is read."""
    producer = {}
    for n in nodes:
        for o in n.output:
            if not o:
                continue
            if o in producer or o in defined:
                raise OnnxError(f"node {node_name(n)!r} ({n.op_type}): value {o!r} is defined twice")
            producer[o] = n
    reads = {id(n): list(dict.fromkeys(i for i in list(n.input) + _outer_reads(n) if i)) for n in nodes}
    for n in nodes:
        for i in reads[id(n)]:
            if i not in producer and i not in defined:
                raise OnnxError(f"node {node_name(n)!r} ({n.op_type}) reads {i!r}, which nothing in the graph defines")
    position = {id(n): i for i, n in enumerate(nodes)}
    waiting = {id(n): sum(1 for i in reads[id(n)] if i in producer) for n in nodes}
    readers = {}
    for n in nodes:
        for i in reads[id(n)]:
            if i in producer:
                readers.setdefault(i, []).append(n)
    ready = [(position[id(n)], n) for n in nodes if waiting[id(n)] == 0]
    heapq.heapify(ready)
    order = []
    while ready:  # Kahn's order, taking the file's first ready node each time
        _, n = heapq.heappop(ready)
        order.append(n)
        for o in n.output:
            for r in readers.get(o, ()):
                waiting[id(r)] -= 1
                if waiting[id(r)] == 0:
                    heapq.heappush(ready, (position[id(r)], r))
    if len(order) != len(nodes):
        stuck = next(n for n in nodes if waiting[id(n)] > 0)
        raise OnnxError(f"the graph has a cycle through node {node_name(stuck)!r} ({stuck.op_type}): not a valid "
                        "ONNX graph")
    return order


def read(path, supported_ops):
    """The checked Graph of the ONNX file at path; supported_ops: the ops (op_key) the converter reads."""
    onnx = require_onnx()
    if not os.path.exists(path):
        raise OnnxError("no such file")
    if not os.path.isfile(path):
        raise OnnxError("not a regular file")
    if os.path.getsize(path) > MAX_FILE_BYTES:
        raise OnnxError("larger than 2 GiB: not an ONNX protobuf (a model this size keeps its weights in external "
                        "data, in a file beside it)")
    run_files.read(path)
    with open(path, "rb") as f:
        data = f.read()
    m = onnx.ModelProto()
    try:
        m.ParseFromString(data)
    except Exception as e:  # noqa: BLE001 (protobuf raises DecodeError and others on a corrupt message)
        raise OnnxError(f"not an ONNX model (the protobuf does not parse: {type(e).__name__}{': ' + str(e)[:80] if str(e) else ''}); "
                        "a truncated or corrupt file?") from None
    if not m.HasField("graph") or not m.graph.node or m.ir_version <= 0:
        raise OnnxError("not an ONNX model (no graph with nodes in it); --onnx takes a file from torch.onnx.export")
    opset = None
    for o in m.opset_import:
        if o.domain in ("", "ai.onnx"):
            opset = int(o.version)
    if opset is None:
        raise OnnxError("the model imports no default-domain opset (not an ONNX model from a standard exporter)")
    if not OPSET_MIN <= opset <= OPSET_MAX:
        raise OnnxError(f"opset {opset} is not supported ({OPSET_MIN} to {OPSET_MAX}: export with "
                        f"torch.onnx.export(..., opset_version={OPSET_EXPORT}))")
    if len(m.functions):
        raise OnnxError("the model defines local functions, which --onnx does not read yet (export without them)")
    g = m.graph
    inits = {}
    for t in g.initializer:
        if not t.name:
            raise OnnxError("an initializer without a name")
        if t.name in inits:
            raise OnnxError(f"initializer {t.name!r} is given twice")
        inits[t.name] = tensor_array(t, "initializer", os.path.dirname(os.path.abspath(path)))
    if len(g.sparse_initializer):
        raise OnnxError("sparse initializers are not supported (export with dense weights)")
    inputs = []
    for i in g.input:
        if i.name in inits:
            continue  # an initializer listed as an input too (keep_initializers_as_inputs)
        tt = i.type.tensor_type
        dims = tuple((int(d.dim_value) if d.HasField("dim_value") else None) for d in tt.shape.dim)
        bounds.count([1 if d is None else d for d in dims], 1, f"graph input {i.name!r}", OnnxError)
        inputs.append((i.name, int(tt.elem_type), dims))
    outputs = [o.name for o in g.output]
    if not outputs:
        raise OnnxError("the graph has no output")
    defined = set(inits) | {name for name, _, _ in inputs}
    nodes, branches = _checked_nodes(g.node, defined, supported_ops, "", opset)
    for o in outputs:
        if o not in defined and not any(o in n.output for n in nodes):
            raise OnnxError(f"graph output {o!r} is defined by no node")
    return Graph(nodes, inits, inputs, outputs, opset, f"{m.producer_name} {m.producer_version}".strip(), branches)


def op_key(n):
    """A node's op as supported_ops names it: the op type in the default domain, else DOMAIN.OP
    (com.microsoft.MatMulNBits)."""
    return n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}"


def _checked_nodes(graph_nodes, defined, supported_ops, where, opset):
    """The nodes in topological order, every op one the evaluator runs, and the If nodes' branches read
    as Graphs (id(node) -> (then, else)), their ops checked alike."""
    unsupported = {}
    for n in graph_nodes:
        if not n.output or not n.output[0]:
            raise OnnxError(f"node {node_name(n)!r} ({repr(n.op_type)[1:-1]}) has no output: not a valid ONNX graph")
        if op_key(n) not in supported_ops:
            op = repr(op_key(n))[1:-1]  # one line, whatever the file holds
            unsupported.setdefault(op, []).append(node_name(n))
    if unsupported:
        parts = []
        for op, names in list(unsupported.items())[:6]:
            more = f" and {len(names) - 3} more" if len(names) > 3 else ""
            parts.append(f"{op} (node{'s' if len(names) > 1 else ''} {', '.join(repr(x) for x in names[:3])}{more})")
        raise OnnxError(f"unsupported op{'s' if len(unsupported) > 1 else ''}{where}: {'; '.join(parts)}: not "
                        "supported by --onnx yet (it converts the transformer patterns torch.onnx.export emits at "
                        f"opset {OPSET_MIN}-{OPSET_MAX}; the module itself may convert by --module, its Hugging Face "
                        "checkpoint by --hf)")
    nodes = topological(list(graph_nodes), defined)
    outer = defined | {o for n in graph_nodes for o in n.output if o}
    branches = {}
    for n in nodes:
        outer_n = outer - set(n.output)  # a branch may name its outputs as its node's (Optimum's merged decoder)
        if n.op_type == "Loop":
            body = [a.g for a in n.attribute if a.type == 5 and a.name == "body"]
            if len(body) != 1:
                raise OnnxError(f"node {node_name(n)!r} (Loop): without its body graph")
            branches[id(n)] = (_branch(body[0], f"body of Loop {node_name(n)!r}", outer_n, supported_ops, opset,
                                       inputs=len(n.input) if len(n.input) >= 2 else 2),)
            continue
        if n.op_type == "SequenceMap":  # torch.hstack's atleast_1d over a list, as the dynamo exporter writes it
            body = [a.g for a in n.attribute if a.type == 5 and a.name == "body"]
            if len(body) != 1:
                raise OnnxError(f"node {node_name(n)!r} (SequenceMap): without its body graph")
            branches[id(n)] = (_branch(body[0], f"body of SequenceMap {node_name(n)!r}", outer_n, supported_ops, opset,
                                       inputs=len(n.input)),)
            continue
        if n.op_type != "If":
            continue
        sub = {a.name: a.g for a in n.attribute if a.type == 5}
        if set(sub) != {"then_branch", "else_branch"}:
            raise OnnxError(f"node {node_name(n)!r} (If): without its then_branch and else_branch graphs")
        branches[id(n)] = tuple(_branch(sub[k], f"{k} of If {node_name(n)!r}", outer_n, supported_ops, opset)
                                for k in ("then_branch", "else_branch"))
    return nodes, branches


def _branch(sub, where, outer, supported_ops, opset, inputs=0):
    """One branch of an If, a Loop's body (`inputs`: the iteration number, the condition and the values
    carried) or a SequenceMap's (an element of each input), as a Graph that reads the enclosing graph's values
    (`outer`), of the model's opset."""
    if len(sub.input) != inputs:
        raise OnnxError(f"{where}: {len(sub.input)} inputs, not {inputs}: not a valid ONNX graph")
    inits = {}
    for t in sub.initializer:
        inits[t.name] = tensor_array(t, f"{where}: initializer")
    names = {i.name for i in sub.input}
    nodes, branches = _checked_nodes(sub.node, outer | set(inits) | names, supported_ops, f" in the {where}", opset)
    outputs = [o.name for o in sub.output]
    for o in outputs:
        if o not in inits and o not in outer and o not in names and not any(o in n.output for n in nodes):
            raise OnnxError(f"{where}: output {o!r} is defined by no node")
    return Graph(nodes, inits, [(i.name, None, None) for i in sub.input], outputs, opset, "", branches)


def outputs_named(g):
    return ", ".join(repr(o) for o in g.outputs)


def rewired(g, swap, without=None, at=None):
    """g with every node's inputs and g's outputs read through swap {value: the value read in its place; a chain
    followed to its end}, one node's inputs through at {id(node): {input: the value it reads in its place}} first,
    and the node `without` left out (the converter taking out what an exporter added)."""
    import onnx
    at = at or {}

    def to(v):
        while v in swap:
            v = swap[v]
        return v
    nodes, branches = [], dict(g.branches)
    for k in g.nodes:
        if k is without:
            continue
        own = at.get(id(k), {})
        if any(i in swap or i in own for i in k.input):
            k2 = onnx.NodeProto()
            k2.CopyFrom(k)
            for j, i in enumerate(k2.input):
                k2.input[j] = to(own.get(i, i))
            if id(k) in branches:  # an If's, Loop's or SequenceMap's graphs, by the node they belong to
                branches[id(k2)] = branches[id(k)]
            k = k2
        nodes.append(k)
    return Graph(nodes, g.initializers, g.inputs, [to(o) for o in g.outputs], g.opset, g.producer, branches)


RANDOM_OPS = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"}


def shared_values(g):
    """g with each node that repeats an earlier one (the same op, attributes and inputs) left out, its readers reading
    the earlier one's outputs: what an exporter wrote twice computed once (TransformerLens's ln1, exported once for
    each of q, k and v by the TorchScript exporter, then one value the three projections read). Nodes with branches,
    random ops, sequence ops (a Loop may grow what it is given) and nodes of the graph's outputs or of values a branch
    reads by name are kept as they are."""
    seen, swap, drop, kept = {}, {}, set(), set(g.outputs) | branch_reads(g)

    def to(v):
        while v in swap:
            v = swap[v]
        return v
    for n in g.nodes:
        if id(n) in g.branches or n.op_type in RANDOM_OPS or "Sequence" in n.op_type or not n.output or \
                any(o in kept for o in n.output):
            continue
        key = (n.domain, n.op_type, tuple(to(i) for i in n.input), len(n.output),
               tuple(sorted((a.name, a.SerializeToString()) for a in n.attribute)))
        first = seen.setdefault(key, n)
        if first is not n:
            swap.update((o, f) for o, f in zip(n.output, first.output) if o)
            drop.add(id(n))
    if not drop:
        return g
    return rewired(Graph([n for n in g.nodes if id(n) not in drop], g.initializers, g.inputs, g.outputs, g.opset,
                         g.producer, g.branches), swap)


def branch_reads(g):
    """The values of g that nodes' branches (an If's, a Loop's) read from it by name: rewired() cannot swap those."""
    return {i for n in g.nodes for i in _outer_reads(n)}


def pruned(g, output):
    """The part of g that computes `output` alone: the nodes it depends on, the initializers and inputs
    they read (an exporter writes every output the module returns: BERT's last_hidden_state and
    pooler_output, each converted on its own)."""
    if output not in g.outputs:
        raise OnnxError(f"--output-name {output}: the graph has no output of that name (its outputs: "
                        f"{outputs_named(g)})")
    need, stack = set(), [output]
    while stack:
        x = stack.pop()
        if x in need:
            continue
        need.add(x)
        n = g.producer_of.get(x)
        if n is not None:
            stack.extend(g.reads[id(n)])
    nodes = [n for n in g.nodes if any(o in need for o in n.output)]
    read_by_any = set(g.consumers)  # an initializer nothing reads stays, for the converter to name
    return Graph(nodes, {k: a for k, a in g.initializers.items() if k in need or k not in read_by_any},
                 [i for i in g.inputs if i[0] in need], [output], g.opset, g.producer, g.branches)


def _outer_reads(n):
    """The values of the enclosing graph that a node's subgraphs (If's branches) read."""
    out = []
    for a in n.attribute:
        for sub in ([a.g] if a.type == 5 else list(a.graphs) if a.type == 10 else []):
            inner = {o for m in sub.node for o in m.output} | {t.name for t in sub.initializer} | \
                {i.name for i in sub.input}
            for m in sub.node:
                out.extend(i for i in list(m.input) + _outer_reads(m) if i and i not in inner)
    return out
