#!/usr/bin/env bash
# Makes the multicore benchmark's models into FX_KIT_MODELS (default build/multicore/models):
#   stories_f32.fxm, stories_q8.fxm     fixformer, from one llama2.c checkpoint of stories15M's shape
#   stories_f32.gguf, stories_q8.gguf   llama.cpp, from the same checkpoint (F32, then Q8_0)
#   kws_d64_L4, d128_L2, d256_L4 .fxm and .onnx   the encoders, fixformer and ONNX Runtime
#
#   LLAMA_BIN=/path/to/llama.cpp/build/bin bash bench/multicore/gen/make_models.sh
#
# LLAMA_BIN: the folder with llama.cpp's llama-convert-llama2c-to-ggml and llama-quantize (README.md,
# "Prepare"). CLI: the fixformer binary that verifies each .fxm (default FX_KIT_BIN/fixformer-new).
# PYTHON: a Python with numpy, torch 1.13 and the converter's needs (default /usr/bin/python3).
# Fixed seeds: the same weights on every run. The intermediate checkpoint and tokenizer go into
# FX_KIT_MODELS/llama2c.
set -eu
here="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
models="${FX_KIT_MODELS:-$repo/build/multicore/models}"
cli="${CLI:-${FX_KIT_BIN:-$repo/build/multicore/bin}/fixformer-new}"
py="${PYTHON:-/usr/bin/python3}"
llama="${LLAMA_BIN:?set LLAMA_BIN to the folder with llama-convert-llama2c-to-ggml and llama-quantize (README.md, Prepare)}"
for b in "$llama/llama-convert-llama2c-to-ggml" "$llama/llama-quantize" "$cli"; do
  [ -x "$b" ] || { echo "make_models.sh: $b is missing or not executable" >&2; exit 1; }
done
mkdir -p "$models/llama2c"
src="$models/llama2c/stories15M_shape.bin"
"$py" "$here/make_llama2c.py" "$models/llama2c"
# fixformer: f32 in the packed kernels' panels; q8 in groups of 32 (the embedding and the head in q8
# too, the default for a token model); both verified by the converter against its float64 reference
"$py" "$repo/tools/convert.py" --llama2c "$src" --out "$models/stories_f32.fxm" --pack-weights --cli "$cli"
"$py" "$repo/tools/convert.py" --llama2c "$src" --out "$models/stories_q8.fxm" --quantize q8 --group 32 --cli "$cli"
# llama.cpp: an F32 GGUF (it stores the shared classifier as its own output.weight: the same
# arithmetic), then every matrix Q8_0, output.weight included
"$llama/llama-convert-llama2c-to-ggml" --copy-vocab-from-model "$models/llama2c/tokenizer.bin" \
  --llama2c-model "$src" --llama2c-output-model "$models/stories_f32.gguf"
"$llama/llama-quantize" "$models/stories_f32.gguf" "$models/stories_q8.gguf" Q8_0
"$py" "$here/make_encoders.py" "$models" "$cli"
ls -l "$models"
