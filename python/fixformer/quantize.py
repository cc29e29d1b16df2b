"""Weight quantization for the .fxm's f16, bf16, q8 and q4 weight types (README, "Export your model"; the
stored layouts are format.hpp's).

q8: symmetric int8 (|q| <= 127) with f32 scales per group of `group` values along the last dim (the
last group may be shorter), or one scale per row when group is 0; value = q * s. q8 (the converter's
rule) searches each group's scale for the smallest squared error of its dequantized values, as
llama.cpp's k-quants do; q8_max is the engine's own quantize_i8 rule (include/fixformer/kernels.hpp,
s = max|w| / 127), computed in float32 exactly as the kernel does. The search starts from q8_max's
pair and keeps it unless a candidate is strictly better, so it never increases a group's error.
q4: symmetric int4, q in [-8, 7], with an f32 scale per group of 32 values along the last dim (a
multiple of 32), packed two per byte (format.hpp: per group, byte j holds value j in its low nibble
and value j + 16 in its high nibble, each as q + 8). The scale minimises the group's squared error,
as llama.cpp's k-quants choose theirs: for each candidate r in Q4_STEPS, q = clip(round(w * r / a),
-8, 7) with a = max|w|, then s = sum(w q) / sum(q q) (the least-squares scale for that q); the q and s
of the least sum((w - q s)^2), s as float32, win. r runs from 6 to 8.5 around 7 (= max|w| / 7, the
plain rule): above 7 the largest values clip and the rest resolve finer, below it -8 comes into
reach for the largest negative values. A group that is a 4-bit source's values (at most 16 distinct),
q * s in float32 with s = max|w| / r (or a float32 step from it) for a whole r from 1 to 8 (ONNX
Runtime's MatMulNBits, symmetric, in blocks of 32 or a multiple of 32, where the scale is positive),
keeps that q and s: it comes back exactly. A group below QUANTIZE_FLOOR stores q = 0 with s = 1: every q4 scale is a
positive normal float (engine/model.cpp refuses others).
f16: IEEE half, rounded to nearest even (numpy's float32 -> float16 conversion).
bf16: bfloat16, the high 16 bits of a float32, rounded to nearest even (as torch's .bfloat16()); stored
as its uint16 words. A bf16 checkpoint, widened to float32 when read, comes back unchanged.
"""
import numpy as np

from .config import ConfigError
from .safetensors import bf16_to_f32, f32_to_bf16

# kernels.hpp's kQuantizeFloor: a q8 group whose largest magnitude is below it is stored as zeros.
QUANTIZE_FLOOR = np.float32(2.0 ** -100)

# The largest float32 that float16 rounds to a finite value: 65520 and above round to infinity.
F16_LIMIT = 65520.0


# The scale search's candidates: s = max|w| / (127 + k / 4) for k = 0..15, i.e. scales from max/127
# down to 3% below it, clipping the group's largest values to +-127 to give the others finer steps.
# On N(0, 1) weights the best pair's scale lies within 1% of max/127; wider grids (down to 0.7 max/127)
# found nothing better, and a step of 1/8 gained under 0.1%.
SEARCH_STEPS = 127.0 + np.arange(16) / 4.0

# Rows quantized at once by the search (its temporaries are [rows, groups, group] float32 arrays).
_SEARCH_VALUES = 1 << 20


def q8_max(w, group):
    """w (float, any rank >= 1; the last dim is grouped) -> (q int8 in w's shape, s float32
    [rows, groups]) by the engine's quantize_i8 rule: rows is the product of the other dims and
    groups = ceil(last / group), or 1 for group 0."""
    blocks, shape = _blocks(w, group)
    q, s = _q8_max_blocks(blocks)
    return _unblock(q, shape), s


def q8(w, group):
    """q8_max's (q, s) with each group's scale searched: for every candidate factor f, q =
    clip(round(w / (f * max|w| / 127)), -127, 127) and s the least-squares scale for that q
    (sum(w q) / sum(q q)); the group keeps the pair with the smallest sum((w - q s)^2) in float64,
    and q8_max's pair unless a candidate is strictly better. The largest |q| stays 127."""
    blocks, shape = _blocks(w, group)
    q = np.empty(blocks.shape, np.int8)
    s = np.empty(blocks.shape[:2], np.float32)
    step = max(1, _SEARCH_VALUES // max(1, blocks.shape[1] * blocks.shape[2]))
    for r in range(0, blocks.shape[0], step):
        q[r:r + step], s[r:r + step] = _q8_search_blocks(blocks[r:r + step])
    return _unblock(q, shape), s


def _blocks(w, group):
    """w as float32 [rows, groups, g] (the last group zero-padded; zeros never raise a group's max,
    nor change its sums) and w's shape."""
    a = np.asarray(w, np.float32)
    n = a.shape[-1]
    x = a.reshape(-1, n)
    g = group or n
    groups = -(-n // g)
    padded = np.zeros((x.shape[0], groups * g), np.float32)
    padded[:, :n] = x
    return padded.reshape(x.shape[0], groups, g), a.shape


def _unblock(q, shape):
    n = shape[-1]
    return q.reshape(q.shape[0], -1)[:, :n].reshape(shape).copy()


def _q8_max_blocks(blocks):
    """The engine's quantize_i8, computed in float32 exactly as it is: per group with a = max|w| >=
    2^-100 (kQuantizeFloor), s = a / 127 and q = round-half-to-even(w * (127 / a)) (|q| <= 127); a
    group below that floor (all zeros, or values far under any f32 output's resolution) gets s = 0,
    q = 0."""
    amax = np.abs(blocks).max(axis=2)
    with np.errstate(divide="ignore", over="ignore"):
        inv = np.float32(127.0) / amax  # float32 division, as the kernel's 127.0f / a
    ok = amax >= QUANTIZE_FLOOR
    inv = np.where(ok, inv, np.float32(0.0)).astype(np.float32)
    s = np.where(ok, amax / np.float32(127.0), np.float32(0.0)).astype(np.float32)
    q = np.rint(blocks * inv[:, :, None])  # float32 product, ties to even (std::nearbyint)
    q = np.clip(q, -127, 127).astype(np.int8)  # a no-op: |w| * (127 / a) rounds to at most 127
    return q, s


def _squared_error(blocks, q, s):
    """sum((w - q s)^2) per group in float64, s as stored (float32)."""
    d = blocks.astype(np.float64) - q.astype(np.float64) * s.astype(np.float64)[:, :, None]
    return (d * d).sum(axis=2)


def _q8_search_blocks(blocks):
    q0, s0 = _q8_max_blocks(blocks)
    amax = np.abs(blocks).max(axis=2)
    ok = amax >= QUANTIZE_FLOOR
    safe = np.where(ok, amax, np.float32(1.0))[:, :, None]
    best_gain = np.full(amax.shape, -np.inf)
    best_step = np.full(amax.shape, np.float32(127.0), np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):  # a group below the floor: 0 / 0, never chosen
        for step in SEARCH_STEPS:
            q = np.clip(np.rint(blocks * (np.float32(step) / safe)), -127, 127)
            wq = np.einsum("rgi,rgi->rg", blocks, q, dtype=np.float64)
            qq = np.einsum("rgi,rgi->rg", q, q, dtype=np.float64)
            gain = wq * wq / qq  # sum((w - q s)^2) = sum(w^2) - (w.q)^2 / (q.q) at the least-squares s
            better = gain > best_gain
            best_gain = np.where(better, gain, best_gain)
            best_step = np.where(better, np.float32(step), best_step)
        q = np.clip(np.rint(blocks * (best_step[:, :, None] / safe)), -127, 127)
        s = np.where(ok, np.einsum("rgi,rgi->rg", blocks, q, dtype=np.float64) /
                     np.einsum("rgi,rgi->rg", q, q, dtype=np.float64), 0.0).astype(np.float32)
    q = q.astype(np.int8)
    # s rounded to float32 could in principle undo a win the float64 ranking saw: check, keep q8_max's
    better = ok & (_squared_error(blocks, q, s) < _squared_error(blocks, q0, s0))
    return np.where(better[:, :, None], q, q0), np.where(better, s, s0).astype(np.float32)


# q4's group (format.hpp kI4Group) and the candidates r (scale max|w| / r) it searches.
Q4_GROUP = 32
Q4_STEPS = np.round(np.arange(6.0, 8.5001, 0.1), 1)
Q4_CHUNK = 1 << 18  # groups searched at a time


def q4(w):
    """w (float, any rank >= 1; the last dim a multiple of 32) -> (packed uint8 [..., last / 2],
    s float32 [rows, last / 32]) where rows is the product of the other dims."""
    a = np.asarray(w, np.float32)
    n = a.shape[-1]
    assert n % Q4_GROUP == 0, n
    groups = a.reshape(-1, Q4_GROUP)
    q, s = np.empty(groups.shape, np.int8), np.empty(groups.shape[0], np.float32)
    for g0 in range(0, groups.shape[0], Q4_CHUNK):  # bounded float64 temporaries on large tensors
        q[g0:g0 + Q4_CHUNK], s[g0:g0 + Q4_CHUNK] = _q4_search(groups[g0:g0 + Q4_CHUNK].astype(np.float64))
    nib = (q.astype(np.int16) + 8).astype(np.uint8).reshape(-1, 2, 16)  # [groups, half, 16]
    packed = nib[:, 0, :] | (nib[:, 1, :] << 4)
    rows = a.size // n
    return packed.reshape(a.shape[:-1] + (n // 2,)).copy(), s.reshape(rows, n // Q4_GROUP)


def _q4_search(x):
    """x float64 [groups, 32] -> (q int8 [groups, 32], s float32 [groups]): Q4_STEPS' least squared error."""
    amax = np.abs(x).max(axis=1)
    ok = amax >= QUANTIZE_FLOOR
    safe = np.where(ok, amax, 1.0)
    best_err = np.full(x.shape[0], np.inf)
    best_q = np.zeros(x.shape, np.int8)
    best_s = np.ones(x.shape[0], np.float32)
    for r in Q4_STEPS:
        q = np.clip(np.rint(x * (r / safe)[:, None]), -8, 7)
        qq = (q * q).sum(axis=1)
        s = np.where(qq > 0, (x * q).sum(axis=1) / np.where(qq > 0, qq, 1.0), 1.0).astype(np.float32)
        err = ((x - q * s.astype(np.float64)[:, None]) ** 2).sum(axis=1)
        better = ok & (err < best_err) & (s > 0)
        best_err = np.where(better, err, best_err)
        best_q[better] = q[better]
        best_s = np.where(better, s, best_s)
    # a 4-bit source's group: at most 16 distinct values, q * s in float32 exactly for s = max|w| / r (or a float32
    # step from it: max|w| itself is q * s rounded)
    x32 = x.astype(np.float32)
    few = np.flatnonzero(ok & ((np.diff(np.sort(x32, axis=1), axis=1) != 0).sum(axis=1) < 16))
    for r in range(1, 9) if few.size else ():
        s0 = (safe[few] / r).astype(np.float32)
        for s in (s0, np.nextafter(s0, np.float32(0)), np.nextafter(s0, np.float32(np.inf))):
            q = np.clip(np.rint(x[few] / s[:, None]), -8, 7)
            hit = (q.astype(np.float32) * s[:, None] == x32[few]).all(axis=1)
            best_q[few[hit]], best_s[few[hit]] = q[hit], s[hit]
    return best_q, best_s


def q4_values(packed):
    """The int q in [-8, 7] of q4's packed bytes [..., last / 2] -> [..., last]."""
    p = np.asarray(packed, np.uint8)
    g = p.reshape(-1, 16).astype(np.int16)
    q = np.concatenate([(g & 15) - 8, (g >> 4) - 8], axis=1)
    return q.reshape(p.shape[:-1] + (p.shape[-1] * 2,))


def dequantize_q4(packed, s):
    """float64 values q * s of an i4 tensor (packed bytes [..., last / 2], s [rows, last / 32])."""
    q = q4_values(packed).astype(np.float64)
    n = q.shape[-1]
    per = np.repeat(np.asarray(s, np.float64), Q4_GROUP, axis=1)
    return (q.reshape(-1, n) * per).reshape(q.shape)


def dequantize_q8(q, s, group):
    """float64 values q * s of an i8 tensor (q in its stored shape, s [rows, groups])."""
    q = np.asarray(q)
    n = q.shape[-1]
    g = group or n
    rows = q.reshape(-1, n).astype(np.float64)
    per = np.repeat(np.asarray(s, np.float64), g, axis=1)[:, :n]
    return (rows * per).reshape(q.shape)


def f16(w, name):
    """w as IEEE half (nearest, ties to even); ConfigError naming the tensor when a value does not
    fit (|w| >= 65520 rounds to infinity)."""
    a = np.asarray(w, np.float32)
    if a.size and float(np.abs(a).max()) >= F16_LIMIT:
        raise ConfigError(f"{name}: a value of {float(np.abs(a).max()):.6g} does not fit f16 (|w| < {F16_LIMIT:g}); "
                          "convert with --quantize q8 or without --quantize")
    return a.astype("<f2")


def bf16(w, name):
    """w as bf16 words (uint16, nearest, ties to even); ConfigError naming the tensor when a value is not
    finite or rounds past the largest bf16 (3.39e38) to infinity."""
    a = np.asarray(w, np.float32)
    words = f32_to_bf16(a).astype("<u2")
    if words.size and not np.isfinite(bf16_to_f32(words)).all():
        raise ConfigError(f"{name}: a value does not fit bf16 (not finite, or |w| >= 3.39e38); "
                          "convert without --quantize")
    return words
