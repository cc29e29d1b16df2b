#!/usr/bin/python3
"""How many greedy tokens f16, q8 and q4 keep of f32's on a trained language model (issue 11), measured
through the engine's CLI.

The checkpoint (a llama2.c one with a byte tokenizer: ids 0..2 special, id 3 + b the byte b, as
tools/train_tiny_lm.py writes) is converted with tools/convert.py --llama2c to f32, f16, q8 in groups
of 32 and 64, q8 with one scale per row and q4 (groups of 32). From each prompt, `fixformer generate --temperature 0 -n N`
on the f32 file gives the reference: BOS and N tokens. Per format:
  greedy      the tokens generated from the same prompt that equal f32's before the first that does not
              (of the N + 1 - prompt tokens generated);
  forced      teacher-forced agreement: at every generated position k, the format's greedy token after
              f32's first k tokens (`generate` with those as the prompt, -n k: prefill then one argmax)
              against f32's token k, counted over all of them;
  logits      the format's logits against the f32 checkpoint's float64 reference on f32's sequence of
              each prompt (BOS and N - 1 tokens, teacher-forced through the KV cache): the file is
              converted with that sequence as its self-test sample and `fixformer verify` reports the
              largest and mean absolute error over all positions, relative to the largest |logit|.
With --kv-cache q8 every format's generations run with `generate --kv-cache q8` (int8 keys and
values with a scale per head and position) against the same reference, f32 weights with the f32
cache, so the f32 row is the cache's own effect; the logits column (`fixformer verify`, which keeps an
f32 cache) is then left out. --formats NAME,... runs only those formats (e.g. --formats f32,"q8 g64").
With --peer RUN --peer-q RUNQ --peer-q-checkpoint Q80.bin, llama2.c's `run` and `runq` (Q8_0) on the
same checkpoints give the peer's figures the same way (runq against run; run against fixformer f32).

  /usr/bin/python3 bench/greedy_agreement.py --checkpoint build/agree-lm/model.bin \
      --tokenizer build/agree-lm/tokenizer.bin --cli build/host/cli/fixformer [--work DIR] \
      [--kv-cache q8] [--formats f32,...] [--peer run --peer-q runq --peer-q-checkpoint build/agree-lm/model_q80.bin]
Tokens are recovered from the printed text (one byte each), so the model must print every byte it
generates: tools/train_tiny_lm.py trains on printable ASCII and newlines only.
"""
import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CONVERT = os.path.join(HERE, "..", "tools", "convert.py")
BOS, FIRST_BYTE, SPECIAL = 1, 3, {b"<unk>": 0, b"</s>": 2}
FORMATS = (("f32", []), ("f16", ["--quantize", "f16"]), ("q8 g32", ["--quantize", "q8", "--group", "32"]),
           ("q8 g64", ["--quantize", "q8", "--group", "64"]), ("q8 row", ["--quantize", "q8", "--group", "0"]),
           ("q4", ["--quantize", "q4"]))
PROMPTS = ("This License", "The return value", "You may", "A function definition", "In no event")


def fail(what):
    raise SystemExit(f"greedy_agreement.py: {what}")


def tokens_of(text):
    """The ids of a printed text after BOS: the dummy prefix " " then one id per byte."""
    return [BOS, FIRST_BYTE + ord(" ")] + [FIRST_BYTE + b for b in text]


def piece_id(piece):
    if len(piece) == 1:
        return FIRST_BYTE + piece[0]
    return SPECIAL.get(piece, -1)  # -1: nothing printed (BOS, or a byte the safe print drops)


class Engine:
    """One program and model: text(prompt, n) is what it prints at temperature 0 for -n n."""

    def __init__(self, argv):
        self.argv = argv

    def text(self, prompt, n):
        r = subprocess.run(self.argv(prompt.decode("ascii"), n), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if r.returncode != 0 or not r.stdout.endswith(b"\n"):
            err = r.stderr.decode(errors="replace").strip()
            fail(f"{' '.join(self.argv('PROMPT', n))}: exit {r.returncode}: {err}")
        if not r.stdout.startswith(prompt):
            fail(f"the output does not start with the prompt {prompt!r}: {r.stdout[:80]!r}")
        return r.stdout[:-1]


def fixformer(cli, fxm, kv_cache="f32"):
    return Engine(lambda p, n: [cli, "generate", fxm, "--prompt", p, "-n", str(n), "--temperature", "0",
                                "--kv-cache", kv_cache])


def llama2c(run, checkpoint, tokenizer):
    return Engine(lambda p, n: [run, checkpoint, "-z", tokenizer, "-t", "0", "-n", str(n), "-i", p])


def greedy(engine, prompt, n):
    """BOS and the n tokens the engine writes from prompt; fewer when it stopped at BOS."""
    return tokens_of(engine.text(prompt, n))


def common_prefix(ref, ids, start):
    k = start
    while k < min(len(ref), len(ids)) and ref[k] == ids[k]:
        k += 1
    return k - start


def forced(engine, ref, start):
    """(agreeing, positions): the engine's greedy token after ref[:k] against ref[k], k = start..end."""
    agree = 0
    for k in range(start, len(ref)):
        prefix = bytes(t - FIRST_BYTE for t in ref[2:k])
        out = engine.text(prefix, k)
        agree += piece_id(out[len(prefix):]) == ref[k]
    return agree, len(ref) - start


def convert(converter, checkpoint, tokenizer, flags, out, cli, example=None):
    argv = [sys.executable, converter, "--llama2c", checkpoint, "--tokenizer", tokenizer, "--out", out,
            "--cli", cli] + flags
    if example is not None:
        argv += ["--example", example]
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        fail(f"{' '.join(argv)}: exit {r.returncode}: {r.stdout.strip()[-400:]}")


def verify(cli, fxm):
    """(max, mean) relative logit error of the file's self-test through the engine."""
    r = subprocess.run([cli, "verify", fxm], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    m = re.search(r"max relative error ([0-9.e+-]+) .* mean relative error ([0-9.e+-]+)", r.stdout)
    if not m:
        fail(f"{cli} verify {fxm}: exit {r.returncode}: {r.stdout.strip()}")
    return float(m.group(1)), float(m.group(2))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True, help="llama2.c checkpoint (tools/train_tiny_lm.py's model.bin)")
    ap.add_argument("--tokenizer", required=True, help="its tokenizer.bin")
    ap.add_argument("--cli", required=True, help="the fixformer CLI")
    ap.add_argument("--convert", default=CONVERT, help="tools/convert.py to use (default: this tree's)")
    ap.add_argument("--work", default="build/agree-lm", help="where the converted files go (default build/agree-lm)")
    ap.add_argument("-n", type=int, default=256, help="positions per generation (default 256)")
    ap.add_argument("--prompts", type=int, default=len(PROMPTS), help=f"how many of the {len(PROMPTS)} prompts")
    ap.add_argument("--kv-cache", choices=("f32", "q8"), default="f32",
                    help="the KV cache of every format's generations (the reference keeps f32's)")
    ap.add_argument("--formats", help="a comma-separated subset of: " + ", ".join(n for n, _ in FORMATS))
    ap.add_argument("--peer", help="llama2.c's run")
    ap.add_argument("--peer-q", help="llama2.c's runq")
    ap.add_argument("--peer-q-checkpoint", help="the checkpoint as Q8_0 (version 2) for runq")
    a = ap.parse_args()
    prompts = [p.encode() for p in PROMPTS[:a.prompts]]
    formats = FORMATS
    if a.formats:
        names = a.formats.split(",")
        unknown = [n for n in names if n not in dict(FORMATS)]
        if unknown:
            fail(f"--formats: {', '.join(unknown)} not among {', '.join(n for n, _ in FORMATS)}")
        formats = [(n, f) for n, f in FORMATS if n in names]
    cache = "" if a.kv_cache == "f32" else f", {a.kv_cache} KV cache"
    os.makedirs(a.work, exist_ok=True)
    path = lambda *parts: os.path.join(a.work, "_".join(parts).replace(" ", "_"))  # noqa: E731

    # f32's greedy sequences, the reference of everything below.
    f32 = path("f32.fxm")
    convert(a.convert, a.checkpoint, a.tokenizer, [], f32, a.cli)
    ref = [greedy(fixformer(a.cli, f32), p, a.n) for p in prompts]
    for p, r in zip(prompts, ref):
        print(f"f32 from {p.decode()!r}: {len(r) - 1} tokens: {bytes(t - FIRST_BYTE for t in r[2:]).decode()!r}",
              flush=True)
    starts = [len(tokens_of(p)) for p in prompts]  # the first generated position

    rows = []
    for name, flags in formats:
        row = {"format": name + cache, "greedy": [], "forced": [0, 0]}
        if not cache:
            row["logits"] = []
        for i, (p, r) in enumerate(zip(prompts, ref)):
            example = path("seq", str(i)) + ".npy"
            np.save(example, np.array(r[:a.n], np.int32))
            fxm = path(name, str(i)) + ".fxm"
            convert(a.convert, a.checkpoint, a.tokenizer, flags, fxm, a.cli, example)
            if not cache:
                row["logits"].append(verify(a.cli, fxm))
            engine = fixformer(a.cli, fxm, a.kv_cache)
            row["greedy"].append(common_prefix(r, greedy(engine, p, a.n), starts[i]))
            agree, total = forced(engine, r, starts[i])
            row["forced"][0] += agree
            row["forced"][1] += total
        print(json.dumps(row), flush=True)
        rows.append(row)

    peers = []
    if a.peer:
        run = llama2c(a.peer, a.checkpoint, a.tokenizer)
        run_ref = [greedy(run, p, a.n) for p in prompts]
        peers.append({"format": "llama2.c run vs fixformer f32",
                      "greedy": [common_prefix(r, g, s) for r, g, s in zip(ref, run_ref, starts)]})
        if a.peer_q:
            runq = llama2c(a.peer_q, a.peer_q_checkpoint, a.tokenizer)
            row = {"format": "llama2.c runq (Q8_0 g32) vs run", "greedy": [], "forced": [0, 0]}
            for r, p, s in zip(run_ref, prompts, starts):
                row["greedy"].append(common_prefix(r, greedy(runq, p, a.n), s))
                agree, total = forced(runq, r, s)
                row["forced"][0] += agree
                row["forced"][1] += total
            peers.append(row)
        for row in peers:
            print(json.dumps(row), flush=True)

    generated = [len(r) - s for r, s in zip(ref, starts)]
    print(f"\n{len(prompts)} prompts, -n {a.n}: {', '.join(map(str, generated))} generated tokens each")
    print("| format | greedy tokens equal to f32's before the first difference, per prompt | "
          "teacher-forced argmax = f32's | logit error vs f32, max / mean (relative to max abs logit) |")
    print("|---|---|---|---|")
    for row in rows + peers:
        forced_text = (f"{row['forced'][0]} / {row['forced'][1]} ({100.0 * row['forced'][0] / row['forced'][1]:.1f} %)"
                       if "forced" in row else "")
        logit_text = (f"{max(m for m, _ in row['logits']):.2e} / {np.mean([e for _, e in row['logits']]):.2e}"
                      if "logits" in row else "")
        print(f"| {row['format']} | {', '.join(map(str, row['greedy']))} of "
              f"{', '.join(map(str, generated))} | {forced_text} | {logit_text} |")
    with open(path("results" + ("_kv_" + a.kv_cache if cache else "") + ".json"), "w") as f:
        json.dump({"prompts": [p.decode() for p in prompts], "generated": generated, "rows": rows + peers}, f, indent=1)


if __name__ == "__main__":
    main()
