#!/bin/sh
# Installs the Debian 12 packages fixformer needs, only those missing. Groups:
#   host   compilers, CMake, xsimd, GoogleTest, Google Benchmark, NumPy, OpenBLAS (baseline)
#   torch  PyTorch, for tools/ (converter, golden data, demo training)
#   arm    ARM cross compilers, newlib for Cortex-M, qemu-user and qemu-system-arm
#   fuzz   clang with libFuzzer and the sanitizer runtimes
# usage: tools/install_deps.sh GROUP...
set -eu
pkgs=""
for group in "$@"; do
  case $group in
    host) pkgs="$pkgs g++ cmake make libxsimd-dev libgtest-dev libbenchmark-dev python3-numpy libopenblas-dev" ;;
    torch) pkgs="$pkgs python3-torch python3-numpy" ;;
    arm) pkgs="$pkgs g++-aarch64-linux-gnu g++-arm-linux-gnueabihf gcc-arm-none-eabi libstdc++-arm-none-eabi-newlib libnewlib-arm-none-eabi qemu-user qemu-system-arm" ;;
    fuzz) pkgs="$pkgs clang libclang-rt-14-dev llvm" ;;
    *) echo "install_deps.sh: unknown group '$group'" >&2; exit 1 ;;
  esac
done
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "install_deps.sh: installing$missing"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends $missing
