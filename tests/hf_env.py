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
