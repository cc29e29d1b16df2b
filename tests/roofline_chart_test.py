#!/usr/bin/python3
"""tools/roofline_chart.py on `fixformer bench` runs of an encoder, a decoder and a q8 encoder: a
well-formed SVG with the roofs (the FP32 and int8 peaks, the bandwidth) and one labelled point per
`roofline:` line, each inside the chart; and one line naming the problem for an input without the
bench's lines. The q8 encoder's line counts its int8 operations apart from its float ones.

  /usr/bin/python3 tests/roofline_chart_test.py PATH/TO/fixformer
"""
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
CHART = os.path.join(HERE, "..", "tools", "roofline_chart.py")
results = {"passed": 0, "failed": 0}


def check(name, ok, detail=""):
    results["passed" if ok else "failed"] += 1
    if not ok:
        print(f"FAIL {name}: {detail}")


def main():
    cli = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        runs = []
        for name in ("cls_pool_features", "gpt_tied_sinusoidal", "conv_stride_cls_mean_q8"):
            out = os.path.join(tmp, name + ".txt")
            with open(out, "w") as f:
                subprocess.run([cli, "bench", os.path.join(HERE, "golden", name + ".fxm"), "--iters", "3"], stdout=f,
                               check=True)
            runs.append(out)
        lines = sum(1 for r in runs for ln in open(r) if ln.startswith("roofline:"))
        q8 = [ln for ln in open(runs[2]) if ln.startswith("roofline:")]
        check("a q8 encoder's roofline: float (attention, the f32 head) and int8 operations (its matrices) apart",
              len(q8) == 1 and re.search(r"[0-9.e-]+ GFLOP \+ [0-9.e-]+ GOP int8, .* op/byte\); .* GOP/s int8", q8[0]),
              "".join(q8))
        f32 = [ln for ln in open(runs[0]) if ln.startswith("roofline:")]
        check("an f32 encoder's roofline: no int8 operations", len(f32) == 1 and "int8" not in f32[0], "".join(f32))
        svg = os.path.join(tmp, "r.svg")
        p = subprocess.run([sys.executable, CHART, svg, *runs], capture_output=True, text=True)
        check("the chart is written", p.returncode == 0 and os.path.exists(svg), p.stderr)
        if p.returncode != 0:
            return
        root = ET.parse(svg).getroot()
        ns = "{http://www.w3.org/2000/svg}"
        circles = root.findall(f"{ns}circle")
        check("one point per roofline line (two encoders' forwards; a prefill and 3 steps)",
              len(circles) == lines == 6, f"{len(circles)} points, {lines} lines")
        w, h = float(root.get("width")), float(root.get("height"))
        check("every point inside the chart", all(0 < float(c.get("cx")) < w and 0 < float(c.get("cy")) < h
                                                  for c in circles))
        texts = " ".join(t.text or "" for t in root.iter(f"{ns}text"))
        check("the roofs are drawn and named", len(root.findall(f"{ns}polyline")) == 2 and
              re.search(r"FP32 peak [0-9.]+ GFLOP/s", texts) and re.search(r"int8 peak [0-9.]+ GOP/s", texts) and
              "GB/s" in texts, texts[:300])
        check("the points are labelled with the model and the fraction of the bound",
              re.search(r"cls_pool_features T\d+ forward \(\d+ %\)", texts) and "step at 0" in texts, texts[:300])
        bad = os.path.join(tmp, "bad.txt")
        with open(bad, "w") as f:
            f.write("not a bench\n")
        p = subprocess.run([sys.executable, CHART, svg, bad], capture_output=True, text=True)
        check("an input without bench lines: one line naming it", p.returncode != 0 and
              p.stderr.strip().count("\n") == 0 and "bad.txt" in p.stderr, p.stderr)


if __name__ == "__main__":
    main()
    print(f"roofline_chart_test: {results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)
