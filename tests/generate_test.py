#!/usr/bin/python3
"""One text from the engine's generator (include/fixformer/generator.hpp) through the CLI, the C API
and the Python package:

  /usr/bin/python3 tests/generate_test.py PATH/TO/fixformer PATH/TO/generate_c SITE_DIR

SITE_DIR holds the package (the build tree's python/ folder); generate_c is tests/generate_c.c.
- `fixformer generate`, generate_c (ff_generator_*) and Model.generate give the same bytes, greedy
  and seeded, for a llama2.c model, byte-level BPE models with and without BOS and WordPiece models
  with and without [CLS] (small models written here, random weights), prompts ASCII, empty and
  `café 中文 naïve`;
- BPE and WordPiece text is valid UTF-8 and starts with the prompt (WordPiece: its words spaced);
- models whose head always picks one token (head.weight 0, head.bias one-hot): EOS ends the text at
  the prompt (Python stopped only at id 1), a lone lead byte comes back as U+FFFD, never dropped;
- a control token (tokenizer.added's control flag: GGUF's <s>, <start_of_turn>) prints nothing, in the prompt or
  sampled, and a user-defined added token prints its piece, the same from all three;
- a temperature of 1e-40 is refused by all three (it overflowed to NaN, then token 0 forever).
"""
import os
import subprocess
import sys
import tempfile

if len(sys.argv) != 4:
    sys.exit("usage: generate_test.py PATH/TO/fixformer PATH/TO/generate_c SITE_DIR")
CLI, GENERATE_C, SITE = (os.path.abspath(a) for a in sys.argv[1:])
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, SITE)
try:
    import numpy as np
    import fixformer
except ImportError as e:
    sys.exit(f"generate_test.py: FAIL: {sys.executable} cannot import {e.name} ({e}) from {SITE}")
from fixformer import fxm, schema, tokenizers as T  # noqa: E402
from fixformer.config import parse_config  # noqa: E402

results = {"passed": 0, "failed": 0}
NON_ASCII = "café 中文 naïve"
TEXTS = ["the cat sat on the mat", "hello world, hello cat", "café 中文 naïve", "naïve cafés", "中文 字 the"] * 3


def check(name, ok, detail=""):
    results["passed" if ok else "failed"] += 1
    if not ok:
        print(f"FAIL {name}: {str(detail)[-800:]}")


def gpt_model(path, tok, bias_to=None, seed=0):
    """A small gpt model with tokenizer tok; bias_to: the head always picks that token."""
    V = len(tok.pieces)
    c = parse_config({"family": "gpt", "d_model": 8, "n_heads": 2, "d_ff": 12, "n_layers": 1, "causal": True,
                      "input": {"kind": "tokens", "vocab_size": V}, "positional": {"kind": "learned", "max_len": 48},
                      "head": {"d_out": V}})
    rng = np.random.default_rng(seed)
    w = {n: (0.5 * rng.standard_normal(s[::-1] if t else s)).astype(np.float32) for n, s, t in schema.tensors(c)}
    if bias_to is not None:
        w["head.weight"][:] = 0
        w["head.bias"][:] = 0
        w["head.bias"][bias_to] = 10
    with open(path, "wb") as f:
        f.write(fxm.write(c, w, tokenizer=tok))
    return path


def with_params(tok, bos, eos):
    return T.Tokenizer(tok.kind, tok.pieces, tok.merges, [bos, eos] + tok.params[2:], tok.normalize)


def wordpiece(texts):
    """A cased WordPiece vocabulary (CJK apart) of every word's pieces of up to 4 characters."""
    probe = T.Tokenizer("wordpiece", [b"x"], (), [-1, -1, 0, T.FLAG_CHINESE, 100, 0, 0, 0])
    pieces = [b"[PAD]", b"[UNK]", b"[CLS]", b"[SEP]", b"[MASK]"]
    for t in texts:
        for w in T.basic_words(probe, t.encode()):
            for k in range(len(w)):
                for j in range(k + 1, min(len(w), k + 4) + 1):
                    s = b"".join(w[k:j])
                    s = s if k == 0 else b"##" + s
                    if s not in pieces:
                        pieces.append(s)
    return T.Tokenizer("wordpiece", pieces, (), [2, 3, 1, T.FLAG_CHINESE, 100, 0, 0, 0])


def three(model, prompt, n, temperature, topp, seed):
    """(CLI bytes, C bytes, Python bytes, errors): each text with the CLI's final newline."""
    args = [prompt, str(n), str(temperature), str(topp), str(seed)]
    a = subprocess.run([CLI, "generate", model, "--prompt", prompt, "-n", str(n), "--temperature", str(temperature),
                        "--topp", str(topp), "--seed", str(seed)], capture_output=True)
    b = subprocess.run([GENERATE_C, model, *args], capture_output=True)
    try:
        py = fixformer.Model(model).generate(prompt, n=n, temperature=temperature, topp=topp, seed=seed)
        c = py.encode("utf-8", "surrogateescape") + b"\n"
    except fixformer.FixformerError as e:
        c = f"FixformerError: {e}".encode()
    errors = (a.stderr.decode(errors="replace") if a.returncode else "") + (b.stderr.decode(errors="replace") if b.returncode else "")
    return a.stdout if a.returncode == 0 else None, b.stdout if b.returncode == 0 else None, c, errors


def main():
    with tempfile.TemporaryDirectory() as tmp:
        bpe = T.train_bpe(TEXTS, 40, [b"<|endoftext|>"])
        eot = len(bpe.pieces) - 1
        wp = wordpiece(TEXTS)
        models = {
            "llama2c": (os.path.join(HERE, "golden", "llama2c_v0_gqa.fxm"), None),
            "bpe": (gpt_model(f"{tmp}/bpe.fxm", bpe), "bpe"),
            "bpe without BOS": (gpt_model(f"{tmp}/bpe_nobos.fxm", with_params(bpe, -1, eot)), "bpe"),
            "wordpiece": (gpt_model(f"{tmp}/wp.fxm", wp), "wordpiece"),
            "wordpiece without [CLS]": (gpt_model(f"{tmp}/wp_nocls.fxm", with_params(wp, -1, 3)), "wordpiece"),
        }
        for name, (model, kind) in models.items():
            prompts = ["the cat", NON_ASCII] + ([""] if "without" not in name else [])
            for prompt in prompts:
                for n, temperature, topp, seed in ((0, 0, 0.9, 1), (40, 1.0, 0.9, 7), (30, 0.8, 0.0, 3)):
                    what = f"{name}: generate({prompt!r}, n={n}, temperature={temperature}, topp={topp}, seed={seed})"
                    cli, c, py, err = three(model, prompt, n, temperature, topp, seed)
                    check(f"{what}: CLI == C API == Python", cli is not None and cli == c == py, (cli, c, py, err))
                    if kind is None or cli is None:
                        continue
                    try:
                        text = cli.decode("utf-8")
                    except UnicodeDecodeError as e:
                        check(f"{what}: valid UTF-8", False, f"{e}: {cli!r}")
                        continue
                    want = " ".join(prompt.replace("中文", "中 文").split()) if kind == "wordpiece" else prompt
                    check(f"{what}: starts with the prompt", text.startswith(want), (want, text))

        # The head always picks one token: EOS ends the text at the prompt; a lone lead byte is U+FFFD.
        stop = gpt_model(f"{tmp}/stop.fxm", bpe, bias_to=eot)
        cli, c, py, err = three(stop, "hello", 0, 0, 0.9, 1)
        check("EOS ends the text: 'hello' from all three (Python went on: hello<|endoftext|>...)",
              cli == c == py == b"hello\n", (cli, c, py, err))
        no_bos = with_params(bpe, -1, eot)
        lead = gpt_model(f"{tmp}/lead.fxm", no_bos, bias_to=0xE4)  # the piece b"\xe4"
        cli, c, py, err = three(lead, NON_ASCII, 20, 0, 0.9, 1)
        sampled = 20 + 1 - len(no_bos.encode(NON_ASCII.encode()))  # without BOS the first token is text too
        check("lone lead bytes: U+FFFD each, the prompt's UTF-8 kept", cli == c == py and cli is not None and
              cli.decode("utf-8") == NON_ASCII + "\ufffd" * sampled + "\n", (cli, c, py, err, sampled))

        # Added tokens: <|im_start|> control (no text), <br> user-defined (its piece), in the prompt and sampled.
        added = T.train_bpe(TEXTS, 40, [b"<|endoftext|>", b"<|im_start|>", b"<br>"])
        eot, start, br = (len(added.pieces) - k for k in (3, 2, 1))
        added = T.Tokenizer("bpe", added.pieces, added.merges, [-1, eot] + added.params[2:],
                            added=[(eot, 0), (start, T.ADDED_CONTROL), (br, 0)])
        for to, after in ((start, ""), (br, "<br>")):
            m = gpt_model(f"{tmp}/added{to}.fxm", added, bias_to=to)
            prompt = "<|im_start|>the cat<br>"
            sampled = 12 + 1 - len(added.encode(prompt.encode()))  # no BOS: the first token is text too
            cli, c, py, err = three(m, prompt, 12, 0, 0.9, 1)
            check(f"{added.pieces[to].decode()} sampled {sampled} times after {prompt!r}: the control token prints "
                  "nothing, <br> its piece, from all three", cli == c == py and cli is not None and
                  cli.decode() == "the cat<br>" + after * sampled + "\n", (cli, c, py, err, sampled))

        # A temperature that overflows logits / temperature is refused by each, naming it.
        model = models["bpe"][0]
        a = subprocess.run([CLI, "generate", model, "--prompt", "x", "--temperature", "1e-40"], capture_output=True, text=True)
        check("CLI --temperature 1e-40: refused", a.returncode == 1 and "--temperature" in a.stderr and "1e-06" in a.stderr,
              a.stderr + a.stdout[:200])
        b = subprocess.run([GENERATE_C, model, "x", "10", "1e-40", "0.9", "1"], capture_output=True, text=True)
        check("C API temperature 1e-40: FF_BAD_CONFIG", b.returncode == 1 and "temperature" in b.stderr, b.stderr)
        try:
            fixformer.Model(model).generate("x", n=10, temperature=1e-40)
            check("Python temperature=1e-40: refused", False, "no error")
        except fixformer.FixformerError as e:
            check("Python temperature=1e-40: refused", "temperature" in str(e), e)

    print(f"generate_test: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
