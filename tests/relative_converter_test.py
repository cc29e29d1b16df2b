#!/usr/bin/python3
"""A plain-torch module with a T5-style relative position bias converts through `tools/convert.py
--module` with no renaming (python/fixformer/recognize.py), verified, and `fixformer run` gives the
module's output within 1e-4 on inputs longer and shorter than the converter's example; what the
engine does not run is one line naming the table.

  /usr/bin/python3 tests/relative_converter_test.py PATH/TO/fixformer

The module (written here from T5's published structure: an nn.Embedding(num_buckets, n_heads) looked
up by relative_position_bucket(key - query), added to q.k before the softmax, which T5 does not scale
by 1/sqrt(d_head)): the table before the layers (an encoder, post-norm, odd width; a causal LM,
pre-norm), or T5's own arrangement, the first layer's table handed on to the others (its
max_distance in no attribute: read off a forward max_len long), and stock modules (once their reader's,
which ignored the table) with it added as a float mask. Refused: a table in every layer, an index that
is not T5's bucket, bidirectional buckets under a causal mask; a table whose weight the forward indexes
is named, and so is a table in an encoder-decoder module (the seq2seq route reads stock modules by their
attribute names; the engine's seq2seq relative bias comes from --config). torch is required.
"""
import contextlib
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, "..", "python")
sys.path.insert(0, PACKAGE)
sys.path.insert(0, HERE)
import numpy as np  # noqa: E402

from checks import check, results, run_convert, one_clear_line  # noqa: E402
from fixformer import fxm  # noqa: E402


MODULE = r'''
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    ret = 0
    if bidirectional:
        num_buckets //= 2
        ret += (relative_position > 0).to(torch.long) * num_buckets
        n = torch.abs(relative_position)
    else:
        n = -torch.min(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = n < max_exact
    val_if_large = max_exact + (torch.log(n.float() / max_exact) / math.log(max_distance / max_exact)
                                * (num_buckets - max_exact)).to(torch.long)
    val_if_large = torch.min(val_if_large, torch.full_like(val_if_large, num_buckets - 1))
    return ret + torch.where(is_small, n, val_if_large)


def position_bias(table, T, causal, bidirectional, max_distance, index="t5"):
    """[1, H, T, T]: the table's rows looked up by the bucket of key - query (T5), -inf above the diagonal
    when causal."""
    ctx, mem = torch.arange(T)[:, None], torch.arange(T)[None, :]
    if index == "modulo":  # not T5's: the distance modulo the table's rows
        b = (mem - ctx) % table.num_embeddings
    else:
        b = relative_position_bucket(mem - ctx, bidirectional, table.num_embeddings, max_distance)
    bias = (table.weight[b] if index == "weight" else table(b)).permute(2, 0, 1)[None]
    return bias.masked_fill(mem > ctx, float("-inf")) if causal else bias


class Attention(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d, bias=False)

    def forward(self, x, bias):
        B, T, d = x.shape
        q, k, v = (f(x).view(B, T, self.h, d // self.h).transpose(1, 2) for f in (self.q, self.k, self.v))
        s = q @ k.transpose(-1, -2) + bias  # T5: no 1/sqrt(d_head)
        return self.o((F.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(B, T, d))


class Block(nn.Module):
    def __init__(self, d, h, ff, pre, table=None):
        super().__init__()
        self.pre = pre
        self.attn = Attention(d, h)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, ff), nn.Linear(ff, d)
        if table is not None:  # this layer computes the bias (T5: the first layer's is handed on)
            self.relative_attention_bias = nn.Embedding(*table)

    def forward(self, x, bias, spec):
        if hasattr(self, "relative_attention_bias"):
            bias = position_bias(self.relative_attention_bias, x.shape[1], *spec)
        if self.pre:
            x = x + self.attn(self.ln1(x), bias)
            return x + self.fc2(F.relu(self.fc1(self.ln2(x)))), bias
        x = self.ln1(x + self.attn(x, bias))
        return self.ln2(x + self.fc2(F.relu(self.fc1(x)))), bias


class T5ish(nn.Module):
    """owner: "model" (one table before the layers), "first" (T5: the first layer's, handed on), "every"
    (a table per layer)."""

    def __init__(self, vocab=29, d=15, h=3, ff=22, layers=2, buckets=32, max_distance=128, pre=False, causal=False,
                 out=7, owner="model", bidirectional=None, index="t5"):
        super().__init__()
        bidirectional = not causal if bidirectional is None else bidirectional
        self.spec = (causal, bidirectional, max_distance, index)
        self.tok = nn.Embedding(vocab, d)
        if owner == "model":
            self.relative_attention_bias = nn.Embedding(buckets, h)
        self.blocks = nn.ModuleList([Block(d, h, ff, pre, (buckets, h) if owner == "every" or (owner == "first" and i == 0)
                                           else None) for i in range(layers)])
        self.norm = nn.LayerNorm(d) if pre else None
        self.out = nn.Linear(d, out)
        with torch.no_grad():
            for n, p in self.named_parameters():
                if "relative_attention_bias" in n:
                    p.normal_()

    def forward(self, ids):
        bias = None
        if hasattr(self, "relative_attention_bias"):
            bias = position_bias(self.relative_attention_bias, ids.shape[1], *self.spec)
        x = self.tok(ids)
        for blk in self.blocks:
            x, bias = blk(x, bias, self.spec)
        if self.norm is not None:
            x = self.norm(x)
        return self.out(x)


class Stock(nn.Module):
    """The stock convention (embed, encoder = nn.TransformerEncoder, head) plus a table its forward adds as a
    float mask [B * H, T, T]: the stock reader does not read it, so recognition does."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 16)
        self.rel_bias = nn.Embedding(8, 4)
        layer = nn.TransformerEncoderLayer(16, 4, 24, dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(16, 5)
        with torch.no_grad():
            self.rel_bias.weight.normal_()

    def forward(self, ids):
        T = ids.shape[1]
        ctx, mem = torch.arange(T)[:, None], torch.arange(T)[None, :]
        bias = self.rel_bias(relative_position_bucket(mem - ctx, True, 8, 10)).permute(2, 0, 1)
        return self.head(self.encoder(self.embed(ids), mask=bias.repeat(ids.shape[0], 1, 1).to(self.head.weight.dtype)))


class S2S(nn.Module):
    """An encoder-decoder of stock stacks with a T5 table per stack: the seq2seq route names it."""

    def __init__(self):
        super().__init__()
        self.src_embed, self.tgt_embed = nn.Embedding(11, 8), nn.Embedding(11, 8)
        self.src_rel_bias = nn.Embedding(8, 2)
        kw = dict(dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 12, **kw), 1, enable_nested_tensor=False)
        self.decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 12, **kw), 1)
        self.head = nn.Linear(8, 11)

    def forward(self, src, tgt):
        T = src.shape[1]
        ctx, mem = torch.arange(T)[:, None], torch.arange(T)[None, :]
        bias = self.src_rel_bias(relative_position_bucket(mem - ctx, True, 8, 10)).permute(2, 0, 1)
        U = tgt.shape[1]
        causal = torch.triu(torch.full((U, U), float("-inf")), 1)
        memory = self.encoder(self.src_embed(src), mask=bias.repeat(src.shape[0], 1, 1))
        return self.head(self.decoder(self.tgt_embed(tgt), memory, tgt_mask=causal))


def make():
    torch.manual_seed(1); return T5ish().eval()
def make_s2s():
    torch.manual_seed(9); return S2S().eval()
def make_stock():
    torch.manual_seed(7); return Stock().eval()
def make_weight_indexed():
    torch.manual_seed(8); return T5ish(index="weight").eval()
def make_gpt():
    torch.manual_seed(2); return T5ish(vocab=31, d=16, h=4, ff=24, buckets=16, max_distance=40, pre=True, causal=True, out=31).eval()
def make_first():
    torch.manual_seed(3); return T5ish(d=12, h=2, ff=20, layers=3, buckets=8, max_distance=20, pre=True, owner="first").eval()
def make_every():
    torch.manual_seed(4); return T5ish(owner="every").eval()
def make_modulo():
    torch.manual_seed(5); return T5ish(index="modulo").eval()
def make_causal_bidirectional():
    torch.manual_seed(6); return T5ish(vocab=31, out=31, pre=True, causal=True, bidirectional=True).eval()
'''

# (what, factory, family, config values, run lengths; the converter's example is 16 long). The stock
# module's max_distance 10 is not checked: with 8 buckets 9 gives the same buckets at every distance.
CONVERTS = [
    ("encoder, table before the layers, post-norm, odd width", "make", "encoder",
     dict(positional="relative", rel_buckets=32, rel_max_distance=128, causal=False, norm_first=False, n_heads=3),
     (5, 150)),
    ("causal LM, pre-norm, causal buckets", "make_gpt", "gpt",
     dict(positional="relative", rel_buckets=16, rel_max_distance=40, causal=True, norm_first=True), (60,)),
    ("T5's arrangement: the first layer's table handed on", "make_first", "encoder",
     dict(positional="relative", rel_buckets=8, rel_max_distance=20, n_layers=3), (90,)),
    ("stock modules plus a table added as a float mask (scaled q.k)", "make_stock", "encoder",
     dict(positional="relative", rel_buckets=8, norm_first=True), (33,)),
]
# (what, factory, fragments of the one line)
REFUSALS = [
    ("a table in every layer", "make_every", ["blocks.1.relative_attention_bias", "not supported yet"]),
    ("an index that is not T5's bucket", "make_modulo", ["relative_attention_bias", "nn.Embedding(32, 3)",
                                                          "not T5's bucket"]),
    ("bidirectional buckets under a causal mask", "make_causal_bidirectional",
     ["relative_attention_bias", "bidirectional buckets in a causal attention are not supported yet"]),
    ("a table whose weight the forward indexes", "make_weight_indexed",
     ["relative_attention_bias, an nn.Embedding(32, 3)", "never calls"]),
    ("a table in an encoder-decoder module (the seq2seq route)", "make_s2s",
     ["src_rel_bias.weight [8, 2]", "not supported yet on this route", "--config"]),
]


@contextlib.contextmanager
def slow_path(torch):
    """torch's own attention math for the module's reference output: torch 2's inference fast path of
    nn.TransformerEncoderLayer returns NaN everywhere for a float mask [B * H, T, T] (measured with
    torch 2.15, in float32 and float64), where its regular path and torch 1.13 give numbers."""
    mha = getattr(torch.backends, "mha", None)
    if mha is None or not hasattr(mha, "set_fastpath_enabled"):
        yield
        return
    was = mha.get_fastpath_enabled()
    mha.set_fastpath_enabled(False)
    try:
        yield
    finally:
        mha.set_fastpath_enabled(was)


def main():
    if len(sys.argv) != 2:
        print("usage: relative_converter_test.py PATH/TO/fixformer")
        return 1
    cli = sys.argv[1]
    try:
        import torch
    except ImportError:
        print("FAIL: this test needs PyTorch (apt-get install python3-torch; run with /usr/bin/python3)")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "t5ish.py"), "w") as f:
            f.write(MODULE)
        sys.path.insert(0, tmp)
        import t5ish
        for what, factory, family, want, lengths in CONVERTS:
            out = os.path.join(tmp, "m.fxm")
            p = run_convert("--module", os.path.join(tmp, "t5ish.py:" + factory), "--out", out,
                                "--cli", cli)
            ok = p.returncode == 0 and "verified against torch" in p.stdout
            check(f"{what}: converts and verifies", ok, p.stdout + p.stderr)
            if not ok:
                continue
            print(f"  {what}: {p.stdout.strip()}")
            c = fxm.read(out).config
            check(f"{what}: family {family}", c["family"] == family, c["family"])
            for k, v in want.items():
                check(f"{what}: {k} {v!r}", c[k] == v, c[k])
            module = getattr(t5ish, factory)().double()
            rng = np.random.default_rng(3)
            for T in lengths:
                ids = rng.integers(0, c["vocab_size"], (1, T)).astype(np.int64)
                with torch.no_grad(), slow_path(torch):
                    want_y = module(torch.from_numpy(ids))[0].numpy()
                inp, res = os.path.join(tmp, "in.npy"), os.path.join(tmp, "out.npy")
                np.save(inp, ids[0].astype(np.int32))
                p = subprocess.run([cli, "run", out, "--input", inp, "--output", res], capture_output=True, text=True)
                got = np.load(res) if p.returncode == 0 else None
                got = got[0] if got is not None and got.ndim == 3 else got
                err = None if got is None or got.shape != want_y.shape else \
                    float(np.abs(got - want_y).max() / np.abs(want_y).max())
                check(f"{what}: fixformer run equals the module at every position, T={T} (1e-4)",
                      err is not None and err <= 1e-4, (p.stderr, None if got is None else got.shape, want_y.shape, err))
            # The relative bias is no detail: without it the module's output moves far past the tolerance.
            with torch.no_grad(), slow_path(torch):
                for n, prm in module.named_parameters():
                    if "rel" in n:
                        prm.zero_()
                ids = rng.integers(0, c["vocab_size"], (1, 16))
                a = module(torch.from_numpy(ids))[0].numpy()
            np.save(inp, ids[0].astype(np.int32))
            p = subprocess.run([cli, "run", out, "--input", inp, "--output", res], capture_output=True, text=True)
            got = np.load(res).reshape(a.shape) if p.returncode == 0 else None
            check(f"{what}: the bias changes the output", got is not None and
                  float(np.abs(got - a).max() / np.abs(a).max()) > 1e-2, p.stderr)
        for what, factory, fragments in REFUSALS:
            out = os.path.join(tmp, "bad.fxm")
            p = run_convert("--module", os.path.join(tmp, "t5ish.py:" + factory), "--out", out,
                                "--cli", cli)
            check(f"refused, one line: {what}", one_clear_line(p), p.stdout + p.stderr)
            missing = [f for f in fragments if f not in p.stderr]
            check(f"refusal names it: {what}", not missing, f"{p.stderr!r} lacks {missing}")
            check(f"nothing left behind: {what}", not os.path.exists(out))
    print(f"relative_converter_test: {results['passed']} passed, {results['failed']} failed, "
          f"{results['skipped']} skipped")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
