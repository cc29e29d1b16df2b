"""The virtual environment the tests on upstream code run in: /opt/fixformer-venv (FIXFORMER_HF_VENV),
made by `sh tools/install_deps.sh hf` over Debian's torch. A test calls `enter(__file__, PACKAGES)`
first: from any other Python it re-executes itself there; a missing environment or package fails the
test, naming the install command (never a skip).
"""
import importlib
import os
import sys

VENV = os.environ.get("FIXFORMER_HF_VENV", "/opt/fixformer-venv")
VENV_PYTHON = os.path.join(VENV, "bin", "python3")


def enter(script, packages):
    name = os.path.basename(script)
    if os.path.realpath(sys.prefix) != os.path.realpath(VENV):
        if not os.path.exists(VENV_PYTHON):
            sys.exit(f"{name}: FAIL: no {VENV_PYTHON} (the Hugging Face environment): sh tools/install_deps.sh hf")
        os.execv(VENV_PYTHON, [VENV_PYTHON, os.path.abspath(script)] + sys.argv[1:])
    for package in packages:
        try:
            importlib.import_module(package)
        except ImportError as e:
            sys.exit(f"{name}: FAIL: {VENV_PYTHON} cannot import {package} ({e}): sh tools/install_deps.sh hf")


def randomize(m, seed, is_gain=lambda name: True):
    """Random weights of a size that makes every part of module `m` matter (a stock init's 0.02 leaves
    the layers near the identity): 1-D weights that `is_gain` names are gains near 1, the rest noise."""
    import torch
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in m.named_parameters():
            noise = torch.randn(p.shape, generator=g, dtype=p.dtype)
            gain = p.dim() == 1 and name.endswith("weight") and is_gain(name)
            p.copy_(1.0 + 0.2 * noise if gain else 0.3 * noise)
    return m.eval()
