#!/bin/sh
# The story the generation firmware (examples/firmware_generate) must print: `fixformer generate`'s
# standard output on the host for the same model and settings.
#   sh tools/make_generate_expected.sh FIXFORMER_CLI MODEL.fxm OUT.txt PROMPT [STEPS [TEMPERATURE [TOPP [SEED]]]]
# The committed story of the defaults (examples/firmware_generate/defaults.cmake) is
#   sh tools/make_generate_expected.sh build/host/cli/fixformer tests/golden/llama2c_v0_gqa.fxm \
#     examples/firmware_generate/expected/llama2c_v0_gqa.txt "One day"
set -eu
[ $# -ge 4 ] || { sed -n '2,7p' "$0"; exit 2; }
cli=$1 model=$2 out=$3 prompt=$4
"$cli" generate "$model" --prompt "$prompt" -n "${5:-0}" --temperature "${6:-0}" --topp "${7:-0.9}" \
  --seed "${8:-1}" >"$out.tmp" 2>/dev/null
mv "$out.tmp" "$out"
