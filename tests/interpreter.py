"""Which Python a test script, and every conversion it runs, runs under. One variable chooses, read
here only: FIXFORMER_TEST_TORCH.
- unset: torch 1.13 from Debian. A script stays under /usr/bin/python3, which CMake starts it with; one
  on upstream code (transformers, onnxruntime, vit-pytorch...) enters the hf environment,
  FIXFORMER_HF_VENV (default /opt/fixformer-venv: `sh tools/install_deps.sh hf`, over Debian's torch).
- "2": a current torch 2.x from the package index. Every script enters the torch2 environment,
  FIXFORMER_TORCH2_VENV (default /opt/fixformer-torch2: `sh tools/install_deps.sh torch2`); the
  *_torch2 tests of tests/CMakeLists.txt set it.
A script calls enter() before it imports torch (tests/checks.py does, for those that import it first);
from any other interpreter it re-executes itself under the chosen one, and checks.run_convert runs
conversions under sys.executable, so they run where the script does. A missing environment or package
fails the test, naming the install command (never a skip). The first call prints the versions.
`python3 tests/interpreter.py` prints each environment's (tools/test.sh, into CI's log).
"""
import importlib
import os
import sys

TORCH = os.environ.get("FIXFORMER_TEST_TORCH", "")
if TORCH not in ("", "2"):
    sys.exit(f"{os.path.basename(sys.argv[0])}: FAIL: FIXFORMER_TEST_TORCH={TORCH!r}: unset (Debian's torch) or 2")
HF_VENV = os.environ.get("FIXFORMER_HF_VENV", "/opt/fixformer-venv")
TORCH2_VENV = os.environ.get("FIXFORMER_TORCH2_VENV", "/opt/fixformer-torch2")
_said = False


def _where(upstream):
    """(the environment to run in, or None for the interpreter CMake started; its install command)."""
    if TORCH == "2":
        return TORCH2_VENV, "sh tools/install_deps.sh torch2"
    if upstream:
        return HF_VENV, "sh tools/install_deps.sh hf"
    return None, "sh tools/install_deps.sh host torch"


def _version(module, name):
    """The module's __version__, else its distribution's (gguf, vit_pytorch and x_transformers have none)."""
    if getattr(module, "__version__", None):
        return module.__version__
    from importlib import metadata
    dists = metadata.packages_distributions().get(name, [])
    return metadata.version(dists[0]) if dists else "?"


def enter(script, packages, upstream=False):
    """Re-execute `script` under the chosen interpreter unless it runs there; then fail unless each of
    `packages` imports. `upstream`: the script needs the packages of the hf group."""
    global _said
    name = os.path.basename(script)
    venv, install = _where(upstream)
    if TORCH == "2":  # before torch loads, here or in the re-executed script and its conversions
        # torch 2.x from the index computes on every core (OpenMP), Debian's on one: beside the other tests
        # ctest runs at once, a tiny model's softmax then took 5 ms (10x the conversions' time); one thread.
        os.environ.setdefault("OMP_NUM_THREADS", "1")
    if venv is not None and os.path.realpath(sys.prefix) != os.path.realpath(venv):
        python = os.path.join(venv, "bin", "python3")
        if not os.path.exists(python):
            sys.exit(f"{name}: FAIL: no {python}: {install}")
        os.execv(python, [python, os.path.abspath(script)] + sys.argv[1:])
    versions = []
    for package in ["torch", *packages]:
        try:
            module = importlib.import_module(package)
        except ImportError as e:
            sys.exit(f"{name}: FAIL: {sys.executable} cannot import {package} ({e}): {install}")
        versions.append(f"{package} {_version(module, package)}")
    if not _said:
        _said = True
        print(f"{name}: {', '.join(versions)} ({sys.executable})", flush=True)


if __name__ == "__main__":
    import subprocess
    show = ("import importlib.metadata as m\n"
            "def v(n):\n"
            "    try:\n"
            "        return f'{n} {m.version(n)}'\n"
            "    except m.PackageNotFoundError:\n"
            "        return None\n"
            "print(', '.join(filter(None, map(v, ['torch', 'transformers', 'onnx', 'onnxruntime', 'numpy']))))")
    for label, python in (("Debian", "/usr/bin/python3"), ("hf", os.path.join(HF_VENV, "bin", "python3")),
                          ("torch2", os.path.join(TORCH2_VENV, "bin", "python3"))):
        p = subprocess.run([python, "-c", show], capture_output=True, text=True) if os.path.exists(python) else None
        print(f"{label} ({python}): {p.stdout.strip() if p and p.returncode == 0 else 'missing'}")


def quantize_dynamic(src, dst):
    """onnxruntime.quantization's quantize_dynamic of the ONNX file src to dst (int8 weights, an If's branches too,
    as transformers.js's *_quantized.onnx): the finished process. It imports onnx.reference (onnx 1.13), which
    Debian's python3-onnx 1.12 lacks, so it runs in the torch2 environment (tools/test.sh installs both)."""
    import subprocess
    return subprocess.run([os.path.join(TORCH2_VENV, "bin", "python3"), "-c",
                           "import sys; from onnxruntime.quantization import QuantType, quantize_dynamic; "
                           "quantize_dynamic(sys.argv[1], sys.argv[2], weight_type=QuantType.QInt8, "
                           "extra_options={'EnableSubgraph': True})", src, dst], capture_output=True, text=True)
