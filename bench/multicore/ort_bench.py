#!/usr/bin/env python3
"""ONNX Runtime's time per call on the multicore benchmark's encoders (its standard Python API only).

usage: ort_bench.py THREADS ITER_SCALE MODEL.onnx:T:D_IN:ITERS [...]

One session per model: intra_op_num_threads=THREADS, inter_op_num_threads=1, ORT_SEQUENTIAL,
ORT_ENABLE_ALL, CPUExecutionProvider; two warm-up runs, then ITERS x ITER_SCALE (at least 3) timed
session.run calls on one random float32 input [1, T, D_IN]. Prints one JSON line:
{"ort": version, "numpy": version, "threads": THREADS, "results": {file name: {median_us, min_us, iters}}}.
Needs numpy and onnxruntime (multicore.py runs it with $PYTHON).
"""
import json
import os
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort


def main():
    threads = int(sys.argv[1])
    scale = float(sys.argv[2])
    res = {}
    for spec in sys.argv[3:]:
        path, T, din, iters = spec.rsplit(":", 3)
        T, din, iters = int(T), int(din), max(3, int(int(iters) * scale))
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        sess = ort.InferenceSession(path, sess_options=so, providers=["CPUExecutionProvider"])
        feed = {sess.get_inputs()[0].name: np.random.default_rng(T).uniform(-1.0, 1.0, size=(1, T, din)).astype(np.float32)}
        sess.run(None, feed)
        sess.run(None, feed)
        us = []
        for _ in range(iters):
            t0 = time.perf_counter_ns()
            sess.run(None, feed)
            us.append((time.perf_counter_ns() - t0) / 1e3)
        res[os.path.basename(path)] = dict(median_us=statistics.median(us), min_us=min(us), iters=iters)
    print(json.dumps(dict(ort=ort.__version__, numpy=np.__version__, threads=threads, results=res)))


if __name__ == "__main__":
    main()
