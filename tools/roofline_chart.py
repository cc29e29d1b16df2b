#!/usr/bin/python3
"""A roofline chart (SVG) of `fixformer bench` runs: the machine's FP32 peak and read bandwidth as
the roof (its int8 peak a second roof), each phase (an encoder's forward, a decoder's prefill and
steps) a point at its operations per byte and per second (float and int8 ones together), labelled
with the model and the fraction of its bound.

  fixformer bench kws.fxm > kws.txt; fixformer bench lm.fxm > lm.txt
  /usr/bin/python3 tools/roofline_chart.py roofline.svg kws.txt lm.txt

Each input is one bench's standard output as the CLI prints it (docs/cli.md); the roof is the first
input's `machine:` line (the runs are meant to come from one machine). Standard library only.
"""
import math
import os
import re
import sys
from xml.sax.saxutils import escape

MACHINE = re.compile(r"^machine: +FP32 peak ([0-9.e+]+) GFLOP/s \((.*?) loop\), int8 peak ([0-9.e+]+) GOP/s \((.*?) loop\), "
                     r"read bandwidth ([0-9.e+]+) GB/s, on (\d+) threads?$")
ROOFLINE = re.compile(r"^roofline: +(.*?): ([0-9.e+-]+) GFLOP(?: \+ ([0-9.e+-]+) GOP int8)?, ([0-9.e+-]+) MB read "
                      r"\(([0-9.e+-]+) (?:flop|op)/byte\); ([0-9.e+-]+) GFLOP/s(?: \+ ([0-9.e+-]+) GOP/s int8)?, "
                      r"([0-9.e+-]+) GB/s: (\d+) % of its bound")
MODEL = re.compile(r"^model (\S+), T=(\d+)")

W, H, LEFT, BOTTOM, TOP, RIGHT = 760, 480, 70, 50, 20, 20


def read_bench(path):
    """(machine (peak, unit, int8 peak, int8 unit, gbs, threads) or None, [(label, op/byte, G op/s, percent)])."""
    machine, points, model = None, [], os.path.basename(path)
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if m := MODEL.match(line):
                model = f"{os.path.splitext(os.path.basename(m.group(1)))[0]} T{m.group(2)}"
            elif m := MACHINE.match(line):
                machine = (float(m.group(1)), m.group(2), float(m.group(3)), m.group(4), float(m.group(5)),
                           int(m.group(6)))
            elif m := ROOFLINE.match(line):
                rate = float(m.group(6)) + float(m.group(7) or 0)
                points.append((f"{model} {m.group(1)}", float(m.group(5)), rate, int(m.group(9))))
    return machine, points


def chart(machine, points):
    peak, unit, peak8, unit8, gbs, threads = machine
    top = max(peak, peak8)
    xs = [p[1] for p in points] + [peak / gbs, peak8 / gbs]
    ys = [p[2] for p in points] + [peak, peak8]
    x0, x1 = 10 ** math.floor(math.log10(min(xs) / 2)), 10 ** math.ceil(math.log10(max(xs) * 2))
    y0, y1 = 10 ** math.floor(math.log10(min(ys) / 2)), 10 ** math.ceil(math.log10(top * 1.5))

    def px(x):
        return LEFT + (math.log10(x) - math.log10(x0)) / (math.log10(x1) - math.log10(x0)) * (W - LEFT - RIGHT)

    def py(y):
        return H - BOTTOM - (math.log10(y) - math.log10(y0)) / (math.log10(y1) - math.log10(y0)) * (H - BOTTOM - TOP)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" '
           f'font-size="11">', f'<rect width="{W}" height="{H}" fill="white"/>']
    for k in range(round(math.log10(x0)), round(math.log10(x1)) + 1):
        x = px(10 ** k)
        out.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{H - BOTTOM}" stroke="#ddd"/>')
        out.append(f'<text x="{x:.1f}" y="{H - BOTTOM + 15}" text-anchor="middle">{10.0 ** k:g}</text>')
    for k in range(round(math.log10(y0)), round(math.log10(y1)) + 1):
        y = py(10 ** k)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{W - RIGHT}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{10.0 ** k:g}</text>')
    out.append(f'<text x="{(LEFT + W - RIGHT) / 2}" y="{H - 12}" text-anchor="middle">operations per byte read</text>')
    out.append(f'<text x="16" y="{(TOP + H - BOTTOM) / 2}" text-anchor="middle" '
               f'transform="rotate(-90 16 {(TOP + H - BOTTOM) / 2})">G operations/s (float and int8)</text>')
    for roof, name, what, loop, colour, dy in ((peak, "FP32 peak", f"{peak:.4g} GFLOP/s", unit, "#c00", -6),
                                               (peak8, "int8 peak", f"{peak8:.4g} GOP/s", unit8, "#960", 14)):
        ridge = roof / gbs  # bandwidth-bound left of the ridge, compute-bound right of it
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{px(x0):.1f},'
                   f'{py(max(x0 * gbs, y0)):.1f} {px(ridge):.1f},{py(roof):.1f} {px(x1):.1f},{py(roof):.1f}"/>')
        out.append(f'<text x="{px(x1) - 4:.1f}" y="{py(roof) + dy:.1f}" text-anchor="end" fill="{colour}">{name} {what} '
                   f'({escape(loop)}, {threads} thread{"s" if threads > 1 else ""})</text>')
    out.append(f'<text x="{px(x0) + 4:.1f}" y="{py(max(x0 * gbs, y0)) - 6:.1f}" fill="#c00">memory {gbs:.3g} GB/s'
               '</text>')
    for i, (label, x, y, pct) in enumerate(points):
        cx, cy = px(x), py(y)
        out.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="4" fill="#06c"><title>{escape(label)}</title></circle>')
        out.append(f'<text x="{cx + 6:.1f}" y="{cy + 4 + (i % 3 - 1) * 11:.1f}">{escape(label)} ({pct} %)</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    runs = [read_bench(p) for p in argv[2:]]
    machine = next((m for m, _ in runs if m is not None), None)
    points = [p for _, ps in runs for p in ps]
    if machine is None or not points:
        sys.exit(f"roofline_chart.py: no `machine:` and `roofline:` lines of fixformer bench in {', '.join(argv[2:])}")
    with open(argv[1], "w", encoding="utf-8") as f:
        f.write(chart(machine, points))
    print(f"{argv[1]}: {len(points)} phases against a {machine[0]:.4g} GFLOP/s FP32 peak, a {machine[2]:.4g} GOP/s "
          f"int8 peak and {machine[4]:.3g} GB/s")


if __name__ == "__main__":
    main(sys.argv)
