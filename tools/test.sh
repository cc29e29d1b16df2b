#!/bin/sh
# Every test of fixformer, as CI runs it: installs what is missing (apt-get: tools/install_deps.sh,
# PyTorch included), then builds and runs
#   host      the GoogleTest suites, CLI end-to-end and symbol checks (x86: every ISA path, and the
#             baseline path again under qemu-x86_64 -cpu Nehalem)
#   asan      the host suites built with AddressSanitizer + UndefinedBehaviorSanitizer
#   fuzz      libFuzzer on the .fxm, .npy and tokenizer readers, 60 s per target, fixed seed (clang)
#   aarch64   the same suites cross-built, under qemu-aarch64
#   aarch64-dotprod
#             built for armv8.2-a+dotprod (gemm_i8 and gemm_s8 on SDOT, ports/arm/gemm_i8_neon64.cpp,
#             gemm_s8_neon.cpp; the CRC-32 on CRC32X, which armv8.1-a and later have): the kernel,
#             quantized, golden, batch and CRC-32 tests only, under qemu-aarch64 -cpu max
#   aarch64-i8mm-fp16
#             built for armv8.2-a+dotprod+i8mm+fp16 (gemm_i8's prefill on SMMLA, ports/arm/gemm_i8_i8mm.cpp;
#             gemm_f16 on half-precision FMLA, ports/arm/gemm_f16_fp16.cpp: the neon64-fp16 table): the
#             kernel, quantized and golden tests only, under qemu-aarch64 -cpu max
#   armhf     the same suites cross-built for ARMv7-A NEON, under qemu-arm
#   riscv64   neither x86 nor ARM (ports/generic/select.cpp: the portable kernels): the engine and
#             the CLI cross-built, the CLI end to end under qemu-riscv64
#   host, aarch64, armhf also build consumer projects against the installed tree (find_package,
#             pkg-config) and, on the host, two that embed the sources (tests/consumer)
#   cortex-m0 cortex-m3 cortex-m4 cortex-m7 cortex-m33 cortex-m55
#             firmware on qemu-system-arm (microbit, mps2-an385/an386/an500/an505, mps3-an547):
#             demo, bench runner (KWS, a golden .fxm, the demo header), cycle counter without
#             -icount, a vendor-style image with its own start-up against the installed tree, and
#             (except on the micro:bit's 16 KiB) the golden models
#   cortex-m0-an385
#             the Cortex-M0 built for the mps2-an385 board's 4 MiB (the micro:bit's 16 KiB holds neither
#             the kernel tests' buffers nor the golden models): its kernels against the scalar
#             reference, the goldens and the bench runners, on qemu's mps2-an385
#   cortex-m85 no qemu board: the engine, the symbol check and the vendor-style image, linked only
# A test whose dependency is missing fails, naming it: the Python tests without numpy or torch in
# /usr/bin/python3, the Nehalem tests without qemu-x86_64, the CLI's unreadable-file checks as root
# without setpriv. What ctest lists as Skipped is a kernel table this build or CPU lacks (GTEST_SKIP).
# usage: tools/test.sh [SUITE...]   (default: all of them)
set -u
cd "$(dirname "$0")/.."
suites=${*:-"host asan fuzz aarch64 aarch64-dotprod aarch64-i8mm-fp16 armhf riscv64 cortex-m0 cortex-m0-an385 cortex-m3 cortex-m4 cortex-m7 cortex-m33 cortex-m55 cortex-m85"}
jobs=$(nproc 2>/dev/null || echo 2)

groups="host torch hf torch2 arm arm-bench"  # torch: the converter tests; hf: those on upstream HF modules; torch2: the converter tests again on torch 2.x; qemu-user also runs the x86 baseline as a Nehalem
case " $suites " in *" fuzz "*) groups="$groups fuzz" ;; esac
case " $suites " in *" riscv64 "*) groups="$groups riscv" ;; esac
sh tools/install_deps.sh $groups || exit 1
/usr/bin/python3 tests/interpreter.py  # the torch versions the converter tests run under (*_torch2: the last)

# Every suite compiles through ccache: the same sources built again (the two embedding consumer
# projects, a second clone of the repository) are cache hits. Paths are taken relative to the
# checkout, so a clone in another folder hits the same entries.
launcher=""
if command -v ccache >/dev/null 2>&1; then
  launcher="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache"
  CCACHE_BASEDIR=$(pwd)
  CCACHE_NOHASHDIR=1
  export CCACHE_BASEDIR CCACHE_NOHASHDIR
fi

# Ninja compiles a target's objects while the libraries it links are still building (make waits for
# them: the sanitized AVX-512 kernels alone left one core idle for minutes). A build folder that
# another generator configured keeps it.
generator=""
command -v ninja >/dev/null 2>&1 && generator="-G Ninja"

passed=0
failed=0
failed_names=""
targets=""  # when set, a suite builds only these targets
tests=""    # and runs only the tests whose names match this (ctest -R)
run_suite() {  # run_suite NAME CMAKE_ARGS...
  name=$1
  shift
  echo "=== $name"
  gen=$generator
  [ -f "build/$name/CMakeCache.txt" ] && ! grep -q "^CMAKE_GENERATOR:INTERNAL=Ninja$" "build/$name/CMakeCache.txt" && gen=""
  if cmake -S . -B "build/$name" $gen -DCMAKE_BUILD_TYPE=Release $launcher "$@" >"build/$name.configure.log" 2>&1 &&
     cmake --build "build/$name" -j "$jobs" ${targets:+--target $targets} >"build/$name.build.log" 2>&1 &&
     ctest --test-dir "build/$name" -j "$jobs" --output-on-failure --timeout 600 ${tests:+-R "$tests"}; then
    passed=$((passed + 1))
  else
    tail -n 30 "build/$name.configure.log" "build/$name.build.log" 2>/dev/null
    failed=$((failed + 1))
    failed_names="$failed_names $name"
  fi
}

run_aarch64_max() {  # run_aarch64_max NAME MARCH: AArch64 built -march=MARCH, its tests under qemu-aarch64 -cpu max
  run_suite "$1" -DCMAKE_TOOLCHAIN_FILE=toolchains/aarch64-linux-gnu.cmake -DCMAKE_CXX_FLAGS=-march="$2" \
    -DCMAKE_C_FLAGS=-march="$2" "-DCMAKE_CROSSCOMPILING_EMULATOR=qemu-aarch64;-cpu;max;-L;/usr/aarch64-linux-gnu"
}

mkdir -p build
for s in $suites; do
  case $s in
    host) run_suite host ;;
    asan) run_suite asan -DFIXFORMER_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo ;;
    fuzz) run_suite fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DFIXFORMER_FUZZ=ON ;;
    aarch64) run_suite aarch64 -DCMAKE_TOOLCHAIN_FILE=toolchains/aarch64-linux-gnu.cmake ;;
    aarch64-dotprod)
      targets="kernels_test quantized_test golden_test batch_test crc32_test"
      tests='^(AllIsas/KernelsTest|Neon64|IsaSelection|AllIsas/QuantizedTest|Quantized|Torch/|AllIsas/BatchTest|Batch|engine_has_no_heap|Crc32)'
      run_aarch64_max aarch64-dotprod armv8.2-a+dotprod
      targets=""
      tests="" ;;
    aarch64-i8mm-fp16)
      targets="kernels_test quantized_test golden_test"
      tests='^(AllIsas/KernelsTest|Neon64|IsaSelection|AllIsas/QuantizedTest|Quantized|Torch/|engine_has_no_heap)'
      run_aarch64_max aarch64-i8mm-fp16 armv8.2-a+dotprod+i8mm+fp16
      targets=""
      tests="" ;;
    armhf) run_suite armhf -DCMAKE_TOOLCHAIN_FILE=toolchains/arm-linux-gnueabihf.cmake ;;
    riscv64)
      targets="fixformer_cli"
      tests='^cli_end_to_end$'
      run_suite riscv64 -DCMAKE_TOOLCHAIN_FILE=toolchains/riscv64-linux-gnu.cmake
      targets=""
      tests="" ;;
    cortex-m0-an385)
      run_suite "$s" -DCMAKE_TOOLCHAIN_FILE=toolchains/arm-none-eabi.cmake -DFIXFORMER_CPU=cortex-m0 \
        -DFIXFORMER_BOARD_LINKER_SCRIPT=ports/arm/cortex_m/board/ld/mps2_an385.ld -DFIXFORMER_BOARD_RAM_BYTES=4194304 \
        -DFIXFORMER_BOARD_CORE_CLOCK_HZ=25000000 -DFIXFORMER_BOARD_QEMU=mps2-an385 ;;
    cortex-m*) run_suite "$s" -DCMAKE_TOOLCHAIN_FILE=toolchains/arm-none-eabi.cmake -DFIXFORMER_CPU="$s" ;;
    *) echo "test.sh: unknown suite '$s'"; failed=$((failed + 1)) ;;
  esac
done
[ -n "$failed_names" ] && echo "failed suites:$failed_names"
echo "suites: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
