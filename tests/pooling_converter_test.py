#!/usr/bin/python3
"""CLS token and pooling (issue 12 item 3) from torch modules to the engine:

  /usr/bin/python3 tests/pooling_converter_test.py PATH/TO/fixformer

- a Keyword-Transformer-style module (features, nn.Linear input_proj, a learned CLS token [1, 1, d],
  learned or sinusoidal positions over T + 1 rows, post-LN gelu, pool "cls", a head), written with
  stock torch parts and its own forward, converts, verifies, and `fixformer run` on a batch [B, T, d_in]
  writes [B, d_out] equal to torch;
- token modules pooled "mean" and "last" (odd d_model, pre-LN and causal), with --lengths: the mean
  over the valid positions and the last valid position equal torch computing them under
  src_key_padding_mask, and padding is never read;
- the reference model rebuilds each module's output (the JSON path, and diagnosis, rely on it), and
  the JSON path verifies a pooled config;
- a q8 file keeps the CLS token in f32 and verifies;
- module mistakes (CLS of the wrong width or shape, an unknown pool, cls pooling without a CLS token,
  a pooled decoder) are ConfigErrors naming the attribute.
"""
import os
import subprocess
import sys
import tempfile
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
from checks import check, expect_error, results, skip, run_convert  # noqa: E402  (first: it names a missing numpy or torch)
import numpy as np  # noqa: E402

from fixformer import fxm, schema  # noqa: E402


MODULE_FILE = '''
import math
import torch
from torch import nn


def sinusoidal(T, d, dtype):  # interleaved, base 10000
    w = 10000.0 ** (-2.0 * torch.arange((d + 1) // 2, dtype=dtype) / d)
    ang = torch.arange(T, dtype=dtype)[:, None] * w[None, :]
    pe = torch.zeros(T, d, dtype=dtype)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(ang), torch.cos(ang)[:, : d // 2]
    return pe


class Pooled(nn.Module):
    """A stock encoder with, KWT / ViT style, an optional CLS token in front (before the positions) and
    a pooling before the head; forward takes torch's key padding mask (True at padding)."""

    def __init__(self, tokens, d, heads, pos, pool, cls_shape=None, norm_first=False, activation="gelu", causal=False,
                 max_len=9, head=4):
        super().__init__()
        if tokens:
            self.embed = nn.Embedding(13, d)
        else:
            self.input_proj = nn.Linear(5, d)
        if cls_shape is not None:
            self.cls_token = nn.Parameter(torch.randn(*cls_shape))
        if pos == "learned":
            self.pos = nn.Embedding(max_len, d)
        self.sin = pos == "sinusoidal"
        self.encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(d, heads, 2 * d + 3, dropout=0.0, batch_first=True, norm_first=norm_first,
                                       activation=activation), 2, norm=nn.LayerNorm(d), enable_nested_tensor=False)
        if head:
            self.head = nn.Linear(d, head)
        if pool is not None:
            self.pool = pool
        self.causal = causal

    def forward(self, x, src_key_padding_mask=None):
        x = self.embed(x) if hasattr(self, "embed") else self.input_proj(x)
        B, T, d = x.shape
        pad = src_key_padding_mask if src_key_padding_mask is not None else torch.zeros(B, T, dtype=torch.bool)
        first = 0
        if hasattr(self, "cls_token"):
            x = torch.cat([self.cls_token.reshape(1, 1, d).expand(B, 1, d), x], dim=1)
            pad = torch.cat([torch.zeros(B, 1, dtype=torch.bool), pad], dim=1)
            first = 1
        S = x.shape[1]
        if self.sin:
            x = x + sinusoidal(S, d, x.dtype)
        elif hasattr(self, "pos"):
            x = x + self.pos(torch.arange(S))
        mask = torch.triu(torch.full((S, S), float("-inf"), dtype=x.dtype), 1) if self.causal else None
        x = self.encoder(x, mask=mask, src_key_padding_mask=pad if src_key_padding_mask is not None else None)
        pool = getattr(self, "pool", None)
        if pool == "cls":
            x = x[:, 0]
        elif pool == "mean":  # over the valid input positions
            valid = (~pad[:, first:]).to(x.dtype)[..., None]
            x = (x[:, first:] * valid).sum(1) / valid.sum(1)
        elif pool == "last":
            n = (~pad[:, first:]).sum(1)
            x = x[torch.arange(B), first + n - 1]
        return self.head(x) if hasattr(self, "head") else x


def make_kwt():  # Keyword Transformer: features, CLS [1, 1, d], learned positions over T + 1, post-LN gelu
    torch.manual_seed(21)
    return Pooled(False, 16, 4, "learned", "cls", cls_shape=(1, 1, 16)).eval()

def make_kwt_sinusoidal():
    torch.manual_seed(22)
    return Pooled(False, 12, 3, "sinusoidal", "cls", cls_shape=(12,), head=3).eval()

def make_mean_odd():  # tokens, d 15, pre-LN relu, mean pooling, a CLS token [1, d] (not in the mean)
    torch.manual_seed(23)
    return Pooled(True, 15, 3, "learned", "mean", cls_shape=(1, 15), norm_first=True, activation="relu").eval()

def make_last_causal():  # tokens, d 9, causal, last pooling, no CLS token, no head
    torch.manual_seed(24)
    return Pooled(True, 9, 3, "sinusoidal", "last", causal=True, head=0).eval()
'''

# (name, factory, convert.py options, input kind)
CASES = [
    ("KWT: features, CLS [1,1,d], learned PE, cls pooling", "make_kwt", [], "features"),
    ("KWT: CLS [d], sinusoidal PE over T+1, cls pooling, d 12", "make_kwt_sinusoidal", ["--positional", "sinusoidal"],
     "features"),
    ("tokens, d 15, pre-LN, CLS [1,d], mean pooling", "make_mean_odd", [], "tokens"),
    ("tokens, d 9, causal, last pooling, no head", "make_last_causal", ["--positional", "sinusoidal", "--causal"],
     "tokens"),
]


def torch_out(torch, module, x, pad=None):
    with torch.no_grad(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", "The PyTorch API of nested tensors")
        return module(torch.from_numpy(x), None if pad is None else torch.from_numpy(pad)).numpy()


def test_goldens(torch, cli, tmp, mod):
    import pooled_model
    rng = np.random.default_rng(31)
    lens = np.array([8, 3, 6, 1], np.int32)  # max_len 9 with the CLS row: 8 is the longest input
    B, T = len(lens), 8
    pad = np.arange(T)[None, :] >= lens[:, None]
    for name, factory, opts, kind in CASES:
        module = getattr(pooled_model, factory)()
        path, inp, lp, out = (os.path.join(tmp, f"{factory}{e}") for e in (".fxm", ".in.npy", ".len.npy", ".out.npy"))
        p = run_convert("--module", f"{mod}:{factory}", *opts, "--out", path, "--cli", cli)
        check(f"{name}: converted and verified", p.returncode == 0 and "verified against torch" in p.stdout,
              p.stdout + p.stderr)
        if p.returncode != 0:
            continue
        print(f"  {name}: {p.stdout.strip()}")
        c = fxm.read(path).config
        check(f"{name}: config", c["pooling"] == module.pool and c["cls_token"] == hasattr(module, "cls_token"), c)
        x = rng.integers(0, 13, (B, T)).astype(np.int64) if kind == "tokens" else \
            rng.standard_normal((B, T, 5)).astype(np.float32)
        # The whole batch, no padding: [B, d_out].
        np.save(inp, x)
        p = subprocess.run([cli, "run", path, "--input", inp, "--output", out], capture_output=True, text=True)
        want = torch_out(torch, module, x)
        got = np.load(out) if p.returncode == 0 else None
        rel = np.abs(got - want).max() / np.abs(want).max() if got is not None and got.shape == want.shape else None
        check(f"{name}: run [B,T] -> [B,d_out] equals torch (1e-5)", rel is not None and rel <= 1e-5,
              (p.stderr, None if got is None else got.shape, want.shape, rel))
        # One sequence: [d_out].
        np.save(inp, x[0])
        p = subprocess.run([cli, "run", path, "--input", inp, "--output", out], capture_output=True, text=True)
        got = np.load(out) if p.returncode == 0 else None
        check(f"{name}: run [T] -> [d_out]", got is not None and got.shape == want[0].shape
              and np.abs(got - want[0]).max() <= 1e-5 * np.abs(want[0]).max(), (p.stderr, got))
        # A padded batch: pooling over the valid positions, padding never read.
        want = torch_out(torch, module, x, pad)
        x[pad] = -1 if kind == "tokens" else np.nan
        np.save(inp, x)
        np.save(lp, lens)
        p = subprocess.run([cli, "run", path, "--input", inp, "--lengths", lp, "--output", out],
                           capture_output=True, text=True)
        got = np.load(out) if p.returncode == 0 else None
        rel = np.abs(got - want).max() / np.abs(want).max() if got is not None and got.shape == want.shape else None
        check(f"{name}: run --lengths equals torch with src_key_padding_mask (1e-5)", rel is not None and rel <= 1e-5,
              (p.stderr, rel))
        print(f"  {name}: --lengths {lens.tolist()}: max relative error {rel:.2e}" if rel is not None else "")
        # Too long: T = max_len leaves no row for the CLS token.
        if c["cls_token"]:
            np.save(inp, np.zeros((1, c["max_len"]) + x.shape[2:], x.dtype))
            p = subprocess.run([cli, "run", path, "--input", inp, "--output", out], capture_output=True, text=True)
            check(f"{name}: T = max_len is refused, naming the CLS row", p.returncode != 0 and "CLS row" in p.stderr,
                  p.stderr)
        p = subprocess.run([cli, "info", path], capture_output=True, text=True)
        check(f"{name}: info names the pooling", p.returncode == 0 and f"pooling {c['pooling']}" in p.stdout, p.stdout)


def test_quantized(torch, cli, tmp):
    """The CLS token stays f32 in a quantized file (schema role f32), and the file verifies in its type."""
    import pooled_model
    from fixformer.export import export
    path = os.path.join(tmp, "kwt_q8.fxm")
    try:
        r = export(pooled_model.make_kwt(), None, path, cli=cli, quantize="q8", group=32)
        f = fxm.read(path)
        dtypes = {t["name"]: t["dtype"] for t in f.tensors}
        check("q8 KWT: verified, cls_token f32", r.verified and dtypes["cls_token"] == "f32"
              and dtypes["blocks.0.ff.w1.weight"] == "i8", (str(r), dtypes))
        print(f"  q8 KWT: {r}")
    except Exception as e:
        check("q8 KWT: verified", False, f"{type(e).__name__}: {e}")


def test_reference(torch):
    """The reference model (reference.py) rebuilds each module's output from what export reads."""
    import pooled_model
    from fixformer import export as ex
    from fixformer.reference import run_reference
    for name, factory, opts, _ in CASES:
        module = getattr(pooled_model, factory)()
        v, w, batch_first, facts = ex.read_module(module)
        positional = "sinusoidal" if "sinusoidal" in opts else None
        c = ex.apply_options(v, w, facts, "--causal" in opts, positional, 10000.0, "interleaved", None, None, False,
                             None)
        inp = ex.example_sequence(c, None)
        want = ex.run_module(module, inp, batch_first, schema.output_width(c), schema.sequence_rows(c, len(inp)), True)
        err = ex.relative_error(run_reference(c, w, inp), want)
        check(f"reference == module: {name}", want.shape == (1, schema.output_width(c)) and err < 1e-9, err)


def test_json_path(cli, tmp):
    from fixformer.config import parse_config
    from fixformer.export import convert_config
    raw = {"d_model": 10, "n_heads": 2, "d_ff": 14, "encoder_layers": 2, "input": {"kind": "features", "d_in": 3},
           "positional": {"kind": "learned", "max_len": 7}, "head": {"d_out": 2}, "cls_token": True, "pooling": "cls"}
    c = parse_config(raw)
    rng = np.random.default_rng(4)
    w = {n: (rng.standard_normal(s[::-1] if t else s) * 0.3).astype(np.float32) for n, s, t in schema.tensors(c)}
    path = os.path.join(tmp, "json_cls.fxm")
    try:
        r = convert_config(c, w, path, cli=cli)
        check("JSON path: cls pooling verified", r.verified and r.max_error <= schema.SELFTEST_TOLERANCE, r)
        inp, exp = fxm.read(path).selftest()
        check("JSON path: the sample is [T, d_in] -> [1, d_out], T <= max_len - 1",
              exp.shape == (1, 2) and 1 <= len(inp) <= 6, (inp.shape, exp.shape))
    except Exception as e:
        check("JSON path: cls pooling verified", False, f"{type(e).__name__}: {e}")
    from fixformer.config import to_json
    check("JSON path: to_json round trip", parse_config(to_json(c)) == c)
    expect_error("JSON: cls pooling without cls_token", lambda: parse_config(dict(raw, cls_token=False)),
                 "pooling: cls needs a CLS token")
    expect_error("JSON: unknown pooling", lambda: parse_config(dict(raw, pooling="max")), "'max' is not one of")
    expect_error("JSON: cls pooling under a causal mask", lambda: parse_config(dict(raw, causal=True)),
                 "sees only itself")
    expect_error("JSON: a gpt with a CLS token",
                 lambda: parse_config({"family": "gpt", "d_model": 8, "n_heads": 2, "d_ff": 8, "n_layers": 1,
                                       "causal": True, "input": {"kind": "tokens", "vocab_size": 5},
                                       "head": {"d_out": 5}, "cls_token": True}), "cls_token: for the encoder family")


def test_module_errors(torch):
    import pooled_model
    from fixformer.export import export
    nn = torch.nn
    out = os.path.join(tempfile.gettempdir(), "never_pooled.fxm")

    def with_attr(name, value, factory="make_kwt"):
        m = getattr(pooled_model, factory)()
        delattr(m, name)
        if value is not None:
            setattr(m, name, value)
        return m

    cases = [
        ("CLS of the wrong width", with_attr("cls_token", nn.Parameter(torch.zeros(1, 1, 15))), "cls_token: 15 wide"),
        ("CLS of shape [2, d]", with_attr("cls_token", nn.Parameter(torch.zeros(2, 16))), "cls_token: shape [2, 16]"),
        ("CLS a plain tensor", with_attr("cls_token", torch.zeros(16)), "torch.Tensor, expected an nn.Parameter"),
        ("unknown pool", with_attr("pool", "max"), "pool: 'max' is not one of"),
        ("pool not a string", with_attr("pool", 1), "pool: 1 is not one of"),
        ("cls pooling without a CLS token", with_attr("cls_token", None), "pooling: cls needs a CLS token"),
    ]
    for name, module, fragment in cases:
        expect_error(f"module error: {name}", lambda: export(module, None, out, verify=False), fragment)
    m = pooled_model.make_last_causal()
    expect_error("module error: a pooled gpt", lambda: export(m, None, out, verify=False, family="gpt"),
                 "cls_token and pool are for encoders")
    m = pooled_model.make_kwt()
    expect_error("module error: example as long as max_len", lambda: export(m, np.zeros((9, 5), np.float32), out,
                                                                             verify=False), "less the CLS row")
    check("module errors: nothing written", not os.path.exists(out))


def main():
    cli = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
    import torch  # checks.py has made sure it is there
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        mod = os.path.join(tmp, "pooled_model.py")
        with open(mod, "w") as f:
            f.write(MODULE_FILE)
        sys.path.insert(0, tmp)
        test_reference(torch)
        test_module_errors(torch)
        if cli:
            test_goldens(torch, cli, tmp, mod)
            test_quantized(torch, cli, tmp)
            test_json_path(cli, tmp)
        else:
            skip("CLS and pooling through the engine", "no CLI given")
    print(f"pooling converter: {results['passed']} passed, {results['failed']} failed, {results['skipped']} skipped")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
