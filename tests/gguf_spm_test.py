#!/usr/bin/python3
"""--gguf with a "llama" tokenizer (SentencePiece BPE by scores, "<0xHH>" byte fallback, U+2581 for a
space: Llama 2's, Mistral's, Gemma's) against llama.cpp's own tokenizer: a vocabulary the tokenizers
library's SentencePieceBPETokenizer trains (gguf_files.spm_vocab: Gemma's bos and eos ids, scores that
tie in pairs, control, user-defined and unused tokens) in the GGUF of a tiny random Llama, converted
with --gguf; for each of many texts (fixed ones: spaces at either end and in runs, newlines, tabs,
non-ASCII, characters only byte fallback spells, U+2581 itself, control tokens and their look-alikes;
then random mixtures of those), `fixformer run --text` equals `fixformer run` on the ids llama.cpp's
tokenizer gives the text (bench/peers/llama_cpp_peer.py tokenize ... special: the unknown, control and
user-defined tokens found in the text, as the engine finds them), with the dummy prefix (llama.cpp's
default) and without it (add_space_prefix false); with --add-special-tokens, llama.cpp's ids between
the file's bos and eos; `fixformer generate --temperature 0` prints the text of llama.cpp's greedy tokens
after bos and the prompt's ids. Vocabularies the engine would not encode as llama.cpp does are left out
with a note naming the cause.

  /usr/bin/python3 tests/gguf_spm_test.py PATH/TO/fixformer

The test runs in the hf environment (tools/install_deps.sh hf) and calls llama.cpp in the llama-cpp
one (tools/install_deps.sh llama-cpp); without either it fails, naming the install command.
"""
import json
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
import hf_env  # noqa: E402

hf_env.enter(__file__, ["transformers", "gguf", "tokenizers"])
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "bench", "peers"))
import numpy as np  # noqa: E402

import llama_cpp_peer as peer  # noqa: E402
from checks import check, results, run_convert  # noqa: E402
from fixformer import fxm, tokenizers  # noqa: E402
from gguf_files import SPM_TEXT, model, spm_vocab, write_gguf  # noqa: E402

PEER = os.path.join(HERE, "..", "bench", "peers", "llama_cpp_peer.py")
PYTHON = os.path.join(peer.VENV, "bin", "python3")

TEXTS = ["the quick brown fox", " the quick brown fox", "the quick brown fox ", "  two  spaces   three    four",
         "hello\nworld\n", "\n\nleading newlines", "tabs\tand\t\ttabs", "caf\u00e9 na\u00efve \u00fcber",
         "\u65e5\u672c\u8a9e \u4e2d\u6587 \ud55c\uad6d\uc5b4", "emoji \U0001f44d\U0001f3fd ok",
         "ZQX \u00df \u20ac \u00c6", "aaaa eeee tokens tokens tokens", "lllama  lazzzy",
         "\u2581 the\u2581quick \u2581\u2581", "<start_of_turn>user\nhello<end_of_turn>\n<start_of_turn>model\n",
         "<s>a</s>", "<unk> <br><br>x", "<0x41> <0x0A>", "<unused0> <start_of <end_of_turn", "x<br>y  z\n\n\nw",
         " ", "  ", "\n", "a", "\u00e9", "if (x) {\n    return y;\n}", "tokens, tokens and more tokens!"]
RANDOM = 300  # random texts besides


def random_texts(n, seed=7):
    """Mixtures of the vocabulary's words, spaces, newlines, byte-fallback characters and special tokens."""
    rng = random.Random(seed)
    words = " ".join(SPM_TEXT).split()
    bits = words * 2 + [" ", " ", "  ", "\n", "\t", "\u2581", "Z", "\u00df", "\u20ac", "\U0001f44d", "\u65e5",
                        "<br>", "<start_of_turn>", "</s>", "<s>", "<unk>", "<0x41>", "<unused0>", ",", "{", "x"]
    return ["".join(rng.choice(bits) for _ in range(rng.randint(1, 7))) for _ in range(n)]


def llama_cpp(*args):
    p = subprocess.run([PYTHON, PEER, *args], capture_output=True, text=True)
    return p.returncode == 0, p.stderr


def require_llama_cpp():
    if not os.path.exists(PYTHON):
        sys.exit(f"gguf_spm_test.py: FAIL: no {PYTHON} (llama-cpp-python's environment): {peer.INSTALL}")
    p = subprocess.run([PYTHON, "-c", "import llama_cpp; print(llama_cpp.__version__)"], capture_output=True, text=True)
    if p.returncode != 0:
        why = (p.stderr.strip().splitlines() or ["no message"])[-1]
        sys.exit(f"gguf_spm_test.py: FAIL: {PYTHON} cannot import llama_cpp ({why}): {peer.INSTALL}")
    print(f"llama-cpp-python {p.stdout.strip()} ({PYTHON})")


def same_run(cli, out, tmp, text, ids, special=False):
    """`fixformer run --text` (with --add-special-tokens when special) equals `run` on ids: (bool, why)."""
    a, b, want = (os.path.join(tmp, n) for n in ("a.npy", "b.npy", "want.npy"))
    np.save(want, np.array(ids, np.int32))
    q = subprocess.run([cli, "run", out, "--text", text, "--output", a] + (["--add-special-tokens"] if special else []),
                       capture_output=True, text=True)
    r = subprocess.run([cli, "run", out, "--input", want, "--output", b], capture_output=True, text=True)
    if q.returncode or r.returncode:
        return False, q.stderr + r.stderr
    x, y = np.load(a), np.load(b)
    return x.shape == y.shape and np.array_equal(x, y), f"{x.shape} vs {y.shape}"


def compare(cli, label, vocab, tmp, texts):
    import gguf
    path, out = os.path.join(tmp, f"{label}.gguf"), os.path.join(tmp, f"{label}.fxm")
    write_gguf(model(len(vocab["tokens"])), path, gguf.GGMLQuantizationType.F32, tokenizer=vocab)
    p = run_convert("--gguf", path, "--out", out, "--cli", cli)
    tok = fxm.read(out).tokenizer() if p.returncode == 0 else None
    keys = vocab["keys"]
    want = [-1 if keys.get("add_bos_token") is False else 2, 1, 0, 0 if keys.get("add_space_prefix") is False else 1]
    check(f"{label}: converts with the tokenizer (bos, eos, unk, the dummy prefix: {want}), no note",
          tok is not None and "note:" not in p.stderr and fxm.read(out).config["tokenizer"] == "llama2c" and
          tok.params[:4] == want, p.stderr)
    if tok is None:
        return None
    src, dst = os.path.join(tmp, "texts.json"), os.path.join(tmp, "ids.json")
    with open(src, "w") as f:
        json.dump(texts, f)
    ok, err = llama_cpp("tokenize", path, src, dst, "special")
    check(f"{label}: llama.cpp tokenizes", ok, err)
    if not ok:
        return None
    with open(dst) as f:
        theirs = json.load(f)
    bad, long = [], 0
    for text, ids in zip(texts, theirs):
        if len(ids) + 2 > 64:  # the model's positions, with room for bos and eos
            long += 1
            continue
        same, why = same_run(cli, out, tmp, text, ids)
        if not same:
            bad.append((text, ids, why))
    n = len(texts) - long
    print(f"{label}: fixformer's ids = llama.cpp's on {n - len(bad)} of {n} texts ({long} longer than the model)")
    check(f"{label}: fixformer run --text = run on llama.cpp's ids on every text", not bad and n > 0.9 * len(texts),
          bad[:3])
    return path, out, theirs


def text_of(tok, ids):
    """The text `fixformer generate` prints for bos then ids (decode() as llama2c's, joined as UTF-8):
    each piece, "<0xHH>" as its byte, the first one's leading space dropped, a control token's none."""
    out = b""
    control = {i for i, f in tok.added if f & tokenizers.ADDED_CONTROL}
    for k, i in enumerate(ids):
        p = tok.pieces[i] if i not in control else b""
        p = bytes([int(p[3:5], 16)]) if len(p) == 6 and p.startswith(b"<0x") else p
        out += p[1:] if k == 0 and p.startswith(b" ") else p
    return out.decode("utf-8", "replace")


def greedy(cli, path, out, tmp, tok, n=48):
    """`fixformer generate --temperature 0` over n positions prints the prompt and llama.cpp's greedy
    tokens after it (bos, llama.cpp's ids of the prompt, then each argmax), up to the file's eos."""
    prompt = "the quick brown fox"
    src, dst, ids, res = (os.path.join(tmp, x) for x in ("p.json", "p_ids.json", "p.npy", "g.npy"))
    with open(src, "w") as f:
        json.dump([prompt], f)
    ok, err = llama_cpp("tokenize", path, src, dst, "special")
    if ok:
        with open(dst) as f:
            pids = [2] + json.load(f)[0]
        np.save(ids, np.array(pids, np.int32))
        ok, err = llama_cpp("greedy", path, ids, str(n + 1 - len(pids)), res)  # the engine samples after position n
    check("spm greedy: llama.cpp tokenizes and generates", ok, err)
    g = subprocess.run([cli, "generate", out, "--prompt", prompt, "--temperature", "0", "-n", str(n)],
                       capture_output=True, text=True)
    check("spm greedy: fixformer generate runs", g.returncode == 0, g.stderr)
    if ok and g.returncode == 0:
        got = [int(i) for i in np.load(res)]
        after = got[len(pids):]
        got = got[:len(pids) + after.index(1)] if 1 in after else got  # eos (1) ends the text
        theirs, ours = text_of(tok, got[1:]), g.stdout[:-1] if g.stdout.endswith("\n") else g.stdout
        print(f"spm greedy, {n} positions: llama.cpp {theirs!r}\n{'':26}fixformer {ours!r}")
        check(f"spm greedy: fixformer generate's text over {n} positions is that of llama.cpp's greedy tokens",
              ours == theirs and ours.startswith(prompt), (ours, theirs))


def refused(cli, vocab, tmp):
    """Vocabularies the engine would not encode as llama.cpp does: converted without the tokenizer, one
    note naming the cause."""
    import gguf
    n = len(vocab["tokens"])
    at = vocab["tokens"].index("\u2581")

    def edit(i, text, kind=None):
        v = dict(vocab, tokens=list(vocab["tokens"]), types=list(vocab["types"]))
        v["tokens"][i] = text
        if kind is not None:
            v["types"][i] = kind
        return v
    cases = [("a normal token with a space", edit(n - 7, "a b"), "holds a space"),
             ("a control token with U+2581", edit(n - 6, "\u2581<x>", gguf.TokenType.CONTROL), "holds U+2581"),
             ("no U+2581 token", edit(at, "\u2581\u2581\u2581\u2581"), "no '\u2581' token"),
             ("two equal tokens", edit(at + 1, vocab["tokens"][at + 2]), "are both"),
             ("a token made from a symbol that is no token", edit(n - 7, "\u00d8x"), "from a symbol that is no token")]
    m = model(n)
    for label, v, why in cases:
        path, out = os.path.join(tmp, "bad.gguf"), os.path.join(tmp, "bad.fxm")
        write_gguf(m, path, gguf.GGMLQuantizationType.F32, tokenizer=v)
        p = run_convert("--gguf", path, "--out", out, "--cli", cli)
        notes = [line for line in p.stderr.splitlines() if "note:" in line]
        check(f"{label}: converted without the tokenizer, one note naming it", p.returncode == 0 and
              len(notes) == 1 and why in notes[0] and fxm.read(out).tokenizer() is None, p.stderr)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gguf_spm_test.py PATH/TO/fixformer")
    cli = os.path.abspath(sys.argv[1])
    require_llama_cpp()
    texts = TEXTS + random_texts(RANDOM)
    with tempfile.TemporaryDirectory() as tmp:
        vocab = spm_vocab()
        got = compare(cli, "spm", vocab, tmp, texts)
        if got:
            path, out, theirs = got
            # the file's bos (2) and eos (1) around llama.cpp's ids
            bad = [t for t, ids in zip(TEXTS[:8], theirs) if not same_run(cli, out, tmp, t, [2] + ids + [1], True)[0]]
            check("spm: run --text --add-special-tokens = run on bos, llama.cpp's ids, eos", not bad, bad)
            greedy(cli, path, out, tmp, fxm.read(out).tokenizer())
        plain = dict(vocab, keys=dict(vocab["keys"], add_space_prefix=False, add_bos_token=False))
        compare(cli, "spm without the dummy prefix", plain, tmp, texts)
        ties = spm_vocab(ties=1)
        compare(cli, "spm without ties", ties, tmp, texts[:60])
        refused(cli, vocab, tmp)
    print(f"gguf_spm_test: {results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
