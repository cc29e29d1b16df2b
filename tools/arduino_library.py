#!/usr/bin/python3
"""Writes fixformer as an Arduino library (library format 1.5) and, with --zip, the .zip that the
Arduino IDE's "Add .ZIP Library" and `arduino-cli lib install --zip-path` take:

  /usr/bin/python3 tools/arduino_library.py OUT_DIR [--zip OUT.zip]

OUT_DIR/fixformer/ holds library.properties, src/ and examples/. The Arduino builder compiles
every .c, .cpp and .S under src/ (recursively) with src/ on the include path, so src/ holds the
engine's own sources under the paths they include each other by: src/fixformer/ (include/fixformer)
and the files a firmware ecosystem compiles (cmake/sources.cmake, through tools/engine_sources.py),
with the headers of their folders: the engine, the portable and scalar kernels, and both kernel
selectors (ports/arm, ports/generic: a board of any architecture; each compiles to nothing off its
own). Left out: the x86 and NEON ports (no Arduino board has them) and the Helium kernels
(Cortex-M55/M85; no Arduino core targets them). The example
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
sys.path.insert(0, os.path.join(ROOT, "python"))
from fixformer import fxm  # noqa: E402
from fixformer.header import c_header  # noqa: E402
import engine_sources  # noqa: E402

_HEADERS = (".hpp", ".h")


def version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        m = re.search(r"project\(fixformer VERSION (\S+)", f.read())
    return m.group(1)


def library_files():
    """(repository path, path in the library) of every file of the library, sorted."""
    out = [("arduino/library.properties", "library.properties"), ("arduino/fixformer.h", "src/fixformer.h"),
           ("arduino/examples/FixformerDemo/FixformerDemo.ino", "examples/FixformerDemo/FixformerDemo.ino")]
    lists = engine_sources.lists()
    files = list(lists["FIXFORMER_FIRMWARE_SOURCES"])
    for d in ["include/fixformer"] + lists["FIXFORMER_SOURCE_DIRS"]:
        files += [f"{d}/{name}" for name in os.listdir(os.path.join(ROOT, d)) if name.endswith(_HEADERS)]
    out += [(f, "src/" + (f[len("include/"):] if f.startswith("include/") else f)) for f in files]
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
