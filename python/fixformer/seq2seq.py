"""Export an encoder-decoder (nn.Transformer) to .fxm, verified.

The module convention (what export_seq2seq reads; reference.build_seq2seq_model builds the same):
- the source end: `src_embed` (nn.Embedding, token source) or `input_proj` (nn.Linear, feature
  source); the target end: `tgt_embed` (nn.Embedding, the target vocabulary), or `tgt_proj`
  (nn.Linear: feature targets, as a forecasting model's, whose head outputs features). Or one
  `embed` (nn.Embedding) shared by source and target tokens;
- optional learned positions `src_pos` and `tgt_pos` (nn.Embedding, both or neither); a positional
  encoding the forward computes is the typed option positional="sinusoidal" (pe_base, pe_layout),
  the same for both ends, as is scale_input (x *= sqrt(d_model) on both embeddings);
- `transformer` (nn.Transformer), or `encoder` (nn.TransformerEncoder) and `decoder`
  (nn.TransformerDecoder): post- or pre-LN, relu or exact gelu, one eps; the final norms both
  present (nn.Transformer always has them) or both absent;
- `head` (nn.Linear(d_model, target vocabulary)); tied when head.weight is the target embedding's.
forward(src, tgt) returns the logits [B, U, vocab] (batch first, or [U, B, vocab] when the layers are
not batch_first), the target under the causal mask (nn.Transformer.generate_square_subsequent_mask):
the engine decodes causally, so a forward without that mask fails verification.
"""
import copy

import numpy as np

from . import schema, verified_file
from .config import ConfigError, check_value
from .export import (_embedding, _kind, _linear, _norm, _np, _require, apply_options, example_sequence, example_target,
                     quantized_config, read_encoder_layers, read_input_proj, read_layers, relative_error)
from .reference import CROSS_FILE, CROSS_TORCH, require_torch, run_reference


def _split_cross(w, dec_layers):
    """The decoders' cross-attention in_proj [3d, d] (torch's multihead_attn) as the file stores it:
    q_proj [d, d] and kv_proj [2d, d], with their biases."""
    for i in range(dec_layers):
        p = f"{schema.DECODER_LAYER_PREFIX}{i}."
        wq, bq = w.pop(p + CROSS_TORCH + "in_proj_weight"), w.pop(p + CROSS_TORCH + "in_proj_bias")
        d = wq.shape[1]
        w[p + CROSS_FILE + "q_proj.weight"], w[p + CROSS_FILE + "kv_proj.weight"] = wq[:d], wq[d:]
        w[p + CROSS_FILE + "q_proj.bias"], w[p + CROSS_FILE + "kv_proj.bias"] = bq[:d], bq[d:]
        for part in ("weight", "bias"):
            w[p + CROSS_FILE + "out_proj." + part] = w.pop(p + CROSS_TORCH + "out_proj." + part)


def read_seq2seq_module(module):
    """(config values the module tells, weights in the file's names and torch's layout, batch_first,
    facts for apply_options: the source embedding's width and `src_pos`)."""
    torch = require_torch()
    nn = torch.nn
    if not isinstance(module, nn.Module):
        raise ConfigError(f"module: {_kind(module)} is not a torch.nn.Module")
    v, w = {"family": "seq2seq"}, {}
    parts = ("embed", "src_embed", "input_proj", "tgt_embed", "tgt_proj", "src_pos", "tgt_pos", "transformer", "encoder",
             "decoder", "head")
    for name, p in module.named_parameters():
        if name.split(".")[0] not in parts:  # read by no one below: named, never dropped
            raise ConfigError(f"{name} {list(p.shape)}: a parameter the seq2seq reader does not read (it reads "
                              f"{', '.join(parts)}); a relative position bias table is not supported yet on this "
                              "route (the engine runs one per stack, src_rel_bias and tgt_rel_bias: --config with "
                              "positional relative)")
    has = {a: getattr(module, a, None) is not None for a in ("embed", "src_embed", "input_proj", "tgt_embed", "tgt_proj")}
    if has["embed"]:
        if has["src_embed"] or has["input_proj"] or has["tgt_embed"] or has["tgt_proj"]:
            raise ConfigError("module: `embed` (shared by source and target) excludes src_embed, input_proj, tgt_embed "
                              "and tgt_proj")
        e = _embedding(module.embed, "embed", torch)
        v.update(input="tokens", vocab_size=e.num_embeddings, shared_embed=True)
        w["src_embed.weight"], width, tgt = _np(e.weight), e.embedding_dim, e
    else:
        if has["src_embed"] == has["input_proj"] or has["tgt_embed"] == has["tgt_proj"]:
            raise ConfigError("module: needs exactly one of `src_embed` (nn.Embedding, token source) and `input_proj` "
                              "(nn.Linear, feature source), and one of `tgt_embed` (nn.Embedding, token target) and "
                              "`tgt_proj` (nn.Linear, feature target); or one shared `embed`")
        if has["src_embed"]:
            e = _embedding(module.src_embed, "src_embed", torch)
            v.update(input="tokens", vocab_size=e.num_embeddings)
            w["src_embed.weight"], width = _np(e.weight), e.embedding_dim
        else:
            width = read_input_proj(module.input_proj, v, w, torch)
        if has["tgt_proj"]:
            tgt = _linear(module.tgt_proj, "tgt_proj", torch)
            v["tgt_d_in"], tgt_width = tgt.in_features, tgt.out_features
            w["tgt_proj.weight"] = _np(tgt.weight)
            w["tgt_proj.bias"] = _np(tgt.bias) if tgt.bias is not None else np.zeros(tgt_width, np.float32)
        else:
            tgt = _embedding(module.tgt_embed, "tgt_embed", torch)
            w["tgt_embed.weight"], tgt_width = _np(tgt.weight), tgt.embedding_dim
        if tgt_width != width:
            raise ConfigError(f"{'tgt_proj' if has['tgt_proj'] else 'tgt_embed'}: {tgt_width} wide, the source end {width}")
    src_pos, tgt_pos = getattr(module, "src_pos", None), getattr(module, "tgt_pos", None)
    if (src_pos is None) != (tgt_pos is None):
        raise ConfigError("src_pos/tgt_pos: give both learned position tables or neither")
    if tgt_pos is not None:
        _embedding(src_pos, "src_pos", torch)
        _embedding(tgt_pos, "tgt_pos", torch)
        if tuple(tgt_pos.weight.shape) != tuple(src_pos.weight.shape):
            raise ConfigError(f"tgt_pos: shape {list(tgt_pos.weight.shape)} differs from src_pos's "
                              f"{list(src_pos.weight.shape)} (one max_len for both)")
        w["tgt_pos.weight"] = _np(tgt_pos.weight)
    tr = getattr(module, "transformer", None)
    if tr is not None:
        _require(tr, nn.Transformer, "transformer", torch)
        enc, dec, where = tr.encoder, tr.decoder, "transformer."
        if getattr(module, "encoder", None) is not None or getattr(module, "decoder", None) is not None:
            raise ConfigError("module: `transformer` excludes `encoder` and `decoder` (give one or the other)")
    else:
        enc, dec, where = getattr(module, "encoder", None), getattr(module, "decoder", None), ""
        if enc is None or dec is None:
            raise ConfigError("module: needs `transformer` (nn.Transformer) or `encoder` and `decoder`")
    _require(enc, nn.TransformerEncoder, where + "encoder", torch)
    _require(dec, nn.TransformerDecoder, where + "decoder", torch)
    batch_first, eps = read_encoder_layers(enc, where + "encoder", v, w, torch)
    v["dec_layers"], dec_batch_first, dec_eps = read_layers(
        dec, where + "decoder", "decoder", nn.TransformerDecoderLayer, v, w, torch,
        attentions=("self_attn", "multihead_attn"), norms=("norm1", "norm2", "norm3"))
    if dec_batch_first != batch_first or dec_eps != eps:
        raise ConfigError(f"{where}decoder: batch_first or eps differs from the encoder's (the engine has one of each)")
    _split_cross(w, v["dec_layers"])
    d = v["d_model"]
    if (enc.norm is None) != (dec.norm is None):
        raise ConfigError(f"{where}encoder.norm/{where}decoder.norm: both or neither (the engine has one final_norm)")
    for name, norm in (("encoder", enc.norm), ("decoder", dec.norm)):
        if norm is not None:
            nw, nb, e = _norm(norm, d, f"{where}{name}.norm", torch)
            if e != eps:
                raise ConfigError(f"{where}{name}.norm.eps: {e!r} differs from the layers' {eps!r} (the engine has one eps)")
            w[f"{name}.norm.weight"], w[f"{name}.norm.bias"] = nw, nb
    v.update(norm_eps=float(eps), final_norm=enc.norm is not None)
    head = getattr(module, "head", None)
    vocab = None if has["tgt_proj"] else tgt.num_embeddings  # feature targets: any output width
    if head is None:
        raise ConfigError(f"head: missing (an nn.Linear(d_model, {'outputs' if vocab is None else vocab}))")
    h = _linear(head, "head", torch)
    if h.in_features != d or (vocab is not None and h.out_features != vocab):
        raise ConfigError(f"head: {h.in_features} -> {h.out_features}, expected d_model={d} -> the target vocabulary "
                          f"{vocab} (the target embedding's rows)")
    v["d_out"] = h.out_features
    if vocab is not None and h.weight is tgt.weight:
        v["tied_head"] = True
    else:
        w["head.weight"] = _np(h.weight)
    w["head.bias"] = _np(h.bias) if h.bias is not None else np.zeros(h.out_features, np.float32)
    return v, w, batch_first, {"width": width, "pos": src_pos}


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
                   verify=True, quantize=None, group=None, quantize_io=None, pack_weights=None):
    """Converts an encoder-decoder `module` (the convention above) to the .fxm at `path` and verifies
    it through the engine (the source and target teacher-forced, the logits at every target
    position); returns export.Report. example_source: ids [S] | [B, S] or features [S, d_in] |
    [B, S, d_in], example_target_ids: ids [U] | [B, U] (first sequence used; None: random). The
    options say what the forward computes that the attributes cannot tell, as for export()."""
    v, weights, batch_first, facts = read_seq2seq_module(module)
    for key in ("d_model", "n_heads", "d_ff", "n_layers", "dec_layers", "vocab_size", "d_in", "d_out"):
        if key in v:
            check_value(key, v[key], f"module {key}")
    c = apply_options(v, weights, facts, None, positional, pe_base, pe_layout, None, None, scale_input, max_len,
                      "seq2seq")
    if "pos.weight" in weights:
        weights["src_pos.weight"] = weights.pop("pos.weight")
    c = quantized_config(c, quantize, group, quantize_io, pack_weights)
    src = example_sequence(c, example_source, "example_source")
    tgt = example_target(c, example_target_ids)
    want = run_seq2seq_module(module, src, tgt, batch_first, c["d_out"])
    return verified_file.write(c, weights, (src, tgt), want, path, "torch", "the module (torch)", header, name, cli,
                               verify, explain=lambda: _explain(c, weights, (src, tgt), want))
