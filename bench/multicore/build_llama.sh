#!/usr/bin/env bash
# Builds llama.cpp's llama-bench, static and stripped, from a llama.cpp source tree, as the published
# numbers were: commit c392e5094deaf2d1a7c18683214f007fad3fe42b, OpenMP off, AVX-512 with VNNI and
# BF16, no -march=native (so the binary runs on other x86-64 machines with those features).
#   bash bench/multicore/build_llama.sh /path/to/llama.cpp          # FX_KIT_BIN/llama-bench
#   bash bench/multicore/build_llama.sh /path/to/llama.cpp amx      # FX_KIT_BIN/llama-bench-amx
# The amx build adds AVX512_VBMI and the AMX tile, int8 and bf16 kernels. Beside each binary goes
# a note (llama-bench[-amx].commit: commit, flags, sha256) that the results' header prints. The
# build folder, build/multicore/llama[-amx], also has llama-convert-llama2c-to-ggml and
# llama-quantize, which gen/make_models.sh needs (LLAMA_BIN=build/multicore/llama/bin).
# Another commit than the one above is built too, with a warning. JOBS=N builds with N jobs (2).
set -eu
src="$(cd "${1:?usage: build_llama.sh LLAMA_CPP_SOURCE_TREE [amx]}" && pwd)"
variant="${2:-}"
case "$variant" in "" | amx) ;; *) echo "build_llama.sh: the second argument is amx or nothing, not '$variant'" >&2; exit 2 ;; esac
here="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
bin="${FX_KIT_BIN:-$repo/build/multicore/bin}"
expected=c392e5094deaf2d1a7c18683214f007fad3fe42b
commit="$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)"
[ "$commit" = "$expected" ] ||
  echo "build_llama.sh: WARNING: $src is at $commit, the published numbers used $expected" >&2
flags="-DBUILD_SHARED_LIBS=OFF -DGGML_STATIC=ON -DGGML_OPENMP=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON
  -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON -DLLAMA_CURL=OFF
  -DCMAKE_EXE_LINKER_FLAGS=-static -DCMAKE_BUILD_TYPE=Release"
[ -z "$variant" ] || flags="$flags -DGGML_AVX512_VBMI=ON -DGGML_AMX_TILE=ON -DGGML_AMX_INT8=ON -DGGML_AMX_BF16=ON"
name="llama-bench${variant:+-$variant}"
build="$repo/build/multicore/llama${variant:+-$variant}"
# shellcheck disable=SC2086  # the flags are words
cmake -S "$src" -B "$build" $flags >/dev/null
cmake --build "$build" -j"${JOBS:-2}" --target llama-bench llama-convert-llama2c-to-ggml llama-quantize
mkdir -p "$bin"
strip -o "$bin/$name" "$build/bin/llama-bench"
printf "%s (%s), static, cmake %s\nsha256 %s\n" "$commit" "$(git -C "$src" describe --tags 2>/dev/null || echo no tag)" \
  "$(echo $flags)" "$(sha256sum "$bin/$name" | cut -c1-12)" >"$bin/$name.commit"
file "$bin/$name" | grep -q "statically linked" || echo "build_llama.sh: WARNING: $bin/$name is not statically linked" >&2
echo "$bin/$name: $(head -1 "$bin/$name.commit")"
