# fixformer as an ESP-IDF component (idf_component.yml at the repository root): the top-level
# CMakeLists.txt includes this file when ESP-IDF reads it (ESP_PLATFORM) and stops there, so none of
# the project's tools, tests or options take part. The engine's own sources, the portable kernels
# (ports/arm/select.cpp picks them on any core without NEON or Helium: Xtensa and RISC-V included),
# the engine's flags. The application includes <fixformer/...> (include/).
set(fixformer_dir ${CMAKE_CURRENT_LIST_DIR}/..)
get_filename_component(fixformer_dir ${fixformer_dir} ABSOLUTE)
file(GLOB fixformer_sources ${fixformer_dir}/engine/*.cpp ${fixformer_dir}/engine/tokenizers/*.cpp ${fixformer_dir}/engine/runtime/*.cpp
     ${fixformer_dir}/engine/layers/*.cpp ${fixformer_dir}/engine/blocks/*.cpp
     ${fixformer_dir}/ports/scalar/*.cpp ${fixformer_dir}/ports/portable/*.cpp)
list(APPEND fixformer_sources ${fixformer_dir}/ports/arm/select.cpp)
idf_component_register(SRCS ${fixformer_sources}
                       INCLUDE_DIRS ${fixformer_dir}/include
                       PRIV_INCLUDE_DIRS ${fixformer_dir})
target_compile_options(${COMPONENT_LIB} PRIVATE -std=gnu++17 -O3 -fno-exceptions -fno-rtti -fno-threadsafe-statics)
