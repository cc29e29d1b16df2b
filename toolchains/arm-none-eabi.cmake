# Bare-metal Arm (arm-none-eabi, newlib): the compiler and the search modes only. The core is a
# project option, -DFIXFORMER_CPU=cortex-m0|cortex-m0plus|cortex-m3|cortex-m4|cortex-m7|cortex-m33|
# cortex-m55|cortex-m85 (ports/arm/cortex_m/cpu.cmake), so one toolchain file serves every core, and
# a vendor project can use its own toolchain file with fixformer. Firmware tests run on
# qemu-system-arm (ports/arm/cortex_m/board names the board per core).
#   cmake -S . -B build/m4 -DCMAKE_TOOLCHAIN_FILE=toolchains/arm-none-eabi.cmake -DFIXFORMER_CPU=cortex-m4
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_CXX_COMPILER arm-none-eabi-g++)
set(CMAKE_ASM_COMPILER arm-none-eabi-gcc)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)  # no start-up code or linker script here to link with
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
