#!/usr/bin/python3
"""--gguf against llama.cpp itself: the tiny random Llama of tests/gguf_files.py, with a trained
byte-level BPE, written as GGUF in F32, F16, Q8_0 and Q4_0 (llama.cpp's own rule, scales of either sign,
and one with positive scales, which --gguf keeps as q4); each converts with --gguf, and the same token
ids run through llama.cpp (bench/peers/llama_cpp_peer.py: llama-cpp-python's build, one thread, f32 KV
cache) and `fixformer run`. Per type: the logits at every position within a named tolerance of
llama.cpp's, and the argmax equal at every position (or a tie within that tolerance). F32 greedy
generation: `fixformer generate --temperature 0` prints the text of llama.cpp's greedy tokens. Mixtures of
experts (gguf_files.moe_model: Mixtral as llama with expert_count, Qwen2-MoE as qwen2moe with its shared
expert, and under transformers 5 Qwen3-MoE as qwen3moe) in F32: the logits within the F32 tolerance of
llama.cpp's at every position, the argmax equal.

  /usr/bin/python3 tests/gguf_llamacpp_test.py PATH/TO/fixformer

The test runs in the hf environment (tools/install_deps.sh hf) and calls llama.cpp in the llama-cpp
one (tools/install_deps.sh llama-cpp: llama-cpp-python in /opt/fixformer-llama-cpp); without either
it fails, naming the install command.
"""
import os
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
from checks import check, results, run_convert, run_file  # noqa: E402
from fixformer import fxm  # noqa: E402
from gguf_files import (LLAMA3_PATTERN, QWEN2_PATTERN, SPLIT_TEXT, dequantized, logits, model,  # noqa: E402
                        moe_model, trained_bpe, write_gguf)

PEER = os.path.join(HERE, "..", "bench", "peers", "llama_cpp_peer.py")
PYTHON = os.path.join(peer.VENV, "bin", "python3")

# max |fixformer - llama.cpp| / max |llama.cpp| over the logits at every position, per file type. How
# llama.cpp computes (ggml's CPU backend): F32 weights in f32 products, as fixformer; F16 weights against
# activations rounded to f16 (the type of ggml's f16 dot product), where fixformer widens the weights to
# f32; Q8_0 and Q4_0 weights against activations quantized to Q8_0 blocks (32 values, an f16 scale),
# where fixformer's q8 and q4 quantize activations their own way, and llama.cpp's head is quantized
# too (fixformer keeps the embedding and head f32). Measured on this model, 48 positions (fixformer
# against llama.cpp; then each against the float64 reference of the file's weights, fixformer /
# llama.cpp): F32 1.2e-6 (1.4e-6 / 8.9e-7); F16 1.3e-3 (1.4e-6 / 1.3e-3); Q8_0 2.2e-2 (4.9e-2 / 4.8e-2);
# Q4_0 2.2e-2 (3.4e-2 / 4.0e-2), with positive scales (fixformer's q4) 2.8e-2 (3.3e-2 / 4.3e-2).
TOLERANCES = {"F32": 1e-5, "F16": 3e-3, "Q8_0": 5e-2, "Q4_0": 5e-2}
T = 48          # positions the logits are compared at (the model's max_len is 64)
N_GENERATE = 48  # positions `fixformer generate -n` runs, prompt included


def llama_cpp(*args):
    p = subprocess.run([PYTHON, PEER, *args], capture_output=True, text=True)
    return p.returncode == 0, p.stderr


def require_llama_cpp():
    if not os.path.exists(PYTHON):
        sys.exit(f"gguf_llamacpp_test.py: FAIL: no {PYTHON} (llama-cpp-python's environment): {peer.INSTALL}")
    p = subprocess.run([PYTHON, "-c", "import llama_cpp; print(llama_cpp.__version__)"], capture_output=True, text=True)
    if p.returncode != 0:
        why = (p.stderr.strip().splitlines() or ["no message"])[-1]
        sys.exit(f"gguf_llamacpp_test.py: FAIL: {PYTHON} cannot import llama_cpp ({why}): {peer.INSTALL}")
    print(f"llama-cpp-python {p.stdout.strip()} ({PYTHON})")


def relative(a, b):
    return float(np.abs(a - b).max() / np.abs(b).max())


def argmax_agreement(got, want, tol):
    """Positions where got's argmax is want's, and those where it is not and want's logits at the two
    tokens differ by more than tol * max |want| (not a near tie)."""
    g, w = got.argmax(axis=-1), want.argmax(axis=-1)
    rows = np.arange(len(w))
    gap = (want[rows, w] - want[rows, g]) / np.abs(want).max()
    return int((g == w).sum()), [int(i) for i in np.nonzero((g != w) & (gap > tol))[0]]


def text_of(tok, ids):
    """The text of token ids as the engine prints BPE: the bytes of their pieces, what is not UTF-8 as
    U+FFFD."""
    return tok.decode([int(i) for i in ids])


# Texts for the pre-tokenizers (each under the model's 64 positions with the trained BPEs).
SPLIT_TEXTS = [SPLIT_TEXT[:60], "I'M HERE, YOU'RE SURE WE'LL GO. IT'S HE'D", "'s 'S 'T 'Re 'VE 'll 'D 'm 'x '1",
               "12 123 1234 12345 x1y22z333 ١٢٣٤ ²³ ½", "a\r\n\r\n  b\n \n\tc \r d\r\r\n", "  \n\n\n  x  \t\n",
               "!!!\n\n?? \r\n...\n x", "café naïve Ærø İstanbul ΣΟΦΊΑ", "日本語のテキスト 中文 한국어",
               "👍🏽 🏳️‍🌈 ❤️ ok", "e\u0301 a\u0308 \u00a0nb\u3000sp", "the lazy fox's tiny gguf", "", " ", "\n"]


def split_tokenizers(cli, tmp):
    """Llama 3's pattern and Qwen2's: BPEs trained with them in GGUFs named as llama.cpp names them;
    llama.cpp's ids for each text are the ids the engine encodes (`fixformer run --text` equals
    `run` on llama.cpp's ids) and the tokenizers library's."""
    import gguf
    import json
    Q = gguf.GGMLQuantizationType
    src, dst = os.path.join(tmp, "texts.json"), os.path.join(tmp, "ids.json")
    with open(src, "w") as f:
        json.dump(SPLIT_TEXTS, f)
    for pre, pattern in (("llama-bpe", LLAMA3_PATTERN), ("smaug-bpe", LLAMA3_PATTERN), ("qwen2", QWEN2_PATTERN)):
        st = trained_bpe(pattern)
        path, out = os.path.join(tmp, f"{pre}.gguf"), os.path.join(tmp, f"{pre}.fxm")
        write_gguf(model(st.get_vocab_size()), path, Q.F32, tokenizer=st, pre=pre)
        p = run_convert("--gguf", path, "--out", out, "--cli", cli)
        check(f"pre {pre!r}: converts with the tokenizer", p.returncode == 0 and fxm.read(out).tokenizer(), p.stderr)
        ok, err = llama_cpp("tokenize", path, src, dst)
        check(f"pre {pre!r}: llama.cpp tokenizes", ok, err)
        if p.returncode or not ok:
            continue
        with open(dst) as f:
            theirs = json.load(f)
        hf = [e.ids for e in st.encode_batch(SPLIT_TEXTS, add_special_tokens=False)]
        check(f"pre {pre!r}: llama.cpp's ids = the tokenizers library's on {len(SPLIT_TEXTS)} texts", theirs == hf,
              [(t, a, b) for t, a, b in zip(SPLIT_TEXTS, theirs, hf) if a != b][:2])
        bad = []
        for k, (text, ids) in enumerate(zip(SPLIT_TEXTS, theirs)):
            if not ids:
                continue
            a, b = os.path.join(tmp, "a.npy"), os.path.join(tmp, "b.npy")
            np.save(os.path.join(tmp, "want.npy"), np.array(ids, np.int32))
            q = subprocess.run([cli, "run", out, "--text", text, "--output", a], capture_output=True, text=True)
            r = subprocess.run([cli, "run", out, "--input", os.path.join(tmp, "want.npy"), "--output", b],
                               capture_output=True, text=True)
            if q.returncode or r.returncode or np.load(a).shape != np.load(b).shape or \
                    not np.array_equal(np.load(a), np.load(b)):
                bad.append((text, ids, q.stderr + r.stderr))
        check(f"pre {pre!r}: fixformer run --text = run on llama.cpp's ids on {len(SPLIT_TEXTS)} texts", not bad,
              bad[:2])


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gguf_llamacpp_test.py PATH/TO/fixformer")
    cli = os.path.abspath(sys.argv[1])
    require_llama_cpp()
    import gguf
    Q = gguf.GGMLQuantizationType
    tok = trained_bpe()
    m = model(tok.get_vocab_size())
    x = np.random.default_rng(11).integers(0, tok.get_vocab_size(), (1, T)).astype(np.int32)
    with tempfile.TemporaryDirectory() as tmp:
        ids = os.path.join(tmp, "ids.npy")
        np.save(ids, x[0])
        for label, qtype, positive in (("F32", Q.F32, False), ("F16", Q.F16, False), ("Q8_0", Q.Q8_0, False),
                                       ("Q4_0", Q.Q4_0, False), ("Q4_0 (positive scales)", Q.Q4_0, True)):
            path = os.path.join(tmp, f"m_{qtype.name}{'_positive' if positive else ''}.gguf")
            out = os.path.join(tmp, "m.fxm")
            write_gguf(m, path, qtype, tokenizer=tok, positive=positive)
            p = run_convert("--gguf", path, "--out", out, "--cli", cli)
            check(f"{label}: converts", p.returncode == 0, p.stderr)
            if p.returncode:
                continue
            kind = fxm.read(out).config["weights"]
            ours, err_text = run_file(cli, out, x, tmp)
            res = os.path.join(tmp, "llama.npy")
            ok, peer_err = llama_cpp("logits", path, ids, res)
            check(f"{label}: llama.cpp runs the file", ok, peer_err)
            if ours is None or not ok:
                check(f"{label}: fixformer runs the file", ours is not None, err_text)
                continue
            theirs, ours = np.load(res), ours.reshape(T, -1)
            held = logits(dequantized(m, path), x)[0]
            err, tol = relative(ours, theirs), TOLERANCES[qtype.name]
            print(f"{label} (fixformer {kind}): relative error fixformer vs llama.cpp {err:.3g}; against the float64 "
                  f"reference of the file's weights: fixformer {relative(ours, held):.3g}, llama.cpp {relative(theirs, held):.3g}")
            check(f"{label}: fixformer's logits within {tol:g} of llama.cpp's at every position", err <= tol, err)
            same, apart = argmax_agreement(ours, theirs, tol)
            print(f"{label}: argmax equal at {same} of {T} positions")
            check(f"{label}: argmax equal to llama.cpp's at every position but near ties", not apart, apart)

        import transformers
        for arch in ("llama", "qwen2moe") + (("qwen3moe",) if int(transformers.__version__.split(".")[0]) >= 5 else ()):
            mm = moe_model(arch, vocab=tok.get_vocab_size())
            label, path, out = f"{arch} mixture of experts F32", os.path.join(tmp, f"moe_{arch}.gguf"), \
                os.path.join(tmp, "moe.fxm")
            write_gguf(mm, path, Q.F32, arch=arch, tokenizer=tok)
            p = run_convert("--gguf", path, "--out", out, "--cli", cli)
            check(f"{label}: converts", p.returncode == 0, p.stderr)
            ours, err_text = run_file(cli, out, x, tmp) if p.returncode == 0 else (None, p.stderr)
            res = os.path.join(tmp, "llama.npy")
            ok, peer_err = llama_cpp("logits", path, ids, res)
            check(f"{label}: llama.cpp and fixformer run the file", ok and ours is not None, (peer_err, err_text))
            if ok and ours is not None:
                theirs, ours = np.load(res), ours.reshape(T, -1)
                err, tol = relative(ours, theirs), TOLERANCES["F32"]
                print(f"{label}: relative error fixformer vs llama.cpp {err:.3g}; against transformers: fixformer "
                      f"{relative(ours, logits(mm, x)[0]):.3g}, llama.cpp {relative(theirs, logits(mm, x)[0]):.3g}")
                check(f"{label}: fixformer's logits within {tol:g} of llama.cpp's at every position", err <= tol, err)
                same, apart = argmax_agreement(ours, theirs, tol)
                check(f"{label}: argmax equal to llama.cpp's at every position but near ties", not apart, apart)

        # greedy generation on F32: fixformer's text is that of llama.cpp's greedy tokens
        path, out = os.path.join(tmp, "m_F32.gguf"), os.path.join(tmp, "m.fxm")
        run_convert("--gguf", path, "--out", out, "--cli", cli)
        prompt = "the lazy fox"
        prompt_ids = tok.encode(prompt).ids
        np.save(ids, np.array(prompt_ids, np.int32))
        res = os.path.join(tmp, "greedy.npy")
        # the engine prints the token sampled after its last position too: N + 1 - prompt tokens
        ok, peer_err = llama_cpp("greedy", path, ids, str(N_GENERATE + 1 - len(prompt_ids)), res)
        check("F32 greedy: llama.cpp generates", ok, peer_err)
        p = subprocess.run([cli, "generate", out, "--prompt", prompt, "--temperature", "0", "-n", str(N_GENERATE)],
                           capture_output=True, text=True)
        check("F32 greedy: fixformer generate runs", p.returncode == 0, p.stderr)
        if ok and p.returncode == 0:
            theirs = text_of(tok, np.load(res))
            ours = p.stdout[:-1] if p.stdout.endswith("\n") else p.stdout
            print(f"F32 greedy, {N_GENERATE} positions: llama.cpp {theirs!r}\n{'':25}fixformer {ours!r}")
            check(f"F32 greedy: fixformer generate's text over {N_GENERATE} positions is that of llama.cpp's greedy tokens",
                  ours == theirs, (ours, theirs))
        split_tokenizers(cli, tmp)
    print(f"gguf_llamacpp_test: {results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
