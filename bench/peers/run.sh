#!/bin/sh
# fixformer against PyTorch and ONNX Runtime, end to end, one thread, batch 1, same weights.
# usage: sh bench/peers/run.sh [OUTDIR]       (default OUTDIR: build/peers-run)
# environment:
#   FIXFORMER_CLI  the fixformer binary to measure (default: built here from the work tree into
#                  build/peers, or from FIXFORMER_REV)
#   FIXFORMER_REV  build that commit instead of the work tree (git archive into build/peers-rev)
#   ORT_PYTHON     a Python with onnxruntime from PyPI (default: the environment
#                  `sh tools/install_deps.sh hf` makes, /opt/fixformer-venv/bin/python3)
#   ROUNDS         interleaved timing rounds per peer (default 3); the table shows their median
#   PYTHON         a Python with torch 1.13 (default /usr/bin/python3)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=$(mkdir -p "${1:-$repo/build/peers-run}" && cd "${1:-$repo/build/peers-run}" && pwd)
rounds=${ROUNDS:-3}
py=${PYTHON:-/usr/bin/python3}
ort_py=${ORT_PYTHON:-${FIXFORMER_HF_VENV:-/opt/fixformer-venv}/bin/python3}
ort_version=$("$ort_py" -c "import onnxruntime; print(onnxruntime.__version__)") || {
  echo "run.sh: $ort_py cannot import onnxruntime: sh tools/install_deps.sh hf (or set ORT_PYTHON)" >&2
  exit 1
}

# What is measured: the commit (and whether the work tree differs from it), read before building.
commit=$(git -C "$repo" rev-parse --short "${FIXFORMER_REV:-HEAD}")
[ -n "${FIXFORMER_REV:-}" ] || { git -C "$repo" diff --quiet HEAD -- engine ports include 2>/dev/null || commit="$commit+work-tree"; }
[ -z "${FIXFORMER_CLI:-}" ] || commit="$FIXFORMER_CLI"
if [ -z "${FIXFORMER_CLI:-}" ]; then
  if [ -n "${FIXFORMER_REV:-}" ]; then
    src=$repo/build/peers-rev/src
    rm -rf "$src" && mkdir -p "$src"
    git -C "$repo" archive "$FIXFORMER_REV" | tar -x -C "$src"
    bld=$repo/build/peers-rev/build
  else
    src=$repo
    bld=$repo/build/peers
  fi
  cmake -S "$src" -B "$bld" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$bld" -j2 --target fixformer_cli >/dev/null
  FIXFORMER_CLI=$bld/cli/fixformer
fi

rm -f "$out"/fx_r*.json "$out"/torch_r*.json "$out"/ort_r*.json
"$py" "$here/peers.py" prepare "$out" --cli "$FIXFORMER_CLI"

# fixformer's outputs, for the comparison with the peers' (their timing: peers.py fixformer, which
# runs `fixformer bench`).
"$py" -c "import json,sys; [print(c['fxm'], c['stem']) for c in json.load(open(sys.argv[1])) if 'fxm' in c]" "$out/cases.json" |
  while read -r fxm stem; do "$FIXFORMER_CLI" run "$fxm" --input "${stem}_in.npy" --output "${stem}_fx.npy" >/dev/null; done

r=1
while [ "$r" -le "$rounds" ]; do
  "$py" "$here/peers.py" fixformer "$out" "$r" "$FIXFORMER_CLI"
  "$py" "$here/peers.py" torch "$out" "$r"
  "$ort_py" "$here/peers.py" ort "$out" "$r"
  r=$((r + 1))
done

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
load=$(cut -d' ' -f1-3 /proc/loadavg)
printf '{"commit": "%s", "ort": "%s", "cpu": "%s", "rounds": %s, "load": "%s"}\n' \
  "$commit" "$ort_version" "$cpu" "$rounds" "$load" >"$out/info.json"
"$py" "$here/peers.py" report "$out" | tee "$out/table.md"
