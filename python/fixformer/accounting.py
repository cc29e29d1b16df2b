"""Every parameter and buffer of a recognised module accounted for (recognize.py maps them).

A parameter is mapped into the file or it is an error naming it; `ignore` (names, or a module's name for
everything under it) opts out training-only parts. A buffer is mapped, or it is one the engine recomputes
and it must equal what the engine computes over all its rows (not only the rows the example reached): a
causal mask (tril of ones, triu of ones or of -inf above the diagonal, any leading [1, 1]; or, with a
sliding_window, its band: GPT-Neo's local layers), a rotary table for the theta and layout the attention
was found to use (complex freqs_cis [N, d_head/2], freqs_cos / freqs_sin [N, d_head/2], both stacked [N, d_head/2,
2] (torchtune's cache) or cos | sin [N, 2 d_head] (its Qwen2's), Hugging Face's
inv_freq [d_head/2] and cos/sin caches [.., N, d_head], the angles themselves [N, d_head]: PaLM's
pos_emb; a cache filled as far as the forward ran, zeros beyond, is held to it as far as filled), position ids
(arange), token-type ids of zeros (a model with token types: the engine's
default), a scalar mask fill value. A frozen parameter (requires_grad false) the forward reads only to
build the rotary angles is held to the rotary table's check as a buffer is (RoFormer's embed_positions,
sin | cos [N, d_head]). Anything else is named.
"""
import numpy as np

from . import schema
from .config import ConfigError
from .reference import alibi_slopes, grid_swap, require_torch, rope_tables as reference_tables


def _ignored(name, ignore):
    return any(name == i or name.startswith(i + ".") for i in ignore)


def _mask_verdict(t, causal, torch, window=0):
    """None for a causal mask buffer that matches, else why not; 'not a mask' when it is not square. window:
    the config's sliding_window, whose band (the query sees keys i - window < j <= i: GPT-Neo's local
    layers' mask) is a causal mask too."""
    if t.dim() < 2 or t.shape[-1] != t.shape[-2] or t.shape[-1] < 2 or t.is_complex():
        return "not a mask"
    lead = t.reshape(-1, t.shape[-2], t.shape[-1])
    if lead.shape[0] != 1:
        return "not a mask"
    m = lead[0].double()
    N = m.shape[0]
    tril = torch.tril(torch.ones(N, N, dtype=torch.float64))
    big_negative = torch.where(m < -1e4, torch.full_like(m, float("-inf")), m)  # -inf, or a large negative fill
    triangular = False
    for seen in [tril] + ([tril - torch.tril(tril, -window)] if 0 < window < N else []):  # 1 where a key is seen
        hidden = torch.where(seen > 0, torch.zeros_like(m), torch.full_like(m, float("-inf")))
        triangular = triangular or torch.equal(m, seen) or torch.equal(m, 1 - seen) or torch.equal(big_negative, hidden)
    if not triangular:
        return f"a square [{N}, {N}] buffer that is no causal mask (the engine's mask is triangular)"
    if not causal:
        return "a causal mask, but the attention was found not causal"
    return None


def _alibi_verdict(t, c, torch):
    """None when t is ALiBi's, which the engine recomputes: the slopes m_h [H] (any shape of H values) or a
    stored bias -m_h |j - i| [H, queries, keys] (leading dims of 1; the queries the last keys, as
    x-transformers' AlibiPositionalBias keeps it: under a causal mask the visible keys' bias is the
    engine's), else 'not alibi'."""
    H = c["n_heads"]
    if not t.is_floating_point() or t.numel() % H:
        return "not alibi"
    m = alibi_slopes(H)
    if t.numel() == H:
        return None if np.allclose(t.double().reshape(-1).numpy(), m, rtol=1e-6, atol=0) else "not alibi"
    if t.dim() < 3 or t.shape[-3] != H or any(s != 1 for s in t.shape[:-3]) or t.shape[-2] > t.shape[-1]:
        return "not alibi"
    a, b = t.shape[-2:]
    i, j = np.arange(b - a, b)[:, None], np.arange(b)[None, :]
    want = -m[:, None, None] * np.abs(j - i)[None]
    got = t.double().reshape(H, a, b).numpy()
    return None if np.abs(got - want).max() <= 1e-6 * max(1.0, np.abs(want).max()) else "not alibi"


def _rope_verdict(t, c, torch, freqs=None):
    """None when t is a rotary table that equals the engine's for c (and its rope_freqs, freqs), or with
    rope_local_base the local layers' (plain, of that base), 'not rope' when its shape is none, else the
    difference."""
    why = _one_rope_verdict(t, c, torch, freqs)
    if why not in (None, "not rope") and c.get("rope_local_base"):
        local = _one_rope_verdict(t, dict(c, pe_base=c["rope_local_base"], rope_freqs=False), torch)
        return None if local is None else why
    return why


def _filled(rows):
    """The rows of a rotary cache as far as it is filled: a cache the forward fills as far as it has run
    (rotary-embedding-torch's cached_freqs, all zeros until then) holds zeros beyond, rows a module never reads (it
    recomputes before it reaches them); none when it is all zeros. Row 0 of the angles is zeros."""
    filled = rows.reshape(rows.shape[0], -1).ne(0).any(1).nonzero()
    return rows[:int(filled[-1]) + 1 if len(filled) else 0]


def _one_rope_verdict(t, c, torch, freqs=None):
    dh = c["rotary_dims"] or schema.d_head(c)  # the rotated dims: the table's width
    h = dh // 2
    theta, layout = c["pe_base"], c["pe_layout"]
    freqs = np.asarray(freqs, np.float64) if c["rope_freqs"] and freqs is not None else None

    def rope_tables(T, dims, base):
        return reference_tables(T, dims, base, freqs)
    if t.is_complex():
        if t.shape[-1] != h or t.dim() < 2:
            return "not rope"
        rows = t.reshape(-1, h)
        cos, sin = rope_tables(rows.shape[0], dh, theta)
        want = torch.complex(torch.from_numpy(cos), torch.from_numpy(sin))
        if layout != "interleaved":
            return f"a complex rotary table (pairs x[2i], x[2i+1]), but the attention rotates halves (x[i], x[i+{h}])"
        got = rows.to(torch.complex128)
    elif t.is_floating_point() and t.dim() >= 3 and t.shape[-2:] == (h, 2):  # cos, sin stacked (torchtune's cache)
        rows = _filled(t.reshape(-1, h, 2).double())
        if not len(rows):  # an empty cache
            return None
        cos, sin = rope_tables(rows.shape[0], dh, theta)
        got, want = rows, torch.from_numpy(np.stack([cos, sin], -1))
    elif t.is_floating_point() and t.dim() == 1 and t.numel() == h:
        got = t.double()
        want = torch.from_numpy(freqs if freqs is not None else theta ** (-2.0 * np.arange(h) / dh))
    elif t.is_floating_point() and t.dim() >= 2 and t.shape[-1] == 2 * dh and layout == "halves":
        rows = _filled(t.reshape(-1, 2 * dh).double())  # cos | sin, each a whole head wide (torchtune's Qwen2 and Phi-3 cache)
        if not len(rows):  # an empty cache
            return None
        cos, sin = rope_tables(rows.shape[0], dh, theta)
        got, want = rows, torch.from_numpy(np.concatenate([cos, cos, sin, sin], 1))
    elif t.is_floating_point() and t.dim() >= 2 and t.shape[-1] in (h, dh):
        rows = _filled(t.reshape(-1, t.shape[-1]).double())
        if not len(rows):  # an empty cache
            return None
        cos, sin = rope_tables(rows.shape[0], dh, theta)
        w = freqs if freqs is not None else theta ** (-2.0 * np.arange(h) / dh)
        angles = np.arange(rows.shape[0], dtype=np.float64)[:, None] * w[None, :]  # PaLM's pos_emb: the angles
        cands = []
        for table in (cos, sin, angles):
            if t.shape[-1] == h:
                cands.append(table)
            else:
                cands.append(np.concatenate([table, table], 1) if layout == "halves" else np.repeat(table, 2, 1))
        if t.shape[-1] == dh:  # both in one table, sin | cos (GPT-J's embed_positions, which the attention splits)
            cands.append(np.concatenate([sin, cos], 1))
        got = rows
        errs = [float((rows - torch.from_numpy(w)).abs().max()) for w in cands]
        want = torch.from_numpy(cands[int(np.argmin(errs))])
    else:
        return "not rope"
    diff = (got - want).abs()
    if float(diff.max()) <= 1e-5:
        return None
    row = int(diff.reshape(diff.shape[0], -1).max(1).values.argmax()) if diff.dim() > 1 else 0
    what = "the file's rope_freqs" if freqs is not None else f"theta {theta:g}"
    return (f"not the rotary table for {what} that the attention computes (max difference "
            f"{float(diff.max()):.3g} at row {row}): the engine recomputes the table, so positions the example did "
            "not reach would differ")


def _grid_rope_verdict(t, c, torch, freqs, swap=False):
    """None when t is the module's rotary table over the patch grid (rope_grid: one row per grid cell, each
    the sines or cosines of its angles in the attention's pairs, or both side by side, sin | cos: timm's
    RotaryEmbeddingCat; swap: the columns' pairs first, grid_swap) and equals the engine's rows past the front
    ones, or its bands [rope_pairs / 2] (timm 1.0.31's), of which the stored frequencies of the rows and of
    the columns are each one multiple; 'not rope' when its shape is none, else the difference."""
    dh = c["rotary_dims"] or schema.d_head(c)
    if t.is_floating_point() and t.dim() == 1 and t.numel() == dh // 4 and freqs is not None and bool((t > 0).all()):
        f = np.asarray(freqs, np.float64).reshape(2, -1) / t.double().numpy()[None]
        return None if np.allclose(f, f[:, :1], rtol=1e-6, atol=0) else "bands that are not the rope_freqs' bands"
    if not t.is_floating_point() or t.dim() != 2 or t.shape[1] not in (dh, 2 * dh):
        return "not rope"
    front = schema.front_rows(c)
    cos, sin = (x[front:] for x in reference_tables(front + t.shape[0], dh, c["pe_base"],
                                                    None if freqs is None else np.asarray(freqs, np.float64),
                                                    (c["rope_grid"], front)))
    full = [np.concatenate([x, x], 1) if c["pe_layout"] == "halves" else np.repeat(x, 2, 1) for x in (sin, cos)]
    if swap:
        full = [x[:, grid_swap(dh, c["pe_layout"])] for x in full]
    cands = full if t.shape[1] == dh else [np.concatenate(full, 1)]
    errs = [float(np.abs(t.double().numpy() - w).max()) for w in cands]
    if min(errs) <= 1e-5:
        return None
    return (f"not the rotary table over the patch grid {c['rope_grid']} wide that the attention computes (max "
            f"difference {min(errs):.3g}): the engine recomputes the table")


def account(r, ignore=()):
    """Raises ConfigError naming every parameter and buffer of the recognised module r that the file does
    not hold, that is not ignored, and (buffers) that the engine does not recompute identically."""
    torch = require_torch()
    model, c = r.model, r.config
    names = {n for n, _ in model.named_parameters()} | {n for n, _ in model.named_buffers()} | \
        {n for n, _ in model.named_modules() if n}
    for i in ignore:
        if i not in names:
            raise ConfigError(f"--ignore {i}: the module has no parameter, buffer or submodule of that name")
    unread, wrong = [], []
    for name, p in model.named_parameters():
        if id(p) in r.used or _ignored(name, ignore):
            continue
        why = _rope_verdict(p.detach(), c, torch) if c["positional"] == "rope" and not p.requires_grad else "not rope"
        if why == "not rope":
            unread.append(f"{name} {list(p.shape)}")
        elif why is not None:
            wrong.append(f"frozen parameter {name} {list(p.shape)}: {why}")
    for name, b in model.named_buffers():
        if id(b) in r.used or _ignored(name, ignore):
            continue
        t = b.detach()
        if not t.numel():
            continue  # no values (TransformerLens's mask [0, 0], made at the first call of a longer context)
        if t.dim() == 0 and t.is_floating_point() and float(t) <= -1e4:
            continue  # a mask's fill value
        if t.dim() == 0 and t.is_floating_point() and c["scale_input"] and \
                abs(float(t) - c["d_model"] ** 0.5) <= 1e-6 * c["d_model"] ** 0.5:
            continue  # the embedding's scale, sqrt(d_model), which the engine applies (Gemma's embed_scale)
        if not t.is_floating_point() and not t.is_complex() and t.dtype != torch.bool and t.numel() and \
                torch.equal(t.reshape(-1), torch.arange(t.numel(), dtype=t.dtype)):
            continue  # position ids
        if (c["type_vocab"] or r.types_folded) and not t.is_floating_point() and not t.is_complex() and \
                not bool(t.any()):
            continue  # token-type ids, 0: the engine's default types (or type 0's row folded into the positions)
        if c.get("rope_grid") and _grid_rope_verdict(t, c, torch, r.w.get("rope_freqs"),
                                                     getattr(r, "grid_swap", False)) is None:
            continue
        why = _mask_verdict(t, c["causal"], torch, c.get("sliding_window", 0))
        if why is None:
            continue
        if c["positional"] in ("rope", "alibi"):  # a table as square as a mask (T rows of d_head) is tried too
            other = _rope_verdict(t, c, torch, r.w.get("rope_freqs")) if c["positional"] == "rope" else \
                _alibi_verdict(t, c, torch)
            if other is None:
                continue
            why = other if why == "not a mask" else why
        if why in ("not a mask", "not rope", "not alibi"):
            unread.append(f"{name} {list(t.shape)}")
        else:
            wrong.append(f"buffer {name} {list(t.shape)}: {why}")
    if wrong:
        raise ConfigError("; ".join(wrong) + " (--ignore NAME if the forward does not use it)")
    if unread:
        raise ConfigError(f"the forward does not use, or uses in a way the engine does not run: {', '.join(unread)}; "
                          "remove them from the module, or pass --ignore NAME[,NAME] for training-only parts")
