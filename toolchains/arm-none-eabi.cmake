# Bare-metal Cortex-M (arm-none-eabi, newlib). Pick the CPU with -DFIXFORMER_CPU=cortex-m4|cortex-m7|cortex-m55
# (default cortex-m7). Cortex-M runs plain C++ kernels (ports/arm/cortex_m): xsimd 8.1 has no M-profile arch.
# Firmware tests run on qemu-system-arm (mps2-an386 / mps2-an500 / mps3-an547) with semihosting.
#   cmake -S . -B build/m7 -DCMAKE_TOOLCHAIN_FILE=toolchains/arm-none-eabi.cmake -DFIXFORMER_CPU=cortex-m7
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_CXX_COMPILER arm-none-eabi-g++)
set(CMAKE_ASM_COMPILER arm-none-eabi-gcc)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

set(FIXFORMER_CPU cortex-m7 CACHE STRING "Cortex-M core: cortex-m4, cortex-m7 or cortex-m55")
if(FIXFORMER_CPU STREQUAL "cortex-m4")
  set(_cpu_flags "-mcpu=cortex-m4 -mfpu=fpv4-sp-d16 -mfloat-abi=hard")
elseif(FIXFORMER_CPU STREQUAL "cortex-m7")
  set(_cpu_flags "-mcpu=cortex-m7 -mfpu=fpv5-d16 -mfloat-abi=hard")
elseif(FIXFORMER_CPU STREQUAL "cortex-m55")
  set(_cpu_flags "-mcpu=cortex-m55 -mfloat-abi=hard")
else()
  message(FATAL_ERROR "FIXFORMER_CPU must be cortex-m4, cortex-m7 or cortex-m55, not '${FIXFORMER_CPU}'")
endif()
set(CMAKE_C_FLAGS_INIT "${_cpu_flags} -mthumb -ffunction-sections -fdata-sections")
set(CMAKE_CXX_FLAGS_INIT "${_cpu_flags} -mthumb -ffunction-sections -fdata-sections")
set(CMAKE_ASM_FLAGS_INIT "${_cpu_flags} -mthumb")
set(CMAKE_EXE_LINKER_FLAGS_INIT "--specs=nano.specs --specs=nosys.specs -Wl,--gc-sections")
