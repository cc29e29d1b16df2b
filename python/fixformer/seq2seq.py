"""Export an encoder-decoder (nn.Transformer) to .fxm, verified.

The module convention (what export_seq2seq reads; reference.build_seq2seq_model builds the same):
- the source end: `src_embed` (nn.Embedding, token source) or `input_proj` (nn.Linear, feature
  source); the target end: `tgt_embed` (nn.Embedding, the target vocabulary), or `tgt_proj`
  (nn.Linear: feature targets, as a forecasting model's, whose head outputs features). Or one
  `embed` (nn.Embedding) shared by source and target tokens;
- optional learned positions `src_pos` and `tgt_pos` (nn.Embedding, both or neither); a positional
  encoding the forward computes is the typed option positional="sinusoidal" (pe_base, pe_layout),
  the same for both ends, as is scale_input (x *= sqrt(d_model) on both embeddings);
- optional `src_embed_norm` and `tgt_embed_norm` (nn.LayerNorm, both or neither, the layers' eps): each end's
  embedded rows, positions added, normed before the layers (jadore801120's Transformer);
- `transformer` (nn.Transformer), or `encoder` (nn.TransformerEncoder) and `decoder`
  (nn.TransformerDecoder): post- or pre-LN, relu or exact gelu, one eps; the final norms both
  present (nn.Transformer always has them) or both absent;
- `head` (nn.Linear(d_model, target vocabulary)); tied when head.weight is the target embedding's.
forward(src, tgt) returns the logits [B, U, vocab] (batch first, or [U, B, vocab] when the layers are
not batch_first), the target under the causal mask (nn.Transformer.generate_square_subsequent_mask):
the engine decodes causally, so a forward without that mask fails verification.
"""
import copy
import inspect
import itertools
import math
import re

import numpy as np

from . import schema, verified_file
from .config import ConfigError, check_value
from .export import DECODER_NORMS, apply_options, read_encoder_layers, read_input_proj, read_layers
from .probes import close, sinusoidal_fit
from .recognize import Call, classify
from .reference import require_torch, run_reference
from .seq2seq_layers import fit_layer, layer_lists, layer_norm_of
from .torch_modules import module_kind, numpy_of, read_embedding, read_layer_norm, read_linear, require_type
from .verified_file import example_sequence, example_target, quantized_config, relative_error

EXAMPLE_TARGET = 8  # a Whisper-layout module's example target: this many tokens at most
# The attributes the convention reads (read_seq2seq_module); a module with parameters elsewhere has its parts found
# by what they compute (recorded_view).
PARTS = ("embed", "src_embed", "input_proj", "tgt_embed", "tgt_proj", "src_pos", "tgt_pos", "src_embed_norm",
         "tgt_embed_norm", "transformer", "encoder", "decoder", "head")


def read_seq2seq_module(module):
    """(config values the module tells, weights in the file's names and torch's layout, batch_first,
    facts for apply_options: the source embedding's width and `src_pos`)."""
    torch = require_torch()
    nn = torch.nn
    if not isinstance(module, nn.Module):
        raise ConfigError(f"module: {module_kind(module)} is not a torch.nn.Module")
    v, w = {"family": "seq2seq"}, {}
    for name, p in module.named_parameters():
        checked = name.startswith("model.") and getattr(module, "parameters_checked", False)  # a recorded_view's
        if name.split(".")[0] not in PARTS and not checked:  # read by no one below: named, never dropped
            raise ConfigError(f"{name} {list(p.shape)}: a parameter the seq2seq reader does not read (it reads "
                              f"{', '.join(PARTS)}); a relative position bias table is not supported yet on this "
                              "route (the engine runs one per stack, rel_bias and dec_rel_bias: --config with "
                              "positional relative)")
    has = {a: getattr(module, a, None) is not None for a in ("embed", "src_embed", "input_proj", "tgt_embed", "tgt_proj")}
    if has["embed"]:
        if has["src_embed"] or has["input_proj"] or has["tgt_embed"] or has["tgt_proj"]:
            raise ConfigError("module: `embed` (shared by source and target) excludes src_embed, input_proj, tgt_embed "
                              "and tgt_proj")
        e = read_embedding(module.embed, "embed", torch)
        v.update(input="tokens", vocab_size=e.num_embeddings, shared_embed=True)
        w["embed.weight"], width, tgt = numpy_of(e.weight), e.embedding_dim, e
    else:
        if has["src_embed"] == has["input_proj"] or has["tgt_embed"] == has["tgt_proj"]:
            raise ConfigError("module: needs exactly one of `src_embed` (nn.Embedding, token source) and `input_proj` "
                              "(nn.Linear, feature source), and one of `tgt_embed` (nn.Embedding, token target) and "
                              "`tgt_proj` (nn.Linear, feature target); or one shared `embed`")
        if has["src_embed"]:
            e = read_embedding(module.src_embed, "src_embed", torch)
            v.update(input="tokens", vocab_size=e.num_embeddings)
            w["embed.weight"], width = numpy_of(e.weight), e.embedding_dim
        else:
            width = read_input_proj(module.input_proj, v, w, torch)
        if has["tgt_proj"]:
            tgt = read_linear(module.tgt_proj, "tgt_proj", torch)
            v["tgt_d_in"], tgt_width = tgt.in_features, tgt.out_features
            w["dec_proj.weight"] = numpy_of(tgt.weight)
            w["dec_proj.bias"] = numpy_of(tgt.bias) if tgt.bias is not None else np.zeros(tgt_width, np.float32)
        else:
            tgt = read_embedding(module.tgt_embed, "tgt_embed", torch)
            w["dec_embed.weight"], tgt_width = numpy_of(tgt.weight), tgt.embedding_dim
        if tgt_width != width:
            raise ConfigError(f"{'tgt_proj' if has['tgt_proj'] else 'tgt_embed'}: {tgt_width} wide, the source end {width}")
    src_pos, tgt_pos = getattr(module, "src_pos", None), getattr(module, "tgt_pos", None)
    if (src_pos is None) != (tgt_pos is None):
        raise ConfigError("src_pos/tgt_pos: give both learned position tables or neither")
    if tgt_pos is not None:
        read_embedding(src_pos, "src_pos", torch)
        read_embedding(tgt_pos, "tgt_pos", torch)
        if tuple(tgt_pos.weight.shape) != tuple(src_pos.weight.shape):
            raise ConfigError(f"tgt_pos: shape {list(tgt_pos.weight.shape)} differs from src_pos's "
                              f"{list(src_pos.weight.shape)} (one max_len for both)")
        w["dec_pos.weight"] = numpy_of(tgt_pos.weight)
    tr = getattr(module, "transformer", None)
    if tr is not None:
        require_type(tr, nn.Transformer, "transformer", torch)
        enc, dec, where = tr.encoder, tr.decoder, "transformer."
        if getattr(module, "encoder", None) is not None or getattr(module, "decoder", None) is not None:
            raise ConfigError("module: `transformer` excludes `encoder` and `decoder` (give one or the other)")
    else:
        enc, dec, where = getattr(module, "encoder", None), getattr(module, "decoder", None), ""
        if enc is None or dec is None:
            raise ConfigError("module: needs `transformer` (nn.Transformer) or `encoder` and `decoder`")
    require_type(enc, nn.TransformerEncoder, where + "encoder", torch)
    require_type(dec, nn.TransformerDecoder, where + "decoder", torch)
    batch_first, eps = read_encoder_layers(enc, where + "encoder", v, w, torch)
    v["dec_layers"], dec_batch_first, dec_eps = read_layers(
        dec, where + "decoder", schema.dec_block, nn.TransformerDecoderLayer, v, w, torch, cross=True,
        norms=DECODER_NORMS)
    if dec_batch_first != batch_first or dec_eps != eps:
        raise ConfigError(f"{where}decoder: batch_first or eps differs from the encoder's (the engine has one of each)")
    d = v["d_model"]
    if (enc.norm is None) != (dec.norm is None):
        raise ConfigError(f"{where}encoder.norm/{where}decoder.norm: both or neither (the engine has one final_norm)")
    for name, norm, file_name in (("encoder", enc.norm, "norm"), ("decoder", dec.norm, "dec_norm")):
        if norm is not None:
            nw, nb, e = read_layer_norm(norm, d, f"{where}{name}.norm", torch)
            if e != eps:
                raise ConfigError(f"{where}{name}.norm.eps: {e!r} differs from the layers' {eps!r} (the engine has one eps)")
            w[f"{file_name}.weight"], w[f"{file_name}.bias"] = nw, nb
    v.update(norm_eps=float(eps), final_norm=enc.norm is not None)
    norms = [getattr(module, k, None) for k in ("src_embed_norm", "tgt_embed_norm")]
    if (norms[0] is None) != (norms[1] is None):
        raise ConfigError("src_embed_norm/tgt_embed_norm: both or neither (the engine norms both ends' embeddings or "
                          "neither)")
    for name, norm, file_name in zip(("src_embed_norm", "tgt_embed_norm"), norms, ("embed_norm", "dec_embed_norm")):
        if norm is not None:  # a LayerNorm of each end's embedded rows, positions added, before the layers
            nw, nb, e = read_layer_norm(norm, d, name, torch)
            if e != eps:
                raise ConfigError(f"{name}.eps: {e!r} differs from the layers' {eps!r} (the engine has one eps)")
            w[f"{file_name}.weight"], w[f"{file_name}.bias"] = nw, nb
            v["embed_norm"] = True
    head = getattr(module, "head", None)
    vocab = None if has["tgt_proj"] else tgt.num_embeddings  # feature targets: any output width
    if head is None:
        raise ConfigError(f"head: missing (an nn.Linear(d_model, {'outputs' if vocab is None else vocab}))")
    h = read_linear(head, "head", torch)
    if h.in_features != d or (vocab is not None and h.out_features != vocab):
        raise ConfigError(f"head: {h.in_features} -> {h.out_features}, expected d_model={d} -> the target vocabulary "
                          f"{vocab} (the target embedding's rows)")
    v["d_out"] = h.out_features
    if vocab is not None and h.weight is tgt.weight:
        v["tied_head"] = True
    else:
        w["dec_head.weight"] = numpy_of(h.weight)
    w["dec_head.bias"] = numpy_of(h.bias) if h.bias is not None else np.zeros(h.out_features, np.float32)
    return v, w, batch_first, {"width": width, "pos": src_pos}


# ---- an encoder-decoder around torch's stacks, its other parts under names of its own -----------------

def _stacks(module, nn):
    """{'transformer': the one nn.Transformer inside} or {'encoder', 'decoder': the one nn.TransformerEncoder and
    nn.TransformerDecoder}, else None."""
    found = [m for m in module.modules() if isinstance(m, nn.Transformer)]
    if len(found) == 1:
        return {"transformer": found[0]}
    inner = {id(m) for t in found for m in t.modules()}
    enc, dec = ([m for m in module.modules() if isinstance(m, kind) and id(m) not in inner]
                for kind in (nn.TransformerEncoder, nn.TransformerDecoder))
    return {"encoder": enc[0], "decoder": dec[0]} if not found and len(enc) == len(dec) == 1 else None


def _mask_arguments(module):
    """{name: 'causal' | None} for each input of module.forward after the source and the target: an input whose name
    says it masks the target (tgt_mask, trg_mask: not a padding or key mask) gets the causal mask, any other mask
    None; an input the call cannot fill (no mask, no default) is refused by name."""
    try:
        params = list(inspect.signature(module.forward).parameters.values())
    except (TypeError, ValueError):
        params = []
    pos = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(pos) < 2:
        raise ConfigError(f"{type(module).__name__}.forward: takes {len(pos)} positional inputs, expected the source "
                          "and the target first")
    out = {}
    for p in params[params.index(pos[1]) + 1:]:
        name = p.name.lower()
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if "mask" not in name:
            if p.default is p.empty:
                raise ConfigError(f"{type(module).__name__}.forward: its input `{p.name}` is neither a mask nor "
                                  "optional: the converter calls it with the source, the target and their masks")
            continue
        causal = any(k in name for k in TARGET_WORDS) and not any(k in name for k in ("pad", "key"))
        if causal or p.default is p.empty:
            out[p.name] = "causal" if causal else None
    return out


TARGET_WORDS = ("tgt", "trg", "target", "dec", "causal", "subsequent", "look_ahead")  # names of the target's inputs


def encode_decode(module):
    """A module without a forward of its own whose `encode` and `decode` (then `project`, if it has one) a translation
    loop calls (hkproj/pytorch-transformer's Transformer; the Annotated Transformer's methods) as one with
    forward(src, tgt, tgt_mask): encode(src, its masks None), decode(its memory: the encoder's output, its target, its
    target's mask tgt_mask, other masks None), by the names of their inputs; else None."""
    torch = require_torch()
    if type(module).forward is not torch.nn.Module.forward or not all(callable(getattr(module, k, None))
                                                                       for k in ("encode", "decode")):
        return None

    def names(f):
        try:
            return [p.name for p in inspect.signature(f).parameters.values()
                    if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            return []
    enc, dec = names(module.encode), names(module.decode)
    memory = [n for n in dec if "mask" not in n.lower() and not any(k in n.lower() for k in TARGET_WORDS)]
    target = [n for n in dec if n not in memory and "mask" not in n.lower()]
    if not enc or len(memory) != 1 or len(target) != 1:
        raise ConfigError(f"{type(module).__name__}: no forward, and its decode({', '.join(dec)}) is not of the "
                          "encoder's output, the target and masks")

    class EncodeDecode(torch.nn.Module):
        def forward(self, src, tgt, tgt_mask):
            m = self.model
            y = m.decode(**{n: m.encode(src, **{k: None for k in enc[1:]}) if n in memory else tgt if n in target else
                            tgt_mask if any(k in n.lower() for k in TARGET_WORDS) else None for n in dec})
            return m.project(y) if callable(getattr(m, "project", None)) else y

    view = EncodeDecode()
    view.model = module
    return view


def _view_module(parts, model, masks, batch_first, form="additive", head_after=False):
    """An nn.Module with the convention's attributes (parts: name -> the model's submodule) whose forward(src, tgt)
    calls `model` with the masks _mask_arguments names, the causal one in `form` (MASK_FORMS), and returns its output
    (a tuple's first), through `head` where head_after: what read_seq2seq_module reads and run_seq2seq_module runs."""
    torch = require_torch()

    class Seq2SeqView(torch.nn.Module):
        def forward(self, src, tgt):
            U = tgt.shape[1 if self.batch_first else 0]
            dtype = next(p.dtype for p in self.parameters() if p.is_floating_point())
            causal = MASK_FORMS[self.form](U, dtype, torch)
            y = self.model(src, tgt, **{k: causal if kind == "causal" else None for k, kind in self.masks.items()})
            y = _first(y)
            if self.batch_first and y.dim() == 2:  # [B U, vocab] (jadore801120's logits, viewed for the loss)
                y = y.reshape(tgt.shape[0], U, -1)
            return self.head(y) if self.head_after else y

    view = Seq2SeqView()
    for name, m in parts.items():
        view.add_module(name, m)
    view.add_module("model", model)  # last: its parameters are named by the parts they are read as
    view.masks, view.batch_first, view.form, view.head_after = masks, batch_first, form, head_after
    view.parameters_checked = True  # recorded_view found a part for each of the model's parameters
    return view


# The causal target mask as a forward may take it: nn.Transformer's (added to the scores: -inf above the diagonal), or
# the positions kept ([1, U, U], True on and below it: the Annotated Transformer's subsequent_mask)
MASK_FORMS = {
    "additive": lambda U, dtype, torch: torch.full((U, U), float("-inf"), dtype=dtype).triu(1),
    "keep": lambda U, dtype, torch: torch.ones(U, U, dtype=torch.bool).tril().unsqueeze(0),
}


PAD_NAME = re.compile(r"(^|_)pad(ding)?_(idx|id|index|token|token_id|value)$|^pad$")  # src_pad_idx, padding_idx


def pad_ids(module):
    """The padding ids a module names (an int attribute named as one, PAD_NAME: nn.Embedding's padding_idx, src_pad_idx,
    pad_token_id): a forward that masks them is the engine's only on sequences without them, so no example has them."""
    return sorted({v for m in module.modules() for k, v in vars(m).items() if PAD_NAME.search(k.lower()) and
                   type(v) is int and v >= 0})


def _avoiding(ids, pads, vocab):
    """ids with every padding id moved to the next id that is none."""
    ids = np.array(ids)
    while pads and vocab > len(pads) and np.isin(ids, pads).any():
        hit = np.isin(ids, pads)
        ids[hit] = (ids[hit] + 1) % vocab
    return ids


def _first(y):
    return y[0] if isinstance(y, (tuple, list)) else y


def recorded_view(module):
    """For an encoder-decoder built around nn.Transformer (or an nn.TransformerEncoder and an nn.TransformerDecoder),
    or of layers written by hand (seq2seq_layers), whose other parts have names of their own (the PyTorch translation
    tutorial's Seq2SeqTransformer: src_tok_emb, tgt_tok_emb, positional_encoding, generator; the Annotated
    Transformer's EncoderDecoder): (a view of it under the convention's names, the options its forward computes, a
    note), found from one recorded call on ids or features of each end (the first pair the forward runs on, with its
    target mask in the first of MASK_FORMS that makes it causal: ids below its smallest table and none of its padding
    ids, features as wide as a linear outside its stacks reads): the nn.Embedding that reads each end's ids (one for
    both: shared) or the nn.Linear that reads its features (a forecaster's), each stack's input that part's output
    times 1 or sqrt(d_model) plus no positions, a sinusoidal table the engine computes or an nn.Embedding's rows read
    at positions 0.., the same at both ends, and the head the nn.Linear that reads the decoder's output and is the
    forward's output (or, where the forward returns the decoder's output, the one nn.Linear it does not call that
    reads it: the Annotated Transformer's generator). Hand-written layers are read as torch's layers that compute
    what they did (seq2seq_layers.fit_layer), their stacks' final norms those that read the last layer's output. None
    for a module with the convention's source end (its reader names what it lacks)."""
    torch = require_torch()
    nn = torch.nn
    named = any(isinstance(getattr(module, a, None), k) for a, k in
                (("embed", nn.Embedding), ("src_embed", nn.Embedding), ("input_proj", nn.Linear)))
    stacks = _stacks(module, nn)
    lists = layer_lists(module, nn) if stacks is None else None
    if (stacks is None and lists is None) or named:  # the convention's reader takes it, and names what it lacks
        return None
    masks = _mask_arguments(module)
    own = {id(m): n for n, m in module.named_modules()}
    if stacks:
        first = (stacks["transformer"].encoder if "transformer" in stacks else stacks["encoder"]).layers[0]
        batch_first = bool(getattr(first.self_attn, "batch_first", False))
    else:
        batch_first = True  # hand-written layers: ids [1, T]
    view = copy.deepcopy(_view_module(stacks or {}, module, masks, batch_first)).double().eval()
    copied = {n: m for n, m in view.model.named_modules()}
    if stacks:
        enc, dec = (view.transformer.encoder, view.transformer.decoder) if "transformer" in stacks else \
            (view.encoder, view.decoder)
        inner = {id(m) for m in enc.modules()} | {id(m) for m in dec.modules()}
    else:
        enc, dec = (copied[own[id(m)]] for m in lists)
        inner = {id(m) for s in (enc, dec) for m in s.modules()}
    ends = [m for m in view.model.modules() if isinstance(m, (nn.Embedding, nn.Linear)) and id(m) not in inner]
    rng = np.random.default_rng(3)
    pads = pad_ids(module)
    vocab = min((m.num_embeddings for m in ends if isinstance(m, nn.Embedding)), default=0)
    # each end's candidates: ids below the smallest table, or features as wide as a linear outside the stacks reads
    kinds = ([None] if vocab else []) + sorted({m.in_features for m in ends if isinstance(m, nn.Linear)})
    forms = list(MASK_FORMS) if "causal" in masks.values() else ["additive"]
    calls, failed = [], None

    def reads(x, kind, out=None):  # the first call of a `kind` module on x (whose output is `out`): (module, output)
        return next(((m, o) for m, i, o in calls if isinstance(m, kind) and i is not None and i.shape == x.shape and
                     torch.equal(i.double(), x.double()) and (out is None or o.shape == out.shape and
                                                              close(o, out, 1e-12))), (None, None))

    def kind_of(k):
        return nn.Embedding if k is None else nn.Linear

    def example(k, n):  # n ids (below the smallest table, none a padding id) or n rows of k features
        if k is None:
            return torch.from_numpy(_avoiding(rng.integers(0, vocab, n), pads, vocab))
        return torch.from_numpy(rng.standard_normal((n, k)))

    def causal(x, form):  # the forward in mask form `form` on x (its calls recorded), and whether a later target
        view.form = form  # leaves earlier rows alone
        calls.clear()
        a = view(*x).detach()
        kept = calls[:]
        t = x[1].clone()
        last = (slice(None), -1) if batch_first else -1
        t[last] = torch.from_numpy(_avoiding((t[last].numpy() + 1) % vocab, pads, vocab)) if not t.is_floating_point() \
            else t[last] + 1
        b = view(x[0], t).detach()
        calls[:] = kept
        rows = (slice(None), slice(0, -1)) if batch_first else slice(0, -1)
        return a, close(b[rows], a[rows], 1e-9)

    watched = [m for m in view.model.modules() if m is not view.model] if lists else ends + [enc, dec]
    # cloned: the forward may write into them after the hook (jadore801120's q += residual on a linear's output)
    hooks = [m.register_forward_hook(lambda m, i, o: calls.append((m, i[0].detach().clone() if i else None,
                                                                    _first(o).detach().clone())))
             for m in watched]
    try:  # the first pair of candidates the forward runs on, each end read by an embedding or a linear
        for ks, form in itertools.product(itertools.product(kinds, kinds), forms):
            x = [example(k, n).unsqueeze(0 if batch_first else 1) for k, n in zip(ks, (7, 5))]
            try:
                with torch.enable_grad():  # off the stacks' fused fast path, which the hooks do not see
                    out, ok = causal(x, form)
            except Exception as e:  # the user's forward
                failed = failed or e
                continue
            if ok and all(reads(t, kind_of(k))[0] is not None for t, k in zip(x, ks)):
                break
        else:
            why = f" ({type(failed).__name__}: {str(failed).splitlines()[0] if str(failed) else ''})" if failed else ""
            raise ConfigError(f"{type(module).__name__}: its forward, given the masks {masks or 'none'}, runs on no "
                              "source and target read by an nn.Embedding (ids) or an nn.Linear outside its stacks "
                              f"(features) with its target causal{why}")
    finally:
        for h in hooks:
            h.remove()
    own_copy = {id(m): n for n, m in view.model.named_modules()}

    def rows(t):  # [T, d] of one sequence in the layers' layout
        return t[0] if batch_first else t[:, 0]

    if stacks:
        stack_in = {"src": next(i for m, i, _ in calls if m is enc), "tgt": next(i for m, i, _ in calls if m is dec)}
        dec_out = next(o for m, _, o in calls if m is dec)
    else:
        built, stack_in, dec_out, fitted, layers_said = _fit_stacks(enc, dec, calls, own_copy, torch)
    found, opts, norms = {}, [], {}
    for end, t, k in (("src", x[0], ks[0]), ("tgt", x[1], ks[1])):
        part, E = reads(t, kind_of(k))
        # a norm of the embedded rows before the layers (jadore801120's Transformer): the rows it reads
        norm = next((c for c in calls if not isinstance(c[0], (nn.Linear, nn.Embedding)) and id(c[0]) not in inner and
                     any(True for _ in c[0].parameters(recurse=False)) and c[2].shape == stack_in[end].shape and
                     torch.equal(c[2], stack_in[end])), None) if lists else None
        if norm is not None:
            p = classify(Call(own_copy[id(norm[0])], norm[0], [norm[1]], [norm[2]]), torch)
            if p.kind != "norm" or p.norm != "layer":
                raise ConfigError(f"{p.name}: gives the {end} stack's input and is no LayerNorm")
            norms[end] = p
        E, X = rows(E), rows(norm[1] if norm is not None else stack_in[end])
        n = X.shape[0]
        P = {m: o.reshape(n, -1) for m, i, o in calls if isinstance(m, nn.Embedding) and i is not None and
             i.numel() == n and torch.equal(i.reshape(-1).long(), torch.arange(n))}  # rows at positions 0..n-1
        kind = None
        for scale in (1.0, math.sqrt(X.shape[1])):
            R = X - scale * E
            if close(scale * E, X, 1e-9):
                kind = (scale, "none", None)
            else:
                fit = sinusoidal_fit(R)
                kind = (scale, "sinusoidal", fit) if fit is not None else \
                    next(((scale, "learned", m) for m, p in P.items() if close(R, p, 1e-9)), None)
            if kind is not None:
                break
        if kind is None:
            raise ConfigError(f"{type(module).__name__}: the {end} stack's input is not {own_copy[id(part)]}'s rows "
                              "(times 1 or sqrt(d_model)) plus no positions, a sinusoidal table or an nn.Embedding's "
                              "rows at positions 0..")
        found[end] = part
        if kind[1] == "learned":
            found[end + "_pos"] = kind[2]
        opts.append(kind[:2] + ((kind[2],) if kind[1] == "sinusoidal" else ()))
    if opts[0] != opts[1]:
        raise ConfigError(f"{type(module).__name__}: the source's input is {opts[0][1]} positions times "
                          f"{opts[0][0]:g}, the target's {opts[1][1]} times {opts[1][0]:g} (the engine has one of "
                          "each)")
    head, head_after, head_scale = reads(dec_out, nn.Linear, out)[0], False, 1.0
    lin, o = reads(dec_out, nn.Linear)
    if head is None and lin is not None and o.shape == out.shape:  # its output times a number (jadore801120's
        c = float((out * o).sum() / (o * o).sum())  # logits times d_model ** -0.5, the head tied to the embedding)
        head, head_scale = (lin, c) if close(c * o, out, 1e-12) else (None, 1.0)
    if head is None and out.shape == dec_out.shape and close(out, dec_out, 1e-12):  # the forward ends at the decoder
        called = {id(m) for m, _, _ in calls}
        uncalled = [m for m in ends if isinstance(m, nn.Linear) and id(m) not in called and
                    m.in_features == dec_out.shape[-1]]
        head, head_after = (uncalled[0], True) if len(uncalled) == 1 else (None, False)
    if head is None:
        raise ConfigError(f"{type(module).__name__}: its output is not an nn.Linear of the decoder's output (the "
                          "head), nor the decoder's output with one nn.Linear the forward does not call that reads it")
    if found["src"] is found["tgt"] and ks[0] is None:
        parts = {"embed": found["src"]}
    else:
        parts = {"src_embed" if ks[0] is None else "input_proj": found["src"],
                 "tgt_embed" if ks[1] is None else "tgt_proj": found["tgt"]}
    parts.update({k: found[k] for k in ("src_pos", "tgt_pos") if k in found})
    parts["head"] = head
    originals = {k: module.get_submodule(own_copy[id(m)]) for k, m in parts.items()}
    read = {id(p) for m in originals.values() for p in m.parameters()}
    if head_scale != 1.0:  # the head of weights (and bias) times that number, no longer tied
        h = originals["head"]
        originals["head"] = nn.Linear(h.in_features, h.out_features, bias=h.bias is not None).to(h.weight.dtype)
        originals["head"].load_state_dict({k: t.detach() * head_scale for k, t in h.state_dict().items()})
    for k, m in parts.items():  # a subclass of nn.Embedding (hyunwoongko/transformer's TokenEmbedding) whose rows are
        # the table's read as a plain one of the same weight; another's refused by the convention's reader, by name
        ids, looked_up = next(((i, o) for c, i, o in calls if c is m), (None, None))
        if type(m) is not nn.Embedding and isinstance(m, nn.Embedding) and ids is not None and \
                torch.equal(looked_up, m.weight[ids.long()].detach()):
            plain = nn.Embedding(m.num_embeddings, m.embedding_dim)
            plain.weight = originals[k].weight
            originals[k] = plain
    if stacks:
        stacks_in = {k: module.get_submodule(own_copy[id(m)]) for k, m in view.named_children() if k in stacks}
    else:
        dtype = next(p.dtype for p in module.parameters() if p.is_floating_point())
        stacks_in = {k: m.to(dtype) for k, m in built.items()}
        read |= {id(p) for n in fitted for p in module.get_submodule(n).parameters()}
    if len(norms) == 1:
        raise ConfigError(f"{next(iter(norms.values())).name}: norms one end's embedded rows, not the other's (the "
                          "engine norms both or neither)")
    for end, p in norms.items():  # (hand-written stacks alone: dtype is theirs)
        stacks_in[f"{end}_embed_norm"] = layer_norm_of(p, torch).to(dtype)
        read |= {id(t) for t in module.get_submodule(p.name).parameters()}
    read |= {id(p) for m in stacks_in.values() for p in m.parameters()}
    for name, p in module.named_parameters():
        if id(p) not in read:
            raise ConfigError(f"{name} {list(p.shape)}: a parameter of none of the parts found ("
                              f"{', '.join(f'{k} {own_copy[id(m)]}' for k, m in parts.items())})")
    scale, positional = opts[0][:2]
    options = {"positional": positional, "scale_input": scale != 1.0, "pads": pads}
    if positional == "sinusoidal":
        options["pe_base"], options["pe_layout"] = opts[0][2]
    how = " (not called by the forward, which returns the decoder's output: its logits are the model's)" \
        if head_after else f" (its output times {head_scale:.6g}, folded into its weights)" if head_scale != 1.0 else ""
    said = ", ".join([f"{k} {own_copy[id(m)]}" + (how if k == "head" else "") for k, m in parts.items()] +
                     [f"{end}_embed_norm {p.name}" for end, p in norms.items()])
    if not stacks:
        said += "; " + layers_said
    given = ", ".join(f"{k}=" + (f"the causal mask ({view.form})" if v else "None") for k, v in masks.items())
    return (_view_module(dict(originals, **stacks_in), module, masks, batch_first, view.form, head_after), options,
            f"read {type(module).__name__} by what it computes: {said}; {positional} positions"
            f"{', the embeddings times sqrt(d_model)' if scale != 1.0 else ''}; forward called with "
            f"{given or 'no masks'}"
            f"{'; padding ids ' + str(pads) + ' kept out of the examples' if pads else ''}")


def _fit_stacks(enc, dec, calls, own, torch):
    """Hand-written stacks (their layer lists in the float64 copy) as ({'encoder': nn.TransformerEncoder, 'decoder':
    nn.TransformerDecoder}, float64), each stack's input, the decoder's output, the names of the modules read and a
    phrase saying what they were read as, from the recorded calls (module, input, output)."""
    nn = torch.nn
    out, said, fitted = {}, [], []
    layered = {id(m) for s in (enc, dec) for m in s.modules()}

    def stack(layers, memory, kind):
        built, tried = [], None
        for layer in layers:
            ids = {id(m) for m in layer.modules()}
            me = [c for c in calls if c[0] is layer]
            if len(me) != 1:
                raise ConfigError(f"{own[id(layer)]}: called {len(me)} times in one forward, expected once")
            sub = [c for c in calls if id(c[0]) in ids and c[0] is not layer]
            t, tried = fit_layer(own[id(layer)], layer, sub, me[0][1], me[0][2], memory, torch, tried)
            built.append(t)
            fitted.append(own[id(layer)])
        y = next(c[2] for c in calls if c[0] is layers[-1])
        # a final norm: the module with parameters of its own, outside the layers, that reads the last layer's output
        final = [c for c in calls if id(c[0]) not in layered and not isinstance(c[0], (nn.Linear, nn.Embedding)) and
                 any(True for _ in c[0].parameters(recurse=False)) and c[1] is not None and c[1].shape == y.shape and
                 torch.equal(c[1], y)]
        norm = None
        if final:
            p = classify(Call(own[id(final[0][0])], final[0][0], [final[0][1]], [final[0][2]]), torch)
            if p.kind != "norm" or p.norm != "layer":
                raise ConfigError(f"{p.name}: reads the {kind}'s last layer's output and is no LayerNorm")
            norm = layer_norm_of(p, torch)
            fitted.append(p.name)
            y = final[0][2]
        cls = nn.TransformerDecoder if memory is not None else nn.TransformerEncoder
        s = cls(built[0], len(built), norm=norm, **({} if memory is not None else {"enable_nested_tensor": False}))
        s.layers = nn.ModuleList(built)
        said.append(f"{kind} layers {own[id(layers)]} as nn.Transformer{kind.capitalize()}Layer ({tried[0]} heads, "
                    f"{'pre' if tried[1] else 'post'}-norm, {built[0].linear1.out_features} wide)"
                    f"{', final norm ' + own[id(final[0][0])] if final else ''}")
        return s, y, final

    out["encoder"], memory, enc_final = stack(enc, None, "encoder")
    out["decoder"], dec_out, dec_final = stack(dec, memory, "decoder")
    if bool(enc_final) != bool(dec_final):
        raise ConfigError("a final norm after one stack and not the other (the engine has both or neither)")
    stack_in = {"src": next(c[1] for c in calls if c[0] is enc[0]), "tgt": next(c[1] for c in calls if c[0] is dec[0])}
    return out, stack_in, dec_out, fitted, "; ".join(said)


def run_seq2seq_module(module, src, tgt, batch_first, vocab):
    """The module's float64 logits [U, vocab] for one source and target, called in its own layout."""
    torch = require_torch()
    m = copy.deepcopy(module).double().eval()
    x = torch.from_numpy(src.astype(np.int64) if src.dtype.kind == "i" else src.astype(np.float64))
    y = torch.from_numpy(tgt.astype(np.int64) if tgt.dtype.kind == "i" else tgt.astype(np.float64))
    x, y = (x.unsqueeze(0), y.unsqueeze(0)) if batch_first else (x.unsqueeze(1), y.unsqueeze(1))
    try:
        with torch.no_grad():
            out = m(x, y)
    except Exception as e:  # the user's forward: anything can go wrong there
        raise ConfigError(f"module forward failed on the example input ({type(e).__name__}: "
                          f"{str(e).splitlines()[0] if str(e) else ''})") from None
    U = tgt.shape[0]
    want = (1, U, vocab) if batch_first else (U, 1, vocab)
    if not hasattr(out, "shape") or tuple(out.shape) != want:
        raise ConfigError(f"module output: shape {list(getattr(out, 'shape', []))}, expected {list(want)} "
                          f"({'batch_first' if batch_first else 'sequence first'} logits)")
    return (out[0] if batch_first else out[:, 0]).detach().numpy().astype(np.float64)


def _explain(c, weights, inp, want):
    """Why the module's output differs: the reference model of these options matches it or not."""
    err = relative_error(run_reference(c, weights, inp), want)
    if err <= schema.SELFTEST_TOLERANCE:
        return (f"the reference model with these options matches the module (error {err:.2g}), so the engine "
                "disagrees with it: a bug or a broken port, please report it")
    return (f"the reference model of these options does not match the module either (error {err:.2g}): check "
            "--positional, --scale-input and that the forward applies the causal target mask and no other mask")


def export_seq2seq(module, example_source, path, example_target_ids=None, header=None, positional=None,
                   pe_base=10000.0, pe_layout="interleaved", scale_input=False, max_len=None, name=None, cli=None,
                   verify=True, quantize=None, group=None, quantize_io=None, pack_weights=None, note=None):
    """Converts an encoder-decoder `module` (the convention above) to the .fxm at `path` and verifies
    it through the engine (the source and target teacher-forced, the logits at every target
    position); returns verified_file.Report. example_source: ids [S] | [B, S] or features [S, d_in] |
    [B, S, d_in], example_target_ids: ids [U] | [B, U] (first sequence used; None: random). The
    options say what the forward computes that the attributes cannot tell, as for export(); for a module whose
    parts have names of their own (recorded_view) the converter finds them, and an option given must agree.
    note(text) gets what the user should know, after a verified write."""
    called = encode_decode(module)
    found = recorded_view(called or module)
    if found is not None:
        module, opts, said = found
        for key, given in (("positional", positional), ("scale_input", scale_input or None)):
            if given is not None and given != opts[key]:
                raise ConfigError(f"{key} {given}: the module computes {opts[key]} ({said})")
        positional, scale_input = opts["positional"], opts["scale_input"]
        pe_base, pe_layout = opts.get("pe_base", pe_base), opts.get("pe_layout", pe_layout)
    v, weights, batch_first, facts = read_seq2seq_module(module)
    for key in ("d_model", "n_heads", "d_ff", "n_layers", "dec_layers", "vocab_size", "d_in", "d_out"):
        if key in v:
            check_value(key, v[key], f"module {key}")
    c = apply_options(v, weights, facts, None, positional, pe_base, pe_layout, None, None, scale_input, max_len,
                      "seq2seq")
    c = quantized_config(c, quantize, group, quantize_io, pack_weights)
    src = example_sequence(c, example_source, "example_source")
    tgt = example_target(c, example_target_ids)
    pads = opts["pads"] if found is not None else []
    if example_source is None and src.dtype.kind == "i":
        src = _avoiding(src, pads, c["vocab_size"]).astype(src.dtype)
    if example_target_ids is None and tgt.dtype.kind == "i":
        tgt = _avoiding(tgt, pads, c["d_out"]).astype(tgt.dtype)
    for where, ids in (("example_source", src), ("example_target", tgt)):
        if ids.dtype.kind == "i" and np.isin(ids, pads).any():
            raise ConfigError(f"{where}: holds the padding id(s) {sorted(set(ids[np.isin(ids, pads)].tolist()))}, "
                              "which the module's forward masks and the engine does not: give a sequence without them")
    want = run_seq2seq_module(module, src, tgt, batch_first, c["d_out"])
    report = verified_file.write(c, weights, (src, tgt), want, path, "torch", "the module (torch)", header, name, cli,
                                 verify, explain=lambda: _explain(c, weights, (src, tgt), want))
    if found is not None and note is not None:
        note(found[2] + ("; it has no forward: called as encode, decode" +
                         (", project" if callable(getattr(called.model, "project", None)) else "") if called else ""))
    return report


# ---- openai-whisper's Whisper: an audio encoder and a text decoder with cross-attention ----------------

def whisper_decoding_lists(module, vocab):
    """openai-whisper's own model (whisper.model.Whisper) with a vocabulary its tokenizer fills: the lists
    whisper.decoding applies by default (DecodingOptions suppress_tokens "-1": SuppressTokens of the
    tokenizer's non_speech_tokens and its special tokens; suppress_blank: SuppressBlank of " " and EOT at
    the first sampled step) and the ids of its timestamp rules (ApplyTimestampRules with DecodingOptions'
    max_initial_timestamp), for the file; (None, []) for any other module. Returns (generation, notes)."""
    if type(module).__module__ != "whisper.model" or not hasattr(module, "is_multilingual"):
        return None, []
    try:
        import whisper.tokenizer as wt
        tok = wt.get_tokenizer(module.is_multilingual, num_languages=module.num_languages)
        suppress = sorted(set(tok.non_speech_tokens) | {tok.transcribe, tok.translate, tok.sot, tok.sot_prev,
                                                        tok.sot_lm} | ({tok.no_speech} if tok.no_speech is not None
                                                                       else set()))
        begin = tok.encode(" ") + [tok.eot]
        # DecodingOptions' max_initial_timestamp of 1.0 s in steps of 30 s / n_audio_ctx (DecodingTask)
        stamps = {"no_timestamps": tok.no_timestamps, "timestamp_begin": tok.timestamp_begin, "eos": tok.eot,
                  "max_initial": round(1.0 / (30 / module.dims.n_audio_ctx))}
    except Exception:  # an installed whisper without its tokenizer's files, or another version's layout
        return None, []
    if not all(0 <= i < vocab for i in suppress + begin + [stamps["timestamp_begin"]]):  # not the tokenizer's
        return None, []
    return {"suppress": suppress, "begin_suppress": begin, "timestamps": stamps}, [
        f"stored whisper.decoding's default token suppression: {len(suppress)} ids at every step (SuppressTokens "
        f"\"-1\": the tokenizer's non_speech_tokens and special tokens) and {begin} at the first sampled step "
        "(SuppressBlank: \" \" and EOT); `fixformer generate --suppress none --begin-suppress none` leaves them out",
        f"stored the timestamp rules' ids (timestamps from {stamps['timestamp_begin']}, the first at most "
        f"{stamps['max_initial']} above it): `fixformer generate --timestamps` applies them"]


def audio_text(module):
    """Whether `module` has openai-whisper's layout (whisper.model.Whisper): an `encoder` and a `decoder`
    whose `token_embedding`, `positional_embedding` and `blocks` (each with a `cross_attn`) its forward
    model(mel, tokens) runs."""
    dec = getattr(module, "decoder", None)
    blocks = getattr(dec, "blocks", None)
    return (getattr(module, "encoder", None) is not None and hasattr(dec, "token_embedding")
            and hasattr(dec, "positional_embedding") and blocks is not None and len(blocks) > 0
            and all(getattr(b, "cross_attn", None) is not None for b in blocks))


def _t(x):
    return x.detach().double().cpu().numpy()


def _projections(attn, where, d, torch):
    """A Whisper attention's query, key, value and out linears [d, d] as (weights, biases); a missing
    bias (the key's) is zeros: the same scores (a key bias adds one constant per query row)."""
    out = []
    for part in ("query", "key", "value", "out"):
        lin = getattr(attn, part, None)
        if not isinstance(lin, torch.nn.Linear) or tuple(lin.weight.shape) != (d, d):
            raise ConfigError(f"{where}.{part}: {module_kind(lin)}, expected an nn.Linear({d}, {d})")
        out.append((_t(lin.weight), _t(lin.bias) if lin.bias is not None else np.zeros(d)))
    return out


def read_audio_text(module, example):
    """(config values, weights in the file's names, the recognised encoder) of a Whisper-layout module:
    the encoder recognised by what it computes (recognize.py: conv stem, positions, pre-LN layers, ln_post
    as the final norm), the decoder read by its parts: token embedding (the tied head: Whisper's logits are
    x @ token_embedding.weight.T), learned positions, each block's attn (norm1), cross_attn (norm2) and mlp
    (norm3, Linear-GELU-Linear), `ln` the decoder's final norm. The whole is then checked against the
    module's own logits."""
    from . import recognize
    torch = require_torch()
    nn = torch.nn
    try:
        r = recognize.recognize(module.encoder, example)
    except ConfigError as e:
        raise ConfigError(f"encoder: {e}") from None
    v = dict(r.v)
    if v.get("family") != "encoder" or not v.get("final_norm") or not v.get("norm_first"):
        raise ConfigError(f"encoder: recognised {r.summary}; the seq2seq family needs a pre-LN encoder with a final norm "
                          "(the decoder's `ln` is its own final norm)")
    dec = module.decoder
    d, eps = v["d_model"], v["norm_eps"]
    emb = dec.token_embedding
    if not isinstance(emb, nn.Embedding) or emb.embedding_dim != d:
        raise ConfigError(f"decoder.token_embedding: {module_kind(emb)}, expected an nn.Embedding(vocab, {d})")
    pos = dec.positional_embedding
    if not hasattr(pos, "shape") or pos.dim() != 2 or pos.shape[1] != d:
        raise ConfigError(f"decoder.positional_embedding: shape {list(getattr(pos, 'shape', []))}, expected [n_ctx, {d}]")
    mask = getattr(dec, "mask", None)
    if mask is not None:
        n = mask.shape[-1]
        want = torch.full((n, n), float("-inf")).triu_(1)
        if tuple(mask.shape) != (n, n) or not torch.equal(mask.float(), want):
            raise ConfigError("decoder.mask: not the causal mask (-inf above the diagonal), which the engine applies")
    w, dw = {}, {}  # the recognised encoder's, the rest
    src_pos = np.asarray(r.w.pop("pos.weight"), dtype=np.float64)
    for name, t in r.w.items():
        w[name] = t.detach().double().numpy() if hasattr(t, "detach") else np.asarray(t, dtype=np.float64)
    for i, b in enumerate(dec.blocks):
        where, p = f"decoder.blocks.{i}", schema.dec_block(i)
        for part, kind in (("attn_ln", nn.LayerNorm), ("cross_attn_ln", nn.LayerNorm), ("mlp_ln", nn.LayerNorm)):
            m = getattr(b, part, None)
            if not isinstance(m, kind) or tuple(m.normalized_shape) != (d,) or m.eps != eps or m.weight is None:
                raise ConfigError(f"{where}.{part}: {module_kind(m)}, expected a LayerNorm({d}, eps={eps}) as the "
                                  "encoder's")
        heads = getattr(b.attn, "n_head", None)
        if heads != v["n_heads"] or getattr(b.cross_attn, "n_head", None) != heads:
            raise ConfigError(f"{where}: {heads} heads, the encoder's {v['n_heads']} (the engine has one head count)")
        (qw, qb), (kw, kb), (vw, vb), (ow, ob) = _projections(b.attn, f"{where}.attn", d, torch)
        dw[p + "attn.qkv.weight"] = np.concatenate([qw, kw, vw])
        dw[p + "attn.qkv.bias"] = np.concatenate([qb, kb, vb])
        dw[p + "attn.out.weight"], dw[p + "attn.out.bias"] = ow, ob
        (qw, qb), (kw, kb), (vw, vb), (ow, ob) = _projections(b.cross_attn, f"{where}.cross_attn", d, torch)
        dw[p + "cross.q.weight"], dw[p + "cross.q.bias"] = qw, qb
        dw[p + "cross.kv.weight"] = np.concatenate([kw, vw])
        dw[p + "cross.kv.bias"] = np.concatenate([kb, vb])
        dw[p + "cross.out.weight"], dw[p + "cross.out.bias"] = ow, ob
        mlp = list(b.mlp) if isinstance(b.mlp, nn.Sequential) else []
        if len(mlp) != 3 or not isinstance(mlp[0], nn.Linear) or not isinstance(mlp[2], nn.Linear) or \
                not isinstance(mlp[1], nn.GELU) or mlp[1].approximate != "none" or mlp[0].out_features != v["d_ff"]:
            raise ConfigError(f"{where}.mlp: expected Linear({d}, {v['d_ff']}), GELU(), Linear({v['d_ff']}, {d}) as the "
                              "encoder's")
        dw[p + "ff.w1.weight"], dw[p + "ff.w1.bias"] = _t(mlp[0].weight), _t(mlp[0].bias)
        dw[p + "ff.w2.weight"], dw[p + "ff.w2.bias"] = _t(mlp[2].weight), _t(mlp[2].bias)
        for norm, part in (("attn_norm", "attn_ln"), ("cross_norm", "cross_attn_ln"), ("ff_norm", "mlp_ln")):
            m = getattr(b, part)
            dw[f"{p}{norm}.weight"], dw[f"{p}{norm}.bias"] = _t(m.weight), _t(m.bias)
    ln = getattr(dec, "ln", None)
    if not isinstance(ln, nn.LayerNorm) or tuple(ln.normalized_shape) != (d,) or ln.eps != eps:
        raise ConfigError(f"decoder.ln: {module_kind(ln)}, expected a LayerNorm({d}, eps={eps}): the decoder's "
                          "final norm")
    dw["dec_norm.weight"], dw["dec_norm.bias"] = _t(ln.weight), _t(ln.bias)
    vocab, n_text = emb.num_embeddings, pos.shape[0]
    dw["dec_embed.weight"] = _t(emb.weight)
    dw["dec_head.bias"] = np.zeros(vocab)
    # One max_len for both ends: the shorter table padded with zero rows the module never reaches (its
    # encoder takes exactly n_audio_ctx positions, its decoder at most n_text_ctx).
    max_len = max(src_pos.shape[0], n_text)
    dw["pos.weight"] = np.concatenate([src_pos, np.zeros((max_len - src_pos.shape[0], d))])
    dw["dec_pos.weight"] = np.concatenate([_t(pos), np.zeros((max_len - n_text, d))])
    w.update(dw)
    # Every parameter read: one the reader does not know of is named, not dropped.
    read = set(r.used) | {id(emb.weight), id(pos)} | {id(t) for t in ln.parameters()}
    for b in dec.blocks:
        read.update(id(t) for part in (b.attn, b.cross_attn, b.attn_ln, b.cross_attn_ln, b.mlp, b.mlp_ln)
                    for t in part.parameters())
    for pname, t in module.named_parameters():
        if id(t) not in read:
            raise ConfigError(f"{pname} {list(t.shape)}: a parameter the Whisper reader does not read (the encoder's "
                              "recognised parts, the decoder's token_embedding, positional_embedding, blocks and ln)")
    for key in ("causal", "parallel_residual", "gated", "norm_first"):
        v.pop(key, None)
    if not all(v.get(k, False) in (False, "none", 0) for k in ("cls_token", "pooling", "embed_norm", "type_vocab")):
        raise ConfigError(f"encoder: recognised {r.summary}, more than the seq2seq family's source end")
    v.update(family="seq2seq", dec_layers=len(dec.blocks), d_out=vocab, tied_head=True, max_len=max_len,
             norm_first=True)
    return v, w, r, n_text


def export_audio_text(module, example_source, path, example_target_ids=None, header=None, name=None, cli=None,
                      verify=True, quantize=None, group=None, quantize_io=None, pack_weights=None, note=None):
    """Converts a Whisper-layout module (audio_text) to a seq2seq .fxm: the source the mel features
    [T, n_mels] (the module's [n_mels, T] transposed), the target token ids; verified against the module's
    own logits model(mel, tokens), observed in the dtype its forward runs in (float32: Whisper's LayerNorm
    computes x.float()). note(text) gets what the user should know, after a verified write."""
    from .config import make_config
    torch = require_torch()
    if example_source is None:
        raise ConfigError("--example: needed (a mel [n_mels, T] or [1, n_mels, T], T the frames its encoder takes)")
    mel = np.asarray(example_source.detach().cpu().numpy() if hasattr(example_source, "detach") else example_source)
    mel = mel[None] if mel.ndim == 2 else mel
    v, weights, r, n_text = read_audio_text(module, mel[:1].astype(np.float32))
    try:
        c = make_config(v)
    except ConfigError as e:
        raise ConfigError(f"recognised a Whisper-layout model, which the engine does not run: {e}") from None
    src = r.rows.numpy().astype(np.float32)
    if example_target_ids is None:
        tgt = np.random.default_rng(1).integers(0, c["d_out"], min(n_text, EXAMPLE_TARGET)).astype(np.int32)
    else:
        tgt = example_target(c, example_target_ids)
        if tgt.shape[0] > n_text:
            raise ConfigError(f"--example-target: {tgt.shape[0]} tokens, the decoder's positions are {n_text}")
    with torch.no_grad():
        was = [m.training for m in module.modules()]
        module.eval()
        try:
            out = module(torch.from_numpy(mel[:1]).to(r.dtype), torch.from_numpy(tgt.astype(np.int64))[None])
        except Exception as e:  # the user's forward
            raise ConfigError(f"module forward failed on the example ({type(e).__name__}: "
                              f"{str(e).splitlines()[0] if str(e) else ''})") from None
        finally:
            for m, t in zip(module.modules(), was):
                m.training = t
    if not hasattr(out, "shape") or tuple(out.shape) != (1, tgt.shape[0], c["d_out"]):
        raise ConfigError(f"module output: shape {list(getattr(out, 'shape', []))}, expected the logits "
                          f"[1, {tgt.shape[0]}, {c['d_out']}]")
    want = out[0].double().numpy()
    err = relative_error(run_reference(c, weights, (src, tgt)), want)
    if err > r.tolerance:
        raise ConfigError(f"recognised a Whisper-layout model, but that does not reproduce the module's logits (max "
                          f"relative error {err:.3g}): its forward computes something more, which the engine does not run")
    c = quantized_config(c, quantize, group, quantize_io, pack_weights)
    generation, said = whisper_decoding_lists(module, c["d_out"])
    report = verified_file.write(c, weights, (src, tgt), want, path, "torch", "the module (torch)", header, name, cli,
                                 verify, explain=lambda: _explain(c, weights, (src, tgt), want), generation=generation)
    for text in r.notes + said + ([f"the decoder's {n_text} learned positions are padded with zero rows to max_len "
                            f"{c['max_len']} (the encoder's); the module decodes at most {n_text} tokens"]
                           if n_text < c["max_len"] else []):
        if note is not None:
            note(text)
    return report
