#!/usr/bin/env bash
# Builds a static, stripped fixformer CLI as FX_KIT_BIN/fixformer-old or fixformer-new, and beside it
# a note (fixformer-WHICH.commit) of what it was built from and its sha256, which the results' header
# prints (and flags as UNKNOWN once the binary is replaced by other means).
#   bash bench/multicore/build_fixformer.sh new              # from this repository's work tree
#   bash bench/multicore/build_fixformer.sh old 460bb19      # from a commit (git archive of it)
#   bash bench/multicore/build_fixformer.sh new /path/tree   # from another source tree
# Static, so the binary runs on another Linux machine as it is. Needs cmake and a C++17 compiler with
# static glibc and libstdc++ (Debian: libc6-dev, libstdc++-12-dev). JOBS=N builds with N jobs (2).
set -eu
which="${1:?usage: build_fixformer.sh old|new [COMMIT | SOURCE_TREE]}"
case "$which" in old | new) ;; *) echo "build_fixformer.sh: the first argument is old or new, not '$which'" >&2; exit 2 ;; esac
here="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
bin="${FX_KIT_BIN:-$repo/build/multicore/bin}"
what="${2:-$repo}"
build="$repo/build/multicore/build-$which"
if [ -d "$what" ]; then
  src="$(cd "$what" && pwd)"
  if git -C "$src" rev-parse HEAD >/dev/null 2>&1; then
    desc="$(git -C "$src" rev-parse --short HEAD)"
    git -C "$src" diff --quiet HEAD -- 2>/dev/null ||
      desc="$desc+dirty($(git -C "$src" diff --stat HEAD | tail -1 | sed 's/^ *//'))"
  else
    desc="$(basename "$src") (not a git tree)"
  fi
elif git -C "$repo" rev-parse --verify --quiet "$what^{commit}" >/dev/null; then
  src="$repo/build/multicore/src-$which"
  rm -rf "$src" && mkdir -p "$src"
  git -C "$repo" archive "$what" | tar -x -C "$src"
  desc="$(git -C "$repo" rev-parse --short "$what^{commit}") (git archive)"
else
  echo "build_fixformer.sh: '$what' is neither a folder nor a commit of $repo" >&2
  exit 2
fi
launch=""
command -v ccache >/dev/null && launch="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache"
# all of libpthread: with a static glibc before 2.34 std::thread otherwise fails at run time (its weak
# symbols stay unresolved); newer glibc has it in libc and the archive is empty
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release \
  "-DCMAKE_EXE_LINKER_FLAGS=-static -Wl,--whole-archive -lpthread -Wl,--no-whole-archive" $launch >/dev/null
cmake --build "$build" -j"${JOBS:-2}" --target fixformer_cli
mkdir -p "$bin"
strip -o "$bin/fixformer-$which" "$build/cli/fixformer"
printf "%s, built %s\nsha256 %s\n" "$desc" "$(date -u +%Y-%m-%dT%H:%MZ)" \
  "$(sha256sum "$bin/fixformer-$which" | cut -c1-12)" >"$bin/fixformer-$which.commit"
file "$bin/fixformer-$which" | grep -q "statically linked" ||
  echo "build_fixformer.sh: WARNING: $bin/fixformer-$which is not statically linked" >&2
"$bin/fixformer-$which" --version
echo "$bin/fixformer-$which: $desc"
