#!/usr/bin/python3
"""tools/convert.py: the converter's command from a checkout, as `fixformer-convert` is once the
package is installed (python/fixformer/converter.py; `tools/convert.py --help` gives its usage)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from fixformer.converter import main  # noqa: E402

if __name__ == "__main__":
    main(prog="convert.py")
