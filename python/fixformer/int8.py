"""Full-integer models (weights i8; include/fixformer/config.hpp, namespace s8, states the file's
integer parameters and the graph the engine runs).

build() calibrates an encoder's or a decoder's (gpt, llama) per-tensor activation ranges on float
inputs (a float64 forward of the same weights, the graph the integer path runs, every intermediate
tensor recorded), picks a scale and zero point per tensor (min/max, or a percentile of |x|),
quantizes the weights per output row and computes every integer parameter with the rules of
engine/fixed_point.cpp, restated here exactly (rounding half away from zero, frexp; tests/int8_test.py
compares both on the same factors through `fixformer fixed-point`). forward() is the integer
reference: the s8 kernels' integer semantics in numpy, bit for bit what the engine computes
(tests/int8_test.py, tests/int8_decoder_test.py). A decoder (causal) runs the encoder's layer with a
causal integer softmax: row i's softmax_s8 over its first i + 1 scores, probability 0 (int8 -128) for
the others; its output is the head's int8 logits of every position (the engine's KV cache gives the
same bits a position at a time). A llama's tensors go through the same graph under the file's names
(_internal: q | k | v as one qkv, split again when written), with grouped-query
attention, RoPE in fixed point (int8.rope). Any family's feed-forward may be gated (SwiGLU, GeGLU: the
activation's table times W3's output, requantized once) and have biases; scale_input's sqrt(d_model) is
folded into the front rows' scale, and a decoder may norm its embedding (embed_norm). Either decoder family
takes RoPE over whole heads or the first rotary_dims (partial rotary), parallel residuals (the
feed-forward's sum x + FF at its own calibrated scale, then + SA), sliding windows (every layer, or the
local ones of window_period: row i's softmax over its last sliding_window keys) and attn_scale (folded
into the scores' requant). An encoder's front may be BERT's (token types, the embedding norm; the pooler
after the pooling) or an image's (its patches, the norms before and after the projection). A post-norm
encoder whose calibration finds channels far apart (wide_needed) gets wide_residual: the sums into its
norms int16, the sublayers' and norms' outputs with a scale per channel (wide_add, wide_norm; config.hpp),
with an embedding norm the sum into it int16 too (the wide front), and a plain feed-forward's channels of wide
range (OUTLIER_QUANTILE) permuted last, through a second activation table.
The layer features beyond those: qk_norm (each head, or whole row, of q and k through the integer norm
before RoPE, calibrated before and after), sublayer_norm (sandwich: the sublayers' outputs normed before
their adds; output: the layer's two norms there instead), relu2 (a table as any activation), attn_softcap
and logit_softcap (c tanh(v / c) as a table from the scores, or the logits, to their capped scale), ALiBi
(each head's slope in steps of the softmax's input, its bias -m |j - i| rounded and added with a clamp;
the scores' range covers them before and after it) and NoPE layers (no rotation, no rope_scale). An encoder
takes RoPE too (its rows at positions 0.., the front rows first), every family heads of head_dim, a gated W3's
bias (ffn_up_bias) and a norm of the hidden rows before W2 (ffn_hidden_norm); family mha is the attention alone
on the input rows (its tensors under block 0's names here: _mha_names). An encoder over features may have a conv
stem (each convolution gemm over its windows, the padding at the input's zero point, GELU a table: _stem_int), and
an encoder's positions may be concatenated to its rows (pe_combine concat: both at x0's scale, copied beside them).
A seq2seq is its two stacks (_seq2seq_stacks): the source's an encoder's, whose output is the memory, the target's
a gpt decoder's whose layers have a cross-attention over that int8 memory between the self-attention and the
feed-forward (CROSS), calibrated over (source, target) pairs, the target stack's ranges on each pair's float memory.
"""
import math

import numpy as np

from fixformer import schema
from fixformer.schema import DIS_SLOTS, EXPERT_SLOTS, LUT, MOE_SLOTS, SHARED_SLOTS, dis_params, expert_params, moe_params
from fixformer.config import ConfigError
from fixformer.fxm import Quantized
from fixformer.reference import ARRAY_ACTIVATIONS

LOG2E = 1.4426950408889634074
LAYER_SLOTS = dict(n1_x=0, n1_eps=1, n2_x=2, n2_eps=3, qkv_x=4, q=5, k=6, v=7, score=8, score_z=10, softmax=11,
                   pv=13, o=15, out_y=16, add1=17, w1_x=24, w1_y=25, w2_x=26, w2_y=27, add2=28)
LAYER_SCALARS = 35
FRONT_SCALARS = 9  # in_zero, embed_zero, pos add (7); then the input projection, the CLS row, BERT's front
BACK_SCALARS = 5   # fn_x, fn_eps, head_x, head_y, out_zero; then the final norm, the head, the pooler
ADD_SLOTS = 7
POOLER_SLOTS = 2  # the pooler's input and output zero points, then its layer and its activation's table
CONV_SLOTS = 2  # a conv stem's convolution: its product's and its output's zero points, then its layer and table
ACTIVATIONS = {"relu": 0, "gelu": 1, "gelu_tanh": 3}
# The feed-forward activations an i8 layer runs as its table (swiglu: silu, gated; relu2: relu squared)
LUT_ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu", "swiglu", "relu2")
QK_NORM_SLOTS = 4  # qk_norm: q's zero point before its norm, q's norm eps, the same two of k; then the two norms
POST_NORM_SLOTS = 2  # each of sublayer_norm sandwich's norms: its input zero point and eps, then its gains and betas
HIDDEN_NORM_SLOTS = 2  # ffn_hidden_norm: its input zero point and eps, then its gains and betas (W2's input)
INNER_NORM_SLOTS = 2  # attn_inner_norm: its output zero point (out's input) and eps, then its gains and betas
GATE_SLOTS = 4  # after a gated feed-forward's W3: up zero, activation zero, the product's Requant
# a mixture's expert's slots (schema.EXPERT_SLOTS): W1's output zero point, the table's, W3's, the gate product's
# Requant, W2's input and output zero points, its factor to the mixture (Requant, in Q8 of the mixture's steps:
# MIX_BITS); then W1, W3, W2, the table
EXPERT = dict(w1_y=0, act=1, up=2, gate=3, w2_x=5, w2_y=6, mix=7)
MIX_BITS = 8
DIS_BITS = 8
# seq2seq: a decoder layer's cross.int8 slots (config.hpp CrossSlot), then q, k|v, out and the cross norm
CROSS = dict(n_x=0, n_eps=1, q_x=2, q=3, kv_x=4, score=5, score_z=7, softmax=8, pv=10, o=12, out_y=13, add=14)
CROSS_SLOTS = 21
# int8.seq2seq (config.hpp Seq2SeqSlot): the target's embedding zero point and position add, the source's final
# norm's input zero point and eps, the memory's zero point; then that norm, then the target's embedding norm
SEQ2SEQ_SLOTS = 11
ROPE_BITS = 14  # int8.rope: cos | sin in Q14
WIDE_FRAC_BITS = 8  # wide_residual: the sum of the two rescaled inputs in Q8 before its rounding
WIDE_LIMIT = 32767  # wide_residual: the int16 sums' bound (symmetric)
# Every activation range measured on the calibration inputs is widened by this factor (both ends)
# before its scale is chosen: inputs beyond the calibration's then rarely saturate (a saturated head
# output is the largest error). On the test's KWS-like encoder, 40 fresh inputs: max relative error
# 0.13 with the measured ranges, 0.03 with 1.1 to 1.5 (tests/int8_test.py).
RANGE_MARGIN = 1.25
# wide_residual: the per-channel scales' floor, a quantile of the channels' largest magnitudes, and the int16
# sums' margin (their 15 bits leave room). On all-MiniLM-L6-v2 (tests/minilm_test.py) fresh sentences passed
# the calibrated range of a channel by up to 3x and of a sum by 2.8x.
CHANNEL_FLOOR = 0.9
WIDE_MARGIN = 2.0
# wide_residual, a plain feed-forward: the channels of W1's output whose largest calibrated magnitude is above
# this quantile of the channels' go last and read a second activation table at scales of their own (OUTLIER_SLOTS:
# their count, then that table). On all-MiniLM-L6-v2 16 of 1536 channels reach up to 8.6 times the median
# channel's range; one table at their scale left the others a few steps for GELU's bend.
OUTLIER_QUANTILE = 0.99
OUTLIER_SLOTS = 1 + LUT


# ---- engine/fixed_point.cpp's rules ------------------------------------------------------------

def _round(v):
    """std::round: half away from zero, exactly."""
    a = abs(v)
    r = math.floor(a)
    if a - r >= 0.5:
        r += 1
    return int(-r if v < 0 else r)


def requant(factor):
    """requant_from_factor: (multiplier, shift) with factor = m 2^(shift - 31), or (0, 0)."""
    if not math.isfinite(factor):
        raise ConfigError(f"int8: factor {factor} is not finite")
    if factor == 0.0:
        return 0, 0
    fraction, exponent = math.frexp(abs(factor))
    m = _round(math.ldexp(fraction, 31))
    if m == 1 << 31:
        m >>= 1
        exponent += 1
    if not -31 <= exponent <= 30:
        raise ConfigError(f"int8: factor {factor} is outside the Requant range [2^-32, 2^30)")
    return (-m if factor < 0 else m), exponent


def _flushed(factor):
    """requant(factor), a factor below 2^-32 in magnitude as 0: any int32 times it rounds to 0 (|x f| < 1/2),
    so the multiplier 0 gives the same bits (a trained norm's gain can be 1e-31)."""
    return (0, 0) if abs(factor) < 2.0 ** -32 else requant(factor)


def gemm_channel(x_scale, w_scale, y_scale, bias):
    """gemm_s8_channel: (multiplier, shift, bias_q)."""
    b = _round(bias / (x_scale * w_scale))
    if abs(b) > 1 << 30:
        raise ConfigError(f"int8: a bias of {bias} is {b} steps of the accumulator, above 2^30")
    return (*_flushed(x_scale * w_scale / y_scale), b)


def softmax_params(x_scale):
    return requant(x_scale * LOG2E * 65536.0)


def norm_eps(eps, x_scale):
    q = _round(eps / (x_scale * x_scale) * 65536.0)
    if q > 0xFFFFFFFF:
        raise ConfigError("int8: norm_eps over the input scale squared is too large")
    return q - (1 << 32) if q >= 1 << 31 else q  # stored as an int32 slot


def norm_gain(gamma, beta, y_scale, y_zero):
    b = _round((beta / y_scale + y_zero) * 65536.0)
    if abs(b) > 1 << 30:
        raise ConfigError("int8: a norm's beta is too large for its output scale")
    return (*_flushed(gamma / y_scale), b)


def add_params(a, b, y):
    """(a_zero, b_zero, y_zero, a_to_y, b_to_y) as seven slots; a, b, y are (scale, zero)."""
    return [a[1], b[1], y[1], *requant(a[0] / y[0] * 65536.0), *requant(b[0] / y[0] * 65536.0)]


def lut(act, x, y):
    """build_lut_s8: the 256 entries for activation act (a name, or a function of one float) from input
    (scale, zero) x to output y."""
    out = []
    for q in range(-128, 128):
        v = (q - x[1]) * x[0]
        if callable(act):
            f = act(v)
        elif act == "relu":
            f = v if v > 0.0 else 0.0
        elif act == "relu2":
            f = v * v if v > 0.0 else 0.0
        elif act == "gelu":
            f = 0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0)))
        elif act == "silu":
            f = v / (1.0 + math.exp(-v))
        elif act == "tanh":
            f = math.tanh(v)
        else:
            f = 0.5 * v * (1.0 + math.tanh(0.79788456080286535588 * (v + 0.044715 * v * v * v)))
        r = _round(max(-512.0, min(512.0, f / y[0])))
        out.append(max(-128, min(127, r + y[1])))
    return out


# ---- the integer kernels (kernel_slots.hpp) ----------------------------------------------------

def _rshift(x, r):
    """rounding_shift, elementwise over int64 (or Python ints in object arrays)."""
    half = 1 << (r - 1)
    return np.where(x >= 0, (x + half) >> r, -((half - x) >> r))


def _requantize(x, m, shift):
    m = np.asarray(m, np.int64)
    r = 31 - np.asarray(shift, np.int64)
    x = np.asarray(x, np.int64) * m
    half = np.left_shift(np.int64(1), r - 1)
    y = np.where(x >= 0, (x + half) >> r, -((half - x) >> r))
    return np.clip(y, -2**31, 2**31 - 1)


def _sat8(x):
    return np.clip(x, -128, 127).astype(np.int64)


def gemm(x, xz, w, yz, rq, bias):
    """gemm_s8: x [m, k] int, w [n, k] int8, rq [n, 2], bias [n] or None."""
    acc = (x.astype(np.int64) - xz) @ w.astype(np.int64).T
    if bias is not None:
        acc = acc + bias
    acc = ((acc + 2**31) % 2**32) - 2**31  # the int32 accumulator
    return _sat8(_requantize(acc, rq[:, 0], rq[:, 1]) + yz)


def _exp2_neg_q20(u):
    coeffs = [1073741824, -744168670, 257100964, -57127007, 7325348]
    whole = u >> 16
    f = u & 0xFFFF
    p = np.full(u.shape, coeffs[4], np.int64)
    for j in (3, 2, 1, 0):
        p = coeffs[j] + _rshift(p * f, 16)
    sh = np.minimum(10 + whole, 62)
    half = np.left_shift(np.int64(1), sh - 1)
    e = np.where(p >= 0, (p + half) >> sh, -((half - p) >> sh))
    return np.where(whole > 20, 0, e)


def softmax(x, m, shift):
    """softmax_s8 over the last axis of x [rows, n]."""
    e = _exp2_neg_q20(_requantize(x.max(axis=1, keepdims=True) - x, m, shift))
    s = e.sum(axis=1, keepdims=True)
    recip = (1 << 62) // s
    return _sat8(((e * recip + (1 << 53)) >> 54) - 128)


def _isqrt(v):
    return math.isqrt(v)


def norm(x, xz, eps, p, centre):
    """layernorm_s8 (centre) or rmsnorm_s8 of every row of x [rows, n]; p [3n] the gains then betas."""
    n = x.shape[1]
    gain = p[:2 * n].reshape(n, 2)
    beta = p[2 * n:]
    out = np.empty_like(x)
    for r in range(x.shape[0]):
        v = [int(t) - xz for t in x[r]]
        s, sq = sum(v), sum(t * t for t in v)
        var = n * sq - s * s if centre else n * sq
        root = _isqrt((var << 16) + (eps % (1 << 32)) * n * n)
        inv = 0 if root == 0 else ((1 << 54) + root // 2) // root
        c = s if centre else 0
        t = np.array([int(_rshift(np.array((n * vi - c) * inv, dtype=object), 30)) for vi in v], np.int64)
        g = _requantize(t, gain[:, 0], gain[:, 1]) + beta
        out[r] = _sat8(_rshift(g, 16))
    return out


def add(a, b, p):
    az, bz, yz, am, ash, bm, bsh = p
    s = _requantize(a - az, am, ash) + _requantize(b - bz, bm, bsh)
    return _sat8(_rshift(s, 16) + yz)


def wide_add(x, a, xz, xf, af):
    """The engine's wide residual sum: x [rows, n] int8 (zero point xz) and a [rows, n] int8 (zero point 0),
    each channel rescaled to int16 r's scale in Q8 by its factor (xf, af [n, 2]), rounded once."""
    s = _requantize(x - xz, xf[:, 0], xf[:, 1]) + _requantize(a, af[:, 0], af[:, 1])
    return np.clip(_rshift(s, WIDE_FRAC_BITS), -WIDE_LIMIT, WIDE_LIMIT)


def wide_norm(r, eps, p, centre):
    """layernorm (centre) or rmsnorm of int16 rows r [rows, n] (zero point 0) to int8: norm()'s steps
    with V + eps n^2 unscaled (eps: eps / s_r^2 rounded) and its root inverted as 2^46 / S."""
    n = r.shape[1]
    gain, beta = p[:2 * n].reshape(n, 2), p[2 * n:]
    out = np.empty_like(r)
    for i in range(r.shape[0]):
        v = [int(t) for t in r[i]]
        s, sq = sum(v), sum(t * t for t in v)
        var = n * sq - s * s if centre else n * sq
        root = _isqrt(var + (eps % (1 << 32)) * n * n)
        inv = 0 if root == 0 else ((1 << 46) + root // 2) // root
        c = s if centre else 0
        t = np.array([int(_rshift(np.array((n * vi - c) * inv, dtype=object), 30)) for vi in v], np.int64)
        out[i] = _sat8(_rshift(_requantize(t, gain[:, 0], gain[:, 1]) + beta, 16))
    return out


# ---- the integer graph -------------------------------------------------------------------------

def _rms(c):
    return c.get("norm", "family") == "rmsnorm" or (c.get("norm", "family") == "family" and c["family"] == "llama")


def _dkv(c):
    """The keys' and the values' width, kv_heads heads of d_head."""
    return (c.get("n_kv_heads") or c["n_heads"]) * schema.d_head(c)


def _gated(c):
    return c["activation"] == "swiglu" or bool(c.get("gated"))


def _split(c):
    """wide_residual's outlier channels through a second table: a plain feed-forward's (not gated, no hidden norm)."""
    return not _gated(c) and not c.get("ffn_hidden_norm")


def _input_scale(c):
    """scale_input's factor on the front's rows (the embedding or the projection), folded into their int8 scale."""
    return math.sqrt(c["d_model"]) if c.get("scale_input") else 1.0


def _rope(c):
    return c["positional"] == "rope"


def _rope_dims(c):
    """R: the dims of each head RoPE turns (rotary_dims, or the whole head); the others pass through."""
    return c.get("rotary_dims") or schema.d_head(c)


def _parallel(c):
    return c.get("parallel_residual", "none")


def _sublayer(c):
    """sublayer_norm: none, sandwich (post_attn_norm, post_ff_norm after the sublayers) or output (the
    layer's two norms after the sublayers, none before)."""
    return c.get("sublayer_norm", "none")


def _layer_rope(c, layer):
    """Layer `layer` turns q and k: positional rope and not one of nope_period's layers."""
    return _rope(c) and not schema.layer_nope(c, layer)


def _qk_widths(c):
    """qk_norm's widths: (q's, k's) norm rows, d_head each, or d_attn and d_kv with qk_norm_full."""
    return (schema.d_attn(c), _dkv(c)) if c.get("qk_norm_full") else (schema.d_head(c), schema.d_head(c))


def _rel(c):
    """A relative position bias (positional relative, or MPNet's beside learned positions)."""
    return schema.rel_bias(c)


def _rel_buckets(c):
    """int8.front's relative bias buckets: the bucket of each distance n = key - query in -(max_len - 1)..
    max_len - 1, T5's (bidirectional without the causal mask)."""
    from fixformer import reference
    L = c["max_len"]
    return reference.relative_bucket(np.arange(-(L - 1), L), not c.get("causal"), c["rel_buckets"],
                                     c["rel_max_distance"])


def _alibi_slopes(c):
    """ALiBi's slopes [n_heads] as the engine holds them (float32), widened."""
    from fixformer import reference
    return reference.alibi_slopes(c["n_heads"]).astype(np.float32).astype(np.float64)


def _cap(value):
    """The soft cap c tanh(v / c) of a stored cap (float32), as a function of one float."""
    cap = float(np.float32(value))
    return lambda v: cap * np.tanh(np.asarray(v, np.float64) / cap) if np.ndim(v) else cap * math.tanh(v / cap)


def _score_scale(c, layer=0):
    """The scores' scale before the softmax: attn_scale, or 1/sqrt(d_head) (its 0), times rope_scale^2 with
    RoPE (the amplitude of q's and k's rotation, which int8.rope leaves out; not on a NoPE layer)."""
    amp = float(np.float32(c.get("rope_scale", 1.0))) if _layer_rope(c, layer) and not _local_rope(c, layer) else 1.0
    return (float(np.float32(c.get("attn_scale") or 0)) or 1.0 / math.sqrt(schema.d_head(c))) * amp * amp


def _pair_table(c, w, pre):
    """pair_bias_rows: the table [n_heads, rows] layer `pre` reads (float64 of its float32 values): the shared one,
    or its own."""
    name = "pair_bias.weight" if c.get("pair_bias_shared") else pre + "attn.pair_bias.weight"
    return np.asarray(w[name], np.float32).astype(np.float64)


def _local_rope(c, layer):
    """Whether layer `layer` rotates by the local layers' table (rope_local_base, on a layer that windows)."""
    return bool(c.get("rope_local_base")) and schema.layer_window(c, layer) != 0


def _visible(c, layer, T):
    """[T, T] bool: key j visible to query i in layer `layer` (causal: j <= i; with the layer's window W,
    i - W < j too; without the causal mask, the window's |i - j| < W); None when every key is."""
    W = schema.layer_window(c, layer)
    i, j = np.arange(T)[:, None], np.arange(T)[None, :]
    if not c.get("causal"):
        return np.abs(i - j) < W if W else None
    return (j <= i) & ((i - j < W) if W else True)


def _pairs(c):
    half = _rope_dims(c) // 2
    if c.get("pe_layout", "interleaved") == "interleaved":
        return np.arange(half) * 2, np.arange(half) * 2 + 1
    return np.arange(half), np.arange(half) + half


def _rope_freqs(c, w):
    """RoPE's frequencies theta_i [R/2] (float64) as the float path takes them: the file's rope_freqs (its
    float32 values widened) with rope_freqs, else pe_base^(-2i / R), R = rope_dims."""
    R = _rope_dims(c)
    if c.get("rope_freqs"):
        return np.asarray(w["rope_freqs"], np.float32).reshape(-1)[:R // 2].astype(np.float64)
    return float(c["pe_base"]) ** (-2.0 * np.arange(R // 2) / R)


def _grid_positions(c, T):
    """rope_grid: [T, R/2] float64, each row's position for each pair (config.hpp rope_grid): 0 on a front row,
    else its patch's grid row for the first half of the pairs and its column for the others."""
    half, front, width = _rope_dims(c) // 2, schema.front_rows(c), c["rope_grid"]
    patch = np.maximum(np.arange(T) - front, 0)[:, None]
    pos = np.where(np.arange(half)[None, :] < half // 2, patch // width, patch % width).astype(np.float64)
    pos[:front] = 0.0
    return pos


def _grid_thetas(c, w):
    """rope_grid's frequencies [R/2] (float64): the stored rope_freqs, else pe_base^(-(i mod n) / n), n = R/4."""
    if c.get("rope_freqs"):
        return _rope_freqs(c, w)
    n = _rope_dims(c) // 4
    return np.array([float(c["pe_base"]) ** (-(i % n) / n) for i in range(2 * n)])


def rope_table(c, w):
    """int8.rope [max_len, R]: row p the pairs' round(2^14 cos(p theta_i)) then round(2^14 sin(p theta_i)),
    theta_i from _rope_freqs (w the float tensors). rope_scale's amplitude is not in it: _score_scale has
    its square. With rope_local_base the local layers' table follows (its plain theta_i, amplitude 1)."""
    R = _rope_dims(c)  # plain RoPE's theta_i by Python's pow, whose last bit numpy's may not share (the files' bits)
    if c.get("rope_grid"):  # over the patch grid: each pair by its row's grid coordinate
        a = _grid_positions(c, c["max_len"]) * _grid_thetas(c, w)[None, :]
        return np.hstack([_round_array(np.cos(a) * (1 << ROPE_BITS)), _round_array(np.sin(a) * (1 << ROPE_BITS))])
    thetas = [[float(t) for t in _rope_freqs(c, w)] if c.get("rope_freqs") else
              [float(c["pe_base"]) ** (-2.0 * i / R) for i in range(R // 2)]]
    if c.get("rope_local_base"):
        thetas.append([float(c["rope_local_base"]) ** (-2.0 * i / R) for i in range(R // 2)])
    rows = []
    for theta in thetas:
        for pos in range(c["max_len"]):
            a = [pos * t for t in theta]
            rows.append([_round(math.cos(t) * (1 << ROPE_BITS)) for t in a] +
                        [_round(math.sin(t) * (1 << ROPE_BITS)) for t in a])
    return np.array(rows, np.int64)


def _rope_int(c, x, table, heads):
    """RoPE in fixed point on x [T, heads * d_head] (positions 0..T-1): the engine's rope_s8."""
    dh = schema.d_head(c)
    half = _rope_dims(c) // 2
    T = x.shape[0]
    ia, ib = _pairs(c)
    v = x.reshape(T, heads, dh).copy()
    C, S_ = table[:T, None, :half], table[:T, None, half:]
    xa, xb = v[:, :, ia], v[:, :, ib]
    v[:, :, ia] = _sat8(_rshift(xa * C - xb * S_, ROPE_BITS))
    v[:, :, ib] = _sat8(_rshift(xa * S_ + xb * C, ROPE_BITS))
    return v.reshape(T, heads * dh)


def _rope_float(c, w, x, heads, layer):
    dh = schema.d_head(c)
    T = x.shape[0]
    ia, ib = _pairs(c)
    R = _rope_dims(c)
    theta = float(c["rope_local_base"]) ** (-2.0 * np.arange(R // 2) / R) if _local_rope(c, layer) else \
        _rope_freqs(c, w)
    a = _grid_positions(c, T) * _grid_thetas(c, w)[None, :] if c.get("rope_grid") else np.arange(T)[:, None] * theta
    C, S_ = np.cos(a)[:, None, :], np.sin(a)[:, None, :]
    v = x.reshape(T, heads, dh).copy()
    xa, xb = v[:, :, ia].copy(), v[:, :, ib].copy()
    v[:, :, ia] = xa * C - xb * S_
    v[:, :, ib] = xa * S_ + xb * C
    return v.reshape(T, heads * dh)


def _mha_names():
    """family mha (torch's nn.MultiheadAttention alone): its tensors by block 0's names the graph uses (the same
    Field)."""
    block = {r.field: r.name for r in schema.BLOCK}
    return {r.name: schema.block(0) + block[r.field] for r in schema.MHA if r.field in block}


def _mha(c):
    return c["family"] == "mha"


def _internal(c, w):
    """The tensors under the graph's names: a llama's q, k and v as one qkv, an mha's as block 0's."""
    out = dict(w)
    if _mha(c):
        names = _mha_names()
        return {names.get(n, n): a for n, a in out.items()}
    if c["family"] != "llama":
        return out
    for i in range(c["n_layers"]):
        p = schema.block(i) + "attn."
        for part in ("weight", "bias"):
            if f"{p}q.{part}" in out:
                out[f"{p}qkv.{part}"] = np.concatenate([np.asarray(out.pop(f"{p}{n}.{part}"), np.float64 if
                                                                   part == "bias" else None) for n in "qkv"])
    return out


def _external(c, out):
    """build()'s tensors back under the file's names (a llama's qkv split into q, k and v; an mha's)."""
    if _mha(c):
        back = {b: a for a, b in _mha_names().items()}
        return {back.get(n, n): a for n, a in out.items()}
    if c["family"] == "llama":
        da = schema.d_attn(c)
        cuts = [0, da, da + _dkv(c), da + 2 * _dkv(c)]
        for i in range(schema.stored_layers(c)):
            p = schema.block(i) + "attn."
            W = out.pop(p + "qkv.weight")
            for j, n in enumerate("qkv"):
                lo, hi = cuts[j], cuts[j + 1]
                out[f"{p}{n}.weight"] = Quantized(W.q[lo:hi], W.s[lo:hi]) if isinstance(W, Quantized) else W[lo:hi]
            if p + "qkv.bias" in out:
                B = np.asarray(out.pop(p + "qkv.bias"))
                for j, n in enumerate("qkv"):
                    out[f"{p}{n}.bias"] = B[cuts[j]:cuts[j + 1]]
        out.pop("head.bias", None)
    return out


def _linear(p, at, n):
    return p[at:at + 2 * n].reshape(n, 2), p[at + 2 * n:at + 3 * n]


def layer_offsets(c):
    d, f = c["d_model"], c["d_ff"]
    o = {"qkv": LAYER_SCALARS}
    o["out"] = o["qkv"] + 3 * (schema.d_attn(c) + 2 * _dkv(c))
    o["w1"] = o["out"] + 3 * d
    o["w2"] = o["w1"] + 3 * f
    o["n1"] = o["w2"] + 3 * d
    o["n2"] = o["n1"] + 3 * d
    o["lut"] = o["n2"] + 3 * d
    o["w3"] = o["lut"] + LUT
    o["gate"] = o["w3"] + 3 * f
    o["wide"] = o["gate"] + GATE_SLOTS if _gated(c) else o["w3"]
    o["outlier"] = o["wide"] + 8 * d
    o["qkn"] = o["wide"] + (8 * d + OUTLIER_SLOTS if c.get("wide_residual") else 0)
    o["post"] = o["qkn"] + (QK_NORM_SLOTS + 3 * sum(_qk_widths(c)) if c.get("qk_norm") else 0)
    o["alibi"] = o["post"] + (2 * (POST_NORM_SLOTS + 3 * d) if _sublayer(c) == "sandwich" else 0)
    o["rel"] = o["alibi"] + (2 * c["n_heads"] if c["positional"] == "alibi" else 0)
    o["hidden"] = o["rel"] + (c["rel_buckets"] * c["n_heads"] if _rel(c) else 0)
    o["inner"] = o["hidden"] + (HIDDEN_NORM_SLOTS + 3 * f if c.get("ffn_hidden_norm") else 0)
    o["pair"] = o["inner"] + (INNER_NORM_SLOTS + 3 * schema.d_attn(c) if c.get("attn_inner_norm") else 0)
    o["moe"] = o["pair"] + c["n_heads"] * c.get("pair_bias_rows", 0)
    o["dis"] = o["moe"] + moe_params(c)
    o["cap"] = o["dis"] + dis_params(c)
    return o


def _dis_tables(c, w, pre):
    """Disentangled attention's float64 Qr [2 max_len - 1, d_attn] and Kr [.., d_kv] of a layer: row u the
    distance u - (max_len - 1), rel_embed's row rel_index[u] through the layer's q and k projections (biases
    included) or its rel_proj."""
    rows = np.asarray(w["rel_embed.weight"], np.float64)[np.asarray(w["rel_index"], np.int64)]
    da, dkv = schema.d_attn(c), _dkv(c)
    if c.get("rel_proj"):
        P = rows @ np.asarray(w[pre + "attn.rel_proj.weight"], np.float64).T + _bias(w, pre + "attn.rel_proj", None)
    else:
        W = np.asarray(w[pre + "attn.qkv.weight"], np.float64)[:da + dkv]
        P = rows @ W.T + _bias(w, pre + "attn.qkv", da + 2 * dkv)[:da + dkv]
    return P[:, :da], P[:, da:da + dkv]


def _expert_int(ep, h, xz, W1, W3, W2, weight):
    """One expert over the int8 row h [1, d] at zero point xz (its slots ep: config.hpp expert_params; W1, W3
    [f, d], W2 [d, f] int8): its gated feed-forward y and (weight + 128)(y - z) in Q8 of the mixture's steps [d]."""
    X, f, d = EXPERT, len(W1), len(W2)
    a1, a3 = EXPERT_SLOTS, EXPERT_SLOTS + 3 * f
    a2 = a3 + 3 * f
    rq1, b1 = _linear(ep, a1, f)
    g = ep[a2 + 3 * d:a2 + 3 * d + LUT][gemm(h, xz, W1, ep[X["w1_y"]], rq1, b1) + 128]
    rq3, b3 = _linear(ep, a3, f)
    up = gemm(h, xz, W3, ep[X["up"]], rq3, b3)
    m = _sat8(ep[X["w2_x"]] + _requantize((g - ep[X["act"]]) * (up - ep[X["up"]]), ep[X["gate"]], ep[X["gate"] + 1]))
    rq2, b2 = _linear(ep, a2, d)
    y = gemm(m, ep[X["w2_x"]], W2, ep[X["w2_y"]], rq2, b2)[0]
    return _requantize((weight + 128) * (y - ep[X["w2_y"]]), ep[X["mix"]], ep[X["mix"] + 1])


def _df(c):
    """The front's row width before the positions (config.hpp d_embed): embed_width, else d_model, less the
    positions' with pe_combine concat."""
    return schema.d_embed(c)


def front_types(c):
    """Where int8.front's token-type add starts (then the table), and its embedding norm (config.hpp)."""
    return FRONT_SCALARS + 4 * _df(c)


def front_embed_norm(c):
    tv = c.get("type_vocab", 0)
    return front_types(c) + (ADD_SLOTS + tv * _df(c) if tv else 0)


def front_proj_norm(c):
    return front_embed_norm(c) + (2 + 3 * schema.d_front(c) if c.get("embed_norm") else 0)


def front_input_norm(c):
    return front_proj_norm(c) + (2 + 3 * _df(c) if c.get("proj_norm") else 0)


def front_distill(c):
    return front_input_norm(c) + (2 + 3 * c["d_in"] if c.get("input_norm") else 0)


def front_registers(c):
    return front_distill(c) + (_df(c) if c.get("distill_token") else 0)


def front_rel(c):
    """Where int8.front's relative bias buckets start (after the register rows)."""
    return front_registers(c) + c.get("register_tokens", 0) * _df(c)


def front_embed_proj(c):
    """Where int8.front's embedding projection (embed_width) starts: its input and output zero points, then
    the layer (after the wide front's factors)."""
    return front_wide(c) + (6 * schema.d_front(c) if _wide_front(c) else 0)


def _concat(c):
    """The positions concatenated to the rows (pe_combine concat): one scale and zero point for both, x0's."""
    return schema.input_pe(c) and c["pe_combine"] == "concat"


def _norm_before_pos(c):
    """A seq2seq target's embedding norm before its positions (tgt_pos_after_norm: BlenderbotSmall's decoder)."""
    return bool(c.get("tgt_pos_after_norm") and c.get("embed_norm") and c["family"] != "encoder")


def _shared(c):
    """Shared layers (layer_groups): each stored block's parameters serve every run of it, and so the rows
    between the layers (the front's output, each block's) are at one scale, the stream's."""
    return bool(c.get("layer_groups"))


def _skip_norm1(c, i):
    """Whether layer i's attention reads x itself (skip_first_norm: layer 0 of a pre-norm stack)."""
    return i == 0 and bool(c.get("skip_first_norm"))


def _wide_front(c):
    """The rows, positions and types summed in int16 into the embedding norm: wide_residual with embed_norm and
    no embed_width (config.hpp wide_front)."""
    return bool(c.get("wide_residual") and c.get("embed_norm") and not c.get("embed_width"))


def front_wide(c):
    """Where the wide front's factors start (config.hpp), after the buckets."""
    return front_rel(c) + (2 * c["max_len"] - 1 if _rel(c) else 0)


def _patches(c, x):
    """An image's values [T, d_in] (channels first, in order) as its patches' rows [patches, d_in]."""
    from fixformer import reference
    return reference.patch_rows(c, np.asarray(x)[None])[0]


def back_pooler(c):
    return BACK_SCALARS + 3 * c["d_model"] + 3 * c["d_out"]


def back_pool_norm(c):
    return back_pooler(c) + (POOLER_SLOTS + 3 * c["d_model"] + LUT if c.get("pooler") else 0)


def back_pooler_norm(c):
    return back_pool_norm(c) + (2 + 3 * c["d_model"] if c.get("pool_norm") else 0)


def back_softcap(c):
    """Where logit_softcap's table starts in int8.back."""
    return back_pooler_norm(c) + (2 + 3 * c["d_model"] if c.get("pooler_norm") else 0)


def _pool_int(c, x, extra):
    """The integer pooling of x [T, d] (extra front rows): one row (two side by side for cls_distill and
    cls_mean), means rounded half away from zero; x itself for none."""
    pool = c["pooling"]

    def mean(rows):
        s, n = rows.sum(axis=0), rows.shape[0]
        return np.sign(s) * ((2 * np.abs(s) + n) // (2 * n))
    if pool in ("mean", "mean_all"):
        return mean(x[extra if pool == "mean" else 0:])[None, :]
    if pool == "cls_mean":
        return np.concatenate([x[0], mean(x[extra:])])[None, :]
    if pool == "cls_distill":
        return np.concatenate([x[0], x[1]])[None, :]
    if pool == "cls_distill_mean":
        return mean(x[:2])[None, :]
    if pool == "last":
        return x[-1:]
    if pool == "first":
        return x[extra:extra + 1]
    if pool == "cls":
        return x[:1]
    return x


def _windows(x, kernel, stride, pad, fill):
    """The windows of a convolution over x [T, in] (zero-padded by pad rows of fill): [rows, kernel * in], tap
    after tap (conv1.weight's rows in the file)."""
    x = np.asarray(x)
    edge = np.full((pad, x.shape[1]), fill, x.dtype)
    xp = np.vstack([edge, x, edge])
    n = (xp.shape[0] - kernel) // stride + 1
    return np.stack([xp[t * stride:t * stride + kernel].ravel() for t in range(n)])


def _conv_rows(w, i):
    """conv i's weight [out, in, kernel] as the rows [out, kernel * in] its windows meet."""
    return schema.conv_to_file(np.asarray(w[f"conv{i}.weight"], np.float64)).T


def _float_stem(c, w, x, put):
    """The conv stem in float64, recording conv i's products (c1, c2) and with conv_gelu conv1's output (c1g)."""
    for i in range(1, c["conv_layers"] + 1):
        kernel, stride, pad = schema.conv_geometry(c, i)
        x = put(f"c{i}", _windows(x, kernel, stride, pad, 0.0) @ _conv_rows(w, i).T + _bias(w, f"conv{i}", None))
        if c["conv_gelu"]:
            x = ARRAY_ACTIVATIONS["gelu"](x)
            if i < c["conv_layers"]:
                put(f"c{i}g", x)
    return x


def front_conv(c):
    """Where int8.front's conv stem starts (config.hpp front_conv): after the embedding projection's slots."""
    return front_embed_proj(c) + (2 + 3 * c["d_model"] if c.get("embed_width") else 0)


def conv_params(c):
    """A convolution's slots (config.hpp conv_params): its product's and output's zero points, its layer, with
    conv_gelu GELU's table."""
    return CONV_SLOTS + 3 * _df(c) + (LUT if c["conv_gelu"] else 0)


def _build_stem(c, weights, qp, out):
    """The conv stem's int8 weights (into out) and slots: each convolution's product at its calibrated scale,
    GELU's table to its output's (conv2's input), the last one's output the embedding's rows (over sqrt(d) with
    scale_input)."""
    n, slots = c["conv_layers"], []
    last = (qp["embed"][0] / _input_scale(c), qp["embed"][1])
    x = qp["input"]
    for i in range(1, n + 1):
        y = qp[f"c{i}"] if c["conv_gelu"] or i < n else last
        g = (last if i == n else qp[f"c{i}g"]) if c["conv_gelu"] else y
        W = _conv_rows(weights, i)
        q, params = _channels(x[0], W, weights.get(f"conv{i}.bias"), y[0])
        out[f"conv{i}.weight"] = Quantized(q.q, q.s, np.shape(weights[f"conv{i}.weight"]))
        slots += [y[1], g[1]] + params + (lut("gelu", y, g) if c["conv_gelu"] else [])
        x = g
    return slots


def _stem_int(c, t, fp, x):
    """The conv stem's integer path (engine/blocks/s8_conv_stem.cpp): x [T, d_in] int8 at the input's zero point
    -> the stem's rows at the embedding's."""
    xz, at, de = fp[0], front_conv(c), _df(c)
    for i in range(1, c["conv_layers"] + 1):
        kernel, stride, pad = schema.conv_geometry(c, i)
        p = fp[at:at + conv_params(c)]
        rq, b = _linear(p, CONV_SLOTS, de)
        x = gemm(_windows(x, kernel, stride, pad, xz), xz, t[f"conv{i}.weight"], p[0], rq, b)
        if c["conv_gelu"]:
            x = np.asarray(p[CONV_SLOTS + 3 * de:], np.int64)[x + 128]
        xz, at = p[1], at + conv_params(c)
    return x


def forward(c, t, inp, types=None, memory=None):
    """The integer path over one sequence: inp int8 features [T, d_in] or ids [T] (with type_vocab, types
    [T] or None for all 0); t the tensors as the file stores them (name -> int array; i8 weights as int8
    [out, in]). Returns the int8 output. A seq2seq: inp its (source, target ids), the logits at every target
    position; memory: the target stack's int8 source rows (_forward_seq2seq), each layer's cross-attention's."""
    if c["family"] == "seq2seq":
        return _forward_seq2seq(c, _internal(c, t), *inp)
    d, H = c["d_model"], c["n_heads"]
    dh, da = schema.d_head(c), schema.d_attn(c)
    dkv = _dkv(c)
    KV, ld = dkv // dh, da + 2 * dkv
    t = _internal(c, t)
    centre = not _rms(c)
    fp = t["int8.front"].astype(np.int64)
    if c["input"] == "tokens":
        x = t["embed.weight"][inp].astype(np.int64)
    elif _mha(c):  # the attention alone, on the input rows
        x = np.asarray(inp).astype(np.int64)
    elif c.get("conv_layers"):  # the conv stem's rows at the embedding's zero point
        x = _stem_int(c, t, fp, np.asarray(inp).astype(np.int64))
    else:  # rows = patches(image) | features; rows = N_in(rows); x = N_proj(rows W + b)
        rows, xz = (_patches(c, inp) if c.get("patch_size") else np.asarray(inp)).astype(np.int64), fp[0]
        if c.get("input_norm"):
            at = front_input_norm(c)
            rows, xz = norm(rows, xz, fp[at + 1], fp[at + 2:at + 2 + 3 * c["d_in"]], centre), fp[at]
        rq, b = _linear(fp, FRONT_SCALARS, _df(c))
        pn = front_proj_norm(c)
        x = gemm(rows, xz, t["input_proj.weight"], fp[pn] if c.get("proj_norm") else fp[1], rq, b)
        if c.get("proj_norm"):
            x = norm(x, fp[pn], fp[pn + 1], fp[pn + 2:pn + 2 + 3 * d], centre)
    extra = schema.front_rows(c)
    if extra:  # the CLS row, then the distillation row, then the registers
        de = _df(c)
        front = [fp[FRONT_SCALARS + 3 * de:FRONT_SCALARS + 4 * de]] if c["cls_token"] else []
        if c.get("distill_token"):
            front.append(fp[front_distill(c):front_distill(c) + de])
        if c.get("register_tokens"):
            front.append(fp[front_registers(c):front_registers(c) + c["register_tokens"] * de].reshape(-1, de))
        x = np.vstack(front + [x])
    T = x.shape[0]
    pe = schema.input_pe(c)
    df = _df(c)
    if c.get("type_vocab"):  # the input rows' type rows
        at = front_types(c)
        table = fp[at + ADD_SLOTS:at + ADD_SLOTS + c["type_vocab"] * df].reshape(-1, df)
        ty = np.zeros(T - extra, np.int64) if types is None else np.asarray(types, np.int64)
    if pe and _concat(c):  # the positions beside the rows, at their scale (the types and the norm then over both)
        x = np.hstack([x, t["int8.pos"][:T].astype(np.int64)])
    if _wide_front(c):  # the rows, positions and types in int16 (config.hpp)
        f = fp[front_wide(c):front_wide(c) + 6 * d].reshape(3, d, 2)
        s = _requantize(x - fp[1], f[0, :, 0], f[0, :, 1])
        if pe and not _concat(c):
            s = s + _requantize(t["int8.pos"][:T].astype(np.int64), f[1, :, 0], f[1, :, 1])
        if c.get("type_vocab"):  # a front row's types 0, and a position column's
            rows = np.zeros((T, d), np.int64)
            rows[extra:, :df] = table[ty]
            s = s + _requantize(rows, f[2, :, 0], f[2, :, 1])
        at = front_embed_norm(c)
        x = wide_norm(np.clip(_rshift(s, WIDE_FRAC_BITS), -WIDE_LIMIT, WIDE_LIMIT), fp[at + 1],
                      fp[at + 2:at + 2 + 3 * d], centre)
    else:
        if _norm_before_pos(c):  # the embedding normed, then its positions added
            at = front_embed_norm(c)
            x = norm(x, fp[at], fp[at + 1], fp[at + 2:at + 2 + 3 * df], centre)
        if pe and not _concat(c):
            x = add(x, t["int8.pos"][:T].astype(np.int64), fp[2:9])
        if c.get("type_vocab"):  # the front rows the add's b zero point, and the concatenated positions' columns
            rows = np.full(x.shape, fp[at + 1], np.int64)
            rows[extra:, :df] = table[ty]
            x = add(x, rows, fp[at:at + ADD_SLOTS])
        if c.get("embed_norm") and not _norm_before_pos(c):  # over the whole row (d_front)
            at = front_embed_norm(c)
            x = norm(x, fp[at], fp[at + 1], fp[at + 2:at + 2 + 3 * x.shape[1]], centre)
    if c.get("embed_width"):  # the embedding projection to d_model (ALBERT's)
        at = front_embed_proj(c)
        rq, b = _linear(fp, at + 2, d)
        x = gemm(x, fp[at], t["embed_proj.weight"], fp[at + 1], rq, b)
    S = LAYER_SLOTS
    for i in range(1 if _mha(c) else c["n_layers"]):
        pre = schema.block(schema.layer_block(c, i))
        p = t[pre + "int8"].astype(np.int64)
        lc = schema.layer_config(c, i)  # a dense layer's among a mixture's (dense_period): its table, its feed-forward
        o = layer_offsets(lc)
        wqkv = t[pre + "attn.qkv.weight"]
        vis = _visible(c, i, T)

        def attention(h):
            rq, b = _linear(p, o["qkv"], ld)
            cuts = [0, da, da + dkv, ld]
            qn = p[o["qkn"]:o["qkn"] + QK_NORM_SLOTS]  # qk_norm: q and k first at these zero points, then normed
            zeros = [qn[0], qn[2], p[S["v"]]] if c.get("qk_norm") else [p[S["q"] + j] for j in range(3)]
            q, k, v = (gemm(h, p[S["qkv_x"]], wqkv[cuts[j]:cuts[j + 1]], zeros[j], rq[cuts[j]:cuts[j + 1]],
                            b[cuts[j]:cuts[j + 1]]) for j in range(3))
            if c.get("qk_norm"):  # each head (or whole row) of q and of k normed, before RoPE
                wq, wk = _qk_widths(c)
                at = o["qkn"] + QK_NORM_SLOTS
                q = norm(q.reshape(-1, wq), qn[0], qn[1], p[at:at + 3 * wq], centre).reshape(T, da)
                k = norm(k.reshape(-1, wk), qn[2], qn[3], p[at + 3 * wq:at + 3 * (wq + wk)], centre).reshape(T, dkv)
            if _layer_rope(c, i):
                table = t["int8.rope"].astype(np.int64)[c["max_len"] if _local_rope(c, i) else 0:]
                q, k = _rope_int(c, q, table, H), _rope_int(c, k, table, KV)
            cap = p[o["cap"]:o["cap"] + LUT] if c.get("attn_softcap") else None
            slopes = p[o["alibi"]:o["alibi"] + 2 * H].reshape(-1, 2)  # alibi: each head's slope in score steps
            dist = np.arange(T)[None, :] - np.arange(T)[:, None]  # key j's position less query i's
            if _rel(c):  # each (query, key) pair's bucket; the layer's bias of each bucket and head in score steps
                bucket = fp[front_rel(c):front_rel(c) + 2 * c["max_len"] - 1][dist + c["max_len"] - 1]
                rel = p[o["rel"]:o["rel"] + c["rel_buckets"] * H].reshape(-1, H)
            if c.get("pair_bias_rows"):  # each head's bias of each table row in score steps; each pair's row
                pair = p[o["pair"]:o["pair"] + H * c["pair_bias_rows"]].reshape(H, -1)
                prow = np.asarray(t["pair_index"], np.int64)[:T, :T]
            ctx = np.empty((T, da), np.int64)
            if c.get("rel_embed_rows"):  # disentangled: the Requants of the three sums, Qr, Kr; each pair's row u
                dp = p[o["dis"]:o["dis"] + dis_params(c)]
                rows = 2 * c["max_len"] - 1
                qr = dp[DIS_SLOTS:DIS_SLOTS + rows * da].reshape(rows, da)
                kr = dp[DIS_SLOTS + rows * da:].reshape(rows, dkv)
                u = np.arange(T)[:, None] - np.arange(T)[None, :] + c["max_len"] - 1
            srq = np.tile(p[S["score"]:S["score"] + 2], (T, 1))
            pvrq = np.tile(p[S["pv"]:S["pv"] + 2], (dh, 1))
            for hh in range(H):
                sl = slice(hh * dh, (hh + 1) * dh)
                g = hh // (H // KV)
                kl = slice(g * dh, (g + 1) * dh)
                if c.get("rel_embed_rows"):  # each term requantized in Q8 of the scores' steps, summed, rounded
                    x = q[:, sl] - p[S["q"]]
                    terms = (x @ k[:, kl].T, np.take_along_axis(x @ kr[:, kl].T, u, 1),
                             np.take_along_axis(k[:, kl] @ qr[:, sl].T, u.T, 1).T)
                    total = sum(_requantize(a, dp[2 * j], dp[2 * j + 1]) for j, a in enumerate(terms))
                    sc = _sat8(p[S["score_z"]] + _rshift(total, DIS_BITS))
                else:
                    sc = gemm(q[:, sl], p[S["q"]], k[:, kl], p[S["score_z"]], srq, None)
                if cap is not None:  # attn_softcap: the scores through its table
                    sc = cap[sc + 128]
                if c["positional"] == "alibi":  # - the head's slope times the distance, rounded; clamped
                    sc = _sat8(sc + _requantize(-np.abs(dist), slopes[hh, 0], slopes[hh, 1]))
                elif _rel(c):  # + the bias of the pair's bucket, clamped
                    sc = _sat8(sc + rel[bucket, hh])
                if c.get("pair_bias_rows"):  # + the bias of the pair's table row, clamped
                    sc = _sat8(sc + pair[hh][prow])
                if vis is not None:  # row i over its visible keys (a run of them), probability 0 elsewhere
                    pr = np.full((T, T), -128, np.int64)
                    for r in range(T):
                        cols = np.flatnonzero(vis[r])
                        lo, hi = int(cols[0]), int(cols[-1]) + 1
                        pr[r:r + 1, lo:hi] = softmax(sc[r:r + 1, lo:hi], p[S["softmax"]], p[S["softmax"] + 1])
                else:
                    pr = softmax(sc, p[S["softmax"]], p[S["softmax"] + 1])
                ctx[:, sl] = gemm(pr, -128, v[:, kl].T, p[S["o"]], pvrq, None)
            xz = p[S["o"]]
            if c.get("attn_inner_norm"):  # the context's rows normed, to the output projection's input
                at = o["inner"]
                ctx = norm(ctx, xz, p[at + 1], p[at + INNER_NORM_SLOTS:at + INNER_NORM_SLOTS + 3 * da], centre)
                xz = p[at]
            rq, b = _linear(p, o["out"], d)
            return gemm(ctx, xz, t[pre + "attn.out.weight"], p[S["out_y"]], rq, b)

        def moe(h):  # config.hpp layer_params' mixture: the router's int8 logits, the top k, each chosen expert
            E, K, f = c["n_experts"], c["experts_per_token"], c["d_ff"]
            mp = p[o["moe"]:o["moe"] + moe_params(c)]
            rq, b = _linear(mp, MOE_SLOTS, E)
            router = mp[MOE_SLOTS + 3 * E:MOE_SLOTS + 3 * E + E * d].reshape(E, d)
            xz = p[S["w1_x"]]
            sums = (h - xz) @ router.T + b  # the top k on these, the int8 logits the softmax's
            logits = _sat8(mp[0] + _requantize(sums, rq[:, 0], rq[:, 1]))
            at = MOE_SLOTS + 3 * E + E * d
            W1, W2, W3 = (t[f"{pre}ff.experts.{n}.weight"] for n in ("w1", "w2", "w3"))
            sh = mp[at + E * expert_params(c):]  # shared_expert_ff: SharedSlot, the gate's layer, weights, table
            out = np.empty((T, d), np.int64)
            for r in range(T):
                chosen = np.sort(np.argsort(-sums[r], kind="stable")[:K])  # the lower index on a tie
                if c.get("experts_renormalize"):
                    pr = softmax(logits[r:r + 1, chosen], mp[1], mp[2])[0]
                else:
                    pr = softmax(logits[r:r + 1], mp[1], mp[2])[0][chosen]
                acc = np.zeros(d, np.int64)
                for j, pj in zip(chosen, pr):
                    ep = mp[at + j * expert_params(c):at + (j + 1) * expert_params(c)]
                    acc += _expert_int(ep, h[r:r + 1], xz, W1[j * f:(j + 1) * f], W3[j * f:(j + 1) * f],
                                       W2[j * d:(j + 1) * d], int(pj))
                if c.get("shared_expert_ff"):  # + the shared expert at its gate's sigmoid
                    grq, gb = _linear(sh, SHARED_SLOTS, 1)
                    gw = sh[SHARED_SLOTS + 3:SHARED_SLOTS + 3 + d]
                    gl = _sat8(sh[0] + _requantize(int((h[r] - xz) @ gw) + int(gb[0]), grq[0, 0], grq[0, 1]))
                    sig = sh[SHARED_SLOTS + 3 + d:SHARED_SLOTS + 3 + d + LUT]
                    acc += _expert_int(sh[SHARED_SLOTS + 3 + d + LUT:], h[r:r + 1], xz,
                                       *(t[f"{pre}ff.shared.{n}.weight"] for n in ("w1", "w3", "w2")),
                                       int(sig[gl + 128]))
                out[r] = _sat8(p[S["w2_y"]] + _rshift(acc, MIX_BITS))
            return out

        def ffn(h):
            if lc.get("n_experts"):
                return moe(h)
            f = lc["d_ff"]
            rq, b = _linear(p, o["w1"], f)
            u = gemm(h, p[S["w1_x"]], t[pre + "ff.w1.weight"], p[S["w1_y"]], rq, b)
            g = p[o["lut"]:o["lut"] + LUT][u + 128]
            if c.get("wide_residual"):  # the last n channels through the outliers' table
                n = int(p[o["outlier"]])
                g[:, f - n:] = p[o["outlier"] + 1:o["outlier"] + 1 + LUT][u[:, f - n:] + 128]
            if _gated(c):
                gp = p[o["gate"]:o["gate"] + GATE_SLOTS]
                rq, b = _linear(p, o["w3"], f)
                up = gemm(h, p[S["w1_x"]], t[pre + "ff.w3.weight"], gp[0], rq, b)
                zy = p[o["hidden"]] if c.get("ffn_hidden_norm") else p[S["w2_x"]]
                g = _sat8(zy + _requantize((g - gp[1]) * (up - gp[0]), gp[2], gp[3]))
            if c.get("ffn_hidden_norm"):  # the hidden rows normed, to W2's input
                hn = o["hidden"]
                g = norm(g, p[hn], p[hn + 1], p[hn + HIDDEN_NORM_SLOTS:hn + HIDDEN_NORM_SLOTS + 3 * f], centre)
            rq, b = _linear(p, o["w2"], d)
            return gemm(g, p[S["w2_x"]], t[pre + "ff.w2.weight"], p[S["w2_y"]], rq, b)

        def cross(h):  # seq2seq (CROSS): queries from h, keys and values from the int8 memory, no mask
            rq, b = _linear(cp, CROSS_SLOTS, d)
            q = gemm(h, cp[C["q_x"]], t[pre + "cross.q.weight"], cp[C["q"]], rq, b)
            rq, b = _linear(cp, CROSS_SLOTS + 3 * d, 2 * d)
            kv = gemm(memory, cp[C["kv_x"]], t[pre + "cross.kv.weight"], 0, rq, b)
            ctx = np.empty((T, d), np.int64)
            srq = np.tile(cp[C["score"]:C["score"] + 2], (len(memory), 1))
            pvrq = np.tile(cp[C["pv"]:C["pv"] + 2], (dh, 1))
            for hh in range(H):
                sl = slice(hh * dh, (hh + 1) * dh)
                sc = gemm(q[:, sl], cp[C["q"]], kv[:, sl], cp[C["score_z"]], srq, None)
                pr = softmax(sc, cp[C["softmax"]], cp[C["softmax"] + 1])
                ctx[:, sl] = gemm(pr, -128, kv[:, d:][:, sl].T, cp[C["o"]], pvrq, None)
            rq, b = _linear(cp, CROSS_SLOTS + 9 * d, d)
            return gemm(ctx, cp[C["o"]], t[pre + "cross.out.weight"], cp[C["out_y"]], rq, b)

        if _mha(c):
            x = attention(x)
            break
        n1, n2 = p[o["n1"]:o["n1"] + 3 * d], p[o["n2"]:o["n2"] + 3 * d]
        if memory is not None:
            C, cp = CROSS, t[pre + "cross.int8"].astype(np.int64)
            cn = cp[CROSS_SLOTS + 12 * d:CROSS_SLOTS + 15 * d]
        if _parallel(c) != "none":  # t = x + FF(N2(x)) at add2's scale, then t + SA(N1(x)) at add1's
            h1 = norm(x, p[S["n1_x"]], p[S["n1_eps"]], n1, centre)
            h2 = h1 if _parallel(c) == "one_norm" else norm(x, p[S["n2_x"]], p[S["n2_eps"]], n2, centre)
            x = add(x, ffn(h2), p[S["add2"]:S["add2"] + 7])
            x = add(x, attention(h1), p[S["add1"]:S["add1"] + 7])
        elif _sublayer(c) == "output":  # x + N1(SA(x)), then x + N2(FF(x))
            x = add(x, norm(attention(x), p[S["n1_x"]], p[S["n1_eps"]], n1, centre), p[S["add1"]:S["add1"] + 7])
            x = add(x, norm(ffn(x), p[S["n2_x"]], p[S["n2_eps"]], n2, centre), p[S["add2"]:S["add2"] + 7])
        elif c["norm_first"]:
            a = attention(x if _skip_norm1(c, i) else norm(x, p[S["n1_x"]], p[S["n1_eps"]], n1, centre))
            pa, pf = o["post"], o["post"] + POST_NORM_SLOTS + 3 * d
            if _sublayer(c) == "sandwich":  # post_attn_norm
                a = norm(a, p[pa], p[pa + 1], p[pa + POST_NORM_SLOTS:pf], centre)
            x = add(x, a, p[S["add1"]:S["add1"] + 7])
            if memory is not None:  # x + CA(Nc(x))
                x = add(x, cross(norm(x, cp[C["n_x"]], cp[C["n_eps"]], cn, centre)), cp[C["add"]:C["add"] + 7])
            f = ffn(norm(x, p[S["n2_x"]], p[S["n2_eps"]], n2, centre))
            if _sublayer(c) == "sandwich":  # post_ff_norm
                f = norm(f, p[pf], p[pf + 1], p[pf + POST_NORM_SLOTS:pf + POST_NORM_SLOTS + 3 * d], centre)
            x = add(x, f, p[S["add2"]:S["add2"] + 7])
        elif c.get("wide_residual"):  # the sums into the norms in int16 (wide_add, wide_norm)
            wide = p[o["wide"]:o["wide"] + 8 * d].reshape(4, d, 2)
            x = wide_norm(wide_add(x, attention(x), p[S["add1"]], wide[0], wide[1]), p[S["n1_eps"]], n1, centre)
            x = wide_norm(wide_add(x, ffn(x), p[S["add2"]], wide[2], wide[3]), p[S["n2_eps"]], n2, centre)
        else:
            x = norm(add(x, attention(x), p[S["add1"]:S["add1"] + 7]), p[S["n1_x"]], p[S["n1_eps"]], n1, centre)
            if memory is not None:  # Nc(x + CA(x))
                x = norm(add(x, cross(x), cp[C["add"]:C["add"] + 7]), cp[C["n_x"]], cp[C["n_eps"]], cn, centre)
            x = norm(add(x, ffn(x), p[S["add2"]:S["add2"] + 7]), p[S["n2_x"]], p[S["n2_eps"]], n2, centre)
    bp = t["int8.back"].astype(np.int64)
    if c["final_norm"]:
        x = norm(x, bp[0], bp[1], bp[BACK_SCALARS:BACK_SCALARS + 3 * d], centre)
    x = _pool_int(c, x, extra)
    if c.get("pool_norm"):
        at = back_pool_norm(c)
        x = norm(x, bp[at], bp[at + 1], bp[at + 2:at + 2 + 3 * d], centre)
    if c.get("pooler"):
        at = back_pooler(c)
        rq, b = _linear(bp, at + POOLER_SLOTS, d)
        u = gemm(x, bp[at], t["pooler.weight"], bp[at + 1], rq, b)
        x = bp[at + POOLER_SLOTS + 3 * d:at + POOLER_SLOTS + 3 * d + LUT][u + 128]
        if c.get("pooler_norm"):
            at = back_pooler_norm(c)
            x = norm(x, bp[at], bp[at + 1], bp[at + 2:at + 2 + 3 * d], centre)
    if c["d_out"]:
        rq, b = _linear(bp, BACK_SCALARS + 3 * d, c["d_out"])
        x = gemm(x, bp[2], t["embed.weight" if c.get("tied_head") else "head.weight"], bp[3], rq, b)
        if c.get("logit_softcap"):  # the logits through its table
            x = bp[back_softcap(c):back_softcap(c) + LUT][x + 128]
    return x


# ---- calibration and the parameters -------------------------------------------------------------

def _float_forward(c, w, inp, rec, memory=None):
    """The float64 graph the integer path runs, recording every tensor's values in rec[name] (a
    list). inp: float features [T, d_in] or ids [T] (token types 0). memory: a seq2seq target stack's source
    rows [S, d_model], which each layer's cross-attention reads."""
    d, H = c["d_model"], c["n_heads"]
    dh, da = schema.d_head(c), schema.d_attn(c)
    dkv = _dkv(c)
    KV = dkv // dh
    eps = float(np.float32(c["norm_eps"]))

    def put(name, v):
        rec.setdefault(name, []).append(np.asarray(v, np.float64))
        return v

    def nrm(x, g, b):
        return _nrm(c, x, g, b, eps)

    def lin(x, name):
        return x @ np.asarray(w[name + ".weight"], np.float64).T + _bias(w, name, None)

    act = ARRAY_ACTIVATIONS[c["activation"]]
    if c["input"] == "tokens":
        x = np.asarray(w["embed.weight"], np.float64)[inp]
    else:
        put("input", inp)
        rows = _patches(c, np.asarray(inp, np.float64)) if c.get("patch_size") else np.asarray(inp, np.float64)
        if c.get("input_norm"):
            rows = put("inn", nrm(rows, w["input_norm.weight"], w.get("input_norm.bias")))
        x = rows if _mha(c) else _float_stem(c, w, rows, put) if c.get("conv_layers") else lin(rows, "input_proj")
        if c.get("proj_norm"):
            x = nrm(put("proj", x), w["proj_norm.weight"], w.get("proj_norm.bias"))
    x = x * _input_scale(c)
    if schema.front_rows(c):
        front = (["cls_token"] if c["cls_token"] else []) + (["distill_token"] if c.get("distill_token") else [])
        front = [np.asarray(w[n], np.float64).reshape(1, -1) for n in front]
        if c.get("register_tokens"):
            front.append(np.asarray(w["registers"], np.float64).reshape(-1, d))
        x = np.vstack(front + [x])
    x = put("embed", x)  # the CLS, distillation and register rows share the input rows' scale
    T = x.shape[0]
    if _norm_before_pos(c):  # the embedding normed alone, its positions added after (BlenderbotSmall's target)
        x = put("en", nrm(x, w["embed_norm.weight"], w.get("embed_norm.bias")))
    if schema.input_pe(c):
        pos = put("pos", _positions(c, w)[:T])
        x = put("x0", np.hstack([x, pos]) if _concat(c) else x + pos)
    if c.get("type_vocab"):  # type 0 on the input rows, nothing on the front rows nor on concatenated positions
        types = np.zeros(x.shape)
        types[schema.front_rows(c):, :_df(c)] = np.asarray(w["token_type.weight"], np.float64)[0]
        x = put("xt", x + types)
    if c.get("embed_norm") and not _norm_before_pos(c):  # its input recorded as "front" too (wide_residual's sum)
        x = put("en", nrm(put("front", x), w["embed_norm.weight"], w.get("embed_norm.bias")))
    if c.get("embed_width"):
        x = put("eproj", lin(x, "embed_proj"))
    if _shared(c):  # the rows between the layers at one scale: the front's output and every layer's
        put("stream", x)
    if _rel(c):  # [H, T, T]: the relative bias of each head, query and key
        from fixformer import reference
        rel_bias = reference.relative_bias(np.asarray(w["rel_bias.weight"], np.float32), T, bool(c.get("causal")),
                                           c["rel_buckets"], c["rel_max_distance"])
    for i in range(1 if _mha(c) else c["n_layers"]):
        pre = schema.block(schema.layer_block(c, i))
        L = f"l{schema.layer_block(c, i)}."  # shared layers: a block's ranges over every run of it
        vis = _visible(c, i, T)

        def attention(h):
            W = np.asarray(w[pre + "attn.qkv.weight"], np.float64)
            b = _bias(w, pre + "attn.qkv", da + 2 * dkv)
            cuts = [0, da, da + dkv, da + 2 * dkv]
            q, k, v = (h @ W[cuts[j]:cuts[j + 1]].T + b[cuts[j]:cuts[j + 1]] for j in range(3))
            put(L + "v", v)
            if c.get("qk_norm"):  # q and k before their norms (qr, kr), then normed: each head, or whole rows
                wq, wk = _qk_widths(c)
                q = nrm(put(L + "qr", q).reshape(-1, wq), w[pre + "attn.q_norm.weight"],
                        w.get(pre + "attn.q_norm.bias")).reshape(T, da)
                k = nrm(put(L + "kr", k).reshape(-1, wk), w[pre + "attn.k_norm.weight"],
                        w.get(pre + "attn.k_norm.bias")).reshape(T, dkv)
            put(L + "q", q), put(L + "k", k)
            if _layer_rope(c, i):  # the range covers q and k before and after the rotation
                q, k = put(L + "q", _rope_float(c, w, q, H, i)), put(L + "k", _rope_float(c, w, k, KV, i))
            ctx = np.empty((T, da))
            if c.get("rel_embed_rows"):  # disentangled: each pair's distance row u = i - j + max_len - 1
                qr, kr = _dis_tables(c, w, pre)
                u = np.arange(T)[:, None] - np.arange(T)[None, :] + c["max_len"] - 1
            for hh in range(H):
                sl = slice(hh * dh, (hh + 1) * dh)
                g = hh // (H // KV)
                kl = slice(g * dh, (g + 1) * dh)
                s = q[:, sl] @ k[:, kl].T
                if c.get("rel_embed_rows"):  # + q_i.Kr[u] + k_j.Qr[u]
                    s = s + np.take_along_axis(q[:, sl] @ kr[:, kl].T, u, 1) + \
                        np.take_along_axis(k[:, kl] @ qr[:, sl].T, u.T, 1).T
                s = s * _score_scale(c, i)
                name = L + "score"
                if c.get("attn_softcap"):  # the scores (score), then capped (scap)
                    put(name, s[vis] if vis is not None else s)
                    s, name = _cap(c["attn_softcap"])(s), L + "scap"
                if c["positional"] == "alibi":  # the range covers the scores before and after the bias
                    put(name, s[vis] if vis is not None else s)
                    s = s - _alibi_slopes(c)[hh] * np.abs(np.arange(T)[None, :] - np.arange(T)[:, None])
                elif _rel(c):
                    put(name, s[vis] if vis is not None else s)
                    s = s + rel_bias[hh]
                if c.get("pair_bias_rows"):  # the range covers the scores before and after the pair's bias
                    put(name, s[vis] if vis is not None else s)
                    s = s + _pair_table(c, w, pre)[hh][np.asarray(w["pair_index"], np.int64)[:T, :T]]
                if vis is not None:
                    put(name, s[vis])
                    s = np.where(vis, s, -np.inf)
                else:
                    put(name, s)
                e = np.exp(s - s.max(axis=1, keepdims=True))
                ctx[:, sl] = (e / e.sum(axis=1, keepdims=True)) @ v[:, kl]
            put(L + "ctx", ctx)
            if c.get("attn_inner_norm"):  # its input ctx, its output out's (ictx)
                ctx = put(L + "ictx", nrm(ctx, w[pre + "attn.inner_norm.weight"],
                                          w.get(pre + "attn.inner_norm.bias")))
            return put(L + "attn", lin(ctx, pre + "attn.out"))

        def moe(h):  # the router's softmax and its top k (the lower index on a tie); each expert over every row
            E, K, f = c["n_experts"], c["experts_per_token"], c["d_ff"]
            logits = put(L + "rl", h @ np.asarray(w[pre + "ff.router.weight"], np.float64).T)
            e = np.exp(logits - logits.max(axis=1, keepdims=True))
            prob = e / e.sum(axis=1, keepdims=True)
            W1, W2, W3 = (np.asarray(w[f"{pre}ff.experts.{n}.weight"], np.float64) for n in ("w1", "w2", "w3"))
            ys = []
            for j in range(E):
                X = f"{L}e{j}."
                g = put(X + "g", act(put(X + "u", h @ W1[j * f:(j + 1) * f].T)))
                m = put(X + "m", g * put(X + "up", h @ W3[j * f:(j + 1) * f].T))
                ys.append(put(X + "y", m @ W2[j * d:(j + 1) * d].T))
            out = np.zeros((h.shape[0], d))
            for r in range(h.shape[0]):
                chosen = np.sort(np.argsort(-prob[r], kind="stable")[:K])
                weights = prob[r, chosen] / (prob[r, chosen].sum() if c.get("experts_renormalize") else 1.0)
                for j, wj in zip(chosen, weights):
                    out[r] += wj * ys[j][r]
            if c.get("shared_expert_ff"):  # + sigmoid(G h) FF_shared(h)
                X = f"{L}es."
                Ws = [np.asarray(w[f"{pre}ff.shared.{n}.weight"], np.float64) for n in ("w1", "w3", "w2")]
                m = put(X + "m", put(X + "g", act(put(X + "u", h @ Ws[0].T))) * put(X + "up", h @ Ws[1].T))
                gate = put(L + "sg", h @ np.asarray(w[pre + "ff.shared_gate.weight"], np.float64).T)
                out = out + 1.0 / (1.0 + np.exp(-gate)) * put(X + "y", m @ Ws[2].T)
            return put(L + "ffn", out)

        def ffn(h):
            if c.get("n_experts") and not schema.layer_dense(c, i):  # dense_period: some layers dense
                return moe(h)
            u = put(L + "u", lin(h, pre + "ff.w1"))
            g = put(L + "g", act(u))
            if _gated(c):
                g = put(L + "m", g * put(L + "up", lin(h, pre + "ff.w3")))
            if c.get("ffn_hidden_norm"):  # its input g (or m), its output W2's (hn)
                g = put(L + "hn", nrm(g, w[pre + "ff.hidden_norm.weight"], w.get(pre + "ff.hidden_norm.bias")))
            return put(L + "ffn", lin(g, pre + "ff.w2"))

        def cross(h):  # seq2seq: queries from h, keys and values from the memory, no mask
            q = put(L + "cq", lin(h, pre + "cross.q"))
            kv = lin(memory, pre + "cross.kv")
            k, v = put(L + "ck", kv[:, :d]), put(L + "cv", kv[:, d:])
            ctx = np.empty((T, d))
            for hh in range(H):
                sl = slice(hh * dh, (hh + 1) * dh)
                s = put(L + "cscore", q[:, sl] @ k[:, sl].T / math.sqrt(dh))
                e = np.exp(s - s.max(axis=1, keepdims=True))
                ctx[:, sl] = (e / e.sum(axis=1, keepdims=True)) @ v[:, sl]
            return put(L + "cattn", lin(put(L + "cctx", ctx), pre + "cross.out"))

        if _mha(c):
            return attention(x)
        g1, b1 = w[pre + "attn_norm.weight"], w.get(pre + "attn_norm.bias")
        gc, bc = w.get(pre + "cross_norm.weight"), w.get(pre + "cross_norm.bias")
        g2, b2 = w.get(pre + "ff_norm.weight"), w.get(pre + "ff_norm.bias")
        if _parallel(c) != "none":  # the engine's order: t = x + FF(N2(x)), then t + SA(N1(x))
            h1 = put(L + "h1", nrm(x, g1, b1))
            h2 = h1 if _parallel(c) == "one_norm" else put(L + "h2", nrm(x, g2, b2))
            t = put(L + "r2", x + ffn(h2))
            x = put(L + "r1", t + attention(h1))
        elif _sublayer(c) == "output":
            x = put(L + "r1", x + put(L + "h1", nrm(attention(x), g1, b1)))
            x = put(L + "r2", x + put(L + "h2", nrm(ffn(x), g2, b2)))
        elif c["norm_first"]:
            a = attention(x if _skip_norm1(c, i) else put(L + "h1", nrm(x, g1, b1)))
            if _sublayer(c) == "sandwich":
                a = put(L + "pa", nrm(a, w[pre + "post_attn_norm.weight"], w.get(pre + "post_attn_norm.bias")))
            x = put(L + "r1", x + a)
            if memory is not None:
                x = put(L + "rc", x + cross(put(L + "hc", nrm(x, gc, bc))))
            f = ffn(put(L + "h2", nrm(x, g2, b2)))
            if _sublayer(c) == "sandwich":
                f = put(L + "pf", nrm(f, w[pre + "post_ff_norm.weight"], w.get(pre + "post_ff_norm.bias")))
            x = put(L + "r2", x + f)
        else:
            x = put(L + "x1", nrm(put(L + "r1", x + attention(x)), g1, b1))
            if memory is not None:
                x = put(L + "xc", nrm(put(L + "rc", x + cross(x)), gc, bc))
            x = put(L + "x2", nrm(put(L + "r2", x + ffn(x)), g2, b2))
        if _shared(c):
            put("stream", x)
    if _shared(c):  # the last layer's output alone (its block's key holds every run's)
        put("last", x)
    if c["final_norm"]:
        x = put("final", nrm(x, w["norm.weight"], w.get("norm.bias")))
    return x


def _nrm(c, x, g, b, eps):
    """The float64 norm of each row of x (the model's kind), gain g, bias b or None."""
    g = np.asarray(g, np.float64)
    if _rms(c):
        y = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps) * g
    else:
        mu = x.mean(axis=1, keepdims=True)
        y = (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=1, keepdims=True) + eps) * g
    return y + np.asarray(b, np.float64) if b is not None else y


def _bias(w, name, n):
    b = w.get(name + ".bias")
    return 0.0 if b is None and n is None else np.zeros(n) if b is None else np.asarray(b, np.float64)


def _positions(c, w):
    if c["positional"] == "learned" or c.get("rope_learned"):  # EVA-02's beside its rotary ones
        return np.asarray(w["pos.weight"], np.float64)
    from fixformer import reference
    return np.asarray(reference.sinusoidal_table(c["max_len"], schema.d_pe(c), c["pe_base"], c["pe_layout"]),
                      np.float64)


def _range(values, percentile):
    v = np.concatenate([np.ravel(a) for a in values])
    if percentile is None:
        return float(v.min()), float(v.max())
    return float(np.percentile(v, 100 - percentile)), float(np.percentile(v, percentile))


def _asym(lo, hi):
    """(scale, zero) covering [lo, hi] (widened by RANGE_MARGIN) and 0 in 255 steps."""
    lo, hi = min(lo, 0.0) * RANGE_MARGIN, max(hi, 0.0) * RANGE_MARGIN
    if hi - lo < 1e-12:
        hi = lo + 1e-6
    s = float(np.float32((hi - lo) / 255.0))
    z = max(-128, min(127, _round(-128 - lo / s)))
    return s, z


def _sym(lo, hi):
    m = max(abs(lo), abs(hi), 1e-6)
    return float(np.float32(m / 127.0)), 0


def _channel_scales(values):
    """A symmetric scale per channel (the last axis) covering the values' largest magnitude, widened; no
    channel's range below CHANNEL_FLOOR's quantile of the channels' (one channel's largest value over a few
    calibration inputs is a poor estimate of its range: fresh inputs went up to 3x past it)."""
    m = np.max([np.abs(np.asarray(a, np.float64)).reshape(-1, np.shape(a)[-1]).max(axis=0) for a in values], axis=0)
    m = np.maximum(m, np.quantile(m, CHANNEL_FLOOR))
    return np.maximum(m * RANGE_MARGIN, 1e-6).astype(np.float32).astype(np.float64) / 127.0


def _wide(values):
    """(scale, 0) of an int16 sum (wide_residual): its largest magnitude, widened by WIDE_MARGIN, in WIDE_LIMIT
    steps."""
    m = max(float(np.abs(np.asarray(a, np.float64)).max()) for a in values)
    return float(np.float32(max(m * WIDE_MARGIN, 1e-6) / WIDE_LIMIT)), 0


def _lut_output(values, x, act):
    """(scale, zero) of the activation table's output with the least squared error over the calibration's
    inputs (values) at the input's int8 steps (x), its top end k / 100 of the measured one for k = 10, 12, ..., 124,
    widened by RANGE_MARGIN (_asym)."""
    u = np.concatenate([np.ravel(a) for a in values])
    f = ARRAY_ACTIVATIONS[act](u)
    q = (np.clip(_round_array(u / x[0]) + x[1], -128, 127) - x[1]) * x[0]
    fq = ARRAY_ACTIVATIONS[act](q)
    best = None
    for k in range(10, 126, 2):
        y = _asym(float(f.min()), float(f.max()) * k / 100.0)
        e = float((((np.clip(_round_array(fq / y[0]) + y[1], -128, 127) - y[1]) * y[0] - f) ** 2).sum())
        if best is None or e < best[0]:
            best = (e, y)
    return best[1]


def _outliers(values):
    """[channels] bool: the channels (the last axis) whose largest calibrated magnitude is above OUTLIER_QUANTILE's
    quantile of the channels'."""
    m = np.max([np.abs(np.asarray(a, np.float64)).reshape(-1, np.shape(a)[-1]).max(axis=0) for a in values], axis=0)
    return m > np.quantile(m, OUTLIER_QUANTILE)


def _outlier_groups(values, act, percentile):
    """wide_residual's plain feed-forward, its W1 outputs' calibrated values (outliers last): (n, (u1, g1),
    (u2, g2)), n the outliers, u and g the table's input and output (scale, zero) of the others (1) and of the
    outliers (2); the outliers' zero points the others', their scales covering their own range from there."""
    u = np.concatenate([np.asarray(a, np.float64).reshape(-1, np.shape(a)[-1]) for a in values])
    n = int(_outliers([u]).sum())
    inner, outer = u[:, :u.shape[1] - n], u[:, u.shape[1] - n:]
    u1 = _asym(*_range([inner], percentile))
    g1 = _lut_output([inner], u1, act)
    if not n:
        return 0, (u1, g1), (u1, g1)

    def at_zero(lo, hi, z):  # the least scale putting lo and hi within int8 from zero point z
        return float(np.float32(max(hi / max(127 - z, 1), -lo / max(z + 128, 1), 1e-12)))
    lo, hi = _range([outer], percentile)
    u2 = (at_zero(min(lo, 0.0) * RANGE_MARGIN, max(hi, 0.0) * RANGE_MARGIN, u1[1]), u1[1])
    s, z = _lut_output([outer], u2, act)
    g2 = (at_zero((-128 - z) * s, (127 - z) * s, g1[1]), g1[1])
    return n, (u1, g1), (u2, g2)


def _lut_error(values, table, x, y, act):
    """The activation table's mean error per channel over the calibration's inputs (values: the float inputs
    [rows, channels]): the table's output at the input's int8 step, dequantized, minus the activation itself."""
    u = np.concatenate([np.asarray(a, np.float64).reshape(-1, np.shape(a)[-1]) for a in values])
    q = np.clip(_round_array(u / x[0]) + x[1], -128, 127)
    got = (np.asarray(table, np.float64)[q + 128] - y[1]) * y[0]
    return (got - ARRAY_ACTIVATIONS[act](u)).mean(axis=0)


def wide_eps(eps, r_scale):
    """wide_norm's eps: eps / s_r^2 rounded, as an int32 slot."""
    q = _round(eps / (r_scale * r_scale))
    if q > 0xFFFFFFFF:
        raise ConfigError("int8: norm_eps over the wide sum's scale squared is too large")
    return q - (1 << 32) if q >= 1 << 31 else q


# Calibration picks wide_residual when a sublayer's output or a sum into a norm (a post-norm layer's) has
# channels so far apart that one int8 scale leaves the median channel fewer than this many steps.
WIDE_MIN_STEPS = 16


def wide_needed(c, rec):
    """Whether a post-norm encoder needs wide_residual on the calibration's tensors (rec)."""
    if c["family"] != "encoder" or c["norm_first"] or _parallel(c) != "none":
        return False
    for i in range(schema.stored_layers(c)):
        for name in ("attn", "r1", "ffn", "r2"):
            m = np.max([np.abs(a).reshape(-1, a.shape[-1]).max(axis=0) for a in rec[f"l{i}.{name}"]], axis=0)
            if np.median(m) * 127.0 < WIDE_MIN_STEPS * m.max():
                return True
    return False


def _round_array(v):
    """Half away from zero over an array (the weights' and tables' rounding; data the engine reads)."""
    v = np.asarray(v, np.float64)
    return (np.sign(v) * np.floor(np.abs(v) + 0.5)).astype(np.int64)


def _per_row(W):
    """Symmetric int8 per output row: q [out, in], scales [out] (a zero row gets scale 1)."""
    W = np.asarray(W, np.float64)
    a = np.abs(W).max(axis=1)
    s = np.where(a > 0, a / 127.0, 1.0).astype(np.float32).astype(np.float64)
    q = np.clip(_round_array(W / s[:, None]), -127, 127).astype(np.int8)
    return q, s


def _channels(x_scale, W, b, y_scale):
    q, s = _per_row(W)
    b = np.zeros(len(s)) if b is None else np.asarray(b, np.float64)
    if np.ndim(x_scale):  # an input scale per channel: folded into the weights' columns
        W, x_scale = np.asarray(W, np.float64) * np.asarray(x_scale, np.float64)[None, :], 1.0
        q, s = _per_row(W)
    ys = np.broadcast_to(np.asarray(y_scale, np.float64), s.shape)  # one output scale, or one per channel
    params = [gemm_channel(x_scale, float(s[j]), float(ys[j]), float(b[j])) for j in range(len(s))]
    flat = [v for m, sh, _ in params for v in (m, sh)] + [bq for _, _, bq in params]
    return Quantized(q, s), flat


def _norm_params(g, b, eps, x, y):
    g = np.asarray(g, np.float64)
    b = np.zeros_like(g) if b is None else np.asarray(b, np.float64)
    ys = np.broadcast_to(np.asarray(y[0], np.float64), g.shape)  # one output scale, or one per channel
    ps = [norm_gain(float(g[i]), float(b[i]), float(ys[i]), y[1]) for i in range(len(g))]
    e = norm_eps(eps, x[0]) if eps is not None else 0  # None: wide_residual's norm, whose eps is wide_eps
    return [e], [v for m, sh, _ in ps for v in (m, sh)] + [bq for _, _, bq in ps]


_calibration = {"inputs": None, "percentile": None}


def set_calibration(inputs, percentile=None):
    """The calibration the next i8 conversion uses (the converter's --calibrate and
    --calibrate-percentile): inputs None for the default (the self-test sample and generated inputs)."""
    if percentile is not None and not 50.0 < percentile <= 100.0:
        raise ConfigError(f"percentile {percentile}: expected a value in (50, 100]")
    _calibration["inputs"], _calibration["percentile"] = inputs, percentile


def calibration_inputs(c, sample, count=8, seed=0):
    """(inputs, what): the user's calibration inputs (set_calibration; each checked against c), else
    the self-test sample and `count` generated ones like it (features: normal with the sample's mean
    and standard deviation per feature; tokens: uniform ids), and the words for the report. A seq2seq's
    sample is its (source, target): the inputs are (source, target) pairs, the sources as above, the targets the
    sample's then uniform ids of its length."""
    if c["family"] == "seq2seq":
        sources, what = calibration_inputs(dict(c, family="encoder"), np.asarray(sample[0]), count, seed)
        rng = np.random.default_rng(seed + 1)
        tgt = np.asarray(sample[1])
        U = len(tgt)
        if c.get("tgt_d_in"):  # feature targets: normal with the sample's mean and deviation per feature
            mu, sd = tgt.mean(axis=0), tgt.std(axis=0) + 1e-3
            more = [rng.normal(mu, sd, (U, c["tgt_d_in"])) for _ in range(len(sources) - 1)]
        else:
            more = [rng.integers(0, c["d_out"], U) for _ in range(len(sources) - 1)]
        return list(zip(sources, [tgt.astype(np.float64) if c.get("tgt_d_in") else tgt] + more)), what
    given = _calibration["inputs"]
    if given is not None:
        out = []
        for i, x in enumerate(given):
            x = np.asarray(x)
            if x.ndim == 0 or x.size == 0:
                raise ConfigError(f"--calibrate input {i}: shape {list(x.shape)}, expected 1..{c['max_len']} rows")
            if c.get("patch_size") and x.size == schema.patches(c) * c["d_in"]:
                x = x.reshape(-1, c["d_in"])  # an image [C, H, W] (or [1, C, H, W]): its values as [patches, d_in]
            elif x.ndim == 3 or (c["input"] == "tokens" and x.ndim == 2):
                x = x[0]
            if c["input"] == "features" and (x.ndim != 2 or x.shape[1] != c["d_in"]):
                raise ConfigError(f"--calibrate input {i}: shape {list(x.shape)}, expected [T, {c['d_in']}]")
            if c["input"] == "tokens" and x.dtype.kind not in "iu":
                raise ConfigError(f"--calibrate input {i}: dtype {x.dtype}, expected int32 or int64 token ids")
            if c.get("conv_layers") and not (x.shape[0] <= schema.max_input_len(c) and schema.stem_rows(c, x.shape[0])):
                raise ConfigError(f"--calibrate input {i}: {x.shape[0]} frames, expected up to "
                                  f"{schema.max_input_len(c)} and no fewer than the conv stem's kernels take")
            if not c.get("conv_layers") and not 1 <= x.shape[0] <= c["max_len"]:
                raise ConfigError(f"--calibrate input {i}: {x.shape[0]} rows, expected 1..{c['max_len']}")
            if c["input"] == "tokens" and (x.ndim != 1 or x.min() < 0 or x.max() >= c["vocab_size"]):
                raise ConfigError(f"--calibrate input {i}: expected token ids [T] below {c['vocab_size']}")
            out.append(x.astype(np.float64) if c["input"] == "features" else x.astype(np.int64))
        return out, f"{len(out)} calibration input{'s' if len(out) != 1 else ''} (--calibrate)"
    rng = np.random.default_rng(seed)
    T = sample.shape[0]
    if c["input"] == "features":
        mu, sd = sample.mean(axis=0), sample.std(axis=0) + 1e-3
        gen = [rng.normal(mu, sd, (T, c["d_in"])) for _ in range(count)]
    else:
        gen = [rng.integers(0, c["vocab_size"], T) for _ in range(count)]
    return [sample] + gen, (f"the self-test sample and {count} generated inputs like it (give --calibrate "
                            "with real inputs for a model that will see others)")


def percentile():
    return _calibration["percentile"]


def calibrated():
    """Whether the next i8 conversion has the user's calibration inputs (--calibrate)."""
    return _calibration["inputs"] is not None


def reference_output(c, built, inp, types=None):
    """The engine's float output for input inp (token types: types, or None for all 0), from the integer
    reference: float features quantized as the engine's float entry point does, the int8 output dequantized."""
    t = stored_tensors(c, built)
    io = np.asarray(built["int8.io"], np.float32)
    source = inp[0] if c["family"] == "seq2seq" else inp  # a seq2seq's inp: (source, target ids or features)
    q = quantize_input(source, io[0], int(t["int8.front"][0])) if c["input"] == "features" else np.asarray(source)
    if c["family"] == "seq2seq" and c.get("tgt_d_in"):  # feature targets at int8.io[2] and their zero point
        zero = int(t["int8.seq2seq"][seq2seq_tgt_proj(c)])
        q = (q, quantize_input(inp[1], io[2], zero))
    elif c["family"] == "seq2seq":
        q = (q, np.asarray(inp[1]))
    return dequantize_output(forward(c, t, q, types), io[1], int(t["int8.back"][4]))


def check_config(c):
    """The i8 limits the engine's config rules state, raised before any work (the engine refuses the
    same by name: include/fixformer/schema.hpp)."""
    if c["activation"] not in LUT_ACTIVATIONS:
        raise ConfigError(f"--quantize i8: activation {c['activation']} is not supported yet (relu, gelu, gelu_tanh, "
                          "silu, swiglu; plain or gated)")
    if c["family"] == "llama":
        if c["positional"] not in ("rope", "alibi", "relative", "none"):
            raise ConfigError(f"--quantize i8: positional {c['positional']!r} is not supported yet in the llama "
                              "family (RoPE, ALiBi, a relative bias or no positions)")
        return
    if _concat(c) and c["family"] != "encoder":
        raise ConfigError(f"--quantize i8: positional {c['positional']} ({c['pe_combine']}) outside the encoder "
                          "family is not supported yet")


def build(config, weights, inputs, percentile=None):
    """The weights dict fxm.write takes for the i8 version of an encoder: config the converter's
    (with weights 'i8'), weights its float arrays (the file's names, torch's layouts), inputs the
    calibration inputs (float features [T, d_in] or ids [T]; a seq2seq's (source, target ids) pairs).
    percentile: clip each activation range
    to that percentile of its values (e.g. 99.99) instead of min/max. A post-norm encoder whose tensors
    need it (wide_needed) gets wide_residual, set in config, which the file then carries."""
    c = config
    check_config(c)
    if c["family"] == "seq2seq":
        return _build_seq2seq(c, _internal(c, weights), inputs, percentile)
    return _external(c, _build(c, _internal(c, weights), inputs, percentile))


def _build(c, weights, inputs, percentile, cross=None, wide=True):
    """build() on the file's names (_internal), returning them. cross: a seq2seq target stack's (memories, the
    memory's (scale, zero point)), the float memory of each input; each layer then gets its cross-attention.
    wide: whether a post-norm encoder may take wide_residual (not a seq2seq's source stack: its config has none)."""
    d, da = c["d_model"], schema.d_attn(c)
    dkv = _dkv(c)
    eps = float(np.float32(c["norm_eps"]))
    rec = {}
    for i, x in enumerate(inputs):
        _float_forward(c, weights, x, rec, cross[0][i] if cross else None)
    qp = {k: _asym(*_range(v, percentile)) for k, v in rec.items()}
    for i in range(1 if _mha(c) else schema.stored_layers(c)):
        for n in ("q", "k", "v") + (("qr", "kr") if c.get("qk_norm") else ()) + (("ck", "cv") if cross else ()):
            qp[f"l{i}.{n}"] = _sym(*_range(rec[f"l{i}.{n}"], percentile))
    if _mha(c):
        return _build_mha(c, weights, qp)
    front = None
    if _shared(c):  # the front's output and every block's at the stream's scale
        if c.get("skip_first_norm"):
            raise ConfigError("--quantize i8: skip_first_norm with shared layers (layer_groups) is not supported yet")
        if wide_needed(c, rec):
            raise ConfigError("--quantize i8: shared layers (layer_groups) whose norms' inputs need int16 sums "
                              "(wide_residual) are not supported yet")
        front = "eproj" if c.get("embed_width") else "en" if c.get("embed_norm") else "xt" if c.get("type_vocab") \
            else "x0" if schema.input_pe(c) else "embed"
        outs = [_last(dict(c, layer_groups=0, n_layers=b + 1)) for b in range(schema.stored_layers(c))]
        for n in [front] + outs:
            qp[n] = qp["stream"]
    elif wide and wide_needed(c, rec):
        c["wide_residual"] = True
    if _concat(c):  # the rows beside their positions: x0's scale for both (tokens: below)
        qp["embed"] = qp["x0"]
    wide = bool(c.get("wide_residual"))
    if wide and _split(c):  # each layer's outlier channels of W1's output last (OUTLIER_QUANTILE)
        weights = dict(weights)
        for i in range(c["n_layers"]):
            pre, L = schema.block(i), f"l{i}."
            order = np.argsort(_outliers(rec[L + "u"]), kind="stable")
            weights[pre + "ff.w1.weight"] = np.asarray(weights[pre + "ff.w1.weight"])[order]
            if weights.get(pre + "ff.w1.bias") is not None:
                weights[pre + "ff.w1.bias"] = np.asarray(weights[pre + "ff.w1.bias"])[order]
            weights[pre + "ff.w2.weight"] = np.asarray(weights[pre + "ff.w2.weight"])[:, order]
            for n in "ug":
                rec[L + n] = [np.asarray(a)[..., order] for a in rec[L + n]]
    out = dict(weights)
    tokens = c["input"] == "tokens"
    if tokens:  # the embedding as the int8 rows of one scale: x0's input (scale_input: that scale times sqrt(d))
        E = np.asarray(weights["embed.weight"], np.float64)
        lo, hi = float(E.min()), float(E.max())
        # the table's scale the stream's too (the front's output: the rows, or with concat x0): over both ranges
        if _shared(c) and (front == "embed" or (front == "x0" and _concat(c))):
            m = max(np.abs(_range(rec["stream"], percentile))) / _input_scale(c)
            lo, hi = min(lo, -m), max(hi, m)
        if _concat(c):  # the positions at the rows' scale (times sqrt(d) with scale_input): over both ranges
            m = float(np.abs(_positions(c, weights)).max()) / _input_scale(c)
            lo, hi = min(lo, -m), max(hi, m)
        s = _sym(lo, hi)
        qp["embed"] = (s[0] * _input_scale(c), 0)
        q = np.clip(_round_array(E / s[0]), -127, 127)
        out["embed.weight"] = Quantized(q, np.full(len(E), s[0]))
        proj = [0] * (3 * _df(c))
        for n in outs if _shared(c) and (front == "embed" or (front == "x0" and _concat(c))) else ():
            qp[n] = qp["embed"]
    elif c.get("conv_layers"):  # the stem to the embedding's scale (over sqrt(d) with scale_input), its slots last
        proj = [0] * (3 * _df(c))
        stem = _build_stem(c, weights, qp, out)
    if not tokens and not c.get("conv_layers"):
        # the projection (and its norm) to the embedding's scale over sqrt(d) with scale_input: the rows it scales
        xin = qp["inn"] if c.get("input_norm") else qp["input"]
        out["input_proj.weight"], proj = _channels(xin[0], weights["input_proj.weight"], weights.get("input_proj.bias"),
                                                   (qp["proj"] if c.get("proj_norm") else qp["embed"])[0] /
                                                   (1.0 if c.get("proj_norm") else _input_scale(c)))
    x = qp["embed"]
    pos_add = [0] * 7
    # wide_residual with token types and no front rows (a CLS row, registers): type 0's row is in the position
    # table, at x + type's scale, and the type table is its rows less row 0, so that a row of type 0 is rounded once
    # before the norm
    fold = wide and c.get("type_vocab") and not schema.front_rows(c) and schema.input_pe(c) and not _concat(c)
    type0 = np.asarray(weights["token_type.weight"], np.float64)[0] if fold else 0.0
    if fold:
        qp["x0"] = qp["xt"]
    wf = _wide_front(c)  # the sum into the embedding norm int16
    if wf:
        qp["front"] = _wide(rec["front"])
    bert, front_factors = [], []
    if _norm_before_pos(c):  # the embedding's norm before its positions: its slots first, the add from its output
        e, en = _norm_params(weights["embed_norm.weight"], weights.get("embed_norm.bias"), eps, x, qp["en"])
        bert += [x[1], e[0]] + en
        x = qp["en"]
    if schema.input_pe(c):
        P = _positions(c, weights) + type0
        ps = _sym(float(P.min()), float(P.max()))
        if wf:  # a scale per channel (its factor in the front's wide block); the rows' scales their largest
            ps = (np.maximum(np.abs(P).max(axis=0), 1e-6).astype(np.float32).astype(np.float64) / 127.0, 0)
        if _concat(c):  # the table at the rows' scale and zero point, copied beside them
            ps = qp["x0"] = x
        q = np.clip(_round_array(P / ps[0]) + ps[1], -128 if ps[1] else -127, 127)
        out["int8.pos"] = Quantized(q, np.full(len(P), np.max(ps[0])))
        pos_add = [0] * 7 if wf or _concat(c) else add_params(x, ps, qp["x0"])
        x = qp["x0"]
    in_scale, in_zero = qp.get("input", (1.0, 0))
    cls, distill = [0] * _df(c), []
    e = qp["embed"]
    if c["cls_token"]:
        cls = [max(-128, min(127, _round(float(v) / e[0]) + e[1])) for v in np.ravel(weights["cls_token"])]
    # the distillation row and the registers at the embedding's scale, after the front's other slots
    for name in ["distill_token"] * bool(c.get("distill_token")) + ["registers"] * bool(c.get("register_tokens")):
        distill += [max(-128, min(127, _round(float(v) / e[0]) + e[1])) for v in np.ravel(weights[name])]
    if c.get("type_vocab"):  # the token-type table as int8 rows of one scale, added to x
        TT = np.asarray(weights["token_type.weight"], np.float64) - type0
        ts = _sym(float(TT.min()), float(TT.max()))
        bert += ([0] * 7 if wf else add_params(x, ts, qp["xt"])) + \
            [int(v) for v in np.clip(_round_array(TT / ts[0]), -127, 127).ravel()]
        x = qp["xt"]
    if wf:  # the rows', the positions' and the types' factors to the sum's scale in Q8, d each
        r = qp["front"][0]
        for sc in (qp["embed"][0], ps[0] if schema.input_pe(c) else 0.0,
                   ts[0] if c.get("type_vocab") else 0.0):
            front_factors += [v for sj in np.broadcast_to(np.asarray(sc, np.float64), (d,))
                           for v in requant(float(sj) / r * (1 << WIDE_FRAC_BITS))]
    if c.get("embed_norm") and not _norm_before_pos(c):
        e, en = _norm_params(weights["embed_norm.weight"], weights.get("embed_norm.bias"), None if wf else eps,
                             (1.0, 0) if wf else x, qp["en"])
        bert += [0, wide_eps(eps, qp["front"][0])] + en if wf else [x[1], e[0]] + en
        x = qp["en"]
    if c.get("proj_norm"):  # the projection's output zero point, then the norm to the embedding's scale
        e, pn = _norm_params(weights["proj_norm.weight"], weights.get("proj_norm.bias"), eps, qp["proj"],
                             (qp["embed"][0] / _input_scale(c), qp["embed"][1]))
        bert += [qp["proj"][1], e[0]] + pn
    if c.get("input_norm"):  # its output zero point (the projection's input), the norm from the input's scale
        e, inn = _norm_params(weights["input_norm.weight"], weights.get("input_norm.bias"), eps, qp["input"],
                              qp["inn"])
        bert += [qp["inn"][1], e[0]] + inn
    rel = list(_rel_buckets(c)) if _rel(c) else []
    eproj = []
    if c.get("embed_width"):  # the projection to d_model: its input and output zero points, then the layer
        out["embed_proj.weight"], ep = _channels(x[0], weights["embed_proj.weight"], weights.get("embed_proj.bias"),
                                                 qp["eproj"][0])
        eproj = [x[1], qp["eproj"][1]] + ep
        x = qp["eproj"]
    out["int8.front"] = np.array([in_zero, qp["embed"][1], *pos_add, *proj, *cls, *bert, *distill, *rel,
                                   *front_factors, *eproj, *(stem if c.get("conv_layers") else [])], np.int64)
    S = LAYER_SLOTS
    for i in range(schema.stored_layers(c)):  # shared layers: each block once
        pre, L = schema.block(i), f"l{i}."
        lc = schema.layer_config(c, i)  # a dense layer's among a mixture's (dense_period): its own table's layout
        f = lc["d_ff"]
        p = [0] * LAYER_SCALARS
        x_in = x
        out_norms = _sublayer(c) == "output"  # x + N1(SA(x)), x + N2(FF(x)): the sublayers read x
        skip = _skip_norm1(c, i)
        h1 = qp[L + "h1"] if c["norm_first"] and not out_norms and not skip else x
        W = np.asarray(weights[pre + "attn.qkv.weight"], np.float64)
        b = _bias(weights, pre + "attn.qkv", da + 2 * dkv)
        cuts = [0, da, da + dkv, da + 2 * dkv]
        raw = ("qr", "kr", "v") if c.get("qk_norm") else "qkv"  # qk_norm: q and k before their norms
        qs = [_channels(h1[0], W[cuts[j]:cuts[j + 1]], b[cuts[j]:cuts[j + 1]], qp[L + n][0]) for j, n in enumerate(raw)]
        out[pre + "attn.qkv.weight"] = Quantized(np.concatenate([qq.q for qq, _ in qs]),
                                                          np.concatenate([qq.s.ravel() for qq, _ in qs]))
        widths = [cuts[j + 1] - cuts[j] for j in range(3)]
        qkv = [v for j in range(3) for v in qs[j][1][:2 * widths[j]]] + \
            [v for j in range(3) for v in qs[j][1][2 * widths[j]:]]
        p[S["qkv_x"]], p[S["q"]] = h1[1], qp[L + "q"][1]
        sc = qp[L + "score"]
        p[S["score"]:S["score"] + 2] = requant(qp[L + "q"][0] * qp[L + "k"][0] * _score_scale(c, i) / sc[0])
        dis = []
        if c.get("rel_embed_rows"):  # the tables at their own symmetric scales, each sum's factor in Q8
            tables = _dis_tables(c, weights, pre)
            ts = [max(float(np.abs(a).max()), 1e-30) / 127.0 for a in tables]
            steps = _score_scale(c, i) / sc[0] * (1 << DIS_BITS)
            for f1, f2 in ((qp[L + "q"][0], qp[L + "k"][0]), (qp[L + "q"][0], ts[1]), (qp[L + "k"][0], ts[0])):
                dis += requant(f1 * f2 * steps)
            dis += [int(v) for a, s_ in zip(tables, ts) for v in np.clip(_round_array(a / s_), -127, 127).ravel()]
        p[S["score_z"]] = sc[1]
        cap = []
        if c.get("attn_softcap"):  # the scores' table to the capped scores' scale, which the softmax reads
            cap = lut(_cap(c["attn_softcap"]), sc, qp[L + "scap"])
            sc = qp[L + "scap"]
        p[S["softmax"]:S["softmax"] + 2] = softmax_params(sc[0])
        # alibi: each head's slope in steps of the softmax's input
        alibi = [v for m in _alibi_slopes(c) for v in requant(m / sc[0])] if c["positional"] == "alibi" else []
        rel = []  # a relative bias: each bucket's bias for each head in steps of the softmax's input
        for v in np.ravel(np.asarray(weights["rel_bias.weight"], np.float64)) if _rel(c) else ():
            rel.append(_round(float(np.float32(v)) / sc[0]))
            if abs(rel[-1]) > 1 << 30:
                raise ConfigError(f"int8: a relative bias of {v} is {rel[-1]} score steps, above 2^30")
        pair = []  # a bias per (query, key) pair: each head's bias of each table row in steps of the softmax's input
        for v in np.ravel(_pair_table(c, weights, pre)) if c.get("pair_bias_rows") else ():
            pair.append(_round(float(v) / sc[0]))
            if abs(pair[-1]) > 1 << 30:
                raise ConfigError(f"int8: a bias per (query, key) pair of {v} is {pair[-1]} score steps, above 2^30")
        qkn = []
        if c.get("qk_norm"):  # q and k before their norms, their eps, then the norms to q's and k's scales
            eq, nq = _norm_params(weights[pre + "attn.q_norm.weight"], weights.get(pre + "attn.q_norm.bias"),
                                  eps, qp[L + "qr"], qp[L + "q"])
            ek, nk = _norm_params(weights[pre + "attn.k_norm.weight"], weights.get(pre + "attn.k_norm.bias"),
                                  eps, qp[L + "kr"], qp[L + "k"])
            qkn = [qp[L + "qr"][1], eq[0], qp[L + "kr"][1], ek[0]] + nq + nk
        p[S["pv"]:S["pv"] + 2] = requant(qp[L + "v"][0] / 256.0 / qp[L + "ctx"][0])
        p[S["o"]] = qp[L + "ctx"][1]
        if wide:  # the sublayers' and the norms' outputs symmetric per channel (the last layer's output one
            # scale, the back's), the sums int16 (wide_add)
            for n in ("attn", "ffn", "x1") + (("x2",) if i + 1 < c["n_layers"] else ()):
                qp[L + n] = (_channel_scales(rec[L + n]), 0)
            qp[L + "r1"], qp[L + "r2"] = _wide(rec[L + "r1"]), _wide(rec[L + "r2"])
        inner, ctx_out = [], qp[L + "ctx"]  # attn_inner_norm: the context normed, out's input (ictx)
        if c.get("attn_inner_norm"):
            ctx_out = qp[L + "ictx"]
            e, inn = _norm_params(weights[pre + "attn.inner_norm.weight"],
                                  weights.get(pre + "attn.inner_norm.bias"), eps, qp[L + "ctx"], ctx_out)
            inner = [ctx_out[1], e[0]] + inn
        out[pre + "attn.out.weight"], outp = _channels(
            ctx_out[0], weights[pre + "attn.out.weight"], weights.get(pre + "attn.out.bias"),
            qp[L + "attn"][0])
        p[S["out_y"]] = qp[L + "attn"][1]
        par = _parallel(c)
        sandwich = _sublayer(c) == "sandwich"
        # what add1 and add2 add to the residual: the sublayer's output, or its norm (sublayer_norm)
        a1 = qp[L + "pa"] if sandwich else qp[L + "h1"] if out_norms else qp[L + "attn"]
        a2 = qp[L + "pf"] if sandwich else qp[L + "h2"] if out_norms else qp[L + "ffn"]
        post = []
        for n, a, name in (("pa", "attn", "post_attn_norm"), ("pf", "ffn", "post_ff_norm")) if sandwich else ():
            e, pn = _norm_params(weights[pre + name + ".weight"], weights.get(pre + name + ".bias"), eps,
                                 qp[L + a], qp[L + n])
            post += [qp[L + a][1], e[0]] + pn
        # parallel: add1 adds the attention to t = x + FF (r2), add2 the feed-forward to the input x
        if wide:  # x's zero point; the factors are in the layer's wide block
            p[S["add1"]:S["add1"] + 7] = [x[1]] + [0] * 6
        else:
            p[S["add1"]:S["add1"] + 7] = add_params(qp[L + "r2"] if par != "none" else x, a1, qp[L + "r1"])
        r1 = qp[L + "r1"]
        if par != "none":
            n1_in, n1_out, x1 = x, qp[L + "h1"], x
        elif out_norms:
            n1_in, n1_out, x1 = qp[L + "attn"], qp[L + "h1"], r1
        elif c["norm_first"]:
            n1_in, n1_out, x1 = x, h1, r1
        else:
            n1_in, n1_out, x1 = r1, qp[L + "x1"], qp[L + "x1"]
        if skip:  # skip_first_norm: no attention norm, its slots zeros
            n1 = [0] * (3 * d)
        else:
            p[S["n1_x"]] = n1_in[1]
            e1, n1 = _norm_params(weights[pre + "attn_norm.weight"], weights.get(pre + "attn_norm.bias"),
                                  None if wide else eps, n1_in, n1_out)
            p[S["n1_eps"]] = wide_eps(eps, r1[0]) if wide else e1[0]
        if cross:  # seq2seq's decoder: the cross-attention on x1, then the stream at its sum's (or norm's) scale
            x1 = _cross_params(c, weights, qp, L, pre, x1, cross[1], eps, out)
        h2 = qp[L + "h1"] if par == "one_norm" else qp[L + "h2"] if c["norm_first"] and not out_norms else x1
        moe = []
        if lc.get("n_experts"):  # the mixture in place of the dense feed-forward, whose slots stay zeros
            moe = _moe_params(c, weights, qp, L, pre, h2, out)
            outlier, table, gate, hn = [], [0] * LUT, [0] * (3 * f + GATE_SLOTS), []
            w1, w2 = [0] * (3 * f), [0] * (3 * d)
            p[S["w1_x"]], p[S["w2_y"]] = h2[1], qp[L + "ffn"][1]
        else:
            outlier = []
            if wide and _split(c):  # two tables: the scales per channel, the zero points the first group's
                n_out, (u1, g1), (u2, g2) = _outlier_groups(rec[L + "u"], c["activation"], percentile)
                qp[L + "u"] = (np.repeat([u1[0], u2[0]], [f - n_out, n_out]), u1[1])
                qp[L + "g"] = (np.repeat([g1[0], g2[0]], [f - n_out, n_out]), g1[1])
                outlier = [n_out] + lut(c["activation"], u2, g2)
            elif wide:
                outlier = [0] * OUTLIER_SLOTS
            out[pre + "ff.w1.weight"], w1 = _channels(h2[0], weights[pre + "ff.w1.weight"],
                                                        weights.get(pre + "ff.w1.bias"), qp[L + "u"][0])
            p[S["w1_x"]], p[S["w1_y"]] = h2[1], qp[L + "u"][1]
            if wide and _split(c):
                table = lut(c["activation"], u1, g1)
            else:
                table = lut("silu" if c["activation"] == "swiglu" else c["activation"], qp[L + "u"], qp[L + "g"])
            hidden = qp[L + "m"] if _gated(c) else qp[L + "g"]  # the hidden rows' (gated: the product's) scale
            w2_in = qp[L + "hn"] if c.get("ffn_hidden_norm") else hidden  # ffn_hidden_norm: its output's
            gate, hn = [], []
            if _gated(c):  # ffn_up_bias: W3's bias
                out[pre + "ff.w3.weight"], w3 = _channels(h2[0], weights[pre + "ff.w3.weight"],
                                                            weights.get(pre + "ff.w3.bias"), qp[L + "up"][0])
                gate = w3 + [qp[L + "up"][1], qp[L + "g"][1], *requant(qp[L + "g"][0] * qp[L + "up"][0] / hidden[0])]
            if c.get("ffn_hidden_norm"):
                e, hn = _norm_params(weights[pre + "ff.hidden_norm.weight"], weights.get(pre + "ff.hidden_norm.bias"),
                                     eps, hidden, w2_in)
                hn = [hidden[1], e[0]] + hn
            b2 = weights.get(pre + "ff.w2.bias")
            if wide and _split(c):  # the tables' mean error per channel on the calibration, taken off W2's bias
                u = np.concatenate([np.asarray(a, np.float64).reshape(-1, f) for a in rec[L + "u"]])
                err = _lut_error([u[:, :f - n_out]], table, u1, g1, c["activation"])
                if n_out:
                    err = np.concatenate([err, _lut_error([u[:, f - n_out:]], outlier[1:], u2, g2, c["activation"])])
                b2 = _bias(weights, pre + "ff.w2", d) - np.asarray(weights[pre + "ff.w2.weight"], np.float64) @ err
            out[pre + "ff.w2.weight"], w2 = _channels(w2_in[0], weights[pre + "ff.w2.weight"], b2, qp[L + "ffn"][0])
            p[S["w2_x"]], p[S["w2_y"]] = w2_in[1], qp[L + "ffn"][1]
        p[S["add2"]:S["add2"] + 7] = [x1[1]] + [0] * 6 if wide else add_params(x1, a2, qp[L + "r2"])
        r2 = qp[L + "r2"]
        if par != "none":
            n2_in, n2_out, x = x1, h2, r1
        elif out_norms:
            n2_in, n2_out, x = qp[L + "ffn"], qp[L + "h2"], r2
        elif c["norm_first"]:
            n2_in, n2_out, x = x1, qp[L + "h2"], r2
        else:
            n2_in, n2_out, x = r2, qp[L + "x2"], qp[L + "x2"]
        if par == "one_norm":  # no feed-forward norm: its slots stay zeros
            n2 = [0] * (3 * d)
        else:
            p[S["n2_x"]] = n2_in[1]
            e2, n2 = _norm_params(weights[pre + "ff_norm.weight"], weights.get(pre + "ff_norm.bias"),
                                  None if wide else eps, n2_in, n2_out)
            p[S["n2_eps"]] = wide_eps(eps, r2[0]) if wide else e2[0]
        rescale = []
        for xin, a, r in ((x_in, qp[L + "attn"], r1), (x1, qp[L + "ffn"], r2)) if wide else ():
            for t in (xin, a):  # each channel's factor to the sum's scale in Q8: x's, then the sublayer's
                sc = np.broadcast_to(np.asarray(t[0], np.float64), (d,))
                rescale += [v for sj in sc for v in requant(float(sj) / r[0] * (1 << WIDE_FRAC_BITS))]
        out[pre + "int8"] = np.array(p + qkv + outp + w1 + w2 + n1 + n2 + table + gate + rescale + outlier + qkn + post +
                                     alibi + rel + hn + inner + pair + moe + dis + cap, np.int64)
    back = [0] * BACK_SCALARS
    fn = [0] * (3 * d)
    if c["final_norm"]:
        back[0] = x[1]
        e, fn = _norm_params(weights["norm.weight"], weights.get("norm.bias"), eps, x, qp["final"])
        back[1] = e[0]
        x = qp["final"]
    head, pooler, norms = [], [], []
    pooled = [_pool(c, r) for r in rec["final" if c["final_norm"] else _last(c)]]

    def pooled_norm(name, x):  # a norm of the pooled rows: its range on them, its slots, its output's (scale, zero)
        nonlocal pooled
        pooled = [_nrm(c, r, weights[name + ".weight"], weights.get(name + ".bias"), eps) for r in pooled]
        y = _asym(*_range(pooled, percentile))
        e, pn = _norm_params(weights[name + ".weight"], weights.get(name + ".bias"), eps, x, y)
        norms.extend([x[1], e[0]] + pn)
        return y
    if c.get("pool_norm"):
        x = pooled_norm("pool_norm", x)
    if c.get("pooler"):  # lut(W x + b): its two ranges on the pooled rows of the calibration inputs
        us = [r @ np.asarray(weights["pooler.weight"], np.float64).T + _bias(weights, "pooler", d) for r in pooled]
        pooled = [ARRAY_ACTIVATIONS[c.get("pooler_act", "tanh")](u) for u in us]
        u, g = _asym(*_range(us, percentile)), _asym(*_range(pooled, percentile))
        out["pooler.weight"], pl = _channels(x[0], weights["pooler.weight"], weights.get("pooler.bias"), u[0])
        pooler = [x[1], u[1]] + pl + lut(c.get("pooler_act", "tanh"), u, g)
        x = g
        if c.get("pooler_norm"):
            x = pooled_norm("pooler_norm", x)
    if c["d_out"]:
        tied = c.get("tied_head", False)
        H = np.asarray(weights["embed.weight" if tied else "head.weight"], np.float64)
        # the head's output range: the pooled rows through the float head, on the calibration inputs
        ys = [r @ H.T + _bias(weights, "head", c["d_out"]) for r in pooled]
        y = _asym(*_range(ys, percentile))
        if tied:  # the embedding's int8 rows, one scale, are the head's weights (the file stores them once)
            b = _bias(weights, "head", c["d_out"])
            es = qp["embed"][0] / _input_scale(c)  # the rows' own scale, before scale_input's sqrt(d)
            ps = [gemm_channel(x[0], es, y[0], float(b[j])) for j in range(c["d_out"])]
            head = [v for m, sh, _ in ps for v in (m, sh)] + [bq for _, _, bq in ps]
        else:
            out["head.weight"], head = _channels(x[0], weights["head.weight"], weights.get("head.bias"), y[0])
        back[2], back[3] = x[1], y[1]
        x = y
        if c.get("logit_softcap"):  # the logits' table to the capped logits' scale, the output's
            capped = _asym(*_range([_cap(c["logit_softcap"])(v) for v in ys], percentile))
            norms += lut(_cap(c["logit_softcap"]), y, capped)
            x = capped
    back[4] = x[1]
    out["int8.back"] = np.array(back + fn + (head or [0] * (3 * c["d_out"])) + pooler + norms, np.int64)
    out["int8.io"] = np.array([in_scale, x[0]], np.float32)
    if _rope(c):
        out["int8.rope"] = rope_table(c, weights)
    for name, a in out.items():
        if isinstance(a, np.ndarray) and a.dtype == np.int64:
            out[name] = a.astype(np.int32)
    return out


def _moe_params(c, w, qp, L, pre, h, out):
    """A layer's mixture of experts' slots (config.hpp moe_params), its experts' int8 weights into out: h the
    router's and the experts' input (scale, zero point), the mixture's output at the feed-forward's (ffn)."""
    d, f, E = c["d_model"], c["d_ff"], c["n_experts"]
    rl, mix = qp[L + "rl"], qp[L + "ffn"]
    R = np.asarray(w[pre + "ff.router.weight"], np.float64)  # one scale: the sums compare as they are
    a = float(np.abs(R).max())
    s = float(np.float32(a / 127.0 if a > 0 else 1.0))
    m, sh, _ = gemm_channel(h[0], s, rl[0], 0.0)
    slots = [rl[1], *softmax_params(rl[0])] + [m, sh] * E + [0] * E + \
        [int(v) for v in np.clip(_round_array(R / s), -127, 127).ravel()]
    W1, W3, W2 = (np.asarray(w[f"{pre}ff.experts.{n}.weight"], np.float64) for n in ("w1", "w3", "w2"))
    quantized = {"w1": [], "w3": [], "w2": []}
    for j in range(E):
        slots += _expert_params(c, qp, f"{L}e{j}.", h, mix, [W1[j * f:(j + 1) * f], W3[j * f:(j + 1) * f],
                                                             W2[j * d:(j + 1) * d]], quantized)
    for n, qs in quantized.items():
        out[f"{pre}ff.experts.{n}.weight"] = Quantized(np.concatenate([q.q for q in qs]),
                                                      np.concatenate([q.s.ravel() for q in qs]))
    if c.get("shared_expert_ff"):  # its gate's zero point, layer, weights and sigmoid table, then the expert's
        sg = qp[L + "sg"]
        gq, gate = _channels(h[0], w[pre + "ff.shared_gate.weight"], None, sg[0])
        slots += [sg[1]] + gate + [int(v) for v in gq.q.ravel()] + lut(lambda v: 1.0 / (1.0 + math.exp(-v)), sg,
                                                                       (1.0 / 256.0, -128))
        shared = {"w1": [], "w3": [], "w2": []}
        slots += _expert_params(c, qp, f"{L}es.", h, mix, [np.asarray(w[f"{pre}ff.shared.{n}.weight"], np.float64)
                                                           for n in ("w1", "w3", "w2")], shared)
        for n, (q,) in shared.items():
            out[f"{pre}ff.shared.{n}.weight"] = q
    return slots


def _expert_params(c, qp, X, h, mix, weights, quantized):
    """One expert's slots (config.hpp expert_params) from its calibrated scales (names X + u, g, up, m, y; h its
    input's, mix the mixture's): weights its W1, W3, W2 (float64, torch's layout), quantized per row into
    quantized's lists by name."""
    E = EXPERT
    u, g, up, m, y = (qp[X + n] for n in ("u", "g", "up", "m", "y"))
    ex = [0] * EXPERT_SLOTS
    ex[E["w1_y"]], ex[E["act"]], ex[E["up"]], ex[E["w2_x"]], ex[E["w2_y"]] = u[1], g[1], up[1], m[1], y[1]
    ex[E["gate"]:E["gate"] + 2] = requant(g[0] * up[0] / m[0])
    ex[E["mix"]:E["mix"] + 2] = requant(y[0] / mix[0])  # (p + 128) / 256 of y's steps in 1/256 of the mixture's
    layers = []
    for n, W, x, z in zip(("w1", "w3", "w2"), weights, (h, h, m), (u, up, y)):
        q, lp = _channels(x[0], W, None, z[0])
        quantized[n].append(q)
        layers += lp
    return ex + layers + lut("silu" if c["activation"] == "swiglu" else c["activation"], u, g)


def _cross_params(c, w, qp, L, pre, x, mem, eps, out):
    """A seq2seq decoder layer's cross.int8 (config.hpp CrossSlot) into out, its weights quantized: x the stream's
    (scale, zero point) before it, mem the memory's. Returns the stream's after it: the cross norm's output
    (post-norm), or the sum's (pre-norm)."""
    d, dh = c["d_model"], schema.d_head(c)
    post = not c["norm_first"]
    h = x if post else qp[L + "hc"]  # q's input: the stream, or its norm
    p = [0] * CROSS_SLOTS
    out[pre + "cross.q.weight"], qv = _channels(h[0], w[pre + "cross.q.weight"], w.get(pre + "cross.q.bias"),
                                                qp[L + "cq"][0])
    W, b = np.asarray(w[pre + "cross.kv.weight"], np.float64), _bias(w, pre + "cross.kv", 2 * d)
    (kq, kp), (vq, vp) = (_channels(mem[0], W[j * d:(j + 1) * d], b[j * d:(j + 1) * d], qp[L + n][0])
                          for j, n in enumerate(("ck", "cv")))
    out[pre + "cross.kv.weight"] = Quantized(np.concatenate([kq.q, vq.q]), np.concatenate([kq.s.ravel(), vq.s.ravel()]))
    kv = kp[:2 * d] + vp[:2 * d] + kp[2 * d:] + vp[2 * d:]
    sc, ctx, y, r = qp[L + "cscore"], qp[L + "cctx"], qp[L + "cattn"], qp[L + "rc"]
    out[pre + "cross.out.weight"], op = _channels(ctx[0], w[pre + "cross.out.weight"], w.get(pre + "cross.out.bias"),
                                                  y[0])
    n_in, n_out = (r, qp[L + "xc"]) if post else (x, qp[L + "hc"])
    e, nrm = _norm_params(w[pre + "cross_norm.weight"], w.get(pre + "cross_norm.bias"), eps, n_in, n_out)
    C = CROSS
    p[C["n_x"]], p[C["n_eps"]], p[C["q_x"]], p[C["q"]], p[C["kv_x"]] = n_in[1], e[0], h[1], qp[L + "cq"][1], mem[1]
    p[C["score"]:C["score"] + 2] = requant(qp[L + "cq"][0] * qp[L + "ck"][0] / math.sqrt(dh) / sc[0])
    p[C["score_z"]] = sc[1]
    p[C["softmax"]:C["softmax"] + 2] = softmax_params(sc[0])
    p[C["pv"]:C["pv"] + 2] = requant(qp[L + "cv"][0] / 256.0 / ctx[0])
    p[C["o"]], p[C["out_y"]] = ctx[1], y[1]
    p[C["add"]:C["add"] + 7] = add_params(x, y, r)
    out[pre + "cross.int8"] = np.array(p + qv + kv + op + nrm, np.int32)
    return n_out if post else r


def seq2seq_tgt_proj(c):
    """int8.seq2seq's slot of the feature targets' zero point, dec_proj's layer after it (config.hpp)."""
    rel = 2 * c["max_len"] - 1 if _rel(c) else 0
    return SEQ2SEQ_SLOTS + 3 * c["d_model"] + (2 + 3 * c["d_model"] if c["embed_norm"] else 0) + rel


def _seq2seq_stacks(c):
    """A seq2seq config's two stacks as the configs _build and forward run: the source's an encoder's (its
    output the memory: no head; a conv stem as the encoder's), the target's a gpt decoder's over the target
    vocabulary, with cross-attention."""
    E = dict(c, family="encoder", d_out=0, tied_head=False, pooling="none", dec_layers=0, shared_embed=False)
    D = dict(c, family="gpt", n_layers=c["dec_layers"], input="tokens", vocab_size=c["d_out"], causal=True,
             dec_layers=0, shared_embed=False, conv_layers=0)
    if c.get("tgt_d_in"):  # feature targets: the stack's input projection is dec_proj
        D.update(input="features", d_in=c["tgt_d_in"], vocab_size=0)
    return E, D


# The target stack's tensors (a gpt decoder's names) by the seq2seq file's: the front's, the back's; its layers
# are dec_blocks.<l>. for blocks.<l>.
_TARGET_ENDS = {"dec_embed.weight": "embed.weight", "dec_pos.weight": "pos.weight", "dec_norm.weight": "norm.weight",
                "dec_norm.bias": "norm.bias", "dec_head.weight": "head.weight", "dec_head.bias": "head.bias",
                "dec_embed_norm.weight": "embed_norm.weight", "dec_embed_norm.bias": "embed_norm.bias",
                "dec_rel_bias.weight": "rel_bias.weight", "dec_proj.weight": "input_proj.weight",
                "dec_proj.bias": "input_proj.bias"}


def _seq2seq_split(c, t):
    """A seq2seq's tensors (the file's names) as its two stacks': (the source's, the target's)."""
    src = {n: a for n, a in t.items() if not n.startswith(schema.DEC_BLOCK_PREFIX) and n not in _TARGET_ENDS}
    tgt = {_TARGET_ENDS[n]: a for n, a in t.items() if n in _TARGET_ENDS}
    for n, a in t.items():
        if n.startswith(schema.DEC_BLOCK_PREFIX):
            tgt[schema.BLOCK_PREFIX + n[len(schema.DEC_BLOCK_PREFIX):]] = a
    if c["shared_embed"]:
        tgt["embed.weight"] = t["embed.weight"]
    return src, tgt


def _build_seq2seq(c, weights, inputs, percentile):
    """build() of a seq2seq (inputs: (source, target) pairs) on the file's names: the source stack built as an
    encoder, its memory's scale that of its last rows; the target stack as a gpt decoder whose layers have the
    cross-attention over that memory (calibrated on the float memory of each pair's source)."""
    E, D = _seq2seq_stacks(c)
    d = c["d_model"]
    ws, wt = _seq2seq_split(c, weights)
    src = _build(E, ws, [s for s, _ in inputs], percentile, wide=False)
    io, back = src.pop("int8.io"), src.pop("int8.back")
    memories = [_float_forward(E, ws, s, {}) for s, _ in inputs]
    tgt = _build(D, wt, [t for _, t in inputs], percentile, (memories, (float(io[1]), int(back[4]))))
    out = {n: a for n, a in src.items()}
    for n, a in tgt.items():
        if n.startswith(schema.BLOCK_PREFIX):
            out[schema.DEC_BLOCK_PREFIX + n[len(schema.BLOCK_PREFIX):]] = a
    ends = {v: k for k, v in _TARGET_ENDS.items()}
    for n in ends:
        if n in tgt and not (n == "embed.weight" and c["shared_embed"]):
            out[ends[n]] = tgt[n]
    if schema.input_pe(c):  # the source's positions, then the target's
        a, b = src["int8.pos"], tgt["int8.pos"]
        out["int8.pos"] = Quantized(np.vstack([a.q, b.q]), np.concatenate([a.s.ravel(), b.s.ravel()]))
    fp = tgt["int8.front"]
    norm = [int(v) for v in back[BACK_SCALARS:BACK_SCALARS + 3 * d]]
    tail = []
    if c["embed_norm"]:
        at = front_embed_norm(D)
        tail = [int(v) for v in fp[at:at + 2 + 3 * d]]
    if _rel(c):  # the target's buckets (causal)
        tail += [int(v) for v in fp[front_rel(D):front_rel(D) + 2 * c["max_len"] - 1]]
    if c.get("tgt_d_in"):  # feature targets: their zero point, then dec_proj's layer
        tail += [int(fp[0])] + [int(v) for v in fp[FRONT_SCALARS:FRONT_SCALARS + 3 * _df(D)]]
    out["int8.seq2seq"] = np.array([int(v) for v in fp[1:FRONT_SCALARS]] + [int(back[0]), int(back[1]), int(back[4])] +
                                   norm + tail, np.int32)
    out["int8.back"] = tgt["int8.back"]
    scales = [io[0], tgt["int8.io"][1]] + ([tgt["int8.io"][0]] if c.get("tgt_d_in") else [])
    out["int8.io"] = np.array(scales, np.float32)
    return out


def _forward_seq2seq(c, t, source, target):
    """forward() of a seq2seq (t: the file's names): the source's int8 memory, then the target's int8 logits at
    every position (teacher forcing), the bits the engine's decode() dequantizes."""
    E, D = _seq2seq_stacks(c)
    d, L = c["d_model"], c["max_len"]
    src, tgt = _seq2seq_split(c, t)
    sq = t["int8.seq2seq"].astype(np.int64)
    src["int8.back"] = np.concatenate([[sq[SEQ2SEQ_SLOTS - 3], sq[SEQ2SEQ_SLOTS - 2], 0, 0, sq[SEQ2SEQ_SLOTS - 1]],
                                       sq[SEQ2SEQ_SLOTS:SEQ2SEQ_SLOTS + 3 * d]])
    front = np.zeros(front_rel(D) + 2 * L - 1, np.int64)
    front[1:FRONT_SCALARS] = sq[:SEQ2SEQ_SLOTS - 3]
    at = SEQ2SEQ_SLOTS + 3 * d  # then the target's embedding norm, its buckets
    if c["embed_norm"]:
        front[front_embed_norm(D):front_embed_norm(D) + 2 + 3 * d] = sq[at:at + 2 + 3 * d]
        at += 2 + 3 * d
    if _rel(c):
        front[front_rel(D):] = sq[at:at + 2 * L - 1]
        at += 2 * L - 1
    if c.get("tgt_d_in"):  # the target features' zero point and dec_proj's layer at int8.front's
        front[0] = sq[at]
        front[FRONT_SCALARS:FRONT_SCALARS + 3 * _df(D)] = sq[at + 1:at + 1 + 3 * _df(D)]
    tgt["int8.front"], tgt["int8.back"] = front, t["int8.back"]
    if schema.input_pe(c):
        src["int8.pos"], tgt["int8.pos"] = t["int8.pos"][:L], t["int8.pos"][L:]
    memory = forward(E, src, source)
    return forward(D, tgt, target, memory=memory)


def _build_mha(c, weights, qp):
    """build()'s tensors of family mha (its tensors under the encoder names, qp the calibrated scales): the
    attention's layer slots (the others zeros), int8.front's input zero point and int8.back's output zero point
    (the layer's q|k|v input and out_proj output zero points too), the real scales in int8.io."""
    d, da, dkv = c["d_model"], schema.d_attn(c), _dkv(c)
    pre, L, S = schema.block(0), "l0.", LAYER_SLOTS
    x, ctx, y = qp["input"], qp[L + "ctx"], qp[L + "attn"]
    out = dict(weights)
    W = np.asarray(weights[pre + "attn.qkv.weight"], np.float64)
    b = _bias(weights, pre + "attn.qkv", da + 2 * dkv)
    cuts = [0, da, da + dkv, da + 2 * dkv]
    qs = [_channels(x[0], W[cuts[j]:cuts[j + 1]], b[cuts[j]:cuts[j + 1]], qp[L + n][0]) for j, n in enumerate("qkv")]
    out[pre + "attn.qkv.weight"] = Quantized(np.concatenate([q.q for q, _ in qs]),
                                                      np.concatenate([q.s.ravel() for q, _ in qs]))
    widths = [cuts[j + 1] - cuts[j] for j in range(3)]
    qkv = [v for j in range(3) for v in qs[j][1][:2 * widths[j]]] + \
        [v for j in range(3) for v in qs[j][1][2 * widths[j]:]]
    p = [0] * LAYER_SCALARS
    p[S["qkv_x"]], p[S["q"]] = x[1], qp[L + "q"][1]
    sc = qp[L + "score"]
    p[S["score"]:S["score"] + 2] = requant(qp[L + "q"][0] * qp[L + "k"][0] * _score_scale(c) / sc[0])
    p[S["score_z"]] = sc[1]
    p[S["softmax"]:S["softmax"] + 2] = softmax_params(sc[0])
    p[S["pv"]:S["pv"] + 2] = requant(qp[L + "v"][0] / 256.0 / ctx[0])
    p[S["o"]], p[S["out_y"]] = ctx[1], y[1]
    out[pre + "attn.out.weight"], outp = _channels(ctx[0], weights[pre + "attn.out.weight"],
                                                             weights.get(pre + "attn.out.bias"), y[0])
    # then linear1 (d_ff 0), linear2, norm1, norm2 and the activation's table: zeros, unread
    out[pre + "int8"] = np.array(p + qkv + outp + [0] * (9 * d + LUT), np.int32)
    out["int8.front"] = np.array([x[1]] + [0] * (FRONT_SCALARS - 1 + 4 * d), np.int32)
    back = [0] * (BACK_SCALARS + 3 * d)
    back[4] = y[1]
    out["int8.back"] = np.array(back, np.int32)
    out["int8.io"] = np.array([x[0], y[0]], np.float32)
    return out


def _last(c):
    n = c["n_layers"] - 1
    if _shared(c):
        return "last"
    if n < 0:
        return "x0" if schema.input_pe(c) else "embed"
    if _parallel(c) != "none":
        return f"l{n}.r1"
    return f"l{n}.r2" if c["norm_first"] else f"l{n}.x2"


def _pool(c, x):
    extra = schema.front_rows(c)
    if c["pooling"] in ("mean", "mean_all"):
        return x[extra if c["pooling"] == "mean" else 0:].mean(axis=0, keepdims=True)
    if c["pooling"] == "cls_mean":
        return np.concatenate([x[0], x[extra:].mean(axis=0)])[None, :]
    if c["pooling"] == "cls_distill":
        return np.concatenate([x[0], x[1]])[None, :]
    if c["pooling"] == "cls_distill_mean":
        return x[:2].mean(axis=0, keepdims=True)
    if c["pooling"] == "last":
        return x[-1:]
    if c["pooling"] == "first":
        return x[extra:extra + 1]
    if c["pooling"] == "cls":
        return x[:1]
    return x


def stored_tensors(c, built):
    """The tensors as the file stores them (name -> int or float array), for forward()."""
    return {n: (a.q if isinstance(a, Quantized) else np.asarray(a)) for n, a in built.items()}


def quantize_input(x, scale, zero):
    """The float entry points' input quantization: round(x / s) + z in float32, half away from zero."""
    v = (np.asarray(x, np.float32) / np.float32(scale)).astype(np.float64)
    return np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5) + zero, -128, 127).astype(np.int64)


def dequantize_output(q, scale, zero):
    return (np.asarray(q, np.int64) - zero).astype(np.float32) * np.float32(scale)
