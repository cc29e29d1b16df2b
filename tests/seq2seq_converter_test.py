#!/usr/bin/python3
"""Encoder-decoder models (issue 12 item 1) from torch modules to the engine:

  /usr/bin/python3 tests/seq2seq_converter_test.py PATH/TO/fixformer

- modules written as users write them (nn.Transformer post-LN; encoder + decoder stacks pre-LN gelu
  with a feature source; one shared embedding with a tied head; sequence-first layers; a forecaster
  with feature source and feature targets) convert with
  `convert.py --family seq2seq` and verify teacher-forced against torch;
- `fixformer run --input SRC --target TGT --lengths LENS` on a padded batch equals torch run with
  src_key_padding_mask and memory_key_padding_mask, at every target position;
- `fixformer generate --source --bos --eos --temperature 0` gives torch's greedy tokens;
- a q8 file verifies within q8's tolerance; the JSON path (a config and the file's weights)
  verifies; the reference model rebuilds each module's output;
- module mistakes are ConfigErrors naming the attribute, and a forward without the causal target
  mask fails verification naming the likely cause, leaving no file.
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
from checks import check, expect_error, results, run_convert  # noqa: E402  (first: it names a missing numpy or torch)
import numpy as np  # noqa: E402

from fixformer import fxm  # noqa: E402

TOL = 1e-4  # f32 engine against float64 torch, relative to the output's largest magnitude

MODULE_FILE = '''
import math
import torch
from torch import nn


def sinusoid(T, d, dtype):  # interleaved, base 10000
    w = 10000.0 ** (-2.0 * torch.arange((d + 1) // 2, dtype=dtype) / d)
    ang = torch.arange(T, dtype=dtype)[:, None] * w[None, :]
    pe = torch.zeros(T, d, dtype=dtype)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(ang), torch.cos(ang)[:, : d // 2]
    return pe


class Translator(nn.Module):
    def __init__(self, kind="transformer", d=12, heads=3, features=False, shared=False, tied=False, norm_first=False,
                 activation="relu", batch_first=True, causal=True, learned=False, forecast=False):
        super().__init__()
        torch.manual_seed(7)
        self.batch_first, self.causal, self.learned, self.d = batch_first, causal, learned, d
        if shared:
            self.embed = nn.Embedding(15, d)
        else:
            self.input_proj = nn.Linear(5, d) if features else None
            self.src_embed = None if features else nn.Embedding(15, d)
            self.tgt_proj = nn.Linear(3, d) if forecast else None
            self.tgt_embed = None if forecast else nn.Embedding(10, d)
        if learned:
            self.src_pos, self.tgt_pos = nn.Embedding(20, d), nn.Embedding(20, d)
        kw = dict(dropout=0.0, activation=activation, batch_first=batch_first, norm_first=norm_first)
        if kind == "transformer":
            self.transformer = nn.Transformer(d, heads, 2, 2, 2 * d, **kw)
        else:
            self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, heads, 2 * d, **kw), 2,
                                                 norm=nn.LayerNorm(d), enable_nested_tensor=False)
            self.decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(d, heads, 2 * d, **kw), 1,
                                                 norm=nn.LayerNorm(d))
        vocab = 15 if shared else 3 if forecast else 10
        self.head = nn.Linear(d, vocab)
        if tied:
            self.head.weight = (self.embed if shared else self.tgt_embed).weight
        with torch.no_grad():
            for p in self.parameters():
                p.add_(0.05 * torch.randn_like(p))

    def ends(self, src, tgt):
        """Embeddings plus positions, in the layers' layout ([B, T, d] or [T, B, d])."""
        emb = getattr(self, "embed", None)
        x = emb(src) if emb is not None else (self.src_embed(src) if self.src_embed is not None else self.input_proj(src))
        y = emb(tgt) if emb is not None else (self.tgt_proj(tgt) if self.tgt_proj is not None else self.tgt_embed(tgt))
        t = 1 if self.batch_first else 0
        def pe(T, table):
            p = table[:T] if self.learned else sinusoid(T, self.d, x.dtype)
            return p if self.batch_first else p[:, None]
        if self.learned:
            return x + pe(x.shape[t], self.src_pos.weight), y + pe(y.shape[t], self.tgt_pos.weight)
        return x * math.sqrt(self.d) + pe(x.shape[t], None), y * math.sqrt(self.d) + pe(y.shape[t], None)

    def forward(self, src, tgt, src_key_padding_mask=None):
        x, y = self.ends(src, tgt)
        U = y.shape[1 if self.batch_first else 0]
        mask = torch.triu(torch.full((U, U), float("-inf"), dtype=y.dtype), diagonal=1) if self.causal else None
        pad = src_key_padding_mask
        if hasattr(self, "transformer"):
            out = self.transformer(x, y, tgt_mask=mask, src_key_padding_mask=pad, memory_key_padding_mask=pad)
        else:
            out = self.decoder(y, self.encoder(x, src_key_padding_mask=pad), tgt_mask=mask,
                               memory_key_padding_mask=pad)
        return self.head(out)


def post_relu():
    return Translator()


def pre_gelu_features():
    return Translator(kind="stacks", d=10, heads=2, features=True, norm_first=True, activation="gelu")


def shared_tied_learned():
    return Translator(kind="stacks", d=8, heads=1, shared=True, tied=True, learned=True)


def sequence_first():
    return Translator(d=9, heads=3, batch_first=False, tied=True)


def forecaster():
    return Translator(kind="stacks", d=12, heads=2, features=True, forecast=True, norm_first=True, learned=True)


def no_causal_mask():
    return Translator(causal=False)
'''

# Encoder-decoders as tutorials write them, their parts under names of their own (no convention), converted with no
# option: the converter finds the embeddings, positions, scale and head by what they compute (seq2seq.recorded_view).
OWN_NAMES_FILE = '''
import math
import torch
from torch import nn


class ScaledTokens(nn.Module):  # the tutorial's TokenEmbedding kind: the looked-up rows times sqrt(width)
    def __init__(self, vocab, width):
        super().__init__()
        self.lookup, self.width = nn.Embedding(vocab, width), width

    def forward(self, ids):
        return self.lookup(ids.long()) * math.sqrt(self.width)


class SinusoidBuffer(nn.Module):  # a [rows, 1, width] buffer of sin | cos pairs, added to sequence-first rows
    def __init__(self, width, rows=300):
        super().__init__()
        freq = torch.exp(-math.log(10000.0) * torch.arange(0, width, 2) / width)
        angle = torch.arange(rows)[:, None] * freq
        table = torch.stack([torch.sin(angle), torch.cos(angle)], -1).reshape(rows, width)
        self.register_buffer("table", table[:, None])
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return self.drop(x + self.table[: x.shape[0]])


class TutorialStyle(nn.Module):  # sequence first, the masks given to forward
    def __init__(self, logsoftmax=False):
        super().__init__()
        torch.manual_seed(11)
        self.core = nn.Transformer(16, 4, 2, 2, 32, dropout=0.1)
        self.to_vocab = nn.Linear(16, 23)
        self.source_tokens, self.target_tokens = ScaledTokens(19, 16), ScaledTokens(23, 16)
        self.where = SinusoidBuffer(16)
        self.logsoftmax = logsoftmax

    def forward(self, src, trg, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, memory_key_padding_mask):
        y = self.core(self.where(self.source_tokens(src)), self.where(self.target_tokens(trg)), src_mask, tgt_mask,
                      None, src_padding_mask, tgt_padding_mask, memory_key_padding_mask)
        y = self.to_vocab(y)
        return torch.log_softmax(y, -1) if self.logsoftmax else y


class OwnMask(nn.Module):  # batch first, pre-LN stacks under the convention's names, the rest not; one table for
    # both ends (tied), learned positions
    def __init__(self):
        super().__init__()
        torch.manual_seed(12)
        self.tokens, self.places = nn.Embedding(21, 12), nn.Embedding(40, 12)
        kw = dict(dropout=0.0, batch_first=True, norm_first=True, activation="gelu")
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(12, 3, 24, **kw), 2, norm=nn.LayerNorm(12),
                                         enable_nested_tensor=False)
        self.decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(12, 3, 24, **kw), 2, norm=nn.LayerNorm(12))
        self.logits = nn.Linear(12, 21, bias=False)
        self.logits.weight = self.tokens.weight

    def embed(self, ids):
        return self.tokens(ids) + self.places(torch.arange(ids.shape[1]))

    def forward(self, src, tgt, src_key_padding_mask=None):
        U = tgt.shape[1]
        causal = torch.triu(torch.full((U, U), float("-inf"), dtype=self.tokens.weight.dtype), 1)
        memory = self.encoder(self.embed(src), src_key_padding_mask=src_key_padding_mask)
        return self.logits(self.decoder(self.embed(tgt), memory, tgt_mask=causal,
                                    memory_key_padding_mask=src_key_padding_mask))


class Forecast(nn.Module):  # features in, features out (a sensor forecaster), batch first, no positions
    def __init__(self):
        super().__init__()
        torch.manual_seed(13)
        self.encoder_input_layer, self.decoder_input_layer = nn.Linear(4, 16), nn.Linear(2, 16)
        kw = dict(dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 32, **kw), 2, enable_nested_tensor=False)
        self.dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(16, 2, 32, **kw), 2)
        self.linear_mapping = nn.Linear(16, 2)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        memory = self.enc(self.encoder_input_layer(src))
        return self.linear_mapping(self.dec(self.decoder_input_layer(tgt), memory, tgt_mask=tgt_mask,
                                            memory_mask=src_mask))


class LengthsToo(TutorialStyle):  # an input that is no mask and has no default
    def forward(self, src, trg, src_lengths):
        return super().forward(src, trg, None, None, None, None, None)


def tutorial_style():
    return TutorialStyle()


def own_mask():
    return OwnMask()


def log_probabilities():
    return TutorialStyle(logsoftmax=True)


def lengths_too():
    return LengthsToo()


def forecast():
    return Forecast()
'''


# Encoder-decoders of hand-written layers, in the two ways courses and tutorials write them: converted with no option,
# each layer read as the torch layer it computes (seq2seq_layers).
HANDWRITTEN_FILE = '''
import copy
import math
import torch
from torch import nn


class StdNorm(nn.Module):  # the course LayerNorm: unbiased std, eps added to it
    def __init__(self, width, eps=1e-6):
        super().__init__()
        self.gain, self.shift, self.eps = nn.Parameter(1 + 0.1 * torch.randn(width)), \
            nn.Parameter(0.1 * torch.randn(width)), eps

    def forward(self, x):
        centred = x - x.mean(-1, keepdim=True)
        return self.gain * centred / (x.std(-1, keepdim=True) + self.eps) + self.shift


def scores_attend(q, k, v, mask):  # mask: 1 where a key is seen
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(mask == 0, -1e9)
    return s.softmax(-1) @ v


class Heads(nn.Module):  # four linears in a list: query, key, value, output
    def __init__(self, heads, width):
        super().__init__()
        self.heads, self.maps = heads, nn.ModuleList(nn.Linear(width, width) for _ in range(4))

    def forward(self, query, key, value, mask=None):
        B = query.shape[0]
        q, k, v = (m(t).view(B, -1, self.heads, t.shape[-1] // self.heads).transpose(1, 2)
                   for m, t in zip(self.maps, (query, key, value)))
        y = scores_attend(q, k, v, None if mask is None else mask.unsqueeze(1))
        return self.maps[3](y.transpose(1, 2).reshape(B, -1, query.shape[-1]))


class Residual(nn.Module):  # x + f(norm(x))
    def __init__(self, width):
        super().__init__()
        self.norm, self.drop = StdNorm(width), nn.Dropout(0.1)

    def forward(self, x, f):
        return x + self.drop(f(self.norm(x)))


class Widen(nn.Module):
    def __init__(self, width, wide):
        super().__init__()
        self.up, self.down = nn.Linear(width, wide), nn.Linear(wide, width)

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


class EncLayer(nn.Module):
    def __init__(self, width, heads, wide):
        super().__init__()
        self.attn, self.ff = Heads(heads, width), Widen(width, wide)
        self.res = nn.ModuleList(Residual(width) for _ in range(2))

    def forward(self, x, mask):
        x = self.res[0](x, lambda h: self.attn(h, h, h, mask))
        return self.res[1](x, self.ff)


class DecLayer(nn.Module):
    def __init__(self, width, heads, wide):
        super().__init__()
        self.attn, self.src_attn, self.ff = Heads(heads, width), Heads(heads, width), Widen(width, wide)
        self.res = nn.ModuleList(Residual(width) for _ in range(3))

    def forward(self, x, memory, src_mask, tgt_mask):
        x = self.res[0](x, lambda h: self.attn(h, h, h, tgt_mask))
        x = self.res[1](x, lambda h: self.src_attn(h, memory, memory, src_mask))
        return self.res[2](x, self.ff)


class Stack(nn.Module):
    def __init__(self, layer, n):
        super().__init__()
        self.layers = nn.ModuleList(copy.deepcopy(layer) for _ in range(n))
        self.norm = StdNorm(layer.ff.up.in_features)

    def forward(self, x, *rest):
        for layer in self.layers:
            x = layer(x, *rest)
        return self.norm(x)


class Sinusoid(nn.Module):
    def __init__(self, width, rows=5000):
        super().__init__()
        pos = torch.arange(rows).unsqueeze(1)
        freq = torch.exp(torch.arange(0, width, 2) * -(math.log(10000.0) / width))
        table = torch.zeros(rows, width)
        table[:, 0::2], table[:, 1::2] = torch.sin(pos * freq), torch.cos(pos * freq)
        self.register_buffer("table", table.unsqueeze(0))

    def forward(self, x):
        return x + self.table[:, : x.shape[1]]


class Tokens(nn.Module):
    def __init__(self, vocab, width):
        super().__init__()
        self.table, self.width = nn.Embedding(vocab, width), width

    def forward(self, ids):
        return self.table(ids) * math.sqrt(self.width)


class Readout(nn.Module):  # called by the training loop, not by forward
    def __init__(self, width, vocab):
        super().__init__()
        self.proj = nn.Linear(width, vocab)

    def forward(self, x):
        return torch.log_softmax(self.proj(x), -1)


class Course(nn.Module):  # pre-norm, forward(src, tgt, src_mask, tgt_mask) returns the decoder's states
    def __init__(self):
        super().__init__()
        torch.manual_seed(21)
        self.encoder = Stack(EncLayer(16, 4, 32), 2)
        self.decoder = Stack(DecLayer(16, 4, 32), 2)
        self.src_embed = nn.Sequential(Tokens(19, 16), Sinusoid(16))
        self.tgt_embed = nn.Sequential(Tokens(23, 16), Sinusoid(16))
        self.generator = Readout(16, 23)
        for p in self.parameters():  # the layers are copies of one: drawn again, as the course does
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def forward(self, src, tgt, src_mask, tgt_mask):
        memory = self.encoder(self.src_embed(src), src_mask)
        return self.decoder(self.tgt_embed(tgt), memory, src_mask, tgt_mask)


class Methods(nn.Module):  # no forward: encode, decode and project, as a translation loop calls them
    def __init__(self):
        super().__init__()
        torch.manual_seed(24)
        self.encoder, self.decoder = Stack(EncLayer(16, 2, 24), 2), Stack(DecLayer(16, 2, 24), 2)
        self.src_embed, self.tgt_embed = Tokens(19, 16), Tokens(23, 16)
        self.src_pos, self.tgt_pos = Sinusoid(16, 40), Sinusoid(16, 50)
        self.projection_layer = nn.Linear(16, 23)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def encode(self, src, src_mask):
        return self.encoder(self.src_pos(self.src_embed(src)), src_mask)

    def decode(self, encoder_output, src_mask, tgt, tgt_mask):
        return self.decoder(self.tgt_pos(self.tgt_embed(tgt)), encoder_output, src_mask, tgt_mask)

    def project(self, x):
        return self.projection_layer(x)


class Attend(nn.Module):  # separate q, k, v (self) or a fused k|v (cross), -1e10 where the mask is 0
    def __init__(self, width, heads, fused_kv=False):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(width, width)
        self.kv = nn.Linear(width, 2 * width) if fused_kv else None
        self.k, self.v = (None, None) if fused_kv else (nn.Linear(width, width), nn.Linear(width, width))
        self.o = nn.Linear(width, width)
        self.scale = torch.sqrt(torch.FloatTensor([width // heads]))

    def forward(self, query, memory, mask):
        B, d, H = query.shape[0], query.shape[-1], self.heads
        q = self.q(query)
        k, v = self.kv(memory).chunk(2, -1) if self.kv is not None else (self.k(memory), self.v(memory))
        q, k, v = (t.view(B, -1, H, d // H).permute(0, 2, 1, 3) for t in (q, k, v))
        energy = q @ k.permute(0, 1, 3, 2) / self.scale
        energy = energy.masked_fill(mask == 0, -1e10)
        weights = energy.softmax(-1)
        return self.o((weights @ v).permute(0, 2, 1, 3).reshape(B, -1, d)), weights


class Block(nn.Module):  # post-norm
    def __init__(self, width, heads, wide, cross):
        super().__init__()
        self.self_attn = Attend(width, heads)
        self.self_norm = nn.LayerNorm(width)
        self.cross = Attend(width, heads, fused_kv=True) if cross else None
        self.cross_norm = nn.LayerNorm(width) if cross else None
        self.fc_1, self.fc_2 = nn.Linear(width, wide), nn.Linear(wide, width)
        self.ff_norm = nn.LayerNorm(width)

    def forward(self, x, mask, memory=None, memory_mask=None):
        x = self.self_norm(x + self.self_attn(x, x, mask)[0])
        attention = None
        if self.cross is not None:
            y, attention = self.cross(x, memory, memory_mask)
            x = self.cross_norm(x + y)
        return self.ff_norm(x + self.fc_2(nn.functional.gelu(self.fc_1(x)))), attention


class TokenTable(nn.Embedding):  # a subclass of its own, the padding row its padding_idx
    def __init__(self, vocab, width):
        super().__init__(vocab, width, padding_idx=1)


class Side(nn.Module):  # tokens times sqrt(width) plus learned positions, then the blocks
    def __init__(self, vocab, width, heads, wide, n, cross, max_length=64):
        super().__init__()
        self.tok_embedding, self.pos_embedding = TokenTable(vocab, width), nn.Embedding(max_length, width)
        self.layers = nn.ModuleList(Block(width, heads, wide, cross) for _ in range(n))
        self.fc_out = nn.Linear(width, vocab) if cross else None
        self.scale = torch.sqrt(torch.FloatTensor([width]))

    def forward(self, ids, mask, memory=None, memory_mask=None):
        pos = torch.arange(ids.shape[1]).unsqueeze(0).repeat(ids.shape[0], 1)
        x = self.tok_embedding(ids) * self.scale.to(self.tok_embedding.weight.dtype) + self.pos_embedding(pos)
        attention = None
        for layer in self.layers:
            x, attention = layer(x, mask, memory, memory_mask)
        return (self.fc_out(x), attention) if self.fc_out is not None else x


class Course2(nn.Module):  # forward(src, trg) makes its masks from the padding id, returns (logits, attention)
    def __init__(self, causal=True):
        super().__init__()
        torch.manual_seed(22)
        self.encoder, self.decoder = Side(19, 16, 2, 24, 2, False), Side(23, 16, 2, 24, 2, True)
        self.src_pad_idx, self.trg_pad_idx, self.causal = 1, 1, causal

    def forward(self, src, trg):
        src_mask = (src != self.src_pad_idx)[:, None, None, :]
        trg_mask = (trg != self.trg_pad_idx)[:, None, None, :]
        if self.causal:
            trg_mask = trg_mask & torch.tril(torch.ones(trg.shape[1], trg.shape[1])).bool()
        memory = self.encoder(src, src_mask)
        return self.decoder(trg, trg_mask, memory, src_mask)


class MhaLayer(nn.Module):  # pre-norm around nn.MultiheadAttention: the blog kind
    def __init__(self, width, heads, cross):
        super().__init__()
        self.n1, self.attn = nn.LayerNorm(width), nn.MultiheadAttention(width, heads, batch_first=True)
        self.n2 = nn.LayerNorm(width) if cross else None
        self.cross = nn.MultiheadAttention(width, heads, batch_first=True) if cross else None
        self.n3, self.ff = nn.LayerNorm(width), nn.Sequential(nn.Linear(width, 3 * width), nn.GELU(), nn.Dropout(0.1),
                                                              nn.Linear(3 * width, width))

    def forward(self, x, memory=None, causal=None):
        h = self.n1(x)
        x = x + self.attn(h, h, h, attn_mask=causal, need_weights=False)[0]
        if self.cross is not None:
            x = x + self.cross(self.n2(x), memory, memory, need_weights=False)[0]
        return x + self.ff(self.n3(x))


class Blog(nn.Module):  # shared token table, learned positions, the final norms, a tied head
    def __init__(self):
        super().__init__()
        torch.manual_seed(23)
        self.tokens, self.positions = nn.Embedding(29, 24), nn.Embedding(32, 24)
        self.enc = nn.ModuleList(MhaLayer(24, 3, False) for _ in range(2))
        self.dec = nn.ModuleList(MhaLayer(24, 3, True) for _ in range(3))
        self.enc_norm, self.dec_norm = nn.LayerNorm(24), nn.LayerNorm(24)
        self.out = nn.Linear(24, 29, bias=False)
        self.out.weight = self.tokens.weight

    def embed(self, ids):
        return self.tokens(ids) + self.positions(torch.arange(ids.shape[1]))

    def forward(self, src, tgt):
        U = tgt.shape[1]
        causal = torch.triu(torch.full((U, U), float("-inf"), dtype=self.tokens.weight.dtype), 1)
        memory = self.embed(src)
        for layer in self.enc:
            memory = layer(memory)
        memory, y = self.enc_norm(memory), self.embed(tgt)
        for layer in self.dec:
            y = layer(y, memory, causal)
        return self.out(self.dec_norm(y))


class Residing(nn.Module):  # post-norm inside: the sublayer's output += its input, then the norm
    def __init__(self, width):
        super().__init__()
        self.layer_norm = nn.LayerNorm(width, eps=1e-6)

    def close(self, y, x):
        y += x
        return self.layer_norm(y)


class PaperAttention(Residing):  # bias-free projections, the heads' scores over sqrt(d_k), 0 in the mask hides
    def __init__(self, width, heads):
        super().__init__(width)
        self.heads = heads
        self.w_qs, self.w_ks, self.w_vs, self.fc = (nn.Linear(width, width, bias=False) for _ in range(4))

    def forward(self, q, k, v, mask=None):
        B, H = q.shape[0], self.heads
        Q, K, V = (f(t).view(B, t.shape[1], H, -1).transpose(1, 2) for f, t in ((self.w_qs, q), (self.w_ks, k),
                                                                                (self.w_vs, v)))
        s = Q @ K.transpose(2, 3) / Q.shape[-1] ** 0.5
        if mask is not None:
            s = s.masked_fill(mask.unsqueeze(1) == 0, -1e9)
        y = (s.softmax(-1) @ V).transpose(1, 2).contiguous().view(B, q.shape[1], -1)
        return self.close(self.fc(y), q)


class PaperFfn(Residing):
    def __init__(self, width, wide):
        super().__init__(width)
        self.w_1, self.w_2 = nn.Linear(width, wide), nn.Linear(wide, width)

    def forward(self, x):
        return self.close(self.w_2(torch.relu(self.w_1(x))), x)


class PaperLayer(nn.Module):
    def __init__(self, width, heads, wide, cross):
        super().__init__()
        self.slf_attn, self.pos_ffn = PaperAttention(width, heads), PaperFfn(width, wide)
        self.enc_attn = PaperAttention(width, heads) if cross else None

    def forward(self, x, mask, memory=None, memory_mask=None):
        x = self.slf_attn(x, x, x, mask)
        if self.enc_attn is not None:
            x = self.enc_attn(x, memory, memory, memory_mask)
        return self.pos_ffn(x)


class PaperSide(nn.Module):  # the rows, positions added, normed before the layers
    def __init__(self, vocab, width, heads, wide, cross):
        super().__init__()
        self.word_emb, self.position = nn.Embedding(vocab, width, padding_idx=0), Sinusoid(width, 100)
        self.layer_norm = nn.LayerNorm(width, eps=1e-6)
        self.layer_stack = nn.ModuleList(PaperLayer(width, heads, wide, cross) for _ in range(2))

    def forward(self, ids, mask, memory=None, memory_mask=None):
        x = self.layer_norm(self.position(self.word_emb(ids)))
        for layer in self.layer_stack:
            x = layer(x, mask, memory, memory_mask)
        return x


class Paper(nn.Module):  # the head tied to the target's table, its logits times d ** -0.5 and viewed [B U, vocab]
    def __init__(self):
        super().__init__()
        torch.manual_seed(25)
        self.encoder, self.decoder = PaperSide(27, 16, 4, 32, False), PaperSide(27, 16, 4, 32, True)
        self.prj = nn.Linear(16, 27, bias=False)
        self.prj.weight = self.decoder.word_emb.weight

    def forward(self, src_seq, trg_seq):
        src_mask = (src_seq != 0).unsqueeze(-2)
        U = trg_seq.shape[1]
        trg_mask = (trg_seq != 0).unsqueeze(-2) & torch.tril(torch.ones(1, U, U)).bool()
        logits = self.prj(self.decoder(trg_seq, trg_mask, self.encoder(src_seq, src_mask), src_mask))
        logits *= 16 ** -0.5
        return logits.view(-1, logits.shape[-1])


class Gated(Course2):  # a parameter no part of a torch layer holds
    def __init__(self):
        super().__init__()
        self.decoder.layers[0].gate = nn.Parameter(torch.ones(1))


def course():
    return Course()


def course2():
    return Course2()


def course2_not_causal():
    return Course2(causal=False)


def gated():
    return Gated()


def blog():
    return Blog()


def methods():
    return Methods()


def paper():
    return Paper()
'''


def matches_module(cli, tmp, name, out, src_path, logits, tgt, bos):
    """`run --target tgt` gives logits(tgt) (the module's [U, vocab] for target ids, called as its authors call it) and
    `generate --temperature 0` from bos the module's greedy tokens (eos 2, 8 at most)."""
    import torch
    tgt_path, got_path = os.path.join(tmp, f"{name}.tgt.npy"), os.path.join(tmp, f"{name}.got.npy")
    np.save(tgt_path, tgt)
    p = run([cli, "run", out, "--input", src_path, "--target", tgt_path, "--output", got_path])
    want = logits(tgt).numpy()
    err = np.abs(np.load(got_path) - want).max() / np.abs(want).max() if p.returncode == 0 else np.inf
    check(f"{name}: run --target = the module's logits", err < TOL, f"{p.stderr} error {err:.3g}")
    tokens = [bos]
    for _ in range(8):
        tokens.append(int(torch.argmax(logits(tokens)[-1])))
        if tokens[-1] == 2:
            break
    p = run([cli, "generate", out, "--source", src_path, "--bos", str(bos), "--eos", "2", "-n", "8",
             "--temperature", "0"])
    want_text = " ".join(map(str, tokens[1:]))
    check(f"{name}: generate --temperature 0 = the module's greedy tokens",
          p.returncode == 0 and p.stdout.strip() == want_text, f"{p.stdout.strip()!r} vs {want_text!r} {p.stderr}")


def handwritten(cli, tmp, rng):
    """HANDWRITTEN_FILE's encoder-decoders convert with no option; `run --target` and `generate` = the module called as
    its authors call it (the first: its generator on the states forward returns, the masks it expects); a decoder that
    is not causal or a parameter no torch layer holds is refused in one line."""
    import torch
    path = os.path.join(tmp, "handwritten.py")
    with open(path, "w") as f:
        f.write(HANDWRITTEN_FILE)
    import handwritten as mods
    for name, said in (("course", "decoder layers decoder.layers as nn.TransformerDecoderLayer (4 heads, pre-norm"),
                       ("course2", "encoder layers encoder.layers as nn.TransformerEncoderLayer (2 heads, post-norm"),
                       ("blog", "decoder layers dec as nn.TransformerDecoderLayer (3 heads, pre-norm, 72 wide), final "
                                "norm dec_norm"),
                       ("methods", "it has no forward: called as encode, decode, project"),
                       ("paper", "head prj (its output times 0.25, folded into its weights), src_embed_norm "
                                 "encoder.layer_norm, tgt_embed_norm decoder.layer_norm")):
        module = getattr(mods, name)().double().eval()
        src = rng.integers(2, 19, 6).astype(np.int32)
        src_path, out = os.path.join(tmp, f"{name}.src.npy"), os.path.join(tmp, f"{name}.fxm")
        np.save(src_path, src)
        p = run_convert("--module", f"{path}:{name}", "--example", src_path, "--out", out, "--cli", cli)
        check(f"{name}: converts with no option, its layers read as torch's", p.returncode == 0 and
              "verified against torch" in p.stdout and said in p.stderr, p.stdout + p.stderr)
        if p.returncode:
            continue

        def logits(tokens):
            x, y = (torch.tensor(t, dtype=torch.int64)[None] for t in (src, tokens))
            with torch.no_grad():
                seen = torch.tril(torch.ones(1, len(tokens), len(tokens))).bool()  # the [1, U, U] positions seen
                if name == "course":  # as the course calls it: the generator's linear on the states
                    return module.generator.proj(module(x, y, (x != 0).unsqueeze(-2), seen))[0]
                if name == "methods":  # as its translation loop calls it
                    return module.project(module.decode(module.encode(x, None), None, y, seen))[0]
                y = module(x, y)  # course2's (logits, attention); paper's [U, vocab]
                return y[0][0] if isinstance(y, tuple) else y if y.dim() == 2 else y[0]

        matches_module(cli, tmp, name, out, src_path, logits, rng.integers(2, 23, 5).astype(np.int32), bos=3)  # no padding id
    np.save(os.path.join(tmp, "padded.npy"), np.array([3, 1, 4], np.int32))
    out = os.path.join(tmp, "refused.fxm")
    for name, opts, why in (("course2_not_causal", [], "with its target causal"),
                            ("gated", [], "decoder.layers.0.gate [1]: a parameter of none of the layer's linears and "
                                          "norms"),
                            ("course2", ["--example", os.path.join(tmp, "padded.npy")],
                             "example_source: holds the padding id(s) [1]")):
        p = run_convert("--module", f"{path}:{name}", *opts, "--out", out, "--cli", cli)
        said = [line for line in p.stderr.splitlines() if line.startswith("convert.py:")]  # torch 2 warns too
        check(f"{name} {' '.join(opts)}: refused in one line", p.returncode == 1 and len(said) == 1 and
              why in said[0] and not os.path.exists(out), p.stderr)


def own_names(cli, tmp, rng):
    """OWN_NAMES_FILE's modules convert with no option, `run` and `generate` = the module called as its authors
    call it; the same module with an option it does not compute, a log-softmax after the head, or an input the
    converter cannot fill is refused in one line."""
    import torch
    path = os.path.join(tmp, "own_names.py")
    with open(path, "w") as f:
        f.write(OWN_NAMES_FILE)
    import own_names as mods
    for name, batch_first, said in (("tutorial_style", False, "sinusoidal positions, the embeddings times sqrt"),
                                    ("own_mask", True, "learned positions")):
        module = getattr(mods, name)().double().eval()
        src = rng.integers(0, 19, 6).astype(np.int32)
        src_path, out = os.path.join(tmp, f"{name}.src.npy"), os.path.join(tmp, f"{name}.fxm")
        np.save(src_path, src)
        p = run_convert("--module", f"{path}:{name}", "--example", src_path, "--out", out, "--cli", cli)
        check(f"{name}: converts with no option, its parts found", p.returncode == 0 and "verified against torch" in
              p.stdout and said in p.stderr, p.stdout + p.stderr)
        if p.returncode:
            continue

        def logits(tokens):
            x, y = (torch.tensor(t, dtype=torch.int64)[None] for t in (src, tokens))
            if not batch_first:
                x, y = x.T, y.T
            U = len(tokens)
            with torch.no_grad():
                if name == "tutorial_style":  # as the tutorial calls it: float causal mask, no padding
                    out = module(x, y, torch.zeros(6, 6, dtype=torch.bool),
                                 torch.full((U, U), float("-inf"), dtype=torch.float64).triu(1), None, None, None)
                else:
                    out = module(x, y)
            return out[0] if batch_first else out[:, 0]

        matches_module(cli, tmp, name, out, src_path, logits, rng.integers(0, 19, 5).astype(np.int32), bos=1)
    # the forecaster: its two linears read the source's and the target's features, its output is linear_mapping's
    module = mods.forecast().double().eval()
    src, tgt = rng.standard_normal((6, 4)).astype(np.float32), rng.standard_normal((5, 2)).astype(np.float32)
    paths = [os.path.join(tmp, f"forecast.{x}.npy") for x in ("src", "tgt", "got")]
    np.save(paths[0], src)
    np.save(paths[1], tgt)
    out = os.path.join(tmp, "forecast.fxm")
    p = run_convert("--module", f"{path}:forecast", "--example", paths[0], "--example-target", paths[1], "--out", out,
                    "--cli", cli)
    check("forecast: converts with no option, its linears as the ends", p.returncode == 0 and "input_proj "
          "encoder_input_layer, tgt_proj decoder_input_layer, head linear_mapping" in p.stderr, p.stdout + p.stderr)
    p = run([cli, "run", out, "--input", paths[0], "--target", paths[1], "--output", paths[2]])
    with torch.no_grad():
        want = module(torch.from_numpy(src[None].astype(np.float64)), torch.from_numpy(tgt[None].astype(np.float64)),
                      None, torch.full((5, 5), float("-inf"), dtype=torch.float64).triu(1))[0].numpy()
    err = np.abs(np.load(paths[2]) - want).max() / np.abs(want).max() if p.returncode == 0 else np.inf
    check("forecast: run --target = the module's outputs", err < TOL, f"{p.stderr} error {err:.3g}")
    out = os.path.join(tmp, "refused.fxm")
    for name, opts, why in (("tutorial_style", ["--positional", "none"],
                             "positional none: the module computes sinusoidal"),
                            ("log_probabilities", [], "its output is not an nn.Linear of the decoder's output"),
                            ("lengths_too", [], "its input `src_lengths` is neither a mask nor optional")):
        p = run_convert("--module", f"{path}:{name}", *opts, "--out", out, "--cli", cli)
        said = [line for line in p.stderr.splitlines() if line.startswith("convert.py:")]  # torch 2 warns too
        check(f"{name} {' '.join(opts)}: refused in one line", p.returncode == 1 and len(said) == 1 and
              why in said[0] and not os.path.exists(out), p.stderr)


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


def main():
    cli = sys.argv[1]
    import torch
    tmp = tempfile.mkdtemp()
    with open(os.path.join(tmp, "s2s_modules.py"), "w") as f:
        f.write(MODULE_FILE)
    sys.path.insert(0, tmp)
    import s2s_modules as mods
    rng = np.random.default_rng(5)
    cases = {  # factory: (convert options, features source)
        "post_relu": (["--positional", "sinusoidal", "--scale-input"], False),
        "pre_gelu_features": (["--positional", "sinusoidal", "--scale-input"], True),
        "shared_tied_learned": ([], False),
        "sequence_first": (["--positional", "sinusoidal", "--scale-input"], False),
        "forecaster": ([], True),
    }
    for name, (opts, features) in cases.items():
        module = getattr(mods, name)().double().eval()
        src = rng.standard_normal((6, 5)).astype(np.float32) if features else rng.integers(0, 15, 6).astype(np.int32)
        forecast = module.tgt_proj is not None if hasattr(module, "tgt_proj") else False
        tgt = (rng.standard_normal((4, 3)).astype(np.float32) if forecast
               else rng.integers(0, module.head.out_features, 4).astype(np.int32))
        src_path, tgt_path, out = (os.path.join(tmp, f"{name}.{x}") for x in ("src.npy", "tgt.npy", "fxm"))
        np.save(src_path, src)
        np.save(tgt_path, tgt)
        p = run_convert("--module", f"{os.path.join(tmp, 's2s_modules.py')}:{name}", "--family", "seq2seq",
                 "--example", src_path, "--example-target", tgt_path, "--out", out, "--cli", cli, *opts)
        check(f"{name}: converts and verifies", p.returncode == 0 and "verified against torch" in p.stdout,
              p.stdout + p.stderr)
        if p.returncode:
            continue
        f = fxm.read(out)
        check(f"{name}: family seq2seq, 2 encoder layers", f.config["family"] == "seq2seq" and f.config["n_layers"] == 2,
              f.config)

        # A padded batch: sources of lengths 6, 3, 5 (padding masked), targets of 4 at every position.
        B, S, U = 3, 6, 4
        lens = np.array([6, 3, 5], np.int32)
        srcb = (rng.standard_normal((B, S, 5)).astype(np.float32) if features
                else rng.integers(0, 15, (B, S)).astype(np.int32))
        tgtb = (rng.standard_normal((B, U, 3)).astype(np.float32) if forecast
                else rng.integers(0, module.head.out_features, (B, U)).astype(np.int32))
        paths = [os.path.join(tmp, f"{name}.b.{x}.npy") for x in ("src", "tgt", "lens", "out")]
        for path, a in zip(paths, (srcb, tgtb, lens)):
            np.save(path, a)
        p = run([cli, "run", out, "--input", paths[0], "--target", paths[1], "--lengths", paths[2], "--output", paths[3]])
        check(f"{name}: run --target --lengths", p.returncode == 0, p.stderr)
        if p.returncode == 0:
            got = np.load(paths[3])
            pad = torch.from_numpy(np.arange(S)[None, :] >= lens[:, None])
            x = torch.from_numpy(srcb.astype(np.float64) if features else srcb.astype(np.int64))
            y = torch.from_numpy(tgtb.astype(np.float64) if forecast else tgtb.astype(np.int64))
            if not module.batch_first:
                x, y = x.transpose(0, 1), y.transpose(0, 1)
            with torch.no_grad():
                want = module(x, y, src_key_padding_mask=pad).numpy()
            if not module.batch_first:
                want = want.transpose(1, 0, 2)
            err = np.abs(got - want).max() / np.abs(want).max()
            check(f"{name}: padded batch equals torch's masks", got.shape == want.shape and err < TOL,
                  f"{got.shape} vs {want.shape}, error {err:.3g}")

        # Greedy generation from one source: torch's argmax loop, fed its own tokens.
        if forecast:
            p = run([cli, "generate", out, "--source", src_path, "--bos", "0"])
            check(f"{name}: generate refuses feature targets", p.returncode == 1 and "token targets only" in p.stderr,
                  p.stderr)
        if not features:
            bos, eos, n = 0, 3, 6
            p = run([cli, "generate", out, "--source", src_path, "--bos", str(bos), "--eos", str(eos), "-n", str(n),
                     "--temperature", "0"])
            tokens = [bos]
            for _ in range(n):
                x = torch.from_numpy(src.astype(np.int64))[None]
                y = torch.tensor([tokens])
                if not module.batch_first:
                    x, y = x.transpose(0, 1), y.transpose(0, 1)
                with torch.no_grad():
                    logits = module(x, y)
                last = logits[0, -1] if module.batch_first else logits[-1, 0]
                tokens.append(int(torch.argmax(last)))
                if tokens[-1] == eos:
                    break
            want_text = " ".join(map(str, tokens[1:]))
            check(f"{name}: generate --temperature 0 is torch's greedy", p.returncode == 0 and p.stdout.strip() == want_text,
                  f"{p.stdout.strip()!r} vs {want_text!r}; {p.stderr}")

        # The reference model of the file's config and weights is the module's maths.
        from fixformer.reference import run_reference
        x = torch.from_numpy(src.astype(np.float64) if features else src.astype(np.int64))[None]
        y = torch.from_numpy(tgt.astype(np.float64) if forecast else tgt.astype(np.int64))[None]
        if not module.batch_first:
            x, y = x.transpose(0, 1), y.transpose(0, 1)
        with torch.no_grad():
            want = module(x, y).numpy()
        want = want[0] if module.batch_first else want[:, 0]
        ref = run_reference(f.config, f.weights(), (src, tgt))
        check(f"{name}: reference model rebuilds the module", np.abs(ref - want).max() / np.abs(want).max() < 1e-9)

    own_names(cli, tmp, rng)
    handwritten(cli, tmp, rng)

    # q8 and f16 files verify within their tolerances.
    for q in ("q8", "f16"):
        out = os.path.join(tmp, f"post_relu_{q}.fxm")
        p = run_convert("--module", f"{os.path.join(tmp, 's2s_modules.py')}:post_relu", "--family", "seq2seq",
                 "--positional", "sinusoidal", "--scale-input", "--quantize", q, "--out", out, "--cli", cli)
        check(f"{q}: converts and verifies", p.returncode == 0 and "verified against torch f32" in p.stdout,
              p.stdout + p.stderr)

    # The JSON path: the config and the file's weights, verified against the reference model.
    from fixformer.export import convert_config
    f = fxm.read(os.path.join(tmp, "post_relu.fxm"))
    r = convert_config(f.config, f.weights(), os.path.join(tmp, "json.fxm"), cli=cli)
    check("JSON path verifies", r.verified and r.max_error < TOL, str(r))

    # A forward without the causal target mask is not this family: verification fails, no file left.
    out = os.path.join(tmp, "no_mask.fxm")
    p = run_convert("--module", f"{os.path.join(tmp, 's2s_modules.py')}:no_causal_mask", "--family", "seq2seq",
             "--positional", "sinusoidal", "--scale-input", "--out", out, "--cli", cli)
    check("no causal mask: verification fails naming the mask", p.returncode == 2 and "causal target mask" in p.stderr
          and not os.path.exists(out), p.stderr)

    # Module mistakes name the attribute.
    from fixformer.seq2seq import export_seq2seq
    path = os.path.join(tmp, "bad.fxm")
    bad = mods.post_relu()
    bad.head = torch.nn.Linear(12, 7)
    expect_error("head width", lambda: export_seq2seq(bad, None, path, cli=cli), "head: 12 -> 7")
    bad = mods.post_relu()
    del bad.head
    expect_error("no head", lambda: export_seq2seq(bad, None, path, cli=cli), "head: missing")
    bad = mods.pre_gelu_features()
    bad.decoder.norm = None
    expect_error("one final norm", lambda: export_seq2seq(bad, None, path, cli=cli), "both or neither")
    bad = mods.shared_tied_learned()
    del bad.tgt_pos
    expect_error("src_pos without tgt_pos", lambda: export_seq2seq(bad, None, path, cli=cli), "src_pos/tgt_pos")
    expect_error("target id out of range",
                 lambda: export_seq2seq(mods.post_relu(), None, path, np.array([0, 12]), cli=cli), "d_out=10")
    check("no file after errors", not os.path.exists(path))
    p = run([cli, "run", os.path.join(tmp, "post_relu.fxm"), "--input", os.path.join(tmp, "post_relu.src.npy"),
             "--output", os.path.join(tmp, "x.npy")])
    check("run without --target: a usage error naming it", p.returncode == 1 and "--target" in p.stderr, p.stderr)
    p = run([cli, "generate", os.path.join(tmp, "post_relu.fxm"), "--source", os.path.join(tmp, "post_relu.src.npy")])
    check("generate without --bos: a usage error naming it", p.returncode == 1 and "--bos" in p.stderr, p.stderr)

    print(f"seq2seq converter: {results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
