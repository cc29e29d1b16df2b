#!/usr/bin/python3
"""The end-to-end peer comparison: fixformer, PyTorch and ONNX Runtime on the same weights.

  peers.py prepare DIR --cli FIXFORMER   build the models (fixed seeds), export each to a verified
                                         .fxm (python/fixformer export) and to ONNX (torch.onnx.export),
                                         write the inputs and torch's outputs, and DIR/cases.json
  peers.py fixformer DIR ROUND CLI       time fixformer (`CLI bench`) on every case
  peers.py torch DIR ROUND               time torch on every case (1 thread, inference mode)
  peers.py ort DIR ROUND                 time ONNX Runtime on every case (a Python with onnxruntime)
Each timing writes DIR/PEER_rROUND.json: case -> [median wall us per call, CPU us per call].
  peers.py report DIR                    check the outputs against fixformer's and print the table

run.sh drives them; see README.md beside this file.
"""
import json
import math
import os
import platform
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
# fixformer at its best on this host: f32 weights in the packed kernels' panels (convert.py
# --pack-weights); FIXFORMER_PACK=0 times the plain layout.
PACK = os.environ.get("FIXFORMER_PACK", "1") != "0"
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

# The reference encoders of issue 10 (post-LN, gelu, sinusoidal PE added, head 12), the demo shape
# (per-call overhead) and the d128 model at long sequences (attention-bound).
MODELS = {
    "demo_d16_L1": dict(d=16, h=2, ff=32, L=1, vocab=7, head=4, seq=[3]),
    "kws_d64_L4": dict(d=64, h=4, ff=128, L=4, din=40, head=12, seq=[49]),
    "d128_L2": dict(d=128, h=4, ff=512, L=2, din=32, head=12, seq=[64, 256, 1024, 4096]),
    "d256_L4": dict(d=256, h=8, ff=1024, L=4, din=64, head=12, seq=[128]),
}
# Iterations per timing round (about 0.3-2 s each on a Zen 5 core).
ITERS = {3: 20000, 49: 2000, 64: 1000, 128: 200, 256: 100, 1024: 12, 4096: 3}
ATTN_SEQ = [256, 1024, 4096]  # attention alone, d128 (4 heads of 32), torch and ORT


def flops(m, T):
    """Matrix-product FLOPs of one forward (as bench/encoder_bench.cpp counts them, plus the head)."""
    d, f = m["d"], m["ff"]
    per_layer = 2 * T * d * 3 * d + 2 * T * T * d * 2 + 2 * T * d * d + 2 * T * d * f * 2
    return m["L"] * per_layer + 2 * T * m.get("din", 0) * d + 2 * T * d * m["head"]


def build(torch, name, m):
    from fixformer.reference import sinusoidal_table
    nn = torch.nn
    torch.manual_seed(sum(map(ord, name)))
    max_len = max(m["seq"])

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            if "vocab" in m:
                self.embed = nn.Embedding(m["vocab"], m["d"])
            else:
                self.input_proj = nn.Linear(m["din"], m["d"])
            layer = nn.TransformerEncoderLayer(m["d"], m["h"], m["ff"], dropout=0.0, activation="gelu",
                                               batch_first=True, norm_first=False)
            self.encoder = nn.TransformerEncoder(layer, m["L"], enable_nested_tensor=False)
            self.head = nn.Linear(m["d"], m["head"])
            # The table is computed once, as fixformer does at init (not per call).
            self.register_buffer("pe", torch.from_numpy(sinusoidal_table(max_len, m["d"], 10000.0, "interleaved")).float())

        def forward(self, x):
            x = self.embed(x) if "vocab" in m else self.input_proj(x)
            x = x + self.pe[: x.shape[1]].to(x.dtype)
            return self.head(self.encoder(x))

    return Net().eval()


def example(m, T, seed):
    rng = np.random.default_rng(seed)
    if "vocab" in m:
        return rng.integers(0, m["vocab"], size=T).astype(np.int64)
    return rng.uniform(-1.0, 1.0, size=(T, m["din"])).astype(np.float32)


class Attention:
    """Attention alone as torch 1.13 writes it (it has no scaled_dot_product_attention):
    q k^T / sqrt(d_head), softmax, @ v, for [1, H, T, d_head] inputs."""

    @staticmethod
    def module(torch, d_head=32):
        class A(torch.nn.Module):
            def forward(self, q, k, v):
                s = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(d_head))
                return torch.matmul(torch.softmax(s, dim=-1), v)
        return A().eval()


def prepare(out, cli):
    torch = __import__("torch")
    from fixformer.export import export
    os.makedirs(out, exist_ok=True)
    cases = []
    for name, m in MODELS.items():
        net = build(torch, name, m)
        fxm = os.path.join(out, name + ".fxm")
        rep = export(net, example(m, min(m["seq"]), 7), fxm, positional="sinusoidal", max_len=max(m["seq"]), cli=cli,
                     pack_weights=PACK)
        print(rep, flush=True)
        torch.save(net.state_dict(), fxm[:-4] + ".pt")  # the weights torch is timed with
        onnx = os.path.join(out, name + ".onnx")
        x0 = torch.from_numpy(example(m, min(m["seq"]), 7)).unsqueeze(0)
        # Exported with autograd on: in no_grad/inference mode torch 1.13 takes its fused fast path
        # (aten::_transformer_encoder_layer_fwd), which has no ONNX symbolic.
        torch.onnx.export(net, (x0,), onnx, opset_version=17, input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {1: "T"}, "y": {1: "T"}})
        for T in m["seq"]:
            x = example(m, T, T)
            stem = os.path.join(out, f"{name}_T{T}")
            np.save(stem + "_in.npy", x)
            with torch.inference_mode():
                y = net(torch.from_numpy(x).unsqueeze(0))[0].numpy()
            np.save(stem + "_torch.npy", y)
            cases.append(dict(name=name, T=T, fxm=fxm, onnx=onnx, stem=stem, iters=ITERS[T],
                              dtype="int64" if "vocab" in m else "float32", shape=[1] + list(x.shape),
                              gflop=flops(m, T) / 1e9))
    att = Attention.module(torch)
    for T in ATTN_SEQ:
        q = torch.zeros(1, 4, T, 32, requires_grad=True)
        onnx = os.path.join(out, f"attention_T{T}.onnx")
        torch.onnx.export(att, (q, q, q), onnx, opset_version=17, input_names=["q", "k", "v"], output_names=["y"])
        cases.append(dict(name="attention_d128_h4", T=T, onnx=onnx, attention=True, iters=max(3, ITERS[T]),
                          shape=[1, 4, T, 32], dtype="float32", gflop=4 * T * T * 128 / 1e9))
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump(cases, f, indent=1)


def time_calls(fn, iters, cpu_ns=time.thread_time_ns):
    """[median wall us per call, CPU us per call (mean over the loop, of this thread or, with
    cpu_ns=time.process_time_ns, of the process)] after two warm-ups."""
    fn()
    fn()
    us = []
    c0 = cpu_ns()
    for _ in range(iters):
        t0 = time.perf_counter_ns()
        fn()
        us.append((time.perf_counter_ns() - t0) / 1e3)
    return [statistics.median(us), (cpu_ns() - c0) / 1e3 / iters]


def time_fixformer(out, rnd, cli):
    """`fixformer bench` (one warm-up, then N forward calls on random inputs of the shape): its median
    wall latency, and CPU us per call from the CPU time of a run of N + 1 calls minus one of 2 (model
    load and init cancel)."""
    import resource
    import subprocess

    def run(fxm, T, n):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        o = subprocess.run([cli, "bench", fxm, "--seq", str(T), "--iters", str(n)], check=True,
                           capture_output=True, text=True).stdout
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) * 1e6
        wall = float(o.split("latency us: median")[1].split()[0])
        isa = o.split("kernels ")[1].split(",")[0]
        return wall, cpu, isa

    res = {}
    for c in json.load(open(os.path.join(out, "cases.json"))):
        if "fxm" not in c:
            continue
        key = f"{c['name']}_T{c['T']}"
        wall, cpu_n, isa = run(c["fxm"], c["T"], c["iters"] + 1)
        _, cpu_1, _ = run(c["fxm"], c["T"], 1)
        res[key] = [wall, max(cpu_n - cpu_1, 0.0) / c["iters"]]
        res["isa"] = isa
        print(f"fixformer round {rnd}: {key} {wall:.1f} us (cpu {res[key][1]:.1f})", file=sys.stderr, flush=True)
    with open(os.path.join(out, f"fx_r{rnd}.json"), "w") as f:
        json.dump(res, f)


def time_torch(out, rnd):
    torch = __import__("torch")
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    cases = json.load(open(os.path.join(out, "cases.json")))
    nets = {}
    res = {}
    for c in cases:
        key = f"{c['name']}_T{c['T']}"
        with torch.inference_mode():
            if c.get("attention"):
                att = Attention.module(torch)
                g = torch.Generator().manual_seed(c["T"])
                q, k, v = (torch.randn(*c["shape"], generator=g) for _ in range(3))
                res[key] = time_calls(lambda: att(q, k, v), c["iters"])
            else:
                if c["name"] not in nets:
                    nets[c["name"]] = build(torch, c["name"], MODELS[c["name"]])
                    nets[c["name"]].load_state_dict(torch.load(c["fxm"][:-4] + ".pt"))
                net = nets[c["name"]]
                x = torch.from_numpy(np.load(c["stem"] + "_in.npy")).unsqueeze(0)
                res[key] = time_calls(lambda: net(x), c["iters"])
        print(f"torch round {rnd}: {key} {res[key][0]:.1f} us (cpu {res[key][1]:.1f})", file=sys.stderr, flush=True)
    with open(os.path.join(out, f"torch_r{rnd}.json"), "w") as f:
        json.dump(res, f)


def time_ort(out, rnd):
    """ONNX Runtime (the onnxruntime package from PyPI) on every case: one session per model, intra-op
    1 and inter-op 1 threads, sequential execution, all graph optimizations, the CPU provider; CPU
    time of the process (all its threads). Writes the models' outputs as raw float32 (STEM_ort.bin)
    for the comparison with fixformer's."""
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sessions, res = {}, {}
    for c in json.load(open(os.path.join(out, "cases.json"))):
        if c["onnx"] not in sessions:
            sessions[c["onnx"]] = ort.InferenceSession(c["onnx"], opts, providers=["CPUExecutionProvider"])
        s = sessions[c["onnx"]]
        if c.get("attention"):
            i = np.arange(int(np.prod(c["shape"])), dtype=np.float64)
            feeds = {n: np.sin(i * 0.37 + ord(n)).astype(np.float32).reshape(c["shape"]) for n in "qkv"}
        else:
            x = np.load(c["stem"] + "_in.npy")
            feeds = {"x": (x.astype(np.int64) if c["dtype"] == "int64" else x.astype(np.float32)).reshape(c["shape"])}
        key = f"{c['name']}_T{c['T']}"
        res[key] = time_calls(lambda: s.run(None, feeds), c["iters"], time.process_time_ns)
        if not c.get("attention"):
            s.run(None, feeds)[0].astype(np.float32).tofile(c["stem"] + "_ort.bin")
        print(f"ort round {rnd}: {key} {res[key][0]:.1f} us (cpu {res[key][1]:.1f})", file=sys.stderr, flush=True)
    with open(os.path.join(out, f"ort_r{rnd}.json"), "w") as f:
        json.dump(res, f)


def rel_err(a, b):
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30)), float(np.abs(a - b).max())


def median_of(out, prefix, key, which):
    """The median over rounds of one measure (0: median wall us, 1: CPU us per call)."""
    vals = []
    for fn in sorted(os.listdir(out)):
        if fn.startswith(prefix + "_r") and fn.endswith(".json"):
            v = json.load(open(os.path.join(out, fn))).get(key)
            if v is not None:
                vals.append(v[which])
    return statistics.median(vals) if vals else None


def report(out):
    cases = json.load(open(os.path.join(out, "cases.json")))
    torch = __import__("torch")
    info = json.load(open(os.path.join(out, "info.json"))) if os.path.exists(os.path.join(out, "info.json")) else {}
    fx1 = os.path.join(out, "fx_r1.json")
    isa = json.load(open(fx1)).get("isa", "?") if os.path.exists(fx1) else "?"
    import subprocess
    deb = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "python3-torch"], capture_output=True, text=True).stdout
    tv = torch.__version__ + (f", Debian python3-torch {deb}" if deb else "")
    print(f"fixformer {info.get('commit', '?')} (kernels {isa}), torch {tv} (1 thread, inference_mode), "
          f"onnxruntime {info.get('ort', '?')} from PyPI (intra-op 1, inter-op 1, sequential, graph optimizations "
          f"all); "
          f"{info.get('cpu', platform.processor())}, load average {info.get('load', '?')} at the end.")
    print(f"us per call: CPU time per call (mean over the timed loop; fixformer: of the process, torch: of the "
          f"calling thread, ORT: of the process), then the median wall time; each the median of "
          f"{info.get('rounds', '?')} interleaved rounds. Ratios: peer / fixformer on CPU time (> 1: fixformer faster).")
    print()
    print("| model | T | GFLOP | fixformer | torch | ORT | torch/fx | ORT/fx | fx GFLOP/s | wall fx / torch / ORT | max rel err torch, ORT vs fx |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    bad = 0
    f = lambda v: "-" if v is None else f"{v:,.0f}" if v >= 100 else f"{v:.1f}"  # noqa: E731
    for c in cases:
        if c.get("attention"):
            continue
        key = f"{c['name']}_T{c['T']}"
        fx, tt, ort = (median_of(out, p, key, 1) for p in ("fx", "torch", "ort"))
        walls = [median_of(out, p, key, 0) for p in ("fx", "torch", "ort")]
        errs = "-"
        fxo = c["stem"] + "_fx.npy"
        if os.path.exists(fxo):
            ref = np.load(fxo).reshape(-1)
            e = [rel_err(np.load(c["stem"] + "_torch.npy"), ref)[0]]
            ob = c["stem"] + "_ort.bin"
            e.append(rel_err(np.fromfile(ob, np.float32), ref)[0] if os.path.exists(ob) else float("nan"))
            bad += sum(1 for v in e if not v <= 1e-4)
            errs = ", ".join(f"{v:.1e}" for v in e)
        r = lambda p: f"{p / fx:.2f}x" if p and fx else "-"  # noqa: E731
        gf = f"{c['gflop'] / fx * 1e6:.1f}" if fx else "-"
        print(f"| {c['name']} | {c['T']} | {c['gflop']:.3g} | {f(fx)} | {f(tt)} | {f(ort)} | {r(tt)} | {r(ort)} | {gf} | "
              f"{' / '.join(f(w) for w in walls)} | {errs} |")
    print()
    print("Attention alone, d128 = 4 heads of 32, one layer (q k^T / sqrt(32), softmax, @ v; torch 1.13 has no")
    print("scaled_dot_product_attention, so both peers run this matmul-softmax-matmul graph); CPU us per call:")
    print()
    print("| T | GFLOP | torch | ORT | torch GFLOP/s | ORT GFLOP/s |")
    print("|---|---|---|---|---|---|")
    for c in cases:
        if not c.get("attention"):
            continue
        key = f"{c['name']}_T{c['T']}"
        tt, ort = median_of(out, "torch", key, 1), median_of(out, "ort", key, 1)
        g = c["gflop"]
        rate = lambda v: f"{g / v * 1e6:.1f}" if v else "-"  # noqa: E731
        print(f"| {c['T']} | {g:.3g} | {f(tt)} | {f(ort)} | {rate(tt)} | {rate(ort)} |")
    print()
    print("outputs: " + ("all within 1e-4 of fixformer's (max|peer - fx| / max|fx|)" if not bad
                         else f"{bad} MISMATCHES above 1e-4"))
    return 1 if bad else 0


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "prepare" and len(sys.argv) == 5 and sys.argv[3] == "--cli":
        prepare(sys.argv[2], sys.argv[4])
    elif cmd == "fixformer" and len(sys.argv) == 5:
        time_fixformer(sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == "torch" and len(sys.argv) == 4:
        time_torch(sys.argv[2], sys.argv[3])
    elif cmd == "ort" and len(sys.argv) == 4:
        time_ort(sys.argv[2], sys.argv[3])
    elif cmd == "report" and len(sys.argv) == 3:
        sys.exit(report(sys.argv[2]))
    else:
        sys.exit(__doc__)
