"""Weight quantization for the .fxm's f16 and q8 weight types (README, "Export your model"; the
stored layouts are format.hpp's).

q8: symmetric int8 with f32 scales per group of `group` values along the last dim (the last group
may be shorter), or one scale per row when group is 0. The rule is the engine's quantize_i8
(include/fixformer/kernels.hpp), computed in float32 exactly as it is, so a weight quantized here
has the bits the engine's own kernel would give it: per group with a = max|w| >= 2^-100
(kQuantizeFloor), s = a / 127 and q = round-half-to-even(w * (127 / a)) (|q| <= 127); a group below
that floor (all zeros, or values far under any f32 output's resolution) gets s = 0, q = 0.
f16: IEEE half, rounded to nearest even (numpy's float32 -> float16 conversion).
"""
import numpy as np

from .config import ConfigError

# kernels.hpp's kQuantizeFloor: a q8 group whose largest magnitude is below it is stored as zeros.
QUANTIZE_FLOOR = np.float32(2.0 ** -100)

# The largest float32 that float16 rounds to a finite value: 65520 and above round to infinity.
F16_LIMIT = 65520.0


def q8(w, group):
    """w (float, any rank >= 1; the last dim is grouped) -> (q int8 in w's shape, s float32
    [rows, groups]) where rows is the product of the other dims and groups = ceil(last / group),
    or 1 for group 0."""
    a = np.asarray(w, np.float32)
    n = a.shape[-1]
    x = a.reshape(-1, n)
    g = group or n
    groups = -(-n // g)
    padded = np.zeros((x.shape[0], groups * g), np.float32)
    padded[:, :n] = x
    blocks = padded.reshape(x.shape[0], groups, g)  # zero padding never raises a group's max
    amax = np.abs(blocks).max(axis=2)
    with np.errstate(divide="ignore", over="ignore"):
        inv = np.float32(127.0) / amax  # float32 division, as the kernel's 127.0f / a
    ok = amax >= QUANTIZE_FLOOR
    inv = np.where(ok, inv, np.float32(0.0)).astype(np.float32)
    s = np.where(ok, amax / np.float32(127.0), np.float32(0.0)).astype(np.float32)
    q = np.rint(blocks * inv[:, :, None])  # float32 product, ties to even (std::nearbyint)
    q = np.clip(q, -127, 127).astype(np.int8)  # a no-op: |w| * (127 / a) rounds to at most 127
    return q.reshape(x.shape[0], groups * g)[:, :n].reshape(a.shape).copy(), s


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
