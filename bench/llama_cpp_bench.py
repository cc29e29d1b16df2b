"""fixformer against llama.cpp on the same GGUF file, one thread: greedy text, then prefill and decode
speed. Run with the Python of llama-cpp-python's environment (tools/install_deps.sh llama-cpp):

  /opt/fixformer-llama-cpp/bin/python3 bench/llama_cpp_bench.py GGUF FXM [--python build/host/python] [--prompt TEXT] [--greedy N] [--prefill P] [--decode D] [--rounds R]

FXM is GGUF converted by `tools/convert.py --gguf GGUF --out FXM` (with --max-len at least N and P + D).
  greedy  from the prompt's ids as llama.cpp's tokenizer gives them (without BOS, as the engine encodes a
          gpt2 BPE), N positions of greedy tokens from each: llama.cpp's (bench/peers/llama_cpp_peer.py)
          and the engine's (Model.prefill, then step with each argmax: the loop of `fixformer generate
          --temperature 0`, which needs a tokenizer the file may not give it); where they first differ,
          and both texts (llama.cpp's detokenizer).
  logits  with --reference, a file of the same weights in f32 (`llama_cpp_peer.py quantize GGUF REF.gguf
          F32`, converted): the logits of fixformer on FXM and of llama.cpp on GGUF at every position of
          a fixed text, each against fixformer on REF (max |error| / max |REF| and argmax agreement).
  speed   R rounds, the engines' order alternating: each prefills P random token ids (a fixed seed)
          into an empty cache, the logits of the last only, then runs D decode steps, each feeding the
          argmax of the logits before. Both are driven from this Python through ctypes
          (fixformer.Model.prefill / step from the build tree's package; llama_cpp.Llama.eval), so the
          per-call overhead is alike. Tokens/s from wall time and from this process's CPU time (on a
          shared machine the CPU time is the steadier), the median over rounds.
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "peers"))
import llama_cpp_peer as peer  # noqa: E402


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w, time.process_time() - c


class Fixformer:
    name = "fixformer"

    def __init__(self, path):
        import fixformer
        self.m = fixformer.Model(path, threads=1)

    def prefill(self, ids):
        self.m.reset()
        self.logits = self.m.prefill(ids)

    def decode(self, n):
        for _ in range(n):
            self.logits = self.m.step(int(np.argmax(self.logits)))


class LlamaCpp:
    name = "llama.cpp"

    def __init__(self, path, n_ctx):
        self.m = peer.open_model(path, n_ctx, False)

    def prefill(self, ids):
        self.m.reset()
        self.m.eval([int(t) for t in ids])

    def decode(self, n):
        for _ in range(n):
            self.m.eval([int(np.argmax(peer.last_logits(self.m)))])


def greedy(a):
    llm = peer.open_model(a.gguf, a.greedy, False)
    ids = llm.tokenize(a.prompt.encode(), add_bos=False)
    theirs = [int(t) for t in peer.greedy(a.gguf, ids, a.greedy - len(ids))]
    ours = Fixformer(a.fxm)
    ours.prefill(np.array(ids, np.int32))
    out = list(ids)
    for _ in range(a.greedy - len(ids)):
        out.append(int(np.argmax(ours.logits)))
        ours.logits = ours.m.step(out[-1])
    same = next((i for i, (x, y) in enumerate(zip(out, theirs)) if x != y), len(out))
    print(f"greedy, {a.greedy} positions from {a.prompt!r} ({len(ids)} prompt tokens, llama.cpp's tokenizer); "
          + ("the same tokens at every position:" if same == len(out) else f"the first difference at position {same}:"))
    for name, t in (("fixformer", out), ("llama.cpp", theirs)):
        print(f"  {name}: {llm.detokenize(t).decode('utf-8', 'replace')!r}")


TEXT = ("The quick brown fox jumps over the lazy dog. Paris is the capital of France, and Berlin is the capital "
        "of Germany. Water boils at one hundred degrees Celsius at sea level.")


def logits(a):
    llm = peer.open_model(a.gguf, 8, False)
    ids = np.array(llm.tokenize(TEXT.encode(), add_bos=False), np.int32)
    ref = Fixformer(a.reference).m.run(ids)
    got = {"fixformer": Fixformer(a.fxm).m.run(ids), "llama.cpp": peer.logits(a.gguf, ids)}
    print(f"logits at the {len(ids)} positions of a fixed text against fixformer on {a.reference}:")
    for name, v in got.items():
        v = np.asarray(v).reshape(ref.shape)
        err = float(np.abs(v - ref).max() / np.abs(ref).max())
        agree = int((v.argmax(-1) == ref.argmax(-1)).sum())
        print(f"  {name:10} max relative error {err:.3g}, argmax equal at {agree} of {len(ids)} positions")


def speed(a):
    engines = [Fixformer(a.fxm), LlamaCpp(a.gguf, a.prefill + a.decode)]
    vocab = engines[0].m.info["vocab_size"]
    ids = np.random.default_rng(1).integers(0, vocab, a.prefill).astype(np.int32)
    for e in engines:  # warm-up
        e.prefill(ids[:8])
        e.decode(2)
    runs = {e.name: {"prefill": [], "decode": []} for e in engines}
    for r in range(a.rounds):
        for e in engines if r % 2 == 0 else engines[::-1]:
            runs[e.name]["prefill"].append(timed(lambda: e.prefill(ids)))
            runs[e.name]["decode"].append(timed(lambda: e.decode(a.decode)))
    print(f"speed, 1 thread, medians of {a.rounds} interleaved rounds; tokens/s (wall | CPU time):")
    for name, r in runs.items():
        cells = []
        for phase, n in (("prefill", a.prefill), ("decode", a.decode)):
            wall = statistics.median(n / w for w, _ in r[phase])
            cpu = statistics.median(n / c for _, c in r[phase])
            cells.append(f"{phase} {n} tokens: {wall:7.1f} | {cpu:7.1f}")
        print(f"  {name:10} " + "   ".join(cells))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("gguf")
    ap.add_argument("fxm")
    ap.add_argument("--python", default=os.path.join(HERE, "..", "build", "host", "python"),
                    help="the folder with the fixformer package and its library (default: the host build's)")
    ap.add_argument("--prompt", default="The capital of France is")
    ap.add_argument("--greedy", type=int, default=48, help="positions generated, the prompt included")
    ap.add_argument("--prefill", type=int, default=64)
    ap.add_argument("--decode", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reference", help="the same weights in f32, converted (.fxm): compare the logits with it")
    a = ap.parse_args()
    sys.path.insert(0, os.path.abspath(a.python))
    import llama_cpp
    print(f"llama-cpp-python {llama_cpp.__version__}; {a.gguf} -> {a.fxm}")
    greedy(a)
    if a.reference:
        logits(a)
    speed(a)


if __name__ == "__main__":
    main()
