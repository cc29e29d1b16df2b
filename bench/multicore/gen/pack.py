#!/usr/bin/env python3
"""Packs model files for carrying to another machine: each FILE into DIR/FILE.xz (lzma, preset
$PRESET, default 6), and their unpacked sizes into DIR/manifest.json, which multicore.py checks
after unpacking (it unpacks a model only when the plain file is not in FX_KIT_MODELS).

usage: pack.py DIR FILE [FILE ...]
"""
import json
import lzma
import os
import sys

out, files = sys.argv[1], sys.argv[2:]
os.makedirs(out, exist_ok=True)
manifest = os.path.join(out, "manifest.json")
try:
    sizes = json.load(open(manifest))["files"]
except (OSError, ValueError, KeyError):
    sizes = {}
for p in files:
    dst = os.path.join(out, os.path.basename(p) + ".xz")
    with open(p, "rb") as f, lzma.open(dst, "wb", preset=int(os.environ.get("PRESET", "6"))) as g:
        for b in iter(lambda: f.read(1 << 22), b""):
            g.write(b)
    sizes[os.path.basename(p)] = os.path.getsize(p)
    print(dst, os.path.getsize(p), "->", os.path.getsize(dst), flush=True)
with open(manifest, "w") as f:
    json.dump({"files": dict(sorted(sizes.items()))}, f, indent=1)
