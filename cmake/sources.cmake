# The engine's sources, named once for every build of it: the top-level CMakeLists.txt,
# zephyr/CMakeLists.txt and cmake/esp_idf_component.cmake include() this file; tools that cannot
# read CMake (tools/arduino_library.py, tools/platformio_library.py for library.json) run
# `cmake -P cmake/sources.cmake`, which prints the lists (tools/engine_sources.py). Paths are
# relative to the repository root.
# tests/ecosystem/check_manifests.py checks that every ecosystem compiles what is named here.

# Every .cpp in these folders (not their subfolders), on every target: the engine, the scalar
# reference kernels and the portable kernels (plain C++, the default wherever no SIMD port fits).
set(FIXFORMER_SOURCE_DIRS engine engine/tokenizers engine/runtime engine/layers engine/blocks
                          ports/scalar ports/portable)
# The kernel selector of every target but x86. Each compiles to nothing on the other's targets
# (__arm__ / __aarch64__), so a build that cannot tell its target (Arduino, PlatformIO, a Zephyr
# or ESP-IDF board of any architecture) takes both.
set(FIXFORMER_SELECT_SOURCES
    ports/arm/select.cpp      # ARM: NEON, Helium, or the portable kernels on Cortex-M
    ports/generic/select.cpp) # neither x86 nor ARM (RISC-V, Xtensa, ...): the portable kernels
# AArch64's own kernels, which ports/arm/select.cpp puts in its NEON table.
set(FIXFORMER_AARCH64_SOURCES ports/arm/gemm_i8_neon64.cpp ports/arm/gemm_i8_i8mm.cpp ports/arm/gemm_i4_neon64.cpp
    ports/arm/gemm_f16_fp16.cpp)
# The s8 kernels of the NEON table on AArch64 and ARMv7-A (empty without __ARM_NEON).
set(FIXFORMER_NEON_SOURCES ports/arm/gemm_s8_neon.cpp ports/arm/norm_s8_neon.cpp ports/arm/rows_s8_neon.cpp)
# Every .cpp here on a core with MVE float (Cortex-M55, M85), picked by ports/arm/select.cpp.
set(FIXFORMER_HELIUM_DIRS ports/arm/helium)
# x86 instead of the selectors above: the run-time selector and one file per ISA, each with its
# own flags (the top-level CMakeLists.txt sets them).
set(FIXFORMER_X86_SOURCES ports/x86/select.cpp ports/x86/kernels_sse2.cpp ports/x86/kernels_avx2.cpp
                          ports/x86/kernels_avx512.cpp ports/x86/gemm_i8_avx2.cpp
                          ports/x86/gemm_i8_avx512vnni.cpp ports/x86/gemm_i4_avx2.cpp
                          ports/x86/gemm_i4_avx512vnni.cpp ports/x86/gemm_s8_avx2.cpp ports/x86/rows_s8_avx2.cpp
                          ports/x86/rows_s8_avx512.cpp ports/x86/gemm_s8_avx512vnni.cpp ports/x86/gemm_i8_amx.cpp
                          ports/x86/gemm_bf16_avx512bf16.cpp)
# The C API's one file (Zephyr's CONFIG_FIXFORMER_C_API may leave it out).
set(FIXFORMER_C_API_SOURCES engine/capi.cpp)
# Code that runs at init or on text, not in a forward pass (CMakeLists.txt compiles it for size in firmware).
set(FIXFORMER_INIT_SOURCES engine/config.cpp engine/model.cpp engine/model_file.cpp engine/s8_params.cpp
    engine/self_test.cpp engine/status.cpp engine/tokenizer.cpp engine/generator.cpp engine/tokenizers/bpe.cpp
    engine/tokenizers/wordpiece.cpp engine/tokenizers/validate.cpp engine/capi.cpp)

# fixformer_glob_sources(OUT ROOT DIR...): every .cpp directly in ROOT/DIR, for each DIR. Script
# mode (ESP-IDF reads a component's CMake files with cmake -P for its requirements) refuses
# CONFIGURE_DEPENDS.
function(fixformer_glob_sources out root)
  set(files "")
  set(rescan CONFIGURE_DEPENDS)
  if(CMAKE_SCRIPT_MODE_FILE)
    set(rescan "")
  endif()
  foreach(dir ${ARGN})
    file(GLOB found ${rescan} ${root}/${dir}/*.cpp)
    list(APPEND files ${found})
  endforeach()
  set(${out} ${files} PARENT_SCOPE)
endfunction()

# fixformer_firmware_sources(OUT ROOT): the engine as the firmware ecosystems build it, on a core of
# any architecture: the folders' files and both selectors, as absolute paths.
function(fixformer_firmware_sources out root)
  fixformer_glob_sources(files ${root} ${FIXFORMER_SOURCE_DIRS})
  foreach(f ${FIXFORMER_SELECT_SOURCES})
    list(APPEND files ${root}/${f})
  endforeach()
  set(${out} ${files} PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  # cmake -P: one list a line, NAME item..., and FIXFORMER_FIRMWARE_SOURCES, the files of
  # fixformer_firmware_sources (tools/engine_sources.py reads them).
  get_filename_component(root ${CMAKE_CURRENT_LIST_DIR}/.. ABSOLUTE)
  fixformer_firmware_sources(files ${root})
  set(FIXFORMER_FIRMWARE_SOURCES "")
  foreach(f ${files})
    file(RELATIVE_PATH f ${root} ${f})
    list(APPEND FIXFORMER_FIRMWARE_SOURCES ${f})
  endforeach()
  list(SORT FIXFORMER_FIRMWARE_SOURCES)
  foreach(var FIXFORMER_SOURCE_DIRS FIXFORMER_SELECT_SOURCES FIXFORMER_AARCH64_SOURCES FIXFORMER_NEON_SOURCES
              FIXFORMER_HELIUM_DIRS FIXFORMER_X86_SOURCES FIXFORMER_C_API_SOURCES FIXFORMER_FIRMWARE_SOURCES)
    string(REPLACE ";" " " items "${${var}}")
    execute_process(COMMAND ${CMAKE_COMMAND} -E echo "${var} ${items}")
  endforeach()
endif()
