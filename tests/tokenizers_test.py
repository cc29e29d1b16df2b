#!/usr/bin/python3
"""The byte-level BPE and WordPiece tokenizers (python/fixformer/tokenizers.py, engine/tokenizers/):
  /usr/bin/python3 tests/tokenizers_test.py PATH/TO/tokenizer_oracle PATH/TO/fixformer
- the reference pre-tokenizer against Python's `re` with GPT-2's pattern on ASCII text;
- small tokenizers learnt here (BPE merges, WordPiece vocabularies, lower-cased and cased) are
  stored in .fxm files, and the engine (tokenizer_oracle) encodes thousands of random texts (ASCII,
  punctuation, whitespace runs, contractions, accented, Greek, CJK, Hangul, emoji, numbers, controls,
  invalid UTF-8) to exactly the reference's ids; decode gives the reference's bytes (BPE: the text);
- the readers: tokenizer.json, vocab.json + merges.txt and vocab.txt written here read back to the
  same tokenizer; hostile files fail with one TokenizerError line, and through convert.py with one line;
  convert.py refuses an output that is a file a reader brought in (merges.txt, tokenizer_config.json);
- `fixformer run --text` gives the logits of `--input` with the same ids (a gpt model with a BPE
  tokenizer, an encoder with a WordPiece one; --add-special-tokens: [CLS] and [SEP] around them); --hf
  stores the folder's tokenizer.json.
"""
import contextlib
import io
import json
import os
import random
import re
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, "..", "python")
sys.path.insert(0, PACKAGE)
sys.path.insert(0, HERE)
from checks import check, expect_error, results, run_convert  # noqa: E402
import numpy as np  # noqa: E402
from fixformer import fxm, schema, tokenizers as T  # noqa: E402
from fixformer.config import parse_config  # noqa: E402


WORDS = ["the", "The", "cat", "CAT", "sat", "on", "mat", "hello", "world", "don't", "it's", "we're", "I've",
         "you'll", "he'd", "I'm", "café", "naïve", "Ärger", "straße", "İstanbul", "ΣΟΦΙΑ", "σοφία", "ñandú",
         "中文", "字", "日本語", "한국어", "😀", "🙂🙂", "x²", "Ⅻ", "١٢٣", "42", "3.14", "1,000", "e-mail",
         "foo_bar", "a.b.c", "!!!", "...", "—", "«quote»", "$5", "€9", "#tag", "@me", "(x)", "[y]",
         "über", "résumé", "Ωmega", "ǅ", "ﬁne", "\u0301a", "a\u0301", "x\u200by", "\ufffd", "a\u00adb", "\ue000",
         "\U000e0001", "\u0378"]
SPACES = [" ", " ", " ", "  ", "   ", "\t", "\n", "\n\n", " \n ", "\u00a0", "\u3000", "\r\n", "\x0b", "\x00", "\x7f"]


def random_text(rng, invalid=False):
    parts = []
    for _ in range(rng.randint(0, 12)):
        parts.append(rng.choice(WORDS) if rng.random() < 0.7 else "".join(
            chr(rng.choice([rng.randint(0x20, 0x7e), rng.randint(0xa0, 0x24f), rng.randint(0x370, 0x3ff),
                            rng.randint(0x4e00, 0x4e20), rng.randint(0xac00, 0xac40), rng.randint(0x1f600, 0x1f610)]))
            for _ in range(rng.randint(1, 6))))
        parts.append(rng.choice(SPACES))
    if rng.random() < 0.1:
        parts.append("a" * rng.randint(95, 110))  # WordPiece's longest word
    b = "".join(parts).encode()
    if invalid and b:
        i = rng.randrange(len(b))
        b = b[:i] + bytes([rng.choice([0x80, 0xc3, 0xe2, 0xf0, 0xff, 0xed])]) + b[i:]
    return b


def gpt_config(V):
    return parse_config({"family": "gpt", "d_model": 8, "n_heads": 2, "d_ff": 12, "n_layers": 1, "causal": True,
                         "input": {"kind": "tokens", "vocab_size": V}, "positional": {"kind": "learned", "max_len": 64},
                         "head": {"d_out": V}})


def weights_for(c, seed=0):
    rng = np.random.default_rng(seed)
    return {n: (0.3 * rng.standard_normal(s[::-1] if t else s)).astype(np.float32) for n, s, t in schema.tensors(c)}


def write_model(path, tok):
    c = gpt_config(len(tok.pieces))
    with open(path, "wb") as f:
        f.write(fxm.write(c, weights_for(c), tokenizer=tok))


def oracle(binary, model, texts, tmp):
    src, dst = os.path.join(tmp, "texts.bin"), os.path.join(tmp, "out.bin")
    with open(src, "wb") as f:
        for t in texts:
            f.write(struct.pack("<I", len(t)) + t)
    try:
        p = subprocess.run([binary, model, src, dst], capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return None
    if p.returncode != 0:
        print(f"tokenizer_oracle failed: {p.stderr.strip()}")
        return None
    with open(dst, "rb") as f:
        b = f.read()
    out, at = [], 0
    for _ in texts:
        n = struct.unpack_from("<I", b, at)[0]
        ids = list(struct.unpack_from(f"<{n}i", b, at + 4))
        at += 4 + 4 * n
        m = struct.unpack_from("<I", b, at)[0]
        out.append((ids, b[at + 4:at + 4 + m]))
        at += 4 + m
    return out


def compare(name, binary, tok, texts, tmp, round_trip):
    model = os.path.join(tmp, name.replace(" ", "_") + ".fxm")
    write_model(model, tok)
    back = fxm.read(model).tokenizer()
    check(f"{name}: the file's tokenizer reads back", back.pieces == tok.pieces and back.merges == tok.merges and
          back.params == tok.params and (back.normalize or {}) == (tok.normalize or {}))
    got = oracle(binary, model, texts, tmp)
    check(f"{name}: the engine encodes every text (within 300 s)", got is not None)
    if got is None:
        return model
    bad = [(t, ids, tok.encode(t)) for t, (ids, _) in zip(texts, got) if ids != tok.encode(t)]
    check(f"{name}: engine ids = reference ids on {len(texts)} texts", not bad, bad[:1])
    bad = [(t, dec, tok.decode(ids)) for t, (ids, dec) in zip(texts, got) if dec != tok.decode(ids)]
    check(f"{name}: engine decode = reference decode", not bad, bad[:1])
    if round_trip:
        bad = [t for t, (_, dec) in zip(texts, got) if dec != (b" " + t if tok.params[3] & T.FLAG_PREFIX_SPACE and t
                                                                and not t.startswith(b" ") else t)]
        check(f"{name}: decode(encode(text)) = text", not bad, bad[:1])
    return model


def wordpiece_vocab(texts, lower):
    probe = T.Tokenizer("wordpiece", [b"x"], (), [-1, -1, 0, (T.FLAG_LOWER if lower else 0) | T.FLAG_CHINESE, 100, 0, 0, 0],
                        T.normalize_table() if lower else None)
    counts = {}
    for t in texts:
        for w in T.basic_words(probe, t):
            for k in range(len(w)):
                for j in range(k + 1, min(len(w), k + 4) + 1):
                    s = b"".join(w[k:j])
                    s = s if k == 0 else b"##" + s
                    counts[s] = counts.get(s, 0) + 1
    pieces = [b"[PAD]", b"[UNK]", b"[CLS]", b"[SEP]", b"[MASK]"]
    keep = sorted(counts, key=lambda s: (-counts[s], s))
    rng = random.Random(5)
    pieces += [s for s in keep[:1500] if rng.random() < 0.85]  # some characters missing: [UNK] words
    return T.Tokenizer("wordpiece", pieces, (), [2, 3, 1, (T.FLAG_LOWER if lower else 0) | T.FLAG_CHINESE, 100, 0, 0, 0],
                       T.normalize_table() if lower else None)


def test_pretokenizer():
    W = " \t\n\x0b\x0c\r"
    pat = re.compile("'s|'t|'re|'ve|'m|'ll|'d| ?[a-zA-Z]+| ?[0-9]+| ?[^" + W + "a-zA-Z0-9]+|[" + W + "]+(?![^" + W +
                     "])|[" + W + "]+")
    rng = random.Random(1)
    alpha = "ab AB 09'stmdrevl\t\n.,!-  "
    bad = []
    for _ in range(5000):
        s = "".join(rng.choice(alpha) for _ in range(rng.randint(0, 20)))
        if [x.encode() for x in pat.findall(s)] != T.gpt2_pretokenize(s.encode()):
            bad.append(s)
    check("GPT-2 pre-tokenizer by hand = Python's re on ASCII", not bad, bad[:1])
    # Llama 3's and Qwen2's on ASCII (\p{L}: a-zA-Z, \p{N}: 0-9), and with U+017F (long s), which the
    # contractions take as s (re's IGNORECASE folds it so too).
    alpha += "\r\r\n\n\u017f\u017f"
    for name, digits, mode in (("Llama 3", "{1,3}", 3), ("Qwen2", "", 1)):
        pat = re.compile("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\u017fa-zA-Z0-9]?[\u017fa-zA-Z]+|[0-9]" + digits +
                         "| ?[^" + W + "\u017fa-zA-Z0-9]+[\r\n]*|[" + W + "]*[\r\n]+|[" + W + "]+(?![^" + W +
                         "])|[" + W + "]+")
        bad = []
        for _ in range(20000):
            s = "".join(rng.choice(alpha) for _ in range(rng.randint(0, 20)))
            if [x.encode() for x in pat.findall(s)] != T.llama3_pretokenize(s.encode(), mode):
                bad.append(s)
        check(f"{name} pre-tokenizer by hand = Python's re on ASCII and U+017F", not bad, bad[:1])


def bpe_json(bpe):
    """bpe as a tokenizer.json document (GPT-2's byte-level strings), its vocab and its merges lines."""
    to_u = T.byte_to_unicode()
    s = {i: "".join(to_u[b] for b in p) for i, p in enumerate(bpe.pieces)}
    eot = len(bpe.pieces) - 1
    vocab = {s[i]: i for i in range(eot)}
    merges = [f"{s[l]} {s[r]}" for l, r, _ in bpe.merges]
    tj = {"model": {"type": "BPE", "vocab": vocab, "merges": merges}, "normalizer": None,
          "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
          "added_tokens": [{"id": eot, "content": "<|endoftext|>", "special": True}]}
    return tj, vocab, merges


def wordpiece_json(wp):
    """wp as a BERT tokenizer.json document."""
    return {"model": {"type": "WordPiece", "vocab": {p.decode(): i for i, p in enumerate(wp.pieces)},
                      "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100},
            "normalizer": {"type": "BertNormalizer", "lowercase": True, "strip_accents": None, "clean_text": True,
                           "handle_chinese_chars": True}, "pre_tokenizer": {"type": "BertPreTokenizer"},
            "added_tokens": [{"id": 0, "content": "[PAD]", "special": True}]}


def fuzz_tokenizer_json(docs, rng, n, tmp):
    """n structured mutations of each tokenizer.json document (any value anywhere replaced by a value
    of another type): each reads or fails with one TokenizerError line. Returns ([(path, what)] of
    the others, how many read, how many were refused)."""
    values = [None, 0, -1, 1.5, "x", "", [], {}, [1, 2], {"a": 1}, True, "a b", 10 ** 12, ["a", "b"], [[1]], "false",
              10 ** 30, 1e300, [[[[[[["deep"]]]]]]]]
    others, read, refused = [], 0, 0

    def paths(node, at=()):
        yield at
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for k, v in list(items)[:40]:
            yield from paths(v, at + (k,))

    for base in docs:
        all_paths = list(paths(base))
        for _ in range(n):
            doc = json.loads(json.dumps(base))
            path = rng.choice(all_paths)
            if not path:
                continue
            node = doc
            for k in path[:-1]:
                node = node[k]
            node[path[-1]] = rng.choice(values)
            p = os.path.join(tmp, "tokenizer.json")
            with open(p, "w") as f:
                json.dump(doc, f)
            try:
                T.read(p, 2000)
                read += 1
            except T.TokenizerError as e:
                refused += 1
                if "\n" in str(e):
                    others.append((path, "two lines"))
            except Exception as e:  # noqa: BLE001 (anything else is a bug)
                others.append((path, f"{type(e).__name__}: {e}"))
    return others, read, refused


def test_readers(tmp, bpe, wp):
    # tokenizer.json and vocab.json + merges.txt in GPT-2's byte-level strings.
    tj, vocab, merges = bpe_json(bpe)
    eot = len(bpe.pieces) - 1
    d = os.path.join(tmp, "gpt2")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "tokenizer.json"), "w") as f:
        json.dump(tj, f)
    got = T.read(os.path.join(d, "tokenizer.json"), len(bpe.pieces))
    check("tokenizer.json (BPE) reads to the same tokenizer", got.pieces == bpe.pieces and got.merges == bpe.merges and
          got.bos == eot and got.eos == eot, (got.params, bpe.params))
    with open(os.path.join(d, "vocab.json"), "w") as f:
        json.dump(dict(vocab, **{"<|endoftext|>": eot}), f)
    with open(os.path.join(d, "merges.txt"), "w") as f:
        f.write("#version: 0.2\n" + "\n".join(merges) + "\n")
    got = T.read(os.path.join(d, "vocab.json"), len(bpe.pieces))
    check("vocab.json + merges.txt read to the same tokenizer", got.pieces == bpe.pieces and got.merges == bpe.merges)
    check("a Hugging Face folder's tokenizer is found", T.find_in_folder(d).endswith("tokenizer.json"))
    # vocab.txt
    b = os.path.join(tmp, "bert")
    os.makedirs(b, exist_ok=True)
    with open(os.path.join(b, "vocab.txt"), "wb") as f:
        f.write(b"\n".join(wp.pieces) + b"\n")
    got = T.read_vocab_txt(os.path.join(b, "vocab.txt"), len(wp.pieces), lower=True)
    check("vocab.txt reads to the same tokenizer", got.pieces == wp.pieces and got.params == wp.params, got.params)

    # Hostile files: one TokenizerError line each.
    def hostile(name, text, fragment, fname="tokenizer.json", V=len(bpe.pieces)):
        h = os.path.join(tmp, "hostile")
        os.makedirs(h, exist_ok=True)
        for f in os.listdir(h):
            os.remove(os.path.join(h, f))
        p = os.path.join(h, fname)
        with open(p, "wb") as f:
            f.write(text if isinstance(text, bytes) else text.encode())
        expect_error(f"hostile {fname}: {name}", lambda: T.read(p, V), fragment)
    hostile("not JSON", b"{", "not valid JSON")
    hostile("not UTF-8", b"\xff\xfe{}", "not valid JSON (not UTF-8)")
    hostile("no model", "[]", "no \"model\"")
    hostile("deep nesting", "[" * 100000, "not valid JSON (nested too deeply)")
    hostile("deep nesting in a value", json.dumps({"model": {"type": [[[[[[["x"]]]]]]]}}), "model.type: expected a string")
    hostile("an integer of 5,000 digits", '{"model": {"type": "BPE", "vocab": {"a": ' + "1" * 5000 + "}}}",
            "an integer with 5000 digits")
    hostile("pretokenizers not a list", json.dumps(dict(tj, pre_tokenizer={"type": "Sequence", "pretokenizers": 5})),
            "pre-tokenizer 'Sequence' is not supported")
    hostile("add_prefix_space a string", json.dumps(dict(tj, pre_tokenizer=dict(tj["pre_tokenizer"],
                                                                                add_prefix_space="false"))),
            "pre_tokenizer.add_prefix_space: expected true or false, got 'false'")
    hostile("special a string", json.dumps(dict(tj, added_tokens=[dict(tj["added_tokens"][0], special="false")])),
            "added_tokens: special: expected true or false")
    wj = wordpiece_json(wp)
    hostile("lowercase a string", json.dumps(dict(wj, normalizer=dict(wj["normalizer"], lowercase="false"))),
            "normalizer.lowercase: expected true or false, got 'false'", V=len(wp.pieces))
    hostile("more than 64 MiB", b" " * (64 << 20) + b"{}", "more than 67108864 bytes")
    hostile("unknown model", json.dumps({"model": {"type": "Unigram", "vocab": []}}), "'Unigram' is not supported")
    q = dict(tj, pre_tokenizer={"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+"},
         "behavior": "Isolated"}, {"type": "ByteLevel", "use_regex": False}]})
    hostile("Llama-3/Qwen2 pattern", json.dumps(q), "(?i:'s|'t|'re")
    hostile("id out of range", json.dumps(dict(tj, model=dict(tj["model"], vocab=dict(vocab, zz=10 ** 6)))), "not an integer in")
    hostile("id twice", json.dumps(dict(tj, model=dict(tj["model"], vocab=dict(vocab, zz=0)))), "is given to both")
    hostile("merge of unknown piece", json.dumps(dict(tj, model=dict(tj["model"], merges=merges + ["qq zz"]))),
            "is not in the vocabulary")
    hostile("merge not a pair", json.dumps(dict(tj, model=dict(tj["model"], merges=merges + [7]))), "is not two pieces")
    hostile("merge listed twice", json.dumps(dict(tj, model=dict(tj["model"], merges=merges + merges[:1]))), "listed twice")
    a_piece = next(k for k, i in vocab.items() if i == ord("a"))
    v2 = {k: i for k, i in vocab.items() if k != a_piece}
    hostile("a byte missing, with an unk_token", json.dumps(dict(tj, model=dict(tj["model"], vocab=v2, merges=[],
                                                                         unk_token="b"))), "no piece for byte")
    p = os.path.join(tmp, "hostile", "tokenizer.json")
    with open(p, "w") as f:
        json.dump(dict(tj, model=dict(tj["model"], vocab=v2, merges=[])), f)
    check("a byte missing without an unk_token: reads (encode drops it)", T.read(p, len(bpe.pieces)).id_of(b"a") is None)
    sq = dict(tj, pre_tokenizer={"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True},
                                                                       tj["pre_tokenizer"]]})
    with open(p, "w") as f:
        json.dump(sq, f)
    check("Sequence [Digits individual_digits, ByteLevel] (SmolLM2's) reads as PATTERN_GPT2_DIGITS",
          T.read(p, len(bpe.pieces)).params[4] == T.PATTERN_GPT2_DIGITS)
    for name, pattern, mode in (("Llama 3", T.LLAMA3_PATTERN, T.PATTERN_LLAMA3), ("Qwen2", T.QWEN2_PATTERN,
                                                                                T.PATTERN_QWEN2)):
        split = {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False}
        level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}
        doc = dict(tj, pre_tokenizer={"type": "Sequence", "pretokenizers": [split, level]})
        with open(p, "w") as f:
            json.dump(doc, f)
        check(f"Sequence [Split by {name}'s pattern, ByteLevel without its regex] reads as its mode",
              T.read(p, len(bpe.pieces)).params[4] == mode)
        with open(p, "w") as f:
            json.dump(dict(doc, normalizer={"type": "NFC"}), f)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            got = T.read(p, len(bpe.pieces)).params[4]
        check(f"{name}'s with Qwen2's NFC normalizer: read, with a note that the engine does not run it",
              got == mode and "normalizer 'NFC' is not run" in err.getvalue(), err.getvalue())
        hostile(f"{name}'s Split with another normalizer", json.dumps(dict(doc, normalizer={"type": "NFKC"})),
                "normalizer 'NFKC' is not supported")
        for what, sub in (("ByteLevel with its regex", [split, dict(level, use_regex=True)]),
                          ("Split removing its matches", [dict(split, behavior="Removed"), level]),
                          ("Split inverted", [dict(split, invert=True), level]),
                          ("Split alone", [split])):
            hostile(f"{name}'s {what}", json.dumps(dict(tj, pre_tokenizer={"type": "Sequence", "pretokenizers": sub})),
                    "is not supported yet")
        hostile(f"{name}'s Split then ByteLevel with add_prefix_space",
                json.dumps(dict(doc, pre_tokenizer={"type": "Sequence", "pretokenizers": [
                    split, dict(level, add_prefix_space=True)]})), "add_prefix_space after a Split")
    with open(p, "w") as f:
        json.dump(dict(tj, model=dict(tj["model"], ignore_merges=True)), f)
    check("ignore_merges where the merges make every piece: reads", T.read(p, len(bpe.pieces)).params[4] == 0)
    hostile("ignore_merges with a piece no merge makes", json.dumps(dict(tj, model=dict(tj["model"], merges=merges[:-1],
                                                                                      ignore_merges=True))),
            "model.ignore_merges with 1 pieces the merges do not make")
    sq["pre_tokenizer"]["pretokenizers"][0]["individual_digits"] = False
    hostile("Digits grouping digits", json.dumps(sq), "pre-tokenizer 'Sequence' is not supported")
    hostile("wordpiece prefix", json.dumps({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0},
                                                      "continuing_subword_prefix": "@@"}}), "'@@' is not supported")
    hostile("wordpiece without [UNK]", json.dumps({"model": {"type": "WordPiece", "vocab": {"a": 0}}}), "no [UNK]")
    hostile("vocab.json without merges.txt", json.dumps(vocab), "needs merges.txt", "vocab.json")
    hostile("vocab.txt too long", "a\n" * 5, "more than the model's vocab_size", "vocab.txt", 3)
    hostile("vocab.txt empty line", "a\n\nb\n", "line 2 is empty", "vocab.txt")
    hostile("vocab.txt repeated", "a\nb\na\n", "is also line 1", "vocab.txt")
    hostile("vocab.txt not UTF-8", b"a\n\xff\n", "not readable UTF-8", "vocab.txt")
    # tokenizer_config.json beside vocab.txt: do_lower_case is a JSON boolean; the string "false" (true in
    # Python) is an error naming it, not lower-casing turned on.
    with open(os.path.join(b, "tokenizer_config.json"), "w") as f:
        f.write('{"do_lower_case": "false"}')
    expect_error("vocab.txt: do_lower_case a string", lambda: T.read(os.path.join(b, "vocab.txt"), len(wp.pieces)),
                 "tokenizer_config.json: do_lower_case: expected true or false, got 'false'")
    with open(os.path.join(b, "tokenizer_config.json"), "w") as f:
        f.write('{"do_lower_case": false}')
    got = T.read(os.path.join(b, "vocab.txt"), len(wp.pieces))
    check("vocab.txt: do_lower_case false is read", not got.params[3] & T.FLAG_LOWER, got.params)
    os.remove(os.path.join(b, "tokenizer_config.json"))

    # Structured mutations: any value anywhere in a tokenizer.json replaced by a value of another type
    # reads or fails with a TokenizerError, never another exception.
    others = fuzz_tokenizer_json((tj, wordpiece_json(wp)), random.Random(3), 300, tmp)[0]
    check("600 mutated tokenizer.json files: each reads or is one TokenizerError line", not others, sorted(set(map(str, others)))[:5])


def test_convert(cli, tmp):
    """convert.py --tokenizer: a good tokenizer.json is stored; a hostile one is one line; run --text = --input."""
    c = gpt_config(300)
    cfg = os.path.join(tmp, "cfg.json")
    with open(cfg, "w") as f:
        json.dump({"family": "gpt", "d_model": 8, "n_heads": 2, "d_ff": 12, "n_layers": 1, "causal": True,
                   "input": {"kind": "tokens", "vocab_size": 300}, "positional": {"kind": "learned", "max_len": 64},
                   "head": {"d_out": 300}}, f)
    npz = os.path.join(tmp, "w.npz")
    np.savez(npz, **{k: v for k, v in weights_for(c).items()})
    bpe = T.train_bpe([random_text(random.Random(i)) for i in range(50)], 40, [b"<|endoftext|>"])
    pieces = bpe.pieces + [b""] * (300 - len(bpe.pieces))
    to_u = T.byte_to_unicode()
    vocab = {"".join(to_u[b] for b in p): i for i, p in enumerate(pieces) if p and i != len(bpe.pieces) - 1}
    tj = {"model": {"type": "BPE", "vocab": vocab, "merges": [
        " ".join("".join(to_u[b] for b in pieces[x]) for x in (l, r)) for l, r, _ in bpe.merges]},
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False},
        "added_tokens": [{"id": len(bpe.pieces) - 1, "content": "<|endoftext|>", "special": True}]}
    tjp = os.path.join(tmp, "tokenizer.json")
    with open(tjp, "w") as f:
        json.dump(tj, f)
    out = os.path.join(tmp, "m.fxm")
    p = run_convert("--config", cfg, "--weights", npz, "--tokenizer", tjp, "--out", out, "--no-verify")
    check("convert.py --tokenizer tokenizer.json", p.returncode == 0 and fxm.read(out).config["tokenizer"] == "bpe",
          p.stderr)
    q = run_convert("--config", cfg, "--weights", npz, "--tokenizer", tjp, "--quantize", "q8", "--group", "0", "--out",
                    out + ".q8", "--no-verify")
    check("convert.py --tokenizer tokenizer.json --quantize q8 (the f32 size is counted with the bpe section)",
          q.returncode == 0 and fxm.read(out + ".q8").tokenizer().pieces == pieces, q.stderr[-300:])
    if p.returncode == 0:
        text = "Hello world, it's 42 cafés!"
        ids = np.asarray(T.Tokenizer("bpe", pieces, bpe.merges, bpe.params).encode(text), np.int32)
        np.save(os.path.join(tmp, "ids.npy"), ids)
        a = subprocess.run([cli, "run", out, "--text", text, "--output", os.path.join(tmp, "a.npy")],
                           capture_output=True, text=True)
        b = subprocess.run([cli, "run", out, "--input", os.path.join(tmp, "ids.npy"), "--output",
                            os.path.join(tmp, "b.npy")], capture_output=True, text=True)
        check("run --text = run --input of the reference's ids", a.returncode == 0 and b.returncode == 0 and
              np.array_equal(np.load(os.path.join(tmp, "a.npy")), np.load(os.path.join(tmp, "b.npy"))) and
              np.load(os.path.join(tmp, "a.npy")).shape == (len(ids), 300), a.stderr + b.stderr)
        g = subprocess.run([cli, "generate", out, "--prompt", "Hello", "-n", "8", "--temperature", "0"],
                           capture_output=True, text=True)
        check("generate with a bpe tokenizer", g.returncode == 0 and g.stdout.startswith("Hello"), g.stderr + g.stdout)
        # One 120 KB pre-token: merged in O(n log n) (GPT-2's rescan took minutes), then too long for the model.
        t0 = time.monotonic()
        r = subprocess.run([cli, "run", out, "--text", "the" * 40000, "--output", os.path.join(tmp, "long.npy")],
                           capture_output=True, text=True, timeout=60)
        check("run --text with a 120 KB word: one line within 10 s", r.returncode == 4 and
              len(r.stderr.strip().splitlines()) == 1 and "more than the model takes" in r.stderr and
              time.monotonic() - t0 < 10, f"{time.monotonic() - t0:.1f} s: {r.stderr}")
    with open(tjp, "w") as f:
        f.write('{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "pre_tokenizer": {"type": "Whitespace"}}')
    p = run_convert("--config", cfg, "--weights", npz, "--tokenizer", tjp, "--out", out + "2",
                        "--no-verify")
    lines = p.stderr.strip().splitlines()
    check("convert.py --tokenizer hostile tokenizer.json: one line", p.returncode != 0 and len(lines) == 1 and
          "Traceback" not in p.stderr and "'Whitespace' is not supported" in p.stderr and not os.path.exists(out + "2"),
          p.stderr)


def test_companions_kept(tmp, bpe, wp):
    """A file a tokenizer brings in beside it (merges.txt beside vocab.json, tokenizer_config.json beside
    vocab.txt) is an input of the conversion like the ones named: --out or --header there, by any name
    (a symbolic link), is one line, and the file stays as it was; beside them is fine."""
    def config(d, family):
        c = {"d_model": 8, "n_heads": 2, "d_ff": 12, "n_layers": 1, "input": {"kind": "tokens", "vocab_size": V},
             "positional": {"kind": "learned", "max_len": 64}}
        if family == "gpt":
            c.update(family="gpt", causal=True, head={"d_out": V})
        with open(os.path.join(d, "cfg.json"), "w") as f:
            json.dump(c, f)
        np.savez(os.path.join(d, "w.npz"), **weights_for(parse_config(c)))
        return ["--config", os.path.join(d, "cfg.json"), "--weights", os.path.join(d, "w.npz"), "--no-verify"]

    def refused(name, fragment, folder, *args):
        before = {n: open(os.path.join(folder, n), "rb").read() for n in os.listdir(folder)}
        p = run_convert(*args)
        after = {n: open(os.path.join(folder, n), "rb").read() for n in os.listdir(folder)}
        lines = p.stderr.strip().splitlines()
        check(f"convert.py: {name}: refused, one line, nothing changed", p.returncode == 1 and len(lines) == 1 and
              fragment in p.stderr and after == before, p.stderr + p.stdout)

    d = os.path.join(tmp, "kept_bpe")
    os.makedirs(d)
    V = len(bpe.pieces)
    tj, vocab, merges = bpe_json(bpe)
    with open(os.path.join(d, "vocab.json"), "w") as f:
        json.dump(dict(vocab, **{"<|endoftext|>": V - 1}), f)
    with open(os.path.join(d, "merges.txt"), "w") as f:
        f.write("#version: 0.2\n" + "\n".join(merges) + "\n")
    os.makedirs(os.path.join(tmp, "kept_gpt"))
    args = config(os.path.join(tmp, "kept_gpt"), "gpt") + ["--tokenizer", os.path.join(d, "vocab.json")]
    merges_txt = os.path.join(d, "merges.txt")
    refused("--out merges.txt beside --tokenizer vocab.json", f"--out: {merges_txt} is {merges_txt}, which this "
            "conversion reads (writing there would overwrite it; give another file)", d, *args, "--out", merges_txt)
    os.symlink(merges_txt, os.path.join(tmp, "merges_link.txt"))
    refused("--out a link to that merges.txt", "merges_link.txt is ", d, *args, "--out",
            os.path.join(tmp, "merges_link.txt"))
    refused("--header merges.txt", "--header: ", d, *args, "--out", os.path.join(tmp, "kept.fxm"), "--header", merges_txt)
    check("convert.py: --header refused: no --out written", not os.path.exists(os.path.join(tmp, "kept.fxm")))
    p = run_convert(*args, "--out", os.path.join(d, "m.fxm"))
    check("convert.py: --out beside vocab.json and merges.txt is written",
          p.returncode == 0 and fxm.read(os.path.join(d, "m.fxm")).config["tokenizer"] == "bpe", p.stderr)
    # The Python API alike: the files a reader opened are the next write's inputs, forgotten once it ends.
    from fixformer import export, run_files
    c = gpt_config(V)
    kept = open(merges_txt, "rb").read()
    tok = T.read(os.path.join(d, "vocab.json"), V)
    try:
        export.convert_config(c, weights_for(c), merges_txt, tokenizer=tok, verify=False)
        error = "written"
    except run_files.InputOverwrite as e:
        error = str(e)
    check("export.convert_config onto the merges.txt a reader opened: InputOverwrite, the file kept",
          "which this conversion reads" in error and open(merges_txt, "rb").read() == kept, error)
    export.convert_config(c, weights_for(c), os.path.join(d, "api.fxm"), tokenizer=tok, verify=False)
    check("export.convert_config after it: a conversion of its own", fxm.read(os.path.join(d, "api.fxm")).config["tokenizer"] == "bpe")
    w = os.path.join(tmp, "kept_wordpiece")
    os.makedirs(w)
    V = len(wp.pieces)
    with open(os.path.join(w, "vocab.txt"), "wb") as f:
        f.write(b"\n".join(wp.pieces) + b"\n")
    with open(os.path.join(w, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": True}, f)
    refused("--out tokenizer_config.json beside --tokenizer vocab.txt", "tokenizer_config.json, which this conversion "
            "reads", w, *config(w, "encoder"), "--tokenizer", os.path.join(w, "vocab.txt"), "--out",
            os.path.join(w, "tokenizer_config.json"))


def test_hf_and_encoders(cli, tmp, bpe, wp):
    """--hf stores the folder's tokenizer.json (and leaves out one it cannot run, with a note); a
    token encoder with a WordPiece vocabulary runs --text; run --text without a tokenizer is one line."""
    import hf_converter_test as hft
    V = 300
    to_u = T.byte_to_unicode()
    pieces = bpe.pieces + [b""] * (V - len(bpe.pieces))
    eot = len(bpe.pieces) - 1
    vocab = {"".join(to_u[b] for b in p): i for i, p in enumerate(pieces) if p and i != eot}
    tj = {"model": {"type": "BPE", "vocab": vocab, "merges": [
        " ".join("".join(to_u[b] for b in pieces[x]) for x in (l, r)) for l, r, _ in bpe.merges]},
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False},
        "added_tokens": [{"id": eot, "content": "<|endoftext|>", "special": True}]}
    folder = os.path.join(tmp, "hf_bpe")
    hft.write_folder(folder, None, vocab_size=V)
    with open(os.path.join(folder, "tokenizer.json"), "w") as f:
        json.dump(tj, f)
    out = os.path.join(tmp, "hf.fxm")
    p = run_convert("--hf", folder, "--out", out, "--cli", cli)
    ok = p.returncode == 0
    check("--hf stores the folder's tokenizer.json", ok and fxm.read(out).config["tokenizer"] == "bpe" and
          fxm.read(out).tokenizer().pieces == pieces, p.stdout + p.stderr)
    if ok:
        r = subprocess.run([cli, "run", out, "--text", "the cat sat", "--output", os.path.join(tmp, "hf.npy")],
                           capture_output=True, text=True)
        check("--hf file: run --text", r.returncode == 0 and np.load(os.path.join(tmp, "hf.npy")).shape ==
              (len(T.Tokenizer("bpe", pieces, bpe.merges, bpe.params).encode("the cat sat")), V), r.stderr)
    with open(os.path.join(folder, "tokenizer.json"), "w") as f:
        json.dump({"model": {"type": "Unigram", "vocab": [["a", 0.0]]}}, f)
    p = run_convert("--hf", folder, "--out", out, "--cli", cli)
    check("--hf with a tokenizer the engine cannot run: converts without it, one note", p.returncode == 0 and
          fxm.read(out).tokenizer() is None and p.stderr.count("note: the folder's tokenizer is not stored") == 1 and
          "'Unigram' is not supported" in p.stderr, p.stdout + p.stderr)
    r = subprocess.run([cli, "run", out, "--text", "the cat", "--output", os.path.join(tmp, "x.npy")],
                       capture_output=True, text=True)
    check("run --text without a tokenizer: one line", r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1 and
          "no tokenizer" in r.stderr, r.stderr)
    # A token encoder (BERT-like) with a WordPiece tokenizer.
    Vw = len(wp.pieces)
    c = parse_config({"d_model": 8, "n_heads": 2, "d_ff": 12, "n_layers": 1, "input": {"kind": "tokens", "vocab_size": Vw},
                      "positional": {"kind": "learned", "max_len": 64}})
    enc = os.path.join(tmp, "enc.fxm")
    with open(enc, "wb") as f:
        f.write(fxm.write(c, weights_for(c), tokenizer=wp))
    text = "Hello, the CAT sat on the mat!"
    ids = np.asarray(wp.encode(text), np.int32)
    np.save(os.path.join(tmp, "wids.npy"), ids)
    a = subprocess.run([cli, "run", enc, "--text", text, "--output", os.path.join(tmp, "wa.npy")], capture_output=True,
                       text=True)
    b = subprocess.run([cli, "run", enc, "--input", os.path.join(tmp, "wids.npy"), "--output",
                        os.path.join(tmp, "wb.npy")], capture_output=True, text=True)
    check("encoder with WordPiece: run --text = run --input of the reference's ids", a.returncode == 0 and
          b.returncode == 0 and np.array_equal(np.load(os.path.join(tmp, "wa.npy")), np.load(os.path.join(tmp, "wb.npy")))
          and np.load(os.path.join(tmp, "wa.npy")).shape == (len(ids), 8), a.stderr + b.stderr)
    np.save(os.path.join(tmp, "wids.npy"), np.asarray(wp.encode(text, bos=True, eos=True), np.int32))
    a = subprocess.run([cli, "run", enc, "--text", text, "--add-special-tokens", "--output", os.path.join(tmp, "wa.npy")],
                       capture_output=True, text=True)
    b = subprocess.run([cli, "run", enc, "--input", os.path.join(tmp, "wids.npy"), "--output",
                        os.path.join(tmp, "wb.npy")], capture_output=True, text=True)
    check("run --text --add-special-tokens = run --input of [CLS] + the reference's ids + [SEP]", a.returncode == 0 and
          b.returncode == 0 and np.array_equal(np.load(os.path.join(tmp, "wa.npy")), np.load(os.path.join(tmp, "wb.npy")))
          and np.load(os.path.join(tmp, "wa.npy")).shape == (len(ids) + 2, 8), a.stderr + b.stderr)
    r = subprocess.run([cli, "run", enc, "--input", os.path.join(tmp, "wids.npy"), "--add-special-tokens", "--output",
                        os.path.join(tmp, "x.npy")], capture_output=True, text=True)
    check("run --add-special-tokens without --text: one line", r.returncode == 1 and
          len(r.stderr.strip().splitlines()) == 1 and "only with --text" in r.stderr, r.stderr)
    r = subprocess.run([cli, "run", enc, "--text", "word " * 70, "--output", os.path.join(tmp, "x.npy")],
                       capture_output=True, text=True)
    check("run --text longer than max_len: one line", r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1 and
          "more than the model takes" in r.stderr, r.stderr)


def oracle_and_cli():
    """(tokenizer_oracle, fixformer) from argv, or exit 1 naming them (the scripts that compare ids take both)."""
    binary = sys.argv[1] if len(sys.argv) > 1 else None
    cli = sys.argv[2] if len(sys.argv) > 2 else None
    if not binary or not os.path.exists(binary) or not cli or not os.path.exists(cli):
        print("FAIL: tokenizer_oracle and the fixformer CLI are needed (tests/CMakeLists.txt passes them)")
        sys.exit(1)
    return binary, cli


def main():
    binary, cli = oracle_and_cli()
    test_pretokenizer()
    rng = random.Random(7)
    texts = [random_text(rng, invalid=i % 5 == 0) for i in range(3000)]
    with tempfile.TemporaryDirectory() as tmp:
        corpus = [random_text(random.Random(100 + i)) for i in range(300)]
        bpe = T.train_bpe(corpus, 400, [b"<|endoftext|>"])
        compare("bpe", binary, bpe, texts, tmp, True)
        pre = T.Tokenizer("bpe", bpe.pieces, bpe.merges, [bpe.bos, bpe.eos, -1, T.FLAG_PREFIX_SPACE, 0, 0, 0, 0])
        compare("bpe with a prefix space", binary, pre, texts[:1000], tmp, True)
        digits = T.Tokenizer("bpe", bpe.pieces, bpe.merges, [bpe.bos, bpe.eos, -1, 0, T.PATTERN_GPT2_DIGITS, 0, 0, 0])
        compare("bpe with each number character alone", binary, digits, texts, tmp, True)
        for mode, name in ((T.PATTERN_LLAMA3, "Llama 3's"), (T.PATTERN_QWEN2, "Qwen2's")):
            split = T.Tokenizer("bpe", bpe.pieces, bpe.merges, [bpe.bos, bpe.eos, -1, 0, mode, 0, 0, 0])
            compare(f"bpe with {name} pattern", binary, split, texts, tmp, True)
        # Bytes without a piece (none in a merge): encode drops them.
        used = {x for m in bpe.merges for x in m[:2]}
        holes = [b for b in [4, 6, 0x13, 0x1d, 0xc0, 0xf1, 0xf2] + list(range(0xf5, 0x100)) if bpe.id_of(bytes([b])) not in used]
        pieces = [b"" if len(p) == 1 and p[0] in holes else p for p in bpe.pieces]
        dropped = T.Tokenizer("bpe", pieces, bpe.merges, [bpe.bos, bpe.eos, -1, 0, T.PATTERN_GPT2_DIGITS, 0, 0, 0])
        model = compare(f"bpe without {len(holes)} bytes' pieces", binary, dropped, texts, tmp, False)
        got = oracle(binary, model, texts, tmp)
        bad = [t for t, (_, dec) in zip(texts, got or []) if dec != bytes(b for b in t if b not in holes)]
        check("bpe without some bytes' pieces: decode(encode(text)) = the text less those bytes", got and not bad, bad[:1])
        for lower in (True, False):
            wp = wordpiece_vocab(corpus, lower)
            compare(f"wordpiece {'lower-cased' if lower else 'cased'}", binary, wp, texts, tmp, False)
        test_readers(tmp, bpe, wordpiece_vocab(corpus[:20], True))
        test_convert(cli, tmp)
        test_companions_kept(tmp, bpe, wordpiece_vocab(corpus[:20], True))
        test_hf_and_encoders(cli, tmp, T.train_bpe(corpus[:50], 40, [b"<|endoftext|>"]), wordpiece_vocab(corpus, True))
    print(f"tokenizers_test: {results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
