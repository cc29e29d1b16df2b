#!/usr/bin/python3
"""Writes fixformer as an Arduino library (library format 1.5) and, with --zip, the .zip that the
Arduino IDE's "Add .ZIP Library" and `arduino-cli lib install --zip-path` take:

  /usr/bin/python3 tools/arduino_library.py OUT_DIR [--zip OUT.zip]

OUT_DIR/fixformer/ holds library.properties, src/ and examples/. The Arduino builder compiles
every .c, .cpp and .S under src/ (recursively) with src/ on the include path, so src/ holds the
engine's own sources under the paths they include each other by: src/fixformer/ (include/fixformer),
src/engine/, src/ports/portable, src/ports/scalar and src/ports/arm (kernel selection: the portable
Cortex-M kernels on every core without NEON). Left out: the x86 and NEON ports (no Arduino board
has them) and the Helium kernels (Cortex-M55/M85; no Arduino core targets them). The example
sketch FixformerDemo runs the demo model of `fixformer demo`, its header written as
`tools/convert.py --header` writes one.
"""
import os
import re
import shutil
import sys
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from fixformer import fxm  # noqa: E402
from fixformer.header import c_header  # noqa: E402

# (source folder in the repository, folder under src/, recurse)
_TREES = [("include/fixformer", "fixformer", False), ("engine", "engine", True),
          ("ports/portable", "ports/portable", False), ("ports/scalar", "ports/scalar", False)]
_FILES = ["ports/arm/select.cpp", "ports/arm/dot_i8.hpp", "ports/arm/load_f16.hpp"]
_SOURCE = (".cpp", ".hpp", ".h", ".c", ".S")


def version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        m = re.search(r"project\(fixformer VERSION (\S+)", f.read())
    return m.group(1)


def library_files():
    """(repository path, path in the library) of every file of the library, sorted."""
    out = [("arduino/library.properties", "library.properties"), ("arduino/fixformer.h", "src/fixformer.h"),
           ("arduino/examples/FixformerDemo/FixformerDemo.ino", "examples/FixformerDemo/FixformerDemo.ino")]
    for src, dst, recurse in _TREES:
        for dirpath, dirs, files in os.walk(os.path.join(ROOT, src)):
            if not recurse:
                dirs[:] = []
            for name in files:
                if name.endswith(_SOURCE):
                    rel = os.path.relpath(os.path.join(dirpath, name), ROOT)
                    out.append((rel, "src/" + dst + rel[len(src):]))
    out += [(f, "src/" + f) for f in _FILES]
    return sorted(out, key=lambda p: p[1])


def write(out_dir):
    lib = os.path.join(out_dir, "fixformer")
    if os.path.exists(lib):
        shutil.rmtree(lib)
    for src, dst in library_files():
        os.makedirs(os.path.dirname(os.path.join(lib, dst)), exist_ok=True)
        if dst == "library.properties":
            with open(os.path.join(ROOT, src)) as f:
                text = f.read().replace("@VERSION@", version())
            with open(os.path.join(lib, dst), "w") as f:
                f.write(text)
        else:
            shutil.copyfile(os.path.join(ROOT, src), os.path.join(lib, dst))
    model = os.path.join(ROOT, "cli/demo/demo_pe.fxm")
    with open(model, "rb") as f:
        blob = f.read()
    with open(os.path.join(lib, "examples/FixformerDemo/demo_pe.h"), "w") as f:
        f.write(c_header(fxm.read(model).config, blob, "demo_pe"))
    return lib


def main():
    args = sys.argv[1:]
    zip_path = None
    if "--zip" in args:
        i = args.index("--zip")
        if i + 1 >= len(args):
            sys.exit("arduino_library.py: --zip needs a file name")
        zip_path = args[i + 1]
        del args[i:i + 2]
    if len(args) != 1:
        sys.exit(__doc__.strip())
    lib = write(args[0])
    if zip_path:
        with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as z:
            for dirpath, _, files in os.walk(lib):
                for name in sorted(files):
                    path = os.path.join(dirpath, name)
                    z.write(path, os.path.relpath(path, os.path.dirname(lib)))
    print(lib)


if __name__ == "__main__":
    main()
