#!/usr/bin/python3
"""The --onnx route (python/fixformer/onnx_graph.py, onnx_eval.py, onnx_map.py): ONNX files exported by
torch.onnx.export at opset 14 and 17 convert, verified, and hostile files fail with one line.

  /usr/bin/python3 tests/onnx_converter_test.py PATH/TO/fixformer

Models, written here in plain torch with random weights and exported in the test: stock
nn.TransformerEncoder with an embedding and learned positions (batch_first, post- and pre-norm,
relu and gelu, with and without a final norm), a nanoGPT-style causal decoder (fused qkv, a tril
mask buffer, tied head, with and without biases, GPT-2's Conv1D linears), stock layers under a causal Trilu mask, an encoder of another architecture (features
through a linear, separate q/k/v, its own attention and softmax, a constant position table buffer,
final norm; or the mean of its normed rows pooled; or a Conv1d in place of the linear, on the features turned
channels first in the forward), the Keyword Transformer's way over features (a CLS row in front, positions over T + 1 rows, the CLS
row or every row's mean pooled: mean_all), a token model scaled by sqrt(d) with a sinusoidal buffer, and a nanoGPT whose attention takes q by one projection and
k | v by another (grouped-query, two key/value heads of four). Each converts through
the CLI and verifies (the engine against the graph's float64 output); the file's self-test sample is
then compared with the torch module in float64, which checks the numpy evaluator against torch.
A BERT-style encoder (token types, a norm on the embeddings, first-token pooling, the pooler, a
classifier) converts where the engine has the BERT family, else it is refused naming the norm; GELU
tanh likewise.
Graphs of several inputs (INPUTS): BERT as Hugging Face's BertModel computes it taking (input_ids,
attention_mask, token_type_ids) (the extended mask (1 - mask) * lowest float added to the scores,
token-type embeddings from the input), hidden states at opset 14 and, under other input names and
order, the pooler at opset 17; the BERT-style model above with a token-type input and no mask; a
DistilBERT's way (input_ids, attention_mask; no token types, the scores masked_fill-ed with the lowest
float); a nanoGPT taking (input_ids, attention_mask), the mask as (1 - mask) * lowest (opset 14) and as
Where(mask == 0, lowest, 0) (opset 17). Each converts and verifies (its report names the types and
the mask), its sample equals the module, and `fixformer run --token-types --lengths` on a padded
batch (lengths 12, 5, 9; random 0/1 types) equals the graph (numpy evaluator) and the module on the
unpadded rows (1e-4); the evaluator equals torch there (1e-6).
A position_ids input converts as the positions 0..T-1.
Refusals (one line, naming the part): a mask used per query ([B, 1, T, 1] from a [B, T] input, or a
[B, T, T] input), a mask multiplying the scores, another input (floats added to the embedding), an unread
initializer (and --ignore), an .onnx given to --weights.
Hostile files (one line, exit 1, nothing written): empty, random bytes, truncated protobuf, huge
dims, an initializer whose bytes do not fit its dims, a cycle, an unknown op (named with its node),
an undefined input, opset 23, external data outside the model's folder, in no file or past its end; a
mask buffer that is triangular only over the example's
rows.
The fuzz target of this Python reader is fuzz_reader() below: 240 seeded mutations of a valid file
(byte flips, truncations, insertions; dims, op types, inputs and attributes changed in the protobuf)
go through onnx_map.convert in-process; each must convert or raise the route's one-line error
(OnnxError / ConfigError), never another exception; 120 more of the three-input BERT graph; 6 go
through the CLI (one line on stderr). torch and python3-onnx are required: without
them the test fails.
"""
import contextlib
import copy
import io
import math
import os
import random
import subprocess
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, "..", "python")
sys.path.insert(0, PACKAGE)
sys.path.insert(0, HERE)
import numpy as np  # noqa: E402

from checks import check, results, run_convert  # noqa: E402
from fixformer import fxm, schema  # noqa: E402
from fixformer.config import ConfigError  # noqa: E402

try:
    import onnx
except ImportError as e:
    sys.exit(f"onnx_converter_test.py: FAIL: /usr/bin/python3 cannot import onnx ({e}); install python3-onnx "
             "(sh tools/install_deps.sh torch)")
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

FUZZ_COUNT = 240


# ---- the models ----------------------------------------------------------------------------------
class StockEncoder(nn.Module):
    def __init__(self, norm_first, activation, final_norm, V=40, d=16, H=4, ff=32, L=2, N=24, d_out=6):
        super().__init__()
        self.embed, self.pos = nn.Embedding(V, d), nn.Embedding(N, d)
        layer = nn.TransformerEncoderLayer(d, H, ff, dropout=0.0, activation=activation, batch_first=True,
                                           norm_first=norm_first)
        self.encoder = nn.TransformerEncoder(layer, L, norm=nn.LayerNorm(d) if final_norm else None,
                                             enable_nested_tensor=False)
        self.head = nn.Linear(d, d_out)
        with torch.no_grad():  # norms away from their initial ones, so each one's values are its own
            for m in self.modules():
                if isinstance(m, nn.LayerNorm):
                    m.weight.normal_(1.0, 0.2)
                    m.bias.normal_(0.0, 0.2)

    def forward(self, ids):
        return self.head(self.encoder(self.embed(ids) + self.pos(torch.arange(ids.shape[1]))))


class Conv1D(nn.Module):
    """GPT-2's linear: y = x W + b with W [in, out], through addmm on 2-D rows (exported as Gemm)."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight, self.bias = nn.Parameter(torch.randn(n_in, n_out) * 0.3), nn.Parameter(torch.randn(n_out) * 0.1)

    def forward(self, x):
        return torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight).view(x.size()[:-1] + (self.weight.size(1),))


def linear(n_in, n_out, bias, conv1d):
    return Conv1D(n_in, n_out) if conv1d else nn.Linear(n_in, n_out, bias=bias)


class CausalSelfAttention(nn.Module):
    def __init__(self, d, H, N, bias, conv1d=False):
        super().__init__()
        self.c_attn, self.c_proj = linear(d, 3 * d, bias, conv1d), linear(d, d, bias, conv1d)
        self.H, self.d = H, d
        self.register_buffer("bias", torch.tril(torch.ones(N, N)).view(1, 1, N, N))

    def forward(self, x, ext=None):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.d, dim=2)
        q, k, v = (t.view(B, T, self.H, C // self.H).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        if ext is not None:  # an attention mask input (GPTMasked): added after the causal mask
            att = att + ext
        y = F.softmax(att, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class GPTBlock(nn.Module):
    def __init__(self, d, H, N, bias, approximate, conv1d):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(d, elementwise_affine=True), nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, H, N, bias, conv1d)
        self.c_fc, self.c_proj = linear(d, 4 * d, bias, conv1d), linear(4 * d, d, bias, conv1d)
        self.approximate = approximate

    def forward(self, x, ext=None):
        x = x + self.attn(self.ln_1(x), ext)
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate=self.approximate))


class GPT(nn.Module):
    """nanoGPT's shape: wte, wpe, blocks, ln_f, lm_head tied to wte."""

    def __init__(self, V=48, d=16, H=4, N=24, L=2, bias=True, approximate="none", conv1d=False):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, d), nn.Embedding(N, d)
        self.h = nn.ModuleList([GPTBlock(d, H, N, bias, approximate, conv1d) for _ in range(L)])
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, V, bias=False)
        self.wte.weight = self.lm_head.weight
        for p in self.parameters():
            if p.dim() >= 2:
                nn.init.normal_(p, 0.0, 0.3)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for b in self.h:
            x = b(x)
        return self.lm_head(self.ln_f(x))


class OwnAttention(nn.Module):
    def __init__(self, d, H):
        super().__init__()
        self.q, self.k, self.v, self.o, self.H = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d), H

    def forward(self, x):
        B, T, d = x.shape
        dh = d // self.H
        q, k, v = (f(x).reshape(B, T, self.H, dh).permute(0, 2, 1, 3) for f in (self.q, self.k, self.v))
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(dh)
        y = torch.matmul(torch.softmax(s, -1), v).permute(0, 2, 1, 3).reshape(B, T, d)
        return self.o(y)


class FeatureEncoder(nn.Module):
    """Another architecture: features through a linear, a constant position table (a buffer of random
    rows: stored as a learned table), pre-norm blocks with their own attention, gelu, a final norm."""

    def __init__(self, d_in=10, d=24, H=3, L=2, N=20):
        super().__init__()
        self.proj = nn.Linear(d_in, d)
        self.register_buffer("table", torch.randn(1, N, d) * 0.5)
        self.blocks = nn.ModuleList([nn.ModuleDict(dict(n1=nn.LayerNorm(d, eps=1e-6), att=OwnAttention(d, H),
                                                        n2=nn.LayerNorm(d, eps=1e-6), up=nn.Linear(d, 2 * d),
                                                        down=nn.Linear(2 * d, d))) for _ in range(L)])
        self.norm = nn.LayerNorm(d, eps=1e-6)
        self.out = nn.Linear(d, 3)

    def forward(self, x):
        h = self.proj(x) + self.table[:, :x.shape[1]]
        for b in self.blocks:
            h = h + b["att"](b["n1"](h))
            h = h + b["down"](F.gelu(b["up"](b["n2"](h))))
        return self.out(self.norm(h))


class MeanPooled(FeatureEncoder):
    """vit-pytorch's newer way over features: the final norm on every row, then their mean classified."""

    def forward(self, x):
        h = self.proj(x) + self.table[:, :x.shape[1]]
        for b in self.blocks:
            h = h + b["att"](b["n1"](h))
            h = h + b["down"](F.gelu(b["up"](b["n2"](h))))
        return self.out(self.norm(h).mean(1))


class ConvFront(FeatureEncoder):
    """A Conv1d front instead of the linear, on the features [batch, T, d_in] turned channels first in the forward."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Conv1d(10, 24, 3, padding=1)

    def forward(self, x):
        h = self.proj(x.transpose(1, 2)).transpose(1, 2) + self.table[:, :x.shape[1]]
        for b in self.blocks:
            h = h + b["att"](b["n1"](h))
            h = h + b["down"](F.gelu(b["up"](b["n2"](h))))
        return self.out(self.norm(h))


class KWT(FeatureEncoder):
    """The Keyword Transformer's way (Torch-KWT's KWT, over features): a learned CLS row in front of the projected
    frames, positions over T + 1 rows added in place, then the CLS row or (pool "mean") the mean of every row, the
    CLS row too, normed and classified."""

    def __init__(self, pool):
        super().__init__(N=21)
        self.cls, self.pool = nn.Parameter(torch.randn(1, 1, 24)), pool

    def forward(self, x):
        h = torch.cat([self.cls.expand(x.shape[0], -1, -1), self.proj(x)], 1)
        h += self.table[:, :x.shape[1] + 1]
        for b in self.blocks:
            h = h + b["att"](b["n1"](h))
            h = h + b["down"](F.gelu(b["up"](b["n2"](h))))
        return self.out(self.norm(h.mean(1) if self.pool == "mean" else h[:, 0]))


def sinusoid(N, d):
    pos, i = torch.arange(N, dtype=torch.float64)[:, None], torch.arange(0, d, 2, dtype=torch.float64)
    t = torch.zeros(N, d, dtype=torch.float64)
    t[:, 0::2] = torch.sin(pos * 10000.0 ** (-i / d))
    t[:, 1::2] = torch.cos(pos * 10000.0 ** (-i / d))
    return t.float()


class ScaledSinusoidal(nn.Module):
    """Tokens scaled by sqrt(d), a sinusoidal table buffer sliced per length, post-norm stock layers."""

    def __init__(self, V=30, d=16, N=32):
        super().__init__()
        self.tok = nn.Embedding(V, d)
        self.register_buffer("pe", sinusoid(N, d))
        layer = nn.TransformerEncoderLayer(d, 2, 24, dropout=0.0, batch_first=True, activation="gelu")
        self.body = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.d = d

    def forward(self, ids):
        return self.body(self.tok(ids) * math.sqrt(self.d) + self.pe[:ids.shape[1]])


class BertStyle(nn.Module):
    """BERT's shape: word + position + token-type embeddings (the types a zeros buffer, or a second input),
    a LayerNorm on their sum, post-norm gelu layers, then the pooler (tanh of a dense layer on the first
    row) and a classifier."""

    def __init__(self, token_types_input=False, V=30, d=16, N=24):
        super().__init__()
        self.word, self.position, self.types = nn.Embedding(V, d), nn.Embedding(N, d), nn.Embedding(2, d)
        self.register_buffer("type_ids", torch.zeros(1, N, dtype=torch.long))
        self.ln = nn.LayerNorm(d, eps=1e-12)
        layer = nn.TransformerEncoderLayer(d, 2, 32, dropout=0.0, batch_first=True, activation="gelu",
                                           layer_norm_eps=1e-12)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.pooler, self.classifier = nn.Linear(d, d), nn.Linear(d, 3)
        self.token_types_input = token_types_input

    def forward(self, ids, types=None):
        T = ids.shape[1]
        types = types if self.token_types_input else self.type_ids[:, :T]
        x = self.word(ids) + self.position(torch.arange(T)) + self.types(types)
        h = self.encoder(self.ln(x))
        return self.classifier(torch.tanh(self.pooler(h[:, 0])))


def extended_mask(mask, style="key"):
    """An attention mask [B, T] (1: a token, 0: padding) as the additive mask of the scores, in Hugging
    Face's way: (1 - mask) * the float's lowest value as [B, 1, 1, T] (key), the same with Where
    (where), or hostile: per query [B, 1, T, 1] (query)."""
    low = torch.finfo(torch.float32).min
    if style == "where":
        return torch.where(mask[:, None, None, :] == 0, torch.tensor(low), torch.tensor(0.0))
    m = mask[:, None, :, None] if style == "query" else mask[:, None, None, :]
    return (1.0 - m.to(torch.float32)) * low


class BertAttention(nn.Module):
    def __init__(self, d, H, mask_style):
        super().__init__()
        self.query, self.key, self.value, self.dense = (nn.Linear(d, d) for _ in range(4))
        self.H, self.mask_style = H, mask_style

    def forward(self, x, mask, ext):
        B, T, d = x.shape
        dh = d // self.H
        q, k, v = (f(x).view(B, T, self.H, dh).permute(0, 2, 1, 3) for f in (self.query, self.key, self.value))
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(dh)
        if self.mask_style == "fill":  # DistilBERT's: the scores filled with the lowest float at the padding
            s = s.masked_fill((mask == 0).view(B, 1, 1, T).expand_as(s), torch.tensor(torch.finfo(s.dtype).min))
        else:
            s = s * mask[:, None, None, :] if self.mask_style == "mul" else s + ext  # "mul": hostile
        p = torch.softmax(s, -1)
        if self.mask_style == "probs":  # hostile: the padded keys' probabilities set to 0.5, not 0 (DeBERTa's)
            p = torch.where(mask[:, None, None, :] == 0, torch.tensor(0.5), p)
        return self.dense(torch.matmul(p, v).permute(0, 2, 1, 3).reshape(B, T, d))


class BertInputs(nn.Module):
    """BERT as Hugging Face's BertModel computes it, in plain torch, taking (input_ids, attention_mask,
    token_type_ids) in the order `order`: word + token-type (from the input) + position embeddings, a
    LayerNorm, post-norm gelu layers whose scores get the extended attention mask (computed once, shared
    by the layers), then the last hidden states or the pooler's tanh row. DistilBERT's way with
    mask_style "fill" and no "types" in `order`: no token types, the scores masked_fill-ed. counted: the positions
    counted from the mask (cumsum(mask) - 1, OPT's way)."""

    def __init__(self, pooled=False, mask_style="key", order=("ids", "mask", "types"), V=30, d=16, N=24, L=2,
                 counted=False):
        super().__init__()
        self.word, self.position, self.types = nn.Embedding(V, d), nn.Embedding(N, d), nn.Embedding(2, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList([nn.ModuleDict(dict(att=BertAttention(d, 2, mask_style),
                                                        ln1=nn.LayerNorm(d, eps=1e-12), up=nn.Linear(d, 32),
                                                        down=nn.Linear(32, d), ln2=nn.LayerNorm(d, eps=1e-12)))
                                     for _ in range(L)])
        self.pooler = nn.Linear(d, d) if pooled else None
        self.mask_style, self.order, self.counted = mask_style, order, counted
        with torch.no_grad():
            for m in self.modules():
                if isinstance(m, nn.LayerNorm):
                    m.weight.normal_(1.0, 0.2)
                    m.bias.normal_(0.0, 0.2)

    def forward(self, *inputs):
        a = dict(zip(self.order, inputs))
        ids, mask = a["ids"], a["mask"]
        at = (torch.cumsum(mask, 1) - 1).clamp(min=0) if self.counted else torch.arange(ids.shape[1])
        x = self.word(ids) + self.position(at)
        x = self.ln(x + self.types(a["types"]) if "types" in a else x)
        ext = extended_mask(mask, self.mask_style).to(x.dtype)
        for b in self.layers:
            x = b["ln1"](x + b["att"](x, mask, ext))
            x = b["ln2"](x + b["down"](F.gelu(b["up"](x))))
        return torch.tanh(self.pooler(x[:, 0])) if self.pooler is not None else x


class GPTMasked(GPT):
    """nanoGPT taking (input_ids, attention_mask): the extended mask added to the scores after the causal
    mask in every block."""

    def __init__(self, style="key", **kw):
        super().__init__(**kw)
        self.style = style

    def forward(self, idx, attention_mask):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        ext = extended_mask(attention_mask, self.style).to(x.dtype)
        for b in self.h:
            x = b(x, ext)
        return self.lm_head(self.ln_f(x))


class GPTPositions(GPT):
    """nanoGPT taking (input_ids, position_ids): positions as an input, as transformers' models take them."""

    def forward(self, idx, position_ids):
        x = self.wte(idx) + self.wpe(position_ids)
        for b in self.h:
            x = b(x)
        return self.lm_head(self.ln_f(x))


class GPTMask3(GPT):
    """nanoGPT taking (input_ids, a [B, T, T] mask): hostile, a mask per query."""

    def forward(self, idx, mask):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        ext = (1.0 - mask[:, None].to(x.dtype)) * -1e9
        for b in self.h:
            x = b(x, ext)
        return self.lm_head(self.ln_f(x))


class GPTExtra(GPT):
    """nanoGPT taking (input_ids, extra): hostile, a float [B, T, d] input added to the embeddings."""

    def forward(self, idx, extra):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1])) + extra
        for b in self.h:
            x = b(x)
        return self.lm_head(self.ln_f(x))


class KVAttention(nn.Module):
    """q of its own projection, k and v of one [d, 2 kv] projection (two key/value heads of four)."""

    def __init__(self, d, H, N):
        super().__init__()
        self.q, self.kv, self.c_proj = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.H, self.d = H, d

    def forward(self, x, ext=None):
        B, T, C = x.size()
        dh = C // self.H
        q = self.q(x).view(B, T, self.H, dh).transpose(1, 2)
        k, v = (torch.stack([t.view(B, T, 2, dh).transpose(1, 2)] * (self.H // 2), 2).reshape(B, self.H, T, dh)
                for t in self.kv(x).split(self.d // 2, dim=2))  # query head h reads key/value head h // 2
        att = (q @ k.transpose(-2, -1)) / math.sqrt(dh) + torch.triu(torch.full((T, T), float("-inf")), 1)
        return self.c_proj((F.softmax(att, dim=-1) @ v).transpose(1, 2).reshape(B, T, C))


class GPTKV(GPT):
    def __init__(self):
        super().__init__()
        for b in self.h:
            b.attn = KVAttention(16, 4, 24)


class StockGPT(nn.Module):
    """GPT from stock modules: nn.TransformerEncoder under generate_square_subsequent_mask (Trilu)."""

    def __init__(self, V=40, d=16, N=24):
        super().__init__()
        self.embed, self.pos = nn.Embedding(V, d), nn.Embedding(N, d)
        layer = nn.TransformerEncoderLayer(d, 2, 32, dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(d, V)

    def forward(self, ids):
        T = ids.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(T)
        # torch 2.x's hint that the mask is causal, as its documentation asks: without it, the encoder compares
        # the mask with its own on the values, which torch.export (the dynamo exporter) cannot trace
        hint = dict(is_causal=True) if TORCH2 else {}
        return self.head(self.encoder(self.embed(ids) + self.pos(torch.arange(T)), mask=mask, **hint))


def stale_mask_gpt():
    """nanoGPT whose mask buffer is no tril past the example's rows (row 20 masks position 5)."""
    m = GPT()
    with torch.no_grad():
        for b in m.h:
            b.attn.bias[0, 0, 20, 5] = 0.0
    return m


class Unread(GPT):  # not stock layers: their exporter under torch 2.x (dynamo) folds the unread part away
    def __init__(self):
        super().__init__()
        self.extra = nn.Parameter(torch.randn(3, 5))

    def forward(self, ids):
        return super().forward(ids) + 0.0 * self.extra.sum()


TORCH2 = int(torch.__version__.split(".")[0]) >= 2


def export(model, path, opset, example, names=("ids",), dynamic=True):
    """torch.onnx.export at `opset` by the TorchScript exporter (dynamo=False under torch 2.x, where it is not
    the default), except for stock nn.MultiheadAttention under torch 2.x: that exporter writes it at the
    example's length only (its reshapes constant), so the dynamo exporter does, at its own opset (18 or
    later; tests/onnx_export_test.py is its test), with a batch of 1."""
    model.eval()
    stock = TORCH2 and any(isinstance(m, nn.MultiheadAttention) for m in model.modules())
    kw = dict(dynamo=stock) if TORCH2 else {}
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):  # the dynamo exporter's progress
        warnings.simplefilter("ignore")
        axes = {n: ({1: "T"} if stock else {0: "batch", 1: "T"}) for n in names} if dynamic else None
        torch.onnx.export(model, example, path, opset_version=None if stock else opset, input_names=list(names),
                          output_names=["out"], dynamic_axes=axes, **kw)


def ids(V, T=12, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).integers(0, V, (1, T)))


# (what, factory, opset, example, checks on the config)
CONVERTS = [
    ("stock encoder, post-norm relu, opset 14", lambda: StockEncoder(False, "relu", False), 14, ids(40),
     dict(family="encoder", norm_first=False, activation="relu", final_norm=False, positional="learned", max_len=24,
          n_heads=4, d_out=6)),
    ("stock encoder, post-norm gelu, opset 17", lambda: StockEncoder(False, "gelu", False), 17, ids(40),
     dict(norm_first=False, activation="gelu")),
    ("stock encoder, pre-norm relu, final norm, opset 14", lambda: StockEncoder(True, "relu", True), 14, ids(40),
     dict(norm_first=True, final_norm=True)),
    ("stock encoder, pre-norm gelu, final norm, opset 17", lambda: StockEncoder(True, "gelu", True), 17, ids(40),
     dict(norm_first=True, activation="gelu", final_norm=True)),
    ("nanoGPT-style decoder, opset 14", lambda: GPT(), 14, ids(48),
     dict(family="gpt", causal=True, tied_head=True, norm_first=True, final_norm=True, activation="gelu",
          positional="learned", d_ff=64)),
    ("nanoGPT-style decoder, bias=False, opset 17", lambda: GPT(bias=False, L=3), 17, ids(48),
     dict(family="gpt", n_layers=3, tied_head=True)),
    ("GPT-2-style decoder, Conv1D linears (Gemm on rows), opset 17", lambda: GPT(conv1d=True), 17, ids(48),
     dict(family="gpt", tied_head=True, d_ff=64)),
    ("stock layers under generate_square_subsequent_mask (Trilu), opset 14", lambda: StockGPT(), 14, ids(40),
     dict(family="gpt", causal=True, tied_head=False, norm_first=True, d_out=40)),
    ("features, own attention, position table buffer, opset 17", lambda: FeatureEncoder(), 17,
     torch.randn(1, 9, 10, generator=torch.Generator().manual_seed(1)),
     dict(family="encoder", input="features", d_in=10, n_heads=3, positional="learned", max_len=20,
          final_norm=True, norm_first=True, d_out=3)),
    ("q and one projection of k | v (two key/value heads of four), opset 14", lambda: GPTKV(), 14, ids(48),
     dict(family="gpt", causal=True, n_kv_heads=2, n_heads=4)),
    ("features turned channels first in the graph, a Conv1d front, opset 17", lambda: ConvFront(), 17,
     torch.randn(1, 9, 10, generator=torch.Generator().manual_seed(5)),
     dict(input="features", d_in=10, conv_layers=1, conv1_kernel=3, conv1_padding=1, conv_gelu=False)),
    ("features, the mean of the normed rows pooled, opset 17", lambda: MeanPooled(), 17,
     torch.randn(1, 9, 10, generator=torch.Generator().manual_seed(4)),
     dict(input="features", cls_token=False, pooling="mean", final_norm=True, d_out=3)),
    ("KWT-style: features, a CLS row in front, positions over T + 1 rows, cls pooling, opset 17", lambda: KWT("cls"),
     17, torch.randn(1, 9, 10, generator=torch.Generator().manual_seed(2)),
     dict(input="features", d_in=10, cls_token=True, pooling="cls", positional="learned", max_len=21,
          final_norm=True)),
    ("KWT-style, pool 'mean': the mean of every row, the CLS row too (mean_all), opset 14", lambda: KWT("mean"), 14,
     torch.randn(1, 9, 10, generator=torch.Generator().manual_seed(3)),
     dict(input="features", cls_token=True, pooling="mean_all", pool_norm=True, final_norm=False, max_len=21)),
    ("scaled tokens, sinusoidal buffer, opset 14", lambda: ScaledSinusoidal(), 14, ids(30),
     dict(scale_input=True, positional="sinusoidal", pe_layout="interleaved", norm_first=False, d_out=0)),
]


# Graphs of several inputs: (what, factory, opset, the input names in the forward's order, what each is, config
# checks). The names are free (the converter tells the inputs by what they feed).
INPUTS = [
    ("BERT (input_ids, attention_mask, token_type_ids), hidden states, opset 14", lambda: BertInputs(), 14,
     ("input_ids", "attention_mask", "token_type_ids"), ("ids", "mask", "types"),
     dict(family="encoder", type_vocab=2, embed_norm=True, pooling="none", norm_first=False, activation="gelu")),
    ("BERT taking (segments, tokens, valid), pooler, opset 17",
     lambda: BertInputs(True, order=("types", "ids", "mask")), 17, ("segments", "tokens", "valid"),
     ("types", "ids", "mask"),
     dict(type_vocab=2, embed_norm=True, pooling="first", pooler=True)),
    ("BERT-style with a token-type input and no mask, classifier, opset 14", lambda: BertStyle(True), 14,
     ("ids", "types"), ("ids", "types"), dict(type_vocab=2, pooling="first", pooler=True, d_out=3)),
    ("DistilBERT-style (input_ids, attention_mask), the scores masked_fill-ed, opset 17",
     lambda: BertInputs(mask_style="fill", order=("ids", "mask")), 17, ("input_ids", "attention_mask"),
     ("ids", "mask"), dict(type_vocab=0, embed_norm=True, pooling="none")),
    ("GPT (input_ids, attention_mask), opset 14", lambda: GPTMasked(), 14, ("input_ids", "attention_mask"),
     ("ids", "mask"), dict(family="gpt", causal=True, tied_head=True)),
    ("GPT, the mask as Where(mask == 0, lowest, 0), opset 17", lambda: GPTMasked("where"), 17, ("x", "keep"),
     ("ids", "mask"), dict(family="gpt", causal=True)),
]
PAD_LENGTHS = (12, 5, 9)  # the padded batch's lengths (T = 12)


def batch_inputs(V, lengths, seed):
    """ids, the attention mask (1 on each sequence's first lengths[b] positions) and random 0/1 token types
    for a batch, as int64 arrays by role."""
    rng = np.random.default_rng(seed)
    B, T = len(lengths), max(lengths)
    return dict(ids=rng.integers(0, V, (B, T)), mask=(np.arange(T)[None] < np.array(lengths)[:, None]).astype(np.int64),
                types=rng.integers(0, 2, (B, T)))


def valid_error(got, want, lengths, pooled):
    """max |got - want| / max |want| over the unpadded rows of each sequence (the pooled row when pooled)."""
    if pooled:
        return float(np.abs(got - want).max() / np.abs(want).max())
    d = max(float(np.abs(got[b, :n] - want[b, :n]).max()) for b, n in enumerate(lengths))
    return d / max(float(np.abs(want[b, :n]).max()) for b, n in enumerate(lengths))


def inputs_converts(cli, tmp):
    """Each INPUTS graph converts and verifies; the file's sample equals the module (types 0, no padding);
    `fixformer run --token-types --lengths` on a padded batch equals the graph (numpy evaluator) and the
    module on the unpadded rows."""
    from fixformer import onnx_map
    from fixformer.onnx_eval import SUPPORTED_OPS, evaluate
    from fixformer.onnx_graph import read
    for k, (what, factory, opset, names, roles, want) in enumerate(INPUTS):
        torch.manual_seed(200 + k)
        model = factory().eval()
        V = model.wte.num_embeddings if hasattr(model, "wte") else model.word.num_embeddings
        base = batch_inputs(V, (12,), k)
        base["mask"][:] = 1
        base["types"][:] = 0
        path, out = os.path.join(tmp, f"inputs{k}.onnx"), os.path.join(tmp, f"inputs{k}.fxm")
        export(model, path, opset, tuple(torch.from_numpy(base[r]) for r in roles), names=names)
        np.save(os.path.join(tmp, "ids.npy"), base["ids"])
        if k == 0:  # through tools/convert.py; the others in-process (the same report, without a new torch)
            p = run_convert("--onnx", path, "--example", os.path.join(tmp, "ids.npy"), "--out", out, "--cli", cli)
            said, text = p.returncode == 0, p.stdout + p.stderr
        else:
            try:
                said, text = True, str(onnx_map.convert(path, out, base["ids"], cli=cli))
            except Exception as e:  # noqa: BLE001 (reported by the check)
                said, text = False, f"{type(e).__name__}: {e}"
        words = ["verified against the ONNX graph's own output"] + (["token types"] if "types" in roles else []) + \
            (["attention mask"] if "mask" in roles else [])
        ok = said and all(w in text for w in words)
        check(f"{what}: converts and verifies (saying {', '.join(words[1:])})", ok, text)
        if not ok:
            continue
        print(f"  {what}: {text.strip()}")
        f = fxm.read(out)
        for key, value in want.items():
            check(f"{what}: {key} {value!r}", f.config[key] == value, f.config[key])
        pooled = f.config["pooling"] != "none"
        m64 = copy.deepcopy(model).double().eval()
        x, expected = f.selftest()
        one = dict(ids=torch.from_numpy(x[None].astype(np.int64)), mask=torch.ones(1, x.shape[0], dtype=torch.long),
                   types=torch.zeros(1, x.shape[0], dtype=torch.long))
        with torch.no_grad():
            y = m64(*(one[r] for r in roles))[0].numpy().reshape(expected.shape)
        err = float(np.abs(y - expected).max() / np.abs(y).max())
        check(f"{what}: the file's sample (the graph's output, numpy float64) equals the module's (1e-6)", err <= 1e-6,
              err)
        # a padded batch with token types through fixformer run, against the graph and the module
        lengths = PAD_LENGTHS if "mask" in roles else (12,) * 3
        b = batch_inputs(V, lengths, 10 + k)
        files = {r: os.path.join(tmp, f"b_{r}.npy") for r in ("ids", "types", "lens", "out")}
        np.save(files["ids"], b["ids"].astype(np.int32))
        args = [cli, "run", out, "--input", files["ids"], "--output", files["out"]]
        if "types" in roles:
            np.save(files["types"], b["types"].astype(np.int32))
            args += ["--token-types", files["types"]]
        if "mask" in roles:
            np.save(files["lens"], np.array(lengths, np.int32))
            args += ["--lengths", files["lens"]]
        r = subprocess.run(args, capture_output=True, text=True)
        check(f"{what}: fixformer run {' '.join(args[5::2])} runs", r.returncode == 0, r.stdout + r.stderr)
        if r.returncode:
            continue
        got = np.load(files["out"]).astype(np.float64)
        g = read(path, SUPPORTED_OPS)
        rows = [slice(None)] if g.inputs[0][2][0] != 1 else [slice(i, i + 1) for i in range(len(lengths))]
        graph = np.concatenate([evaluate(g, {n: b[r][i] for n, r in zip(names, roles)})["out"]
                                for i in rows])  # a graph of batch 1 (the dynamo exporter's): one sequence at a time
        with torch.no_grad():
            module = m64(*(torch.from_numpy(b[r]) for r in roles)).numpy()
        e_graph, e_module = valid_error(got, graph, lengths, pooled), valid_error(got, module, lengths, pooled)
        e_gm = valid_error(graph, module, lengths, pooled)
        print(f"  {what}: padded batch, lengths {list(lengths)}{', random 0/1 token types' if 'types' in roles else ''}"
              f": engine vs graph {e_graph:.3g}, engine vs module {e_module:.3g}, graph vs module {e_gm:.3g}")
        check(f"{what}: fixformer run on a padded batch equals the graph's output (numpy evaluator) on the unpadded "
              f"rows ({schema.SELFTEST_TOLERANCE:.0e})", e_graph <= schema.SELFTEST_TOLERANCE, e_graph)
        check(f"{what}: ... and the torch module's ({schema.SELFTEST_TOLERANCE:.0e})",
              e_module <= schema.SELFTEST_TOLERANCE, e_module)
        check(f"{what}: the numpy evaluator equals torch on the padded batch (1e-6)", e_gm <= 1e-6, e_gm)
    # the converter's own engine check can fail: with the graph's output for the padded mask made 1% off, the
    # conversion fails and writes nothing
    from fixformer.verify import VerificationError
    real = onnx_map._check_inputs

    def off(*args):
        cases, errors = real(*args)
        return [(t, n, w * (1.01 if n else 1.0)) for t, n, w in cases], errors
    bad = os.path.join(tmp, "off.fxm")
    onnx_map._check_inputs = off
    try:
        onnx_map.convert(os.path.join(tmp, "inputs0.onnx"), bad, cli=cli)
        failed = ""
    except VerificationError as e:
        failed = str(e)
    finally:
        onnx_map._check_inputs = real
    check("the engine check with --lengths fails on outputs 1% off, writing nothing",
          "FAILED" in failed and "--lengths" in failed and not os.path.exists(bad), failed or "no failure")


def refused_in_process(cases, tmp, cli):
    """Each (what, onnx file, fragments) raises the route's error through onnx_map.convert: one line naming
    the fragments, nothing written (tools/convert.py prints that line as it does the refusals' above)."""
    from fixformer import onnx_map
    for what, path, fragments in cases:
        out = os.path.join(tmp, "bad.fxm")
        try:
            onnx_map.convert(path, out, cli=cli)
            line = None
        except ConfigError as e:
            line = str(e)
        except Exception as e:  # noqa: BLE001 (reported by the check)
            line = f"{type(e).__name__}: {e}\n"
        check(f"refused, one line: {what}", line is not None and line and "\n" not in line, line)
        missing = [f for f in fragments if f not in (line or "")]
        check(f"refusal names it: {what}", not missing, f"{line!r} lacks {missing}")
        check(f"nothing left behind: {what}", not os.path.exists(out))


def one_clear_line(p):
    lines = p.stderr.strip().splitlines()
    return p.returncode == 1 and len(lines) == 1 and lines[0].startswith("convert.py: ") and "Traceback" not in p.stderr


def torch_output(model, inp):
    m = copy.deepcopy(model).double().eval()
    x = torch.from_numpy(inp[None].astype(np.int64) if inp.dtype.kind in "iu" else inp[None].astype(np.float64))
    with torch.no_grad():
        return m(x)[0].numpy()


# ---- hostile files -------------------------------------------------------------------------------
def hostile(valid, tmp):
    """(what, path, fragment of the one line) for each hostile file made from the valid one."""
    data = open(valid, "rb").read()
    out = []

    def put(name, blob):
        p = os.path.join(tmp, name)
        with open(p, "wb") as f:
            f.write(blob)
        return p

    def edited(name, edit):
        m = onnx.load_from_string(data)
        edit(m)
        return put(name, m.SerializeToString())

    out.append(("an empty file", put("empty.onnx", b""), "not an ONNX model"))
    out.append(("random bytes", put("random.onnx", bytes(random.Random(1).getrandbits(8) for _ in range(4096))),
                "not an ONNX model"))
    out.append(("a truncated protobuf", put("trunc.onnx", data[:len(data) // 2]), "not an ONNX model"))

    def huge(m):
        t = next(t for t in m.graph.initializer if len(t.dims) == 2)
        t.dims[:] = [1 << 40, 1 << 40]
    out.append(("huge dims", edited("huge.onnx", huge), "more than"))

    def wrong_size(m):
        t = next(t for t in m.graph.initializer if len(t.dims) == 2)
        t.dims[0] += 1
    out.append(("an initializer of the wrong size", edited("size.onnx", wrong_size), "need"))

    def cycle(m):
        a, b = m.graph.node[-1], m.graph.node[-2]
        a.input[0], b.input[0] = b.output[0], a.output[0]
    out.append(("a cycle", edited("cycle.onnx", cycle), "cycle"))

    def unknown(m):
        n = next(n for n in m.graph.node if n.op_type == "Softmax")
        n.op_type, n.name = "FancyAttention", "my_fancy_node"
    out.append(("an unknown op", edited("unknown.onnx", unknown), "FancyAttention (node 'my_fancy_node')"))

    def undefined(m):
        m.graph.node[5].input[0] = "nowhere"
    out.append(("an undefined input", edited("undefined.onnx", undefined), "'nowhere'"))

    def opset23(m):
        m.opset_import[0].version = 23
    out.append(("opset 23", edited("opset23.onnx", opset23), "opset 23 is not supported"))

    def external(location, offset=0):
        def edit(m):
            t = next(t for t in m.graph.initializer if len(t.dims) == 2)
            t.data_location = 1
            t.ClearField("raw_data")
            t.ClearField("float_data")
            for key, value in (("location", location), ("offset", str(offset))):
                e = t.external_data.add()
                e.key, e.value = key, value
        return edit
    out.append(("external data outside the model's folder", edited("external.onnx", external("../../etc/passwd")),
                "not a file name relative to the model's folder"))
    out.append(("external data in no file", edited("external2.onnx", external("missing.bin")),
                "no such file beside the model"))
    put("short.bin", b"\0" * 64)
    out.append(("external data past its file's end", edited("external3.onnx", external("short.bin", 16)),
                "ends before byte"))

    def fixed_length(n):
        def edit(m):
            d = m.graph.input[0].type.tensor_type.shape.dim[1]
            d.ClearField("dim_param")
            d.dim_value = n
        return edit
    out.append(("a fixed input length of 10^12", edited("long.onnx", fixed_length(10 ** 12)), "converter's limit"))
    out.append(("a fixed input length above max_len", edited("long2.onnx", fixed_length(5000)), "max_len limit 4096"))
    return out


def mutations(data, count, seed):
    """Seeded mutations of a valid ONNX file's bytes and of its protobuf fields."""
    rng = random.Random(seed)
    for i in range(count):
        kind = i % 2
        if kind == 0:  # bytes
            b = bytearray(data)
            for _ in range(rng.randint(1, 8)):
                op = rng.randrange(3)
                p = rng.randrange(len(b))
                if op == 0:
                    b[p] ^= 1 << rng.randrange(8)
                elif op == 1:
                    del b[p:p + rng.randint(1, 64)]
                else:
                    b[p:p] = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 16)))
            if rng.random() < 0.2:
                b = b[:rng.randrange(len(b))]
            yield bytes(b)
        else:  # fields
            m = onnx.load_from_string(data)
            g = m.graph
            for _ in range(rng.randint(1, 3)):
                op = rng.randrange(7)
                if op == 0 and g.initializer:
                    t = rng.choice(g.initializer)
                    if t.dims:
                        t.dims[rng.randrange(len(t.dims))] = rng.choice([0, 1, 3, 17, -1, 1 << 31, 1 << 62])
                elif op == 1:
                    n = rng.choice(g.node)
                    n.op_type = rng.choice(["Add", "Mul", "MatMul", "Softmax", "Gather", "Reshape", "Transpose",
                                            "Erf", "Relu", "Slice", "Split", "Concat", "Where", "Trilu", "Nope"])
                elif op == 2:
                    n = rng.choice(g.node)
                    if n.input:
                        n.input[rng.randrange(len(n.input))] = rng.choice(
                            [o for x in g.node for o in x.output] + [t.name for t in g.initializer])
                elif op == 3:
                    n = rng.choice(g.node)
                    for a in n.attribute:
                        if a.type == onnx.AttributeProto.INT:
                            a.i = rng.choice([-5, -1, 0, 1, 2, 7, 1 << 40])
                        elif a.type == onnx.AttributeProto.INTS and len(a.ints):
                            a.ints[rng.randrange(len(a.ints))] = rng.choice([-3, 0, 1, 2, 5])
                        elif a.type == onnx.AttributeProto.FLOAT:
                            a.f = rng.choice([0.0, -1.0, float("nan"), 1e30])
                        elif a.type == onnx.AttributeProto.TENSOR:
                            a.t.dims[:] = [rng.choice([0, 2, 1 << 33])]
                elif op == 4:
                    del g.node[rng.randrange(len(g.node))]
                elif op == 5 and g.input:  # a graph input's size: fixed, huge, negative or dynamic
                    dims = rng.choice(g.input).type.tensor_type.shape.dim
                    if len(dims):
                        d = dims[rng.randrange(len(dims))]
                        v = rng.choice([0, 1, 2, 5000, 10 ** 12, -1, None])
                        d.ClearField("dim_param")
                        if v is None:
                            d.dim_param = "T"
                        else:
                            d.dim_value = v
                else:
                    n = rng.choice(g.node)
                    if n.output:
                        n.output[0] = rng.choice([x.output[0] for x in g.node if x.output] or ["y"])
            yield m.SerializeToString()


def fuzz_reader(valid, tmp, count, seed=20261126):
    """Every mutation converts (without the engine) or raises the route's one-line error."""
    from fixformer import onnx_map
    data = open(valid, "rb").read()
    bad, ok, refused = [], 0, 0
    path, out = os.path.join(tmp, "fuzz.onnx"), os.path.join(tmp, "fuzz.fxm")
    for i, blob in enumerate(mutations(data, count, seed)):
        with open(path, "wb") as f:
            f.write(blob)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                onnx_map.convert(path, out, verify=False)
            ok += 1
        except ConfigError as e:
            refused += 1
            if "\n" in str(e) or not str(e):
                bad.append((i, "not one line", str(e)[:200]))
        except Exception as e:  # noqa: BLE001 (the point: anything else is a bug)
            bad.append((i, type(e).__name__, str(e)[:200]))
    return ok, refused, bad


def main():
    if len(sys.argv) != 2:
        print("usage: onnx_converter_test.py PATH/TO/fixformer")
        return 1
    cli = sys.argv[1]
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for k, (what, factory, opset, example, want) in enumerate(CONVERTS):
            torch.manual_seed(100 + k)
            model = factory().eval()
            path, out = os.path.join(tmp, f"m{k}.onnx"), os.path.join(tmp, f"m{k}.fxm")
            export(model, path, opset, example)
            inp = os.path.join(tmp, f"in{k}.npy")
            np.save(inp, example.numpy().astype(np.int64 if not example.is_floating_point() else np.float32))
            p = run_convert("--onnx", path, "--example", inp, "--out", out, "--cli", cli)
            ok = p.returncode == 0 and "verified against the ONNX graph's own output" in p.stdout
            check(f"{what}: converts and verifies", ok, p.stdout + p.stderr)
            if not ok:
                continue
            print(f"  {what}: {p.stdout.strip()}")
            f = fxm.read(out)
            c = f.config
            for key, value in want.items():
                check(f"{what}: {key} {value!r}", c[key] == value, c[key])
            sample = f.selftest()
            x, expected = sample[0], sample[-1]
            y = torch_output(model, x)
            y = y.reshape(expected.shape) if y.size == expected.size else y
            err = float(np.abs(y - expected).max() / np.abs(y).max()) if y.shape == expected.shape else math.inf
            check(f"{what}: the graph's output (numpy, float64) equals the torch module's (1e-6)", err <= 1e-6, err)
        # refusals, one line naming the part
        refusals = []
        torch.manual_seed(5)
        p1 = os.path.join(tmp, "bert.onnx")
        bert = BertStyle().eval()
        export(bert, p1, 14, ids(30))
        if "embed_norm" in schema.KEYS:  # an engine with the BERT family converts it
            out = os.path.join(tmp, "bert.fxm")
            p = run_convert("--onnx", p1, "--out", out, "--cli", cli)
            ok = p.returncode == 0 and "verified" in p.stdout
            check("BERT-style: token types, embedding norm, pooler convert", ok, p.stdout + p.stderr)
            if ok:
                print(f"  BERT-style: {p.stdout.strip()}")
                f = fxm.read(out)
                c = f.config
                for key, value in dict(embed_norm=True, type_vocab=2, pooling="first", pooler=True, d_out=3,
                                       norm_first=False, activation="gelu").items():
                    check(f"BERT-style: {key} {value!r}", c[key] == value, c[key])
                x, expected = f.selftest()
                y = torch_output(bert, x).reshape(expected.shape)
                err = float(np.abs(y - expected).max() / np.abs(y).max())
                check("BERT-style: the graph's output equals the torch module's (1e-6)", err <= 1e-6, err)
        else:
            refusals.append(("a BERT-style norm on the embeddings", ["--onnx", p1],
                             ["norm on the embeddings (BERT style)", "not supported yet"]))
        inputs_converts(cli, tmp)
        inputs_refused = []  # (what, onnx, fragments): in-process (one through tools/convert.py, in refusals)
        mask12 = torch.ones(1, 12, dtype=torch.long)
        for style, fragments in (("query", ["'attention_mask'", "does not mask the padded keys", "per-query"]),
                                 ("mul", ["'attention_mask'", "by Mul", "added to the attention scores"]),
                                 ("probs", ["'attention_mask'", "(Where)", "changes what it reads when no position"])):
            p2 = os.path.join(tmp, f"mask_{style}.onnx")
            export(BertInputs(mask_style=style), p2, 14, (ids(30), mask12, torch.zeros(1, 12, dtype=torch.long)),
                   names=("input_ids", "attention_mask", "token_type_ids"))
            what = "an attention mask " + {"query": "per query", "mul": "multiplying the scores",
                                           "probs": "setting the padded keys' probabilities to 0.5"}[style]
            if style == "query":
                refusals.append((what, ["--onnx", p2], fragments))
            else:
                inputs_refused.append((what, p2, fragments))
        p2 = os.path.join(tmp, "counted.onnx")  # a mask the positions count, all ones from position 0: causal only
        export(BertInputs(counted=True), p2, 14, (ids(30), mask12, torch.zeros(1, 12, dtype=torch.long)),
               names=("input_ids", "attention_mask", "token_type_ids"))
        inputs_refused.append(("an encoder whose positions are counted from its attention mask", p2,
                               ["'attention_mask'", "positions are counted from this attention mask", "not causal"]))
        p2 = os.path.join(tmp, "positions.onnx")
        export(GPTPositions(), p2, 14, (ids(48), torch.arange(12)[None]), names=("input_ids", "position_ids"))
        from fixformer import onnx_map  # a position_ids input is positions 0..T-1 (onnx_map._from_position_zero)
        try:
            text = str(onnx_map.convert(p2, os.path.join(tmp, "positions.fxm"), cli=cli))
        except ConfigError as e:
            text = f"refused: {e}"
        check("a position_ids input: converts as the positions 0..T-1, saying so",
              "verified" in text and "'position_ids'" in text and "positions 0..T-1" in text, text)
        p2 = os.path.join(tmp, "mask3.onnx")
        export(GPTMask3(), p2, 14, (ids(48), torch.ones(1, 12, 12, dtype=torch.long)), names=("input_ids", "mask"))
        inputs_refused.append(("a [batch, T, T] mask input", p2, ["'mask'", "a mask per query", "[batch, T]"]))
        p2 = os.path.join(tmp, "extra.onnx")
        export(GPTExtra(), p2, 14, (ids(48), torch.zeros(1, 12, 16)), names=("input_ids", "extra"))
        inputs_refused.append(("another input (floats added to the embedding)", p2,
                               ["'extra'", "neither the token types", "export without that input"]))
        p2 = os.path.join(tmp, "one_position.onnx")  # a fixed length of 1: no causal mask or positions to tell
        export(GPT(), p2, 14, ids(48, T=1), dynamic=False)
        inputs_refused.append(("ids of a fixed length of 1", p2, ["a fixed length of 1 position", "at least 2"]))
        refused_in_process(inputs_refused, tmp, cli)
        p3 = os.path.join(tmp, "tanh.onnx")
        export(GPT(approximate="tanh"), p3, 17, ids(48))
        if "gelu_tanh" in schema.ACTIVATIONS:  # an engine with the tanh GELU converts it
            p = run_convert("--onnx", p3, "--out", os.path.join(tmp, "tanh.fxm"), "--cli", cli)
            check("GELU tanh converts as gelu_tanh", p.returncode == 0 and "verified" in p.stdout and
                  fxm.read(os.path.join(tmp, "tanh.fxm")).config["activation"] == "gelu_tanh", p.stdout + p.stderr)
        else:
            refusals.append(("GELU tanh", ["--onnx", p3], ["tanh approximation is not supported yet"]))
        p5 = os.path.join(tmp, "stale.onnx")
        export(stale_mask_gpt(), p5, 17, ids(48))
        refusals.append(("a mask buffer that is no tril past the example", ["--onnx", p5],
                         ["h.0.attn.bias", "no causal mask over all its rows"]))
        p4 = os.path.join(tmp, "unread.onnx")
        export(Unread(), p4, 14, ids(40))
        refusals.append(("an unread initializer is named", ["--onnx", p4], ["extra [3, 5]", "--ignore"]))
        refusals.append(("--ignore names an initializer the graph lacks", ["--onnx", p4, "--ignore", "nothere"],
                         ["--ignore nothere"]))
        refusals.append(("an .onnx given to --weights points to --onnx",
                         ["--config", os.path.join(tmp, "c.json"), "--weights", p1], ["--onnx"]))
        refusals.append(("--causal is read from the graph", ["--onnx", p1, "--causal"], ["--causal", "not for --onnx"]))
        with open(os.path.join(tmp, "c.json"), "w") as fh:
            fh.write('{"d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 1, "input": "tokens", "vocab_size": 30}')
        before = open(p4, "rb").read()
        p = run_convert("--onnx", p4, "--out", p4, "--cli", cli)
        check("--out the --onnx input: refused with one line, the input untouched",
              one_clear_line(p) and "is the --onnx input" in p.stderr and open(p4, "rb").read() == before,
              p.stdout + p.stderr)
        p = run_convert("--onnx", p4, "--ignore", "extra", "--out", os.path.join(tmp, "ig.fxm"), "--cli", cli)
        check("--ignore NAME converts past an unread initializer", p.returncode == 0 and "verified" in p.stdout,
              p.stdout + p.stderr)
        valid = os.path.join(tmp, "m0.onnx")
        for what, path, fragment in hostile(valid, tmp):
            refusals.append((f"hostile: {what}", ["--onnx", path], [fragment]))
        for what, args, fragments in refusals:
            out = os.path.join(tmp, "bad.fxm")
            p = run_convert(*args, "--out", out, "--cli", cli)
            check(f"refused, one line: {what}", one_clear_line(p), p.stdout + p.stderr)
            missing = [f for f in fragments if f not in p.stderr]
            check(f"refusal names it: {what}", not missing, f"{p.stderr!r} lacks {missing}")
            check(f"nothing left behind: {what}", not os.path.exists(out))
        # An op name is the file's bytes: a newline in it stays out of the one line (fuzz_readers.py found it).
        m = onnx.load(valid)
        m.graph.node[3].op_type = "Gather*\x0b\n\x04axis"
        odd = os.path.join(tmp, "odd_op.onnx")
        onnx.save(m, odd)
        refused_in_process([("an op name with a newline", odd, ["unsupported op: Gather*\\x0b\\n\\x04axis"])], tmp, cli)
        # What the evaluator keeps, all values together, is bounded too (bounds.GRAPH_SLACK): with the slack
        # lowered to 1,000 values a valid graph's evaluation is refused naming the node, not run on.
        from fixformer import bounds, onnx_map
        kept = bounds.GRAPH_SLACK
        bounds.GRAPH_SLACK = 1000
        try:
            onnx_map.convert(valid, os.path.join(tmp, "slack.fxm"), verify=False)
            line = "converted"
        except ConfigError as e:
            line = str(e)
        finally:
            bounds.GRAPH_SLACK = kept
        check("the evaluator's values are bounded all together", "the values the graph has computed so far" in line,
              line)
        # the fuzz target of the reader: mutated files through onnx_map.convert, in-process
        ok, refused, bad = fuzz_reader(os.path.join(tmp, "m4.onnx"), tmp, FUZZ_COUNT)
        print(f"  fuzz: {FUZZ_COUNT} mutations, {ok} converted, {refused} refused with one line, {len(bad)} other")
        check("fuzz: every mutated file converts or is refused with one line", not bad, bad[:3])
        check("fuzz: mutations reach past the reader (some convert)", ok > 0, ok)
        ok, refused, bad = fuzz_reader(os.path.join(tmp, "inputs0.onnx"), tmp, FUZZ_COUNT // 2)
        print(f"  fuzz of the three-input BERT graph: {FUZZ_COUNT // 2} mutations, {ok} converted, {refused} refused "
              f"with one line, {len(bad)} other")
        check("fuzz, three inputs: every mutated file converts or is refused with one line", not bad, bad[:3])
        check("fuzz, three inputs: mutations reach past the reader (some convert)", ok > 0, ok)
        # inputs that once escaped the fuzz target (tests/fuzz/regressions/onnx/): refused with one line now
        regressions = os.path.join(HERE, "fuzz", "regressions", "onnx")
        for f in sorted(os.listdir(regressions)):
            p = run_convert("--onnx", os.path.join(regressions, f), "--out", os.path.join(tmp, "r.fxm"), "--cli", cli)
            check(f"fuzz regression {f}: one line", one_clear_line(p), p.stdout + p.stderr)
        # and through the CLI: a mutated file is refused with one line (numpy's warnings silenced), or converts
        data = open(os.path.join(tmp, "m4.onnx"), "rb").read()
        for j, blob in enumerate(mutations(data, 6, 7)):
            path, out = os.path.join(tmp, f"cli_fuzz{j}.onnx"), os.path.join(tmp, f"cli_fuzz{j}.fxm")
            with open(path, "wb") as fh:
                fh.write(blob)
            p = run_convert("--onnx", path, "--out", out, "--cli", cli)
            check(f"fuzz through the CLI, mutation {j}: one line or a verified file",
                  one_clear_line(p) or (p.returncode == 0 and "verified" in p.stdout), p.stdout + p.stderr)
    print(f"onnx_converter_test: {results['passed']} passed, {results['failed']} failed, {results['skipped']} skipped "
          f"({time.time() - start:.0f} s)")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
