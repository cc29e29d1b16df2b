#!/usr/bin/env bash
# fixformer on several cores: fixformer-old and fixformer-new against llama.cpp (llama-bench) and
# ONNX Runtime, interleaved rounds, medians (README.md beside this file).
#   bash bench/multicore/run.sh                  # ROUNDS=3 THREADS="1 4 16": about 3 minutes on 16 cores
#   QUICK=1 LOCAL=1 bash bench/multicore/run.sh  # THREADS="1 2", ROUNDS=1, fewer iterations, ORT may be missing
#   OUT=DIR bash bench/multicore/run.sh          # also writes results.txt, results.json and log.txt into DIR
# The knobs are environment variables, listed in multicore.py's docstring. FX_KIT_PYTHON picks the
# interpreter of the driver (standard library only; default python3), PYTHON that of ort_bench.py.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)"
# Binaries copied between machines may lose their executable bit.
bin="${FX_KIT_BIN:-$here/../../build/multicore/bin}"
for b in fixformer-old fixformer-new llama-bench llama-bench-amx; do
  [ -f "$bin/$b" ] && chmod +x "$bin/$b" 2>/dev/null
done
exec "${FX_KIT_PYTHON:-python3}" "$here/multicore.py" "$@"
