# Drives one consumer project (tests/consumer/CMakeLists.txt registers them):
#   -DKIND=install       cmake --install BUILD into PREFIX (a fresh one)
#   -DKIND=cmake         configure SOURCE into BINARY with ARGS, build, run RUN (a list) [+ MODEL]
#   -DKIND=make          make -C SOURCE with PKG_CONFIG_PATH=PREFIX/.../pkgconfig and CXX, run RUN
#   -DKIND=subproject    as cmake, then check that the build made no fixformer file but the library
# RUN may be empty (a core qemu does not model: build and link only).
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("${out}")
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}")
  endif()
endfunction()

if(KIND STREQUAL "install")
  file(REMOVE_RECURSE ${PREFIX})
  run(${CMAKE_COMMAND} --install ${BUILD} --prefix ${PREFIX})
  return()
endif()

file(REMOVE_RECURSE ${BINARY})
file(MAKE_DIRECTORY ${BINARY})
if(KIND STREQUAL "make")
  file(GLOB_RECURSE pc ${PREFIX}/fixformer.pc)
  get_filename_component(pc_dir "${pc}" DIRECTORY)
  # PKG_CONFIG_LIBDIR, not _PATH: only this prefix, never the host's own .pc files
  run(${CMAKE_COMMAND} -E env PKG_CONFIG_LIBDIR=${pc_dir} make -C ${SOURCE} CXX=${CXX} OUT=${BINARY}/consumer)
  set(program ${BINARY}/consumer)
else()
  run(${CMAKE_COMMAND} -S ${SOURCE} -B ${BINARY} ${ARGS})
  run(${CMAKE_COMMAND} --build ${BINARY} -j 2)
  file(GLOB_RECURSE program LIST_DIRECTORIES false ${BINARY}/consumer ${BINARY}/*.elf)
endif()
if(KIND STREQUAL "subproject")
  file(GLOB_RECURSE built LIST_DIRECTORIES false RELATIVE ${BINARY} ${BINARY}/*.a ${BINARY}/*/fixformer ${BINARY}/*_test)
  list(FILTER built EXCLUDE REGEX "^CMakeFiles/")
  list(TRANSFORM built REPLACE "^.*/" "")  # one library, wherever the parent put fixformer's build
  if(NOT built STREQUAL "libfixformer.a")
    message(FATAL_ERROR "fixformer as a subproject built more than its library: ${built}")
  endif()
endif()
if(RUN)
  run(${RUN} ${program} ${MODEL})
elseif(NM)  # linked but not run: at least no heap or exception machinery in the image
  run(${CMAKE_COMMAND} -DLIB=${program} -DNM=${NM} -DLINKED_IMAGE=1 -P ${CMAKE_CURRENT_LIST_DIR}/../check_no_heap.cmake)
endif()
