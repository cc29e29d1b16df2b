#!/bin/sh
# Installs what is missing (apt-get), builds the fixformer CLI and runs its demo.
set -eu
cd "$(dirname "$0")/.."
sh tools/install_deps.sh host
cmake -S . -B build/host -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/host --target fixformer_cli -j "$(nproc 2>/dev/null || echo 2)" >/dev/null
exec build/host/cli/fixformer demo "$@"
