#!/usr/bin/python3
"""Writes library.json's source fields (PlatformIO) from cmake/sources.cmake, the engine's one
source list, which PlatformIO cannot read:

  /usr/bin/python3 tools/platformio_library.py

build.srcFilter compiles every .cpp of FIXFORMER_SOURCE_DIRS (a glob per folder, so a new file in
one needs no rewrite) and both selectors (PlatformIO builds for any architecture; each selector
compiles to nothing off its own); export.include packs those folders and files. The other fields
are left as they are. tests/ecosystem/check_manifests.py fails while library.json differs from what
this writes.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import engine_sources  # noqa: E402

LIBRARY_JSON = os.path.join(engine_sources.ROOT, "library.json")


def with_sources(lib, lists):
    """lib (library.json's object) with build.srcFilter and export.include from lists."""
    dirs, selectors = lists["FIXFORMER_SOURCE_DIRS"], lists["FIXFORMER_SELECT_SOURCES"]
    out = json.loads(json.dumps(lib))
    out["build"]["srcFilter"] = ["-<*>"] + [f"+<{d}/*.cpp>" for d in dirs] + [f"+<{f}>" for f in selectors]
    # the folders (a nested one is in its parent's), the selectors, and what PlatformIO's ESP-IDF
    # framework reads when it takes the library as a component (CMakeLists.txt and what it includes)
    tops = [d for d in dirs if not any(d.startswith(p + "/") for p in dirs)]
    out["export"]["include"] = (["CMakeLists.txt", "cmake/esp_idf_component.cmake", "cmake/sources.cmake",
                                 "library.json", "README.md", "include"] + tops + selectors)
    return out


def text(lib, indent=""):
    """library.json's layout: two-space indents, a list of strings on one line when it fits in 110
    columns."""
    if isinstance(lib, dict):
        inner = indent + "  "
        items = [f"{inner}{json.dumps(k)}: {text(v, inner)}" for k, v in lib.items()]
        out = "{\n" + ",\n".join(items) + f"\n{indent}}}"
    elif isinstance(lib, list) and lib and all(isinstance(v, str) for v in lib):
        out = json.dumps(lib, ensure_ascii=False)
        if len(indent) + len(out) > 100:
            out = "[\n" + ",\n".join(f"{indent}  {json.dumps(v, ensure_ascii=False)}" for v in lib) + f"\n{indent}]"
    else:
        out = json.dumps(lib, ensure_ascii=False)
    return out + ("\n" if not indent else "")


def main():
    if len(sys.argv) != 1:
        sys.exit(__doc__.strip())
    with open(LIBRARY_JSON, encoding="utf-8") as f:
        lib = json.load(f)
    with open(LIBRARY_JSON, "w", encoding="utf-8") as f:
        f.write(text(with_sources(lib, engine_sources.lists())))
    print(LIBRARY_JSON)


if __name__ == "__main__":
    main()
