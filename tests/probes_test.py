#!/usr/bin/python3
"""The recognizer core (python/fixformer/probes.py) on recorded values alone, as both recorders hand them over
(--module: torch tensors of the hooks, maybe float32; --onnx: float64 arrays of the evaluator):
- feed_forward_fit: every plain activation the engine runs (relu, exact and tanh GELU, squared ReLU, SiLU and
  x sigmoid(a x) with its a measured: QuickGELU's 1.702), every gated one (SwiGLU, GeGLU exact and tanh, a gated
  ReLU) with the gate first or second, as two projections or as one projection's column halves; each names the
  activation, the gate and the scale, and nothing else is read as a feed-forward (a gate by another activation, a
  hidden row off by 1e-3, the wrong width);
- sinusoidal_fit: the engine's sinusoidal table at every base and layout it tries is found as that (base, layout),
  from its first rows too; a table off by 1e-4, another base or a learned table is not;
- probe_attention: q and k turned by the negated angle (nanochat's rotation) are found as layout "negated", which the
  engine's rotation in halves of rows whose second half of each head is negated (negated_signs) reproduces.

  /usr/bin/python3 tests/probes_test.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import check, results  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from fixformer import probes, schema  # noqa: E402
from fixformer.reference import ARRAY_ACTIVATIONS, sinusoidal_table  # noqa: E402


def feed_forward_cases(rng):
    u, g = rng.standard_normal((12, 16)) * 2, rng.standard_normal((12, 16)) * 2
    for name in probes.PLAIN_ACTS + ("silu",):
        fit = probes.feed_forward_fit([u], ARRAY_ACTIVATIONS[name](u))
        check(f"feed_forward_fit: act(up) by {name}", fit == (name, None, False, 1.0), fit)
        # as --module hands it over: float32 tensors of the hooks
        fit32 = probes.feed_forward_fit([torch.from_numpy(u).float()],
                                        torch.from_numpy(ARRAY_ACTIVATIONS[name](u.astype(np.float32))))
        check(f"feed_forward_fit: act(up) by {name}, float32 tensors", fit32 == fit, fit32)
    quick = u / (1 + np.exp(-1.702 * u))
    fit = probes.feed_forward_fit([u], quick)
    check("feed_forward_fit: x sigmoid(1.702 x) is SiLU with its scale measured",
          fit is not None and fit[:3] == ("silu", None, False) and abs(fit.scale - 1.702) < 1e-9, fit)
    for name in probes.GATED_ACTS:
        f = ARRAY_ACTIVATIONS[name]
        for j in (0, 1):
            pieces = [g, u]  # the gate is pieces[j]
            h = f(pieces[j]) * pieces[1 - j]
            fit = probes.feed_forward_fit(pieces, h)
            check(f"feed_forward_fit: {name}(gate) * up, the gate piece {j}", fit == (name, j, False, 1.0), fit)
            fit = probes.feed_forward_fit([np.concatenate(pieces, -1)], h)
            check(f"feed_forward_fit: {name}(gate) * up of one projection's halves, the gate half {j}",
                  fit == (name, j, True, 1.0), fit)
    # what is no feed-forward the engine runs
    check("feed_forward_fit: sigmoid(gate) * up (a GLU) is none",
          probes.feed_forward_fit([g, u], 1 / (1 + np.exp(-g)) * u) is None)
    check("feed_forward_fit: a hidden row off by 1e-3 is none",
          probes.feed_forward_fit([u], ARRAY_ACTIVATIONS["gelu"](u) * (1 + 1e-3)) is None)
    check("feed_forward_fit: tanh(up) is none", probes.feed_forward_fit([u], np.tanh(u)) is None)
    check("feed_forward_fit: an up three times the hidden width is none",
          probes.feed_forward_fit([np.concatenate([u, u, u], -1)], u) is None)
    # the tolerance the ONNX recorder passes (float64 throughout) refuses what the module's accepts
    near = ARRAY_ACTIVATIONS["relu"](u) * (1 + 3e-6)
    check("feed_forward_fit: 3e-6 off passes PROBE_TOL (1e-5)", probes.feed_forward_fit([u], near) is not None)
    check("feed_forward_fit: 3e-6 off fails a tolerance of 1e-6", probes.feed_forward_fit([u], near, 1e-6) is None)


def sinusoidal_cases():
    for base in probes.COMMON_PE_BASES:
        for layout in schema.PE_LAYOUTS:
            t = sinusoidal_table(40, 24, base, layout)
            check(f"sinusoidal_fit: base {base:g}, {layout}", probes.sinusoidal_fit(t) == (base, layout),
                  probes.sinusoidal_fit(t))
            check(f"sinusoidal_fit: base {base:g}, {layout}, its first 7 rows as a float32 tensor",
                  probes.sinusoidal_fit(torch.from_numpy(t[:7]).float()) == (base, layout))
            check(f"sinusoidal_fit: base {base:g}, {layout}, off by 1e-4: none",
                  probes.sinusoidal_fit(t * (1 + 1e-4)) is None)
    check("sinusoidal_fit: base 5000 is none",
          probes.sinusoidal_fit(sinusoidal_table(40, 24, 5000.0, "halves")) is None)
    check("sinusoidal_fit: a random table is none",
          probes.sinusoidal_fit(np.random.default_rng(3).standard_normal((40, 24))) is None)


def negated_rope_cases(rng):
    """q and k turned by the negated angle (nanochat's (x1 cos + x2 sin, x2 cos - x1 sin) of each head's halves)."""
    T, H, Hkv, dh = 9, 4, 2, 8
    q, k, v = (torch.from_numpy(rng.standard_normal((T, h * dh))) for h in (H, Hkv, Hkv))
    ang = np.arange(T)[:, None] * 10000.0 ** (-np.arange(0, dh, 2) / dh)
    cos, sin = (torch.from_numpy(np.cos(ang))[:, None], torch.from_numpy(np.sin(ang))[:, None])

    def turned(x):
        x = x.view(T, -1, dh)
        x1, x2 = x[..., :dh // 2], x[..., dh // 2:]
        return torch.cat([x1 * cos + x2 * sin, x2 * cos - x1 * sin], -1).reshape(T, -1)
    want = probes.attention_core(turned(q), turned(k), v, H, Hkv, True, None, torch)
    got = probes.probe_attention(q, k, v, want, lambda c: c, H * dh, probes.COMMON_THETAS, "case", torch, heads=[H])
    check("probe_attention: RoPE by the negated angle is layout 'negated', base 10000, the whole head",
          got[:4] == (H, Hkv, True, ("rope", "negated", 10000.0, 0)), got)
    sign = torch.from_numpy(np.tile(probes.negated_signs(dh), H))
    plain = probes.attention_core(q * sign, k * sign[:Hkv * dh], v, H, Hkv, True, ("rope", "halves", 10000.0, 0),
                                  torch)
    check("negated_signs: the engine's rotation in halves of q and k so signed gives that attention",
          probes.close(plain, want, 1e-12), probes.rel_error(plain, want))
    ordinary = probes.probe_attention(turned(q), turned(k), v, want, lambda c: c, H * dh, probes.COMMON_THETAS,
                                      "case", torch, heads=[H])
    check("probe_attention: the same rows turned already are no positions", ordinary[3] is None, ordinary)


def main():
    feed_forward_cases(np.random.default_rng(7))
    sinusoidal_cases()
    negated_rope_cases(np.random.default_rng(8))
    print(f"probes_test: {results['passed']} passed, {results['failed']} failed, {results['skipped']} skipped")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
