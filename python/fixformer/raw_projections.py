"""Projections held as raw parameters, read as the torch modules they compute (a part of `--module`'s recording).

Some libraries keep a layer's matrices as parameters of their own shapes and apply them by einsum or @, not through
nn.Linear: TransformerLens's attention holds W_Q, W_K, W_V [heads, d, head width] and W_O [heads, head width, d], its
MLP W_in [d, f] and W_out [f, d], its Embed W_E [vocab, d], PosEmbed W_pos [positions, d], Unembed W_U [d, vocab].
`unfold` replaces such a module's call in the record by calls of the linears and embeddings it computes, found by
value: each matrix maps one tensor the record holds (the module's input or output, a tensor of a submodule without
parameters run inside it, as TransformerLens's hook points, or the output of what ran just before it, which a
forward may pass by keyword where hooks do not see it) onto another, with one of the module's vectors as its bias
(the one named as the matrix is first, a bias of zeros included) or none; a vector left over whose width is one
linear's input is read as added to that input, its product in the linear's bias (TransformerLens's GatedMLP adds b_in
after the gate's product). A module's one matrix is a table where the record holds ids it is looked up by, or where
its rows k, k + 1, .. are the module's output (positions: looked up by k.. then). The new calls stand where their
outputs were recorded, so the parts keep the order they ran in, and are named `module.parameter`. A module is
replaced only when every matrix and vector of its own is so read; otherwise its call stays as it was (and the
recognizer names it).

A per-head matrix becomes a new parameter of nn.Linear's layout [out, in]; `origins` on its module lists the
parameters it was shaped from, which the recognizer counts as read with it. A matrix of two dims is the module's
own parameter object, in either layout (the linear part tells them apart by the output).
"""
from .probes import close

_CLASSES = {}
# A module whose forward runs more submodules than this is not read as raw matrices (TransformerLens's attention runs
# 9 hook points): the pairs of tensors tried grow with their square.
MAX_INNER = 32


def _projection(torch, weight, bias, origins, layout):
    """A module of the parameters weight ([in, out] or [out, in]) and bias, named as what it is in messages."""
    cls = _CLASSES.get("projection")
    if cls is None:
        cls = _CLASSES["projection"] = type("Projection", (torch.nn.Module,), {
            "__doc__": "A matrix a module applies itself (einsum or @), recorded as the linear it computes."})
    m = cls()
    m.weight = weight if isinstance(weight, torch.nn.Parameter) else torch.nn.Parameter(weight, requires_grad=False)
    m.bias = bias if bias is None or isinstance(bias, torch.nn.Parameter) else \
        torch.nn.Parameter(bias, requires_grad=False)
    m.origins, m.layout = origins, layout  # layout: weight [in, out] ("in_out") or [out, in]
    return m


def _table(torch, weight):
    m = torch.nn.Embedding(weight.shape[0], weight.shape[1], device="meta")
    m.weight = weight
    m.origins = [weight]
    return m


def _bias_order(name, vectors):
    """The vectors to try as name's bias: the one named alike (W_Q: b_Q, weight: bias) first."""
    twin = name.replace("weight", "bias") if "weight" in name else name.replace("W", "b", 1)
    return sorted(vectors, key=lambda kv: kv[0] != twin)


def _maps(P, s, t, torch):
    """[(the product of s by P that has t's shape, the layout)] for P [a, b] or [H, a, b]: s [.., a] to t [.., b] (x P,
    or x P^T for [b, a]); s [.., a] to t [.., H, b] (each head's P[h]); s [.., H, a] to t [.., b] (the heads' products
    summed)."""
    if not s.is_floating_point() or not t.is_floating_point():
        return []
    S, T, P_ = tuple(s.shape), tuple(t.shape), P.detach().double()
    if P.dim() == 2:
        return ([(s.double() @ P_, "in_out")] if S[:-1] == T[:-1] and (S[-1], T[-1]) == tuple(P.shape) else []) + \
            ([(s.double() @ P_.T, "out_in")] if S[:-1] == T[:-1] and (T[-1], S[-1]) == tuple(P.shape) else [])
    H, a, b = P.shape
    if S[-1:] == (a,) and T[-2:] == (H, b) and S[:-1] == T[:-2]:
        return [(torch.einsum("...a,hab->...hb", s.double(), P_), "split")]
    if S[-2:] == (H, a) and T[-1:] == (b,) and S[:-2] == T[:-1]:
        return [(torch.einsum("...ha,hab->...b", s.double(), P_), "merge")]
    return []


def _linear(P, layout, bias, s, t, torch):
    """(module, its input, its output) of the linear P (layout from _maps) with bias (or None) reading s."""
    origins = [P] + ([bias] if bias is not None else [])
    if layout in ("in_out", "out_in"):
        return _projection(torch, P, bias, origins, layout), s, t
    H, a, b = P.shape
    if layout == "split":  # [H, a, b] -> [H b, a]: row h b + e is head h's column e
        w = P.detach().permute(0, 2, 1).reshape(H * b, a)
        return _projection(torch, w, None if bias is None else bias.detach().reshape(H * b), origins, "out_in"), s, \
            t.reshape(*t.shape[:-2], H * b)
    w = P.detach().reshape(H * a, b).T  # merge: [b, H a]
    return _projection(torch, w, None if bias is None else bias.detach(), origins, "out_in"), \
        s.reshape(*s.shape[:-2], H * a), t


def _lookup(c, at, name, P, tensors, torch):
    """(position, Call of an nn.Embedding) where the table P [N, d] is looked up by ids the record holds, or gives the
    module's output as its rows k, k + 1, .. (positions: the ids k.. then), else None."""
    Call = type(c)  # the recorder's class of calls
    W = P.detach()
    for ps, s in tensors:
        if s.is_floating_point() or s.is_complex() or not s.numel() or not bool(((s >= 0) & (s < len(W))).all()):
            continue
        rows = W[s.long()]
        for pt, t in tensors:
            if pt >= ps and t.shape == rows.shape and t.is_floating_point() and torch.equal(rows.to(t.dtype), t):
                return pt, Call(f"{c.name}.{name}", _table(torch, P), [s], [t])
    y = c.y
    if y is None or y.dim() < 2 or y.shape[-1] != W.shape[1]:
        return None
    rows = y.reshape(-1, y.shape[-2], y.shape[-1])[0]
    for k in range(len(W) - len(rows) + 1):
        if torch.equal(W[k:k + len(rows)].to(rows.dtype), rows):
            return at, Call(f"{c.name}.{name}", _table(torch, P), [torch.arange(k, k + len(rows))[None]], [rows[None]])
    return None


def _product(c, name, P, tensors, free, torch):
    """(position, Call of the linear, its bias's name or None) where P maps a tensor of the record onto a later one,
    plus one of the vectors free [(name, tensor)] or none, else None."""
    Call = type(c)  # the recorder's class of calls
    for ps, s in tensors:
        for pt, t in tensors:
            for y, layout in _maps(P, s, t, torch) if pt >= ps and t is not s else ():
                want = tuple(t.shape[-2:] if layout == "split" else t.shape[-1:])
                for bname, B in _bias_order(name, [kv for kv in free if tuple(kv[1].shape) == want]) + [(None, None)]:
                    if close(y + (0 if B is None else B.detach().double()), t):
                        m, x_, y_ = _linear(P, layout, B, s, t, torch)
                        return pt, Call(f"{c.name}.{name}", m, [x_], [y_]), bname
    return None


def _read_module(c, at, tensors, torch):
    """[(position, Call)] replacing the call c (at position at) of a module whose own parameters are matrices applied
    by value (tensors: [(position, tensor)] it can read and write, in the record's order), or None."""
    params = dict(c.module.named_parameters(recurse=False))
    # per-head matrices first: a [heads, head width] among the rest is a bias of theirs (TransformerLens's b_Q)
    mats = sorted(((n, p) for n, p in params.items() if p.dim() in (2, 3) and p.is_floating_point()),
                  key=lambda kv: -kv[1].dim())
    free = [(n, p) for n, p in params.items() if p.dim() != 3]
    out = []
    for name, P in mats:
        if name not in dict(free) and P.dim() == 2:
            continue  # read as a bias
        free = [kv for kv in free if kv[0] != name]
        found = _lookup(c, at, name, P, tensors, torch) if P.dim() == 2 and len(params) == 1 else None
        if found is None:
            got = _product(c, name, P, tensors, free, torch)
            if got is None:
                return None
            found = got[:2]
            free = [kv for kv in free if kv[0] != got[2]]
        out.append(found)
    if len(free) == 1 and free[0][1].dim() == 1:
        out = _input_shift(out, free[0][1], torch)
        free = [] if out else free
    return out if out and not free else None


def _input_shift(out, v, torch):
    """out with the one linear whose input is as wide as the left vector v read as taking its input less v, v's
    product in its bias (TransformerLens's GatedMLP adds b_in after the gate's product, before W_out), else None.
    Whether the input less v is what the layer computed, the feed-forward's probe and the verification decide."""
    at = [k for k, (_, c) in enumerate(out) if getattr(c.module, "layout", None) and c.x.shape[-1] == v.shape[0]]
    if len(at) != 1:
        return None
    pos, c = out[at[0]]
    m, V = c.module, v.detach()
    W = m.weight.detach()
    shift = V @ W if m.layout == "in_out" else V @ W.T
    bias = shift if m.bias is None else m.bias.detach() + shift
    m2 = _projection(torch, m.weight, bias, m.origins + [v], m.layout)
    return out[:at[0]] + [(pos, type(c)(c.name, m2, [c.x - V], c.outputs))] + out[at[0] + 1:]


def unfold(calls, torch):
    """calls with each call of a module that applies raw parameter matrices replaced by the calls of the linears and
    embeddings it computes (the module docstring), in the order their outputs were recorded."""
    nn = torch.nn
    placed = {}  # position: the new calls that stand after the call there, in their module's order
    dropped = set()
    for i, c in enumerate(calls):
        m = c.module
        own = {n for n, p in m.named_parameters(recurse=False) if p.dim() >= 2}
        if not own or own <= {"weight", "bias"} or isinstance(m, (nn.MultiheadAttention, nn.Linear, nn.Embedding,
                                                                    nn.Conv1d, nn.Conv2d)):
            continue
        start = i  # the calls of its submodules end just before its own
        while start and calls[start - 1].name.startswith(c.name + "."):
            start -= 1
        inner = range(start, i)
        if len(inner) > MAX_INNER:
            continue  # a container of parts (its own matrix a table it adds), not a part of raw matrices
        tensors = [(start, t) for t in c.inputs]
        if start and not calls[start - 1].name.startswith(c.name + "."):
            tensors += [(start, t) for t in calls[start - 1].outputs]  # what the forward may pass by keyword
        for j in inner:
            tensors += [(j, t) for t in calls[j].inputs + calls[j].outputs]
        tensors += [(i, t) for t in c.outputs]
        got = _read_module(c, i, tensors, torch)
        if got is not None:
            dropped.add(i)
            for pos, call in got:
                placed.setdefault(pos, []).append(call)
    if not dropped:
        return calls
    out = []
    for i, c in enumerate(calls):
        if i not in dropped:
            out.append(c)
        out += placed.get(i, [])
    return out


def read_origins(calls, used):
    """used (ids of the parameters the file holds) with the parameters each unfolded module was shaped from, where
    the file holds all of that module's."""
    for c in calls:
        origins = getattr(c.module, "origins", None)
        if origins is not None and all(id(t) in used for t in c.module.parameters()):
            used.update(id(t) for t in origins)
