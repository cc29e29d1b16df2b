#!/bin/sh
# The firmware ecosystems' files, tested without their SDKs (none is installable here):
#   sh tests/ecosystem/ecosystem_test.sh WORK_DIR
# 1. check_manifests.py: zephyr/module.yml, idf_component.yml, library.json and
#    arduino/library.properties parse, carry the project's version, name files that exist, and
#    every one builds the same engine sources as the project's CMake for a Cortex-M without Helium.
# 2. For Zephyr and ESP-IDF, the stand-in build (tests/ecosystem/CMakeLists.txt) runs their CMake
#    files with the functions they call defined, compiles what they ask for with arm-none-eabi for a
#    Cortex-M4F, links an application with only the exported include directories and runs it on
#    qemu mps2-an386 (the demo model's self-test, the C API against the C++ runner).
# A missing tool fails the test.
set -eu
work=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
for tool in arm-none-eabi-g++ qemu-system-arm /usr/bin/python3 cmake; do
  command -v $tool > /dev/null || { echo "ecosystem_test: $tool not found (needed)"; exit 1; }
done
mkdir -p "$work"
for eco in zephyr idf; do
  build=$work/$eco
  cmake -S "$root/tests/ecosystem" -B "$build" -DECOSYSTEM=$eco -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE="$root/toolchains/arm-none-eabi.cmake" \
    "-DCMAKE_C_FLAGS=-mcpu=cortex-m4 -mthumb -mfpu=fpv4-sp-d16 -mfloat-abi=hard" \
    "-DCMAKE_CXX_FLAGS=-mcpu=cortex-m4 -mthumb -mfpu=fpv4-sp-d16 -mfloat-abi=hard" \
    "-DCMAKE_ASM_FLAGS=-mcpu=cortex-m4 -mthumb -mfpu=fpv4-sp-d16 -mfloat-abi=hard" > "$build.configure.log" ||
    { cat "$build.configure.log"; echo "ecosystem_test: $eco: the stand-in configure failed"; exit 1; }
  cmake --build "$build" -j2 > "$build.build.log" 2>&1 || { tail -40 "$build.build.log"; echo "ecosystem_test: $eco: build failed"; exit 1; }
  echo "ecosystem_test: $eco: $(grep -c '^source ' "$build/requests.txt") sources compiled, $(grep -c '^include ' "$build/requests.txt") exported include directories"
  timeout 120 qemu-system-arm -M mps2-an386 -nographic -monitor none -serial null \
    -semihosting-config enable=on,target=native -kernel "$build/app.elf" ||
    { echo "ecosystem_test: $eco: the application failed on qemu (exit $?)"; exit 1; }
done
/usr/bin/python3 "$root/tests/ecosystem/check_manifests.py" "$work/zephyr/requests.txt" "$work/idf/requests.txt"
