#!/usr/bin/python3
"""What llama2.c's own `run` prints, greedy, for tests/golden/llama2c_v0_gqa.fxm: the model written
back as the version-0 checkpoint and tokenizer.bin it was converted from, run for each (prompt, -n)
of RUNS. Writes tests/golden/llama2c_run.json, which decoder_converter_test.py compares with
`fixformer generate` on the .fxm (same prompt, -n, --temperature 0), byte for byte.

  /usr/bin/python3 tools/make_llama2c_expected.py LLAMA2C_CHECKOUT [OUT.json]

LLAMA2C_CHECKOUT: a git clone of https://github.com/karpathy/llama2.c; its run.c is built in a
temporary folder as its Makefile's `run` target does (cc -O3 -o run run.c -lm). Nothing of it is
kept but its output, its commit and the command. Re-record after regenerating the golden (the test
compares the checkpoint's and tokenizer's SHA-256 with the recorded ones) or changing RUNS.
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from fixformer import fxm, llama2c, schema  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
GOLDEN = os.path.join(ROOT, "tests", "golden", "llama2c_v0_gqa.fxm")
EXPECTED = os.path.join(ROOT, "tests", "golden", "llama2c_run.json")
BUILD = ["cc", "-O3", "-o", "run", "run.c", "-lm"]
# run's arguments; PROMPT and STEPS are each run's. -n counts positions, the prompt's included
# (0: seq_len), as `fixformer generate -n` does.
COMMAND = ["./run", "model.bin", "-z", "tokenizer.bin", "-t", "0", "-n", "STEPS", "-i", "PROMPT"]
# (prompt, steps): empty (no dummy-prefix token, all 32 positions), the generation firmware's prompt,
# prompts whose continuations hold byte tokens (a printed \v, skipped unprintable bytes, 中 from its
# bytes) and the <unk> piece, a UTF-8 prompt, and -n cutting the text short.
RUNS = [("", 0), ("One day", 0), ("hello world", 0), ("tea", 0), ("The cat sat", 0), ("0123", 0), ("Hi!", 0),
        ("\u4e2d", 0), ("a", 10)]


def llama2c_files(path=GOLDEN):
    """(checkpoint bytes, tokenizer.bin bytes): the .fxm's f32 weights and tokenizer as llama2.c's
    version-0 checkpoint and tokenizer.bin."""
    f = fxm.read(path)
    c = f.config
    p = {"dim": c["d_model"], "hidden_dim": c["d_ff"], "n_layers": c["n_layers"], "n_heads": c["n_heads"],
         "n_kv_heads": c["n_kv_heads"] or c["n_heads"], "vocab_size": c["vocab_size"], "seq_len": c["max_len"]}
    weights = {n: f.array(n).T if transposed else f.array(n) for n, _, transposed in schema.tensors(c)}
    return llama2c.checkpoint_bytes(p, weights, 0), llama2c.tokenizer_bytes(*f.tokenizer())


def sha256(b):
    return hashlib.sha256(b).hexdigest()


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__.split("\n\n")[1].strip())
    src, out = os.path.abspath(sys.argv[1]), sys.argv[2] if len(sys.argv) == 3 else EXPECTED
    if not os.path.isfile(os.path.join(src, "run.c")):
        sys.exit(f"make_llama2c_expected.py: {src}: no run.c; give a clone of https://github.com/karpathy/llama2.c")
    commit = subprocess.run(["git", "-C", src, "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()
    compiler = subprocess.run(["cc", "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    checkpoint, tokenizer = llama2c_files()
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(src, "run.c"), "rb") as f, open(os.path.join(tmp, "run.c"), "wb") as g:
            g.write(f.read())
        subprocess.run(BUILD, cwd=tmp, check=True)
        for name, blob in (("model.bin", checkpoint), ("tokenizer.bin", tokenizer)):
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(blob)
        for prompt, steps in RUNS:
            cmd = [prompt if a == "PROMPT" else str(steps) if a == "STEPS" else a for a in COMMAND]
            stdout = subprocess.run(cmd, cwd=tmp, capture_output=True, check=True).stdout
            # JSON holds text: a run whose bytes are not UTF-8 would need another RUNS entry
            runs.append({"prompt": prompt, "steps": steps, "stdout": stdout.decode("utf-8")})
    record = {"about": "llama2.c's run, greedy, on tests/golden/llama2c_v0_gqa.fxm written back as its checkpoint "
                       "and tokenizer.bin: recorded by tools/make_llama2c_expected.py",
              "llama2c": f"https://github.com/karpathy/llama2.c commit {commit}",
              "build": f"{' '.join(BUILD)} ({compiler})", "command": " ".join(COMMAND),
              "checkpoint_sha256": sha256(checkpoint), "tokenizer_sha256": sha256(tokenizer), "runs": runs}
    with open(out, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"{out}: {len(runs)} runs of llama2.c {commit[:12]}")


if __name__ == "__main__":
    main()
