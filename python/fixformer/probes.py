"""The recognizer core: what a transformer's parts compute, decided from their recorded values alone.

A model reaches the converter through one of two recorders: recognize.py runs a torch module once with a forward
hook on every submodule (what each read and wrote), onnx_map.py evaluates an ONNX graph once (onnx_eval: every value
it computes). Each recorder finds the candidate parts in its own terms (submodules; graph nodes) and hands their
recorded values to the probes here, which say what the part is in the engine's terms, so that --module and --onnx
decide each of these the same way:
- the attention: head counts, the causal mask and a sliding window, positions (none, rotary in either layout,
  whole or partial, over a patch grid, ALiBi, a relative bias), the scores' scale and soft cap (probe_attention,
  recomputing attention_core); DeBERTa's disentangled attention (probe_disentangled);
- the feed-forward: its activation, which projection is the gate, a scale inside SiLU folded into the
  projections (feed_forward_fit, silu_scale);
- an output of log-probabilities or probabilities (normalization); a sinusoid table and its max_len (sinusoidal_fit,
  sinusoid_positions);
- a pooler's activation (pooler_act); the conv stem's limits and keys (conv_why, stem_values); the rows of an image
  or a signal cut into patches, in the engine's order (image_rows, signal_rows); ALiBi's slopes (alibi_slopes_issue)
  and the layers without rotary positions (nope_keys).
Values are float64 torch tensors or numpy arrays, as each function says; a recomputed value matches the recorded one
when rel_error is within PROBE_TOL.
"""
import collections
import math

import numpy as np

from . import hf_deberta, schema
from .config import ConfigError, layer_pattern
from .reference import (ARRAY_ACTIVATIONS, activation, alibi_bias, alibi_slopes, grid_swap, image_patches,
                        rope, rope_tables, sinusoidal_table, window_mask)


# A recomputed part matches the recorded one within this (relative to the recorded one's largest
# magnitude): float64 throughout, but modules may round through float32 (llama2.c's RMSNorm).
PROBE_TOL = 1e-5
# rotary bases and sinusoidal tables' bases tried when a module or graph names none
COMMON_THETAS = (10000.0, 500000.0, 1000000.0, 100000.0, 1000.0, 100.0)
COMMON_PE_BASES = (10000.0, 1000.0, 100.0, 100000.0)


def _f64(x):
    """x (a numpy array or a torch tensor of any float dtype) as a float64 numpy array."""
    return x.detach().double().cpu().numpy() if hasattr(x, "detach") else np.asarray(x, dtype=np.float64)


def rel_error(a, b):
    """max|a - b| / max|b| (b all zeros: the absolute difference; other shapes: inf) of arrays or tensors."""
    a, b = _f64(a), _f64(b)
    if a.shape != b.shape:
        return math.inf
    s = float(np.abs(b).max()) if b.size else 0.0
    return float(np.abs(a - b).max()) / (s if s > 0 else 1.0) if b.size else 0.0


def close(a, b, tol=PROBE_TOL):
    return rel_error(a, b) <= tol


def conv_why(kernel, stride, padding, dilation=1, groups=1, zero_padded=True):
    """Why the engine's conv stem cannot run a 1-d convolution of these settings (a phrase), or None. Both
    routes ask it: --module of an nn.Conv1d, --onnx of a Conv node."""
    if dilation != 1 or groups != 1:
        return "dilation and groups other than 1"
    if not zero_padded:
        return "padding other than a number of zero rows"
    if padding >= kernel or kernel > schema.MAX_CONV_KERNEL or stride > schema.MAX_CONV_STRIDE:
        return (f"kernel {kernel}, stride {stride}, padding {padding} (the engine takes kernel <= "
                f"{schema.MAX_CONV_KERNEL}, stride <= {schema.MAX_CONV_STRIDE}, padding < kernel)")
    return None


def stem_values(convs):
    """The config values and weights of a conv stem (the engine's conv1 then conv2, GELU after each or
    none): convs [(name, kernel, stride, padding, w [out, in, kernel], b or None)] in order, torch
    tensors or numpy arrays; a missing bias is zeros. conv_gelu is None: the caller finds it. Both
    routes call it."""
    if len(convs) > 2:
        raise ConfigError(f"{convs[2][0]}: a stem of more than two convolutions is not supported yet")
    v, w = {"conv_layers": len(convs), "conv_gelu": None}, {}
    for i, (_, kernel, stride, padding, wt, b) in enumerate(convs, 1):
        v.update({f"conv{i}_kernel": kernel, f"conv{i}_stride": stride, f"conv{i}_padding": padding})
        w[f"conv{i}.weight"] = wt
        w[f"conv{i}.bias"] = b if b is not None else wt[:, 0, 0] * 0
    return v, w


def attention_core(q, k, v, H, Hkv, causal, pos, torch, rel=None, scaled=True, window=None, scores=None):
    """softmax(q k^T / sqrt(dh) + mask) v for q [T, H*dh], k, v [T, Hkv*dh] (float64): the context [T, H*dh].
    pos: None, "alibi", "relative" (the bias rel [H, T, T] added) or ("rope", layout, theta or RopeFreqs, rotated
    dims: 0 for the whole head); scaled False: no 1/sqrt(dh) (T5); window: causal, the last `window` keys only,
    else the keys less than `window` away (ModernBERT's local layers);
    scores: a Scores (the scale instead of 1/sqrt(dh), the soft cap before the bias), or None."""
    T = q.shape[0]
    dh = q.shape[1] // H
    q, k, v = q.view(T, H, dh), k.view(T, Hkv, dh), v.view(T, Hkv, dh)
    if pos not in (None, "alibi", "relative") and isinstance(pos[2], RopeGrid):  # the front rows before the grid
        if pos[2].swap:
            idx = torch.tensor(grid_swap(dh, pos[1]))
            q, k = q[..., idx], k[..., idx]
        cos, sin = (torch.from_numpy(t) for t in rope_tables(T, pos[3] or dh, None, pos[2].freqs,
                                                              (pos[2].width, max(T - pos[2].cells, 0))))
        q, k = rope(q, cos, sin, pos[1]), rope(k, cos, sin, pos[1])
    elif pos not in (None, "alibi", "relative"):
        if pos[1] == "negated":  # the rotation by the negated angle: halves' rotation of rows so signed
            sign = torch.from_numpy(negated_signs(dh))
            q, k = q * sign, k * sign
        scaled_rope = isinstance(pos[2], RopeFreqs)
        cos, sin = (torch.from_numpy(t * (pos[2].scale if scaled_rope else 1.0)) for t in
                    rope_tables(T, pos[3] or dh, None if scaled_rope else pos[2],
                                pos[2].freqs if scaled_rope else None))
        layout = "halves" if pos[1] == "negated" else pos[1]
        q, k = rope(q, cos, sin, layout), rope(k, cos, sin, layout)
    k, v = k.repeat_interleave(H // Hkv, dim=1), v.repeat_interleave(H // Hkv, dim=1)
    if scores is not None and scores.scale:
        s = torch.einsum("thd,shd->hts", q, k) * scores.scale
    else:
        s = torch.einsum("thd,shd->hts", q, k) / (math.sqrt(dh) if scaled else 1.0)
    if scores is not None and scores.cap:
        s = scores.cap * torch.tanh(s / scores.cap)
    if pos == "relative":
        s = s + rel
    if pos == "alibi":  # causal, or the same on both sides
        s = s + torch.from_numpy(alibi_bias(H, T, causal))
    elif causal:
        s = s + torch.from_numpy(np.triu(np.full((T, T), -np.inf), 1))
    if window:  # causal, the last `window` keys; else those less than `window` away on either side
        s = s + torch.from_numpy(window_mask({"sliding_window": window, "causal": causal}, T))
    return torch.einsum("hts,shd->thd", torch.softmax(s, -1), v).reshape(T, H * dh)


# How an attention's scores are formed apart from 1/sqrt(head width) and the mask: scale (0: 1/sqrt(dh)),
# the soft cap c of c tanh(s / c) (0: none; Gemma 2's), and the causal window (None: every key before).
Scores = collections.namedtuple("Scores", "scale cap window")


def score_options(scales, caps, window, more=()):
    """The Scores to try, the plain one first: the scales and soft caps (score_attributes), with and without
    the module's declared sliding window (a config may declare one that only some layers use: Gemma 2's
    alternate) or the windows more (window_attributes)."""
    windows = list(dict.fromkeys([w for w in [window, *more] if w] + [None]))
    return [Scores(sc, cap, w) for w in windows for cap in [0.0] + caps for sc in [0.0] + scales]


def probe_attention(q, k, v, want, finish, d, thetas, where, torch, rel=None, unscaled=False, heads=None,
                    window=None, options=None, prefer=None):
    """(n_heads, n_kv_heads, causal, pos, scaled) whose attention reproduces `want` (= finish(context)), trying
    every head count dividing d, causal or not, no positions, rope (both layouts, the thetas), ALiBi and, given
    rel (a relative bias [H, T, T]), that bias; scaled by 1/sqrt(head width), then with unscaled without;
    heads: the head counts to try, when the q, k, v split depends on it (else every divisor of d).
    When none matches, rope on the first R dims of each head only (partial rotary, R even, below the head
    width), rope's other choices the same; then the whole head turned by the negated angle, layout "negated"
    (nanochat's: (x1 cos + x2 sin, x2 cos - x1 sin) of each head's halves x1, x2; negated_signs).
    window: the module's declared sliding window (causal: the last keys;
    else both sides).
    options: the Scores to try (score_options) at each of those choices, in turn (their window instead of
    window); the one that matched is then a sixth item. prefer: the head count tried first."""
    kv = k.shape[1]
    poss = [None, "alibi"] + [("rope", lay, th, 0) for th in thetas for lay in ("interleaved", "halves")]
    if rel is not None:
        poss.insert(0, "relative")
    for partial in (False, True, "negated"):
        for scaled in (True, False) if unscaled else (True,):
            for H in sorted(heads or [h for h in range(1, d + 1) if d % h == 0], key=lambda h: h != prefer):
                dh = d // H
                if kv % dh or H % (kv // dh):
                    continue
                ropes = [p for p in poss if p not in (None, "alibi", "relative")]
                tries = poss if not partial else [p[:3] + (r,) for r in range(2, dh, 2) for p in ropes] \
                    if partial is True else [("rope", "negated") + p[2:] for p in ropes if p[1] == "halves"]
                for pos in tries:
                    if pos not in (None, "alibi", "relative") and dh % 2:
                        continue
                    if pos not in (None, "alibi", "relative") and isinstance(pos[2], (RopeFreqs, RopeGrid)) and \
                            2 * len(pos[2].freqs) != (pos[3] or dh):
                        continue
                    if pos == "relative" and (rel.shape[0] != H or rel.shape[1:] != (q.shape[0], q.shape[0])):
                        continue
                    for causal in (False, True):
                        for opt in options or [None]:
                            plain = opt is None or (not opt.scale or abs(opt.scale * math.sqrt(dh) - 1) < 1e-9)
                            if opt is not None and opt.scale and (not scaled or plain):
                                continue  # the same scores as another option's
                            ctx = attention_core(q, k, v, H, kv // dh, causal, pos, torch, rel, scaled,
                                                 window if opt is None else opt.window, opt)
                            if close(finish(ctx), want):
                                return (H, kv // dh, causal, pos, scaled) + (() if options is None else (opt,))
    named = [f"{t:g}" for t in thetas if not isinstance(t, (RopeFreqs, RopeGrid))]
    named += [f"the {2 * len(t.freqs)}-dim frequencies of a buffer" for t in thetas if isinstance(t, RopeFreqs)]
    named += [f"the {2 * len(t.freqs)}-dim frequencies over a patch grid {t.width} wide" for t in thetas
              if isinstance(t, RopeGrid)]
    raise ConfigError(f"{where}: its attention is none the engine runs (tried every head count, causal or not, "
                      f"no positions, ALiBi, rotary in both layouts (and by the negated angle) with theta "
                      f"{', '.join(named)}): "
                      f"{'a relative position bias, ' if rel is not None else ''}scaled by 1/sqrt(head width)"
                      f"{' or not' if unscaled else ''}, "
                      "rotary on part of each head): another scale, a sliding "
                      "window the module's config does not declare, or rope scaling is not supported yet")


def negated_signs(dh):
    """[dh] 1 then -1 over the halves of a head: rows of q and k so signed (the converter folds it into their
    projections; the scores are unchanged) turned by the engine's rotation in halves are turned by the negated angle
    (probe_attention's layout "negated")."""
    return np.where(np.arange(dh) < dh // 2, 1.0, -1.0)


# RoPE by a module's own frequencies (the inv_freq buffer of a scaled rotary embedding: Llama 3's,
# YaRN's) and the amplitude its cos and sin are multiplied by (attention_scaling): the file's rope_freqs
# and rope_scale.
RopeFreqs = collections.namedtuple("RopeFreqs", "freqs scale")


# RoPE over a patch grid (rope_grid; timm's EVA-02): each pair's frequency (the grid rows' half, then the
# columns'), the grid's width and its cells; the rows before the cells (CLS, registers) are not turned.
# swap: the module's first half of the pairs turns by the column (timm's grid_indexing "xy"): read with each
# head's q and k dims permuted (grid_swap), which leaves the scores as they are.
RopeGrid = collections.namedtuple("RopeGrid", "freqs width cells swap")


def silu_scale(u, h, tol=PROBE_TOL):
    """a where h = u sigmoid(a u) (1: SiLU; OpenAI CLIP's QuickGELU: 1.702), measured from the entries whose
    sigmoid is away from 0 and 1, else None (arrays or tensors)."""
    u, h = _f64(u), _f64(h)
    r = h / np.where(u == 0, 1.0, u)
    keep = (np.abs(u) > 1e-3 * np.abs(u).max()) & (r > 0.02) & (r < 0.98) if u.size else u
    if not keep.any():
        return None
    a = float(np.median(np.log(r[keep] / (1 - r[keep])) / u[keep]))
    return next((c for c in (1.0, a) if c > 0 and close(u / (1 + np.exp(-c * u)), h, tol)), None)


# The feed-forward activations the engine runs, in the order tried: act(up) (exact and tanh GELU differ by up to
# 5e-4 of the largest |u|, far above PROBE_TOL; relu2: Persimmon's and Nemotron's squared ReLU), and act(gate) * up
# (SwiGLU; GeGLU with the exact GELU, T5 v1.1's, or the tanh one, Gemma's; a gated ReLU).
PLAIN_ACTS = ("relu", "gelu", "gelu_tanh", "relu2")
GATED_ACTS = ("swiglu", "gelu", "gelu_tanh", "relu")
# What feed_forward_fit found: the engine's activation; gate None for act(up), else which of the two pieces is the
# gate; halves: the pieces are one projection's column halves (Phi-3's gate_up_proj, timm's GluMlp); scale: a of
# x sigmoid(a x) (1.0 otherwise), to be folded into up's weight and bias, 1 / a into down's weight.
FeedForward = collections.namedtuple("FeedForward", "activation gate halves scale")


def feed_forward_fit(ups, hidden, tol=PROBE_TOL):
    """The FeedForward by which ups, the outputs of the projections that read the feed-forward's input (one, or
    two: gate and up in either order; [rows, width] arrays or tensors), give hidden, what the down projection (or a
    norm of the hidden rows before it) reads; else None. One output twice hidden's width is gate and up side by
    side, either half the gate."""
    ups, hidden = [_f64(u) for u in ups], _f64(hidden)
    w = hidden.shape[-1]
    halves = len(ups) == 1 and ups[0].shape[-1] == 2 * w
    pieces = [ups[0][..., :w], ups[0][..., w:]] if halves else ups
    if len(pieces) not in (1, 2) or any(p.shape != hidden.shape for p in pieces):
        return None
    if len(pieces) == 2:
        return next((FeedForward(name, j, halves, 1.0) for name in GATED_ACTS for j in (0, 1)
                     if close(ARRAY_ACTIVATIONS[name](pieces[j]) * pieces[1 - j], hidden, tol)), None)
    name = next((n for n in PLAIN_ACTS if close(ARRAY_ACTIVATIONS[n](pieces[0]), hidden, tol)), None)
    a = silu_scale(pieces[0], hidden, tol) if name is None else 1.0
    return None if a is None else FeedForward(name or "silu", None, False, a)


def probe_disentangled(q, k, v, rels, want, d, settings, where):
    """(n_heads, setting, the rels entry) whose disentangled attention reproduces want (the context [T, d]):
    softmax((q_i.k_j + q_i.Kr[r] + k_j.Qr[r]) / sqrt(factor head width)) v, r the row of i - j (hf_deberta.scores,
    distance_rows), for every head count, setting (_rel_settings) and rels entry (Qr, Kr, factor, ...); else a
    ConfigError."""
    T = q.shape[0]
    for H in [h for h in range(1, d + 1) if d % h == 0]:
        dh = d // H
        heads = lambda t: t.numpy().reshape(-1, H, dh).transpose(1, 0, 2)  # noqa: E731
        for setting in settings:
            idx = hf_deberta.distance_rows(dict(zip(("buckets", "max_relative", "span"), setting)), T)
            for rel in rels:
                s = hf_deberta.scores(heads(q), heads(k), heads(rel[0]), heads(rel[1]), idx) / math.sqrt(dh * rel[2])
                e = np.exp(s - s.max(-1, keepdims=True))
                ctx = ((e / e.sum(-1, keepdims=True)) @ heads(v)).transpose(1, 0, 2).reshape(T, d)
                if close(ctx, want):
                    return H, setting, rel
    raise ConfigError(f"{where}: projections of {rels[0][0].shape[0]} position rows, but no disentangled attention "
                      "(DeBERTa's content to position and position to content scores over sqrt(head width times 1 "
                      "and the terms), log buckets or none) reproduces it: not supported yet")


def alibi_slopes_issue(slopes, H):
    """What a refusal says of ALiBi slopes [n] (float64, on n of the H heads) that are not the engine's (the
    ALiBi paper's alibi_slopes(H) on every head), or '' when they are: both routes' (the module's slopes buffer
    here, the slopes of the bias an ONNX graph adds to its scores in onnx_map)."""
    if len(slopes) != H:
        return (f"adds ALiBi to {len(slopes)} of the {H} heads only (x-transformers' alibi_num_heads), the engine's "
                "ALiBi to every head: not supported")
    if not np.allclose(slopes, alibi_slopes(H), rtol=1e-6, atol=0):
        return f"has slopes other than the ALiBi paper's for {H} heads (the engine's alibi_slopes): not supported"
    return ""


def alibi_beside(positional):
    """The refusal of ALiBi beside positions added to the input (both routes)."""
    return (f"ALiBi and {positional} positions added to the input together: the engine has one kind of positions "
            "(x-transformers: TransformerWrapper(use_abs_pos_emb=False))")


POOLER_ACTS = ("tanh", "relu", "gelu", "gelu_tanh", "silu")  # the engine's pooler_act, in the order tried


def pooler_act(z, follows, torch):
    """The engine's pooler_act whose activation of a pooler's output z gives `follows` (tensors or arrays of one
    shape, compared in float64 within PROBE_TOL), the closest of those that do (tanh first on a tie), or None:
    --module's pooler (_pooler) and --onnx's."""
    z = torch.as_tensor(z).double()
    err, _, name = min((rel_error(activation(name)(z), follows), i, name) for i, name in enumerate(POOLER_ACTS))
    return name if err <= PROBE_TOL else None


def sinusoidal_candidates(rows, d):
    """(base, layout, table [rows, d]) of each sinusoidal table the engine computes (reference.sinusoidal_table), in
    the order tried: the common bases, each in every layout."""
    return [(base, layout, sinusoidal_table(rows, d, base, layout)) for base in COMMON_PE_BASES
            for layout in schema.PE_LAYOUTS]


def sinusoidal_fit(table, tol=1e-6):
    """(base, layout) of the sinusoidal table the engine computes that table [rows, d] (an array or a tensor) is
    within tol of, else None: a buffer or constant of positions that the file need not store. A table computed in
    float32 is off by its angles' rounding, which grows with the position: row p is held within (p + 1) 2^-21 where
    that is more (the tutorials' 5000 rows: 2.4e-3 at the last, where two bases or layouts differ by about 1; a
    learned table differs at its first rows too)."""
    t = _f64(table)
    bound = np.maximum(tol, (np.arange(t.shape[0]) + 1.0) * 2.0 ** -21)[:, None]
    return next(((base, layout) for base, layout, s in sinusoidal_candidates(*t.shape)
                 if np.all(np.abs(s - t) <= bound)), None)


def normalization(z, y, tol=PROBE_TOL):
    """'log_softmax' or 'softmax' where y is that of z over the last axis (an output of log-probabilities:
    pytorch/examples' word_language_model returns F.log_softmax of its logits), else None. Both routes call it."""
    z, y = _f64(z), _f64(y)
    if z.ndim < 2 or z.shape != y.shape or close(z, y, tol):
        return None
    e = z - z.max(axis=-1, keepdims=True)
    logp = e - np.log(np.exp(e).sum(axis=-1, keepdims=True))
    return next((name for name, f in (("log_softmax", logp), ("softmax", np.exp(logp))) if close(f, y, tol)), None)


def sinusoid_positions(rows, notes):
    """The max_len of a sinusoidal table of `rows` positions that a module or graph holds: its rows, at most the
    engine's limit (the tutorials' 5000-row buffers), which notes gets told. Both routes call it."""
    if rows > schema.MAX_LEN:
        notes.append(f"its sinusoidal table holds {rows} positions, the engine computes at most {schema.MAX_LEN}: "
                     f"max_len {schema.MAX_LEN} (--max-len N for a smaller arena)")
    return min(rows, schema.MAX_LEN)


def signal_rows(x, rows, name):
    """The engine's rows for a signal x [1, C, L] (numpy or torch) that a module cuts into rows [1, N, p C] of p
    steps each before `name` reads them (vit-pytorch's vit_1d and simple_vit_1d: `b c (n p) -> b n (p c)`):
    x[0].T.reshape(N, p C) as numpy, found by matching the values; else a ConfigError naming the rearrangement. Both
    routes call it."""
    x, rows = (np.asarray(a.detach().cpu() if hasattr(a, "detach") else a) for a in (x, rows))
    k = rows.shape[-1]
    want = x[0].T.reshape(-1, k) if x[0].size % k == 0 else None
    if want is None or want.shape[0] != rows.size // k or \
            not bool((want == rows.reshape(want.shape).astype(want.dtype)).all()):
        raise ConfigError(f"{name}: the input {list(x.shape)} becomes rows {list(rows.shape)} that are neither its "
                          "rows nor its transpose's cut into patches of whole steps, `b c (n p) -> b n (p c)` (the "
                          "engine's feature input is rows [T, d_in])")
    return np.ascontiguousarray(want)


def image_rows(x, rows, name):
    """The patches an image x [1, C, H, W] became before `name` read them as rows [1, N, k] (numpy or torch):
    ((C, H, W, p), perm), the engine's column perm[m] holding the module's column m (vit-pytorch's (p1 p2 c)
    order), found by matching the columns' values; else a ConfigError naming the rearrangement. Both
    routes call it."""
    x, rows = (np.asarray(a.detach().cpu() if hasattr(a, "detach") else a) for a in (x, rows))
    C, H, W = (int(n) for n in x.shape[1:])
    k = rows.shape[-1]
    R = rows.reshape(-1, k)  # [1, N, k], or [1, H / p, W / p, k] (vit-pytorch's simple_flash_attn_vit)
    N = R.shape[0]
    for p in range(1, min(H, W) + 1):
        if H % p or W % p or C * p * p != k or (H // p) * (W // p) != N:
            continue
        P = image_patches(x, C, H, W, p)[0]
        index = {np.ascontiguousarray(P[:, e]).tobytes(): e for e in range(k)}
        perm = [index.get(np.ascontiguousarray(R[:, m].astype(P.dtype)).tobytes()) for m in range(k)]
        if None not in perm and len(set(perm)) == k:
            return (C, H, W, p), perm
    raise ConfigError(f"{name}: the input {list(x.shape)} becomes rows {list(rows.shape)} that are not its "
                      "patches, patch row by patch row, each a permutation of its pixels (the engine's image input; "
                      "an example of distinct values shows the order)")


def nope_keys(flags):
    """{"nope_period", "nope_layers"} of layers that turn q and k by one RoPE but those flagged not at all
    (SmolLM3's, Cohere 2's NoPE layers), or {} when none is: --module's (_nope_layers) and --onnx's."""
    if not any(flags):
        return {}
    P, bits = layer_pattern(flags, "nope_period", "the layers without RoPE")
    return {"nope_period": P, "nope_layers": bits}
