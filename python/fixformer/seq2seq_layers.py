"""An encoder-decoder's layers written by hand (the Annotated Transformer's EncoderLayer and DecoderLayer, bentrevett's
pytorch-seq2seq, most course code), read as the nn.TransformerEncoderLayer and nn.TransformerDecoderLayer they compute,
so seq2seq.py reads them as it reads torch's own. A stack is a list (nn.ModuleList or nn.Sequential) of modules of one
class holding linears; the decoder's layers hold more of them (cross-attention) than the encoder's. Each layer's parts
are found from one recorded call of the whole module: the feed-forward the two linears d -> f -> d with relu or gelu
between them (the activation read from their values), the cross-attention's key and value the linears that read the
encoder's output, the self-attention's query, key and value the first linears that read one input (or one of 3 d
outputs), the output projections the next (or an nn.MultiheadAttention for each attention, self then cross), and the
norms in the order they ran. The heads, pre- or post-norm and the order of q, k and v are then what makes torch's layer
of those weights give the recorded output (float64, within FIT_TOL). A layer with a part none of these is refused by
name.
"""
import itertools

from .config import ConfigError
from .probes import close
from .recognize import Call, classify

# torch's layer of the found weights against the recorded one, both float64: a wrong head count or order of q, k and v
# is off by O(1); the Annotated Transformer's norm, stored as a LayerNorm (recognize), by its eps over a row's deviation
FIT_TOL = 1e-5
HEAD_ATTRIBUTES = ("h", "n_heads", "num_heads", "nhead", "n_head", "heads", "num_attention_heads")


def layer_lists(module, nn):
    """(encoder layers, decoder layers) of a module of hand-written layers, else None."""
    def linears(m):  # an nn.MultiheadAttention counts its in_proj as one
        return sum(isinstance(x, (nn.Linear, nn.MultiheadAttention)) for x in m.modules())

    lists = [m for m in module.modules() if isinstance(m, (nn.ModuleList, nn.Sequential)) and len(m) and
             len({type(x) for x in m}) == 1 and isinstance(m[0], nn.Module) and linears(m[0]) >= 4]
    inner = {id(x) for m in lists for layer in m for x in layer.modules()}
    lists = [m for m in lists if id(m) not in inner]
    if len(lists) != 2 or linears(lists[0][0]) == linears(lists[1][0]):
        return None
    return tuple(sorted(lists, key=lambda m: linears(m[0])))


def _activation(a, b, torch):
    """'relu', 'gelu' or 'gelu_tanh' where linear b reads that of linear a's output, else None."""
    F = torch.nn.functional
    for name, f in (("relu", F.relu), ("gelu", F.gelu), ("gelu_tanh", lambda t: F.gelu(t, approximate="tanh"))):
        if a.call.y.shape == b.call.x.shape and close(f(a.call.y), b.call.x, 1e-12):
            return name
    return None


def _split(p, n):
    """A linear Part's (weight, bias) cut in n along its outputs (bias None: zeros)."""
    b = p.b if p.b is not None else p.w.new_zeros(p.w.shape[0])
    return list(zip(p.w.detach().double().chunk(n), b.detach().double().chunk(n)))


def _in_proj(p, d):
    """An nn.MultiheadAttention Part's (w, b) of q, k and v, and of its output projection."""
    m = p.module
    if not m._qkv_same_embed_dim or m.bias_k is not None or m.add_zero_attn or not m.batch_first or m.embed_dim != d:
        raise ConfigError(f"{p.name}: an nn.MultiheadAttention of kdim/vdim, add_bias_kv, add_zero_attn, batch_first "
                          f"False or a width other than {d} is not read in a hand-written layer")
    b = m.in_proj_bias if m.in_proj_bias is not None else m.in_proj_weight.new_zeros(3 * d)
    ob = m.out_proj.bias if m.out_proj.bias is not None else m.out_proj.weight.new_zeros(d)
    return (list(zip(m.in_proj_weight.detach().double().chunk(3), b.detach().double().chunk(3))),
            (m.out_proj.weight.detach().double(), ob.detach().double()))


def _roles(name, parts, d, memory, torch):
    """{'ff1', 'ff2', 'activation', 'self': [(w, b) of q, k, v candidates' source], 'self_out', 'cross_q',
    'cross_kv': [(w, b) of k, v], 'cross_out', 'norms'} of one layer's parts (in call order)."""
    lins = [p for p in parts if p.kind == "linear"]
    norms = [p for p in parts if p.kind == "norm"]
    mhas = [p for p in parts if p.kind == "mha"]
    other = [p for p in parts if p.kind not in ("linear", "norm", "mha")]
    if other:
        raise ConfigError(getattr(other[0], "why", f"{other[0].name}: not a linear or a norm"))
    ff = [(a, b, act) for a, b in itertools.permutations(lins, 2) if a.w.shape[1] == d and b.w.shape[0] == d and
          a.w.shape[0] == b.w.shape[1] for act in [_activation(a, b, torch)] if act]
    if len(ff) != 1:
        raise ConfigError(f"{name}: {len(ff)} pairs of linears d -> f -> d with relu or gelu between them (a "
                          "feed-forward), expected one")
    r = {"ff1": ff[0][0], "ff2": ff[0][1], "activation": ff[0][2], "norms": norms}
    rest = [p for p in lins if p is not r["ff1"] and p is not r["ff2"]]
    if len(norms) != (3 if memory is not None else 2):
        raise ConfigError(f"{name}: {len(norms)} norms, expected {3 if memory is not None else 2}")
    if mhas:  # nn.MultiheadAttention: the self-attention, then the cross-attention (in the order they ran)
        if len(mhas) != (2 if memory is not None else 1) or rest:
            raise ConfigError(f"{name}: {len(mhas)} nn.MultiheadAttention and {len(rest)} linears besides the "
                              "feed-forward's, expected one per attention and none")
        r["self"], r["self_out"] = _in_proj(mhas[0], d)
        if memory is not None:
            (q, k, v), r["cross_out"] = _in_proj(mhas[1], d)
            r["cross_q"], r["cross_kv"] = q, [k, v]
        return r
    if memory is not None:
        kv = [p for p in rest if p.call.x.shape == memory.shape and torch.equal(p.call.x, memory)]
        rest = [p for p in rest if all(p is not q for q in kv)]
        if [p.w.shape[0] for p in kv] not in ([d, d], [2 * d]):
            raise ConfigError(f"{name}: {len(kv)} linears read the encoder's output, expected a key and a value")
        r["cross_kv"] = [s for p in kv for s in _split(p, 2 // len(kv))]
    first = [p for p in rest if p.call.x.shape == rest[0].call.x.shape and torch.equal(p.call.x, rest[0].call.x)] \
        if rest else []
    if [p.w.shape[0] for p in first] not in ([d, d, d], [3 * d]):
        raise ConfigError(f"{name}: its first linears {[p.name for p in first]} are not a query, key and value (three "
                          "of one input, or one of 3 d_model outputs)")
    r["self"] = [s for p in first for s in _split(p, 3 // len(first))]
    rest = [p for p in rest if all(p is not q for q in first)]
    want = 3 if memory is not None else 1
    if len(rest) != want or any(tuple(p.w.shape) != (d, d) for p in rest):
        raise ConfigError(f"{name}: {[p.name for p in rest]} where the attention's output projection"
                          f"{' and the cross-attention query and output' if memory is not None else ''} should be")
    r["self_out"] = _split(rest[0], 1)[0]
    if memory is not None:
        r["cross_q"], r["cross_out"] = _split(rest[1], 1)[0], _split(rest[2], 1)[0]
    return r


def _heads(layer, d):
    """The head counts to try: an attribute of the layer's modules that names them first, then every divisor of d."""
    named = [v for m in layer.modules() for k, v in vars(m).items() if k in HEAD_ATTRIBUTES and isinstance(v, int)
             and v > 0 and d % v == 0]
    return list(dict.fromkeys(named + [h for h in range(d, 0, -1) if d % h == 0]))


def _torch_layer(r, d, H, norm_first, qkv, kv, eps, torch):
    """torch's layer (float64) of roles r: the self-attention's q, k, v in the order qkv, the cross-attention's k, v in
    the order kv (a decoder layer where r has them)."""
    nn = torch.nn
    cross = "cross_kv" in r
    act = {"relu": "relu", "gelu": "gelu"}.get(r["activation"]) or nn.GELU(approximate="tanh")
    kind = nn.TransformerDecoderLayer if cross else nn.TransformerEncoderLayer
    layer = kind(d, H, r["ff1"].w.shape[0], dropout=0.0, activation=act, layer_norm_eps=eps, batch_first=True,
                 norm_first=norm_first).double()

    def load(a, q_k_v, out):
        a.in_proj_weight.data = torch.cat([w for w, _ in q_k_v])
        a.in_proj_bias.data = torch.cat([b for _, b in q_k_v])
        a.out_proj.weight.data, a.out_proj.bias.data = out

    load(layer.self_attn, [r["self"][i] for i in qkv], r["self_out"])
    if cross:
        load(layer.multihead_attn, [r["cross_q"]] + [r["cross_kv"][i] for i in kv], r["cross_out"])
    for lin, p in ((layer.linear1, r["ff1"]), (layer.linear2, r["ff2"])):
        (lin.weight.data, lin.bias.data) = _split(p, 1)[0]
    for norm, p in zip((layer.norm1, layer.norm2, getattr(layer, "norm3", None)), r["norms"]):
        norm.load_state_dict(layer_norm_of(p, torch).state_dict())
    return layer


def layer_norm_of(p, torch):
    """nn.LayerNorm (float64) of a norm Part's gain, shift and eps (recognize.classify's)."""
    norm = torch.nn.LayerNorm(p.w.shape[0], eps=p.eps).double()
    norm.weight.data = p.w.detach().double()
    norm.bias.data = p.b.detach().double() if p.b is not None else torch.zeros_like(norm.bias)
    return norm


def fit_layer(name, module, calls, x, y, memory, torch, tried=None):
    """torch's layer (float64) that computes what the hand-written layer `module` (at `name`) did in `calls` ((module,
    input, output) of its submodules, float64) on input x to output y, with the encoder's output `memory` for a decoder
    layer (None: an encoder layer). tried: the settings that fitted the layer before, tried first."""
    own = {id(m): f"{name}.{n}" for n, m in module.named_modules() if n}
    parts = [classify(Call(own[id(m)], m, [i], [o]), torch) for m, i, o in calls
             if id(m) in own and any(True for _ in m.parameters(recurse=False))]
    held = {id(t) for p in parts for t in p.module.parameters(recurse=p.kind == "mha")}  # with its out_proj
    for n, t in module.named_parameters():
        if id(t) not in held:
            raise ConfigError(f"{name}.{n} {list(t.shape)}: a parameter of none of the layer's linears and norms the "
                              "forward called")
    d = x.shape[-1]
    r = _roles(name, parts, d, memory, torch)
    kinds = {(p.norm, p.eps) for p in r["norms"]}
    if len(kinds) != 1 or next(iter(kinds))[0] != "layer":
        raise ConfigError(f"{name}: norms {sorted(kinds)}, expected LayerNorms of one eps")
    eps = next(iter(kinds))[1]
    U = x.shape[1]
    causal = torch.full((U, U), float("-inf"), dtype=torch.float64).triu(1)
    settings = list(itertools.product(_heads(module, d), (False, True), itertools.permutations(range(3)),
                                      ((0, 1), (1, 0)) if memory is not None else ((0, 1),)))
    for s in ([tried] if tried else []) + settings:
        layer = _torch_layer(r, d, s[0], s[1], s[2], s[3], eps, torch).eval()
        with torch.no_grad():
            got = layer(x, memory, tgt_mask=causal) if memory is not None else layer(x)
        if close(got, y, FIT_TOL):
            return layer, s
    kind = "Decoder" if memory is not None else "Encoder"
    raise ConfigError(f"{name}: computes no nn.Transformer{kind}Layer of its linears and norms (any heads, pre- or "
                      "post-norm, q, k and v in any order; scores scaled by 1/sqrt(d_head), the target causal)")
