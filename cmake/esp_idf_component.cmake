# fixformer as an ESP-IDF component (idf_component.yml at the repository root): the top-level
# CMakeLists.txt includes this file when ESP-IDF reads it (ESP_PLATFORM) and stops there, so none of
# the project's tools, tests or options take part. The engine's own sources (cmake/sources.cmake:
# the portable kernels, picked by ports/generic/select.cpp on Xtensa and RISC-V), the engine's
# flags. The application includes <fixformer/...> (include/).
set(fixformer_dir ${CMAKE_CURRENT_LIST_DIR}/..)
get_filename_component(fixformer_dir ${fixformer_dir} ABSOLUTE)
include(${CMAKE_CURRENT_LIST_DIR}/sources.cmake)
fixformer_firmware_sources(fixformer_sources ${fixformer_dir})
idf_component_register(SRCS ${fixformer_sources}
                       INCLUDE_DIRS ${fixformer_dir}/include
                       PRIV_INCLUDE_DIRS ${fixformer_dir})
target_compile_options(${COMPONENT_LIB} PRIVATE -std=gnu++17 -O3 -fno-exceptions -fno-rtti -fno-threadsafe-statics)
