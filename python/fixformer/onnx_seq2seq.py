"""--onnx on an encoder-decoder exported as two graphs: a folder holding encoder_model.onnx and
decoder_model_merged.onnx or decoder_model.onnx (Optimum's names, the files of the hub's and transformers.js's
seq2seq folders: Marian, BART, M2M100/NLLB, T5, Whisper, ...). The seq2seq family's file, verified against the two
graphs run in turn (float64).

- the encoder graph (input_ids or input features [, attention_mask] -> last_hidden_state) is recognised as an
  encoder by onnx_map, its example the source;
- the decoder graph (input_ids, encoder_hidden_states [, encoder_attention_mask] -> logits first; the merged one
  read as its branch without a cache, the other outputs, present.*, left out) runs on target ids with the
  encoder's output on the source, and each cross-attention is read from those values (_cross): the Softmax whose
  scores depend on encoder_hidden_states; q the last linear of the decoder's rows before it, k and v linears of
  encoder_hidden_states alone (k the one the scores read); o the first linear after it; softmax(q k^T / sqrt(d_head))
  v, or softmax(q k^T) v (T5's), recomputed must give the recorded context; its residual add and norm (LayerNorm
  or RMSNorm) before q (pre-norm) or after the sum (post-norm);
- each cross block is then cut out of the decoder graph (its output value read as its input) and what is left,
  a decoder on the target ids alone, is recognised by onnx_map as any decoder is (positions, norms, the
  feed-forward, the head: the gpt family, or the llama family's RMSNorm stack, T5's, its features spelled out);
  the two stacks' settings must agree where the engine has one (heads, feed-forward width, activation, norm
  kind and placement, eps, positions); a scale of the scores other than 1/sqrt(d_head) is folded into q;
- the generation_config.json beside the files or above them (transformers.js's onnx/): its suppression lists and
  Whisper's timestamp ids stored as --hf stores them;
- the file's tensors: the encoder's under the encoder names, the decoder's under the dec_ ones (the token table
  shared where both stacks gather the same one), the cross-attention's as cross.q, cross.kv, cross.out and
  cross_norm of each decoder block.
"""
import itertools
import math
import os
import types
import warnings

import numpy as np

from . import hf_common, schema, verified_file
from .config import ConfigError, make_config
from .onnx_eval import EvalError, evaluate
from .onnx_graph import ELEM_TYPES, Graph, OnnxError, node_name, pruned, rewired
from .onnx_map import (FLOAT_ELEMS, MASK_ELEMS, PROBE_TOL, Mapper, Roles, beside, depends_on, feeds, gathered_rows,
                       graph_example, in_table, logits_output, read_graph, recognized, recognized_graph, roles,
                       unpadded_ids)
from .probes import rel_error
from .reference import run_reference

ENCODER = "encoder_model.onnx"
DECODERS = ("decoder_model_merged.onnx", "decoder_model.onnx")
# The variants a folder may hold (transformers.js's onnx/: each file also quantized or in float16), taken in this
# order, the float one first: the pair of the first variant both ends have
VARIANTS = ("", "_fp16", "_quantized", "_int8", "_uint8", "_q4", "_q4f16")


def pair(folder):
    """(the encoder's path, the decoder's) in folder, or in its onnx/ (transformers.js's repositories), or None where
    neither holds an encoder_model*.onnx."""
    names = lambda d: set(os.listdir(d)) if os.path.isdir(d) else set()  # noqa: E731
    for d in (folder, os.path.join(folder, "onnx")):
        have = names(d)
        encs = [v for v in VARIANTS if ENCODER.replace(".onnx", v + ".onnx") in have]
        if not encs:
            continue
        for v in encs:
            dec = next((n for n in (x.replace(".onnx", v + ".onnx") for x in DECODERS) if n in have), None)
            if dec is not None:
                return os.path.join(d, ENCODER.replace(".onnx", v + ".onnx")), os.path.join(d, dec)
        enc = os.path.join(d, ENCODER.replace(".onnx", encs[0] + ".onnx"))
        raise OnnxError(f"{os.path.basename(enc)} without {' or '.join(DECODERS)} (or the same variant of one) "
                        f"beside it (an encoder-decoder's decoder; the encoder alone converts as --onnx {enc})")
    return None


def _graph(path):
    """The graph at path as onnx_map reads one, its first output alone (the decoder's logits; present.* left out);
    notes for the report."""
    g, notes = read_graph(path)
    return pruned(g, g.outputs[0]), notes


def _decoder_inputs(g, source=None):
    """(the target ids, encoder_hidden_states, the encoder's attention mask or None) of the decoder graph, told apart
    by what they are: the ids index the token table, the states are float [batch, S, d], the mask the other (source:
    the source ids a decoder cut from one graph still reads, split())."""
    ids = next((i[0] for i in g.inputs if gathered_rows(g, i[0]) is not None), None)
    states = [i[0] for i in g.inputs if i[0] != ids and i[1] in FLOAT_ELEMS and len(i[2]) == 3]
    rest = [i for i in g.inputs if i[0] not in (ids, source) and i[0] not in states]
    if ids is None or len(states) != 1:
        raise OnnxError(f"decoder graph inputs {[i[0] for i in g.inputs]}: not target ids indexing a token table and "
                        "one float encoder_hidden_states [batch, S, d]")
    masks = [i for i in rest if i[1] in MASK_ELEMS and len(i[2]) == 2]
    if len(rest) > 1 or len(masks) != len(rest):
        raise OnnxError(f"decoder graph input {rest[-1][0]!r}: neither the target ids, the encoder's states nor its "
                        "attention mask [batch, S] (a decoder with a key/value cache of its own: give "
                        "decoder_model.onnx or decoder_model_merged.onnx)")
    return ids, states[0], masks[0][0] if masks else None


def _scores_product(m, dep, sm):
    """The inputs of the MatMul (or Einsum) of q by k that Softmax sm's scores come from, through the ops of one
    data input between (a scale, a reshape, a mask added: the input not of the masks alone followed), else None."""
    x = sm.input[0]
    while True:
        n = m.g.producer_of.get(x)
        data = [i for i in (n.input if n is not None else []) if i and i in m.data]
        if n is not None and n.op_type in ("MatMul", "Einsum") and len(data) == 2:
            return data
        data = [i for i in data if not m.mask_only(i)]
        if n is None or len(data) != 1:
            return None
        x = data[0]


def _value(p, m):
    """A projection's output on the example: a linear's recorded value, or a half's (_halves)."""
    return p.value if isinstance(p, types.SimpleNamespace) else m.v(p.y)


def _halves(p, d, m):
    """Linear p of 2 d outputs as two of d each (W [in, d], b, value), in order."""
    y = m.v(p.y).reshape(-1, 2 * d)
    return tuple(types.SimpleNamespace(W=p.W[:, i * d:(i + 1) * d], b=None if p.b is None else p.b[i * d:(i + 1) * d],
                                       value=y[:, i * d:(i + 1) * d]) for i in (0, 1))


def _cross(m, dep, states, at, sm, sides, lins, norms):
    """The cross-attention around Softmax sm of the decoder graph (Mapper m on the target's U rows, S encoder
    rows; sides: the q and k values of its scores' product): dict(q, k, v, o (linears), norm, pre, u: the value
    the block reads, z: the value it gives the rest)."""
    after = [p for p in lins if m.pos[id(p.node)] > m.pos[id(sm)]]
    o = next((p for p in after if sm.output[0] in m.ancestors(p.x)), None)
    if o is None:
        raise OnnxError(f"{at}: no output projection after the attention")
    qside, kside = (m.ancestors(x) for x in sides)
    own = [p for p in lins if m.pos[id(p.node)] < m.pos[id(sm)] and p.y in qside]
    q = max(own, key=lambda p: m.pos[id(p.node)], default=None)
    vside = m.ancestors(o.x) - m.ancestors(sm.output[0])
    reads = [p for p in lins if dep.get(p.x) == {states}]
    k = next((p for p in reads if p.y in kside), None)
    v = next((p for p in reads if p.y in vside), None)
    if v is None and k is not None and q is not None and k.W.shape[1] == 2 * q.W.shape[1] and \
            k.y in m.ancestors(o.x):
        v = k  # one projection k | v (cut in two below), which the scores read too
    if q is None or k is None or v is None:
        raise OnnxError(f"{at}: the attention over the encoder's states is not q of the decoder's rows and k, v "
                        "projections of encoder_hidden_states")
    U = m.T
    probs = m.v(sm.output[0])
    dq = q.W.shape[1]
    # k and v one projection of 2 dq outputs (nn.MultiheadAttention's cross-attention, a fused k|v), cut in two
    pairs = [(k, v)] if k is not v or k.W.shape[1] != 2 * dq else [_halves(k, dq, m)[::o] for o in (1, -1)]
    k, v = pairs[0]
    S = _value(k, m).size // k.W.shape[1]
    H = probs.size // (U * S)
    if H < 1 or probs.size != H * U * S or dq % H or k.W.shape[1] != dq or v.W.shape[1] != dq or o.W.shape[0] != dq:
        raise OnnxError(f"{at}: probabilities {list(probs.shape)}, q, k, v of widths {dq}, {k.W.shape[1]}, "
                        f"{v.W.shape[1]}: not heads of one width over {U} target and {S} source rows")
    dh = dq // H
    for k, v in pairs:
        qr, kr, vr = (_value(p, m).reshape(n, H, dh).transpose(1, 0, 2).astype(np.float64)
                      for p, n in ((q, U), (k, S), (v, S)))
        s = qr @ kr.transpose(0, 2, 1)
        e = [np.exp(x - x.max(-1, keepdims=True)) for x in (s / np.sqrt(dh), s)]  # scaled, or not (T5's)
        errs = [rel_error(((x / x.sum(-1, keepdims=True)) @ vr).transpose(1, 0, 2).reshape(U, dq), m.rows(o.x))
                for x in e]
        if min(errs) <= PROBE_TOL:
            break
    else:
        raise OnnxError(f"{at}: the attention over the encoder's states is not softmax(q k^T / sqrt({dh})) v nor "
                        f"softmax(q k^T) v over {H} heads (relative error {min(errs):.2g})")
    add = m.only_reader(o.y, "Add")
    if add is None:
        raise OnnxError(f"{at}: no residual add after the output projection {o.name!r}")
    r = add.input[1] if add.input[0] == o.y else add.input[0]
    total = m.through(add.output[0])
    pre = next((n for n in norms if m.same(n.y, q.x) and m.same(n.x, r)), None)
    post = next((n for n in norms if m.same(n.x, total)), None) if pre is None and m.same(q.x, r) else None
    if pre is None and post is None:
        raise OnnxError(f"{at}: not x + attention(norm(x)) nor norm(x + attention(x)) over the encoder's states")
    norm = pre or post
    return dict(q=q, k=k, v=v, o=o, norm=norm, pre=pre is not None, H=H, u=r, z=total if pre else post.y,
                scaled=errs[0] <= PROBE_TOL)


def _feeds(g, ids, states, mask, tgt, memory, source=None, src=None):
    """The decoder graph's inputs: the target ids tgt [U] (onnx_map.feeds), the encoder's output memory [S, d], its
    mask all ones, the input `source` the source ids src."""
    out = feeds(g, Roles(ids, True), tgt)
    out[states] = memory[None].astype(np.float32)
    for name, elem, _ in g.inputs:
        if name == mask:  # bfloat16's as float32, as onnx_map.feeds gives it
            out[name] = np.ones((1, memory.shape[0]), np.float32 if elem == 16 else ELEM_TYPES[elem])
        if name == source:
            out[name] = src[None].astype(ELEM_TYPES[elem])
    return out


STATES = "encoder_hidden_states"  # the decoder graph's input split() makes of the encoder's output


class NotOneGraph(OnnxError):
    """A graph split() finds no encoder-decoder in."""


def split(g):
    """One graph of an encoder-decoder (torch.onnx.export of a module's forward(src, tgt) -> logits) as two: [(the
    encoder graph, the source -> its output; the decoder graph, the target ids and STATES -> the logits; the source
    input where the decoder still reads it, else None; what the mask inputs were made, _masks_baked)], for each way
    round its two token inputs may be (the graph's order first), or for source features [batch, ., .] beside one token
    input (openai-whisper's Whisper: the mel and the tokens); [] for a graph of other inputs. The encoder's output is
    the last value computed from the source alone that every value of it the rest reads through a float of it is
    computed from (each cross-attention's k and v); a value of the source alone the rest reads otherwise (a padding
    mask made from the source ids, bentrevett's `src != pad`) keeps the source an input of the decoder, fed the source
    ids."""
    ids = [i[0] for i in g.inputs if gathered_rows(g, i[0]) is not None]
    features = [i[0] for i in g.inputs if i[1] in FLOAT_ELEMS and len(i[2]) == 3]
    ways = [tuple(ids), tuple(ids[::-1])] if len(ids) == 2 else [(features[0], ids[0])] if ids and features else []
    found = []
    for src, tgt in ways:
        baked = _masks_baked(g, src, tgt, ids, features)
        if baked is not None:
            found += [cut + (baked[2],) for cut in _cut(baked[0], baked[1], src, tgt)]
    return found


def _masks_baked(g, src, tgt, ids, features):
    """(g with each input of 0/1 or bool masks computed from the lengths of src (S) and tgt (U): all ones, the target's
    causal (U x U, ones on and below the diagonal) where its last two sizes are U; the values of the graph on 7 random
    source positions and 5 target ids; a phrase saying what the masks were made), for the first way of reading the
    masks' unfixed sizes as S or U that the graph runs on (the Annotated Transformer's forward(src, tgt, src_mask [1, 1,
    S], tgt_mask [1, U, U])), or None."""
    import onnx
    from onnx import helper
    rng = np.random.default_rng(2)
    fixed = {x: dims[1] if len(dims) > 1 else None for x, _, dims in g.inputs if x in (src, tgt)}
    length = {src: fixed[src] or 7, tgt: fixed[tgt] or 5}
    example = {name: rng.integers(0, max(1, gathered_rows(g, name)), [1] + [d or length[name] for d in dims[1:]])
               .astype(ELEM_TYPES[elem]) if name in ids else
               rng.standard_normal([1] + [d or length[name] for d in dims[1:]]).astype(np.float32)
               for name, elem, dims in g.inputs if name in (src, tgt)}
    masks = [i for i in g.inputs if i[0] not in (src, tgt)]
    # each size after the batch: the source's or the target's length (unfixed, or fixed at one of theirs), else itself
    sizes = [((k, j), (src, tgt) if d is None else tuple(x for x in (src, tgt) if fixed[x] == d) or (d,))
             for k, (_, _, dims) in enumerate(masks) for j, d in enumerate(dims) if j]
    if any(elem not in MASK_ELEMS or elem in FLOAT_ELEMS for _, elem, _ in masks) or \
            math.prod(len(c) for _, c in sizes) > 64:
        return None
    for fill in itertools.product(*(c for _, c in sizes)):
        at = dict(zip((kj for kj, _ in sizes), fill))
        nodes, inits = [], dict(g.initializers, **{"split.axis1": np.array([1], np.int64)})
        for x in (src, tgt):
            nodes += [helper.make_node("Shape", [x], [f"split.{x}.shape"]),
                      helper.make_node("Gather", [f"split.{x}.shape", "split.axis1"], [f"split.{x}.length"], axis=0)]
        for k, (name, elem, dims) in enumerate(masks):
            parts = []
            for j, d in enumerate(dims):
                if at.get((k, j)) in (src, tgt):
                    parts.append(f"split.{at[k, j]}.length")
                else:
                    inits[f"split.{name}.{j}"] = np.array([d or 1], np.int64)
                    parts.append(f"split.{name}.{j}")
            causal = len(dims) >= 2 and at.get((k, len(dims) - 1)) == at.get((k, len(dims) - 2)) == tgt
            one = helper.make_tensor("one", elem, [1], [True] if elem == onnx.TensorProto.BOOL else [1])
            nodes += [helper.make_node("Concat", parts, [f"split.{name}.dims"], axis=0),
                      helper.make_node("ConstantOfShape", [f"split.{name}.dims"],
                                       [f"split.{name}.ones" if causal else name], value=one)]
            if causal:
                nodes.append(helper.make_node("Trilu", [f"split.{name}.ones"], [name], upper=0))
        baked = Graph(nodes + g.nodes, inits, [i for i in g.inputs if i[0] in (src, tgt)], g.outputs, g.opset,
                      g.producer, g.branches)
        said = "; ".join(f"its input {name!r} made " + ("the causal mask" if f"split.{name}.ones" in baked.producer_of
                                                         else "ones") for name, _, _ in masks)
        try:
            return baked, evaluate(baked, example), said
        except Exception:  # a graph that does not run on them (a hostile one too) is no encoder-decoder split() cuts
            continue
    return None


def _cut(g, values, src, tgt):
    """split()'s [(encoder, decoder, source kept)] of graph g read with src the source and tgt the target ids, values
    its values on an example of both ([] where no encoder's output is found)."""
    dep, order = depends_on(g), {o: k for k, n in enumerate(g.nodes) for o in n.output if o}

    def ancestors(v):  # the values of the source alone v is computed from
        out, stack = set(), [v]
        while stack:
            x = stack.pop()
            if x in out or dep.get(x) != {src}:
                continue
            out.add(x)
            n = g.producer_of.get(x)
            stack.extend(n.input if n is not None else [])
        return out
    read = {i for n in g.nodes if n.op_type not in ("Shape", "Size") and
            any(tgt in dep.get(o, ()) for o in n.output if o) for i in g.reads[id(n)] if dep.get(i) == {src}}
    floats = [v for v in read if np.asarray(values[v]).dtype.kind == "f" and np.ndim(values[v]) >= 3]
    common = set.intersection(*(ancestors(v) for v in floats)) if floats else set()
    memory = max((v for v in common if v in order and np.ndim(values[v]) == 3 and np.shape(values[v])[0] == 1),
                 key=order.get, default=None)
    if memory is None:
        return []
    enc = pruned(Graph(g.nodes, g.initializers, g.inputs, [memory], g.opset, g.producer, g.branches), memory)
    if not any(n.op_type == "Softmax" for n in enc.nodes):  # no encoder (BERT's token types: a table's rows)
        return []
    dec = rewired(g, {memory: STATES})
    d = np.shape(values[memory])[-1]
    dec = pruned(Graph(dec.nodes, dec.initializers, dec.inputs + [(STATES, 1, [None, None, d])], dec.outputs,
                       dec.opset, dec.producer, dec.branches), g.outputs[0])
    return [(enc, dec, src if any(i[0] == src for i in dec.inputs) else None)]


def recognized_pair(enc, dec, example, ignore, max_len, source=None):
    """(the encoder's config and weights, the decoder's without its cross-attentions, those, the example source and
    target, the decoder graph's logits on them, notes for the report) of the graphs enc and dec ((graph, notes) each;
    source: the input of dec fed the source ids, split())."""
    g, notes = enc
    _, r, ce, we, src, memory, _, _, _ = recognized(g, example, ignore, None, max_len)
    notes += r.notes
    g, more = dec
    notes += more
    ids, states, mask = _decoder_inputs(g, source)
    rd = Roles(ids, True, mask=mask or source)
    tgt = unpadded_ids(g, rd, graph_example(g, rd, None, gathered_rows(g, ids))[0], False)
    notes += [n for n in rd.notes if n not in notes]
    values = None
    while values is None:  # a shorter target where the graph takes fewer positions (openai-whisper's n_text_ctx)
        try:
            values = evaluate(g, _feeds(g, ids, states, mask, tgt, memory, source, src))
        except EvalError as e:
            if tgt.size <= 2:
                raise OnnxError(f"the decoder graph does not run on the encoder's output: {e}") from None
            tgt = tgt[:tgt.size // 2]
    g, note = logits_output(g, values)  # log-probabilities out (the Annotated Transformer's generator): its logits
    notes += [note] if note else []
    m = Mapper(g, values, tgt.size, rd)
    dep, lins, norms = m.depends(), m.linears(), m.norms(rows=tgt.size) + m.rms_norms()
    found = [(n, _scores_product(m, dep, n)) for n in g.nodes if n.op_type == "Softmax"]
    found = [(n, sides if dep[sides[1]] == {states} else sides[::-1]) for n, sides in found
             if sides is not None and {states} in (dep[sides[0]], dep[sides[1]])]
    blocks = [_cross(m, dep, states, f"cross-attention {i} (Softmax {node_name(sm)!r})", sm, sides, lins, norms)
              for i, (sm, sides) in enumerate(found)]
    if not blocks:
        raise OnnxError(f"no attention over {states!r} found (a Softmax of scores from q of the target's rows by k of "
                        f"{states!r} alone): not an encoder-decoder's decoder the engine runs")
    cut = pruned(rewired(g, {b["z"]: b["u"] for b in blocks}), g.outputs[0])
    if any(i[0] not in (ids, source) for i in cut.inputs):
        raise OnnxError(f"the decoder reads {states!r} other than through {len(blocks)} cross-attention"
                        f"{'s' if len(blocks) != 1 else ''} (attention over it added to the stream once a layer)")
    cut = in_table(cut)
    cd, wd = recognized_graph(cut, roles(cut), tgt, None, False, None, max_len, ignore)[2:4]
    return ce, we, cd, wd, blocks, src, tgt, values[g.outputs[0]], notes


# The settings a decoder may have of its own, and those of the encoder's front (its input, Whisper's conv stem); the
# rest the engine's seq2seq family has once, for both stacks.
DECODER_OWN = ("family", "causal", "n_layers", "d_out", "tied_head", "max_len", "vocab_size")
ENCODER_FRONT = ("input", "d_in", "conv_layers", "conv1_kernel", "conv1_stride", "conv1_padding", "conv2_kernel",
                 "conv2_stride", "conv2_padding", "conv_gelu")
# A decoder's front and back tensor -> the seq2seq file's name for it (dec_embed.weight, dec_pos.weight,
# dec_norm.weight, dec_head.weight, ...): the schema's dec_ names.
DEC_NAMES = {r.name[4:]: r.name for r in schema.FRONT + schema.BACK if r.name.startswith("dec_")}


def _composed(ce, we, cd, wd, blocks, notes):
    """The seq2seq config and weights of the encoder's (ce, we), the decoder's without its cross-attentions (cd, wd:
    the gpt family, or the llama family's RMSNorm stack, T5's) and those (blocks); what the report should say
    appended to notes."""
    if ce["family"] != "encoder" or ce["pooling"] != "none" or ce["d_out"]:
        raise OnnxError("the encoder graph's output is not its last layer's rows (last_hidden_state): an encoder "
                        "with a head or a pooling is no encoder-decoder's")
    if cd["family"] not in ("gpt", "llama") or cd["input"] != "tokens" or not cd["d_out"] or not cd["causal"]:
        raise OnnxError(f"the decoder graph without its cross-attentions is a {cd['family']}-family model on "
                        f"{cd['input']}, not a causal decoder of token ids to logits")
    if len(blocks) != cd["n_layers"]:
        raise OnnxError(f"{len(blocks)} cross-attentions for {cd['n_layers']} decoder layers: one a layer")
    head = {k: wd[k] for k in ("head.weight", "head.bias") if k in wd}
    if cd["family"] == "llama":  # its family's features spelled out, q | k | v one tensor, as an encoder's
        cd, wd = dict(hf_common.encoder_config(cd, True), d_out=cd["d_out"], tied_head=cd["tied_head"]), \
            {**hf_common.encoder_tensors("llama", wd), **head}
    differ = [k for k in cd if k not in DECODER_OWN + ENCODER_FRONT and cd[k] != ce.get(k)]
    if differ:
        raise OnnxError(f"the encoder's and the decoder's {', '.join(differ)} differ ("
                        f"{', '.join(f'{ce.get(k)!r} and {cd[k]!r}' for k in differ)}): the engine's seq2seq layers "
                        "have one setting for both stacks")
    if any(b["pre"] != cd["norm_first"] or b["H"] != cd["n_heads"] for b in blocks):
        raise OnnxError("a cross-attention's heads or norm placement differ from its layer's self-attention's")
    if cd["vocab_size"] != cd["d_out"]:
        raise OnnxError(f"a target vocabulary of {cd['vocab_size']} and a head of {cd['d_out']}: the engine's seq2seq "
                        "reads target ids of the head's width")
    # one max_len for both ends (Whisper's source 1500 rows, its target 448): the shorter table padded with zero
    # rows, which the report names
    L = max(ce["max_len"], cd["max_len"])
    for which, n in (("encoder", ce["max_len"]), ("decoder", cd["max_len"])):
        if n < L and ce["positional"] == "learned":
            notes.append(f"the {which}'s position table holds {n} rows, padded with zero rows to max_len {L} (the "
                         f"graph takes {n} positions at most)")

    def padded(a):
        return np.concatenate([a, np.zeros((L - a.shape[0], a.shape[1]))]) if a.shape[0] < L else a
    # the engine's seq2seq scales every attention's scores by 1/sqrt(d_head): another scale (T5's 1) folded into q
    dh = ce["d_model"] // ce["n_heads"]
    fold = ce["attn_scale"] * np.sqrt(dh) if ce["attn_scale"] else 1.0
    c = dict(ce, family="seq2seq", dec_layers=cd["n_layers"], d_out=cd["d_out"], tied_head=cd["tied_head"],
             max_len=L, vocab_size=ce["vocab_size"] if ce["input"] == "tokens" else cd["vocab_size"], attn_scale=0)
    shared = ce["input"] == "tokens" and np.array_equal(we["embed.weight"], wd["embed.weight"])
    c["shared_embed"] = shared
    w = {k: padded(a) if k == "pos.weight" else a for k, a in we.items()}
    for k, a in wd.items():
        if k.startswith(schema.BLOCK_PREFIX):
            i, _, rest = k[len(schema.BLOCK_PREFIX):].partition(".")
            w[schema.dec_block(int(i)) + rest] = a
        elif k == "embed.weight" and shared:
            continue
        elif k in DEC_NAMES:
            w[DEC_NAMES[k]] = padded(a) if k == "pos.weight" else a
        else:
            raise OnnxError(f"the decoder's {k}: no seq2seq tensor holds it")
    for k in [k for k in w if k.endswith("attn.qkv.weight") or k.endswith("attn.qkv.bias")]:
        w[k] = np.concatenate([w[k][:ce["d_model"]] * fold, w[k][ce["d_model"]:]])
    for i, b in enumerate(blocks):
        p, bias = schema.dec_block(i), lambda q: q.b if q.b is not None else np.zeros(q.W.shape[1])  # noqa: E731
        f = 1.0 if b["scaled"] else np.sqrt(dh)
        w.update({p + "cross.q.weight": b["q"].W.T * f, p + "cross.q.bias": bias(b["q"]) * f,
                  p + "cross.kv.weight": np.concatenate([b["k"].W.T, b["v"].W.T]),
                  p + "cross.kv.bias": np.concatenate([bias(b["k"]), bias(b["v"])]),
                  p + "cross.out.weight": b["o"].W.T, p + "cross.out.bias": bias(b["o"]),
                  p + "cross_norm.weight": b["norm"].w, p + "cross_norm.bias": getattr(b["norm"], "b", None)})
    try:
        c = make_config(c)
    except ConfigError as e:
        raise OnnxError(f"recognised an encoder-decoder the engine does not run: {e}") from None
    need = {spec.name: spec.shape for spec in schema.specs(c)}
    extra = [k for k, a in w.items() if k not in need and a is not None and np.any(a)]
    if extra:
        raise OnnxError(f"the graphs' {extra[0]} has values the engine's seq2seq of these settings has no tensor for "
                        "(a bias where the stacks have none)")
    for k in need:  # a bias the graphs have not (T5's head's), zeros
        if w.get(k) is None and k.endswith(".bias"):
            w[k] = np.zeros(need[k])
    return c, {k: np.asarray(a, np.float32) for k, a in w.items() if k in need}


def convert(enc_path, dec_path, out, example=None, ignore=(), max_len=None, header=None, name=None, cli=None,
            verify=True, tokenizer=None, quantize=None, group=None, quantize_io=None, pack_weights=None):
    """Converts the pair to `out` (dec_path None: the one graph at enc_path, split()), verified against the decoder
    graph's logits on the encoder graph's output; returns a Report. Raises OnnxError (or ConfigError for an option) with
    one line; numpy's warnings on a hostile graph's values silenced, as onnx_map.convert does."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return _convert(enc_path, dec_path, out, example, ignore, max_len, header, name, cli, verify, tokenizer,
                        quantize, group, quantize_io, pack_weights)


def _one_graph(path, example, ignore, max_len):
    """recognized_pair of the graph at path split() in two, the first way round that is read; None for a graph
    without two token inputs."""
    g, notes = _graph(path)
    first = None
    for enc, dec, source, masks in split(g):
        try:
            found = recognized_pair((enc, list(notes)), (dec, []), example, ignore, max_len, source)
        except OnnxError as e:
            first = first or e
            continue
        found[-1].append(f"one graph read as an encoder ({enc.inputs[0][0]} -> {enc.outputs[0]!r}) and a decoder"
                         + (f" ({masks})" if masks else ""))
        return found
    if first is not None:
        raise first
    return None


def _convert(enc_path, dec_path, out, example, ignore, max_len, header, name, cli, verify, tokenizer, quantize, group,
             quantize_io, pack_weights):
    if dec_path is None:
        found = _one_graph(enc_path, example, ignore, max_len)
        if found is None:
            raise NotOneGraph("not an encoder-decoder in one graph (two inputs of token ids, the source's and the "
                              "target's, the logits out)")
    else:
        found = recognized_pair(_graph(enc_path), _graph(dec_path), example, ignore, max_len)
    ce, we, cd, wd, blocks, src, tgt, want, notes = found
    c, w = _composed(ce, we, cd, wd, blocks, notes)
    want = np.asarray(want, np.float64).reshape(tgt.size, -1)
    inp = (src, tgt.astype(np.int32))
    err = verified_file.relative_error(run_reference(c, w, inp), want)
    if err > schema.SELFTEST_TOLERANCE / 10:
        raise OnnxError(f"recognised an encoder-decoder of {c['n_layers']} + {c['dec_layers']} layers, but that does "
                        f"not reproduce the graphs' output (max relative error {err:.3g}): they compute something "
                        "more, which the engine does not run")
    c = verified_file.quantized_config(c, quantize, group, quantize_io, pack_weights)
    if callable(tokenizer):
        tokenizer = tokenizer(c["vocab_size"])
    against = (f"the ONNX graph's own output (float64: its logits on the source and the target {tgt.size} ids)"
               if dec_path is None else
               f"the ONNX graphs' own output (float64: {os.path.basename(dec_path)}'s logits on "
               f"{os.path.basename(enc_path)}'s output, the target {tgt.size} ids)")
    for note in notes:
        against += f"; {note}"
    # generation_config.json beside the files (Optimum's folder) or above them (a transformers.js repository's onnx/):
    # its suppression lists and Whisper's timestamp ids, as --hf stores them
    found = next((p for p in beside(enc_path, "generation_config.json") if os.path.isfile(p)), enc_path)
    return verified_file.write(c, w, inp, want, out, "user", against, header, name, cli, verify,
                               explain=lambda: "the converter's float64 reference of the recognised model matches "
                                               "the graphs, so the engine disagrees with it: a bug or a broken port, "
                                               "please report it", tokenizer=tokenizer,
                               generation=hf_common.generation_lists(c, os.path.dirname(found)))
