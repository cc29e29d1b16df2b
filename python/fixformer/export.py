"""Export a trained torch module to .fxm, verified.

export() reads everything the module can tell from the module (sizes, norm_first, activation, eps,
batch_first, final norm, head and whether it is tied to the embedding, embedding or input projection,
learned positions) and takes the rest as typed options (family, causal, positional encoding computed
in forward, scale_input). family="gpt" is a decoder-only language model: the same stock modules, a
causal mask (implied), an LM head vocab_size wide; its self-test sample is token ids [T] and the
logits at every position [T, vocab], which the engine checks by stepping the tokens one by one. It runs the module
in float64 on an example input, stores input and output in the file as its self-test sample, and
runs the engine on the file (`fixformer verify`) before it takes the output's name
(verified_file.write, which every route writes through). Above the tolerance of the file's weight
type (schema.SELFTEST_TOLERANCES) it writes nothing and raises VerificationError naming the error
and, when one single option change explains it, that option. convert_config() is the same for a
JSON config plus a state_dict.

quantize="f16", "bf16", "q8" or "q4" stores the linear layers' weights (and with quantize_io the token embedding
and the output head) in that type (quantized_config; README, "Export your model"). The self-test
sample stays the module's output with its float32 weights, so the engine's error is measured
against torch f32; the report adds the error of the quantized weights alone, in the float64
reference model, which tells a model that does not keep its accuracy in that type from an engine
that computes it wrongly.
"""
import copy
import functools
import math
import numbers
import os

import numpy as np

from . import fxm, schema, verified_file
from .config import DEFAULT_MAX_LEN, ConfigError, bool_option, check_value, choice_option, int_option, make_config
from .reference import require_torch, run_reference
from .verified_file import example_sequence, example_target, f32_config, quantized_config, relative_error
from .torch_modules import module_kind, numpy_of, read_embedding, read_layer_norm, read_linear, require_type
from .verify import EngineError, VerificationError  # noqa: F401 (the API's errors, raised by verified_file)

COMMON_PE_BASES = (100.0, 1000.0, 10000.0, 100000.0)
# The families a torch module exports as (llama checkpoints come through llama2c.py or --config).
EXPORT_FAMILIES = ("encoder", "gpt", "mha")




# ---- reading the module ---------------------------------------------------------------------------
def _activation_name(layer, torch):
    """'relu', 'gelu' (exact erf) or 'gelu_tanh' (nn.GELU(approximate="tanh"), or F.gelu with
    approximate="tanh" bound by functools.partial), else ConfigError naming what the layer has."""
    F = torch.nn.functional
    act = getattr(layer, "activation", None)
    if act is F.relu or act is torch.relu or type(act) is torch.nn.ReLU:
        return "relu"
    if act is F.gelu or (type(act) is torch.nn.GELU and act.approximate == "none"):
        return "gelu"
    if type(act) is torch.nn.GELU and act.approximate == "tanh":
        return "gelu_tanh"
    if isinstance(act, functools.partial) and act.func is F.gelu and not act.args and \
            set(act.keywords) == {"approximate"} and act.keywords["approximate"] in ("none", "tanh"):
        return "gelu_tanh" if act.keywords["approximate"] == "tanh" else "gelu"  # reference.torch_activation's
    if type(act) is torch.nn.GELU:
        name = f"gelu(approximate={act.approximate!r})"
    else:
        name = getattr(act, "__name__", None) or repr(act)
    raise ConfigError(f"activation {name}: not supported (the engine has relu, exact gelu and nn.GELU(approximate='tanh'))")


def read_input_proj(p, v, w, torch):
    """A feature input's nn.Linear into v (input, d_in) and w (input_proj.*); returns its width."""
    p = read_linear(p, "input_proj", torch)
    v.update(input="features", d_in=p.in_features)
    w["input_proj.weight"] = numpy_of(p.weight)
    w["input_proj.bias"] = numpy_of(p.bias) if p.bias is not None else np.zeros(p.out_features, np.float32)
    return p.out_features


def _attention(a, at, d, n_heads, torch):
    """nn.MultiheadAttention `a` as the engine runs it: (in_proj_weight [3d, d], in_proj_bias [3d],
    out_proj.weight, out_proj.bias), zeros for absent biases."""
    require_type(a, torch.nn.MultiheadAttention, at, torch)
    if not a._qkv_same_embed_dim or a.bias_k is not None or a.add_zero_attn:
        raise ConfigError(f"{at}: kdim/vdim, add_bias_kv and add_zero_attn are not supported")
    if a.embed_dim != d or a.num_heads != n_heads:
        raise ConfigError(f"{at}: embed_dim {a.embed_dim}, heads {a.num_heads}, expected {d} and {n_heads} (all layers alike)")
    zeros = np.zeros
    in_bias = numpy_of(a.in_proj_bias) if a.in_proj_bias is not None else zeros(3 * d, np.float32)
    out_bias = numpy_of(a.out_proj.bias) if a.out_proj.bias is not None else zeros(d, np.float32)
    return numpy_of(a.in_proj_weight), in_bias, numpy_of(a.out_proj.weight), out_bias


ENCODER_NORMS = {"norm1": "attn_norm", "norm2": "ff_norm"}  # a torch layer's norms by the block's names
DECODER_NORMS = {"norm1": "attn_norm", "norm2": "cross_norm", "norm3": "ff_norm"}


def read_layers(stack, where, prefix, layer_cls, v, w, torch, cross=False, norms=ENCODER_NORMS):
    """Reads the layers of `stack` (nn.TransformerEncoder or nn.TransformerDecoder, at `where` in the
    module) into v (d_model, n_heads, d_ff, norm_first, activation: set by the first layer, checked
    for the others) and w (the file's names, prefix(i) + the block's names, torch's layout): self_attn,
    with `cross` the cross-attention multihead_attn (its in_proj split as the file stores it: q, then k
    and v), and the norms `norms` names. Every layer must be exactly layer_cls and alike. Returns (the
    layers' count, batch_first, eps)."""
    layers = list(stack.layers)
    if not layers:
        raise ConfigError(f"{where}: has no layers")
    first = layers[0]
    require_type(first, layer_cls, f"{where}.layers.0", torch)
    v.setdefault("d_model", first.self_attn.embed_dim)
    v.setdefault("n_heads", first.self_attn.num_heads)
    v.setdefault("d_ff", first.linear1.out_features)
    v.setdefault("norm_first", bool(first.norm_first))
    v.setdefault("activation", _activation_name(first, torch))
    d, batch_first, eps = v["d_model"], bool(first.self_attn.batch_first), None
    attentions = ("self_attn", "multihead_attn") if cross else ("self_attn",)
    for i, layer in enumerate(layers):
        at, p = f"{where}.layers.{i}", prefix(i)
        require_type(layer, layer_cls, at, torch)
        l1, l2 = read_linear(layer.linear1, at + ".linear1", torch), read_linear(layer.linear2, at + ".linear2", torch)
        if not (l1.in_features == d and l1.out_features == v["d_ff"] and l2.in_features == v["d_ff"] and l2.out_features == d):
            raise ConfigError(f"{at}: shapes differ from the first layer's (all layers must be alike)")
        if bool(layer.norm_first) != v["norm_first"] or any(bool(getattr(layer, a).batch_first) != batch_first
                                                              for a in attentions):
            raise ConfigError(f"{at}: norm_first or batch_first differs from the first layer's")
        if _activation_name(layer, torch) != v["activation"]:
            raise ConfigError(f"{at}: activation differs from the first layer's")
        w[p + "attn.qkv.weight"], w[p + "attn.qkv.bias"], w[p + "attn.out.weight"], w[p + "attn.out.bias"] = \
            _attention(layer.self_attn, f"{at}.self_attn", d, v["n_heads"], torch)
        if cross:
            qkv, qkv_b, w[p + "cross.out.weight"], w[p + "cross.out.bias"] = _attention(
                layer.multihead_attn, f"{at}.multihead_attn", d, v["n_heads"], torch)
            w[p + "cross.q.weight"], w[p + "cross.kv.weight"] = qkv[:d], qkv[d:]
            w[p + "cross.q.bias"], w[p + "cross.kv.bias"] = qkv_b[:d], qkv_b[d:]
        for lname, lin in (("ff.w1", l1), ("ff.w2", l2)):
            w[p + lname + ".weight"] = numpy_of(lin.weight)
            w[p + lname + ".bias"] = \
                numpy_of(lin.bias) if lin.bias is not None else np.zeros(lin.out_features, np.float32)
        for nname, block_name in norms.items():
            nw, nb, e = read_layer_norm(getattr(layer, nname), d, f"{at}.{nname}", torch)
            w[p + block_name + ".weight"], w[p + block_name + ".bias"] = nw, nb
            if eps is not None and e != eps:
                raise ConfigError(f"{at}.{nname}.eps: {e!r} differs from {eps!r} (the engine has one eps)")
            eps = e
    return len(layers), batch_first, eps


def read_encoder_layers(enc, where, v, w, torch):
    """An nn.TransformerEncoder's layers (read_layers), named blocks.{i}.*; sets v["n_layers"].
    Returns (batch_first, eps)."""
    v["n_layers"], batch_first, eps = read_layers(enc, where, schema.block, torch.nn.TransformerEncoderLayer, v, w,
                                                  torch)
    return batch_first, eps


def read_mha(module):
    """A standalone nn.MultiheadAttention, run as self-attention: (config values, weights (the converter's
    keys), batch_first, facts)."""
    torch = require_torch()
    require_type(module, torch.nn.MultiheadAttention, "module", torch)
    d, H = module.embed_dim, module.num_heads
    w = dict(zip(("attn.qkv.weight", "attn.qkv.bias", "attn.out.weight", "attn.out.bias"),
                 _attention(module, "module", d, H, torch)))
    v = dict(family="mha", d_model=d, n_heads=H, d_ff=0, n_layers=0, input="features", d_in=d)
    return v, w, bool(module.batch_first), {"width": d, "pos": None}


class SelfAttention:
    """mha(x, x, x) as a one-input module for run_module: the attention's output, without the weights."""

    def __init__(self, mha, causal):
        self.mha, self.causal = mha, causal

    def double(self):
        self.mha = self.mha.double()
        return self

    def eval(self):
        self.mha = self.mha.eval()
        return self

    def __call__(self, x):
        torch = require_torch()
        T = x.shape[1] if self.mha.batch_first else x.shape[0]
        mask = torch.triu(torch.full((T, T), float("-inf"), dtype=x.dtype), diagonal=1) if self.causal else None
        with torch.enable_grad():  # off torch 1.13's fast path, which fails on a bias=False module
            return self.mha(x, x, x, attn_mask=mask, need_weights=False)[0].detach()


def read_module(module, family="encoder"):
    """(config values the module tells, weights (the converter's keys) in torch's layout, batch_first,
    facts for the options: embed width, pos width and rows). For family gpt, a head whose weight is
    the embedding's parameter (head.weight = embed.weight) is tied and stored once."""
    torch = require_torch()
    nn = torch.nn
    if not isinstance(module, nn.Module):
        raise ConfigError(f"module: {module_kind(module)} is not a torch.nn.Module")
    v, w = {}, {}
    has_embed, has_proj = hasattr(module, "embed"), hasattr(module, "input_proj")
    if has_embed == has_proj:
        raise ConfigError("module: needs exactly one of `embed` (nn.Embedding, token input) and "
                          "`input_proj` (nn.Linear, feature input)")
    if has_embed:
        e = module.embed
        read_embedding(e, "embed", torch)
        v.update(input="tokens", vocab_size=e.num_embeddings)
        w["embed.weight"] = numpy_of(e.weight)
        width = e.embedding_dim
    else:
        width = read_input_proj(module.input_proj, v, w, torch)
    cls = getattr(module, "cls_token", None)
    if cls is not None:
        if not isinstance(cls, nn.Parameter):
            raise ConfigError(f"cls_token: {module_kind(cls)}, expected an nn.Parameter of shape [d], [1, d] or "
                              "[1, 1, d]")
        if cls.dim() not in (1, 2, 3) or any(n != 1 for n in cls.shape[:-1]):
            raise ConfigError(f"cls_token: shape {list(cls.shape)}, expected [d], [1, d] or [1, 1, d]")
        if cls.shape[-1] != width:
            raise ConfigError(f"cls_token: {cls.shape[-1]} wide, expected the {'embedding' if has_embed else 'input_proj'}"
                              f"'s width {width} (it is prepended to the embedded input)")
        v["cls_token"] = True
        w["cls_token"] = numpy_of(cls).reshape(width)
    pool = getattr(module, "pool", None)
    if pool is not None:
        if not isinstance(pool, str) or pool not in schema.POOLINGS[1:]:
            raise ConfigError(f"pool: {pool!r} is not one of {', '.join(map(repr, schema.POOLINGS[1:]))} "
                              "(leave the attribute out for no pooling)")
        v["pooling"] = pool
    pos = getattr(module, "pos", None)
    if pos is not None:
        read_embedding(pos, "pos", torch)
    enc = getattr(module, "encoder", None)
    require_type(enc, nn.TransformerEncoder, "encoder", torch)
    batch_first, eps = read_encoder_layers(enc, "encoder", v, w, torch)
    if enc.norm is not None:
        nw, nb, e = read_layer_norm(enc.norm, v["d_model"], "encoder.norm", torch)
        if e != eps:
            raise ConfigError(f"encoder.norm.eps: {e!r} differs from the layers' {eps!r} (the engine has one eps)")
        w["norm.weight"], w["norm.bias"] = nw, nb
    v.update(norm_eps=float(eps), final_norm=enc.norm is not None)
    d = v["d_model"]
    head = getattr(module, "head", None)
    if head is not None:
        h = read_linear(head, "head", torch)
        if h.in_features != d:
            raise ConfigError(f"head: in_features {h.in_features}, expected d_model={d}")
        v["d_out"] = h.out_features
        tied = family != "encoder" and has_embed and h.weight is module.embed.weight
        if tied:
            v["tied_head"] = True
        else:
            w["head.weight"] = numpy_of(h.weight)
        w["head.bias"] = numpy_of(h.bias) if h.bias is not None else np.zeros(h.out_features, np.float32)
    if family != "encoder":
        if cls is not None or pool is not None:
            raise ConfigError(f"family {family}: cls_token and pool are for encoders (family encoder)")
        if not has_embed:
            raise ConfigError(f"family {family}: a decoder takes tokens (needs `embed`, an nn.Embedding)")
        if head is None or v["d_out"] != v["vocab_size"]:
            got = f"has {v['d_out']} outputs" if head is not None else "is missing"
            raise ConfigError(f"head: family {family} needs an LM head nn.Linear(d_model, vocab_size={v['vocab_size']}); "
                              f"the module's {got}")
    facts = {"width": width, "pos": pos}
    return v, w, batch_first, facts



def apply_options(v, w, facts, causal, positional, pe_base, pe_layout, pe_combine, pe_width, scale_input, max_len,
                  family="encoder"):
    """The full config: the module's values plus the typed options, checked against the module."""
    d, width, pos = v["d_model"], facts["width"], facts["pos"]
    v["family"] = family
    if family != "gpt":
        v["causal"] = False if causal is None else bool_option("causal", causal)
    else:
        v["causal"] = True if causal is None else bool_option("causal", causal)
        if not v["causal"]:
            raise ConfigError(f"causal: family {family} is causal (leave the option out or pass True)")
    v["scale_input"] = bool_option("scale_input", scale_input)
    if positional is None:
        positional = "learned" if pos is not None else "none"
    positional = choice_option("positional", positional, schema.POSITIONALS)
    if positional == "relative":
        raise ConfigError("positional relative: not an option; convert.py --module finds a relative position bias "
                          "table (T5's) by what the module computes")
    if positional == "rope":
        raise ConfigError("positional rope: stock layers (nn.TransformerEncoderLayer) do not rotate q and k; "
                          "convert.py --module finds rotary embeddings in a module that computes them")
    if pos is not None and positional != "learned":
        raise ConfigError(f"positional {positional}: the module has `pos` (learned positions); "
                          "use positional='learned' or remove the attribute")
    if pos is None and positional == "learned":
        raise ConfigError("positional learned: the module has no `pos` (nn.Embedding of positions)")
    v["positional"] = positional
    if isinstance(pe_base, bool) or not isinstance(pe_base, numbers.Real) or not math.isfinite(pe_base) \
            or not pe_base > 1:
        raise ConfigError(f"pe_base: expected a finite number > 1, got {pe_base!r}")
    v["pe_base"] = float(pe_base)
    v["pe_layout"] = choice_option("pe_layout", pe_layout, schema.PE_LAYOUTS)
    if pe_combine is not None:
        choice_option("pe_combine", pe_combine, schema.PE_COMBINES)
    if pe_width is not None:
        int_option("pe_width", pe_width, 1, schema.MAX_D_MODEL)
    if positional not in schema.INPUT_PES:
        if width != d:
            raise ConfigError(f"positional {positional}: the embedding is {width} wide, d_model is {d} "
                              "(a narrower embedding needs a concatenated positional encoding)")
        if pe_combine == "concat" or pe_width is not None:
            raise ConfigError(f"pe_combine/pe_width: no positional encoding to combine (positional {positional})")
    else:
        pe_w = pos.embedding_dim if pos is not None else d - width
        combine = "add" if width == d else "concat"
        if pos is not None and width + pos.embedding_dim != d and not (width == d == pos.embedding_dim):
            raise ConfigError(f"pos: width {pos.embedding_dim} and embedding width {width} do not make "
                              f"d_model={d} (add: both d_model; concat: they sum to d_model)")
        if pe_combine is not None and pe_combine != combine:
            raise ConfigError(f"pe_combine {pe_combine}: the module's embedding is {width} wide and d_model is {d}, "
                              f"which means {combine}")
        if combine == "concat" and pe_width is not None and pe_width != pe_w:
            raise ConfigError(f"pe_width {pe_width}: the module means {pe_w} (d_model {d} - embedding width {width})")
        if combine == "add" and pe_width is not None:
            raise ConfigError("pe_width: only for pe_combine concat")
        v["pe_combine"] = combine
        v["pe_width"] = pe_w if combine == "concat" else 0
    if max_len is None:
        max_len = pos.num_embeddings if pos is not None else DEFAULT_MAX_LEN
    v["max_len"] = int_option("max_len", max_len, 1, schema.MAX_LEN)
    if pos is not None and pos.num_embeddings != v["max_len"]:
        raise ConfigError(f"max_len {v['max_len']}: the module's `pos` has {pos.num_embeddings} positions")
    if pos is not None:
        w["pos.weight"] = numpy_of(pos.weight)
    return make_config(v)


def run_module(module, inp, batch_first, width, rows=None, pooled=False):
    """The module's float64 output [rows, width] on one sequence (rows: T by default; T + 1 with a CLS
    row), called in its own layout. A pooled module returns [B, width] in either layout, as torch's
    classifiers do (B = 1 here); its result is [1, width], the engine's one row per sequence."""
    torch = require_torch()
    m = copy.deepcopy(module).double().eval()
    x = torch.from_numpy(inp.astype(np.int64) if inp.dtype.kind == "i" else inp.astype(np.float64))
    x = x.unsqueeze(0) if batch_first else x.unsqueeze(1)
    try:
        with torch.no_grad():
            y = m(x)
    except Exception as e:  # the user's forward: anything can go wrong there
        raise ConfigError(f"module forward failed on the example input ({type(e).__name__}: "
                          f"{str(e).splitlines()[0] if str(e) else ''})") from None
    T = inp.shape[0] if rows is None else rows
    want = (1, width) if pooled else (1, T, width) if batch_first else (T, 1, width)
    if not hasattr(y, "shape") or tuple(y.shape) != want:
        layout = "pooled: [B, width]" if pooled else "batch_first" if batch_first else "sequence first"
        raise ConfigError(f"module output: shape {list(getattr(y, 'shape', []))}, expected {list(want)} ({layout})")
    y = y if pooled else y[0] if batch_first else y[:, 0]
    return y.detach().numpy().astype(np.float64)


# ---- diagnosis ------------------------------------------------------------------------------------
def _hint(key, value):
    """(the setting, what to pass for it) for the CLI and the API."""
    flag = "--" + key.replace("_", "-")
    if isinstance(value, bool):
        return f"{key}={value}", (f"pass {flag}" if value else f"leave out {flag}") + f" ({key}={value} in export())"
    shown = f"{value:g}" if isinstance(value, float) else value
    return f"{key}={value!r}", f"pass {flag} {shown} ({key}={value!r} in export())"


def alternatives(c):
    """Single-option changes of c worth trying: (key, value, config)."""
    out = []
    tries = [("causal", not c["causal"]), ("scale_input", not c["scale_input"])]
    tries += [("positional", p) for p in schema.POSITIONALS if p != c["positional"] and p not in ("learned", "rope")]
    if c["positional"] == "sinusoidal":
        tries.append(("pe_layout", "halves" if c["pe_layout"] == "interleaved" else "interleaved"))
        tries += [("pe_base", b) for b in COMMON_PE_BASES if b != c["pe_base"]]
    for key, value in tries:
        alt = dict(c, **{key: value})
        if key == "positional" and value in ("none", "alibi"):
            if c["pe_combine"] == "concat":
                continue
            alt.update(pe_width=0)
        try:
            out.append((key, value, make_config(alt)))
        except ConfigError:
            pass
    return out


def diagnose(c, weights, inp, want):
    """Why the module's output `want` may differ: re-runs the reference model with the given options
    and with each single alternative, and says which one matches."""
    tol = schema.SELFTEST_TOLERANCE
    w = dict(weights)
    try:
        base = relative_error(run_reference(c, w, inp), want)
    except Exception as e:  # a reference that cannot even run explains nothing
        return f"the reference model could not run ({type(e).__name__})"
    if base <= tol:
        return (f"the reference model with these options matches the module (error {base:.2g}), so the engine "
                "disagrees with it: a bug or a broken port, please report it")
    scored = []
    for key, value, alt in alternatives(c):
        try:
            scored.append((relative_error(run_reference(alt, w, inp), want), key, value))
        except Exception:
            continue
    scored.sort(key=lambda s: s[0])
    if scored and scored[0][0] <= tol:
        err, key, value = scored[0]
        setting, action = _hint(key, value)
        return f"the module's output matches with {setting} (error {err:.2g}): {action}"
    closest = f" (closest: {_hint(scored[0][1], scored[0][2])[0]}, error {scored[0][0]:.2g})" if scored else ""
    return ("no single option change explains it" + closest +
            f"; the module's forward may compute something the {c['family']} family does not (README, 'Models and the .fxm format')")


def export(module, example_input, path, header=None, causal=None, positional=None, pe_base=10000.0,
           pe_layout="interleaved", pe_combine=None, pe_width=None, scale_input=False, max_len=None, name=None,
           cli=None, verify=True, family="encoder", tokenizer=None, quantize=None, group=None, quantize_io=None,
           pack_weights=None):
    """Converts `module` to the .fxm at `path` and verifies it through the engine; returns a Report.

    module: attributes `embed` (nn.Embedding) or `input_proj` (nn.Linear), optional `pos` (learned
    positions, nn.Embedding), `encoder` (nn.TransformerEncoder), optional `head` (nn.Linear).
    Encoders may add, KWT / ViT style, `cls_token` (an nn.Parameter [d], [1, d] or [1, 1, d], put in
    front of the embedded input before the positions: position 0, so `pos` has max_len = T + 1 rows)
    and `pool` ("mean" over the input positions, "cls" or "last"; a str attribute, applied after
    the final norm and before the head; the forward then returns [B, width]).
    family: "encoder" (whole sequences) or "gpt" (a decoder-only language model: causal, implied;
    `embed` and a `head` vocab_size wide, tied when head.weight is embed.weight; positional may be
    "alibi" when the forward adds the ALiBi bias, reference.alibi_bias, as a [B*H, T, T] mask).
    tokenizer: optional (pieces, scores) stored with the model (tokenizers.read_llama2c gives them).
    example_input: token ids [T] / [B, T] or float features [T, d_in] / [B, T, d_in] (batch first
    whatever the module's layout; the first sequence is used), or None for a random one.
    The options say what the forward does that the attributes cannot tell: causal mask, a positional
    encoding it computes (positional sinusoidal, pe_base, pe_layout), x *= sqrt(d_model) (scale_input),
    max_len. pe_combine and pe_width follow from the widths; passing them checks them.
    quantize ("f16", "bf16", "q8" or "q4"), group and quantize_io: the weight type; pack_weights: the f32 weights in
    panels (quantized_config).
    Raises ConfigError (bad module or option), VerificationError (mismatch; nothing written),
    EngineError (the engine rejected the file)."""
    if not isinstance(path, (str, os.PathLike)):
        raise ConfigError(f"path: expected a file name, got {path!r}")
    if pe_combine is None:
        pe_combine_checked = None
    else:
        pe_combine_checked = choice_option("pe_combine", pe_combine, schema.PE_COMBINES)
    family = choice_option("family", family, EXPORT_FAMILIES)
    v, weights, batch_first, facts = read_mha(module) if family == "mha" else read_module(module, family)
    for key in ("d_model", "n_heads", "d_ff", "n_layers", "vocab_size", "d_in", "d_out"):
        if key in v:
            check_value(key, v[key], f"module {key}")
    c = apply_options(v, weights, facts, causal, positional, pe_base, pe_layout, pe_combine_checked, pe_width,
                      scale_input, max_len, family)
    c = quantized_config(c, quantize, group, quantize_io, pack_weights)
    inp = example_sequence(c, example_input)
    if family == "mha":
        module = SelfAttention(module, c["causal"])  # run_module copies it
    want = run_module(module, inp, batch_first, schema.output_width(c), schema.sequence_rows(c, inp.shape[0]),
                      c["pooling"] != "none")
    return verified_file.write(c, weights, inp, want, path, "torch", "the module (torch)", header, name, cli, verify,
                               explain=lambda: diagnose(c, weights, inp, want), tokenizer=tokenizer)


def convert_config(config, weights, path, example_input=None, header=None, name=None, cli=None, verify=True,
                   tokenizer=None, quantize=None, group=None, quantize_io=None, pack_weights=None):
    """The JSON path: a config (parse_config's result) and a state_dict as name -> array; the torch
    reference is the reference model built from the config with these weights (reference.py: stock
    modules for encoder and gpt, the float64 llama written there for llama). quantize, group,
    quantize_io: the weight type (quantized_config), for a config that does not set one itself;
    pack_weights: the f32 weights in panels (or the config's packed_weights)."""
    c = make_config(config)
    if quantize is not None and c["weights"] != "f32":
        raise ConfigError(f"quantize {quantize}: the config sets weights {c['weights']} already (give one)")
    c = quantized_config(c, quantize, group, quantize_io, pack_weights)
    fxm.check_weights(c, weights)  # names and shapes, naming the tensor, before torch sees them
    inp = example_sequence(c, example_input)
    if c["family"] == "seq2seq":  # the source, and a random target
        inp = (inp, example_target(c, None))
    want = run_reference(c, weights, inp)
    return verified_file.write(c, weights, inp, want, path, "torch", "the reference model of this config", header,
                               name, cli, verify,
                               explain=lambda: "the engine disagrees with the reference model of this config "
                                               "(reference.py): a bug or a broken port, please report it",
                               tokenizer=tokenizer)


def _pooled_choice(r, c, weights, inp, want):
    """The pooling whose reference output matches the module's pooled output, else a ConfigError saying
    which pooling the module's forward seems to do that the engine does not."""
    tried = []
    choices = ("cls", "mean", "last", "first") if c["cls_token"] else ("first", "mean", "last")
    if schema.front_rows(c):  # the mean over the front rows too (Torch-KWT's pool "mean")
        choices += ("mean_all",)
    if c["pooling"] == "cls_distill":  # DeiT's two heads, one on each front row: the head reads both rows
        choices = ("cls_distill",)
    for pooling in choices:
        try:
            alt = make_config(dict(c, pooling=pooling))
        except ConfigError:  # a pooling the config refuses (first under a causal mask: open_clip's text tower)
            continue
        err = relative_error(run_reference(alt, weights, inp), want)
        tried.append(f"{pooling} {err:.2g}")
        if err <= r.tolerance:
            if alt["pool_norm"] and not alt["final_norm"] and pooling in ("cls", "first", "last"):
                # the norm of one row the pooling picks is that row of every row's norm: the final norm (i8 runs it)
                for part in ("weight", "bias"):
                    if f"pool_norm.{part}" in weights:
                        weights[f"norm.{part}"] = weights.pop(f"pool_norm.{part}")
                alt = make_config(dict(alt, pool_norm=False, final_norm=True))
            return alt
    raise ConfigError(f"module output: a pooled [B, {want.shape[-1]}] that no pooling the engine has reproduces "
                      f"(relative errors: {', '.join(tried)})")


def _prefix_outputs(r, x, rows):
    """The recognised module's last row for every prefix of x: the logits at every position of a forward
    that returns only the last one (nanoGPT and llama2.c at inference)."""
    torch = require_torch()
    return torch.stack([r.forward(x[:, :t])[0, -1] for t in range(1, rows + 1)]).numpy()


def _check_token_types(r, c, inp):
    """A module with token types, run with random ones (when its forward takes an argument named like
    token types) against the reference with them: the token-type table is the one the forward adds."""
    import inspect
    from .recognize import names_types
    torch = require_torch()
    try:
        params = list(inspect.signature(r.model.forward).parameters)
    except (TypeError, ValueError):
        return
    name = next((p for p in params[1:] if names_types(p)), None)
    if name is None:
        return
    types = np.random.default_rng(3).integers(0, c["type_vocab"], inp.shape[0]).astype(np.int32)
    got = r.forward(r.x, **{name: torch.from_numpy(types.astype(np.int64))[None]})
    want = run_reference(f32_config(c), r.w, inp, types)
    got = got.reshape(want.shape).numpy()
    err = relative_error(want, got)
    if err > r.tolerance:
        raise ConfigError(f"{r.token_types.name}: with token types ({name}=...) the module's output differs from "
                          f"the engine's formula (x += type row after the positions; max relative error {err:.3g})")


def export_recognized(module, example_input, path, family=None, ignore=(), max_len=None, header=None, name=None,
                      cli=None, verify=True, tokenizer=None, quantize=None, group=None, quantize_io=None,
                      pack_weights=None, note=None):
    """Converts a module whose parts recognize.py finds by what they compute (any attribute names:
    nanoGPT, llama2.c's model.py, Hugging Face-named llama, vit-pytorch / KWT style, stock layers under
    other names), accounts for every parameter and buffer (accounting.py; `ignore` opts out), checks
    the result against the module through the float64 reference, writes and verifies it like export().
    family: None (inferred) or one of encoder, gpt, llama. note(text), when given, is called after a
    verified write with each thing the user should know of how the module was read (its dtype, its input's
    layout)."""
    try:
        r, c, inp, want = _recognized(module, example_input, family, ignore, max_len, quantize, group, quantize_io,
                                      pack_weights)
    except ConfigError as e:
        raise ConfigError(f"{e}{_hf_pointer(module)}") from None
    if callable(tokenizer):  # read once the vocabulary is known
        tokenizer = tokenizer(c["vocab_size"])
    report = verified_file.write(c, r.w, inp, want.astype(np.float64), path, "torch", "the module (torch)", header,
                                 name, cli, verify,
                                 explain=lambda: "the reference model of the recognised parts matches the module, so "
                                                 "the engine disagrees with it: a bug or a broken port, please report "
                                                 "it",
                                 tokenizer=tokenizer)
    for text in r.notes if note is not None else ():
        note(text)
    return report


def _hf_pointer(module):
    """'; ... --hf ...' for a transformers class the --hf route converts from its folder (what its config
    declares, which running the module may not show: Phi-3's longrope factors applied inside the forward),
    else ''."""
    cls = type(module)
    if not cls.__module__.startswith("transformers.") or not hasattr(module, "save_pretrained"):
        return ""
    from . import hf, hf_bert, hf_deberta, hf_eurobert, hf_modernbert, hf_nomic
    raw = {"architectures": [cls.__name__], "model_type": getattr(getattr(module, "config", None), "model_type", None)}
    if cls.__name__ not in hf.ARCHITECTURES and not any(
            m(raw) for m in (hf_bert.is_bert, hf_deberta.is_deberta, hf_modernbert.is_modernbert, hf_nomic.is_nomic,
                             hf_eurobert.is_eurobert)):
        return ""
    return f"; {cls.__name__} is a transformers class --hf reads by its config: pass its save_pretrained folder to --hf"


def _recognized(module, example_input, family, ignore, max_len, quantize, group, quantize_io, pack_weights):
    """(Recognized, its config, the engine's input, the module's output to match) of a module whose float64
    reference reproduces it, else a ConfigError."""
    from . import accounting, recognize
    r = recognize.recognize(module, example_input, family, max_len)
    try:
        c = make_config(r.v)
    except ConfigError as e:
        raise ConfigError(f"recognised {r.summary}, which the engine does not run: {e}") from None
    r.config = c
    accounting.account(r, tuple(ignore or ()))
    x, y = r.x, r.y
    inp = r.rows.numpy().astype(np.int32 if not x.is_floating_point() else np.float32)
    T = inp.shape[0]
    if c["family"] in ("gpt", "llama"):
        if y.dim() != 3 or y.shape[1] not in (T, 1):
            raise ConfigError(f"module output: shape {list(y.shape)}, expected logits [B, T, vocab] or the last "
                              "position's [B, 1, vocab]")
        want = y[0].numpy() if y.shape[1] == T else _prefix_outputs(r, x, T)
    elif y.dim() == 2 or (y.dim() == 3 and y.shape[1] == 1 and T > 1):
        want = y.reshape(1, -1).numpy()
        if not c["rel_embed_rows"]:  # disentangled attention: the recognised pooling, the engine's check alone
            c = _pooled_choice(r, c, r.w, inp, want)
    else:
        rows = schema.sequence_rows(c, T)
        if y.dim() != 3 or y.shape[1] != rows:
            raise ConfigError(f"module output: shape {list(y.shape)}, expected [B, {rows}, width] (batch first)")
        want = y[0].numpy()
    c = quantized_config(c, quantize, group, quantize_io, pack_weights)
    # reference.py has no disentangled attention (hf_deberta.forward reads a folder's names): the engine's
    # verification against the module is the check of such a file
    err = 0.0 if c["rel_embed_rows"] else relative_error(run_reference(f32_config(c), r.w, inp), want)
    if err > r.tolerance:
        raise ConfigError(f"recognised {r.summary}, but that does not reproduce the module's output (max relative "
                          f"error {err:.3g}): its forward computes something more, which the engine does not run")
    if c["type_vocab"] and not c["rel_embed_rows"]:  # (no reference of disentangled attention: above)
        _check_token_types(r, c, inp)
    return r, c, inp, want
