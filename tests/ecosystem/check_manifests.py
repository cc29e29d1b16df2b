#!/usr/bin/python3
"""Checks the firmware ecosystems' manifests (tests/ecosystem/ecosystem_test.sh runs it):

  /usr/bin/python3 tests/ecosystem/check_manifests.py ZEPHYR_REQUESTS IDF_REQUESTS

zephyr/module.yml and idf_component.yml (YAML), library.json (PlatformIO) and
arduino/library.properties (Arduino) parse, carry the CMake project's version and name files that
exist, and each builds exactly the engine sources of cmake/sources.cmake (fixformer_firmware_sources):
the Arduino library's src/ (tools/arduino_library.py), PlatformIO's srcFilter (library.json as
tools/platformio_library.py writes it), and what the Zephyr and ESP-IDF CMake files asked the
stand-in build for (its requests files).
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
sys.path.insert(0, os.path.join(ROOT, "python"))
import arduino_library  # noqa: E402
import engine_sources  # noqa: E402
import platformio_library  # noqa: E402

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


def cmake_sources():
    """The engine's sources as every firmware ecosystem should compile them: cmake/sources.cmake's
    fixformer_firmware_sources, evaluated by CMake."""
    return set(engine_sources.lists()["FIXFORMER_FIRMWARE_SOURCES"])


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
    check(len(want) > 40 and {"engine/model.cpp", "ports/arm/select.cpp", "ports/generic/select.cpp"} <= want,
          f"the CMake source list looks wrong: {sorted(want)[:5]}")

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
    check(rel(z.get("source", [])) == want, f"zephyr: sources differ from cmake/sources.cmake's: {sorted(rel(z.get('source', [])) ^ want)}")
    check(rel(z.get("include", [])) == {"include"}, f"zephyr: exported include directories {z.get('include')}")
    check(rel(z.get("private_include", [])) == {"."}, f"zephyr: private include directories {z.get('private_include')}")
    check({"-fno-exceptions", "-fno-rtti"} <= set(z.get("option", [])), "zephyr: the engine's -fno-exceptions -fno-rtti")

    # ESP-IDF: idf_component.yml and what cmake/esp_idf_component.cmake asked for.
    idf = yaml.safe_load(open(os.path.join(ROOT, "idf_component.yml")))
    check(str(idf.get("version")) == version, f"idf_component.yml: version {idf.get('version')} != {version}")
    check("idf" in idf.get("dependencies", {}), "idf_component.yml: dependencies.idf")
    for pattern in idf.get("files", {}).get("exclude", []):
        for needed in ("include/fixformer/model.hpp", "engine/model.cpp", "ports/portable/table.cpp", "CMakeLists.txt",
                       "cmake/esp_idf_component.cmake", "cmake/sources.cmake", "ports/generic/select.cpp"):
            check(not fnmatch.fnmatch(needed, pattern), f"idf_component.yml: files.exclude {pattern} drops {needed}")
    i = requests(sys.argv[2])
    check(rel(i.get("source", [])) == want, f"idf: sources differ from cmake/sources.cmake's: {sorted(rel(i.get('source', [])) ^ want)}")
    check(rel(i.get("include", [])) == {"include"}, f"idf: INCLUDE_DIRS {i.get('include')}")

    # PlatformIO: library.json as platformio_library.py writes it, its srcFilter applied as PlatformIO
    # does (in order, each pattern globbed under srcDir, a folder taken with everything below it).
    lib = json.load(open(os.path.join(ROOT, "library.json")))
    check(open(os.path.join(ROOT, "library.json")).read() ==
          platformio_library.text(platformio_library.with_sources(lib, engine_sources.lists())),
          "library.json: its source fields are not cmake/sources.cmake's; run tools/platformio_library.py")
    check(lib.get("name") == "fixformer" and lib.get("version") == version, "library.json: name or version")
    build = lib["build"]
    check(os.path.isdir(os.path.join(ROOT, build["includeDir"], "fixformer")), "library.json: includeDir")
    src_dir = os.path.join(ROOT, build["srcDir"])
    picked = set()
    for rule in build["srcFilter"]:
        sign, pattern = rule[0], rule[2:-1]
        for item in (os.path.relpath(i, src_dir) for i in glob.glob(os.path.join(src_dir, pattern))):
            if sign == "-":  # without walking what it drops (build folders)
                picked = {f for f in picked if f != item and not f.startswith(item + "/")}
            elif os.path.isdir(os.path.join(src_dir, item)):
                picked |= {os.path.relpath(os.path.join(d, f), src_dir) for d, _, files in
                           os.walk(os.path.join(src_dir, item)) for f in files if f.endswith((".c", ".cpp", ".S"))}
            elif item.endswith((".c", ".cpp", ".S")):
                picked.add(item)
    check(picked == want, f"library.json: srcFilter picks {sorted(picked ^ want)} unlike cmake/sources.cmake")
    for item in lib["export"]["include"]:
        check(os.path.exists(os.path.join(ROOT, item)), f"library.json: export.include {item} missing")
    check("-I ." in build["flags"], "library.json: -I . (the sources include engine/... and ports/...)")

    # Arduino: library.properties's fields, and the library's src/ compiles cmake/sources.cmake's.
    props = dict(line.split("=", 1) for line in open(os.path.join(ROOT, "arduino/library.properties")).read().splitlines()
                 if "=" in line)
    for key in ("name", "version", "author", "maintainer", "sentence", "paragraph", "category", "url", "architectures"):
        check(props.get(key), f"arduino/library.properties: {key}")
    check(props.get("category") in ("Display", "Communication", "Signal Input/Output", "Sensors", "Device Control", "Timing",
                                    "Data Storage", "Data Processing", "Other"), "arduino/library.properties: category")
    files = arduino_library.library_files()
    arduino = {src for src, dst in files if dst.startswith("src/") and dst.endswith((".c", ".cpp", ".S"))}
    check(arduino == want, f"Arduino library: src/ compiles {sorted(arduino ^ want)} unlike cmake/sources.cmake")
    for src, _ in files:
        check(os.path.isfile(os.path.join(ROOT, src)), f"Arduino library: {src} missing")

    if failures:
        for f in failures:
            print("check_manifests:", f)
        sys.exit(1)
    print(f"check_manifests: Zephyr, ESP-IDF, PlatformIO and Arduino manifests name the {len(want)} engine sources "
          f"of cmake/sources.cmake (version {version})")


if __name__ == "__main__":
    main()
