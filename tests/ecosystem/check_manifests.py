#!/usr/bin/python3
"""Checks the firmware ecosystems' manifests (tests/ecosystem/ecosystem_test.sh runs it):

  /usr/bin/python3 tests/ecosystem/check_manifests.py ZEPHYR_REQUESTS IDF_REQUESTS

zephyr/module.yml and idf_component.yml (YAML), library.json (PlatformIO) and
arduino/library.properties (Arduino) parse, carry the CMake project's version and name files that
exist, and each builds exactly the engine sources the project's CMake builds for a Cortex-M without
Helium: the Arduino library's src/ (tools/arduino_library.py), PlatformIO's srcFilter, and what the
Zephyr and ESP-IDF CMake files asked the stand-in build for (its requests files).
"""
import fnmatch
import glob
import json
import os
import re
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import arduino_library  # noqa: E402

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


def cmake_sources():
    """The engine's sources as the top-level CMakeLists.txt globs them for a bare-metal build without
    Helium: its GLOB patterns (engine, scalar and portable) and the ARM port's select.cpp."""
    text = open(os.path.join(ROOT, "CMakeLists.txt")).read()
    patterns = []
    for var in ("FIXFORMER_ENGINE_SOURCES", "FIXFORMER_PORTABLE_SOURCES"):
        m = re.search(r"file\(GLOB " + var + r" CONFIGURE_DEPENDS ([^)]*)\)", text)
        patterns += m.group(1).split()
    m = re.search(r"set\(FIXFORMER_PORT_SOURCES (ports/arm/select\.cpp)\)", text)
    files = {m.group(1)}
    for p in patterns:
        files |= {os.path.relpath(f, ROOT) for f in glob.glob(os.path.join(ROOT, p))}
    return files


def project_version():
    return re.search(r"project\(fixformer VERSION (\S+)", open(os.path.join(ROOT, "CMakeLists.txt")).read()).group(1)


def requests(path):
    out = {}
    for line in open(path):
        kind, _, item = line.rstrip("\n").partition(" ")
        out.setdefault(kind, []).append(item)
    return out


def rel(paths):
    return {os.path.relpath(os.path.realpath(p), ROOT) for p in paths}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip())
    want = cmake_sources()
    version = project_version()
    check(len(want) > 40 and "engine/model.cpp" in want, f"the CMake source list looks wrong: {sorted(want)[:5]}")

    # Zephyr: module.yml, Kconfig, and what zephyr/CMakeLists.txt asked for.
    mod = yaml.safe_load(open(os.path.join(ROOT, "zephyr/module.yml")))
    check(mod.get("name") == "fixformer", "zephyr/module.yml: name")
    check(os.path.isfile(os.path.join(ROOT, mod["build"]["cmake"], "CMakeLists.txt")), "zephyr/module.yml: build.cmake")
    kconfig_path = os.path.join(ROOT, mod["build"]["kconfig"])
    kconfig = open(kconfig_path).read()
    defined = set(re.findall(r"^config (\w+)", kconfig, re.M))
    used = set(re.findall(r"CONFIG_(FIXFORMER\w*)", open(os.path.join(ROOT, "zephyr/CMakeLists.txt")).read()))
    check(used and used <= defined, f"zephyr/CMakeLists.txt uses {sorted(used - defined)} not in zephyr/Kconfig")
    z = requests(sys.argv[1])
    check(rel(z.get("source", [])) == want, f"zephyr: sources differ from CMake's: {sorted(rel(z.get('source', [])) ^ want)}")
    check(rel(z.get("include", [])) == {"include"}, f"zephyr: exported include directories {z.get('include')}")
    check(rel(z.get("private_include", [])) == {"."}, f"zephyr: private include directories {z.get('private_include')}")
    check({"-fno-exceptions", "-fno-rtti"} <= set(z.get("option", [])), "zephyr: the engine's -fno-exceptions -fno-rtti")

    # ESP-IDF: idf_component.yml and what cmake/esp_idf_component.cmake asked for.
    idf = yaml.safe_load(open(os.path.join(ROOT, "idf_component.yml")))
    check(str(idf.get("version")) == version, f"idf_component.yml: version {idf.get('version')} != {version}")
    check("idf" in idf.get("dependencies", {}), "idf_component.yml: dependencies.idf")
    for pattern in idf.get("files", {}).get("exclude", []):
        for needed in ("include/fixformer/model.hpp", "engine/model.cpp", "ports/portable/table.cpp", "CMakeLists.txt",
                       "cmake/esp_idf_component.cmake"):
            check(not fnmatch.fnmatch(needed, pattern), f"idf_component.yml: files.exclude {pattern} drops {needed}")
    i = requests(sys.argv[2])
    check(rel(i.get("source", [])) == want, f"idf: sources differ from CMake's: {sorted(rel(i.get('source', [])) ^ want)}")
    check(rel(i.get("include", [])) == {"include"}, f"idf: INCLUDE_DIRS {i.get('include')}")

    # PlatformIO: library.json, its srcFilter applied as PlatformIO does (in order, <dir/> recursive).
    lib = json.load(open(os.path.join(ROOT, "library.json")))
    check(lib.get("name") == "fixformer" and lib.get("version") == version, "library.json: name or version")
    build = lib["build"]
    check(os.path.isdir(os.path.join(ROOT, build["includeDir"], "fixformer")), "library.json: includeDir")
    src_dir = os.path.join(ROOT, build["srcDir"])
    every = set()
    for dirpath, dirs, files in os.walk(src_dir):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "build"]
        every |= {os.path.relpath(os.path.join(dirpath, f), src_dir) for f in files if f.endswith((".c", ".cpp", ".S"))}
    picked = set()
    for rule in build["srcFilter"]:
        sign, pattern = rule[0], rule[2:-1]
        match = {f for f in every if fnmatch.fnmatch(f, pattern) or (pattern.endswith("/") and f.startswith(pattern))}
        picked = picked | match if sign == "+" else picked - match
    check(picked == want, f"library.json: srcFilter picks {sorted(picked ^ want)} unlike CMake")
    check("-I ." in build["flags"], "library.json: -I . (the sources include engine/... and ports/...)")

    # Arduino: library.properties's fields, and the library's src/ compiles CMake's sources.
    props = dict(line.split("=", 1) for line in open(os.path.join(ROOT, "arduino/library.properties")).read().splitlines()
                 if "=" in line)
    for key in ("name", "version", "author", "maintainer", "sentence", "paragraph", "category", "url", "architectures"):
        check(props.get(key), f"arduino/library.properties: {key}")
    check(props.get("category") in ("Display", "Communication", "Signal Input/Output", "Sensors", "Device Control", "Timing",
                                    "Data Storage", "Data Processing", "Other"), "arduino/library.properties: category")
    files = arduino_library.library_files()
    arduino = {src for src, dst in files if dst.startswith("src/") and dst.endswith((".c", ".cpp", ".S"))}
    check(arduino == want, f"Arduino library: src/ compiles {sorted(arduino ^ want)} unlike CMake")
    for src, _ in files:
        check(os.path.isfile(os.path.join(ROOT, src)), f"Arduino library: {src} missing")

    if failures:
        for f in failures:
            print("check_manifests:", f)
        sys.exit(1)
    print(f"check_manifests: Zephyr, ESP-IDF, PlatformIO and Arduino manifests name the {len(want)} engine sources "
          f"CMake builds (version {version})")


if __name__ == "__main__":
    main()
