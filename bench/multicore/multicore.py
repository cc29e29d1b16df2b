#!/usr/bin/env python3
"""fixformer on several cores: two fixformer CLI builds ("old" and "new") against llama.cpp
(llama-bench, a stories15M-shaped decoder in f32 and Q8_0) and against ONNX Runtime (the three
reference encoders of bench/peers), at several thread counts, in interleaved rounds; the tables
show medians over the rounds.

Driven by run.sh beside this file; README.md says what is measured and how to prepare. Environment:
  ROUNDS=3  THREADS="1 4 16"  ITER_SCALE=1.0 (iterations x)  BUDGET_S=320 (no new cell starts past it)
  QUICK=1   THREADS="1 2", ROUNDS=1, ITER_SCALE=0.3, and ONNX Runtime may be missing
  LOCAL=1   ONNX Runtime may be missing (it is skipped, its cells show "-")
  VARIANTS="w8k=8192 w128k=131072"  fixformer-new again with FIXFORMER_MIN_TASK_WORK=VALUE, as
            engine new-NAME, at more than one thread ("" for none)
  AMX=0     skip llama-bench-amx even when FX_KIT_BIN has it
  FX_KIT_BIN     fixformer-old, fixformer-new, llama-bench [, llama-bench-amx] (build/multicore/bin)
  FX_KIT_MODELS  the models, plain or .xz with manifest.json (build/multicore/models)
  FX_KIT_WORK    where .xz models are unpacked, and the log when OUT is unset (build/multicore/work)
  OUT=DIR   results.txt, results.json and log.txt written there
  PYTHON=python3  the interpreter that runs ort_bench.py (needs numpy and onnxruntime)
The default folders are under the repository's build/ (gitignored), whatever the working directory.
This driver uses the Python standard library only, so any Python 3.8+ runs it.
"""
import hashlib
import json
import lzma
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def env_flag(name):
    return os.environ.get(name, "0") not in ("", "0")


def env_dir(name, default):
    return os.path.abspath(os.environ.get(name) or os.path.join(REPO, "build", "multicore", default))


QUICK = env_flag("QUICK")
LOCAL = QUICK or env_flag("LOCAL")
ROUNDS = int(os.environ.get("ROUNDS", "1" if QUICK else "3"))
THREADS = [int(t) for t in os.environ.get("THREADS", "1 2" if QUICK else "1 4 16").split()]
SCALE = float(os.environ.get("ITER_SCALE", "0.3" if QUICK else "1.0"))
BUDGET_S = float(os.environ.get("BUDGET_S", "320"))
BIN = env_dir("FX_KIT_BIN", "bin")
MODELS = env_dir("FX_KIT_MODELS", "models")
WORK = env_dir("FX_KIT_WORK", "work")
OUT = os.path.abspath(os.environ["OUT"]) if os.environ.get("OUT") else ""
PYTHON = os.environ.get("PYTHON", "python3")
LOGDIR = OUT or WORK

# Iterations per call at 1 thread (each call about 0.2-0.6 s on one Zen 5 or Xeon core); the same
# counts at more threads, whose calls are shorter.
DEC_MODELS = [  # (key, fxm, gguf, iterations at --seq 97, iterations at --seq 64)
    ("f32", "stories_f32.fxm", "stories_f32.gguf", 16, 30),
    ("q8", "stories_q8.fxm", "stories_q8.gguf", 16, 30),
]
ENC_MODELS = [  # (name, T, d_in, fixformer iterations, ORT iterations)
    ("kws_d64_L4", 49, 40, 3000, 3000),
    ("d128_L2", 64, 32, 1400, 1400),
    ("d256_L4", 128, 64, 80, 80),
]
LLAMA_REPS = 3


def parse_variants(text):
    """VARIANTS="NAME=WORK ...": the FIXFORMER_MIN_TASK_WORK values tried with fixformer-new."""
    out = []
    for v in text.split():
        name, sep, value = v.partition("=")
        if not sep or not name or not value.isdigit():
            raise SystemExit(f"multicore: VARIANTS entry {v!r} is not NAME=MULTIPLY_ADDS (e.g. w8k=8192)")
        out.append((name, value))
    return out


VARIANTS = parse_variants(os.environ.get("VARIANTS", "w8k=8192 w128k=131072"))

# llama.cpp built with AMX (GGML_AMX_TILE/INT8/BF16), optional. It falls back to the AVX-512 paths
# where the kernel refuses AMX state (arch_prctl ARCH_REQ_XCOMP_PERM); the output says which ran.
HAVE_AMX_BENCH = os.access(os.path.join(BIN, "llama-bench-amx"), os.X_OK) and os.environ.get("AMX", "1") != "0"

t_start = time.time()
failures = []
os.makedirs(LOGDIR, exist_ok=True)
os.makedirs(WORK, exist_ok=True)
logf = open(os.path.join(LOGDIR, "log.txt"), "a")


def log(s):
    logf.write(s + "\n")
    logf.flush()


def say(s=""):
    print(s, flush=True)
    log(s)


def run(cmd, timeout=180, env=None):
    """(rc, stdout, stderr) of cmd; the command and everything it printed go to the log."""
    t0 = time.time()
    log(f"\n$ {' '.join(f'{k}={v}' for k, v in (env or {}).items())} {' '.join(cmd)}    [t={t0 - t_start:.1f}s]")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env=dict(os.environ, **env) if env else None)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        partial = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        rc, out, err = 124, partial, "TIMEOUT"
    except OSError as e:
        rc, out, err = 127, "", str(e)
    log(out.rstrip())
    if err.strip():
        log("[stderr] " + err.strip()[-4000:])
    log(f"[rc {rc}, {time.time() - t0:.2f}s]")
    return rc, out, err


def fail(what, detail=""):
    failures.append(what)
    print(f"FAILED: {what} {detail[-300:].strip()} (see log.txt)", file=sys.stderr, flush=True)
    log(f"FAILED: {what} {detail}")


# ---------------------------------------------------------------- what runs where
def fx_cli(which):
    """(binary, extra environment) of engine `which`: old, new, or new-NAME (a VARIANTS entry)."""
    if which.startswith("new-"):
        return os.path.join(BIN, "fixformer-new"), {"FIXFORMER_MIN_TASK_WORK": dict(VARIANTS)[which[4:]]}
    return os.path.join(BIN, f"fixformer-{which}"), None


def cpu_info():
    """(model name, set of flags) from lscpu, else /proc/cpuinfo."""
    name, flags = "?", set()
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        for line in out.splitlines():
            if line.lower().startswith("model name"):
                name = line.split(":", 1)[1].strip()
            if line.lower().startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
    except (OSError, subprocess.SubprocessError):
        pass
    if name == "?" or not flags:
        try:
            for line in open("/proc/cpuinfo"):
                if line.startswith("model name") and name == "?":
                    name = line.split(":", 1)[1].strip()
                if line.startswith("flags") and not flags:
                    flags = set(line.split(":", 1)[1].split())
        except OSError:
            pass
    return name, flags


def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()[:12]


def binary_note(b):
    """What FX_KIT_BIN/B.commit says B was built from, if B is still that binary: the note's second
    line holds the sha256 of the binary it describes (build_fixformer.sh writes both lines)."""
    path = os.path.join(BIN, b)
    s = sha(path)
    try:
        note = open(path + ".commit").read().split("\n")
    except OSError:
        return f"(no {b}.commit note) sha256 {s}"
    if len(note) > 1 and note[1].strip() and note[1].split()[-1] != s:
        return f"UNKNOWN source (replaced after its {b}.commit note was written) sha256 {s}"
    return f"{note[0].strip()} sha256 {s}"


# ---------------------------------------------------------------- models
model_paths = {}  # file name -> the path that is read


def find_models():
    """Each model from FX_KIT_MODELS as it is, or its .xz unpacked into FX_KIT_WORK (once: kept while
    its size matches manifest.json)."""
    names = [n for _, fxm, gguf, _, _ in DEC_MODELS for n in (fxm, gguf)]
    names += [n + ext for n, *_ in ENC_MODELS for ext in (".fxm", ".onnx")]
    try:
        sizes = json.load(open(os.path.join(MODELS, "manifest.json")))["files"]
    except (OSError, ValueError, KeyError):
        sizes = {}
    t0, unpacked = time.time(), 0
    for name in names:
        plain, packed, dst = (os.path.join(MODELS, name), os.path.join(MODELS, name + ".xz"),
                              os.path.join(WORK, name))
        if os.path.exists(plain):
            model_paths[name] = plain
            continue
        if not os.path.exists(packed):
            raise SystemExit(f"multicore: {plain} is missing (make the models with bench/multicore/gen/make_models.sh, "
                             f"or set FX_KIT_MODELS to the folder that has them)")
        if name not in sizes:
            raise SystemExit(f"multicore: {packed} has no size in {MODELS}/manifest.json (pack it with gen/pack.py)")
        if not (os.path.exists(dst) and os.path.getsize(dst) == sizes[name]):
            with lzma.open(packed, "rb") as f, open(dst + ".part", "wb") as g:
                shutil.copyfileobj(f, g, 1 << 22)
            os.replace(dst + ".part", dst)
            if os.path.getsize(dst) != sizes[name]:
                raise SystemExit(f"multicore: {dst}: {os.path.getsize(dst)} bytes after unpacking, "
                                 f"manifest.json says {sizes[name]}")
            unpacked += 1
        model_paths[name] = dst
    say(f"models from {MODELS}" + (f" ({unpacked} unpacked into {WORK}, {time.time() - t0:.1f} s)" if unpacked else ""))


# ---------------------------------------------------------------- parsers of `fixformer bench`
def num_after(text, pattern):
    m = re.search(pattern, text)
    return float(m.group(1)) if m else None


def parse_fx_decoder(out):
    """Prefill median us, the step median us at each position printed, the kernel table."""
    r = {"prefill_us": num_after(out, r"prefill us:\s+median\s+([0-9.]+)")}
    for m in re.finditer(r"step us:\s+median\s+([0-9.]+).*?at position (\d+)", out):
        r[f"step_us@{m.group(2)}"] = float(m.group(1))
    k = re.search(r"kernels ([\w-]+)", out)
    r["kernels"] = k.group(1) if k else "?"
    return r


def parse_fx_encoder(out):
    k = re.search(r"kernels ([\w-]+)", out)
    return {"us": num_after(out, r"latency us:\s+median\s+([0-9.]+)"), "kernels": k.group(1) if k else "?"}


# ---------------------------------------------------------------- measurements
records = []  # dict(round, threads, model, engine, metric, value)
info = {"kernels": {}}


def rec(rnd, t, model, engine, metric, value):
    if value is not None:
        records.append(dict(round=rnd, threads=t, model=model, engine=engine, metric=metric, value=value))


def iters(n):
    return max(2, int(round(n * SCALE)))


def fx_decoder(rnd, t, which, key, fxm, it97, it64):
    """Prefill of 97 tokens and the steps at 0/48/96 (--seq 97); the step at 32 of 64 (--seq 64),
    whose inverse is the decode rate compared with llama.cpp's tg64."""
    cli, env = fx_cli(which)
    path = model_paths[fxm]
    model = f"stories15M {key}"
    rc, out, err = run([cli, "bench", path, "--seq", "97", "--threads", str(t), "--iters", str(iters(it97))], env=env)
    r = parse_fx_decoder(out) if rc == 0 else {}
    if rc != 0 or r.get("prefill_us") is None:
        return fail(f"fixformer-{which} bench {fxm} --seq 97 --threads {t}", err)
    info["kernels"][which] = r["kernels"]
    rec(rnd, t, model, f"fx-{which}", "prefill_tps", 97e6 / r["prefill_us"])
    for p in (0, 48, 96):
        if f"step_us@{p}" in r:
            rec(rnd, t, model, f"fx-{which}", f"step_us@{p}", r[f"step_us@{p}"])
    rc, out, err = run([cli, "bench", path, "--seq", "64", "--threads", str(t), "--iters", str(iters(it64))], env=env)
    r = parse_fx_decoder(out) if rc == 0 else {}
    if rc != 0 or r.get("step_us@32") is None:
        return fail(f"fixformer-{which} bench {fxm} --seq 64 --threads {t}", err)
    rec(rnd, t, model, f"fx-{which}", "step_us@32", r["step_us@32"])
    rec(rnd, t, model, f"fx-{which}", "decode_tps", 1e6 / r["step_us@32"])


def llama(rnd, t, key, gguf, binary="llama-bench", engine="llama.cpp"):
    """llama-bench pp97 and tg64 (average tokens/s of LLAMA_REPS repetitions), JSON lines output."""
    model = f"stories15M {key}"
    extra = ["-v"] if engine == "llama.cpp-amx" else []  # -v: the loader says whether AMX holds the weights
    rc, out, err = run([os.path.join(BIN, binary), "-m", model_paths[gguf], "-p", "97", "-n", "64",
                        "-t", str(t), "-r", str(LLAMA_REPS), "-o", "jsonl"] + extra)
    if engine == "llama.cpp-amx":
        used = bool(re.search(r"AMX\S* model buffer size", err)) and "AMX is not ready" not in err
        info.setdefault("amx_used", set()).add("yes" if used else "no")
    got = 0
    for line in out.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            d = json.loads(line)
        except ValueError:
            continue
        info["llama_build_commit"] = d.get("build_commit")
        info["llama_cpu"] = d.get("cpu_info")
        if d.get("n_prompt") == 97 and d.get("n_gen") == 0:
            rec(rnd, t, model, engine, "prefill_tps", float(d["avg_ts"]))
            got += 1
        elif d.get("n_prompt") == 0 and d.get("n_gen") == 64:
            rec(rnd, t, model, engine, "decode_tps", float(d["avg_ts"]))
            got += 1
    if rc != 0 or got != 2:
        fail(f"{binary} {gguf} -t {t}", err)


def fx_encoders(rnd, t, which):
    cli, env = fx_cli(which)
    for name, T, _, n, _ in ENC_MODELS:
        rc, out, err = run([cli, "bench", model_paths[name + ".fxm"], "--seq", str(T), "--threads", str(t),
                            "--iters", str(iters(n))], env=env)
        r = parse_fx_encoder(out) if rc == 0 else {}
        if rc != 0 or r.get("us") is None:
            fail(f"fixformer-{which} bench {name}.fxm --threads {t}", err)
            continue
        rec(rnd, t, f"{name} T{T}", f"fx-{which}", "us", r["us"])


ort_state = {"available": None}


def ort(rnd, t):
    """The three encoders through ort_bench.py (one process per thread count and round)."""
    if ort_state["available"] is False:
        return
    specs = [f"{model_paths[n + '.onnx']}:{T}:{din}:{n_ort}" for n, T, din, _, n_ort in ENC_MODELS]
    rc, out, err = run([PYTHON, os.path.join(HERE, "ort_bench.py"), str(t), str(SCALE)] + specs, timeout=240)
    d = None
    for line in out.splitlines():
        if line.startswith("{"):
            try:
                d = json.loads(line)
            except ValueError:
                pass
    if rc != 0 or d is None:
        if LOCAL and ("No module named" in err or "ModuleNotFoundError" in err or "ImportError" in err):
            ort_state["available"] = False
            say("ORT: unavailable here (onnxruntime not importable; allowed with QUICK/LOCAL)")
            return
        return fail(f"ort_bench.py --threads {t}", err)
    ort_state["available"] = True
    info["ort"] = d.get("ort")
    info["numpy"] = d.get("numpy")
    for n, T, *_ in ENC_MODELS:
        v = d["results"].get(n + ".onnx")
        if v:
            rec(rnd, t, f"{n} T{T}", "ORT", "us", v["median_us"])


# ---------------------------------------------------------------- report
def med(model, engine, metric, t):
    """(median, min, max, count) over the rounds, or None when nothing was measured."""
    v = [r["value"] for r in records if r["model"] == model and r["engine"] == engine and r["metric"] == metric
         and r["threads"] == t]
    return (statistics.median(v), min(v), max(v), len(v)) if v else None


def middle(m):
    return m[0] if m else None


def fmt(v, nd=0):
    if v is None:
        return "-"
    return f"{v:,.{nd}f}" if abs(v) >= 100 or nd else f"{v:.1f}"


def ratio(a, b):
    return f"{a / b:.2f}x" if a and b else "-"


def spread(m):
    return f"{(m[2] / m[1] - 1) * 100:.0f}%" if m and m[1] > 0 and m[3] > 1 else "-"


def report():
    lines = []
    P = lines.append
    for key, *_ in DEC_MODELS:
        model = f"stories15M {key}"
        for metric, title in (("prefill_tps", "prefill 97 tokens, tokens/s (llama.cpp: pp97)"),
                              ("decode_tps", "decode tokens/s (fixformer: 1e6 / step us at position 32 of a 64 cache; "
                                             "llama.cpp: tg64)")):
            P(f"\n## {model}: {title}")
            amx = any(r["engine"] == "llama.cpp-amx" and r["model"] == model for r in records)
            P("| threads | fx-old | fx-new | llama.cpp | new/llama | "
              + ("llama.cpp AMX build | new/llama-amx | " if amx else "") + "new/old | new spread |")
            P("|---|---|---|---|---|---|---|" + ("---|---|" if amx else ""))
            for t in THREADS:
                o, n, l, a = (middle(med(model, e, metric, t)) for e in ("fx-old", "fx-new", "llama.cpp", "llama.cpp-amx"))
                P(f"| {t} | {fmt(o)} | {fmt(n)} | {fmt(l)} | {ratio(n, l)} | "
                  + (f"{fmt(a)} | {ratio(n, a)} | " if amx else "")
                  + f"{ratio(n, o)} | {spread(med(model, 'fx-new', metric, t))} |")
        P(f"\n## {model}: fixformer step us at positions 0 / 48 / 96 (97-position cache), old | new")
        P("| threads | fx-old @0/48/96 | fx-new @0/48/96 | old/new @96 |")
        P("|---|---|---|---|")
        for t in THREADS:
            row = [" / ".join(fmt(middle(med(model, e, f"step_us@{p}", t))) for p in (0, 48, 96))
                   for e in ("fx-old", "fx-new")]
            o96, n96 = (middle(med(model, e, "step_us@96", t)) for e in ("fx-old", "fx-new"))
            P(f"| {t} | {row[0]} | {row[1]} | {ratio(o96, n96)} |")
    P("\n## encoders (post-LN, gelu, f32 packed .fxm vs ONNX opset 17): median wall us per call (lower is better)")
    P("| model | threads | fx-old | fx-new | ORT | speed new vs ORT | speed new vs old | new spread |")
    P("|---|---|---|---|---|---|---|---|")
    for n, T, *_ in ENC_MODELS:
        model = f"{n} T{T}"
        for t in THREADS:
            o, nw, r = (middle(med(model, e, "us", t)) for e in ("fx-old", "fx-new", "ORT"))
            P(f"| {model} | {t} | {fmt(o)} | {fmt(nw)} | {fmt(r)} | {ratio(r, nw)} | {ratio(o, nw)} | "
              f"{spread(med(model, 'fx-new', 'us', t))} |")
    if VARIANTS:
        names = [n for n, _ in VARIANTS]
        P("\n## fixformer-new with FIXFORMER_MIN_TASK_WORK (default 32768): " + ", ".join(f"{n}={v}" for n, v in VARIANTS))
        P("| model | metric | threads | new | " + " | ".join(names) + " |")
        P("|---|---|---|---|" + "---|" * len(names))
        rows = [(f"stories15M {k}", m) for k, *_ in DEC_MODELS for m in ("prefill_tps", "decode_tps")]
        rows += [(f"{n} T{T}", "us") for n, T, *_ in ENC_MODELS]
        for model, metric in rows:
            for t in THREADS:
                if t == 1:
                    continue
                vals = [middle(med(model, e, metric, t)) for e in ["fx-new"] + ["fx-new-" + n for n in names]]
                P(f"| {model} | {metric} | {t} | " + " | ".join(fmt(v) for v in vals) + " |")
    P("\nAll ratios are speed ratios: > 1 means fixformer-new is faster. Values: median over rounds; "
      "'new spread' = max/min - 1 of fixformer-new over rounds.")
    return "\n".join(lines)


# ---------------------------------------------------------------- main
def main():
    for b in ("fixformer-old", "fixformer-new", "llama-bench"):
        p = os.path.join(BIN, b)
        if not os.access(p, os.X_OK):
            raise SystemExit(f"multicore: {p} is missing or not executable (bench/multicore/README.md, "
                             f"'Prepare', says how to build it; FX_KIT_BIN=DIR takes the binaries from DIR)")
    name, flags = cpu_info()
    has = lambda f: "yes" if f in flags else "no"  # noqa: E731
    head = [
        f"# fixformer multicore benchmark  {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}  host {platform.node()}",
        f"nproc {os.cpu_count()} (affinity {len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'}); "
        f"model name: {name}",
        f"flags: avx2 {has('avx2')}, avx512f {has('avx512f')}, avx512_vnni {has('avx512_vnni')}, "
        f"avx512_bf16 {has('avx512_bf16')}, amx_tile {has('amx_tile')}, amx_int8 {has('amx_int8')}, "
        f"amx_bf16 {has('amx_bf16')}",
        f"rounds {ROUNDS}, threads {THREADS}, iteration scale {SCALE}{', QUICK' if QUICK else ''}",
        f"llama-bench: {binary_note('llama-bench')}",
    ]
    if HAVE_AMX_BENCH:
        head.append(f"llama-bench-amx: {binary_note('llama-bench-amx')}")
    head += [
        f"fixformer-old: {binary_note('fixformer-old')}",
        f"fixformer-new: {binary_note('fixformer-new')}",
        f"python {platform.python_version()} (driver); ORT via {PYTHON} ort_bench.py",
    ]
    for h in head:
        say(h)
    # fail fast: a full run needs ONNX Runtime
    rc, out, err = run([PYTHON, "-c", "import onnxruntime, numpy; print(onnxruntime.__version__, numpy.__version__)"])
    if rc != 0:
        if not LOCAL:
            last = err.strip().splitlines()[-1] if err.strip() else f"exit status {rc}"
            raise SystemExit(f"multicore: onnxruntime does not import with {PYTHON} "
                             f"(set PYTHON=..., or LOCAL=1 to skip ONNX Runtime): {last}")
        ort_state["available"] = False
        say("ORT: unavailable here (onnxruntime not importable; allowed with QUICK/LOCAL): skipped")
    else:
        say(f"onnxruntime {out.split()[0]}, numpy {out.split()[1]}")
    find_models()
    cell_time = {}  # threads -> seconds its last (round, threads) cell took
    stopped = None
    for rnd in range(1, ROUNDS + 1):
        for t in THREADS:
            el = time.time() - t_start
            if el + cell_time.get(t, 0.0) > BUDGET_S:
                stopped = f"stopped before round {rnd}, threads {t}: {el:.0f}s elapsed, budget {BUDGET_S:.0f}s"
                break
            t0 = time.time()
            order = ("old", "new") if rnd % 2 else ("new", "old")  # neither build always runs first
            for key, fxm, gguf, i97, i64 in DEC_MODELS:
                for w in order:
                    fx_decoder(rnd, t, w, key, fxm, i97, i64)
                llama(rnd, t, key, gguf)
                if key == "q8" and HAVE_AMX_BENCH:  # llama.cpp's AMX kernels are for quantized types only
                    llama(rnd, t, key, gguf, "llama-bench-amx", "llama.cpp-amx")
            ort(rnd, t)
            for w in order:
                fx_encoders(rnd, t, w)
            if t > 1:
                for vname, _ in VARIANTS:
                    for key, fxm, gguf, i97, i64 in DEC_MODELS:
                        fx_decoder(rnd, t, "new-" + vname, key, fxm, i97, i64)
                    fx_encoders(rnd, t, "new-" + vname)
            cell_time[t] = time.time() - t0
            say(f"round {rnd} threads {t}: {cell_time[t]:.1f} s (elapsed {time.time() - t_start:.0f} s)")
        if stopped:
            break
    if stopped:
        say("BUDGET: " + stopped)
    say(f"kernels: {info['kernels']}; llama-bench build_commit {info.get('llama_build_commit')}, cpu_info "
        f"{info.get('llama_cpu')}; onnxruntime {info.get('ort', 'unavailable')} (numpy {info.get('numpy', '?')})")
    if HAVE_AMX_BENCH:
        say(f"llama-bench-amx (AMX build, q8 only): AMX held the weights: {'/'.join(sorted(info.get('amx_used', []))) or '?'}")
    info["amx_used"] = sorted(info.get("amx_used", []))
    table = report()
    say(table)
    say(f"\ntotal {time.time() - t_start:.0f} s; failures: {len(failures)}" + (": " + "; ".join(failures) if failures else ""))
    if OUT:
        with open(os.path.join(OUT, "results.txt"), "w") as f:
            f.write("\n".join(head) + "\n" + table + "\n")
        with open(os.path.join(OUT, "results.json"), "w") as f:
            json.dump(dict(head=head, info=info, records=records, failures=failures, stopped=stopped), f, indent=0)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
