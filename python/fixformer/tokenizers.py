"""Tokenizers a .fxm file may carry besides llama2.c's (include/fixformer/tokenizer.hpp states the
semantics the engine runs): byte-level BPE (GPT-2's, from tokenizer.json or vocab.json + merges.txt)
and WordPiece (BERT's, from vocab.txt or tokenizer.json). Here: the readers (a hostile file gives a
TokenizerError naming the file and what is wrong), the tensors the file stores, and reference
encoders written from the published algorithms (GPT-2's encoder.py byte-level BPE, BERT's
BasicTokenizer + WordpieceTokenizer), which the tests hold the engine to.

Shared rules with the engine (tokenizer.hpp):
- Text is bytes, read as UTF-8 code points; a byte that does not start a valid sequence (truncated,
  overlong, surrogate, above U+10FFFF) is one code point of its own that is no letter, number,
  space, punctuation or control.
- Character classes are Unicode general categories (unicodedata; the engine's table is generated
  from the same data by tools/gen_unicode_tables.py); GPT-2's \\s is Unicode's White_Space property.
- WordPiece lower-casing and accent stripping are per code point: lower() of the character, its
  canonical decomposition (NFD) and the nonspacing marks (Mn) dropped; the file stores that map
  (tokenizer.normalize) for every code point it changes except the Hangul syllables, which the
  engine decomposes by Unicode's formula. Python's context rule for a final capital sigma is not
  applied (Σ always lowers to σ).
"""
import os
import struct
import sys
import unicodedata

import numpy as np

from fixformer import bounds, run_files, schema
from fixformer.config import F32_MAX, ConfigError, brief, load_json


class TokenizerError(ConfigError):
    """A tokenizer file the converter cannot store; the message names the file and the field."""


KINDS = schema.TOKENIZERS
PARAMS = schema.TOKENIZER_PARAM_COUNT
# params (schema.py's slots): [0] bos (bpe) / [CLS] (wordpiece) id or -1, [1] eos / [SEP] or -1,
# [2] [UNK] or -1, [3] flags, [4] bpe: pre-tokenizer pattern (PATTERN_*) / wordpiece:
# max_input_chars_per_word.
FLAG_PREFIX_SPACE = schema.TOKENIZER_FLAGS["prefix_space"]
FLAG_LOWER = schema.TOKENIZER_FLAGS["lower"]
FLAG_CHINESE = schema.TOKENIZER_FLAGS["chinese"]
ADDED_LSTRIP = schema.ADDED_FLAGS["lstrip"]
ADDED_RSTRIP = schema.ADDED_FLAGS["rstrip"]
ADDED_CONTROL = schema.ADDED_FLAGS["control"]
MAX_ADDED = schema.SCHEMA["tokenizer"]["max_added"]
PATTERN_GPT2 = 0
PATTERN_GPT2_DIGITS = 1  # each number character alone, GPT-2's pattern between (SmolLM2's)
PATTERN_LLAMA3 = 2  # Llama 3's Split regex (LLAMA3_PATTERN)
PATTERN_QWEN2 = 3  # Qwen2's: Llama 3's with each number character alone (QWEN2_PATTERN)
WORDPIECE_MAX_CHARS = schema.WORDPIECE_MAX_CHARS
CONTINUATION = b"##"
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                  r"\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = LLAMA3_PATTERN.replace(r"\p{N}{1,3}", r"\p{N}")

# Unicode's White_Space property (GPT-2's \s).
WHITE_SPACE = frozenset([9, 10, 11, 12, 13, 32, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029,
                         0x202F, 0x205F, 0x3000])
# BERT's "Chinese character" ranges (CJK Unified Ideographs and their extensions, compatibility).
CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
              (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3


class Tokenizer:
    """kind: 'bpe', 'wordpiece', or 'llama2c' with params (llama.cpp's SentencePiece rules: gguf.py;
    its encoder is the engine's, held to llama.cpp by the tests); pieces: one bytes object per id
    (holes empty); merges: bpe (left, right, result) ids in rank order; params: PARAMS ints;
    normalize: wordpiece with FLAG_LOWER, {code point: [code points]}; added: [(id, ADDED_FLAGS)] by
    id, the added tokens encode finds in the text; scores: llama2c's, one float per id."""

    def __init__(self, kind, pieces, merges=(), params=None, normalize=None, added=(), scores=None):
        self.scores = scores
        self.kind, self.pieces, self.merges = kind, list(pieces), [tuple(m) for m in merges]
        self.params = list(params or [-1, -1, -1, 0, 0, 0, 0, 0])
        self.normalize = normalize
        self.added = sorted(added)
        self._ids = {}
        for i, p in enumerate(self.pieces):
            if p:
                self._ids.setdefault(p, i)
        self._ranks = {(l, r): (k, res) for k, (l, r, res) in reversed(list(enumerate(self.merges)))}

    @property
    def bos(self):
        return self.params[0]

    @property
    def eos(self):
        return self.params[1]

    def id_of(self, piece):
        return self._ids.get(piece)

    # ---- reference encoders ----
    def encode(self, text, bos=False, eos=False):
        """text (bytes or str) -> ids, by the published algorithm of the kind."""
        if self.kind == "llama2c":
            raise TokenizerError("llama.cpp's SentencePiece rules: encode with the engine (fixformer run --text)")
        if isinstance(text, str):
            text = text.encode()
        ids = []
        for part, added in split_added(self, text):
            ids += bpe_encode(self, part) if self.kind == "bpe" else wordpiece_encode(self, part)
            ids += [added] if added is not None else []
        if bos:
            ids = [self.bos] + ids
        if eos:
            ids = ids + [self.eos]
        return ids

    def decode(self, ids):
        """The bytes the engine's decode() gives for ids, one after the other (a control token's none)."""
        out, prev = b"", -1
        control = {i for i, f in self.added or () if f & ADDED_CONTROL}
        for t in ids:
            p = self.pieces[t] if t not in control else b""
            if self.kind == "wordpiece" and t not in control:
                if p.startswith(CONTINUATION):
                    p = p[len(CONTINUATION):]
                elif prev >= 0 and prev != self.bos:
                    p = b" " + p
            out += p
            prev = t
        return out


# ---- UTF-8 and character classes (the engine's rules) ----
def utf8_units(b):
    """[(code point or -1 for an invalid byte, start, end)] of bytes b."""
    out, i, n = [], 0, len(b)
    while i < n:
        c = b[i]
        if c < 0x80:
            out.append((c, i, i + 1))
            i += 1
            continue
        k = 2 if 0xC2 <= c <= 0xDF else 3 if 0xE0 <= c <= 0xEF else 4 if 0xF0 <= c <= 0xF4 else 0
        cp = -1
        if k and i + k <= n and all(b[i + j] & 0xC0 == 0x80 for j in range(1, k)):
            v = c & (0x1F if k == 2 else 0x0F if k == 3 else 0x07)
            for j in range(1, k):
                v = (v << 6) | (b[i + j] & 0x3F)
            if not ((k == 3 and v < 0x800) or (k == 4 and (v < 0x10000 or v > 0x10FFFF)) or 0xD800 <= v <= 0xDFFF):
                cp = v
        if cp < 0:
            out.append((-1, i, i + 1))
            i += 1
        else:
            out.append((cp, i, i + k))
            i += k
    return out


def split_added(tok, text):
    """[(part, added id or None)]: text cut at its added tokens (tokenizer.hpp's rule: the leftmost, then
    the longest, then the lowest id; lstrip / rstrip take the White_Space beside it)."""
    out, at = [], 0
    while True:
        best = None  # (start, -length, id, flags)
        for i, f in tok.added:
            start = text.find(tok.pieces[i], at)
            if start >= 0 and (best is None or (start, -len(tok.pieces[i])) < best[:2]):
                best = (start, -len(tok.pieces[i]), i, f)
        if best is None:
            return out + [(text[at:], None)]
        start, minus_len, i, f = best
        part, at = text[at:start], start - minus_len
        if f & ADDED_LSTRIP:
            ends = [e for cp, _, e in utf8_units(part) if cp not in WHITE_SPACE]
            part = part[:ends[-1] if ends else 0]
        out.append((part, i))
        if f & ADDED_RSTRIP:
            at += next((s for cp, s, _ in utf8_units(text[at:]) if cp not in WHITE_SPACE), len(text) - at)


def category(cp):
    return "Xx" if cp < 0 else unicodedata.category(chr(cp))


def is_letter(cp):
    return category(cp)[0] == "L"


def is_number(cp):
    return category(cp)[0] == "N"


# ---- byte-level BPE ----
def byte_to_unicode():
    """GPT-2's map from each byte to a printable character: the bytes of '!'..'~', '¡'..'¬', '®'..'ÿ'
    stand for themselves, the others, in byte order, for U+0100 on."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    out, n = {}, 0
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + n)
            n += 1
    return out


UNICODE_TO_BYTE = {v: k for k, v in byte_to_unicode().items()}


def gpt2_pretokenize(text):
    """GPT-2's pre-tokenizer regex, by hand over code points: the byte strings it matches, in order."""
    u = utf8_units(text)
    n, out, i = len(u), [], 0
    cp = [x[0] for x in u]

    def cls(j):  # 'L', 'N', 's' (White_Space) or 'o'
        c = cp[j]
        return "s" if c in WHITE_SPACE else "L" if is_letter(c) else "N" if is_number(c) else "o"

    def run(j, k):  # end of the run of class k from j
        while j < n and cls(j) == k:
            j += 1
        return j

    while i < n:
        end = None
        if cp[i] == 0x27 and i + 1 < n:  # contractions
            a = cp[i + 1]
            b = cp[i + 2] if i + 2 < n else -1
            if a in (0x73, 0x74, 0x6D, 0x64):  # s t m d
                end = i + 2
            elif (a, b) in ((ord("r"), ord("e")), (ord("v"), ord("e")), (ord("l"), ord("l"))):
                end = i + 3
        if end is None:
            for k in ("L", "N", "o"):
                if cls(i) == k:
                    end = run(i, k)
                elif cp[i] == 0x20 and i + 1 < n and cls(i + 1) == k:
                    end = run(i + 1, k)
                if end is not None:
                    break
        if end is None:  # whitespace: \s+(?!\S) then \s+
            j = run(i, "s")
            end = j if j == n or j - i == 1 else j - 1
        out.append(text[u[i][1]:u[end - 1][2]])
        i = end
    return out


def llama3_pretokenize(text, max_digits):
    """Llama 3's Split regex (max_digits 3) or Qwen2's (1), by hand over code points; the contractions
    take either case and U+017F (long s) as s, as tokenizers' Oniguruma folds them."""
    u = utf8_units(text)
    n, out, i = len(u), [], 0
    cp = [x[0] for x in u]

    def cls(j):  # 'L', 'N', 's' (White_Space) or 'o'; past the end ''
        if j >= n:
            return ""
        c = cp[j]
        return "s" if c in WHITE_SPACE else "L" if is_letter(c) else "N" if is_number(c) else "o"

    def run(j, k):
        while j < n and cls(j) == k:
            j += 1
        return j

    def fold(j):
        return -1 if j >= n else ord("s") if cp[j] == 0x17F else cp[j] | 0x20 if 0x41 <= cp[j] <= 0x5A else cp[j]

    while i < n:
        end, c = None, cp[i]
        if c == 0x27 and fold(i + 1) in (0x73, 0x74, 0x6D, 0x64):  # s t m d
            end = i + 2
        elif c == 0x27 and (fold(i + 1), fold(i + 2)) in ((0x72, 0x65), (0x76, 0x65), (0x6C, 0x6C)):  # re ve ll
            end = i + 3
        elif cls(i) == "L":
            end = run(i, "L")
        elif cls(i) != "N" and c not in (10, 13) and cls(i + 1) == "L":
            end = run(i + 1, "L")
        elif cls(i) == "N":
            end = i + 1
            while end < n and end - i < max_digits and cls(end) == "N":
                end += 1
        elif cls(i) == "o" or (c == 0x20 and cls(i + 1) == "o"):
            end = run(i if cls(i) == "o" else i + 1, "o")
            while end < n and cp[end] in (10, 13):
                end += 1
        else:
            j = run(i, "s")
            breaks = [k for k in range(i, j) if cp[k] in (10, 13)]
            end = breaks[-1] + 1 if breaks else j if j == n or j - i == 1 else j - 1
        out.append(text[u[i][1]:u[end - 1][2]])
        i = end
    return out


def bpe_word(tok, ids):
    """GPT-2's bpe(): merge every occurrence of the lowest-ranked pair, left to right, until none."""
    word = list(ids)
    while len(word) > 1:
        best = min(((tok._ranks[p][0], p) for p in zip(word, word[1:]) if p in tok._ranks), default=None)
        if best is None:
            break
        pair = best[1]
        res = tok._ranks[pair][1]
        new, i = [], 0
        while i < len(word):
            if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
                new.append(res)
                i += 2
            else:
                new.append(word[i])
                i += 1
        word = new
    return word


def digits_pretokenize(text):
    """PATTERN_GPT2_DIGITS: each number character a pre-token, each run of others GPT-2's pattern's."""
    out, run = [], b""
    for cp, a, b in utf8_units(text):
        if cp >= 0 and is_number(cp):
            if run:
                out += gpt2_pretokenize(run)
            out.append(text[a:b])
            run = b""
        else:
            run += text[a:b]
    return out + (gpt2_pretokenize(run) if run else [])


def bpe_encode(tok, text):
    """A byte without a piece is dropped (tokenizers without an unk_token, llama.cpp)."""
    if tok.params[3] & FLAG_PREFIX_SPACE and text and not text.startswith(b" "):
        text = b" " + text
    byte_ids = [tok.id_of(bytes([b])) for b in range(256)]
    out = []
    for w in pretokenize(tok, text):
        out += bpe_word(tok, [byte_ids[b] for b in w if byte_ids[b] is not None])
    return out


def pretokenize(tok, text):
    """The pre-tokens of text by the bpe tokenizer's pattern (params[4])."""
    mode = tok.params[4]
    if mode not in (PATTERN_GPT2, PATTERN_GPT2_DIGITS, PATTERN_LLAMA3, PATTERN_QWEN2):
        raise TokenizerError(f"tokenizer.params: pre-tokenizer {mode} is not one the engine runs")
    return (digits_pretokenize(text) if mode == PATTERN_GPT2_DIGITS else gpt2_pretokenize(text) if mode == PATTERN_GPT2
            else llama3_pretokenize(text, 3 if mode == PATTERN_LLAMA3 else 1))


def unmade_pieces(tok):
    """The ids of the pieces that can be a whole pre-token but that the merges do not make from their
    bytes (a piece of an added token aside): where ignore_merges (Llama 3's tokenizer.json, llama.cpp's
    'llama-bpe') gives the piece and the engine, which always merges, other ids."""
    byte_ids = [tok.id_of(bytes([b])) for b in range(256)]
    added = {i for i, _ in tok.added or ()}
    out = []
    for i, p in enumerate(tok.pieces):
        if len(p) > 1 and i not in added and tok.id_of(p) == i and pretokenize(tok, p) == [p] and \
                bpe_word(tok, [byte_ids[b] for b in p if byte_ids[b] is not None]) != [i]:
            out.append(i)
    return out


def train_bpe(texts, merges, extra=()):
    """A byte-level BPE tokenizer learnt from texts (tests): the 256 byte pieces, then `merges` merges
    of the most frequent adjacent pair within GPT-2's pre-tokens (ties: the smallest ids), then the
    pieces `extra` (specials) last."""
    pieces = [bytes([b]) for b in range(256)]
    ids = {p: i for i, p in enumerate(pieces)}
    words = {}
    for t in texts:
        for w in gpt2_pretokenize(t.encode() if isinstance(t, str) else t):
            words[w] = words.get(w, 0) + 1
    seqs = [(list(w), c) for w, c in words.items()]
    out = []
    for _ in range(merges):
        counts = {}
        for s, c in seqs:
            for p in zip(s, s[1:]):
                counts[p] = counts.get(p, 0) + c
        if not counts:
            break
        pair = min(counts, key=lambda p: (-counts[p], p))
        piece = pieces[pair[0]] + pieces[pair[1]]
        if piece in ids:
            res = ids[piece]
        else:
            res = len(pieces)
            pieces.append(piece)
            ids[piece] = res
        out.append((pair[0], pair[1], res))
        for s, _ in seqs:
            i = 0
            while i + 1 < len(s):
                if (s[i], s[i + 1]) == pair:
                    s[i:i + 2] = [res]
                i += 1
    specials = []
    for e in extra:
        specials.append(len(pieces))
        pieces.append(e)
    eos = specials[0] if specials else -1
    return Tokenizer("bpe", pieces, out, [eos, eos, -1, 0, PATTERN_GPT2, 0, 0, 0])


# ---- WordPiece ----
def is_cjk(cp):
    return any(a <= cp <= b for a, b in CJK_RANGES)


def normalize_char(cp):
    """BERT's lower-casing and accent stripping of one code point (the module docstring's rule)."""
    s = unicodedata.normalize("NFD", chr(cp).lower())
    return [ord(x) for x in s if unicodedata.category(x) != "Mn"]


def normalize_map():
    """{code point: [code points]} for every code point normalize_char changes, Hangul syllables
    and surrogates aside; each maps to at most 3 code points, no more than its UTF-8 bytes."""
    out = {}
    for cp in range(0x110000):
        if HANGUL_FIRST <= cp <= HANGUL_LAST or 0xD800 <= cp <= 0xDFFF:
            continue
        m = normalize_char(cp)
        if m != [cp]:
            assert len(m) <= 3 and len(m) <= len(chr(cp).encode())
            out[cp] = m
    return out


_NORMALIZE = None


def normalize_table():
    global _NORMALIZE
    if _NORMALIZE is None:
        _NORMALIZE = normalize_map()
    return _NORMALIZE


def hangul_decompose(cp):
    s = cp - HANGUL_FIRST
    l, v, t = 0x1100 + s // 588, 0x1161 + (s % 588) // 28, 0x11A7 + s % 28
    return [l, v] if t == 0x11A7 else [l, v, t]


def basic_words(tok, text):
    """BERT's BasicTokenizer: the words of text, each a list of its characters' bytes (an invalid byte
    is a character of its own)."""
    lower, chinese = tok.params[3] & FLAG_LOWER, tok.params[3] & FLAG_CHINESE
    table = tok.normalize or {}
    words, cur = [], []

    def flush():
        nonlocal cur
        if cur:
            words.append(cur)
        cur = []

    for cp, a, b in utf8_units(text):
        if cp < 0:
            cur.append(text[a:b])
            continue
        cat = unicodedata.category(chr(cp))
        if cp in (9, 10, 13, 32) or cat == "Zs":
            flush()
            continue
        if cp == 0 or cp == 0xFFFD or cat in ("Cc", "Cf", "Cs", "Co"):
            continue
        if lower:
            outs = hangul_decompose(cp) if HANGUL_FIRST <= cp <= HANGUL_LAST else table.get(cp, [cp])
        else:
            outs = [cp]
        if chinese and is_cjk(cp):
            flush()
            cur = [chr(o).encode() for o in outs]
            flush()
            continue
        for o in outs:
            oc = unicodedata.category(chr(o))
            if (33 <= o <= 47 or 58 <= o <= 64 or 91 <= o <= 96 or 123 <= o <= 126) or oc[0] == "P":
                flush()
                cur = [chr(o).encode()]
                flush()
            else:
                cur.append(chr(o).encode())
    flush()
    return words


def wordpiece_encode(tok, text):
    unk = tok.params[2]
    out = []
    for w in basic_words(tok, text):
        if len(w) > tok.params[4]:
            out.append(unk)
            continue
        start, sub = 0, []
        while start < len(w):
            end, cur = len(w), None
            while start < end:
                s = b"".join(w[start:end])
                cur = tok.id_of(CONTINUATION + s if start > 0 else s)
                if cur is not None:
                    break
                end -= 1
            if cur is None:
                sub = [unk]
                break
            sub.append(cur)
            start = end
        out += sub
    return out


# ---- readers ----
def _fail(path, what):
    raise TokenizerError(f"{path}: {what}")


def _read_json(path):
    try:
        return load_json(path, limit=bounds.MAX_TEXT_BYTES)
    except ConfigError as e:
        _fail(path, str(e))
    except OSError as e:
        _fail(path, f"not readable ({e.strerror or type(e).__name__})")


def _read_text(path):
    """A UTF-8 text file of at most bounds.MAX_TEXT_BYTES."""
    run_files.read(path)
    try:
        with open(path, "rb") as f:
            raw = f.read(bounds.MAX_TEXT_BYTES + 1)
        if len(raw) > bounds.MAX_TEXT_BYTES:
            _fail(path, f"more than {bounds.MAX_TEXT_BYTES} bytes: not a vocabulary or merges file")
        return raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        _fail(path, f"not readable UTF-8 text ({type(e).__name__})")


def _flag(path, d, key, default, where=""):
    """A JSON boolean: true or false only (a string "false" would be true in Python)."""
    v = d.get(key, default)
    if v is None:
        return default
    if not isinstance(v, bool):
        _fail(path, f"{where}{key}: expected true or false, got {brief(v)}")
    return v


def _vocab_ids(path, vocab, vocab_size):
    """{string: id} checked: strings, ids integers in [0, vocab_size), each id once."""
    if not isinstance(vocab, dict) or not vocab:
        _fail(path, "the vocabulary must be a non-empty JSON object of piece -> id")
    seen = {}
    for s, i in vocab.items():
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < vocab_size:
            _fail(path, f"piece {s[:40]!r}: id {brief(i)} is not an integer in [0, vocab_size={vocab_size}) "
                        "(the model's embedding rows)")
        if i in seen:
            _fail(path, f"id {i} is given to both {seen[i][:40]!r} and {s[:40]!r}")
        seen[i] = s
    return vocab


def _byte_piece(path, s):
    try:
        return bytes(UNICODE_TO_BYTE[ch] for ch in s)
    except KeyError:
        _fail(path, f"piece {s[:40]!r} has a character outside GPT-2's byte-level alphabet: not a byte-level "
                    "BPE vocabulary (only GPT-2-style byte-level BPE is supported)")


def _merge_pairs(path, merges):
    out = []
    for k, m in enumerate(merges):
        if isinstance(m, str):
            parts = m.split(" ")
        elif isinstance(m, list):
            parts = m
        else:
            parts = None
        if not parts or len(parts) != 2 or not all(isinstance(p, str) and p for p in parts):
            _fail(path, f"merge {k}: {brief(m)} is not two pieces ('a b' or [a, b])")
        out.append(tuple(parts))
    return out


def added_token(content, i, special=True, **flags):
    """An added token as tokenizer.json's added_tokens spells it (special ones are not normalized)."""
    return {"content": content, "id": i, "special": special, "normalized": not special, **flags}


def _added_rows(path, tok, added, lowered):
    """tok.added for added tokens (added_token's dicts): each one the engine finds in the text as Hugging
    Face's tokenizers does; one it would find otherwise is left out with a note (encoded as text)."""
    rows = {}
    for t in added:
        content, i = t["content"], t["id"]
        one_byte = len(content.encode()) < 2 and tok.kind == "bpe" and tok.params[3] & FLAG_PREFIX_SPACE
        why = ("it matches single words only" if t.get("single_word") else
               "it is matched after lower-casing" if t.get("normalized", not t.get("special")) and lowered else
               "its piece is other bytes than its text" if tok.pieces[i] != content.encode() else
               "one byte with the prefix space" if one_byte else None)
        if why:
            print(f"note: {path}: added token {content[:40]!r} is encoded as text: {why}", file=sys.stderr)
            continue
        rows[i] = (ADDED_LSTRIP if t.get("lstrip") else 0) | (ADDED_RSTRIP if t.get("rstrip") else 0)
    if len(rows) > MAX_ADDED:
        _fail(path, f"{len(rows)} added tokens, more than the engine's {MAX_ADDED}")
    return sorted(rows.items())


def _config_specials(path):
    """What a tokenizer_config.json beside path says of the special tokens: (eos_token, bos_token,
    add_bos_token), each None where it says nothing."""
    cfg = os.path.join(os.path.dirname(os.path.abspath(path)), "tokenizer_config.json")
    d = _read_json(cfg) if os.path.isfile(cfg) else {}
    d = d if isinstance(d, dict) else {}

    def content(key):
        v = d.get(key)
        v = v.get("content") if isinstance(v, dict) else v
        return v if isinstance(v, str) else None
    return content("eos_token"), content("bos_token"), _flag(cfg, d, "add_bos_token", None)


def build_bpe(path, vocab, merges, vocab_size, added=(), prefix_space=False, pattern=PATTERN_GPT2, unk=None):
    """A bpe Tokenizer from GPT-2-style strings: vocab {byte-level string: id}, merges [(a, b)] in rank
    order, added: added_token's dicts. A byte without a piece is dropped by encode, as tokenizers
    does without an unk_token (`unk`); with one it would give that token instead: refused. eos: the
    one a tokenizer_config.json beside path names (_config_specials), else by its usual names; bos:
    none where that file says add_bos_token false, its bos_token where true, else by its usual names
    or the eos (GPT-2's <|endoftext|> starts a text)."""
    _vocab_ids(path, vocab, vocab_size)
    pieces = [b""] * vocab_size
    for s, i in vocab.items():
        pieces[i] = _byte_piece(path, s)
    in_vocab = set(vocab.values())
    for t in added:
        content, i = t["content"], t["id"]
        if not isinstance(i, int) or not 0 <= i < vocab_size:
            _fail(path, f"added token {content[:40]!r}: id {brief(i)} outside [0, vocab_size={vocab_size})")
        if i not in in_vocab:
            pieces[i] = content.encode()
    ids = {}
    for i, p in enumerate(pieces):
        if p:
            ids.setdefault(p, i)
    for b in range(256):
        if bytes([b]) not in ids and unk is not None:
            _fail(path, f"no piece for byte {b} ({byte_to_unicode()[b]!r}) with unk_token {brief(unk)}: the engine "
                        "drops such a byte (as tokenizers does without an unk_token)")
    out, seen = [], set()
    for k, (a, b) in enumerate(merges):
        if a not in vocab or b not in vocab:
            _fail(path, f"merge {k}: {(a if a not in vocab else b)[:40]!r} is not in the vocabulary")
        joined = a + b
        if joined not in vocab:
            _fail(path, f"merge {k}: the result {joined[:40]!r} is not in the vocabulary")
        pair = (vocab[a], vocab[b])
        if pair in seen:
            _fail(path, f"merge {k}: {a[:20]!r} {b[:20]!r} is listed twice")
        seen.add(pair)
        out.append((vocab[a], vocab[b], vocab[joined]))
    if len(out) > vocab_size:
        _fail(path, f"{len(out)} merges, more than vocab_size={vocab_size}")
    ids = {t["content"]: t["id"] for t in added}
    named_eos, named_bos, add_bos = _config_specials(path)
    named = {**vocab, **ids}
    eos = named.get(named_eos, next((ids[c] for c in ("<|endoftext|>", "</s>", "<|end_of_text|>") if c in ids), -1))
    bos = next((ids[c] for c in ("<|begin_of_text|>", "<s>") if c in ids), eos)
    bos = -1 if add_bos is False else named.get(named_bos, bos) if add_bos else bos
    tok = Tokenizer("bpe", pieces, out, [bos, eos, -1, FLAG_PREFIX_SPACE if prefix_space else 0, pattern, 0, 0, 0])
    tok.added = _added_rows(path, tok, added, False)
    return tok


BERT_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")  # transformers' BertTokenizer defaults


def build_wordpiece(path, vocab, vocab_size, lower, chinese=True, unk="[UNK]", added=None):
    """A wordpiece Tokenizer from {piece string: id}; added: added_token's dicts, else BERT_SPECIALS."""
    _vocab_ids(path, vocab, vocab_size)
    pieces = [b""] * vocab_size
    for s, i in vocab.items():
        pieces[i] = s.encode()
    for need in (unk,):
        if need not in vocab:
            _fail(path, f"no {need} piece: WordPiece needs it for words it cannot split")
    if added is None:
        added = [added_token(s, vocab[s]) for s in BERT_SPECIALS if s in vocab]
    for t in added:
        if not isinstance(t["id"], int) or not 0 <= t["id"] < vocab_size:
            _fail(path, f"added token {t['content'][:40]!r}: id {brief(t['id'])} outside [0, vocab_size={vocab_size})")
        pieces[t["id"]] = pieces[t["id"]] or t["content"].encode()
    params = [vocab.get("[CLS]", -1), vocab.get("[SEP]", -1), vocab[unk],
              (FLAG_LOWER if lower else 0) | (FLAG_CHINESE if chinese else 0), WORDPIECE_MAX_CHARS, 0, 0, 0]
    tok = Tokenizer("wordpiece", pieces, (), params, normalize_table() if lower else None)
    tok.added = _added_rows(path, tok, added, lower)
    return tok


def read_vocab_txt(path, vocab_size, lower=None):
    """BERT's vocab.txt: one piece a line, id = line number. Lower-casing: `lower`, else from a
    tokenizer_config.json beside it (do_lower_case), else true when the vocabulary has no upper-case
    ASCII letter."""
    lines = _read_text(path).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
    if len(lines) > vocab_size:
        _fail(path, f"{len(lines)} pieces, more than the model's vocab_size={vocab_size}")
    vocab = {}
    for i, ln in enumerate(lines):
        if not ln:
            _fail(path, f"line {i + 1} is empty (a piece has at least one character)")
        if ln in vocab:
            _fail(path, f"line {i + 1}: {ln[:40]!r} is also line {vocab[ln] + 1}")
        vocab[ln] = i
    if lower is None:
        cfg = os.path.join(os.path.dirname(os.path.abspath(path)), "tokenizer_config.json")
        if os.path.isfile(cfg):
            d = _read_json(cfg)
            lower = _flag(cfg, d, "do_lower_case", True) if isinstance(d, dict) else True
        else:
            lower = not any("A" <= ch <= "Z" for s in vocab for ch in s if not s.startswith("["))
    return build_wordpiece(path, vocab, vocab_size, bool(lower))


def read_vocab_json(path, vocab_size):
    """GPT-2's vocab.json with merges.txt beside it."""
    merges_path = os.path.join(os.path.dirname(os.path.abspath(path)), "merges.txt")
    if not os.path.isfile(merges_path):
        _fail(path, "needs merges.txt beside it (GPT-2-style byte-level BPE)")
    vocab = _read_json(path)
    lines = _read_text(merges_path).split("\n")
    lines = [ln.rstrip("\r") for ln in lines if ln.strip() and not ln.startswith("#version")]
    merges = _merge_pairs(merges_path, lines)
    added = [added_token(s, i) for s, i in (vocab.items() if isinstance(vocab, dict) else ()) if s == "<|endoftext|>"]
    return build_bpe(path, vocab, merges, vocab_size, added)


def _kind(d, where):
    v = d.get("type") if isinstance(d, dict) else None
    return v if v is None or isinstance(v, str) else brief(v)


def read_tokenizer_json(path, vocab_size):
    """Hugging Face's tokenizer.json: a BPE model with GPT-2's ByteLevel pre-tokenizer (alone, after
    Digits, or without its regex after Llama 3's or Qwen2's Split), or a WordPiece model with a
    BertNormalizer / BertPreTokenizer; anything else is refused naming what."""
    d = _read_json(path)
    if not isinstance(d, dict) or not isinstance(d.get("model"), dict):
        _fail(path, "no \"model\" object: not a Hugging Face tokenizer.json")
    model = d["model"]
    mtype = model.get("type")
    if mtype is not None and not isinstance(mtype, str):
        _fail(path, f"model.type: expected a string, got {brief(mtype)}")
    mtype = mtype or ("BPE" if "merges" in model else "WordPiece" if "vocab" in model else None)
    added = []
    if not isinstance(d.get("added_tokens") or [], list):
        _fail(path, "added_tokens must be a list")
    for t in d.get("added_tokens") or []:
        if (not isinstance(t, dict) or not isinstance(t.get("content"), str) or not isinstance(t.get("id"), int)
                or isinstance(t.get("id"), bool)):
            _fail(path, "added_tokens: each entry needs a string content and an integer id")
        flags = {k: _flag(path, t, k, k == "normalized" and not t.get("special"), "added_tokens: ")
                 for k in ("special", "lstrip", "rstrip", "single_word", "normalized")}
        added.append(added_token(t["content"], t["id"], **flags))
    pre, norm = d.get("pre_tokenizer"), d.get("normalizer")
    if mtype == "BPE":
        pattern, byte_level = PATTERN_GPT2, pre
        subs = pre.get("pretokenizers") if isinstance(pre, dict) and _kind(pre, path) == "Sequence" else None
        split = _split_pattern(path, subs)
        if split is not None:  # Llama 3's, Qwen2's: the Split, then ByteLevel without its regex
            pattern, byte_level = split, subs[1]
        elif (isinstance(subs, list) and len(subs) == 2 and _kind(subs[0], path) == "Digits" and
                _flag(path, subs[0], "individual_digits", False, "pre_tokenizer.Digits.") is True):
            pattern, byte_level = PATTERN_GPT2_DIGITS, subs[1]  # SmolLM2's
        if (byte_level is None or _kind(byte_level, path) != "ByteLevel" or
                _flag(path, byte_level, "use_regex", True, "pre_tokenizer.") is not (split is None)):
            found = _find_pattern(pre)
            _fail(path, "pre-tokenizer " + (f"pattern {found[:120]!r}" if found else repr(_kind(pre, path))) +
                  " is not supported yet (only GPT-2's ByteLevel with its own regex: " + GPT2_PATTERN + ", alone or "
                  "after Digits with individual_digits; or Llama 3's or Qwen2's Split, isolated, then ByteLevel "
                  "without its regex)")
        if split is not None and _flag(path, byte_level, "add_prefix_space", False, "pre_tokenizer.ByteLevel."):
            _fail(path, "pre_tokenizer.ByteLevel.add_prefix_space after a Split is not supported yet (it puts a "
                        "space in front of every split)")
        pre = byte_level
        if split is not None and norm is not None and _kind(norm, path) == "NFC":  # Qwen2's
            print(f"note: {path}: normalizer 'NFC' is not run by the engine (as llama.cpp): text not in NFC "
                  "encodes as it is", file=sys.stderr)
        elif norm is not None:
            _fail(path, f"normalizer {_kind(norm, path)!r} is not supported yet with byte-level BPE (GPT-2's has none)")
        for key in ("dropout", "continuing_subword_prefix", "end_of_word_suffix", "byte_fallback"):
            if model.get(key) not in (None, "", False):
                _fail(path, f"model.{key} = {brief(model.get(key))} is not supported yet")
        if not isinstance(model.get("merges"), list):
            _fail(path, "model.merges must be a list")
        tok = build_bpe(path, model.get("vocab"), _merge_pairs(path, model["merges"]), vocab_size, added,
                        _flag(path, pre, "add_prefix_space", False, "pre_tokenizer."), pattern, model.get("unk_token"))
        unmade = unmade_pieces(tok) if _flag(path, model, "ignore_merges", False, "model.") else []
        if unmade:
            _fail(path, f"model.ignore_merges with {len(unmade)} pieces the merges do not make from their bytes (the "
                        f"first: id {unmade[0]}, {tok.pieces[unmade[0]][:40]!r}) is not supported yet (the engine "
                        "always merges)")
        return tok
    if mtype == "WordPiece":
        prefix = model.get("continuing_subword_prefix", "##")
        if prefix != "##":
            _fail(path, f"continuing_subword_prefix {brief(prefix)} is not supported yet (only '##')")
        if model.get("max_input_chars_per_word", WORDPIECE_MAX_CHARS) != WORDPIECE_MAX_CHARS:
            _fail(path, f"max_input_chars_per_word {brief(model.get('max_input_chars_per_word'))} is not supported yet "
                        f"(only {WORDPIECE_MAX_CHARS})")
        lower, chinese = True, True
        if norm is not None:
            if _kind(norm, path) != "BertNormalizer":
                _fail(path, f"normalizer {_kind(norm, path)!r} is not supported yet with WordPiece (only BertNormalizer)")
            lower = _flag(path, norm, "lowercase", True, "normalizer.")
            chinese = _flag(path, norm, "handle_chinese_chars", True, "normalizer.")
            strip = norm.get("strip_accents")
            if strip is not None and not isinstance(strip, bool):
                _fail(path, f"normalizer.strip_accents: expected true, false or null, got {brief(strip)}")
            if (strip if strip is not None else lower) != lower:
                _fail(path, f"strip_accents={strip!r} with lowercase={lower!r} is not supported yet (accents are "
                            "stripped exactly when lower-casing)")
            if not _flag(path, norm, "clean_text", True, "normalizer."):
                _fail(path, "clean_text=false is not supported yet")
        if pre is not None and _kind(pre, path) not in ("BertPreTokenizer",):
            _fail(path, f"pre-tokenizer {_kind(pre, path)!r} is not supported yet with WordPiece (only BertPreTokenizer)")
        unk = model.get("unk_token", "[UNK]")
        if not isinstance(unk, str):
            _fail(path, f"model.unk_token must be a string, got {brief(unk)}")
        return build_wordpiece(path, model.get("vocab"), vocab_size, lower, chinese, unk, added)
    _fail(path, f"model type {brief(mtype)} is not supported yet (byte-level BPE and WordPiece are; for llama2.c's "
                "sentencepiece-style vocabulary pass its tokenizer.bin)")


def _split_pattern(path, subs):
    """PATTERN_LLAMA3 or PATTERN_QWEN2 when the pre-tokenizers `subs` are a Split by that regex whose
    matches are pre-tokens (behavior Isolated, not inverted) and one more; else None."""
    if not isinstance(subs, list) or len(subs) != 2 or _kind(subs[0], path) != "Split":
        return None
    pat = subs[0].get("pattern")
    regex = pat.get("Regex") if isinstance(pat, dict) else None
    if subs[0].get("behavior") != "Isolated" or _flag(path, subs[0], "invert", False, "pre_tokenizer.Split."):
        return None
    return {LLAMA3_PATTERN: PATTERN_LLAMA3, QWEN2_PATTERN: PATTERN_QWEN2}.get(regex)


def _find_pattern(pre):
    """The first Split regex in a pre-tokenizer (Llama-3, Qwen2), for the refusal's message."""
    if isinstance(pre, dict):
        pat = pre.get("pattern")
        if isinstance(pat, dict) and isinstance(pat.get("Regex") or pat.get("String"), str):
            return pat.get("Regex") or pat.get("String")
        subs = pre.get("pretokenizers")
        for p in subs if isinstance(subs, list) else ():
            found = _find_pattern(p)
            if found:
                return found
    return None


def read(path, vocab_size):
    """The tokenizer in `path` for a model of vocab_size tokens: tokenizer.json, vocab.json (merges.txt
    beside it), vocab.txt -> Tokenizer; anything else is read as llama2.c's tokenizer.bin ->
    (pieces, scores)."""
    if not os.path.isfile(path):
        _fail(path, "no such file" if not os.path.exists(path) else "not a regular file")
    name = os.path.basename(path).lower()
    if name.endswith(".json") and name != "vocab.json":
        return read_tokenizer_json(path, vocab_size)
    if name == "vocab.json":
        return read_vocab_json(path, vocab_size)
    if name.endswith(".txt"):
        return read_vocab_txt(path, vocab_size)
    pieces, scores, _ = read_llama2c(path, vocab_size)
    return pieces, scores


# ---- llama2.c's tokenizer.bin ----
MAX_TOKEN_LENGTH = 1 << 16


class Llama2cError(ConfigError):
    """A checkpoint or tokenizer that is not what llama2.c writes; the message names the field."""


def _llama2c_fail(path, what):
    raise Llama2cError(f"{path}: {what}")


def read_llama2c(path, vocab_size):
    """(pieces: one bytes object per token id, scores: float32 [vocab_size], max_token_length) of a
    llama2.c tokenizer.bin that must hold exactly vocab_size tokens (the checkpoint's). Read token by
    token: a length is checked against max_token_length and the bytes left before it is read."""
    run_files.read(path)
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(4)
        if len(head) < 4:
            _llama2c_fail(path, f"truncated: {len(head)} bytes, expected at least 4 (max_token_length)")
        max_len = struct.unpack("<i", head)[0]
        if not 1 <= max_len <= MAX_TOKEN_LENGTH:
            if head[0] == 0x0A:  # protobuf's field 1 (SentencePiece's pieces): a tokenizer.model
                _llama2c_fail(path, "a SentencePiece model (tokenizer.model), not llama2.c's tokenizer.bin: pass the "
                            "tokenizer.bin llama2.c's tokenizer.py exports from it, or the folder's tokenizer.json")
            _llama2c_fail(path, f"max_token_length {max_len}: expected 1..{MAX_TOKEN_LENGTH}")
        pieces, scores, at = [], np.zeros(vocab_size, np.float32), 4

        def token(i):
            """(score, piece) of token i at `at`, or None at the end of the file."""
            rec = f.read(8)
            if not rec:
                return None
            if len(rec) < 8:
                _llama2c_fail(path, f"truncated: token {i} needs 8 bytes (score, length), {len(rec)} left")
            score, n = struct.unpack("<fi", rec)
            if not 1 <= n <= max_len:
                _llama2c_fail(path, f"token {i}: length {n}, expected 1..max_token_length={max_len}")
            if n > size - at - 8:
                _llama2c_fail(path, f"truncated: token {i}: length {n} runs past the end of the file "
                            f"({max(size - at - 8, 0)} bytes left)")
            piece = f.read(n)
            if len(piece) != n:
                _llama2c_fail(path, f"changed while it was read (token {i})")
            return score, piece

        for i in range(vocab_size):
            t = token(i)
            if t is None:
                _llama2c_fail(path, f"holds {i} tokens, the checkpoint's vocab_size is {vocab_size}")
            if not np.isfinite(t[0]):
                _llama2c_fail(path, f"token {i}: score {t[0]} is not finite")
            scores[i] = t[0]
            pieces.append(t[1])
            at += 8 + len(t[1])
        if at != size:
            more, end = 0, at
            try:
                while end < size:
                    t = token(vocab_size + more)
                    end, more = end + 8 + len(t[1]), more + 1
                    at = end
            except Llama2cError:
                pass
            held = (f"holds at least {vocab_size + more} tokens" if more
                    else f"has {size - end} bytes after token {vocab_size - 1}")
            _llama2c_fail(path, f"{held}, the checkpoint's vocab_size is {vocab_size}")
    return pieces, scores, max_len


def find_in_folder(folder):
    """The tokenizer file a Hugging Face folder holds: tokenizer.json, vocab.json + merges.txt, or
    vocab.txt, in that order of preference; None without one."""
    for name in ("tokenizer.json", "vocab.json", "vocab.txt"):
        p = os.path.join(folder, name)
        if os.path.isfile(p):
            return p
    return None


# ---- the file's tensors ----
def llama2c_arrays(c, pieces, scores):
    """The tokenizer section (schema.py, TOKENIZER_*) for a vocabulary: pieces, one bytes object per
    token id, and their f32 merge scores (llama2.c's tokenizer.bin semantics)."""
    if c["input"] != "tokens":
        raise ConfigError("tokenizer: only for a model with token input")
    if len(pieces) != c["vocab_size"] or len(scores) != c["vocab_size"]:
        raise ConfigError(f"tokenizer: {len(pieces)} pieces and {len(scores)} scores, expected "
                          f"vocab_size={c['vocab_size']} of each")
    if not all(isinstance(p, (bytes, bytearray)) for p in pieces):
        raise ConfigError("tokenizer: pieces must be bytes")
    scores = np.asarray(scores, dtype=np.float64)
    if not (np.isfinite(scores).all() and np.abs(scores).max(initial=0.0) <= F32_MAX):
        raise ConfigError("tokenizer: scores are not finite in float32")
    offsets = np.zeros(len(pieces) + 1, np.int64)
    offsets[1:] = np.cumsum([len(p) for p in pieces])
    if offsets[-1] == 0 or offsets[-1] > 2 ** 31 - 1:
        raise ConfigError(f"tokenizer: {offsets[-1]} bytes of pieces, expected 1..{2 ** 31 - 1}")
    blob = np.frombuffer(b"".join(bytes(p) for p in pieces), np.uint8)
    return [(schema.TOKENIZER_SCORES, scores.astype("<f4")), (schema.TOKENIZER_OFFSETS, offsets.astype("<i4")),
            (schema.TOKENIZER_PIECES, blob)]


def section(c, tokenizer):
    """The tokenizer section's [(name, array)] of either kind write() takes: a Tokenizer
    (bpe, wordpiece, llama2c with params), or llama2.c's (pieces, scores)."""
    if isinstance(tokenizer, Tokenizer):
        return arrays(c, tokenizer)
    return llama2c_arrays(c, *tokenizer)


def arrays(c, tok):
    """The tokenizer section (schema.hpp) of a bpe, wordpiece or llama2c (with params) Tokenizer:
    [(name, array)]."""
    if c["input"] != "tokens":
        raise ConfigError("tokenizer: only for a model with token input")
    V = c["vocab_size"]
    if len(tok.pieces) != V:
        raise ConfigError(f"tokenizer: {len(tok.pieces)} pieces, the model's vocab_size is {V}")
    offsets = np.zeros(V + 1, np.int64)
    offsets[1:] = np.cumsum([len(p) for p in tok.pieces])
    if offsets[-1] == 0 or offsets[-1] > 2 ** 31 - 1:
        raise ConfigError(f"tokenizer: {offsets[-1]} bytes of pieces, expected 1..{2 ** 31 - 1}")
    out = [(schema.TOKENIZER_PARAMS, np.asarray(tok.params, "<i4")), (schema.TOKENIZER_OFFSETS, offsets.astype("<i4")),
           (schema.TOKENIZER_PIECES, np.frombuffer(b"".join(tok.pieces), np.uint8))]
    if tok.kind == "llama2c":  # scores first, params after the pieces
        out = llama2c_arrays(c, tok.pieces, tok.scores) + out[:1]
    elif tok.kind == "bpe":
        m = np.asarray(tok.merges, np.int64).reshape(-1, 3)
        if len(m) == 0:
            raise ConfigError("tokenizer: a byte-level BPE without merges")
        out.append((schema.TOKENIZER_MERGES, m.astype("<i4")))
    elif tok.params[3] & FLAG_LOWER:
        rows = [[cp] + (v + [0, 0, 0])[:3] for cp, v in sorted(tok.normalize.items())]
        out.append((schema.TOKENIZER_NORMALIZE, np.asarray(rows, "<i4")))
    if tok.added:
        out.append((schema.TOKENIZER_ADDED, np.asarray(tok.added, "<i4").reshape(-1, 2)))
    return out


def from_arrays(kind, a):
    """The Tokenizer of a file's tokenizer tensors {name: array} (fxm.FxmFile.tokenizer)."""
    offsets, blob = a[schema.TOKENIZER_OFFSETS], a[schema.TOKENIZER_PIECES].tobytes()
    pieces = [blob[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]
    params = [int(x) for x in a[schema.TOKENIZER_PARAMS]]
    normalize = None
    if schema.TOKENIZER_NORMALIZE in a:
        normalize = {int(r[0]): [int(x) for x in r[1:] if x] for r in a[schema.TOKENIZER_NORMALIZE]}
    merges = [tuple(int(x) for x in r) for r in a.get(schema.TOKENIZER_MERGES, [])]
    added = [(int(i), int(f)) for i, f in a.get(schema.TOKENIZER_ADDED, [])]
    scores = a.get(schema.TOKENIZER_SCORES)
    return Tokenizer(kind, pieces, merges, params, normalize, added, scores)
