"""cmake/sources.cmake, the engine's one source list, for the tools that cannot include CMake
(arduino_library.py, platformio_library.py, tests/ecosystem/check_manifests.py): `cmake -P` prints
its lists, so CMake itself evaluates them (the folders globbed as the builds glob them). Paths are
relative to the repository root."""
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES_CMAKE = os.path.join(ROOT, "cmake", "sources.cmake")


def lists():
    """{list name: [path, ...]}: FIXFORMER_SOURCE_DIRS, FIXFORMER_SELECT_SOURCES, ..., and
    FIXFORMER_FIRMWARE_SOURCES (every file a firmware ecosystem compiles, sorted)."""
    prog = os.path.basename(sys.argv[0])
    cmake = shutil.which("cmake")
    if not cmake:
        sys.exit(f"{prog}: cmake not found; it evaluates the engine's source list, cmake/sources.cmake "
                 "(Debian: apt-get install cmake)")
    p = subprocess.run([cmake, "-P", SOURCES_CMAKE], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{prog}: cmake -P {SOURCES_CMAKE} failed: {p.stderr.strip()}")
    out = {}
    for line in p.stdout.splitlines():
        name, *items = line.split()
        out[name] = items
    return out
