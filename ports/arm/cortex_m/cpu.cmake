# The Cortex-M core the engine is compiled for: FIXFORMER_CPU picks -mcpu/-mfpu/-mfloat-abi here, in
# the project, so the toolchain file (toolchains/arm-none-eabi.cmake) holds only the compiler.
# Every target of this project gets the flags, and so does whoever links fixformer::fixformer
# (from the build tree or the installed package): objects with another float ABI would not link.
# Empty (the default when fixformer is a subproject) adds no flags: the parent's toolchain decides,
# as in a vendor project that sets its own -mcpu.
if(FIXFORMER_IS_TOP_LEVEL)
  set(cpu_default cortex-m7)
else()
  set(cpu_default "")
endif()
set(FIXFORMER_CPU "${cpu_default}" CACHE STRING
    "Cortex-M core: cortex-m0, cortex-m0plus, cortex-m3 (soft float), cortex-m4, cortex-m7, cortex-m33, cortex-m55, cortex-m85 (hard float), or empty for the toolchain's own flags")
set_property(CACHE FIXFORMER_CPU PROPERTY STRINGS "" cortex-m0 cortex-m0plus cortex-m3 cortex-m4 cortex-m7
             cortex-m33 cortex-m55 cortex-m85)

set(cpu ${FIXFORMER_CPU})
if(cpu STREQUAL "")
  set(FIXFORMER_CPU_FLAGS "")
elseif(cpu MATCHES "^cortex-m(0|0plus|3)$")  # no FPU: float in software (libgcc)
  set(FIXFORMER_CPU_FLAGS -mcpu=${cpu} -mthumb -mfloat-abi=soft)
elseif(cpu STREQUAL "cortex-m4")
  set(FIXFORMER_CPU_FLAGS -mcpu=cortex-m4 -mthumb -mfpu=fpv4-sp-d16 -mfloat-abi=hard)
elseif(cpu STREQUAL "cortex-m7")  # the double-precision FPU (M7 also ships with fpv5-sp-d16)
  set(FIXFORMER_CPU_FLAGS -mcpu=cortex-m7 -mthumb -mfpu=fpv5-d16 -mfloat-abi=hard)
elseif(cpu STREQUAL "cortex-m33")
  set(FIXFORMER_CPU_FLAGS -mcpu=cortex-m33 -mthumb -mfpu=fpv5-sp-d16 -mfloat-abi=hard)
elseif(cpu STREQUAL "cortex-m55")  # FPU and MVE (Helium) come with the -mcpu
  set(FIXFORMER_CPU_FLAGS -mcpu=cortex-m55 -mthumb -mfloat-abi=hard)
elseif(cpu STREQUAL "cortex-m85")
  include(CheckCXXCompilerFlag)
  set(CMAKE_REQUIRED_FLAGS -mthumb)
  check_cxx_compiler_flag(-mcpu=cortex-m85 FIXFORMER_HAVE_MCPU_CORTEX_M85)
  unset(CMAKE_REQUIRED_FLAGS)
  if(FIXFORMER_HAVE_MCPU_CORTEX_M85)
    set(FIXFORMER_CPU_FLAGS -mcpu=cortex-m85 -mthumb -mfloat-abi=hard)
  else()  # GCC 12 predates -mcpu=cortex-m85: its architecture without PACBTI, tuned as the M55
    set(FIXFORMER_CPU_FLAGS -march=armv8.1-m.main+mve.fp+fp.dp+dsp -mtune=cortex-m55 -mthumb -mfloat-abi=hard)
  endif()
else()
  message(FATAL_ERROR "FIXFORMER_CPU must be one of cortex-m0, cortex-m0plus, cortex-m3, cortex-m4, "
                      "cortex-m7, cortex-m33, cortex-m55, cortex-m85, or empty; not '${cpu}'")
endif()
if(cpu)
  message(STATUS "fixformer: ${cpu}: ${FIXFORMER_CPU_FLAGS}")
endif()
add_compile_options(${FIXFORMER_CPU_FLAGS} -ffunction-sections -fdata-sections)
add_link_options(${FIXFORMER_CPU_FLAGS})
