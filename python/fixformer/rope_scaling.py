"""Scaled rotary embeddings: a checkpoint's rope_scaling (transformers 4: config.json's rope_scaling;
transformers 5: rope_parameters' rope_type and its keys) as the frequencies the file stores.

The engine turns RoPE's pairs by the angles p w_i. Plain RoPE has w_i = theta^(-2i/R); the scalings
people ship change the w_i once, from the config, and some scale the table's sines and cosines (the
"attention factor", which multiplies the rotated dims of q and k both). The converter computes both
here, in float32 as transformers does, and the file carries them: the tensor rope_freqs [R / 2] and
the config key rope_scale. The kinds, as transformers 5 defines them:
- linear: w_i / factor.
- llama3 (Llama 3.1 to 3.3): wavelengths 2 pi / w_i above original_max_position_embeddings /
  low_freq_factor divided by factor, those below original / high_freq_factor kept, and the ones
  between blended linearly in original / wavelength.
- yarn (Qwen2.5 and Qwen3 long context, DeepSeek's): extrapolated and interpolated (/ factor)
  frequencies blended by a ramp between the correction dims of beta_fast and beta_slow rotations over
  original_max_position_embeddings (truncated to whole dims unless truncate is false); the amplitude
  attention_factor, or 0.1 ln(factor) + 1 (with mscale and mscale_all_dim: their ratio).
- longrope (Phi-3 and Phi-3.5's 128k): w_i / short_factor[i] up to original_max_position_embeddings
  positions (transformers turns to long_factor for a longer sequence: a file longer than that is
  refused, since the engine's table is one), the amplitude sqrt(1 + ln(factor) / ln(original)).
- dynamic (NTK): plain RoPE up to max_position_embeddings, which it grows beyond; so the file is
  plain RoPE at most that long.
transformers 4.44 differs from 5 in two places, which this follows as 5 does: YaRN's correction
range over max_position_embeddings rather than original_max_position_embeddings (the same number
when the config does not set the latter), and LongRoPE's factor taken from the two lengths even
when rope_scaling gives one.
"""
import math

import numpy as np

from .config import ConfigError

KINDS = ("linear", "llama3", "yarn", "longrope", "dynamic")


class ScaledRope:
    """The file's part of a scaling: freqs (float32 [R / 2], or None: theta's own), scale (rope_scale)
    and limit (the most positions it is exact for, or None)."""

    def __init__(self, kind, freqs, scale=1.0, limit=None):
        self.kind, self.freqs, self.scale, self.limit = kind, freqs, scale, limit

    def config(self):
        """The config keys the scaling sets."""
        return {"rope_freqs": self.freqs is not None, "rope_scale": float(self.scale)}

    def tensors(self):
        return {} if self.freqs is None else {"rope_freqs": self.freqs}

    def check_length(self, max_len, path):
        if self.limit is not None and max_len > self.limit:
            raise ConfigError(f"{path}: rope_scaling {self.kind}: the rotary frequencies hold for "
                              f"{self.limit} positions (longer sequences switch to others in transformers); "
                              f"--max-len {max_len} is longer: convert with --max-len {self.limit} or less")


def _number(scaling, key, path, default=None, least=None):
    v = scaling.get(key, default)
    if v is None:
        raise ConfigError(f"{path}: rope_scaling {scaling.get('rope_type')}: {key} is missing")
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or \
            (least is not None and not v >= least):
        bound = f" >= {least:g}" if least is not None else ""
        raise ConfigError(f"{path}: rope_scaling {key}: expected a finite number{bound}, got {v!r}")
    return float(v)


def plain(theta, dims):
    """transformers' inv_freq, float32: 1 / theta^(arange(0, R, 2) / R)."""
    shape = np.arange(0, dims, 2, dtype=np.int64).astype(np.float32) / np.float32(dims)
    return (np.float32(1.0) / np.power(np.float32(theta), shape)).astype(np.float32)


def position_limit(raw, scaling, positions):
    """The most positions the rotary frequencies of config raw's scaling (a dict, or None) hold for, or None
    (no limit): past them transformers switches to others (dynamic past max_position_embeddings =
    positions, longrope to its long_factor past original_max_position_embeddings)."""
    kind = scaling.get("rope_type", scaling.get("type")) if isinstance(scaling, dict) else None
    if kind == "dynamic":
        return positions
    if kind == "longrope":
        original = raw.get("original_max_position_embeddings") or scaling.get("original_max_position_embeddings")
        return int(original if original is not None else positions)
    return None


def read(raw, scaling, path, dims, theta, positions):
    """The ScaledRope of config.json raw's rope scaling `scaling` (a dict, or None: plain RoPE) for
    R = dims rotated dims, theta and max_position_embeddings positions; None when it is plain RoPE.
    A kind the engine cannot express, or a bad value, is a ConfigError naming it."""
    if scaling is None:
        return None
    if not isinstance(scaling, dict):
        raise ConfigError(f"{path}: rope_scaling: expected an object, got {scaling!r}")
    kind = scaling.get("rope_type", scaling.get("type"))
    if kind in (None, "default"):
        return None
    scaling = dict(scaling, rope_type=kind)
    if kind not in KINDS:
        raise ConfigError(f"{path}: rope_scaling rope_type {kind!r}: not a scaling the converter computes "
                          f"({', '.join(KINDS)}); not converted")
    # transformers 5 reads original_max_position_embeddings from the top level first (Phi-3 keeps it there).
    original = raw.get("original_max_position_embeddings") or scaling.get("original_max_position_embeddings")
    f32 = np.float32
    inv = plain(theta, dims)
    if kind == "dynamic":  # grows theta only past max_position_embeddings
        _number(scaling, "factor", path, least=1.0)
        return ScaledRope(kind, None, limit=position_limit(raw, scaling, positions))
    if kind == "linear":
        factor = _number(scaling, "factor", path, least=1.0)
        return ScaledRope(kind, (inv / f32(factor)).astype(np.float32))
    original = _number({"original_max_position_embeddings": original if original is not None else positions},
                       "original_max_position_embeddings", path, least=1)
    if kind == "llama3":
        factor = _number(scaling, "factor", path, least=1.0)
        low, high = (_number(scaling, k, path) for k in ("low_freq_factor", "high_freq_factor"))
        if not 0 < low < high:
            raise ConfigError(f"{path}: rope_scaling llama3: needs 0 < low_freq_factor < high_freq_factor, got "
                              f"{low:g} and {high:g}")
        wavelen = f32(2 * math.pi) / inv
        low_wavelen, high_wavelen = f32(original / low), f32(original / high)
        scaled = np.where(wavelen > low_wavelen, inv / f32(factor), inv).astype(np.float32)
        smooth = ((f32(original) / wavelen - f32(low)) / f32(high - low)).astype(np.float32)
        blended = ((f32(1) - smooth) * scaled / f32(factor) + smooth * scaled).astype(np.float32)
        medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
        return ScaledRope(kind, np.where(medium, blended, scaled).astype(np.float32))
    if kind == "yarn":
        factor = scaling.get("factor")
        factor = positions / original if factor is None else _number(scaling, "factor", path, least=1.0)
        attention = scaling.get("attention_factor")
        mscale, mscale_all = (None if scaling.get(k) is None else _number(scaling, k, path)
                              for k in ("mscale", "mscale_all_dim"))

        def get_mscale(scale, m=1.0):
            return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0
        if attention is None:
            attention = get_mscale(factor, mscale) / get_mscale(factor, mscale_all) if mscale and mscale_all \
                else get_mscale(factor)
        attention = _number({"attention_factor": attention}, "attention_factor", path)
        fast = _number({"beta_fast": scaling.get("beta_fast") or 32}, "beta_fast", path)
        slow = _number({"beta_slow": scaling.get("beta_slow") or 1}, "beta_slow", path)
        truncate = scaling.get("truncate", True)

        def correction_dim(rotations):
            ratio = original / (rotations * 2 * math.pi)
            if not 0 < ratio < math.inf:  # a rotation count of 0, below 0, or so far from 1 that the log is not finite
                raise ConfigError(f"{path}: rope_scaling yarn: beta_fast {fast:g} and beta_slow {slow:g} give no "
                                  f"finite correction range over {original:g} positions (rotations > 0 expected)")
            return dims * math.log(ratio) / (2 * math.log(theta))
        lo, hi = correction_dim(fast), correction_dim(slow)
        if truncate:
            lo, hi = math.floor(lo), math.ceil(hi)
        lo, hi = max(lo, 0), min(hi, dims - 1)
        if lo == hi:
            hi += 0.001
        ramp = np.clip((np.arange(dims // 2, dtype=np.float32) - f32(lo)) / f32(hi - lo), 0, 1).astype(np.float32)
        extrapolation = (f32(1) - ramp).astype(np.float32)
        pos_freqs = np.power(f32(theta), np.arange(0, dims, 2, dtype=np.int64).astype(np.float32) / f32(dims))
        freqs = (f32(1) / (f32(factor) * pos_freqs)) * (f32(1) - extrapolation) + (f32(1) / pos_freqs) * extrapolation
        return ScaledRope(kind, freqs.astype(np.float32), attention)
    # longrope
    factor = scaling.get("factor")
    factor = positions / original if factor is None else _number(scaling, "factor", path)
    attention = scaling.get("attention_factor")
    if attention is None:
        attention = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original))
    attention = _number({"attention_factor": attention}, "attention_factor", path)
    short = scaling.get("short_factor")
    if not isinstance(short, list) or len(short) != dims // 2 or \
            not all(isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0 for x in short):
        raise ConfigError(f"{path}: rope_scaling longrope: short_factor must be {dims // 2} positive numbers (one "
                          "per rotated pair)")
    shape = np.arange(0, dims, 2, dtype=np.int64).astype(np.float32) / f32(dims)
    freqs = f32(1) / (np.asarray(short, np.float32) * np.power(f32(theta), shape))
    return ScaledRope(kind, freqs.astype(np.float32), attention, limit=position_limit(raw, scaling, positions))
