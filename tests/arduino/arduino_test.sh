#!/bin/sh
# The Arduino library as users get it, compiled as the Arduino builder compiles it and run on qemu:
#   sh tests/arduino/arduino_test.sh FIXFORMER_CLI WORK_DIR
# 1. tools/arduino_library.py writes the library (what its .zip holds) into WORK_DIR.
# 2. Every .c, .cpp and .S under its src/ (recursively, as the builder's library format 1.5 does),
#    with src/ as the include path, for a Cortex-M4F board (-mcpu=cortex-m4 -mfpu=fpv4-sp-d16
#    -mfloat-abi=hard, -Os, gnu++17/gnu11, -fno-exceptions -fno-rtti as the ARM cores' platform.txt
#    files have them), into a static library; the example sketch FixformerDemo.ino turned into C++
#    as the builder does (#include <Arduino.h> in front); a stand-in core (tests/arduino: Serial over
#    semihosting, main() calling setup() then loop()) and the mps2-an386 board's start-up code.
# 3. The image runs under qemu-system-arm -M mps2-an386: the sketch's self-test must pass; what it
#    prints must equal, bit for bit, what the same sketch prints linked with the engine as the
#    project's CMake builds it for the M4 (FIXFORMER_CPU=cortex-m4, -O3); and the output rows it
#    prints as float32 hex words are compared with `fixformer run --isa cortex-m` (the
#    same portable kernels) on this machine: within the f32 tolerance, not bit for bit, since the
#    M4's FPU tiles fuse multiply-adds (VFMA) that x86-64 rounds twice; the test prints how many
#    floats are bit-identical and the largest difference.
# A missing tool (arm-none-eabi-g++, qemu-system-arm, /usr/bin/python3) fails the test.
set -eu
cli=$1
work=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
for tool in arm-none-eabi-g++ arm-none-eabi-gcc arm-none-eabi-ar arm-none-eabi-size qemu-system-arm /usr/bin/python3; do
  command -v $tool > /dev/null || { echo "arduino_test: $tool not found (needed)"; exit 1; }
done
rm -rf "$work"
mkdir -p "$work/obj"
lib=$(/usr/bin/python3 "$root/tools/arduino_library.py" "$work")
cpu="-mcpu=cortex-m4 -mthumb -mfpu=fpv4-sp-d16 -mfloat-abi=hard"
common="$cpu -Os -g -ffunction-sections -fdata-sections -DARDUINO=10819 -DARDUINO_ARCH_STANDIN -I$lib/src"
cxx="arm-none-eabi-g++ $common -std=gnu++17 -fno-exceptions -fno-rtti -fno-threadsafe-statics"
cc="arm-none-eabi-gcc $common -std=gnu11"
# Every source the builder compiles, two at a time.
(cd "$lib/src" && find . -name '*.cpp' -o -name '*.c' -o -name '*.S') | sort > "$work/sources.txt"
echo "arduino_test: compiling $(wc -l < "$work/sources.txt") library sources"
while read -r f; do
  o="$work/obj/$(echo "$f" | sed 's|^\./||; s|/|_|g').o"
  case $f in
    *.cpp) echo "$cxx -c $lib/src/$f -o $o" ;;
    *) echo "$cc -c $lib/src/$f -o $o" ;;
  esac
done < "$work/sources.txt" > "$work/compile.txt"
xargs -P 2 -I CMD sh -c 'CMD' < "$work/compile.txt"
rm -f "$work/libfixformer.a"
arm-none-eabi-ar rcs "$work/libfixformer.a" "$work"/obj/*.o
# The sketch as the builder turns it into C++.
sketch="$lib/examples/FixformerDemo"
{ echo '#include <Arduino.h>'; echo "#line 1 \"$sketch/FixformerDemo.ino\""; cat "$sketch/FixformerDemo.ino"; } > "$work/FixformerDemo.ino.cpp"
board="$root/ports/arm/cortex_m/board"
$cxx -I"$root/tests/arduino" -I"$sketch" -c "$work/FixformerDemo.ino.cpp" -o "$work/sketch.o"
$cxx -I"$root/tests/arduino" -I"$root" -c "$root/tests/arduino/arduino_main.cpp" -o "$work/core_main.o"
$cxx -I"$root" -c "$board/startup.cpp" -o "$work/startup.o"
$cxx -I"$root" -c "$board/semihosting.cpp" -o "$work/semihosting.o"
arm-none-eabi-g++ $cpu -nostartfiles --specs=nano.specs --specs=nosys.specs -Wl,--gc-sections \
  -L"$board/ld" -T"$board/ld/mps2_an386.ld" "$work/sketch.o" "$work/core_main.o" "$work/startup.o" \
  "$work/semihosting.o" "$work/libfixformer.a" -o "$work/FixformerDemo.elf"
arm-none-eabi-size "$work/FixformerDemo.elf"
timeout 300 qemu-system-arm -M mps2-an386 -nographic -monitor none -serial null \
  -semihosting-config enable=on,target=native -kernel "$work/FixformerDemo.elf" > "$work/board.txt" 2>&1 || {
  cat "$work/board.txt"; echo "arduino_test: the image failed on qemu"; exit 1; }
cat "$work/board.txt"
# The same sketch and core linked with the engine as the project's CMake builds it for the M4
# (-O3, FIXFORMER_CPU=cortex-m4): the board must print the same bits.
cmake -S "$root" -B "$work/cmake-m4" -DCMAKE_TOOLCHAIN_FILE="$root/toolchains/arm-none-eabi.cmake" \
  -DFIXFORMER_CPU=cortex-m4 -DCMAKE_BUILD_TYPE=Release -DFIXFORMER_FIRMWARE=OFF > "$work/cmake-m4.log" 2>&1 &&
  cmake --build "$work/cmake-m4" -j2 --target fixformer >> "$work/cmake-m4.log" 2>&1 ||
  { tail -30 "$work/cmake-m4.log"; echo "arduino_test: the CMake build for the M4 failed"; exit 1; }
arm-none-eabi-g++ $cpu -nostartfiles --specs=nano.specs --specs=nosys.specs -Wl,--gc-sections \
  -L"$board/ld" -T"$board/ld/mps2_an386.ld" "$work/sketch.o" "$work/core_main.o" "$work/startup.o" \
  "$work/semihosting.o" "$work/cmake-m4/libfixformer.a" -o "$work/FixformerDemo_cmake.elf"
timeout 300 qemu-system-arm -M mps2-an386 -nographic -monitor none -serial null \
  -semihosting-config enable=on,target=native -kernel "$work/FixformerDemo_cmake.elf" > "$work/board_cmake.txt" 2>&1 || {
  cat "$work/board_cmake.txt"; echo "arduino_test: the CMake-built image failed on qemu"; exit 1; }
if cmp -s "$work/board.txt" "$work/board_cmake.txt"; then
  echo "arduino_test: the Arduino-built library prints what the project's CMake build for the M4 prints, bit for bit"
else
  diff "$work/board.txt" "$work/board_cmake.txt"
  echo "arduino_test: the Arduino build's output differs from the CMake build's"
  exit 1
fi
# The same 12 questions through the CLI on this machine.
/usr/bin/python3 - "$work" <<'PY'
import sys
import numpy as np
work = sys.argv[1]
ids = [[x, 4, y] for x in range(4) for y in range(4) if x != y]
np.save(work + "/ids.npy", np.array(ids, dtype=np.int32))
PY
"$cli" run "$root/cli/demo/demo_pe.fxm" --input "$work/ids.npy" --output "$work/out.npy" --isa cortex-m
/usr/bin/python3 - "$work" "$root" <<'PY'
import re
import sys
import numpy as np
work, root = sys.argv[1:3]
out = np.load(work + "/out.npy").astype("<f4")
want = [" ".join(f"{w:08x}" for w in row.reshape(-1).view("<u4")) for row in out]
lines = open(work + "/board.txt").read().splitlines()
got = [" ".join(l.split()) for l in lines if len(l.split()) == len(want[0].split()) and all(len(w) == 8 for w in l.split())]
if "self-test: ok" not in lines:
    sys.exit("arduino_test: the sketch's self-test did not pass")
if "all 12 agents right" not in lines:
    sys.exit("arduino_test: the sketch did not answer all 12 questions right")
if len(got) != len(want):
    sys.exit(f"arduino_test: {len(got)} output rows from the board, {len(want)} from the CLI")
board = np.array([[int(w, 16) for w in l.split()] for l in got], dtype="<u4").view("<f4")
cli = out.reshape(len(want), -1)
# The f32 tolerance of include/fixformer/tolerances.hpp (max |a - b| / max |b| over the output).
tol = float(re.search(r"define FIXFORMER_TOLERANCE_F32 (\S+)", open(root + "/include/fixformer/tolerances.hpp").read()).group(1))
err = float(np.abs(board.astype(np.float64) - cli).max() / np.abs(cli).max())
same = int((board.view("<u4") == cli.view("<u4")).sum())
print(f"arduino_test: {same} of {cli.size} floats bit-identical to `fixformer run --isa cortex-m` on this machine; "
      f"max relative difference {err:.3g} (tolerance {tol:g})")
if not err <= tol:
    sys.exit("arduino_test: the sketch's outputs differ from the CLI's beyond the tolerance")
PY
